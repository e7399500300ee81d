/*
 * sim: the discrete-event engine of a serving cluster.
 *
 * A sim_scenario is a validated scenario file: the effective JSON (defaults
 * and overrides applied, kept for the record) plus the typed values the
 * engine runs on.  A sim_engine runs one scenario once: requests arrive from a
 * workloads/ source, a router sends each to a replica, and every replica runs
 * iteration-level (continuous) batching, asking models/ what each iteration
 * costs.  The engine computes no metric.  It emits facts -- one row per
 * request, one per replica -- through a sim_sink; the recorder is the sink
 * that streams them into SQLite, and analysis/ derives every metric from
 * there.
 *
 * Time is int64 nanoseconds inside the engine and seconds (double) in rows.
 * A run is deterministic: the same scenario and seed give identical rows.
 * Nothing here is process-global, so several engines may run in one process.
 */
#ifndef SIM_H
#define SIM_H

#include <signal.h>
#include <stdint.h>

#include <sqlite3.h>

#include "mdl.h"
#include "util.h"
#include "wl.h"

/* ---- scenario ---- */

typedef enum sim_policy { SIM_CONTINUOUS, SIM_PREFILL_FIRST, SIM_CHUNKED, SIM_STATIC } sim_policy;
typedef enum sim_preemption { SIM_PREEMPT_RECOMPUTE, SIM_PREEMPT_SWAP } sim_preemption;
typedef enum sim_router {
    SIM_ROUTER_ROUND_ROBIN,
    SIM_ROUTER_RANDOM,
    SIM_ROUTER_LEAST_OUTSTANDING,
    SIM_ROUTER_LEAST_KV,
    SIM_ROUTER_POWER_OF_TWO,
    SIM_ROUTER_CENTRAL, /* one FIFO per pool; a replica pulls when it can admit */
} sim_router;

/* Identical replicas of one model on one kind of GPU. */
typedef struct sim_pool {
    const char *name;
    int index, first_replica, replicas;
    int tensor_parallel, pipeline_parallel, gpus; /* gpus = tensor x pipeline, per replica */
    sim_policy policy;
    int max_batch;              /* sequences in one iteration */
    int64_t max_batched_tokens; /* tokens computed in one iteration (prompt tokens, or all) */
    double gpu_memory_utilization;
    int block_tokens;           /* tokens per KV block */
    int64_t kv_blocks;          /* KV blocks per replica */
    double activation_reserve_bytes; /* per GPU */
    sim_preemption preemption;
    bool prefix_caching;        /* a preempted sequence's blocks stay cached until reused */
    double swap_space_bytes;    /* host memory for swapped KV, per replica */
    double batch_timeout_s;     /* static batching */
    mdl_cost cost;              /* holds the GPU and the model */
    double usd_per_gpu_hour;    /* cost.usd_per_gpu_hour, else the GPU's catalog price */
} sim_pool;

typedef struct sim_scenario {
    cJSON *json; /* the effective scenario; owned */
    const char *name;
    uint64_t seed;
    int64_t stop_requests;  /* arrivals stop after this many; 0: no limit */
    double stop_duration_s; /* arrivals stop at this time; 0: no limit */
    double warmup_s;
    sim_pool *pools;
    int n_pools;
    int replicas; /* over all pools */
    sim_router router;
    /* disaggregated prefill and decode: pool indices, -1 when not */
    int disagg_prefill, disagg_decode;
    double link_bw, link_latency_s; /* the KV transfer link */
    wl_spec workload;
} sim_scenario;

extern const util_field sim_scenario_fields[];

/* Validates root against the scenario schema (collecting every error),
 * fills defaults, and builds the typed scenario.  Files the scenario names
 * are relative to base_dir (the scenario file's folder; NULL: the current
 * directory).  Takes ownership of root in every case.  Returns 0 or
 * UTIL_EINPUT with messages in d. */
int sim_scenario_load(cJSON *root, const mdl_catalog *catalog, const char *base_dir,
                      sim_scenario *out, util_diag *d);
void sim_scenario_fini(sim_scenario *sc);

/* ---- the facts a run emits ---- */

