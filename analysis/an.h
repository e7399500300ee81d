/*
 * an: everything users look at, computed from a servesim SQLite database
 * alone.  It never needs the engine: a stored run can be re-analysed at any
 * time, by this library or by anyone with sqlite3.
 *
 * Definitions (see docs/metrics.md):
 *  - measured requests: completed requests that arrived at or after warmup_s;
 *    every latency distribution is over them;
 *  - percentiles: linear interpolation between order statistics (numpy's
 *    default, as vLLM, GenAI-Perf and LLMPerf report);
 *  - the window runs from the first arrival at or after warmup_s to the last
 *    completion of a measured request; throughputs and goodput divide by it;
 *  - SLO attainment: the share of requests sent after warm-up meeting every
 *    SLO that is set -- a class's own keys, else the scenario's; a request
 *    that was rejected, timed out or had not finished when the run ended
 *    fails every SLO; a reply of one token has no TPOT and passes a TPOT
 *    SLO, as in vLLM.
 */
#ifndef AN_H
#define AN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "util.h"

/* Mean, max and percentiles of one metric; NAN throughout when n == 0. */
/* The least slope of the queue's wait against the arrival time, seconds a
 * second, that says a run's queue grew throughout it (an_section). */
#define AN_QUEUE_GROWTH 0.05

typedef struct an_stats {
    int64_t n;
    double mean, p50, p90, p95, p99, p999, max;
} an_stats;

/* Sorts v in place and summarises it. */
void an_stats_compute(double *v, size_t n, an_stats *out);
/* {"mean", "p50", "p90", "p95", "p99", "p999", "max"}, null where not finite:
 * the report's form of a summary, wherever one is printed. */
cJSON *an_stats_json(const an_stats *s);
/* The q-quantile (0 <= q <= 1) of sorted data by linear interpolation. */
double an_quantile_sorted(const double *sorted, size_t n, double q);

/* Targets per request, and per agent task (task_e2e_s: from its first
 * call's arrival to its last call's end); NAN when unset. */
typedef struct an_slo {
    double ttft_s, tpot_s, e2e_s;
    double task_e2e_s;
    bool set; /* at least one per-request target is (task_e2e_s is not one) */
} an_slo;

/* The metrics a target or a curve can name. */
typedef enum an_metric { AN_TTFT, AN_TPOT, AN_TPOT_INCL_TTFT, AN_E2E, AN_N_METRICS } an_metric;
/* "ttft", "tpot", "tpot_incl_ttft", "e2e" (request_metrics' columns, less _s). */
extern const char *const an_metric_names[];

/* A percentile target, `--slo ttft_p99=2` (or a mean, `ttft_mean=0.5`).
 * value_s is the percentile (mean) of the measured requests, as printed;
 * the verdict counts every request sent after warm-up: one that was
 * rejected, timed out or unfinished counts as infinitely late, so the
 * target is met only when value_all_s -- the percentile with them in --
 * is at most the threshold (a mean is then infinite). */
typedef struct an_target {
    const char *cls;  /* NULL: every request */
    an_metric metric;
    double q;         /* 0.99; NAN: the mean */
    double threshold_s;
    bool from_scenario; /* the stored scenario's slo (ttft_p99_s), not an --slo */
    /* computed */
    double value_s;          /* over the measured (completed) requests only */
    int64_t not_completed;   /* sent after warm-up and rejected, timed out or unfinished */
    double value_all_s;      /* with those counted as infinitely late (INFINITY possible) */
    double margin_s;         /* threshold - value_all_s */
    bool met;
} an_target;

/* One request's row as the engine emits it (sim_request_row's figures:
 * NAN for a time that never came, replica -1 for none), for an_stream. */
typedef struct an_request {
    int64_t id;
    int replica;
    const char *cls, *status;
    double arrival_s, enqueue_s, first_scheduled_s, first_token_s, finish_s;
    double prompt_tokens, output_tokens, preemptions, cached_tokens;
    int decode_replica; /* disaggregated: the replica that decoded it; -1: none (set it) */
    bool shed;          /* rejected: shed by the gateway */
    bool retried;       /* its client sent it again: not counted (the retry is) */
} an_request;

/* A run's request rows summarised as they are recorded, so that the report
 * of the run just made need not read them back (servesim run).  Set up from
 * the run's effective scenario (the one stored with it), its replica count
 * and the report's options; fed every row, in any order; then given to
 * an_report_compute_with in an_options.stream, which takes its request
 * sections from it -- the same figures a scan of the stored rows gives --
 * and reads the rows only if the percentiles outgrew the scan's budget. */
typedef struct an_stream an_stream;
typedef struct an_options an_options;
an_stream *an_stream_new(const cJSON *scenario, int replicas, const an_options *opt);
void an_stream_add(an_stream *s, const an_request *row);
void an_stream_free(an_stream *s);

/* What-if inputs: thresholds replacing the stored scenario's, key by key. */
typedef struct an_class_slo {
    const char *cls;
    an_slo slo;
} an_class_slo;

