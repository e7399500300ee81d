/*
 * plot.c: the figures of `servesim plot`, gathered from a database alone
 * into an an_plot, one function per kind: a CDF (and its tail) from the
 * measured rows, the timeline and the SLO curve from an_timeline_compute
 * and an_slo_curve; the sweeps' kinds are in plot_sweep.c, the pipeline's
 * lanes in plot_pipeline.c.  Here too the
 * pieces every kind is built from, and the words a figure uses: a title
 * says what was simulated, axes name quantities in words with their units,
 * series are named by what differs between runs -- never a file path, a
 * run id alone or a raw dotted key.  draw.c draws any figure and knows
 * nothing of kinds: a new kind is one more gather function.
 */
#include "plot.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const an_plot_kind_names[] = {
    "latency-load", "throughput-concurrency", "cdf", "timeline", "slo-curve", "pipeline", NULL};
const char *const an_plot_criterion_names[] = {"mean", "all-seeds", NULL};

/* A CDF of a million requests would be a 50 MB SVG that no browser draws
 * faster than 2,000 evenly spaced ranks, which look the same. */
#define CDF_MAX_POINTS 2000
#define CURVE_POINTS   101

const char *const an__metric_titles[] = {"TTFT", "TPOT", "TPOT incl. TTFT", "E2E"};
/* The stored scenario's threshold on each metric, if any. */
const char *const an__metric_slo_keys[] = {"slo.ttft_s", "slo.tpot_s", NULL, "slo.e2e_s"};

/* ---- building a figure ---------------------------------------------------- */

/* Arrays grow by doubling when their length reaches a power of two, so the
 * public structs need no capacity fields. */
void *an__grow(void *arr, size_t n, size_t size)
{
    if (n & (n - 1)) return arr;
    return util_xrealloc(arr, (n ? 2 * n : 1) * size);
}

void an__note(an_plot *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    p->notes = an__grow(p->notes, (size_t)p->n_notes, sizeof *p->notes);
    p->notes[p->n_notes++] = util_xvasprintf(fmt, ap);
    va_end(ap);
}

int an__panel(an_plot *p, const char *y_label, const char *y_unit, an_plot_scale scale)
{
    p->panels = an__grow(p->panels, (size_t)p->n_panels, sizeof *p->panels);
    p->panels[p->n_panels] = (an_plot_panel){
        .y_label = util_xstrdup(y_label), .y_unit = util_xstrdup(y_unit), .y_scale = scale};
    return p->n_panels++;
}

an_plot_series *an__series(an_plot_panel *pl, const char *name)
{
    for (int i = 0; i < pl->n_series; i++)
        if (!strcmp(pl->series[i].name, name)) return &pl->series[i];
    pl->series = an__grow(pl->series, (size_t)pl->n_series, sizeof *pl->series);
    pl->series[pl->n_series] = (an_plot_series){.name = util_xstrdup(name)};
    return &pl->series[pl->n_series++];
}

/* Room for n + 1 items in an array grown by an__grow(): created late (the
 * first band, the first label) it must hold what an__grow() would have. */
static void *late(size_t n, size_t size)
{
    size_t cap = 1;
    while (cap < n + 1)
        cap <<= 1;
    return util_xcalloc(cap, size);
}

void an__push_band(an_plot_series *s, double x, double y, double lo, double hi, const char *label)
{
    if (!isfinite(x) || !isfinite(y)) return;
    bool band = isfinite(lo) && isfinite(hi);
    if (band && !s->lo) { /* the earlier points' bands are the points themselves */
        s->lo = late(s->n, sizeof *s->lo);
        s->hi = late(s->n, sizeof *s->hi);
        if (s->n) memcpy(s->lo, s->y, s->n * sizeof *s->lo);
        if (s->n) memcpy(s->hi, s->y, s->n * sizeof *s->hi);
    } else if (s->lo) {
        s->lo = an__grow(s->lo, s->n, sizeof *s->lo);
        s->hi = an__grow(s->hi, s->n, sizeof *s->hi);
    }
    if (label && !s->labels)
        s->labels = late(s->n, sizeof *s->labels);
    else if (s->labels)
        s->labels = an__grow(s->labels, s->n, sizeof *s->labels);
    s->x = an__grow(s->x, s->n, sizeof *s->x);
    s->y = an__grow(s->y, s->n, sizeof *s->y);
    if (s->lo) {
        s->lo[s->n] = band ? lo : y;
        s->hi[s->n] = band ? hi : y;
    }
    if (s->labels) s->labels[s->n] = label ? util_xstrdup(label) : NULL;
    s->x[s->n] = x;
    s->y[s->n++] = y;
}

void an__push(an_plot_series *s, double x, double y)
{
    an__push_band(s, x, y, NAN, NAN, NULL);
}

