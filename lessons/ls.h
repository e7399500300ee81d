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
    const cJSON *knobs;  /* the file's "lesson" object, after --set */
    pl_base base;        /* the scenario (the file less "lesson"), for points */
    bool quick;          /* a reduced size, for the test suite */
    int jobs;
    pl_pool *pool;
} ls_context;

/* What a lesson shows: a table (an array of row objects, columns in order),
 * its findings (sentences), and optionally a figure for --plot. */
typedef struct ls_result {
    cJSON *table;
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
void ls_result_fini(ls_result *r);
void ls_print(const ls_lesson *l, const ls_result *r, FILE *out);
cJSON *ls_json(const ls_lesson *l, const ls_result *r);

/* ---- for the lessons ---- */

/* One tool's per-token latency (an_definition), the statistics the lessons
 * show, seconds. */
typedef struct ls_definition {
    char name[32];   /* "tpot" */
    char tools[128]; /* "vLLM TPOT, GenAI-Perf ITL, ..." */
    double mean, p50, p90, p95, p99;
} ls_definition;

/* The figures of a point's report that the lessons read: filled from its
 * an_report in one place (lesson.c) and sent from the worker as JSON, each
 * as `report --json` has it -- NAN where that has null (a figure that is not
 * finite); the tasks' NAN when the run had no agent tasks.  Latencies in
 * seconds, over the measured requests. */
typedef struct ls_figures {
    double measured;                              /* requests.measured */
    double ttft_mean, ttft_p50, ttft_p99, tpot_mean;
    double e2e_mean, e2e_p50, e2e_p95, e2e_p99;
    double requests_per_s, output_tokens_per_s;   /* throughput */
    double per_user_tokens_per_s_mean;            /* throughput.output_tokens_per_s_per_user */
    double goodput_requests_per_s;                /* slo */
    double busy_fraction, mfu;                    /* utilisation */
    double gpu_count, usd_per_gpu_hour, usd_per_million_output_tokens; /* cost */
    double mean_gpu_w, gpu_j_per_output_token, wall_j_per_output_token; /* energy */
    double tasks_completed, tasks_failed, tasks_any_slow_fraction, tasks_e2e_p99;
    int n_definitions;                            /* AN_N_DEFINITIONS with iterations, else 0 */
    ls_definition definitions[AN_N_DEFINITIONS];
} ls_figures;

/* Runs points (the base with each overrides object, seed as in the
 * scenario) in parallel; out[i] is point i's figures.  iterations: also
 * the definitions. */
int ls_points(ls_context *c, cJSON *const *overrides, int n, bool iterations, ls_figures *out,
              util_diag *d);
/* A knob of the lesson object: a number, or an array of numbers (count in
 * *n, caller frees). */
double ls_knob(const ls_context *c, const char *path, double dflt);
double *ls_knobs(const ls_context *c, const char *path, int *n);
/* Overrides {path: number} (caller frees). */
cJSON *ls_with(const char *path, double v);
/* A new row of the table, and a finding. */
cJSON *ls_row(ls_result *r);
void ls_say(ls_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A number the findings rest on, kept for --json and for tests. */
void ls_keep(ls_result *r, const char *name, double v);

/* The figure: panels with series, x label; strings are copied. */
void ls_plot_init(ls_result *r, const char *title, const char *x_label, bool log_x);
int ls_plot_panel(ls_result *r, const char *y_label);
void ls_plot_series(ls_result *r, int panel, const char *name, const double *x, const double *y,
                    int n);
void ls_plot_guide(ls_result *r, int panel, const char *label, double at, bool vertical);

#endif /* LS_H */
