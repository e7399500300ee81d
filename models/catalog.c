/*
 * catalog.c: the GPU, model and engine catalog.  The JSON file is compiled into the
 * program (catalog_data.c is generated from catalog.json at build time), so a
 * copied binary, a test or a sweep worker never looks for a data file; the
 * same file is installed to share/servesim for people to read.  Entries are
 * validated with the same field tables that check inline objects in a
 * scenario.  Engine presets stay JSON, their figures each with a source:
 * sim/ applies one to a scenario before validating it.
 */
#include "mdl.h"

#include <stdlib.h>
#include <string.h>

extern const char mdl__catalog_json[]; /* catalog_data.c */

struct mdl_catalog {
    cJSON *root; /* owns the entries' JSON, kept for `servesim catalog --json` */
    mdl_gpu *gpus;
    const cJSON **gpu_json;
    int n_gpus;
    mdl_model *models;
    const cJSON **model_json;
    int n_models;
    const cJSON **engine_json; /* presets stay JSON: sim/ applies them to scenarios */
    int n_engines;
};

#define TERA 1e12
#define GIGA 1e9
#define GIB 1073741824.0

/* Decode's share of the dynamic power range where no figure was measured:
 * SplitwiseSim's H100 (idle 75 W, decode 380 W, prefill 700 W = TDP) gives
 * (380 - 75) / (700 - 75). */
#define DECODE_SHARE 0.488

/* Datasheet figures are range-checked per unit, wide enough for any real
 * part from an L4 or an RTX 4090 to a B200 and a few generations beyond, and
 * narrow enough that a figure in the wrong unit is caught: 864 for the
 * L40S's 0.864 TB/s, a price in cents.  The low ends stay open for the toy
 * devices of tests and lessons (a GPU of 1e-5 GiB), except where a zero
 * would make a time infinite (bandwidths).  docs/catalog.md lists them. */
const util_field mdl_gpu_fields[] = {
    {.key = "id", .type = UTIL_T_STRING, .def = "\"custom\"", .doc = "catalog id"},
    {.key = "name", .type = UTIL_T_STRING, .def = "\"\"", .doc = "full name"},
    {.key = "bf16_tflops", .type = UTIL_T_NUMBER, .unit = "TFLOP/s", .min = 0.1, .max = 1e5,
     .flags = UTIL_REQUIRED, .doc = "dense BF16 peak (no 2:4 sparsity)"},
    {.key = "fp8_tflops", .type = UTIL_T_NUMBER, .unit = "TFLOP/s", .min = 0.1, .max = 1e5,
     .doc = "dense FP8 peak (absent: the GPU has no FP8 tensor cores)"},
    {.key = "int8_tops", .type = UTIL_T_NUMBER, .unit = "TOP/s", .min = 0.1, .max = 1e5,
     .doc = "dense INT8 peak (absent: no INT8 tensor cores)"},
    {.key = "fp4_tflops", .type = UTIL_T_NUMBER, .unit = "TFLOP/s", .min = 0.1, .max = 1e5,
     .doc = "dense FP4 peak (absent: no FP4 tensor cores, as before Blackwell)"},
    {.key = "memory_gib", .type = UTIL_T_NUMBER, .unit = "GiB", .min = 0, .max = 16384,
     .flags = UTIL_REQUIRED | UTIL_MIN_EXCLUSIVE, .doc = "device memory"},
    {.key = "memory_bw_tbs", .type = UTIL_T_NUMBER, .unit = "TB/s", .min = 0.05, .max = 50,
     .flags = UTIL_REQUIRED, .doc = "peak memory bandwidth"},
    {.key = "link_gbs", .type = UTIL_T_NUMBER, .unit = "GB/s", .def = "0", .min = 0, .max = 1e4,
     .doc = "scale-up interconnect, both directions (0: none, tensor parallelism crosses PCIe)"},
    {.key = "pcie_gbs", .type = UTIL_T_NUMBER, .unit = "GB/s", .def = "32", .min = 1, .max = 1000,
     .doc = "host link, one direction"},
    {.key = "tdp_w", .type = UTIL_T_NUMBER, .unit = "W", .min = 10, .max = 1e4,
     .flags = UTIL_REQUIRED, .doc = "board power limit"},
    {.key = "idle_w", .type = UTIL_T_NUMBER, .unit = "W", .min = 0, .max = 1e4,
     .flags = UTIL_REQUIRED, .doc = "idle draw"},
    {.key = "prefill_w", .type = UTIL_T_NUMBER, .unit = "W", .min = 0, .max = 1e4,
     .doc = "draw while prefilling at the default mfu (default: tdp_w)"},
    {.key = "decode_w", .type = UTIL_T_NUMBER, .unit = "W", .min = 0, .max = 1e4,
     .doc = "draw while decoding at the default mbu (default: idle_w + 0.488 x (tdp_w - "
            "idle_w), SplitwiseSim's H100 ratio)"},
    {.key = "usd_per_hour", .type = UTIL_T_NUMBER, .unit = "USD/h", .min = 0, .max = 100,
     .flags = UTIL_REQUIRED, .doc = "price per GPU-hour"},
    {.key = "mfu", .type = UTIL_T_NUMBER, .def = "0.5", .min = 0, .max = 1,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "default achievable fraction of peak compute"},
    {.key = "mbu", .type = UTIL_T_NUMBER, .def = "0.75", .min = 0, .max = 1,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "default achievable fraction of peak bandwidth"},
    {.key = "iteration_overhead_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0.002", .min = 0,
     .max = 10, .doc = "default fixed GPU-side cost of one iteration (launches, sync)"},
    {.key = "source", .type = UTIL_T_STRING, .def = "\"\"", .doc = "where the figures come from"},
    {0},
};