void an__guide(an_plot_panel *pl, an_plot_guide_kind kind, double at, bool vertical,
               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pl->guides = an__grow(pl->guides, (size_t)pl->n_guides, sizeof *pl->guides);
    pl->guides[pl->n_guides++] = (an_plot_guide){
        .label = util_xvasprintf(fmt, ap), .at = at, .vertical = vertical, .kind = kind};
    va_end(ap);
}

void an__seconds(double s, char *buf, size_t n)
{
    if (fabs(s) < 1)
        snprintf(buf, n, "%.4g ms", 1e3 * s);
    else
        snprintf(buf, n, "%.4g s", s);
}

/* "TTFT SLO 500 ms" for slo.ttft_s; runs of one sweep usually share it,
 * but a sweep may vary it. */
double an__slo_guide(an_plot_panel *pl, const cJSON *scenario, const char *key, bool vertical)
{
    return an__slo_guide_at(pl, key, key ? util_json_number(scenario, key, NAN) : NAN, vertical);
}

double an__slo_guide_at(an_plot_panel *pl, const char *key, double at, bool vertical)
{
    if (!key || !(at > 0)) return NAN;
    for (int i = 0; i < pl->n_guides; i++)
        if (pl->guides[i].at == at && pl->guides[i].kind == AN_GUIDE_SLO) return at;
    static const char *const keys[] = {"slo.ttft_s", "slo.tpot_s", "slo.e2e_s"};
    static const char *const names[] = {"TTFT", "TPOT", "E2E"};
    const char *name = "";
    for (int i = 0; i < 3; i++)
        if (!strcmp(keys[i], key)) name = names[i];
    char t[32];
    an__seconds(at, t, sizeof t);
    an__guide(pl, AN_GUIDE_SLO, at, vertical, "%s SLO %s", name, t);
    return at;
}

/* ---- lanes ---------------------------------------------------------------- */

int an__new_lane(an_plot *p, const char *name)
{
    if (!p->lanes) p->lanes = util_xcalloc(1, sizeof *p->lanes);
    an_plot_lanes *ln = p->lanes;
    ln->lanes = an__grow(ln->lanes, (size_t)ln->n_lanes, sizeof *ln->lanes);
    ln->lanes[ln->n_lanes] = (an__lane){.name = util_xstrdup(name)};
    return ln->n_lanes++;
}

an__item *an__lane_item(an_plot *p, int lane, an__shape shape, double lo, double hi)
{
    an__lane *l = &p->lanes->lanes[lane];
    l->items = an__grow(l->items, l->n_items, sizeof *l->items);
    an__item *it = &l->items[l->n_items++];
    *it = (an__item){.shape = shape, .lo = lo, .hi = hi, .glyph = '*', .link_lane = -1};
    return it;
}

void an__lane_key(an_plot *p, an__shape shape, int colour, char glyph, const char *text)
{
    an_plot_lanes *ln = p->lanes;
    ln->keys = an__grow(ln->keys, (size_t)ln->n_keys, sizeof *ln->keys);
    ln->keys[ln->n_keys++] =
        (an__key){.shape = shape, .colour = colour, .glyph = glyph, .text = util_xstrdup(text)};
}

static void lanes_free(an_plot_lanes *ln)
{
    if (!ln) return;
    for (int i = 0; i < ln->n_lanes; i++) {
        an__lane *l = &ln->lanes[i];
        for (size_t k = 0; k < l->n_items; k++) {
            free(l->items[k].label);
            free(l->items[k].short_label);
            free(l->items[k].meta);
        }
        free(l->items);
        free(l->name);
    }
    for (int i = 0; i < ln->n_keys; i++)
        free(ln->keys[i].text);
    free(ln->keys);
    free(ln->lanes);
    free(ln);
}

static void series_fini(an_plot_series *s)
{
    for (size_t i = 0; s->labels && i < s->n; i++)
        free(s->labels[i]);
    free(s->labels);
    free(s->name);
    free(s->x);
    free(s->y);
    free(s->lo);
    free(s->hi);
}

void an_plot_fini(an_plot *p)
{
    for (int i = 0; i < p->n_panels; i++) {
        an_plot_panel *pl = &p->panels[i];
        for (int k = 0; k < pl->n_series; k++)
            series_fini(&pl->series[k]);
        for (int k = 0; k < pl->n_guides; k++)
            free(pl->guides[k].label);
        free(pl->series);
        free(pl->guides);
        free(pl->y_label);
        free(pl->y_unit);
    }
    for (int i = 0; i < p->n_notes; i++)
        free(p->notes[i]);
    for (int i = 0; i < p->n_spans; i++)
        free(p->spans[i].label);
    for (int i = 0; i < p->n_x_ticks; i++)
        free(p->x_tick_labels[i]);
    free(p->x_ticks);
    free(p->x_tick_labels);
    free(p->spans);
    free(p->notes);
    free(p->panels);
    free(p->overloaded_x);
    free(p->overloaded_k);
    free(p->overloaded_n);
    free(p->title);
    free(p->subtitle);
    free(p->source);
    free(p->x_label);
    free(p->x_unit);
    lanes_free(p->lanes);
    memset(p, 0, sizeof *p);
}

