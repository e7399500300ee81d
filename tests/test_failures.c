/*
 * test_failures.c: unplanned failures and spot take-backs (cluster.failures,
 * sim/failures.c, docs/failures.md).  Failures at listed instants happen
 * exactly then, to the ready replica with the lowest id, and their
 * replacements are ready exactly repair_s later; a spot notice drains its
 * replica and what it still holds notice_s later fails; on_failure fail
 * and retry leave the rows each says, and every request is accounted for.
 * With mtbf_s the failures over a long run are a Poisson count, and a
 * fleet of one replica and no spare serves the share A = MTBF / (MTBF +
 * MTTR) of its arrivals, and one of k replicas refuses the share
 * (1 - A)^k, all k down, each within sampling error.  Failures that never
 * happen change no draw; bad keys are refused naming their JSON path.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"
#include "runner.h"
#include "support.h"
#include "tap.h"

/* tests/scenarios/fleet-base.json: two H100 replicas on linear costs,
 * Poisson arrivals at 40/s for 15 s, clients that give up after 4 s. */
static char *base;

/* Short requests (about 0.1 s each) at a low rate over a long run: the
 * statistical tests' fleet, its size and failures set by each. */
#define LONG_RUN(duration, rate)                                                                   \
    "{\"seed\": 11, \"stop\": {\"duration_s\": " #duration "}, \"cluster\": {\"engine\": "         \
    "\"ideal\", \"gpu\": \"h100-sxm\", \"model\": \"llama-3.1-8b\", \"cost_model\": {\"kind\": "   \
    "\"linear\", \"iteration_s\": 0.01, \"prefill_s_per_token\": 0.0001, \"decode_step_s\": "      \
    "0.005, \"decode_s_per_seq\": 0.0005}}, \"workload\": {\"arrival\": {\"process\": "            \
    "\"poisson\", \"rate_per_s\": " #rate "}, \"prompt_tokens\": {\"dist\": \"fixed\", "          \
    "\"value\": 100}, \"output_tokens\": {\"dist\": \"fixed\", \"value\": 10}}}"

static bool is(const char *a, const char *b)
{
    return a && !strcmp(a, b);
}

static const sim_replica_row *replica_row(const support_rows *r, int id)
{
    for (int i = 0; i < r->n_rep; i++)
        if (r->rep[i].replica == id) return &r->rep[i];
    return NULL;
}

/* The attempt with id `id`, whether some row retries it. */
static bool retried_by_a_row(const support_rows *r, int64_t id)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->req[i].retry_of == id) return true;
    return false;
}

/* Every row is completed, rejected or timed out, or failed naming a
 * replica that failed (or was taken back); a failed row its client retried
 * has its retry. */
static void check_accounted(const support_rows *r, const char *what)
{
    int bad = 0, unnamed = 0, unlinked = 0;
    for (size_t i = 0; i < r->n; i++) {
        const sim_request_row *q = &r->req[i];
        if (is(q->status, SIM_FAILED)) {
            int id = q->decode_replica >= 0 ? q->decode_replica : q->replica;
            const sim_replica_row *rp = replica_row(r, id);
            unnamed += !rp || !(is(rp->end_reason, SIM_FAILED) || is(rp->end_reason, SIM_TAKEN_BACK));
            unlinked += q->retried && !retried_by_a_row(r, q->id);
        } else if (!is(q->status, SIM_COMPLETED) && !is(q->status, SIM_REJECTED) &&
                   !is(q->status, SIM_TIMED_OUT)) {
            bad++;
        }
    }
    is_int(bad, 0, "%s: every row completed, rejected, timed out or failed", what);
    is_int(unnamed, 0, "%s: every failed row names a replica that failed", what);
    is_int(unlinked, 0, "%s: every retried failure has its retry's row", what);
}

static int count(const support_rows *r, const char *status)
{
    int n = 0;
    for (size_t i = 0; i < r->n; i++) n += is(r->req[i].status, status);
    return n;
}

/* Rows of replica id enqueued after t. */
static int enqueued_after(const support_rows *r, int id, double t)
{
    int n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->req[i].replica == id && r->req[i].enqueue_s > t + 1e-9;
    return n;
}

static void check_replica(const support_rows *r, int id, double created, double ready,
                          double retired, const char *end, const char *what)
{
    const sim_replica_row *p = replica_row(r, id);
    ok(p != NULL, "%s: replica %d has a row", what, id);
    if (!p) return;
    is_near(p->created_s, created, 1e-9, "%s: replica %d made at %g s", what, id, created);
    is_near(p->ready_s, ready, 1e-9, "%s: replica %d ready at %g s", what, id, ready);
    if (!isnan(retired))
        is_near(p->retired_s, retired, 1e-9, "%s: replica %d gone at %g s", what, id, retired);
    is_str(p->end_reason, end, "%s: replica %d ended %s", what, id, end);
}

