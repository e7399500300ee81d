/*
 * replica.c: one model replica -- its queues, its running sequences, its
 * paged KV cache, and the life of an iteration: the one loop that plans it
 * (admission, chunking, preemption, the prefix cache settled), and running
 * it.  What the loop decides in a family's own way -- the token budget, the
 * queue's order, whether admission waits, who is preempted -- it asks the
 * replica's scheduler family (sched.c), which answers without changing
 * anything; every move is made here.
 *
 * Sequences are never touched per token.  A decoding sequence finishes at a
 * known decode step, so the decoding set is a heap keyed by that step; the
 * sum of contexts at step s is ctx_base + n_decode * s; and the KV blocks
 * they need at any later step come from kv.c in O(block_tokens).
 *
 * Nor are iterations, where nothing can happen between them: when the plan
 * is to decode and nothing else, the batch cannot change until a sequence
 * finishes, the cache runs out, or an admissible request arrives.  The
 * replica then runs ahead to the earlier of the next finish and the last
 * step the cache can hold, as one event, its time summed in closed form
 * (mdl_cost_decode_run); an admissible arrival cuts the run at the end of the
 * step in progress -- its end event is brought forward -- exactly where
 * step-by-step simulation would admit it.  "Admissible" is a dry run of the
 * loop's own admission phase, so the rule is written once.
 */
#include "sim_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

static void iteration_end(sim_engine *e, void *subject, int64_t arg);
static void start_iteration(sim__replica *rp);

/* ---- running list (admission order) ---- */

static void run_append(sim__replica *rp, sim__request *r)
{
    r->run_prev = rp->run_tail;
    r->run_next = NULL;
    if (rp->run_tail) rp->run_tail->run_next = r;
    else rp->run_head = r;
    rp->run_tail = r;
    r->in_running = true;
    rp->n_running++;
    sim__lr_join(rp, r);
}

static void run_remove(sim__replica *rp, sim__request *r)
{
    assert(r->in_running);
    if (r->run_prev) r->run_prev->run_next = r->run_next;
    else rp->run_head = r->run_next;
    if (r->run_next) r->run_next->run_prev = r->run_prev;
    else rp->run_tail = r->run_prev;
    r->run_prev = r->run_next = NULL;
    r->in_running = false;
    rp->n_running--;
    sim__lr_leave(rp, r);
}

/* ---- set-up ---- */

static bool reserves(const sim__replica *rp)
{
    return rp->policy->flags & SIM__SF_RESERVES; /* static: prompt + output up front */
}

static bool chunks_prompts(const sim__replica *rp)
{
    return rp->policy->flags & SIM__SF_CHUNKS;
}

/* Whether the engine plans step n + 1 while step n runs (async scheduling:
 * vLLM V1's batch queue, SGLang's overlap loop), which decides what a plan
 * has seen (plan_seen) and when a finished request lets go (complete). */
static bool plans_ahead(const sim__replica *rp)
{
    return rp->pool->async_scheduling;
}

/* Batch slots in use: the running requests', and those of the requests
 * finished in the last step, held until the next plan is made. */
static int32_t slots_taken(const sim__replica *rp)
{
    return rp->n_running + (int32_t)rp->finished.n;
}

void sim__rp_init(sim__replica *rp, sim_engine *e, const sim_pool *p, sim__group *g, int id)
{
    *rp = (sim__replica){.e = e, .pool = p, .policy = &sim__policies[p->policy], .group = g,
                         .id = id, .kv_capacity = p->kv_blocks, .end_slot = SIM__NO_SLOT,
                         .created_ns = e->now, .ready_ns = -1, .drain_ns = -1, .last_end_ns = -1,
                         .spec_width = 1};
    rp->ordered = util_xmalloc(sizeof *rp->ordered);
    rp->policy = sim__policy_compose(rp->ordered, p);
    sim__waitq_init(&rp->own, rp->policy);
    rp->q = e->sc->router == SIM_ROUTER_CENTRAL ? &g->central : &rp->own;
    sim__heap_init(&rp->finishing);
    sim__kv_init(&rp->kv, p->block_tokens);
    /* a static batch reserves each member's whole context: nothing to share */
    rp->pc_on = p->prefix_caching && !reserves(rp);
    if (rp->pc_on) sim__pc_init(&rp->pc, p->block_tokens, rp->kv_capacity);
    rp->block_bytes = p->block_tokens * p->cost.kv_bytes_per_token;
    /* its own KV offload tiers; a node's are attached by the fleet */
    if (sim__rp_offloads(rp) && !e->sc->kv_offload.per_node) {
        sim__rp_tiers_init(e, p, 1, &rp->cpu, &rp->disk);
        sim__pc_attach(&rp->pc, &rp->cpu, e->sc->kv_offload.all);
    }
    sim__lr_init(rp);
}

bool sim__rp_offloads(const sim__replica *rp)
{
    return rp->pc_on && rp->e->sc->kv_offload.cpu_bytes > 0;
}

void sim__rp_tiers_init(const sim_engine *e, const sim_pool *p, double scale, sim__pcache *cpu,
                        sim__pcache *disk)
{
    double block_bytes = p->block_tokens * p->cost.kv_bytes_per_token;
    sim__pc_tier_init(cpu, p->block_tokens,
                      (int64_t)floor(e->sc->kv_offload.cpu_bytes * scale / block_bytes));
    sim__pc_tier_init(disk, p->block_tokens,
                      (int64_t)floor(e->sc->kv_offload.disk_bytes * scale / block_bytes));
    if (e->sc->kv_offload.disk_bytes > 0) sim__pc_attach(cpu, disk, e->sc->kv_offload.all);
}

void sim__rp_fini(sim__replica *rp)
{
    free(rp->ordered);
    sim__waitq_fini(&rp->own);
    sim__heap_fini(&rp->finishing);
    sim__kv_fini(&rp->kv);
    if (rp->pc.lower && !rp->node) { /* its own tiers (a node's go with the node) */
        sim__pc_fini(&rp->disk);
        sim__pc_fini(&rp->cpu);
    }
    if (rp->pc_on) sim__pc_fini(&rp->pc);
    free(rp->chunks);
    free(rp->chunk_cost);
    sim__lr_destroy(rp);
}

static int64_t blocks_for(const sim__replica *rp, int64_t tokens)
{
    return sim__kv_blocks_for(&rp->kv, tokens);
}

/* r leaves the batch and lets go of the blocks it holds outside the
 * decoding set: they are free again, but a static batch's reservation is
 * held until the batch ends (end_static_batch_if_done). */
static void let_go(sim__replica *rp, sim__request *r)
{
    if (reserves(rp)) rp->left_blocks += r->blocks;
    else rp->kv_other -= r->blocks;
    r->blocks = 0;
}

/* r has let go of `blocks` blocks, uncounted already: the prefix cache
 * keeps what later requests (or r itself, preempted) may reuse. */
static void release(sim__replica *rp, sim__request *r, int64_t blocks, sim__pc_how how)
{
    int64_t free_unshared = rp->kv_capacity - sim__kv_need(&rp->kv, rp->kv_pad) - rp->kv_other;
    if (rp->pc_on) sim__pc_release(&rp->pc, r, blocks, how, free_unshared);
}

/* Prompt tokens waiting in its own queue: the load prefix_affinity weighs. */
static void count_queued(sim__replica *rp, const sim__request *r, int sign)
{
    if (rp->q == &rp->own && r->state == SIM__WAITING)
        rp->queued_tokens += sign * r->prefill_target;
}

