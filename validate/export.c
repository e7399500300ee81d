/*
 * export.c: a stored run written in a benchmark tool's result format, the
 * inverse of the importers beside it, so that a simulated run can be read
 * by the tool's own scripts (docs/import-formats.md, "Export").
 *
 * What is written is what the report measures: the requests sent at or
 * after warmup_s, in arrival order, each completed one with its stamps
 * (arrival, first token, last token, on the client's clock) and lengths,
 * every other one (rejected, timed out, unfinished, failed) as the tool
 * writes a failed request.  The summaries are the report's own figures
 * (an_report_compute), in the tool's units, so that they agree with
 * `servesim report --json`; what the report has no figure for (a standard
 * deviation, a percentile over every gap between tokens) is computed here
 * from the same requests, as numpy computes it for vLLM.
 *
 * A run stores each request's first and last token, not each token's time:
 * the gaps between tokens are written as the request's TPOT repeated, one
 * gap per token after the first, so that they add up to its E2E - TTFT and
 * their pooled mean is the run's mean ITL.  A real run's gaps vary within
 * a request; these do not, and a percentile of them is a percentile of
 * TPOT weighted by each request's tokens.  No text is simulated: vLLM's
 * generated_texts are empty, GenAI-Perf's chunks carry a placeholder.
 *
 * The file appears whole or not at all: it is written beside its name and
 * renamed over it.
 */
#include "val_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const val_export_formats[] = {"vllm-bench", "genai-perf", NULL};

/* One exported request, its times from the run's start (NAN: never). */
typedef struct xreq {
    double arrival_s, first_s, finish_s;
    int64_t prompt, output;
    bool completed;
    char status[16];
} xreq;

typedef struct xrun {
    an_report r;
    xreq *q;
    size_t n, cap;
    cJSON *scenario;
    char *started_at, *version, *model;
    int64_t run_id;
} xrun;

static void xrun_fini(xrun *x)
{
    an_report_fini(&x->r);
    free(x->q);
    cJSON_Delete(x->scenario);
    free(x->started_at);
    free(x->version);
    free(x->model);
}

/* ---- reading the run ---- */

static double column(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static char *text_column(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return util_xstrdup(t ? (const char *)t : "");
}

/* The requests the report measures over: sent at or after warm-up. */
static int load_requests(sqlite3 *db, xrun *x, util_diag *d)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT arrival_s, first_token_s, finish_s, prompt_tokens, "
                                "output_tokens, status FROM requests WHERE run_id = ?1 AND "
                                "arrival_s >= ?2 ORDER BY arrival_s, id",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(st);
        return util_diag_fail(d, "cannot read the requests: %s", sqlite3_errmsg(db));
    }
    sqlite3_bind_int64(st, 1, x->run_id);
    sqlite3_bind_double(st, 2, x->r.warmup_s);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (x->n == x->cap) {
            x->cap = x->cap ? 2 * x->cap : 256;
            x->q = util_xrealloc(x->q, x->cap * sizeof *x->q);
        }
        xreq *q = &x->q[x->n++];
        q->arrival_s = column(st, 0);
        q->first_s = column(st, 1);
        q->finish_s = column(st, 2);
        q->prompt = sqlite3_column_int64(st, 3);
        q->output = sqlite3_column_int64(st, 4);
        const unsigned char *s = sqlite3_column_text(st, 5);
        snprintf(q->status, sizeof q->status, "%s", s ? (const char *)s : "");
        q->completed = !strcmp(q->status, "completed") && isfinite(q->first_s) &&
                       isfinite(q->finish_s) && q->output >= 1;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE
               ? UTIL_OK
               : util_diag_fail(d, "cannot read the requests: %s", sqlite3_errmsg(db));
}

/* The served model as Hugging Face names it (the catalog entry's `hf`),
 * else its catalog id: vLLM's model_id, GenAI-Perf's request model. */
