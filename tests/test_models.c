/*
 * test_models.c: the catalog against the reference figures it cites, and the
 * cost models against numbers computed by hand from their formulas.
 */
#include <stdlib.h>
#include <string.h>

#include "mdl.h"
#include "tap.h"

static mdl_catalog *cat;

static void test_catalog(void)
{
    static const char *gpus[] = {"a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200",
                                 "b200", "l4", "l40s", "mi300x"};
    static const char *models[] = {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
                                   "llama-2-7b", "mistral-7b", "mixtral-8x7b",
                                   "qwen2.5-7b", "qwen2.5-72b", "opt-13b"};
    bool all = true;
    for (size_t i = 0; i < 9; i++) all &= mdl_catalog_find_gpu(cat, gpus[i]) != NULL;
    ok(all, "every GPU the issue names is in the catalog");
    all = true;
    for (size_t i = 0; i < 9; i++) all &= mdl_catalog_find_model(cat, models[i]) != NULL;
    ok(all, "every model the issue names is in the catalog");

    const mdl_gpu *h = mdl_catalog_find_gpu(cat, "h100-sxm");
    is_near(h->flops, 989.4e12, 1, "H100 SXM dense BF16 989.4 TFLOP/s");
    is_near(h->mem_bw, 3.35e12, 1, "H100 SXM 3.35 TB/s");
    is_near(h->mem_bytes, 80.0 * 1073741824, 1, "H100 SXM 80 GiB");
    bool idle = true, mfu = true, mbu = true;
    for (int i = 0; i < mdl_catalog_gpu_count(cat); i++) {
        const mdl_gpu *g = mdl_catalog_gpu_at(cat, i);
        idle &= g->idle_w < g->tdp_w;
        mfu &= g->mfu <= 1;
        mbu &= g->mbu <= 1;
    }
    ok(idle, "idle below TDP for every GPU");
    ok(mfu, "MFU at most 1 for every GPU");
    ok(mbu, "MBU at most 1 for every GPU");

    /* Peaks per dtype (docs/catalog.md): each lower precision at least as
     * fast as bf16 where the GPU has it, and absent where it does not. */
    is_near(h->fp8_flops, 1978.9e12, 1, "H100 SXM dense FP8 1978.9 TFLOP/s");
    is_near(h->fp4_flops, 0, 0, "H100 SXM has no FP4");
    const mdl_gpu *a100 = mdl_catalog_find_gpu(cat, "a100-80gb");
    is_near(a100->fp8_flops, 0, 0, "A100 has no FP8");
    is_near(a100->int8_ops, 624e12, 1, "A100 dense INT8 624 TOP/s");
    is_near(mdl_catalog_find_gpu(cat, "h200")->fp8_flops, 1979e12, 1, "H200: the H100's FP8");
    is_near(mdl_catalog_find_gpu(cat, "b200")->fp4_flops, 9000e12, 1, "B200 dense FP4 9 PFLOP/s");
    bool fp8 = true, fp4 = true, int8 = true;
    for (int i = 0; i < mdl_catalog_gpu_count(cat); i++) {
        const mdl_gpu *g = mdl_catalog_gpu_at(cat, i);
        fp8 &= g->fp8_flops == 0 || g->fp8_flops >= g->flops;
        fp4 &= g->fp4_flops == 0 || g->fp4_flops >= g->fp8_flops;
        int8 &= g->int8_ops > 0;
    }
    ok(fp8, "every GPU: FP8 >= BF16 where present");
    ok(fp4, "every GPU: FP4 >= FP8 where present");
    ok(int8, "every GPU: an INT8 peak");
    is_near(mdl_quant_bytes(MDL_Q_W4A16, 2), 0.515625, 0, "w4a16: 0.5 + 2/128 bytes a weight");
    is_near(mdl_quant_bytes(MDL_Q_MXFP4, 2), 0.53125, 0, "mxfp4: 0.5 + 1/32 bytes a weight");
    is_near(mdl_quant_bytes(MDL_Q_NONE, 2), 2, 0, "none: the model's own width");
}

/* Every catalog model names the Hugging Face repo vllm serve loads; an
 * inline record has its own hf, or none. */
