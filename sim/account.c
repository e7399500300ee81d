/*
 * account.c: what a replica did -- the totals of its row (time, work,
 * tokens, energy, KV occupancy), and, with --record-iterations, a row per
 * iteration, every step of a decode run from the run's closed form.  A
 * leaf: it reads a replica and writes its totals and the sink, and calls
 * nothing else of the engine's.
 */
#include "sim_int.h"

void sim__ac_kv_peak(sim__replica *rp)
{
    int64_t used = sim__rp_used_blocks(rp, 0);
    if (used > rp->kv_peak) rp->kv_peak = used;
}

/* KV tokens in use `t` decode steps into the span that is ending. */
static int64_t kv_tokens_at(const sim__replica *rp, int64_t t)
{
    return sim__rp_used_blocks(rp, t) * rp->pool->block_tokens;
}

/* Tokens' worth of the blocks tier t holds (NULL: none, -1), or of a
 * node's tier the replica's share, as tier_bytes gives its share of the
 * bytes: a node's replicas' rows add up to its tier (to a token).  A tier
 * changes only as a step is planned (what the GPU cache evicts goes down
 * as the plan settles it), so as a step ends it holds what its plan left. */
static int64_t tier_tokens(const sim__replica *rp, const sim__pcache *t)
{
    if (!t) return -1;
    int64_t tokens = t->free_len * rp->pool->block_tokens;
    return rp->node ? llround((double)tokens / rp->node->members) : tokens;
}

/* A step's place in the engine's pipeline (docs/engines.md): when its plan
 * was made, when its GPU work ran and when its tokens reached the client.
 * A synchronous engine plans it as it starts and the host's time comes
 * first; an asynchronous one planned it `planned_ns` (while the GPU ran the
 * step before) and runs its GPU work from the start, the host's alongside. */
typedef struct stamps {
    int64_t start_ns, end_ns, planned_ns;
    double gpu_s;
} stamps;

/* A step's row to the sink; a speculative step's is held until its
 * decoders' acceptances are drawn (sim__ac_spec_step), which come after
 * the totals and the KV as the step left them are read here. */
static void emit_iteration(sim__replica *rp, const stamps *t, int32_t prefill_tokens,
                           int32_t decode_seqs, int64_t kv_tokens, double flops, double bytes)
{
    sim_engine *e = rp->e;
    const sim_pool *p = rp->pool;
    double start = sim__secs(t->start_ns), end = sim__secs(t->end_ns);
    double dur = (double)(t->end_ns - t->start_ns) / SIM__NS_PER_S;
    double gpu_start = p->async_scheduling ? start : end - t->gpu_s;
    sim_iteration_row row = {
        .replica = rp->id,
        .start_s = start,
        .end_s = end,
        .scheduled_s = sim__secs(p->async_scheduling ? t->planned_ns : t->start_ns),
        .gpu_start_s = gpu_start,
        .gpu_end_s = gpu_start + t->gpu_s,
        .client_s = end + p->output_s,
        .prefill_tokens = prefill_tokens,
        .decode_seqs = decode_seqs,
        .decode_tokens = decode_seqs ? rp->n_decode : 0,
        .kv_tokens = kv_tokens,
        .cpu_tier_tokens = tier_tokens(rp, rp->pc.lower),
        .disk_tier_tokens = tier_tokens(rp, rp->pc.lower ? rp->pc.lower->lower : NULL),
        .flops = flops,
        .bytes = bytes,
        .energy_j = mdl_power_w(&p->cost.gpu, p->gpus, flops, bytes, dur) * dur,
    };
    if (rp->spec_width > 1 && decode_seqs) {
        rp->spec_row = row;
        rp->spec_row_held = true;
        return;
    }
    if (!e->sink_rc) e->sink_rc = e->sink.iteration(e->sink.ctx, &row);
}

void sim__ac_spec_step(sim__replica *rp, const int32_t *by)
{
    if (!rp->spec_row_held) return;
    rp->spec_row_held = false;
    sim_iteration_row *row = &rp->spec_row;
    row->spec_k = rp->pool->spec.k;
    row->decode_tokens = 0;
    for (int j = 0; j <= row->spec_k; j++) {
        row->accepted[j] = by[j];
        row->decode_tokens += (j + 1) * by[j];
    }
    sim_engine *e = rp->e;
    if (!e->sink_rc) e->sink_rc = e->sink.iteration(e->sink.ctx, row);
}

/* With --record-iterations, every step of a decode run is a row: its times
 * and work from the run's closed form, step by step, and its GPU time from
 * the step's own cost (the one place where the engine does work per step,
 * and only when asked).  Step j + 1 was planned as step j began. */
