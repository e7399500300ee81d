/*
 * test_workloads.c: every distribution's moments against its closed form,
 * clamps and rounding of token counts, arrival processes (rate, CV), the
 * independence of the source's random streams, and what prompts share:
 * wl_chain, workload.shared_prefix's groups, keys and order (inference-perf's
 * one permutation repeated, or SGLang's --gsp-ordered numbering), and
 * distinct-prompt workloads left exactly as they were; the built-in length
 * datasets, pair by pair against their sources in data/, their draws (pairs
 * kept together, the source's means) and their errors.
 *
 * Tolerances: a sample mean of n draws is within Z standard errors
 * (sigma / sqrt n, sigma from the closed form) of the true mean; Z = 5 makes
 * a false failure a one-in-a-million event, and the seeds are fixed, so the
 * outcome is deterministic.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "wl.h"
#include "wl_int.h"

#define N 200000
#define Z 5.0

static wl_dist make(const char *json, bool whole)
{
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse(json);
    util_schema_apply_union(&wl_dist_schema, o, "d", NULL, &d);
    wl_dist dist;
    int rc = wl_dist_from_json(o, "d", NULL, whole, &dist, &d);
    if (rc || d.count) printf("# unexpected: %s\n", d.count ? d.msgs[0] : "?");
    cJSON_Delete(o);
    util_diag_fini(&d);
    return dist;
}

typedef struct moments {
    double mean, var, min, max;
} moments;

static moments sample(const wl_dist *dist, uint64_t stream)
{
    gsl_rng *r = util_rng_stream(1, stream);
    double s = 0, s2 = 0, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < N; i++) {
        double x = wl_dist_sample(dist, r);
        s += x;
        s2 += x * x;
        lo = fmin(lo, x);
        hi = fmax(hi, x);
    }
    gsl_rng_free(r);
    double m = s / N;
    return (moments){m, s2 / N - m * m, lo, hi};
}

static void check_mean(const char *json, bool whole, double mean, double var)
{
    wl_dist d = make(json, whole);
    moments m = sample(&d, 11);
    is_near(m.mean, mean, Z * sqrt(var / N), "%s: mean %g", json, mean);
    /* A sample variance has standard error sigma^2 sqrt((kurtosis - 1) / n);
     * with kurtosis at most 9 here (exponential; log-normal at sigma 0.5 is
     * 8.9), 5% is at least 7.9 standard errors at n = 2e5. */
    is_near(m.var, var, 0.05 * var, "%s: variance %g", json, var);
}

static void test_moments(void)
{
    wl_dist f = make("{\"dist\": \"fixed\", \"value\": 7}", true);
    moments m = sample(&f, 1);
    is_near(m.min, 7, 0, "fixed is always its value");
    is_near(m.max, 7, 0, "its largest draw too");

    /* uniform whole numbers on [a, b]: mean (a+b)/2, variance ((b-a+1)^2-1)/12 */
    check_mean("{\"dist\": \"uniform\", \"min\": 10, \"max\": 20}", true, 15, (121.0 - 1) / 12);
    check_mean("{\"dist\": \"uniform\", \"min\": 0, \"max\": 2}", false, 1, 4.0 / 12);
    check_mean("{\"dist\": \"exponential\", \"mean\": 2.5}", false, 2.5, 6.25);
    check_mean("{\"dist\": \"normal\", \"mean\": 100, \"sd\": 15}", false, 100, 225);
    /* log-normal: mean m e^{s^2/2}, variance (e^{s^2} - 1) m^2 e^{s^2} */
    double med = 800, s = 0.5, es2 = exp(s * s);
    check_mean("{\"dist\": \"lognormal\", \"median\": 800, \"sigma\": 0.5}", false,
               med * sqrt(es2), (es2 - 1) * med * med * es2);
    wl_dist ln = make("{\"dist\": \"lognormal\", \"median\": 800, \"sigma\": 0.5}", false);
    gsl_rng *r = util_rng_stream(3, 3);
    int below = 0;
    for (int i = 0; i < N; i++) below += wl_dist_sample(&ln, r) < med;
    gsl_rng_free(r);
    is_near(below / (double)N, 0.5, Z * sqrt(0.25 / N), "log-normal median is its median");
}

static void test_whole_numbers(void)
{
    wl_dist e = make("{\"dist\": \"exponential\", \"mean\": 3, \"max\": 10}", true);
    gsl_rng *r = util_rng_stream(5, 5);
    bool whole = true, in_range = true;
    for (int i = 0; i < N; i++) {
        double x = wl_dist_sample(&e, r);
        whole &= x == floor(x);
        in_range &= x >= 1 && x <= 10;
    }
    gsl_rng_free(r);
    ok(whole, "token counts are whole numbers");
    ok(in_range, "token counts are clamped to [max(min, 1), max]");

    wl_dist n = make("{\"dist\": \"normal\", \"mean\": 5, \"sd\": 2, \"min\": 4, \"max\": 6}",
                     true);
    moments m = sample(&n, 6);
    is_near(m.min, 4, 0, "min and max clamp every kind (got %g..%g)", m.min, m.max);
    is_near(m.max, 6, 0, "max clamps the normal's draws");

    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse("{\"dist\": \"fixed\", \"value\": 0}");
    util_schema_apply_union(&wl_dist_schema, o, "p", NULL, &d);
    wl_dist bad;
    is_int(wl_dist_from_json(o, "p", NULL, true, &bad, &d), UTIL_EINPUT, "0 tokens is refused");
    has_str(d.count ? d.msgs[0] : "", "p.value: 0 is below 1 token", "with the path named");
    cJSON_Delete(o);
    util_diag_clear(&d);
    o = cJSON_Parse("{\"dist\": \"uniform\", \"min\": 5}");
    util_schema_apply_union(&wl_dist_schema, o, "u", NULL, &d);
    is_int(wl_dist_from_json(o, "u", NULL, false, &bad, &d), UTIL_EINPUT,
           "uniform needs min and max");
    cJSON_Delete(o);
    util_diag_fini(&d);
}

static wl_spec spec(const char *arrival, const char *prompt)
{
    char *json = util_xasprintf("{\"arrival\": %s, \"prompt_tokens\": %s, \"output_tokens\": "
                                "{\"dist\": \"fixed\", \"value\": 10}}",
                                arrival, prompt);
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse(json);
    util_schema_apply(wl_workload_fields, o, "workload", NULL, &d);
    wl_spec s;
    wl_spec_from_json(o, "workload", NULL, &s, &d);
    if (d.count) printf("# unexpected: %s\n", d.msgs[0]);
    cJSON_Delete(o);
    util_diag_fini(&d);
    free(json);
    return s;
}

/* Gaps between consecutive arrivals of stream 0. */
static moments gaps(const wl_spec *s)
{
    wl_source *src = wl_source_create(s, 9);
    util_diag d;
    util_diag_init(&d);
    wl_record rec;
    wl_source_next(src, 0, &rec, &d);
    double sum = 0, sum2 = 0, last = rec.arrival_s;
    for (int i = 0; i < N; i++) {
        wl_source_next(src, 0, &rec, &d);
        double g = rec.arrival_s - last;
        last = rec.arrival_s;
        sum += g;
        sum2 += g * g;
    }
    wl_source_destroy(src);
    util_diag_fini(&d);
    double m = sum / N;
    return (moments){m, sum2 / N - m * m, 0, 0};
}

