/*
 * import_vllm_bench.c: the JSON of `vllm bench serve --save-result
 * --save-detailed`, read as vllm/benchmarks/serve.py writes it (commit
 * 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1; the stamps from
 * vllm/benchmarks/lib/endpoint_request_func.py at
 * 02cfb534df5674737558730b10f23d1b7aef9b7c).
 *
 * One run a file.  Its per-request lists hold one item per request, in the
 * order sent: `input_lens` and `output_lens` (tokens; 0 out for a failed
 * request), `ttfts` (s, to the first streamed chunk), `itls` (s, the gaps
 * between chunks -- a chunk may carry several tokens), and, in newer
 * versions, `latencies` (s, to the last chunk: ttft + sum(itls)) and
 * `start_times` (s of time.perf_counter when sent, after the
 * --max-concurrency semaphore; since vLLM PR #32667, January 2026).
 * `errors` (a non-empty string: failed) and `generated_texts` (ignored).
 * All on the client's clock.  The aggregates are in ms (`mean_ttft_ms`,
 * `median_`, `p99_` and any --metric-percentiles), throughput in tokens/s.
 *
 * Without start_times the send times are unknown, and none is invented:
 * each request is kept at arrival 0 with its lengths and latencies, the run
 * is marked (val_run.arrivals_unknown) and the generator vLLM ran is
 * recorded as workload.arrival -- Poisson at request_rate, gamma with cv
 * 1/sqrt(burstiness) otherwise, constant gaps at burstiness inf, or, at
 * request_rate inf under --max-concurrency C, a closed loop of C users --
 * for a replay to draw arrivals from.  At request_rate inf without a
 * limit every request was sent at once, so 0 is their send time.  At a
 * finite rate, or with the sends recorded, --max-concurrency C is recorded
 * as workload.arrival.max_concurrency:
 * a replay's client then holds a due request back as vLLM's semaphore did
 * (a trace replay of the sends keeps the cap, so that a slower what-if
 * waits as the client would have).  A ramp-up has no servesim generator:
 * the run's name says so.  The server's engine is not recorded
 * (the bench talks to any OpenAI server); the model is `model_id`.
 */
#include "val_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The per-request lists; n of each, every one present the same length. */
enum { L_IN, L_OUT, L_TTFT, L_ITLS, L_LAT, L_START, L_ERR, N_LISTS };
static const char *const lists[N_LISTS] = {"input_lens", "output_lens", "ttfts", "itls",
                                           "latencies",  "start_times", "errors"};

typedef struct reader {
    const char *path;
    const cJSON *l[N_LISTS];
    util_diag *d;
} reader;

static int bad(const reader *r, int list, int i, const char *what)
{
    util_clip_buf b;
    return util_diag_add(r->d, "%s: %s[%d]: expected %s", util_clip_path(r->path, &b), lists[list],
                         i, what);
}

/* Item i of a list of numbers: >= lo, whole if asked. */
static int number(const reader *r, int list, int i, double lo, bool whole, double *out)
{
    const cJSON *v = cJSON_GetArrayItem(r->l[list], i);
    bool ok = cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= lo &&
              (!whole || (v->valuedouble == floor(v->valuedouble) &&
                          v->valuedouble <= VAL__MAX_TOKENS));
    if (!ok) {
        char *what = whole ? util_xasprintf("a whole number >= %g, <= %g", lo, VAL__MAX_TOKENS)
                           : util_xasprintf("a number >= %g", lo);
        bad(r, list, i, what);
        free(what);
        return UTIL_EINPUT;
    }
    *out = v->valuedouble;
    return UTIL_OK;
}

/* The sum of request i's gaps between chunks. */
static int gaps(const reader *r, int i, double *sum)
{
    util_clip_buf b;
    const cJSON *g = cJSON_GetArrayItem(r->l[L_ITLS], i), *c;
    if (!cJSON_IsArray(g)) return bad(r, L_ITLS, i, "a list of gaps in seconds");
    int k = 0;
    *sum = 0;
    cJSON_ArrayForEach(c, g) {
        if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) || c->valuedouble < 0)
            return util_diag_add(r->d, "%s: itls[%d][%d]: expected a number >= 0",
                                 util_clip_path(r->path, &b), i, k);
        *sum += c->valuedouble;
        k++;
    }
    return UTIL_OK;
}

