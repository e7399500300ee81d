/*
 * idring.c: records that arrive out of the order of their ids, handed on in
 * it.  A run's requests end out of the order they began in (by up to about
 * a thousand places on the 1M benchmark), but both the database and the
 * report want them by id: the recorder so that its table grows by appends,
 * the report's stream so that it sums and sweeps them exactly as a scan of
 * the stored rows does.  A record waits in a ring indexed by its id modulo
 * the ring's size until every smaller id has come; the ring doubles while a
 * record is further ahead than it holds, up to a limit, past which the
 * records before the newcomer are handed on as they are (an id that never
 * comes) and a latecomer is handed on at once.  Memory is the requests in
 * flight, not the run's.
 */
#include "util.h"

#include <stdlib.h>
#include <string.h>

void util_idring_init(util_idring *r, size_t size, int64_t min_cap, int64_t max_cap)
{
    *r = (util_idring){.size = size, .cap = min_cap, .max = max_cap};
    r->slots = util_xmalloc((size_t)min_cap * size);
    r->held = util_xcalloc((size_t)min_cap, sizeof *r->held);
}

void util_idring_fini(util_idring *r)
{
    free(r->slots);
    free(r->held);
    memset(r, 0, sizeof *r);
}

static unsigned char *slot_at(const util_idring *r, int64_t slot)
{
    return r->slots + (size_t)slot * r->size;
}

/* Hands on the held records from next, in id order, while they are there;
 * with upto, past missing ids too until next reaches it. */
static int drain(util_idring *r, int64_t upto, util_idring_fn emit, void *ctx)
{
    while (r->n_held > 0 || r->next < upto) {
        int64_t slot = r->next & (r->cap - 1);
        if (r->held[slot]) {
            r->held[slot] = false;
            r->n_held--;
            int rc = emit(ctx, slot_at(r, slot));
            if (rc) return rc;
        } else if (r->next >= upto) {
            return 0;
        }
        r->next++;
    }
    return 0;
}

/* Twice the ring, its records in their new slots; id_of reads a record's
 * id (the ring keeps only records). */
static void grow(util_idring *r, int64_t (*id_of)(const void *))
{
    int64_t cap = r->cap * 2;
    unsigned char *slots = util_xmalloc((size_t)cap * r->size);
    bool *held = util_xcalloc((size_t)cap, sizeof *held);
    for (int64_t i = 0; i < r->cap; i++)
        if (r->held[i]) {
            int64_t to = id_of(slot_at(r, i)) & (cap - 1);
            memcpy(slots + (size_t)to * r->size, slot_at(r, i), r->size);
            held[to] = true;
        }
    free(r->slots);
    free(r->held);
    r->slots = slots;
    r->held = held;
    r->cap = cap;
}

int util_idring_put(util_idring *r, int64_t id, const void *rec, int64_t (*id_of)(const void *),
                    util_idring_fn emit, void *ctx)
{
    if (id < r->next) return emit(ctx, rec); /* a latecomer, past the ring's reach */
    while (id - r->next >= r->cap && r->cap < r->max) grow(r, id_of);
    int rc = 0;
    if (id - r->next >= r->cap && (rc = drain(r, id - r->cap + 1, emit, ctx))) return rc;
    if (id == r->next) { /* the one awaited: on at once, not through a slot */
        if ((rc = emit(ctx, rec))) return rc;
        r->next++;
        return drain(r, 0, emit, ctx);
    }
    int64_t slot = id & (r->cap - 1);
    memcpy(slot_at(r, slot), rec, r->size);
    r->held[slot] = true;
    r->n_held++;
    return 0;
}

int util_idring_flush(util_idring *r, util_idring_fn emit, void *ctx)
{
    int rc = 0;
    while (!rc && r->n_held > 0) rc = drain(r, r->next + 1, emit, ctx); /* past any missing id */
    return rc;
}
