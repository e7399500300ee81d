/*
 * test_clients.c: what clients send and how long they wait, checked on whole
 * runs from the database -- agent tasks against the straggler closed form
 * 1 - (1 - p)^n, the shape of sequential, parallel and map-reduce tasks,
 * trace replay and its options, class shares, the pre-model delay and
 * stragglers before the router, client time-outs freeing the GPU, and a
 * built-in dataset's pairs against the model's context.
 * argv[1] is the source root (the traces are in its data/).
 *
 * Statistical checks allow Z standard errors of the sample at hand: with a
 * fixed seed they are deterministic, and Z = 4 keeps the chance that a
 * correct engine fails any of them on another seed below one in a thousand.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support.h"
#include "tap.h"

/* cmp_ok(a, op, b, "description"): a op b on numbers, printing both sides on
 * failure (tap.h has no such assertion; a candidate for it). */
#define Z 4.0

static const char *shared; /* the source root's data/ */

/* Tiny requests on a linear model (tests/scenarios/clients-base.json): runs
 * of thousands of tasks take milliseconds, and nothing queues unless a test
 * makes it. */
static char *base;

static sqlite3 *run_db(const char *json, const char *const *sets)
{
    return support_run_json(json, sets, false);
}

static bool report(sqlite3 *db, an_report *r)
{
    util_diag d;
    util_diag_init(&d);
    bool ok = db && an_report_compute(db, 1, r, &d) == UTIL_OK;
    util_diag_print(&d, stdout, "# report");
    util_diag_fini(&d);
    return ok;
}

/* ---- agents ---- */

/* "if each model call independently has a 1% chance of being slow, a
 * ten-step agent hits at least one slow call on 9.6% of runs" */
static void tail_amplification(const char *mode, int n, double p)
{
    char agent[160], slow[160];
    snprintf(agent, sizeof agent, "workload.agent={\"mode\": \"%s\", \"calls\": %d}", mode, n);
    snprintf(slow, sizeof slow,
             "workload.slow={\"probability\": %g, \"extra_s\": {\"dist\": \"fixed\", "
             "\"value\": 1}}",
             p);
    sqlite3 *db = run_db(base, (const char *[]){agent, slow, NULL});
    an_report r;
    if (!report(db, &r)) {
        ok(false, "%s n=%d p=%g ran", mode, n, p);
        sqlite3_close(db);
        return;
    }
    int calls = strcmp(mode, "map_reduce") ? n : n + 1; /* and the aggregation */
    double want = 1 - pow(1 - p, calls);
    double se = sqrt(want * (1 - want) / (double)r.tasks.completed);
    is_int(r.tasks.count, 3000, "%s n=%d: 3000 tasks", mode, n);
    is_int(r.tasks.completed, 3000, "%s n=%d: every one completed", mode, n);
    is_near(r.tasks.calls_per_task, calls, 0, "%s n=%d: of %d calls each", mode, n, calls);
    is_near(r.tasks.any_slow_fraction, want, Z * se,
            "%s n=%d p=%g: a slow call in %.4f of tasks, 1 - (1 - p)^%d = %.4f", mode, n, p,
            r.tasks.any_slow_fraction, calls, want);
    an_report_fini(&r);
    sqlite3_close(db);
}

