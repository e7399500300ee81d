/*
 * test_timeline.c: `servesim timeline` and an_timeline_compute on databases
 * built by hand from the recorder's schema.  Run 1 is a handful of requests
 * whose every interval is worked out below; run 2 is 400 random requests
 * checked against direct SQL counts and conservation laws (Little's law:
 * the queue's integral is the sum of the waits; tokens and events add up to
 * the table's totals at any interval); run 3 is a hand-built iterations
 * table with known KV occupancy and power, idle gaps included.  argv[1] is
 * the servesim binary, for the command-line checks.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "an.h"
#include "rec.h"
#include "tap.h"

static const char *servesim;
static char dir[] = "/tmp/servesim-timeline-XXXXXX";

/* ---- building databases ------------------------------------------------- */

typedef struct row {
    int replica, decode_replica; /* -1: NULL */
    double arrival, enqueue, sched, first_token, finish; /* NAN: NULL */
    int output;
    const char *status;
} row;

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) tap_diag("%s: %s", sql, err);
    sqlite3_free(err);
}

static sqlite3 *create_db(const char *path, bool with_iterations)
{
    sqlite3 *db = NULL;
    sqlite3_open(path, &db);
    exec(db, "PRAGMA application_id = 1399157366; PRAGMA user_version = 1");
    exec(db, rec_schema_sql);
    if (!with_iterations) exec(db, "DROP TABLE iterations"); /* a database from before it */
    return db;
}

/* Whether name is one of the comma-separated list. */
static bool mentions(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ' || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return true;
    return false;
}

/* INSERT INTO table (cols) VALUES (vals), with 0 ('x' for text) in every
 * other NOT NULL column: the schema grows columns these tests do not read. */
static void insert(sqlite3 *db, const char *table, const char *cols, const char *vals)
{
    char *c = util_xstrdup(cols), *v = util_xstrdup(vals), *t;
    char *sql = util_xasprintf("SELECT name, type FROM pragma_table_info('%s') WHERE \"notnull\"",
                               table);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    free(sql);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        const char *type = (const char *)sqlite3_column_text(st, 1);
        if (mentions(cols, name)) continue;
        t = util_xasprintf("%s, %s", c, name);
        free(c);
        c = t;
        t = util_xasprintf("%s, %s", v, !strcmp(type, "TEXT") ? "'x'" : "0");
        free(v);
        v = t;
    }
    sqlite3_finalize(st);
    sql = util_xasprintf("INSERT INTO %s (%s) VALUES (%s)", table, c, v);
    exec(db, sql);
    free(sql);
    free(c);
    free(v);
}

static void add_run(sqlite3 *db, int id, double end_s, double timeout_s)
{
    char *vals = util_xasprintf("%d, '{\"workload\": {\"timeout_s\": %g}}', 'completed', %.17g",
                                id, timeout_s, end_s);
    insert(db, "runs", "id, scenario, status, sim_end_s", vals);
    free(vals);
}

static void add_replica(sqlite3 *db, int run, int replica, int gpus, int kv_capacity,
                        double idle_w)
{
    char *vals = util_xasprintf("%d, %d, %d, %d, %g", run, replica, gpus, kv_capacity, idle_w);
    insert(db, "replicas", "run_id, replica, gpus, kv_capacity_tokens, idle_w", vals);
    free(vals);
}

/* v as an SQL literal: NULL for NAN (a time that never happened). */
static char *lit(double v)
{
    return isnan(v) ? util_xstrdup("NULL") : util_xasprintf("%.17g", v);
}

static char *lit_replica(int k)
{
    return k < 0 ? util_xstrdup("NULL") : util_xasprintf("%d", k);
}

static void add_request(sqlite3 *db, int run, int id, const row *r)
{
    char *v[7] = {lit_replica(r->replica), lit_replica(r->decode_replica), lit(r->arrival),
                  lit(r->enqueue), lit(r->sched), lit(r->first_token), lit(r->finish)};
    char *vals = util_xasprintf("%d, %d, %s, %s, %s, %s, %s, %s, %s, %d, '%s'", run, id, v[0],
                                v[1], v[2], v[3], v[4], v[5], v[6], r->output, r->status);
    insert(db, "requests",
           "run_id, id, replica, decode_replica, arrival_s, enqueue_s, first_scheduled_s, "
           "first_token_s, finish_s, output_tokens, status",
           vals);
    free(vals);
    for (int i = 0; i < 7; i++) free(v[i]);
}