static void test_arrivals(void)
{
    wl_spec p = spec("{\"process\": \"poisson\", \"rate_per_s\": 4}",
                     "{\"dist\": \"fixed\", \"value\": 1}");
    moments m = gaps(&p);
    is_near(m.mean, 0.25, Z * 0.25 / sqrt(N), "poisson gaps have mean 1/rate");
    /* CV standard error ~ 0.5 sqrt(8 / n) = 0.0032: 0.02 is 6 of them */
    is_near(sqrt(m.var) / m.mean, 1.0, 0.02, "poisson gaps have CV 1");

    wl_spec g = spec("{\"process\": \"gamma\", \"rate_per_s\": 2, \"cv\": 3}",
                     "{\"dist\": \"fixed\", \"value\": 1}");
    m = gaps(&g);
    is_near(m.mean, 0.5, Z * 1.5 / sqrt(N), "gamma gaps have mean 1/rate");
    /* gamma(1/9) has kurtosis 57: CV standard error ~ 0.5 * 3 * sqrt(56 / n) =
     * 0.025, so 0.15 is 6 of them */
    is_near(sqrt(m.var) / m.mean, 3.0, 0.15, "gamma gaps have the requested CV");

    wl_spec c = spec("{\"process\": \"constant\", \"rate_per_s\": 8}",
                     "{\"dist\": \"fixed\", \"value\": 1}");
    m = gaps(&c);
    is_near(m.mean, 0.125, 1e-12, "constant gaps are 1/rate");
    ok(m.var < 1e-20, "and all equal");
    wl_spec_fini(&p);
    wl_spec_fini(&g);
    wl_spec_fini(&c);
}

/* rate_per_s "inf" (vLLM bench serve's --request-rate inf): every arrival
 * at time 0, whatever the process; max_concurrency is the spec's to carry. */
static void test_rate_inf(void)
{
    const char *arrivals[] = {
        "{\"process\": \"poisson\", \"rate_per_s\": \"inf\", \"max_concurrency\": 8}",
        "{\"process\": \"constant\", \"rate_per_s\": \"inf\", \"max_concurrency\": 8}",
        "{\"process\": \"gamma\", \"rate_per_s\": \"inf\", \"cv\": 2, \"max_concurrency\": 8}",
    };
    for (int k = 0; k < 3; k++) {
        wl_spec s = spec(arrivals[k], "{\"dist\": \"fixed\", \"value\": 1}");
        ok(s.streams && isinf(s.streams[0].rate_per_s), "%s: rate_per_s \"inf\" is infinite",
           arrivals[k]);
        is_int(s.streams ? s.streams[0].max_concurrency : -1, 8, "and max_concurrency is 8");
        wl_source *src = wl_source_create(&s, 3);
        util_diag d;
        util_diag_init(&d);
        wl_record rec;
        double latest = 0;
        for (int i = 0; i < 1000; i++) {
            wl_source_next(src, 0, &rec, &d);
            if (rec.arrival_s > latest) latest = rec.arrival_s;
        }
        is_near(latest, 0, 0, "1000 arrivals, all at time 0");
        wl_source_destroy(src);
        util_diag_fini(&d);
        wl_spec_fini(&s);
    }
}

/* Changing the prompt distribution must not move a single arrival. */
static void test_stream_independence(void)
{
    wl_spec a = spec("{\"process\": \"poisson\", \"rate_per_s\": 3}",
                     "{\"dist\": \"fixed\", \"value\": 100}");
    wl_spec b = spec("{\"process\": \"poisson\", \"rate_per_s\": 3}",
                     "{\"dist\": \"lognormal\", \"median\": 100, \"sigma\": 1}");
    wl_source *sa = wl_source_create(&a, 4), *sb = wl_source_create(&b, 4);
    util_diag d;
    util_diag_init(&d);
    bool same_times = true, same_outputs = true;
    for (int i = 0; i < 1000; i++) {
        wl_record ra, rb;
        wl_source_next(sa, 0, &ra, &d);
        wl_source_next(sb, 0, &rb, &d);
        same_outputs &= ra.output == rb.output;
        same_times &= ra.arrival_s == rb.arrival_s;
    }
    ok(same_times, "arrival times do not depend on the length distributions");
    ok(same_outputs, "output lengths do not depend on the prompt distribution");
    wl_source_destroy(sa);
    wl_source_destroy(sb);
    wl_spec_fini(&a);
    wl_spec_fini(&b);
    util_diag_fini(&d);
}

/* The messages of validating and building a workload. */
static char *workload_errors(const char *json)
{
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse(json);
    wl_spec s;
    if (util_schema_apply(wl_workload_fields, o, "workload", NULL, &d) == 0) {
        wl_spec_from_json(o, "workload", NULL, &s, &d);
        wl_spec_fini(&s); /* a failed build too: it owns what it made */
    }
    char *all = util_diag_join(&d);
    cJSON_Delete(o);
    util_diag_fini(&d);
    return all;
}

#define LENGTHS                                                                                \
    "\"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 1}, \"output_tokens\": {\"dist\": "   \
    "\"fixed\", \"value\": 1}"

/* Every time-valued key keeps one event within the 1e9 s horizon, so no
 * time can overflow the engine's int64 nanoseconds. */
static void test_horizon(void)
{
    char *e = workload_errors("{\"arrival\": {\"rate_per_s\": 1e-10}, " LENGTHS "}");
    has_str(e, "workload.arrival.rate_per_s: 1e-10 is out of range (expected >= 1e-06 and <= "
               "1e+09 per second)",
            "a rate below 1e-6/s (a mean gap past 11 days)");
    free(e);
    e = workload_errors("{\"arrival\": {\"rate_per_s\": 1e-6}, " LENGTHS "}");
    is_str(e, "", "a rate of exactly 1e-6/s is accepted");
    free(e);
    e = workload_errors("{\"arrival\": {\"rate_per_s\": 1}, " LENGTHS ", \"pre_model_s\": "
                        "{\"dist\": \"fixed\", \"value\": 1e10}, \"slow\": {\"probability\": 0.1, "
                        "\"extra_s\": {\"dist\": \"lognormal\", \"median\": 2e9, \"sigma\": 1}}, "
                        "\"agent\": {\"mode\": \"sequential\", \"calls\": 2, \"tool_s\": "
                        "{\"dist\": \"uniform\", \"min\": 0, \"max\": 5e9}}}");
    has_str(e, "workload.pre_model_s.value: 1e+10 is out of range (expected <= 1e+09 seconds",
            "pre_model_s past the horizon");
    has_str(e, "workload.slow.extra_s.median: 2e+09 is out of range", "slow.extra_s too");
    has_str(e, "workload.agent.tool_s.max: 5e+09 is out of range", "and tool_s");
    free(e);
    e = workload_errors("{\"arrival\": {\"process\": \"closed\", \"users\": 1, \"think_s\": "
                        "{\"dist\": \"exponential\", \"mean\": 1e12}}, " LENGTHS "}");
    has_str(e, "workload.arrival.think_s.mean: 1e+12 is out of range", "think_s too");
    free(e);
    e = workload_errors("{\"arrival\": {\"process\": \"gamma\", \"rate_per_s\": 1e-6, \"cv\": 50}, "
                        LENGTHS "}");
    has_str(e, "workload.arrival.cv: 50 at rate_per_s 1e-06 gives gamma gaps of scale",
            "gamma gaps whose tail would pass the horizon");
    free(e);
    e = workload_errors("{\"arrival\": {\"rate_per_s\": 1}, " LENGTHS ", \"timeout_s\": 2e9}");
    has_str(e, "workload.timeout_s: 2e+09 is out of range", "timeout_s");
    free(e);

    /* a heavy tail that is legal is clamped at the horizon, draw by draw */
    wl_spec s;
    cJSON *o = cJSON_Parse("{\"arrival\": {\"rate_per_s\": 1}, " LENGTHS ", \"pre_model_s\": "
                           "{\"dist\": \"lognormal\", \"median\": 1e8, \"sigma\": 20}}");
    util_diag d;
    util_diag_init(&d);
    util_schema_apply(wl_workload_fields, o, "workload", NULL, &d);
    is_int(wl_spec_from_json(o, "workload", NULL, &s, &d), 0, "a lognormal delay of sigma 20");
    wl_source *src = wl_source_create(&s, 3);
    double hi = 0;
    for (int i = 0; i < 10000; i++) {
        bool slow;
        hi = fmax(hi, wl_source_delay(src, &slow));
    }
    is_near(hi, 1e9, 0, "its draws stop at the horizon (got %g)", hi);
    wl_source_destroy(src);
    wl_spec_fini(&s);
    cJSON_Delete(o);
    util_diag_fini(&d);
}

