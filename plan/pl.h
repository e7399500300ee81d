/*
 * pl: capacity planning -- many runs of one scenario.  A sweep runs a grid
 * of overrides (and seeds) in worker processes, each point a run of the
 * sweep's database; a plan searches an arrival rate, a replica count or a
 * configuration for the best one that meets a set of targets, and says
 * which `vllm serve` command deploys the answer.
 *
 * Workers never share a database: each point is simulated into a file (or
 * memory) of its own and summarised there, in parallel; the parent process
 * is the one writer of the sweep's database and copies each finished point
 * into it in one transaction.  Points are numbered before they run and
 * their seeds fixed, so a sweep's result does not depend on how many
 * workers ran it, or in what order they finished.
 */
#ifndef PL_H
#define PL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "an.h"
#include "rec.h"
#include "util.h"

/* ---- values and grids ---- */

/* One varied key: `--vary PATH=VALUES`. */
typedef struct pl_axis {
    char *path;
    cJSON *values; /* an array of JSON values */
} pl_axis;

/* Parses `PATH=VALUES`: a list (`1,2,4,8`, each item JSON or else a
 * string: `h100-sxm,a100-80gb`), a range (`2:40:2`, both ends included) or
 * a log range (`1:256:x2`).  Any other value with a colon (`2:10`, `2:`,
 * `2:10:0`, a step past STOP) is refused, naming the accepted forms;
 * messages start with `--vary ARG`, or with opt's name for the _as form. */
int pl_axis_parse(const char *arg, pl_axis *out, util_diag *d);
int pl_axis_parse_as(const char *opt, const char *arg, pl_axis *out, util_diag *d);
void pl_axis_fini(pl_axis *a);

/* ---- one point ---- */

/* A point: the base scenario with overrides and a seed. */
typedef struct pl_point {
    cJSON *overrides; /* object: dotted path -> JSON value */
    int64_t seed;
    int64_t run_id;   /* in the sweep's database; 0: not stored */
} pl_point;

/* A fleet of several models (pools of different models) is planned per
 * model: at most this many. */
#define PL_MAX_MODELS 8

/* One model's part of a run (report --by model's figures). */
typedef struct pl_model_figures {
    char id[64];
    int replicas, gpus;
    double usd_per_hour; /* its GPUs' cost, overhead included, as the run's cost counts it */
    double attainment;   /* its classes' requests, each by its class's SLO; NAN: no SLO */
} pl_model_figures;

/* The figures a sweep prints and a plan decides on, from a point's report. */
typedef struct pl_summary {
    int64_t run_id;
    bool overloaded;
    int64_t measured;
    double ttft_p50, ttft_p99, tpot_p50, tpot_p99;
    double requests_per_s, output_tokens_per_s, goodput_requests_per_s, attainment;
    double task_attainment; /* of slo.task_e2e_s over the tasks (an_tasks); NAN: none */
    double busy_fraction, usd_per_million_output_tokens, j_per_output_token;
    double usd, gpu_hours; /* the run's cost over its window: each replica's GPU-hours over
                            * its life there (an_cost), x the price */
    double not_completed_fraction; /* of the requests sent after warm-up: rejected, timed
                                    * out or unfinished */
    int n_targets;
    double target_value[8]; /* each target's value (percentile or mean), seconds, counting
                             * requests not completed as infinitely late (an_target) */
    double batch_fill, kv_mean_fraction; /* how full the batch slots and the KV cache ran
                                          * (an_use): saturation, which busy is not */
    /* a fleet of several models only (else 0): the whole fleet's GPUs and
     * cost an hour, and each model's part, by first replica */
    int gpus;
    double usd_per_hour;
    int n_models;
    pl_model_figures models[PL_MAX_MODELS];
} pl_summary;

/* A scenario to run points of: its text after --set overrides, where its
 * files are, and what to ask of each point. */
typedef struct pl_base {
    const mdl_catalog *catalog;
    const char *json;      /* the scenario (and --set) as JSON text */
    const char *base_dir;  /* its folder, for the files it names */
    const char *sweep;     /* label stored with each run; NULL for a plan's points */
    char **slo_args;       /* --slo / --target arguments, for summaries */
    int n_slo_args;
} pl_base;

/* Builds the point's scenario text (validated), or returns UTIL_EINPUT with
 * messages naming the point's overrides. */
int pl_point_scenario(const pl_base *b, const pl_point *p, char **json, util_diag *d);
/* Simulates a point into the database at path (NULL: in memory, none kept),
 * by rec_run (overload is the engine's verdict), and summarises it. */
int pl_point_run(const pl_base *b, const pl_point *p, const char *path, pl_summary *out,
                 util_diag *d);

