/*
 * test_input.c: bad input from the command line, as found by fuzzing and by
 * hand.  Each case must exit 2 with a message naming its JSON path or
 * FILE:LINE, create no database and leave an existing one byte for byte as
 * it was -- or, where the input is legal, do what it says.  Every servesim
 * here runs under a time and memory limit, so that a regression (a trace
 * read from /dev/zero for ever) fails the test rather than the machine.
 * argv[1] is the servesim binary, argv[2] the source root (its examples/ and
 * tests/scenarios/).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner.h"
#include "tap.h"
#include "util.h"

/* cmp_ok(a, op, b, "description"): a op b on numbers, printing both sides on
 * failure (tap.h has no such assertion; a candidate for it). */
static const char *servesim, *root;
static char *quick;
static char dir[] = "/tmp/servesim-input-XXXXXX";

static char *in_dir(const char *name)
{
    return util_xasprintf("%s/%s", dir, name);
}

/* Runs servesim with arguments up to a NULL (at most 30), killed after 60 s
 * of CPU time or 2 GiB of address space (not under AddressSanitizer). */
static result sv(const char *a0, ...)
{
    char *args[32] = {(char *)servesim};
    int n = 1;
    va_list ap;
    va_start(ap, a0);
    for (const char *a = a0; a && n < 31; a = va_arg(ap, const char *)) args[n++] = (char *)a;
    va_end(ap);
    args[n] = NULL;
    char *out = in_dir("stdout"), *err = in_dir("stderr");
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit cpu = {60, 60};
        setrlimit(RLIMIT_CPU, &cpu);
#ifndef __SANITIZE_ADDRESS__ /* AddressSanitizer reserves terabytes of address space */
        struct rlimit mem = {2ul << 30, 2ul << 30};
        setrlimit(RLIMIT_AS, &mem);
#endif
        alarm(120);
        dup2(open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), STDOUT_FILENO);
        dup2(open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600), STDERR_FILENO);
        execv(servesim, args);
        _exit(127);
    }
    result r = runner_finish(pid, out, err);
    free(out);
    free(err);
    return r;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* The text of tests/scenarios/NAME in the source root as JSON (caller
 * deletes); a missing or broken file bails out, as every test after it would
 * be meaningless. */
static cJSON *scenario_json(const char *name)
{
    char *path = util_xasprintf("%s/tests/scenarios/%s", root, name), *text = NULL;
    cJSON *json = NULL;
    util_diag d;
    util_diag_init(&d);
    if (util_read_file(path, &text, NULL, &d) || util_json_parse(text, path, &json, &d)) {
        printf("Bail out! %s\n", d.count ? d.msgs[0] : path);
        exit(1);
    }
    util_diag_fini(&d);
    free(text);
    free(path);
    return json;
}

/* Writes json to path. */
static void write_json(const char *path, const cJSON *json)
{
    char *text = cJSON_PrintUnformatted(json);
    write_file(path, text);
    cJSON_free(text);
}

/* n bytes at a and at b are the same (neither NULL). */
static bool same_bytes(const char *a, const char *b, size_t n)
{
    return a && b && !memcmp(a, b, n);
}

/* A whole file with its length (NULL when it cannot be read). */
static char *slurp(const char *path, size_t *len)
{
    util_diag d;
    util_diag_init(&d);
    char *s = NULL;
    *len = 0;
    if (util_read_file(path, &s, len, &d)) s = NULL;
    util_diag_fini(&d);
    return s;
}

static char *db, *fresh;

/* Runs `servesim run SCENARIO -o DB set...` twice -- into a database that
 * does not exist and into one that does -- and checks the promise: exit 2,
 * the message, no new file, the old one untouched. */
