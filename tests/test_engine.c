/*
 * test_engine.c: the engine's mechanics on small scenarios whose every
 * timestamp can be worked out by hand -- continuous batching, the batch,
 * token and KV limits, rejection, stop conditions, closed loops, Ctrl-C,
 * determinism, common random numbers, work per event rather than per
 * token, and what time-outs leave behind for the router.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "support.h"
#include "tap.h"

/* cmp_ok(a, op, b, "description"): a op b on numbers, printing both sides on
 * failure (tap.h has no such assertion; a candidate for it). */
/* The scenarios (tests/scenarios/engine-*.json) share linear costs: 10 ms
 * per iteration, 1 ms per prompt token, 5 ms per decoding iteration plus
 * 1 ms per decoding sequence.  The H100 floor is far below these, so times
 * are exactly the formula. */
static char *scenario(const char *name)
{
    char *file = util_xasprintf("engine-%s.json", name), *text = support_scenario_text(file);
    free(file);
    return text;
}

/* Worked by hand: r0 (t=0) prefills alone: 0.01 + 0.100 = 0.110.  r1 (t=0.05)
 * waits, then prefills while r0 decodes: 0.01 + 0.100 + 0.005 + 0.001 = 0.116,
 * ending at 0.226.  Both decode: 0.017 -> 0.243, r0's third token.  r1 alone:
 * 0.016 -> 0.259. */
static void test_timeline(void)
{
    support_rows r;
    char *json = scenario("timeline");
    int rc = support_run(json, NULL, &r, NULL);
    free(json);
    is_int(rc, 0, "two requests run");
    is_int(r.n, 2, "and leave two rows");
    const sim_request_row *a = support_row(&r, 0), *b = support_row(&r, 1);
    if (!a || !b) return;
    const double eps = 1e-9;
    is_near(a->first_scheduled_s, 0, eps, "r0 is scheduled at once");
    is_near(a->first_token_s, 0.110, eps, "r0's first token after its prefill");
    is_near(a->finish_s, 0.243, eps, "r0 finishes with its third token");
    is_near(b->arrival_s, 0.05, eps, "r1 arrives 1/rate later");
    is_near(b->first_scheduled_s, 0.110, eps, "r1 joins the next iteration (continuous batching)");
    is_near(b->first_token_s, 0.226, eps, "r1's prefill shares an iteration with r0's decode");
    is_near(b->finish_s, 0.259, eps, "r1 finishes alone");
    is_int(a->replica, 0, "completed on replica 0");
    is_str(a->status, SIM_COMPLETED, "completed");
    is_int(r.n_rep, 1, "one replica row");
    is_near(r.rep[0].busy_s, 0.259, eps, "the replica was busy the whole time");
    is_int(r.rep[0].iterations, 4, "in four iterations");
    /* sequences per iteration: 1, 2, 2, 1 over 0.110, 0.116, 0.017, 0.016 s */
    is_near(r.rep[0].batch_seq_s, 0.110 + 2 * 0.116 + 2 * 0.017 + 0.016, 1e-9,
            "batch-seconds integrate the running batch");
    is_near(r.rep[0].prefill_s + r.rep[0].decode_s, r.rep[0].busy_s, 1e-9,
            "prefill and decode time add up to busy time");
    support_rows_fini(&r);
}

/* r0 (t=0, 100 + 50 tokens) decodes alone in 16 ms steps from 0.110 s, one
 * event for the whole stretch.  r1 arrives at 0.5 s, inside step 25, and
 * must join at that step's end, 0.110 + 25 x 0.016 = 0.510 s, exactly as a
 * step-by-step engine would admit it.  Then: a mixed iteration (0.116 s, to
 * 0.626), 23 steps of two (0.017 s: r0 done at 1.017), 26 steps alone
 * (0.016 s: r1 done at 1.433). */
static void test_run_ahead(void)
{
    support_rows r;
    int64_t events;
    const char *sets[] = {"workload.arrival.rate_per_s=2", NULL};
    char *json = scenario("run-ahead");
    support_run(json, sets, &r, &events);
    free(json);
    const sim_request_row *a = support_row(&r, 0), *b = support_row(&r, 1);
    if (!a || !b) return;
    const double eps = 1e-9;
    is_near(b->first_scheduled_s, 0.510, eps,
            "an arrival joins at the end of the step in progress");
    is_near(b->first_token_s, 0.626, eps, "its prefill shares that iteration with r0's decode");
    is_near(a->finish_s, 1.017, eps, "r0 ends after 23 steps of two");
    is_near(b->finish_s, 1.433, eps, "r1 ends after 26 steps alone");
    is_int(r.rep[0].iterations, 1 + 25 + 1 + 23 + 26, "every step is counted");
    cmp_ok(events, <, 15, "100 decode steps took %lld events", (long long)events);
    support_rows_fini(&r);
}

/* Largest number of requests between first scheduled and finished at once. */
static int peak_running(const support_rows *r)
{
    int peak = 0;
    for (size_t i = 0; i < r->n; i++) {
        double t = r->req[i].first_scheduled_s;
        int n = 0;
        for (size_t j = 0; j < r->n; j++)
            n += r->req[j].first_scheduled_s <= t && r->req[j].finish_s > t;
        if (n > peak) peak = n;
    }
    return peak;
}

