/*
 * output.c: the report as JSON (the contract scripts rely on) and as a
 * readable table.  Both print the same numbers; NaN (nothing measured)
 * becomes null in JSON and "-" in text.
 */
#include "an.h"

#include <math.h>

static void add_num(cJSON *o, const char *key, double v)
{
    if (isnan(v)) cJSON_AddNullToObject(o, key);
    else cJSON_AddNumberToObject(o, key, v);
}

static cJSON *stats_json(const an_stats *s)
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
    cJSON_AddNumberToObject(req, "timed_out", (double)s->timed_out);
    cJSON_AddNumberToObject(req, "unfinished", (double)s->unfinished);
    cJSON_AddNumberToObject(req, "preempted", (double)s->preempted);
    cJSON_AddNumberToObject(req, "preemptions", (double)s->preemptions);

    cJSON_AddItemToObject(o, "ttft_s", stats_json(&s->ttft));
    cJSON_AddItemToObject(o, "tpot_s", stats_json(&s->tpot));
    cJSON_AddItemToObject(o, "tpot_incl_ttft_s", stats_json(&s->tpot_incl_ttft));
    cJSON_AddItemToObject(o, "e2e_s", stats_json(&s->e2e));
    cJSON_AddItemToObject(o, "queue_s", stats_json(&s->queue));

    cJSON *tp = cJSON_AddObjectToObject(o, "throughput");
    add_num(tp, "window_s", s->window_s);
    add_num(tp, "requests_per_s", s->requests_per_s);
    add_num(tp, "input_tokens_per_s", s->input_tokens_per_s);
    add_num(tp, "output_tokens_per_s", s->output_tokens_per_s);
    cJSON_AddItemToObject(tp, "output_tokens_per_s_per_user", stats_json(&s->per_user_tokens_per_s));

    cJSON *slo = cJSON_AddObjectToObject(o, "slo");
    add_num(slo, "ttft_s", s->slo.ttft_s);
    add_num(slo, "tpot_s", s->slo.tpot_s);
    add_num(slo, "e2e_s", s->slo.e2e_s);
    add_num(slo, "attainment", s->attainment);
    add_num(slo, "goodput_requests_per_s", s->goodput_requests_per_s);
}

static void tasks_json(cJSON *o, const an_tasks *t)
{
    if (t->count == 0) return;
    cJSON *tk = cJSON_AddObjectToObject(o, "tasks");
    cJSON_AddNumberToObject(tk, "count", (double)t->count);
    cJSON_AddNumberToObject(tk, "completed", (double)t->completed);
    cJSON_AddNumberToObject(tk, "failed", (double)t->failed);
    cJSON_AddNumberToObject(tk, "unfinished", (double)t->unfinished);
    cJSON_AddItemToObject(tk, "e2e_s", stats_json(&t->e2e));
    add_num(tk, "calls_per_task", t->calls_per_task);
    add_num(tk, "any_slow_fraction", t->any_slow_fraction);
}

cJSON *an_report_json(const an_report *r, bool by_class)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *run = cJSON_AddObjectToObject(root, "run");
    cJSON_AddNumberToObject(run, "id", (double)r->run_id);
    cJSON_AddStringToObject(run, "name", r->name);
    cJSON_AddNumberToObject(run, "seed", (double)r->seed);
    cJSON_AddStringToObject(run, "status", r->status);
    add_num(run, "sim_time_s", r->sim_time_s);
    add_num(run, "wall_time_s", r->wall_time_s);
    cJSON_AddNumberToObject(run, "events", (double)r->events);

    section_json(root, &r->req);
    tasks_json(root, &r->tasks);

    cJSON *u = cJSON_AddObjectToObject(root, "utilisation");
    add_num(u, "busy_fraction", r->busy_fraction);
    add_num(u, "mean_batch", r->mean_batch);
    add_num(u, "mfu", r->mfu);
    add_num(u, "mbu", r->mbu);
    add_num(u, "kv_peak_fraction", r->kv_peak_fraction);

    if (r->has_classes || by_class) {
        cJSON *cls = cJSON_AddObjectToObject(root, "classes");
        for (int i = 0; i < r->n_classes; i++) {
            cJSON *c = cJSON_AddObjectToObject(cls, r->classes[i].name);
            section_json(c, &r->classes[i].req);
            tasks_json(c, &r->classes[i].tasks);
        }
    }
    return root;
}

