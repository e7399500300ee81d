/*
 * sim_int.h: what the engine's own files share and nothing else sees.
 *
 * The engine is an event loop over a binary heap of (time, sequence) keys:
 * equal times run first-in first-out, which makes every run deterministic.
 * Entities are structs with handlers; an event is (handler, subject, arg).
 *
 * Requests live in a pool and move between queues by an embedded link, so
 * the hot path never allocates.  A replica tracks decoding sequences by the
 * decode step in which each will finish, the sum of their contexts as a base
 * plus (sequences x step), and their KV blocks as a residue histogram
 * (kv.c); a decode step of B sequences is therefore O(1) bookkeeping plus
 * O(log B) for each sequence that finishes, never B updates.  Stretches of
 * decode-only iterations in which nothing can be admitted are one event.
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
    size_t *slot; /* tracked entries: where the heap keeps this entry's position */
} sim__event;

typedef struct sim__heap {
    sim__event *a;
    size_t n, cap;
    uint64_t next_seq;
} sim__heap;

void sim__heap_init(sim__heap *h);
void sim__heap_fini(sim__heap *h);
void sim__heap_push(sim__heap *h, int64_t at, sim__handler fn, void *subject, int64_t arg);
/* Where a tracked entry is once it has left the heap. */
#define SIM__NO_SLOT SIZE_MAX

/* As sim__heap_push, keeping the entry's position in *slot while it is in
 * the heap; when it leaves, *slot becomes SIM__NO_SLOT. */
void sim__heap_push_tracked(sim__heap *h, int64_t at, sim__handler fn, void *subject,
                            int64_t arg, size_t *slot);
/* Brings the entry at position i forward to at, which must be earlier than
 * its time (a later one would need a sift down). */
void sim__heap_earlier(sim__heap *h, size_t i, int64_t at);
/* Removes the tracked entry at position i, unrun. */
void sim__heap_remove(sim__heap *h, size_t i);
/* Removes the earliest entry into *out; false when empty. */
bool sim__heap_pop(sim__heap *h, sim__event *out);
static inline const sim__event *sim__heap_top(const sim__heap *h)
{
    return h->n ? &h->a[0] : NULL;
}

/* ---- requests ---- */

typedef enum sim__state {
    SIM__SENDING,     /* on its way to the router (pre-model delay, straggler) */
    SIM__WAITING,     /* in a queue, to be prefilled (again, after a recompute preemption) */
    SIM__PREFILLING,  /* admitted; its prompt (or recompute) tokens are being computed */
    SIM__DECODING,    /* producing one token per decode step */
    SIM__SWAPPED,     /* preempted by swap: its KV cache is in host memory */
    SIM__TRANSFERRING,/* disaggregated: its KV cache is moving to the decode pool */
    SIM__ARRIVED_KV,  /* disaggregated: its KV cache is at a decode replica, waiting to decode */
} sim__state;

struct sim__task;
struct sim__replica;

typedef struct sim__request {
    struct sim__request *next;             /* link in one FIFO queue */
    struct sim__request *run_prev, *run_next; /* running list, in order of admission */
    int64_t id; /* -1 while the struct is free */
    struct sim__task *task;        /* its agent task, or NULL */
    struct sim__replica *holder;   /* the replica whose queue or batch holds it, or NULL */
    struct sim__replica *cache_owner; /* prefix caching: the replica caching its blocks */
    int32_t cls, call_index;
    int64_t arrival_ns, enqueue_ns, sched_ns, first_token_ns, decode_enqueue_ns; /* -1: not yet */
    int32_t prompt, output;
    int32_t generated;      /* tokens generated so far (decoding: as of joining the decoders) */
    int64_t cached;         /* tokens whose KV is in this replica's cache (prefill progress) */
    int64_t prefill_target; /* tokens to prefill: prompt, or prompt + generated when recomputed */
    int64_t chunk;          /* tokens scheduled for this iteration's prefill chunk */
    int64_t blocks;         /* KV blocks held while prefilling, swapped or arrived (not decoding) */
    int64_t cached_blocks;  /* prefix caching: its freed blocks not yet reused by others */
    struct sim__request *victim_next; /* prefix caching: the replica's preempted, oldest first */
    int64_t ctx_off;        /* decoding: context at decode step s is ctx_off + s */
    int64_t first_step, finish_step;
    size_t finish_slot;     /* its entry in the replica's `finishing` heap, or SIM__NO_SLOT */
    int32_t replica, decode_replica, user, preemptions;
    uint8_t state;
    bool in_running;
    bool slow; /* a straggler */
    bool dead; /* timed out: already recorded; dropped by whoever holds it */
    size_t timeout_slot; /* its pending time-out in the event heap, or SIM__NO_SLOT */
} sim__request;

