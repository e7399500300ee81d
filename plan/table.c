/*
 * table.c: a sweep's closing table and its JSON, one row per point.
 */
#include "pl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void add_num(cJSON *o, const char *key, double v)
{
    if (isnan(v)) cJSON_AddNullToObject(o, key);
    else cJSON_AddNumberToObject(o, key, v);
}

cJSON *pl_sweep_json(const pl_sweep_opts *o, const pl_sweep_result *r)
{
    (void)o;
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < r->n_rows; i++) {
        const pl_sweep_row *row = &r->rows[i];
        if (!row->s.run_id) continue; /* not run (an interrupted sweep) */
        cJSON *p = pl_summary_json(&row->s);
        cJSON_AddItemToObject(p, "values", cJSON_Duplicate(row->point.overrides, 1));
        cJSON_AddNumberToObject(p, "seed", (double)row->point.seed);
        cJSON_AddItemToArray(arr, p);
    }
    return arr;
}

/* ---- text tables ---- */

/* A table of text cells whose columns are as wide as their widest cell, so
 * that the columns stay aligned however wide a value grows (a rate of
 * 100000, a long override).  Numbers are right-aligned, text left; the last
 * column, free text ("why not met"), is not padded. */
typedef struct table {
    int cols, rows, cap;
    char **cell; /* rows x cols, row 0 the header */
    bool *left;  /* per column */
} table;

static void table_init(table *t, int cols)
{
    *t = (table){.cols = cols, .cap = 8};
    t->cell = util_xcalloc((size_t)(t->cap * cols), sizeof *t->cell);
    t->left = util_xcalloc((size_t)cols, sizeof *t->left);
}

/* Starts a row; cells are then set by column (an unset one prints empty). */
static void table_row(table *t)
{
    if (t->rows == t->cap) {
        t->cell = util_xrealloc(t->cell, (size_t)(2 * t->cap * t->cols) * sizeof *t->cell);
        memset(t->cell + t->cap * t->cols, 0, (size_t)(t->cap * t->cols) * sizeof *t->cell);
        t->cap *= 2;
    }
    t->rows++;
}

/* Sets column col of the current row to text (taken). */
static void table_take(table *t, int col, char *text)
{
    char **c = &t->cell[(t->rows - 1) * t->cols + col];
    free(*c);
    *c = text;
}

