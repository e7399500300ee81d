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
 *
 * Who calls whom.  Each file's internal functions carry a prefix naming it,
 * as Lua's do (luaD_ is ldo.c): sim__cl_ client.c, sim__rt_ router.c,
 * sim__fl_ fleet.c, sim__rp_ replica.c, sim__ac_ account.c, sim__rq_
 * request.c, sim__lr_ lora.c (LoRA adapters: a leaf, as account.c); the
 * data structures keep theirs (sim__heap_ heap.c, sim__kv_ kv.c, sim__pc_
 * prefix.c, sim__queue_ and sim__waitq_ the queues of
 * request.c), and sched.c is the table sim__policies.  Calls follow a
 * request's trip down, never up, but for three back-edges (dotted):
 *
 *   engine.c              the loop; a run's start and end
 *      |---------.
 *      v         v
 *   client.c    fleet.c   fl_  the replica table and its groups: replicas
 *      |         |   |         added, drained and failed
 *      v         |   |
 *   router.c <---|---'         (what a replica gives back is routed again)
 *      |   ^     |
 *      |   :.....|...... sim__rt_transfer, a prefilled request onto the link
 *      v         v
 *   replica.c   rp_    queues, batch, KV blocks, the one planning loop, the
 *      |   :           iteration; it asks sched.c's tables, which call nothing
 *      |   :.......... sim__fl_retire_if_empty, a drained replica fallen idle
 *      v
 *   account.c   ac_    a replica's totals and rows: a leaf
 *   sched.c            the scheduler families: tables of pure functions
 *   request.c   rq_    a request's life, called from every file; down only to
 *                      sim__rp_cancel (a time-out reaches its holder), up only
 *                      to sim__cl_notify (its owner told: the third back-edge)
 *   heap.c, kv.c, prefix.c   leaves: they call nothing of the engine's (the
 *                      prefix cache is told its replica's free blocks)
 *
 * Every handler is entered from the loop, whichever file holds it.  sched.c
 * is the policy over replica.c's mechanism: replica.c's loop asks each
 * family's table (the token budget, the queue's order, whether it admits,
 * whom it preempts, how long a static batch waits) and makes every move
 * itself.  The back-edges are there because a real client, a real link
 * and a real fleet are: a request that leaves a replica is told to its
 * owner (replica -> sim__rq_done -> sim__cl_notify), who may send its next
 * call at once -- a map-reduce aggregation re-enters the router and a
 * replica in the same stack, which is why a replica cuts a run only while
 * its end event is pending (replica.c cut_run); a prefilled request of a
 * disaggregated cluster is handed to the link (replica -> sim__rt_transfer),
 * which schedules its arrival at the decode pool and returns; and a
 * drained replica that falls idle with nothing left tells the fleet, which
 * retires it by an event of the same instant, never inside the replica's
 * own handler.  Making the first two events would reorder same-instant
 * events, and with them every run.
 *
 * Handles.  A replica's id is never reused; requests (holder, replica) and
 * events (an id in arg) keep ids, never pointers, and sim__fl_get turns an
 * id into the replica or NULL once it retired: a table that grows and
 * shrinks leaves nothing dangling.
 */
#ifndef SIM_INT_H
#define SIM_INT_H

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim.h"

/* ---- invariants, checked in debug builds (meson -Dinvariants=true) ---- */

/* Broken invariants are found where they break, as SQLite's ALWAYS/NEVER and
 * libuv's heap checks find them: with SIM_CHECKS, the event heap is checked
 * after every change and each replica at the start and end of every
 * iteration.  A check costs O(n), so it is compiled out of the builds users
 * run.  sim__check_fail is the one place the library prints: it is an
 * assert, and aborts. */
#ifndef SIM_CHECKS
#define SIM_CHECKS 0
#endif
_Noreturn void sim__check_fail(const char *file, int line, const char *what);
/* Checks performed so far in this process (what the tests count). */
extern long long sim__checks_run;
#define SIM__CHECK(cond) ((cond) ? (void)0 : sim__check_fail(__FILE__, __LINE__, #cond))
/* A check (or its bookkeeping) that only SIM_CHECKS builds compile. */
#if SIM_CHECKS
#define SIM__CHECKED(stmt) (stmt)
#else
#define SIM__CHECKED(stmt) ((void)0)
#endif

/* ---- time ---- */

#define SIM__NS_PER_S 1000000000.0
/* Just past the horizon: a time no event may have. */
#define SIM__PAST_HORIZON_NS ((int64_t)(SIM_HORIZON_S * SIM__NS_PER_S) + 1)

/* Seconds to nanoseconds.  Durations and times are never negative: round
 * half up without libm's llround, which showed in profiles.  Beyond the
 * horizon (or NaN) a duration saturates, so that now + duration cannot
 * overflow and the event loop reports the horizon instead. */
static inline int64_t sim__ns(double seconds)
{
    if (!(seconds < SIM_HORIZON_S)) return SIM__PAST_HORIZON_NS;
    return (int64_t)(seconds * SIM__NS_PER_S + 0.5);
}

/* Nanoseconds to a row's seconds; NAN for "not yet" (-1). */
static inline double sim__secs(int64_t ns)
{
    return ns < 0 ? NAN : (double)ns / SIM__NS_PER_S;
}

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
/* The tracked entry whose position *slot holds (it must be in the heap). */
static inline const sim__event *sim__heap_tracked(const sim__heap *h, const size_t *slot)
{
    assert(*slot < h->n && h->a[*slot].slot == slot);
    return &h->a[*slot];
}
/* SIM_CHECKS: the heap property holds at every entry, and every tracked
 * entry's *slot is its own position. */
void sim__heap_check(const sim__heap *h);

/* ---- requests ---- */

typedef enum sim__state {
    SIM__SENDING,     /* on its way to the router (pre-model delay, straggler) */
    SIM__WAITING,     /* in a queue, to be prefilled (again, after a recompute preemption) */
    SIM__PREFILLING,  /* admitted; its prompt (or recompute) tokens are being computed */
    SIM__DECODING,    /* producing one token per decode step */
    SIM__SWAPPED,     /* preempted by swap: its KV cache is in host memory */
    SIM__TRANSFERRING,/* disaggregated: its KV cache is moving to the decode pool */
    SIM__ARRIVED_KV,  /* disaggregated: its KV cache is at a decode replica, waiting to decode */
    SIM__HELD,        /* in the gateway's queue (gateway.c) */
    SIM__BACKOFF,     /* a retry, waiting out its client's backoff before it is sent */
} sim__state;

