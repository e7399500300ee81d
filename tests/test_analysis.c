/*
 * test_analysis.c: what is asked of stored runs -- what-if SLOs against
 * direct SQL counts, percentile targets, every tool's per-token latency
 * against independent computations over the rows (and the pooled ITLs of a
 * speculative run, whose chunks carry several tokens), the SLO curve, cost and
 * energy arithmetic on hand-built runs (the seed's figures), the power model
 * against its catalog figures, utilisation's queue and KV figures, the
 * report as CSV and Markdown, and the report by tenant and by tier against
 * SQL over each group's rows (Jain's index against its formula).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "tap.h"

/* cmp_ok(a, op, b, "description"): a op b on numbers, printing both sides on
 * failure (tap.h has no such assertion; a candidate for it). */
/* The run most tests ask (tests/scenarios/analysis-quick.json): 1,500
 * requests on an H100 at 12/s, a 5 s warm-up, an SLO of 0.5 s TTFT and 50 ms
 * TPOT. */
static char *quick;

/* Every value of a one-column query, in its order. */
static double *column(sqlite3 *db, const char *sql, size_t *n)
{
    sqlite3_stmt *st;
    size_t cap = 1024;
    double *v = util_xmalloc(cap * sizeof *v);
    *n = 0;
    sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (*n == cap) v = util_xrealloc(v, (cap *= 2) * sizeof *v);
        v[(*n)++] = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy's linear percentile of sorted values, written out independently. */
static double np_percentile(const double *v, size_t n, double q)
{
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    return lo + 1 < n ? v[lo] + (h - (double)lo) * (v[lo + 1] - v[lo]) : v[lo];
}

static bool report_with(sqlite3 *db, const char *const *slo, bool by_replica, an_report *r)
{
    util_diag d;
    util_diag_init(&d);
    an_options opt = {.by_replica = by_replica};
    bool ok = true;
    for (; slo && *slo; slo++) ok &= an_options_add_slo(&opt, *slo, &d) == UTIL_OK;
    ok = ok && db && an_report_compute_with(db, 1, &opt, r, &d) == UTIL_OK;
    util_diag_print(&d, stdout, "# report");
    an_options_fini(&opt);
    util_diag_fini(&d);
    return ok;
}

/* ---- exact percentiles in bounded memory ---- */

static bool stats_same(const an_stats *a, const an_stats *b)
{
    const double x[] = {a->mean, a->p50, a->p90, a->p95, a->p99, a->p999, a->max};
    const double y[] = {b->mean, b->p50, b->p90, b->p95, b->p99, b->p999, b->max};
    bool same = a->n == b->n;
    for (int i = 0; i < 7; i++) same &= !memcmp(&x[i], &y[i], sizeof x[i]);
    return same;
}

static bool section_same(const an_section *a, const an_section *b)
{
    return stats_same(&a->ttft, &b->ttft) && stats_same(&a->tpot, &b->tpot) &&
           stats_same(&a->tpot_incl_ttft, &b->tpot_incl_ttft) && stats_same(&a->e2e, &b->e2e) &&
           stats_same(&a->queue, &b->queue) &&
           stats_same(&a->per_user_tokens_per_s, &b->per_user_tokens_per_s) &&
           a->measured == b->measured && a->good == b->good && a->window_s == b->window_s;
}

/* The report of a run with classes, per replica, computed with the values
 * in memory and again with a budget of one value -- every distribution
 * spilled to histograms at once, and each percentile narrowed 16 bits a
 * pass down to its exact key -- and of 1,000 values (a pass or two): the
 * same figures to the bit, and each percentile what numpy's rule gives over
 * the sorted column. */
static void test_budget(void)
{
    sqlite3 *db = support_run_json(
        quick,
        (const char *const[]){"cluster.replicas=3", "workload.classes=[{\"name\": \"chat\", "
                              "\"weight\": 2, \"slo\": {\"ttft_s\": 0.3}}, {\"name\": \"batch\", "
                              "\"weight\": 1}]",
                              NULL},
        false);
    an_report r[3];
    static const size_t budgets[] = {0, 1, 1000};
    bool all = db != NULL;
    for (int i = 0; i < 3 && all; i++) {
        util_diag d;
        util_diag_init(&d);
        an_options opt = {.by_replica = true, .scan_budget_values = budgets[i]};
        all &= an_report_compute_with(db, 1, &opt, &r[i], &d) == UTIL_OK;
        util_diag_print(&d, stdout, "# report");
        util_diag_fini(&d);
    }
    ok(all, "the report computes with every budget");
    if (!all) return;
    for (int i = 1; i < 3; i++) {
        bool same = section_same(&r[0].req, &r[i].req);
        for (int k = 0; k < r[0].n_classes; k++) same &= section_same(&r[0].classes[k].req, &r[i].classes[k].req);
        for (int k = 0; k < r[0].n_replicas; k++)
            same &= section_same(&r[0].replicas[k].req, &r[i].replicas[k].req);
        ok(same, "a budget of %zu values gives the same figures, bit for bit", budgets[i]);
    }
    size_t n;
    double *v = column(db, "SELECT e2e_s FROM request_metrics WHERE run_id = 1 AND status = "
                           "'completed' AND arrival_s >= (SELECT json_extract(scenario, "
                           "'$.warmup_s') FROM runs WHERE id = 1) ORDER BY e2e_s", &n);
    is_near(r[1].req.e2e.p99, np_percentile(v, n, 0.99), 0, "spilled p99 of e2e: numpy's, exactly");
    is_near(r[1].req.e2e.p50, np_percentile(v, n, 0.50), 0, "and p50");
    free(v);
    for (int i = 0; i < 3; i++) an_report_fini(&r[i]);
    sqlite3_close(db);
}

/* ---- what-if SLOs ---- */

static void test_whatif(sqlite3 *db)
{
    double ended = support_q1(db, "SELECT count(*) FROM requests WHERE arrival_s >= 5 AND status IN "
                          "('completed', 'rejected', 'timed_out')");
    static const char *const cases[][2] = {
        {"ttft=0.05", "ttft_s <= 0.05 AND coalesce(tpot_s, 0) <= 0.05"},
        {"ttft=0.2", "ttft_s <= 0.2 AND coalesce(tpot_s, 0) <= 0.05"},
        {"tpot=0.012", "ttft_s <= 0.5 AND coalesce(tpot_s, 0) <= 0.012"},
        {"e2e=3", "ttft_s <= 0.5 AND coalesce(tpot_s, 0) <= 0.05 AND e2e_s <= 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *sql = util_xasprintf("SELECT count(*) FROM request_metrics WHERE arrival_s >= 5 AND "
                                   "status = 'completed' AND %s",
                                   cases[i][1]);
        double good = support_q1(db, sql);
        free(sql);
        an_report r;
        if (!report_with(db, (const char *const[]){cases[i][0], NULL}, false, &r)) {
            ok(false, "--slo %s", cases[i][0]);
            continue;
        }
        is_near(r.req.attainment, good / ended, 1e-12,
                "--slo %s: attainment %.4f equals a direct SQL count (%g of %g)", cases[i][0],
                r.req.attainment, good, ended);
        ok(r.slo_whatif, "and is marked as a what-if");
        an_report_fini(&r);
    }

    /* percentile targets: value, verdict and margin */
    size_t n;
    double *v = column(db, "SELECT ttft_s FROM request_metrics WHERE status = 'completed' AND "
                           "arrival_s >= 5 ORDER BY ttft_s", &n);
    double p99 = np_percentile(v, n, 0.99), p999 = np_percentile(v, n, 0.999);
    free(v);
    an_report r;
    char yes[64], no[64];
    snprintf(yes, sizeof yes, "ttft_p99=%.17g", p99 * 1.01);
    snprintf(no, sizeof no, "ttft_p99.9=%.17g", p999 * 0.99);
    if (report_with(db, (const char *const[]){yes, no, NULL}, false, &r)) {
        is_int(r.n_targets, 2, "two percentile targets");
        is_near(r.targets[0].value_s, p99, 1e-12, "ttft_p99 target: P99 %.4f s",
                r.targets[0].value_s);
        ok(r.targets[0].met, "met");
        is_near(r.targets[0].margin_s, 0.01 * p99, 1e-12, "with margin %.4f s",
                r.targets[0].margin_s);
        is_near(r.targets[1].value_s, p999, 1e-12, "ttft_p99.9 target: P99.9 %.4f s",
                r.targets[1].value_s);
        ok(!r.targets[1].met, "ttft_p99.9 target below the value: not met");
        cmp_ok(r.targets[1].margin_s, <, 0, "negative margin");
        an_report_fini(&r);
    }

    util_diag d;
    util_diag_init(&d);
    an_options opt = {0};
    is_int(an_options_add_slo(&opt, "ttft=-1", &d), UTIL_EINPUT, "bad --slo values are refused");
    is_int(an_options_add_slo(&opt, "ttfb=1", &d), UTIL_EINPUT, "and keys");
    is_int(an_options_add_slo(&opt, "ttft_q99=1", &d), UTIL_EINPUT, "and percentiles");
    an_options_fini(&opt);
    util_diag_fini(&d);
}

/* Percentile targets in the stored scenario: answered as --slo's are, an
 * --slo of the same target replacing the scenario's, a class's own targets
 * for its requests.  main's db is the same scenario and seed without them,
 * so its --slo answers are the reference. */
static bool targets_same(const an_target *a, const an_target *b)
{
    return a->metric == b->metric && !memcmp(&a->q, &b->q, sizeof a->q) &&
           a->threshold_s == b->threshold_s && !memcmp(&a->value_s, &b->value_s, sizeof a->value_s) &&
           a->value_all_s == b->value_all_s && a->met == b->met && a->margin_s == b->margin_s;
}

static void test_scenario_targets(sqlite3 *ref)
{
    sqlite3 *db = support_run_json(
        quick, (const char *const[]){"slo.ttft_p99_s=2", "slo.tpot_p999_s=0.001",
                                     "slo.e2e_mean_s=100", NULL},
        false);
    an_report r, want;
    bool both = report_with(db, NULL, false, &r) &&
                report_with(ref, (const char *const[]){"ttft_p99=2", "tpot_p99.9=0.001",
                                                       "e2e_mean=100", NULL},
                            false, &want);
    ok(both, "a run with slo.ttft_p99_s, tpot_p999_s and e2e_mean_s reports");
    if (!both) {
        sqlite3_close(db);
        return;
    }
    is_int(r.n_targets, 3, "the scenario's three targets are answered");
    for (int i = 0; i < r.n_targets && i < want.n_targets; i++) {
        ok(targets_same(&r.targets[i], &want.targets[i]),
           "scenario target %d (%s, q %g): the verdict and margin --slo gives (%s, %+.4f s)", i,
           an_metric_names[r.targets[i].metric], r.targets[i].q, r.targets[i].met ? "met" : "not met",
           r.targets[i].margin_s);
        ok(r.targets[i].from_scenario && !want.targets[i].from_scenario, "and says where it came from");
    }
    ok(r.n_targets == 3 && r.targets[0].met && !r.targets[1].met, "ttft p99 <= 2 met, tpot p99.9 <= 1 ms not");
    cJSON *j = an_report_json(&r, false);
    has_str(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(util_json_get(j, "slo.targets"), 0), "source")), "scenario",
            "JSON: the target's source is the scenario");
    cJSON_Delete(j);
    an_report_fini(&r);
    an_report_fini(&want);

    /* --slo replaces the scenario's same target and adds its own */
    if (report_with(db, (const char *const[]){"ttft_p99=0.001", "ttft_p50=2", "tpot_p99.9=1", NULL},
                    false, &r)) {
        is_int(r.n_targets, 4, "--slo ttft_p99 and tpot_p99.9 replace the scenario's ttft_p99_s and "
                               "tpot_p999_s, ttft_p50 is a fourth");
        ok(r.targets[0].threshold_s == 0.001 && !r.targets[0].met && !r.targets[0].from_scenario,
           "ttft_p99 <= 1 ms: the --slo's, not met");
        int p99 = 0;
        for (int i = 0; i < r.n_targets; i++)
            p99 += r.targets[i].metric == AN_TTFT && r.targets[i].q == 0.99;
        is_int(p99, 1, "one ttft p99 target, not two");
        ok(r.n_targets == 4 && r.targets[3].from_scenario && r.targets[3].metric == AN_E2E,
           "the scenario's other follows the --slo ones");
        an_report_fini(&r);
    }
    sqlite3_close(db);

    /* a class's own */
    db = support_run_json(quick,
                          (const char *const[]){"workload.classes=[{\"name\": \"chat\", \"weight\": "
                                                "1, \"slo\": {\"ttft_p90_s\": 5}}, {\"name\": "
                                                "\"batch\", \"weight\": 1}]",
                                                NULL},
                          false);
    if (report_with(db, NULL, false, &r)) {
        ok(r.n_targets == 1 && r.targets[0].cls && !strcmp(r.targets[0].cls, "chat") &&
               r.targets[0].q == 0.9,
           "a class's slo.ttft_p90_s is a target on its requests");
        size_t n;
        double *v = column(db, "SELECT ttft_s FROM request_metrics WHERE class = 'chat' AND status "
                               "= 'completed' AND arrival_s >= 5 ORDER BY ttft_s", &n);
        is_near(r.n_targets ? r.targets[0].value_s : NAN, np_percentile(v, n, 0.9), 1e-12,
                "its value is P90 of the class's TTFT");
        free(v);
        an_report_fini(&r);
    }
    sqlite3_close(db);

    util_diag d;
    util_diag_init(&d);
    an_options opt = {0};
    ok(an_options_add_slo(&opt, "e2e_p999=5", &d) == UTIL_OK && opt.n_targets == 1 &&
           opt.targets[0].q == 99.9 / 100,
       "--slo e2e_p999 is e2e_p99.9, as the scenario spells it");
    an_options_fini(&opt);
    util_diag_fini(&d);

    char *errors = NULL;
    sim_scenario sc;
    int rc = support_scenario(quick, (const char *const[]){"slo.ttft_p99_s=500", NULL}, &sc, &errors);
    ok(rc != 0 && errors && strstr(errors, "slo.ttft_p99_s"),
       "slo.ttft_p99_s=500 is refused as a ttft_s would be");
    sim_scenario_fini(&sc); /* the scenario owns its JSON, loaded or refused */
    free(errors);
}

