/*
 * vllm_args.c: from a plan's answer to a deployment -- the `vllm serve`
 * command line that runs one replica as the answer simulated it, and how
 * many replicas the answer runs.  Every flag is read from the effective
 * scenario (the engine preset and its tiers applied, every default written
 * in), never taken from vLLM's own defaults, so the command pins what the
 * simulation used even where a vLLM release would have chosen the same; the
 * two exceptions are said where they are made.  What vllm serve cannot
 * express -- another engine, disaggregated or several pools, a scheduler or
 * a precision vLLM has no flag for -- is an input error naming the key; what
 * the command leaves to whoever deploys it (a balancer in front of the
 * replicas, a model named by its folder) is a note.  docs/planning.md has
 * the table of keys and flags.
 */
#include "pl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* The engine presets that are vLLM's, and which of its engines each is. */
typedef enum vllm_engine { VLLM_NONE, VLLM_V1, VLLM_V0 } vllm_engine;

/* What the flags are read from: the pool's effective object and its path,
 * the command being built, and the first error met. */
typedef struct builder {
    const cJSON *pool;
    const char *path; /* "cluster" or "cluster.pools[0]" */
    vllm_engine engine;
    pl_vllm_cmd *c;
    util_diag *d;
    int rc;
} builder;

static void word(pl_vllm_cmd *c, const char *s)
{
    c->argv = util_xrealloc(c->argv, (size_t)(c->argc + 2) * sizeof *c->argv);
    c->argv[c->argc++] = util_xstrdup(s);
    c->argv[c->argc] = NULL;
}

