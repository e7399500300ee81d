/*
 * report.c: `servesim report` -- the report of a stored run, from the
 * database alone -- and the printing that `run` shares.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an.h"

static const char report_usage[] =
    "usage: servesim report FILE.db [--run ID] [--by class] [--json]\n"
    "\n"
    "Prints the report of a stored run (default: the newest), computed from the\n"
    "database alone.\n"
    "\n"
    "  --run ID     which run (servesim numbers runs 1, 2, ... in each database)\n"
    "  --by class   add each request class's sections (workload.classes)\n"
    "  --json       print the report as JSON\n";

int cli_parse_by(const char *cmd, const char *value, bool *by_class)
{
    if (strcmp(value, "class"))
        return cli_usage_error(cmd, "--by %s: the one grouping is 'class'", value);
    *by_class = true;
    return CLI_CONTINUE;
}

int cli_print_report(sqlite3 *db, int64_t run_id, bool json, bool by_class, util_diag *d)
{
    an_report r;
    int rc = an_report_compute(db, run_id, &r, d);
    if (rc) {
        an_report_fini(&r);
        return rc;
    }
    if (json) {
        cJSON *o = an_report_json(&r, by_class);
        char *text = cJSON_Print(o);
        printf("%s\n", text);
        free(text);
        cJSON_Delete(o);
    } else {
        an_report_print(&r, by_class, stdout);
    }
    an_report_fini(&r);
    return fflush(stdout) ? util_diag_fail(d, "cannot write the report") : UTIL_OK;
}

int cli_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"run", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"by", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    const char *run = NULL;
    bool json = false, by_class = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r': run = optarg; break;
        case 'j': json = true; break;
        case 'b':
            if (cli_parse_by("report", optarg, &by_class) != CLI_CONTINUE) return CLI_EXIT_USAGE;
            break;
        case 'h': fputs(report_usage, stdout); return CLI_EXIT_OK;
        case ':': return cli_usage_error("report", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("report", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1) return cli_usage_error("report", "expected one FILE.db");
    const char *path = argv[optind];
    int64_t run_id = 0;
    if (run) {
        char *end;
        run_id = strtoll(run, &end, 10);
        if (*end || end == run || run_id < 1)
            return cli_usage_error("report", "--run %s: expected a run id (1, 2, ...)", run);
    }
    util_diag d;
    util_diag_init(&d);
    sqlite3 *db = NULL;
    int rc = an_open(path, &db, &d);
    if (!rc && !run) rc = an_last_run(db, path, &run_id, &d);
    if (!rc) rc = cli_print_report(db, run_id, json, by_class, &d);
    int code = cli_fail(&d, rc);
    sqlite3_close(db);
    util_diag_fini(&d);
    return code;
}