static void test_tail_amplification(void)
{
    static const int ns[] = {3, 10};
    static const double ps[] = {0.01, 0.1, 0.3};
    for (int m = 0; m < 2; m++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            for (size_t j = 0; j < sizeof ps / sizeof ps[0]; j++)
                tail_amplification(m ? "parallel" : "sequential", ns[i], ps[j]);
    tail_amplification("map_reduce", 4, 0.1);
}

static void test_sequential(void)
{
    sqlite3 *db = run_db(
        base, (const char *[]){"stop.requests=500",
                               "workload.agent={\"mode\": \"sequential\", \"calls\": 4, "
                               "\"tool_output_tokens\": {\"dist\": \"fixed\", \"value\": 7}, "
                               "\"tool_s\": {\"dist\": \"fixed\", \"value\": 0.3}}",
                               NULL});
    is_near(support_q1(db, "SELECT count(*) FROM requests a JOIN requests b ON a.task_id = b.task_id"
                   " AND b.call_index = a.call_index + 1"),
            1500, 0, "sequential: 3 links in each of 500 chains");
    is_near(support_q1(db, "SELECT count(*) FROM requests a JOIN requests b ON a.task_id = b.task_id"
                   " AND b.call_index = a.call_index + 1"
                   " WHERE b.prompt_tokens <> a.prompt_tokens + a.output_tokens + 7"),
            0, 0, "each prompt is the last prompt + its output + the tool's 7 tokens");
    is_near(support_q1(db, "SELECT max(abs(b.arrival_s - a.finish_s - 0.3)) FROM requests a"
                   " JOIN requests b ON a.task_id = b.task_id AND b.call_index = a.call_index + 1"),
            0, 1e-9, "each call is sent 0.3 s (the tool) after the last finished");
    is_near(support_q1(db, "SELECT count(*) FROM tasks t WHERE finish_s <> (SELECT max(finish_s)"
                   " FROM requests r WHERE r.task_id = t.id) OR start_s <> (SELECT min(arrival_s)"
                   " FROM requests r WHERE r.task_id = t.id) OR calls <> 4"),
            0, 0, "a task runs from its first call's sending to its last call's finish");
    sqlite3_close(db);
}

static void test_fan_out(void)
{
    sqlite3 *db = run_db(base, (const char *[]){"stop.requests=500",
                                                "workload.agent={\"mode\": \"parallel\", "
                                                "\"calls\": 5}",
                                                NULL});
    is_near(support_q1(db, "SELECT count(*) FROM (SELECT task_id FROM requests GROUP BY task_id"
                   " HAVING count(*) = 5 AND min(arrival_s) = max(arrival_s))"),
            500, 0, "parallel: the 5 calls of each task are sent at once");
    is_near(support_q1(db, "SELECT count(*) FROM tasks t WHERE finish_s <> (SELECT max(finish_s)"
                   " FROM requests r WHERE r.task_id = t.id)"),
            0, 0, "and the task ends with its last call");
    sqlite3_close(db);

    db = run_db(base, (const char *[]){"stop.requests=500",
                                       "workload.agent={\"mode\": \"map_reduce\", \"calls\": 5}",
                                       NULL});
    is_near(support_q1(db, "SELECT count(*) FROM requests a WHERE call_index = 5 AND prompt_tokens ="
                   " (SELECT sum(output_tokens) FROM requests f WHERE f.task_id = a.task_id"
                   " AND f.call_index < 5) AND arrival_s = (SELECT max(finish_s) FROM requests f"
                   " WHERE f.task_id = a.task_id AND f.call_index < 5)"),
            500, 0,
            "map_reduce: the aggregation is sent when the fan-out joins, its prompt the "
            "fan-out's outputs");
    sqlite3_close(db);
}

/* workload.agent.history: a fan-out's calls share the task's prompt,
 * each adding its own tool_output_tokens, and map_reduce's last call adds
 * the fan-out's replies to it; a sequential agent without a history sends
 * each call its own prompt, and one with max_tokens cuts it as a session
 * does.  With one replica serving one call at a time and a cache that
 * holds everything, each call after a task's first finds the shared
 * prompt cached, but its last partial 16-token block. */
#define FAN_OUT(mode, history)                                                                     \
    "workload.agent={\"mode\": \"" mode "\", \"calls\": 4, \"history\": " history ", "            \
    "\"tool_output_tokens\": {\"dist\": \"fixed\", \"value\": 40}}"
#define SAME_TASK " FROM requests a JOIN requests f ON f.task_id = a.task_id"

static void test_fan_out_history(void)
{
    sqlite3 *db = run_db(base, (const char *[]){"stop.requests=300", FAN_OUT("parallel", "\"full\""),
                                                NULL});
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE prompt_tokens <> 140"), 0, 0,
            "parallel, history full: every call's prompt is the task's 100 + its own 40");
    sqlite3_close(db);

    const char *one[] = {"stop.requests=300", "cluster.replicas=1", "cluster.scheduler.max_batch=1",
                         "cluster.scheduler.prefix_caching=true",
                         "workload.prompt_tokens={\"dist\": \"fixed\", \"value\": 1000}",
                         FAN_OUT("map_reduce", "\"full\""), NULL};
    db = run_db(base, one);
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE call_index < 4 AND"
                           " prompt_tokens <> 1040"),
            0, 0, "map_reduce: the fan-out's prompts are 1000 + 40");
    is_near(support_q1(db, "SELECT count(*) FROM (SELECT a.id" SAME_TASK " AND f.call_index < 4"
                           " WHERE a.call_index = 4 GROUP BY a.id HAVING a.prompt_tokens = 1000 +"
                           " sum(f.output_tokens))"),
            300, 0, "its last call's prompt is the task's 1000 + the fan-out's replies, in all 300");
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE call_index = 0 AND"
                           " cached_tokens > 0"),
            0, 0, "a task's first call finds nothing cached (distinct prompts)");
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE call_index > 0 AND"
                           " (cached_tokens < 1000 - 16 OR cached_tokens > 1000)"),
            0, 0, "every later call finds the shared 1000 cached, within a block");
    sqlite3_close(db);

    one[5] = FAN_OUT("map_reduce", "\"none\"");
    db = run_db(base, one);
    is_near(support_q1(db, "SELECT sum(cached_tokens) FROM requests"), 0, 0,
            "history none: the calls share nothing");
    sqlite3_close(db);

    one[5] = FAN_OUT("parallel", "{\"max_tokens\": 1020}");
    db = run_db(base, one);
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE prompt_tokens <> 1020"), 0, 0,
            "max_tokens 1020: every call is cut to 1020");
    is_near(support_q1(db, "SELECT sum(cached_tokens) FROM requests"), 0, 0,
            "and, cut at its front, shares nothing");
    sqlite3_close(db);
}

static void test_sequential_history(void)
{
    sqlite3 *db = run_db(base, (const char *[]){"stop.requests=300",
                                                FAN_OUT("sequential", "\"none\""), NULL});
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE prompt_tokens <> 100"), 0, 0,
            "sequential, history none: every call its own 100-token prompt");
    sqlite3_close(db);
    db = run_db(base, (const char *[]){"stop.requests=300",
                                       FAN_OUT("sequential", "{\"max_tokens\": 200}"), NULL});
    is_near(support_q1(db, "SELECT count(*)" SAME_TASK " AND f.call_index = a.call_index + 1"
                           " WHERE f.prompt_tokens <> min(a.prompt_tokens + a.output_tokens + 40,"
                           " 200)"),
            0, 0, "max_tokens 200: each prompt min(last prompt + reply + 40, 200)");
    ok(support_q1(db, "SELECT count(*) FROM requests WHERE prompt_tokens = 200") > 100,
       "and many are cut");
    sqlite3_close(db);
    db = run_db(base, (const char *[]){FAN_OUT("parallel", "\"some\""), NULL});
    ok(db == NULL, "refused: history \"some\"");
    sqlite3_close(db);
}

/* A closed-loop user's next task follows its last task's end. */
static void test_closed_tasks(void)
{
    sqlite3 *db = run_db(base, (const char *[]){"stop.requests=200",
                                                "workload.arrival={\"process\": \"closed\", "
                                                "\"users\": 1, \"think_s\": {\"dist\": "
                                                "\"fixed\", \"value\": 0.5}}",
                                                "workload.agent={\"mode\": \"parallel\", "
                                                "\"calls\": 3}",
                                                NULL});
    is_near(support_q1(db, "SELECT count(*) FROM tasks"), 200, 0, "closed loop: 200 tasks of one user");
    is_near(support_q1(db, "SELECT max(abs(b.start_s - a.finish_s - 0.5)) FROM tasks a JOIN tasks b"
                   " ON b.id = a.id + 1"),
            0, 1e-9, "each starts 0.5 s (the think time) after the last one ended");
    sqlite3_close(db);
}