/* ---- arrival ---- */

/* Whether a prefill of `tokens` can ever be scheduled: a family that cuts
 * prompts schedules any, the others need it within the budget of an
 * iteration without decodes. */
static bool prefill_fits(const sim__replica *rp, int64_t tokens)
{
    return chunks_prompts(rp) || tokens <= rp->policy->budget(rp->pool, 0);
}

/* A request this replica could never serve would wait forever: its prompt
 * does not fit the token budget (prefill_fits), or prompt + output is over
 * the whole KV cache (with a speculative step's pad) or the model's
 * context window. */
static bool can_ever_fit(const sim__replica *rp, const sim__request *r)
{
    int64_t total = (int64_t)r->prompt + r->output;
    /* a speculative step holds its drafts' slots and the lookahead too:
     * alone in the cache it must still fit, or it would preempt itself */
    return prefill_fits(rp, r->prompt) &&
           blocks_for(rp, total + rp->pool->spec.pad) <= rp->kv_capacity &&
           total <= rp->pool->cost.model.max_context;
}

void sim__rp_enqueue(sim__replica *rp, sim__request *r)
{
    if (r->state == SIM__ARRIVED_KV) r->decode_enqueue_ns = rp->e->now;
    else r->enqueue_ns = rp->e->now;
    if (!can_ever_fit(rp, r)) {
        if (r->state != SIM__ARRIVED_KV) r->replica = rp->id;
        else r->decode_replica = rp->id;
        sim__rq_reject(rp->e, r, SIM_TOO_LONG);
        return;
    }
    sim__sched_stamp(rp->pool, r);
    if (rp->e->as_arrivals) rp->e->as_arrivals[rp->pool->index]++; /* autoscaler.c's rps */
    sim__waitq_push(rp->q, r, false);
    count_queued(rp, r, +1);
    if (rp->q == &rp->own) {
        rp->outstanding++;
        r->holder = rp->id;
    }
}

/* ---- the moves ---- */

/* Grows the iteration's chunk list. */
static void add_chunk(sim__replica *rp, sim__request *r, int64_t tokens)
{
    if (rp->n_chunks == rp->chunks_cap) {
        rp->chunks_cap = rp->chunks_cap ? 2 * rp->chunks_cap : 16;
        rp->chunks = util_xrealloc(rp->chunks, (size_t)rp->chunks_cap * sizeof *rp->chunks);
        rp->chunk_cost = util_xrealloc(rp->chunk_cost,
                                       (size_t)rp->chunks_cap * sizeof *rp->chunk_cost);
    }
    r->chunk = tokens;
    rp->chunks[rp->n_chunks] = r;
    rp->chunk_cost[rp->n_chunks++] = (mdl_chunk){tokens, r->cached};
    if (rp->pc_on) sim__pc_register(&rp->pc, r, r->cached + tokens); /* shareable once scheduled */
}

/* Takes r (the head of the queue) into the running set. */
static void admit(sim__replica *rp, sim__request *r)
{
    sim__waitq_pop(rp->q);
    count_queued(rp, r, -1);
    if (rp->q != &rp->own) rp->outstanding++; /* from the central queue: now it is ours */
    r->holder = rp->id;
    if (r->state == SIM__ARRIVED_KV) r->decode_replica = rp->id;
    else r->replica = rp->id;
    if (r->sched_ns < 0) r->sched_ns = rp->seen_ns; /* when the engine's scheduler took it */
    run_append(rp, r);
}

/* Holds `blocks` more KV blocks for r outside the decoding set. */
static void hold_blocks(sim__replica *rp, sim__request *r, int64_t blocks)
{
    r->blocks += blocks;
    rp->kv_other += blocks;
}

/* Whether a finished request keeps its batch slot and KV blocks until the
 * next plan is made: an engine that plans a step ahead planned the step
 * after the one that finished it before it knew (vLLM frees them in
 * update_from_output, after the next step was scheduled).  A static batch
 * holds its members' reservations to its end anyway. */
static bool holds_finished(const sim__replica *rp)
{
    return plans_ahead(rp) && !reserves(rp);
}

/* r has its last token, and lets go of `blocks` (uncounted already): it
 * leaves the batch and is recorded now, its slot and blocks freed now or,
 * held, by release_finished. */
static void complete(sim__replica *rp, sim__request *r, int64_t blocks)
{
    run_remove(rp, r);
    rp->outstanding--;
    sim__lc_served(rp);
    if (!holds_finished(rp)) {
        release(rp, r, blocks, SIM__PC_DONE);
        sim__rq_done(rp->e, r, SIM_COMPLETED, rp->e->now);
        return;
    }
    hold_blocks(rp, r, blocks);
    sim__queue_push(&rp->finished, r);
    sim__rq_done_kept(rp->e, r, SIM_COMPLETED, rp->e->now);
}

/* The requests finished in the last step free their slots and blocks: the
 * plan that could not know of it has been made. */
static void release_finished(sim__replica *rp)
{
    sim__request *r;
    while ((r = sim__queue_pop(&rp->finished))) {
        int64_t blocks = r->blocks;
        let_go(rp, r);
        release(rp, r, blocks, SIM__PC_DONE);
        sim__rq_free(rp->e, r);
    }
}

/* r, whose KV cache holds `cached` tokens and which has generated
 * r->generated tokens, decodes from the next step on; the blocks it held
 * become the decoding set's (a static batch keeps its reservation). */
static void decoder_join(sim__replica *rp, sim__request *r, int64_t cached)
{
    r->state = SIM__DECODING;
    r->ctx_off = cached + 1 - rp->step; /* its first step attends cached + 1 tokens */
    r->first_step = rp->step;
    r->finish_step = rp->step + (r->output - r->generated) - 1;
    sim__heap_push_tracked(&rp->finishing, r->finish_step, NULL, r, 0, &r->finish_slot);
    rp->n_decode++;
    rp->ctx_base += r->ctx_off;
    if (reserves(rp)) return;
    rp->kv_other -= r->blocks;
    r->blocks = 0;
    sim__kv_add(&rp->kv, r->ctx_off + rp->step);
}

/* r stops decoding before its last token: out of the decoding set and of
 * `finishing` (its KV blocks are the caller's to settle). */
static void decoder_drop(sim__replica *rp, sim__request *r)
{
    sim__heap_remove(&rp->finishing, r->finish_slot);
    rp->n_decode--;
    rp->ctx_base -= r->ctx_off;
}

/* Tokens r has generated, brought up to the current step. */
static int32_t generated_now(const sim__replica *rp, const sim__request *r)
{
    return r->generated + (int32_t)(rp->step - r->first_step);
}

/* r leaves the decoders before its last token (preemption): its state is
 * brought up to the current step. */
static void decoder_leave(sim__replica *rp, sim__request *r)
{
    r->generated = generated_now(rp, r);
    sim__kv_remove(&rp->kv, r->ctx_off + rp->step);
    decoder_drop(rp, r);
}

/* ---- prefix caching ---- */

/* The tokens of `blocks` cached blocks that r's prefill may skip: whole
 * blocks, and never its last token, which is computed again to produce the
 * next one (vLLM: num_tokens - 1). */
static int64_t skippable(const sim__replica *rp, const sim__request *r, int64_t blocks)
{
    int64_t most = (r->prefill_target - 1) / rp->pool->block_tokens;
    return (blocks < most ? blocks : most) * rp->pool->block_tokens;
}

