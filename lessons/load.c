/*
 * load.c: what load does -- batching makes the system faster and every
 * user slower; speculative decoding speeds every user up at light load and
 * slows them at heavy load; and cost and energy per token are mostly a
 * question of how busy the GPUs are.
 */
#include "ls_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

/* ---- batching ---- */

typedef struct batch_point {
    double users, tokens_s, per_user, ttft_p50, ttft_p99, goodput;
} batch_point;

static void batch_row(ls_result *r, const batch_point *p)
{
    cJSON *row = ls_row(r);
    cJSON_AddNumberToObject(row, "users", p->users);
    cJSON_AddNumberToObject(row, "out_tok_s", p->tokens_s);
    cJSON_AddNumberToObject(row, "per_user_tok_s", p->per_user);
    cJSON_AddNumberToObject(row, "ttft_p50_s", p->ttft_p50);
    cJSON_AddNumberToObject(row, "ttft_p99_s", p->ttft_p99);
    cJSON_AddNumberToObject(row, "goodput_req_s", p->goodput);
}

static void batch_columns(ls_result *r)
{
    ls_column_format(r, "users", "users", "", 0);
    ls_column_format(r, "out_tok_s", "output", "tokens/s", 0);
    ls_column_format(r, "per_user_tok_s", "per user", "tokens/s", 1);
    ls_column_format(r, "ttft_p50_s", "TTFT P50", "s", 3);
    ls_column_format(r, "ttft_p99_s", "TTFT P99", "s", 3);
    ls_column_format(r, "goodput_req_s", "goodput", "req/s", 2);
}

/* A number of the scenario (after --set), NAN where it has none. */
static double scenario_number(const ls_context *c, const char *path)
{
    cJSON *root = cJSON_Parse(c->base.json);
    double v = util_json_number(root, path, NAN);
    cJSON_Delete(root);
    return v;
}

/* Past the batch: "only queue" only where throughput stopped growing. */
static void batch_knee(ls_result *r, const batch_point *b, const batch_point *z, double slots)
{
    double growth = z->tokens_s / b->tokens_s - 1;
    bool past = z->users > b->users;
    ls_keep(r, "throughput_change_past_batch", past ? growth : NAN);
    ls_keep(r, "ttft_growth_past_batch", past ? z->ttft_p50 / b->ttft_p50 : NAN);
    ls_keep(r, "only_queue", past && growth < 0.10);
    if (!past)
        ls_say(r,
               "No user count here is past the %g-sequence batch (max_batch x replicas), so "
               "none shows users waiting for a place in it.",
               slots);
    else if (growth < 0.10)
        ls_say(r,
               "Past the %g-sequence batch the extra users only queue: from %g to %g users "
               "throughput changes by %+.0f%% but median TTFT goes from %.2f s to %.2f s "
               "(x%.0f).",
               slots, b->users, z->users, 100 * growth, b->ttft_p50, z->ttft_p50,
               z->ttft_p50 / b->ttft_p50);
    else
        ls_say(r,
               "From %g to %g users throughput still grows by %+.0f%% (median TTFT from %.2f s "
               "to %.2f s): the %g-sequence batch is not what limits it yet.",
               b->users, z->users, 100 * growth, b->ttft_p50, z->ttft_p50, slots);
}

static void batch_findings(ls_result *r, const batch_point *p, int n, double slots)
{
    int one = 0, at = 0, best = 0, last = 0; /* fewest users; most within the batch; goodput
                                              * peak; most users */
    for (int i = 0; i < n; i++) {
        if (p[i].users < p[one].users) one = i;
        if (p[i].users <= slots && (p[at].users > slots || p[i].users > p[at].users)) at = i;
        if (p[i].goodput > p[best].goodput) best = i;
        if (p[i].users > p[last].users) last = i;
    }
    const batch_point *a = &p[one], *b = &p[at], *z = &p[last];
    double gain = b->tokens_s / a->tokens_s;
    if (gain > 1.5 && b->per_user < a->per_user)
        ls_say(r,
               "From %g to %g users total throughput rises from %.0f to %.0f output tokens/s "
               "(x%.1f) while each user's own speed falls from %.1f to %.1f tokens/s: one "
               "batched step serves every sequence for the price of reading the weights once.",
               a->users, b->users, a->tokens_s, b->tokens_s, gain, a->per_user, b->per_user);
    else
        ls_say(r,
               "From %g to %g users total throughput goes from %.0f to %.0f output tokens/s "
               "(x%.1f) and each user's own speed from %.1f to %.1f tokens/s.",
               a->users, b->users, a->tokens_s, b->tokens_s, gain, a->per_user, b->per_user);
    batch_knee(r, b, z, slots);
    if (isfinite(p[best].goodput) && best != last && z->goodput < 0.9 * p[best].goodput)
        ls_say(r,
               "With the SLO set, goodput (requests/s meeting it) peaks at %.2f req/s with %g "
               "users and falls to %.2f req/s at %g: throughput nobody is willing to wait for "
               "does not count.",
               p[best].goodput, p[best].users, z->goodput, z->users);
    else if (isfinite(p[best].goodput) && best != last)
        ls_say(r,
               "With the SLO set, goodput (requests/s meeting it) peaks at %.2f req/s with %g "
               "users and stays near it, %.2f req/s at %g: up to here the extra users still "
               "meet the SLO.",
               p[best].goodput, p[best].users, z->goodput, z->users);
    else if (isfinite(p[best].goodput))
        ls_say(r,
               "With the SLO set, goodput (requests/s meeting it) grows to %.2f req/s at %g "
               "users, the most here: no count here has more users than the SLO allows.",
               p[best].goodput, p[best].users);
    ls_keep(r, "throughput_gain", gain);
    ls_keep(r, "per_user_ratio", b->per_user / a->per_user);
    ls_keep(r, "goodput_peak", p[best].goodput);
    ls_keep(r, "goodput_peak_users", p[best].users);
    ls_keep(r, "goodput_last", z->goodput);
    ls_keep(r, "batch_slots", slots);
}

