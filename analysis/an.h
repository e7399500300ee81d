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
 *  - SLO attainment: the share of requests ended after warm-up (measured plus
 *    rejected) meeting every SLO that is set; a reply of one token has no TPOT
 *    and passes a TPOT SLO, as in vLLM.
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

typedef struct an_report {
    /* run */
    int64_t run_id;
    char *name, *status;
    int64_t seed, events;
    double sim_time_s, wall_time_s, warmup_s;
    /* requests */
    int64_t arrived, completed, measured, rejected, unfinished;
    int64_t preempted, preemptions; /* requests preempted at least once; times in all */
    /* latency, seconds */
    an_stats ttft, tpot, tpot_incl_ttft, e2e, queue;
    /* throughput over the window */
    double window_s;
    double requests_per_s, input_tokens_per_s, output_tokens_per_s;
    an_stats per_user_tokens_per_s; /* 1 / TPOT per request */
    /* SLO: thresholds NAN when unset */
    double slo_ttft_s, slo_tpot_s, slo_e2e_s;
    bool slo_set;
    double attainment, goodput_requests_per_s;
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

/* The report as the `--json` object (caller frees with cJSON_Delete). */
cJSON *an_report_json(const an_report *r);
/* The report as a readable table. */
void an_report_print(const an_report *r, FILE *out);

#endif /* AN_H */
