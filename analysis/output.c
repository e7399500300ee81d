/*
 * output.c: the report as JSON (the contract scripts rely on) and as a
 * readable table.  Both print the same numbers; NaN (nothing measured)
 * becomes null in JSON and "-" in text.  The text is written whole, then
 * wrapped to 100 columns (wrap_print), so that no value however wide -- a
 * long name, a huge count -- pushes a line past what a terminal or a pasted
 * design doc shows.
 */
#include "an_int.h"
#include "mdl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void add_num(cJSON *o, const char *key, double v)
{
    if (!isfinite(v)) cJSON_AddNullToObject(o, key); /* JSON has no NaN or infinity */
    else cJSON_AddNumberToObject(o, key, v);
}

cJSON *an_stats_json(const an_stats *s)
{
    cJSON *o = cJSON_CreateObject();
    add_num(o, "mean", s->mean);
    add_num(o, "p50", s->p50);
    add_num(o, "p90", s->p90);
    add_num(o, "p95", s->p95);
    add_num(o, "p99", s->p99);
    add_num(o, "p999", s->p999);
    add_num(o, "max", s->max);
    return o;
}

/* The per-request sections, into o: the run's or a class's. */
static void section_json(cJSON *o, const an_section *s)
{
    cJSON *req = cJSON_AddObjectToObject(o, "requests");
    cJSON_AddNumberToObject(req, "arrived", (double)s->arrived);
    cJSON_AddNumberToObject(req, "completed", (double)s->completed);
    cJSON_AddNumberToObject(req, "measured", (double)s->measured);
    cJSON_AddNumberToObject(req, "rejected", (double)s->rejected);
    if (s->shed) cJSON_AddNumberToObject(req, "shed", (double)s->shed);
    cJSON_AddNumberToObject(req, "timed_out", (double)s->timed_out);
    cJSON_AddNumberToObject(req, "unfinished", (double)s->unfinished);
    cJSON_AddNumberToObject(req, "preempted", (double)s->preempted);
    cJSON_AddNumberToObject(req, "preemptions", (double)s->preemptions);

    /* which clock ttft_s and e2e_s read (docs/metrics.md); --definitions has the engine's */
    cJSON_AddStringToObject(o, "clock", "client");
    cJSON_AddItemToObject(o, "ttft_s", an_stats_json(&s->ttft));
    cJSON_AddItemToObject(o, "tpot_s", an_stats_json(&s->tpot));
    cJSON_AddItemToObject(o, "tpot_incl_ttft_s", an_stats_json(&s->tpot_incl_ttft));
    cJSON_AddItemToObject(o, "e2e_s", an_stats_json(&s->e2e));
    cJSON_AddItemToObject(o, "queue_s", an_stats_json(&s->queue));

    cJSON *tp = cJSON_AddObjectToObject(o, "throughput");
    add_num(tp, "window_s", s->window_s);
    add_num(tp, "requests_per_s", s->requests_per_s);
    add_num(tp, "input_tokens_per_s", s->input_tokens_per_s);
    add_num(tp, "output_tokens_per_s", s->output_tokens_per_s);
    cJSON_AddItemToObject(tp, "output_tokens_per_s_per_user", an_stats_json(&s->per_user_tokens_per_s));

    cJSON *slo = cJSON_AddObjectToObject(o, "slo");
    add_num(slo, "ttft_s", s->slo.ttft_s);
    add_num(slo, "tpot_s", s->slo.tpot_s);
    add_num(slo, "e2e_s", s->slo.e2e_s);
    add_num(slo, "attainment", s->attainment);
    add_num(slo, "goodput_requests_per_s", s->goodput_requests_per_s);

    cJSON *pc = cJSON_AddObjectToObject(o, "prefix_cache");
    cJSON_AddNumberToObject(pc, "cached_tokens", s->cached_tokens);
    cJSON_AddNumberToObject(pc, "prompt_tokens", s->prompt_tokens_scheduled);
    add_num(pc, "hit_rate", s->prefix_hit_rate);
}

static void tasks_json(cJSON *o, const an_tasks *t)
{
    if (t->count == 0) return;
    cJSON *tk = cJSON_AddObjectToObject(o, "tasks");
    cJSON_AddNumberToObject(tk, "count", (double)t->count);
    cJSON_AddNumberToObject(tk, "completed", (double)t->completed);
    cJSON_AddNumberToObject(tk, "failed", (double)t->failed);
    cJSON_AddNumberToObject(tk, "unfinished", (double)t->unfinished);
    cJSON_AddItemToObject(tk, "e2e_s", an_stats_json(&t->e2e));
    add_num(tk, "calls_per_task", t->calls_per_task);
    add_num(tk, "any_slow_fraction", t->any_slow_fraction);
    cJSON *slo = cJSON_AddObjectToObject(tk, "slo");
    add_num(slo, "task_e2e_s", t->slo_s);
    add_num(slo, "attainment", t->attainment);
    add_num(slo, "goodput_tasks_per_s", t->goodput_tasks_per_s);
}

static void targets_json(cJSON *slo, const an_report *r)
{
    if (r->n_targets == 0) return;
    cJSON *arr = cJSON_AddArrayToObject(slo, "targets");
    for (int i = 0; i < r->n_targets; i++) {
        const an_target *t = &r->targets[i];
        cJSON *o = cJSON_CreateObject();
        if (t->cls) cJSON_AddStringToObject(o, "class", t->cls);
        cJSON_AddStringToObject(o, "metric", an_metric_names[t->metric]);
        if (isnan(t->q)) cJSON_AddStringToObject(o, "statistic", "mean");
        else cJSON_AddNumberToObject(o, "percentile", 100 * t->q);
        cJSON_AddNumberToObject(o, "threshold_s", t->threshold_s);
        cJSON_AddStringToObject(o, "source", t->from_scenario ? "scenario" : "--slo");
        add_num(o, "value_s", t->value_s);
        cJSON_AddNumberToObject(o, "not_completed", (double)t->not_completed);
        add_num(o, "value_all_s", t->value_all_s);
        if (isinf(t->value_all_s)) cJSON_AddStringToObject(o, "value_all", "infinite");
        add_num(o, "margin_s", t->margin_s);
        cJSON_AddBoolToObject(o, "met", t->met);
        cJSON_AddItemToArray(arr, o);
    }
}

static void spec_json(cJSON *parent, const an_spec *s)
{
    cJSON *o = cJSON_AddObjectToObject(parent, "speculative");
    cJSON_AddNumberToObject(o, "num_speculative_tokens", (double)s->k);
    cJSON_AddNumberToObject(o, "steps", (double)s->steps);
    cJSON_AddNumberToObject(o, "steps_not_speculating", (double)s->off_steps);
    cJSON_AddNumberToObject(o, "verifications", (double)s->drafts);
    cJSON_AddNumberToObject(o, "draft_tokens", (double)s->draft_tokens);
    cJSON_AddNumberToObject(o, "accepted_tokens", (double)s->accepted);
    add_num(o, "acceptance_rate", s->acceptance_rate);
    add_num(o, "mean_accepted_length", s->mean_accepted_length);
    add_num(o, "tokens_per_step", s->tokens_per_step);
    add_num(o, "drafting_share", s->drafting_share);
    add_num(o, "verify_share", s->verify_share);
}

static void tier_json(cJSON *parent, const char *name, const an_tier *t)
{
    cJSON *j = cJSON_AddObjectToObject(parent, name);
    cJSON_AddNumberToObject(j, "tier_bytes", t->tier_bytes);
    cJSON_AddNumberToObject(j, "lookup_tokens", (double)t->lookup_tokens);
    cJSON_AddNumberToObject(j, "hit_tokens", (double)t->hit_tokens);
    add_num(j, "hit_rate", t->hit_rate);
    cJSON_AddNumberToObject(j, "stored_bytes", t->stored_bytes);
    cJSON_AddNumberToObject(j, "loaded_bytes", t->loaded_bytes);
}

