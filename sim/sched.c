/*
 * sched.c: the scheduler families, as tables of the questions replica.c's
 * one planning loop asks (sim__policy, sim_int.h).  Every function here
 * answers from a replica it may not change; the loop makes the moves.
 *
 *  continuous     vLLM v1 without chunking: running sequences first
 *                 (preempting the most recently admitted when the cache
 *                 cannot hold this step's tokens), swapped ones back in, then
 *                 whole prompts first come first served within
 *                 max_batched_tokens; prefills and decodes share the iteration.
 *  prefill_first  vLLM v0: an iteration is either all prefill or all decode,
 *                 and prefills win whenever one can be admitted (and nothing
 *                 is swapped out).
 *  chunked        Sarathi-Serve / vLLM v1 chunked prefill: a token budget per
 *                 iteration; decodes take one token each, then chunks of
 *                 prompts in progress, then of new ones, fill what is left.
 *  static         FasterTransformer-style: a batch is formed (up to
 *                 max_batch, waiting up to batch_timeout_s to fill) with KV
 *                 reserved for every prompt + output, prefilled in one pass
 *                 (max_batched_tokens does not apply), and runs -- padded --
 *                 until its longest member is done.  In a disaggregated
 *                 decode pool the batch forms from requests whose KV cache
 *                 arrived: they decode from the first step, with nothing
 *                 to prefill.
 *
 * Admission is first come first served throughout: the queue stops at the
 * first request that does not fit, as vLLM's does.  An order other than
 * arrival (priorities, deadlines) is another `order`; an admission rule
 * other than the limits every family applies (LoRA slots, a tenant's share)
 * is another `may_admit`.
 */
#include "sim_int.h"

/* ---- token budgets ---- */

/* Whole prompts within max_batched_tokens; decodes do not count. */
static int64_t prompt_budget(const sim_pool *p, int64_t decode_tokens)
{
    (void)decode_tokens;
    return p->max_batched_tokens;
}

/* One budget for every token of the iteration: each decode takes its
 * positions (one, or 1 + K under speculative decoding). */
static int64_t shared_budget(const sim_pool *p, int64_t decode_tokens)
{
    return p->max_batched_tokens - decode_tokens;
}

/* A static batch prefills its members whole, whatever their size. */
static int64_t no_budget(const sim_pool *p, int64_t decode_tokens)
{
    (void)p, (void)decode_tokens;
    return INT64_MAX;
}

/* ---- the waiting queue's order ---- */

/* Arrival order; a recomputed request goes back to the head (vLLM's
 * prepend_request), ahead of any that went back before it. */
static int64_t first_come(const sim__request *r, int64_t joined, bool front)
{
    (void)r;
    return front ? -joined : joined;
}

/* ---- admission ---- */

static bool any_time(const sim__replica *rp)
{
    (void)rp;
    return true;
}

/* vLLM v0 admits no new prompt while a sequence is swapped out. */
static bool none_swapped(const sim__replica *rp)
{
    return rp->swapped.n == 0;
}

/* A static batch runs to its end before the next forms. */
static bool batch_ended(const sim__replica *rp)
{
    return rp->n_decode + rp->n_ghost == 0;
}

/* Every request the limits allow. */
static bool any_request(const sim__replica *rp, const sim__request *r)
{
    (void)rp, (void)r;
    return true;
}

/* ---- preemption ---- */

/* The most recently admitted running sequence (vLLM's running.pop()). */
static sim__request *last_admitted(const sim__replica *rp)
{
    return rp->run_tail;
}

/* ---- static batching's hold ---- */

/* When head joined the queue: the batch timeout counts from there (a
 * request whose KV cache arrived joined this pool's queue at
 * decode_enqueue_ns). */
static int64_t queued_since(const sim__request *r)
{
    return r->state == SIM__ARRIVED_KV ? r->decode_enqueue_ns : r->enqueue_ns;
}

/* A batch waits to fill, up to batch_timeout_s after its first member
 * joined the queue. */
static int64_t until_full(const sim__replica *rp, const sim__request *head)
{
    const sim_pool *p = rp->pool;
    int64_t deadline = queued_since(head) + sim__ns(p->batch_timeout_s);
    return sim__waitq_len(rp->q) < p->max_batch && rp->e->now < deadline ? deadline : -1;
}

/* ---- the families, in SIM_POLICIES's order (sim.h has their names) ---- */

const sim__policy sim__policies[SIM_N_POLICIES] = {
    [SIM_CONTINUOUS] = {.flags = 0, .budget = prompt_budget, .order = first_come,
                        .admits = any_time, .may_admit = any_request, .victim = last_admitted},
    [SIM_PREFILL_FIRST] = {.flags = SIM__SF_PREFILLS_ALONE, .budget = prompt_budget,
                           .order = first_come, .admits = none_swapped,
                           .may_admit = any_request, .victim = last_admitted},
    [SIM_CHUNKED] = {.flags = SIM__SF_CHUNKS, .budget = shared_budget, .order = first_come,
                     .admits = any_time, .may_admit = any_request, .victim = last_admitted},
    [SIM_STATIC] = {.flags = SIM__SF_RESERVES, .budget = no_budget, .order = first_come,
                    .admits = batch_ended, .may_admit = any_request, .victim = last_admitted,
                    .hold_until = until_full},
};
