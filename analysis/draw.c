/*
 * draw.c: an an_plot laid out once and drawn through a canvas (canvas_svg.c,
 * canvas_cairo.c), so that the SVG and the PNG are the same figure.  The
 * layout decides every size before anything is drawn; labels are placed,
 * not just written: a guide's label goes to its own line's end, and moves
 * to the next free place when it would cover a line, a marker or another
 * label.  Legends sit outside the data, right of each panel.  Every
 * series' values travel with its pixels as metadata (data-x, data-y at 17
 * digits) where the canvas keeps it, so that a reader -- the tests, a
 * script -- gets the database's numbers back, not a rendering.
 */
#include "figure.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- palette -------------------------------------------------------------- */

/* Series colours: Okabe and Ito's palette for colour-blind readers, in an
 * order whose first six stay apart under deuteranopia and protanopia
 * (tests/test_plot.c simulates both and measures every pair; yellow, the
 * weakest on white, comes last).  Black is kept for SLO lines and marks,
 * grey for the other guides.  Each entry also has a dash -- the second
 * channel, for grey print and for readers who cannot tell two hues apart. */
static const char *const colours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                      "#CC79A7", "#56B4E9", "#F0E442"};
enum { N_COLOURS = sizeof colours / sizeof colours[0] };
static const char *const dashes[] = {"", "7 3", "2 2", "9 3 2 3", "4 2", "1 3", "12 3"};
enum { N_DASHES = sizeof dashes / sizeof dashes[0] };

const char *an_plot_colour(int i)
{
    return colours[i % N_COLOURS];
}

const char *an_plot_dash(int i)
{
    return dashes[i % N_DASHES];
}

static const char *series_colour(const an_plot_series *s, int position)
{
    return colours[(s->colour ? s->colour - 1 : position) % N_COLOURS];
}

static const char *series_dash(const an_plot_series *s, int position)
{
    return dashes[(s->dash ? s->dash - 1 : position) % N_DASHES];
}

static const char *const guide_kind_names[] = {"reference", "slo", "limit", "mark"};

static an__stroke guide_stroke(an_plot_guide_kind k)
{
    switch (k) {
    case AN_GUIDE_SLO:
        return (an__stroke){"#000", 1.2, "6 3"};
    case AN_GUIDE_LIMIT:
        return (an__stroke){"#555", 1.2, "9 3 2 3"};
    case AN_GUIDE_MARK:
        return (an__stroke){"#000", 1.5, ""};
    default:
        return (an__stroke){"#777", 1, "2 3"};
    }
}

/* ---- geometry ------------------------------------------------------------ */

#define FONT          11.0
#define TITLE_SIZE    16.0
#define SUBTITLE_SIZE 12.0
#define LINE_H        15.0 /* a line of notes or legend */

enum {
    LEFT = 76, /* y tick labels and the y axis' name */
    RIGHT_PAD = 16,
    DEFAULT_PLOT_W = 560,
    MIN_PLOT_W = 240,
    MIN_W = 900,
    DEFAULT_PANEL_H = 230,
    MIN_PANEL_H = 110,
    PANEL_GAP = 40, /* the x tick labels between panels */
    LEGEND_GAP = 18,
    X_TITLE_H = 40,     /* tick labels and the x axis' name under the last panel */
    MARKED_POINTS = 60, /* series this short get a marker per point */
    LANE_TOP_ROW = 24,  /* above the lanes: the spans' brackets and labels */
    LANE_H = 64,
    LANE_GAP = 8,
};

/* The height lanes take in place of a panel. */
static double lanes_height(const an_plot_lanes *ln)
{
    int n = ln->n_lanes > 0 ? ln->n_lanes : 1;
    return LANE_TOP_ROW + n * LANE_H + (n - 1) * LANE_GAP;
}

static int text_lines(const char *text, size_t chars)
{
    int n = 0;
    for (const char *s = text ? text : ""; *s; n++) {
        size_t k = an__line_length(s, chars);
        s += k + (s[k] == ' ');
    }
    return n;
}

static int note_lines(const an_plot *p, size_t chars)
{
    int n = 0;
    for (int i = 0; i < p->n_notes; i++)
        n += text_lines(p->notes[i], chars);
    return n;
}

static double legend_width(const an_plot *p)
{
    double w = 0;
    for (int i = 0; i < p->n_panels; i++)
        for (int s = 0; s < p->panels[i].n_series; s++) {
            double t = an__text_width(p->panels[i].series[s].name, FONT);
            w = t > w ? t : w;
        }
    for (int i = 0; i < p->n_spans; i++) {
        double t = an__text_width(p->spans[i].label, FONT);
        w = t > w ? t : w;
    }
    for (int i = 0; p->lanes && i < p->lanes->n_keys; i++) {
        double t = an__text_width(p->lanes->keys[i].text, FONT);
        w = t > w ? t : w;
    }
    if (p->n_overloaded) w = w > 130 ? w : 130;
    return w + 32;
}

