/*
 * test_export.c: `servesim export` as a user runs it.  A small run, with a
 * warm-up and clients that time out, is exported in each format; the
 * file's per-request lists and summaries are checked against the run's rows
 * and `servesim report --json` (in the tool's units: vLLM's lists in s, its
 * summaries in ms; GenAI-Perf's stamps in ns), then the file is imported
 * back and every request's TTFT, TPOT, E2E and lengths must be the run's
 * to the format's precision, and `servesim compare` of the two must find no
 * difference.  Bad input is exit 2 naming the problem, with nothing written.
 * argv[1] is the servesim binary.
 */
#include <float.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "runner.h"
#include "tap.h"
#include "util.h"

static const char *servesim;
static char dir[] = "/tmp/servesim-export-XXXXXX";

#define sv(...) runner_run(servesim, dir, __VA_ARGS__)

/* A run with a warm-up (its first requests are not exported) and a client
 * time-out that four requests after warm-up reach (exported as failed). */
static const char scenario[] =
    "{\"name\": \"export\", \"seed\": 7, \"warmup_s\": 1, \"stop\": {\"requests\": 60},"
    " \"cluster\": {\"engine\": \"ideal\", \"gpu\": \"h100-sxm\", \"model\": \"llama-3.1-8b\","
    "   \"scheduler\": {\"max_batch\": 8}},"
    " \"workload\": {\"arrival\": {\"rate_per_s\": 6}, \"timeout_s\": 2.5,"
    "   \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 400, \"sigma\": 0.6},"
    "   \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 100, \"sigma\": 0.5}}}";