/* Failures at 4 s and 8 s: replica 0 (the lowest id ready) then replica 1
 * (0 is gone; its replacement, 2, has a higher id); each replaced 2 s
 * later. */
static void test_at(void)
{
    support_rows r;
    const char *const sets[] = {"cluster.failures={\"at_s\": [4, 8], \"repair_s\": 2}", NULL};
    is_int(support_run(base, sets, &r, NULL), 0, "at_s: the run completes");
    check_accounted(&r, "at_s");
    is_int(r.n_rep, 4, "at_s: four replicas in all");
    check_replica(&r, 0, 0, 0, 4, SIM_FAILED, "at_s");
    check_replica(&r, 1, 0, 0, 8, SIM_FAILED, "at_s");
    check_replica(&r, 2, 6, 6, NAN, SIM_END_OF_RUN, "at_s");
    check_replica(&r, 3, 10, 10, NAN, SIM_END_OF_RUN, "at_s");
    ok(count(&r, SIM_FAILED) > 0, "at_s: the failures failed requests (%d)", count(&r, SIM_FAILED));
    support_rows_fini(&r);
}

/* A replacement waits its repair and then cluster.lifecycle's start-up
 * (provisioning, the load, warm-up), as the autoscaler's replicas do; and
 * a run with both an autoscaler and failure clocks, whose events never
 * stop by themselves, still ends when its work does. */
static void test_lifecycle(void)
{
    support_rows r;
    const char *const sets[] = {"cluster.failures={\"at_s\": [4], \"repair_s\": 2}",
                                "cluster.lifecycle={\"provision_s\": 1, \"load_s\": 0.5, "
                                "\"warm_up_s\": 0.25}",
                                NULL};
    is_int(support_run(base, sets, &r, NULL), 0, "lifecycle: the run completes");
    check_replica(&r, 2, 6, 7.75, NAN, SIM_END_OF_RUN, "lifecycle: made at 4 + 2, ready 1.75 later");
    support_rows_fini(&r);
    const char *const both[] = {
        "cluster.failures={\"mtbf_s\": 20, \"repair_s\": 3}",
        "cluster.autoscaler={\"metric\": \"running\", \"target\": 4, \"max_replicas\": 6, "
        "\"interval_s\": 1, \"scale_down_window_s\": 2}",
        NULL};
    is_int(support_run(base, both, &r, NULL), 0, "failures and an autoscaler: the run ends");
    check_accounted(&r, "failures and an autoscaler");
    ok(r.n_rep > 2, "and the fleet changed (%d replica rows)", r.n_rep);
    support_rows_fini(&r);
}

/* on_failure retry: the failed replica's requests start again elsewhere,
 * so no row fails; fail with workload.retry: each failed attempt is
 * retried, linked by retry_of. */
static void check_restarts(const support_rows *r)
{
    int restarted = 0, unlinked = 0, outside = 0;
    for (size_t i = 0; i < r->n; i++) {
        const sim_request_row *q = &r->req[i];
        if (q->restarts == 0) {
            unlinked += q->restarted_from != -1;
            continue;
        }
        restarted++;
        const sim_replica_row *from = replica_row(r, q->restarted_from);
        if (!from || !is(from->end_reason, SIM_FAILED)) {
            unlinked++;
            continue;
        }
        /* it was there when its replica failed: sent before, not done before
         * (its finish after, or none: timed out unfinished) */
        outside += !(q->arrival_s < from->retired_s && !(q->finish_s <= from->retired_s));
    }
    ok(restarted > 0, "retry: %d rows say a failure restarted them", restarted);
    is_int(unlinked, 0, "retry: each names a replica that failed (restarted_from), the others none");
    is_int(outside, 0, "retry: each was in flight when that replica failed");
}

static void test_on_failure(void)
{
    support_rows r;
    const char *const retry[] = {
        "cluster.failures={\"at_s\": [4, 8], \"repair_s\": 2, \"on_failure\": \"retry\"}", NULL};
    is_int(support_run(base, retry, &r, NULL), 0, "retry: the run completes");
    check_accounted(&r, "retry");
    is_int(count(&r, SIM_FAILED), 0, "retry: no row failed");
    const sim_replica_row *p = replica_row(&r, 0);
    ok(p && is(p->end_reason, SIM_FAILED), "retry: replica 0 still failed");
    check_restarts(&r);
    support_rows_fini(&r);

    const char *const fail[] = {"cluster.failures={\"at_s\": [4], \"repair_s\": 2}",
                                "workload.retry={\"attempts\": 3}", NULL};
    is_int(support_run(base, fail, &r, NULL), 0, "fail, retried: the run completes");
    check_accounted(&r, "fail, retried");
    int failed = 0, retried = 0;
    for (size_t i = 0; i < r.n; i++) {
        failed += is(r.req[i].status, SIM_FAILED);
        retried += is(r.req[i].status, SIM_FAILED) && r.req[i].retried;
    }
    ok(failed > 0, "fail, retried: requests failed (%d)", failed);
    is_int(retried, failed, "fail, retried: every failed attempt was sent again");
    support_rows_fini(&r);
}

