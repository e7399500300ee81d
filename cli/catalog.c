/*
 * catalog.c: `servesim catalog` (what hardware, models and serving engines
 * servesim knows) and `servesim keys` (every scenario key, from the schema
 * tables).
 */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "an.h"
#include "mdl.h"
#include "sim.h"

static const char catalog_usage[] =
    "usage: servesim catalog [gpus|models|engines|datasets] [--json]\n"
    "       servesim catalog model SOURCE [--json] [--quantization Q] [--kv-cache-dtype D]\n"
    "                                     [--gpu ID [--tensor-parallel N]]\n"
    "       servesim catalog engine[s] ID [--json]\n"
    "       servesim catalog profile PROFILE.json [--json]\n"
    "\n"
    "Lists the GPUs, models and engine presets of the built-in catalog\n"
    "(models/catalog.json, with the source of every figure in --json).  A scenario\n"
    "names a GPU or model by id or gives an inline object with the same fields; it\n"
    "names an engine with cluster.engine, and any scheduler or host key it sets\n"
    "wins over the preset's (docs/engines.md).  Engine tiers change some defaults\n"
    "on GPUs of at least the tier's memory.\n"
    "\n"
    "catalog model SOURCE (a catalog id, or a Hugging Face config.json or the folder\n"
    "holding one) prints what servesim derives from it, as a run would: parameters\n"
    "in total and per token, weight bytes and KV bytes per token at the given\n"
    "precision (vLLM's --quantization and --kv-cache-dtype), layers and attention.\n"
    "With --gpu, also the KV cache's capacity in tokens on a replica of that GPU.\n"
    "\n"
    "catalog engine ID prints a preset's path of a request, stage by stage -- the\n"
    "front end, the scheduler's step pipeline, the host's time per step, the output\n"
    "-- each a term of the preset with its value and its source (docs/engines.md).\n"
    "\n"
    "catalog profile PROFILE.json prints a calibration profile (servesim calibrate's):\n"
    "the GPU and engine it was fitted on, each coefficient with its standard error,\n"
    "the fit's range, the scenario key it sets and the catalog default it replaces\n"
    "(the GPU's mfu, mbu and iteration_overhead_s, the preset's host times), the\n"
    "runs it was fitted on, and its training and cross-validated errors.  A scenario\n"
    "uses it with cluster.calibration (docs/calibration.md).\n";

static const char keys_usage[] =
    "usage: servesim keys\n"
    "\n"
    "Prints every scenario key as a Markdown table: its type, unit, default, range\n"
    "and meaning.  Any key can be overridden with servesim run --set PATH=VALUE.\n";

/* A dense peak in TFLOP/s, or "-" where the GPU lacks the dtype. */
static const char *peak(double flops, char *buf, size_t n)
{
    if (flops <= 0) return "-";
    snprintf(buf, n, "%.1f", flops / 1e12);
    return buf;
}

static void print_gpus(const mdl_catalog *c)
{
    printf("%-13s %-50s %9s %8s %8s %8s %7s %6s %6s %7s\n", "id", "name", "TFLOP/s",
           "FP8", "FP4", "mem GiB", "TB/s", "TDP W", "idle W", "$/hour");
    for (int i = 0; i < mdl_catalog_gpu_count(c); i++) {
        const mdl_gpu *g = mdl_catalog_gpu_at(c, i);
        char f8[32], f4[32];
        printf("%-13s %-50s %9.1f %8s %8s %8.0f %7.3f %6.0f %6.1f %7.2f\n", g->id, g->name,
               g->flops / 1e12, peak(g->fp8_flops, f8, sizeof f8),
               peak(g->fp4_flops, f4, sizeof f4), g->mem_bytes / 1073741824.0, g->mem_bw / 1e12,
               g->tdp_w, g->idle_w, g->usd_per_hour);
    }
}

static void print_models(const mdl_catalog *c)
{
    printf("%-17s %7s %6s %6s %8s %4s %9s %9s %9s %10s %8s\n", "id", "layers", "hidden", "heads",
           "kv_heads", "attn", "experts", "params B", "active B", "KV KiB/tok", "max ctx");
    for (int i = 0; i < mdl_catalog_model_count(c); i++) {
        const mdl_model *m = mdl_catalog_model_at(c, i);
        char experts[32] = "-";
        if (m->experts > 1)
            snprintf(experts, sizeof experts, "%d/%d%s", m->experts_active, m->experts,
                     m->shared_experts ? "+s" : "");
        printf("%-17s %7d %6d %6d %8d %4s %9s %9.2f %9.2f %10.1f %8d\n", m->id, m->layers,
               m->hidden, m->heads, m->kv_heads, mdl_attentions[m->attention], experts,
               m->params / 1e9, m->active_params / 1e9, mdl_model_kv_bytes_per_token(m) / 1024,
               m->max_context);
    }
}

