/*
 * timeline.c: a stored run as a time series.  Per interval of the run it
 * counts arrivals, completions and time-outs, and averages the output token
 * rate, the queue, the requests in service and -- when the run recorded its
 * iterations -- KV occupancy and power.  Memory goes to the intervals, never
 * to the rows: each table is read once, row by row, and every row adds its
 * share to the intervals it spans (O(span / interval) work per row), so a
 * million requests over 20,000 s cost the same memory as ten.
 *
 * With a fleet that changed (an autoscaler's) it also has the replicas
 * loading, ready and draining, from the replicas' rows, the replicas down after a
 * failure, and of the requests sent in each interval the TTFT's P50 and P99
 * and the share meeting the SLO.  The quantiles come from a histogram per
 * interval, a fixed size however many requests fall in it.
 *
 * The columns are accumulated as integrals over each interval (request-
 * seconds, tokens, joules, token-seconds of KV) and divided by the
 * interval's length at the end, so an interval that a span only grazes gets
 * exactly its overlap.  With kv_offload's tiers (schema 15) the KV each
 * tier holds is averaged too, from the iterations' rows: a tier holds its
 * content between steps as well (add_tiers).
 */
#include "an_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Ten columns of 8 bytes: 80 MB at this many intervals.  Past it the table
 * is unreadable anyway, and a typo such as --interval 1e-9 would otherwise
 * ask for terabytes. */
#define MAX_INTERVALS 1000000

/* The TTFT histogram: 16 buckets an octave from 2^-14 s (61 us) to 2^14 s
 * (4.6 h), plus one below and one above.  A bucket spans a factor 2^(1/16),
 * so its geometric middle is within 2^(1/32) - 1 = 2.2% of any TTFT in it;
 * 450 buckets of 4 bytes, only for the intervals with a request completed. */
#define TTFT_PER_OCTAVE 16
#define TTFT_LOW_EXP (-14)
#define TTFT_OCTAVES 28
#define TTFT_BUCKETS (TTFT_OCTAVES * TTFT_PER_OCTAVE + 2)

/* One request's row: when it reached each stage (NAN: never). */
typedef struct req {
    double arrival, enqueue, sched, first_token, finish;
    double end;       /* it left: finish, time-out, the run's end */
    int64_t output;   /* output tokens */
    bool good;        /* completed within the run's slo */
    bool completed, timed_out;
    bool front, back; /* count its prefill side (replica), its decode side */
} req;

static int db_fail(sqlite3 *db, util_diag *d, const char *what)
{
    return util_diag_fail(d, "%s: %s", what, sqlite3_errmsg(db));
}

/* ?1 = run id, ?2 = the replica or NULL for all. */
static sqlite3_stmt *prepare(sqlite3 *db, const an_timeline *t, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_int64(st, 1, t->run_id);
    if (t->replica >= 0) sqlite3_bind_int(st, 2, t->replica);
    return st;
}

/* A replica column; -1 for NULL (never reached one), which matches no --replica. */
static int column_replica(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int(st, i);
}

/* ---- the intervals ----------------------------------------------------- */

/* The last interval ends at the run's end, so it may be shorter than the
 * others; its averages are over its own length, not a full interval's. */
static double width(const an_timeline *t, size_t i)
{
    return i + 1 == t->n ? t->end_s - (double)i * t->interval_s : t->interval_s;
}

/* The interval holding time x; times outside the run go to the first or the
 * last, so that counts always add up to the table's. */
static size_t index_of(const an_timeline *t, double x)
{
    double q = floor(x / t->interval_s);
    if (!(q > 0)) return 0;
    return q >= (double)t->n ? t->n - 1 : (size_t)q;
}

static void count(const an_timeline *t, int64_t *col, double x)
{
    if (t->n && !isnan(x)) col[index_of(t, x)]++;
}

/* Adds amount spread evenly over [a, b) to col, each interval its share of
 * the overlap; a point (b <= a) adds it all to a's interval.  What falls
 * outside [0, end) is dropped: nothing the engine records does. */