struct sim__task;
struct sim__replica;

typedef struct sim__request {
    struct sim__request *next;             /* link in one FIFO queue (swapped, partial) */
    struct sim__request *run_prev, *run_next; /* running list, in order of admission */
    int64_t id; /* -1 while the struct is free */
    struct sim__task *task;        /* its agent task, or NULL */
    int32_t holder; /* the replica (its id: a handle, sim__fl_get) whose queue or batch
                     * holds it, or -1 */
    int32_t cls, call_index;
    int64_t arrival_ns, enqueue_ns, sched_ns, first_token_ns, decode_enqueue_ns; /* -1: not yet */
    int32_t prompt, output;
    int32_t generated;      /* tokens generated so far (decoding: as of joining the decoders) */
    int64_t cached;         /* tokens whose KV is in this replica's cache (prefill progress) */
    int64_t prefill_target; /* tokens to prefill: prompt, or prompt + generated when recomputed */
    int64_t chunk;          /* tokens scheduled for this iteration's prefill chunk */
    int64_t blocks;         /* KV blocks held while prefilling, swapped or arrived (not decoding) */
    /* prefix caching (prefix.c): what of its content other requests may
     * share, and what of it its replica's cache holds for it */
    struct sim__seg *segs;  /* its shared content, leading segments (owned); NULL: none */
    int32_t n_segs;
    int32_t pc_held;        /* segments [0, pc_held) are referenced in its replica's cache */
    int32_t pc_fill;        /* the segment whose entry it is filling as it prefills, or -1 */
    bool pc_private;        /* stopped sharing: an entry it did not fill was in its way */
    uint64_t out_key;       /* its reply's segment, which its next call re-sends; 0: none */
    int64_t ref_blocks;     /* of its blocks, those that its referenced entries hold */
    struct sim__pc_node *victim; /* preempted: its own blocks, still cached in the free queue */
    const struct sim__pcache *victim_cache; /* ... of this replica's cache (a central queue
                                             * may hand it to another replica) */
    int64_t victim_after;   /* the referenced blocks that its victim blocks follow */
    int32_t hit_tokens;     /* prompt tokens served from the cache at first scheduling */
    int32_t cpu_hits, disk_hits; /* ... of them, those kv_offload's CPU and disk tiers served */
    int64_t ctx_off;        /* decoding: context at decode step s is ctx_off + s */
    int64_t first_step, finish_step;
    size_t finish_slot;     /* its entry in the replica's `finishing` heap, or SIM__NO_SLOT */
    int32_t replica, decode_replica, user, preemptions;
    int32_t restarts, restarted_from; /* times a replica's loss sent it back to the router, and
                                       * the last such replica (-1: none) */
    int32_t lora;           /* its LoRA adapter + 1; 0: the base model (lora.c) */
    int32_t model;          /* its class's model: the group it is routed in (fleet.c) */
    uint8_t state;
    bool in_running;
    bool slow; /* a straggler */
    bool dead; /* timed out: already recorded; dropped by whoever holds it */
    size_t timeout_slot; /* its pending time-out in the event heap, or SIM__NO_SLOT */
    /* its class's, for an ordered queue (scheduling_policy) */
    int32_t priority;     /* lower is more urgent */
    int64_t deadline_ns;  /* arrival + its class's (or trace row's) deadline_s, or -1: none */
    int64_t aged_ns;      /* its deadline as its replica's aging orders it (sim__sched_stamp) */
    const char *tenant;   /* its class's (or its trace row's), or NULL; not owned */
    /* the gateway (gateway.c) and the client's retries (client.c) */
    const char *reason;   /* why it was rejected (SIM_SHED, ...); NULL: not rejected */
    int64_t retry_of;     /* the attempt it retries, or -1 */
    int32_t attempt;      /* 1 for a call's first send, 2 for its first retry, ... */
    int32_t gw_queue;     /* its queue at the gateway: model x tenants + tenant */
    bool gw_counted;      /* dispatched by the gateway: its tenant's slots count it */
    bool retried;         /* its client sends it again (its row says so) */
} sim__request;

/* An agent task in flight. */
/* A trace row's own priority, deadline and tenant (wl_record's), which
 * override its class's for its request, or its task's every call. */
typedef struct sim__own {
    bool has_priority;
    int32_t priority;
    double deadline_s;  /* 0: the class's */
    const char *tenant; /* NULL: the class's; the scenario's (wl_arrival.tenants) */
} sim__own;

typedef struct sim__task {
    struct sim__task *next, *prev; /* the engine's live tasks; next: the free list */
    int64_t id, start_ns;
    int32_t cls, user;
    int32_t calls_sent, outstanding, slow_calls;
    int32_t turns;         /* a session: its turns, drawn as it started */
    int64_t carried;       /* sequential: the next prompt (prompt, outputs, tool results) */
    int64_t fanout_output; /* map_reduce: tokens the fan-out produced */
    bool failed;
    int32_t home; /* router session_affinity (router.c): the id + 1 of the replica its last
                   * call was routed to; 0: none yet */
    /* sequential, prefix caching: the content of its next call's prompt --
     * the first prompt, then each reply and tool result in turn */
    struct sim__seg *segs;
    int32_t n_segs, segs_cap;
    sim__own own; /* its trace row's, for each of its calls */
} sim__task;

/* ---- queues ---- */

typedef struct sim__queue {
    sim__request *head, *tail;
    int64_t n;
} sim__queue;

/* FIFO queues through the request's `next` link (request.c). */
void sim__queue_push(sim__queue *q, sim__request *r);
sim__request *sim__queue_pop(sim__queue *q);
/* O(n), for the rare preemption of a partly prefilled prompt or a time-out. */
void sim__queue_remove(sim__queue *q, sim__request *r);

