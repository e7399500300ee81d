/*
 * import_genai_perf.c: GenAI-Perf's exports, read as
 * triton-inference-server/perf_analyzer writes and parses them
 * (genai-perf/genai_perf/profile_data_parser/llm_profile_data_parser.py at
 * commit 00168fe73c03c54193c0ccf451ae44ed31e9a356; the aggregate file's
 * layout from genai_perf/export_data/json_exporter.py at
 * 09628cd6d6e31409c5f9adee3bbefdd2d58ef16a and genai_perf/metrics/statistics.py
 * at 0518df11a864f8a9c2298b7447d4aebb4d8323d5).  AIPerf's records, below,
 * as its example artifacts (ai-dynamo/aiperf at
 * ce7ed0826ecca084e6daafc850107df9bf8b7a47) and its inter_token_latency
 * metric (aiperf/metrics/types/inter_token_latency_metric.py at
 * 449172727dc5c7aefaab6cbfccfe58bfe9aee7d6) have them.
 *
 * profile_export.json is perf_analyzer's: `experiments[]`, each with
 * `experiment` {mode, value} (concurrency or request_rate) and `requests[]`
 * {timestamp (ns), request_inputs, response_timestamps (ns), response_outputs}.
 * One run an experiment, on the client's clock: a request arrives at its
 * timestamp (from the experiment's first), its TTFT and E2E run to its first
 * and last response that carries output -- GenAI-Perf drops the rest (an
 * SSE `[DONE]`, a role-only or usage-only chunk) before it measures, and so
 * does this reader; a request with no such response, which GenAI-Perf skips,
 * is kept as failed.  The ns stamps, as doubles, keep 0.25 us.
 *
 * GenAI-Perf counts tokens by tokenizing the text it sent and received, and
 * the file holds no count; none is invented here.  Output tokens are, in
 * order: the server's usage.completion_tokens where a streamed chunk carries
 * it, the output_ids of the Triton C API, else the number of responses with
 * output -- a token count only where the server streams one token a chunk,
 * which the run's name then says.  Prompt tokens are usage.prompt_tokens,
 * the C API's input_ids, else the mean `input_sequence_length` of the
 * aggregate file beside the export (PREFIX_genai_perf.json), for every
 * request, which the name says too; with neither the import stops.
 *
 * That aggregate file -- {time_to_first_token, inter_token_latency,
 * request_latency: {unit "ms", avg, p50, p90, p99, ...},
 * output_token_throughput: {avg}, input_config} -- gives a lone
 * experiment its tool's aggregates and its model (input_config.model).
 * GenAI-Perf's inter_token_latency is a request's (E2E - TTFT) / (tokens -
 * 1) summarised over requests: servesim's TPOT, not the pooled ITL.
 *
 * AIPerf, GenAI-Perf's successor, writes a record a line (profile_export.jsonl:
 * metadata.timestamp_ns, metrics.{ttft, request_latency, input_sequence_length,
 * output_sequence_length}: {value, unit}, error) and the aggregates beside it
 * (PREFIX_aiperf.json: records.{ttft, inter_token_latency, request_latency,
 * output_token_throughput}); a warm-up's records are skipped, as AIPerf's
 * aggregates skip them.  Its runs are of this format, named `aiperf ...`.
 */
#include "val_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct reader {
    const char *path;
    util_diag *d;
    const cJSON *agg; /* the aggregate file, or NULL */
    double mean_isl;  /* its input_sequence_length.avg, or NAN */
    bool counted_responses, mean_prompts;
} reader;

/* ---- the aggregate file ---- */

/* The time unit of a statistic, in seconds; NAN for one not known. */
static double unit_of(const cJSON *stat)
{
    const char *u = cJSON_GetStringValue(util_json_member(stat, "unit"));
    if (!u || !strcmp(u, "ms")) return 1e-3;
    if (!strcmp(u, "ns")) return 1e-9;
    if (!strcmp(u, "us")) return 1e-6;
    if (!strcmp(u, "s") || !strcmp(u, "sec")) return 1;
    return NAN;
}

