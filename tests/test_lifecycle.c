/*
 * test_lifecycle.c: a replica's life after its start-up (sim/lifecycle.c,
 * sim/fleet.c) -- cluster.lifecycle.warm_up_requests and warm_up_factor,
 * and cluster.lifecycle.drain.
 *
 * Warm-up: one replica on a linear cost model serves requests that come
 * one at a time, fails at 5 s and is replaced, ready at 15 s.  Every
 * iteration's time is then the linear model's, known exactly from its
 * prompt tokens and decoders; the replacement's, until it has served
 * warm_up_requests requests, is warm_up_factor times it, to the
 * nanosecond, and the scenario's own replica's never is.
 *
 * Drain: replica 0 of two, each holding a queue, is let go at 3 s in each
 * mode (the fleet's internal change, as test_fleet.c), and, by the key, a
 * spot notice lets it go with drain "stop".  finish admits from its queue
 * after 3 s; hand_back admits nothing after 3 s but runs its batch out;
 * stop retires at 3 s exactly, nothing completed there after it, and its
 * requests start again on replica 1.  Every request completes in each.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim_int.h"
#include "support.h"
#include "tap.h"

#define S(x) ((int64_t)((x) * 1e9))

/* The linear model's coefficients, as LINEAR writes them. */
#define IT_S 0.01
#define PREFILL_S 0.0001
#define DECODE_S 0.01
#define SEQ_S 0.0001

#define LINEAR                                                                                     \
    "\"cost_model\": {\"kind\": \"linear\", \"iteration_s\": 0.01, \"prefill_s_per_token\": "      \
    "0.0001, \"decode_step_s\": 0.01, \"decode_s_per_seq\": 0.0001}"

/* One replica, failed at 5 s and replaced, ready at 15 s; the trace at %s. */
#define COLD                                                                                       \
    "{\"seed\": 1, \"cluster\": {\"engine\": \"ideal\", \"gpu\": \"h100-sxm\", \"model\": "      \
    "\"llama-3.1-8b\", \"replicas\": 1, " LINEAR ", \"failures\": {\"at_s\": [5], "               \
    "\"repair_s\": 0}, \"lifecycle\": {\"load_s\": 10, \"warm_up_requests\": 2, "                 \
    "\"warm_up_factor\": 3}}, \"workload\": {\"arrival\": {\"process\": \"trace\", \"path\": "    \
    "\"%s\"}}}"

/* Two replicas, Poisson arrivals at 60/s for 10 s: each holds a queue. */
#define BUSY                                                                                       \
    "{\"seed\": 3, \"stop\": {\"duration_s\": 10}, \"cluster\": {\"engine\": \"ideal\", "          \
    "\"gpu\": \"h100-sxm\", \"model\": \"llama-3.1-8b\", \"replicas\": 2, " LINEAR "}, "           \
    "\"workload\": {\"arrival\": {\"process\": \"poisson\", \"rate_per_s\": 60}, "                 \
    "\"prompt_tokens\": {\"dist\": \"exponential\", \"mean\": 300, \"max\": 4000}, "               \
    "\"output_tokens\": {\"dist\": \"exponential\", \"mean\": 80, \"max\": 1000}}}"

/* The linear model's time for an iteration of these prompt tokens and decoders. */
static double linear_s(const sim_iteration_row *it)
{
    double t = IT_S + PREFILL_S * it->prefill_tokens;
    return it->decode_seqs ? t + DECODE_S + SEQ_S * it->decode_seqs : t;
}

/* Runs json with sets, every iteration kept; the changes scheduled first. */
static int run(const char *json, const char *const *sets, const int64_t *at,
               const sim__change *changes, int n, support_rows *rows)
{
    sim_scenario sc;
    memset(rows, 0, sizeof *rows);
    if (support_scenario(json, sets, &sc, NULL)) return -100;
    sim_sink sink = support_capture_steps(rows);
    sim_engine *e = sim_engine_create(&sc, &sink);
    sim_engine_limit_in_flight(e, 0);
    for (int i = 0; i < n; i++) sim__fl_schedule(e, at[i], &changes[i]);
    int rc = sim_engine_run(e, NULL, NULL, NULL);
    sim_engine_destroy(e);
    sim_scenario_fini(&sc);
    return rc;
}