/* {"none": {requests, ttft_mean_s, ttft_p50_s, ttft_p99_s}, "gpu": ...} */
static void sources_json(cJSON *parent, const an_offload *o)
{
    cJSON *j = cJSON_AddObjectToObject(parent, "ttft_by_source");
    for (int i = 0; i < AN_N_SOURCES; i++) {
        const an_by_source *b = &o->by_source[i];
        cJSON *s = cJSON_AddObjectToObject(j, an_source_names[i]);
        cJSON_AddNumberToObject(s, "requests", (double)b->requests);
        add_num(s, "ttft_mean_s", b->ttft.mean);
        add_num(s, "ttft_p50_s", b->ttft.p50);
        add_num(s, "ttft_p99_s", b->ttft.p99);
    }
}

static void offload_json(cJSON *parent, const an_offload *o)
{
    cJSON *j = cJSON_AddObjectToObject(parent, "kv_offload");
    tier_json(j, "cpu", &o->cpu);
    if (o->disk.tier_bytes > 0) tier_json(j, "disk", &o->disk);
    if (o->has_sources) sources_json(j, o);
}

static void lora_json(cJSON *parent, const an_lora *l)
{
    cJSON *o = cJSON_AddObjectToObject(parent, "lora");
    cJSON_AddNumberToObject(o, "gpu_slots", (double)l->slots);
    cJSON_AddNumberToObject(o, "lookups", (double)l->lookups);
    cJSON_AddNumberToObject(o, "gpu_hits", (double)l->gpu_hits);
    cJSON_AddNumberToObject(o, "loads", (double)l->loads);
    cJSON_AddNumberToObject(o, "cpu_hits", (double)l->cpu_hits);
    cJSON_AddNumberToObject(o, "disk_loads", (double)l->disk_loads);
    add_num(o, "gpu_hit_rate", l->gpu_hit_rate);
    add_num(o, "cpu_hit_rate", l->cpu_hit_rate);
    cJSON_AddNumberToObject(o, "load_s", l->load_s);
    add_num(o, "mean_load_s", l->mean_load_s);
    cJSON_AddNumberToObject(o, "kernel_s", l->kernel_s);
    add_num(o, "load_share", l->load_share);
    add_num(o, "kernel_share", l->kernel_share);
}

static void use_json(cJSON *o, const an_use *u)
{
    add_num(o, "busy_fraction", u->busy_fraction);
    add_num(o, "mean_batch", u->mean_batch);
    if (u->batch_slots > 0) cJSON_AddNumberToObject(o, "batch_slots", (double)u->batch_slots);
    else cJSON_AddNullToObject(o, "batch_slots");
    add_num(o, "batch_fill", u->batch_fill);
    add_num(o, "mfu", u->mfu);
    add_num(o, "mbu", u->mbu);
    add_num(o, "kv_mean_fraction", u->kv_mean_fraction);
    add_num(o, "kv_peak_fraction", u->kv_peak_fraction);
    add_num(o, "queue_mean", u->queue_mean);
    cJSON_AddNumberToObject(o, "queue_peak", (double)u->queue_peak);
    add_num(o, "mean_gpu_w", u->mean_gpu_w);
    add_num(o, "prefix_hit_rate", u->prefix_hit_rate);
    cJSON_AddNumberToObject(o, "evicted_blocks", (double)u->evicted_blocks);
    add_num(o, "weight_bytes", u->weight_bytes);
    if (u->weight_only) cJSON_AddStringToObject(o, "weight_only", u->weight_only);
    add_num(o, "kv_bytes_per_token", u->kv_bytes_per_token);
    cJSON_AddNumberToObject(o, "kv_capacity_tokens", (double)u->kv_capacity_tokens);
    if (u->spec.k > 0) spec_json(o, &u->spec);
    if (u->lora.slots > 0) lora_json(o, &u->lora);
    if (u->offload.cpu.tier_bytes > 0) offload_json(o, &u->offload);
}

static void cost_json(cJSON *root, const an_cost *c)
{
    cJSON *o = cJSON_AddObjectToObject(root, "cost");
    cJSON_AddNumberToObject(o, "gpu_count", c->gpu_count);
    add_num(o, "usd_per_gpu_hour", c->usd_per_gpu_hour);
    add_num(o, "overhead_fraction", c->overhead_fraction);
    add_num(o, "gpu_hours", c->gpu_hours);
    add_num(o, "usd", c->usd);
    add_num(o, "usd_per_million_output_tokens", c->usd_per_million_output_tokens);
    add_num(o, "usd_per_million_total_tokens", c->usd_per_million_total_tokens);
    add_num(o, "usd_per_request", c->usd_per_request);
    add_num(o, "utilisation", c->utilisation);
    add_num(o, "usd_per_million_output_tokens_at_full_utilisation",
            c->usd_per_million_output_tokens_at_full_utilisation);
}

static void energy_json(cJSON *root, const an_energy *e)
{
    cJSON *o = cJSON_AddObjectToObject(root, "energy");
    add_num(o, "gpu_j", e->gpu_j);
    add_num(o, "wall_j", e->wall_j);
    add_num(o, "gpu_wh", e->gpu_wh);
    add_num(o, "wall_wh", e->wall_wh);
    add_num(o, "gpu_j_per_output_token", e->gpu_j_per_output_token);
    add_num(o, "wall_j_per_output_token", e->wall_j_per_output_token);
    add_num(o, "mean_gpu_w", e->mean_gpu_w);
    add_num(o, "host_w_per_gpu", e->host_w_per_gpu);
    add_num(o, "pue", e->pue);
}

static void replicas_json(cJSON *root, const an_report *r)
{
    cJSON *arr = cJSON_AddArrayToObject(root, "replicas");
    for (int i = 0; i < r->n_replicas; i++) {
        const an_use *u = &r->replicas[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "replica", u->replica);
        cJSON_AddStringToObject(o, "pool", u->pool);
        cJSON_AddStringToObject(o, "gpu", u->gpu);
        cJSON_AddNumberToObject(o, "gpus", u->gpus);
        if (r->decode_pool) cJSON_AddStringToObject(o, "role", u->decodes ? "decode" : "prefill");
        use_json(o, u);
        if (r->by_replica) section_json(o, &u->req);
        if (r->by_replica && u->decodes) {
            cJSON_AddNumberToObject(cJSON_GetObjectItem(o, "requests"), "handed_over",
                                    (double)u->req.handed_over);
            cJSON_AddStringToObject(o, "note", "the requests it decoded; their ttft_s and "
                                               "queue_s are the prefill side's");
        }
        cJSON_AddItemToArray(arr, o);
    }
}

/* run.calibration: the profile's path, and what it says while it is there. */
static void calibration_json(cJSON *run, const an_report *r)
{
    if (!r->calibration_path) return;
    cJSON *c = cJSON_AddObjectToObject(run, "calibration");
    cJSON_AddStringToObject(c, "path", r->calibration_path);
    cJSON_AddBoolToObject(c, "found", r->calibration_found);
    if (!r->calibration_found) return;
    cJSON_AddStringToObject(c, "gpu", r->calibration_gpu);
    cJSON_AddStringToObject(c, "engine", r->calibration_engine);
    cJSON_AddItemToObject(c, "fitted_on", cJSON_Parse(r->calibration_fitted_on));
}

/* The class's priority (as written), deadline and tenant, where its
 * scenario gave them. */
static void class_sched_json(cJSON *o, const an_class *c)
{
    if (c->priority) cJSON_AddStringToObject(o, "priority", c->priority);
    if (!isnan(c->deadline_s)) cJSON_AddNumberToObject(o, "deadline_s", c->deadline_s);
    if (c->tenant) cJSON_AddStringToObject(o, "tenant", c->tenant);
}

/* "tenants" or "tiers": each group's sections, its shed share with its
 * counts, and what names it (a tenant null for "(none)"; a tier's
 * priority). */
static void groups_json(cJSON *root, const char *key, const an_group *g, int n, bool tier)
{
    cJSON *all = cJSON_AddObjectToObject(root, key);
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_AddObjectToObject(all, g[i].name);
        if (tier) add_num(o, "priority", g[i].priority);
        else if (g[i].null) cJSON_AddNullToObject(o, "tenant");
        else cJSON_AddStringToObject(o, "tenant", g[i].name);
        section_json(o, &g[i].req);
        add_num(cJSON_GetObjectItem(o, "requests"), "shed_share", g[i].shed_share);
    }
}

static void fairness_json(cJSON *root, const an_report *r)
{
    cJSON *o = cJSON_AddObjectToObject(root, "tenant_fairness");
    cJSON_AddStringToObject(o, "of", "attainment");
    cJSON_AddNumberToObject(o, "tenants", r->tenant_jain_n);
    add_num(o, "jain_index", r->tenant_jain);
}