an__layout an__figure_layout(const an_plot *p, an_plot_size size)
{
    an__layout l = {
        .left = LEFT, .panel_h = DEFAULT_PANEL_H, .panel_gap = PANEL_GAP, .ax = an__x_axis(p)};
    if (p->lanes) l.panel_h = lanes_height(p->lanes);
    double legend = legend_width(p);
    l.plot_w = DEFAULT_PLOT_W;
    if (size.width > 0) l.plot_w = size.width - LEFT - LEGEND_GAP - legend - RIGHT_PAD;
    if (l.plot_w < MIN_PLOT_W) l.plot_w = MIN_PLOT_W; /* the legend needs the room */
    l.width = LEFT + l.plot_w + LEGEND_GAP + legend + RIGHT_PAD;
    if (size.width <= 0 && l.width < MIN_W) {
        l.plot_w += MIN_W - l.width;
        l.width = MIN_W;
    }
    l.legend_x = LEFT + l.plot_w + LEGEND_GAP;
    l.title_chars = (size_t)((l.width - 40) / (TITLE_SIZE * 0.62));
    l.note_chars = (size_t)((l.width - LEFT - 10) / (FONT * 0.56));
    l.title_lines = text_lines(p->title, l.title_chars);
    l.subtitle_lines = text_lines(p->subtitle, (size_t)((l.width - 40) / (SUBTITLE_SIZE * 0.58)));
    l.top = 14 + 21 * l.title_lines + 16 * l.subtitle_lines + 14;
    int n = p->n_panels > 0 ? p->n_panels : 1;
    double below = X_TITLE_H + 12 + LINE_H * note_lines(p, l.note_chars) + 8;
    if (size.height > 0) {
        l.panel_h = (size.height - l.top - below - (n - 1) * l.panel_gap) / n;
        if (l.panel_h < MIN_PANEL_H) l.panel_h = MIN_PANEL_H;
    }
    l.height = l.top + n * l.panel_h + (n - 1) * l.panel_gap + below;
    return l;
}

/* ---- placing labels ------------------------------------------------------- */

typedef struct box {
    double x, y, w, h;
} box;

/* What a label must not cover in one panel: the labels placed so far, and
 * the data's pixels (each line sampled every few pixels, each marker). */
typedef struct placer {
    box area; /* labels stay inside it */
    box *boxes;
    size_t n_boxes, cap_boxes;
    double *px, *py;
    size_t n_points, cap_points;
} placer;

static void add_box(placer *pl, box b)
{
    if (pl->n_boxes == pl->cap_boxes) {
        pl->cap_boxes = pl->cap_boxes ? 2 * pl->cap_boxes : 16;
        pl->boxes = util_xrealloc(pl->boxes, pl->cap_boxes * sizeof *pl->boxes);
    }
    pl->boxes[pl->n_boxes++] = b;
}

static void add_point(placer *pl, double x, double y)
{
    if (pl->n_points == pl->cap_points) {
        pl->cap_points = pl->cap_points ? 2 * pl->cap_points : 256;
        pl->px = util_xrealloc(pl->px, pl->cap_points * sizeof *pl->px);
        pl->py = util_xrealloc(pl->py, pl->cap_points * sizeof *pl->py);
    }
    pl->px[pl->n_points] = x;
    pl->py[pl->n_points++] = y;
}

/* The segment's pixels every 3 pixels or so. */
static void add_segment(placer *pl, double x1, double y1, double x2, double y2)
{
    double len = hypot(x2 - x1, y2 - y1);
    int steps = (int)(len / 3) + 1;
    for (int i = 0; i <= steps; i++)
        add_point(pl, x1 + (x2 - x1) * i / steps, y1 + (y2 - y1) * i / steps);
}

static void placer_fini(placer *pl)
{
    free(pl->boxes);
    free(pl->px);
    free(pl->py);
}

static box text_box(double x, double y, an__anchor a, double size, const char *text)
{
    double w = an__text_width(text, size);
    double x0 = a == AN__MIDDLE ? x - w / 2 : a == AN__END ? x - w : x;
    return (box){x0 - 1, y - 0.8 * size, w + 2, 1.05 * size};
}

