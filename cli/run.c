/*
 * run.c: `servesim run` -- validate a scenario, simulate it into a database,
 * and print the report computed back from that database.
 *
 * Order matters for "bad input loses nothing": the scenario and every
 * override are validated before the database is opened, so a bad scenario
 * never creates or touches a file; the run itself is one transaction.
 */
#include "cli.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "an.h"
#include "sim.h"

static const char run_usage[] =
    "usage: servesim run SCENARIO.json [-o FILE.db] [--set PATH=VALUE]... [--seed N]\n"
    "                    [--record-iterations] [--quiet] [report options]\n"
    "\n"
    "Simulates the scenario, records every request in FILE.db (default servesim.db; an\n"
    "existing servesim database gains a new run), and prints the run's report.\n"
    "\n"
    "  -o, --output FILE.db   database to write (default servesim.db)\n"
    "  --set PATH=VALUE       override a scenario key, e.g. --set workload.arrival.rate_per_s=12;\n"
    "                         VALUE is read as JSON, else as a string (repeatable)\n"
    "  --seed N               override the scenario's seed\n"
    "  --record-iterations    also store every engine iteration (table iterations): pooled\n"
    "                         ITL, KV and power time series; one row per decode step\n"
    "  -q, --quiet            no progress line\n"
    "\n"
    "report options (as servesim report):\n"
    CLI_VIEW_USAGE
    "\n"
    "Ctrl-C stops at the next event, keeps what was recorded, marks the run\n"
    "interrupted and exits 130.  servesim keys lists every scenario key.\n";

