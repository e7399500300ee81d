/*
 * measured.c: `servesim import` and `servesim replay` -- a benchmark tool's
 * measured runs into a servesim database, and each replayed beside it.
 * Reading the formats, settling the engine settings and comparing are
 * validate/'s (val_import, val_settle, val_compare); docs/calibration.md
 * walks through both commands.
 *
 * Nothing is written until every file has been read and every run settled
 * (and, for a replay, its scenario loaded): a bad file leaves the database
 * as it was.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"
#include "val.h"

static const char import_usage[] =
    "usage: servesim import FILE... -o FILE.db [--scenario S.json] [--set PATH=VALUE]...\n"
    "                       [--unset PATH]...\n"
    "\n"
    "Reads measured runs and stores each as a run whose status is `measured`, with\n"
    "every request it has. FILE is one of:\n"
    "  vllm bench serve --save-result --save-detailed JSON\n"
    "  an inference-perf report folder (or one of its *_lifecycle_metrics.json)\n"
    "  GenAI-Perf's profile_export*.json; AIPerf's profile_export.jsonl (or its folder)\n"
    "  LLMServingSim's folder of requests.jsonl and meta.json\n"
    "  servesim's measured-run JSON (docs/calibration.md)\n"
    "The engine settings come from what the file recorded, else from --scenario and\n"
    "--set; the import says which it could not find.\n"
    "\n"
    "  -o FILE.db          the database to store the runs in (created if absent)\n"
    "  --scenario S.json   the engine and workload as they were run, for what the file\n"
    "                      did not record (a recorded setting it contradicts is an error)\n"
    "  --set PATH=VALUE    override one key after that (repeatable)\n"
    "  --unset PATH        remove one key, before any --set (repeatable)\n"
    "  --json              print the stored runs as JSON\n";

static const char replay_usage[] =
    "usage: servesim replay MEASURED -o FILE.db [--run ID] [--scenario S.json]\n"
    "                       [--set PATH=VALUE]... [--unset PATH]... [--json]\n"
    "\n"
    "Builds the scenario of a measured run -- its arrivals as a trace, its lengths as\n"
    "measured, its engine settings as recorded -- simulates it, stores both runs side\n"
    "by side in FILE.db and prints the comparison on the clock the measurement used.\n"
    "MEASURED is any file `servesim import` reads, or a database holding measured\n"
    "runs (--run picks one; default: the newest). The trace is written beside FILE.db\n"
    "as FILE-replayN.csv, where the stored scenario names it.\n"
    "\n"
    "  -o FILE.db          the database to store the runs in (created if absent)\n"
    "  --run ID            MEASURED is a database: its measured run ID\n"
    "  --scenario S.json   settings the measured file did not record\n"
    "  --set PATH=VALUE    override one key of the replay's scenario (repeatable)\n"
    "  --unset PATH        remove one key, before any --set (repeatable)\n"
    "  --json              print the comparisons as JSON\n";

typedef struct opts {
    const char *output, *scenario;
    cli_args unsets, sets, pos;
    int64_t run;
    bool json;
} opts;

static int parse(const char *cmd, const char *usage, bool replay, int argc, char **argv, opts *o)
{
    const cli_opt table[] = {
        {.name = "output", .short_name = 'o', .kind = CLI_STRING, .dest = &o->output},
        {.name = "scenario", .kind = CLI_STRING, .dest = &o->scenario},
        {.name = "set", .kind = CLI_STRINGS, .dest = &o->sets},
        {.name = "unset", .kind = CLI_STRINGS, .dest = &o->unsets},
        {.name = "json", .kind = CLI_FLAG, .dest = &o->json},
        /* import has no --run: its table ends here */
        {.name = replay ? "run" : NULL, .kind = CLI_RUN, .dest = &o->run},
        {0},
    };
    int code = cli_parse(cmd, usage, table, argc, argv, &o->pos);
    if (code != CLI_CONTINUE) return code;
    if (!o->output) return cli_usage_error(cmd, "give the database to store the runs in: -o FILE.db");
    if (o->pos.n == 0) return cli_usage_error(cmd, "expected %s", replay ? "MEASURED" : "FILE...");
    if (replay && o->pos.n != 1) return cli_usage_error(cmd, "expected one MEASURED file");
    return CLI_CONTINUE;
}

