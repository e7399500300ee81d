/*
 * search.c: plans -- the highest arrival rate, the fewest replicas, or the
 * cheapest configuration that meets a set of targets.
 *
 * Each configuration tried is simulated with several seeds at once (worker
 * processes, in memory: a plan keeps no database) and judged on the mean
 * over its seeds with a Student-t interval at the stated confidence: it
 * meets a target only when the whole interval does.  While an interval
 * straddles a threshold, as many seeds again are added (up to MAX_SEEDS);
 * one still undecided then counts as not met, so the answer errs on the
 * safe side.  The highest rate is bracketed by doubling or halving from
 * the scenario's own rate, then bisected until the bracket is narrower than
 * rel_tol: the answer is the bracket's met end, and the bracket is its
 * interval.  Overloaded points fail at once, and are stopped early by the
 * in-flight limit (point.c), so no search point runs without bound.
 */
#include "pl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "an.h"

#define MAX_SEEDS 24

int pl_target_parse(const char *text, pl_target *t, util_diag *d)
{
    memset(t, 0, sizeof *t);
    const char *le = strstr(text, "<=");
    double v = NAN;
    bool unit;
    if (!le || le == text || !an_parse_seconds(le + 2, &v, &unit))
        return util_diag_add(d, "--target %.80s: expected METRIC<=TIME, in seconds or with a unit "
                                "(ttft_p99<=2, ttft_p99<=500ms, tpot_mean<=0.05, e2e<=20s)", text);
    t->text = util_xstrdup(text);
    t->slo = util_xasprintf("%.*s=%s", (int)(le - text), text, le + 2);
    t->threshold = v;
    /* --slo's parser decides: a percentile or a mean is a target on the run,
     * a bare metric a per-request SLO */
    an_options probe = {0};
    int rc = an_options_add_slo(&probe, t->slo, d);
    t->per_task = probe.slo.task_e2e_s > 0 ||
                  (probe.n_class_slo && probe.class_slo[0].slo.task_e2e_s > 0);
    t->per_request = probe.n_targets == 0;
    const char *cls = probe.n_targets ? probe.targets[0].cls
                      : probe.n_class_slo ? probe.class_slo[0].cls
                                          : NULL;
    t->cls = cls ? util_xstrdup(cls) : NULL;
    an_options_fini(&probe);
    if (rc) pl_target_fini(t);
    return rc;
}

void pl_target_fini(pl_target *t)
{
    free(t->text);
    free(t->slo);
    free(t->cls);
    memset(t, 0, sizeof *t);
}

/* ---- a fleet of several models ---- */

/* The scenario's models (its pools', in pool order), which pools serve
 * each, and which targets hold each: its classes' and those of no class.
 * One model, or a disaggregated cluster (two pools, one fleet): none. */
typedef struct fleet {
    int n_models;
    char *model[PL_MAX_MODELS];
    int n_pools;
    int *pool_model; /* [n_pools]: its model's index */
    unsigned mine[PL_MAX_MODELS];
} fleet;

/* obj's string at key, or fallback (absent, or not a string). */
static const char *string_at(const cJSON *obj, const char *key, const char *fallback)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));
    return v ? v : fallback;
}

static int fleet_model(fleet *f, const char *id)
{
    for (int m = 0; m < f->n_models; m++)
        if (!strcmp(f->model[m], id)) return m;
    if (f->n_models == PL_MAX_MODELS) return -1;
    f->model[f->n_models] = util_xstrdup(id);
    return f->n_models++;
}

/* The class named cls's model, or NULL. */
static const char *class_model(const cJSON *root, const char *cls)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, util_json_get(root, "workload.classes"))
        if (!strcmp(string_at(c, "name", ""), cls)) return string_at(c, "model", NULL);
    return NULL;
}

static void fleet_fini(fleet *f)
{
    for (int m = 0; m < f->n_models; m++) free(f->model[m]);
    free(f->pool_model);
    memset(f, 0, sizeof *f);
}

