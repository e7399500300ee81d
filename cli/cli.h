/*
 * cli: the `servesim` program, a thin layer over the libraries.  Each command
 * parses its options, calls sim/, analysis/ or models/, prints, and maps the
 * libraries' status codes to exit codes.  Only this layer writes to stdout
 * and stderr.
 */
#ifndef CLI_H
#define CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "an.h"
#include "util.h"

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAIL = 1,        /* any failure that is not the user's input */
    CLI_EXIT_USAGE = 2,       /* bad usage or bad input: scenario, override, file */
    CLI_EXIT_INTERRUPTED = 130,
    CLI_CONTINUE = -1,        /* option parsing: go on and run the command */
};

int cli_run(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_catalog(int argc, char **argv);
int cli_keys(int argc, char **argv);
int cli_validate(int argc, char **argv);
int cli_import(int argc, char **argv);
int cli_replay(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_calibrate(int argc, char **argv);
int cli_compare(int argc, char **argv);
int cli_slo_curve(int argc, char **argv);
int cli_timeline(int argc, char **argv);
int cli_sweep(int argc, char **argv);
int cli_plan(int argc, char **argv);
int cli_lesson(int argc, char **argv);
int cli_plot(int argc, char **argv);
int cli_explore(int argc, char **argv);

/* figure.c: a figure to FILE.png (cairo) or FILE.svg, whole or not at all;
 * "-": SVG to stdout. */
int cli_write_figure(const an_plot *fig, an_plot_size size, const char *path, util_diag *d);

/* ---- options (opt.c) ---- */

/* A list of arguments: the values of a repeatable option, or the
 * positional arguments.  A repeatable option's list is grown by cli_parse
 * and freed with cli_args_fini; the positional list points into argv. */
typedef struct cli_args {
    char **v;
    int n;
} cli_args;
void cli_args_fini(cli_args *a);

typedef enum cli_opt_kind {
    CLI_FLAG,      /* bool *: set to true */
    CLI_STRING,    /* const char **: the value (the last one given) */
    CLI_STRINGS,   /* cli_args *: every value, in order (repeatable) */
    CLI_INT,       /* int *: a whole number in [lo, hi] */
    CLI_NUMBER,    /* double *: a number in [lo, hi] */
    CLI_SECONDS,   /* double *: a time > 0, in seconds or with a unit (an_parse_seconds) */
    CLI_RUN,       /* int64_t *: a run id (1, 2, ...) */
    CLI_CHOICE,    /* int *: the value's index in choices */
    CLI_CALL,      /* call(opt, cmd, value) takes the value */
    CLI_CALL_FLAG, /* call(opt, cmd, NULL): takes no value */
} cli_opt_kind;

typedef struct cli_opt cli_opt;
/* CLI_CONTINUE, or the exit code after saying what is wrong. */
typedef int cli_opt_fn(const cli_opt *opt, const char *cmd, const char *value);

/* One option of a command's table; a table ends with an entry whose name is
 * NULL.  A bad value is named "LABEL VALUE: expected ..." where LABEL is
 * -c when the option has a short name, else --name, and the expectation
 * the kind's ("1 .. 1024", "a number in 0 .. 1", "a run id (1, 2, ...)",
 * "a, b or c") unless expect gives one. */
struct cli_opt {
    const char *name; /* the long name, without "--" */
    char short_name;  /* 0: none */
    cli_opt_kind kind;
    void *dest;
    double lo, hi;               /* CLI_INT, CLI_NUMBER: the range, both ends included */
    const char *expect;          /* instead of the kind's "expected ..." */
    const char *const *choices;  /* CLI_CHOICE: NULL-terminated */
    cli_opt_fn *call;            /* CLI_CALL, CLI_CALL_FLAG */
    bool *seen;                  /* set to true when the option is given; may be NULL */
};

/* Parses argv[1..argc-1] as getopt_long would, permuting: options anywhere
 * (--name VALUE, --name=VALUE, an unambiguous prefix of a name, -c VALUE,
 * -cVALUE, clusters -qv), "--" ends them; -h or --help prints usage.  The
 * other arguments, in order, go to *positional (pointing into argv, whose
 * slots it reuses).  Returns CLI_CONTINUE, CLI_EXIT_OK after --help, or
 * CLI_EXIT_USAGE after saying what is wrong (the first mistake). */
int cli_parse(const char *cmd, const char *usage, const cli_opt *opts, int argc, char **argv,
              cli_args *positional);

/* ---- how a report is shown: the options `run` and `report` share ---- */

typedef enum cli_format { CLI_TEXT, CLI_JSON, CLI_CSV, CLI_MARKDOWN } cli_format;

typedef struct cli_view {
    cli_format format;
    bool by_class, definitions;
    an_options what_if; /* --slo thresholds and targets; --by replica, tenant, tier */
} cli_view;

/* The shared options' entries of an option table, taken by cli_view_option
 * into the cli_view at v. */
#define CLI_VIEW_OPTS(v)                                                                           \
    {.name = "json", .kind = CLI_CALL_FLAG, .dest = (v), .call = cli_view_option},                \
        {.name = "csv", .kind = CLI_CALL_FLAG, .dest = (v), .call = cli_view_option},             \
        {.name = "markdown", .kind = CLI_CALL_FLAG, .dest = (v), .call = cli_view_option},        \
        {.name = "by", .kind = CLI_CALL, .dest = (v), .call = cli_view_option},                   \
        {.name = "slo", .kind = CLI_CALL, .dest = (v), .call = cli_view_option},                  \
        {.name = "definitions", .kind = CLI_CALL_FLAG, .dest = (v), .call = cli_view_option}
#define CLI_VIEW_USAGE                                                                             \
    "  --slo KEY=S            what-if SLO: ttft=0.5, tpot=0.05, e2e=20 replace the scenario's\n"   \
    "                         thresholds; CLASS.ttft=0.3 one class's; ttft_p99=2 asks whether\n"    \
    "                         P99 TTFT is within 2 s, with the margin (repeatable; it\n"      \
    "                         replaces the scenario's slo.ttft_p99_s); task_e2e=30 an agent\n"  \
    "                         task's; times in seconds, or with a unit: ttft=500ms, e2e=2min\n" \
    "  --by class|replica|model|tenant|tier|session\n"                                                  \
    "                         add the sections of each request class, replica, model,\n"     \
    "                         tenant or tier (priority), with each tenant's and tier's\n"    \
    "                         shed share and Jain's fairness index over tenants\n"          \
    "                         (repeatable); session: each turn number of the chat\n"      \
    "                         sessions: requests, mean prompt, hit rate, TTFT\n"          \
    "  --definitions          per-token latency under every tool's definition, side by side\n" \
    "  --json, --csv, --markdown   the report as JSON, CSV (metric,value) or Markdown\n"

/* Takes one of the shared options into the cli_view at opt->dest. */
cli_opt_fn cli_view_option;
void cli_view_fini(cli_view *v);
/* Reads a scenario file with --unset removals, then --set overrides, then
 * --seed (may be NULL) applied, unvalidated; a scenario without a name is
 * named after its file.  Removals go first so that --unset workload.arrival
 * --set workload.arrival.process=closed replaces a whole object. */
int cli_read_scenario(const char *path, const cli_args *unsets, const cli_args *sets,
                      const char *seed, cJSON **out, util_diag *d);
/* `--run ID`: the id, or 0 after saying why it is not one. */
int64_t cli_parse_run(const char *cmd, const char *value);
/* Opens path read-only and finds the run: *run_id when it is not 0, else
 * the newest run's. */
int cli_open_run(const char *path, sqlite3 **db, int64_t *run_id, util_diag *d);
/* Computes run_id's report from the database and prints it as v says. */
/* clear_line: first clear the progress line on stderr (once the report is
 * computed, before it is printed). */
int cli_print_report(sqlite3 *db, int64_t run_id, const cli_view *v, bool clear_line, util_diag *d);

/* Stopping on a signal (signals.c): the flag a library polls (the signal's
 * number once one came), catching SIGINT, SIGTERM and SIGHUP around a run,
 * and the exit code of a command they stopped (128 + the number). */
const volatile sig_atomic_t *cli_stop_flag(void);
void cli_catch_stop_signals(void);
void cli_release_stop_signals(void);
int cli_stop_exit_code(void);

/* Prints every message of d as "servesim: ..." and returns the exit code for
 * status. */
int cli_fail(const util_diag *d, int status);
/* "servesim: message" on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- measured runs (measured.c) ---- */

typedef struct val_runs val_runs;
typedef struct mdl_catalog mdl_catalog;
/* Whether path is an SQLite file (a database of measured runs, not a
 * benchmark tool's file). */
bool cli_is_database(const char *path);
/* The measured runs of paths, each settled with --scenario and --set
 * (val_settle; each --unset before any --set): a tool's file, read by
 * val_import, or a database's measured
 * runs -- run_id's, the newest when newest is set, else every one. */
int cli_measured_runs(char *const *paths, int n, const char *scenario, const cli_args *unsets,
                      const cli_args *sets, int64_t run_id, bool newest, const mdl_catalog *cat,
                      val_runs *runs, util_diag *d);

#endif /* CLI_H */