static double field(const cJSON *o, const char *path)
{
    return util_json_number(o, path, NAN);
}

static const char *text(const cJSON *o, const char *path)
{
    const cJSON *v = util_json_get(o, path);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static const char *yes_no(const cJSON *o, const char *path)
{
    return cJSON_IsTrue(util_json_get(o, path)) ? "yes" : "no";
}

/* One line per preset, its base defaults; each tier on a line below. */
static void print_engines(const mdl_catalog *c)
{
    printf("%-8s %-13s %-14s %6s %7s %5s %6s %5s %9s %9s %8s %9s %9s\n", "id", "version",
           "policy", "batch", "tokens", "block", "prefix", "async", "front ms", "us/token",
           "step ms", "us/seq", "output ms");
    for (int i = 0; i < mdl_catalog_engine_count(c); i++) {
        const cJSON *e = mdl_catalog_engine_json(c, i);
        printf("%-8s %-13.13s %-14s %6.0f %7.0f %5.0f %6s %5s %9.3f %9.2f %8.3f %9.1f %9.3f\n",
               text(e, "id"), text(e, "version"), text(e, "scheduler.policy"),
               field(e, "scheduler.max_batch"), field(e, "scheduler.max_batched_tokens"),
               field(e, "scheduler.block_tokens"), yes_no(e, "scheduler.prefix_caching"),
               yes_no(e, "scheduler.async_scheduling"), 1e3 * field(e, "host.frontend_s"),
               1e6 * field(e, "host.frontend_s_per_token"), 1e3 * field(e, "host.step_s"),
               1e6 * field(e, "host.step_s_per_seq"), 1e3 * field(e, "host.output_s"));
        const cJSON *t;
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(e, "tiers"))
        {
            char *what = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(t, "scheduler"));
            const char *unless = text(t, "unless_name");
            printf("%-8s   from %g GiB%s%s%s: %s\n", "", field(t, "min_memory_gib"),
                   *unless ? " (not '" : "", unless, *unless ? "')" : "", what);
            free(what);
        }
    }
    printf("(servesim catalog engines ID: a preset's stages, each term with its source)\n");
}

/* ---- catalog engine ---- */

/* The stages a request passes through on a preset, in order, each a term
 * of the preset (one or two keys, their sources keyed by the last part). */
static const struct {
    const char *stage, *what;
    const char *keys[2];
} stages[] = {
    {"front end", "from the server taking the request to the engine's queue (HTTP, chat template, "
                  "tokenisation)", {"host.frontend_s", "host.frontend_s_per_token"}},
    {"step pipeline", "which step first runs a queued request, and when a finished one lets go of "
                      "its slot and blocks", {"scheduler.async_scheduling", NULL}},
    {"host per step", "the CPU's scheduling, input preparation and output handling of a step",
     {"host.step_s", "host.step_s_per_seq"}},
    {"output", "from a step's end to its tokens reaching the client (detokenisation, the "
               "streamed chunk)", {"host.output_s", NULL}},
};

/* What the step pipeline key means, in the engine's own terms. */
static const char *pipeline_rule(bool async)
{
    return async ? "asynchronous: step n + 1 is planned while step n runs, so a request queued "
                   "during step n first runs in step n + 2, and one that finishes in step n "
                   "frees its slot and blocks for step n + 2"
                 : "synchronous: step n + 1 is planned after step n's outputs, so a request "
                   "queued during step n runs in step n + 1";
}

typedef struct engine_text {
    const cJSON *e;
} engine_text;

static void print_stage_key(const cJSON *e, const char *key, FILE *out)
{
    const cJSON *v = util_json_get(e, key);
    const char *leaf = strrchr(key, '.') + 1;
    if (!strcmp(leaf, "async_scheduling")) /* the rule it makes, in the engine's own terms */
        fprintf(out, "    %s: %s\n", key, pipeline_rule(cJSON_IsTrue(v)));
    else if (cJSON_IsBool(v)) fprintf(out, "    %s = %s\n", key, cJSON_IsTrue(v) ? "true" : "false");
    else fprintf(out, "    %s = %g s\n", key, cJSON_IsNumber(v) ? v->valuedouble : NAN);
    const char *src = text(cJSON_GetObjectItemCaseSensitive(e, "source"), leaf);
    fprintf(out, "      source: %s\n", *src ? src : "none given");
}

