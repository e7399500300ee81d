/*
 * plot.c: the figures of `servesim plot`, gathered from a database alone
 * into an an_plot, one function per kind: a sweep's points through each
 * run's report (so a point is the number `servesim report` prints, averaged
 * over the runs sharing its x), a CDF from the measured rows, the timeline
 * and the SLO curve from an_timeline_compute and an_slo_curve.  draw.c
 * draws any figure and knows nothing of kinds: a new kind is one more
 * gather function here.
 */
#include "an_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const an_plot_kind_names[] = {
    "latency-load", "throughput-concurrency", "cdf", "timeline", "slo-curve", NULL};

/* A CDF of a million requests would be a 50 MB SVG that no browser draws
 * faster than 2,000 evenly spaced ranks, which look the same. */
#define CDF_MAX_POINTS 2000
#define CURVE_POINTS   101

static const char *const metric_titles[] = {"TTFT", "TPOT", "TPOT incl. TTFT", "E2E"};
/* The stored scenario's threshold on each metric, if any. */
static const char *const metric_slo_keys[] = {"slo.ttft_s", "slo.tpot_s", NULL, "slo.e2e_s"};

/* ---- building a figure ---------------------------------------------------- */

/* Arrays grow by doubling when their length reaches a power of two, so the
 * public structs need no capacity fields. */
static void *grow(void *arr, size_t n, size_t size)
{
    if (n & (n - 1)) return arr;
    return util_xrealloc(arr, (n ? 2 * n : 1) * size);
}

