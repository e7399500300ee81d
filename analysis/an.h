/*
 * an: everything users look at, computed from a servesim SQLite database
 * alone.  It never needs the engine: a stored run can be re-analysed at any
 * time, by this library or by anyone with sqlite3.
 *
 * Definitions (see docs/metrics.md; they follow ../shared/DESIGN.md):
 *  - measured requests: completed requests that arrived at or after warmup_s;
 *    every latency distribution is over them;
 *  - percentiles: linear interpolation between order statistics (numpy's
 *    default, as vLLM, GenAI-Perf and LLMPerf report);
 *  - the window runs from the first arrival at or after warmup_s to the last
 *    completion of a measured request; throughputs and goodput divide by it;
 *  - SLO attainment: the share of requests ended after warm-up (measured,
 *    rejected or timed out) meeting every SLO that is set -- a class's own
 *    keys, else the scenario's; rejected and timed-out requests fail every
 *    SLO; a reply of one token has no TPOT and passes a TPOT SLO, as in vLLM.
 */
#ifndef AN_H
#define AN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "util.h"

/* Mean, max and percentiles of one metric; NAN throughout when n == 0. */
typedef struct an_stats {
    int64_t n;
    double mean, p50, p90, p95, p99, p999, max;
} an_stats;

/* Sorts v in place and summarises it. */
void an_stats_compute(double *v, size_t n, an_stats *out);
/* The q-quantile (0 <= q <= 1) of sorted data by linear interpolation. */
double an_quantile_sorted(const double *sorted, size_t n, double q);

/* Targets per request; NAN when unset. */
typedef struct an_slo {
    double ttft_s, tpot_s, e2e_s;
    bool set; /* at least one is */
} an_slo;

/* The per-request sections of a report, over every request or one class. */
typedef struct an_section {
    /* counts; ended = completed, rejected or timed out after warm-up */
    int64_t arrived, completed, measured, rejected, timed_out, unfinished;
    int64_t preempted, preemptions; /* requests preempted at least once; times in all */
    /* latency, seconds */
    an_stats ttft, tpot, tpot_incl_ttft, e2e, queue;
    /* throughput over the window */
    double window_s;
    double requests_per_s, input_tokens_per_s, output_tokens_per_s;
    an_stats per_user_tokens_per_s; /* 1 / TPOT per request */
    /* SLO attainment: good of ended requests; NAN when no SLO applies */
    an_slo slo;
    int64_t good, ended;
    double attainment, goodput_requests_per_s;
} an_section;

/* Agent tasks started after warm-up.  Calls per task and the share with a
 * slow call are over ended (completed or failed) tasks; e2e over completed. */
typedef struct an_tasks {
    int64_t count, completed, failed, unfinished;
    an_stats e2e;
    double calls_per_task, any_slow_fraction;
} an_tasks;

typedef struct an_class {
    char *name;
    an_section req; /* with the class's SLO: its own keys, else the scenario's */
    an_tasks tasks;
} an_class;

typedef struct an_report {
    /* run */
    int64_t run_id;
    char *name, *status;
    int64_t seed, events;
    double sim_time_s, wall_time_s, warmup_s;
    /* every request; with classes, SLO attainment sums theirs */
    an_section req;
    an_tasks tasks;     /* count == 0: the run had no agent tasks */
    an_class *classes;  /* workload.classes in order, or one named "default" */
    int n_classes;
    bool has_classes;   /* the scenario defines workload.classes */
    /* utilisation, from the replicas' records */
    int replicas;
    double busy_fraction, mean_batch, mfu, mbu, kv_peak_fraction;
} an_report;

/* Opens a database read-only, refusing files that are not servesim's. */
int an_open(const char *path, sqlite3 **out, util_diag *d);
/* The id of the newest run. */
int an_last_run(sqlite3 *db, const char *origin, int64_t *run_id, util_diag *d);
/* Computes the report of one run. */
int an_report_compute(sqlite3 *db, int64_t run_id, an_report *out, util_diag *d);
void an_report_fini(an_report *r);

/* The report as the `--json` object (caller frees with cJSON_Delete);
 * "classes" is there when the scenario defines them or by_class asks. */
cJSON *an_report_json(const an_report *r, bool by_class);
/* The report as a readable table; by_class adds one block per class. */
void an_report_print(const an_report *r, bool by_class, FILE *out);

#endif /* AN_H */
