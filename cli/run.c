/*
 * run.c: `servesim run` -- validate a scenario, simulate it into a database,
 * and print the report computed back from that database.
 *
 * Order matters for "bad input loses nothing": the scenario and every
 * override are validated before the database is opened, so a bad scenario
 * never creates or touches a file; the run itself is one transaction.
 */
#include "cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "an.h"
#include "rec.h"

static const char run_usage[] =
    "usage: servesim run SCENARIO.json [-o FILE.db] [--set PATH=VALUE]... [--unset PATH]...\n"
    "                    [--seed N] [--record-iterations] [--quiet] [report options]\n"
    "\n"
    "Simulates the scenario, records every request in FILE.db (default servesim.db; an\n"
    "existing servesim database gains a new run), and prints the run's report.\n"
    "\n"
    "  -o, --output FILE.db   database to write (default servesim.db)\n"
    "  --set PATH=VALUE       override a scenario key, e.g. --set workload.arrival.rate_per_s=12;\n"
    "                         VALUE is read as JSON, else as a string (repeatable)\n"
    "  --unset PATH           remove a scenario key, e.g. --unset workload.prompt_tokens;\n"
    "                         every --unset applies before every --set (repeatable)\n"
    "  --seed N               override the scenario's seed\n"
    "  --record-iterations    also store every engine iteration (table iterations): pooled\n"
    "                         ITL, KV and power time series; one row per decode step\n"
    "  -q, --quiet            no progress line\n"
    "\n"
    "report options (as servesim report):\n"
    CLI_VIEW_USAGE
    "\n"
    "Ctrl-C (SIGINT), SIGTERM or SIGHUP stops at the next event, keeps what was\n"
    "recorded, marks the run interrupted, prints how to get its report and exits\n"
    "128 + the signal's number (130 for Ctrl-C).  An overloaded cluster stops the run\n"
    "early and marks it overloaded.  servesim keys lists every scenario key.\n";

typedef struct run_opts {
    const char *scenario, *output, *seed;
    cli_args sets, unsets;
    bool quiet, iterations;
    cli_view view;
} run_opts;

