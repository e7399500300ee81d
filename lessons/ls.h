/*
 * ls: lessons -- the effects behind "inference performance is not one
 * number", each a runnable experiment.  A lesson is a shipped file,
 * examples/lessons/NAME.json: a scenario with a "lesson" object of the
 * experiment's own knobs beside it.  The lesson runs the sweep that makes
 * its point with the real engine, and reads its numbers back as a table
 * and a few sentences computed from them: change a knob with --set and the
 * sentences follow.
 */
#ifndef LS_H
#define LS_H

#include <stdbool.h>
#include <stdio.h>

#include "an.h"
#include "pl.h"
#include "util.h"

/* What a lesson runs with. */
typedef struct ls_context {
    const char *name;    /* the lesson's */
    const cJSON *knobs;  /* the file's "lesson" object, after --set */
    pl_base base;        /* the scenario (the file less "lesson"), for points */
    const sim_scenario *scenario; /* the same, loaded: its pools, replicas, batch sizes */
    bool quick;          /* a reduced size, for the test suite */
    int jobs;
    pl_pool *pool;
} ls_context;

/* How a column of the table prints: its header, its unit (a second header
 * line) and one number of decimals for every row. */
typedef struct ls_column {
    char *key; /* the row objects' */
    char *header;
    char *unit; /* "" for a count or a name */
    int decimals;
} ls_column;

/* What a lesson shows: a table (an array of row objects, columns in order),
 * its findings (sentences), and optionally a figure for --plot. */
typedef struct ls_result {
    cJSON *table;
    ls_column *columns; /* NULL: each key as its own header, numbers to 4 digits */
    int n_columns;
    char **findings;
    int n_findings;
    cJSON *numbers; /* the figures the findings are made of, for --json and tests */
    an_plot plot;
    bool has_plot;
} ls_result;

typedef struct ls_lesson {
    const char *name;
    const char *summary; /* one line for `servesim lesson` */
    const char *file;    /* the embedded examples/lessons/NAME.json */
    int (*run)(ls_context *c, ls_result *out, util_diag *d);
} ls_lesson;

extern const ls_lesson ls_lessons[]; /* ends with a NULL name */
const ls_lesson *ls_find(const char *name);

/* Runs a lesson: its file with --set applied, jobs worker processes. */
int ls_run(const ls_lesson *l, const mdl_catalog *cat, char **sets, int n_sets, bool quick,
           int jobs, ls_result *out, util_diag *d);
/* The same with --unset too: every unset removes its key (or list item)
 * from the file before any set applies, as `servesim run` does. */
int ls_run_edits(const ls_lesson *l, const mdl_catalog *cat, char **unsets, int n_unsets,
                 char **sets, int n_sets, bool quick, int jobs, ls_result *out, util_diag *d);
void ls_result_fini(ls_result *r);
/* The table and the findings, each finding wrapped to the terminal: $COLUMNS,
 * else the width of out when it is one, else 100 columns. */
void ls_print(const ls_lesson *l, const ls_result *r, FILE *out);
void ls_print_width(const ls_lesson *l, const ls_result *r, int width, FILE *out);
int ls_terminal_width(FILE *out);
cJSON *ls_json(const ls_lesson *l, const ls_result *r);

/* ---- for the lessons ---- */

/* One tool's per-token latency (an_definition), the statistics the lessons
 * show, seconds. */
typedef struct ls_definition {
    char name[32];   /* "tpot" */
    char tools[128]; /* "vLLM TPOT, GenAI-Perf ITL, ..." */
    double mean, p50, p90, p95, p99;
} ls_definition;

/* One class's requests (report --json's classes.NAME), latencies in
 * seconds over its measured requests: arrived, rejected and, of those, the
 * ones a gateway shed (requests.reason 'shed'); NAN where the report has
 * null. */
#define LS_CLASSES 8
typedef struct ls_class_figures {
    char name[64];
    double arrived, measured, rejected, shed;
    double ttft_p50, ttft_p99, queue_mean, queue_p99, e2e_mean, e2e_p99;
} ls_class_figures;

/* The figures of a point's report that the lessons read: filled from its
 * an_report in one place (lesson.c) and sent from the worker as JSON, each
 * as `report --json` has it -- NAN where that has null (a figure that is not
 * finite); the tasks' NAN when the run had no agent tasks.  Latencies in
 * seconds, over the measured requests. */