static void test_hf_repos(void)
{
    bool all = true;
    for (int i = 0; i < mdl_catalog_model_count(cat); i++) {
        const mdl_model *m = mdl_catalog_model_at(cat, i);
        all &= strchr(m->hf, '/') != NULL;
        if (!strchr(m->hf, '/')) printf("# %s: hf '%s' is not owner/name\n", m->id, m->hf);
    }
    ok(all, "every catalog model has an hf repo (owner/name)");
    is_str(mdl_catalog_find_model(cat, "llama-3.1-8b")->hf, "meta-llama/Llama-3.1-8B-Instruct",
           "llama-3.1-8b: meta-llama/Llama-3.1-8B-Instruct");
    is_str(mdl_catalog_find_model(cat, "qwen2.5-7b")->hf, "Qwen/Qwen2.5-7B",
           "qwen2.5-7b: the base model, whose config holds its 131072 positions");
    static const char text[] =
        "{\"gpus\": [], \"models\": ["
        "{\"id\": \"a\", \"hf\": \"org/A\", \"layers\": 2, \"hidden\": 64, \"heads\": 4, "
        "\"kv_heads\": 4, \"head_dim\": 16, \"ffn\": 128, \"vocab\": 100, \"max_context\": 512},"
        "{\"id\": \"b\", \"layers\": 2, \"hidden\": 64, \"heads\": 4, "
        "\"kv_heads\": 4, \"head_dim\": 16, \"ffn\": 128, \"vocab\": 100, \"max_context\": 512}]}";
    mdl_catalog *own;
    util_diag d;
    util_diag_init(&d);
    int rc = mdl_catalog_load_json(text, "own.json", &own, &d);
    util_diag_print(&d, stdout, "# own catalog");
    is_int(rc, 0, "a catalog with and without hf loads");
    if (!rc) {
        is_str(mdl_catalog_find_model(own, "a")->hf, "org/A", "hf is read into the record");
        is_str(mdl_catalog_find_model(own, "b")->hf, "", "and empty where absent");
        mdl_catalog_destroy(own);
    }
    util_diag_clear(&d);
    char *long_hf = util_xasprintf("{\"gpus\": [], \"models\": [{\"id\": \"c\", \"hf\": "
                                   "\"org/%0250d\", \"layers\": 2, \"hidden\": 64, "
                                   "\"heads\": 4, \"kv_heads\": 4, \"head_dim\": 16, "
                                   "\"ffn\": 128, \"vocab\": 100, \"max_context\": 512}]}", 0);
    ok(mdl_catalog_load_json(long_hf, "own.json", &own, &d) != 0, "an hf too long is refused");
    char *msg = util_diag_join(&d);
    has_str(msg, "models[0].hf: 254 characters", "naming the key");
    free(msg);
    free(long_hf);
    util_diag_fini(&d);
}

/* KV bytes per token = 2 x layers x kv_heads x head_dim x 2 bytes, as
 * docs/reference/models.md tabulates them. */
