/*
 * whatif.c: SLOs asked of a stored run -- thresholds that replace the
 * scenario's (`--slo ttft=0.5`, per class `--slo chat.ttft=0.3`) and
 * percentile targets answered yes or no with their margin
 * (`--slo ttft_p99=2`).  Nothing is simulated again: attainment is a count
 * over the stored rows, a percentile a sort of one column.
 */
#include "an_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const an_metric_names[] = {"ttft", "tpot", "tpot_incl_ttft", "e2e", NULL};

static double *slo_key(an_slo *s, an_metric m)
{
    switch (m) {
    case AN_TTFT: return &s->ttft_s;
    case AN_TPOT: return &s->tpot_s;
    case AN_E2E: return &s->e2e_s;
    default: return NULL; /* tpot_incl_ttft has no threshold in the scenario */
    }
}

static char *copy_n(const char *s, size_t n);

static an_slo *class_slo(an_options *opt, const char *cls, size_t len)
{
    for (int i = 0; i < opt->n_class_slo; i++)
        if (strlen(opt->class_slo[i].cls) == len && !strncmp(opt->class_slo[i].cls, cls, len))
            return &opt->class_slo[i].slo;
    opt->class_slo = util_xrealloc(opt->class_slo,
                                   (size_t)(opt->n_class_slo + 1) * sizeof *opt->class_slo);
    an_class_slo *c = &opt->class_slo[opt->n_class_slo++];
    c->cls = copy_n(cls, len);
    c->slo = (an_slo){NAN, NAN, NAN, NAN, false};
    return &c->slo;
}

/* "p99" -> 0.99, "p99.9" -> 0.999, and "p999" -> 0.999 as the scenario's
 * keys spell it (ttft_p999_s); -1 if it is not a percentile. */
static double parse_percentile(const char *s, size_t len)
{
    if (len == 4 && !strncmp(s, "p999", 4)) return 99.9 / 100; /* as "p99.9" gives, to the bit */
    if (len < 2 || s[0] != 'p') return -1;
    char buf[32];
    if (len >= sizeof buf) return -1;
    memcpy(buf, s + 1, len - 1);
    buf[len - 1] = '\0';
    char *end;
    double p = strtod(buf, &end);
    return (*end || !(p > 0 && p <= 100)) ? -1 : p / 100;
}

/* "ttft" (q = 0: a threshold), "ttft_p99.9" (q = 0.999: a percentile
 * target) or "ttft_mean" (q = NAN: a target on the mean); false if key is
 * none of them. */
static bool parse_key(const char *key, size_t len, an_metric *m, double *q)
{
    for (int i = 0; an_metric_names[i]; i++) {
        size_t n = strlen(an_metric_names[i]);
        if (n > len || strncmp(an_metric_names[i], key, n)) continue;
        *m = (an_metric)i;
        *q = 0;
        if (n == len) return true;
        if (key[n] == '_' && len - n - 1 == 4 && !strncmp(key + n + 1, "mean", 4)) {
            *q = NAN;
            return true;
        }
        if (key[n] == '_' && (*q = parse_percentile(key + n + 1, len - n - 1)) > 0) return true;
    }
    return false;
}

static char *copy_n(const char *s, size_t n)
{
    char *c = util_xmalloc(n + 1);
    memcpy(c, s, n);
    c[n] = '\0';
    return c;
}

/* The largest threshold a bare number may give each metric: past it the
 * number is more likely milliseconds than seconds (ttft=500), so a unit
 * must say which. */
static const double plausible_s[AN_N_METRICS] = {[AN_TTFT] = 120, [AN_TPOT] = 2,
                                                  [AN_TPOT_INCL_TTFT] = 2, [AN_E2E] = 3600};

bool an_parse_seconds(const char *text, double *out, bool *unit)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text) return false;
    static const struct { const char *name; double scale; } units[] = {
        {"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"min", 60}, {"h", 3600},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].name)) {
            *out = v * units[i].scale;
            *unit = i > 0;
            return *out > 0 && isfinite(*out);
        }
    return false;
}

