/*
 * test_fleet.c: a cluster that changes while it runs (sim/fleet.c).  In the
 * middle of a run replicas are added (ready after a delay), drained (finish
 * what they hold, or hand their queue back) and failed (what they held
 * failed to the clients, or returned to the router), and every request is
 * accounted for: one row each, completed, rejected, timed out, or failed
 * with the failed replica's id; every replica a row with its life; and the
 * replicas left hold no KV block, in their counts and in their prefix
 * caches.  With meson -Dinvariants=true every replica is checked at every
 * iteration too.  The changes are the engine's internal API
 * (sim__fl_schedule): no scenario key uses them yet.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"
#include "support.h"
#include "tap.h"

#define S(x) ((int64_t)((x) * 1e9))

/* tests/scenarios/fleet-base.json: two H100 replicas on linear costs,
 * Poisson arrivals at 40/s for 15 s, clients that give up after 4 s. */
static char *base;

/* One prefill and one decode replica, joined by a link. */
#define DISAGG                                                                                     \
    "{\"seed\": 5, \"stop\": {\"duration_s\": 10}, \"cluster\": {\"engine\": \"ideal\", "          \
    "\"model\": \"llama-3.1-8b\", \"cost_model\": {\"kind\": \"linear\", \"iteration_s\": 0.01, "  \
    "\"prefill_s_per_token\": 0.0002, \"decode_step_s\": 0.005, \"decode_s_per_seq\": 0.0005}, "   \
    "\"pools\": [{\"name\": \"prefill\", \"gpu\": \"h100-sxm\", \"replicas\": 1}, {\"name\": "     \
    "\"decode\", \"gpu\": \"h100-sxm\", \"replicas\": 2}], \"disaggregated\": {\"prefill\": "      \
    "\"prefill\", \"decode\": \"decode\", \"link_gbs\": 10, \"link_latency_s\": 0.001}}, "         \
    "\"workload\": {\"arrival\": {\"process\": \"poisson\", \"rate_per_s\": 20}, "                 \
    "\"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 200}, \"output_tokens\": {\"dist\": "     \
    "\"uniform\", \"min\": 20, \"max\": 200}}}"

/* What a run left. */
typedef struct outcome {
    int rc;
    int64_t sent;
    int64_t free_blocks_short; /* over the replicas left: blocks not free at the end */
    int64_t cache_short;       /* ... and blocks missing from their caches' free queues */
    int64_t held;              /* ... and requests or sequences they still count */
    int left;                  /* replicas left in the table */
} outcome;

/* What the replicas left in the table still hold, into o. */
static void look_at_replicas(const sim_engine *e, outcome *o)
{
    for (int32_t i = 0; i < e->fleet.n_ids; i++) {
        const sim__replica *rp = sim__fl_get(e, i);
        if (!rp) continue;
        o->left++;
        o->free_blocks_short += rp->kv_capacity - sim__rp_free_blocks(rp);
        if (rp->pc_on) o->cache_short += rp->kv_capacity - rp->pc.free_len;
        o->held += rp->outstanding + rp->n_running + rp->swapped.n;
    }
}

/* Runs json (with sets) into rows, with the changes scheduled first. */
static outcome run_with(const char *json, const char *const *sets, const int64_t *at,
                        const sim__change *changes, int n, support_rows *rows)
{
    outcome o = {.rc = -100};
    sim_scenario sc;
    memset(rows, 0, sizeof *rows);
    if (support_scenario(json, sets, &sc, NULL)) return o;
    sim_sink sink = support_capture(rows);
    sim_engine *e = sim_engine_create(&sc, &sink);
    sim_engine_limit_in_flight(e, 0);
    for (int i = 0; i < n; i++) sim__fl_schedule(e, at[i], &changes[i]);
    o.rc = sim_engine_run(e, NULL, NULL, NULL);
    o.sent = e->next_request_id;
    look_at_replicas(e, &o);
    sim_engine_destroy(e);
    sim_scenario_fini(&sc);
    return o;
}

