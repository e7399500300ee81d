/*
 * prefix.c: a replica's prefix cache -- automatic prefix caching as vLLM v1
 * does it (vllm/v1/core/kv_cache_manager.py, block_pool.py), at the
 * granularity of content segments rather than of single blocks.
 *
 * Every full KV block is named by the hash chain of the content up to its
 * last token.  A request's shared content is a chain of segments (sim__seg:
 * a key that encodes everything before it, and an end); the blocks whose
 * last token lies in a segment are that segment's, so a segment is one
 * entry of the cache, however many blocks it spans.  A new request
 * references the leading entries that hold all their blocks, and prefills
 * from the first block missing.  Blocks are counted once however many
 * running requests reference them: `saved` is what the per-request counts
 * of replica.c count twice.
 *
 * Free blocks -- never used, freed, or cached with content nobody uses now
 * -- form one queue, least recently freed first, and an allocation takes
 * from its head, evicting what a block held: vLLM's free-block queue.  A
 * request frees its blocks last first, so a prefix outlives its tail.  The
 * queue holds runs, not blocks: a shared entry, a preempted request's own
 * blocks (its victim node, which its recompute reclaims), or anonymous
 * blocks, whose content no request can ask for -- a distinct prompt's, so
 * that a workload without shared content costs one run per settle, not a
 * block per token.  The queue's length is kept equal to the replica's free
 * blocks (sim__pc_settle): what was allocated since is evicted from the
 * head, what was freed without content is queued at the tail.
 *
 * Two simplifications, both at block scale: a request meeting an entry that
 * another request is still filling (two prompts of one new prefix prefilled
 * in chunks at the same time) shares what precedes it and keeps the rest as
 * its own blocks; and a request whose whole prompt is cached recomputes its
 * last block into the cached one rather than into a copy.
 */
#include "sim_int.h"

#include <assert.h>
#include <stdlib.h>

/* ---- nodes ---- */

static sim__pc_node *node_new(sim__pcache *c)
{
    sim__pc_node *n = c->spare;
    if (n) c->spare = n->next;
    else n = util_xmalloc(sizeof *n);
    *n = (sim__pc_node){0};
    return n;
}

static void node_free(sim__pcache *c, sim__pc_node *n)
{
    n->next = c->spare;
    c->spare = n;
}

/* ---- the table of shared entries: open addressing, linear probing ---- */

static size_t slot_of(const sim__pcache *c, uint64_t key)
{
    return (size_t)(key ^ (key >> 29)) & (c->cap - 1);
}

static sim__pc_node *find(const sim__pcache *c, uint64_t key)
{
    if (!c->n) return NULL;
    for (size_t i = slot_of(c, key);; i = (i + 1) & (c->cap - 1)) {
        sim__pc_node *n = c->slots[i];
        if (!n || n->key == key) return n;
    }
}

static void table_put(sim__pcache *c, sim__pc_node *n);
static sim__pc_node **table_slot(sim__pcache *c, uint64_t key);

static void table_grow(sim__pcache *c)
{
    sim__pc_node **old = c->slots;
    size_t old_cap = c->cap;
    c->cap = old_cap ? 2 * old_cap : 64;
    c->slots = util_xcalloc(c->cap, sizeof *c->slots);
    c->n = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i]) table_put(c, old[i]);
    free(old);
}

static void table_put(sim__pcache *c, sim__pc_node *n)
{
    sim__pc_node **slot = table_slot(c, n->key);
    assert(!*slot);
    *slot = n;
    c->n++;
}

/* The slot holding key, or the empty one where it would go: one probe
 * sequence for a find-or-insert.  The table keeps room for one more. */
static sim__pc_node **table_slot(sim__pcache *c, uint64_t key)
{
    if (2 * (c->n + 1) > c->cap) table_grow(c); /* at most half full */
    size_t i = slot_of(c, key);
    while (c->slots[i] && c->slots[i]->key != key) i = (i + 1) & (c->cap - 1);
    return &c->slots[i];
}

/* Removes by shifting back the entries after it that probed past its slot,
 * so that no tombstone is ever needed. */
static void table_remove(sim__pcache *c, const sim__pc_node *n)
{
    size_t mask = c->cap - 1, i = slot_of(c, n->key);
    while (c->slots[i] != n) i = (i + 1) & mask;
    for (size_t j = (i + 1) & mask; c->slots[j]; j = (j + 1) & mask) {
        size_t home = slot_of(c, c->slots[j]->key);
        /* the entry at j may fill the hole at i unless its home is in (i, j] */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            c->slots[i] = c->slots[j];
            i = j;
        }
    }
    c->slots[i] = NULL;
    c->n--;
}