static void test_limits(void)
{
    support_rows r;
    char *json = scenario("max-batch");
    support_run(json, NULL, &r, NULL);
    free(json);
    is_int(peak_running(&r), 3, "max_batch caps the running batch");
    support_rows_fini(&r);

    /* A 1e-5 GiB GPU holding a 1000-parameter model, no activation reserve:
     * (10737 - 2000) bytes / (256 bytes per token x 16) = 2 blocks of 16
     * tokens; a request of 10 + 5 tokens never needs more than one. */
    char *tiny = scenario("tiny");
    support_run(tiny, NULL, &r, NULL);
    is_int(r.rep[0].kv_capacity_tokens, 32, "KV capacity from memory, weights and KV bytes");
    is_int(peak_running(&r), 2, "admission waits for KV room: two of five users run");
    is_int(r.rep[0].kv_peak_tokens, 32, "KV peak: both blocks in use");
    support_rows_fini(&r);

    const char *too_big[] = {"workload.prompt_tokens.value=30", NULL};
    support_run(tiny, too_big, &r, NULL);
    is_int(r.n, 40, "prompt + output beyond the KV cache: every request has a row");
    bool all_rejected = r.n == 40, none_finished = r.n == 40;
    for (size_t i = 0; i < r.n; i++) {
        all_rejected &= !strcmp(r.req[i].status, SIM_REJECTED);
        none_finished &= isnan(r.req[i].finish_s);
    }
    ok(all_rejected, "prompt + output beyond the KV cache (3 blocks of 2): rejected at "
                     "arrival, not retried");
    ok(none_finished, "and no rejected request has a finish time");
    support_rows_fini(&r);

    const char *over_budget[] = {"workload.prompt_tokens.value=26",
                                 "workload.output_tokens.value=1", NULL};
    support_run(tiny, over_budget, &r, NULL);
    is_int(r.n, 40, "a prompt over max_batched_tokens: every request has a row");
    is_str(r.n ? r.req[0].status : NULL, SIM_REJECTED,
           "a prompt over max_batched_tokens is rejected");
    support_rows_fini(&r);

    /* All rejected, no think time, stopped only by duration: the error
     * reply's 1 ms round trip keeps time moving (no spin): 5 users x 1000. */
    const char *spin[] = {"workload.prompt_tokens.value=30", "stop={\"duration_s\": 1}", NULL};
    support_run(tiny, spin, &r, NULL);
    is_int(r.n, 5 * 1000, "rejected closed-loop users retry after 1 ms, not in zero time");
    support_rows_fini(&r);

    const char *over_context[] = {"cluster.model.max_context=12", NULL};
    support_run(tiny, over_context, &r, NULL);
    is_int(r.n, 40, "prompt + output beyond the context window: every request has a row");
    is_str(r.n ? r.req[0].status : NULL, SIM_REJECTED,
           "prompt + output beyond the model's context window is rejected");
    support_rows_fini(&r);
    free(tiny);
}

static void test_stops_and_loops(void)
{
    support_rows r;
    char *json = scenario("duration");
    support_run(json, NULL, &r, NULL);
    free(json);
    double last = 0;
    for (size_t i = 0; i < r.n; i++)
        last = fmax(last, r.req[i].arrival_s);
    is_int(r.n, 50, "duration 5 s at 10/s: arrivals at 0, 0.1, ..., 4.9");
    cmp_ok(last, <, 5, "no arrival at or after stop.duration_s");
    support_rows_fini(&r);

    json = scenario("think");
    support_run(json, NULL, &r, NULL);
    free(json);
    is_int(r.n, 20, "a closed-loop user sends every request");
    bool chained = r.n == 20;
    for (int64_t id = 1; id < 20 && chained; id++)
        chained &=
            fabs(support_row(&r, id)->arrival_s - (support_row(&r, id - 1)->finish_s + 1)) < 1e-9;
    ok(chained, "a closed-loop user sends think_s after its last reply");
    support_rows_fini(&r);
}

static void test_interrupt(void)
{
    volatile sig_atomic_t stop = 0;
    support_rows r = {.stop_after = 50, .stop_flag = &stop};
    sim_scenario sc;
    char *json = scenario("interrupt");
    support_scenario(json, NULL, &sc, NULL);
    free(json);
    int rc = support_run_rows(&sc, &r, NULL);
    is_int(rc, UTIL_EINTR, "a raised stop flag ends the run as interrupted");
    int completed = 0, unfinished = 0, unfinished_open = 0;
    int64_t max_id = -1;
    for (size_t i = 0; i < r.n; i++) {
        completed += !strcmp(r.req[i].status, SIM_COMPLETED);
        if (!strcmp(r.req[i].status, SIM_UNFINISHED)) {
            unfinished++;
            unfinished_open += isnan(r.req[i].finish_s);
        }
        if (r.req[i].id > max_id) max_id = r.req[i].id;
    }
    cmp_ok(completed, >=, 50, "finished rows kept");
    cmp_ok(unfinished, >, 0, "in-flight ones marked unfinished");
    is_int(unfinished_open, unfinished, "no unfinished row has a finish time");
    is_int(completed + unfinished, max_id + 1, "every request that arrived has a row");
    support_rows_fini(&r);
    sim_scenario_fini(&sc);
}

