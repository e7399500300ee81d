/*
 * fleet.c: the replica table and the groups routers choose from, and a
 * cluster that changes while it runs -- a replica added (ready after a
 * delay), drained (it takes nothing new and retires once it holds
 * nothing) or failed (its KV and prefix cache gone, what it held failed to
 * the clients or returned to the router).
 *
 * A replica's id is its handle: ids are never reused, the table maps each
 * to its replica or to NULL once it has retired, and what a request or an
 * event keeps of a replica is its id, so nothing dangles when the table
 * changes.  A replica's row is written when it retires, and for those still
 * in the table at the end of the run, in id order, as before there was a
 * table to change.
 */
#include "sim_int.h"

#include <assert.h>
#include <stdlib.h>

/* ---- the table ---- */

static int32_t new_id(sim__fleet *f, const sim_pool *p, sim__group *g)
{
    if (f->n_ids == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->by_id = util_xrealloc(f->by_id, (size_t)f->cap * sizeof *f->by_id);
    }
    f->by_id[f->n_ids] = (sim__slot){.pool = p, .group = g};
    return f->n_ids++;
}

/* ---- groups: membership lists in id order ---- */

static sim__group *group_new(sim__fleet *f, const sim_pool *order_of)
{
    sim__group *g = util_xcalloc(1, sizeof *g);
    g->ordered = util_xmalloc(sizeof *g->ordered);
    sim__waitq_init(&g->central, sim__policy_compose(g->ordered, order_of));
    f->groups = util_xrealloc(f->groups, (size_t)(f->n_groups + 1) * sizeof *f->groups);
    f->groups[f->n_groups++] = g;
    return g;
}

static void group_free(sim__group *g)
{
    sim__waitq_fini(&g->central);
    free(g->ordered);
    free(g->members);
    free(g);
}

/* Ids only grow, so a member joins at the end of the list or, ready
 * before an older one, where its id puts it. */
static void group_join(sim__group *g, sim__replica *rp)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 8;
        g->members = util_xrealloc(g->members, (size_t)g->cap * sizeof *g->members);
    }
    int i = g->n;
    while (i > 0 && g->members[i - 1]->id > rp->id) {
        g->members[i] = g->members[i - 1];
        i--;
    }
    g->members[i] = rp;
    g->n++;
}

static void group_leave(sim__group *g, const sim__replica *rp)
{
    int i = 0;
    while (i < g->n && g->members[i] != rp) i++;
    if (i == g->n) return; /* not ready yet, or left already */
    for (g->n--; i < g->n; i++) g->members[i] = g->members[i + 1];
    if (g->rr_next >= g->n) g->rr_next = 0;
}

/* ---- a replica's life ---- */

/* ---- nodes (kv_offload.scope "node") ----
 *
 * A pool's replicas fill nodes in the order they are made: a node holds
 * gpus_per_node / (the replica's GPUs) of them, and its host memory and
 * disk tiers are cpu_gib and disk_gib, shared.  A replica larger than a
 * node spans several, alone, with the tiers of them all.  A node goes with
 * its last replica, and a new replica fills the oldest node with room. */

static sim__node *node_new(sim_engine *e, const sim_pool *p)
{
    int per_node = p->cost.ep.gpus_per_node;
    sim__node *n = util_xmalloc(sizeof *n);
    *n = (sim__node){.pool = p, .slots = per_node >= p->gpus ? per_node / p->gpus : 1};
    int span = (p->gpus + per_node - 1) / per_node;
    sim__rp_tiers_init(e, p, span, &n->cpu, &n->disk);
    sim__node **end = &e->fleet.nodes;
    while (*end) end = &(*end)->next;
    *end = n;
    return n;
}

static void node_join(sim_engine *e, sim__replica *rp)
{
    sim__node *n = e->fleet.nodes;
    while (n && (n->pool != rp->pool || n->members == n->slots)) n = n->next;
    if (!n) n = node_new(e, rp->pool);
    n->members++;
    rp->node = n;
    sim__pc_attach(&rp->pc, &n->cpu, e->sc->kv_offload.all);
}

static void node_free(sim__node *n)
{
    sim__pc_fini(&n->disk);
    sim__pc_fini(&n->cpu);
    free(n);
}

static void node_leave(sim_engine *e, sim__node *n)
{
    if (!n || --n->members > 0) return;
    sim__node **at = &e->fleet.nodes;
    while (*at != n) at = &(*at)->next;
    *at = n->next;
    node_free(n);
}

static sim__replica *make_replica(sim_engine *e, const sim_pool *p, sim__group *g)
{
    int32_t id = new_id(&e->fleet, p, g);
    sim__replica *rp = util_xmalloc(sizeof *rp);
    sim__rp_init(rp, e, p, g, id);
    if (sim__rp_offloads(rp) && e->sc->kv_offload.per_node) node_join(e, rp);
    e->fleet.by_id[id].rp = rp;
    return rp;
}

