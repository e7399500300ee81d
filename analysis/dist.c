/*
 * dist.c: exact order statistics of one metric in bounded memory.
 *
 * A report needs, per distribution, a handful of order statistics (the two
 * neighbours of each percentile's interpolation point, and the maximum), a
 * mean and a count -- never the sorted array.  While the values of every
 * distribution of a report fit the scan's budget they are kept and the
 * wanted ranks are selected in place (quickselect: O(n), against a sort's
 * O(n log n)).  Past the budget the values are dropped for a histogram of
 * their top 16 bits (a double's bits, mapped so that their order as
 * integers is the order of the numbers), and another scan of the same rows
 * narrows each wanted rank to its bucket: it keeps the bucket's values when
 * they are few enough, or histograms the next 16 bits.  The result is the
 * same order statistic either way -- the value at that rank of the sorted
 * data -- so the percentiles are exact, and so identical for any budget,
 * any scan order and any number of passes.  Memory is the budget, plus
 * 256 KiB a distribution once it is past it.
 *
 * Means are a compensated (Neumaier) sum over the values in the order they
 * were added, over n.
 */
#include "an_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 65536 /* 16 bits a level */

/* The quantiles a report prints (an_stats), in its order. */
static const double quantiles[] = {0.50, 0.90, 0.95, 0.99, 0.999};
#define N_QUANTILES 5

/* A double's bits as an unsigned integer of the same order. */
static uint64_t key_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return (u >> 63) ? ~u : u | 0x8000000000000000ull;
}