/* The statistics an aggregate file names: time to first token, the
 * per-request (E2E - TTFT) / (tokens - 1), E2E, and output throughput. */
typedef struct names {
    const char *ttft, *tpot, *e2e, *tps;
} names;
static const names genai_perf_names = {"time_to_first_token", "inter_token_latency",
                                       "request_latency", "output_token_throughput"};
static const names aiperf_names = {"ttft", "inter_token_latency", "request_latency",
                                   "output_token_throughput"};

static int aggregates(val_run *m, const cJSON *agg, const names *nm, const char *path,
                      util_diag *d)
{
    util_clip_buf b;
    const struct {
        const char *key;
        int metric[4]; /* avg, p50, p90, p99 */
    } ms[] = {
        {nm->ttft, {VAL_TTFT_MEAN, VAL_TTFT_P50, VAL_TTFT_P90, VAL_TTFT_P99}},
        {nm->tpot, {VAL_TPOT_MEAN, VAL_TPOT_P50, VAL_TPOT_P90, VAL_TPOT_P99}},
        {nm->e2e, {VAL_E2E_MEAN, VAL_E2E_P50, VAL_E2E_P90, VAL_E2E_P99}},
    };
    static const char *const stats[4] = {"avg", "p50", "p90", "p99"};
    for (size_t k = 0; k < sizeof ms / sizeof *ms; k++) {
        const cJSON *s = util_json_member(agg, ms[k].key);
        if (!s) continue;
        double unit = unit_of(s);
        if (!cJSON_IsObject(s) || isnan(unit))
            return util_diag_add(d, "%s: %s: expected {\"unit\": \"ms\", \"avg\": ...}",
                                 util_clip_path(path, &b), ms[k].key);
        for (int j = 0; j < 4; j++) {
            const cJSON *v = util_json_member(s, stats[j]);
            if (v && !cJSON_IsNull(v) &&
                (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0))
                return util_diag_add(d, "%s: %s.%s: expected a number >= 0",
                                     util_clip_path(path, &b), ms[k].key, stats[j]);
            val__set_metric(m, ms[k].metric[j], v, unit);
        }
    }
    val__set_metric(m, VAL_OUTPUT_TPS, util_json_member(util_json_member(agg, nm->tps), "avg"), 1);
    return UTIL_OK;
}

/* The model input_config names (a string, or a list of them). */
static void settings(val_run *m, const cJSON *agg, const mdl_catalog *cat)
{
    const cJSON *v = util_json_get(agg, "input_config.model");
    if (cJSON_IsArray(v)) v = cJSON_GetArrayItem(v, 0);
    const char *repo = cJSON_GetStringValue(v);
    const char *model = repo ? val__model_of_repo(cat, repo) : NULL;
    if (model) val__record_string(m, "cluster.model", model);
}

/* PREFIX_genai_perf.json beside PREFIX.json, if it is there. */
static int read_beside(const char *path, cJSON **agg, util_diag *d)
{
    size_t n = strlen(path);
    int stem = n > 5 && !strcmp(path + n - 5, ".json") ? (int)n - 5 : (int)n;
    char *p = util_xasprintf("%.*s_genai_perf.json", stem, path);
    struct stat st;
    int rc = stat(p, &st) == 0 ? util_json_read_data(p, agg, d) : UTIL_OK;
    free(p);
    return rc;
}

/* ---- one response ---- */

typedef struct response {
    bool output;              /* it carries output: a token or more */
    double prompt, completion; /* usage, where it says; else NAN */
    double ids;                /* the C API's output_ids; NAN without */
} response;

/* Whether an OpenAI object has text out (completions, chat chunk or reply),
 * and its usage. */
static void openai_object(const cJSON *o, response *r)
{
    const cJSON *c = cJSON_GetArrayItem(util_json_member(o, "choices"), 0);
    const char *text = cJSON_GetStringValue(util_json_member(c, "text"));
    if (!text) text = cJSON_GetStringValue(util_json_get(c, "delta.content"));
    if (!text) text = cJSON_GetStringValue(util_json_get(c, "message.content"));
    if (!text) text = cJSON_GetStringValue(util_json_member(o, "text_output")); /* Triton generate */
    r->output |= text && text[0];
    double p = util_json_number(o, "usage.prompt_tokens", NAN);
    double t = util_json_number(o, "usage.completion_tokens", NAN);
    if (!isnan(p)) r->prompt = p;
    if (!isnan(t)) r->completion = t;
}