/* ---- the free queue ---- */

static void queue_append(sim__pcache *c, sim__pc_node *n)
{
    n->prev = c->tail;
    n->next = NULL;
    if (c->tail) c->tail->next = n;
    else c->head = n;
    c->tail = n;
    n->queued = true;
    c->free_len += n->resident;
}

static void queue_unlink(sim__pcache *c, sim__pc_node *n)
{
    if (n->prev) n->prev->next = n->next;
    else c->head = n->next;
    if (n->next) n->next->prev = n->prev;
    else c->tail = n->prev;
    n->prev = n->next = NULL;
    n->queued = false;
    c->free_len -= n->resident;
}

/* Free blocks without content at the tail (merged into an anonymous tail). */
static void queue_anonymous(sim__pcache *c, int64_t blocks)
{
    if (blocks <= 0) return;
    sim__pc_node *t = c->tail;
    if (t && !t->key && !t->victim) {
        t->resident += blocks;
        c->free_len += blocks;
        return;
    }
    sim__pc_node *n = node_new(c);
    n->resident = blocks;
    queue_append(c, n);
}

/* A node whose last block was evicted, or a victim claimed or forgotten. */
static void node_drop(sim__pcache *c, sim__pc_node *n)
{
    if (n->queued) queue_unlink(c, n);
    if (n->key) table_remove(c, n);
    if (n->victim) n->victim->victim = NULL;
    node_free(c, n);
}

static void send_down(sim__pcache *c, const sim__pc_node *n);

/* Takes `blocks` from the head of the queue: each run gives up its last
 * blocks first, and what they held is gone -- or, with a tier below, a
 * shared entry's blocks go down to it.  More than it holds empties it:
 * the decoders' next step may need more than is free, before the scheduler
 * preempts. */
static void evict(sim__pcache *c, int64_t blocks)
{
    sim__pc_node *n;
    while (blocks > 0 && (n = c->head)) {
        int64_t take = n->resident < blocks ? n->resident : blocks;
        if (n->key && c->lower && (!n->reply || c->offload_replies)) send_down(c, n);
        n->resident -= take;
        c->free_len -= take;
        blocks -= take;
        if (n->key || n->victim) c->evicted += take;
        if (n->resident == 0) node_drop(c, n);
    }
}

/* ---- a tier below (kv_offload) ----
 *
 * A tier is a cache whose entries are all free, in its queue least
 * recently used first: an entry evicted from the tier above is stored at
 * the tail, a hit moves it there, and what outgrows `capacity` is evicted
 * from the head -- the LRU of vLLM's CPU offloading manager
 * (vllm/v1/kv_offload/lru_manager.py, vLLM v0.11.0), by segment entry as
 * the cache above is.  An entry holds the leading `resident` blocks of its
 * segment. */

/* Entry n of the cache above, whose first `upto` blocks hold their KV,
 * leaves it: the tier copies those it does not hold yet (all of them
 * counted as stored when it first claims them: the GPU evicts a run's last
 * blocks first, and the rest follow from the queue's head). */
static void tier_store(sim__pcache *t, const sim__pc_node *n, int64_t upto)
{
    if (upto > t->capacity) upto = t->capacity; /* the leading blocks that fit */
    if (upto <= 0) return;
    sim__pc_node **slot = table_slot(t, n->key), *e = *slot;
    if (e && e->resident >= upto) return; /* it has them all: nothing to copy */
    if (e) {
        queue_unlink(t, e);
        t->stored += upto - e->resident;
        e->resident = upto;
    } else {
        e = node_new(t);
        *e = (sim__pc_node){.key = n->key, .blocks = n->blocks, .resident = upto,
                            .reply = n->reply};
        *slot = e;
        t->n++;
        t->stored += upto;
    }
    queue_append(t, e);
    if (t->free_len > t->capacity) evict(t, t->free_len - t->capacity);
}

/* Entry n leaves c for the tier below: c counts what its eviction stored
 * there and, overflowing it, in the tier below that. */
static void send_down(sim__pcache *c, const sim__pc_node *n)
{
    sim__pcache *t = c->lower, *u = t->lower;
    int64_t t0 = t->stored, u0 = u ? u->stored : 0;
    tier_store(t, n, n->resident);
    c->sent[0] += t->stored - t0;
    if (u) c->sent[1] += u->stored - u0;
}

