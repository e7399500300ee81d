/*
 * cost.c: what one engine iteration costs.
 *
 * Physics first: every iteration has a FLOP count (2 x active parameters per
 * token, plus 4 x layers x heads x head_dim per causal query-key pair of
 * attention) and a byte count (the weights read once per iteration -- for MoE
 * only the experts the iteration's tokens reach -- plus the KV cache read for
 * every decoding context and written for every new token).  The roofline model
 * takes the larger of compute time at mfu x peak and memory time at mbu x
 * bandwidth (attention's KV reads at attn_efficiency x that: time only, the
 * bytes counted stay the physical ones), plus a fixed overhead.  The linear
 * model is a teaching and queueing-check model whose time is set directly;
 * the polynomial model is DistServe's fit of vLLM (quadratic in prompt
 * lengths, linear in decode context and batch size); the table model sums
 * measured per-layer kernel latencies (table.c).  Those three are floored at the datasheet, so no
 * model lets a simulated GPU beat its hardware.  docs/cost-models.md has the
 * formulas.
 */
#include "mdl_int.h"

#include <assert.h>
#include <math.h>
#include <string.h>

static const util_field roofline_fields[] = {
    {.key = "mfu", .type = UTIL_T_NUMBER, .min = 0, .max = 1, .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "fraction of peak FLOP/s reached (default: cluster.calibration's, else the GPU's "
            "catalog value)"},
    {.key = "mbu", .type = UTIL_T_NUMBER, .min = 0, .max = 1, .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "fraction of peak bandwidth reached (default: cluster.calibration's, else the "
            "GPU's catalog value)"},
    {.key = "iteration_overhead_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 10,
     .doc = "fixed cost added to every iteration (default: cluster.calibration's, else the "
            "GPU's catalog value)"},
    {.key = "attn_efficiency", .type = UTIL_T_NUMBER, .def = "1", .min = 0, .max = 1,
     .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "share of the achieved bandwidth (mbu) that attention's KV-cache reads reach: "
            "paged attention reads scattered blocks, the weights stream; time only, the bytes "
            "recorded stay the physical ones (default: cluster.calibration's, else 1; "
            "docs/cost-models.md)"},
    {.key = "allreduce_latency_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "1e-05", .min = 0,
     .max = 1, .doc = "fixed cost of one all-reduce or pipeline hand-off (tensor and pipeline "
                      "parallelism)"},
    {0},
};

static const util_field linear_fields[] = {
    {.key = "iteration_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0, .max = 1e4,
     .doc = "fixed cost of every iteration"},
    {.key = "prefill_s_per_token", .type = UTIL_T_NUMBER, .unit = "s/token", .def = "0",
     .min = 0, .max = 1e3, .doc = "cost per prompt token prefilled"},
    {.key = "decode_step_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0,
     .max = 1e4, .doc = "fixed cost of an iteration that decodes"},
    {.key = "decode_s_per_seq", .type = UTIL_T_NUMBER, .unit = "s/sequence", .def = "0",
     .min = 0, .max = 1e3, .doc = "cost per decoding sequence"},
    {0},
};

static int check_large_batch(cJSON *item, const char *path, void *ctx, util_diag *d);

static const util_field large_batch_fields[] = {
    {.key = "from_batch", .type = UTIL_T_INTEGER, .unit = "sequences", .min = 1, .max = 100000,
     .doc = "decoding sequences from which coef replaces decode"},
    {.key = "coef", .type = UTIL_T_NUMBERS, .unit = "s, s/token, s/sequence", .min = 3, .max = 3,
     .doc = "[a, b, c] of the decode formula for batches of at least from_batch"},
    {0},
};

static const util_field polynomial_fields[] = {
    {.key = "prefill", .type = UTIL_T_NUMBERS, .unit = "s, s/token, s/token^2", .min = 3,
     .max = 3, .flags = UTIL_REQUIRED,
     .doc = "[a, b, c]: a prefill takes a + b x sum(prompt) + c x sum(prompt^2)"},
    {.key = "decode", .type = UTIL_T_NUMBERS, .unit = "s, s/token, s/sequence", .min = 3, .max = 3,
     .flags = UTIL_REQUIRED,
     .doc = "[a, b, c]: a decode step of B sequences takes a + b x sum(context + 1) + c x B"},
    {.key = "decode_large_batch", .type = UTIL_T_OBJECT, .sub = large_batch_fields,
     .check = check_large_batch,
     .doc = "other decode coefficients for large batches (empty: decode applies to all)"},
    {.key = "overhead", .type = UTIL_T_NUMBERS, .unit = "s, s/token", .def = "[0, 0]", .min = 2,
     .max = 2, .doc = "[a, b]: every iteration adds a + b x sum(context of its sequences)"},
    {0},
};

static const util_field table_fields[] = {
    {.key = "dir", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED,
     .doc = "folder of dense.csv, per_sequence.csv, attention.csv (times in us per layer); "
            "relative to the scenario file's folder"},
    {.key = "layers", .type = UTIL_T_INTEGER, .unit = "layers", .min = 1, .max = 1000,
     .doc = "decoder layers per iteration (default: the model's)"},
    {0},
};

