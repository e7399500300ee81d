/*
 * test_import.c: `servesim import` and `servesim replay` on each benchmark
 * tool's format -- the runs, requests and aggregates read back from the
 * database equal the file's, a replay compares every metric with a finite
 * error, and a malformed field is exit 2 naming the file and the field,
 * with no database written.
 *
 * Real files (data/measured/): the inference-perf report folder and AIPerf's
 * run1 (GenAI-Perf's successor).  No real public example was found of
 * `vllm bench serve --save-detailed` JSON under a licence that allows a copy,
 * nor of GenAI-Perf's profile_export.json: this test writes small ones
 * itself, laid out as vllm/benchmarks/serve.py and perf_analyzer write them
 * (validate/import_vllm_bench.c, validate/import_genai_perf.c cite the
 * commits), and so for inference-perf's per-request file, of which only a
 * synthetic test corpus exists upstream.
 * argv[1] is the servesim binary, argv[2] the source root.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "runner.h"
#include "tap.h"
#include "util.h"

static const char *servesim, *root;
static char dir[] = "/tmp/servesim-import-XXXXXX";

/* Runs servesim with up to 30 arguments (NULL-terminated). */
#define sv(...) runner_run(servesim, dir, __VA_ARGS__)

static char *in_dir(const char *name)
{
    return util_xasprintf("%s/%s", dir, name);
}

static char *in_data(const char *name)
{
    return util_xasprintf("%s/data/measured/%s", root, name);
}

