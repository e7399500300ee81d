/*
 * gateway.c: the gateway in front of the replicas (cluster.gateway,
 * docs/gateway.md) -- tenants' token budgets and slot shares, a queue that
 * holds requests while their model's replicas are saturated, and shedding.
 *
 * It follows the Gateway API Inference Extension's endpoint picker (GIE,
 * kubernetes-sigs/gateway-api-inference-extension at 275ac76), which llm-d
 * deploys as its gateway:
 *
 * - saturation (pkg/epp/saturationdetector/framework/plugins/
 *   utilizationdetector/detector.go): each replica scores max(waiting /
 *   QueueDepthThreshold, KV use / KVCacheUtilThreshold), defaults 5 and
 *   0.8; the pool's saturation is their mean, 1 when it has no replica;
 *   at 1 or more the pool is saturated.
 * - shedding (its legacy admission controller, and flow control's): a
 *   sheddable request is refused while the pool is saturated.  GIE's
 *   sheddable requests are those of negative priority (higher is more
 *   urgent there); servesim's priorities are vLLM's, lower more urgent, so
 *   its sheddable ones are those at shed_priority or above (2: the tiers
 *   sheddable and background).
 * - flow control: while saturated, the others wait in the gateway, most
 *   urgent first and first come first served among equals, up to a
 *   capacity, each for at most a time-to-live, and are dispatched as the
 *   saturation falls below 1.
 *
 * A replica's figures are as its last iteration left them (GIE scrapes
 * them every 50 ms), its waiting requests counting those in its front end
 * (the gateway sent them; they have not reached the queue yet).
 *
 * Per tenant: a token bucket of input tokens (the prompt is the cost), and
 * a share of the batch slots (max_num_seqs x replicas) of its model's
 * replicas that its dispatched, unfinished requests may hold; over it, its
 * requests wait in the gateway while other tenants' pass.  A request
 * without a tenant, or of a tenant the gateway does not list, has neither.
 *
 * The held requests are in one queue per model and tenant, so that a
 * tenant at its share blocks only itself: each dispatch takes the most
 * urgent head among the tenants under their share.  The queues are
 * looked at again (pump) by an event whenever something their
 * saturation or shares read may have changed -- an iteration's end, a
 * request's end, a replica ready -- never from inside the caller, which
 * may be routing or ending a request itself.
 */
#include "sim_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the keys ---- */

static const util_field tenant_fields[] = {
    {.key = "name", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED,
     .doc = "the tenant, as workload.classes[].tenant (or a trace's tenant column) names it"},
    {.key = "rate_tokens_per_s", .type = UTIL_T_NUMBER, .unit = "tokens/s", .min = 0,
     .max = 1e12,
     .doc = "its token bucket's refill: input (prompt) tokens a second; a request whose prompt "
            "is more than the bucket holds is refused (reason budget). 0 or absent: no bucket"},
    {.key = "burst_tokens", .type = UTIL_T_NUMBER, .unit = "tokens", .min = 0, .max = 1e15,
     .doc = "the bucket's size, full at the start (default: one second of rate_tokens_per_s)"},
    {.key = "share", .type = UTIL_T_NUMBER, .min = 0, .max = 1, .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "the share of its model's batch slots (max_num_seqs x replicas) its dispatched, "
            "unfinished requests may hold; the rest wait in the gateway (default: no limit)"},
    {0},
};

const util_field sim__gateway_fields[] = {
    {.key = "queue_capacity", .type = UTIL_T_INTEGER, .unit = "requests", .min = 0,
     .max = 1e9,
     .doc = "requests the gateway holds at once; one more is refused (reason queue_full). 0: no "
            "limit (the default)"},
    {.key = "ttl_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0,
     .max = WL_HORIZON_S,
     .doc = "a request held this long is refused (reason ttl). 0: never (the default)"},
    {.key = "queue_depth_threshold", .type = UTIL_T_NUMBER, .unit = "requests", 
     .min = 0, .max = 1e9, .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "saturation: a replica's waiting requests at which it is full (GIE's "
            "QueueDepthThreshold; default 5)"},
    {.key = "kv_cache_threshold", .type = UTIL_T_NUMBER, .min = 0, .max = 1,
     .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "saturation: a replica's KV cache use at which it is full (GIE's "
            "KVCacheUtilThreshold; default 0.8)"},
    {.key = "shed_priority", .type = UTIL_T_INTEGER, .min = WL_PRIORITY_MIN,
     .max = WL_PRIORITY_MAX,
     .doc = "requests of this priority or less urgent are refused while their model's replicas "
            "are saturated (reason shed); default 2: the tiers sheddable and background"},
    {.key = "tenants", .type = UTIL_T_LIST, .sub = tenant_fields, .min = 1, .max = 1000,
     .doc = "each tenant's token budget and slot share"},
    {0},
};

