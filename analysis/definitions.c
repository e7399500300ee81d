/*
 * definitions.c: one run's per-token latency under every public tool's
 * definition, side by side (docs/reference/metrics.md has the sources),
 * and the SLO curve -- attainment as a function of a threshold.
 *
 * The tools differ in three ways, and each row below fixes all three: the
 * formula per request (with or without the first token), the weighting
 * (one sample per request, per token, or every gap pooled) and the
 * percentile method (numpy's linear interpolation, MLPerf's arr[floor(n p)],
 * GuideLLM's weighted nearest rank).
 */
#include "an_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum method {
    LINEAR,           /* numpy's default over the (expanded) samples */
    NEAREST_RANK,     /* MLPerf loadgen: sorted[floor(n p)] */
    WEIGHTED_NEAREST, /* GuideLLM: first sample whose cumulative weight share reaches p */
} method;

typedef struct sample {
    double v, w;
} sample;

static int cmp_sample(const void *a, const void *b)
{
    double x = ((const sample *)a)->v, y = ((const sample *)b)->v;
    return (x > y) - (x < y);
}

/* The value at position pos (0-based) of the list in which each sample is
 * repeated w times; *i and *before carry the scan forward between calls. */
static double value_at(const sample *s, size_t n, double pos, size_t *i, double *before)
{
    while (*i + 1 < n && *before + s[*i].w <= pos) *before += s[(*i)++].w;
    return s[*i].v;
}

/* The q-quantile of sorted weighted samples; total = their weight. */
static double quantile(const sample *s, size_t n, double total, method m, double q)
{
    if (m == NEAREST_RANK) {
        size_t i = (size_t)floor((double)n * q);
        return s[i < n ? i : n - 1].v;
    }
    if (m == WEIGHTED_NEAREST) {
        double cum = 0;
        for (size_t i = 0; i < n; i++)
            if ((cum += s[i].w) / total >= q) return s[i].v;
        return s[n - 1].v;
    }
    /* linear, as numpy over the expanded list: between positions lo and lo + 1 */
    double h = (total - 1) * q, lo = floor(h), before = 0;
    size_t i = 0;
    double a = value_at(s, n, lo, &i, &before);
    double b = value_at(s, n, lo + 1 <= total - 1 ? lo + 1 : lo, &i, &before);
    return a + (h - lo) * (b - a);
}

static void summarise(sample *s, size_t n, method m, an_stats *out)
{
    static const double qs[] = {0.5, 0.9, 0.95, 0.99, 0.999};
    double *dst[] = {&out->p50, &out->p90, &out->p95, &out->p99, &out->p999};
    out->n = (int64_t)n;
    if (n == 0) {
        out->mean = out->p50 = out->p90 = out->p95 = out->p99 = out->p999 = out->max = NAN;
        return;
    }
    qsort(s, n, sizeof *s, cmp_sample);
    double total = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        total += s[i].w;
        sum += s[i].v * s[i].w;
    }
    out->mean = sum / total;
    for (int k = 0; k < 5; k++) *dst[k] = quantile(s, n, total, m, qs[k]);
    out->max = s[n - 1].v;
}

/* Reads (value, weight) pairs: the query's first two columns. */
static int read_samples(const an__query *q, const char *sql, sample **out, size_t *n, util_diag *d)
{
    sqlite3_stmt *st = an__prepare(q, sql);
    *out = NULL;
    *n = 0;
    if (!st) return an__db_fail(q->db, d, "cannot query");
    size_t cap = 1024;
    sample *s = util_xmalloc(cap * sizeof *s);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) s = util_xrealloc(s, (cap *= 2) * sizeof *s);
        s[*n].v = sqlite3_column_double(st, 0);
        s[(*n)++].w = sqlite3_column_double(st, 1);
    }
    sqlite3_finalize(st);
    *out = s;
    return rc == SQLITE_DONE ? UTIL_OK : an__db_fail(q->db, d, "cannot read requests");
}

#define MEASURED                                                                                   \
    " FROM request_metrics WHERE run_id = ?1 AND status = 'completed' AND arrival_s >= ?2"