static void refused(const char *what, const char *message, const char *scenario,
                    const char *s1, const char *s2, const char *s3)
{
    const char *sets[3] = {s1, s2, s3};
    const char *args[12];
    int n = 0;
    args[n++] = "run";
    args[n++] = scenario;
    args[n++] = "-q";
    for (int i = 0; i < 3; i++)
        if (sets[i]) args[n++] = "--set", args[n++] = sets[i];
    unlink(fresh);
    result r = sv(args[0], args[1], args[2], "-o", fresh, n > 3 ? args[3] : NULL,
                  n > 4 ? args[4] : NULL, n > 5 ? args[5] : NULL, n > 6 ? args[6] : NULL,
                  n > 7 ? args[7] : NULL, n > 8 ? args[8] : NULL, NULL);
    is_int(r.status, 2, "%s: exit status 2", what);
    has_str(r.err, message, "%s: the message names where", what);
    ok(access(fresh, F_OK) != 0, "%s: no database is created", what);
    runner_drop(&r);
    size_t len, before_len;
    char *before = slurp(db, &before_len);
    r = sv(args[0], args[1], args[2], "-o", db, n > 3 ? args[3] : NULL, n > 4 ? args[4] : NULL,
           n > 5 ? args[5] : NULL, n > 6 ? args[6] : NULL, n > 7 ? args[7] : NULL,
           n > 8 ? args[8] : NULL, NULL);
    char *now = slurp(db, &len);
    is_int(r.status, 2, "%s: exit status 2 beside an existing database", what);
    is_int(len, before_len, "%s: an existing database keeps its size", what);
    ok(same_bytes(now, before, len), "%s: an existing database is byte-identical", what);
    free(before);
    free(now);
    runner_drop(&r);
}

static void setup(void)
{
    db = in_dir("kept.db");
    fresh = in_dir("new.db");
    result r = sv("run", quick, "-o", db, "-q", "--set", "stop.requests=50", NULL);
    is_int(r.status, 0, "a good run makes the database the bad ones must not touch");
    runner_drop(&r);
    size_t len;
    char *bytes = slurp(db, &len);
    ok(bytes != NULL, "it can be read");
    cmp_ok(len, >, 0, "it has %zu bytes", len);
    free(bytes);
}

/* tests/scenarios/input-trace.json written to dir/trace.json, replaying
 * name, with a further override `set` (or none). */
static char *trace_scenario(const char *name, const char *set)
{
    char *path = in_dir("trace.json"), *at = util_xasprintf("workload.arrival.path=%s", name);
    cJSON *json = scenario_json("input-trace.json");
    util_diag d;
    util_diag_init(&d);
    if (util_json_set(json, at, &d) || (set && util_json_set(json, set, &d)))
        tap_diag("%s", d.count ? d.msgs[0] : at);
    util_diag_fini(&d);
    write_json(path, json);
    cJSON_Delete(json);
    free(at);
    return path;
}

/* 1: every event time stays within the int64-nanosecond range. */
static void test_horizon(void)
{
    refused("a rate of 1e-10/s", "workload.arrival.rate_per_s: 1e-10 is out of range (expected "
                                 ">= 1e-06 and <= 1e+09 per second)",
            quick, "workload.arrival.rate_per_s=1e-10", NULL, NULL);
    refused("pre_model_s of 1e10 s", "workload.pre_model_s.value: 1e+10 is out of range",
            quick, "workload.pre_model_s={\"dist\": \"fixed\", \"value\": 1e10}", NULL, NULL);
    refused("stop.duration_s of 1e10 s",
            "stop.duration_s: 1e+10 is out of range (expected > 0 and <= 1e+09 seconds)", quick,
            "stop.duration_s=1e10", NULL, NULL);
    char *far = in_dir("far.csv");
    write_file(far, "arrival_time_s,input_tokens,output_tokens\n0,10,10\n1e10,10,10\n");
    char *scen = trace_scenario("far.csv", NULL);
    refused("a trace time of 1e10 s", "far.csv:3: field 1 (arrival_time_s): beyond the "
                                      "simulation's horizon",
            scen, NULL, NULL, NULL);
    char *ok_csv = in_dir("ok.csv");
    write_file(ok_csv, "0,10,10\n1,10,10\n2,10,10\n");
    free(scen);
    scen = trace_scenario("ok.csv", "workload.arrival.time_scale=1e9");
    refused("a time_scale that takes the replay past the horizon",
            "workload.arrival.time_scale: the replay would reach 2e+09 s", scen, NULL, NULL,
            NULL);
    free(scen);
    free(far);
    free(ok_csv);
}

/* 2: --set indexes are strict; the bracket notation of `servesim keys`
 * works. */