static void emit_run_steps(sim__replica *rp, int64_t steps)
{
    mdl_step before = {0}, upto, one;
    int32_t seqs = rp->n_decode + rp->n_ghost;
    stamps t = {.start_ns = rp->run_start_ns, .planned_ns = rp->seen_ns};
    for (int64_t j = 1; j <= steps; j++) {
        mdl_run_cost(&rp->run, j, &upto);
        t.end_ns = j == steps ? rp->e->now : rp->run_start_ns + sim__run_ns(rp, j);
        mdl_batch b = {.n_decode = seqs, .decode_context = rp->run.ctx0 + (int64_t)seqs * (j - 1)};
        mdl_cost_step(&rp->pool->cost, &b, &one);
        t.gpu_s = one.gpu_s;
        emit_iteration(rp, &t, 0, seqs, kv_tokens_at(rp, j - 1), upto.flops - before.flops,
                       upto.bytes - before.bytes);
        before = upto;
        t.planned_ns = t.start_ns;
        t.start_ns = t.end_ns;
    }
}

/* Energy at the span's own utilisation, and KV in use over time (a decode
 * run's grows: the mean of its first and last steps). */
static void account_energy(sim__replica *rp, int64_t steps, double dur, double flops, double bytes)
{
    const sim_pool *p = rp->pool;
    rp->energy_j += mdl_power_w(&p->cost.gpu, p->gpus, flops, bytes, dur) * dur;
    rp->kv_token_s += 0.5 * (double)(kv_tokens_at(rp, 0) + kv_tokens_at(rp, steps - 1)) * dur;
}

/* Speculative decoding: the drafter's time (a draft model's prefill of
 * the prompt chunks too, in any step), the rest of the steps that
 * speculated (the target's verification, and the host's), and the decode
 * steps that did not (disable_by_batch_size, the budget). */
static void account_speculation(sim__replica *rp, int64_t steps, double dur)
{
    if (rp->pool->spec.method == SIM_SPEC_NONE) return;
    double draft = rp->run_decode_only ? 0 : fmin(rp->spec_draft_s, dur);
    rp->spec_drafting_s += draft;
    if (!(rp->decodes || rp->run_decode_only)) return;
    if (rp->spec_width <= 1) {
        rp->spec_off_steps += steps;
        return;
    }
    rp->spec_steps++;
    rp->spec_verify_s += dur - draft;
}

void sim__ac_iteration(sim__replica *rp, int64_t steps)
{
    int64_t dur_ns = rp->e->now - rp->run_start_ns;
    double dur = (double)dur_ns / SIM__NS_PER_S;
    rp->busy_ns += dur_ns;
    rp->swap_bytes_total += rp->swap_bytes;
    int32_t seqs = rp->n_chunks + (rp->decodes ? rp->n_decode + rp->n_ghost : 0);
    rp->batch_seq_s += seqs * dur;
    rp->decode_tokens += (rp->decodes || rp->run_decode_only) ? (int64_t)rp->n_decode * steps : 0;
    account_speculation(rp, steps, dur);
    for (int i = 0; i < rp->n_chunks; i++) rp->prefill_tokens += rp->chunks[i]->chunk;
    if (rp->run_decode_only) {
        mdl_step sum;
        mdl_run_cost(&rp->run, steps, &sum);
        rp->iterations += steps;
        rp->decode_s += dur;
        rp->flops += sum.flops;
        rp->bytes += sum.bytes;
        rp->out_of_range += sum.out_of_range;
        account_energy(rp, steps, dur, sum.flops, sum.bytes);
        if (rp->e->sink.iteration) emit_run_steps(rp, steps);
        return;
    }
    double share = rp->cost.time_s > 0 ? rp->cost.prefill_s / rp->cost.time_s : 0;
    rp->iterations++;
    rp->prefill_s += dur * share;
    rp->decode_s += dur * (1 - share);
    rp->flops += rp->cost.flops;
    rp->bytes += rp->cost.bytes;
    rp->out_of_range += rp->cost.out_of_range;
    account_energy(rp, 1, dur, rp->cost.flops, rp->cost.bytes);
    if (rp->e->sink.iteration) {
        int32_t prefill = 0;
        for (int i = 0; i < rp->n_chunks; i++) prefill += rp->chunks[i] ? rp->chunks[i]->chunk : 0;
        stamps t = {rp->run_start_ns, rp->e->now, rp->seen_ns, rp->cost.gpu_s};
        emit_iteration(rp, &t, prefill, rp->decodes ? rp->n_decode + rp->n_ghost : 0,
                       kv_tokens_at(rp, 0), rp->cost.flops, rp->cost.bytes);
    }
}