/* The task SLO against the straggler closed form: a slow call adds 1 s, a
 * task without one takes well under 0.9 s (tiny calls, nothing queues), so
 * a 0.9 s (or 0.95 s) target is met by exactly the tasks without a slow call, (1 - p)^n
 * of them; per class, each with its own n and the class's target or the
 * scenario's. */
static void test_task_slo(void)
{
    const double p = 0.1;
    sqlite3 *db = run_db(
        base, (const char *[]){"workload.slow={\"probability\": 0.1, \"extra_s\": {\"dist\": "
                               "\"fixed\", \"value\": 1}}",
                               "workload.classes=[{\"name\": \"long\", \"weight\": 1, \"agent\": "
                               "{\"mode\": \"sequential\", \"calls\": 10}, \"slo\": "
                               "{\"task_e2e_s\": 0.95}}, {\"name\": \"short\", \"weight\": 1, "
                               "\"agent\": {\"mode\": \"sequential\", \"calls\": 3}}]",
                               "slo.task_e2e_s=0.9", NULL});
    an_report r;
    if (!report(db, &r)) {
        ok(false, "the task SLO run");
        sqlite3_close(db);
        return;
    }
    is_near(support_q1(db, "SELECT max(finish_s - start_s) FROM tasks WHERE slow_calls = 0"), 0.45,
            0.45, "a task without a slow call takes under 0.9 s");
    int64_t good = 0, count = 0;
    for (int i = 0; i < 2; i++) {
        const an_tasks *t = &r.classes[i].tasks;
        int n = i ? 3 : 10;
        double want = pow(1 - p, n), se = sqrt(want * (1 - want) / (double)t->count);
        is_near(t->slo_s, i ? 0.9 : 0.95, 0, "%s: %s target", r.classes[i].name,
                i ? "the scenario's 0.9 s" : "its own 0.95 s");
        is_near(t->attainment, 1 - t->any_slow_fraction, 1e-12,
                "%s: met by exactly the tasks without a slow call", r.classes[i].name);
        is_near(t->attainment, want, Z * se, "%s: attainment %.4f, (1 - p)^%d = %.4f",
                r.classes[i].name, t->attainment, n, want);
        is_near(t->goodput_tasks_per_s, (double)t->good / r.classes[i].req.window_s, 1e-12,
                "%s: goodput is good tasks over the window", r.classes[i].name);
        good += t->good;
        count += t->count;
    }
    is_near(r.tasks.attainment, (double)good / (double)count, 1e-12,
            "the run's task attainment sums its classes'");
    an_report_fini(&r);
    sqlite3_close(db);
}

/* ---- classes ---- */

static void test_classes(void)
{
    sqlite3 *db = run_db(
        base, (const char *[]){"stop={\"duration_s\": 400}",
                               "workload.classes=[{\"name\": \"a\", \"weight\": 1}, "
                               "{\"name\": \"b\", \"weight\": 3}, {\"name\": \"c\", "
                               "\"weight\": 6, \"output_tokens\": {\"dist\": \"fixed\", "
                               "\"value\": 9}}, {\"name\": \"own\", \"arrival\": {\"process\": "
                               "\"constant\", \"rate_per_s\": 0.5}}]",
                               NULL});
    double shared_n = support_q1(db, "SELECT count(*) FROM requests WHERE class <> 'own'");
    const char *names[] = {"a", "b", "c"};
    const double weights[] = {1, 3, 6};
    for (int i = 0; i < 3; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM requests WHERE class = '%s'", names[i]);
        double share = support_q1(db, sql) / shared_n, want = weights[i] / 10;
        is_near(share, want, Z * sqrt(want * (1 - want) / shared_n),
                "class %s: %.4f of the shared stream's %g requests (weight %g of 10)", names[i],
                share, shared_n, weights[i]);
    }
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE class = 'own'"), 200, 0,
            "a class with its own constant arrivals: 0.5 req/s for 400 s");
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE class = 'c' AND output_tokens <> 9"), 0, 0,
            "a class's own length distribution");
    sqlite3_close(db);
}

static void test_class_report(void)
{
    sqlite3 *db = run_db(
        base, (const char *[]){"slo={\"ttft_s\": 0.05}",
                               "workload.classes=[{\"name\": \"strict\", \"weight\": 1, "
                               "\"slo\": {\"ttft_s\": 0.001}}, {\"name\": \"loose\", "
                               "\"weight\": 1}]",
                               NULL});
    an_report r;
    if (!report(db, &r)) {
        ok(false, "the class report");
        return;
    }
    is_int(r.n_classes, 2, "two classes");
    is_str(r.classes[0].name, "strict", "in the scenario's order");
    is_near(r.classes[0].req.slo.ttft_s, 0.001, 0, "each class has its own SLO");
    is_near(r.classes[1].req.slo.ttft_s, 0.05, 0, "else the scenario's");
    is_near(r.classes[0].req.attainment, 0, 0,
            "no request meets 1 ms TTFT (reading the weights takes 4.8 ms)");
    cmp_ok(r.classes[1].req.attainment, >, 0.99, "nearly all meet 50 ms (%.4f)",
           r.classes[1].req.attainment);
    is_near(r.req.attainment,
            (double)(r.classes[0].req.good + r.classes[1].req.good) /
                (double)(r.classes[0].req.ended + r.classes[1].req.ended),
            1e-12, "the run's attainment judges each request by its class's SLO");
    is_int(r.classes[0].req.arrived + r.classes[1].req.arrived, r.req.arrived,
           "the classes' requests add up to the run's");
    cJSON *j = an_report_json(&r, false);
    ok(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "classes"), "loose") != NULL,
       "the JSON report has \"classes\": {name: ...}");
    cJSON_Delete(j);
    an_report_fini(&r);
    sqlite3_close(db);
}

/* ---- traces ---- */

typedef struct trace_rows {
    double t[512];
    int prompt[512], output[512];
    int n;
} trace_rows;