static void fleet_read(const pl_plan_opts *o, fleet *f)
{
    memset(f, 0, sizeof *f);
    cJSON *root = cJSON_Parse(o->base.json);
    const cJSON *pools = util_json_get(root, "cluster.pools");
    const char *fallback = string_at(util_json_get(root, "cluster"), "model", NULL);
    bool ok = cJSON_IsArray(pools) && !util_json_get(root, "cluster.disaggregated");
    f->n_pools = ok ? cJSON_GetArraySize(pools) : 0;
    f->pool_model = util_xcalloc((size_t)f->n_pools + 1, sizeof *f->pool_model);
    for (int i = 0; ok && i < f->n_pools; i++) {
        const char *id = string_at(cJSON_GetArrayItem(pools, i), "model", fallback);
        ok = id && (f->pool_model[i] = fleet_model(f, id)) >= 0; /* an inline model: no id */
    }
    for (int m = 0; ok && m < f->n_models; m++)
        for (int i = 0; i < o->n_targets; i++) {
            const char *cls = o->targets[i].cls, *id = cls ? class_model(root, cls) : NULL;
            if (!cls || (id && !strcmp(id, f->model[m]))) f->mine[m] |= 1u << i;
        }
    cJSON_Delete(root);
    if (!ok || f->n_models < 2) fleet_fini(f);
}

/* ---- evaluating one configuration ---- */

typedef struct search {
    const pl_plan_opts *o;
    fleet fleet;  /* several models: each judged by its own targets too */
    int64_t seed; /* the scenario's: seeds seed, seed + 1, ... */
    pl_pool *pool;
    const volatile sig_atomic_t *stop;
    pl_plan_result *r;
    util_diag *d;
    const cJSON *also; /* overrides every configuration of cheapest's takes, or NULL */
} search;

/* Runs seeds [from, to) of a configuration into s[]. */
static int run_seeds(search *x, const cJSON *overrides, int from, int to, pl_summary *s)
{
    int n = to - from, rc = UTIL_OK;
    char **jobs = util_xcalloc((size_t)n, sizeof *jobs), **results = util_xcalloc((size_t)n, sizeof *results);
    for (int i = 0; i < n; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "overrides", cJSON_Duplicate(overrides, 1));
        cJSON_AddNumberToObject(j, "seed", (double)(x->seed + from + i));
        jobs[i] = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
    }
    if (pl_pool_map(x->pool, jobs, n, x->stop, results) < n) {
        int64_t tag;
        const char *why = pl_pool_why(x->pool, &tag);
        rc = !pl_pool_failed(x->pool) ? UTIL_EINTR
                                      : util_diag_fail(x->d, "%s: the plan cannot go on",
                                                       why ? why : "an MPI rank stopped answering");
    }
    for (int i = 0; i < n; i++) {
        cJSON *res = cJSON_Parse(results[i]);
        if (!rc && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "ok")))
            pl_summary_from_json(cJSON_GetObjectItemCaseSensitive(res, "summary"), &s[from + i]);
        else if (!rc)
            rc = util_diag_fail(x->d, "%s", cJSON_GetStringValue(
                                               cJSON_GetObjectItemCaseSensitive(res, "error")));
        cJSON_Delete(res);
        free(jobs[i]);
        free(results[i]);
    }
    free(jobs);
    free(results);
    return rc;
}

/* The summary's figures of model id, or NULL. */
static const pl_model_figures *figures_of(const pl_summary *s, const char *id)
{
    for (int m = 0; m < s->n_models; m++)
        if (!strcmp(s->models[m].id, id)) return &s->models[m];
    return NULL;
}

/* Target i's figure in one seed's summary: the percentile's value, or the
 * attainment of the per-request SLOs -- of model's classes' requests when
 * model is not NULL -- or of the task SLO. */
static double figure_of(const pl_plan_opts *o, int i, const pl_summary *s, const char *model)
{
    const pl_target *t = &o->targets[i];
    const pl_model_figures *f = model ? figures_of(s, model) : NULL;
    return t->per_task      ? s->task_attainment
           : t->per_request ? (model ? (f ? f->attainment : NAN) : s->attainment)
                            : s->target_value[t->index];
}

/* Met with confidence: the interval's worse end is within the target. */
static bool meets(const pl_plan_opts *o, int i, double v, double half)
{
    return o->targets[i].per_request ? v - half >= o->attainment
                                     : v + half <= o->targets[i].threshold;
}

