/*
 * test_text.c: the text servesim prints for people -- reports that fit 100
 * columns whatever their values (example runs of every shape: classes,
 * agents, several replicas, pools, a long name), tables whose columns stay
 * aligned as values widen (the report's latency cells, the sweep's and the
 * plan's tables), a plan that names each failing target with its figures
 * and prints one line per `cheapest` candidate, `report --definitions` that
 * names the tools, and the saturation measure (batch_fill) that the busy
 * fraction is not.  argv[1] is the servesim binary, argv[2] the source root.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pl.h"
#include "runner.h"
#include "tap.h"

static const char *servesim, *root;
static char dir[] = "/tmp/servesim-text-XXXXXX";

#define sv(...) runner_run(servesim, dir, __VA_ARGS__)

static char *in_dir(const char *name)
{
    return util_xasprintf("%s/%s", dir, name);
}

/* The widest line of text, in bytes (the text is ASCII but for names). */
static int widest(const char *text, int *line_no)
{
    int w = 0, n = 0, at = 0;
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        int len = nl ? (int)(nl - s) : (int)strlen(s);
        n++;
        if (len > w) w = len, at = n;
        s += len + (nl != NULL);
    }
    if (line_no) *line_no = at;
    return w;
}

/* Line k (1-based) of text, for a failure's diagnostic. */
static void diag_line(const char *text, int k)
{
    for (int n = 1; text && *text; n++) {
        const char *nl = strchr(text, '\n');
        int len = nl ? (int)(nl - text) : (int)strlen(text);
        if (n == k) tap_diag("line %d: %.*s", k, len, text);
        text += len + (nl != NULL);
    }
}

static void fits(const char *text, const char *what)
{
    int at, w = widest(text, &at);
    ok(w <= 100 && w > 0, "%s: every line fits 100 columns (widest %d)", what, w);
    if (w > 100) diag_line(text, at);
}

/* What print(arg, stream) writes, as a string (caller frees). */
static char *capture(void (*print)(const void *, FILE *), const void *arg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    print(arg, m);
    fclose(m);
    return text;
}

/* ---- reports of example runs ---- */

/* Runs a scenario (short) into dir/NAME.db; the database's path (caller
 * frees) or NULL. */
static char *run_example(const char *scenario, const char *name, const char *const *sets)
{
    char *db = util_xasprintf("%s/%s.db", dir, name);
    const char *a[16] = {"run", scenario, "-o", db, "--quiet", "--set", "stop.requests=300"};
    int n = 7;
    for (; sets && *sets && n < 14; sets++) {
        a[n++] = "--set";
        a[n++] = *sets;
    }
    result r = sv(a[0], a[1], a[2], a[3], a[4], a[5], a[6], n > 7 ? a[7] : NULL,
                  n > 8 ? a[8] : NULL, n > 9 ? a[9] : NULL, n > 10 ? a[10] : NULL,
                  n > 11 ? a[11] : NULL, n > 12 ? a[12] : NULL, NULL);
    bool good = ok(r.status == 0, "%s runs", name);
    if (!good) tap_diag("%s", r.err);
    else fits(r.out, name);
    runner_drop(&r);
    if (good) return db;
    free(db);
    return NULL;
}

static void report_fits(const char *db, const char *name)
{
    static const char *const views[][2] = {
        {NULL, NULL},       {"--by", "class"}, {"--by", "replica"},
        {"--by", "tenant"}, {"--by", "tier"},  {"--definitions", NULL}};
    for (int i = 0; i < 6; i++) {
        result r = sv("report", db, views[i][0], views[i][1], NULL);
        char *what = util_xasprintf("report %s %s %s", name, views[i][0] ? views[i][0] : "",
                                    views[i][1] ? views[i][1] : "");
        is_int(r.status, 0, "%s exits 0", what);
        fits(r.out, what);
        free(what);
        runner_drop(&r);
    }
}