struct an_options {
    an_slo slo;                  /* keys that are not > 0 keep the scenario's */
    an_class_slo *class_slo;     /* one class's keys (after slo) */
    int n_class_slo;
    an_target *targets;          /* filled in by the report */
    int n_targets;
    bool by_replica;             /* per-replica request sections too */
    bool by_tenant, by_tier;     /* per-tenant, per-tier request sections too (an_group) */
    bool by_model;               /* per-model sections too (models.c) */
    bool by_session;             /* sessions' turns, by turn number (sessions.c) */
    size_t scan_budget_values;   /* latencies one scan keeps in memory before it spills to
                                  * histograms and reads the rows again (the figures are the
                                  * same either way); 0: 8 Mi values, 64 MiB */
    an_stream *stream;           /* the run's rows as recorded (an_stream), or NULL: scan them */
};

/* The per-request sections of a report, over every request, one class or
 * the requests one replica served: those it prefilled or, for a decode
 * replica of a disaggregated cluster, those it decoded, whose TTFT and
 * queue (the prefill side's) it leaves out. */
typedef struct an_section {
    /* counts; ended = completed, rejected or timed out after warm-up;
     * handed_over: a decode replica's requests, whose KV cache reached it
     * (they are the ones that arrived at it) */
    int64_t arrived, completed, measured, rejected, timed_out, unfinished, handed_over;
    int64_t shed; /* of the rejected, shed by the gateway (requests.reason) */
    int64_t preempted, preemptions; /* requests preempted at least once; times in all */
    /* latency, seconds */
    an_stats ttft, tpot, tpot_incl_ttft, e2e, queue;
    /* the queue's trend: its wait against the arrival time (s per s, a
     * least-squares slope over the measured requests), their arrivals'
     * span, and whether it grew throughout the run (scan.c says when) */
    double queue_growth, arrival_span_s;
    bool queue_grew;
    /* throughput over the window, from window_start_s to window_end_s */
    double window_s, window_start_s, window_end_s;
    double requests_per_s, input_tokens_per_s, output_tokens_per_s;
    double input_tokens, output_tokens; /* of the measured requests */
    an_stats per_user_tokens_per_s; /* 1 / TPOT per request */
    /* SLO attainment: good of the requests sent after warm-up ("ended" for
     * history: unfinished ones count, as failures); NAN when no SLO applies */
    an_slo slo;
    int64_t good, ended;
    double attainment, goodput_requests_per_s;
    /* the prefix cache, over the requests scheduled after warm-up: prompt
     * tokens served from it at first scheduling, of all their prompt tokens */
    double prompt_tokens_scheduled, cached_tokens, prefix_hit_rate;
} an_section;

/* Agent tasks started after warm-up.  Calls per task and the share with a
 * slow call are over ended (completed or failed) tasks; e2e over completed.
 * The task SLO (slo.task_e2e_s, a class's own else the scenario's): good
 * tasks completed within slo_s of their start, of all count started after
 * warm-up (a failed or unfinished one fails it), and good per second of the
 * requests' window; NAN when no task SLO applies. */
typedef struct an_tasks {
    int64_t count, completed, failed, unfinished;
    an_stats e2e;
    double calls_per_task, any_slow_fraction;
    double slo_s;
    int64_t good;
    double attainment, goodput_tasks_per_s;
} an_tasks;

typedef struct an_class {
    char *name;
    an_section req; /* with the class's SLO: its own keys, else the scenario's */
    an_tasks tasks;
    /* what the scenario gave it (workload.classes[]), NULL or NAN when
     * not: its priority as written (a tier's name or an integer), its
     * deadline after arrival and its tenant */
    char *priority, *tenant;
    double deadline_s;
} an_class;

/* The requests of one tenant (requests.tenant) or one tier
 * (requests.priority), for --by tenant and --by tier.  Its section judges
 * each request by its own class's SLO, as the run's attainment does, so
 * the section has no thresholds of its own (req.slo unset) and its
 * attainment is NAN only when none of its requests had an SLO.  The shed
 * share is shed / arrived: the requests the gateway shed (before schema
 * 13, which records why a request was rejected: every rejected one). */
typedef struct an_group {
    char *name;      /* the tenant, or the tier's name (critical .. background) or its
                      * integer; "(none)": no tenant, "(not recorded)": no priority */
    bool null;       /* the column was NULL */
    double priority; /* a tier's value; NAN for a tenant, or a priority not an integer */
    an_section req;
    double shed_share;
} an_group;

/* The tier's name of a priority (-1 .. 3: "critical", "standard", "batch",
 * "sheddable", "background", the Gateway API Inference Extension's), or
 * NULL for another value. */
const char *an_tier_name(int64_t priority);
/* Jain's fairness index of n values: (sum x)^2 / (n sum x^2), 1 when they
 * are equal, 1/n when one has everything; NAN when n is 0 or every x is 0. */
double an_jain_index(const double *x, size_t n);

/* Utilisation of one replica (or, in an_report.use, of all together).
 * Busy, MFU and MBU as in docs/metrics.md; KV and queue are time-weighted
 * over the simulated time, with their peaks.  batch_fill is the saturation
 * measure busy is not under continuous batching: the time-weighted mean of
 * sequences running over the simulated time / batch_slots (max_batch, vLLM's
 * max_num_seqs; summed over the replicas; 0 and NAN when the stored scenario
 * does not say). */
typedef struct an_spec {
    int64_t k, steps, off_steps, drafts, draft_tokens, accepted;
    double drafting_s, verify_s, busy_s;
    /* derived: accepted over proposed drafts; tokens a verification emits
     * (1 + accepted per verification) and a speculative step emits over all
     * its sequences; drafting and verifying over busy time */
    double acceptance_rate, mean_accepted_length, tokens_per_step, drafting_share, verify_share;
} an_spec;

