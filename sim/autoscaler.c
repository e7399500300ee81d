/*
 * autoscaler.c: cluster.autoscaler and cluster.lifecycle (docs/autoscaling.md)
 * -- each pool with an autoscaler is resized by the Kubernetes Horizontal
 * Pod Autoscaler's algorithm, and a replica it adds serves only after its
 * node is provisioned, its weights are read and its engine has warmed up.
 *
 * Two chains of events a pool, both every interval_s: a sample of the
 * metric over the pool's ready replicas at k x interval_s - scrape_delay_s,
 * kept in a ring, and a decision at k x interval_s that reads the sample
 * taken scrape_delay_s before it -- a metrics pipeline's lag, exactly.  The
 * decision is the HPA's, as kubernetes/kubernetes documents it
 * (kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/,
 * "Algorithm details") and codes it (pkg/controller/podautoscaler/
 * replica_calculator.go calcPlainMetricReplicas and groupPods, and
 * horizontal.go stabilizeRecommendationWithBehaviors, at commit 00067268):
 * desired = ceil(ratio x replicas with a metric), ratio = the metric's
 * mean / target, and no change while |ratio - 1| <= 0.1.  A replica still
 * provisioning is a Pending pod (ignored: counted at 0 on a scale-up only);
 * one loading or warming up is a Running pod without metrics (an engine
 * serves /metrics once its model is loaded), as is one ready since the
 * sample was taken: counted at the target on a scale-down and at 0 on a
 * scale-up, and no change if that turns the direction.  The recommendations
 * are kept for the longer window: a scale-up takes the lowest of those within
 * scale_up_window_s, a scale-down the highest within scale_down_window_s;
 * then the scaling policies, from the replicas at each period's start (the
 * HPA's own scale events within it taken back: horizontal.go
 * convertDesiredReplicasWithBehaviorRate, as openshift/kubernetes carries
 * it at 443dcea6), then max_step and [min, max].  Scale-down drains the
 * replicas still starting first, then the newest ready ones: what a
 * ReplicaSet deletes first (pkg/controller/controller_utils.go ActivePods:
 * not ready before ready, then the most recently ready), and what loses
 * least -- the newest replica has the coldest prefix cache.
 *
 * The engine's loop ends once only these chains, and replicas the
 * autoscaler made that are not ready yet, are left in the event heap
 * (sim_engine.as_pending counts them), so a run still ends when its work
 * does.  Memory is a pool's rings: O((delay + window + period) / interval).
 */
#include "sim_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const sim_as_metric_names[] = {"queue", "kv", "running", "utilisation", "rps", NULL};
const char *const sim_as_policy_names[] = {"pods", "percent", NULL};
const char *const sim_as_select_names[] = {"max", "min", "disabled", NULL};

/* The HPA's tolerance: --horizontal-pod-autoscaler-tolerance, default 0.1
 * (the documentation's "Algorithm details"). */
#define AS_TOLERANCE 0.1

/* The most samples or recommendations a pool keeps (the delay or the
 * longer window over the interval): 24 MB at most, where a typo such as
 * interval_s 1e-9 would otherwise ask for terabytes. */
#define AS_MAX_KEPT 1000000

/* The HPA's default behavior (pkg/apis/autoscaling/v2/defaults.go,
 * kubernetes/kubernetes at 1adaa753): scaleUp may add 4 pods or 100 %
 * within 15 s, whichever is more; scaleDown may remove 100 % within 15 s. */
#define AS_DEFAULT_UP_POLICIES                                                                     \
    "[{\"type\": \"pods\", \"value\": 4, \"period_s\": 15}, "                                      \
    "{\"type\": \"percent\", \"value\": 100, \"period_s\": 15}]"
#define AS_DEFAULT_DOWN_POLICIES "[{\"type\": \"percent\", \"value\": 100, \"period_s\": 15}]"

/* ---- the keys ---- */

