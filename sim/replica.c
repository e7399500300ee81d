/*
 * replica.c: one model replica with iteration-level (continuous) batching.
 *
 * Every iteration, all running sequences decode one token, and waiting
 * requests are admitted first come first served -- stopping at the first
 * that does not fit, as vLLM does -- while the batch holds fewer than
 * max_batch sequences, the iteration's prompt tokens stay within
 * max_batched_tokens, and the KV cache can reserve prompt + output tokens for
 * it.  Admitted prompts are prefilled in that iteration and produce their
 * first token at its end.
 *
 * Sequences are never touched per token: a sequence admitted in iteration a
 * with n output tokens finishes at the end of iteration a + n - 1, so the
 * decoding set is a heap keyed by that iteration, and the sum of decode
 * contexts at iteration i is ctx_base + n_decode * i.
 *
 * Nor are iterations, where nothing can happen between them: when an
 * iteration would admit nobody and prefill nothing, the batch cannot change
 * until a sequence finishes or a request arrives, so the replica runs ahead
 * to the next finish as one event, its time summed in closed form
 * (mdl_cost_decode_run).  An arrival that could be admitted cuts the run at
 * the end of the iteration in progress, exactly where step-by-step
 * simulation would have admitted it.
 */
#include "sim_int.h"

#include <assert.h>
#include <math.h>

static void start_iteration(sim__replica *rp);

static const sim_scenario *scenario(const sim__replica *rp)
{
    return rp->e->sc;
}

static int64_t kv_need(const sim__request *r)
{
    return (int64_t)r->prompt + r->output;
}

void sim__replica_init(sim__replica *rp, sim_engine *e, int id)
{
    *rp = (sim__replica){.e = e, .id = id, .kv_capacity = e->sc->kv_capacity_tokens};
    sim__heap_init(&rp->finishing);
}

void sim__replica_fini(sim__replica *rp)
{
    sim__heap_fini(&rp->finishing);
}

/* A request this replica could never serve would wait forever: its prompt is
 * over the per-iteration token budget, or prompt + output is over the whole
 * KV cache or the model's context window. */
static bool can_ever_fit(const sim__replica *rp, const sim__request *r)
{
    const sim_scenario *sc = scenario(rp);
    return r->prompt <= sc->max_batched_tokens && kv_need(r) <= rp->kv_capacity &&
           kv_need(r) <= sc->cost.model.max_context;
}

static void kick(sim_engine *e, void *subject, int64_t arg)
{
    sim__replica *rp = subject;
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
    sim__heap_push(&rp->e->events, rp->e->now, kick, rp, 0);
}

static void cut_run(sim__replica *rp);

/* Whether the next iteration could admit the head of the queue. */
static bool head_admissible(const sim__replica *rp)
{
    const sim__request *r = rp->head;
    return r && rp->n_decode < scenario(rp)->max_batch && rp->kv_used + kv_need(r) <= rp->kv_capacity;
}

void sim__replica_enqueue(sim__replica *rp, sim__request *r)
{
    r->replica = rp->id;
    r->enqueue_ns = rp->e->now;
    if (!can_ever_fit(rp, r)) {
        sim__request_done(rp->e, r, SIM_REJECTED, -1);
        return;
    }
    r->next = NULL;
    if (rp->tail) rp->tail->next = r;
    else rp->head = r;
    rp->tail = r;
    rp->n_waiting++;
    if (!rp->busy) schedule_kick(rp);
    else if (rp->run_decode_only && rp->head == r && head_admissible(rp)) cut_run(rp);
}

static sim__request *pop_waiting(sim__replica *rp)
{
    sim__request *r = rp->head;
    rp->head = r->next;
    if (!rp->head) rp->tail = NULL;
    rp->n_waiting--;
    return r;
}

