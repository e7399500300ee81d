/*
 * plot_sweep.c: the sweeps' figures.  A sweep is the runs sharing a
 * runs.sweep label; each point is the number `servesim report` prints for
 * its runs, the mean over the runs with the same x (seeds) with their
 * range as a band.  An overloaded run has no percentiles (its queue grew
 * without bound), so it is marked where it ran, k of n, never silently
 * left out of a mean.  Other keys that vary make one colour each; within a
 * configuration, a statistic is a dash (p50 solid, p90, p99).
 *
 *   latency-load            P50/P90/P99 TTFT and TPOT, goodput and
 *                           throughput, the highest x that met the SLO
 *   throughput-concurrency  total output tokens/s against tokens/s per user,
 *                           each point labelled with its users
 */
#include "plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

enum { MAX_VALUES = 8 };

static void latency_values(const an_report *r, double *v)
{
    const an_stats *s[2] = {&r->req.ttft, &r->req.tpot};
    for (int i = 0; i < 2; i++) {
        v[3 * i] = s[i]->p50;
        v[3 * i + 1] = s[i]->p90;
        v[3 * i + 2] = s[i]->p99;
    }
    v[6] = r->req.goodput_requests_per_s;
    v[7] = r->req.requests_per_s;
}

static void throughput_values(const an_report *r, double *v)
{
    v[0] = r->req.output_tokens_per_s;
    v[1] = r->req.per_user_tokens_per_s.mean;
}

typedef struct panel_kind {
    const char *label, *unit, *slo_key;
} panel_kind;

/* What a sweep kind plots: values of each run's report, each in a panel. */
typedef struct sweep_kind {
    const char *what;  /* the subtitle's "... against X" */
    const char *x_key; /* the x axis unless --x names one; NULL: the key that varies */
    panel_kind panels[3];
    int n_panels;
    const char *values[MAX_VALUES];
    int panel_of[MAX_VALUES];
    int dash_of[MAX_VALUES]; /* 1-based: the statistic */
    int n_values;
    void (*read)(const an_report *r, double *v);
} sweep_kind;

static const sweep_kind sweep_kinds[] = {
    {.what = "TTFT and TPOT percentiles, goodput",
     .panels = {{"TTFT", "s", "slo.ttft_s"},
                {"TPOT", "s", "slo.tpot_s"},
                {"completed", "req/s", NULL}},
     .n_panels = 3,
     .values = {"p50 TTFT", "p90 TTFT", "p99 TTFT", "p50 TPOT", "p90 TPOT", "p99 TPOT",
                "goodput (met every SLO)", "throughput"},
     .panel_of = {0, 0, 0, 1, 1, 1, 2, 2},
     .dash_of = {1, 2, 3, 1, 2, 3, 1, 2},
     .n_values = 8,
     .read = latency_values},
    {.what = "total output against output per user",
     .x_key = "workload.arrival.users",
     .panels = {{"output, all users", "tokens/s", NULL}},
     .n_panels = 1,
     .values = {"total output"},
     .panel_of = {0},
     .dash_of = {1},
     .n_values = 1,
     .read = throughput_values},
};

/* One run of the sweep, placed. */
typedef struct point_run {
    int64_t id;
    bool overloaded;
    double x;
    int group;                 /* the combination of the other varying keys */
    double ttft_slo, tpot_slo; /* its scenario's thresholds (NAN: none), read once */
    double v[MAX_VALUES];      /* the kind's values (throughput: total, per user) */
} point_run;

typedef struct sweep {
    char *label;
    an__run *runs;
    int n;
    const char **keys; /* varying keys, borrowed from the runs' overrides */
    int n_keys;
    char **groups; /* "max batch=64, replicas=2" of each combination, in order of first run */
    int n_groups;
    point_run *points;
    char x_words[64]; /* the x key in the figure's words: "concurrent users" */
} sweep;