/* Removes a database and what SQLite keeps beside it. */
static void drop_db(const char *db)
{
    static const char *const tails[] = {"", "-wal", "-shm", "-journal"};
    for (int k = 0; k < 4; k++) {
        char *f = util_xasprintf("%s%s", db, tails[k]);
        unlink(f);
        free(f);
    }
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Writes j (and deletes it) to dir/name; the path, caller frees. */
static char *write_json(const char *name, cJSON *j)
{
    char *path = in_dir(name), *text = cJSON_PrintUnformatted(j);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    free(text);
    cJSON_Delete(j);
    return path;
}

static cJSON *read_json(const char *path)
{
    char *text = runner_read_or_bail(path);
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

/* Sets "path=VALUE" in j, as --set does. */
static void set(cJSON *j, const char *assignment)
{
    util_diag d;
    util_diag_init(&d);
    if (util_json_set(j, assignment, &d)) tap_diag("cannot set %s", assignment);
    util_diag_fini(&d);
}

/* A JSON column of a run, parsed (caller deletes). */
static cJSON *qjson(const char *db, const char *sql)
{
    char *text = runner_q1_text(db, sql);
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

/* The tool's aggregate `metric` of run `run` as stored. */
static double stored_metric(const char *db, int run, const char *metric)
{
    char *sql = util_xasprintf("SELECT metrics FROM measurements WHERE run_id = %d", run);
    cJSON *m = qjson(db, sql);
    double v = util_json_number(m, metric, NAN);
    cJSON_Delete(m);
    free(sql);
    return v;
}

/* A replay's comparison (`replay --json`): every measured metric listed,
 * each with a finite error; how many. */
static int finite_errors(const char *out, const char *what)
{
    cJSON *all = cJSON_Parse(out);
    const cJSON *cmp = cJSON_GetArrayItem(all, 0), *row;
    int n = 0, finite = 0;
    cJSON_ArrayForEach(row, util_json_member(cmp, "metrics")) {
        n++;
        finite += isfinite(util_json_number(row, "error_pct", NAN));
    }
    ok(n > 0 && finite == n, "%s: the replay compares %d metrics, each with a finite error (%d)",
       what, n, finite);
    cJSON_Delete(all);
    return n;
}

/* The measured side of metric in a replay's comparison. */
static double measured_of(const char *out, const char *metric)
{
    cJSON *all = cJSON_Parse(out);
    const cJSON *row;
    double v = NAN;
    cJSON_ArrayForEach(row, util_json_member(cJSON_GetArrayItem(all, 0), "metrics"))
        if (!strcmp(cJSON_GetStringValue(util_json_member(row, "metric")), metric))
            v = util_json_number(row, "measured", NAN);
    cJSON_Delete(all);
    return v;
}

/* Imports path into a database that must not appear: exit 2, stderr has
 * every wanted text. */
static void refused(const char *path, const char *want1, const char *want2, const char *what)
{
    char *db = in_dir("refused.db");
    result r = sv("import", path, "-o", db, NULL);
    is_int(r.status, 2, "%s: exit 2", what);
    has_str(r.err, want1, "%s: names the file", what);
    has_str(r.err, want2, "%s: and the field", what);
    ok(!exists(db), "%s: no database written", what);
    runner_drop(&r);
    drop_db(db);
    free(db);
}

/* ---- inference-perf ---- */

static void test_inference_perf_real(void)
{
    char *folder = in_data("inference-perf"), *db = in_dir("ip.db");
    result r = sv("import", folder, "-o", db, NULL);
    is_int(r.status, 0, "inference-perf: the real report folder imports");
    runner_drop(&r);
    is_int(runner_q1(db, "SELECT count(*) FROM measurements WHERE format = 'inference-perf'"), 5,
           "inference-perf: one run a stage file (0, 1, 2, 4, 5), not the summary");
    is_int(runner_q1(db, "SELECT count(*) FROM requests"), 0, "inference-perf: stages have no requests");
    char *name = runner_q1_text(db, "SELECT name FROM runs WHERE id = 5");
    has_str(name, "stage 5", "inference-perf: the stages in order");
    free(name);
    /* the stored aggregates are the file's own numbers */
    static const struct {
        int run, stage;
        const char *at, *metric;
    } same[] = {
        {1, 0, "successes.latency.time_to_first_token.mean", "ttft_mean_s"},
        {2, 1, "successes.latency.request_latency.median", "e2e_p50_s"},
        {3, 2, "successes.latency.inter_token_latency.mean", "itl_mean_s"},
        {4, 4, "successes.throughput.output_tokens_per_sec", "output_tokens_per_s"},
        {5, 5, "successes.latency.time_per_output_token.p90", "tpot_p90_s"},
    };
    for (size_t k = 0; k < sizeof same / sizeof *same; k++) {
        char *file = util_xasprintf("%s/stage_%d_lifecycle_metrics.json", folder, same[k].stage);
        cJSON *j = read_json(file);
        is_near(stored_metric(db, same[k].run, same[k].metric), util_json_number(j, same[k].at, -1),
                0, "inference-perf stage %d: %s is the file's %s", same[k].stage, same[k].metric,
                same[k].at);
        cJSON_Delete(j);
        free(file);
    }
    is_near(stored_metric(db, 1, "ttft_mean_s"), 0.058435614053936054, 0,
            "inference-perf stage 0: mean TTFT 58.4 ms");
    ok(isnan(stored_metric(db, 1, "ttft_p99_s")), "inference-perf: no p99 where the file has none");
    /* the generator of stage 5: its achieved rate, its count, lognormal lengths */
    cJSON *sc = qjson(db, "SELECT scenario FROM runs WHERE id = 5");
    is_str(cJSON_GetStringValue(util_json_get(sc, "workload.arrival.process")), "poisson",
           "inference-perf: a constant load is Poisson arrivals (load_timer.py)");
    is_near(util_json_number(sc, "workload.arrival.rate_per_s", 0), 22.49214325160128, 0,
            "inference-perf stage 5: at the achieved 22.49/s, not the requested 26");
    is_int(util_json_number(sc, "stop.requests", 0), 1560, "inference-perf stage 5: its 1560 sent");
    is_near(util_json_number(sc, "workload.prompt_tokens.sigma", 0), log(541.1000000000001 / 111) / 1.2816,
            1e-12, "inference-perf stage 5: prompt sigma = ln(p90 / median) / 1.2816");
    is_near(util_json_number(sc, "workload.output_tokens.max", 0), 950, 0,
            "inference-perf stage 5: output lengths clamped to the stage's max");
    is_str(cJSON_GetStringValue(util_json_get(sc, "cluster.engine")), "vllm-v1",
           "inference-perf: config.yaml's server.type vllm");
    cJSON_Delete(sc);
    char *rdb = in_dir("ipr.db");
    r = sv("replay", db, "--run", "5", "-o", rdb, "--json", "--set", "cluster.model=llama-3.1-8b",
           "--set", "cluster.gpu=h100-sxm", NULL);
    is_int(r.status, 0, "inference-perf: stage 5 replays from its database");
    is_int(finite_errors(r.out, "inference-perf stage 5"), 11,
           "inference-perf: TTFT, TPOT, E2E at mean, p50, p90, ITL and throughput");
    runner_drop(&r);
    /* one stage file by itself, config.yaml beside it */
    char *stage = util_xasprintf("%s/stage_2_lifecycle_metrics.json", folder), *one = in_dir("one.db");
    r = sv("import", stage, "-o", one, NULL);
    is_int(r.status, 0, "inference-perf: a stage file given alone");
    has_str(r.out, "stage 2", "inference-perf: is its stage");
    runner_drop(&r);
    is_int(runner_q1(one, "SELECT count(*) FROM runs"), 1, "inference-perf: one run");
    drop_db(one);
    drop_db(rdb);
    drop_db(db);
    free(stage);
    free(one);
    free(rdb);
    free(db);
    free(folder);
}

/* A per-request report of n requests, request 2 failed, as reportgen/base.py
 * writes its entries. */
static cJSON *per_request(int n)
{
    cJSON *all = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        double start = 5000.0 + 0.5 * i, first = start + 0.04 + 0.001 * i;
        cJSON *e = cJSON_CreateObject(), *times = cJSON_CreateArray();
        int out = 20 + i;
        for (int k = 0; k < out; k++) cJSON_AddItemToArray(times, cJSON_CreateNumber(first + 0.01 * k));
        cJSON_AddNumberToObject(e, "start_time", start);
        cJSON_AddNumberToObject(e, "end_time", first + 0.01 * (out - 1) + 0.002);
        cJSON *info = cJSON_AddObjectToObject(e, "info");
        cJSON_AddNumberToObject(info, "input_tokens", 100 + i);
        cJSON *rm = cJSON_AddObjectToObject(info, "response_metrics");
        cJSON_AddNumberToObject(rm, "output_tokens", out + 1); /* the client's re-tokenized count */
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(rm, "server_usage"), "completion_tokens", out);
        cJSON_AddItemToObject(rm, "output_token_times", times);
        if (i == 2) {
            cJSON *err = cJSON_AddObjectToObject(e, "error");
            cJSON_AddStringToObject(err, "error_type", "HTTP Error 503");
            cJSON_AddStringToObject(err, "error_msg", "Service Unavailable");
        } else {
            cJSON_AddNullToObject(e, "error");
        }
        cJSON_AddItemToArray(all, e);
    }
    return all;
}

static void test_inference_perf_per_request(void)
{
    char *sub = in_dir("ipq");
    mkdir(sub, 0755);
    char *cfg = in_dir("ipq/config.yaml");
    FILE *f = fopen(cfg, "w");
    fputs("load:\n  type: constant\nserver:\n  base_url: http://x:8000\n  model_name: "
          "'meta-llama/Llama-3.1-8B'  # the served model\n  type: vllm\n",
          f);
    fclose(f);
    char *path = write_json("ipq/per_request_lifecycle_metrics.json", per_request(20));
    char *db = in_dir("ipq.db");
    result r = sv("replay", sub, "-o", db, "--json", "--set", "cluster.gpu=h100-sxm", NULL);
    is_int(r.status, 0, "inference-perf per-request: the folder replays");
    finite_errors(r.out, "inference-perf per-request");
    runner_drop(&r);
    is_int(runner_q1(db, "SELECT count(*) FROM requests WHERE run_id = 1"), 20,
           "inference-perf per-request: every request, all stages");
    is_int(runner_q1(db, "SELECT count(*) FROM requests WHERE run_id = 1 AND status = 'failed'"), 1,
           "inference-perf per-request: the one with an error failed");
    is_near(runner_q1(db, "SELECT arrival_s FROM requests WHERE run_id = 1 AND id = 3"), 1.5, 1e-9,
            "inference-perf per-request: sent 1.5 s after the first");
    is_near(runner_q1(db, "SELECT first_token_s - arrival_s FROM requests WHERE run_id = 1 AND id = 1"),
            0.041, 1e-9, "inference-perf per-request: TTFT to the first token time");
    is_int(runner_q1(db, "SELECT output_tokens FROM requests WHERE run_id = 1 AND id = 0"), 20,
           "inference-perf per-request: the server's completion_tokens, not the client's count");
    char *model = runner_q1_text(db, "SELECT json_extract(scenario, '$.cluster.model') FROM runs WHERE id = 1");
    is_str(model, "llama-3.1-8b", "inference-perf: config.yaml's quoted, commented model_name");
    free(model);
    drop_db(db);
    free(db);
    /* bad input */
    cJSON *bad = per_request(4);
    set(bad, "2.info.response_metrics.server_usage.completion_tokens=-3");
    char *bp = write_json("per_request_lifecycle_metrics.json", bad);
    refused(bp, "per_request_lifecycle_metrics.json",
            "[2].info.response_metrics.server_usage.completion_tokens: expected a whole number >= 0",
            "inference-perf: a negative token count");
    free(bp);
    bad = per_request(4);
    set(bad, "1.end_time=1");
    bp = write_json("per_request_lifecycle_metrics.json", bad);
    refused(bp, "per_request_lifecycle_metrics.json", "[1]: expected start_time and end_time",
            "inference-perf: a request that ends before it starts");
    free(bp);
    char *folder = in_data("inference-perf/stage_0_lifecycle_metrics.json");
    cJSON *stage = read_json(folder);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(util_json_get(stage, "successes.latency"),
                                                  "time_to_first_token"),
                              "mean", cJSON_CreateString("fast"));
    bp = write_json("stage_0_lifecycle_metrics.json", stage);
    refused(bp, "stage_0_lifecycle_metrics.json",
            "successes.latency.time_to_first_token.mean: expected a number >= 0",
            "inference-perf: a statistic that is not a number");
    free(bp);
    stage = read_json(folder);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(stage, "load_summary"), "count");
    bp = write_json("stage_0_lifecycle_metrics.json", stage);
    refused(bp, "stage_0_lifecycle_metrics.json", "load_summary.count: expected a whole number",
            "inference-perf: a stage without its count");
    free(bp);
    free(folder);
    unlink(path);
    free(path);
    unlink(cfg);
    free(cfg);
    rmdir(sub);
    free(sub);
}