static const util_field policy_fields[] = {
    {.key = "type", .type = UTIL_T_STRING, .choices = sim_as_policy_names, .flags = UTIL_REQUIRED,
     .doc = "pods: at most value replicas within period_s; percent: at most value % of the "
            "replicas at the period's start (the HPA's policy type Pods or Percent)"},
    {.key = "value", .type = UTIL_T_INTEGER, .min = 1, .max = 1e5, .flags = UTIL_REQUIRED,
     .doc = "how many replicas, or what percent (the HPA's policy value)"},
    {.key = "period_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 1800,
     .flags = UTIL_REQUIRED | UTIL_MIN_EXCLUSIVE,
     .doc = "the window the policy holds over (the HPA's periodSeconds, at most 1800)"},
    {0},
};

const util_field sim__autoscaler_fields[] = {
    {.key = "metric", .type = UTIL_T_STRING, .choices = sim_as_metric_names,
     .flags = UTIL_REQUIRED,
     .doc = "what a replica reports: queue (waiting requests), kv (KV cache use fraction), "
            "running (running requests), utilisation (busy fraction over the last interval), "
            "rps (arrivals per second over the last interval)"},
    {.key = "target", .type = UTIL_T_NUMBER, .min = 0, .max = 1e9,
     .flags = UTIL_REQUIRED | UTIL_MIN_EXCLUSIVE,
     .doc = "the metric's mean per replica the autoscaler aims at (kv and utilisation: at "
            "most 1)"},
    {.key = "min_replicas", .type = UTIL_T_INTEGER, .def = "1", .min = 1, .max = 1e5,
     .doc = "fewest replicas (the HPA's minReplicas, default 1)"},
    {.key = "max_replicas", .type = UTIL_T_INTEGER, .min = 1, .max = 1e5, .flags = UTIL_REQUIRED,
     .doc = "most replicas (the HPA's maxReplicas), at least min_replicas"},
    {.key = "interval_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "15", .min = 0.001,
     .max = 86400, .doc = "time between decisions (default 15: the HPA's "
            "--horizontal-pod-autoscaler-sync-period)"},
    {.key = "scrape_delay_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0,
     .max = 86400, .doc = "the metric a decision reads is the value this long before it"},
    {.key = "scale_up_window_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0,
     .max = 604800,
     .doc = "a scale-up goes to the lowest recommendation within this window (default 0: the "
            "HPA's scaleUp stabilizationWindowSeconds)"},
    {.key = "scale_down_window_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "300", .min = 0,
     .max = 604800,
     .doc = "a scale-down goes to the highest recommendation within this window (default 300: "
            "the HPA's scaleDown stabilizationWindowSeconds)"},
    {.key = "max_step", .type = UTIL_T_INTEGER, .min = 1, .max = 1e5,
     .doc = "most replicas added or removed by one decision, after the policies (default: no "
            "limit)"},
    {.key = "scale_up_policies", .type = UTIL_T_LIST, .sub = policy_fields, .min = 1,
     .max = SIM_AS_MAX_POLICIES, .def = AS_DEFAULT_UP_POLICIES,
     .doc = "how fast replicas may be added (default: 4 pods or 100 % within 15 s, the HPA's "
            "scaleUp policies)"},
    {.key = "scale_up_select", .type = UTIL_T_STRING, .choices = sim_as_select_names,
     .def = "\"max\"",
     .doc = "which scale-up policy binds: max (the one allowing most), min (least) or disabled "
            "(no scale-up; the HPA's scaleUp selectPolicy)"},
    {.key = "scale_down_policies", .type = UTIL_T_LIST, .sub = policy_fields, .min = 1,
     .max = SIM_AS_MAX_POLICIES, .def = AS_DEFAULT_DOWN_POLICIES,
     .doc = "how fast replicas may be removed (default: 100 % within 15 s, the HPA's scaleDown "
            "policies)"},
    {.key = "scale_down_select", .type = UTIL_T_STRING, .choices = sim_as_select_names,
     .def = "\"max\"",
     .doc = "which scale-down policy binds: max (the one allowing most), min (least) or "
            "disabled (no scale-down; the HPA's scaleDown selectPolicy)"},
    {0},
};

static const char *storage_names[] = {"local_nvme", "network_fs", NULL};