static void spread(const an_timeline *t, double *col, double a, double b, double amount)
{
    if (!t->n || isnan(a)) return;
    if (!(b > a)) {
        col[index_of(t, a)] += amount;
        return;
    }
    double lo = fmax(a, 0), hi = fmin(b, t->end_s);
    for (size_t i = index_of(t, lo); i < t->n; i++) {
        double start = (double)i * t->interval_s;
        if (start >= hi) break;
        double overlap = fmin(hi, start + width(t, i)) - fmax(lo, start);
        if (overlap > 0) col[i] += amount * overlap / (b - a);
    }
}

/* One request present over [a, b): adds its request-seconds. */
static void occupy(const an_timeline *t, double *col, double a, double b)
{
    if (b > a) spread(t, col, a, b, b - a);
}

static int alloc_intervals(an_timeline *t, util_diag *d)
{
    double n = ceil(t->end_s / t->interval_s - 1e-9); /* 10 s in 1 s steps is 10, not 11 */
    if (n > MAX_INTERVALS)
        return util_diag_add(d, "interval %g s: %.0f intervals in the run's %g s (at most %d)",
                             t->interval_s, n, t->end_s, MAX_INTERVALS);
    t->n = n > 0 ? (size_t)n : 0;
    size_t m = t->n ? t->n : 1; /* calloc(0) may return NULL */
    t->arrivals = util_xcalloc(m, sizeof *t->arrivals);
    t->completions = util_xcalloc(m, sizeof *t->completions);
    t->timed_out = util_xcalloc(m, sizeof *t->timed_out);
    t->output_tokens_per_s = util_xcalloc(m, sizeof *t->output_tokens_per_s);
    t->queue = util_xcalloc(m, sizeof *t->queue);
    t->running = util_xcalloc(m, sizeof *t->running);
    t->kv_occupancy = util_xcalloc(m, sizeof *t->kv_occupancy);
    t->power_w = util_xcalloc(m, sizeof *t->power_w);
    t->loading = util_xcalloc(m, sizeof *t->loading);
    t->ready = util_xcalloc(m, sizeof *t->ready);
    t->draining = util_xcalloc(m, sizeof *t->draining);
    t->failed = util_xcalloc(m, sizeof *t->failed);
    t->ttft_p50_s = util_xcalloc(m, sizeof *t->ttft_p50_s);
    t->ttft_p99_s = util_xcalloc(m, sizeof *t->ttft_p99_s);
    t->attainment = util_xcalloc(m, sizeof *t->attainment);
    t->ttft_hist = util_xcalloc(m, sizeof *t->ttft_hist);
    t->good = util_xcalloc(m, sizeof *t->good);
    return UTIL_OK;
}

/* ---- the run ------------------------------------------------------------ */

/* Its end, the clients' time-out (NAN: none) and the per-request SLO from
 * the stored scenario: a timed-out request's row does not say when its
 * client gave up. */
static int load_run(sqlite3 *db, an_timeline *t, double *timeout_s, an_slo *slo, util_diag *d)
{
    sqlite3_stmt *st = prepare(db, t, "SELECT sim_end_s, scenario FROM runs WHERE id = ?1");
    if (!st) return db_fail(db, d, "cannot read runs");
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return util_diag_add(d, "no run with id %lld", (long long)t->run_id);
    }
    t->end_s = an__column_num(st, 0);
    const unsigned char *text = sqlite3_column_text(st, 1);
    cJSON *sc = cJSON_Parse(text ? (const char *)text : "");
    sqlite3_finalize(st);
    if (!sc) return util_diag_add(d, "run %lld: stored scenario is not JSON", (long long)t->run_id);
    *timeout_s = util_json_number(sc, "workload.timeout_s", NAN);
    *slo = (an_slo){.ttft_s = util_json_number(sc, "slo.ttft_s", NAN),
                    .tpot_s = util_json_number(sc, "slo.tpot_s", NAN),
                    .e2e_s = util_json_number(sc, "slo.e2e_s", NAN)};
    t->has_slo = !isnan(slo->ttft_s) || !isnan(slo->tpot_s) || !isnan(slo->e2e_s);
    cJSON_Delete(sc);
    if (isnan(t->end_s))
        return util_diag_add(d, "run %lld: no end time (sim_end_s is NULL)", (long long)t->run_id);
    return UTIL_OK;
}

/* The KV capacity of the counted replicas; refuses a --replica the run does
 * not have. */