static int read_tenant(sim_gw_tenant *t, const cJSON *o, int i, const sim_gateway *g,
                       util_diag *d)
{
    t->name = cJSON_GetStringValue(util_json_member(o, "name"));
    t->rate = util_json_number(o, "rate_tokens_per_s", 0);
    t->burst = util_json_number(o, "burst_tokens", t->rate);
    t->share = util_json_number(o, "share", 0);
    for (int j = 0; j < i; j++)
        if (!strcmp(g->tenants[j].name, t->name))
            return util_diag_add(d, "cluster.gateway.tenants[%d].name: '%s' is tenants[%d]'s "
                                    "already", i, t->name, j);
    if (util_json_member(o, "burst_tokens") && t->rate == 0)
        return util_diag_add(d, "cluster.gateway.tenants[%d].burst_tokens: applies only with "
                                "rate_tokens_per_s", i);
    return UTIL_OK;
}

/* Its defaults here: the schema would make the section, and so a
 * gateway, in every scenario. */
int sim__gw_read(sim_scenario *sc, const cJSON *cluster, util_diag *d)
{
    sim_gateway *g = &sc->gateway;
    const cJSON *o = util_json_member(cluster, "gateway");
    if (!o) return UTIL_OK;
    g->on = true;
    g->queue_capacity = (int64_t)util_json_number(o, "queue_capacity", 0);
    g->ttl_s = util_json_number(o, "ttl_s", 0);
    g->queue_depth_threshold = util_json_number(o, "queue_depth_threshold", 5);
    g->kv_cache_threshold = util_json_number(o, "kv_cache_threshold", 0.8);
    g->shed_priority = (int32_t)util_json_number(o, "shed_priority", 2);
    const cJSON *list = util_json_member(o, "tenants"), *t;
    g->tenants = util_xcalloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *g->tenants);
    int rc = UTIL_OK;
    cJSON_ArrayForEach(t, list)
    {
        if (read_tenant(&g->tenants[g->n_tenants], t, g->n_tenants, g, d)) rc = UTIL_EINPUT;
        g->n_tenants++;
    }
    return rc;
}

void sim__gw_fini(sim_gateway *g)
{
    free(g->tenants);
    g->tenants = NULL;
}

/* ---- the engine's gateway ---- */

typedef struct bucket {
    double level;    /* tokens it holds */
    int64_t last_ns; /* when it was last filled */
} bucket;

struct sim__gateway {
    const sim_gateway *cfg;
    int n_models, n_tq;  /* tenant queues a model: the listed tenants, then everyone else */
    sim__waitq *q;       /* [n_models x n_tq]: held requests */
    int64_t *q_live;     /* [n_models x n_tq]: of them, those not dead (timed out) */
    int64_t *dispatched; /* [n_models x n_tq]: dispatched and not yet ended */
    bucket *buckets;     /* [cfg->n_tenants] */
    int64_t held;        /* live held requests, all queues */
    bool pump_pending;
};

void sim__gw_init(sim_engine *e)
{
    const sim_gateway *cfg = &e->sc->gateway;
    if (!cfg->on) return;
    struct sim__gateway *g = util_xcalloc(1, sizeof *g);
    g->cfg = cfg;
    g->n_models = e->sc->n_models;
    g->n_tq = cfg->n_tenants + 1;
    size_t n = (size_t)g->n_models * (size_t)g->n_tq;
    g->q = util_xcalloc(n, sizeof *g->q);
    g->q_live = util_xcalloc(n, sizeof *g->q_live);
    g->dispatched = util_xcalloc(n, sizeof *g->dispatched);
    for (size_t i = 0; i < n; i++) sim__waitq_init(&g->q[i], NULL); /* keys: hold's */
    g->buckets = util_xcalloc((size_t)cfg->n_tenants + 1, sizeof *g->buckets);
    for (int t = 0; t < cfg->n_tenants; t++) g->buckets[t].level = cfg->tenants[t].burst;
    e->gw = g;
}

