/*
 * validate.c: `servesim validate` -- the simulator against real vLLM runs.
 *
 * It replays data/validation/llmservingsim (the usage text says where it
 * looks for that folder): the workload CSV that both measured runs served,
 * on the matching GPU and model, with the engine settings read from each
 * run's meta.json (max_num_seqs, max_num_batched_tokens, block size, the KV
 * block count where vLLM recorded it, prefix caching; vLLM 0.19's V1 engine
 * chunks prefills).  Each run is simulated with the roofline cost model, and
 * the RTX PRO 6000 run also with the measured-table model built from the
 * profiler CSVs of the same GPU.  The measured TTFT, TPOT and E2E come from
 * requests.jsonl with the definitions the data's README gives (from
 * queued_ts); the predictions from the simulated run's database.
 * docs/validation.md discusses the result.
 */
#include "cli.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "an.h"
#include "rec.h"

/* The data's folder under data/, and the file that tells it is there. */
#define VALIDATE_DATA "validation/llmservingsim"
#define VALIDATE_PROBE "workload_sharegpt-llama-3.1-8b-300-sps10.csv"

static const char validate_usage[] =
    "usage: servesim validate [--data DIR] [--json]\n"
    "\n"
    "Replays the measured vLLM runs of DIR and prints predicted against measured\n"
    "mean/p50/p90/p99 of TTFT, TPOT and E2E.  Without --data, DIR is the first of\n"
    "these that holds the runs:\n"
    "  ./data/" VALIDATE_DATA "  (the repository's root)\n"
    "  " SERVESIM_DATADIR "/" VALIDATE_DATA "  (installed)\n"
    "  " SERVESIM_SOURCE_DATADIR "/" VALIDATE_DATA "  (the source tree built from)\n";

enum { TTFT, TPOT, E2E, N_METRICS };
static const char *const metric_names[N_METRICS] = {"ttft_s", "tpot_s", "e2e_s"};
static const char *const metric_labels[N_METRICS] = {"TTFT", "TPOT", "E2E"};

typedef struct vcase {
    const char *name;     /* e.g. "rtx4090/roofline" */
    const char *hardware; /* folder under bench/examples */
    const char *gpu;      /* catalog id */
    const char *cost;     /* cost_model JSON; %s: the data folder */
    an_stats measured[N_METRICS], predicted[N_METRICS];
} vcase;

static vcase cases[] = {
    {.name = "rtx4090/roofline", .hardware = "RTX4090", .gpu = "rtx-4090",
     .cost = "{\"kind\": \"roofline\"}"},
    {.name = "rtxpro6000/roofline", .hardware = "RTXPRO6000", .gpu = "rtx-pro-6000",
     .cost = "{\"kind\": \"roofline\"}"},
    {.name = "rtxpro6000/table", .hardware = "RTXPRO6000", .gpu = "rtx-pro-6000",
     .cost = "{\"kind\": \"table\", \"dir\": "
             "\"%s/profiler/perf/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1\"}"},
};

static char *run_dir(const char *data, const vcase *c)
{
    return util_xasprintf("%s/bench/examples/%s/Llama-3.1-8B/vllm", data, c->hardware);
}

