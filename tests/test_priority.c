/*
 * test_priority.c: scheduling_policy priority and deadline -- two Poisson
 * classes on one server against the closed forms of priority queueing, the
 * order and its preemptions on small timelines, and the keys' bad input.
 *
 * One server: max_batch 1 on the linear cost model, as test_queueing.c
 * builds M/M/1.  Two classes arrive at lambda_1 = 0.3 (urgent) and
 * lambda_2 = 0.4 (bulk) a second with the same service, rho = 0.7.
 *
 *  - Preemptive: a 1-token prompt and an exponential reply (mean 100
 *    tokens), each iteration 10 ms whatever it computes, so a request's
 *    service is 10 ms x its reply's tokens.  An urgent arrival ends the
 *    bulk request's decode run at the step in progress and preempts it by
 *    recompute.  Recompute discards the KV cache but not the tokens
 *    generated: the request comes back to prefill prompt + generated
 *    tokens, which costs one 10 ms iteration and gives its next token --
 *    exactly what the decode step it lost would have.  No work is lost or
 *    repeated, and the remaining work is what was left: preemptive RESUME
 *    (not repeat, which would redo the tokens generated).  The M/G/1
 *    preemptive-resume priority queue (Kleinrock, Queueing Systems vol. 2,
 *    3.7; Harchol-Balter, Performance Modeling, 32.3) gives the mean
 *    sojourn of class k as
 *        T_k = E[S] / (1 - s_{k-1}) + R_k / ((1 - s_{k-1}) (1 - s_k)),
 *        R_k = sum_{i <= k} lambda_i E[S^2] / 2,  s_k = sum_{i <= k} rho_i,
 *    so the urgent class sees an M/G/1 at its own load.  The moments are
 *    those of the reply lengths servesim draws (an exponential rounded to
 *    the nearest whole token, at least 1: reply_moments), not of the
 *    exponential.  The one approximation: an urgent arrival waits for the
 *    step in progress to end, on average rho_2 x 5 ms = 2 ms more than the
 *    closed form, under a tenth of the tolerance.
 *  - Non-preemptive: the M/M/1 of test_queueing.c (an exponential prompt,
 *    mean 1000 tokens at 1 ms each, and one output token): a prefill is one
 *    iteration, which nothing interrupts, so the urgent class waits only
 *    for the queue ahead of it -- Cobham's formula for the mean wait,
 *        W_k = W_0 / ((1 - s_{k-1}) (1 - s_k)),  W_0 = sum_i lambda_i E[S_i^2] / 2.
 *
 * Tolerances as test_queueing.c's (100,000 requests a run here): REPS
 * replications (seeds 1..REPS), the
 * mean of their per-replication means within t(0.9995, REPS - 1) standard
 * errors.  The scenarios are tests/scenarios/queueing-prio-*.json.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_cdf.h>

#include "support.h"
#include "tap.h"

#define REPS 12
#define WARMUP_S 500.0
#define LAMBDA_1 0.3
#define LAMBDA_2 0.4

/* E[K] and E[K^2] of K = max(1, round(X)), X exponential of the given mean:
 * the token counts servesim draws (workloads/dist.c). */
static void reply_moments(double mean, double *m1, double *m2)
{
    double cdf_lo = 0;
    *m1 = *m2 = 0;
    for (int k = 1; k < 200 * mean; k++) {
        double hi = 1 - exp(-(k + 0.5) / mean), p = hi - cdf_lo;
        *m1 += k * p;
        *m2 += (double)k * k * p;
        cdf_lo = hi;
    }
}

/* Mean of a metric of one class's measured requests. */
static double class_mean(sqlite3 *db, const char *metric, const char *cls)
{
    char *sql = util_xasprintf("SELECT avg(%s) FROM request_metrics WHERE run_id = 1 AND "
                               "class = '%s' AND status = 'completed' AND arrival_s >= %g",
                               metric, cls, WARMUP_S);
    double v = support_q1(db, sql);
    free(sql);
    return v;
}

typedef struct estimate {
    double v[REPS][2];       /* [rep][urgent, bulk] */
    double preemptions[2];   /* over every replication, by class */
} estimate;

