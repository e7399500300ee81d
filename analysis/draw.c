/*
 * draw.c: an an_plot drawn as a self-contained SVG document or as text
 * characters.  Both share the axes (nice ticks, a log scale), so the
 * terminal shows the figure the SVG does.  Every series' values are written
 * next to its pixels (data-x, data-y at 17 digits), so that a reader -- the
 * tests, a script -- gets the database's numbers back, not a rendering.
 */
#include "an.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- axes ------------------------------------------------------------------ */

/* An axis runs from lo to hi at "nice" ticks: multiples of step (1, 2 or 5
 * times a power of ten), or decades on a log axis. */
typedef struct axis {
    double lo, hi, step;
    bool log;
} axis;

static void extend(double *lo, double *hi, double v, bool log_scale)
{
    if (!isfinite(v) || (log_scale && !(v > 0))) return;
    if (v < *lo) *lo = v;
    if (v > *hi) *hi = v;
}

static double nice_step(double raw)
{
    double e = pow(10, floor(log10(raw))), f = raw / e;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e;
}

/* The data's range [lo, hi] (lo > hi: no data) made nice. */
static axis nice_axis(double lo, double hi, bool log_scale)
{
    axis a = {lo, hi, 0, log_scale};
    if (log_scale) {
        if (!(lo <= hi)) lo = hi = 1;
        a.lo = pow(10, floor(log10(lo)));
        a.hi = pow(10, ceil(log10(hi)));
        if (a.hi <= a.lo) a.hi = a.lo * 10;
        return a;
    }
    if (!(lo <= hi)) {
        lo = 0;
        hi = 1;
    }
    if (hi == lo) { /* one value: half its size either side */
        double half = lo ? fabs(lo) / 2 : 1;
        lo -= lo ? half : 0;
        hi += half;
    }
    a.step = nice_step((hi - lo) / 5);
    a.lo = floor(lo / a.step) * a.step;
    a.hi = ceil(hi / a.step) * a.step;
    return a;
}

/* Where v falls, 0 (lo) to 1 (hi), clamped: a value outside a log axis
 * (0 or less) sits on its edge. */
static double axis_frac(const axis *a, double v)
{
    double f = a->log ? (v > 0 ? log10(v / a->lo) / log10(a->hi / a->lo) : 0)
                      : (v - a->lo) / (a->hi - a->lo);
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

/* The tick values, at most max; a log axis of few decades gets 2 and 5 too. */
static int axis_ticks(const axis *a, double *t, int max)
{
    int n = 0;
    if (!a->log) {
        for (int i = 0; n < max && a->lo + i * a->step <= a->hi + a->step / 1e6; i++)
            t[n++] = a->lo + i * a->step;
        return n;
    }
    bool fine = a->hi / a->lo <= 100;
    for (double dec = a->lo; n < max && dec <= a->hi * (1 + 1e-9); dec *= 10) {
        t[n++] = dec;
        if (fine && dec * 10 <= a->hi * (1 + 1e-9) && n + 2 <= max) {
            t[n++] = 2 * dec;
            t[n++] = 5 * dec;
        }
    }
    return n;
}

/* The shared x axis: every series, vertical guide and overloaded x. */
static axis x_axis_of(const an_plot *p)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < p->n_panels; i++) {
        const an_plot_panel *pl = &p->panels[i];
        for (int s = 0; s < pl->n_series; s++)
            for (size_t k = 0; k < pl->series[s].n; k++)
                extend(&lo, &hi, pl->series[s].x[k], p->log_x);
        for (int g = 0; g < pl->n_guides; g++)
            if (pl->guides[g].vertical) extend(&lo, &hi, pl->guides[g].at, p->log_x);
    }
    for (size_t i = 0; i < p->n_overloaded; i++)
        extend(&lo, &hi, p->overloaded_x[i], p->log_x);
    axis a = nice_axis(lo, hi, p->log_x);
    bool edge = false; /* a guide on the right edge, which the frame would hide */
    for (int i = 0; i < p->n_panels; i++)
        for (int g = 0; g < p->panels[i].n_guides; g++)
            edge |= p->panels[i].guides[g].vertical && p->panels[i].guides[g].at >= a.hi;
    if (edge && !a.log) a.hi += a.step;
    return a;
}

