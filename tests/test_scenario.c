/*
 * test_scenario.c: scenario validation -- each error message a user can get,
 * that several are reported at once, that defaults land in the effective
 * scenario, and that docs/scenario.md documents every key as the schema does.
 * The scenario is tests/scenarios/scenario-good.json; argv[1] is the source
 * root.
 */
#include <stdlib.h>

#include "support.h"
#include "tap.h"

/* tests/scenarios/scenario-good.json, read by main. */
static char *good;

/* Errors of the good scenario with the given overrides. */
static char *errors_with(const char *const *sets)
{
    sim_scenario sc;
    char *errors = NULL;
    support_scenario(good, sets, &sc, &errors);
    sim_scenario_fini(&sc);
    return errors;
}

static void expect(const char *set, const char *message)
{
    const char *sets[] = {set, NULL};
    char *e = errors_with(sets);
    has_str(e, message, "--set %s", set);
    free(e);
}

static void test_messages(void)
{
    expect("workload.arival={}", "workload.arival: unknown key (did you mean 'arrival'?");
    expect("cluster.gpu=h300",
           "cluster.gpu: unknown GPU 'h300' (did you mean 'h200'? known: a100-40gb, a100-80gb");
    expect("cluster.model=llama-4", "cluster.model: unknown model 'llama-4'");
    expect("cluster.replicas=0", "cluster.replicas: 0 is out of range (expected >= 1");
    expect("cluster.replicas=1.5", "cluster.replicas: expected a whole number, got 1.5");
    expect("cluster.scheduler.max_batch=\"lots\"",
           "cluster.scheduler.max_batch: expected a whole number, got a string");
    expect("workload.arrival.process=bursty",
           "workload.arrival.process: unknown process 'bursty' (known: poisson, constant, gamma, "
           "closed, trace)");
    expect("workload.prompt_tokens.dist=zipf", "workload.prompt_tokens.dist: unknown dist 'zipf'");
    expect("cluster.cost_model.kind=lookup", "cluster.cost_model.kind: unknown kind 'lookup'");
    expect("cluster.cost_model.mfu=1.2", "cluster.cost_model.mfu: 1.2 is out of range");
    expect("workload.arrival.rate_per_s=-2", "workload.arrival.rate_per_s: -2 is out of range");
    expect("stop={}", "stop: set requests, duration_s or both");
    expect("cluster.model=llama-3.1-405b",
           "cluster.model: llama-3.1-405b weights (811.8 GB per GPU over 1 GPU) and a 4.7 GB "
           "activation reserve do not fit in h100-sxm memory");
    expect("workload.output_tokens={\"dist\": \"uniform\", \"min\": 9, \"max\": 3}",
           "workload.output_tokens.max: 3 is below min (9)");
    expect("cluster.gpu={\"bf16_tflops\": 100, \"memory_gib\": 40, \"memory_bw_tbs\": 1, "
           "\"tdp_w\": 100, \"idle_w\": 150, \"usd_per_hour\": 1}",
           "cluster.gpu.idle_w: 150 W is above tdp_w (100 W)");

    const char *many[] = {"cluster.gpu=h300", "workload.arrival.rate_per_s=0",
                          "slo.ttft=1", NULL};
    char *e = errors_with(many);
    int lines = 0;
    for (char *p = e; *p; p++) lines += *p == '\n';
    is_int(lines, 3, "three mistakes, three messages");
    has_str(e, "slo.ttft: unknown key (did you mean 'ttft_s',", "a misspelt SLO key");
    free(e);

    sim_scenario sc;
    char *syntax = NULL;
    is_int(support_scenario("{\n  \"stop\": {\"requests\": 10},\n  \"seed\": 1 2\n}", NULL, &sc,
                            &syntax),
           UTIL_EINPUT, "malformed JSON is an input error");
    has_str(syntax, "scenario:3:13: invalid JSON", "with line and column");
    free(syntax);
    sim_scenario_fini(&sc);
}

/* Bounds that keep time within the int64-nanosecond horizon, datasheet
 * figures in their units, and warm-ups that leave something to measure. */