/* ---- words ------------------------------------------------------------------ */

/* The keys people sweep, in the words of a figure; the unit where the
 * schema's ("1/s") is not the one a reader expects. */
static const struct {
    const char *key, *label, *unit;
} key_words[] = {
    {"workload.arrival.rate_per_s", "arrival rate", "req/s"},
    {"workload.arrival.users", "concurrent users", "users"},
    {"workload.arrival.cv", "arrival burstiness (CV)", ""},
    {"cluster.replicas", "replicas", "replicas"},
    {"cluster.tensor_parallel", "tensor parallelism", "GPUs"},
    {"cluster.pipeline_parallel", "pipeline parallelism", "GPUs"},
    {"cluster.expert_parallel", "expert parallelism", "GPUs"},
    {"cluster.scheduler.max_batch", "max batch", "requests"},
    {"cluster.scheduler.max_batched_tokens", "token budget per step", "tokens"},
    {"cluster.scheduler.gpu_memory_utilization", "GPU memory for the engine", ""},
    {"cluster.cost_model.mfu", "model FLOPs utilisation", ""},
    {"cluster.cost_model.mbu", "memory bandwidth utilisation", ""},
    {"slo.ttft_s", "TTFT SLO", "s"},
    {"slo.tpot_s", "TPOT SLO", "s"},
    {"slo.e2e_s", "E2E SLO", "s"},
    {"warmup_s", "warm-up", "s"},
    {"seed", "seed", ""},
};

/* Units schemas write for machines, as a figure writes them. */
static const char *unit_words(const char *unit)
{
    return !strcmp(unit, "1/s") ? "/s" : unit;
}

/* The unit a key's name carries (rate_per_s, warmup_s, max_tokens). */
static const char *suffix_unit(const char *key)
{
    static const struct {
        const char *suffix, *unit;
    } units[] = {{"_per_s", "/s"}, {"_s", "s"},     {"_w", "W"},   {"tokens", "tokens"},
                 {"_gb", "GB"},    {"_gib", "GiB"}, {"_usd", "$"}, {"_gbs", "GB/s"}};
    size_t n = strlen(key);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t m = strlen(units[i].suffix);
        if (n >= m && !strcmp(key + n - m, units[i].suffix)) return units[i].unit;
    }
    return "";
}

/* The last part of a dotted key less its unit suffix, underscores as
 * spaces: "prompt tokens" for workload.prompt_tokens, "rate" for rate_per_s. */
static void short_name(const char *key, char *buf, size_t n)
{
    const char *last = strrchr(key, '.');
    last = last ? last + 1 : key;
    snprintf(buf, n, "%s", last);
    size_t len = strlen(buf);
    static const char *const suffixes[] = {"_per_s", "_s", "_w", "_gb", "_gib", "_gbs"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t m = strlen(suffixes[i]);
        if (len > m && !strcmp(buf + len - m, suffixes[i])) {
            buf[len - m] = '\0';
            break;
        }
    }
    for (char *c = buf; *c; c++)
        if (*c == '_') *c = ' ';
}

void an_plot_key_words(const util_field *schema, const char *key, char *buf, size_t n,
                       const char **unit)
{
    for (size_t i = 0; i < sizeof key_words / sizeof key_words[0]; i++)
        if (!strcmp(key_words[i].key, key)) {
            snprintf(buf, n, "%s", key_words[i].label);
            *unit = key_words[i].unit;
            return;
        }
    short_name(key, buf, n);
    const char *u = schema ? util_schema_unit(schema, key) : NULL;
    *unit = u ? unit_words(u) : suffix_unit(key);
}

bool an__capacity_key(const char *key)
{
    /* what a deployment provisions, not what its users ask of it: more of
     * it serves more, so the SLO is met from some value up */
    static const char *const capacity[] = {"replicas",        "tensor_parallel",
                                           "pipeline_parallel", "expert_parallel",
                                           "max_batch",       "max_batched_tokens",
                                           "gpu_memory_utilization"};
    const char *dot = strrchr(key, '.'), *last = dot ? dot + 1 : key;
    for (size_t i = 0; i < sizeof capacity / sizeof capacity[0]; i++)
        if (!strcmp(last, capacity[i])) return true;
    return false;
}

/* ---- titles ----------------------------------------------------------------- */

/* A model or GPU as the scenario names it: a catalog id, or an inline
 * object's name. */
static const char *entry_name(const cJSON *v, const char *unnamed)
{
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
    if (!cJSON_IsString(name)) name = cJSON_GetObjectItemCaseSensitive(v, "id");
    return cJSON_IsString(name) ? name->valuestring : unnamed;
}