/* A flag and its value, the value printed by fmt. */
static void flag(pl_vllm_cmd *c, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void flag(pl_vllm_cmd *c, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *value = util_xvasprintf(fmt, ap);
    va_end(ap);
    word(c, name);
    word(c, value);
    free(value);
}

static void note(builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(builder *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = util_xvasprintf(fmt, ap);
    va_end(ap);
    util_diag_add(&b->c->notes, "%s", text);
    free(text);
}

/* Records an input error (the first one decides the status). */
static void refuse(builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(builder *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = util_xvasprintf(fmt, ap);
    va_end(ap);
    util_diag_add(b->d, "%s", text);
    free(text);
    b->rc = UTIL_EINPUT;
}

static const cJSON *key(const builder *b, const char *k)
{
    return util_json_get(b->pool, k);
}

static double number(const builder *b, const char *k)
{
    return util_json_number(b->pool, k, NAN);
}

static const char *string(const builder *b, const char *k)
{
    const char *s = cJSON_GetStringValue(key(b, k));
    return s ? s : "";
}

static bool truth(const builder *b, const char *k)
{
    return cJSON_IsTrue(key(b, k));
}

/* ---- the pool, the engine, the model ---- */

/* The one pool vllm serve can deploy: the cluster itself (the short form)
 * or its only pool. */
static const cJSON *the_pool(const cJSON *scenario, const char **path, util_diag *d)
{
    const cJSON *cluster = cJSON_GetObjectItemCaseSensitive(scenario, "cluster");
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(cluster, "pools");
    const cJSON *disagg = cJSON_GetObjectItemCaseSensitive(cluster, "disaggregated");
    if (cJSON_IsObject(disagg)) {
        util_diag_add(d, "cluster.disaggregated: prefill in pool '%s' and decode in pool '%s' "
                         "are two deployments joined by a KV transfer, which one vllm serve "
                         "command does not express",
                      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(disagg, "prefill")),
                      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(disagg, "decode")));
        return NULL;
    }
    int n = cJSON_GetArraySize(pools);
    if (n > 1) {
        util_diag_add(d, "cluster.pools: %d pools are %d deployments, which one vllm serve "
                         "command does not express", n, n);
        return NULL;
    }
    *path = n == 1 ? "cluster.pools[0]" : "cluster";
    return n == 1 ? cJSON_GetArrayItem(pools, 0) : cluster;
}

static void check_engine(builder *b)
{
    const char *engine = string(b, "engine");
    b->engine = !strcmp(engine, "vllm-v1") ? VLLM_V1 : !strcmp(engine, "vllm-v0") ? VLLM_V0
                                                                                 : VLLM_NONE;
    if (b->engine == VLLM_NONE)
        refuse(b, "%s.engine: '%s' is not a vLLM preset (vllm-v1, vllm-v0): vllm serve does not "
                  "run it", b->path, engine);
    else if (b->engine == VLLM_V0)
        note(b, "vllm-v0 is vLLM's V0 engine: run the command on a release that still has it, "
                "with VLLM_USE_V1=0");
}

/* The model's repo: the record's hf, else its id, with a note saying why. */
static void model(builder *b, const mdl_catalog *cat)
{
    const cJSON *m = key(b, "model");
    const mdl_model *known = cJSON_IsString(m) ? mdl_catalog_find_model(cat, m->valuestring)
                                               : NULL;
    mdl_model inline_model;
    if (!known) mdl_model_from_json(m, &inline_model);
    const mdl_model *rec = known ? known : &inline_model;
    if (*rec->hf) {
        word(b->c, rec->hf);
    } else if (cJSON_HasObjectItem(m, "hf_config")) {
        word(b->c, rec->id);
        note(b, "the model is named by the folder of %s.model.hf_config ('%s'); set %s.model.hf "
                "to the Hugging Face repo it comes from", b->path, rec->id, b->path);
    } else {
        word(b->c, rec->id);
        note(b, "the model is named by its id ('%s'); set %s.model.hf to the Hugging Face repo "
                "it comes from", rec->id, b->path);
    }
}

/* ---- the flags ---- */

/* TP, PP, and vLLM's expert parallelism, which spans the whole
 * tensor-parallel group (EP = TP x DP, and servesim's replicas are not DP
 * ranks). */
static void parallelism(builder *b)
{
    int tp = (int)number(b, "tensor_parallel"), pp = (int)number(b, "pipeline_parallel");
    int ep = (int)number(b, "expert_parallel");
    flag(b->c, "--tensor-parallel-size", "%d", tp);
    if (pp > 1) flag(b->c, "--pipeline-parallel-size", "%d", pp);
    if (ep == tp && ep > 1) word(b->c, "--enable-expert-parallel");
    else if (ep > 1)
        refuse(b, "%s.expert_parallel: %d of tensor_parallel %d: vLLM's expert parallelism "
                  "(--enable-expert-parallel) spans the whole tensor-parallel group", b->path,
               ep, tp);
}

/* vLLM's block sizes (vllm/config/cache.py BlockSize). */
static bool vllm_block_size(int n)
{
    static const int sizes[] = {1, 8, 16, 32, 64, 128, 256};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (n == sizes[i]) return true;
    return false;
}

/* The scheduler family as vLLM's chunked-prefill switch: V1 chunks
 * (chunked) or admits whole prompts after the decodes (continuous); V0
 * chunks, or runs prefill-only and decode-only steps (prefill_first). */
static void policy(builder *b)
{
    const char *p = string(b, "scheduler.policy");
    bool v1 = b->engine == VLLM_V1;
    if (!strcmp(p, "chunked")) word(b->c, "--enable-chunked-prefill");
    else if (!strcmp(p, v1 ? "continuous" : "prefill_first"))
        word(b->c, "--no-enable-chunked-prefill");
    else
        refuse(b, "%s.scheduler.policy: %s is not a scheduler of vLLM's %s engine (chunked, or %s "
                  "without chunked prefill)", b->path, p, v1 ? "V1" : "V0",
               v1 ? "continuous" : "prefill_first");
}

/* V1 preempts by recompute only; V0 could swap, with swap space per GPU
 * where servesim's is per replica. */
static void preemption(builder *b)
{
    if (strcmp(string(b, "scheduler.preemption"), "swap")) return;
    if (b->engine == VLLM_V1) {
        refuse(b, "%s.scheduler.preemption: swap: vLLM's V1 engine preempts by recompute only",
               b->path);
        return;
    }
    double gpus = number(b, "tensor_parallel") * number(b, "pipeline_parallel");
    flag(b->c, "--preemption-mode", "swap");
    flag(b->c, "--swap-space", "%.10g", number(b, "scheduler.swap_space_gib") / gpus);
}

/* The switches V1 has and V0 lacked: asynchronous scheduling (on by default
 * in vLLM 0.19, so off is said too), and the admission of a whole prompt's
 * blocks, said only when off (vLLM's default, and a flag older releases
 * lack). */
static void v1_switches(builder *b)
{
    bool async = truth(b, "scheduler.async_scheduling");
    bool full = truth(b, "scheduler.reserve_full_isl");
    if (b->engine == VLLM_V1) {
        word(b->c, async ? "--async-scheduling" : "--no-async-scheduling");
        if (!full) word(b->c, "--no-scheduler-reserve-full-isl");
    } else if (async || full) {
        refuse(b, "%s.scheduler.%s: vLLM's V0 engine has no %s", b->path,
               async ? "async_scheduling" : "reserve_full_isl",
               async ? "asynchronous scheduling" : "whole-prompt admission rule");
    }
}

static void scheduler(builder *b)
{
    flag(b->c, "--max-num-seqs", "%.0f", number(b, "scheduler.max_batch"));
    flag(b->c, "--max-num-batched-tokens", "%.0f", number(b, "scheduler.max_batched_tokens"));
    policy(b);
    int block = (int)number(b, "scheduler.block_tokens");
    if (vllm_block_size(block)) flag(b->c, "--block-size", "%d", block);
    else
        refuse(b, "%s.scheduler.block_tokens: %d is not a vLLM block size (1, 8, 16, 32, 64, "
                  "128 or 256)", b->path, block);
    flag(b->c, "--gpu-memory-utilization", "%.10g", number(b, "scheduler.gpu_memory_utilization"));
    word(b->c, truth(b, "scheduler.prefix_caching") ? "--enable-prefix-caching"
                                                    : "--no-enable-prefix-caching");
    if (key(b, "scheduler.kv_blocks"))
        flag(b->c, "--num-gpu-blocks-override", "%.0f", number(b, "scheduler.kv_blocks"));
    preemption(b);
    v1_switches(b);
}

/* fp8 and mxfp4 weights are quantized as vLLM loads the checkpoint (or read
 * from one quantized so); int8 and w4a16 come only from a checkpoint
 * quantized to them, which no flag makes of the model's repo. */
static void precision(builder *b)
{
    const char *q = string(b, "quantization"), *kv = string(b, "kv_cache_dtype");
    if (!strcmp(q, "fp8") || !strcmp(q, "mxfp4")) flag(b->c, "--quantization", "%s", q);
    else if (strcmp(q, "none"))
        refuse(b, "%s.quantization: %s weights come from a checkpoint quantized to them, not "
                  "from a vllm serve flag: name that checkpoint as %s.model.hf and set "
                  "quantization to none", b->path, q, b->path);
    static const char *const ours[] = {"auto", "bf16", "fp16", "fp8"};
    static const char *const vllms[] = {"auto", "bfloat16", "float16", "fp8"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(kv, ours[i])) flag(b->c, "--kv-cache-dtype", "%s", vllms[i]);
}

/* cluster.speculative as vLLM's --speculative-config (vllm/config/
 * speculative.py at v0.11): the method and K; an EAGLE head is a
 * checkpoint of its own, which servesim sizes from the target and does not
 * name; a draft model runs only on V0 (V1 at v0.11 raises
 * NotImplementedError for it, vllm/engine/arg_utils.py). */
static void speculative(builder *b, const mdl_catalog *cat)
{
    if (!key(b, "speculative")) return;
    const char *method = string(b, "speculative.method");
    bool draft = !strcmp(method, "draft");
    if (draft && b->engine == VLLM_V1) {
        refuse(b, "%s.speculative.method: draft: vLLM's V1 engine does not run a draft model "
                  "(eagle, eagle3, mtp and ngram it does)", b->path);
        return;
    }
    cJSON *config = cJSON_CreateObject();
    if (!draft) cJSON_AddStringToObject(config, "method", method);
    const cJSON *dm = key(b, "speculative.draft_model");
    const mdl_model *known = cJSON_IsString(dm) ? mdl_catalog_find_model(cat, dm->valuestring)
                                                : NULL;
    if (draft && known && *known->hf) cJSON_AddStringToObject(config, "model", known->hf);
    else if (draft)
        note(b, "--speculative-config: set \"model\" to the draft model's repo (%s.speculative."
                "draft_model names none)", b->path);
    if (!strcmp(method, "eagle") || !strcmp(method, "eagle3"))
        note(b, "--speculative-config: set \"model\" to the %s head trained for this model "
                "(servesim sized it from the target's dimensions)",
             !strcmp(method, "eagle") ? "EAGLE" : "EAGLE-3");
    cJSON_AddNumberToObject(config, "num_speculative_tokens",
                            number(b, "speculative.num_speculative_tokens"));
    if (key(b, "speculative.draft_tensor_parallel_size"))
        cJSON_AddNumberToObject(config, "draft_tensor_parallel_size",
                                number(b, "speculative.draft_tensor_parallel_size"));
    if (key(b, "speculative.disable_by_batch_size")) {
        cJSON_AddNumberToObject(config, "disable_by_batch_size",
                                number(b, "speculative.disable_by_batch_size"));
        if (b->engine == VLLM_V1)
            note(b, "disable_by_batch_size: vLLM's V1 engine (v0.11) reads it but does not act "
                    "on it; the simulation did");
    }
    char *text = cJSON_PrintUnformatted(config);
    flag(b->c, "--speculative-config", "%s", text);
    free(text);
    cJSON_Delete(config);
    note(b, "the drafts' acceptance is the drafter's and the traffic's, not a flag: compare "
            "vLLM's spec_decode metrics (mean acceptance length) with the scenario's");
}

/* The context the model record gives when the scenario does not limit it:
 * its catalog entry's, or its config.json's; 0 when there is nothing to
 * compare with (a model of the scenario's own). */
static double native_context(const cJSON *m, const mdl_catalog *cat, const char *base_dir)
{
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "id"));
    const mdl_model *known = id ? mdl_catalog_find_model(cat, id) : NULL;
    const char *hf = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "hf_config"));
    if (!hf) return known ? known->max_context : 0;
    char *where = util_path_join(base_dir, hf);
    cJSON *config = NULL;
    util_diag ignored;
    util_diag_init(&ignored);
    double context = mdl_hf_config_read(where, &config, &ignored) ? 0
                                                                   : util_json_number(config,
                                                                                      "max_context",
                                                                                      0);
    util_diag_fini(&ignored);
    cJSON_Delete(config);
    free(where);
    return context;
}

