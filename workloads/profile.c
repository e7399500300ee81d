/*
 * profile.c: workload.arrival.rate_profile -- an arrival rate that changes
 * with time, for any open-loop process.
 *
 * A profile is a rate r(t) >= 0, piecewise linear between knots (given, read
 * from a CSV of hourly rates, or a daily cosine cut into a knot a minute)
 * and its integral L(t), the expected arrivals by t, which is piecewise
 * quadratic.  The stream's process runs at rate 1 in "operational time" u,
 * and each arrival's time is L^-1(u): the time change that makes a unit-rate
 * Poisson process a non-homogeneous one with rate r(t) (Cinlar's
 * construction), and applied to constant or gamma gaps the inversion method
 * for non-stationary renewal processes (Gerhardt and Nelson, INFORMS J.
 * Computing 21(4), 2009).  An inverse is a binary search over the knots and
 * one quadratic: O(log knots) an arrival, no draw rejected.
 *
 * Past the last knot the last rate holds; a daily shape repeats.  A rate of
 * 0 from the last knot on ends the stream there.
 */
#include "wl_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A day's cosine is cut into this many straight pieces: a chord of a
 * cosine of amplitude A over a step h departs from it by at most
 * A (omega h)^2 / 8, 2.4e-6 A at a minute a knot. */
#define DAILY_KNOTS 1440

static const double TWO_PI = 6.283185307179586476925286766559;

struct wl_profile {
    double *t, *r, *cum; /* knots: times (ascending), rates, L at each */
    int n;
    double period_s; /* > 0: the knots span one period, repeated */
    double span_s;   /* what mean_per_s averages over: the last knot, or a CSV's
                      * whole hours (its knots are at their middles) */
};

static wl_profile *profile_new(int n)
{
    wl_profile *p = util_xcalloc(1, sizeof *p);
    p->t = util_xmalloc((size_t)n * sizeof *p->t);
    p->r = util_xmalloc((size_t)n * sizeof *p->r);
    p->cum = util_xmalloc((size_t)n * sizeof *p->cum);
    p->n = n;
    return p;
}

void wl_profile_destroy(wl_profile *p)
{
    if (!p) return;
    free(p->t);
    free(p->r);
    free(p->cum);
    free(p);
}

/* L at each knot; before the first knot the first rate holds from 0. */
static void integrate(wl_profile *p)
{
    p->cum[0] = p->r[0] * p->t[0];
    for (int i = 1; i < p->n; i++)
        p->cum[i] = p->cum[i - 1] + (p->r[i - 1] + p->r[i]) / 2 * (p->t[i] - p->t[i - 1]);
}

/* Multiplies every rate so that the mean over [0, span_s] (the last knot,
 * a period, a CSV's hours) is mean; a profile of one knot is that rate. */
static void rescale(wl_profile *p, double mean)
{
    double span = p->span_s > 0 ? p->span_s : p->t[p->n - 1];
    double last = p->t[p->n - 1]; /* the last rate holds from there to span */
    double total = p->cum[p->n - 1] + p->r[p->n - 1] * (span > last ? span - last : 0);
    double now = span > 0 ? total / span : p->r[0];
    for (int i = 0; i < p->n; i++) {
        p->r[i] *= mean / now;
        p->cum[i] *= mean / now;
    }
}