static void table_set(table *t, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void table_set(table *t, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = util_xvasprintf(fmt, ap);
    va_end(ap);
    table_take(t, col, text);
}

/* A number in fmt, or "-" when there is none (nothing measured). */
static void table_num(table *t, int col, const char *fmt, double v)
{
    if (isnan(v)) table_set(t, col, "-");
    else table_set(t, col, fmt, v);
}

static void table_print(const table *t, const char *lead, FILE *out)
{
    int *w = util_xcalloc((size_t)t->cols, sizeof *w);
    for (int r = 0; r < t->rows; r++)
        for (int c = 0; c < t->cols; c++) {
            const char *x = t->cell[r * t->cols + c];
            int n = x ? (int)strlen(x) : 0;
            if (n > w[c]) w[c] = n;
        }
    for (int r = 0; r < t->rows; r++) {
        fputs(lead, out);
        for (int c = 0; c < t->cols; c++) {
            const char *x = t->cell[r * t->cols + c];
            bool last = c == t->cols - 1;
            if (last && t->left[c] && !(x && *x)) break; /* no trailing blanks */
            if (c) fputc(' ', out);
            if (last && t->left[c]) fputs(x, out);
            else fprintf(out, t->left[c] ? "%-*s" : "%*s", w[c], x ? x : "");
        }
        fputc('\n', out);
    }
    free(w);
}

static void table_fini(table *t)
{
    for (int i = 0; i < t->rows * t->cols; i++) free(t->cell[i]);
    free(t->cell);
    free(t->left);
}

/* A value as short text for its cell: a string itself, anything else its
 * JSON, at most 40 bytes (a longer one cut with "..."). */
static char *value_text(const cJSON *v)
{
    char *text = cJSON_IsString(v) ? util_xstrdup(v->valuestring)
               : v                 ? cJSON_PrintUnformatted(v)
                                   : util_xstrdup("-");
    if (strlen(text) > 40) strcpy(text + 37, "...");
    return text;
}

/* An axis's column heading: its key's last part, or the whole path when
 * another axis ends in the same part. */
static const char *axis_heading(const pl_sweep_opts *o, int a)
{
    const char *dot = strrchr(o->axes[a].path, '.'), *last = dot ? dot + 1 : o->axes[a].path;
    for (int b = 0; b < o->n_axes; b++) {
        const char *d2 = strrchr(o->axes[b].path, '.');
        if (b != a && !strcmp(d2 ? d2 + 1 : o->axes[b].path, last)) return o->axes[a].path;
    }
    return last;
}

static const char *const sweep_heads[] = {"run", "ttft p50", "ttft p99", "tpot p50", "tpot p99",
                                          "req/s", "out tok/s", "goodput", "attain", "batch",
                                          "KV", "$/Mtok", "J/tok", "status"};
enum { N_SWEEP_HEADS = sizeof sweep_heads / sizeof sweep_heads[0] };

static void sweep_cells(table *t, int at, const pl_summary *s)
{
    table_set(t, at++, "%lld", (long long)s->run_id);
    table_num(t, at++, "%.4f", s->ttft_p50);
    table_num(t, at++, "%.4f", s->ttft_p99);
    table_num(t, at++, "%.4f", s->tpot_p50);
    table_num(t, at++, "%.4f", s->tpot_p99);
    table_num(t, at++, "%.3f", s->requests_per_s);
    table_num(t, at++, "%.1f", s->output_tokens_per_s);
    table_num(t, at++, "%.3f", s->goodput_requests_per_s);
    table_num(t, at++, "%.1f%%", 100 * s->attainment);
    table_num(t, at++, "%.1f%%", 100 * s->batch_fill);
    table_num(t, at++, "%.1f%%", 100 * s->kv_mean_fraction);
    table_num(t, at++, "%.3f", s->usd_per_million_output_tokens);
    table_num(t, at++, "%.3f", s->j_per_output_token);
    table_set(t, at, "%s", s->overloaded ? "overloaded" : "ok");
}

void pl_sweep_print(const pl_sweep_opts *o, const pl_sweep_result *r, FILE *out)
{
    fprintf(out, "sweep \"%s\" into %s: %d points run, %d found done%s\n\n", o->base.sweep,
            o->output, r->ran, r->resumed, r->interrupted ? " (interrupted: --resume finishes it)"
                                                          : "");
    int seed_col = o->seeds > 1, first = o->n_axes + seed_col;
    table t;
    table_init(&t, first + N_SWEEP_HEADS);
    table_row(&t);
    for (int a = 0; a < o->n_axes; a++) table_set(&t, a, "%s", axis_heading(o, a));
    if (seed_col) table_set(&t, o->n_axes, "seed");
    for (int c = 0; c < N_SWEEP_HEADS; c++) table_set(&t, first + c, "%s", sweep_heads[c]);
    t.left[first + N_SWEEP_HEADS - 1] = true; /* status */
    for (int i = 0; i < r->n_rows; i++) {
        const pl_sweep_row *row = &r->rows[i];
        if (!row->s.run_id) continue;
        table_row(&t);
        for (int a = 0; a < o->n_axes; a++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(row->point.overrides, o->axes[a].path);
            if (cJSON_IsString(v)) t.left[a] = true; /* a column of names reads left */
            table_take(&t, a, value_text(v));
        }
        if (seed_col) table_set(&t, o->n_axes, "%lld", (long long)row->point.seed);
        sweep_cells(&t, first, &row->s);
    }
    table_print(&t, "  ", out);
    table_fini(&t);
    fprintf(out, "\n(latency in s; goodput in req/s meeting the SLO; batch and KV: how full the "
                 "batch slots and\n the KV cache ran, on average; $/Mtok per million output "
                 "tokens; J/tok GPU energy per output token)\n");
}

/* ---- plans ---- */

static const char *const goal_names[] = {"max-rate", "min-replicas", "cheapest"};

/* A flat overrides object's number at key (a dotted path, not a nesting). */
static double number_of(const cJSON *overrides, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(overrides, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static cJSON *trial_json(const pl_plan_opts *o, const pl_trial *t)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "overrides", cJSON_Duplicate(t->overrides, 1));
    cJSON_AddBoolToObject(j, "met", t->met);
    cJSON_AddBoolToObject(j, "overloaded", t->overloaded);
    cJSON_AddNumberToObject(j, "seeds", t->seeds);
    cJSON *tv = cJSON_AddArrayToObject(j, "targets");
    for (int i = 0; i < o->n_targets; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "target", o->targets[i].text);
        add_num(x, o->targets[i].per_request ? "attainment" : "value_s", t->value[i]);
        add_num(x, "half_width", t->half[i]);
        cJSON_AddBoolToObject(x, "met", t->target_met[i]);
        if (isinf(t->value[i])) cJSON_AddStringToObject(x, "value", "infinite");
        cJSON_AddItemToArray(tv, x);
    }
    add_num(j, "not_completed_fraction", t->not_completed);
    add_num(j, "output_tokens_per_s", t->output_tokens_per_s);
    add_num(j, "busy_fraction", t->busy_fraction);
    add_num(j, "batch_fill", t->batch_fill);
    add_num(j, "kv_mean_fraction", t->kv_mean_fraction);
    add_num(j, "usd_per_million_output_tokens", t->usd_per_million_output_tokens);
    add_num(j, "usd", t->usd);
    add_num(j, "gpu_hours", t->gpu_hours);
    return j;
}