static void add_iteration(sqlite3 *db, int run, int replica, double a, double b, int kv,
                          double energy_j)
{
    char *vals = util_xasprintf("%d, %d, %.17g, %.17g, %d, %.17g", run, replica, a, b, kv,
                                energy_j);
    insert(db, "iterations", "run_id, replica, start_s, end_s, kv_tokens, energy_j", vals);
    free(vals);
}

/* The timeline, or a TAP bail-out: every later check would read nothing. */
static an_timeline timeline(sqlite3 *db, int64_t run, double interval_s, int replica)
{
    util_diag d;
    util_diag_init(&d);
    an_timeline t;
    if (an_timeline_compute(db, run, interval_s, replica, &t, &d)) {
        util_diag_print(&d, stdout, "# timeline");
        printf("Bail out! run %lld, interval %g s, replica %d\n", (long long)run, interval_s,
               replica);
        exit(1);
    }
    util_diag_fini(&d);
    return t;
}

/* got[i] == want[i] to rounding, each miss named. */
static void check_series(const double *got, const double *want, int n, const char *what)
{
    bool same = true;
    for (int i = 0; i < n; i++) {
        same &= fabs(got[i] - want[i]) < 1e-9;
        if (fabs(got[i] - want[i]) >= 1e-9) tap_diag("%s[%d] = %.12g, want %.12g", what, i, got[i],
                                                      want[i]);
    }
    ok(same, "%s", what);
}

/* ---- run 1: a handful of requests, every interval known ---------------- */

#define N NAN
static const row run1[] = {
    /* waits [0.5, 2.25), serves [2.25, 4.5); first token 2.5, 4 more until 4.5 */
    {0, -1, 0.2, 0.5, 2.25, 2.5, 4.5, 5, "completed"},
    {1, -1, 1.0, 1.0, 1.0, 1.1, 1.1, 1, "completed"},
    /* never scheduled: waits until its client gives up at 3 + 5 */
    {0, -1, 3.0, 3.1, N, N, N, 7, "timed_out"},
    /* in service from 6.5 until its client gives up at 11 */
    {1, -1, 6.0, 6.0, 6.5, 7.0, N, 7, "timed_out"},
    {-1, -1, 9.5, N, N, N, N, 3, "rejected"},
    /* disaggregated: prefilled on 0 until its first token at 10.4, decoded on 1 */
    {0, 1, 10.0, 10.0, 10.2, 10.4, 12.4, 11, "completed"},
    /* in flight when the run ended at 20 */
    {1, -1, 18.0, 18.0, 19.0, 19.5, N, 9, "unfinished"},
};