/* LoRA adapters (replicas.lora_*; all 0 without cluster.lora, or in a
 * database older than schema 11): GPU slots (max_loras, summed over the
 * replicas that have them), admissions of a request for an adapter, those
 * that found it in a GPU slot, of the others those that found it in the
 * CPU cache (the rest read it from disk), the loads' time and the LoRA
 * kernels', and the replicas' busy time. */
typedef struct an_lora {
    int64_t slots, lookups, gpu_hits, cpu_hits, loads, disk_loads;
    double load_s, kernel_s, busy_s;
    /* derived: gpu_hits / lookups; cpu_hits / loads; load_s / loads; the
     * loads' and the kernels' shares of busy time */
    double gpu_hit_rate, cpu_hit_rate, mean_load_s, load_share, kernel_share;
} an_lora;

/* A KV offload tier (all 0 without cluster.kv_offload, or in a database
 * older than schema 14): its size over the replicas, the
 * prompt tokens it was asked for at first schedulings (those the GPU cache
 * missed) and those it served, the bytes copied into it and loaded back. */
typedef struct an_tier {
    double tier_bytes;
    int64_t lookup_tokens, hit_tokens;
    double stored_bytes, loaded_bytes;
    double hit_rate; /* derived: hit_tokens / lookup_tokens */
} an_tier;

/* Where a request's cached prefix came from: the lowest tier that served
 * any of its prompt at its first scheduling (requests.disk_hit_tokens,
 * cpu_hit_tokens, cached_tokens), or none of it cached. */
typedef enum an_source { AN_SOURCE_NONE, AN_SOURCE_GPU, AN_SOURCE_CPU, AN_SOURCE_DISK,
                         AN_N_SOURCES } an_source;
extern const char *const an_source_names[AN_N_SOURCES]; /* "none", "gpu", "cpu", "disk" */

/* The requests sent after warm-up from one source (a retried attempt left
 * out, as every count leaves it), and the TTFT of those completed. */
typedef struct an_by_source {
    int64_t requests;
    an_stats ttft;
} an_by_source;

/* ... its CPU tier (replicas.cpu_*) and its disk tier (replicas.disk_*:
 * asked for what the GPU cache and the CPU tier missed); the TTFT by
 * source, for the cluster (has_sources: a database of schema 15 on) */
typedef struct an_offload {
    an_tier cpu, disk;
    bool has_sources;
    an_by_source by_source[AN_N_SOURCES];
} an_offload;

typedef struct an_use {
    int replica;      /* -1: the whole cluster */
    char *pool, *gpu; /* NULL for the cluster */
    int gpus;
    double busy_fraction, mean_batch, mfu, mbu;
    int64_t batch_slots; /* max_batch summed over the replicas; of a fleet whose replicas
                          * lived different spans, its mean over the run */
    bool lives_differ;   /* ... which is that mean: the fleet changed */
    double batch_fill;
    double kv_mean_fraction, kv_peak_fraction;
    double queue_mean;
    int64_t queue_peak;
    double gpu_j, mean_gpu_w; /* over the whole run, idle time at idle power */
    /* the prefix cache: the hit rate of the requests it prefilled (as
     * an_section's) and the blocks of reusable content it evicted */
    double prefix_hit_rate;
    int64_t evicted_blocks;
    /* memory as the precision sized it: the weights of its replicas (all
     * their GPUs), one token's KV (NAN when replicas differ, or in a
     * database older than schema 4) and the KV capacity */
    double weight_bytes, kv_bytes_per_token;
    int64_t kv_capacity_tokens;
    /* the weight-only form its quantization ran in on its GPU, "W8A16"
     * (mdl_weight_only_form: fp8 on an A100 under vllm-v1), or NULL: it
     * computed in its dtype (the cluster's: every replica's one form) */
    const char *weight_only;
    /* speculative decoding (replicas.spec_*; all 0 without it, or in a
     * database older than schema 8): K, the steps that speculated and the
     * decode steps that did not, the verifications (a sequence in a step),
     * the drafts proposed and accepted, and the busy time spent drafting
     * and in the rest of the speculative steps (verifying) */
    an_spec spec;
    an_lora lora;
    an_offload offload;
    an_section req;           /* requests it served (with options.by_replica) */
    bool decodes; /* it is of the disaggregated cluster's decode pool: req is what it decoded */
} an_use;

/* One model of the fleet (report --by model): the requests of the classes
 * that are its (workload.classes[].model; a class naming none is the
 * fleet's one model's), each judged by its class's targets, and the
 * replicas of the pools serving it (replicas.model), their GPUs paid over
 * the run's window as the cluster's cost is. */
typedef struct an_model {
    char *id;
    an_section req;
    int replicas, gpus;
    double usd, usd_per_million_output_tokens, usd_per_million_total_tokens, usd_per_request;
} an_model;

/* report --by session: the requests of one turn number of the run's
 * sessions (workload.sessions' classes: requests.call_index + 1), sent
 * after warm-up, every attempt of a retried turn counted. */
