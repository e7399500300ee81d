/*
 * lesson.c: running a lesson -- its shipped file, --set, the points in
 * worker processes -- and showing what it found: a table, sentences, a
 * figure.
 */
#include "ls.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const ls_lesson *ls_find(const char *name)
{
    for (const ls_lesson *l = ls_lessons; l->name; l++)
        if (!strcmp(l->name, name)) return l;
    return NULL;
}

/* ---- points ---- */

/* ls_figures' numbers, for the loops over them. */
#define FIGURES(X)                                                                                 \
    X(measured) X(ttft_mean) X(ttft_p50) X(ttft_p99) X(tpot_mean) X(e2e_mean) X(e2e_p50)          \
    X(e2e_p95) X(e2e_p99) X(requests_per_s) X(output_tokens_per_s) X(per_user_tokens_per_s_mean)  \
    X(goodput_requests_per_s) X(busy_fraction) X(mfu) X(gpu_count) X(usd_per_gpu_hour)            \
    X(usd_per_million_output_tokens) X(mean_gpu_w) X(gpu_j_per_output_token)                      \
    X(wall_j_per_output_token) X(tasks_completed) X(tasks_failed) X(tasks_any_slow_fraction)      \
    X(tasks_e2e_p99)
#define DEFINITION_STATS(X) X(mean) X(p50) X(p90) X(p95) X(p99)

/* The figures of a report, as `report --json` has them (analysis/output.c):
 * a number that is not finite is null there (NAN here), and "tasks" is there
 * only for a run with agent tasks.  A table of fields, hence its length. */
static void figures(const an_report *r, const an_definition *defs, int n_defs, ls_figures *f)
{
    bool tasks = r->tasks.count != 0;
    *f = (ls_figures){
        .measured = (double)r->req.measured,
        .ttft_mean = r->req.ttft.mean,
        .ttft_p50 = r->req.ttft.p50,
        .ttft_p99 = r->req.ttft.p99,
        .tpot_mean = r->req.tpot.mean,
        .e2e_mean = r->req.e2e.mean,
        .e2e_p50 = r->req.e2e.p50,
        .e2e_p95 = r->req.e2e.p95,
        .e2e_p99 = r->req.e2e.p99,
        .requests_per_s = r->req.requests_per_s,
        .output_tokens_per_s = r->req.output_tokens_per_s,
        .per_user_tokens_per_s_mean = r->req.per_user_tokens_per_s.mean,
        .goodput_requests_per_s = r->req.goodput_requests_per_s,
        .busy_fraction = r->use.busy_fraction,
        .mfu = r->use.mfu,
        .gpu_count = r->cost.gpu_count,
        .usd_per_gpu_hour = r->cost.usd_per_gpu_hour,
        .usd_per_million_output_tokens = r->cost.usd_per_million_output_tokens,
        .mean_gpu_w = r->energy.mean_gpu_w,
        .gpu_j_per_output_token = r->energy.gpu_j_per_output_token,
        .wall_j_per_output_token = r->energy.wall_j_per_output_token,
        .tasks_completed = tasks ? (double)r->tasks.completed : NAN,
        .tasks_failed = tasks ? (double)r->tasks.failed : NAN,
        .tasks_any_slow_fraction = tasks ? r->tasks.any_slow_fraction : NAN,
        .tasks_e2e_p99 = tasks ? r->tasks.e2e.p99 : NAN,
        .n_definitions = n_defs,
    };
    for (int i = 0; i < n_defs; i++) {
        ls_definition *x = &f->definitions[i];
        assert(strlen(defs[i].name) < sizeof x->name && strlen(defs[i].tools) < sizeof x->tools);
        snprintf(x->name, sizeof x->name, "%s", defs[i].name);
        snprintf(x->tools, sizeof x->tools, "%s", defs[i].tools);
        const an_stats *st = &defs[i].stats;
#define COPY(s) x->s = isfinite(st->s) ? st->s : NAN;
        DEFINITION_STATS(COPY)
#undef COPY
    }
#define FINITE(x) f->x = isfinite(f->x) ? f->x : NAN;
    FIGURES(FINITE)
#undef FINITE
}

/* ---- the figures as one line of JSON, from a worker to the parent ---- */

static void add_figure(cJSON *o, const char *key, double v)
{
    if (isnan(v)) cJSON_AddNullToObject(o, key); /* and back to NAN */
    else cJSON_AddNumberToObject(o, key, v);
}

