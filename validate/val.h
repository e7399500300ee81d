/*
 * val: servesim against measured serving runs.  A validation folder (today
 * data/validation/llmservingsim) holds vLLM runs of one workload on several
 * GPUs: each run's meta.json (the engine's settings), its measured
 * requests.jsonl, and the workload CSV they all served.  Each case replays
 * one run: its scenario is built from the folder, run through rec_run (the
 * one run path), and the prediction is read back from the run's database.
 * The measured requests go into a servesim database of their own, in
 * memory, so that both sides' TTFT, TPOT and E2E come from the same
 * definitions (the `request_metrics` view) and the same statistics
 * (an_report_compute, an_definitions): nothing here defines a metric.
 *
 * The library prints nothing; the folder and the catalog are the caller's,
 * the results plain structs the caller owns.
 */
#ifndef VAL_H
#define VAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "an.h"
#include "mdl.h"
#include "util.h"

/* The validation folder under a data directory. */
#define VAL_DATA "validation/llmservingsim"

enum { VAL_TTFT, VAL_TPOT, VAL_E2E, VAL_N_METRICS };
/* rtx4090/roofline, rtxpro6000/roofline, rtxpro6000/table. */
enum { VAL_N_CASES = 3 };
/* The engine preset's terms, added one at a time: the GPU's steps alone;
 * the host's time per step, added to it as a synchronous engine does; the
 * asynchronous scheduler's pipeline (the host hidden behind the GPU, each
 * step planned while the one before runs) -- the model as it runs. */
enum { VAL_GPU, VAL_HOST, VAL_PIPELINE, VAL_N_TERMS };
extern const char *const val_term_names[VAL_N_TERMS];

/* One replayed run: a GPU's measured run, predicted with one cost model,
 * each side read on the clock the run was measured with ("engine": vLLM's
 * engine-core stamps, queued in the engine to the token out; "client": sent
 * to the streamed token). */
typedef struct val_case {
    const char *name;  /* e.g. "rtx4090/roofline"; static */
    const char *clock; /* static */
    an_stats measured[VAL_N_METRICS];
    an_stats predicted[VAL_N_TERMS][VAL_N_METRICS]; /* [VAL_PIPELINE]: the model */
} val_case;

/* Whether dir looks like a validation folder (its workload file is there). */
bool val_has_data(const char *dir);
/* Replays every case of the folder dir: out[i] is case i.  A file that is
 * missing or malformed is UTIL_EINPUT naming it (file:line); a replay that
 * did not complete (overloaded) is UTIL_EFAIL, its figures being no
 * comparison. */
int val_replay(const char *dir, const mdl_catalog *cat, val_case out[VAL_N_CASES], util_diag *d);

/* ---- measured runs (measured.c, import.c and one file per format) ----
 *
 * `servesim import` reads what a benchmark tool measured into val_runs (a
 * file may hold several runs: inference-perf's stages), settles each run's
 * engine settings against --scenario, --unset and --set (val_settle), and stores
 * each as a run whose status is `measured` (val_store): its requests as
 * rows of `requests` with stamps on the run's clock, the tool's own
 * aggregates and what it did not record in `measurements`.  Everything
 * else -- report, compare, replay, calibrate -- reads a measured run back
 * from its database (val_load), so that an imported run and one stored by
 * an earlier servesim answer alike. */

/* The aggregates a run may give (the measured-run JSON's `metrics` names),
 * seconds or tokens/s. */
enum {
    VAL_TTFT_MEAN, VAL_TTFT_P50, VAL_TTFT_P90, VAL_TTFT_P99,
    VAL_ITL_MEAN, VAL_TPOT_MEAN, VAL_TPOT_P50, VAL_TPOT_P90, VAL_TPOT_P99,
    VAL_E2E_MEAN, VAL_E2E_P50, VAL_E2E_P90, VAL_E2E_P99,
    VAL_OUTPUT_TPS,
    VAL_N_AGG
};
extern const char *const val_agg_names[VAL_N_AGG + 1]; /* NULL-terminated */

/* One measured request, its times from the run's start (arrival) or from
 * its arrival (the rest); NAN: not measured. */