static void test_bounds(void)
{
    expect("stop.duration_s=2e9", "stop.duration_s: 2e+09 is out of range (expected > 0 and "
                                  "<= 1e+09 seconds)");
    expect("warmup_s=1e10", "warmup_s: 1e+10 is out of range");
    expect("slo.ttft_s=500", "slo.ttft_s: 500 is out of range (expected > 0 and <= 300 seconds)");
    expect("slo.tpot_s=50", "slo.tpot_s: 50 is out of range (expected > 0 and <= 10 seconds)");
    expect("cluster.gpu={\"bf16_tflops\": 362, \"memory_gib\": 48, \"memory_bw_tbs\": 864, "
           "\"tdp_w\": 350, \"idle_w\": 53, \"usd_per_hour\": 1.24}",
           "cluster.gpu.memory_bw_tbs: 864 is out of range (expected >= 0.05 and <= 50 TB/s)");
    expect("cluster.gpu={\"bf16_tflops\": 362000, \"memory_gib\": 49152, \"memory_bw_tbs\": 0.8, "
           "\"tdp_w\": 350000, \"idle_w\": 53, \"usd_per_hour\": 124, \"pcie_gbs\": 0}",
           "cluster.gpu.bf16_tflops: 362000 is out of range (expected >= 0.1 and <= 100000 "
           "TFLOP/s)");
    const char *gpu[] = {"cluster.gpu={\"bf16_tflops\": 362000, \"memory_gib\": 49152, "
                         "\"memory_bw_tbs\": 0.8, \"tdp_w\": 350000, \"idle_w\": 53, "
                         "\"usd_per_hour\": 124, \"pcie_gbs\": 0}",
                         NULL};
    char *e = errors_with(gpu);
    has_str(e, "cluster.gpu.memory_gib: 49152 is out of range", "memory in MiB, not GiB");
    has_str(e, "cluster.gpu.tdp_w: 350000 is out of range", "power in mW");
    has_str(e, "cluster.gpu.usd_per_hour: 124 is out of range", "a price in cents");
    has_str(e, "cluster.gpu.pcie_gbs: 0 is out of range", "a host link of 0 GB/s (infinite swaps)");
    free(e);
    expect("cluster.model={\"layers\": 32, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 8, "
           "\"head_dim\": 128, \"ffn\": 14336, \"vocab\": 128256, \"max_context\": 131072, "
           "\"params_b\": 8030000000}",
           "cluster.model.params_b: 8.03e+09 is out of range (expected > 0 and <= 10000 1e9 "
           "params)");

    const char *warm[] = {"stop.duration_s=60", "warmup_s=60", NULL};
    e = errors_with(warm);
    has_str(e, "warmup_s: 60 s is not before stop.duration_s (60 s): arrivals stop at "
               "stop.duration_s and requests arriving before warmup_s are left out of the "
               "report, so nothing would be measured",
            "a warm-up as long as the run is refused, saying why");
    free(e);
    const char *fine[] = {"stop.duration_s=60", "warmup_s=59", NULL};
    e = errors_with(fine);
    is_str(e, "", "a warm-up shorter than stop.duration_s is fine");
    free(e);
}

/* The catalog is checked with the same tables: a figure in the wrong unit
 * in catalog.json is refused too, and every shipped entry is within them. */
static void test_catalog_ranges(void)
{
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *c = NULL;
    is_int(mdl_catalog_load_default(&c, &d), 0, "every shipped GPU and model is within the ranges");
    if (d.count) tap_diag("%s", d.msgs[0]);
    mdl_catalog_destroy(c);
    c = NULL;
    const char *text = "{\"gpus\": [{\"id\": \"l40s\", \"bf16_tflops\": 362.05, "
                       "\"memory_gib\": 48, \"memory_bw_tbs\": 864, \"tdp_w\": 350, \"idle_w\": 53, "
                       "\"usd_per_hour\": 1.24}], \"models\": []}";
    is_int(mdl_catalog_load_json(text, "catalog.json", &c, &d), UTIL_EINPUT,
           "a catalog entry with GB/s as TB/s is refused");
    ok(!c, "and no catalog is made");
    has_str(d.count ? d.msgs[0] : "", "catalog.json: gpus[0].memory_bw_tbs: 864 is out of range "
                                      "(expected >= 0.05 and <= 50 TB/s)",
            "named by its place in the catalog");
    util_diag_fini(&d);
}