static cJSON *figures_json(const ls_figures *f)
{
    cJSON *o = cJSON_CreateObject();
#define ADD(x) add_figure(o, #x, f->x);
    FIGURES(ADD)
#undef ADD
    cJSON *defs = cJSON_AddArrayToObject(o, "definitions");
    for (int i = 0; i < f->n_definitions; i++) {
        const ls_definition *x = &f->definitions[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "name", x->name);
        cJSON_AddStringToObject(j, "tools", x->tools);
#define ADD(s) add_figure(j, #s, x->s);
        DEFINITION_STATS(ADD)
#undef ADD
        cJSON_AddItemToArray(defs, j);
    }
    return o;
}

static void figures_from_json(const cJSON *o, ls_figures *f)
{
    memset(f, 0, sizeof *f);
#define GET(x) f->x = util_json_number(o, #x, NAN);
    FIGURES(GET)
#undef GET
    const cJSON *j;
    cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(o, "definitions")) {
        if (f->n_definitions == AN_N_DEFINITIONS) break;
        ls_definition *x = &f->definitions[f->n_definitions++];
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "name"));
        const char *tools = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "tools"));
        snprintf(x->name, sizeof x->name, "%s", name ? name : "");
        snprintf(x->tools, sizeof x->tools, "%s", tools ? tools : "");
#define GET(s) x->s = util_json_number(j, #s, NAN);
        DEFINITION_STATS(GET)
#undef GET
    }
}

/* A worker's job: {"overrides", "seed", "iterations"}; the result is
 * {"figures": {...}} or {"error": "..."}. */
static char *figures_job(const char *job, void *ctx)
{
    const pl_base *b = ctx;
    cJSON *j = cJSON_Parse(job);
    pl_point p = {cJSON_GetObjectItemCaseSensitive(j, "overrides"),
                  (int64_t)util_json_number(j, "seed", 1), 0};
    bool iterations = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "iterations"));
    util_diag d;
    util_diag_init(&d);
    an_report r;
    an_definition defs[AN_N_DEFINITIONS];
    int rc = pl_point_compute(b, &p, iterations, &r, defs, &d);
    cJSON *out = cJSON_CreateObject();
    if (rc) {
        cJSON_AddStringToObject(out, "error", d.count ? d.msgs[0] : "the point failed");
    } else {
        ls_figures f;
        figures(&r, defs, iterations ? AN_N_DEFINITIONS : 0, &f);
        cJSON_AddItemToObject(out, "figures", figures_json(&f));
    }
    an_report_fini(&r);
    char *text = cJSON_PrintUnformatted(out);
    cJSON_Delete(out);
    cJSON_Delete(j);
    util_diag_fini(&d);
    return text;
}

int ls_points(ls_context *c, cJSON *const *overrides, int n, bool iterations, ls_figures *out,
              util_diag *d)
{
    cJSON *root = cJSON_Parse(c->base.json);
    double seed = util_json_number(root, "seed", 1);
    cJSON_Delete(root);
    int rc = UTIL_OK;
    char **jobs = util_xcalloc((size_t)n + 1, sizeof *jobs), **results = util_xcalloc((size_t)n + 1, sizeof *results);
    for (int i = 0; i < n; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "overrides", cJSON_Duplicate(overrides[i], 1));
        cJSON_AddNumberToObject(j, "seed", seed);
        cJSON_AddBoolToObject(j, "iterations", iterations);
        jobs[i] = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
    }
    pl_pool_map(c->pool, jobs, n, NULL, results);
    for (int i = 0; i < n; i++) {
        cJSON *res = cJSON_Parse(results[i]);
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(res, "figures");
        figures_from_json(f, &out[i]);
        if (!f && !rc)
            rc = util_diag_fail(d, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(res, "error")));
        cJSON_Delete(res);
        free(jobs[i]);
        free(results[i]);
    }
    free(jobs);
    free(results);
    return rc;
}

/* ---- knobs and numbers ---- */

double ls_knob(const ls_context *c, const char *path, double dflt)
{
    return util_json_number(c->knobs, path, dflt);
}

double *ls_knobs(const ls_context *c, const char *path, int *n)
{
    const cJSON *a = util_json_get(c->knobs, path), *v;
    *n = 0;
    double *out = util_xcalloc((size_t)(cJSON_GetArraySize(a) + 1), sizeof *out);
    cJSON_ArrayForEach(v, a) if (cJSON_IsNumber(v)) out[(*n)++] = v->valuedouble;
    return out;
}