/* A spot notice at 5 s with 0.5 s to go: replica 0 takes nothing new from
 * 5 s, and what it still holds at 5.5 s fails (at 40/s it holds about 20
 * requests of about a second each); its replacement is made at 5 + 1 s. */
static void test_spot(void)
{
    support_rows r;
    const char *const sets[] = {
        "cluster.failures={\"spot\": {\"at_s\": [5], \"notice_s\": 0.5}, \"repair_s\": 1}", NULL};
    is_int(support_run(base, sets, &r, NULL), 0, "spot: the run completes");
    check_accounted(&r, "spot");
    is_int(enqueued_after(&r, 0, 5), 0, "spot: nothing reaches replica 0 after its notice");
    check_replica(&r, 0, 0, 0, 5.5, SIM_TAKEN_BACK, "spot");
    is_near(replica_row(&r, 0) ? replica_row(&r, 0)->drain_s : NAN, 5, 1e-9,
            "spot: replica 0 began to drain at its notice, 5 s");
    check_replica(&r, 2, 6, 6, NAN, SIM_END_OF_RUN, "spot");
    ok(count(&r, SIM_FAILED) > 0, "spot: what it held at 5.5 s failed (%d)", count(&r, SIM_FAILED));
    support_rows_fini(&r);

    const char *const early[] = {
        "cluster.failures={\"spot\": {\"at_s\": [5], \"notice_s\": 30}, \"repair_s\": 1}", NULL};
    is_int(support_run(base, early, &r, NULL), 0, "spot, a long notice: the run completes");
    const sim_replica_row *p = replica_row(&r, 0);
    ok(p && is(p->end_reason, SIM_TAKEN_BACK) && p->retired_s < 35,
       "spot, a long notice: replica 0 drained before the notice ran out, taken back (%.3f s)",
       p ? p->retired_s : NAN);
    is_int(count(&r, SIM_FAILED), 0, "spot, a long notice: nothing failed");
    support_rows_fini(&r);
}

/* A take-back's replica is lost from its notice, when its replacement is
 * asked for (repair_s later), but down only from when it went until that
 * one is ready: 0.5 s with a 0.5 s notice and a 1 s repair, none when the
 * notice outlasts the drain. */
static void test_spot_availability(void)
{
    static const struct {
        const char *set, *what;
        double down_s;
    } runs[] = {
        {"cluster.failures={\"spot\": {\"at_s\": [5], \"notice_s\": 0.5}, \"repair_s\": 1}",
         "spot, short notice", 0.5},
        {"cluster.failures={\"spot\": {\"at_s\": [5], \"notice_s\": 30}, \"repair_s\": 1}",
         "spot, long notice", 0},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        const char *const sets[] = {runs[i].set, NULL};
        sqlite3 *db = support_run_json(base, sets, false);
        an_report r;
        util_diag d;
        util_diag_init(&d);
        bool ok_ = db && an_report_compute(db, 1, &r, &d) == UTIL_OK;
        ok(ok_, "%s: reported", runs[i].what);
        if (ok_) {
            ok(r.failures.taken_back == 1 && r.failures.failed_replicas == 0,
               "%s: 1 replica taken back, none failed", runs[i].what);
            is_near(r.failures.down_s, runs[i].down_s, 1e-9, "%s: down %.3f s until replaced",
                    runs[i].what, r.failures.down_s);
            an_report_fini(&r);
        }
        util_diag_fini(&d);
        sqlite3_close(db);
    }
}

/* The most replicas serving (ready, not draining) at one instant: at some
 * replica's ready_s, a drain or retirement first at a tie. */
static int peak_serving(const support_rows *r)
{
    int peak = 0;
    for (int i = 0; i < r->n_rep; i++) {
        double t = r->rep[i].ready_s;
        if (isnan(t)) continue;
        int n = 0;
        for (int j = 0; j < r->n_rep; j++) {
            const sim_replica_row *p = &r->rep[j];
            double until = isnan(p->drain_s) ? p->retired_s : fmin(p->drain_s, p->retired_s);
            n += p->ready_s <= t && until > t;
        }
        peak = n > peak ? n : peak;
    }
    return peak;
}

/* The timeline's draining replicas are the rows' drains: a take-back's
 * replica drains from its notice at 5 s until it has finished what it
 * held, and is no longer ready meanwhile: [5, 6) has 1 ready (its peer;
 * the replacement is made at 6 s). */
