/*
 * scenario.c: the scenario file's schema and its translation into the typed
 * sim_scenario.  The schema tables here (with those of models/ and
 * workloads/ for their sections) are the single description of every key:
 * validation, defaults and `servesim keys` all read them.
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int check_stop(cJSON *stop, const char *path, void *ctx, util_diag *d)
{
    if (!cJSON_GetObjectItemCaseSensitive(stop, "requests") &&
        !cJSON_GetObjectItemCaseSensitive(stop, "duration_s"))
        return util_diag_add(d, "%s: set requests, duration_s or both (arrivals stop at "
                                "whichever comes first)", path);
    return UTIL_OK;
}

static const util_field stop_fields[] = {
    {.key = "requests", .type = UTIL_T_INTEGER, .unit = "requests", .min = 1, .max = 1e13,
     .doc = "arrivals stop after this many requests"},
    {.key = "duration_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 1e9,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "arrivals stop at this simulated time"},
    {0},
};

static const util_field scheduler_fields[] = {
    {.key = "max_batch", .type = UTIL_T_INTEGER, .unit = "sequences", .def = "256", .min = 1,
     .max = 1e6, .doc = "most sequences in one iteration (vLLM max_num_seqs)"},
    {.key = "max_batched_tokens", .type = UTIL_T_INTEGER, .unit = "tokens", .def = "8192",
     .min = 1, .max = 1e9,
     .doc = "most prompt tokens prefilled in one iteration (vLLM max_num_batched_tokens)"},
    {.key = "gpu_memory_utilization", .type = UTIL_T_NUMBER, .def = "0.9", .min = 0, .max = 1,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "share of GPU memory for weights and KV cache"},
    {0},
};

static const util_field cluster_fields[] = {
    {.key = "replicas", .type = UTIL_T_INTEGER, .def = "1", .min = 1, .max = 1e5,
     .doc = "identical replicas; requests are dispatched round-robin"},
    {.key = "gpu", .type = UTIL_T_NAME_OR_OBJECT, .sub = mdl_gpu_fields, .flags = UTIL_REQUIRED,
     .check = mdl_check_gpu_id, .doc = "catalog id (`servesim catalog gpus`) or an inline GPU"},
    {.key = "model", .type = UTIL_T_NAME_OR_OBJECT, .sub = mdl_model_fields,
     .flags = UTIL_REQUIRED, .check = mdl_check_model_id,
     .doc = "catalog id (`servesim catalog models`) or an inline model"},
    {.key = "scheduler", .type = UTIL_T_OBJECT, .sub = scheduler_fields,
     .doc = "continuous (iteration-level) batching limits"},
    {.key = "cost_model", .type = UTIL_T_UNION, .un = &mdl_cost_schema,
     .def = "{\"kind\": \"roofline\"}", .doc = "how long one iteration takes"},
    {0},
};

static const util_field slo_fields[] = {
    {.key = "ttft_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 1e9,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "time-to-first-token target per request"},
    {.key = "tpot_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 1e9,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "time-per-output-token target (first token excluded)"},
    {.key = "e2e_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 1e9,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "end-to-end latency target per request"},
    {0},
};

const util_field sim_scenario_fields[] = {
    {.key = "name", .type = UTIL_T_STRING, .def = "\"scenario\"",
     .doc = "label stored with the run (servesim run: the file's name without .json)"},
    {.key = "seed", .type = UTIL_T_INTEGER, .def = "1", .min = 0, .max = 9007199254740991.0,
     .doc = "master seed; every random stream derives from it"},
    {.key = "stop", .type = UTIL_T_OBJECT, .sub = stop_fields, .flags = UTIL_REQUIRED,
     .check = check_stop, .doc = "when arrivals stop; requests in flight then finish"},
    {.key = "warmup_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0, .max = 1e9,
     .doc = "requests arriving earlier are simulated and stored but left out of the report"},
    {.key = "cluster", .type = UTIL_T_OBJECT, .sub = cluster_fields, .flags = UTIL_REQUIRED,
     .doc = "the serving cluster"},
    {.key = "workload", .type = UTIL_T_OBJECT, .sub = wl_workload_fields,
     .flags = UTIL_REQUIRED, .doc = "the traffic"},
    {.key = "slo", .type = UTIL_T_OBJECT, .sub = slo_fields,
     .doc = "per-request targets; each is optional"},
    {0},
};

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* A GPU or model is given by catalog id or inline. */
static void resolve_gpu(const cJSON *v, const mdl_catalog *cat, mdl_gpu *out)
{
    if (cJSON_IsString(v)) *out = *mdl_catalog_find_gpu(cat, v->valuestring);
    else mdl_gpu_from_json(v, out);
}

static void resolve_model(const cJSON *v, const mdl_catalog *cat, mdl_model *out)
{
    if (cJSON_IsString(v)) *out = *mdl_catalog_find_model(cat, v->valuestring);
    else mdl_model_from_json(v, out);
}

static int build(sim_scenario *sc, const mdl_catalog *cat, const char *base_dir, util_diag *d)
{
    cJSON *root = sc->json, *cluster = cJSON_GetObjectItemCaseSensitive(root, "cluster");
    const cJSON *sched = get(cluster, "scheduler");
    sc->name = get(root, "name")->valuestring;
    sc->seed = (uint64_t)get(root, "seed")->valuedouble;
    sc->stop_requests = (int64_t)util_json_number(root, "stop.requests", 0);
    sc->stop_duration_s = util_json_number(root, "stop.duration_s", 0);
    sc->warmup_s = get(root, "warmup_s")->valuedouble;
    sc->replicas = (int)get(cluster, "replicas")->valuedouble;
    sc->max_batch = (int)get(sched, "max_batch")->valuedouble;
    sc->max_batched_tokens = (int64_t)get(sched, "max_batched_tokens")->valuedouble;
    sc->gpu_memory_utilization = get(sched, "gpu_memory_utilization")->valuedouble;

    mdl_gpu gpu;
    mdl_model model;
    resolve_gpu(get(cluster, "gpu"), cat, &gpu);
    resolve_model(get(cluster, "model"), cat, &model);
    int rc = mdl_cost_init(&sc->cost, cJSON_GetObjectItemCaseSensitive(cluster, "cost_model"),
                           &gpu, &model, "cluster.cost_model", base_dir, d);
    if (mdl_kv_capacity_tokens(&gpu, &model, sc->gpu_memory_utilization, "cluster.model",
                               &sc->kv_capacity_tokens, d))
        rc = UTIL_EINPUT;
    if (wl_spec_from_json(get(root, "workload"), "workload", &sc->workload, d)) rc = UTIL_EINPUT;
    return rc;
}

int sim_scenario_load(cJSON *root, const mdl_catalog *catalog, const char *base_dir,
                      sim_scenario *out, util_diag *d)
{
    memset(out, 0, sizeof *out);
    out->json = root;
    if (!cJSON_IsObject(root)) return util_diag_add(d, "scenario: expected a JSON object");
    if (util_schema_apply(sim_scenario_fields, root, "", (void *)catalog, d)) return UTIL_EINPUT;
    return build(out, catalog, base_dir, d);
}

void sim_scenario_fini(sim_scenario *sc)
{
    if (!sc) return;
    mdl_cost_fini(&sc->cost);
    cJSON_Delete(sc->json);
    memset(sc, 0, sizeof *sc);
}