/* A response body: SSE events ("data: {...}", blank-line separated, several
 * at once when perf_analyzer read them together) or one JSON object. */
static void body(const char *text, response *r)
{
    char *copy = util_xstrdup(text), *save = NULL;
    for (char *ev = strtok_r(copy, "\n", &save); ev; ev = strtok_r(NULL, "\n", &save)) {
        ev += strspn(ev, " \t\r");
        if (!strncmp(ev, "data:", 5)) ev += 5 + strspn(ev + 5, " ");
        else if (*ev != '{') continue; /* an SSE comment, event: or id: */
        cJSON *o = cJSON_Parse(ev);
        if (o) openai_object(o, r);
        cJSON_Delete(o);
    }
    free(copy);
}

static response response_of(const cJSON *out)
{
    response r = {.prompt = NAN, .completion = NAN, .ids = NAN};
    const cJSON *ids = util_json_member(out, "output_ids");
    const char *text = cJSON_GetStringValue(util_json_member(out, "response"));
    if (ids) {
        r.ids = cJSON_IsArray(ids) ? cJSON_GetArraySize(ids) : cJSON_IsNumber(ids) ? 1 : 0;
        r.output = r.ids > 0;
    } else if (text) {
        body(text, &r);
    } else {
        openai_object(out, &r);
    }
    return r;
}

/* ---- one request ---- */

/* The stamps of request j of experiment e: timestamp and each response's. */
static int stamps(const reader *rd, int e, int j, const cJSON *q, double *t0,
                  const cJSON **times, const cJSON **outs)
{
    util_clip_buf b;
    const char *p = util_clip_path(rd->path, &b);
    if (!cJSON_IsObject(q))
        return util_diag_add(rd->d, "%s: experiments[%d].requests[%d]: expected an object", p, e, j);
    const cJSON *t = util_json_member(q, "timestamp");
    *times = util_json_member(q, "response_timestamps");
    *outs = util_json_member(q, "response_outputs");
    if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble) || t->valuedouble < 0)
        return util_diag_add(rd->d, "%s: experiments[%d].requests[%d].timestamp: expected a "
                                    "number >= 0 (ns)", p, e, j);
    if (!cJSON_IsArray(*times) || !cJSON_IsArray(*outs))
        return util_diag_add(rd->d, "%s: experiments[%d].requests[%d]: expected the lists "
                                    "response_timestamps and response_outputs", p, e, j);
    if (cJSON_GetArraySize(*times) != cJSON_GetArraySize(*outs))
        return util_diag_add(rd->d, "%s: experiments[%d].requests[%d]: response_timestamps has "
                                    "%d items but response_outputs has %d",
                             p, e, j, cJSON_GetArraySize(*times), cJSON_GetArraySize(*outs));
    *t0 = t->valuedouble;
    return UTIL_OK;
}

/* The prompt's tokens when the request says: the C API's input_ids. */
static double input_ids(const cJSON *q)
{
    const cJSON *ids = util_json_get(q, "request_inputs.input_ids");
    return cJSON_IsArray(ids) ? cJSON_GetArraySize(ids) : NAN;
}