static double value_of(uint64_t k)
{
    uint64_t u = (k >> 63) ? k & 0x7fffffffffffffffull : ~k;
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

void an__dist_init(an__dist *d, bool mirror)
{
    memset(d, 0, sizeof *d);
    d->mirror = mirror;
    d->max = -INFINITY;
    d->rmax = -INFINITY;
}

void an__dist_fini(an__dist *d)
{
    free(d->v);
    free(d->hist);
    free(d->kept);
    free(d->ranks);
    memset(d, 0, sizeof *d);
}

static void add_sum(double *sum, double *comp, double x)
{
    double t = *sum + x; /* Neumaier: the low part lost, whichever is larger */
    *comp += fabs(*sum) >= fabs(x) ? (*sum - t) + x : (x - t) + *sum;
    *sum = t;
}

void an__dist_add(an__dist *d, double x, size_t *stored)
{
    d->n++;
    add_sum(&d->sum, &d->comp, x);
    if (x > d->max) d->max = x;
    if (d->mirror) {
        double r = 1.0 / x;
        add_sum(&d->rsum, &d->rcomp, r);
        if (r > d->rmax) d->rmax = r;
    }
    if (d->hist) {
        d->hist[key_of(x) >> 48]++;
        return;
    }
    if (d->nv == d->cap) d->v = util_xrealloc(d->v, (d->cap = d->cap ? 2 * d->cap : 1024) * sizeof *d->v);
    d->v[d->nv++] = x;
    ++*stored;
}

void an__dist_spill(an__dist *d)
{
    if (d->hist) return;
    d->hist = util_xcalloc(BUCKETS, sizeof *d->hist);
    for (size_t i = 0; i < d->nv; i++) d->hist[key_of(d->v[i]) >> 48]++;
    free(d->v);
    d->v = NULL;
    d->nv = d->cap = 0;
}

/* ---- the ranks wanted ---- */

/* gsl_stats_quantile_from_sorted_data's interpolation point of q over n
 * values: rank lhs and the weight delta of rank lhs + 1. */
static void point(double q, size_t n, size_t *lhs, double *delta)
{
    const double index = q * (double)(n - 1);
    *lhs = (size_t)(int)index;
    *delta = index - (double)*lhs;
}

/* The ranks (of the ascending values) that the quantiles, and with mirror
 * those of 1/x, need; sorted and unique.  At most 4 per quantile. */
static int wanted_ranks(const an__dist *d, size_t *r)
{
    size_t n = (size_t)d->n;
    int m = 0;
    for (int i = 0; i < N_QUANTILES; i++) {
        size_t lhs;
        double delta;
        point(quantiles[i], n, &lhs, &delta);
        r[m++] = lhs;
        if (lhs + 1 < n) r[m++] = lhs + 1;
        if (d->mirror) { /* 1/x ascending is x descending */
            r[m++] = n - 1 - lhs;
            if (lhs + 1 < n) r[m++] = n - 2 - lhs;
        }
    }
    for (int i = 1; i < m; i++) /* insertion sort of a few */
        for (int j = i; j > 0 && r[j - 1] > r[j]; j--) {
            size_t t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
    int u = 0;
    for (int i = 0; i < m; i++)
        if (u == 0 || r[u - 1] != r[i]) r[u++] = r[i];
    return u;
}

/* ---- selection in memory ---- */

static void swap(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* Rearranges v[lo, hi) so that v[k] is the value of rank k, those below it
 * are at most it and those above at least it: quickselect with a
 * median-of-three pivot and a three-way partition, so that runs of equal
 * values (a fixed-length workload's TPOT) cost no more than distinct ones. */
static void select_rank(double *v, size_t lo, size_t hi, size_t k)
{
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        double a = v[lo], b = v[mid], c = v[hi - 1];
        double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        size_t lt = lo, i = lo, gt = hi; /* [lo,lt) < pivot, [lt,i) == pivot, [gt,hi) > pivot */
        while (i < gt) {
            if (v[i] < pivot) swap(&v[lt++], &v[i++]);
            else if (v[i] > pivot) swap(&v[i], &v[--gt]);
            else i++;
        }
        if (k < lt) hi = lt;
        else if (k >= gt) lo = gt;
        else return; /* v[k] == pivot */
    }
}

/* The values at ranks r[0..m) (ascending) of v[0, n) into out, by radix:
 * one pass counts the values of each bucket of the keys' top 16 bits,
 * which places every rank in a bucket; a second keeps the values of those
 * few buckets, and a quickselect within each gives the rank.  Two linear
 * passes of a few instructions a value, where quickselects over the whole
 * array would read it about twice per rank. */
static void select_ranks(const double *v, size_t n, const size_t *r, int m, double *out)
{
    uint32_t *hist = util_xcalloc(BUCKETS, sizeof *hist);
    int16_t *slot = util_xmalloc(BUCKETS * sizeof *slot);
    for (size_t i = 0; i < n; i++) hist[key_of(v[i]) >> 48]++;
    memset(slot, 0xff, BUCKETS * sizeof *slot); /* -1: no rank there */
    uint32_t bucket[4 * N_QUANTILES];
    size_t within[4 * N_QUANTILES], below = 0;
    int slots = 0;
    for (uint32_t b = 0, i = 0; b < BUCKETS && i < (uint32_t)m; b++) {
        for (; i < (uint32_t)m && r[i] < below + hist[b]; i++) {
            bucket[i] = b;
            within[i] = r[i] - below;
            if (slot[b] < 0) slot[b] = (int16_t)slots++;
        }
        below += hist[b];
    }
    double **kept = util_xcalloc((size_t)slots, sizeof *kept);
    size_t *fill = util_xcalloc((size_t)slots, sizeof *fill);
    for (int i = 0; i < m; i++)
        if (!kept[slot[bucket[i]]]) kept[slot[bucket[i]]] = util_xmalloc(hist[bucket[i]] * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        int16_t k = slot[key_of(v[i]) >> 48];
        if (k >= 0) kept[k][fill[k]++] = v[i];
    }
    for (int i = 0; i < m; i++) {
        int16_t k = slot[bucket[i]];
        select_rank(kept[k], 0, fill[k], within[i]);
        out[i] = kept[k][within[i]];
    }
    for (int k = 0; k < slots; k++) free(kept[k]);
    free(kept);
    free(fill);
    free(slot);
    free(hist);
}

/* ---- selection by histogram ---- */

/* Each wanted rank's bucket at the current level: the prefix of its key,
 * and its rank within the bucket. */
static void locate(an__dist *d, const uint32_t *hist, uint64_t prefix, int shift)
{
    for (int i = 0; i < d->n_ranks; i++) {
        an__rank *t = &d->ranks[i];
        if (t->done || t->prefix != prefix || t->shift != shift) continue;
        uint64_t below = 0;
        for (uint32_t b = 0; b < BUCKETS; b++) {
            if (t->within < below + hist[b]) {
                t->within -= below;
                t->count = hist[b];
                t->prefix = (prefix << 16) | b;
                t->shift = shift - 16;
                break;
            }
            below += hist[b];
        }
        if (t->shift == 0) { /* every key of the bucket is the same: so is the value */
            t->value = value_of(t->prefix);
            t->done = true;
        }
    }
}

/* A rank's bucket is kept (at most collect_max values) or histogrammed
 * again (more) in the next pass; one that is kept whole is resolved by
 * selection then. */
static bool plan_pass(an__dist *d, size_t collect_max)
{
    bool more = false;
    for (int i = 0; i < d->n_ranks; i++) {
        an__rank *t = &d->ranks[i];
        if (t->done) continue;
        t->collect = t->count <= collect_max;
        more = true;
    }
    return more;
}

bool an__dist_plan(an__dist *d, size_t collect_max)
{
    if (d->n == 0) return false;
    size_t r[4 * N_QUANTILES];
    int m = wanted_ranks(d, r);
    d->n_ranks = m;
    d->ranks = util_xcalloc((size_t)m, sizeof *d->ranks);
    if (!d->hist) { /* in memory: select now */
        double *out = util_xmalloc((size_t)m * sizeof *out);
        select_ranks(d->v, d->nv, r, m, out);
        for (int i = 0; i < m; i++) d->ranks[i] = (an__rank){.rank = r[i], .value = out[i], .done = true};
        free(out);
        return false;
    }
    for (int i = 0; i < m; i++) d->ranks[i] = (an__rank){.rank = r[i], .within = r[i], .shift = 64};
    locate(d, d->hist, 0, 64);
    free(d->hist);
    d->hist = NULL;
    return plan_pass(d, collect_max);
}

/* The rank's slot among the pass's buckets (ranks sharing a bucket share
 * one): its index in d->ranks of the first rank with the same bucket. */
static int bucket_owner(const an__dist *d, int i)
{
    for (int j = 0; j < i; j++)
        if (!d->ranks[j].done && d->ranks[j].prefix == d->ranks[i].prefix &&
            d->ranks[j].shift == d->ranks[i].shift)
            return j;
    return i;
}

void an__dist_begin_pass(an__dist *d)
{
    int m = d->n_ranks;
    d->kept = util_xcalloc((size_t)m, sizeof *d->kept);
    for (int i = 0; i < m; i++) {
        an__rank *t = &d->ranks[i];
        if (t->done || bucket_owner(d, i) != i) continue;
        if (t->collect) {
            d->kept[i].v = util_xmalloc((t->count ? t->count : 1) * sizeof(double));
            d->kept[i].cap = t->count;
        }
        else d->kept[i].hist = util_xcalloc(BUCKETS, sizeof(uint32_t));
    }
}

void an__dist_refine(an__dist *d, double x)
{
    uint64_t k = key_of(x);
    for (int i = 0; i < d->n_ranks; i++) {
        const an__rank *t = &d->ranks[i];
        an__kept *b = &d->kept[i];
        if (t->done || (!b->v && !b->hist) || (k >> t->shift) != t->prefix) continue;
        if (b->v) {
            if (b->n < b->cap) b->v[b->n++] = x; /* the same rows as the pass before */
        }
        else b->hist[(k >> (t->shift - 16)) & 0xffff]++;
        return; /* buckets of one level do not overlap */
    }
}

bool an__dist_end_pass(an__dist *d, size_t collect_max)
{
    int owner[4 * N_QUANTILES];
    for (int i = 0; i < d->n_ranks; i++) owner[i] = bucket_owner(d, i); /* before any is done */
    for (int i = 0; i < d->n_ranks; i++) {
        an__rank *t = &d->ranks[i];
        if (t->done) continue;
        an__kept *b = &d->kept[owner[i]];
        if (t->collect) {
            t->value = t->within < b->n ? (select_rank(b->v, 0, b->n, t->within), b->v[t->within])
                                        : NAN; /* the rows changed between passes */
            t->done = true;
        }
    }
    for (int i = 0; i < d->n_ranks; i++) { /* the histogrammed: one level down */
        an__kept *b = &d->kept[i];
        if (b->hist) locate(d, b->hist, d->ranks[i].prefix, d->ranks[i].shift);
    }
    for (int i = 0; i < d->n_ranks; i++) {
        free(d->kept[i].v);
        free(d->kept[i].hist);
    }
    free(d->kept);
    d->kept = NULL;
    return plan_pass(d, collect_max);
}

/* ---- the summary ---- */

static double at_rank(const an__dist *d, size_t rank)
{
    for (int i = 0; i < d->n_ranks; i++)
        if (d->ranks[i].rank == rank) return d->ranks[i].value;
    return NAN; /* not wanted: never asked */
}

/* gsl_stats_quantile_from_sorted_data over the ascending values (or, with
 * reciprocal, over 1/x ascending), from the selected ranks. */
static double quantile(const an__dist *d, double q, bool reciprocal)
{
    size_t n = (size_t)d->n, lhs;
    double delta;
    point(q, n, &lhs, &delta);
    double a, b = 0;
    if (!reciprocal) {
        a = at_rank(d, lhs);
        if (lhs == n - 1) return a;
        b = at_rank(d, lhs + 1);
    } else {
        a = 1.0 / at_rank(d, n - 1 - lhs);
        if (lhs == n - 1) return a;
        b = 1.0 / at_rank(d, n - 2 - lhs);
    }
    return (1 - delta) * a + delta * b;
}

static void summarise(const an__dist *d, bool reciprocal, an_stats *out)
{
    out->n = d->n;
    if (d->n == 0) {
        out->mean = out->p50 = out->p90 = out->p95 = out->p99 = out->p999 = out->max = NAN;
        return;
    }
    double sum = reciprocal ? d->rsum + d->rcomp : d->sum + d->comp;
    out->mean = sum / (double)d->n;
    out->p50 = quantile(d, 0.50, reciprocal);
    out->p90 = quantile(d, 0.90, reciprocal);
    out->p95 = quantile(d, 0.95, reciprocal);
    out->p99 = quantile(d, 0.99, reciprocal);
    out->p999 = quantile(d, 0.999, reciprocal);
    out->max = reciprocal ? d->rmax : d->max;
}

void an__dist_stats(const an__dist *d, an_stats *out)
{
    summarise(d, false, out);
}

void an__dist_reciprocal_stats(const an__dist *d, an_stats *out)
{
    summarise(d, true, out);
}
