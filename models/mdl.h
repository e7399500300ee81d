/*
 * mdl: hardware, LLM architectures, and what one engine iteration costs.
 *
 * The catalog is JSON data (models/catalog.json, compiled into the program and
 * installed beside it) of GPUs, models and serving-engine presets with the
 * source of every figure.
 * mdl_gpu and mdl_model are plain records in SI units (FLOP/s, bytes, B/s, W,
 * s); the catalog file uses the units of datasheets (TFLOP/s, GiB, TB/s) and
 * the loader converts.
 *
 * A cost model turns one iteration -- these prompts being prefilled, these
 * sequences decoding one token each -- into seconds, and says how many FLOPs
 * and bytes it moved.  It knows nothing of queues or time: the engine hands
 * it an mdl_batch of aggregates (counts and sums, never per-token lists), so
 * costing an iteration of any batch size is O(1).  Every model is held to the
 * datasheet: no iteration is shorter than its FLOPs at peak compute or its
 * bytes at peak bandwidth.  The host's own time per iteration (an engine
 * preset's) is added on top, or overlapped with the GPU's.
 */
#ifndef MDL_H
#define MDL_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

typedef struct mdl_gpu {
    char id[32];
    char name[64];
    double flops;         /* dense BF16 FLOP/s */
    double fp8_flops, int8_ops, fp4_flops; /* dense FP8, INT8, FP4 peaks; 0: the GPU lacks it */
    double mem_bytes;     /* device memory, bytes */
    double mem_bw;        /* memory bandwidth, B/s */
    double link_bw;       /* scale-up interconnect (NVLink, Infinity Fabric, PCIe), B/s aggregate */
    double pcie_bw;       /* host link, B/s per direction */
    double tdp_w, idle_w; /* board power limit and idle draw, W */
    double prefill_w, decode_w; /* draw at the default mfu (prefill) and mbu (decode), W */
    double usd_per_hour;  /* default on-demand price per GPU-hour */
    double mfu, mbu;      /* default achievable fractions of peak compute and bandwidth */
    double overhead_s;    /* default fixed GPU-side cost of one iteration (launches, sync), s */
} mdl_gpu;

/* How a layer's attention keeps its keys and values: one K and one V per KV
 * head (multi-head, grouped- and multi-query attention), or one compressed
 * latent per token that every head expands (DeepSeek's multi-head latent
 * attention). */
typedef enum mdl_attention { MDL_ATTN_GQA, MDL_ATTN_MLA } mdl_attention;
extern const char *const mdl_attentions[];

/* Room for a Hugging Face repo id (owner/name) and its NUL; a longer one is
 * refused when the record is validated. */
#define MDL_HF_SIZE 200

typedef struct mdl_model {
    char id[32];
    char name[64];
    char hf[MDL_HF_SIZE];     /* the Hugging Face repo (owner/name) that serves it, the model
                               * argument of `vllm serve`; "" when the record names none */
    int layers, hidden, heads, kv_heads, head_dim, ffn, vocab;
    int max_context;          /* tokens */
    int experts, experts_active; /* 1, 1 for dense models */
    /* MoE: the routed experts' and the shared experts' intermediate sizes,
     * how many shared experts every token also goes through, and how many
     * layers are MoE (the rest, DeepSeek's first_k_dense_replace or
     * Llama-4's interleaving, have a dense FFN of size ffn). */
    int moe_ffn, moe_layers, shared_experts, shared_ffn;
    bool gated_ffn;           /* SwiGLU/GeGLU: three matrices per FFN; false: two (OPT) */
    mdl_attention attention;
    /* MLA: query and KV compression ranks and the head's widths */
    int q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    /* Sliding-window (or chunked) attention: window_layers of the layers
     * attend only the last sliding_window tokens.  0: none. */
    int sliding_window, window_layers;
    double params, active_params; /* parameters in total and used per token */
    double bytes_per_param;   /* the native dtype: activations, and weights and KV cache
                               * unless a precision says otherwise (2 for BF16/FP16) */
    double weight_bytes_per_param; /* as stored, scales included (mdl_precision_apply) */
    double kv_bytes_per_elem;      /* one K or V element in the cache */
    bool tied_embeddings;     /* lm_head is the input embedding matrix */
} mdl_model;

