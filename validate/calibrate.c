/*
 * calibrate.c: a few physical coefficients of a GPU and an engine, fitted
 * to the user's measured runs by nonlinear least squares.
 *
 * The fit.  Each measured run is replayed (val_replay_scenario: its
 * arrivals as a trace, its lengths as measured, its engine settings as
 * recorded) with the coefficients set as scenario keys, and read on the
 * clock it was measured with (val_run_metrics).  The residuals are the
 * relative errors (predicted - measured) / measured of every metric the run
 * gives, all runs together, so that a TTFT in seconds and a TPOT in
 * milliseconds weigh alike.  GSL's trust-region solver
 * (gsl_multifit_nlinear, Levenberg-Marquardt with geodesic acceleration off)
 * minimises their sum of squares over an unbounded x, each coefficient
 * being lo + (hi - lo) / (1 + e^-x): it stays within its physical range
 * whatever step the solver takes.  The Jacobian is by forward differences
 * of a fixed step in x, in stages from coarse to fine (solve): a simulated
 * metric is piecewise smooth in the coefficients (a step that changes
 * which request joins which batch shifts it a little), and GSL's own
 * step, 1e-8 relative to x, would read that noise as the slope.
 *
 * The uncertainty of a coefficient is from the covariance at the optimum,
 * (J^T J)^-1 scaled by the residuals' variance chi^2 / (n - p), carried
 * from x to the coefficient by the slope of the logistic map.
 *
 * The held-out error.  With k folds, the runs are dealt round-robin into k
 * groups; each group is predicted by the coefficients fitted on the others,
 * and the error of those predictions, metric by metric, is the
 * cross-validated error -- what a planner can expect on a run the profile
 * never saw.
 */
#include "val.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>

#include "rec.h"

const val_coef val_coefs[MDL_N_COEFS] = {
    [MDL_COEF_MFU] = {0.02, 1, "fraction of peak FLOP/s reached (roofline)"},
    [MDL_COEF_MBU] = {0.05, 1, "fraction of peak memory bandwidth reached (roofline)"},
    [MDL_COEF_ATTN_EFFICIENCY] = {0.05, 1, "share of that bandwidth attention's KV reads reach"},
    [MDL_COEF_OVERHEAD_S] = {0, 0.05, "fixed GPU time of an iteration, s"},
    [MDL_COEF_STEP_S] = {0, 0.05, "host time of an iteration, s"},
    [MDL_COEF_STEP_S_PER_SEQ] = {0, 1e-3, "host time per sequence in an iteration, s"},
    [MDL_COEF_OUTPUT_S] = {0, 0.05, "a token's way from the engine to the client, s"},
    [MDL_COEF_FRONTEND_S] = {0, 0.5, "a request's way from the client into the engine, s"},
    [MDL_COEF_FRONTEND_S_PER_TOKEN] = {0, 1e-4, "the same per prompt token (tokenising), s"},
};

/* Where the solver stops: relative step 1e-6 in x, or a gradient of 1e-8
 * (scaled), or 60 iterations -- a fit of a few coefficients that needs more
 * is not converging. */
#define MAX_ITER 60
#define XTOL 1e-6
#define GTOL 1e-8
/* A coefficient within this share of its range of an end stopped on it:
 * the logistic map has flattened there, and the solver can no longer move
 * it.  A start on an end (a host term of 0) starts START_IN inside. */
#define ON_BOUND 1e-4
#define START_IN 1e-3
/* A coefficient that moves no residual by more than this per unit of x is
 * one the runs say nothing of (a 1e-6 relative change is below any
 * metric's rounding in the record). */
#define UNINFORMED 1e-6
/* The residual of a metric the replay could not give (nothing completed):
 * large, finite, so that the solver backs away. */
#define MISSING_RESIDUAL 10.0

/* ---- one evaluation ---- */

/* What the fit runs on: the measured runs, their traces, the coefficients
 * being fitted, the others as they are. */