static void test_draining_timeline(void)
{
    const char *const sets[] = {
        "cluster.failures={\"spot\": {\"at_s\": [5], \"notice_s\": 30}, \"repair_s\": 1}", NULL};
    sqlite3 *db = support_run_json(base, sets, false);
    an_timeline t;
    util_diag d;
    util_diag_init(&d);
    int rc = db ? an_timeline_compute(db, 1, 1, -1, &t, &d) : UTIL_EFAIL;
    is_int(rc, 0, "draining: the timeline computes");
    if (!rc) {
        double sum = 0, before = 0;
        for (size_t i = 0; i < t.n; i++) {
            sum += t.draining[i];
            if (i < 5) before += t.draining[i];
        }
        double want = support_q1(db, "SELECT total(retired_s - drain_s) FROM replicas");
        ok(t.has_drain && want > 1, "draining: replica 0 drained for %.3f s", want);
        is_near(sum, want, 1e-6, "draining: the column adds up to it, %.3f replica-s", sum);
        is_near(before, 0, 0, "draining: none before the notice");
        ok(t.n > 5 && t.draining[5] == 1 && t.ready[5] == 1,
           "draining: [5, 6) has 1 draining and 1 ready (%g, %g)", t.n > 5 ? t.draining[5] : NAN,
           t.n > 5 ? t.ready[5] : NAN);
        an_timeline_fini(&t);
    }
    util_diag_fini(&d);
    sqlite3_close(db);
}

/* Under an autoscaler a lost replica is still in the scale's spec: its
 * replacement, repair_s later, restores the spec and does not exceed it.
 * A take-back at 5 s on a fleet of 6 (its max): the HPA adds none while it
 * drains, the repair makes one at 6 s, and 6 serve at most.  A failure at
 * 6 s whose repair comes at 36 s, after the load fell at 10 s and the HPA
 * shrank the spec to its minimum: nothing is made then. */
static void test_spec(void)
{
    static const char *const as =
        "cluster.autoscaler={\"metric\": \"running\", \"target\": 4, \"min_replicas\": 2, "
        "\"max_replicas\": 6, \"interval_s\": 1, \"scrape_delay_s\": 1, "
        "\"scale_down_window_s\": 0}";
    support_rows r;
    const char *const spot[] = {
        as, "cluster.failures={\"spot\": {\"at_s\": [5], \"notice_s\": 3}, \"repair_s\": 1}",
        NULL};
    is_int(support_run(base, spot, &r, NULL), 0, "spec, spot: the run completes");
    is_int(peak_serving(&r), 6, "spec, spot: at most max_replicas (6) serve at once");
    int after = 0;
    for (int i = 0; i < r.n_rep; i++) after += r.rep[i].created_s > 2;
    is_int(after, 1, "spec, spot: one replica made after the scale-up, the replacement");
    const sim_replica_row *p = replica_row(&r, r.n_rep - 1);
    ok(p && p->created_s == 6, "spec, spot: made repair_s after the notice, at 6 s (%g)",
       p ? p->created_s : NAN);
    support_rows_fini(&r);

    const char *const shrunk[] = {
        as, "cluster.failures={\"at_s\": [6], \"repair_s\": 30}", "stop.duration_s=60",
        "workload.arrival={\"process\": \"poisson\", \"rate_profile\": {\"times_s\": "
        "[0, 10, 10.001, 60], \"rates_per_s\": [40, 40, 2, 2]}}",
        NULL};
    is_int(support_run(base, shrunk, &r, NULL), 0, "spec, shrunk: the run completes");
    int late = 0, drained = 0;
    for (int i = 0; i < r.n_rep; i++) {
        late += r.rep[i].created_s > 2;
        drained += is(r.rep[i].end_reason, SIM_DRAINED);
    }
    is_int(late, 0, "spec, shrunk: no replica made for the failure (the HPA neither adds for "
                    "the hole nor does the repair exceed the shrunk spec)");
    ok(drained >= 3, "spec, shrunk: the spec shrank meanwhile (%d drained)", drained);
    support_rows_fini(&r);
}

/* With mtbf_s per GPU, replicas of g GPUs fail at g / mtbf_s each; repaired
 * at once, n of them are always up, so the failures before T are Poisson
 * with mean n g T / mtbf_s: within 4 of its standard deviations. */
static void test_poisson(void)
{
    const char *const sets[] = {"cluster.replicas=4", "cluster.tensor_parallel=2",
                                "cluster.failures={\"mtbf_s\": 80, \"repair_s\": 0}", NULL};
    sqlite3 *db = support_run_json(LONG_RUN(2000, 2), sets, false);
    ok(db != NULL, "mtbf_s: the run is recorded");
    if (!db) return;
    double n = support_q1(db, "SELECT count(*) FROM replicas WHERE end_reason = 'failed' AND "
                              "retired_s < 2000");
    double mean = 4 * 2 * 2000 / 80.0;
    ok(fabs(n - mean) <= 4 * sqrt(mean), "mtbf_s: %g failures, Poisson mean %g (4 sd: %.1f)", n,
       mean, 4 * sqrt(mean));
    double bad = support_q1(db, "SELECT count(*) FROM requests WHERE status NOT IN "
                                "('completed', 'rejected', 'timed_out', 'failed') OR (status = "
                                "'failed' AND replica IS NULL)");
    is_int((long long)bad, 0, "mtbf_s: every row completed, rejected, timed out or failed on a "
                              "replica");
    sqlite3_close(db);
}