/* Request outcome, the `status` column. */
#define SIM_COMPLETED "completed"
#define SIM_REJECTED "rejected"     /* can never fit this replica; refused at arrival */
#define SIM_UNFINISHED "unfinished" /* still in flight when the run was interrupted */
#define SIM_TIMED_OUT "timed_out"   /* its client gave up (workload.timeout_s) */
#define SIM_FAILED "failed"         /* a task: one of its calls was rejected or timed out */

typedef struct sim_request_row {
    int64_t id;
    const char *cls;      /* its class's name */
    int64_t task_id;      /* its agent task, or -1 */
    int32_t call_index;   /* its place in the task (0, 1, ...), or -1 */
    int replica;        /* that prefilled it; -1 when it never reached one */
    int decode_replica; /* disaggregated: that decoded it; -1 otherwise */
    const char *status;
    double arrival_s, enqueue_s, first_scheduled_s, first_token_s, finish_s; /* NAN: never */
    double decode_enqueue_s; /* disaggregated: its KV cache reached the decode replica */
    int32_t prompt_tokens, output_tokens;
    int32_t preemptions;
    int slow;
} sim_request_row;

typedef struct sim_replica_row {
    int replica;
    const char *pool, *gpu, *model;
    int gpus;
    double busy_s, prefill_s, decode_s;
    int64_t iterations;
    double flops, bytes;   /* performed over the run, all its GPUs */
    double batch_seq_s;    /* integral of sequences in the running iteration over busy time */
    int64_t kv_capacity_tokens, kv_peak_tokens;
    int64_t preemptions;
    int64_t prefill_tokens; /* prompt tokens computed, recomputation included */
    int64_t decode_tokens;  /* tokens produced by decode steps (a prefill produces one more) */
    double swap_bytes;     /* KV copied to and from host memory */
    int64_t out_of_range;  /* table cost model: iterations looked up outside the measurements */
    double peak_flops, peak_bw; /* datasheet peaks of all its GPUs, for MFU and MBU */
    double tdp_w, idle_w, prefill_w, decode_w; /* one GPU's draw: limit, idle, and at the
                                                * catalog's prefill and decode efficiencies */
    double energy_j;       /* drawn by all its GPUs while busy (idle time: idle_w) */
    double kv_token_s;     /* integral of KV tokens in use over time */
    double usd_per_gpu_hour;
} sim_replica_row;

/* One engine iteration (with --record-iterations): a decode run is one row
 * per step. */
typedef struct sim_iteration_row {
    int replica;
    double start_s, end_s;
    int32_t prefill_tokens; /* prompt tokens computed */
    int32_t decode_seqs;    /* sequences decoding a token (static batching: padding included) */
    int64_t kv_tokens;      /* tokens' worth of KV blocks in use */
    double flops, bytes;    /* all its GPUs */
    double energy_j;        /* all its GPUs */
} sim_iteration_row;

/* One agent task: a user-visible job of several model calls. */
typedef struct sim_task_row {
    int64_t id;
    const char *cls;
    const char *status;   /* SIM_COMPLETED, SIM_FAILED or SIM_UNFINISHED */
    double start_s;       /* its first call was sent */
    double finish_s;      /* its last call finished (NAN unless completed) */
    int32_t calls;        /* calls made */
    int32_t slow_calls;   /* of them, stragglers */
} sim_task_row;

/* Where facts go.  A callback returning non-zero stops the run (the sink
 * keeps its own error message). */
typedef struct sim_sink {
    void *ctx;
    int (*request)(void *ctx, const sim_request_row *row);
    int (*replica)(void *ctx, const sim_replica_row *row);
    int (*task)(void *ctx, const sim_task_row *row); /* may be NULL */
    int (*iteration)(void *ctx, const sim_iteration_row *row); /* NULL: none are emitted */
} sim_sink;

/* ---- engine ---- */

typedef struct sim_engine sim_engine;

typedef struct sim_progress {
    double sim_s;
    int64_t arrived, done, events;
} sim_progress;

typedef void (*sim_progress_fn)(const sim_progress *p, void *arg);