/* report --by session: each turn number's figures. */
static void turns_json(cJSON *root, const an_report *r)
{
    cJSON *arr = cJSON_AddArrayToObject(root, "sessions");
    for (int i = 0; i < r->n_turns; i++) {
        const an_turn *t = &r->turns[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "turn", t->turn);
        cJSON_AddNumberToObject(o, "requests", (double)t->requests);
        add_num(o, "mean_prompt_tokens", t->mean_prompt);
        cJSON_AddNumberToObject(o, "prompt_tokens_scheduled", (double)t->prompt_scheduled);
        cJSON_AddNumberToObject(o, "cached_tokens", (double)t->cached);
        add_num(o, "prefix_hit_rate", t->hit_rate);
        cJSON_AddNumberToObject(o, "completed", (double)t->completed);
        add_num(o, "ttft_p50_s", t->ttft_p50);
        add_num(o, "ttft_p99_s", t->ttft_p99);
        cJSON_AddItemToArray(arr, o);
    }
}

/* report --by model: each model's requests, replicas, GPUs and cost. */
static void models_json(cJSON *root, const an_report *r)
{
    cJSON *ms = cJSON_AddObjectToObject(root, "models");
    for (int i = 0; i < r->n_models; i++) {
        const an_model *m = &r->models[i];
        cJSON *o = cJSON_AddObjectToObject(ms, m->id);
        section_json(o, &m->req);
        cJSON_AddNumberToObject(o, "replicas", m->replicas);
        cJSON_AddNumberToObject(o, "gpus", m->gpus);
        cJSON *c = cJSON_AddObjectToObject(o, "cost");
        cJSON_AddNumberToObject(c, "usd", m->usd);
        cJSON_AddNumberToObject(c, "usd_per_million_output_tokens",
                                m->usd_per_million_output_tokens);
        cJSON_AddNumberToObject(c, "usd_per_million_total_tokens", m->usd_per_million_total_tokens);
        cJSON_AddNumberToObject(c, "usd_per_request", m->usd_per_request);
    }
}

/* cluster.failures: only when a replica failed. */
/* A fleet that changed (print_fleet). */
static void fleet_json(cJSON *root, const an_report *r)
{
    const an_fleet *f = &r->fleet;
    if (!f->changing) return;
    cJSON *o = cJSON_AddObjectToObject(root, "fleet");
    cJSON_AddNumberToObject(o, "peak_ready_replicas", f->peak_ready_replicas);
    cJSON_AddNumberToObject(o, "peak_ready_gpus", f->peak_ready_gpus);
    add_num(o, "static_peak_gpu_hours", f->static_gpu_hours);
    add_num(o, "static_peak_usd", f->static_usd);
    cJSON_AddNumberToObject(o, "requests_sent", (double)f->sent);
    cJSON_AddNumberToObject(o, "missed_scale_up_lag", (double)f->missed_lag);
    cJSON_AddNumberToObject(o, "missed_failures", (double)f->missed_failures);
    double sent = f->sent ? (double)f->sent : NAN;
    add_num(o, "scale_up_lag_miss_share", (double)f->missed_lag / sent);
    add_num(o, "failure_miss_share", (double)f->missed_failures / sent);
}

static void failures_json(cJSON *root, const an_failures *f)
{
    if (!f->failed_replicas && !f->taken_back) return;
    cJSON *o = cJSON_AddObjectToObject(root, "failures");
    cJSON_AddNumberToObject(o, "replicas_failed", (double)f->failed_replicas);
    cJSON_AddNumberToObject(o, "replicas_taken_back", (double)f->taken_back);
    add_num(o, "ready_replica_s", f->ready_s);
    add_num(o, "down_replica_s", f->down_s);
    add_num(o, "availability", f->availability);
    cJSON_AddNumberToObject(o, "calls_failed", (double)f->failed_calls);
    cJSON_AddNumberToObject(o, "attempts_sent_again", (double)f->sent_again);
    add_num(o, "failed_share", f->calls ? (double)f->failed_calls / (double)f->calls : NAN);
    add_num(o, "sent_again_share", f->calls ? (double)f->sent_again / (double)f->calls : NAN);
}

cJSON *an_report_json(const an_report *r, bool by_class)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *run = cJSON_AddObjectToObject(root, "run");
    cJSON_AddNumberToObject(run, "id", (double)r->run_id);
    cJSON_AddStringToObject(run, "name", r->name);
    cJSON_AddNumberToObject(run, "seed", (double)r->seed);
    cJSON_AddStringToObject(run, "status", r->status);
    if (r->status_reason) cJSON_AddStringToObject(run, "status_reason", r->status_reason);
    if (r->req.measured == 0)
        cJSON_AddStringToObject(run, "note", "the measurement window is empty: no request "
                                             "completed after the warm-up");
    if (r->retried_attempts)
        cJSON_AddNumberToObject(run, "retried_attempts", (double)r->retried_attempts);
    if (r->skipped_rows) {
        cJSON *k = cJSON_AddObjectToObject(run, "skipped_rows");
        cJSON_AddNumberToObject(k, "count", (double)r->skipped_rows);
        cJSON_AddStringToObject(k, "first", r->skipped_why);
    }
    if (r->req.queue_grew) {
        cJSON *w = cJSON_AddObjectToObject(run, "queue_grew");
        cJSON_AddNumberToObject(w, "wait_s_per_s", r->req.queue_growth);
        cJSON_AddNumberToObject(w, "arrival_span_s", r->req.arrival_span_s);
    }
    add_num(run, "sim_time_s", r->sim_time_s);
    add_num(run, "wall_time_s", r->wall_time_s);
    cJSON_AddNumberToObject(run, "events", (double)r->events);

    section_json(root, &r->req);
    if (r->measured_format) {
        cJSON *ms = cJSON_AddObjectToObject(run, "measured");
        cJSON_AddStringToObject(ms, "format", r->measured_format);
        cJSON_AddStringToObject(ms, "source", r->measured_source);
        cJSON_AddItemToObject(ms, "metrics", cJSON_Parse(r->measured_metrics));
        cJSON_ReplaceItemInObject(root, "clock", cJSON_CreateString(r->measured_clock));
    }
    calibration_json(run, r);
    targets_json(cJSON_GetObjectItem(root, "slo"), r);
    tasks_json(root, &r->tasks);

    cJSON *u = cJSON_AddObjectToObject(root, "utilisation");
    cJSON_AddNumberToObject(u, "replicas", r->n_replicas);
    use_json(u, &r->use);
    failures_json(root, &r->failures);
    fleet_json(root, r);
    cost_json(root, &r->cost);
    energy_json(root, &r->energy);
    replicas_json(root, r);

    if (r->n_models) models_json(root, r);
    if (r->by_session) turns_json(root, r);
    if (r->has_classes || by_class) {
        cJSON *cls = cJSON_AddObjectToObject(root, "classes");
        for (int i = 0; i < r->n_classes; i++) {
            cJSON *c = cJSON_AddObjectToObject(cls, r->classes[i].name);
            section_json(c, &r->classes[i].req);
            tasks_json(c, &r->classes[i].tasks);
            class_sched_json(c, &r->classes[i]);
        }
    }
    if (r->by_tenant) {
        groups_json(root, "tenants", r->tenants, r->n_tenants, false);
        fairness_json(root, r);
    }
    if (r->by_tier) groups_json(root, "tiers", r->tiers, r->n_tiers, true);
    return root;
}

/* ---- text ---- */

/* A number or a name as text prints it, returned by value: a printf may
 * take several (num(...).s lives until the end of the full expression that
 * called it), and the library keeps no buffer shared between calls or
 * threads. */
typedef struct num_text {
    char s[40];
} num_text;

typedef struct name_text {
    char s[72];
} name_text;

/* v printed with fmt, or "-" when it is not a number (nothing measured):
 * text output never shows nan. */
static num_text num(const char *fmt, double v)
{
    num_text t;
    if (!isfinite(v)) snprintf(t.s, sizeof t.s, "-");
    else snprintf(t.s, sizeof t.s, fmt, v);
    return t;
}

/* ---- wrapping ---- */

