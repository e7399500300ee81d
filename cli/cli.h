/*
 * cli: the `servesim` program, a thin layer over the libraries.  Each command
 * parses its options, calls sim/, analysis/ or models/, prints, and maps the
 * libraries' status codes to exit codes.  Only this layer writes to stdout
 * and stderr.
 */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

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

/* Computes run_id's report from the database and prints it as text or JSON;
 * by_class adds each class's sections. */
int cli_print_report(sqlite3 *db, int64_t run_id, bool json, bool by_class, util_diag *d);
/* The value of --by: "class" is the one grouping there is.  Returns
 * CLI_CONTINUE, or CLI_EXIT_USAGE after saying why. */
int cli_parse_by(const char *cmd, const char *value, bool *by_class);

/* Prints every message of d as "servesim: ..." and returns the exit code for
 * status. */
int cli_fail(const util_diag *d, int status);
/* "servesim: message" on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* CLI_H */