/* ---- what prompts share ---- */

static void test_chain(void)
{
    bool nonzero = true, distinct = true, from_prev = true;
    uint64_t prev = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        uint64_t k = wl_chain(i & 1 ? prev : 0, i), k2 = wl_chain(i & 1 ? prev : 0, i + 1);
        nonzero &= k != 0 && wl_chain(k, 0) != 0;
        distinct &= k != k2;
        from_prev &= k != prev;
        prev = k;
    }
    ok(nonzero, "wl_chain never returns 0, the prompt's start (wl_chain(0, 0) = %llx)",
       (unsigned long long)wl_chain(0, 0));
    ok(distinct, "ids that follow the same content give different keys");
    ok(from_prev, "and each key differs from the one before it (its parent, for odd ids)");
    ok(wl_chain(wl_chain(0, 1), 2) != wl_chain(wl_chain(0, 2), 1),
       "order matters: [1, 2] and [2, 1] differ");
    ok(wl_chain(wl_chain(0, 1), 2) == wl_chain(wl_chain(0, 1), 2), "and a chain is a function");
}

/* A workload from its JSON text; *errors (caller frees) holds the messages. */
static int build(const char *json, wl_spec *s, char **errors)
{
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse(json);
    int rc = util_schema_apply(wl_workload_fields, o, "workload", NULL, &d);
    if (rc == 0) rc = wl_spec_from_json(o, "workload", NULL, s, &d);
    else memset(s, 0, sizeof *s);
    *errors = util_diag_join(&d);
    cJSON_Delete(o);
    util_diag_fini(&d);
    return rc;
}

static wl_spec must_build(const char *json)
{
    wl_spec s;
    char *e;
    if (build(json, &s, &e)) tap_diag("unexpected: %s", e);
    free(e);
    return s;
}

#define OUT10 "\"output_tokens\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 50}"
#define POISSON "\"arrival\": {\"rate_per_s\": 5}"

static char *prefix_workload(int groups, int per, const char *order)
{
    return util_xasprintf("{" POISSON ", " OUT10 ", \"shared_prefix\": {\"num_groups\": %d, "
                          "\"num_prompts_per_group\": %d, \"system_prompt_len\": 100, "
                          "\"question_len\": 20, \"order\": \"%s\"}}",
                          groups, per, order);
}

typedef struct drawn {
    uint64_t k0, k1;
    int32_t prompt, output, n;
    double at;
} drawn;

static drawn next_of(wl_source *src, int stream)
{
    util_diag d;
    util_diag_init(&d);
    wl_record r;
    wl_source_next(src, stream, &r, &d);
    util_diag_fini(&d);
    drawn x = {0, 0, r.prompt, r.output, r.n_segments, r.arrival_s};
    if (r.n_segments == 2) {
        x.k0 = r.segments[0].key;
        x.k1 = r.segments[1].key;
        x.n = r.segments[0].tokens == 100 && r.segments[1].tokens == 20 ? 2 : -1;
    }
    return x;
}

static int count_distinct(const uint64_t *v, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < i && v[j] != v[i]) j++;
        k += j == i;
    }
    return k;
}

/* 3 groups x 4 prompts, ordered: request k is prompt k mod 12, group by
 * group (SGLang --gsp-ordered; vLLM prefix_repetition --disable-shuffle). */
static void test_prefix_ordered(void)
{
    char *json = prefix_workload(3, 4, "ordered");
    wl_spec s = must_build(json);
    free(json);
    wl_source *src = wl_source_create(&s, 7);
    drawn x[24];
    uint64_t k0[12], k1[12];
    bool length = true, two = true, cycle_system = true, cycle_question = true, by_group = true;
    for (int i = 0; i < 24; i++) {
        x[i] = next_of(src, 0);
        length &= x[i].prompt == 120;
        two &= x[i].n == 2;
    }
    for (int i = 0; i < 12; i++) {
        k0[i] = x[i].k0;
        k1[i] = x[i].k1;
        cycle_system &= x[i + 12].k0 == x[i].k0;
        cycle_question &= x[i + 12].k1 == x[i].k1;
        by_group &= x[i].k0 == x[i / 4 * 4].k0;
    }
    ok(length, "every prompt is system_prompt_len + question_len = 120 tokens");
    ok(two, "every prompt is 2 segments (100, 20)");
    is_int(count_distinct(k0, 12), 3, "3 groups: 3 system-prompt keys");
    is_int(count_distinct(k1, 12), 12, "12 prompts: 12 question keys");
    ok(by_group, "ordered: group 0's 4 prompts, then group 1's, then group 2's");
    ok(cycle_system, "after the 12th prompt the order starts over: the same prompt re-sent has "
                     "its system-prompt key");
    ok(cycle_question, "and its question key");
    ok(x[0].k0 == x[1].k0, "two prompts of a group share the system prompt");
    ok(x[0].k1 != x[1].k1, "and not the question");
    wl_source_destroy(src);
    wl_spec_fini(&s);
}

/* The sequence's numbers, through wl__prefix itself. */
static void prefix_numbers(wl_prefix_order order, uint64_t seed, int64_t *out, int n)
{
    wl_shared_prefix sp = {.num_groups = 5, .num_prompts_per_group = 7, .system_prompt_len = 3,
                           .question_len = 2, .order = order};
    gsl_rng *r = util_rng_stream(seed, 9000);
    wl__prefix *p = wl__prefix_create(&sp, r);
    wl_segment seg[2];
    for (int i = 0; i < n; i++) out[i] = wl__prefix_next(p, seg);
    wl__prefix_destroy(p);
    gsl_rng_free(r);
}