static void test_set_index(void)
{
    const char *pools = "cluster.pools=[{\"name\": \"a\"}, {\"name\": \"b\"}]";
    refused("index 2^32 + 1", "--set cluster.pools.4294967297.replicas=3: index 4294967297 is "
                              "past the end of cluster.pools (2 items, 0 to 1)",
            quick, pools, "cluster.pools.4294967297.replicas=3", NULL);
    refused("an index past 2^64", "--set cluster.pools.16666666666666666666=4: index "
                                  "16666666666666666666 is past the end of cluster.pools",
            quick, pools, "cluster.pools.16666666666666666666=4", NULL);
    refused("a bracket without an index", "--set cluster.pools[x].replicas=3: a bracket holds "
                                          "an index",
            quick, pools, "cluster.pools[x].replicas=3", NULL);
    char *out = in_dir("pools.db");
    result r = sv("run", quick, "-q", "-o", out, "--set", pools, "--set",
                  "cluster.pools[1].replicas=3", "--set", "stop.requests=20", "--set", "warmup_s=0",
                  NULL);
    is_int(r.status, 0, "cluster.pools[1].replicas=3 is accepted");
    has_str(r.out, "replica 3 (b, 1 x h100-sxm)", "and gives pool b three replicas (1 to 3)");
    runner_drop(&r);
    unlink(out);
    free(out);
}

/* 3: line files that never end, or are not files. */
static void test_lines(void)
{
    char *scen = trace_scenario("/dev/zero", NULL);
    refused("/dev/zero as a trace", "/dev/zero: not a regular file", scen, NULL, NULL, NULL);
    refused("a folder as a trace", ": is a folder, not a file", scen,
            "workload.arrival.path=/tmp", NULL, NULL);
    char *big = in_dir("big.csv");
    FILE *f = fopen(big, "w");
    fputs("0,1,1\n", f);
    for (int i = 0; i < 5 << 20; i++) fputc('7', f);
    fclose(f);
    refused("a 5 MiB line", "big.csv:2: a line longer than 4 MiB", scen,
            "workload.arrival.path=big.csv", NULL, NULL);
    refused("/dev/zero as an empirical distribution",
            "workload.prompt_tokens.path: /dev/zero: not a regular file", quick,
            "workload.prompt_tokens={\"dist\": \"empirical\", \"path\": \"/dev/zero\", "
            "\"column\": \"input\"}",
            NULL, NULL);
    refused("/dev/zero as a scenario", "/dev/zero: not a regular file", "/dev/zero", NULL, NULL,
            NULL);
    /* a FIFO's open waits for a writer: `servesim run FIFO` hung for ever */
    char *fifo = in_dir("scenario.fifo");
    is_int(mkfifo(fifo, 0600), 0, "a FIFO made");
    refused("a FIFO as a scenario", "scenario.fifo: not a regular file", fifo, NULL, NULL, NULL);
    unlink(fifo);
    free(fifo);
    unlink(big);
    free(big);
    free(scen);
}

/* 4: a lesson's knobs are checked like scenario keys. */
static void test_lesson_knob(void)
{
    result r = sv("lesson", "tail", "--quick", "--set", "lesson.extra=3", NULL);
    is_int(r.status, 2, "a misspelt lesson knob is bad input");
    has_str(r.err, "lesson.extra: unknown knob 'extra' (did you mean 'extra_s'? known: "
                   "slow_fractions, extra_s, requests, quick_requests)",
            "named, with a suggestion and the lesson's knobs");
    runner_drop(&r);
    r = sv("lesson", "chat-vs-summary", "--quick", "--set", "lesson.systems.C.iteration_s=1",
           NULL);
    is_int(r.status, 2, "a misspelt nested knob is bad input");
    has_str(r.err, "lesson.systems.C: unknown knob 'C' (known: A, B)", "nested knobs too");
    runner_drop(&r);
}

/* 5: datasheet figures and SLOs in their units. */
static void test_units(void)
{
    refused("memory bandwidth in GB/s as TB/s",
            "cluster.gpu.memory_bw_tbs: 864 is out of range (expected >= 0.05 and <= 50 TB/s)",
            quick,
            "cluster.gpu={\"bf16_tflops\": 362, \"memory_gib\": 48, \"memory_bw_tbs\": 864, "
            "\"tdp_w\": 350, \"idle_w\": 53, \"usd_per_hour\": 1.24}",
            NULL, NULL);
    refused("a TTFT target in milliseconds",
            "slo.ttft_s: 500 is out of range (expected > 0 and <= 300 seconds)", quick,
            "slo.ttft_s=500", NULL, NULL);
}