int64_t sim__rp_cached_prefix(const sim__replica *rp, const sim__request *r, int64_t *in_use)
{
    *in_use = 0;
    if (!rp->pc_on || r->state != SIM__WAITING) return r->cached;
    return skippable(rp, r, sim__pc_lookup(&rp->pc, r, in_use));
}

/* r, at the head of the queue, is admitted: it takes its cached prefix. */
static void take_prefix(sim__replica *rp, sim__request *r)
{
    if (!rp->pc_on || r->state != SIM__WAITING) return;
    int64_t cpu0 = rp->pc.got[0], disk0 = rp->pc.got[1]; /* 0 without the tiers */
    int64_t loaded, blocks = sim__pc_acquire(&rp->pc, r, &loaded);
    int64_t from_cpu = rp->pc.got[0] - cpu0, from_disk = rp->pc.got[1] - disk0;
    r->cached = skippable(rp, r, blocks);
    /* its step loads them before the forward pass (start_single) */
    rp->load_bytes += (double)from_cpu * rp->block_bytes;
    rp->disk_load_bytes += (double)from_disk * rp->block_bytes;
    if (r->sched_ns >= 0) return;
    r->hit_tokens = (int32_t)r->cached; /* prompt tokens: cached < prompt */
    if (rp->pc.lower) { /* the tokens each tier served, the nearer first */
        int64_t gpu = skippable(rp, r, blocks - loaded);
        int64_t cpu = from_cpu * rp->pool->block_tokens;
        if (cpu > r->cached - gpu) cpu = r->cached - gpu;
        r->cpu_hits = (int32_t)cpu; /* its row's share of the replica's totals */
        rp->cpu_lookup_tokens += r->prompt - gpu;
        rp->cpu_hit_tokens += cpu;
        if (rp->pc.lower->lower) {
            r->disk_hits = (int32_t)(r->cached - gpu - cpu);
            rp->disk_lookup_tokens += r->prompt - gpu - cpu;
            rp->disk_hit_tokens += r->disk_hits;
        }
    }
}

void sim__rp_settle_cache(sim__replica *rp)
{
    if (rp->pc_on) sim__pc_settle(&rp->pc, sim__rp_free_blocks(rp));
}

/* ---- preemption ---- */

/* A recompute that can never be scheduled (prefill_fits: longer than a
 * whole-prompt scheduler's token budget) would block every request behind
 * it at the head of the queue.  vLLM V0 ends such a sequence ("Input prompt
 * ... is too long and exceeds limit of max_num_batched_tokens",
 * FINISHED_IGNORED): it ends here as rejected, as it would have been at
 * arrival. */
static void preempt_recompute(sim__replica *rp, sim__request *r)
{
    if (r->state == SIM__PREFILLING) sim__queue_remove(&rp->partial, r);
    rp->kv_other -= r->blocks;
    sim__rq_recompute(r);
    bool fits = prefill_fits(rp, r->prefill_target);
    release(rp, r, r->blocks, fits ? SIM__PC_PREEMPTED : SIM__PC_GONE);
    r->blocks = 0;
    if (!fits) {
        rp->outstanding--;
        sim__rq_reject(rp->e, r, SIM_TOO_LONG);
        return;
    }
    sim__waitq_push(rp->q, r, true); /* vLLM: back at the front of the queue */
    count_queued(rp, r, +1);
    if (rp->q != &rp->own) rp->outstanding--;
}

/* KV bytes of the sequences swapped out to host memory. */
static double swapped_bytes(const sim__replica *rp)
{
    double in_host = 0;
    for (const sim__request *s = rp->swapped.head; s; s = s->next)
        in_host += (double)(s->prompt + s->generated - 1) * rp->pool->cost.kv_bytes_per_token;
    return in_host;
}

/* Preempts running sequence r: recompute, or swap its KV cache out over
 * PCIe (falling back to recompute when host swap space is full, or for a
 * prompt not yet fully prefilled). */
static void preempt(sim__replica *rp, sim__request *r)
{
    run_remove(rp, r);
    r->preemptions++;
    rp->preemptions++;
    const sim_pool *p = rp->pool;
    if (r->state != SIM__DECODING) {
        preempt_recompute(rp, r);
        return;
    }
    int64_t ctx = r->ctx_off + rp->step;
    decoder_leave(rp, r);
    int64_t in_kv = (int64_t)r->prompt + r->generated - 1; /* tokens whose KV it holds */
    double bytes = (double)in_kv * p->cost.kv_bytes_per_token;
    if (p->preemption == SIM_PREEMPT_SWAP && swapped_bytes(rp) + bytes <= p->swap_space_bytes) {
        r->state = SIM__SWAPPED;
        rp->swap_bytes += bytes;
        sim__queue_push(&rp->swapped, r);
        release(rp, r, blocks_for(rp, ctx), SIM__PC_GONE);
        return;
    }
    /* its decoder blocks, counted as held again, are freed by the recompute */
    hold_blocks(rp, r, blocks_for(rp, in_kv));
    preempt_recompute(rp, r);
}

/* Brings the oldest swapped sequence back: its KV cache is copied in and it
 * decodes in this iteration. */
static void swap_in_oldest(sim__replica *rp)
{
    sim__request *r = sim__queue_pop(&rp->swapped);
    int64_t cached = (int64_t)r->prompt + r->generated - 1;
    rp->swap_bytes += (double)cached * rp->pool->cost.kv_bytes_per_token;
    run_append(rp, r);
    decoder_join(rp, r, cached);
}

/* ---- time-outs at the head of the queue ---- */

/* The head of the queue once timed-out requests (recorded already) have
 * left it. */
static sim__request *live_head(sim__replica *rp)
{
    sim__request *r;
    while ((r = sim__waitq_head(rp->q)) && r->dead) {
        sim__waitq_pop(rp->q);
        sim__pc_forget(r);
        sim__rq_free(rp->e, r);
    }
    return r;
}

/* ---- planning an iteration: the one loop ---- */

/* Every decoder must be able to write this step's token: while the cache
 * cannot hold them, preempt whom the family names.  Returns how many. */
static int make_room(sim__replica *rp)
{
    int n = 0;
    while (rp->n_running > 0 && sim__rp_used_blocks(rp, 0) > rp->kv_capacity) {
        preempt(rp, rp->policy->victim(rp));
        n++;
    }
    return n;
}

/* Swapped sequences come back, oldest first, while they fit -- but not in an
 * iteration that just preempted (vLLM v0). */
static void swap_in(sim__replica *rp, int preempted)
{
    const sim__request *r;
    while (!preempted && (r = rp->swapped.head) &&
           slots_taken(rp) < rp->pool->max_batch &&
           sim__rp_free_blocks(rp) >= blocks_for(rp, (int64_t)r->prompt + r->generated))
        swap_in_oldest(rp);
}

/* Prompts already in progress get the next chunk first. */
static void continue_partials(sim__replica *rp, int64_t *budget)
{
    for (sim__request *r = rp->partial.head; r && *budget > 0; r = r->next) {
        int64_t left = r->prefill_target - r->cached;
        int64_t chunk = left < *budget ? left : *budget;
        int64_t need = blocks_for(rp, r->cached + chunk) - r->blocks;
        if (sim__rp_free_blocks(rp) < need) break;
        hold_blocks(rp, r, need);
        add_chunk(rp, r, chunk);
        *budget -= chunk;
    }
}