/* Simulates a point in memory and computes its whole report, with the
 * base's SLOs and targets, into *report (call an_report_fini, even after a
 * failure); with iterations, also defs: every tool's per-token latency
 * (report --definitions; defs may be NULL without). */
int pl_point_compute(const pl_base *b, const pl_point *p, bool iterations, an_report *report,
                     an_definition defs[AN_N_DEFINITIONS], util_diag *d);
/* A worker's job (a pl_job_fn, base a pl_base): {"overrides", "seed",
 * "run_id", "path"} -- without "path", in memory -- run with pl_point_run;
 * the result is {"ok": true, "summary": {...}} or {"ok": false, "error"}. */
char *pl_point_job(const char *job, void *base);
/* A summary as JSON (caller frees), and back. */
cJSON *pl_summary_json(const pl_summary *s);
void pl_summary_from_json(const cJSON *o, pl_summary *s);
/* The figures of a run already stored (a resumed sweep's). */
int pl_summarise(sqlite3 *db, int64_t run, const pl_base *b, pl_summary *out, util_diag *d);

/* ---- workers ---- */

/* A job's text in, a result's text out, in a worker process. */
typedef char *(*pl_job_fn)(const char *job, void *ctx);

typedef struct pl_pool pl_pool;

/* Starts n worker processes running fn. */
pl_pool *pl_pool_start(int n, pl_job_fn fn, void *ctx);
/* Hands a job (one line of text) to an idle worker: false when none is. */
bool pl_pool_submit(pl_pool *p, int64_t tag, const char *job);
/* Waits for a result: its tag and text (caller frees); false when no job is
 * out, or when *stop became non-zero. */
bool pl_pool_wait(pl_pool *p, const volatile sig_atomic_t *stop, int64_t *tag, char **result);
int pl_pool_busy(const pl_pool *p);
/* Whether a worker is gone for good (a worker process that died, an MPI
 * rank that failed): no more results will come, and the caller ends as at
 * Ctrl-C, keeping what finished. */
bool pl_pool_failed(const pl_pool *p);
/* A failed pool's worker process, and how it died ("worker process 12 died
 * (killed by signal 9, Killed)"), with *tag the job it was running (-1:
 * none); NULL for an MPI rank (mpirun names it). */
const char *pl_pool_why(const pl_pool *p, int64_t *tag);
/* Results handed out so far. */
int64_t pl_pool_delivered(const pl_pool *p);
/* fn(p, arg) is called about every 0.25 s while pl_pool_wait waits (a
 * progress bar's redraw between results). */
typedef void (*pl_tick_fn)(const pl_pool *p, void *arg);
void pl_pool_set_tick(pl_pool *p, pl_tick_fn fn, void *arg);
/* Runs every job and waits for all: results[i] is job i's (caller frees;
 * NULL for a job cut short, {"ok": false, "error": WHY} for one a failed
 * pool lost).  Returns how many finished: n, unless *stop was raised or
 * the pool failed. */
int pl_pool_map(pl_pool *p, char *const *jobs, int n, const volatile sig_atomic_t *stop,
                char **results);
/* Stops the workers (killing any mid-job) and waits for them. */
void pl_pool_stop(pl_pool *p);
/* The number of processors online, for the default -j. */
int pl_cores(void);

/* ---- MPI ranks as the workers (mpi.c) ---- */

/* Starts MPI when servesim runs under an MPI launcher (mpirun, srun) and was
 * built with it: then pl_pool_start makes rank 0 the coordinator and the
 * one writer and every other rank a worker, which serves jobs and exits in
 * pl_pool_start.  True when MPI runs; outside a launcher, nothing. */
bool pl_mpi_start(int *argc, char ***argv);
bool pl_mpi_built(void);
int pl_mpi_rank(void); /* 0 without MPI */
int pl_mpi_size(void); /* 1 without MPI */

/* pool.c's side of it. */
typedef struct pl__mpi pl__mpi;
pl__mpi *pl__mpi_start(pl_job_fn fn, void *ctx);
int pl__mpi_workers(const pl__mpi *m);
bool pl__mpi_submit(pl__mpi *m, int64_t tag, const char *job);
/* 1: a result; 0: none within timeout_s or *stop raised; -1: MPI failed. */
int pl__mpi_wait(pl__mpi *m, const volatile sig_atomic_t *stop, double timeout_s, int64_t *tag,
                 char **result);
void pl__mpi_stop(pl__mpi *m);

/* ---- sweeps ---- */