/* --scenario, raw: its files made absolute, --set left for val_settle. */
static int read_base(const char *scenario, cJSON **base, util_diag *d)
{
    *base = NULL;
    if (!scenario) return UTIL_OK;
    int rc = util_json_read_file(scenario, base, d);
    if (!rc && !cJSON_IsObject(*base)) rc = util_diag_add(d, "%s: expected a scenario object", scenario);
    if (!rc) {
        char *dir = util_dirname(scenario);
        val_absolute_paths(*base, dir);
        free(dir);
    }
    return rc;
}

bool cli_is_database(const char *path)
{
    FILE *f = fopen(path, "rb");
    char head[16] = {0};
    bool db = f && fread(head, 1, sizeof head, f) == sizeof head &&
              !memcmp(head, "SQLite format 3", 16);
    if (f) fclose(f);
    return db;
}

/* One stored measured run onto the end of runs. */
static int load_run(sqlite3 *db, const char *path, int64_t id, val_runs *runs, util_diag *d)
{
    val_run m;
    int rc = val_check_measured(db, path, id, d);
    if (!rc) rc = val_load(db, path, id, &m, d);
    if (rc) return rc;
    val_run *slot = val_runs_add(runs);
    val_run_fini(slot);
    *slot = m;
    return UTIL_OK;
}

/* A database's measured runs: run_id's, the newest, or every one. */
static int database_runs(const char *path, int64_t run_id, bool newest, val_runs *runs,
                         util_diag *d)
{
    sqlite3 *db = NULL;
    int rc = an_open(path, &db, d);
    int64_t last = rc ? 0 : val_last_measured(db);
    if (!rc && !last)
        rc = util_diag_add(d, "%s: holds no measured run (servesim import stores them)", path);
    if (!rc && (run_id || newest)) {
        rc = load_run(db, path, run_id ? run_id : last, runs, d);
    } else if (!rc) {
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db, "SELECT run_id FROM measurements ORDER BY run_id", -1, &st, NULL);
        while (!rc && sqlite3_step(st) == SQLITE_ROW)
            rc = load_run(db, path, sqlite3_column_int64(st, 0), runs, d);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return rc;
}

int cli_measured_runs(char *const *paths, int n, const char *scenario, const cli_args *unsets,
                      const cli_args *sets, int64_t run_id, bool newest, const mdl_catalog *cat,
                      val_runs *runs, util_diag *d)
{
    val_overrides ov = {.unset = unsets->v, .n_unset = unsets->n, .set = sets->v, .n_set = sets->n};
    cJSON *base = NULL;
    int rc = read_base(scenario, &base, d);
    for (int i = 0; !rc && i < n; i++)
        rc = cli_is_database(paths[i]) ? database_runs(paths[i], run_id, newest, runs, d)
                                       : val_import(paths[i], cat, runs, d);
    for (int i = 0; !rc && i < runs->n; i++)
        rc = val_settle(&runs->v[i], base, scenario, &ov, d);
    cJSON_Delete(base);
    return rc;
}

static size_t completed(const val_run *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++) n += !m->req[i].failed;
    return n;
}

/* One stored run, as import reports it. */
static cJSON *run_json(const val_run *m, int64_t id)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "run", (double)id);
    cJSON_AddStringToObject(o, "name", m->name ? m->name : "");
    cJSON_AddStringToObject(o, "format", m->format);
    cJSON_AddStringToObject(o, "source", m->source);
    cJSON_AddStringToObject(o, "clock", m->clock);
    cJSON_AddNumberToObject(o, "requests", (double)m->n);
    cJSON_AddNumberToObject(o, "completed", (double)completed(m));
    cJSON *metrics = cJSON_AddArrayToObject(o, "metrics");
    for (int k = 0; k < VAL_N_AGG; k++)
        if (m->metrics[k] == m->metrics[k])
            cJSON_AddItemToArray(metrics, cJSON_CreateString(val_agg_names[k]));
    cJSON_AddItemToObject(o, "not_recorded", cJSON_Duplicate(m->missing, true));
    return o;
}

