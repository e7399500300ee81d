/*
 * runner.h: running the servesim binary from a test -- its exit status and
 * what it printed, each stream to a file and read back.
 */
#ifndef RUNNER_H
#define RUNNER_H

#include <stdarg.h>
#include <sys/types.h>

typedef struct result {
    int status; /* exit status, or 128 + signal */
    char *out, *err;
} result;

/* A whole file ("" when it cannot be read); caller frees. */
char *runner_read(const char *path);
/* Starts exe with argv (argv[0] included, NULL-terminated), stdout and
 * stderr to the files out and err. */
pid_t runner_spawn(const char *exe, char *const *argv, const char *out, const char *err);
/* Waits for pid and reads what it printed. */
result runner_finish(pid_t pid, const char *out, const char *err);
/* Runs exe with argv (argv[0] included, NULL-terminated), printing into
 * dir/stdout and dir/stderr: for arguments counted at run time. */
result runner_argv(const char *exe, const char *dir, char *const *argv);
/* Runs exe with the arguments a0, ... up to a NULL (at most 30), printing
 * into dir/stdout and dir/stderr. */
result runner_vrun(const char *exe, const char *dir, const char *a0, va_list ap);
/* The same with the arguments given directly: runner_run(exe, dir, "run",
 * "x.json", NULL). */
result runner_run(const char *exe, const char *dir, const char *a0, ...);
void runner_drop(result *r);
/* The whole file at path (caller frees); one that cannot be read ends the
 * program with a TAP "Bail out!" naming it, since the tests after it would
 * be meaningless. */
char *runner_read_or_bail(const char *path);

/* The first column of the first row of sql on the database file at path,
 * opened read-only: a number (NAN when there is no row, or it is NULL), or
 * text ("" then; caller frees) -- what a test reads back of a run the
 * binary stored. */
double runner_q1(const char *path, const char *sql);
char *runner_q1_text(const char *path, const char *sql);

#endif /* RUNNER_H */