static void add_note(an_plot *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(an_plot *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    p->notes = grow(p->notes, (size_t)p->n_notes, sizeof *p->notes);
    p->notes[p->n_notes++] = util_xvasprintf(fmt, ap);
    va_end(ap);
}

/* Panels are added before any series, and addressed by index afterwards:
 * adding one may move the others. */
static int add_panel(an_plot *p, const char *y_label)
{
    p->panels = grow(p->panels, (size_t)p->n_panels, sizeof *p->panels);
    p->panels[p->n_panels] = (an_plot_panel){.y_label = util_xstrdup(y_label)};
    return p->n_panels++;
}

/* The panel's series called name, added at the end when new. */
static an_plot_series *series_named(an_plot_panel *pl, const char *name)
{
    for (int i = 0; i < pl->n_series; i++)
        if (!strcmp(pl->series[i].name, name)) return &pl->series[i];
    pl->series = grow(pl->series, (size_t)pl->n_series, sizeof *pl->series);
    pl->series[pl->n_series] = (an_plot_series){.name = util_xstrdup(name)};
    return &pl->series[pl->n_series++];
}

/* A point without a value (nothing measured) is left out, not drawn at 0. */
static void push(an_plot_series *s, double x, double y)
{
    if (!isfinite(x) || !isfinite(y)) return;
    s->x = grow(s->x, s->n, sizeof *s->x);
    s->y = grow(s->y, s->n, sizeof *s->y);
    s->x[s->n] = x;
    s->y[s->n++] = y;
}

static void add_guide(an_plot_panel *pl, double at, bool vertical, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_guide(an_plot_panel *pl, double at, bool vertical, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pl->guides = grow(pl->guides, (size_t)pl->n_guides, sizeof *pl->guides);
    pl->guides[pl->n_guides++] = (an_plot_guide){util_xvasprintf(fmt, ap), at, vertical};
    va_end(ap);
}

/* The scenario's threshold key (slo.ttft_s) as a guide, once per value: runs
 * of one sweep usually share it, but a sweep may vary it. */
static void add_slo_guide(an_plot_panel *pl, const cJSON *scenario, const char *key, bool vertical)
{
    double at = key ? util_json_number(scenario, key, NAN) : NAN;
    if (!(at > 0)) return;
    for (int i = 0; i < pl->n_guides; i++)
        if (pl->guides[i].at == at && !strncmp(pl->guides[i].label, "SLO ", 4)) return;
    add_guide(pl, at, vertical, "SLO %s = %g s", key + 4, at);
}

void an_plot_fini(an_plot *p)
{
    for (int i = 0; i < p->n_panels; i++) {
        an_plot_panel *pl = &p->panels[i];
        for (int k = 0; k < pl->n_series; k++) {
            free(pl->series[k].name);
            free(pl->series[k].x);
            free(pl->series[k].y);
        }
        for (int k = 0; k < pl->n_guides; k++)
            free(pl->guides[k].label);
        free(pl->series);
        free(pl->guides);
        free(pl->y_label);
    }
    for (int i = 0; i < p->n_notes; i++)
        free(p->notes[i]);
    free(p->notes);
    free(p->panels);
    free(p->overloaded_x);
    free(p->title);
    free(p->x_label);
    memset(p, 0, sizeof *p);
}

/* ---- runs ---------------------------------------------------------------- */

typedef struct run_info {
    int64_t id;
    bool overloaded;             /* runs.status: its queue grew without bound */
    cJSON *scenario, *overrides; /* overrides: NULL when none were stored */
} run_info;

static void run_fini(run_info *r)
{
    cJSON_Delete(r->scenario);
    cJSON_Delete(r->overrides);
}

static int load_run(sqlite3 *db, const char *file, int64_t id, run_info *r, util_diag *d)
{
    *r = (run_info){.id = id};
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT status, scenario, overrides FROM runs WHERE id = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        return an__db_fail(db, d, "cannot read runs");
    sqlite3_bind_int64(st, 1, id);
    int rc = UTIL_OK;
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = util_diag_add(d, "%s: no run with id %lld", file, (long long)id);
    } else {
        const char *status = (const char *)sqlite3_column_text(st, 0);
        const char *scenario = (const char *)sqlite3_column_text(st, 1);
        const char *overrides = (const char *)sqlite3_column_text(st, 2);
        r->overloaded = status && !strcmp(status, "overloaded");
        r->scenario = cJSON_Parse(scenario ? scenario : "");
        r->overrides = overrides ? cJSON_Parse(overrides) : NULL;
        if (!r->scenario)
            rc = util_diag_add(d, "%s: run %lld: stored scenario is not JSON", file, (long long)id);
    }
    sqlite3_finalize(st);
    return rc;
}

/* "run 3", "runs 1, 2", "runs 1-12, 15": sweeps number their runs in a row. */
static char *runs_text(const int64_t *ids, int n)
{
    char *s = util_xstrdup(n == 1 ? "run" : "runs");
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && ids[j + 1] == ids[j] + 1)
            j++;
        char *t = j > i + 1 ? util_xasprintf("%s%s %lld-%lld", s, i ? "," : "", (long long)ids[i],
                                             (long long)ids[j])
                            : util_xasprintf("%s%s %lld", s, i ? "," : "", (long long)ids[i]);
        free(s);
        s = t;
        i = j > i + 1 ? j + 1 : i + 1;
    }
    return s;
}

/* ---- cdf, timeline, slo-curve: runs ---------------------------------------- */

/* The measured requests' values of the metric, sorted (one-token replies
 * have no TPOT and are left out). */
static int measured_values(sqlite3 *db, const run_info *r, an_metric m, double **v, size_t *n,
                           util_diag *d)
{
    an__query q = {db, r->id, util_json_number(r->scenario, "warmup_s", 0), NULL, -1,
                   an__schema(db), 0};
    char *sql = util_xasprintf("SELECT %s_s FROM request_metrics WHERE run_id = ?1"
                               " AND status = 'completed' AND arrival_s >= ?2"
                               " AND %s_s IS NOT NULL ORDER BY 1",
                               an_metric_names[m], an_metric_names[m]);
    int rc = an__column(&q, sql, v, n, d);
    free(sql);
    return rc;
}

/* One run's empirical CDF: the value of rank k has (k + 1) / n of the
 * values at or below it (ties count at their last rank, so the step is right). */
static void add_cdf(an_plot_series *s, const double *v, size_t n)
{
    size_t points = n < CDF_MAX_POINTS ? n : CDF_MAX_POINTS;
    for (size_t i = 0; i < points; i++) {
        size_t k =
            points == n ? i : (size_t)llround((double)(n - 1) * (double)i / (double)(points - 1));
        push(s, v[k], (double)(k + 1) / (double)n);
    }
}