static void test_class_whatif(void)
{
    sqlite3 *db = support_run_json(
        quick,
        (const char *const[]){"workload.classes=[{\"name\": \"chat\", \"weight\": 1, "
                              "\"slo\": {\"ttft_s\": 0.3}}, {\"name\": \"batch\", "
                              "\"weight\": 1}]",
                              NULL},
        false);
    an_report r;
    if (!report_with(db, (const char *const[]){"ttft=0.05", "chat.ttft=0.1", NULL}, false, &r)) {
        ok(false, "class what-if");
        sqlite3_close(db);
        return;
    }
    is_near(r.classes[0].req.slo.ttft_s, 0.1, 0, "CLASS.ttft replaces one class's");
    is_near(r.classes[1].req.slo.ttft_s, 0.05, 0, "--slo ttft replaces the run's");
    is_near(r.classes[0].req.slo.tpot_s, 0.05, 0, "unnamed keys stay the scenario's");
    double good = support_q1(db, "SELECT count(*) FROM request_metrics WHERE arrival_s >= 5 AND status = "
                         "'completed' AND coalesce(tpot_s, 0) <= 0.05 AND ttft_s <= CASE class "
                         "WHEN 'chat' THEN 0.1 ELSE 0.05 END");
    is_int(r.req.good, (int64_t)good, "the run's good requests: each class by its own targets");
    an_report_fini(&r);
    util_diag d;
    util_diag_init(&d);
    an_options opt = {0};
    an_options_add_slo(&opt, "chta.ttft=0.1", &d);
    is_int(an_report_compute_with(db, 1, &opt, &r, &d), UTIL_EINPUT,
           "a what-if for a class the run lacks is an error, not a no-op");
    has_str(d.count ? d.msgs[0] : NULL, "no class 'chta'", "naming the class");
    an_report_fini(&r);
    an_options_fini(&opt);
    util_diag_fini(&d);
    sqlite3_close(db);
}