/* Over a day: the static fleet's cost less the autoscaler's (NAN: either
 * has no answer). */
static double day_saving(const pl_plan_result *r)
{
    const pl_plan_result *f = r->fixed;
    if (!r->found || !f->found) return NAN;
    return f->trials[f->best].usd - r->trials[r->best].usd;
}

/* ---- a fleet of several models: each model's part of the answer ---- */

/* The trial that shows model m's part: the answer's, or, with none, the
 * model's own search's (-1: none). */
static int part_trial(const pl_plan_result *r, int m)
{
    return r->found && r->best >= 0 ? r->best : r->models[m].trial;
}

/* The texts of the targets in mask, ", "-separated ("-": none); caller frees. */
static char *targets_text(const pl_plan_opts *o, unsigned mask)
{
    char *text = NULL;
    for (int i = 0; i < o->n_targets; i++) {
        if (!(mask >> i & 1)) continue;
        char *more = util_xasprintf("%s%s%s", text ? text : "", text ? ", " : "", o->targets[i].text);
        free(text);
        text = more;
    }
    return text ? text : util_xstrdup("-");
}

/* The targets of model m that bind: those it fails with one replica fewer
 * a pool (none where it has one replica, or no such trial was run). */
static unsigned binding(const pl_plan_result *r, int m)
{
    const pl_model_answer *a = &r->models[m];
    return a->below >= 0 ? r->trials[a->below].models[m].fails & a->mine : 0;
}

static cJSON *models_json(const pl_plan_opts *o, const pl_plan_result *r)
{
    cJSON *ms = cJSON_CreateArray();
    for (int m = 0; m < r->n_models; m++) {
        const pl_model_answer *a = &r->models[m];
        int k = part_trial(r, m);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "model", a->id);
        cJSON_AddBoolToObject(x, "met", k >= 0 && r->trials[k].models[m].met);
        if (k >= 0) {
            const struct pl_trial_model *tm = &r->trials[k].models[m];
            cJSON_AddNumberToObject(x, "replicas", tm->replicas);
            cJSON_AddNumberToObject(x, "gpus", tm->gpus);
            add_num(x, "usd_per_hour", tm->usd_per_hour);
            add_num(x, "attainment", tm->attainment);
        }
        cJSON *ts = cJSON_AddArrayToObject(x, "targets"), *bs = cJSON_AddArrayToObject(x, "binding");
        for (int i = 0; i < o->n_targets; i++) {
            if (a->mine >> i & 1) cJSON_AddItemToArray(ts, cJSON_CreateString(o->targets[i].text));
            if (binding(r, m) >> i & 1)
                cJSON_AddItemToArray(bs, cJSON_CreateString(o->targets[i].text));
        }
        cJSON_AddItemToArray(ms, x);
    }
    return ms;
}