const util_field mdl_model_fields[] = {
    {.key = "id", .type = UTIL_T_STRING, .def = "\"custom\"", .doc = "catalog id"},
    {.key = "name", .type = UTIL_T_STRING, .def = "\"\"", .doc = "full name"},
    {.key = "hf", .type = UTIL_T_STRING,
     .doc = "the Hugging Face repo (owner/name) that serves the model: the model argument of "
            "the `vllm serve` command servesim plan prints (default: none; a model from "
            "hf_config uses its folder's name)"},
    {.key = "layers", .type = UTIL_T_INTEGER, .min = 1, .max = 1000, .flags = UTIL_REQUIRED,
     .doc = "transformer layers"},
    {.key = "hidden", .type = UTIL_T_INTEGER, .min = 1, .max = 1e5, .flags = UTIL_REQUIRED,
     .doc = "hidden size"},
    {.key = "heads", .type = UTIL_T_INTEGER, .min = 1, .max = 1024, .flags = UTIL_REQUIRED,
     .doc = "attention (query) heads"},
    {.key = "kv_heads", .type = UTIL_T_INTEGER, .min = 1, .max = 1024, .flags = UTIL_REQUIRED,
     .doc = "key/value heads (grouped-query attention when fewer than heads)"},
    {.key = "head_dim", .type = UTIL_T_INTEGER, .min = 1, .max = 1024, .flags = UTIL_REQUIRED,
     .doc = "dimension of one head"},
    {.key = "ffn", .type = UTIL_T_INTEGER, .min = 1, .max = 1e6, .flags = UTIL_REQUIRED,
     .doc = "feed-forward (intermediate) size, per expert for MoE"},
    {.key = "vocab", .type = UTIL_T_INTEGER, .min = 1, .max = 1e7, .flags = UTIL_REQUIRED,
     .doc = "vocabulary size"},
    {.key = "max_context", .type = UTIL_T_INTEGER, .unit = "tokens", .min = 1, .max = 1e8,
     .flags = UTIL_REQUIRED, .doc = "longest prompt + output the model accepts"},
    {.key = "params_b", .type = UTIL_T_NUMBER, .unit = "1e9 params", .min = 0, .max = 1e4,
     .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "parameters in total (default: counted from the dimensions; given, it is checked "
            "against them)"},
    {.key = "active_params_b", .type = UTIL_T_NUMBER, .unit = "1e9 params", .min = 0, .max = 1e4,
     .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "parameters used per token, embedding and head included (MoE; default: counted, "
            "or params_b for a dense model)"},
    {.key = "experts", .type = UTIL_T_INTEGER, .def = "1", .min = 1, .max = 1e4,
     .doc = "routed experts per MoE layer (1: dense)"},
    {.key = "experts_active", .type = UTIL_T_INTEGER, .def = "1", .min = 1, .max = 1e4,
     .doc = "routed experts each token goes to"},
    {.key = "moe_ffn", .type = UTIL_T_INTEGER, .min = 1, .max = 1e6,
     .doc = "one routed expert's intermediate size (default: ffn)"},
    {.key = "moe_layers", .type = UTIL_T_INTEGER, .unit = "layers", .min = 0, .max = 1000,
     .doc = "layers whose FFN is MoE, the others dense of size ffn (default: every layer of an "
            "MoE model; DeepSeek-V3: 61 - first_k_dense_replace 3)"},
    {.key = "shared_experts", .type = UTIL_T_INTEGER, .def = "0", .min = 0, .max = 1024,
     .doc = "shared experts every token of an MoE layer also goes through"},
    {.key = "shared_ffn", .type = UTIL_T_INTEGER, .min = 1, .max = 1e6,
     .doc = "one shared expert's intermediate size (default: moe_ffn)"},
    {.key = "gated_ffn", .type = UTIL_T_BOOL, .def = "true",
     .doc = "gated FFN (SwiGLU, GeGLU: three matrices); false: two (OPT's ReLU MLP)"},
    {.key = "attention", .type = UTIL_T_STRING, .def = "\"gqa\"", .choices = mdl_attentions,
     .doc = "gqa (multi-head, grouped- or multi-query: K and V per KV head) or mla (DeepSeek's "
            "latent: kv_lora_rank + qk_rope_head_dim per token and layer)"},
    {.key = "q_lora_rank", .type = UTIL_T_INTEGER, .def = "0", .min = 0, .max = 1e5,
     .doc = "MLA: rank of the query compression (0: none)"},
    {.key = "kv_lora_rank", .type = UTIL_T_INTEGER, .min = 1, .max = 1e5,
     .doc = "MLA: rank of the KV latent the cache holds"},
    {.key = "qk_nope_head_dim", .type = UTIL_T_INTEGER, .min = 0, .max = 4096,
     .doc = "MLA: query-key width of a head without rotary position"},
    {.key = "qk_rope_head_dim", .type = UTIL_T_INTEGER, .min = 0, .max = 4096,
     .doc = "MLA: query-key width with rotary position (its key part is cached beside the "
            "latent)"},
    {.key = "v_head_dim", .type = UTIL_T_INTEGER, .min = 1, .max = 4096,
     .doc = "MLA: value width of a head"},
    {.key = "sliding_window", .type = UTIL_T_INTEGER, .unit = "tokens", .def = "0", .min = 0,
     .max = 1e8,
     .doc = "window_layers attend only the last this many tokens (Mistral, Gemma, gpt-oss; "
            "Llama-4's chunked attention as a window of its chunk); 0: none"},
    {.key = "window_layers", .type = UTIL_T_INTEGER, .unit = "layers", .min = 0, .max = 1000,
     .doc = "layers with the sliding window (default: all, when there is one)"},
    {.key = "hf_config", .type = UTIL_T_STRING,
     .doc = "a Hugging Face config.json (or a folder holding one), relative to the scenario's "
            "folder: the dimensions are read from it, and keys given beside it override it"},
    {.key = "tied_embeddings", .type = UTIL_T_BOOL, .def = "false",
     .doc = "the output projection (lm_head) shares the input embedding's weights"},
    {.key = "bytes_per_param", .type = UTIL_T_NUMBER, .unit = "bytes", .def = "2", .min = 0,
     .max = 8, .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "the model's dtype: activations, and weights and KV cache unless "
            "cluster.quantization or kv_cache_dtype say otherwise (2: BF16)"},
    {.key = "source", .type = UTIL_T_STRING, .def = "\"\"", .doc = "where the figures come from"},
    {0},
};