static const util_variant cost_variants[] = {
    {"roofline", roofline_fields, "compute- and bandwidth-bound from datasheet peaks"},
    {"linear", linear_fields, "time set directly: fixed + per prompt token + per decoding sequence"},
    {"polynomial", polynomial_fields, "DistServe's fit of vLLM: quadratic prefill, linear decode"},
    {"table", table_fields, "measured per-layer kernel latencies (LLMServingSim profiler CSV)"},
    {0},
};

const util_union mdl_cost_schema = {.tag = "kind", .def = "roofline", .variants = cost_variants};

/* from_batch and coef come together or not at all. */
static int check_large_batch(cJSON *item, const char *path, void *ctx, util_diag *d)
{
    bool from = cJSON_HasObjectItem(item, "from_batch"), coef = cJSON_HasObjectItem(item, "coef");
    if (from == coef) return UTIL_OK;
    return util_diag_add(d, "%s.%s: missing (from_batch and coef go together)", path,
                         from ? "coef" : "from_batch");
}

/* A default that comes from the GPU or the model unless the scenario gave
 * one; either way the value used is left in the JSON. */
static double param_or(cJSON *obj, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsNumber(v)) return v->valuedouble;
    cJSON_AddNumberToObject(obj, key, dflt);
    return dflt;
}

/* Attention FLOPs of one query-key pair in one layer.  Grouped-query
 * attention: QK^T and PV over head_dim for every query head.  MLA as vLLM
 * runs it: a prompt's keys and values are expanded to full heads
 * (qk_nope + qk_rope wide for QK^T, v_head_dim for PV); a decoding token's
 * query is absorbed into the latent, so QK^T spans kv_lora_rank +
 * qk_rope_head_dim and PV kv_lora_rank. */
static void attention_flops(const mdl_model *m, double *prefill, double *decode)
{
    double heads = m->heads;
    if (m->attention == MDL_ATTN_GQA) {
        *prefill = *decode = 4.0 * heads * m->head_dim;
        return;
    }
    *prefill = 2.0 * heads * ((double)m->qk_nope_head_dim + m->qk_rope_head_dim) +
               2.0 * heads * m->v_head_dim;
    *decode = 2.0 * heads * ((double)m->kv_lora_rank + m->qk_rope_head_dim) +
              2.0 * heads * m->kv_lora_rank;
}

static void derive(mdl_cost *cm)
{
    const mdl_model *m = &cm->model;
    cm->weight_bytes = mdl_model_weight_bytes(m);
    cm->kv_bytes_per_token = mdl_model_kv_bytes_per_token(m);
    attention_flops(m, &cm->attn_prefill_pair, &cm->attn_decode_pair);
    cm->window = m->sliding_window;
    cm->window_layers = m->sliding_window > 0 ? m->window_layers : 0;
    cm->full_layers = m->layers - cm->window_layers;
    /* Each GPU reads its share of a layer's KV, or all of it where the
     * cache is replicated; bytes counts what every GPU reads. */
    cm->kv_read_per_layer_token = mdl_model_kv_bytes_per_layer_token(m) * cm->tp /
                                  mdl_model_kv_shards(m, cm->tp);
    /* The embedding is a lookup, not a multiplication; the head multiplies
     * only the one position per sequence that is sampled. */
    cm->head_params = (double)m->vocab * m->hidden;
    cm->layer_params = m->active_params - cm->head_params * (m->tied_embeddings ? 1 : 2);
    if (m->experts > m->experts_active) {
        cm->expert_params = (m->params - m->active_params) / (m->experts - m->experts_active);
        cm->shared_params = m->active_params - m->experts_active * cm->expert_params;
    } else {
        cm->expert_params = 0;
        cm->shared_params = m->params;
    }
}

void mdl_cost_set_parallel(mdl_cost *cm, int tp, int pp, const mdl_ep *ep)
{
    cm->tp = tp;
    cm->pp = pp;
    cm->ep = ep ? *ep : (mdl_ep){0};
    if (cm->ep.degree < 1) cm->ep.degree = 1;
    if (cm->ep.skew < 1) cm->ep.skew = 1;
    derive(cm);
}

/* Copies the validated array obj[key] into out[0..n); an absent key leaves
 * out as it is. */
static void numbers(const cJSON *obj, const char *key, double *out, int n)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
    int i = 0;
    for (const cJSON *e = a ? a->child : NULL; e && i < n; e = e->next) out[i++] = e->valuedouble;
}

static void init_polynomial(mdl_cost *cm, const cJSON *obj)
{
    numbers(obj, "prefill", cm->poly_prefill, 3);
    numbers(obj, "decode", cm->poly_decode, 3);
    numbers(obj, "overhead", cm->poly_overhead, 2);
    const cJSON *large = cJSON_GetObjectItemCaseSensitive(obj, "decode_large_batch");
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(large, "from_batch");
    if (cJSON_IsNumber(from)) {
        cm->poly_large_from = (int)from->valuedouble;
        numbers(large, "coef", cm->poly_decode_large, 3);
    }
}

static int init_table(mdl_cost *cm, cJSON *obj, const char *path, const char *base_dir,
                      util_diag *d)
{
    int layers = (int)param_or(obj, "layers", cm->model.layers);
    char *dir = util_path_join(base_dir,
                               cJSON_GetObjectItemCaseSensitive(obj, "dir")->valuestring);
    char *where = util_xasprintf("%s.dir", path);
    int rc = mdl__table_load(&cm->table, dir, layers, where, d);
    free(where);
    free(dir);
    return rc;
}