typedef struct an_turn {
    int turn;                /* 1, 2, ... */
    int64_t requests;        /* rows of this turn, any status */
    double mean_prompt;      /* their mean prompt_tokens: the history sent and the new tokens */
    int64_t prompt_scheduled, cached; /* of those scheduled: prompt and cached tokens */
    double hit_rate;         /* cached / prompt_scheduled; NAN: none scheduled */
    int64_t completed;       /* the TTFTs' count */
    double ttft_p50, ttft_p99; /* gsl's interpolated quantiles of the completed rows' TTFT */
} an_turn;

/* Cost over the measurement window: every GPU, busy or idle, for the part
 * of the window its replica lived (created to retired, or the end). */
typedef struct an_cost {
    int gpu_count;
    bool changing; /* some replica lived only part of the window (an autoscaler's fleet) */
    double usd_per_gpu_hour; /* mean over the GPUs */
    double overhead_fraction;
    double gpu_hours, usd;
    /* replicas over the window: the most alive at once (made, not yet
     * retired), and the mean (their shares of the window summed) */
    double peak_replicas, mean_replicas;
    double usd_per_million_output_tokens, usd_per_million_total_tokens, usd_per_request;
    double utilisation; /* the busy fraction the cost was paid at */
    double usd_per_million_output_tokens_at_full_utilisation; /* x utilisation */
} an_cost;

/* Energy over the measurement window at the run's mean power: GPU (the
 * boards) and wall ((GPU + host) x PUE). */
typedef struct an_energy {
    double host_w_per_gpu, pue;
    double gpu_j, wall_j, gpu_wh, wall_wh;
    double gpu_j_per_output_token, wall_j_per_output_token, mean_gpu_w;
} an_energy;

/* What replicas' failures did (cluster.failures, docs/failures.md). */
typedef struct an_failures {
    int64_t failed_replicas; /* replicas that failed (end_reason failed) */
    int64_t taken_back;      /* ... that a spot notice took back (end_reason taken_back); the
                              * section is there when either is not 0 */
    double span_s;           /* the run, until its last replica's row */
    double ready_s, down_s;  /* replica-seconds ready, and down after a failure until its
                              * replacement (availability.c) */
    double availability;     /* ready_s / (ready_s + down_s) */
    int64_t failed_calls;    /* calls whose outcome is a failure (status failed) */
    int64_t sent_again;      /* failed attempts their clients sent again (workload.retry) */
    int64_t calls;           /* calls, each once (its last attempt) */
} an_failures;

/* A fleet that changed (docs/autoscaling.md, "What is reported"): a
 * static fleet sized for its peak, over the same window at the same price,
 * and the requests sent after warm-up that missed the SLO while it was
 * short (an_fleet_spans' windows). */
typedef struct an_fleet {
    bool changing;           /* cost.changing: the section is reported only then */
    int peak_ready_replicas; /* the most replicas ready at once */
    double peak_ready_gpus;  /* ... and their GPUs (the most at once) */
    double static_gpu_hours, static_usd; /* peak_ready_gpus x the window, at cost's price */
    int64_t sent;            /* rows sent after warm-up */
    int64_t missed_lag;      /* missed, sent while an autoscaler's replica was starting */
    int64_t missed_failures; /* failed by a failure, or missed and sent while a failed
                              * replica was down (counted here, not in missed_lag) */
} an_fleet;

typedef struct an_report {
    /* run */
    int64_t run_id;
    char *name, *status;
    char *status_reason; /* why it was interrupted or overloaded, or NULL */
    int64_t seed, events;
    double sim_time_s, wall_time_s, warmup_s;
    double timeout_s; /* workload.timeout_s; 0: none */
    /* every request; with classes, SLO attainment sums theirs */
    an_section req;
    an_tasks tasks;     /* count == 0: the run had no agent tasks */
    an_class *classes;  /* workload.classes in order, or one named "default" */
    int n_classes;
    bool has_classes;   /* the scenario defines workload.classes */
    /* with an_options.by_tenant, by_tier: the groups, tenants by name and
     * tiers most urgent first, the NULL group last; and Jain's index over
     * the tenants (not "(none)") with a request ended after warm-up, of
     * each one's good requests over those ended (its attainment, by its
     * classes' SLOs: with none, every completed request is good), and how
     * many there were */
    bool by_tenant, by_tier;
    an_group *tenants, *tiers;
    int n_tenants, n_tiers;
    double tenant_jain;
    int tenant_jain_n;
    an_target *targets; /* options' percentile targets, evaluated */
    int n_targets;
    bool slo_whatif;    /* options replaced some of the scenario's thresholds */
    /* resources */
    an_use use;         /* the cluster */
    an_use *replicas;   /* each replica */
    int n_replicas;
    bool by_replica;
    an_model *models;   /* with options.by_model, the fleet's models, by first replica */
    bool by_session;    /* options.by_session: turns below (none: the run had no sessions) */
    an_turn *turns;     /* by turn number, 1 first */
    int n_turns;
    int n_models;
    int *model_of_class; /* [n_classes]: each class's index in models; -1: none */
    /* request rows left out: values no run writes (a time that is text, not
     * finite or before its arrival; a token count below one), so the file
     * was edited or damaged; skipped_why says the first (empty: none) */
    int64_t skipped_rows;
    char skipped_why[160];
    /* attempts their clients sent again (workload.retry): each call counts
     * once, by its last attempt, so these rows are left out of every count */
    int64_t retried_attempts;
    an_failures failures; /* cluster.failures: all 0 when no replica failed */
    an_fleet fleet;       /* only when the fleet changed (fleet.changing) */
    char *decode_pool;  /* cluster.disaggregated.decode, or NULL: not disaggregated */
    an_cost cost;
    an_energy energy;
    /* a measured run (servesim import): its tool, file and clock, and the
     * tool's own aggregates as JSON text; all NULL for a simulated run */
    char *measured_format, *measured_source, *measured_clock, *measured_metrics;
    /* the calibration profile the stored scenario names (cluster.calibration),
     * read again: its path, and while the file is there (calibration_found)
     * its GPU, engine and fitted_on (JSON text) and how many runs that
     * lists; all NULL for a run without one */
    char *calibration_path, *calibration_gpu, *calibration_engine, *calibration_fitted_on;
    bool calibration_found;
    int calibration_runs;
} an_report;

