/*
 * precision.c: what a quantization and a KV-cache dtype change in a cost
 * model -- the bytes a weight and a KV element take, and the dense peak the
 * FLOPs run at.  Activations (the all-reduces, the activation reserve) stay
 * in the model's own dtype, as in vLLM, whose quantized kernels take and give
 * bf16 activations.  docs/cost-models.md ("Precision") has the figures.
 */
#include "mdl.h"

#include <string.h>

const char *const mdl_quantizations[] = {"none", "fp8", "int8", "w4a16", "mxfp4", NULL};
const char *const mdl_kv_dtypes[] = {"auto", "bf16", "fp16", "fp8", NULL};

/* w4a16 (AWQ, GPTQ): 4-bit weights with an fp16 scale per group of 128;
 * mxfp4 (OCP MX): 4-bit e2m1 with an 8-bit shared scale per 32. */
#define W4A16_BYTES (0.5 + 2.0 / 128)
#define MXFP4_BYTES (0.5 + 1.0 / 32)

double mdl_quant_bytes(mdl_quant q, double native)
{
    switch (q) {
    case MDL_Q_NONE: return native;
    case MDL_Q_FP8:
    case MDL_Q_INT8: return 1;
    case MDL_Q_W4A16: return W4A16_BYTES;
    case MDL_Q_MXFP4: return MXFP4_BYTES;
    }
    return native;
}

/* The dense peak q computes at: W8A8 at the fp8 or int8 tensor-core rate,
 * mxfp4 at the fp4 rate, weight-only w4a16 dequantizes to bf16.  0: the GPU
 * lacks it. */
static double quant_peak(const mdl_gpu *g, mdl_quant q)
{
    switch (q) {
    case MDL_Q_FP8: return g->fp8_flops;
    case MDL_Q_INT8: return g->int8_ops;
    case MDL_Q_MXFP4: return g->fp4_flops;
    default: return g->flops;
    }
}

const char *mdl_weight_only_form(mdl_quant q, const mdl_gpu *g)
{
    if (quant_peak(g, q) > 0) return NULL;
    return q == MDL_Q_MXFP4 ? "W4A16" : "W8A16"; /* fp8 and int8: 8-bit weights, bf16 compute */
}

const char *mdl_weight_only_words(const char *form)
{
    static const char *const words[][2] = {{"W8A16", "weight-only (W8A16)"},
                                           {"W4A16", "weight-only (W4A16)"}};
    for (size_t i = 0; form && i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(form, words[i][0])) return words[i][1];
    return NULL;
}

/* The catalog field that would give the GPU the dtype, for the message. */
static const char *peak_key(mdl_quant q)
{
    return q == MDL_Q_FP8 ? "fp8_tflops" : q == MDL_Q_INT8 ? "int8_tops" : "fp4_tflops";
}

/* auto is the model's activation dtype, whatever the weights are: vLLM keeps
 * a bf16 cache under fp8 weights unless told kv_cache_dtype fp8.  An fp8
 * cache needs no fp8 compute: on Ampere vLLM stores it in fp8 and
 * dequantizes to fp16 for attention, so it changes bytes only. */
static double kv_bytes(mdl_kv_dtype kv, double native)
{
    return kv == MDL_KV_AUTO ? native : kv == MDL_KV_FP8 ? 1 : 2;
}

int mdl_precision_apply(mdl_cost *cm, const mdl_precision *pr, const char *path, util_diag *d)
{
    mdl_quant q = pr->quant;
    mdl_kv_dtype kv = pr->kv;
    double peak = quant_peak(&cm->gpu, q);
    if (peak <= 0 && pr->weight_only) peak = cm->gpu.flops; /* dequantized, computed in bf16 */
    if (peak <= 0)
        return util_diag_add(d, "%s.quantization: %s needs %s tensor cores, which GPU %s does "
                                "not have (no %s in its entry), and engine %s does not serve it "
                                "weight-only; use none or w4a16 on it, or an engine that does",
                             path, mdl_quantizations[q], q == MDL_Q_MXFP4 ? "fp4" :
                             mdl_quantizations[q], cm->gpu.id, peak_key(q), pr->engine);
    mdl_model *m = &cm->model;
    m->weight_bytes_per_param = mdl_quant_bytes(q, m->bytes_per_param);
    m->kv_bytes_per_elem = kv_bytes(kv, m->bytes_per_param);
    cm->gpu.flops = peak;
    mdl_cost_set_parallel(cm, cm->tp, cm->pp, &cm->ep); /* what the widths change */
    return UTIL_OK;
}
