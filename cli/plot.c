/*
 * plot.c: `servesim plot` -- stored runs as a figure: a self-contained SVG
 * file that opens in any browser, or text characters for a look over ssh.
 * analysis/plot.c gathers and draws; this file checks that the options fit
 * the kind, and writes the file only once the figure is complete.
 */
#include "cli.h"
#include "sim.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char plot_usage[] =
    "usage: servesim plot FILE.db KIND (-o FILE.svg | -o FILE.png | --terminal) [--run ID]...\n"
    "                     [--sweep LABEL] [--x PATH] [--metric M] [--title TEXT] [--log]\n"
    "                     [--log-y] [--width N] [--height N] [--interval S] [--points N]\n"
    "                     [--from S] [--to S] [--replica N] [--request ID]\n"
    "                     [--criterion mean|all-seeds] [--confidence C] [--plan]\n"
    "\n"
    "Draws stored runs, from the database alone, as a self-contained SVG file, a PNG (-o;\n"
    "- for SVG on stdout) or in text characters (--terminal).  KIND is one of\n"
    "  latency-load            P50/P90/P99 TTFT and TPOT, goodput and throughput of a\n"
    "                          sweep's runs against the key it varies; seeds averaged, their\n"
    "                          range a band, overloaded runs marked; SLOs drawn, and where\n"
    "                          their p99s were met: up to a load (rate, users), from a\n"
    "                          capacity (replicas, parallelism, batch limits)\n"
    "  throughput-concurrency  total output tokens/s against tokens/s per user of a\n"
    "                          closed-loop sweep over workload.arrival.users\n"
    "  cdf                     CDF of one metric of the measured requests, and its tail\n"
    "                          (--run repeatable: one curve each, named by what differs)\n"
    "  timeline                queue, running batch, KV in use, output and power over time\n"
    "  slo-curve               SLO attainment against the threshold on one metric\n"
    "                          (--run repeatable)\n"
    "  pipeline                one replica's engine steps in lanes: when the scheduler\n"
    "                          planned each, the GPU ran it and its tokens reached the\n"
    "                          client; --request adds one request's life and its TTFT\n"
    "                          (needs run --record-iterations)\n"
    "\n"
    "  -o FILE            write the figure there: FILE.svg (SVG) or FILE.png (PNG); - for\n"
    "                     SVG on stdout\n"
    "  --terminal         print it as text, as wide as the terminal\n"
    "  --run ID           the run (cdf, slo-curve: repeatable; default: the newest)\n"
    "  --sweep LABEL      the sweep, runs.sweep (default: the newest run's)\n"
    "  --x PATH           the sweep's x axis, a dotted scenario key (default: the one key\n"
    "                     that varies, seed aside); other keys that vary become colours\n"
    "  --metric M         ttft, tpot, tpot_incl_ttft or e2e (cdf, slo-curve; default ttft)\n"
    "  --title TEXT       the title (default: what the runs simulated)\n"
    "  --log              logarithmic x axis (default: log for a geometric sweep)\n"
    "  --log-y            logarithmic y axes (default: log where the data spans decades)\n"
    "  --width N          the figure's width: CSS pixels (a PNG has two pixels each), or\n"
    "                     characters with --terminal\n"
    "  --height N         the figure's height in CSS pixels, or rows a panel with --terminal\n"
    "  --interval S       timeline interval: seconds, or with a unit (500ms, 2s, 1min;\n"
    "                     default 1 s)\n"
    "  --points N         slo-curve thresholds (default 101)\n"
    "  --from S, --to S   pipeline: the window in seconds of simulated time (default: the\n"
    "                     replica's first 12 steps, or 12 steps from --from; with --request,\n"
    "                     the steps around that request when they are not the first)\n"
    "  --replica N        pipeline: the replica (default 0)\n"
    "  --request ID       pipeline: draw that request's life across the lanes\n"
    "  --criterion C      latency-load: how a point meets the p99 SLO: mean (the mean over\n"
    "                     seeds, its interval's worse end within the target, as servesim\n"
    "                     plan judges; default) or all-seeds (every seed within it)\n"
    "  --confidence C     latency-load: the mean's interval (default 0.95, as plan's)\n"
    "  --plan             latency-load over workload.arrival.rate_per_s: also mark the rate\n"
    "                     servesim plan --find max-rate would answer, interpolated between\n"
    "                     the last point that met and the next\n";

enum { TEXT_W = 84, TEXT_H = 20 };

/* The options beyond -o, --terminal and the figure's size, in the order
 * they are named when a kind does not take them. */