/* ---- engine presets ---- */

const util_field mdl_host_fields[] = {
    {.key = "frontend_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 60,
     .doc = "from a request reaching the server to the scheduler seeing it: HTTP, chat "
            "template, tokenisation, hand-off to the engine (default: the engine's)"},
    {.key = "frontend_s_per_token", .type = UTIL_T_NUMBER, .unit = "s/token", .min = 0, .max = 1,
     .doc = "added to frontend_s per prompt token: tokenisation (default: the engine's)"},
    {.key = "step_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 10,
     .doc = "host CPU time of every iteration (scheduling, input preparation, output "
            "handling): added to the GPU's, or overlapped with it under "
            "scheduler.async_scheduling (default: the engine's)"},
    {.key = "step_s_per_seq", .type = UTIL_T_NUMBER, .unit = "s/sequence", .min = 0, .max = 1,
     .doc = "added to step_s per sequence in the iteration (default: the engine's)"},
    {.key = "output_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 60,
     .doc = "from an iteration's end to its tokens reaching the client (output processing, "
            "detokenisation, streaming): the client's first token, last token and reply come "
            "this much later (default: the engine's)"},
    {0},
};

/* A preset's scheduler keys.  They are the scenario's cluster.scheduler keys
 * (sim/scenario.c), repeated here with their types because models/ cannot
 * see sim/: names such as a policy are checked when a scenario applies the
 * preset (tests/test_engines.c loads every preset through a scenario). */
static const util_field engine_scheduler_fields[] = {
    {.key = "policy", .type = UTIL_T_STRING},
    {.key = "max_batch", .type = UTIL_T_INTEGER, .min = 1, .max = 1e6},
    {.key = "max_batched_tokens", .type = UTIL_T_INTEGER, .min = 1, .max = 1e9},
    {.key = "block_tokens", .type = UTIL_T_INTEGER, .min = 1, .max = 4096},
    {.key = "gpu_memory_utilization", .type = UTIL_T_NUMBER, .min = 0, .max = 1,
     .flags = UTIL_MIN_EXCLUSIVE},
    {.key = "activation_reserve_gib", .type = UTIL_T_NUMBER, .min = 0, .max = 1e4},
    {.key = "preemption", .type = UTIL_T_STRING},
    {.key = "prefix_caching", .type = UTIL_T_BOOL},
    {.key = "async_scheduling", .type = UTIL_T_BOOL},
    {.key = "reserve_full_isl", .type = UTIL_T_BOOL},
    {0},
};