/* Shuffled (the default): one seeded permutation of all N prompts, sent in
 * that order and then again -- inference-perf's load_lazy_data takes
 * prompts[i % len(prompts)] of a list shuffled once by rng.permutation. */
#define NP 35 /* 5 groups x 7 prompts */

static void test_prefix_shuffled(void)
{
    int64_t a[3 * NP], b[NP], ord[NP];
    prefix_numbers(WL_PREFIX_SHUFFLED, 11, a, 3 * NP);
    prefix_numbers(WL_PREFIX_SHUFFLED, 12, b, NP);
    prefix_numbers(WL_PREFIX_ORDERED, 11, ord, NP);
    bool seen[NP] = {false}, perm = true, second = true, third = true, numbered = true;
    int moved = 0, differ = 0;
    for (int i = 0; i < NP; i++) {
        perm &= a[i] >= 0 && a[i] < NP && !seen[a[i]];
        if (a[i] >= 0 && a[i] < NP) seen[a[i]] = true;
        second &= a[i + NP] == a[i];
        third &= a[i + 2 * NP] == a[i];
        numbered &= ord[i] == i;
        moved += a[i] != i;
        differ += a[i] != b[i];
    }
    ok(perm, "shuffled: the first 35 requests send each of the 35 prompts once");
    ok(second, "and the second pass repeats that order (inference-perf: i mod N)");
    ok(third, "and so does the third");
    cmp_ok(moved, >, NP / 2, "the order is shuffled (%d of %d moved)", moved, NP);
    cmp_ok(differ, >, 0, "another seed gives another order (%d places differ)", differ);
    ok(numbered, "ordered: prompt numbers 0, 1, 2, ... (group * per_group + question)");

    char *json = prefix_workload(5, 7, "shuffled");
    wl_spec s = must_build(json);
    free(json);
    wl_source *s1 = wl_source_create(&s, 3), *s2 = wl_source_create(&s, 3);
    bool systems = true, questions = true, outputs = true, times = true;
    for (int i = 0; i < 100; i++) {
        drawn x = next_of(s1, 0), y = next_of(s2, 0);
        systems &= x.k0 == y.k0;
        questions &= x.k1 == y.k1;
        outputs &= x.output == y.output;
        times &= x.at == y.at;
    }
    ok(systems, "a seed gives the same prompts, run after run: their system-prompt keys");
    ok(questions, "and their question keys");
    ok(outputs, "a seed gives the same outputs, run after run");
    ok(times, "a seed gives the same times, run after run");
    wl_source_destroy(s1);
    wl_source_destroy(s2);
    wl_spec_fini(&s);
}

/* shared_prefix draws on a stream of its own: arrival times and output
 * lengths are those of the same workload with a fixed prompt length. */
static void test_prefix_streams(void)
{
    char *json = prefix_workload(2, 3, "shuffled");
    wl_spec a = must_build(json);
    free(json);
    wl_spec b = must_build("{" POISSON ", " OUT10 ", \"prompt_tokens\": {\"dist\": \"lognormal\", "
                           "\"median\": 50, \"sigma\": 1}}");
    wl_source *sa = wl_source_create(&a, 21), *sb = wl_source_create(&b, 21),
              *sc = wl_source_create(&b, 21);
    bool times = true, outputs = true, none = true, drawn_prompts = true, drawn_outputs = true;
    for (int i = 0; i < 1000; i++) {
        drawn x = next_of(sa, 0), y = next_of(sb, 0);
        int32_t p, o;
        wl_source_lengths(sc, 0, &p, &o);
        times &= x.at == y.at;
        outputs &= x.output == y.output;
        none &= y.n == 0;
        drawn_prompts &= y.prompt == p;
        drawn_outputs &= y.output == o;
    }
    ok(times, "shared_prefix leaves every arrival time as it was");
    ok(outputs, "and every output length (the workload's output_tokens)");
    ok(none, "a prompt distribution gives prompts nobody shares: n_segments 0");
    ok(drawn_prompts, "and its arrivals' prompt lengths are wl_source_lengths' draws, as before");
    ok(drawn_outputs, "and so are their output lengths");
    wl_source_destroy(sa);
    wl_source_destroy(sb);
    wl_source_destroy(sc);
    wl_spec_fini(&a);
    wl_spec_fini(&b);
}

/* wl_source_draw makes wl_source_lengths' draws where nothing is shared. */
static void test_draw_distinct(void)
{
    wl_spec s = must_build("{\"arrival\": {\"process\": \"closed\", \"users\": 2}, "
                           "\"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 500, "
                           "\"sigma\": 1}, " OUT10 "}");
    wl_source *sa = wl_source_create(&s, 5), *sb = wl_source_create(&s, 5);
    bool prompts = true, outputs = true, zero = true, null = true;
    for (int i = 0; i < 10000; i++) {
        wl_record r = {.cls = 0, .n_segments = -1, .segments = (const wl_segment *)&r};
        int32_t p, o;
        wl_source_draw(sa, 0, &r);
        wl_source_lengths(sb, 0, &p, &o);
        prompts &= r.prompt == p;
        outputs &= r.output == o;
        zero &= r.n_segments == 0;
        null &= r.segments == NULL;
    }
    ok(prompts, "wl_source_draw's prompt lengths are wl_source_lengths' (10000 draws)");
    ok(outputs, "and its output lengths");
    ok(zero, "and no segments: n_segments 0");
    ok(null, "and segments NULL");
    wl_source_destroy(sa);
    wl_source_destroy(sb);
    wl_spec_fini(&s);
}

/* Arrivals and draws take prompts from one sequence, and each keeps its
 * segments until its own next call. */
static void test_draw_shared(void)
{
    wl_spec s = must_build("{" OUT10 ", \"shared_prefix\": {\"num_groups\": 2, "
                           "\"num_prompts_per_group\": 2, \"system_prompt_len\": 100, "
                           "\"question_len\": 20, \"order\": \"ordered\"}, \"classes\": ["
                           "{\"name\": \"a\", \"arrival\": {\"rate_per_s\": 1}}, "
                           "{\"name\": \"b\", \"arrival\": {\"rate_per_s\": 2}}, "
                           "{\"name\": \"own\", \"arrival\": {\"rate_per_s\": 3}, "
                           "\"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 33}}]}");
    wl_source *src = wl_source_create(&s, 1);
    util_diag d;
    util_diag_init(&d);
    wl_record r1, r2, r3, rd;
    wl_source_next(src, 1, &r1, &d); /* prompt 0 */
    uint64_t k1 = r1.segments[1].key;
    wl_source_draw(src, 0, &rd); /* prompt 1 */
    wl_source_next(src, 2, &r2, &d); /* prompt 2 */
    wl_source_next(src, 3, &r3, &d); /* its own prompt: no sharing, no prompt taken */
    is_int(r3.prompt, 33, "a class with its own prompt_tokens draws them");
    is_int(r3.n_segments, 0, "and shares nothing");
    is_int(r1.n_segments, 2, "a pending arrival keeps its 2 segments");
    ok(r1.segments[1].key == k1,
       "a pending arrival's segments outlive other streams' arrivals and draws");
    is_int(rd.n_segments, 2, "a draw takes a prompt of 2 segments");
    ok(rd.segments[0].key == r1.segments[0].key,
       "the next prompt of the sequence: group 0's system prompt");
    ok(rd.segments[1].key != k1, "and group 0's second question");
    ok(r2.segments[0].key != r1.segments[0].key, "then group 1's first");
    int32_t p, o;
    wl_source_lengths(src, 0, &p, &o);
    is_int(p, 120, "wl_source_lengths of a shared-prefix class: the prompts' length");
    wl_source_draw(src, 1, &rd); /* prompt 3 */
    wl_source_draw(src, 1, &rd); /* prompt 0 again: lengths took none */
    ok(rd.segments[0].key == r1.segments[0].key, "which picks no prompt: the fifth is in group 0");
    ok(rd.segments[1].key == k1, "the first prompt again");
    wl_source_destroy(src);
    wl_spec_fini(&s);
    util_diag_fini(&d);
}