/* Request id's row (a blank one if it has none: the checks fail). */
static const sim_request_row *request_row(const support_rows *r, int64_t id)
{
    static const sim_request_row none = {.status = "none"};
    const sim_request_row *q = support_row(r, id);
    return q ? q : &none;
}

/* Iterations of replica id starting in [from, to) that took `factor` times
 * the linear model's time (to 2 ns: each end is rounded to one) and those
 * that did not; *n counts them all. */
static int off_factor(const support_rows *r, int id, double from, double to, double factor, int *n)
{
    int wrong = 0;
    *n = 0;
    for (size_t i = 0; i < r->n_it; i++) {
        const sim_iteration_row *it = &r->it[i];
        if (it->replica != id || it->start_s < from || it->start_s >= to) continue;
        (*n)++;
        double want = factor * linear_s(it), got = it->end_s - it->start_s;
        if (fabs(got - want) > 2e-9) {
            if (wrong++ < 3)
                tap_diag("replica %d at %.9g s: %.9g s, not %.9g s", id, it->start_s, got, want);
        }
    }
    return wrong;
}

static void test_warm_up(void)
{
    /* 100-token prompts, 20 tokens out: each alone, done within 0.5 s */
    char *trace = support_write_trace("1,100,20\n2,100,20\n20,100,20\n25,100,20\n30,100,20\n"
                                      "35,100,20\n");
    char *json = util_xasprintf(COLD, trace);
    support_rows r;
    is_int(run(json, NULL, NULL, NULL, 0, &r), 0, "warm-up: the run completes");
    is_int((long long)r.n, 6, "warm-up: six requests");
    int done = 0;
    for (int64_t id = 0; id < 6; id++) done += !strcmp(request_row(&r, id)->status, SIM_COMPLETED);
    is_int(done, 6, "warm-up: all completed");
    int n;
    is_int(off_factor(&r, 0, 0, 5, 1, &n), 0, "warm-up: the scenario's own replica starts warm");
    is_int(n, 40, "warm-up: 20 iterations each for its two requests");
    /* the replacement's first two requests, served from 20 s and 25 s */
    double second_done = request_row(&r, 3)->finish_s;
    is_int(off_factor(&r, 1, 0, second_done, 3, &n), 0,
           "warm-up: the replacement's iterations take 3 x the linear model's until it has "
           "served 2 requests");
    is_int(n, 40, "warm-up: 40 of them");
    is_int(off_factor(&r, 1, second_done, 1e9, 1, &n), 0,
           "warm-up: then the linear model's own time");
    is_int(n, 40, "warm-up: 40 of them too");
    /* the first step: prefill of 100 tokens, 3 x (0.01 + 100 x 0.0001) */
    const sim_request_row *first = request_row(&r, 2);
    is_near(first->first_token_s - first->arrival_s, 0.06, 2e-9,
            "warm-up: the replacement's first prefill takes 0.06 s");
    support_rows_fini(&r);
    free(json);
    unlink(trace);
    free(trace);
}

/* Replica id's row (a blank one if it has none: the checks fail). */
static const sim_replica_row *replica_row(const support_rows *r, int id)
{
    static const sim_replica_row none = {.replica = -1, .end_reason = "none", .retired_s = -1};
    for (int i = 0; i < r->n_rep; i++)
        if (r->rep[i].replica == id) return &r->rep[i];
    return &none;
}

/* Rows of requests replica 1 served. */
static int on_replica_1(const support_rows *r)
{
    int n = 0;
    for (size_t i = 0; i < r->n; i++) n += r->req[i].replica == 1;
    return n;
}

