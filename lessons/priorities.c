/*
 * priorities.c: who waits when the fleet is full -- a fleet serving two
 * tiers, interactive and batch, run first come first served and then with
 * vLLM's priority order at each share of batch traffic: priority holds the
 * interactive tail while the batch tier absorbs the queue, and a gateway
 * sheds the sheddable tier from the share where the fleet saturates.
 */
#include "ls_int.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The two orders each share runs under (cluster.scheduler.scheduling_policy). */
static const char policy_key[] = "cluster.scheduler.scheduling_policy";

typedef struct prio_point {
    double share;                  /* of the requests, the batch class's, % */
    double ttft_fcfs, ttft_prio;   /* the interactive class's TTFT P99, s */
    double queue_fcfs, queue_prio; /* the batch class's mean queueing, s */
    double e2e_prio;               /* the batch class's e2e P99 under priority, s */
    double shed_fcfs, shed;        /* of the batch class's requests, shed each way, % */
} prio_point;

/* The lesson's two classes: the more urgent is the interactive one. */
typedef struct prio_classes {
    int interactive, batch; /* indices in workload.classes */
    const char *inter_name, *batch_name;
    int inter_priority, batch_priority;
    double ttft_target; /* the interactive class's slo.ttft_s (its own, else the scenario's) */
} prio_classes;

static void prio_columns(ls_result *r)
{
    ls_column_format(r, "batch_share_pct", "batch share", "%", 0);
    ls_column_format(r, "ttft_p99_fcfs_s", "int. TTFT fcfs", "s P99", 2);
    ls_column_format(r, "ttft_p99_prio_s", "int. TTFT prio", "s P99", 2);
    ls_column_format(r, "batch_queue_fcfs_s", "batch queue fcfs", "s mean", 1);
    ls_column_format(r, "batch_queue_prio_s", "batch queue prio", "s mean", 1);
    ls_column_format(r, "batch_e2e_p99_prio_s", "batch e2e prio", "s P99", 1);
    ls_column_format(r, "shed_fcfs_pct", "batch shed fcfs", "%", 1);
    ls_column_format(r, "shed_pct", "batch shed prio", "%", 1);
}

/* A row, the point's numbers rounded as the table prints them: the
 * sentences quote them so. */
static void prio_row(ls_result *r, prio_point *p)
{
    double *v[] = {&p->share,      &p->ttft_fcfs, &p->ttft_prio, &p->queue_fcfs,
                   &p->queue_prio, &p->e2e_prio,  &p->shed_fcfs, &p->shed};
    assert((int)(sizeof v / sizeof v[0]) == r->n_columns);
    ls_row_rounded(r, v);
}

/* The runs' order by share (the knob's may be any), in idx. */
static void by_share(const prio_point *p, int n, int *idx)
{
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && p[idx[j - 1]].share > p[i].share; j--)
            idx[j] = idx[j - 1];
        idx[j] = i;
    }
}

/* The first share (in idx's order) whose run shed a request, by priority
 * (prio) or first come first served; -1: none. */
static int first_shed(const prio_point *p, const int *idx, int n, bool prio)
{
    for (int i = 0; i < n; i++)
        if ((prio ? p[idx[i]].shed : p[idx[i]].shed_fcfs) > 0) return i;
    return -1;
}

/* The first share at which the interactive TTFT P99 passes the target
 * under one order (ttft_prio: priority's, else fcfs's), or -1. */
static int first_missed(const prio_point *p, const int *idx, int n, double target, bool prio)
{
    for (int i = 0; isfinite(target) && i < n; i++)
        if ((prio ? p[idx[i]].ttft_prio : p[idx[i]].ttft_fcfs) > target) return i;
    return -1;
}

/* A ratio as the sentences say it: "x12.3", or "x1234" past 100. */
static void ratio_text(double x, char *buf, size_t size)
{
    snprintf(buf, size, x >= 100 ? "x%.0f" : "x%.1f", x);
}

