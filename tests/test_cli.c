/*
 * test_cli.c: the command line as users and scripts rely on it -- exit
 * statuses, the JSON report of `run` equal to `report`, runs appended to a
 * database, bad input that names its location and touches nothing, the
 * catalog and keys, classes and agent tasks, what a stored run can be asked,
 * sweep and plan, lessons, and Ctrl-C.  argv[1] is the servesim binary,
 * argv[2] the source root (its examples/ and tests/scenarios/).
 */
#include <fcntl.h>
#include <pty.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"
#include "tap.h"
#include "util.h"

/* cmp_ok(a, op, b, "description"): a op b on numbers, printing both sides on
 * failure (tap.h has no such assertion; a candidate for it). */
static const char *servesim, *root;
static char dir[] = "/tmp/servesim-cli-XXXXXX";

/* Runs servesim with up to 30 arguments (NULL-terminated). */
#define sv(...) runner_run(servesim, dir, __VA_ARGS__)

static char *in_dir(const char *name)
{
    return util_xasprintf("%s/%s", dir, name);
}

/* The text of tests/scenarios/NAME in the source root (caller frees); a
 * missing file bails out, as every test after it would be meaningless. */
static char *scenario_text(const char *name)
{
    char *path = util_xasprintf("%s/tests/scenarios/%s", root, name);
    char *text = runner_read_or_bail(path);
    free(path);
    return text;
}

/* The first n bytes of s, for is_str on how an output starts. */
static const char *head(const char *s, int n)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "%.*s", n, s ? s : "");
    return buf;
}

static void test_basics(void)
{
    result r = sv("--version", NULL);
    is_int(r.status, 0, "--version");
    is_str(head(r.out, 9), "servesim ", "prints the name and version");
    runner_drop(&r);
    r = sv("--help", NULL);
    is_int(r.status, 0, "--help exits 0");
    has_str(r.out, "run SCENARIO.json", "and lists the commands");
    runner_drop(&r);
    const char *cmds[] = {"run", "report", "catalog", "keys"};
    for (int i = 0; i < 4; i++) {
        r = sv(cmds[i], "--help", NULL);
        is_int(r.status, 0, "%s --help", cmds[i]);
        has_str(r.out, "usage: servesim", "%s --help prints the usage", cmds[i]);
        runner_drop(&r);
    }
    r = sv("simulate", NULL);
    is_int(r.status, 2, "an unknown command is bad usage (2)");
    runner_drop(&r);
    r = sv("run", "--frobnicate", "x.json", NULL);
    is_int(r.status, 2, "an unknown option is bad usage (2)");
    has_str(r.err, "unknown option '--frobnicate'", "and is named");
    runner_drop(&r);
    r = sv("run", NULL);
    is_int(r.status, 2, "run without a scenario");
    has_str(r.err, "missing SCENARIO.json", "says what is missing");
    runner_drop(&r);
}

/* The report run prints is summarised from the rows as they are recorded;
 * the one report prints from the database, from the stored rows: the same
 * text to the byte, for runs with classes and agent tasks, per replica, with
 * time-outs, and overloaded (requests unfinished and still queued). */
static void test_run_report_same(const char *quick)
{
    char *agents = util_xasprintf("%s/examples/agents.json", root);
    struct {
        const char *what, *scenario, *sets[4], *view[3];
    } cases[] = {
        {"classes and agent tasks", agents, {"stop.requests=400", NULL}, {"--by", "class", NULL}},
        {"per replica", quick, {"stop.requests=600", "cluster.replicas=3", NULL},
         {"--by", "replica", NULL}},
        {"time-outs", quick, {"stop.requests=600", "workload.timeout_s=1.5",
                              "workload.arrival.rate_per_s=40", NULL}, {NULL}},
        {"overloaded", quick, {"stop.requests=20000", "workload.arrival.rate_per_s=400", NULL},
         {NULL}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *db = in_dir("same.db");
        unlink(db);
        const char *args[20] = {"run", cases[c].scenario, "-o", db, "--json", "-q"};
        int n = 6;
        for (int i = 0; cases[c].sets[i]; i++) args[n++] = "--set", args[n++] = cases[c].sets[i];
        int first_view = n;
        for (int i = 0; cases[c].view[i]; i++) args[n++] = cases[c].view[i];
        args[n] = NULL;
        result run = sv(args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7],
                        args[8], args[9], args[10], args[11], args[12], args[13], args[14], NULL);
        const char *rep_args[8] = {"report", db, "--json"};
        int m = 3;
        for (int i = first_view; i < n; i++) rep_args[m++] = args[i];
        rep_args[m] = NULL;
        result rep = sv(rep_args[0], rep_args[1], rep_args[2], rep_args[3], rep_args[4],
                        rep_args[5], NULL);
        ok(run.out[0] == '{', "%s: run prints its report as JSON", cases[c].what);
        ok(!strcmp(run.out, rep.out),
           "%s: run's report, from the rows as recorded, is report's, from the database",
           cases[c].what);
        runner_drop(&run);
        runner_drop(&rep);
        unlink(db);
        free(db);
    }
    free(agents);
}

