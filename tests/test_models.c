/*
 * test_models.c: the catalog against the reference figures it cites, and the
 * cost models against numbers computed by hand from their formulas.
 */
#include <stdlib.h>

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
    bool bounded = true;
    for (int i = 0; i < mdl_catalog_gpu_count(cat); i++) {
        const mdl_gpu *g = mdl_catalog_gpu_at(cat, i);
        bounded &= g->idle_w < g->tdp_w && g->mfu <= 1 && g->mbu <= 1;
    }
    ok(bounded, "idle below TDP and efficiencies at most 1 for every GPU");
}

/* KV bytes per token = 2 x layers x kv_heads x head_dim x 2 bytes, as
 * shared/reference/models.md tabulates them. */
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
    ok(cm.mfu == 0.5 && cm.mbu == 0.75 && cm.overhead_s == 0.002,
       "roofline defaults come from the GPU's catalog entry");
    mdl_step s;

    /* One decode, context 1000: weights + 1000 tokens of KV at 0.75 x 3.35 TB/s. */
    mdl_batch dec = {.n_decode = 1, .decode_context = 1000};
    mdl_cost_step(&cm, &dec, &s);
    double bytes = 8.03e9 * 2 + 131072.0 * 1000;
    is_near(s.bytes, bytes, 1, "decode moves weights plus its KV context");
    is_near(s.time_s, bytes / (3.35e12 * 0.75) + 0.002, 1e-12, "decode is bandwidth-bound");
    is_near(s.decode_s, s.time_s, 1e-15, "all of it is decode time");

    /* One 1000-token prompt: 2 x 8.03e9 x 1000 FLOPs for the weights plus
     * 4 x 32 layers x 4096 x (1000 x 1001 / 2) for causal attention. */
    mdl_batch pre = {.n_prefill = 1, .prefill_tokens = 1000, .prefill_sq = 1e6,
                     .prefill_pairs = 500500};
    mdl_cost_step(&cm, &pre, &s);
    double flops = 2 * 8.03e9 * 1000 + 4.0 * 32 * 4096 * 500500;
    is_near(s.flops, flops, 1, "prefill FLOPs include attention's quadratic term");
    is_near(s.time_s, flops / (989.4e12 * 0.5) + 0.002, 1e-12, "prefill is compute-bound");

    /* A mixed iteration is one pass: one weight read, not two. */
    mdl_batch mix = pre;
    mix.n_decode = 1;
    mix.decode_context = 1000;
    mdl_cost_step(&cm, &mix, &s);
    is_near(s.bytes, 8.03e9 * 2 + 131072.0 * 2000, 1, "mixed iteration reads weights once");
    is_near(s.prefill_s + s.decode_s, s.time_s, 1e-15, "prefill and decode shares add up");
    ok(s.prefill_s > s.decode_s, "the prompt takes most of a mixed iteration");

    /* MoE: one token reaches 2 of 8 experts; a large batch reaches all. */
    mdl_cost moe = roofline("h100-sxm", "mixtral-8x7b", "{\"kind\": \"roofline\"}");
    mdl_batch one = {.n_decode = 1, .decode_context = 1};
    mdl_cost_step(&moe, &one, &s);
    double expert = (46.7e9 - 12.9e9) / 6, shared = 12.9e9 - 2 * expert;
    double reached = 8 * (1 - 0.75);
    is_near(s.bytes - 131072.0, 2 * (shared + expert * reached), 1,
            "one MoE token reads the shared weights and 2 experts");
    mdl_batch many = {.n_decode = 256, .decode_context = 256};
    mdl_cost_step(&moe, &many, &s);
    is_near(s.bytes - 131072.0 * 256, 2 * 46.7e9, 1e3, "256 tokens read every expert");
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
    bool within = true;
    gsl_rng *r = util_rng_stream(1, 1);
    for (int i = 0; i < 10000; i++) {
        int64_t p = (int64_t)gsl_rng_uniform_int(r, 20000);
        int32_t n = (int32_t)gsl_rng_uniform_int(r, 300);
        if (p == 0 && n == 0) continue;
        mdl_batch x = {.n_prefill = p > 0, .prefill_tokens = p, .prefill_pairs = p * (p + 1.0) / 2,
                       .n_decode = n, .decode_context = n * (int64_t)gsl_rng_uniform_int(r, 9000)};
        mdl_cost_step(i % 2 ? &roof : &fast, &x, &s);
        const mdl_gpu *g = i % 2 ? &roof.gpu : &fast.gpu;
        within &= s.flops / s.time_s <= g->flops * (1 + 1e-12) &&
                  s.bytes / s.time_s <= g->mem_bw * (1 + 1e-12);
    }
    gsl_rng_free(r);
    ok(within, "10000 random iterations stay within peak compute and bandwidth");
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
    ok(a.flops / (roof.gpu.flops * roof.mfu) > a.bytes / (roof.gpu.mem_bw * roof.mbu) &&
           b.flops / (roof.gpu.flops * roof.mfu) < b.bytes / (roof.gpu.mem_bw * roof.mbu),
       "256 sequences: compute-bound at context 100, bandwidth-bound at 600");
    check_run(&roof, 256, 256 * 100, 500, "roofline across the ridge");
    check_run(&roof, 1, 3000, 1, "roofline, one step");
    mdl_cost lin = roofline("l4", "llama-3.1-8b", "{\"kind\": \"linear\", \"iteration_s\": 0.06}");
    check_run(&lin, 8, 8 * 10, 3000, "linear meeting its datasheet floor");
    mdl_cost moe = roofline("h200", "mixtral-8x7b", "{\"kind\": \"roofline\"}");
    check_run(&moe, 3, 30, 200, "MoE");
}

static void test_kv_capacity(void)
{
    util_diag d;
    util_diag_init(&d);
    int64_t tokens = 0;
    const mdl_model *m8 = mdl_catalog_find_model(cat, "llama-3.1-8b");
    ok(mdl_kv_capacity_tokens(mdl_catalog_find_gpu(cat, "h100-sxm"), m8, 0.9, "c", &tokens, &d) ==
           0,
       "8B fits an H100");
    is_int(tokens, (int64_t)((80.0 * 1073741824 * 0.9 - 16.06e9) / 131072),
           "KV tokens = (memory x utilisation - weights) / KV bytes per token");
    ok(mdl_kv_capacity_tokens(mdl_catalog_find_gpu(cat, "l4"),
                              mdl_catalog_find_model(cat, "llama-3.1-70b"), 0.9, "cluster.model",
                              &tokens, &d) == UTIL_EINPUT,
       "70B does not fit an L4");
    has_str(d.count ? d.msgs[0] : "", "cluster.model: llama-3.1-70b weights (141.2 GB) do not fit",
            "the error names the path and the weights");
    /* 141.2 GB + one token of KV - 0.9 x 24 GiB = 118.0 GB */
    has_str(d.count ? d.msgs[0] : "", "short by 118.0 GB", "and says by how much");
    util_diag_fini(&d);
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
    test_model_sizes();
    test_roofline();
    test_linear_and_floor();
    test_decode_runs();
    test_kv_capacity();
    mdl_catalog_destroy(cat);
    return tap_done();
}