/* ---- definitions ---- */

/* GuideLLM: the first value whose cumulative weight share reaches q. */
static double weighted_nearest(sqlite3 *db, const char *sql, double q)
{
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    double total = support_q1(db, "SELECT total(output_tokens) FROM request_metrics WHERE status = "
                          "'completed' AND arrival_s >= 5"),
           cum = 0, v = NAN;
    while (sqlite3_step(st) == SQLITE_ROW) {
        v = sqlite3_column_double(st, 0);
        if ((cum += sqlite3_column_double(st, 1)) / total >= q) break;
    }
    sqlite3_finalize(st);
    return v;
}

static void test_definitions(sqlite3 *db)
{
    util_diag d;
    util_diag_init(&d);
    an_definition defs[AN_N_DEFINITIONS];
    if (an_definitions(db, 1, defs, &d)) {
        ok(false, "definitions");
        util_diag_fini(&d);
        return;
    }
    size_t n;
    double *v = column(db, "SELECT tpot_s FROM request_metrics WHERE status = 'completed' AND "
                           "arrival_s >= 5 AND tpot_s IS NOT NULL ORDER BY 1", &n);
    is_near(defs[0].stats.p99, np_percentile(v, n, 0.99), 1e-15, "tpot p99: numpy's percentile");
    is_near(defs[1].stats.p99, v[(size_t)floor(0.99 * (double)n)], 1e-15,
            "tpot_mlperf p99: sorted[floor(n p)]");
    free(v);
    is_near(defs[4].stats.p90,
            weighted_nearest(db, "SELECT tpot_incl_ttft_s, output_tokens FROM request_metrics "
                                 "WHERE status = 'completed' AND arrival_s >= 5 ORDER BY 1", 0.9),
            1e-15, "tpot_guidellm p90: token-weighted nearest rank");
    is_near(defs[4].stats.mean,
            support_q1(db, "SELECT total(tpot_incl_ttft_s * output_tokens) / total(output_tokens) FROM "
                   "request_metrics WHERE status = 'completed' AND arrival_s >= 5"),
            1e-12, "and its mean is token-weighted");
    /* pooled ITL: every iteration's duration once per decoding sequence */
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT end_s - start_s, decode_seqs FROM iterations WHERE start_s >= 5"
                           " AND decode_seqs > 0 ORDER BY 1", -1, &st, NULL);
    size_t cap = 1 << 16, m = 0;
    double *gaps = util_xmalloc(cap * sizeof *gaps);
    while (sqlite3_step(st) == SQLITE_ROW)
        for (int k = 0; k < sqlite3_column_int(st, 1); k++) {
            if (m == cap) gaps = util_xrealloc(gaps, (cap *= 2) * sizeof *gaps);
            gaps[m++] = sqlite3_column_double(st, 0);
        }
    sqlite3_finalize(st);
    cmp_ok(m, >, 0, "the iterations have token gaps");
    is_near(defs[5].stats.p99, m ? np_percentile(gaps, m, 0.99) : NAN, 1e-12,
            "itl_pooled: numpy's percentile over every token gap (%zu gaps)", m);
    is_near(defs[5].stats.p50, m ? np_percentile(gaps, m, 0.5) : NAN, 1e-12, "its median too");
    cmp_ok(defs[5].stats.p99, >, defs[0].stats.p99,
           "pooled ITL's tail (%.4f s) is heavier than TPOT's (%.4f s): prefills stall decodes",
           defs[5].stats.p99, defs[0].stats.p99);
    free(gaps);
    util_diag_fini(&d);
}

/* ---- pooled ITLs when a chunk carries several tokens ---- */

static const an_definition *named(const an_definition *defs, const char *name)
{
    for (int i = 0; i < AN_N_DEFINITIONS; i++)
        if (!strcmp(defs[i].name, name)) return &defs[i];
    return &defs[0];
}

/* A plain run streams one token a chunk: the ITL counting chunks and the
 * two counting tokens are one list of gaps, bit for bit. */
static void test_plain_chunks(sqlite3 *db)
{
    util_diag d;
    util_diag_init(&d);
    an_definition defs[AN_N_DEFINITIONS];
    an_chunks c;
    if (an_definitions(db, 1, defs, &d) || an_definition_chunks(db, 1, &c, &d)) {
        ok(false, "definitions of the plain run");
        util_diag_fini(&d);
        return;
    }
    const an_stats *chunk = &named(defs, "itl_pooled")->stats;
    ok(stats_same(chunk, &named(defs, "itl_per_token")->stats),
       "plain run: per-token ITL (inference-perf) = per-chunk ITL (vLLM), bit for bit");
    ok(stats_same(chunk, &named(defs, "itl_chunked")->stats),
       "plain run: GenAI-Perf's chunked ITL = per-chunk ITL, bit for bit");
    ok(!c.speculative && c.tokens_per_chunk == 1, "one token a chunk (%g), not speculative",
       c.tokens_per_chunk);
    util_diag_fini(&d);
}

/* The measured iterations' gaps as GenAI-Perf's chunked ITL takes them, one
 * value a chunk, from decode_accepted read here with sscanf: a chunk of
 * j + 1 tokens gives its step's duration / (j + 1). */
static double *chunked_gaps(sqlite3 *db, size_t *n)
{
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT end_s - start_s, decode_seqs, decode_accepted FROM iterations"
                           " WHERE run_id = 1 AND start_s >= 5 AND decode_seqs > 0", -1, &st, NULL);
    size_t cap = 1 << 16;
    double *v = util_xmalloc(cap * sizeof *v);
    *n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        double gap = sqlite3_column_double(st, 0);
        const char *acc = (const char *)sqlite3_column_text(st, 2);
        int counts[SIM_SPEC_MAX_K + 1] = {sqlite3_column_int(st, 1)}, k = 0, used;
        for (const char *p = acc ? acc + 1 : ""; k <= SIM_SPEC_MAX_K &&
             sscanf(p, "%d%n", &counts[k], &used) == 1; p += used + 1)
            k++;
        for (int j = 0; j <= SIM_SPEC_MAX_K; j++)
            for (int i = 0; i < counts[j]; i++) {
                if (*n == cap) v = util_xrealloc(v, (cap *= 2) * sizeof *v);
                v[(*n)++] = gap / (j + 1);
            }
    }
    sqlite3_finalize(st);
    qsort(v, *n, sizeof *v, cmp_double);
    return v;
}

/* The tokens of one chunk under acceptance_rate a with K drafts (each kept
 * with probability a given those before it): the mean and variance of
 * 1 + accepted, accepted at most K. */
static void chunk_moments(double a, int k, double *mean, double *var)
{
    double m = 0, m2 = 0, p_reach = 1;
    for (int j = 0; j <= k; j++) {
        double p = j < k ? p_reach * (1 - a) : p_reach; /* exactly j drafts kept */
        m += p * (j + 1);
        m2 += p * (j + 1) * (j + 1);
        p_reach *= a;
    }
    *mean = m;
    *var = m2 - m * m;
}

