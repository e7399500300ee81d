/*
 * plot.h: what plot.c (the figure's pieces, the runs' kinds),
 * plot_sweep.c (the sweeps' kinds) and plot_pipeline.c (the pipeline's
 * lanes) share.
 */
#ifndef AN_PLOT_H
#define AN_PLOT_H

#include "an_int.h"
#include "figure.h"

/* ---- building a figure ---- */

/* arr of n items with room for one more: arrays grow by doubling when their
 * length reaches a power of two, so the public structs need no capacity. */
void *an__grow(void *arr, size_t n, size_t size);

void an__note(an_plot *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Panels are added before any series, and addressed by index afterwards:
 * adding one may move the others. */
int an__panel(an_plot *p, const char *y_label, const char *y_unit, an_plot_scale scale);
/* The panel's series called name, added at the end when new. */
an_plot_series *an__series(an_plot_panel *pl, const char *name);
/* A point; one without a value (nothing measured) is left out, not drawn at 0. */
void an__push(an_plot_series *s, double x, double y);
/* The same with its band and its label (either may be NAN / NULL). */
void an__push_band(an_plot_series *s, double x, double y, double lo, double hi, const char *label);
void an__guide(an_plot_panel *pl, an_plot_guide_kind kind, double at, bool vertical,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The scenario's threshold on a metric (slo.ttft_s) as an SLO guide, once
 * per value; returns it, NAN when the scenario has none. */
double an__slo_guide(an_plot_panel *pl, const cJSON *scenario, const char *key, bool vertical);
/* The same at a given threshold (a what-if's). */
double an__slo_guide_at(an_plot_panel *pl, const char *key, double at, bool vertical);
/* "250 ms", "1.5 s": a duration as the figure's labels write it. */
void an__seconds(double s, char *buf, size_t n);
/* The metric's name in figures: "TTFT", "TPOT", "TPOT incl. TTFT", "E2E". */
extern const char *const an__metric_titles[];
extern const char *const an__metric_slo_keys[];

/* Whether a swept key is a capacity (replicas, parallelism, batch limits:
 * the SLO is met from some value up) rather than a load (arrival rate,
 * users: met up to some value). */
bool an__capacity_key(const char *key);

/* ---- lanes (figure.h) ---- */

/* A new lane, below the others; returns its index.  The figure's lanes are
 * made with its first. */
int an__new_lane(an_plot *p, const char *name);
/* A new item at the end of the lane, joined to nothing; the caller sets
 * the rest before the lane's next item, which may move it (strings it
 * gives are the figure's to free). */
an__item *an__lane_item(an_plot *p, int lane, an__shape shape, double lo, double hi);
void an__lane_key(an_plot *p, an__shape shape, int colour, char glyph, const char *text);

/* ---- runs ---- */

typedef struct an__run {
    int64_t id;
    bool overloaded;             /* runs.status: its queue grew without bound */
    bool measured;               /* runs.status: a benchmark tool's run (servesim import) */
    cJSON *scenario, *overrides; /* overrides: NULL when none were stored */
} an__run;

int an__load_run(sqlite3 *db, const char *file, int64_t id, an__run *r, util_diag *d);
void an__run_fini(an__run *r);
/* "run 3", "runs 1, 2", "runs 1-12, 15" (caller frees). */
char *an__runs_text(const int64_t *ids, int n);
/* The title of what the runs simulated, less the parts that differ
 * between them (caller frees). */
char *an__runs_title(const an__run *runs, int n);
/* "rate=8, replicas=2": the scenario keys whose values differ between the
 * runs, as run i has them; NULL when none differ (caller frees). */
char *an__difference(const an__run *runs, int n, int i);

int an__gather_sweep(sqlite3 *db, const an_plot_request *req, an_plot *p, util_diag *d);
/* plot_pipeline.c: run r's lanes; a run without iterations, or with none
 * recorded with the pipeline's columns (schema 6), is an input error. */
int an__gather_pipeline(sqlite3 *db, const an_plot_request *req, const an__run *r, an_plot *p,
                        util_diag *d);

#endif /* AN_PLOT_H */
