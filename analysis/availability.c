/*
 * availability.c: what failures did to a run (cluster.failures,
 * docs/failures.md) -- how much of the replica-time failures touched was
 * ready, and how many requests a replica's failure failed or sent again.
 *
 * A replica was ready from its ready_s until its retired_s.  A failed one
 * was down from its failure (retired_s) until its replacement was ready:
 * the first replica of its pool made at or after the failure that no
 * earlier failure of the pool took (failures.c makes it repair_s later,
 * ready after the lifecycle's start-up; an autoscaler's new replica made
 * sooner restores the pool's capacity as well), or the run's end if none
 * came.  Availability is ready / (ready + down) replica-time: for a fleet
 * whose size is fixed, the share of the replica-time it wanted that was
 * ready; under an autoscaler, whose wanted size the rows do not record,
 * the same for the capacity it had and the capacity failures took.  A
 * failed row's client sent it again (retried) or it was the call's
 * outcome.  Requests a failure returned to the router (on_failure retry)
 * leave no row of their own and are not counted.  Read from the rows
 * alone, as every section is.
 */
#include "an_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The failed replicas' down time: each failure, in time order, takes the
 * first replica of its pool made at or after it and not yet taken.
 * Memory: the replicas' rows (a few per failure and per scale-up). */
static int down_time(const an__query *q, double end_s, double *down, util_diag *d)
{
    sqlite3_stmt *st = an__prepare(q, "SELECT pool, created_s, ready_s, end_reason = 'failed', "
                                      "retired_s FROM replicas WHERE run_id = ?1 "
                                      "ORDER BY pool, created_s, replica");
    if (!st) return util_diag_fail(d, "cannot read replicas: %s", sqlite3_errmsg(q->db));
    size_t n = 0, cap = 0;
    struct rep { char pool[64]; double made, ready, failed_at; bool taken; } *v = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) v = util_xrealloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v);
        const char *pool = (const char *)sqlite3_column_text(st, 0);
        snprintf(v[n].pool, sizeof v[n].pool, "%s", pool ? pool : "");
        v[n].made = sqlite3_column_double(st, 1);
        v[n].ready = an__column_num(st, 2);
        v[n].failed_at = sqlite3_column_int(st, 3) ? an__column_num(st, 4) : NAN;
        v[n].taken = false;
        n++;
    }
    sqlite3_finalize(st);
    *down = 0;
    for (size_t i = 0; rc == SQLITE_DONE && i < n; i++) { /* failures in order of their pool's */
        if (isnan(v[i].failed_at)) continue;
        double back = end_s;
        for (size_t j = 0; j < n; j++) {
            if (v[j].taken || strcmp(v[j].pool, v[i].pool) || v[j].made < v[i].failed_at ||
                isnan(v[j].ready))
                continue;
            v[j].taken = true;
            back = v[j].ready;
            break;
        }
        *down += back - v[i].failed_at;
    }
    free(v);
    return rc == SQLITE_DONE ? UTIL_OK : util_diag_fail(d, "cannot read replicas");
}

int an__failures_load(const an__query *q, an_report *r, util_diag *d)
{
    if (q->schema < AN__SCHEMA_RETRY) return UTIL_OK; /* the replicas' lives and retries */
    double fleet[3];
    if (an__row(q, "SELECT sum(end_reason = 'failed'), max(retired_s), "
                   "sum(max(0, retired_s - ready_s)) FROM replicas WHERE run_id = ?1",
                fleet, 3, d))
        return UTIL_EFAIL;
    if (!(fleet[0] > 0)) return UTIL_OK; /* no failure: no section */
    double calls[3];
    if (an__row(q, "SELECT sum(status = 'failed' AND NOT retried), sum(status = 'failed' AND "
                   "retried), sum(NOT retried) FROM requests WHERE run_id = ?1",
                calls, 3, d))
        return UTIL_EFAIL;
    an_failures *f = &r->failures;
    f->failed_replicas = (int64_t)fleet[0];
    f->span_s = fleet[1];
    f->ready_s = fleet[2];
    if (down_time(q, f->span_s, &f->down_s, d)) return UTIL_EFAIL;
    f->availability = f->ready_s / (f->ready_s + f->down_s);
    f->failed_calls = (int64_t)calls[0];
    f->sent_again = (int64_t)calls[1];
    f->calls = (int64_t)calls[2];
    return UTIL_OK;
}