static char *model_of(sqlite3 *db, const xrun *x, const mdl_catalog *cat)
{
    const char *id = cJSON_GetStringValue(util_json_get(x->scenario, "cluster.model"));
    char *owned = NULL;
    sqlite3_stmt *st = NULL;
    if (!id && sqlite3_prepare_v2(db, "SELECT model FROM replicas WHERE run_id = ?1 LIMIT 1", -1,
                                  &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, x->run_id);
        if (sqlite3_step(st) == SQLITE_ROW) id = owned = text_column(st, 0);
    }
    sqlite3_finalize(st);
    for (int i = 0; id && cat && i < mdl_catalog_model_count(cat); i++) {
        const char *hf =
            cJSON_GetStringValue(util_json_member(mdl_catalog_model_json(cat, i), "hf"));
        if (hf && !strcmp(mdl_catalog_model_at(cat, i)->id, id)) id = hf;
    }
    char *model = util_xstrdup(id && id[0] ? id : "unknown");
    free(owned);
    return model;
}

static int load_run(sqlite3 *db, const char *file, int64_t run_id, const mdl_catalog *cat, xrun *x,
                    util_diag *d)
{
    util_clip_buf b;
    x->run_id = run_id;
    sqlite3_stmt *st = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(db, "SELECT scenario, started_at, version FROM runs WHERE id = ?1", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run_id);
        if ((found = sqlite3_step(st) == SQLITE_ROW)) {
            char *sc = text_column(st, 0);
            x->scenario = cJSON_Parse(sc);
            free(sc);
            x->started_at = text_column(st, 1);
            x->version = text_column(st, 2);
        }
    }
    sqlite3_finalize(st);
    if (!found)
        return util_diag_add(d, "%s: no run with id %lld", util_clip_path(file, &b),
                             (long long)run_id);
    int rc = an_report_compute(db, run_id, &x->r, d);
    if (!rc) rc = load_requests(db, x, d);
    if (!rc) x->model = model_of(db, x, cat);
    return rc;
}

/* ---- what the report has no figure for ---- */

/* A per-request time of a completed request: TTFT, TPOT (NAN for one
 * token), E2E. */
enum { X_TTFT, X_TPOT, X_E2E };
static double time_of(const xreq *q, int which)
{
    if (which == X_TTFT) return q->first_s - q->arrival_s;
    if (which == X_E2E) return q->finish_s - q->arrival_s;
    return q->output >= 2 ? (q->finish_s - q->first_s) / (double)(q->output - 1) : NAN;
}

/* numpy's np.std (the population's) of a metric over the completed
 * requests, each once or, by_gaps, once per gap between its tokens. */
static double weighted_std(const xrun *x, int which, bool by_gaps)
{
    double n = 0, sum = 0, sq = 0;
    for (size_t i = 0; i < x->n; i++) {
        double v = x->q[i].completed ? time_of(&x->q[i], which) : NAN;
        double w = by_gaps ? (double)(x->q[i].output - 1) : 1;
        if (isnan(v) || w <= 0) continue;
        n += w;
        sum += w * v;
    }
    if (n == 0) return NAN;
    double mean = sum / n;
    for (size_t i = 0; i < x->n; i++) {
        double v = x->q[i].completed ? time_of(&x->q[i], which) : NAN;
        double w = by_gaps ? (double)(x->q[i].output - 1) : 1;
        if (!isnan(v) && w > 0) sq += w * (v - mean) * (v - mean);
    }
    return sqrt(sq / n);
}

typedef struct gap {
    double v, w;
} gap;

static int by_value(const void *a, const void *b)
{
    const gap *x = a, *y = b;
    return (x->v > y->v) - (x->v < y->v);
}

/* The k-th (0-based) of the gaps in order, each repeated w times. */
static double gap_at(const gap *g, size_t n, double k)
{
    double seen = 0;
    for (size_t i = 0; i < n; i++) {
        seen += g[i].w;
        if (k < seen) return g[i].v;
    }
    return g[n - 1].v;
}

