/*
 * catalog.c: `servesim catalog` (what hardware and models servesim knows)
 * and `servesim keys` (every scenario key, from the schema tables).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mdl.h"
#include "sim.h"

static const char catalog_usage[] =
    "usage: servesim catalog [gpus|models] [--json]\n"
    "\n"
    "Lists the GPUs and models of the built-in catalog (models/catalog.json, with\n"
    "the source of every figure in --json).  A scenario names them by id, or gives\n"
    "an inline object with the same fields.\n";

static const char keys_usage[] =
    "usage: servesim keys\n"
    "\n"
    "Prints every scenario key as a Markdown table: its type, unit, default, range\n"
    "and meaning.  Any key can be overridden with servesim run --set PATH=VALUE.\n";

static void print_gpus(const mdl_catalog *c)
{
    printf("%-13s %-50s %9s %8s %7s %6s %6s %7s\n", "id", "name", "TFLOP/s", "mem GiB",
           "TB/s", "TDP W", "idle W", "$/hour");
    for (int i = 0; i < mdl_catalog_gpu_count(c); i++) {
        const mdl_gpu *g = mdl_catalog_gpu_at(c, i);
        printf("%-13s %-50s %9.1f %8.0f %7.3f %6.0f %6.1f %7.2f\n", g->id, g->name,
               g->flops / 1e12, g->mem_bytes / 1073741824.0, g->mem_bw / 1e12, g->tdp_w,
               g->idle_w, g->usd_per_hour);
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

static cJSON *entries_json(const mdl_catalog *c, bool gpus)
{
    cJSON *a = cJSON_CreateArray();
    int n = gpus ? mdl_catalog_gpu_count(c) : mdl_catalog_model_count(c);
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_Duplicate(gpus ? mdl_catalog_gpu_json(c, i)
                                                     : mdl_catalog_model_json(c, i), 1));
    return a;
}

/* Which sections to list; CLI_CONTINUE, or the exit code. */
static int parse(int argc, char **argv, bool *gpus, bool *models, bool *json)
{
    const cli_opt opts[] = {{.name = "json", .kind = CLI_FLAG, .dest = json}, {0}};
    cli_args pos;
    int code = cli_parse("catalog", catalog_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    const char *what = pos.n ? pos.v[0] : "all";
    *gpus = !strcmp(what, "gpus") || !strcmp(what, "all");
    *models = !strcmp(what, "models") || !strcmp(what, "all");
    util_clip_buf b;
    if ((!*gpus && !*models) || pos.n > 1)
        return cli_usage_error("catalog", "expected 'gpus' or 'models', got '%s'",
                               util_clip(what, &b));
    return CLI_CONTINUE;
}

int cli_catalog(int argc, char **argv)
{
    bool gpus, models, json = false;
    int code = parse(argc, argv, &gpus, &models, &json);
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *cat;
    int rc = mdl_catalog_load_default(&cat, &d);
    if (rc) return cli_fail(&d, rc);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        if (gpus) cJSON_AddItemToObject(o, "gpus", entries_json(cat, true));
        if (models) cJSON_AddItemToObject(o, "models", entries_json(cat, false));
        char *text = cJSON_Print(o);
        printf("%s\n", text);
        free(text);
        cJSON_Delete(o);
    } else {
        if (gpus) print_gpus(cat);
        if (gpus && models) printf("\n");
        if (models) print_models(cat);
    }
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
