/*
 * fuzz_import.c: bytes as a benchmark tool's measured-run file, read by
 * val_import as `servesim import` reads one -- told by its keys (vllm
 * bench's result, GenAI-Perf's or AIPerf's export, an inference-perf
 * lifecycle report, servesim's measured-run JSON) and read by that format's
 * reader -- then settled (val_settle) and turned into the scenario that
 * replays it, which sim_scenario_load must take or refuse cleanly.
 *
 * Beyond "no crash, no leak", it checks the error convention (a failure is
 * UTIL_EINPUT with at least one message, and no run is left half-read),
 * and that every run read has a usable metric, its requests in arrival
 * order with their times >= 0.
 *
 * A measured-run JSON whose scenario or requests name a file is skipped:
 * the names would resolve beside the input, in /proc/self/fd (fuzz_file),
 * and reading the harness's own descriptors is not the reader's business.
 */
#include "fuzz_catalog.h"

#include <math.h>
#include <string.h>

#include "sim.h"
#include "val.h"

static mdl_catalog *catalog;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    catalog = fuzz_catalog("fuzz_import");
    fuzz_file_init();
    return 0;
}

static bool names_a_file(const char *text)
{
    cJSON *root = cJSON_Parse(text);
    bool named = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "scenario")) ||
                 cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "requests"));
    cJSON_Delete(root);
    return named;
}

static void check_run(const val_run *m)
{
    FUZZ_CHECK(m->format && m->clock && m->scenario && m->missing && m->source);
    bool usable = false;
    for (int k = 0; k < VAL_N_AGG; k++) usable |= !isnan(m->metrics[k]);
    for (size_t i = 0; i < m->n; i++) {
        const val_request *q = &m->req[i];
        FUZZ_CHECK(!(q->arrival_s < 0) && q->prompt_tokens >= 0 && q->output_tokens >= 0);
        FUZZ_CHECK(i == 0 || !(q->arrival_s < m->req[i - 1].arrival_s));
        usable |= !q->failed && !isnan(q->ttft_s);
    }
    FUZZ_CHECK(usable);
}

/* The replay's scenario (a generator: the trace a replay writes is a file)
 * loads or is refused with a message. */
static void check_replay(val_run *m, util_diag *d)
{
    util_diag_clear(d);
    int rc = val_settle(m, NULL, NULL, NULL, d);
    FUZZ_CHECK(rc == 0);
    if (!util_json_get(m->scenario, "cluster.gpu")) return;
    cJSON *sc = val_replay_scenario(m, NULL);
    sim_scenario loaded;
    rc = sim_scenario_load(sc, catalog, NULL, &loaded, d);
    fuzz_show(d, rc ? "replay refused" : "replay loads");
    FUZZ_CHECK(rc == 0 || (rc == UTIL_EINPUT && d->count > 0));
    sim_scenario_fini(&loaded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (fuzz_names_device(text) || names_a_file(text)) {
        free(text);
        return 0;
    }
    const char *path = fuzz_file(data, size);
    util_diag d;
    util_diag_init(&d);
    val_runs runs = {0};
    int rc = val_import(path, catalog, &runs, &d);
    fuzz_show(&d, rc ? "rejected" : "read");
    FUZZ_CHECK(rc == 0 ? runs.n > 0 : (rc == UTIL_EINPUT && d.count > 0));
    for (int i = 0; !rc && i < runs.n; i++) {
        check_run(&runs.v[i]);
        check_replay(&runs.v[i], &d);
    }
    val_runs_fini(&runs);
    util_diag_fini(&d);
    free(text);
    return 0;
}
