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

/* {"workload.slow": {"probability": p, "extra_s": {"dist": "fixed", "value": x}}} added to o. */
static void slow(cJSON *o, double p, double extra_s)
{
    if (p <= 0) return;
    cJSON *s = cJSON_AddObjectToObject(o, "workload.slow");
    cJSON_AddNumberToObject(s, "probability", p);
    cJSON *x = cJSON_AddObjectToObject(s, "extra_s");
    cJSON_AddStringToObject(x, "dist", "fixed");
    cJSON_AddNumberToObject(x, "value", extra_s);
}

/* ---- tail ---- */

int ls__tail(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *frac = ls_knobs(c, "slow_fractions", &n);
    double extra = ls_knob(c, "extra_s", 15);
    double requests = c->quick ? ls_knob(c, "quick_requests", 400) : ls_knob(c, "requests", 400);
    cJSON **ov = util_xcalloc((size_t)n + 1, sizeof *ov);
    ls_figures *rep = util_xcalloc((size_t)n + 1, sizeof *rep);
    for (int i = 0; i < n; i++) {
        ov[i] = ls_with("stop.requests", requests);
        slow(ov[i], frac[i], extra);
    }
    int rc = n >= 2 ? ls_points(c, ov, n, false, rep, d)
                    : util_diag_add(d, "lesson.slow_fractions: give at least two fractions");
    static const char *const stats[] = {"mean", "p50", "p95", "p99"};
    double v[16][4] = {{0}};
    for (int i = 0; !rc && i < n && i < 16; i++) {
        cJSON *row = ls_row(r);
        cJSON_AddNumberToObject(row, "slow_pct", 100 * frac[i]);
        const double e2e[4] = {rep[i].e2e_mean, rep[i].e2e_p50, rep[i].e2e_p95, rep[i].e2e_p99};
        for (int k = 0; k < 4; k++) {
            v[i][k] = e2e[k];
            char col[32];
            snprintf(col, sizeof col, "e2e_%s_s", stats[k]);
            cJSON_AddNumberToObject(row, col, v[i][k]);
        }
    }
    if (!rc) {
        int mid = n > 2 ? 2 : n - 1; /* the 5% case in the shipped file */
        ls_say(r, "With no slow requests: mean %.2f s, P95 %.2f s, P99 %.2f s.", v[0][0], v[0][2],
               v[0][3]);
        ls_say(r, "With %.0f%% of %g requests %g s slower: the mean moves from %.2f s to %.2f s "
                  "(%+.0f%%), P95 to %.2f s, P99 to %.2f s (x%.1f). The mean hides the requests "
                  "people remember.",
               100 * frac[mid], requests, extra, v[0][0], v[mid][0],
               100 * (v[mid][0] / v[0][0] - 1), v[mid][2], v[mid][3], v[mid][3] / v[0][3]);
        ls_say(r, "The median barely moves (%.2f s to %.2f s at %.0f%% slow): a few slow requests "
                  "are invisible in the middle of the distribution and dominate its end.",
               v[0][1], v[n - 1][1], 100 * frac[n - 1]);
        ls_keep(r, "mean_growth", v[mid][0] / v[0][0]);
        ls_keep(r, "p99_growth", v[mid][3] / v[0][3]);
        ls_keep(r, "p99_slow", v[mid][3]);
        ls_keep(r, "p50_growth", v[n - 1][1] / v[0][1]);
        ls_plot_init(r, "tail: a few slow requests move P99, not the mean", "slow requests (%)",
                     false);
        int panel = ls_plot_panel(r, "end-to-end latency (s)");
        double x[16], y[16];
        for (int k = 0; k < 4; k++) {
            for (int i = 0; i < n && i < 16; i++) x[i] = 100 * frac[i], y[i] = v[i][k];
            ls_plot_series(r, panel, stats[k], x, y, n < 16 ? n : 16);
        }
    }
    for (int i = 0; i < n; i++) cJSON_Delete(ov[i]);
    free(ov);
    free(rep);
    free(frac);
    return rc;
}

/* ---- fan-out ---- */