/* 6: echoed input is cut short. */
static void test_long_echo(void)
{
    /* tests/scenarios/input-long-key.json with a 10 MB key "kkk...": 1 */
    char *scen = in_dir("longkey.json"), *key = util_xmalloc((10 << 20) + 1);
    memset(key, 'k', 10 << 20);
    key[10 << 20] = '\0';
    cJSON *json = scenario_json("input-long-key.json");
    cJSON_AddNumberToObject(json, key, 1);
    write_json(scen, json);
    cJSON_Delete(json);
    free(key);
    unlink(fresh);
    result r = sv("run", scen, "-o", fresh, NULL);
    is_int(r.status, 2, "a 10 MB unknown key is bad input");
    has_str(r.err, "kkkkkkkkkk...: unknown key", "it is echoed as 60 characters and '...'");
    cmp_ok(strlen(r.err), <, 1000,
           "a 10 MB unknown key is echoed as 60 characters and '...' (%zu bytes of messages)",
           strlen(r.err));
    ok(access(fresh, F_OK) != 0, "and nothing is written");
    runner_drop(&r);
    char *set = util_xmalloc(100001);
    memset(set, 'p', 100000);
    set[100000] = '\0';
    r = sv("run", quick, "-o", fresh, "--set", set, NULL);
    is_int(r.status, 2, "a 100 kB --set is bad usage");
    has_str(r.err, "pppppppppp...: expected PATH=VALUE", "echoed cut short");
    cmp_ok(strlen(r.err), <, 500, "a 100 kB --set is cut short too");
    runner_drop(&r);
    unlink(scen);
    free(set);
    free(scen);
}

/* 7: numbers past the range of a double. */
static void test_infinite(void)
{
    refused("1e309", "workload.arrival.rate_per_s: a number out of range (beyond 1.8e308", quick,
            "workload.arrival.rate_per_s=1e309", NULL, NULL);
    refused("-1e309", "cluster.replicas: a number out of range (beyond -1.8e308", quick,
            "cluster.replicas=-1e309", NULL, NULL);
    refused("1e400 in a distribution", "workload.output_tokens.max: a number out of range",
            quick, "workload.output_tokens.max=1e400", NULL, NULL);
}

/* 9: a warm-up that leaves nothing to measure. */
static void test_warmup(void)
{
    refused("warmup_s = stop.duration_s", "warmup_s: 60 s is not before stop.duration_s (60 s)",
            quick, "stop.duration_s=60", "warmup_s=60", NULL);
    char *ok_csv = in_dir("ok.csv");
    write_file(ok_csv, "0,10,10\n1,10,10\n2,10,10\n");
    char *scen = trace_scenario("ok.csv", "workload.arrival.time_scale=10");
    refused("warmup_s past the trace's last arrival",
            "warmup_s: 25 s is not before the trace's last replayed arrival (at 20 s)", scen,
            "warmup_s=25", NULL, NULL);
    char *out = in_dir("warm.db");
    result r = sv("run", scen, "-q", "-o", out, "--set", "warmup_s=15", NULL);
    is_int(r.status, 0, "a warm-up before the last arrival runs");
    runner_drop(&r);
    unlink(out);
    free(out);
    unlink(ok_csv);
    free(ok_csv);
    free(scen);
}

/* 9: a trace gives a task's first call; an agent's other calls need lengths
 * of their own (they were drawn from empty distributions: 0-token calls
 * that were never scheduled, and a run that ended "completed" without
 * their rows). */
static void test_agent_over_trace(void)
{
    char *csv = in_dir("ok.csv");
    write_file(csv, "0,10,10\n1,10,10\n2,10,10\n");
    char *scen = trace_scenario("ok.csv", "workload.agent={\"mode\": \"parallel\", \"calls\": 3}");
    refused("a fan-out over a trace without lengths",
            "workload.prompt_tokens: missing (expected an object): the trace gives a task's first "
            "call only",
            scen, NULL, NULL, NULL);
    refused("a chain over a trace without output lengths",
            "workload.output_tokens: missing (expected an object)", scen,
            "workload.agent={\"mode\": \"sequential\", \"calls\": 2}", NULL, NULL);
    char *out = in_dir("agents.db");
    result r = sv("run", scen, "-q", "-o", out, "--set",
                  "workload.prompt_tokens={\"dist\": \"fixed\", \"value\": 5}", "--set",
                  "workload.output_tokens={\"dist\": \"fixed\", \"value\": 5}", NULL);
    is_int(r.status, 0, "with lengths for the other calls it runs");
    runner_drop(&r);
    r = sv("report", out, NULL);
    has_str(r.out, "requests: 9 arrived, 9 completed", "and every call of the three tasks completes");
    runner_drop(&r);
    unlink(out);
    free(out);
    unlink(csv);
    free(csv);
    free(scen);
}