static cJSON *fleet_json(const pl_trial *t)
{
    cJSON *f = cJSON_CreateObject();
    int replicas = 0;
    for (int m = 0; m < t->n_models; m++) replicas += t->models[m].replicas;
    cJSON_AddNumberToObject(f, "replicas", replicas);
    cJSON_AddNumberToObject(f, "gpus", t->gpus);
    add_num(f, "usd_per_hour", t->usd_per_hour);
    add_num(f, "attainment", t->attainment);
    return f;
}

/* Each model's replicas, GPUs, cost an hour, attainment and binding
 * targets, then the fleet's totals. */
static void print_models(const pl_plan_opts *o, const pl_plan_result *r, FILE *out)
{
    static const char *const heads[] = {"model", "replicas", "GPUs", "$/hour", "attainment",
                                        "binds"};
    table t;
    table_init(&t, 6);
    t.left[0] = t.left[5] = true;
    table_row(&t);
    for (int c = 0; c < 6; c++) table_set(&t, c, "%s", heads[c]);
    for (int m = 0; m < r->n_models; m++) {
        int k = part_trial(r, m);
        table_row(&t);
        table_set(&t, 0, "%s", r->models[m].id);
        if (k < 0) {
            table_set(&t, 5, "not met up to %d replicas a pool", o->max_replicas);
            continue;
        }
        const struct pl_trial_model *tm = &r->trials[k].models[m];
        table_set(&t, 1, "%d", tm->replicas);
        table_set(&t, 2, "%d", tm->gpus);
        table_num(&t, 3, "%.2f", tm->usd_per_hour);
        table_num(&t, 4, "%.1f%%", 100 * tm->attainment);
        table_take(&t, 5, targets_text(o, binding(r, m)));
    }
    if (r->found && r->best >= 0) {
        const pl_trial *b = &r->trials[r->best];
        int replicas = 0;
        for (int m = 0; m < b->n_models; m++) replicas += b->models[m].replicas;
        table_row(&t);
        table_set(&t, 0, "fleet");
        table_set(&t, 1, "%d", replicas);
        table_set(&t, 2, "%d", b->gpus);
        table_num(&t, 3, "%.2f", b->usd_per_hour);
        table_num(&t, 4, "%.1f%%", 100 * b->attainment);
    }
    fprintf(out, "\nper model (each judged by its own classes' targets and those of no class; "
                 "binds: failed with one replica fewer a pool):\n");
    table_print(&t, "  ", out);
    table_fini(&t);
}

cJSON *pl_plan_json(const pl_plan_opts *o, const pl_plan_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "find", goal_names[o->goal]);
    cJSON_AddBoolToObject(j, "found", r->found);
    cJSON_AddNumberToObject(j, "confidence", o->confidence);
    cJSON_AddStringToObject(j, "criterion", "mean");
    if (o->goal == PL_MAX_RATE && r->found) {
        cJSON_AddNumberToObject(j, "max_rate_per_s", r->max_rate);
        cJSON *iv = cJSON_AddArrayToObject(j, "interval");
        cJSON_AddItemToArray(iv, cJSON_CreateNumber(r->rate_lo));
        cJSON_AddItemToArray(iv, cJSON_CreateNumber(r->rate_hi));
    }
    if (o->goal == PL_MIN_REPLICAS && r->found) cJSON_AddNumberToObject(j, "replicas", r->replicas);
    if (r->found && r->best >= 0) cJSON_AddItemToObject(j, "chosen", trial_json(o, &r->trials[r->best]));
    if (r->n_models > 1) {
        cJSON_AddItemToObject(j, "models", models_json(o, r));
        if (r->found && r->best >= 0) cJSON_AddItemToObject(j, "fleet", fleet_json(&r->trials[r->best]));
    }
    if (r->day) {
        cJSON_AddItemToObject(j, "static", pl_plan_json(o, r->fixed));
        add_num(j, "saving_usd", day_saving(r));
    }
    cJSON *tr = cJSON_AddArrayToObject(j, "trials");
    for (int i = 0; i < r->n_trials; i++) cJSON_AddItemToArray(tr, trial_json(o, &r->trials[i]));
    if (o->goal == PL_CHEAPEST && !r->day) {
        cJSON *cs = cJSON_AddArrayToObject(j, "candidates");
        for (int i = 0; i < r->n_candidates; i++) {
            const pl_candidate *c = &r->candidates[i];
            cJSON *x = cJSON_CreateObject();
            cJSON_AddItemToObject(x, "config", cJSON_Duplicate(c->config, 1));
            cJSON_AddBoolToObject(x, "met", c->trial >= 0);
            if (c->trial >= 0) {
                const pl_trial *t = &r->trials[c->trial];
                cJSON_AddNumberToObject(x, "replicas", number_of(t->overrides, "cluster.replicas"));
                add_num(x, "usd_per_million_output_tokens", t->usd_per_million_output_tokens);
            }
            cJSON_AddItemToArray(cs, x);
        }
    }
    return j;
}