/* What admitting r would take: the tokens of its prompt this iteration
 * would prefill, given the budget (0: it would not be admitted), and the KV
 * blocks it would hold more (hold) and take from the free ones (take: less
 * the cached blocks that running requests hold already); `need`, the free
 * blocks admission asks for -- take, or, with scheduler.reserve_full_isl,
 * what its whole prompt would take (vLLM V1: allocate_slots with
 * full_sequence_must_fit), though it holds only its chunk's.  A request
 * whose KV cache arrived from a prefill pool decodes at once: its context
 * and next token, or a static batch's whole reservation. */
typedef struct admit_cost {
    int64_t chunk, hold, take, need;
} admit_cost;

static admit_cost admission_cost(const sim__replica *rp, const sim__request *r, int64_t budget)
{
    admit_cost c = {0};
    int64_t whole = (int64_t)r->prompt + r->output;
    if (r->state == SIM__ARRIVED_KV) {
        c.hold = c.take = c.need = blocks_for(rp, reserves(rp) ? whole : r->cached + 1);
        return c;
    }
    int64_t in_use, cached = sim__rp_cached_prefix(rp, r, &in_use);
    int64_t left = r->prefill_target - cached;
    if (chunks_prompts(rp)) c.chunk = left < budget ? left : budget;
    else c.chunk = left <= budget ? left : 0;
    c.hold = blocks_for(rp, reserves(rp) ? whole : cached + c.chunk) - r->blocks;
    c.take = c.need = c.hold - in_use;
    if (rp->pool->reserve_full_isl && !reserves(rp)) {
        int64_t full = blocks_for(rp, r->prefill_target) - r->blocks - in_use;
        if (full > c.need) c.need = full;
    }
    return c;
}

/* The admission rule, the one place it is written: whether r, next in the
 * queue, joins the next iteration -- a batch slot, the family's word, some
 * of its prompt within the budget, and the blocks it takes free. */
static bool admissible(const sim__replica *rp, const sim__request *r, int64_t budget,
                       admit_cost *c)
{
    if (slots_taken(rp) >= rp->pool->max_batch || !rp->policy->may_admit(rp, r)) return false;
    if (!sim__lr_may_admit(rp, r)) return false; /* the adapters' slots (lora.c) */
    *c = admission_cost(rp, r, budget);
    if (r->state != SIM__ARRIVED_KV && c->chunk <= 0) return false;
    return sim__rp_free_blocks(rp) >= c->need;
}

/* r joins the iteration: its cached prefix taken, its blocks held, and its
 * first chunk scheduled -- or, its KV cache arrived, it decodes. */
static void admit_one(sim__replica *rp, sim__request *r, const admit_cost *c, int64_t *budget)
{
    take_prefix(rp, r); /* what the cache holds of it: shared or its own */
    admit(rp, r);
    hold_blocks(rp, r, c->hold);
    if (r->state == SIM__ARRIVED_KV) {
        decoder_join(rp, r, r->cached);
        if (chunks_prompts(rp)) *budget -= rp->spec_width;
        return;
    }
    r->state = SIM__PREFILLING;
    add_chunk(rp, r, c->chunk);
    sim__rp_settle_cache(rp); /* its new blocks evict, before the next head looks */
    *budget -= c->chunk;
    if (r->cached + c->chunk < r->prefill_target) sim__queue_push(&rp->partial, r);
}

static void static_timer(sim_engine *e, void *subject, int64_t id);

/* Whether admission waits (a static batch filling): the family's instant,
 * with a timer to wake the replica then, unless this is a dry run. */
static bool held(sim__replica *rp, const sim__request *head, bool dry)
{
    int64_t until = rp->policy->hold_until ? rp->policy->hold_until(rp, head) : -1;
    if (until < 0) return false;
    if (!dry && !rp->static_timer_pending) {
        rp->static_timer_pending = true;
        sim__heap_push(&rp->e->events, until, static_timer, NULL, rp->id);
    }
    return true;
}

/* Whether the engine's scheduler had r in its queue when it planned this
 * iteration (plan_seen). */
static bool seen(const sim__replica *rp, const sim__request *r)
{
    int64_t queued = r->state == SIM__ARRIVED_KV ? r->decode_enqueue_ns : r->enqueue_ns;
    return queued <= rp->seen_ns;
}

/* Priority preemption by recompute (never swap: vLLM v0's
 * _schedule_priority_preemption preempts a single sequence by recompute),
 * counted as any preemption. */
static void preempt_for_priority(sim__replica *rp, sim__request *r)
{
    run_remove(rp, r);
    r->preemptions++;
    rp->preemptions++;
    if (r->state == SIM__DECODING) {
        decoder_leave(rp, r);
        hold_blocks(rp, r, blocks_for(rp, (int64_t)r->prompt + r->generated - 1));
    }
    preempt_recompute(rp, r);
}

/* Whether head, not admissible, becomes so by preempting less urgent
 * running requests, one at a time, least urgent first (the family's
 * displace).  A dry run preempts nothing: it says whether the first
 * preemption could be made, the plan that follows making them; nor does a
 * head the scheduler has not seen preempt anything. */
static bool displaced(sim__replica *rp, const sim__request *head, int64_t budget,
                      admit_cost *c, bool dry)
{
    if (!rp->policy->displace) return false;
    sim__request *v = rp->policy->displace(rp, head);
    if (!v || dry) return v != NULL;
    if (!seen(rp, head)) return false;
    for (; v; v = rp->policy->displace(rp, head)) {
        preempt_for_priority(rp, v);
        if (admissible(rp, head, budget, c)) return true;
    }
    return false;
}

/* Admission: from the head of the queue, in the family's order, while the
 * rule allows -- the queue stops at the first request that does not fit,
 * or that the scheduler had not yet seen (it stops there: the queue is in
 * arrival order but for recomputes, which were seen long before).  A dry
 * run only says whether the head would be admitted were it seen. */
static bool admit_waiting(sim__replica *rp, int64_t *budget, bool dry)
{
    sim__request *r = live_head(rp);
    if (!r || !rp->policy->admits(rp) || held(rp, r, dry)) return false;
    admit_cost c;
    bool any = false;
    for (; r && (admissible(rp, r, *budget, &c) || displaced(rp, r, *budget, &c, dry));
         r = live_head(rp)) {
        if (dry) return true;
        if (!seen(rp, r)) break;
        admit_one(rp, r, &c, budget);
        any = true;
    }
    return any;
}

/* The running sequences make room and the swapped come back. */
static void keep_running(sim__replica *rp)
{
    swap_in(rp, make_room(rp));
}

/* Plans the next iteration: preemptions, swaps, which decoders run, which
 * prompt chunks are prefilled.  Leaves nothing planned to stay idle.  The
 * phases, in order, as docs/architecture.md's table gives them with what
 * each family answers:
 *   1. settle: the last iteration's growth may have reused cached blocks;
 *   2. make room for the decoders' next token (preempting the victim);
 *   3. swap in what fits;
 *   4. the budget;
 *   5. chunks of prompts in progress (a family that cuts prompts);
 *   6. admission from the queue;
 *   7. the decoders decode, and the cache is settled again.
 * A family that prefills alone runs 6 first, and an iteration that then
 * prefills does nothing else. */
