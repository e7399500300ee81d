/*
 * sched.c: the scheduler families -- what the next iteration of a replica
 * does.  Each plan makes the moves replica.c provides, in the order the
 * engine it models makes them:
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
 * first request that does not fit, as vLLM's does.
 */
#include "sim_int.h"

static int64_t blocks_for(const sim__replica *rp, int64_t tokens)
{
    return sim__kv_blocks_for(&rp->kv, tokens);
}

/* Every decoder must be able to write this step's token: while the cache
 * cannot hold them, preempt the most recently admitted.  Returns how many. */
static int make_room(sim__replica *rp)
{
    int n = 0;
    while (rp->run_tail && sim__rp_used_blocks(rp, 0) > rp->kv_capacity) {
        sim__rp_preempt_last(rp);
        n++;
    }
    return n;
}

/* Swapped sequences come back, oldest first, while they fit -- but not in an
 * iteration that just preempted (vLLM v0). */
static void swap_in(sim__replica *rp, int preempted)
{
    const sim__request *r;
    while (!preempted && (r = rp->swapped.head) && rp->n_running < rp->pool->max_batch &&
           sim__rp_free_blocks(rp) >= blocks_for(rp, (int64_t)r->prompt + r->generated))
        sim__rp_swap_in(rp);
}

/* What admitting the head would take: the tokens of its prompt this
 * iteration would prefill, given budget (0: it would not be admitted), and
 * the KV blocks it would hold more (*hold) and take from the free ones
 * (*take: less the cached blocks that running requests hold already). */
typedef struct head_cost {
    int64_t chunk, hold, take;
} head_cost;

static head_cost head(const sim__replica *rp, const sim__request *r, int64_t budget,
                      bool chunking)
{
    head_cost h = {0};
    if (r->state == SIM__ARRIVED_KV) { /* it decodes at once: its context and next token */
        h.hold = h.take = blocks_for(rp, r->cached + 1);
        return h;
    }
    int64_t in_use, cached = sim__rp_cached_prefix(rp, r, &in_use);
    int64_t left = r->prefill_target - cached;
    h.chunk = chunking ? (left < budget ? left : budget) : (left <= budget ? left : 0);
    h.hold = blocks_for(rp, cached + h.chunk) - r->blocks;
    h.take = h.hold - in_use;
    return h;
}

/* First come first served from the queue while the batch, the token budget
 * and the cache allow.  A request whose KV cache arrived from a prefill pool
 * joins the decoders at once. */
static void admit_waiting(sim__replica *rp, int64_t *budget, bool chunking)
{
    const sim_pool *p = rp->pool;
    sim__request *r;
    while ((sim__rp_drop_dead_heads(rp), r = rp->q->head) && rp->n_running < p->max_batch) {
        bool kv_arrived = r->state == SIM__ARRIVED_KV;
        head_cost h = head(rp, r, *budget, chunking);
        if (!kv_arrived && h.chunk <= 0) break;
        if (sim__rp_free_blocks(rp) < h.take) break;
        sim__rp_take_prefix(rp, r); /* what the cache holds of it: shared or its own */
        sim__rp_admit(rp, r);
        if (kv_arrived) {
            sim__rp_decoder_join(rp, r, r->cached);
            if (chunking) *budget -= 1;
            continue;
        }
        r->state = SIM__PREFILLING;
        sim__rp_hold_blocks(rp, r, h.hold);
        sim__rp_add_chunk(rp, r, h.chunk);
        sim__rp_settle_cache(rp); /* its new blocks evict, before the next head looks */
        *budget -= h.chunk;
        if (r->cached + h.chunk < r->prefill_target) sim__queue_push(&rp->partial, r);
    }
}

/* Chunked: prompts already in progress get the next chunk first. */
static void continue_partials(sim__replica *rp, int64_t *budget)
{
    for (sim__request *r = rp->partial.head; r && *budget > 0; r = r->next) {
        int64_t left = r->prefill_target - r->cached;
        int64_t chunk = left < *budget ? left : *budget;
        int64_t need = blocks_for(rp, r->cached + chunk) - r->blocks;
        if (sim__rp_free_blocks(rp) < need) break;
        sim__rp_hold_blocks(rp, r, need);
        sim__rp_add_chunk(rp, r, chunk);
        *budget -= chunk;
    }
}

