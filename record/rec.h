/*
 * rec: a run's record -- the SQLite sink the engine's facts stream into,
 * the database they are published in, and rec_run, the one path every
 * command takes to run a scenario end to end.
 *
 * The engine (sim/) knows only its sink; this library is the one that knows
 * SQLite on the writing side (analysis/ reads).  A rec_recorder is an
 * opaque handle holding one run's transaction; a database file may take
 * any number of runs, from any number of processes at once
 * (docs/database.md says how they share it).
 */
#ifndef REC_H
#define REC_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "sim.h"
#include "util.h"

/* How a run ended, for the record: the status is sim_status. */
typedef struct rec_run_end {
    sim_status status;
    const char *reason; /* why it was interrupted or overloaded, or NULL */
    double sim_end_s, wall_s;
    int64_t events;
} rec_run_end;

/* ---- the recorder ---- */

typedef struct rec_recorder rec_recorder;

/* The SQL that creates a servesim database's tables and view (documented in
 * docs/database.md), for tools that build one themselves. */
extern const char rec_schema_sql[];
/* The schema version it makes: a database made from it by hand (an
 * in-memory one) sets PRAGMA user_version to it, so readers know its columns. */
extern const int rec_schema_version;

/* Checks, reading only, that path may take runs: absent, or a servesim
 * database.  Anything else -- not SQLite, another program's SQLite file
 * (even an empty one), not a regular file, "" or ":memory:" -- is refused
 * with UTIL_EINPUT and left untouched. */
int rec_check(const char *path, util_diag *d);
/* Opens a recorder for one run to be stored in the database at path (NULL:
 * in memory only): straight into an existing database whose write lock is
 * free, else into a private file beside path that rec_finish
 * publishes.  Either way the database never holds part of a run and a
 * failed run leaves it untouched (docs/database.md). */
int rec_open(const char *path, rec_recorder **out, util_diag *d);
/* As rec_open, writing the run into file (which must not exist),
 * left there for the caller to publish: a sweep's point. */
int rec_open_scratch(const char *file, rec_recorder **out, util_diag *d);
/* What the next run is, beyond its scenario (the strings are borrowed
 * until rec_begin). */
typedef struct rec_run_label {
    const char *overrides; /* JSON object of the overrides applied (--set, --vary), or NULL */
    const char *sweep;     /* the sweep it is a point of, or NULL */
    int64_t run_id;        /* > 0: this id if it is free (a sweep's point, numbered in advance) */
} rec_run_label;
void rec_label(rec_recorder *r, const rec_run_label *label);
/* Starts a run: one transaction holds the whole run. */
int rec_begin(rec_recorder *r, const sim_scenario *sc, util_diag *d);
/* A measured run (servesim import): what a benchmark tool recorded, stored
 * as a run whose status is `measured`, its requests put through the sink
 * as a simulated run's are, and its own facts in `measurements`
 * (docs/database.md).  The strings are borrowed until rec_begin_measured;
 * scenario, metrics and missing are JSON text. */
typedef struct rec_measured {
    const char *name;     /* the run's name */
    const char *scenario; /* the workload and engine as they were run */
    const char *format;   /* the tool, e.g. "vllm-bench" */
    const char *source;   /* the file it came from */
    const char *clock;    /* "client" or "engine": what the stamps measure */
    const char *metrics;  /* the tool's own aggregates, {"ttft_p99_s": ...} */
    const char *missing;  /* the engine settings it did not record, ["cluster.gpu", ...] */
} rec_measured;
/* Starts a measured run instead of rec_begin: rec_finish with
 * SIM_STATUS_COMPLETED stores it as `measured`. */
int rec_begin_measured(rec_recorder *r, const rec_measured *m, util_diag *d);
/* Moves the writing of rows to a thread of its own (after rec_begin, before
 * rec_sink), so that the engine and SQLite run on two cores; the database
 * written is the same, byte for byte.  For a run that has a core to spare:
 * `servesim run`, not a sweep's points, which have one process a core. */