static const util_field storage_fields[] = {
    {.key = "read_gbs", .type = UTIL_T_NUMBER, .unit = "GB/s", .min = 0.001, .max = 1e4,
     .flags = UTIL_REQUIRED, .doc = "the storage's read bandwidth to one replica"},
    {0},
};

static int check_storage(cJSON *item, const char *path, void *ctx, util_diag *d)
{
    (void)ctx;
    if (cJSON_IsObject(item)) return UTIL_OK;
    for (int i = 0; storage_names[i]; i++)
        if (!strcmp(item->valuestring, storage_names[i])) return UTIL_OK;
    return util_diag_unknown(d, path, "storage", item->valuestring, storage_names);
}

const util_field sim__lifecycle_fields[] = {
    {.key = "provision_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0, .max = 86400,
     .doc = "a new replica's node is provisioned (default 0: a node is free)"},
    {.key = "load_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 86400,
     .doc = "a measured model load time (or storage)"},
    {.key = "storage", .type = UTIL_T_NAME_OR_OBJECT, .sub = storage_fields, .check = check_storage,
     .doc = "where the weights are read from: local_nvme (7.45 GB/s), network_fs (1.57 GB/s) or "
            "{read_gbs}; the load takes the replica's weight bytes / that bandwidth "
            "(docs/autoscaling.md lists the sources)"},
    {.key = "warm_up_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0, .max = 86400,
     .doc = "after the load: CUDA graph capture, compilation (default 0)"},
    {.key = "warm_up_requests", .type = UTIL_T_INTEGER, .def = "0", .min = 0, .max = 1e9,
     .doc = "once ready, a new replica's iterations are slower until it has served this many "
            "requests (default 0: none; the scenario's own replicas start warm)"},
    {.key = "warm_up_factor", .type = UTIL_T_NUMBER, .def = "1", .min = 1, .max = 1000,
     .doc = "how much slower those iterations are (default 1; vLLM's first inference after a "
            "cold start took 3.72 s against 0.92 s warm: 4.0)"},
    {.key = "drain", .type = UTIL_T_STRING, .choices = sim_lc_drain_names, .def = "\"finish\"",
     .doc = "a replica let go on scale-down or a spot notice: finish (takes nothing new, "
            "serves what it holds), hand_back (its waiting requests go back to the router "
            "at once) or stop (everything it holds starts again elsewhere, at once)"},
    {0},
};

const char *const sim_lc_drain_names[] = {"finish", "hand_back", "stop", NULL};

static double storage_bw(const cJSON *storage)
{
    if (cJSON_IsObject(storage)) return util_json_number(storage, "read_gbs", 1) * 1e9;
    return !strcmp(storage->valuestring, "local_nvme") ? SIM_STORAGE_NVME_BW
                                                       : SIM_STORAGE_NETFS_BW;
}

/* The replica's load reads every GPU's shard through its node's one
 * storage path, so the bandwidth is the replica's, not each GPU's. */
static int read_lifecycle(sim_pool *p, const cJSON *o, const char *path, util_diag *d)
{
    sim_lifecycle *lc = &p->lifecycle;
    *lc = (sim_lifecycle){.warm_up_factor = 1};
    if (!o) return UTIL_OK;
    lc->provision_s = util_json_number(o, "provision_s", 0);
    lc->warm_up_s = util_json_number(o, "warm_up_s", 0);
    lc->warm_up_requests = (int64_t)util_json_number(o, "warm_up_requests", 0);
    lc->warm_up_factor = util_json_number(o, "warm_up_factor", 1);
    if (util_json_member(o, "drain")) lc->drain = util_json_choice(o, "drain", sim_lc_drain_names);
    const cJSON *load = util_json_member(o, "load_s");
    const cJSON *storage = util_json_member(o, "storage");
    if (load && storage)
        return util_diag_add(d, "%s.lifecycle: give load_s or storage, not both", path);
    if (load) lc->load_s = load->valuedouble;
    if (!storage) return UTIL_OK;
    lc->read_bw = storage_bw(storage);
    double bytes = mdl_model_weight_bytes(&p->cost.model) + p->spec.head_weight_bytes;
    lc->load_s = bytes / lc->read_bw;
    return UTIL_OK;
}