static int failed_at(const reader *r, int i, bool *failed)
{
    const cJSON *e = cJSON_GetArrayItem(r->l[L_ERR], i);
    if (!r->l[L_ERR]) return UTIL_OK;
    if (!cJSON_IsString(e) && !cJSON_IsNull(e)) return bad(r, L_ERR, i, "a string");
    *failed |= cJSON_IsString(e) && e->valuestring[0];
    return UTIL_OK;
}

static int request(val_run *m, const reader *r, int i)
{
    double in = 0, out = 0, ttft = NAN, sum = NAN, lat = NAN, start = 0;
    int rc = number(r, L_IN, i, 1, true, &in);
    if (!rc) rc = number(r, L_OUT, i, 0, true, &out);
    if (!rc) rc = number(r, L_TTFT, i, 0, false, &ttft);
    if (!rc && r->l[L_ITLS]) rc = gaps(r, i, &sum);
    if (!rc && r->l[L_LAT]) rc = number(r, L_LAT, i, 0, false, &lat);
    if (!rc && r->l[L_START]) rc = number(r, L_START, i, -INFINITY, false, &start);
    bool failed = out < 1; /* a failed request's output_lens is 0 */
    if (!rc) rc = failed_at(r, i, &failed);
    if (rc) return rc;
    val_request *q = val_run_add_request(m);
    q->arrival_s = start;
    q->prompt_tokens = (int64_t)in;
    q->output_tokens = (int64_t)out;
    q->failed = failed;
    if (!failed) {
        q->ttft_s = ttft;
        q->e2e_s = isnan(lat) ? ttft + sum : lat; /* vLLM's latency is ttft + sum(itl) */
    }
    return UTIL_OK;
}

/* The lists, checked for presence and length: *n their length. */
static int open_lists(reader *r, const cJSON *root, int *n)
{
    util_clip_buf b;
    static const int required[] = {L_IN, L_OUT, L_TTFT};
    for (int k = 0; k < N_LISTS; k++) {
        r->l[k] = util_json_member(root, lists[k]);
        if (cJSON_IsNull(r->l[k])) r->l[k] = NULL;
        if (r->l[k] && !cJSON_IsArray(r->l[k]))
            return util_diag_add(r->d, "%s: %s: expected a list, one item per request",
                                 util_clip_path(r->path, &b), lists[k]);
    }
    for (size_t k = 0; k < sizeof required / sizeof *required; k++)
        if (!r->l[required[k]])
            return util_diag_add(r->d, "%s: no %s: a result saved with --save-detailed was "
                                       "expected",
                                 util_clip_path(r->path, &b), lists[required[k]]);
    if (!r->l[L_ITLS] && !r->l[L_LAT])
        return util_diag_add(r->d, "%s: neither itls nor latencies: no request's end is known",
                             util_clip_path(r->path, &b));
    *n = cJSON_GetArraySize(r->l[L_IN]);
    for (int k = 0; k < N_LISTS; k++)
        if (r->l[k] && cJSON_GetArraySize(r->l[k]) != *n)
            return util_diag_add(r->d, "%s: %s has %d items but input_lens has %d",
                                 util_clip_path(r->path, &b), lists[k],
                                 cJSON_GetArraySize(r->l[k]), *n);
    return UTIL_OK;
}

/* ---- the aggregates and the settings ---- */

static void aggregates(val_run *m, const cJSON *root)
{
    static const struct {
        const char *key;
        int metric;
    } ms[] = {
        {"mean_ttft_ms", VAL_TTFT_MEAN}, {"median_ttft_ms", VAL_TTFT_P50},
        {"p90_ttft_ms", VAL_TTFT_P90},   {"p99_ttft_ms", VAL_TTFT_P99},
        {"mean_tpot_ms", VAL_TPOT_MEAN}, {"median_tpot_ms", VAL_TPOT_P50},
        {"p90_tpot_ms", VAL_TPOT_P90},   {"p99_tpot_ms", VAL_TPOT_P99},
        {"mean_itl_ms", VAL_ITL_MEAN},   {"mean_e2el_ms", VAL_E2E_MEAN},
        {"median_e2el_ms", VAL_E2E_P50}, {"p90_e2el_ms", VAL_E2E_P90},
        {"p99_e2el_ms", VAL_E2E_P99},
    };
    /* with every request failed vLLM writes 0 for each statistic */
    if (util_json_number(root, "completed", 1) < 1) return;
    for (size_t k = 0; k < sizeof ms / sizeof *ms; k++)
        val__set_metric(m, ms[k].metric, util_json_member(root, ms[k].key), 1e-3);
    val__set_metric(m, VAL_OUTPUT_TPS, util_json_member(root, "output_throughput"), 1);
}