int mdl_cost_init(mdl_cost *cm, cJSON *obj, const mdl_gpu *gpu, const mdl_model *model,
                  const char *path, const char *base_dir, util_diag *d)
{
    memset(cm, 0, sizeof *cm);
    cm->attn_efficiency = 1;
    cm->gpu = *gpu;
    cm->model = *model;
    mdl_cost_set_parallel(cm, 1, 1, NULL); /* the scenario sets a replica's parallelism */
    const char *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind")->valuestring;
    if (!strcmp(kind, "roofline")) {
        cm->kind = MDL_COST_ROOFLINE;
        cm->mfu = param_or(obj, "mfu", gpu->mfu);
        cm->mbu = param_or(obj, "mbu", gpu->mbu);
        cm->overhead_s = param_or(obj, "iteration_overhead_s", gpu->overhead_s);
        cm->attn_efficiency = param_or(obj, "attn_efficiency", 1);
        cm->allreduce_latency_s = param_or(obj, "allreduce_latency_s", 1e-5);
    } else if (!strcmp(kind, "linear")) {
        cm->kind = MDL_COST_LINEAR;
        cm->iteration_s = param_or(obj, "iteration_s", 0);
        cm->prefill_s_per_token = param_or(obj, "prefill_s_per_token", 0);
        cm->decode_step_s = param_or(obj, "decode_step_s", 0);
        cm->decode_s_per_seq = param_or(obj, "decode_s_per_seq", 0);
    } else if (!strcmp(kind, "polynomial")) {
        cm->kind = MDL_COST_POLYNOMIAL;
        init_polynomial(cm, obj);
    } else if (!strcmp(kind, "table")) {
        cm->kind = MDL_COST_TABLE;
        return init_table(cm, obj, path, base_dir, d);
    } else {
        return util_diag_add(d, "%s.kind: unknown kind '%s'", path, kind);
    }
    return UTIL_OK;
}

void mdl_cost_fini(mdl_cost *cm)
{
    mdl__table_destroy(cm->table);
    cm->table = NULL;
}

/* What an iteration does: FLOPs and bytes in all, the routed experts'
 * part of them, which the busiest GPU of expert parallelism does `skew`
 * times its share of, and the part of the bytes that attention reads from
 * the KV cache (which the roofline moves at attn_efficiency x mbu). */
typedef struct work {
    double flops, bytes;
    double expert_flops, expert_bytes;
    double kv_read;
} work;

/* Weights an iteration of `tokens` tokens reads, and their FLOPs for
 * `seqs` sequences sampled.  A dense model reads all of them but an untied
 * embedding table, of which it reads only the rows of its tokens; an MoE
 * layer reads only the experts some token was routed to, 1 - (1 - k/E)^tokens
 * of them in expectation under uniform routing. */
static work linear_work(const mdl_cost *cm, double tokens, double seqs)
{
    const mdl_model *m = &cm->model;
    work w = {0, 0, 0, 0, 0};
    if (tokens <= 0) return w;
    double table = m->tied_embeddings ? 0 : cm->head_params;
    double rows = tokens * m->hidden;
    double dense = cm->shared_params - table + (rows < table ? rows : table);
    w.flops = 2.0 * (cm->layer_params * tokens + cm->head_params * seqs);
    w.bytes = dense * m->weight_bytes_per_param;
    if (cm->expert_params == 0) return w;
    double k = m->experts_active, e = m->experts;
    double reached = e * (1.0 - pow(1.0 - k / e, tokens));
    w.expert_flops = 2.0 * cm->expert_params * k * tokens;
    w.expert_bytes = cm->expert_params * reached * m->weight_bytes_per_param;
    w.bytes += w.expert_bytes;
    return w;
}

/* Causal pairs of a chunk of c tokens after p cached ones whose queries see
 * at most the last `window` keys: sum over t in (p, p + c] of min(t, window). */
static double windowed_pairs(double c, double p, double window)
{
    if (p + c <= window) return c * (p + (c + 1) / 2);
    if (p >= window) return c * window;
    double inside = window - p; /* tokens p+1 .. window see all before them */
    return inside * (p + 1 + window) / 2 + (c - inside) * window;
}

/* The prefill chunks' attention: the full layers over every pair and every
 * cached token, the windowed layers over the pairs and cached tokens within
 * their window, chunk by chunk (an iteration has few chunks).  Every layer
 * writes the new tokens' KV. */
