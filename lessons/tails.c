/*
 * tails.c: what an average hides -- a few slow requests move the tail far
 * more than the mean; an agent of many calls meets a slow one far more
 * often than a call does; and two tools can report two TPOTs for one run.
 */
#include "ls_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* {"workload.slow": {"probability": p, "extra_s": {"dist": "fixed", "value": x}}} added to o;
 * with of > 0, "of": of too -- exactly p x of of each of calls slow. */
static void slow(cJSON *o, double p, double extra_s, double of)
{
    if (p <= 0) return;
    cJSON *s = cJSON_AddObjectToObject(o, "workload.slow");
    cJSON_AddNumberToObject(s, "probability", p);
    if (of > 0) cJSON_AddNumberToObject(s, "of", of);
    cJSON *x = cJSON_AddObjectToObject(s, "extra_s");
    cJSON_AddStringToObject(x, "dist", "fixed");
    cJSON_AddNumberToObject(x, "value", extra_s);
}

/* ---- tail ---- */

enum { MEAN, P50, P95, P99, N_STATS };

/* The first point (in order of the share slow) where a statistic has risen
 * by half the extra time over the first point's: where it met the slow
 * requests; -1 if it never does. */
static int cliff(double (*v)[N_STATS], const int *order, int n, int stat, double extra)
{
    for (int k = 1; k < n; k++)
        if (v[order[k]][stat] - v[order[0]][stat] > extra / 2) return order[k];
    return -1;
}

/* With exactly k of n requests slow and every slow one past every fast one,
 * the q-quantile -- linear interpolation at rank h = q(n - 1) of the sorted
 * latencies -- is wholly a slow one once the slow fill rank floor(h): from
 * k = n - floor(h) on.  The share that is, as a percentage. */
static double must_meet_pct(double q, double requests)
{
    return 100 * (requests - floor(q * (requests - 1))) / requests;
}

/* The first share of the grid at or past pct, -1 if none is. */
static int first_past(const double *frac, const int *order, int n, double pct)
{
    for (int k = 0; k < n; k++)
        if (100 * frac[order[k]] >= pct - 1e-9) return order[k];
    return -1;
}

static void tail_findings(ls_result *r, const double *frac, double (*v)[N_STATS],
                          const int *order, int n, double requests, double extra)
{
    double p99_at = must_meet_pct(0.99, requests), p95_at = must_meet_pct(0.95, requests);
    ls_keep(r, "p99_theory_pct", p99_at);
    ls_keep(r, "p95_theory_pct", p95_at);
    int a = order[0], z = order[n - 1];
    if (frac[a] == 0)
        ls_say(r, "With no slow requests: mean %.2f s, P95 %.2f s, P99 %.2f s.", v[a][MEAN],
               v[a][P95], v[a][P99]);
    else
        ls_say(r, "With %.1f%% of requests slow, the fewest here: mean %.2f s, P95 %.2f s, P99 "
                  "%.2f s.",
               100 * frac[a], v[a][MEAN], v[a][P95], v[a][P99]);
    int k = cliff(v, order, n, P99, extra);
    if (k >= 0) {
        double p99_x = v[k][P99] / v[a][P99], mean_change = v[k][MEAN] / v[a][MEAN] - 1;
        ls_say(r, "P99 falls off a cliff: with %.0f of %g requests (%.3g%%) %g s slower it is "
                  "%.2f s (x%.1f) while the mean moves %+.0f%%, to %.2f s. Once more than 1%% of "
                  "requests are slow, P99 is one of them%s",
               frac[k] * requests, requests, 100 * frac[k], extra, v[k][P99], p99_x,
               100 * mean_change, v[k][MEAN],
               p99_x > 2 * (1 + mean_change) ? ": the mean hides the requests people remember."
                                             : ".");
        int want = first_past(frac, order, n, p99_at);
        ls_say(r, "The closed form agrees: P99 is rank 0.99 x %g = %.2f of the %g sorted "
                  "latencies, a slow one from %.0f slow requests on (%.3g%%), so %s.",
               requests - 1, 0.99 * (requests - 1), requests, p99_at * requests / 100, p99_at,
               want == k ? "the cliff is where it must be"
                         : "the cliff is not where that puts it: the slow requests are not "
                           "all slower than the fast ones");
        ls_keep(r, "cliff_pct", 100 * frac[k]);
        ls_keep(r, "cliff_p99_growth", p99_x);
        ls_keep(r, "cliff_mean_growth", 1 + mean_change);
    } else {
        ls_say(r, "No share here (up to %.3g%% slow) moves P99 by half the extra %g s: it goes "
                  "from %.2f s to %.2f s. While under 1%% of requests are slow, P99 still falls "
                  "on a fast one.",
               100 * frac[z], extra, v[a][P99], v[z][P99]);
        ls_keep(r, "cliff_pct", NAN);
    }
    int k95 = cliff(v, order, n, P95, extra);
    if (k95 >= 0)
        ls_say(r, "P95 holds longer: it jumps only at %.3g%% slow, to %.2f s (rank 0.95 x %g = "
                  "%.2f, a slow one from %.0f on, %.3g%%). Each percentile has its cliff where "
                  "the share of slow requests passes 100 minus it.",
               100 * frac[k95], v[k95][P95], requests - 1, 0.95 * (requests - 1),
               p95_at * requests / 100, p95_at);
    else
        ls_say(r, "P95 stays near %.2f s up to %.3g%% slow (%.2f s there): it meets the slow "
                  "requests only once more than 5%% are slow.",
               v[a][P95], 100 * frac[z], v[z][P95]);
    double p50_x = v[z][P50] / v[a][P50];
    if (p50_x < 1.2)
        ls_say(r, "The median barely moves (%.2f s to %.2f s at %.3g%% slow): a few slow requests "
                  "are invisible in the middle of the distribution and dominate its end.",
               v[a][P50], v[z][P50], 100 * frac[z]);
    else
        ls_say(r, "Even the median moves (%.2f s to %.2f s at %.3g%% slow): this many slow "
                  "requests shift the middle of the distribution too.",
               v[a][P50], v[z][P50], 100 * frac[z]);
    ls_keep(r, "p95_cliff_pct", k95 >= 0 ? 100 * frac[k95] : NAN);
    ls_keep(r, "p50_growth", p50_x);
}