/* A panel's y axis starts at 0: every quantity plotted is a latency, a
 * count, a rate or a fraction, and a floor above 0 exaggerates changes. */
static axis y_axis_of(const an_plot_panel *pl)
{
    double lo = 0, hi = -INFINITY;
    for (int s = 0; s < pl->n_series; s++)
        for (size_t k = 0; k < pl->series[s].n; k++)
            extend(&lo, &hi, pl->series[s].y[k], false);
    for (int g = 0; g < pl->n_guides; g++)
        if (!pl->guides[g].vertical) extend(&lo, &hi, pl->guides[g].at, false);
    if (hi < lo) hi = lo;
    axis a = nice_axis(lo, hi, false);
    /* a step of headroom over a guide at the top, which the frame would hide */
    for (int g = 0; g < pl->n_guides; g++)
        if (!pl->guides[g].vertical && pl->guides[g].at >= a.hi) {
            a.hi += a.step;
            break;
        }
    return a;
}

/* ---- SVG ----------------------------------------------------------------- */

enum {
    MIN_W = 900,
    LEFT = 80, /* room for the y tick labels and the y label */
    PLOT_W = 540,
    LEGEND_X = LEFT + PLOT_W + 20,
    TOP = 50, /* room for the title */
    PANEL_H = 220,
    PANEL_GAP = 56, /* x tick labels and x label between panels */
    MAX_TICKS = 24,
    MARKED_POINTS = 60, /* series this short get a marker per point */
};

/* Series colours: Okabe and Ito's palette for colour-blind readers, in an
 * order whose first six stay apart under deuteranopia and protanopia
 * (tests/test_plot.c simulates both and measures every pair; yellow, the
 * weakest on white, comes last).  Black is kept for SLO lines, grey for the
 * other guides.  Each series also has a dash of its own -- the second
 * channel, for grey print and for readers who cannot tell two hues apart. */
static const char *const colours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                      "#CC79A7", "#56B4E9", "#F0E442"};
enum { N_COLOURS = sizeof colours / sizeof colours[0] };
static const char *const dashes[] = {"", "7 3", "2 2", "9 3 2 3", "4 2", "1 3", "12 3"};
enum { N_DASHES = sizeof dashes / sizeof dashes[0] };
#define SLO_COLOUR "#000"
#define SLO_DASH "5 3"
#define GUIDE_COLOUR "#777"
#define GUIDE_DASH "2 3"

const char *an_plot_colour(int i)
{
    return colours[i % N_COLOURS];
}

const char *an_plot_dash(int i)
{
    return dashes[i % N_DASHES];
}

/* stroke-dasharray of series s, or nothing for a solid line. */
static void dash_attr(FILE *out, int s)
{
    const char *d = dashes[s % N_DASHES];
    if (*d) fprintf(out, " stroke-dasharray=\"%s\"", d);
}

/* Text and attribute values: file names and scenario keys may hold any of these. */
static void xml_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        const char *e = *s == '&'   ? "&amp;"
                        : *s == '<' ? "&lt;"
                        : *s == '>' ? "&gt;"
                        : *s == '"' ? "&quot;"
                                    : NULL;
        if (e)
            fputs(e, out);
        else
            fputc(*s, out);
    }
}

static void text_at(FILE *out, double x, double y, const char *anchor, const char *cls,
                    const char *text)
{
    fprintf(out, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", cls, x, y, anchor);
    xml_escaped(out, text);
    fputs("</text>\n", out);
}

static double px(const axis *ax, double x)
{
    return LEFT + axis_frac(ax, x) * PLOT_W;
}

static double py(const axis *ay, double y, int top)
{
    return top + PANEL_H - axis_frac(ay, y) * PANEL_H;
}

/* A tick's label as people write it: 2.5k, 10k, 100k, 1M past a thousand
 * (never 1e+04), four significant digits below. */
static void tick_label(char *buf, size_t n, double v)
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
    snprintf(buf, n, "%.4g", v);
}