static bool same_rows(const support_rows *a, const support_rows *b, bool lengths_only)
{
    if (a->n != b->n) return false;
    for (size_t i = 0; i < a->n; i++) {
        const sim_request_row *x = support_row(a, (int64_t)i), *y = support_row(b, (int64_t)i);
        if (!x || !y || x->arrival_s != y->arrival_s || x->prompt_tokens != y->prompt_tokens ||
            x->output_tokens != y->output_tokens)
            return false;
        if (!lengths_only && (x->finish_s != y->finish_s || x->first_token_s != y->first_token_s))
            return false;
    }
    return true;
}

static void test_determinism(void)
{
    char *json = scenario("determinism");
    support_rows a, b, c;
    int64_t ea, eb;
    support_run(json, NULL, &a, &ea);
    support_run(json, NULL, &b, &eb);
    ok(same_rows(&a, &b, false), "same scenario and seed: identical rows");
    is_int(ea, eb, "and events");
    const char *two[] = {"cluster.replicas=2", NULL};
    support_run(json, two, &c, NULL);
    ok(same_rows(&a, &c, true), "a second replica leaves every arrival and length unchanged");
    ok(!same_rows(&a, &c, false), "while the timings change");
    support_rows_fini(&a);
    support_rows_fini(&b);
    support_rows_fini(&c);
    free(json);
}

/* 64 users each decoding 200 tokens in one batch: per-token bookkeeping
 * would need 64 x 200 = 12,800 updates per round; the engine needs one
 * event per iteration plus a few per request. */
static void test_work_per_event(void)
{
    support_rows r;
    int64_t events;
    char *json = scenario("work-per-event");
    support_run(json, NULL, &r, &events);
    free(json);
    int64_t iterations = r.rep[0].iterations, tokens = 640 * 200;
    tap_diag("%lld events, %lld iterations, %lld output tokens", (long long)events,
             (long long)iterations, (long long)tokens);
    cmp_ok(events, <=, iterations + 2 * 640, "events = iterations + O(requests)");
    cmp_ok(events * 20, <, tokens, "far fewer events than tokens");
    support_rows_fini(&r);
}

/* Time-outs in a queue leave no phantom load.  Two replicas, one sequence
 * at a time, least_outstanding; a request (10-token prompt, 1 token) takes
 * one 20 ms iteration, and its client gives up after 30 ms.  Five arrive at
 * 0: replica 0 gets r0, r2, r4, replica 1 r1, r3 (ties go to the lower
 * index).  r0 and r1 finish at 0.02; r2 and r3 time out while prefilling,
 * r4 while queued.  The later requests each find both replicas idle, so the
 * tie sends them all to replica 0 -- where a time-out in the queue that
 * left its request counted as outstanding would send them all to replica
 * 1, forever. */
static void test_timeout_routing(void)
{
    char *path = support_write_trace("0,10,1\n0,10,1\n0,10,1\n0,10,1\n0,10,1\n"
                             "1,10,1\n2,10,1\n3,10,1\n4,10,1\n5,10,1\n");
    char *at = util_xasprintf("workload.arrival.path=%s", path);
    char *json = scenario("timeout-routing");
    support_rows r;
    int rc = support_run(json, (const char *[]){at, NULL}, &r, NULL);
    free(json);
    free(at);
    is_int(rc, 0, "ten requests run");
    int timed_out = 0, later_completed = 0, on_0 = 0, later = 0;
    for (size_t i = 0; i < r.n; i++) {
        const sim_request_row *q = &r.req[i];
        if (q->id < 5) {
            timed_out += !strcmp(q->status, SIM_TIMED_OUT);
            continue;
        }
        later++;
        later_completed += !strcmp(q->status, SIM_COMPLETED);
        on_0 += q->replica == 0;
    }
    is_int(timed_out, 3, "three of the burst time out");
    const sim_request_row *r4 = support_row(&r, 4);
    is_str(r4 ? r4->status : NULL, SIM_TIMED_OUT, "r4 times out");
    ok(r4 && isnan(r4->first_scheduled_s), "r4 is never scheduled: it times out in the queue");
    is_int(later, 5, "five later requests");
    is_int(later_completed, 5, "every later request completes (%d of %d did)", later_completed,
           later);
    is_int(on_0, 5, "each finds both replicas idle and goes to replica 0 (%d of %d did)", on_0,
           later);
    support_rows_fini(&r);
    unlink(path);
    free(path);
}

int main(void)
{
    if (support_init()) return 1;
    test_timeline();
    test_run_ahead();
    test_limits();
    test_stops_and_loops();
    test_interrupt();
    test_determinism();
    test_work_per_event();
    test_timeout_routing();
    support_fini();
    return tap_done();
}