typedef struct problem {
    const val_run *runs;
    const int *use; /* the runs of this fit, by index */
    int n_use;
    const mdl_catalog *cat;
    char **traces; /* per run; NULL: it replays its generator */
    const bool *fit;
    double value[MDL_N_COEFS]; /* every coefficient: the fitted ones at the current x */
    int idx[MDL_N_COEFS];      /* x's j-th coefficient */
    int p;
    size_t n;                  /* residuals */
    util_diag *d;
    int error;                 /* the first failure of a replay, UTIL_OK */
    double h;                  /* the Jacobian's step in x (solve's stages) */
    int evaluations;
} problem;

static double from_x(int c, double x)
{
    const val_coef *k = &val_coefs[c];
    return k->lo + (k->hi - k->lo) / (1 + exp(-x));
}

static double to_x(int c, double v)
{
    const val_coef *k = &val_coefs[c];
    double s = (v - k->lo) / (k->hi - k->lo);
    s = fmin(fmax(s, START_IN), 1 - START_IN);
    return log(s / (1 - s));
}

/* d coefficient / dx, for the uncertainty. */
static double slope(int c, double x)
{
    const val_coef *k = &val_coefs[c];
    double e = exp(-x);
    return (k->hi - k->lo) * e / ((1 + e) * (1 + e));
}

/* Sets coefficient c's key in a scenario (objects made on the way). */
static void set_coef(cJSON *sc, int c, double v)
{
    char *assign = util_xasprintf("cluster.%s.%s=%.17g", mdl_coefs[c].section, mdl_coefs[c].key, v);
    util_diag ignore;
    util_diag_init(&ignore);
    util_json_set(sc, assign, &ignore); /* a dotted path of objects: cannot fail */
    util_diag_fini(&ignore);
    free(assign);
}

/* Replays run i with the given coefficients into memory; *db and *id the
 * result (the caller closes db). */
static int replay(const problem *pb, int i, const double value[MDL_N_COEFS], const bool *set,
                  sqlite3 **db, int64_t *id, util_diag *d)
{
    const val_run *m = &pb->runs[i];
    cJSON *sc = val_replay_scenario(m, pb->traces[i]);
    for (int c = 0; c < MDL_N_COEFS; c++)
        if (set[c]) set_coef(sc, c, value[c]);
    rec_run_spec spec = {.catalog = pb->cat, .scenario = sc, .origin = m->source,
                         .in_flight_limit = -1};
    rec_run_result res;
    int rc = rec_run(&spec, &res, d);
    if (!rc) {
        *db = res.db;
        *id = res.run_id;
        res.db = NULL;
    }
    rec_run_result_fini(&res);
    return rc;
}

/* Run i's metrics predicted with value (the coefficients of set). */
static int predict(const problem *pb, int i, const double value[MDL_N_COEFS], const bool *set,
                   double out[VAL_N_AGG], util_diag *d)
{
    sqlite3 *db = NULL;
    int64_t id = 0;
    int rc = replay(pb, i, value, set, &db, &id, d);
    if (!rc) rc = val_run_metrics(db, id, pb->runs[i].clock, out, d);
    sqlite3_close(db);
    return rc;
}

/* The metrics of a run that count: what it measured. */
static int n_metrics(const double meas[VAL_N_AGG])
{
    int n = 0;
    for (int k = 0; k < VAL_N_AGG; k++) n += !isnan(meas[k]);
    return n;
}

/* ---- the solver's callbacks ---- */

typedef struct fit_ctx {
    problem *pb;
    double (*meas)[VAL_N_AGG]; /* per run */
    /* the last residuals computed and where: GSL asks for the Jacobian at
     * the x it has just evaluated, whose residuals need no replays again */
    gsl_vector *last_x, *last_f;
    bool have_last;
} fit_ctx;

static void values_at(problem *pb, const gsl_vector *x)
{
    for (int j = 0; j < pb->p; j++) pb->value[pb->idx[j]] = from_x(pb->idx[j], gsl_vector_get(x, j));
}