static void test_run_and_report(const char *quick)
{
    char *db = in_dir("a.db");
    result run = sv("run", quick, "-o", db, "--set", "stop.requests=300", "--json", "-q", NULL);
    is_int(run.status, 0, "run exits 0");
    cJSON *j = cJSON_Parse(run.out);
    ok(j != NULL, "--json prints one JSON object");
    is_near(util_json_number(j, "requests.arrived", 0), 300, 0, "--set stop.requests took effect");
    is_near(util_json_number(j, "run.id", 0), 1, 0, "the first run of a new database is run 1");
    const char *keys[] = {"run", "requests", "ttft_s", "tpot_s", "tpot_incl_ttft_s", "e2e_s",
                          "queue_s", "throughput", "slo", "utilisation"};
    bool all = true;
    for (int i = 0; i < 10; i++) all &= cJSON_GetObjectItem(j, keys[i]) != NULL;
    ok(all, "the report has every section of the contract");
    ok(util_json_get(j, "ttft_s.p99") != NULL, "percentiles are there");
    ok(util_json_get(j, "throughput.output_tokens_per_s_per_user.p50") != NULL,
       "per-user throughput's too");
    cJSON_Delete(j);

    result rep = sv("report", db, "--json", NULL);
    is_int(rep.status, 0, "report exits 0");
    is_str(rep.out, run.out, "report --json prints exactly what run --json printed");
    runner_drop(&rep);

    result again = sv("run", quick, "-o", db, "--set", "stop.requests=300", "--seed", "5",
                      "--json", "-q", NULL);
    j = cJSON_Parse(again.out);
    is_near(util_json_number(j, "run.id", 0), 2, 0, "a second run is appended as run 2");
    is_near(util_json_number(j, "run.seed", 0), 5, 0, "with --seed applied");
    cJSON_Delete(j);
    rep = sv("report", db, "--run", "1", "--json", NULL);
    is_str(rep.out, run.out, "run 1 is unchanged by run 2");
    ok(strcmp(again.out, run.out) != 0, "another seed gives another report");
    runner_drop(&rep);
    runner_drop(&again);

    rep = sv("report", db, NULL);
    is_int(rep.status, 0, "the text report");
    has_str(rep.out, "run 2 \"quickstart\" (seed 5): completed", "names the newest run");
    has_str(rep.out, "  ttft ", "has a TTFT row");
    has_str(rep.out, "throughput over", "and throughput");
    runner_drop(&rep);
    rep = sv("report", db, "--run", "9", NULL);
    is_int(rep.status, 2, "a missing run id is bad input");
    has_str(rep.err, "no run with id 9", "and is named");
    runner_drop(&rep);
    runner_drop(&run);
    free(db);
}

static bool same_file(const char *path, const char *before)
{
    char *now = runner_read(path);
    bool same = !strcmp(now, before);
    free(now);
    return same;
}

static void test_bad_input(const char *quick)
{
    char *db = in_dir("a.db"), *before = runner_read(db);
    result r = sv("run", quick, "-o", db, "--set", "workload.arrival.rate_per_s=-1", "--set",
                  "cluster.gpu=h300", NULL);
    is_int(r.status, 2, "a bad override is bad input (2)");
    has_str(r.err, "workload.arrival.rate_per_s: -1 is out of range", "named by its path");
    has_str(r.err, "cluster.gpu: unknown GPU 'h300'", "every error, not just the first");
    ok(same_file(db, before), "the existing database is untouched");
    runner_drop(&r);
    free(before);

    char *fresh = in_dir("fresh.db");
    r = sv("run", quick, "-o", fresh, "--set", "stop={}", NULL);
    is_int(r.status, 2, "a bad scenario is bad input");
    ok(access(fresh, F_OK) != 0, "a bad scenario creates no database");
    runner_drop(&r);

    char *notes = in_dir("notes.txt");
    FILE *f = fopen(notes, "w");
    fputs("my notes\n", f);
    fclose(f);
    r = sv("run", quick, "-o", notes, "-q", NULL);
    is_int(r.status, 2, "-o on a text file is refused");
    has_str(r.err, "not a SQLite database", "as not a database");
    ok(same_file(notes, "my notes\n"), "and the file is left as it was");
    runner_drop(&r);

    char *broken = in_dir("broken.json");
    f = fopen(broken, "w");
    fputs("{\n  \"name\": \"x\",\n  \"stop\" {}\n}\n", f);
    fclose(f);
    r = sv("run", broken, "-o", fresh, NULL);
    is_int(r.status, 2, "malformed JSON is bad input");
    has_str(r.err, "broken.json:3:10: invalid JSON", "reported with file:line:column");
    runner_drop(&r);
    r = sv("run", "/nonexistent/s.json", NULL);
    is_int(r.status, 2, "a missing file");
    has_str(r.err, "/nonexistent/s.json: cannot open", "is named");
    runner_drop(&r);
    r = sv("report", notes, NULL);
    is_int(r.status, 2, "report of a file that is not a database is bad input");
    runner_drop(&r);
    free(db);
    free(fresh);
    free(notes);
    free(broken);
}