/* The lightest share, and the interactive tail at the heaviest each way. */
static void prio_hold(ls_result *r, const prio_classes *k, const prio_point *p, const int *idx,
                      int n)
{
    const prio_point *a = &p[idx[0]], *z = &p[idx[n - 1]];
    double hi = 0;
    int at = 0;
    for (int i = 0; i < n; i++)
        if (p[idx[i]].ttft_prio > hi) hi = p[idx[i]].ttft_prio, at = i;
    char ratio[32];
    double x = z->ttft_fcfs / z->ttft_prio;
    ratio_text(x, ratio, sizeof ratio);
    ls_say(r,
           "At a %g%% batch share the two orders serve the %s class alike: its TTFT P99 is %.2f s "
           "first come first served and %.2f s by priority.",
           a->share, k->inter_name, a->ttft_fcfs, a->ttft_prio);
    ls_say(r,
           "At %g%% first come first served puts each %s request behind every request, batch "
           "or not, that came before it: its TTFT P99 is %.2f s, against %.2f s by priority (%s). "
           "Priority holds the %s tail: at most %.2f s (at %g%%) over every share run, where "
           "first come first served's grows from %.2f s to %.2f s.",
           z->share, k->inter_name, z->ttft_fcfs, z->ttft_prio, ratio, k->inter_name, hi,
           p[idx[at]].share, a->ttft_fcfs, z->ttft_fcfs);
    ls_keep(r, "lightest_share_pct", a->share);
    ls_keep(r, "heaviest_share_pct", z->share);
    ls_keep(r, "heaviest_ttft_p99_fcfs_s", z->ttft_fcfs);
    ls_keep(r, "heaviest_ttft_p99_prio_s", z->ttft_prio);
    ls_keep(r, "heaviest_ttft_ratio", x);
    ls_keep(r, "worst_ttft_p99_prio_s", hi);
}

/* The interactive class's TTFT target, each way: from which share it is missed. */
static void prio_target(ls_result *r, const prio_classes *k, const prio_point *p, const int *idx,
                        int n)
{
    if (!isfinite(k->ttft_target)) return;
    int f = first_missed(p, idx, n, k->ttft_target, false),
        q = first_missed(p, idx, n, k->ttft_target, true);
    char fcfs[160], prio[160];
    if (f >= 0)
        snprintf(fcfs, sizeof fcfs, "first come first served misses it from %g%% batch (%.2f s)",
                 p[idx[f]].share, p[idx[f]].ttft_fcfs);
    else
        snprintf(fcfs, sizeof fcfs, "first come first served meets it at every share run");
    if (q >= 0)
        snprintf(prio, sizeof prio, "priority misses it from %g%% (%.2f s)", p[idx[q]].share,
                 p[idx[q]].ttft_prio);
    else
        snprintf(prio, sizeof prio, "priority meets it at every share run");
    ls_say(r, "Against the %s class's %g s TTFT target, %s; %s.", k->inter_name, k->ttft_target,
           fcfs, prio);
    ls_keep(r, "ttft_target_s", k->ttft_target);
    ls_keep(r, "fcfs_misses_from_pct", f >= 0 ? p[idx[f]].share : NAN);
    ls_keep(r, "prio_misses_from_pct", q >= 0 ? p[idx[q]].share : NAN);
}

/* The batch tier absorbs the queue: its wait at both ends, and where
 * priority moved the most of the interactive requests' wait onto it. */
static void prio_absorb(ls_result *r, const prio_classes *k, const prio_point *p, const int *idx,
                        int n)
{
    const prio_point *a = &p[idx[0]], *z = &p[idx[n - 1]];
    int most = 0;
    for (int i = 1; i < n; i++)
        if (p[idx[i]].queue_prio - p[idx[i]].queue_fcfs >
            p[idx[most]].queue_prio - p[idx[most]].queue_fcfs)
            most = i;
    const prio_point *m = &p[idx[most]];
    char moved[200] = "";
    if (m->queue_prio > m->queue_fcfs)
        snprintf(moved, sizeof moved,
                 " At %g%% it waits %.1f s by priority against %.1f s first come first served: "
                 "the wait the %s requests no longer have is theirs.",
                 m->share, m->queue_prio, m->queue_fcfs, k->inter_name);
    ls_say(r,
           "The %s tier absorbs the queue: by priority its requests wait %.1f s on average in the "
           "replica's queue at %g%% and %.1f s at %g%% (first come first served: %.1f s and "
           "%.1f s), its e2e P99 %.1f s at %g%%.%s",
           k->batch_name, a->queue_prio, a->share, z->queue_prio, z->share, a->queue_fcfs,
           z->queue_fcfs, z->e2e_prio, z->share, moved);
    ls_keep(r, "lightest_batch_queue_prio_s", a->queue_prio);
    ls_keep(r, "heaviest_batch_queue_prio_s", z->queue_prio);
    ls_keep(r, "heaviest_batch_queue_fcfs_s", z->queue_fcfs);
    ls_keep(r, "most_moved_share_pct", m->queue_prio > m->queue_fcfs ? m->share : NAN);
}