/* request_rate is a number or "inf"; absent, vLLM's default (inf). */
static double rate_of(const cJSON *root)
{
    const cJSON *v = util_json_member(root, "request_rate");
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : INFINITY;
}

/* The generator vLLM ran, for a run whose arrivals it did not record; what
 * servesim cannot express is appended to *note. */
static void generator(val_run *m, const cJSON *root, int n, char **note)
{
    double rate = rate_of(root), b = util_json_number(root, "burstiness", 1);
    double users = util_json_number(root, "max_concurrency", 0);
    const char *what = NULL;
    if (util_json_member(root, "ramp_up_strategy")) {
        what = "arrivals not recorded; a ramp-up has no generator";
    } else if (isinf(rate) && users >= 1) {
        val__record_string(m, "workload.arrival.process", "closed");
        val__record_number(m, "workload.arrival.users", users);
        what = "arrivals not recorded: a closed loop replays them";
    } else if (isinf(rate)) {
        m->arrivals_unknown = false; /* all sent at once, at 0 */
        what = "sent at once";
    } else {
        bool gamma = b != 1 && isfinite(b) && b > 0;
        val__record_string(m, "workload.arrival.process",
                           isinf(b) ? "constant" : gamma ? "gamma" : "poisson");
        val__record_number(m, "workload.arrival.rate_per_s", rate);
        if (gamma) val__record_number(m, "workload.arrival.cv", 1 / sqrt(b));
        what = users >= 1 ? "arrivals not recorded: a generator replays them under the "
                            "client's max_concurrency"
                          : "arrivals not recorded: a generator replays them";
    }
    if (m->arrivals_unknown) val__record_number(m, "stop.requests", n);
    char *more = util_xasprintf("%s; %s", *note, what);
    free(*note);
    *note = more;
}

static void settings(val_run *m, const cJSON *root, const mdl_catalog *cat)
{
    const char *repo = cJSON_GetStringValue(util_json_member(root, "model_id"));
    const char *model = repo ? val__model_of_repo(cat, repo) : NULL;
    if (model) val__record_string(m, "cluster.model", model);
}

/* vllm bench serve's semaphore (vllm/benchmarks/serve.py at 009e6d4a1cd6)
 * is servesim's max_concurrency: kept, unless the generator that replays
 * unrecorded sends is already the closed loop of its users. */
static void cap(val_run *m, const cJSON *root, bool sends_recorded)
{
    double users = util_json_number(root, "max_concurrency", 0);
    if (users >= 1 && (sends_recorded || isfinite(rate_of(root))))
        val__record_number(m, "workload.arrival.max_concurrency", users);
}

static char *name_of(const cJSON *root)
{
    const char *repo = cJSON_GetStringValue(util_json_member(root, "model_id"));
    const char *date = cJSON_GetStringValue(util_json_member(root, "date"));
    double rate = rate_of(root), users = util_json_number(root, "max_concurrency", 0);
    char *conc = users >= 1 ? util_xasprintf(" max_concurrency=%g", users) : util_xstrdup("");
    char *name = util_xasprintf("vllm-bench %s %s rate=%g%s", repo ? repo : "?", date ? date : "?",
                                rate, conc);
    free(conc);
    return name;
}

int val__read_vllm_bench(const char *path, const cJSON *root, const mdl_catalog *cat,
                         val_runs *out, util_diag *d)
{
    reader r = {.path = path, .d = d};
    int n = 0, rc = open_lists(&r, root, &n);
    if (rc) return rc;
    val_run *m = val_runs_add(out);
    m->format = "vllm-bench";
    m->clock = "client";
    m->source = util_xstrdup(path);
    for (int i = 0; !rc && i < n; i++) rc = request(m, &r, i);
    aggregates(m, root);
    settings(m, root, cat);
    char *name = name_of(root);
    if (!r.l[L_START]) {
        m->arrivals_unknown = true;
        generator(m, root, n, &name);
    }
    cap(m, root, r.l[L_START] != NULL);
    m->name = name;
    if (r.l[L_START]) val__sort_requests(m, true); /* perf_counter: the first sent at 0 */
    return rc;
}