typedef struct vary_ctx {
    const an__run *runs;
    int n;
} vary_ctx;

/* Whether key's value differs between the runs (none when v is NULL). */
static bool varies(const vary_ctx *v, const char *key)
{
    for (int i = 1; v && i < v->n; i++) {
        const cJSON *a = util_json_get(v->runs[0].scenario, key);
        const cJSON *b = util_json_get(v->runs[i].scenario, key);
        if (!a != !b || (a && !cJSON_Compare(a, b, true))) return true;
    }
    return false;
}

/* "h100-sxm or a100-80gb": the names key takes in the runs, in order of
 * first use; more than three are "5 GPUs" (plural: what). */
static char *names_of(const vary_ctx *v, const char *key, const char *what, const char *unnamed)
{
    const char *seen[3] = {""};
    int n = 0;
    bool more = false;
    for (int i = 0; i < v->n; i++) {
        const char *name = entry_name(util_json_get(v->runs[i].scenario, key), unnamed);
        bool known = false;
        for (int k = 0; k < n; k++)
            known |= !strcmp(seen[k], name);
        if (known) continue;
        if (n == 3) more = true;
        else seen[n++] = name;
    }
    if (more) return util_xstrdup(what);
    char *t = util_xstrdup(seen[0]);
    for (int k = 1; k < n; k++) {
        char *u = util_xasprintf("%s%s%s", t, k == n - 1 ? " or " : ", ", seen[k]);
        free(t);
        t = u;
    }
    return t;
}

/* "llama-3.1-8b on 4 x h100-sxm (TP 2)" for one pool of replicas; a model
 * or GPU that differs between the runs (v) is named by each of its values,
 * a count that does is left out. */
static char *pool_text(const cJSON *pool, const char *prefix, const vary_ctx *v)
{
    char key[64];
    double replicas = util_json_number(pool, "replicas", 1);
    double tp = util_json_number(pool, "tensor_parallel", 1);
    snprintf(key, sizeof key, "%smodel", prefix);
    char *model = varies(v, key) ? names_of(v, key, "models", "a model")
                                 : util_xstrdup(entry_name(
                                       cJSON_GetObjectItemCaseSensitive(pool, "model"), "a model"));
    snprintf(key, sizeof key, "%sgpu", prefix);
    char *gpu = varies(v, key) ? names_of(v, key, "GPUs", "a GPU")
                               : util_xstrdup(entry_name(
                                     cJSON_GetObjectItemCaseSensitive(pool, "gpu"), "a GPU"));
    snprintf(key, sizeof key, "%sreplicas", prefix);
    bool replicas_vary = varies(v, key);
    snprintf(key, sizeof key, "%stensor_parallel", prefix);
    bool tp_varies = varies(v, key);
    char count[32] = "";
    if (!replicas_vary) snprintf(count, sizeof count, "%g x ", replicas);
    char par[32] = "";
    if (!tp_varies && tp > 1) snprintf(par, sizeof par, " (TP %g)", tp);
    if (tp_varies) snprintf(par, sizeof par, " (TP varies)");
    char *t = util_xasprintf("%s on %s%s%s", model, count, gpu, par);
    free(model);
    free(gpu);
    return t;
}

static char *title_of(const cJSON *scenario, const vary_ctx *v)
{
    const cJSON *cluster = cJSON_GetObjectItemCaseSensitive(scenario, "cluster");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(scenario, "name");
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(cluster, "pools");
    char *what;
    if (cJSON_GetArraySize(pools) > 0) {
        what = util_xstrdup("");
        const cJSON *pool;
        cJSON_ArrayForEach(pool, pools)
        {
            char *one = pool_text(pool, "", NULL);
            char *t = util_xasprintf("%s%s%s", what, *what ? " + " : "", one);
            free(one);
            free(what);
            what = t;
        }
    } else {
        what = pool_text(cluster, "cluster.", v);
    }
    char *t = cJSON_IsString(name) ? util_xasprintf("%s: %s", name->valuestring, what)
                                   : util_xstrdup(what);
    free(what);
    return t;
}

char *an_plot_scenario_title(const cJSON *scenario)
{
    return title_of(scenario, NULL);
}

/* ---- runs ----------------------------------------------------------------- */

void an__run_fini(an__run *r)
{
    cJSON_Delete(r->scenario);
    cJSON_Delete(r->overrides);
}

int an__load_run(sqlite3 *db, const char *file, int64_t id, an__run *r, util_diag *d)
{
    *r = (an__run){.id = id};
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
        r->measured = status && !strcmp(status, "measured");
        r->scenario = cJSON_Parse(scenario ? scenario : "");
        r->overrides = overrides ? cJSON_Parse(overrides) : NULL;
        if (!r->scenario)
            rc = util_diag_add(d, "%s: run %lld: stored scenario is not JSON", file, (long long)id);
    }
    sqlite3_finalize(st);
    return rc;
}