/* Statistics of every gap between tokens, each request's TPOT repeated
 * output - 1 times: vLLM's itls pooled, its percentiles numpy's linear
 * interpolation between order statistics. */
typedef struct itl_stats {
    double mean, median, std, p90, p99;
} itl_stats;

static itl_stats pooled_gaps(const xrun *x)
{
    itl_stats s = {NAN, NAN, NAN, NAN, NAN};
    gap *g = util_xmalloc((x->n + 1) * sizeof *g);
    size_t n = 0;
    double total = 0, sum = 0;
    for (size_t i = 0; i < x->n; i++) {
        const xreq *q = &x->q[i];
        if (!q->completed || q->output < 2) continue;
        g[n++] = (gap){time_of(q, X_TPOT), (double)(q->output - 1)};
        total += g[n - 1].w;
        sum += q->finish_s - q->first_s;
    }
    if (n > 0) {
        qsort(g, n, sizeof *g, by_value);
        const double qs[3] = {0.5, 0.9, 0.99};
        double *out[3] = {&s.median, &s.p90, &s.p99};
        for (int k = 0; k < 3; k++) {
            double h = (total - 1) * qs[k], lo = floor(h);
            double a = gap_at(g, n, lo), b = gap_at(g, n, fmin(lo + 1, total - 1));
            *out[k] = a + (h - lo) * (b - a);
        }
        s.mean = sum / total;
        s.std = weighted_std(x, X_TPOT, true);
    }
    free(g);
    return s;
}

/* ---- writing ---- */

/* A JSON number; JSON has no NaN: vLLM's 0 for a statistic of nothing. */
static void num(FILE *f, double v)
{
    if (!isfinite(v)) v = 0;
    if (v == floor(v) && fabs(v) < 1e15)
        fprintf(f, "%.0f", v);
    else
        fprintf(f, "%.17g", v);
}

/* A JSON string, escaped as cJSON escapes it. */
static void str(FILE *f, const char *s)
{
    cJSON *j = cJSON_CreateString(s);
    char *t = cJSON_PrintUnformatted(j);
    fputs(t, f);
    free(t);
    cJSON_Delete(j);
}

static void key_num(FILE *f, const char *key, double v)
{
    fprintf(f, ",\n  \"%s\": ", key);
    num(f, v);
}

/* The rate the workload was offered: its arrival.rate_per_s, else the
 * exported requests over their arrivals' span (a trace, a closed loop). */
static double offered_rate(const xrun *x)
{
    const char *text = cJSON_GetStringValue(util_json_get(x->scenario, "workload.arrival.rate_per_s"));
    if (text && !strcmp(text, "inf")) return INFINITY; /* every request due at once */
    double rate = util_json_number(x->scenario, "workload.arrival.rate_per_s", NAN);
    if (isfinite(rate) && rate > 0) return rate;
    double span = x->n > 1 ? x->q[x->n - 1].arrival_s - x->q[0].arrival_s : 0;
    return span > 0 ? (double)(x->n - 1) / span : NAN;
}

/* The client's cap on requests in flight, as vLLM's --max-concurrency: a
 * closed loop's users, or an open loop's max_concurrency; 0: none. */
static double concurrency_of(const xrun *x)
{
    return util_json_number(x->scenario, "workload.arrival.users",
                            util_json_number(x->scenario, "workload.arrival.max_concurrency", 0));
}

static const char *process_of(const xrun *x)
{
    const char *p = cJSON_GetStringValue(util_json_get(x->scenario, "workload.arrival.process"));
    return p ? p : "poisson";
}

/* vLLM's date, "%Y%m%d-%H%M%S", from the run's ISO-8601 start. */
static void vllm_date(const char *iso, char buf[32])
{
    char *o = buf;
    for (const char *p = iso; *p && o < buf + 15; p++) {
        if (*p >= '0' && *p <= '9') *o++ = *p;
        if (o == buf + 8) *o++ = '-';
    }
    *o = 0;
}