static void plan_continuous(sim__replica *rp, bool chunking)
{
    swap_in(rp, make_room(rp));
    int64_t budget = rp->pool->max_batched_tokens - (chunking ? rp->n_decode : 0);
    if (chunking) continue_partials(rp, &budget);
    admit_waiting(rp, &budget, chunking);
    rp->decodes = rp->n_decode > 0;
}

static void plan_prefill_first(sim__replica *rp)
{
    if (rp->swapped.n == 0) {
        int64_t budget = rp->pool->max_batched_tokens;
        admit_waiting(rp, &budget, false);
        if (rp->n_chunks) return; /* a prefill iteration: the decoders wait */
    }
    swap_in(rp, make_room(rp));
    rp->decodes = rp->n_decode > 0;
}

static void static_timer(sim_engine *e, void *subject, int64_t arg)
{
    sim__replica *rp = subject;
    rp->static_timer_pending = false;
    sim__rp_wake(rp);
}

/* When r joined the queue: the batch timeout counts from there (a request
 * whose KV cache arrived joined this pool's queue at decode_enqueue_ns). */
static int64_t queued_since(const sim__request *r)
{
    return r->state == SIM__ARRIVED_KV ? r->decode_enqueue_ns : r->enqueue_ns;
}

/* The batch: members from the queue while the batch and the cache allow,
 * each reserving its prompt + output whole.  A prompt is prefilled in the
 * batch's first iteration; a request whose KV cache arrived from a prefill
 * pool joins the decoders at once, as admit_waiting's do. */
static void admit_static(sim__replica *rp)
{
    sim__request *r;
    while ((sim__rp_drop_dead_heads(rp), r = rp->q->head) && rp->n_running < rp->pool->max_batch) {
        int64_t need = blocks_for(rp, (int64_t)r->prompt + r->output); /* reserved whole */
        if (sim__rp_free_blocks(rp) < need) break;
        bool kv_arrived = r->state == SIM__ARRIVED_KV;
        sim__rp_admit(rp, r);
        sim__rp_hold_blocks(rp, r, need);
        if (kv_arrived) {
            sim__rp_decoder_join(rp, r, r->cached);
            continue;
        }
        r->state = SIM__PREFILLING;
        sim__rp_add_chunk(rp, r, r->prefill_target);
    }
    rp->decodes = rp->n_decode > 0;
}

static void plan_static(sim__replica *rp)
{
    const sim_pool *p = rp->pool;
    if (rp->n_decode + rp->n_ghost > 0) { /* the batch runs on */
        rp->decodes = true;
        return;
    }
    sim__rp_drop_dead_heads(rp);
    const sim__request *head = rp->q->head;
    if (!head) return;
    int64_t deadline = queued_since(head) + sim__ns(p->batch_timeout_s);
    if (rp->q->n < p->max_batch && rp->e->now < deadline) { /* wait for the batch to fill */
        if (!rp->static_timer_pending) {
            rp->static_timer_pending = true;
            sim__heap_push(&rp->e->events, deadline, static_timer, rp, 0);
        }
        return;
    }
    admit_static(rp);
}

void sim__sc_plan(sim__replica *rp)
{
    sim__rp_settle_cache(rp); /* the last iteration's growth may have reused cached blocks */
    switch (rp->pool->policy) {
    case SIM_CONTINUOUS: plan_continuous(rp, false); break;
    case SIM_CHUNKED: plan_continuous(rp, true); break;
    case SIM_PREFILL_FIRST: plan_prefill_first(rp); break;
    case SIM_STATIC: plan_static(rp); break;
    }
    sim__rp_settle_cache(rp);
}

bool sim__sc_can_admit_head(sim__replica *rp)
{
    const sim_pool *p = rp->pool;
    sim__rp_drop_dead_heads(rp);
    const sim__request *r = rp->q->head;
    if (!r || p->policy == SIM_STATIC || rp->n_running >= p->max_batch) return false;
    if (p->policy == SIM_PREFILL_FIRST && rp->swapped.n) return false;
    bool chunking = p->policy == SIM_CHUNKED;
    int64_t budget = p->max_batched_tokens - (chunking ? rp->n_decode : 0);
    head_cost h = head(rp, r, budget, chunking);
    if (r->state != SIM__ARRIVED_KV && h.chunk <= 0) return false;
    return sim__rp_free_blocks(rp) >= h.take;
}