/* `catalog datasets`: each built-in dataset with its figures, which are
 * its source's -- azure-code's means against the Azure trace's own columns,
 * read here from the CSV. */
static void test_catalog_datasets(void)
{
    result r = sv("catalog", "datasets", "--json", NULL);
    is_int(r.status, 0, "catalog datasets --json");
    cJSON *j = cJSON_Parse(r.out), *code = NULL, *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItem(j, "datasets"))
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "id")), "azure-code")) code = d;
    is_int(cJSON_GetArraySize(cJSON_GetObjectItem(j, "datasets")), 4, "four datasets");
    char *path = util_xasprintf("%s/data/traces/AzureLLMInferenceTrace_code.csv", root);
    char *csv = runner_read(path), *line = strchr(csv, '\n');
    double n = 0, ctx = 0, gen = 0;
    while (line && line[1]) {
        char *c1 = strchr(line + 1, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        if (!c2) break;
        ctx += strtod(c1 + 1, NULL);
        gen += strtod(c2 + 1, NULL);
        n++;
        line = strchr(line + 1, '\n');
    }
    is_near(util_json_number(code, "pairs", 0), n, 0, "azure-code: the trace's %g requests", n);
    is_near(util_json_number(code, "prompt_tokens.mean", 0), ctx / n, 1e-9,
            "azure-code: the mean prompt is the trace's mean ContextTokens");
    is_near(util_json_number(code, "output_tokens.mean", 0), gen / n, 1e-9,
            "azure-code: the mean reply its mean GeneratedTokens");
    free(csv);
    free(path);
    cJSON_Delete(j);
    runner_drop(&r);
    r = sv("catalog", "datasets", NULL);
    has_str(r.out, "arxiv-summarization  28257", "the text lists each, with its pairs");
    has_str(r.out, "Vidur's arXiv summarisation trace", "and its source");
    runner_drop(&r);
}

static void test_catalog_keys(void)
{
    result r = sv("catalog", "gpus", NULL);
    is_int(r.status, 0, "catalog gpus");
    has_str(r.out, "h100-sxm", "lists the H100");
    has_str(r.out, "mi300x", "and the MI300X");
    runner_drop(&r);
    r = sv("catalog", "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    ok(j != NULL, "catalog --json prints JSON");
    is_int(cJSON_GetArraySize(cJSON_GetObjectItem(j, "gpus")), 14, "catalog --json: 14 GPUs");
    is_int(cJSON_GetArraySize(cJSON_GetObjectItem(j, "models")), 22, "and 22 models");
    ok(util_json_get(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "gpus"), 0), "source") != NULL,
       "each entry carries its source");
    cJSON_Delete(j);
    runner_drop(&r);
    r = sv("catalog", "tpus", NULL);
    is_int(r.status, 2, "an unknown catalog section is bad usage");
    has_str(r.err, "'datasets'", "and the sections it names include the datasets");
    runner_drop(&r);
    test_catalog_datasets();
    /* a preset's stages, each a term with its value and source */
    r = sv("catalog", "engine", "vllm-v1", NULL);
    is_int(r.status, 0, "catalog engine vllm-v1");
    has_str(r.out, "step pipeline:", "names the step pipeline as a stage");
    has_str(r.out, "first runs in step n + 2", "says which step first runs a request queued in n");
    has_str(r.out, "step_with_batch_queue", "with the source it was read in");
    has_str(r.out, "host.output_s = 0.0005 s", "and the output's term with its value");
    runner_drop(&r);
    r = sv("catalog", "engines", "sglang", NULL);
    has_str(r.out, "event_loop_overlap", "catalog engines ID reads as catalog engine ID");
    runner_drop(&r);
    r = sv("catalog", "engine", "vllm-v0", NULL);
    has_str(r.out, "runs in step n + 1", "a synchronous preset runs a queued request in the next step");
    runner_drop(&r);
    r = sv("catalog", "engine", "vllm", NULL);
    is_int(r.status, 2, "an unknown engine is an input error");
    has_str(r.err, "unknown engine 'vllm'", "naming it");
    runner_drop(&r);
    r = sv("keys", NULL);
    is_int(r.status, 0, "keys exits 0");
    has_str(r.out, "`workload.arrival.rate_per_s`", "keys lists scenario keys");
    runner_drop(&r);
}

/* `catalog model SOURCE`: what a config.json gives, at a precision; an
 * unknown id and a config of an unknown architecture are bad input. */