/* Derived sizes. */
/* Power drawn by `gpus` GPUs doing flops and bytes of work in `seconds`:
 * idle plus each phase's dynamic power (prefill_w at the GPU's default mfu,
 * decode_w at its default mbu) scaled by the achieved utilisation, capped at
 * tdp_w per GPU.  Watts, all GPUs together. */
double mdl_power_w(const mdl_gpu *g, int gpus, double flops, double bytes, double seconds);

double mdl_model_weight_bytes(const mdl_model *m);
/* One token's KV cache over every layer, at the model's kv_bytes_per_elem:
 * 2 x kv_heads x head_dim per layer, or MLA's kv_lora_rank +
 * qk_rope_head_dim.  A sliding-window layer keeps it too: servesim caches
 * every layer for the whole context, as vLLM without its hybrid KV-cache
 * manager does (docs/cost-models.md). */
double mdl_model_kv_bytes_per_token(const mdl_model *m);
/* The KV one layer keeps for one token, bytes. */
double mdl_model_kv_bytes_per_layer_token(const mdl_model *m);
/* GPUs that hold distinct shares of the KV cache when tp GPUs split the
 * layers: the KV heads are split while there are heads to split, and
 * replicated beyond (vLLM); MLA's one latent is on every GPU. */
int mdl_model_kv_shards(const mdl_model *m, int tp);

/* Parameters counted from the dimensions: in total, and used by one token
 * (its experts, the shared experts, attention, embedding and head). */
typedef struct mdl_params {
    double total, active;
    double embedding, attention, dense_ffn, experts, shared, router; /* the parts of total */
} mdl_params;
void mdl_model_count_params(const mdl_model *m, mdl_params *out);
/* The published (or given) totals against the count: the larger relative
 * difference of total and active, 0 when they agree. */
double mdl_model_params_error(const mdl_model *m);

/* ---- catalog ---- */

typedef struct mdl_catalog mdl_catalog;

/* The catalog compiled into the program. */
int mdl_catalog_load_default(mdl_catalog **out, util_diag *d);
/* A catalog from JSON text; origin names it in error messages. */
int mdl_catalog_load_json(const char *text, const char *origin, mdl_catalog **out, util_diag *d);
void mdl_catalog_destroy(mdl_catalog *c);

int mdl_catalog_gpu_count(const mdl_catalog *c);
const mdl_gpu *mdl_catalog_gpu_at(const mdl_catalog *c, int i);
const mdl_gpu *mdl_catalog_find_gpu(const mdl_catalog *c, const char *id);
int mdl_catalog_model_count(const mdl_catalog *c);
const mdl_model *mdl_catalog_model_at(const mdl_catalog *c, int i);
const mdl_model *mdl_catalog_find_model(const mdl_catalog *c, const char *id);
/* The catalog entry as JSON (with its sources), for `servesim catalog --json`. */
const cJSON *mdl_catalog_gpu_json(const mdl_catalog *c, int i);
const cJSON *mdl_catalog_model_json(const mdl_catalog *c, int i);

/* Schemas of one GPU and one model record (catalog entries and inline
 * scenario objects), and the records from validated JSON. */
extern const util_field mdl_gpu_fields[];
extern const util_field mdl_model_fields[];
void mdl_gpu_from_json(const cJSON *obj, mdl_gpu *out);
void mdl_model_from_json(const cJSON *obj, mdl_model *out);

/* Checks for the scenario schema: a string must name a catalog entry; ctx is
 * the mdl_catalog. */
int mdl_check_gpu_id(cJSON *item, const char *path, void *ctx, util_diag *d);
int mdl_check_model_id(cJSON *item, const char *path, void *ctx, util_diag *d);
int mdl_check_engine_id(cJSON *item, const char *path, void *ctx, util_diag *d);

/* ---- models from a Hugging Face config.json (hf.c) ---- */

/* The model object (mdl_model_fields keys, unvalidated) that a parsed
 * config.json describes, for the architectures servesim knows (Llama,
 * Mistral, Mixtral, Qwen2/2.5/3, Qwen2/3-MoE, DeepSeek-V2/V3, Gemma 2/3,
 * gpt-oss, Llama 4, Phi-3, OPT); a nested text_config is read in its
 * parent's place.  An unknown architecture or a missing field is an error
 * naming it and origin. */
