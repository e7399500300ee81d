/*
 * hf.c: a model from its Hugging Face config.json.
 *
 * The config of every common architecture names the same few dimensions in
 * slightly different words (ffn_dim or intermediate_size; num_local_experts,
 * num_experts or n_routed_experts) and says some things only by its
 * architecture (OPT's MLP has two matrices; Gemma 2 alternates windowed and
 * global layers).  The reader maps each known model_type to the model
 * record of mdl_model_fields, so that a config is one more way of writing an
 * inline model: the result is validated, defaulted and counted like one.
 * Only what the config says is read; a field the architecture needs and the
 * file lacks is an error naming it, never a guess.  docs/scenario.md
 * ("Models from config.json") lists the fields read for each type.
 */
#include "mdl.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

typedef struct reader {
    const cJSON *cfg;   /* the config, or its text_config */
    const char *origin; /* the file, for messages */
    const char *type;   /* its model_type */
    cJSON *out;         /* the model object being built */
    util_diag *d;
    int rc;
} reader;

static const cJSON *field(const reader *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    return cJSON_IsNull(v) ? NULL : v;
}

static bool has(const reader *r, const char *key)
{
    return cJSON_IsNumber(field(r, key));
}

/* A number the architecture needs: absent or not a number is an error. */
static double need(reader *r, const char *key)
{
    const cJSON *v = field(r, key);
    if (cJSON_IsNumber(v)) return v->valuedouble;
    r->rc = util_diag_add(r->d, "%s: %s: %s (a %s config gives it)", r->origin, key,
                          v ? "expected a number" : "missing", r->type);
    return 1;
}