static void test_catalog_model(void)
{
    char *ds = util_xasprintf("%s/tests/hf_configs/deepseek-v3", root);
    result r = sv("catalog", "model", ds, "--json", "--quantization", "fp8", "--kv-cache-dtype",
                  "fp8", NULL);
    is_int(r.status, 0, "catalog model DIR --json");
    cJSON *j = cJSON_Parse(r.out);
    is_near(util_json_number(j, "kv_bytes_per_token", 0), 35136, 0,
            "DeepSeek-V3's fp8 latent: 35,136 bytes a token");
    is_near(util_json_number(j, "weight_bytes", 0), util_json_number(j, "params_b", 0) * 1e9, 1,
            "fp8 weights: a byte a parameter");
    cmp_ok(fabs(util_json_number(j, "params_b", 0) / 671 - 1), <, 0.01, "671B parameters");
    has_str(cJSON_IsString(util_json_get(j, "attention")) ? util_json_get(j, "attention")->valuestring
                                                            : "", "mla", "MLA attention");
    is_near(util_json_number(j, "moe_layers", 0), 58, 0, "58 MoE layers");
    cJSON_Delete(j);
    runner_drop(&r);
    r = sv("catalog", "model", "llama-3.1-8b", "--gpu", "h100-sxm", NULL);
    is_int(r.status, 0, "catalog model ID --gpu");
    has_str(r.out, "kv_bytes_per_token  131072", "prints the KV bytes per token");
    has_str(r.out, "kv capacity", "and the KV capacity on that GPU");
    ok(!strstr(r.out, "weight-only"), "bf16 on an H100 is no weight-only form");
    runner_drop(&r);
    /* issue 26, item 6: fp8 on an A100 runs, weight-only, and says so */
    r = sv("catalog", "model", "llama-3.1-8b", "--gpu", "a100-80gb", "--quantization", "fp8", NULL);
    is_int(r.status, 0, "catalog model fp8 on an A100");
    has_str(r.out, "fp8: 1 byte per weight, weight-only (W8A16) on a100-80gb",
            "names its weight-only form");
    runner_drop(&r);
    r = sv("catalog", "model", "llama-3.1-8b", "--gpu", "h100-sxm", "--quantization", "fp8",
           "--json", NULL);
    ok(!strstr(r.out, "weight_only"), "fp8 on an H100 computes in fp8: no weight_only in JSON");
    runner_drop(&r);
    r = sv("catalog", "model", "llama-3.1-8", NULL);
    is_int(r.status, 2, "an unknown model id is bad input");
    has_str(r.err, "did you mean 'llama-3.1-8b'", "with the closest id");
    runner_drop(&r);
    char *bad = in_dir("config.json");
    FILE *f = fopen(bad, "w");
    if (f) fputs("{\"model_type\": \"mamba\", \"num_hidden_layers\": 4}", f), fclose(f);
    r = sv("catalog", "model", bad, NULL);
    is_int(r.status, 2, "a config of an unknown architecture is bad input");
    has_str(r.err, "model_type: unknown architecture 'mamba'", "naming its model_type");
    runner_drop(&r);
    unlink(bad);
    free(bad);
    free(ds);
}

/* Classes and agent tasks from the command line: --by class, and a trace
 * with a malformed row refused before any database is made. */
