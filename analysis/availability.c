/*
 * availability.c: what failures did to a run (cluster.failures,
 * docs/failures.md) -- how much of the replica-time failures touched was
 * ready, and how many requests a replica's failure failed or sent again.
 *
 * A replica was ready from its ready_s until its retired_s.  A lost one
 * (failed, or taken back at a spot notice) was down from when it went
 * (retired_s) until its replacement was ready: the first replica made at
 * or after the loss -- the failure, or the notice (drain_s), when
 * failures.c asks for the replacement, repair_s later -- that no earlier
 * loss took (an autoscaler's new replica made sooner restores the fleet's
 * capacity as well), or the run's end if it never was (pair_failures).  Availability is ready / (ready + down) replica-time: for a fleet
 * whose size is fixed, the share of the replica-time it wanted that was
 * ready; under an autoscaler, whose wanted size the rows do not record,
 * the same for the capacity it had and the capacity failures took.  A
 * failed row's client sent it again (retried) or it was the call's
 * outcome.  Requests a failure returned to the router (on_failure retry)
 * leave no row of their own and are not counted.  Read from the rows
 * alone, as every section is.
 *
 * It also finds when the fleet was short -- a failed replica down until
 * its replacement is ready, an autoscaler's replica starting -- for the
 * timeline's failed column and the report's fleet section, which sets a
 * changed fleet against a static one sized for its peak and counts the
 * requests that missed the SLO in those windows (docs/autoscaling.md).
 */
#include "an_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The failures section's counts from the rows; *lost: some replica failed
 * or was taken back (else no section).  Its down time needs the spans. */
static int load_failure_counts(const an__query *q, an_failures *f, bool *lost, util_diag *d)
{
    *lost = false;
    if (q->schema < AN__SCHEMA_RETRY) return UTIL_OK; /* the replicas' lives and retries */
    double fleet[4];
    if (an__row(q, "SELECT sum(end_reason = 'failed'), sum(end_reason = 'taken_back'), "
                   "max(retired_s), sum(max(0, retired_s - ready_s)) FROM replicas "
                   "WHERE run_id = ?1",
                fleet, 4, d))
        return UTIL_EFAIL;
    if (!(fleet[0] > 0) && !(fleet[1] > 0)) return UTIL_OK; /* no failure: no section */
    double calls[3];
    if (an__row(q, "SELECT sum(status = 'failed' AND NOT retried), sum(status = 'failed' AND "
                   "retried), sum(NOT retried) FROM requests WHERE run_id = ?1",
                calls, 3, d))
        return UTIL_EFAIL;
    f->failed_replicas = (int64_t)fleet[0];
    f->taken_back = (int64_t)fleet[1];
    f->span_s = fleet[2];
    f->ready_s = fleet[3];
    f->failed_calls = (int64_t)calls[0];
    f->sent_again = (int64_t)calls[1];
    f->calls = (int64_t)calls[2];
    *lost = true;
    return UTIL_OK;
}

/* ---- when the fleet was short ------------------------------------------- */

/* One replica's row: its life, and whether it was lost (failed, or taken
 * back) or replaced one. */
typedef struct life {
    double made, ready, gone; /* gone: retired_s, or end_s for one there at the end */
    double lost;              /* when its replacement was asked for: the failure, or a
                               * take-back's notice (drain_s) */
    double serving;           /* until it drained or went: ready to take work till then */
    int gpus;
    bool failed, replaces;
} life;

/* Lost replicas: failed, and (schema 16) taken back at a spot notice,
 * whose replacement failures.c asks for at the notice. */
#define LIVES_SELECT                                                                               \
    "SELECT created_s, ready_s, retired_s, end_reason IN ('failed', 'taken_back'), gpus, %s, %s"   \
    " FROM replicas WHERE run_id = ?1 ORDER BY created_s, replica"