static bool overlap(box a, box b)
{
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/* What placing b would cover: a label counts far more than a pixel of
 * data, leaving the area more still. */
static double cost(const placer *pl, box b)
{
    double c = 0;
    if (b.x < pl->area.x || b.y < pl->area.y || b.x + b.w > pl->area.x + pl->area.w ||
        b.y + b.h > pl->area.y + pl->area.h)
        c += 1e6;
    for (size_t i = 0; i < pl->n_boxes; i++)
        c += overlap(b, pl->boxes[i]) ? 1e4 : 0;
    for (size_t i = 0; i < pl->n_points; i++)
        c += pl->px[i] >= b.x && pl->px[i] <= b.x + b.w && pl->py[i] >= b.y &&
             pl->py[i] <= b.y + b.h;
    return c;
}

typedef struct spot {
    double x, y;
    an__anchor anchor;
} spot;

/* The candidate spot whose label covers least, plus its penalty (NULL:
 * none; a spot further from what it labels must cover that much less to be
 * taken) -- the first that costs nothing at once; the label's box is then
 * taken.  Penalties are never negative. */
static spot place_near(placer *pl, const spot *cand, const double *penalty, int n, const char *text)
{
    int best = 0;
    double best_cost = INFINITY;
    for (int i = 0; i < n; i++) {
        double c = cost(pl, text_box(cand[i].x, cand[i].y, cand[i].anchor, FONT, text)) +
                   (penalty ? penalty[i] : 0);
        if (c < best_cost) best = i, best_cost = c;
        if (c == 0) break;
    }
    add_box(pl, text_box(cand[best].x, cand[best].y, cand[best].anchor, FONT, text));
    return cand[best];
}

static spot place(placer *pl, const spot *cand, int n, const char *text)
{
    return place_near(pl, cand, NULL, n, text);
}

/* ---- metadata ------------------------------------------------------------- */

/* A growing string: the SVG's data attributes for one element. */
typedef struct meta {
    char *s;
    size_t n, cap;
} meta;

static void meta_printf(meta *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void meta_printf(meta *m, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(m->s ? m->s + m->n : NULL, m->s ? m->cap - m->n : 0, fmt, ap);
        va_end(ap);
        if (m->s && (size_t)k < m->cap - m->n) {
            m->n += (size_t)k;
            return;
        }
        m->cap = 2 * (m->cap + (size_t)k + 64);
        m->s = util_xrealloc(m->s, m->cap);
    }
}

/* s with XML's special characters escaped. */
static void meta_escaped(meta *m, const char *s)
{
    for (; *s; s++) {
        const char *e = an__xml_entity(*s);
        if (e)
            meta_printf(m, "%s", e);
        else
            meta_printf(m, "%c", *s);
    }
}

static void meta_numbers(meta *m, const char *attr, const double *v, size_t n)
{
    meta_printf(m, " %s=\"", attr);
    for (size_t i = 0; i < n; i++)
        meta_printf(m, "%s%.17g", i ? " " : "", v[i]);
    meta_printf(m, "\"");
}

/* ---- drawing one panel ---------------------------------------------------- */

typedef struct frame {
    const an_plot *p;
    const an__layout *l;
    an__canvas *c;
    an__axis ax, ay;
    double top; /* this panel's top */
    placer pl;
} frame;

static double fx(const frame *f, double x)
{
    return f->l->left + an__axis_frac(&f->ax, x) * f->l->plot_w;
}

static double fy(const frame *f, double y)
{
    return f->top + f->l->panel_h - an__axis_frac(&f->ay, y) * f->l->panel_h;
}

static void text(frame *f, const char *cls, double x, double y, an__anchor a, const char *t)
{
    f->c->text(f->c, cls, x, y, a, FONT, false, false, "#222", t);
}

static void draw_x_ticks(frame *f)
{
    double t[AN__MAX_TICKS];
    char label[64];
    const an__layout *l = f->l;
    an__stroke grid = {"#e4e4e4", 1, ""};
    int n = an__axis_ticks(&f->ax, t, AN__MAX_TICKS);
    double end = -INFINITY; /* the right edge of the last x label drawn */
    for (int i = 0; i < n; i++) {
        double x = fx(f, t[i]);
        f->c->line(f->c, "class=\"grid\"", x, f->top, x, f->top + l->panel_h, grid);
        an__tick_label(&f->ax, i, t[i], label, sizeof label);
        box b = text_box(x, f->top + l->panel_h + 15, AN__MIDDLE, FONT, label);
        if (b.x <= end + 4) continue; /* ticks closer than their labels */
        end = b.x + b.w;
        text(f, "tick", x, f->top + l->panel_h + 15, AN__MIDDLE, label);
    }
}

static void draw_y_ticks(frame *f)
{
    double t[AN__MAX_TICKS];
    char label[64];
    const an__layout *l = f->l;
    an__stroke grid = {"#e4e4e4", 1, ""};
    int n = an__axis_ticks(&f->ay, t, AN__MAX_TICKS);
    double prev = INFINITY;
    for (int i = 0; i < n; i++) {
        double y = fy(f, t[i]);
        f->c->line(f->c, "class=\"grid\"", l->left, y, l->left + l->plot_w, y, grid);
        if (prev - y < FONT + 1) continue;
        prev = y;
        an__tick_label(&f->ay, i, t[i], label, sizeof label);
        text(f, "tick", l->left - 6, y + 4, AN__END, label);
    }
}

static void draw_y_title(frame *f, const an_plot_panel *pn)
{
    char *title = an__axis_title(pn->y_label, &f->ay);
    f->c->text(f->c, "axis-label", f->l->left - 56, f->top + f->l->panel_h / 2, AN__MIDDLE, FONT,
               false, true, "#222", title);
    free(title);
}

/* The spans shaded from y down h pixels. */
static void draw_spans(frame *f, double y, double h)
{
    for (int i = 0; i < f->p->n_spans; i++) {
        const an_plot_span *s = &f->p->spans[i];
        double x1 = fx(f, s->lo), x2 = fx(f, s->hi);
        meta m = {0};
        if (f->c->wants_meta) {
            meta_printf(&m, "class=\"span\" data-span=\"");
            meta_escaped(&m, s->label);
            meta_printf(&m, "\" data-lo=\"%.17g\" data-hi=\"%.17g\"", s->lo, s->hi);
        }
        f->c->rect(f->c, m.s ? m.s : "", x1, y, x2 - x1, h, "#000", 0.07, NULL);
        free(m.s);
    }
}

/* The pixels of series s, a step function expanded into its corners. */
static size_t series_pixels(const frame *f, const an_plot_series *s, double **x, double **y)
{
    size_t n = s->style == AN_STYLE_STEPS && s->n > 1 ? 2 * s->n - 1 : s->n;
    *x = util_xmalloc((n + 1) * sizeof **x);
    *y = util_xmalloc((n + 1) * sizeof **y);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->style == AN_STYLE_STEPS && i > 0) { /* along at the last value, then up */
            (*x)[k] = fx(f, s->x[i]);
            (*y)[k++] = fy(f, s->y[i - 1]);
        }
        (*x)[k] = fx(f, s->x[i]);
        (*y)[k++] = fy(f, s->y[i]);
    }
    return k;
}

static void draw_band(frame *f, const an_plot_series *s, int position)
{
    if (!s->lo || s->n == 0) return;
    double *x = util_xmalloc(2 * s->n * sizeof *x), *y = util_xmalloc(2 * s->n * sizeof *y);
    for (size_t i = 0; i < s->n; i++) {
        x[i] = fx(f, s->x[i]);
        y[i] = fy(f, s->hi[i]);
        x[2 * s->n - 1 - i] = x[i];
        y[2 * s->n - 1 - i] = fy(f, s->lo[i]);
    }
    f->c->polygon(f->c, "class=\"band\"", x, y, 2 * s->n, series_colour(s, position), 0.18);
    free(x);
    free(y);
}

