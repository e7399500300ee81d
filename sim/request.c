/*
 * request.c: a request's life from the pool and back -- taken, recorded,
 * done or cancelled -- the FIFO queues its embedded link makes, and the
 * waiting queues that its scheduler family orders.  Every
 * file of the engine calls here; from here calls go only to the request's
 * holder (a replica dropping a timed-out request) and to its owner (the
 * client told that its call ended).  A row holds the client's clock: with
 * host.output_s, the client sees each token, and its owner the reply, that
 * long after the iteration that made it.
 *
 * The pool grows by slabs of requests as the requests in flight grow, never
 * with the run, and a struct in use has an id >= 0, so that a walk of the
 * slabs finds every request still in the system (an interrupted run's
 * unfinished rows).
 */
#include "sim_int.h"

#include <stdlib.h>
#include <string.h>

#define SLAB_REQUESTS 1024

/* ---- the pool ---- */

sim__request *sim__rq_new(sim_engine *e)
{
    if (!e->free_list) { /* memory grows with requests in flight, never with the run */
        sim__slab *s = util_xmalloc(sizeof *s + SLAB_REQUESTS * sizeof(sim__request));
        s->next = e->slabs;
        e->slabs = s;
        for (int i = 0; i < SLAB_REQUESTS; i++) {
            s->reqs[i].id = -1;
            s->reqs[i].next = e->free_list;
            e->free_list = &s->reqs[i];
        }
    }
    sim__request *r = e->free_list;
    e->free_list = r->next;
    *r = (sim__request){.arrival_ns = -1, .enqueue_ns = -1, .sched_ns = -1,
                        .first_token_ns = -1, .decode_enqueue_ns = -1, .replica = -1,
                        .decode_replica = -1, .user = -1, .call_index = -1, .restarted_from = -1,
                        .timeout_slot = SIM__NO_SLOT, .finish_slot = SIM__NO_SLOT,
                        .pc_fill = -1, .holder = -1, .deadline_ns = -1, .retry_of = -1,
                        .attempt = 1};
    return r;
}

void sim__rq_free(sim_engine *e, sim__request *r)
{
    /* A time-out that can no longer fire would still hold the heap, and the
     * run's end, until its time. */
    if (r->timeout_slot != SIM__NO_SLOT) sim__heap_remove(&e->events, r->timeout_slot);
    free(r->segs);
    r->segs = NULL;
    r->id = -1; /* a walk of the pool knows it is gone */
    r->next = e->free_list;
    e->free_list = r;
}

void sim__rq_pool_fini(sim_engine *e)
{
    for (sim__slab *s = e->slabs, *next; s; s = next) {
        next = s->next;
        for (int i = 0; i < SLAB_REQUESTS; i++) /* an interrupted run's, still in use */
            if (s->reqs[i].id >= 0) free(s->reqs[i].segs);
        free(s);
    }
    e->slabs = NULL;
    e->free_list = NULL;
}

/* ---- its row and its end ---- */

/* How long the tokens a replica makes take to reach the client (its pool's
 * host.output_s); none from no replica. */
static int64_t output_ns(const sim_engine *e, int32_t replica)
{
    return replica < 0 ? 0 : sim__ns(e->fleet.by_id[replica].pool->output_s);
}

/* The replica that made a request's last token: its decode replica when
 * disaggregated. */
static int32_t last_replica(const sim__request *r)
{
    return r->decode_replica >= 0 ? r->decode_replica : r->replica;
}

/* When the client saw the first token: output_s after the replica made it.
 * A request that ended otherwise than completed (timed out, unfinished) may
 * end before its first token got out: then the client never saw one. */
static int64_t seen_first_ns(const sim_engine *e, const sim__request *r, bool completed)
{
    if (r->first_token_ns < 0) return -1;
    int64_t seen = r->first_token_ns + output_ns(e, r->replica);
    return completed || seen <= e->now ? seen : -1;
}

/* Its deadline (after its arrival) and tenant. */
static void record_class_sched(const sim__request *r, sim_request_row *row)
{
    row->deadline_s = r->deadline_ns >= 0 ? sim__secs(r->deadline_ns - r->arrival_ns) : NAN;
    row->tenant = r->tenant;
}