#define ITERATIONS " FROM iterations WHERE run_id = ?1 AND start_s >= ?2"

static const struct {
    const char *name, *formula, *tools, *method_doc;
    const char *sql; /* value, weight */
    method m;
    int schema; /* the first database schema with its columns */
} defs[AN_N_DEFINITIONS] = {
    {"tpot", "(e2e - ttft) / (output - 1)", "vLLM TPOT, GenAI-Perf ITL, GuideLLM ITL value, "
     "inference-perf TPOT", "per request, linear",
     "SELECT tpot_s, 1" MEASURED " AND tpot_s IS NOT NULL", LINEAR, 0},
    {"tpot_mlperf", "(e2e - ttft) / (output - 1)", "MLPerf Inference TPOT",
     "per request, nearest rank", "SELECT tpot_s, 1" MEASURED " AND tpot_s IS NOT NULL",
     NEAREST_RANK, 0},
    {"itl_guidellm", "(e2e - ttft) / (output - 1)", "GuideLLM ITL as it aggregates",
     "token-weighted (output - 1), weighted nearest rank",
     "SELECT tpot_s, output_tokens - 1" MEASURED " AND tpot_s IS NOT NULL", WEIGHTED_NEAREST, 0},
    {"tpot_incl_ttft", "e2e / output", "LLMPerf inter_token_latency, inference-perf NTPOT",
     "per request, linear", "SELECT tpot_incl_ttft_s, 1" MEASURED, LINEAR, 0},
    {"tpot_guidellm", "e2e / output", "GuideLLM TPOT as it aggregates",
     "token-weighted (output), weighted nearest rank",
     "SELECT tpot_incl_ttft_s, output_tokens" MEASURED, WEIGHTED_NEAREST, 0},
    /* the three pooled ITLs part only when a chunk carries several tokens
     * (speculative decoding): a step's decoders each stream one chunk, of
     * 1 + the drafts it accepted, one gap (the step) after its last.  A run
     * recorded before schema 9 (a NULL decode_tokens) has no token counts:
     * no samples for the two that need them. */
    {"itl_pooled", "every gap between consecutive chunks (one per step a sequence ran)",
     "vLLM ITL, AIPerf ICL, inference-perf ITL without a tokenizer",
     "pooled over all chunks, linear (needs --record-iterations)",
     "SELECT end_s - start_s, decode_seqs" ITERATIONS " AND decode_seqs > 0", LINEAR, 0},
    {"itl_per_token", "every gap between consecutive tokens: a chunk of n is its gap, then n - 1 "
     "zeros", "inference-perf ITL with a tokenizer (each token stamped with its chunk's time)",
     "pooled over all tokens, linear (needs --record-iterations)",
     "SELECT end_s - start_s, decode_seqs" ITERATIONS " AND decode_seqs > 0"
     " AND decode_tokens IS NOT NULL UNION ALL SELECT 0, decode_tokens - decode_seqs" ITERATIONS
     " AND decode_tokens > decode_seqs", LINEAR, AN__SCHEMA_TOKENS},
    {"itl_chunked", "each chunk's gap / its tokens, one value a chunk",
     "GenAI-Perf chunked ITL (its ITL-by-token-position plot; not in its statistics)",
     "pooled over all chunks, linear (needs --record-iterations)",
     "SELECT (end_s - start_s) / (c.key + 1), c.value FROM iterations,"
     " json_each(coalesce(decode_accepted, json_array(decode_seqs))) c"
     " WHERE run_id = ?1 AND start_s >= ?2 AND decode_seqs > 0 AND decode_tokens IS NOT NULL"
     " AND c.value > 0", LINEAR,
     AN__SCHEMA_TOKENS},
    {"ttft", "first token - sent (the client's clock)",
     "vllm bench serve, GenAI-Perf, LLMPerf, inference-perf TTFT", "per request, linear",
     "SELECT ttft_s, 1" MEASURED, LINEAR, 0},
    {"ttft_mlperf", "first token - sent (the client's clock)", "MLPerf Inference TTFT",
     "per request, nearest rank", "SELECT ttft_s, 1" MEASURED, NEAREST_RANK, 0},
    {"ttft_engine", "first token out of the engine core - queued in it (the engine's clock)",
     "vLLM's engine-core stamps, queued_ts to first_token_ts (RequestStateStats)",
     "per request, linear", "SELECT engine_ttft_s, 1" MEASURED " AND engine_ttft_s IS NOT NULL",
     LINEAR, AN__SCHEMA_PIPELINE},
    {"e2e_engine", "last token out of the engine core - queued in it (the engine's clock)",
     "vLLM's engine-core stamps, queued_ts to last_token_ts", "per request, linear",
     "SELECT engine_e2e_s, 1" MEASURED " AND engine_e2e_s IS NOT NULL", LINEAR,
     AN__SCHEMA_PIPELINE},
};