static void print_engine_stages(const void *arg, FILE *out)
{
    const cJSON *e = ((const engine_text *)arg)->e;
    fprintf(out, "%s: %s%s%s\n", text(e, "id"), text(e, "name"), *text(e, "version") ? ", " : "",
            text(e, "version"));
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) {
        fprintf(out, "  %s: %s\n", stages[i].stage, stages[i].what);
        for (int k = 0; k < 2 && stages[i].keys[k]; k++) print_stage_key(e, stages[i].keys[k], out);
    }
    const char *left = text(e, "leaves_out");
    if (*left) fprintf(out, "  left out: %s\n", left);
}

static int catalog_engine(const char *id, bool json, const mdl_catalog *cat, util_diag *d)
{
    int rc = mdl_catalog_check_engine(cat, id, "engine", d);
    if (rc) return rc;
    const cJSON *e = mdl_catalog_find_engine(cat, id);
    if (json) {
        char *out = cJSON_Print(e);
        printf("%s\n", out);
        free(out);
        return UTIL_OK;
    }
    engine_text t = {e};
    an_print_wrapped(print_engine_stages, &t, stdout);
    return UTIL_OK;
}

typedef enum section { GPUS = 1, MODELS = 2, ENGINES = 4, DATASETS = 8 } section;

/* ---- catalog datasets ---- */

/* A built-in dataset's figures, from its pairs: how many, and its prompts'
 * and replies' lengths. */
typedef struct dataset_figures {
    int64_t pairs;
    an_stats prompt, output;
} dataset_figures;

static dataset_figures figures_of(const char *name)
{
    wl_dataset *ds = wl_dataset_create(name);
    dataset_figures f = {.pairs = wl_dataset_size(ds)};
    double *prompt = util_xmalloc((size_t)f.pairs * sizeof *prompt),
           *output = util_xmalloc((size_t)f.pairs * sizeof *output);
    for (int64_t i = 0; i < f.pairs; i++) {
        int32_t p, o;
        wl_dataset_pair(ds, i, &p, &o);
        prompt[i] = p;
        output[i] = o;
    }
    an_stats_compute(prompt, (size_t)f.pairs, &f.prompt);
    an_stats_compute(output, (size_t)f.pairs, &f.output);
    free(prompt);
    free(output);
    wl_dataset_destroy(ds);
    return f;
}

static void print_datasets(void)
{
    printf("%-19s %6s  %-21s %-21s %s\n", "id", "pairs", "prompt mean/p50/p99", "reply mean/p50/p99",
           "source");
    for (int i = 0; wl_dataset_names[i]; i++) {
        dataset_figures f = figures_of(wl_dataset_names[i]);
        char prompt[32], output[32];
        snprintf(prompt, sizeof prompt, "%.0f/%.0f/%.0f", f.prompt.mean, f.prompt.p50, f.prompt.p99);
        snprintf(output, sizeof output, "%.0f/%.0f/%.0f", f.output.mean, f.output.p50, f.output.p99);
        printf("%-19s %6lld  %-21s %-21s %s\n", wl_dataset_names[i], (long long)f.pairs, prompt,
               output, wl_dataset_sources[i]);
    }
    printf("(tokens; \"workload\": {\"dataset\": ID} draws a pair at a time, prompt and reply "
           "together:\n docs/scenario.md, \"Built-in datasets\"; data/datasets/README.md has each "
           "source's file and commit)\n");
}

static cJSON *datasets_json(void)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; wl_dataset_names[i]; i++) {
        dataset_figures f = figures_of(wl_dataset_names[i]);
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "id", wl_dataset_names[i]);
        cJSON_AddNumberToObject(d, "pairs", (double)f.pairs);
        cJSON_AddItemToObject(d, "prompt_tokens", an_stats_json(&f.prompt));
        cJSON_AddItemToObject(d, "output_tokens", an_stats_json(&f.output));
        cJSON_AddStringToObject(d, "source", wl_dataset_sources[i]);
        cJSON_AddItemToArray(a, d);
    }
    return a;
}