static void test_known(sqlite3 *db)
{
    an_timeline t = timeline(db, 1, 1, -1);
    is_int(t.n, 20, "20 intervals of 1 s in a 20 s run");
    static const int arrivals[20] = {1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 1, [18] = 1};
    static const int completions[20] = {[1] = 1, [4] = 1, [12] = 1};
    static const int timed_out[20] = {[8] = 1, [11] = 1};
    static const double queue[20] = {0.5, 1, 0.25, 0.9, 1, 1, 1.5, 1, [10] = 0.2, [18] = 1};
    static const double running[20] = {[1] = 0.1, 0.75, 1, 0.5, 0, 0.5, 1, 1, 1, 1.8, 1, 0.4,
                                       [19] = 1};
    static const double tokens[20] = {[1] = 1, 2, 2, 1, [10] = 4, 5, 2};
    bool arrived = true, completed = true, timed = true;
    for (int i = 0; i < 20; i++) {
        arrived &= t.arrivals[i] == arrivals[i];
        completed &= t.completions[i] == completions[i];
        timed &= t.timed_out[i] == timed_out[i];
    }
    ok(arrived, "arrivals per interval");
    ok(completed, "completions per interval");
    ok(timed, "time-outs (at arrival + timeout_s) per interval");
    check_series(t.queue, queue, 20,
                 "queue: waiting [0.5, 2.25) is 0.5, 1, 0.25; an unscheduled wait ends at the "
                 "time-out");
    check_series(t.running, running, 20,
                 "running: first scheduled to finish, time-out or the end of an interrupted run");
    check_series(t.output_tokens_per_s, tokens, 20,
                 "output tokens: the first at first_token_s, the rest evenly until finish_s");
    ok(!t.has_iterations, "no iterations rows: KV occupancy and power are null");
    ok(isnan(t.kv_occupancy[0]), "KV occupancy is NaN (%g)", t.kv_occupancy[0]);
    ok(isnan(t.power_w[19]), "power is NaN (%g)", t.power_w[19]);
    an_timeline_fini(&t);

    /* Replica 0 has the disaggregated request's prefill side, replica 1 its
     * decode side; the rejected request reached neither. */
    an_timeline k0 = timeline(db, 1, 1, 0), k1 = timeline(db, 1, 1, 1);
    is_int(k0.arrivals[10], 1,
           "disaggregated: arrival on the prefill replica, completion on the decode replica");
    is_int(k1.arrivals[10], 0, "no arrival on the decode replica");
    is_int(k0.completions[12], 0, "no completion on the prefill replica");
    is_int(k1.completions[12], 1, "the completion on the decode replica");
    is_near(k0.running[10], 0.2, 1e-12, "prefill side in service until the first token");
    /* 0.6 of it, and the request in service until its time-out at 11 */
    is_near(k1.running[10], 1.6, 1e-12, "decode side from the first token");
    is_near(k0.output_tokens_per_s[10], 1, 1e-12, "first token on the prefill replica");
    is_near(k1.output_tokens_per_s[10] + k1.output_tokens_per_s[11] + k1.output_tokens_per_s[12],
            10, 1e-12, "the other 10 on the decode replica");
    is_int(k0.arrivals[9], 0, "a request with no replica is in no replica's");
    is_int(k1.arrivals[9], 0, "nor in replica 1's");
    an_timeline_fini(&k0);
    an_timeline_fini(&k1);
}

/* ---- run 2: random requests against direct counts and conservation ----- */

#define RANDOM_REQUESTS 400
#define RUN2_END 100.0
#define RUN2_TIMEOUT 15.0

static uint64_t rng_state = 88172645463325252ull;

static double uniform(void) /* xorshift64: independent of the library's streams */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Totals computed here from the rows, independently of analysis/. */
typedef struct totals {
    int64_t arrivals, completions, timed_out;
    double wait_s, service_s, tokens;
} totals;

static row random_row(void)
{
    row r = {(int)(uniform() * 3), -1, uniform() * 80, N, N, N, N, 1 + (int)(uniform() * 200),
             "completed"};
    r.enqueue = r.arrival + 0.1 * uniform();
    double u = uniform();
    if (u < 0.05) { /* refused when it reached the replica */
        r.status = "rejected";
        return r;
    }
    if (u > 0.9) r.status = "timed_out";
    if (u > 0.95) return r; /* timed out waiting */
    r.sched = r.enqueue + 3 * uniform();
    r.first_token = r.sched + 0.5 * uniform();
    if (uniform() < 0.25) r.decode_replica = (r.replica + 1) % 3;
    if (u > 0.9) return r; /* timed out in service */
    r.finish = r.first_token + (r.output - 1) * 0.05 * uniform();
    return r;
}

static void tally(totals *s, const row *r)
{
    bool completed = !strcmp(r->status, "completed"), timed_out = !strcmp(r->status, "timed_out");
    double end = completed ? r->finish : timed_out ? r->arrival + RUN2_TIMEOUT : r->enqueue;
    s->arrivals++;
    s->completions += completed;
    s->timed_out += timed_out;
    s->wait_s += (isnan(r->sched) ? end : r->sched) - r->enqueue;
    if (!isnan(r->sched)) s->service_s += end - r->sched;
    if (completed) s->tokens += r->output;
}