/* The statistics against the share slow: the mean a line (it grows with
 * the share), the percentiles steps (each jumps where it meets the slow
 * requests), the shares where P99 and P95 must meet them as guides. */
static void tail_figure(const ls_context *c, ls_result *r, const double *frac,
                        double (*v)[N_STATS], const int *order, int n)
{
    char *title = ls_title(c);
    ls_plot_init(r, title, "a few slow requests move P99 off a cliff, the mean barely",
                 "slow requests", "%", AN_SCALE_LINEAR);
    free(title);
    int panel = ls_plot_panel(r, "end-to-end latency", "s", AN_SCALE_AUTO);
    static const char *const names[N_STATS] = {"mean", "p50", "p95", "p99"};
    double *x = util_xcalloc((size_t)n, sizeof *x), *y = util_xcalloc((size_t)n, sizeof *y);
    for (int s = 0; s < N_STATS; s++) {
        for (int i = 0; i < n; i++) x[i] = 100 * frac[order[i]], y[i] = v[order[i]][s];
        an_plot_series *ser = ls_plot_series(r, panel, names[s], x, y, n);
        ser->colour = 1;
        ser->dash = s + 1;
        ser->style = s == MEAN ? AN_STYLE_LINE : AN_STYLE_STEPS;
    }
    if (100 * frac[order[n - 1]] > 1)
        ls_plot_guide(r, panel, AN_GUIDE_REFERENCE, "1%: P99 meets them", 1, true);
    if (100 * frac[order[n - 1]] > 5)
        ls_plot_guide(r, panel, AN_GUIDE_REFERENCE, "5%: P95 meets them", 5, true);
    free(x);
    free(y);
}

