/*
 * speculative.c: speculative decoding in a replica's step -- whether the
 * step speculates, what its drafter costs, and how many drafts each
 * sequence's verification accepts.  replica.c plans the step with the
 * width and KV pad set here and moves each decoder by what it accepted
 * (docs/speculative-decoding.md).
 *
 * The step as vLLM V1 runs it (v0.11, gpu_model_runner.py and
 * scheduler.py): every running sequence is scheduled 1 + K tokens, the
 * last sampled token and its K drafts, against max_num_batched_tokens;
 * allocate_slots holds KV for them and K lookahead slots more for a
 * drafter that writes KV (EAGLE, MTP); the target verifies the K + 1
 * positions in one forward pass, the rejection sampler keeps the accepted
 * prefix and one token of its own, and the drafter then proposes the next
 * K, in K passes of its own.  A draft model (vLLM V0's; V1 refuses it)
 * drafts the same way and prefills every prompt besides.
 */
#include "sim_int.h"

/* The pool speculates, and the batch allows it this step. */
static bool speculates(const sim__replica *rp)
{
    const sim_spec *sp = &rp->pool->spec;
    if (sp->method == SIM_SPEC_NONE || rp->n_decode == 0) return false;
    if (sp->disable_above && rp->n_running > sp->disable_above) return false;
    /* every decoder's K + 1 positions in the budget, whatever the family
     * gives prompts: vLLM trims the drafts of the sequences the budget
     * cannot hold; this keeps every decoder's width the same (the KV pad
     * is one closed-form term), so such a step does not speculate */
    return (int64_t)rp->n_decode * (sp->k + 1) <= rp->pool->max_batched_tokens;
}

void sim__sp_off(sim__replica *rp)
{
    rp->spec_width = 1;
    rp->kv_pad = 0;
}

void sim__sp_plan(sim__replica *rp)
{
    const sim_spec *sp = &rp->pool->spec;
    if (!speculates(rp)) {
        sim__sp_off(rp);
        return;
    }
    rp->spec_width = sp->k + 1;
    rp->kv_pad = sp->pad; /* the drafts' slots, then the drafter's */
}

/* Adds the drafter's pass over b to *sum (its time in gpu_s). */
static void add_pass(const sim_spec *sp, const mdl_batch *b, mdl_step *sum)
{
    mdl_step one;
    mdl_cost_step(&sp->head, b, &one);
    sum->gpu_s += one.gpu_s;
    sum->flops += one.flops;
    sum->bytes += one.bytes;
}

/* The drafter's passes d, as the step's prefill or decode work and as
 * drafting time. */
static void charge(sim__replica *rp, const mdl_step *d, mdl_step *step, bool prefill)
{
    rp->spec_draft_s += d->gpu_s;
    step->time_s += d->gpu_s;
    step->gpu_s += d->gpu_s;
    if (prefill) step->prefill_s += d->gpu_s;
    else step->decode_s += d->gpu_s;
    step->flops += d->flops;
    step->bytes += d->bytes;
}

/* A draft model keeps a KV cache of its own, so it computes every prompt
 * chunk the target does (vLLM V0's _run_no_spec sends a step's input to
 * the proposer too); a head on the target's hidden states drafts from the
 * verification pass alone. */
static void draft_prefill(sim__replica *rp, const mdl_batch *b, mdl_step *step)
{
    if (rp->pool->spec.method != SIM_SPEC_DRAFT || b->n_prefill == 0) return;
    mdl_batch pre = *b;
    pre.n_decode = 0;
    pre.decode_context = 0;
    pre.decode_width = 0;
    mdl_step d = {0};
    add_pass(&rp->pool->spec, &pre, &d);
    charge(rp, &d, step, true);
}

/* n-gram lookup: each speculating sequence's whole context scanned on the
 * host, after the step's outputs are known and before the next is planned
 * (vLLM V1 runs it after the bookkeeping sync, on the critical path), so
 * its time adds to the step's as host time, the GPU idle. */
static void lookup(sim__replica *rp, const mdl_batch *b, mdl_step *step)
{
    double t = (double)b->decode_context * rp->pool->spec.lookup_s_per_token;
    rp->spec_draft_s += t;
    step->time_s += t;
    step->decode_s += t;
}

/* The drafter's K passes: the first over every verified position (it
 * reads the target's hidden states of all of them, or, a draft model, the
 * tokens the verification kept), the next K - 1 over one position a
 * sequence, each attending its own KV.  n-gram lookup runs on the host
 * (lookup). */
void sim__sp_draft_cost(sim__replica *rp, const mdl_batch *b, mdl_step *step)
{
    const sim_spec *sp = &rp->pool->spec;
    draft_prefill(rp, b, step);
    int32_t n = b->n_decode;
    if (rp->spec_width <= 1 || n == 0) return;
    if (sp->method == SIM_SPEC_NGRAM) {
        lookup(rp, b, step);
        return;
    }
    mdl_step d = {0};
    for (int pass = 0; pass < sp->k; pass++) {
        mdl_batch one = {.n_decode = n, .decode_context = b->decode_context + (int64_t)n * pass,
                         .decode_width = pass == 0 ? rp->spec_width : 1};
        add_pass(sp, &one, &d);
    }
    charge(rp, &d, step, false);
}

/* A uniform on [0, 1) from the run's seed, the request and its progress:
 * two rounds of util_mix64 over the three. */
static double draw_uniform(uint64_t seed, int64_t id, int32_t generated)
{
    uint64_t x = util_mix64(seed ^ util_mix64((uint64_t)id * 0x9e3779b97f4a7c15ull +
                                              (uint64_t)(uint32_t)generated));
    return (double)(x >> 11) * 0x1.0p-53;
}

int sim__sp_accepted(sim__replica *rp, const sim__request *r, int32_t generated)
{
    const sim_spec *sp = &rp->pool->spec;
    const sim_accept *acc = sp->by_class ? &sp->by_class[r->cls] : &sp->accept;
    double u = draw_uniform(rp->e->sc->seed, r->id, generated);
    int j = 0;
    while (j < sp->k && u >= acc->cdf[j]) j++;
    rp->spec_drafts++;
    rp->spec_draft_tokens += sp->k;
    rp->spec_accepted += j;
    return j;
}
