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

cJSON *an_report_json(const an_report *r)
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

    cJSON *req = cJSON_AddObjectToObject(root, "requests");
    cJSON_AddNumberToObject(req, "arrived", (double)r->arrived);
    cJSON_AddNumberToObject(req, "completed", (double)r->completed);
    cJSON_AddNumberToObject(req, "measured", (double)r->measured);
    cJSON_AddNumberToObject(req, "rejected", (double)r->rejected);
    cJSON_AddNumberToObject(req, "unfinished", (double)r->unfinished);
    cJSON_AddNumberToObject(req, "preempted", (double)r->preempted);
    cJSON_AddNumberToObject(req, "preemptions", (double)r->preemptions);

    cJSON_AddItemToObject(root, "ttft_s", stats_json(&r->ttft));
    cJSON_AddItemToObject(root, "tpot_s", stats_json(&r->tpot));
    cJSON_AddItemToObject(root, "tpot_incl_ttft_s", stats_json(&r->tpot_incl_ttft));
    cJSON_AddItemToObject(root, "e2e_s", stats_json(&r->e2e));
    cJSON_AddItemToObject(root, "queue_s", stats_json(&r->queue));

    cJSON *tp = cJSON_AddObjectToObject(root, "throughput");
    add_num(tp, "window_s", r->window_s);
    add_num(tp, "requests_per_s", r->requests_per_s);
    add_num(tp, "input_tokens_per_s", r->input_tokens_per_s);
    add_num(tp, "output_tokens_per_s", r->output_tokens_per_s);
    cJSON_AddItemToObject(tp, "output_tokens_per_s_per_user", stats_json(&r->per_user_tokens_per_s));

    cJSON *slo = cJSON_AddObjectToObject(root, "slo");
    add_num(slo, "ttft_s", r->slo_ttft_s);
    add_num(slo, "tpot_s", r->slo_tpot_s);
    add_num(slo, "e2e_s", r->slo_e2e_s);
    add_num(slo, "attainment", r->attainment);
    add_num(slo, "goodput_requests_per_s", r->goodput_requests_per_s);

    cJSON *u = cJSON_AddObjectToObject(root, "utilisation");
    add_num(u, "busy_fraction", r->busy_fraction);
    add_num(u, "mean_batch", r->mean_batch);
    add_num(u, "mfu", r->mfu);
    add_num(u, "mbu", r->mbu);
    add_num(u, "kv_peak_fraction", r->kv_peak_fraction);
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

static void print_slo(const an_report *r, FILE *out)
{
    if (!r->slo_set) {
        fprintf(out, "slo: none set (add \"slo\": {\"ttft_s\", \"tpot_s\", \"e2e_s\"})\n");
        return;
    }
    fprintf(out, "slo:");
    const char *names[] = {"ttft", "tpot", "e2e"};
    const double thr[] = {r->slo_ttft_s, r->slo_tpot_s, r->slo_e2e_s};
    const char *sep = " ";
    for (int i = 0; i < 3; i++)
        if (!isnan(thr[i])) {
            fprintf(out, "%s%s <= %g s", sep, names[i], thr[i]);
            sep = ", ";
        }
    pct(out, ": attainment", r->attainment);
    fprintf(out, ", goodput %.3f req/s\n", r->goodput_requests_per_s);
}

void an_report_print(const an_report *r, FILE *out)
{
    fprintf(out, "run %lld \"%s\" (seed %lld): %s, %.1f s simulated in %.3g s (%lld events)\n",
            (long long)r->run_id, r->name, (long long)r->seed, r->status, r->sim_time_s,
            r->wall_time_s, (long long)r->events);
    fprintf(out, "requests: %lld arrived, %lld completed, %lld measured", (long long)r->arrived,
            (long long)r->completed, (long long)r->measured);
    if (r->warmup_s > 0) fprintf(out, " (after %g s warm-up)", r->warmup_s);
    fprintf(out, ", %lld rejected", (long long)r->rejected);
    if (r->unfinished) fprintf(out, ", %lld unfinished", (long long)r->unfinished);
    if (r->preemptions)
        fprintf(out, ", %lld preempted (%lld preemptions)", (long long)r->preempted,
                (long long)r->preemptions);
    fprintf(out, "\n\nlatency (s)              mean        p50        p90        p95        p99"
                 "      p99.9        max\n");
    stats_line(out, "ttft", &r->ttft);
    stats_line(out, "tpot", &r->tpot);
    stats_line(out, "tpot incl. ttft", &r->tpot_incl_ttft);
    stats_line(out, "e2e", &r->e2e);
    stats_line(out, "queue", &r->queue);
    fprintf(out, "  (tpot excludes the first token: vLLM TPOT, GenAI-Perf ITL; tpot incl. ttft is "
                 "e2e / output tokens: LLMPerf ITL, GuideLLM TPOT)\n\n");
    fprintf(out, "throughput over %.1f s: %.3f req/s, %.1f input tok/s, %.1f output tok/s\n",
            r->window_s, r->requests_per_s, r->input_tokens_per_s, r->output_tokens_per_s);
    fprintf(out, "per user (1 / tpot): mean %.1f tok/s, p50 %.1f tok/s\n",
            r->per_user_tokens_per_s.mean, r->per_user_tokens_per_s.p50);
    print_slo(r, out);
    fprintf(out, "utilisation (%d replica%s):", r->replicas, r->replicas == 1 ? "" : "s");
    pct(out, " busy", r->busy_fraction);
    fprintf(out, ", mean batch %.1f", r->mean_batch);
    pct(out, ", MFU", r->mfu);
    pct(out, ", MBU", r->mbu);
    pct(out, ", KV peak", r->kv_peak_fraction);
    fprintf(out, "\n");
}