/* sim_engine_run's status when more requests were in flight than the
 * engine's limit: the cluster could not keep up with its arrivals. */
enum { SIM_EOVERLOAD = -10 };

/* The scenario must outlive the engine. */
sim_engine *sim_engine_create(const sim_scenario *sc, const sim_sink *sink);
void sim_engine_destroy(sim_engine *e);
/* Stops a run as overloaded once more than limit requests are in flight
 * (sent and not ended), so that no run of an overloaded cluster lasts
 * longer than its limit's worth of backlog; 0: no limit. */
void sim_engine_limit_in_flight(sim_engine *e, int64_t limit);
/* Runs to the end, or until *stop becomes non-zero (checked before every
 * event), calling progress every few thousand events.  Returns 0, UTIL_EINTR
 * when stopped, SIM_EOVERLOAD when the in-flight limit was passed (either
 * way in-flight requests are emitted as unfinished), or UTIL_EFAIL when the
 * sink failed. */
int sim_engine_run(sim_engine *e, const volatile sig_atomic_t *stop, sim_progress_fn progress,
                   void *arg);
void sim_engine_progress(const sim_engine *e, sim_progress *out);
/* Why a run returned UTIL_EFAIL when the sink did not fail (a trace that
 * could not be read), or NULL. */
const char *sim_engine_error(const sim_engine *e);

/* ---- recorder: the SQLite sink ---- */

typedef struct sim_recorder sim_recorder;

/* The SQL that creates a servesim database's tables and view (documented in
 * docs/database.md), for tools that build one themselves. */
extern const char sim_recorder_schema_sql[];

/* Opens or creates a servesim database.  A file that is not SQLite, or a
 * SQLite database of some other program, is refused (UTIL_EINPUT) and left
 * untouched.  Nothing is written until sim_recorder_begin. */
int sim_recorder_open(const char *path, sim_recorder **out, util_diag *d);
/* What the next run is, beyond its scenario (the strings are borrowed
 * until sim_recorder_begin). */
typedef struct sim_run_label {
    const char *overrides; /* JSON object of the overrides applied (--set, --vary), or NULL */
    const char *sweep;     /* the sweep it is a point of, or NULL */
    int64_t run_id;        /* > 0: this id (a sweep's point, numbered in advance) */
} sim_run_label;
void sim_recorder_label(sim_recorder *r, const sim_run_label *label);
/* Marks the file as scratch -- a sweep's point, merged and deleted -- so
 * that commits skip the fsyncs a user's database gets. */
void sim_recorder_scratch(sim_recorder *r);
/* Starts a run: one transaction holds the whole run, so a run is recorded
 * whole or not at all and a failure leaves the database as it was. */
int sim_recorder_begin(sim_recorder *r, const sim_scenario *sc, int64_t *run_id, util_diag *d);
sim_sink sim_recorder_sink(sim_recorder *r);
/* The sink of a recorder that also stores every iteration in `iterations`
 * (servesim run --record-iterations): one row per engine step, so a run
 * writes tokens / batch size more rows; off by default. */
sim_sink sim_recorder_sink_with_iterations(sim_recorder *r);
/* Marks the run (status "completed", "interrupted" or "failed") and commits. */
int sim_recorder_finish(sim_recorder *r, const char *status, double sim_end_s, double wall_s,
                        int64_t events, util_diag *d);
/* Copies every run of the servesim database at path (a sweep's point,
 * simulated elsewhere, its run ids numbered for this file) in one
 * transaction: all of it or nothing. */
int sim_recorder_merge(sim_recorder *r, const char *path, util_diag *d);
/* Rolls the run back; a database file this recorder created is removed. */
void sim_recorder_abort(sim_recorder *r);
/* The message of a failed sink callback. */
const char *sim_recorder_error(const sim_recorder *r);
sqlite3 *sim_recorder_db(sim_recorder *r);
void sim_recorder_close(sim_recorder *r);
/* Closes the recorder but keeps its connection open for the caller, who
 * closes it with sqlite3_close (an in-memory database lives on). */
sqlite3 *sim_recorder_release(sim_recorder *r);

#endif /* SIM_H */
