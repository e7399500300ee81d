/*
 * heap.c: the array binary heap behind the event queue (and each replica's
 * finishing set).  Keys are (at, seq); seq is a per-heap insertion counter,
 * so entries with equal `at` leave in the order they came, like libuv's
 * timers (timeout, then start_id).
 */
#include "sim_int.h"

#include <stdlib.h>

static inline bool before(const sim__event *a, const sim__event *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
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

void sim__heap_push(sim__heap *h, int64_t at, sim__handler fn, void *subject, int64_t arg)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 64;
        h->a = util_xrealloc(h->a, h->cap * sizeof *h->a);
    }
    sim__event ev = {at, h->next_seq++, fn, subject, arg};
    size_t i = h->n++;
    while (i > 0) { /* sift up: move parents down until ev fits */
        size_t parent = (i - 1) / 2;
        if (!before(&ev, &h->a[parent])) break;
        h->a[i] = h->a[parent];
        i = parent;
    }
    h->a[i] = ev;
}

bool sim__heap_pop(sim__heap *h, sim__event *out)
{
    if (h->n == 0) return false;
    *out = h->a[0];
    sim__event last = h->a[--h->n];
    size_t i = 0, n = h->n;
    for (;;) { /* sift down: move the smaller child up until last fits */
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&h->a[c + 1], &h->a[c])) c++;
        if (!before(&h->a[c], &last)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (n) h->a[i] = last;
    return true;
}