/* What the text calls each row: the tool and the metric it reproduces
 * (docs/metrics.md and docs/analysis.md have the sources), so that a reader
 * finds "GuideLLM TPOT" rather than an id of the JSON. */
static const struct {
    const char *name, *label;
} labels[AN_N_DEFINITIONS] = {
    {"tpot", "vLLM TPOT"},          {"tpot_mlperf", "MLPerf TPOT"},
    {"itl_guidellm", "GuideLLM ITL"}, {"tpot_incl_ttft", "LLMPerf ITL"},
    {"tpot_guidellm", "GuideLLM TPOT"}, {"itl_pooled", "vLLM ITL"},
    {"itl_per_token", "inference-perf ITL"}, {"itl_chunked", "GenAI-Perf chunk ITL"},
    {"ttft", "vLLM TTFT"},          {"ttft_mlperf", "MLPerf TTFT"},
    {"ttft_engine", "engine TTFT"},   {"e2e_engine", "engine E2E"},
};

const char *an__definition_label(const char *name)
{
    for (int i = 0; i < AN_N_DEFINITIONS; i++)
        if (!strcmp(labels[i].name, name)) return labels[i].label;
    return name;
}

static double stored_warmup(sqlite3 *db, int64_t run_id, util_diag *d, int *rc)
{
    an__query q = {db, run_id, 0, NULL, -1, an__schema(db), 0};
    double w[2];
    *rc = an__row(&q, "SELECT json_extract(scenario, '$.warmup_s'), count(*) FROM runs"
                      " WHERE id = ?1", w, 2, d);
    if (!*rc && !(w[1] > 0)) *rc = util_diag_add(d, "no run with id %lld", (long long)run_id);
    return isnan(w[0]) ? 0 : w[0];
}

/* Definition i of run q, into out. */
static int compute(const an__query *q, int i, an_definition *out, util_diag *d)
{
    *out = (an_definition){defs[i].name, defs[i].formula, defs[i].tools, defs[i].method_doc, {0}};
    sample *s = NULL;
    size_t n = 0;
    int rc = UTIL_OK;
    if (q->schema >= defs[i].schema) /* an older database has no such column: no samples */
        rc = read_samples(q, defs[i].sql, &s, &n, d);
    if (!rc) summarise(s, n, defs[i].m, &out->stats);
    free(s);
    return rc;
}

static an__query run_query(sqlite3 *db, int64_t run_id, util_diag *d, int *rc)
{
    return (an__query){db, run_id, stored_warmup(db, run_id, d, rc), NULL, -1, an__schema(db), 0};
}

int an_definitions(sqlite3 *db, int64_t run_id, an_definition out[AN_N_DEFINITIONS],
                   util_diag *d)
{
    int rc;
    an__query q = run_query(db, run_id, d, &rc);
    for (int i = 0; !rc && i < AN_N_DEFINITIONS; i++) rc = compute(&q, i, &out[i], d);
    return rc;
}

int an_definition_of(sqlite3 *db, int64_t run_id, const char *name, an_definition *out,
                     util_diag *d)
{
    int i = 0;
    while (i < AN_N_DEFINITIONS && strcmp(defs[i].name, name)) i++;
    if (i == AN_N_DEFINITIONS) return util_diag_fail(d, "no definition '%s'", name);
    int rc;
    an__query q = run_query(db, run_id, d, &rc);
    return rc ? rc : compute(&q, i, out, d);
}