enum { TEXT_WIDTH = 100 };

/* Where to cut a line that is wider than room: after the last ", " or "; "
 * in its last quarter, else at its last space, else (one word wider than the
 * line: a long name) at room itself, never inside a UTF-8 character.  The
 * line's own indentation (lead) is never cut. */
static size_t cut_at(const char *s, size_t room, size_t lead)
{
    size_t space = 0;
    for (size_t i = room; i > lead; i--) {
        if (s[i] != ' ') continue;
        if (i > room * 3 / 4 && (s[i - 1] == ',' || s[i - 1] == ';')) return i;
        if (!space) space = i;
    }
    if (space) return space;
    size_t i = room;
    while (i > lead + 1 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    return i;
}

/* One line, cut into lines of at most TEXT_WIDTH columns; its continuation
 * lines are indented two more than it is. */
static void wrap_line(const char *s, size_t len, FILE *out)
{
    size_t lead = strspn(s, " ");
    if (lead > TEXT_WIDTH / 2) lead = TEXT_WIDTH / 2;
    size_t indent = lead + 2, room = TEXT_WIDTH;
    while (len > room) {
        size_t cut = cut_at(s, room, room == TEXT_WIDTH ? lead : 0);
        size_t end = cut;
        while (end > 0 && s[end - 1] == ' ') end--;
        fprintf(out, "%.*s\n%*s", (int)end, s, (int)indent, "");
        while (cut < len && s[cut] == ' ') cut++;
        s += cut;
        len -= cut;
        room = TEXT_WIDTH - indent;
    }
    fprintf(out, "%.*s\n", (int)len, s);
}

static void wrap_print(const char *text, size_t len, FILE *out)
{
    while (len > 0) {
        const char *nl = memchr(text, '\n', len);
        size_t n = nl ? (size_t)(nl - text) : len;
        wrap_line(text, n, out);
        if (!nl) break;
        len -= n + 1;
        text = nl + 1;
    }
}

void an_print_wrapped(void (*print)(const void *arg, FILE *out), const void *arg, FILE *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) {
        print(arg, out);
        return;
    }
    print(arg, m);
    fclose(m);
    wrap_print(text, len, out);
    free(text);
}

/* A name as text shows it: at most max bytes (and no more than name_text
 * holds), a longer one cut with "..." -- never inside a UTF-8 character. */
static name_text short_name(const char *s, size_t max)
{
    name_text t = {""};
    if (!s) return t;
    if (max > sizeof t.s - 1) max = sizeof t.s - 1;
    size_t len = strlen(s);
    if (len <= max) {
        memcpy(t.s, s, len + 1);
        return t;
    }
    size_t keep = max - 3;
    while (keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80) keep--;
    snprintf(t.s, sizeof t.s, "%.*s...", (int)keep, s);
    return t;
}

/* A table cell of 10 columns: four decimals while they fit, fewer for
 * wide values, a mantissa and exponent beyond, so that the columns stay
 * aligned whatever the value. */
static void cell(FILE *out, double v)
{
    char b[40];
    if (!isfinite(v)) snprintf(b, sizeof b, "-");
    else
        for (int dec = 4; dec >= 0; dec--)
            if (snprintf(b, sizeof b, "%.*f", dec, v) <= 10) break;
    if (strlen(b) > 10) snprintf(b, sizeof b, "%.3e", v);
    fprintf(out, " %10s", b);
}

static void stats_line(FILE *out, const char *label, const an_stats *s)
{
    fprintf(out, "  %-16s", label);
    const double v[] = {s->mean, s->p50, s->p90, s->p95, s->p99, s->p999, s->max};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) cell(out, v[i]);
    fprintf(out, "\n");
}

static void pct(FILE *out, const char *label, double v)
{
    if (!isfinite(v)) fprintf(out, "%s -", label);
    else fprintf(out, "%s %.1f%%", label, 100 * v);
}

/* The section's SLO: its thresholds and attainment -- "-" with the reason
 * when no request ended to judge -- and "none set" only when it has none. */
static void print_slo(const an_section *s, FILE *out)
{
    const double thr[] = {s->slo.ttft_s, s->slo.tpot_s, s->slo.e2e_s};
    bool any = !isnan(thr[0]) || !isnan(thr[1]) || !isnan(thr[2]);
    if (!any && isnan(s->attainment)) {
        fprintf(out, "slo: none set (add \"slo\": {\"ttft_s\", \"tpot_s\", \"e2e_s\"})\n");
        return;
    }
    fprintf(out, "slo:");
    const char *names[] = {"ttft", "tpot", "e2e"};
    const char *sep = " ";
    for (int i = 0; i < 3; i++)
        if (!isnan(thr[i])) {
            fprintf(out, "%s%s <= %g s", sep, names[i], thr[i]);
            sep = ", ";
        }
    if (!s->slo.set) fprintf(out, " each class's own");
    if (s->ended == 0) {
        fprintf(out, ": attainment - (no request ended after the warm-up)\n");
        return;
    }
    pct(out, ": attainment", s->attainment);
    fprintf(out, ", goodput %s req/s\n", num("%.3f", s->goodput_requests_per_s).s);
}

/* A section's requests: those that arrived or, at a decode replica, were
 * handed over to it (which none reject unless one can never fit). */
static void print_counts(const an_section *s, double warmup_s, bool decode, FILE *out)
{
    fprintf(out, "requests: %lld %s, %lld completed, %lld measured", (long long)s->arrived,
            decode ? "handed over by the prefill pool" : "arrived", (long long)s->completed,
            (long long)s->measured);
    if (warmup_s > 0) fprintf(out, " (after %g s warm-up)", warmup_s);
    if (!decode || s->rejected) fprintf(out, ", %lld rejected", (long long)s->rejected);
    if (s->shed) fprintf(out, " (%lld shed)", (long long)s->shed);
    if (s->timed_out) fprintf(out, ", %lld timed out", (long long)s->timed_out);
    if (s->unfinished) fprintf(out, ", %lld unfinished", (long long)s->unfinished);
    if (s->preemptions)
        fprintf(out, ", %lld preempted (%lld preemptions)", (long long)s->preempted,
                (long long)s->preemptions);
    fprintf(out, "\n");
}

static const char latency_head[] = "latency (s)              mean        p50        p90        p95"
                                   "        p99      p99.9        max\n";

static void print_section(const an_section *s, double warmup_s, FILE *out)
{
    print_counts(s, warmup_s, false, out);
    fprintf(out, "\n%s", latency_head);
    stats_line(out, "ttft", &s->ttft);
    stats_line(out, "tpot", &s->tpot);
    stats_line(out, "tpot incl. ttft", &s->tpot_incl_ttft);
    stats_line(out, "e2e", &s->e2e);
    stats_line(out, "queue", &s->queue);
}

static void print_throughput(const an_section *s, FILE *out)
{
    if (s->measured == 0) {
        fprintf(out, "throughput: none -- no request completed in the measurement window\n");
        return;
    }
    fprintf(out, "throughput over %s s: %s req/s, %s input tok/s, %s output tok/s\n",
            num("%.1f", s->window_s).s, num("%.3f", s->requests_per_s).s,
            num("%.1f", s->input_tokens_per_s).s, num("%.1f", s->output_tokens_per_s).s);
}

static void print_tasks(const an_tasks *t, FILE *out)
{
    if (t->count == 0) return;
    fprintf(out, "tasks: %lld (%lld completed, %lld failed", (long long)t->count,
            (long long)t->completed, (long long)t->failed);
    if (t->unfinished) fprintf(out, ", %lld unfinished", (long long)t->unfinished);
    fprintf(out, "), %s calls each", num("%.2f", t->calls_per_task).s);
    pct(out, ", with a slow call", t->any_slow_fraction);
    fprintf(out, "\n");
    stats_line(out, "task e2e", &t->e2e);
    if (isnan(t->attainment)) return;
    fprintf(out, "task slo: ");
    if (isnan(t->slo_s)) fprintf(out, "each class's own");
    else fprintf(out, "e2e <= %g s", t->slo_s);
    pct(out, ": attainment", t->attainment);
    fprintf(out, ", goodput %s tasks/s\n", num("%.3f", t->goodput_tasks_per_s).s);
}