/* A waiting queue: requests in the order its scheduler family gives them
 * (sim__policy.order: each request's key when it joins, lowest first), a
 * binary heap of (key, request) -- not the event heap, whose entries carry
 * a handler and a tie-breaking sequence that a queue of distinct keys does
 * not need.  A request preempted to recompute goes back `front`: first
 * come first served puts it at the head, as vLLM's prepend_request does,
 * and an ordered family by its own key.  Time-outs are not removed: a dead
 * request leaves when it reaches the head. */
typedef struct sim__waitq_entry {
    int64_t key;
    int64_t seq; /* when it joined: equal keys (deadlines) leave first come first */
    sim__request *r;
} sim__waitq_entry;

typedef struct sim__waitq {
    sim__waitq_entry *a;
    size_t n, cap;
    int64_t joined; /* requests that have joined: the first-come-first-served key */
    const struct sim__policy *order; /* whose order */
} sim__waitq;

void sim__waitq_init(sim__waitq *q, const struct sim__policy *order);
void sim__waitq_fini(sim__waitq *q);
void sim__waitq_push(sim__waitq *q, sim__request *r, bool front);
/* As sim__waitq_push, at a key the caller gives (a queue whose order is
 * NULL: the gateway's). */
void sim__waitq_push_key(sim__waitq *q, sim__request *r, int64_t key);
/* (priority, arrival) as one key, lowest first: vLLM's priority order. */
int64_t sim__priority_key(const sim__request *r);
sim__request *sim__waitq_pop(sim__waitq *q);
static inline sim__request *sim__waitq_head(const sim__waitq *q)
{
    return q->n ? q->a[0].r : NULL;
}
static inline int64_t sim__waitq_len(const sim__waitq *q)
{
    return (int64_t)q->n;
}

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

/* ---- the prefix cache of a replica (prefix.c) ---- */

/* A segment of a request's content (wl_segment, with its end as a token
 * offset): the KV blocks whose last token lies in (end of the previous
 * segment, end] belong to it, as a block's hash covers every token up to
 * its last. */
typedef struct sim__seg {
    uint64_t key;
    int64_t end;
    struct sim__pc_node *node; /* its entry, while the request references it */
} sim__seg;

/* A run of blocks, in the free queue or referenced by running requests: a
 * shared entry (key != 0: the blocks of one segment, in the hash table), a
 * preempted request's own blocks (victim), or blocks whose content nobody
 * can ask for again (anonymous).  Free blocks are queued least recently
 * freed first, and leave from the head: vLLM's FreeKVCacheBlockQueue. */
typedef struct sim__pc_node {
    struct sim__pc_node *prev, *next; /* the free queue; next: the spare list */
    uint64_t key;           /* shared entries; 0 otherwise */
    struct sim__request *victim; /* whose own blocks these are, or NULL */
    int64_t blocks;         /* shared entries: the segment's blocks */
    int64_t resident;       /* leading blocks still holding their KV (anonymous: free blocks) */
    int32_t refs;           /* requests referencing it (shared entries) */
    bool queued;            /* in the free queue */
    bool reply;             /* a finished request's reply (decode KV), not its prompt */
} sim__pc_node;

typedef struct sim__pcache {
    int block_tokens;
    sim__pc_node **slots;   /* open addressing by key; NULL: empty */
    size_t cap, n;
    sim__pc_node *head, *tail; /* the free queue: evicted from the head */
    int64_t free_len;       /* blocks in it: every free block of the replica */
    int64_t saved;          /* blocks counted by more than one running request: their
                             * sum over shared entries of (refs - 1) x resident */
    int64_t evicted;        /* blocks of reusable content evicted (shared or victim) */
    sim__pc_node *spare;
    /* KV offload (cluster.kv_offload, docs/kv-offload.md): the tier below,
     * which takes the shared entries this one evicts, or NULL.  A tier is a
     * cache of its own whose entries are all free: its queue is its LRU
     * order, `capacity` its size in blocks. */
    struct sim__pcache *lower;
    bool offload_replies;   /* "all": replies' entries go down too, not prompts' alone */
    int64_t capacity;       /* a tier: its blocks */
    int64_t stored, loaded; /* a tier: blocks copied into it, and out of it to the GPU */
    /* blocks this cache's evictions stored in the tiers below it ([0] the
     * next, [1] the one below, which the next overflowed into), and blocks
     * loaded into it from each: a replica's own share of tiers its node's
     * replicas share (kv_offload.scope "node") */
    int64_t sent[2], got[2];
} sim__pcache;

/* How a request lets go of its blocks: it finished (its reply may be cached
 * for its next call), it was preempted to recompute (its own blocks stay
 * cached for it), or it is gone (time-out, swap, KV sent to a decode pool). */
typedef enum sim__pc_how { SIM__PC_DONE, SIM__PC_PREEMPTED, SIM__PC_GONE } sim__pc_how;

/* The cache is a leaf: it calls nothing of the engine's, and what it needs
 * to know of its replica -- how many blocks are free -- it is told. */
void sim__pc_init(sim__pcache *c, int block_tokens, int64_t capacity);
void sim__pc_fini(sim__pcache *c);
/* A failed replica's cache, before sim__pc_fini: requests preempted
 * elsewhere in the system forget the blocks it kept for them. */
void sim__pc_abandon(sim__pcache *c);
/* The blocks of r's content the cache holds, from its first token (and,
 * preempted, its own blocks after them); *in_use: how many of those
 * running requests hold too (they take no free block). */
int64_t sim__pc_lookup(const sim__pcache *c, const sim__request *r, int64_t *in_use);
/* r is admitted: it references what sim__pc_lookup finds, and reclaims its
 * own blocks; returns their count, as sim__pc_lookup's, of which *loaded
 * (NULL: not wanted) are loaded from the tier below, which they count in. */
int64_t sim__pc_acquire(sim__pcache *c, sim__request *r, int64_t *loaded);
/* tier made an empty tier of `capacity` blocks (kv_offload), below nothing. */
void sim__pc_tier_init(sim__pcache *tier, int block_tokens, int64_t capacity);
/* tier goes below c: c's evicted shared entries (replies': with replies)
 * go down to it, and a lookup continues into it.  Several caches may share
 * one tier. */