void sim__gw_destroy(sim_engine *e)
{
    struct sim__gateway *g = e->gw;
    if (!g) return;
    for (int i = 0; i < g->n_models * g->n_tq; i++) sim__waitq_fini(&g->q[i]);
    free(g->q);
    free(g->q_live);
    free(g->dispatched);
    free(g->buckets);
    free(g);
    e->gw = NULL;
}

/* r's tenant among the gateway's, or n_tenants for any other. */
static int tenant_of(const struct sim__gateway *g, const sim__request *r)
{
    if (r->tenant)
        for (int t = 0; t < g->cfg->n_tenants; t++)
            if (!strcmp(g->cfg->tenants[t].name, r->tenant)) return t;
    return g->cfg->n_tenants;
}

/* GIE's saturation of a model's replicas: the mean of each one's
 * max(waiting / queue threshold, KV use / KV threshold); 1 with none. */
static double saturation(const sim_engine *e, const sim__group *grp)
{
    const sim_gateway *cfg = &e->sc->gateway;
    if (grp->n == 0) return 1;
    double sum = 0;
    for (int i = 0; i < grp->n; i++) {
        const sim__replica *rp = grp->members[i];
        double waiting = (double)(sim__waitq_len(rp->q) + rp->incoming);
        double kv = rp->kv_capacity > 0 ? (double)sim__rp_used_blocks(rp, 0) / rp->kv_capacity : 1;
        sum += fmax(waiting / cfg->queue_depth_threshold, kv / cfg->kv_cache_threshold);
    }
    return sum / grp->n;
}

/* Whether tenant t may have one more request dispatched to group grp:
 * under its share of the group's batch slots (at least one slot). */
static bool under_share(const sim_engine *e, const sim__group *grp, int q, int t)
{
    const sim_gateway *cfg = &e->sc->gateway;
    if (t >= cfg->n_tenants || cfg->tenants[t].share <= 0) return true;
    int64_t slots = 0;
    for (int i = 0; i < grp->n; i++) slots += grp->members[i]->pool->max_batch;
    int64_t limit = (int64_t)floor(cfg->tenants[t].share * (double)slots);
    return e->gw->dispatched[q] < (limit > 1 ? limit : 1);
}

/* Tenant t's bucket takes r's prompt, if it holds that many tokens. */
static bool take_tokens(sim_engine *e, int t, const sim__request *r)
{
    const sim_gateway *cfg = &e->sc->gateway;
    if (t >= cfg->n_tenants || cfg->tenants[t].rate <= 0) return true;
    bucket *b = &e->gw->buckets[t];
    double refill = cfg->tenants[t].rate * (double)(e->now - b->last_ns) / SIM__NS_PER_S;
    b->level = fmin(cfg->tenants[t].burst, b->level + refill);
    b->last_ns = e->now;
    if (b->level < r->prompt) return false;
    b->level -= r->prompt;
    return true;
}

static void dispatch(sim_engine *e, sim__request *r)
{
    r->gw_counted = true;
    e->gw->dispatched[r->gw_queue]++;
    r->state = SIM__WAITING;
    sim__rt_route(e, sim__fl_arrivals(e, r), r);
}

/* Queue q's first live request, the dead ones before it freed. */
static sim__request *queue_head(sim_engine *e, int q)
{
    sim__waitq *wq = &e->gw->q[q];
    sim__request *r;
    while ((r = sim__waitq_head(wq)) && r->dead) { /* timed out or past its TTL: gone */
        sim__waitq_pop(wq);
        sim__rq_free(e, r);
    }
    return r;
}

/* The most urgent head among model m's tenant queues whose tenant is under
 * its share; -1 when none. */