int mdl_hf_config_model(const cJSON *config, const char *origin, cJSON **out, util_diag *d);
/* The same from a file, or the config.json in a folder. */
int mdl_hf_config_read(const char *path, cJSON **out, util_diag *d);
/* A scenario's model object with "hf_config" gains the keys the config
 * gives that it lacks (its own override the config's); path is its JSON
 * path, base_dir the scenario's folder.  Objects without hf_config, and
 * those already expanded (every dimension and params_b present: a stored
 * scenario), are left as they are. */
int mdl_hf_expand(cJSON *model, const char *path, const char *base_dir, util_diag *d);

/* ---- engine presets (the catalog's "engines") ---- */

/* An engine preset says how a serving engine runs the GPU kernels: its
 * scheduler's defaults (an object of scenario scheduler keys), tiers that
 * change some of them on GPUs of at least a given memory, and the host
 * latencies outside the kernels (an object of mdl_host_fields keys).  It is
 * JSON because sim/ applies it to a scenario before validation, so that a
 * preset's values are checked as the scenario's own and stored with the
 * run; every figure has its entry in the preset's "source".  The catalog
 * owns the JSON. */
int mdl_catalog_engine_count(const mdl_catalog *c);
const cJSON *mdl_catalog_engine_json(const mdl_catalog *c, int i);
const cJSON *mdl_catalog_find_engine(const mdl_catalog *c, const char *id);
/* UTIL_OK if id names a preset, else "PATH: unknown engine 'id' (did you
 * mean ...? known: ...)" added to d. */
int mdl_catalog_check_engine(const mdl_catalog *c, const char *id, const char *path, util_diag *d);

/* `cluster.host` (and a preset's "host"): what the host adds to the GPU
 * kernels' time -- before the scheduler sees a request, on every iteration,
 * and before a token reaches the client.  No defaults: the engine preset
 * gives them. */
extern const util_field mdl_host_fields[];

/* ---- cost models ---- */

/* One prefill chunk: `tokens` prompt tokens of one sequence computed in this
 * iteration, after `cached` tokens of it already in the KV cache (0 for a
 * whole prompt; earlier chunks, or generated tokens being recomputed). */
typedef struct mdl_chunk {
    int64_t tokens;
    int64_t cached;
} mdl_chunk;

/* One iteration, as aggregates.  A prefill chunk of c tokens after p tokens
 * already cached has c*(p + (c+1)/2) causal query-key pairs; a whole prompt of
 * L tokens has L*(L+1)/2.  A decoding sequence of context n attends n keys.
 * The aggregates are what the roofline, linear and polynomial models need;
 * the measured-table model also reads the chunks one by one (an iteration
 * holds few prefill chunks, so this stays per event, not per token). */
typedef struct mdl_batch {
    int32_t n_prefill;       /* sequences with prompt tokens in this iteration */
    int64_t prefill_tokens;  /* sum of their prompt tokens */
    double prefill_sq;       /* sum over chunks of c (c + 2p): a whole prompt's squared length,
                              * and for a chunk after p cached tokens the square that has
                              * its attention pairs (2 x pairs - c) */
    double prefill_pairs;    /* sum of causal attention pairs of those tokens */
    int64_t prefill_context; /* sum of the chunks' cached tokens, whose KV their attention reads */
    const mdl_chunk *chunks; /* the n_prefill chunks (NULL when n_prefill is 0) */
    int32_t n_decode;        /* sequences producing one token each */
    int64_t decode_context;  /* sum of their contexts, tokens (each including the new token) */
    int32_t decode_width;    /* positions each decoding sequence computes: 1 + the drafts it
                              * verifies under speculative decoding (0 or 1: one) */
} mdl_batch;

/* What one iteration took. */
typedef struct mdl_step {
    double time_s;    /* duration, including fixed overhead and the host's time */
    double gpu_s;     /* of it, the GPU's work alone (the host's overlapped or added) */
    double prefill_s; /* the part of time_s spent on prefill work */
    double decode_s;  /* the part spent on decode work (prefill_s + decode_s == time_s) */
    double flops;     /* FLOPs performed */
    double bytes;     /* bytes moved to and from device memory */
    int32_t out_of_range; /* table model: iterations (of those summed) looked up outside the
                           * measured range, where the nearest measured value was used */
} mdl_step;