static void prefill_attention(const mdl_cost *cm, const mdl_batch *b, work *w)
{
    if (b->prefill_tokens <= 0) return;
    double kv = cm->kv_read_per_layer_token, tokens = (double)b->prefill_tokens;
    double pairs = b->prefill_pairs, context = (double)b->prefill_context;
    w->flops += cm->attn_prefill_pair * cm->full_layers * pairs;
    w->bytes += kv * cm->full_layers * (tokens + context);
    w->kv_read += kv * cm->full_layers * context;
    if (cm->window_layers == 0) return;
    double wp = 0, wc = 0, win = (double)cm->window;
    if (b->chunks) {
        for (int i = 0; i < b->n_prefill; i++) {
            double c = (double)b->chunks[i].tokens, p = (double)b->chunks[i].cached;
            wp += windowed_pairs(c, p, win);
            wc += p < win ? p : win;
        }
    } else { /* aggregates only: their bounds */
        wp = fmin(pairs, tokens * win);
        wc = fmin(context, b->n_prefill * win);
    }
    w->flops += cm->attn_prefill_pair * cm->window_layers * wp;
    w->bytes += kv * cm->window_layers * (tokens + wc);
    w->kv_read += kv * cm->window_layers * wc;
}

/* n decoding sequences of context sum ctx (each including its new token):
 * a full layer reads every context's KV, a windowed one at most `window`
 * of each -- min(ctx, n x window), exact when every context is on the same
 * side of the window and above the true sum otherwise. */
static void decode_attention(const mdl_cost *cm, double n, double ctx, int width, work *w)
{
    if (n <= 0) return;
    double windowed = cm->window_layers ? fmin(ctx, n * (double)cm->window) : 0;
    double keys = cm->full_layers * ctx + cm->window_layers * windowed;
    double flops = cm->attn_decode_pair * keys;
    /* Verifying `width` positions: each attends the context (FLOPs grow
     * with the width), but the kernel reads a sequence's KV once for all
     * its query positions, and the width - 1 drafts' own KV besides.  A
     * plain step (width 1) skips the arithmetic: it is the hot path. */
    if (width > 1) {
        flops *= width;
        keys += (double)cm->model.layers * n * (width - 1);
    }
    w->flops += flops;
    w->bytes += cm->kv_read_per_layer_token * keys;
    w->kv_read += cm->kv_read_per_layer_token * keys;
}

/* Positions each decoding sequence of b computes: one, or its verified width. */
static int decode_width(const mdl_batch *b)
{
    return b->decode_width > 1 ? b->decode_width : 1;
}

/* Decode positions of batch b. */
static double decode_positions(const mdl_batch *b)
{
    return (double)b->n_decode * decode_width(b);
}

/* The iteration of batch b, or its prefill or decode part alone. */
static work batch_work(const mdl_cost *cm, const mdl_batch *b, bool prefill, bool decode)
{
    /* every verified position is sampled: the head runs on each */
    double dpos = decode ? decode_positions(b) : 0;
    double tokens = (prefill ? (double)b->prefill_tokens : 0) + dpos;
    double seqs = (prefill ? b->n_prefill : 0) + dpos;
    work w = linear_work(cm, tokens, seqs);
    if (prefill) prefill_attention(cm, b, &w);
    if (decode) decode_attention(cm, b->n_decode, (double)b->decode_context, decode_width(b), &w);
    return w;
}

/* The bytes that attention's KV reads take beyond their count when they
 * reach attn only of the bandwidth the weights do: 1 / attn - 1 of them
 * (exactly 0 at the default 1, which leaves every time as it was). */
static double kv_excess(double attn)
{
    return 1.0 / attn - 1.0;
}

/* Compute and memory time of work split over the tp GPUs of a layer, the
 * KV reads at attn x mbu (1 for the datasheet floor: the physical bytes).
 * Pipeline stages run one after another for one micro-batch, so their
 * shares add up to the whole: pipeline parallelism does not shorten an
 * iteration. */
static double roofline_s(const mdl_cost *cm, work w, double mfu, double mbu, double attn)
{
    double extra = cm->ep.skew - 1; /* the busiest expert-parallel GPU's excess */
    double tc = (w.flops + extra * w.expert_flops) / (cm->gpu.flops * mfu * cm->tp);
    double tm = (w.bytes + extra * w.expert_bytes + kv_excess(attn) * w.kv_read) /
                (cm->gpu.mem_bw * mbu * cm->tp);
    return tc > tm ? tc : tm;
}

/* One direction of the GPU's scale-up link (NVLink, Infinity Fabric), or
 * PCIe where it has none. */
static double link_bw(const mdl_cost *cm)
{
    return cm->gpu.link_bw > 0 ? cm->gpu.link_bw / 2 : cm->gpu.pcie_bw;
}

/* One MoE layer's dispatch and combine under expert parallelism: each of
 * the replica's GPUs sends its share of the tokens' hidden states, k copies
 * each, to the GPUs holding their experts ((ep - 1) / ep of them elsewhere)
 * and receives the results back; the busiest GPU receives `skew` times the
 * mean.  Peers on the GPU's own node are reached over its link, the others
 * over the network, both at once: the slower paces the exchange. */
static double all_to_all_s(const mdl_cost *cm, double tokens)
{
    const mdl_ep *ep = &cm->ep;
    double act = tokens / cm->tp * cm->model.experts_active * cm->model.hidden *
                 cm->model.bytes_per_param * ep->skew;
    int local = ep->gpus_per_node > 0 && ep->gpus_per_node < ep->degree ? ep->gpus_per_node
                                                                         : ep->degree;
    double near = act * (local - 1) / ep->degree, far = act * (ep->degree - local) / ep->degree;
    double t = near / link_bw(cm);
    if (far > 0) t = fmax(t, far / ep->network_bw);
    return 2.0 * (cm->allreduce_latency_s + t);
}