/* One direction's policies and select. */
static void read_rules(sim_as_rules *r, const cJSON *o, const char *policies, const char *select)
{
    *r = (sim_as_rules){0};
    for (const cJSON *e = util_json_member(o, policies)->child; e; e = e->next) {
        sim_as_policy *pl = &r->policy[r->n_policies++];
        pl->type = (sim_as_policy_type)util_json_choice(e, "type", sim_as_policy_names);
        pl->value = (int)util_json_number(e, "value", 1);
        pl->period_s = util_json_number(e, "period_s", 15);
    }
    r->select = (sim_as_select)util_json_choice(o, select, sim_as_select_names);
}

/* The longest policy period: how far back scale events are kept. */
static double longest_period(const sim_autoscaler *as)
{
    double longest = 0;
    for (int i = 0; i < as->up.n_policies; i++) longest = fmax(longest, as->up.policy[i].period_s);
    for (int i = 0; i < as->down.n_policies; i++)
        longest = fmax(longest, as->down.policy[i].period_s);
    return longest;
}

static int read_autoscaler(sim_pool *p, const cJSON *o, const char *path, util_diag *d)
{
    sim_autoscaler *as = &p->autoscaler;
    *as = (sim_autoscaler){0};
    if (!o) return UTIL_OK;
    as->on = true;
    as->metric = (sim_as_metric)util_json_choice(o, "metric", sim_as_metric_names);
    as->target = util_json_number(o, "target", 1);
    as->min_replicas = (int)util_json_number(o, "min_replicas", 1);
    as->max_replicas = (int)util_json_number(o, "max_replicas", 1);
    as->max_step = (int)util_json_number(o, "max_step", 0);
    as->interval_s = util_json_number(o, "interval_s", 15);
    as->scrape_delay_s = util_json_number(o, "scrape_delay_s", 0);
    as->up_window_s = util_json_number(o, "scale_up_window_s", 0);
    as->down_window_s = util_json_number(o, "scale_down_window_s", 300);
    read_rules(&as->up, o, "scale_up_policies", "scale_up_select");
    read_rules(&as->down, o, "scale_down_policies", "scale_down_select");
    double period = longest_period(as);
    int rc = UTIL_OK;
    if (as->max_replicas < as->min_replicas)
        rc = util_diag_add(d, "%s.autoscaler.max_replicas: %d is below min_replicas %d", path,
                           as->max_replicas, as->min_replicas);
    double kept = fmax(fmax(as->scrape_delay_s, period), fmax(as->up_window_s, as->down_window_s)) /
                  as->interval_s;
    if (kept > AS_MAX_KEPT)
        rc = util_diag_add(d, "%s.autoscaler.interval_s: %g s would keep %.0f samples, "
                              "recommendations or scale events for the delay, windows and "
                              "policies' periods (at most %d)",
                           path, as->interval_s, kept, AS_MAX_KEPT);
    bool fraction = as->metric == SIM_AS_KV || as->metric == SIM_AS_UTILISATION;
    if (fraction && as->target > 1)
        rc = util_diag_add(d, "%s.autoscaler.target: %g is above 1, the most a fraction (metric "
                              "%s) can be", path, as->target, sim_as_metric_names[as->metric]);
    return rc;
}

int sim__as_read(sim_pool *p, const cJSON *obj, const char *path, util_diag *d)
{
    int rc = read_autoscaler(p, util_json_member(obj, "autoscaler"), path, d);
    if (read_lifecycle(p, util_json_member(obj, "lifecycle"), path, d)) rc = UTIL_EINPUT;
    return rc;
}

/* ---- a pool's state: three rings ---- */

typedef struct sample {
    int64_t at;
    double sum; /* the metric summed over the replicas that reported it */
    int32_t n;  /* how many did */
} sample;

/* A recommendation (n: its replicas) or a scale event (n: the replicas the
 * HPA added, or minus those it removed), at a decision. */
