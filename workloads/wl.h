/*
 * wl: what clients send -- arrival processes and the lengths of prompts and
 * replies.  It knows nothing of GPUs or queues.
 *
 * A wl_spec is the validated `workload` section of a scenario.  A wl_source
 * draws from it: inter-arrival gaps for open-loop processes, think times for
 * closed-loop users, and (prompt, output) token counts.  Each kind of draw has
 * its own random stream derived from the master seed, so changing the length
 * distribution leaves arrival times unchanged and vice versa.
 */
#ifndef WL_H
#define WL_H

#include <stdbool.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "util.h"

/* ---- distributions (token counts and durations) ---- */

typedef enum wl_dist_kind {
    WL_DIST_FIXED,       /* a = value */
    WL_DIST_UNIFORM,     /* on [lo, hi]; whole numbers: each integer in it equally likely */
    WL_DIST_EXPONENTIAL, /* a = mean */
    WL_DIST_NORMAL,      /* a = mean, b = standard deviation */
    WL_DIST_LOGNORMAL,   /* a = median, b = sigma of the underlying normal */
} wl_dist_kind;

typedef struct wl_dist {
    wl_dist_kind kind;
    double a, b;
    double lo, hi; /* clamps (uniform: its range); whole numbers are never below 1 */
    bool whole;    /* token counts: rounded to the nearest integer */
} wl_dist;

/* A distribution object: {"dist": KIND, ...parameters, "min", "max"}. */
extern const util_union wl_dist_schema;

/* Builds from a validated object; whole selects token counts (>= 1, rounded)
 * rather than durations in seconds (>= 0). */
int wl_dist_from_json(const cJSON *obj, const char *path, bool whole, wl_dist *out,
                      util_diag *d);
double wl_dist_sample(const wl_dist *dist, gsl_rng *r);

/* ---- arrivals ---- */

typedef enum wl_process {
    WL_POISSON,  /* exponential gaps at rate_per_s */
    WL_CONSTANT, /* gaps of exactly 1 / rate_per_s */
    WL_GAMMA,    /* gamma gaps with mean 1 / rate_per_s and coefficient of variation cv */
    WL_CLOSED,   /* `users` clients, each sending its next request think_s after its last finished */
    WL_TRACE,    /* arrival times and lengths replayed from a file */
} wl_process;

typedef struct wl_arrival {
    wl_process process;
    double rate_per_s;
    double cv;
    int users;
    wl_dist think_s;
    char *trace_path; /* WL_TRACE: the file, relative paths resolved; owned */
} wl_arrival;

typedef struct wl_spec {
    wl_arrival arrival;
    wl_dist prompt;
    wl_dist output;
} wl_spec;

/* The `workload` section.  Files it names are relative to base_dir (NULL:
 * the current directory); a trace is read through once here, so that a
 * malformed line is reported (FILE:LINE) before anything runs. */
extern const util_field wl_workload_fields[];
int wl_spec_from_json(const cJSON *workload, const char *path, const char *base_dir,
                      wl_spec *out, util_diag *d);
void wl_spec_fini(wl_spec *spec);

/* ---- traces ---- */

/* One request of an open-loop arrival stream. */
typedef struct wl_record {
    double arrival_s;
    int32_t prompt, output;
} wl_record;

/* A trace file, streamed one line at a time. */
typedef struct wl_trace wl_trace;
int wl_trace_open(const char *path, wl_trace **out, util_diag *d);
/* 1 with the next record, 0 at the end, UTIL_EINPUT for a malformed line. */
int wl_trace_next(wl_trace *t, wl_record *rec, util_diag *d);
void wl_trace_close(wl_trace *t);
/* Reads a whole trace through, checking every line; counts its requests. */
int wl_trace_check(const char *path, int64_t *rows, util_diag *d);

/* ---- the source of requests ---- */

typedef struct wl_source wl_source;

wl_source *wl_source_create(const wl_spec *spec, uint64_t seed);
void wl_source_destroy(wl_source *s);
/* The next open-loop arrival (the first is at time 0 unless a trace says
 * otherwise): 1 with a record, 0 when a trace has ended, UTIL_EINPUT or
 * UTIL_EFAIL when the trace cannot be read (message in d). */
int wl_source_next(wl_source *s, wl_record *rec, util_diag *d);
/* Seconds from one arrival to the next (the generated processes). */
double wl_source_next_gap(wl_source *s);
/* Seconds a closed-loop user waits before its next request. */
double wl_source_think(wl_source *s);
/* Token counts of the next request, both >= 1. */
void wl_source_lengths(wl_source *s, int32_t *prompt, int32_t *output);

#endif /* WL_H */