static void plan(sim__replica *rp)
{
    const sim__policy *f = rp->policy;
    /* the step's width and KV pad first: the cache settles to the free
     * blocks they leave, and room is made for them */
    bool spec = rp->pool->spec.method != SIM_SPEC_NONE; /* else the width stays 1 */
    if (spec && (f->flags & SIM__SF_PREFILLS_ALONE)) sim__sp_off(rp);
    else if (spec) sim__sp_plan(rp);
    sim__rp_settle_cache(rp);
    if (f->flags & SIM__SF_PREFILLS_ALONE) {
        int64_t budget = f->budget(rp->pool, rp->n_decode);
        admit_waiting(rp, &budget, false);
        if (rp->n_chunks) { /* a prefill iteration: the decoders wait */
            sim__rp_settle_cache(rp);
            return;
        }
        if (spec) sim__sp_plan(rp);
        keep_running(rp);
    } else {
        keep_running(rp);
        int64_t budget = f->budget(rp->pool, (int64_t)rp->n_decode * rp->spec_width);
        if (chunks_prompts(rp)) continue_partials(rp, &budget);
        admit_waiting(rp, &budget, false);
        /* a disaggregated decode pool admits decoders (their KV arrived)
         * straight into the step: with no prompt sharing the budget, the
         * width follows them */
        if (spec && rp->spec_width == 1 && rp->n_chunks == 0) sim__sp_plan(rp);
    }
    rp->decodes = rp->n_decode > 0;
    sim__rp_settle_cache(rp);
}

/* Whether the next iteration could take the head of the queue: a dry run
 * of admission, with the budget the loop would give it.  A request
 * arriving during a decode run then cuts the run short. */
static bool could_admit(sim__replica *rp)
{
    int64_t budget = rp->policy->budget(rp->pool, (int64_t)rp->n_decode * rp->spec_width);
    return admit_waiting(rp, &budget, true);
}

static void static_timer(sim_engine *e, void *subject, int64_t id)
{
    (void)subject;
    sim__replica *rp = sim__fl_get(e, (int32_t)id);
    if (!rp) return; /* it failed while the batch was filling */
    rp->static_timer_pending = false;
    sim__rp_wake(rp);
}

/* ---- time-outs in the batch ---- */

static void cut_run(sim__replica *rp);

void sim__rp_cancel(sim__replica *rp, sim__request *r)
{
    switch ((sim__state)r->state) {
    case SIM__SENDING:
    case SIM__TRANSFERRING: /* not here: request.c leaves these to the event they wait for */
    case SIM__HELD:
    case SIM__BACKOFF:      /* not here either: at the gateway, or not sent */
        return;
    case SIM__WAITING:
    case SIM__ARRIVED_KV: /* dropped when it reaches the head of its queue */
        count_queued(rp, r, -1);
        if (rp->q == &rp->own) rp->outstanding--;
        break;
    case SIM__SWAPPED:
        sim__queue_remove(&rp->swapped, r);
        rp->outstanding--;
        sim__rq_free(rp->e, r);
        break;
    case SIM__PREFILLING:
    case SIM__DECODING: /* the batch's next step drops it (reap), and then it may retire */
        rp->n_dead++;
        if (rp->busy && rp->run_decode_only) cut_run(rp); /* vLLM aborts between steps */
        return;
    }
    if (rp->draining) sim__rp_wake(rp); /* it may hold nothing now */
}

/* Timed-out sequences leave the batch: their blocks are freed (a static
 * batch's reservation, and a decoding member's padding, last until the
 * batch ends). */
static void reap(sim__replica *rp)
{
    for (sim__request *r = rp->run_head, *next; r && rp->n_dead; r = next) {
        next = r->run_next;
        if (!r->dead) continue;
        rp->n_dead--;
        int64_t freed = r->blocks;
        if (r->state == SIM__DECODING) {
            decoder_drop(rp, r);
            if (reserves(rp)) {
                rp->n_ghost++;
                rp->ghost_ctx_off += r->ctx_off;
            } else {
                sim__kv_remove(&rp->kv, r->ctx_off + rp->step);
                freed += blocks_for(rp, r->ctx_off + rp->step);
            }
        } else if (!reserves(rp)) {
            sim__queue_remove(&rp->partial, r);
        }
        let_go(rp, r);
        release(rp, r, freed, SIM__PC_GONE);
        for (int i = 0; i < rp->n_chunks; i++)
            if (rp->chunks[i] == r) rp->chunks[i] = NULL;
        run_remove(rp, r);
        rp->outstanding--;
        sim__rq_free(rp->e, r);
    }
}

/* ---- the life of an iteration ---- */

static void kick(sim_engine *e, void *subject, int64_t id)
{
    (void)subject;
    sim__replica *rp = sim__fl_get(e, (int32_t)id);
    if (!rp) return; /* it failed in the meantime */
    rp->kick_pending = false;
    if (!rp->busy) start_iteration(rp);
}

/* Starts an iteration at the current instant, but after any other event of
 * the same instant (simultaneous arrivals, a user's immediate next request),
 * so that they can join it. */
static void schedule_kick(sim__replica *rp)
{
    if (rp->busy || rp->kick_pending) return;
    rp->kick_pending = true;
    sim__heap_push(&rp->e->events, rp->e->now, kick, NULL, rp->id);
}

void sim__rp_wake(sim__replica *rp)
{
    if (!rp->busy) schedule_kick(rp);
    else if (rp->run_decode_only && could_admit(rp)) cut_run(rp);
}

static int64_t decode_context(const sim__replica *rp)
{
    int64_t n = rp->n_decode + rp->n_ghost;
    return rp->ctx_base + rp->ghost_ctx_off + n * rp->step;
}

static int64_t after_start(const sim__replica *rp, int64_t end_ns)
{
    return end_ns > rp->run_start_ns ? end_ns : rp->run_start_ns + 1; /* time always advances */
}

static void schedule_end(sim__replica *rp, int64_t end_ns)
{
    sim__heap_push_tracked(&rp->e->events, after_start(rp, end_ns), iteration_end, rp, 0,
                           &rp->end_slot);
}

/* The decoder that finishes first.  Every entry is live: a sequence that
 * leaves early takes its entry with it. */
static const sim__event *next_finish(const sim__replica *rp)
{
    return sim__heap_top(&rp->finishing);
}

/* Decode steps until the next finish, but never into a step whose KV need
 * the cache cannot meet. */
static int64_t run_length(sim__replica *rp)
{
    int64_t k = next_finish(rp)->at - rp->step + 1;
    int64_t over = sim__kv_first_over(&rp->kv, k, rp->kv_capacity - rp->kv_other + rp->pc.saved);
    assert(over >= 1); /* the scheduler made room for the first step */
    return over < k ? over : k;
}

/* Whether the next plan admits what this one could not: an engine that
 * plans a step ahead made this plan before it had seen the last step's
 * arrivals and before its finished requests let go (release_finished), so
 * a request that waits for either joins the step after this one. */
static bool next_plan_admits(sim__replica *rp)
{
    return plans_ahead(rp) && could_admit(rp);
}

/* A decode run: to the next finish or as far as the cache holds, but one
 * step only when the next plan admits a request. */
static void start_run(sim__replica *rp)
{
    rp->run_decode_only = true;
    mdl_run_init(&rp->run, &rp->pool->cost, rp->n_decode + rp->n_ghost, decode_context(rp));
    rp->run_last = rp->step + (next_plan_admits(rp) ? 1 : run_length(rp)) - 1;
    schedule_end(rp, rp->run_start_ns + sim__run_ns(rp, rp->run_last - rp->step + 1));
}