/* A speculative run: each step streams a decoder 1 + its accepted drafts. */
static void test_spec_chunks(void)
{
    const char *sets[] = {"cluster.speculative={\"method\": \"eagle\", "
                          "\"num_speculative_tokens\": 3, \"acceptance_rate\": 0.6}", NULL};
    sqlite3 *db = support_run_json(quick, sets, true);
    util_diag d;
    util_diag_init(&d);
    an_definition defs[AN_N_DEFINITIONS];
    an_chunks c;
    if (!db || an_definitions(db, 1, defs, &d) || an_definition_chunks(db, 1, &c, &d)) {
        ok(false, "definitions of the speculative run");
        util_diag_fini(&d);
        sqlite3_close(db);
        return;
    }
    /* the recording: a row's tokens are its chunks' */
    is_near(support_q1(db, "SELECT total(decode_tokens) FROM iterations"),
            support_q1(db, "SELECT total(decode_tokens) FROM replicas"), 0,
            "the iterations' tokens add up to the replicas' decode tokens");
    is_int(support_q1(db, "SELECT count(*) FROM iterations i WHERE decode_accepted IS NOT NULL AND"
                          " (decode_seqs, decode_tokens) IS NOT (SELECT total(c.value),"
                          " total((c.key + 1) * c.value) FROM json_each(i.decode_accepted) c)"),
           0, "each speculative row's chunks are its decoders, their tokens its tokens");
    cmp_ok(support_q1(db, "SELECT count(decode_accepted) FROM iterations"), >, 1000,
           "the steps speculated");

    /* the three pooled ITLs, each against its own SQL */
    const an_stats *chunk = &named(defs, "itl_pooled")->stats,
                   *token = &named(defs, "itl_per_token")->stats,
                   *chunked = &named(defs, "itl_chunked")->stats,
                   *tpot = &named(defs, "tpot")->stats;
#define STEPS " FROM iterations WHERE start_s >= 5 AND decode_seqs > 0"
    double sum = support_q1(db, "SELECT total((end_s - start_s) * decode_seqs)" STEPS),
           chunks = support_q1(db, "SELECT total(decode_seqs)" STEPS),
           tokens = support_q1(db, "SELECT total(decode_tokens)" STEPS);
#undef STEPS
    is_near(chunk->mean, sum / chunks, 1e-12 * chunk->mean,
            "vLLM ITL: the mean gap a chunk (each step once a decoder)");
    is_near(token->mean, sum / tokens, 1e-12 * token->mean,
            "inference-perf ITL: the same gaps over the tokens (a chunk's others are 0)");
    is_near(c.tokens_per_chunk, tokens / chunks, 1e-12, "tokens a chunk: %.4f", tokens / chunks);
    is_near(chunk->mean / token->mean, c.tokens_per_chunk, 1e-12 * c.tokens_per_chunk,
            "their ratio is the tokens a chunk, exactly (the same gaps over chunks and tokens)");
    double zeros = (tokens - chunks) / tokens;
    ok(zeros > 0.5 ? token->p50 == 0 : token->p50 > 0,
       "inference-perf ITL's median is 0 when most tokens are a chunk's others (%.3f of them)",
       zeros);
    size_t n;
    double *v = chunked_gaps(db, &n);
    is_int(chunked->n > 0, 1, "GenAI-Perf's chunked ITL has samples");
    is_near(chunked->p99, n ? np_percentile(v, n, 0.99) : NAN, 1e-12,
            "GenAI-Perf chunked ITL p99: numpy's over gap / tokens, one a chunk (%zu)", n);
    is_near(chunked->p50, n ? np_percentile(v, n, 0.5) : NAN, 1e-12, "its median too");
    double total = 0;
    for (size_t i = 0; i < n; i++) total += v[i];
    is_near(chunked->mean, n ? total / (double)n : NAN, 1e-12 * chunked->mean, "and its mean");
    free(v);
    is_near((double)n, chunks, 0, "one value a chunk");
    cmp_ok(chunked->mean, <, chunk->mean, "a chunk's gap over its tokens is below its gap");
    ok(c.speculative && c.tokens_per_chunk > 1, "the run speculates, %.3f tokens a chunk",
       c.tokens_per_chunk);
    cmp_ok(tpot->mean, <, chunk->mean,
           "TPOT (token-normalised, %.5f s) is below vLLM's ITL (one gap a chunk, %.5f s)",
           tpot->mean, chunk->mean);

    /* the run's tokens a chunk against the acceptance model: within 4
     * standard errors of its mean, less at most K a request for the last
     * chunk, cut to what the request had left */
    double mean, var;
    chunk_moments(0.6, 3, &mean, &var);
    double se = sqrt(var / chunks),
           cut = 3 * support_q1(db, "SELECT count(*) FROM requests WHERE arrival_s >= 5") / chunks;
    ok(c.tokens_per_chunk > mean - cut - 4 * se && c.tokens_per_chunk < mean + 4 * se,
       "tokens a chunk %.4f: the model's %.4f (se %.4f, the last chunks' cut at most %.4f)",
       c.tokens_per_chunk, mean, se, cut);
    util_diag_fini(&d);
    sqlite3_close(db);
}

static void test_curve(sqlite3 *db)
{
    util_diag d;
    util_diag_init(&d);
    an_curve c;
    if (an_slo_curve(db, 1, AN_TTFT, NULL, 11, &c, &d)) {
        ok(false, "slo curve");
        util_diag_fini(&d);
        return;
    }
    bool counts = true, rising = true;
    for (int i = 0; i < c.n_points; i++) {
        char *sql = util_xasprintf("SELECT count(*) FROM request_metrics WHERE status = "
                                   "'completed' AND arrival_s >= 5 AND ttft_s <= %.17g",
                                   c.points[i].threshold_s);
        counts &= fabs(c.points[i].attainment - support_q1(db, sql) / (double)c.ended) < 1e-12;
        free(sql);
        rising &= i == 0 || c.points[i].attainment >= c.points[i - 1].attainment;
    }
    is_int(c.n_points, 11, "the curve has the points asked for");
    ok(counts, "each point's attainment is a direct count over ended requests");
    ok(rising, "the curve rises");
    is_near(c.n_points > 10 ? c.points[10].attainment : NAN, 1, 0, "to 1 at the largest value");
    char *at = util_xasprintf("SELECT count(*) FROM request_metrics WHERE status = 'completed' AND "
                              "arrival_s >= 5 AND ttft_s <= %.17g", c.needed[3].threshold_s);
    char *below = util_xasprintf("SELECT count(*) FROM request_metrics WHERE status = "
                                 "'completed' AND arrival_s >= 5 AND ttft_s < %.17g",
                                 c.needed[3].threshold_s);
    cmp_ok(support_q1(db, at) / (double)c.ended, >=, 0.99,
           "the threshold 99%% needs (%.4f s) reaches 99%%", c.needed[3].threshold_s);
    cmp_ok(support_q1(db, below) / (double)c.ended, <, 0.99, "and is the smallest that does");
    free(at);
    free(below);
    an_curve_fini(&c);
    util_diag_fini(&d);
}

/* ---- utilisation ---- */

static void test_use(sqlite3 *db)
{
    an_report r;
    if (!report_with(db, NULL, true, &r)) {
        ok(false, "report by replica");
        return;
    }
    double end = support_q1(db, "SELECT sim_end_s FROM runs");
    is_near(r.use.queue_mean,
            support_q1(db, "SELECT total(first_scheduled_s - enqueue_s) FROM requests") / end, 1e-12,
            "queue mean = total waiting time / simulated time (Little's law)");
    /* the peak by an independent sweep over +1 / -1 events */
    size_t n, m;
    double *in = column(db, "SELECT enqueue_s FROM requests ORDER BY 1", &n);
    double *outq = column(db, "SELECT first_scheduled_s FROM requests ORDER BY 1", &m);
    int64_t len = 0, peak = 0;
    for (size_t i = 0, j = 0; i < n;) {
        if (j < m && outq[j] <= in[i]) len--, j++;
        else if (++len > peak) peak = len, i++;
        else i++;
    }
    free(in);
    free(outq);
    is_int(r.use.queue_peak, peak, "queue peak = the sweep's maximum (%lld)", (long long)peak);
    cmp_ok(r.use.kv_mean_fraction, >, 0, "KV mean (%.3f) is positive", r.use.kv_mean_fraction);
    cmp_ok(r.use.kv_mean_fraction, <=, r.use.kv_peak_fraction, "and at most the peak (%.3f)",
           r.use.kv_peak_fraction);
    is_int(r.n_replicas, 1, "--by replica: one replica");
    is_int(r.n_replicas ? r.replicas[0].req.arrived : -1, r.req.arrived,
           "its requests are the run's");
    /* every iteration's energy and time add up to the replica's */
    is_near(support_q1(db, "SELECT total(energy_j) FROM iterations"),
            support_q1(db, "SELECT energy_j FROM replicas"),
            1e-9 * support_q1(db, "SELECT energy_j FROM replicas"),
            "iterations' energy sums to the replica's busy energy");
    is_near(support_q1(db, "SELECT total(end_s - start_s) FROM iterations"),
            support_q1(db, "SELECT busy_s FROM replicas"), 1e-6, "and their durations to its busy time");
    is_near(support_q1(db, "SELECT total(decode_seqs) FROM iterations"),
            support_q1(db, "SELECT decode_tokens FROM replicas"), 0,
            "and their decoding sequences to its decode tokens");
    an_report_fini(&r);
}