/* REPS runs of tests/scenarios/NAME: each class's mean `metric`. */
static void replicate(const char *name, const char *metric, estimate *est)
{
    char *json = support_scenario_text(name);
    for (int k = 0; k < REPS; k++) {
        char seed[32];
        snprintf(seed, sizeof seed, "seed=%d", k + 1);
        const char *sets[] = {seed, NULL};
        sqlite3 *db = support_run_json(json, sets, false);
        est->v[k][0] = class_mean(db, metric, "urgent");
        est->v[k][1] = class_mean(db, metric, "bulk");
        est->preemptions[0] += support_q1(db, "SELECT total(preemptions) FROM requests WHERE "
                                              "class = 'urgent'");
        est->preemptions[1] += support_q1(db, "SELECT total(preemptions) FROM requests WHERE "
                                              "class = 'bulk'");
        sqlite3_close(db);
    }
    free(json);
}

/* Mean over replications of class c's estimate within t x its standard error. */
static void check(const estimate *est, int c, double want, const char *what)
{
    double sum = 0, sum2 = 0;
    for (int k = 0; k < REPS; k++) sum += est->v[k][c];
    double mean = sum / REPS;
    for (int k = 0; k < REPS; k++) sum2 += (est->v[k][c] - mean) * (est->v[k][c] - mean);
    double tol = gsl_cdf_tdist_Pinv(0.9995, REPS - 1) * sqrt(sum2 / (REPS - 1) / REPS);
    is_near(mean, want, tol, "%s: %.4f (closed form %.4f, 99.9%% interval +-%.4f)", what, mean,
            want, tol);
}

static void test_preemptive_resume(void)
{
    double k1, k2;
    reply_moments(100, &k1, &k2);
    const double step = 0.01, es = step * k1, es2 = step * step * k2;
    const double s1 = LAMBDA_1 * es, s2 = s1 + LAMBDA_2 * es;
    const double r1 = LAMBDA_1 * es2 / 2, r2 = (LAMBDA_1 + LAMBDA_2) * es2 / 2;
    estimate est = {0};
    replicate("queueing-prio-preemptive.json", "e2e_s", &est);
    is_near(est.preemptions[0], 0, 0, "the urgent class is never preempted");
    ok(est.preemptions[1] > 1000, "the bulk class is, %.0f times", est.preemptions[1]);
    check(&est, 0, es + r1 / (1 - s1), "preemptive: the urgent class's mean sojourn, M/G/1 at "
                                       "its own load");
    check(&est, 1, es / (1 - s1) + r2 / ((1 - s1) * (1 - s2)),
          "preemptive resume: the bulk class's mean sojourn");
}

static void test_cobham(void)
{
    double k1, k2;
    reply_moments(1000, &k1, &k2);
    const double es = 0.001 * k1, es2 = 1e-6 * k2;
    const double s1 = LAMBDA_1 * es, s2 = s1 + LAMBDA_2 * es;
    const double w0 = (LAMBDA_1 + LAMBDA_2) * es2 / 2;
    estimate est = {0};
    replicate("queueing-prio-cobham.json", "ttft_s", &est);
    is_near(est.preemptions[0] + est.preemptions[1], 0, 0,
            "a prefill is one iteration: nothing is preempted");
    /* TTFT: the wait, then the prefill that is the whole service */
    check(&est, 0, w0 / (1 - s1) + es, "non-preemptive: the urgent class's mean TTFT, Cobham");
    check(&est, 1, w0 / ((1 - s1) * (1 - s2)) + es,
          "non-preemptive: the bulk class's mean TTFT, Cobham");
}

/* The request of class cls that arrived at `at` (to 1 ms), or NULL. */
static const sim_request_row *find(const support_rows *r, const char *cls, double at)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->req[i].cls, cls) && fabs(r->req[i].arrival_s - at) < 1e-3) return &r->req[i];
    return NULL;
}

/* When the request of class cls arriving at `at` was first scheduled. */
static double started(const support_rows *r, const char *cls, double at)
{
    const sim_request_row *row = find(r, cls, at);
    return row ? row->first_scheduled_s : NAN;
}

/* tests/scenarios/prio-three.json: three requests at 0 -- long (background,
 * deadline 100 s), low (batch, 10 s), high (critical, 20 s) -- on one slot,
 * each served 0.6 s, then long at 1 s and low at 1.11 s while the slot is
 * busy.  Each family serves them in the order of the queue's policy. */