/* "--slo tft=1: unknown key 'tft' (did you mean 'ttft'? ...)": suggestions
 * from every form a key takes, a class's (chat.tft) with its class. */
static int unknown_slo_key(const char *arg, size_t len, util_diag *d)
{
    static const char *const forms[] = {"", "_mean", "_p50", "_p90", "_p95", "_p99", "_p99.9"};
    enum { N_FORMS = sizeof forms / sizeof forms[0] };
    const char *dot = memchr(arg, '.', len);
    int cls_len = dot ? (int)(dot - arg + 1) : 0;
    char *keys[AN_N_METRICS * N_FORMS + 2];
    int n = 0;
    for (int m = 0; m < AN_N_METRICS; m++)
        for (int f = 0; f < N_FORMS; f++)
            keys[n++] = util_xasprintf("%.*s%s%s", cls_len, arg, an_metric_names[m], forms[f]);
    keys[n++] = util_xasprintf("%.*stask_e2e", cls_len, arg);
    keys[n] = NULL;
    char *word = copy_n(arg, len);
    char *near = util_did_you_mean(word, (const char *const *)keys);
    util_clip_buf b;
    util_diag_add(d, "--slo %.80s: unknown key '%s' (%s%sexpected [CLASS.]METRIC[_pNN] with "
                     "METRIC one of ttft, tpot, tpot_incl_ttft, e2e, or [CLASS.]task_e2e)",
                  arg, util_clip(word, &b), near ? near : "", near ? " " : "");
    free(near);
    free(word);
    for (int i = 0; i < n; i++) free(keys[i]);
    return UTIL_EINPUT;
}

/* "task_e2e" or "CLASS.task_e2e": a per-task threshold, not a metric of
 * request_metrics, so neither a percentile target nor in an_metric_names. */
static bool task_key(const char *key, size_t len, size_t *cls_len)
{
    static const char name[] = "task_e2e";
    size_t n = sizeof name - 1;
    if (len < n || strncmp(key + len - n, name, n)) return false;
    *cls_len = len == n ? 0 : len - n - 1;
    return len == n || (len > n + 1 && (key[len - n - 1] == '.' || key[len - n - 1] == ':'));
}

/* The largest task threshold a bare number may give: an hour, as e2e's. */
#define TASK_PLAUSIBLE_S 3600

static int add_task_slo(an_options *opt, const char *arg, size_t cls_len, double v, bool unit,
                        util_diag *d)
{
    if (!unit && v > TASK_PLAUSIBLE_S)
        return util_diag_add(d, "--slo %.80s: %g s is implausible for task_e2e (thresholds are "
                                "in seconds); give a unit to be sure: %gs or %gmin",
                             arg, v, v, v / 60);
    an_slo *s = cls_len ? class_slo(opt, arg, cls_len) : &opt->slo;
    s->task_e2e_s = v;
    return UTIL_OK;
}

int an_options_add_slo(an_options *opt, const char *arg, util_diag *d)
{
    const char *eq = strchr(arg, '=');
    double v = NAN;
    bool unit = false;
    if (!eq || !an_parse_seconds(eq + 1, &v, &unit))
        return util_diag_add(d, "--slo %.80s: expected KEY=TIME with TIME > 0, in seconds or with "
                                "a unit (ttft=0.5, ttft=500ms, tpot_p99=50ms, chat.e2e=20s)", arg);
    size_t task_cls;
    if (task_key(arg, (size_t)(eq - arg), &task_cls))
        return add_task_slo(opt, arg, task_cls, v, unit, d);
    an_metric m;
    double q;
    const char *cls = NULL, *key = arg;
    if (!parse_key(arg, (size_t)(eq - arg), &m, &q)) { /* chat.ttft, or chat:ttft: a class's */
        const char *dot = memchr(arg, ':', (size_t)(eq - arg));
        if (!dot) dot = memchr(arg, '.', (size_t)(eq - arg));
        if (!dot || dot == arg || !parse_key(dot + 1, (size_t)(eq - dot - 1), &m, &q))
            return unknown_slo_key(arg, (size_t)(eq - arg), d);
        cls = arg;
        key = dot + 1;
    }
    size_t cls_len = cls ? (size_t)(key - 1 - cls) : 0;
    if (!unit && v > plausible_s[m])
        return util_diag_add(d, "--slo %.80s: %g s is implausible for %s (thresholds are in "
                                "seconds; did you mean %gms?); give a unit to be sure: %gms or %gs",
                             arg, v, an_metric_names[m], v, v, v);
    if (q > 0 || isnan(q)) {
        opt->targets = util_xrealloc(opt->targets,
                                     (size_t)(opt->n_targets + 1) * sizeof *opt->targets);
        opt->targets[opt->n_targets++] = (an_target){
            .cls = cls ? copy_n(cls, cls_len) : NULL, .metric = m, .q = q, .threshold_s = v};
        return UTIL_OK;
    }
    an_slo *s = cls ? class_slo(opt, cls, cls_len) : &opt->slo;
    double *k = slo_key(s, m);
    if (!k)
        return util_diag_add(d, "--slo %s: tpot_incl_ttft can be a percentile target "
                                "(tpot_incl_ttft_p99=...) but not a per-request threshold", arg);
    *k = v;
    s->set = true;
    return UTIL_OK;
}

