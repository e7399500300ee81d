/*
 * figure.h: what the drawing of an an_plot is made of, inside the analysis
 * library.  axis.c turns a figure's numbers into axes (scale, extent, ticks,
 * the unit shown); draw.c lays the figure out once and draws it through a
 * canvas; canvas_svg.c and canvas_cairo.c are the two canvases (an SVG
 * document, a PNG through cairo), draw_text.c the terminal's grid of
 * characters over the same axes.
 */
#ifndef AN_FIGURE_H
#define AN_FIGURE_H

#include "an.h"

/* ---- axes (axis.c) ---- */

enum { AN__MAX_TICKS = 24 };

/* An axis from lo to hi in the data's unit, drawn in the unit it shows:
 * seconds below one are shown as milliseconds (factor 1000). */
typedef struct an__axis {
    double lo, hi;
    double step; /* linear: the tick step */
    bool log;
    double factor;            /* shown = factor x value */
    const char *unit;         /* the unit shown ("ms"), "" for none */
    const an_plot *fig;       /* x axes with the figure's own ticks */
    double at[AN__MAX_TICKS]; /* a geometric sweep's own x values, its ticks */
    int n_at;
} an__axis;

an__axis an__x_axis(const an_plot *p);
an__axis an__y_axis(const an_plot_panel *pl);
/* Where v falls, 0 (lo) to 1 (hi), clamped: a value outside a log axis
 * (0 or less) sits on its edge. */
double an__axis_frac(const an__axis *a, double v);
/* The tick values, at most max. */
int an__axis_ticks(const an__axis *a, double *t, int max);
/* Tick i (value v) as people write it: 250 ms, 2.5k, 10k, 1M, never 1e+04. */
void an__tick_label(const an__axis *a, int i, double v, char *buf, size_t n);
/* "TTFT (ms)": the axis' name with the unit it shows (caller frees). */
char *an__axis_title(const char *label, const an__axis *a);
/* A number as the axis shows it, with its unit: "250 ms", "1.2k tokens/s". */
void an__axis_value(const an__axis *a, double v, char *buf, size_t n);
/* The width of text in pixels at a font size, estimated from DejaVu Sans'
 * advance widths: layout decisions must be the same for every canvas. */
double an__text_width(const char *text, double size);

/* ---- canvases (canvas_svg.c, canvas_cairo.c) ---- */

typedef enum an__anchor { AN__START, AN__MIDDLE, AN__END } an__anchor;

typedef struct an__stroke {
    const char *colour;
    double width;
    const char *dash; /* an SVG dasharray ("5 3"), "" for solid */
} an__stroke;

/* Drawing primitives in CSS pixels.  meta is what an SVG element carries
 * beyond its pixels (class and data- attributes, escaped), "" for nothing;
 * a canvas that cannot keep it (a PNG) ignores it, and says so with
 * wants_meta false so that the layout does not format it. */
typedef struct an__canvas an__canvas;
struct an__canvas {
    void *state;
    bool wants_meta;
    void (*begin_group)(an__canvas *c, const char *meta);
    void (*end_group)(an__canvas *c);
    void (*line)(an__canvas *c, const char *meta, double x1, double y1, double x2, double y2,
                 an__stroke s);
    void (*polyline)(an__canvas *c, const char *meta, const double *x, const double *y, size_t n,
                     an__stroke s);
    void (*polygon)(an__canvas *c, const char *meta, const double *x, const double *y, size_t n,
                    const char *fill, double opacity);
    void (*rect)(an__canvas *c, const char *meta, double x, double y, double w, double h,
                 const char *fill, double opacity, const char *stroke);
    void (*circle)(an__canvas *c, double x, double y, double r, const char *fill);
    /* size in pixels; vertical: read bottom to top (the y axis' name) */
    void (*text)(an__canvas *c, const char *cls, double x, double y, an__anchor a, double size,
                 bool bold, bool vertical, const char *colour, const char *text);
};

/* ---- lanes (plot.c builds them, draw.c and draw_text.c draw them) ---- */

/* A figure may hold lanes instead of panels: rows over the shared time
 * axis, each a sequence of items -- bars (a stretch of time: an engine
 * step on the GPU) and marks (an instant: a step planned, its tokens at
 * the client, a request's events) -- with a thin line joining an item to
 * a time in another lane (the step a plan is for).  A Gantt chart has no
 * y values, so it cannot be a panel's series. */
typedef enum an__shape { AN__BAR, AN__TICK, AN__DOT, AN__DIAMOND } an__shape;

typedef struct an__item {
    an__shape shape;
    double lo, hi; /* a bar's extent; a mark at lo (== hi) */
    int colour;    /* palette entry, 1-based; 0: dark grey */
    bool low;      /* in the lane's lower row (a request's marks), clear of the steps' */
    char glyph;    /* its character in the terminal */
    /* a bar's inside when it fits, else short_label, else none; a mark's
     * beside it where it covers nothing; NULL for none */
    char *label, *short_label;
    int link_lane; /* -1, or the lane of the time it is joined to */
    double link_at;
    char *meta; /* the SVG element's class and data- attributes, escaped */
} an__item;

typedef struct an__lane {
    char *name;
    an__item *items;
    size_t n_items;
} an__lane;

/* A legend entry: a swatch of the shape, and what it stands for. */
typedef struct an__key {
    an__shape shape;
    int colour;
    char glyph; /* 0: the items it stands for show their own in the terminal */
    char *text;
} an__key;

typedef struct an_plot_lanes {
    an__lane *lanes;
    int n_lanes;
    an__key *keys;
    int n_keys;
    double lo, hi; /* the window drawn: the x axis' extent */
} an_plot_lanes;

/* ---- the layout (draw.c) ---- */

/* The figure's geometry, decided before anything is drawn: a canvas needs
 * its size first. */
typedef struct an__layout {
    double width, height;
    double left, plot_w; /* the plot area's left edge and width, every panel */
    double top;          /* the first panel's top */
    double panel_h, panel_gap;
    double legend_x;
    int title_lines, subtitle_lines;
    size_t title_chars, note_chars;
    an__axis ax; /* the x axis every panel shares */
} an__layout;

an__layout an__figure_layout(const an_plot *p, an_plot_size size);
void an__figure_draw(const an_plot *p, const an__layout *l, an__canvas *c);

/* Text and attribute values: file names and scenario keys may hold any of
 * these. */
void an__xml_escaped(FILE *out, const char *s);
/* The entity that stands for c in XML text and attributes, or NULL. */
const char *an__xml_entity(char c);
/* The length of text's first line of at most max characters, broken at a
 * space (a longer word stays whole). */
size_t an__line_length(const char *text, size_t max);

#endif /* AN_FIGURE_H */