/* The scenario's gateway (cluster.gateway), its keys' defaults where the
 * scenario leaves them out (docs/gateway.md). */
typedef struct prio_gateway {
    bool on;
    double queue_depth, kv_cache, shed_priority;
} prio_gateway;

static prio_gateway prio_gateway_of(const ls_context *c)
{
    cJSON *root = cJSON_Parse(c->base.json);
    const cJSON *g = util_json_get(root, "cluster.gateway");
    prio_gateway gw = {g != NULL, util_json_number(g, "queue_depth_threshold", 5),
                       util_json_number(g, "kv_cache_threshold", 0.8),
                       util_json_number(g, "shed_priority", 2)};
    cJSON_Delete(root);
    return gw;
}

/* Where shedding starts: the first share whose priority run shed. */
static void prio_shed(ls_result *r, const prio_classes *k, const prio_point *p, const int *idx,
                      int n, const prio_gateway *gw)
{
    int s = first_shed(p, idx, n, true);
    const prio_point *a = &p[idx[0]], *z = &p[idx[n - 1]];
    char rule[320] = "";
    if (gw->on)
        snprintf(rule, sizeof rule,
                 "the gateway (cluster.gateway) refuses a request of priority %g or less urgent "
                 "while the replicas are saturated -- the mean over them of max(waiting requests "
                 "/ %g, KV cache use / %g) at 1 or more -- and holds the others until they are "
                 "not",
                 gw->shed_priority, gw->queue_depth, gw->kv_cache);
    if (s >= 0) {
        char below[96] = "";
        if (s > 0) snprintf(below, sizeof below, ", none at %g%% and below", p[idx[s - 1]].share);
        int f = first_shed(p, idx, n, false);
        char fcfs[160] = "";
        if (f >= 0)
            snprintf(fcfs, sizeof fcfs,
                     " First come first served sheds from %g%% (%.1f%% there, %.1f%% at %g%%).",
                     p[idx[f]].share, p[idx[f]].shed_fcfs, z->shed_fcfs, z->share);
        ls_say(r,
               "Shedding starts at a %g%% batch share: %s. By priority it refused %.1f%% of the "
               "%s requests there%s, and %.1f%% at %g%%.%s",
               p[idx[s]].share, gw->on ? rule : "requests were refused", p[idx[s]].shed,
               k->batch_name, below, z->shed, z->share, fcfs);
        ls_keep(r, "fcfs_shedding_starts_pct", f >= 0 ? p[idx[f]].share : NAN);
    } else if (gw->on && k->batch_priority < gw->shed_priority)
        ls_say(r,
               "No request was shed within the shares run (%g%% to %g%%): %s, and the %s class "
               "is of priority %d, which it holds instead.",
               a->share, z->share, rule, k->batch_name, k->batch_priority);
    else if (gw->on)
        ls_say(r,
               "No request was shed within the shares run (%g%% to %g%%): %s, and it never found "
               "them so.",
               a->share, z->share, rule);
    else
        ls_say(r,
               "No request was shed within the shares run (%g%% to %g%%): without a gateway "
               "(cluster.gateway) every %s request is queued, however long the queue.",
               a->share, z->share, k->batch_name);
    ls_keep(r, "shedding_starts_pct", s >= 0 ? p[idx[s]].share : NAN);
    ls_keep(r, "last_unshed_pct", s > 0 ? p[idx[s - 1]].share : NAN);
    ls_keep(r, "heaviest_shed_pct", z->shed);
}

/* Interactive TTFT P99 each way, the batch tier's queueing each way and,
 * with a gateway, what it shed, over the share. */
