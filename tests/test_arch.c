/*
 * test_arch.c: models from their dimensions and from Hugging Face
 * config.json files (tests/hf_configs, real configs) -- parameters counted
 * within 1% of the published totals, exact KV bytes per token (MLA's latent,
 * grouped-query heads, an fp8 cache), weights and KV capacity per
 * quantization, MLA's attention FLOPs, sliding windows in prefill and in
 * decode runs (a run across the window's knee costs what its iterations
 * cost one by one), expert parallelism's all-to-all against figures worked
 * by hand (one node and two), the skew that measured expert counts give,
 * tensor parallelism beyond the KV heads, and the errors a bad config or a
 * bad expert-parallel setting gives.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "tap.h"

static const char *root;

/* A light scenario around `model` (a JSON value) with extra cluster keys,
 * on an H200 unless they name a GPU. */
static char *scenario_json(const char *model, const char *cluster)
{
    return util_xasprintf(
        "{\"seed\": 3, \"stop\": {\"requests\": 20}, \"cluster\": {%s"
        "\"model\": %s, \"engine\": \"ideal\", \"cost_model\": {\"kind\": \"roofline\", "
        "\"iteration_overhead_s\": 0}%s%s}, \"workload\": {\"arrival\": {\"process\": "
        "\"poisson\", \"rate_per_s\": 2}, \"prompt_tokens\": {\"dist\": \"fixed\", \"value\": "
        "200}, \"output_tokens\": {\"dist\": \"fixed\", \"value\": 20}}}",
        strstr(cluster, "\"gpu\"") ? "" : "\"gpu\": \"h200\", ", model, *cluster ? ", " : "",
        cluster);
}

/* The scenario of tests/hf_configs/NAME with extra cluster keys; its errors
 * in *errors when errors is not NULL (else as TAP comments). */
static int load_hf(const char *name, const char *cluster, sim_scenario *sc, char **errors)
{
    char *model = util_xasprintf("{\"hf_config\": \"%s/tests/hf_configs/%s\"}", root, name);
    char *json = scenario_json(model, cluster);
    int rc = support_scenario(json, NULL, sc, errors);
    free(json);
    free(model);
    return rc;
}

/* ---- parameters and KV bytes of real configs ---- */

typedef struct published {
    const char *name;
    double total_b;   /* the model card's total */
    double kv_bytes;  /* per token, bf16 cache: worked by hand in the comment */
} published;

static void test_configs(void)
{
    static const published models[] = {
        {"llama-3.1-8b", 8.03, 32 * 8 * 128 * 2 * 2},    /* 131,072 */
        {"mixtral-8x7b", 46.7, 32 * 8 * 128 * 2 * 2},    /* 131,072 */
        {"qwen3-30b-a3b", 30.5, 48 * 4 * 128 * 2 * 2},   /* 98,304 */
        {"deepseek-v3", 671, 61 * (512 + 64) * 2},       /* 70,272: MLA's latent */
        {"gpt-oss-120b", 116.8, 36 * 8 * 64 * 2 * 2},    /* 73,728 */
    };
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        const published *p = &models[i];
        sim_scenario sc;
        int rc = load_hf(p->name, "\"tensor_parallel\": 8, \"scheduler\": {\"kv_blocks\": 100}",
                         &sc, NULL);
        is_int(rc, 0, "%s: its config.json loads", p->name);
        if (rc) continue;
        const mdl_model *m = &sc.pools[0].cost.model;
        cmp_ok(fabs(m->params / 1e9 / p->total_b - 1), <, 0.01,
               "%s: %.2fB parameters counted, within 1%% of the published %gB", p->name,
               m->params / 1e9, p->total_b);
        is_near(mdl_model_kv_bytes_per_token(m), p->kv_bytes, 0, "%s: %g KV bytes a token",
                p->name, p->kv_bytes);
        is_int(sc.warnings.count, 0, "%s: no warning: the count is the model's", p->name);
        sim_scenario_fini(&sc);
    }
}