/* ---- vllm bench serve ---- */

enum { VN = 40, VFAILED = 5 };

/* A --save-detailed result of VN requests at 4/s, request VFAILED failed
 * (vLLM records 0 tokens out, ttft 0, no gaps and its error). */
static cJSON *vllm_result(bool start_times)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "date", "20260101-120000");
    cJSON_AddStringToObject(j, "backend", "vllm");
    cJSON_AddStringToObject(j, "model_id", "meta-llama/Llama-3.1-8B");
    cJSON_AddNumberToObject(j, "num_prompts", VN);
    cJSON_AddNumberToObject(j, "request_rate", 4);
    cJSON_AddNumberToObject(j, "burstiness", 1);
    cJSON_AddNullToObject(j, "max_concurrency");
    cJSON_AddNumberToObject(j, "completed", VN - 1);
    cJSON_AddNumberToObject(j, "output_throughput", 150.5);
    cJSON *in = cJSON_AddArrayToObject(j, "input_lens"), *out = cJSON_AddArrayToObject(j, "output_lens");
    cJSON *ttfts = cJSON_AddArrayToObject(j, "ttfts"), *itls = cJSON_AddArrayToObject(j, "itls");
    cJSON *st = start_times ? cJSON_AddArrayToObject(j, "start_times") : NULL;
    cJSON *errs = cJSON_AddArrayToObject(j, "errors"), *texts = cJSON_AddArrayToObject(j, "generated_texts");
    for (int i = 0; i < VN; i++) {
        bool failed = i == VFAILED;
        int n = failed ? 0 : 20 + i % 7;
        cJSON_AddItemToArray(in, cJSON_CreateNumber(100 + 3 * i));
        cJSON_AddItemToArray(out, cJSON_CreateNumber(n));
        cJSON_AddItemToArray(ttfts, cJSON_CreateNumber(failed ? 0 : 0.030 + 0.0005 * i));
        cJSON *g = cJSON_CreateArray();
        for (int k = 1; k < n; k++) cJSON_AddItemToArray(g, cJSON_CreateNumber(0.0125));
        cJSON_AddItemToArray(itls, g);
        if (st) cJSON_AddItemToArray(st, cJSON_CreateNumber(87000.0 + 0.25 * i));
        cJSON_AddItemToArray(errs, cJSON_CreateString(failed ? "Traceback: connection reset" : ""));
        cJSON_AddItemToArray(texts, cJSON_CreateString("..."));
    }
    cJSON_AddNumberToObject(j, "mean_ttft_ms", 39.75);
    cJSON_AddNumberToObject(j, "median_ttft_ms", 39.5);
    cJSON_AddNumberToObject(j, "p99_ttft_ms", 49.5);
    cJSON_AddNumberToObject(j, "mean_tpot_ms", 12.5);
    cJSON_AddNumberToObject(j, "mean_itl_ms", 12.5);
    cJSON_AddNumberToObject(j, "p99_e2el_ms", 380);
    return j;
}