static int load_capacity(sqlite3 *db, an_timeline *t, double *kv_capacity, util_diag *d)
{
    sqlite3_stmt *st = prepare(db, t, "SELECT count(*), total(kv_capacity_tokens) FROM replicas"
                                      " WHERE run_id = ?1 AND (?2 IS NULL OR replica = ?2)");
    if (!st) return db_fail(db, d, "cannot read replicas");
    int rc = sqlite3_step(st);
    int64_t n = sqlite3_column_int64(st, 0);
    *kv_capacity = sqlite3_column_double(st, 1);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) return db_fail(db, d, "cannot read replicas");
    if (t->replica >= 0 && n == 0)
        return util_diag_add(d, "run %lld has no replica %d", (long long)t->run_id, t->replica);
    return UTIL_OK;
}

/* The counted replicas' CPU and disk tiers, in tokens of KV (0: none); a
 * database older than schema 15 records no tier's content, so has none
 * here.  A tier holds whole blocks of the target model's KV. */
static int load_tiers(sqlite3 *db, an_timeline *t, double *cpu, double *disk, util_diag *d)
{
    *cpu = *disk = 0;
    if (an__schema(db) < AN__SCHEMA_TIERS) return UTIL_OK;
    sqlite3_stmt *st = prepare(db, t, "SELECT total(cpu_tier_bytes / kv_bytes_per_token),"
                                      " total(disk_tier_bytes / kv_bytes_per_token) FROM replicas"
                                      " WHERE run_id = ?1 AND (?2 IS NULL OR replica = ?2)"
                                      " AND kv_bytes_per_token > 0");
    if (!st) return db_fail(db, d, "cannot read replicas");
    int rc = sqlite3_step(st);
    *cpu = sqlite3_column_double(st, 0);
    *disk = sqlite3_column_double(st, 1);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) return db_fail(db, d, "cannot read replicas");
    size_t m = t->n ? t->n : 1;
    if (*cpu > 0) t->cpu_tier_occupancy = util_xcalloc(m, sizeof *t->cpu_tier_occupancy);
    if (*disk > 0) t->disk_tier_occupancy = util_xcalloc(m, sizeof *t->disk_tier_occupancy);
    return UTIL_OK;
}

/* ---- requests ----------------------------------------------------------- */

/* When it left: its last token; its client's time-out (exact: the engine
 * drops it then, wherever it is); the end of an interrupted run for one in
 * flight; else (rejected) the last time its row knows. */
static double end_of(const req *r, const char *status, double timeout_s, double run_end)
{
    if (!isnan(r->finish)) return r->finish;
    if (r->timed_out && !isnan(timeout_s)) return r->arrival + timeout_s;
    if (!strcmp(status, "unfinished")) return run_end;
    return fmax(fmax(r->arrival, r->enqueue), fmax(r->sched, r->first_token));
}

static bool meets(const req *r, const an_slo *slo)
{
    if (!r->completed) return false;
    double tpot = r->output >= 2 ? (r->finish - r->first_token) / (double)(r->output - 1) : NAN;
    return an__meets_slo(slo, r->first_token - r->arrival, tpot, r->finish - r->arrival);
}

static req read_request(sqlite3_stmt *st, const an_timeline *t, double timeout_s,
                        const an_slo *slo)
{
    const char *status = (const char *)sqlite3_column_text(st, 6);
    if (!status) status = "";
    req r = {
        .arrival = an__column_num(st, 0), .enqueue = an__column_num(st, 1),
        .sched = an__column_num(st, 2), .first_token = an__column_num(st, 3),
        .finish = an__column_num(st, 4), .output = sqlite3_column_int64(st, 5),
        .completed = !strcmp(status, "completed"), .timed_out = !strcmp(status, "timed_out"),
    };
    r.end = end_of(&r, status, timeout_s, t->end_s);
    r.good = meets(&r, slo);
    /* Disaggregated, the decode replica holds it from its first token on. */
    int front = column_replica(st, 7), back = column_replica(st, 8);
    if (back < 0) back = front;
    r.front = t->replica < 0 || front == t->replica;
    r.back = t->replica < 0 || back == t->replica;
    return r;
}