/* Four panels over the users: all users' output, one user's, TTFT, goodput;
 * the batch size across all of them, the SLO where it applies, the goodput
 * peak marked. */
static void batch_figure(const ls_context *c, ls_result *r, const batch_point *p, int n,
                         double slots)
{
    char *title = ls_title(c);
    ls_plot_init(r, title,
                 "more users make the system faster and every user slower; past the batch they "
                 "queue",
                 "closed-loop users", "", AN_SCALE_LOG);
    free(title);
    int panels[4] = {ls_plot_panel(r, "output, all users", "tokens/s", AN_SCALE_AUTO),
                     ls_plot_panel(r, "output per user", "tokens/s", AN_SCALE_AUTO),
                     ls_plot_panel(r, "TTFT", "s", AN_SCALE_AUTO),
                     ls_plot_panel(r, "goodput", "req/s", AN_SCALE_AUTO)};
    double *x = util_xcalloc((size_t)n, sizeof *x), *y = util_xcalloc((size_t)n, sizeof *y);
    int best = 0;
    for (int i = 0; i < n; i++) {
        x[i] = p[i].users, y[i] = p[i].tokens_s;
        if (p[i].goodput > p[best].goodput) best = i;
    }
    ls_plot_series(r, panels[0], "total", x, y, n);
    for (int i = 0; i < n; i++)
        y[i] = p[i].per_user;
    ls_plot_series(r, panels[1], "per user", x, y, n);
    for (int i = 0; i < n; i++)
        y[i] = p[i].ttft_p50;
    an_plot_series *s = ls_plot_series(r, panels[2], "p50 TTFT", x, y, n);
    s->colour = 1, s->dash = 1;
    for (int i = 0; i < n; i++)
        y[i] = p[i].ttft_p99;
    s = ls_plot_series(r, panels[2], "p99 TTFT", x, y, n);
    s->colour = 1, s->dash = 3;
    for (int i = 0; i < n; i++)
        y[i] = p[i].goodput;
    ls_plot_series(r, panels[3], "goodput", x, y, n);
    char label[96];
    snprintf(label, sizeof label, "max_batch %g", slots);
    for (int k = 0; k < 4; k++)
        ls_plot_guide(r, panels[k], AN_GUIDE_LIMIT, label, slots, true);
    double ttft_slo = scenario_number(c, "slo.ttft_s"), tpot_slo = scenario_number(c, "slo.tpot_s");
    if (isfinite(ttft_slo)) {
        snprintf(label, sizeof label, "TTFT SLO %g s", ttft_slo);
        ls_plot_guide(r, panels[2], AN_GUIDE_SLO, label, ttft_slo, false);
    }
    if (isfinite(tpot_slo) && tpot_slo > 0) {
        snprintf(label, sizeof label, "TPOT SLO %g ms = %.3g tokens/s", 1e3 * tpot_slo,
                 1 / tpot_slo);
        ls_plot_guide(r, panels[1], AN_GUIDE_SLO, label, 1 / tpot_slo, false);
    }
    if (isfinite(p[best].goodput)) {
        snprintf(label, sizeof label, "goodput peak, %g users", p[best].users);
        ls_plot_guide(r, panels[3], AN_GUIDE_MARK, label, p[best].users, true);
    }
    free(x);
    free(y);
}

int ls__batching(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *users = ls_knobs(c, c->quick ? "quick_users" : "users", &n);
    double per_user =
        c->quick ? ls_knob(c, "quick_requests_per_user", 3) : ls_knob(c, "requests_per_user", 6);
    cJSON **ov = util_xcalloc((size_t)n + 1, sizeof *ov);
    ls_figures *rep = util_xcalloc((size_t)n + 1, sizeof *rep);
    for (int i = 0; i < n; i++) {
        ov[i] = ls_with("workload.arrival.users", users[i]);
        cJSON_AddNumberToObject(ov[i], "stop.requests", fmax(50, users[i] * per_user));
    }
    int rc = n >= 3 ? ls_points(c, ov, n, false, rep, d)
                    : util_diag_add(d, "lesson.users: give at least three user counts");
    batch_point *p = util_xcalloc((size_t)n + 1, sizeof *p);
    if (!rc) batch_columns(r);
    for (int i = 0; !rc && i < n; i++) {
        p[i] = (batch_point){users[i],
                             rep[i].output_tokens_per_s,
                             rep[i].per_user_tokens_per_s_mean,
                             rep[i].ttft_p50,
                             rep[i].ttft_p99,
                             rep[i].goodput_requests_per_s};
        batch_row(r, &p[i]);
    }
    if (!rc) {
        double slots = ls_batch_slots(c);
        batch_findings(r, p, n, slots);
        batch_figure(c, r, p, n, slots);
    }
    for (int i = 0; i < n; i++)
        cJSON_Delete(ov[i]);
    free(ov);
    free(rep);
    free(p);
    free(users);
    return rc;
}

