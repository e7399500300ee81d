/*
 * plot.c: `servesim plot` -- stored runs as a figure: a self-contained SVG
 * file that opens in any browser, or text characters for a look over ssh.
 * analysis/plot.c gathers and draws; this file checks that the options fit
 * the kind, and writes the file only once the figure is complete.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char plot_usage[] =
    "usage: servesim plot FILE.db KIND (-o FILE.svg | --terminal) [--run ID]... [--sweep LABEL]\n"
    "                     [--x PATH] [--metric M] [--log] [--interval S] [--points N]\n"
    "\n"
    "Draws stored runs, from the database alone, as a self-contained SVG file (-o;\n"
    "- for stdout) or in text characters (--terminal).  KIND is one of\n"
    "  latency-load            P50/P90/P99 TTFT and TPOT of a sweep's runs against the key\n"
    "                          it varies; runs with the same x (seeds) are averaged,\n"
    "                          overloaded runs left out; SLO thresholds dashed\n"
    "  throughput-concurrency  total and per-user output tokens/s of a closed-loop sweep\n"
    "                          against workload.arrival.users\n"
    "  cdf                     empirical CDF of one metric of the measured requests\n"
    "  timeline                queue, running batch, KV occupancy and output tokens/s\n"
    "  slo-curve               SLO attainment against the threshold on one metric\n"
    "\n"
    "  -o FILE.svg        write the figure there as SVG\n"
    "  --terminal         print it as text, 72 x 20 characters a panel\n"
    "  --run ID           the run (cdf: repeatable, one curve each; default: the newest)\n"
    "  --sweep LABEL      the sweep, runs.sweep (default: the newest run's)\n"
    "  --x PATH           the sweep's x axis, a dotted scenario key (default: the one key\n"
    "                     that varies, seed aside); other keys that vary become series\n"
    "  --metric M         ttft, tpot, tpot_incl_ttft or e2e (cdf, slo-curve; default ttft)\n"
    "  --log              logarithmic x axis\n"
    "  --interval S       timeline interval in seconds (default 1)\n"
    "  --points N         slo-curve thresholds (default 101)\n";

enum { TEXT_W = 72, TEXT_H = 20 };

/* The options beyond -o and --terminal, as bits: each kind takes some. */
enum { O_RUN = 1, O_SWEEP = 2, O_X = 4, O_METRIC = 8, O_LOG = 16, O_INTERVAL = 32, O_POINTS = 64 };
static const char *const option_names[] = {"--run", "--sweep",    "--x",     "--metric",
                                           "--log", "--interval", "--points"};
static const unsigned takes[AN_N_PLOT_KINDS] = {
    [AN_PLOT_LATENCY_LOAD] = O_SWEEP | O_X | O_LOG,
    [AN_PLOT_THROUGHPUT_CONCURRENCY] = O_SWEEP | O_X | O_LOG,
    [AN_PLOT_CDF] = O_RUN | O_METRIC | O_LOG,
    [AN_PLOT_TIMELINE] = O_RUN | O_INTERVAL,
    [AN_PLOT_SLO_CURVE] = O_RUN | O_METRIC | O_LOG | O_POINTS,
};

typedef struct options {
    const char *path, *svg; /* svg: NULL for none, "-" for stdout */
    bool terminal;
    unsigned given;
    int64_t *runs; /* room for every argument */
    an_plot_request req;
} options;

static int parse_metric(const char *name, an_metric *m)
{
    for (int i = 0; an_metric_names[i]; i++)
        if (!strcmp(an_metric_names[i], name)) {
            *m = (an_metric)i;
            return CLI_CONTINUE;
        }
    return cli_usage_error("plot", "--metric %s: expected ttft, tpot, tpot_incl_ttft or e2e", name);
}

static int parse_kind(const char *name, an_plot_kind *kind)
{
    for (int i = 0; an_plot_kind_names[i]; i++)
        if (!strcmp(an_plot_kind_names[i], name)) {
            *kind = (an_plot_kind)i;
            return CLI_CONTINUE;
        }
    const char *near = util_closest(name, an_plot_kind_names);
    if (near) return cli_usage_error("plot", "unknown KIND '%s' (did you mean '%s'?)", name, near);
    return cli_usage_error("plot",
                           "unknown KIND '%s' (expected latency-load, "
                           "throughput-concurrency, cdf, timeline or slo-curve)",
                           name);
}