static void test_effective(void)
{
    sim_scenario sc;
    const char *sets[] = {"cluster.cost_model.mbu=0.6", NULL};
    is_int(support_scenario(good, sets, &sc, NULL), 0, "a good scenario loads");
    const cJSON *j = sc.json;
    is_near(util_json_number(j, "cluster.scheduler.max_batch", 0), 256, 0,
            "scheduler defaults are in the effective scenario");
    is_near(util_json_number(j, "cluster.scheduler.max_batched_tokens", 0), 8192, 0,
            "the default max_batched_tokens");
    is_near(util_json_number(j, "cluster.scheduler.gpu_memory_utilization", 0), 0.9, 0,
            "the default gpu_memory_utilization");
    is_near(util_json_number(j, "cluster.cost_model.mfu", 0), 0.5, 0,
            "GPU-derived defaults and overrides are both recorded");
    is_near(util_json_number(j, "cluster.cost_model.mbu", 0), 0.6, 0, "the mbu override");
    is_str(util_json_get(j, "workload.arrival.process")->valuestring, "poisson",
           "stated values are kept");
    is_int(sc.stop_requests, 10, "typed values match the JSON");
    is_int(sc.replicas, 1, "typed replicas");
    is_int(sc.pools[0].cost.kind, MDL_COST_ROOFLINE, "typed cost model kind");
    sim_scenario_fini(&sc);

    const char *inline_gpu[] = {"cluster.gpu={\"id\": \"mine\", \"bf16_tflops\": 100, "
                                "\"memory_gib\": 40, \"memory_bw_tbs\": 1, \"tdp_w\": 300, "
                                "\"idle_w\": 50, \"usd_per_hour\": 1}",
                                NULL};
    is_int(support_scenario(good, inline_gpu, &sc, NULL), 0, "an inline GPU object is accepted");
    is_near(sc.pools[0].cost.gpu.flops, 100e12, 1, "and used");
    is_near(sc.pools[0].cost.mbu, 0.75, 0, "with the field defaults for what it leaves out");
    sim_scenario_fini(&sc);
}

/* docs/scenario.md carries the key reference that `servesim keys` prints,
 * between markers; it must be exactly the schema's, so units, defaults and
 * ranges in the docs can never go stale. */
static void test_docs(const char *root)
{
    char *path = util_xasprintf("%s/docs/scenario.md", root), *text = NULL;
    util_diag d;
    util_diag_init(&d);
    is_int(util_read_file(path, &text, NULL, &d), 0, "docs/scenario.md exists");
    char *table = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&table, &len);
    util_schema_doc(sim_scenario_fields, "", mem);
    fclose(mem);
    const char *begin = text ? strstr(text, "<!-- keys:begin -->\n") : NULL;
    const char *end = text ? strstr(text, "<!-- keys:end -->") : NULL;
    bool same = begin && end && (size_t)(end - begin) == len + 20 &&
                !strncmp(begin + 20, table, len);
    ok(same, "docs/scenario.md holds the current key reference (servesim keys)");
    if (!same) tap_diag("regenerate it: docs/update_keys.py");
    free(table);
    free(text);
    free(path);
    util_diag_fini(&d);
}

/* Issue 26, 13: a word that begins known ones suggests those, shortest
 * first, rather than the one fewest edits away. */
static void test_prefix_suggestions(void)
{
    expect("cluster.gpu=h100", "cluster.gpu: unknown GPU 'h100' (did you mean 'h100-sxm' or "
                               "'h100-pcie'? known: a100-40gb, a100-80gb, h100-sxm");
    expect("cluster.gpu=a100", "cluster.gpu: unknown GPU 'a100' (did you mean 'a100-40gb' or "
                               "'a100-80gb'? known: ");
    expect("cluster.gpu=h300", "cluster.gpu: unknown GPU 'h300' (did you mean 'h200'? known: ");
}

/* Issue 26, 15: malformed JSON says what was expected where, not only
 * where cJSON stopped (the end of the input, for a trailing comma). */