/* ---- utilisation ---- */

typedef struct use_point {
    double load, rate, mfu, gpu_w, usd_m, gpu_j, wall_j, ttft_p50, ttft_p99;
    double use; /* served over full load's served: what the load turned out to be */
    bool open;  /* Poisson arrivals at the load; full load is the saturated closed loop */
    double not_served;      /* arrived but not completed: rejected, timed out, unfinished */
    double measured, window_s, span_s; /* the served rate's count and window; the arrivals' */
} use_point;

static void use_row(ls_result *r, const use_point *p)
{
    cJSON *row = ls_row(r);
    cJSON_AddNumberToObject(row, "load_pct", 100 * p->load);
    cJSON_AddNumberToObject(row, "req_s", p->rate);
    cJSON_AddNumberToObject(row, "use_pct", 100 * p->use);
    cJSON_AddNumberToObject(row, "mfu_pct", 100 * p->mfu);
    cJSON_AddNumberToObject(row, "gpu_w", p->gpu_w);
    cJSON_AddNumberToObject(row, "usd_per_Mtok", p->usd_m);
    cJSON_AddNumberToObject(row, "gpu_J_tok", p->gpu_j);
    cJSON_AddNumberToObject(row, "wall_J_tok", p->wall_j);
    cJSON_AddNumberToObject(row, "ttft_p99_s", p->ttft_p99);
}

static void use_columns(ls_result *r)
{
    ls_column_format(r, "load_pct", "load", "%", 0);
    ls_column_format(r, "req_s", "served", "req/s", 2);
    ls_column_format(r, "use_pct", "of full", "%", 1);
    ls_column_format(r, "mfu_pct", "MFU", "%", 1);
    ls_column_format(r, "gpu_w", "GPU power", "W", 0);
    ls_column_format(r, "usd_per_Mtok", "cost", "$/1M tokens", 3);
    ls_column_format(r, "gpu_J_tok", "GPU energy", "J/token", 3);
    ls_column_format(r, "wall_J_tok", "wall energy", "J/token", 3);
    ls_column_format(r, "ttft_p99_s", "TTFT P99", "s", 3);
}

/* The saturated run that measures full load: closed-loop users enough to
 * keep every batch slot of the cluster it runs full, and requests enough
 * per user that filling and draining the batches do not dominate. */
static cJSON *saturation(const ls_context *c, double requests, double *users_out)
{
    double users = ceil(ls_batch_slots(c) * ls_knob(c, "saturation_users_per_slot", 1));
    double per_user = c->quick ? ls_knob(c, "quick_saturation_requests_per_user", 20)
                               : ls_knob(c, "saturation_requests_per_user", 100);
    users = fmax(1, users);
    *users_out = users;
    cJSON *sat = cJSON_CreateObject();
    cJSON *arrival = cJSON_AddObjectToObject(sat, "workload.arrival");
    cJSON_AddStringToObject(arrival, "process", "closed");
    cJSON_AddNumberToObject(arrival, "users", users);
    cJSON_AddNumberToObject(sat, "stop.requests", fmax(requests, users * per_user));
    return sat;
}

/* Why "of full" lags the load: the served rate is the measured requests over
 * the window, which runs from the first arrival to the last completion, so
 * a run that served every request still shows load x span / window of full
 * -- the drain after the last arrival lasts about one long request however
 * long the run, and only a longer run shrinks its share. */
static void use_drain(ls_result *r, const use_point *p, int n, int top)
{
    double not_served = 0;
    for (int i = 0; i < n; i++) not_served += p[i].not_served;
    ls_keep(r, "not_served", not_served);
    if (top < 0) return;
    const use_point *z = &p[top];
    double drain = z->window_s - z->span_s, drained = z->load * z->span_s / z->window_s;
    char lost[96] = "No run dropped a request or left one unfinished";
    if (not_served > 0)
        snprintf(lost, sizeof lost, "%.0f requests were rejected, timed out or left unfinished",
                 not_served);
    ls_say(r,
           "%s; \"of full\" lags the load because the served rate divides by the whole window, "
           "which runs on after the last arrival until the last request is done: at %.0f%% load "
           "%.0f s of arrivals and %.1f s more, so %.0f%% x %.0f / %.1f = %.1f%%, and the run "
           "served %.1f%% of full. That drain is about one long request however long the run: "
           "longer runs (lesson.arrivals_s) shrink its share.",
           lost, 100 * z->load, z->span_s, drain, 100 * z->load, z->span_s, z->window_s,
           100 * drained, 100 * z->use);
    ls_keep(r, "top_use", z->use);
    ls_keep(r, "top_load_x_span_over_window", drained);
    ls_keep(r, "top_drain_s", drain);
    ls_keep(r, "top_measured", z->measured);
}