/* Expert parallelism: the routed experts of every MoE layer split over
 * `degree` GPUs of a replica's tensor-parallel group (1: every expert
 * split by tensor parallelism instead).  Each MoE layer then dispatches
 * every token's hidden state to the GPUs of its experts and combines the
 * results (two all-to-alls) in place of the FFN's all-reduce; the busiest
 * GPU has `skew` times the mean load and paces the layer.  GPUs of one
 * node talk over the GPU's link, the others over `network_bw` each; an
 * all-to-all has the fixed latency of an all-reduce
 * (mdl_cost.allreduce_latency_s). */
typedef struct mdl_ep {
    int degree;
    double skew;          /* >= 1 */
    int gpus_per_node;
    double network_bw;    /* B/s per GPU, each direction */
} mdl_ep;

typedef enum mdl_cost_kind {
    MDL_COST_ROOFLINE,
    MDL_COST_LINEAR,
    MDL_COST_POLYNOMIAL,
    MDL_COST_TABLE,
} mdl_cost_kind;

typedef struct mdl_table mdl_table; /* measured per-layer latencies (table.c) */

typedef struct mdl_cost {
    mdl_cost_kind kind;
    mdl_gpu gpu;     /* its flops: the peak of the dtype the model computes in */
    mdl_model model; /* its weight and KV widths: the precision it is served at */
    /* roofline; attn_efficiency: the share of mbu that attention's KV reads
     * reach (time only: the bytes stay physical; 1 for every other kind) */
    double mfu, mbu, overhead_s, attn_efficiency;
    /* linear */
    double iteration_s, prefill_s_per_token, decode_step_s, decode_s_per_seq;
    /* polynomial (DistServe's fit of vLLM), seconds */
    double poly_prefill[3], poly_decode[3], poly_decode_large[3], poly_overhead[2];
    int poly_large_from; /* batch size from which poly_decode_large applies; 0: never */
    /* table: owned, freed by mdl_cost_fini */
    mdl_table *table;
    /* parallelism of the replica this model costs: tensor x pipeline GPUs,
     * and the experts sharded over ep of the tp GPUs (mdl_cost_set_parallel) */
    int tp, pp;
    mdl_ep ep;
    /* The host's time per iteration (scheduling, input preparation, output
     * handling): host_step_s + host_step_s_per_seq x sequences in it.  A
     * synchronous engine adds it to the GPU's time; with host_overlap (an
     * asynchronous scheduler preparing the next iteration while the GPU runs
     * this one) the longer of the two paces the iteration.  Set by the
     * scenario after mdl_cost_init; 0 adds nothing. */
    double host_step_s, host_step_s_per_seq;
    bool host_overlap;
    double allreduce_latency_s; /* per all-reduce, tensor parallelism */
    /* derived once so that a step is a handful of multiplications */
    double weight_bytes, kv_bytes_per_token;
    /* Attention: FLOPs of one causal query-key pair in one layer, for a
     * prompt token and for a decoding one (they differ for MLA, whose
     * decode attends the latent directly and whose prefill expands it to
     * full heads), and the KV bytes one token has in one layer as every GPU
     * reads them (replicated beyond the KV heads, mdl_model_kv_shards).
     * full_layers attend the whole context, window_layers its last window. */
    double attn_prefill_pair, attn_decode_pair, kv_read_per_layer_token;
    int full_layers, window_layers;
    int64_t window;
    double head_params;   /* the output projection, applied once per sequence per iteration */
    double layer_params;  /* what every token goes through: active params less the
                           * embedding table (looked up, not multiplied) and the head */
    double shared_params, expert_params; /* MoE split of the weights; expert_params is one
                                          * routed expert over all MoE layers */
} mdl_cost;

/* Sets the replica's parallelism (after mdl_cost_init and
 * mdl_precision_apply) and what follows from it. */
void mdl_cost_set_parallel(mdl_cost *cm, int tp, int pp, const mdl_ep *ep);

/* ---- precision (precision.c) ---- */

/* `quantization` and `kv_cache_dtype`, as vLLM spells them: the choices, in
 * the order of the enum. */