/* Reads a plain csv trace independently of the library. */
static bool read_csv(const char *path, trace_rows *tr)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[256];
    tr->n = 0;
    bool ok = fgets(line, sizeof line, f) != NULL; /* header */
    while (ok && tr->n < 512 && fgets(line, sizeof line, f))
        ok = sscanf(line, "%lf,%d,%d", &tr->t[tr->n], &tr->prompt[tr->n], &tr->output[tr->n]) == 3,
        tr->n++;
    fclose(f);
    return ok && tr->n > 1;
}

/* Runs tests/scenarios/clients-trace.json replaying the trace at path, with
 * further overrides (up to 4, NULL-terminated). */
static sqlite3 *trace_db(const char *path, const char *const *more)
{
    char *at = util_xasprintf("workload.arrival.path=%s", path);
    const char *sets[6] = {at};
    for (int i = 0; more && more[i] && i < 4; i++)
        sets[i + 1] = more[i];
    char *json = support_scenario_text("clients-trace.json");
    sqlite3 *db = run_db(json, sets);
    free(json);
    free(at);
    return db;
}

/* Largest |arrival_s(request i) - (t_i - start) x scale - shift| over requests
 * [from, from + n) against rows [row, row + n). */
static double arrival_error(sqlite3 *db, const trace_rows *tr, int from, int row, int n,
                            double start, double scale, double shift)
{
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT arrival_s FROM requests WHERE id >= ?1 ORDER BY id", -1, &st,
                       NULL);
    sqlite3_bind_int(st, 1, from);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        if (sqlite3_step(st) != SQLITE_ROW) {
            worst = INFINITY;
            break;
        }
        double want = (tr->t[row + i] - start) * scale + shift;
        worst = fmax(worst, fabs(sqlite3_column_double(st, 0) - want));
    }
    sqlite3_finalize(st);
    return worst;
}

static void test_trace_replay(void)
{
    char *path = util_xasprintf("%s/validation/distserve-opt13b/workload_rate2_n100.csv", shared);
    trace_rows tr;
    if (!read_csv(path, &tr)) {
        ok(false, "read %s", path);
        free(path);
        return;
    }
    double prompts = 0, outputs = 0;
    for (int i = 0; i < tr.n; i++) prompts += tr.prompt[i], outputs += tr.output[i];
    const double ns = 0.5e-9 + 1e-12; /* the engine's clock is whole nanoseconds */

    sqlite3 *db = trace_db(path, NULL);
    is_near(support_q1(db, "SELECT count(*) FROM requests"), tr.n, 0, "replay: one request per row (%d)",
            tr.n);
    cmp_ok(arrival_error(db, &tr, 0, 0, tr.n, 0, 1, 0), <=, ns,
           "every arrival is the trace's, to the nanosecond");
    is_near(support_q1(db, "SELECT sum(prompt_tokens) FROM requests"), prompts, 0,
            "prompt tokens sum to the trace's %g", prompts);
    is_near(support_q1(db, "SELECT sum(output_tokens) FROM requests"), outputs, 0,
            "output tokens sum to the trace's %g", outputs);
    sqlite3_close(db);

    /* A class's own lengths replace only those it sets. */
    char *cls = util_xasprintf("workload.classes=[{\"name\": \"a\", \"weight\": 1}, {\"name\": "
                               "\"b\", \"weight\": 1, \"prompt_tokens\": {\"dist\": \"fixed\", "
                               "\"value\": 10}}]");
    db = trace_db(path, (const char *[]){cls, NULL});
    free(cls);
    bool kept = db != NULL;
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT id, class, prompt_tokens, output_tokens FROM requests", -1, &st,
                       NULL);
    while (kept && sqlite3_step(st) == SQLITE_ROW) {
        int id = sqlite3_column_int(st, 0), prompt = sqlite3_column_int(st, 2);
        bool b = !strcmp((const char *)sqlite3_column_text(st, 1), "b");
        kept = prompt == (b ? 10 : tr.prompt[id]) && sqlite3_column_int(st, 3) == tr.output[id];
    }
    sqlite3_finalize(st);
    ok(kept,
       "a class's own prompt_tokens replaces the trace's prompts; its outputs stay the trace's");
    is_near(support_q1(db, "SELECT count(DISTINCT class) FROM requests"), 2, 0,
            "and both classes are drawn");
    sqlite3_close(db);

    db = trace_db(path, (const char *[]){"workload.arrival.time_scale=2.5", NULL});
    cmp_ok(arrival_error(db, &tr, 0, 0, tr.n, 0, 2.5, 0), <=, 2.5 * ns,
           "time_scale 2.5 stretches it");
    sqlite3_close(db);

    db = trace_db(path, (const char *[]){"workload.arrival.rate_per_s=8", NULL});
    double span = support_q1(db, "SELECT max(arrival_s) - min(arrival_s) FROM requests");
    is_near((tr.n - 1) / span, 8, 1e-6, "rate_per_s 8: the mean rate over the span is 8 req/s");
    cmp_ok(arrival_error(db, &tr, 0, 0, tr.n, 0, (tr.n - 1) / (tr.t[tr.n - 1] - tr.t[0]) / 8, 0),
           <=, ns * 2, "by one scale factor on every time");
    sqlite3_close(db);

    int first = 0;
    while (tr.t[first] < 20) first++;
    db = trace_db(
        path, (const char *[]){"workload.arrival.start_s=20", "workload.arrival.limit=30", NULL});
    is_near(support_q1(db, "SELECT count(*) FROM requests"), 30, 0,
            "start_s 20, limit 30: 30 rows");
    cmp_ok(arrival_error(db, &tr, 0, first, 30, 20, 1, 0), <=, ns,
           "start_s 20, limit 30: rows %d.. replayed from time 0", first);
    sqlite3_close(db);

    db =
        trace_db(path, (const char *[]){"workload.arrival.loop=true", "stop.duration_s=120", NULL});
    double period = tr.t[tr.n - 1] + tr.t[tr.n - 1] / (tr.n - 1); /* span + one mean gap */
    int in_window = 0;
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < tr.n; i++) in_window += pass * period + tr.t[i] < 120;
    is_near(support_q1(db, "SELECT count(*) FROM requests"), in_window, 0,
            "loop: every pass's arrivals in 120 s (%d)", in_window);
    cmp_ok(arrival_error(db, &tr, tr.n, 0, tr.n, 0, 1, period), <=, ns * 4,
           "loop: the second pass is the first shifted by its span and one mean gap (%d in 120 s)",
           in_window);
    sqlite3_close(db);
    free(path);
}

