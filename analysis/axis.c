/*
 * axis.c: a figure's numbers made into axes.  An axis is tight (the data's
 * range and a small margin, so that a marker on the edge stays whole), its
 * scale chosen when the figure leaves it open (x: log for a geometric
 * sweep; y: log where every value is positive and they span two decades),
 * its ticks 1-2-5 multiples or the figure's own, and seconds below one
 * shown as milliseconds.  The SVG, the PNG and the terminal share it.
 */
#include "figure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MARGIN 0.03 /* of the range, either side of the data */

typedef struct range {
    double lo, hi;    /* lo > hi: nothing */
    double pos_lo;    /* the smallest positive value */
    bool nonpositive; /* a value of 0 or less: no log scale */
} range;

static range empty_range(void)
{
    return (range){INFINITY, -INFINITY, INFINITY, false};
}

static void extend(range *r, double v)
{
    if (!isfinite(v)) return;
    if (v < r->lo) r->lo = v;
    if (v > r->hi) r->hi = v;
    if (v > 0 && v < r->pos_lo) r->pos_lo = v;
    if (!(v > 0)) r->nonpositive = true;
}

static double nice_step(double raw)
{
    double e = pow(10, floor(log10(raw))), f = raw / e;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A geometric sweep: at least three distinct positive x, each a steady
 * factor of at least 1.25 over the one before (1, 2, 4, 8 or 1, 2, 5, 10:
 * the ratios differ by less than 1.6x), over at least a factor of 8. */
static bool geometric(const an_plot *p, an__axis *a)
{
    size_t n = 0, cap = 0;
    double *v = NULL;
    for (int i = 0; i < p->n_panels; i++)
        for (int s = 0; s < p->panels[i].n_series; s++) {
            const an_plot_series *ser = &p->panels[i].series[s];
            if (n + ser->n > cap) {
                cap = 2 * (n + ser->n);
                v = util_xrealloc(v, cap * sizeof *v);
            }
            if (ser->n) memcpy(v + n, ser->x, ser->n * sizeof *v);
            n += ser->n;
        }
    /* x values with only overloaded runs are points of the sweep too */
    v = util_xrealloc(v, (n + p->n_overloaded + 1) * sizeof *v);
    if (p->n_overloaded) memcpy(v + n, p->overloaded_x, p->n_overloaded * sizeof *v);
    n += p->n_overloaded;
    qsort(v, n, sizeof *v, cmp_double);
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++)
        if (!distinct || v[i] != v[distinct - 1]) v[distinct++] = v[i];
    bool geo = distinct >= 3 && v[0] > 0 && v[distinct - 1] / v[0] >= 8;
    double rmin = INFINITY, rmax = 0;
    for (size_t i = 1; geo && i < distinct; i++) {
        double r = v[i] / v[i - 1];
        rmin = r < rmin ? r : rmin;
        rmax = r > rmax ? r : rmax;
    }
    geo = geo && rmin >= 1.25 && rmax / rmin < 1.6;
    /* its ticks are its own values (2, 4, 8, 16), when they are few */
    for (size_t i = 0; geo && distinct <= 12 && i < distinct; i++)
        a->at[a->n_at++] = v[i];
    free(v);
    return geo;
}

/* The tight extent of r on a linear or log scale.  from_zero: a y axis of
 * values that are all at least 0 starts at 0 (a floor above it exaggerates
 * changes). */
static an__axis make_axis(range r, bool log_scale, bool from_zero)
{
    an__axis a = {.log = log_scale, .factor = 1, .unit = ""};
    if (log_scale) {
        double lo = r.pos_lo, hi = r.hi;
        if (!(lo <= hi)) lo = hi = 1;
        if (hi == lo) lo /= 2, hi *= 2;
        double span = log10(hi / lo);
        a.lo = lo / pow(10, MARGIN * span);
        a.hi = hi * pow(10, MARGIN * span);
        return a;
    }
    double lo = r.lo, hi = r.hi;
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (from_zero && lo >= 0) lo = 0;
    if (hi == lo) { /* one value: half its size either side */
        double half = lo ? fabs(lo) / 2 : 1;
        lo -= lo && !(from_zero && lo > 0) ? half : 0;
        hi += half;
    }
    double pad = MARGIN * (hi - lo);
    a.lo = from_zero && lo == 0 ? 0 : lo - pad;
    a.hi = hi + pad;
    a.step = nice_step((hi - lo) / 5);
    return a;
}

/* Seconds below one are milliseconds: "TTFT (ms)" with ticks 50, 100. */
static void choose_unit(an__axis *a, const char *unit)
{
    a->unit = unit ? unit : "";
    if (unit && !strcmp(unit, "s") && fabs(a->hi) < 1 && fabs(a->lo) < 1) {
        a->factor = 1000;
        a->unit = "ms";
    }
}

an__axis an__x_axis(const an_plot *p)
{
    range r = empty_range();
    for (int i = 0; i < p->n_panels; i++) {
        const an_plot_panel *pl = &p->panels[i];
        for (int s = 0; s < pl->n_series; s++)
            for (size_t k = 0; k < pl->series[s].n; k++)
                extend(&r, pl->series[s].x[k]);
        for (int g = 0; g < pl->n_guides; g++)
            if (pl->guides[g].vertical) extend(&r, pl->guides[g].at);
    }
    for (size_t i = 0; i < p->n_overloaded; i++)
        extend(&r, p->overloaded_x[i]);
    for (int i = 0; i < p->n_x_ticks; i++)
        extend(&r, p->x_ticks[i]);
    if (p->lanes) { /* lanes show their window, whatever lies in it */
        extend(&r, p->lanes->lo);
        extend(&r, p->lanes->hi);
    }
    an__axis sweep = {.n_at = 0};
    bool log_scale = p->x_scale == AN_SCALE_LOG ||
                     (p->x_scale == AN_SCALE_AUTO && !p->n_x_ticks && geometric(p, &sweep));
    if (r.nonpositive && r.pos_lo == INFINITY) log_scale = false;
    an__axis a = make_axis(r, log_scale, false);
    if (log_scale && p->x_scale == AN_SCALE_AUTO) {
        memcpy(a.at, sweep.at, sizeof a.at);
        a.n_at = sweep.n_at;
    }
    choose_unit(&a, p->x_unit);
    a.fig = p->n_x_ticks ? p : NULL;
    return a;
}