/* The measured distributions, from requests.jsonl. */
static int load_measured(const char *data, vcase *c, util_diag *d)
{
    char *dir = run_dir(data, c), *path = util_xasprintf("%s/requests.jsonl", dir);
    FILE *f = fopen(path, "r");
    int rc = f ? UTIL_OK : util_diag_add(d, "%s: cannot open", path);
    size_t n = 0, cap = 512;
    double *v[N_METRICS];
    for (int m = 0; m < N_METRICS; m++) v[m] = util_xmalloc(cap * sizeof(double));
    char line[8192];
    for (int ln = 1; !rc && fgets(line, sizeof line, f); ln++) {
        cJSON *o = cJSON_Parse(line);
        double q = util_json_number(o, "queued_ts", NAN), t1 = util_json_number(o, "first_token_ts", NAN);
        double tl = util_json_number(o, "last_token_ts", NAN), out = util_json_number(o, "output_toks", NAN);
        cJSON_Delete(o);
        if (isnan(q) || isnan(t1) || isnan(tl) || isnan(out)) {
            rc = util_diag_add(d, "%s:%d: expected queued_ts, first_token_ts, last_token_ts and "
                                  "output_toks", path, ln);
            break;
        }
        if (n == cap) {
            cap *= 2;
            for (int m = 0; m < N_METRICS; m++) v[m] = util_xrealloc(v[m], cap * sizeof(double));
        }
        v[TTFT][n] = t1 - q;
        v[TPOT][n] = out > 1 ? (tl - t1) / (out - 1) : NAN;
        v[E2E][n++] = tl - q;
    }
    if (f) fclose(f);
    if (!rc) {
        size_t k = 0; /* TPOT only for replies of two or more tokens */
        for (size_t i = 0; i < n; i++)
            if (!isnan(v[TPOT][i])) v[TPOT][k++] = v[TPOT][i];
        an_stats_compute(v[TTFT], n, &c->measured[TTFT]);
        an_stats_compute(v[TPOT], k, &c->measured[TPOT]);
        an_stats_compute(v[E2E], n, &c->measured[E2E]);
    }
    for (int m = 0; m < N_METRICS; m++) free(v[m]);
    free(path);
    free(dir);
    return rc;
}

/* The scenario of a case: the engine settings of its meta.json. */
static cJSON *scenario(const char *data, const vcase *c, util_diag *d)
{
    char *dir = run_dir(data, c), *path = util_xasprintf("%s/meta.json", dir);
    cJSON *meta = NULL;
    int rc = util_json_read_file(path, &meta, d);
    free(path);
    free(dir);
    if (rc) return NULL;
    const cJSON *kw = util_json_get(meta, "engine_kwargs");
    double blocks = util_json_number(meta, "kv_cache.num_gpu_blocks", NAN);
    const cJSON *prefix = util_json_get(meta, "kv_cache.enable_prefix_caching");
    char *cost = util_xasprintf(c->cost, data);
    char *text = util_xasprintf(
        "{\"name\": \"validate-%s\", \"cluster\": {\"gpu\": \"%s\", \"model\": \"llama-3.1-8b\", "
        "\"scheduler\": {\"policy\": \"chunked\", \"max_batch\": %g, \"max_batched_tokens\": %g, "
        "\"block_tokens\": %g, \"prefix_caching\": %s}, \"cost_model\": %s}, \"workload\": "
        "{\"arrival\": {\"process\": \"trace\", \"path\": "
        "\"%s/workload_sharegpt-llama-3.1-8b-300-sps10.csv\"}}}",
        c->name, c->gpu, util_json_number(kw, "max_num_seqs", 256),
        util_json_number(kw, "max_num_batched_tokens", 2048),
        util_json_number(meta, "kv_cache.block_size", 16),
        /* vLLM 0.19 enables prefix caching unless told otherwise */
        !prefix || cJSON_IsTrue(prefix) ? "true" : "false", cost, data);
    cJSON *root = cJSON_Parse(text);
    if (!isnan(blocks)) /* vLLM's own count, where it was recorded */
        cJSON_AddNumberToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "cluster"), "scheduler"),
                                "kv_blocks", blocks);
    free(text);
    free(cost);
    cJSON_Delete(meta);
    return root;
}

static int simulate(const char *data, const mdl_catalog *cat, vcase *c, util_diag *d)
{
    cJSON *root = scenario(data, c, d);
    if (!root) return UTIL_EINPUT;
    rec_run_spec spec = {.catalog = cat, .scenario = root, .origin = c->name};
    rec_run_result res;
    int rc = rec_run(&spec, &res, d);
    if (!rc && res.status != SIM_STATUS_COMPLETED)
        rc = util_diag_fail(d, "%s: the replay was %s (%s): its figures would not compare",
                            c->name, sim_status_names[res.status], res.reason);
    an_report r;
    if (!rc && !(rc = an_report_compute(res.db, res.run_id, &r, d))) {
        c->predicted[TTFT] = r.req.ttft;
        c->predicted[TPOT] = r.req.tpot;
        c->predicted[E2E] = r.req.e2e;
        an_report_fini(&r);
    }
    rec_run_result_fini(&res);
    return rc;
}