/* Each completed request's item of a list; a failed one's is vLLM's 0. */
enum { L_IN, L_OUT, L_TTFT, L_LAT, L_START };
static void vllm_list(FILE *f, const xrun *x, const char *key, int which)
{
    fprintf(f, ",\n  \"%s\": [", key);
    for (size_t i = 0; i < x->n; i++) {
        const xreq *q = &x->q[i];
        double v = which == L_IN      ? (double)q->prompt
                   : which == L_OUT   ? (q->completed ? (double)q->output : 0)
                   : which == L_START ? q->arrival_s
                   : !q->completed    ? 0
                   : which == L_TTFT  ? time_of(q, X_TTFT)
                                      : time_of(q, X_E2E);
        if (i) fputs(", ", f);
        num(f, v);
    }
    fputc(']', f);
}

/* Each request's gaps between tokens: its TPOT, once per token after the
 * first (see the file's comment); [] for a failed request. */
static void vllm_itls(FILE *f, const xrun *x)
{
    fputs(",\n  \"itls\": [", f);
    for (size_t i = 0; i < x->n; i++) {
        const xreq *q = &x->q[i];
        fputs(i ? ", [" : "[", f);
        for (int64_t k = 0; q->completed && k + 1 < q->output; k++) {
            if (k) fputs(", ", f);
            num(f, time_of(q, X_TPOT));
        }
        fputc(']', f);
    }
    fputc(']', f);
}

static const char *failure_of(const xreq *q)
{
    if (!strcmp(q->status, "rejected")) return "servesim: rejected (the request could never fit)";
    if (!strcmp(q->status, "timed_out")) return "servesim: timed out (workload.timeout_s)";
    if (!strcmp(q->status, "unfinished"))
        return "servesim: unfinished when the run was interrupted";
    return "servesim: failed";
}

static void vllm_strings(FILE *f, const xrun *x, bool errors)
{
    fprintf(f, ",\n  \"%s\": [", errors ? "errors" : "generated_texts");
    for (size_t i = 0; i < x->n; i++) {
        if (i) fputs(", ", f);
        str(f, errors && !x->q[i].completed ? failure_of(&x->q[i]) : "");
    }
    fputc(']', f);
}

/* One metric's statistics as vLLM names them: mean, median, std and the
 * percentiles of --metric-percentiles 90,99, in ms. */
static void vllm_stats(FILE *f, const char *name, const an_stats *s, double std)
{
    char key[48];
    static const char *const stat[] = {"mean", "median", "std", "p90", "p99"};
    double v[] = {s->mean, s->p50, std, s->p90, s->p99};
    for (int k = 0; k < 5; k++) {
        snprintf(key, sizeof key, "%s_%s_ms", stat[k], name);
        key_num(f, key, s->n ? v[k] * 1e3 : 0);
    }
}

