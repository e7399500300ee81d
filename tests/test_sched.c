/*
 * test_sched.c: the scheduler families on timelines worked out by hand with
 * the linear cost model (10 ms per iteration, 1 ms per prompt token, 5 ms per
 * decoding iteration plus 1 ms per decoding sequence; the H100's datasheet
 * floor is far below these).
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "tap.h"

#define EPS 1e-9

/* Runs two requests of the given lengths, the second 1/rate after the
 * first, into r: tests/scenarios/sched-two.json with these overrides, then
 * the NULL-terminated extra ones (up to 4, or NULL). */
static void two(const char *scheduler, double rate, int prompt, int output,
                const char *const *extra, support_rows *r)
{
    char *json = support_scenario_text("sched-two.json");
    char *own[4] = {util_xasprintf("cluster.scheduler=%s", scheduler),
                    util_xasprintf("workload.arrival.rate_per_s=%g", rate),
                    util_xasprintf("workload.prompt_tokens.value=%d", prompt),
                    util_xasprintf("workload.output_tokens.value=%d", output)};
    const char *sets[9] = {own[0], own[1], own[2], own[3]};
    for (int i = 0; extra && extra[i]; i++) {
        assert(i < 4);
        sets[4 + i] = extra[i];
    }
    support_run(json, sets, r, NULL);
    for (int i = 0; i < 4; i++) free(own[i]);
    free(json);
}

/* The row of request id; a row of NaNs if there is none (a failing check
 * then says so instead of crashing). */
static const sim_request_row *req(const support_rows *r, int64_t id)
{
    static const sim_request_row none = {
        .first_token_s = NAN, .finish_s = NAN, .first_scheduled_s = NAN};
    const sim_request_row *row = support_row(r, id);
    return row ? row : &none;
}

/* Budget 64 tokens.  r0 (150-token prompt, t=0): chunks of 64 (0.074 s) and
 * 64 (to 0.148).  r1 arrives at 0.1.  At 0.148: r0's last 22 and r1's first
 * 42 (0.074 s, to 0.222): r0's first token comes at the end of its last
 * chunk.  Then r0 decodes (1 token of the budget) beside r1's next 63
 * (0.079, to 0.301), and beside r1's last 45 (0.061, to 0.362): r0's third
 * and last token, r1's first.  r1 decodes alone twice (0.016): 0.394. */
static void test_chunked(void)
{
    support_rows r;
    two("{\"policy\": \"chunked\", \"max_batched_tokens\": 64, \"max_batch\": 4}", 10, 150, 3,
        NULL, &r);
    is_near(req(&r, 0)->first_token_s, 0.222, EPS,
            "chunked: first token at the end of the last chunk");
    is_near(req(&r, 1)->first_scheduled_s, 0.148, EPS, "a new prompt fills the budget left over");
    is_near(req(&r, 0)->finish_s, 0.362, EPS, "decodes share iterations with chunks");
    is_near(req(&r, 1)->first_token_s, 0.362, EPS, "a prompt spans three iterations");
    is_near(req(&r, 1)->finish_s, 0.394, EPS, "then decodes alone");
    is_int(r.rep[0].prefill_tokens, 300, "every prompt token prefilled once");
    support_rows_fini(&r);
}

/* vLLM v0: r0 prefills (0.110); r1 (t=0.05) is prefilled alone next, r0
 * waiting (0.110, to 0.220); then both decode (0.017 x 2): 0.254.  The
 * continuous scheduler would have finished r0 at 0.243. */
static void test_prefill_first(void)
{
    support_rows r;
    two("{\"policy\": \"prefill_first\"}", 20, 100, 3, NULL, &r);
    is_near(req(&r, 1)->first_token_s, 0.220, EPS,
            "prefill_first: a prompt gets an iteration of its own");
    is_near(req(&r, 0)->finish_s, 0.254, EPS, "while the decoders wait");
    is_near(req(&r, 1)->finish_s, 0.254, EPS, "then they decode together");
    support_rows_fini(&r);
    two("{\"policy\": \"continuous\"}", 20, 100, 3, NULL, &r);
    is_near(req(&r, 0)->finish_s, 0.243, EPS, "continuous mixes them (0.243)");
    support_rows_fini(&r);
}