/* Grid lines and tick labels of both axes. */
static void svg_ticks(FILE *out, const axis *ax, const axis *ay, int top)
{
    double t[MAX_TICKS];
    char label[32];
    int n = axis_ticks(ax, t, MAX_TICKS);
    for (int i = 0; i < n; i++) {
        fprintf(out,
                "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                "stroke=\"#ddd\"/>\n",
                px(ax, t[i]), top, px(ax, t[i]), top + PANEL_H);
        tick_label(label, sizeof label, t[i]);
        text_at(out, px(ax, t[i]), top + PANEL_H + 15, "middle", "tick", label);
    }
    n = axis_ticks(ay, t, MAX_TICKS);
    for (int i = 0; i < n; i++) {
        fprintf(out,
                "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                "stroke=\"#ddd\"/>\n",
                LEFT, py(ay, t[i], top), LEFT + PLOT_W, py(ay, t[i], top));
        tick_label(label, sizeof label, t[i]);
        text_at(out, LEFT - 6, py(ay, t[i], top) + 4, "end", "tick", label);
    }
}

static void svg_guides(FILE *out, const an_plot_panel *pl, const axis *ax, const axis *ay, int top)
{
    for (int g = 0; g < pl->n_guides; g++) {
        const an_plot_guide *gd = &pl->guides[g];
        bool slo = !strncmp(gd->label, "SLO ", 4);
        double x1 = gd->vertical ? px(ax, gd->at) : LEFT, x2 = gd->vertical ? x1 : LEFT + PLOT_W;
        double y1 = gd->vertical ? top : py(ay, gd->at, top),
               y2 = gd->vertical ? top + PANEL_H : y1;
        fprintf(out, "<line class=\"guide\" data-guide=\"");
        xml_escaped(out, gd->label);
        fprintf(out,
                "\" data-at=\"%.17g\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"%s\" stroke-dasharray=\"%s\"/>\n",
                gd->at, x1, y1, x2, y2, slo ? SLO_COLOUR : GUIDE_COLOUR, slo ? SLO_DASH : GUIDE_DASH);
        /* vertical labels are staggered down the panel so that close ones stay
         * legible, and kept on the side of the line that has room */
        bool left = x1 > LEFT + PLOT_W / 2;
        if (gd->vertical)
            text_at(out, left ? x1 - 4 : x1 + 4, top + 12 + 13 * (g % 8), left ? "end" : "start",
                    "guide-label", gd->label);
        else
            text_at(out, LEFT + PLOT_W - 4, y1 - 4, "end", "guide-label", gd->label);
    }
}

static void svg_numbers(FILE *out, const char *attr, const double *v, size_t n)
{
    fprintf(out, " %s=\"", attr);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s%.17g", i ? " " : "", v[i]);
    fputc('"', out);
}