static void test_json_reasons(void)
{
    static const struct { const char *text, *message; } cases[] = {
        {"{\"seed\": 1,}", "scenario:1:12: invalid JSON: a trailing comma before '}' (JSON allows "
                           "none)"},
        {"{\"seed\": 1,\n}\n", "scenario:2:1: invalid JSON: a trailing comma at 1:11 before '}'"},
        {"{\"stop\": {\"requests\": [1, 2, ]}}",
         "scenario:1:30: invalid JSON: a trailing comma before ']' (JSON allows none)"},
        {"{\"seed\": }", "scenario:1:10: invalid JSON: expected a value, found '}'"},
        {"{\"name\": \"x}", "scenario:1:10: invalid JSON: unterminated string (no closing '\"')"},
        {"{\"seed\": 1 \"name\": \"x\"}",
         "scenario:1:12: invalid JSON: expected ',' or '}' after a member, found '\"' (a comma "
         "missing?)"},
        {"{\"seed\" 1}",
         "scenario:1:9: invalid JSON: expected ':' after the key \"seed\", found '1'"},
        {"{seed: 1}", "scenario:1:2: invalid JSON: expected a key in double quotes, found 'seed'"},
        {"{\"name\": 'x'}", "scenario:1:10: invalid JSON: expected a value, found \"'\" (JSON "
                            "strings take double quotes)"},
        {"{\"seed\": NaN}", "scenario:1:10: invalid JSON: expected a value, found 'NaN' (JSON's "
                            "words are true, false and null)"},
        {"{\"seed\": 1 // one\n}", "scenario:1:12: invalid JSON: expected ',' or '}' after a "
                                   "member, found '/'"},
        {"{\"stop\": {\"requests\": 10}", "scenario:1:26: invalid JSON: unexpected end of input "
                                          "(the '{' at 1:1 is not closed)"},
        {"{\"a\": [1, 2}", "scenario:1:12: invalid JSON: expected ',' or ']' after an element, "
                           "found '}' (the '[' at 1:7 is not closed)"},
        {"{\"seed\": 1}}", "scenario:1:12: invalid JSON: unexpected '}' after the end of the "
                           "document (one too many?)"},
        {"{\"seed\": 1.2.3}", "scenario:1:10: invalid JSON: malformed number '1.2.3'"},
        {"{\"name\": \"a\\qb\"}", "scenario:1:12: invalid JSON: invalid escape '\\q' in a string"},
        {"  \n", "scenario:2:1: invalid JSON: unexpected end of input (the input is empty)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_scenario sc;
        char *e = NULL;
        is_int(support_scenario(cases[i].text, NULL, &sc, &e), UTIL_EINPUT,
               "malformed JSON %zu is refused", i);
        has_str(e, cases[i].message, "with the reason: %s", cases[i].message);
        free(e);
        sim_scenario_fini(&sc);
    }
}

/* Issue 26, 11: a bare number where a distribution is expected stands for
 * a fixed one; the effective scenario shows the object, and the fixed
 * variant's range check judges the number. */
static void test_scalar_dist(void)
{
    static const char closed[] =
        "{\"stop\": {\"requests\": 6},\n"
        " \"cluster\": {\"engine\": \"ideal\", \"gpu\": \"h100-sxm\", \"model\": "
        "\"llama-3.1-8b\"},\n"
        " \"workload\": {\"arrival\": {\"process\": \"closed\", \"users\": 2, \"think_s\": 2},\n"
        "  \"prompt_tokens\": 512, \"output_tokens\": 7}}";
    sim_scenario sc;
    char *e = NULL;
    is_int(support_scenario(closed, NULL, &sc, &e), 0, "numbers for think_s and lengths load");
    if (e) tap_diag("%s", e);
    free(e);
    const cJSON *think = sc.json ? util_json_get(sc.json, "workload.arrival.think_s") : NULL;
    char *text = think ? cJSON_PrintUnformatted(think) : NULL;
    is_str(text ? text : "", "{\"dist\":\"fixed\",\"value\":2}",
           "\"think_s\": 2 is {\"dist\": \"fixed\", \"value\": 2} in the effective scenario");
    cJSON_free(text);
    sim_scenario_fini(&sc);

    support_rows rows;
    is_int(support_run(closed, NULL, &rows, NULL), 0, "\"prompt_tokens\": 512 runs");
    bool all = rows.n == 6;
    for (size_t i = 0; i < rows.n; i++)
        all &= rows.req[i].prompt_tokens == 512 && rows.req[i].output_tokens == 7;
    ok(all, "every request has 512 prompt and 7 output tokens");
    support_rows_fini(&rows);

    expect("workload.output_tokens=-1",
           "workload.output_tokens.value: -1 is out of range (expected >= 0");
    expect("workload.prompt_tokens=1e309", "workload.prompt_tokens.value: a number out of range");
    expect("workload.arrival={\"process\": \"closed\", \"users\": 1, \"think_s\": \"2\"}",
           "workload.arrival.think_s: expected a number or an object, got a string");
    expect("workload.prompt_tokens=true",
           "workload.prompt_tokens: expected a number or an object, got a boolean");
}

/* The key reference as servesim keys prints it (caller frees). */
static char *keys_text(void)
{
    char *table = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&table, &len);
    util_schema_doc(sim_scenario_fields, "", mem);
    fclose(mem);
    return table;
}