/* Communication of one iteration of `tokens` tokens: with tensor
 * parallelism, two ring all-reduces of the hidden state per layer (each GPU
 * sends and receives 2 (tp - 1) / tp of it) -- with expert parallelism an
 * MoE layer's second is its dispatch and combine instead; with pipeline
 * parallelism, a hand-off of the hidden state between consecutive stages.
 * Each costs a fixed latency plus bytes over one direction of the GPU's
 * interconnect.  The hidden state is in the activation dtype whatever the
 * weights are. */
static double comm_s(const mdl_cost *cm, double tokens)
{
    if (cm->tp == 1 && cm->pp == 1) return 0;
    double act = tokens * cm->model.hidden * cm->model.bytes_per_param;
    double allreduce = cm->allreduce_latency_s + 2.0 * (cm->tp - 1) / cm->tp * act / link_bw(cm);
    double t = 0;
    if (cm->tp > 1) {
        int moe = cm->ep.degree > 1 ? cm->model.moe_layers : 0;
        t += (2.0 * cm->model.layers - moe) * allreduce;
        if (moe) t += moe * all_to_all_s(cm, tokens);
    }
    if (cm->pp > 1) t += (cm->pp - 1) * (cm->allreduce_latency_s + act / link_bw(cm));
    return t;
}

/* Splits total between prefill and decode in proportion a : b. */
static void apportion(mdl_step *out, double total, double a, double b)
{
    double share = (a + b > 0) ? a / (a + b) : 0.5;
    out->time_s = total;
    out->prefill_s = total * share;
    out->decode_s = total - out->prefill_s;
}

/* Each model's iteration time, with its prefill and decode parts p and q:
 * only their ratio is used, to split a mixed iteration's time. */

static double roofline_step(const mdl_cost *cm, const mdl_batch *b, work all, double *p,
                            double *q)
{
    if (b->prefill_tokens > 0 && b->n_decode > 0) { /* shares only matter then */
        *p = roofline_s(cm, batch_work(cm, b, true, false), cm->mfu, cm->mbu,
                        cm->attn_efficiency);
        *q = roofline_s(cm, batch_work(cm, b, false, true), cm->mfu, cm->mbu,
                        cm->attn_efficiency);
    }
    return roofline_s(cm, all, cm->mfu, cm->mbu, cm->attn_efficiency) + cm->overhead_s +
           comm_s(cm, (double)b->prefill_tokens + decode_positions(b));
}

static double linear_step(const mdl_cost *cm, const mdl_batch *b, double *p, double *q)
{
    *p = cm->prefill_s_per_token * (double)b->prefill_tokens;
    *q = b->n_decode ? cm->decode_step_s + cm->decode_s_per_seq * decode_positions(b) : 0;
    return cm->iteration_s + *p + *q;
}

/* DistServe switches to its large-batch fit at B >= from_batch. */
static const double *poly_decode_coef(const mdl_cost *cm, int32_t n_decode)
{
    if (cm->poly_large_from > 0 && n_decode >= cm->poly_large_from) return cm->poly_decode_large;
    return cm->poly_decode;
}

/* A mixed iteration (the engine's continuous batching; DistServe never mixes)
 * pays for its prefill part and its decode part, each as DistServe would cost
 * it alone, and one overhead: they share one forward pass and one launch. */
static double poly_step(const mdl_cost *cm, const mdl_batch *b, double *p, double *q)
{
    const double *pf = cm->poly_prefill, *oh = cm->poly_overhead;
    const double *dc = poly_decode_coef(cm, b->n_decode);
    double ptok = (double)b->prefill_tokens, ctx = (double)b->decode_context;
    double n = decode_positions(b);
    *p = ptok > 0 ? pf[0] + pf[1] * ptok + pf[2] * b->prefill_sq : 0;
    *q = n > 0 ? dc[0] + dc[1] * (ctx + n) + dc[2] * n : 0;
    return *p + *q + oh[0] + oh[1] * (ptok + ctx);
}

static double table_step(const mdl_cost *cm, const mdl_batch *b, double *p, double *q,
                         bool *clamped)
{
    const mdl_table *t = cm->table;
    double s = mdl__table_rest_s(t, (double)b->prefill_tokens + decode_positions(b),
                                 (double)b->n_prefill + decode_positions(b), clamped) +
               mdl__table_attention_s(t, b, clamped);
    if (b->prefill_tokens > 0 && b->n_decode > 0) { /* each part as if it ran alone */
        bool ignored = false;
        mdl_batch pre = *b, dec = {.n_decode = b->n_decode, .decode_context = b->decode_context,
                            .decode_width = b->decode_width};
        pre.n_decode = 0;
        pre.decode_context = 0;
        *p = mdl__table_rest_s(t, (double)pre.prefill_tokens, pre.n_prefill, &ignored) +
             mdl__table_attention_s(t, &pre, &ignored);
        *q = mdl__table_rest_s(t, decode_positions(b), decode_positions(b), &ignored) +
             mdl__table_attention_s(t, &dec, &ignored);
    }
    return s;
}

/* The host's time for an iteration of `seqs` sequences. */
static double host_s(const mdl_cost *cm, double seqs)
{
    return cm->host_step_s + cm->host_step_s_per_seq * seqs;
}

