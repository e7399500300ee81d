/*
 * router.c: which replica a request goes to, and the KV transfer of a
 * disaggregated cluster between its prefill and decode pools.
 *
 * A router chooses among a group of replicas: those of the request's
 * model's pools (all of them, when the fleet serves one model), or, in a
 * disaggregated cluster, the prefill pool's (arrivals) and the decode pool's
 * (prefilled requests).  It sees what a real load balancer could: requests
 * in flight per replica, free KV blocks, (prefix_affinity) which
 * replica's cache holds how much of a prompt, and (session_affinity) where
 * a task's last call went, as a session token would tell it; `central_queue`
 * keeps one queue per group that replicas pull from when they can admit.
 *
 * prefix_affinity scores each replica as Dynamo's KV router does (its
 * docs/architecture/kv_cache_routing.md: a prefill cost of the blocks not
 * cached there, weighted by --kv-overlap-score-weight, default 1, plus a
 * decode cost of its active blocks), in tokens: weight x (prompt tokens it
 * would prefill there) + (prompt tokens waiting in its queue + KV tokens in
 * use), and picks the lowest.  Weight 1 trades one token of cache hit
 * against one token of load; larger weights follow the cache further into
 * imbalance, 0 is load alone.
 */
#include "sim_int.h"

#include <math.h>
#include <stdlib.h>

/* ---- routing ---- */

static sim__replica *member(const sim__group *g, int i)
{
    return g->members[i];
}

static int round_robin(sim_engine *e, sim__group *g, const sim__request *r)
{
    (void)e, (void)r;
    int i = g->rr_next;
    g->rr_next = (i + 1) % g->n;
    return i;
}

static int random_member(sim_engine *e, sim__group *g, const sim__request *r)
{
    (void)r;
    return (int)gsl_rng_uniform_int(e->router_rng, (unsigned long)g->n);
}

/* Fewest requests in flight (ties: the lowest id). */
static int least_outstanding(sim_engine *e, sim__group *g, const sim__request *r)
{
    (void)e, (void)r;
    int best = 0;
    for (int i = 1; i < g->n; i++)
        if (member(g, i)->outstanding < member(g, best)->outstanding) best = i;
    return best;
}

/* Most free KV blocks (ties: the lowest id). */
static int least_kv(sim_engine *e, sim__group *g, const sim__request *r)
{
    (void)e, (void)r;
    int best = 0;
    for (int i = 1; i < g->n; i++)
        if (sim__rp_free_blocks(member(g, i)) > sim__rp_free_blocks(member(g, best))) best = i;
    return best;
}

/* Two distinct replicas at random; the one with fewer in flight. */
static int power_of_two(sim_engine *e, sim__group *g, const sim__request *r)
{
    (void)r;
    if (g->n == 1) return 0;
    int a = (int)gsl_rng_uniform_int(e->router_rng, (unsigned long)g->n);
    int b = (int)gsl_rng_uniform_int(e->router_rng, (unsigned long)g->n - 1);
    if (b >= a) b++;
    return member(g, b)->outstanding < member(g, a)->outstanding ? b : a;
}

/* The lowest weight x (tokens to prefill) + load (ties: the lowest id).
 * The caches are settled first: what a replica's last iteration allocated
 * has evicted what it had to. */
static int prefix_affinity(sim_engine *e, sim__group *g, const sim__request *r)
{
    int best = 0;
    double best_cost = INFINITY;
    for (int i = 0; i < g->n; i++) {
        sim__replica *rp = member(g, i);
        sim__rp_settle_cache(rp);
        int64_t in_use;
        double miss = (double)(r->prefill_target - sim__rp_cached_prefix(rp, r, &in_use));
        double load = (double)(rp->queued_tokens + rp->incoming_tokens) +
                      (double)sim__rp_used_blocks(rp, 0) * rp->pool->block_tokens;
        double cost = e->sc->prefix_weight * miss + load;
        if (cost < best_cost) best = i, best_cost = cost;
    }
    return best;
}

/* lora_affinity, the Gateway API Inference Extension's LoRA rule (its
 * scheduler's queueingThresholdLoRA, 128 waiting requests): among the
 * replicas whose GPU slots hold the request's adapter and whose queue is
 * shorter than lora_queue_threshold, the one with fewest requests in
 * flight; when none is, the one with fewest in flight of all (ties: the
 * lowest id).  A request for the base model goes by load alone.  The
 * threshold is the trade: 0 is load alone, a large one follows the
 * adapter into any imbalance. */
static int lora_affinity(sim_engine *e, sim__group *g, const sim__request *r)
{
    int best = -1, any = 0;
    for (int i = 0; i < g->n; i++) {
        const sim__replica *rp = member(g, i);
        if (rp->outstanding < member(g, any)->outstanding) any = i;
        if (!r->lora || !sim__lr_holds(rp, r->lora) ||
            sim__waitq_len(rp->q) >= e->sc->lora_queue_threshold)
            continue;
        if (best < 0 || rp->outstanding < member(g, best)->outstanding) best = i;
    }
    return best >= 0 ? best : any;
}

/* The member index of replica `id + 1` (a task's home), or -1 when it is
 * not in g: not yet routed to, drained, failed, or of another group. */
static int member_of(sim_engine *e, const sim__group *g, int32_t home)
{
    const sim__replica *rp = sim__fl_get(e, home - 1);
    for (int i = 0; rp && i < g->n; i++)
        if (member(g, i) == rp) return i;
    return -1;
}

