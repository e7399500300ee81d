/*
 * sim_int.h: what the engine's own files share and nothing else sees.
 *
 * The engine is an event loop over a binary heap of (time, sequence) keys:
 * equal times run first-in first-out, which makes every run deterministic.
 * Entities are structs with handlers; an event is (handler, subject, arg).
 *
 * Requests live in a pool and move between queues by an embedded link, so
 * the hot path never allocates.  A replica tracks decoding sequences by the
 * iteration in which each will finish, and the sum of their contexts as a
 * base plus (sequences x iteration number); a decode step of B sequences is
 * therefore O(1) bookkeeping plus O(log B) for each sequence that finishes,
 * never B updates.  Stretches of decode-only iterations in which nothing can
 * be admitted are one event, not one per token.
 */
#ifndef SIM_INT_H
#define SIM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "sim.h"

#define SIM__NS_PER_S 1000000000.0
/* Time a closed-loop client takes to learn its request was rejected (an
 * error reply's round trip) before it can send the next: 1 ms. */
#define SIM__ERROR_REPLY_NS INT64_C(1000000)

typedef void (*sim__handler)(sim_engine *e, void *subject, int64_t arg);

/* ---- heap ---- */

typedef struct sim__event {
    int64_t at;   /* event time in ns, or any int64 key */
    uint64_t seq; /* insertion order: breaks ties first-in first-out */
    sim__handler fn;
    void *subject;
    int64_t arg;
} sim__event;

typedef struct sim__heap {
    sim__event *a;
    size_t n, cap;
    uint64_t next_seq;
} sim__heap;

void sim__heap_init(sim__heap *h);
void sim__heap_fini(sim__heap *h);
void sim__heap_push(sim__heap *h, int64_t at, sim__handler fn, void *subject, int64_t arg);
/* Removes the earliest entry into *out; false when empty. */
bool sim__heap_pop(sim__heap *h, sim__event *out);
static inline const sim__event *sim__heap_top(const sim__heap *h)
{
    return h->n ? &h->a[0] : NULL;
}

/* ---- requests ---- */

typedef struct sim__request {
    struct sim__request *next; /* link in one FIFO: a replica's queue or the pool's free list */
    int64_t id;
    int64_t arrival_ns, enqueue_ns, sched_ns, first_token_ns; /* -1: not yet */
    int64_t admit_iter; /* replica iteration that prefilled it */
    int32_t prompt, output;
    int32_t replica;
    int32_t user; /* closed-loop user, or -1 */
} sim__request;

/* ---- replicas ---- */

typedef struct sim__replica {
    sim_engine *e;
    int id;
    /* waiting requests, first come first served */
    sim__request *head, *tail;
    int64_t n_waiting;
    /* prompts being prefilled by the iteration in flight */
    sim__request *prefill;
    int32_t n_prefill;
    int64_t prefill_tokens;
    /* decoding sequences keyed by the iteration in which they finish */
    sim__heap finishing;
    int32_t n_decode;
    int64_t ctx_base; /* sum of (prompt - admit_iter); context sum = ctx_base + n_decode * iter */
    /* KV cache, tokens reserved for prompt + output of admitted requests */
    int64_t kv_used, kv_peak, kv_capacity;
    /* the run of iterations in flight: iter .. run_last, started at run_start_ns.
     * A prefill iteration is a run of one; decode-only iterations run ahead to
     * the next finishing sequence (run_n sequences, context sum run_ctx0 at
     * iteration iter).  gen tells a cut-short run's stale end event apart. */
    int64_t iter;
    int64_t run_last, run_start_ns, run_ctx0;
    int32_t run_n;
    bool run_decode_only;
    uint64_t gen;
    bool busy, kick_pending;
    mdl_step step; /* cost of a prefill iteration */
    /* totals for the replica row */
    int64_t busy_ns, iterations;
    double prefill_s, decode_s, flops, bytes, batch_seq_s;
} sim__replica;

/* ---- engine ---- */

typedef struct sim__slab {
    struct sim__slab *next;
    sim__request reqs[];
} sim__slab;

struct sim_engine {
    const sim_scenario *sc;
    sim_sink sink;
    int sink_rc;
    sim__heap events;
    int64_t now;
    int64_t events_run;
    wl_source *src;
    sim__replica *replicas;
    int n_replicas;
    int next_replica; /* round-robin cursor */
    /* request pool */
    sim__request *free_list;
    sim__slab *slabs;
    /* arrivals */
    double next_arrival_s; /* kept in double so gaps do not accumulate rounding */
    int64_t stop_ns;       /* arrivals at or after this time are not made */
    int64_t arrived, done;
};

int64_t sim__ns(double seconds);
sim__request *sim__request_new(sim_engine *e);
void sim__request_free(sim_engine *e, sim__request *r);
/* Emits a request row with its final status and returns it to the pool. */
void sim__request_emit(sim_engine *e, sim__request *r, const char *status, int64_t finish_ns);
/* A request has left the system (completed or rejected): emitted, counted,
 * and its closed-loop user may send the next one. */
void sim__request_done(sim_engine *e, sim__request *r, const char *status, int64_t finish_ns);

void sim__replica_init(sim__replica *rp, sim_engine *e, int id);
void sim__replica_fini(sim__replica *rp);
/* A request reaches the replica's queue (or is rejected if it can never fit). */
void sim__replica_enqueue(sim__replica *rp, sim__request *r);
/* Emits every request still held as unfinished (interrupted run). */
void sim__replica_drain(sim__replica *rp);
void sim__replica_row(const sim__replica *rp, sim_replica_row *row);

#endif /* SIM_INT_H */