static void ready(sim__replica *rp)
{
    rp->ready_ns = rp->e->now;
    group_join(rp->group, rp);
    sim__fa_ready(rp); /* its failure clocks start */
    sim__gw_poke(rp->e); /* requests held for want of a replica may go */
}

static const sim_pool *first_pool_of(const sim_scenario *sc, int model)
{
    int i = 0;
    while (sc->pools[i].model != model) i++;
    return &sc->pools[i];
}

sim__group *sim__fl_group_of(const sim_engine *e, const sim_pool *p)
{
    const sim_scenario *sc = e->sc;
    int k = p->index == sc->disagg_decode ? 1 : sc->disagg_prefill >= 0 ? 0 : p->model;
    return e->fleet.groups[k];
}

void sim__fl_init(sim_engine *e)
{
    const sim_scenario *sc = e->sc;
    sim__fleet *f = &e->fleet;
    /* without disaggregation a router sees every replica of the pools of
     * the request's model -- group m is model m's, each model's list made
     * here once, so a decision costs what that model's replicas do, and one
     * model is every pool, as before; disaggregated (one model), arrivals
     * go to the prefill pool and prefilled requests to the decode pool */
    if (sc->disagg_prefill >= 0) {
        group_new(f, &sc->pools[sc->disagg_prefill]);
        group_new(f, &sc->pools[sc->disagg_decode]);
    } else {
        for (int m = 0; m < sc->n_models; m++) group_new(f, first_pool_of(sc, m));
    }
    for (int i = 0; i < sc->n_pools; i++) {
        const sim_pool *p = &sc->pools[i];
        sim__group *g = sim__fl_group_of(e, p);
        for (int j = 0; j < p->replicas; j++) ready(make_replica(e, p, g));
        e->prefix_caching |= f->by_id[f->n_ids - 1].rp->pc_on;
    }
}

/* The replica's row, as it leaves the cluster for `reason`. */
static void emit_row(sim__replica *rp, const char *reason)
{
    sim_engine *e = rp->e;
    if (e->sink_rc || !e->sink.replica) return;
    sim_replica_row row;
    sim__ac_row(rp, &row);
    row.end_reason = reason;
    e->sink_rc = e->sink.replica(e->sink.ctx, &row);
}

/* It leaves the cluster for `reason` -- or, once a spot notice took it
 * back, as taken back however it went (drained in time, failed at the
 * notice's end, stopped). */
static void retire(sim__replica *rp, const char *reason)
{
    sim_engine *e = rp->e;
    sim__queue dead = {0};
    sim__rp_take_waiting(rp, &dead); /* only timed-out ones are left: freed */
    assert(!dead.head);
    emit_row(rp, rp->taken_back ? SIM_TAKEN_BACK : reason);
    e->fleet.by_id[rp->id].rp = NULL;
    if (rp->pc_on) sim__pc_abandon(&rp->pc); /* requests it preempted may be queued elsewhere */
    sim__node *node = rp->node;
    sim__rp_fini(rp);
    free(rp);
    node_leave(e, node);
}

void sim__fl_fini(sim_engine *e)
{
    sim__fleet *f = &e->fleet;
    for (int32_t i = 0; i < f->n_ids; i++)
        if (f->by_id[i].rp) {
            sim__rp_fini(f->by_id[i].rp);
            free(f->by_id[i].rp);
        }
    for (sim__node *n = f->nodes, *next; n; n = next) {
        next = n->next;
        node_free(n);
    }
    for (int i = 0; i < f->n_groups; i++) group_free(f->groups[i]);
    free(f->groups);
    free(f->by_id);
    free(f->changes);
    *f = (sim__fleet){0};
}

void sim__fl_emit_rows(sim_engine *e)
{
    for (int32_t i = 0; i < e->fleet.n_ids; i++)
        if (e->fleet.by_id[i].rp) emit_row(e->fleet.by_id[i].rp, SIM_END_OF_RUN);
}

/* ---- added, drained, failed ---- */

void sim__fl_ready_event(sim_engine *e, void *subject, int64_t id)
{
    (void)subject;
    sim__replica *rp = sim__fl_get(e, (int32_t)id);
    if (!rp || rp->draining) return; /* failed or drained before it was ready */
    ready(rp);
    sim__rp_wake(rp); /* a central queue may hold work for it */
}

int32_t sim__fl_make(sim_engine *e, const sim_pool *p, sim__group *g)
{
    sim__replica *rp = make_replica(e, p, g);
    sim__lc_start_cold(rp); /* the scenario's own, made by sim__fl_init, start warm */
    return rp->id;
}