/* Every request sent has exactly one row, with a final status. */
static void check_every_request(const support_rows *r, const outcome *o, const char *what)
{
    is_int((long long)r->n, (long long)o->sent, "%s: one row per request sent", what);
    int64_t bad_id = 0, bad_status = 0;
    char *seen = util_xcalloc((size_t)o->sent + 1, 1);
    for (size_t i = 0; i < r->n; i++) {
        const sim_request_row *q = &r->req[i];
        if (q->id < 0 || q->id >= o->sent || seen[q->id]++) bad_id++;
        const char *s = q->status;
        if (strcmp(s, SIM_COMPLETED) && strcmp(s, SIM_REJECTED) && strcmp(s, SIM_TIMED_OUT) &&
            strcmp(s, SIM_FAILED))
            bad_status++;
    }
    free(seen);
    is_int((long long)bad_id, 0, "%s: every id once", what);
    is_int((long long)bad_status, 0, "%s: every row completed, rejected, timed out or failed",
           what);
}

static void check_nothing_held(const outcome *o, const char *what)
{
    is_int((long long)o->free_blocks_short, 0, "%s: every KV block of the replicas left is free",
           what);
    is_int((long long)o->cache_short, 0, "%s: and in their prefix caches' free queues", what);
    is_int((long long)o->held, 0, "%s: they count no request", what);
}

static int count_status(const support_rows *r, const char *status, int replica)
{
    int n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += !strcmp(r->req[i].status, status) &&
             (replica < 0 || r->req[i].replica == replica || r->req[i].decode_replica == replica);
    return n;
}

static const sim_replica_row *replica_row(const support_rows *r, int id)
{
    for (int i = 0; i < r->n_rep; i++)
        if (r->rep[i].replica == id) return &r->rep[i];
    return NULL;
}

/* Rows of replica id with a time (selected by `which`) after t. */
static int after(const support_rows *r, int id, double t, int which)
{
    int n = 0;
    for (size_t i = 0; i < r->n; i++) {
        const sim_request_row *q = &r->req[i];
        if (q->replica != id) continue;
        double v = which == 0 ? q->enqueue_s : q->first_scheduled_s;
        n += v > t + 1e-9;
    }
    return n;
}

/* Requests first scheduled on replica id before t. */
static int scheduled_before(const support_rows *r, int id, double t)
{
    int n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->req[i].replica == id && r->req[i].first_scheduled_s < t - 1e-9;
    return n;
}

/* Replica 2 is added at 2 s, ready at 3 s; replica 0 is drained at 4 s
 * (finishing its queue); replica 1 fails at 6 s, failing what it held;
 * replica 3, added at 6 s and ready at once, fails at 9 s, its requests
 * returned; replica 4, added at 9 s, serves to the end. */