/* The scenario `servesim import` stores for the vLLM result j (written
 * to name, then freed), read from a fresh db, which is then removed. */
static cJSON *imported_scenario(const char *name, cJSON *j, const char *db)
{
    char *path = write_json(name, j);
    result r = sv("import", path, "-o", db, NULL);
    runner_drop(&r);
    cJSON *sc = qjson(db, "SELECT scenario FROM runs WHERE id = 1");
    drop_db(db);
    free(path);
    return sc;
}

static void test_vllm_bench(void)
{
    char *path = write_json("vllm-bench.json", vllm_result(true)), *db = in_dir("vb.db");
    result r = sv("replay", path, "-o", db, "--json", "--set", "cluster.gpu=h100-sxm", NULL);
    is_int(r.status, 0, "vllm-bench: the detailed result replays");
    finite_errors(r.out, "vllm-bench");
    runner_drop(&r);
    is_int(runner_q1(db, "SELECT count(*) FROM requests WHERE run_id = 1"), VN, "vllm-bench: every request");
    is_int(runner_q1(db, "SELECT count(*) FROM requests WHERE run_id = 1 AND status = 'failed'"), 1,
           "vllm-bench: the one with an error failed");
    is_near(runner_q1(db, "SELECT arrival_s FROM requests WHERE run_id = 1 AND id = 8"), 2.0, 1e-9,
            "vllm-bench: arrivals from start_times, the first at 0");
    is_near(runner_q1(db, "SELECT first_token_s - arrival_s FROM requests WHERE run_id = 1 AND id = 3"),
            0.0315, 1e-12, "vllm-bench: TTFT as recorded");
    is_near(runner_q1(db, "SELECT finish_s - arrival_s FROM requests WHERE run_id = 1 AND id = 3"),
            0.0315 + 22 * 0.0125, 1e-12, "vllm-bench: E2E = ttft + sum(itls)");
    is_int(runner_q1(db, "SELECT prompt_tokens + output_tokens FROM requests WHERE run_id = 1 AND id = 3"),
           109 + 23, "vllm-bench: the lengths");
    is_near(stored_metric(db, 1, "ttft_p99_s"), 0.0495, 1e-15, "vllm-bench: p99_ttft_ms in seconds");
    is_near(stored_metric(db, 1, "output_tokens_per_s"), 150.5, 0, "vllm-bench: output_throughput");
    char *model = runner_q1_text(db, "SELECT json_extract(scenario, '$.cluster.model') FROM runs WHERE id = 1");
    is_str(model, "llama-3.1-8b", "vllm-bench: model_id is the catalog's model");
    free(model);
    drop_db(db);
    /* without start_times: requests kept, arrivals from the recorded generator */
    free(path);
    path = write_json("vllm-bench-old.json", vllm_result(false));
    char *db2 = in_dir("vb2.db");
    r = sv("import", path, "-o", db, NULL);
    is_int(r.status, 0, "vllm-bench without start_times imports");
    has_str(r.out, "arrivals not recorded", "vllm-bench: and says its arrivals were not recorded");
    runner_drop(&r);
    is_int(runner_q1(db, "SELECT count(*) FROM requests WHERE arrival_s = 0"), VN,
           "vllm-bench: its requests kept, each at 0");
    r = sv("replay", db, "-o", db2, "--json", "--set", "cluster.gpu=h100-sxm", NULL);
    is_int(r.status, 0, "vllm-bench without start_times: replays from its database");
    finite_errors(r.out, "vllm-bench without start_times");
    is_near(measured_of(r.out, "output_tokens_per_s"), 150.5, 0,
            "vllm-bench: compared on vLLM's own throughput (arrivals at 0 span nothing)");
    runner_drop(&r);
    cJSON *sc = qjson(db2, "SELECT scenario FROM runs WHERE id = 1");
    is_str(cJSON_GetStringValue(util_json_get(sc, "workload.arrival.process")), "poisson",
           "vllm-bench: the replay sends from vLLM's generator (burstiness 1: Poisson)");
    is_near(util_json_number(sc, "workload.arrival.rate_per_s", 0), 4, 0, "vllm-bench: at 4/s");
    is_str(cJSON_GetStringValue(util_json_get(sc, "workload.prompt_tokens.dist")), "empirical",
           "vllm-bench: with the measured lengths");
    is_int(util_json_number(sc, "stop.requests", 0), VN, "vllm-bench: as many requests");
    cJSON_Delete(sc);
    drop_db(db);
    drop_db(db2);
    /* bursty, and a closed loop */
    cJSON *j = vllm_result(false);
    cJSON_ReplaceItemInObject(j, "burstiness", cJSON_CreateNumber(0.25));
    sc = imported_scenario("vllm-bench-gamma.json", j, db);
    is_near(util_json_number(sc, "workload.arrival.cv", 0), 2, 1e-12,
            "vllm-bench: burstiness 0.25 is gamma gaps of cv 1 / sqrt(0.25)");
    cJSON_Delete(sc);
    j = vllm_result(false);
    cJSON_ReplaceItemInObject(j, "request_rate", cJSON_CreateString("inf"));
    cJSON_ReplaceItemInObject(j, "max_concurrency", cJSON_CreateNumber(8));
    sc = imported_scenario("vllm-bench-closed.json", j, db);
    is_int(util_json_number(sc, "workload.arrival.users", 0), 8,
           "vllm-bench: rate inf under max_concurrency 8 is a closed loop of 8");
    cJSON_Delete(sc);
    /* a finite rate under max_concurrency: the same client, capped */
    j = vllm_result(false);
    cJSON_ReplaceItemInObject(j, "max_concurrency", cJSON_CreateNumber(8));
    sc = imported_scenario("vllm-bench-capped.json", j, db);
    is_int(util_json_number(sc, "workload.arrival.max_concurrency", 0), 8,
           "vllm-bench: rate 4 under max_concurrency 8 keeps the cap");
    is_near(util_json_number(sc, "workload.arrival.rate_per_s", 0), 4, 0, "and the rate");
    cJSON_Delete(sc);
    /* sends recorded, all at once, under max_concurrency 1: the replay's
     * client keeps the cap, so each request is sent when the one before ends */
    j = vllm_result(true);
    cJSON_ReplaceItemInObject(j, "max_concurrency", cJSON_CreateNumber(1));
    cJSON *st = cJSON_GetObjectItem(j, "start_times");
    for (int i = 0; i < cJSON_GetArraySize(st); i++)
        cJSON_ReplaceItemInArray(st, i, cJSON_CreateNumber(87000.0));
    free(path);
    path = write_json("vllm-bench-cap1.json", j);
    r = sv("replay", path, "-o", db, "--set", "cluster.gpu=h100-sxm", NULL);
    is_int(r.status, 0, "vllm-bench: a capped run with its sends replays");
    runner_drop(&r);
    int64_t sim = (int64_t)runner_q1(db, "SELECT id FROM runs WHERE status <> 'measured'");
    char *q = util_xasprintf("SELECT json_extract(scenario, '$.workload.arrival.max_concurrency') "
                             "FROM runs WHERE id = %lld", (long long)sim);
    is_int(runner_q1(db, q), 1, "vllm-bench: the replay's trace keeps max_concurrency 1");
    free(q);
    q = util_xasprintf("SELECT count(*) FROM requests a JOIN requests b ON a.run_id = b.run_id "
                       "AND a.id <> b.id AND b.arrival_s >= a.arrival_s AND b.arrival_s < "
                       "a.finish_s - 1e-9 WHERE a.run_id = %lld", (long long)sim);
    is_int(runner_q1(db, q), 0, "vllm-bench: no two of its requests in flight at once");
    free(q);
    q = util_xasprintf("SELECT max(arrival_s) FROM requests WHERE run_id = %lld", (long long)sim);
    ok(runner_q1(db, q) > 0.5, "vllm-bench: so the last is sent well after time 0 (%.3f s)",
       runner_q1(db, q));
    free(q);
    drop_db(db);
    /* bad input */
    j = vllm_result(true);
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(j, "ttfts"), 3, cJSON_CreateNumber(-1));
    free(path);
    path = write_json("vllm-bench.json", j);
    refused(path, "vllm-bench.json", "ttfts[3]: expected a number >= 0", "vllm-bench: a negative TTFT");
    j = vllm_result(true);
    cJSON_DeleteItemFromArray(cJSON_GetObjectItem(j, "output_lens"), 0);
    free(path);
    path = write_json("vllm-bench.json", j);
    refused(path, "vllm-bench.json", "output_lens has 39 items but input_lens has 40",
            "vllm-bench: lists of different lengths");
    j = vllm_result(true);
    cJSON_ReplaceItemInArray(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "itls"), 2), 1,
                             cJSON_CreateString("x"));
    free(path);
    path = write_json("vllm-bench.json", j);
    refused(path, "vllm-bench.json", "itls[2][1]: expected a number >= 0", "vllm-bench: a gap not a number");
    free(path);
    free(db2);
    free(db);
}

