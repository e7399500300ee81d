/*
 * test_measured.c: measured runs as a user brings them -- `servesim import`
 * of LLMServingSim's real vLLM runs (data/validation) and of servesim's
 * measured-run JSON, `replay` and `compare` of them, and `calibrate`:
 * runs that servesim itself made with known coefficients give those
 * coefficients back within 2%.  Bad input is exit 2 with the file and the
 * field named, and nothing written.  argv[1] is the servesim binary,
 * argv[2] the source root.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an.h"
#include "runner.h"
#include "tap.h"
#include "util.h"

static const char *servesim;
static char dir[] = "/tmp/servesim-measured-XXXXXX";
static char *rtx4090, *rtxpro6000; /* the LLMServingSim runs' folders */

#define sv(...) runner_run(servesim, dir, __VA_ARGS__)

static char *in_dir(const char *name)
{
    return util_xasprintf("%s/%s", dir, name);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The requests.jsonl of a run, summed by hand: the figures the import must keep. */
typedef struct sums {
    int n;
    double output_tokens, prompt_tokens, ttft_sum; /* TTFT on the engine's clock */
} sums;

static sums sum_jsonl(const char *folder)
{
    sums s = {0};
    char *path = util_xasprintf("%s/requests.jsonl", folder), *text = runner_read(path);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        s.n++;
        s.output_tokens += util_json_number(o, "output_toks", 0);
        s.prompt_tokens += util_json_number(o, "input_toks", 0);
        s.ttft_sum += util_json_number(o, "first_token_ts", 0) - util_json_number(o, "queued_ts", 0);
        cJSON_Delete(o);
    }
    free(text);
    free(path);
    return s;
}

/* ---- import ---- */