void sim__pc_attach(sim__pcache *c, sim__pcache *tier, bool replies);
/* r's tokens [0, upto) are scheduled: their full blocks become shareable. */
void sim__pc_register(sim__pcache *c, sim__request *r, int64_t upto);
/* r no longer holds `blocks` blocks, already uncounted by its replica;
 * free_unshared: the replica's free blocks were no block shared (its free
 * blocks less the cache's `saved`, which the release changes). */
void sim__pc_release(sim__pcache *c, sim__request *r, int64_t blocks, sim__pc_how how,
                     int64_t free_unshared);
/* A waiting request leaves for good: its victim blocks become anonymous. */
void sim__pc_forget(sim__request *r);
/* r's replica failed, its cache with it: r references nothing now. */
void sim__pc_lost(sim__request *r);
/* The free queue made as long as the replica's free_blocks: evicts from
 * its head what the replica now uses, queues (anonymously) what it freed. */
void sim__pc_settle(sim__pcache *c, int64_t free_blocks);
/* SIM_CHECKS: the queue, the table and `saved` against each other. */
void sim__pc_check(const sim__pcache *c);

/* ---- replicas ---- */

struct sim__policy;

/* The replicas a router chooses among: those of the pools of one model
 * (every pool when the fleet serves one), or, disaggregated, the prefill
 * pool's and the decode pool's.  A membership list, in id order
 * (ties go to the lowest): a replica joins when it is ready and leaves when
 * it drains or fails, so a group may be empty for a while. */
typedef struct sim__group {
    struct sim__replica **members;
    int n, cap;
    int rr_next;         /* round-robin cursor */
    sim__waitq central;  /* router central_queue: the group's one queue, in the order of
                          * its first pool's scheduler family */
    struct sim__policy *ordered; /* that family in its pool's order, when not fcfs (owned) */
} sim__group;

/* How a replica that is drained lets go of its work: `finish` serves its
 * queue and batch to the end; `hand_back` returns its waiting requests to
 * the router at once and finishes its batch; `stop` retires it at once,
 * everything it held sent back where requests arrive to start again (its
 * KV cache gone with it, as a failed replica's requests with on_failure
 * retry).  Either way the router sends it nothing new. */
typedef enum sim__drain { SIM__DRAIN_FINISH, SIM__DRAIN_HAND_BACK, SIM__DRAIN_STOP } sim__drain;


typedef struct sim__replica {
    sim_engine *e;
    const sim_pool *pool;
    const struct sim__policy *policy; /* its scheduler family (sched.c) */
    struct sim__policy *ordered; /* its family in its pool's order, when not fcfs (owned) */
    sim__group *group;
    int id;
    sim__waitq own, *q;  /* waiting requests: its own queue, or its group's central one */
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
#if SIM_CHECKS
    int64_t kv_on_link; /* of kv_other: blocks of requests on the link (disaggregated) */
#endif
    /* prefix caching: whether it is on, and the cache */
    bool pc_on;
    sim__pcache pc;
    /* kv_offload: the CPU tier below pc (pc.lower: this one, or its node's
     * with scope "node"), the bytes of one block, and at first schedulings
     * the prompt tokens it was asked for (those the GPU cache missed) and
     * those it served */
    sim__pcache cpu;
    struct sim__node *node; /* scope "node": the node whose tiers it shares; NULL: its own */
    double block_bytes;
    int64_t cpu_lookup_tokens, cpu_hit_tokens;
    /* ... and the disk tier below cpu (cpu.lower), the same figures */
    sim__pcache disk;
    int64_t disk_lookup_tokens, disk_hit_tokens;
    int64_t queued_tokens;   /* prompt tokens in its own queue: the prefix router's load, */
    int64_t incoming_tokens; /* with those routed here and still in its front end */
    int64_t incoming;        /* requests in its front end: the gateway counts them waiting */
    /* static batching: finished members still padding the batch, and the
     * blocks reserved for members that have left, held until it ends */
    int32_t n_ghost;
    int64_t ghost_ctx_off;
    int64_t left_blocks;
    int32_t n_dead; /* timed-out sequences in the batch, dropped at the step's end */
    bool static_timer_pending;
    /* this iteration */
    sim__request **chunks; /* requests with a prefill chunk in it */
    mdl_chunk *chunk_cost;
    int32_t n_chunks, chunks_cap;
    double swap_bytes;     /* KV moved over PCIe in it (swap out and in) */
    double load_bytes;     /* KV loaded from the CPU tier for requests it admits */
    double disk_load_bytes; /* ... and from the disk tier (through host memory) */
    bool decodes;          /* the decoders produce a token in it */
    bool run_decode_only;  /* a decode-only run of steps step .. run_last */
    int64_t run_last, run_start_ns;
    mdl_run run;           /* its cost, prepared once */
    size_t end_slot;       /* where its end event is in the event heap */
    bool busy, kick_pending;
    mdl_step cost;         /* of a single (non-run) iteration */
    /* speculative decoding in it (sim/speculative.c): positions each
     * decoder verifies (1: none), the KV tokens each holds beyond its
     * context for them and the drafter's lookahead, and the drafter's time
     * in a single step (a decode run has none) */
    int32_t spec_width, kv_pad;
    double spec_draft_s;
    /* with --record-iterations, a speculative step's row, held until its
     * decoders' acceptances are drawn (sim__ac_spec_step) */
    sim_iteration_row spec_row;
    bool spec_row_held;
    /* the engine's step pipeline (docs/engines.md): what its scheduler had
     * seen when it planned the iteration -- requests queued by seen_ns --
     * and where the last iteration's last step started and ended */
    int64_t seen_ns, last_step_ns, last_end_ns;
    sim__queue finished;   /* finished in the last step, their slots and blocks held until
                            * the next plan is made (release_finished) */
    /* its life (fleet.c) */
    int64_t created_ns, ready_ns; /* made; ready to take work (-1: not yet) */
    int64_t drain_ns;             /* began to drain (-1: never): the row's drain_s */
    int64_t as_busy_ns, as_since_ns; /* autoscaler.c: busy time and the instant at its last
                                      * sample (the utilisation metric's interval) */
    bool draining, retire_pending;
    bool taken_back; /* a spot notice drained it: it leaves as SIM_TAKEN_BACK */
    int64_t warm_left; /* requests to serve before its iterations run at full speed (lifecycle.c) */
    /* totals for the replica row */
    int64_t busy_ns, iterations, preemptions, out_of_range, prefill_tokens, decode_tokens;
    double prefill_s, decode_s, flops, bytes, batch_seq_s, swap_bytes_total;
    double energy_j, kv_token_s;
    int64_t spec_steps, spec_off_steps, spec_drafts, spec_draft_tokens, spec_accepted;
    double spec_drafting_s, spec_verify_s;
    /* LoRA adapters (lora.c): its slots and cache, NULL without cluster.lora;
     * admissions for an adapter, found in a slot, found in the CPU cache;
     * the loads' and the kernels' time */
    struct sim__lora *lr;
    int64_t lora_lookups, lora_gpu_hits, lora_cpu_hits;
    double lora_load_s, lora_kernel_s;
} sim__replica;