static void test_prefix_errors(void)
{
    wl_spec s;
    char *e;
    build("{" POISSON ", " OUT10 ", \"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 5}, "
          "\"shared_prefix\": {\"num_groups\": 1, \"num_prompts_per_group\": 1}}",
          &s, &e);
    has_str(e, "workload.prompt_tokens: not with workload.shared_prefix",
            "prompt_tokens and shared_prefix together are refused, naming the key");
    free(e);
    wl_spec_fini(&s);
    build("{" POISSON ", " OUT10 ", \"shared_prefix\": {\"num_groups\": 10000, "
          "\"num_prompts_per_group\": 10000}}",
          &s, &e);
    has_str(e, "workload.shared_prefix.num_prompts_per_group: num_groups x "
               "num_prompts_per_group = 100000000 prompts, more than 1e7",
            "at most 1e7 prompts");
    free(e);
    wl_spec_fini(&s);
    build("{" POISSON ", " OUT10 ", \"shared_prefix\": {\"num_prompts_per_group\": 2, "
          "\"question_len\": 0, \"order\": \"random\"}}",
          &s, &e);
    has_str(e, "workload.shared_prefix.num_groups: missing", "num_groups is required");
    has_str(e, "workload.shared_prefix.question_len: 0 is out of range", "lengths are >= 1");
    has_str(e, "workload.shared_prefix.order: unknown value 'random'", "order is a choice");
    free(e);
    wl_spec_fini(&s);
    s = must_build("{" POISSON ", " OUT10 ", \"shared_prefix\": {\"num_groups\": 1, "
                   "\"num_prompts_per_group\": 1}}");
    ok(s.has_shared_prefix, "shared_prefix with only its counts builds");
    is_int(s.shared_prefix.system_prompt_len, 100,
           "defaults: inference-perf's system prompts of 100 tokens");
    is_int(s.shared_prefix.question_len, 50, "its questions of 50");
    is_int(s.shared_prefix.order, WL_PREFIX_SHUFFLED, "shuffled");
    ok(s.classes[0].shared_prompt, "and the default class takes its prompts");
    ok(!s.classes[0].has_prompt, "not prompt_tokens of its own");
    wl_spec_fini(&s);
}

/* ---- built-in datasets ---- */

/* Where data/datasets/derive.py took each dataset from. */
static const struct {
    const char *name, *path, *prompt_col, *output_col;
} ds_sources[] = {
    {"sharegpt", "data/validation/distserve-opt13b/workload_rate4_n400.csv", "input_tokens",
     "output_tokens"},
    {"arxiv-summarization", "data/traces/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv",
     "num_prefill_tokens", "num_decode_tokens"},
    {"azure-code", "data/traces/AzureLLMInferenceTrace_code.csv", "ContextTokens",
     "GeneratedTokens"},
    {"azure-conv", "data/traces/AzureLLMInferenceTrace_conv.csv", "ContextTokens",
     "GeneratedTokens"},
};
#define N_DS (int)(sizeof ds_sources / sizeof ds_sources[0])

typedef struct pairs {
    int64_t *key; /* prompt << 32 | output, sorted once loaded */
    int32_t *prompt, *output;
    int64_t n;
} pairs;

/* The column of a csv header line that is called name (-1: none). */
static int column_of(char *header, const char *name)
{
    int k = 0;
    for (char *f = strtok(header, ",\r\n"); f; f = strtok(NULL, ",\r\n"), k++)
        if (!strcmp(f, name)) return k;
    return -1;
}

/* A source file's (prompt, output) pairs, read independently of datasets.c. */
static pairs read_source(int i)
{
    char *path = util_xasprintf("%s/%s", SOURCE_ROOT, ds_sources[i].path);
    FILE *f = fopen(path, "r");
    pairs p = {0};
    static char line[4096], head[4096];
    if (!f || !fgets(line, sizeof line, f)) {
        tap_diag("cannot read %s", path);
        free(path);
        return p;
    }
    strcpy(head, line);
    int pc = column_of(head, ds_sources[i].prompt_col);
    strcpy(head, line);
    int oc = column_of(head, ds_sources[i].output_col);
    int64_t cap = 1024;
    p.prompt = util_xmalloc((size_t)cap * sizeof *p.prompt);
    p.output = util_xmalloc((size_t)cap * sizeof *p.output);
    while (fgets(line, sizeof line, f)) {
        if (p.n == cap) {
            cap *= 2;
            p.prompt = util_xrealloc(p.prompt, (size_t)cap * sizeof *p.prompt);
            p.output = util_xrealloc(p.output, (size_t)cap * sizeof *p.output);
        }
        int k = 0;
        for (char *fl = strtok(line, ",\r\n"); fl; fl = strtok(NULL, ",\r\n"), k++) {
            if (k == pc) p.prompt[p.n] = (int32_t)atol(fl);
            if (k == oc) p.output[p.n] = (int32_t)atol(fl);
        }
        p.n++;
    }
    fclose(f);
    free(path);
    return p;
}

static int cmp_key(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t pair_key(int32_t prompt, int32_t output)
{
    return (int64_t)prompt << 32 | output;
}

static void index_pairs(pairs *p)
{
    p->key = util_xmalloc((size_t)p->n * sizeof *p->key);
    for (int64_t i = 0; i < p->n; i++) p->key[i] = pair_key(p->prompt[i], p->output[i]);
    qsort(p->key, (size_t)p->n, sizeof *p->key, cmp_key);
}

static bool has_pair(const pairs *p, int32_t prompt, int32_t output)
{
    int64_t k = pair_key(prompt, output);
    return bsearch(&k, p->key, (size_t)p->n, sizeof k, cmp_key) != NULL;
}

static void pairs_free(pairs *p)
{
    free(p->key);
    free(p->prompt);
    free(p->output);
}

/* Mean and standard deviation of a column. */
static void col_stats(const int32_t *x, int64_t n, double *mean, double *sd)
{
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) {
        s += x[i];
        s2 += (double)x[i] * x[i];
    }
    *mean = s / (double)n;
    *sd = sqrt(s2 / (double)n - *mean * *mean);
}

