/*
 * test_engine.c: the engine's mechanics on small scenarios whose every
 * timestamp can be worked out by hand -- continuous batching, the batch,
 * token and KV limits, rejection, stop conditions, closed loops, Ctrl-C,
 * determinism, common random numbers, and work per event rather than per
 * token.
 */
#include <math.h>
#include <stdlib.h>

#include "support.h"
#include "tap.h"

/* Linear costs: 10 ms per iteration, 1 ms per prompt token, 5 ms per
 * decoding iteration plus 1 ms per decoding sequence.  The H100 floor is far
 * below these, so times are exactly the formula. */
#define LINEAR                                                                                     \
    "\"cost_model\": {\"kind\": \"linear\", \"iteration_s\": 0.01, \"prefill_s_per_token\": "      \
    "0.001, \"decode_step_s\": 0.005, \"decode_s_per_seq\": 0.001}"

static const char *scenario_json(const char *stop, const char *cluster_extra, const char *arrival,
                                 const char *prompt, const char *output)
{
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"stop\": %s, \"cluster\": {\"gpu\": \"h100-sxm\", \"model\": \"llama-3.1-8b\", "
             "%s%s}, \"workload\": {\"arrival\": %s, \"prompt_tokens\": %s, \"output_tokens\": "
             "%s}}",
             stop, LINEAR, cluster_extra, arrival, prompt, output);
    return buf;
}

/* Worked by hand: r0 (t=0) prefills alone: 0.01 + 0.100 = 0.110.  r1 (t=0.05)
 * waits, then prefills while r0 decodes: 0.01 + 0.100 + 0.005 + 0.001 = 0.116,
 * ending at 0.226.  Both decode: 0.017 -> 0.243, r0's third token.  r1 alone:
 * 0.016 -> 0.259. */