int ls__fan_out(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *calls = ls_knobs(c, "calls", &n);
    double p = ls_knob(c, "slow_probability", 0.01), extra = ls_knob(c, "extra_s", 5);
    double tasks = c->quick ? ls_knob(c, "quick_tasks", 400) : ls_knob(c, "tasks", 1000);
    static const char *const modes[2] = {"sequential", "parallel"};
    int m = 2 * n;
    cJSON **ov = util_xcalloc((size_t)m + 1, sizeof *ov);
    ls_figures *rep = util_xcalloc((size_t)m + 1, sizeof *rep);
    for (int i = 0; i < m; i++) {
        ov[i] = ls_with("stop.requests", tasks);
        cJSON *agent = cJSON_AddObjectToObject(ov[i], "workload.agent");
        cJSON_AddStringToObject(agent, "mode", modes[i / n]);
        cJSON_AddNumberToObject(agent, "calls", calls[i % n]);
        slow(ov[i], p, extra);
    }
    int rc = n >= 2 ? ls_points(c, ov, m, false, rep, d)
                    : util_diag_add(d, "lesson.calls: give at least two call counts");
    double worst_z = 0;
    for (int i = 0; !rc && i < m; i++) {
        double k = calls[i % n], theory = 1 - pow(1 - p, k);
        double share = rep[i].tasks_any_slow_fraction;
        double count = rep[i].tasks_completed + rep[i].tasks_failed;
        double z = fabs(share - theory) / sqrt(theory * (1 - theory) / count);
        if (theory > 0 && theory < 1 && z > worst_z) worst_z = z;
        cJSON *row = ls_row(r);
        cJSON_AddStringToObject(row, "mode", modes[i / n]);
        cJSON_AddNumberToObject(row, "calls", k);
        cJSON_AddNumberToObject(row, "slow_task_pct", 100 * share);
        cJSON_AddNumberToObject(row, "theory_pct", 100 * theory);
        cJSON_AddNumberToObject(row, "call_p99_s", rep[i].e2e_p99);
        cJSON_AddNumberToObject(row, "task_p99_s", rep[i].tasks_e2e_p99);
    }
    if (!rc) {
        int ten = n > 1 ? 1 : 0, last = n - 1; /* 10 and 100 calls in the shipped file */
        ls_say(r, "Each call is slow with probability %g%% (%g s more). A task of %g calls meets "
                  "at least one slow call in %.1f%% of runs (sequential) and %.1f%% (parallel); "
                  "1 - (1 - p)^n = %.1f%%.",
               100 * p, extra, calls[ten], 100 * rep[ten].tasks_any_slow_fraction,
               100 * rep[n + ten].tasks_any_slow_fraction,
               100 * (1 - pow(1 - p, calls[ten])));
        ls_say(r, "At %g calls it is %.0f%% (theory %.0f%%): the rare call becomes the common task. "
                  "The measured shares are within %.1f standard errors of the formula.",
               calls[last], 100 * rep[last].tasks_any_slow_fraction,
               100 * (1 - pow(1 - p, calls[last])), worst_z);
        ls_say(r, "So the task's tail is not the call's: with %g parallel calls the call-level "
                  "P99 is %.2f s but the task-level P99 is %.2f s.",
               calls[last], rep[n + last].e2e_p99, rep[n + last].tasks_e2e_p99);
        ls_keep(r, "worst_z", worst_z);
        ls_keep(r, "share_10", rep[ten].tasks_any_slow_fraction);
        ls_plot_init(r, "fan-out: the share of tasks that meet a slow call", "calls per task",
                     true);
        int panel = ls_plot_panel(r, "tasks with a slow call (%)");
        double x[32], y[32];
        int k = n < 32 ? n : 32;
        for (int mode = 0; mode < 2; mode++) {
            for (int i = 0; i < k; i++)
                x[i] = calls[i], y[i] = 100 * rep[mode * n + i].tasks_any_slow_fraction;
            ls_plot_series(r, panel, modes[mode], x, y, k);
        }
        for (int i = 0; i < k; i++) y[i] = 100 * (1 - pow(1 - p, calls[i]));
        ls_plot_series(r, panel, "1 - (1 - p)^n", x, y, k);
    }
    for (int i = 0; i < m; i++) cJSON_Delete(ov[i]);
    free(ov);
    free(rep);
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

int ls__definitions(ls_context *c, ls_result *r, util_diag *d)
{
    double requests = c->quick ? ls_knob(c, "quick_requests", 400) : ls_knob(c, "requests", 2000);
    cJSON *ov = ls_with("stop.requests", requests);
    ls_figures rep;
    int rc = ls_points(c, &ov, 1, true, &rep, d);
    static const char *const cols[] = {"mean", "p50", "p90", "p99"};
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
        const ls_definition *tp = definition(&rep, "tpot");
        const ls_definition *nt = definition(&rep, "tpot_incl_ttft");
        double tpot = tp->p99, ntpot = nt->p99, itl = definition(&rep, "itl_pooled")->p99,
               tm = tp->mean, nm = nt->mean;
        ls_say(r, "One run, two TPOTs: vLLM's TPOT (first token excluded) has a mean of %.1f ms "
                  "and a P99 of %.1f ms; LLMPerf's inter-token latency, which folds the wait for "
                  "the first token in, %.1f ms and %.1f ms (%+.0f%% at P99).",
               1e3 * tm, 1e3 * tpot, 1e3 * nm, 1e3 * ntpot, 100 * (ntpot / tpot - 1));
        ls_say(r, "Pooling every gap between tokens (vLLM's ITL) gives a P99 of %.1f ms, x%.1f the "
                  "per-request TPOT's: a long prefill in a mixed batch stalls every decoder for one "
                  "gap, which a per-request average smooths away.",
               1e3 * itl, itl / tpot);
        double lin = definition(&rep, "ttft")->p99, near = definition(&rep, "ttft_mlperf")->p99;
        ls_say(r, "Percentile methods differ too: P99 TTFT is %.1f ms by linear interpolation "
                  "(numpy) and %.1f ms by nearest rank (MLPerf) over %.0f requests (%+.2f%%); the "
                  "gap shrinks as the sample grows.",
               1e3 * lin, 1e3 * near, rep.measured, 100 * (near / lin - 1));
        ls_keep(r, "tpot_p99", tpot);
        ls_keep(r, "tpot_incl_ttft_p99", ntpot);
        ls_keep(r, "itl_pooled_p99", itl);
        ls_keep(r, "tpot_mean", tm);
        ls_keep(r, "tpot_incl_ttft_mean", nm);
        ls_plot_init(r, "definitions: one run, every tool's per-token latency", "percentile",
                     false);
        int panel = ls_plot_panel(r, "per-token latency (ms)");
        static const char *const names[] = {"tpot", "tpot_incl_ttft", "itl_guidellm", "itl_pooled"};
        double x[4] = {50, 90, 95, 99};
        for (int k = 0; k < 4; k++) { /* at P50, P90, P95, P99 */
            const ls_definition *def = definition(&rep, names[k]);
            double y[4] = {1e3 * def->p50, 1e3 * def->p90, 1e3 * def->p95, 1e3 * def->p99};
            ls_plot_series(r, panel, names[k], x, y, 4);
        }
    }
    cJSON_Delete(ov);
    return rc;
}