/* The report's failures: as the rows say, its availability A within tol
 * (its span runs a little past T, to the last request's end). */
static void check_report(sqlite3 *db, double a, double tol)
{
    an_report r;
    util_diag d;
    util_diag_init(&d);
    is_int(an_report_compute(db, 1, &r, &d), 0, "report: computed");
    const an_failures *f = &r.failures;
    is_int((long long)f->failed_replicas,
           (long long)support_q1(db, "SELECT count(*) FROM replicas WHERE end_reason = 'failed'"),
           "report: every failed replica counted");
    /* one replica and no spare: every instant is ready or down until replaced */
    is_near(f->ready_s + f->down_s, f->span_s, 1e-6 * f->span_s,
            "report: ready + down replica-time %.1f s is the span %.1f s", f->ready_s + f->down_s,
            f->span_s);
    ok(fabs(f->availability - a) <= tol, "report: availability %.4f, A = %.4f", f->availability,
       a);
    is_int((long long)f->failed_calls,
           (long long)support_q1(db, "SELECT count(*) FROM requests WHERE status = 'failed'"),
           "report: every failed call counted (no client retries)");
    cJSON *j = an_report_json(&r, false);
    ok(cJSON_GetObjectItem(j, "failures") != NULL, "report: its JSON has failures");
    cJSON_Delete(j);
    an_report_fini(&r);
    util_diag_fini(&d);
}

/* One replica and no spare, up Exp(MTBF) and down MTTR = repair_s in turn:
 * it is up A = MTBF / (MTBF + MTTR) of the time (renewal-reward), and by
 * PASTA Poisson arrivals find it up (are not rejected) A of the time.
 * Over n cycles the time share's sd is A (1 - A) / sqrt(n) (the cycle's
 * up time is exponential, its down time fixed); the arrivals' share adds
 * the binomial sqrt(A (1 - A) / N). */
static void test_availability(void)
{
    const double mtbf = 20, mttr = 5, T = 20000;
    const char *const sets[] = {"cluster.failures={\"mtbf_s\": 20, \"repair_s\": 5}", NULL};
    sqlite3 *db = support_run_json(LONG_RUN(20000, 2), sets, false);
    ok(db != NULL, "availability: the run is recorded");
    if (!db) return;
    double a = mtbf / (mtbf + mttr), cycles = T / (mtbf + mttr);
    double sd_time = a * (1 - a) / sqrt(cycles);
    double up = support_q1(db, "SELECT sum(min(coalesce(retired_s, 20000), 20000) - ready_s) "
                               "FROM replicas WHERE ready_s < 20000") / T;
    ok(fabs(up - a) <= 4 * sd_time, "availability: up %.4f of the time, A = %.4f (4 sd: %.4f)",
       up, a, 4 * sd_time);
    double sent = support_q1(db, "SELECT count(*) FROM requests");
    double found = support_q1(db, "SELECT count(*) FROM requests WHERE status <> 'rejected'");
    double sd = sqrt(sd_time * sd_time + a * (1 - a) / sent);
    ok(fabs(found / sent - a) <= 4 * sd,
       "availability: %.4f of %g arrivals found the replica up, A = %.4f (4 sd: %.4f)",
       found / sent, sent, a, 4 * sd);
    check_report(db, a, 4 * sd_time);
    sqlite3_close(db);
}

/* k replicas and no spare, each up Exp(MTBF) and down MTTR in turn, each
 * its own clock (a replacement draws a new one) and its own repair: they
 * are independent, so all k are down (1 - A)^k of the time, whatever the
 * repair time's distribution, and by PASTA that share of the arrivals is
 * refused with no replica ready.  Refusals come in runs (one down spell
 * refuses every arrival in it), so the standard error is by batch means,
 * 25 spans of 800 s, each some 40 cycles long. */
#define NO_REPLICA "reason IS 'no_replica'"

static void test_no_spare(void)
{
    const double mtbf = 10, mttr = 10, T = 20000;
    const int k = 3;
    const char *const sets[] = {"cluster.replicas=3",
                                "cluster.failures={\"mtbf_s\": 10, \"repair_s\": 10}", NULL};
    sqlite3 *db = support_run_json(LONG_RUN(20000, 2), sets, false);
    ok(db != NULL, "no spare: the run is recorded");
    if (!db) return;
    double all_down = pow(1 - mtbf / (mtbf + mttr), k);
    double share = support_q1(db, "SELECT avg(" NO_REPLICA ") FROM requests");
    double se = support_batch_se(db, NO_REPLICA, T, 25);
    ok(fabs(share - all_down) <= 4 * se,
       "no spare: %.4f of the arrivals found all %d replicas down, (1 - A)^%d = %.4f (se %.4f)",
       share, k, k, all_down, se);
    sqlite3_close(db);
}

