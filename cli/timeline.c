/*
 * timeline.c: `servesim timeline` -- a stored run as a time series, one row
 * per interval, as an aligned table, CSV or JSON.  The numbers come from
 * an_timeline_compute; this file only parses options and prints, one row at
 * a time, so the output never needs more memory than the intervals.
 */
#include "cli.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an.h"

static const char timeline_usage[] =
    "usage: servesim timeline FILE.db [--run ID] [--interval S] [--replica K] [--csv | --json]\n"
    "\n"
    "Prints a stored run (default: the newest) as a time series, one row per\n"
    "interval [t, t+S) from 0 to the run's end, computed from the database alone:\n"
    "arrivals, completions and time-outs in it, and the average output token rate,\n"
    "requests waiting and in service, KV occupancy and power over it (the last two\n"
    "need `servesim run --record-iterations`; empty otherwise); with\n"
    "cluster.kv_offload, the share of its CPU and disk tiers in use too; with a\n"
    "fleet that changed (cluster.autoscaler, cluster.failures), the replicas\n"
    "loading, ready and draining over it, and of the requests sent in it the TTFT's P50 and\n"
    "P99 and (with an slo) the share meeting it; with failures, the replicas down\n"
    "until their replacement is ready.\n"
    "\n"
    "  --run ID       which run (servesim numbers runs 1, 2, ... in each database)\n"
    "  --interval S   interval length: seconds, or with a unit as --slo takes it (0.5,\n"
    "                 500ms, 2s, 250us, 1min, 1h; default 1 s)\n"
    "  --replica K    only replica K (disaggregated: its prefill or decode side)\n"
    "  --csv          print CSV: a header row, then one row per interval\n"
    "  --json         print a JSON array of one object per interval\n";

typedef enum format { TEXT, CSV, JSON } format;

/* The columns in order, named with their unit as in every format; width
 * and decimals are the aligned table's. */
enum {
    T_S, ARRIVALS, COMPLETIONS, TIMED_OUT, TOKENS, QUEUE, RUNNING, KV, POWER,
    CPU_TIER, DISK_TIER, /* only with kv_offload's tiers: after the others, which keep their place */
    LOADING, READY,      /* only when the fleet changed */
    DRAINING,            /* ... and the database says when drains began */
    FAILED,              /* only when a replica failed (all replicas) */
    TTFT_P50, TTFT_P99,  /* only when the fleet changed */
    ATTAINMENT,          /* ... and the run has an slo */
    N_COLUMNS
};

static const struct column {
    const char *name;
    int width, decimals;
} columns[N_COLUMNS] = {
    {"t_s", 10, 3},
    {"arrivals", 9, 0},
    {"completions", 12, 0},
    {"timed_out", 10, 0},
    {"output_tokens_per_s", 20, 1},
    {"queue", 9, 2},         /* requests */
    {"running", 9, 2},       /* requests */
    {"kv_occupancy", 13, 3}, /* fraction of the KV cache */
    {"power_w", 10, 1},
    {"cpu_tier_occupancy", 19, 3},  /* fraction of the CPU tiers */
    {"disk_tier_occupancy", 20, 3}, /* fraction of the disk tiers */
    {"loading", 9, 2},              /* replicas: provisioned, loading weights, warming up */
    {"ready", 9, 2},                /* replicas */
    {"draining", 9, 2},             /* replicas */
    {"failed", 9, 2},               /* replicas */
    {"ttft_p50_s", 11, 3},          /* of the requests sent in the interval */
    {"ttft_p99_s", 11, 3},
    {"attainment", 11, 3}, /* fraction of those sent meeting the slo */
};

/* Whether the run has column c: the tiers' only with the tiers, the
 * replicas' states only when its fleet changed, so that a fixed fleet's
 * timeline without tiers is as it was. */
static bool shown(const an_timeline *t, int c)
{
    if (c == CPU_TIER) return t->cpu_tier_occupancy != NULL;
    if (c == DISK_TIER) return t->disk_tier_occupancy != NULL;
    if (c == LOADING || c == READY || c == TTFT_P50 || c == TTFT_P99) return t->changing;
    if (c == DRAINING) return t->changing && t->has_drain;
    if (c == FAILED) return t->failures;
    if (c == ATTAINMENT) return t->changing && t->has_slo;
    return true;
}

/* Column c of interval i; NAN: no value (no iterations recorded). */
static double value(const an_timeline *t, size_t i, int c)
{
    switch (c) {
    case T_S: return (double)i * t->interval_s;
    case ARRIVALS: return (double)t->arrivals[i];
    case COMPLETIONS: return (double)t->completions[i];
    case TIMED_OUT: return (double)t->timed_out[i];
    case TOKENS: return t->output_tokens_per_s[i];
    case QUEUE: return t->queue[i];
    case RUNNING: return t->running[i];
    case KV: return t->kv_occupancy[i];
    case CPU_TIER: return t->cpu_tier_occupancy[i];
    case DISK_TIER: return t->disk_tier_occupancy[i];
    case LOADING: return t->loading[i];
    case READY: return t->ready[i];
    case DRAINING: return t->draining[i];
    case FAILED: return t->failed[i];
    case TTFT_P50: return t->ttft_p50_s[i];
    case TTFT_P99: return t->ttft_p99_s[i];
    case ATTAINMENT: return t->attainment[i];
    default: return t->power_w[i];
    }
}

