/*
 * test_precision.c: cluster.quantization and cluster.kv_cache_dtype -- the
 * weight bytes each quantization stores (parameters x bytes per weight,
 * scales included) and what memory then leaves for the KV cache, an fp8 KV
 * cache holding twice the tokens of a bf16 one in the same memory, the
 * batch-1 decode step (bandwidth-bound) following the weight bytes, a long
 * fp8 prefill bounded by the fp8 peak and not the bf16 one, a dtype the GPU
 * lacks refused with the JSON path, the dtype and the GPU, pools inheriting
 * both keys (and disaggregated pools sharing one KV dtype), and none/auto
 * giving exactly the rows of a scenario without them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "tap.h"

#define GIB 1073741824.0

/* One replica of Llama-3.1-8B under the ideal engine (no host time), a
 * light load; a roofline without fixed overhead, so a step is physics
 * alone. */
#define BASE                                                                                       \
    "{\"seed\": 5, \"stop\": {\"requests\": 40}, \"cluster\": {\"gpu\": \"h100-sxm\", "            \
    "\"model\": \"llama-3.1-8b\", \"engine\": \"ideal\", \"cost_model\": {\"kind\": "              \
    "\"roofline\", \"iteration_overhead_s\": 0}}, \"workload\": {\"arrival\": {\"process\": "      \
    "\"poisson\", \"rate_per_s\": 5}, \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": "  \
    "500, \"sigma\": 0.5, \"max\": 3000}, \"output_tokens\": {\"dist\": \"uniform\", \"min\": "    \
    "10, \"max\": 80}}}"

static bool load(const char *const *sets, sim_scenario *sc)
{
    return support_scenario(BASE, sets, sc, NULL) == 0; /* its errors as TAP comments */
}

/* The errors a scenario gives (caller frees); NULL when it loads. */
static char *refused(const char *const *sets)
{
    sim_scenario sc;
    char *errors = NULL;
    if (!support_scenario(BASE, sets, &sc, &errors)) {
        free(errors);
        errors = NULL;
    }
    sim_scenario_fini(&sc);
    return errors;
}

/* The blocks memory.c's formula leaves: (usable - weights - reserve) per GPU
 * over a block's bytes, computed here from the pool's own figures. */
static int64_t blocks_by_hand(const sim_pool *p)
{
    const mdl_model *m = &p->cost.model;
    double weights = m->params * m->weight_bytes_per_param;
    double block = 2.0 * m->layers * m->kv_heads * m->head_dim * m->kv_bytes_per_elem *
                   p->block_tokens;
    double usable = p->cost.gpu.mem_bytes * p->gpu_memory_utilization;
    return (int64_t)floor((usable - weights - p->activation_reserve_bytes) / block);
}

static void test_weights(void)
{
    static const struct {
        const char *set, *gpu;
        double bytes;
    } q[] = {{"cluster.quantization=none", "h100-sxm", 2},
             {"cluster.quantization=fp8", "h100-sxm", 1},
             {"cluster.quantization=int8", "a100-80gb", 1},
             {"cluster.quantization=w4a16", "h100-sxm", 0.5 + 2.0 / 128},
             {"cluster.quantization=mxfp4", "b200", 0.53125}};
    int64_t last = 0;
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        char gpu[64];
        snprintf(gpu, sizeof gpu, "cluster.gpu=%s", q[i].gpu);
        const char *sets[] = {q[i].set, gpu, NULL};
        sim_scenario sc;
        if (!load(sets, &sc)) {
            ok(false, "%s loads", q[i].set);
            continue;
        }
        const sim_pool *p = &sc.pools[0];
        is_near(p->cost.weight_bytes, p->cost.model.params * q[i].bytes, 0,
                "%s on %s: weights = %.0f params x %g bytes", q[i].set, q[i].gpu,
                p->cost.model.params, q[i].bytes);
        is_int(p->kv_blocks, blocks_by_hand(p), "... and the KV cache gets what memory leaves");
        is_near(p->cost.kv_bytes_per_token, 131072, 0, "... in a bf16 cache (auto)");
        if (!strcmp(q[i].gpu, "h100-sxm")) {
            ok(p->kv_blocks > last, "... more blocks than the wider weights left (%lld)",
               (long long)p->kv_blocks);
            last = p->kv_blocks;
        }
        sim_scenario_fini(&sc);
    }
}