static double opt(const reader *r, const char *key, double dflt)
{
    const cJSON *v = field(r, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* A count from the config as an int, clamped at a little over what the
 * model schema accepts (1,000 layers), so that a wild value can neither
 * overflow the conversion nor make a loop over layers run long: a value
 * past the limit is refused by validation whatever is derived from it. */
#define COUNT_MAX 1001

static int count(double v)
{
    if (!(v > 0)) return 0;
    return v > COUNT_MAX ? COUNT_MAX : (int)v;
}

/* key = v in the model, in place of what an architecture's common reader
 * put there (DeepSeek's heads). */
static void put(reader *r, const char *key, double v)
{
    if (cJSON_GetObjectItemCaseSensitive(r->out, key))
        cJSON_ReplaceItemInObjectCaseSensitive(r->out, key, cJSON_CreateNumber(v));
    else
        cJSON_AddNumberToObject(r->out, key, v);
}

/* The first of keys the config has, as `as`. */
static void put_first(reader *r, const char *as, const char *const *keys)
{
    for (const char *const *k = keys; *k; k++)
        if (has(r, *k)) {
            put(r, as, field(r, *k)->valuedouble);
            return;
        }
    put(r, as, need(r, keys[0]));
}

/* How many entries of layer_types are windowed ("sliding_attention",
 * "chunked_attention"); -1 when the config has no layer_types. */
static int windowed_layer_types(const reader *r)
{
    const cJSON *types = field(r, "layer_types"), *t;
    if (!cJSON_IsArray(types)) return -1;
    int n = 0;
    cJSON_ArrayForEach(t, types)
        n += cJSON_IsString(t) && (strstr(t->valuestring, "sliding") || strstr(t->valuestring, "chunk"));
    return n;
}

/* ---- per architecture ---- */

static void dims_common(reader *r)
{
    double layers = need(r, "num_hidden_layers"), hidden = need(r, "hidden_size");
    double heads = need(r, "num_attention_heads");
    put(r, "layers", layers);
    put(r, "hidden", hidden);
    put(r, "heads", heads);
    put(r, "kv_heads", opt(r, "num_key_value_heads", heads));
    put(r, "head_dim", opt(r, "head_dim", heads > 0 ? hidden / heads : 1));
    put(r, "vocab", need(r, "vocab_size"));
    put(r, "max_context", need(r, "max_position_embeddings"));
}

/* A sliding window on every layer, when the config has one (Mistral, Phi-3). */
static void window_all(reader *r)
{
    if (has(r, "sliding_window")) put(r, "sliding_window", field(r, "sliding_window")->valuedouble);
}

/* Qwen2/3: the window applies from max_window_layers on, and only with
 * use_sliding_window (off in every released model). */
static void window_qwen(reader *r)
{
    if (!cJSON_IsTrue(field(r, "use_sliding_window")) || !has(r, "sliding_window")) return;
    double layers = need(r, "num_hidden_layers");
    put(r, "sliding_window", field(r, "sliding_window")->valuedouble);
    put(r, "window_layers", layers - opt(r, "max_window_layers", 0));
}

/* Windowed layers listed in layer_types, else every `period`th layer is
 * global (Gemma 2: 2; Gemma 3: sliding_window_pattern, 6). */
static void window_pattern(reader *r, double period)
{
    if (!has(r, "sliding_window")) return;
    double layers = need(r, "num_hidden_layers");
    int typed = windowed_layer_types(r);
    put(r, "sliding_window", field(r, "sliding_window")->valuedouble);
    int global = period >= 1 ? count(layers / period) : 0;
    put(r, "window_layers", typed >= 0 ? typed : layers - global);
}

static void ffn_dense(reader *r)
{
    put(r, "ffn", need(r, "intermediate_size"));
}

static void arch_llama(reader *r)
{
    dims_common(r);
    ffn_dense(r);
    window_all(r); /* Mistral's */
}

static void arch_qwen(reader *r)
{
    dims_common(r);
    ffn_dense(r);
    window_qwen(r);
}

static void arch_mixtral(reader *r)
{
    arch_llama(r);
    put(r, "experts", need(r, "num_local_experts"));
    put(r, "experts_active", need(r, "num_experts_per_tok"));
}

/* Qwen2-MoE / Qwen3-MoE: every decoder_sparse_step-th layer is MoE unless
 * listed in mlp_only_layers; Qwen2-MoE adds one shared expert. */
static void arch_qwen_moe(reader *r)
{
    dims_common(r);
    window_qwen(r);
    put(r, "ffn", need(r, "intermediate_size"));
    put(r, "moe_ffn", need(r, "moe_intermediate_size"));
    put(r, "experts", need(r, "num_experts"));
    put(r, "experts_active", need(r, "num_experts_per_tok"));
    int layers = count(need(r, "num_hidden_layers")), step = count(opt(r, "decoder_sparse_step", 1));
    const cJSON *dense = field(r, "mlp_only_layers");
    int moe = 0;
    for (int i = 0; i < layers; i++) {
        bool listed = false;
        const cJSON *e;
        cJSON_ArrayForEach(e, dense) listed |= cJSON_IsNumber(e) && e->valuedouble == i;
        moe += !listed && step > 0 && (i + 1) % step == 0;
    }
    put(r, "moe_layers", moe);
    if (opt(r, "shared_expert_intermediate_size", 0) > 0) {
        put(r, "shared_experts", 1);
        put(r, "shared_ffn", field(r, "shared_expert_intermediate_size")->valuedouble);
    }
}

/* DeepSeek-V2/V3 (and Kimi-K2): MLA, first_k_dense_replace dense layers,
 * then MoE layers with n_shared_experts shared experts. */
static void arch_deepseek(reader *r)
{
    dims_common(r);
    double nope = need(r, "qk_nope_head_dim"), rope = need(r, "qk_rope_head_dim");
    put(r, "kv_heads", need(r, "num_attention_heads"));
    put(r, "head_dim", nope + rope);
    cJSON_AddStringToObject(r->out, "attention", "mla");
    put(r, "q_lora_rank", opt(r, "q_lora_rank", 0));
    put(r, "kv_lora_rank", need(r, "kv_lora_rank"));
    put(r, "qk_nope_head_dim", nope);
    put(r, "qk_rope_head_dim", rope);
    put(r, "v_head_dim", need(r, "v_head_dim"));
    ffn_dense(r);
    if (!has(r, "n_routed_experts")) return; /* a dense DeepSeek */
    put(r, "experts", need(r, "n_routed_experts"));
    put(r, "experts_active", need(r, "num_experts_per_tok"));
    put(r, "moe_ffn", need(r, "moe_intermediate_size"));
    int layers = count(need(r, "num_hidden_layers")), first = count(opt(r, "first_k_dense_replace", 0));
    int freq = count(opt(r, "moe_layer_freq", 1)), moe = 0;
    for (int i = first; i < layers; i++) moe += freq > 0 && i % freq == 0;
    put(r, "moe_layers", moe);
    put(r, "shared_experts", opt(r, "n_shared_experts", 0));
}

static void arch_gemma2(reader *r)
{
    dims_common(r);
    ffn_dense(r);
    window_pattern(r, 2);
}

static void arch_gemma3(reader *r)
{
    dims_common(r);
    ffn_dense(r);
    window_pattern(r, opt(r, "sliding_window_pattern", 6));
}

/* gpt-oss: every layer MoE, windowed layers in layer_types. */
static void arch_gpt_oss(reader *r)
{
    dims_common(r);
    ffn_dense(r);
    const char *const experts[] = {"num_local_experts", "num_experts", NULL};
    const char *const active[] = {"num_experts_per_tok", "experts_per_token", NULL};
    put_first(r, "experts", experts);
    put_first(r, "experts_active", active);
    window_pattern(r, 2);
}

/* Llama 4: MoE every interleave_moe_layer_step-th layer (the others dense
 * of intermediate_size_mlp), one shared expert, chunked attention on the
 * RoPE layers (no_rope_layers: 1 where RoPE is used), as a window. */
static void arch_llama4(reader *r)
{
    dims_common(r);
    put(r, "ffn", need(r, "intermediate_size_mlp"));
    put(r, "moe_ffn", need(r, "intermediate_size"));
    put(r, "experts", need(r, "num_local_experts"));
    put(r, "experts_active", need(r, "num_experts_per_tok"));
    put(r, "shared_experts", 1);
    int layers = count(need(r, "num_hidden_layers")), step = count(opt(r, "interleave_moe_layer_step", 1));
    put(r, "moe_layers", step > 0 ? layers / step : 0);
    if (!has(r, "attention_chunk_size")) return;
    const cJSON *rope = field(r, "no_rope_layers"), *e;
    int chunked = 0;
    if (cJSON_IsArray(rope) && cJSON_GetArraySize(rope) > 0) {
        cJSON_ArrayForEach(e, rope) chunked += cJSON_IsNumber(e) && e->valuedouble != 0;
    } else {
        int interval = count(opt(r, "nope_layer_interval", 4));
        for (int i = 0; i < layers; i++) chunked += interval <= 0 || (i + 1) % interval != 0;
    }
    put(r, "sliding_window", field(r, "attention_chunk_size")->valuedouble);
    put(r, "window_layers", chunked);
}

/* OPT: a two-matrix ReLU MLP of ffn_dim, multi-head attention. */
static void arch_opt(reader *r)
{
    dims_common(r);
    put(r, "ffn", need(r, "ffn_dim"));
    cJSON_AddBoolToObject(r->out, "gated_ffn", false);
}

typedef struct arch {
    const char *type;
    bool tied; /* tie_word_embeddings when the config does not say (the class's default) */
    void (*read)(reader *r);
} arch;

static const arch archs[] = {
    {"llama", false, arch_llama},       {"mistral", false, arch_llama},
    {"phi3", false, arch_llama},        {"mixtral", false, arch_mixtral},
    {"qwen2", false, arch_qwen},        {"qwen3", false, arch_qwen},
    {"qwen2_moe", false, arch_qwen_moe}, {"qwen3_moe", false, arch_qwen_moe},
    {"deepseek_v2", false, arch_deepseek}, {"deepseek_v3", false, arch_deepseek},
    {"kimi_k2", false, arch_deepseek},  {"gemma2", true, arch_gemma2},
    {"gemma3_text", true, arch_gemma3}, {"gemma3", true, arch_gemma3},
    {"gpt_oss", false, arch_gpt_oss},   {"llama4_text", false, arch_llama4},
    {"llama4", false, arch_llama4},     {"opt", true, arch_opt},
    {NULL, false, NULL},
};

static const arch *find_arch(const char *type)
{
    for (const arch *a = archs; a->type; a++)
        if (!strcmp(a->type, type)) return a;
    return NULL;
}

static int unknown_arch(const char *origin, const char *type, util_diag *d)
{
    const char *known[sizeof archs / sizeof archs[0]];
    int n = 0;
    for (const arch *a = archs; a->type; a++) known[n++] = a->type;
    known[n] = NULL;
    char *where = util_xasprintf("%s: model_type", origin);
    util_diag_unknown(d, where, "architecture", type, known);
    free(where);
    return util_diag_add(d, "%s: servesim reads the configs of the architectures above; give "
                            "another model inline (docs/scenario.md)", origin);
}

/* The dtype the weights were saved in: torch_dtype, or dtype in newer
 * configs; bf16 when neither says. */
static double dtype_bytes(const cJSON *cfg, const cJSON *top)
{
    static const char *const keys[] = {"torch_dtype", "dtype"};
    for (int i = 0; i < 4; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(i < 2 ? cfg : top, keys[i % 2]);
        if (!cJSON_IsString(v)) continue;
        if (!strcmp(v->valuestring, "float32")) return 4;
        return 2;
    }
    return 2;
}

/* The id: the config's folder name ("deepseek-v3" for
 * deepseek-v3/config.json), else the file's stem. */
static void put_id(cJSON *out, const char *origin)
{
    char *dir = util_dirname(origin);
    const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    char id[32];
    if (!strcmp(base, ".") || !*base) {
        const char *file = strrchr(origin, '/') ? strrchr(origin, '/') + 1 : origin;
        snprintf(id, sizeof id, "%.*s", (int)strcspn(file, "."), file);
    } else {
        snprintf(id, sizeof id, "%s", base);
    }
    cJSON_AddStringToObject(out, "id", id);
    free(dir);
}

int mdl_hf_config_model(const cJSON *config, const char *origin, cJSON **out, util_diag *d)
{
    *out = NULL;
    if (!cJSON_IsObject(config)) return util_diag_add(d, "%s: expected a JSON object", origin);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(config, "text_config");
    const cJSON *cfg = cJSON_IsObject(text) ? text : config;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    if (!cJSON_IsString(type)) type = cJSON_GetObjectItemCaseSensitive(config, "model_type");
    if (!cJSON_IsString(type))
        return util_diag_add(d, "%s: model_type: missing (not a Hugging Face model config?)",
                             origin);
    const arch *a = find_arch(type->valuestring);
    if (!a) return unknown_arch(origin, type->valuestring, d);
    reader r = {.cfg = cfg, .origin = origin, .type = a->type, .out = cJSON_CreateObject(), .d = d};
    put_id(r.out, origin);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(config, "_name_or_path");
    cJSON_AddStringToObject(r.out, "name", cJSON_IsString(name) ? name->valuestring : "");
    a->read(&r);
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(config, "tie_word_embeddings");
    if (!cJSON_IsBool(tie)) tie = field(&r, "tie_word_embeddings");
    cJSON_AddBoolToObject(r.out, "tied_embeddings", cJSON_IsBool(tie) ? cJSON_IsTrue(tie) : a->tied);
    put(&r, "bytes_per_param", dtype_bytes(cfg, config));
    const cJSON *quant = cJSON_GetObjectItemCaseSensitive(config, "quantization_config");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(quant, "quant_method");
    char *source = util_xasprintf("Hugging Face config.json, model_type %s%s%s%s", a->type,
                                  cJSON_IsString(method) ? " (its checkpoint is quantized: "
                                                           "quant_method " : "",
                                  cJSON_IsString(method) ? method->valuestring : "",
                                  cJSON_IsString(method) ? "; set cluster.quantization)" : "");
    cJSON_AddStringToObject(r.out, "source", source);
    free(source);
    if (r.rc) {
        cJSON_Delete(r.out);
        return r.rc;
    }
    *out = r.out;
    return UTIL_OK;
}

int mdl_hf_config_read(const char *path, cJSON **out, util_diag *d)
{
    struct stat st;
    char *f = (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) ? util_path_join(path, "config.json")
                                                            : util_xstrdup(path);
    cJSON *config = NULL;
    int rc = util_json_read_file(f, &config, d);
    if (!rc) rc = mdl_hf_config_model(config, f, out, d);
    cJSON_Delete(config);
    free(f);
    return rc;
}

/* The keys a model object must have; an object with all of them was
 * already expanded (a stored scenario) and is not read again. */
static bool expanded(const cJSON *model)
{
    static const char *const keys[] = {"layers", "hidden", "heads", "kv_heads", "head_dim",
                                       "ffn", "vocab", "max_context", "params_b", NULL};
    for (const char *const *k = keys; *k; k++)
        if (!cJSON_GetObjectItemCaseSensitive(model, *k)) return false;
    return true;
}

int mdl_hf_expand(cJSON *model, const char *path, const char *base_dir, util_diag *d)
{
    const cJSON *hf = cJSON_GetObjectItemCaseSensitive(model, "hf_config");
    if (!cJSON_IsObject(model) || !hf || expanded(model)) return UTIL_OK;
    if (!cJSON_IsString(hf)) return util_diag_add(d, "%s.hf_config: expected a string (a path)", path);
    char *where = util_path_join(base_dir, hf->valuestring);
    cJSON *derived = NULL;
    int rc = mdl_hf_config_read(where, &derived, d);
    if (rc) util_diag_add(d, "%s.hf_config: cannot read a model from '%s'", path, hf->valuestring);
    free(where);
    if (rc) return rc;
    cJSON *k = derived->child;
    while (k) { /* keys given beside hf_config override the config's */
        cJSON *next = k->next;
        if (!cJSON_GetObjectItemCaseSensitive(model, k->string))
            cJSON_AddItemToObject(model, k->string, cJSON_DetachItemViaPointer(derived, k));
        k = next;
    }
    cJSON_Delete(derived);
    return UTIL_OK;
}