/* What every preset sets: a scenario's scheduler reads them all. */
static const char *const engine_required[] = {"policy", "max_batch", "max_batched_tokens",
                                              "block_tokens", "gpu_memory_utilization",
                                              "preemption", "prefix_caching",
                                              "async_scheduling", "reserve_full_isl", NULL};

static const util_field engine_tier_fields[] = {
    {.key = "min_memory_gib", .type = UTIL_T_NUMBER, .min = 0, .max = 16384,
     .flags = UTIL_REQUIRED, .doc = "the tier applies to GPUs of at least this memory"},
    {.key = "unless_name", .type = UTIL_T_STRING,
     .doc = "... but not to a GPU whose id or name holds this (lower case)"},
    {.key = "scheduler", .type = UTIL_T_OBJECT, .sub = engine_scheduler_fields,
     .flags = UTIL_REQUIRED, .doc = "what the tier changes"},
    {0},
};

/* Sources are strings keyed by the figure they back. */
static const util_field engine_source_fields[] = {
    {.key = "policy", .type = UTIL_T_STRING},
    {.key = "max_batch", .type = UTIL_T_STRING},
    {.key = "max_batched_tokens", .type = UTIL_T_STRING},
    {.key = "block_tokens", .type = UTIL_T_STRING},
    {.key = "gpu_memory_utilization", .type = UTIL_T_STRING},
    {.key = "activation_reserve_gib", .type = UTIL_T_STRING},
    {.key = "preemption", .type = UTIL_T_STRING},
    {.key = "prefix_caching", .type = UTIL_T_STRING},
    {.key = "async_scheduling", .type = UTIL_T_STRING},
    {.key = "reserve_full_isl", .type = UTIL_T_STRING},
    {.key = "tiers", .type = UTIL_T_STRING},
    {.key = "unchunked_covers_context", .type = UTIL_T_STRING},
    {.key = "frontend_s", .type = UTIL_T_STRING},
    {.key = "frontend_s_per_token", .type = UTIL_T_STRING},
    {.key = "step_s", .type = UTIL_T_STRING},
    {.key = "step_s_per_seq", .type = UTIL_T_STRING},
    {.key = "output_s", .type = UTIL_T_STRING},
    {.key = "weight_only", .type = UTIL_T_STRING},
    {0},
};

/* Quantizations an engine still serves on a GPU without their tensor
 * cores: the weights stay narrow, the kernels dequantize them and compute
 * in bf16 (W8A16, W4A16). */
static const util_field engine_weight_only_fields[] = {
    {.key = "fp8", .type = UTIL_T_BOOL, .def = "false",
     .doc = "fp8 weights dequantized to bf16 (vLLM's FP8 Marlin)"},
    {.key = "int8", .type = UTIL_T_BOOL, .def = "false", .doc = "int8 weights dequantized to bf16"},
    {.key = "mxfp4", .type = UTIL_T_BOOL, .def = "false",
     .doc = "mxfp4 weights dequantized to bf16 (Marlin or Triton MoE kernels)"},
    {0},
};

static const util_field engine_fields[] = {
    {.key = "id", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED,
     .doc = "what cluster.engine names"},
    {.key = "name", .type = UTIL_T_STRING, .def = "\"\"", .doc = "the engine, in words"},
    {.key = "version", .type = UTIL_T_STRING, .def = "\"\"",
     .doc = "the version its figures are of"},
    {.key = "scheduler", .type = UTIL_T_OBJECT, .sub = engine_scheduler_fields,
     .flags = UTIL_REQUIRED, .doc = "scheduler defaults"},
    {.key = "tiers", .type = UTIL_T_LIST, .sub = engine_tier_fields, .max = 16,
     .doc = "scheduler defaults that change with the GPU's memory, in increasing order"},
    {.key = "unchunked_covers_context", .type = UTIL_T_BOOL, .def = "false",
     .doc = "a policy that does not chunk prompts gets a max_batched_tokens of at least the "
            "model's context"},
    {.key = "host", .type = UTIL_T_OBJECT, .sub = mdl_host_fields, .flags = UTIL_REQUIRED,
     .doc = "host latencies"},
    {.key = "weight_only", .type = UTIL_T_OBJECT, .sub = engine_weight_only_fields,
     .doc = "quantizations served weight-only on GPUs that lack their tensor cores"},
    {.key = "source", .type = UTIL_T_OBJECT, .sub = engine_source_fields, .flags = UTIL_REQUIRED,
     .doc = "where each figure comes from"},
    {.key = "leaves_out", .type = UTIL_T_STRING, .def = "\"\"",
     .doc = "what the preset leaves out"},
    {0},
};