static void svg_series(FILE *out, const an_plot_series *s, int index, const axis *ax,
                       const axis *ay, int top)
{
    const char *colour = colours[index % N_COLOURS];
    fputs("<polyline class=\"series\" data-series=\"", out);
    xml_escaped(out, s->name);
    fputc('"', out);
    svg_numbers(out, "data-x", s->x, s->n);
    svg_numbers(out, "data-y", s->y, s->n);
    fprintf(out, " fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"", colour);
    dash_attr(out, index);
    fputs(" points=\"", out);
    for (size_t i = 0; i < s->n; i++)
        fprintf(out, "%s%.2f,%.2f", i ? " " : "", px(ax, s->x[i]), py(ay, s->y[i], top));
    fputs("\"/>\n", out);
    for (size_t i = 0; s->n <= MARKED_POINTS && i < s->n; i++)
        fprintf(out, "<circle class=\"marker\" cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"/>\n",
                px(ax, s->x[i]), py(ay, s->y[i], top), colour);
}

/* Crosses along the top edge where every run was overloaded: those x have
 * no point, and a gap alone would not say why. */
static void svg_overloaded(FILE *out, const an_plot *p, const axis *ax, int top)
{
    if (!p->n_overloaded) return;
    fputs("<path class=\"overloaded\"", out);
    svg_numbers(out, "data-x", p->overloaded_x, p->n_overloaded);
    fputs(" stroke=\"#000\" stroke-width=\"1.5\" d=\"", out);
    for (size_t i = 0; i < p->n_overloaded; i++) {
        double x = px(ax, p->overloaded_x[i]);
        fprintf(out, "M%.1f %d L%.1f %d M%.1f %d L%.1f %d ", x - 4, top + 2, x + 4, top + 10, x + 4,
                top + 2, x - 4, top + 10);
    }
    fputs("\"/>\n", out);
}

static void legend_entry(FILE *out, int i, int top, const char *colour, const char *dash,
                         const char *text)
{
    double y = top + 10 + 16 * i;
    fprintf(out,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
            "stroke-width=\"2\"",
            LEGEND_X, y, LEGEND_X + 22, y, colour);
    if (*dash) fprintf(out, " stroke-dasharray=\"%s\"", dash);
    fputs("/>\n", out);
    text_at(out, LEGEND_X + 28, y + 4, "start", "legend-label", text);
}

static void svg_legend(FILE *out, const an_plot *p, const an_plot_panel *pl, int top)
{
    fputs("<g class=\"legend\">\n", out);
    int i = 0;
    for (int s = 0; s < pl->n_series; s++, i++)
        legend_entry(out, i, top, colours[s % N_COLOURS], dashes[s % N_DASHES], pl->series[s].name);
    for (int g = 0; g < pl->n_guides; g++, i++) {
        bool slo = !strncmp(pl->guides[g].label, "SLO ", 4);
        legend_entry(out, i, top, slo ? SLO_COLOUR : GUIDE_COLOUR, slo ? SLO_DASH : GUIDE_DASH,
                     pl->guides[g].label);
    }
    if (p->n_overloaded)
        text_at(out, LEGEND_X, top + 14 + 16 * i, "start", "legend-label",
                "\xc3\x97 every run overloaded");
    fputs("</g>\n", out);
}

static void svg_panel(FILE *out, const an_plot *p, const an_plot_panel *pl, const axis *ax, int top)
{
    axis ay = y_axis_of(pl);
    fputs("<g class=\"panel\">\n", out);
    svg_ticks(out, ax, &ay, top);
    fprintf(out,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
            "stroke=\"#444\"/>\n",
            LEFT, top, PLOT_W, PANEL_H);
    fprintf(out,
            "<text class=\"axis-label\" transform=\"rotate(-90)\" x=\"%d\" y=\"%d\" "
            "text-anchor=\"middle\">",
            -(top + PANEL_H / 2), LEFT - 52);
    xml_escaped(out, pl->y_label);
    fputs("</text>\n", out);
    svg_guides(out, pl, ax, &ay, top);
    for (int s = 0; s < pl->n_series; s++)
        svg_series(out, &pl->series[s], s, ax, &ay, top);
    svg_overloaded(out, p, ax, top);
    svg_legend(out, p, pl, top);
    fputs("</g>\n", out);
}

/* Wide enough for the longest legend entry, at about 6.5 pixels a character
 * of the 11-pixel sans-serif font: series named after several keys are long. */
static int svg_width(const an_plot *p)
{
    size_t longest = 0;
    for (int i = 0; i < p->n_panels; i++) {
        const an_plot_panel *pl = &p->panels[i];
        for (int s = 0; s < pl->n_series; s++)
            if (strlen(pl->series[s].name) > longest) longest = strlen(pl->series[s].name);
        for (int g = 0; g < pl->n_guides; g++)
            if (strlen(pl->guides[g].label) > longest) longest = strlen(pl->guides[g].label);
    }
    int w = LEGEND_X + 28 + (int)(6.5 * (double)longest) + 12;
    return w > MIN_W ? w : MIN_W;
}

/* The length of text's first line of at most max characters, broken at a
 * space (a longer word stays whole): sweep labels are whole command lines. */
static size_t line_length(const char *text, size_t max)
{
    size_t n = strlen(text), cut = 0;
    if (n <= max) return n;
    for (size_t i = 0; i < n && (i <= max || !cut); i++)
        if (text[i] == ' ') cut = i;
    return cut ? cut : n;
}

/* Writes text as lines of at most max characters from y down, line_h
 * apart (draw false: only counts them); returns how many. */
static int wrapped(FILE *out, bool draw, double x, double y, int line_h, size_t max,
                   const char *anchor, const char *cls, const char *text)
{
    int lines = 0;
    for (const char *s = text; *s; lines++) {
        size_t n = line_length(s, max);
        if (draw) {
            char *line = util_xasprintf("%.*s", (int)n, s);
            text_at(out, x, y + line_h * lines, anchor, cls, line);
            free(line);
        }
        s += n + (s[n] == ' ');
    }
    return lines;
}

/* Fourteen-pixel title characters are about 8 pixels wide, eleven-pixel ones 6.5. */
#define TITLE_CHARS(width) ((size_t)((width)-40) / 8)
#define NOTE_CHARS(width)  ((size_t)((width)-LEFT - 10) * 2 / 13)

void an_plot_svg(const an_plot *p, FILE *out)
{
    axis ax = x_axis_of(p);
    int width = svg_width(p), notes = 0;
    int top = TOP + 18 * (wrapped(out, false, 0, 0, 0, TITLE_CHARS(width), "", "", p->title) - 1);
    for (int i = 0; i < p->n_notes; i++)
        notes += wrapped(out, false, 0, 0, 0, NOTE_CHARS(width), "", "", p->notes[i]);
    int bottom = top + p->n_panels * (PANEL_H + PANEL_GAP) - PANEL_GAP;
    int height = bottom + 52 + 16 * notes;
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\" "
            "data-x-scale=\"%s\">\n<title>",
            width, height, width, height, p->log_x ? "log" : "linear");
    xml_escaped(out, p->title);
    fprintf(out, "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
                 "<g font-size=\"14\">\n");
    wrapped(out, true, width / 2.0, 26, 18, TITLE_CHARS(width), "middle", "title", p->title);
    fputs("</g>\n", out);
    for (int i = 0; i < p->n_panels; i++)
        svg_panel(out, p, &p->panels[i], &ax, top + i * (PANEL_H + PANEL_GAP));
    /* one x label, under the last panel: the panels share the axis */
    text_at(out, LEFT + PLOT_W / 2.0, bottom + 34, "middle", "axis-label", p->x_label);
    for (int i = 0, line = 0; i < p->n_notes; i++)
        line += wrapped(out, true, LEFT, bottom + 54 + 16 * line, 16, NOTE_CHARS(width), "start",
                        "note", p->notes[i]);
    fputs("</svg>\n", out);
}