/* The Azure trace's times are dates; replayed, they count from its first. */
static void test_azure_replay(void)
{
    char *path = util_xasprintf("%s/traces/AzureLLMInferenceTrace_code.csv", shared);
    wl_trace *t = NULL;
    util_diag d;
    util_diag_init(&d);
    double prompts = 0, outputs = 0, last = 0;
    int n = 0;
    wl_record rec;
    if (!wl_trace_open(path, WL_TRACE_AUTO, &t, &d))
        while (n < 2000 && wl_trace_next(t, &rec, &d) == 1)
            prompts += rec.prompt, outputs += rec.output, last = rec.arrival_s, n++;
    wl_trace_close(t);
    util_diag_fini(&d);
    sqlite3 *db = trace_db(path, (const char *[]){"workload.arrival.limit=2000", NULL});
    is_int(n, 2000, "azure: the trace has 2000 rows to read");
    is_near(support_q1(db, "SELECT sum(prompt_tokens) FROM requests"), prompts, 0,
            "azure: the first 2000 rows' tokens (%g, %g)", prompts, outputs);
    is_near(support_q1(db, "SELECT sum(output_tokens) FROM requests"), outputs, 0,
            "and their outputs");
    is_near(support_q1(db, "SELECT max(arrival_s) FROM requests"), last, 0.5e-9 + 1e-12,
            "azure: the 2000th arrival %.7f s after the first", last);
    sqlite3_close(db);
    free(path);
}

static void test_trace_errors(void)
{
    char path[] = "/tmp/servesim-trace-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("arrival_time_s,input_tokens,output_tokens\n0.5,10,10\n0.7,12,x9\n", f);
    fclose(f);
    char *json = support_scenario_text("clients-trace.json");
    char *at = util_xasprintf("workload.arrival.path=%s", path);
    sim_scenario sc;
    char *errors = NULL;
    char *want = util_xasprintf("%s:3:", path);
    is_int(support_scenario(json, (const char *[]){at, NULL}, &sc, &errors), UTIL_EINPUT,
           "a malformed row is reported");
    has_str(errors, want, "a malformed row is reported at FILE:LINE with its field");
    has_str(errors, "output_tokens", "the field");
    tap_diag("%s", errors);
    sim_scenario_fini(&sc);
    free(errors);
    free(want);
    free(at);
    free(json);
    unlink(path);
}

static void test_empirical_lengths(void)
{
    char *path = util_xasprintf("%s/validation/distserve-opt13b/workload_rate4_n400.csv", shared);
    trace_rows tr;
    double mean = 0, var = 0;
    if (read_csv(path, &tr)) {
        for (int i = 0; i < tr.n; i++) mean += tr.prompt[i] / (double)tr.n;
        for (int i = 0; i < tr.n; i++) var += pow(tr.prompt[i] - mean, 2) / tr.n;
    }
    char *set = util_xasprintf("workload.prompt_tokens={\"dist\": \"empirical\", \"path\": "
                               "\"%s\", \"column\": \"input\"}",
                               path);
    sqlite3 *db = run_db(base, (const char *[]){set, NULL});
    double got = support_q1(db, "SELECT avg(prompt_tokens) FROM requests");
    is_near(got, mean, Z * sqrt(var / 3000), "empirical prompts: mean %.1f, the column's %.1f", got,
            mean);
    bool all_in = db != NULL;
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT DISTINCT prompt_tokens FROM requests", -1, &st, NULL);
    while (all_in && sqlite3_step(st) == SQLITE_ROW) {
        int v = sqlite3_column_int(st, 0);
        bool found = false;
        for (int i = 0; i < tr.n && !found; i++) found = tr.prompt[i] == v;
        all_in = found;
    }
    sqlite3_finalize(st);
    ok(all_in, "and every prompt length is one of the column's");
    sqlite3_close(db);
    free(set);
    free(path);
}

/* A built-in dataset's pairs meet the model's context as any drawn
 * lengths do: a pair whose prompt + output is beyond max_context (Llama-2's
 * 4096) is rejected at arrival, the others run.  azure-code's share of such
 * pairs is 1257 of 8819 (data/datasets/azure-code.csv). */
static void test_dataset_context(void)
{
    sqlite3 *db = run_db(base, (const char *[]){"cluster.model=\"llama-2-7b\"",
                                                "workload.classes=[{\"name\": \"code\", "
                                                "\"weight\": 1, \"dataset\": \"azure-code\"}]",
                                                NULL});
    double over = support_q1(db, "SELECT count(*) FROM requests WHERE prompt_tokens + "
                                 "output_tokens > 4096");
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE status = 'rejected'"), over, 0,
            "dataset pairs beyond the 4096-token context are rejected (%g of 3000)", over);
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE status = 'completed' AND "
                           "prompt_tokens + output_tokens <= 4096"),
            3000 - over, 0, "and every other pair completes");
    double p = 1257.0 / 8819;
    is_near(over / 3000, p, Z * sqrt(p * (1 - p) / 3000),
            "the share over the context is the dataset's, %.4f (got %.4f)", p, over / 3000);
    sqlite3_close(db);
}

/* ---- before the router ---- */