static void test_model_sizes(void)
{
    static const struct {
        const char *id;
        double kib;
    } kv[] = {{"llama-3.1-8b", 128},  {"llama-3.1-70b", 320}, {"llama-3.1-405b", 504},
              {"llama-2-7b", 512},    {"mixtral-8x7b", 128},  {"qwen2.5-7b", 56},
              {"qwen2.5-72b", 320},   {"opt-13b", 800}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        is_near(mdl_model_kv_bytes_per_token(mdl_catalog_find_model(cat, kv[i].id)) / 1024,
                kv[i].kib, 0, "%s KV cache %g KiB per token", kv[i].id, kv[i].kib);
    is_near(mdl_model_weight_bytes(mdl_catalog_find_model(cat, "llama-3.1-8b")) / 1e9, 16.06,
            0.005, "Llama-3.1-8B BF16 weights 16.06 GB");

    /* Dense Llama-style parameter count from the dimensions: attention
     * (q, o: h x heads x hd; k, v: h x kv_heads x hd), gated MLP (3 x h x
     * ffn), and untied input and output embeddings. */
    const char *llamas[] = {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen2.5-72b"};
    for (size_t i = 0; i < 4; i++) {
        const mdl_model *m = mdl_catalog_find_model(cat, llamas[i]);
        double h = m->hidden, hd = m->head_dim;
        double layer = 2 * h * m->heads * hd + 2 * h * m->kv_heads * hd + 3 * h * m->ffn;
        double total = m->layers * layer + 2.0 * m->vocab * h;
        is_near(m->params / total, 1.0, 0.01, "%s parameters agree with its dimensions",
                llamas[i]);
    }
}

static mdl_cost roofline(const char *gpu, const char *model, const char *json)
{
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse(json);
    util_schema_apply_union(&mdl_cost_schema, o, "cost_model", NULL, &d);
    mdl_cost cm;
    mdl_cost_init(&cm, o, mdl_catalog_find_gpu(cat, gpu), mdl_catalog_find_model(cat, model),
                  "cost_model", NULL, &d);
    if (d.count) printf("# unexpected: %s\n", d.msgs[0]);
    cJSON_Delete(o);
    util_diag_fini(&d);
    return cm;
}

static void test_roofline(void)
{
    mdl_cost cm = roofline("h100-sxm", "llama-3.1-8b", "{\"kind\": \"roofline\"}");
    is_near(cm.mfu, 0.5, 0, "roofline defaults come from the GPU's catalog entry");
    is_near(cm.mbu, 0.75, 0, "the default mbu");
    is_near(cm.overhead_s, 0.002, 0, "the default iteration overhead");
    mdl_step s;

    /* One decode, context 1000: weights (but of the 128256 x 4096 embedding
     * table only its one row) + 1000 tokens of KV at 0.75 x 3.35 TB/s. */
    const double emb = 128256.0 * 4096;
    mdl_batch dec = {.n_decode = 1, .decode_context = 1000};
    mdl_cost_step(&cm, &dec, &s);
    double bytes = (8.03e9 - emb + 4096) * 2 + 131072.0 * 1000;
    is_near(s.bytes, bytes, 1, "decode moves weights plus its KV context");
    is_near(s.time_s, bytes / (3.35e12 * 0.75) + 0.002, 1e-12, "decode is bandwidth-bound");
    is_near(s.decode_s, s.time_s, 1e-15, "all of it is decode time");

    /* One 1000-token prompt: 2 FLOPs per weight per token for the layers
     * (all but the embedding and the head), the head once for the sampled
     * position, and 4 x 32 layers x 4096 x (1000 x 1001 / 2) for causal
     * attention. */
    mdl_chunk whole = {1000, 0};
    mdl_batch pre = {.n_prefill = 1, .prefill_tokens = 1000, .prefill_sq = 1e6,
                     .prefill_pairs = 500500, .chunks = &whole};
    mdl_cost_step(&cm, &pre, &s);
    double flops = 2 * ((8.03e9 - 2 * emb) * 1000 + emb) + 4.0 * 32 * 4096 * 500500;
    is_near(s.flops, flops, 1, "prefill FLOPs include attention's quadratic term");
    is_near(s.time_s, flops / (989.4e12 * 0.5) + 0.002, 1e-12, "prefill is compute-bound");

    /* A mixed iteration is one pass: one weight read, not two. */
    mdl_batch mix = pre;
    mix.n_decode = 1;
    mix.decode_context = 1000;
    mdl_cost_step(&cm, &mix, &s);
    is_near(s.bytes, (8.03e9 - emb + 1001 * 4096) * 2 + 131072.0 * 2000, 1,
            "mixed iteration reads weights once");
    is_near(s.prefill_s + s.decode_s, s.time_s, 1e-15, "prefill and decode shares add up");
    ok(s.prefill_s > s.decode_s, "the prompt takes most of a mixed iteration");

    /* MoE: one token reaches 2 of 8 experts; a large batch reaches all. */
    mdl_cost moe = roofline("h100-sxm", "mixtral-8x7b", "{\"kind\": \"roofline\"}");
    mdl_batch one = {.n_decode = 1, .decode_context = 1};
    mdl_cost_step(&moe, &one, &s);
    double expert = (46.7e9 - 12.9e9) / 6, shared = 12.9e9 - 2 * expert;
    double reached = 8 * (1 - 0.75), memb = 32000.0 * 4096;
    is_near(s.bytes - 131072.0, 2 * (shared - memb + 4096 + expert * reached), 1,
            "one MoE token reads the shared weights and 2 experts");
    mdl_batch many = {.n_decode = 256, .decode_context = 256};
    mdl_cost_step(&moe, &many, &s);
    is_near(s.bytes - 131072.0 * 256, 2 * (46.7e9 - memb + 256 * 4096), 1e3,
            "256 tokens read every expert");
}

static void test_linear_and_floor(void)
{
    mdl_cost cm = roofline("h100-sxm", "llama-3.1-8b",
                           "{\"kind\": \"linear\", \"iteration_s\": 0.01, \"prefill_s_per_token\":"
                           " 0.001, \"decode_step_s\": 0.005, \"decode_s_per_seq\": 0.002}");
    mdl_step s;
    mdl_batch b = {.n_prefill = 2, .prefill_tokens = 300, .prefill_pairs = 45150,
                   .n_decode = 4, .decode_context = 4000};
    mdl_cost_step(&cm, &b, &s);
    is_near(s.time_s, 0.01 + 0.3 + 0.005 + 0.008, 1e-15, "linear: fixed + per token + decode");
    mdl_batch d0 = {.n_prefill = 1, .prefill_tokens = 10, .prefill_pairs = 55};
    mdl_cost_step(&cm, &d0, &s);
    is_near(s.time_s, 0.01 + 0.01, 1e-15, "linear: no decode term without decoders");

    /* A linear model asking for less than the hardware can do is floored
     * at the datasheet: here a 0-second model on a big prefill. */
    mdl_cost fast = roofline("l4", "llama-3.1-8b", "{\"kind\": \"linear\"}");
    mdl_batch big = {.n_prefill = 1, .prefill_tokens = 4096, .prefill_pairs = 4096.0 * 4097 / 2};
    mdl_cost_step(&fast, &big, &s);
    is_near(s.time_s, s.flops / 121e12, 1e-12, "no model beats the datasheet");

    /* Property: for many batch shapes, neither model exceeds peak FLOP/s or
     * peak bandwidth. */
    mdl_cost roof = roofline("h200", "llama-3.1-70b", "{\"kind\": \"roofline\", \"mfu\": 1, "
                             "\"mbu\": 1, \"iteration_overhead_s\": 0}");
    bool compute = true, bandwidth = true;
    gsl_rng *r = util_rng_stream(1, 1);
    for (int i = 0; i < 10000; i++) {
        int64_t p = (int64_t)gsl_rng_uniform_int(r, 20000);
        int32_t n = (int32_t)gsl_rng_uniform_int(r, 300);
        if (p == 0 && n == 0) continue;
        mdl_batch x = {.n_prefill = p > 0, .prefill_tokens = p, .prefill_pairs = p * (p + 1.0) / 2,
                       .n_decode = n, .decode_context = n * (int64_t)gsl_rng_uniform_int(r, 9000)};
        mdl_cost_step(i % 2 ? &roof : &fast, &x, &s);
        const mdl_gpu *g = i % 2 ? &roof.gpu : &fast.gpu;
        compute &= s.flops / s.time_s <= g->flops * (1 + 1e-12);
        bandwidth &= s.bytes / s.time_s <= g->mem_bw * (1 + 1e-12);
    }
    gsl_rng_free(r);
    ok(compute, "10000 random iterations stay within peak compute");
    ok(bandwidth, "10000 random iterations stay within peak bandwidth");
}

/* A run of k decode-only iterations in closed form equals k single steps,
 * including across the point where the bound changes (compute to memory as
 * contexts grow; a linear model's constant to its datasheet floor). */
static void check_run(const mdl_cost *cm, int32_t n, int64_t ctx0, int64_t k, const char *what)
{
    mdl_step one, sum = {0}, run;
    for (int64_t j = 0; j < k; j++) {
        mdl_batch b = {.n_decode = n, .decode_context = ctx0 + n * j};
        mdl_cost_step(cm, &b, &one);
        sum.time_s += one.time_s;
        sum.flops += one.flops;
        sum.bytes += one.bytes;
    }
    mdl_cost_decode_run(cm, n, ctx0, k, &run);
    is_near(run.time_s / sum.time_s, 1, 1e-12, "%s: time of %lld steps in closed form", what,
            (long long)k);
    is_near(run.flops / sum.flops, 1, 1e-12, "%s: FLOPs", what);
    is_near(run.bytes / sum.bytes, 1, 1e-12, "%s: bytes", what);
}

static void test_decode_runs(void)
{
    mdl_cost roof = roofline("h100-sxm", "llama-3.1-8b", "{\"kind\": \"roofline\"}");
    mdl_step a, b;
    mdl_batch first = {.n_decode = 256, .decode_context = 256 * 100};
    mdl_batch later = {.n_decode = 256, .decode_context = 256 * 600};
    mdl_cost_step(&roof, &first, &a);
    mdl_cost_step(&roof, &later, &b);
    double compute_a = a.flops / (roof.gpu.flops * roof.mfu),
           memory_a = a.bytes / (roof.gpu.mem_bw * roof.mbu),
           compute_b = b.flops / (roof.gpu.flops * roof.mfu),
           memory_b = b.bytes / (roof.gpu.mem_bw * roof.mbu);
    ok(compute_a > memory_a, "256 sequences: compute-bound at context 100, bandwidth-bound at 600");
    ok(compute_b < memory_b, "at context 600 memory takes longer (%.3g s against %.3g s)", memory_b,
       compute_b);
    check_run(&roof, 256, 256 * 100, 500, "roofline across the ridge");
    check_run(&roof, 1, 3000, 1, "roofline, one step");
    mdl_cost lin = roofline("l4", "llama-3.1-8b", "{\"kind\": \"linear\", \"iteration_s\": 0.06}");
    check_run(&lin, 8, 8 * 10, 3000, "linear meeting its datasheet floor");
    mdl_cost moe = roofline("h200", "mixtral-8x7b", "{\"kind\": \"roofline\"}");
    check_run(&moe, 3, 30, 200, "MoE");
    /* KV reads at 0.6 of mbu: a steeper memory line, the same sums */
    mdl_cost slow = roofline("h100-sxm", "llama-3.1-8b",
                             "{\"kind\": \"roofline\", \"attn_efficiency\": 0.6}");
    check_run(&slow, 256, 256 * 100, 500, "attn_efficiency 0.6 across the ridge");
    mdl_cost win = roofline("h200", "gpt-oss-20b",
                            "{\"kind\": \"roofline\", \"attn_efficiency\": 0.6}");
    check_run(&win, 4, 4 * 100, 300, "attn_efficiency 0.6 across a sliding window's knee");
}

/* All messages from validating and building a cost model, joined by "\n"
 * ("" when there are none); caller frees. */
static char *cost_errors(const char *json)
{
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse(json);
    if (!util_schema_apply_union(&mdl_cost_schema, o, "cost_model", NULL, &d)) {
        mdl_cost cm;
        mdl_cost_init(&cm, o, mdl_catalog_find_gpu(cat, "a100-80gb"),
                      mdl_catalog_find_model(cat, "opt-13b"), "cost_model", NULL, &d);
        mdl_cost_fini(&cm);
    }
    char *all = util_diag_join(&d);
    cJSON_Delete(o);
    util_diag_fini(&d);
    return all;
}

/* DistServe's vLLM fit for OPT-13B on A100-80GB at TP1 (commit 20a1633,
 * data/validation/distserve-opt13b), milliseconds turned into seconds. */
static const char distserve_json[] =
    "{\"kind\": \"polynomial\","
    " \"prefill\": [0.015751574849507277, 1.0036374192949256e-4, 5.76898915900792e-9],"
    " \"decode\": [0.019562534173678987, 4.941120550644942e-7, 5.060571771697455e-5],"
    " \"decode_large_batch\": {\"from_batch\": 95,"
    " \"coef\": [0.0168386301447433, 4.0897725301957885e-7, 1.0000261546561776e-4]}}";

static mdl_batch prompts(int n, const int64_t *len, mdl_chunk *chunks)
{
    mdl_batch b = {.n_prefill = n, .chunks = chunks};
    for (int i = 0; i < n; i++) {
        double l = (double)len[i];
        chunks[i] = (mdl_chunk){len[i], 0};
        b.prefill_tokens += len[i];
        b.prefill_sq += l * l;
        b.prefill_pairs += l * (l + 1) / 2;
    }
    return b;
}

static double step_s(const mdl_cost *cm, mdl_batch b)
{
    mdl_step s;
    mdl_cost_step(cm, &b, &s);
    return s.time_s;
}

/* The worked examples of data/validation/distserve-opt13b/README.md (ms,
 * to 0.1 ms, without the Ray overhead), and the formula by hand. */
static void test_polynomial_distserve(void)
{
    mdl_cost cm = roofline("a100-80gb", "opt-13b", distserve_json);
    is_int(cm.kind, MDL_COST_POLYNOMIAL, "DistServe's fit loads");
    is_int(cm.poly_large_from, 95, "with its large-batch fit from 95 sequences");
    mdl_chunk ch[2];
    is_near(step_s(&cm, prompts(1, (int64_t[]){850}, ch)) * 1e3, 105.2, 0.05,
            "prefill of one 850-token prompt: 105.2 ms");
    is_near(step_s(&cm, prompts(2, (int64_t[]){512, 512}, ch)) * 1e3, 121.5, 0.05,
            "prefill of two 512-token prompts: 121.5 ms");
    is_near(step_s(&cm, prompts(1, (int64_t[]){2048}, ch)) * 1e3, 245.5, 0.05,
            "prefill of one 2048-token prompt: 245.5 ms");
    is_near(step_s(&cm, prompts(1, (int64_t[]){850}, ch)),
            0.015751574849507277 + 1.0036374192949256e-4 * 850 + 5.76898915900792e-9 * 850 * 850,
            1e-15, "prefill: a + b x L + c x L^2");

    static const struct {
        int32_t b;
        double ms;
    } dec[] = {{1, 20.1}, {32, 37.0}, {94, 70.8}, {95, 65.2}, {128, 82.0}};
    for (size_t i = 0; i < sizeof dec / sizeof dec[0]; i++)
        is_near(step_s(&cm, (mdl_batch){.n_decode = dec[i].b, .decode_context = 1000 * dec[i].b}) *
                    1e3,
                dec[i].ms, 0.05, "decode of %d sequences at context 1000: %.1f ms", dec[i].b,
                dec[i].ms);
    /* b multiplies sum(context + 1); the switch is at B >= from_batch. */
    is_near(step_s(&cm, (mdl_batch){.n_decode = 94, .decode_context = 94000}),
            0.019562534173678987 + 4.941120550644942e-7 * 94 * 1001 + 5.060571771697455e-5 * 94,
            1e-15, "B = 94 uses the small-batch coefficients");
    is_near(step_s(&cm, (mdl_batch){.n_decode = 95, .decode_context = 95000}),
            0.0168386301447433 + 4.0897725301957885e-7 * 95 * 1001 + 1.0000261546561776e-4 * 95,
            1e-15, "B = 95 uses the large-batch coefficients");
}

static void test_polynomial(void)
{
    /* Round coefficients, so the sums can be checked by hand. */
    mdl_cost cm = roofline("a100-80gb", "opt-13b",
                           "{\"kind\": \"polynomial\", \"prefill\": [0.01, 1e-4, 1e-8],"
                           " \"decode\": [0.02, 1e-6, 1e-4], \"overhead\": [0.002, 1e-7]}");
    is_int(cm.poly_large_from, 0, "without decode_large_batch, one decode fit for every size");
    mdl_chunk ch[2];
    mdl_batch pre = prompts(2, (int64_t[]){300, 100}, ch);
    double p = 0.01 + 1e-4 * 400 + 1e-8 * (90000 + 10000);
    is_near(step_s(&cm, pre), p + 0.002 + 1e-7 * 400, 1e-15,
            "prefill + overhead over the prompt tokens");
    mdl_batch dec = {.n_decode = 4, .decode_context = 4000};
    double q = 0.02 + 1e-6 * 4004 + 1e-4 * 4;
    is_near(step_s(&cm, dec), q + 0.002 + 1e-7 * 4000, 1e-15,
            "decode + overhead over the decode contexts");

    /* A mixed iteration: both parts and one overhead, split p : q. */
    mdl_batch mix = pre;
    mix.n_decode = 4;
    mix.decode_context = 4000;
    mdl_step s;
    mdl_cost_step(&cm, &mix, &s);
    is_near(s.time_s, p + q + 0.002 + 1e-7 * 4400, 1e-15, "mixed: prefill + decode + one overhead");
    is_near(s.prefill_s / s.decode_s, p / q, 1e-12, "mixed: time split in proportion p : q");
    is_int(s.out_of_range, 0, "a formula is never out of range");

    /* The datasheet floor: a zero polynomial costs exactly the floor. */
    mdl_cost zero = roofline("l4", "llama-3.1-8b",
                             "{\"kind\": \"polynomial\", \"prefill\": [0, 0, 0],"
                             " \"decode\": [0, 0, 0]}");
    mdl_batch big = {.n_prefill = 1, .prefill_tokens = 4096, .prefill_pairs = 4096.0 * 4097 / 2};
    mdl_cost_step(&zero, &big, &s);
    is_near(s.time_s, s.flops / 121e12, 1e-12, "polynomial: floored at peak FLOP/s");
    mdl_batch one = {.n_decode = 1, .decode_context = 1000};
    mdl_cost_step(&zero, &one, &s);
    is_near(s.time_s, s.bytes / 300e9, 1e-12, "polynomial: floored at peak bandwidth");
}

static void test_polynomial_runs(void)
{
    mdl_cost ds = roofline("a100-80gb", "opt-13b", distserve_json);
    check_run(&ds, 8, 8 * 100, 500, "DistServe small batch");
    check_run(&ds, 120, 120 * 700, 300, "DistServe large batch");
    mdl_cost oh = roofline("a100-80gb", "opt-13b",
                           "{\"kind\": \"polynomial\", \"prefill\": [0.01, 1e-4, 1e-8],"
                           " \"decode\": [0.02, 1e-6, 1e-4], \"overhead\": [0.002, 1e-7]}");
    check_run(&oh, 16, 16 * 50, 1000, "polynomial with overhead");
    /* A shallow context slope: the KV read at full bandwidth overtakes the
     * formula part-way through the run. */
    mdl_cost flat = roofline("a100-80gb", "opt-13b",
                             "{\"kind\": \"polynomial\", \"prefill\": [0, 0, 0],"
                             " \"decode\": [0.02, 1e-7, 0]}");
    mdl_step a, b;
    mdl_cost_step(&flat, &(mdl_batch){.n_decode = 64, .decode_context = 64 * 100}, &a);
    mdl_cost_step(&flat, &(mdl_batch){.n_decode = 64, .decode_context = 64 * 700}, &b);
    ok(a.time_s > a.bytes / flat.gpu.mem_bw + 1e-6,
       "64 sequences: formula at context 100, bandwidth floor at 700");
    is_near(b.time_s, b.bytes / flat.gpu.mem_bw, 0, "at context 700 the floor exactly");
    check_run(&flat, 64, 64 * 100, 600, "polynomial meeting its bandwidth floor");
}

static void test_cost_schema(void)
{
    char *m = cost_errors("{\"kind\": \"polynomial\", \"prefill\": [1, 2], \"decode\": [1, 2, 3]}");
    has_str(m, "cost_model.prefill: expected 3 numbers, got 2", "prefill needs 3 coefficients");
    free(m);
    m = cost_errors("{\"kind\": \"polynomial\", \"prefill\": [1, 2, 3]}");
    has_str(m, "cost_model.decode: missing", "decode is required");
    free(m);
    m = cost_errors("{\"kind\": \"polynomial\", \"prefill\": [0, 0, 0], \"decode\": [0, 0, 0],"
                    " \"decode_large_batch\": {\"from_batch\": 95}}");
    has_str(m, "cost_model.decode_large_batch.coef: missing", "from_batch needs coef");
    free(m);
    m = cost_errors("{\"kind\": \"polynomial\", \"prefill\": [0, 0, 0], \"decode\": [0, 0, 0],"
                    " \"overhead\": [1, \"x\"]}");
    has_str(m, "cost_model.overhead[1]: expected a number", "coefficients are numbers");
    free(m);
    m = cost_errors("{\"kind\": \"polynomial\", \"prefill\": [0, 0, 0], \"decode\": [0, 0, 0],"
                    " \"prefil\": [0, 0, 0]}");
    has_str(m, "cost_model.prefil: unknown key (did you mean 'prefill'?",
            "misspelt keys are caught");
    free(m);
    m = cost_errors("{\"kind\": \"table\"}");
    has_str(m, "cost_model.dir: missing", "a table needs its folder");
    free(m);
    m = cost_errors("{\"kind\": \"table\", \"dir\": \"/nonexistent/tp1\"}");
    has_str(m, "cost_model.dir: /nonexistent/tp1/dense.csv: cannot open",
            "a missing table file names the key and the file");
    free(m);
    m = cost_errors("{\"kind\": \"polynomial\", \"prefill\": [0, 0, 0], \"decode\": [0, 0, 0]}");
    is_str(m, "", "a minimal polynomial is valid");
    free(m);
}

/* Paged KV capacity per replica: each of g GPUs holds weights / g and a
 * reserve R, the rest of mem x utilisation is cache, and a block of b tokens
 * takes KV-bytes x b / g on each. */
static void test_kv_capacity(void)
{
    util_diag d;
    util_diag_init(&d);
    int64_t blocks = 0;
    const mdl_model *m8 = mdl_catalog_find_model(cat, "llama-3.1-8b");
    const mdl_gpu *h100 = mdl_catalog_find_gpu(cat, "h100-sxm");
    double usable = 80.0 * 1073741824 * 0.9, reserve = 1e9;
    is_int(mdl_kv_capacity_blocks(h100, m8, 1, 1, 0.9, reserve, 16, NULL, "c", &blocks, &d), 0,
           "8B fits an H100");
    is_int(blocks, (int64_t)((usable - 16.06e9 - reserve) / (131072.0 * 16)),
           "blocks = (memory x utilisation - weights - reserve) / block bytes");

    /* Tensor parallelism: 70B over two H100s, then four.  Each GPU holds
     * half (a quarter) of the weights and of every block. */
    const mdl_model *m70 = mdl_catalog_find_model(cat, "llama-3.1-70b");
    int64_t tp2 = 0, tp4 = 0;
    mdl_kv_capacity_blocks(h100, m70, 2, 1, 0.9, reserve, 16, NULL, "c", &tp2, &d);
    mdl_kv_capacity_blocks(h100, m70, 4, 1, 0.9, reserve, 16, NULL, "c", &tp4, &d);
    double block = 327680.0 * 16, w = 70.6e9 * 2;
    is_int(tp2, (int64_t)((usable - w / 2 - reserve) / (block / 2)), "70B at TP=2: %lld blocks",
           (long long)tp2);
    is_int(tp4, (int64_t)((usable - w / 4 - reserve) / (block / 4)),
           "70B at TP=4: %lld blocks, more than twice TP=2's (half the weights per GPU)",
           (long long)tp4);
    ok(tp4 > 2 * tp2, "doubling TP more than doubles the cache");

    is_int(mdl_kv_capacity_blocks(mdl_catalog_find_gpu(cat, "l4"), m70, 1, 1, 0.9, 0, 16,
                                  NULL, "cluster.model", &blocks, &d),
           UTIL_EINPUT, "70B does not fit an L4");
    has_str(d.count ? d.msgs[0] : "", "cluster.model: llama-3.1-70b weights (141.2 GB per GPU",
            "the error names the path and the weights");
    /* 141.2 GB + one block of KV (5.2 MB) - 0.9 x 24 GiB = 118.0 GB */
    has_str(d.count ? d.msgs[0] : "", "short by 118.0 GB per GPU", "and says by how much");
    util_diag_fini(&d);
}

/* Tensor parallelism in the roofline: the work of an iteration splits over
 * tp GPUs, and every layer adds two all-reduces of the hidden state. */
static void test_tensor_parallel(void)
{
    mdl_cost one = roofline("h100-sxm", "llama-3.1-70b", "{\"kind\": \"roofline\"}");
    mdl_cost two = one;
    two.tp = 2;
    mdl_batch dec = {.n_decode = 8, .decode_context = 8 * 1000};
    mdl_step a, b;
    mdl_cost_step(&one, &dec, &a);
    mdl_cost_step(&two, &dec, &b);
    double bytes = (70.6e9 - 128256.0 * 8192 + 8 * 8192) * 2 + 327680.0 * 8000;
    is_near(a.bytes, bytes, 1, "the replica moves the same bytes in all");
    /* per GPU: half the bytes at 0.75 x 3.35 TB/s; 2 x 80 all-reduces of
     * 8 tokens x 8192 x 2 bytes, each 1e-5 s + (2 x 1/2) x 131 kB / 450 GB/s */
    double comm = 2 * 80 * (1e-5 + 1.0 * 8 * 8192 * 2 / 450e9);
    is_near(b.time_s, bytes / 2 / (3.35e12 * 0.75) + 0.002 + comm, 1e-12,
            "TP=2: half the bytes per GPU, plus all-reduces over NVLink");
    ok(b.time_s < a.time_s, "TP=2 decodes faster (%.2f ms against %.2f ms)", 1e3 * b.time_s,
       1e3 * a.time_s);
    check_run(&two, 8, 8000, 300, "TP=2 decode run");

    /* Pipeline parallelism: two stages run one after the other for one
     * micro-batch (the same compute and memory time), plus one hand-off of
     * the hidden state between them. */
    mdl_cost pp = one;
    pp.pp = 2;
    mdl_step c;
    mdl_cost_step(&pp, &dec, &c);
    is_near(c.time_s - a.time_s, 1e-5 + 8 * 8192 * 2 / 450e9, 1e-12,
            "PP=2: the iteration takes one hand-off longer");
}

int main(void)
{
    util_diag d;
    util_diag_init(&d);
    if (mdl_catalog_load_default(&cat, &d)) {
        util_diag_print(&d, stdout, "# catalog");
        return 1;
    }
    util_diag_fini(&d);
    test_catalog();
    test_hf_repos();
    test_model_sizes();
    test_roofline();
    test_linear_and_floor();
    test_decode_runs();
    test_polynomial_distserve();
    test_polynomial();
    test_polynomial_runs();
    test_cost_schema();
    test_kv_capacity();
    test_tensor_parallel();
    mdl_catalog_destroy(cat);
    return tap_done();
}