static int request(val_run *m, reader *rd, int e, int j, const cJSON *q)
{
    util_clip_buf b;
    const cJSON *times = NULL, *outs = NULL;
    double t0 = 0, first = NAN, last = NAN, prompt = input_ids(q), completion = NAN, ids = 0;
    int rc = stamps(rd, e, j, q, &t0, &times, &outs), k = 0, n_out = 0;
    if (rc) return rc;
    for (const cJSON *t = times->child, *o = outs->child; t && o; t = t->next, o = o->next, k++) {
        if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble) || t->valuedouble < t0)
            return util_diag_add(rd->d, "%s: experiments[%d].requests[%d].response_timestamps[%d]: "
                                        "expected a number >= the request's timestamp (ns)",
                                 util_clip_path(rd->path, &b), e, j, k);
        response r = response_of(o);
        if (!isnan(r.prompt)) prompt = r.prompt;
        if (!isnan(r.completion)) completion = r.completion;
        if (!isnan(r.ids)) ids += r.ids;
        if (!r.output) continue;
        if (isnan(first)) first = t->valuedouble;
        last = t->valuedouble;
        n_out++;
    }
    if (isnan(completion) && ids > 0) completion = ids;
    if (isnan(completion)) {
        completion = n_out;
        rd->counted_responses |= n_out > 0;
    }
    if (isnan(prompt) || prompt < 1) {
        if (isnan(rd->mean_isl))
            return util_diag_add(rd->d, "%s: experiments[%d].requests[%d]: no prompt token count "
                                        "(no usage.prompt_tokens, no input_ids) and no "
                                        "input_sequence_length in a *_genai_perf.json beside it",
                                 util_clip_path(rd->path, &b), e, j);
        prompt = rd->mean_isl;
        rd->mean_prompts = true;
    }
    if (!(prompt <= VAL__MAX_TOKENS) || completion > VAL__MAX_TOKENS)
        return util_diag_add(rd->d, "%s: experiments[%d].requests[%d]: a token count over %g",
                             util_clip_path(rd->path, &b), e, j, VAL__MAX_TOKENS);
    val_request *v = val_run_add_request(m);
    v->arrival_s = t0 * 1e-9;
    v->prompt_tokens = (int64_t)llround(prompt);
    v->output_tokens = (int64_t)completion;
    v->failed = n_out == 0 || completion < 1;
    if (!v->failed) {
        v->ttft_s = (first - t0) * 1e-9;
        v->e2e_s = (last - t0) * 1e-9;
    }
    return UTIL_OK;
}

/* ---- the export ---- */

static char *name_of(const reader *rd, const cJSON *x, int e, int n)
{
    const char *mode = cJSON_GetStringValue(util_json_get(x, "experiment.mode"));
    const cJSON *value = util_json_get(x, "experiment.value");
    const cJSON *model = util_json_get(rd->agg, "input_config.model");
    if (cJSON_IsArray(model)) model = cJSON_GetArrayItem(model, 0);
    char *of = n > 1 ? util_xasprintf(" (experiment %d of %d)", e + 1, n) : util_xstrdup("");
    char *name = util_xasprintf(
        "genai-perf %s %s=%g%s%s%s", cJSON_IsString(model) ? model->valuestring : "?",
        mode ? mode : "?", cJSON_IsNumber(value) ? value->valuedouble : NAN, of,
        rd->counted_responses ? "; output tokens counted as responses" : "",
        rd->mean_prompts ? "; every prompt at the run's mean input_sequence_length" : "");
    free(of);
    return name;
}

static int experiment(const cJSON *x, int e, int n, reader *rd, const mdl_catalog *cat,
                      val_runs *out)
{
    util_clip_buf b;
    const cJSON *reqs = util_json_member(x, "requests"), *q;
    if (!cJSON_IsArray(reqs))
        return util_diag_add(rd->d, "%s: experiments[%d].requests: expected a list",
                             util_clip_path(rd->path, &b), e);
    val_run *m = val_runs_add(out);
    m->format = "genai-perf";
    m->clock = "client";
    m->source = util_xstrdup(rd->path);
    rd->counted_responses = rd->mean_prompts = false;
    int rc = UTIL_OK, j = 0;
    cJSON_ArrayForEach(q, reqs) {
        if (!rc) rc = request(m, rd, e, j, q);
        j++;
    }
    /* the aggregate file summarises one run: a lone experiment's */
    if (!rc && rd->agg && n == 1) rc = aggregates(m, rd->agg, &genai_perf_names, rd->path, rd->d);
    if (rd->agg) settings(m, rd->agg, cat);
    m->name = name_of(rd, x, e, n);
    val__sort_requests(m, true);
    return rc;
}

/* ---- AIPerf: profile_export.jsonl and profile_export_aiperf.json ---- */

/* A record's metric {value, unit} at name, in seconds (a time) or as is;
 * NAN when the record has none. */
