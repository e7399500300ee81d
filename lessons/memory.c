/*
 * memory.c: when the working set outgrows HBM -- chat sessions in flight on
 * one replica whose prefix cache keeps each session's history between its
 * turns, each number of sessions run on the GPU alone and with the CPU tier
 * below it (cluster.kv_offload): as the histories outgrow HBM's KV the hit
 * rate falls and TTFT climbs; the tier pulls the hit rate back until it is
 * full or its link busy, whichever the run measures.
 */
#include "ls_int.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* What the GPU-only runs remove: the tier, as --unset does. */
static const char tier_key[] = "cluster.kv_offload";

#define GIB 1073741824.0

typedef struct mem_point {
    double sessions;             /* in flight: the closed loop's users */
    double working_gib, hbm_gib; /* the histories held, and HBM's KV capacity */
    double hit_gpu, hit_tier;    /* prefix cache hit rate each way, % */
    double p50_gpu, p50_tier;    /* TTFT P50 each way, s */
    double p99_gpu, p99_tier;    /* TTFT P99 each way, s */
    double pcie_gbs, link_pct;   /* the tier's loads: GB/s over the run, and the link's
                                  * busy share, % */
} mem_point;

/* What the points are measured against: the tier's size and its link. */
typedef struct mem_setup {
    double tier_gib; /* cluster.kv_offload.cpu_gib over the replicas; 0: none */
    double link_gbs; /* pcie_gbs x GPUs over the replicas, GB/s */
    bool has_tier;   /* the scenario has cluster.kv_offload, which the GPU-only runs remove */
} mem_setup;

static void mem_columns(ls_result *r)
{
    ls_column_format(r, "sessions", "sessions", "in flight", 0);
    ls_column_format(r, "working_set_gib", "working set", "GiB", 1);
    ls_column_format(r, "hbm_kv_gib", "HBM KV", "GiB", 1);
    ls_column_format(r, "hit_gpu_pct", "hit GPU", "%", 1);
    ls_column_format(r, "hit_tier_pct", "hit +CPU", "%", 1);
    ls_column_format(r, "ttft_p50_gpu_s", "TTFT GPU", "s P50", 3);
    ls_column_format(r, "ttft_p50_tier_s", "TTFT +CPU", "s P50", 3);
    ls_column_format(r, "ttft_p99_gpu_s", "TTFT GPU", "s P99", 2);
    ls_column_format(r, "ttft_p99_tier_s", "TTFT +CPU", "s P99", 2);
    ls_column_format(r, "pcie_gbs", "PCIe loads", "GB/s", 2);
    ls_column_format(r, "link_busy_pct", "link busy", "%", 1);
}

static void mem_row(ls_result *r, mem_point *p)
{
    double *v[] = {&p->sessions, &p->working_gib, &p->hbm_gib,  &p->hit_gpu,
                   &p->hit_tier, &p->p50_gpu,     &p->p50_tier, &p->p99_gpu,
                   &p->p99_tier, &p->pcie_gbs,    &p->link_pct};
    assert((int)(sizeof v / sizeof v[0]) == r->n_columns);
    ls_row_rounded(r, v);
}

/* The first point whose working set passes gib, or -1. */
static int first_past(const mem_point *p, int n, double gib)
{
    for (int i = 0; i < n; i++)
        if (p[i].working_gib > gib) return i;
    return -1;
}