static void prio_figure(const ls_context *c, ls_result *r, const prio_classes *k,
                        const prio_point *p, const int *idx, int n, bool gateway)
{
    char *title = ls_title(c), subtitle[200];
    snprintf(subtitle, sizeof subtitle,
             "priority scheduling holds the %s tail while the %s tier absorbs the queue",
             k->inter_name, k->batch_name);
    ls_plot_init(r, title, subtitle, "batch share of the requests", "%", AN_SCALE_LINEAR);
    free(title);
    char label[96];
    snprintf(label, sizeof label, "%s TTFT P99", k->inter_name);
    int ttft = ls_plot_panel(r, label, "s", AN_SCALE_LOG);
    snprintf(label, sizeof label, "%s queueing, mean", k->batch_name);
    int queue = ls_plot_panel(r, label, "s", AN_SCALE_AUTO);
    snprintf(label, sizeof label, "%s requests shed", k->batch_name);
    int shed = gateway ? ls_plot_panel(r, label, "%", AN_SCALE_AUTO) : -1;
    const ls_field_series series[] = {
        {ttft, "fcfs", offsetof(prio_point, ttft_fcfs), 1, 1},
        {ttft, "priority", offsetof(prio_point, ttft_prio), 2, 1},
        {queue, "fcfs", offsetof(prio_point, queue_fcfs), 1, 1},
        {queue, "priority", offsetof(prio_point, queue_prio), 2, 1},
        {shed, "fcfs", offsetof(prio_point, shed_fcfs), 1, 1},
        {shed, "priority", offsetof(prio_point, shed), 2, 1},
    };
    ls_points_of pts = {p, sizeof *p, offsetof(prio_point, share), idx, n};
    ls_plot_fields(r, &pts, series, (int)(sizeof series / sizeof series[0]));
    if (isfinite(k->ttft_target)) {
        snprintf(label, sizeof label, "TTFT target %g s", k->ttft_target);
        ls_plot_guide(r, ttft, AN_GUIDE_SLO, label, k->ttft_target, false);
    }
    int s = first_shed(p, idx, n, true);
    if (s >= 0 && shed >= 0) {
        snprintf(label, sizeof label, "shedding starts by priority, %g%%", p[idx[s]].share);
        ls_plot_guide(r, shed, AN_GUIDE_MARK, label, p[idx[s]].share, true);
    }
}

/* The scenario's two classes, sharing one arrival stream by weight, of
 * two priorities. */
static int prio_find_classes(const ls_context *c, prio_classes *k, util_diag *d)
{
    const wl_spec *w = &c->scenario->workload;
    if (w->n_classes != 2)
        return util_diag_add(d,
                             "workload.classes: the lesson shares the traffic between two "
                             "classes, an interactive one and a batch one; the scenario has %d",
                             w->n_classes);
    for (int i = 0; i < 2; i++)
        if (!(w->classes[i].weight > 0))
            return util_diag_add(d,
                                 "workload.classes[%d]: the lesson sets the classes' weights "
                                 "(their shares of workload.arrival): give it a weight, not its "
                                 "own arrival",
                                 i);
    int p0 = c->scenario->class_sched[0].priority, p1 = c->scenario->class_sched[1].priority;
    if (p0 == p1)
        return util_diag_add(d,
                             "workload.classes[].priority: both classes are of priority %d; the "
                             "lesson compares two tiers: make the interactive one more urgent "
                             "(lower)",
                             p0);
    k->interactive = p0 < p1 ? 0 : 1;
    k->batch = 1 - k->interactive;
    k->inter_name = w->classes[k->interactive].name;
    k->batch_name = w->classes[k->batch].name;
    k->inter_priority = k->interactive ? p1 : p0;
    k->batch_priority = k->interactive ? p0 : p1;
    cJSON *root = cJSON_Parse(c->base.json);
    char path[64];
    snprintf(path, sizeof path, "workload.classes.%d.slo.ttft_s", k->interactive);
    k->ttft_target = util_json_number(root, path, util_json_number(root, "slo.ttft_s", NAN));
    cJSON_Delete(root);
    return UTIL_OK;
}