typedef struct stamped {
    int64_t at;
    int32_t n;
} stamped;

/* The newest cap of them, oldest first: a decision only looks back over a
 * window or a period, which cap covers. */
typedef struct ring {
    stamped *v;
    int32_t n, cap, first;
} ring;

typedef struct sim__as {
    const sim_pool *pool; /* NULL: this pool has no autoscaler */
    sim__group *group;
    int64_t interval_ns, delay_ns, up_ns, down_ns, ready_after_ns;
    sample *samples;          /* ring: those a later decision may still read */
    int32_t n_samples, cap_samples, first_sample;
    ring recs;   /* the recommendations within the longer window */
    ring events; /* the scale events within the policies' longest period */
    int64_t arrivals_seen, last_sample_ns; /* the rps metric: the pool's count then */
    int desired; /* the scale's spec.replicas: what the HPA last set, which a failed
                  * replica's replacement restores and does not exceed */
} sim__as;

static void push_sample(sim__as *a, sample s)
{
    if (a->n_samples == a->cap_samples) {
        a->first_sample = (a->first_sample + 1) % a->cap_samples;
        a->n_samples--;
    }
    a->samples[(a->first_sample + a->n_samples++) % a->cap_samples] = s;
}

static const sample *find_sample(const sim__as *a, int64_t at)
{
    for (int32_t i = 0; i < a->n_samples; i++) {
        const sample *s = &a->samples[(a->first_sample + i) % a->cap_samples];
        if (s->at == at) return s;
    }
    return NULL;
}

static void ring_init(ring *r, int64_t span_ns, int64_t interval_ns)
{
    *r = (ring){.cap = (int32_t)(span_ns / interval_ns) + 2};
    r->v = util_xmalloc((size_t)r->cap * sizeof *r->v);
}

static void ring_push(ring *r, stamped x)
{
    if (r->n == r->cap) {
        r->first = (r->first + 1) % r->cap;
        r->n--;
    }
    r->v[(r->first + r->n++) % r->cap] = x;
}

static const stamped *ring_get(const ring *r, int32_t i)
{
    return &r->v[(r->first + i) % r->cap];
}

/* ---- the metric ---- */

/* Busy time so far, with the iteration in progress. */
static int64_t busy_now(const sim__replica *rp)
{
    return rp->busy_ns + (rp->busy ? rp->e->now - rp->run_start_ns : 0);
}

/* The replica's busy fraction since the last sample (or since it was
 * ready); false if no time has passed. */
static bool utilisation(sim__replica *rp, double *out)
{
    int64_t now = rp->e->now, busy = busy_now(rp);
    int64_t since = rp->as_since_ns > rp->ready_ns ? rp->as_since_ns : rp->ready_ns;
    bool any = now > since;
    if (any) *out = (double)(busy - rp->as_busy_ns) / (double)(now - since);
    rp->as_busy_ns = busy;
    rp->as_since_ns = now;
    return any;
}

/* One replica's value; false if it has none to report yet. */
static bool value_of(sim__replica *rp, sim_as_metric m, double *out)
{
    switch (m) {
    case SIM_AS_QUEUE: *out = (double)sim__waitq_len(&rp->own); return true;
    case SIM_AS_KV: *out = (double)sim__rp_used_blocks(rp, 0) / (double)rp->kv_capacity; return true;
    case SIM_AS_RUNNING: *out = rp->n_running; return true;
    case SIM_AS_UTILISATION: return utilisation(rp, out);
    case SIM_AS_RPS: *out = 0; return true; /* the pool's, below */
    }
    return false;
}

/* The pool's arrivals a second since the last sample: shared by its ready
 * replicas, as a router spreads them (their mean is what the HPA reads). */
static double pool_rate(const sim_engine *e, sim__as *a)
{
    int64_t arrivals = e->as_arrivals[a->pool->index];
    double span = (double)(e->now - a->last_sample_ns) / SIM__NS_PER_S;
    double rate = (double)(arrivals - a->arrivals_seen) / span;
    a->arrivals_seen = arrivals;
    a->last_sample_ns = e->now;
    return rate;
}