static void test_orders(void)
{
    static const char *const families[] = {"continuous", "prefill_first", "chunked", "static"};
    static const struct {
        const char *policy, *aging, *first, *second, *third;
        bool long_first; /* of the second wave */
    } cases[] = {
        {"fcfs", "0", "long", "low", "high", true},       /* arrival (id) order */
        {"priority", "0", "high", "low", "long", false},  /* critical, batch, background */
        {"deadline", "0", "low", "high", "long", false},  /* 10 s, 20 s, 100 s */
        /* aged by 1000 s a second, long's deadline (1 + 100 / 1001) comes
         * before low's (1.11 + 10 / 1001) */
        {"deadline", "1000", "low", "high", "long", true},
    };
    char *json = support_scenario_text("prio-three.json");
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            char *sets[3] = {util_xasprintf("cluster.scheduler.policy=%s", families[f]),
                             util_xasprintf("cluster.scheduler.scheduling_policy=%s",
                                            cases[c].policy),
                             util_xasprintf("cluster.scheduler.deadline_aging=%s", cases[c].aging)};
            bool aged = !strcmp(cases[c].policy, "deadline"); /* elsewhere it is refused */
            const char *list[] = {sets[0], sets[1], aged ? sets[2] : NULL, NULL};
            support_rows r = {0};
            sim_scenario sc; /* kept while the rows name its classes */
            support_scenario(json, list, &sc, NULL);
            is_int(support_run_rows(&sc, &r, NULL), SIM_STATUS_COMPLETED,
                   "%s, %s (aging %s) runs", families[f], cases[c].policy, cases[c].aging);
            double t1 = started(&r, cases[c].first, 0), t2 = started(&r, cases[c].second, 0);
            double t3 = started(&r, cases[c].third, 0);
            ok(t1 < t2 && t2 < t3, "%s, %s: the first three served %s, %s, %s (%g, %g, %g s)",
               families[f], cases[c].policy, cases[c].first, cases[c].second, cases[c].third, t1,
               t2, t3);
            bool long_first = started(&r, "long", 1.0) < started(&r, "low", 1.0 / 0.9);
            ok(long_first == cases[c].long_first, "%s, %s (aging %s): then %s first", families[f],
               cases[c].policy, cases[c].aging, cases[c].long_first ? "long" : "low");
            support_rows_fini(&r);
            sim_scenario_fini(&sc);
            for (int i = 0; i < 3; i++) free(sets[i]);
        }
    free(json);
}

/* ---- a trace's own priority, deadline and tenant ---- */

/* One slot as prio-three.json's, its requests replayed from a trace whose
 * rows are of one class (standard, deadline 50 s, tenant acme) unless they
 * say otherwise; each takes 0.6 s. */
static char *trace_scenario(const char *trace, const char *policy)
{
    return util_xasprintf(
        "{\"cluster\": {\"engine\": \"ideal\", \"gpu\": \"h100-sxm\", \"model\": \"llama-3.1-8b\", "
        "\"scheduler\": {\"policy\": \"continuous\", \"max_batch\": 1, \"scheduling_policy\": "
        "\"%s\"}, \"cost_model\": {\"kind\": \"linear\", \"iteration_s\": 0.1, "
        "\"prefill_s_per_token\": 0.001}}, "
        "\"workload\": {\"arrival\": {\"process\": \"trace\", \"path\": \"%s\"}, "
        "\"classes\": [{\"name\": \"std\", \"weight\": 1, \"priority\": \"standard\", "
        "\"deadline_s\": 50, \"tenant\": \"acme\"}]}}",
        policy, trace);
}