typedef enum mdl_quant { MDL_Q_NONE, MDL_Q_FP8, MDL_Q_INT8, MDL_Q_W4A16, MDL_Q_MXFP4 } mdl_quant;
typedef enum mdl_kv_dtype { MDL_KV_AUTO, MDL_KV_BF16, MDL_KV_FP16, MDL_KV_FP8 } mdl_kv_dtype;
extern const char *const mdl_quantizations[];
extern const char *const mdl_kv_dtypes[];

/* Bytes one weight takes under q, its scales included; `native` is the
 * model's own dtype width (for MDL_Q_NONE). */
double mdl_quant_bytes(mdl_quant q, double native);

/* How a pool serves its model: the quantization, the KV-cache dtype, and
 * whether its engine (named, for messages) serves q weight-only where the
 * GPU lacks q's tensor cores (the preset's weight_only: dequantized to bf16
 * in the kernels, as vLLM's FP8 Marlin on Ampere). */
typedef struct mdl_precision {
    mdl_quant quant;
    mdl_kv_dtype kv;
    const char *engine;
    bool weight_only;
} mdl_precision;

/* Sets a cost model (after mdl_cost_init) to store its weights and KV cache
 * and to compute as pr says: the model's weight and KV widths, and the peak
 * its FLOPs run at (cm->gpu.flops becomes the dense peak of the quantization's
 * compute dtype, or stays bf16's for weight-only serving, so MFU is measured
 * against it).  A dtype the GPU lacks and the engine does not serve
 * weight-only is an error naming path (the pool's JSON path), the dtype,
 * the GPU and the engine. */
int mdl_precision_apply(mdl_cost *cm, const mdl_precision *pr, const char *path, util_diag *d);

/* The weight-only form q is served in on g when g lacks q's tensor cores
 * (an engine's weight_only: vLLM V1's FP8 Marlin on Ampere, mxfp4 through
 * Marlin or Triton on Hopper): "W8A16" for fp8 and int8, "W4A16" for mxfp4;
 * NULL when g computes in q (bf16 and w4a16 included, weight-only by name).
 * mdl_weight_only_words gives a form as every text says it, "weight-only
 * (W8A16)" -- the catalog's and the report's one source -- or NULL for
 * NULL or a form it does not know. */
const char *mdl_weight_only_form(mdl_quant q, const mdl_gpu *g);
const char *mdl_weight_only_words(const char *form);

/* `cluster.cost_model`: a union tagged by "kind". */
extern const util_union mdl_cost_schema;

/* Builds a cost model from a validated cost_model object.  Defaults that come
 * from the GPU (mfu, mbu, iteration_overhead_s) are written into obj, so the
 * stored scenario shows the numbers the run used.  Relative file names in obj
 * (the table model's) are taken relative to base_dir (NULL: the current
 * directory). */
int mdl_cost_init(mdl_cost *cm, cJSON *obj, const mdl_gpu *gpu, const mdl_model *model,
                  const char *path, const char *base_dir, util_diag *d);
/* Frees what mdl_cost_init loaded (the table model's data). */
void mdl_cost_fini(mdl_cost *cm);
void mdl_cost_step(const mdl_cost *cm, const mdl_batch *b, mdl_step *out);

/* A speculative drafter's one forward pass, as a roofline over a one-layer
 * model shaped like the target's (EAGLE's and EAGLE-3's decoder layer, a
 * multi-token-prediction module's): `moe` keeps the target's MoE FFN
 * (MTP), otherwise the layer is dense; `vocab` is the head's vocabulary
 * (EAGLE-3's draft vocabulary, else the target's) and `fc_inputs` the
 * hidden states its input projection fuses (2: EAGLE, MTP; 3: EAGLE-3).
 * *weight_bytes: what it adds to the target's weights (its layer and
 * projection; its own head when its vocabulary is its own), all GPUs. */
void mdl_cost_draft_head(const mdl_cost *target, bool moe, int vocab, int fc_inputs,
                         mdl_cost *out, double *weight_bytes);

/* A draft model's forward pass (speculative decoding's method draft): the
 * whole model, as a roofline on the target's GPU and efficiencies, split
 * over tp of its GPUs (vLLM's draft_tensor_parallel_size: 1, or the
 * target's group), without the iteration overhead and host time the
 * target's step already pays.  Its widths are the draft model's own: the
 * caller applies the pool's precision (mdl_precision_apply) after. */
void mdl_cost_draft_model(const mdl_cost *target, const mdl_model *draft, int tp, mdl_cost *out);