static void use_findings(ls_result *r, const use_point *p, int n, double capacity, double users,
                         const ls_figures *f, bool whole)
{
    int lo = 0, hi = 0, open_hi = -1; /* lowest load, highest, highest open one */
    for (int i = 0; i < n; i++) {
        if (p[i].load < p[lo].load) lo = i;
        if (p[i].load > p[hi].load) hi = i;
        if (p[i].open && (open_hi < 0 || p[i].load > p[open_hi].load)) open_hi = i;
    }
    const use_point *a = &p[lo], *b = &p[hi];
    double cost_x = a->usd_m / b->usd_m;
    ls_say(r,
           "The cluster serves %.1f req/s at full load (%g users keeping its batches full). "
           "At %.0f%% of that a million output tokens cost $%.2f; at %.0f%%, $%.2f: x%.1f "
           "(1/u predicts x%.1f), for the same hardware.",
           capacity, users, 100 * a->load, a->usd_m, 100 * b->load, b->usd_m, cost_x,
           b->load / a->load);
    use_drain(r, p, n, open_hi);
    ls_say(r,
           "An idle GPU is still paid for -- %g GPUs at $%.2f an hour whatever they do -- and "
           "still draws power: %.0f W for the cluster at %.0f%% load against %.0f W at "
           "%.0f%%.",
           f->gpu_count, f->usd_per_gpu_hour, a->gpu_w, 100 * a->load, b->gpu_w, 100 * b->load);
    /* the GPUs alone, or the whole server: hosts and cooling draw whatever
     * the load, so counted in they make a token's energy follow 1/u more */
    double energy_x = whole ? a->wall_j / b->wall_j : a->gpu_j / b->gpu_j;
    if (whole)
        ls_say(r,
               "For the whole server -- GPUs, hosts and the PUE -- energy per token %s: "
               "%.2f J at %.0f%% load, %.2f J at %.0f%%: x%.1f (the GPUs alone: %.2f J and "
               "%.2f J).",
               energy_x > 1.2 ? "follows" : "barely moves", a->wall_j, 100 * a->load, b->wall_j,
               100 * b->load, energy_x, a->gpu_j, b->gpu_j);
    else
        ls_say(r,
               "Energy per token %s: %.2f J at the GPU (%.2f J at the wall, with the hosts "
               "and the PUE) at %.0f%% load, %.2f J (%.2f J) at %.0f%%: x%.1f.",
               energy_x > 1.2 ? "follows" : "barely moves", a->gpu_j, a->wall_j, 100 * a->load,
               b->gpu_j, b->wall_j, 100 * b->load, energy_x);
    if (open_hi >= 0 && open_hi != lo) {
        const use_point *z = &p[open_hi];
        double wait_x = z->ttft_p99 / a->ttft_p99;
        ls_say(r,
               "The price of a cheap token is waiting: P99 TTFT is %.3f s at %.0f%% load and "
               "%.3f s at %.0f%% (x%.1f)%s.",
               a->ttft_p99, 100 * a->load, z->ttft_p99, 100 * z->load, wait_x,
               wait_x > 2 ? ", as the queue grows towards full load"
                          : "; here the queue stays short even so");
        ls_keep(r, "ttft_p99_growth", wait_x);
    }
    ls_keep(r, "capacity_req_s", capacity);
    ls_keep(r, "saturation_users", users);
    ls_keep(r, "cost_ratio", cost_x);
    ls_keep(r, "energy_ratio", energy_x);
    ls_keep(r, "wall_over_gpu", b->wall_j / b->gpu_j);
}

/* Against the utilisation the runs served (served over full load's
 * served: arrivals stop and the last requests drain, so a run served
 * somewhat less than it was offered): cost, measured and as 1/u from full
 * load (a smooth line); energy; and the latency the open loads pay. */