int ls__tail(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *frac = ls_knobs(c, "slow_fractions", &n);
    double extra = ls_knob(c, "extra_s", 15);
    double requests = c->quick ? ls_knob(c, "quick_requests", 400) : ls_knob(c, "requests", 400);
    cJSON **ov = util_xcalloc((size_t)n + 1, sizeof *ov);
    ls_figures *rep = util_xcalloc((size_t)n + 1, sizeof *rep);
    /* exactly k of the requests slow, k the nearest whole count to the share asked for: the
     * table then shows the share each run had, not the chance it was given */
    double *realised = util_xcalloc((size_t)n + 1, sizeof *realised);
    for (int i = 0; i < n; i++) {
        realised[i] = fmax(0, floor(frac[i] * requests + 0.5)) / requests;
        ov[i] = ls_with("stop.requests", requests);
        slow(ov[i], realised[i], extra, requests);
    }
    int rc = n >= 2 ? ls_points(c, ov, n, false, rep, d)
                    : util_diag_add(d, "lesson.slow_fractions: give at least two fractions");
    for (int i = 0; i < n; i++) frac[i] = realised[i];
    double(*v)[N_STATS] = util_xcalloc((size_t)n + 1, sizeof *v);
    int *order = util_xcalloc((size_t)n + 1, sizeof *order);
    if (!rc) {
        ls_column_format(r, "slow", "slow", "requests", 0);
        ls_column_format(r, "slow_pct", "slow", "%", 2);
        static const char *const heads[N_STATS] = {"e2e mean", "e2e P50", "e2e P95", "e2e P99"};
        static const char *const keys[N_STATS] = {"e2e_mean_s", "e2e_p50_s", "e2e_p95_s",
                                                   "e2e_p99_s"};
        for (int k = 0; k < N_STATS; k++) ls_column_format(r, keys[k], heads[k], "s", 3);
        for (int i = 0; i < n; i++) {
            cJSON *row = ls_row(r);
            cJSON_AddNumberToObject(row, "slow", floor(frac[i] * requests + 0.5));
            cJSON_AddNumberToObject(row, "slow_pct", 100 * frac[i]);
            const double e2e[N_STATS] = {rep[i].e2e_mean, rep[i].e2e_p50, rep[i].e2e_p95,
                                         rep[i].e2e_p99};
            for (int k = 0; k < N_STATS; k++) {
                v[i][k] = e2e[k];
                cJSON_AddNumberToObject(row, keys[k], v[i][k]);
            }
        }
        for (int i = 0; i < n; i++) { /* the points by share slow (insertion: a few) */
            int j = i;
            for (; j > 0 && frac[order[j - 1]] > frac[i]; j--) order[j] = order[j - 1];
            order[j] = i;
        }
        tail_findings(r, frac, v, order, n, requests, extra);
        int mid = order[0]; /* the point nearest 5% slow, for the tests */
        for (int i = 0; i < n; i++)
            if (fabs(frac[i] - 0.05) < fabs(frac[mid] - 0.05)) mid = i;
        ls_keep(r, "mean_growth", v[mid][MEAN] / v[order[0]][MEAN]);
        ls_keep(r, "p99_growth", v[mid][P99] / v[order[0]][P99]);
        ls_keep(r, "p99_slow", v[mid][P99]);
        tail_figure(c, r, frac, v, order, n);
    }
    for (int i = 0; i < n; i++) cJSON_Delete(ov[i]);
    free(ov);
    free(rep);
    free(v);
    free(order);
    free(frac);
    free(realised);
    return rc;
}

/* ---- fan-out ---- */

/* Wilson's 95% interval of a share measured over count trials. */
static void wilson(double share, double count, double *lo, double *hi)
{
    const double z = 1.959964;
    double z2n = z * z / count, centre = (share + z2n / 2) / (1 + z2n);
    double half = z / (1 + z2n) * sqrt(share * (1 - share) / count + z2n / (4 * count));
    *lo = fmax(0, centre - half);
    *hi = fmin(1, centre + half);
}

typedef struct fan_point {
    double calls, tasks, share, lo, hi, theory, call_p99, task_p99;
} fan_point;

static void fan_columns(ls_result *r)
{
    ls_column_format(r, "mode", "mode", "", 0);
    ls_column_format(r, "calls", "calls", "", 0);
    ls_column_format(r, "tasks", "tasks", "", 0);
    ls_column_format(r, "slow_task_pct", "slow tasks", "%", 1);
    ls_column_format(r, "interval_pct", "95% interval", "%", 1);
    ls_column_format(r, "theory_pct", "1-(1-p)^n", "%", 1);
    ls_column_format(r, "call_p99_s", "call P99", "s", 3);
    ls_column_format(r, "task_p99_s", "task P99", "s", 3);
}