/* ---- a day's report: the timeline and the fleet section ---- */

/* An autoscaler that scales up under base's load, replicas 2 s in the
 * making, one failure at 6 s replaced at once, and a TTFT target. */
static const char *const day_sets[] = {
    "cluster.autoscaler={\"metric\": \"running\", \"target\": 4, \"min_replicas\": 2, "
    "\"max_replicas\": 6, \"interval_s\": 1, \"scrape_delay_s\": 1}",
    "cluster.lifecycle={\"provision_s\": 2}",
    "cluster.failures={\"at_s\": [6], \"repair_s\": 0}",
    "slo={\"ttft_s\": 0.5}",
    NULL};

/* A request misses the SLO (TTFT 0.5 s) unless it completed within it. */
#define MISSED "NOT (status = 'completed' AND first_token_s - arrival_s <= 0.5)"
/* The failed replica's row and its replacement's: the first made after it. */
#define FAILED_AT "(SELECT retired_s FROM replicas WHERE end_reason = 'failed')"
#define REPLACEMENT                                                                                \
    "(SELECT replica FROM replicas WHERE created_s >= " FAILED_AT                                 \
    " ORDER BY created_s, replica LIMIT 1)"
#define DOWN_UNTIL "(SELECT ready_s FROM replicas WHERE replica = " REPLACEMENT ")"

/* Per interval of 1 s: the failed replicas (overlap of the one down span),
 * the attainment and the TTFT's P99 against SQL over the rows. */
static void check_day_timeline(sqlite3 *db)
{
    an_timeline t;
    util_diag d;
    util_diag_init(&d);
    is_int(an_timeline_compute(db, 1, 1, -1, &t, &d), 0, "day: timeline computed");
    double a = support_q1(db, "SELECT " FAILED_AT), b = support_q1(db, "SELECT " DOWN_UNTIL);
    ok(t.changing && t.failures && t.has_slo, "day: replica, failed and SLO columns");
    bool failed = true, attained = true, p99 = true;
    for (size_t i = 0; i < t.n; i++) {
        double lo = (double)i, hi = fmin(lo + 1, t.end_s);
        double want = fmax(0, fmin(b, hi) - fmax(a, lo)) / (hi - lo);
        failed &= fabs(t.failed[i] - want) < 1e-9;
        char *sql = util_xasprintf("SELECT avg(NOT " MISSED ") FROM requests WHERE arrival_s >="
                                   " %.17g AND arrival_s < %.17g", lo, lo + 1);
        double share = support_q1(db, sql);
        free(sql);
        attained &= isnan(share) ? isnan(t.attainment[i]) : fabs(t.attainment[i] - share) < 1e-12;
        /* nearest rank: the ceil(0.99 n)-th TTFT of those completed */
        sql = util_xasprintf("SELECT first_token_s - arrival_s FROM requests WHERE status ="
                             " 'completed' AND arrival_s >= %.17g AND arrival_s < %.17g ORDER BY"
                             " 1 LIMIT 1 OFFSET (SELECT CAST(ceil(0.99 * count(*)) AS INT) - 1"
                             " FROM requests WHERE status = 'completed' AND arrival_s >= %.17g"
                             " AND arrival_s < %.17g)", lo, lo + 1, lo, lo + 1);
        double q = support_q1(db, sql);
        free(sql);
        p99 &= isnan(q) ? isnan(t.ttft_p99_s[i]) : fabs(t.ttft_p99_s[i] / q - 1) <= 0.0221;
    }
    ok(failed, "day: failed = the overlap of [failure %g, replacement ready %g) per interval", a,
       b);
    ok(attained, "day: attainment = the share of requests sent in the interval meeting the SLO");
    ok(p99, "day: TTFT P99 within 2.2%% of the nearest rank over the rows");
    an_timeline_fini(&t);
    util_diag_fini(&d);
}

/* The static fleet's cost is exactly peak GPUs x window x price, the peak
 * the most replicas ready at once by SQL; the misses as docs/autoscaling.md
 * defines them, in SQL over the rows (no warm-up). */