static void start_single(sim__replica *rp)
{
    mdl_batch b = {.chunks = rp->chunk_cost, .n_prefill = rp->n_chunks};
    for (int i = 0; i < rp->n_chunks; i++) {
        double c = (double)rp->chunk_cost[i].tokens, p = (double)rp->chunk_cost[i].cached;
        b.prefill_tokens += rp->chunk_cost[i].tokens;
        b.prefill_sq += c * (c + 2 * p); /* attention over the cached context too */
        b.prefill_pairs += c * (p + (c + 1) / 2);
        b.prefill_context += rp->chunk_cost[i].cached;
    }
    if (rp->decodes) {
        b.n_decode = rp->n_decode + rp->n_ghost;
        b.decode_context = decode_context(rp);
        b.decode_width = rp->spec_width;
    }
    const sim_pool *p = rp->pool;
    rp->spec_draft_s = 0;
    if (b.n_prefill || b.n_decode) {
        mdl_cost_step(&p->cost, &b, &rp->cost);
        if (p->spec.method != SIM_SPEC_NONE) sim__sp_draft_cost(rp, &b, &rp->cost);
        sim__lr_step_cost(rp, &b, &rp->cost);
    } else {
        rp->cost = (mdl_step){0}; /* only moving swapped KV caches */
    }
    /* swaps are copies over each GPU's own PCIe link, before the forward pass */
    double swap_s = rp->swap_bytes / (p->cost.gpu.pcie_bw * p->gpus);
    rp->cost.time_s += swap_s;
    rp->cost.gpu_s += swap_s;
    rp->cost.decode_s += swap_s;
    /* A prefix hit in the CPU tier is loaded before the prefill that needs
     * it, over the same links; the store of evicted blocks costs nothing
     * here (docs/kv-offload.md). */
    if (rp->load_bytes > 0 || rp->disk_load_bytes > 0) {
        const sim_scenario *sc = rp->e->sc;
        /* a disk hit is read into host memory, then crosses PCIe as a CPU hit does */
        double load_s = (rp->load_bytes + rp->disk_load_bytes) / (p->cost.gpu.pcie_bw * p->gpus);
        if (rp->load_bytes > 0) load_s += sc->kv_offload.cpu_latency_s;
        if (rp->disk_load_bytes > 0)
            load_s += rp->disk_load_bytes / sc->kv_offload.disk_read_bw +
                      sc->kv_offload.disk_latency_s;
        rp->cost.time_s += load_s;
        rp->cost.gpu_s += load_s;
        rp->cost.prefill_s += load_s;
    }
    sim__lc_slow_step(rp, &rp->cost);
    schedule_end(rp, rp->run_start_ns + sim__ns(rp->cost.time_s));
}

/* What the engine's scheduler has seen when it plans the next iteration.
 * A synchronous engine plans it now, after the last one's outputs: every
 * request queued by now.  An asynchronous one (vLLM's batch queue of two,
 * SGLang's overlap loop) planned it while the GPU ran the last step, when
 * that step began: a request queued during step n first runs in step
 * n + 2.  After an idle spell, or when that plan would be empty (vLLM then
 * schedules at once, the empty batch ending as soon as it is launched),
 * it plans now (start_iteration). */
static int64_t plan_seen(const sim__replica *rp)
{
    bool ahead = plans_ahead(rp) && rp->last_end_ns == rp->e->now;
    return ahead ? rp->last_step_ns : rp->e->now;
}

static bool idle_plan(const sim__replica *rp)
{
    return !rp->n_chunks && !rp->decodes && rp->swap_bytes == 0;
}

static void start_iteration(sim__replica *rp)
{
    assert(!rp->busy);
    rp->n_chunks = 0;
    rp->swap_bytes = 0;
    rp->load_bytes = rp->disk_load_bytes = 0;
    rp->decodes = false;
    rp->seen_ns = plan_seen(rp);
    plan(rp);
    /* Nothing to run, but finished requests hold what the plan could use,
     * or it stopped at a request it had not seen (a dry run would admit
     * it): it looks again now, as vLLM's empty batch returns at once. */
    if (idle_plan(rp) && (rp->finished.n || (plans_ahead(rp) && could_admit(rp)))) {
        release_finished(rp);
        rp->seen_ns = rp->e->now;
        plan(rp);
    }
    release_finished(rp);
    if (idle_plan(rp)) { /* idle */
        if (rp->draining) sim__fl_retire_if_empty(rp);
        return;
    }
    sim__ac_kv_peak(rp);
    rp->busy = true;
    rp->run_start_ns = rp->e->now;
    /* a speculative step's outcome is drawn when it ends, a cold replica's
     * steps are slowed one by one: one step at a time */
    if (!rp->n_chunks && rp->swap_bytes == 0 && rp->spec_width == 1 && !sim__lr_single(rp) &&
        !rp->warm_left)
        start_run(rp);
    else start_single(rp);
    SIM__CHECKED(sim__rp_check(rp, rp->run_decode_only ? rp->run_last - rp->step + 1 : 1));
}

/* An admissible request arrived during a decode run: end the run where the
 * next plan sees it -- with the step in progress, the first boundary at or
 * after now, or, for an engine that plans a step ahead (plan_seen), with
 * the step after it.  Nothing to do when the run is ending now: its end
 * event is being handled (a completion that sends a new call, an agent's
 * aggregation, lands here), and the replica plans its next iteration next.
 * An arrival in a run's last step is start_run's. */
static void cut_run(sim__replica *rp)
{
    if (rp->end_slot == SIM__NO_SLOT) return;
    int64_t k = rp->run_last - rp->step + 1, lo = 1, hi = k;
    while (lo < hi) { /* smallest m whose boundary, start + run_ns(m), is at or after now */
        int64_t mid = lo + (hi - lo) / 2;
        if (rp->run_start_ns + sim__run_ns(rp, mid) >= rp->e->now) hi = mid;
        else lo = mid + 1;
    }
    if (plans_ahead(rp) && lo < k) lo++;
    int64_t end = after_start(rp, rp->run_start_ns + sim__run_ns(rp, lo));
    if (lo == k || end >= sim__heap_tracked(&rp->e->events, &rp->end_slot)->at)
        return; /* the run ends with the step in progress anyway */
    rp->run_last = rp->step + lo - 1;
    sim__heap_earlier(&rp->e->events, rp->end_slot, end);
}

/* Static batching pads: a finished member's slot computes until the batch
 * ends, so it stays in the cost as a ghost, and its reservation stays held.
 * The batch ends when its last member leaves: after its last decode step,
 * or with its prefill when no member decodes (1-token replies, time-outs,
 * a disaggregated prefill pool's transfers) -- a batch without ghosts. */
static void end_static_batch_if_done(sim__replica *rp)
{
    if (!reserves(rp) || rp->n_running > 0) return;
    rp->n_ghost = 0;
    rp->ghost_ctx_off = 0;
    rp->kv_other -= rp->left_blocks; /* the batch's reservation */
    rp->left_blocks = 0;
}