/* ---- power, cost and energy ---- */

/* Busy power per GPU of a run (W). */
static double busy_w(sqlite3 *db)
{
    return support_q1(db, "SELECT energy_j / busy_s / gpus FROM replicas");
}

static void test_power(void)
{
    /* prompts only: compute-bound at the catalog's mfu, so prefill_w (700 W on an H100) */
    sqlite3 *pre = support_run_json(
        quick,
        (const char *const[]){"workload.output_tokens={\"dist\": \"fixed\", \"value\": 1}",
                              "workload.prompt_tokens={\"dist\": \"fixed\", \"value\": 4096}",
                              "cluster.cost_model.iteration_overhead_s=0", NULL},
        false);
    /* long replies, small batch: bandwidth-bound below the catalog's mbu */
    sqlite3 *dec = support_run_json(
        quick,
        (const char *const[]){"workload.output_tokens={\"dist\": \"fixed\", \"value\": 500}",
                              "workload.prompt_tokens={\"dist\": \"fixed\", \"value\": 50}",
                              "workload.arrival.rate_per_s=1", NULL},
        false);
    double wp = busy_w(pre), wd = busy_w(dec);
    is_near(wp, 700, 7, "prefill at the catalog's MFU draws the H100's prefill figure (%.0f W)", wp);
    cmp_ok(wd, >, 75, "decoding a few sequences draws more than idle (75 W): %.0f W", wd);
    cmp_ok(wd, <, 380, "and less than the decode figure (380 W)");
    double mbu = support_q1(dec, "SELECT bytes / (peak_bw * busy_s) FROM replicas");
    double mfu = support_q1(dec, "SELECT flops / (peak_flops * busy_s) FROM replicas");
    /* the model is linear below the TDP cap, so the run's mean power is the
     * power at the run's mean utilisation, exactly */
    is_near(wd, 75 + 625 * mfu / 0.5 + 305 * mbu / 0.75, 1e-9 * wd,
            "and is idle + (prefill - idle) MFU / mfu + (decode - idle) MBU / mbu "
            "(MFU %.3f, MBU %.3f)", mfu, mbu);
    sqlite3_close(pre);
    sqlite3_close(dec);
}

/* A run of two requests, 0..10 s, on one replica of `gpus` GPUs that is
 * busy `busy_s` with `energy_j`: the seed's arithmetic, by hand.  The
 * scenario is tests/scenarios/analysis-hand.json with the override `set`
 * (or none). */
/* A recorder of tests/scenarios/analysis-hand.json with the overrides
 * (a NULL-ended list), begun in memory: rows written by hand follow. */
typedef struct hand {
    sim_scenario sc;
    util_diag d;
    rec_recorder *rec;
    sim_sink sink;
} hand;

static void hand_begin(hand *h, const char *const *sets)
{
    char *json = support_scenario_text("analysis-hand.json");
    support_scenario(json, sets, &h->sc, NULL);
    free(json);
    util_diag_init(&h->d);
    rec_open(NULL, &h->rec, &h->d);
    rec_begin(h->rec, &h->sc, &h->d);
    h->sink = rec_sink(h->rec);
}

/* Ends the run at end_s; the database is the caller's. */
static sqlite3 *hand_end(hand *h, double end_s)
{
    rec_run_end end = {SIM_STATUS_COMPLETED, NULL, end_s, 0, 1};
    rec_finish(h->rec, &end, &h->d);
    sqlite3 *db = rec_release(h->rec); /* the recorder is gone, its database ours */
    sim_scenario_fini(&h->sc);
    util_diag_print(&h->d, stdout, "# hand");
    util_diag_fini(&h->d);
    return db;
}

static sqlite3 *hand_run(int gpus, double usd_per_gpu_hour, double busy_s, double energy_j,
                         int32_t output_tokens, const char *set)
{
    hand h;
    hand_begin(&h, (const char *const[]){set, NULL});
    sim_sink sink = h.sink;
    for (int i = 0; i < 2; i++) {
        sim_request_row r = {.id = i, .cls = "default", .task_id = -1, .call_index = -1,
                             .replica = 0, .decode_replica = -1, .status = SIM_COMPLETED,
                             .arrival_s = 0, .enqueue_s = 0, .first_scheduled_s = 0,
                             .first_token_s = 1, .finish_s = 10, .decode_enqueue_s = NAN,
                             .prompt_tokens = 1000, .output_tokens = output_tokens / 2};
        sink.request(sink.ctx, &r);
    }
    sim_replica_row rp = {.replica = 0, .pool = "default", .gpu = "h100-sxm",
                          .model = "llama-3.1-8b", .gpus = gpus, .busy_s = busy_s,
                          .kv_capacity_tokens = 1000, .peak_flops = 1e15, .peak_bw = 1e12,
                          .tdp_w = 700, .idle_w = 100, .prefill_w = 700, .decode_w = 380,
                          .energy_j = energy_j, .usd_per_gpu_hour = usd_per_gpu_hour,
                          .end_reason = SIM_END_OF_RUN};
    sink.replica(sink.ctx, &rp);
    return hand_end(&h, 10);
}

static void test_cost_energy(void)
{
    /* $10 for 1M tokens is $10 per million: one GPU at $3600/h for the 10 s window */
    sqlite3 *db = hand_run(1, 3600, 10, 3600, 1000000, NULL);
    an_report r;
    if (report_with(db, NULL, false, &r)) {
        is_near(r.cost.usd, 10, 1e-9, "one GPU at $3600/h for 10 s costs $10");
        is_near(r.cost.usd_per_million_output_tokens, 10, 1e-9,
                "$10 for 1M output tokens is $10 per million");
        is_near(r.cost.usd_per_million_total_tokens, 10 / 1.002, 1e-9,
                "per million tokens, prompts (2000) included");
        is_near(r.cost.gpu_hours, 10.0 / 3600, 1e-15, "GPU-hours = GPUs x window");
        an_report_fini(&r);
    }
    sqlite3_close(db);

    /* 3,600 J for 1,000 tokens is 3.6 J/token and 1 Wh */
    db = hand_run(1, 1, 10, 3600, 1000, "energy={\"host_w_per_gpu\": 40, \"pue\": 1.5}");
    if (report_with(db, NULL, false, &r)) {
        is_near(r.energy.gpu_j, 3600, 1e-9, "GPU energy: 360 W busy for the whole 10 s window");
        is_near(r.energy.gpu_j_per_output_token, 3.6, 1e-12, "3,600 J for 1,000 tokens: 3.6 J/token");
        is_near(r.energy.gpu_wh, 1, 1e-12, "and 1 Wh");
        is_near(r.energy.wall_j, (3600 + 40 * 10) * 1.5, 1e-9,
                "wall = (GPU + host 40 W x 10 s) x PUE 1.5 = 6,000 J");
        cmp_ok(r.energy.wall_j, >=, r.energy.gpu_j, "GPU energy <= wall energy");
        an_report_fini(&r);
    }
    sqlite3_close(db);

    /* an idle cluster: 2 GPUs busy 1 s of 10 draw idle power the other 9 */
    db = hand_run(2, 3, 1, 1000, 1000, "cost.overhead_fraction=0.5");
    if (report_with(db, NULL, false, &r)) {
        is_near(r.energy.gpu_j, 1000 + 100 * 2 * 9, 1e-9, "idle GPUs draw idle power");
        is_near(r.cost.usd, 2 * 3 * 10.0 / 3600 * 1.5, 1e-12,
                "cost is every GPU, busy or idle, plus the 50%% overhead");
        is_near(r.cost.usd_per_million_output_tokens_at_full_utilisation,
                r.cost.usd_per_million_output_tokens * 0.1, 1e-12,
                "kept busy all the time it would cost its busy fraction (10%%) as much per token");
        an_report_fini(&r);
    }
    sqlite3_close(db);
}