/* A scenario whose names are longer than any line: the run's, a class's. */
static char *long_names_scenario(void)
{
    char name[161];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;
    char *text = util_xasprintf(
        "{\"name\": \"%s\", \"seed\": 2, \"stop\": {\"requests\": 200},"
        " \"cluster\": {\"gpu\": \"h100-sxm\", \"model\": \"llama-3.1-8b\", \"replicas\": 3},"
        " \"workload\": {\"arrival\": {\"process\": \"poisson\", \"rate_per_s\": 8},"
        " \"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 300},"
        " \"output_tokens\": {\"dist\": \"fixed\", \"value\": 40},"
        " \"classes\": [{\"name\": \"%s-a class whose name goes on and on\", \"weight\": 1,"
        " \"tenant\": \"%s-a tenant\", \"slo\": {\"ttft_s\": 0.5}},"
        " {\"name\": \"b\", \"weight\": 1}]},"
        " \"slo\": {\"ttft_s\": 1, \"tpot_s\": 0.05, \"e2e_s\": 30}}",
        name, name, name);
    char *path = in_dir("long-names.json");
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    free(text);
    return path;
}

static void test_report_width(void)
{
    static const char *const examples[] = {"quickstart", "agents", "prefix-routing",
                                           "deepseek-v3-ep", "azure-code"};
    for (int i = 0; i < 5; i++) {
        char *scenario = util_xasprintf("%s/examples/%s.json", root, examples[i]);
        char *db = run_example(scenario, examples[i], NULL);
        if (db) report_fits(db, examples[i]);
        free(scenario);
        free(db);
    }
    char *pools = util_xasprintf("%s/tests/scenarios/cluster-static-decode.json", root);
    char *db = run_example(pools, "pools", NULL);
    if (db) report_fits(db, "pools");
    free(db);
    free(pools);
    char *scenario = long_names_scenario();
    db = run_example(scenario, "long-names", NULL);
    if (db) report_fits(db, "long names");
    free(db);
    free(scenario);
    /* an overloaded run: a status reason, huge latencies and counts */
    char *quick = util_xasprintf("%s/examples/quickstart.json", root);
    const char *const sets[] = {"workload.arrival.rate_per_s=100000", NULL};
    db = run_example(quick, "overloaded", sets);
    if (db) report_fits(db, "overloaded");
    free(db);
    free(quick);
}

/* ---- definitions ---- */

static void print_defs(const void *arg, FILE *out)
{
    an_definitions_print(arg, NULL, out);
}

/* The same rows, of a run that speculated: 2.17 tokens a chunk. */
static void print_spec_defs(const void *arg, FILE *out)
{
    const an_chunks c = {true, 1000, 2170, 2.17};
    an_definitions_print(arg, &c, out);
}

/* Every line of a stats table ends each cell at the same column: the
 * header's "max" and a row's last digit. */
