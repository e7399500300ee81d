/*
 * load.c: what load does -- batching makes the system faster and every
 * user slower; and cost and energy per token are mostly a question of how
 * busy the GPUs are.
 */
#include "ls_int.h"

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

/* The scenario's batch size: where adding users stops adding throughput. */
static double batch_slots(const ls_context *c)
{
    cJSON *root = cJSON_Parse(c->base.json);
    double slots = util_json_number(root, "cluster.scheduler.max_batch", 256) *
                   util_json_number(root, "cluster.replicas", 1);
    cJSON_Delete(root);
    return slots;
}

static void batch_findings(ls_result *r, const batch_point *p, int n, double slots)
{
    int one = 0, at = 0, best = 0; /* fewest users; most users within the batch; goodput peak */
    for (int i = 0; i < n; i++) {
        if (p[i].users < p[one].users) one = i;
        if (p[i].users <= slots && p[i].users > p[at].users) at = i;
        if (p[i].goodput > p[best].goodput) best = i;
    }
    const batch_point *a = &p[one], *b = &p[at], *z = &p[n - 1];
    ls_say(r, "From %g to %g users total throughput rises from %.0f to %.0f output tokens/s "
              "(x%.1f) while each user's own speed falls from %.1f to %.1f tokens/s: one batched "
              "step serves every sequence for the price of reading the weights once.",
           a->users, b->users, a->tokens_s, b->tokens_s, b->tokens_s / a->tokens_s, a->per_user,
           b->per_user);
    ls_say(r, "Past the %g-sequence batch the extra users only queue: from %g to %g users "
              "throughput changes by %+.0f%% but median TTFT goes from %.2f s to %.2f s (x%.0f).",
           slots, b->users, z->users,
           100 * (z->tokens_s / b->tokens_s - 1), b->ttft_p50, z->ttft_p50,
           z->ttft_p50 / b->ttft_p50);
    ls_say(r, "With the SLO set, goodput (requests/s meeting it) peaks at %.2f req/s with %g "
              "users and falls to %.2f req/s at %g: throughput nobody is willing to wait for does "
              "not count.",
           p[best].goodput, p[best].users, z->goodput, z->users);
    ls_keep(r, "throughput_gain", b->tokens_s / a->tokens_s);
    ls_keep(r, "per_user_ratio", b->per_user / a->per_user);
    ls_keep(r, "ttft_growth_past_batch", z->ttft_p50 / b->ttft_p50);
    ls_keep(r, "throughput_change_past_batch", z->tokens_s / b->tokens_s - 1);
    ls_keep(r, "goodput_peak", p[best].goodput);
    ls_keep(r, "goodput_last", z->goodput);
}

int ls__batching(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *users = ls_knobs(c, c->quick ? "quick_users" : "users", &n);
    double per_user = c->quick ? ls_knob(c, "quick_requests_per_user", 3)
                               : ls_knob(c, "requests_per_user", 6);
    cJSON **ov = util_xcalloc((size_t)n + 1, sizeof *ov);
    ls_figures *rep = util_xcalloc((size_t)n + 1, sizeof *rep);
    for (int i = 0; i < n; i++) {
        ov[i] = ls_with("workload.arrival.users", users[i]);
        cJSON_AddNumberToObject(ov[i], "stop.requests", fmax(50, users[i] * per_user));
    }
    int rc = n >= 3 ? ls_points(c, ov, n, false, rep, d)
                    : util_diag_add(d, "lesson.users: give at least three user counts");
    batch_point *p = util_xcalloc((size_t)n + 1, sizeof *p);
    for (int i = 0; !rc && i < n; i++) {
        p[i] = (batch_point){users[i], rep[i].output_tokens_per_s,
                             rep[i].per_user_tokens_per_s_mean, rep[i].ttft_p50,
                             rep[i].ttft_p99, rep[i].goodput_requests_per_s};
        batch_row(r, &p[i]);
    }
    if (!rc) {
        batch_findings(r, p, n, batch_slots(c));
        ls_plot_init(r, "batching: more users, a faster system, slower users", "users (closed "
                     "loop)", true);
        double *x = util_xcalloc((size_t)n, sizeof *x), *y = util_xcalloc((size_t)n, sizeof *y);
        int panels[3] = {ls_plot_panel(r, "output tokens/s (all users)"),
                         ls_plot_panel(r, "tokens/s per user"), ls_plot_panel(r, "TTFT (s)")};
        for (int i = 0; i < n; i++) x[i] = p[i].users, y[i] = p[i].tokens_s;
        ls_plot_series(r, panels[0], "total", x, y, n);
        for (int i = 0; i < n; i++) y[i] = p[i].per_user;
        ls_plot_series(r, panels[1], "per user", x, y, n);
        for (int i = 0; i < n; i++) y[i] = p[i].ttft_p50;
        ls_plot_series(r, panels[2], "p50 ttft", x, y, n);
        for (int i = 0; i < n; i++) y[i] = p[i].ttft_p99;
        ls_plot_series(r, panels[2], "p99 ttft", x, y, n);
        free(x);
        free(y);
    }
    for (int i = 0; i < n; i++) cJSON_Delete(ov[i]);
    free(ov);
    free(rep);
    free(p);
    free(users);
    return rc;
}

/* ---- utilisation ---- */

typedef struct use_point {
    double load, rate, busy, gpu_w, usd_m, gpu_j, wall_j;
} use_point;