/* The same cluster at falling load: the same price per hour, a rising price
 * per token. */
static void test_cost_by_load(void)
{
    const char *rates[] = {"workload.arrival.rate_per_s=12", "workload.arrival.rate_per_s=4",
                           "workload.arrival.rate_per_s=1"};
    double per_hour[3], per_token[3];
    for (int i = 0; i < 3; i++) {
        sqlite3 *db = support_run_json(
            quick, (const char *const[]){rates[i], "stop.requests=600", NULL}, false);
        an_report r;
        per_hour[i] = per_token[i] = NAN;
        if (report_with(db, NULL, false, &r)) {
            per_hour[i] = r.cost.usd / (r.req.window_s / 3600);
            per_token[i] = r.cost.usd_per_million_output_tokens;
            cmp_ok(r.energy.gpu_j, <=, r.energy.wall_j, "%s: GPU energy <= wall energy", rates[i]);
            an_report_fini(&r);
        }
        sqlite3_close(db);
    }
    is_near(per_hour[0], per_hour[2], 1e-9,
            "the cluster costs the same per hour at any load ($%.2f)", per_hour[0]);
    is_near(per_hour[1], per_hour[2], 1e-9, "at 4 req/s too");
    cmp_ok(per_token[0], <, per_token[1],
           "and more per token as load falls: $%.3f, $%.3f, $%.3f per 1M output tokens",
           per_token[0], per_token[1], per_token[2]);
    cmp_ok(per_token[1], <, per_token[2], "and falls further");
}

/* ---- formats ---- */

static int count_leaves(const cJSON *o)
{
    if (!cJSON_IsObject(o) && !cJSON_IsArray(o)) return 1;
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, o) n += count_leaves(c);
    return n;
}

static void test_formats(sqlite3 *db)
{
    an_report r;
    if (!report_with(db, NULL, false, &r)) return;
    cJSON *j = an_report_json(&r, false);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    an_json_print_csv(j, f);
    fclose(f);
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
    is_int(lines, count_leaves(j) + 1, "CSV: a header and one row per metric");
    char *want = util_xasprintf("\ncost.usd,%.10g\n", r.cost.usd);
    has_str(buf, want, "with the JSON's values");
    free(want);
    free(buf);
    f = open_memstream(&buf, &len);
    an_json_print_markdown(j, f);
    fclose(f);
    has_str(buf, "## latency\n\n| metric | mean | p50 |", "Markdown: the latency table");
    has_str(buf, "## energy\n\n| metric | value |", "and a table per section");
    free(buf);
    cJSON_Delete(j);
    an_report_fini(&r);
}

/* The queue's trend against the fluid limit.  M/D/1 with a 0.1 s service
 * (tests/scenarios/plan-md1.json): at 9 per second (rho 0.9) the wait is
 * stationary -- 0.45 s on average -- and does not trend; at 11 per second
 * the queue gains 1 - 10/11 of a second of wait for every second of
 * arrivals.  5,000 arrivals end before the overload guard would stop the
 * run (it would at 1,002 in flight), so the run says "completed" and only
 * the trend tells.  Its tolerance: the queue's Poisson noise, sqrt(11 x 455)
 * = 70 requests or 7 s of wait, against 41 s of growth over the run, read
 * through a least-squares slope of 5,000 points: 20% covers it. */
static void test_queue_growth(void)
{
    char *md1 = support_scenario_text("plan-md1.json");
    static const char *const rates[] = {"workload.arrival.rate_per_s=9",
                                        "workload.arrival.rate_per_s=11"};
    for (int k = 0; k < 2; k++) {
        sqlite3 *db = support_run_json(
            md1, (const char *const[]){rates[k], "stop.requests=5000", "warmup_s=0", NULL}, false);
        an_report r = {0};
        util_diag d;
        util_diag_init(&d);
        int rc = db ? an_report_compute(db, 1, &r, &d) : 1;
        is_int(rc, 0, "M/D/1 %s: reported", rates[k] + 19);
        is_str(r.status, "completed", "M/D/1 %s: completed", rates[k] + 19);
        if (k == 0) {
            ok(!r.req.queue_grew && fabs(r.req.queue_growth) < AN_QUEUE_GROWTH,
               "rho 0.9: the stationary queue does not trend (%g s/s)", r.req.queue_growth);
        } else {
            ok(r.req.queue_grew, "rho 1.1: the queue grew throughout the run");
            is_near(r.req.queue_growth, 1.0 / 11, 0.2 / 11,
                    "at the fluid limit's 1 - mu/lambda = 1/11 s a second (%g)",
                    r.req.queue_growth);
        }
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        an_report_print(&r, false, f);
        fclose(f);
        ok((strstr(text, "the queue grew throughout the run") != NULL) == (k == 1),
           "M/D/1 %s: the report's first lines say so %s", rates[k] + 19,
           k ? "" : "only when it did");
        free(text);
        an_report_fini(&r);
        util_diag_fini(&d);
        sqlite3_close(db);
    }
    free(md1);
}

/* ---- agent tasks' SLO ---- */

/* Two plain requests, 0..50 s, and five agent tasks by hand: e2e 10, 30 (at
 * a 30 s target: met), 48, one failed and one unfinished. */
static sqlite3 *hand_tasks(const char *set, const char *set2)
{
    hand h;
    hand_begin(&h, (const char *const[]){set, set2, NULL});
    sim_sink sink = h.sink;
    for (int i = 0; i < 2; i++) {
        sim_request_row r = {.id = i, .cls = "default", .task_id = -1, .call_index = -1,
                             .replica = 0, .decode_replica = -1, .status = SIM_COMPLETED,
                             .arrival_s = i, .enqueue_s = i, .first_scheduled_s = i,
                             .first_token_s = i + 1, .finish_s = 50, .decode_enqueue_s = NAN,
                             .prompt_tokens = 10, .output_tokens = 10};
        sink.request(sink.ctx, &r);
    }
    static const struct { const char *status; double start, finish; } tasks[] = {
        {SIM_COMPLETED, 0, 10}, {SIM_COMPLETED, 1, 31}, {SIM_COMPLETED, 2, 50},
        {SIM_FAILED, 3, NAN},   {SIM_UNFINISHED, 4, NAN},
    };
    for (int i = 0; i < 5; i++) {
        sim_task_row t = {.id = i, .cls = "default", .status = tasks[i].status,
                          .start_s = tasks[i].start, .finish_s = tasks[i].finish, .calls = 3};
        sink.task(sink.ctx, &t);
    }
    sim_replica_row rp = {.replica = 0, .pool = "default", .gpu = "h100-sxm",
                          .model = "llama-3.1-8b", .gpus = 1, .busy_s = 50,
                          .kv_capacity_tokens = 1000, .peak_flops = 1e15, .peak_bw = 1e12,
                          .tdp_w = 700, .idle_w = 100, .prefill_w = 700, .decode_w = 380,
                          .energy_j = 1, .usd_per_gpu_hour = 1, .end_reason = SIM_END_OF_RUN};
    sink.replica(sink.ctx, &rp);
    return hand_end(&h, 50);
}