static cJSON *entries_json(const mdl_catalog *c, section which)
{
    cJSON *a = cJSON_CreateArray();
    int n = which == GPUS     ? mdl_catalog_gpu_count(c)
            : which == MODELS ? mdl_catalog_model_count(c)
                              : mdl_catalog_engine_count(c);
    for (int i = 0; i < n; i++) {
        const cJSON *e = which == GPUS     ? mdl_catalog_gpu_json(c, i)
                         : which == MODELS ? mdl_catalog_model_json(c, i)
                                           : mdl_catalog_engine_json(c, i);
        cJSON_AddItemToArray(a, cJSON_Duplicate(e, 1));
    }
    return a;
}

/* `catalog model`'s options (and `catalog engine`'s id, `catalog
 * profile`'s file). */
typedef struct model_opts {
    const char *source;
    const char *engine;
    const char *profile;
    int quantization, kv_cache_dtype;
    const char *gpu;
    int tp;
} model_opts;

/* Which sections to list, or the model to derive (mo->source); CLI_CONTINUE,
 * or the exit code. */
static int parse(int argc, char **argv, unsigned *sections, bool *json, model_opts *mo)
{
    const cli_opt opts[] = {
        {.name = "json", .kind = CLI_FLAG, .dest = json},
        {.name = "quantization", .kind = CLI_CHOICE, .dest = &mo->quantization,
         .choices = mdl_quantizations},
        {.name = "kv-cache-dtype", .kind = CLI_CHOICE, .dest = &mo->kv_cache_dtype,
         .choices = mdl_kv_dtypes},
        {.name = "gpu", .kind = CLI_STRING, .dest = &mo->gpu},
        {.name = "tensor-parallel", .kind = CLI_INT, .dest = &mo->tp, .lo = 1, .hi = 64},
        {0}};
    cli_args pos;
    int code = cli_parse("catalog", catalog_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    const char *what = pos.n ? pos.v[0] : "all";
    /* `catalog engines ID` reads as `catalog engine ID` */
    if (!strcmp(what, "engine") || (!strcmp(what, "engines") && pos.n == 2)) {
        if (pos.n != 2) return cli_usage_error("catalog", "engine: expected one ID (a preset)");
        mo->engine = pos.v[1];
        return CLI_CONTINUE;
    }
    bool model_opts_given = mo->quantization || mo->kv_cache_dtype || mo->gpu || mo->tp > 1;
    if (!strcmp(what, "profile")) {
        if (pos.n != 2)
            return cli_usage_error("catalog", "profile: expected one PROFILE.json");
        if (model_opts_given)
            return cli_usage_error("catalog", "--quantization, --kv-cache-dtype, --gpu and "
                                              "--tensor-parallel go with 'catalog model SOURCE'");
        mo->profile = pos.v[1];
        return CLI_CONTINUE;
    }
    if (!strcmp(what, "model")) {
        if (pos.n != 2)
            return cli_usage_error("catalog", "model: expected one SOURCE (a catalog id or a "
                                              "config.json)");
        mo->source = pos.v[1];
        return CLI_CONTINUE;
    }
    if (model_opts_given)
        return cli_usage_error("catalog", "--quantization, --kv-cache-dtype, --gpu and "
                                          "--tensor-parallel go with 'catalog model SOURCE'");
    *sections = !strcmp(what, "all")        ? GPUS | MODELS | ENGINES | DATASETS
                : !strcmp(what, "gpus")     ? GPUS
                : !strcmp(what, "models")   ? MODELS
                : !strcmp(what, "engines")  ? ENGINES
                : !strcmp(what, "datasets") ? DATASETS
                                            : 0;
    util_clip_buf b;
    if (!*sections || pos.n > 1)
        return cli_usage_error("catalog", "expected 'gpus', 'models', 'engines', 'datasets', "
                                          "'model', 'engine' or 'profile', got '%s'",
                               util_clip(what, &b));
    return CLI_CONTINUE;
}

static void print_json(const mdl_catalog *cat, unsigned sections)
{
    static const char *const names[] = {"gpus", "models", "engines"};
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < 3; i++)
        if (sections & (1u << i))
            cJSON_AddItemToObject(o, names[i], entries_json(cat, (section)(1u << i)));
    if (sections & DATASETS) cJSON_AddItemToObject(o, "datasets", datasets_json());
    char *out = cJSON_Print(o);
    printf("%s\n", out);
    free(out);
    cJSON_Delete(o);
}