/* Requests of replica 0 first scheduled, and completed, after t. */
static void after(const support_rows *r, double t, int *scheduled, int *completed)
{
    *scheduled = *completed = 0;
    for (size_t i = 0; i < r->n; i++) {
        const sim_request_row *q = &r->req[i];
        if (q->replica != 0) continue;
        *scheduled += q->first_scheduled_s > t + 1e-9;
        *completed += q->finish_s > t + 1e-9;
    }
}

static int completed(const support_rows *r)
{
    int n = 0;
    for (size_t i = 0; i < r->n; i++) n += !strcmp(r->req[i].status, SIM_COMPLETED);
    return n;
}

/* Replica 0 let go at 3 s, how. */
static void drained(const char *what, sim__drain how, support_rows *r)
{
    const int64_t at[] = {S(3)};
    const sim__change ch[] = {{.kind = SIM__DRAIN, .replica = 0, .how = how}};
    is_int(run(BUSY, NULL, at, ch, 1, r), 0, "%s: the run completes", what);
    is_int(completed(r), (int)r->n, "%s: every request completes", what);
    ok(!strcmp(replica_row(r, 0)->end_reason, SIM_DRAINED), "%s: replica 0 ended drained", what);
}

static void test_drain(void)
{
    support_rows r;
    int scheduled, done;
    drained("finish", SIM__DRAIN_FINISH, &r);
    after(&r, 3, &scheduled, &done);
    cmp_ok(scheduled, >, 0, "finish: replica 0 admits its queue after 3 s");
    int finish_on_1 = on_replica_1(&r), finish_held = done;
    size_t finish_n = r.n;
    support_rows_fini(&r);

    drained("hand_back", SIM__DRAIN_HAND_BACK, &r);
    after(&r, 3, &scheduled, &done);
    is_int(scheduled, 0, "hand_back: replica 0 admits nothing after 3 s");
    cmp_ok(done, >, 0, "hand_back: it finishes its batch after 3 s");
    cmp_ok(replica_row(&r, 0)->retired_s, >, 3, "hand_back: and retires after");
    support_rows_fini(&r);

    drained("stop", SIM__DRAIN_STOP, &r);
    after(&r, 3, &scheduled, &done);
    is_int(done, 0, "stop: nothing completes on replica 0 after 3 s");
    is_near(replica_row(&r, 0)->retired_s, 3, 0, "stop: it retires at 3 s exactly");
    /* the same arrivals (one seed): what replica 0 held at 3 s, replica 1 served */
    is_int((long long)r.n, (long long)finish_n, "stop: as many requests as under finish");
    cmp_ok(finish_held, >, 0, "stop: replica 0 held requests at 3 s");
    is_int(on_replica_1(&r) - finish_on_1, finish_held,
           "stop: replica 1 served what replica 0 held at 3 s and finished under finish");
    support_rows_fini(&r);
}

/* The key: a spot notice at 3 s lets replica 0 go as cluster.lifecycle.drain says. */
static void test_key(void)
{
    const char *sets[] = {"cluster.failures.spot={\"at_s\": [3]}",
                          "cluster.lifecycle.drain=\"stop\"", NULL};
    support_rows r;
    is_int(run(BUSY, sets, NULL, NULL, 0, &r), 0, "drain stop, spot: the run completes");
    is_int(completed(&r), (int)r.n, "drain stop, spot: every request completes");
    const sim_replica_row *r0 = replica_row(&r, 0);
    ok(!strcmp(r0->end_reason, SIM_TAKEN_BACK), "drain stop, spot: replica 0 ended taken back");
    is_near(r0->drain_s, 3, 0, "drain stop, spot: its drain began at the notice, 3 s");
    is_near(r0->retired_s, 3, 0, "drain stop, spot: at the notice, not 120 s later");
    support_rows_fini(&r);
}

int main(void)
{
    if (support_init()) return 1;
    test_warm_up();
    test_drain();
    test_key();
    support_fini();
    return tap_done();
}
