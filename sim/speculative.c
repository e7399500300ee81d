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
 * K, in K passes of its own.
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

/* The drafter's K passes: the first over every verified position (it
 * reads the target's hidden states of all of them), the next K - 1 over
 * one position a sequence, each attending its own one-layer KV.  n-gram
 * lookup runs on the host and costs the GPU nothing. */
void sim__sp_draft_cost(sim__replica *rp, int32_t n, int64_t ctx, mdl_step *step)
{
    const sim_spec *sp = &rp->pool->spec;
    rp->spec_draft_s = 0;
    if (rp->spec_width <= 1 || sp->method == SIM_SPEC_NGRAM || n == 0) return;
    mdl_step one;
    double t = 0, flops = 0, bytes = 0;
    for (int pass = 0; pass < sp->k; pass++) {
        mdl_batch b = {.n_decode = n, .decode_context = ctx + (int64_t)n * pass,
                       .decode_width = pass == 0 ? rp->spec_width : 1};
        mdl_cost_step(&sp->head, &b, &one);
        t += one.gpu_s;
        flops += one.flops;
        bytes += one.bytes;
    }
    rp->spec_draft_s = t;
    step->time_s += t;
    step->gpu_s += t;
    step->decode_s += t;
    step->flops += flops;
    step->bytes += bytes;
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