static void use_figure(const ls_context *c, ls_result *r, const use_point *p, int n, bool whole)
{
    char *title = ls_title(c);
    ls_plot_init(r, title, "a token costs 1/u: cheap at full load, paid for in waiting",
                 "utilisation, served over full load", "%", AN_SCALE_LINEAR);
    free(title);
    int cost = ls_plot_panel(r, "cost", "$ per 1M output tokens", AN_SCALE_AUTO),
        joules = ls_plot_panel(r, "energy", "J per output token", AN_SCALE_AUTO),
        wait = ls_plot_panel(r, "TTFT", "s", AN_SCALE_AUTO);
    enum { FINE = 101 };
    double *x = util_xcalloc((size_t)n + FINE, sizeof *x),
           *y = util_xcalloc((size_t)n + FINE, sizeof *y);
    double lo = 1, full = NAN;
    for (int i = 0; i < n; i++) {
        lo = fmin(lo, p[i].use);
        if (!p[i].open) full = p[i].usd_m * p[i].use;
    }
    if (isfinite(full)) {
        for (int i = 0; i < FINE; i++) {
            double u = lo + (1 - lo) * i / (FINE - 1);
            x[i] = 100 * u, y[i] = full / u;
        }
        an_plot_series *s = ls_plot_series(r, cost, "1/u from full load", x, y, FINE);
        s->colour = 1, s->dash = 2;
    }
    for (int i = 0; i < n; i++)
        x[i] = 100 * p[i].use, y[i] = p[i].usd_m;
    an_plot_series *s = ls_plot_series(r, cost, "measured", x, y, n);
    s->colour = 1, s->style = AN_STYLE_POINTS;
    /* the measure counted first and solid, the other dashed */
    for (int k = 0; k < 2; k++) {
        bool wall = (k == 0) == whole;
        for (int i = 0; i < n; i++)
            y[i] = wall ? p[i].wall_j : p[i].gpu_j;
        s = ls_plot_series(r, joules, wall ? "wall" : "GPU", x, y, n);
        s->colour = wall ? 2 : 1, s->dash = k + 1;
    }
    int m = 0; /* the open loads: full load's waiting depends on its users, not the load */
    for (int i = 0; i < n; i++)
        if (p[i].open) x[m] = 100 * p[i].use, y[m++] = p[i].ttft_p50;
    s = ls_plot_series(r, wait, "p50 TTFT", x, y, m);
    s->colour = 1, s->dash = 1;
    m = 0;
    for (int i = 0; i < n; i++)
        if (p[i].open) x[m] = 100 * p[i].use, y[m++] = p[i].ttft_p99;
    s = ls_plot_series(r, wait, "p99 TTFT", x, y, m);
    s->colour = 1, s->dash = 3;
    const int panels[3] = {cost, joules, wait};
    for (int k = 0; k < 3; k++)
        ls_plot_guide(r, panels[k], AN_GUIDE_LIMIT, "full load", 100, true);
    free(x);
    free(y);
}

int ls__utilisation(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *loads = ls_knobs(c, "loads", &n);
    double requests = c->quick ? ls_knob(c, "quick_requests", 300) : ls_knob(c, "requests", 1500);
    double arrivals_s =
        c->quick ? ls_knob(c, "quick_arrivals_s", 120) : ls_knob(c, "arrivals_s", 600);
    double users;
    cJSON *sat = saturation(c, requests, &users);
    ls_figures sat_rep = {0};
    int rc = n >= 2 ? ls_points(c, &sat, 1, false, &sat_rep, d)
                    : util_diag_add(d, "lesson.loads: give at least two loads");
    double capacity = rc ? NAN : sat_rep.requests_per_s;
    cJSON **ov = util_xcalloc((size_t)n + 1, sizeof *ov);
    ls_figures *rep = util_xcalloc((size_t)n + 1, sizeof *rep);
    for (int i = 0; i < n; i++) {
        if (loads[i] >= 1) { /* full load: the saturated run itself */
            ov[i] = cJSON_Duplicate(sat, 1);
        } else {
            /* arrivals for as long at every load: the drain at the end (the last, longest
             * requests) is then as short a part of each run */
            ov[i] = ls_with("workload.arrival.rate_per_s", loads[i] * capacity);
            cJSON_AddNumberToObject(ov[i], "stop.requests",
                                    fmax(requests, ceil(arrivals_s * loads[i] * capacity)));
        }
    }
    if (!rc) rc = ls_points(c, ov, n, false, rep, d);
    use_point *p = util_xcalloc((size_t)n + 1, sizeof *p);
    if (!rc) use_columns(r);
    for (int i = 0; !rc && i < n; i++) {
        p[i] = (use_point){loads[i],
                           rep[i].requests_per_s,
                           rep[i].mfu,
                           rep[i].mean_gpu_w,
                           rep[i].usd_per_million_output_tokens,
                           rep[i].gpu_j_per_output_token,
                           rep[i].wall_j_per_output_token,
                           rep[i].ttft_p50,
                           rep[i].ttft_p99,
                           rep[i].requests_per_s / capacity,
                           loads[i] < 1,
                           rep[i].arrived - rep[i].measured,
                           rep[i].measured,
                           rep[i].window_s,
                           rep[i].arrival_span_s};
        use_row(r, &p[i]);
    }
    if (!rc) {
        /* lesson.whole_server: count the energy of the whole server, not the GPUs */
        bool whole = ls_knob(c, "whole_server", 0) != 0;
        use_findings(r, p, n, capacity, users, &rep[0], whole);
        use_figure(c, r, p, n, whole);
    }
    for (int i = 0; i < n; i++)
        cJSON_Delete(ov[i]);
    cJSON_Delete(sat);
    free(ov);
    free(rep);
    free(p);
    free(loads);
    return rc;
}

/* ---- speculation ---- */

/* The scenario key the lesson compares with and without. */
static const char spec_key[] = "cluster.speculative";