enum {
    O_RUN,
    O_SWEEP,
    O_X,
    O_METRIC,
    O_LOG,
    O_INTERVAL,
    O_POINTS,
    O_FROM,
    O_TO,
    O_REPLICA,
    O_REQUEST,
    O_CRITERION,
    O_CONFIDENCE,
    O_PLAN,
    N_GIVEN
};
static const char *const option_names[N_GIVEN] = {"--run", "--sweep",    "--x",      "--metric",
                                                  "--log", "--interval", "--points", "--from",
                                                  "--to",  "--replica",  "--request",
                                                  "--criterion", "--confidence", "--plan"};
#define B(o) (1u << (o))
static const unsigned takes[AN_N_PLOT_KINDS] = {
    [AN_PLOT_LATENCY_LOAD] =
        B(O_SWEEP) | B(O_X) | B(O_LOG) | B(O_CRITERION) | B(O_CONFIDENCE) | B(O_PLAN),
    [AN_PLOT_THROUGHPUT_CONCURRENCY] = B(O_SWEEP) | B(O_X) | B(O_LOG),
    [AN_PLOT_CDF] = B(O_RUN) | B(O_METRIC) | B(O_LOG),
    [AN_PLOT_TIMELINE] = B(O_RUN) | B(O_INTERVAL),
    [AN_PLOT_SLO_CURVE] = B(O_RUN) | B(O_METRIC) | B(O_LOG) | B(O_POINTS),
    [AN_PLOT_PIPELINE] = B(O_RUN) | B(O_FROM) | B(O_TO) | B(O_REPLICA) | B(O_REQUEST),
};
#undef B

typedef struct options {
    const char *path, *svg; /* svg: the -o file, NULL for none, "-" for stdout */
    bool terminal, log_y;
    int width, height;
    bool given[N_GIVEN];
    int metric, criterion;
    bool log_x;
    int64_t *runs; /* room for every argument */
    int request;   /* --request */
    int64_t request_id;
    an_plot_request req;
} options;

static int parse_kind(const char *name, an_plot_kind *kind)
{
    for (int i = 0; an_plot_kind_names[i]; i++)
        if (!strcmp(an_plot_kind_names[i], name)) {
            *kind = (an_plot_kind)i;
            return CLI_CONTINUE;
        }
    const char *near = util_closest(name, an_plot_kind_names);
    util_clip_buf b;
    if (near)
        return cli_usage_error("plot", "unknown KIND '%s' (did you mean '%s'?)",
                               util_clip(name, &b), near);
    return cli_usage_error("plot",
                           "unknown KIND '%s' (expected latency-load, "
                           "throughput-concurrency, cdf, timeline, slo-curve or pipeline)",
                           util_clip(name, &b));
}

/* --run, repeatable: one curve each (cdf). */
static int add_run(const cli_opt *opt, const char *cmd, const char *value)
{
    options *o = opt->dest;
    if (!(o->runs[o->req.n_runs] = cli_parse_run(cmd, value))) return CLI_EXIT_USAGE;
    o->req.n_runs++;
    return CLI_CONTINUE;
}