/* Active parameters where the publisher's figure has the digits to check:
 * Mixtral's 12.9B, gpt-oss-120b's 5.1B (counted without the embedding
 * table), and the DeepSeek-V3 split worked by hand. */
static void test_active(void)
{
    sim_scenario sc;
    if (!load_hf("mixtral-8x7b", "", &sc, NULL))
        cmp_ok(fabs(sc.pools[0].cost.model.active_params / 12.9e9 - 1), <, 0.01,
               "mixtral: %.2fB active, within 1%% of 12.9B", sc.pools[0].cost.model.active_params / 1e9);
    sim_scenario_fini(&sc);
    if (!load_hf("gpt-oss-120b", "\"tensor_parallel\": 2", &sc, NULL)) {
        const mdl_model *m = &sc.pools[0].cost.model;
        double without_table = m->active_params - (double)m->vocab * m->hidden;
        cmp_ok(fabs(without_table / 5.1e9 - 1), <, 0.01,
               "gpt-oss-120b: %.2fB active without the embedding table, within 1%% of 5.1B",
               without_table / 1e9);
        is_int(m->window_layers, 18, "gpt-oss-120b: 18 of 36 layers windowed (layer_types)");
        is_int(m->sliding_window, 128, "with a 128-token window");
    }
    sim_scenario_fini(&sc);
    if (!load_hf("deepseek-v3", "\"tensor_parallel\": 8, \"scheduler\": {\"kv_blocks\": 100}",
                 &sc, NULL)) {
        const mdl_model *m = &sc.pools[0].cost.model;
        /* attention per layer: q_a 7168x1536, q_b 1536x128x192, kv_a 7168x576,
         * kv_b 512x128x256, o 128x128x7168; FFN 3x7168x18432 dense, 3x7168x2048
         * per expert; router 7168x256 */
        double attn = 7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 +
                      128.0 * 128 * 7168;
        double expert = 3.0 * 7168 * 2048, dense = 3.0 * 7168 * 18432;
        double emb = 2.0 * 129280 * 7168;
        double active = 61 * attn + 3 * dense + 58 * (9 * expert + 7168.0 * 256) + emb;
        double total = 61 * attn + 3 * dense + 58 * (257 * expert + 7168.0 * 256) + emb;
        is_near(m->params, total, 1, "deepseek-v3: total = 61 MLA layers + 3 dense + 58 MoE");
        is_near(m->active_params, active, 1, "and active: 8 routed + 1 shared expert a layer");
        is_int(m->moe_layers, 58, "58 MoE layers (first_k_dense_replace 3)");
        is_int(m->attention, MDL_ATTN_MLA, "MLA");
    }
    sim_scenario_fini(&sc);
}

/* Every catalog model's given parameters agree with its dimensions within
 * the warning's 3% (published figures are rounded and some count a vision
 * encoder the text dimensions leave out). */
static void test_catalog_counts(void)
{
    int far = 0;
    for (int i = 0; i < mdl_catalog_model_count(support_catalog); i++) {
        const mdl_model *m = mdl_catalog_model_at(support_catalog, i);
        double err = mdl_model_params_error(m);
        if (err > 0.03) {
            far++;
            tap_diag("%s: %.1f%% off its dimensions", m->id, 100 * err);
        }
    }
    is_int(far, 0, "every catalog model's parameters agree with its dimensions within 3%%");
}

/* ---- memory per quantization ---- */