cJSON *ls_with(const char *path, double v)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, path, v);
    return o;
}

cJSON *ls_row(ls_result *r)
{
    cJSON *row = cJSON_CreateObject();
    cJSON_AddItemToArray(r->table, row);
    return row;
}

void ls_say(ls_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->findings = util_xrealloc(r->findings, (size_t)(r->n_findings + 1) * sizeof *r->findings);
    r->findings[r->n_findings++] = util_xstrdup(buf);
}

void ls_keep(ls_result *r, const char *name, double v)
{
    if (isnan(v)) cJSON_AddNullToObject(r->numbers, name);
    else cJSON_AddNumberToObject(r->numbers, name, v);
}

/* ---- the figure ---- */

void ls_plot_init(ls_result *r, const char *title, const char *x_label, bool log_x)
{
    r->has_plot = true;
    r->plot = (an_plot){.title = util_xstrdup(title), .x_label = util_xstrdup(x_label),
                        .log_x = log_x};
}

int ls_plot_panel(ls_result *r, const char *y_label)
{
    an_plot *p = &r->plot;
    p->panels = util_xrealloc(p->panels, (size_t)(p->n_panels + 1) * sizeof *p->panels);
    p->panels[p->n_panels] = (an_plot_panel){.y_label = util_xstrdup(y_label)};
    return p->n_panels++;
}

void ls_plot_series(ls_result *r, int panel, const char *name, const double *x, const double *y,
                    int n)
{
    an_plot_panel *pn = &r->plot.panels[panel];
    pn->series = util_xrealloc(pn->series, (size_t)(pn->n_series + 1) * sizeof *pn->series);
    an_plot_series *s = &pn->series[pn->n_series++];
    *s = (an_plot_series){.name = util_xstrdup(name), .x = util_xmalloc((size_t)(n + 1) * sizeof(double)),
                          .y = util_xmalloc((size_t)(n + 1) * sizeof(double))};
    for (int i = 0; i < n; i++) /* a series holds the points it plots: none missing */
        if (isfinite(x[i]) && isfinite(y[i])) {
            s->x[s->n] = x[i];
            s->y[s->n++] = y[i];
        }
}

void ls_plot_guide(ls_result *r, int panel, const char *label, double at, bool vertical)
{
    an_plot_panel *pn = &r->plot.panels[panel];
    pn->guides = util_xrealloc(pn->guides, (size_t)(pn->n_guides + 1) * sizeof *pn->guides);
    pn->guides[pn->n_guides++] =
        (an_plot_guide){.label = util_xstrdup(label), .at = at, .vertical = vertical};
}

/* ---- running one ---- */

/* Every key --set gave the lesson object is one of the file's own knobs
 * (the lessons read only those, so any other would be silently ignored):
 * path names the object, shipped its keys in the file. */
static int check_knobs(const cJSON *given, const cJSON *shipped, const char *path, util_diag *d)
{
    if (!cJSON_IsObject(given))
        return util_diag_add(d, "%s: expected an object of the lesson's knobs", path);
    int n = 0, rc = UTIL_OK;
    const cJSON *k;
    cJSON_ArrayForEach(k, shipped) n++;
    const char **known = util_xcalloc((size_t)n + 1, sizeof *known);
    n = 0;
    cJSON_ArrayForEach(k, shipped) known[n++] = k->string;
    cJSON_ArrayForEach(k, given) {
        util_clip_buf cb;
        const cJSON *own = cJSON_GetObjectItemCaseSensitive(shipped, k->string);
        char *p = util_xasprintf("%s.%s", path, util_clip(k->string, &cb));
        if (!own) rc = util_diag_unknown(d, p, "knob", k->string, known);
        else if (cJSON_IsObject(own) && check_knobs(k, own, p, d)) rc = UTIL_EINPUT;
        free(p);
    }
    free(known);
    return rc;
}

/* The file with --set applied, split into its knobs and its scenario. */
static int load(const ls_lesson *l, char **sets, int n_sets, cJSON **knobs, char **scenario,
                util_diag *d)
{
    cJSON *root = cJSON_Parse(l->file);
    if (!root) return util_diag_fail(d, "lesson %s: its file is not JSON", l->name);
    cJSON *shipped = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(root, "lesson"), 1);
    int rc = UTIL_OK;
    for (int i = 0; i < n_sets; i++)
        if (util_json_set(root, sets[i], d)) rc = UTIL_EINPUT;
    const cJSON *given = cJSON_GetObjectItemCaseSensitive(root, "lesson");
    if (!rc && (given || shipped) && check_knobs(given, shipped, "lesson", d)) rc = UTIL_EINPUT;
    cJSON_Delete(shipped);
    *knobs = cJSON_DetachItemFromObjectCaseSensitive(root, "lesson");
    *scenario = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return rc;
}