void sim__rq_record(sim_engine *e, const sim__request *r, const char *status, int64_t finish_ns)
{
    /* Rows hold the client's clock: tokens reach it output_s after the
     * iteration that made them. */
    bool completed = !strcmp(status, SIM_COMPLETED);
    int64_t engine_finish_ns = finish_ns, first_ns = seen_first_ns(e, r, completed);
    if (finish_ns >= 0) finish_ns += output_ns(e, last_replica(r));
    sim_request_row row = {
        .id = r->id,
        .cls = e->sc->workload.classes[r->cls].name,
        .task_id = r->task ? r->task->id : -1,
        .call_index = r->call_index,
        .replica = r->replica,
        .decode_replica = r->decode_replica,
        .status = status,
        .arrival_s = sim__secs(r->arrival_ns),
        .enqueue_s = sim__secs(r->enqueue_ns),
        .first_scheduled_s = sim__secs(r->sched_ns),
        .first_token_s = sim__secs(first_ns),
        .finish_s = sim__secs(finish_ns),
        .decode_enqueue_s = sim__secs(r->decode_enqueue_ns),
        .engine_first_token_s = sim__secs(r->first_token_ns),
        .engine_finish_s = sim__secs(engine_finish_ns),
        .prompt_tokens = r->prompt,
        .cached_tokens = r->hit_tokens,
        .cpu_hit_tokens = e->sc->kv_offload.cpu_bytes > 0 ? r->cpu_hits : -1,
        .disk_hit_tokens = e->sc->kv_offload.disk_bytes > 0 ? r->disk_hits : -1,
        .output_tokens = r->output,
        .preemptions = r->preemptions,
        .slow = r->slow,
        .priority = r->priority,
        .reason = r->reason,
        .retry_of = r->retry_of,
        .retried = r->retried,
        .restarts = r->restarts,
        .restarted_from = r->restarted_from,
    };
    record_class_sched(r, &row);
    if (!e->sink_rc && e->sink.request) e->sink_rc = e->sink.request(e->sink.ctx, &row);
}

/* A completed call's owner, told output_s after the engine finished it:
 * arg packs its user (high half) and its output tokens (low half). */
static void notify_later(sim_engine *e, void *subject, int64_t arg)
{
    uint64_t a = (uint64_t)arg;
    int32_t user = (int32_t)(a >> 32), output = (int32_t)(a & 0x7fffffff);
    sim__cl_notify(e, subject, user, true, output, false);
}

/* Records r's end and tells its owner.  r is freed first, unless the
 * caller keeps it (sim__rq_done_kept): then nothing may end it again -- its
 * time-out is gone and it counts as recorded (dead). */
static void end(sim_engine *e, sim__request *r, const char *status, int64_t finish_ns, bool keep)
{
    bool ok = finish_ns >= 0; /* completed; else rejected at arrival */
    int64_t late = ok ? output_ns(e, last_replica(r)) : 0;
    e->done++;
    sim__gw_left(e, r);
    bool again = !ok && sim__cl_retry(e, r, status); /* marks r's row retried */
    sim__rq_record(e, r, status, finish_ns);
    if (again) { /* its client is told by its last attempt */
        if (keep) r->dead = true;
        else sim__rq_free(e, r);
        return;
    }
    sim__task *t = r->task;
    int32_t user = r->user, output = r->output;
    if (keep) {
        if (r->timeout_slot != SIM__NO_SLOT) sim__heap_remove(&e->events, r->timeout_slot);
        r->dead = true;
    } else {
        sim__rq_free(e, r);
    }
    /* Without output_s the owner is told at once, as sim_int.h explains:
     * an event would reorder this instant's events.  With it, the reply
     * reaches the client later, and so does its next call. */
    if (late > 0 && (t || user != -1)) {
        uint64_t arg = (uint64_t)(uint32_t)user << 32 | (uint32_t)output;
        sim__heap_push(&e->events, finish_ns + late, notify_later, t, (int64_t)arg);
        return;
    }
    sim__cl_notify(e, t, user, ok, ok ? output : 0, !ok);
}

void sim__rq_done(sim_engine *e, sim__request *r, const char *status, int64_t finish_ns)
{
    end(e, r, status, finish_ns, false);
}

void sim__rq_reject(sim_engine *e, sim__request *r, const char *reason)
{
    r->reason = reason;
    end(e, r, SIM_REJECTED, -1, false);
}

void sim__rq_done_kept(sim_engine *e, sim__request *r, const char *status, int64_t finish_ns)
{
    end(e, r, status, finish_ns, true);
}

