/*
 * test_lifecycle_published.c: a replica's start-up time (cluster.lifecycle)
 * against vLLM's published cold starts -- the scenarios of
 * examples/validation/lifecycle, as docs/validation.md ("Cold start and
 * recovery") reports them.  Each scenario's replica fails at 1 s and is
 * replaced at once (repair_s 0), so the replacement's ready_s - created_s is
 * the lifecycle's start-up alone: provision_s + weight bytes / the storage's
 * bandwidth + warm_up_s.  The test holds that time to the doc's numbers
 * exactly and the whole within the 25% of the published figure --
 * by construction, warm_up_s being the published time less the load -- and
 * that the load alone, the part servesim derives, is not within it.  argv[1] is the source root.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "support.h"
#include "tap.h"

#define PUBLISHED_TOL 0.25 /* servesim issue 30: within 25% of the published figure */
#define NVME_GBS      7.45 /* storage local_nvme, docs/autoscaling.md */

static const char *root = ".";

/* One published cold start and the lifecycle docs/validation.md gives it. */
typedef struct {
    const char *file;    /* in examples/validation/lifecycle */
    double weight_bytes; /* the doc's: the model at its quantization, all GPUs */
    double warm_up_s;    /* the scenario's lifecycle.warm_up_s */
    double published_s;  /* the blog's mean cold start */
} cold_start;

/* Runs examples/validation/lifecycle/FILE. */
static sqlite3 *run_published(const char *file)
{
    char *path = util_xasprintf("%s/examples/validation/lifecycle/%s", root, file), *text = NULL;
    size_t len;
    util_diag d;
    util_diag_init(&d);
    sqlite3 *db =
        util_read_file(path, &text, &len, &d) ? NULL : support_run_json(text, NULL, false);
    ok(db != NULL, "%s runs", file);
    util_diag_fini(&d);
    free(text);
    free(path);
    return db;
}

static void check(const cold_start *c)
{
    sqlite3 *db = run_published(c->file);
    if (!db) return;
    double bytes = support_q1(db, "SELECT weight_bytes FROM replicas WHERE replica = 1");
    double made = support_q1(db, "SELECT created_s FROM replicas WHERE replica = 1");
    double startup = support_q1(db, "SELECT ready_s - created_s FROM replicas WHERE replica = 1");
    double load = c->weight_bytes / (NVME_GBS * 1e9);
    is_near(bytes, c->weight_bytes, 0.5, "%s: the replacement's weights are %.0f bytes", c->file,
            c->weight_bytes);
    is_near(made, 1, 1e-9, "%s: the replacement is made at the failure, 1 s", c->file);
    is_near(startup, load + c->warm_up_s, 1e-6,
            "%s: ready after %.2f s of load (bytes / 7.45 GB/s) + %.0f s warm-up = %.2f s", c->file,
            load, c->warm_up_s, load + c->warm_up_s);
    ok(fabs(startup / c->published_s - 1) <= PUBLISHED_TOL,
       "%s: %.2f s within 25%% of the published %.2f s (ratio %.3f; load alone %.3f)", c->file,
       startup, c->published_s, startup / c->published_s, load / c->published_s);
    /* warm_up_s is the published time less the load, so the match above is
     * by construction; what the bytes and bandwidth explain is the load's
     * share, and it is well short of the published time */
    ok(load / c->published_s < 1 - PUBLISHED_TOL,
       "%s: the load alone (%.2f s) does not reproduce it: ratio %.3f", c->file, load,
       load / c->published_s);
    sqlite3_close(db);
}

int main(int argc, char **argv)
{
    if (argc > 1) root = argv[1];
    if (support_init()) return 1;
    /* vLLM blog, sleep mode (2025-10-26), A100, vLLM 0.11.0: the cold
     * starts of plotly-switching-comparison.js, means of three runs */
    static const cold_start cases[] = {
        {"vllm-qwen3-235b-fp8-a100.json", 235e9, 66, (97.9 + 97.4 + 97.71) / 3},
        {"vllm-qwen3-coder-30b-a100.json", 61e9, 39, (47.33 + 47.47 + 47.46) / 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check(&cases[i]);
    support_fini();
    return tap_done();
}