static void test_definitions(void)
{
    char *db = in_dir("quickstart.db");
    result r = sv("report", db, "--definitions", NULL);
    has_str(r.out, "GenAI-Perf", "--definitions names GenAI-Perf");
    static const char *const tools[] = {"vLLM TPOT",     "MLPerf TPOT", "GuideLLM ITL",
                                        "LLMPerf ITL",   "GuideLLM TPOT", "vLLM ITL",
                                        "inference-perf ITL", "GenAI-Perf chunk ITL",
                                        "vLLM TTFT",     "MLPerf TTFT", "engine TTFT",
                                        "engine E2E"};
    for (int i = 0; i < AN_N_DEFINITIONS; i++) has_str(r.out, tools[i], "a row is named %s", tools[i]);
    static const char *const ids[] = {"tpot_mlperf", "itl_guidellm", "tpot_guidellm",
                                      "itl_pooled", "tpot_incl_ttft", "ttft_mlperf"};
    bool none = true;
    for (int i = 0; i < 6; i++)
        if (r.out && strstr(r.out, ids[i])) none = false, tap_diag("text shows id %s", ids[i]);
    ok(none, "the text shows no internal id");
    runner_drop(&r);
    r = sv("report", db, "--definitions", "--json", NULL);
    has_str(r.out, "\"tpot_mlperf\"", "--json keeps the ids (the contract)");
    runner_drop(&r);
    free(db);

    /* values far wider than four decimals keep their columns */
    an_definition defs[AN_N_DEFINITIONS];
    static const char *const names[] = {"tpot",          "tpot_mlperf", "itl_guidellm",
                                        "tpot_incl_ttft", "tpot_guidellm", "itl_pooled",
                                        "itl_per_token", "itl_chunked",
                                        "ttft",          "ttft_mlperf", "ttft_engine",
                                        "e2e_engine"};
    const double v[] = {0.0123, 123456.78, 9876543.21, 1e12, 0.5,  NAN,
                        0,      1e-9,      42,         3e-7, 0.25, 7e6};
    for (int i = 0; i < AN_N_DEFINITIONS; i++) {
        double x = v[i];
        defs[i] = (an_definition){names[i], "f", "some tool", "linear",
                                  {1, x, x, x, x, x, x, x}};
    }
    char *text = capture(print_defs, defs);
    fits(text, "definitions with wide values");
    /* the header's "max" ends where every row's last cell ends; rows are
     * the lines of two spaces and a name, up to the table's blank line */
    const char *head = strstr(text, "max\n"), *hs = head;
    while (hs && hs > text && hs[-1] != '\n') hs--;
    int edge = head ? (int)(head - hs) + 3 : -1, aligned = 0, rows = 0;
    for (const char *s = head ? head + 4 : ""; *s && *s != '\n';) {
        const char *nl = strchr(s, '\n');
        int len = nl ? (int)(nl - s) : (int)strlen(s);
        if (len > 2 && s[2] != ' ') {
            rows++;
            aligned += len == edge;
        }
        s += len + (nl != NULL);
    }
    is_int(rows, AN_N_DEFINITIONS, "one row per definition");
    is_int(aligned, rows, "every row's last cell ends under the header's max");
    ok(text && !strstr(text, "speculative"), "a run that did not speculate: no line on chunks");
    free(text);
    text = capture(print_spec_defs, defs);
    has_str(text, "2.170 tokens a chunk)",
            "a speculative run: a line on how each tool counts a chunk, with its tokens a chunk");
    fits(text, "definitions of a speculative run");
    free(text);
}

/* ---- the sweep's table ---- */

typedef struct sweep_case {
    pl_sweep_opts o;
    pl_sweep_result r;
} sweep_case;

static void print_sweep(const void *arg, FILE *out)
{
    const sweep_case *c = arg;
    pl_sweep_print(&c->o, &c->r, out);
}

/* The start and end offsets of each blank-separated word of a line, up
 * to max. */
static int words(const char *s, int len, int *starts, int *ends, int max)
{
    int n = 0;
    for (int i = 0; i < len && n < max; i++) {
        if (s[i] != ' ' && (i == 0 || s[i - 1] == ' ')) starts[n] = i;
        if (s[i] != ' ' && (i + 1 == len || s[i + 1] == ' ')) ends[n++] = i + 1;
    }
    return n;
}