static int gather_cdf(sqlite3 *db, const an_plot_request *req, const int64_t *ids, int n_ids,
                      an_plot *p, util_diag *d)
{
    int pl = add_panel(p, "cumulative fraction (0-1)");
    p->x_label = util_xasprintf("%s (s)", metric_titles[req->metric]);
    int rc = UTIL_OK;
    for (int i = 0; !rc && i < n_ids; i++) {
        run_info r;
        double *v = NULL;
        size_t n = 0;
        rc = load_run(db, req->file, ids[i], &r, d);
        if (!rc) rc = measured_values(db, &r, req->metric, &v, &n, d);
        if (!rc) {
            char *name = util_xasprintf("run %lld", (long long)ids[i]);
            add_cdf(series_named(&p->panels[pl], name), v, n);
            add_slo_guide(&p->panels[pl], r.scenario, metric_slo_keys[req->metric], true);
            if (n > CDF_MAX_POINTS)
                add_note(p, "%s: %d of its %zu measured values drawn, at evenly spaced ranks", name,
                         CDF_MAX_POINTS, n);
            if (n == 0) add_note(p, "%s: no measured requests", name);
            free(name);
        }
        free(v);
        run_fini(&r);
    }
    char *runs = runs_text(ids, n_ids);
    p->title = util_xasprintf("%s: %s CDF of the measured requests, %s", req->file,
                              metric_titles[req->metric], runs);
    free(runs);
    return rc;
}

static void timeline_series(an_plot *p, int pl, const char *name, const an_timeline *t,
                            const double *v)
{
    an_plot_series *s = series_named(&p->panels[pl], name);
    for (size_t i = 0; i < t->n; i++)
        push(s, (double)i * t->interval_s, v[i]);
}

static int gather_timeline(sqlite3 *db, const an_plot_request *req, int64_t id, an_plot *p,
                           util_diag *d)
{
    run_info r;
    an_timeline t = {0};
    double interval = req->interval_s > 0 ? req->interval_s : 1;
    int rc = load_run(db, req->file, id, &r, d);
    if (!rc) rc = an_timeline_compute(db, id, interval, -1, &t, d);
    if (!rc) {
        timeline_series(p, add_panel(p, "queue (requests waiting)"), "queue", &t, t.queue);
        timeline_series(p, add_panel(p, "running batch (requests)"), "running", &t, t.running);
        if (t.has_iterations)
            timeline_series(p, add_panel(p, "KV occupancy (fraction of capacity)"), "kv occupancy",
                            &t, t.kv_occupancy);
        timeline_series(p, add_panel(p, "output (tokens/s)"), "output tokens/s", &t,
                        t.output_tokens_per_s);
        p->x_label = util_xstrdup("time (s)");
        p->title = util_xasprintf("%s: run %lld over time, %g s intervals", req->file,
                                  (long long)id, interval);
        add_note(p, "each point: the average over the interval starting at its time");
        if (!t.has_iterations)
            add_note(p, "no KV occupancy: the run has no iterations (servesim run "
                        "--record-iterations)");
    }
    an_timeline_fini(&t);
    run_fini(&r);
    return rc;
}

/* The thresholds 90% and 99% attainment need, marked where reachable. */
static void add_needed(an_plot *p, an_plot_panel *pl, const an_curve *c, int i, const char *pct)
{
    add_guide(pl, c->needed[i].attainment, false, "%s attainment", pct);
    if (isnan(c->needed[i].threshold_s))
        add_note(p, "%s attainment is unreachable: too many requests failed outright", pct);
    else
        add_guide(pl, c->needed[i].threshold_s, true, "%s needs %.4g s", pct,
                  c->needed[i].threshold_s);
}