/* An iteration whose GPU work takes t and whose host work takes h: a
 * synchronous engine does one after the other; an asynchronous one plans
 * iteration n + 1 while the GPU runs iteration n, so the longer of the two
 * paces the loop (the first iteration after an idle spell is charged the
 * same: a simplification).  No host time leaves t exactly as it was. */
static double with_host(const mdl_cost *cm, double t, double h)
{
    if (h <= 0) return t;
    return cm->host_overlap ? fmax(t, h) : t + h;
}

void mdl_cost_step(const mdl_cost *cm, const mdl_batch *b, mdl_step *out)
{
    assert(b->prefill_tokens > 0 || b->n_decode > 0);
    /* Prefill writes its chunks' KV and reads their cached context's; decode
     * reads every context (which includes the token it writes). */
    work all = batch_work(cm, b, true, true);
    out->flops = all.flops;
    out->bytes = all.bytes;
    double t = 0, p = 0, q = 0;
    bool clamped = false;
    switch (cm->kind) {
    case MDL_COST_ROOFLINE: t = roofline_step(cm, b, all, &p, &q); break;
    case MDL_COST_LINEAR: t = linear_step(cm, b, &p, &q); break;
    case MDL_COST_POLYNOMIAL: t = poly_step(cm, b, &p, &q); break;
    case MDL_COST_TABLE: t = table_step(cm, b, &p, &q, &clamped); break;
    }
    if (cm->kind != MDL_COST_ROOFLINE) { /* a roofline at mfu, mbu <= 1 is never below it */
        double floor_s = roofline_s(cm, all, 1.0, 1.0, 1.0);
        if (floor_s > t) t = floor_s;
    }
    out->gpu_s = t;
    t = with_host(cm, t, host_s(cm, (double)b->n_prefill + b->n_decode));
    out->out_of_range = clamped;
    p = fmax(p, 0); /* a fitted polynomial may have negative terms */
    q = fmax(q, 0);
    if (b->n_decode == 0) p = 1, q = 0;
    else if (b->prefill_tokens == 0) p = 0, q = 1;
    else if (p + q <= 0) p = q = 1; /* fixed cost only: split evenly */
    apportion(out, t, p, q);
}

/* ---- a speculative drafter ---- */

/* A drafter costed as a roofline beside the target, on the same GPU at the
 * target's precision and efficiencies: the target's measurements (a
 * table, a fit) are not the drafter's, so a target of another kind lends
 * only the GPU's default efficiencies.  The engine's step pays the fixed
 * costs once -- the host's, and the iteration overhead (scheduling,
 * sampling, launch) -- so the drafter's passes pay none of their own.
 * It runs on the last pipeline stage only, split over the target's
 * tensor-parallel GPUs, its experts over ep (NULL: split by tp). */
static void drafter(const mdl_cost *target, const mdl_model *m, const mdl_ep *ep,
                    mdl_cost *out)
{
    *out = *target;
    if (target->kind != MDL_COST_ROOFLINE) {
        out->mfu = target->gpu.mfu;
        out->mbu = target->gpu.mbu;
        out->attn_efficiency = 1;
    }
    out->kind = MDL_COST_ROOFLINE;
    out->table = NULL;
    out->host_step_s = out->host_step_s_per_seq = 0;
    out->overhead_s = 0;
    out->model = *m;
    mdl_cost_set_parallel(out, target->tp, 1, ep);
}

void mdl_cost_draft_head(const mdl_cost *target, bool moe, int vocab, int fc_inputs,
                         mdl_cost *out, double *weight_bytes)
{
    mdl_model m = target->model;
    m.layers = 1;
    m.sliding_window = m.window_layers = 0;
    m.vocab = vocab;
    m.tied_embeddings = true; /* the target's embedding; one head table, read every pass */
    if (!moe || m.moe_layers == 0) {
        m.experts = m.experts_active = 1;
        m.moe_layers = m.shared_experts = 0;
    } else {
        m.moe_layers = 1;
    }
    mdl_params c;
    mdl_model_count_params(&m, &c);
    double fc = (double)fc_inputs * m.hidden * m.hidden, table = (double)vocab * m.hidden;
    m.params = c.total + fc;
    m.active_params = c.active + fc;
    drafter(target, &m, &target->ep, out);
    bool own_head = vocab != target->model.vocab;
    *weight_bytes = (m.params - (own_head ? 0 : table)) * m.weight_bytes_per_param;
}

void mdl_cost_draft_model(const mdl_cost *target, const mdl_model *draft, int tp, mdl_cost *out)
{
    drafter(target, draft, NULL, out);
    if (tp != target->tp) mdl_cost_set_parallel(out, tp, 1, NULL);
}

/* ---- runs of decode-only iterations ---- */

/* The upper envelope of n lines over j = 0, 1, 2, ...: as pieces, each a
 * line that wins from its first j on.  The maximum of lines is convex, so
 * along j the winning line only ever gives way to one of greater slope: at
 * most n pieces. */