/* The prefix cache of a section: prompt tokens served from it. */
static void print_cache(const an_section *s, const char *evicted, FILE *out)
{
    pct(out, "prefix cache: hit rate", s->prefix_hit_rate);
    fprintf(out, " (%s of %s prompt tokens scheduled after warm-up came from the cache)%s\n",
            num("%.0f", s->cached_tokens).s, num("%.0f", s->prompt_tokens_scheduled).s, evicted);
}

/* ", priority critical, deadline 2 s, tenant chat": what the class's
 * scenario gave it, nothing when it gave none. */
static void print_class_sched(const an_class *c, FILE *out)
{
    if (c->priority) fprintf(out, ", priority %s", short_name(c->priority, 32).s);
    if (!isnan(c->deadline_s)) fprintf(out, ", deadline %s s", num("%g", c->deadline_s).s);
    if (c->tenant) fprintf(out, ", tenant \"%s\"", short_name(c->tenant, 64).s);
}

static void print_class(const an_class *c, double warmup_s, bool cache, FILE *out)
{
    fprintf(out, "\nclass \"%s\"", short_name(c->name, 64).s);
    print_class_sched(c, out);
    fprintf(out, "\n");
    print_section(&c->req, warmup_s, out);
    print_tasks(&c->tasks, out);
    print_throughput(&c->req, out);
    print_slo(&c->req, out);
    if (cache) print_cache(&c->req, "", out);
}

/* report --by model: a model's block, as a class's, with its share of the
 * fleet and what that costs. */
static void print_model(const an_model *m, double warmup_s, FILE *out)
{
    fprintf(out, "\nmodel \"%s\": %d replica%s, %d GPU%s\n", short_name(m->id, 64).s,
            m->replicas, m->replicas == 1 ? "" : "s", m->gpus, m->gpus == 1 ? "" : "s");
    print_section(&m->req, warmup_s, out);
    print_throughput(&m->req, out);
    print_slo(&m->req, out);
    fprintf(out, "cost over the window: $%s; $%s per 1M output tokens, $%s per 1M tokens\n",
            num("%.4f", m->usd).s, num("%.4f", m->usd_per_million_output_tokens).s,
            num("%.4f", m->usd_per_million_total_tokens).s);
}

/* report --by session: one line per turn number. */
static void print_turns(const an_report *r, FILE *out)
{
    if (!r->n_turns) {
        fprintf(out, "\nsessions: none (the run's scenario has no workload.sessions, or no turn "
                     "was sent after warm-up)\n");
        return;
    }
    fprintf(out, "\nsessions by turn (requests sent after warm-up; prompt: the history sent and "
                 "the new tokens; hit: cached / prompt tokens scheduled):\n");
    fprintf(out, "  %5s %10s %12s %8s %10s %10s\n", "turn", "requests", "mean prompt", "hit",
            "ttft p50", "ttft p99");
    for (int i = 0; i < r->n_turns; i++) {
        const an_turn *t = &r->turns[i];
        fprintf(out, "  %5d %10lld %12s %7s%% %10s %10s\n", t->turn, (long long)t->requests,
                num("%.1f", t->mean_prompt).s, num("%.1f", 100 * t->hit_rate).s,
                num("%.4f", t->ttft_p50).s, num("%.4f", t->ttft_p99).s);
    }
}

/* A tenant's or a tier's section: as a class's, and its shed share. */
static void print_group(const char *kind, const an_group *g, double warmup_s, bool cache,
                        FILE *out)
{
    const char *q = g->null ? "" : "\"";
    fprintf(out, "\n%s %s%s%s", kind, q, short_name(g->name, 64).s, q);
    if (!isnan(g->priority) && an_tier_name((int64_t)g->priority))
        fprintf(out, " (priority %lld)", (long long)g->priority);
    fprintf(out, "\n");
    print_section(&g->req, warmup_s, out);
    print_throughput(&g->req, out);
    print_slo(&g->req, out);
    pct(out, "shed share", g->shed_share);
    fprintf(out, " (%lld of %lld requests shed)\n", (long long)g->req.shed,
            (long long)g->req.arrived);
    if (cache) print_cache(&g->req, "", out);
}

/* Jain's index over the tenants, after their sections. */
static void print_fairness(const an_report *r, FILE *out)
{
    fprintf(out, "\nfairness over tenants: ");
    if (r->tenant_jain_n == 0) {
        fprintf(out, "- (no tenant had a request end after the warm-up)\n");
        return;
    }
    fprintf(out, "Jain's index %s of %d tenant%s' attainment (1: all alike; 1/n: one has it "
                 "all)\n", num("%.4f", r->tenant_jain).s, r->tenant_jain_n,
            r->tenant_jain_n == 1 ? "" : "s");
}

static void print_groups(const an_report *r, bool cache, FILE *out)
{
    for (int i = 0; r->by_tenant && i < r->n_tenants; i++)
        print_group("tenant", &r->tenants[i], r->warmup_s, cache, out);
    if (r->by_tenant) print_fairness(r, out);
    for (int i = 0; r->by_tier && i < r->n_tiers; i++)
        print_group("tier", &r->tiers[i], r->warmup_s, cache, out);
}

static void print_targets(const an_report *r, FILE *out)
{
    for (int i = 0; i < r->n_targets; i++) {
        const an_target *t = &r->targets[i];
        char stat[16];
        if (isnan(t->q)) snprintf(stat, sizeof stat, "mean");
        else snprintf(stat, sizeof stat, "p%g", 100 * t->q);
        fprintf(out, "slo target: %s%s%s %s <= %g s%s: ", t->cls ? t->cls : "", t->cls ? " " : "",
                an_metric_names[t->metric], stat, t->threshold_s,
                t->from_scenario ? " (scenario)" : "");
        if (isnan(t->value_all_s)) {
            fprintf(out, "nothing measured, not met\n");
            continue;
        }
        if (isinf(t->value_all_s))
            fprintf(out, "NOT met: %lld requests did not complete (rejected, timed out or "
                         "unfinished) and count as infinitely late",
                    (long long)t->not_completed);
        else
            fprintf(out, "%.4f s, %s (margin %+.4f s)", t->value_all_s,
                    t->met ? "met" : "NOT met", t->margin_s);
        if (t->not_completed && !isnan(t->value_s))
            fprintf(out, "; over completed requests only: %.4f s", t->value_s);
        fprintf(out, "\n");
    }
}

/* Speculative decoding: what the drafts did and what they cost. */
static void print_spec(const an_spec *s, FILE *out)
{
    int64_t decode_steps = s->steps + s->off_steps;
    fprintf(out, "speculative decoding (K = %lld): acceptance rate %s, mean accepted length %s "
                 "tokens, %s tokens a step (all sequences)\n",
            (long long)s->k, num("%.3f", s->acceptance_rate).s,
            num("%.3f", s->mean_accepted_length).s,
            num("%.2f", s->tokens_per_step).s);
    fprintf(out, "  busy time: %s drafting, %s in the speculative steps' verification; "
                 "%lld of %lld decode steps did not speculate (disable_by_batch_size, or the "
                 "token budget)\n",
            num("%.1f%%", 100 * s->drafting_share).s, num("%.1f%%", 100 * s->verify_share).s,
            (long long)s->off_steps, (long long)decode_steps);
}

static void print_tier(const an_tier *t, const char *name, const char *above, FILE *out)
{
    fprintf(out, "KV offload %s tier (%s GiB, all replicas): %lld prompt tokens missed %s, %lld "
                 "(%s) hit the %s tier; %s GB stored, %s GB loaded\n",
            name, num("%.1f", t->tier_bytes / 1073741824.0).s, (long long)t->lookup_tokens, above,
            (long long)t->hit_tokens, num("%.1f%%", 100 * t->hit_rate).s, name,
            num("%.2f", t->stored_bytes / 1e9).s, num("%.2f", t->loaded_bytes / 1e9).s);
}

/* A line per source; disk only with a disk tier. */
static void print_sources(const an_offload *o, FILE *out)
{
    fprintf(out, "  TTFT by where the prefix came from (the lowest tier that served any of the "
                 "prompt):\n");
    fprintf(out, "  %6s %10s %10s %10s %10s\n", "source", "requests", "ttft mean", "ttft p50",
            "ttft p99");
    int n = o->disk.tier_bytes > 0 ? AN_N_SOURCES : AN_SOURCE_DISK;
    for (int i = 0; i < n; i++) {
        const an_by_source *b = &o->by_source[i];
        fprintf(out, "  %6s %10lld %10s %10s %10s\n", an_source_names[i], (long long)b->requests,
                num("%.4f", b->ttft.mean).s, num("%.4f", b->ttft.p50).s,
                num("%.4f", b->ttft.p99).s);
    }
}

