/*
 * day.c: a day of traffic on an autoscaled fleet -- the autoscaler's
 * target swept, each point's day costed (GPU-hours and $, every replica
 * paid over its life) against its TTFT tail, beside a static fleet sized
 * for the peak it reached: a low target buys the tail with replicas; a
 * high one saves them and the tail pays while new replicas start.
 */
#include "ls_int.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* What the static runs remove: the autoscaler, as --unset does. */
static const char autoscaler_key[] = "cluster.autoscaler";

typedef struct day_point {
    double target;              /* cluster.autoscaler.target */
    double gpu_hours, usd;      /* the day's cost, autoscaled */
    double p99, attain, missed; /* TTFT P99 (s); SLO attainment and its complement, % */
    double peak, mean;          /* replicas held: at most at once, on average */
    double static_usd, static_p99, static_missed; /* a fixed fleet of peak replicas */
} day_point;

/* The scenario's: the SLO the tail is held to, and a new replica's start-up. */
typedef struct day_setup {
    double slo_ttft_s;  /* slo.ttft_s */
    double startup_s;   /* provision + load + warm-up (cluster.lifecycle) */
    double interval_s;  /* the autoscaler's decisions */
    const char *metric; /* what it reads */
} day_setup;

static void day_columns(ls_result *r)
{
    ls_column_format(r, "target", "target", "per replica", 0);
    ls_column_format(r, "gpu_hours", "cost", "GPU-h", 2);
    ls_column_format(r, "usd", "cost", "$", 2);
    ls_column_format(r, "ttft_p99_s", "TTFT", "s P99", 3);
    ls_column_format(r, "attainment_pct", "SLO met", "%", 2);
    ls_column_format(r, "missed_pct", "missed", "%", 2);
    ls_column_format(r, "peak_replicas", "replicas", "peak", 0);
    ls_column_format(r, "mean_replicas", "replicas", "mean", 2);
    ls_column_format(r, "static_usd", "static", "$", 2);
    ls_column_format(r, "static_ttft_p99_s", "static", "s P99", 3);
    ls_column_format(r, "static_missed_pct", "static", "missed %", 2);
}

static void day_row(ls_result *r, day_point *p)
{
    double *v[] = {&p->target,     &p->gpu_hours,  &p->usd,          &p->p99,
                   &p->attain,     &p->missed,     &p->peak,         &p->mean,
                   &p->static_usd, &p->static_p99, &p->static_missed};
    assert((int)(sizeof v / sizeof v[0]) == r->n_columns);
    ls_row_rounded(r, v);
}

/* The lowest target against the highest: what the replicas bought. */
static void day_trade(ls_result *r, const day_setup *s, const day_point *p, int n)
{
    const day_point *a = &p[0], *z = &p[n - 1];
    ls_say(r,
           "At target %g (%s per replica) the autoscaler held %.2f replicas on average, %g at "
           "the peak, for %.2f GPU-hours ($%.2f): TTFT P99 %.3f s and %.2f%% of the requests "
           "missed the %g s TTFT SLO. At target %g it held %.2f (%g at the peak) for %.2f "
           "GPU-hours ($%.2f): P99 %.3f s, %.2f%% missed. The low target buys the tail with "
           "%.0f%% more cost.",
           a->target, s->metric, a->mean, a->peak, a->gpu_hours, a->usd, a->p99, a->missed,
           s->slo_ttft_s, z->target, z->mean, z->peak, z->gpu_hours, z->usd, z->p99, z->missed,
           100 * (a->usd / z->usd - 1));
    ls_keep(r, "cost_ratio_low_over_high", a->usd / z->usd);
}

/* The cheapest target whose P99 meets the SLO, and why the higher ones
 * miss: replicas the autoscaler asks for serve only start-up seconds later. */
static void day_lag(ls_result *r, const day_setup *s, const day_point *p, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (p[i].p99 <= s->slo_ttft_s) best = i;
    char head[300];
    if (best >= 0)
        snprintf(head, sizeof head,
                 "The cheapest target whose TTFT P99 meets the SLO is %g ($%.2f, P99 %.3f s).",
                 p[best].target, p[best].usd, p[best].p99);
    else
        snprintf(head, sizeof head, "No target run holds TTFT P99 within the %g s SLO.",
                 s->slo_ttft_s);
    const day_point *z = &p[n - 1];
    char saves[240] = ""; /* when the highest target costs the cheapest meeting one's or more */
    if (best >= 0 && best < n - 1 && z->usd >= p[best].usd)
        snprintf(saves, sizeof saves,
                 " -- and it saves nothing: $%.2f against $%.2f, as the backlog built while "
                 "replicas start takes more of them to drain (%g at the peak against %g)",
                 z->usd, p[best].usd, z->peak, p[best].peak);
    ls_say(r,
           "%s A replica the autoscaler adds serves %.0f s after it is made (provision, load, "
           "warm-up), decided every %g s: a high target runs the fleet hot, so while the "
           "traffic rises the queue outgrows the replicas still starting, and the tail pays -- "
           "at target %g, %.2f%% of the requests missed the SLO%s.",
           head, s->startup_s, s->interval_s, z->target, z->missed, saves);
    ls_keep(r, "highest_saves_nothing", saves[0] != 0);
    ls_keep(r, "cheapest_meeting_target", best >= 0 ? p[best].target : NAN);
    ls_keep(r, "startup_s", s->startup_s);
}