static void test_import_llmservingsim(void)
{
    char *db = in_dir("llmss.db");
    result r = sv("import", rtx4090, "-o", db, NULL);
    is_int(r.status, 0, "import of LLMServingSim's RTX 4090 run exits 0");
    has_str(r.out, "llmservingsim, engine clock, 300 requests (300 completed)",
            "and says what it read");
    runner_drop(&r);
    sums s = sum_jsonl(rtx4090);
    is_int(s.n, 300, "requests.jsonl has 300 requests");
    is_near(runner_q1(db, "SELECT count(*) FROM requests WHERE run_id = 1"), s.n, 0, "every one stored");
    is_near(runner_q1(db, "SELECT total(output_tokens) FROM requests"), s.output_tokens, 0,
            "with its output tokens");
    is_near(runner_q1(db, "SELECT total(prompt_tokens) FROM requests"), s.prompt_tokens, 0,
            "and its prompt tokens");
    is_near(runner_q1(db, "SELECT total(ttft_s) FROM request_metrics"), s.ttft_sum, 1e-6,
            "and its TTFT, queued to first token, as the view reads it");
    is_near(runner_q1(db, "SELECT min(arrival_s) FROM requests"), 0, 0, "the first queued at 0");
    char *status = runner_q1_text(db, "SELECT status FROM runs WHERE id = 1");
    is_str(status, "measured", "the run's status is measured");
    free(status);
    char *clock = runner_q1_text(db, "SELECT clock || ' ' || format || ' ' || missing FROM measurements");
    is_str(clock, "engine llmservingsim []", "engine clock, nothing missing (meta.json is full)");
    free(clock);
    char *gpu = runner_q1_text(db, "SELECT json_extract(scenario, '$.cluster.gpu') || ' ' || "
                            "json_extract(scenario, '$.cluster.model') || ' ' || "
                            "json_extract(scenario, '$.cluster.scheduler.kv_blocks') FROM runs");
    is_str(gpu, "rtx-4090 llama-3.1-8b 2588", "the device, model and KV blocks as recorded");
    free(gpu);

    r = sv("report", db, "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    is_int(r.status, 0, "report of the measured run exits 0");
    is_str(cJSON_GetStringValue(util_json_get(j, "clock")), "engine", "on the engine's clock");
    is_str(cJSON_GetStringValue(util_json_get(j, "run.measured.format")), "llmservingsim",
           "naming its tool");
    is_near(util_json_number(j, "ttft_s.mean", NAN), s.ttft_sum / s.n, 1e-9,
            "its mean TTFT the requests' own");
    cJSON_Delete(j);
    runner_drop(&r);

    /* the RTX PRO 6000 run is an older one: no device, no KV cache block */
    r = sv("import", rtxpro6000, "-o", db, NULL);
    is_int(r.status, 0, "the older RTX PRO 6000 run imports too");
    has_str(r.out, "not recorded", "saying what it lacks");
    has_str(r.out, "cluster.gpu", "its GPU");
    has_str(r.out, "cluster.scheduler.kv_blocks", "and its KV block count");
    runner_drop(&r);
    is_near(runner_q1(db, "SELECT count(*) FROM runs WHERE status = 'measured'"), 2, 0, "two measured runs");
    free(db);
}

/* A measured-run JSON of aggregates only, with a generator scenario. */
static void test_import_servesim_json(void)
{
    char *json = in_dir("agg.json"), *sc = in_dir("agg-scenario.json"), *db = in_dir("agg.db");
    write_file(sc, "{\"cluster\": {\"gpu\": \"h100-sxm\", \"model\": \"llama-3.1-8b\"},"
                   " \"workload\": {\"arrival\": {\"process\": \"poisson\", \"rate_per_s\": 4},"
                   " \"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 512},"
                   " \"output_tokens\": {\"dist\": \"fixed\", \"value\": 128}},"
                   " \"stop\": {\"requests\": 100}}");
    write_file(json, "{\"name\": \"h100 at 4/s\", \"scenario\": \"agg-scenario.json\","
                     " \"metrics\": {\"ttft_p50_s\": 0.05, \"ttft_p99_s\": 0.09,"
                     " \"tpot_mean_s\": 0.008, \"e2e_p90_s\": 1.2}}");
    result r = sv("import", json, "-o", db, "--json", NULL);
    is_int(r.status, 0, "a measured-run JSON of metrics only imports");
    cJSON *j = cJSON_Parse(r.out);
    is_int(cJSON_GetArraySize(util_json_get(cJSON_GetArrayItem(j, 0), "metrics")), 4,
           "with its four metrics");
    cJSON_Delete(j);
    runner_drop(&r);
    is_near(runner_q1(db, "SELECT json_extract(metrics, '$.ttft_p99_s') FROM measurements"), 0.09, 0,
            "stored as given");
    r = sv("report", db, NULL);
    has_str(r.out, "the tool's own figures", "report shows the tool's figures");
    has_str(r.out, "ttft_p99_s", "each of them");
    runner_drop(&r);

    char *rdb = in_dir("agg-replay.db");
    r = sv("replay", db, "-o", rdb, "--json", NULL);
    is_int(r.status, 0, "replay of a stored measured run replays its generator");
    j = cJSON_Parse(r.out);
    const cJSON *rows = util_json_get(cJSON_GetArrayItem(j, 0), "metrics");
    is_int(cJSON_GetArraySize(rows), 4, "and compares on the four metrics measured");
    double sim_p99 = NAN, err = NAN;
    const cJSON *row;
    cJSON_ArrayForEach(row, rows) {
        if (!strcmp(cJSON_GetStringValue(util_json_get(row, "metric")), "ttft_p99_s")) {
            sim_p99 = util_json_number(row, "simulated", NAN);
            err = util_json_number(row, "error_pct", NAN);
        }
    }
    is_near(err, 100 * (sim_p99 - 0.09) / 0.09, 1e-9, "the error is (simulated - measured) / measured");
    cJSON_Delete(j);
    runner_drop(&r);
    is_near(runner_q1(rdb, "SELECT count(*) FROM runs"), 1, 0,
            "the replay of a database's run stores the simulation alone");
    free(rdb);
    free(json);
    free(sc);
    free(db);
}

/* ---- replay and compare ---- */

static void test_replay(void)
{
    char *db = in_dir("replay.db");
    result r = sv("replay", rtx4090, "-o", db, NULL);
    is_int(r.status, 0, "replay of the RTX 4090 run exits 0");
    has_str(r.out, "clock     engine", "compares on the engine's clock");
    has_str(r.out, "ttft_p99_s", "each percentile");
    runner_drop(&r);
    is_near(runner_q1(db, "SELECT count(*) FROM runs"), 2, 0, "both runs side by side");
    char *st = runner_q1_text(db, "SELECT group_concat(status, ',') FROM (SELECT status FROM runs ORDER BY id)");
    is_str(st, "measured,completed", "measured first, then its replay");
    free(st);
    char *trace = in_dir("replay-replay1.csv");
    ok(exists(trace), "the trace written beside the database");
    is_near(runner_q1(db, "SELECT count(*) FROM requests WHERE run_id = 2"), 300, 0,
            "the replay served every measured request");

    r = sv("compare", db, db, "--run-a", "1", "--run-b", "2", "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    is_int(r.status, 0, "compare of the measured and the simulated run exits 0");
    is_str(cJSON_GetStringValue(util_json_get(j, "clock")), "engine", "on the measurement's clock");
    is_int(cJSON_GetArraySize(util_json_get(j, "metrics")), 14, "every metric");
    /* the simulated side on the engine's clock is the ttft_engine definition */
    sqlite3 *sdb = NULL;
    an_definition def;
    util_diag d;
    util_diag_init(&d);
    double engine_mean = NAN;
    if (an_open(db, &sdb, &d) == 0 && an_definition_of(sdb, 2, "ttft_engine", &def, &d) == 0)
        engine_mean = def.stats.mean;
    util_diag_fini(&d);
    sqlite3_close(sdb);
    const cJSON *first = cJSON_GetArrayItem(util_json_get(j, "metrics"), 0);
    is_str(cJSON_GetStringValue(util_json_get(first, "metric")), "ttft_mean_s", "TTFT first");
    is_near(util_json_number(first, "simulated", NAN), engine_mean, 1e-12,
            "the simulated TTFT is the engine clock's (ttft_engine)");
    is_near(util_json_number(first, "measured", NAN),
            runner_q1(db, "SELECT avg(ttft_s) FROM request_metrics WHERE run_id = 1"), 1e-12,
            "the measured one the requests'");
    cJSON_Delete(j);
    runner_drop(&r);

    r = sv("compare", db, db, "--run-a", "2", "--run-b", "1", NULL);
    has_str(r.out, "measured  ", "either order: the measured side found");
    runner_drop(&r);

    /* the other readers take a measured run as they take any */
    r = sv("slo-curve", db, "--run", "1", NULL);
    is_int(r.status, 0, "slo-curve of the measured run");
    has_str(r.out, "300 measured", "over its 300 requests");
    runner_drop(&r);
    r = sv("timeline", db, "--run", "1", "--csv", NULL);
    is_int(r.status, 0, "timeline of the measured run");
    runner_drop(&r);
    char *svg = in_dir("cdf.svg");
    r = sv("plot", db, "cdf", "--run", "1", "--run", "2", "-o", svg, NULL);
    is_int(r.status, 0, "plot cdf of the measured run and its replay");
    runner_drop(&r);
    char *figure = runner_read(svg);
    has_str(figure, "measured, run 1", "the measured curve named so");
    has_str(figure, "simulated, run 2", "and the replay's");
    free(figure);
    free(svg);
    free(trace);
    free(db);
}

/* ---- bad input ---- */

static void is_refused(result *r, const char *what, const char *needle)
{
    is_int(r->status, 2, "%s: exit 2", what);
    has_str(r->err, needle, "%s: the message names it", what);
    runner_drop(r);
}

static void test_bad_input(void)
{
    char *db = in_dir("bad.db"), *f = in_dir("unknown.json");
    write_file(f, "{\"foo\": 1}");
    result r = sv("import", f, "-o", db, NULL);
    is_refused(&r, "an unknown format", "unknown.json: an unknown format");
    ok(!exists(db), "nothing written");

    write_file(f, "{\"ttfts\": [0.1], \"experiments\": []}");
    r = sv("import", f, "-o", db, NULL);
    is_refused(&r, "a mixed format", "a mixed format: it has keys of both vllm-bench and genai-perf");

    write_file(f, "{\"scenario\": {}, \"metrics\": {\"ttft_p95_s\": 1}}");
    r = sv("import", f, "-o", db, NULL);
    is_refused(&r, "an unknown metric", "metrics.ttft_p95_s: unknown metric 'ttft_p95_s'");

    write_file(f, "{\"scenario\": {}, \"metrics\": {\"ttft_p99_s\": \"fast\"}}");
    r = sv("import", f, "-o", db, NULL);
    is_refused(&r, "a metric that is not a number", "metrics.ttft_p99_s: expected a number");

    write_file(f, "{\"scenario\": {\"cluster\": {\"gpu\": \"h100-sxm\"}}}");
    r = sv("import", f, "-o", db, NULL);
    is_refused(&r, "no usable metric", "has no usable metric");

    char *csv = in_dir("bad.csv");
    write_file(csv, "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n0,10,5,0.1,0.5\n1,x,5,0.1,0.5\n");
    write_file(f, "{\"scenario\": {}, \"requests\": \"bad.csv\"}");
    r = sv("import", f, "-o", db, NULL);
    is_refused(&r, "a malformed requests.csv", "bad.csv:3: field 2: expected a number");
    free(csv);

    /* a --scenario that contradicts the run, and an existing database left as it was */
    char *sc = in_dir("other.json"), *good = in_dir("good.db");
    write_file(sc, "{\"cluster\": {\"model\": \"llama-3.1-70b\"}}");
    r = sv("import", rtx4090, "-o", good, NULL);
    runner_drop(&r);
    char *before = runner_read(good);
    r = sv("import", rtx4090, "-o", good, "--scenario", sc, NULL);
    is_refused(&r, "a --scenario of another model",
               "cluster.model is \"llama-3.1-70b\", but");
    char *after = runner_read(good);
    ok(!strcmp(before, after) && *before, "the existing database untouched");
    free(before);
    free(after);

    /* --unset drops a recorded setting: the engine's own default then applies */
    char *un = in_dir("unset.db");
    r = sv("import", rtx4090, "-o", un, "--unset", "cluster.scheduler.kv_blocks", NULL);
    is_int(r.status, 0, "import --unset a recorded setting");
    has_str(r.out, "cluster.scheduler.kv_blocks", "which is then not recorded");
    runner_drop(&r);
    is_near(runner_q1(un, "SELECT json_type(scenario, '$.cluster.scheduler.kv_blocks') IS NULL "
                          "FROM runs"),
            1, 0, "and gone from the stored scenario");
    r = sv("import", rtx4090, "-o", db, "--unset", "cluster.schedulr.kv_blocks", NULL);
    is_refused(&r, "--unset of a key that is not there", "did you mean 'scheduler'?");
    free(un);

    r = sv("replay", rtxpro6000, "-o", db, NULL);
    is_refused(&r, "a replay without the GPU", "cluster.gpu was not recorded: give --scenario");
    ok(!exists(db), "nothing written");
    r = sv("replay", rtxpro6000, "-o", db, "--set", "cluster.gpu=rtx-pro-6000", NULL);
    is_int(r.status, 0, "--set gives it");
    runner_drop(&r);
    free(sc);
    free(good);
    free(f);
    free(db);
}

/* ---- calibrate ---- */

/* A run servesim makes with mfu 0.35 and mbu 0.6, written as a measured
 * run that does not say so: its requests (arrival, lengths, TTFT, E2E) and
 * the engine settings without the two coefficients. */
static char *synthetic(int k, int rate, int median)
{
    char *truth = util_xasprintf("%s/truth%d.json", dir, k), *db = util_xasprintf("%s/truth%d.db", dir, k);
    char *text = util_xasprintf(
        "{\"name\": \"truth %d\", \"seed\": %d, \"cluster\": {\"gpu\": \"h100-sxm\", "
        "\"model\": \"llama-3.1-8b\", \"cost_model\": {\"mfu\": 0.35, \"mbu\": 0.6}}, "
        "\"workload\": {\"arrival\": {\"process\": \"poisson\", \"rate_per_s\": %d}, "
        "\"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": %d, \"sigma\": 0.8, \"min\": 16, "
        "\"max\": 8000}, \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 120, "
        "\"sigma\": 0.6, \"min\": 2, \"max\": 800}}, \"stop\": {\"requests\": 150}}",
        k, k, rate, median);
    write_file(truth, text);
    free(text);
    result r = sv("run", truth, "-o", db, "-q", NULL);
    runner_drop(&r);
    char *csv = util_xasprintf("%s/truth%d.csv", dir, k);
    FILE *f = fopen(csv, "w");
    sqlite3 *s = NULL;
    sqlite3_stmt *st = NULL;
    fputs("arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n", f);
    if (sqlite3_open(db, &s) == SQLITE_OK &&
        sqlite3_prepare_v2(s, "SELECT arrival_s, prompt_tokens, output_tokens, ttft_s, e2e_s FROM "
                              "request_metrics WHERE status = 'completed' ORDER BY arrival_s",
                           -1, &st, NULL) == SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW)
            fprintf(f, "%.17g,%d,%d,%.17g,%.17g\n", sqlite3_column_double(st, 0),
                    sqlite3_column_int(st, 1), sqlite3_column_int(st, 2),
                    sqlite3_column_double(st, 3), sqlite3_column_double(st, 4));
    sqlite3_finalize(st);
    sqlite3_close(s);
    fclose(f);
    char *json = util_xasprintf("%s/measured%d.json", dir, k);
    text = util_xasprintf("{\"name\": \"synthetic %d\", \"scenario\": {\"cluster\": {\"gpu\": "
                          "\"h100-sxm\", \"model\": \"llama-3.1-8b\"}}, \"requests\": "
                          "\"truth%d.csv\"}", k, k);
    write_file(json, text);
    free(text);
    free(csv);
    free(db);
    free(truth);
    return json;
}

static void test_calibrate(void)
{
    char *m[3] = {synthetic(1, 4, 400), synthetic(2, 8, 800), synthetic(3, 12, 1200)};
    char *profile = in_dir("profile.json");
    result r = sv("calibrate", m[0], m[1], m[2], "-o", profile, NULL);
    is_int(r.status, 0, "calibrate of three runs exits 0");
    has_str(r.out, "cross-validated error (3 folds", "and prints the k-fold error");
    has_str(r.out, "training error", "and the training error");
    runner_drop(&r);
    char *text = runner_read(profile);
    cJSON *p = cJSON_Parse(text);
    double mfu = util_json_number(p, "coefficients.mfu.value", NAN);
    double mbu = util_json_number(p, "coefficients.mbu.value", NAN);
    ok(fabs(mfu / 0.35 - 1) < 0.02, "mfu recovered within 2%% (%g for 0.35)", mfu);
    ok(fabs(mbu / 0.6 - 1) < 0.02, "mbu recovered within 2%% (%g for 0.6)", mbu);
    ok(util_json_number(p, "coefficients.mfu.stderr", NAN) > 0, "with an uncertainty");
    is_str(cJSON_GetStringValue(util_json_get(p, "gpu")), "h100-sxm", "the profile's GPU");
    is_str(cJSON_GetStringValue(util_json_get(p, "engine")), "vllm-v1", "and its engine");
    is_int(cJSON_GetArraySize(util_json_get(p, "fitted_on")), 3, "fitted on the three runs");
    ok(!isnan(util_json_number(p, "cv_error_pct.ttft_p50_s", NAN)), "its held-out error stored");
    cJSON_Delete(p);
    free(text);

    /* a run that only a GPU faster than its peak could serve: mfu stops on 1 */
    char *fast = in_dir("fast.json"), *fast_csv = in_dir("fast.csv"), *none = in_dir("none.json");
    write_file(fast_csv, "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n"
                         "0,8000,2,0.00001,0.01\n1,8000,2,0.00001,0.01\n2,8000,2,0.00001,0.01\n");
    write_file(fast, "{\"scenario\": {\"cluster\": {\"gpu\": \"h100-sxm\", \"model\": "
                     "\"llama-3.1-8b\"}}, \"requests\": \"fast.csv\", \"name\": \"too fast\"}");
    r = sv("calibrate", fast, "-o", none, "--fit", "mfu", NULL);
    is_refused(&r, "a fit that stops on a bound", "mfu stopped on its bound");
    ok(!exists(none), "no profile written");
    r = sv("calibrate", m[0], "-o", none, "--fit", "mfu,mbx", NULL);
    is_refused(&r, "an unknown coefficient", "unknown coefficient 'mbx' (did you mean 'mbu'?");
    r = sv("calibrate", m[0], rtx4090, "-o", none, NULL);
    is_refused(&r, "runs of two GPUs", "a profile belongs to one GPU and one engine");
    ok(!exists(none), "no profile written");
    free(none);
    free(fast);
    free(fast_csv);
    free(profile);
    for (int k = 0; k < 3; k++) free(m[k]);
}

int main(int argc, char **argv)
{
    if (argc < 3 || !mkdtemp(dir)) return 1;
    char cwd[4096];
    /* the docs' commands run in a folder of their own */
    char *exe = argv[1][0] == '/' || !getcwd(cwd, sizeof cwd) ? util_xstrdup(argv[1])
                                                                : util_xasprintf("%s/%s", cwd, argv[1]);
    servesim = exe;
    rtx4090 = util_xasprintf("%s/data/validation/llmservingsim/bench/examples/RTX4090/"
                             "Llama-3.1-8B/vllm", argv[2]);
    rtxpro6000 = util_xasprintf("%s/data/validation/llmservingsim/bench/examples/RTXPRO6000/"
                                "Llama-3.1-8B/vllm", argv[2]);
    test_import_llmservingsim();
    test_import_servesim_json();
    test_replay();
    test_bad_input();
    test_calibrate();
    free(rtx4090);
    free(rtxpro6000);
    free(exe);
    char *cmd = util_xasprintf("rm -rf '%s'", dir);
    if (system(cmd)) tap_diag("could not remove %s", dir);
    free(cmd);
    return tap_done();
}