static void print_offload(const an_offload *o, FILE *out)
{
    print_tier(&o->cpu, "CPU", "the GPU cache", out);
    if (o->disk.tier_bytes > 0) print_tier(&o->disk, "disk", "the GPU cache and the CPU tier", out);
    if (o->has_sources) print_sources(o, out);
}

static void print_lora(const an_lora *l, FILE *out)
{
    fprintf(out, "LoRA adapters (%lld GPU slots): %lld requests for an adapter, GPU hit rate %s; "
                 "%lld loads, %s of them from the CPU cache, %lld from disk\n",
            (long long)l->slots, (long long)l->lookups, num("%.3f", l->gpu_hit_rate).s,
            (long long)l->loads, num("%.3f", l->cpu_hit_rate).s, (long long)l->disk_loads);
    fprintf(out, "  busy time: loads %s s (%s ms a load, %s), LoRA kernels %s s (%s)\n",
            num("%.3f", l->load_s).s, num("%.3f", 1e3 * l->mean_load_s).s,
            num("%.1f%%", 100 * l->load_share).s, num("%.3f", l->kernel_s).s,
            num("%.1f%%", 100 * l->kernel_share).s);
}

/* Whether the run used a prefix cache: something was cached or evicted
 * (a report of a run without one says nothing of it). */
static bool cache_used(const an_report *r)
{
    return r->req.cached_tokens > 0 || r->use.evicted_blocks > 0;
}

/* How full a replica (or the cluster) ran: its batch slots and KV cache,
 * and the queue behind them -- what says it is near its limits, which the
 * busy fraction does not under continuous batching. */
static void print_fill(const an_use *u, bool one, FILE *out)
{
    if (isnan(u->batch_fill)) {
        fprintf(out, " mean batch %s", num("%.1f", u->mean_batch).s);
    } else {
        pct(out, " batch slots", u->batch_fill);
        fprintf(out, one ? " full (max_batch %lld, mean batch %s)"
                     : u->lives_differ ? " full (%lld on average, mean batch %s)"
                                       : " full (%lld in all, mean batch %s)",
                (long long)u->batch_slots, num("%.1f", u->mean_batch).s);
    }
    pct(out, ", KV cache", u->kv_mean_fraction);
    pct(out, " full (peak", u->kv_peak_fraction);
    fprintf(out, "), queue mean %s (peak %lld)", num("%.2f", u->queue_mean).s,
            (long long)u->queue_peak);
}

static void print_use(const an_use *u, bool one, bool cache, FILE *out)
{
    print_fill(u, one, out);
    pct(out, ", busy", u->busy_fraction);
    pct(out, ", MFU", u->mfu);
    pct(out, ", MBU", u->mbu);
    fprintf(out, ", %s W", num("%.0f", u->mean_gpu_w).s);
    if (cache) pct(out, ", prefix cache hits", u->prefix_hit_rate);
    fprintf(out, "\n");
}


/* cluster.failures: only when a replica failed. */
static void print_failures(const an_failures *f, FILE *out)
{
    if (!f->failed_replicas && !f->taken_back) return;
    double calls = f->calls ? (double)f->calls : NAN;
    fprintf(out, "failures: %lld replica%s failed", (long long)f->failed_replicas,
            f->failed_replicas == 1 ? "" : "s");
    if (f->taken_back) fprintf(out, ", %lld taken back (spot)", (long long)f->taken_back);
    fprintf(out, "; availability %s%% (%s replica-h ready, %s "
                 "down until replaced)\n  of %lld calls: %lld failed (%s%%), %lld attempts "
                 "failed and sent again (%s%%)\n",
            num("%.2f", 100 * f->availability).s, num("%.3g", f->ready_s / 3600).s,
            num("%.3g", f->down_s / 3600).s, (long long)f->calls, (long long)f->failed_calls,
            num("%.2f", 100 * (double)f->failed_calls / calls).s, (long long)f->sent_again,
            num("%.2f", 100 * (double)f->sent_again / calls).s);
}

static void print_cost(const an_report *r, FILE *out)
{
    const an_cost *c = &r->cost;
    if (c->changing) /* an autoscaler's fleet: what it held, when */
        fprintf(out, "cost: %s GPU-hours of %d GPUs, each over the part of the window its "
                     "replica lived, x $%s/GPU-hour", num("%.3f", c->gpu_hours).s, c->gpu_count,
                num("%.2f", c->usd_per_gpu_hour).s);
    else
        fprintf(out, "cost: %d GPU%s x $%s/GPU-hour", c->gpu_count, c->gpu_count == 1 ? "" : "s",
                num("%.2f", c->usd_per_gpu_hour).s);
    if (c->overhead_fraction > 0) fprintf(out, " + %.0f%% overhead", 100 * c->overhead_fraction);
    if (r->req.measured == 0) {
        fprintf(out, ": no window to cost (no request completed after the warm-up)\n");
        return;
    }
    fprintf(out, " over the %s s window: $%s; $%s per 1M output tokens, $%s per 1M "
                 "tokens, $%s per request\n",
            num("%.1f", r->req.window_s).s, num("%.4f", c->usd).s,
            num("%.4f", c->usd_per_million_output_tokens).s,
            num("%.4f", c->usd_per_million_total_tokens).s, num("%.6f", c->usd_per_request).s);
    pct(out, "  at the utilisation it ran at (busy", c->utilisation);
    fprintf(out, "); kept busy all the time: $%s per 1M output tokens\n",
            num("%.4f", c->usd_per_million_output_tokens_at_full_utilisation).s);
}

/* A fleet that changed: against a static one sized for its peak, and who
 * missed the SLO while it was short (docs/autoscaling.md). */
static void print_fleet(const an_report *r, FILE *out)
{
    const an_fleet *f = &r->fleet;
    if (!f->changing || r->req.measured == 0) return;
    double sent = f->sent ? (double)f->sent : NAN;
    fprintf(out, "fleet: at most %d replica%s (%s GPUs) ready at once; kept for the whole window: "
                 "%s GPU-hours, $%s (this run: %s GPU-hours, $%s)\n  of %lld requests sent: "
                 "%lld (%s%%) missed the SLO during scale-up lag, %lld (%s%%) because of "
                 "failures\n",
            f->peak_ready_replicas, f->peak_ready_replicas == 1 ? "" : "s",
            num("%.0f", f->peak_ready_gpus).s, num("%.3f", f->static_gpu_hours).s,
            num("%.4f", f->static_usd).s, num("%.3f", r->cost.gpu_hours).s,
            num("%.4f", r->cost.usd).s, (long long)f->sent, (long long)f->missed_lag,
            num("%.2f", 100 * (double)f->missed_lag / sent).s, (long long)f->missed_failures,
            num("%.2f", 100 * (double)f->missed_failures / sent).s);
}

static void print_energy(const an_report *r, FILE *out)
{
    const an_energy *e = &r->energy;
    if (r->req.measured == 0) {
        fprintf(out, "energy: no window to measure (no request completed after the warm-up)\n");
        return;
    }
    fprintf(out, "energy over the window: GPU boards %s Wh, %s J per output token (mean %s "
                 "W); wall (GPU + host %s W/GPU) x PUE %s: %s Wh, %s J per output token\n",
            num("%.1f", e->gpu_wh).s, num("%.3f", e->gpu_j_per_output_token).s,
            num("%.0f", e->mean_gpu_w).s, num("%.0f", e->host_w_per_gpu).s, num("%.2f", e->pue).s,
            num("%.1f", e->wall_wh).s, num("%.3f", e->wall_j_per_output_token).s);
}

/* What the precision sized: known from schema 4 on; weights served
 * weight-only say so in the catalog's words. */