static void print_text(const mdl_catalog *cat, unsigned sections)
{
    bool first = true;
    if (sections & GPUS) print_gpus(cat), first = false;
    if ((sections & MODELS) && !first) printf("\n");
    if (sections & MODELS) print_models(cat), first = false;
    if ((sections & ENGINES) && !first) printf("\n");
    if (sections & ENGINES) print_engines(cat), first = false;
    if ((sections & DATASETS) && !first) printf("\n");
    if (sections & DATASETS) print_datasets();
}

/* ---- catalog model ---- */

/* The smallest scenario that serves the model as asked: loading it runs
 * the derivation a run uses (config.json, defaults, counts, precision,
 * memory).  Without a GPU it takes the B200, which has every dtype, with
 * one KV block so that no memory sizing applies. */
static cJSON *model_scenario(const model_opts *mo, const mdl_catalog *cat)
{
    cJSON *root = cJSON_CreateObject(), *cluster = cJSON_AddObjectToObject(root, "cluster");
    cJSON_AddStringToObject(cluster, "gpu", mo->gpu ? mo->gpu : "b200");
    if (mdl_catalog_find_model(cat, mo->source)) {
        cJSON_AddStringToObject(cluster, "model", mo->source);
    } else {
        cJSON *m = cJSON_AddObjectToObject(cluster, "model");
        cJSON_AddStringToObject(m, "hf_config", mo->source);
    }
    cJSON_AddNumberToObject(cluster, "tensor_parallel", mo->tp);
    cJSON_AddStringToObject(cluster, "quantization", mdl_quantizations[mo->quantization]);
    cJSON_AddStringToObject(cluster, "kv_cache_dtype", mdl_kv_dtypes[mo->kv_cache_dtype]);
    cJSON *sched = cJSON_AddObjectToObject(cluster, "scheduler");
    if (!mo->gpu) cJSON_AddNumberToObject(sched, "kv_blocks", 1);
    cJSON_AddItemToObject(root, "stop", cJSON_Parse("{\"requests\": 1}"));
    cJSON_AddItemToObject(root, "workload",
                          cJSON_Parse("{\"arrival\": {\"process\": \"poisson\", \"rate_per_s\": 1}, "
                                      "\"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 1}, "
                                      "\"output_tokens\": {\"dist\": \"fixed\", \"value\": 1}}"));
    return root;
}

static const char *attention_words(const mdl_model *m, char *buf, size_t n)
{
    if (m->attention == MDL_ATTN_MLA)
        snprintf(buf, n, "mla, latent %d + rope %d per layer, %d heads", m->kv_lora_rank,
                 m->qk_rope_head_dim, m->heads);
    else
        snprintf(buf, n, "gqa, %d heads, %d KV heads of %d", m->heads, m->kv_heads, m->head_dim);
    return buf;
}

static cJSON *model_json(const sim_pool *p, const model_opts *mo)
{
    const mdl_cost *cm = &p->cost;
    const mdl_model *m = &cm->model;
    mdl_params c;
    mdl_model_count_params(m, &c);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", m->id);
    cJSON_AddNumberToObject(o, "params_b", m->params / 1e9);
    cJSON_AddNumberToObject(o, "active_params_b", m->active_params / 1e9);
    cJSON_AddNumberToObject(o, "counted_params_b", c.total / 1e9);
    cJSON_AddNumberToObject(o, "counted_active_params_b", c.active / 1e9);
    cJSON_AddStringToObject(o, "quantization", mdl_quantizations[mo->quantization]);
    cJSON_AddStringToObject(o, "kv_cache_dtype", mdl_kv_dtypes[mo->kv_cache_dtype]);
    cJSON_AddNumberToObject(o, "bytes_per_weight", m->weight_bytes_per_param);
    const char *form = mdl_weight_only_form((mdl_quant)mo->quantization, &cm->gpu);
    if (form) cJSON_AddStringToObject(o, "weight_only", form);
    cJSON_AddNumberToObject(o, "weight_bytes", cm->weight_bytes);
    cJSON_AddNumberToObject(o, "kv_bytes_per_token", cm->kv_bytes_per_token);
    cJSON_AddNumberToObject(o, "layers", m->layers);
    cJSON_AddNumberToObject(o, "moe_layers", m->experts > 1 ? m->moe_layers : 0);
    cJSON_AddStringToObject(o, "attention", mdl_attentions[m->attention]);
    cJSON_AddNumberToObject(o, "sliding_window", m->sliding_window);
    cJSON_AddNumberToObject(o, "window_layers", cm->window_layers);
    if (mo->gpu) {
        cJSON_AddStringToObject(o, "gpu", cm->gpu.id);
        cJSON_AddNumberToObject(o, "tensor_parallel", p->tensor_parallel);
        cJSON_AddNumberToObject(o, "kv_capacity_tokens", (double)p->kv_blocks * p->block_tokens);
    }
    return o;
}