static sample take_sample(sim_engine *e, sim__as *a)
{
    const sim_autoscaler *as = &a->pool->autoscaler;
    sample s = {.at = e->now};
    bool central = false;
    for (int i = 0; i < a->group->n; i++) {
        sim__replica *rp = a->group->members[i];
        double v;
        if (rp->pool != a->pool || !value_of(rp, as->metric, &v)) continue;
        s.sum += v;
        s.n++;
        central |= rp->q != &rp->own;
    }
    if (as->metric == SIM_AS_QUEUE && central) s.sum += (double)sim__waitq_len(&a->group->central);
    if (as->metric == SIM_AS_RPS) {
        if (e->now > a->last_sample_ns) s.sum = pool_rate(e, a);
        else s.n = 0; /* no interval yet */
    }
    return s;
}

/* ---- the decision ---- */

/* The pool's replicas now, as the HPA's pod list has them (draining ones
 * are deleted pods: not counted). */
typedef struct census {
    int ready;   /* Running and ready */
    int loading; /* Running, not ready: no metrics (loading or warming up) */
    int pending; /* Pending: the node is being provisioned */
} census;

static census count(const sim_engine *e, const sim__as *a)
{
    census c = {0};
    int64_t provision_ns = sim__ns(a->pool->lifecycle.provision_s);
    for (int32_t id = 0; id < e->fleet.n_ids; id++) {
        const sim__replica *rp = sim__fl_get(e, id);
        if (!rp || rp->pool != a->pool || rp->draining) continue;
        if (rp->ready_ns >= 0) c.ready++;
        else if (e->now < rp->created_ns + provision_ns) c.pending++;
        else c.loading++;
    }
    return c;
}

/* replica_calculator.go calcPlainMetricReplicas: the recommendation, or -1
 * when no replica that is there now has a metric (the HPA does nothing). */
static int hpa_replicas(const sim__as *a, const sample *s, const census *c, int current)
{
    double target = a->pool->autoscaler.target;
    double mean = s->sum / s->n, ratio = mean / target;
    int reporting = s->n < c->ready ? s->n : c->ready; /* drained since: gone with its metric */
    if (reporting == 0) return -1;
    int missing = c->ready - reporting + c->loading; /* ready since the sample, or loading */
    bool rebalance = c->pending > 0 && ratio > 1.0;
    if (!rebalance && missing == 0) {
        if (fabs(1.0 - ratio) <= AS_TOLERANCE) return current;
        return (int)ceil(ratio * reporting);
    }
    double sum = mean * reporting, n = reporting + missing;
    if (ratio < 1.0) sum += target * missing; /* a scale-down: missing at the target */
    if (rebalance) n += c->pending;           /* a scale-up: pending at 0 */
    double again = sum / n / target;
    if (fabs(1.0 - again) <= AS_TOLERANCE || (ratio < 1.0 && again > 1.0) ||
        (ratio > 1.0 && again < 1.0))
        return current;
    return (int)ceil(again * n);
}

/* horizontal.go stabilizeRecommendationWithBehaviors: up to the lowest
 * recommendation within the up window, down to the highest within the down
 * window (this one's among them), then it is kept. */
static int stabilise(sim__as *a, int64_t now, int raw, int current)
{
    int up = raw, down = raw;
    for (int32_t i = 0; i < a->recs.n; i++) {
        const stamped *r = ring_get(&a->recs, i);
        if (r->at > now - a->up_ns && r->n < up) up = r->n;
        if (r->at > now - a->down_ns && r->n > down) down = r->n;
    }
    ring_push(&a->recs, (stamped){now, raw});
    int want = current;
    if (want < up) want = up;
    if (want > down) want = down;
    return want;
}

/* The replicas at the start of the period: current less what the HPA's
 * scale events within it changed (up and down alike). */
static int period_start(const sim__as *a, int64_t now, double period_s, int current)
{
    int64_t since = now - sim__ns(period_s);
    for (int32_t i = 0; i < a->events.n; i++) {
        const stamped *ev = ring_get(&a->events, i);
        if (ev->at > since) current -= ev->n;
    }
    return current;
}