/* k consecutive decode-only iterations of n sequences, the first with
 * context sum ctx0 and each next one with n more (every sequence grew by a
 * token): their total time, FLOPs and bytes, in O(1) whatever k is.  Each
 * iteration's time is the same as mdl_cost_step would give it, the host's
 * time per iteration included (k times it, or, overlapped, a constant that
 * the maximum takes in); the sum is closed-form because that time is a
 * maximum of a few linear functions of the iteration's index.  This is
 * what lets the engine run a replica ahead to its next finishing sequence
 * in one event. */
void mdl_cost_decode_run(const mdl_cost *cm, int32_t n, int64_t ctx0, int64_t k, mdl_step *sum);

/* The same, prepared once for a run whose length is not known yet (the
 * engine asks for many k while it looks for where to cut a run short). */
typedef struct mdl_line {
    double a, b; /* a + b j, for iteration j of a run */
} mdl_line;

/* From iteration `from` on (until the next piece), this line is the largest. */
typedef struct mdl_piece {
    int64_t from;
    mdl_line line;
} mdl_piece;

/* A stretch of a run over which FLOPs and bytes grow linearly: iteration j
 * of it has context sum ctx0 + n j. */
typedef struct mdl_run_part {
    int64_t ctx0;
    double f0, f1, b0, b1; /* FLOPs and bytes of its iteration j: f0 + f1 j, b0 + b1 j */
    mdl_line lines[4];     /* its time is the largest of these, plus the run's fixed */
    mdl_piece piece[4];    /* ... which, along j, is these pieces */
    int n_lines, pieces;
} mdl_run_part;

/* A run is one part, or two where a sliding window fills up in it: until
 * the knee the windowed layers read every context, from it on a window's
 * worth each (sum min(ctx, n x window), mdl_cost.window). */
typedef struct mdl_run {
    const mdl_cost *cm;
    int32_t n;
    int64_t ctx0;
    int64_t knee;          /* the first iteration of part[1]; INT64_MAX: none */
    mdl_run_part part[2];
    double fixed;
    double host;           /* the host's time per iteration (mdl_cost.host_step_s ...) */
} mdl_run;

void mdl_run_init(mdl_run *r, const mdl_cost *cm, int32_t n, int64_t ctx0);
/* Seconds of the run's first k iterations. */
double mdl_run_time(const mdl_run *r, int64_t k);
/* Time, FLOPs and bytes of the run's first k iterations. */
void mdl_run_cost(const mdl_run *r, int64_t k, mdl_step *sum);

/* ---- calibration profiles (profile.c) ---- */

/* A calibration profile (PROFILE.json, written by `servesim calibrate`)
 * holds physical coefficients fitted on measured runs of one catalog GPU
 * with one engine preset.  Each coefficient stands for one key of a pool:
 * X(enum name, profile name, the pool's object, its key), in the order of
 * mdl_coef.  The cost_model ones apply to the roofline only. */
#define MDL_COEFS(X)                                                                           \
    X(MFU, "mfu", "cost_model", "mfu")                                                         \
    X(MBU, "mbu", "cost_model", "mbu")                                                         \
    X(ATTN_EFFICIENCY, "attn_efficiency", "cost_model", "attn_efficiency")                     \
    X(OVERHEAD_S, "overhead_s", "cost_model", "iteration_overhead_s")                          \
    X(STEP_S, "step_s", "host", "step_s")                                                      \
    X(STEP_S_PER_SEQ, "step_s_per_seq", "host", "step_s_per_seq")                              \
    X(OUTPUT_S, "output_s", "host", "output_s")                                                \
    X(FRONTEND_S, "frontend_s", "host", "frontend_s")                                          \
    X(FRONTEND_S_PER_TOKEN, "frontend_s_per_token", "host", "frontend_s_per_token")

#define MDL_COEF_ENUM(id, name, section, key) MDL_COEF_##id,
typedef enum mdl_coef { MDL_COEFS(MDL_COEF_ENUM) MDL_N_COEFS } mdl_coef;
#undef MDL_COEF_ENUM

typedef struct mdl_coef_info {
    const char *name;    /* in the profile's "coefficients" */
    const char *section; /* the pool's object: "cost_model" or "host" */
    const char *key;     /* the key of it that the coefficient sets */
} mdl_coef_info;
extern const mdl_coef_info mdl_coefs[MDL_N_COEFS];
/* The coefficient a profile names so, or -1. */
int mdl_coef_of(const char *name);