/* Sequences whose last token the steps just run produced. */
static void finish_decoders(sim__replica *rp)
{
    const sim__event *top;
    sim__event ev;
    while ((top = next_finish(rp)) && top->at < rp->step) {
        sim__heap_pop(&rp->finishing, &ev);
        sim__request *r = ev.subject;
        rp->n_decode--;
        rp->ctx_base -= r->ctx_off;
        int64_t blocks = 0;
        if (reserves(rp)) {
            rp->n_ghost++;
            rp->ghost_ctx_off += r->ctx_off;
        } else {
            sim__kv_remove(&rp->kv, r->ctx_off + rp->step);
            blocks = blocks_for(rp, r->ctx_off + rp->step);
        }
        let_go(rp, r);
        complete(rp, r, blocks);
    }
}

/* A speculative step's decoders (all that ran in it: a decoder joins the
 * set after the step's chunks, finish_chunks) keep the drafts their
 * verification accepted, at most what each has left to generate: tokens
 * beyond the step's one, by which its context, its count and its last
 * step move. */
static void decoders_accept(sim__replica *rp)
{
    int32_t by[SIM_SPEC_MAX_K + 1] = {0}; /* the decoders by the drafts each kept: the row's */
    for (sim__request *r = rp->run_head; r; r = r->run_next) {
        if (r->state != SIM__DECODING) continue;
        int64_t room = r->finish_step - rp->step + 1; /* left after the step's own token */
        int64_t extra = sim__sp_accepted(rp, r, generated_now(rp, r) - 1);
        if (extra > room) extra = room;
        by[extra]++;
        if (extra == 0) continue;
        if (!reserves(rp)) sim__kv_remove(&rp->kv, r->ctx_off + rp->step);
        r->ctx_off += extra;
        rp->ctx_base += extra;
        r->generated += (int32_t)extra;
        r->finish_step -= extra;
        if (!reserves(rp)) sim__kv_add(&rp->kv, r->ctx_off + rp->step);
        sim__heap_earlier(&rp->finishing, r->finish_slot, r->finish_step);
        rp->decode_tokens += extra;
    }
    sim__ac_spec_step(rp, by);
}

/* A prompt (or a recompute) fully prefilled: it has its next token. */
static void prefill_done(sim__replica *rp, sim__request *r)
{
    r->generated++;
    if (r->first_token_ns < 0) r->first_token_ns = rp->e->now;
    if (r->generated >= r->output) {
        int64_t freed = r->blocks;
        let_go(rp, r);
        complete(rp, r, freed);
    } else if (rp->e->sc->disagg_prefill == rp->pool->index) {
        run_remove(rp, r);
        rp->outstanding--;
        sim__lc_served(rp);
        SIM__CHECKED(rp->kv_on_link += r->blocks);
        sim__rt_transfer(rp->e, rp, r); /* keeps its blocks here until the copy is done */
    } else {
        decoder_join(rp, r, r->cached);
    }
}

/* The other end of prefill_done's transfer: the copy is done. */
void sim__rp_link_done(sim__replica *rp, sim__request *r)
{
    SIM__CHECKED(rp->kv_on_link -= r->blocks);
    rp->kv_other -= r->blocks;
    release(rp, r, r->blocks, SIM__PC_GONE);
    r->blocks = 0;
    sim__rp_wake(rp);
}

static void finish_chunks(sim__replica *rp)
{
    for (int i = 0; i < rp->n_chunks; i++) {
        sim__request *r = rp->chunks[i];
        if (!r) continue; /* timed out during the iteration */
        r->cached += r->chunk;
        r->chunk = 0;
        if (r->cached < r->prefill_target) continue; /* more chunks to come */
        if (r->state == SIM__PREFILLING && chunks_prompts(rp)) sim__queue_remove(&rp->partial, r);
        prefill_done(rp, r);
    }
    rp->n_chunks = 0;
}

static void iteration_end(sim_engine *e, void *subject, int64_t arg)
{
    sim__replica *rp = subject;
    int64_t steps = rp->run_decode_only ? rp->run_last - rp->step + 1 : 1;
    sim__ac_iteration(rp, steps);
    if (rp->kv_pad) { /* the drafts' and lookahead slots are free again */
        rp->kv_pad = 0;
        sim__rp_settle_cache(rp);
    }
    if (plans_ahead(rp)) /* what its next plan has seen (plan_seen) */
        rp->last_step_ns = steps > 1 ? rp->run_start_ns + sim__run_ns(rp, steps - 1)
                                     : rp->run_start_ns;
    rp->last_end_ns = e->now;
    if (rp->decodes || rp->run_decode_only) {
        rp->step += steps;
        sim__kv_advance(&rp->kv, steps);
    }
    if (rp->n_dead) reap(rp);
    if (rp->spec_width > 1 && rp->decodes) decoders_accept(rp);
    finish_decoders(rp);
    finish_chunks(rp);
    end_static_batch_if_done(rp);
    rp->busy = false;
    rp->run_decode_only = false;
    SIM__CHECKED(sim__rp_check(rp, 0));
    const sim__event *next = sim__heap_top(&e->events);
    if (next && next->at == e->now) schedule_kick(rp);
    else start_iteration(rp);
    sim__gw_poke(e); /* its queue and KV cache, which the gateway's saturation reads */
}

/* ---- a changing cluster: what the fleet takes from a replica ---- */

/* Its own queue's requests, in queue order, onto *out; timed-out ones
 * (recorded already) are freed. */
void sim__rp_take_waiting(sim__replica *rp, sim__queue *out)
{
    sim__request *r;
    while ((r = sim__waitq_pop(&rp->own))) {
        if (r->dead) {
            sim__pc_forget(r);
            sim__rq_free(rp->e, r);
            continue;
        }
        count_queued(rp, r, -1);
        rp->outstanding--;
        r->holder = -1;
        sim__queue_push(out, r);
    }
}

/* A request taken from a failed replica: what it generated kept, nothing
 * of the replica's held (its blocks and cache entries are gone with it). */
static void forget_replica(sim__replica *rp, sim__request *r)
{
    if (r->state == SIM__DECODING) r->generated = generated_now(rp, r);
    r->blocks = r->chunk = r->cached = 0;
    sim__pc_lost(r);
    r->finish_slot = SIM__NO_SLOT;
    r->run_prev = r->run_next = NULL;
    r->in_running = false;
    r->holder = -1;
}

void sim__rp_take_all(sim__replica *rp, sim__queue *out)
{
    if (rp->end_slot != SIM__NO_SLOT) sim__heap_remove(&rp->e->events, rp->end_slot);
    rp->busy = rp->run_decode_only = false;
    rp->n_chunks = 0;
    sim__rp_take_waiting(rp, out);
    sim__request *s;
    while ((s = sim__queue_pop(&rp->finished))) { /* recorded already */
        sim__pc_lost(s);
        sim__rq_free(rp->e, s);
    }
    while ((s = sim__queue_pop(&rp->swapped))) {
        forget_replica(rp, s);
        sim__queue_push(out, s);
    }
    for (sim__request *r = rp->run_head, *next; r; r = next) {
        next = r->run_next;
        forget_replica(rp, r);
        if (r->dead) sim__rq_free(rp->e, r); /* recorded already */
        else sim__queue_push(out, r);
    }
    rp->run_head = rp->run_tail = NULL;
    rp->partial = (sim__queue){0};
    rp->n_running = rp->n_decode = rp->n_dead = rp->n_ghost = 0;
    rp->outstanding = rp->kv_other = rp->left_blocks = 0;
    if (rp->pc_on) sim__pc_abandon(&rp->pc);
}