static void test_sweep_table(void)
{
    pl_axis axes[2];
    util_diag d;
    util_diag_init(&d);
    ok(!pl_axis_parse("workload.arrival.rate_per_s=0.5,8,100000", &axes[0], &d),
       "the rate axis parses");
    ok(!pl_axis_parse("cluster.model=llama-3.1-8b,a-model-id-far-longer-than-fourteen", &axes[1],
                      &d),
       "the model axis parses");
    sweep_case c = {.o = {.base = {.sweep = "wide"}, .axes = axes, .n_axes = 2, .seeds = 1,
                          .output = "x.db"}};
    pl_sweep_row rows[6];
    for (int i = 0; i < 6; i++) {
        cJSON *ov = cJSON_CreateObject();
        cJSON_AddItemToObject(ov, axes[0].path,
                              cJSON_Duplicate(cJSON_GetArrayItem(axes[0].values, i % 3), 1));
        cJSON_AddItemToObject(ov, axes[1].path,
                              cJSON_Duplicate(cJSON_GetArrayItem(axes[1].values, i / 3), 1));
        double k = pow(10, i); /* every figure a decade wider than the last */
        rows[i] = (pl_sweep_row){{ov, 1, 1000 * i + 1},
                                 {.run_id = 1000 * i + 1, .overloaded = i == 5, .ttft_p50 = 0.01 * k,
                                  .ttft_p99 = 0.1 * k, .tpot_p50 = 0.001 * k, .tpot_p99 = 0.01 * k,
                                  .requests_per_s = k, .output_tokens_per_s = 100 * k,
                                  .goodput_requests_per_s = i == 2 ? NAN : k, .attainment = 0.5,
                                  .batch_fill = 0.01 * i, .kv_mean_fraction = 0.2,
                                  .usd_per_million_output_tokens = k,
                                  .j_per_output_token = 0.1 * k}};
    }
    c.r = (pl_sweep_result){.rows = rows, .n_rows = 6, .ran = 6};
    char *text = capture(print_sweep, &c);
    has_str(text, "100000", "a wide rate is printed whole");
    has_str(text, "a-model-id-far-longer-than-fourteen", "and a long value");
    /* rows: the lines after the header that start with two spaces; every
     * row's cells end at the same columns, the header's headings too */
    int ref[32], n_ref = -1, same = 0, n_rows = 0;
    const char *header = NULL;
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        int len = nl ? (int)(nl - s) : (int)strlen(s);
        if (!header && strstr(s, "ttft p50") && strstr(s, "ttft p50") < s + len) header = s;
        else if (header && len == 0) break; /* the table ends */
        else if (header) {
            int b[32], e[32], n = words(s, len, b, e, 32);
            /* numbers end at their column's right edge; the model names
             * (word 1) and the status (the last) start at their left one.
             * A row of fewer than two words has neither: it is not a row
             * of this table, and counts as one whose cells do not line up. */
            if (n >= 2) {
                e[1] = b[1];
                e[n - 1] = b[n - 1];
                if (n_ref < 0) memcpy(ref, e, (size_t)n * sizeof *e), n_ref = n;
                same += n == n_ref && !memcmp(e, ref, (size_t)n * sizeof *e);
            }
            n_rows++;
        }
        s += len + (nl != NULL);
    }
    is_int(n_rows, 6, "one row per point");
    is_int(same, n_rows, "every row's cells end at the same columns");
    ok(header && n_ref > 3 && !strncmp(header + ref[n_ref - 2] - 5, "J/tok", 5),
       "the header's last number heading ends where its column does");
    ok(header && n_ref > 2 && !strncmp(header + ref[2] - 3, "run", 3),
       "the run heading ends over the run ids");
    free(text);
    for (int i = 0; i < 6; i++) cJSON_Delete(rows[i].point.overrides);
    pl_axis_fini(&axes[0]);
    pl_axis_fini(&axes[1]);
    util_diag_fini(&d);
}

/* ---- the plan's text ---- */

typedef struct plan_case {
    pl_plan_opts o;
    pl_plan_result r;
} plan_case;

static void print_plan(const void *arg, FILE *out)
{
    const plan_case *c = arg;
    pl_plan_print(&c->o, &c->r, out);
}

static cJSON *config(const char *gpu, double replicas)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cluster.gpu", gpu);
    if (replicas > 0) cJSON_AddNumberToObject(o, "cluster.replicas", replicas);
    return o;
}

/* The line of text that contains needle, or NULL (caller frees). */
static char *line_with(const char *text, const char *needle)
{
    const char *at = text ? strstr(text, needle) : NULL;
    if (!at) return NULL;
    const char *b = at, *e = strchr(at, '\n');
    while (b > text && b[-1] != '\n') b--;
    return util_xasprintf("%.*s", (int)((e ? e : at + strlen(at)) - b), b);
}