static int parse_args(int argc, char **argv, options *o)
{
    bool *given = o->given;
    const cli_opt opts[] = {
        {.name = "run", .kind = CLI_CALL, .dest = o, .call = add_run, .seen = &given[O_RUN]},
        {.name = "sweep", .kind = CLI_STRING, .dest = &o->req.sweep, .seen = &given[O_SWEEP]},
        {.name = "x", .kind = CLI_STRING, .dest = &o->req.x_key, .seen = &given[O_X]},
        {.name = "metric", .kind = CLI_CHOICE, .dest = &o->metric, .choices = an_metric_names,
         .seen = &given[O_METRIC]},
        {.name = "log", .kind = CLI_FLAG, .dest = &o->log_x, .seen = &given[O_LOG]},
        {.name = "interval", .kind = CLI_SECONDS, .dest = &o->req.interval_s,
         .seen = &given[O_INTERVAL]},
        {.name = "points", .kind = CLI_INT, .dest = &o->req.points, .lo = 2, .hi = 10000,
         .seen = &given[O_POINTS]},
        {.name = "from", .kind = CLI_NUMBER, .dest = &o->req.from_s, .lo = 0, .hi = DBL_MAX,
         .expect = "expected seconds >= 0", .seen = &given[O_FROM]},
        {.name = "to", .kind = CLI_NUMBER, .dest = &o->req.to_s, .lo = DBL_TRUE_MIN,
         .hi = DBL_MAX, .expect = "expected seconds > 0", .seen = &given[O_TO]},
        {.name = "replica", .kind = CLI_INT, .dest = &o->req.replica, .lo = 0, .hi = INT_MAX,
         .seen = &given[O_REPLICA]},
        {.name = "request", .kind = CLI_INT, .dest = &o->request, .lo = 0, .hi = INT_MAX,
         .seen = &given[O_REQUEST]},
        {.name = "criterion", .kind = CLI_CHOICE, .dest = &o->criterion,
         .choices = an_plot_criterion_names, .seen = &given[O_CRITERION]},
        {.name = "confidence", .kind = CLI_NUMBER, .dest = &o->req.confidence, .lo = 0.5,
         .hi = 0.9999, .seen = &given[O_CONFIDENCE]},
        {.name = "plan", .kind = CLI_FLAG, .dest = &o->req.plan, .seen = &given[O_PLAN]},
        {.name = "terminal", .kind = CLI_FLAG, .dest = &o->terminal},
        {.name = "title", .kind = CLI_STRING, .dest = &o->req.title},
        {.name = "log-y", .kind = CLI_FLAG, .dest = &o->log_y},
        {.name = "width", .kind = CLI_INT, .dest = &o->width, .lo = 20, .hi = 20000},
        {.name = "height", .kind = CLI_INT, .dest = &o->height, .lo = 4, .hi = 20000},
        {.name = "output", .short_name = 'o', .kind = CLI_STRING, .dest = &o->svg},
        {0},
    };
    cli_args pos;
    int code = cli_parse("plot", plot_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    if (pos.n != 2) return cli_usage_error("plot", "expected FILE.db and KIND");
    o->path = pos.v[0];
    o->req.metric = (an_metric)o->metric;
    o->req.criterion = (an_plot_criterion)o->criterion;
    o->req.x_scale = o->log_x ? AN_SCALE_LOG : AN_SCALE_AUTO;
    o->req.y_scale = o->log_y ? AN_SCALE_LOG : AN_SCALE_AUTO;
    o->request_id = o->request;
    if (given[O_REQUEST]) o->req.request = &o->request_id;
    return parse_kind(pos.v[1], &o->req.kind);
}

/* Options the kind would silently ignore are mistakes worth naming. */
static int check_fit(const options *o)
{
    const char *kind = an_plot_kind_names[o->req.kind];
    for (int i = 0; i < N_GIVEN; i++)
        if (o->given[i] && !(takes[o->req.kind] & (1u << i)))
            return cli_usage_error("plot", "%s does not take %s", kind, option_names[i]);
    bool one = o->req.kind == AN_PLOT_TIMELINE || o->req.kind == AN_PLOT_PIPELINE;
    if (o->req.n_runs > 1 && one)
        return cli_usage_error("plot", "%s draws one run; --run given %d times", kind,
                               o->req.n_runs);
    if (o->given[O_TO] && !(o->req.to_s > o->req.from_s))
        return cli_usage_error("plot", "--to %g is not after --from %g", o->req.to_s,
                               o->req.from_s);
    if (o->req.plan && o->req.criterion == AN_CRITERION_ALL_SEEDS)
        return cli_usage_error("plot", "--plan judges as servesim plan does (the mean over "
                                       "seeds): not with --criterion all-seeds");
    if (o->given[O_CONFIDENCE] && o->req.criterion == AN_CRITERION_ALL_SEEDS)
        return cli_usage_error("plot", "--confidence is the mean's interval: not with "
                                       "--criterion all-seeds");
    if (!o->svg && !o->terminal)
        return cli_usage_error("plot", "nothing to draw to: give -o FILE.svg, -o FILE.png or "
                                       "--terminal");
    return CLI_CONTINUE;
}

static int draw(const options *o, util_diag *d)
{
    sqlite3 *db = NULL;
    an_plot fig = {0};
    int rc = an_open(o->path, &db, d);
    if (!rc) rc = an_plot_compute(db, &o->req, &fig, d);
    if (!rc && o->svg) rc = cli_write_figure(&fig, (an_plot_size){o->width, o->height}, o->svg, d);
    if (!rc && o->terminal) {
        an_plot_text(&fig, o->width ? o->width : util_terminal_columns(stdout, TEXT_W),
                     o->height ? o->height : TEXT_H, stdout);
        if (fflush(stdout)) rc = util_diag_fail(d, "cannot write the plot");
    }
    an_plot_fini(&fig);
    sqlite3_close(db);
    return rc;
}

int cli_plot(int argc, char **argv)
{
    options o = {.runs = util_xcalloc((size_t)argc, sizeof(int64_t))};
    int code = parse_args(argc, argv, &o);
    if (code == CLI_CONTINUE) code = check_fit(&o);
    if (code == CLI_CONTINUE) {
        util_diag d;
        util_diag_init(&d);
        o.req.file = o.path;
        o.req.runs = o.runs;
        o.req.schema = sim_scenario_fields;
        code = cli_fail(&d, draw(&o, &d));
        util_diag_fini(&d);
    }
    free(o.runs);
    return code;
}