char *an__runs_text(const int64_t *ids, int n)
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

/* The scenario as dotted paths and their values' text, leaves only (a
 * list is one leaf). */
typedef struct leaves {
    char **path, **value;
    int n;
} leaves;

static void flatten(const cJSON *o, const char *prefix, leaves *l)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, o)
    {
        char *p = *prefix ? util_xasprintf("%s.%s", prefix, c->string) : util_xstrdup(c->string);
        if (cJSON_IsObject(c)) {
            flatten(c, p, l);
            free(p);
            continue;
        }
        l->path = an__grow(l->path, (size_t)l->n, sizeof *l->path);
        l->value = an__grow(l->value, (size_t)l->n, sizeof *l->value);
        l->path[l->n] = p;
        l->value[l->n++] =
            cJSON_IsString(c) ? util_xstrdup(c->valuestring) : cJSON_PrintUnformatted(c);
    }
}

static void leaves_fini(leaves *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->path[i]);
        free(l->value[i]);
    }
    free(l->path);
    free(l->value);
}

static const char *leaf(const leaves *l, const char *path)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->path[i], path)) return l->value[i];
    return NULL;
}

static bool same_text(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Whether key's value differs between any two runs. */
static bool differs(const leaves *all, int n, const char *key)
{
    for (int i = 1; i < n; i++)
        if (!same_text(leaf(&all[0], key), leaf(&all[i], key))) return true;
    return false;
}

static bool overridden(const an__run *runs, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (cJSON_GetObjectItemCaseSensitive(runs[i].overrides, key)) return true;
    return false;
}

char *an__difference(const an__run *runs, int n, int index)
{
    if (n < 2) return NULL;
    /* a measured run beside its replays: which is which says it all */
    bool any_measured = false;
    for (int i = 0; i < n; i++) any_measured |= runs[i].measured;
    if (any_measured)
        return util_xasprintf("%s, run %lld", runs[index].measured ? "measured" : "simulated",
                              (long long)runs[index].id);
    leaves *all = util_xcalloc((size_t)n, sizeof *all);
    for (int i = 0; i < n; i++)
        flatten(runs[i].scenario, "", &all[i]);
    /* the keys the runs were told to differ in, when any; else every key
     * that does (models differ in many derived keys: the first three) */
    bool any_overridden = false;
    for (int k = 0; k < all[0].n; k++)
        any_overridden |= differs(all, n, all[0].path[k]) && overridden(runs, n, all[0].path[k]);
    char *text = util_xstrdup("");
    int shown = 0;
    for (int k = 0; k < all[index].n && shown < 3; k++) {
        const char *key = all[index].path[k];
        if (!differs(all, n, key) || (any_overridden && !overridden(runs, n, key))) continue;
        char name[64];
        short_name(key, name, sizeof name);
        char *t = util_xasprintf("%s%s%s=%s", text, shown ? ", " : "", name, all[index].value[k]);
        free(text);
        text = t;
        shown++;
    }
    for (int i = 0; i < n; i++)
        leaves_fini(&all[i]);
    free(all);
    if (!*text) {
        free(text);
        return NULL;
    }
    return text;
}

char *an__runs_title(const an__run *runs, int n)
{
    vary_ctx v = {runs, n};
    return title_of(runs[0].scenario, &v);
}

/* ---- cdf ---------------------------------------------------------------- */

/* The measured requests' values of the metric, sorted (one-token replies
 * have no TPOT and are left out). */
static int measured_values(sqlite3 *db, const an__run *r, an_metric m, double **v, size_t *n,
                           util_diag *d)
{
    an__query q = {
        db, r->id, util_json_number(r->scenario, "warmup_s", 0), NULL, -1, an__schema(db), 0};
    char *sql = util_xasprintf("SELECT %s_s FROM request_metrics WHERE run_id = ?1"
                               " AND status = 'completed' AND arrival_s >= ?2"
                               " AND %s_s IS NOT NULL ORDER BY 1",
                               an_metric_names[m], an_metric_names[m]);
    int rc = an__column(&q, sql, v, n, d);
    free(sql);
    return rc;
}

/* One run's empirical CDF, and its tail 1 - CDF: the value of rank k has
 * (k + 1) / n of the values at or below it (ties count at their last rank,
 * so the step is right).  The tail's last point is 0, which a log axis
 * cannot show: it ends one rank before. */
static void add_cdf(an_plot_series *cdf, an_plot_series *tail, const double *v, size_t n)
{
    size_t points = n < CDF_MAX_POINTS ? n : CDF_MAX_POINTS;
    for (size_t i = 0; i < points; i++) {
        size_t k =
            points == n ? i : (size_t)llround((double)(n - 1) * (double)i / (double)(points - 1));
        if (i + 1 < points && k + 1 < n && v[k + 1] == v[k]) continue; /* the tie's last rank */
        an__push(cdf, v[k], (double)(k + 1) / (double)n);
        if (k + 1 < n) an__push(tail, v[k], 1 - (double)(k + 1) / (double)n);
    }
}

static int gather_cdf(sqlite3 *db, const an_plot_request *req, an__run *runs, int n_runs,
                      an_plot *p, util_diag *d)
{
    const char *metric = an__metric_titles[req->metric];
    int cdf = an__panel(p, "share of requests at or below", "", AN_SCALE_LINEAR);
    int tail = an__panel(p, "share of requests above (1 - CDF)", "", AN_SCALE_LOG);
    p->x_label = util_xstrdup(metric);
    p->x_unit = util_xstrdup("s");
    int rc = UTIL_OK;
    for (int i = 0; !rc && i < n_runs; i++) {
        double *v = NULL;
        size_t n = 0;
        rc = measured_values(db, &runs[i], req->metric, &v, &n, d);
        if (rc) break;
        char *diff = an__difference(runs, n_runs, i);
        char *name = diff ? diff : util_xasprintf("run %lld", (long long)runs[i].id);
        an_plot_series *c = an__series(&p->panels[cdf], name);
        an_plot_series *t = an__series(&p->panels[tail], name);
        add_cdf(c, t, v, n);
        c->style = t->style = AN_STYLE_STEPS;
        c->colour = c->dash = t->colour = t->dash = i + 1;
        for (int k = 0; k < 2; k++)
            an__slo_guide(&p->panels[k == 0 ? cdf : tail], runs[i].scenario,
                          an__metric_slo_keys[req->metric], true);
        if (n > 0) { /* the P99 marked where it falls, on the tail */
            char p99[32];
            an__seconds(an_quantile_sorted(v, n, 0.99), p99, sizeof p99);
            an__guide(&p->panels[tail], AN_GUIDE_REFERENCE, an_quantile_sorted(v, n, 0.99), true,
                      "P99%s%s %s", n_runs > 1 ? " " : "", n_runs > 1 ? name : "", p99);
        }
        if (n > CDF_MAX_POINTS)
            an__note(p, "%s: %d of its %zu measured values drawn, at evenly spaced ranks", name,
                     CDF_MAX_POINTS, n);
        if (n == 0) an__note(p, "%s: no measured requests", name);
        free(name);
        free(v);
    }
    p->subtitle = util_xasprintf("%s of the measured requests: distribution, and its tail on a "
                                 "log scale (0.01 = P99)",
                                 metric);
    return rc;
}

/* ---- timeline --------------------------------------------------------------- */

static void timeline_series(an_plot *p, int pl, const char *name, const an_timeline *t,
                            const double *v)
{
    an_plot_series *s = an__series(&p->panels[pl], name);
    for (size_t i = 0; i < t->n; i++)
        an__push(s, (double)i * t->interval_s, v[i]);
}

/* The batch's ceiling: max_batch on each replica, when the cluster is one
 * pool (pools may differ in it). */
static void add_batch_limit(an_plot_panel *pl, const cJSON *scenario)
{
    const cJSON *cluster = cJSON_GetObjectItemCaseSensitive(scenario, "cluster");
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cluster, "pools")) > 0) return;
    double max_batch = util_json_number(cluster, "scheduler.max_batch", NAN);
    double replicas = util_json_number(cluster, "replicas", 1);
    if (max_batch > 0)
        an__guide(pl, AN_GUIDE_LIMIT, max_batch * replicas, false, "max batch %g%s", max_batch,
                  replicas > 1 ? " a replica" : "");
}