static void test_life(const char *what, const char *const *sets)
{
    const int64_t at[] = {S(2), S(4), S(6), S(6), S(9), S(9)};
    const sim__change ch[] = {
        {.kind = SIM__ADD, .ready_after_ns = S(1)},
        {.kind = SIM__DRAIN, .replica = 0, .how = SIM__DRAIN_FINISH},
        {.kind = SIM__FAIL, .replica = 1, .fail_requests = true},
        {.kind = SIM__ADD, .ready_after_ns = 0},
        {.kind = SIM__FAIL, .replica = 3, .fail_requests = false},
        {.kind = SIM__ADD, .ready_after_ns = 0},
    };
    support_rows r;
    outcome o = run_with(base, sets, at, ch, 6, &r);
    is_int(o.rc, 0, "%s: the run completes", what);
    check_every_request(&r, &o, what);
    check_nothing_held(&o, what);
    is_int(o.left, 2, "%s: replicas 2 and 4 are left", what);
    ok(count_status(&r, SIM_FAILED, 1) > 0, "%s: replica 1's failure failed requests", what);
    is_int(count_status(&r, SIM_FAILED, -1), count_status(&r, SIM_FAILED, 1),
           "%s: every failed request names replica 1", what);
    ok(count_status(&r, SIM_COMPLETED, 4) > 0, "%s: replica 4 served", what);
    is_int(after(&r, 0, 4, 0), 0, "%s: nothing joins replica 0's queue once it drains", what);
    ok(after(&r, 2, 3, 1) > 0, "%s: replica 2 served once ready", what);
    is_int(scheduled_before(&r, 2, 3), 0, "%s: and not before its ready time", what);
    is_int(r.n_rep, 5, "%s: five replica rows", what);
    const sim_replica_row *r0 = replica_row(&r, 0), *r1 = replica_row(&r, 1),
                          *r2 = replica_row(&r, 2), *r3 = replica_row(&r, 3);
    ok(r0 && !strcmp(r0->end_reason, SIM_DRAINED), "%s: replica 0 ended drained", what);
    ok(r0 && r0->retired_s >= 4, "%s: after its drain began (%.3f s)", what,
       r0 ? r0->retired_s : NAN);
    ok(r1 && !strcmp(r1->end_reason, SIM_FAILED), "%s: replica 1 ended failed", what);
    ok(r1 && fabs(r1->retired_s - 6) < 1e-9, "%s: at 6 s", what);
    ok(r2 && fabs(r2->created_s - 2) < 1e-9, "%s: replica 2 made at 2 s", what);
    ok(r2 && fabs(r2->ready_s - 3) < 1e-9, "%s: ready at 3 s", what);
    ok(r2 && !strcmp(r2->end_reason, SIM_END_OF_RUN), "%s: there at the end", what);
    ok(r3 && !strcmp(r3->end_reason, SIM_FAILED), "%s: replica 3 ended failed", what);
    support_rows_fini(&r);
}

/* Requests returned from a failed replica start again elsewhere: none
 * fails, and those it had scheduled are served by the others. */
static void test_returned(void)
{
    const int64_t at[] = {S(5)};
    const sim__change ch[] = {{.kind = SIM__FAIL, .replica = 0, .fail_requests = false}};
    support_rows r;
    outcome o = run_with(base, (const char *[]){"workload.timeout_s=1e6", NULL}, at, ch, 1, &r);
    is_int(o.rc, 0, "returned: the run completes");
    check_every_request(&r, &o, "returned");
    check_nothing_held(&o, "returned");
    is_int(count_status(&r, SIM_FAILED, -1), 0, "returned: no request fails");
    is_int(count_status(&r, SIM_COMPLETED, -1), (int)o.sent, "returned: every request completes");
    is_int(after(&r, 0, 5, 1), 0, "returned: replica 0 schedules nothing after its failure");
    support_rows_fini(&r);
}

/* Handed back: replica 0's queue goes to replica 1 at once. */
static void test_hand_back(void)
{
    const int64_t at[] = {S(3)};
    const sim__change ch[] = {{.kind = SIM__DRAIN, .replica = 0, .how = SIM__DRAIN_HAND_BACK}};
    /* one replica's worth of arrivals on two: each holds a queue */
    const char *sets[] = {"workload.timeout_s=1e6", "workload.arrival.rate_per_s=60", NULL};
    support_rows r;
    outcome o = run_with(base, sets, at, ch, 1, &r);
    is_int(o.rc, 0, "hand back: the run completes");
    check_every_request(&r, &o, "hand back");
    check_nothing_held(&o, "hand back");
    is_int(count_status(&r, SIM_COMPLETED, -1), (int)o.sent, "hand back: every request completes");
    is_int(after(&r, 0, 3, 1), 0, "hand back: replica 0 admits nothing after 3 s");
    const sim_replica_row *r0 = replica_row(&r, 0);
    ok(r0 && !strcmp(r0->end_reason, SIM_DRAINED), "hand back: replica 0 ended drained");
    support_rows_fini(&r);
}