static double err(double pred, double meas)
{
    return 100 * (pred - meas) / meas;
}

static const double *pick(const an_stats *s, int i)
{
    const double *v[] = {&s->mean, &s->p50, &s->p90, &s->p99};
    return v[i];
}

static const char *const stat_names[] = {"mean", "p50", "p90", "p99"};

static void print_text(void)
{
    printf("%-20s %-6s %-4s %12s %12s %8s\n", "case", "metric", "stat", "measured", "predicted",
           "error");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int m = 0; m < N_METRICS; m++)
            for (int i = 0; i < 4; i++) {
                double meas = *pick(&cases[k].measured[m], i), pred = *pick(&cases[k].predicted[m], i);
                printf("%-20s %-6s %-4s %10.4f s %10.4f s %+7.1f%%\n", cases[k].name,
                       metric_labels[m], stat_names[i], meas, pred, err(pred, meas));
            }
}

static void print_json(void)
{
    cJSON *all = cJSON_CreateArray();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "case", cases[k].name);
        for (int m = 0; m < N_METRICS; m++) {
            cJSON *o = cJSON_AddObjectToObject(c, metric_names[m]);
            for (int i = 0; i < 4; i++) {
                cJSON *s = cJSON_AddObjectToObject(o, stat_names[i]);
                double meas = *pick(&cases[k].measured[m], i), pred = *pick(&cases[k].predicted[m], i);
                cJSON_AddNumberToObject(s, "measured", meas);
                cJSON_AddNumberToObject(s, "predicted", pred);
                cJSON_AddNumberToObject(s, "error_pct", err(pred, meas));
            }
        }
        cJSON_AddItemToArray(all, c);
    }
    char *text = cJSON_Print(all);
    printf("%s\n", text);
    free(text);
    cJSON_Delete(all);
}

/* The default data folder: the current directory's data/ first, so that a
 * checkout run from its root reads its own copy, then the installed one, then
 * the source tree the binary was built from (a build tree run from elsewhere,
 * as the tests do).  CLI_CONTINUE, or CLI_EXIT_USAGE after naming the places
 * it looked. */
static int default_data(const char **data)
{
    static const char *const dirs[] = {
        "data/" VALIDATE_DATA,
        SERVESIM_DATADIR "/" VALIDATE_DATA,
        SERVESIM_SOURCE_DATADIR "/" VALIDATE_DATA,
    };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char *probe = util_xasprintf("%s/" VALIDATE_PROBE, dirs[i]);
        bool found = access(probe, R_OK) == 0;
        free(probe);
        if (found) {
            *data = dirs[i];
            return CLI_CONTINUE;
        }
    }
    return cli_usage_error("validate", "no validation data in ./%s, %s or %s; name the folder "
                                       "with --data DIR", dirs[0], dirs[1], dirs[2]);
}

int cli_validate(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"data", required_argument, NULL, 'd'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    const char *data = NULL;
    bool json = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': data = optarg; break;
        case 'j': json = true; break;
        case 'h': fputs(validate_usage, stdout); return CLI_EXIT_OK;
        case ':': return cli_usage_error("validate", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("validate", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc) return cli_usage_error("validate", "unexpected argument '%s'", argv[optind]);
    if (!data && default_data(&data) != CLI_CONTINUE) return CLI_EXIT_USAGE;
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *cat = NULL;
    int rc = mdl_catalog_load_default(&cat, &d);
    for (size_t k = 0; !rc && k < sizeof cases / sizeof cases[0]; k++) {
        rc = load_measured(data, &cases[k], &d);
        if (!rc) rc = simulate(data, cat, &cases[k], &d);
    }
    if (!rc) json ? print_json() : print_text();
    mdl_catalog_destroy(cat);
    int code = cli_fail(&d, rc);
    util_diag_fini(&d);
    return code;
}