void sim__pc_tier_init(sim__pcache *tier, int block_tokens, int64_t capacity)
{
    *tier = (sim__pcache){.block_tokens = block_tokens, .capacity = capacity};
}

void sim__pc_attach(sim__pcache *c, sim__pcache *tier, bool replies)
{
    c->lower = tier;
    c->offload_replies = replies;
}

void sim__pc_init(sim__pcache *c, int block_tokens, int64_t capacity)
{
    *c = (sim__pcache){.block_tokens = block_tokens};
    queue_anonymous(c, capacity); /* every block, never used */
}

void sim__pc_fini(sim__pcache *c)
{
    for (size_t i = 0; i < c->cap; i++) /* referenced entries are in the table alone */
        if (c->slots[i] && !c->slots[i]->queued) free(c->slots[i]);
    for (sim__pc_node *n = c->head, *next; n; n = next) {
        next = n->next;
        free(n);
    }
    for (sim__pc_node *n = c->spare, *next; n; n = next) {
        next = n->next;
        free(n);
    }
    free(c->slots);
    *c = (sim__pcache){0};
}

/* The queue made as long as `free_blocks`: evicting from its head what was
 * allocated since, queueing at its tail (anonymously) what was freed. */
static void reconcile(sim__pcache *c, int64_t free_blocks)
{
    int64_t excess = c->free_len - free_blocks;
    if (excess > 0) evict(c, excess);
    else queue_anonymous(c, -excess);
}

void sim__pc_settle(sim__pcache *c, int64_t free_blocks)
{
    reconcile(c, free_blocks);
}

/* ---- a request's segments ---- */

/* The first block of segment i and the block after its last. */
static int64_t seg_lo(const sim__pcache *c, const sim__request *r, int i)
{
    return i == 0 ? 0 : r->segs[i - 1].end / c->block_tokens;
}

static int64_t seg_hi(const sim__pcache *c, const sim__request *r, int i)
{
    return r->segs[i].end / c->block_tokens;
}

/* Walks r's chain from its first segment: whole entries, then at most one
 * partly evicted entry that nobody references (r will fill it).  Returns the
 * segments walked; *blocks, *in_use as sim__pc_lookup's; with `found`, the
 * entries walked into found[i].node; *missing, the segment whose entry it
 * lacks, *partial, the partly evicted entry it stopped after, or -1. */
static int walk(const sim__pcache *c, const sim__request *r, int64_t *blocks, int64_t *in_use,
                bool *blocked, sim__seg *found, int *missing, int *partial)
{
    *blocks = *in_use = 0;
    *blocked = false;
    *missing = *partial = -1;
    for (int i = 0; i < r->n_segs; i++) {
        int64_t n = seg_hi(c, r, i) - seg_lo(c, r, i);
        if (n == 0) continue; /* its content ends inside the next segment's first block */
        sim__pc_node *e = find(c, r->segs[i].key);
        if (!e) {
            *missing = i; /* where a tier below may go on */
            return i;
        }
        if (found) found[i].node = e;
        if (e->resident < n) {
            if (e->refs) { /* another request is filling it now */
                *blocked = true;
                return i;
            }
            *blocks += e->resident;
            *partial = i;
            return i + 1;
        }
        *blocks += n;
        if (e->refs) *in_use += n;
    }
    return r->n_segs;
}

/* The entry of key in the tiers below c that holds the most of its leading
 * blocks (the nearer tier on a tie), and in *tier its tier; or NULL. */
static sim__pc_node *below_find(const sim__pcache *c, uint64_t key, sim__pcache **tier)
{
    sim__pc_node *best = NULL;
    *tier = NULL; /* callers look only for what the walk found below: never left so */
    for (sim__pcache *t = c->lower; t; t = t->lower) {
        sim__pc_node *e = find(t, key);
        if (e && (!best || e->resident > best->resident)) {
            best = e;
            *tier = t;
        }
    }
    return best;
}

/* Where r's chain, whose first `from` segments the cache above holds and
 * whose segment `from` it lacks, continues in the tiers below: whole
 * entries, then at most one partial; it stops at an entry the cache above
 * has (another request filling it, or a later segment it kept).  Returns
 * the segment after the last; *blocks, the blocks found. */
