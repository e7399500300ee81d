/*
 * table.c: a sweep's closing table and its JSON, one row per point.
 */
#include "pl.h"

#include <math.h>
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

static void cell(FILE *out, double v, const char *fmt)
{
    if (isnan(v)) fprintf(out, " %9s", "-");
    else fprintf(out, fmt, v);
}

/* A value as short text for its column. */
static void value_cell(FILE *out, const cJSON *v, int width)
{
    char *text = cJSON_IsString(v) ? util_xstrdup(v->valuestring) : cJSON_PrintUnformatted(v);
    fprintf(out, " %*.*s", width, width, text);
    free(text);
}

void pl_sweep_print(const pl_sweep_opts *o, const pl_sweep_result *r, FILE *out)
{
    fprintf(out, "sweep \"%s\" into %s: %d points run, %d found done%s\n\n", o->base.sweep,
            o->output, r->ran, r->resumed, r->interrupted ? " (interrupted: --resume finishes it)"
                                                          : "");
    for (int a = 0; a < o->n_axes; a++) {
        const char *dot = strrchr(o->axes[a].path, '.');
        fprintf(out, " %14.14s", dot ? dot + 1 : o->axes[a].path);
    }
    if (o->seeds > 1) fprintf(out, " %5s", "seed");
    fprintf(out, " %4s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %s\n", "run", "ttft p50",
            "ttft p99", "tpot p50", "tpot p99", "req/s", "out tok/s", "goodput", "attain",
            "$/Mtok", "J/tok", "status");
    for (int i = 0; i < r->n_rows; i++) {
        const pl_sweep_row *row = &r->rows[i];
        if (!row->s.run_id) continue;
        for (int a = 0; a < o->n_axes; a++)
            value_cell(out, cJSON_GetObjectItemCaseSensitive(row->point.overrides, o->axes[a].path),
                       14);
        if (o->seeds > 1) fprintf(out, " %5lld", (long long)row->point.seed);
        const pl_summary *s = &row->s;
        fprintf(out, " %4lld", (long long)s->run_id);
        cell(out, s->ttft_p50, " %9.4f");
        cell(out, s->ttft_p99, " %9.4f");
        cell(out, s->tpot_p50, " %9.4f");
        cell(out, s->tpot_p99, " %9.4f");
        cell(out, s->requests_per_s, " %9.3f");
        cell(out, s->output_tokens_per_s, " %9.1f");
        cell(out, s->goodput_requests_per_s, " %9.3f");
        cell(out, isnan(s->attainment) ? NAN : 100 * s->attainment, " %8.1f%%");
        cell(out, s->usd_per_million_output_tokens, " %9.3f");
        cell(out, s->j_per_output_token, " %9.3f");
        fprintf(out, " %s\n", s->overloaded ? "overloaded" : "ok");
    }
    fprintf(out, "\n(latency in s; goodput in req/s meeting the SLO; $/Mtok per million output "
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
    add_num(j, "usd_per_million_output_tokens", t->usd_per_million_output_tokens);
    return j;
}

cJSON *pl_plan_json(const pl_plan_opts *o, const pl_plan_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "find", goal_names[o->goal]);
    cJSON_AddBoolToObject(j, "found", r->found);
    cJSON_AddNumberToObject(j, "confidence", o->confidence);
    if (o->goal == PL_MAX_RATE && r->found) {
        cJSON_AddNumberToObject(j, "max_rate_per_s", r->max_rate);
        cJSON *iv = cJSON_AddArrayToObject(j, "interval");
        cJSON_AddItemToArray(iv, cJSON_CreateNumber(r->rate_lo));
        cJSON_AddItemToArray(iv, cJSON_CreateNumber(r->rate_hi));
    }
    if (o->goal == PL_MIN_REPLICAS && r->found) cJSON_AddNumberToObject(j, "replicas", r->replicas);
    if (r->found && r->best >= 0) cJSON_AddItemToObject(j, "chosen", trial_json(o, &r->trials[r->best]));
    cJSON *tr = cJSON_AddArrayToObject(j, "trials");
    for (int i = 0; i < r->n_trials; i++) cJSON_AddItemToArray(tr, trial_json(o, &r->trials[i]));
    if (o->goal == PL_CHEAPEST) {
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

/* "rate_per_s=20 gpu=h100-sxm replicas=2": each key's last part and value. */
static char *compact(const cJSON *overrides)
{
    char *text = util_xstrdup("");
    const cJSON *v;
    cJSON_ArrayForEach(v, overrides) {
        const char *dot = strrchr(v->string, '.');
        char *val = cJSON_IsString(v) ? util_xstrdup(v->valuestring) : cJSON_PrintUnformatted(v);
        char *next = util_xasprintf("%s%s%s=%s", text, *text ? " " : "", dot ? dot + 1 : v->string,
                                    val);
        free(val);
        free(text);
        text = next;
    }
    return text;
}

/* Why a trial is not met: its failing targets, and the requests that did
 * not complete (they count as infinitely late, so a percentile target fails
 * once they reach its rank). */
static void print_why(const pl_plan_opts *o, const pl_trial *t, FILE *out)
{
    if (t->met) return;
    fprintf(out, "  ");
    if (t->overloaded) fprintf(out, "overloaded (the queue grew without bound)");
    const char *sep = t->overloaded ? "; " : "";
    for (int i = 0; i < o->n_targets; i++)
        if (!t->target_met[i]) {
            fprintf(out, "%s%s %s", sep, o->targets[i].text,
                    isinf(t->value[i]) || isnan(t->value[i]) ? "fails" : "not within its interval");
            sep = ", ";
        }
    if (t->not_completed > 0)
        fprintf(out, " (%.1f%% of requests not completed)", 100 * t->not_completed);
}

static void print_trial(const pl_plan_opts *o, const pl_trial *t, bool chosen, FILE *out)
{
    char *ov = compact(t->overrides);
    fprintf(out, "%s %-44.44s %-10s", chosen ? "*" : " ", ov,
            t->overloaded ? "overloaded" : t->met ? "met" : "not met");
    for (int i = 0; i < o->n_targets; i++) {
        if (isinf(t->value[i])) fprintf(out, " %16s", "inf");
        else if (o->targets[i].per_request)
            fprintf(out, " %7.2f%%+-%.2f", 100 * t->value[i], 100 * t->half[i]);
        else fprintf(out, " %9.4f+-%.4f", t->value[i], t->half[i]);
    }
    fprintf(out, " %5.1f%% %9.3f", 100 * t->busy_fraction, t->usd_per_million_output_tokens);
    print_why(o, t, out);
    fprintf(out, "\n");
    free(ov);
}

/* cheapest: one line per candidate -- the fewest replicas meeting the
 * targets with it, and their cost, or why none did. */
static void print_candidates(const pl_plan_opts *o, const pl_plan_result *r, FILE *out)
{
    fprintf(out, "\ncandidates at %g req/s:\n", o->rate);
    for (int i = 0; i < r->n_candidates; i++) {
        const pl_candidate *c = &r->candidates[i];
        char *cfg = compact(c->config);
        fprintf(out, "%s %-40.40s ", c->trial >= 0 && c->trial == r->best ? "*" : " ", cfg);
        if (c->trial >= 0) {
            const pl_trial *t = &r->trials[c->trial];
            fprintf(out, "met with %d replica%s, $%.3f per 1M output tokens\n",
                    (int)number_of(t->overrides, "cluster.replicas"),
                    number_of(t->overrides, "cluster.replicas") == 1 ? "" : "s",
                    t->usd_per_million_output_tokens);
        } else {
            fprintf(out, "not met up to %d replicas:", o->max_replicas);
            if (c->last_trial >= 0) print_why(o, &r->trials[c->last_trial], out);
            fprintf(out, "\n");
        }
        free(cfg);
    }
}

void pl_plan_print(const pl_plan_opts *o, const pl_plan_result *r, FILE *out)
{
    fprintf(out, "plan --find %s: targets", goal_names[o->goal]);
    for (int i = 0; i < o->n_targets; i++) fprintf(out, "%s %s", i ? "," : "", o->targets[i].text);
    bool any_request = false;
    for (int i = 0; i < o->n_targets; i++) any_request |= o->targets[i].per_request;
    if (any_request) fprintf(out, " for %.0f%% of requests", 100 * o->attainment);
    fprintf(out, "; %d seeds a point, %.0f%% confidence\n\n", o->seeds, 100 * o->confidence);
    if (!r->found) {
        fprintf(out, "no configuration tried meets the targets\n");
    } else if (o->goal == PL_MAX_RATE) {
        const pl_trial *t = &r->trials[r->best];
        fprintf(out, "max rate: %.4g req/s (met at %.4g, not at %.4g)\n", r->max_rate, r->rate_lo,
                r->rate_hi);
        fprintf(out, "there: busy %.1f%%, %.1f output tok/s, $%.3f per 1M output tokens\n",
                100 * t->busy_fraction, t->output_tokens_per_s, t->usd_per_million_output_tokens);
    } else if (o->goal == PL_MIN_REPLICAS) {
        const pl_trial *t = &r->trials[r->best];
        fprintf(out, "fewest replicas at %g req/s: %d (busy %.1f%%, $%.3f per 1M output tokens)\n",
                o->rate, r->replicas, 100 * t->busy_fraction, t->usd_per_million_output_tokens);
    } else {
        char *ov = compact(r->trials[r->best].overrides);
        fprintf(out, "cheapest at %g req/s: %s, $%.3f per 1M output tokens\n", o->rate, ov,
                r->trials[r->best].usd_per_million_output_tokens);
        free(ov);
    }
    fprintf(out, "\npoints tried (* the answer; values are means over seeds +- the interval's "
                 "half-width):\n");
    fprintf(out, "  %-44s %-10s", "configuration", "verdict");
    for (int i = 0; i < o->n_targets; i++) fprintf(out, " %16.16s", o->targets[i].text);
    fprintf(out, " %6s %9s  %s\n", "busy", "$/Mtok", "why not met");
    for (int i = 0; i < r->n_trials; i++) print_trial(o, &r->trials[i], i == r->best && r->found, out);
    if (o->goal == PL_CHEAPEST) print_candidates(o, r, out);
}