typedef struct spec_point {
    double users;
    double tpot_plain, tpot_spec; /* ms */
    double speedup;               /* plain TPOT over speculative */
    double tok_s_plain, tok_s_spec;
    double batch_plain, batch_spec; /* mean sequences running, time-weighted */
    double accepted_length, tokens_per_step; /* the speculative run's */
    double k;
} spec_point;

static void spec_columns(ls_result *r)
{
    ls_column_format(r, "users", "users", "", 0);
    ls_column_format(r, "tpot_plain_ms", "TPOT plain", "ms", 2);
    ls_column_format(r, "tpot_spec_ms", "TPOT spec", "ms", 2);
    ls_column_format(r, "speedup", "speedup", "x", 2);
    ls_column_format(r, "out_tok_s_plain", "output plain", "tokens/s", 0);
    ls_column_format(r, "out_tok_s_spec", "output spec", "tokens/s", 0);
    ls_column_format(r, "batch_plain", "batch plain", "sequences", 1);
    ls_column_format(r, "batch_spec", "batch spec", "sequences", 1);
    ls_column_format(r, "accepted_length", "accepted", "tokens/seq", 2);
    ls_column_format(r, "tokens_per_step", "per step", "tokens", 1);
}

/* A row, the point's numbers rounded as the table prints them: the
 * sentences quote the table, so the point keeps what its row shows. */
static void spec_row(ls_result *r, spec_point *p)
{
    cJSON *row = ls_row(r);
    double *v[] = {&p->users,       &p->tpot_plain,  &p->tpot_spec,  &p->speedup,
                   &p->tok_s_plain, &p->tok_s_spec,  &p->batch_plain, &p->batch_spec,
                   &p->accepted_length, &p->tokens_per_step};
    assert((int)(sizeof v / sizeof v[0]) == r->n_columns);
    for (int k = 0; k < r->n_columns; k++) {
        double scale = pow(10, r->columns[k].decimals);
        if (isfinite(*v[k])) *v[k] = round(*v[k] * scale) / scale;
        cJSON_AddNumberToObject(row, r->columns[k].key, *v[k]);
    }
}

/* The runs' order by users (the knob's may be any), in idx. */
static void by_users(const spec_point *p, int n, int *idx)
{
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && p[idx[j - 1]].users > p[i].users; j--)
            idx[j] = idx[j - 1];
        idx[j] = i;
    }
}

/* Where the speedup first falls through 1 going up in users, interpolated
 * linearly between the two rows around it (their indices in *below,
 * *above); NAN where it does not. */
static double spec_crossover(const spec_point *p, const int *idx, int n, int *below, int *above)
{
    for (int i = 1; i < n; i++) {
        const spec_point *a = &p[idx[i - 1]], *b = &p[idx[i]];
        if (a->speedup >= 1 && b->speedup < 1) {
            *below = idx[i - 1], *above = idx[i];
            return a->users + (a->speedup - 1) / (a->speedup - b->speedup) * (b->users - a->users);
        }
    }
    return NAN;
}

/* What a sequence waits a step: TPOT x the tokens a step gives it, so
 * that the speedup is the accepted length over the step's growth. */
static double spec_wait(const spec_point *p)
{
    return p->tpot_spec * p->accepted_length;
}

/* The light end: the step barely grows and brings several tokens. */
static void spec_light(ls_result *r, const spec_point *a)
{
    double wait = spec_wait(a), growth = wait / a->tpot_plain;
    ls_say(r,
           "With %g user%s speculation %s TPOT from %.2f ms to %.2f ms (speedup x%.2f): a step "
           "drafts %g tokens a sequence and the target verifies the %g + 1 positions in one "
           "pass, reading the weights once as a plain step does, and keeps %.2f tokens a "
           "sequence (the mean accepted length). Each sequence waits %.2f x %.2f = %.2f ms a "
           "step where a plain one waits %.2f ms for one token: the step grew x%.2f, %s than the "
           "%.2f tokens it brings.",
           a->users, a->users == 1 ? "" : "s", a->speedup >= 1 ? "cuts" : "raises", a->tpot_plain,
           a->tpot_spec, a->speedup, a->k, a->k, a->accepted_length, a->tpot_spec,
           a->accepted_length, wait, a->tpot_plain, growth, growth < a->accepted_length ? "less" : "more",
           a->accepted_length);
    ls_keep(r, "lightest_users", a->users);
    ls_keep(r, "lightest_speedup", a->speedup);
    ls_keep(r, "lightest_wait_ms", wait);
    ls_keep(r, "lightest_step_growth", growth);
}