/* ---- text ------------------------------------------------------------------ */

static const char markers[] = "*o+x#@%&";

/* Column (or row from the bottom) of v on an axis of cells cells. */
static int cell(const axis *a, double v, int cells)
{
    return (int)lround(axis_frac(a, v) * (cells - 1));
}

static void text_grid(const an_plot *p, const an_plot_panel *pl, const axis *ax, const axis *ay,
                      char *grid, int w, int h)
{
    memset(grid, ' ', (size_t)w * (size_t)h);
    for (int g = 0; g < pl->n_guides; g++) {
        const an_plot_guide *gd = &pl->guides[g];
        int at = gd->vertical ? cell(ax, gd->at, w) : h - 1 - cell(ay, gd->at, h);
        for (int i = 0; i < (gd->vertical ? h : w); i++)
            grid[gd->vertical ? i * w + at : at * w + i] = gd->vertical ? ':' : '-';
    }
    for (size_t i = 0; i < p->n_overloaded; i++)
        grid[cell(ax, p->overloaded_x[i], w)] = '!';
    for (int s = 0; s < pl->n_series; s++)
        for (size_t i = 0; i < pl->series[s].n; i++) {
            int c = cell(ax, pl->series[s].x[i], w), r = h - 1 - cell(ay, pl->series[s].y[i], h);
            grid[r * w + c] = markers[s % (sizeof markers - 1)];
        }
}