static void test_memory(void)
{
    /* narrowing weights: each leaves more room for the cache */
    static const char *const quants[] = {"none", "fp8", "mxfp4", "w4a16"};
    static const double bytes[] = {2, 1, 0.5 + 1.0 / 32, 0.5 + 2.0 / 128};
    int64_t last = 0;
    for (int i = 0; i < 4; i++) {
        char *cluster = util_xasprintf("\"gpu\": \"b200\", \"tensor_parallel\": 2, "
                                       "\"quantization\": \"%s\"", quants[i]);
        sim_scenario sc;
        int rc = load_hf("gpt-oss-120b", cluster, &sc, NULL);
        is_int(rc, 0, "gpt-oss-120b at %s on 2 x B200 loads", quants[i]);
        if (!rc) {
            const sim_pool *p = &sc.pools[0];
            is_near(p->cost.weight_bytes, p->cost.model.params * bytes[i], 1,
                    "%s: weights are params x %g bytes", quants[i], bytes[i]);
            double usable = p->cost.gpu.mem_bytes * p->gpu_memory_utilization;
            double block = 73728.0 * p->block_tokens / 2; /* 8 KV heads split over 2 GPUs */
            int64_t want = (int64_t)floor((usable - p->cost.weight_bytes / 2 -
                                           p->activation_reserve_bytes) / block);
            is_int(p->kv_blocks, want, "%s: the KV blocks memory leaves", quants[i]);
            if (i > 0) cmp_ok(p->kv_blocks, >, last, "more of them than with wider weights");
            last = p->kv_blocks;
        }
        sim_scenario_fini(&sc);
        free(cluster);
    }
}

/* A layer's KV is split over tensor-parallel GPUs only as far as there are
 * KV heads; MLA's one latent is on every GPU. */
static void test_kv_shards(void)
{
    sim_scenario a, b;
    int rc = load_hf("qwen3-30b-a3b", "\"tensor_parallel\": 8", &a, NULL);
    is_int(rc, 0, "Qwen3-30B-A3B (4 KV heads) loads at tensor_parallel 8");
    if (!rc) {
        const sim_pool *p = &a.pools[0];
        double usable = p->cost.gpu.mem_bytes * p->gpu_memory_utilization;
        double block = 98304.0 * p->block_tokens / 4; /* 4 shards, each twice */
        int64_t want = (int64_t)floor((usable - p->cost.weight_bytes / 8 -
                                       p->activation_reserve_bytes) / block);
        is_int(p->kv_blocks, want, "its KV heads replicated in pairs: a block is 1/4 per GPU");
        is_near(p->cost.kv_read_per_layer_token, 2048.0 * 2, 0,
                "and every GPU reads its head's KV: twice a layer's share");
    }
    sim_scenario_fini(&a);
    rc = load_hf("deepseek-v3", "\"tensor_parallel\": 8, "
                 "\"quantization\": \"fp8\", \"kv_cache_dtype\": \"fp8\"", &b, NULL);
    is_int(rc, 0, "DeepSeek-V3 fp8 with an fp8 cache on 8 x H200 loads");
    if (!rc) {
        const sim_pool *p = &b.pools[0];
        is_near(p->cost.kv_bytes_per_token, 35136, 0, "its fp8 latent: 35,136 bytes a token");
        double usable = p->cost.gpu.mem_bytes * p->gpu_memory_utilization;
        double block = 35136.0 * p->block_tokens; /* the whole latent on every GPU */
        int64_t want = (int64_t)floor((usable - p->cost.weight_bytes / 8 -
                                       p->activation_reserve_bytes) / block);
        is_int(p->kv_blocks, want, "the latent is replicated: a block is whole on each GPU");
    }
    sim_scenario_fini(&b);
}

/* ---- attention ---- */

static double step_flops(const mdl_cost *cm, const mdl_batch *b)
{
    mdl_step s;
    mdl_cost_step(cm, b, &s);
    return s.flops;
}

static double step_bytes(const mdl_cost *cm, const mdl_batch *b)
{
    mdl_step s;
    mdl_cost_step(cm, b, &s);
    return s.bytes;
}

/* MLA: a decoding token attends the latent (QK^T over 512 + 64, PV over
 * 512, per head); a prompt token full heads (192 and 128). */