/* Opens a database read-only, refusing files that are not servesim's. */
int an_open(const char *path, sqlite3 **out, util_diag *d);
/* The id of the newest run. */
int an_last_run(sqlite3 *db, const char *origin, int64_t *run_id, util_diag *d);
/* Computes the report of one run, as stored. */
int an_report_compute(sqlite3 *db, int64_t run_id, an_report *out, util_diag *d);
/* The same with what-if thresholds and percentile targets (opt may be NULL). */
int an_report_compute_with(sqlite3 *db, int64_t run_id, const an_options *opt, an_report *out,
                           util_diag *d);
void an_report_fini(an_report *r);

/* Parses one `--slo` argument into opt: KEY=TIME where KEY is ttft, tpot
 * or e2e (a threshold), task_e2e (an agent task's threshold), METRIC_pNN (a
 * percentile target: ttft_p99, e2e_p99.9), either prefixed by a class name
 * and a dot (chat.ttft). */
int an_options_add_slo(an_options *opt, const char *arg, util_diag *d);

/* Each mean or percentile target a scenario states -- its slo's
 * (ttft_p99_s: 2), then each class's -- in order, to fn: the class's index
 * in workload.classes and its name (-1 and NULL: the scenario's own), the
 * target's --slo name (ttft_p99), metric, quantile (NAN: the mean) and
 * threshold.  Thresholds (ttft_s) and task_e2e_s are not targets. */
typedef void an_slo_target_fn(void *ctx, int cls, const char *cls_name, const char *name,
                              an_metric m, double q, double threshold_s);
void an_scenario_slo_targets(const cJSON *scenario, an_slo_target_fn *fn, void *ctx);
/* A time as --slo takes it: "0.5" (seconds), "500ms", "2s", "250us", "1min";
 * *unit says whether a unit was given; false unless it is one, > 0. */
bool an_parse_seconds(const char *text, double *seconds, bool *unit);
void an_options_fini(an_options *opt);

/* The report as the `--json` object (caller frees with cJSON_Delete);
 * "classes" is there when the scenario defines them or by_class asks. */
cJSON *an_report_json(const an_report *r, bool by_class);
/* The report as a readable table; by_class adds one block per class. */
void an_report_print(const an_report *r, bool by_class, FILE *out);
/* The text print(arg, stream) writes, wrapped to the report's width into
 * out, continuation lines indented two more (unwrapped if no memory stream
 * can be had). */
void an_print_wrapped(void (*print)(const void *arg, FILE *out), const void *arg, FILE *out);
/* Any JSON report object as CSV, one row per metric (path,value), or as
 * Markdown tables. */
void an_json_print_csv(const cJSON *report, FILE *out);
void an_json_print_markdown(const cJSON *report, FILE *out);

/* ---- metric definitions side by side (definitions.c) ---- */

/* One per-token latency as one tool defines it, aggregated and summarised
 * as that tool does. */
typedef struct an_definition {
    const char *name;     /* "tpot" */
    const char *formula;  /* "(e2e - ttft) / (output - 1), per request" */
    const char *tools;    /* "vLLM TPOT, GenAI-Perf ITL, GuideLLM ITL, inference-perf TPOT" */
    const char *method;   /* "request-weighted, linear interpolation" */
    an_stats stats;       /* n: samples; NAN when the run lacks the data */
} an_definition;

enum { AN_N_DEFINITIONS = 12 };

/* How a run streamed its decode tokens: a step sends each decoder one
 * chunk, of one token, or under speculative decoding of 1 + the drafts it
 * accepted.  The pooled ITLs count a chunk once (vLLM), once divided by
 * its tokens (GenAI-Perf's chunked ITL) or once per token (inference-perf
 * with a tokenizer), so they part when tokens_per_chunk > 1. */
typedef struct an_chunks {
    bool speculative;        /* the run's replicas speculate (replicas.spec_k > 0) */
    double chunks, tokens;   /* the measured decode steps' chunks (itl_pooled's gaps), tokens */
    double tokens_per_chunk; /* NAN without iteration rows that count tokens (schema 9) */
} an_chunks;

/* Every definition of docs/metrics.md over the measured requests of a run
 * (pooled ITL needs the iterations table: servesim run --record-iterations). */
int an_definitions(sqlite3 *db, int64_t run_id, an_definition out[AN_N_DEFINITIONS],
                   util_diag *d);
/* One of them by its JSON id ("ttft_engine"); an unknown id is an error. */
int an_definition_of(sqlite3 *db, int64_t run_id, const char *name, an_definition *out,
                     util_diag *d);