int an_definition_chunks(sqlite3 *db, int64_t run_id, an_chunks *out, util_diag *d)
{
    *out = (an_chunks){false, NAN, NAN, NAN};
    int rc;
    an__query q = run_query(db, run_id, d, &rc);
    double v[3] = {0, NAN, NAN};
    if (!rc && q.schema >= AN__SCHEMA_SPEC)
        rc = an__row(&q, "SELECT count(*) FROM replicas WHERE run_id = ?1 AND spec_k > 0", v, 1, d);
    out->speculative = v[0] > 0;
    if (rc || q.schema < AN__SCHEMA_TOKENS) return rc;
    rc = an__row(&q, "SELECT total(decode_seqs), total(decode_tokens), count(*)" ITERATIONS
                     " AND decode_seqs > 0 AND decode_tokens IS NOT NULL", v, 3, d);
    if (!rc && v[2] > 0) {
        out->chunks = v[0];
        out->tokens = v[1];
        out->tokens_per_chunk = an__ratio(v[1], v[0]);
    }
    return rc;
}

/* ---- the SLO curve ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int an_slo_curve(sqlite3 *db, int64_t run_id, an_metric metric, const char *cls, int points,
                 an_curve *c, util_diag *d)
{
    memset(c, 0, sizeof *c);
    c->metric = metric;
    c->cls = cls;
    int rc;
    an__query q = {db, run_id, stored_warmup(db, run_id, d, &rc), cls, -1,
                   an__schema(db), 0};
    if (rc) return rc;
    /* completed requests pass at their value (a one-token reply has no TPOT
     * and passes a TPOT threshold: 0, as vLLM counts it); every other ended
     * request fails at any threshold */
    char *sql = util_xasprintf("SELECT coalesce(%s_s, 0) FROM request_metrics WHERE run_id = ?1"
                               " AND arrival_s >= ?2 AND status = 'completed'" AN__IN_GROUP
                               " ORDER BY 1",
                               an_metric_names[metric]);
    double *v, ended[1];
    size_t n;
    rc = an__column(&q, sql, &v, &n, d);
    free(sql);
    /* every request sent after warm-up: one not completed (rejected, timed
     * out, unfinished) fails at any threshold */
    sql = util_xasprintf("SELECT count(*) FROM requests WHERE run_id = ?1 AND arrival_s >= ?2"
                         AN__IN_GROUP "%s", an__counted(q.schema));
    if (!rc) rc = an__row(&q, sql, ended, 1, d);
    free(sql);
    if (rc) return rc;
    qsort(v, n, sizeof *v, cmp_double); /* coalesce may break the SQL order */
    c->ended = (int64_t)ended[0];
    c->measured = (int64_t)n;
    c->n_points = n ? points : 0;
    c->points = util_xcalloc((size_t)(points > 0 ? points : 1), sizeof *c->points);
    for (int i = 0; i < c->n_points; i++) {
        /* thresholds at evenly spaced ranks of the measured values */
        size_t k = points == 1 ? n - 1 : (size_t)llround((double)(n - 1) * i / (points - 1));
        c->points[i].threshold_s = v[k];
        size_t pass = k + 1;
        while (pass < n && v[pass] <= v[k]) pass++; /* ties pass together */
        c->points[i].attainment = (double)pass / (double)c->ended;
    }
    static const double wanted[5] = {0.5, 0.9, 0.95, 0.99, 0.999};
    for (int i = 0; i < 5; i++) {
        double need = ceil(wanted[i] * (double)c->ended - 1e-9);
        c->needed[i].attainment = wanted[i];
        c->needed[i].threshold_s = (need >= 1 && need <= (double)n) ? v[(size_t)need - 1] : NAN;
    }
    free(v);
    return UTIL_OK;
}

void an_curve_fini(an_curve *c)
{
    free(c->points);
    memset(c, 0, sizeof *c);
}