typedef struct val_request {
    double arrival_s;   /* sent (client clock) or queued in the engine (engine clock) */
    double ttft_s;      /* to the first token */
    double e2e_s;       /* to the last token */
    double itl_s;       /* mean gap between tokens, where e2e is not given */
    double scheduled_s; /* engine clock: first scheduled */
    int64_t prompt_tokens, output_tokens;
    bool failed;        /* the tool recorded an error */
} val_request;

typedef struct val_run {
    char *name;         /* the run's name, e.g. "vllm-bench 2025-01-01 rate=4" */
    const char *format; /* static: val_formats[] */
    char *source;       /* the file it was read from */
    const char *clock;  /* static: "client" (sent to streamed token) or "engine" (vLLM's
                         * engine-core stamps) */
    cJSON *scenario;    /* the workload and engine as run: what the file recorded, then
                         * settled with --scenario and --set */
    cJSON *missing;     /* array of the engine settings (dotted keys) nobody gave */
    double metrics[VAL_N_AGG]; /* the tool's own aggregates; NAN where it gave none */
    val_request *req;   /* in arrival order */
    size_t n, cap;
    bool arrivals_unknown; /* the file recorded no send times (vLLM's bench before
                            * start_times): every arrival_s is 0, a replay draws
                            * arrivals from the scenario's workload.arrival and the
                            * lengths from the requests; kept in `missing` as
                            * VAL_NO_ARRIVALS */
} val_run;

/* The entry of val_run.missing that marks a run whose arrivals were not recorded. */
#define VAL_NO_ARRIVALS "requests.arrival_s"

typedef struct val_runs {
    val_run *v;
    int n, cap;
} val_runs;

/* The formats, as `measurements.format` names them. */
extern const char *const val_formats[];

/* A new run at the end of rs: no requests, every metric NAN, an empty
 * scenario and nothing missing. */
val_run *val_runs_add(val_runs *rs);
val_request *val_run_add_request(val_run *m);
void val_runs_fini(val_runs *rs);
void val_run_fini(val_run *m);

/* Reads a measured run's file (or folder) of any format above, telling it
 * by its name and content: an unknown or mixed format, a file with no
 * usable metric, a malformed field is UTIL_EINPUT naming the file and the
 * field.  The runs come in arrival order, with what the file recorded; a
 * recorded GPU or model is named by its catalog id where cat has it. */
int val_import(const char *path, const mdl_catalog *cat, val_runs *out, util_diag *d);

/* What the command line changes of a run's scenario: each --unset PATH
 * removed, then each --set PATH=VALUE applied. */
typedef struct val_overrides {
    char *const *unset, *const *set;
    int n_unset, n_set;
} val_overrides;

/* Settles m's engine settings: base (the --scenario, or NULL; origin names
 * it) fills what the file did not record -- a recorded setting base
 * contradicts (another model, another TP) is UTIL_EINPUT naming both --
 * then ov (may be NULL) applies on top, and m->missing is left with the
 * settings nobody gave (the engine preset's defaults apply). */
int val_settle(val_run *m, const cJSON *base, const char *origin, const val_overrides *ov,
               util_diag *d);

/* Every file a scenario names (path, dir, hf_config members), relative to
 * dir, made absolute: a stored scenario replays wherever it is read.
 * Whether the files exist is for the scenario's loading to say. */
void val_absolute_paths(cJSON *scenario, const char *dir);

/* Stores m in the database at path as a run of status `measured` (the
 * file is created if absent; a failure leaves it untouched): *run_id its id. */
int val_store(const val_run *m, const char *path, int64_t *run_id, util_diag *d);

/* Whether m has a request that completed (else its tool's aggregates are
 * all it gives). */
bool val_has_completed(const val_run *m);
/* What m gives, as val_measured_metrics reads a stored run: its requests'
 * aggregates (m stored in a database in memory, read as the report reads
 * it) where it has requests, else the tool's own. */
int val_run_figures(const val_run *m, double out[VAL_N_AGG], util_diag *d);

/* Whether run_id of db is a measured run; UTIL_EINPUT naming file when
 * not, or when it has no such run. */
int val_check_measured(sqlite3 *db, const char *file, int64_t run_id, util_diag *d);
/* Whether run_id of db is a measured run. */
bool val_is_measured(sqlite3 *db, int64_t run_id);
/* The newest measured run of db (0: none). */
int64_t val_last_measured(sqlite3 *db);
/* A measured run as stored. */
int val_load(sqlite3 *db, const char *file, int64_t run_id, val_run *out, util_diag *d);