void an_options_fini(an_options *opt)
{
    for (int i = 0; i < opt->n_class_slo; i++) free((char *)opt->class_slo[i].cls);
    for (int i = 0; i < opt->n_targets; i++) free((char *)opt->targets[i].cls);
    free(opt->class_slo);
    free(opt->targets);
    memset(opt, 0, sizeof *opt);
}

/* ---- percentile targets ---- */

/* The q-quantile of the n sorted values with m more, infinitely large,
 * after them: linear interpolation as an_quantile_sorted, infinite once the
 * interpolation reaches one of the m. */
static double quantile_with_missing(const double *v, size_t n, size_t m, double q)
{
    if (m == 0) return an_quantile_sorted(v, n, q);
    double h = (double)(n + m - 1) * q;
    size_t lo = (size_t)h;
    double frac = h - (double)lo;
    if (lo >= n || (lo == n - 1 && frac > 0)) return INFINITY;
    if (lo == n - 1) return v[lo];
    return v[lo] + frac * (v[lo + 1] - v[lo]);
}

static int load_target(an__query *q, an_target *t, util_diag *d)
{
    char *sql = util_xasprintf("SELECT %s_s FROM request_metrics WHERE run_id = ?1 AND"
                               " status = 'completed' AND arrival_s >= ?2" AN__IN_GROUP
                               " AND %s_s IS NOT NULL ORDER BY 1",
                               an_metric_names[t->metric], an_metric_names[t->metric]);
    q->cls = t->cls;
    double *v;
    size_t n;
    int rc = an__column(q, sql, &v, &n, d);
    free(sql);
    double missing = 0;
    sql = util_xasprintf("SELECT total(status <> 'completed') FROM requests WHERE run_id = ?1 AND"
                         " arrival_s >= ?2" AN__IN_GROUP "%s", an__counted(q->schema));
    if (!rc) rc = an__row(q, sql, &missing, 1, d);
    free(sql);
    q->cls = NULL;
    if (rc) return rc;
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    t->not_completed = (int64_t)missing;
    size_t m = (size_t)missing;
    t->value_s = isnan(t->q) ? (n ? sum / (double)n : NAN) : an_quantile_sorted(v, n, t->q);
    if (isnan(t->q)) t->value_all_s = m ? INFINITY : t->value_s;
    else t->value_all_s = n ? quantile_with_missing(v, n, m, t->q) : (m ? INFINITY : NAN);
    t->margin_s = t->threshold_s - t->value_all_s;
    t->met = t->value_all_s <= t->threshold_s; /* false when nothing was measured (NAN) */
    free(v);
    return UTIL_OK;
}

/* ---- the stored scenario's targets ---- */

