/*
 * test_queueing.c: the engine against queueing theory.  With the linear cost
 * model, max_batch 1 and one output token, a replica is a single FCFS server
 * whose service time is iteration_s + prefill_s_per_token x prompt tokens:
 *  - fixed prompts make it M/D/1 (Pollaczek-Khinchine mean wait, Erlang's
 *    waiting-time distribution);
 *  - exponential prompts (mean 1000 tokens at 1 ms each; rounding to whole
 *    tokens changes the moments by under 1e-6) make it M/M/1 (sojourn time
 *    exponential with rate mu - lambda);
 *  - three such replicas behind the central_queue router make it M/M/3
 *    (Erlang C).
 * Every metric is read back from the SQLite records through analysis/.
 *
 * Tolerances come from the sample: each check runs REPS independent
 * replications (seeds 1..REPS) and compares the mean of the per-replication
 * estimates with the closed form within t(0.9995, REPS-1) standard errors of
 * that mean -- a 99.9% interval, so with fixed seeds a correct engine fails
 * with probability 1e-3 per check, once, and then never (deterministic).  A
 * 500 s warm-up (over 10 relaxation times at rho = 0.7) removes the empty
 * start.  The scenarios are tests/scenarios/queueing-*.json.
 */
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sf_gamma.h>

#include "support.h"
#include "tap.h"

#define REPS 12
#define LAMBDA 0.7

enum { W, P0, TAIL1, TAIL2, P99, L_PASTA, L_LITTLE, NSTAT };

typedef struct estimate {
    double v[REPS][NSTAT];
} estimate;

/* Fraction of measured requests whose expression is true. */
static double fraction(sqlite3 *db, int64_t run, double warmup, const char *cond)
{
    char *sql = util_xasprintf("SELECT avg(%s) FROM request_metrics WHERE run_id = %lld AND "
                               "status = 'completed' AND arrival_s >= %g",
                               cond, (long long)run, warmup);
    sqlite3_stmt *st;
    double v = NAN;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    free(sql);
    return v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean number in system seen by measured arrivals (which Poisson arrivals
 * see as the time average, PASTA): earlier arrivals minus departures at or
 * before the arrival instant. */
static double pasta_number(sqlite3 *db, int64_t run, double warmup)
{
    sqlite3_stmt *st;
    char *sql = util_xasprintf("SELECT arrival_s, finish_s FROM requests WHERE run_id = %lld "
                               "ORDER BY arrival_s", (long long)run);
    sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    free(sql);
    size_t n = 0, cap = 1 << 15;
    double *arr = util_xmalloc(cap * sizeof *arr), *fin = util_xmalloc(cap * sizeof *fin);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap *= 2;
            arr = util_xrealloc(arr, cap * sizeof *arr);
            fin = util_xrealloc(fin, cap * sizeof *fin);
        }
        arr[n] = sqlite3_column_double(st, 0);
        fin[n++] = sqlite3_column_double(st, 1);
    }
    sqlite3_finalize(st);
    qsort(fin, n, sizeof *fin, cmp_double);
    double sum = 0;
    size_t measured = 0, gone = 0;
    for (size_t i = 0; i < n; i++) {
        while (gone < n && fin[gone] <= arr[i]) gone++;
        if (arr[i] < warmup) continue;
        sum += (double)(i - gone);
        measured++;
    }
    free(arr);
    free(fin);
    return sum / (double)measured;
}

/* REPS runs of tests/scenarios/NAME, seeds 1..REPS. */
static void replicate(const char *name, double t1, double t2, estimate *est)
{
    char *json = support_scenario_text(name);
    for (int k = 0; k < REPS; k++) {
        char seed[32];
        snprintf(seed, sizeof seed, "seed=%d", k + 1);
        const char *sets[] = {seed, NULL};
        sim_scenario sc;
        support_scenario(json, sets, &sc, NULL);
        int64_t run;
        sqlite3 *db = support_run_db(&sc, &run);
        util_diag d;
        util_diag_init(&d);
        an_report r;
        an_report_compute(db, run, &r, &d);
        char c1[64], c2[64];
        snprintf(c1, sizeof c1, "ttft_s > %.17g", t1);
        snprintf(c2, sizeof c2, "ttft_s > %.17g", t2);
        double *v = est->v[k];
        v[W] = r.req.ttft.mean;
        v[P0] = fraction(db, run, r.warmup_s, "queue_s = 0");
        v[TAIL1] = fraction(db, run, r.warmup_s, c1);
        v[TAIL2] = fraction(db, run, r.warmup_s, c2);
        v[P99] = r.req.ttft.p99;
        v[L_PASTA] = pasta_number(db, run, r.warmup_s);
        v[L_LITTLE] = r.req.requests_per_s * r.req.e2e.mean; /* lambda x W, from the report */
        if (r.req.rejected) tap_diag("unexpected rejections: %lld", (long long)r.req.rejected);
        an_report_fini(&r);
        util_diag_fini(&d);
        sqlite3_close(db);
        sim_scenario_fini(&sc);
    }
    free(json);
}