/* On the GPU alone: where the working set outgrows HBM, and what that does. */
static void mem_hbm(ls_result *r, const mem_point *p, int n, double tokens)
{
    const mem_point *a = &p[0], *z = &p[n - 1];
    int h = first_past(p, n, a->hbm_gib);
    char past[400], hit_z[48] = "", ttft_z[48] = ""; /* the last point's, when not h */
    if (h >= 0 && h < n - 1) {
        snprintf(hit_z, sizeof hit_z, " and %.1f%% at %g", z->hit_gpu, z->sessions);
        snprintf(ttft_z, sizeof ttft_z, " and %.3f s", z->p50_gpu);
    }
    if (h >= 0)
        snprintf(past, sizeof past,
                 "The working set outgrows HBM from %g sessions (%.1f GiB): the hit rate falls to "
                 "%.1f%% there%s, and TTFT P50 climbs to %.3f s%s, as every evicted history is "
                 "prefilled again.",
                 p[h].sessions, p[h].working_gib, p[h].hit_gpu, hit_z, p[h].p50_gpu, ttft_z);
    else
        snprintf(past, sizeof past,
                 "The working set stays within HBM at every point run (%.1f GiB at %g sessions).",
                 z->working_gib, z->sessions);
    ls_say(r,
           "On the GPU alone, %g sessions in flight hold %.1f GiB of history (%.0f tokens a "
           "session, its mean prompt) against HBM's %.1f GiB of KV: the prefix cache serves "
           "%.1f%% of the prompt tokens and TTFT P50 is %.3f s. %s",
           a->sessions, a->working_gib, tokens, a->hbm_gib, a->hit_gpu, a->p50_gpu, past);
    ls_keep(r, "hbm_kv_gib", a->hbm_gib);
    ls_keep(r, "past_hbm_sessions", h >= 0 ? p[h].sessions : NAN);
    ls_keep(r, "session_tokens", tokens);
}

/* The point where the tier gained the most hit rate: what it brings back. */
static void mem_tier(ls_result *r, const mem_setup *s, const mem_point *p, int n)
{
    if (!(s->tier_gib > 0)) {
        ls_say(r, "There is no CPU tier (cluster.kv_offload.cpu_gib 0, or no cluster.kv_offload): "
                  "both runs of each point are the GPU's alone.");
        ls_keep(r, "most_helped_sessions", NAN);
        return;
    }
    int m = 0;
    for (int i = 1; i < n; i++)
        if (p[i].hit_tier - p[i].hit_gpu > p[m].hit_tier - p[m].hit_gpu) m = i;
    ls_say(r,
           "A %.0f GiB CPU tier (cluster.kv_offload.cpu_gib) keeps what HBM evicts and loads it "
           "back over PCIe instead of prefilling it: at %g sessions the hit rate is %.1f%% with "
           "it against %.1f%% without, TTFT P50 %.3f s against %.3f s (P99 %.2f s against "
           "%.2f s).",
           s->tier_gib, p[m].sessions, p[m].hit_tier, p[m].hit_gpu, p[m].p50_tier, p[m].p50_gpu,
           p[m].p99_tier, p[m].p99_gpu);
    ls_keep(r, "tier_gib", s->tier_gib);
    ls_keep(r, "most_helped_sessions", p[m].sessions);
}

/* What limits the tier, from two shares of demand over capacity: the
 * working set over HBM and the tier (full) and the link's busy time over
 * the run (busy).  The larger, once at 1 or more, is the limit: 1 the
 * tier's size, 2 PCIe; 0 neither. */
static int limit_of(double full, double busy)
{
    if (full < 1 && busy < 1) return 0;
    return full >= busy ? 1 : 2;
}

/* Where the tier stops helping, and why: at the most sessions, the working
 * set against HBM and the tier together, and the link's busy share -- both
 * demand over capacity, so the larger is the limit. */
static void mem_limit(ls_result *r, const mem_setup *s, const mem_point *p, int n)
{
    if (!(s->tier_gib > 0)) return;
    const mem_point *z = &p[n - 1];
    double both = z->hbm_gib + s->tier_gib, full = z->working_gib / both, busy = z->link_pct / 100;
    int f = first_past(p, n, both);
    char where[300];
    if (f > 0)
        snprintf(where, sizeof where,
                 "The tier stops helping where the working set outgrows HBM and the tier "
                 "together (%.1f GiB): from %g sessions (%.1f GiB) the hit rate with it falls "
                 "to %.1f%%, from %.1f%% at %g.",
                 both, p[f].sessions, p[f].working_gib, p[f].hit_tier, p[f - 1].hit_tier,
                 p[f - 1].sessions);
    else if (f == 0)
        snprintf(where, sizeof where,
                 "The working set outgrows HBM and the tier together (%.1f GiB) from the first "
                 "point run.",
                 both);
    else
        snprintf(where, sizeof where,
                 "The working set stays within HBM and the tier together (%.1f GiB) at every "
                 "point run.",
                 both);
    static const char *const says[] = {"neither is full yet",
                                       "the tier's size is the limit, not PCIe",
                                       "PCIe is the limit, not the tier's size"};
    int limit = limit_of(full, busy);
    ls_say(r,
           "%s At %g sessions the tier's loads took %.2f GB/s of the link's %.0f GB/s "
           "(pcie_gbs x GPUs), busy %.1f%% of the run, and the working set is %.2f times what HBM "
           "and the tier hold: %s.",
           where, z->sessions, z->pcie_gbs, s->link_gbs, z->link_pct, full, says[limit]);
    ls_keep(r, "past_tier_sessions", f > 0 ? p[f].sessions : NAN);
    ls_keep(r, "heaviest_link_busy_pct", z->link_pct);
    ls_keep(r, "heaviest_fill", full);
    ls_keep(r, "limit_is_pcie", limit ? limit == 2 : NAN);
}