static void test_mla_flops(void)
{
    sim_scenario sc;
    if (load_hf("deepseek-v3", "\"tensor_parallel\": 8, \"scheduler\": {\"kv_blocks\": 100}",
                &sc, NULL))
        return;
    const mdl_cost *cm = &sc.pools[0].cost;
    mdl_batch d1 = {.n_decode = 1, .decode_context = 1000}, d2 = d1;
    d2.decode_context = 2000;
    is_near(step_flops(cm, &d2) - step_flops(cm, &d1), 1000.0 * 61 * (2 * 128 * 576 + 2 * 128 * 512),
            1, "MLA decode: 61 x 278,528 FLOPs per key");
    is_near(step_bytes(cm, &d2) - step_bytes(cm, &d1), 1000.0 * 70272 * 8, 1,
            "and reads the whole latent on each of the 8 GPUs");
    mdl_chunk c1 = {100, 0}, c2 = {200, 0};
    mdl_batch p1 = {.n_prefill = 1, .prefill_tokens = 100, .prefill_pairs = 100 * 101 / 2.0,
                    .chunks = &c1};
    mdl_batch p2 = {.n_prefill = 1, .prefill_tokens = 200, .prefill_pairs = 200 * 201 / 2.0,
                    .chunks = &c2};
    double per_pair = 61.0 * (2 * 128 * 192 + 2 * 128 * 128);
    double expect = (2.0 * cm->layer_params * 100) + per_pair * (200 * 201 / 2.0 - 100 * 101 / 2.0);
    is_near(step_flops(cm, &p2) - step_flops(cm, &p1), expect, 1,
            "MLA prefill: 61 x 81,920 FLOPs per pair, on expanded heads");
    sim_scenario_fini(&sc);
}

/* Sliding windows: gpt-oss-120b's 18 windowed layers read at most 128
 * tokens of a context, its 18 full ones all of it. */
static void test_window_step(void)
{
    sim_scenario sc;
    if (load_hf("gpt-oss-120b", "\"tensor_parallel\": 2", &sc, NULL)) return;
    const mdl_cost *cm = &sc.pools[0].cost;
    double kv = 2.0 * 8 * 64 * 2; /* one layer, one token */
    mdl_batch a = {.n_decode = 1, .decode_context = 1000}, b = a;
    b.decode_context = 2000;
    is_near(step_bytes(cm, &b) - step_bytes(cm, &a), 1000 * kv * 18, 1e-3,
            "decode past the window: only the full layers read more");
    mdl_batch s = {.n_decode = 1, .decode_context = 100}, t = s;
    t.decode_context = 120;
    is_near(step_bytes(cm, &t) - step_bytes(cm, &s), 20 * kv * 36, 1e-3,
            "within the window every layer reads it all");
    /* a 256-token prompt: windowed pairs sum min(t, 128) = 8,256 + 16,384 */
    mdl_chunk c = {256, 0};
    mdl_batch p = {.n_prefill = 1, .prefill_tokens = 256, .prefill_pairs = 256 * 257 / 2.0,
                   .chunks = &c};
    mdl_batch full = p;
    full.chunks = NULL; /* aggregates only: the bound min(pairs, tokens x window) */
    double pair = 4.0 * 64 * 64;
    double attn = pair * (18 * (256 * 257 / 2.0) + 18 * 24640.0);
    double lin = 2.0 * (cm->layer_params * 256 + cm->head_params);
    is_near(step_flops(cm, &p), lin + attn, 1, "prefill: 18 layers of 32,896 pairs, 18 of 24,640");
    cmp_ok(step_flops(cm, &full), >=, step_flops(cm, &p), "the aggregate bound is never below");
    sim_scenario_fini(&sc);
}

/* A decode run across the window's knee costs what its iterations do one
 * by one. */