int32_t sim__fl_add(sim_engine *e, const sim_pool *p, sim__group *g, int64_t ready_after_ns)
{
    int32_t id = sim__fl_make(e, p, g);
    sim__heap_push(&e->events, e->now + ready_after_ns, sim__fl_ready_event, NULL, id);
    return id;
}

static void retire_event(sim_engine *e, void *subject, int64_t id)
{
    (void)subject;
    sim__replica *rp = sim__fl_get(e, (int32_t)id);
    if (!rp) return;
    rp->retire_pending = false;
    if (sim__rp_empty(rp)) retire(rp, SIM_DRAINED);
}

void sim__fl_retire_if_empty(sim__replica *rp)
{
    if (rp->retire_pending || !sim__rp_empty(rp)) return;
    rp->retire_pending = true;
    sim__heap_push(&rp->e->events, rp->e->now, retire_event, NULL, rp->id);
}

/* Waiting requests handed back go to the router of their replica's group
 * as they are (a KV cache that arrived from a prefill pool still counts). */
static void hand_back(sim_engine *e, sim__group *g, sim__queue *q)
{
    sim__request *r;
    while ((r = sim__queue_pop(q))) sim__rt_route(e, g, r);
}

/* Requests of a failed replica start again where requests arrive: their KV
 * cache is gone, so they prefill their prompt and what they generated, as a
 * recompute after a preemption does.  Their rows say so (restarts,
 * restarted_from). */
static void restart(sim_engine *e, sim__queue *q, int32_t from)
{
    sim__request *r;
    while ((r = sim__queue_pop(q))) {
        r->restarts++;
        r->restarted_from = from;
        sim__rq_recompute(r);
        sim__rt_route(e, sim__fl_arrivals(e, r), r);
    }
}

/* A replica stopped: what it holds starts again elsewhere, as a failed
 * replica's requests do under on_failure retry, but the replica's row says
 * drained. */
static void stop(sim_engine *e, sim__replica *rp)
{
    int32_t id = rp->id;
    group_leave(rp->group, rp);
    rp->drain_ns = e->now;
    sim__queue held = {0};
    sim__rp_take_all(rp, &held);
    retire(rp, SIM_DRAINED);
    restart(e, &held, id);
}

void sim__fl_drain(sim_engine *e, int32_t id, sim__drain how)
{
    sim__replica *rp = sim__fl_get(e, id);
    if (!rp || rp->draining) return;
    if (how == SIM__DRAIN_STOP) {
        stop(e, rp);
        return;
    }
    rp->draining = true;
    rp->drain_ns = e->now;
    group_leave(rp->group, rp);
    rp->q = &rp->own; /* it takes nothing more from a central queue */
    sim__queue back = {0};
    if (how == SIM__DRAIN_HAND_BACK) sim__rp_take_waiting(rp, &back);
    hand_back(e, rp->group, &back);
    sim__rp_wake(rp); /* idle and empty: it retires */
}

void sim__fl_fail(sim_engine *e, int32_t id, bool fail_requests)
{
    sim__replica *rp = sim__fl_get(e, id);
    if (!rp) return;
    group_leave(rp->group, rp);
    e->fleet.by_id[id].failed_requests = fail_requests;
    sim__queue held = {0};
    sim__rp_take_all(rp, &held);
    retire(rp, SIM_FAILED);
    if (!fail_requests) {
        restart(e, &held, id);
        return;
    }
    sim__request *r;
    while ((r = sim__queue_pop(&held))) sim__rq_fail_on(e, r, id);
}

/* ---- changes at an instant ---- */

static void change_event(sim_engine *e, void *subject, int64_t index)
{
    (void)subject;
    const sim__change *c = &e->fleet.changes[index];
    switch (c->kind) {
    case SIM__ADD:
        sim__fl_add(e, &e->sc->pools[c->pool], e->fleet.groups[c->group], c->ready_after_ns);
        return;
    case SIM__DRAIN: sim__fl_drain(e, c->replica, c->how); return;
    case SIM__FAIL: sim__fl_fail(e, c->replica, c->fail_requests); return;
    }
}

void sim__fl_schedule(sim_engine *e, int64_t at, const sim__change *c)
{
    sim__fleet *f = &e->fleet;
    if (f->n_changes == f->changes_cap) {
        f->changes_cap = f->changes_cap ? 2 * f->changes_cap : 8;
        f->changes = util_xrealloc(f->changes, (size_t)f->changes_cap * sizeof *f->changes);
    }
    f->changes[f->n_changes] = *c;
    sim__heap_push(&e->events, at, change_event, NULL, f->n_changes++);
}
