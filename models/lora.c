/*
 * lora.c: what LoRA adapters cost a model -- their bytes, and the LoRA
 * kernels' FLOPs, bytes and roofline time in a step (docs/lora.md).  The
 * engine (sim/lora.c) decides which adapters a step runs; this file knows
 * only the model and the GPU.
 *
 * The adapted matrices are the ones vLLM's Llama applies LoRA to, q, k, v,
 * o, gate, up and down of every layer (packed_modules_mapping's qkv_proj
 * and gate_up_proj, with o_proj and down_proj, in
 * vllm/model_executor/models/llama.py, v0.11).  The kernels are vLLM's
 * punica-style shrink and expand (vllm/lora/ops/triton_ops/
 * lora_shrink_op.py, lora_expand_op.py): each token of a request with an
 * adapter is multiplied by its adapter's A (in -> the slot's rank,
 * max_lora_rank) into an fp32 buffer, then by B (rank -> out) added to the
 * output; each distinct adapter's A and B are read once a step.
 */
#include "mdl.h"

/* q, k, v, gate and up read the hidden state, o the attention's heads,
 * down the FFN's width. */
static double width_in(const mdl_model *m)
{
    return 5.0 * m->hidden + (double)m->heads * m->head_dim + m->ffn;
}

static double width_out(const mdl_model *m)
{
    double q = (double)m->heads * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
    return q + 2 * kv + m->hidden + 2.0 * m->ffn + m->hidden;
}

double mdl_lora_bytes_per_rank(const mdl_model *m)
{
    return (width_in(m) + width_out(m)) * m->layers * m->bytes_per_param;
}

void mdl_lora_kernels(const mdl_model *m, int max_rank, double tokens, int adapters,
                      double *flops, double *bytes)
{
    double L = m->layers, b = m->bytes_per_param, r = max_rank;
    double in = width_in(m), out = width_out(m);
    *flops = 2 * tokens * r * (in + out) * L;
    *bytes = adapters * r * mdl_lora_bytes_per_rank(m) + tokens * L * (in + 2 * out) * b +
             tokens * L * 7 * r * 4 * 2;
}

double mdl_lora_kernel_s(const mdl_cost *cm, double flops, double bytes)
{
    bool roof = cm->kind == MDL_COST_ROOFLINE;
    double mfu = roof ? cm->mfu : cm->gpu.mfu, mbu = roof ? cm->mbu : cm->gpu.mbu;
    double tp = cm->tp;
    double c = flops / (tp * cm->gpu.flops * mfu), m = bytes / (tp * cm->gpu.mem_bw * mbu);
    return c > m ? c : m;
}

/* The launches' fixed time: each of `launches` kernels a layer, in every
 * layer, takes at least floor_s whatever its size (a launch, its blocks'
 * start and drain: a kernel of a few tokens at rank 8 does well under a
 * microsecond of work by the roofline).  The tensor-parallel GPUs launch
 * theirs side by side; pipeline stages run the layers one after another. */
double mdl_lora_launch_s(const mdl_model *m, int launches, double floor_s)
{
    return (double)m->layers * launches * floor_s;
}