static void fan_row(ls_result *r, const char *mode, const fan_point *q)
{
    cJSON *row = ls_row(r);
    cJSON_AddStringToObject(row, "mode", mode);
    cJSON_AddNumberToObject(row, "calls", q->calls);
    cJSON_AddNumberToObject(row, "tasks", q->tasks);
    cJSON_AddNumberToObject(row, "slow_task_pct", 100 * q->share);
    char interval[48]; /* text: two numbers, each to the column's decimal */
    snprintf(interval, sizeof interval, "%.1f-%.1f", 100 * q->lo, 100 * q->hi);
    cJSON_AddStringToObject(row, "interval_pct", interval);
    cJSON_AddNumberToObject(row, "theory_pct", 100 * q->theory);
    cJSON_AddNumberToObject(row, "call_p99_s", q->call_p99);
    cJSON_AddNumberToObject(row, "task_p99_s", q->task_p99);
}

static void fan_findings(ls_result *r, const fan_point *p, int n, double prob, double extra)
{
    double worst_z = 0;
    for (int i = 0; i < 2 * n; i++) {
        double se = sqrt(p[i].theory * (1 - p[i].theory) / p[i].tasks);
        if (p[i].theory > 0 && p[i].theory < 1 && fabs(p[i].share - p[i].theory) / se > worst_z)
            worst_z = fabs(p[i].share - p[i].theory) / se;
    }
    int ten = n > 1 ? 1 : 0, last = 0; /* the count nearest 10 (past 1), the largest */
    for (int i = 1; i < n; i++) {
        if (fabs(log(p[i].calls / 10)) < fabs(log(p[ten].calls / 10))) ten = i;
        if (p[i].calls > p[last].calls) last = i;
    }
    ls_say(r, "Each call is slow with probability %g%% (%g s more), independently of the others, "
              "so the closed form is binomial. A task of %g calls meets at least one slow call in "
              "%.1f%% of runs (sequential) and %.1f%% (parallel); 1 - (1 - p)^n = %.1f%%.",
           100 * prob, extra, p[ten].calls, 100 * p[ten].share, 100 * p[n + ten].share,
           100 * p[ten].theory);
    const fan_point *l = &p[last], *lp = &p[n + last];
    ls_say(r, "At %g calls it is %.0f%% (theory %.0f%%): %s. The measured shares are %s %.1f "
              "standard errors of the formula.",
           l->calls, 100 * l->share, 100 * l->theory,
           l->share > 0.5 ? "the rare call becomes the common task"
                          : "still a minority of tasks, but many times the call's share",
           worst_z < 3 ? "within" : "as far as", worst_z);
    if (lp->task_p99 > 1.5 * lp->call_p99)
        ls_say(r, "So the task's tail is not the call's: with %g parallel calls the call-level "
                  "P99 is %.2f s but the task-level P99 is %.2f s.",
               lp->calls, lp->call_p99, lp->task_p99);
    else if (lp->call_p99 > extra / 2) /* P99 of the calls is itself a slow one */
        ls_say(r, "With %g parallel calls both P99s are slow calls: the call-level P99 (%.2f s) "
                  "because %g%% of calls are slow, at or past P99's 1%%, the task-level P99 "
                  "(%.2f s) because %.0f%% of tasks meet one.",
               lp->calls, lp->call_p99, 100 * prob, lp->task_p99, 100 * lp->share);
    else
        ls_say(r, "With %g parallel calls the task-level P99 (%.2f s) stays near the call-level "
                  "P99 (%.2f s): %.1f%% of tasks meet a slow call, %s.",
               lp->calls, lp->task_p99, lp->call_p99, 100 * lp->share,
               lp->share < 0.01 ? "under P99's 1%" : "yet their P99 is not one");
    ls_keep(r, "worst_z", worst_z);
    ls_keep(r, "share_10", p[ten].share);
    ls_keep(r, "parallel_call_p99", lp->call_p99);
    ls_keep(r, "parallel_task_p99", lp->task_p99);
}

/* The share of tasks meeting a slow call: 1 - (1 - p)^n as a smooth line,
 * each mode's measured shares as points with their 95% intervals; below,
 * the task's P99 against the call's. */
