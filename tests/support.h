/*
 * support.h: helpers the whole-run tests share -- build a scenario from JSON
 * text, run it into a sink that keeps rows in memory or into an in-memory
 * SQLite database, and compute its report.
 */
#ifndef SUPPORT_H
#define SUPPORT_H

#include "an.h"
#include "rec.h"

extern mdl_catalog *support_catalog;

/* Loads the built-in catalog once; returns 0 on success. */
int support_init(void);
void support_fini(void);

/* The text of tests/scenarios/NAME (caller frees); a missing file ends the
 * program with a TAP "Bail out!", since every test after it would be
 * meaningless. */
char *support_scenario_text(const char *name);

/* A csv trace (arrival_time_s,input_tokens,output_tokens) of the given rows
 * in a temporary file; caller unlinks and frees the path. */
char *support_write_trace(const char *rows);
/* The same with a fourth column, hash_ids (what prompts share), and the
 * --set that replays it, into set. */
char *support_hash_trace(const char *rows, char *set, size_t size);

/* Builds a scenario from JSON text (after --set style overrides, NULL
 * terminated); on error returns the messages joined by newlines in *errors
 * (caller frees) and a non-zero status. */
int support_scenario(const char *json, const char *const *sets, sim_scenario *sc, char **errors);
/* Loads the scenario only to see it refused: its messages on one line (a
 * TAP description's), caller frees; NULL when it loads. */
char *support_refusal(const char *json, const char *const *sets);
/* Joins the lines of s into one, in place: a message in a TAP description. */
void support_one_line(char *s);

/* Rows a run emitted, kept in memory. */
typedef struct support_rows {
    sim_request_row *req;
    size_t n, cap;
    sim_replica_row rep[64];
    int n_rep;
    char rep_names[64][3][32]; /* copies of each replica row's pool, gpu, model: the
                                * row's own pointers die with the scenario */
    sim_iteration_row *it; /* support_capture_steps: every engine step */
    size_t n_it, cap_it;
    int stop_after; /* > 0: raise *stop_flag once this many requests are done */
    volatile sig_atomic_t *stop_flag;
} support_rows;

sim_sink support_capture(support_rows *rows);
/* The same, with every engine step kept too (as --record-iterations has them). */
sim_sink support_capture_steps(support_rows *rows);
void support_rows_fini(support_rows *rows);
/* Runs sc into rows; returns the engine's status and fills *events. */
int support_run_rows(const sim_scenario *sc, support_rows *rows, int64_t *events);

/* Builds the scenario from JSON text and overrides, and runs it into rows
 * (cleared first); returns the engine's status (-100 if the scenario is
 * invalid: its messages are printed as TAP comments). */
int support_run(const char *json, const char *const *sets, support_rows *rows, int64_t *events);
/* Whether two runs gave the same request rows, every field (NAN equal to
 * NAN: "never happened" in both). */
bool support_rows_equal(const support_rows *a, const support_rows *b);
/* The row of request id, or NULL. */
const sim_request_row *support_row(const support_rows *rows, int64_t id);

/* Runs sc into a fresh in-memory database; returns it (caller closes) with
 * the run's id in *run_id. */
sqlite3 *support_run_db(const sim_scenario *sc, int64_t *run_id);
/* The same, storing every iteration too (servesim run --record-iterations). */
sqlite3 *support_run_db_iterations(const sim_scenario *sc, int64_t *run_id);
/* Builds the scenario from JSON text and overrides and runs it into a fresh
 * in-memory database (its run is 1); NULL if the scenario is invalid (its
 * messages are printed as TAP comments) or the run failed. */
sqlite3 *support_run_json(const char *json, const char *const *sets, bool iterations);
/* The first column of a one-row query as a number (NAN for NULL, no row or
 * an error, which is printed as a TAP comment). */
double support_q1(sqlite3 *db, const char *sql);
/* The standard error of the share of requests for which the SQL condition
 * cond holds, by batch means: the requests cut by arrival into `batches`
 * equal spans of [0, duration), each span's share one observation.  For
 * shares whose successive outcomes are correlated (losses come in runs),
 * where the binomial sd of a proportion understates the error. */
double support_batch_se(sqlite3 *db, const char *cond, double duration, int batches);

#endif /* SUPPORT_H */