static void test_pre_model(void)
{
    sqlite3 *plain = run_db(base, (const char *[]){"stop.requests=4000", NULL});
    sqlite3 *fixed = run_db(base, (const char *[]){"stop.requests=4000",
                                                   "workload.pre_model_s={\"dist\": \"fixed\", "
                                                   "\"value\": 0.25}",
                                                   NULL});
    sqlite3 *expo = run_db(base, (const char *[]){"stop.requests=4000",
                                                  "workload.pre_model_s={\"dist\": "
                                                  "\"exponential\", \"mean\": 0.2}",
                                                  NULL});
    /* Same seed, same draws: the fixed delay shifts the whole schedule. */
    double worst = 0, diff_mean = 0, diff_sq = 0, delay_mean = 0;
    int n = 0;
    sqlite3_stmt *a, *b, *c;
    const char *sql = "SELECT first_token_s - arrival_s, enqueue_s - arrival_s FROM requests "
                      "ORDER BY id";
    sqlite3_prepare_v2(plain, sql, -1, &a, NULL);
    sqlite3_prepare_v2(fixed, sql, -1, &b, NULL);
    sqlite3_prepare_v2(expo, sql, -1, &c, NULL);
    while (sqlite3_step(a) == SQLITE_ROW && sqlite3_step(b) == SQLITE_ROW &&
           sqlite3_step(c) == SQLITE_ROW) {
        double t0 = sqlite3_column_double(a, 0);
        worst = fmax(worst, fabs(sqlite3_column_double(b, 0) - t0 - 0.25));
        double dd = sqlite3_column_double(c, 0) - t0;
        diff_mean += dd;
        diff_sq += dd * dd;
        delay_mean += sqlite3_column_double(c, 1);
        n++;
    }
    sqlite3_finalize(a);
    sqlite3_finalize(b);
    sqlite3_finalize(c);
    diff_mean /= n;
    delay_mean /= n;
    double sd = sqrt(diff_sq / n - diff_mean * diff_mean);
    is_int(n, 4000, "three runs of 4000 requests");
    cmp_ok(worst, <, 2e-9, "a fixed 0.25 s pre-model delay adds 0.25 s to every TTFT");
    is_near(delay_mean, 0.2, Z * 0.2 / sqrt(n), "exponential delays: mean %.4f s before the router",
            delay_mean);
    is_near(diff_mean, 0.2, Z * sd / sqrt(n), "and TTFT grows by their mean (%.4f s)", diff_mean);
    sqlite3_close(plain);
    sqlite3_close(fixed);
    sqlite3_close(expo);
}

static void test_stragglers(void)
{
    sqlite3 *db = run_db(base, (const char *[]){"stop.requests=4000",
                                                "workload.slow={\"probability\": 0.3, "
                                                "\"extra_s\": {\"dist\": \"fixed\", \"value\": "
                                                "1.5}}",
                                                NULL});
    double frac = support_q1(db, "SELECT avg(slow) FROM requests");
    is_near(frac, 0.3, Z * sqrt(0.21 / 4000), "requests.slow marks %.4f of calls (p = 0.3)", frac);
    is_near(support_q1(db, "SELECT max(abs(enqueue_s - arrival_s - 1.5 * slow)) FROM requests"), 0, 1e-9,
            "a slow call reaches its replica 1.5 s late; the others at once");
    cmp_ok(support_q1(db, "SELECT min(first_token_s - arrival_s) FROM requests WHERE slow"), >=,
           1.5, "the wait counts in TTFT");
    /* While a straggler waits, the GPUs serve whoever came after it. */
    cmp_ok(support_q1(db, "SELECT count(*) FROM requests s JOIN requests o ON o.id > s.id AND"
                          " o.finish_s < s.enqueue_s WHERE s.slow AND NOT o.slow"),
           >, 100, "calls sent after a straggler finish before it reaches the router");
    sqlite3_close(db);
}

/* slow.of: exactly probability x of of each consecutive `of` calls are
 * slow, not about that many -- the realised share is the nominal one, and
 * which calls are slow is still the seed's, not the first ones. */
static void test_stragglers_exact(void)
{
    const char *slow = "workload.slow={\"probability\": 0.0125, \"of\": 400, \"extra_s\": "
                       "{\"dist\": \"fixed\", \"value\": 1.5}}";
    sqlite3 *db = run_db(base, (const char *[]){"stop.requests=1200", slow, NULL});
    is_near(support_q1(db, "SELECT count(*) FROM requests"), 1200, 0, "1200 calls");
    for (int b = 0; b < 3; b++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT sum(slow) FROM (SELECT slow FROM requests ORDER BY "
                                  "arrival_s LIMIT 400 OFFSET %d)", 400 * b);
        is_near(support_q1(db, sql), 5, 0, "calls %d to %d: exactly 5 slow (1.25%% of 400)",
                400 * b + 1, 400 * b + 400);
    }
    cmp_ok(support_q1(db, "SELECT max(id) - min(id) FROM requests WHERE slow"), >, 400,
           "spread over the blocks, not the first calls of the run");
    is_near(support_q1(db, "SELECT max(abs(enqueue_s - arrival_s - 1.5 * slow)) FROM requests"),
            0, 1e-9, "each of them reaches its replica 1.5 s late");
    sqlite3_close(db);
    /* another seed, another five of the first 400 */
    sqlite3 *other = run_db(base, (const char *[]){"stop.requests=400", "seed=12", slow, NULL});
    db = run_db(base, (const char *[]){"stop.requests=400", slow, NULL});
    is_near(support_q1(other, "SELECT sum(slow) FROM requests"), 5, 0, "seed 12: 5 of 400 too");
    const char *where = "SELECT sum(id * id) FROM requests WHERE slow"; /* which five */
    ok(support_q1(db, where) != support_q1(other, where), "placed by the seed");
    sqlite3_close(db);
    sqlite3_close(other);
    char *errors = NULL;
    sim_scenario sc;
    int rc = support_scenario(base, (const char *[]){"workload.slow={\"probability\": 0.013, "
                                                     "\"of\": 400, \"extra_s\": 1}",
                                                     NULL},
                              &sc, &errors);
    ok(rc != 0, "0.013 of 400 calls is 5.2: bad input");
    has_str(errors ? errors : "", "workload.slow.of: probability 0.013 x 400 = 5.2 calls",
            "named, with the count it is not");
    free(errors);
    sim_scenario_fini(&sc); /* refused or not, the scenario is the caller's to free */
}