static char *series_meta(const an_plot_series *s)
{
    static const char *const styles[] = {"line", "steps", "points"};
    meta m = {0};
    meta_printf(&m, "class=\"series\" data-series=\"");
    meta_escaped(&m, s->name);
    meta_printf(&m, "\" data-style=\"%s\"", styles[s->style]);
    meta_numbers(&m, "data-x", s->x, s->n);
    meta_numbers(&m, "data-y", s->y, s->n);
    if (s->lo) {
        meta_numbers(&m, "data-lo", s->lo, s->n);
        meta_numbers(&m, "data-hi", s->hi, s->n);
    }
    return m.s;
}

static void draw_series(frame *f, const an_plot_series *s, int position)
{
    double *x, *y;
    size_t n = series_pixels(f, s, &x, &y);
    const char *colour = series_colour(s, position);
    char *m = f->c->wants_meta ? series_meta(s) : NULL;
    an__stroke st = {colour, 1.8, series_dash(s, position)};
    if (s->style == AN_STYLE_POINTS) st.width = 0; /* the values stay; no line joins them */
    f->c->polyline(f->c, m ? m : "", x, y, n, st);
    free(m);
    for (size_t i = 0; s->style != AN_STYLE_POINTS && i + 1 < n; i++)
        add_segment(&f->pl, x[i], y[i], x[i + 1], y[i + 1]);
    bool marked =
        s->style == AN_STYLE_POINTS || (s->style == AN_STYLE_LINE && s->n <= MARKED_POINTS);
    for (size_t i = 0; marked && i < s->n; i++) {
        double cx = fx(f, s->x[i]), cy = fy(f, s->y[i]);
        f->c->circle(f->c, cx, cy, s->style == AN_STYLE_POINTS ? 3.5 : 2.5, colour);
        for (int k = 0; k < 9; k++) /* the marker's own pixels */
            add_point(&f->pl, cx + 3 * (k % 3 - 1), cy + 3 * (k / 3 - 1));
    }
    free(x);
    free(y);
}

static char *guide_meta(const an_plot_guide *g)
{
    meta m = {0};
    meta_printf(&m, "class=\"guide\" data-guide=\"");
    meta_escaped(&m, g->label);
    meta_printf(&m, "\" data-kind=\"%s\" data-at=\"%.17g\" data-vertical=\"%s\"",
                guide_kind_names[g->kind], g->at, g->vertical ? "true" : "false");
    return m.s;
}

static void draw_guide_line(frame *f, const an_plot_guide *g)
{
    const an__layout *l = f->l;
    double x1 = g->vertical ? fx(f, g->at) : l->left, x2 = g->vertical ? x1 : l->left + l->plot_w;
    double y1 = g->vertical ? f->top : fy(f, g->at), y2 = g->vertical ? f->top + l->panel_h : y1;
    char *m = f->c->wants_meta ? guide_meta(g) : NULL;
    f->c->line(f->c, m ? m : "", x1, y1, x2, y2, guide_stroke(g->kind));
    free(m);
    add_segment(&f->pl, x1, y1, x2, y2); /* other labels keep off it too */
}

/* Whether a label of a horizontal guide at y, above it (or below), would
 * sit between it and another of the panel's horizontal guides close by:
 * the reader could not tell which line it names. */
static bool between_lines(const frame *f, const an_plot_panel *pn, const an_plot_guide *g,
                          bool above)
{
    double y = fy(f, g->at);
    for (int k = 0; k < pn->n_guides; k++) {
        const an_plot_guide *o = &pn->guides[k];
        if (o == g || o->vertical) continue;
        double d = fy(f, o->at) - y; /* > 0: the other is below */
        if (above ? d < 0 && d > -2.5 * FONT : d > 0 && d < 2.5 * FONT) return true;
    }
    return false;
}

/* A guide's label at its own line's end (a horizontal line's right end, a
 * vertical one's top), else further along it, on either side; a
 * horizontal one never between its line and a neighbour's, but on its own
 * line, over a white box, when no side is clear. */
static void draw_guide_label(frame *f, const an_plot_panel *pn, const an_plot_guide *g)
{
    const an__layout *l = f->l;
    spot cand[34];
    double penalty[34] = {0};
    int n = 0;
    if (g->vertical) {
        double x = fx(f, g->at);
        for (int k = 0; k < 14 && n + 2 <= 32; k++) {
            double y = f->top + 13 + 14 * k;
            if (y > f->top + l->panel_h - 4) break;
            cand[n++] = (spot){x + 4, y, AN__START};
            cand[n++] = (spot){x - 4, y, AN__END};
        }
    } else {
        double y = fy(f, g->at), r = l->left + l->plot_w - 4, le = l->left + 4;
        double up = between_lines(f, pn, g, true) ? 1e5 : 0,
               down = between_lines(f, pn, g, false) ? 1e5 : 0;
        double xs[5] = {r, le, l->left + l->plot_w * 3 / 4.0, l->left + l->plot_w / 2.0,
                        l->left + l->plot_w / 4.0};
        an__anchor as[5] = {AN__END, AN__START, AN__MIDDLE, AN__MIDDLE, AN__MIDDLE};
        for (int q = 0; q < 5; q++) { /* the ends, then along the line, a quarter at a time */
            penalty[n] = up;
            cand[n++] = (spot){xs[q], y - 4, as[q]};
            penalty[n] = down;
            cand[n++] = (spot){xs[q], y + 13, as[q]};
        }
        /* on the line: it covers its own line, so only when no side is clear */
        penalty[n] = 5e4;
        cand[n++] = (spot){r, y + 4, AN__END};
        penalty[n] = 5e4;
        cand[n++] = (spot){le, y + 4, AN__START};
    }
    if (n == 0) return;
    spot s = place_near(&f->pl, cand, penalty, n, g->label);
    if (!g->vertical && s.y == fy(f, g->at) + 4) {
        box b = text_box(s.x, s.y, s.anchor, FONT, g->label);
        f->c->rect(f->c, "", b.x - 2, b.y, b.w + 4, b.h, "#fff", 1, NULL);
    }
    f->c->text(f->c, "guide-label", s.x, s.y, s.anchor, FONT, false, false,
               g->kind == AN_GUIDE_SLO || g->kind == AN_GUIDE_MARK ? "#000" : "#555", g->label);
}