/* The run's chunks over the same measured iterations as the pooled ITLs. */
int an_definition_chunks(sqlite3 *db, int64_t run_id, an_chunks *out, util_diag *d);
cJSON *an_definitions_json(const an_definition *defs);
cJSON *an_chunks_json(const an_chunks *c);
/* chunks may be NULL: no line on how the run streamed. */
void an_definitions_print(const an_definition *defs, const an_chunks *chunks, FILE *out);

/* ---- SLO curve (definitions.c) ---- */

/* Attainment against a threshold on one metric: the share of ended requests
 * after warm-up (rejected and timed-out ones fail) whose metric is at most
 * the threshold.  `points` thresholds spread over the measured values, and
 * the thresholds that 50, 90, 95, 99 and 99.9% attainment need. */
typedef struct an_curve_point {
    double threshold_s, attainment;
} an_curve_point;

typedef struct an_curve {
    an_metric metric;
    const char *cls;
    int64_t ended, measured;
    an_curve_point *points;
    int n_points;
    an_curve_point needed[5]; /* attainment 0.5, 0.9, 0.95, 0.99, 0.999: threshold, NAN when
                               * failures make it unreachable */
} an_curve;

int an_slo_curve(sqlite3 *db, int64_t run_id, an_metric metric, const char *cls, int points,
                 an_curve *out, util_diag *d);
void an_curve_fini(an_curve *c);
cJSON *an_curve_json(const an_curve *c);
void an_curve_print(const an_curve *c, bool csv, FILE *out);

/* ---- timeline (timeline.c) ---- */

/* A run as a time series, for `servesim timeline`.  Interval i covers
 * [i * interval_s, (i + 1) * interval_s); the last one ends at end_s, so it
 * may be shorter, and its averages are over its own length.  Counts are of
 * events in the interval, the other columns averages over it (see
 * docs/analysis.md).  The struct owns the arrays, n long each. */
typedef struct an_timeline {
    int64_t run_id;
    double interval_s;
    double end_s;         /* the run's sim_end_s */
    int replica;          /* the replica counted, or -1: all, summed */
    bool has_iterations;  /* the run recorded them; else kv_occupancy and power_w are NAN */
    size_t n;
    int64_t *arrivals, *completions;
    int64_t *timed_out;          /* at arrival + workload.timeout_s, when the client gave up */
    double *output_tokens_per_s; /* completed requests: the first token at first_token_s, the
                                  * rest evenly until finish_s */
    double *queue, *running;     /* requests waiting (their first wait), in service */
    double *kv_occupancy;        /* KV tokens in use / the replicas' capacity */
    /* kv_offload: KV held in the CPU and disk tiers / their capacity, as
     * kv_occupancy is averaged (NULL: the counted replicas have no such tier) */
    double *cpu_tier_occupancy, *disk_tier_occupancy;
    double *power_w;             /* iterations' energy, idle_w x gpus between them */
    bool changing;               /* the fleet changed (an autoscaler): some replica was made
                                  * after 0 or retired before the end */
    double *loading, *ready;     /* replicas made and not yet ready (provisioning, loading,
                                  * warming up: `loading`), ready and not draining
                                  * or retired; the mean over the interval */
    double *draining;            /* replicas draining (scale-down, a spot notice) until they
                                  * retire; 0 where the database (schema < 16) has no drain_s */
    bool has_drain;              /* the database says when drains began: `draining` is shown */
    /* When the fleet changed, of the requests sent in each interval (their
     * replica's side with --replica): the TTFT's P50 and P99 among those
     * completed, nearest rank read from a log histogram (within 2.2% of a
     * TTFT in the rank's bucket; NAN: none completed), and the share meeting
     * the stored scenario's slo (one not completed misses it; NAN: no slo
     * or none sent). */
    double *ttft_p50_s, *ttft_p99_s, *attainment;
    bool has_slo;
    /* Replicas down after a failure (every replica, without --replica): one
     * retired 'failed' counts from its retired_s to the ready_s of its
     * replacement, the first replica made at or after it not already
     * paired with an earlier failure (the run's end: none ready). */
    bool failures;
    double *failed;
    uint32_t **ttft_hist; /* working state: each interval's histogram, made on first use */
    int64_t *good;        /* working state: requests sent in the interval that met the slo */
} an_timeline;

/* Computes run_id's timeline in intervals of interval_s (> 0) seconds, for
 * replica (-1: all).  Reads each table once; memory grows with the
 * intervals, not the rows.  Call an_timeline_fini even after a failure. */
int an_timeline_compute(sqlite3 *db, int64_t run_id, double interval_s, int replica,
                        an_timeline *out, util_diag *d);
void an_timeline_fini(an_timeline *t);

/* ---- comparing two runs ---- */

/* One side of a comparison: a run of an open database, and the file it came
 * from, which names it in messages and in the comparison. */
typedef struct an_run_ref {
    sqlite3 *db;
    const char *file;
    int64_t run;
} an_run_ref;

/* A JSON value's leaves as one object keyed by dotted path ("a.b", arrays
 * as "a.c[0]"), in document order; an empty object or array is a leaf.
 * Caller frees with cJSON_Delete. */
