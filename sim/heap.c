/*
 * heap.c: the array binary heap behind the event queue (and each replica's
 * finishing set).  Keys are (at, seq); seq is a per-heap insertion counter,
 * so entries with equal `at` leave in the order they came, like libuv's
 * timers (timeout, then start_id).  An entry may be tracked: the heap keeps
 * its current position in *slot, so that its owner can bring it forward
 * (a replica cutting a decode run short) or remove it (a finished request's
 * time-out) instead of leaving a stale event.
 */
#include "sim_int.h"

#include <assert.h>
#include <stdlib.h>

static inline bool before(const sim__event *a, const sim__event *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static inline void place(sim__heap *h, size_t i, const sim__event *ev)
{
    h->a[i] = *ev;
    if (ev->slot) *ev->slot = i;
}

/* Moves ev up from position i to where it belongs. */
static void sift_up(sim__heap *h, size_t i, sim__event ev)
{
    while (i > 0) { /* move parents down until ev fits */
        size_t parent = (i - 1) / 2;
        if (!before(&ev, &h->a[parent])) break;
        place(h, i, &h->a[parent]);
        i = parent;
    }
    place(h, i, &ev);
}

void sim__heap_init(sim__heap *h)
{
    h->a = NULL;
    h->n = h->cap = 0;
    h->next_seq = 0;
}

void sim__heap_fini(sim__heap *h)
{
    free(h->a);
    sim__heap_init(h);
}

void sim__heap_push_tracked(sim__heap *h, int64_t at, sim__handler fn, void *subject,
                            int64_t arg, size_t *slot)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 64;
        h->a = util_xrealloc(h->a, h->cap * sizeof *h->a);
    }
    sim__event ev = {at, h->next_seq++, fn, subject, arg, slot};
    sift_up(h, h->n++, ev);
    SIM__CHECKED(sim__heap_check(h));
}

void sim__heap_push(sim__heap *h, int64_t at, sim__handler fn, void *subject, int64_t arg)
{
    sim__heap_push_tracked(h, at, fn, subject, arg, NULL);
}

void sim__heap_earlier(sim__heap *h, size_t i, int64_t at)
{
    assert(i < h->n && at < h->a[i].at);
    sim__event ev = h->a[i];
    ev.at = at;
    ev.seq = h->next_seq++; /* as if pushed now: FIFO among equal times holds */
    sift_up(h, i, ev);
    SIM__CHECKED(sim__heap_check(h));
}

/* Moves ev down from position i (of a heap of n) to where it belongs. */
static void sift_down(sim__heap *h, size_t i, sim__event ev)
{
    for (size_t n = h->n;;) { /* move the smaller child up until ev fits */
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&h->a[c + 1], &h->a[c])) c++;
        if (!before(&h->a[c], &ev)) break;
        place(h, i, &h->a[c]);
        i = c;
    }
    place(h, i, &ev);
}

/* Fills the hole at position i with the last entry. */
static void fill(sim__heap *h, size_t i)
{
    sim__event last = h->a[--h->n];
    if (i == h->n) return;
    if (i > 0 && before(&last, &h->a[(i - 1) / 2])) sift_up(h, i, last);
    else sift_down(h, i, last);
}

bool sim__heap_pop(sim__heap *h, sim__event *out)
{
    if (h->n == 0) return false;
    *out = h->a[0];
    if (out->slot) *out->slot = SIM__NO_SLOT; /* its owner must not move it now */
    fill(h, 0);
    SIM__CHECKED(sim__heap_check(h));
    return true;
}

void sim__heap_remove(sim__heap *h, size_t i)
{
    assert(i < h->n);
    if (h->a[i].slot) *h->a[i].slot = SIM__NO_SLOT;
    fill(h, i);
    SIM__CHECKED(sim__heap_check(h));
}

#if SIM_CHECKS
void sim__heap_check(const sim__heap *h)
{
    sim__checks_run++;
    SIM__CHECK(h->n <= h->cap);
    for (size_t i = 0; i < h->n; i++) {
        const sim__event *ev = &h->a[i];
        SIM__CHECK(ev->seq < h->next_seq);
        SIM__CHECK(i == 0 || !before(ev, &h->a[(i - 1) / 2])); /* never before its parent */
        SIM__CHECK(!ev->slot || *ev->slot == i);               /* a tracked entry knows where */
    }
}
#endif