/* Returns CLI_CONTINUE, or the exit code when there is nothing to run. */
static int parse(int argc, char **argv, run_opts *o)
{
    *o = (run_opts){.output = "servesim.db"};
    const cli_opt opts[] = {
        {.name = "output", .short_name = 'o', .kind = CLI_STRING, .dest = &o->output},
        {.name = "set", .kind = CLI_STRINGS, .dest = &o->sets},
        {.name = "unset", .kind = CLI_STRINGS, .dest = &o->unsets},
        {.name = "seed", .kind = CLI_STRING, .dest = &o->seed},
        {.name = "quiet", .short_name = 'q', .kind = CLI_FLAG, .dest = &o->quiet},
        {.name = "record-iterations", .kind = CLI_FLAG, .dest = &o->iterations},
        CLI_VIEW_OPTS(&o->view),
        {0},
    };
    cli_args pos;
    int code = cli_parse("run", run_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    if (pos.n != 1)
        return cli_usage_error("run", pos.n == 0 ? "missing SCENARIO.json" : "expected one SCENARIO.json");
    o->scenario = pos.v[0];
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

int cli_read_scenario(const char *path, const cli_args *unsets, const cli_args *sets,
                      const char *seed_arg, cJSON **out, util_diag *d)
{
    cJSON *root;
    int rc = util_json_read_file(path, &root, d);
    if (rc) return rc;
    if (cJSON_IsObject(root) && !cJSON_GetObjectItemCaseSensitive(root, "name"))
        name_after_file(root, path);
    for (int i = 0; i < unsets->n; i++)
        if (cJSON_IsObject(root) && util_json_unset(root, unsets->v[i], d)) rc = UTIL_EINPUT;
    for (int i = 0; i < sets->n; i++)
        if (cJSON_IsObject(root) && util_json_set(root, sets->v[i], d)) rc = UTIL_EINPUT;
    if (seed_arg) {
        char *end;
        unsigned long long seed = strtoull(seed_arg, &end, 10);
        util_clip_buf b;
        if (*seed_arg == '-' || *end || end == seed_arg || seed > (1ull << 53))
            rc = util_diag_add(d, "--seed %s: expected a whole number from 0 to 2^53",
                               util_clip(seed_arg, &b));
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

/* The run's progress on a terminal: a bar of how far it is towards its
 * stop (stop.requests, or stop.duration_s, whichever is nearer), requests
 * per second of wall clock and the time left at that rate, redrawn four
 * times a second. */
typedef struct progress_line {
    double start, last;
    int64_t stop_requests;  /* 0: none */
    double stop_duration_s; /* 0: none */
    bool shown;
} progress_line;

#define BAR_WIDTH 28

/* The fraction done, or -1 when the run stops by itself (a trace). */
static double fraction_done(const progress_line *pl, const sim_progress *p)
{
    double f = -1;
    if (pl->stop_requests > 0) f = (double)p->done / (double)pl->stop_requests;
    if (pl->stop_duration_s > 0 && p->sim_s / pl->stop_duration_s > f)
        f = p->sim_s / pl->stop_duration_s;
    return f > 1 ? 1 : f;
}

static void show_progress(const sim_progress *p, void *arg)
{
    progress_line *pl = arg;
    double now = util_wall_s(), wall = now - pl->start;
    if (pl->shown && now - pl->last < 0.25) return; /* four times a second */
    pl->last = now;
    pl->shown = true;
    double f = fraction_done(pl, p), rate = wall > 0 ? (double)p->done / wall : 0;
    if (f < 0) {
        fprintf(stderr, "\r  %lld requests done, %.0f req/s, %.1f s simulated\033[K",
                (long long)p->done, rate, p->sim_s);
        return;
    }
    char bar[BAR_WIDTH + 1];
    int filled = (int)(f * BAR_WIDTH);
    for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < filled ? '#' : '.';
    bar[BAR_WIDTH] = '\0';
    double eta = f > 0 ? wall * (1 - f) / f : 0;
    fprintf(stderr, "\r  [%s] %3.0f%%  %lld requests, %.0f req/s, ETA %.0f s\033[K", bar,
            100 * f, (long long)p->done, rate, eta);
}

/* The run's rows summarised as they are recorded, for the report printed
 * after it (an_stream): the same figures as a scan of the stored rows,
 * without reading them back. */
typedef struct summary {
    const cli_view *view;
    an_stream *stream;
    int64_t rows, unfinished; /* request rows written, and of them unfinished */
} summary;

static void summary_start(void *arg, const sim_scenario *sc)
{
    summary *s = arg;
    s->stream = an_stream_new(sc->json, sc->replicas, &s->view->what_if);
}

static void summary_add(void *arg, const sim_request_row *row)
{
    summary *s = arg;
    s->rows++;
    s->unfinished += !strcmp(row->status, "unfinished");
    an_request x = {.id = row->id, .replica = row->replica, .cls = row->cls,
                    .status = row->status, .arrival_s = row->arrival_s,
                    .enqueue_s = row->enqueue_s, .first_scheduled_s = row->first_scheduled_s,
                    .first_token_s = row->first_token_s, .finish_s = row->finish_s,
                    .prompt_tokens = row->prompt_tokens, .output_tokens = row->output_tokens,
                    .preemptions = row->preemptions, .cached_tokens = row->cached_tokens,
                    .decode_replica = row->decode_replica,
                    .shed = row->reason && !strcmp(row->reason, SIM_SHED),
                    .retried = row->retried};
    an_stream_add(s->stream, &x);
}

/* The phase after the simulation, on the same line. */
static void show_phase(const progress_line *pl, const char *what)
{
    if (pl->shown) fprintf(stderr, "\r  %s\033[K", what);
}

static void clear_progress(const progress_line *pl)
{
    if (pl->shown) fprintf(stderr, "\r\033[K");
}

/* What an interrupted run says instead of its report: computing a report
 * of millions of rows would hold the exit up for seconds.  It counts the
 * rows as they were written: the requests that ended, and those still in
 * flight when it stopped, kept as unfinished. */
static void say_interrupted(const run_opts *o, const rec_run_result *res, const summary *sum)
{
    fprintf(stderr,
            "servesim: run %lld interrupted (%s); the %lld requests recorded are kept in %s "
            "(%lld ended, %lld unfinished: in flight when it stopped).\n"
            "servesim report %s --run %lld   prints its report\n",
            (long long)res->run_id, res->reason ? res->reason : "stopped", (long long)sum->rows,
            o->output, (long long)(sum->rows - sum->unfinished), (long long)sum->unfinished,
            o->output, (long long)res->run_id);
}

/* Simulates the scenario (root, which rec_run takes) into the database,
 * drawing the progress line on a terminal. */
static int simulate(const run_opts *o, const mdl_catalog *cat, cJSON *root, rec_run_result *res,
                    summary *sum, bool *shown, util_diag *d)
{
    char *dir = util_dirname(o->scenario);
    progress_line pl = {.start = util_wall_s(),
                        .stop_requests = (int64_t)util_json_number(root, "stop.requests", 0),
                        .stop_duration_s = util_json_number(root, "stop.duration_s", 0)};
    bool show = !o->quiet && isatty(STDERR_FILENO);
    util_diag warnings;
    util_diag_init(&warnings);
    rec_run_spec spec = {.catalog = cat, .scenario = root, .origin = o->scenario,
                         .base_dir = dir, .output = o->output, .iterations = o->iterations,
                         .stop = cli_stop_flag(), .progress = show ? show_progress : NULL,
                         .progress_arg = &pl, .warnings = &warnings, .writer_thread = true,
                         .on_load = summary_start, .tee = summary_add, .tee_arg = sum};
    cli_catch_stop_signals();
    int rc = rec_run(&spec, res, d);
    cli_release_stop_signals();
    if (res->status == SIM_STATUS_INTERRUPTED) clear_progress(&pl);
    else show_phase(&pl, "writing report ...");
    *shown = pl.shown;
    util_diag_print(&warnings, stderr, "servesim: warning");
    util_diag_fini(&warnings);
    free(dir);
    return rc;
}

/* The recorded run's report, from its database -- or, interrupted, how to
 * get it. */
static int report(const run_opts *o, const rec_run_result *res, summary *sum, bool bar,
                  util_diag *d)
{
    if (res->status == SIM_STATUS_INTERRUPTED) {
        say_interrupted(o, res, sum);
        return UTIL_EINTR;
    }
    sqlite3 *db = NULL;
    int rc = an_open(o->output, &db, d);
    cli_view view = o->view;
    view.what_if.stream = sum->stream;
    if (!rc) rc = cli_print_report(db, res->run_id, &view, bar, d);
    else if (bar) fprintf(stderr, "\r\033[K");
    sqlite3_close(db);
    return rc;
}

int cli_run(int argc, char **argv)
{
    run_opts o;
    int code = parse(argc, argv, &o);
    if (code == CLI_CONTINUE) {
        util_diag d;
        util_diag_init(&d);
        mdl_catalog *cat = NULL;
        cJSON *root = NULL;
        rec_run_result res = {0};
        int rc = mdl_catalog_load_default(&cat, &d);
        if (!rc) rc = cli_read_scenario(o.scenario, &o.unsets, &o.sets, o.seed, &root, &d);
        bool bar = false;
        summary sum = {.view = &o.view};
        if (!rc) {
            rc = simulate(&o, cat, root, &res, &sum, &bar, &d);
            root = NULL; /* rec_run's now */
        }
        if (!rc) rc = report(&o, &res, &sum, bar, &d);
        an_stream_free(sum.stream);
        code = cli_fail(&d, rc);
        if (rc == UTIL_EINTR) code = cli_stop_exit_code();
        rec_run_result_fini(&res);
        cJSON_Delete(root);
        mdl_catalog_destroy(cat);
        util_diag_fini(&d);
    }
    cli_args_fini(&o.sets);
    cli_args_fini(&o.unsets);
    cli_view_fini(&o.view);
    return code;
}