static int load_lives(sqlite3 *db, int64_t run, double end_s, life **out, size_t *n,
                      util_diag *d)
{
    sqlite3_stmt *st = NULL;
    bool drains = an__schema(db) >= AN__SCHEMA_DRAIN;
    char *sql = util_xasprintf(LIVES_SELECT,
                               drains ? "CASE end_reason WHEN 'taken_back' THEN "
                                        "coalesce(drain_s, retired_s) ELSE retired_s END"
                                      : "retired_s",
                               drains ? "drain_s" : "NULL");
    int prc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    free(sql);
    if (prc != SQLITE_OK)
        return util_diag_fail(d, "cannot read replicas: %s", sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, run);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) *out = util_xrealloc(*out, (cap = cap ? 2 * cap : 8) * sizeof **out);
        double gone = an__column_num(st, 2), lost = an__column_num(st, 5);
        double drain = an__column_num(st, 6);
        if (isnan(gone)) gone = end_s;
        (*out)[(*n)++] = (life){.made = sqlite3_column_double(st, 0),
                                .ready = an__column_num(st, 1),
                                .gone = gone,
                                .lost = isnan(lost) ? end_s : lost,
                                .serving = isnan(drain) ? gone : fmin(drain, gone),
                                .failed = sqlite3_column_int(st, 3) == 1,
                                .gpus = sqlite3_column_int(st, 4)};
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK
                             : util_diag_fail(d, "cannot read replicas: %s", sqlite3_errmsg(db));
}

static int by_from(const void *a, const void *b)
{
    double x = ((const an__span *)a)->from, y = ((const an__span *)b)->from;
    return (x > y) - (x < y);
}

/* Sorts spans and merges those that overlap or touch; empty ones go. */
static void merge(an__span *s, size_t *n)
{
    qsort(s, *n, sizeof *s, by_from);
    size_t m = 0;
    for (size_t i = 0; i < *n; i++) {
        if (!(s[i].to > s[i].from)) continue;
        if (m && s[i].from <= s[m - 1].to) s[m - 1].to = fmax(s[m - 1].to, s[i].to);
        else s[m++] = s[i];
    }
    *n = m;
}

/* Each loss, in time order, takes the first replica made at or after it
 * that no earlier loss took (lives are in order of making); the lost one
 * is down from when it went until that one is ready -- not at all if a
 * take-back's replacement was ready before its notice ran out. */
static void pair_failures(life *x, size_t n, double end_s, an__fleet_spans *f)
{
    an__span *fails = util_xcalloc(n ? n : 1, sizeof *fails); /* from: loss, to: its row */
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (x[i].failed) fails[k++] = (an__span){x[i].lost, (double)i};
    qsort(fails, k, sizeof *fails, by_from);
    f->down = util_xcalloc(k ? k : 1, sizeof *f->down);
    for (size_t i = 0, j = 0; i < k; i++) {
        while (j < n && !(x[j].made > 0 && x[j].made >= fails[i].from)) j++;
        double until = end_s;
        if (j < n) {
            x[j].replaces = true;
            if (!isnan(x[j].ready)) until = x[j].ready;
            j++;
        }
        double gone = x[(size_t)fails[i].to].gone;
        f->down[f->n_down++] = (an__span){gone, until};
        f->down_s += fmax(0, until - gone);
    }
    free(fails);
    merge(f->down, &f->n_down);
}

/* The most replicas, and GPUs, ready at once -- a draining one no longer
 * is -- a sweep over the readies (+) and the ends of serving (-), an end
 * first at a tie. */
static void peak_ready(const life *x, size_t n, an__fleet_spans *f)
{
    an__span *ev = util_xcalloc(2 * n + 1, sizeof *ev); /* from: time, to: +-gpus */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i].ready) || !(x[i].serving > x[i].ready)) continue;
        ev[m++] = (an__span){x[i].ready, x[i].gpus};
        ev[m++] = (an__span){x[i].serving, -x[i].gpus};
    }
    qsort(ev, m, sizeof *ev, by_from);
    double gpus = 0;
    int replicas = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i; /* every event at this instant, retirements first */
        for (; j < m && ev[j].from == ev[i].from; j++)
            if (ev[j].to < 0) gpus += ev[j].to, replicas--;
        for (size_t k = i; k < j; k++)
            if (ev[k].to > 0) gpus += ev[k].to, replicas++;
        f->peak_ready = replicas > f->peak_ready ? replicas : f->peak_ready;
        f->peak_ready_gpus = fmax(f->peak_ready_gpus, gpus);
        i = j;
    }
    free(ev);
}