static int lower_walk(const sim__pcache *c, const sim__request *r, int from, int64_t *blocks)
{
    *blocks = 0;
    for (int i = from; i < r->n_segs; i++) {
        int64_t n = seg_hi(c, r, i) - seg_lo(c, r, i);
        if (n == 0) continue;
        sim__pcache *t;
        const sim__pc_node *e = below_find(c, r->segs[i].key, &t);
        if (!e || find(c, r->segs[i].key)) return i;
        if (e->resident < n) {
            *blocks += e->resident;
            return i + 1;
        }
        *blocks += n;
    }
    return r->n_segs;
}

/* The tiers' blocks for segment i whose entry e holds some: the leading
 * blocks of the segment the best of them has, at most the segment's. */
static int64_t tier_has(const sim__pcache *c, const sim__request *r, int i, const sim__pc_node *e)
{
    sim__pcache *t;
    const sim__pc_node *te = below_find(c, r->segs[i].key, &t);
    if (!te) return 0;
    return te->resident < e->blocks ? te->resident : e->blocks;
}

/* What the tiers below add where the walk above stopped: the rest of the
 * partly evicted entry it stopped after (partial), then, that entry made
 * whole or missing (missing), the entries lower_walk finds.  Returns the
 * blocks; *to, the segment after the last it reaches (untouched: none). */
static int64_t below_count(const sim__pcache *c, const sim__request *r, int missing, int partial,
                           int *to)
{
    int64_t got = 0, more;
    int from = missing;
    if (partial >= 0) {
        const sim__pc_node *e = find(c, r->segs[partial].key);
        int64_t have = tier_has(c, r, partial, e);
        if (have <= e->resident) return 0;
        got = have - e->resident;
        *to = partial + 1;
        if (have < e->blocks) return got;
        from = partial + 1;
    }
    if (from < 0) return got;
    int end = lower_walk(c, r, from, &more);
    if (end > from) *to = end;
    return got + more;
}

int64_t sim__pc_lookup(const sim__pcache *c, const sim__request *r, int64_t *in_use)
{
    int64_t blocks, below;
    bool blocked;
    int missing, partial, to;
    walk(c, r, &blocks, in_use, &blocked, NULL, &missing, &partial);
    if (r->victim && r->victim_cache == c && blocks == r->victim_after)
        blocks += r->victim->resident;
    else if (c->lower && (below = below_count(c, r, missing, partial, &to)) > 0)
        blocks += below;
    return blocks;
}

static sim__pc_node *entry_new(sim__pcache *c, sim__pc_node **slot, uint64_t key,
                               int64_t blocks, int64_t resident);

/* `blocks` blocks of entry e of tier t are loaded into c: the tier's copy
 * is used now (it stays there: the tier is a cache). */
static void tier_used(sim__pcache *c, sim__pcache *t, sim__pc_node *e, int64_t blocks)
{
    queue_unlink(t, e);
    queue_append(t, e);
    t->loaded += blocks;
    c->got[t == c->lower ? 0 : 1] += blocks;
}

/* r's segments [from, to) come up from the tiers below: each becomes an
 * entry that r references, as if r had computed it.  Returns the blocks
 * loaded. */
static int64_t load_from(sim__pcache *c, sim__request *r, int from, int to)
{
    int64_t loaded = 0;
    for (int i = from; i < to; i++) {
        int64_t n = seg_hi(c, r, i) - seg_lo(c, r, i);
        if (n == 0) continue;
        uint64_t key = r->segs[i].key;
        sim__pcache *t;
        sim__pc_node *e = below_find(c, key, &t);
        int64_t have = e->resident < n ? e->resident : n;
        tier_used(c, t, e, have);
        r->segs[i].node = entry_new(c, table_slot(c, key), key, n, have);
        r->segs[i].node->reply = e->reply;
        if (have < n) r->pc_fill = i; /* the last: r computes the rest */
        loaded += have;
    }
    return loaded;
}