/* The mean and percentile targets of one slo object, in its order. */
static void slo_targets(const cJSON *slo, int cls, const char *cls_name, an_slo_target_fn *fn,
                        void *ctx)
{
    const cJSON *k;
    cJSON_ArrayForEach(k, slo) {
        size_t len = strlen(k->string);
        an_metric m;
        double q;
        if (!cJSON_IsNumber(k) || len < 3 || strcmp(k->string + len - 2, "_s") ||
            !parse_key(k->string, len - 2, &m, &q) || q == 0)
            continue;
        char *name = copy_n(k->string, len - 2);
        fn(ctx, cls, cls_name, name, m, q, k->valuedouble);
        free(name);
    }
}

void an_scenario_slo_targets(const cJSON *scenario, an_slo_target_fn *fn, void *ctx)
{
    slo_targets(cJSON_GetObjectItemCaseSensitive(scenario, "slo"), -1, NULL, fn, ctx);
    const cJSON *c;
    int i = 0;
    cJSON_ArrayForEach(c, util_json_get(scenario, "workload.classes")) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name"));
        slo_targets(cJSON_GetObjectItemCaseSensitive(c, "slo"), i++, name, fn, ctx);
    }
}

/* A stored target of the report's, its class named by the report's own
 * class (the scenario's JSON is gone when the targets are answered). */
static void add_target(void *ctx, int cls, const char *cls_name, const char *name, an_metric m,
                       double q, double threshold_s)
{
    an_report *r = ctx;
    if (cls >= 0 && !(cls < r->n_classes && r->has_classes)) return;
    r->targets = util_xrealloc(r->targets, (size_t)(r->n_targets + 1) * sizeof *r->targets);
    r->targets[r->n_targets++] = (an_target){.cls = cls >= 0 ? r->classes[cls].name : NULL,
                                             .metric = m, .q = q, .threshold_s = threshold_s,
                                             .from_scenario = true};
}

void an__scenario_targets(const cJSON *sc, an_report *r)
{
    an_scenario_slo_targets(sc, add_target, r);
}

/* ---- every target, evaluated ---- */

static bool same_target(const an_target *a, const an_target *b)
{
    bool same_q = isnan(a->q) ? isnan(b->q) : a->q == b->q;
    return a->metric == b->metric && same_q &&
           (a->cls && b->cls ? !strcmp(a->cls, b->cls) : a->cls == b->cls);
}

/* t's class as the report names it (the report outlives the options). */
static int resolve_class(const an_report *r, an_target *t, util_diag *d)
{
    if (!t->cls) return UTIL_OK;
    for (int k = 0; k < r->n_classes; k++)
        if (!strcmp(r->classes[k].name, t->cls)) {
            t->cls = r->classes[k].name;
            return UTIL_OK;
        }
    return util_diag_add(d, "--slo: run %lld has no class '%s'", (long long)r->run_id, t->cls);
}

/* The options' targets in their order (plan reads them by index), then the
 * scenario's that none of them replaces. */
static int merge_targets(const an_options *opt, an_report *r, util_diag *d)
{
    an_target *scenario = r->targets;
    int n_scenario = r->n_targets, n_opt = opt ? opt->n_targets : 0;
    r->targets = util_xcalloc((size_t)(n_opt + n_scenario) + 1, sizeof *r->targets);
    r->n_targets = 0;
    int rc = UTIL_OK;
    for (int i = 0; i < n_opt && !rc; i++) {
        an_target t = opt->targets[i];
        t.from_scenario = false;
        if (!(rc = resolve_class(r, &t, d))) r->targets[r->n_targets++] = t;
    }
    for (int i = 0; i < n_scenario && !rc; i++) {
        bool replaced = false;
        for (int k = 0; k < n_opt; k++) replaced |= same_target(&scenario[i], &r->targets[k]);
        if (!replaced) r->targets[r->n_targets++] = scenario[i];
    }
    free(scenario);
    return rc;
}

int an__load_targets(const an__query *cq, const an_options *opt, an_report *r, util_diag *d)
{
    an__query q = *cq;
    if (merge_targets(opt, r, d)) return UTIL_EINPUT;
    for (int i = 0; i < r->n_targets; i++)
        if (load_target(&q, &r->targets[i], d)) return UTIL_EFAIL;
    return UTIL_OK;
}