/* ---- LoRA adapters (lora.c) ---- */

/* cluster.lora's keys (a pool's own or inherited). */
extern const util_field sim__lora_fields[];
/* A pool's cluster.lora, after its model and scheduler are read. */
int sim__lr_read(sim_pool *p, const cJSON *obj, const char *path, util_diag *d);
/* workload.classes[].adapter for every pool with adapters; the pools must
 * serve one list (a request's adapter is drawn once, before routing). */
int sim__lr_read_classes(sim_scenario *sc, util_diag *d);
void sim__lr_fini(sim_lora *lr);
/* A request for an adapter, as it is sent: its content (prefix caching)
 * keyed by its adapter too, so that it shares KV only with requests for
 * the same adapter. */
void sim__lr_own_content(sim__request *r);
/* A new request's adapter + 1 (0: the base model), by its class. */
int32_t sim__lr_choose(const sim_engine *e, int32_t cls, int64_t id);
/* A replica's slots and cache: made if its pool serves adapters. */
void sim__lr_init(sim__replica *rp);
void sim__lr_destroy(sim__replica *rp);
/* Whether r may join the batch: its adapter runs already, or fewer than
 * max_loras distinct adapters do. */
bool sim__lr_may_admit(const sim__replica *rp, const sim__request *r);
/* r joins the running batch (its adapter used, loaded if need be, the
 * load's time kept for the step) or leaves it. */
void sim__lr_join(sim__replica *rp, const sim__request *r);
void sim__lr_leave(sim__replica *rp, const sim__request *r);
/* Whether the next iteration must be a single step: an adapter's kernels
 * or a load are in it (a decode run's closed form knows neither). */
bool sim__lr_single(const sim__replica *rp);
/* Whether the replica's GPU slots hold adapter `lora` (+ 1; 0 always). */
bool sim__lr_holds(const sim__replica *rp, int32_t lora);
/* The LoRA kernels and the loads of the single step b, added to *step. */
void sim__lr_step_cost(sim__replica *rp, const mdl_batch *b, mdl_step *step);

/* ---- speculative decoding (speculative.c) ---- */

/* Whether the step being planned speculates, and so its width and KV pad
 * (rp->spec_width, rp->kv_pad): the pool speculates, no more sequences run
 * than disable_by_batch_size, and the token budget holds every decoder's
 * K + 1 positions. */
void sim__sp_plan(sim__replica *rp);
/* No speculation in the step being planned (a prefill-only iteration). */
void sim__sp_off(sim__replica *rp);
/* The drafter's time for the single step planned as batch b, added to
 * *step and to rp->spec_draft_s (which the step set to 0): a draft model's pass over the
 * step's prompt chunks, and, if the step speculates, the K passes over
 * its decoders. */
void sim__sp_draft_cost(sim__replica *rp, const mdl_batch *b, mdl_step *step);
/* The drafts of r's last step that its verification accepted, 0..K: drawn
 * from its class's acceptance on a stream of its own (a hash of the seed,
 * its id and the tokens it had), so a request accepts the same drafts
 * whatever batch it runs in; counted in the replica's totals. */
int sim__sp_accepted(sim__replica *rp, const sim__request *r, int32_t generated);

/* ---- scheduler families (sched.c) ---- */

/* What a family decides once, for the branches of the replica's loop. */
enum {
    SIM__SF_CHUNKS = 1 << 0,         /* prompts are cut to fill the token budget */
    SIM__SF_PREFILLS_ALONE = 1 << 1, /* an iteration that prefills does nothing else */
    SIM__SF_RESERVES = 1 << 2,       /* admission reserves prompt + output whole, so
                                      * nothing is shared or preempted */
};

/* A scheduler family: the questions replica.c's one planning loop asks,
 * answered from a replica it may not change -- as SQLite's btree gives a
 * page its cell functions and redis's dictType carries its callbacks.  The
 * families and their names come from SIM_POLICIES (sim.h). */
typedef struct sim__policy {
    unsigned flags;
    /* Tokens an iteration may compute besides its decoders' decode_tokens
     * (a token each, or 1 + K under speculative decoding). */
    int64_t (*budget)(const sim_pool *p, int64_t decode_tokens);
    /* A request's key in the waiting queue, lowest first: the queue's
     * `joined`-th arrival, or back at the front after a recompute.  Equal
     * keys leave in the order they joined; a key that must not depend on
     * when the request joined (an ordered queue's, which the victim and
     * displace compare for running requests) ignores `joined`. */
    int64_t (*order)(const sim__request *r, int64_t joined, bool front);
    /* Whether the replica admits anything this iteration (a static batch
     * runs to its end first). */
    bool (*admits)(const sim__replica *rp);
    /* Whether r, next in the queue, may be admitted now, besides the batch,
     * budget and KV limits that every family applies: the hook for
     * priorities, adapters and admission control. */
    bool (*may_admit)(const sim__replica *rp, const sim__request *r);
    /* The running sequence preempted first when the cache is short. */
    sim__request *(*victim)(const sim__replica *rp);
    /* How long admission waits for the batch to fill, as an instant (ns),
     * or -1 to admit now; NULL: never. */
    int64_t (*hold_until)(const sim__replica *rp, const sim__request *head);
    /* The running sequence that head, next in the queue and not admissible,
     * preempts to take its place, or NULL; NULL: none ever does (priority
     * preemption, scheduling_policy priority). */
    sim__request *(*displace)(const sim__replica *rp, const sim__request *head);
} sim__policy;