/* KV in use, of each tier's capacity: the GPUs' cache, and kv_offload's
 * CPU and disk tiers when the run has them, in one panel (one scale). */
static void add_kv_panel(an_plot *p, const an_timeline *t)
{
    int kv = an__panel(p, "KV cache in use", "share of capacity", AN_SCALE_LINEAR);
    bool tiers = t->cpu_tier_occupancy != NULL;
    timeline_series(p, kv, tiers ? "GPU KV in use" : "KV in use", t, t->kv_occupancy);
    if (tiers) timeline_series(p, kv, "CPU tier in use", t, t->cpu_tier_occupancy);
    if (t->disk_tier_occupancy)
        timeline_series(p, kv, "disk tier in use", t, t->disk_tier_occupancy);
    an__guide(&p->panels[kv], AN_GUIDE_LIMIT, 1, false, tiers ? "capacity" : "KV capacity");
}

/* A fleet that changed: its replicas by state, and the TTFT and SLO
 * attainment of the requests sent in each interval (docs/analysis.md),
 * with the scenario's TTFT target as a limit. */
static void add_fleet_panels(an_plot *p, const an_timeline *t, const cJSON *scenario)
{
    int pl = an__panel(p, "replicas", "replicas", AN_SCALE_LINEAR);
    timeline_series(p, pl, "ready", t, t->ready);
    timeline_series(p, pl, "loading", t, t->loading);
    if (t->has_drain) timeline_series(p, pl, "draining", t, t->draining);
    if (t->failures) timeline_series(p, pl, "failed", t, t->failed);
    pl = an__panel(p, "TTFT of the requests sent", "s", AN_SCALE_LINEAR);
    timeline_series(p, pl, "P99", t, t->ttft_p99_s);
    timeline_series(p, pl, "P50", t, t->ttft_p50_s);
    double target = util_json_number(scenario, "slo.ttft_s", NAN);
    if (target > 0) an__guide(&p->panels[pl], AN_GUIDE_LIMIT, target, false, "TTFT SLO %g s", target);
    an__note(p, "TTFT and attainment: of the requests sent in the interval (by arrival)");
    if (!t->has_slo) return;
    pl = an__panel(p, "SLO attainment", "share of requests sent", AN_SCALE_LINEAR);
    timeline_series(p, pl, "attainment", t, t->attainment);
}