/* Every key of obj (a scheduler or host object) has a source. */
static int check_sourced(const cJSON *obj, const cJSON *source, const char *path, util_diag *d)
{
    int rc = UTIL_OK;
    for (const cJSON *k = obj ? obj->child : NULL; k; k = k->next) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(source, k->string);
        if (!cJSON_IsString(s) || !*s->valuestring)
            rc = util_diag_add(d, "%s.source.%s: missing (every figure has a source)", path,
                               k->string);
    }
    return rc;
}

/* Rules that span the keys of a preset. */
static int check_engine_object(const cJSON *e, const char *path, util_diag *d)
{
    const cJSON *sched = cJSON_GetObjectItemCaseSensitive(e, "scheduler");
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(e, "host");
    const cJSON *source = cJSON_GetObjectItemCaseSensitive(e, "source");
    int rc = UTIL_OK;
    for (const char *const *k = engine_required; *k; k++)
        if (!cJSON_GetObjectItemCaseSensitive(sched, *k))
            rc = util_diag_add(d, "%s.scheduler.%s: missing (a preset sets every scheduler "
                                  "default)", path, *k);
    for (const util_field *f = mdl_host_fields; f->key; f++)
        if (!cJSON_GetObjectItemCaseSensitive(host, f->key))
            rc = util_diag_add(d, "%s.host.%s: missing (a preset sets every host latency)", path,
                               f->key);
    if (check_sourced(sched, source, path, d)) rc = UTIL_EINPUT;
    if (check_sourced(host, source, path, d)) rc = UTIL_EINPUT;
    const cJSON *tiers = cJSON_GetObjectItemCaseSensitive(e, "tiers");
    if (cJSON_GetArraySize(tiers) > 0 && !cJSON_HasObjectItem(source, "tiers"))
        rc = util_diag_add(d, "%s.source.tiers: missing (every figure has a source)", path);
    const cJSON *wo = cJSON_GetObjectItemCaseSensitive(e, "weight_only"), *q;
    bool any = false;
    cJSON_ArrayForEach(q, wo) any |= cJSON_IsTrue(q);
    if (any && !cJSON_HasObjectItem(source, "weight_only"))
        rc = util_diag_add(d, "%s.source.weight_only: missing (every figure has a source)", path);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "unchunked_covers_context")) &&
        !cJSON_HasObjectItem(source, "unchunked_covers_context"))
        rc = util_diag_add(d, "%s.source.unchunked_covers_context: missing (every figure has a "
                              "source)", path);
    return rc;
}

static double num(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key)->valuedouble;
}

static void copy_str(char *dst, size_t n, const cJSON *o, const char *key)
{
    snprintf(dst, n, "%s", cJSON_GetObjectItemCaseSensitive(o, key)->valuestring);
}

void mdl_gpu_from_json(const cJSON *o, mdl_gpu *g)
{
    memset(g, 0, sizeof *g);
    copy_str(g->id, sizeof g->id, o, "id");
    copy_str(g->name, sizeof g->name, o, "name");
    g->flops = num(o, "bf16_tflops") * TERA;
    g->fp8_flops = util_json_number(o, "fp8_tflops", 0) * TERA;
    g->int8_ops = util_json_number(o, "int8_tops", 0) * TERA;
    g->fp4_flops = util_json_number(o, "fp4_tflops", 0) * TERA;
    g->mem_bytes = num(o, "memory_gib") * GIB;
    g->mem_bw = num(o, "memory_bw_tbs") * TERA;
    g->link_bw = num(o, "link_gbs") * GIGA;
    g->pcie_bw = num(o, "pcie_gbs") * GIGA;
    g->tdp_w = num(o, "tdp_w");
    g->idle_w = num(o, "idle_w");
    g->prefill_w = util_json_number(o, "prefill_w", g->tdp_w);
    g->decode_w = util_json_number(o, "decode_w", g->idle_w + DECODE_SHARE * (g->tdp_w - g->idle_w));
    g->usd_per_hour = num(o, "usd_per_hour");
    g->mfu = num(o, "mfu");
    g->mbu = num(o, "mbu");
    g->overhead_s = num(o, "iteration_overhead_s");
}