typedef struct ls_figures {
    double measured;                              /* requests.measured */
    double arrived;                               /* requests.arrived */
    double window_s, arrival_span_s;              /* throughput.window_s; the measured
                                                   * requests' arrivals' span */
    double ttft_mean, ttft_p50, ttft_p99, tpot_mean, tpot_p99;
    double e2e_mean, e2e_p50, e2e_p95, e2e_p99;
    double requests_per_s, output_tokens_per_s;   /* throughput */
    double per_user_tokens_per_s_mean;            /* throughput.output_tokens_per_s_per_user */
    double goodput_requests_per_s;                /* slo */
    double busy_fraction, mean_batch, mfu;        /* utilisation */
    double gpu_count, usd_per_gpu_hour, usd_per_million_output_tokens; /* cost */
    double mean_gpu_w, gpu_j_per_output_token, wall_j_per_output_token; /* energy */
    double tasks_completed, tasks_failed, tasks_any_slow_fraction, tasks_e2e_p99;
    /* utilisation.speculative, NAN for a run that did not speculate: K, the
     * steps that speculated, the verifications (a sequence in a step), the
     * acceptance rate, the mean accepted length (tokens a verification
     * emits), the tokens a step emits over all its sequences, the share of
     * busy time drafting */
    double spec_k, spec_steps, spec_verifications, spec_acceptance_rate;
    double spec_mean_accepted_length, spec_tokens_per_step, spec_drafting_share;
    /* memory: the run's simulated time; the measured requests' prompt
     * tokens and the prefix cache's hit rate over them (prefix_cache); one
     * token's KV and the KV capacity, tokens (utilisation; NAN where
     * replicas differ); the CPU tier (utilisation.kv_offload.cpu, 0 without
     * one): its bytes, the tokens asked of it and served, the bytes loaded
     * back over the run */
    double sim_time_s, input_tokens, prefix_hit_rate, kv_bytes_per_token, kv_capacity_tokens;
    double cpu_tier_bytes, cpu_lookup_tokens, cpu_hit_tokens, cpu_loaded_bytes;
    /* a day: the share of requests sent after warm-up that met the SLO
     * (slo.attainment; NAN without one); the cost over the window, GPU-hours
     * and $, and the replicas held, at most at once and on average */
    double slo_attainment, gpu_hours, usd, peak_replicas, mean_replicas;
    int n_definitions;                            /* AN_N_DEFINITIONS with iterations, else 0 */
    ls_definition definitions[AN_N_DEFINITIONS];
    int n_classes; /* report --json's classes, the first LS_CLASSES */
    ls_class_figures classes[LS_CLASSES];
} ls_figures;
/* The class of that name in f, or NULL. */
const ls_class_figures *ls_class_of(const ls_figures *f, const char *name);

/* Runs points (the base with each overrides object, seed as in the
 * scenario) in parallel; out[i] is point i's figures.  iterations: also
 * the definitions. */
int ls_points(ls_context *c, cJSON *const *overrides, int n, bool iterations, ls_figures *out,
              util_diag *d);
/* The same, point i run without the scenario's key at unset[i] (NULL: as
 * it is; unset NULL: every point as it is) -- the scenario less one of its
 * parts, as --unset removes it: a comparison of a run with it and without. */
int ls_points_without(ls_context *c, cJSON *const *overrides, const char *const *unset, int n,
                      bool iterations, ls_figures *out, util_diag *d);
/* A knob of the lesson object: a number, or an array of numbers (count in
 * *n, caller frees). */
double ls_knob(const ls_context *c, const char *path, double dflt);
double *ls_knobs(const ls_context *c, const char *path, int *n);
/* Overrides {path: number} (caller frees). */
cJSON *ls_with(const char *path, double v);
/* A new row of the table, and a finding. */
cJSON *ls_row(ls_result *r);
/* A new row of the columns formatted so far, v[k] column k's number:
 * each rounded in place as the table prints it, so that the sentences,
 * quoting the caller's numbers, quote the table. */
void ls_row_rounded(ls_result *r, double *const *v);
/* How column key prints (call once per column, in the rows' order). */
void ls_column_format(ls_result *r, const char *key, const char *header, const char *unit,
                      int decimals);
void ls_say(ls_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A number the findings rest on, kept for --json and for tests. */
void ls_keep(ls_result *r, const char *name, double v);

/* The figure's title: what the lesson simulated, "NAME: MODEL on N x GPU"
 * (caller frees). */
char *ls_title(const ls_context *c);
/* The total batch slots of the pools that decode: max_batch x replicas. */
double ls_batch_slots(const ls_context *c);

/* The figure: panels with series and guides; strings and arrays are
 * copied.  Labels are words and units apart ("TTFT", "s"): the drawing
 * shows seconds below one as milliseconds.  The title says what the lesson
 * simulated; the subtitle, what the figure shows. */
void ls_plot_init(ls_result *r, const char *title, const char *subtitle, const char *x_label,
                  const char *x_unit, an_plot_scale x_scale);
int ls_plot_panel(ls_result *r, const char *y_label, const char *y_unit, an_plot_scale y_scale);
/* The new series, for its style, colour and dash.  Points whose x or y is
 * not finite are left out: a series holds the points it plots. */
an_plot_series *ls_plot_series(ls_result *r, int panel, const char *name, const double *x,
                               const double *y, int n);
/* The same, each point with a band from lo[i] to hi[i] (an interval, the
 * seeds' range), shaded behind the line. */
an_plot_series *ls_plot_banded(ls_result *r, int panel, const char *name, const double *x,
                               const double *y, const double *lo, const double *hi, int n);
void ls_plot_guide(ls_result *r, int panel, an_plot_guide_kind kind, const char *label, double at,
                   bool vertical);
void ls_plot_span(ls_result *r, const char *label, double lo, double hi);
/* Draw these x ticks, labelled, instead of nice ones. */
void ls_plot_x_ticks(ls_result *r, const double *at, const char *const *labels, int n);

/* A lesson's points as an array of structs, `size` bytes each, read by
 * field: the double at offset x_at is a point's x; idx (NULL: every
 * point in order) picks n of them. */
typedef struct ls_points_of {
    const void *points;
    size_t size, x_at;
    const int *idx;
    int n;
} ls_points_of;
/* A series drawn from the double at offset `at` of each point; a panel
 * below 0 draws nothing (a panel the run has not). */
typedef struct ls_field_series {
    int panel;
    const char *name;
    size_t at;
    int colour, dash;
} ls_field_series;
void ls_plot_fields(ls_result *r, const ls_points_of *pts, const ls_field_series *s, int n_series);
/* An x tick at each point, labelled with its x ("%g"). */
void ls_plot_x_ticks_of(ls_result *r, const ls_points_of *pts);

#endif /* LS_H */