static void test_kv_fp8(void)
{
    const char *bf16[] = {"cluster.kv_cache_dtype=bf16", NULL};
    const char *fp8[] = {"cluster.kv_cache_dtype=fp8", NULL};
    sim_scenario a, b;
    if (!load(bf16, &a) || !load(fp8, &b)) return;
    int64_t na = a.pools[0].kv_blocks, nb = b.pools[0].kv_blocks;
    is_near(b.pools[0].cost.kv_bytes_per_token, a.pools[0].cost.kv_bytes_per_token / 2, 0,
            "fp8 KV: half the bytes per token");
    ok(nb == 2 * na || nb == 2 * na + 1, "fp8 KV: twice the blocks in the same memory (%lld, "
       "%lld)", (long long)na, (long long)nb);
    is_near(b.pools[0].cost.weight_bytes, a.pools[0].cost.weight_bytes, 0,
            "and the weights unchanged");
    sim_scenario_fini(&a);
    sim_scenario_fini(&b);
}

/* One decode step of one sequence at a short context: bandwidth-bound, so
 * its time is its bytes over mbu x bandwidth, nearly all of them weights. */
static double decode_step_s(const char *quant, const char *kv, double *bytes)
{
    char q[64], k[64];
    snprintf(q, sizeof q, "cluster.quantization=%s", quant);
    snprintf(k, sizeof k, "cluster.kv_cache_dtype=%s", kv);
    const char *sets[] = {q, k, NULL};
    sim_scenario sc;
    if (!load(sets, &sc)) return NAN;
    mdl_batch b = {.n_decode = 1, .decode_context = 64};
    mdl_step s;
    mdl_cost_step(&sc.pools[0].cost, &b, &s);
    const mdl_cost *cm = &sc.pools[0].cost;
    is_near(s.time_s, s.bytes / (cm->gpu.mem_bw * cm->mbu), 1e-15,
            "decode step (%s, KV %s): bytes at mbu x bandwidth", quant, kv);
    *bytes = s.bytes;
    sim_scenario_fini(&sc);
    return s.time_s;
}

static void test_decode_floor(void)
{
    double bb, fb, wb, kb;
    double bf16 = decode_step_s("none", "auto", &bb), fp8 = decode_step_s("fp8", "auto", &fb);
    double w4 = decode_step_s("w4a16", "auto", &wb), kv8 = decode_step_s("none", "fp8", &kb);
    is_near(fp8 / bf16, 0.5, 0.001, "fp8 weights: the batch-1 step takes half the bf16 one");
    is_near(w4 / bf16, 0.515625 / 2, 0.001, "w4a16: 0.515625 / 2 of it");
    is_near(bb - kb, 64 * 65536.0, 1e-3, "fp8 KV: 64 tokens x 64 KiB fewer bytes read");
    is_near(bf16 - kv8, (bb - kb) / (bb / bf16), 1e-15, "... and that much less time");
    is_near(fb / bb, 0.5, 0.001, "fp8 weights: half the bytes");
    ok(wb < fb, "w4a16 reads fewer than fp8");
}

/* A prefill of 8192 tokens is compute-bound: at the fp8 peak it can be no
 * shorter than its FLOPs at 1978.9 TFLOP/s, and it is about half the bf16
 * one.  The linear model with no time of its own is the datasheet floor
 * exactly. */
static void test_prefill_peak(void)
{
    const char *fp8[] = {"cluster.quantization=fp8", NULL};
    const char *none[] = {"cluster.quantization=none", NULL};
    const char *floor8[] = {"cluster.quantization=fp8", "cluster.cost_model={\"kind\": \"linear\"}",
                            NULL};
    sim_scenario a, b, c;
    if (!load(fp8, &a) || !load(none, &b) || !load(floor8, &c)) return;
    double L = 8192;
    mdl_chunk ch = {.tokens = 8192, .cached = 0};
    mdl_batch pb = {.n_prefill = 1, .prefill_tokens = 8192, .prefill_sq = L * L,
                    .prefill_pairs = L * (L + 1) / 2, .chunks = &ch};
    mdl_step sa, sb, sc_;
    mdl_cost_step(&a.pools[0].cost, &pb, &sa);
    mdl_cost_step(&b.pools[0].cost, &pb, &sb);
    mdl_cost_step(&c.pools[0].cost, &pb, &sc_);
    is_near(a.pools[0].cost.gpu.flops, 1978.9e12, 1, "fp8 computes at H100 SXM's fp8 peak");
    ok(sa.time_s >= sa.flops / 1978.9e12, "fp8 prefill %.4f s >= FLOPs / fp8 peak %.4f s",
       sa.time_s, sa.flops / 1978.9e12);
    is_near(sa.time_s / sb.time_s, 989.4 / 1978.9, 1e-9,
            "and 989.4 / 1978.9 of the bf16 prefill (compute-bound)");
    is_near(sc_.time_s, sc_.flops / 1978.9e12, 1e-12, "the datasheet floor is the fp8 peak's");
    sim_scenario_fini(&a);
    sim_scenario_fini(&b);
    sim_scenario_fini(&c);
}