static void mean_half_of(const pl_summary *s, int n, const pl_plan_opts *o, int i,
                         const char *model, double *mean, double *half)
{
    double sum = 0, sq = 0;
    for (int k = 0; k < n; k++) sum += figure_of(o, i, &s[k], model);
    *mean = sum / n;
    for (int k = 0; k < n; k++) sq += pow(figure_of(o, i, &s[k], model) - *mean, 2);
    *half = n > 1 ? gsl_cdf_tdist_Pinv(0.5 + o->confidence / 2, n - 1) * sqrt(sq / (n - 1) / n)
                  : INFINITY;
}

static void mean_half(const pl_summary *s, int n, const pl_plan_opts *o, int i, double *mean,
                      double *half)
{
    mean_half_of(s, n, o, i, NULL, mean, half);
}

/* Each model's part of a trial: its figures (the first seed's GPUs and
 * cost, which no seed changes; attainment a mean), and its own verdict --
 * its targets alone, per-request ones on its classes' attainment. */
static void judge_models(const pl_plan_opts *o, const fleet *f, const pl_summary *s, int n,
                         pl_trial *t)
{
    t->n_models = f->n_models;
    t->gpus = s[0].gpus;
    t->usd_per_hour = s[0].usd_per_hour;
    for (int m = 0; m < f->n_models; m++) {
        struct pl_trial_model *tm = &t->models[m];
        const pl_model_figures *first = figures_of(&s[0], f->model[m]);
        *tm = (struct pl_trial_model){.met = !t->overloaded};
        if (first) {
            tm->replicas = first->replicas;
            tm->gpus = first->gpus;
            tm->usd_per_hour = first->usd_per_hour;
        }
        for (int k = 0; k < n; k++) {
            const pl_model_figures *x = figures_of(&s[k], f->model[m]);
            tm->attainment += (x ? x->attainment : NAN) / n;
        }
        for (int i = 0; i < o->n_targets; i++) {
            if (!(f->mine[m] >> i & 1)) continue;
            double v, half;
            mean_half_of(s, n, o, i, f->model[m], &v, &half);
            bool met = isfinite(v) && meets(o, i, v, half);
            if (!met) tm->fails |= 1u << i;
            tm->met &= met;
        }
    }
}

/* Whether some target's interval straddles its threshold. */
static bool undecided(const pl_plan_opts *o, const pl_trial *t)
{
    for (int i = 0; i < o->n_targets; i++) {
        double goal = o->targets[i].per_request ? o->attainment : o->targets[i].threshold;
        if (fabs(t->value[i] - goal) < t->half[i]) return true;
    }
    return false;
}

static void judge(const pl_plan_opts *o, const fleet *f, const pl_summary *s, int n, pl_trial *t)
{
    t->seeds = n;
    t->met = true;
    t->overloaded = false;
    double usd = 0, busy = 0, tok = 0, fill = 0, kv = 0;
    t->usd = t->gpu_hours = 0;
    for (int k = 0; k < n; k++) {
        t->usd += s[k].usd / n;
        t->gpu_hours += s[k].gpu_hours / n;
        t->overloaded |= s[k].overloaded;
        usd += s[k].usd_per_million_output_tokens / n;
        busy += s[k].busy_fraction / n;
        tok += s[k].output_tokens_per_s / n;
        fill += s[k].batch_fill / n;
        kv += s[k].kv_mean_fraction / n;
    }
    t->usd_per_million_output_tokens = usd;
    t->busy_fraction = busy;
    t->output_tokens_per_s = tok;
    t->batch_fill = fill;
    t->kv_mean_fraction = kv;
    for (int i = 0; i < o->n_targets; i++) {
        mean_half(s, n, o, i, &t->value[i], &t->half[i]);
        /* an infinite value (requests not completed) has no interval: not met */
        t->target_met[i] = isfinite(t->value[i]) && meets(o, i, t->value[i], t->half[i]);
        t->met &= t->target_met[i];
    }
    double att = 0, missing = 0;
    for (int k = 0; k < n; k++) {
        att += s[k].attainment / n;
        missing += s[k].not_completed_fraction / n;
    }
    t->attainment = att;
    t->not_completed = missing;
    t->met &= !t->overloaded; /* a backlog that grows fails every target */
    if (f->n_models) judge_models(o, f, s, n, t);
}

