/*
 * test_workloads.c: every distribution's moments against its closed form,
 * clamps and rounding of token counts, arrival processes (rate, CV), and the
 * independence of the source's random streams.
 *
 * Tolerances: a sample mean of n draws is within Z standard errors
 * (sigma / sqrt n, sigma from the closed form) of the true mean; Z = 5 makes
 * a false failure a one-in-a-million event, and the seeds are fixed, so the
 * outcome is deterministic.
 */
#include <math.h>
#include <stdlib.h>

#include "tap.h"
#include "wl.h"

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

int main(void)
{
    test_moments();
    test_whole_numbers();
    test_arrivals();
    test_stream_independence();
    test_horizon();
    return tap_done();
}