static char *in_dir(const char *name)
{
    return util_xasprintf("%s/%s", dir, name);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static cJSON *read_json(const char *path)
{
    char *text = runner_read_or_bail(path);
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

/* One request of a run as the request_metrics view defines it. */
typedef struct row {
    double arrival, ttft, tpot, e2e;
    int64_t prompt, output;
    bool completed;
} row;

/* The requests of run 1 sent at or after from_s, in arrival order; *n their count. */
static row *rows_of(const char *db, double from_s, int *n)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    row *v = NULL;
    *n = 0;
    sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL);
    sqlite3_prepare_v2(h,
                       "SELECT arrival_s, ttft_s, tpot_s, e2e_s, prompt_tokens, output_tokens, "
                       "status = 'completed' FROM request_metrics WHERE run_id = 1 AND "
                       "arrival_s >= ?1 ORDER BY arrival_s, id",
                       -1, &st, NULL);
    sqlite3_bind_double(st, 1, from_s);
    while (sqlite3_step(st) == SQLITE_ROW) {
        v = util_xrealloc(v, (size_t)(*n + 1) * sizeof *v);
        row *r = &v[(*n)++];
        double *f[4] = {&r->arrival, &r->ttft, &r->tpot, &r->e2e};
        for (int k = 0; k < 4; k++)
            *f[k] = sqlite3_column_type(st, k) == SQLITE_NULL ? NAN : sqlite3_column_double(st, k);
        r->prompt = sqlite3_column_int64(st, 4);
        r->output = sqlite3_column_int64(st, 5);
        r->completed = sqlite3_column_int(st, 6);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

static bool near(double a, double b, double tol)
{
    return (isnan(a) && isnan(b)) || fabs(a - b) <= tol;
}

/* The smallest TTFT and E2E - TTFT of the completed requests: what a
 * stamp's error is relative to. */
static double smallest_time(const row *v, int n)
{
    double m = INFINITY;
    for (int i = 0; i < n; i++)
        if (v[i].completed) m = fmin(m, fmin(v[i].ttft, v[i].e2e - v[i].ttft));
    return m;
}

/* ---- the vLLM file against the run ---- */

static double number_at(const cJSON *a, int i)
{
    const cJSON *v = cJSON_GetArrayItem(a, i);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* numpy's percentile (linear interpolation) of a sorted list. */
static double percentile(const double *v, int n, double q)
{
    double h = (n - 1) * q, lo = floor(h);
    int i = (int)lo, j = i + 1 < n ? i + 1 : i;
    return v[i] + (h - lo) * (v[j] - v[i]);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void check_vllm_lists(const cJSON *v, const row *r, int n)
{
    int bad_in = 0, bad_ttft = 0, bad_lat = 0, bad_start = 0, bad_itl = 0, bad_err = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *itl = cJSON_GetArrayItem(util_json_member(v, "itls"), i), *g;
        double sum = 0;
        cJSON_ArrayForEach(g, itl) sum += g->valuedouble;
        const char *err =
            cJSON_GetStringValue(cJSON_GetArrayItem(util_json_member(v, "errors"), i));
        bad_in += number_at(util_json_member(v, "input_lens"), i) != (double)r[i].prompt;
        bad_start += number_at(util_json_member(v, "start_times"), i) != r[i].arrival;
        if (r[i].completed) {
            bad_in += number_at(util_json_member(v, "output_lens"), i) != (double)r[i].output;
            bad_ttft += number_at(util_json_member(v, "ttfts"), i) != r[i].ttft;
            bad_lat += number_at(util_json_member(v, "latencies"), i) != r[i].e2e;
            bad_itl += cJSON_GetArraySize(itl) != r[i].output - 1 ||
                       !near(sum, r[i].e2e - r[i].ttft, 1e-12 * r[i].e2e * (double)r[i].output);
            bad_err += !err || err[0];
        } else {
            bad_in += number_at(util_json_member(v, "output_lens"), i) != 0;
            bad_itl += cJSON_GetArraySize(itl) != 0;
            bad_err += !err || !strstr(err, "timed out");
        }
    }
    is_int(cJSON_GetArraySize(util_json_member(v, "ttfts")), n,
           "vllm: one item a request after warm-up");
    is_int(bad_in, 0, "vllm: input_lens and output_lens are the run's (0 out for a failed one)");
    is_int(bad_ttft, 0, "vllm: ttfts in s, each the run's TTFT");
    is_int(bad_lat, 0, "vllm: latencies in s, each the run's E2E");
    is_int(bad_start, 0, "vllm: start_times in s, each the run's arrival");
    is_int(bad_itl, 0, "vllm: itls: output - 1 gaps a request, adding up to E2E - TTFT");
    is_int(bad_err, 0, "vllm: errors: \"\" for a completed request, the time-out for the others");
}

/* What `report --json` holds of v: cJSON prints 15 digits when they read
 * back within DBL_EPSILON of the value. */
#define EPS_OF(v) (DBL_EPSILON * fabs(v))

/* The report's figure at path (seconds) against the file's (ms): one
 * rounding in the x 1000, one in the report's printing. */
static void check_ms(const cJSON *v, const char *key, const cJSON *rep, const char *path)
{
    double want = util_json_number(rep, path, NAN) * 1e3, got = util_json_number(v, key, NAN);
    ok(near(got, want, 4 * EPS_OF(want)), "vllm: %s %.9g = the report's %s x 1000 (%.9g)", key, got,
       path, want);
}

static void check_vllm_summary(const cJSON *v, const cJSON *rep, const row *r, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++)
        failed += !r[i].completed;
    is_near(util_json_number(v, "completed", NAN), util_json_number(rep, "requests.measured", NAN),
            0, "vllm: completed = the report's measured requests");
    is_near(util_json_number(v, "failed", NAN), failed, 0, "vllm: failed = the timed-out ones");
    is_near(util_json_number(v, "duration", NAN), util_json_number(rep, "throughput.window_s", NAN),
            EPS_OF(util_json_number(rep, "throughput.window_s", NAN)),
            "vllm: duration (s) = the report's window");
    is_near(util_json_number(v, "request_throughput", NAN),
            util_json_number(rep, "throughput.requests_per_s", NAN),
            EPS_OF(util_json_number(rep, "throughput.requests_per_s", NAN)),
            "vllm: request_throughput = the report's requests_per_s");
    is_near(util_json_number(v, "output_throughput", NAN),
            util_json_number(rep, "throughput.output_tokens_per_s", NAN),
            EPS_OF(util_json_number(rep, "throughput.output_tokens_per_s", NAN)),
            "vllm: output_throughput = the report's output_tokens_per_s");
    double total = util_json_number(rep, "throughput.input_tokens_per_s", NAN) +
                   util_json_number(rep, "throughput.output_tokens_per_s", NAN);
    ok(near(util_json_number(v, "total_token_throughput", NAN), total, 4 * EPS_OF(total)),
       "vllm: total_token_throughput = input + output tokens/s");
    is_near(util_json_number(v, "request_rate", NAN), 6, 0, "vllm: request_rate is the scenario's");
    static const char *const m[][2] = {{"ttft", "ttft_s"}, {"tpot", "tpot_s"}, {"e2el", "e2e_s"}};
    static const char *const s[][2] = {
        {"mean", "mean"}, {"median", "p50"}, {"p90", "p90"}, {"p99", "p99"}};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++) {
            char *key = util_xasprintf("%s_%s_ms", s[b][0], m[a][0]);
            char *path = util_xasprintf("%s.%s", m[a][1], s[b][1]);
            check_ms(v, key, rep, path);
            free(key);
            free(path);
        }
    /* TTFT's std: numpy's population std over the completed requests */
    double sum = 0, sq = 0;
    int c = 0;
    for (int i = 0; i < n; i++)
        if (r[i].completed) sum += r[i].ttft, c++;
    for (int i = 0; i < n; i++)
        if (r[i].completed) sq += (r[i].ttft - sum / c) * (r[i].ttft - sum / c);
    double std = sqrt(sq / c) * 1e3;
    ok(near(util_json_number(v, "std_ttft_ms", NAN), std, 1e-9 * std),
       "vllm: std_ttft_ms %.9g = np.std (%.9g)", util_json_number(v, "std_ttft_ms", NAN), std);
}

/* vLLM's ITL statistics are over every gap of every request: recomputed
 * here from the file's itls as numpy would. */
static void check_vllm_itl(const cJSON *v)
{
    int n = 0;
    const cJSON *req, *g;
    cJSON_ArrayForEach(req, util_json_member(v, "itls")) n += cJSON_GetArraySize(req);
    double *all = util_xmalloc((size_t)n * sizeof *all), sum = 0;
    int k = 0;
    cJSON_ArrayForEach(req, util_json_member(v, "itls")) cJSON_ArrayForEach(g, req)
    {
        all[k++] = g->valuedouble;
        sum += g->valuedouble;
    }
    qsort(all, (size_t)n, sizeof *all, by_value);
    struct {
        const char *key;
        double want;
    } c[] = {{"mean_itl_ms", sum / n * 1e3},
             {"median_itl_ms", percentile(all, n, 0.5) * 1e3},
             {"p90_itl_ms", percentile(all, n, 0.9) * 1e3},
             {"p99_itl_ms", percentile(all, n, 0.99) * 1e3}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        ok(near(util_json_number(v, c[i].key, NAN), c[i].want, 1e-9 * c[i].want),
           "vllm: %s %.9g = numpy's over the file's %d gaps (%.9g)", c[i].key,
           util_json_number(v, c[i].key, NAN), n, c[i].want);
    free(all);
}

/* ---- the round trip ---- */

/* The imported run's requests against the exported run's, each within tol s
 * (TPOT within tol / (output - 1), the gap of two stamps over the tokens). */
static void check_round_trip(const char *what, const char *db, const row *r, int n, double tol)
{
    int m = 0, bad_len = 0, bad_ttft = 0, bad_tpot = 0, bad_e2e = 0, bad_status = 0;
    row *back = rows_of(db, 0, &m);
    is_int(m, n, "%s: the import has every exported request", what);
    for (int i = 0; i < n && i < m; i++) {
        bad_len +=
            back[i].prompt != r[i].prompt || (r[i].completed && back[i].output != r[i].output);
        bad_status += back[i].completed != r[i].completed;
        if (!r[i].completed) continue;
        bad_ttft += !near(back[i].ttft, r[i].ttft, tol);
        bad_e2e += !near(back[i].e2e, r[i].e2e, tol);
        bad_tpot += !near(back[i].tpot, r[i].tpot, 2 * tol / (double)(r[i].output - 1));
    }
    is_int(bad_len, 0, "%s: round trip: the same prompt and output lengths", what);
    is_int(bad_status, 0, "%s: round trip: the same requests completed, the others failed", what);
    is_int(bad_ttft, 0, "%s: round trip: the same TTFT (within %g s)", what, tol);
    is_int(bad_tpot, 0, "%s: round trip: the same TPOT", what);
    is_int(bad_e2e, 0, "%s: round trip: the same E2E (within %g s)", what, tol);
    free(back);
}

/* `servesim compare` of the import with the run: every metric's error
 * within what tol s does to the smallest time compared. */
static void check_compare(const char *what, const char *mdb, const char *db, double bound_pct)
{
    result c = sv("compare", mdb, db, "--json", NULL);
    cJSON *cmp = cJSON_Parse(c.out);
    const cJSON *m;
    int n = 0, zero = 0;
    double worst = 0;
    cJSON_ArrayForEach(m, util_json_member(cmp, "metrics"))
    {
        double e = fabs(util_json_number(m, "error_pct", NAN));
        n++;
        zero += e <= bound_pct;
        worst = isnan(e) ? e : fmax(worst, e);
    }
    is_int(c.status, 0, "%s: compare runs", what);
    ok(n >= 14 && zero == n,
       "%s: compare finds no difference in %d metrics (worst %.3g%%, bound %.3g%%)", what, n, worst,
       bound_pct);
    cJSON_Delete(cmp);
    runner_drop(&c);
    result t = sv("compare", mdb, db, NULL);
    ok(!strstr(t.out, ".1%") && !strstr(t.out, "  -\n") && strstr(t.out, "+0.0%"),
       "%s: compare's text shows 0.0%% for every metric", what);
    runner_drop(&t);
}

static void import(const char *file, const char *db, const char *what)
{
    unlink(db);
    result r = sv("import", file, "-o", db, NULL);
    is_int(r.status, 0, "%s: servesim import reads the export", what);
    if (r.status) tap_diag("%s", r.err);
    runner_drop(&r);
}

/* `servesim export db --format format -o out`, which must succeed, and
 * the file it wrote. */
static cJSON *exported(const char *db, const char *format, const char *out)
{
    result e = sv("export", db, "--format", format, "-o", out, NULL);
    is_int(e.status, 0, "%s: export runs", format);
    runner_drop(&e);
    return read_json(out);
}

static void test_vllm(const char *db, const row *r, int n, const cJSON *rep)
{
    char *out = in_dir("vllm.json"), *mdb = in_dir("vllm.db");
    cJSON *v = exported(db, "vllm-bench", out);
    check_vllm_lists(v, r, n);
    check_vllm_summary(v, rep, r, n);
    check_vllm_itl(v);
    cJSON_Delete(v);
    import(out, mdb, "vllm");
    /* the stamps are doubles printed exactly; the import shifts the first
     * send to 0, which costs a few ulps of the run's span */
    double tol = 8 * DBL_EPSILON * (r[n - 1].arrival + 10);
    check_round_trip("vllm", mdb, r, n, tol);
    check_compare("vllm", mdb, db, 100 * 2 * tol / smallest_time(r, n));
    free(out);
    free(mdb);
}

/* ---- GenAI-Perf ---- */

static void check_genai_file(const cJSON *g, const row *r, int n)
{
    const cJSON *x = cJSON_GetArrayItem(util_json_member(g, "experiments"), 0);
    const cJSON *reqs = util_json_member(x, "requests");
    is_int(cJSON_GetArraySize(reqs), n, "genai-perf: one request a request after warm-up");
    has_str(cJSON_GetStringValue(util_json_get(x, "experiment.mode")), "request_rate",
            "genai-perf: the experiment's mode is request_rate");
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *q = cJSON_GetArrayItem(reqs, i),
                    *ts = util_json_member(q, "response_timestamps");
        double t0 = util_json_number(q, "timestamp", NAN);
        bad += t0 != (double)llround(r[i].arrival * 1e9);
        if (r[i].completed)
            bad += cJSON_GetArraySize(ts) != r[i].output + 2 ||
                   number_at(ts, 0) - t0 != (double)(llround((r[i].arrival + r[i].ttft) * 1e9) -
                                                     llround(r[i].arrival * 1e9));
    }
    is_int(bad, 0,
           "genai-perf: stamps in ns: sent, then a response a token (the first at TTFT), "
           "the usage chunk and [DONE]");
}

static void test_genai(const char *db, const row *r, int n)
{
    char *out = in_dir("profile_export.json"), *mdb = in_dir("genai.db");
    cJSON *g = exported(db, "genai-perf", out);
    check_genai_file(g, r, n);
    cJSON_Delete(g);
    import(out, mdb, "genai-perf");
    /* each stamp rounded to the ns: a difference of two is within 1 ns */
    double tol = 1e-9 + 8 * DBL_EPSILON * (r[n - 1].arrival + 10);
    check_round_trip("genai-perf", mdb, r, n, tol);
    check_compare("genai-perf", mdb, db, 100 * 2 * tol / smallest_time(r, n));
    free(out);
    free(mdb);
}

/* ---- bad input ---- */

static void refused(const char *what, const char *want, const char *a0, ...)
{
    va_list ap;
    va_start(ap, a0);
    result r = runner_vrun(servesim, dir, a0, ap);
    va_end(ap);
    is_int(r.status, 2, "%s: exit 2", what);
    has_str(r.err, want, "%s: says why", what);
    runner_drop(&r);
}

static void test_refused(const char *db)
{
    char *out = in_dir("kept.json"), *sub = in_dir("missing/x.json");
    FILE *f = fopen(out, "w");
    if (f) {
        fputs("old\n", f);
        fclose(f);
    }
    refused("no such run", "no run with id 9", "export", db, "--run", "9", "--format", "vllm-bench",
            "-o", out, NULL);
    refused("an unknown format", "did you mean vllm-bench?", "export", db, "--format", "vllm-bnch",
            "-o", out, NULL);
    char *text = runner_read(out);
    is_str(text, "old\n", "refused: an existing OUT is left as it was");
    free(text);
    refused("an unwritable -o", "cannot write", "export", db, "--format", "genai-perf", "-o", sub,
            NULL);
    ok(!exists(sub), "an unwritable -o: nothing written");
    /* a folder as OUT: the file beside it is written, the rename refused and it removed */
    refused("a folder as -o", "cannot write", "export", db, "--format", "vllm-bench", "-o", dir,
            NULL);
    char *pattern = util_xasprintf("%s.tmp-*", dir);
    glob_t left = {0};
    is_int(glob(pattern, 0, NULL, &left), GLOB_NOMATCH,
           "a folder as -o: no temporary file left beside it");
    globfree(&left);
    free(pattern);
    result u = sv("export", db, "-o", out, NULL);
    is_int(u.status, 2, "no --format: exit 2");
    has_str(u.err, "--format", "no --format: says so");
    runner_drop(&u);
    result h = sv("export", "--help", NULL);
    is_int(h.status, 0, "export --help: exit 0");
    has_str(h.out, "vllm-bench", "export --help: names the formats");
    runner_drop(&h);
    unlink(out);
    free(out);
    free(sub);
}

/* The client a run was driven by, as the tools write it: every request
 * due at once under a cap of 4 is vLLM's --request-rate inf
 * --max-concurrency 4 and GenAI-Perf's concurrency 4, and an import of
 * the vLLM file keeps the cap. */
static void test_capped(const char *sc)
{
    char *db = in_dir("capped.db"), *out = in_dir("capped.json"), *genai = in_dir("capped-genai.json"),
         *back = in_dir("capped-back.db");
    result run = sv("run", sc, "-o", db, "--set", "workload.arrival.rate_per_s=inf", "--set",
                    "workload.arrival.max_concurrency=4", NULL);
    is_int(run.status, 0, "capped: the run is stored");
    runner_drop(&run);
    cJSON *v = exported(db, "vllm-bench", out);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(v, "request_rate")), "inf",
           "capped: vllm-bench's request_rate is \"inf\"");
    is_int(cJSON_GetNumberValue(cJSON_GetObjectItem(v, "max_concurrency")), 4,
           "capped: and its max_concurrency 4");
    cJSON_Delete(v);
    cJSON *g = exported(db, "genai-perf", genai);
    const cJSON *x = util_json_get(cJSON_GetArrayItem(cJSON_GetObjectItem(g, "experiments"), 0),
                                   "experiment");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(x, "mode")), "concurrency",
           "capped: genai-perf's experiment is a concurrency");
    is_int(cJSON_GetNumberValue(cJSON_GetObjectItem(x, "value")), 4, "capped: of 4");
    cJSON_Delete(g);
    result e = sv("import", out, "-o", back, NULL);
    runner_drop(&e);
    is_int(runner_q1(back, "SELECT json_extract(scenario, '$.workload.arrival.max_concurrency') "
                           "FROM runs"),
           4, "capped: the import keeps the cap beside the sends it recorded");
    const char *files[] = {db, out, genai, back};
    for (int i = 0; i < 4; i++) unlink(files[i]);
    free(db);
    free(out);
    free(genai);
    free(back);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !mkdtemp(dir)) return 1;
    servesim = argv[1];
    char *sc = in_dir("export.json"), *db = in_dir("run.db");
    FILE *f = fopen(sc, "w");
    if (f) {
        fputs(scenario, f);
        fclose(f);
    }
    result run = sv("run", sc, "-o", db, NULL);
    is_int(run.status, 0, "the run to export is stored");
    runner_drop(&run);
    result rep = sv("report", db, "--json", NULL);
    cJSON *report = cJSON_Parse(rep.out);
    runner_drop(&rep);
    int n = 0;
    row *r = rows_of(db, 1, &n); /* the scenario's warmup_s */
    int failed = 0;
    for (int i = 0; i < n; i++)
        failed += !r[i].completed;
    ok(n > 20 && failed > 0, "the run has %d requests after warm-up, %d of them timed out", n,
       failed);
    test_vllm(db, r, n, report);
    test_genai(db, r, n);
    test_refused(db);
    test_capped(sc);
    cJSON_Delete(report);
    free(r);
    static const char *const junk[] = {"vllm.json", "vllm.db",     "profile_export.json",
                                       "genai.db",  "export.json", "run.db",
                                       "stdout",    "stderr",      NULL};
    for (const char *const *p = junk; *p; p++) {
        char *path = in_dir(*p);
        unlink(path);
        free(path);
    }
    free(sc);
    free(db);
    rmdir(dir);
    return tap_done();
}