extern const sim__policy sim__policies[SIM_N_POLICIES];
/* A pool's family in its queue order (scheduling_policy): sim__policies's
 * entry for fcfs, else *out, made the family with the order's key, victim
 * and displacement -- a copy its replica or group keeps, so that a family
 * and an order combine without a table of every pair. */
const sim__policy *sim__policy_compose(sim__policy *out, const sim_pool *p);
/* r joins a queue of pool p: the key its deadline order reads, aged as p
 * ages it (scheduling_policy deadline). */
void sim__sched_stamp(const sim_pool *p, sim__request *r);

/* ---- engine ---- */

typedef struct sim__slab {
    struct sim__slab *next;
    sim__request reqs[];
} sim__slab;

/* The replica table (fleet.c): every replica by its id, which is never
 * reused, so an id is a handle that stays valid as the table grows and
 * shrinks -- sim__fl_get gives NULL once the replica has retired. */
typedef struct sim__slot {
    sim__replica *rp;      /* NULL once retired */
    /* kept after it retired, for what still names it: */
    const sim_pool *pool;  /* its requests' rows (host.output_s) */
    sim__group *group;     /* requests still in its front end go back here... */
    bool failed_requests;  /* ... or fail, if it failed them */
} sim__slot;

/* kv_offload.scope "node": a node of a pool, whose host memory (and disk)
 * tiers its replicas share; it goes with its last replica. */
typedef struct sim__node {
    const sim_pool *pool;
    sim__pcache cpu, disk; /* disk: capacity 0 without a disk tier */
    int32_t members, slots; /* its replicas, and how many it holds */
    struct sim__node *next;
} sim__node;

typedef struct sim__fleet {
    sim__slot *by_id;      /* [id] */
    int32_t n_ids, cap;
    sim__group **groups;       /* [0]: where requests arrive; [1]: the decode pool */
    int n_groups;
    struct sim__change *changes; /* changes scheduled as events (sim__fl_schedule) */
    int32_t n_changes, changes_cap;
    sim__node *nodes; /* kv_offload.scope "node": the nodes with replicas */
} sim__fleet;

struct sim_engine {
    const sim_scenario *sc;
    sim_sink sink;
    int sink_rc;
    sim__heap events;
    int64_t now;
    int64_t events_run;
    wl_source *src;
    gsl_rng *router_rng;
    sim__fleet fleet;
    /* request pool */
    sim__request *free_list;
    sim__slab *slabs;
    /* arrivals */
    wl_record *next;       /* per stream: the open loop's next request */
    int32_t *in_flight;    /* per stream with max_concurrency: its calls (tasks) in flight */
    bool *held;            /* per such stream: next is due but waits for a slot */
    int32_t *user_stream;  /* per closed-loop user made so far: its stream */
    int32_t n_users, cap_users;
    bool users_over;       /* a closed loop had more users than the in-flight limit */
    util_diag error;       /* why the source failed */
    bool prefix_caching;   /* some pool caches prefixes: requests carry their content */
    bool failed;
    int64_t stop_ns;       /* arrivals at or after this time are not made */
    int64_t arrived, done, next_request_id, next_task_id;
    int64_t in_flight_limit; /* 0: none */
    int64_t slots;           /* batch slots of every replica: the overload tests' scale */
    bool open_loop;          /* some stream's arrivals do not wait for replies */
    bool backlog_test;       /* overload (b) applies: the guard is the default one */
    int64_t backlog;         /* in flight just after the latest open-loop arrival */
    int fail_rc;             /* UTIL_EFAIL, or UTIL_EINPUT: why `failed` */
    char *reason;            /* why the run was overloaded */
    sim__task *tasks, *free_tasks;
    struct sim__gateway *gw; /* cluster.gateway's queues and budgets; NULL without it */
    struct sim__fa *fa;      /* cluster.failures' streams and events; NULL without them */
    struct sim__as *as;      /* cluster.autoscaler, a pool each; NULL without any */
    int64_t *as_arrivals;    /* ... and the requests each pool's replicas were sent */
    int32_t as_pending;      /* the autoscalers' events in the heap */
};

/* ---- a request's life (request.c), called from every file ---- */

/* A request from the pool, every time -1 and every slot empty. */
sim__request *sim__rq_new(sim_engine *e);
/* Back to the pool, its pending time-out removed from the heap. */
void sim__rq_free(sim_engine *e, sim__request *r);
/* Writes a request's row with its final status. */
void sim__rq_record(sim_engine *e, const sim__request *r, const char *status, int64_t finish_ns);
/* A request has left the system (completed, rejected or failed): recorded,
 * counted, returned to the pool, and its task or closed-loop user told. */
void sim__rq_done(sim_engine *e, sim__request *r, const char *status, int64_t finish_ns);
/* The same, but r stays the caller's to free (sim__rq_free): a finished
 * request whose replica holds its slot and blocks a while longer. */
void sim__rq_done_kept(sim_engine *e, sim__request *r, const char *status, int64_t finish_ns);
/* r is refused: recorded as rejected for `reason` (SIM_SHED, ...). */
void sim__rq_reject(sim_engine *e, sim__request *r, const char *reason);
/* r's KV cache is gone (preempted to recompute, or its replica failed): it
 * waits to prefill its prompt and what it generated again. */
void sim__rq_recompute(sim__request *r);
/* r, held by a replica that failed, fails to its client, that replica's id
 * in its row. */
void sim__rq_fail_on(sim_engine *e, sim__request *r, int32_t replica);
/* A timed-out request (already recorded) leaves wherever it is: freed now,
 * or marked dead for whoever holds it to drop. */
void sim__rq_cancel(sim_engine *e, sim__request *r);
/* An interrupted run: every request in the system becomes an unfinished
 * row (a timed-out one was recorded already). */
void sim__rq_drain(sim_engine *e);
/* Frees the pool's memory. */
void sim__rq_pool_fini(sim_engine *e);

/* ---- the clients (client.c) ---- */

/* Arrivals: a stream's next open-loop arrival, a closed-loop user's send. */
void sim__cl_schedule_arrival(sim_engine *e, int stream);
void sim__cl_user_send(sim_engine *e, void *subject, int64_t user);
/* A closed-loop stream's users, made one at a time as each first sends
 * (at time 0, in order); it stops making them past the in-flight limit
 * (users_over), so that a loop of more users than the cluster can hold is
 * overloaded having made no more of them than the limit. */