/* --max-model-len when the scenario's model holds less context than its
 * checkpoint (or is a model of the scenario's own); and when vLLM would
 * refuse the token budget: without chunked prefill it must hold a whole
 * max_model_len, where servesim rejects only prompts beyond it. */
static void context(builder *b, const mdl_catalog *cat, const char *base_dir)
{
    const cJSON *m = key(b, "model");
    double ctx = cJSON_IsString(m) ? mdl_catalog_find_model(cat, m->valuestring)->max_context
                                   : util_json_number(m, "max_context", 0);
    double native = cJSON_IsObject(m) ? native_context(m, cat, base_dir) : ctx;
    double budget = number(b, "scheduler.max_batched_tokens");
    bool chunked = !strcmp(string(b, "scheduler.policy"), "chunked");
    if (!chunked && budget < ctx) {
        flag(b->c, "--max-model-len", "%.0f", budget);
        note(b, "--max-model-len %.0f: vLLM without chunked prefill needs the token budget to "
                "hold a whole context; it then bounds prompt + output, where the simulation "
                "bounded the prompt alone by %.0f and the whole by %.0f",
             budget, budget, ctx);
    } else if (native == 0 || ctx < native) {
        flag(b->c, "--max-model-len", "%.0f", ctx);
    }
}

/* Replicas are separate servers: what routed among them is not vLLM's. */
static void balancer(builder *b, const cJSON *scenario)
{
    const char *router = cJSON_GetStringValue(util_json_get(scenario, "cluster.router"));
    if (b->c->replicas > 1)
        note(b, "one vllm serve per replica: servesim routed requests %s across the %d, which a "
                "balancer in front of them must do", router ? router : "", b->c->replicas);
}