static void print_run(const cJSON *o)
{
    printf("run %g: %s\n  %s, %s clock, %g requests (%g completed)", util_json_number(o, "run", 0),
           cJSON_GetStringValue(util_json_member(o, "name")),
           cJSON_GetStringValue(util_json_member(o, "format")),
           cJSON_GetStringValue(util_json_member(o, "clock")), util_json_number(o, "requests", 0),
           util_json_number(o, "completed", 0));
    const cJSON *c;
    const char *sep = "; the tool's aggregates: ";
    cJSON_ArrayForEach(c, util_json_member(o, "metrics")) {
        printf("%s%s", sep, c->valuestring);
        sep = ", ";
    }
    printf("\n");
    int settings = 0;
    cJSON_ArrayForEach(c, util_json_member(o, "not_recorded")) {
        if (!strcmp(c->valuestring, VAL_NO_ARRIVALS)) {
            printf("  arrivals not recorded: a replay sends from the generator the tool ran\n");
            continue;
        }
        if (settings++ == 0)
            printf("  not recorded (the engine preset's defaults apply unless --scenario or --set "
                   "gives them):\n   ");
        printf(" %s", c->valuestring);
    }
    if (settings) printf("\n");
}

static void print_json(cJSON *o)
{
    char *text = cJSON_Print(o);
    printf("%s\n", text);
    free(text);
}

int cli_import(int argc, char **argv)
{
    opts o = {0};
    int code = parse("import", import_usage, false, argc, argv, &o);
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *cat = NULL;
    val_runs runs = {0};
    cJSON *stored = cJSON_CreateArray();
    int rc = rec_check(o.output, &d);
    if (!rc) rc = mdl_catalog_load_default(&cat, &d);
    if (!rc) rc = cli_measured_runs(o.pos.v, o.pos.n, o.scenario, &o.unsets, &o.sets, 0, false, cat, &runs,
                                    &d);
    for (int i = 0; !rc && i < runs.n; i++) {
        int64_t id;
        rc = val_store(&runs.v[i], o.output, &id, &d);
        if (!rc) cJSON_AddItemToArray(stored, run_json(&runs.v[i], id));
    }
    if (o.json) {
        print_json(stored);
    } else {
        const cJSON *r;
        cJSON_ArrayForEach(r, stored) print_run(r);
        if (!rc) printf("stored in %s\n", o.output);
    }
    cJSON_Delete(stored);
    val_runs_fini(&runs);
    mdl_catalog_destroy(cat);
    cli_args_fini(&o.sets);
    cli_args_fini(&o.unsets);
    code = cli_fail(&d, rc);
    util_diag_fini(&d);
    return code;
}

/* ---- replay ---- */

/* A trace file beside the database that nothing else has: FILE-replayN.csv. */
static char *trace_path(const char *output)
{
    size_t n = strlen(output);
    int stem = n > 3 && !strcmp(output + n - 3, ".db") ? (int)n - 3 : (int)n;
    for (int k = 1;; k++) {
        char *p = util_xasprintf("%.*s-replay%d.csv", stem, output, k);
        FILE *f = fopen(p, "r");
        if (!f) return p;
        fclose(f);
        free(p);
    }
}

