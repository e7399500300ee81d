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
    X(measured) X(arrived) X(window_s) X(arrival_span_s) X(ttft_mean) X(ttft_p50) X(ttft_p99)    \
    X(tpot_mean) X(tpot_p99) X(e2e_mean) X(e2e_p50) X(e2e_p95) X(e2e_p99) X(requests_per_s)      \
    X(output_tokens_per_s) X(per_user_tokens_per_s_mean) X(goodput_requests_per_s)                \
    X(busy_fraction) X(mean_batch) X(mfu) X(gpu_count) X(usd_per_gpu_hour)                        \
    X(usd_per_million_output_tokens) X(mean_gpu_w) X(gpu_j_per_output_token)                      \
    X(wall_j_per_output_token) X(tasks_completed) X(tasks_failed) X(tasks_any_slow_fraction)      \
    X(tasks_e2e_p99) X(spec_k) X(spec_steps) X(spec_verifications) X(spec_acceptance_rate)        \
    X(spec_mean_accepted_length) X(spec_tokens_per_step) X(spec_drafting_share) X(sim_time_s)     \
    X(input_tokens) X(prefix_hit_rate) X(kv_bytes_per_token) X(kv_capacity_tokens)                \
    X(cpu_tier_bytes) X(cpu_lookup_tokens) X(cpu_hit_tokens) X(cpu_loaded_bytes)             \
    X(slo_attainment) X(gpu_hours) X(usd) X(peak_replicas) X(mean_replicas)
#define DEFINITION_STATS(X) X(mean) X(p50) X(p90) X(p95) X(p99)
#define CLASS_FIGURES(X)                                                                           \
    X(arrived) X(measured) X(rejected) X(shed) X(ttft_p50) X(ttft_p99) X(queue_mean) X(queue_p99) \
    X(e2e_mean) X(e2e_p99)

/* A class's figures from its section. */
static void class_figures(const an_class *k, ls_class_figures *x)
{
    const an_section *s = &k->req;
    *x = (ls_class_figures){
        .arrived = (double)s->arrived,
        .measured = (double)s->measured,
        .rejected = (double)s->rejected,
        .shed = (double)s->shed,
        .ttft_p50 = s->ttft.p50,
        .ttft_p99 = s->ttft.p99,
        .queue_mean = s->queue.mean,
        .queue_p99 = s->queue.p99,
        .e2e_mean = s->e2e.mean,
        .e2e_p99 = s->e2e.p99,
    };
    snprintf(x->name, sizeof x->name, "%s", k->name);
#define FINITE(v) x->v = isfinite(x->v) ? x->v : NAN;
    CLASS_FIGURES(FINITE)
#undef FINITE
}

const ls_class_figures *ls_class_of(const ls_figures *f, const char *name)
{
    for (int i = 0; i < f->n_classes; i++)
        if (!strcmp(f->classes[i].name, name)) return &f->classes[i];
    return NULL;
}

/* The figures of a report, as `report --json` has them (analysis/output.c):
 * a number that is not finite is null there (NAN here), and "tasks" is there
 * only for a run with agent tasks.  A table of fields, hence its length. */