/* The prefill side -- arrival, its wait, the time-out, service up to the
 * first token, the first token -- goes to `replica`; the rest -- service
 * after the first token (a disaggregated KV transfer and decode queue
 * included), the other tokens, completion -- to `decode_replica`, or to
 * `replica` without disaggregation.  Only the first wait is known: a
 * preempted request's later waits count as service. */
/* The histogram bucket of a TTFT of x seconds. */
static int ttft_bucket(double x)
{
    if (!(x >= ldexp(1, TTFT_LOW_EXP))) return 0;
    double b = floor((log2(x) - TTFT_LOW_EXP) * TTFT_PER_OCTAVE) + 1;
    return b >= TTFT_BUCKETS - 1 ? TTFT_BUCKETS - 1 : (int)b;
}

/* What bucket b reads as: its geometric middle; the two open-ended ones
 * their finite edge. */
static double ttft_value(int b)
{
    if (b == 0) return ldexp(1, TTFT_LOW_EXP);
    if (b == TTFT_BUCKETS - 1) return ldexp(1, TTFT_LOW_EXP + TTFT_OCTAVES);
    return exp2(TTFT_LOW_EXP + (b - 0.5) / TTFT_PER_OCTAVE);
}

/* A completed request's TTFT, in the interval it was sent in. */
static void add_ttft(an_timeline *t, const req *r)
{
    if (!t->n || !r->completed) return;
    size_t i = index_of(t, r->arrival);
    if (!t->ttft_hist[i]) t->ttft_hist[i] = util_xcalloc(TTFT_BUCKETS, sizeof **t->ttft_hist);
    t->ttft_hist[i][ttft_bucket(r->first_token - r->arrival)]++;
}

static void add_request(an_timeline *t, const req *r)
{
    double split = isnan(r->first_token) ? r->end : r->first_token;
    if (r->front) {
        count(t, t->arrivals, r->arrival);
        if (r->good) count(t, t->good, r->arrival);
        add_ttft(t, r);
        if (r->timed_out) count(t, t->timed_out, r->end);
        if (!isnan(r->enqueue))
            occupy(t, t->queue, r->enqueue, isnan(r->sched) ? r->end : r->sched);
        if (!isnan(r->sched)) occupy(t, t->running, r->sched, split);
        if (r->completed) spread(t, t->output_tokens_per_s, r->first_token, r->first_token, 1);
    }
    if (r->back) {
        if (!isnan(r->sched)) occupy(t, t->running, split, r->end);
        if (r->completed) {
            count(t, t->completions, r->finish);
            /* the rest of the reply, evenly between the first token and the last */
            if (r->output > 1)
                spread(t, t->output_tokens_per_s, r->first_token, r->finish,
                       (double)(r->output - 1));
        }
    }
}

static int add_requests(sqlite3 *db, an_timeline *t, double timeout_s, const an_slo *slo,
                        util_diag *d)
{
    sqlite3_stmt *st = prepare(db, t,
                               "SELECT arrival_s, enqueue_s, first_scheduled_s, first_token_s,"
                               " finish_s, output_tokens, status, replica, decode_replica"
                               " FROM requests WHERE run_id = ?1"
                               " AND (?2 IS NULL OR replica = ?2 OR decode_replica = ?2)");
    if (!st) return db_fail(db, d, "cannot read requests");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        req r = read_request(st, t, timeout_s, slo);
        add_request(t, &r);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK : db_fail(db, d, "cannot read requests");
}

/* ---- iterations --------------------------------------------------------- */

/* Whether the run recorded its iterations (servesim run --record-iterations);
 * databases from before the table existed have none. */
static int has_iterations(sqlite3 *db, const an_timeline *t, bool *has, util_diag *d)
{
    sqlite3_stmt *st = prepare(db, t, "SELECT count(*) FROM sqlite_master"
                                      " WHERE type = 'table' AND name = 'iterations'");
    if (!st) return db_fail(db, d, "cannot read the schema");
    *has = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    if (!*has) return UTIL_OK;
    st = prepare(db, t, "SELECT EXISTS (SELECT 1 FROM iterations WHERE run_id = ?1)");
    if (!st) return db_fail(db, d, "cannot read iterations");
    *has = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    return UTIL_OK;
}