static int gather_curve(sqlite3 *db, const an_plot_request *req, int64_t id, an_plot *p,
                        util_diag *d)
{
    run_info r;
    an_curve c = {0};
    int rc = load_run(db, req->file, id, &r, d);
    if (!rc)
        rc = an_slo_curve(db, id, req->metric, NULL, req->points > 0 ? req->points : CURVE_POINTS,
                          &c, d);
    if (!rc) {
        int panel = add_panel(p, "attainment (fraction of ended requests)");
        an_plot_panel *pl = &p->panels[panel];
        an_plot_series *s = series_named(pl, "attainment");
        for (int i = 0; i < c.n_points; i++)
            push(s, c.points[i].threshold_s, c.points[i].attainment);
        add_needed(p, pl, &c, 1, "90%");
        add_needed(p, pl, &c, 3, "99%");
        add_slo_guide(pl, r.scenario, metric_slo_keys[req->metric], true);
        p->x_label = util_xasprintf("%s threshold (s)", metric_titles[req->metric]);
        p->title = util_xasprintf("%s: %s SLO attainment by threshold, run %lld", req->file,
                                  metric_titles[req->metric], (long long)id);
        add_note(p,
                 "%lld requests ended after warm-up, %lld measured; rejected and timed-out "
                 "ones fail every threshold",
                 (long long)c.ended, (long long)c.measured);
    }
    an_curve_fini(&c);
    run_fini(&r);
    return rc;
}

/* ---- sweeps ------------------------------------------------------------------ */

static void latency_values(const an_report *r, double *v)
{
    const an_stats *s[2] = {&r->req.ttft, &r->req.tpot};
    for (int i = 0; i < 2; i++) {
        v[3 * i] = s[i]->p50;
        v[3 * i + 1] = s[i]->p90;
        v[3 * i + 2] = s[i]->p99;
    }
}

static void throughput_values(const an_report *r, double *v)
{
    v[0] = r->req.output_tokens_per_s;
    v[1] = r->req.per_user_tokens_per_s.mean;
}

/* What a sweep kind plots: values of each run's report, each in a panel. */
typedef struct sweep_kind {
    const char *what;  /* in the title */
    const char *x_key; /* the x axis unless --x names one; NULL: the key that varies */
    const char *panels[2];
    const char *slo_keys[2]; /* the scenario's threshold drawn in each panel */
    const char *values[6];
    int panel_of[6];
    int n_values;
    void (*read)(const an_report *r, double *v);
} sweep_kind;

static const sweep_kind sweep_kinds[] = {
    {.what = "TTFT and TPOT",
     .panels = {"TTFT (s)", "TPOT (s)"},
     .slo_keys = {"slo.ttft_s", "slo.tpot_s"},
     .values = {"p50 ttft", "p90 ttft", "p99 ttft", "p50 tpot", "p90 tpot", "p99 tpot"},
     .panel_of = {0, 0, 0, 1, 1, 1},
     .n_values = 6,
     .read = latency_values},
    {.what = "output throughput",
     .x_key = "workload.arrival.users",
     .panels = {"total output (tokens/s)", "per user (tokens/s)"},
     .values = {"output tokens/s", "per-user tokens/s (mean 1/TPOT)"},
     .panel_of = {0, 1},
     .n_values = 2,
     .read = throughput_values},
};

/* One run of the sweep, placed. */
typedef struct point_run {
    int64_t id;
    bool overloaded;
    double x;
    int group;   /* the combination of the other varying keys */
    double v[6]; /* the kind's values */
} point_run;

typedef struct sweep {
    char *label;
    run_info *runs;
    int n;
    const char **keys; /* varying keys, borrowed from the runs' overrides */
    int n_keys;
    char **groups; /* "k=v, k2=v2" of each combination, in order of first run */
    int n_groups;
    point_run *points;
} sweep;

static void sweep_fini(sweep *s)
{
    for (int i = 0; i < s->n; i++)
        run_fini(&s->runs[i]);
    for (int i = 0; i < s->n_groups; i++)
        free(s->groups[i]);
    free(s->runs);
    free(s->keys);
    free(s->groups);
    free(s->points);
    free(s->label);
}

/* The label of the newest run that has one. */
static int newest_sweep(sqlite3 *db, const char *file, char **label, util_diag *d)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT sweep FROM runs WHERE sweep IS NOT NULL"
                           " ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return an__db_fail(db, d, "cannot read runs");
    if (sqlite3_step(st) == SQLITE_ROW)
        *label = util_xstrdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return *label ? UTIL_OK
                  : util_diag_add(d, "%s: holds no sweep (no run has a runs.sweep label)", file);
}