int rec_start_writer(rec_recorder *r, util_diag *d);
sim_sink rec_sink(rec_recorder *r);
/* The sink of a recorder that also stores every iteration in `iterations`
 * (servesim run --record-iterations): one row per engine step, so a run
 * writes tokens / batch size more rows; off by default. */
sim_sink rec_sink_with_iterations(rec_recorder *r);
/* Records how the run ended -- the one place a run's status is written --
 * commits, and publishes the run into its database. */
int rec_finish(rec_recorder *r, const rec_run_end *end, util_diag *d);
/* The run's id: as stored, once finished (publishing may renumber a run
 * whose id another writer took meanwhile). */
int64_t rec_run_id(const rec_recorder *r);
/* Stores every run of the finished database file `file` (a point's) in the
 * database at path, then removes file: path is created with them if it
 * does not exist, else they are copied in one transaction, each keeping its
 * id unless another writer took it (then it gets the next free one).
 * *first_id (may be NULL) is the first run's id as stored. */
int rec_publish(const char *file, const char *path, int64_t *first_id, util_diag *d);
/* Rolls the run back and removes its private file. */
void rec_abort(rec_recorder *r);
/* The message of a failed sink callback. */
const char *rec_error(const rec_recorder *r);
void rec_close(rec_recorder *r);
/* Closes the recorder but keeps its connection open for the caller, who
 * closes it with sqlite3_close (an in-memory database lives on). */
sqlite3 *rec_release(rec_recorder *r);

/* ---- one run, end to end ---- */

/* Everything a run needs.  Every command runs scenarios through rec_run:
 * `run`, sweep and plan points, lessons, `validate`, the benchmark. */
typedef struct rec_run_spec {
    const mdl_catalog *catalog;
    cJSON *scenario;          /* taken: the scenario with its overrides, unvalidated */
    const char *origin;       /* the file it came from, for messages, or NULL */
    const char *base_dir;     /* where the files it names are (NULL: here) */
    const char *output;       /* the database to store the run in; NULL: in memory */
    const char *scratch;      /* instead: a new file to write the run to and leave (a point) */
    rec_run_label label;
    bool iterations;          /* also record every iteration */
    int64_t in_flight_limit;  /* 0: the engine's default; < 0: none */
    const volatile sig_atomic_t *stop; /* stops the run when it becomes non-zero: the number
                                        * of the signal that asked (the reason names it) */
    sim_progress_fn progress;
    void *progress_arg;
    bool writer_thread;       /* write the rows on a thread of their own (rec_start_writer) */
    /* Told the loaded scenario before the run, and every request row as it is
     * recorded, on the engine's thread (servesim run summarises them for its
     * report as they come); either may be NULL. */
    void (*on_load)(void *arg, const sim_scenario *sc);
    void (*tee)(void *arg, const sim_request_row *row);
    void *tee_arg;
    util_diag *warnings;      /* gets the scenario's warnings (sim_scenario.warnings); may be NULL */
} rec_run_spec;

typedef struct rec_run_result {
    sim_status status;
    char *reason;            /* why it was interrupted, overloaded or failed; owned */
    int64_t run_id;          /* as stored */
    sim_progress progress;   /* where the engine was when it ended */
    double wall_s;
    sqlite3 *db;             /* in memory: the run's database, open until _fini */
} rec_run_result;

/* Loads and validates the scenario (nothing is written if it is bad:
 * UTIL_EINPUT with every error), records the run and decides its status.
 * Returns UTIL_OK when the run was recorded -- completed, interrupted or
 * overloaded -- or the error (status failed, nothing recorded). */
int rec_run(const rec_run_spec *spec, rec_run_result *out, util_diag *d);
void rec_run_result_fini(rec_run_result *r);

#endif /* REC_H */