/* ---- GenAI-Perf ---- */

enum { GN = 30 };

/* One response as perf_analyzer records an OpenAI chat stream. */
static cJSON *chunk(const char *content, bool role, int prompt, int completion)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "chat.completion.chunk");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    if (completion >= 0) {
        cJSON *u = cJSON_AddObjectToObject(o, "usage");
        cJSON_AddNumberToObject(u, "prompt_tokens", prompt);
        cJSON_AddNumberToObject(u, "completion_tokens", completion);
    } else {
        cJSON *c = cJSON_CreateObject(), *delta = cJSON_AddObjectToObject(c, "delta");
        if (role) cJSON_AddStringToObject(delta, "role", "assistant");
        else cJSON_AddStringToObject(delta, "content", content);
        cJSON_AddItemToArray(choices, c);
    }
    char *text = cJSON_PrintUnformatted(o), *data = util_xasprintf("data: %s\n\n", text);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "response", data);
    free(data);
    free(text);
    cJSON_Delete(o);
    return r;
}

/* profile_export.json of GN requests, 0.25 s apart: a role-only chunk at
 * 30 ms, then one token a chunk 12 ms apart, a usage chunk (when asked)
 * and [DONE]. */
static cJSON *genai_export(bool usage)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "service_kind", "openai");
    cJSON *x = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(x, "experiment");
    cJSON_AddStringToObject(e, "mode", "concurrency");
    cJSON_AddNumberToObject(e, "value", 4);
    cJSON *reqs = cJSON_AddArrayToObject(x, "requests");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "experiments"), x);
    for (int i = 0; i < GN; i++) {
        double t0 = 1.7e18 + 2.5e8 * i, t = t0 + 3e7;
        int n = 10 + i % 5;
        cJSON *q = cJSON_CreateObject(), *ts = cJSON_CreateArray(), *outs = cJSON_CreateArray();
        cJSON_AddNumberToObject(q, "timestamp", t0);
        cJSON_AddItemToObject(cJSON_AddObjectToObject(q, "request_inputs"), "payload",
                              cJSON_CreateString("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
        cJSON_AddItemToArray(ts, cJSON_CreateNumber(t));
        cJSON_AddItemToArray(outs, chunk(NULL, true, 0, -1));
        for (int k = 0; k < n; k++) {
            t += k ? 1.2e7 : 1e4;
            cJSON_AddItemToArray(ts, cJSON_CreateNumber(t));
            cJSON_AddItemToArray(outs, chunk("tok", false, 0, -1));
        }
        if (usage) {
            cJSON_AddItemToArray(ts, cJSON_CreateNumber(t + 1e4));
            cJSON_AddItemToArray(outs, chunk(NULL, false, 200 + i, n));
        }
        cJSON *done = cJSON_CreateObject();
        cJSON_AddStringToObject(done, "response", "data: [DONE]\n\n");
        cJSON_AddItemToArray(ts, cJSON_CreateNumber(t + 2e4));
        cJSON_AddItemToArray(outs, done);
        cJSON_AddItemToObject(q, "response_timestamps", ts);
        cJSON_AddItemToObject(q, "response_outputs", outs);
        cJSON_AddItemToArray(reqs, q);
    }
    return j;
}

/* profile_export_genai_perf.json: the statistics in ms, and the arguments. */
static cJSON *genai_aggregates(void)
{
    cJSON *j = cJSON_CreateObject();
    static const char *const keys[] = {"time_to_first_token", "inter_token_latency", "request_latency"};
    static const double avg[] = {30.01, 12.0, 180.0};
    for (int k = 0; k < 3; k++) {
        cJSON *s = cJSON_AddObjectToObject(j, keys[k]);
        cJSON_AddStringToObject(s, "unit", "ms");
        cJSON_AddNumberToObject(s, "avg", avg[k]);
        cJSON_AddNumberToObject(s, "p50", avg[k]);
        cJSON_AddNumberToObject(s, "p90", avg[k] * 1.1);
        cJSON_AddNumberToObject(s, "p99", avg[k] * 1.2);
    }
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(j, "output_token_throughput"), "avg", 48.0);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(j, "input_sequence_length"), "avg", 214.5);
    cJSON *model = cJSON_AddArrayToObject(cJSON_AddObjectToObject(j, "input_config"), "model");
    cJSON_AddItemToArray(model, cJSON_CreateString("meta-llama/Llama-3.1-8B"));
    return j;
}