static char *write_file(const char *text)
{
    char *path = util_xstrdup("/tmp/servesim-prio-XXXXXX");
    FILE *f = fdopen(mkstemp(path), "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* The requests table's priority, deadline_s and tenant, "P D T;" a row in
 * id order ("-": NULL). */
static char *own_columns(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    char *out = util_xstrdup("");
    if (db && sqlite3_prepare_v2(db, "SELECT priority, deadline_s, tenant FROM requests "
                                     "ORDER BY id", -1, &st, NULL) == SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *t = (const char *)sqlite3_column_text(st, 2);
            char *more = util_xasprintf("%s%d %g %s;", out, sqlite3_column_int(st, 0),
                                        sqlite3_column_double(st, 1), t ? t : "-");
            free(out);
            out = more;
        }
    sqlite3_finalize(st);
    return out;
}

/* Rows at 0 (keeps the slot 0.6 s), then 0.1 .. 0.4 s, waiting for it. */
static const char *const own_csv =
    "arrival_time_s,input_tokens,output_tokens,priority,deadline_s,tenant\n"
    "0,100,5,,,\n0.1,100,5,,,\n0.2,100,5,batch,,beta\n0.3,100,5,critical,7,\n"
    "0.4,100,5,42,0.5,gamma\n";
static const char *const own_jsonl =
    "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 5}\n"
    "{\"timestamp\": 100, \"input_length\": 100, \"output_length\": 5, \"tenant\": null}\n"
    "{\"timestamp\": 200, \"input_length\": 100, \"output_length\": 5, \"priority\": \"batch\", "
    "\"tenant\": \"beta\"}\n"
    "{\"timestamp\": 300, \"input_length\": 100, \"output_length\": 5, \"priority\": "
    "\"critical\", \"deadline_s\": 7}\n"
    "{\"timestamp\": 400, \"input_length\": 100, \"output_length\": 5, \"priority\": 42, "
    "\"deadline_s\": 0.5, \"tenant\": \"gamma\"}\n";

static void test_trace_columns(void)
{
    const char *const texts[] = {own_csv, own_jsonl}, *const names[] = {"csv", "mooncake"};
    for (int k = 0; k < 2; k++) {
        char *trace = write_file(texts[k]);
        char *json = trace_scenario(trace, "fcfs");
        sqlite3 *db = support_run_json(json, NULL, false);
        char *got = own_columns(db);
        is_str(got, "0 50 acme;0 50 acme;1 50 beta;-1 7 acme;42 0.5 gamma;",
               "%s: the requests table has each row's own priority, deadline and tenant, and "
               "its class's where the row has none", names[k]);
        free(got);
        sqlite3_close(db);
        free(json);

        /* an ordered queue orders by them: the critical row at 0.3 s is
         * served before the standard one waiting since 0.1 s (at once:
         * priority's displace preempts the running standard row for it) */
        for (int prio = 0; prio < 2; prio++) {
            json = trace_scenario(trace, prio ? "priority" : "fcfs");
            support_rows r = {0};
            sim_scenario sc;
            support_scenario(json, NULL, &sc, NULL);
            is_int(support_run_rows(&sc, &r, NULL), SIM_STATUS_COMPLETED, "%s, %s: runs",
                   names[k], prio ? "priority" : "fcfs");
            double std = started(&r, "std", 0.1), crit = started(&r, "std", 0.3);
            double batch = started(&r, "std", 0.2), low = started(&r, "std", 0.4);
            if (prio)
                ok(crit < std && std < batch && batch < low,
                   "%s, priority: the critical row first, then standard, batch, 42 (%g, %g, %g, "
                   "%g s)", names[k], crit, std, batch, low);
            else
                ok(std < batch && batch < crit && crit < low,
                   "%s, fcfs: the rows in arrival order (%g, %g, %g, %g s)", names[k], std, batch,
                   crit, low);
            support_rows_fini(&r);
            sim_scenario_fini(&sc);
            free(json);
        }
        unlink(trace);
        free(trace);
    }

    char *trace = write_file("arrival_time_s,input_tokens,output_tokens,priority\n0,100,5,\n"
                             "0.1,100,5,urgent\n");
    char *json = trace_scenario(trace, "priority");
    char *why = support_refusal(json, NULL);
    char *want = util_xasprintf("%s:3: field 4 (priority): expected a tier", trace);
    has_str(why, want, "a bad row's priority refuses the scenario, at FILE:LINE");
    free(want);
    free(why);
    free(json);
    unlink(trace);
    free(trace);
}

/* The report's classes carry what the scenario gave them, for --by class. */
static void test_report(void)
{
    char *json = support_scenario_text("queueing-prio-preemptive.json");
    const char *sets[] = {"stop.requests=200", NULL};
    sqlite3 *db = support_run_json(json, sets, false);
    util_diag d;
    util_diag_init(&d);
    an_report r;
    is_int(an_report_compute(db, 1, &r, &d), 0, "the run is reported");
    is_str(r.classes[0].priority, "critical", "the urgent class's tier");
    ok(isnan(r.classes[0].deadline_s), "and no deadline");
    is_str(r.classes[0].tenant, "chat", "and its tenant");
    is_str(r.classes[1].priority, "batch", "the bulk class's tier");
    is_near(r.classes[1].deadline_s, 3600, 0, "and its deadline");
    cJSON *o = an_report_json(&r, true);
    char *text = cJSON_PrintUnformatted(o);
    has_str(text, "\"priority\":\"batch\",\"deadline_s\":3600,\"tenant\":\"jobs\"",
            "report --json gives them with the class's figures");
    free(text);
    cJSON_Delete(o);
    an_report_fini(&r);
    util_diag_fini(&d);
    sqlite3_close(db);
    free(json);
}

int main(void)
{
    if (support_init()) return 1;
    test_report();
    test_orders();
    test_trace_columns();
    test_preemptive_resume();
    test_cobham();
    support_fini();
    return tap_done();
}