static int record_metric(const cJSON *o, const char *name, bool time, const char *path,
                         int64_t ln, double *out, util_diag *d)
{
    util_clip_buf b;
    const cJSON *mt = util_json_get(util_json_member(o, "metrics"), name);
    const cJSON *v = util_json_member(mt, "value");
    double unit = time ? unit_of(mt) : 1;
    *out = NAN;
    if (!mt) return UTIL_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 || isnan(unit) ||
        (!time && v->valuedouble > VAL__MAX_TOKENS))
        return util_diag_add(d, "%s:%lld: metrics.%s: expected {\"value\": a number >= 0, "
                                "\"unit\": %s}",
                             util_clip_path(path, &b), (long long)ln, name,
                             time ? "\"ms\" or \"ns\"" : "\"tokens\"");
    *out = v->valuedouble * unit;
    return UTIL_OK;
}

/* One line of profile_export.jsonl: a request, unless it was a warm-up's
 * (AIPerf's aggregates count the profiling phase only). */
static int aiperf_line(val_run *m, const char *line, const char *path, int64_t ln, util_diag *d)
{
    util_clip_buf b;
    cJSON *o = cJSON_Parse(line);
    const char *phase = cJSON_GetStringValue(util_json_get(o, "metadata.credit_phase"));
    double t0 = util_json_number(o, "metadata.timestamp_ns", NAN), ttft, e2e, isl, osl;
    int rc = UTIL_OK;
    if (!cJSON_IsObject(o))
        rc = util_diag_add(d, "%s:%lld: expected a JSON object", util_clip_path(path, &b),
                           (long long)ln);
    else if (!isfinite(t0) || t0 < 0)
        rc = util_diag_add(d, "%s:%lld: metadata.timestamp_ns: expected a number >= 0 (ns)",
                           util_clip_path(path, &b), (long long)ln);
    if (!rc) rc = record_metric(o, "ttft", true, path, ln, &ttft, d);
    if (!rc) rc = record_metric(o, "request_latency", true, path, ln, &e2e, d);
    if (!rc) rc = record_metric(o, "input_sequence_length", false, path, ln, &isl, d);
    if (!rc) rc = record_metric(o, "output_sequence_length", false, path, ln, &osl, d);
    const cJSON *err = util_json_member(o, "error");
    bool failed = err && !cJSON_IsNull(err);
    if (!rc && !failed && (isnan(ttft) || isnan(e2e) || !(isl >= 1) || !(osl >= 1)))
        rc = util_diag_add(d, "%s:%lld: metrics: a request without an error needs ttft, "
                              "request_latency, input_sequence_length and "
                              "output_sequence_length (tokens >= 1)",
                           util_clip_path(path, &b), (long long)ln);
    if (!rc && (!phase || !strcmp(phase, "profiling"))) {
        val_request *q = val_run_add_request(m);
        q->arrival_s = t0 * 1e-9;
        q->prompt_tokens = isnan(isl) ? 0 : (int64_t)isl;
        q->output_tokens = isnan(osl) ? 0 : (int64_t)osl;
        q->failed = failed;
        if (!failed) {
            q->ttft_s = ttft;
            q->e2e_s = e2e;
        }
    }
    cJSON_Delete(o);
    return rc;
}

/* The name of an AIPerf run, from its input_config. */
static char *aiperf_name(const cJSON *agg)
{
    const cJSON *cfg = util_json_member(agg, "input_config");
    const char *model = cJSON_GetStringValue(
        cJSON_GetArrayItem(util_json_get(cfg, "endpoint.model_names"), 0));
    const char *mode = cJSON_GetStringValue(util_json_get(cfg, "loadgen.request_rate_mode"));
    double users = util_json_number(cfg, "loadgen.concurrency", NAN);
    double rate = util_json_number(cfg, "loadgen.request_rate", NAN);
    char *load = !isnan(users) ? util_xasprintf(" concurrency=%g", users)
                 : !isnan(rate) ? util_xasprintf(" rate=%g", rate) : util_xstrdup("");
    char *name = util_xasprintf("aiperf %s%s%s%s", model ? model : "?", mode ? " " : "",
                                mode ? mode : "", load);
    free(load);
    return name;
}