static int gather_timeline(sqlite3 *db, const an_plot_request *req, const an__run *r, an_plot *p,
                           util_diag *d)
{
    an_timeline t = {0};
    double interval = req->interval_s > 0 ? req->interval_s : 1;
    int rc = an_timeline_compute(db, r->id, interval, -1, &t, d);
    if (!rc) {
        timeline_series(p, an__panel(p, "waiting", "requests", AN_SCALE_LINEAR), "queue", &t,
                        t.queue);
        int running = an__panel(p, "running batch", "requests", AN_SCALE_LINEAR);
        timeline_series(p, running, "running", &t, t.running);
        add_batch_limit(&p->panels[running], r->scenario);
        if (t.has_iterations) add_kv_panel(p, &t);
        timeline_series(p, an__panel(p, "output", "tokens/s", AN_SCALE_LINEAR), "output", &t,
                        t.output_tokens_per_s);
        if (t.has_iterations)
            timeline_series(p, an__panel(p, "GPU power", "W", AN_SCALE_LINEAR), "power", &t,
                            t.power_w);
        if (t.changing) add_fleet_panels(p, &t, r->scenario);
        double warmup = util_json_number(r->scenario, "warmup_s", 0);
        if (warmup > 0) {
            p->spans = util_xmalloc(sizeof *p->spans);
            p->spans[0] = (an_plot_span){util_xstrdup("warm-up (not measured)"), 0, warmup};
            p->n_spans = 1;
        }
        p->x_label = util_xstrdup("time");
        p->x_unit = util_xstrdup("s");
        p->subtitle = util_xasprintf("over time, in %g s intervals", interval);
        an__note(p, "each point: the average over the interval starting at its time");
        if (!t.has_iterations)
            an__note(p, "no KV occupancy or power: the run has no iterations (servesim run "
                        "--record-iterations)");
    }
    an_timeline_fini(&t);
    return rc;
}

/* ---- slo-curve -------------------------------------------------------------- */

static void add_needed(an_plot *p, an_plot_panel *pl, const an_curve *c, int i, const char *pct,
                       bool thresholds)
{
    for (int g = 0; g < pl->n_guides; g++)
        if (!pl->guides[g].vertical && pl->guides[g].at == c->needed[i].attainment) goto marked;
    an__guide(pl, AN_GUIDE_REFERENCE, c->needed[i].attainment, false, "%s of requests", pct);
marked:
    if (!thresholds) return;
    char t[32];
    if (isnan(c->needed[i].threshold_s)) {
        an__note(p, "%s attainment is unreachable: too many requests failed outright", pct);
        return;
    }
    an__seconds(c->needed[i].threshold_s, t, sizeof t);
    an__guide(pl, AN_GUIDE_REFERENCE, c->needed[i].threshold_s, true, "%s need %s", pct, t);
}

/* The attainment at the scenario's own threshold, exactly (the curve's
 * thresholds fall between), as a marked point: the measured values at or
 * below it of every ended request. */
static int at_slo(sqlite3 *db, const an_plot_request *req, const an__run *r, an_plot_panel *pl,
                  const an_curve *c, double slo, const char *name, int colour, util_diag *d)
{
    if (!(slo > 0) || c->ended == 0) return UTIL_OK;
    double *v = NULL;
    size_t n = 0, within = 0;
    int rc = measured_values(db, r, req->metric, &v, &n, d);
    while (!rc && within < n && v[within] <= slo)
        within++;
    free(v);
    if (rc) return rc;
    double att = (double)within / (double)c->ended;
    char *series = util_xasprintf("at the SLO%s%s", name ? ", " : "", name ? name : "");
    char label[48];
    snprintf(label, sizeof label, "%.1f%% met", 100 * att);
    an_plot_series *s = an__series(pl, series);
    s->style = AN_STYLE_POINTS;
    s->colour = colour; /* the curve's it sits on */
    an__push_band(s, slo, att, NAN, NAN, label);
    free(series);
    return UTIL_OK;
}