/* Issue 26, 13: a word that begins known ones suggests them, in --set and
 * in report's --slo keys alike. */
static void test_suggestions(void)
{
    refused("a GPU's family name",
            "servesim: cluster.gpu: unknown GPU 'h100' (did you mean 'h100-sxm' or 'h100-pcie'? "
            "known: a100-40gb, a100-80gb, h100-sxm, h100-pcie, h200,",
            quick, "cluster.gpu=h100", NULL, NULL);
    static const struct { const char *slo, *message; } slos[] = {
        {"tft=0.5", "--slo tft=0.5: unknown key 'tft' (did you mean 'ttft'? expected "
                    "[CLASS.]METRIC[_pNN] with METRIC one of ttft, tpot, tpot_incl_ttft, e2e, or "
                    "[CLASS.]task_e2e)"},
        {"task_e2=30s", "--slo task_e2=30s: unknown key 'task_e2' (did you mean 'task_e2e'?"},
        {"tft_p99=2", "--slo tft_p99=2: unknown key 'tft_p99' (did you mean 'ttft_p99'?"},
        {"chat.tpt=50ms", "--slo chat.tpt=50ms: unknown key 'chat.tpt' (did you mean "
                          "'chat.tpot'?"},
        {"xyz=1", "--slo xyz=1: unknown key 'xyz' (expected [CLASS.]METRIC[_pNN]"},
    };
    for (size_t i = 0; i < sizeof slos / sizeof slos[0]; i++) {
        result r = sv("report", db, "--slo", slos[i].slo, NULL);
        is_int(r.status, 2, "--slo %s is bad usage", slos[i].slo);
        has_str(r.err, slos[i].message, "with the keys it may have meant");
        runner_drop(&r);
    }
}

/* Issue 26, 15: malformed JSON says what was expected at FILE:LINE:COL. */
static void test_json_reason(void)
{
    char *scen = in_dir("comma.json");
    write_file(scen, "{\"stop\": {\"requests\": 10},\n \"seed\": 1,\n}\n");
    char *where = util_xasprintf("%s:3:1: invalid JSON: a trailing comma at 2:11 before '}' "
                                 "(JSON allows none)",
                                 scen);
    refused("a trailing comma", where, scen, NULL, NULL, NULL);
    free(where);
    write_file(scen, "{\"stop\": {\"requests\": 10}\n \"seed\": 1}\n");
    where = util_xasprintf("%s:2:2: invalid JSON: expected ',' or '}' after a member, found '\"' "
                           "(a comma missing?)",
                           scen);
    refused("a missing comma", where, scen, NULL, NULL, NULL);
    free(where);
    unlink(scen);
    free(scen);
}

/* Speculative decoding's draft model: each refusal names
 * cluster.speculative.draft_model. */
static void test_draft_model(void)
{
    const char *spec = "cluster.speculative={\"method\": \"draft\", "
                       "\"num_speculative_tokens\": 4, \"acceptance_rate\": 0.6, "
                       "\"draft_model\": %s}";
    char *other = util_xasprintf("{\"hf_config\": \"%s/tests/hf_configs/mistral-nemo-12b\"}",
                                 root);
    char *vocab = util_xasprintf(spec, other), *big = util_xasprintf(spec, "\"llama-3.1-70b\"");
    refused("a draft model of another vocabulary",
            "cluster.speculative.draft_model: mistral-nemo-12b's vocabulary (131072 tokens) is "
            "not the target llama-3.1-8b's (128256)", quick, vocab, NULL, NULL);
    refused("a draft model that leaves no room for the KV cache",
            "cluster.speculative.draft_model: llama-3.1-70b (141.2 GB of weights", quick, big,
            NULL, NULL);
    refused("method draft without draft_model", "cluster.speculative.draft_model: missing", quick,
            "cluster.speculative={\"method\": \"draft\", \"num_speculative_tokens\": 4, "
            "\"acceptance_rate\": 0.6}", NULL, NULL);
    refused("draft_model with method eagle",
            "cluster.speculative.draft_model: applies only to method draft", quick,
            "cluster.speculative={\"method\": \"eagle\", \"num_speculative_tokens\": 4, "
            "\"acceptance_rate\": 0.6, \"draft_model\": \"llama-3.2-1b\"}", NULL, NULL);
    free(other);
    free(vocab);
    free(big);
}

