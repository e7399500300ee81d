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
    an_options_fini(&probe);
    if (rc) pl_target_fini(t);
    return rc;
}

void pl_target_fini(pl_target *t)
{
    free(t->text);
    free(t->slo);
    memset(t, 0, sizeof *t);
}

/* ---- evaluating one configuration ---- */

typedef struct search {
    const pl_plan_opts *o;
    int64_t seed; /* the scenario's: seeds seed, seed + 1, ... */
    pl_pool *pool;
    const volatile sig_atomic_t *stop;
    pl_plan_result *r;
    util_diag *d;
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

/* Target i's figure in one seed's summary: the percentile's value, or the
 * attainment of the per-request SLOs, or of the task SLO. */
static double figure(const pl_plan_opts *o, int i, const pl_summary *s)
{
    const pl_target *t = &o->targets[i];
    return t->per_task      ? s->task_attainment
           : t->per_request ? s->attainment
                            : s->target_value[t->index];
}

/* Met with confidence: the interval's worse end is within the target. */
static bool meets(const pl_plan_opts *o, int i, double v, double half)
{
    return o->targets[i].per_request ? v - half >= o->attainment
                                     : v + half <= o->targets[i].threshold;
}

static void mean_half(const pl_summary *s, int n, const pl_plan_opts *o, int i, double *mean,
                      double *half)
{
    double sum = 0, sq = 0;
    for (int k = 0; k < n; k++) sum += figure(o, i, &s[k]);
    *mean = sum / n;
    for (int k = 0; k < n; k++) sq += pow(figure(o, i, &s[k]) - *mean, 2);
    *half = n > 1 ? gsl_cdf_tdist_Pinv(0.5 + o->confidence / 2, n - 1) * sqrt(sq / (n - 1) / n)
                  : INFINITY;
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

static void judge(const pl_plan_opts *o, const pl_summary *s, int n, pl_trial *t)
{
    t->seeds = n;
    t->met = true;
    t->overloaded = false;
    double usd = 0, busy = 0, tok = 0, fill = 0, kv = 0;
    for (int k = 0; k < n; k++) {
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
}

/* Simulates a configuration and records it as a trial: its index, or < 0. */
static int evaluate(search *x, cJSON *overrides)
{
    const pl_plan_opts *o = x->o;
    pl_summary s[MAX_SEEDS];
    int n = o->seeds;
    int rc = run_seeds(x, overrides, 0, n, s);
    pl_trial t = {.overrides = overrides};
    if (!rc) judge(o, s, n, &t);
    while (!rc && !t.overloaded && undecided(o, &t) && 2 * n <= MAX_SEEDS) {
        rc = run_seeds(x, overrides, n, 2 * n, s); /* too close to call: as many seeds again */
        if (!rc) judge(o, s, n *= 2, &t);
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

/* The fewest replicas meeting the targets with the other overrides given,
 * by doubling, then bisection: *best is the answer's trial, or -1 when even
 * max_replicas fail. */
static int fewest(search *x, const cJSON *overrides, int *best_out)
{
    const pl_plan_opts *o = x->o;
    int lo = 0, hi = 0, best = -1; /* fails at lo, meets at hi */
    *best_out = -1;
    for (int n = 1; n <= o->max_replicas; n = n * 2 > o->max_replicas && n < o->max_replicas
                                                      ? o->max_replicas : n * 2) {
        int k = evaluate(x, with(overrides, REPLICAS, n));
        if (k < 0) return k;
        if (x->r->trials[k].met) {
            hi = n;
            best = k;
            break;
        }
        lo = n;
        if (n == o->max_replicas) break;
    }
    while (best >= 0 && hi - lo > 1) {
        int mid = (lo + hi) / 2;
        int k = evaluate(x, with(overrides, REPLICAS, mid));
        if (k < 0) return k;
        if (x->r->trials[k].met) hi = mid, best = k;
        else lo = mid;
    }
    *best_out = best;
    return UTIL_OK;
}

static int min_replicas(search *x)
{
    int best;
    cJSON *at = with(NULL, RATE, x->o->rate);
    int rc = fewest(x, at, &best);
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
        cJSON *cfg = with(NULL, RATE, o->rate);
        for (int a = 0, rest = i; a < o->n_candidates; a++) {
            int m = cJSON_GetArraySize(o->candidates[a].values);
            cJSON_AddItemToObject(cfg, o->candidates[a].path,
                                  cJSON_Duplicate(cJSON_GetArrayItem(o->candidates[a].values,
                                                                     rest % m), 1));
            rest /= m;
        }
        int k;
        int rc = pools_fix_replicas(o, cfg) ? as_given(x, cfg, &k) : fewest(x, cfg, &k);
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

int pl_plan_run(const pl_plan_opts *o, const volatile sig_atomic_t *stop, pl_plan_result *r,
                util_diag *d)
{
    memset(r, 0, sizeof *r);
    r->best = -1;
    int jobs = o->jobs < o->seeds ? o->jobs : o->seeds;
    cJSON *root = cJSON_Parse(o->base.json);
    int64_t seed = (int64_t)util_json_number(root, "seed", 1);
    cJSON_Delete(root);
    search x = {o, seed, pl_pool_start(jobs > 0 ? jobs : 1, pl_point_job, (void *)&o->base), stop, r,
                d};
    if (o->progress) pl_pool_set_tick(x.pool, o->progress, o->progress_arg);
    int rc = o->goal == PL_MAX_RATE ? max_rate(&x)
           : o->goal == PL_MIN_REPLICAS ? min_replicas(&x)
                                        : cheapest(&x);
    pl_pool_stop(x.pool);
    return rc < 0 ? rc : UTIL_OK;
}

void pl_plan_result_fini(pl_plan_result *r)
{
    for (int i = 0; i < r->n_trials; i++) cJSON_Delete(r->trials[i].overrides);
    free(r->trials);
    for (int i = 0; i < r->n_candidates; i++) cJSON_Delete(r->candidates[i].config);
    free(r->candidates);
    memset(r, 0, sizeof *r);
}