static void figures(const an_report *r, const an_definition *defs, int n_defs, ls_figures *f)
{
    bool tasks = r->tasks.count != 0;
    const an_spec *sp = &r->use.spec;
    bool spec = sp->k > 0;
    *f = (ls_figures){
        .measured = (double)r->req.measured,
        .arrived = (double)r->req.arrived,
        .window_s = r->req.window_s,
        .arrival_span_s = r->req.arrival_span_s,
        .ttft_mean = r->req.ttft.mean,
        .ttft_p50 = r->req.ttft.p50,
        .ttft_p99 = r->req.ttft.p99,
        .tpot_mean = r->req.tpot.mean,
        .tpot_p99 = r->req.tpot.p99,
        .e2e_mean = r->req.e2e.mean,
        .e2e_p50 = r->req.e2e.p50,
        .e2e_p95 = r->req.e2e.p95,
        .e2e_p99 = r->req.e2e.p99,
        .requests_per_s = r->req.requests_per_s,
        .output_tokens_per_s = r->req.output_tokens_per_s,
        .per_user_tokens_per_s_mean = r->req.per_user_tokens_per_s.mean,
        .goodput_requests_per_s = r->req.goodput_requests_per_s,
        .busy_fraction = r->use.busy_fraction,
        .mean_batch = r->use.mean_batch,
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
        .spec_k = spec ? (double)sp->k : NAN,
        .spec_steps = spec ? (double)sp->steps : NAN,
        .spec_verifications = spec ? (double)sp->drafts : NAN,
        .spec_acceptance_rate = spec ? sp->acceptance_rate : NAN,
        .spec_mean_accepted_length = spec ? sp->mean_accepted_length : NAN,
        .spec_tokens_per_step = spec ? sp->tokens_per_step : NAN,
        .spec_drafting_share = spec ? sp->drafting_share : NAN,
        .sim_time_s = r->sim_time_s,
        .input_tokens = r->req.input_tokens,
        .prefix_hit_rate = r->req.prefix_hit_rate,
        .kv_bytes_per_token = r->use.kv_bytes_per_token,
        .kv_capacity_tokens = (double)r->use.kv_capacity_tokens,
        .cpu_tier_bytes = r->use.offload.cpu.tier_bytes,
        .cpu_lookup_tokens = (double)r->use.offload.cpu.lookup_tokens,
        .cpu_hit_tokens = (double)r->use.offload.cpu.hit_tokens,
        .cpu_loaded_bytes = r->use.offload.cpu.loaded_bytes,
        .slo_attainment = r->req.attainment,
        .gpu_hours = r->cost.gpu_hours,
        .usd = r->cost.usd,
        .peak_replicas = r->cost.peak_replicas,
        .mean_replicas = r->cost.mean_replicas,
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
    f->n_classes = r->n_classes < LS_CLASSES ? r->n_classes : LS_CLASSES;
    for (int i = 0; i < f->n_classes; i++)
        class_figures(&r->classes[i], &f->classes[i]);
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
    cJSON *classes = cJSON_AddArrayToObject(o, "classes");
    for (int i = 0; i < f->n_classes; i++) {
        const ls_class_figures *x = &f->classes[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "name", x->name);
#define ADD(v) add_figure(j, #v, x->v);
        CLASS_FIGURES(ADD)
#undef ADD
        cJSON_AddItemToArray(classes, j);
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
    cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(o, "classes"))
    {
        if (f->n_classes == LS_CLASSES) break;
        ls_class_figures *x = &f->classes[f->n_classes++];
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "name"));
        snprintf(x->name, sizeof x->name, "%s", name ? name : "");
#define GET(v) x->v = util_json_number(j, #v, NAN);
        CLASS_FIGURES(GET)
#undef GET
    }
}

/* The base less the key at path (*json the new text, caller frees). */
static int base_without(const pl_base *b, const char *path, pl_base *out, char **json,
                        util_diag *d)
{
    cJSON *root = cJSON_Parse(b->json);
    int rc = util_json_unset(root, path, d);
    *json = rc ? NULL : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    *out = *b;
    out->json = *json;
    return rc;
}

/* A worker's job: {"overrides", "seed", "iterations", "unset" (optional)};
 * the result is {"figures": {...}} or {"error": "..."}. */
static char *figures_job(const char *job, void *ctx)
{
    const pl_base *b = ctx;
    cJSON *j = cJSON_Parse(job);
    pl_point p = {cJSON_GetObjectItemCaseSensitive(j, "overrides"),
                  (int64_t)util_json_number(j, "seed", 1), 0};
    bool iterations = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "iterations"));
    const char *unset = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "unset"));
    util_diag d;
    util_diag_init(&d);
    an_report r = {0};
    an_definition defs[AN_N_DEFINITIONS];
    pl_base without = *b;
    char *json = NULL;
    int rc = unset ? base_without(b, unset, &without, &json, &d) : UTIL_OK;
    if (!rc) rc = pl_point_compute(&without, &p, iterations, &r, defs, &d);
    free(json);
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
    return ls_points_without(c, overrides, NULL, n, iterations, out, d);
}