static void test_plan_text(void)
{
    util_diag d;
    util_diag_init(&d);
    pl_target t[2];
    ok(!pl_target_parse("ttft_p99<=0.5", &t[0], &d), "the TTFT target parses");
    ok(!pl_target_parse("tpot<=0.05", &t[1], &d), "the TPOT target parses");
    pl_axis gpus;
    ok(!pl_axis_parse("cluster.gpu=h100-sxm,a100-80gb,l40s", &gpus, &d), "the candidates parse");
    plan_case c = {.o = {.goal = PL_CHEAPEST, .targets = t, .n_targets = 2, .attainment = 0.9,
                         .rate = 20, .candidates = &gpus, .n_candidates = 1, .seeds = 3,
                         .confidence = 0.95, .max_replicas = 4}};
    pl_trial trials[5] = {
        /* h100 1: p99 TTFT too high, per-request met */
        {.overrides = config("h100-sxm", 1), .seeds = 3, .value = {0.81, 0.95},
         .half = {0.02, 0.01}, .target_met = {false, true}, .busy_fraction = 0.99,
         .batch_fill = 0.3, .usd_per_million_output_tokens = 1},
        /* h100 2: met */
        {.overrides = config("h100-sxm", 2), .met = true, .seeds = 3, .value = {0.3, 0.97},
         .half = {0.01, 0.01}, .target_met = {true, true}, .busy_fraction = 0.98,
         .batch_fill = 0.15, .usd_per_million_output_tokens = 2},
        /* a100 4: an interval that straddles, and attainment short */
        {.overrides = config("a100-80gb", 4), .seeds = 24, .value = {0.49, 0.85},
         .half = {0.03, 0.01}, .target_met = {false, false}, .busy_fraction = 0.97,
         .batch_fill = 0.5, .usd_per_million_output_tokens = 3},
        /* l40s 4: overloaded, requests never completed */
        {.overrides = config("l40s", 4), .overloaded = true, .seeds = 3,
         .value = {INFINITY, 0.1}, .half = {NAN, 0.01}, .target_met = {false, false},
         .not_completed = 0.42, .busy_fraction = 1, .batch_fill = 0.99,
         .usd_per_million_output_tokens = 4},
        {.overrides = config("l40s", 2), .seeds = 3, .value = {0.6, 0.91}, .half = {0.01, 0.005},
         .target_met = {false, true}, .busy_fraction = 1, .batch_fill = 0.9,
         .usd_per_million_output_tokens = 5},
    };
    pl_candidate cands[3] = {{config("h100-sxm", 0), 1, 1}, {config("a100-80gb", 0), -1, 2},
                             {config("l40s", 0), -1, 3}};
    c.r = (pl_plan_result){.found = true, .candidates = cands, .n_candidates = 3, .best = 1,
                           .trials = trials, .n_trials = 5};
    char *text = capture(print_plan, &c);
    char *line = line_with(text, "gpu=h100-sxm replicas=1 ");
    has_str(line, "ttft_p99<=0.5 fails: 0.81 s > 0.5 s", "a trial names its failing target and figures");
    free(line);
    line = line_with(text, "gpu=a100-80gb replicas=4 ");
    has_str(line, "ttft_p99<=0.5 not within its interval: 0.49 +- 0.03 s, not surely <= 0.5 s", "an undecided interval says so");
    has_str(line, "tpot<=0.05 fails: met by 85.0% < 90%", "a per-request target with its share");
    free(line);
    line = line_with(text, "gpu=l40s replicas=4 ");
    has_str(line, "overloaded", "an overloaded trial says so");
    has_str(line, "ttft_p99<=0.5 fails: infinite > 0.5 s", "and its infinitely late target");
    has_str(line, "42.0% of requests not completed", "and the requests it lost");
    free(line);
    line = line_with(text, "gpu=h100-sxm replicas=2 ");
    ok(line && !strstr(line, "fails"), "a met trial names no failing target");
    ok(line && !strstr(line, "interval"), "nor an undecided interval");
    free(line);
    /* the "why" column starts at the same place on every trial row */
    const char *head = strstr(text, "why not met");
    const char *hs = head;
    while (hs && hs > text && hs[-1] != '\n') hs--;
    int col = head ? (int)(head - hs) : -1, starts = 0;
    static const char *const fails[] = {"gpu=h100-sxm replicas=1 ", "gpu=a100-80gb replicas=4 ",
                                        "gpu=l40s replicas=4 ", "gpu=l40s replicas=2 "};
    for (int i = 0; i < 4; i++) {
        line = line_with(text, fails[i]);
        const char *w = line ? strstr(line, "ttft_p99<=0.5 ") : NULL;
        if (line && strstr(line, "overloaded (")) w = strstr(line, "overloaded (");
        starts += w && (int)(w - line) == col;
        free(line);
    }
    is_int(starts, 4, "every trial's reason starts under 'why not met'");
    /* cheapest: one line per candidate, after its heading */
    const char *cand = strstr(text, "candidates at 20 req/s:");
    int lines = 0;
    for (const char *s = cand ? strchr(cand, '\n') : NULL; s && s[1]; s = strchr(s + 1, '\n'))
        lines++;
    is_int(lines, 3, "cheapest prints one line per candidate");
    line = line_with(cand, "gpu=a100-80gb ");
    has_str(line, "not met up to 4 replicas: ttft_p99<=0.5 ", "a candidate that failed says why");
    free(line);
    line = line_with(cand, "gpu=h100-sxm ");
    has_str(line, "met with 2 replicas", "the chosen candidate its replicas");
    ok(line && line[0] == '*', "marked as the answer");
    free(line);
    free(text);
    for (int i = 0; i < 5; i++) cJSON_Delete(trials[i].overrides);
    for (int i = 0; i < 3; i++) cJSON_Delete(cands[i].config);
    pl_axis_fini(&gpus);
    pl_target_fini(&t[0]);
    pl_target_fini(&t[1]);
    util_diag_fini(&d);
}