/* One fitted coefficient; err, lo and hi are NAN where the profile gives
 * none. */
typedef struct mdl_fitted {
    bool set;
    double value, err, lo, hi;
} mdl_fitted;

typedef struct mdl_profile {
    char gpu[32], engine[32]; /* catalog ids, checked */
    mdl_fitted coef[MDL_N_COEFS];
    int fitted_runs;          /* entries of fitted_on */
    cJSON *json;              /* the file as read (fitted_on, the errors, folds); owned */
} mdl_profile;

/* Reads and checks the profile at path: its version, a catalog GPU and
 * engine, known coefficients each within its key's range and its own
 * [lo, hi], fitted_on a list of objects; what else it says of its fit is
 * kept as read.  Every error found is added, each as "PATH: JSON.PATH: ...". */
int mdl_profile_read(const char *path, const mdl_catalog *cat, mdl_profile *out, util_diag *d);
void mdl_profile_fini(mdl_profile *p);
/* What coefficient c replaces where a scenario uses the profile: the GPU's
 * catalog mfu, mbu or iteration_overhead_s, 1 for attn_efficiency, the
 * engine preset's host value. */
double mdl_profile_default(const mdl_profile *p, const mdl_catalog *cat, mdl_coef c);

/* ---- memory (memory.c) ---- */

/* What vLLM's profiling run would set aside per GPU for activations and the
 * runtime: one layer's activations for max_batched_tokens (hidden state plus
 * the gated MLP's intermediate, split by tensor parallelism, twice for input
 * and output), FP32 logits for max_batch sequences, and 0.5 GiB for the CUDA
 * context, graphs and libraries.  An estimate: scenarios that know the real
 * figure set it, or set the KV block count directly. */
double mdl_activation_reserve_bytes(const mdl_model *m, int tp, int64_t max_batched_tokens,
                                    int max_batch);

/* KV-cache capacity in blocks of block_tokens of a replica of `gpus` GPUs
 * sharing the model (tensor x pipeline parallel): each GPU holds its share
 * of the weights, sets aside reserve_bytes, and gives the rest of
 * mem_util x its memory to the cache; a layer's KV is split over the
 * tensor-parallel GPUs only as far as mdl_model_kv_shards allows.  What sits
 * beside the model (a speculative drafter: its weights, and the KV its
 * layers add to every token's block; NULL: nothing) counts with it.  Fails,
 * naming path and the shortfall in GB per GPU, when the weights leave no
 * room for a single block. */
typedef struct mdl_beside {
    double weight_bytes, kv_bytes_per_token; /* all GPUs together */
} mdl_beside;
int mdl_kv_capacity_blocks(const mdl_gpu *gpu, const mdl_model *m, int tp, int pp, double mem_util,
                           double reserve_bytes, int block_tokens, const mdl_beside *beside,
                           const char *path, int64_t *blocks, util_diag *d);

/* ---- LoRA adapters (lora.c) ---- */

/* An adapter's bytes a unit of its rank: (in + out) of each adapted matrix
 * (q, k, v, o, gate, up, down: vLLM's Llama modules) x layers x the
 * model's dtype, over all GPUs. */
double mdl_lora_bytes_per_rank(const mdl_model *m);
/* The LoRA kernels for `tokens` tokens of requests with adapters, of
 * `adapters` distinct adapters, computed at max_rank: FLOPs 2 x tokens x
 * max_rank x (in + out) x layers; bytes each adapter's A and B at
 * max_rank, each token's input read and output read and written, and the
 * fp32 buffer between the two kernels written and read. */
void mdl_lora_kernels(const mdl_model *m, int max_rank, double tokens, int adapters,
                      double *flops, double *bytes);
/* Their roofline time on cm's tensor-parallel group, at its mfu and mbu
 * (the GPU's defaults for a cost model that is not a roofline). */
double mdl_lora_kernel_s(const mdl_cost *cm, double flops, double bytes);
/* The fixed time of the LoRA kernels' launches in one step: layers x
 * launches (a layer) x floor_s, added to their roofline. */
double mdl_lora_launch_s(const mdl_model *m, int launches, double floor_s);

#endif /* MDL_H */
