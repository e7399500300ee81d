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
 * Admission takes the queue in its order and stops at the first request
 * that does not fit, as vLLM's does.  The order is first come first served
 * unless the pool's scheduling_policy gives another (sim__policy_compose): each
 * family then has its `order`, `victim` and `displace` replaced --
 *
 *  priority       vLLM's policy of that name: the key (priority, arrival),
 *                 lower first -- a recompute goes back to its own place, not
 *                 the head (v1's PriorityRequestQueue.prepend_request is
 *                 add_request); the cache's victim is the least urgent,
 *                 latest running request (v1 scheduler.py, max over running
 *                 of (priority, arrival_time)); and a head that cannot be
 *                 admitted preempts, by recompute, the least urgent running
 *                 request that is less urgent than itself, one after another
 *                 until it fits (v0 scheduler.py, _schedule_priority_
 *                 preemption).  Static batching only orders its batches.
 *  deadline       earliest deadline first, aged: the key is arrival +
 *                 deadline_s / (1 + deadline_aging) (sim__sched_stamp says
 *                 why), requests without a deadline after every one with,
 *                 first come first served; the cache's victim is the latest
 *                 deadline; nothing is preempted to admit.
 *
 * An admission rule other than the limits every family applies (LoRA
 * slots, a tenant's share) is another `may_admit`.
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

/* (priority, arrival): the priority, offset to be positive, above the id,
 * which counts arrivals (a recompute keeps its place).  The id has 42 bits
 * (4.4e12 requests) and the priority 21. */
#define PRIORITY_SHIFT 42
int64_t sim__priority_key(const sim__request *r)
{
    assert(r->id < (INT64_C(1) << PRIORITY_SHIFT));
    int64_t level = (int64_t)r->priority - WL_PRIORITY_MIN;
    return level << PRIORITY_SHIFT | r->id;
}

static int64_t by_priority(const sim__request *r, int64_t joined, bool front)
{
    (void)joined, (void)front;
    return sim__priority_key(r);
}

/* Requests without a deadline come after every deadline (under 2e18 ns:
 * an arrival and a deadline_s within the horizon), in arrival order. */
#define NO_DEADLINE (INT64_C(1) << 61)

/* The aged deadline (sim__sched_stamp); equal ones leave in the order they
 * joined the queue. */
static int64_t by_deadline(const sim__request *r, int64_t joined, bool front)
{
    (void)joined, (void)front;
    return r->aged_ns;
}

void sim__sched_stamp(const sim_pool *p, sim__request *r)
{
    /* Aging brings a waiting request's deadline in by deadline_aging
     * seconds per second waited: at any instant t the effective deadlines
     * are d - a (t - arrival), and since every waiting request ages at the
     * same rate, their order is that of arrival + (d - arrival) / (1 + a),
     * which does not change with t -- a key fixed once, in a heap. */
    if (r->deadline_ns < 0) {
        r->aged_ns = NO_DEADLINE + r->arrival_ns;
        return;
    }
    double rel = (double)(r->deadline_ns - r->arrival_ns) / (1 + p->deadline_aging);
    r->aged_ns = r->arrival_ns + (int64_t)(rel + 0.5);
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

/* The running request that the order puts last, the least urgent, that
 * may be preempted: not one timed out (its step drops it) nor, if
 * `planned` is false, one with a prompt chunk already planned in this
 * iteration (its cost is counted). */
static sim__request *least_urgent(const sim__replica *rp, bool planned)
{
    sim__request *worst = NULL;
    int64_t worst_key = INT64_MIN;
    for (sim__request *r = rp->run_head; r; r = r->run_next) {
        if (r->dead || (!planned && r->chunk > 0)) continue;
        int64_t key = rp->policy->order(r, 0, false);
        if (key >= worst_key) worst = r, worst_key = key; /* the later admitted on a tie */
    }
    return worst;
}

/* The cache's victim in an ordered queue: the least urgent running request
 * (vLLM v1: max(running, key=(priority, arrival_time))). */
static sim__request *least_urgent_victim(const sim__replica *rp)
{
    sim__request *r = least_urgent(rp, true);
    return r ? r : rp->run_tail; /* every one timed out: any */
}

/* Priority preemption: head, which cannot be admitted, takes the place of
 * the least urgent running request if that one is less urgent than head
 * (vLLM v0: _get_priority(running[-1]) > _get_priority(seq_group)). */
static sim__request *less_urgent(const sim__replica *rp, const sim__request *head)
{
    sim__request *r = least_urgent(rp, false);
    if (!r || rp->policy->order(r, 0, false) <= rp->policy->order(head, 0, false)) return NULL;
    return r;
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

/* ---- the families in an order other than arrival (scheduling_policy) ---- */

const sim__policy *sim__policy_compose(sim__policy *out, const sim_pool *p)
{
    const sim__policy *family = &sim__policies[p->policy];
    if (p->order == SIM_ORDER_FCFS) return family;
    *out = *family; /* its budget, admission and hold stay the family's */
    out->order = p->order == SIM_ORDER_PRIORITY ? by_priority : by_deadline;
    out->victim = least_urgent_victim;
    /* a static batch runs to its end: it preempts nothing */
    if (p->order == SIM_ORDER_PRIORITY && !(family->flags & SIM__SF_RESERVES))
        out->displace = less_urgent;
    return out;
}
