/*
 * kv.c: the KV blocks a replica's decoding sequences need, at any future
 * decode step, without touching the sequences.
 *
 * A sequence of context c holds ceil(c / b) blocks of b tokens.  After t more
 * steps it holds ceil((c + t) / b) = ceil(c / b) + floor((r + t) / b), where
 * r = (c - 1) mod b.  So the total over all decoders t steps ahead is the
 * total now plus, for each residue r, (count with residue r) x
 * floor((r + t) / b): O(b) work for any t.  Residues rotate by one per step,
 * so the histogram is kept by phase = (c - 1 - step) mod b, which a sequence
 * keeps for as long as it decodes.  This is what lets a replica run ahead
 * through decode steps and still stop exactly at the step where the cache
 * runs out.
 */
#include "sim_int.h"

#include <assert.h>
#include <stdlib.h>

static int64_t mod(int64_t a, int64_t b)
{
    int64_t m = a % b;
    return m < 0 ? m + b : m;
}

void sim__kv_init(sim__kv *kv, int block_tokens)
{
    *kv = (sim__kv){.block_tokens = block_tokens,
                    .hist = util_xcalloc((size_t)block_tokens, sizeof *kv->hist)};
}

void sim__kv_fini(sim__kv *kv)
{
    free(kv->hist);
    kv->hist = NULL;
}

int64_t sim__kv_blocks_for(const sim__kv *kv, int64_t tokens)
{
    return (tokens + kv->block_tokens - 1) / kv->block_tokens;
}

void sim__kv_add(sim__kv *kv, int64_t ctx)
{
    assert(ctx >= 1);
    kv->hist[mod(ctx - 1 - kv->at, kv->block_tokens)]++;
    kv->n++;
    kv->blocks += sim__kv_blocks_for(kv, ctx);
}

void sim__kv_remove(sim__kv *kv, int64_t ctx)
{
    assert(ctx >= 1 && kv->n > 0);
    kv->hist[mod(ctx - 1 - kv->at, kv->block_tokens)]--;
    kv->n--;
    kv->blocks -= sim__kv_blocks_for(kv, ctx);
}

int64_t sim__kv_need(const sim__kv *kv, int64_t t)
{
    if (t == 0) return kv->blocks; /* the common question: now */
    int64_t b = kv->block_tokens, whole = t / b, part = t % b, extra = 0;
    /* residues b - part .. b - 1 cross one more boundary; their phases are
     * `part` consecutive slots (mod b) from (b - part - at) mod b */
    for (int64_t i = 0, phase = mod(b - part - kv->at, b); i < part; i++) {
        extra += kv->hist[phase];
        if (++phase == b) phase = 0;
    }
    return kv->blocks + kv->n * whole + extra;
}

void sim__kv_advance(sim__kv *kv, int64_t t)
{
    kv->blocks = sim__kv_need(kv, t);
    kv->at += t;
}

int64_t sim__kv_first_over(const sim__kv *kv, int64_t tmax, int64_t limit)
{
    if (tmax <= 0 || sim__kv_need(kv, tmax - 1) <= limit) return tmax;
    int64_t lo = 0, hi = tmax - 1; /* need(hi) > limit; need is non-decreasing in t */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (sim__kv_need(kv, mid) > limit) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}
