/*
 * report.c: `servesim report` -- the report of a stored run, from the
 * database alone, with what-if SLOs, breakdowns and other formats -- and
 * the printing that `run` shares.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char report_usage[] =
    "usage: servesim report FILE.db [--run ID] [--slo KEY=S]... [--by class|replica]\n"
    "                       [--definitions] [--json | --csv | --markdown]\n"
    "\n"
    "Prints the report of a stored run (default: the newest), computed from the\n"
    "database alone: nothing is simulated again.\n"
    "\n"
    "  --run ID               which run (servesim numbers runs 1, 2, ... in each database)\n"
    CLI_VIEW_USAGE;

int cli_view_option(cli_view *v, const char *cmd, int code, const char *value)
{
    util_diag d;
    switch (code) {
    case 'j': v->format = CLI_JSON; return 1;
    case 'C': v->format = CLI_CSV; return 1;
    case 'M': v->format = CLI_MARKDOWN; return 1;
    case 'D': v->definitions = true; return 1;
    case 'b':
        if (!strcmp(value, "class")) v->by_class = true;
        else if (!strcmp(value, "replica")) v->what_if.by_replica = true;
        else return cli_usage_error(cmd, "--by %s: expected class or replica", value);
        return 1;
    case 'L':
        util_diag_init(&d);
        if (an_options_add_slo(&v->what_if, value, &d)) {
            cli_usage_error(cmd, "%s", d.count ? d.msgs[0] : value);
            util_diag_fini(&d);
            return CLI_EXIT_USAGE;
        }
        util_diag_fini(&d);
        return 1;
    default: return 0;
    }
}

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
    int rc = an_definitions(db, run_id, defs, d);
    if (rc) return rc;
    if (v->format == CLI_TEXT) {
        an_definitions_print(defs, stdout);
    } else {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "definitions", an_definitions_json(defs));
        print_json_as(o, v->format);
        cJSON_Delete(o);
    }
    return UTIL_OK;
}

int cli_print_report(sqlite3 *db, int64_t run_id, const cli_view *v, util_diag *d)
{
    int rc;
    if (v->definitions) {
        rc = print_definitions(db, run_id, v, d);
    } else {
        an_report r;
        rc = an_report_compute_with(db, run_id, &v->what_if, &r, d);
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

/* "--run ID" as a run id; 0 with a message when it is not one. */
int64_t cli_parse_run(const char *cmd, const char *value)
{
    char *end;
    long long id = strtoll(value, &end, 10);
    if (*end || end == value || id < 1) {
        cli_usage_error(cmd, "--run %s: expected a run id (1, 2, ...)", value);
        return 0;
    }
    return id;
}

int cli_open_run(const char *path, const char *run, sqlite3 **db, int64_t *run_id, util_diag *d)
{
    int rc = an_open(path, db, d);
    if (!rc && !run) rc = an_last_run(*db, path, run_id, d);
    return rc;
}

int cli_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"run", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        CLI_VIEW_LONGOPTS,
        {0, 0, 0, 0},
    };
    const char *run = NULL;
    cli_view v = {0};
    optind = 1;
    opterr = 0;
    int c, code = CLI_CONTINUE;
    while (code == CLI_CONTINUE && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        int taken = cli_view_option(&v, "report", c, optarg);
        if (taken) {
            if (taken != 1) code = taken;
            continue;
        }
        switch (c) {
        case 'r': run = optarg; break;
        case 'h': fputs(report_usage, stdout); code = CLI_EXIT_OK; break;
        case ':': code = cli_usage_error("report", "option '%s' needs a value", argv[optind - 1]); break;
        default: code = cli_usage_error("report", "unknown option '%s'", argv[optind - 1]);
        }
    }
    int64_t run_id = 0;
    if (code == CLI_CONTINUE && optind != argc - 1)
        code = cli_usage_error("report", "expected one FILE.db");
    if (code == CLI_CONTINUE && run && !(run_id = cli_parse_run("report", run)))
        code = CLI_EXIT_USAGE;
    if (code != CLI_CONTINUE) {
        cli_view_fini(&v);
        return code;
    }
    util_diag d;
    util_diag_init(&d);
    sqlite3 *db = NULL;
    int rc = cli_open_run(argv[optind], run, &db, &run_id, &d);
    if (!rc) rc = cli_print_report(db, run_id, &v, &d);
    code = cli_fail(&d, rc);
    sqlite3_close(db);
    util_diag_fini(&d);
    cli_view_fini(&v);
    return code;
}