void sim__cl_users_start(sim_engine *e, void *subject, int64_t stream);
/* A call's or task's user: a closed-loop user's index (>= 0), -1 for an
 * open-loop arrival, or SIM__CAPPED(stream) for one of a stream with
 * max_concurrency, whose end frees a slot. */
#define SIM__CAPPED(stream) (-2 - (int32_t)(stream))
/* The owner of a call that ended: its task, its closed-loop user, or its
 * capped stream (error_reply: a rejection, whose reply takes a round trip). */
void sim__cl_notify(sim_engine *e, sim__task *t, int32_t user, bool ok, int32_t output,
                    bool error_reply);
void sim__cl_task_record(sim_engine *e, const sim__task *t, const char *status,
                         int64_t finish_ns);
/* Frees the live and the free tasks. */
void sim__cl_fini(sim_engine *e);
/* workload.retry: whether r's client sends it again, ending as `status`
 * (and r->reason); if so, marks r retried and makes its next attempt,
 * sent after the backoff. */
bool sim__cl_retry(sim_engine *e, sim__request *r, const char *status);

/* ---- the gateway (gateway.c) ---- */

/* cluster.gateway's keys, and the scenario's gateway from them. */
extern const util_field sim__gateway_fields[];
int sim__gw_read(sim_scenario *sc, const cJSON *cluster, util_diag *d);

/* ---- failures and spot take-backs (failures.c, cluster.failures) ---- */

extern const util_field sim__failure_fields[];
/* A pool's cluster.failures, path its JSON path. */
int sim__fa_read(sim_pool *p, const cJSON *obj, const char *path, util_diag *d);
/* The pools' streams and their lists' instants as events; nothing without
 * failures. */
void sim__fa_init(sim_engine *e);
void sim__fa_destroy(sim_engine *e);
/* A replica became ready: its failure and spot clocks start. */
void sim__fa_ready(sim__replica *rp);
/* The failure and spot clocks' events in the heap, which never stop by
 * themselves (the engine's loop ends when only such events are left). */
size_t sim__fa_pending(const sim_engine *e);

/* ---- a replica's start-up (lifecycle.c, cluster.lifecycle) ---- */

/* How long after it is made a new replica of `pool` is ready. */
int64_t sim__lc_ready_after_ns(const sim_engine *e, const sim_pool *pool);
/* A replica the fleet makes while it runs starts cold: its first
 * warm_up_requests requests are served at warm_up_factor's pace. */
void sim__lc_start_cold(sim__replica *rp);
/* rp served a request: it completed there or, prefilled, left for decode. */
void sim__lc_served(sim__replica *rp);
/* The single iteration *step, slowed while rp is cold.  A cold replica runs
 * single steps only (a decode run's closed form knows no factor). */
void sim__lc_slow_step(const sim__replica *rp, mdl_step *step);
void sim__gw_fini(sim_gateway *g);
/* The engine's gateway, when the scenario has one. */
void sim__gw_init(sim_engine *e);
void sim__gw_destroy(sim_engine *e);
/* A new call reaches the gateway: refused (its tenant's budget, shed,
 * the queue full), held, or passed to the router; without a gateway,
 * straight to the router. */
void sim__gw_admit(sim_engine *e, sim__request *r);
/* Something that the gateway's saturation or a tenant's share reads has
 * changed (an iteration ended, a replica is ready): its held requests are
 * looked at again, by an event of this instant. */
static inline void sim__gw_poke(sim_engine *e);
/* A request ends (any status): its tenant's slot is free again. */
void sim__gw_left(sim_engine *e, sim__request *r);
/* A held request's client gave up: it leaves the queue when it reaches
 * its head. */
void sim__gw_cancel(sim_engine *e, sim__request *r);
void sim__gw_poke_now(sim_engine *e);
static inline void sim__gw_poke(sim_engine *e)
{
    if (e->gw) sim__gw_poke_now(e);
}

/* ---- the router and the KV link (router.c) ---- */

/* Routes a request to a replica of a group (the router's policy); a group
 * with no replica ready refuses it (rejected, as a gateway's 503). */
void sim__rt_route(sim_engine *e, sim__group *g, sim__request *r);
/* A prefilled request of a disaggregated cluster leaves for the decode pool;
 * its KV cache arrives there after the link's transfer time. */
void sim__rt_transfer(sim_engine *e, sim__replica *from, sim__request *r);

/* ---- the replica table (fleet.c) ---- */

static inline sim__replica *sim__fl_get(const sim_engine *e, int32_t id)
{
    return id >= 0 && id < e->fleet.n_ids ? e->fleet.by_id[id].rp : NULL;
}
/* The scenario's replicas, ready at time 0, in their groups. */
void sim__fl_init(sim_engine *e);
/* The group a new request of r's model is routed in. */
static inline sim__group *sim__fl_arrivals(const sim_engine *e, const sim__request *r)
{
    return e->fleet.groups[r->model];
}
void sim__fl_fini(sim_engine *e);
/* A new replica of pool p in group g, now; it takes work ready_after_ns
 * later.  Returns its id. */
int32_t sim__fl_add(sim_engine *e, const sim_pool *p, sim__group *g, int64_t ready_after_ns);
/* The same in two halves, for a caller that schedules the readiness itself
 * (autoscaler.c): a new replica, not ready; and the event that makes
 * replica id ready (nothing if it failed or drained first). */
int32_t sim__fl_make(sim_engine *e, const sim_pool *p, sim__group *g);
void sim__fl_ready_event(sim_engine *e, void *subject, int64_t id);
/* Replica id leaves its group now and retires once it holds nothing. */
void sim__fl_drain(sim_engine *e, int32_t id, sim__drain how);
/* Replica id fails now: its KV cache and prefix cache are gone, and every
 * request it held (queued, in its batch, swapped out, in its front end) is
 * failed to its client (status failed, the replica's id kept) or, with
 * !fail_requests, returned to the router to start again. */
void sim__fl_fail(sim_engine *e, int32_t id, bool fail_requests);
/* A draining replica that holds nothing retires (an event of this instant:
 * never from inside its own handlers). */
void sim__fl_retire_if_empty(sim__replica *rp);