int ls__utilisation(ls_context *c, ls_result *r, util_diag *d)
{
    int n;
    double *loads = ls_knobs(c, "loads", &n);
    double requests = c->quick ? ls_knob(c, "quick_requests", 300) : ls_knob(c, "requests", 1500);
    /* capacity first: closed-loop users enough to keep every batch full */
    cJSON *sat = cJSON_CreateObject();
    ls_figures sat_rep = {0};
    cJSON *arrival = cJSON_AddObjectToObject(sat, "workload.arrival");
    cJSON_AddStringToObject(arrival, "process", "closed");
    cJSON_AddNumberToObject(arrival, "users", ls_knob(c, "saturation_users", 256));
    cJSON_AddNumberToObject(sat, "stop.requests", requests);
    int rc = n >= 2 ? ls_points(c, &sat, 1, false, &sat_rep, d)
                    : util_diag_add(d, "lesson.loads: give at least two loads");
    double capacity = rc ? NAN : sat_rep.requests_per_s;
    cJSON **ov = util_xcalloc((size_t)n + 1, sizeof *ov);
    ls_figures *rep = util_xcalloc((size_t)n + 1, sizeof *rep);
    for (int i = 0; i < n; i++) {
        if (loads[i] >= 1) { /* full load: the saturated run itself */
            ov[i] = cJSON_Duplicate(sat, 1);
        } else {
            ov[i] = ls_with("workload.arrival.rate_per_s", loads[i] * capacity);
            cJSON_AddNumberToObject(ov[i], "stop.requests", requests);
        }
    }
    if (!rc) rc = ls_points(c, ov, n, false, rep, d);
    use_point *p = util_xcalloc((size_t)n + 1, sizeof *p);
    for (int i = 0; !rc && i < n; i++) {
        p[i] = (use_point){loads[i], rep[i].requests_per_s, rep[i].busy_fraction,
                           rep[i].mean_gpu_w, rep[i].usd_per_million_output_tokens,
                           rep[i].gpu_j_per_output_token, rep[i].wall_j_per_output_token};
        cJSON *row = ls_row(r);
        cJSON_AddNumberToObject(row, "load_pct", 100 * p[i].load);
        cJSON_AddNumberToObject(row, "req_s", p[i].rate);
        cJSON_AddNumberToObject(row, "mfu_pct", 100 * rep[i].mfu);
        cJSON_AddNumberToObject(row, "gpu_w", p[i].gpu_w);
        cJSON_AddNumberToObject(row, "usd_per_Mtok", p[i].usd_m);
        cJSON_AddNumberToObject(row, "gpu_J_tok", p[i].gpu_j);
        cJSON_AddNumberToObject(row, "wall_J_tok", p[i].wall_j);
    }
    if (!rc) {
        const use_point *lo = &p[0], *hi = &p[n - 1];
        double gpus = rep[0].gpu_count, price = rep[0].usd_per_gpu_hour;
        ls_say(r, "The cluster serves %.1f req/s at full load. At %.0f%% of that a million output "
                  "tokens cost $%.2f; at %.0f%%, $%.2f: x%.1f, for the same hardware.",
               capacity, 100 * lo->load, lo->usd_m, 100 * hi->load, hi->usd_m, lo->usd_m / hi->usd_m);
        ls_say(r, "An idle GPU is still paid for -- %g GPUs at $%.2f an hour whatever they do -- and "
                  "still draws power: %.0f W for the cluster at %.0f%% load against %.0f W at "
                  "%.0f%%.",
               gpus, price, lo->gpu_w, 100 * lo->load, hi->gpu_w, 100 * hi->load);
        ls_say(r, "Energy per token follows: %.2f J at the GPU (%.2f J at the wall, with the hosts "
                  "and the PUE) at %.0f%% load, %.2f J (%.2f J) at %.0f%%: x%.1f.",
               lo->gpu_j, lo->wall_j, 100 * lo->load, hi->gpu_j, hi->wall_j, 100 * hi->load,
               lo->gpu_j / hi->gpu_j);
        ls_keep(r, "capacity_req_s", capacity);
        ls_keep(r, "cost_ratio", lo->usd_m / hi->usd_m);
        ls_keep(r, "energy_ratio", lo->gpu_j / hi->gpu_j);
        ls_keep(r, "wall_over_gpu", hi->wall_j / hi->gpu_j);
        ls_plot_init(r, "utilisation: cost and energy per token against load", "load (% of "
                     "capacity)", false);
        double *x = util_xcalloc((size_t)n, sizeof *x), *y = util_xcalloc((size_t)n, sizeof *y);
        int cost = ls_plot_panel(r, "$ per million output tokens"), joules = ls_plot_panel(r, "J per "
                                                                                            "output token");
        for (int i = 0; i < n; i++) x[i] = 100 * p[i].load, y[i] = p[i].usd_m;
        ls_plot_series(r, cost, "cost", x, y, n);
        for (int i = 0; i < n; i++) y[i] = p[i].gpu_j;
        ls_plot_series(r, joules, "GPU", x, y, n);
        for (int i = 0; i < n; i++) y[i] = p[i].wall_j;
        ls_plot_series(r, joules, "wall", x, y, n);
        free(x);
        free(y);
    }
    for (int i = 0; i < n; i++) cJSON_Delete(ov[i]);
    cJSON_Delete(sat);
    free(ov);
    free(rep);
    free(p);
    free(loads);
    return rc;
}