/* The x tick values placed under their columns, skipping those that would
 * run into the previous one. */
static void text_x_ticks(const axis *ax, int w, FILE *out)
{
    double t[MAX_TICKS];
    int n = axis_ticks(ax, t, MAX_TICKS), end = -1;
    char *line = util_xmalloc((size_t)w + 16);
    memset(line, ' ', (size_t)w + 15);
    line[w + 15] = '\0';
    for (int i = 0; i < n; i++) {
        char label[32];
        tick_label(label, sizeof label, t[i]);
        int len = (int)strlen(label);
        int start = cell(ax, t[i], w) - len / 2;
        if (start < 0) start = 0;
        if (start > w + 15 - len) start = w + 15 - len;
        if (start <= end) continue;
        memcpy(line + start, label, (size_t)len);
        end = start + len;
    }
    while (end > 0 && line[end - 1] == ' ')
        end--;
    fprintf(out, "%12s%.*s\n", "", end > 0 ? end : 0, line);
    free(line);
}

/* One legend entry, on a new line when it would pass the grid's right edge. */
static int text_entry(FILE *out, int col, int w, char mark, const char *text)
{
    int len = (int)strlen(text) + 4;
    if (col > 9 && col + len > 12 + w) {
        fprintf(out, "\n%9s", "");
        col = 9;
    }
    fprintf(out, "  %c %s", mark, text);
    return col + len;
}

static void text_legend(const an_plot *p, const an_plot_panel *pl, int w, FILE *out)
{
    fputs("  legend:", out);
    int col = 9;
    for (int s = 0; s < pl->n_series; s++)
        col = text_entry(out, col, w, markers[s % (sizeof markers - 1)], pl->series[s].name);
    for (int g = 0; g < pl->n_guides; g++)
        col = text_entry(out, col, w, pl->guides[g].vertical ? ':' : '-', pl->guides[g].label);
    if (p->n_overloaded) text_entry(out, col, w, '!', "every run overloaded");
    fputc('\n', out);
}

static void text_panel(const an_plot *p, const an_plot_panel *pl, const axis *ax, int w, int h,
                       FILE *out)
{
    axis ay = y_axis_of(pl);
    char *grid = util_xmalloc((size_t)w * (size_t)h);
    text_grid(p, pl, ax, &ay, grid, w, h);
    /* each y tick's value on the row it falls in (the first, when two share one) */
    double t[MAX_TICKS];
    int n = axis_ticks(&ay, t, MAX_TICKS);
    fprintf(out, "%s\n", pl->y_label);
    for (int r = 0; r < h; r++) {
        int k = n - 1;
        while (k >= 0 && h - 1 - cell(&ay, t[k], h) != r)
            k--;
        if (k >= 0)
            fprintf(out, "%10.4g |", t[k]);
        else
            fprintf(out, "%10s |", "");
        fprintf(out, "%.*s\n", w, grid + (size_t)r * (size_t)w);
    }
    fprintf(out, "%10s +", "");
    for (int i = 0; i < w; i++)
        fputc('-', out);
    fputc('\n', out);
    text_x_ticks(ax, w, out);
    int pad = (w - (int)strlen(p->x_label)) / 2;
    fprintf(out, "%*s%s\n", 12 + (pad > 0 ? pad : 0), "", p->x_label);
    text_legend(p, pl, w, out);
    free(grid);
}

void an_plot_text(const an_plot *p, int width, int height, FILE *out)
{
    axis ax = x_axis_of(p);
    fprintf(out, "%s\n", p->title);
    for (int i = 0; i < p->n_panels; i++) {
        fputc('\n', out);
        text_panel(p, &p->panels[i], &ax, width, height, out);
    }
    for (int i = 0; i < p->n_notes; i++)
        fprintf(out, "note: %s\n", p->notes[i]);
}