static void test_window_run(void)
{
    sim_scenario sc;
    if (load_hf("gpt-oss-120b", "\"tensor_parallel\": 2", &sc, NULL)) return;
    const mdl_cost *cm = &sc.pools[0].cost;
    const int32_t n = 4;
    const int64_t ctx0 = 400; /* 4 x 100; the knee is at 4 x 128: iteration 28 */
    mdl_run r;
    mdl_run_init(&r, cm, n, ctx0);
    is_int(r.knee, 28, "the knee: the first iteration with every window full");
    static const int64_t ks[] = {10, 28, 29, 100};
    for (int i = 0; i < 4; i++) {
        double t = 0, f = 0, by = 0;
        for (int64_t j = 0; j < ks[i]; j++) {
            mdl_batch b = {.n_decode = n, .decode_context = ctx0 + n * j};
            mdl_step s;
            mdl_cost_step(cm, &b, &s);
            t += s.time_s, f += s.flops, by += s.bytes;
        }
        mdl_step sum;
        mdl_run_cost(&r, ks[i], &sum);
        is_near(sum.time_s / t, 1, 1e-12, "%lld iterations: the run's time is their sum",
                (long long)ks[i]);
        is_near(sum.flops / f, 1, 1e-12, "... FLOPs");
        is_near(sum.bytes / by, 1, 1e-12, "... bytes");
        is_near(mdl_run_time(&r, ks[i]), sum.time_s, 1e-15, "and mdl_run_time agrees");
    }
    sim_scenario_fini(&sc);
}

/* ---- expert parallelism ---- */

/* The step time of a decode batch of 64 tokens under the pool's cost. */
static double decode_s(const mdl_cost *cm)
{
    mdl_batch b = {.n_decode = 64, .decode_context = 64 * 1000};
    mdl_step s;
    mdl_cost_step(cm, &b, &s);
    return s.time_s;
}

static void test_all_to_all(void)
{
    sim_scenario tp, ep, two;
    const char *base = "\"gpu\": \"h200\", \"tensor_parallel\": 8, \"quantization\": \"fp8\", "
                       "\"scheduler\": {\"kv_blocks\": 100}";
    char *with_ep = util_xasprintf("%s, \"expert_parallel\": 8", base);
    if (load_hf("deepseek-v3", base, &tp, NULL) || load_hf("deepseek-v3", with_ep, &ep, NULL)) {
        ok(0, "DeepSeek-V3 with and without expert parallelism loads");
        free(with_ep);
        return;
    }
    /* 64 tokens, hidden 7168 in bf16: an all-reduce moves 2 x 7/8 of
     * 917,504 bytes over 450 GB/s; a dispatch sends 8/8 tokens x 8 copies x
     * 14,336 bytes, 7/8 of it to peers on the node. */
    double act = 64.0 * 7168 * 2, bw = 450e9, lat = 1e-5;
    double allreduce = lat + 2.0 * 7 / 8 * act / bw;
    double a2a = 2 * (lat + (64.0 / 8 * 8 * 7168 * 2) * 7 / 8 / bw);
    is_near(decode_s(&ep.pools[0].cost) - decode_s(&tp.pools[0].cost), 58 * (a2a - allreduce),
            1e-12, "EP 8 on one node: 58 MoE layers trade an all-reduce for dispatch + combine");
    sim_scenario_fini(&ep);
    /* Two nodes of 8 (tensor_parallel 16): half the peers over the 50 GB/s
     * network, which is the slower. */
    char *nodes = util_xasprintf("\"gpu\": \"h100-sxm\", \"tensor_parallel\": 16, "
                                 "\"expert_parallel\": 16, \"quantization\": \"fp8\", "
                                 "\"scheduler\": {\"kv_blocks\": 100}");
    if (!load_hf("deepseek-v3", nodes, &two, NULL)) {
        const mdl_cost *cm = &two.pools[0].cost;
        mdl_cost flat = *cm;
        flat.ep.degree = 1; /* the same replica without expert parallelism */
        double far = 64.0 / 16 * 8 * 7168 * 2 * 8 / 16;
        double a2a16 = 2 * (lat + far / 50e9);
        double ar16 = lat + 2.0 * 15 / 16 * act / bw;
        is_near(decode_s(cm) - decode_s(&flat), 58 * (a2a16 - ar16), 1e-12,
                "EP 16 over two nodes: the network half paces the all-to-all");
    }
    sim_scenario_fini(&two);
    sim_scenario_fini(&tp);
    free(nodes);
    free(with_ep);
}