int pl_vllm_args(const cJSON *scenario, const mdl_catalog *cat, const char *base_dir,
                 pl_vllm_cmd *out, util_diag *d)
{
    memset(out, 0, sizeof *out);
    util_diag_init(&out->notes);
    builder b = {.c = out, .d = d};
    b.pool = the_pool(scenario, &b.path, d);
    if (!b.pool) return UTIL_EINPUT;
    check_engine(&b);
    if (b.rc) return b.rc;
    const cJSON *gpu = key(&b, "gpu");
    const char *gpu_id = cJSON_IsString(gpu) ? gpu->valuestring
                                             : cJSON_GetStringValue(util_json_get(gpu, "id"));
    out->gpu = util_xstrdup(gpu_id ? gpu_id : "");
    out->replicas = (int)number(&b, "replicas");
    out->gpus_per_replica = (int)(number(&b, "tensor_parallel") * number(&b, "pipeline_parallel"));
    word(out, "vllm");
    word(out, "serve");
    model(&b, cat);
    parallelism(&b);
    scheduler(&b);
    precision(&b);
    speculative(&b, cat);
    context(&b, cat, base_dir);
    balancer(&b, scenario);
    if (b.rc) pl_vllm_cmd_fini(out);
    return b.rc;
}

void pl_vllm_cmd_fini(pl_vllm_cmd *c)
{
    for (int i = 0; i < c->argc; i++) free(c->argv[i]);
    free(c->argv);
    free(c->gpu);
    util_diag_fini(&c->notes);
    memset(c, 0, sizeof *c);
    util_diag_init(&c->notes);
}