int ls_run(const ls_lesson *l, const mdl_catalog *cat, char **sets, int n_sets, bool quick,
           int jobs, ls_result *out, util_diag *d)
{
    memset(out, 0, sizeof *out);
    out->table = cJSON_CreateArray();
    out->numbers = cJSON_CreateObject();
    cJSON *knobs = NULL;
    char *scenario = NULL;
    int rc = load(l, sets, n_sets, &knobs, &scenario, d);
    ls_context c = {.knobs = knobs, .base = {.catalog = cat, .json = scenario}, .quick = quick,
                    .jobs = jobs};
    if (!rc) {
        /* the scenario must load before any worker runs it: its errors are the user's */
        sim_scenario sc;
        rc = sim_scenario_load(cJSON_Parse(scenario), cat, NULL, &sc, d);
        sim_scenario_fini(&sc);
    }
    if (!rc) {
        c.pool = pl_pool_start(jobs, figures_job, (void *)&c.base);
        rc = l->run(&c, out, d);
        pl_pool_stop(c.pool);
    }
    cJSON_Delete(knobs);
    free(scenario);
    return rc;
}

void ls_result_fini(ls_result *r)
{
    cJSON_Delete(r->table);
    cJSON_Delete(r->numbers);
    for (int i = 0; i < r->n_findings; i++) free(r->findings[i]);
    free(r->findings);
    if (r->has_plot) an_plot_fini(&r->plot);
    memset(r, 0, sizeof *r);
}

/* ---- showing it ---- */

/* A cell as text: whole numbers whole, others to four significant digits. */
static char *cell_text(const cJSON *v)
{
    if (cJSON_IsString(v)) return util_xstrdup(v->valuestring);
    if (!cJSON_IsNumber(v)) return util_xstrdup("-");
    double x = v->valuedouble;
    if (x == floor(x) && fabs(x) < 1e9) return util_xasprintf("%.0f", x);
    return util_xasprintf("%.4g", x);
}

/* Each column as wide as its widest cell: numbers to the right, text to
 * the left. */
void ls_print(const ls_lesson *l, const ls_result *r, FILE *out)
{
    fprintf(out, "lesson %s: %s\n\n", l->name, l->summary);
    const cJSON *first = cJSON_GetArrayItem(r->table, 0), *c, *row;
    int ncol = cJSON_GetArraySize(first), k = 0;
    int *width = util_xcalloc((size_t)ncol + 1, sizeof *width);
    cJSON_ArrayForEach(c, first) width[k++] = (int)strlen(c->string);
    cJSON_ArrayForEach(row, r->table) {
        k = 0;
        cJSON_ArrayForEach(c, first) {
            char *t = cell_text(cJSON_GetObjectItemCaseSensitive(row, c->string));
            if ((int)strlen(t) > width[k]) width[k] = (int)strlen(t);
            k++;
            free(t);
        }
    }
    k = 0;
    cJSON_ArrayForEach(c, first) { /* a text column's header to the left too */
        fprintf(out, "  %*s", cJSON_IsString(c) ? -width[k] : width[k], c->string);
        k++;
    }
    fprintf(out, "\n");
    cJSON_ArrayForEach(row, r->table) {
        k = 0;
        cJSON_ArrayForEach(c, first) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, c->string);
            char *t = cell_text(v);
            fprintf(out, "  %*s", cJSON_IsString(v) ? -width[k] : width[k], t);
            k++;
            free(t);
        }
        fprintf(out, "\n");
    }
    fprintf(out, "\n");
    for (int i = 0; i < r->n_findings; i++) fprintf(out, "- %s\n", r->findings[i]);
    free(width);
}

cJSON *ls_json(const ls_lesson *l, const ls_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "lesson", l->name);
    cJSON_AddItemToObject(j, "table", cJSON_Duplicate(r->table, 1));
    cJSON *f = cJSON_AddArrayToObject(j, "findings");
    for (int i = 0; i < r->n_findings; i++) cJSON_AddItemToArray(f, cJSON_CreateString(r->findings[i]));
    cJSON_AddItemToObject(j, "numbers", cJSON_Duplicate(r->numbers, 1));
    return j;
}