/* Where a sweep stands, for a progress bar the caller draws. */
typedef struct pl_sweep_progress {
    int done, total; /* points merged of those to run */
    int in_flight;   /* handed to workers, not yet back */
    int jobs;        /* worker processes */
    double elapsed_s;
    bool finished;   /* the last call: every point merged */
} pl_sweep_progress;
typedef void (*pl_progress_fn)(const pl_sweep_progress *p, void *arg);

typedef struct pl_sweep_opts {
    pl_base base;
    pl_axis *axes;
    int n_axes;
    int seeds;      /* repetitions of each point, seeds seed, seed + 1, ... */
    int64_t seed;   /* the scenario's */
    int jobs;
    bool resume;
    const char *output;
    pl_progress_fn progress; /* called as points finish and every 0.25 s, or NULL */
    void *progress_arg;
} pl_sweep_opts;

typedef struct pl_sweep_row {
    pl_point point;
    pl_summary s;
} pl_sweep_row;

typedef struct pl_sweep_result {
    pl_sweep_row *rows; /* grid order */
    int n_rows;
    int ran, resumed;   /* points run now, points found done */
    bool interrupted;
} pl_sweep_result;

/* Runs the grid into opts->output: every point not already there (resume),
 * stopping cleanly when *stop becomes non-zero (finished points are kept).
 * Returns 0, UTIL_EINTR, UTIL_EINPUT (a bad point: nothing was run) or
 * UTIL_EFAIL. */
int pl_sweep_run(const pl_sweep_opts *opts, const volatile sig_atomic_t *stop,
                 pl_sweep_result *out, util_diag *d);
void pl_sweep_result_fini(pl_sweep_result *r);
cJSON *pl_sweep_json(const pl_sweep_opts *opts, const pl_sweep_result *r);
void pl_sweep_print(const pl_sweep_opts *opts, const pl_sweep_result *r, FILE *out);

/* ---- plans ---- */

typedef enum pl_goal { PL_MAX_RATE, PL_MIN_REPLICAS, PL_CHEAPEST } pl_goal;

/* A target: `ttft_p99<=2` (a percentile or `_mean` of the measured
 * requests), `ttft<=0.5` (a per-request SLO, met by the attainment goal's
 * share of the requests) or `task_e2e<=30` (an agent task's SLO, met by
 * that share of the tasks). */
typedef struct pl_target {
    char *text;   /* as given */
    char *slo;    /* the --slo form (ttft_p99=2) */
    bool per_request; /* judged by a share against the attainment goal */
    bool per_task;    /* ... the share of tasks (task_e2e) */
    int index;    /* per_request: which key; else which summary target */
    double threshold;
    char *cls;    /* the class it holds (CLASS:METRIC), or NULL: every request */
} pl_target;

typedef struct pl_plan_opts {
    pl_base base;
    pl_goal goal;
    pl_target *targets;
    int n_targets;
    double attainment;   /* goal for per-request targets */
    double rate;         /* min-replicas, cheapest: the arrival rate */
    pl_axis *candidates; /* cheapest: candidate keys (cluster.gpu, ...) */
    int n_candidates;
    int seeds;           /* per evaluated point */
    int jobs;
    double confidence;   /* of each point's verdict, e.g. 0.95 */
    double rel_tol;      /* max-rate: stop when the bracket is this narrow, relatively */
    int max_replicas;
    /* cheapest over a day (a scenario with cluster.autoscaler): the
     * autoscaler's grid, axes over cluster.autoscaler.min_replicas,
     * .max_replicas and .target (pl_plan_over_a_day; an axis absent takes
     * its default there) */
    pl_axis *scale;
    int n_scale;
    pl_tick_fn progress; /* called every 0.25 s while points run (pl_plan_progress), or NULL */
    void *progress_arg;
} pl_plan_opts;

/* One configuration tried: its overrides, verdict and figures (means over
 * its seeds, with the half-width of their interval). */
typedef struct pl_trial {
    cJSON *overrides;
    bool met, overloaded;
    int seeds;
    double value[8], half[8]; /* each target's mean value and interval half-width */
    bool target_met[8];       /* each target's own verdict */
    double not_completed;     /* mean share of requests not completed */
    double attainment, usd_per_million_output_tokens, busy_fraction, output_tokens_per_s;
    double batch_fill, kv_mean_fraction; /* means over its seeds */
    double usd, gpu_hours;               /* means over its seeds: the run's cost (pl_summary) */
    /* a fleet of several models: each model's part (pl_plan_result.models'
     * order), judged by its own targets alone (pl_model_answer.mine) */
    int n_models;
    struct pl_trial_model {
        bool met;             /* each of its targets, and no seed overloaded */
        unsigned fails;       /* its targets not met, a bit each */
        double attainment;    /* mean over the seeds */
        int replicas, gpus;
        double usd_per_hour;
    } models[PL_MAX_MODELS];
    int gpus;                 /* the fleet's */
    double usd_per_hour;
} pl_trial;