/* Hit rate, TTFT P50 and the tier's loads over the sessions, each way. */
static void mem_figure(const ls_context *c, ls_result *r, const mem_setup *s, const mem_point *p,
                       int n)
{
    char *title = ls_title(c);
    ls_plot_init(r, title, "the working set outgrows HBM; a CPU tier pulls the hit rate back",
                 "sessions in flight", "", AN_SCALE_LOG);
    free(title);
    int hit = ls_plot_panel(r, "prefix cache hit rate", "%", AN_SCALE_LINEAR);
    int ttft = ls_plot_panel(r, "TTFT P50", "s", AN_SCALE_LOG);
    int link = s->tier_gib > 0 ? ls_plot_panel(r, "PCIe loads", "GB/s", AN_SCALE_AUTO) : -1;
    bool tier = s->tier_gib > 0; /* the tier's series only with a tier */
    const ls_field_series series[] = {
        {hit, "GPU only", offsetof(mem_point, hit_gpu), 1, 1},
        {tier ? hit : -1, "with CPU tier", offsetof(mem_point, hit_tier), 2, 1},
        {ttft, "GPU only", offsetof(mem_point, p50_gpu), 1, 1},
        {tier ? ttft : -1, "with CPU tier", offsetof(mem_point, p50_tier), 2, 1},
        {link, "with CPU tier", offsetof(mem_point, pcie_gbs), 2, 1},
    };
    ls_points_of pts = {p, sizeof *p, offsetof(mem_point, sessions), NULL, n};
    ls_plot_fields(r, &pts, series, (int)(sizeof series / sizeof series[0]));
    ls_plot_x_ticks_of(r, &pts);
    int h = first_past(p, n, p[0].hbm_gib);
    if (h >= 0) ls_plot_guide(r, hit, AN_GUIDE_MARK, "past HBM", p[h].sessions, true);
    int f = s->tier_gib > 0 ? first_past(p, n, p[0].hbm_gib + s->tier_gib) : -1;
    if (f >= 0) ls_plot_guide(r, hit, AN_GUIDE_MARK, "past HBM + CPU tier", p[f].sessions, true);
}

/* The scenario's: chat sessions from a closed loop (its users are the
 * sessions in flight), and the tier and its link. */
static int mem_setup_of(const ls_context *c, mem_setup *s, util_diag *d)
{
    cJSON *root = cJSON_Parse(c->base.json);
    const cJSON *proc = util_json_get(root, "workload.arrival.process");
    const char *name = cJSON_GetStringValue(proc);
    int rc = UTIL_OK;
    if (!name || strcmp(name, "closed"))
        rc = util_diag_add(d,
                           "workload.arrival.process: the lesson's knob is a closed loop's users, "
                           "each a session after session; the scenario's process is %s",
                           name ? name : "not given");
    if (!util_json_get(root, "workload.sessions"))
        rc = util_diag_add(d, "workload.sessions: the lesson runs chat sessions; give them");
    s->has_tier = util_json_get(root, tier_key) != NULL;
    cJSON_Delete(root);
    const sim_scenario *sc = c->scenario;
    s->link_gbs = 0;
    for (int i = 0; i < sc->n_pools; i++)
        s->link_gbs +=
            sc->pools[i].cost.gpu.pcie_bw * sc->pools[i].gpus * sc->pools[i].replicas / 1e9;
    s->tier_gib = sc->kv_offload.cpu_bytes * sc->replicas / GIB;
    return rc;
}