static int gather_curve(sqlite3 *db, const an_plot_request *req, an__run *runs, int n_runs,
                        an_plot *p, util_diag *d)
{
    const char *metric = an__metric_titles[req->metric];
    int panel = an__panel(p, "share of ended requests within it", "", AN_SCALE_LINEAR);
    int rc = UTIL_OK;
    for (int i = 0; !rc && i < n_runs; i++) {
        an_curve c = {0};
        rc = an_slo_curve(db, runs[i].id, req->metric, NULL,
                          req->points > 0 ? req->points : CURVE_POINTS, &c, d);
        if (!rc) {
            an_plot_panel *pl = &p->panels[panel];
            char *name = an__difference(runs, n_runs, i);
            an_plot_series *s = an__series(pl, name ? name : "attainment");
            s->colour = i + 1;
            s->dash = i + 1;
            for (int k = 0; k < c.n_points; k++)
                an__push(s, c.points[k].threshold_s, c.points[k].attainment);
            add_needed(p, pl, &c, 1, "90%", n_runs == 1);
            add_needed(p, pl, &c, 3, "99%", n_runs == 1);
            const char *key = an__metric_slo_keys[req->metric];
            double slo = req->slo_s > 0 ? an__slo_guide_at(pl, key, req->slo_s, true)
                                        : an__slo_guide(pl, runs[i].scenario, key, true);
            rc = at_slo(db, req, &runs[i], pl, &c, slo, n_runs > 1 ? name : NULL, i + 1, d);
            an__note(p,
                     "%s%s%lld requests ended after warm-up, %lld measured; rejected and "
                     "timed-out ones fail every threshold",
                     name ? name : "", name ? ": " : "", (long long)c.ended, (long long)c.measured);
            free(name);
        }
        an_curve_fini(&c);
    }
    p->x_label = util_xasprintf("%s threshold", metric);
    p->x_unit = util_xstrdup("s");
    p->subtitle = util_xasprintf("%s SLO attainment against the threshold", metric);
    return rc;
}

/* ---- the figure --------------------------------------------------------------- */

static int gather_runs(sqlite3 *db, const an_plot_request *req, an_plot *out, util_diag *d)
{
    an__run *runs = util_xcalloc((size_t)req->n_runs, sizeof *runs);
    int rc = UTIL_OK, loaded = 0;
    for (; !rc && loaded < req->n_runs; loaded++)
        rc = an__load_run(db, req->file, req->runs[loaded], &runs[loaded], d);
    if (!rc) {
        bool one = req->kind == AN_PLOT_TIMELINE || req->kind == AN_PLOT_PIPELINE;
        int n = one ? 1 : req->n_runs;
        out->title = an__runs_title(runs, n);
        rc = req->kind == AN_PLOT_CDF        ? gather_cdf(db, req, runs, n, out, d)
             : req->kind == AN_PLOT_TIMELINE ? gather_timeline(db, req, &runs[0], out, d)
             : req->kind == AN_PLOT_PIPELINE ? an__gather_pipeline(db, req, &runs[0], out, d)
                                             : gather_curve(db, req, runs, n, out, d);
        char *ids = an__runs_text(req->runs, n);
        out->source = util_xasprintf("%s, %s", req->file, ids);
        an__note(out, "%s", ids);
        free(ids);
    }
    for (int i = 0; i < loaded; i++)
        an__run_fini(&runs[i]);
    free(runs);
    return rc;
}

int an_plot_compute(sqlite3 *db, const an_plot_request *request, an_plot *out, util_diag *d)
{
    an_plot_request req = *request;
    if (!req.file) req.file = "database"; /* every message names it */
    memset(out, 0, sizeof *out);
    int64_t newest;
    int rc;
    if (req.kind == AN_PLOT_LATENCY_LOAD || req.kind == AN_PLOT_THROUGHPUT_CONCURRENCY) {
        rc = an__gather_sweep(db, &req, out, d);
    } else {
        rc = req.n_runs ? UTIL_OK : an_last_run(db, req.file, &newest, d);
        if (!rc && req.n_runs == 0) {
            req.runs = &newest;
            req.n_runs = 1;
        }
        if (!rc) rc = gather_runs(db, &req, out, d);
    }
    if (req.x_scale != AN_SCALE_AUTO) out->x_scale = req.x_scale;
    for (int i = 0; req.y_scale != AN_SCALE_AUTO && i < out->n_panels; i++)
        out->panels[i].y_scale = req.y_scale;
    if (req.title) {
        free(out->title);
        out->title = util_xstrdup(req.title);
    }
    return rc;
}