static void test_classes(void)
{
    char *agents = util_xasprintf("%s/examples/agents.json", root), *db = in_dir("agents.db");
    result r = sv("run", agents, "-o", db, "--set", "stop.duration_s=60", "-q", "--by", "class",
                  NULL);
    is_int(r.status, 0, "the agents example runs");
    has_str(r.out, "\nclass \"chat\"\n", "--by class prints each class");
    has_str(r.out, "tasks: ", "and the agent tasks");
    runner_drop(&r);
    r = sv("report", db, "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    ok(util_json_get(j, "classes.agent.tasks.any_slow_fraction") != NULL,
       "the JSON report has each class's tasks");
    ok(util_json_get(j, "classes.research.ttft_s.p99") != NULL, "and latencies");
    ok(util_json_get(j, "tasks.e2e_s.p50") != NULL, "the run's tasks");
    ok(util_json_get(j, "requests.timed_out") != NULL, "and timed_out");
    is_near(util_json_number(j, "classes.agent.slo.e2e_s", 0), 5, 0, "a class's SLO: its own keys");
    is_near(util_json_number(j, "classes.agent.slo.ttft_s", 0), 1, 0,
            "the scenario's for the rest");
    cJSON_Delete(j);
    runner_drop(&r);
    r = sv("report", db, "--by", "user", NULL);
    is_int(r.status, 2, "--by names a grouping that exists");
    has_str(r.err, "--by user", "the one that does not is named");
    runner_drop(&r);
    r = sv("report", db, "--by", "tenant", "--by", "tier", "--json", NULL);
    is_int(r.status, 0, "--by tenant --by tier");
    j = cJSON_Parse(r.out);
    ok(cJSON_IsNull(util_json_get(j, "tenants.(none).tenant")),
       "a run without tenants: one group, of no tenant");
    is_near(util_json_number(j, "tenants.(none).requests.shed_share", -1), 0, 0,
            "with its shed share");
    ok(cJSON_IsNull(util_json_get(j, "tenant_fairness.jain_index")),
       "and no fairness over no tenant");
    is_near(util_json_number(j, "tiers.standard.priority", -1), 0, 0,
            "every class standard when it sets no priority");
    cJSON_Delete(j);
    runner_drop(&r);
    r = sv("report", db, "--by", "tier", NULL);
    has_str(r.out, "\ntier \"standard\" (priority 0)\n", "the text heads each tier");
    has_str(r.out, "shed share 0.0%", "with its shed share");
    runner_drop(&r);
    unlink(db);

    char *trace = in_dir("bad.csv"), *scen = in_dir("trace.json");
    FILE *f = fopen(trace, "w");
    fputs("arrival_time_s,input_tokens,output_tokens\n0.1,10,10\n0.2,-4,10\n", f);
    fclose(f);
    char *json = scenario_text("cli-bad-trace.json"); /* replays bad.csv, beside it */
    f = fopen(scen, "w");
    fputs(json, f);
    fclose(f);
    free(json);
    r = sv("run", scen, "-o", db, NULL);
    is_int(r.status, 2, "a malformed trace row (relative to the scenario) is bad input");
    has_str(r.err, "bad.csv:3:", "at FILE:LINE");
    ok(access(db, F_OK) != 0, "and no database is made");
    tap_diag("%s", r.err);
    runner_drop(&r);
    f = fopen(trace, "w");
    fputs("arrival_time_s,input_tokens,output_tokens,priority,deadline_s,tenant\n"
          "0.1,10,10,critical,1,a\n0.2,10,10,,-4,b\n", f);
    fclose(f);
    r = sv("run", scen, "-o", db, NULL);
    is_int(r.status, 2, "a trace row's bad deadline_s is bad input");
    has_str(r.err, "bad.csv:3: field 5 (deadline_s): expected seconds > 0", "at FILE:LINE");
    runner_drop(&r);
    unlink(trace);
    unlink(scen);
    free(trace);
    free(scen);
    free(agents);
    free(db);
}

/* What a stored run can be asked: what-if SLOs, other formats, the
 * definitions table, the SLO curve, iterations. */
static void test_questions(const char *quick)
{
    char *db = in_dir("q.db");
    result r = sv("run", quick, "-o", db, "-q", "--record-iterations", "--set", "stop.requests=300",
                  "--csv", NULL);
    is_int(r.status, 0, "run --csv exits 0");
    is_str(head(r.out, 13), "metric,value\n", "run --csv prints metric,value rows");
    has_str(r.out, "\nenergy.gpu_j_per_output_token,", "with energy");
    has_str(r.out, "\ncost.usd_per_million_output_tokens,", "and cost");
    runner_drop(&r);
    r = sv("report", db, "--slo", "ttft=0.001", "--slo", "ttft_p99=100", NULL);
    is_int(r.status, 0, "report --slo");
    has_str(r.out, "(what-if SLO", "says the thresholds are a what-if");
    has_str(r.out, "slo: ttft <= 0.001 s, tpot <= 0.05 s, e2e <= 30 s: attainment 0.0%",
            "with the new threshold and the scenario's others");
    has_str(r.out, "slo target: ttft p99 <= 100 s: ", "and answers the percentile target");
    has_str(r.out, ", met (margin +", "with its margin");
    runner_drop(&r);
    r = sv("report", db, "--slo", "ttft", NULL);
    is_int(r.status, 2, "a bad --slo is bad usage");
    has_str(r.err, "--slo ttft: expected KEY=TIME", "and says what is expected");
    runner_drop(&r);
    r = sv("report", db, "--definitions", NULL);
    is_int(r.status, 0, "--definitions exits 0");
    has_str(r.out, "vLLM ITL", "--definitions prints every tool's definition, by tool");
    has_str(r.out, "MLPerf", "MLPerf's too");
    runner_drop(&r);
    r = sv("report", db, "--markdown", "--by", "replica", NULL);
    is_int(r.status, 0, "--markdown --by replica");
    has_str(r.out, "## replicas\n", "has a replicas section");
    runner_drop(&r);
    r = sv("slo-curve", db, "--metric", "tpot", "--points", "5", NULL);
    is_int(r.status, 0, "slo-curve exits 0");
    has_str(r.out, "tpot attainment by threshold", "slo-curve prints the curve");
    has_str(r.out, "99% attainment: ", "and the thresholds targets need");
    runner_drop(&r);
    r = sv("slo-curve", db, "--metric", "latency", NULL);
    is_int(r.status, 2, "slo-curve with an unknown metric is bad usage");
    runner_drop(&r);
    unlink(db);
    free(db);
}