static void write_vllm(FILE *f, const xrun *x)
{
    const an_section *s = &x->r.req;
    char date[32], *label = util_xasprintf("servesim run %lld: %s", (long long)x->run_id,
                                           x->r.name ? x->r.name : "");
    vllm_date(x->started_at, date);
    const char *process = process_of(x);
    bool closed = !strcmp(process, "closed");
    double rate = closed ? NAN : offered_rate(x),
           cv = util_json_number(x->scenario, "workload.arrival.cv", 1);
    fprintf(f,
            "{\n  \"date\": \"%s\",\n  \"endpoint_type\": \"servesim\",\n"
            "  \"backend\": \"servesim\",\n  \"label\": ",
            date);
    str(f, label);
    fputs(",\n  \"model_id\": ", f);
    str(f, x->model);
    fputs(",\n  \"tokenizer_id\": ", f);
    str(f, x->model);
    key_num(f, "num_prompts", (double)x->n);
    if (isfinite(rate))
        key_num(f, "request_rate", rate);
    else
        fputs(",\n  \"request_rate\": \"inf\"", f);
    key_num(f, "burstiness", !strcmp(process, "gamma") && cv > 0 ? 1 / (cv * cv) : 1);
    if (concurrency_of(x) >= 1)
        key_num(f, "max_concurrency", concurrency_of(x));
    else
        fputs(",\n  \"max_concurrency\": null", f);
    key_num(f, "duration", s->window_s);
    key_num(f, "completed", (double)s->measured);
    key_num(f, "failed", (double)x->n - (double)s->measured);
    key_num(f, "total_input_tokens", s->input_tokens);
    key_num(f, "total_output_tokens", s->output_tokens);
    key_num(f, "request_throughput", s->requests_per_s);
    fputs(",\n  \"request_goodput\": null", f);
    key_num(f, "output_throughput", s->output_tokens_per_s);
    key_num(f, "total_token_throughput", s->input_tokens_per_s + s->output_tokens_per_s);
    vllm_list(f, x, "input_lens", L_IN);
    vllm_list(f, x, "output_lens", L_OUT);
    vllm_list(f, x, "ttfts", L_TTFT);
    vllm_itls(f, x);
    vllm_list(f, x, "latencies", L_LAT);
    vllm_list(f, x, "start_times", L_START);
    vllm_strings(f, x, false);
    vllm_strings(f, x, true);
    vllm_stats(f, "ttft", &s->ttft, weighted_std(x, X_TTFT, false));
    vllm_stats(f, "tpot", &s->tpot, weighted_std(x, X_TPOT, false));
    itl_stats g = pooled_gaps(x);
    an_stats itl = {
        .n = isnan(g.mean) ? 0 : 1, .mean = g.mean, .p50 = g.median, .p90 = g.p90, .p99 = g.p99};
    vllm_stats(f, "itl", &itl, g.std);
    vllm_stats(f, "e2el", &s->e2e, weighted_std(x, X_E2E, false));
    fputs("\n}\n", f);
    free(label);
}

/* ---- GenAI-Perf's profile_export.json ---- */

static long long ns(double s)
{
    return llround(s * 1e9);
}

/* A completed request: a streamed chunk per token, spread evenly from its
 * first token to its last (its TPOT apart), then the usage chunk and
 * [DONE] at its last. */
static void genai_stamps(FILE *f, const xreq *q)
{
    fputs("\"response_timestamps\": [", f);
    for (int64_t k = 0; k < q->output; k++) {
        double t = k == 0               ? q->first_s
                   : k + 1 == q->output ? q->finish_s
                                        : q->first_s + (double)k * time_of(q, X_TPOT);
        fprintf(f, "%s%lld", k ? ", " : "", ns(t));
    }
    fprintf(f, ", %lld, %lld], ", ns(q->finish_s), ns(q->finish_s));
    fputs("\"response_outputs\": [", f);
    for (int64_t k = 0; k < q->output; k++)
        fprintf(f,
                "%s{\"response\": \"data: {\\\"choices\\\": [{\\\"index\\\": 0, \\\"delta\\\": "
                "{\\\"content\\\": \\\" x\\\"}}]}\\n\\n\"}",
                k ? ", " : "");
    fprintf(f,
            ", {\"response\": \"data: {\\\"choices\\\": [], \\\"usage\\\": {\\\"prompt_tokens\\\": "
            "%lld, \\\"completion_tokens\\\": %lld, \\\"total_tokens\\\": %lld}}\\n\\n\"}, "
            "{\"response\": \"data: [DONE]\\n\\n\"}]",
            (long long)q->prompt, (long long)q->output, (long long)(q->prompt + q->output));
}

/* A failed request: one error body, stamped when it was sent, with its
 * prompt's usage (GenAI-Perf's readers need a prompt length). */