static void aiperf_settings(val_run *m, const cJSON *agg, const mdl_catalog *cat)
{
    const char *repo = cJSON_GetStringValue(
        cJSON_GetArrayItem(util_json_get(agg, "input_config.endpoint.model_names"), 0));
    const char *model = repo ? val__model_of_repo(cat, repo) : NULL;
    if (model) val__record_string(m, "cluster.model", model);
}

/* A folder holding profile_export.jsonl, or that file (or another AIPerf
 * .jsonl) itself, with STEM_aiperf.json beside it for the aggregates. */
static int read_aiperf(const char *path, const mdl_catalog *cat, val_runs *out, util_diag *d)
{
    struct stat st;
    bool dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    char *jsonl = dir ? util_path_join(path, "profile_export.jsonl") : util_xstrdup(path), *line;
    size_t n = strlen(jsonl);
    int stem = n > 6 && !strcmp(jsonl + n - 6, ".jsonl") ? (int)n - 6 : (int)n;
    char *agg_path = util_xasprintf("%.*s_aiperf.json", stem, jsonl);
    size_t len;
    cJSON *agg = NULL;
    int rc = stat(agg_path, &st) == 0 ? util_json_read_data(agg_path, &agg, d) : UTIL_OK, more = 0;
    val_run *m = rc ? NULL : val_runs_add(out);
    util_lines *l = NULL;
    if (m) {
        m->format = "genai-perf";
        m->clock = "client";
        m->source = util_xstrdup(path);
        m->name = aiperf_name(agg);
        aiperf_settings(m, agg, cat);
        rc = util_lines_open(jsonl, &l, d);
    }
    while (!rc && (more = util_lines_next(l, &line, &len, d)) == 1)
        if (line[strspn(line, " \t\r")]) rc = aiperf_line(m, line, jsonl, util_lines_number(l), d);
    if (!rc && more < 0) rc = more;
    if (!rc && agg) rc = aggregates(m, util_json_member(agg, "records"), &aiperf_names, agg_path, d);
    if (m) val__sort_requests(m, true);
    util_lines_close(l);
    cJSON_Delete(agg);
    free(agg_path);
    free(jsonl);
    return rc;
}

int val__read_genai_perf(const char *path, const cJSON *root, const mdl_catalog *cat,
                         val_runs *out, util_diag *d)
{
    util_clip_buf b;
    if (!root) return read_aiperf(path, cat, out, d);
    if (cJSON_IsObject(util_json_member(root, "records"))) {
        /* AIPerf's aggregates alone */
        val_run *m = val_runs_add(out);
        m->format = "genai-perf";
        m->source = util_xstrdup(path);
        m->name = aiperf_name(root);
        aiperf_settings(m, root, cat);
        return aggregates(m, util_json_member(root, "records"), &aiperf_names, path, d);
    }
    const cJSON *xs = util_json_member(root, "experiments"), *x;
    if (!xs && util_json_member(root, "time_to_first_token")) {
        /* the aggregate file alone */
        val_run *m = val_runs_add(out);
        m->format = "genai-perf";
        m->source = util_xstrdup(path);
        m->name = util_xasprintf("genai-perf %s: aggregates", path);
        settings(m, root, cat);
        return aggregates(m, root, &genai_perf_names, path, d);
    }
    if (!cJSON_IsArray(xs) || cJSON_GetArraySize(xs) == 0)
        return util_diag_add(d, "%s: experiments: expected a list of perf_analyzer experiments",
                             util_clip_path(path, &b));
    cJSON *agg = NULL;
    int rc = read_beside(path, &agg, d), e = 0, n = cJSON_GetArraySize(xs);
    reader rd = {.path = path, .d = d, .agg = agg,
                 .mean_isl = util_json_number(agg, "input_sequence_length.avg", NAN)};
    cJSON_ArrayForEach(x, xs) {
        if (!rc) rc = experiment(x, e, n, &rd, cat, out);
        e++;
    }
    cJSON_Delete(agg);
    return rc;
}