void mdl_model_from_json(const cJSON *o, mdl_model *m)
{
    memset(m, 0, sizeof *m);
    copy_str(m->id, sizeof m->id, o, "id");
    copy_str(m->name, sizeof m->name, o, "name");
    const cJSON *hf = cJSON_GetObjectItemCaseSensitive(o, "hf");
    snprintf(m->hf, sizeof m->hf, "%s", cJSON_IsString(hf) ? hf->valuestring : "");
    m->layers = (int)num(o, "layers");
    m->hidden = (int)num(o, "hidden");
    m->heads = (int)num(o, "heads");
    m->kv_heads = (int)num(o, "kv_heads");
    m->head_dim = (int)num(o, "head_dim");
    m->ffn = (int)num(o, "ffn");
    m->vocab = (int)num(o, "vocab");
    m->max_context = (int)num(o, "max_context");
    m->experts = (int)num(o, "experts");
    m->experts_active = (int)num(o, "experts_active");
    /* the architecture's defaults are in the object already (fill_architecture);
     * only the MLA widths of a non-MLA model and the counts are absent */
    m->moe_ffn = (int)num(o, "moe_ffn");
    m->moe_layers = (int)num(o, "moe_layers");
    m->shared_experts = (int)num(o, "shared_experts");
    m->shared_ffn = (int)num(o, "shared_ffn");
    m->gated_ffn = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "gated_ffn"));
    const cJSON *attn = cJSON_GetObjectItemCaseSensitive(o, "attention");
    m->attention = cJSON_IsString(attn) && !strcmp(attn->valuestring, "mla") ? MDL_ATTN_MLA
                                                                            : MDL_ATTN_GQA;
    m->q_lora_rank = (int)util_json_number(o, "q_lora_rank", 0);
    m->kv_lora_rank = (int)util_json_number(o, "kv_lora_rank", 0);
    m->qk_nope_head_dim = (int)util_json_number(o, "qk_nope_head_dim", 0);
    m->qk_rope_head_dim = (int)util_json_number(o, "qk_rope_head_dim", 0);
    m->v_head_dim = (int)util_json_number(o, "v_head_dim", 0);
    m->sliding_window = (int)num(o, "sliding_window");
    m->window_layers = (int)num(o, "window_layers");
    m->params = util_json_number(o, "params_b", 0) * GIGA;
    m->active_params = util_json_number(o, "active_params_b", 0) * GIGA;
    m->bytes_per_param = num(o, "bytes_per_param");
    m->weight_bytes_per_param = m->bytes_per_param; /* until a precision says otherwise */
    m->kv_bytes_per_elem = m->bytes_per_param;
    m->tied_embeddings = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "tied_embeddings"));
}

/* Rules that span fields of one record. */
static int check_gpu_object(cJSON *o, const char *path, util_diag *d)
{
    double tdp = num(o, "tdp_w"), idle = num(o, "idle_w");
    if (idle > tdp) return util_diag_add(d, "%s.idle_w: %g W is above tdp_w (%g W)", path, idle, tdp);
    static const char *const phases[] = {"prefill_w", "decode_w"};
    for (int i = 0; i < 2; i++) {
        double w = util_json_number(o, phases[i], idle);
        if (w < idle || w > tdp)
            return util_diag_add(d, "%s.%s: %g W is outside idle_w .. tdp_w (%g .. %g W)", path,
                                 phases[i], w, idle, tdp);
    }
    return UTIL_OK;
}

/* Sets key to v unless the object has it. */
static void default_number(cJSON *o, const char *key, double v)
{
    if (!cJSON_GetObjectItemCaseSensitive(o, key)) cJSON_AddNumberToObject(o, key, v);
}

/* MLA's widths come together: a latent attention without them has no size. */
static int check_mla(const cJSON *o, const char *path, util_diag *d)
{
    static const char *const keys[] = {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                       "v_head_dim"};
    int rc = UTIL_OK;
    for (int i = 0; i < 4; i++)
        if (!cJSON_GetObjectItemCaseSensitive(o, keys[i]))
            rc = util_diag_add(d, "%s.%s: missing (attention mla needs kv_lora_rank, "
                                  "qk_nope_head_dim, qk_rope_head_dim and v_head_dim)",
                               path, keys[i]);
    return rc;
}

/* The architecture's defaults, written into the object so that the stored
 * scenario shows what was used: the MoE layout, the window's layers, and
 * the parameters counted from the dimensions when none were given. */
static void fill_architecture(cJSON *o)
{
    bool moe = num(o, "experts") > 1;
    default_number(o, "moe_ffn", num(o, "ffn"));
    default_number(o, "moe_layers", moe ? num(o, "layers") : 0);
    default_number(o, "shared_ffn", num(o, "moe_ffn"));
    default_number(o, "window_layers", num(o, "sliding_window") > 0 ? num(o, "layers") : 0);
    bool given = cJSON_GetObjectItemCaseSensitive(o, "params_b") != NULL;
    mdl_model m;
    mdl_model_from_json(o, &m);
    mdl_params p;
    mdl_model_count_params(&m, &p);
    default_number(o, "params_b", p.total / GIGA);
    default_number(o, "active_params_b", given && !moe ? num(o, "params_b") : p.active / GIGA);
}