/* Against a static fleet sized for each point's peak: what scaling saved. */
static void day_static(ls_result *r, const day_point *p, int n)
{
    int m = 0; /* the point whose autoscaler saved the largest share */
    for (int i = 1; i < n; i++)
        if (p[i].usd / p[i].static_usd < p[m].usd / p[m].static_usd) m = i;
    ls_say(r,
           "A static fleet of the peak's replicas all day never waits for one to start: at "
           "target %g its %g replicas cost $%.2f with P99 %.3f s (%.2f%% missed), against the "
           "autoscaler's $%.2f -- %.0f%% of the cost saved by following the day down.",
           p[m].target, p[m].peak, p[m].static_usd, p[m].static_p99, p[m].static_missed, p[m].usd,
           100 * (1 - p[m].usd / p[m].static_usd));
    ls_keep(r, "largest_saving_target", p[m].target);
}

/* Cost, TTFT P99 and the missed share over the target, autoscaled and static. */
static void day_figure(const ls_context *c, ls_result *r, const day_setup *s, const day_point *p,
                       int n)
{
    char *title = ls_title(c);
    ls_plot_init(r, title, "a low target buys the tail with cost; a high one pays in start-up lag",
                 "autoscaler target", "per replica", AN_SCALE_LOG);
    free(title);
    int cost = ls_plot_panel(r, "the day's cost", "$", AN_SCALE_AUTO);
    int p99 = ls_plot_panel(r, "TTFT P99", "s", AN_SCALE_LOG);
    int missed = ls_plot_panel(r, "missed the SLO", "%", AN_SCALE_AUTO);
    const ls_field_series series[] = {
        {cost, "autoscaled", offsetof(day_point, usd), 1, 0},
        {cost, "static at its peak", offsetof(day_point, static_usd), 2, 1},
        {p99, "autoscaled", offsetof(day_point, p99), 1, 0},
        {p99, "static at its peak", offsetof(day_point, static_p99), 2, 1},
        {missed, "autoscaled", offsetof(day_point, missed), 1, 0},
        {missed, "static at its peak", offsetof(day_point, static_missed), 2, 1},
    };
    ls_points_of pts = {p, sizeof *p, offsetof(day_point, target), NULL, n};
    ls_plot_fields(r, &pts, series, (int)(sizeof series / sizeof series[0]));
    ls_plot_x_ticks_of(r, &pts);
    ls_plot_guide(r, p99, AN_GUIDE_SLO, "SLO", s->slo_ttft_s, false);
}

/* The scenario's: an autoscaler on its one pool and a TTFT SLO. */
static int day_setup_of(const ls_context *c, day_setup *s, util_diag *d)
{
    cJSON *root = cJSON_Parse(c->base.json);
    s->slo_ttft_s = util_json_number(root, "slo.ttft_s", NAN);
    cJSON_Delete(root);
    const sim_scenario *sc = c->scenario;
    int rc = UTIL_OK;
    if (sc->n_pools != 1 || !sc->pools[0].autoscaler.on)
        rc = util_diag_add(d, "cluster.autoscaler: the lesson sweeps the autoscaler's target on "
                              "one pool; give cluster.autoscaler");
    if (!(s->slo_ttft_s > 0))
        rc = util_diag_add(d, "slo.ttft_s: the lesson holds the tail to a TTFT SLO; give it");
    if (rc) return rc;
    const sim_pool *pool = &sc->pools[0];
    const sim_lifecycle *lc = &pool->lifecycle;
    s->startup_s = lc->provision_s + lc->load_s + lc->warm_up_s;
    s->interval_s = pool->autoscaler.interval_s;
    s->metric = sim_as_metric_names[pool->autoscaler.metric];
    return rc;
}

static day_point day_point_of(double target, const ls_figures *as, const ls_figures *st)
{
    return (day_point){
        .target = target,
        .gpu_hours = as->gpu_hours,
        .usd = as->usd,
        .p99 = as->ttft_p99,
        .attain = 100 * as->slo_attainment,
        .missed = 100 * (1 - as->slo_attainment),
        .peak = as->peak_replicas,
        .mean = as->mean_replicas,
        .static_usd = st->usd,
        .static_p99 = st->ttft_p99,
        .static_missed = 100 * (1 - st->slo_attainment),
    };
}

static int check_targets(const double *v, int n, util_diag *d)
{
    if (n < 2) return util_diag_add(d, "lesson.target: give at least two numbers");
    for (int i = 0; i < n; i++)
        if (!(v[i] > 0 && (i == 0 || v[i] > v[i - 1])))
            return util_diag_add(d,
                                 "lesson.target: %g is not a target above 0 and above the one "
                                 "before it",
                                 v[i]);
    return UTIL_OK;
}