/* ---- saturation ---- */

static cJSON *report_json(const char *db)
{
    result r = sv("report", db, "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    runner_drop(&r);
    return j;
}

/* batch_fill is the running sequences' time-weighted mean over the
 * simulated time / max_batch: mean_batch (over busy time) x busy / slots;
 * it grows with the load while busy stays near 1. */
static void test_saturation(void)
{
    char *quick = util_xasprintf("%s/examples/quickstart.json", root);
    const char *const light[] = {"workload.arrival.rate_per_s=2", NULL};
    const char *const heavy[] = {"workload.arrival.rate_per_s=40", NULL};
    char *a = run_example(quick, "light", light), *b = run_example(quick, "heavy", heavy);
    cJSON *ja = a ? report_json(a) : NULL, *jb = b ? report_json(b) : NULL;
    double slots = util_json_number(ja, "utilisation.batch_slots", NAN);
    is_int((long long)slots, 256, "batch_slots is the scenario's max_batch");
    double fill = util_json_number(ja, "utilisation.batch_fill", NAN);
    double want = util_json_number(ja, "utilisation.mean_batch", NAN) *
                  util_json_number(ja, "utilisation.busy_fraction", NAN) / 256;
    cmp_ok(fabs(fill / want - 1), <, 1e-9, "batch_fill = mean_batch x busy / max_batch");
    double fill_b = util_json_number(jb, "utilisation.batch_fill", NAN);
    cmp_ok(fill_b, >, 4 * fill, "twenty times the load fills the slots far more");
    cmp_ok(util_json_number(ja, "utilisation.busy_fraction", NAN), >, 0.5,
           "while busy says the light run was busy already");
    const cJSON *rep = cJSON_GetArrayItem(cJSON_GetObjectItem(jb, "replicas"), 0);
    ok(cJSON_IsNumber(cJSON_GetObjectItem(rep, "batch_fill")), "each replica has its batch_fill");
    result r = sv("report", b ? b : "", NULL);
    has_str(r.out, "batch slots", "the text prints how full the slots ran");
    has_str(r.out, "busy is the time an iteration ran", "and says what busy means");
    runner_drop(&r);
    cJSON_Delete(ja);
    cJSON_Delete(jb);

    /* pools: each replica its own pool's max_batch */
    char *pools = in_dir("pools.db");
    cJSON *jp = report_json(pools);
    const cJSON *reps = cJSON_GetObjectItem(jp, "replicas");
    is_int((long long)util_json_number(cJSON_GetArrayItem(reps, 1), "batch_slots", 0), 4,
           "the static decode pool's 4 slots");
    is_int((long long)util_json_number(jp, "utilisation.batch_slots", 0), 260,
           "the cluster's, summed");
    cJSON_Delete(jp);
    free(pools);
    free(a);
    free(b);
    free(quick);
}

/* ---- a disaggregated run's replicas ---- */

/* The decode replica's section, in the report `run` prints from the rows
 * as they came and in `report`'s from the database: the requests it
 * decoded -- handed over, their TPOT, its batch -- TTFT said to be the
 * prefill side's, and the scenario's SLO, never "none set"; the JSON's
 * replica the same. */
static void test_disaggregated(void)
{
    char *pools = util_xasprintf("%s/tests/scenarios/cluster-static-decode.json", root);
    char *db = in_dir("disagg.db");
    const char *slo = "slo={\"ttft_s\": 0.5, \"tpot_s\": 0.1}";
    result runs = sv("run", pools, "-o", db, "--quiet", "--set", "stop.requests=40", "--set", slo,
                     "--by", "replica", NULL);
    result rep = sv("report", db, "--by", "replica", NULL);
    const result *both[] = {&runs, &rep};
    for (int i = 0; i < 2; i++) {
        const char *what = i ? "report --by replica" : "run --by replica";
        const char *out = both[i]->out;
        is_int(both[i]->status, 0, "%s exits 0", what);
        const char *dec = strstr(out, "\nreplica 1 (decode) -- the requests it decoded\n");
        ok(dec != NULL, "%s: the decode replica's section is of the requests it decoded", what);
        if (!dec) {
            tap_diag("%s", out);
            continue;
        }
        ok(!strstr(out, "slo: none set"), "%s: never \"none set\" with an SLO", what);
        has_str(dec, "requests: 40 handed over by the prefill pool, 40 completed, 40 measured",
                "%s: its requests, handed over", what);
        has_str(dec, "  ttft             the prefill side's", "%s: TTFT is the prefill side's", what);
        ok(!strstr(dec, "  ttft                      -"), "%s: not an empty row", what);
        has_str(dec, "\nslo: ttft <= 0.5 s, tpot <= 0.1 s: attainment ",
                "%s: the scenario's SLO, attained", what);
        has_str(dec, "\nbatch: slots ", "%s: its batch occupancy", what);
        fits(out, what);
    }
    runner_drop(&runs);
    runner_drop(&rep);
    result js = sv("report", db, "--by", "replica", "--json", NULL);
    cJSON *j = cJSON_Parse(js.out);
    const cJSON *r1 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "replicas"), 1);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(r1, "role")), "decode",
           "JSON: the decode replica's role");
    is_near(util_json_number(r1, "requests.arrived", 0), 40, 0, "JSON: the requests it decoded");
    is_near(util_json_number(r1, "requests.handed_over", 0), 40, 0, "JSON: handed over");
    ok(util_json_number(r1, "tpot_s.p50", NAN) > 0, "JSON: their TPOT");
    ok(cJSON_IsNull(util_json_get(r1, "ttft_s.p50")), "JSON: no TTFT of its own");
    ok(util_json_number(r1, "slo.attainment", NAN) >= 0, "JSON: its SLO attainment");
    cJSON_Delete(j);
    runner_drop(&js);
    free(db);
    free(pools);
}