static int check_model_object(cJSON *o, const char *path, util_diag *d)
{
    int rc = UTIL_OK;
    const cJSON *hf = cJSON_GetObjectItemCaseSensitive(o, "hf");
    if (cJSON_IsString(hf) && strlen(hf->valuestring) >= MDL_HF_SIZE)
        rc = util_diag_add(d, "%s.hf: %zu characters, more than a Hugging Face repo id has "
                              "(at most %d)", path, strlen(hf->valuestring), MDL_HF_SIZE - 1);
    const cJSON *attn = cJSON_GetObjectItemCaseSensitive(o, "attention");
    if (cJSON_IsString(attn) && !strcmp(attn->valuestring, "mla") && check_mla(o, path, d))
        return UTIL_EINPUT;
    fill_architecture(o);
    if (num(o, "moe_layers") > num(o, "layers"))
        rc = util_diag_add(d, "%s.moe_layers: %g is more than layers (%g)", path,
                           num(o, "moe_layers"), num(o, "layers"));
    if (num(o, "experts") == 1 && num(o, "moe_layers") > 0)
        rc = util_diag_add(d, "%s.moe_layers: %g MoE layers, but experts is 1 (a dense model)",
                           path, num(o, "moe_layers"));
    if (num(o, "window_layers") > num(o, "layers"))
        rc = util_diag_add(d, "%s.window_layers: %g is more than layers (%g)", path,
                           num(o, "window_layers"), num(o, "layers"));
    if ((int)num(o, "heads") % (int)num(o, "kv_heads"))
        rc = util_diag_add(d, "%s.kv_heads: %g does not divide heads (%g)", path,
                           num(o, "kv_heads"), num(o, "heads"));
    if (num(o, "experts_active") > num(o, "experts"))
        rc = util_diag_add(d, "%s.experts_active: %g is more than experts (%g)", path,
                           num(o, "experts_active"), num(o, "experts"));
    if (num(o, "active_params_b") > num(o, "params_b"))
        rc = util_diag_add(d, "%s.active_params_b: %g is more than params_b (%g)", path,
                           num(o, "active_params_b"), num(o, "params_b"));
    if (num(o, "experts") > 1 && num(o, "active_params_b") == num(o, "params_b"))
        rc = util_diag_add(d, "%s.active_params_b: an MoE model uses fewer parameters per "
                              "token than params_b", path);
    return rc;
}

int mdl_check_gpu_id(cJSON *item, const char *path, void *ctx, util_diag *d)
{
    const mdl_catalog *c = ctx;
    if (cJSON_IsObject(item)) return check_gpu_object(item, path, d);
    if (mdl_catalog_find_gpu(c, item->valuestring)) return UTIL_OK;
    const char *ids[64];
    int n = 0;
    for (int i = 0; i < c->n_gpus && n < 63; i++) ids[n++] = c->gpus[i].id;
    ids[n] = NULL;
    return util_diag_unknown(d, path, "GPU", item->valuestring, ids);
}

int mdl_catalog_check_engine(const mdl_catalog *c, const char *id, const char *path, util_diag *d)
{
    if (mdl_catalog_find_engine(c, id)) return UTIL_OK;
    const char *ids[64];
    int n = 0;
    for (int i = 0; i < c->n_engines && n < 63; i++)
        ids[n++] = cJSON_GetObjectItemCaseSensitive(c->engine_json[i], "id")->valuestring;
    ids[n] = NULL;
    return util_diag_unknown(d, path, "engine", id, ids);
}

int mdl_check_engine_id(cJSON *item, const char *path, void *ctx, util_diag *d)
{
    return mdl_catalog_check_engine(ctx, item->valuestring, path, d);
}

int mdl_check_model_id(cJSON *item, const char *path, void *ctx, util_diag *d)
{
    const mdl_catalog *c = ctx;
    if (cJSON_IsObject(item)) return check_model_object(item, path, d);
    if (mdl_catalog_find_model(c, item->valuestring)) return UTIL_OK;
    const char *ids[64];
    int n = 0;
    for (int i = 0; i < c->n_models && n < 63; i++) ids[n++] = c->models[i].id;
    ids[n] = NULL;
    return util_diag_unknown(d, path, "model", item->valuestring, ids);
}

/* ---- loading ---- */

static int check_entry(const util_field *fields, cJSON *e, const char *path, util_diag *d)
{
    if (fields == mdl_gpu_fields) return check_gpu_object(e, path, d);
    if (fields == mdl_model_fields) return check_model_object(e, path, d);
    return check_engine_object(e, path, d);
}