static void fan_figure(const ls_context *c, ls_result *r, const fan_point *p, int n, double prob,
                       double extra)
{
    char *title = ls_title(c);
    ls_plot_init(r, title, "the rare slow call becomes the common slow task: 1 - (1 - p)^n",
                 "calls per task", "calls", AN_SCALE_LOG);
    free(title);
    int share = ls_plot_panel(r, "tasks with a slow call", "%", AN_SCALE_LINEAR),
        tail = ls_plot_panel(r, "P99 end-to-end latency", "s", AN_SCALE_AUTO);
    enum { FINE = 100 };
    double lo_n = p[0].calls, hi_n = p[0].calls;
    for (int i = 0; i < n; i++) lo_n = fmin(lo_n, p[i].calls), hi_n = fmax(hi_n, p[i].calls);
    int m = n > FINE ? n : FINE;
    double *x = util_xcalloc((size_t)m, sizeof *x), *y = util_xcalloc((size_t)m, sizeof *y),
           *lo = util_xcalloc((size_t)m, sizeof *lo), *hi = util_xcalloc((size_t)m, sizeof *hi);
    for (int i = 0; i < FINE; i++) { /* evenly on the log axis */
        x[i] = lo_n * pow(hi_n / lo_n, (double)i / (FINE - 1));
        y[i] = 100 * (1 - pow(1 - prob, x[i]));
    }
    an_plot_series *s = ls_plot_series(r, share, "1 - (1 - p)^n", x, y, FINE);
    s->colour = 3, s->dash = 2;
    static const char *const measured[2] = {"sequential, measured", "parallel, measured"};
    for (int mode = 0; mode < 2; mode++) {
        for (int i = 0; i < n; i++) {
            const fan_point *q = &p[mode * n + i];
            x[i] = q->calls, y[i] = 100 * q->share, lo[i] = 100 * q->lo, hi[i] = 100 * q->hi;
        }
        s = ls_plot_banded(r, share, measured[mode], x, y, lo, hi, n);
        s->colour = mode + 1, s->style = AN_STYLE_POINTS;
    }
    static const char *const tasks[2] = {"task P99, sequential", "task P99, parallel"};
    for (int mode = 0; mode < 2; mode++) {
        for (int i = 0; i < n; i++) x[i] = p[mode * n + i].calls, y[i] = p[mode * n + i].task_p99;
        s = ls_plot_series(r, tail, tasks[mode], x, y, n);
        s->colour = mode + 1, s->dash = 1;
    }
    for (int i = 0; i < n; i++) x[i] = p[n + i].calls, y[i] = p[n + i].call_p99;
    s = ls_plot_series(r, tail, "call P99", x, y, n);
    s->colour = 2, s->dash = 3;
    char label[64];
    snprintf(label, sizeof label, "a slow call: +%g s", extra);
    ls_plot_guide(r, tail, AN_GUIDE_REFERENCE, label, extra, false);
    free(x);
    free(y);
    free(lo);
    free(hi);
}