static int residuals(const gsl_vector *x, void *params, gsl_vector *f)
{
    fit_ctx *c = params;
    problem *pb = c->pb;
    values_at(pb, x);
    pb->evaluations++;
    size_t r = 0;
    for (int u = 0; u < pb->n_use; u++) {
        int i = pb->use[u];
        double pred[VAL_N_AGG];
        int rc = predict(pb, i, pb->value, pb->fit, pred, pb->d);
        if (rc && !pb->error) pb->error = rc;
        for (int k = 0; k < VAL_N_AGG; k++) {
            if (isnan(c->meas[i][k])) continue;
            double e = rc || isnan(pred[k]) ? MISSING_RESIDUAL
                                            : (pred[k] - c->meas[i][k]) / c->meas[i][k];
            gsl_vector_set(f, r++, e);
        }
    }
    if (!pb->error) {
        gsl_vector_memcpy(c->last_x, x);
        gsl_vector_memcpy(c->last_f, f);
        c->have_last = true;
    }
    return pb->error ? GSL_EFAILED : GSL_SUCCESS;
}

static int check_bounds(const problem *pb, const double value[MDL_N_COEFS], util_diag *d);
static int check_informed(const problem *pb, const gsl_matrix *J, util_diag *d);

/* Forward differences of a fixed step in x (see the top). */
static int jacobian(const gsl_vector *x, void *params, gsl_matrix *J)
{
    fit_ctx *c = params;
    size_t n = J->size1;
    gsl_vector *f0 = gsl_vector_alloc(n), *f1 = gsl_vector_alloc(n), *xh = gsl_vector_alloc(x->size);
    int status = GSL_SUCCESS;
    if (c->have_last && gsl_vector_equal(x, c->last_x)) gsl_vector_memcpy(f0, c->last_f);
    else status = residuals(x, params, f0);
    for (size_t j = 0; status == GSL_SUCCESS && j < x->size; j++) {
        gsl_vector_memcpy(xh, x);
        gsl_vector_set(xh, j, gsl_vector_get(x, j) + c->pb->h);
        status = residuals(xh, params, f1);
        for (size_t i = 0; i < n; i++)
            gsl_matrix_set(J, i, j, (gsl_vector_get(f1, i) - gsl_vector_get(f0, i)) / c->pb->h);
    }
    values_at(c->pb, x); /* the coefficients where the solver is */
    gsl_vector_free(f0);
    gsl_vector_free(f1);
    gsl_vector_free(xh);
    return status;
}

/* ---- a fit ---- */