/* Measured counts: 16 experts over EP 4, the first GPU's four experts
 * with four times the others' tokens -- 16 of 28: a skew of 16/7. */
static void test_skew(void)
{
    sim_scenario a, b;
    const char *counts = "\"tensor_parallel\": 4, \"expert_parallel\": 4, \"expert_counts\": "
                         "[4,4,4,4, 1,1,1,1, 1,1,1,1, 1,1,1,1]";
    int rc = load_hf("llama-4-scout", counts, &a, NULL);
    is_int(rc, 0, "Llama-4 Scout with measured expert counts loads");
    if (!rc) is_near(a.pools[0].cost.ep.skew, 16.0 / 7, 1e-12, "their skew: 16/7");
    if (!rc) rc = load_hf("llama-4-scout", "\"tensor_parallel\": 4, \"expert_parallel\": 4", &b, NULL);
    else memset(&b, 0, sizeof b);
    if (!rc) {
        mdl_batch big = {.n_decode = 256, .decode_context = 256 * 500};
        mdl_step s, t;
        mdl_cost_step(&a.pools[0].cost, &big, &s);
        mdl_cost_step(&b.pools[0].cost, &big, &t);
        cmp_ok(s.time_s, >, t.time_s, "a skewed layer is slower than a balanced one");
        is_near(s.flops, t.flops, 0, "with the same work in all");
    }
    sim_scenario_fini(&a);
    sim_scenario_fini(&b);
}

/* ---- errors ---- */

static void refused(const char *name, const char *cluster, const char *want, const char *what)
{
    sim_scenario sc;
    char *errors = NULL;
    int rc = load_hf(name, cluster, &sc, &errors);
    ok(rc != 0, "%s: refused", what);
    if (!ok(errors && strstr(errors, want), "%s: the message says why", what))
        tap_diag("got: %s", errors ? errors : "(loaded)");
    free(errors);
    sim_scenario_fini(&sc);
}

static void test_errors(void)
{
    refused("llama-3.1-8b", "\"tensor_parallel\": 2, \"expert_parallel\": 2",
            "cluster.expert_parallel: llama-3.1-8b is a dense model", "EP on a dense model");
    refused("mixtral-8x7b", "\"tensor_parallel\": 2, \"expert_parallel\": 4",
            "cluster.expert_parallel: 4 does not divide tensor_parallel (2)",
            "EP beyond the tensor-parallel group");
    refused("mixtral-8x7b", "\"tensor_parallel\": 2, \"expert_parallel\": 2, "
            "\"expert_counts\": [1, 2]", "cluster.expert_counts: 2 counts for 8 experts",
            "expert counts of the wrong length");
    refused("mixtral-8x7b", "\"tensor_parallel\": 2, \"expert_skew\": 1.5",
            "cluster.expert_skew: applies only with expert_parallel above 1",
            "a skew without expert parallelism");
    /* a config without num_hidden_layers, and one of an unknown type */
    char *dir = util_xasprintf("%s/tests/hf_configs/llama-3.1-8b/config.json", root);
    cJSON *cfg = NULL;
    util_diag d;
    util_diag_init(&d);
    if (!util_json_read_file(dir, &cfg, &d)) {
        cJSON_DeleteItemFromObject(cfg, "num_hidden_layers");
        cJSON *out = NULL;
        ok(mdl_hf_config_model(cfg, "x/config.json", &out, &d) != 0,
           "a config without num_hidden_layers is refused");
        ok(d.count &&
               strstr(d.msgs[0], "x/config.json: num_hidden_layers: missing (a llama config"),
           "the missing field is named with the file");
        cJSON_ReplaceItemInObject(cfg, "model_type", cJSON_CreateString("mamba"));
        util_diag_clear(&d);
        ok(mdl_hf_config_model(cfg, "x/config.json", &out, &d) != 0,
           "a config of an unknown architecture is refused");
        ok(d.count && strstr(d.msgs[0], "x/config.json: model_type: unknown architecture 'mamba'"),
           "the unknown architecture is named");
        cJSON_Delete(out);
    }
    cJSON_Delete(cfg);
    util_diag_fini(&d);
    free(dir);
    sim_scenario sc;
    char *errors = NULL;
    char *json = scenario_json("{\"hf_config\": \"no/such/config.json\"}", "");
    ok(support_scenario(json, NULL, &sc, &errors) != 0,
       "a scenario with a missing config is refused");
    ok(errors &&
           strstr(errors, "cluster.model.hf_config: cannot read a model from 'no/such/config.json'"),
       "a missing config names the JSON path and the file");
    free(errors);
    free(json);
    sim_scenario_fini(&sc);
}