/* The names are a contract; each dataset is its source's pairs, in order. */
static void test_dataset_sources(void)
{
    static const char *const want[] = {"sharegpt", "arxiv-summarization", "azure-code",
                                       "azure-conv"};
    int n = 0;
    while (wl_dataset_names[n]) n++;
    is_int(n, N_DS, "four built-in datasets");
    for (int i = 0; i < N_DS && i < n; i++)
        is_str(wl_dataset_names[i], want[i], "dataset %d's name", i);
    ok(wl_dataset_create("ShareGPT") == NULL, "names are exact: no dataset 'ShareGPT'");
    static const int64_t rows[] = {400, 28257, 8819, 19366};
    for (int i = 0; i < N_DS; i++) {
        pairs src = read_source(i);
        wl_dataset *ds = wl_dataset_create(ds_sources[i].name);
        is_int(wl_dataset_size(ds), rows[i], "%s: %lld pairs", ds_sources[i].name,
               (long long)rows[i]);
        is_int(src.n, rows[i], "as many as its source %s has rows", ds_sources[i].path);
        int64_t differ = 0;
        for (int64_t k = 0; k < src.n && k < wl_dataset_size(ds); k++) {
            int32_t p, o;
            wl_dataset_pair(ds, k, &p, &o);
            differ += p != src.prompt[k] || o != src.output[k];
        }
        is_int(differ, 0, "%s: every pair is its source row's (prompt, output)",
               ds_sources[i].name);
        wl_dataset_destroy(ds);
        pairs_free(&src);
    }
}

/* workload.dataset draws whole pairs, uniformly: every draw is a source
 * pair, and the sample means are the source's within Z standard errors. */
static void test_dataset_draws(void)
{
    for (int i = 0; i < N_DS; i++) {
        pairs src = read_source(i);
        index_pairs(&src);
        double pm, psd, om, osd;
        col_stats(src.prompt, src.n, &pm, &psd);
        col_stats(src.output, src.n, &om, &osd);
        char *json = util_xasprintf("{" POISSON ", \"dataset\": \"%s\"}", ds_sources[i].name);
        wl_spec s = must_build(json);
        ok(s.classes[0].pairs != NULL, "%s: the default class draws pairs", ds_sources[i].name);
        wl_source *w = wl_source_create(&s, 11);
        double sp = 0, so = 0;
        int64_t foreign = 0;
        for (int k = 0; k < N; k++) {
            int32_t p, o;
            wl_source_lengths(w, 0, &p, &o);
            sp += p;
            so += o;
            foreign += !has_pair(&src, p, o);
        }
        is_int(foreign, 0, "%s: every drawn (prompt, output) is one of the source's pairs",
               ds_sources[i].name);
        is_near(sp / N, pm, Z * psd / sqrt(N), "%s: prompt mean %.1f (source %.1f)",
                ds_sources[i].name, sp / N, pm);
        is_near(so / N, om, Z * osd / sqrt(N), "%s: output mean %.1f (source %.1f)",
                ds_sources[i].name, so / N, om);
        wl_source_destroy(w);
        wl_spec_fini(&s);
        free(json);
        pairs_free(&src);
    }
}

/* {"dist": "dataset"} is one column alone: its column from the key or from
 * `column`, clamped as every distribution is, and two of them draw
 * independently -- pairs the source never had. */
static void test_dataset_columns(void)
{
    pairs src = read_source(3); /* azure-conv */
    index_pairs(&src);
    wl_spec s = must_build("{" POISSON ", \"prompt_tokens\": {\"dist\": \"dataset\", \"name\": "
                           "\"azure-conv\"}, \"output_tokens\": {\"dist\": \"dataset\", "
                           "\"name\": \"azure-conv\"}}");
    ok(!s.classes[0].pairs, "two columns are not a joint draw");
    ok(!s.classes[0].prompt.ds_output && s.classes[0].output.ds_output,
       "prompt_tokens takes the input column, output_tokens the output column");
    wl_source *w = wl_source_create(&s, 5);
    int64_t foreign = 0;
    for (int k = 0; k < 10000; k++) {
        int32_t p, o;
        wl_source_lengths(w, 0, &p, &o);
        foreign += !has_pair(&src, p, o);
    }
    cmp_ok(foreign, >, 1000, "independent columns make pairs the source never had (%lld in "
                             "10000)", (long long)foreign);
    wl_source_destroy(w);
    wl_spec_fini(&s);
    pairs_free(&src);

    wl_dist d = make("{\"dist\": \"dataset\", \"name\": \"azure-code\", \"column\": \"output\", "
                     "\"max\": 100}", true);
    moments m = sample(&d, 9);
    is_near(m.max, 100, 0, "max clamps a dataset's draws (got %g)", m.max);
    cmp_ok(m.mean, <, 27.9, "the output column, clamped at 100: below its mean of 27.9 (got %g)",
           m.mean);
    wl_dist_fini(&d);
}

static void test_dataset_classes(void)
{
    wl_spec s = must_build("{" POISSON ", \"dataset\": \"sharegpt\", \"classes\": ["
                           "{\"name\": \"chat\", \"weight\": 1}, "
                           "{\"name\": \"short\", \"weight\": 1, \"output_tokens\": 7}, "
                           "{\"name\": \"code\", \"weight\": 1, \"dataset\": \"azure-code\"}]}");
    ok(s.classes[0].pairs != NULL, "a class without lengths takes workload.dataset's pairs");
    ok(!s.classes[1].pairs && s.classes[1].prompt.kind == WL_DIST_DATASET &&
           !s.classes[1].prompt.ds_output,
       "a class with its own output_tokens takes the dataset's prompt column alone");
    ok(s.classes[2].pairs && wl_dataset_size(s.classes[2].pairs) == 8819,
       "a class's own dataset replaces the workload's");
    wl_source *w = wl_source_create(&s, 2);
    int32_t p, o;
    wl_source_lengths(w, 1, &p, &o);
    is_int(o, 7, "and its own output length");
    wl_source_destroy(w);
    wl_spec_fini(&s);
}

/* A dataset replaces a trace's lengths as prompt_tokens does: the trace
 * gives the times, the pair both lengths, and the prompt no longer is the
 * content the trace's hash ids name. */
static void test_dataset_trace(void)
{
    pairs src = read_source(2); /* azure-code */
    index_pairs(&src);
    char *json = util_xasprintf("{\"arrival\": {\"process\": \"trace\", \"path\": "
                                "\"%s/data/traces/conversation_trace.jsonl\", \"limit\": 500}, "
                                "\"dataset\": \"azure-code\"}",
                                SOURCE_ROOT);
    wl_spec s = must_build(json);
    wl_source *w = wl_source_create(&s, 4);
    util_diag d;
    util_diag_init(&d);
    wl_record rec;
    int n = 0, foreign = 0, segments = 0;
    while (wl_source_next(w, 0, &rec, &d) == 1) {
        n++;
        foreign += !has_pair(&src, rec.prompt, rec.output);
        segments += rec.n_segments;
    }
    is_int(n, 500, "the trace gives 500 arrivals");
    is_int(foreign, 0, "each with a pair of azure-code, not the trace's lengths");
    is_int(segments, 0, "and no hash-id segments for the prompts drawn instead");
    util_diag_fini(&d);
    wl_source_destroy(w);
    wl_spec_fini(&s);
    free(json);
    pairs_free(&src);
}