/* The fit on the runs pb->use: values and their standard errors. */
static int solve(problem *pb, double (*meas)[VAL_N_AGG], double value[MDL_N_COEFS],
                 double stderr_[MDL_N_COEFS], int *iterations, util_diag *d)
{
    pb->n = 0;
    for (int u = 0; u < pb->n_use; u++)
        pb->n += (size_t)n_metrics(meas[pb->use[u]]);
    if (pb->n < (size_t)pb->p)
        return util_diag_add(d, "calibrate: %zu measured figures cannot fit %d coefficients: "
                                "give more runs, or fewer --fit names", pb->n, pb->p);
    fit_ctx ctx = {pb, meas, gsl_vector_alloc((size_t)pb->p), gsl_vector_alloc(pb->n), false};
    gsl_multifit_nlinear_fdf fdf = {.f = residuals, .df = jacobian, .n = pb->n,
                                    .p = (size_t)pb->p, .params = &ctx};
    gsl_multifit_nlinear_parameters params = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &params, pb->n, (size_t)pb->p);
    gsl_vector *x = gsl_vector_alloc((size_t)pb->p);
    for (int j = 0; j < pb->p; j++) gsl_vector_set(x, j, to_x(pb->idx[j], pb->value[pb->idx[j]]));
    pb->error = UTIL_OK;
    int info = 0, status = GSL_SUCCESS, iters = 0;
    /* stages of a finer Jacobian step, each from where the last stopped: a
     * coarse step sees the slope through the kinks far from the optimum,
     * a fine one pins it near */
    static const double steps[] = {0.2, 0.05, 0.0125};
    for (size_t k = 0; !pb->error && status == GSL_SUCCESS && k < sizeof steps / sizeof *steps;
         k++) {
        pb->h = steps[k];
        if (k > 0 && check_bounds(pb, pb->value, d)) { /* the last stage ran onto one */
            pb->error = UTIL_EINPUT;
            break;
        }
        status = gsl_multifit_nlinear_init(x, &fdf, w);
        if (status == GSL_SUCCESS && !pb->error && check_informed(pb, gsl_multifit_nlinear_jac(w), d))
            pb->error = UTIL_EINPUT;
        if (status == GSL_SUCCESS && !pb->error)
            status = gsl_multifit_nlinear_driver(MAX_ITER, XTOL, GTOL, 0, NULL, NULL, &info, w);
        size_t done = gsl_multifit_nlinear_niter(w);
        iters += (int)done;
        /* no step within the trust region lowers the cost (GSL gives up on
         * the region, not on the iterations): a minimum as fine as the
         * simulation resolves -- the next stage looks closer */
        if ((status == GSL_EMAXITER || status == GSL_ENOPROG) && done < MAX_ITER)
            status = GSL_SUCCESS;
        gsl_vector_memcpy(x, gsl_multifit_nlinear_position(w));
        values_at(pb, x);
    }
    int rc = pb->error;
    if (!rc && status != GSL_SUCCESS) {
        values_at(pb, x); /* where it stopped: on a bound, that is the message */
        rc = check_bounds(pb, pb->value, d);
    }
    if (!rc && status != GSL_SUCCESS)
        rc = util_diag_add(d, "calibrate: the fit did not converge (%s after %d iterations): "
                              "the runs do not pin %s; fit fewer coefficients (--fit)",
                           gsl_strerror(status), iters,
                           pb->p == 1 ? "this coefficient" : "these coefficients");
    if (!rc) {
        const gsl_vector *xs = gsl_multifit_nlinear_position(w);
        values_at(pb, xs);
        gsl_matrix *covar = gsl_matrix_alloc((size_t)pb->p, (size_t)pb->p);
        gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, covar);
        double chi2;
        gsl_blas_ddot(gsl_multifit_nlinear_residual(w), gsl_multifit_nlinear_residual(w), &chi2);
        double dof = (double)pb->n - pb->p, s2 = dof > 0 ? chi2 / dof : NAN;
        for (int j = 0; j < pb->p; j++) {
            int c = pb->idx[j];
            stderr_[c] = slope(c, gsl_vector_get(xs, j)) * sqrt(gsl_matrix_get(covar, j, j) * s2);
        }
        gsl_matrix_free(covar);
        *iterations = iters;
    }
    memcpy(value, pb->value, sizeof pb->value);
    gsl_vector_free(x);
    gsl_multifit_nlinear_free(w);
    gsl_vector_free(ctx.last_x);
    gsl_vector_free(ctx.last_f);
    return rc;
}

/* A fitted coefficient that stopped at an end of its range is not fitted:
 * the runs push it past what is physical. */
static int check_bounds(const problem *pb, const double value[MDL_N_COEFS], util_diag *d)
{
    int rc = UTIL_OK;
    for (int j = 0; j < pb->p; j++) {
        const val_coef *k = &val_coefs[pb->idx[j]];
        const char *name = mdl_coefs[pb->idx[j]].name;
        double v = value[pb->idx[j]], span = k->hi - k->lo;
        if (v - k->lo < ON_BOUND * span || k->hi - v < ON_BOUND * span)
            rc = util_diag_add(d, "calibrate: %s stopped on its bound (%g, range %g .. %g): the "
                                  "runs push it past what is physical -- check the engine "
                                  "settings they were replayed with, or leave it out of --fit",
                               name, v, k->lo, k->hi);
    }
    return rc;
}