int ls_points_without(ls_context *c, cJSON *const *overrides, const char *const *unset, int n,
                      bool iterations, ls_figures *out, util_diag *d)
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
        if (unset && unset[i]) cJSON_AddStringToObject(j, "unset", unset[i]);
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

void ls_row_rounded(ls_result *r, double *const *v)
{
    cJSON *row = ls_row(r);
    for (int k = 0; k < r->n_columns; k++) {
        double scale = pow(10, r->columns[k].decimals);
        if (isfinite(*v[k])) *v[k] = round(*v[k] * scale) / scale;
        cJSON_AddNumberToObject(row, r->columns[k].key, *v[k]);
    }
}

void ls_column_format(ls_result *r, const char *key, const char *header, const char *unit,
                      int decimals)
{
    r->columns = util_xrealloc(r->columns, (size_t)(r->n_columns + 1) * sizeof *r->columns);
    r->columns[r->n_columns++] = (ls_column){util_xstrdup(key), util_xstrdup(header),
                                             util_xstrdup(unit ? unit : ""), decimals};
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

/* ---- the scenario ---- */

char *ls_title(const ls_context *c)
{
    cJSON *root = cJSON_Parse(c->base.json);
    char *what = an_plot_scenario_title(root);
    cJSON_Delete(root);
    size_t n = strlen(c->name);
    char *t;
    if (!*what) t = util_xstrdup(c->name); /* nothing known of the cluster */
    else if (!strncmp(what, c->name, n) && what[n] == ':') t = util_xstrdup(what);
    else t = util_xasprintf("%s: %s", c->name, what);
    free(what);
    return t;
}

double ls_batch_slots(const ls_context *c)
{
    const sim_scenario *sc = c->scenario;
    double slots = 0;
    for (int i = 0; i < sc->n_pools; i++) /* a prefill pool's sequences decode elsewhere */
        if (i != sc->disagg_prefill)
            slots += (double)sc->pools[i].max_batch * sc->pools[i].replicas;
    return slots;
}

/* ---- the figure ---- */

void ls_plot_init(ls_result *r, const char *title, const char *subtitle, const char *x_label,
                  const char *x_unit, an_plot_scale x_scale)
{
    r->has_plot = true;
    r->plot = (an_plot){.title = util_xstrdup(title),
                        .subtitle = subtitle ? util_xstrdup(subtitle) : NULL,
                        .x_label = util_xstrdup(x_label),
                        .x_unit = util_xstrdup(x_unit ? x_unit : ""),
                        .x_scale = x_scale};
}

int ls_plot_panel(ls_result *r, const char *y_label, const char *y_unit, an_plot_scale y_scale)
{
    an_plot *p = &r->plot;
    p->panels = util_xrealloc(p->panels, (size_t)(p->n_panels + 1) * sizeof *p->panels);
    p->panels[p->n_panels] = (an_plot_panel){.y_label = util_xstrdup(y_label),
                                             .y_unit = util_xstrdup(y_unit ? y_unit : ""),
                                             .y_scale = y_scale};
    return p->n_panels++;
}

an_plot_series *ls_plot_banded(ls_result *r, int panel, const char *name, const double *x,
                               const double *y, const double *lo, const double *hi, int n)
{
    an_plot_panel *pn = &r->plot.panels[panel];
    pn->series = util_xrealloc(pn->series, (size_t)(pn->n_series + 1) * sizeof *pn->series);
    an_plot_series *s = &pn->series[pn->n_series++];
    size_t room = (size_t)(n + 1) * sizeof(double);
    *s = (an_plot_series){.name = util_xstrdup(name), .x = util_xmalloc(room),
                          .y = util_xmalloc(room)};
    if (lo) {
        s->lo = util_xmalloc(room);
        s->hi = util_xmalloc(room);
    }
    for (int i = 0; i < n; i++) /* a series holds the points it plots: none missing */
        if (isfinite(x[i]) && isfinite(y[i])) {
            if (lo) { /* a band edge not measured is the point itself */
                s->lo[s->n] = isfinite(lo[i]) ? lo[i] : y[i];
                s->hi[s->n] = isfinite(hi[i]) ? hi[i] : y[i];
            }
            s->x[s->n] = x[i];
            s->y[s->n++] = y[i];
        }
    return s;
}

an_plot_series *ls_plot_series(ls_result *r, int panel, const char *name, const double *x,
                               const double *y, int n)
{
    return ls_plot_banded(r, panel, name, x, y, NULL, NULL, n);
}

void ls_plot_guide(ls_result *r, int panel, an_plot_guide_kind kind, const char *label, double at,
                   bool vertical)
{
    an_plot_panel *pn = &r->plot.panels[panel];
    pn->guides = util_xrealloc(pn->guides, (size_t)(pn->n_guides + 1) * sizeof *pn->guides);
    pn->guides[pn->n_guides++] = (an_plot_guide){
        .label = util_xstrdup(label), .at = at, .vertical = vertical, .kind = kind};
}

void ls_plot_span(ls_result *r, const char *label, double lo, double hi)
{
    an_plot *p = &r->plot;
    p->spans = util_xrealloc(p->spans, (size_t)(p->n_spans + 1) * sizeof *p->spans);
    p->spans[p->n_spans++] = (an_plot_span){.label = util_xstrdup(label), .lo = lo, .hi = hi};
}

void ls_plot_x_ticks(ls_result *r, const double *at, const char *const *labels, int n)
{
    an_plot *p = &r->plot;
    p->x_ticks = util_xmalloc((size_t)n * sizeof *p->x_ticks);
    p->x_tick_labels = util_xmalloc((size_t)n * sizeof *p->x_tick_labels);
    for (int i = 0; i < n; i++) {
        p->x_ticks[i] = at[i];
        p->x_tick_labels[i] = util_xstrdup(labels[i]);
    }
    p->n_x_ticks = n;
}

/* The double at offset `at` of point i of pts. */
static double field_of(const ls_points_of *pts, int i, size_t at)
{
    int k = pts->idx ? pts->idx[i] : i;
    return *(const double *)((const char *)pts->points + (size_t)k * pts->size + at);
}

void ls_plot_fields(ls_result *r, const ls_points_of *pts, const ls_field_series *s, int n_series)
{
    int n = pts->n;
    double *x = util_xcalloc((size_t)n + 1, sizeof *x), *y = util_xcalloc((size_t)n + 1, sizeof *y);
    for (int k = 0; k < n_series; k++) {
        if (s[k].panel < 0) continue;
        for (int i = 0; i < n; i++) {
            x[i] = field_of(pts, i, pts->x_at);
            y[i] = field_of(pts, i, s[k].at);
        }
        an_plot_series *ps = ls_plot_series(r, s[k].panel, s[k].name, x, y, n);
        ps->colour = s[k].colour, ps->dash = s[k].dash;
    }
    free(x);
    free(y);
}

void ls_plot_x_ticks_of(ls_result *r, const ls_points_of *pts)
{
    int n = pts->n;
    double *at = util_xcalloc((size_t)n + 1, sizeof *at);
    char **labels = util_xcalloc((size_t)n + 1, sizeof *labels);
    for (int i = 0; i < n; i++) {
        at[i] = field_of(pts, i, pts->x_at);
        labels[i] = util_xasprintf("%g", at[i]);
    }
    ls_plot_x_ticks(r, at, (const char *const *)labels, n);
    for (int i = 0; i < n; i++)
        free(labels[i]);
    free(labels);
    free(at);
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

/* The file with --unset, then --set applied, split into its knobs and its
 * scenario. */
static int load(const ls_lesson *l, char **unsets, int n_unsets, char **sets, int n_sets,
                cJSON **knobs, char **scenario, util_diag *d)
{
    cJSON *root = cJSON_Parse(l->file);
    if (!root) return util_diag_fail(d, "lesson %s: its file is not JSON", l->name);
    cJSON *shipped = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(root, "lesson"), 1);
    int rc = UTIL_OK;
    for (int i = 0; i < n_unsets; i++)
        if (util_json_unset(root, unsets[i], d)) rc = UTIL_EINPUT;
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
    return ls_run_edits(l, cat, NULL, 0, sets, n_sets, quick, jobs, out, d);
}

int ls_run_edits(const ls_lesson *l, const mdl_catalog *cat, char **unsets, int n_unsets,
                 char **sets, int n_sets, bool quick, int jobs, ls_result *out, util_diag *d)
{
    memset(out, 0, sizeof *out);
    out->table = cJSON_CreateArray();
    out->numbers = cJSON_CreateObject();
    cJSON *knobs = NULL;
    char *scenario = NULL;
    int rc = load(l, unsets, n_unsets, sets, n_sets, &knobs, &scenario, d);
    sim_scenario sc;
    memset(&sc, 0, sizeof sc);
    ls_context c = {.name = l->name, .knobs = knobs, .base = {.catalog = cat, .json = scenario},
                    .scenario = &sc, .quick = quick, .jobs = jobs};
    /* the scenario must load before any worker runs it: its errors are the user's */
    bool tried = !rc;
    if (tried) rc = sim_scenario_load(cJSON_Parse(scenario), cat, NULL, &sc, d);
    if (!rc) {
        c.pool = pl_pool_start(jobs, figures_job, (void *)&c.base);
        rc = l->run(&c, out, d);
        pl_pool_stop(c.pool);
    }
    if (tried) sim_scenario_fini(&sc);
    cJSON_Delete(knobs);
    free(scenario);
    return rc;
}

void ls_result_fini(ls_result *r)
{
    cJSON_Delete(r->table);
    cJSON_Delete(r->numbers);
    for (int i = 0; i < r->n_columns; i++) {
        free(r->columns[i].key);
        free(r->columns[i].header);
        free(r->columns[i].unit);
    }
    free(r->columns);
    for (int i = 0; i < r->n_findings; i++) free(r->findings[i]);
    free(r->findings);
    if (r->has_plot) an_plot_fini(&r->plot);
    memset(r, 0, sizeof *r);
}

/* ---- showing it ---- */

/* A cell as text: a number to its column's decimals (without a format,
 * whole numbers whole and others to four significant digits). */
static char *cell_text(const cJSON *v, const ls_column *col)
{
    if (cJSON_IsString(v)) return util_xstrdup(v->valuestring);
    if (!cJSON_IsNumber(v)) return util_xstrdup("-");
    double x = v->valuedouble;
    if (col) return util_xasprintf("%.*f", col->decimals, x);
    if (x == floor(x) && fabs(x) < 1e9) return util_xasprintf("%.0f", x);
    return util_xasprintf("%.4g", x);
}

/* The columns to print: the result's formats, else each key of the first
 * row as it is (n in *n; caller frees the array, not its strings). */
static ls_column *columns_of(const ls_result *r, int *n)
{
    const cJSON *first = cJSON_GetArrayItem(r->table, 0), *c;
    if (r->n_columns) {
        *n = r->n_columns;
        ls_column *cols = util_xcalloc((size_t)*n, sizeof *cols);
        memcpy(cols, r->columns, (size_t)*n * sizeof *cols);
        return cols;
    }
    *n = cJSON_GetArraySize(first);
    ls_column *cols = util_xcalloc((size_t)*n + 1, sizeof *cols);
    int k = 0;
    cJSON_ArrayForEach(c, first) cols[k++] = (ls_column){c->string, c->string, "", -1};
    return cols;
}

/* Text from its first line, with continuation lines indented by as much
 * as the first's lead, broken at spaces to fit width columns. */
static void wrapped(FILE *out, const char *lead, const char *text, int width)
{
    int indent = (int)strlen(lead), room = width - indent, col = 0;
    if (room < 20) room = 20;
    fputs(lead, out);
    for (const char *w = text; *w;) {
        while (*w == ' ') w++;
        int len = (int)strcspn(w, " ");
        if (!len) break;
        if (col && col + 1 + len > room) {
            fprintf(out, "\n%*s", indent, "");
            col = 0;
        }
        fprintf(out, "%s%.*s", col ? " " : "", len, w);
        col += (col ? 1 : 0) + len;
        w += len;
    }
    fputc('\n', out);
}

/* A cell of a column width wide: text to the left (the last column not
 * padded), numbers to the right. */
static void cell(FILE *out, const char *t, int width, bool text, bool last)
{
    if (text && last && *t) fprintf(out, "  %s", t);
    else if (text && last) return;
    else fprintf(out, "  %*s", text ? -width : width, t);
}

int ls_terminal_width(FILE *out)
{
    int w = util_terminal_columns(out, 100);
    return w < 40 ? 40 : w;
}

/* Each column as wide as its widest cell: numbers to the right, text to
 * the left; the units, where any column has one, on a second header line. */
void ls_print_width(const ls_lesson *l, const ls_result *r, int width, FILE *out)
{
    char *head = util_xasprintf("lesson %s: ", l->name);
    wrapped(out, head, l->summary, width);
    free(head);
    fputc('\n', out);
    int ncol, nrow = cJSON_GetArraySize(r->table);
    ls_column *cols = columns_of(r, &ncol);
    int *width_of = util_xcalloc((size_t)ncol + 1, sizeof *width_of);
    bool *text = util_xcalloc((size_t)ncol + 1, sizeof *text), units = false;
    char **cells = util_xcalloc((size_t)(ncol * nrow) + 1, sizeof *cells);
    for (int k = 0; k < ncol; k++) {
        width_of[k] = (int)fmax(strlen(cols[k].header), strlen(cols[k].unit));
        units = units || *cols[k].unit;
        for (int i = 0; i < nrow; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(r->table, i),
                                                              cols[k].key);
            char *t = cells[i * ncol + k] = cell_text(v, cols[k].decimals >= 0 ? &cols[k] : NULL);
            if (cJSON_IsString(v)) text[k] = true;
            if ((int)strlen(t) > width_of[k]) width_of[k] = (int)strlen(t);
        }
    }
    /* a text column's header to the left too; no line ends in spaces */
    for (int k = 0; k < ncol; k++) cell(out, cols[k].header, width_of[k], text[k], k == ncol - 1);
    fputc('\n', out);
    for (int k = 0; units && k < ncol; k++)
        cell(out, cols[k].unit, width_of[k], text[k], k == ncol - 1);
    if (units) fputc('\n', out);
    for (int i = 0; i < nrow; i++) {
        for (int k = 0; k < ncol; k++)
            cell(out, cells[i * ncol + k], width_of[k], text[k], k == ncol - 1);
        fputc('\n', out);
    }
    fputc('\n', out);
    for (int i = 0; i < r->n_findings; i++) wrapped(out, "- ", r->findings[i], width);
    for (int i = 0; i < ncol * nrow; i++) free(cells[i]);
    free(cells);
    free(text);
    free(width_of);
    free(cols);
}

void ls_print(const ls_lesson *l, const ls_result *r, FILE *out)
{
    ls_print_width(l, r, ls_terminal_width(out), out);
}

cJSON *ls_json(const ls_lesson *l, const ls_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "lesson", l->name);
    cJSON_AddItemToObject(j, "table", cJSON_Duplicate(r->table, 1));
    cJSON *cols = cJSON_AddArrayToObject(j, "columns");
    for (int i = 0; i < r->n_columns; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "key", r->columns[i].key);
        cJSON_AddStringToObject(c, "header", r->columns[i].header);
        cJSON_AddStringToObject(c, "unit", r->columns[i].unit);
        cJSON_AddNumberToObject(c, "decimals", r->columns[i].decimals);
        cJSON_AddItemToArray(cols, c);
    }
    cJSON *f = cJSON_AddArrayToObject(j, "findings");
    for (int i = 0; i < r->n_findings; i++) cJSON_AddItemToArray(f, cJSON_CreateString(r->findings[i]));
    cJSON_AddItemToObject(j, "numbers", cJSON_Duplicate(r->numbers, 1));
    return j;
}