static double width(const an_timeline *t, size_t i)
{
    return fmin(t->interval_s, t->end_s - (double)i * t->interval_s);
}

static totals sum(const an_timeline *t)
{
    totals s = {0};
    for (size_t i = 0; i < t->n; i++) {
        s.arrivals += t->arrivals[i];
        s.completions += t->completions[i];
        s.timed_out += t->timed_out[i];
        s.wait_s += t->queue[i] * width(t, i);
        s.service_s += t->running[i] * width(t, i);
        s.tokens += t->output_tokens_per_s[i] * width(t, i);
    }
    return s;
}

static int64_t sql_count(sqlite3 *db, const char *where, double lo, double hi)
{
    char *sql = util_xasprintf("SELECT count(*) FROM requests WHERE run_id = 2 AND %s", where);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    sqlite3_bind_double(st, 1, lo);
    sqlite3_bind_double(st, 2, hi);
    sqlite3_step(st);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    free(sql);
    return n;
}

static void check_totals(const an_timeline *t, const totals *want, const char *what)
{
    totals got = sum(t);
    is_int(got.arrivals, want->arrivals,
           "%s: arrivals, completions, time-outs add up to the table's", what);
    is_int(got.completions, want->completions, "%s: completions add up", what);
    is_int(got.timed_out, want->timed_out, "%s: time-outs add up", what);
    is_near(got.wait_s, want->wait_s, 1e-9 * want->wait_s,
            "%s: Little's law, sum of queue x interval = sum of waits", what);
    is_near(got.service_s, want->service_s, 1e-9 * want->service_s,
            "%s: sum of running x interval = sum of service times", what);
    is_near(got.tokens, want->tokens, 1e-9 * want->tokens,
            "%s: sum of tokens/s x interval = output tokens of completed requests", what);
}

static void test_direct_counts(sqlite3 *db, const an_timeline *t)
{
    bool arrivals = true, completions = true;
    for (size_t i = 0; i < t->n; i++) {
        double lo = (double)i, hi = lo + 1;
        arrivals &= t->arrivals[i] == sql_count(db, "arrival_s >= ?1 AND arrival_s < ?2", lo, hi);
        completions &= t->completions[i] == sql_count(db,
                                                      "status = 'completed' AND finish_s >= ?1 "
                                                      "AND finish_s < ?2",
                                                      lo, hi);
    }
    ok(arrivals, "arrivals per interval = COUNT of arrival_s in [t, t+1)");
    ok(completions, "completions per interval = COUNT of completed finish_s in [t, t+1)");
}

/* Every request has a replica here: replicas 0, 1 and 2 partition the run. */
static void test_partition(sqlite3 *db, const an_timeline *all)
{
    an_timeline k[3] = {timeline(db, 2, 1, 0), timeline(db, 2, 1, 1), timeline(db, 2, 1, 2)};
    bool arrivals = true, completions = true, timed_out = true;
    bool queue = true, running = true, tokens = true;
    for (size_t i = 0; i < all->n; i++) {
        arrivals &= k[0].arrivals[i] + k[1].arrivals[i] + k[2].arrivals[i] == all->arrivals[i];
        completions &=
            k[0].completions[i] + k[1].completions[i] + k[2].completions[i] == all->completions[i];
        timed_out &= k[0].timed_out[i] + k[1].timed_out[i] + k[2].timed_out[i] == all->timed_out[i];
        queue &= fabs(k[0].queue[i] + k[1].queue[i] + k[2].queue[i] - all->queue[i]) < 1e-9;
        running &=
            fabs(k[0].running[i] + k[1].running[i] + k[2].running[i] - all->running[i]) < 1e-9;
        tokens &= fabs(k[0].output_tokens_per_s[i] + k[1].output_tokens_per_s[i] +
                       k[2].output_tokens_per_s[i] - all->output_tokens_per_s[i]) < 1e-9;
    }
    ok(arrivals, "--replica: per interval, the replicas' arrivals add up to the run's");
    ok(completions, "--replica: and so do their completions");
    ok(timed_out, "--replica: and their time-outs");
    ok(queue, "--replica: and their queue lengths");
    ok(running, "--replica: and their running counts");
    ok(tokens, "--replica: and their output tokens/s");
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM requests WHERE run_id = 2 AND replica = 1", -1,
                       &st, NULL);
    sqlite3_step(st);
    is_int(sum(&k[1]).arrivals, sqlite3_column_int64(st, 0), "--replica 1 counts its arrivals");
    sqlite3_finalize(st);
    for (int i = 0; i < 3; i++) an_timeline_fini(&k[i]);
}