static void test_refused(void)
{
    const char *a100[] = {"cluster.gpu=a100-80gb", "cluster.quantization=fp8", NULL};
    char *e = refused(a100);
    has_str(e, "cluster.quantization: fp8", "fp8 on an A100 is refused, by its path");
    has_str(e, "a100-80gb", "naming the GPU");
    free(e);
    const char *h100[] = {"cluster.quantization=mxfp4", NULL};
    e = refused(h100);
    has_str(e, "cluster.quantization: mxfp4", "mxfp4 on an H100 is refused");
    has_str(e, "h100-sxm", "naming the GPU");
    free(e);
    const char *pool[] = {"cluster.pools=[{\"name\": \"a\", \"gpu\": \"a100-40gb\", "
                          "\"quantization\": \"fp8\"}]", NULL};
    e = refused(pool);
    has_str(e, "cluster.pools[0].quantization: fp8", "a pool's, by the pool's path");
    free(e);
    const char *kv[] = {"cluster.gpu=a100-80gb", "cluster.kv_cache_dtype=fp8", NULL};
    e = refused(kv);
    ok(e == NULL, "an fp8 KV cache on an A100 is allowed (storage only)");
    free(e);
    const char *bad[] = {"cluster.quantization=fp4", NULL};
    e = refused(bad);
    has_str(e, "cluster.quantization", "an unknown quantization is refused");
    free(e);
}

/* vLLM V1 serves fp8 weight-only on Ampere (FP8 Marlin) and mxfp4 on
 * Hopper: narrow weights, bf16 compute.  The ideal engine does not. */
static void test_weight_only(void)
{
    const char *a100[] = {"cluster.gpu=a100-80gb", "cluster.engine=vllm-v1",
                          "cluster.quantization=fp8", NULL};
    sim_scenario sc;
    if (load(a100, &sc)) {
        const mdl_cost *cm = &sc.pools[0].cost;
        is_near(cm->gpu.flops, 312e12, 1, "fp8 on an A100 under vllm-v1: computed at bf16's peak");
        is_near(cm->model.weight_bytes_per_param, 1, 0, "with weights of a byte");
        is_str(mdl_weight_only_form(MDL_Q_FP8, &sc.pools[0].cost.gpu), "W8A16",
               "its weight-only form: W8A16");
        is_str(mdl_weight_only_words("W8A16"), "weight-only (W8A16)", "in words");
    } else {
        ok(0, "fp8 on an A100 under vllm-v1 loads");
    }
    sim_scenario_fini(&sc);
    const char *h100[] = {"cluster.engine=vllm-v1", "cluster.quantization=mxfp4", NULL};
    if (load(h100, &sc)) {
        is_near(sc.pools[0].cost.gpu.flops, 989.4e12, 1, "mxfp4 on an H100 under vllm-v1: bf16 peak");
        is_near(sc.pools[0].cost.model.weight_bytes_per_param, 0.53125, 0, "and 4-bit weights");
        is_str(mdl_weight_only_form(MDL_Q_MXFP4, &sc.pools[0].cost.gpu), "W4A16",
               "its weight-only form: W4A16");
        ok(!mdl_weight_only_form(MDL_Q_FP8, &sc.pools[0].cost.gpu),
           "fp8 on an H100 is computed in fp8: no weight-only form");
        ok(!mdl_weight_only_form(MDL_Q_NONE, &sc.pools[0].cost.gpu), "nor is bf16");
    } else {
        ok(0, "mxfp4 on an H100 under vllm-v1 loads");
    }
    sim_scenario_fini(&sc);
    const char *ideal[] = {"cluster.gpu=a100-80gb", "cluster.quantization=fp8", NULL};
    char *e = refused(ideal);
    has_str(e, "engine ideal does not serve it weight-only", "the ideal engine refuses it, saying so");
    free(e);
    const char *v0[] = {"cluster.gpu=a100-80gb", "cluster.engine=vllm-v0",
                        "cluster.quantization=fp8", NULL};
    e = refused(v0);
    has_str(e, "engine vllm-v0 does not serve it", "and so does vLLM V0 (its 0.3-0.4 predate FP8 Marlin)");
    free(e);
}