/* A replica that fails with requests still in its front end (HTTP,
 * tokenisation) fails them too; one drained sends them back. */
static void test_front_end(void)
{
    const int64_t at[] = {S(3), S(5)};
    const sim__change ch[] = {
        {.kind = SIM__FAIL, .replica = 0, .fail_requests = true},
        {.kind = SIM__DRAIN, .replica = 1, .how = SIM__DRAIN_FINISH},
    };
    support_rows r;
    const char *sets[] = {"cluster.host.frontend_s=0.2", "cluster.replicas=3", NULL};
    outcome o = run_with(base, sets, at, ch, 2, &r);
    is_int(o.rc, 0, "front end: the run completes");
    check_every_request(&r, &o, "front end");
    int failed_before_queue = 0, other_failed = 0;
    for (size_t i = 0; i < r.n; i++) {
        const sim_request_row *q = &r.req[i];
        if (strcmp(q->status, SIM_FAILED)) continue;
        if (isnan(q->enqueue_s) && q->replica == 0) failed_before_queue++;
        if (q->replica != 0) other_failed++;
    }
    ok(failed_before_queue > 0, "front end: requests in replica 0's front end fail with it (%d)",
       failed_before_queue);
    is_int(other_failed, 0, "front end: those in drained replica 1's go elsewhere");
    is_int(after(&r, 1, 5.0, 0), 0, "front end: none joins replica 1's queue after its drain");
    support_rows_fini(&r);
}

/* A request returned from one failed replica and still waiting at the
 * next when that one fails too names the second in its row. */
static void test_twice_failed(void)
{
    const int64_t at[] = {S(3), S(3.05), S(3.05)};
    const sim__change ch[] = {
        {.kind = SIM__FAIL, .replica = 0, .fail_requests = false},
        {.kind = SIM__FAIL, .replica = 1, .fail_requests = true},
        {.kind = SIM__ADD, .ready_after_ns = S(0.5)},
    };
    const char *sets[] = {"workload.timeout_s=1e6", "workload.arrival.rate_per_s=60", NULL};
    support_rows r;
    outcome o = run_with(base, sets, at, ch, 3, &r);
    is_int(o.rc, 0, "failed twice: the run completes");
    check_every_request(&r, &o, "failed twice");
    ok(count_status(&r, SIM_FAILED, 1) > 0, "failed twice: replica 1's failure failed requests");
    is_int(count_status(&r, SIM_FAILED, -1), count_status(&r, SIM_FAILED, 1),
           "failed twice: each names replica 1, not replica 0 it was returned from");
    support_rows_fini(&r);
}

/* Every replica gone: what arrives then is refused, and a replica added
 * later serves again. */
static void test_empty_group(void)
{
    const int64_t at[] = {S(3), S(3), S(6)};
    const sim__change ch[] = {
        {.kind = SIM__FAIL, .replica = 0, .fail_requests = true},
        {.kind = SIM__FAIL, .replica = 1, .fail_requests = true},
        {.kind = SIM__ADD, .ready_after_ns = S(1)},
    };
    support_rows r;
    outcome o = run_with(base, (const char *[]){"workload.timeout_s=1e6", NULL}, at, ch, 3, &r);
    is_int(o.rc, 0, "no replica: the run completes");
    check_every_request(&r, &o, "no replica");
    int refused = 0, served_late = 0;
    for (size_t i = 0; i < r.n; i++) {
        const sim_request_row *q = &r.req[i];
        bool gap = q->arrival_s > 3 && q->arrival_s < 6.99;
        refused += gap && !strcmp(q->status, SIM_REJECTED);
        served_late += q->arrival_s > 7.1 && !strcmp(q->status, SIM_COMPLETED);
    }
    ok(refused > 50, "no replica: arrivals between 3 s and 7 s are refused (%d)", refused);
    ok(served_late > 50, "no replica: the replica ready at 7 s serves (%d)", served_late);
    support_rows_fini(&r);
}