int ls__fan_out(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *calls = ls_knobs(c, "calls", &n);
    double p = ls_knob(c, "slow_probability", 0.01), extra = ls_knob(c, "extra_s", 5);
    double tasks = c->quick ? ls_knob(c, "quick_tasks", 400) : ls_knob(c, "tasks", 1000);
    /* a task of many calls costs many: past this many calls a point runs fewer tasks (a wider
     * interval), so the grid can be dense and the lesson quick */
    double budget = c->quick ? ls_knob(c, "quick_calls_per_point", 10000)
                             : ls_knob(c, "calls_per_point", 20000);
    static const char *const modes[2] = {"sequential", "parallel"};
    int m = 2 * n;
    cJSON **ov = util_xcalloc((size_t)m + 1, sizeof *ov);
    ls_figures *rep = util_xcalloc((size_t)m + 1, sizeof *rep),
               *got = util_xcalloc((size_t)m + 1, sizeof *got);
    int *order = util_xcalloc((size_t)m + 1, sizeof *order);
    fan_point *f = util_xcalloc((size_t)m + 1, sizeof *f);
    for (int i = 0; i < m; i++) {
        f[i].calls = calls[i % n];
        f[i].tasks = fmin(tasks, fmax(50, floor(budget / fmax(1, f[i].calls))));
    }
    for (int i = 0; i < m; i++) { /* the costliest first: the workers finish together */
        int j = i;
        double cost = f[i].calls * f[i].tasks;
        for (; j > 0 && f[order[j - 1]].calls * f[order[j - 1]].tasks < cost; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    for (int j = 0; j < m; j++) {
        int i = order[j];
        ov[j] = ls_with("stop.requests", f[i].tasks);
        cJSON *agent = cJSON_AddObjectToObject(ov[j], "workload.agent");
        cJSON_AddStringToObject(agent, "mode", modes[i / n]);
        cJSON_AddNumberToObject(agent, "calls", f[i].calls);
        slow(ov[j], p, extra, 0); /* each call independently: 1 - (1 - p)^n holds */
    }
    int rc = n >= 2 ? ls_points(c, ov, m, false, got, d)
                    : util_diag_add(d, "lesson.calls: give at least two call counts");
    for (int j = 0; !rc && j < m; j++) rep[order[j]] = got[j];
    if (!rc) fan_columns(r);
    for (int i = 0; !rc && i < m; i++) {
        fan_point *q = &f[i];
        q->theory = 1 - pow(1 - p, q->calls);
        q->share = rep[i].tasks_any_slow_fraction;
        q->tasks = rep[i].tasks_completed + rep[i].tasks_failed;
        wilson(q->share, q->tasks, &q->lo, &q->hi);
        q->call_p99 = rep[i].e2e_p99;
        q->task_p99 = rep[i].tasks_e2e_p99;
        fan_row(r, modes[i / n], q);
    }
    if (!rc) {
        fan_findings(r, f, n, p, extra);
        fan_figure(c, r, f, n, p, extra);
    }
    for (int i = 0; i < m; i++) cJSON_Delete(ov[i]);
    free(ov);
    free(rep);
    free(got);
    free(order);
    free(f);
    free(calls);
    return rc;
}

/* ---- definitions ---- */

/* The definition called name: one of an_definitions', so a name that is not
 * there is a typo here. */
static const ls_definition *definition(const ls_figures *f, const char *name)
{
    static const ls_definition none = {"", "", NAN, NAN, NAN, NAN, NAN};
    for (int i = 0; i < f->n_definitions; i++)
        if (!strcmp(f->definitions[i].name, name)) return &f->definitions[i];
    assert(!"no such definition");
    return &none;
}

/* Each definition by the tools that report it, for the legend; panel 0 the
 * per-token latencies, 1 TTFT. */
static const struct {
    const char *name, *legend;
    int panel;
} legends[] = {
    {"tpot", "vLLM TPOT, GenAI-Perf ITL", 0},
    {"tpot_mlperf", "MLPerf TPOT", 0},
    {"tpot_incl_ttft", "LLMPerf inter-token latency", 0},
    {"itl_guidellm", "GuideLLM ITL", 0},
    {"tpot_guidellm", "GuideLLM TPOT", 0},
    {"itl_pooled", "vLLM ITL, every gap pooled", 0},
    {"ttft", "vLLM, GenAI-Perf, LLMPerf TTFT", 1},
    {"ttft_mlperf", "MLPerf TTFT, nearest rank", 1},
};

/* The statistics as categories (mean, P50 ... P99): points, no line
 * between them, since nothing is measured between two percentiles; each
 * definition a little to the side of its category's centre, so that two
 * that agree stay visible. */
static void definitions_figure(const ls_context *c, ls_result *r, const ls_figures *rep)
{
    char *title = ls_title(c);
    ls_plot_init(r, title, "one run, every tool's definition: two tools, two TPOTs", "statistic",
                 "", AN_SCALE_LINEAR);
    free(title);
    int panels[2] = {ls_plot_panel(r, "per-token latency", "s", AN_SCALE_AUTO),
                     ls_plot_panel(r, "TTFT", "s", AN_SCALE_AUTO)};
    static const char *const ticks[5] = {"mean", "P50", "P90", "P95", "P99"};
    const double at[5] = {1, 2, 3, 4, 5};
    ls_plot_x_ticks(r, at, ticks, 5);
    enum { N_LEGENDS = sizeof legends / sizeof *legends };
    int in_panel[2] = {0}, seen[2] = {0};
    for (int k = 0; k < N_LEGENDS; k++) in_panel[legends[k].panel]++;
    for (int k = 0; k < N_LEGENDS; k++) {
        const ls_definition *def = definition(rep, legends[k].name);
        const double y[5] = {def->mean, def->p50, def->p90, def->p95, def->p99};
        int pn = legends[k].panel;
        double side = 0.07 * (seen[pn]++ - (in_panel[pn] - 1) / 2.0), x[5];
        for (int i = 0; i < 5; i++) x[i] = at[i] + side;
        an_plot_series *s = ls_plot_series(r, panels[pn], legends[k].legend, x, y, 5);
        s->style = AN_STYLE_POINTS;
    }
}

static void definitions_findings(ls_result *r, const ls_figures *rep)
{
    const ls_definition *tp = definition(rep, "tpot");
    const ls_definition *nt = definition(rep, "tpot_incl_ttft");
    double tpot = tp->p99, ntpot = nt->p99, itl = definition(rep, "itl_pooled")->p99,
           tm = tp->mean, nm = nt->mean;
    double fold = ntpot / tpot - 1;
    ls_say(r, "One run, %s: vLLM's TPOT (first token excluded) has a mean of %.1f ms and a P99 "
              "of %.1f ms; LLMPerf's inter-token latency, which folds the wait for the first "
              "token in, %.1f ms and %.1f ms (%+.0f%% at P99).",
           fabs(fold) >= 0.01 ? "two TPOTs" : "two definitions of TPOT that agree here", 1e3 * tm,
           1e3 * tpot, 1e3 * nm, 1e3 * ntpot, 100 * fold);
    if (itl > 1.2 * tpot)
        ls_say(r, "Pooling every gap between tokens (vLLM's ITL) gives a P99 of %.1f ms, x%.1f "
                  "the per-request TPOT's: a long prefill in a mixed batch stalls every decoder "
                  "for one gap, which a per-request average smooths away.",
               1e3 * itl, itl / tpot);
    else
        ls_say(r, "Pooling every gap between tokens (vLLM's ITL) gives a P99 of %.1f ms, x%.2f "
                  "the per-request TPOT's: few gaps here are stalled by a prefill.",
               1e3 * itl, itl / tpot);
    double lin = definition(rep, "ttft")->p99, near = definition(rep, "ttft_mlperf")->p99;
    ls_say(r, "Percentile methods differ too: P99 TTFT is %.1f ms by linear interpolation "
              "(numpy) and %.1f ms by nearest rank (MLPerf) over %.0f requests (%+.2f%%); the "
              "gap shrinks as the sample grows.",
           1e3 * lin, 1e3 * near, rep->measured, 100 * (near / lin - 1));
    ls_keep(r, "tpot_p99", tpot);
    ls_keep(r, "tpot_incl_ttft_p99", ntpot);
    ls_keep(r, "itl_pooled_p99", itl);
    ls_keep(r, "tpot_mean", tm);
    ls_keep(r, "tpot_incl_ttft_mean", nm);
}

int ls__definitions(ls_context *c, ls_result *r, util_diag *d)
{
    double requests = c->quick ? ls_knob(c, "quick_requests", 400) : ls_knob(c, "requests", 2000);
    cJSON *ov = ls_with("stop.requests", requests);
    ls_figures rep;
    int rc = ls_points(c, &ov, 1, true, &rep, d);
    static const char *const cols[] = {"mean", "p50", "p90", "p99"},
                             *heads[] = {"mean", "P50", "P90", "P99"};
    if (!rc) {
        ls_column_format(r, "definition", "definition", "", 0);
        for (int k = 0; k < 4; k++) {
            char col[16];
            snprintf(col, sizeof col, "%s_ms", cols[k]);
            ls_column_format(r, col, heads[k], "ms", 1);
        }
        ls_column_format(r, "tools", "tools", "", 0);
    }
    for (int i = 0; !rc && i < rep.n_definitions; i++) {
        const ls_definition *def = &rep.definitions[i];
        const double v[4] = {def->mean, def->p50, def->p90, def->p99};
        cJSON *row = ls_row(r);
        cJSON_AddStringToObject(row, "definition", def->name);
        for (int k = 0; k < 4; k++) {
            char col[16];
            snprintf(col, sizeof col, "%s_ms", cols[k]);
            cJSON_AddNumberToObject(row, col, 1e3 * v[k]);
        }
        cJSON_AddStringToObject(row, "tools", def->tools);
    }
    if (!rc) {
        definitions_findings(r, &rep);
        definitions_figure(c, r, &rep);
    }
    cJSON_Delete(ov);
    return rc;
}