/* The replay's scenario, loaded once to check it before anything is stored. */
static int replay_scenario(const val_run *m, const mdl_catalog *cat, char **trace, cJSON **out,
                           util_diag *d)
{
    util_clip_buf b;
    for (const char *key = "cluster.gpu"; key; key = strcmp(key, "cluster.gpu") ? NULL : "cluster.model")
        if (!util_json_get(m->scenario, key))
            return util_diag_add(d, "%s: %s was not recorded: give --scenario S.json or --set "
                                    "%s=ID (servesim catalog)",
                                 util_clip_path(m->source, &b), key, key);
    if (m->n == 0 && !util_json_get(m->scenario, "workload"))
        return util_diag_add(d, "%s: neither requests nor a workload to replay",
                             util_clip_path(m->source, &b));
    if (m->arrivals_unknown && !util_json_get(m->scenario, "workload.arrival"))
        return util_diag_add(d, "%s: its arrivals were not recorded and no generator was: give "
                                "--set workload.arrival.process=... (docs/scenario.md)",
                             util_clip_path(m->source, &b));
    int rc = UTIL_OK;
    if (m->n) {
        char *stem = *trace;
        *trace = trace_path(stem);
        free(stem);
        rc = val_write_trace(m, *trace, d);
    } else {
        free(*trace);
        *trace = NULL;
    }
    cJSON *sc = val_replay_scenario(m, *trace);
    sim_scenario check = {0};
    if (!rc) rc = sim_scenario_load(cJSON_Duplicate(sc, true), cat, NULL, &check, d);
    sim_scenario_fini(&check);
    if (rc) {
        if (*trace) remove(*trace);
        cJSON_Delete(sc);
        return rc;
    }
    *out = sc;
    return UTIL_OK;
}

/* Stores the measured run (unless it is stored already), simulates its
 * replay into the same database and compares the two. */
static int replay_one(const opts *o, const mdl_catalog *cat, const val_run *m, bool stored,
                      cJSON *all, util_diag *d)
{
    char *trace = util_xstrdup(o->output);
    cJSON *sc = NULL;
    int rc = replay_scenario(m, cat, &trace, &sc, d);
    int64_t mid = o->run;
    if (!rc && !stored) rc = val_store(m, o->output, &mid, d);
    rec_run_result res = {0};
    if (!rc) {
        rec_run_spec spec = {.catalog = cat, .scenario = sc, .origin = m->source,
                             .output = o->output};
        sc = NULL;
        rc = rec_run(&spec, &res, d);
    }
    sqlite3 *mdb = NULL, *sdb = NULL;
    cJSON *cmp = NULL;
    const char *mfile = stored ? o->pos.v[0] : o->output;
    if (!rc) rc = an_open(mfile, &mdb, d);
    if (!rc) rc = an_open(o->output, &sdb, d);
    if (!rc && stored && !mid) mid = val_last_measured(mdb);
    if (!rc) rc = val_compare(mdb, mfile, mid, sdb, o->output, res.run_id, &cmp, d);
    if (!rc && trace) cJSON_AddStringToObject(cmp, "trace", trace);
    if (!rc && o->json) cJSON_AddItemToArray(all, cmp);
    else if (!rc) {
        val_compare_print(cmp, stdout);
        printf("\n");
        cJSON_Delete(cmp);
    }
    sqlite3_close(mdb);
    sqlite3_close(sdb);
    rec_run_result_fini(&res);
    cJSON_Delete(sc);
    free(trace);
    return rc;
}

int cli_replay(int argc, char **argv)
{
    opts o = {0};
    int code = parse("replay", replay_usage, true, argc, argv, &o);
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *cat = NULL;
    val_runs runs = {0};
    bool stored = false;
    cJSON *all = cJSON_CreateArray();
    int rc = rec_check(o.output, &d);
    if (!rc) rc = mdl_catalog_load_default(&cat, &d);
    stored = cli_is_database(o.pos.v[0]);
    if (!rc) rc = cli_measured_runs(o.pos.v, 1, o.scenario, &o.unsets, &o.sets, o.run, true, cat, &runs, &d);
    for (int i = 0; !rc && i < runs.n; i++) rc = replay_one(&o, cat, &runs.v[i], stored, all, &d);
    if (!rc && o.json) print_json(all);
    cJSON_Delete(all);
    val_runs_fini(&runs);
    mdl_catalog_destroy(cat);
    cli_args_fini(&o.sets);
    cli_args_fini(&o.unsets);
    code = cli_fail(&d, rc);
    util_diag_fini(&d);
    return code;
}