static void test_pools_inherit(void)
{
    const char *sets[] = {"cluster.quantization=fp8", "cluster.kv_cache_dtype=fp8",
                          "cluster.pools=[{\"name\": \"a\"}, {\"name\": \"b\", "
                          "\"kv_cache_dtype\": \"bf16\"}]", NULL};
    sim_scenario sc;
    if (!load(sets, &sc)) return;
    const cJSON *p = util_json_get(sc.json, "cluster.pools");
    is_str(cJSON_GetObjectItem(cJSON_GetArrayItem(p, 0), "quantization")->valuestring, "fp8",
           "a pool inherits cluster.quantization");
    is_near(sc.pools[0].cost.kv_bytes_per_token, 65536, 0, "and cluster.kv_cache_dtype");
    is_near(sc.pools[1].cost.kv_bytes_per_token, 131072, 0, "unless it sets its own");
    is_near(sc.pools[1].cost.weight_bytes, sc.pools[1].cost.model.params, 0,
            "... keeping the inherited fp8 weights");
    sim_scenario_fini(&sc);
}

/* A KV cache moves between the pools of a disaggregated cluster as it is:
 * both pools cache it in one dtype. */
static void test_disaggregated(void)
{
    char *text = support_scenario_text("cluster-static-decode.json");
    const char *mixed[] = {"cluster.pools[1].kv_cache_dtype=fp8", NULL};
    const char *both[] = {"cluster.kv_cache_dtype=fp8", NULL};
    sim_scenario sc;
    char *errors = NULL;
    ok(support_scenario(text, mixed, &sc, &errors) != 0, "a prefill pool's bf16 KV cannot go to "
       "an fp8 decode pool");
    has_str(errors, "cluster.disaggregated: the pools cache KV in different dtypes",
            "... saying so");
    sim_scenario_fini(&sc);
    free(errors);
    errors = NULL;
    int rc = support_scenario(text, both, &sc, &errors);
    is_int(rc, 0, "one fp8 KV dtype for both pools loads");
    if (!rc) is_near(sc.pools[1].cost.kv_bytes_per_token, 65536, 0, "at 64 KiB a token");
    sim_scenario_fini(&sc);
    free(errors);
    free(text);
}

/* The same request rows, and the same cache and busy time. */
static bool same_rows(const support_rows *a, const support_rows *b)
{
    return a->n > 0 && support_rows_equal(a, b) &&
           a->rep[0].kv_capacity_tokens == b->rep[0].kv_capacity_tokens &&
           a->rep[0].busy_s == b->rep[0].busy_s;
}

/* none and auto are the model's own bytes_per_param: a scenario that says
 * so, or states the model's width explicitly, runs exactly as one without
 * the keys. */
static void test_unchanged(void)
{
    const char *plain[] = {"cluster.engine=vllm-v1", NULL};
    const char *stated[] = {"cluster.engine=vllm-v1", "cluster.quantization=none",
                            "cluster.kv_cache_dtype=auto", NULL};
    const char *bf16[] = {"cluster.engine=vllm-v1", "cluster.kv_cache_dtype=bf16", NULL};
    support_rows a, b, c;
    int64_t ea = 0, eb = 0, ec = 0;
    is_int(support_run(BASE, plain, &a, &ea), 0, "without the keys, it runs");
    is_int(support_run(BASE, stated, &b, &eb), 0, "with none and auto, it runs");
    is_int(support_run(BASE, bf16, &c, &ec), 0, "with a bf16 KV cache, it runs");
    ok(same_rows(&a, &b), "none/auto: exactly the rows (%zu) without the keys", a.n);
    ok(same_rows(&a, &c), "bf16 KV for a bf16 model: the same rows");
    is_int(ea, eb, "in the same number of events");
    support_rows_fini(&a);
    support_rows_fini(&b);
    support_rows_fini(&c);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (support_init()) return 1;
    test_weights();
    test_kv_fp8();
    test_decode_floor();
    test_prefill_peak();
    test_refused();
    test_weight_only();
    test_pools_inherit();
    test_disaggregated();
    test_unchanged();
    support_fini();
    return tap_done();
}