/* Whether the panel's series have more than one colour: their labels
 * then say whose they are by theirs. */
static bool several_colours(const an_plot_panel *pn)
{
    for (int s = 1; s < pn->n_series; s++)
        if (strcmp(series_colour(&pn->series[s], s), series_colour(&pn->series[0], 0))) return true;
    return false;
}

static void draw_point_labels(frame *f, const an_plot_series *s, int position, bool coloured)
{
    const char *colour = coloured ? series_colour(s, position) : "#222";
    for (size_t i = 0; s->labels && i < s->n; i++) {
        if (!s->labels[i] || !*s->labels[i]) continue;
        double x = fx(f, s->x[i]), y = fy(f, s->y[i]);
        spot cand[40];
        int n = 0;
        /* beside the point, then further away: five rings, so that two
         * runs' labels at one point (both "100.0% met") find a place each */
        for (int ring = 0; ring < 5; ring++) {
            double d = 14 * ring;
            cand[n++] = (spot){x - 7 - d, y + 4, AN__END};
            cand[n++] = (spot){x + 7 + d, y + 4, AN__START};
            cand[n++] = (spot){x + 6 + d, y - 5 - d, AN__START};
            cand[n++] = (spot){x + 6 + d, y + 13 + d, AN__START};
            cand[n++] = (spot){x - 6 - d, y - 5 - d, AN__END};
            cand[n++] = (spot){x - 6 - d, y + 13 + d, AN__END};
            cand[n++] = (spot){x, y - 9 - d, AN__MIDDLE};
            cand[n++] = (spot){x, y + 18 + d, AN__MIDDLE};
        }
        spot sp = place(&f->pl, cand, n, s->labels[i]);
        f->c->text(f->c, "point-label", sp.x, sp.y, sp.anchor, FONT, false, false, colour,
                   s->labels[i]);
    }
}

/* Crosses along the top edge where runs were overloaded, with how many of
 * the seeds there were when not all: an overloaded run has no percentiles,
 * and a gap (or a mean of the others) alone would not say so. */
static void draw_overloaded(frame *f)
{
    const an_plot *p = f->p;
    if (!p->n_overloaded) return;
    meta m = {0};
    if (f->c->wants_meta) {
        meta_printf(&m, "class=\"overloaded\"");
        meta_numbers(&m, "data-x", p->overloaded_x, p->n_overloaded);
        meta_printf(&m, " data-k=\"");
        for (size_t i = 0; i < p->n_overloaded; i++)
            meta_printf(&m, "%s%d", i ? " " : "", p->overloaded_k[i]);
        meta_printf(&m, "\" data-n=\"");
        for (size_t i = 0; i < p->n_overloaded; i++)
            meta_printf(&m, "%s%d", i ? " " : "", p->overloaded_n[i]);
        meta_printf(&m, "\"");
    }
    f->c->begin_group(f->c, m.s ? m.s : "");
    free(m.s);
    an__stroke cross = {"#000", 1.5, ""};
    for (size_t i = 0; i < p->n_overloaded; i++) {
        double x = fx(f, p->overloaded_x[i]), y = f->top + 3;
        f->c->line(f->c, "", x - 4, y, x + 4, y + 8, cross);
        f->c->line(f->c, "", x + 4, y, x - 4, y + 8, cross);
        add_box(&f->pl, (box){x - 5, y - 1, 10, 10});
        if (p->overloaded_k[i] < p->overloaded_n[i]) {
            char t[32];
            snprintf(t, sizeof t, "%d/%d", p->overloaded_k[i], p->overloaded_n[i]);
            spot cand[] = {
                {x, y + 20, AN__MIDDLE}, {x + 7, y + 9, AN__START}, {x - 7, y + 9, AN__END}};
            spot s = place(&f->pl, cand, 3, t);
            text(f, "point-label", s.x, s.y, s.anchor, t);
        }
    }
    f->c->end_group(f->c);
}

static void legend_line(frame *f, int i, const char *colour, const char *dash, double width,
                        const char *label)
{
    double x = f->l->legend_x, y = f->top + 10 + LINE_H * i;
    f->c->line(f->c, "", x, y, x + 22, y, (an__stroke){colour, width, dash});
    text(f, "legend-label", x + 28, y + 4, AN__START, label);
}

