/*
 * curve.c: `servesim slo-curve` -- attainment as a function of the
 * threshold on one metric, from a stored run: the curve a capacity planner
 * reads a 99% target's threshold off.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char curve_usage[] =
    "usage: servesim slo-curve FILE.db [--metric ttft|tpot|tpot_incl_ttft|e2e] [--run ID]\n"
    "                          [--class NAME] [--points N] [--csv | --json]\n"
    "\n"
    "Prints SLO attainment against the threshold on one metric (default ttft): the\n"
    "share of requests ended after warm-up whose metric is within it (rejected and\n"
    "timed-out requests fail every threshold), at N thresholds spread over the\n"
    "measured values (default 21), and the thresholds that 50, 90, 95, 99 and 99.9%\n"
    "attainment need.\n";

static int parse_metric(const char *name, an_metric *m)
{
    for (int i = 0; an_metric_names[i]; i++)
        if (!strcmp(an_metric_names[i], name)) {
            *m = (an_metric)i;
            return CLI_CONTINUE;
        }
    return cli_usage_error("slo-curve", "--metric %s: expected ttft, tpot, tpot_incl_ttft or e2e",
                           name);
}

int cli_slo_curve(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"metric", required_argument, NULL, 'm'}, {"run", required_argument, NULL, 'r'},
        {"class", required_argument, NULL, 'c'},  {"points", required_argument, NULL, 'p'},
        {"csv", no_argument, NULL, 'C'},          {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},         {0, 0, 0, 0},
    };
    const char *run = NULL, *cls = NULL;
    an_metric metric = AN_TTFT;
    int points = 21, code = CLI_CONTINUE;
    bool csv = false, json = false;
    optind = 1;
    opterr = 0;
    int c;
    while (code == CLI_CONTINUE && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'm': code = parse_metric(optarg, &metric); break;
        case 'r': run = optarg; break;
        case 'c': cls = optarg; break;
        case 'p':
            points = (int)strtol(optarg, &end, 10);
            if (*end || points < 2 || points > 10000)
                code = cli_usage_error("slo-curve", "--points %s: expected 2 .. 10000", optarg);
            break;
        case 'C': csv = true; break;
        case 'j': json = true; break;
        case 'h': fputs(curve_usage, stdout); return CLI_EXIT_OK;
        case ':': code = cli_usage_error("slo-curve", "option '%s' needs a value", argv[optind - 1]); break;
        default: code = cli_usage_error("slo-curve", "unknown option '%s'", argv[optind - 1]);
        }
    }
    int64_t run_id = 0;
    if (code == CLI_CONTINUE && optind != argc - 1)
        code = cli_usage_error("slo-curve", "expected one FILE.db");
    if (code == CLI_CONTINUE && run && !(run_id = cli_parse_run("slo-curve", run)))
        code = CLI_EXIT_USAGE;
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    sqlite3 *db = NULL;
    an_curve curve = {0};
    int rc = cli_open_run(argv[optind], run, &db, &run_id, &d);
    if (!rc) rc = an_slo_curve(db, run_id, metric, cls, points, &curve, &d);
    if (!rc && cls && curve.ended == 0)
        rc = util_diag_add(&d, "run %lld: no ended requests in class '%s'", (long long)run_id, cls);
    if (!rc && json) {
        cJSON *o = an_curve_json(&curve);
        char *text = cJSON_Print(o);
        printf("%s\n", text);
        free(text);
        cJSON_Delete(o);
    } else if (!rc) {
        an_curve_print(&curve, csv, stdout);
    }
    code = cli_fail(&d, rc);
    an_curve_fini(&curve);
    sqlite3_close(db);
    util_diag_fini(&d);
    return code;
}