static void genai_failed(FILE *f, const xreq *q)
{
    char *msg = util_xasprintf("{\"error\": {\"message\": \"%s\"}, \"usage\": {\"prompt_tokens\": "
                               "%lld, \"completion_tokens\": 0, \"total_tokens\": %lld}}",
                               failure_of(q), (long long)q->prompt, (long long)q->prompt);
    fprintf(f, "\"response_timestamps\": [%lld], \"response_outputs\": [{\"response\": ",
            ns(q->arrival_s));
    str(f, msg);
    fputs("}]", f);
    free(msg);
}

static void write_genai(FILE *f, const xrun *x)
{
    /* GenAI-Perf runs either a concurrency or a request rate: a closed loop,
     * or every request due at once under a cap, is the former */
    bool closed = !strcmp(process_of(x), "closed") ||
                  (isinf(offered_rate(x)) && concurrency_of(x) >= 1);
    fputs("{\n  \"experiments\": [{\n    \"experiment\": {\"mode\": ", f);
    fputs(closed ? "\"concurrency\", \"value\": " : "\"request_rate\", \"value\": ", f);
    num(f, closed ? concurrency_of(x) : offered_rate(x));
    fputs("},\n    \"requests\": [", f);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "model", x->model);
    cJSON_AddBoolToObject(body, "stream", true);
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(body, "stream_options"), "include_usage", true);
    char *payload = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    double end = 0;
    for (size_t i = 0; i < x->n; i++) {
        const xreq *q = &x->q[i];
        fprintf(f,
                "%s\n      {\"timestamp\": %lld, \"request_inputs\": {\"payload\": ", i ? "," : "",
                ns(q->arrival_s));
        str(f, payload);
        fputs("}, ", f);
        if (q->completed)
            genai_stamps(f, q);
        else
            genai_failed(f, q);
        fputc('}', f);
        end = fmax(end, q->completed ? q->finish_s : q->arrival_s);
    }
    fprintf(f, "\n    ],\n    \"window_boundaries\": [%lld, %lld]\n  }],\n",
            x->n ? ns(x->q[0].arrival_s) : 0, ns(end));
    fputs("  \"version\": ", f);
    char *version = util_xasprintf("servesim %s", x->version);
    str(f, version);
    fputs(",\n  \"service_kind\": \"openai\",\n  \"endpoint\": \"v1/chat/completions\"\n}\n", f);
    free(version);
    free(payload);
}

/* ---- the file ---- */

static int format_index(const char *format, util_diag *d)
{
    for (int i = 0; val_export_formats[i]; i++)
        if (!strcmp(format, val_export_formats[i])) return i;
    util_clip_buf b;
    const char *near = util_closest(format, val_export_formats);
    util_diag_add(d, "--format %s: expected vllm-bench or genai-perf%s%s%s", util_clip(format, &b),
                  near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
    return -1;
}

/* x written to path whole or not at all: beside it, then renamed. */
static int write_file(const xrun *x, int format, const char *path, util_diag *d)
{
    util_clip_buf b;
    char *tmp = util_xasprintf("%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    int rc = UTIL_OK;
    if (!f) {
        rc = util_diag_add(d, "cannot write %s: %s", util_clip_path(path, &b), strerror(errno));
    } else {
        if (format == 0)
            write_vllm(f, x);
        else
            write_genai(f, x);
        /* | rather than ||: the file is closed whether or not a write failed */
        if (ferror(f) | fclose(f))
            rc = util_diag_add(d, "cannot write %s: %s", util_clip_path(path, &b), strerror(errno));
        else if (rename(tmp, path) != 0)
            rc = util_diag_add(d, "cannot write %s: %s", util_clip_path(path, &b), strerror(errno));
        if (rc) remove(tmp);
    }
    free(tmp);
    return rc;
}

int val_export(sqlite3 *db, const char *file, int64_t run_id, const char *format,
               const mdl_catalog *cat, const char *path, util_diag *d)
{
    int f = format_index(format, d);
    if (f < 0) return UTIL_EINPUT;
    xrun x = {0};
    int rc = load_run(db, file, run_id, cat, &x, d);
    if (!rc) rc = write_file(&x, f, path, d);
    xrun_fini(&x);
    return rc;
}
