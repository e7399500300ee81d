/*
 * memory.c: where a replica's GPU memory goes -- weights, the activation and
 * runtime reserve, and what is left for the paged KV cache.
 */
#include "mdl.h"

#include <math.h>

#define GIB 1073741824.0

double mdl_activation_reserve_bytes(const mdl_model *m, int tp, int64_t max_batched_tokens,
                                    int max_batch)
{
    double per_token = ((double)m->hidden + 2.0 * m->ffn / tp) * m->bytes_per_param * 2;
    double logits = (double)max_batch * m->vocab * 4;
    return (double)max_batched_tokens * per_token + logits + 0.5 * GIB;
}

int mdl_kv_capacity_blocks(const mdl_gpu *gpu, const mdl_model *m, int tp, int pp, double mem_util,
                           double reserve_bytes, int block_tokens, const mdl_beside *beside,
                           const char *path, int64_t *blocks, util_diag *d)
{
    int gpus = tp * pp;
    double usable = gpu->mem_bytes * mem_util;            /* per GPU */
    double extra_w = beside ? beside->weight_bytes : 0, extra_kv = beside ? beside->kv_bytes_per_token : 0;
    double weights = (mdl_model_weight_bytes(m) + extra_w) / gpus; /* per GPU */
    double block = (mdl_model_kv_bytes_per_token(m) + extra_kv) * block_tokens /
                   ((double)mdl_model_kv_shards(m, tp) * pp); /* per GPU */
    double n = floor((usable - weights - reserve_bytes) / block);
    if (n < 1)
        return util_diag_add(d,
                             "%s: %s weights%s (%.1f GB per GPU over %d GPU%s) and a %.1f GB "
                             "activation reserve do not fit in %s memory at "
                             "gpu_memory_utilization %g (%.1f GB usable), with room for a KV "
                             "cache: short by %.1f GB per GPU",
                             path, m->id, extra_w > 0 ? " and its speculative drafter's" : "",
                             weights / 1e9, gpus, gpus == 1 ? "" : "s",
                             reserve_bytes / 1e9, gpu->id, mem_util, usable / 1e9,
                             (weights + reserve_bytes + block - usable) / 1e9);
    *blocks = (int64_t)n;
    return UTIL_OK;
}
