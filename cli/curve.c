/*
 * curve.c: `servesim slo-curve` -- attainment as a function of the
 * threshold on one metric, from a stored run: the curve a capacity planner
 * reads a 99% target's threshold off.
 */
#include "cli.h"

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

/* The command line, checked. */
typedef struct options {
    const char *path, *run, *cls; /* run, cls: NULL for the newest run, every class */
    int64_t run_id;
    int metric, points;
    bool csv, json;
} options;

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.metric = AN_TTFT, .points = 21};
    const cli_opt opts[] = {
        {.name = "metric", .kind = CLI_CHOICE, .dest = &o->metric, .choices = an_metric_names},
        {.name = "run", .kind = CLI_STRING, .dest = &o->run},
        {.name = "class", .kind = CLI_STRING, .dest = &o->cls},
        {.name = "points", .kind = CLI_INT, .dest = &o->points, .lo = 2, .hi = 10000},
        {.name = "csv", .kind = CLI_FLAG, .dest = &o->csv},
        {.name = "json", .kind = CLI_FLAG, .dest = &o->json},
        {0},
    };
    cli_args pos;
    int code = cli_parse("slo-curve", curve_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    if (pos.n != 1) return cli_usage_error("slo-curve", "expected one FILE.db");
    if (o->run && !(o->run_id = cli_parse_run("slo-curve", o->run))) return CLI_EXIT_USAGE;
    o->path = pos.v[0];
    return CLI_CONTINUE;
}

static void print_curve(const an_curve *curve, bool json, bool csv)
{
    if (json) {
        cJSON *o = an_curve_json(curve);
        char *text = cJSON_Print(o);
        printf("%s\n", text);
        free(text);
        cJSON_Delete(o);
    } else {
        an_curve_print(curve, csv, stdout);
    }
}

int cli_slo_curve(int argc, char **argv)
{
    options o;
    int code = parse(argc, argv, &o);
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    sqlite3 *db = NULL;
    an_curve curve = {0};
    int rc = cli_open_run(o.path, &db, &o.run_id, &d);
    if (!rc) rc = an_slo_curve(db, o.run_id, (an_metric)o.metric, o.cls, o.points, &curve, &d);
    util_clip_buf b;
    if (!rc && o.cls && curve.ended == 0)
        rc = util_diag_add(&d, "run %lld: no ended requests in class '%s'", (long long)o.run_id,
                           util_clip(o.cls, &b));
    if (!rc) print_curve(&curve, o.json, o.csv);
    code = cli_fail(&d, rc);
    an_curve_fini(&curve);
    sqlite3_close(db);
    util_diag_fini(&d);
    return code;
}