/* An agent task in flight. */
typedef struct sim__task {
    struct sim__task *next, *prev; /* the engine's live tasks; next: the free list */
    int64_t id, start_ns;
    int32_t cls, user;
    int32_t calls_sent, outstanding, slow_calls;
    int64_t carried;       /* sequential: the next prompt (prompt, outputs, tool results) */
    int64_t fanout_output; /* map_reduce: tokens the fan-out produced */
    bool failed;
} sim__task;

/* ---- queues ---- */

typedef struct sim__queue {
    sim__request *head, *tail;
    int64_t n;
} sim__queue;

void sim__queue_push(sim__queue *q, sim__request *r);
void sim__queue_push_front(sim__queue *q, sim__request *r);
sim__request *sim__queue_pop(sim__queue *q);

/* ---- KV blocks of the decoding set (kv.c) ---- */

/* A decoding sequence of context c needs ceil(c / block_tokens) blocks; all
 * contexts grow by one per decode step, so the sum over sequences at any
 * future step follows from a histogram of (context - 1) mod block_tokens,
 * kept relative to the step so that it never needs updating as steps pass. */
typedef struct sim__kv {
    int block_tokens;
    int64_t *hist;  /* [block_tokens]: decoders by phase ((context - 1 - step) mod block_tokens) */
    int64_t n;      /* decoders counted */
    int64_t blocks; /* blocks they need at decode step `at` */
    int64_t at;
} sim__kv;

void sim__kv_init(sim__kv *kv, int block_tokens);
void sim__kv_fini(sim__kv *kv);
int64_t sim__kv_blocks_for(const sim__kv *kv, int64_t tokens);
/* A decoder of context ctx at the current step joins or leaves. */
void sim__kv_add(sim__kv *kv, int64_t ctx);
void sim__kv_remove(sim__kv *kv, int64_t ctx);
/* Blocks the decoders need t steps after the current one. */
int64_t sim__kv_need(const sim__kv *kv, int64_t t);
/* The decoders ran t steps. */
void sim__kv_advance(sim__kv *kv, int64_t t);
/* The smallest t in [0, tmax) at which the decoders need more than limit
 * blocks, or tmax when they never do. */
int64_t sim__kv_first_over(const sim__kv *kv, int64_t tmax, int64_t limit);

/* ---- replicas ---- */

/* The replicas a router chooses among: all of them, or, disaggregated, the
 * prefill pool's and the decode pool's (replicas of a pool are numbered
 * contiguously, so a group is a range). */
typedef struct sim__group {
    int first, count;
    int rr_next;        /* round-robin cursor */
    sim__queue central; /* router central_queue: the group's one FIFO */
} sim__group;

typedef struct sim__replica {
    sim_engine *e;
    const sim_pool *pool;
    sim__group *group;
    int id;
    sim__queue own, *q;  /* waiting requests: its own queue, or its group's central one */
    sim__queue swapped;  /* swap-preempted, oldest first */
    sim__queue partial;  /* chunked: admitted prompts not yet fully prefilled, in order */
    sim__request *run_head, *run_tail; /* running list (prefilling + decoding), admission order */
    int32_t n_running;
    int64_t outstanding; /* requests routed here and not yet gone: for the router */
    /* the decoding set */
    sim__heap finishing; /* decoders by the step of their last token (tracked entries) */
    int32_t n_decode;
    int64_t ctx_base;    /* sum of ctx_off; context sum at step s = ctx_base + n_decode * s */
    int64_t step;        /* decode steps run so far: the next one is `step` */
    sim__kv kv;
    int64_t kv_capacity, kv_other; /* blocks in all; blocks held outside the decoding set */
    int64_t kv_peak;
    /* prefix caching: blocks freed by preemption still hold their KV until
     * reused, the oldest victims' first and each victim's last blocks first */
    sim__request *victims, *victims_tail;
    int64_t cached_free;
    /* static batching: finished members still padding the batch */
    int32_t n_ghost;
    int64_t ghost_ctx_off;
    int32_t n_dead; /* timed-out sequences in the batch, dropped at the step's end */
    bool static_timer_pending;
    /* this iteration */
    sim__request **chunks; /* requests with a prefill chunk in it */
    mdl_chunk *chunk_cost;
    int32_t n_chunks, chunks_cap;
    double swap_bytes;     /* KV moved over PCIe in it (swap out and in) */
    bool decodes;          /* the decoders produce a token in it */
    bool run_decode_only;  /* a decode-only run of steps step .. run_last */
    int64_t run_last, run_start_ns;
    mdl_run run;           /* its cost, prepared once */
    size_t end_slot;       /* where its end event is in the event heap */
    bool busy, kick_pending;
    mdl_step cost;         /* of a single (non-run) iteration */
    /* totals for the replica row */
    int64_t busy_ns, iterations, preemptions, out_of_range, prefill_tokens, decode_tokens;
    double prefill_s, decode_s, flops, bytes, batch_seq_s, swap_bytes_total;
    double energy_j, kv_token_s;
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
    gsl_rng *router_rng;
    sim__group groups[2]; /* [0]: where requests arrive; [1]: the decode pool, disaggregated */
    int n_groups;
    sim__replica *replicas;
    int n_replicas;
    /* request pool */
    sim__request *free_list;
    sim__slab *slabs;
    /* arrivals */
    wl_record *next;       /* per stream: the open loop's next request */
    int32_t *user_stream;  /* per closed-loop user: its stream */
    util_diag error;       /* why the source failed */
    bool failed;
    int64_t stop_ns;       /* arrivals at or after this time are not made */
    int64_t arrived, done, next_request_id, next_task_id;
    int64_t in_flight_limit; /* 0: none */
    int64_t slots;           /* batch slots of every replica: the overload tests' scale */
    bool open_loop;          /* some stream's arrivals do not wait for replies */
    int64_t backlog;         /* in flight just after the latest open-loop arrival */
    int fail_rc;             /* UTIL_EFAIL, or UTIL_EINPUT: why `failed` */
    char *reason;            /* why the run was overloaded */
    sim__task *tasks, *free_tasks;
};

