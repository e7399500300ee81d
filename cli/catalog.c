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

#include "mdl.h"
#include "sim.h"

static const char catalog_usage[] =
    "usage: servesim catalog [gpus|models|engines] [--json]\n"
    "\n"
    "Lists the GPUs, models and engine presets of the built-in catalog\n"
    "(models/catalog.json, with the source of every figure in --json).  A scenario\n"
    "names a GPU or model by id or gives an inline object with the same fields; it\n"
    "names an engine with cluster.engine, and any scheduler or host key it sets\n"
    "wins over the preset's (docs/engines.md).  Engine tiers change some defaults\n"
    "on GPUs of at least the tier's memory.\n";

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
    printf("%-15s %7s %6s %6s %8s %9s %9s %10s %8s\n", "id", "layers", "hidden", "heads",
           "kv_heads", "params B", "active B", "KV KiB/tok", "max ctx");
    for (int i = 0; i < mdl_catalog_model_count(c); i++) {
        const mdl_model *m = mdl_catalog_model_at(c, i);
        printf("%-15s %7d %6d %6d %8d %9.2f %9.2f %10.0f %8d\n", m->id, m->layers, m->hidden,
               m->heads, m->kv_heads, m->params / 1e9, m->active_params / 1e9,
               mdl_model_kv_bytes_per_token(m) / 1024, m->max_context);
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
}

typedef enum section { GPUS = 1, MODELS = 2, ENGINES = 4 } section;

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

/* Which sections to list; CLI_CONTINUE, or the exit code. */
static int parse(int argc, char **argv, unsigned *sections, bool *json)
{
    const cli_opt opts[] = {{.name = "json", .kind = CLI_FLAG, .dest = json}, {0}};
    cli_args pos;
    int code = cli_parse("catalog", catalog_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    const char *what = pos.n ? pos.v[0] : "all";
    *sections = !strcmp(what, "all")       ? GPUS | MODELS | ENGINES
                : !strcmp(what, "gpus")    ? GPUS
                : !strcmp(what, "models")  ? MODELS
                : !strcmp(what, "engines") ? ENGINES
                                           : 0;
    util_clip_buf b;
    if (!*sections || pos.n > 1)
        return cli_usage_error("catalog", "expected 'gpus', 'models' or 'engines', got '%s'",
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
    if (sections & ENGINES) print_engines(cat);
}

int cli_catalog(int argc, char **argv)
{
    unsigned sections;
    bool json = false;
    int code = parse(argc, argv, &sections, &json);
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *cat;
    int rc = mdl_catalog_load_default(&cat, &d);
    if (rc) return cli_fail(&d, rc);
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