static int parse_value(int c, const char *arg, options *o)
{
    char *end;
    switch (c) {
    case 'r':
        if (!(o->runs[o->req.n_runs] = cli_parse_run("plot", arg))) return CLI_EXIT_USAGE;
        o->req.n_runs++;
        return CLI_CONTINUE;
    case 's':
        o->req.sweep = arg;
        return CLI_CONTINUE;
    case 'x':
        o->req.x_key = arg;
        return CLI_CONTINUE;
    case 'm':
        return parse_metric(arg, &o->req.metric);
    case 'i':
        errno = 0;
        o->req.interval_s = strtod(arg, &end);
        if (*end || end == arg || errno || !isfinite(o->req.interval_s) || !(o->req.interval_s > 0))
            return cli_usage_error("plot", "--interval %s: expected seconds > 0", arg);
        return CLI_CONTINUE;
    default:
        o->req.points = (int)strtol(arg, &end, 10);
        if (*end || end == arg || o->req.points < 2 || o->req.points > 10000)
            return cli_usage_error("plot", "--points %s: expected 2 .. 10000", arg);
        return CLI_CONTINUE;
    }
}

/* The O_ bit of an option, by its getopt code. */
static unsigned bit_of(int c)
{
    const char *codes = "rsxmlip", *at = strchr(codes, c); /* in the order of the bits */
    return at ? 1u << (at - codes) : 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        {"run", required_argument, NULL, 'r'},
        {"sweep", required_argument, NULL, 's'},
        {"x", required_argument, NULL, 'x'},
        {"metric", required_argument, NULL, 'm'},
        {"log", no_argument, NULL, 'l'},
        {"interval", required_argument, NULL, 'i'},
        {"points", required_argument, NULL, 'p'},
        {"terminal", no_argument, NULL, 't'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c, code = CLI_CONTINUE;
    while (code == CLI_CONTINUE && (c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        o->given |= bit_of(c);
        switch (c) {
        case 'o':
            o->svg = optarg;
            break;
        case 't':
            o->terminal = true;
            break;
        case 'l':
            o->req.log_x = true;
            break;
        case 'h':
            fputs(plot_usage, stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error("plot", "option '%s' needs a value", argv[optind - 1]);
        case '?':
            return cli_usage_error("plot", "unknown option '%s'", argv[optind - 1]);
        default:
            code = parse_value(c, optarg, o);
        }
    }
    if (code != CLI_CONTINUE) return code;
    if (optind != argc - 2) return cli_usage_error("plot", "expected FILE.db and KIND");
    o->path = argv[optind];
    return parse_kind(argv[optind + 1], &o->req.kind);
}

/* Options the kind would silently ignore are mistakes worth naming. */
static int check_fit(const options *o)
{
    const char *kind = an_plot_kind_names[o->req.kind];
    for (int i = 0; i < 7; i++)
        if (o->given & ~takes[o->req.kind] & (1u << i))
            return cli_usage_error("plot", "%s does not take %s", kind, option_names[i]);
    if (o->req.n_runs > 1 && o->req.kind != AN_PLOT_CDF)
        return cli_usage_error("plot", "%s draws one run; --run given %d times", kind,
                               o->req.n_runs);
    if (!o->svg && !o->terminal)
        return cli_usage_error("plot", "nothing to draw to: give -o FILE.svg or --terminal");
    return CLI_CONTINUE;
}

static int write_svg(const an_plot *fig, const char *path, util_diag *d)
{
    bool to_stdout = !strcmp(path, "-");
    FILE *f = to_stdout ? stdout : fopen(path, "w");
    if (!f) return util_diag_fail(d, "cannot write %s: %s", path, strerror(errno));
    an_plot_svg(fig, f);
    /* | rather than ||: the file is closed whether or not a write failed */
    bool failed = to_stdout ? fflush(f) != 0 : (ferror(f) | fclose(f)) != 0;
    return failed ? util_diag_fail(d, "cannot write %s", path) : UTIL_OK;
}

static int draw(const options *o, util_diag *d)
{
    sqlite3 *db = NULL;
    an_plot fig = {0};
    int rc = an_open(o->path, &db, d);
    if (!rc) rc = an_plot_compute(db, &o->req, &fig, d);
    if (!rc && o->svg) rc = write_svg(&fig, o->svg, d);
    if (!rc && o->terminal) {
        an_plot_text(&fig, TEXT_W, TEXT_H, stdout);
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
        code = cli_fail(&d, draw(&o, &d));
        util_diag_fini(&d);
    }
    free(o.runs);
    return code;
}