an__axis an__y_axis(const an_plot_panel *pl)
{
    range r = empty_range();
    for (int s = 0; s < pl->n_series; s++) {
        const an_plot_series *ser = &pl->series[s];
        for (size_t k = 0; k < ser->n; k++) {
            extend(&r, ser->y[k]);
            if (ser->lo) extend(&r, ser->lo[k]), extend(&r, ser->hi[k]);
        }
    }
    for (int g = 0; g < pl->n_guides; g++)
        if (!pl->guides[g].vertical) extend(&r, pl->guides[g].at);
    bool log_scale =
        pl->y_scale == AN_SCALE_LOG ||
        (pl->y_scale == AN_SCALE_AUTO && !r.nonpositive && r.lo <= r.hi && r.hi / r.pos_lo >= 100);
    if (r.pos_lo == INFINITY) log_scale = false;
    an__axis a = make_axis(r, log_scale, true);
    choose_unit(&a, pl->y_unit);
    return a;
}

double an__axis_frac(const an__axis *a, double v)
{
    double f = a->log ? (v > 0 ? log10(v / a->lo) / log10(a->hi / a->lo) : 0)
                      : (v - a->lo) / (a->hi - a->lo);
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

static bool inside(const an__axis *a, double v)
{
    double eps = 1e-9 * (a->log ? v : a->hi - a->lo);
    return v >= a->lo - eps && v <= a->hi + eps;
}

/* Log ticks: decades, with 2 and 5 between when the axis spans at most
 * three, and every digit when it spans less than one. */
static int log_ticks(const an__axis *a, double *t, int max)
{
    double span = log10(a->hi / a->lo);
    static const double digits[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    static const double one_two_five[] = {1, 2, 5};
    const double *m = span < 1 ? digits : span <= 3 ? one_two_five : digits;
    int per = span < 1 ? 9 : span <= 3 ? 3 : 1;
    int n = 0;
    for (double dec = pow(10, floor(log10(a->lo))); n < max && dec <= a->hi; dec *= 10)
        for (int i = 0; i < per && n < max; i++)
            if (inside(a, m[i] * dec)) t[n++] = m[i] * dec;
    return n;
}

int an__axis_ticks(const an__axis *a, double *t, int max)
{
    int n = 0;
    if (a->fig) {
        for (int i = 0; i < a->fig->n_x_ticks && n < max; i++)
            t[n++] = a->fig->x_ticks[i];
        return n;
    }
    for (int i = 0; i < a->n_at && n < max; i++)
        t[n++] = a->at[i];
    if (n) return n;
    if (a->log) return log_ticks(a, t, max);
    for (double v = ceil(a->lo / a->step - 1e-9) * a->step; n < max && inside(a, v); v += a->step)
        t[n++] = fabs(v) < a->step * 1e-9 ? 0 : v;
    return n;
}

static void number_text(double v, char *buf, size_t n)
{
    static const struct {
        double at;
        const char *suffix;
    } scale[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
    for (size_t i = 0; i < sizeof scale / sizeof scale[0]; i++)
        if (fabs(v) >= scale[i].at) {
            snprintf(buf, n, "%.4g%s", v / scale[i].at, scale[i].suffix);
            return;
        }
    snprintf(buf, n, "%.4g", fabs(v) < 1e-12 ? 0 : v);
}

void an__tick_label(const an__axis *a, int i, double v, char *buf, size_t n)
{
    if (a->fig && i >= 0 && i < a->fig->n_x_ticks) {
        snprintf(buf, n, "%s", a->fig->x_tick_labels[i]);
        return;
    }
    number_text(v * a->factor, buf, n);
}

void an__axis_value(const an__axis *a, double v, char *buf, size_t n)
{
    char num[32];
    number_text(v * a->factor, num, sizeof num);
    snprintf(buf, n, "%s%s%s", num, *a->unit && strcmp(a->unit, "%") ? " " : "", a->unit);
}

char *an__axis_title(const char *label, const an__axis *a)
{
    /* "replicas", not "replicas (replicas)": a count's unit is its name */
    return *a->unit && strcmp(a->unit, label) ? util_xasprintf("%s (%s)", label, a->unit)
                                               : util_xstrdup(label);
}

/* Advance widths of DejaVu Sans in thousandths of an em, by character
 * class: close enough to place labels, and the same for every canvas. */
double an__text_width(const char *text, double size)
{
    double em = 0;
    for (const unsigned char *s = (const unsigned char *)text; *s; s++) {
        unsigned char c = *s;
        if ((c & 0xC0) == 0x80) continue; /* a UTF-8 continuation byte */
        if (strchr("il.,:;'|!", c))
            em += 0.28;
        else if (strchr("fjrtI()[] ", c))
            em += 0.36;
        else if (strchr("mwMW%", c))
            em += 0.92;
        else if (c >= 'A' && c <= 'Z')
            em += 0.70;
        else if (c >= '0' && c <= '9')
            em += 0.64;
        else
            em += 0.58;
    }
    return em * size;
}