static void draw_legend(frame *f, const an_plot_panel *pn)
{
    f->c->begin_group(f->c, "class=\"legend\"");
    int i = 0;
    for (int s = 0; s < pn->n_series; s++, i++) {
        const an_plot_series *ser = &pn->series[s];
        if (ser->style == AN_STYLE_POINTS) {
            double x = f->l->legend_x, y = f->top + 10 + LINE_H * i;
            f->c->circle(f->c, x + 11, y, 3.5, series_colour(ser, s));
            text(f, "legend-label", x + 28, y + 4, AN__START, ser->name);
        } else {
            legend_line(f, i, series_colour(ser, s), series_dash(ser, s), 2, ser->name);
        }
    }
    for (int s = 0; s < f->p->n_spans; s++, i++) {
        double x = f->l->legend_x, y = f->top + 4 + LINE_H * i;
        f->c->rect(f->c, "", x, y, 22, 12, "#000", 0.12, NULL);
        text(f, "legend-label", x + 28, y + 10, AN__START, f->p->spans[s].label);
    }
    if (f->p->n_overloaded) {
        double x = f->l->legend_x, y = f->top + 10 + LINE_H * i;
        an__stroke cross = {"#000", 1.5, ""};
        f->c->line(f->c, "", x + 7, y - 4, x + 15, y + 4, cross);
        f->c->line(f->c, "", x + 15, y - 4, x + 7, y + 4, cross);
        text(f, "legend-label", x + 28, y + 4, AN__START, "overloaded runs (k/n)");
    }
    f->c->end_group(f->c);
}

static void draw_panel(const an_plot *p, const an__layout *l, an__canvas *c, int index)
{
    const an_plot_panel *pn = &p->panels[index];
    frame f = {.p = p, .l = l, .c = c, .ax = l->ax, .ay = an__y_axis(pn)};
    f.top = l->top + index * (l->panel_h + l->panel_gap);
    f.pl.area = (box){l->left, f.top, l->plot_w, l->panel_h};
    char panel_meta[160];
    snprintf(panel_meta, sizeof panel_meta,
             "class=\"panel\" data-y-scale=\"%s\" data-y-unit=\"%s\"", f.ay.log ? "log" : "linear",
             f.ay.unit);
    c->begin_group(c, panel_meta);
    draw_x_ticks(&f);
    draw_y_ticks(&f);
    draw_spans(&f, f.top, l->panel_h);
    c->rect(c, "class=\"frame\"", l->left, f.top, l->plot_w, l->panel_h, NULL, 0, "#444");
    draw_y_title(&f, pn);
    for (int s = 0; s < pn->n_series; s++)
        draw_band(&f, &pn->series[s], s);
    for (int g = 0; g < pn->n_guides; g++)
        draw_guide_line(&f, &pn->guides[g]);
    for (int s = 0; s < pn->n_series; s++)
        draw_series(&f, &pn->series[s], s);
    draw_overloaded(&f);
    /* marks and SLOs first: they are the findings, and get the best places */
    for (int pass = 0; pass < 2; pass++)
        for (int g = 0; g < pn->n_guides; g++) {
            an_plot_guide_kind k = pn->guides[g].kind;
            if ((k == AN_GUIDE_SLO || k == AN_GUIDE_MARK) == (pass == 0))
                draw_guide_label(&f, pn, &pn->guides[g]);
        }
    bool coloured = several_colours(pn);
    for (int s = 0; s < pn->n_series; s++)
        draw_point_labels(&f, &pn->series[s], s, coloured);
    for (int i = 0; index == 0 && i < p->n_spans; i++) {
        double x = fx(&f, p->spans[i].lo), x2 = fx(&f, p->spans[i].hi);
        spot cand[] = {{x + 4, f.top + 13, AN__START}, {x2 - 4, f.top + 13, AN__END}};
        if (x2 - x > an__text_width(p->spans[i].label, FONT) + 8) {
            spot s = place(&f.pl, cand, 2, p->spans[i].label);
            text(&f, "span-label", s.x, s.y, s.anchor, p->spans[i].label);
        }
    }
    draw_legend(&f, pn);
    c->end_group(c);
    placer_fini(&f.pl);
}

/* ---- lanes ------------------------------------------------------------------ */

/* Lanes share the panel's height: a row on top for the spans' brackets,
 * then the lanes, each with a middle row (the steps) and a low row (a
 * request's marks, kept clear of them). */
static double lane_h(const frame *f)
{
    int n = f->p->lanes->n_lanes;
    return (f->l->panel_h - LANE_TOP_ROW - (n - 1) * LANE_GAP) / n;
}

static double lane_top(const frame *f, int lane)
{
    return f->top + LANE_TOP_ROW + lane * (lane_h(f) + LANE_GAP);
}

static double row_y(const frame *f, int lane, bool low)
{
    return lane_top(f, lane) + lane_h(f) * (low ? 0.8 : 0.4);
}

/* Half an item's height: links end at the edges. */
static double half_height(const frame *f, an__shape s)
{
    double h = lane_h(f);
    return s == AN__BAR ? 0.22 * h : s == AN__TICK ? 0.14 * h : s == AN__DOT ? 3.5 : 5;
}

static const char *palette_or_grey(int colour)
{
    return colour ? colours[(colour - 1) % N_COLOURS] : "#333";
}

/* A regular polygon of k corners (at most 12) around (x, y), the first at
 * the top: a dot is 12, a diamond 4 -- polygons, unlike circles, carry
 * their metadata. */
static void regular_polygon(an__canvas *c, const char *attrs, double x, double y, double r, int k,
                            const char *fill)
{
    double px[12], py[12], turn = 2 * acos(-1.0) / k;
    for (int i = 0; i < k; i++) {
        px[i] = x + r * sin(turn * i);
        py[i] = y - r * cos(turn * i);
    }
    c->polygon(c, attrs, px, py, (size_t)k, fill, 1);
}

static void draw_lane_frame(frame *f, int lane)
{
    const an__lane *ln = &f->p->lanes->lanes[lane];
    meta m = {0};
    if (f->c->wants_meta) {
        meta_printf(&m, "class=\"lane\" data-lane=\"");
        meta_escaped(&m, ln->name);
        meta_printf(&m, "\"");
    }
    f->c->rect(f->c, m.s ? m.s : "", f->l->left, lane_top(f, lane), f->l->plot_w, lane_h(f), NULL,
               0, "#999");
    free(m.s);
    f->c->text(f->c, "lane-label", f->l->left - 8, row_y(f, lane, false) + 4, AN__END, FONT, true,
               false, "#222", ln->name);
}