static void test_random(sqlite3 *db, const totals *want)
{
    an_timeline t = timeline(db, 2, 1, -1);
    test_direct_counts(db, &t);
    check_totals(&t, want, "S = 1");
    test_partition(db, &t);
    an_timeline_fini(&t);
    const double intervals[] = {0.5, 10, 3, 250};
    const char *names[] = {"S = 0.5", "S = 10", "S = 3 (a 1 s last interval)",
                           "S = 250 (one interval, the run)"};
    for (int i = 0; i < 4; i++) {
        t = timeline(db, 2, intervals[i], -1);
        check_totals(&t, want, names[i]);
        an_timeline_fini(&t);
    }
}

/* ---- run 3: iterations --------------------------------------------------- */

/* Replica 0 (2 GPUs idling at 100 W, 1000 KV tokens) iterates over [0.5, 1.5)
 * and [1.5, 1.75); replica 1 (1 GPU at 50 W, 500 tokens) over [2, 4). */
static void add_run3(sqlite3 *db)
{
    add_run(db, 3, 4.0, 5);
    add_replica(db, 3, 0, 2, 1000, 100);
    add_replica(db, 3, 1, 1, 500, 50);
    add_iteration(db, 3, 0, 0.5, 1.5, 400, 600);
    add_iteration(db, 3, 0, 1.5, 1.75, 800, 200);
    add_iteration(db, 3, 1, 2.0, 4.0, 250, 400);
}

static void test_iterations(sqlite3 *db)
{
    an_timeline t = timeline(db, 3, 1, -1);
    ok(t.has_iterations, "run 3 has iterations, in 4 intervals");
    is_int(t.n, 4, "run 3 is 4 intervals of 1 s");
    /* [0,1): replica 0 busy 0.5 s drawing 300 J, idle 0.5 s at 200 W; replica 1 idle at 50 W */
    check_series(t.power_w, (const double[]){450, 600, 400, 400}, 4,
                 "power: iterations' energy pro-rated, idle_w x gpus in the gaps");
    check_series(t.kv_occupancy,
                 (const double[]){200.0 / 1500, 400.0 / 1500, 250.0 / 1500, 250.0 / 1500}, 4,
                 "KV occupancy: time-weighted kv_tokens / all replicas' capacity");
    an_timeline_fini(&t);
    t = timeline(db, 3, 1, 1);
    check_series(t.power_w, (const double[]){50, 50, 200, 200}, 4, "--replica 1: its power");
    check_series(t.kv_occupancy, (const double[]){0, 0, 0.5, 0.5}, 4,
                 "--replica 1: its KV over its own capacity");
    an_timeline_fini(&t);
    /* 1200 J of iterations + replica 0 idle 2.75 s x 200 W + replica 1 idle 2 s x 50 W */
    double intervals[] = {0.5, 10, 0.3};
    for (int i = 0; i < 3; i++) {
        t = timeline(db, 3, intervals[i], -1);
        double energy = 0;
        for (size_t j = 0; j < t.n; j++) energy += t.power_w[j] * width(&t, j);
        is_near(energy, 1850, 1e-9, "S = %g: energy over the run is kept", intervals[i]);
        an_timeline_fini(&t);
    }
    t = timeline(db, 3, 10, -1);
    is_int(t.n, 1, "a last interval shorter than S averages over its own length");
    /* |got - want| < 1e-9 */
    if (t.n >= 1) is_near(t.power_w[0], 1850 / 4.0, nextafter(1e-9, 0), "its power, over 4 s");
    an_timeline_fini(&t);
}