/* The sweep's runs, in order of id. */
static int load_sweep(sqlite3 *db, const char *file, const char *label, sweep *s, util_diag *d)
{
    int rc = UTIL_OK;
    if (label)
        s->label = util_xstrdup(label);
    else
        rc = newest_sweep(db, file, &s->label, d);
    if (rc) return rc;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT id FROM runs WHERE sweep = ?1 ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return an__db_fail(db, d, "cannot read runs");
    sqlite3_bind_text(st, 1, s->label, -1, SQLITE_STATIC);
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        s->runs = grow(s->runs, (size_t)s->n, sizeof *s->runs);
        rc = load_run(db, file, sqlite3_column_int64(st, 0), &s->runs[s->n++], d);
    }
    sqlite3_finalize(st);
    if (!rc && s->n == 0)
        rc = util_diag_add(d, "%s: no sweep '%s' (no run has runs.sweep = '%s')", file, s->label,
                           s->label);
    return rc;
}

/* Whether key has the same value (or is absent) in every run. */
static bool constant(const sweep *s, const char *key)
{
    const cJSON *first = cJSON_GetObjectItemCaseSensitive(s->runs[0].overrides, key);
    for (int i = 1; i < s->n; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(s->runs[i].overrides, key);
        if (!first != !v || (v && !cJSON_Compare(first, v, true))) return false;
    }
    return true;
}

/* The overridden keys whose values differ between runs.  The seed is a
 * replicate, not a key: runs that differ only in it are averaged. */
static void find_varying(sweep *s)
{
    for (int i = 0; i < s->n; i++) {
        const cJSON *o;
        cJSON_ArrayForEach(o, s->runs[i].overrides)
        {
            bool known = !strcmp(o->string, "seed") || constant(s, o->string);
            for (int k = 0; !known && k < s->n_keys; k++)
                known = !strcmp(s->keys[k], o->string);
            if (known) continue;
            s->keys = grow(s->keys, (size_t)s->n_keys, sizeof *s->keys);
            s->keys[s->n_keys++] = o->string;
        }
    }
}

/* "a, b, c" of the varying keys. */
static char *keys_text(const sweep *s)
{
    char *t = util_xstrdup("");
    for (int k = 0; k < s->n_keys; k++) {
        char *u = util_xasprintf("%s%s%s", t, k ? ", " : "", s->keys[k]);
        free(t);
        t = u;
    }
    return t;
}

/* The x key: asked for, the kind's own, or the one key that varies. */
static int choose_x(const sweep *s, const char *file, const char *asked, const char **x,
                    util_diag *d)
{
    *x = asked;
    if (*x) return UTIL_OK;
    if (s->n_keys == 1) {
        *x = s->keys[0];
        return UTIL_OK;
    }
    if (s->n_keys == 0)
        return util_diag_add(d,
                             "%s: sweep '%s': no key varies between its runs (seed aside); "
                             "name the x axis with --x PATH",
                             file, s->label);
    char *keys = keys_text(s);
    util_diag_add(d,
                  "%s: sweep '%s': %d keys vary (%s); choose the x axis with --x PATH "
                  "(the others become one series each)",
                  file, s->label, s->n_keys, keys);
    free(keys);
    return UTIL_EINPUT;
}

/* A run's value of key: from its overrides, else its stored scenario. */
static const cJSON *value_of(const run_info *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->overrides, key);
    return v ? v : util_json_get(r->scenario, key);
}

static bool as_number(const cJSON *v, double *out)
{
    char *end;
    if (cJSON_IsNumber(v))
        *out = v->valuedouble;
    else if (cJSON_IsString(v))
        *out = strtod(v->valuestring, &end);
    else
        return false;
    return isfinite(*out) && (!cJSON_IsString(v) || (!*end && end != v->valuestring));
}