double wl_profile_rate(const wl_profile *p, double t)
{
    if (p->period_s > 0) t -= floor(t / p->period_s) * p->period_s;
    if (t <= p->t[0]) return p->r[0];
    if (t >= p->t[p->n - 1]) return p->r[p->n - 1];
    int lo = 0, hi = p->n - 1; /* t[lo] <= t < t[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (p->t[mid] <= t) lo = mid;
        else hi = mid;
    }
    double f = (t - p->t[lo]) / (p->t[hi] - p->t[lo]);
    return p->r[lo] + f * (p->r[hi] - p->r[lo]);
}

/* x >= 0 with r0 x + (r1 - r0) x^2 / (2 w) = d, within a piece of width w
 * whose integral is at least d: the quadratic's root in the form that
 * neither cancels nor divides by a vanishing slope. */
static double piece_inverse(double r0, double r1, double w, double d)
{
    double a = (r1 - r0) / (2 * w);
    double disc = r0 * r0 + 4 * a * d;
    double x = 2 * d / (r0 + sqrt(disc > 0 ? disc : 0));
    return x < w ? x : w;
}

/* The time t at which L(t) = u, within one pass of the knots; INFINITY if
 * it never comes (a rate of 0 from the last knot on). */
static double inverse_once(const wl_profile *p, double u)
{
    if (u <= p->cum[0]) return p->r[0] > 0 ? u / p->r[0] : p->t[0];
    int last = p->n - 1;
    if (u >= p->cum[last]) {
        if (p->r[last] <= 0) return u > p->cum[last] ? INFINITY : p->t[last];
        return p->t[last] + (u - p->cum[last]) / p->r[last];
    }
    int lo = 0, hi = last; /* cum[lo] <= u < cum[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (p->cum[mid] <= u) lo = mid;
        else hi = mid;
    }
    return p->t[lo] + piece_inverse(p->r[lo], p->r[hi], p->t[hi] - p->t[lo], u - p->cum[lo]);
}

double wl_profile_time(const wl_profile *p, double u)
{
    if (p->period_s <= 0) return inverse_once(p, u);
    double per = p->cum[p->n - 1]; /* arrivals a period */
    double k = floor(u / per);
    return k * p->period_s + inverse_once(p, u - k * per);
}

/* ---- from the scenario ---- */

/* times_s and rates_per_s, checked. */
static int from_points(const cJSON *o, const char *path, wl_profile **out, util_diag *d)
{
    const cJSON *ts = util_json_member(o, "times_s"), *rs = util_json_member(o, "rates_per_s");
    if (!ts || !rs)
        return util_diag_add(d, "%s.%s: missing: times_s and rates_per_s go together", path,
                             ts ? "rates_per_s" : "times_s");
    int n = cJSON_GetArraySize(ts);
    if (cJSON_GetArraySize(rs) != n)
        return util_diag_add(d, "%s.rates_per_s: %d rates for %d times_s", path,
                             cJSON_GetArraySize(rs), n);
    wl_profile *p = profile_new(n);
    for (int i = 0; i < n; i++) {
        p->t[i] = cJSON_GetArrayItem(ts, i)->valuedouble;
        p->r[i] = cJSON_GetArrayItem(rs, i)->valuedouble;
        int rc = UTIL_OK;
        if (p->t[i] < 0 || p->t[i] > WL_HORIZON_S)
            rc = util_diag_add(d, "%s.times_s[%d]: %g is outside 0 .. %g s", path, i, p->t[i],
                               WL_HORIZON_S);
        else if (i > 0 && p->t[i] <= p->t[i - 1])
            rc = util_diag_add(d, "%s.times_s[%d]: %g is not after %g (times ascend)", path, i,
                               p->t[i], p->t[i - 1]);
        else if (!(p->r[i] >= 0) || p->r[i] > 1e9)
            rc = util_diag_add(d, "%s.rates_per_s[%d]: %g is not a rate (0 .. 1e9)", path, i,
                               p->r[i]);
        if (rc) {
            wl_profile_destroy(p);
            return rc;
        }
    }
    *out = p;
    return UTIL_OK;
}

/* A CSV of hourly rates: a header naming hour and rate_per_s, then one row
 * an hour (0, 1, 2, ... in order), its rate the hour's mean, placed at the
 * hour's middle. */
static int from_csv(const char *file, wl_profile **out, util_diag *d)
{
    util_lines *l;
    if (util_lines_open(file, &l, d)) return UTIL_EINPUT;
    char *line, *f[3];
    size_t len;
    int rc = util_lines_next(l, &line, &len, d);
    if (rc == 0) rc = util_lines_error(l, d, "empty: expected a header 'hour,rate_per_s'");
    else if (rc == 1 && (util_split(line, ',', f, 3) != 2 || strcmp(f[0], "hour") ||
                         strcmp(f[1], "rate_per_s")))
        rc = util_lines_error(l, d, "expected the header 'hour,rate_per_s'");
    int n = 0, cap = 0;
    double *rates = NULL;
    while (rc == 1 && (rc = util_lines_next(l, &line, &len, d)) == 1) {
        char *end;
        if (util_split(line, ',', f, 3) != 2) {
            rc = util_lines_error(l, d, "expected 2 fields (hour,rate_per_s)");
            break;
        }
        double hour = strtod(f[0], &end);
        if (*end || hour != n) {
            rc = util_lines_error(l, d, "hour: expected %d (hours count up from 0)", n);
            break;
        }
        double rate = strtod(f[1], &end);
        if (*end || !(rate >= 0) || rate > 1e9) {
            rc = util_lines_error(l, d, "rate_per_s: expected a rate from 0 to 1e9, got '%s'",
                                  f[1]);
            break;
        }
        if (n == cap) rates = util_xrealloc(rates, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *rates);
        rates[n++] = rate;
    }
    if (rc == 0 && n == 0) rc = util_lines_error(l, d, "no rows: expected one an hour");
    util_lines_close(l);
    if (rc == 0) {
        wl_profile *p = profile_new(n);
        for (int i = 0; i < n; i++) {
            p->t[i] = (i + 0.5) * 3600;
            p->r[i] = rates[i];
        }
        p->span_s = n * 3600.0;
        *out = p;
    }
    free(rates);
    return rc == 0 ? UTIL_OK : UTIL_EINPUT;
}

/* The daily shape: trough + (peak - trough) (1 + cos(2 pi (t - phase_s) /
 * period_s)) / 2, its peak at phase_s, cut into DAILY_KNOTS pieces. */
static wl_profile *daily(const cJSON *o)
{
    double period = util_json_number(o, "period_s", 86400);
    double peak = util_json_number(o, "peak_per_s", 0);
    double trough = util_json_number(o, "trough_per_s", 0);
    double phase = util_json_number(o, "phase_s", 0);
    wl_profile *p = profile_new(DAILY_KNOTS + 1);
    for (int i = 0; i <= DAILY_KNOTS; i++) {
        p->t[i] = period * i / DAILY_KNOTS;
        double c = cos(TWO_PI * (p->t[i] - phase) / period);
        p->r[i] = trough + (peak - trough) * (1 + c) / 2;
    }
    p->period_s = period;
    return p;
}

int wl_profile_from_json(const cJSON *o, const char *path, const char *base_dir,
                         wl_profile **out, util_diag *d)
{
    *out = NULL;
    const cJSON *csv = util_json_member(o, "csv"), *day = util_json_member(o, "daily");
    bool points = util_json_member(o, "times_s") || util_json_member(o, "rates_per_s");
    if (points + !!csv + !!day != 1)
        return util_diag_add(d, "%s: give one of times_s with rates_per_s, csv, or daily", path);
    wl_profile *p = NULL;
    if (day) {
        if (util_json_number(day, "peak_per_s", 0) < util_json_number(day, "trough_per_s", 0))
            return util_diag_add(d, "%s.daily.peak_per_s: below trough_per_s", path);
        p = daily(day);
    } else if (csv) {
        char *file = util_path_join(base_dir, csv->valuestring);
        int rc = from_csv(file, &p, d);
        free(file);
        if (rc) return rc;
    } else if (from_points(o, path, &p, d)) {
        return UTIL_EINPUT;
    }
    integrate(p);
    if (!(p->cum[p->n - 1] > 0) && !(p->r[p->n - 1] > 0)) {
        wl_profile_destroy(p);
        return util_diag_add(d, "%s: every rate is 0: nothing would arrive", path);
    }
    const cJSON *mean = util_json_member(o, "mean_per_s");
    if (mean) rescale(p, mean->valuedouble);
    *out = p;
    return UTIL_OK;
}