static void check_day_report(sqlite3 *db)
{
    an_report r;
    util_diag d;
    util_diag_init(&d);
    is_int(an_report_compute(db, 1, &r, &d), 0, "day: report computed");
    const an_fleet *f = &r.fleet;
    ok(f->changing, "day: the report has the fleet section");
    double peak = support_q1(db, "SELECT max((SELECT count(*) FROM replicas b WHERE b.ready_s <="
                                 " a.ready_s AND coalesce(b.drain_s, b.retired_s, 1e300) >"
                                 " a.ready_s)) FROM replicas a WHERE a.ready_s IS NOT NULL");
    is_int(f->peak_ready_replicas, (long long)peak, "day: the peak of replicas ready at once");
    double want = f->peak_ready_gpus * (r.req.window_s / 3600) * r.cost.usd_per_gpu_hour *
                  (1 + r.cost.overhead_fraction);
    ok(f->peak_ready_gpus == peak && f->static_usd == want,
       "day: static cost $%.6f = %g GPUs x %g s x $%g/GPU-hour exactly", f->static_usd,
       f->peak_ready_gpus, r.req.window_s, r.cost.usd_per_gpu_hour);
    double fails = support_q1(db, "SELECT count(*) FROM requests WHERE status = 'failed' OR (" MISSED
                                  " AND arrival_s >= " FAILED_AT " AND arrival_s < " DOWN_UNTIL ")");
    double lag = support_q1(
        db, "SELECT count(*) FROM requests q WHERE status <> 'failed' AND " MISSED
            " AND NOT (arrival_s >= " FAILED_AT " AND arrival_s < " DOWN_UNTIL ") AND EXISTS"
            " (SELECT 1 FROM replicas p WHERE p.created_s > 0 AND p.replica <> " REPLACEMENT
            " AND q.arrival_s >= p.created_s AND q.arrival_s < coalesce(p.ready_s, p.retired_s,"
            " 1e300))");
    is_int(f->sent, (long long)support_q1(db, "SELECT count(*) FROM requests"),
           "day: every request sent counted");
    is_int(f->missed_failures, (long long)fails, "day: %lld missed because of the failure",
           (long long)f->missed_failures);
    is_int(f->missed_lag, (long long)lag, "day: %lld missed during scale-up lag",
           (long long)f->missed_lag);
    ok(f->missed_lag > 0 && f->missed_failures > 0, "day: both shares are tested non-zero");
    cJSON *j = an_report_json(&r, false);
    ok(cJSON_GetObjectItem(j, "fleet") != NULL, "day: its JSON has fleet");
    cJSON_Delete(j);
    an_report_fini(&r);
    util_diag_fini(&d);
}

/* The named series of the panel named y_label, or NULL. */
static const an_plot_series *plot_series(const an_plot *p, const char *y_label, const char *name)
{
    for (int i = 0; i < p->n_panels; i++)
        for (int k = 0; !strcmp(p->panels[i].y_label, y_label) && k < p->panels[i].n_series; k++)
            if (!strcmp(p->panels[i].series[k].name, name)) return &p->panels[i].series[k];
    return NULL;
}

/* `plot timeline` draws the failed replicas and the TTFT P99 as the
 * timeline has them, point for point (its NaN intervals left out). */
static void check_day_plot(sqlite3 *db)
{
    an_timeline t;
    an_plot p;
    util_diag d;
    util_diag_init(&d);
    an_plot_request req = {.kind = AN_PLOT_TIMELINE, .file = "day.db", .interval_s = 1};
    int rc = an_timeline_compute(db, 1, 1, -1, &t, &d) || an_plot_compute(db, &req, &p, &d);
    is_int(rc, 0, "day: plot timeline computed");
    const an_plot_series *failed = plot_series(&p, "replicas", "failed");
    const an_plot_series *p99 = plot_series(&p, "TTFT of the requests sent", "P99");
    ok(failed && failed->n == t.n && plot_series(&p, "SLO attainment", "attainment"),
       "day: the plot has the failed replicas and the attainment");
    bool same = failed != NULL && p99 != NULL;
    for (size_t i = 0, k = 0; same && i < t.n; i++) {
        same &= failed->y[i] == t.failed[i];
        if (!isnan(t.ttft_p99_s[i])) same &= k < p99->n && p99->y[k++] == t.ttft_p99_s[i];
    }
    ok(same, "day: the plot's failed and P99 points are the timeline's");
    an_plot_fini(&p);
    an_timeline_fini(&t);
    util_diag_fini(&d);
}

static void test_day(void)
{
    sqlite3 *db = support_run_json(base, day_sets, false);
    ok(db != NULL, "day: the run is recorded");
    if (!db) return;
    check_day_timeline(db);
    check_day_report(db);
    check_day_plot(db);
    sqlite3_close(db);
}

/* Failures listed after the run changes nothing: not a draw, not a row. */
static void test_unchanged(void)
{
    support_rows a, b;
    const char *const later[] = {"cluster.failures={\"at_s\": [1e6], \"repair_s\": 1}", NULL};
    const char *const clock[] = {"cluster.failures={\"mtbf_s\": 1e9, \"repair_s\": 1}", NULL};
    is_int(support_run(base, NULL, &a, NULL), 0, "unchanged: the run without failures");
    is_int(support_run(base, later, &b, NULL), 0, "unchanged: with a failure after the end");
    ok(support_rows_equal(&a, &b), "unchanged: a failure after the end changes no row");
    support_rows_fini(&b);
    is_int(support_run(base, clock, &b, NULL), 0, "unchanged: with a clock that never rings");
    ok(support_rows_equal(&a, &b), "unchanged: the failure stream changes no other draw");
    support_rows_fini(&b);
    support_rows_fini(&a);
}