/* The run's combination of the varying keys other than x, as a group. */
static int group_of(sweep *s, const run_info *r, const char *x)
{
    char *label = util_xstrdup("");
    for (int k = 0; k < s->n_keys; k++) {
        if (!strcmp(s->keys[k], x)) continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->overrides, s->keys[k]);
        char *text = cJSON_IsString(v) ? util_xstrdup(v->valuestring)
                     : v               ? cJSON_PrintUnformatted(v)
                                       : util_xstrdup("(absent)");
        char *t = util_xasprintf("%s%s%s=%s", label, *label ? ", " : "", s->keys[k], text);
        free(text);
        free(label);
        label = t;
    }
    for (int g = 0; g < s->n_groups; g++)
        if (!strcmp(s->groups[g], label)) {
            free(label);
            return g;
        }
    s->groups = grow(s->groups, (size_t)s->n_groups, sizeof *s->groups);
    s->groups[s->n_groups] = label;
    return s->n_groups++;
}

/* Places every run and measures those that kept up; an overloaded run's
 * percentiles are of a queue that grew without bound, so it has none. */
static int place_runs(sqlite3 *db, const an_plot_request *req, const sweep_kind *k, sweep *s,
                      const char *x, util_diag *d)
{
    s->points = util_xcalloc((size_t)s->n, sizeof *s->points);
    int rc = UTIL_OK;
    for (int i = 0; !rc && i < s->n; i++) {
        point_run *pt = &s->points[i];
        const run_info *r = &s->runs[i];
        *pt = (point_run){.id = r->id, .overloaded = r->overloaded, .group = group_of(s, r, x)};
        const cJSON *v = value_of(r, x);
        if (!v && !req->x_key && k->x_key)
            return util_diag_add(d,
                                 "%s: run %lld has no %s: %s plots a closed-loop sweep over "
                                 "it (or name the x axis with --x PATH)",
                                 req->file, (long long)r->id, x, an_plot_kind_names[req->kind]);
        if (!v)
            return util_diag_add(d, "%s: run %lld has no %s (in runs.overrides or its scenario)",
                                 req->file, (long long)r->id, x);
        if (!as_number(v, &pt->x))
            return util_diag_add(d, "%s: run %lld: %s is not a number", req->file, (long long)r->id,
                                 x);
        if (pt->overloaded) continue;
        an_report rep;
        rc = an_report_compute(db, r->id, &rep, d);
        if (!rc) k->read(&rep, pt->v);
        an_report_fini(&rep);
    }
    return rc;
}

static bool same_point(const point_run *a, const point_run *b)
{
    return a->group == b->group && a->x == b->x;
}

static int cmp_point(const void *a, const void *b)
{
    const point_run *p = a, *q = b;
    if (p->group != q->group) return p->group - q->group;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return (p->id > q->id) - (p->id < q->id);
}

static void flag_overloaded(an_plot *p, double x)
{
    for (size_t i = 0; i < p->n_overloaded; i++)
        if (p->overloaded_x[i] == x) return;
    p->overloaded_x = grow(p->overloaded_x, p->n_overloaded, sizeof *p->overloaded_x);
    p->overloaded_x[p->n_overloaded++] = x;
}

/* One point per (group, x): each value the mean over the runs that kept up
 * and measured it.  Returns how many runs it averaged. */
static int add_point(an_plot *p, const sweep_kind *k, const sweep *s, const point_run *pts, int n)
{
    int kept = 0;
    for (int i = 0; i < n; i++)
        kept += !pts[i].overloaded;
    const char *group = s->groups[pts[0].group];
    if (kept == 0)
        flag_overloaded(p, pts[0].x);
    else if (kept < n)
        add_note(p, "x = %g%s%s: %d of %d runs overloaded, left out of the mean", pts[0].x,
                 *group ? ", " : "", group, n - kept, n);
    for (int m = 0; m < k->n_values; m++) {
        double sum = 0;
        int count = 0;
        for (int i = 0; i < n; i++)
            if (!pts[i].overloaded && !isnan(pts[i].v[m])) {
                sum += pts[i].v[m];
                count++;
            }
        char *name =
            *group ? util_xasprintf("%s (%s)", k->values[m], group) : util_xstrdup(k->values[m]);
        an_plot_series *ser = series_named(&p->panels[k->panel_of[m]], name);
        if (count) push(ser, pts[0].x, sum / count);
        free(name);
    }
    return kept;
}