cJSON *an_json_flatten(const cJSON *root);
/* Compares run b with run a: the `compare --json` object (caller frees),
 * {"a"/"b": {file, run, name}, "scenario": [{path, a, b}] for each stored
 * scenario key that differs (a side without the key has no "a" or "b"),
 * "metrics": [{path, a, b, diff, rel}] for every number of the reports with
 * classes, less run.wall_time_s, run.id and run.name}.  diff is B - A and
 * rel is 100 (B - A) / |A|, both null when a side is null or absent, rel also
 * when A is 0.  A missing run is an input error naming its file. */
int an_compare(const an_run_ref *a, const an_run_ref *b, cJSON **out, util_diag *d);
/* The comparison as text: the scenario keys that differ, then the metrics
 * that differ (all: every metric), with units named by their keys. */
void an_compare_print(const cJSON *cmp, bool all, FILE *out);

/* ---- plots (plot.c gathers, draw.c lays out, canvas_*.c draw) ---- */

/* A figure gathered from a database for `servesim plot` (or made by a
 * lesson): panels stacked over one x axis, each with its series and guide
 * lines (SLO thresholds, limits, marks).  an_plot_compute fills it for one
 * kind; an_plot_svg, an_plot_png and an_plot_text draw the same figure
 * through one layout.  A series holds exactly the numbers it plots (no
 * NaN), in the unit its axis names (seconds stay seconds: the drawing shows
 * milliseconds when an axis stays below one), so a reader of the SVG gets
 * the database's values back.  The figure owns every string and array. */
typedef enum an_plot_kind {
    AN_PLOT_LATENCY_LOAD,           /* a sweep: P50/P90/P99 TTFT and TPOT, goodput, against the varied key */
    AN_PLOT_THROUGHPUT_CONCURRENCY, /* a sweep over users: total tokens/s against tokens/s per user */
    AN_PLOT_CDF,                    /* runs: empirical CDF of one metric, and its tail */
    AN_PLOT_TIMELINE,               /* a run: queue, batch, KV, tokens/s, power over time */
    AN_PLOT_SLO_CURVE,              /* runs: attainment against the threshold */
    AN_PLOT_PIPELINE,               /* a run's replica: each engine step planned, run, delivered */
    AN_N_PLOT_KINDS
} an_plot_kind;
/* "latency-load", "throughput-concurrency", "cdf", "timeline", "slo-curve",
 * "pipeline", NULL. */
extern const char *const an_plot_kind_names[];

/* The colour ("#rrggbb") and dash (an SVG stroke-dasharray, "" for solid)
 * of palette entry i: Okabe and Ito's colour-blind-safe palette, and a dash
 * per entry as a second channel. */
const char *an_plot_colour(int i);
const char *an_plot_dash(int i);

/* An axis' scale: AUTO lets the drawing choose (x: log for a geometric
 * sweep; y: log where the data spans decades). */
typedef enum an_plot_scale { AN_SCALE_AUTO, AN_SCALE_LINEAR, AN_SCALE_LOG } an_plot_scale;

/* How a series is drawn: a line through its points (with markers when
 * few), a step function (CDFs, percentiles of sorted values), or markers
 * alone (measured points beside a closed form). */
typedef enum an_plot_style { AN_STYLE_LINE, AN_STYLE_STEPS, AN_STYLE_POINTS } an_plot_style;

typedef struct an_plot_series {
    char *name;    /* the legend's text: "p99 TTFT" */
    double *x, *y; /* n points, finite */
    size_t n;
    double *lo, *hi; /* NULL, or each point's band (seeds' min and max, an interval): shaded */
    char **labels;   /* NULL, or a short text per point ("64 users"), placed beside it */
    /* Palette entries, 1-based so that a zeroed series takes its position
     * in the panel: colour says which configuration, dash which statistic. */
    int colour, dash;
    an_plot_style style;
} an_plot_series;

typedef enum an_plot_guide_kind {
    AN_GUIDE_REFERENCE, /* grey, dotted: a reference value (a closed form, a crossover) */
    AN_GUIDE_SLO,       /* black, dashed: a target */
    AN_GUIDE_LIMIT,     /* grey, dashed: a capacity (KV blocks, max_batch) */
    AN_GUIDE_MARK,      /* black, solid: a finding (the highest rate meeting the SLO) */
} an_plot_guide_kind;

/* A reference line across the panel: y = at, or x = at (vertical). */
typedef struct an_plot_guide {
    char *label; /* "TTFT SLO 0.5 s": drawn at the line's own end */
    double at;
    bool vertical;
    an_plot_guide_kind kind;
} an_plot_guide;

typedef struct an_plot_panel {
    char *y_label; /* in words: "TTFT" */
    char *y_unit;  /* "s", "tokens/s", "req/s", "%", "" for a pure number */
    an_plot_scale y_scale;
    an_plot_series *series;
    int n_series;
    an_plot_guide *guides;
    int n_guides;
} an_plot_panel;

/* A shaded stretch of x across every panel (the warm-up). */
typedef struct an_plot_span {
    char *label;
    double lo, hi;
} an_plot_span;

