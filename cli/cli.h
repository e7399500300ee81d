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
int cli_compare(int argc, char **argv);
int cli_slo_curve(int argc, char **argv);
int cli_timeline(int argc, char **argv);
int cli_sweep(int argc, char **argv);
int cli_plan(int argc, char **argv);
int cli_lesson(int argc, char **argv);
int cli_plot(int argc, char **argv);

/* How a report is shown: the options `run` and `report` share. */
typedef enum cli_format { CLI_TEXT, CLI_JSON, CLI_CSV, CLI_MARKDOWN } cli_format;

typedef struct cli_view {
    cli_format format;
    bool by_class, definitions;
    an_options what_if; /* --slo thresholds and targets; --by replica */
} cli_view;

/* getopt_long entries of the shared options, and their codes. */
#define CLI_VIEW_LONGOPTS                                                                          \
    {"json", no_argument, NULL, 'j'}, {"csv", no_argument, NULL, 'C'},                             \
        {"markdown", no_argument, NULL, 'M'}, {"by", required_argument, NULL, 'b'},                \
        {"slo", required_argument, NULL, 'L'}, {"definitions", no_argument, NULL, 'D'}
#define CLI_VIEW_USAGE                                                                             \
    "  --slo KEY=S            what-if SLO: ttft=0.5, tpot=0.05, e2e=20 replace the scenario's\n"   \
    "                         thresholds; CLASS.ttft=0.3 one class's; ttft_p99=2 asks whether\n"    \
    "                         P99 TTFT is within 2 s, with the margin (repeatable); times in\n" \
    "                         seconds, or with a unit: ttft=500ms, e2e=2min\n"                   \
    "  --by class|replica     add each request class's, or each replica's, sections\n"          \
    "  --definitions          per-token latency under every tool's definition, side by side\n" \
    "  --json, --csv, --markdown   the report as JSON, CSV (metric,value) or Markdown\n"

/* Takes one shared option (its getopt code and value): 1 if it was one, 0
 * if not, or CLI_EXIT_USAGE after saying what is wrong. */
int cli_view_option(cli_view *v, const char *cmd, int code, const char *value);
void cli_view_fini(cli_view *v);
/* Reads a scenario file with --set overrides and --seed (may be NULL)
 * applied, unvalidated; a scenario without a name is named after its file. */
int cli_read_scenario(const char *path, char **sets, int n_sets, const char *seed, cJSON **out,
                      util_diag *d);
/* `--run ID`: the id, or 0 after saying why it is not one. */
int64_t cli_parse_run(const char *cmd, const char *value);
/* Opens path read-only and finds the run: run_id is kept when run was given
 * (parsed by cli_parse_run), else the newest run's. */
int cli_open_run(const char *path, const char *run, sqlite3 **db, int64_t *run_id, util_diag *d);
/* Computes run_id's report from the database and prints it as v says. */
int cli_print_report(sqlite3 *db, int64_t run_id, const cli_view *v, util_diag *d);

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

#endif /* CLI_H */
