/*
 * report.c: `servesim report` -- the report of a stored run, from the
 * database alone, with what-if SLOs, breakdowns and other formats -- and
 * the printing that `run` shares.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char report_usage[] =
    "usage: servesim report FILE.db [--run ID] [--slo KEY=S]...\n"
    "                       [--by class|replica|model|tenant|tier|session] [--definitions]\n"
    "                       [--json | --csv | --markdown]\n"
    "\n"
    "Prints the report of a stored run (default: the newest), computed from the\n"
    "database alone: nothing is simulated again.\n"
    "\n"
    "  --run ID               which run (servesim numbers runs 1, 2, ... in each database)\n"
    CLI_VIEW_USAGE;

void cli_view_fini(cli_view *v)
{
    an_options_fini(&v->what_if);
}

/* A JSON object in the format asked for. */
static void print_json_as(const cJSON *o, cli_format format)
{
    if (format == CLI_CSV) {
        an_json_print_csv(o, stdout);
    } else if (format == CLI_MARKDOWN) {
        an_json_print_markdown(o, stdout);
    } else {
        char *text = cJSON_Print(o);
        printf("%s\n", text);
        free(text);
    }
}

static int print_definitions(sqlite3 *db, int64_t run_id, const cli_view *v, util_diag *d)
{
    an_definition defs[AN_N_DEFINITIONS];
    an_chunks chunks;
    int rc = an_definitions(db, run_id, defs, d);
    if (!rc) rc = an_definition_chunks(db, run_id, &chunks, d);
    if (rc) return rc;
    if (v->format == CLI_TEXT) {
        an_definitions_print(defs, &chunks, stdout);
    } else {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "definitions", an_definitions_json(defs));
        cJSON_AddItemToObject(o, "chunks", an_chunks_json(&chunks));
        print_json_as(o, v->format);
        cJSON_Delete(o);
    }
    return UTIL_OK;
}

int cli_print_report(sqlite3 *db, int64_t run_id, const cli_view *v, bool clear_line, util_diag *d)
{
    int rc;
    if (v->definitions) {
        if (clear_line) fprintf(stderr, "\r\033[K");
        rc = print_definitions(db, run_id, v, d);
    } else {
        an_report r;
        rc = an_report_compute_with(db, run_id, &v->what_if, &r, d);
        if (clear_line) fprintf(stderr, "\r\033[K"); /* a progress line, before the report */
        if (!rc && v->format == CLI_TEXT) {
            an_report_print(&r, v->by_class, stdout);
        } else if (!rc) {
            cJSON *o = an_report_json(&r, v->by_class);
            print_json_as(o, v->format);
            cJSON_Delete(o);
        }
        an_report_fini(&r);
    }
    if (rc) return rc;
    return fflush(stdout) ? util_diag_fail(d, "cannot write the report") : UTIL_OK;
}

int cli_open_run(const char *path, sqlite3 **db, int64_t *run_id, util_diag *d)
{
    int rc = an_open(path, db, d);
    if (!rc && !*run_id) rc = an_last_run(*db, path, run_id, d);
    return rc;
}

/* The file and the run, in the order of the checks: the one FILE.db, then
 * --run (so that a command missing its file says so first). */
static int parse(int argc, char **argv, const char **path, int64_t *run_id, cli_view *v)
{
    const char *run = NULL;
    const cli_opt opts[] = {
        {.name = "run", .kind = CLI_STRING, .dest = &run},
        CLI_VIEW_OPTS(v),
        {0},
    };
    cli_args pos;
    int code = cli_parse("report", report_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    if (pos.n != 1) return cli_usage_error("report", "expected one FILE.db");
    if (run && !(*run_id = cli_parse_run("report", run))) return CLI_EXIT_USAGE;
    *path = pos.v[0];
    return CLI_CONTINUE;
}

int cli_report(int argc, char **argv)
{
    const char *path = NULL;
    int64_t run_id = 0;
    cli_view v = {0};
    int code = parse(argc, argv, &path, &run_id, &v);
    if (code != CLI_CONTINUE) {
        cli_view_fini(&v);
        return code;
    }
    util_diag d;
    util_diag_init(&d);
    sqlite3 *db = NULL;
    int rc = cli_open_run(path, &db, &run_id, &d);
    if (!rc) rc = cli_print_report(db, run_id, &v, false, &d);
    code = cli_fail(&d, rc);
    sqlite3_close(db);
    util_diag_fini(&d);
    cli_view_fini(&v);
    return code;
}