typedef struct run_opts {
    const char *scenario, *output, *seed;
    char **sets;
    int n_sets;
    bool quiet, iterations;
    cli_view view;
} run_opts;

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Returns CLI_CONTINUE, or the exit code when there is nothing to run. */
static int parse(int argc, char **argv, run_opts *o)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'}, {"set", required_argument, NULL, 's'},
        {"seed", required_argument, NULL, 'S'},   {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},         {"record-iterations", no_argument, NULL, 'i'},
        CLI_VIEW_LONGOPTS,
        {0, 0, 0, 0},
    };
    *o = (run_opts){.output = "servesim.db"};
    o->sets = util_xcalloc((size_t)argc, sizeof *o->sets);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        int taken = cli_view_option(&o->view, "run", c, optarg);
        if (taken) {
            if (taken != 1) return taken;
            continue;
        }
        switch (c) {
        case 'o': o->output = optarg; break;
        case 's': o->sets[o->n_sets++] = optarg; break;
        case 'S': o->seed = optarg; break;
        case 'q': o->quiet = true; break;
        case 'i': o->iterations = true; break;
        case 'h': fputs(run_usage, stdout); return CLI_EXIT_OK;
        case ':': return cli_usage_error("run", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("run", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("run", optind == argc ? "missing SCENARIO.json"
                                                     : "expected one SCENARIO.json");
    o->scenario = argv[optind];
    return CLI_CONTINUE;
}

/* A scenario without a name is named after its file: chat.json -> "chat". */
static void name_after_file(cJSON *root, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    char *name = util_xasprintf("%.*s", dot && dot != base ? (int)(dot - base) : (int)strlen(base),
                                base);
    cJSON_AddStringToObject(root, "name", name);
    free(name);
}

int cli_read_scenario(const char *path, char **sets, int n_sets, const char *seed_arg,
                      cJSON **out, util_diag *d)
{
    cJSON *root;
    int rc = util_json_read_file(path, &root, d);
    if (rc) return rc;
    if (cJSON_IsObject(root) && !cJSON_GetObjectItemCaseSensitive(root, "name"))
        name_after_file(root, path);
    for (int i = 0; i < n_sets; i++)
        if (cJSON_IsObject(root) && util_json_set(root, sets[i], d)) rc = UTIL_EINPUT;
    if (seed_arg) {
        char *end;
        unsigned long long seed = strtoull(seed_arg, &end, 10);
        if (*seed_arg == '-' || *end || end == seed_arg || seed > (1ull << 53))
            rc = util_diag_add(d, "--seed %s: expected a whole number from 0 to 2^53", seed_arg);
        else if (cJSON_IsObject(root)) {
            cJSON_DeleteItemFromObjectCaseSensitive(root, "seed");
            cJSON_AddNumberToObject(root, "seed", (double)seed);
        }
    }
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    *out = root;
    return UTIL_OK;
}

/* The scenario with its overrides, validated; nothing is written yet. */
static int load_scenario(const run_opts *o, const mdl_catalog *cat, sim_scenario *sc,
                         util_diag *d)
{
    cJSON *root;
    int rc = cli_read_scenario(o->scenario, o->sets, o->n_sets, o->seed, &root, d);
    if (rc) return rc;
    char *dir = util_dirname(o->scenario);
    rc = sim_scenario_load(root, cat, dir, sc, d);
    free(dir);
    if (rc) {
        /* name the file once, so messages with bare JSON paths have a home */
        util_diag_add(d, "%s: %d error%s; nothing was run", o->scenario, d->count,
                      d->count == 1 ? "" : "s");
    }
    return rc;
}

typedef struct progress_line {
    double start, last;
    bool shown;
} progress_line;

static void show_progress(const sim_progress *p, void *arg)
{
    progress_line *pl = arg;
    double now = util_wall_s();
    if (now - pl->start < 1.0 || now - pl->last < 0.25) return; /* only runs over a second */
    pl->last = now;
    pl->shown = true;
    fprintf(stderr, "\r  simulated %.1f s, %lld requests done of %lld arrived \033[K", p->sim_s,
            (long long)p->done, (long long)p->arrived);
}

static int simulate(const run_opts *o, const sim_scenario *sc, sim_recorder *rec,
                    int64_t *run_id, util_diag *d)
{
    int rc = sim_recorder_begin(rec, sc, run_id, d);
    if (rc) return rc;
    sim_sink sink = o->iterations ? sim_recorder_sink_with_iterations(rec) : sim_recorder_sink(rec);
    sim_engine *e = sim_engine_create(sc, &sink);
    progress_line pl = {util_wall_s(), 0, false};
    bool show = !o->quiet && isatty(STDERR_FILENO);
    struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND};
    struct sigaction old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    rc = sim_engine_run(e, &interrupted, show ? show_progress : NULL, &pl);
    sigaction(SIGINT, &old, NULL);
    if (pl.shown) fprintf(stderr, "\r\033[K");
    sim_progress p;
    sim_engine_progress(e, &p);
    const char *why = sim_engine_error(e);
    if (rc == UTIL_EFAIL) util_diag_fail(d, "%s", why ? why : sim_recorder_error(rec));
    sim_engine_destroy(e);
    if (rc == UTIL_EFAIL) return rc;
    const char *status = rc == UTIL_EINTR ? "interrupted" : "completed";
    int frc = sim_recorder_finish(rec, status, p.sim_s, util_wall_s() - pl.start, p.events, d);
    return frc ? frc : rc;
}

int cli_run(int argc, char **argv)
{
    run_opts o;
    int prc = parse(argc, argv, &o);
    if (prc != CLI_CONTINUE) {
        free(o.sets);
        cli_view_fini(&o.view);
        return prc;
    }
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *cat = NULL;
    sim_scenario sc = {0};
    sim_recorder *rec = NULL;
    int rc = mdl_catalog_load_default(&cat, &d);
    if (!rc) rc = load_scenario(&o, cat, &sc, &d);
    if (!rc) rc = sim_recorder_open(o.output, &rec, &d);
    if (!rc) {
        int64_t run_id = 0;
        int src = simulate(&o, &sc, rec, &run_id, &d);
        if (src == UTIL_OK || src == UTIL_EINTR) {
            rc = cli_print_report(sim_recorder_db(rec), run_id, &o.view, &d);
            if (!rc) rc = src;
        } else {
            sim_recorder_abort(rec);
            rc = src;
        }
    }
    int code = cli_fail(&d, rc);
    sim_recorder_close(rec);
    sim_scenario_fini(&sc);
    mdl_catalog_destroy(cat);
    util_diag_fini(&d);
    free(o.sets);
    cli_view_fini(&o.view);
    return code;
}