/* The counted replicas' idle draw, in W; every GPU draws idle_w. */
static int load_idle_w(sqlite3 *db, const an_timeline *t, double *idle_w, util_diag *d)
{
    sqlite3_stmt *st = prepare(db, t, "SELECT total(idle_w * gpus) FROM replicas"
                                      " WHERE run_id = ?1 AND (?2 IS NULL OR replica = ?2)");
    if (!st) return db_fail(db, d, "cannot read replicas");
    int rc = sqlite3_step(st);
    *idle_w = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? UTIL_OK : db_fail(db, d, "cannot read replicas");
}

/* Until the division in finish(), kv_occupancy holds KV token-seconds and
 * power_w the joules drawn beyond idle: an iteration's energy replaces its
 * replica's idle draw for as long as it runs.  Between iterations a replica
 * counts as holding no KV, since one with requests in hand iterates without
 * pause (a disaggregated prefill replica keeping blocks through a KV transfer
 * is the exception this misses). */
static int add_iterations(sqlite3 *db, an_timeline *t, util_diag *d)
{
    sqlite3_stmt *st = prepare(db, t,
                               "SELECT i.start_s, i.end_s, i.kv_tokens, i.energy_j,"
                               " r.idle_w * r.gpus FROM iterations i JOIN replicas r"
                               " ON r.run_id = i.run_id AND r.replica = i.replica"
                               " WHERE i.run_id = ?1 AND (?2 IS NULL OR i.replica = ?2)");
    if (!st) return db_fail(db, d, "cannot read iterations");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        double a = sqlite3_column_double(st, 0), b = sqlite3_column_double(st, 1);
        double kv = sqlite3_column_double(st, 2), energy = sqlite3_column_double(st, 3);
        double idle_w = sqlite3_column_double(st, 4);
        spread(t, t->kv_occupancy, a, b, kv * (b - a));
        spread(t, t->power_w, a, b, energy - idle_w * (b - a));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK : db_fail(db, d, "cannot read iterations");
}

/* ---- the tiers (kv_offload) --------------------------------------------- */

/* What a replica's tiers held since its last step began (since: NAN, no
 * step yet), and when the replica left the cluster. */
typedef struct tier_hold {
    int replica;
    double since, cpu, disk, retired;
} tier_hold;

/* Its tiers' token-seconds from its last step's start until `until`. */
static void hold_tiers(an_timeline *t, const tier_hold *h, double until)
{
    if (isnan(h->since) || !(until > h->since)) return;
    double w = until - h->since;
    spread(t, t->cpu_tier_occupancy, h->since, until, h->cpu * w);
    if (t->disk_tier_occupancy) spread(t, t->disk_tier_occupancy, h->since, until, h->disk * w);
}

/* The counted replicas in order of number, each with no step yet and its
 * end (a replica still there at the run's end retired then). */
static int load_holds(sqlite3 *db, const an_timeline *t, tier_hold **out, int *n, util_diag *d)
{
    sqlite3_stmt *st = prepare(db, t, "SELECT replica, retired_s FROM replicas WHERE run_id = ?1"
                                      " AND (?2 IS NULL OR replica = ?2) ORDER BY replica");
    if (!st) return db_fail(db, d, "cannot read replicas");
    int rc, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) *out = util_xrealloc(*out, (size_t)(cap = cap ? 2 * cap : 8) * sizeof **out);
        double retired = an__column_num(st, 1);
        (*out)[(*n)++] = (tier_hold){sqlite3_column_int(st, 0), NAN, 0, 0,
                                     isnan(retired) ? t->end_s : retired};
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK : db_fail(db, d, "cannot read replicas");
}

static int by_replica(const void *key, const void *elem)
{
    int a = *(const int *)key, b = ((const tier_hold *)elem)->replica;
    return (a > b) - (a < b);
}

/* Unlike the KV in use, which a replica holds only while it iterates, a
 * tier keeps its content between steps, and changes only as a step is
 * planned: each step's figures hold from its start to the start of its
 * replica's next step, the last one's to the replica's retirement.  A
 * replica's rows are in its steps' order in the table (each is written as
 * its step ends), so the rows are read in that order and the memory is
 * per replica. */