/* sweep and plan from the command line: bad input is caught before anything
 * runs; the table and the plan's answer come out. */
static void test_sweep_plan(const char *quick)
{
    char *db = in_dir("sw.db");
    result r = sv("sweep", quick, "--vary", "cluster.gpu=h100-sxm,h300", "-o", db, NULL);
    is_int(r.status, 2, "a bad value in a sweep is bad input");
    has_str(r.err, "point {\"cluster.gpu\":\"h300\"} seed 1: cluster.gpu: unknown GPU 'h300'",
            "a bad value is named with its point");
    ok(access(db, F_OK) != 0, "and nothing is written");
    runner_drop(&r);
    r = sv("sweep", quick, "--vary", "workload.arrival.rate_per_s=5:1:1", NULL);
    is_int(r.status, 2, "a backwards range is bad usage");
    has_str(r.err, "STOP is below START", "and says so");
    runner_drop(&r);
    r = sv("sweep", quick, "--vary", "workload.arrival.rate_per_s=4,8", "--set", "stop.requests=200",
           "-o", db, "-j", "2", "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    is_int(r.status, 0, "sweep --json exits 0");
    is_int(cJSON_GetArraySize(j), 2, "sweep --json: one object per point");
    is_near(util_json_number(cJSON_GetArrayItem(j, 1), "run_id", 0), 2, 0, "numbered runs");
    cJSON_Delete(j);
    runner_drop(&r);
    r = sv("report", db, "--run", "2", "--json", NULL);
    j = cJSON_Parse(r.out);
    is_near(util_json_number(j, "requests.arrived", 0), 200, 0, "each point is a run of the file");
    cJSON_Delete(j);
    runner_drop(&r);
    r = sv("plan", quick, "--target", "ttft_p99<=2", NULL);
    is_int(r.status, 2, "plan without --find is bad usage");
    has_str(r.err, "give --find", "and says what to give");
    runner_drop(&r);
    r = sv("plan", quick, "--target", "ttft_p99=2", "--find", "max-rate", NULL);
    is_int(r.status, 2, "a target needs <=");
    has_str(r.err, "expected METRIC<=TIME", "and says so");
    runner_drop(&r);
    unlink(db);
    free(db);
}

/* The answer's deployment: --emit-vllm-args prints the one vllm serve line
 * and nothing else; --json gains its argv and replicas; plain plan prints it
 * after the answer; an answer vllm serve cannot run is bad input for
 * --emit-vllm-args and a note for plain plan. */
static void test_plan_vllm(const char *quick)
{
#define PLAN "plan", quick, "--set", "stop.requests=200", "--target", "ttft_p99<=2", "--find", \
             "min-replicas", "--rate", "2", "-q"
    result r = sv(PLAN, "--emit-vllm-args", NULL);
    is_int(r.status, 0, "plan --emit-vllm-args exits 0");
    is_str(head(r.out, 11), "vllm serve ", "prints the vllm serve command");
    char *nl = strchr(r.out, '\n');
    ok(nl && nl[1] == '\0', "on one line, with nothing else on stdout");
    has_str(r.out, " --tensor-parallel-size 1 ", "with the answer's flags");
    runner_drop(&r);
    r = sv(PLAN, "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    const cJSON *argv = util_json_get(j, "vllm_serve.argv");
    is_str(cJSON_GetStringValue(cJSON_GetArrayItem(argv, 1)), "serve", "--json: vllm_serve.argv");
    is_near(util_json_number(j, "vllm_serve.replicas", 0), 1, 0, "and its replicas");
    cJSON_Delete(j);
    runner_drop(&r);
    r = sv(PLAN, NULL);
    has_str(r.out, "\n# 1 replica (1 x h100-sxm) of:\nvllm serve ", "plan prints it after the answer");
    runner_drop(&r);
    r = sv(PLAN, "--set", "cluster.engine=sglang", "--emit-vllm-args", NULL);
    is_int(r.status, 2, "--emit-vllm-args of an sglang answer is bad input");
    has_str(r.err, "cluster.engine: 'sglang' is not a vLLM preset", "naming why");
    is_str(r.out, "", "and nothing is printed on stdout");
    runner_drop(&r);
    r = sv(PLAN, "--set", "cluster.engine=sglang", NULL);
    is_int(r.status, 0, "plain plan of it exits 0");
    has_str(r.out, "\n# no vllm serve command: cluster.engine: 'sglang'", "with a note instead");
    runner_drop(&r);
#undef PLAN
}

/* servesim lesson: the list, a lesson with its figure, and a typo. */
static void test_lesson_cli(void)
{
    result r = sv("lesson", NULL);
    is_int(r.status, 0, "servesim lesson exits 0");
    has_str(r.out, "two-clocks", "servesim lesson lists the lessons");
    has_str(r.out, "fan-out", "every one");
    runner_drop(&r);
    char *svg = in_dir("tail.svg");
    r = sv("lesson", "tail", "--quick", "--plot", svg, NULL);
    char *text = runner_read(svg);
    is_int(r.status, 0, "lesson tail --plot exits 0");
    has_str(r.out, "lesson tail:", "lesson tail --plot prints its table and findings");
    has_str(text, "<svg", "and draws its figure");
    has_str(text, "data-series=\"p99\"", "with its series");
    free(text);
    runner_drop(&r);
    unlink(svg);
    free(svg);
    r = sv("lesson", "tails", NULL);
    is_int(r.status, 2, "a misspelt lesson is bad usage");
    has_str(r.err, "did you mean 'tail'", "with a suggestion");
    runner_drop(&r);
    r = sv("lesson", "tail", "--quick", "--set", "lesson.slow_fractions=[0.05]", NULL);
    is_int(r.status, 2, "a knob out of shape is bad input");
    has_str(r.err, "at least two", "and says why");
    runner_drop(&r);
}

/* Everything a child on a pseudo-terminal writes until it exits; its exit
 * status in *status.  The child's stdout and stderr are the terminal. */
static char *on_terminal(char *const *argv, int *status)
{
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    char buf[4096];
    ssize_t n;
    while (pid > 0 && (n = read(master, buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)n, f);
    fclose(f);
    if (pid > 0) close(master);
    int st = 0;
    if (pid > 0) waitpid(pid, &st, 0);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return text;
}

/* The progress a terminal sees: run's bar (percent of stop.requests,
 * req/s, ETA), then "writing report", cleared before the report; a sweep's
 * bar and its closing summary line.  Off without a terminal (every other
 * test) and with --quiet. */
static void test_progress(const char *quick)
{
    char *db = in_dir("bar.db");
    char *run[] = {(char *)servesim, "run", (char *)quick, "-o", db, "--set",
                   "stop.requests=400000", "--set", "cluster.engine=ideal", NULL};
    int status;
    char *text = on_terminal(run, &status);
    is_int(status, 0, "run on a terminal exits 0");
    has_str(text, "%  ", "draws a bar with its percent done");
    has_str(text, " req/s, ETA ", "requests per second and the time left");
    has_str(text, "writing report", "then the report's phase");
    has_str(text, "\r\033[K", "cleared before the report");
    has_str(text, "latency (s)", "and the report");
    free(text);
    unlink(db);
    char *sweep[] = {(char *)servesim, "sweep", (char *)quick, "--vary",
                     "workload.arrival.rate_per_s=1:4:1", "--set", "stop.requests=2000", "-j", "2",
                     "-o", db, NULL};
    text = on_terminal(sweep, &status);
    is_int(status, 0, "sweep on a terminal exits 0");
    has_str(text, "in flight", "its bar counts points in flight");
    has_str(text, "4 points in ", "and ends with a summary line");
    free(text);
    unlink(db);
    free(db);
}

/* Ctrl-C: the run stops, keeps its rows, is marked interrupted, exits 130,
 * and says how to get the report rather than computing it (that would hold
 * the exit up on a long run; tests/test_faults.c times it). */
static void test_interrupt(const char *quick)
{
    char *db = in_dir("long.db"), *out = in_dir("o"), *err = in_dir("e");
    char *args[] = {(char *)servesim, "run", (char *)quick, "-o", db, "--set",
                    "stop.requests=100000000", "--set", "warmup_s=0", "--json", NULL};
    pid_t pid = runner_spawn(servesim, args, out, err);
    struct timespec ts = {0, 700 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kill(pid, SIGINT);
    result r = runner_finish(pid, out, err);
    is_int(r.status, 130, "Ctrl-C exits 130");
    has_str(r.err, "interrupted", "says the run was interrupted");
    has_str(r.err, "servesim report", "and how to get its report");
    runner_drop(&r);
    r = sv("report", db, "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    is_str(j ? cJSON_GetStringValue(util_json_get(j, "run.status")) : NULL, "interrupted",
           "the run is committed to the database, marked interrupted");
    cmp_ok(util_json_number(j, "requests.completed", 0), >, 0, "what was recorded is kept");
    cJSON_Delete(j);
    runner_drop(&r);
    unlink(db);
    free(db);
    free(out);
    free(err);
}

/* Names people read: the Markdown report heads P99.9 "p99.9" as the text
 * report does, while the JSON key and the CSV metric stay p999 (contracts);
 * and lesson --plot refuses a figure name that is neither .svg nor .png, as
 * plot -o does, writing nothing. */
static void test_names_read(const char *quick)
{
    char *db = in_dir("names.db");
    unlink(db);
    result r = sv("run", quick, "-o", db, "-q", "--set", "stop.requests=300", NULL);
    is_int(r.status, 0, "a run to report");
    runner_drop(&r);
    r = sv("report", db, "--markdown", NULL);
    is_int(r.status, 0, "report --markdown exits 0");
    has_str(r.out, "| metric | mean | p50 | p90 | p95 | p99 | p99.9 | max |",
            "--markdown: the latency table heads P99.9 p99.9");
    ok(!strstr(r.out, "| p999 |"), "--markdown: no column headed p999");
    runner_drop(&r);
    r = sv("report", db, "--csv", NULL);
    has_str(r.out, "\nttft_s.p999,", "--csv: the metric is still ttft_s.p999");
    runner_drop(&r);
    r = sv("report", db, "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    ok(j && util_json_get(j, "ttft_s.p999"), "--json: the key is still ttft_s.p999");
    cJSON_Delete(j);
    runner_drop(&r);
    unlink(db);
    free(db);
    static const char *const refused[] = {"tail.jpg", "tail"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char *path = in_dir(refused[i]);
        unlink(path);
        r = sv("lesson", "tail", "--quick", "--plot", path, NULL);
        is_int(r.status, 2, "lesson --plot %s: bad usage", refused[i]);
        char *want = util_xasprintf("cannot write a figure to %s: name it FILE.svg or FILE.png "
                                    "(or - for SVG on stdout)", path);
        has_str(r.err, want, "lesson --plot %s: names the file and the names taken", refused[i]);
        ok(access(path, F_OK) != 0, "lesson --plot %s: nothing written", refused[i]);
        free(want);
        runner_drop(&r);
        free(path);
    }
}

/* --unset removes a key before any --set applies, so an arrival object can
 * be replaced whole (a closed loop has no rate_per_s); a path that is not
 * there is bad input naming it, in run and in sweep alike. */
static void test_unset(const char *quick)
{
    char *db = in_dir("unset.db");
    unlink(db);
    result r = sv("run", quick, "-o", db, "-q", "--set", "workload.arrival.process=closed",
                  "--set", "workload.arrival.users=2", "--set", "stop.requests=20", NULL);
    is_int(r.status, 2, "closed loop over a poisson arrival: bad input");
    has_str(r.err, "workload.arrival.rate_per_s: unknown key", "the old rate is left over");
    runner_drop(&r);
    r = sv("run", quick, "-o", db, "-q", "--set", "workload.arrival.process=closed", "--set",
           "workload.arrival.users=2", "--set", "stop.requests=20", "--unset", "workload.arrival",
           NULL);
    is_int(r.status, 0, "--unset workload.arrival (given after the --set) goes first: runs");
    runner_drop(&r);
    r = sv("run", quick, "-o", db, "-q", "--unset", "no.such.key", NULL);
    is_int(r.status, 2, "--unset of a missing key is bad input");
    has_str(r.err, "--unset no.such.key: no key 'no' in the scenario", "names it");
    runner_drop(&r);
    r = sv("run", quick, "-o", db, "-q", "--unset", "workload.arival", NULL);
    has_str(r.err, "--unset workload.arival: no key 'arival' in workload (did you mean 'arrival'?)",
            "with a did-you-mean from the keys beside it");
    runner_drop(&r);
    unlink(db);
    r = sv("sweep", quick, "-o", db, "-q", "-j", "2", "--unset", "workload.arrival", "--set",
           "workload.arrival.process=closed", "--set", "stop.requests=20", "--vary",
           "workload.arrival.users=1,2", "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    is_int(r.status, 0, "sweep takes --unset");
    is_int(cJSON_GetArraySize(j), 2, "sweep --unset: both points ran");
    cJSON_Delete(j);
    runner_drop(&r);
    unlink(db);
    r = sv("sweep", quick, "-o", db, "-q", "--unset", "no.such.key", "--vary",
           "workload.arrival.rate_per_s=1,2", NULL);
    is_int(r.status, 2, "sweep --unset of a missing key is bad input");
    has_str(r.err, "--unset no.such.key: no key 'no'", "named there too");
    ok(access(db, F_OK) != 0, "and nothing is written");
    runner_drop(&r);
    unlink(db);
    free(db);
}

int main(int argc, char **argv)
{
    if (argc < 3 || !mkdtemp(dir)) return 1;
    servesim = argv[1];
    root = argv[2];
    char *quick = util_xasprintf("%s/examples/quickstart.json", root);
    test_basics();
    test_run_and_report(quick);
    test_run_report_same(quick);
    test_bad_input(quick);
    test_catalog_keys();
    test_catalog_model();
    test_classes();
    test_questions(quick);
    test_sweep_plan(quick);
    test_plan_vllm(quick);
    test_lesson_cli();
    test_interrupt(quick);
    test_progress(quick);
    test_names_read(quick);
    test_unset(quick);
    const char *junk[] = {"a.db", "notes.txt", "broken.json", "stdout", "stderr", NULL};
    for (const char **p = junk; *p; p++) {
        char *f = in_dir(*p);
        unlink(f);
        free(f);
    }
    rmdir(dir);
    free(quick);
    return tap_done();
}