static int envelope(const mdl_line *l, int n, mdl_piece *out)
{
    int pieces = 0;
    int64_t j = 0;
    for (;;) {
        int cur = 0;
        for (int i = 1; i < n; i++) { /* winner at j; ties go to the steeper line */
            double vi = l[i].a + l[i].b * (double)j, vc = l[cur].a + l[cur].b * (double)j;
            if (vi > vc || (vi == vc && l[i].b > l[cur].b)) cur = i;
        }
        out[pieces++] = (mdl_piece){.from = j, .line = l[cur]};
        double next = INFINITY; /* first j at which a steeper line overtakes */
        for (int i = 0; i < n; i++) {
            if (l[i].b <= l[cur].b) continue;
            double over = floor((l[cur].a - l[i].a) / (l[i].b - l[cur].b)) + 1;
            if (over > (double)j && over < next) next = over;
        }
        if (next > 4e18 || pieces == n) return pieces; /* never, within any run */
        j = (int64_t)next;
    }
}

/* sum of a + b j over j in [from, to) */
static double series(mdl_line l, int64_t from, int64_t to)
{
    double cnt = (double)(to - from);
    return cnt * l.a + l.b * (cnt * (double)from + cnt * (cnt - 1) / 2);
}

/* sum_{j=0}^{k-1} of the envelope, in O(pieces). */
static double envelope_sum(const mdl_piece *p, int pieces, int64_t k)
{
    double total = 0;
    for (int i = 0; i < pieces && p[i].from < k; i++) {
        int64_t to = (i + 1 < pieces && p[i + 1].from < k) ? p[i + 1].from : k;
        total += series(p[i].line, p[i].from, to);
    }
    return total;
}

/* The polynomial's decode step j of a run, a + b j: the batch size is fixed,
 * so only the context sum ctx0 + n j moves. */
static mdl_line poly_line(const mdl_cost *cm, int32_t n, int64_t ctx0)
{
    const double *dc = poly_decode_coef(cm, n), *oh = cm->poly_overhead;
    double ctx = (double)ctx0;
    return (mdl_line){dc[0] + dc[1] * (ctx + n) + dc[2] * n + oh[0] + oh[1] * ctx,
                      (dc[1] + oh[1]) * n};
}

/* Measured tables have no closed form: one lookup per iteration (not per
 * token or sequence), with everything but attention looked up once, since
 * the batch does not change during a run.  fl and bl are the datasheet's
 * floors. */
static double table_part(const mdl_cost *cm, int32_t n, int64_t ctx0, int64_t k, mdl_line fl,
                         mdl_line bl, int32_t *oor)
{
    bool fixed_clamped = false;
    double rest = mdl__table_rest_s(cm->table, n, n, &fixed_clamped), total = 0;
    for (int64_t j = 0; j < k; j++) {
        bool clamped = fixed_clamped;
        mdl_batch b = {.n_decode = n, .decode_context = ctx0 + n * j};
        double t = rest + mdl__table_attention_s(cm->table, &b, &clamped);
        double jj = (double)j, floor_s = fmax(fl.a + fl.b * jj, bl.a + bl.b * jj);
        total += with_host(cm, t > floor_s ? t : floor_s, host_s(cm, n));
        *oor += clamped;
    }
    return total;
}

/* What a part's time lines count beyond its FLOPs and bytes: the busiest
 * expert-parallel GPU's excess, and the KV bytes attention reads (a line
 * in j), which the roofline moves at attn_efficiency x mbu. */
typedef struct part_extra {
    double flops, bytes;
    mdl_line kv_read;
} part_extra;

/* FLOPs and bytes of a part's iterations as lines in j; `full` when every
 * windowed layer's window is full throughout it.  The time lines add
 * extra; the totals do not. */
static void part_work(const mdl_cost *cm, int32_t n, bool full, mdl_run_part *pt,
                      part_extra *extra)
{
    work lw = linear_work(cm, n, n);
    double ctx = (double)pt->ctx0, win = (double)n * (double)cm->window;
    double keys0 = cm->full_layers * ctx + cm->window_layers * (full ? win : ctx);
    double keys1 = (double)n * (cm->full_layers + (full ? 0 : cm->window_layers));
    pt->f0 = lw.flops + cm->attn_decode_pair * keys0;
    pt->f1 = cm->attn_decode_pair * keys1;
    pt->b0 = lw.bytes + cm->kv_read_per_layer_token * keys0;
    pt->b1 = cm->kv_read_per_layer_token * keys1;
    extra->flops = (cm->ep.skew - 1) * lw.expert_flops;
    extra->bytes = (cm->ep.skew - 1) * lw.expert_bytes;
    extra->kv_read = (mdl_line){cm->kv_read_per_layer_token * keys0, pt->b1};
}