static void print_memory(const an_use *u, const char *indent, FILE *out)
{
    if (isnan(u->weight_bytes)) return;
    const char *words = mdl_weight_only_words(u->weight_only);
    fprintf(out, "%smemory: weights %s GB%s%s, KV %s KiB per token, KV capacity %lld tokens\n",
            indent, num("%.2f", u->weight_bytes / 1e9).s, words ? ", " : "", words ? words : "",
            num("%.1f", u->kv_bytes_per_token / 1024).s, (long long)u->kv_capacity_tokens);
}

/* A fleet that changed lists its replicas only up to this many: a day of
 * scale-ups makes thousands, and the summary above is what counts. */
#define CHANGING_REPLICA_LINES 16

static void print_replicas(const an_report *r, FILE *out)
{
    for (int i = 0; i < r->n_replicas; i++) {
        const an_use *u = &r->replicas[i];
        fprintf(out, "  replica %d (%s, %d x %s):", u->replica, short_name(u->pool, 32).s, u->gpus,
                short_name(u->gpu, 32).s);
        print_use(u, true, cache_used(r), out);
        print_memory(u, "    ", out);
    }
}

/* A decode replica's section: what it decoded -- the requests handed over
 * to it, their per-token latencies and end-to-end, and how full its batch
 * ran; their TTFT and queue are the prefill side's, said so rather than
 * left as empty rows. */
static void print_decode_section(const an_use *u, double warmup_s, FILE *out)
{
    const an_section *s = &u->req;
    print_counts(s, warmup_s, true, out);
    fprintf(out, "\n%s", latency_head);
    fprintf(out, "  %-16s the prefill side's: their first tokens came from the prefill pool\n",
            "ttft");
    stats_line(out, "tpot", &s->tpot);
    stats_line(out, "tpot incl. ttft", &s->tpot_incl_ttft);
    stats_line(out, "e2e", &s->e2e);
    fprintf(out, "  %-16s the prefill side's, as ttft\n", "queue");
    print_throughput(s, out);
    print_slo(s, out);
    if (isnan(u->batch_fill)) {
        fprintf(out, "batch: mean %s sequences\n", num("%.1f", u->mean_batch).s);
        return;
    }
    pct(out, "batch: slots", u->batch_fill);
    fprintf(out, " full (max_batch %lld, mean batch %s)\n", (long long)u->batch_slots,
            num("%.1f", u->mean_batch).s);
}

static void print_replica_sections(const an_report *r, FILE *out)
{
    for (int i = 0; i < r->n_replicas; i++) {
        const an_use *u = &r->replicas[i];
        fprintf(out, "\nreplica %d (%s) -- the requests it %s\n", u->replica,
                short_name(u->pool, 32).s, u->decodes ? "decoded" : "prefilled");
        if (u->decodes) {
            print_decode_section(u, r->warmup_s, out);
            continue;
        }
        print_section(&u->req, r->warmup_s, out);
        print_throughput(&u->req, out);
        print_slo(&u->req, out);
    }
}

/* The profile a calibrated run's coefficients came from. */
static void print_calibration(const an_report *r, FILE *out)
{
    if (!r->calibration_path) return;
    util_clip_buf cb;
    const char *path = util_clip_path(r->calibration_path, &cb);
    if (!r->calibration_found) {
        fprintf(out, "calibration: %s (file not found)\n", path);
        return;
    }
    fprintf(out, "calibration: %s (gpu %s, engine %s, fitted on %d run%s)\n", path,
            short_name(r->calibration_gpu, 32).s, short_name(r->calibration_engine, 32).s,
            r->calibration_runs, r->calibration_runs == 1 ? "" : "s");
}

/* The first line: what ran and how it ended -- a run that did not complete
 * says so, and why, before any figure. */
static void print_run(const an_report *r, FILE *out)
{
    if (r->measured_format) {
        fprintf(out, "run %lld \"%s\": measured, read from %s (%s), on the %s's clock",
                (long long)r->run_id, short_name(r->name, 48).s,
                short_name(r->measured_source, 60).s, r->measured_format, r->measured_clock);
        if (r->req.arrived) fprintf(out, ", over %.1f s", r->sim_time_s);
        fprintf(out, "\n");
        return;
    }
    bool completed = !strcmp(r->status, "completed");
    fprintf(out, "run %lld \"%s\" (seed %lld): %s%s%s, %.1f s simulated in %.3g s (%lld "
                 "events)\n",
            (long long)r->run_id, short_name(r->name, 48).s, (long long)r->seed,
            completed ? "" : "*** ",
            r->status, completed ? "" : " ***", r->sim_time_s,
            r->wall_time_s, (long long)r->events);
    if (r->req.queue_grew)
        fprintf(out, "  the queue grew throughout the run: a request's wait for its first step "
                     "rose by %.2f s for every second of arrivals, %.0f s over their %.0f s; the "
                     "cluster could not keep up, so the latencies grow with the run's length\n",
                r->req.queue_growth, r->req.queue_growth * r->req.arrival_span_s,
                r->req.arrival_span_s);
    if (!completed)
        fprintf(out, "  %s%s; the figures below cover what was recorded until then\n",
                r->status_reason ? r->status_reason : "the run did not complete",
                strcmp(r->status, "overloaded") ? "" : ", so no target it was run for is met");
    if (r->req.measured == 0)
        fprintf(out, "  the measurement window is empty: no request completed after the %g s "
                     "warm-up, so there is no throughput, cost or energy per token to report\n",
                r->warmup_s);
    if (r->retried_attempts)
        fprintf(out, "  %lld attempt%s that clients retried (workload.retry) are not counted: "
                     "each call counts once, by its last attempt\n",
                (long long)r->retried_attempts, r->retried_attempts == 1 ? "" : "s");
    if (r->skipped_rows)
        fprintf(out, "  %lld request row%s left out: values no run writes (%s), so the file "
                     "was edited or is damaged; the figures below are of the other rows\n",
                (long long)r->skipped_rows, r->skipped_rows == 1 ? "" : "s", r->skipped_why);
    print_calibration(r, out);
}

/* What a measured run has beyond its requests: the tool's own aggregates
 * (all it has, for a tool that keeps no requests).  No utilisation, cost
 * or energy: nothing measured them. */
static void print_measured(const an_report *r, FILE *out)
{
    bool rows = r->req.arrived > 0;
    if (rows) {
        fprintf(out, "\n");
        print_throughput(&r->req, out);
    }
    cJSON *m = cJSON_Parse(r->measured_metrics ? r->measured_metrics : "{}");
    if (m && m->child) {
        fprintf(out, rows ? "the tool's own figures:\n"
                          : "the tool's own figures (it kept no requests: they are all there is):\n");
        const cJSON *c;
        cJSON_ArrayForEach(c, m) fprintf(out, "  %-22s %12.6g\n", c->string, c->valuedouble);
    }
    cJSON_Delete(m);
    if (rows) print_slo(&r->req, out);
}

/* What busy means, once, after the cluster's utilisation. */
static void print_busy_note(FILE *out)
{
    fprintf(out, "  (busy is the time an iteration ran: under continuous batching one running "
                 "sequence keeps a replica busy, so busy nears 100%% long before the replica is "
                 "full; how full its batch slots and KV cache ran says how near its limits it "
                 "is)\n");
}

typedef struct report_text {
    const an_report *r;
    bool by_class;
} report_text;