/* The entries of root[key]; an optional list may be absent (a catalog of
 * GPUs and models alone has no engine presets). */
static int load_list(cJSON *root, const char *key, const util_field *fields, bool optional,
                     const char *origin, const cJSON ***json_out, int *n_out, util_diag *d)
{
    cJSON *list = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!list && optional) return UTIL_OK;
    if (!cJSON_IsArray(list)) return util_diag_add(d, "%s: %s: expected an array", origin, key);
    int n = cJSON_GetArraySize(list), i = 0, rc = UTIL_OK;
    const cJSON **items = util_xcalloc((size_t)n, sizeof *items);
    cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        char *path = util_xasprintf("%s: %s[%d]", origin, key, i);
        if (!cJSON_IsObject(e)) {
            rc = util_diag_add(d, "%s: expected an object", path);
        } else if (util_schema_apply(fields, e, path, NULL, d) == UTIL_OK) {
            if (check_entry(fields, e, path, d)) rc = UTIL_EINPUT;
        } else {
            rc = UTIL_EINPUT;
        }
        free(path);
        items[i++] = e;
    }
    *json_out = items;
    *n_out = n;
    return rc;
}

int mdl_catalog_load_json(const char *text, const char *origin, mdl_catalog **out, util_diag *d)
{
    mdl_catalog *c = util_xcalloc(1, sizeof *c);
    int rc = util_json_parse(text, origin, &c->root, d);
    if (rc) goto fail;
    rc = load_list(c->root, "gpus", mdl_gpu_fields, false, origin, &c->gpu_json, &c->n_gpus, d);
    if (load_list(c->root, "models", mdl_model_fields, false, origin, &c->model_json,
                  &c->n_models, d))
        rc = UTIL_EINPUT;
    if (load_list(c->root, "engines", engine_fields, true, origin, &c->engine_json,
                  &c->n_engines, d))
        rc = UTIL_EINPUT;
    if (rc) goto fail;
    c->gpus = util_xcalloc((size_t)c->n_gpus, sizeof *c->gpus);
    for (int i = 0; i < c->n_gpus; i++) mdl_gpu_from_json(c->gpu_json[i], &c->gpus[i]);
    c->models = util_xcalloc((size_t)c->n_models, sizeof *c->models);
    for (int i = 0; i < c->n_models; i++) mdl_model_from_json(c->model_json[i], &c->models[i]);
    *out = c;
    return UTIL_OK;
fail:
    mdl_catalog_destroy(c);
    return rc;
}

int mdl_catalog_load_default(mdl_catalog **out, util_diag *d)
{
    return mdl_catalog_load_json(mdl__catalog_json, "catalog.json", out, d);
}

void mdl_catalog_destroy(mdl_catalog *c)
{
    if (!c) return;
    cJSON_Delete(c->root);
    free(c->gpus);
    free(c->gpu_json);
    free(c->models);
    free(c->model_json);
    free(c->engine_json);
    free(c);
}

int mdl_catalog_gpu_count(const mdl_catalog *c)
{
    return c->n_gpus;
}

const mdl_gpu *mdl_catalog_gpu_at(const mdl_catalog *c, int i)
{
    return &c->gpus[i];
}

const cJSON *mdl_catalog_gpu_json(const mdl_catalog *c, int i)
{
    return c->gpu_json[i];
}

const mdl_gpu *mdl_catalog_find_gpu(const mdl_catalog *c, const char *id)
{
    for (int i = 0; i < c->n_gpus; i++)
        if (!strcmp(c->gpus[i].id, id)) return &c->gpus[i];
    return NULL;
}

int mdl_catalog_model_count(const mdl_catalog *c)
{
    return c->n_models;
}

const mdl_model *mdl_catalog_model_at(const mdl_catalog *c, int i)
{
    return &c->models[i];
}

const cJSON *mdl_catalog_model_json(const mdl_catalog *c, int i)
{
    return c->model_json[i];
}

const mdl_model *mdl_catalog_find_model(const mdl_catalog *c, const char *id)
{
    for (int i = 0; i < c->n_models; i++)
        if (!strcmp(c->models[i].id, id)) return &c->models[i];
    return NULL;
}

int mdl_catalog_engine_count(const mdl_catalog *c)
{
    return c->n_engines;
}

const cJSON *mdl_catalog_engine_json(const mdl_catalog *c, int i)
{
    return c->engine_json[i];
}

const cJSON *mdl_catalog_find_engine(const mdl_catalog *c, const char *id)
{
    for (int i = 0; i < c->n_engines; i++)
        if (!strcmp(cJSON_GetObjectItemCaseSensitive(c->engine_json[i], "id")->valuestring, id))
            return c->engine_json[i];
    return NULL;
}