/* A tier's bytes on the replica's row (0: none): its own tier's, or its
 * share of its node's -- the node's bytes over the replicas on it as the
 * row is written, so that the rows of a node's last replicas add up to
 * its tier. */
static double tier_bytes(const sim__replica *rp, const sim__pcache *t)
{
    if (!t) return 0;
    return (double)t->capacity * rp->block_bytes / (rp->node ? rp->node->members : 1);
}

void sim__ac_row(const sim__replica *rp, sim_replica_row *row)
{
    const sim_pool *p = rp->pool;
    const mdl_cost *cm = &p->cost;
    *row = (sim_replica_row){
        .replica = rp->id,
        .pool = p->name,
        .gpu = cm->gpu.id,
        .model = cm->model.id,
        .gpus = p->gpus,
        .busy_s = (double)rp->busy_ns / SIM__NS_PER_S,
        .prefill_s = rp->prefill_s,
        .decode_s = rp->decode_s,
        .iterations = rp->iterations,
        .flops = rp->flops,
        .bytes = rp->bytes,
        .batch_seq_s = rp->batch_seq_s,
        .kv_capacity_tokens = rp->kv_capacity * p->block_tokens,
        .kv_peak_tokens = rp->kv_peak * p->block_tokens,
        /* a speculative drafter's weights and its layers' KV sit beside the target's */
        .weight_bytes = cm->weight_bytes + p->spec.head_weight_bytes,
        .kv_bytes_per_token = cm->kv_bytes_per_token + p->spec.head_kv_bytes_per_token,
        .preemptions = rp->preemptions,
        .prefill_tokens = rp->prefill_tokens,
        .decode_tokens = rp->decode_tokens,
        .swap_bytes = rp->swap_bytes_total,
        .evicted_blocks = rp->pc.evicted,
        .cpu_tier_bytes = tier_bytes(rp, rp->pc.lower),
        .cpu_lookup_tokens = rp->cpu_lookup_tokens,
        .cpu_hit_tokens = rp->cpu_hit_tokens,
        .cpu_stored_bytes = (double)rp->pc.sent[0] * rp->block_bytes,
        .cpu_loaded_bytes = (double)rp->pc.got[0] * rp->block_bytes,
        .disk_tier_bytes = tier_bytes(rp, rp->pc.lower ? rp->pc.lower->lower : NULL),
        .disk_lookup_tokens = rp->disk_lookup_tokens,
        .disk_hit_tokens = rp->disk_hit_tokens,
        .disk_stored_bytes = (double)rp->pc.sent[1] * rp->block_bytes,
        .disk_loaded_bytes = (double)rp->pc.got[1] * rp->block_bytes,
        .out_of_range = rp->out_of_range,
        .peak_flops = cm->gpu.flops * p->gpus,
        .peak_bw = cm->gpu.mem_bw * p->gpus,
        .tdp_w = cm->gpu.tdp_w,
        .idle_w = cm->gpu.idle_w,
        .prefill_w = cm->gpu.prefill_w,
        .decode_w = cm->gpu.decode_w,
        .energy_j = rp->energy_j,
        .kv_token_s = rp->kv_token_s,
        .usd_per_gpu_hour = p->usd_per_gpu_hour,
        .created_s = sim__secs(rp->created_ns),
        .ready_s = sim__secs(rp->ready_ns),
        .retired_s = sim__secs(rp->e->now),
        .end_reason = SIM_END_OF_RUN,
        .drain_s = sim__secs(rp->drain_ns),
        .output_s = p->output_s,
        .spec_k = p->spec.method == SIM_SPEC_NONE ? 0 : p->spec.k,
        .spec_steps = rp->spec_steps,
        .spec_off_steps = rp->spec_off_steps,
        .spec_drafts = rp->spec_drafts,
        .spec_draft_tokens = rp->spec_draft_tokens,
        .spec_accepted = rp->spec_accepted,
        .spec_drafting_s = rp->spec_drafting_s,
        .spec_verify_s = rp->spec_verify_s,
        .lora_slots = p->lora.on ? p->lora.max_loras : 0,
        .lora_lookups = rp->lora_lookups,
        .lora_gpu_hits = rp->lora_gpu_hits,
        .lora_cpu_hits = rp->lora_cpu_hits,
        .lora_load_s = rp->lora_load_s,
        .lora_kernel_s = rp->lora_kernel_s,
    };
}