/* Mean absolute error in % per metric of runs use[] predicted with value. */
static int errors(problem *pb, double (*meas)[VAL_N_AGG], const double value[MDL_N_COEFS],
                  const int *use, int n_use, double sum[VAL_N_AGG], int count[VAL_N_AGG],
                  double (*per_run)[VAL_N_AGG], util_diag *d)
{
    for (int u = 0; u < n_use; u++) {
        int i = use[u];
        double pred[VAL_N_AGG];
        int rc = predict(pb, i, value, pb->fit, pred, d);
        if (rc) return rc;
        for (int k = 0; k < VAL_N_AGG; k++) {
            double e = val_error_pct(pred[k], meas[i][k]);
            if (per_run) per_run[i][k] = e;
            if (isnan(e)) continue;
            sum[k] += fabs(e);
            count[k]++;
        }
    }
    return UTIL_OK;
}

static void mean_of(const double sum[VAL_N_AGG], const int count[VAL_N_AGG], double out[VAL_N_AGG])
{
    for (int k = 0; k < VAL_N_AGG; k++) out[k] = count[k] ? sum[k] / count[k] : NAN;
}

/* ---- setting up ---- */

/* Every run on one GPU and one engine: the profile's. */
static int same_hardware(const val_run *runs, int n, val_fit *out, util_diag *d)
{
    util_clip_buf b;
    int rc = UTIL_OK;
    for (int i = 0; i < n; i++) {
        const char *gpu = cJSON_GetStringValue(util_json_get(runs[i].scenario, "cluster.gpu"));
        const char *eng = cJSON_GetStringValue(util_json_get(runs[i].scenario, "cluster.engine"));
        if (!eng) eng = "vllm-v1"; /* the scenario's default */
        if (!gpu)
            return util_diag_add(d, "%s: cluster.gpu: not recorded (give --scenario or --set "
                                    "cluster.gpu=ID): a profile belongs to one GPU",
                                 util_clip_path(runs[i].source, &b));
        if (util_json_get(runs[i].scenario, "cluster.pools"))
            return util_diag_add(d, "%s: cluster.pools: calibrate fits runs of one pool",
                                 util_clip_path(runs[i].source, &b));
        if (i == 0) {
            snprintf(out->gpu, sizeof out->gpu, "%s", gpu);
            snprintf(out->engine, sizeof out->engine, "%s", eng);
        } else if (strcmp(gpu, out->gpu) || strcmp(eng, out->engine)) {
            rc = util_diag_add(d, "%s: cluster.gpu %s with engine %s, but %s is %s with %s: a "
                                  "profile belongs to one GPU and one engine",
                               util_clip_path(runs[i].source, &b), gpu, eng, runs[0].source,
                               out->gpu, out->engine);
        }
    }
    return rc;
}

/* The coefficients' starting values: what the first run resolves them to
 * (its scenario's keys, else the catalog's and the preset's defaults, as
 * the stored scenario of a replay shows them). */