/* An inline model whose given parameters are off its dimensions loads with
 * a warning; one that agrees, without. */
static void test_warning(void)
{
    sim_scenario sc;
    char *model = util_xasprintf("{\"hf_config\": \"%s/tests/hf_configs/llama-3.1-8b\", "
                                 "\"params_b\": 9}", root);
    char *json = scenario_json(model, "");
    if (!support_scenario(json, NULL, &sc, NULL)) {
        is_int(sc.warnings.count, 1, "params_b 9 for Llama-3.1-8B's dimensions: a warning");
        if (sc.warnings.count) has_str(sc.warnings.msgs[0], "12% off", "saying by how much");
        is_near(sc.pools[0].cost.model.params, 9e9, 0, "and the given figure is used");
    }
    sim_scenario_fini(&sc);
    free(json);
    free(model);
}

/* The shipped example serves DeepSeek-V3 from its config, relative to the
 * example's own folder, and every request completes. */
static void test_example(void)
{
    char *path = util_xasprintf("%s/examples/deepseek-v3-ep.json", root);
    char *dir = util_xasprintf("%s/examples", root);
    cJSON *json = NULL;
    util_diag d;
    util_diag_init(&d);
    sim_scenario sc;
    int rc = util_json_read_file(path, &json, &d);
    if (!rc) rc = sim_scenario_load(json, support_catalog, dir, &sc, &d);
    else memset(&sc, 0, sizeof sc);
    is_int(rc, 0, "examples/deepseek-v3-ep.json loads, its config.json beside the tests");
    if (!rc) {
        support_rows rows = {0};
        is_int(support_run_rows(&sc, &rows, NULL), SIM_STATUS_COMPLETED, "and runs");
        size_t done = 0;
        for (size_t i = 0; i < rows.n; i++) done += !strcmp(rows.req[i].status, SIM_COMPLETED);
        is_int((int)done, 2000, "every request completes");
        support_rows_fini(&rows);
    }
    for (int i = 0; i < d.count; i++) tap_diag("%s", d.msgs[i]);
    sim_scenario_fini(&sc);
    util_diag_fini(&d);
    free(dir);
    free(path);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_arch SOURCE_ROOT\n");
        return 2;
    }
    root = argv[1];
    if (support_init()) return 1;
    test_configs();
    test_active();
    test_catalog_counts();
    test_memory();
    test_kv_shards();
    test_mla_flops();
    test_window_step();
    test_window_run();
    test_all_to_all();
    test_skew();
    test_errors();
    test_warning();
    test_example();
    support_fini();
    return tap_done();
}