/* Says what a point is when it is more than one run. */
static void average_points(an_plot *p, const sweep_kind *k, const sweep *s)
{
    qsort(s->points, (size_t)s->n, sizeof *s->points, cmp_point);
    int fewest = s->n, most = 0;
    for (int i = 0, j; i < s->n; i = j) {
        j = i + 1;
        while (j < s->n && same_point(&s->points[i], &s->points[j]))
            j++;
        int kept = add_point(p, k, s, &s->points[i], j - i);
        if (kept && kept < fewest) fewest = kept;
        if (kept > most) most = kept;
    }
    if (most > 1 && fewest == most)
        add_note(p, "each point: the mean over the %d runs with its x (seeds)", most);
    else if (most > 1)
        add_note(p, "each point: the mean over the %d to %d runs with its x (seeds)", fewest, most);
    if (p->n_overloaded)
        add_note(p, "crossed x values: every run there was overloaded, so they have no point");
}

/* The unit a key's name carries (rate_per_s, warmup_s, max_tokens), else
 * the counted noun of a plain plural (users, replicas). */
static const char *key_unit(const char *key)
{
    static const struct {
        const char *suffix, *unit;
    } units[] = {{"_per_s", "1/s"},         {"_s", "s"},  {"_w", "W"}, {"tokens", "tokens"},
                 {"_fraction", "fraction"}, {"_gb", "GB"}};
    size_t n = strlen(key);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t m = strlen(units[i].suffix);
        if (n >= m && !strcmp(key + n - m, units[i].suffix)) return units[i].unit;
    }
    const char *last = strrchr(key, '.');
    last = last ? last + 1 : key;
    return n && key[n - 1] == 's' && !strchr(last, '_') ? last : "value";
}

static int gather_sweep(sqlite3 *db, const an_plot_request *req, an_plot *p, util_diag *d)
{
    const sweep_kind *k = &sweep_kinds[req->kind == AN_PLOT_THROUGHPUT_CONCURRENCY];
    sweep s = {0};
    const char *x = NULL;
    int rc = load_sweep(db, req->file, req->sweep, &s, d);
    if (!rc) find_varying(&s);
    if (!rc) rc = choose_x(&s, req->file, req->x_key ? req->x_key : k->x_key, &x, d);
    if (!rc) rc = place_runs(db, req, k, &s, x, d);
    if (!rc) {
        for (int i = 0; i < 2; i++) {
            int pl = add_panel(p, k->panels[i]);
            for (int r = 0; k->slo_keys[i] && r < s.n; r++)
                add_slo_guide(&p->panels[pl], s.runs[r].scenario, k->slo_keys[i], false);
        }
        average_points(p, k, &s);
        int64_t *ids = util_xmalloc((size_t)s.n * sizeof *ids);
        for (int i = 0; i < s.n; i++)
            ids[i] = s.runs[i].id;
        char *runs = runs_text(ids, s.n);
        p->x_label = util_xasprintf("%s (%s)", x, key_unit(x));
        p->title = util_xasprintf("%s: %s against %s, sweep '%s' (%s)", req->file, k->what, x,
                                  s.label, runs);
        if (s.n_groups > 1) add_note(p, "one series per combination of the other keys that vary");
        free(runs);
        free(ids);
    }
    sweep_fini(&s);
    return rc;
}

int an_plot_compute(sqlite3 *db, const an_plot_request *request, an_plot *out, util_diag *d)
{
    an_plot_request req = *request;
    if (!req.file) req.file = "database"; /* every message names it */
    memset(out, 0, sizeof *out);
    out->log_x = req.log_x;
    if (req.kind == AN_PLOT_LATENCY_LOAD || req.kind == AN_PLOT_THROUGHPUT_CONCURRENCY)
        return gather_sweep(db, &req, out, d);
    int64_t newest;
    if (req.n_runs == 0) {
        int rc = an_last_run(db, req.file, &newest, d);
        if (rc) return rc;
        req.runs = &newest;
        req.n_runs = 1;
    }
    if (req.kind == AN_PLOT_CDF) return gather_cdf(db, &req, req.runs, req.n_runs, out, d);
    if (req.kind == AN_PLOT_TIMELINE) return gather_timeline(db, &req, req.runs[0], out, d);
    return gather_curve(db, &req, req.runs[0], out, d);
}
