/*
 * availability.c: what failures did to a run (cluster.failures,
 * docs/failures.md) -- how much of the replica-time the fleet wanted was
 * ready, and how many requests a replica's failure failed or sent again.
 *
 * The fleet wanted the replicas it started with (replicas.created_s 0)
 * for the whole run (until the last replica's retired_s); a replica was
 * ready from its ready_s until its retired_s.  A failed row's client sent
 * it again (retried) or it was the call's outcome.  Requests a failure
 * returned to the router (on_failure retry) leave no row of their own and
 * are not counted.  Read from the rows alone, as every section is.
 */
#include "an_int.h"

#include <math.h>

int an__failures_load(const an__query *q, an_report *r, util_diag *d)
{
    if (q->schema < AN__SCHEMA_RETRY) return UTIL_OK; /* the replicas' lives and retries */
    double fleet[4];
    if (an__row(q, "SELECT sum(end_reason = 'failed'), sum(created_s = 0), max(retired_s), "
                   "sum(max(0, retired_s - ready_s)) FROM replicas WHERE run_id = ?1",
                fleet, 4, d))
        return UTIL_EFAIL;
    if (!(fleet[0] > 0)) return UTIL_OK; /* no failure: no section */
    double calls[3];
    if (an__row(q, "SELECT sum(status = 'failed' AND NOT retried), sum(status = 'failed' AND "
                   "retried), sum(NOT retried) FROM requests WHERE run_id = ?1",
                calls, 3, d))
        return UTIL_EFAIL;
    an_failures *f = &r->failures;
    f->failed_replicas = (int64_t)fleet[0];
    f->wanted_replicas = (int64_t)fleet[1];
    f->span_s = fleet[2];
    f->availability = fleet[3] / (fleet[1] * fleet[2]);
    f->failed_calls = (int64_t)calls[0];
    f->sent_again = (int64_t)calls[1];
    f->calls = (int64_t)calls[2];
    return UTIL_OK;
}