/* The thin line from an item to the time it is joined to in another
 * lane, edge to edge. */
static void draw_link(frame *f, int lane, const an__item *it)
{
    if (it->link_lane < 0) return;
    double dir = it->link_lane > lane ? 1 : -1;
    double x1 = fx(f, it->lo), x2 = fx(f, it->link_at);
    double y1 = row_y(f, lane, it->low) + dir * half_height(f, it->shape);
    double y2 = row_y(f, it->link_lane, false) - dir * half_height(f, AN__BAR);
    /* faint enough for a label to cross it: labels keep off the marks */
    f->c->line(f->c, "class=\"link\"", x1, y1, x2, y2, (an__stroke){"#888", 0.8, ""});
}

/* A bar with its label inside when it fits, else its short one. */
static void draw_bar(frame *f, int lane, const an__item *it)
{
    double x1 = fx(f, it->lo), x2 = fx(f, it->hi);
    double y = row_y(f, lane, it->low), hh = half_height(f, AN__BAR);
    if (x2 - x1 < 1) x2 = x1 + 1; /* a step too short to see still shows */
    f->c->rect(f->c, it->meta ? it->meta : "", x1, y - hh, x2 - x1, 2 * hh,
               palette_or_grey(it->colour), 1, "#fff");
    add_box(&f->pl, (box){x1, y - hh, x2 - x1, 2 * hh}); /* no label goes over it */
    const char *label = NULL;
    if (it->label && an__text_width(it->label, FONT) + 6 <= x2 - x1)
        label = it->label;
    else if (it->short_label && an__text_width(it->short_label, FONT) + 4 <= x2 - x1)
        label = it->short_label;
    if (label)
        f->c->text(f->c, "bar-label", (x1 + x2) / 2, y + 4, AN__MIDDLE, FONT, false, false, "#fff",
                   label);
}

static void draw_mark(frame *f, int lane, const an__item *it)
{
    double x = fx(f, it->lo), y = row_y(f, lane, it->low), hh = half_height(f, it->shape);
    const char *attrs = it->meta ? it->meta : "", *colour = palette_or_grey(it->colour);
    if (it->shape == AN__TICK) {
        f->c->line(f->c, attrs, x, y - hh, x, y + hh, (an__stroke){colour, 1.5, ""});
        add_segment(&f->pl, x, y - hh, x, y + hh);
        return;
    }
    regular_polygon(f->c, attrs, x, y, hh, it->shape == AN__DOT ? 12 : 4, colour);
    for (int k = 0; k < 9; k++) /* the mark's own pixels */
        add_point(&f->pl, x + hh * (k % 3 - 1), y + hh * (k / 3 - 1));
}

/* A mark's label beside it, within its lane, where it covers no bar, mark,
 * link or other label. */
static void draw_mark_label(frame *f, int lane, const an__item *it)
{
    if (!it->label || it->shape == AN__BAR) return;
    double x = fx(f, it->lo), y = row_y(f, lane, it->low), d = half_height(f, it->shape) + 3;
    spot cand[18];
    double penalty[18]; /* a few pixels of data covered are better than a label far off */
    int n = 0;
    for (int ring = 0; ring < 3; ring++) { /* beside it, then further away */
        double r = d + 16 * ring;
        static const double dy[] = {4, 4, -9, -9, 17, 17};
        for (int k = 0; k < 6; k++) {
            cand[n] = (spot){k % 2 ? x - r : x + r, y + dy[k], k % 2 ? AN__END : AN__START};
            penalty[n++] = 10 * ring + (k >= 2 ? 2 : 0);
        }
    }
    spot s = place_near(&f->pl, cand, penalty, n, it->label);
    text(f, "mark-label", s.x, s.y, s.anchor, it->label);
}

/* Each span's extent as a bracket over the lanes, its label above it. */
static void draw_span_brackets(frame *f)
{
    an__stroke st = {"#000", 1, ""};
    for (int i = 0; i < f->p->n_spans; i++) {
        const an_plot_span *s = &f->p->spans[i];
        double x1 = fx(f, s->lo), x2 = fx(f, s->hi), y = f->top + LANE_TOP_ROW - 5;
        f->c->line(f->c, "", x1, y, x2, y, st);
        f->c->line(f->c, "", x1, y - 4, x1, y + 4, st);
        f->c->line(f->c, "", x2, y - 4, x2, y + 4, st);
        double w = an__text_width(s->label, FONT), mid = (x1 + x2) / 2;
        double right = f->l->left + f->l->plot_w;
        an__anchor a = mid - w / 2 < f->l->left ? AN__START
                       : mid + w / 2 > right    ? AN__END
                                                : AN__MIDDLE;
        double x = a == AN__START ? f->l->left : a == AN__END ? right : mid;
        text(f, "span-label", x, y - 7, a, s->label);
    }
}

static void key_swatch(frame *f, const an__key *k, double x, double y)
{
    const char *colour = palette_or_grey(k->colour);
    switch (k->shape) {
    case AN__BAR:
        f->c->rect(f->c, "", x, y - 5, 22, 10, colour, 1, NULL);
        break;
    case AN__TICK:
        f->c->line(f->c, "", x + 11, y - 6, x + 11, y + 6, (an__stroke){colour, 1.5, ""});
        break;
    case AN__DOT:
        regular_polygon(f->c, "", x + 11, y, 3.5, 12, colour);
        break;
    case AN__DIAMOND:
        regular_polygon(f->c, "", x + 11, y, 5, 4, colour);
        break;
    }
}

