/*
 * section.c: the per-request sections of a report -- counts by status, the
 * latency distributions, the window and throughputs, SLO attainment -- for
 * the run, a class or a replica: the same queries with the group bound
 * (an__query's ?3 and ?9).  report.c asks for the run's and each class's,
 * usage.c for each replica's; section.c calls neither.  Per-request metrics
 * come from the `request_metrics` view (their one definition, in SQL); each
 * distribution is read into memory, 8 bytes per measured request, not a row
 * cache.
 */
#include "an_int.h"

#include <math.h>
#include <stdlib.h>

static int load_counts(const an__query *q, an_section *s, util_diag *d)
{
    double c[8];
    int rc = an__row(q,
                     "SELECT count(*), total(status = 'completed'),"
                     " total(status = 'completed' AND arrival_s >= ?2), total(status = 'rejected'),"
                     " total(status = 'timed_out'), total(status = 'unfinished'),"
                     " total(preemptions > 0), total(preemptions)"
                     " FROM requests WHERE run_id = ?1" AN__IN_GROUP,
                     c, 8, d);
    s->arrived = (int64_t)c[0];
    s->completed = (int64_t)c[1];
    s->measured = (int64_t)c[2];
    s->rejected = (int64_t)c[3];
    s->timed_out = (int64_t)c[4];
    s->unfinished = (int64_t)c[5];
    s->preempted = (int64_t)c[6];
    s->preemptions = (int64_t)c[7];
    return rc;
}

/* A growing array of one metric's values. */
typedef struct values {
    double *v;
    size_t n, cap;
} values;

static void push(values *x, double v)
{
    if (x->n == x->cap) x->v = util_xrealloc(x->v, (x->cap = x->cap ? 2 * x->cap : 1024) * sizeof *x->v);
    x->v[x->n++] = v;
}

/* Every latency distribution of the measured requests in one scan of the
 * view (a scan per metric cost five more passes over a million rows); the
 * arrays hold 8 bytes per request per metric until summarised. */
static int load_latency(const an__query *q, an_section *s, util_diag *d)
{
    sqlite3_stmt *st = an__prepare(
        q, "SELECT ttft_s, tpot_s, tpot_incl_ttft_s, e2e_s, queue_s FROM request_metrics"
           " WHERE run_id = ?1 AND status = 'completed' AND arrival_s >= ?2" AN__IN_GROUP);
    if (!st) return an__db_fail(q->db, d, "cannot query");
    an_stats *out[] = {&s->ttft, &s->tpot, &s->tpot_incl_ttft, &s->e2e, &s->queue,
                       &s->per_user_tokens_per_s};
    enum { N = sizeof out / sizeof out[0] };
    values v[N] = {{0}};
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < N - 1; i++)
            if (sqlite3_column_type(st, i) != SQLITE_NULL) push(&v[i], sqlite3_column_double(st, i));
        if (sqlite3_column_type(st, 1) != SQLITE_NULL) /* 1 / TPOT: GenAI-Perf's per-user rate */
            push(&v[N - 1], 1.0 / sqlite3_column_double(st, 1));
    }
    sqlite3_finalize(st);
    for (int i = 0; i < N; i++) {
        if (rc == SQLITE_DONE) an_stats_compute(v[i].v, v[i].n, out[i]);
        free(v[i].v);
    }
    return rc == SQLITE_DONE ? UTIL_OK : an__db_fail(q->db, d, "cannot read requests");
}

static int load_throughput(const an__query *q, an_section *s, util_diag *d)
{
    double w[4];
    if (an__row(q,
                "SELECT (SELECT min(arrival_s) FROM requests WHERE run_id = ?1 AND arrival_s >= ?2"
                AN__IN_GROUP "), max(finish_s), total(prompt_tokens), total(output_tokens)"
                " FROM requests WHERE run_id = ?1 AND status = 'completed' AND arrival_s >= ?2"
                AN__IN_GROUP,
                w, 4, d))
        return UTIL_EFAIL;
    s->window_s = w[1] - w[0];
    s->input_tokens = w[2];
    s->output_tokens = w[3];
    s->requests_per_s = an__ratio((double)s->measured, s->window_s);
    s->input_tokens_per_s = an__ratio(w[2], s->window_s);
    s->output_tokens_per_s = an__ratio(w[3], s->window_s);
    return UTIL_OK;
}

static void bind_threshold(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v)) sqlite3_bind_null(st, i);
    else sqlite3_bind_double(st, i, v);
}

/* Counts good and ended requests; with no SLO set, every completed request
 * is good (it meets every target there is), so that a class without targets
 * still adds to the run's attainment. */
static int load_slo(const an__query *q, an_section *s, util_diag *d)
{
    sqlite3_stmt *st = an__prepare(
        q, "SELECT total(status = 'completed' AND (?4 IS NULL OR ttft_s <= ?4)"
           " AND (?5 IS NULL OR tpot_s IS NULL OR tpot_s <= ?5) AND (?6 IS NULL OR e2e_s <= ?6)),"
           " count(*)" /* every request sent: one not completed fails every SLO */
           " FROM request_metrics WHERE run_id = ?1 AND arrival_s >= ?2" AN__IN_GROUP);
    if (!st) return an__db_fail(q->db, d, "cannot query");
    bind_threshold(st, 4, s->slo.ttft_s);
    bind_threshold(st, 5, s->slo.tpot_s);
    bind_threshold(st, 6, s->slo.e2e_s);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        s->good = (int64_t)sqlite3_column_double(st, 0);
        s->ended = (int64_t)sqlite3_column_double(st, 1);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? UTIL_OK : an__db_fail(q->db, d, "cannot query");
}

void an__set_attainment(an_section *s, bool applies)
{
    s->attainment = applies ? an__ratio((double)s->good, (double)s->ended) : NAN;
    s->goodput_requests_per_s = applies ? an__ratio((double)s->good, s->window_s) : NAN;
}

/* What the prefix cache served: the same figure as vLLM's prefix cache hit
 * rate (hits over queried tokens), at first scheduling only. */
static int load_cache(const an__query *q, an_section *s, util_diag *d)
{
    double c[2] = {0, 0};
    int rc = q->schema >= AN__SCHEMA_CACHE
                 ? an__row(q,
                           "SELECT total(cached_tokens), total(prompt_tokens) FROM requests"
                           " WHERE run_id = ?1 AND arrival_s >= ?2"
                           " AND first_scheduled_s IS NOT NULL" AN__IN_GROUP,
                           c, 2, d)
                 : UTIL_OK;
    s->cached_tokens = c[0];
    s->prompt_tokens_scheduled = c[1];
    s->prefix_hit_rate = an__ratio(c[0], c[1]);
    return rc;
}

int an__load_section(const an__query *q, an_section *s, util_diag *d)
{
    int rc = load_counts(q, s, d);
    if (!rc) rc = load_cache(q, s, d);
    if (!rc) rc = load_latency(q, s, d);
    if (!rc) rc = load_throughput(q, s, d);
    if (!rc) rc = load_slo(q, s, d);
    an__set_attainment(s, s->slo.set);
    return rc;
}