/* Mean of statistic s over replications, within t x standard error of want. */
static void check(const estimate *est, int s, double want, const char *what)
{
    double sum = 0, sum2 = 0;
    for (int k = 0; k < REPS; k++) sum += est->v[k][s];
    double mean = sum / REPS;
    for (int k = 0; k < REPS; k++) sum2 += (est->v[k][s] - mean) * (est->v[k][s] - mean);
    double se = sqrt(sum2 / (REPS - 1) / REPS);
    double tol = gsl_cdf_tdist_Pinv(0.9995, REPS - 1) * se;
    is_near(mean, want, tol, "%s: %.4f (closed form %.4f, 99.9%% interval +-%.4f)", what, mean,
            want, tol);
}

/* Erlang's M/D/1 waiting-time distribution, service time D:
 * P(Wq <= t) = (1 - rho) sum_{k=0}^{floor(t/D)} (lambda (kD - t))^k / k! e^{-lambda (kD - t)} */
static double md1_wait_cdf(double lambda, double d, double t)
{
    double sum = 0;
    for (int k = 0; k <= (int)floor(t / d + 1e-12); k++) {
        double x = lambda * (k * d - t);
        sum += (k ? pow(x, k) : 1.0) / gsl_sf_fact((unsigned)k) * exp(-x);
    }
    return (1 - lambda * d) * sum;
}

static void test_md1(void)
{
    const double s = 1.0, rho = LAMBDA * s;
    estimate est;
    /* TTFT = wait + 1 s of service: P(TTFT > 1 + t) = 1 - P(Wq <= t) */
    replicate("queueing-md1.json", 2.0, 3.0, &est);
    check(&est, W, s + rho * s / (2 * (1 - rho)), "M/D/1 mean TTFT = S + rho S / 2(1 - rho)");
    check(&est, P0, 1 - rho, "M/D/1 P(no wait) = 1 - rho");
    check(&est, TAIL1, 1 - md1_wait_cdf(LAMBDA, s, 1.0), "M/D/1 P(wait > 1 s), Erlang");
    check(&est, TAIL2, 1 - md1_wait_cdf(LAMBDA, s, 2.0), "M/D/1 P(wait > 2 s), Erlang");
    check(&est, L_PASTA, rho + LAMBDA * rho * s / (2 * (1 - rho)),
          "M/D/1 mean number in system seen by arrivals");
    check(&est, L_LITTLE, rho + LAMBDA * rho * s / (2 * (1 - rho)), "M/D/1 Little: lambda W");
}

static void test_mm1(void)
{
    const double mu = 1.0, rate = mu - LAMBDA, rho = LAMBDA / mu;
    const double t1 = log(10) / rate, t2 = log(100) / rate;
    estimate est;
    replicate("queueing-mm1.json", t1, t2, &est);
    check(&est, W, 1 / rate, "M/M/1 mean TTFT = 1 / (mu - lambda)");
    check(&est, P0, 1 - rho, "M/M/1 P(no wait) = 1 - rho");
    check(&est, TAIL1, 0.10, "M/M/1 P(TTFT > ln 10 / (mu - lambda)) = 0.1");
    check(&est, TAIL2, 0.01, "M/M/1 P(TTFT > ln 100 / (mu - lambda)) = 0.01");
    check(&est, P99, log(100) / rate, "M/M/1 P99 TTFT = ln 100 / (mu - lambda)");
    check(&est, L_PASTA, rho / (1 - rho), "M/M/1 L = rho / (1 - rho), seen by arrivals (PASTA)");
    check(&est, L_LITTLE, rho / (1 - rho), "M/M/1 Little's law: lambda W = L");
}

/* Erlang C: probability that an arrival waits in an M/M/c queue with
 * offered load a = lambda / mu. */
static double erlang_c(int c, double a)
{
    double term = 1, sum = 1; /* a^k / k! for k = 0 .. c-1 */
    for (int k = 1; k < c; k++) sum += term *= a / k;
    double top = term * a / c * c / (c - a); /* a^c / c! x c / (c - a) */
    return top / (sum + top);
}

/* Three replicas pulling from one central queue, one request at a time:
 * M/M/3 at lambda = 2.1, mu = 1 (rho = 0.7). */
static void test_mmc(void)
{
    const int c = 3;
    const double lambda = 2.1, mu = 1.0, pw = erlang_c(c, lambda / mu);
    const double wq = pw / (c * mu - lambda);
    estimate est;
    replicate("queueing-mmc.json", 1.0 / mu + wq, 1.0 / mu + 3 * wq, &est);
    check(&est, W, 1 / mu + wq, "M/M/3 (central queue) mean TTFT = 1/mu + C(3, a) / (3 mu - lambda)");
    check(&est, P0, 1 - pw, "M/M/3 P(no wait) = 1 - Erlang C");
    check(&est, L_PASTA, lambda * (1 / mu + wq), "M/M/3 number in system seen by arrivals");
}

int main(void)
{
    if (support_init()) return 1;
    test_md1();
    test_mm1();
    test_mmc();
    support_fini();
    return tap_done();
}