static void sweep_fini(sweep *s)
{
    for (int i = 0; i < s->n; i++)
        an__run_fini(&s->runs[i]);
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
        s->runs = an__grow(s->runs, (size_t)s->n, sizeof *s->runs);
        rc = an__load_run(db, file, sqlite3_column_int64(st, 0), &s->runs[s->n++], d);
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
            s->keys = an__grow(s->keys, (size_t)s->n_keys, sizeof *s->keys);
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
static const cJSON *value_of(const an__run *r, const char *key)
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

/* The run's combination of the varying keys other than x, as a group:
 * "max batch=64, replicas=2", in the figure's words. */
static int group_of(sweep *s, const an__run *r, const char *x, const util_field *schema)
{
    char *label = util_xstrdup("");
    for (int k = 0; k < s->n_keys; k++) {
        if (!strcmp(s->keys[k], x)) continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->overrides, s->keys[k]);
        char *text = cJSON_IsString(v) ? util_xstrdup(v->valuestring)
                     : v               ? cJSON_PrintUnformatted(v)
                                       : util_xstrdup("(absent)");
        char words[64];
        const char *unit;
        an_plot_key_words(schema, s->keys[k], words, sizeof words, &unit);
        char *t = util_xasprintf("%s%s%s=%s", label, *label ? ", " : "", words, text);
        free(text);
        free(label);
        label = t;
    }
    for (int g = 0; g < s->n_groups; g++)
        if (!strcmp(s->groups[g], label)) {
            free(label);
            return g;
        }
    s->groups = an__grow(s->groups, (size_t)s->n_groups, sizeof *s->groups);
    s->groups[s->n_groups] = label;
    return s->n_groups++;
}