/* ---- text ---- */

static void cell(FILE *out, double v)
{
    if (isnan(v)) fprintf(out, " %10s", "-");
    else fprintf(out, " %10.4f", v);
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
    if (isnan(v)) fprintf(out, "%s -", label);
    else fprintf(out, "%s %.1f%%", label, 100 * v);
}

static void print_slo(const an_section *s, FILE *out)
{
    const double thr[] = {s->slo.ttft_s, s->slo.tpot_s, s->slo.e2e_s};
    if (isnan(s->attainment)) {
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
    pct(out, ": attainment", s->attainment);
    fprintf(out, ", goodput %.3f req/s\n", s->goodput_requests_per_s);
}

static void print_counts(const an_section *s, double warmup_s, FILE *out)
{
    fprintf(out, "requests: %lld arrived, %lld completed, %lld measured", (long long)s->arrived,
            (long long)s->completed, (long long)s->measured);
    if (warmup_s > 0) fprintf(out, " (after %g s warm-up)", warmup_s);
    fprintf(out, ", %lld rejected", (long long)s->rejected);
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
    print_counts(s, warmup_s, out);
    fprintf(out, "\n%s", latency_head);
    stats_line(out, "ttft", &s->ttft);
    stats_line(out, "tpot", &s->tpot);
    stats_line(out, "tpot incl. ttft", &s->tpot_incl_ttft);
    stats_line(out, "e2e", &s->e2e);
    stats_line(out, "queue", &s->queue);
}

static void print_throughput(const an_section *s, FILE *out)
{
    fprintf(out, "throughput over %.1f s: %.3f req/s, %.1f input tok/s, %.1f output tok/s\n",
            s->window_s, s->requests_per_s, s->input_tokens_per_s, s->output_tokens_per_s);
}

static void print_tasks(const an_tasks *t, FILE *out)
{
    if (t->count == 0) return;
    fprintf(out, "tasks: %lld (%lld completed, %lld failed", (long long)t->count,
            (long long)t->completed, (long long)t->failed);
    if (t->unfinished) fprintf(out, ", %lld unfinished", (long long)t->unfinished);
    fprintf(out, "), %.2f calls each", t->calls_per_task);
    pct(out, ", with a slow call", t->any_slow_fraction);
    fprintf(out, "\n");
    stats_line(out, "task e2e", &t->e2e);
}

static void print_class(const an_class *c, double warmup_s, FILE *out)
{
    fprintf(out, "\nclass \"%s\"\n", c->name);
    print_section(&c->req, warmup_s, out);
    print_tasks(&c->tasks, out);
    print_throughput(&c->req, out);
    print_slo(&c->req, out);
}

void an_report_print(const an_report *r, bool by_class, FILE *out)
{
    fprintf(out, "run %lld \"%s\" (seed %lld): %s, %.1f s simulated in %.3g s (%lld events)\n",
            (long long)r->run_id, r->name, (long long)r->seed, r->status, r->sim_time_s,
            r->wall_time_s, (long long)r->events);
    print_section(&r->req, r->warmup_s, out);
    fprintf(out, "  (tpot excludes the first token: vLLM TPOT, GenAI-Perf ITL; tpot incl. ttft is "
                 "e2e / output tokens: LLMPerf ITL, GuideLLM TPOT)\n");
    print_tasks(&r->tasks, out);
    fprintf(out, "\n");
    print_throughput(&r->req, out);
    fprintf(out, "per user (1 / tpot): mean %.1f tok/s, p50 %.1f tok/s\n",
            r->req.per_user_tokens_per_s.mean, r->req.per_user_tokens_per_s.p50);
    print_slo(&r->req, out);
    fprintf(out, "utilisation (%d replica%s):", r->replicas, r->replicas == 1 ? "" : "s");
    pct(out, " busy", r->busy_fraction);
    fprintf(out, ", mean batch %.1f", r->mean_batch);
    pct(out, ", MFU", r->mfu);
    pct(out, ", MBU", r->mbu);
    pct(out, ", KV peak", r->kv_peak_fraction);
    fprintf(out, "\n");
    if (by_class)
        for (int i = 0; i < r->n_classes; i++) print_class(&r->classes[i], r->warmup_s, out);
}
