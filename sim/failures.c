/*
 * failures.c: unplanned failures and spot take-backs of a pool's replicas
 * (cluster.failures, docs/failures.md) -- the keys, and the events that
 * fail, take back and replace replicas through the fleet (fleet.c).
 *
 * A failure comes from a list of instants (at_s: the ready replica of the
 * pool with the lowest id fails) or from a clock each ready replica starts
 * when it becomes ready: exponential, at rate GPUs / mtbf_s, drawn from the
 * pool's own stream, so a scenario's other draws are the same with
 * failures or without (common random numbers).  A failed replica's
 * requests fail to their clients or go back to the router (on_failure),
 * and a replacement of its pool is made repair_s later, ready after the
 * lifecycle's start-up time (lifecycle.c).  A spot take-back is a notice:
 * the replica drains at once (takes nothing new, finishes what it runs)
 * and, notice_s later, whatever it still holds fails as on_failure says;
 * its replacement is made repair_s after the notice.
 *
 * The clocks never stop by themselves, so the run would not end: the
 * engine's loop stops once only this file's events (and the autoscaler's)
 * are left and no request is in flight (sim__fa_pending) -- nothing could arrive any more.
 */
#include "sim_int.h"

#include <gsl/gsl_randist.h>
#include <stdlib.h>

/* ---- the keys ---- */

/* EC2's spot interruption notice: "a warning that is issued two minutes
 * before Amazon EC2 stops or terminates your Spot Instance" (AWS EC2 User
 * Guide, Spot Instance interruption notices). */
#define SIM_SPOT_NOTICE_S 120.0

static const char *const on_failure_names[] = {"fail", "retry", NULL};

static const util_field spot_fields[] = {
    /* no defaults written: an absent cluster.failures stays absent */
    {.key = "notice_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 1e6,
     .doc = "the take-back's notice: the replica drains at once and fails this long after "
            "(default 120: EC2's two-minute spot interruption notice; GCE gives spot VMs 30)"},
    {.key = "mtbf_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 1e-3, .max = 1e12,
     .doc = "mean time between take-backs per replica (an instance), exponential"},
    {.key = "at_s", .type = UTIL_T_NUMBERS, .unit = "s", .min = 1, .max = 100000,
     .doc = "notices at these instants, each to the ready replica of the pool with the lowest "
            "id"},
    {0},
};

const util_field sim__failure_fields[] = {
    {.key = "mtbf_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 1e-3, .max = 1e12,
     .doc = "mean time between failures per GPU: a replica of g GPUs fails at rate g / mtbf_s, "
            "exponential, from the time it is ready (needs repair_s)"},
    {.key = "at_s", .type = UTIL_T_NUMBERS, .unit = "s", .min = 1, .max = 100000,
     .doc = "failures at these instants, each of the ready replica of the pool with the lowest "
            "id (none ready: nothing fails)"},
    {.key = "repair_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 1e9,
     .doc = "a replacement of the pool is made this long after a failure (or a spot notice), "
            "ready after the lifecycle's start-up time; absent: never replaced (at_s only)"},
    {.key = "on_failure", .type = UTIL_T_STRING, .choices = on_failure_names,
     .doc = "what a failed replica's requests see: fail (an error to the client, status failed "
            "with the replica's id, retried as workload.retry says -- a gateway's 503; Envoy "
            "retries nothing without a retry policy) or retry (the router sends them again, "
            "their KV cache recomputed); default fail"},
    {.key = "spot", .type = UTIL_T_OBJECT, .sub = spot_fields,
     .doc = "spot replicas taken back by the cloud after a notice (mtbf_s or at_s)"},
    {0},
};

/* A list of instants: each at or after 0. */
static int check_instants(const cJSON *list, const char *path, util_diag *d)
{
    int rc = UTIL_OK, i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, list)
    {
        if (t->valuedouble < 0)
            rc = util_diag_add(d, "%s.at_s[%d]: %g is before the run starts (0)", path, i,
                               t->valuedouble);
        i++;
    }
    return rc;
}