static int add_tiers(sqlite3 *db, an_timeline *t, util_diag *d)
{
    tier_hold *h = NULL;
    int n = 0;
    int rc = load_holds(db, t, &h, &n, d);
    sqlite3_stmt *st = rc ? NULL
                          : prepare(db, t, "SELECT replica, start_s, cpu_tier_tokens,"
                                           " disk_tier_tokens FROM iterations WHERE run_id = ?1"
                                           " AND (?2 IS NULL OR replica = ?2)"
                                           " AND cpu_tier_tokens IS NOT NULL ORDER BY rowid");
    if (!rc && !st) rc = db_fail(db, d, "cannot read iterations");
    int step = SQLITE_DONE;
    while (st && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int k = sqlite3_column_int(st, 0);
        tier_hold *r = n ? bsearch(&k, h, (size_t)n, sizeof *h, by_replica) : NULL;
        if (!r) continue; /* no replicas row: nothing to count it under */
        double start = sqlite3_column_double(st, 1);
        hold_tiers(t, r, start);
        r->since = start;
        r->cpu = sqlite3_column_double(st, 2);
        r->disk = sqlite3_column_double(st, 3); /* NULL (no disk tier) reads 0 */
    }
    sqlite3_finalize(st);
    for (int k = 0; k < n; k++) hold_tiers(t, &h[k], h[k].retired);
    free(h);
    if (!rc && step != SQLITE_DONE) rc = db_fail(db, d, "cannot read iterations");
    return rc;
}

/* ---- replicas ----------------------------------------------------------- */

/* Each replica's life by state: loading from created_s to ready_s,
 * ready from there to drain_s (schema 16) or retired_s or the end, and
 * draining from drain_s to retired_s; one drained or gone before it was
 * ready was loading until then. */
static int add_replicas(sqlite3 *db, an_timeline *t, util_diag *d)
{
    int schema = an__schema(db);
    if (schema < AN__SCHEMA_LIFE) return UTIL_OK; /* every replica there throughout */
    t->has_drain = schema >= AN__SCHEMA_DRAIN;
    char *sql = util_xasprintf("SELECT created_s, ready_s, CASE end_reason WHEN 'end_of_run' THEN"
                               " NULL ELSE retired_s END, %s FROM replicas WHERE run_id = ?1"
                               " AND (?2 IS NULL OR replica = ?2)",
                               t->has_drain ? "drain_s" : "NULL");
    sqlite3_stmt *st = prepare(db, t, sql);
    free(sql);
    if (!st) return db_fail(db, d, "cannot read replicas");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        double made = sqlite3_column_double(st, 0), ready = an__column_num(st, 1);
        double gone = an__column_num(st, 2), drain = an__column_num(st, 3);
        t->changing |= made > 0 || !isnan(gone);
        if (isnan(gone)) gone = t->end_s;
        double serving_until = isnan(drain) ? gone : fmin(drain, gone);
        if (!(ready >= made) || ready > serving_until) ready = serving_until; /* never ready */
        occupy(t, t->loading, made, ready);
        occupy(t, t->ready, ready, serving_until);
        occupy(t, t->draining, serving_until, gone);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK : db_fail(db, d, "cannot read replicas");
}

/* The replicas down after a failure (an__fleet_spans' `down`: each until
 * its replacement is ready), of the whole fleet: a replacement is another
 * replica, so there is no such column with --replica. */
static int add_failed(sqlite3 *db, an_timeline *t, util_diag *d)
{
    if (t->replica >= 0) return UTIL_OK;
    an__fleet_spans f;
    int rc = an__fleet_spans_load(db, t->run_id, t->end_s, &f, d);
    t->failures = !rc && f.n_down > 0;
    for (size_t i = 0; !rc && i < f.n_down; i++) occupy(t, t->failed, f.down[i].from, f.down[i].to);
    an__fleet_spans_fini(&f);
    return rc;
}

/* ---- the whole ---------------------------------------------------------- */

/* Interval i's TTFT quantile q: the bucket holding the nearest rank,
 * ceil(q n), of its n completed requests. */
static double ttft_quantile(const uint32_t *hist, double q)
{
    uint64_t n = 0;
    for (int b = 0; b < TTFT_BUCKETS; b++) n += hist[b];
    double rank = fmax(1, ceil(q * (double)n));
    uint64_t below = 0;
    for (int b = 0; b < TTFT_BUCKETS; b++)
        if ((double)(below += hist[b]) >= rank) return ttft_value(b);
    return NAN;
}

