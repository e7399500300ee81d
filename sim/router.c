/*
 * router.c: which replica a request goes to, and the KV transfer of a
 * disaggregated cluster between its prefill and decode pools.
 *
 * A router chooses among a group of replicas: all of them, or, in a
 * disaggregated cluster, the prefill pool's (arrivals) and the decode pool's
 * (prefilled requests).  It sees what a real load balancer could: requests
 * in flight per replica, free KV blocks; `central_queue` keeps one queue per
 * group that replicas pull from when they can admit.
 */
#include "sim_int.h"

#include <stdlib.h>

/* ---- routing ---- */

static sim__replica *member(sim_engine *e, const sim__group *g, int i)
{
    return &e->replicas[g->first + i];
}

/* Fewest requests in flight (ties: the lowest index). */
static int least_outstanding(sim_engine *e, const sim__group *g)
{
    int best = 0;
    for (int i = 1; i < g->count; i++)
        if (member(e, g, i)->outstanding < member(e, g, best)->outstanding) best = i;
    return best;
}

/* Most free KV blocks (ties: the lowest index). */
static int least_kv(sim_engine *e, const sim__group *g)
{
    int best = 0;
    for (int i = 1; i < g->count; i++)
        if (sim__rp_free_blocks(member(e, g, i)) > sim__rp_free_blocks(member(e, g, best)))
            best = i;
    return best;
}

/* Two distinct replicas at random; the one with fewer in flight. */
static int power_of_two(sim_engine *e, const sim__group *g)
{
    if (g->count == 1) return 0;
    int a = (int)gsl_rng_uniform_int(e->router_rng, (unsigned long)g->count);
    int b = (int)gsl_rng_uniform_int(e->router_rng, (unsigned long)g->count - 1);
    if (b >= a) b++;
    return member(e, g, b)->outstanding < member(e, g, a)->outstanding ? b : a;
}

static int pick(sim_engine *e, sim__group *g)
{
    switch (e->sc->router) {
    case SIM_ROUTER_ROUND_ROBIN: {
        int i = g->rr_next;
        g->rr_next = (i + 1) % g->count;
        return i;
    }
    case SIM_ROUTER_RANDOM:
        return (int)gsl_rng_uniform_int(e->router_rng, (unsigned long)g->count);
    case SIM_ROUTER_LEAST_OUTSTANDING: return least_outstanding(e, g);
    case SIM_ROUTER_LEAST_KV: return least_kv(e, g);
    case SIM_ROUTER_POWER_OF_TWO: return power_of_two(e, g);
    case SIM_ROUTER_CENTRAL: break;
    }
    return 0;
}

void sim__rt_route(sim_engine *e, sim__group *g, sim__request *r)
{
    if (e->sc->router == SIM_ROUTER_CENTRAL) {
        /* Into the group's queue; every replica gets the chance to take it:
         * idle ones start, ones running ahead through decode steps stop at
         * the next step if they could admit it. */
        sim__rp_enqueue(member(e, g, 0), r);
        for (int i = 0; i < g->count; i++) sim__rp_wake(member(e, g, i));
        return;
    }
    sim__replica *rp = member(e, g, pick(e, g));
    sim__rp_enqueue(rp, r);
    sim__rp_wake(rp);
}

static void transfer_done(sim_engine *e, void *subject, int64_t from)
{
    sim__request *r = subject;
    sim__rp_link_done(&e->replicas[from], r); /* the prefill replica's blocks are free */
    if (r->dead) { /* its client gave up while it was on the link */
        sim__rq_free(e, r);
        return;
    }
    r->state = SIM__ARRIVED_KV;
    sim__rt_route(e, &e->groups[1], r);
}

void sim__rt_transfer(sim_engine *e, sim__replica *from, sim__request *r)
{
    const sim_scenario *sc = e->sc;
    r->state = SIM__TRANSFERRING;
    double bytes = (double)r->cached * from->pool->cost.kv_bytes_per_token;
    int64_t t = e->now + sim__ns(sc->link_latency_s + bytes / sc->link_bw);
    sim__heap_push(&e->events, t, transfer_done, r, from->id);
}