static int read_spot(sim_failures *f, const cJSON *o, const char *path, util_diag *d)
{
    const cJSON *spot = util_json_member(o, "spot");
    if (!spot) return UTIL_OK;
    f->notice_s = util_json_number(spot, "notice_s", SIM_SPOT_NOTICE_S);
    f->spot_mtbf_s = util_json_number(spot, "mtbf_s", 0);
    f->spot_at_s = util_json_member(spot, "at_s");
    char *sp = util_xasprintf("%s.spot", path);
    int rc = check_instants(f->spot_at_s, sp, d);
    if (!f->spot_at_s && f->spot_mtbf_s <= 0)
        rc = util_diag_add(d, "%s: set mtbf_s or at_s (when the cloud takes replicas back)", sp);
    if (f->spot_mtbf_s > 0 && f->repair_s < 0)
        rc = util_diag_add(d, "%s.repair_s: missing: spot.mtbf_s takes replicas back without "
                              "end, so they must be replaced", path);
    free(sp);
    return rc;
}

int sim__fa_read(sim_pool *p, const cJSON *obj, const char *path, util_diag *d)
{
    sim_failures *f = &p->failures;
    *f = (sim_failures){.repair_s = -1};
    const cJSON *o = util_json_member(obj, "failures");
    if (!o) return UTIL_OK;
    char *fp = util_xasprintf("%s.failures", path);
    f->mtbf_s = util_json_number(o, "mtbf_s", 0);
    f->at_s = util_json_member(o, "at_s");
    f->repair_s = util_json_number(o, "repair_s", -1);
    f->retry = util_json_choice(o, "on_failure", on_failure_names) == 1;
    int rc = check_instants(f->at_s, fp, d);
    if (f->mtbf_s > 0 && f->repair_s < 0)
        rc = util_diag_add(d, "%s.repair_s: missing: mtbf_s fails replicas without end, so "
                              "they must be replaced", fp);
    if (!f->at_s && f->mtbf_s <= 0 && !util_json_member(o, "spot"))
        rc = util_diag_add(d, "%s: set mtbf_s, at_s or spot (when replicas fail)", fp);
    if (read_spot(f, o, fp, d)) rc = UTIL_EINPUT;
    free(fp);
    return rc;
}

static bool pool_fails(const sim_pool *p)
{
    const sim_failures *f = &p->failures;
    return f->mtbf_s > 0 || f->at_s || f->spot_mtbf_s > 0 || f->spot_at_s;
}

/* ---- the engine's part ---- */

/* Stream ids past the workloads' (kind x 1000 + index, kinds up to 10) and
 * the router's: one failure stream and one spot stream a pool. */
enum { STREAM_FAILURES = 20000, STREAM_SPOT = 21000 };

struct sim__fa {
    gsl_rng **fail, **spot; /* [pool]: its clocks' draws; NULL where it has none */
    int64_t pending;        /* this file's events in the heap */
};

static void push(sim_engine *e, int64_t at, sim__handler fn, int64_t arg)
{
    e->fa->pending++;
    sim__heap_push(&e->events, at, fn, NULL, arg);
}

/* A handler of this file's runs: one event fewer pending. */
static void popped(sim_engine *e)
{
    e->fa->pending--;
}

static void repair_event(sim_engine *e, void *subject, int64_t failed)
{
    (void)subject;
    popped(e);
    const sim__slot *s = &e->fleet.by_id[failed];
    if (!sim__as_replaces(e, s->pool)) return; /* the autoscaler's spec shrank meanwhile */
    sim__fl_add(e, s->pool, s->group, sim__lc_ready_after_ns(e, s->pool));
}

/* The failed (or taken back) replica's replacement, repair_s from now. */
static void replace(sim_engine *e, const sim__replica *rp)
{
    double repair_s = rp->pool->failures.repair_s;
    if (repair_s >= 0) push(e, e->now + sim__ns(repair_s), repair_event, rp->id);
}

static void fail_now(sim_engine *e, sim__replica *rp)
{
    replace(e, rp);
    sim__fl_fail(e, rp->id, !rp->pool->failures.retry);
}

static void reclaim_event(sim_engine *e, void *subject, int64_t id)
{
    (void)subject;
    popped(e);
    sim__replica *rp = sim__fl_get(e, (int32_t)id);
    if (rp) sim__fl_fail(e, rp->id, !rp->pool->failures.retry); /* else it drained in time */
}