/* Simulates a configuration and records it as a trial: its index, or < 0. */
static int evaluate(search *x, cJSON *overrides)
{
    const pl_plan_opts *o = x->o;
    pl_summary s[MAX_SEEDS];
    int n = o->seeds;
    int rc = run_seeds(x, overrides, 0, n, s);
    pl_trial t = {.overrides = overrides};
    if (!rc) judge(o, &x->fleet, s, n, &t);
    while (!rc && !t.overloaded && undecided(o, &t) && 2 * n <= MAX_SEEDS) {
        rc = run_seeds(x, overrides, n, 2 * n, s); /* too close to call: as many seeds again */
        if (!rc) judge(o, &x->fleet, s, n *= 2, &t);
    }
    if (rc) {
        cJSON_Delete(overrides);
        return rc;
    }
    pl_plan_result *r = x->r;
    r->trials = util_xrealloc(r->trials, (size_t)(r->n_trials + 1) * sizeof *r->trials);
    r->trials[r->n_trials] = t;
    return r->n_trials++;
}

/* A flat overrides object's number at key (a dotted path, not a nesting). */
static double number_at(const cJSON *overrides, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(overrides, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static cJSON *with(const cJSON *base, const char *path, double v)
{
    cJSON *o = base ? cJSON_Duplicate(base, 1) : cJSON_CreateObject();
    cJSON_DeleteItemFromObjectCaseSensitive(o, path);
    cJSON_AddNumberToObject(o, path, v);
    return o;
}

#define RATE "workload.arrival.rate_per_s"
#define REPLICAS "cluster.replicas"

/* ---- max-rate ---- */

static int max_rate(search *x)
{
    const pl_plan_opts *o = x->o;
    cJSON *root = cJSON_Parse(o->base.json);
    double rate = util_json_number(root, RATE, 1);
    cJSON_Delete(root);
    double lo = NAN, hi = NAN; /* met at lo, not at hi */
    for (int i = 0; i < 40 && (isnan(lo) || isnan(hi)); i++) {
        int k = evaluate(x, with(NULL, RATE, rate));
        if (k < 0) return k;
        if (x->r->trials[k].met) lo = rate, rate *= 2;
        else hi = rate, rate /= 2;
        if (!isnan(lo) && !isnan(hi)) break;
        if (rate < 1e-6 || rate > 1e9) break;
    }
    if (isnan(lo)) return UTIL_OK; /* no rate meets the targets */
    if (isnan(hi)) return util_diag_add(x->d, "the targets are met at every rate tried (up to "
                                              "%g req/s)", lo);
    while ((hi - lo) / lo > o->rel_tol) {
        double mid = 0.5 * (lo + hi);
        int k = evaluate(x, with(NULL, RATE, mid));
        if (k < 0) return k;
        if (x->r->trials[k].met) lo = mid;
        else hi = mid;
    }
    x->r->found = true;
    x->r->max_rate = lo;
    x->r->rate_lo = lo;
    x->r->rate_hi = hi;
    for (int i = 0; i < x->r->n_trials; i++) /* the answer's own trial */
        if (number_at(x->r->trials[i].overrides, RATE) == lo) x->r->best = i;
    return UTIL_OK;
}

/* ---- min-replicas ---- */

/* Whether every pool of the scenario sets its own replicas, in it or in
 * overrides: cluster.replicas, which a pool without its own inherits, then
 * changes nothing (a fleet of several models, planned per pool). */
static bool pools_fix_replicas(const pl_plan_opts *o, const cJSON *overrides)
{
    cJSON *root = cJSON_Parse(o->base.json);
    const cJSON *pools = util_json_get(root, "cluster.pools");
    bool fixed = cJSON_IsArray(pools);
    for (int i = 0; fixed && i < cJSON_GetArraySize(pools); i++) {
        char path[64];
        snprintf(path, sizeof path, "cluster.pools[%d].replicas", i);
        fixed = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(pools, i), "replicas") ||
                cJSON_GetObjectItemCaseSensitive(overrides, path);
    }
    cJSON_Delete(root);
    return fixed;
}

/* overrides with n replicas: cluster.replicas (model < 0), or n in each
 * pool of one model of the fleet. */
static cJSON *with_replicas(const search *x, const cJSON *overrides, int model, int n)
{
    if (model < 0) return with(overrides, REPLICAS, n);
    cJSON *o = cJSON_Duplicate(overrides, 1);
    for (int i = 0; i < x->fleet.n_pools; i++) {
        if (x->fleet.pool_model[i] != model) continue;
        char path[64];
        snprintf(path, sizeof path, "cluster.pools[%d].replicas", i);
        cJSON *next = with(o, path, n);
        cJSON_Delete(o);
        o = next;
    }
    return o;
}

/* A trial's verdict: on every target (model < 0), or on one model's own. */
static bool met_by(const pl_trial *t, int model)
{
    return model < 0 ? t->met : t->models[model].met;
}

/* The fewest replicas meeting the targets with the other overrides given,
 * by doubling, then bisection: *best is the answer's trial, or -1 when even
 * max_replicas fail; *below the trial with one replica fewer, or -1 (none
 * fewer: one replica).  model >= 0 searches that model's pools alone, on
 * its own targets. */
static int fewest(search *x, const cJSON *overrides, int model, int *best_out, int *below)
{
    const pl_plan_opts *o = x->o;
    int lo = 0, hi = 0, best = -1, at_lo = -1; /* fails at lo, meets at hi */
    *best_out = *below = -1;
    for (int n = 1; n <= o->max_replicas; n = n * 2 > o->max_replicas && n < o->max_replicas
                                                      ? o->max_replicas : n * 2) {
        int k = evaluate(x, with_replicas(x, overrides, model, n));
        if (k < 0) return k;
        if (met_by(&x->r->trials[k], model)) {
            hi = n;
            best = k;
            break;
        }
        lo = n;
        at_lo = k;
        if (n == o->max_replicas) break;
    }
    while (best >= 0 && hi - lo > 1) {
        int mid = (lo + hi) / 2;
        int k = evaluate(x, with_replicas(x, overrides, model, mid));
        if (k < 0) return k;
        if (met_by(&x->r->trials[k], model)) hi = mid, best = k;
        else lo = mid, at_lo = k;
    }
    *best_out = best;
    if (best >= 0) *below = at_lo;
    return UTIL_OK;
}

/* A fleet of several models: each model's fewest replicas a pool, on its
 * own targets, with every other model's pools at max_replicas -- models
 * share no replica and their requests are drawn alike whatever the
 * cluster, so a model's answer is its own (but for the order of events at
 * one instant), and the others cannot overload the run it is judged by --
 * then the fleet of every model's answer, run and judged on every target:
 * the answer's trial, which must meet them all. */
static int min_replicas_per_model(search *x)
{
    const fleet *f = &x->fleet;
    pl_plan_result *r = x->r;
    int answer[PL_MAX_MODELS];
    bool all = true;
    r->n_models = f->n_models;
    for (int m = 0; m < f->n_models; m++) {
        pl_model_answer *a = &r->models[m];
        *a = (pl_model_answer){.id = util_xstrdup(f->model[m]), .mine = f->mine[m]};
        cJSON *at = with(NULL, RATE, x->o->rate);
        for (int other = 0; other < f->n_models; other++) {
            if (other == m) continue;
            cJSON *next = with_replicas(x, at, other, x->o->max_replicas);
            cJSON_Delete(at);
            at = next;
        }
        int rc = fewest(x, at, m, &a->trial, &a->below);
        for (int i = 0; !rc && a->trial >= 0 && i < f->n_pools; i++) /* its first pool's */
            if (f->pool_model[i] == m) {
                char path[64];
                snprintf(path, sizeof path, "cluster.pools[%d].replicas", i);
                answer[m] = (int)number_at(r->trials[a->trial].overrides, path);
                break;
            }
        cJSON_Delete(at);
        if (rc) return rc;
        all &= a->trial >= 0;
    }
    if (!all) return UTIL_OK; /* some model is not met even with max_replicas */
    cJSON *fleet_at = with(NULL, RATE, x->o->rate);
    for (int m = 0; m < f->n_models; m++) {
        cJSON *next = with_replicas(x, fleet_at, m, answer[m]);
        cJSON_Delete(fleet_at);
        fleet_at = next;
    }
    int k = evaluate(x, fleet_at);
    if (k < 0) return k;
    r->best = k;
    r->found = r->trials[k].met;
    for (int m = 0; m < f->n_models; m++) r->replicas += r->trials[k].models[m].replicas;
    return UTIL_OK;
}

static int min_replicas(search *x)
{
    if (x->fleet.n_models) return min_replicas_per_model(x);
    int best, below;
    cJSON *at = with(NULL, RATE, x->o->rate);
    int rc = fewest(x, at, -1, &best, &below);
    cJSON_Delete(at);
    if (!rc && best >= 0) {
        x->r->found = true;
        x->r->best = best;
        x->r->replicas = (int)number_at(x->r->trials[best].overrides, REPLICAS);
    }
    return rc;
}

/* ---- cheapest ---- */

/* A candidate whose pools fix their replicas, as it is: *best its trial,
 * or -1 when it fails. */
static int as_given(search *x, const cJSON *overrides, int *best)
{
    int k = evaluate(x, cJSON_Duplicate(overrides, 1));
    if (k < 0) return k;
    *best = x->r->trials[k].met ? k : -1;
    return UTIL_OK;
}

static int cheapest(search *x)
{
    const pl_plan_opts *o = x->o;
    int n = 1;
    for (int a = 0; a < o->n_candidates; a++) n *= cJSON_GetArraySize(o->candidates[a].values);
    double best_usd = INFINITY;
    for (int i = 0; i < n; i++) {
        /* over a day the rate is the profile's, unless --rate says */
        cJSON *cfg = isnan(o->rate) ? cJSON_CreateObject() : with(NULL, RATE, o->rate);
        const cJSON *also;
        cJSON_ArrayForEach(also, x->also)
            cJSON_AddItemToObject(cfg, also->string, cJSON_Duplicate(also, 1));
        for (int a = 0, rest = i; a < o->n_candidates; a++) {
            int m = cJSON_GetArraySize(o->candidates[a].values);
            cJSON_AddItemToObject(cfg, o->candidates[a].path,
                                  cJSON_Duplicate(cJSON_GetArrayItem(o->candidates[a].values,
                                                                     rest % m), 1));
            rest /= m;
        }
        int k, below;
        int rc = pools_fix_replicas(o, cfg) ? as_given(x, cfg, &k) : fewest(x, cfg, -1, &k, &below);
        if (rc) {
            cJSON_Delete(cfg);
            return rc;
        }
        pl_plan_result *r = x->r;
        r->candidates = util_xrealloc(r->candidates,
                                      (size_t)(r->n_candidates + 1) * sizeof *r->candidates);
        cJSON_DeleteItemFromObjectCaseSensitive(cfg, RATE); /* the same for every candidate */
        r->candidates[r->n_candidates++] = (pl_candidate){cfg, k, r->n_trials - 1};
        if (k >= 0 && x->r->trials[k].usd_per_million_output_tokens < best_usd) {
            best_usd = x->r->trials[k].usd_per_million_output_tokens;
            x->r->best = k;
            x->r->found = true;
        }
    }
    return UTIL_OK;
}

/* ---- cheapest over a day ---- */

#define AUTOSCALER "cluster.autoscaler"

/* The autoscaler's keys a day's plan varies, in grid order: the floor
 * varies fastest, since the search walks it upwards (scale_grid). */
static const char *const scale_keys[] = {AUTOSCALER ".min_replicas", AUTOSCALER ".max_replicas",
                                          AUTOSCALER ".target"};
enum { SCALE_MIN, SCALE_MAX, SCALE_TARGET, N_SCALE };

bool pl_plan_over_a_day(const pl_plan_opts *o)
{
    cJSON *root = cJSON_Parse(o->base.json);
    bool day = o->goal == PL_CHEAPEST && cJSON_IsObject(util_json_get(root, AUTOSCALER));
    cJSON_Delete(root);
    return day;
}

/* The static fleet: the existing cheapest search on the scenario with
 * cluster.autoscaler removed (its replicas then stay as many all day), in
 * the same workers (MPI ranks serve one pool), into x's fixed result. */
static int fixed_fleet(const search *x)
{
    cJSON *removed = cJSON_CreateObject();
    cJSON_AddNullToObject(removed, AUTOSCALER); /* a point's null removes the key */
    search f = *x;
    f.r = x->r->fixed;
    f.also = removed;
    memset(f.r, 0, sizeof *f.r);
    f.r->best = -1;
    int rc = cheapest(&f);
    cJSON_Delete(removed);
    /* said once, in the static fleet's heading, rather than on each of its points */
    for (int i = 0; i < f.r->n_trials; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(f.r->trials[i].overrides, AUTOSCALER);
    for (int i = 0; i < f.r->n_candidates; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(f.r->candidates[i].config, AUTOSCALER);
    return rc;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A copy of values, numbers in ascending order (then anything else, as
 * it came, for the point's validation to refuse): the floors, which
 * scale_grid walks upwards. */
static cJSON *ascending(const cJSON *values)
{
    int n = 0;
    double *x = util_xcalloc((size_t)cJSON_GetArraySize(values) + 1, sizeof *x);
    const cJSON *v;
    cJSON_ArrayForEach(v, values) if (cJSON_IsNumber(v)) x[n++] = v->valuedouble;
    qsort(x, (size_t)n, sizeof *x, by_value);
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(out, cJSON_CreateNumber(x[i]));
    cJSON_ArrayForEach(v, values) if (!cJSON_IsNumber(v)) cJSON_AddItemToArray(out, cJSON_Duplicate(v, 1));
    free(x);
    return out;
}

/* The values of axis k: --scale-min/-max/-target's, else the default --
 * the floor from 1 to the static answer's replicas (a floor as high costs
 * at least the static fleet: no saving above it), or to the scenario's
 * max_replicas without one; the scenario's own max_replicas; and its own
 * target with 3/4 and 1/2 of it (lower targets add replicas sooner). */
static cJSON *scale_values(const pl_plan_opts *o, const pl_plan_result *fixed, int k)
{
    for (int a = 0; a < o->n_scale; a++)
        if (!strcmp(o->scale[a].path, scale_keys[k]))
            return k == SCALE_MIN ? ascending(o->scale[a].values)
                                  : cJSON_Duplicate(o->scale[a].values, 1);
    cJSON *root = cJSON_Parse(o->base.json), *v = cJSON_CreateArray();
    double max = util_json_number(root, AUTOSCALER ".max_replicas", 1);
    double target = util_json_number(root, AUTOSCALER ".target", 1);
    cJSON_Delete(root);
    if (k == SCALE_MAX) cJSON_AddItemToArray(v, cJSON_CreateNumber(max));
    if (k == SCALE_TARGET)
        for (int q = 2; q <= 4; q++) cJSON_AddItemToArray(v, cJSON_CreateNumber(target * q / 4));
    if (k == SCALE_MIN) {
        double top = fixed->found ? number_at(fixed->trials[fixed->best].overrides, REPLICAS) : max;
        for (int n = 1; n <= (isnan(top) ? max : top); n++)
            cJSON_AddItemToArray(v, cJSON_CreateNumber(n));
    }
    return v;
}

/* Records trial k as the answer when it meets the targets for less. */
static void consider(pl_plan_result *r, int k)
{
    if (!r->trials[k].met || (r->best >= 0 && r->trials[k].usd >= r->trials[r->best].usd)) return;
    r->best = k;
    r->found = true;
}

/* The autoscaler's grid: for each max_replicas and target, the floors
 * upwards until one meets the targets.  Assumed, and why it may be: with
 * the same ceiling and target, a higher floor only keeps more replicas --
 * the HPA's count is the larger of the floor and its recommendation -- so
 * it costs at least as much; the floors above the first that meets are
 * not run.  Nothing is assumed of the ceiling or the target: the metric
 * a replica reports falls as replicas are added, so cost and meeting need
 * not move together across them, and every pair runs. */
static int scale_grid(search *x, const pl_plan_result *fixed)
{
    cJSON *v[N_SCALE];
    for (int k = 0; k < N_SCALE; k++) v[k] = scale_values(x->o, fixed, k);
    int rc = UTIL_OK;
    const cJSON *max, *target, *min;
    cJSON_ArrayForEach(target, v[SCALE_TARGET]) cJSON_ArrayForEach(max, v[SCALE_MAX])
        cJSON_ArrayForEach(min, v[SCALE_MIN]) {
        if (rc || (cJSON_IsNumber(min) && cJSON_IsNumber(max) && min->valuedouble > max->valuedouble))
            break; /* an error; or a floor above the ceiling, which the HPA refuses */
        cJSON *at = isnan(x->o->rate) ? cJSON_CreateObject() : with(NULL, RATE, x->o->rate);
        cJSON_AddItemToObject(at, scale_keys[SCALE_MIN], cJSON_Duplicate(min, 1));
        cJSON_AddItemToObject(at, scale_keys[SCALE_MAX], cJSON_Duplicate(max, 1));
        cJSON_AddItemToObject(at, scale_keys[SCALE_TARGET], cJSON_Duplicate(target, 1));
        int k = evaluate(x, at);
        if (k < 0) {
            rc = k;
            break;
        }
        consider(x->r, k);
        if (x->r->trials[k].met) break;
    }
    for (int k = 0; k < N_SCALE; k++) cJSON_Delete(v[k]);
    return rc;
}

/* The static fleet first: its answer bounds the floors. */
static int over_a_day(search *x)
{
    int rc = fixed_fleet(x);
    return rc ? rc : scale_grid(x, x->r->fixed);
}

/* The pool an overrides key sets the replicas of, or -1. */
static int replicas_pool(const char *key)
{
    int pool, end = 0;
    return sscanf(key, "cluster.pools[%d].replicas%n", &pool, &end) == 1 && !key[end] ? pool : -1;
}

/* Whether trial t is the answer b with model m's pools one replica fewer
 * each, all else alike. */
static bool one_fewer(const fleet *f, const cJSON *b, const cJSON *t, int m)
{
    if (cJSON_GetArraySize(b) != cJSON_GetArraySize(t)) return false;
    int fewer = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, b) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(t, v->string);
        int pool = replicas_pool(v->string);
        bool mine = pool >= 0 && pool < f->n_pools && f->pool_model[pool] == m;
        if (!w) return false;
        if (mine && !(cJSON_IsNumber(v) && cJSON_IsNumber(w) && w->valuedouble == v->valuedouble - 1))
            return false;
        if (!mine && !cJSON_Compare(v, w, true)) return false;
        fewer += mine;
    }
    return fewer > 0;
}

/* max-rate, cheapest: each model's part of the answer, and the trial (if
 * the search ran it) with that model's pools one replica fewer. */
static void answer_models(search *x)
{
    pl_plan_result *r = x->r;
    const fleet *f = &x->fleet;
    r->n_models = f->n_models;
    for (int m = 0; m < f->n_models; m++) {
        pl_model_answer *a = &r->models[m];
        *a = (pl_model_answer){.id = util_xstrdup(f->model[m]), .mine = f->mine[m], .trial = -1,
                               .below = -1};
        for (int k = 0; r->best >= 0 && k < r->n_trials && a->below < 0; k++)
            if (one_fewer(f, r->trials[r->best].overrides, r->trials[k].overrides, m)) a->below = k;
    }
}

int pl_plan_run(const pl_plan_opts *o, const volatile sig_atomic_t *stop, pl_plan_result *r,
                util_diag *d)
{
    memset(r, 0, sizeof *r);
    r->best = -1;
    int jobs = o->jobs < o->seeds ? o->jobs : o->seeds;
    cJSON *root = cJSON_Parse(o->base.json);
    int64_t seed = (int64_t)util_json_number(root, "seed", 1);
    cJSON_Delete(root);
    if (pl_plan_over_a_day(o)) {
        r->day = true;
        r->fixed = util_xcalloc(1, sizeof *r->fixed);
    }
    search x = {o, {0}, seed, pl_pool_start(jobs > 0 ? jobs : 1, pl_point_job, (void *)&o->base),
                stop, r, d, NULL};
    fleet_read(o, &x.fleet);
    if (o->progress) pl_pool_set_tick(x.pool, o->progress, o->progress_arg);
    int rc = o->goal == PL_MAX_RATE ? max_rate(&x)
           : o->goal == PL_MIN_REPLICAS ? min_replicas(&x)
           : r->day                     ? over_a_day(&x)
                                        : cheapest(&x);
    if (!r->n_models && x.fleet.n_models) answer_models(&x); /* min-replicas made its own */
    pl_pool_stop(x.pool);
    fleet_fini(&x.fleet);
    return rc < 0 ? rc : UTIL_OK;
}

void pl_plan_result_fini(pl_plan_result *r)
{
    for (int i = 0; i < r->n_trials; i++) cJSON_Delete(r->trials[i].overrides);
    free(r->trials);
    for (int i = 0; i < r->n_candidates; i++) cJSON_Delete(r->candidates[i].config);
    free(r->candidates);
    for (int m = 0; m < r->n_models; m++) free(r->models[m].id);
    if (r->fixed) pl_plan_result_fini(r->fixed);
    free(r->fixed);
    memset(r, 0, sizeof *r);
}