typedef struct an_plot {
    char *title;    /* what was simulated: "chat: Llama-3.1-8B on 4 x H100" */
    char *subtitle; /* what is drawn: "TTFT and TPOT percentiles against arrival rate"; may be NULL */
    char *source;   /* the file and runs, kept as metadata (data-source), never drawn */
    char *x_label;  /* in words */
    char *x_unit;
    an_plot_scale x_scale;
    /* NULL, or the x ticks to draw instead of nice ones, each with its
     * label: an axis of categories ("P50", "P90") that shows no values between */
    double *x_ticks;
    char **x_tick_labels;
    int n_x_ticks;
    an_plot_panel *panels;
    int n_panels;
    an_plot_span *spans;
    int n_spans;
    /* sweeps: x values with overloaded runs, k of n runs there (k == n: no point) */
    double *overloaded_x;
    int *overloaded_k, *overloaded_n;
    size_t n_overloaded;
    char **notes; /* lines under the figure: what a point averages, what was left out */
    int n_notes;
    /* NULL, or lanes drawn in place of panels (pipeline): analysis/figure.h */
    struct an_plot_lanes *lanes;
} an_plot;

/* How latency-load judges a point against the scenario's p99 targets
 * (slo.ttft_s, slo.tpot_s).  MEAN is servesim plan's rule: the mean over
 * the point's seeds, the worse end of its Student-t interval within each
 * target; ALL_SEEDS asks every seed to be within.  Either fails a point
 * with an overloaded seed. */
typedef enum an_plot_criterion { AN_CRITERION_MEAN, AN_CRITERION_ALL_SEEDS } an_plot_criterion;
/* "mean", "all-seeds", NULL. */
extern const char *const an_plot_criterion_names[];

/* What to plot.  Sweeps are the runs sharing a runs.sweep label; their x is
 * the key of runs.overrides (else of the stored scenario) named by x_key,
 * each point the mean over the runs with the same x (seeds) with their
 * min-max as a band, overloaded runs marked; other keys that vary make one
 * colour per combination. */
typedef struct an_plot_request {
    an_plot_kind kind;
    const char *file;     /* names the messages and the figure's source */
    const int64_t *runs;  /* cdf, slo-curve: each; timeline: the first; none: the newest */
    int n_runs;
    const char *sweep;    /* NULL: the newest sweep */
    const char *x_key;    /* NULL: the one key (seed aside) that varies; throughput-concurrency:
                           * workload.arrival.users */
    an_metric metric;     /* cdf, slo-curve */
    double interval_s;    /* timeline; 0: 1 s */
    int points;           /* slo-curve thresholds; 0: 101 */
    double slo_s;         /* slo-curve: the threshold drawn and read (a what-if); 0: the
                           * scenario's */
    an_plot_scale x_scale, y_scale; /* AUTO unless --log / --log-y */
    const char *title;    /* --title: replaces the title made from the scenario */
    const util_field *schema; /* the scenario's (sim_scenario_fields): units of swept keys */
    /* latency-load: how a point meets the SLO, the mean's confidence (0:
     * 0.95, plan's default), and whether to mark the rate plan --find
     * max-rate would answer, interpolated between the stored points */
    an_plot_criterion criterion;
    double confidence;
    bool plan;
    /* pipeline: the window in seconds (from_s 0: the first step's; to_s 0:
     * 12 steps on), the replica, and the request whose life is drawn (NULL:
     * none) */
    double from_s, to_s;
    int replica;
    const int64_t *request;
} an_plot_request;

/* Gathers the figure; bad input (no such run or sweep, no key to plot
 * against) is UTIL_EINPUT with a message naming the file.  Call an_plot_fini
 * even after a failure. */
int an_plot_compute(sqlite3 *db, const an_plot_request *req, an_plot *out, util_diag *d);
void an_plot_fini(an_plot *p);

/* What a stored scenario simulated, for a figure's title: "NAME: MODEL on
 * N x GPU (TP t)", from its name, cluster.model, cluster.gpu, replicas and
 * tensor_parallel (caller frees). */
char *an_plot_scenario_title(const cJSON *scenario);

/* The figure's words for a scenario key: "arrival rate" and "req/s" for
 * workload.arrival.rate_per_s.  A key it does not know gets its last part,
 * underscores as spaces and the unit suffix dropped, and the unit schema
 * gives it (NULL: the one the suffix names).  label is written to buf. */
void an_plot_key_words(const util_field *schema, const char *key, char *buf, size_t n,
                       const char **unit);

/* Drawing.  width, height: the figure's size in CSS pixels, 0 for the
 * default (wide enough for the legend, 230 pixels a panel). */
typedef struct an_plot_size {
    int width, height;
} an_plot_size;

/* A self-contained SVG document.  Each series is a <polyline class="series"
 * data-series="NAME" data-x="..." data-y="..."> whose data attributes hold
 * its values (%.17g: they read back exactly; a band adds data-lo, data-hi);
 * each guide a <line class="guide" data-guide="LABEL" data-kind="slo"
 * data-at="...">. */
void an_plot_svg(const an_plot *p, an_plot_size size, FILE *out);
/* The same drawing as a PNG file at scale pixels per CSS pixel (2 for
 * slides), through cairo.  A failure to write is UTIL_EFAIL naming the path. */
int an_plot_png(const an_plot *p, an_plot_size size, double scale, const char *path,
                util_diag *d);
/* The same PNG in memory (*png: caller frees). */
int an_plot_png_memory(const an_plot *p, an_plot_size size, double scale, unsigned char **png,
                       size_t *len, util_diag *d);
/* The figure in text: each panel a grid width characters wide (the y tick
 * column included) and height rows, lines between points, a marker per
 * series, then a legend. */
void an_plot_text(const an_plot *p, int width, int height, FILE *out);

#endif /* AN_H */