static void take_back(sim_engine *e, sim__replica *rp)
{
    replace(e, rp);
    push(e, e->now + sim__ns(rp->pool->failures.notice_s), reclaim_event, rp->id);
    rp->taken_back = true;
    sim__fl_drain(e, rp->id, (sim__drain)rp->pool->lifecycle.drain);
}

/* A replica's clock rang: it fails (or is taken back) if it still serves. */
static void fail_clock(sim_engine *e, void *subject, int64_t id)
{
    (void)subject;
    popped(e);
    sim__replica *rp = sim__fl_get(e, (int32_t)id);
    if (rp && !rp->draining) fail_now(e, rp);
}

static void spot_clock(sim_engine *e, void *subject, int64_t id)
{
    (void)subject;
    popped(e);
    sim__replica *rp = sim__fl_get(e, (int32_t)id);
    if (rp && !rp->draining) take_back(e, rp);
}

/* The ready replica of pool `pool` with the lowest id, or NULL. */
static sim__replica *first_ready(const sim_engine *e, int pool)
{
    for (int32_t i = 0; i < e->fleet.n_ids; i++) {
        sim__replica *rp = sim__fl_get(e, i);
        if (rp && rp->pool->index == pool && rp->ready_ns >= 0 && !rp->draining) return rp;
    }
    return NULL;
}

/* An instant of a list: arg is the pool's index. */
static void at_fail(sim_engine *e, void *subject, int64_t pool)
{
    (void)subject;
    popped(e);
    sim__replica *rp = first_ready(e, (int)pool);
    if (rp) fail_now(e, rp);
}

static void at_spot(sim_engine *e, void *subject, int64_t pool)
{
    (void)subject;
    popped(e);
    sim__replica *rp = first_ready(e, (int)pool);
    if (rp) take_back(e, rp);
}

static void push_instants(sim_engine *e, const cJSON *list, sim__handler fn, int pool)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, list) push(e, sim__ns(t->valuedouble), fn, pool);
}

void sim__fa_init(sim_engine *e)
{
    const sim_scenario *sc = e->sc;
    bool any = false;
    for (int i = 0; i < sc->n_pools; i++) any |= pool_fails(&sc->pools[i]);
    if (!any) return;
    e->fa = util_xcalloc(1, sizeof *e->fa);
    e->fa->fail = util_xcalloc((size_t)sc->n_pools, sizeof *e->fa->fail);
    e->fa->spot = util_xcalloc((size_t)sc->n_pools, sizeof *e->fa->spot);
    for (int i = 0; i < sc->n_pools; i++) {
        const sim_failures *f = &sc->pools[i].failures;
        if (f->mtbf_s > 0) e->fa->fail[i] = util_rng_stream(sc->seed, STREAM_FAILURES + (uint64_t)i);
        if (f->spot_mtbf_s > 0) e->fa->spot[i] = util_rng_stream(sc->seed, STREAM_SPOT + (uint64_t)i);
        push_instants(e, f->at_s, at_fail, i);
        push_instants(e, f->spot_at_s, at_spot, i);
    }
}

void sim__fa_ready(sim__replica *rp)
{
    sim_engine *e = rp->e;
    if (!e->fa) return;
    const sim_pool *p = rp->pool;
    gsl_rng *fail = e->fa->fail[p->index], *spot = e->fa->spot[p->index];
    if (fail) push(e, e->now + sim__ns(gsl_ran_exponential(fail, p->failures.mtbf_s / p->gpus)),
                   fail_clock, rp->id);
    if (spot) push(e, e->now + sim__ns(gsl_ran_exponential(spot, p->failures.spot_mtbf_s)),
                   spot_clock, rp->id);
}

size_t sim__fa_pending(const sim_engine *e)
{
    return e->fa ? (size_t)e->fa->pending : 0;
}

void sim__fa_destroy(sim_engine *e)
{
    if (!e->fa) return;
    for (int i = 0; i < e->sc->n_pools; i++) {
        gsl_rng_free(e->fa->fail[i]);
        gsl_rng_free(e->fa->spot[i]);
    }
    free(e->fa->fail);
    free(e->fa->spot);
    free(e->fa);
    e->fa = NULL;
}