static void print_report(const void *arg, FILE *out)
{
    const an_report *r = ((const report_text *)arg)->r;
    bool by_class = ((const report_text *)arg)->by_class;
    print_run(r, out);
    if (r->measured_format && r->req.arrived == 0) {
        print_measured(r, out);
        return;
    }
    print_section(&r->req, r->warmup_s, out);
    if (r->measured_format && !strcmp(r->measured_clock, "engine"))
        fprintf(out, "  (the engine core's clock, as the tool stamped it: ttft and e2e from the\n"
                     "   request queued in the engine to its first and last token out of it)\n");
    else
        fprintf(out, "  (the client's clock: ttft and e2e from the request sent to its first and last\n"
                 "   streamed token, as vllm bench serve and GenAI-Perf measure; --definitions has the\n"
                 "   engine core's too, from queued in the engine to the token out;\n"
                 "   tpot excludes the first token: vLLM TPOT, GenAI-Perf ITL;\n"
                 "   tpot incl. ttft is e2e / output tokens: LLMPerf ITL, GuideLLM TPOT)\n");
    if (r->measured_format) {
        print_measured(r, out);
        return;
    }
    print_tasks(&r->tasks, out);
    fprintf(out, "\n");
    print_throughput(&r->req, out);
    fprintf(out, "per user (1 / tpot): mean %s tok/s, p50 %s tok/s\n",
            num("%.1f", r->req.per_user_tokens_per_s.mean).s,
            num("%.1f", r->req.per_user_tokens_per_s.p50).s);
    if (r->slo_whatif) fprintf(out, "(what-if SLO: thresholds from the command line)\n");
    print_slo(&r->req, out);
    print_targets(r, out);
    if (r->cost.changing) /* each replica counted over its own life (usage.c) */
        fprintf(out, "utilisation (%d replicas over the run, %s at a time on average):",
                r->n_replicas, num("%.1f", r->cost.mean_replicas).s);
    else
        fprintf(out, "utilisation (%d replica%s):", r->n_replicas, r->n_replicas == 1 ? "" : "s");
    print_use(&r->use, r->n_replicas == 1, cache_used(r), out);
    print_busy_note(out);
    if (r->cost.changing && r->n_replicas > CHANGING_REPLICA_LINES && !r->by_replica)
        fprintf(out, "  (a line for each of the %d replicas: --by replica)\n", r->n_replicas);
    else if (r->n_replicas > 1 || r->by_replica)
        print_replicas(r, out);
    else
        print_memory(&r->use, "  ", out);
    if (cache_used(r)) {
        char evicted[64];
        snprintf(evicted, sizeof evicted, "; %lld blocks of cached content evicted",
                 (long long)r->use.evicted_blocks);
        print_cache(&r->req, evicted, out);
    }
    if (r->use.spec.k > 0) print_spec(&r->use.spec, out);
    if (r->use.lora.slots > 0) print_lora(&r->use.lora, out);
    if (r->use.offload.cpu.tier_bytes > 0) print_offload(&r->use.offload, out);
    print_failures(&r->failures, out);
    print_cost(r, out);
    print_fleet(r, out);
    print_energy(r, out);
    if (by_class)
        for (int i = 0; i < r->n_classes; i++)
            print_class(&r->classes[i], r->warmup_s, cache_used(r), out);
    for (int i = 0; i < r->n_models; i++) print_model(&r->models[i], r->warmup_s, out);
    print_groups(r, cache_used(r), out);
    if (r->by_session) print_turns(r, out);
    if (r->by_replica) print_replica_sections(r, out);
}

void an_report_print(const an_report *r, bool by_class, FILE *out)
{
    report_text t = {r, by_class};
    an_print_wrapped(print_report, &t, out);
}

/* ---- definitions and the SLO curve ---- */

cJSON *an_definitions_json(const an_definition *defs)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < AN_N_DEFINITIONS; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", defs[i].name);
        cJSON_AddStringToObject(o, "formula", defs[i].formula);
        cJSON_AddStringToObject(o, "tools", defs[i].tools);
        cJSON_AddStringToObject(o, "method", defs[i].method);
        cJSON_AddNumberToObject(o, "samples", (double)defs[i].stats.n);
        cJSON *st = an_stats_json(&defs[i].stats);
        cJSON_AddItemToObject(o, "stats", st);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

cJSON *an_chunks_json(const an_chunks *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "speculative", c->speculative);
    add_num(o, "chunks", c->chunks);
    add_num(o, "tokens", c->tokens);
    add_num(o, "tokens_per_chunk", c->tokens_per_chunk);
    return o;
}

typedef struct definitions_text {
    const an_definition *defs;
    const an_chunks *chunks;
} definitions_text;

/* A speculative run's chunks carry several tokens, where the tools part:
 * one line on how each counts them, with the run's own tokens a chunk. */
static void print_chunks(FILE *out, const an_chunks *c)
{
    if (!c || !c->speculative) return;
    fprintf(out, "\nunder speculative decoding a step streams a sequence 1 + its accepted drafts "
                 "as one chunk");
    if (isfinite(c->tokens_per_chunk))
        fprintf(out, " (this run: %.3f tokens a chunk)", c->tokens_per_chunk);
    fprintf(out, ": vLLM's ITL and AIPerf's ICL count one gap a chunk, GenAI-Perf's chunked ITL "
                 "divides it by the chunk's tokens, inference-perf's ITL (with a tokenizer) adds a "
                 "zero gap for each token after the first; TPOT is token-normalised in every "
                 "tool\n");
}

/* Each row is named by the tool and metric it reproduces (vLLM TPOT, not
 * the JSON's id), with the formula, the method and every other tool that
 * agrees under it. */
static void print_definitions(const void *arg, FILE *out)
{
    const definitions_text *t = arg;
    const an_definition *defs = t->defs;
    fprintf(out, "per-token latency and TTFT of one run, as each tool defines and summarises "
                 "them (s)\n\n");
    fprintf(out, "  %-20s", "tool and metric");
    static const char *const cols[] = {"mean", "p50", "p90", "p95", "p99", "p99.9", "max"};
    for (int i = 0; i < 7; i++) fprintf(out, " %10s", cols[i]);
    fprintf(out, "\n");
    for (int i = 0; i < AN_N_DEFINITIONS; i++) {
        const an_stats *s = &defs[i].stats;
        fprintf(out, "  %-20s", an__definition_label(defs[i].name));
        const double v[] = {s->mean, s->p50, s->p90, s->p95, s->p99, s->p999, s->max};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) cell(out, v[k]);
        fprintf(out, "\n    %s; %s; tools: %s\n", defs[i].formula, defs[i].method, defs[i].tools);
    }
    print_chunks(out, t->chunks);
    fprintf(out, "\n(percentiles: linear interpolates between order statistics, as numpy; nearest "
                 "rank is sorted[floor(n p)]; weighted nearest rank is the first value whose "
                 "cumulative weight reaches p)\n");
}

void an_definitions_print(const an_definition *defs, const an_chunks *chunks, FILE *out)
{
    definitions_text t = {defs, chunks};
    an_print_wrapped(print_definitions, &t, out);
}

cJSON *an_curve_json(const an_curve *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "metric", an_metric_names[c->metric]);
    if (c->cls) cJSON_AddStringToObject(o, "class", c->cls);
    cJSON_AddNumberToObject(o, "ended", (double)c->ended);
    cJSON_AddNumberToObject(o, "measured", (double)c->measured);
    cJSON *pts = cJSON_AddArrayToObject(o, "points");
    for (int i = 0; i < c->n_points; i++) {
        cJSON *p = cJSON_CreateObject();
        add_num(p, "threshold_s", c->points[i].threshold_s);
        add_num(p, "attainment", c->points[i].attainment);
        cJSON_AddItemToArray(pts, p);
    }
    cJSON *need = cJSON_AddArrayToObject(o, "needed");
    for (int i = 0; i < 5; i++) {
        cJSON *p = cJSON_CreateObject();
        add_num(p, "attainment", c->needed[i].attainment);
        add_num(p, "threshold_s", c->needed[i].threshold_s);
        cJSON_AddItemToArray(need, p);
    }
    return o;
}

void an_curve_print(const an_curve *c, bool csv, FILE *out)
{
    if (csv) {
        fprintf(out, "threshold_s,attainment\n");
        for (int i = 0; i < c->n_points; i++)
            fprintf(out, "%.9g,%.9g\n", c->points[i].threshold_s, c->points[i].attainment);
        return;
    }
    fprintf(out, "%s attainment by threshold%s%s (%lld requests ended after warm-up, %lld "
                 "measured; rejected and timed-out ones fail)\n\n",
            an_metric_names[c->metric], c->cls ? ", class " : "", c->cls ? c->cls : "",
            (long long)c->ended, (long long)c->measured);
    fprintf(out, "  %14s  %10s\n", "threshold (s)", "attainment");
    for (int i = 0; i < c->n_points; i++)
        fprintf(out, "  %14.6f  %9.2f%%\n", c->points[i].threshold_s,
                100 * c->points[i].attainment);
    fprintf(out, "\nthreshold needed for\n");
    for (int i = 0; i < 5; i++) {
        fprintf(out, "  %6g%% attainment: ", 100 * c->needed[i].attainment);
        if (isnan(c->needed[i].threshold_s)) fprintf(out, "unreachable (too many failed)\n");
        else fprintf(out, "%.6f s\n", c->needed[i].threshold_s);
    }
}
