/*
 * fuzz_set.c: bytes as `--set` overrides.  The input is split at newlines
 * into at most eight PATH=VALUE assignments, applied with util_json_set to a
 * copy of examples/quickstart.json (compiled in, so the harness runs from
 * any folder), and the result is loaded with sim_scenario_load, as
 * `servesim run quickstart.json --set ...` would.
 *
 * It checks the error convention of both calls: 0, or a negative status
 * with at least one message.
 */
#include "fuzz.h"

#include <string.h>

#include "sim.h"

#define MAX_SETS 8

extern const char fuzz_quickstart_json[];

static mdl_catalog *catalog;
static cJSON *quickstart;

static void drop_globals(void)
{
    mdl_catalog_destroy(catalog);
    cJSON_Delete(quickstart);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    util_diag d;
    util_diag_init(&d);
    if (mdl_catalog_load_default(&catalog, &d) ||
        util_json_parse(fuzz_quickstart_json, "quickstart.json", &quickstart, &d)) {
        util_diag_print(&d, stderr, "fuzz_set");
        abort();
    }
    util_diag_fini(&d);
    atexit(drop_globals);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (fuzz_names_device(text)) {
        free(text);
        return 0;
    }
    cJSON *root = cJSON_Duplicate(quickstart, 1);
    util_diag d;
    util_diag_init(&d);
    char *save = NULL;
    int n = 0;
    for (char *line = strtok_r(text, "\n", &save); line && n < MAX_SETS;
         line = strtok_r(NULL, "\n", &save), n++) {
        int before = d.count;
        int rc = util_json_set(root, line, &d);
        FUZZ_CHECK(rc == 0 || (rc < 0 && d.count > before));
    }
    /* loaded even when an override failed: the validator must take any JSON */
    sim_scenario sc;
    int before = d.count;
    int rc = sim_scenario_load(root, catalog, FUZZ_FILES_DIR, &sc, &d);
    fuzz_show(&d, rc ? "rejected" : "loaded");
    FUZZ_CHECK(rc == 0 || (rc < 0 && d.count > before));
    sim_scenario_fini(&sc);
    util_diag_fini(&d);
    free(text);
    return 0;
}