/* A change to the cluster at a simulated instant, as an event -- what the
 * fleet issue's autoscaler and failures will make; today only tests do. */
typedef enum sim__change_kind { SIM__ADD, SIM__DRAIN, SIM__FAIL } sim__change_kind;
typedef struct sim__change {
    sim__change_kind kind;
    int32_t pool, group;   /* SIM__ADD: the pool and group of the new replica */
    int32_t replica;       /* SIM__DRAIN, SIM__FAIL: which */
    int64_t ready_after_ns; /* SIM__ADD */
    sim__drain how;        /* SIM__DRAIN */
    bool fail_requests;    /* SIM__FAIL */
} sim__change;
void sim__fl_schedule(sim_engine *e, int64_t at, const sim__change *c);
/* Every replica still in the table emits its row (end of run). */
void sim__fl_emit_rows(sim_engine *e);
/* The group pool p's replicas join. */
sim__group *sim__fl_group_of(const sim_engine *e, const sim_pool *p);

/* ---- the autoscaler (autoscaler.c) ---- */

/* cluster.autoscaler's and cluster.lifecycle's keys (a pool's own or inherited). */
extern const util_field sim__autoscaler_fields[];
extern const util_field sim__lifecycle_fields[];
/* A pool's cluster.autoscaler and cluster.lifecycle, after its model is read. */
int sim__as_read(sim_pool *p, const cJSON *obj, const char *path, util_diag *d);
/* The autoscalers of the pools that have one start: their first sample and
 * decision are scheduled. */
void sim__as_init(sim_engine *e);
void sim__as_fini(sim_engine *e);
/* Whether a lost replica of pool p is to be replaced now: always without
 * an autoscaler; with one, while the pool holds fewer than its spec. */
bool sim__as_replaces(const sim_engine *e, const sim_pool *p);

/* ---- a replica (replica.c): what the router, the fleet and request.c call ---- */

void sim__rp_init(sim__replica *rp, sim_engine *e, const sim_pool *pool, sim__group *g, int id);
void sim__rp_fini(sim__replica *rp);
/* Whether the replica has KV offload tiers below its prefix cache. */
bool sim__rp_offloads(const sim__replica *rp);
/* A CPU tier and the disk tier below it (capacity 0 without one) of pool
 * p's blocks, of kv_offload's sizes x scale. */
void sim__rp_tiers_init(const sim_engine *e, const sim_pool *p, double scale, sim__pcache *cpu,
                        sim__pcache *disk);
/* A request reaches the replica (or its pool's central queue). */
void sim__rp_enqueue(sim__replica *rp, sim__request *r);
/* Blocks freed or work queued from outside: start an iteration if idle. */
void sim__rp_wake(sim__replica *rp);
/* Blocks in use t decode steps from now: counted by the decoding set and
 * outside it, less those that requests share. */
static inline int64_t sim__rp_used_blocks(const sim__replica *rp, int64_t t)
{
    return sim__kv_need(&rp->kv, t + rp->kv_pad) + rp->kv_other - rp->pc.saved;
}
/* Free KV blocks: for the least_kv router and the schedulers. */
static inline int64_t sim__rp_free_blocks(const sim__replica *rp)
{
    return rp->kv_capacity - sim__rp_used_blocks(rp, 0);
}
/* Nanoseconds from the start of a decode run to the end of its k-th step. */
static inline int64_t sim__run_ns(const sim__replica *rp, int64_t k)
{
    return sim__ns(mdl_run_time(&rp->run, k));
}
/* Prefix caching: how many of a waiting request's tokens to prefill are in
 * the cache (whole blocks, never its last token); *in_use: blocks of them
 * that running requests hold already.  For a request admitted before, its
 * progress. */
int64_t sim__rp_cached_prefix(const sim__replica *rp, const sim__request *r, int64_t *in_use);
/* Prefix caching: the free queue evicts what the replica now uses and
 * queues what it freed (the router asks before it looks). */
void sim__rp_settle_cache(sim__replica *rp);
/* A timed-out request that rp holds (queued, in its batch or swap space):
 * dropped at the end of the step in progress (a decode run is cut there),
 * when it reaches the head of the queue, or at once. */
void sim__rp_cancel(sim__replica *rp, sim__request *r);
/* A request's KV cache has crossed the link: its blocks here are free. */
void sim__rp_link_done(sim__replica *rp, sim__request *r);
/* Hand back: its waiting requests (own queue) leave it, in queue order,
 * onto the list *out (linked by `next`), uncounted here. */
void sim__rp_take_waiting(sim__replica *rp, sim__queue *out);
/* Failure: every request it holds leaves it onto *out, brought up to date
 * (tokens generated) and holding nothing; its KV blocks and prefix cache
 * are emptied, and its iteration in progress is abandoned. */
void sim__rp_take_all(sim__replica *rp, sim__queue *out);
/* Whether it holds nothing: no request, no KV block, no iteration. */
bool sim__rp_empty(const sim__replica *rp);
/* SIM_CHECKS: the replica's counters against its lists, its decoding set
 * against its heap and KV histogram, and (span > 0) the blocks the
 * iteration's span of steps needs within the cache. */
void sim__rp_check(const sim__replica *rp, int64_t span);
/* SIM_CHECKS: a replica at the end of a run whose events ran out holds
 * nothing -- no live request routed to it, running or swapped, no KV block
 * in use, nothing counted as outstanding. */
void sim__rp_check_drained(const sim__replica *rp);

/* ---- what a replica did (account.c): a leaf ---- */

/* The KV peak, as an iteration starts. */
void sim__ac_kv_peak(sim__replica *rp);
/* The iteration that ends now (a decode run: its `steps` steps) added to
 * the replica's totals, and to the sink's iteration rows when it has them. */
void sim__ac_iteration(sim__replica *rp, int64_t steps);
/* A speculative step's row, held by sim__ac_iteration, to the sink with its
 * decoders by the drafts each accepted (by[0..K], K the pool's) */
void sim__ac_spec_step(sim__replica *rp, const int32_t *by);
/* The replica's row as of now (still there at the end of the run; the
 * caller says otherwise). */
void sim__ac_row(const sim__replica *rp, sim_replica_row *row);

#endif /* SIM_INT_H */