static void print_model_text(const sim_pool *p, const cJSON *obj, const model_opts *mo)
{
    const mdl_cost *cm = &p->cost;
    const mdl_model *m = &cm->model;
    mdl_params c;
    mdl_model_count_params(m, &c);
    char buf[128];
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(obj, "source");
    printf("model               %s%s%s\n", m->id, *m->name ? ", " : "", m->name);
    if (cJSON_IsString(src) && *src->valuestring) printf("source              %s\n", src->valuestring);
    printf("params_b            %.2f (counted from the dimensions: %.2f)\n", m->params / 1e9,
           c.total / 1e9);
    printf("active_params_b     %.2f (counted: %.2f)\n", m->active_params / 1e9, c.active / 1e9);
    printf("layers              %d", m->layers);
    if (m->experts > 1)
        printf(" (%d MoE: %d experts, %d per token, %d shared; %d dense)", m->moe_layers,
               m->experts, m->experts_active, m->shared_experts, m->layers - m->moe_layers);
    printf(", hidden %d, vocab %d\n", m->hidden, m->vocab);
    printf("attention           %s\n", attention_words(m, buf, sizeof buf));
    if (cm->window_layers)
        printf("sliding window      %d tokens on %d of %d layers\n", m->sliding_window,
               cm->window_layers, m->layers);
    printf("quantization        %s: %.4g byte%s per weight", mdl_quantizations[mo->quantization],
           m->weight_bytes_per_param, m->weight_bytes_per_param == 1 ? "" : "s");
    const char *form = mdl_weight_only_form((mdl_quant)mo->quantization, &cm->gpu);
    if (form)
        printf(", %s on %s: the engine dequantizes to bf16 in its kernels, so the FLOPs run at "
               "the bf16 peak", mdl_weight_only_words(form), cm->gpu.id);
    printf("\n");
    printf("kv_cache_dtype      %s: %.4g byte%s per element\n", mdl_kv_dtypes[mo->kv_cache_dtype],
           m->kv_bytes_per_elem, m->kv_bytes_per_elem == 1 ? "" : "s");
    printf("weight_bytes        %.0f (%.2f GB)\n", cm->weight_bytes, cm->weight_bytes / 1e9);
    printf("kv_bytes_per_token  %.0f (%.1f KiB)\n", cm->kv_bytes_per_token,
           cm->kv_bytes_per_token / 1024);
    if (mo->gpu)
        printf("kv capacity         %lld tokens on %d x %s\n",
               (long long)p->kv_blocks * p->block_tokens, p->tensor_parallel, cm->gpu.id);
}

static int catalog_model(const model_opts *mo, bool json, const mdl_catalog *cat, util_diag *d)
{
    struct stat st;
    if (!mdl_catalog_find_model(cat, mo->source) && stat(mo->source, &st) != 0) {
        const char *ids[64];
        int n = 0;
        for (int i = 0; i < mdl_catalog_model_count(cat) && n < 63; i++)
            ids[n++] = mdl_catalog_model_at(cat, i)->id;
        ids[n] = NULL;
        util_diag_unknown(d, "catalog model", "model", mo->source, ids);
        return util_diag_add(d, "catalog model: and no file or folder '%s' holds a config.json",
                             mo->source);
    }
    sim_scenario sc;
    int rc = sim_scenario_load(model_scenario(mo, cat), cat, NULL, &sc, d);
    if (!rc) {
        util_diag_print(&sc.warnings, stderr, "servesim: warning");
        const cJSON *obj = util_json_get(sc.json, "cluster.model");
        for (int i = 0; cJSON_IsString(obj) && i < mdl_catalog_model_count(cat); i++)
            if (!strcmp(mdl_catalog_model_at(cat, i)->id, obj->valuestring))
                obj = mdl_catalog_model_json(cat, i); /* the entry, sources and all */
        if (json) {
            cJSON *o = model_json(&sc.pools[0], mo);
            cJSON_AddItemToObject(o, "model", cJSON_Duplicate(obj, 1));
            char *out = cJSON_Print(o);
            printf("%s\n", out);
            free(out);
            cJSON_Delete(o);
        } else {
            print_model_text(&sc.pools[0], obj, mo);
        }
    }
    sim_scenario_fini(&sc);
    return rc;
}