int pl_plan_vllm_args(const pl_base *base, const cJSON *overrides, pl_vllm_cmd *out,
                      util_diag *d)
{
    memset(out, 0, sizeof *out);
    util_diag_init(&out->notes);
    cJSON *root = cJSON_Parse(base->json);
    pl_point p = {(cJSON *)overrides, (int64_t)util_json_number(root, "seed", 1), 0};
    cJSON_Delete(root);
    char *json = NULL;
    int rc = pl_point_scenario(base, &p, &json, d);
    if (rc) return rc;
    sim_scenario sc;
    rc = sim_scenario_load(cJSON_Parse(json), base->catalog, base->base_dir, &sc, d);
    free(json);
    if (rc) return rc;
    rc = pl_vllm_args(sc.json, base->catalog, base->base_dir, out, d);
    sim_scenario_fini(&sc);
    return rc;
}

/* ---- the command as text and as JSON ---- */

/* A word as a POSIX shell reads it back: as it is when it holds nothing
 * the shell would change, else in single quotes. */
static char *quoted(const char *w)
{
    if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "-_./:=,+@%") == strlen(w))
        return util_xstrdup(w);
    char *q = util_xstrdup("'");
    for (const char *s = w; *s; s++) {
        char *next = *s == '\'' ? util_xasprintf("%s'\\''", q) : util_xasprintf("%s%c", q, *s);
        free(q);
        q = next;
    }
    char *done = util_xasprintf("%s'", q);
    free(q);
    return done;
}

char *pl_vllm_cmd_line(const pl_vllm_cmd *c)
{
    char *line = util_xstrdup("");
    for (int i = 0; i < c->argc; i++) {
        char *w = quoted(c->argv[i]);
        char *next = util_xasprintf("%s%s%s", line, i ? " " : "", w);
        free(w);
        free(line);
        line = next;
    }
    return line;
}

cJSON *pl_vllm_cmd_json(const pl_vllm_cmd *c)
{
    cJSON *j = cJSON_CreateObject();
    cJSON *argv = cJSON_AddArrayToObject(j, "argv");
    for (int i = 0; i < c->argc; i++) cJSON_AddItemToArray(argv, cJSON_CreateString(c->argv[i]));
    cJSON_AddNumberToObject(j, "replicas", c->replicas);
    cJSON_AddStringToObject(j, "gpu", c->gpu ? c->gpu : "");
    cJSON_AddNumberToObject(j, "gpus_per_replica", c->gpus_per_replica);
    cJSON *notes = cJSON_AddArrayToObject(j, "notes");
    for (int i = 0; i < c->notes.count; i++)
        cJSON_AddItemToArray(notes, cJSON_CreateString(c->notes.msgs[i]));
    return j;
}
