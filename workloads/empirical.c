/*
 * empirical.c: a column of a trace (prompt or output lengths) as a
 * distribution that draws each value as often as it occurs in the column.
 *
 * The trace is streamed once into an open-addressing hash of value -> count,
 * so memory follows the number of distinct values (a few thousand for the
 * shipped traces), not the number of rows (millions for a week of Azure
 * traffic).  The distinct values are then sorted with their cumulative
 * counts; a draw is one gsl_rng_uniform_int over the total count and a
 * binary search, which is exact (no floating-point weights) and O(log n).
 */
#include "wl_int.h"

#include <assert.h>
#include <stdlib.h>

struct wl_empirical {
    int32_t *values; /* distinct, ascending */
    uint64_t *cum;   /* cum[i]: rows whose value is <= values[i] */
    int64_t n;
    uint64_t total;
    double mean;
};

/* ---- counting: value -> rows, token counts are >= 1 so 0 marks a free slot ---- */

typedef struct counts {
    int32_t *keys;
    uint64_t *n;
    size_t cap, used; /* cap a power of two, kept at most half full */
} counts;

static size_t slot_of(const counts *c, int32_t key)
{
    size_t i = (size_t)util_mix64((uint64_t)key) & (c->cap - 1);
    while (c->keys[i] && c->keys[i] != key) i = (i + 1) & (c->cap - 1);
    return i;
}

static void counts_grow(counts *c)
{
    counts big = {util_xcalloc(c->cap * 2, sizeof *big.keys),
                  util_xcalloc(c->cap * 2, sizeof *big.n), c->cap * 2, c->used};
    for (size_t i = 0; i < c->cap; i++) {
        if (!c->keys[i]) continue;
        size_t j = slot_of(&big, c->keys[i]);
        big.keys[j] = c->keys[i];
        big.n[j] = c->n[i];
    }
    free(c->keys);
    free(c->n);
    *c = big;
}

static void counts_add(counts *c, int32_t key)
{
    assert(key >= 1);
    if (2 * (c->used + 1) > c->cap) counts_grow(c);
    size_t i = slot_of(c, key);
    if (!c->keys[i]) {
        c->keys[i] = key;
        c->used++;
    }
    c->n[i]++;
}

/* ---- the table ---- */

static int cmp_value(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sorted distinct values with cumulative counts, from the hash. */
static wl_empirical *table_from(const counts *c)
{
    wl_empirical *e = util_xcalloc(1, sizeof *e);
    e->n = (int64_t)c->used;
    e->values = util_xmalloc(c->used * sizeof *e->values);
    e->cum = util_xmalloc(c->used * sizeof *e->cum);
    size_t k = 0;
    for (size_t i = 0; i < c->cap; i++)
        if (c->keys[i]) e->values[k++] = c->keys[i];
    qsort(e->values, c->used, sizeof *e->values, cmp_value);
    double sum = 0;
    for (size_t i = 0; i < c->used; i++) {
        uint64_t n = c->n[slot_of(c, e->values[i])];
        e->total += n;
        e->cum[i] = e->total;
        sum += (double)e->values[i] * (double)n;
    }
    e->mean = sum / (double)e->total;
    return e;
}

int wl_empirical_load(const char *path, wl_trace_format format, bool output_column,
                      wl_empirical **out, util_diag *d)
{
    *out = NULL;
    wl_trace *t;
    int rc = wl_trace_open(path, format, &t, d);
    if (rc) return rc;
    wl_trace_set_block_tokens(t, 0); /* a column's lengths only: hash ids are read past */
    counts c = {util_xcalloc(64, sizeof *c.keys), util_xcalloc(64, sizeof *c.n), 64, 0};
    wl_record rec;
    while ((rc = wl_trace_next(t, &rec, d)) == 1)
        counts_add(&c, output_column ? rec.output : rec.prompt);
    wl_trace_close(t);
    if (rc == 0 && c.used == 0) rc = util_diag_add(d, "%s: no requests in the trace", path);
    /* a draw is one gsl_rng_uniform_int over the rows: MT19937 spans 2^32 */
    uint64_t rows = 0;
    for (size_t i = 0; i < c.cap; i++) rows += c.n[i];
    if (rc == 0 && rows > UINT32_MAX)
        rc = util_diag_add(d, "%s: more than %u rows, too many to sample from", path,
                           UINT32_MAX);
    if (rc == 0) *out = table_from(&c);
    free(c.keys);
    free(c.n);
    return rc;
}

double wl_empirical_sample(const wl_empirical *e, gsl_rng *r)
{
    assert(e->total <= gsl_rng_max(r) - gsl_rng_min(r)); /* gsl_rng_uniform_int's limit */
    uint64_t u = gsl_rng_uniform_int(r, (unsigned long)e->total);
    /* the first value whose cumulative count exceeds u */
    int64_t lo = 0, hi = e->n - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (e->cum[mid] > u) hi = mid;
        else lo = mid + 1;
    }
    return e->values[lo];
}

double wl_empirical_mean(const wl_empirical *e)
{
    return e->mean;
}

int64_t wl__empirical_distinct(const wl_empirical *e)
{
    return e->n;
}

void wl_empirical_destroy(wl_empirical *e)
{
    if (!e) return;
    free(e->values);
    free(e->cum);
    free(e);
}