static void refused(const char *set, const char *want)
{
    const char *const sets[] = {set, NULL};
    char *err = support_refusal(base, sets);
    ok(err != NULL, "refused: %s", set);
    if (err) has_str(err, want, "refused: %s says %s", set, want);
    free(err);
}

static void test_refusals(void)
{
    refused("cluster.failures={\"mtbf_s\": 100}", "cluster.failures.repair_s: missing");
    refused("cluster.failures={}", "cluster.failures: set mtbf_s, at_s or spot");
    refused("cluster.failures={\"at_s\": [3, -1]}", "cluster.failures.at_s[1]");
    refused("cluster.failures={\"at_s\": [3], \"on_failure\": \"drop\"}",
            "cluster.failures.on_failure");
    refused("cluster.failures={\"spot\": {\"notice_s\": 30}}", "cluster.failures.spot: set mtbf_s");
    refused("cluster.failures={\"spot\": {\"mtbf_s\": 100}}", "cluster.failures.repair_s: missing");
    refused("cluster.failures={\"at_s\": [3], \"mtbf\": 3}", "cluster.failures.mtbf");
    const char *const pools[] = {
        "cluster.pools=[{\"name\": \"a\", \"gpu\": \"h100-sxm\", \"failures\": {\"mtbf_s\": 9}}]",
        NULL};
    char *err = support_refusal(base, pools);
    ok(err && strstr(err, "cluster.pools[0].failures.repair_s"), "refused: a pool's path (%s)",
       err ? err : "accepted");
    free(err);
}

/* The shipped day (examples/day.json), compressed into an hour so that it
 * runs in a second or two: the daily shape's period an hour, the failure
 * at 45 minutes.  The autoscaler follows the shape up and down, the
 * failure's down time runs until its pool's next replica is ready, and
 * the SLOs hold. */
static void test_day_example(const char *root)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/day.json", root);
    char *json = runner_read_or_bail(path);
    const char *const hour[] = {"stop.duration_s=3600",
                                "workload.arrival.rate_profile.daily.period_s=3600",
                                "workload.arrival.rate_profile.daily.phase_s=1800",
                                "cluster.failures.at_s=[2700]", NULL};
    sqlite3 *db = support_run_json(json, hour, false);
    ok(db != NULL, "day example, compressed to an hour: runs");
    if (!db) {
        free(json);
        return;
    }
    double peak = support_q1(db, "WITH ev AS (SELECT ready_s t, 1 d FROM replicas WHERE ready_s"
                                 " IS NOT NULL UNION ALL SELECT retired_s, -1 FROM replicas WHERE"
                                 " end_reason <> 'end_of_run') SELECT max(c) FROM (SELECT sum(d)"
                                 " OVER (ORDER BY t ROWS UNBOUNDED PRECEDING) c FROM ev)");
    ok(peak > 2, "the autoscaler grows the fleet past its 2 replicas at the peak (%g)", peak);
    ok(support_q1(db, "SELECT count(*) FROM replicas WHERE end_reason = 'drained'") > 0,
       "and drains replicas as the traffic falls");
    an_report r;
    util_diag d;
    util_diag_init(&d);
    if (an_report_compute(db, 1, &r, &d) == 0) {
        is_int((long long)r.failures.failed_replicas, 1, "one replica failed");
        /* down from the failure until the first replica made after it is ready,
         * or the run's end: its replacement, due 900 s later at the hour's
         * end, is drained before it is ready as the traffic has fallen */
        double down = support_q1(db, "SELECT coalesce(min(ready_s), (SELECT max(retired_s) FROM"
                                     " replicas)) - 2700 FROM replicas WHERE created_s >= 2700"
                                     " AND ready_s IS NOT NULL");
        double ready = support_q1(db, "SELECT sum(max(0, retired_s - ready_s)) FROM replicas");
        ok(down > 900, "the failure cost %.1f s of a replica", down);
        is_near(r.failures.availability, ready / (ready + down), 1e-9,
                "availability %.4f: ready / (ready + down) replica-time",
                r.failures.availability);
        ok(r.req.attainment > 0.99, "and the SLOs hold (attainment %.4f)",
           r.req.attainment);
        an_report_fini(&r);
    } else {
        ok(false, "day example: report");
    }
    util_diag_fini(&d);
    sqlite3_close(db);
    free(json);
}

int main(int argc, char **argv)
{
    if (argc < 2 || support_init()) return 1;
    base = support_scenario_text("fleet-base.json");
    test_at();
    test_lifecycle();
    test_on_failure();
    test_spot();
    test_spot_availability();
    test_spec();
    test_draining_timeline();
    test_poisson();
    test_availability();
    test_no_spare();
    test_day();
    test_unchanged();
    test_refusals();
    test_day_example(argv[1]);
    free(base);
    support_fini();
    return tap_done();
}