/* Issue 26: vLLM bench serve's max_concurrency and rate "inf", their
 * refused forms, and servesim keys naming the keys that conflict. */
static void test_arrival_cap(void)
{
    expect("workload.arrival.rate_per_s=\"infinity\"",
           "workload.arrival.rate_per_s: expected a number or \"inf\", got 'infinity'");
    expect("workload.arrival.max_concurrency=-1",
           "workload.arrival.max_concurrency: -1 is out of range (expected >= 1");
    expect("workload.arrival={\"process\": \"closed\", \"users\": 4, \"max_concurrency\": 2}",
           "workload.arrival.max_concurrency: unknown key (known: process, users, think_s) under "
           "process 'closed': a key of process poisson, constant, gamma, trace; --unset it when "
           "switching process");
    expect("workload.arrival={\"process\": \"closed\", \"users\": 4, \"rate_per_s\": 2}",
           "workload.arrival.rate_per_s: unknown key (known: process, users, think_s) under "
           "process 'closed': a key of process poisson, constant, gamma, trace");
    const char *forever[] = {"workload.arrival.rate_per_s=\"inf\"", "stop={\"duration_s\": 5}",
                             NULL};
    char *e = errors_with(forever);
    has_str(e, "workload.arrival.rate_per_s: \"inf\" sends every request at time 0, so it needs "
               "stop.requests or max_concurrency",
            "rate \"inf\" with neither a request count nor a cap is refused");
    free(e);
    const char *capped[] = {"workload.arrival.rate_per_s=\"inf\"", "stop={\"duration_s\": 5}",
                            "workload.arrival.max_concurrency=4", NULL};
    e = errors_with(capped);
    ok(!e || !*e, "with max_concurrency it loads");
    if (e) tap_diag("%s", e);
    free(e);

    char *keys = keys_text();
    has_str(keys, "| `workload.arrival.rate_per_s` | a number or \"inf\" | 1/s |  |",
            "keys: rate_per_s takes \"inf\"");
    has_str(keys, "(required unless rate_profile)", "keys: and says when it is required");
    has_str(keys, "(process: closed; refused under poisson, constant, gamma, trace) |",
            "keys: users says under which processes it is refused");
    has_str(keys, "(process: poisson, constant, gamma, trace; refused under closed) |",
            "keys: max_concurrency too");
    has_str(keys, "instead of prompt_tokens; conflicts with workload.prompt_tokens, "
                  "workload.dataset |",
            "keys: shared_prefix names the keys it conflicts with");
    has_str(keys, "every class gives it); conflicts with workload.shared_prefix, "
                  "workload.dataset |",
            "keys: and prompt_tokens names shared_prefix and dataset");
    has_str(keys, "\"Built-in datasets\"); conflicts with workload.prompt_tokens, "
                  "workload.output_tokens, workload.shared_prefix |",
            "keys: and dataset names the three it replaces");
    free(keys);
}

int main(int argc, char **argv)
{
    if (support_init()) return 1;
    good = support_scenario_text("scenario-good.json");
    test_messages();
    test_bounds();
    test_catalog_ranges();
    test_effective();
    test_prefix_suggestions();
    test_json_reasons();
    test_scalar_dist();
    test_arrival_cap();
    if (argc > 1) test_docs(argv[1]);
    free(good);
    support_fini();
    return tap_done();
}