/* The requests' columns per interval of arrival. */
static void finish_requests(an_timeline *t)
{
    for (size_t i = 0; i < t->n; i++) {
        const uint32_t *h = t->ttft_hist[i];
        t->ttft_p50_s[i] = h ? ttft_quantile(h, 0.5) : NAN;
        t->ttft_p99_s[i] = h ? ttft_quantile(h, 0.99) : NAN;
        t->attainment[i] = t->has_slo && t->arrivals[i] > 0
                               ? (double)t->good[i] / (double)t->arrivals[i] : NAN;
    }
}

/* A column of token-seconds of KV becomes its average share of capacity
 * over each interval (NAN without iterations); NULL: no such column. */
static void occupancy(const an_timeline *t, double *col, bool iterations, double capacity)
{
    if (!col) return;
    for (size_t i = 0; i < t->n; i++)
        col[i] = iterations && capacity > 0 ? col[i] / (width(t, i) * capacity) : NAN;
}

/* Integrals over each interval become averages over it. */
static void finish(an_timeline *t, bool iterations, const double capacity[3], double idle_w)
{
    for (size_t i = 0; i < t->n; i++) {
        double w = width(t, i);
        t->output_tokens_per_s[i] /= w;
        t->queue[i] /= w;
        t->running[i] /= w;
        t->loading[i] /= w;
        t->ready[i] /= w;
        t->draining[i] /= w;
        t->failed[i] /= w;
        t->power_w[i] = iterations ? (t->power_w[i] + idle_w * w) / w : NAN;
    }
    occupancy(t, t->kv_occupancy, iterations, capacity[0]);
    occupancy(t, t->cpu_tier_occupancy, iterations, capacity[1]);
    occupancy(t, t->disk_tier_occupancy, iterations, capacity[2]);
    finish_requests(t);
}

int an_timeline_compute(sqlite3 *db, int64_t run_id, double interval_s, int replica,
                        an_timeline *t, util_diag *d)
{
    memset(t, 0, sizeof *t);
    t->run_id = run_id;
    t->interval_s = interval_s;
    t->replica = replica < 0 ? -1 : replica;
    if (!(interval_s > 0) || !isfinite(interval_s))
        return util_diag_add(d, "interval %g s: must be a positive number of seconds", interval_s);
    double timeout_s = NAN, capacity[3] = {0}, idle_w = 0; /* KV: the GPUs', the tiers' */
    an_slo slo;
    int rc = load_run(db, t, &timeout_s, &slo, d);
    if (!rc) rc = load_capacity(db, t, &capacity[0], d);
    if (!rc) rc = alloc_intervals(t, d);
    if (!rc) rc = load_tiers(db, t, &capacity[1], &capacity[2], d);
    if (!rc) rc = add_requests(db, t, timeout_s, &slo, d);
    if (!rc) rc = add_replicas(db, t, d);
    if (!rc) rc = add_failed(db, t, d);
    if (!rc) rc = has_iterations(db, t, &t->has_iterations, d);
    if (!rc && t->has_iterations) rc = load_idle_w(db, t, &idle_w, d);
    if (!rc && t->has_iterations) rc = add_iterations(db, t, d);
    if (!rc && t->has_iterations && t->cpu_tier_occupancy) rc = add_tiers(db, t, d);
    if (!rc) finish(t, t->has_iterations, capacity, idle_w);
    return rc;
}

void an_timeline_fini(an_timeline *t)
{
    free(t->arrivals);
    free(t->completions);
    free(t->timed_out);
    free(t->output_tokens_per_s);
    free(t->queue);
    free(t->running);
    free(t->kv_occupancy);
    free(t->cpu_tier_occupancy);
    free(t->disk_tier_occupancy);
    free(t->power_w);
    free(t->loading);
    free(t->ready);
    free(t->draining);
    free(t->failed);
    free(t->ttft_p50_s);
    free(t->ttft_p99_s);
    free(t->attainment);
    for (size_t i = 0; t->ttft_hist && i < t->n; i++) free(t->ttft_hist[i]);
    free(t->ttft_hist);
    free(t->good);
    memset(t, 0, sizeof *t);
}