/* What one policy allows from start: a percent up rounds up (so that it
 * always allows one more), a percent down truncates, in doubles as the
 * HPA's float64. */
static int64_t policy_bound(const sim_as_policy *pl, bool up, int start)
{
    double share = (double)pl->value / 100;
    if (pl->type == SIM_AS_PODS) return (int64_t)start + (up ? pl->value : -pl->value);
    return up ? (int64_t)ceil((double)start * (1 + share)) : (int64_t)((double)start * (1 - share));
}

/* horizontal.go calculateScaleUpLimitWithScalingRules and
 * calculateScaleDownLimitWithBehaviors: the most replicas (up) or the
 * fewest (down) the rules allow now.  Max picks the policy allowing the
 * most change: the highest bound up, the lowest down. */
static int rules_bound(const sim__as *a, const sim_as_rules *r, bool up, int64_t now, int current)
{
    if (r->select == SIM_AS_SELECT_DISABLED) return current;
    bool highest = (r->select == SIM_AS_SELECT_MAX) == up;
    int64_t bound = highest ? INT64_MIN : INT64_MAX;
    for (int i = 0; i < r->n_policies; i++) {
        const sim_as_policy *pl = &r->policy[i];
        int64_t b = policy_bound(pl, up, period_start(a, now, pl->period_s, current));
        if (highest ? b > bound : b < bound) bound = b;
    }
    return (int)bound;
}

/* horizontal.go convertDesiredReplicasWithBehaviorRate: a scale-up to at
 * most the up rules' bound, a scale-down to at least the down rules', and
 * neither past current (a period's earlier moves can leave no room); then
 * max_step, then [min, max]. */
static int limit(const sim__as *a, int64_t now, int want, int current)
{
    const sim_autoscaler *as = &a->pool->autoscaler;
    if (want > current) {
        int top = rules_bound(a, &as->up, true, now, current);
        if (want > top) want = top > current ? top : current;
    } else if (want < current) {
        int bottom = rules_bound(a, &as->down, false, now, current);
        if (want < bottom) want = bottom < current ? bottom : current;
    }
    if (as->max_step && want > current + as->max_step) want = current + as->max_step;
    if (as->max_step && want < current - as->max_step) want = current - as->max_step;
    if (want < as->min_replicas) want = as->min_replicas;
    if (want > as->max_replicas) want = as->max_replicas;
    return want;
}

/* Drains k replicas of the pool: those still starting, then the ready
 * ones, newest first. */
static void remove_replicas(sim_engine *e, const sim__as *a, int k)
{
    for (int ready = 0; ready < 2; ready++)
        for (int32_t id = e->fleet.n_ids - 1; id >= 0 && k > 0; id--) {
            const sim__replica *rp = sim__fl_get(e, id);
            if (!rp || rp->pool != a->pool || rp->draining || (rp->ready_ns >= 0) != ready) continue;
            sim__fl_drain(e, id, (sim__drain)a->pool->lifecycle.drain);
            k--;
        }
}

static void ready_event(sim_engine *e, void *subject, int64_t id)
{
    e->as_pending--;
    sim__fl_ready_event(e, subject, id);
}

/* A new replica, ready after its lifecycle: an autoscaler's event, so that
 * a replica still starting does not keep a finished run going. */
static void add_replica(sim_engine *e, const sim__as *a)
{
    int32_t id = sim__fl_make(e, a->pool, a->group);
    e->as_pending++;
    sim__heap_push(&e->events, e->now + a->ready_after_ns, ready_event, NULL, id);
}

/* The HPA's current replicas are the scale's spec (horizontal.go
 * reconcileAutoscaler: scale.Spec.Replicas), not the pods there: a
 * replica lost to a failure or a spot notice is still wanted, and its
 * replacement (failures.c, repair_s later) fills the hole as a ReplicaSet
 * does, so the HPA neither adds for it nor, once the replacement comes,
 * leaves the pool one over.  A scale-up adds what the spec grew by; a
 * scale-down drains what the pool holds over the new spec. */