static void test_task_slo(void)
{
    sqlite3 *db = hand_tasks("slo.task_e2e_s=30", NULL);
    an_report r;
    if (report_with(db, NULL, false, &r)) {
        is_int(r.tasks.count, 5, "five tasks by hand");
        is_near(r.tasks.slo_s, 30, 0, "slo.task_e2e_s is the tasks' target");
        is_int(r.tasks.good, 2, "e2e 10 and 30 meet 30 s; 48, the failed and the unfinished do not");
        is_near(r.tasks.attainment, 0.4, 1e-15, "task attainment 2 of 5");
        is_near(r.tasks.goodput_tasks_per_s, 2.0 / 50, 1e-15, "task goodput 2 over the 50 s window");
        ok(isnan(r.req.attainment), "a task target sets no per-request SLO");
        cJSON *j = an_report_json(&r, false);
        is_near(util_json_number(j, "tasks.slo.task_e2e_s", NAN), 30, 0, "JSON tasks.slo.task_e2e_s");
        is_near(util_json_number(j, "tasks.slo.attainment", NAN), 0.4, 1e-15,
                "JSON tasks.slo.attainment");
        is_near(util_json_number(j, "tasks.slo.goodput_tasks_per_s", NAN), 0.04, 1e-15,
                "JSON tasks.slo.goodput_tasks_per_s");
        cJSON_Delete(j);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        an_report_print(&r, false, f);
        fclose(f);
        ok(strstr(text, "task slo: e2e <= 30 s: attainment 40.0%, goodput 0.040 tasks/s") != NULL,
           "the text report says so");
        free(text);
        an_report_fini(&r);
    }
    if (report_with(db, (const char *const[]){"task_e2e=48s", NULL}, false, &r)) {
        is_near(r.tasks.slo_s, 48, 0, "--slo task_e2e=48s replaces the scenario's 30 s");
        is_near(r.tasks.attainment, 0.6, 1e-15, "and 48 s meets it too: 3 of 5");
        is_near(r.tasks.goodput_tasks_per_s, 3.0 / 50, 1e-15, "goodput 3 / 50 s");
        ok(r.slo_whatif, "marked as a what-if");
        an_report_fini(&r);
    }
    sqlite3_close(db);

    db = hand_tasks("warmup_s=0.5", NULL);
    if (report_with(db, (const char *const[]){"task_e2e=30", NULL}, false, &r)) {
        is_int(r.tasks.count, 4, "after a 0.5 s warm-up, the task started at 0 is left out");
        is_near(r.tasks.attainment, 0.25, 1e-15, "--slo task_e2e=30 on a run without one: 1 of 4");
        is_near(r.tasks.goodput_tasks_per_s, 1.0 / 49, 1e-15, "over the 1..50 s window");
        an_report_fini(&r);
    }
    if (report_with(db, NULL, false, &r)) {
        ok(isnan(r.tasks.attainment) && isnan(r.tasks.goodput_tasks_per_s),
           "no task target: no task attainment");
        an_report_fini(&r);
    }
    sqlite3_close(db);

    util_diag d;
    util_diag_init(&d);
    an_options opt = {0};
    is_int(an_options_add_slo(&opt, "task_e2e=0", &d), UTIL_EINPUT, "task_e2e=0 is refused");
    is_int(an_options_add_slo(&opt, "task_e2e=7200", &d), UTIL_EINPUT,
           "and 7200 without a unit (seconds or ms?)");
    is_int(an_options_add_slo(&opt, "task_e2e=2d", &d), UTIL_EINPUT, "and an unknown unit");
    is_int(an_options_add_slo(&opt, "task_e2e=120min", &d), UTIL_OK, "120min is fine");
    is_int(an_options_add_slo(&opt, "task_e2e=2h", &d), UTIL_OK, "and so is 2h");
    is_near(opt.slo.task_e2e_s, 7200, 0, "7200 s");
    an_options_fini(&opt);
    util_diag_fini(&d);
}

/* ---- a disaggregated run, by replica ---- */

/* The static decode pool (tests/scenarios/cluster-static-decode.json) with
 * an SLO: the decode replica's section is of the requests whose decode ran
 * there (requests.decode_replica) -- their count handed over, their TPOT,
 * judged by the scenario's SLO -- and its TTFT is the prefill side's, so
 * it has none.  The figures against SQL over the rows. */
static void test_disaggregated(void)
{
    char *pools = support_scenario_text("cluster-static-decode.json");
    sqlite3 *db = support_run_json(
        pools, (const char *const[]){"stop.requests=40", "slo={\"ttft_s\": 0.5, \"tpot_s\": 0.1}",
                                     NULL},
        false);
    free(pools);
    an_report r;
    if (!report_with(db, NULL, true, &r)) {
        ok(false, "a disaggregated run, by replica");
        sqlite3_close(db);
        return;
    }
    is_int(r.n_replicas, 2, "two replicas: prefill and decode");
    const an_use *dec = r.n_replicas == 2 ? &r.replicas[1] : &r.replicas[0];
    ok(dec->decodes && !r.replicas[0].decodes, "replica 1 is the decode pool's, replica 0 not");
    double handed = support_q1(db, "SELECT count(*) FROM requests WHERE decode_replica = 1");
    cmp_ok(handed, >, 0, "requests were handed over (%g)", handed);
    is_int(dec->req.handed_over, (int64_t)handed, "the decode section counts those handed over");
    is_int(dec->req.arrived, (int64_t)handed, "which are the requests that arrived at it");
    is_int(dec->req.completed,
           (int64_t)support_q1(db, "SELECT count(*) FROM requests WHERE decode_replica = 1 AND "
                                   "status = 'completed'"),
           "and their completed ones");
    size_t n;
    double *v = column(db, "SELECT tpot_s FROM request_metrics WHERE id IN (SELECT id FROM "
                           "requests WHERE decode_replica = 1) AND status = 'completed' AND "
                           "tpot_s IS NOT NULL ORDER BY 1", &n);
    is_int(dec->req.tpot.n, (int64_t)n, "its TPOT is over its requests");
    if (n) is_near(dec->req.tpot.p50, np_percentile(v, n, 0.5), 0, "TPOT p50: numpy's, exactly");
    free(v);
    is_int(dec->req.ttft.n, 0, "no TTFT on the decode side: it is the prefill's");
    is_near(dec->req.attainment,
            support_q1(db, "SELECT avg(status = 'completed' AND ttft_s <= 0.5 AND "
                           "(tpot_s IS NULL OR tpot_s <= 0.1)) FROM request_metrics "
                           "WHERE id IN (SELECT id FROM requests WHERE decode_replica = 1)"),
            1e-12, "its attainment: its requests' against the scenario's SLO");
    util_diag d;
    util_diag_init(&d);
    an_options one = {.by_replica = true, .scan_budget_values = 1};
    an_report spilled;
    if (an_report_compute_with(db, 1, &one, &spilled, &d) == UTIL_OK) {
        ok(section_same(&dec->req, &spilled.replicas[1].req),
           "spilled to histograms and refined: the decode section's figures, bit for bit");
        an_report_fini(&spilled);
    } else {
        ok(false, "the report computes with a budget of one value");
    }
    util_diag_fini(&d);
    is_int(r.replicas[0].req.handed_over, 0, "the prefill replica hands over, receives none");
    is_int(r.replicas[0].req.arrived, r.req.arrived, "and its requests are the run's");
    an_report_fini(&r);
    sqlite3_close(db);
}

/* ---- tenants and tiers ---- */

/* Jain's index on hand-made figures: 1 for equal shares, 1/n when one
 * has everything, undefined for none. */
static void test_jain(void)
{
    is_near(an_jain_index((const double[]){0.7, 0.7, 0.7}, 3), 1, 1e-15, "Jain: equal shares, 1");
    is_near(an_jain_index((const double[]){1, 0, 0, 0}, 4), 0.25, 1e-15,
            "Jain: one of four has it all, 1/4");
    is_near(an_jain_index((const double[]){1, 0.5}, 2), 2.25 / 2.5, 1e-15,
            "Jain: 1 and 0.5, (1.5)^2 / (2 x 1.25)");
    ok(isnan(an_jain_index(NULL, 0)) && isnan(an_jain_index((const double[]){0, 0}, 2)),
       "Jain: no tenant, or nothing to share, undefined");
}

/* The run of test_groups: three classes -- two tenants, the third with
 * none; tiers critical, batch and vLLM's 7 -- chat with its own TTFT. */
static const char *const group_sets[] = {
    "workload.classes=[{\"name\": \"chat\", \"weight\": 2, \"tenant\": \"acme\", "
    "\"priority\": \"critical\", \"slo\": {\"ttft_s\": 0.3}}, {\"name\": \"bulk\", \"weight\": 1, "
    "\"tenant\": \"beta\", \"priority\": \"batch\"}, {\"name\": \"misc\", \"weight\": 1, "
    "\"priority\": 7}]",
    NULL};