static void admit(sim__replica *rp, mdl_batch *b)
{
    const sim_scenario *sc = scenario(rp);
    sim__request **tail = &rp->prefill;
    while (rp->head && rp->n_decode + b->n_prefill < sc->max_batch) {
        sim__request *r = rp->head;
        if (b->prefill_tokens + r->prompt > sc->max_batched_tokens) break;
        if (rp->kv_used + kv_need(r) > rp->kv_capacity) break;
        pop_waiting(rp);
        r->sched_ns = rp->e->now;
        r->admit_iter = rp->iter;
        r->next = NULL;
        *tail = r;
        tail = &r->next;
        double p = r->prompt;
        b->n_prefill++;
        b->prefill_tokens += r->prompt;
        b->prefill_sq += p * p;
        b->prefill_pairs += p * (p + 1) / 2;
        rp->kv_used += kv_need(r);
    }
    if (rp->kv_used > rp->kv_peak) rp->kv_peak = rp->kv_used;
}

static void iteration_end(sim_engine *e, void *subject, int64_t arg);

static int64_t context_sum(const sim__replica *rp)
{
    return rp->ctx_base + (int64_t)rp->n_decode * rp->iter;
}

/* Nanoseconds from the start of the decode run to the end of its k-th
 * iteration. */
static int64_t run_ns(const sim__replica *rp, int64_t k)
{
    mdl_step sum;
    mdl_cost_decode_run(&scenario(rp)->cost, rp->run_n, rp->run_ctx0, k, &sum);
    return sim__ns(sum.time_s);
}

static void schedule_end(sim__replica *rp, int64_t end_ns)
{
    if (end_ns <= rp->run_start_ns) end_ns = rp->run_start_ns + 1; /* time always advances */
    sim__heap_push(&rp->e->events, end_ns, iteration_end, rp, (int64_t)++rp->gen);
}

static void start_iteration(sim__replica *rp)
{
    assert(!rp->busy && !rp->prefill);
    mdl_batch b = {0};
    admit(rp, &b);
    b.n_decode = rp->n_decode;
    b.decode_context = context_sum(rp);
    if (b.n_prefill == 0 && b.n_decode == 0) return; /* idle until the next arrival */
    rp->busy = true;
    rp->n_prefill = b.n_prefill;
    rp->run_start_ns = rp->e->now;
    rp->run_decode_only = b.n_prefill == 0;
    if (rp->run_decode_only) { /* run ahead to the next finishing sequence */
        rp->run_last = sim__heap_top(&rp->finishing)->at;
        rp->run_n = b.n_decode;
        rp->run_ctx0 = b.decode_context;
        schedule_end(rp, rp->run_start_ns + run_ns(rp, rp->run_last - rp->iter + 1));
    } else {
        rp->run_last = rp->iter;
        mdl_cost_step(&scenario(rp)->cost, &b, &rp->step);
        schedule_end(rp, rp->run_start_ns + sim__ns(rp->step.time_s));
    }
}

/* A request that could be admitted arrived during a decode run: end the run
 * with the iteration in progress, the first boundary at or after now. */
static void cut_run(sim__replica *rp)
{
    int64_t k = rp->run_last - rp->iter + 1, lo = 1, hi = k;
    while (lo < hi) { /* smallest m whose boundary, start + run_ns(m), is at or after now */
        int64_t mid = lo + (hi - lo) / 2;
        if (rp->run_start_ns + run_ns(rp, mid) >= rp->e->now) hi = mid;
        else lo = mid + 1;
    }
    if (lo == k) return; /* the run ends with the iteration in progress anyway */
    rp->run_last = rp->iter + lo - 1;
    schedule_end(rp, rp->run_start_ns + run_ns(rp, lo));
}