void sim__rq_recompute(sim__request *r)
{
    r->state = SIM__WAITING;
    r->prefill_target = (int64_t)r->prompt + r->generated;
    r->cached = 0;
}

void sim__rq_fail_on(sim_engine *e, sim__request *r, int32_t replica)
{
    /* the failed replica in the column of its role: decode (its KV cache
     * arrived there, or it decoded there) or prefill -- not an earlier
     * replica a restarted request passed through */
    if (r->state == SIM__ARRIVED_KV || r->decode_replica == replica) r->decode_replica = replica;
    else r->replica = replica;
    sim__rq_done(e, r, SIM_FAILED, -1);
}

void sim__rq_cancel(sim_engine *e, sim__request *r)
{
    r->dead = true;
    switch ((sim__state)r->state) {
    case SIM__SENDING:      /* dropped when it reaches the router */
    case SIM__TRANSFERRING: /* dropped when it reaches the decode pool */
        return;
    case SIM__WAITING:
    case SIM__ARRIVED_KV: /* in a central queue, no replica holds it yet */
        if (r->holder >= 0) sim__rp_cancel(sim__fl_get(e, r->holder), r);
        return;
    case SIM__SWAPPED:
    case SIM__PREFILLING:
    case SIM__DECODING: sim__rp_cancel(sim__fl_get(e, r->holder), r); return;
    case SIM__HELD: sim__gw_cancel(e, r); return; /* dropped when it reaches the head */
    case SIM__BACKOFF: return; /* not sent yet: nothing times it out */
    }
}

void sim__rq_drain(sim_engine *e)
{
    for (sim__slab *s = e->slabs; s; s = s->next)
        for (int i = 0; i < SLAB_REQUESTS; i++) {
            const sim__request *r = &s->reqs[i];
            if (r->id >= 0 && !r->dead) sim__rq_record(e, r, SIM_UNFINISHED, -1);
        }
}

/* ---- queues ---- */

void sim__queue_push(sim__queue *q, sim__request *r)
{
    r->next = NULL;
    if (q->tail) q->tail->next = r;
    else q->head = r;
    q->tail = r;
    q->n++;
}

sim__request *sim__queue_pop(sim__queue *q)
{
    sim__request *r = q->head;
    if (!r) return NULL;
    q->head = r->next;
    if (!q->head) q->tail = NULL;
    q->n--;
    r->next = NULL;
    return r;
}

void sim__queue_remove(sim__queue *q, sim__request *r)
{
    sim__request **p = &q->head, *prev = NULL;
    while (*p && *p != r) {
        prev = *p;
        p = &(*p)->next;
    }
    if (!*p) return;
    *p = r->next;
    if (q->tail == r) q->tail = prev;
    q->n--;
    r->next = NULL;
}

/* ---- waiting queues ---- */

/* Lower key first; equal keys (a deadline two classes share) in the order
 * they joined.  First come first served's keys never tie. */
static bool before(const sim__waitq_entry *a, const sim__waitq_entry *b)
{
    return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

void sim__waitq_init(sim__waitq *q, const struct sim__policy *order)
{
    *q = (sim__waitq){.order = order};
}

void sim__waitq_fini(sim__waitq *q)
{
    free(q->a);
    q->a = NULL;
}

void sim__waitq_push(sim__waitq *q, sim__request *r, bool front)
{
    sim__waitq_push_key(q, r, q->order->order(r, q->joined + 1, front));
}

void sim__waitq_push_key(sim__waitq *q, sim__request *r, int64_t key)
{
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 16;
        q->a = util_xrealloc(q->a, q->cap * sizeof *q->a);
    }
    int64_t seq = ++q->joined;
    sim__waitq_entry in = {key, seq, r};
    size_t i = q->n++;
    for (size_t up; i > 0 && before(&in, &q->a[up = (i - 1) / 2]); i = up) q->a[i] = q->a[up];
    q->a[i] = in;
}

sim__request *sim__waitq_pop(sim__waitq *q)
{
    if (!q->n) return NULL;
    sim__request *head = q->a[0].r;
    sim__waitq_entry last = q->a[--q->n];
    size_t i = 0;
    for (size_t c; (c = 2 * i + 1) < q->n; i = c) { /* the hole at i sinks to last's place */
        if (c + 1 < q->n && before(&q->a[c + 1], &q->a[c])) c++;
        if (!before(&q->a[c], &last)) break;
        q->a[i] = q->a[c];
    }
    q->a[i] = last;
    return head;
}