static void scale(sim_engine *e, sim__as *a, const sample *s)
{
    census c = count(e, a);
    int current = a->desired, live = c.ready + c.loading + c.pending;
    int raw = hpa_replicas(a, s, &c, current);
    if (raw < 0) return;
    int want = limit(a, e->now, stabilise(a, e->now, raw, current), current);
    for (int i = current; i < want; i++) add_replica(e, a);
    if (want < live) remove_replicas(e, a, live - want);
    if (want != current) ring_push(&a->events, (stamped){e->now, want - current});
    a->desired = want;
}

bool sim__as_replaces(const sim_engine *e, const sim_pool *p)
{
    if (!e->as || !e->as[p->index].pool) return true; /* no autoscaler: always */
    const sim__as *a = &e->as[p->index];
    census c = count(e, a);
    return c.ready + c.loading + c.pending < a->desired;
}

/* ---- the events ---- */

static void schedule(sim_engine *e, int64_t at, sim__handler fn, int64_t pool)
{
    e->as_pending++;
    sim__heap_push(&e->events, at, fn, NULL, pool);
}

static void sample_event(sim_engine *e, void *subject, int64_t pool)
{
    (void)subject;
    sim__as *a = &e->as[pool];
    e->as_pending--;
    push_sample(a, take_sample(e, a));
    schedule(e, e->now + a->interval_ns, sample_event, pool);
}

static void decide_event(sim_engine *e, void *subject, int64_t pool)
{
    (void)subject;
    sim__as *a = &e->as[pool];
    e->as_pending--;
    const sample *s = find_sample(a, e->now - a->delay_ns);
    if (s && s->n > 0) scale(e, a, s);
    schedule(e, e->now + a->interval_ns, decide_event, pool);
}

/* ---- a run's start and end ---- */

static void start(sim_engine *e, sim__as *a, const sim_pool *p)
{
    const sim_autoscaler *as = &p->autoscaler;
    a->pool = p;
    a->group = sim__fl_group_of(e, p);
    a->desired = p->replicas;
    a->interval_ns = sim__ns(as->interval_s);
    a->delay_ns = sim__ns(as->scrape_delay_s);
    a->up_ns = sim__ns(as->up_window_s);
    a->down_ns = sim__ns(as->down_window_s);
    a->ready_after_ns = sim__lc_ready_after_ns(e, p);
    a->cap_samples = (int32_t)(a->delay_ns / a->interval_ns) + 2;
    a->samples = util_xmalloc((size_t)a->cap_samples * sizeof *a->samples);
    ring_init(&a->recs, a->up_ns > a->down_ns ? a->up_ns : a->down_ns, a->interval_ns);
    ring_init(&a->events, sim__ns(longest_period(as)), a->interval_ns);
    /* decision k (k >= 1) at k x interval reads the sample at k x interval -
     * delay: the first sample is the first such instant not before 0; it
     * goes into the heap first, so that with no delay it runs first */
    int64_t k = (a->delay_ns + a->interval_ns - 1) / a->interval_ns;
    if (k < 1) k = 1;
    schedule(e, k * a->interval_ns - a->delay_ns, sample_event, p->index);
    schedule(e, a->interval_ns, decide_event, p->index);
}

void sim__as_init(sim_engine *e)
{
    const sim_scenario *sc = e->sc;
    for (int i = 0; i < sc->n_pools; i++) {
        if (!sc->pools[i].autoscaler.on) continue;
        if (!e->as) {
            e->as = util_xcalloc((size_t)sc->n_pools, sizeof *e->as);
            e->as_arrivals = util_xcalloc((size_t)sc->n_pools, sizeof *e->as_arrivals);
        }
        start(e, &e->as[i], &sc->pools[i]);
    }
}

void sim__as_fini(sim_engine *e)
{
    if (!e->as) return;
    for (int i = 0; i < e->sc->n_pools; i++) {
        free(e->as[i].samples);
        free(e->as[i].recs.v);
        free(e->as[i].events.v);
    }
    free(e->as);
    free(e->as_arrivals);
    e->as = NULL;
    e->as_arrivals = NULL;
}