/* ---- catalog profile ---- */

/* The scenario key a coefficient sets, "cluster.cost_model.mfu"; caller
 * frees. */
static char *coef_key(mdl_coef c)
{
    return util_xasprintf("cluster.%s.%s", mdl_coefs[c].section, mdl_coefs[c].key);
}

/* Where a coefficient's default comes from: the GPU's entry, the preset's,
 * or the key's own default. */
static const char *default_source(const mdl_profile *p, mdl_coef c)
{
    if (c == MDL_COEF_ATTN_EFFICIENCY) return "the key's default";
    return strcmp(mdl_coefs[c].section, "host") ? p->gpu : p->engine;
}

/* The profile as read, each coefficient with the key it sets and the
 * default it replaces. */
static cJSON *profile_json(const mdl_profile *p, const char *path, const mdl_catalog *cat)
{
    cJSON *o = cJSON_Duplicate(p->json, 1);
    cJSON_AddStringToObject(o, "path", path);
    cJSON *coefs = cJSON_GetObjectItemCaseSensitive(o, "coefficients");
    for (int i = 0; i < MDL_N_COEFS; i++) {
        cJSON *c = cJSON_GetObjectItemCaseSensitive(coefs, mdl_coefs[i].name);
        if (!c) continue;
        char *key = coef_key((mdl_coef)i);
        cJSON_AddStringToObject(c, "sets", key);
        cJSON_AddNumberToObject(c, "replaces", mdl_profile_default(p, cat, (mdl_coef)i));
        cJSON_AddStringToObject(c, "replaces_from", default_source(p, (mdl_coef)i));
        free(key);
    }
    return o;
}

/* A number, or "-" where the profile gives none. */
static const char *maybe(double v, char *buf, size_t n)
{
    if (isnan(v)) return "-";
    snprintf(buf, n, "%.4g", v);
    return buf;
}

static void print_coefficients(const mdl_profile *p, const mdl_catalog *cat, FILE *out)
{
    fprintf(out, "%-22s %9s %11s %15s   %s\n", "coefficient", "value", "stderr", "fit range",
            "replaces");
    for (int i = 0; i < MDL_N_COEFS; i++) {
        const mdl_fitted *f = &p->coef[i];
        if (!f->set) continue;
        char err[32] = "-", lo[32], hi[32], range[72];
        if (!isnan(f->err)) snprintf(err, sizeof err, "+- %.2g", f->err);
        snprintf(range, sizeof range, "[%s, %s]", maybe(f->lo, lo, sizeof lo),
                 maybe(f->hi, hi, sizeof hi));
        fprintf(out, "  %-20s %9.4g %11s %15s   %.4g (%s)\n", mdl_coefs[i].name, f->value, err,
                range, mdl_profile_default(p, cat, (mdl_coef)i), default_source(p, (mdl_coef)i));
    }
    fprintf(out, "  (each sets the key of its name in cluster.cost_model, overhead_s its\n"
                 "   iteration_overhead_s, or in cluster.host)\n");
}

static void print_fitted_on(const cJSON *runs, FILE *out)
{
    fprintf(out, "fitted on %d run%s%s\n", cJSON_GetArraySize(runs),
            cJSON_GetArraySize(runs) == 1 ? "" : "s", cJSON_GetArraySize(runs) ? ":" : "");
    const cJSON *r;
    cJSON_ArrayForEach(r, runs)
    {
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(r, "requests");
        fprintf(out, "  %s (%s): %s", *text(r, "name") ? text(r, "name") : "-",
                *text(r, "source") ? text(r, "source") : "no source given",
                *text(r, "model") ? text(r, "model") : "model not given");
        if (cJSON_IsNumber(req)) fprintf(out, ", %.0f requests", req->valuedouble);
        fprintf(out, "\n");
    }
}

/* One error as printed: a number to 3 digits, anything else as JSON. */
static void print_error_cell(const cJSON *v, FILE *out)
{
    if (cJSON_IsNumber(v)) {
        fprintf(out, " %14.3g", v->valuedouble);
        return;
    }
    char *t = v ? cJSON_PrintUnformatted(v) : util_xstrdup("-");
    util_clip_buf cb;
    fprintf(out, " %14s", util_clip(t, &cb));
    free(t);
}

/* The training and cross-validated errors side by side, metric by metric:
 * the training's first, then any only the cross-validation has. */