static void print_text(const an_timeline *t, FILE *out)
{
    fprintf(out, "run %lld: %g s intervals from 0 to %g s, %s", (long long)t->run_id,
            t->interval_s, t->end_s, t->replica < 0 ? "all replicas" : "replica ");
    if (t->replica >= 0) fprintf(out, "%d", t->replica);
    fputs(t->has_iterations ? "\n" : " (no iterations recorded: no KV or power)\n", out);
    for (int c = 0; c < N_COLUMNS; c++)
        if (shown(t, c)) fprintf(out, "%*s", columns[c].width, columns[c].name);
    fputc('\n', out);
    for (size_t i = 0; i < t->n; i++) {
        for (int c = 0; c < N_COLUMNS; c++) {
            if (!shown(t, c)) continue;
            double v = value(t, i, c);
            if (isnan(v)) fprintf(out, "%*s", columns[c].width, "-");
            else fprintf(out, "%*.*f", columns[c].width, columns[c].decimals, v);
        }
        fputc('\n', out);
    }
}

/* Ten significant digits: exact for counts and interval starts, and enough
 * that the columns still add up to the run's totals. */
static void print_csv(const an_timeline *t, FILE *out)
{
    for (int c = 0; c < N_COLUMNS; c++)
        if (shown(t, c)) fprintf(out, "%s%s", c ? "," : "", columns[c].name);
    fputc('\n', out);
    for (size_t i = 0; i < t->n; i++) {
        for (int c = 0; c < N_COLUMNS; c++) {
            if (!shown(t, c)) continue;
            double v = value(t, i, c);
            if (c) fputc(',', out);
            if (!isnan(v)) fprintf(out, "%.10g", v);
        }
        fputc('\n', out);
    }
}

/* Written by hand rather than through cJSON: a tree of a million intervals
 * would cost far more than the intervals themselves. */
static void print_json(const an_timeline *t, FILE *out)
{
    fputc('[', out);
    for (size_t i = 0; i < t->n; i++) {
        fputs(i ? ",\n  {" : "\n  {", out);
        for (int c = 0; c < N_COLUMNS; c++) {
            if (!shown(t, c)) continue;
            double v = value(t, i, c);
            fprintf(out, "%s\"%s\": ", c ? ", " : "", columns[c].name);
            if (isnan(v)) fputs("null", out);
            else fprintf(out, "%.10g", v);
        }
        fputc('}', out);
    }
    fputs(t->n ? "\n]\n" : "]\n", out);
}

static int print_timeline(sqlite3 *db, int64_t run_id, double interval_s, int replica, format f,
                          util_diag *d)
{
    an_timeline t;
    int rc = an_timeline_compute(db, run_id, interval_s, replica, &t, d);
    if (!rc) {
        if (f == CSV) print_csv(&t, stdout);
        else if (f == JSON) print_json(&t, stdout);
        else print_text(&t, stdout);
    }
    an_timeline_fini(&t);
    if (!rc && fflush(stdout)) rc = util_diag_fail(d, "cannot write the timeline");
    return rc;
}

/* The command line, checked. */
typedef struct options {
    const char *path;
    int64_t run_id; /* 0: the newest */
    double interval_s;
    int replica; /* -1: all */
    format f;
} options;

static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){.interval_s = 1, .replica = -1, .f = TEXT};
    bool csv = false, json = false;
    const cli_opt opts[] = {
        {.name = "run", .kind = CLI_RUN, .dest = &o->run_id},
        {.name = "interval", .kind = CLI_SECONDS, .dest = &o->interval_s},
        {.name = "replica", .kind = CLI_INT, .dest = &o->replica, .lo = 0, .hi = INT_MAX,
         .expect = "expected a replica (0, 1, ...)"},
        {.name = "csv", .kind = CLI_FLAG, .dest = &csv},
        {.name = "json", .kind = CLI_FLAG, .dest = &json},
        {0},
    };
    cli_args pos;
    int code = cli_parse("timeline", timeline_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    if (csv && json) return cli_usage_error("timeline", "--csv and --json: choose one");
    o->f = csv ? CSV : json ? JSON : TEXT;
    if (pos.n != 1) return cli_usage_error("timeline", "expected one FILE.db");
    o->path = pos.v[0];
    return CLI_CONTINUE;
}

int cli_timeline(int argc, char **argv)
{
    options o;
    int code = parse_options(argc, argv, &o);
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    sqlite3 *db = NULL;
    int rc = cli_open_run(o.path, &db, &o.run_id, &d);
    if (!rc) rc = print_timeline(db, o.run_id, o.interval_s, o.replica, o.f, &d);
    code = cli_fail(&d, rc);
    sqlite3_close(db);
    util_diag_fini(&d);
    return code;
}