int64_t sim__pc_acquire(sim__pcache *c, sim__request *r, int64_t *loaded)
{
    int64_t blocks, in_use, below = 0;
    bool blocked;
    int missing, partial;
    int upto = walk(c, r, &blocks, &in_use, &blocked, r->segs, &missing, &partial);
    r->pc_fill = -1;
    for (int i = 0; i < upto; i++) {
        sim__pc_node *e = seg_hi(c, r, i) > seg_lo(c, r, i) ? r->segs[i].node : NULL;
        if (!e) continue;
        if (e->queued) queue_unlink(c, e); /* free, cached: in use again */
        else c->saved += e->resident;      /* already held by a running request */
        e->refs++;
        e->reply = false; /* a reply re-sent is a prompt's prefix now (kv_offload) */
        if (e->resident < e->blocks) r->pc_fill = i; /* the partly evicted one: r refills it */
    }
    bool reclaim = r->victim && r->victim_cache == c && blocks == r->victim_after;
    int to = upto;
    if (!reclaim && c->lower && (below = below_count(c, r, missing, partial, &to)) > 0) {
        int64_t moved = 0; /* the rest from the tier below */
        int from = missing;
        if (partial >= 0) { /* the partly evicted entry r now holds is filled up first */
            sim__pc_node *e = r->segs[partial].node;
            sim__pcache *t;
            sim__pc_node *te = below_find(c, e->key, &t);
            moved = tier_has(c, r, partial, e) - e->resident;
            e->resident += moved;
            tier_used(c, t, te, moved);
            if (e->resident == e->blocks) r->pc_fill = -1;
            from = partial + 1;
        }
        moved += load_from(c, r, from, to);
        assert(moved == below);
        blocks += below;
        upto = to;
    }
    if (loaded) *loaded = below;
    r->pc_held = upto;
    r->pc_private = blocked;
    r->ref_blocks = blocks;
    int64_t hit = blocks;
    if (r->victim) {
        if (reclaim) {
            hit += r->victim->resident;
            node_drop(c, r->victim); /* its own blocks, reclaimed */
        } else {
            sim__pc_forget(r); /* elsewhere, or no longer after its prefix */
        }
    }
    return hit;
}

/* A new entry in the empty slot table_slot gave for key: `blocks` blocks,
 * the first `resident` of them computed, referenced by the request that
 * computed them. */
static sim__pc_node *entry_new(sim__pcache *c, sim__pc_node **slot, uint64_t key,
                               int64_t blocks, int64_t resident)
{
    sim__pc_node *e = node_new(c);
    *e = (sim__pc_node){.key = key, .blocks = blocks, .resident = resident, .refs = 1};
    *slot = e;
    c->n++;
    return e;
}

void sim__pc_register(sim__pcache *c, sim__request *r, int64_t upto)
{
    int64_t full = upto / c->block_tokens; /* blocks whose every token is scheduled */
    if (r->pc_fill >= 0) {                 /* the entry it is filling grows */
        sim__pc_node *e = r->segs[r->pc_fill].node;
        int64_t have = full - seg_lo(c, r, r->pc_fill);
        if (have > e->blocks) have = e->blocks;
        if (have > e->resident) {
            r->ref_blocks += have - e->resident;
            e->resident = have;
        }
        if (e->resident < e->blocks) return;
        r->pc_fill = -1;
    }
    while (!r->pc_private && r->pc_held < r->n_segs) {
        int i = r->pc_held;
        int64_t lo = seg_lo(c, r, i), n = seg_hi(c, r, i) - lo;
        if (n > 0 && full <= lo) return; /* not reached yet */
        if (n > 0) {
            sim__pc_node **slot = table_slot(c, r->segs[i].key);
            if (*slot) { /* filled by another since r's admission */
                r->pc_private = true;
                return;
            }
            int64_t have = full - lo < n ? full - lo : n;
            r->segs[i].node = entry_new(c, slot, r->segs[i].key, n, have);
            r->ref_blocks += have;
            if (have < n) r->pc_fill = i;
        }
        r->pc_held++;
        if (r->pc_fill >= 0) return;
    }
}

/* A finished request's reply, when its next call re-sends it after the
 * whole prompt: the reply's full blocks, but for the last token's (whose KV
 * was never computed), become an entry that r references.  Returns it, or
 * NULL. */
static sim__pc_node *register_reply(sim__pcache *c, sim__request *r)
{
    if (!r->out_key || r->pc_private || r->pc_fill >= 0 || r->pc_held < r->n_segs ||
        r->segs[r->n_segs - 1].end != r->prompt)
        return NULL;
    int64_t b = c->block_tokens, lo = r->prompt / b;
    int64_t have = ((int64_t)r->prompt + r->output - 1) / b - lo;
    sim__pc_node **slot = have > 0 ? table_slot(c, r->out_key) : NULL;
    if (!slot || *slot) return NULL;
    r->ref_blocks += have;
    sim__pc_node *e = entry_new(c, slot, r->out_key, ((int64_t)r->prompt + r->output) / b - lo, have);
    e->reply = true;
    return e;
}