static void test_errors(sqlite3 *db)
{
    util_diag d;
    util_diag_init(&d);
    an_timeline t;
    is_int(an_timeline_compute(db, 1, 0, -1, &t, &d), UTIL_EINPUT, "interval 0 is bad input");
    an_timeline_fini(&t);
    is_int(an_timeline_compute(db, 1, -1, -1, &t, &d), UTIL_EINPUT, "a negative interval too");
    an_timeline_fini(&t);
    is_int(an_timeline_compute(db, 1, 1e-9, -1, &t, &d), UTIL_EINPUT,
           "so is one that asks for billions of intervals");
    an_timeline_fini(&t);
    is_int(an_timeline_compute(db, 9, 1, -1, &t, &d), UTIL_EINPUT, "a run that is not there");
    an_timeline_fini(&t);
    is_int(an_timeline_compute(db, 1, 1, 7, &t, &d), UTIL_EINPUT,
           "a replica the run does not have");
    an_timeline_fini(&t);
    util_diag_print(&d, stdout, "# expected");
    util_diag_fini(&d);
}

/* ---- the command line ---------------------------------------------------- */

typedef struct result {
    int status;
    char *out; /* stdout and stderr */
} result;

static result sv(const char *args)
{
    char *cmd = util_xasprintf("'%s' timeline %s 2>&1", servesim, args);
    FILE *p = popen(cmd, "r");
    free(cmd);
    size_t n = 0, cap = 4096;
    char *out = util_xmalloc(cap);
    size_t got;
    while ((got = fread(out + n, 1, cap - n - 1, p)) > 0)
        if ((n += got) + 1 == cap) out = util_xrealloc(out, cap *= 2);
    out[n] = '\0';
    int st = pclose(p);
    return (result){WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void test_cli(const char *db, const char *old_db)
{
    char *args = util_xasprintf("%s --run 3 --csv", db);
    result r = sv(args);
    is_int(r.status, 0, "--csv exits 0");
    const char *head = "t_s,arrivals,completions,timed_out,output_tokens_per_s,queue,running,"
                       "kv_occupancy,power_w\n0,0,0,0,0,0,0,0.1333333333,450\n";
    char *start = util_xasprintf("%.*s", (int)strlen(head), r.out); /* as long as head, or less */
    is_str(start, head, "--csv: a header, then the first interval");
    free(start);
    is_int(lines(r.out), 1 + 4, "--csv: a header and one line per interval");
    free(r.out);
    free(args);

    args = util_xasprintf("%s --run 1 --interval 0.5 --csv", db);
    r = sv(args);
    is_int(lines(r.out), 1 + 40, "--interval 0.5 over 20 s: 40 lines");
    has_str(r.out, "\n1,1,1,0,2,1,0.2,,\n", "no iterations: KV and power are empty");
    free(r.out);
    free(args);

    args = util_xasprintf("%s --run 1 --json", db);
    r = sv(args);
    cJSON *j = cJSON_Parse(r.out);
    ok(cJSON_IsArray(j), "--json: an array of 20 intervals");
    is_int(cJSON_GetArraySize(j), 20, "of 20 intervals");
    cJSON *first = cJSON_GetArrayItem(j, 0);
    ok(cJSON_IsNull(cJSON_GetObjectItem(first, "power_w")),
       "--json: numbers, and null without iterations");
    is_near(util_json_number(first, "arrivals", NAN), 1, 0, "the first interval's arrivals, 1");
    cJSON_Delete(j);
    free(r.out);
    free(args);

    r = sv(db);
    is_int(r.status, 0, "text: the newest run, as a table with a header");
    has_str(r.out, "run 3:", "text: the newest run, run 3");
    has_str(r.out, "power_w", "text: a header");
    free(r.out);

    r = sv(old_db);
    is_int(r.status, 0, "a database without an iterations table");
    has_str(r.out, "no iterations recorded", "says no iterations were recorded");
    free(r.out);

    struct {
        const char *args, *message;
    } bad[] = {
        {"/nonexistent/x.db", "no such file"},
        {"DB --interval 0", "--interval 0: expected a time > 0"},
        {"DB --interval -1", "--interval -1: expected a time > 0"},
        {"DB --interval x", "--interval x: expected a time > 0"},
        {"DB --interval 0ms", "--interval 0ms: expected a time > 0"},
        {"DB --interval 2d", "--interval 2d: expected a time > 0, in seconds or with a unit "
                             "(0.5, 500ms, 2s, 250us, 1min, 1h)"},
        {"DB --interval inf", "--interval inf: expected a time > 0"},
        {"DB --interval 1e-9", "(at most 1000000)"},
        {"DB --interval 1ns", "--interval 1ns: expected a time > 0"},
        {"DB --run 1 --replica 7", "run 1 has no replica 7"},
        {"DB --run 9", "no run with id 9"},
        {"DB --csv --json", "choose one"},
        {"", "expected one FILE.db"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *a = util_xstrdup(bad[i].args);
        if (!strncmp(a, "DB", 2)) {
            free(a);
            a = util_xasprintf("%s%s", db, bad[i].args + 2);
        }
        r = sv(a);
        is_int(r.status, 2, "exit 2: '%s' says '%s'", bad[i].args, bad[i].message);
        has_str(r.out, bad[i].message, "'%s': the message", bad[i].args);
        if (r.status != 2) tap_diag("%s", r.out);
        free(r.out);
        free(a);
    }
}

/* --interval takes a time as --slo does: a unit or none, the same intervals. */
static void test_interval_units(const char *db)
{
    static const struct {
        const char *given, *seconds;
        int rows;
    } same[] = {
        {"500ms", "0.5", 40}, {"2s", "2", 10},  {"1min", "60", 1},
        {"250ms", "0.25", 80}, {"1ms", "0.001", 20000}, {"250us", "0.00025", 80000},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        char *a = util_xasprintf("%s --run 1 --interval %s --csv", db, same[i].given);
        char *b = util_xasprintf("%s --run 1 --interval %s --csv", db, same[i].seconds);
        result with = sv(a), without = sv(b);
        is_int(with.status, 0, "--interval %s exits 0", same[i].given);
        is_int(lines(with.out), 1 + same[i].rows, "--interval %s over 20 s: %d rows",
               same[i].given, same[i].rows);
        ok(!strcmp(with.out, without.out), "--interval %s: the table of --interval %s",
           same[i].given, same[i].seconds);
        free(with.out);
        free(without.out);
        free(a);
        free(b);
    }
    char *a = util_xasprintf("%s --run 1 --interval 500ms", db);
    result r = sv(a);
    has_str(r.out, "run 1: 0.5 s intervals", "--interval 500ms: the heading says 0.5 s");
    free(r.out);
    free(a);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("Bail out! usage: test_timeline SERVESIM\n");
        return 1;
    }
    servesim = argv[1];
    if (!mkdtemp(dir)) {
        printf("Bail out! cannot make a temporary folder\n");
        return 1;
    }
    char *path = util_xasprintf("%s/t.db", dir), *old = util_xasprintf("%s/old.db", dir);
    sqlite3 *db = create_db(path, true);
    exec(db, "BEGIN");
    add_run(db, 1, 20, 5);
    add_replica(db, 1, 0, 1, 1000, 100);
    add_replica(db, 1, 1, 1, 1000, 100);
    for (size_t i = 0; i < sizeof run1 / sizeof run1[0]; i++) add_request(db, 1, (int)i, &run1[i]);
    add_run(db, 2, RUN2_END, RUN2_TIMEOUT);
    for (int k = 0; k < 3; k++) add_replica(db, 2, k, 1, 1000, 100);
    totals want = {0};
    for (int i = 0; i < RANDOM_REQUESTS; i++) {
        row r = random_row();
        add_request(db, 2, i, &r);
        tally(&want, &r);
    }
    add_run3(db);
    exec(db, "COMMIT");

    sqlite3 *old_db = create_db(old, false);
    add_run(old_db, 1, 20, 5);
    add_replica(old_db, 1, 0, 1, 1000, 100);
    sqlite3_close(old_db);

    test_known(db);
    test_random(db, &want);
    test_iterations(db);
    test_errors(db);
    sqlite3_close(db);
    test_cli(path, old);
    test_interval_units(path);

    unlink(path);
    unlink(old);
    rmdir(dir);
    free(path);
    free(old);
    return tap_done();
}