/* Places every run and measures those that kept up. */
static int place_runs(sqlite3 *db, const an_plot_request *req, const sweep_kind *k, sweep *s,
                      const char *x, util_diag *d)
{
    s->points = util_xcalloc((size_t)s->n, sizeof *s->points);
    int rc = UTIL_OK;
    for (int i = 0; !rc && i < s->n; i++) {
        point_run *pt = &s->points[i];
        const an__run *r = &s->runs[i];
        *pt = (point_run){.id = r->id,
                          .overloaded = r->overloaded,
                          .group = group_of(s, r, x, req->schema),
                          .ttft_slo = util_json_number(r->scenario, "slo.ttft_s", NAN),
                          .tpot_slo = util_json_number(r->scenario, "slo.tpot_s", NAN)};
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

/* k of the n runs at x were overloaded (the largest k when groups share x). */
static void flag_overloaded(an_plot *p, double x, int k, int n)
{
    for (size_t i = 0; i < p->n_overloaded; i++)
        if (p->overloaded_x[i] == x) {
            if (k * p->overloaded_n[i] > p->overloaded_k[i] * n)
                p->overloaded_k[i] = k, p->overloaded_n[i] = n;
            return;
        }
    p->overloaded_x = an__grow(p->overloaded_x, p->n_overloaded, sizeof *p->overloaded_x);
    p->overloaded_k = an__grow(p->overloaded_k, p->n_overloaded, sizeof *p->overloaded_k);
    p->overloaded_n = an__grow(p->overloaded_n, p->n_overloaded, sizeof *p->overloaded_n);
    p->overloaded_x[p->n_overloaded] = x;
    p->overloaded_k[p->n_overloaded] = k;
    p->overloaded_n[p->n_overloaded++] = n;
}

/* The mean, min and max of value m over the runs that kept up and measured it. */
static int summarise(const point_run *pts, int n, int m, double *mean, double *lo, double *hi)
{
    double sum = 0;
    int count = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (!pts[i].overloaded && !isnan(pts[i].v[m])) {
            sum += pts[i].v[m];
            *lo = pts[i].v[m] < *lo ? pts[i].v[m] : *lo;
            *hi = pts[i].v[m] > *hi ? pts[i].v[m] : *hi;
            count++;
        }
    *mean = count ? sum / count : NAN;
    return count;
}

static char *series_name(const char *value, const char *group)
{
    return *group ? util_xasprintf("%s, %s", value, group) : util_xstrdup(value);
}

/* One point per (group, x) in each of the kind's series, with the seeds'
 * range as its band when there are several.  Returns how many runs it
 * averaged. */
static int add_point(an_plot *p, const an_plot_request *req, const sweep_kind *k, const sweep *s,
                     const point_run *pts, int n)
{
    int kept = 0;
    for (int i = 0; i < n; i++)
        kept += !pts[i].overloaded;
    if (kept < n) flag_overloaded(p, pts[0].x, n - kept, n);
    const char *group = s->groups[pts[0].group];
    if (req->kind == AN_PLOT_THROUGHPUT_CONCURRENCY) {
        double total, per_user, lo, hi, ulo, uhi;
        summarise(pts, n, 0, &total, &lo, &hi);
        summarise(pts, n, 1, &per_user, &ulo, &uhi);
        /* what a point's label is, in the legend: "output" alone says nothing */
        char *value = util_xasprintf("%s, labelled by %s", k->values[0], s->x_words);
        char *name = series_name(value, group);
        free(value);
        an_plot_series *ser = an__series(&p->panels[0], name);
        ser->colour = pts[0].group + 1;
        char label[48];
        snprintf(label, sizeof label, "%g", pts[0].x);
        an__push_band(ser, per_user, total, kept > 1 ? lo : NAN, kept > 1 ? hi : NAN, label);
        free(name);
        return kept;
    }
    bool measured = false;
    for (int m = 0; m < k->n_values; m++) {
        double mean, lo, hi;
        int count = summarise(pts, n, m, &mean, &lo, &hi);
        char *name = series_name(k->values[m], group);
        an_plot_series *ser = an__series(&p->panels[k->panel_of[m]], name);
        ser->colour = pts[0].group + 1;
        ser->dash = k->dash_of[m];
        if (count)
            an__push_band(ser, pts[0].x, mean, count > 1 ? lo : NAN, count > 1 ? hi : NAN, NULL);
        measured |= count > 0;
        free(name);
    }
    if (kept && !measured)
        an__note(p, "%g%s%s%s%s: no measured requests (none completed after the warm-up)", pts[0].x,
                 *p->x_unit ? " " : "", p->x_unit, *group ? ", " : "", group);
    return kept;
}

/* A point's verdict on the scenario's p99 targets (slo.ttft_s, slo.tpot_s,
 * those it has): per target, the value judged -- the mean's interval's
 * worse end, or the worst seed -- against its threshold. */
typedef struct verdict {
    double x;
    bool met, judged; /* judged: the scenario has a target */
    double upper[2], slo[2];
    int runs;
} verdict;

static const int p99_value[2] = {2, 5}; /* p99 TTFT, p99 TPOT in point_run.v */

/* The mean over the runs of value m and the half-width of its Student-t
 * interval at confidence c (one run: none, 0). */
static double mean_upper(const point_run *pts, int n, int m, double c)
{
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++)
        sum += pts[i].v[m];
    double mean = sum / n;
    for (int i = 0; i < n; i++)
        sq += (pts[i].v[m] - mean) * (pts[i].v[m] - mean);
    return n > 1 ? mean + gsl_cdf_tdist_Pinv(0.5 + c / 2, n - 1) * sqrt(sq / (n - 1) / n) : mean;
}

/* The criterion is servesim plan's by default: the mean over seeds with
 * its interval, not "every seed", because the worst of n seeds grows with
 * n -- more seeds would make the same configuration fail more often --
 * while the interval narrows to the configuration's own p99.  An
 * overloaded seed fails either: its queue grew without bound. */
static verdict judge_point(const point_run *pts, int n, const an_plot_request *req)
{
    verdict v = {.x = pts[0].x, .met = true, .runs = n};
    double slo[2] = {pts[0].ttft_slo, pts[0].tpot_slo};
    double c = req->confidence > 0 ? req->confidence : 0.95;
    bool overloaded = false;
    for (int i = 0; i < n; i++)
        overloaded |= pts[i].overloaded;
    for (int t = 0; t < 2; t++) {
        v.slo[t] = slo[t] > 0 ? slo[t] : NAN;
        v.upper[t] = NAN;
        if (!(slo[t] > 0)) continue;
        v.judged = true;
        if (overloaded) {
            v.upper[t] = INFINITY;
        } else if (req->criterion == AN_CRITERION_ALL_SEEDS) {
            v.upper[t] = -INFINITY;
            for (int i = 0; i < n; i++)
                v.upper[t] = isnan(pts[i].v[p99_value[t]]) || pts[i].v[p99_value[t]] > v.upper[t]
                                 ? pts[i].v[p99_value[t]]
                                 : v.upper[t];
        } else {
            v.upper[t] = mean_upper(pts, n, p99_value[t], c);
        }
        v.met &= v.upper[t] <= slo[t]; /* NAN (nothing measured): not met */
    }
    v.met &= v.judged && !overloaded;
    return v;
}

static void mark(an_plot *p, double at, const char *fmt, double x, const char *group)
{
    /* "1 replica", not "1 replicas": a count's unit is a plural noun */
    char unit[32];
    snprintf(unit, sizeof unit, "%s", p->x_unit);
    size_t len = strlen(unit);
    if (x == 1 && len > 1 && unit[len - 1] == 's' && !strchr(unit, '/')) unit[len - 1] = '\0';
    for (int i = 0; i < p->n_panels; i++)
        an__guide(&p->panels[i], AN_GUIDE_MARK, at, true, fmt, x, *unit ? " " : "", unit,
                  *group ? ": " : "", group);
}

/* Where the first target to fail crosses its threshold between lo (met)
 * and hi (not), linearly in x: plan bisects towards that crossing.  NAN
 * when no target has a finite value at hi (overloaded there). */
static double crossing(const verdict *lo, const verdict *hi)
{
    double at = NAN;
    for (int t = 0; t < 2; t++) {
        if (!(hi->upper[t] > hi->slo[t]) || !isfinite(hi->upper[t])) continue;
        double x = lo->x + (hi->x - lo->x) * (lo->slo[t] - lo->upper[t]) /
                               (hi->upper[t] - lo->upper[t]);
        at = isnan(at) || x < at ? x : at;
    }
    return at;
}

/* A load axis: the highest x up to which every point met the targets, or
 * (req->plan) the rate plan --find max-rate would answer. */
static void mark_load(an_plot *p, const an_plot_request *req, const verdict *v, int n,
                      const char *group)
{
    int last = -1;
    while (last + 1 < n && v[last + 1].met)
        last++;
    if (last < 0) {
        an__note(p, "%s%sthe p99 SLO is met at no %s swept", group, *group ? ": " : "",
                 p->x_label);
        return;
    }
    if (!req->plan) {
        mark(p, v[last].x, "p99 SLO met up to %g%s%s%s%s", v[last].x, group);
        return;
    }
    double at = last + 1 < n ? crossing(&v[last], &v[last + 1]) : NAN;
    if (isfinite(at))
        mark(p, at, "plan's max: %.4g%s%s%s%s", at, group);
    else
        mark(p, v[last].x, "plan's max: at least %g%s%s%s%s", v[last].x, group);
}

/* A capacity axis: the lowest x from which it and every higher point met
 * the targets (more capacity serves more: met from N replicas). */
static void mark_capacity(an_plot *p, const verdict *v, int n, const char *group)
{
    int first = n;
    while (first > 0 && v[first - 1].met)
        first--;
    if (first == n)
        an__note(p, "%s%sthe p99 SLO is met at no %s swept", group, *group ? ": " : "",
                 p->x_label);
    else
        mark(p, v[first].x, "p99 SLO met from %g%s%s%s%s", v[first].x, group);
}

/* Says how the mark judged a point, in the words of the criterion. */
static void criterion_note(an_plot *p, const an_plot_request *req, bool single)
{
    double c = req->confidence > 0 ? req->confidence : 0.95;
    if (req->criterion == AN_CRITERION_ALL_SEEDS)
        an__note(p, "SLO mark (--criterion all-seeds): a point meets the p99 targets when every "
                    "seed's p99 is within each and none was overloaded");
    else
        an__note(p,
                 "SLO mark (--criterion mean, as servesim plan judges): a point meets the p99 "
                 "targets when the worse end of the %g%% Student-t interval of the mean over its "
                 "seeds is within each, and no seed was overloaded%s",
                 100 * c, single ? "; a point of one run has no interval: its own p99 is judged"
                                 : "");
    if (req->plan)
        an__note(p, "plan's max: where the first target to fail crosses its threshold, linear "
                    "between the last point that met and the next (servesim plan --find "
                    "max-rate bisects to it); 'at least' when the next was overloaded or met");
}

/* Says what a point is when it is more than one run, and marks where each
 * configuration met the SLO: up to some load, from some capacity. */
static void average_points(an_plot *p, const an_plot_request *req, const sweep_kind *k, sweep *s,
                           const char *x)
{
    qsort(s->points, (size_t)s->n, sizeof *s->points, cmp_point);
    int fewest = s->n, most = 0;
    bool judged = false, single = false;
    verdict *v = util_xcalloc((size_t)s->n, sizeof *v);
    for (int g0 = 0, g1; g0 < s->n; g0 = g1) { /* a configuration, from its lowest x */
        int nv = 0;
        for (g1 = g0; g1 < s->n && s->points[g1].group == s->points[g0].group;) {
            int j = g1 + 1;
            while (j < s->n && same_point(&s->points[g1], &s->points[j]))
                j++;
            int kept = add_point(p, req, k, s, &s->points[g1], j - g1);
            v[nv++] = judge_point(&s->points[g1], j - g1, req);
            single |= j - g1 == 1;
            if (kept) fewest = kept < fewest ? kept : fewest;
            most = kept > most ? kept : most;
            g1 = j;
        }
        if (req->kind != AN_PLOT_LATENCY_LOAD || !v[0].judged) continue;
        judged = true;
        const char *group = s->groups[s->points[g0].group];
        if (an__capacity_key(x))
            mark_capacity(p, v, nv, group);
        else
            mark_load(p, req, v, nv, group);
    }
    free(v);
    if (judged) criterion_note(p, req, single);
    if (most > 1 && fewest == most)
        an__note(p,
                 "each point: the mean over the %d runs with its x (seeds); the band, their "
                 "range",
                 most);
    else if (most > 1)
        an__note(p,
                 "each point: the mean over the %d to %d runs with its x (seeds); the band, "
                 "their range",
                 fewest, most);
    if (p->n_overloaded)
        an__note(p, "crosses: overloaded runs there, k of n (their queue grew without bound, so "
                    "they have no percentiles); a point is the mean of the others, none when "
                    "all were");
}

/* The TPOT target as tokens/s per user, else a reading speed: what a
 * user of a streamed reply needs to keep up. */
static void reading_line(an_plot_panel *pl, const sweep *s)
{
    double tpot = util_json_number(s->runs[0].scenario, "slo.tpot_s", NAN);
    if (tpot > 0) {
        char t[32];
        an__seconds(tpot, t, sizeof t);
        an__guide(pl, AN_GUIDE_SLO, 1 / tpot, true, "TPOT SLO %s = %.3g tokens/s", t, 1 / tpot);
    } else {
        /* 238 words a minute (Brysbaert 2019, silent reading of English
         * non-fiction) at 4/3 tokens a word: docs/analysis.md */
        an__guide(pl, AN_GUIDE_REFERENCE, 238.0 / 60 * 4 / 3, true, "reading speed");
    }
}

int an__gather_sweep(sqlite3 *db, const an_plot_request *req_in, an_plot *p, util_diag *d)
{
    an_plot_request req = *req_in;
    const sweep_kind *k = &sweep_kinds[req.kind == AN_PLOT_THROUGHPUT_CONCURRENCY];
    sweep s = {0};
    const char *x = NULL;
    int rc = load_sweep(db, req.file, req.sweep, &s, d);
    if (!rc) find_varying(&s);
    if (!rc) rc = choose_x(&s, req.file, req.x_key ? req.x_key : k->x_key, &x, d);
    if (!rc && req.plan && strcmp(x, "workload.arrival.rate_per_s"))
        rc = util_diag_add(d,
                           "%s: sweep '%s': --plan marks the rate plan --find max-rate answers, "
                           "on an x axis of workload.arrival.rate_per_s, not %s",
                           req.file, s.label, x);
    if (!rc) rc = place_runs(db, &req, k, &s, x, d);
    if (!rc) {
        char words[64];
        const char *unit;
        an_plot_key_words(req.schema, x, words, sizeof words, &unit);
        snprintf(s.x_words, sizeof s.x_words, "%s", words);
        if (req.kind == AN_PLOT_THROUGHPUT_CONCURRENCY) {
            p->x_label = util_xstrdup("output per user");
            p->x_unit = util_xstrdup("tokens/s");
        } else {
            p->x_label = util_xstrdup(words);
            p->x_unit = util_xstrdup(unit);
        }
        for (int i = 0; i < k->n_panels; i++) {
            int pl = an__panel(p, k->panels[i].label, k->panels[i].unit, AN_SCALE_AUTO);
            for (int r = 0; k->panels[i].slo_key && r < s.n; r++)
                an__slo_guide(&p->panels[pl], s.runs[r].scenario, k->panels[i].slo_key, false);
        }
        if (req.kind == AN_PLOT_THROUGHPUT_CONCURRENCY) reading_line(&p->panels[0], &s);
        average_points(p, &req, k, &s, x);
        int64_t *ids = util_xmalloc((size_t)s.n * sizeof *ids);
        for (int i = 0; i < s.n; i++)
            ids[i] = s.runs[i].id;
        char *runs = an__runs_text(ids, s.n);
        p->title = an__runs_title(s.runs, s.n);
        p->subtitle = req.kind == AN_PLOT_THROUGHPUT_CONCURRENCY
                          ? util_xasprintf("%s, one point per %s", k->what, words)
                          : util_xasprintf("%s against %s", k->what, words);
        p->source = util_xasprintf("%s, sweep '%s', %s", req.file, s.label, runs);
        an__note(p, "%s", runs);
        if (req.kind == AN_PLOT_THROUGHPUT_CONCURRENCY)
            an__note(p, "each point is labelled with its %s; up and to the right is better", words);
        if (s.n_groups > 1) an__note(p, "a colour per combination of the other keys that vary");
        free(runs);
        free(ids);
    }
    sweep_fini(&s);
    return rc;
}