static int start_values(problem *pb, double value[MDL_N_COEFS], util_diag *d)
{
    sqlite3 *db = NULL;
    int64_t id = 0;
    bool none[MDL_N_COEFS] = {0};
    int rc = replay(pb, pb->use[0], value, none, &db, &id, d);
    sqlite3_stmt *st = NULL;
    if (!rc && sqlite3_prepare_v2(db, "SELECT scenario FROM runs WHERE id = ?1", -1, &st, NULL) ==
                   SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        cJSON *sc = sqlite3_step(st) == SQLITE_ROW
                        ? cJSON_Parse((const char *)sqlite3_column_text(st, 0))
                        : NULL;
        for (int c = 0; c < MDL_N_COEFS; c++) {
            char *key = util_xasprintf("cluster.%s.%s", mdl_coefs[c].section, mdl_coefs[c].key);
            double v = util_json_number(sc, key, NAN);
            free(key);
            /* attn_efficiency and the host keys default to 1 and 0 when unset */
            value[c] = !isnan(v) ? v : c == MDL_COEF_ATTN_EFFICIENCY ? 1 : 0;
        }
        cJSON_Delete(sc);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

/* The cost coefficients need the roofline model. */
static int check_cost_model(const val_run *runs, int n, const bool *fit, util_diag *d)
{
    util_clip_buf b;
    for (int i = 0; i < n; i++) {
        const char *kind = cJSON_GetStringValue(util_json_get(runs[i].scenario,
                                                              "cluster.cost_model.kind"));
        if (!kind || !strcmp(kind, "roofline")) continue;
        for (int c = 0; c < MDL_N_COEFS; c++)
            if (fit[c] && !strcmp(mdl_coefs[c].section, "cost_model"))
                return util_diag_add(d, "%s: cluster.cost_model.kind is %s: %s belongs to the "
                                        "roofline model",
                                     util_clip_path(runs[i].source, &b), kind, mdl_coefs[c].name);
    }
    return UTIL_OK;
}

static void remove_traces(char **traces, int n, const char *dir)
{
    for (int i = 0; i < n; i++) {
        if (traces[i]) unlink(traces[i]);
        free(traces[i]);
    }
    free(traces);
    if (*dir) rmdir(dir);
}

/* Each run's trace in a folder of its own. */
static int write_traces(const val_run *runs, int n, char *dir, char ***traces, util_diag *d)
{
    *traces = util_xcalloc((size_t)n, sizeof **traces);
    if (!mkdtemp(dir)) {
        *dir = 0;
        return util_diag_fail(d, "cannot make a temporary folder: %s", strerror(errno));
    }
    int rc = UTIL_OK;
    for (int i = 0; !rc && i < n; i++) {
        if (runs[i].n == 0) continue;
        (*traces)[i] = util_xasprintf("%s/run%d.csv", dir, i);
        rc = val_write_trace(&runs[i], (*traces)[i], d);
    }
    return rc;
}

/* ---- the whole calibration ---- */

static int calibrate(const val_run *runs, int n, const mdl_catalog *cat, const bool fit[MDL_N_COEFS],
                     int folds, val_fit *out, util_diag *d);

static int fit_on(problem *pb, double (*meas)[VAL_N_AGG], const double start[MDL_N_COEFS],
                  double value[MDL_N_COEFS], double stderr_[MDL_N_COEFS], int *iterations,
                  util_diag *d)
{
    memcpy(pb->value, start, sizeof pb->value);
    int rc = solve(pb, meas, value, stderr_, iterations, d);
    if (!rc) rc = check_bounds(pb, value, d);
    return rc;
}

/* Each fold predicted by a fit without it. */
static int cross_validate(problem *pb, double (*meas)[VAL_N_AGG], const double start[MDL_N_COEFS],
                          int n, int folds, val_fit *out, util_diag *d)
{
    double sum[VAL_N_AGG] = {0};
    int count[VAL_N_AGG] = {0}, *train = util_xmalloc((size_t)n * sizeof *train);
    int *held = util_xmalloc((size_t)n * sizeof *held), rc = UTIL_OK;
    for (int f = 0; !rc && f < folds; f++) {
        int nt = 0, nh = 0;
        for (int i = 0; i < n; i++) {
            if (i % folds == f) held[nh++] = i;
            else train[nt++] = i;
        }
        pb->use = train;
        pb->n_use = nt;
        double value[MDL_N_COEFS], se[MDL_N_COEFS];
        int iters;
        rc = fit_on(pb, meas, start, value, se, &iters, d);
        if (!rc) rc = errors(pb, meas, value, held, nh, sum, count, out->cv_per_run, d);
    }
    mean_of(sum, count, out->cv_error);
    free(train);
    free(held);
    return rc;
}

/* A coefficient the metrics do not move (its column of J is 0, but for
 * rounding): the runs say nothing of it -- a frontend delay on runs read on
 * the engine's clock, which starts after it. */
static int check_informed(const problem *pb, const gsl_matrix *J, util_diag *d)
{
    int rc = UTIL_OK;
    for (size_t j = 0; j < J->size2; j++) {
        double most = 0;
        for (size_t i = 0; i < J->size1; i++) most = fmax(most, fabs(gsl_matrix_get(J, i, j)));
        if (most < UNINFORMED)
            rc = util_diag_add(d, "calibrate: no measured metric moves with %s at %g: the runs do "
                                  "not pin it (it is at the end of its range, or they never reach "
                                  "the regime it governs); leave it out of --fit",
                               mdl_coefs[pb->idx[j]].name, pb->value[pb->idx[j]]);
    }
    return rc;
}

int val_calibrate(const val_run *runs, int n, const mdl_catalog *cat, const bool fit[MDL_N_COEFS],
                  int folds, val_fit *out, util_diag *d)
{
    /* GSL aborts the process on a singular problem unless told not to: here
     * a failure is a status, said to the user */
    gsl_error_handler_t *handler = gsl_set_error_handler_off();
    int rc = calibrate(runs, n, cat, fit, folds, out, d);
    gsl_set_error_handler(handler);
    return rc;
}

static int calibrate(const val_run *runs, int n, const mdl_catalog *cat, const bool fit[MDL_N_COEFS],
                     int folds, val_fit *out, util_diag *d)
{
    *out = (val_fit){.n_runs = n, .folds = folds};
    for (int k = 0; k < VAL_N_AGG; k++) out->train_error[k] = out->cv_error[k] = NAN;
    out->per_run = util_xcalloc((size_t)n, sizeof *out->per_run);
    out->cv_per_run = util_xcalloc((size_t)n, sizeof *out->cv_per_run);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < VAL_N_AGG; k++) out->per_run[i][k] = out->cv_per_run[i][k] = NAN;
    int rc = same_hardware(runs, n, out, d);
    if (!rc) rc = check_cost_model(runs, n, fit, d);
    if (!rc && folds > n)
        rc = util_diag_add(d, "calibrate: --folds %d but %d run%s: at most one fold a run", folds,
                           n, n == 1 ? "" : "s");
    if (rc) return rc;
    char dir[] = "/tmp/servesim-calibrate-XXXXXX";
    char **traces = NULL;
    int *all = util_xmalloc((size_t)n * sizeof *all);
    for (int i = 0; i < n; i++) all[i] = i;
    problem pb = {.runs = runs, .use = all, .n_use = n, .cat = cat, .fit = fit, .d = d};
    for (int c = 0; c < MDL_N_COEFS; c++)
        if (fit[c]) pb.idx[pb.p++] = c;
    double (*meas)[VAL_N_AGG] = util_xcalloc((size_t)n, sizeof *meas);
    rc = write_traces(runs, n, dir, &traces, d);
    pb.traces = traces;
    for (int i = 0; !rc && i < n; i++) rc = val_run_figures(&runs[i], meas[i], d);
    double start[MDL_N_COEFS] = {0};
    if (!rc) rc = start_values(&pb, start, d);
    memcpy(out->start, start, sizeof start);
    if (!rc) rc = fit_on(&pb, meas, start, out->value, out->stderr_, &out->iterations, d);
    if (!rc) {
        double sum[VAL_N_AGG] = {0};
        int count[VAL_N_AGG] = {0};
        rc = errors(&pb, meas, out->value, all, n, sum, count, out->per_run, d);
        mean_of(sum, count, out->train_error);
    }
    if (!rc && folds >= 2) rc = cross_validate(&pb, meas, start, n, folds, out, d);
    memcpy(out->fitted, fit, sizeof out->fitted);
    out->evaluations = pb.evaluations;
    remove_traces(traces, n, dir);
    free(meas);
    free(all);
    return rc;
}

void val_fit_fini(val_fit *f)
{
    free(f->per_run);
    free(f->cv_per_run);
    f->per_run = f->cv_per_run = NULL;
}