/* A good request of the run of test_groups: each judged by its class's
 * SLO, the scenario's (ttft 0.5 s, tpot 50 ms) and chat's own ttft. */
#define GOOD_SQL                                                                                   \
    "status = 'completed' AND arrival_s >= 5 AND coalesce(tpot_s, 0) <= 0.05 AND ttft_s <= "      \
    "CASE class WHEN 'chat' THEN 0.3 ELSE 0.5 END"

/* A figure of one group's rows (where: its filter on requests) by SQL. */
static double group_q(sqlite3 *db, const char *what, const char *where, const char *and)
{
    char *q = util_xasprintf("SELECT %s FROM request_metrics WHERE run_id = 1 AND id IN (SELECT "
                             "id FROM requests WHERE run_id = 1 AND %s) AND %s", what, where, and);
    double v = support_q1(db, q);
    free(q);
    return v;
}

/* One group's section against SQL over its rows; returns its attainment as
 * the SQL gives it. */
static double group_matches(sqlite3 *db, const an_group *g, const char *where)
{
    double arrived = group_q(db, "count(*)", where, "1");
    double rejected = group_q(db, "count(*)", where, "status = 'rejected'");
    char *shed_where = util_xasprintf("%s AND reason = 'shed'", where); /* not in the view */
    double shed = group_q(db, "count(*)", shed_where, "1");
    free(shed_where);
    double ended = group_q(db, "count(*)", where, "arrival_s >= 5");
    double good = group_q(db, "count(*)", where, GOOD_SQL);
    double window =
        group_q(db, "max(arrival_s + e2e_s)", where, "arrival_s >= 5 AND status = 'completed'") -
        group_q(db, "min(arrival_s)", where, "arrival_s >= 5");
    double queue = group_q(db, "avg(queue_s)", where, "arrival_s >= 5 AND status = 'completed'");
    is_int(g->req.arrived, (int64_t)arrived, "%s: its requests, as SQL counts them", g->name);
    is_int(g->req.rejected, (int64_t)rejected, "%s: rejected", g->name);
    is_near(g->shed_share, shed / arrived, 1e-15, "%s: shed share, shed / arrived", g->name);
    is_int(g->req.ended, (int64_t)ended, "%s: sent after warm-up", g->name);
    is_int(g->req.good, (int64_t)good, "%s: good, each by its class's SLO", g->name);
    is_near(g->req.attainment, good / ended, 1e-15, "%s: attainment", g->name);
    is_near(g->req.goodput_requests_per_s, good / window, 1e-12, "%s: goodput", g->name);
    is_near(g->req.queue.mean, queue, 1e-12, "%s: mean queueing", g->name);
    return good / ended;
}

static int report_groups(sqlite3 *db, size_t budget, an_report *r, util_diag *d)
{
    an_options opt = {.by_tenant = true, .by_tier = true, .scan_budget_values = budget};
    return an_report_compute_with(db, 1, &opt, r, d);
}

/* A database before tenants (schema 10), and a run whose rows carry no
 * priority (recorded before them, in a database upgraded since): both
 * refused, saying why, rather than one group of everything. */
static void test_groups_older(sqlite3 *db)
{
    an_report r;
    util_diag d;
    util_diag_init(&d);
    sqlite3_exec(db, "PRAGMA user_version = 10", NULL, NULL, NULL);
    is_int(report_groups(db, 0, &r, &d), UTIL_EINPUT,
           "--by tenant on a database of schema 10: bad input");
    has_str(d.count ? d.msgs[0] : NULL, "predates tenants and priorities", "saying why");
    an_report_fini(&r);
    util_diag_fini(&d);
    util_diag_init(&d);
    sqlite3_exec(db, "PRAGMA user_version = 12; UPDATE requests SET priority = NULL, tenant = NULL",
                 NULL, NULL, NULL);
    is_int(report_groups(db, 0, &r, &d), UTIL_EINPUT,
           "--by tier on a run whose rows have no priority: bad input");
    has_str(d.count ? d.msgs[0] : NULL, "carry no tenant or priority", "saying why");
    an_report_fini(&r);
    util_diag_fini(&d);
}

/* --by tenant and --by tier: each group's counts, attainment, goodput,
 * shed share and queueing what SQL over its rows gives (some of beta's
 * requests marked rejected, half of them shed, as a gateway would), Jain's index the formula
 * over the tenants' attainment, and the same figures, bit for bit, when
 * the scan spills to histograms. */
static void test_groups(void)
{
    sqlite3 *db = support_run_json(quick, group_sets, false);
    sqlite3_exec(db, "UPDATE requests SET status = 'rejected', first_scheduled_s = NULL, "
                     "first_token_s = NULL, finish_s = NULL, reason = CASE id % 2 WHEN 0 THEN "
                     "'shed' ELSE 'queue_full' END WHERE tenant = 'beta' AND id % 7 = 0",
                 NULL, NULL, NULL);
    an_report r, spilled;
    util_diag d;
    util_diag_init(&d);
    bool computed = db && !report_groups(db, 0, &r, &d) && !report_groups(db, 1, &spilled, &d);
    util_diag_print(&d, stdout, "# report");
    util_diag_fini(&d);
    if (!ok(computed, "the report by tenant and tier computes")) return;
    is_int(r.n_tenants, 3, "three tenants: acme, beta and none");
    has_str(r.tenants[0].name, "acme", "by name");
    has_str(r.tenants[1].name, "beta", "then beta");
    ok(r.tenants[2].null && !strcmp(r.tenants[2].name, "(none)"), "the requests of no tenant last");
    double a = group_matches(db, &r.tenants[0], "tenant = 'acme'");
    double b = group_matches(db, &r.tenants[1], "tenant = 'beta'");
    group_matches(db, &r.tenants[2], "tenant IS NULL");
    cmp_ok(r.tenants[1].shed_share, >, 0.05, "beta's shed share: its shed requests");
    cmp_ok(r.tenants[1].shed_share, <, (double)r.tenants[1].req.rejected / r.tenants[1].req.arrived,
           "beta's shed share: not its rejected ones for a full queue");
    is_int(r.tenant_jain_n, 2, "Jain's index over the two named tenants");
    is_near(r.tenant_jain, (a + b) * (a + b) / (2 * (a * a + b * b)), 1e-15,
            "Jain's index: (a + b)^2 / (2 (a^2 + b^2)) of their attainment");
    is_int(r.n_tiers, 3, "three tiers");
    const char *const names[] = {"critical", "batch", "7"};
    const char *const where[] = {"priority = -1", "priority = 1", "priority = 7"};
    for (int i = 0; i < 3 && r.n_tiers == 3; i++) {
        has_str(r.tiers[i].name, names[i], "tier %d by urgency: %s", i, names[i]);
        group_matches(db, &r.tiers[i], where[i]);
    }
    bool same = r.n_tenants == spilled.n_tenants && r.n_tiers == spilled.n_tiers;
    for (int i = 0; same && i < r.n_tenants; i++)
        same &= section_same(&r.tenants[i].req, &spilled.tenants[i].req);
    for (int i = 0; same && i < r.n_tiers; i++)
        same &= section_same(&r.tiers[i].req, &spilled.tiers[i].req);
    ok(same, "spilled to histograms and refined: every group's figures, bit for bit");
    an_report_fini(&r);
    an_report_fini(&spilled);
    test_groups_older(db);
    sqlite3_close(db);
}

int main(void)
{
    if (support_init()) return 1;
    quick = support_scenario_text("analysis-quick.json");
    sqlite3 *db = support_run_json(quick, NULL, true);
    test_whatif(db);
    test_class_whatif();
    test_scenario_targets(db);
    test_budget();
    test_definitions(db);
    test_plain_chunks(db);
    test_curve(db);
    test_use(db);
    test_formats(db);
    sqlite3_close(db);
    test_power();
    test_cost_energy();
    test_cost_by_load();
    test_queue_growth();
    test_task_slo();
    test_disaggregated();
    test_spec_chunks();
    test_jain();
    test_groups();
    free(quick);
    support_fini();
    return tap_done();
}