/* Disaggregated: a decode replica fails, its sequences start again at the
 * prefill pool; the other decode replica serves them. */
static void test_disaggregated(void)
{
    const int64_t at[] = {S(4)};
    const sim__change ch[] = {{.kind = SIM__FAIL, .replica = 1, .fail_requests = false}};
    support_rows r;
    outcome o = run_with(DISAGG, NULL, at, ch, 1, &r);
    is_int(o.rc, 0, "disaggregated: the run completes");
    check_every_request(&r, &o, "disaggregated");
    check_nothing_held(&o, "disaggregated");
    is_int(count_status(&r, SIM_COMPLETED, -1), (int)o.sent,
           "disaggregated: every request completes");
    int late_on_1 = 0;
    for (size_t i = 0; i < r.n; i++)
        late_on_1 += r.req[i].decode_replica == 1 && r.req[i].decode_enqueue_s > 4;
    is_int(late_on_1, 0, "disaggregated: nothing reaches decode replica 1 after it failed");
    support_rows_fini(&r);
}

int main(void)
{
    if (support_init()) return 1;
    base = support_scenario_text("fleet-base.json");
    test_life("round robin", NULL);
    test_life("least outstanding", (const char *[]){"cluster.router=least_outstanding", NULL});
    test_life("central queue", (const char *[]){"cluster.router=central_queue", NULL});
    test_life("front end", (const char *[]){"cluster.host.frontend_s=0.05", NULL});
    /* a step ahead: failed and drained replicas hold finished requests' slots and blocks */
    test_life("a step ahead, chunked, starved, prefix caching",
              (const char *[]){"cluster.scheduler.async_scheduling=true",
                               "cluster.scheduler.policy=chunked",
                               "cluster.scheduler.prefix_caching=true",
                               "cluster.scheduler.kv_blocks=300", NULL});
    test_front_end();
    test_life("chunked, starved", (const char *[]){"cluster.scheduler.policy=chunked",
                                                   "cluster.scheduler.kv_blocks=300", NULL});
    test_life("swap", (const char *[]){"cluster.scheduler.preemption=swap",
                                       "cluster.scheduler.policy=prefill_first",
                                       "cluster.scheduler.kv_blocks=300", NULL});
    test_life("static", (const char *[]){"cluster.scheduler.policy=static",
                                         "cluster.scheduler.max_batch=8",
                                         "cluster.scheduler.batch_timeout_s=0.05", NULL});
    test_life("prefix caching, starved",
              (const char *[]){"cluster.scheduler.prefix_caching=true",
                               "cluster.router=prefix_affinity",
                               "cluster.scheduler.kv_blocks=300",
                               "workload={\"arrival\": {\"process\": \"poisson\", "
                               "\"rate_per_s\": 40}, \"timeout_s\": 4, \"shared_prefix\": "
                               "{\"num_groups\": 3, \"num_prompts_per_group\": 4, "
                               "\"system_prompt_len\": 400, \"question_len\": 100}, "
                               "\"output_tokens\": {\"dist\": \"exponential\", \"mean\": 80, "
                               "\"max\": 1000}}",
                               NULL});
    /* a session whose replica drained or failed is routed afresh */
    test_life("session affinity, sessions through a front end",
              (const char *[]){"cluster.router=session_affinity", "cluster.host.frontend_s=0.05",
                               "workload.arrival.rate_per_s=10",
                               "workload.sessions={\"turns\": 4, \"user_tokens\": 20, "
                               "\"think_s\": {\"dist\": \"fixed\", \"value\": 0.2}}",
                               NULL});
    test_returned();
    test_twice_failed();
    test_hand_back();
    test_empty_group();
    test_disaggregated();
    free(base);
    support_fini();
    return tap_done();
}