/* Static, batches of 2, waiting up to 1 s: r0 (t=0) and r1 (t=0.05) form a
 * batch when r1 arrives: prefill 0.01 + 0.2 (to 0.26), two decodes of two
 * (0.017): 0.294.  r2 (t=0.1) waits for that batch and then for its own to
 * fill, until 0.1 + 1 s: prefill 0.11 (1.21), decodes 0.016 x 2: 1.242. */
static void test_static(void)
{
    support_rows r;
    const char *sets[] = {"stop.requests=3", NULL};
    two("{\"policy\": \"static\", \"max_batch\": 2, \"batch_timeout_s\": 1}", 20, 100, 3, sets,
        &r);
    is_near(req(&r, 0)->first_scheduled_s, 0.05, EPS, "static: a full batch starts at once");
    is_near(req(&r, 0)->first_token_s, 0.26, EPS, "its prompts prefill together");
    is_near(req(&r, 1)->finish_s, 0.294, EPS, "and decode together");
    is_near(req(&r, 2)->first_scheduled_s, 1.1, EPS, "a lone request waits batch_timeout_s");
    is_near(req(&r, 2)->finish_s, 1.242, EPS, "then runs as a batch of one");
    support_rows_fini(&r);
}

/* Padding: a static batch computes for every slot until its longest member
 * is done, so a short reply in a batch with a long one costs decode steps
 * as if it were still there. */
static void test_static_padding(void)
{
    support_rows a, b;
    const char *sets[] = {
        "workload.output_tokens={\"dist\": \"uniform\", \"min\": 2, \"max\": 200}",
        "stop.requests=40", NULL};
    two("{\"policy\": \"static\", \"max_batch\": 8}", 1000, 50, 3, sets, &a);
    two("{\"policy\": \"continuous\", \"max_batch\": 8}", 1000, 50, 3, sets, &b);
    ok(a.rep[0].batch_seq_s > b.rep[0].batch_seq_s,
       "static pads finished slots: %.2f sequence-seconds against continuous's %.2f",
       a.rep[0].batch_seq_s, b.rep[0].batch_seq_s);
    is_int(a.rep[0].decode_tokens, b.rep[0].decode_tokens, "but produces the same tokens (%lld)",
           (long long)a.rep[0].decode_tokens);
    support_rows_fini(&a);
    support_rows_fini(&b);
}

/* A static batch whose members all end with their prefill -- 1-token
 * replies -- ends there, and its KV reservation with it.  20 blocks of 16
 * tokens hold one batch of two 101-token reservations (7 blocks each), not
 * two.  Arrivals every 0.2 s: each batch starts when its second member
 * arrives and prefills in 0.21 s, so r9 (t = 1.8) finishes at 2.01. */
static void test_static_one_token(void)
{
    support_rows r;
    const char *sets[] = {"stop.requests=10", NULL};
    two("{\"policy\": \"static\", \"max_batch\": 2, \"batch_timeout_s\": 1, "
        "\"kv_blocks\": 20}", 5, 100, 1, sets, &r);
    int completed = 0;
    for (size_t i = 0; i < r.n; i++) completed += !strcmp(r.req[i].status, SIM_COMPLETED);
    is_int(completed, 10, "static, 1-token replies: every request completes (%d of 10)",
           completed);
    is_near(req(&r, 0)->finish_s, 0.41, EPS, "the first batch ends with its prefill");
    is_near(req(&r, 9)->first_scheduled_s, 1.8, EPS,
            "and gives its blocks back: every later batch starts when it fills");
    is_near(req(&r, 9)->finish_s, 2.01, EPS, "the last ends at 2.01 s");
    support_rows_fini(&r);
}