static void part_init(mdl_run *r, mdl_run_part *pt, int64_t ctx0, bool full)
{
    const mdl_cost *cm = r->cm;
    int32_t n = r->n;
    pt->ctx0 = ctx0;
    part_extra x;
    part_work(cm, n, full, pt, &x);
    double peak_f = cm->gpu.flops * cm->tp, peak_b = cm->gpu.mem_bw * cm->tp;
    mdl_line *l = pt->lines;
    /* Every model but the roofline is its formula floored at the datasheet. */
    l[1] = (mdl_line){(pt->f0 + x.flops) / peak_f, pt->f1 / peak_f};
    l[2] = (mdl_line){(pt->b0 + x.bytes) / peak_b, pt->b1 / peak_b};
    double slow = kv_excess(cm->attn_efficiency);
    switch (cm->kind) {
    case MDL_COST_ROOFLINE:
        l[0] = (mdl_line){l[1].a / cm->mfu, l[1].b / cm->mfu};
        l[2] = (mdl_line){(pt->b0 + x.bytes + slow * x.kv_read.a) / peak_b,
                          (pt->b1 + slow * x.kv_read.b) / peak_b};
        l[1] = (mdl_line){l[2].a / cm->mbu, l[2].b / cm->mbu};
        l[2] = l[1];
        break;
    case MDL_COST_LINEAR:
        l[0] = (mdl_line){cm->iteration_s + cm->decode_step_s + cm->decode_s_per_seq * n, 0};
        break;
    case MDL_COST_POLYNOMIAL: l[0] = poly_line(cm, n, ctx0); break;
    case MDL_COST_TABLE: l[0] = l[1]; break;
    }
    pt->n_lines = 3;
    /* The host's time, overlapped: max(envelope_j + fixed, host) =
     * max(envelope_j, host - fixed) + fixed, one more (flat) line. */
    if (r->host > 0 && cm->host_overlap && cm->kind != MDL_COST_TABLE)
        l[pt->n_lines++] = (mdl_line){r->host - r->fixed, 0};
    pt->pieces = envelope(l, pt->n_lines, pt->piece);
}

/* The first iteration at which ctx0 + n j reaches n x window: from there
 * on every windowed layer reads a full window per sequence. */
static int64_t window_knee(const mdl_cost *cm, int32_t n, int64_t ctx0)
{
    if (cm->window_layers == 0) return INT64_MAX;
    double need = (double)n * (double)cm->window - (double)ctx0;
    if (need <= 0) return 0;
    double j = ceil(need / n);
    return j > 4e18 ? INT64_MAX : (int64_t)j;
}

void mdl_run_init(mdl_run *r, const mdl_cost *cm, int32_t n, int64_t ctx0)
{
    assert(n > 0);
    /* every field is set below (a run is made several times an event: no
     * memset of both parts) */
    r->cm = cm;
    r->n = n;
    r->ctx0 = ctx0;
    r->knee = window_knee(cm, n, ctx0);
    r->fixed = cm->kind == MDL_COST_ROOFLINE ? cm->overhead_s + comm_s(cm, n) : 0;
    /* The host's time: the same every iteration, since the batch does not
     * change.  Added, it is fixed cost; overlapped, a line of each part.
     * (The table model, summed iteration by iteration, applies it there.) */
    r->host = host_s(cm, n);
    double host_line = r->host > 0 && cm->host_overlap ? 0 : r->host;
    if (cm->kind != MDL_COST_TABLE) r->fixed += host_line;
    if (r->knee > 0) part_init(r, &r->part[0], ctx0, false);
    if (r->knee < INT64_MAX)
        part_init(r, &r->part[1], ctx0 + (int64_t)n * r->knee, true);
}

/* Iterations [0, k) of the run fall into its parts as [0, k0) and [0, k1). */
static void split(const mdl_run *r, int64_t k, int64_t *k0, int64_t *k1)
{
    *k0 = k < r->knee ? k : r->knee;
    *k1 = k - *k0;
}

static double part_time(const mdl_run *r, const mdl_run_part *pt, int64_t k, int32_t *oor)
{
    if (k <= 0) return 0;
    if (r->cm->kind == MDL_COST_TABLE)
        return table_part(r->cm, r->n, pt->ctx0, k, pt->lines[1], pt->lines[2], oor);
    return envelope_sum(pt->piece, pt->pieces, k) + r->fixed * (double)k;
}

void mdl_run_cost(const mdl_run *r, int64_t k, mdl_step *sum)
{
    assert(k >= 0);
    int64_t ks[2];
    split(r, k, &ks[0], &ks[1]);
    *sum = (mdl_step){0};
    for (int i = 0; i < 2; i++) {
        if (ks[i] <= 0) continue;
        const mdl_run_part *pt = &r->part[i];
        double kk = (double)ks[i], tri = kk * (kk - 1) / 2;
        sum->time_s += part_time(r, pt, ks[i], &sum->out_of_range);
        sum->flops += kk * pt->f0 + tri * pt->f1;
        sum->bytes += kk * pt->b0 + tri * pt->b1;
    }
    sum->decode_s = sum->time_s;
}

double mdl_run_time(const mdl_run *r, int64_t k)
{
    if (r->knee == INT64_MAX && r->cm->kind != MDL_COST_TABLE) /* one part: no window */
        return envelope_sum(r->part[0].piece, r->part[0].pieces, k) + r->fixed * (double)k;
    int64_t k0, k1;
    split(r, k, &k0, &k1);
    int32_t oor = 0;
    return part_time(r, &r->part[0], k0, &oor) + part_time(r, &r->part[1], k1, &oor);
}

void mdl_cost_decode_run(const mdl_cost *cm, int32_t n, int64_t ctx0, int64_t k, mdl_step *sum)
{
    mdl_run r;
    mdl_run_init(&r, cm, n, ctx0);
    mdl_run_cost(&r, k, sum);
}