static mem_point mem_point_of(double sessions, const mem_setup *s, const ls_figures *gpu,
                              const ls_figures *tier)
{
    double tokens = gpu->measured > 0 ? gpu->input_tokens / gpu->measured : NAN;
    double link_s = tier->cpu_loaded_bytes / (s->link_gbs * 1e9);
    return (mem_point){
        .sessions = sessions,
        .working_gib = sessions * tokens * gpu->kv_bytes_per_token / GIB,
        .hbm_gib = gpu->kv_capacity_tokens * gpu->kv_bytes_per_token / GIB,
        .hit_gpu = 100 * gpu->prefix_hit_rate,
        .hit_tier = 100 * tier->prefix_hit_rate,
        .p50_gpu = gpu->ttft_p50,
        .p50_tier = tier->ttft_p50,
        .p99_gpu = gpu->ttft_p99,
        .p99_tier = tier->ttft_p99,
        .pcie_gbs = tier->cpu_loaded_bytes / tier->sim_time_s / 1e9,
        .link_pct = 100 * link_s / tier->sim_time_s,
    };
}

static int check_sessions(const double *v, int n, util_diag *d)
{
    if (n < 2) return util_diag_add(d, "lesson.sessions_in_flight: give at least two numbers");
    for (int i = 0; i < n; i++)
        if (!(v[i] >= 1 && v[i] == floor(v[i]) && (i == 0 || v[i] > v[i - 1])))
            return util_diag_add(d,
                                 "lesson.sessions_in_flight: %g is not a whole number of "
                                 "sessions of at least 1, above the one before it",
                                 v[i]);
    return UTIL_OK;
}

/* The table, the sentences and the figure of the runs, rep[2i] point i's
 * on the GPU alone and rep[2i + 1] with the tier. */
static void mem_show(const ls_context *c, ls_result *r, const mem_setup *s, const double *sessions,
                     const ls_figures *rep, int n)
{
    mem_point *p = util_xcalloc((size_t)n + 1, sizeof *p);
    mem_columns(r);
    for (int i = 0; i < n; i++) {
        p[i] = mem_point_of(sessions[i], s, &rep[2 * i], &rep[2 * i + 1]);
        mem_row(r, &p[i]);
    }
    double tokens = rep[0].measured > 0 ? rep[0].input_tokens / rep[0].measured : NAN;
    mem_hbm(r, p, n, tokens);
    mem_tier(r, s, p, n);
    mem_limit(r, s, p, n);
    mem_figure(c, r, s, p, n);
    free(p);
}

/* Each number of sessions twice with one seed: the GPU alone (the scenario
 * less cluster.kv_offload), then with the tier; each user runs
 * sessions_per_user sessions (stop.requests counts sessions).  A point
 * takes a fraction of a second, so --quick runs the lesson whole. */
int ls__memory(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *sessions = ls_knobs(c, "sessions_in_flight", &n);
    double per_user = ls_knob(c, "sessions_per_user", 3);
    mem_setup s = {0};
    int rc = check_sessions(sessions, n, d);
    if (!rc && !(per_user >= 1))
        rc = util_diag_add(d, "lesson.sessions_per_user: %g is not at least 1", per_user);
    if (!rc) rc = mem_setup_of(c, &s, d);
    cJSON **ov = util_xcalloc(2 * (size_t)n + 1, sizeof *ov);
    const char **unset = util_xcalloc(2 * (size_t)n + 1, sizeof *unset);
    ls_figures *rep = util_xcalloc(2 * (size_t)n + 1, sizeof *rep);
    for (int i = 0; !rc && i < 2 * n; i++) {
        ov[i] = ls_with("workload.arrival.users", sessions[i / 2]);
        cJSON_AddNumberToObject(ov[i], "stop.requests", ceil(sessions[i / 2] * per_user));
        unset[i] = i % 2 == 0 && s.has_tier ? tier_key : NULL;
    }
    if (!rc) rc = ls_points_without(c, ov, unset, 2 * n, false, rep, d);
    if (!rc) mem_show(c, r, &s, sessions, rep, n);
    for (int i = 0; i < 2 * n; i++)
        cJSON_Delete(ov[i]);
    free(ov);
    free(unset);
    free(rep);
    free(sessions);
    return rc;
}