/* cheapest: one candidate configuration and the fewest replicas meeting the
 * targets with it (trial -1: none up to max_replicas). */
typedef struct pl_candidate {
    cJSON *config;
    int trial;
    int last_trial; /* its largest configuration tried, for why it failed */
} pl_candidate;

/* A fleet of several models: one model's part of the answer. */
typedef struct pl_model_answer {
    char *id;
    unsigned mine;   /* the targets that hold it, a bit each: its classes' and those of no
                      * class */
    int trial;       /* min-replicas: its own search's answer (the other models' pools
                      * plentiful), -1: none up to max_replicas */
    int below;       /* min-replicas: its search's trial with one replica fewer a pool,
                      * whose failed targets are the ones that bind; -1: none (one replica) */
} pl_model_answer;

typedef struct pl_plan_result {
    bool found;
    pl_model_answer models[PL_MAX_MODELS]; /* a fleet of several models (else n_models 0) */
    int n_models;
    pl_candidate *candidates; /* cheapest: every candidate, in grid order */
    int n_candidates;
    double max_rate, rate_lo, rate_hi; /* max-rate: the answer and its bracket */
    int replicas;                      /* min-replicas */
    int best;                          /* cheapest: index into trials of the chosen */
    pl_trial *trials;
    int n_trials;
    /* cheapest over a day: trials are the autoscaler's grid and best the
     * cheapest (by usd) that meets the targets; fixed is the existing
     * search's plan with cluster.autoscaler removed, the static fleet */
    bool day;
    struct pl_plan_result *fixed;
} pl_plan_result;

/* Parses `METRIC<=SECONDS` (METRIC as for --slo: ttft_p99, tpot_mean, e2e). */
int pl_target_parse(const char *text, pl_target *out, util_diag *d);
void pl_target_fini(pl_target *t);
int pl_plan_run(const pl_plan_opts *opts, const volatile sig_atomic_t *stop,
                pl_plan_result *out, util_diag *d);
/* Whether a plan is cheapest over a day: --find cheapest on a scenario
 * with cluster.autoscaler (docs/planning.md, "Over a day"). */
bool pl_plan_over_a_day(const pl_plan_opts *opts);
void pl_plan_result_fini(pl_plan_result *r);
cJSON *pl_plan_json(const pl_plan_opts *opts, const pl_plan_result *r);
void pl_plan_print(const pl_plan_opts *opts, const pl_plan_result *r, FILE *out);

/* ---- from the answer to a deployment (vllm_args.c) ---- */

/* The `vllm serve` command line that runs one replica of a resolved
 * scenario as servesim simulated it, and how many replicas run.  Every flag
 * is the effective scenario's value (docs/planning.md maps each key). */
typedef struct pl_vllm_cmd {
    char **argv;          /* "vllm", "serve", the model's repo, then each flag and its value;
                           * NULL-terminated; owned */
    int argc;
    int replicas;         /* how many of it the scenario runs */
    char *gpu;            /* the GPU's id */
    int gpus_per_replica; /* tensor x pipeline parallel */
    util_diag notes;      /* what the command leaves to whoever deploys it, a line each */
} pl_vllm_cmd;

/* The command for an effective scenario (sim_scenario's json: presets,
 * tiers and defaults applied); base_dir is its folder, for a model read
 * from a config.json.  A scenario vllm serve cannot express -- an engine
 * that is not a vLLM preset, disaggregated or several pools, a scheduler,
 * block size or precision vLLM has no flag for -- is UTIL_EINPUT with the
 * key named in d.  out is empty after a failure; pl_vllm_cmd_fini either
 * way. */
int pl_vllm_args(const cJSON *scenario, const mdl_catalog *catalog, const char *base_dir,
                 pl_vllm_cmd *out, util_diag *d);
/* The same for the base scenario with a plan's overrides (a trial's),
 * validated and resolved first. */
int pl_plan_vllm_args(const pl_base *base, const cJSON *overrides, pl_vllm_cmd *out,
                      util_diag *d);
void pl_vllm_cmd_fini(pl_vllm_cmd *c);
/* One line a POSIX shell runs: the words, quoted where the shell would
 * change them (caller frees). */
char *pl_vllm_cmd_line(const pl_vllm_cmd *c);
/* {"argv": [...], "replicas", "gpu", "gpus_per_replica", "notes": [...]}. */
cJSON *pl_vllm_cmd_json(const pl_vllm_cmd *c);

#endif /* PL_H */