static void draw_lane_legend(frame *f)
{
    const an_plot_lanes *ln = f->p->lanes;
    f->c->begin_group(f->c, "class=\"legend\"");
    double x = f->l->legend_x, y0 = lane_top(f, 0) + 8;
    int i = 0;
    for (; i < ln->n_keys; i++) {
        key_swatch(f, &ln->keys[i], x, y0 + LINE_H * i);
        text(f, "legend-label", x + 28, y0 + LINE_H * i + 4, AN__START, ln->keys[i].text);
    }
    for (int s = 0; s < f->p->n_spans; s++, i++) {
        f->c->rect(f->c, "", x, y0 + LINE_H * i - 6, 22, 12, "#000", 0.12, NULL);
        text(f, "legend-label", x + 28, y0 + LINE_H * i + 4, AN__START, f->p->spans[s].label);
    }
    f->c->end_group(f->c);
}

/* Lanes in the first panel's place: frames, the time grid, the spans,
 * links under bars under marks, then the marks' labels. */
static void draw_lanes(const an_plot *p, const an__layout *l, an__canvas *c)
{
    const an_plot_lanes *ln = p->lanes;
    if (ln->n_lanes == 0) return;
    frame f = {.p = p, .l = l, .c = c, .ax = l->ax, .top = l->top};
    c->begin_group(c, "class=\"lanes\"");
    for (int i = 0; i < ln->n_lanes; i++)
        draw_lane_frame(&f, i);
    draw_x_ticks(&f);
    double top = lane_top(&f, 0), bottom = lane_top(&f, ln->n_lanes - 1) + lane_h(&f);
    draw_spans(&f, top, bottom - top);
    for (int i = 0; i < ln->n_lanes; i++)
        for (size_t k = 0; k < ln->lanes[i].n_items; k++)
            draw_link(&f, i, &ln->lanes[i].items[k]);
    for (int i = 0; i < ln->n_lanes; i++)
        for (size_t k = 0; k < ln->lanes[i].n_items; k++) {
            const an__item *it = &ln->lanes[i].items[k];
            if (it->shape == AN__BAR)
                draw_bar(&f, i, it);
            else
                draw_mark(&f, i, it);
        }
    for (int i = 0; i < ln->n_lanes; i++) {
        f.pl.area = (box){l->left, lane_top(&f, i), l->plot_w, lane_h(&f)};
        for (size_t k = 0; k < ln->lanes[i].n_items; k++)
            draw_mark_label(&f, i, &ln->lanes[i].items[k]);
    }
    draw_span_brackets(&f);
    draw_lane_legend(&f);
    c->end_group(c);
    placer_fini(&f.pl);
}

/* ---- the figure ------------------------------------------------------------- */

/* text as lines of at most max characters from y down, line_h apart. */
static double wrapped(an__canvas *c, double x, double y, double line_h, size_t max, an__anchor a,
                      double size, bool bold, const char *colour, const char *cls, const char *text)
{
    int lines = 0;
    for (const char *s = text; *s; lines++) {
        size_t n = an__line_length(s, max);
        char *line = util_xasprintf("%.*s", (int)n, s);
        c->text(c, cls, x, y + line_h * lines, a, size, bold, false, colour, line);
        free(line);
        s += n + (s[n] == ' ');
    }
    return y + line_h * lines;
}

void an__figure_draw(const an_plot *p, const an__layout *l, an__canvas *c)
{
    c->rect(c, "", 0, 0, l->width, l->height, "#fff", 1, NULL);
    double y = wrapped(c, l->width / 2, 14 + 16, 21, l->title_chars, AN__MIDDLE, TITLE_SIZE, true,
                       "#000", "title", p->title ? p->title : "");
    if (p->subtitle)
        wrapped(c, l->width / 2, y - 2, 16, (size_t)((l->width - 40) / (SUBTITLE_SIZE * 0.58)),
                AN__MIDDLE, SUBTITLE_SIZE, false, "#444", "subtitle", p->subtitle);
    for (int i = 0; i < p->n_panels; i++)
        draw_panel(p, l, c, i);
    if (p->lanes) draw_lanes(p, l, c);
    int n = p->n_panels > 0 ? p->n_panels : 1; /* as the layout counts them */
    double bottom = l->top + n * (l->panel_h + l->panel_gap) - l->panel_gap;
    /* one x axis name, under the last panel: the panels share the axis */
    char *x_title = an__axis_title(p->x_label ? p->x_label : "", &l->ax);
    c->text(c, "axis-label", l->left + l->plot_w / 2, bottom + 33, AN__MIDDLE, FONT, false, false,
            "#222", x_title);
    free(x_title);
    double ny = bottom + X_TITLE_H + 12;
    for (int i = 0; i < p->n_notes; i++)
        ny = wrapped(c, l->left, ny, LINE_H, l->note_chars, AN__START, FONT, false, "#444", "note",
                     p->notes[i]);
}

/* ---- shared with the canvases ---------------------------------------------- */

const char *an__xml_entity(char c)
{
    return c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&quot;" : NULL;
}

void an__xml_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        const char *e = an__xml_entity(*s);
        if (e)
            fputs(e, out);
        else
            fputc(*s, out);
    }
}

size_t an__line_length(const char *text, size_t max)
{
    size_t n = strlen(text), cut = 0;
    if (n <= max) return n;
    for (size_t i = 0; i < n && (i <= max || !cut); i++)
        if (text[i] == ' ') cut = i;
    return cut ? cut : n;
}