/* The scenario that replays m: its settled scenario, its requests (if it
 * has them) as a trace at trace_path, which val_write_trace writes. */
cJSON *val_replay_scenario(const val_run *m, const char *trace_path);
int val_write_trace(const val_run *m, const char *path, util_diag *d);

/* ---- a measured run against a simulated one (compare.c) ---- */

/* Every aggregate of a stored run read on a clock ("client": sent to the
 * streamed token; "engine": queued in the engine to its token out), from
 * its requests; NAN where it has none.  A measured run's rows hold its own
 * clock: it is read as they are (clock NULL). */
int val_run_metrics(sqlite3 *db, int64_t run_id, const char *clock, double out[VAL_N_AGG],
                    util_diag *d);
/* What a measured run gives: its requests' aggregates where it has
 * requests, else the tool's own. */
int val_measured_metrics(sqlite3 *db, int64_t run_id, double out[VAL_N_AGG], util_diag *d);
/* The relative error of a prediction, in %: 100 (predicted - measured) / measured. */
double val_error_pct(double predicted, double measured);
/* Measured run m of mdb against simulated run s of sdb, on m's clock: the
 * `compare --json` object of a measured run (caller frees). */
int val_compare(sqlite3 *mdb, const char *mfile, int64_t m, sqlite3 *sdb, const char *sfile,
                int64_t s, cJSON **out, util_diag *d);
/* Its text form. */
void val_compare_print(const cJSON *cmp, FILE *out);

/* ---- a stored run in a tool's format (export.c) ---- */

/* The formats `servesim export` writes, NULL-terminated: "vllm-bench" (the
 * JSON of `vllm bench serve --save-result --save-detailed`) and
 * "genai-perf" (perf_analyzer's profile_export.json, as GenAI-Perf reads
 * it). */
extern const char *const val_export_formats[];
/* Writes run_id of db (file names it in messages) to path in format: the
 * requests sent after warm-up, the report's summaries in the tool's units
 * (docs/import-formats.md, "Export").  An unknown format (with the nearest
 * name), a run db does not have, or a path that cannot be written is
 * UTIL_EINPUT naming it; the file appears whole or not at all. */
int val_export(sqlite3 *db, const char *file, int64_t run_id, const char *format,
               const mdl_catalog *cat, const char *path, util_diag *d);

/* ---- calibration (calibrate.c, profile.c) ---- */

/* The coefficients a profile fits are models/'s (mdl_coefs: each a key of
 * a pool, MDL_COEF_MFU ...); what the fit adds is each one's physical range
 * and what it stands for (docs/calibration.md). */
typedef struct val_coef {
    double lo, hi;
    const char *doc;
} val_coef;
extern const val_coef val_coefs[MDL_N_COEFS];

typedef struct val_fit {
    char gpu[64], engine[64];          /* what every run was served on */
    bool fitted[MDL_N_COEFS];
    double start[MDL_N_COEFS];         /* where the fit began: the runs' own values */
    double value[MDL_N_COEFS];         /* fitted where fitted[], else start */
    double stderr_[MDL_N_COEFS];       /* standard error of a fitted one */
    int iterations, evaluations;       /* of the fit on every run; replays in all */
    int n_runs, folds;
    double train_error[VAL_N_AGG];     /* mean |error| in %, every run with the fit on all */
    double cv_error[VAL_N_AGG];        /* the same, each run predicted by a fit without its fold */
    double (*per_run)[VAL_N_AGG];      /* [n_runs]: error in % of each run, fitted on all */
    double (*cv_per_run)[VAL_N_AGG];   /* [n_runs]: held out */
} val_fit;

/* Fits the coefficients fit[] names to the runs (all of one GPU and one
 * engine) and, with folds >= 2, cross-validates.  A fit that does not
 * converge, or stops on a coefficient's bound, is UTIL_EINPUT saying which. */
int val_calibrate(const val_run *runs, int n, const mdl_catalog *cat, const bool fit[MDL_N_COEFS],
                  int folds, val_fit *out, util_diag *d);
void val_fit_fini(val_fit *f);
/* The profile a fit makes (docs/calibration.md): caller frees. */
cJSON *val_profile_json(const val_fit *f, const val_run *runs);

#endif /* VAL_H */