static void test_timeline(void)
{
    support_rows r;
    int rc = support_run(scenario_json("{\"requests\": 2}", "",
                                       "{\"process\": \"constant\", "
                                       "\"rate_per_s\": 20}",
                                       "{\"dist\": \"fixed\", \"value\": 100}",
                                       "{\"dist\": \"fixed\", \"value\": 3}"),
                         NULL, &r, NULL);
    ok(rc == 0 && r.n == 2, "two requests run");
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
    ok(a->replica == 0 && !strcmp(a->status, SIM_COMPLETED), "completed on replica 0");
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
    support_run(scenario_json("{\"requests\": 2}", "",
                              "{\"process\": \"constant\", \"rate_per_s\": 1}",
                              "{\"dist\": \"fixed\", \"value\": 100}",
                              "{\"dist\": \"fixed\", \"value\": 50}"),
                sets, &r, &events);
    const sim_request_row *a = support_row(&r, 0), *b = support_row(&r, 1);
    if (!a || !b) return;
    const double eps = 1e-9;
    is_near(b->first_scheduled_s, 0.510, eps,
            "an arrival joins at the end of the step in progress");
    is_near(b->first_token_s, 0.626, eps, "its prefill shares that iteration with r0's decode");
    is_near(a->finish_s, 1.017, eps, "r0 ends after 23 steps of two");
    is_near(b->finish_s, 1.433, eps, "r1 ends after 26 steps alone");
    is_int(r.rep[0].iterations, 1 + 25 + 1 + 23 + 26, "every step is counted");
    ok(events < 15, "100 decode steps took %lld events", (long long)events);
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
    const char *closed = "{\"process\": \"closed\", \"users\": 10}";
    support_run(scenario_json("{\"requests\": 60}", ", \"scheduler\": {\"max_batch\": 3}", closed,
                              "{\"dist\": \"uniform\", \"min\": 5, \"max\": 50}",
                              "{\"dist\": \"uniform\", \"min\": 1, \"max\": 8}"),
                NULL, &r, NULL);
    is_int(peak_running(&r), 3, "max_batch caps the running batch");
    support_rows_fini(&r);

    /* A 1e-5 GiB GPU holding a 1000-parameter model, no activation reserve:
     * (10737 - 2000) bytes / (256 bytes per token x 16) = 2 blocks of 16
     * tokens; a request of 10 + 5 tokens never needs more than one. */
    const char *tiny =
        "{\"stop\": {\"requests\": 40}, \"cluster\": {\"gpu\": {\"bf16_tflops\": 100, "
        "\"memory_gib\": 1e-5, \"memory_bw_tbs\": 1, \"tdp_w\": 100, \"idle_w\": 10, "
        "\"usd_per_hour\": 1}, \"model\": {\"layers\": 1, \"hidden\": 64, \"heads\": 1, "
        "\"kv_heads\": 1, \"head_dim\": 64, \"ffn\": 64, \"vocab\": 100, \"max_context\": 40, "
        "\"params_b\": 1e-6}, \"scheduler\": {\"gpu_memory_utilization\": 1, "
        "\"max_batched_tokens\": 25, \"activation_reserve_gib\": 0}, " LINEAR
        "}, \"workload\": {\"arrival\": {\"process\": "
        "\"closed\", \"users\": 5}, \"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 10}, "
        "\"output_tokens\": {\"dist\": \"fixed\", \"value\": 5}}}";
    support_run(tiny, NULL, &r, NULL);
    is_int(r.rep[0].kv_capacity_tokens, 32, "KV capacity from memory, weights and KV bytes");
    is_int(peak_running(&r), 2, "admission waits for KV room: two of five users run");
    is_int(r.rep[0].kv_peak_tokens, 32, "KV peak: both blocks in use");
    support_rows_fini(&r);

    const char *too_big[] = {"workload.prompt_tokens.value=30", NULL};
    support_run(tiny, too_big, &r, NULL);
    bool all_rejected = r.n == 40;
    for (size_t i = 0; i < r.n; i++)
        all_rejected &= !strcmp(r.req[i].status, SIM_REJECTED) && isnan(r.req[i].finish_s);
    ok(all_rejected, "prompt + output beyond the KV cache (3 blocks of 2): rejected at "
                     "arrival, not retried");
    support_rows_fini(&r);

    const char *over_budget[] = {"workload.prompt_tokens.value=26",
                                 "workload.output_tokens.value=1", NULL};
    support_run(tiny, over_budget, &r, NULL);
    ok(r.n == 40 && !strcmp(r.req[0].status, SIM_REJECTED),
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
    ok(r.n == 40 && !strcmp(r.req[0].status, SIM_REJECTED),
       "prompt + output beyond the model's context window is rejected");
    support_rows_fini(&r);
}

static void test_stops_and_loops(void)
{
    support_rows r;
    support_run(scenario_json(
                    "{\"duration_s\": 5}", "", "{\"process\": \"constant\", \"rate_per_s\": 10}",
                    "{\"dist\": \"fixed\", \"value\": 10}", "{\"dist\": \"fixed\", \"value\": 2}"),
                NULL, &r, NULL);
    double last = 0;
    for (size_t i = 0; i < r.n; i++)
        last = fmax(last, r.req[i].arrival_s);
    is_int(r.n, 50, "duration 5 s at 10/s: arrivals at 0, 0.1, ..., 4.9");
    ok(last < 5, "no arrival at or after stop.duration_s");
    support_rows_fini(&r);

    support_run(scenario_json("{\"requests\": 20}", "",
                              "{\"process\": \"closed\", \"users\": 1, "
                              "\"think_s\": {\"dist\": \"fixed\", \"value\": 1}}",
                              "{\"dist\": \"fixed\", \"value\": 10}",
                              "{\"dist\": \"fixed\", \"value\": 2}"),
                NULL, &r, NULL);
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
    support_scenario(scenario_json("{\"requests\": 100000}", "",
                                   "{\"process\": \"poisson\", "
                                   "\"rate_per_s\": 50}",
                                   "{\"dist\": \"fixed\", \"value\": 10}",
                                   "{\"dist\": \"fixed\", \"value\": 20}"),
                     NULL, &sc, NULL);
    int rc = support_run_rows(&sc, &r, NULL);
    is_int(rc, UTIL_EINTR, "a raised stop flag ends the run as interrupted");
    int completed = 0, unfinished = 0;
    int64_t max_id = -1;
    for (size_t i = 0; i < r.n; i++) {
        completed += !strcmp(r.req[i].status, SIM_COMPLETED);
        unfinished += !strcmp(r.req[i].status, SIM_UNFINISHED) && isnan(r.req[i].finish_s);
        if (r.req[i].id > max_id) max_id = r.req[i].id;
    }
    ok(completed >= 50 && unfinished > 0, "finished rows kept, in-flight ones marked unfinished");
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
    const char *json = scenario_json("{\"requests\": 3000}", "",
                                     "{\"process\": \"gamma\", "
                                     "\"rate_per_s\": 30, \"cv\": 2}",
                                     "{\"dist\": \"lognormal\", \"median\": 200, \"sigma\": 1}",
                                     "{\"dist\": \"exponential\", \"mean\": 30}");
    support_rows a, b, c;
    int64_t ea, eb;
    support_run(json, NULL, &a, &ea);
    support_run(json, NULL, &b, &eb);
    ok(same_rows(&a, &b, false) && ea == eb, "same scenario and seed: identical rows and events");
    const char *two[] = {"cluster.replicas=2", NULL};
    support_run(json, two, &c, NULL);
    ok(same_rows(&a, &c, true), "a second replica leaves every arrival and length unchanged");
    ok(!same_rows(&a, &c, false), "while the timings change");
    support_rows_fini(&a);
    support_rows_fini(&b);
    support_rows_fini(&c);
}

/* 64 users each decoding 200 tokens in one batch: per-token bookkeeping
 * would need 64 x 200 = 12,800 updates per round; the engine needs one
 * event per iteration plus a few per request. */
static void test_work_per_event(void)
{
    support_rows r;
    int64_t events;
    support_run(scenario_json("{\"requests\": 640}", ", \"scheduler\": {\"max_batch\": 64}",
                              "{\"process\": \"closed\", \"users\": 64}",
                              "{\"dist\": \"fixed\", \"value\": 16}",
                              "{\"dist\": \"fixed\", \"value\": 200}"),
                NULL, &r, &events);
    int64_t iterations = r.rep[0].iterations, tokens = 640 * 200;
    tap_diag("%lld events, %lld iterations, %lld output tokens", (long long)events,
             (long long)iterations, (long long)tokens);
    ok(events <= iterations + 2 * 640, "events = iterations + O(requests)");
    ok(events * 20 < tokens, "far fewer events than tokens");
    support_rows_fini(&r);
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
    support_fini();
    return tap_done();
}