static void test_dataset_errors(void)
{
    char *e = workload_errors("{" POISSON ", \"dataset\": \"sharegtp\"}");
    has_str(e, "workload.dataset: unknown value 'sharegtp'", "an unknown name is refused");
    has_str(e, "sharegpt", "naming the nearest");
    free(e);
    e = workload_errors("{" POISSON ", \"dataset\": \"sharegpt\", " OUT10 "}");
    has_str(e, "workload.dataset: not with workload.output_tokens: the dataset gives both "
               "lengths",
            "a dataset and a length at one level are refused");
    free(e);
    e = workload_errors("{" POISSON ", \"dataset\": \"sharegpt\", \"shared_prefix\": "
                        "{\"num_groups\": 1, \"num_prompts_per_group\": 1}}");
    has_str(e, "workload.dataset: not with workload.shared_prefix", "and with shared_prefix");
    free(e);
    e = workload_errors("{" POISSON ", \"classes\": [{\"name\": \"a\", \"weight\": 1, "
                        "\"dataset\": \"azure-code\", \"prompt_tokens\": 5, " OUT10 "}]}");
    has_str(e, "workload.classes[0].dataset: not with the class's own prompt_tokens or "
               "output_tokens",
            "and in a class");
    free(e);
    e = workload_errors("{\"arrival\": {\"process\": \"closed\", \"users\": 1, \"think_s\": "
                        "{\"dist\": \"dataset\", \"name\": \"sharegpt\"}}, "
                        "\"dataset\": \"sharegpt\"}");
    has_str(e, "workload.arrival.think_s.dist: dataset is for token counts",
            "a duration cannot be a dataset");
    free(e);
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse("{\"dist\": \"dataset\", \"name\": \"sharegpt\"}");
    util_schema_apply_union(&wl_dist_schema, o, "d", NULL, &d);
    wl_dist dist;
    is_int(wl_dist_from_json(o, "d", NULL, true, &dist, &d), UTIL_EINPUT,
           "a key that implies no column");
    has_str(d.count ? d.msgs[0] : "", "d.column: missing: name input or output",
            "asks for the column");
    cJSON_Delete(o);
    util_diag_fini(&d);
}

/* ---- workload.arrival.rate_profile ---- */

/* Stream 0's arrivals before `until` into counts of `bins` equal windows;
 * returns how many there were (the stream ending early stops it). */
static int64_t arrivals_in(const char *arrival, double until, int64_t *counts, int bins,
                           uint64_t seed)
{
    char *json = util_xasprintf("{\"arrival\": %s, " LENGTHS "}", arrival);
    wl_spec s = must_build(json);
    free(json);
    wl_source *src = wl_source_create(&s, seed);
    util_diag d;
    util_diag_init(&d);
    wl_record rec;
    int64_t n = 0;
    memset(counts, 0, (size_t)bins * sizeof *counts);
    while (wl_source_next(src, 0, &rec, &d) == 1 && rec.arrival_s < until) {
        counts[(int)(rec.arrival_s / until * bins)]++;
        n++;
    }
    wl_source_destroy(src);
    util_diag_fini(&d);
    wl_spec_fini(&s);
    return n;
}

/* The expected arrivals of a rate rising linearly from r0 to r1 over
 * [0, w], in [a, b]. */
static double ramp(double r0, double r1, double w, double a, double b)
{
    double k = (r1 - r0) / w;
    return r0 * (b - a) + k * (b * b - a * a) / 2;
}

#define RAMP "\"rate_profile\": {\"times_s\": [0, 1000, 2000], \"rates_per_s\": [1, 10, 1]}"

static void test_profile_counts(void)
{
    int64_t c[8];
    /* constant gaps of one expected arrival: arrival k at L^-1(k), exactly */
    arrivals_in("{\"process\": \"constant\", " RAMP "}", 2000, c, 8, 1);
    bool exact = true;
    for (int i = 0; i < 8; i++) { /* the ramp down mirrors the ramp up */
        double a = 250.0 * (i < 4 ? i : 7 - i), want = ramp(1, 10, 1000, a, a + 250);
        exact &= fabs((double)c[i] - want) <= 1; /* whole arrivals of a real integral */
    }
    ok(exact, "constant process on a ramp 1 -> 10 -> 1 /s: each 250 s window holds the "
              "profile's integral to one arrival (%lld %lld %lld %lld, mirrored)",
       (long long)c[0], (long long)c[1], (long long)c[2], (long long)c[3]);
    /* Poisson: counts are Poisson with the integral as mean */
    int64_t total = arrivals_in("{\"process\": \"poisson\", " RAMP "}", 2000, c, 8, 2);
    bool within = true;
    for (int i = 0; i < 4; i++) {
        double want = ramp(1, 10, 1000, 250.0 * i, 250.0 * (i + 1));
        within &= fabs((double)c[i] - want) <= 4 * sqrt(want) &&
                  fabs((double)c[7 - i] - want) <= 4 * sqrt(want);
    }
    ok(within, "Poisson on the ramp: every window within 4 sd of its integral (first %lld, "
               "expected %.0f)", (long long)c[0], ramp(1, 10, 1000, 0, 250));
    is_near((double)total, 11000, 4 * sqrt(11000.0), "and 11000 expected in all: %lld",
            (long long)total);
    /* gamma gaps of cv 2: a renewal count's variance is cv^2 its mean */
    total = arrivals_in("{\"process\": \"gamma\", \"cv\": 2, " RAMP "}", 2000, c, 8, 3);
    is_near((double)total, 11000, 4 * 2 * sqrt(11000.0), "gamma, cv 2, on the ramp: %lld",
            (long long)total);
}

/* The integral of trough + (peak - trough)(1 + cos(2 pi (t - phase)/T))/2. */
static double day_integral(double peak, double trough, double T, double phase, double a, double b)
{
    double w = 6.283185307179586 / T;
    return trough * (b - a) +
           (peak - trough) / 2 * ((b - a) + (sin(w * (b - phase)) - sin(w * (a - phase))) / w);
}

static void test_profile_daily(void)
{
    int64_t c[40];
    const char *day = "{\"process\": \"poisson\", \"rate_profile\": {\"daily\": {\"peak_per_s\": "
                      "20, \"trough_per_s\": 2, \"period_s\": 1000, \"phase_s\": 375}}}";
    int64_t total = arrivals_in(day, 10000, c, 40, 4);
    is_near((double)total, 110000, 4 * sqrt(110000.0),
            "daily shape, 10 periods: %lld arrivals, (peak + trough) / 2 x span = 110000",
            (long long)total);
    bool within = true;
    double worst = 0;
    for (int i = 0; i < 4; i++) { /* the first period's quarters */
        double want = day_integral(20, 2, 1000, 375, 250.0 * i, 250.0 * (i + 1));
        double z = fabs((double)c[i] - want) / sqrt(want);
        within &= z <= 4;
        if (z > worst) worst = z;
    }
    ok(within, "each quarter of a period within 4 sd of the cosine's integral (worst %.2f sd)",
       worst);
    ok(c[1] > 5 * c[3], "the quarter around the peak (%lld) holds over 5x the trough's (%lld)",
       (long long)c[1], (long long)c[3]);
    const char *scaled = "{\"process\": \"constant\", \"rate_profile\": {\"mean_per_s\": 5, "
                         "\"daily\": {\"peak_per_s\": 20, \"trough_per_s\": 2, \"period_s\": "
                         "1000}}}";
    total = arrivals_in(scaled, 10000, c, 40, 5);
    is_near((double)total, 50000, 1, "mean_per_s 5 rescales it: %lld arrivals in 10 periods",
            (long long)total);
    const char *ends = "{\"process\": \"constant\", \"rate_profile\": {\"times_s\": [0, 100], "
                       "\"rates_per_s\": [1, 0]}}";
    is_int(arrivals_in(ends, 1e6, c, 1, 6), 50, "a rate falling to 0 for good ends the stream "
                                                 "after its integral, 50");
}

