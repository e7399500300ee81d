/*
 * fuzz_scenario.c: bytes as a scenario file.  The input is parsed as JSON
 * (util_json_parse) and loaded with sim_scenario_load against the catalog
 * compiled into the program, as `servesim run` does.  Files the scenario
 * names are relative to the trace harness's seed folder, so a scenario can
 * replay a small trace or take an empirical length distribution from one.
 *
 * Beyond "no crash, no leak", it checks the error convention (a failure is
 * UTIL_EINPUT or UTIL_EFAIL with at least one message) and that the
 * effective scenario a load leaves behind loads again: defaults filled in
 * place must themselves be valid.
 */
#include "fuzz_catalog.h"

#include "sim.h"

static mdl_catalog *catalog;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    catalog = fuzz_catalog("fuzz_scenario");
    return 0;
}

/* Loads root (taken over); 0 or the status, after checking the convention. */
static int load(cJSON *root, sim_scenario *sc, util_diag *d)
{
    int rc = sim_scenario_load(root, catalog, FUZZ_FILES_DIR, sc, d);
    fuzz_show(d, rc ? "rejected" : "loaded");
    FUZZ_CHECK(rc == 0 || ((rc == UTIL_EINPUT || rc == UTIL_EFAIL) && d->count > 0));
    if (!rc) FUZZ_CHECK(sc->n_pools >= 1 && sc->replicas >= 1 && sc->workload.n_classes >= 1);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    cJSON *root;
    util_diag d;
    util_diag_init(&d);
    if (!fuzz_names_device(text) && !util_json_parse(text, "fuzz.json", &root, &d)) {
        sim_scenario sc;
        if (!load(root, &sc, &d)) {
            /* the effective scenario, as recorded with the run, loads again */
            sim_scenario again;
            util_diag_clear(&d);
            int rc = load(cJSON_Duplicate(sc.json, 1), &again, &d);
            if (rc) util_diag_print(&d, stderr, "reload");
            FUZZ_CHECK(rc == 0);
            sim_scenario_fini(&again);
        }
        sim_scenario_fini(&sc);
    }
    util_diag_fini(&d);
    free(text);
    return 0;
}
