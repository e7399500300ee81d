/*
 * test_kv.c: the paged KV cache.  The closed-form block count of the
 * decoding set against a brute-force count; then whole runs where the cache
 * runs out: every preempted request still completes with all its tokens,
 * recomputation shows up as extra prefill work and busy time, swapping
 * moves bytes instead, and an overloaded, cache-starved cluster finishes
 * without hanging.
 */
#include <math.h>
#include <stdlib.h>

#include "sim_int.h"
#include "support.h"
#include "tap.h"

/* cmp_ok(a, op, b, "description"): a op b on numbers, printing both sides on
 * failure (tap.h has no such assertion; a candidate for it). */
/* Brute force: sum of ceil(context / b) over sequences, t steps ahead. */
static int64_t brute(const int64_t *ctx, int n, int64_t t, int b)
{
    int64_t sum = 0;
    for (int i = 0; i < n; i++) sum += (ctx[i] + t + b - 1) / b;
    return sum;
}

static void test_block_count(void)
{
    enum { N = 200 };
    int64_t ctx[N];
    sim__kv kv;
    sim__kv_init(&kv, 16);
    gsl_rng *r = util_rng_stream(3, 3);
    bool same = true;
    int n = 0;
    for (int round = 0; round < 400; round++) {
        int op = (int)gsl_rng_uniform_int(r, 3);
        if ((op == 0 || n == 0) && n < N) { /* a sequence joins */
            ctx[n] = 1 + (int64_t)gsl_rng_uniform_int(r, 3000);
            sim__kv_add(&kv, ctx[n++]);
        } else if (op == 1) { /* one leaves */
            int i = (int)gsl_rng_uniform_int(r, (unsigned long)n);
            sim__kv_remove(&kv, ctx[i]);
            ctx[i] = ctx[--n];
        } else { /* some steps pass */
            int64_t t = (int64_t)gsl_rng_uniform_int(r, 40);
            for (int64_t look = 0; look < 50; look += 7) same &= sim__kv_need(&kv, look) == brute(ctx, n, look, 16);
            sim__kv_advance(&kv, t);
            for (int i = 0; i < n; i++) ctx[i] += t;
        }
        same &= kv.blocks == brute(ctx, n, 0, 16);
    }
    ok(same, "decoders' blocks, now and ahead, equal a brute-force count (400 random moves)");
    int64_t limit = brute(ctx, n, 0, 16) + 37, t = sim__kv_first_over(&kv, 1000, limit);
    cmp_ok(brute(ctx, n, t, 16), >, limit, "first_over finds a step past the limit (%lld)",
           (long long)t);
    /* at t = 0 there is no step before: INT64_MIN stands for it */
    cmp_ok(t > 0 ? brute(ctx, n, t - 1, 16) : INT64_MIN, <=, limit,
           "and the first: the step before is within it");
    gsl_rng_free(r);
    sim__kv_fini(&kv);
}

/* The starved cache, tests/scenarios/kv-starved.json: an L40S holding
 * Llama-3.1-8B with 200 KV blocks (3,200 tokens); 32 users with 400-token
 * prompts and 300-token replies need 22,400. */
static char *starved;

typedef struct totals {
    int64_t completed, preempted, preemptions, output, prompt;
    sim_replica_row rep;
} totals;

static totals run(const char *json, const char *const *sets)
{
    sim_scenario sc;
    support_rows rows = {0};
    totals t = {0};
    if (support_scenario(json, sets, &sc, NULL)) return t;
    support_run_rows(&sc, &rows, NULL);
    for (size_t i = 0; i < rows.n; i++) {
        const sim_request_row *q = &rows.req[i];
        t.completed += !strcmp(q->status, SIM_COMPLETED);
        t.preempted += q->preemptions > 0;
        t.preemptions += q->preemptions;
        t.output += q->output_tokens;
        t.prompt += q->prompt_tokens;
    }
    t.rep = rows.rep[0];
    support_rows_fini(&rows);
    sim_scenario_fini(&sc);
    return t;
}

static void test_preemption(void)
{
    totals roomy = run(starved, (const char *[]){"cluster.scheduler.kv_blocks=100000", NULL});
    totals rec = run(starved, NULL);
    is_int(roomy.preemptions, 0, "with room in the cache nothing is preempted");
    is_int(rec.completed, 200, "recompute: every preempted request still completes");
    cmp_ok(rec.preempted, >, 0, "the starved cache preempts (%lld requests, %lld times)",
           (long long)rec.preempted, (long long)rec.preemptions);
    is_int(rec.rep.preemptions, rec.preemptions, "the replica counts the same preemptions");
    cmp_ok(rec.rep.kv_peak_tokens, <=, rec.rep.kv_capacity_tokens, "the cache is never overfilled");
    /* Every token is produced once: by a prefill (the first, or the next after
     * a recompute) or by a decode step. */
    is_int(rec.rep.decode_tokens + rec.completed + rec.preemptions, rec.output,
           "recompute: decode tokens + prefills = output tokens, none lost or repeated");
    cmp_ok(rec.rep.prefill_tokens, >, rec.prompt,
           "recomputation is extra prefill work (%lld > %lld)", (long long)rec.rep.prefill_tokens,
           (long long)rec.prompt);
    is_int(roomy.rep.prefill_tokens, roomy.prompt, "without preemption prefill = prompts");
    cmp_ok(rec.rep.prefill_s, >, roomy.rep.prefill_s,
           "and recomputation shows in busy time: %.2f s of prefill against %.2f s",
           rec.rep.prefill_s, roomy.rep.prefill_s);

    totals sw = run(starved, (const char *[]){"cluster.scheduler.preemption=swap", NULL});
    is_int(sw.completed, 200, "swap: every preempted request completes");
    cmp_ok(sw.preemptions, >, 0, "swap: the starved cache preempts (%lld times)",
           (long long)sw.preemptions);
    cmp_ok(sw.rep.swap_bytes, >, 0, "swap moves KV bytes over PCIe (%.3g B)", sw.rep.swap_bytes);
    is_int(sw.rep.decode_tokens + sw.completed, sw.output,
           "swap: no token is recomputed (decode tokens + first tokens = output)");
    is_int(sw.rep.prefill_tokens, sw.prompt, "swap: prefill work is the prompts only");
}

/* Open loop far beyond capacity into a starved cache: the queue grows, the
 * run ends once arrivals stop. */
static void test_exhausted_finishes(void)
{
    const char *sets[] = {"workload.arrival={\"process\": \"poisson\", \"rate_per_s\": 500}",
                          "stop={\"requests\": 2000}", "cluster.scheduler.kv_blocks=64", NULL};
    totals t = run(starved, sets);
    is_int(t.completed, 2000, "an overloaded, KV-exhausted replica finishes every request");
}

int main(void)
{
    if (support_init()) return 1;
    starved = support_scenario_text("kv-starved.json");
    test_block_count();
    test_preemption();
    test_exhausted_finishes();
    free(starved);
    support_fini();
    return tap_done();
}
