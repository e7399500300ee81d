/*
 * fuzz_hfconfig.c: bytes as a Hugging Face config.json.  The input is parsed
 * as JSON and read with mdl_hf_config_model, as `cluster.model.hf_config`
 * and `servesim catalog model` read a file; a model it gives is then served
 * by a one-pool scenario through sim_scenario_load, so that whatever the
 * reader derives meets the model schema, the parameter count and the cost
 * model's set-up.
 *
 * Beyond "no crash, no leak", it checks the error convention (a failure is
 * UTIL_EINPUT with at least one message) and that a model that loads has
 * parameters and KV bytes to show for it.
 */
#include "fuzz_catalog.h"

#include "sim.h"

static mdl_catalog *catalog;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    catalog = fuzz_catalog("fuzz_hfconfig");
    return 0;
}

/* A scenario serving model (taken) with one KV block, so that no memory
 * sizing can refuse a model too large for the GPU. */
static cJSON *serving(cJSON *model)
{
    cJSON *root = cJSON_Parse(
        "{\"stop\": {\"requests\": 1}, \"cluster\": {\"gpu\": \"b200\", \"scheduler\": "
        "{\"kv_blocks\": 1}}, \"workload\": {\"arrival\": {\"process\": \"poisson\", "
        "\"rate_per_s\": 1}, \"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 1}, "
        "\"output_tokens\": {\"dist\": \"fixed\", \"value\": 1}}}");
    cJSON_AddItemToObject(cJSON_GetObjectItem(root, "cluster"), "model", model);
    return root;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    cJSON *config = NULL, *model = NULL;
    util_diag d;
    util_diag_init(&d);
    if (!util_json_parse(text, "config.json", &config, &d)) {
        int rc = mdl_hf_config_model(config, "config.json", &model, &d);
        fuzz_show(&d, rc ? "rejected" : "read");
        FUZZ_CHECK(rc == 0 ? model != NULL : (rc == UTIL_EINPUT && d.count > 0 && !model));
        if (!rc) {
            sim_scenario sc;
            util_diag_clear(&d);
            rc = sim_scenario_load(serving(model), catalog, NULL, &sc, &d);
            fuzz_show(&d, rc ? "refused" : "served");
            FUZZ_CHECK(rc == 0 || (rc == UTIL_EINPUT && d.count > 0));
            if (!rc) {
                const mdl_cost *cm = &sc.pools[0].cost;
                FUZZ_CHECK(cm->model.params > 0 && cm->model.active_params > 0);
                FUZZ_CHECK(cm->kv_bytes_per_token > 0 && cm->weight_bytes > 0);
            }
            sim_scenario_fini(&sc);
        }
        cJSON_Delete(config);
    }
    util_diag_fini(&d);
    free(text);
    return 0;
}