/* ---- time-outs ---- */

/* One replica, one sequence at a time, 10 ms an iteration (above the 4.8 ms
 * it takes to read the weights): a 1000-token reply holds the GPU for 10 s
 * unless its client gives up. */
static sqlite3 *timeout_run(const char *path, double timeout_s)
{
    char *json = support_scenario_text("clients-timeout.json");
    char *at = util_xasprintf("workload.arrival.path=%s", path);
    sqlite3 *db =
        run_db(json, (const char *[]){at, timeout_s > 0 ? "workload.timeout_s=2" : NULL, NULL});
    free(at);
    free(json);
    return db;
}

static void test_timeouts(void)
{
    /* A and B hog the GPU, C waits behind them, D comes later. */
    char *path = support_write_trace("0,100,1000\n0,100,1000\n0,100,5\n0.5,100,5\n");
    sqlite3 *no = timeout_run(path, 0), *db = timeout_run(path, 2);
    is_near(support_q1(no, "SELECT finish_s FROM requests WHERE id = 3"), 20.1, 1e-9,
            "without a time-out D waits for both hogs and C (finishes at 20.1 s)");
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE status = 'timed_out' AND id < 3"), 3, 0,
            "with timeout_s 2, A, B and C time out at 2 s");
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE id = 2 AND first_scheduled_s IS NULL"), 1,
            0, "C timed out in the queue, never scheduled");
    is_near(support_q1(db, "SELECT first_scheduled_s FROM requests WHERE id = 3"), 2, 1e-9,
            "A's GPU is freed at once: D starts at 2 s");
    is_near(support_q1(db, "SELECT finish_s FROM requests WHERE id = 3 AND status = 'completed'"), 2.05,
            1e-9, "and completes at 2.05 s");
    an_report r;
    if (report(db, &r)) {
        is_int(r.req.timed_out, 3, "the report counts 3 timed out");
        is_int(r.req.ended, 4, "of 4 ended");
        is_int(r.req.good, 1, "each failing the SLO (%lld good of %lld)", (long long)r.req.good,
               (long long)r.req.ended);
        an_report_fini(&r);
    } else {
        ok(false, "the report");
    }
    sqlite3_close(no);
    sqlite3_close(db);
    unlink(path);
    free(path);
}

/* Requests cancelled mid-decode give back their KV blocks: after a storm of
 * time-outs, a request needing most of the cache still gets it. */
static void test_timeouts_free_kv(void)
{
    char rows[8192] = "";
    for (int i = 0; i < 60; i++) {
        char line[64];
        snprintf(line, sizeof line, "%g,4000,30000\n", i * 0.01);
        strcat(rows, line);
    }
    strcat(rows, "100,60000,10\n");
    char *path = support_write_trace(rows);
    char *json = support_scenario_text("clients-timeouts-free-kv.json");
    char *at = util_xasprintf("workload.arrival.path=%s", path);
    sqlite3 *db = run_db(json, (const char *[]){at, NULL});
    free(at);
    free(json);
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE status = 'timed_out'"), 60, 0,
            "60 long replies time out mid-decode");
    cmp_ok(support_q1(db, "SELECT max(kv_peak_tokens) FROM replicas"), >, 60000,
           "they had filled the cache (peak %g tokens)",
           support_q1(db, "SELECT max(kv_peak_tokens) FROM replicas"));
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE id = 60 AND status = 'completed'"), 1, 0,
            "then a 60000-token prompt fits: every block came back");
    sqlite3_close(db);
    unlink(path);
    free(path);
}

/* An overloaded cluster whose clients give up all the time: sequences leave
 * mid-decode while others keep running, their structs are reused at once,
 * and every request still ends exactly once, completed or timed out. */
static void test_timeout_storm(void)
{
    static const char *policies[] = {"continuous", "chunked", "static", "prefill_first"};
    for (int i = 0; i < 4; i++) {
        char policy[64];
        snprintf(policy, sizeof policy, "cluster.scheduler.policy=%s", policies[i]);
        sqlite3 *db = run_db(base, (const char *[]){"workload.arrival.rate_per_s=400",
                                                    "workload.output_tokens={\"dist\": "
                                                    "\"uniform\", \"min\": 2, \"max\": 2000}",
                                                    "workload.timeout_s=1", "cluster.replicas=1",
                                                    "cluster.scheduler.kv_blocks=2000", policy,
                                                    NULL});
        double timed_out = support_q1(db, "SELECT count(*) FROM requests WHERE status = 'timed_out'");
        is_near(support_q1(db, "SELECT count(*) FROM requests WHERE status IN ('completed', "
                               "'timed_out')"),
                3000, 0, "%s: 3000 requests, each completed within 1 s or timed out (%g)",
                policies[i], timed_out);
        cmp_ok(timed_out, >, 1000, "%s: most time out", policies[i]);
        is_near(support_q1(db, "SELECT count(*) FROM requests WHERE status = 'completed' AND "
                               "finish_s - arrival_s > 1 + 1e-9"),
                0, 0, "%s: none completes later than 1 s", policies[i]);
        sqlite3_close(db);
    }
}

/* ---- vLLM bench serve's max_concurrency and rate "inf" ---- */

/* The most requests (tasks) in flight at once, from the stored rows: a
 * sweep over sends (+1) and finishes (-1), a finish first at a tie (its
 * slot is what the send took).  table: requests or tasks. */
static double most_in_flight(sqlite3 *db, const char *table, const char *start)
{
    char *sql = util_xasprintf(
        "SELECT max(n) FROM (SELECT sum(d) OVER (ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS n "
        "FROM (SELECT %s AS t, 1 AS d FROM %s UNION ALL SELECT finish_s, -1 FROM %s))",
        start, table, table);
    double n = support_q1(db, sql);
    free(sql);
    return n;
}