/* A static batch whose members all time out during its prefill gives its
 * KV reservation back.  Two closed-loop users send 1000-token prompts at 0:
 * a batch of two reserving 63 blocks each of the 150, prefilled from 0 to
 * 2.01 s; both clients give up at 1.5 s.  One more request (stop.requests
 * 3) comes a think time later, at 2.5: it waits batch_timeout_s for a
 * partner, prefills alone (1.01 s, to 3.61) and decodes twice (16 ms each):
 * done at 3.642, before its own time-out at 4.0 -- if the dead batch's 126
 * blocks came back. */
static void test_static_timeouts(void)
{
    support_rows r;
    const char *sets[] = {
        "stop.requests=3",
        "workload.arrival={\"process\": \"closed\", \"users\": 2, "
        "\"think_s\": {\"dist\": \"fixed\", \"value\": 1}}",
        "workload.timeout_s=1.5", NULL};
    two("{\"policy\": \"static\", \"max_batch\": 2, \"batch_timeout_s\": 0.1, "
        "\"kv_blocks\": 150}", 1, 1000, 3, sets, &r);
    is_str(req(&r, 0)->status, SIM_TIMED_OUT, "static: a batch's members time out in prefill");
    is_str(req(&r, 1)->status, SIM_TIMED_OUT, "both of them");
    is_str(req(&r, 2)->status, SIM_COMPLETED, "the replica serves the next request");
    is_near(req(&r, 2)->first_scheduled_s, 2.6, EPS, "as soon as its batch timer fires");
    is_near(req(&r, 2)->finish_s, 3.642, EPS, "and it finishes at 3.642 s");
    support_rows_fini(&r);
}

/* A scheduler that takes prompts whole, and a sequence preempted by
 * recompute once its prompt plus output is past max_batched_tokens: it can
 * never be readmitted, so it ends as rejected (vLLM V0's "too long" prompt)
 * instead of blocking the queue behind it for good.  40 replies of 2,048
 * tokens on 400 blocks of 16 must preempt, and some sequence is then past
 * the 2,048-token budget. */
static void test_recompute_too_long(void)
{
    static const char json[] =
        "{\"seed\": 1, \"stop\": {\"requests\": 40, \"max_in_flight\": 100000}, "
        "\"cluster\": {\"gpu\": \"h100-sxm\", \"model\": \"llama-3.1-8b\", \"engine\": "
        "\"ideal\", \"scheduler\": {\"policy\": \"continuous\", \"max_batch\": 64, "
        "\"max_batched_tokens\": 2048, \"kv_blocks\": 400}}, \"workload\": {\"arrival\": "
        "{\"process\": \"constant\", \"rate_per_s\": 1e9}, \"prompt_tokens\": {\"dist\": "
        "\"fixed\", \"value\": 128}, \"output_tokens\": {\"dist\": \"fixed\", \"value\": "
        "2048}}}";
    support_rows r = {0};
    is_int(support_run(json, NULL, &r, NULL), SIM_STATUS_COMPLETED,
           "preempted past the token budget: the run still completes");
    int rejected = 0, completed = 0;
    bool preempted = true, streamed = true;
    for (size_t i = 0; i < r.n; i++) {
        if (!strcmp(r.req[i].status, SIM_REJECTED)) {
            rejected++;
            preempted &= r.req[i].preemptions > 0;
            streamed &= !isnan(r.req[i].first_token_s);
        }
        completed += !strcmp(r.req[i].status, SIM_COMPLETED);
    }
    cmp_ok(rejected, >=, 1, "the sequence that can never be readmitted is rejected");
    ok(preempted, "it is rejected only after it was preempted");
    ok(streamed, "it is rejected with its first token already sent");
    is_int(completed + rejected, 40, "and every other request completes");
    support_rows_fini(&r);
}

int main(void)
{
    if (support_init()) return 1;
    test_chunked();
    test_prefill_first();
    test_static();
    test_static_padding();
    test_static_one_token();
    test_static_timeouts();
    test_recompute_too_long();
    support_fini();
    return tap_done();
}