static void spec_cross(ls_result *r, const spec_point *p, const int *idx, int n)
{
    int below = -1, above = -1;
    double cross = spec_crossover(p, idx, n, &below, &above);
    const spec_point *a = &p[idx[0]], *z = &p[idx[n - 1]];
    bool all_faster = true, all_slower = true;
    for (int i = 0; i < n; i++) {
        all_faster = all_faster && p[i].speedup >= 1;
        all_slower = all_slower && p[i].speedup < 1;
    }
    ls_keep(r, "crossover_users", cross);
    if (isfinite(cross))
        ls_say(r,
               "The speedup shrinks as users are added and crosses x1 at about %.0f users "
               "(interpolated between %g users, x%.2f, and %g, x%.2f): past it speculation "
               "makes every user's stream slower.",
               cross, p[below].users, p[below].speedup, p[above].users, p[above].speedup);
    else if (all_faster)
        ls_say(r,
               "No crossover within the loads run: from %g to %g users speculation stays "
               "faster (x%.2f to x%.2f); more users would find where it stops paying.",
               a->users, z->users, a->speedup, z->speedup);
    else if (all_slower)
        ls_say(r,
               "No crossover within the loads run: speculation is slower at every load here, "
               "x%.2f at %g users and x%.2f at %g.",
               a->speedup, a->users, z->speedup, z->users);
    else
        ls_say(r,
               "No crossover from faster to slower within the loads run: x%.2f at %g users, "
               "x%.2f at %g.",
               a->speedup, a->users, z->speedup, z->users);
}

/* The heavy end: the K + 1 positions a sequence crowd the batch. */
static void spec_heavy(ls_result *r, const spec_point *a, const spec_point *z)
{
    double wait = spec_wait(z), growth = wait / z->tpot_plain,
           positions = (z->k + 1) * z->batch_spec;
    ls_say(r,
           "At %g users it %s TPOT from %.2f ms to %.2f ms (x%.2f): its steps run %.1f sequences "
           "on average, each verifying %g positions -- about %.0f a step, where the plain run's "
           "steps compute one token for each of their %.1f. %s each sequence waits %.2f x %.2f = "
           "%.2f ms a step against the plain run's %.2f ms, x%.2f, %s than the %.2f tokens it "
           "brings%s.",
           z->users, z->speedup < 1 ? "raises" : "still cuts", z->tpot_plain, z->tpot_spec,
           z->speedup, z->batch_spec, z->k + 1, positions, z->batch_plain,
           z->speedup < 1 ? "That much is compute:" : "The step grows with them:", z->tpot_spec,
           z->accepted_length, wait, z->tpot_plain, growth,
           growth > z->accepted_length ? "more" : "less", z->accepted_length,
           z->speedup < 1 ? " -- the rejected drafts' positions are paid in full" : "");
    ls_say(r,
           "The cluster's output follows: %.0f output tokens/s with speculation against %.0f "
           "without at %g user%s (x%.2f), %.0f against %.0f at %g (x%.2f).",
           a->tok_s_spec, a->tok_s_plain, a->users, a->users == 1 ? "" : "s",
           a->tok_s_spec / a->tok_s_plain, z->tok_s_spec, z->tok_s_plain, z->users,
           z->tok_s_spec / z->tok_s_plain);
    ls_keep(r, "heaviest_users", z->users);
    ls_keep(r, "heaviest_speedup", z->speedup);
    ls_keep(r, "heaviest_wait_ms", wait);
    ls_keep(r, "heaviest_step_growth", growth);
    ls_keep(r, "heaviest_positions_per_step", positions);
    ls_keep(r, "lightest_output_ratio", a->tok_s_spec / a->tok_s_plain);
    ls_keep(r, "heaviest_output_ratio", z->tok_s_spec / z->tok_s_plain);
}

/* Where the drafter's acceptance comes from: the lesson's source
 * (lesson.speculative_source) while the scenario's cluster.speculative is
 * the file's, else the --set that changed it. */
static void spec_source(const ls_context *c, ls_result *r, const spec_point *a,
                        const spec_point *z)
{
    cJSON *file = cJSON_Parse(ls_find(c->name)->file), *now = cJSON_Parse(c->base.json);
    const cJSON *spec = util_json_get(now, spec_key);
    bool shipped = cJSON_Compare(util_json_get(file, spec_key), spec, true);
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "method"));
    const char *source = cJSON_GetStringValue(util_json_get(c->knobs, "speculative_source"));
    char measured[96] = "";
    if (z != a)
        snprintf(measured, sizeof measured, " at %g user%s and %.2f at %g", a->users,
                 a->users == 1 ? "" : "s", z->accepted_length, z->users);
    ls_say(r,
           "The drafter is the scenario's %s: %s at K = %g, with %s; the runs kept %.2f tokens a "
           "sequence a step%s.",
           spec_key, method ? method : "?", a->k,
           shipped && source ? source : "the acceptance --set gives it", a->accepted_length,
           measured);
    cJSON_Delete(file);
    cJSON_Delete(now);
}

static void spec_findings(const ls_context *c, ls_result *r, const spec_point *p, int n)
{
    int *idx = util_xcalloc((size_t)n, sizeof *idx);
    by_users(p, n, idx);
    const spec_point *a = &p[idx[0]], *z = &p[idx[n - 1]];
    spec_light(r, a);
    spec_cross(r, p, idx, n);
    if (z->users > a->users) spec_heavy(r, a, z);
    spec_source(c, r, a, z);
    ls_keep(r, "num_speculative_tokens", a->k);
    free(idx);
}

/* TPOT with and without over the users, and the speedup with x1 drawn and
 * the crossover marked. */