bool sim__rp_empty(const sim__replica *rp)
{
    return rp->outstanding == 0 && rp->n_running == 0 && rp->swapped.n == 0 && !rp->busy &&
           rp->kv_other == 0;
}

/* ---- invariants (SIM_CHECKS, sim_int.h) ---- */

#if SIM_CHECKS

#define IN(s) (1u << (s))

/* A waiting queue's members in the states given, none running and none
 * holding blocks; returns how many have not timed out. */
static int64_t check_waiting(const sim__waitq *q, unsigned states)
{
    int64_t live = 0;
    for (size_t i = 0; i < q->n; i++) {
        const sim__waitq_entry *up = &q->a[(i - 1) / 2], *at = &q->a[i];
        SIM__CHECK(i == 0 || up->key < at->key || (up->key == at->key && up->seq < at->seq));
        const sim__request *r = q->a[i].r;
        SIM__CHECK(states & IN(r->state));
        SIM__CHECK(!r->in_running);
        SIM__CHECK(r->blocks == 0);
        live += !r->dead;
    }
    return live;
}

/* A queue's length and tail against its links, its members in the states
 * given; returns how many have not timed out. */
static int64_t check_queue(const sim__queue *q, unsigned states, bool running)
{
    int64_t n = 0, live = 0;
    const sim__request *last = NULL;
    for (const sim__request *r = q->head; r; last = r, r = r->next, n++) {
        SIM__CHECK(states & IN(r->state));
        SIM__CHECK(r->in_running == running && (running || r->blocks == 0));
        live += !r->dead;
    }
    SIM__CHECK(q->tail == last && q->n == n);
    return live;
}

/* What the running list adds up to. */
typedef struct run_sums {
    int32_t n, decoders, dead;
    int64_t held, ctx, kv_blocks; /* blocks held outside the decoding set; sums over decoders */
} run_sums;

/* A decoder: its entry in `finishing` is its own and not yet due. */
static void check_decoder(const sim__replica *rp, const sim__request *r, run_sums *u)
{
    SIM__CHECK(r->finish_slot < rp->finishing.n && r->finish_step >= rp->step);
    const sim__event *ev = sim__heap_tracked(&rp->finishing, &r->finish_slot);
    SIM__CHECK(ev->subject == r && ev->at == r->finish_step);
    SIM__CHECK(reserves(rp) || r->blocks == 0); /* its blocks are the KV histogram's */
    u->decoders++;
    u->ctx += r->ctx_off;
    u->kv_blocks += blocks_for(rp, r->ctx_off + rp->step);
}

/* The running list, linked both ways in admission order, each member held
 * here, prefilling or decoding. */
static run_sums check_running(const sim__replica *rp)
{
    run_sums u = {0};
    const sim__request *prev = NULL;
    for (const sim__request *r = rp->run_head; r; prev = r, r = r->run_next, u.n++) {
        SIM__CHECK(r->in_running && r->holder == rp->id && r->run_prev == prev);
        SIM__CHECK(r->state == SIM__PREFILLING || r->state == SIM__DECODING);
        u.dead += r->dead;
        u.held += r->blocks;
        if (r->state == SIM__DECODING) check_decoder(rp, r, &u);
    }
    SIM__CHECK(rp->run_tail == prev && u.n == rp->n_running);
    return u;
}

/* The decoding set: its count, context sum and KV blocks against the
 * running decoders; KV blocks held outside it against their holders. */
static void check_kv(const sim__replica *rp, const run_sums *u, int64_t span)
{
    SIM__CHECK(rp->n_decode == u->decoders && (size_t)rp->n_decode == rp->finishing.n);
    SIM__CHECK(rp->ctx_base == u->ctx && rp->kv.at == rp->step);
    int64_t phases = 0;
    for (int i = 0; i < rp->kv.block_tokens; i++) phases += rp->kv.hist[i];
    SIM__CHECK(phases == rp->kv.n);
    if (reserves(rp)) { /* whole reservations, and the padding of finished members */
        SIM__CHECK(rp->kv.n == 0 && rp->kv.blocks == 0);
        SIM__CHECK(rp->kv_other == u->held + rp->kv_on_link + rp->left_blocks);
        /* a batch's padding and reservation end with its last member */
        SIM__CHECK(u->n > 0 || (rp->n_ghost == 0 && rp->left_blocks == 0));
    } else {
        SIM__CHECK(rp->kv.n == rp->n_decode && rp->kv.blocks == u->kv_blocks);
        SIM__CHECK(rp->kv_other == u->held + rp->kv_on_link && rp->n_ghost == 0 &&
                   rp->left_blocks == 0);
    }
    if (span > 0) SIM__CHECK(sim__rp_used_blocks(rp, span - 1) <= rp->kv_capacity);
}

/* Prefix caching: the cache's own structure, and its free queue as long as
 * the replica's free blocks -- exactly when an iteration starts (the plan
 * settled it), at least at other times (a decode run's growth is settled
 * by the next plan). */
static void check_cache(const sim__replica *rp, int64_t span)
{
    if (!rp->pc_on) {
        SIM__CHECK(rp->pc.saved == 0);
        return;
    }
    sim__pc_check(&rp->pc);
    int64_t free_now = sim__rp_free_blocks(rp);
    SIM__CHECK(span > 0 ? rp->pc.free_len == free_now : rp->pc.free_len >= free_now);
}

void sim__rp_check(const sim__replica *rp, int64_t span)
{
    sim__checks_run++;
    sim__heap_check(&rp->finishing);
    run_sums u = check_running(rp);
    SIM__CHECK(u.n <= rp->pool->max_batch && u.dead == rp->n_dead);
    int64_t waiting = check_waiting(rp->q, IN(SIM__WAITING) | IN(SIM__ARRIVED_KV));
    check_queue(&rp->partial, IN(SIM__PREFILLING), true);
    check_queue(&rp->swapped, IN(SIM__SWAPPED), false);
    /* routed here and not yet gone: its own queue's live members, its batch, its swap space */
    int64_t held = (rp->q == &rp->own ? waiting : 0) + u.n + rp->swapped.n;
    SIM__CHECK(rp->outstanding == held);
    /* finished, holding their slots and blocks until the next plan */
    int64_t n_finished = 0;
    for (const sim__request *r = rp->finished.head; r; r = r->next, n_finished++) {
        SIM__CHECK(r->dead && !r->in_running);
        SIM__CHECK(r->state == SIM__PREFILLING || r->state == SIM__DECODING);
        u.held += r->blocks;
    }
    SIM__CHECK(n_finished == rp->finished.n && (span == 0 || n_finished == 0));
    SIM__CHECK(holds_finished(rp) || rp->finished.n == 0);
    SIM__CHECK(slots_taken(rp) <= rp->pool->max_batch);
    check_kv(rp, &u, span);
    check_cache(rp, span);
}

void sim__rp_check_drained(const sim__replica *rp)
{
    sim__rp_check(rp, 0);
    SIM__CHECK(check_waiting(rp->q, IN(SIM__WAITING) | IN(SIM__ARRIVED_KV)) == 0);
    SIM__CHECK(rp->outstanding == 0 && rp->n_running == 0 && rp->swapped.n == 0);
    SIM__CHECK(rp->kv_other == 0 && rp->kv.n == 0 && rp->n_ghost == 0 && rp->left_blocks == 0);
}

#endif /* SIM_CHECKS */