static void account(sim__replica *rp)
{
    int64_t dur_ns = rp->e->now - rp->run_start_ns;
    double dur = (double)dur_ns / SIM__NS_PER_S;
    rp->busy_ns += dur_ns;
    if (rp->run_decode_only) {
        int64_t k = rp->run_last - rp->iter + 1;
        mdl_step sum;
        mdl_cost_decode_run(&scenario(rp)->cost, rp->run_n, rp->run_ctx0, k, &sum);
        rp->iterations += k;
        rp->decode_s += dur;
        rp->flops += sum.flops;
        rp->bytes += sum.bytes;
        rp->batch_seq_s += rp->run_n * dur;
        return;
    }
    double share = rp->step.prefill_s / rp->step.time_s;
    rp->iterations++;
    rp->prefill_s += dur * share;
    rp->decode_s += dur * (1 - share);
    rp->flops += rp->step.flops;
    rp->bytes += rp->step.bytes;
    rp->batch_seq_s += (rp->n_prefill + rp->n_decode) * dur;
}

/* Sequences whose last token the run's last iteration produced. */
static void finish_decoders(sim__replica *rp)
{
    const sim__event *top;
    sim__event ev;
    while ((top = sim__heap_top(&rp->finishing)) && top->at == rp->iter) {
        sim__heap_pop(&rp->finishing, &ev);
        sim__request *r = ev.subject;
        rp->n_decode--;
        rp->ctx_base -= r->prompt - r->admit_iter;
        rp->kv_used -= kv_need(r);
        sim__request_done(rp->e, r, SIM_COMPLETED, rp->e->now);
    }
}

/* Prompts prefilled by this iteration now have their first token; those
 * with more to say join the decoding set. */
static void finish_prefills(sim__replica *rp)
{
    sim__request *r = rp->prefill, *next;
    rp->prefill = NULL;
    rp->n_prefill = 0;
    for (; r; r = next) {
        next = r->next;
        r->first_token_ns = rp->e->now;
        if (r->output == 1) {
            rp->kv_used -= kv_need(r);
            sim__request_done(rp->e, r, SIM_COMPLETED, rp->e->now);
            continue;
        }
        rp->n_decode++;
        rp->ctx_base += r->prompt - rp->iter;
        sim__heap_push(&rp->finishing, rp->iter + r->output - 1, NULL, r, 0);
    }
}

static void iteration_end(sim_engine *e, void *subject, int64_t gen)
{
    sim__replica *rp = subject;
    if ((uint64_t)gen != rp->gen) return; /* this run was cut short; a later event ends it */
    account(rp);
    rp->iter = rp->run_last; /* the iteration that just ended */
    finish_decoders(rp);
    finish_prefills(rp);
    rp->iter++;
    rp->busy = false;
    rp->run_decode_only = false;
    const sim__event *next = sim__heap_top(&e->events);
    if (next && next->at == e->now) schedule_kick(rp);
    else start_iteration(rp);
}

void sim__replica_drain(sim__replica *rp)
{
    sim__event ev;
    while (rp->head) sim__request_emit(rp->e, pop_waiting(rp), SIM_UNFINISHED, -1);
    for (sim__request *r = rp->prefill, *next; r; r = next) {
        next = r->next;
        sim__request_emit(rp->e, r, SIM_UNFINISHED, -1);
    }
    rp->prefill = NULL;
    while (sim__heap_pop(&rp->finishing, &ev)) sim__request_emit(rp->e, ev.subject, SIM_UNFINISHED, -1);
}

void sim__replica_row(const sim__replica *rp, sim_replica_row *row)
{
    const mdl_cost *cm = &scenario(rp)->cost;
    *row = (sim_replica_row){
        .replica = rp->id,
        .gpu = cm->gpu.id,
        .model = cm->model.id,
        .busy_s = (double)rp->busy_ns / SIM__NS_PER_S,
        .prefill_s = rp->prefill_s,
        .decode_s = rp->decode_s,
        .iterations = rp->iterations,
        .flops = rp->flops,
        .bytes = rp->bytes,
        .batch_seq_s = rp->batch_seq_s,
        .kv_capacity_tokens = rp->kv_capacity,
        .kv_peak_tokens = rp->kv_peak,
        .peak_flops = cm->gpu.flops,
        .peak_bw = cm->gpu.mem_bw,
    };
}