/* A key as compact shows it: its last part, or from its pool on, since
 * pools' keys share their last parts ("pools[1].replicas"). */
static const char *short_key(const char *path)
{
    const char *pool = strstr(path, "pools[");
    if (pool) return pool;
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

/* "rate_per_s=20 gpu=h100-sxm replicas=2": each key's last part and value. */
static char *compact(const cJSON *overrides)
{
    char *text = util_xstrdup("");
    const cJSON *v;
    cJSON_ArrayForEach(v, overrides) {
        char *val = cJSON_IsString(v) ? util_xstrdup(v->valuestring) : cJSON_PrintUnformatted(v);
        char *next = util_xasprintf("%s%s%s=%s", text, *text ? " " : "", short_key(v->string), val);
        free(val);
        free(text);
        text = next;
    }
    return text;
}

/* Why target i fails in t, named as it was given and with its figures:
 * "ttft_p99<=0.5 fails: 0.81 s > 0.5 s", an interval that does not clear
 * the threshold, or requests that never completed (infinitely late). */
static char *target_why(const pl_plan_opts *o, const pl_trial *t, int i)
{
    const pl_target *g = &o->targets[i];
    double v = t->value[i], h = t->half[i];
    if (isnan(v) && g->per_task)
        return util_xasprintf("%s fails: the run has no agent tasks (workload.agent)", g->text);
    if (isnan(v)) return util_xasprintf("%s fails: nothing measured", g->text);
    if (g->per_request && v < o->attainment)
        return util_xasprintf("%s fails: met by %.1f%% < %.0f%%", g->text, 100 * v,
                              100 * o->attainment);
    if (g->per_request)
        return util_xasprintf("%s not within its interval: met by %.1f%% +- %.1f, not surely "
                              ">= %.0f%%", g->text, 100 * v, 100 * h, 100 * o->attainment);
    if (isinf(v)) return util_xasprintf("%s fails: infinite > %g s", g->text, g->threshold);
    if (v > g->threshold)
        return util_xasprintf("%s fails: %.4g s > %g s", g->text, v, g->threshold);
    return util_xasprintf("%s not within its interval: %.4g +- %.2g s, not surely <= %g s",
                          g->text, v, h, g->threshold);
}

/* Why a trial is not met: overloaded, each failing target with its figures,
 * and the requests that did not complete (they count as infinitely late,
 * so a percentile target fails once they reach its rank).  NULL when met. */
static char *why(const pl_plan_opts *o, const pl_trial *t)
{
    if (t->met) return NULL;
    char *text = util_xstrdup(t->overloaded ? "overloaded (the queue grew without bound)" : "");
    for (int i = 0; i < o->n_targets; i++) {
        if (t->target_met[i]) continue;
        char *one = target_why(o, t, i);
        char *next = util_xasprintf("%s%s%s", text, *text ? "; " : "", one);
        free(one);
        free(text);
        text = next;
    }
    if (t->not_completed > 0) {
        char *next = util_xasprintf("%s (%.1f%% of requests not completed)", text,
                                    100 * t->not_completed);
        free(text);
        text = next;
    }
    return text;
}

/* A configuration as its cell shows it: at most 60 bytes. */
static char *config_text(const cJSON *overrides)
{
    char *text = compact(overrides);
    if (strlen(text) > 60) strcpy(text + 57, "...");
    return text;
}

/* The trials' table: one row each, its failing targets named at its end. */
static void print_trials(const pl_plan_opts *o, const pl_plan_result *r, FILE *out)
{
    int nt = o->n_targets, cols = 3 + nt + 4;
    table t;
    table_init(&t, cols);
    t.left[1] = t.left[2] = t.left[cols - 1] = true;
    table_row(&t);
    table_set(&t, 1, "configuration");
    table_set(&t, 2, "verdict");
    for (int i = 0; i < nt; i++) table_set(&t, 3 + i, "%s", o->targets[i].text);
    table_set(&t, 3 + nt, "batch");
    table_set(&t, 4 + nt, "busy");
    table_set(&t, 5 + nt, r->day ? "$" : "$/Mtok"); /* a day's plan is on its whole cost */
    table_set(&t, 6 + nt, "why not met");
    for (int k = 0; k < r->n_trials; k++) {
        const pl_trial *x = &r->trials[k];
        table_row(&t);
        table_set(&t, 0, "%s", k == r->best && r->found ? "*" : "");
        table_take(&t, 1, config_text(x->overrides));
        table_set(&t, 2, "%s", x->overloaded ? "overloaded" : x->met ? "met" : "not met");
        for (int i = 0; i < nt; i++) {
            if (isinf(x->value[i])) table_set(&t, 3 + i, "inf");
            else if (o->targets[i].per_request)
                table_set(&t, 3 + i, "%.2f%%+-%.2f", 100 * x->value[i], 100 * x->half[i]);
            else table_set(&t, 3 + i, "%.4f+-%.4f", x->value[i], x->half[i]);
        }
        table_num(&t, 3 + nt, "%.1f%%", 100 * x->batch_fill);
        table_num(&t, 4 + nt, "%.1f%%", 100 * x->busy_fraction);
        table_num(&t, 5 + nt, "%.3f", r->day ? x->usd : x->usd_per_million_output_tokens);
        char *w = why(o, x);
        table_take(&t, 6 + nt, w ? w : util_xstrdup(""));
    }
    table_print(&t, "", out);
    table_fini(&t);
}

/* cheapest: one line per candidate -- the fewest replicas meeting the
 * targets with it, and their cost, or why none did. */
static void print_candidates(const pl_plan_opts *o, const pl_plan_result *r, FILE *out)
{
    if (isnan(o->rate)) fprintf(out, "\ncandidates at the scenario's rate:\n");
    else fprintf(out, "\ncandidates at %g req/s:\n", o->rate);
    table t;
    table_init(&t, 3);
    t.left[1] = t.left[2] = true;
    for (int i = 0; i < r->n_candidates; i++) {
        const pl_candidate *c = &r->candidates[i];
        table_row(&t);
        table_set(&t, 0, "%s", c->trial >= 0 && c->trial == r->best ? "*" : "");
        table_take(&t, 1, config_text(c->config));
        if (c->trial >= 0) {
            const pl_trial *x = &r->trials[c->trial];
            double n = number_of(x->overrides, "cluster.replicas");
            if (isnan(n)) /* its pools' replicas, as the candidate says */
                table_set(&t, 2, "met, $%.3f per 1M output tokens",
                          x->usd_per_million_output_tokens);
            else
                table_set(&t, 2, "met with %g replica%s, $%.3f per 1M output tokens", n,
                          n == 1 ? "" : "s", x->usd_per_million_output_tokens);
        } else {
            char *w = c->last_trial >= 0 ? why(o, &r->trials[c->last_trial]) : NULL;
            bool scaled = c->last_trial >= 0 &&
                          !isnan(number_of(r->trials[c->last_trial].overrides, "cluster.replicas"));
            if (scaled)
                table_set(&t, 2, "not met up to %d replicas%s%s", o->max_replicas, w ? ": " : "",
                          w ? w : "");
            else
                table_set(&t, 2, "not met%s%s", w ? ": " : "", w ? w : "");
            free(w);
        }
    }
    table_print(&t, "", out);
    table_fini(&t);
}

/* Over a day: one answer's line -- its settings, its cost and GPU-hours
 * over the run's window -- or that none met the targets. */
static void print_day_line(const char *what, const pl_plan_result *r, FILE *out)
{
    if (!r->found) {
        fprintf(out, "%s: none tried meets the targets\n", what);
        return;
    }
    const pl_trial *t = &r->trials[r->best];
    char *ov = compact(t->overrides);
    fprintf(out, "%s: %s, $%.3f (%.2f GPU-hours)\n", what, ov, t->usd, t->gpu_hours);
    free(ov);
}

/* Over a day: the autoscaler's answer, the static fleet's and the saving. */
static void print_day_answer(const pl_plan_result *r, FILE *out)
{
    fprintf(out, "cost over the run's window (each replica's GPU-hours over its life, x the "
                 "price):\n");
    print_day_line("cheapest autoscaler", r, out);
    print_day_line("cheapest static fleet", r->fixed, out);
    double saving = day_saving(r);
    if (!isnan(saving))
        fprintf(out, "saving: $%.3f (%.1f%% of the static fleet's)\n", saving,
                100 * saving / r->fixed->trials[r->fixed->best].usd);
}

void pl_plan_print(const pl_plan_opts *o, const pl_plan_result *r, FILE *out)
{
    fprintf(out, "plan --find %s: targets", goal_names[o->goal]);
    for (int i = 0; i < o->n_targets; i++) fprintf(out, "%s %s", i ? "," : "", o->targets[i].text);
    bool any_request = false, any_task = false;
    for (int i = 0; i < o->n_targets; i++) {
        any_request |= o->targets[i].per_request && !o->targets[i].per_task;
        any_task |= o->targets[i].per_task;
    }
    if (any_request || any_task)
        fprintf(out, " for %.0f%% of %s", 100 * o->attainment,
                any_request && any_task ? "requests and of tasks"
                : any_task              ? "tasks"
                                        : "requests");
    fprintf(out, "; %d seeds a point, %.0f%% confidence\n", o->seeds, 100 * o->confidence);
    /* the rule plot latency-load's --criterion mean marks too: said here so
     * that the two answers can be told apart from the output alone */
    fprintf(out, "criterion: mean over seeds; a point meets a target when the worse end of its "
                 "%.0f%% Student-t\n  interval is within it, and no seed was overloaded\n\n",
            100 * o->confidence);
    if (!r->found) {
        fprintf(out, "no configuration tried meets the targets\n");
    } else if (o->goal == PL_MAX_RATE) {
        const pl_trial *t = &r->trials[r->best];
        fprintf(out, "max rate: %.4g req/s (met at %.4g, not at %.4g)\n", r->max_rate, r->rate_lo,
                r->rate_hi);
        fprintf(out, "there: batch slots %.1f%% full, KV cache %.1f%%, busy %.1f%%, %.1f output "
                     "tok/s, $%.3f per 1M output tokens\n",
                100 * t->batch_fill, 100 * t->kv_mean_fraction, 100 * t->busy_fraction,
                t->output_tokens_per_s, t->usd_per_million_output_tokens);
    } else if (o->goal == PL_MIN_REPLICAS) {
        const pl_trial *t = &r->trials[r->best];
        fprintf(out, "fewest replicas at %g req/s: %d (batch slots %.1f%% full, busy %.1f%%, $%.3f "
                     "per 1M output tokens)\n",
                o->rate, r->replicas, 100 * t->batch_fill, 100 * t->busy_fraction,
                t->usd_per_million_output_tokens);
    } else if (r->day) {
        print_day_answer(r, out);
    } else {
        char *ov = compact(r->trials[r->best].overrides);
        fprintf(out, "cheapest at %g req/s: %s, $%.3f per 1M output tokens\n", o->rate, ov,
                r->trials[r->best].usd_per_million_output_tokens);
        free(ov);
    }
    if (r->day && !r->found) print_day_answer(r, out); /* the static fleet's, still */
    if (r->n_models > 1) print_models(o, r, out);
    fprintf(out, "\npoints tried (* the answer; values are means over seeds +- the interval's "
                 "half-width):\n");
    print_trials(o, r, out);
    if (r->day) {
        fprintf(out, "\nstatic fleets tried (cluster.autoscaler removed; * the cheapest):\n");
        print_trials(o, r->fixed, out);
        print_candidates(o, r->fixed, out);
    } else if (o->goal == PL_CHEAPEST) {
        print_candidates(o, r, out);
    }
}