static void spec_figure(const ls_context *c, ls_result *r, const spec_point *p, int n)
{
    char *title = ls_title(c), subtitle[160];
    cJSON *root = cJSON_Parse(c->base.json);
    const char *method =
        cJSON_GetStringValue(util_json_get(root, "cluster.speculative.method"));
    snprintf(subtitle, sizeof subtitle,
             "speculative decoding (%s, K = %g) cuts TPOT at light load and raises it at heavy "
             "load",
             method ? method : "?", p[0].k);
    cJSON_Delete(root);
    ls_plot_init(r, title, subtitle, "closed-loop users", "", AN_SCALE_LOG);
    free(title);
    int tpot = ls_plot_panel(r, "TPOT", "s", AN_SCALE_AUTO),
        gain = ls_plot_panel(r, "speedup, plain over speculative TPOT", "x", AN_SCALE_AUTO);
    int *idx = util_xcalloc((size_t)n, sizeof *idx);
    by_users(p, n, idx);
    double *x = util_xcalloc((size_t)n, sizeof *x), *y = util_xcalloc((size_t)n, sizeof *y);
    for (int i = 0; i < n; i++)
        x[i] = p[idx[i]].users, y[i] = p[idx[i]].tpot_plain / 1e3;
    an_plot_series *s = ls_plot_series(r, tpot, "plain", x, y, n);
    s->colour = 1, s->dash = 1;
    for (int i = 0; i < n; i++)
        y[i] = p[idx[i]].tpot_spec / 1e3;
    s = ls_plot_series(r, tpot, "speculative", x, y, n);
    s->colour = 2, s->dash = 1;
    for (int i = 0; i < n; i++)
        y[i] = p[idx[i]].speedup;
    ls_plot_series(r, gain, "speedup", x, y, n);
    ls_plot_guide(r, gain, AN_GUIDE_REFERENCE, "x1: as fast", 1, false);
    int below, above;
    double cross = spec_crossover(p, idx, n, &below, &above);
    if (isfinite(cross)) {
        char label[64];
        snprintf(label, sizeof label, "crossover, about %.0f users", cross);
        ls_plot_guide(r, tpot, AN_GUIDE_MARK, label, cross, true);
        ls_plot_guide(r, gain, AN_GUIDE_MARK, label, cross, true);
    }
    free(idx);
    free(x);
    free(y);
}

static spec_point spec_point_of(double users, const ls_figures *plain, const ls_figures *spec)
{
    return (spec_point){
        .users = users,
        .tpot_plain = 1e3 * plain->tpot_mean,
        .tpot_spec = 1e3 * spec->tpot_mean,
        .speedup = plain->tpot_mean / spec->tpot_mean,
        .tok_s_plain = plain->output_tokens_per_s,
        .tok_s_spec = spec->output_tokens_per_s,
        .batch_plain = plain->mean_batch,
        .batch_spec = spec->mean_batch,
        .accepted_length = spec->spec_mean_accepted_length,
        .tokens_per_step = spec->spec_tokens_per_step,
        .k = spec->spec_k,
    };
}

/* Each user count twice with one seed: the scenario without
 * cluster.speculative, then with it. */
int ls__speculation(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *users = ls_knobs(c, c->quick ? "quick_users" : "users", &n);
    double per_user =
        c->quick ? ls_knob(c, "quick_requests_per_user", 4) : ls_knob(c, "requests_per_user", 6);
    int rc = n < 2 ? util_diag_add(d, "lesson.users: give at least two user counts")
             : isnan(scenario_number(c, "cluster.speculative.num_speculative_tokens"))
                 ? util_diag_add(d,
                                 "%s: the lesson compares runs with and without it: give one "
                                 "(docs/speculative-decoding.md)",
                                 spec_key)
                 : UTIL_OK;
    cJSON **ov = util_xcalloc(2 * (size_t)n + 1, sizeof *ov);
    const char **unset = util_xcalloc(2 * (size_t)n + 1, sizeof *unset);
    ls_figures *rep = util_xcalloc(2 * (size_t)n + 1, sizeof *rep);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 2; k++) {
            ov[2 * i + k] = ls_with("workload.arrival.users", users[i]);
            cJSON_AddNumberToObject(ov[2 * i + k], "stop.requests", fmax(50, users[i] * per_user));
        }
        unset[2 * i] = spec_key;
    }
    if (!rc) rc = ls_points_without(c, ov, unset, 2 * n, false, rep, d);
    for (int i = 0; !rc && i < n; i++)
        if (isnan(rep[2 * i + 1].spec_k))
            rc = util_diag_add(d, "%s: the run with it did not speculate at %g users", spec_key,
                               users[i]);
    spec_point *p = util_xcalloc((size_t)n + 1, sizeof *p);
    if (!rc) spec_columns(r);
    for (int i = 0; !rc && i < n; i++) {
        p[i] = spec_point_of(users[i], &rep[2 * i], &rep[2 * i + 1]);
        spec_row(r, &p[i]);
    }
    if (!rc) {
        spec_findings(c, r, p, n);
        spec_figure(c, r, p, n);
    }
    for (int i = 0; i < 2 * n; i++)
        cJSON_Delete(ov[i]);
    free(ov);
    free(unset);
    free(rep);
    free(p);
    free(users);
    return rc;
}