static void print_errors(const cJSON *prof, FILE *out)
{
    const cJSON *train = cJSON_GetObjectItemCaseSensitive(prof, "training_error_pct");
    const cJSON *cv = cJSON_GetObjectItemCaseSensitive(prof, "cv_error_pct");
    const cJSON *folds = cJSON_GetObjectItemCaseSensitive(prof, "folds");
    if (!(train && train->child) && !(cv && cv->child)) return;
    char head[48] = "cross-valid.";
    if (cJSON_IsNumber(folds)) snprintf(head, sizeof head, "cv, %.0f folds", folds->valuedouble);
    fprintf(out, "%-22s %14s %14s\n", "error (%)", "training", head);
    for (int pass = 0; pass < 2; pass++) {
        for (const cJSON *k = (pass ? cv : train) ? (pass ? cv : train)->child : NULL; k;
             k = k->next) {
            if (pass && cJSON_GetObjectItemCaseSensitive(train, k->string)) continue;
            fprintf(out, "  %-20s", k->string);
            print_error_cell(cJSON_GetObjectItemCaseSensitive(train, k->string), out);
            print_error_cell(cJSON_GetObjectItemCaseSensitive(cv, k->string), out);
            fprintf(out, "\n");
        }
    }
}

/* What else the profile says of its fit (the fitting's counts), one line. */
static void print_fit_extras(const cJSON *prof, FILE *out)
{
    static const char *const known[] = {"servesim_profile", "gpu", "engine", "coefficients",
                                        "fitted_on", "training_error_pct", "cv_error_pct",
                                        "folds", NULL};
    bool any = false;
    for (const cJSON *k = prof->child; k; k = k->next) {
        const char *const *n = known;
        while (*n && strcmp(*n, k->string)) n++;
        if (*n) continue;
        char *v = cJSON_PrintUnformatted(k);
        util_clip_buf kb, vb;
        fprintf(out, "%s %s %s", any ? "," : "fit:", util_clip(k->string, &kb), util_clip(v, &vb));
        free(v);
        any = true;
    }
    if (any) fprintf(out, "\n");
}

static int catalog_profile(const char *path, bool json, const mdl_catalog *cat, util_diag *d)
{
    mdl_profile p;
    int rc = mdl_profile_read(path, cat, &p, d);
    if (rc) return rc;
    if (json) {
        cJSON *o = profile_json(&p, path, cat);
        char *t = cJSON_Print(o);
        printf("%s\n", t);
        free(t);
        cJSON_Delete(o);
    } else {
        util_clip_buf cb;
        printf("profile %s: fitted on %s (%s) with %s\n", util_clip_path(path, &cb), p.gpu,
               mdl_catalog_find_gpu(cat, p.gpu)->name, p.engine);
        print_coefficients(&p, cat, stdout);
        print_fitted_on(cJSON_GetObjectItemCaseSensitive(p.json, "fitted_on"), stdout);
        print_errors(p.json, stdout);
        print_fit_extras(p.json, stdout);
        printf("(a scenario uses it with cluster.calibration; a key the scenario sets wins)\n");
    }
    mdl_profile_fini(&p);
    return UTIL_OK;
}

int cli_catalog(int argc, char **argv)
{
    unsigned sections = 0;
    bool json = false;
    model_opts mo = {.tp = 1};
    int code = parse(argc, argv, &sections, &json, &mo);
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *cat;
    int rc = mdl_catalog_load_default(&cat, &d);
    if (rc) return cli_fail(&d, rc);
    if (mo.source || mo.engine || mo.profile) {
        rc = mo.source    ? catalog_model(&mo, json, cat, &d)
             : mo.profile ? catalog_profile(mo.profile, json, cat, &d)
                          : catalog_engine(mo.engine, json, cat, &d);
        mdl_catalog_destroy(cat);
        code = rc ? cli_fail(&d, rc) : CLI_EXIT_OK;
        util_diag_fini(&d);
        return code;
    }
    if (json) print_json(cat, sections);
    else print_text(cat, sections);
    mdl_catalog_destroy(cat);
    util_diag_fini(&d);
    return CLI_EXIT_OK;
}

int cli_keys(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
        return fputs(keys_usage, stdout), CLI_EXIT_OK;
    util_clip_buf b;
    if (argc > 1) return cli_usage_error("keys", "unexpected argument '%s'", util_clip(argv[1], &b));
    util_schema_doc(sim_scenario_fields, "", stdout);
    return CLI_EXIT_OK;
}