static int next_queue(sim_engine *e, int m, const sim__group *grp)
{
    struct sim__gateway *g = e->gw;
    int best = -1;
    const sim__request *best_r = NULL;
    for (int t = 0; t < g->n_tq; t++) {
        int q = m * g->n_tq + t;
        if (!g->q_live[q]) continue;
        const sim__request *r = queue_head(e, q);
        if (!r || !under_share(e, grp, q, t)) continue;
        if (!best_r || r->priority < best_r->priority ||
            (r->priority == best_r->priority && r->id < best_r->id))
            best = q, best_r = r;
    }
    return best;
}

static void pump_model(sim_engine *e, int m)
{
    struct sim__gateway *g = e->gw;
    const sim__group *grp = e->fleet.groups[m];
    int q;
    while (saturation(e, grp) < 1 && (q = next_queue(e, m, grp)) >= 0) {
        sim__request *r = sim__waitq_pop(&g->q[q]);
        g->q_live[q]--;
        g->held--;
        dispatch(e, r);
    }
}

static void pump(sim_engine *e, void *subject, int64_t arg)
{
    (void)subject, (void)arg;
    e->gw->pump_pending = false;
    for (int m = 0; m < e->gw->n_models && e->gw->held > 0; m++) pump_model(e, m);
}

void sim__gw_poke_now(sim_engine *e)
{
    if (e->gw->held == 0 || e->gw->pump_pending) return;
    e->gw->pump_pending = true;
    sim__heap_push(&e->events, e->now, pump, NULL, 0);
}

/* A held request past its time-to-live is refused; it stays in its queue,
 * dead, until it reaches the head. */
static void expire(sim_engine *e, void *subject, int64_t id)
{
    sim__request *r = subject;
    if (r->id != id || r->state != SIM__HELD || r->dead) return; /* dispatched, or gone */
    e->gw->q_live[r->gw_queue]--;
    e->gw->held--;
    r->reason = SIM_TTL;
    sim__rq_done_kept(e, r, SIM_REJECTED, -1);
}

static void hold(sim_engine *e, sim__request *r)
{
    struct sim__gateway *g = e->gw;
    r->state = SIM__HELD;
    /* GIE's priority bands, each first come first served */
    sim__waitq_push_key(&g->q[r->gw_queue], r, sim__priority_key(r));
    g->q_live[r->gw_queue]++;
    g->held++;
    if (g->cfg->ttl_s > 0)
        sim__heap_push(&e->events, e->now + sim__ns(g->cfg->ttl_s), expire, r, r->id);
}

void sim__gw_admit(sim_engine *e, sim__request *r)
{
    struct sim__gateway *g = e->gw;
    if (!g) {
        r->state = SIM__WAITING;
        sim__rt_route(e, sim__fl_arrivals(e, r), r);
        return;
    }
    int t = tenant_of(g, r);
    r->gw_queue = r->model * g->n_tq + t;
    if (!take_tokens(e, t, r)) {
        sim__rq_reject(e, r, SIM_BUDGET);
        return;
    }
    const sim__group *grp = sim__fl_arrivals(e, r);
    bool saturated = saturation(e, grp) >= 1;
    if (saturated && r->priority >= g->cfg->shed_priority) {
        sim__rq_reject(e, r, SIM_SHED);
        return;
    }
    /* Held requests in this model's queues are waiting for the saturation
     * to fall or for their own tenants' shares, which this one's passing
     * does not take: it goes now if its own tenant may. */
    if (!saturated && under_share(e, grp, r->gw_queue, t) && !g->q_live[r->gw_queue]) {
        dispatch(e, r);
        return;
    }
    if (g->cfg->queue_capacity > 0 && g->held >= g->cfg->queue_capacity) {
        sim__rq_reject(e, r, SIM_QUEUE_FULL);
        return;
    }
    hold(e, r);
}

void sim__gw_left(sim_engine *e, sim__request *r)
{
    if (!r->gw_counted) return;
    r->gw_counted = false;
    e->gw->dispatched[r->gw_queue]--;
    sim__gw_poke_now(e);
}

void sim__gw_cancel(sim_engine *e, sim__request *r)
{
    e->gw->q_live[r->gw_queue]--;
    e->gw->held--;
}