/* Entries a release frees, in the order they are to be queued. */
typedef struct free_list {
    sim__pc_node *first, **last;
    int64_t blocks;
} free_list;

/* One less reference to e; free now, it joins the list. */
static void collect(sim__pcache *c, sim__pc_node *e, free_list *f)
{
    if (--e->refs > 0) {
        c->saved -= e->resident;
        return;
    }
    e->next = NULL;
    *f->last = e;
    f->last = &e->next;
    f->blocks += e->resident;
}

/* Unreferences r's entries (its reply's first, then its segments' last
 * first); those nobody references now are queued after `own_blocks` blocks
 * of r's own, as vLLM frees a request's blocks in reverse order.  The queue
 * is settled first, so that it matches the replica's free blocks once these
 * are queued. */
static void unreference(sim__pcache *c, sim__request *r, sim__pc_node *reply,
                        sim__pc_node *own, int64_t own_blocks, int64_t free_unshared)
{
    free_list freed = {.last = &freed.first};
    if (reply) collect(c, reply, &freed);
    for (int i = r->pc_held - 1; i >= 0; i--)
        if (seg_hi(c, r, i) > seg_lo(c, r, i)) collect(c, r->segs[i].node, &freed);
    reconcile(c, free_unshared + c->saved - own_blocks - freed.blocks);
    if (own) queue_append(c, own);
    else queue_anonymous(c, own_blocks);
    for (sim__pc_node *e = freed.first, *next; e; e = next) {
        next = e->next;
        queue_append(c, e);
    }
    r->pc_held = 0;
    r->pc_fill = -1;
    r->ref_blocks = 0;
}

void sim__pc_release(sim__pcache *c, sim__request *r, int64_t blocks, sim__pc_how how,
                     int64_t free_unshared)
{
    sim__pc_node *reply = how == SIM__PC_DONE ? register_reply(c, r) : NULL;
    int64_t own_blocks = blocks - r->ref_blocks;
    assert(own_blocks >= 0);
    sim__pc_node *own = NULL;
    if (how == SIM__PC_PREEMPTED && own_blocks > 0) {
        own = node_new(c);
        own->victim = r;
        own->resident = own_blocks;
        r->victim = own;
        r->victim_cache = c;
        r->victim_after = r->ref_blocks;
    }
    unreference(c, r, reply, own, own_blocks, free_unshared);
    r->pc_private = how == SIM__PC_GONE; /* a swapped or transferred KV cache shares nothing */
}

void sim__pc_lost(sim__request *r)
{
    r->pc_held = 0;
    r->pc_fill = -1;
    r->ref_blocks = 0;
    r->pc_private = false;
}

void sim__pc_abandon(sim__pcache *c)
{
    for (sim__pc_node *n = c->head; n; n = n->next)
        if (n->victim) {
            n->victim->victim = NULL;
            n->victim = NULL;
        }
}

void sim__pc_forget(sim__request *r)
{
    sim__pc_node *v = r->victim;
    if (!v) return;
    v->victim = NULL; /* its blocks stay queued where they are, content nobody can ask for */
    r->victim = NULL;
}

/* ---- invariants (SIM_CHECKS) ---- */

void sim__pc_check(const sim__pcache *c)
{
    int64_t queued = 0, saved = 0;
    const sim__pc_node *prev = NULL;
    for (const sim__pc_node *n = c->head; n; prev = n, n = n->next) {
        SIM__CHECK(n->queued && n->prev == prev && n->refs == 0 && n->resident > 0);
        SIM__CHECK(!n->key || find(c, n->key) == n);
        SIM__CHECK(!n->victim || n->victim->victim == n);
        queued += n->resident;
    }
    SIM__CHECK(c->tail == prev && c->free_len == queued);
    size_t entries = 0;
    for (size_t i = 0; i < c->cap; i++) {
        const sim__pc_node *e = c->slots[i];
        if (!e) continue;
        entries++;
        SIM__CHECK(e->key && e->resident <= e->blocks && e->queued == (e->refs == 0));
        if (e->refs > 1) SIM__CHECK(e->resident == e->blocks); /* shared only when whole */
        if (e->refs > 0) saved += (int64_t)(e->refs - 1) * e->resident;
    }
    SIM__CHECK(entries == c->n && saved == c->saved);
    if (c->lower) { /* and the tiers below, in turn */
        sim__pc_check(c->lower);
        SIM__CHECK(c->lower->free_len <= c->lower->capacity && c->lower->saved == 0);
    }
}