/* The table, the sentences and the figure of the runs: as[i] target i's
 * autoscaled day, st[i] the static fleet of its peak. */
static void day_show(const ls_context *c, ls_result *r, const day_setup *s, const double *targets,
                     const ls_figures *as, const ls_figures *st, int n)
{
    day_point *p = util_xcalloc((size_t)n + 1, sizeof *p);
    day_columns(r);
    for (int i = 0; i < n; i++) {
        p[i] = day_point_of(targets[i], &as[i], &st[i]);
        day_row(r, &p[i]);
    }
    day_trade(r, s, p, n);
    day_lag(r, s, p, n);
    day_static(r, p, n);
    day_figure(c, r, s, p, n);
    free(p);
}

/* --quick (the explorer's panel, the test suite) runs the day shorter
 * still: its period, the peak's phase and the run's length times
 * lesson.quick_scale (default 1/8), the same shape at eight times the
 * pace, so that a point takes an eighth of what the file's takes and the
 * panel's ten days fit its 300 ms (docs/explore.md).  A replica still
 * starts in the file's 90 s, so the quick morning outruns it sooner: the
 * slower nodes of the panel's slider (300 s, 600 s) miss at every target. */
static void quicken(const ls_context *c, cJSON *ov)
{
    if (!c->quick) return;
    cJSON *root = cJSON_Parse(c->base.json);
    double k = ls_knob(c, "quick_scale", 0.125);
    static const char *const keys[] = {"workload.arrival.rate_profile.daily.period_s",
                                       "workload.arrival.rate_profile.daily.phase_s",
                                       "stop.duration_s"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *v = util_json_get(root, keys[i]);
        if (cJSON_IsNumber(v)) cJSON_AddNumberToObject(ov, keys[i], k * v->valuedouble);
    }
    cJSON_Delete(root);
}

/* The distinct peaks of as, in *peaks; of[i] is as[i]'s index there. */
static int distinct_peaks(const ls_figures *as, int n, double *peaks, int *of)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < m && peaks[k] != as[i].peak_replicas)
            k++;
        if (k == m) peaks[m++] = as[i].peak_replicas;
        of[i] = k;
    }
    return m;
}

/* The static fleets: the day again without the autoscaler, each with the
 * replicas its autoscaled point peaked at.  Points that peaked alike share
 * one run: a fleet of the same size all day is the same day (one seed). */
static int day_static_runs(ls_context *c, const ls_figures *as, ls_figures *st, int n, int *runs_made,
                           util_diag *d)
{
    double *peaks = util_xcalloc((size_t)n + 1, sizeof *peaks);
    int *of = util_xcalloc((size_t)n + 1, sizeof *of);
    int m = *runs_made = distinct_peaks(as, n, peaks, of);
    cJSON **ov = util_xcalloc((size_t)m + 1, sizeof *ov);
    const char **unset = util_xcalloc((size_t)m + 1, sizeof *unset);
    ls_figures *runs = util_xcalloc((size_t)m + 1, sizeof *runs);
    for (int k = 0; k < m; k++) {
        ov[k] = ls_with("cluster.replicas", peaks[k]);
        quicken(c, ov[k]);
        unset[k] = autoscaler_key;
    }
    int rc = ls_points_without(c, ov, unset, m, false, runs, d);
    for (int i = 0; i < n; i++)
        st[i] = runs[of[i]];
    for (int k = 0; k < m; k++)
        cJSON_Delete(ov[k]);
    free(ov);
    free(unset);
    free(runs);
    free(of);
    free(peaks);
    return rc;
}

/* Each target's day with one seed, then each peak's static fleet: the
 * second sweep needs the first's peaks.  The day is the file's compressed
 * one (docs/lessons.md says how), so a point takes a fraction of a second;
 * --quick compresses it further (quicken). */
int ls__day(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *targets = ls_knobs(c, "target", &n);
    day_setup s = {0};
    int rc = check_targets(targets, n, d);
    if (!rc) rc = day_setup_of(c, &s, d);
    cJSON **ov = util_xcalloc((size_t)n + 1, sizeof *ov);
    ls_figures *as = util_xcalloc((size_t)n + 1, sizeof *as);
    ls_figures *st = util_xcalloc((size_t)n + 1, sizeof *st);
    for (int i = 0; !rc && i < n; i++)
    {
        ov[i] = ls_with("cluster.autoscaler.target", targets[i]);
        quicken(c, ov[i]);
    }
    if (!rc) rc = ls_points(c, ov, n, false, as, d);
    int static_runs = 0;
    if (!rc) rc = day_static_runs(c, as, st, n, &static_runs, d);
    if (!rc) day_show(c, r, &s, targets, as, st, n);
    if (!rc) ls_keep(r, "static_runs", static_runs);
    for (int i = 0; i < n; i++)
        cJSON_Delete(ov[i]);
    free(ov);
    free(as);
    free(st);
    free(targets);
    return rc;
}