int64_t sim__ns(double seconds);
sim__request *sim__request_new(sim_engine *e);
void sim__request_free(sim_engine *e, sim__request *r);
/* Writes a request's row with its final status. */
void sim__request_record(sim_engine *e, const sim__request *r, const char *status,
                         int64_t finish_ns);
/* A request has left the system (completed or rejected): recorded, counted,
 * returned to the pool, and its task or closed-loop user told. */
void sim__request_done(sim_engine *e, sim__request *r, const char *status, int64_t finish_ns);
/* A timed-out request (already recorded) leaves wherever it is: freed now,
 * or marked dead for whoever holds it to drop. */
void sim__request_cancel(sim_engine *e, sim__request *r);
void sim__task_record(sim_engine *e, const sim__task *t, const char *status, int64_t finish_ns);
/* Arrivals: a stream's next open-loop arrival, a closed-loop user's send. */
void sim__schedule_arrival(sim_engine *e, int stream);
void sim__user_send(sim_engine *e, void *subject, int64_t user);
/* Routes a request to a replica of a group (the router's policy). */
void sim__route(sim_engine *e, sim__group *g, sim__request *r);
/* A prefilled request of a disaggregated cluster leaves for the decode pool;
 * its KV cache arrives there after the link's transfer time. */
void sim__transfer(sim_engine *e, sim__replica *from, sim__request *r);

void sim__replica_init(sim__replica *rp, sim_engine *e, const sim_pool *pool, sim__group *g,
                       int id);
void sim__replica_fini(sim__replica *rp);
/* A request reaches the replica (or its pool's central queue). */
void sim__replica_enqueue(sim__replica *rp, sim__request *r);
/* Blocks freed or work queued from outside: start an iteration if idle. */
void sim__replica_wake(sim__replica *rp);
/* Free KV blocks: for the least_kv router. */
int64_t sim__replica_free_blocks(const sim__replica *rp);
/* A timed-out request in the replica's batch or swap space: dropped at the
 * end of the step in progress (a decode run is cut there), or at once. */
void sim__replica_cancel(sim__replica *rp, sim__request *r);
/* Timed-out requests at the head of its queue leave it. */
void sim__drop_dead_heads(sim__replica *rp);

/* ---- scheduling (sched.c) and the moves it makes (replica.c) ---- */

/* Plans the next iteration: preemptions, swaps, which decoders run, which
 * prompt chunks are prefilled.  Leaves nothing planned to stay idle. */
void sim__plan(sim__replica *rp);
/* Whether the next iteration could take the head of the queue: a request
 * arriving during a decode run then cuts the run short. */
bool sim__can_admit_head(sim__replica *rp);

void sim__run_append(sim__replica *rp, sim__request *r);
void sim__add_chunk(sim__replica *rp, sim__request *r, int64_t tokens);
void sim__admit(sim__replica *rp, sim__request *r);
void sim__hold_blocks(sim__replica *rp, sim__request *r, int64_t blocks);
void sim__decoder_join(sim__replica *rp, sim__request *r, int64_t cached);
void sim__preempt_last(sim__replica *rp);
void sim__swap_in(sim__replica *rp);
/* Prefix caching: blocks in use beyond what is free of cached KV evict it. */
void sim__settle_cache(sim__replica *rp);
/* Prefix caching: how many of a waiting request's prompt + generated tokens
 * are still in the cache (its recompute starts after them). */
int64_t sim__cached_prefix(const sim__replica *rp, const sim__request *r);
/* The request leaves its caching replica's victims (its blocks are now its
 * own, or forgotten). */
void sim__claim_prefix(sim__request *r);
void sim__replica_row(const sim__replica *rp, sim_replica_row *row);

#endif /* SIM_INT_H */