static void test_genai_perf(void)
{
    char *sub = in_dir("gp");
    mkdir(sub, 0755);
    char *path = write_json("gp/profile_export.json", genai_export(true));
    char *agg = write_json("gp/profile_export_genai_perf.json", genai_aggregates());
    char *db = in_dir("gp.db");
    result r = sv("replay", path, "-o", db, "--json", "--set", "cluster.gpu=h100-sxm", NULL);
    is_int(r.status, 0, "genai-perf: the export replays");
    finite_errors(r.out, "genai-perf");
    runner_drop(&r);
    is_int(runner_q1(db, "SELECT count(*) FROM requests WHERE run_id = 1 AND status = 'completed'"), GN,
           "genai-perf: one run of every request");
    is_near(runner_q1(db, "SELECT arrival_s FROM requests WHERE run_id = 1 AND id = 4"), 1.0, 1e-6,
            "genai-perf: arrivals from timestamp (ns), the first at 0");
    is_near(runner_q1(db, "SELECT first_token_s - arrival_s FROM requests WHERE run_id = 1 AND id = 0"),
            0.03001, 1e-6, "genai-perf: TTFT to the first chunk with output, not the role chunk");
    is_near(runner_q1(db, "SELECT finish_s - first_token_s FROM requests WHERE run_id = 1 AND id = 0"),
            9 * 0.012, 1e-6, "genai-perf: E2E to the last output, not the usage chunk or [DONE]");
    is_int(runner_q1(db, "SELECT prompt_tokens FROM requests WHERE run_id = 1 AND id = 7"), 207,
           "genai-perf: prompt tokens from the server's usage");
    is_near(stored_metric(db, 1, "tpot_mean_s"), 0.012, 1e-15,
            "genai-perf: its inter_token_latency is servesim's TPOT");
    is_near(stored_metric(db, 1, "ttft_p90_s"), 30.01 * 1.1e-3, 1e-15,
            "genai-perf: aggregates from profile_export_genai_perf.json, in seconds");
    char *name = runner_q1_text(db, "SELECT name FROM runs WHERE id = 1");
    has_str(name, "concurrency=4", "genai-perf: the experiment in the name");
    free(name);
    drop_db(db);
    /* no usage: output tokens are the responses with output, prompts the mean */
    free(path);
    path = write_json("gp/profile_export.json", genai_export(false));
    r = sv("import", path, "-o", db, NULL);
    is_int(r.status, 0, "genai-perf without usage imports");
    has_str(r.out, "output tokens counted as responses", "genai-perf: and says how it counted");
    has_str(r.out, "every prompt at the run's mean", "genai-perf: and whence its prompts");
    runner_drop(&r);
    is_int(runner_q1(db, "SELECT output_tokens FROM requests WHERE id = 3"), 13,
           "genai-perf: 13 responses with output, 13 tokens");
    is_int(runner_q1(db, "SELECT prompt_tokens FROM requests WHERE id = 3"), 215,
           "genai-perf: input_sequence_length.avg 214.5, rounded");
    drop_db(db);
    unlink(agg);
    refused(path, "profile_export.json", "requests[0]: no prompt token count",
            "genai-perf: no token count anywhere");
    /* bad input */
    cJSON *j = genai_export(true);
    cJSON *q = cJSON_GetArrayItem(util_json_get(j, "experiments.0.requests"), 1);
    cJSON_DeleteItemFromArray(cJSON_GetObjectItem(q, "response_outputs"), 0);
    free(path);
    path = write_json("gp/profile_export.json", j);
    refused(path, "profile_export.json",
            "experiments[0].requests[1]: response_timestamps has 14 items but response_outputs has 13",
            "genai-perf: lists of different lengths");
    j = genai_export(true);
    q = cJSON_GetArrayItem(util_json_get(j, "experiments.0.requests"), 2);
    cJSON_ReplaceItemInObject(q, "timestamp", cJSON_CreateString("soon"));
    free(path);
    path = write_json("gp/profile_export.json", j);
    refused(path, "profile_export.json", "experiments[0].requests[2].timestamp: expected a number",
            "genai-perf: a timestamp not a number");
    unlink(path);
    rmdir(sub);
    free(sub);
    free(db);
    free(agg);
    free(path);
}