/* An SLO with no request to judge (every arrival inside the warm-up): the
 * scenario's thresholds and why there is no attainment, not "none set". */
static void test_slo_unjudged(void)
{
    char *quick = util_xasprintf("%s/examples/quickstart.json", root);
    char *db = in_dir("unjudged.db");
    result r = sv("run", quick, "-o", db, "--quiet", "--set", "stop.requests=20", "--set",
                  "warmup_s=1000", NULL);
    is_int(r.status, 0, "a run wholly inside its warm-up");
    ok(!strstr(r.out, "slo: none set"), "says nothing of \"none set\": the scenario has an SLO");
    has_str(r.out, "slo: ttft <= 0.5 s, tpot <= 0.05 s, e2e <= 30 s: attainment - (no request "
                   "ended after the warm-up)",
            "its thresholds, and why there is no attainment");
    runner_drop(&r);
    free(db);
    free(quick);
}

/* fp8 on an A100 and mxfp4 on an H100 run weight-only under vllm-v1: the
 * report's memory line says so in the catalog's words, one replica's and
 * the cluster's, and its JSON names the form; bf16 says nothing of it. */
static void test_weight_only(void)
{
    static const struct {
        const char *name, *gpu, *model, *quant, *words, *form;
    } runs[] = {{"fp8-a100", "a100-80gb", "llama-3.1-8b", "fp8", "weight-only (W8A16)", "W8A16"},
                {"mxfp4-h100", "h100-sxm", "gpt-oss-20b", "mxfp4", "weight-only (W4A16)", "W4A16"},
                {"bf16-h100", "h100-sxm", "llama-3.1-8b", "none", NULL, NULL}};
    char *quick = util_xasprintf("%s/examples/quickstart.json", root);
    for (int i = 0; i < 3; i++) {
        char *db = util_xasprintf("%s/%s.db", dir, runs[i].name);
        char *gpu = util_xasprintf("cluster.gpu=%s", runs[i].gpu);
        char *model = util_xasprintf("cluster.model=%s", runs[i].model);
        char *quant = util_xasprintf("cluster.quantization=%s", runs[i].quant);
        result r = sv("run", quick, "-o", db, "--quiet", "--set", "stop.requests=20", "--set", gpu,
                      "--set", model, "--set", quant, "--set", "cluster.engine=vllm-v1", NULL);
        is_int(r.status, 0, "%s runs", runs[i].name);
        const char *mem = strstr(r.out, "\n  memory: weights ");
        ok(mem != NULL, "%s: the memory line", runs[i].name);
        if (mem && runs[i].words) {
            char *want = util_xasprintf(" GB, %s, KV ", runs[i].words);
            const char *nl = strchr(mem + 1, '\n');
            const char *at = strstr(mem, want);
            ok(at && nl && at < nl, "%s: says %s", runs[i].name, runs[i].words);
            free(want);
        } else if (mem) {
            ok(!strstr(r.out, "weight-only"), "%s: no weight-only form", runs[i].name);
        }
        runner_drop(&r);
        r = sv("report", db, "--by", "replica", NULL);
        if (runs[i].words)
            has_str(r.out, runs[i].words, "%s: report --by replica, the replica's line too",
                    runs[i].name);
        runner_drop(&r);
        r = sv("report", db, "--json", NULL);
        cJSON *j = cJSON_Parse(r.out);
        const cJSON *form = util_json_get(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "replicas"), 0),
                                          "weight_only");
        if (runs[i].form)
            is_str(cJSON_GetStringValue(form), runs[i].form, "%s: JSON replicas[0].weight_only",
                   runs[i].name);
        else
            ok(form == NULL, "%s: JSON has no weight_only", runs[i].name);
        cJSON_Delete(j);
        runner_drop(&r);
        free(db);
        free(gpu);
        free(model);
        free(quant);
    }
    free(quick);
}

int main(int argc, char **argv)
{
    if (argc < 3 || !mkdtemp(dir)) return 1;
    servesim = argv[1];
    root = argv[2];
    test_report_width();
    test_definitions();
    test_sweep_table();
    test_plan_text();
    test_saturation();
    test_disaggregated();
    test_slo_unjudged();
    test_weight_only();
    char *cmd = util_xasprintf("rm -rf '%s'", dir);
    if (system(cmd) != 0) tap_diag("could not remove %s", dir);
    free(cmd);
    return tap_done();
}