/* Rate "inf" with max_concurrency c is a closed loop of c users with zero
 * think time: c requests always in flight until the last is sent, so by
 * Little's law the throughput is c over the mean time in system.  The
 * last c requests drain with fewer in flight, which shortens the run by
 * at most the longest time in system: about c/n of it, and 3 c/n allows
 * the longest to be three times the mean. */
static void test_rate_inf_capped(void)
{
    const int c = 8, n = 3000;
    sqlite3 *db = run_db(base, (const char *[]){"workload.arrival.rate_per_s=\"inf\"",
                                                "workload.arrival.max_concurrency=8", NULL});
    double w = support_q1(db, "SELECT avg(finish_s - arrival_s) FROM requests");
    double x = support_q1(db, "SELECT count(*) / max(finish_s) FROM requests");
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE status = 'completed'"), n, 0,
            "rate inf, max_concurrency 8: every request completed");
    is_near(x, c / w, 3.0 * c / n * (c / w),
            "throughput %.1f/s is c / W = %d / %.5f s = %.1f/s (Little's law)", x, c, w, c / w);
    is_near(most_in_flight(db, "requests", "arrival_s"), c, 0,
            "never more than 8 in flight, and 8 reached");
    is_near(support_q1(db, "SELECT min(arrival_s) FROM requests"), 0, 0, "the first sent at 0");
    sqlite3_close(db);

    /* the same closed loop as users (rows from another stream of draws, so
     * only the physics compares) */
    db = run_db(base, (const char *[]){"workload.arrival={\"process\": \"closed\", \"users\": 8}",
                                       NULL});
    double xc = support_q1(db, "SELECT count(*) / max(finish_s) FROM requests");
    is_near(x, xc, 3.0 * 2 * c / n * xc, "as 8 closed-loop users with no think time: %.1f/s",
            xc);
    sqlite3_close(db);

    /* agent tasks: the cap counts tasks, as a closed-loop user does */
    db = run_db(base, (const char *[]){"stop.requests=300", "workload.arrival.rate_per_s=\"inf\"",
                                       "workload.arrival.max_concurrency=2",
                                       "workload.agent={\"mode\": \"parallel\", \"calls\": 3}",
                                       NULL});
    is_near(support_q1(db, "SELECT count(*) FROM tasks WHERE status = 'completed'"), 300, 0,
            "300 tasks of 3 calls completed");
    is_near(most_in_flight(db, "tasks", "start_s"), 2, 0, "never more than 2 tasks in flight");
    is_near(most_in_flight(db, "requests", "arrival_s"), 6, 0, "so at most 6 calls");
    sqlite3_close(db);
}

/* A cap that never binds changes nothing: the same seed gives the same
 * rows, every field. */
static void test_cap_unbound(void)
{
    support_rows a, b;
    int ra = support_run(base, (const char *[]){"stop.requests=1000", NULL}, &a, NULL);
    int rb = support_run(base, (const char *[]){"stop.requests=1000",
                                                "workload.arrival.max_concurrency=50", NULL},
                         &b, NULL);
    is_int(ra, 0, "uncapped run");
    is_int(rb, 0, "run with max_concurrency 50");
    ok(a.n == 1000 && support_rows_equal(&a, &b),
       "at 20/s, far below capacity, the cap never binds: identical rows");
    support_rows_fini(&a);
    support_rows_fini(&b);
    sqlite3 *db = run_db(base, (const char *[]){"stop.requests=1000", NULL});
    cmp_ok(most_in_flight(db, "requests", "arrival_s"), <, 50, "(the uncapped run never had 50 in flight)");
    sqlite3_close(db);
}

/* A capped stream whose every request is rejected: each slot comes back
 * after the error reply's 1 ms round trip, so the run advances and ends
 * at stop.duration_s (without it, it would send forever at time 0). */
static void test_cap_rejected(void)
{
    sqlite3 *db = run_db(base, (const char *[]){"stop={\"duration_s\": 0.5}",
                                                "workload.arrival.rate_per_s=\"inf\"",
                                                "workload.arrival.max_concurrency=4",
                                                "workload.prompt_tokens=200000", NULL});
    double n = support_q1(db, "SELECT count(*) FROM requests WHERE status = 'rejected'");
    double rounds = support_q1(db, "SELECT count(DISTINCT arrival_s) FROM requests");
    is_near(n, 4 * rounds, 0, "every round sends 4 (%g requests in %g rounds)", n, rounds);
    is_near(rounds, 500, 1, "one round per 1 ms round trip over 0.5 s");
    sqlite3_close(db);
}

/* "inf" without a cap: every request sent at time 0. */
static void test_rate_inf_open(void)
{
    sqlite3 *db = run_db(base, (const char *[]){"stop.requests=500",
                                                "workload.arrival.rate_per_s=\"inf\"", NULL});
    is_near(support_q1(db, "SELECT count(*) FROM requests"), 500, 0, "500 requests");
    is_near(support_q1(db, "SELECT max(arrival_s) FROM requests"), 0, 0, "all sent at time 0");
    is_near(most_in_flight(db, "requests", "arrival_s"), 500, 0, "and all in flight at once");
    sqlite3_close(db);
}

int main(int argc, char **argv)
{
    if (argc < 2 || support_init()) {
        printf("Bail out! usage: test_clients SOURCE_ROOT\n");
        return 1;
    }
    shared = util_xasprintf("%s/data", argv[1]);
    base = support_scenario_text("clients-base.json");
    test_tail_amplification();
    test_sequential();
    test_fan_out();
    test_fan_out_history();
    test_sequential_history();
    test_closed_tasks();
    test_task_slo();
    test_classes();
    test_class_report();
    test_trace_replay();
    test_azure_replay();
    test_trace_errors();
    test_empirical_lengths();
    test_dataset_context();
    test_pre_model();
    test_stragglers();
    test_stragglers_exact();
    test_timeouts();
    test_timeouts_free_kv();
    test_timeout_storm();
    test_rate_inf_capped();
    test_cap_unbound();
    test_rate_inf_open();
    test_cap_rejected();
    support_fini();
    free(base);
    free((char *)shared);
    return tap_done();
}