/* ---- AIPerf (GenAI-Perf's successor): the real run ---- */

static void test_aiperf_real(void)
{
    char *folder = in_data("genai-perf/aiperf-run1"), *db = in_dir("ai.db");
    result r = sv("replay", folder, "-o", db, "--json", "--set", "cluster.gpu=h100-sxm", NULL);
    is_int(r.status, 0, "aiperf: the real run1 folder replays");
    finite_errors(r.out, "aiperf run1");
    runner_drop(&r);
    is_int(runner_q1(db, "SELECT count(*) FROM requests WHERE run_id = 1"), 100, "aiperf: its 100 records");
    is_int(runner_q1(db, "SELECT count(*) FROM requests WHERE run_id = 1 AND status = 'completed'"), 89,
           "aiperf: the 11 cancelled ones failed");
    char *agg_path = util_xasprintf("%s/profile_export_aiperf.json", folder);
    cJSON *agg = read_json(agg_path);
    is_near(stored_metric(db, 1, "ttft_mean_s"), util_json_number(agg, "records.ttft.avg", 0) * 1e-3,
            1e-15, "aiperf: the aggregates are profile_export_aiperf.json's, in seconds");
    is_near(stored_metric(db, 1, "tpot_p99_s"),
            util_json_number(agg, "records.inter_token_latency.p99", 0) * 1e-3, 1e-15,
            "aiperf: its inter_token_latency is servesim's TPOT");
    /* the requests' own: AIPerf's TTFT mean over the same 89 requests */
    is_near(runner_q1(db, "SELECT avg(first_token_s - arrival_s) FROM requests WHERE run_id = 1 AND "
                   "status = 'completed'"),
            util_json_number(agg, "records.ttft.avg", 0) * 1e-3, 1e-9,
            "aiperf: the stored requests give AIPerf's mean TTFT");
    is_near(runner_q1(db, "SELECT sum(output_tokens) FROM requests WHERE run_id = 1"),
            util_json_number(agg, "records.total_osl.avg", 0), 0,
            "aiperf: and its total output tokens");
    cJSON_Delete(agg);
    char *model = runner_q1_text(db, "SELECT json_extract(scenario, '$.cluster.model') FROM runs WHERE id = 1");
    is_str(model, "gpt-oss-20b", "aiperf: openai/gpt-oss-20b is the catalog's model");
    free(model);
    drop_db(db);
    /* its aggregates alone */
    r = sv("import", agg_path, "-o", db, NULL);
    is_int(r.status, 0, "aiperf: profile_export_aiperf.json alone imports");
    runner_drop(&r);
    is_int(runner_q1(db, "SELECT count(*) FROM requests"), 0, "aiperf: as aggregates only");
    drop_db(db);
    /* a malformed record */
    char *src = util_xasprintf("%s/profile_export.jsonl", folder), *text = runner_read_or_bail(src);
    char *at = strstr(text, "\"ttft\":{\"value\":");
    char *bad = in_dir("profile_export.jsonl");
    FILE *f = fopen(bad, "w");
    if (at) fprintf(f, "%.*s\"ttft\":{\"value\":\"slow\"%s", (int)(at - text), text,
                    strchr(at + 16, ','));
    fclose(f);
    refused(bad, "profile_export.jsonl", "metrics.ttft: expected {\"value\": a number >= 0",
            "aiperf: a TTFT not a number");
    unlink(bad);
    free(bad);
    free(text);
    free(src);
    free(agg_path);
    free(db);
    free(folder);
}