int an__fleet_spans_load(sqlite3 *db, int64_t run, double end_s, an__fleet_spans *f,
                         util_diag *d)
{
    memset(f, 0, sizeof *f);
    if (an__schema(db) < AN__SCHEMA_LIFE) return UTIL_OK; /* every replica there throughout */
    life *x = NULL;
    size_t n = 0;
    int rc = load_lives(db, run, end_s, &x, &n, d);
    if (!rc) {
        pair_failures(x, n, end_s, f);
        f->starting = util_xcalloc(n ? n : 1, sizeof *f->starting);
        for (size_t i = 0; i < n; i++)
            if (x[i].made > 0 && !x[i].replaces)
                f->starting[f->n_starting++] =
                    (an__span){x[i].made, isnan(x[i].ready) ? x[i].gone : x[i].ready};
        merge(f->starting, &f->n_starting);
        peak_ready(x, n, f);
    }
    free(x);
    return rc;
}

void an__fleet_spans_fini(an__fleet_spans *f)
{
    free(f->starting);
    free(f->down);
    memset(f, 0, sizeof *f);
}

bool an__spans_cover(const an__span *s, size_t n, double x)
{
    size_t lo = 0, hi = n; /* the first span starting after x */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].from <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 && x < s[lo - 1].to;
}

/* The static fleet's cost at the run's price, and the misses, from one pass
 * over the requests sent after warm-up. */
static int load_misses(const an__query *q, const an__fleet_spans *s, an_report *r, util_diag *d)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->db, "SELECT arrival_s, status, first_token_s - arrival_s, CASE WHEN"
                                  " output_tokens >= 2 THEN (finish_s - first_token_s) /"
                                  " (output_tokens - 1) END, finish_s - arrival_s FROM requests"
                                  " WHERE run_id = ?1 AND arrival_s >= ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return util_diag_fail(d, "cannot read requests: %s", sqlite3_errmsg(q->db));
    sqlite3_bind_int64(st, 1, q->run);
    sqlite3_bind_double(st, 2, q->warmup);
    an_fleet *f = &r->fleet;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        double at = sqlite3_column_double(st, 0);
        const char *status = (const char *)sqlite3_column_text(st, 1);
        bool completed = status && !strcmp(status, "completed");
        bool failed = status && !strcmp(status, "failed");
        bool missed = !completed || !an__meets_slo(&r->req.slo, an__column_num(st, 2),
                                                   an__column_num(st, 3), an__column_num(st, 4));
        f->sent++;
        if (failed || (missed && an__spans_cover(s->down, s->n_down, at))) f->missed_failures++;
        else if (missed && an__spans_cover(s->starting, s->n_starting, at)) f->missed_lag++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK
                             : util_diag_fail(d, "cannot read requests: %s", sqlite3_errmsg(q->db));
}

/* The failures section and the fleet section share one read of the
 * replicas' lives: the spans end at the run's end, which is where the last
 * row's retired_s is (a replica there at the end writes its row then). */
int an__fleet_sections_load(const an__query *q, an_report *r, util_diag *d)
{
    bool lost;
    int rc = load_failure_counts(q, &r->failures, &lost, d);
    an_fleet *f = &r->fleet;
    f->changing = r->cost.changing && q->replica < 0 && !q->cls;
    if (rc || (!lost && !f->changing)) return rc;
    an__fleet_spans s;
    rc = an__fleet_spans_load(q->db, q->run, r->sim_time_s, &s, d);
    if (!rc && lost) {
        an_failures *fl = &r->failures;
        fl->down_s = s.down_s;
        fl->availability = fl->ready_s / (fl->ready_s + fl->down_s);
    }
    if (!rc && f->changing) {
        f->peak_ready_replicas = s.peak_ready;
        f->peak_ready_gpus = s.peak_ready_gpus;
        f->static_gpu_hours = s.peak_ready_gpus * (r->req.window_s / 3600);
        f->static_usd = f->static_gpu_hours * r->cost.usd_per_gpu_hour *
                        (1 + r->cost.overhead_fraction);
        rc = load_misses(q, &s, r, d);
    }
    an__fleet_spans_fini(&s);
    return rc;
}