/* Issue 31, 16: a NUL in a string (\u0000) was read as the string's end,
 * so "a\u0000b" became "a" without a word; it is refused, named by its path,
 * in the scenario file and in --set.  A NUL byte in the file is refused too
 * (cJSON took the text before it as the whole document). */
static void test_nul(void)
{
    refused("a NUL in a --set string",
            "--set name=\"a\\u0000b\": name: a string holds a NUL character (\\u0000)", quick,
            "name=\"a\\u0000b\"", NULL, NULL);
    refused("a NUL in a string of a --set object",
            "workload.classes[0].name: a string holds a NUL character", quick,
            "workload.classes=[{\"name\": \"x\\u0000y\", \"weight\": 1}]", NULL, NULL);
    char *scen = in_dir("nul.json");
    write_file(scen, "{\"name\": \"a\\u0000b\", \"stop\": {\"requests\": 10}}\n");
    char *where = util_xasprintf("%s: name: a string holds a NUL character (\\u0000)", scen);
    refused("a NUL in a string of the scenario file", where, scen, NULL, NULL, NULL);
    free(where);
    FILE *f = fopen(scen, "w");
    fwrite("{\"name\": \"a\"}\n\0{\"x\": 1}", 1, 23, f);
    fclose(f);
    where = util_xasprintf("%s:2:1: invalid JSON: a NUL byte", scen);
    refused("a NUL byte in the scenario file", where, scen, NULL, NULL, NULL);
    free(where);
    unlink(scen);
    free(scen);
    char *out = in_dir("nul.db");
    result r = sv("run", quick, "-q", "-o", out, "--set", "name=\"a\\\\u0000b\"", "--set",
                  "stop.requests=20", NULL);
    is_int(r.status, 0, "an escaped backslash before u0000 is no NUL: the run is accepted");
    runner_drop(&r);
    char *name = runner_q1_text(out, "SELECT name FROM runs");
    is_str(name, "a\\u0000b", "and its name is kept whole");
    free(name);
    unlink(out);
    free(out);
}

/* Priorities and deadlines (issue 28): a tier that is none, a deadline
 * that is not after arrival, a scheduling policy servesim lacks. */
static void test_priorities(void)
{
    char *two = util_xasprintf("%s/tests/scenarios/queueing-prio-cobham.json", root);
    refused("an unknown tier", "workload.classes[0].priority: unknown value 'urgentest' (known: "
            "critical, standard, batch, sheddable, background)", two,
            "workload.classes[0].priority=urgentest", NULL, NULL);
    refused("a priority beyond the range", "workload.classes[0].priority: 2e+06 is out of range",
            two, "workload.classes[0].priority=2000000", NULL, NULL);
    refused("a deadline of 0", "workload.classes[1].deadline_s: 0 is out of range (expected > 0",
            two, "workload.classes[1].deadline_s=0", NULL, NULL);
    refused("a negative deadline", "workload.classes[1].deadline_s: -3 is out of range", two,
            "workload.classes[1].deadline_s=-3", NULL, NULL);
    refused("an unknown scheduling policy", "cluster.scheduler.scheduling_policy: unknown value "
            "'lifo' (known: fcfs, priority, deadline)", two,
            "cluster.scheduler.scheduling_policy=lifo", NULL, NULL);
    refused("aging without deadlines", "cluster.scheduler.deadline_aging: applies only to "
            "scheduling_policy deadline (this pool's is priority)", two,
            "cluster.scheduler.deadline_aging=2", NULL, NULL);
    free(two);
}

int main(int argc, char **argv)
{
    if (argc < 3 || !mkdtemp(dir)) return 1;
    servesim = argv[1];
    root = argv[2];
    quick = util_xasprintf("%s/examples/quickstart.json", root);
    setup();
    test_horizon();
    test_set_index();
    test_lines();
    test_lesson_knob();
    test_units();
    test_long_echo();
    test_infinite();
    test_warmup();
    test_agent_over_trace();
    test_suggestions();
    test_json_reason();
    test_draft_model();
    test_nul();
    test_priorities();
    const char *junk[] = {"kept.db", "new.db", "trace.json", "far.csv", "ok.csv", "stdout",
                          "stderr", NULL};
    for (const char **p = junk; *p; p++) {
        char *f = in_dir(*p);
        unlink(f);
        free(f);
    }
    rmdir(dir);
    free(db);
    free(fresh);
    free(quick);
    return tap_done();
}
