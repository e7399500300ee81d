/*
 * names.c: a set of distinct strings, each kept once (a trace's tenants).
 * A trace of millions of rows names a handful of tenants: the set's memory
 * is the distinct names', never the rows', and a name's pointer stays valid
 * until the set is destroyed, so a request's row may hold it after the
 * request is gone.  Open addressing with linear probing, FNV-1a, at most
 * half full.
 */
#include "wl.h"

#include <stdlib.h>
#include <string.h>

struct wl_names {
    char **slot; /* cap entries, NULL where empty */
    size_t cap, n;
};

static uint64_t hash(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (; *s; s++) h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return h;
}

/* Where s is, or the empty slot where it would go. */
static size_t probe(const wl_names *n, const char *s)
{
    size_t i = (size_t)hash(s) & (n->cap - 1);
    while (n->slot[i] && strcmp(n->slot[i], s)) i = (i + 1) & (n->cap - 1);
    return i;
}

wl_names *wl_names_create(void)
{
    wl_names *n = util_xcalloc(1, sizeof *n);
    n->cap = 16;
    n->slot = util_xcalloc(n->cap, sizeof *n->slot);
    return n;
}

static void grow(wl_names *n)
{
    wl_names bigger = {.cap = 2 * n->cap};
    bigger.slot = util_xcalloc(bigger.cap, sizeof *bigger.slot);
    for (size_t i = 0; i < n->cap; i++)
        if (n->slot[i]) bigger.slot[probe(&bigger, n->slot[i])] = n->slot[i];
    free(n->slot);
    n->slot = bigger.slot;
    n->cap = bigger.cap;
}

const char *wl_names_intern(wl_names *n, const char *s)
{
    size_t i = probe(n, s);
    if (n->slot[i]) return n->slot[i];
    n->slot[i] = util_xstrdup(s);
    if (++n->n * 2 > n->cap) grow(n);
    return wl_names_find(n, s);
}

const char *wl_names_find(const wl_names *n, const char *s)
{
    return n ? n->slot[probe(n, s)] : NULL;
}

int64_t wl_names_count(const wl_names *n)
{
    return n ? (int64_t)n->n : 0;
}

void wl_names_destroy(wl_names *n)
{
    if (!n) return;
    for (size_t i = 0; i < n->cap; i++) free(n->slot[i]);
    free(n->slot);
    free(n);
}