/* LLMServingSim's requests.jsonl is still told from AIPerf's records. */
static void test_llmservingsim_jsonl(void)
{
    char *path = util_xasprintf("%s/data/validation/llmservingsim/bench/examples/RTX4090/"
                                "Llama-3.1-8B/vllm/requests.jsonl",
                                root);
    char *db = in_dir("ll.db");
    result r = sv("import", path, "-o", db, NULL);
    is_int(r.status, 0, "llmservingsim: its requests.jsonl imports");
    has_str(r.out, "llmservingsim, engine clock", "llmservingsim: as LLMServingSim's");
    runner_drop(&r);
    drop_db(db);
    free(db);
    free(path);
}

int main(int argc, char **argv)
{
    if (argc < 3 || !mkdtemp(dir)) return 1;
    servesim = argv[1];
    root = argv[2];
    test_inference_perf_real();
    test_inference_perf_per_request();
    test_vllm_bench();
    test_genai_perf();
    test_aiperf_real();
    test_llmservingsim_jsonl();
    const char *junk[] = {"vllm-bench.json", "vllm-bench-old.json", "vllm-bench-gamma.json",
                          "vllm-bench-closed.json", "per_request_lifecycle_metrics.json",
                          "stage_0_lifecycle_metrics.json", "stdout", "stderr", NULL};
    for (const char **p = junk; *p; p++) {
        char *f = in_dir(*p);
        unlink(f);
        free(f);
    }
    /* the replays' traces beside their databases */
    static const char *const dbs[] = {"ipr", "ipq", "vb", "vb2", "gp", "ai", NULL};
    for (const char *const *p = dbs; *p; p++)
        for (int k = 1; k <= 3; k++) {
            char *f = util_xasprintf("%s/%s-replay%d.csv", dir, *p, k);
            unlink(f);
            free(f);
        }
    rmdir(dir);
    return tap_done();
}