static void test_profile_csv(void)
{
    char path[] = "/tmp/servesim-rates-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("hour,rate_per_s\n0,1\n1,2\n2,3\n3,4\n", f);
    fclose(f);
    char arrival[200];
    snprintf(arrival, sizeof arrival,
             "{\"process\": \"constant\", \"rate_profile\": {\"csv\": \"%s\"}}", path);
    int64_t c[4];
    /* knots at the hours' middles: 1 x 1800 + (1.5 + 2.5 + 3.5) x 3600 + 4 x 1800 */
    int64_t total = arrivals_in(arrival, 4 * 3600 + 0.1, c, 4, 7);
    is_int(total, 36000, "hourly rates 1, 2, 3, 4: 36000 arrivals in the four hours");
    is_int(c[0], (int64_t)floor(1800 + 1.25 * 1800), "the first hour: 1 /s to its middle, then "
                                                     "rising to 2 /s: 4050");
    f = fopen(path, "w");
    fputs("hour,rate_per_s\n0,1\n2,3\n", f);
    fclose(f);
    char *json = util_xasprintf("{\"arrival\": %s, " LENGTHS "}", arrival);
    char *e = workload_errors(json);
    ok(strstr(e, ":3: hour: expected 1") != NULL, "a skipped hour is refused at its line: %s", e);
    free(e);
    free(json);
    unlink(path);
}

/* The shipped week (data/profiles/, digitised from Azure's figure and scaled
 * to the trace's row count): its hours hold the trace's requests, and its
 * shape is the one data/profiles/README.md describes. */
static void test_profile_azure_week(void)
{
    char *json = util_xasprintf("{\"csv\": \"%s/data/profiles/azure-conv-2024-week.csv\"}",
                                SOURCE_ROOT);
    cJSON *o = cJSON_Parse(json);
    util_diag d;
    util_diag_init(&d);
    wl_profile *p;
    if (wl_profile_from_json(o, "rate_profile", ".", &p, &d) != UTIL_OK) {
        char *e = util_diag_join(&d);
        ok(false, "the shipped week loads: %s", e);
        free(e);
        cJSON_Delete(o);
        free(json);
        util_diag_fini(&d);
        return;
    }
    /* rates to 4 decimals: 168 hours x 5e-5 x 3600 s is 30 requests, 0.7 s */
    is_near(wl_profile_time(p, 27303999), 604800, 1,
            "the conversation week's hours hold its 27,303,999 rows: L^-1 = %.1f s",
            wl_profile_time(p, 27303999));
    bool peaks = true;
    double weekday = 0, weekend = 0;
    for (int day = 0; day < 7; day++) { /* 2024-05-12 was a Sunday */
        int top = 0;
        double sum = 0;
        for (int h = 0; h < 24; h++) {
            double r = wl_profile_rate(p, (day * 24 + h + 0.5) * 3600);
            sum += r;
            if (r > wl_profile_rate(p, (day * 24 + top + 0.5) * 3600)) top = h;
        }
        peaks &= top >= 13 && top <= 15;
        *(day == 0 || day == 6 ? &weekend : &weekday) += sum / 24;
    }
    ok(peaks, "every day peaks between 13:00 and 15:00 UTC");
    is_near((weekday / 5) / (weekend / 2), 1.75, 0.1,
            "weekdays carry 1.75x the weekend's rate: %.2f", (weekday / 5) / (weekend / 2));
    wl_profile_destroy(p);
    cJSON_Delete(o);
    free(json);
    util_diag_fini(&d);
    /* mean_per_s averages over the CSV's whole hours, not to its last knot */
    char arrival[300];
    snprintf(arrival, sizeof arrival,
             "{\"process\": \"constant\", \"rate_profile\": {\"mean_per_s\": 1, \"csv\": "
             "\"%s/data/profiles/azure-conv-2024-week.csv\"}}", SOURCE_ROOT);
    int64_t c[7];
    int64_t total = arrivals_in(arrival, 604800, c, 7, 8);
    is_near((double)total, 604800, 1, "at mean_per_s 1 the week holds 604,800 arrivals: %lld",
            (long long)total);
    ok(c[0] < c[1] && c[6] < c[5], "Sunday (%lld) and Saturday (%lld) below the weekdays",
       (long long)c[0], (long long)c[6]);
}

static void test_profile_errors(void)
{
    static const struct {
        const char *arrival, *want;
    } bad[] = {
        {"{\"rate_per_s\": 2, " RAMP "}", "workload.arrival.rate_profile: not with rate_per_s"},
        {"{\"process\": \"constant\"}", "workload.arrival.rate_per_s: missing (or give rate_profile)"},
        {"{\"rate_profile\": {\"times_s\": [0, 10, 5], \"rates_per_s\": [1, 2, 3]}}",
         "times_s[2]: 5 is not after 10"},
        {"{\"rate_profile\": {\"times_s\": [0, 10], \"rates_per_s\": [1]}}",
         "rates_per_s: 1 rates for 2 times_s"},
        {"{\"rate_profile\": {\"times_s\": [0, 10], \"rates_per_s\": [1, -1]}}",
         "rates_per_s[1]: -1 is not a rate"},
        {"{\"rate_profile\": {\"times_s\": [0, 10], \"rates_per_s\": [0, 0]}}", "every rate is 0"},
        {"{\"rate_profile\": {\"times_s\": [0], \"rates_per_s\": [1], \"daily\": {\"peak_per_s\": "
         "2, \"trough_per_s\": 1}}}",
         "give one of times_s with rates_per_s, csv, or daily"},
        {"{\"rate_profile\": {\"daily\": {\"peak_per_s\": 1, \"trough_per_s\": 2}}}",
         "daily.peak_per_s: below trough_per_s"},
        {"{\"rate_profile\": {\"csv\": \"/nonexistent/rates.csv\"}}", "/nonexistent/rates.csv"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *json = util_xasprintf("{\"arrival\": %s, " LENGTHS "}", bad[i].arrival);
        char *e = workload_errors(json);
        ok(strstr(e, bad[i].want) != NULL, "refused: %s", e);
        free(e);
        free(json);
    }
}

int main(void)
{
    test_moments();
    test_whole_numbers();
    test_arrivals();
    test_rate_inf();
    test_stream_independence();
    test_horizon();
    test_chain();
    test_prefix_ordered();
    test_prefix_shuffled();
    test_prefix_streams();
    test_draw_distinct();
    test_draw_shared();
    test_prefix_errors();
    test_dataset_sources();
    test_dataset_draws();
    test_dataset_columns();
    test_dataset_classes();
    test_dataset_trace();
    test_dataset_errors();
    test_profile_counts();
    test_profile_daily();
    test_profile_csv();
    test_profile_azure_week();
    test_profile_errors();
    return tap_done();
}