/* session_affinity, llm-d's session-affinity scorer (llm-d-inference-
 * scheduler pkg/plugins/scorer/session_affinity.go at d5cbb322: the
 * response's x-session-token names the pod, the next request goes there)
 * bounded by load as the Gateway API Inference Extension bounds LoRA
 * affinity (queueingThresholdLoRA, 128 waiting requests) and SGLang's
 * cache_aware router leaves the cache for the shortest queue when loads
 * part: a task's call goes where its last call went unless that replica
 * has session_queue_threshold requests waiting or more, or is gone; then,
 * and for its first call, to the fewest in flight, which becomes its home.
 * The task is the session: the token a client would carry.  KV arriving
 * at a decode pool, and a single call, go by load alone. */
static int session_affinity(sim_engine *e, sim__group *g, const sim__request *r)
{
    sim__task *t = r->task;
    if (!t || r->state == SIM__ARRIVED_KV) return least_outstanding(e, g, r);
    int i = member_of(e, g, t->home);
    if (i >= 0 && sim__waitq_len(member(g, i)->q) < e->sc->session_queue_threshold) return i;
    i = least_outstanding(e, g, r);
    t->home = (int32_t)member(g, i)->id + 1;
    return i;
}

/* The central queue is the group's: any member takes it in (the first). */
static int first_member(sim_engine *e, sim__group *g, const sim__request *r)
{
    (void)e, (void)g, (void)r;
    return 0;
}

/* Each router's choice of a member, in SIM_ROUTERS's order. */
static int (*const pickers[SIM_N_ROUTERS])(sim_engine *, sim__group *, const sim__request *) = {
    [SIM_ROUTER_ROUND_ROBIN] = round_robin,
    [SIM_ROUTER_RANDOM] = random_member,
    [SIM_ROUTER_LEAST_OUTSTANDING] = least_outstanding,
    [SIM_ROUTER_LEAST_KV] = least_kv,
    [SIM_ROUTER_POWER_OF_TWO] = power_of_two,
    [SIM_ROUTER_CENTRAL] = first_member,
    [SIM_ROUTER_PREFIX_AFFINITY] = prefix_affinity,
    [SIM_ROUTER_LORA_AFFINITY] = lora_affinity,
    [SIM_ROUTER_SESSION_AFFINITY] = session_affinity,
};

/* Into the replica's queue, or the group's: with a central queue every
 * replica gets the chance to take it -- idle ones start, ones running ahead
 * through decode steps stop at the next step if they could admit it. */
static void enqueue(sim_engine *e, sim__group *g, sim__replica *rp, sim__request *r)
{
    sim__rp_enqueue(rp, r);
    if (e->sc->router != SIM_ROUTER_CENTRAL) {
        sim__rp_wake(rp);
        return;
    }
    for (int i = 0; i < g->n; i++) sim__rp_wake(member(g, i));
}

/* A request past the replica's front end (HTTP, tokenisation).  A replica
 * that was drained or failed meanwhile takes nothing new: the request goes
 * back to the router, or fails with the replica that failed it. */
static void reach_replica(sim_engine *e, void *subject, int64_t replica)
{
    sim__request *r = subject;
    const sim__slot *slot = &e->fleet.by_id[replica];
    sim__replica *rp = slot->rp;
    if (rp) {
        rp->incoming_tokens -= r->prompt;
        rp->incoming--;
    }
    if (r->dead) { /* its client gave up while the front end held it */
        sim__rq_free(e, r);
        return;
    }
    r->state = SIM__WAITING;
    if (rp && !rp->draining) {
        enqueue(e, rp->group, rp, r);
    } else if (slot->failed_requests) {
        sim__rq_fail_on(e, r, (int32_t)replica);
    } else {
        sim__rt_route(e, slot->group, r);
    }
}

void sim__rt_route(sim_engine *e, sim__group *g, sim__request *r)
{
    if (g->n == 0) { /* no replica ready: refused, as a gateway with no backend does */
        sim__rq_reject(e, r, SIM_NO_REPLICA);
        return;
    }
    sim__replica *rp = member(g, pickers[e->sc->router](e, g, r));
    const sim_pool *p = rp->pool;
    /* a new request passes the front end; a KV cache from a prefill pool does not */
    int64_t delay = r->state == SIM__WAITING
                        ? sim__ns(p->frontend_s + p->frontend_s_per_token * r->prompt)
                        : 0;
    if (delay > 0) {
        r->state = SIM__SENDING;
        rp->incoming_tokens += r->prompt; /* the router counts what it sent there */
        rp->incoming++;
        sim__heap_push(&e->events, e->now + delay, reach_replica, r, rp->id);
        return;
    }
    enqueue(e, g, rp, r);
}

static void transfer_done(sim_engine *e, void *subject, int64_t from)
{
    sim__request *r = subject;
    sim__replica *rp = sim__fl_get(e, (int32_t)from);
    if (rp) sim__rp_link_done(rp, r); /* the prefill replica's blocks are free */
    if (r->dead) { /* its client gave up while it was on the link */
        sim__rq_free(e, r);
        return;
    }
    r->state = SIM__ARRIVED_KV;
    sim__rt_route(e, e->fleet.groups[1], r);
}

void sim__rt_transfer(sim_engine *e, sim__replica *from, sim__request *r)
{
    const sim_scenario *sc = e->sc;
    r->state = SIM__TRANSFERRING;
    double bytes = (double)r->cached * from->pool->cost.kv_bytes_per_token;
    int64_t t = e->now + sim__ns(sc->link_latency_s + bytes / sc->link_bw);
    sim__heap_push(&e->events, t, transfer_done, r, from->id);
}