static cJSON *prio_overrides(const prio_classes *k, double share, const char *policy,
                             double requests)
{
    char path[64];
    cJSON *o = cJSON_CreateObject();
    snprintf(path, sizeof path, "workload.classes.%d.weight", k->batch);
    cJSON_AddNumberToObject(o, path, share);
    snprintf(path, sizeof path, "workload.classes.%d.weight", k->interactive);
    cJSON_AddNumberToObject(o, path, 1 - share);
    cJSON_AddStringToObject(o, policy_key, policy);
    cJSON_AddNumberToObject(o, "stop.requests", requests);
    return o;
}

/* A class's shed requests of those arrived, %: every rejected one the
 * gateway's (requests.reason 'shed'). */
static double shed_pct(const ls_figures *f, const char *name)
{
    const ls_class_figures *x = ls_class_of(f, name);
    return x && x->arrived > 0 ? 100 * x->shed / x->arrived : NAN;
}

static prio_point prio_point_of(const prio_classes *k, double share, const ls_figures *fcfs,
                                const ls_figures *prio)
{
    const ls_class_figures *fi = ls_class_of(fcfs, k->inter_name),
                           *pi = ls_class_of(prio, k->inter_name),
                           *fb = ls_class_of(fcfs, k->batch_name),
                           *pb = ls_class_of(prio, k->batch_name);
    return (prio_point){
        .share = 100 * share,
        .ttft_fcfs = fi ? fi->ttft_p99 : NAN,
        .ttft_prio = pi ? pi->ttft_p99 : NAN,
        .queue_fcfs = fb ? fb->queue_mean : NAN,
        .queue_prio = pb ? pb->queue_mean : NAN,
        .e2e_prio = pb ? pb->e2e_p99 : NAN,
        .shed = shed_pct(prio, k->batch_name),
        .shed_fcfs = shed_pct(fcfs, k->batch_name),
    };
}

/* Each batch share twice with one seed: first come first served, then
 * vLLM's priority order. */
int ls__priorities(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *shares = ls_knobs(c, c->quick ? "quick_batch_shares" : "batch_shares", &n);
    double requests = c->quick ? ls_knob(c, "quick_requests", 1200) : ls_knob(c, "requests", 1200);
    prio_classes k = {0};
    int rc = n < 2 ? util_diag_add(d, "lesson.batch_shares: give at least two shares")
                   : prio_find_classes(c, &k, d);
    for (int i = 0; !rc && i < n; i++)
        if (!(shares[i] > 0 && shares[i] < 1))
            rc = util_diag_add(d,
                               "lesson.batch_shares: %g is not a share between 0 and 1 (each "
                               "class keeps a weight above 0)",
                               shares[i]);
    cJSON **ov = util_xcalloc(2 * (size_t)n + 1, sizeof *ov);
    ls_figures *rep = util_xcalloc(2 * (size_t)n + 1, sizeof *rep);
    for (int i = 0; !rc && i < n; i++) {
        ov[2 * i] = prio_overrides(&k, shares[i], "fcfs", requests);
        ov[2 * i + 1] = prio_overrides(&k, shares[i], "priority", requests);
    }
    if (!rc) rc = ls_points(c, ov, 2 * n, false, rep, d);
    prio_point *p = util_xcalloc((size_t)n + 1, sizeof *p);
    int *idx = util_xcalloc((size_t)n + 1, sizeof *idx);
    if (!rc) prio_columns(r);
    for (int i = 0; !rc && i < n; i++)
        p[i] = prio_point_of(&k, shares[i], &rep[2 * i], &rep[2 * i + 1]);
    if (!rc) {
        by_share(p, n, idx);
        for (int i = 0; i < n; i++)
            prio_row(r, &p[idx[i]]);
        prio_gateway gw = prio_gateway_of(c);
        prio_hold(r, &k, p, idx, n);
        prio_target(r, &k, p, idx, n);
        prio_absorb(r, &k, p, idx, n);
        prio_shed(r, &k, p, idx, n, &gw);
        ls_keep(r, "interactive_priority", k.inter_priority);
        ls_keep(r, "batch_priority", k.batch_priority);
        prio_figure(c, r, &k, p, idx, n, gw.on);
    }
    for (int i = 0; i < 2 * n; i++)
        cJSON_Delete(ov[i]);
    free(ov);
    free(rep);
    free(p);
    free(idx);
    free(shares);
    return rc;
}
