/*
 * canvas_cairo.c: the canvas that paints a PNG through cairo -- the same
 * layout as the SVG, drawn by the same calls, at a scale fit for slides.
 * Text uses cairo's own font selection (fontconfig's sans-serif, DejaVu
 * Sans on Debian), the font the layout's widths are estimated for.
 */
#include "figure.h"

#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

static cairo_t *cr_of(an__canvas *c)
{
    return c->state;
}

/* "#rgb" or "#rrggbb" as cairo's 0-1 channels. */
static void set_colour(cairo_t *cr, const char *hex, double alpha)
{
    unsigned v = 0;
    size_t n = strlen(hex + 1);
    sscanf(hex + 1, "%x", &v);
    double r, g, b;
    if (n == 3) {
        r = ((v >> 8) & 15) / 15.0;
        g = ((v >> 4) & 15) / 15.0;
        b = (v & 15) / 15.0;
    } else {
        r = ((v >> 16) & 255) / 255.0;
        g = ((v >> 8) & 255) / 255.0;
        b = (v & 255) / 255.0;
    }
    cairo_set_source_rgba(cr, r, g, b, alpha);
}

/* An SVG dasharray ("9 3 2 3") as cairo's dashes. */
static void set_stroke(cairo_t *cr, an__stroke s)
{
    double d[8];
    int n = 0;
    for (const char *p = s.dash; p && *p && n < 8;) {
        char *end;
        double v = strtod(p, &end);
        if (end == p) break;
        d[n++] = v;
        p = end;
    }
    cairo_set_dash(cr, d, n, 0);
    cairo_set_line_width(cr, s.width);
    set_colour(cr, s.colour, 1);
}

static void cairo_begin_group(an__canvas *c, const char *meta)
{
    (void)c;
    (void)meta;
}

static void cairo_end_group(an__canvas *c)
{
    (void)c;
}

static void cr_line(an__canvas *c, const char *meta, double x1, double y1, double x2, double y2,
                    an__stroke s)
{
    cairo_t *cr = cr_of(c);
    set_stroke(cr, s);
    cairo_move_to(cr, x1, y1);
    cairo_line_to(cr, x2, y2);
    cairo_stroke(cr);
}

static void cr_polyline(an__canvas *c, const char *meta, const double *x, const double *y, size_t n,
                        an__stroke s)
{
    if (s.width <= 0 || n < 2) return;
    cairo_t *cr = cr_of(c);
    set_stroke(cr, s);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_move_to(cr, x[0], y[0]);
    for (size_t i = 1; i < n; i++)
        cairo_line_to(cr, x[i], y[i]);
    cairo_stroke(cr);
}

static void cr_polygon(an__canvas *c, const char *meta, const double *x, const double *y, size_t n,
                       const char *fill, double opacity)
{
    if (n < 3) return;
    cairo_t *cr = cr_of(c);
    set_colour(cr, fill, opacity);
    cairo_move_to(cr, x[0], y[0]);
    for (size_t i = 1; i < n; i++)
        cairo_line_to(cr, x[i], y[i]);
    cairo_close_path(cr);
    cairo_fill(cr);
}

static void cr_rect(an__canvas *c, const char *meta, double x, double y, double w, double h,
                    const char *fill, double opacity, const char *stroke)
{
    cairo_t *cr = cr_of(c);
    cairo_rectangle(cr, x, y, w, h);
    if (fill) {
        set_colour(cr, fill, opacity);
        cairo_fill_preserve(cr);
    }
    if (stroke) set_stroke(cr, (an__stroke){stroke, 1, ""});
    if (stroke)
        cairo_stroke(cr);
    else
        cairo_new_path(cr);
}

static void cr_circle(an__canvas *c, double x, double y, double r, const char *fill)
{
    cairo_t *cr = cr_of(c);
    set_colour(cr, fill, 1);
    cairo_arc(cr, x, y, r, 0, 2 * PI);
    cairo_fill(cr);
}

static void cr_text(an__canvas *c, const char *cls, double x, double y, an__anchor a, double size,
                    bool bold, bool vertical, const char *colour, const char *text)
{
    cairo_t *cr = cr_of(c);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    cairo_text_extents_t e;
    cairo_text_extents(cr, text, &e);
    double shift = a == AN__MIDDLE ? e.x_advance / 2 : a == AN__END ? e.x_advance : 0;
    set_colour(cr, colour, 1);
    cairo_save(cr);
    cairo_translate(cr, x, y);
    if (vertical) cairo_rotate(cr, -PI / 2);
    cairo_move_to(cr, -shift, 0);
    cairo_show_text(cr, text);
    cairo_restore(cr);
}

/* The figure painted on a new surface; NULL with a message when cairo failed. */
static cairo_surface_t *paint(const an_plot *p, an_plot_size size, double scale, util_diag *d)
{
    an__layout l = an__figure_layout(p, size);
    if (!(scale > 0)) scale = 1;
    cairo_surface_t *surface = cairo_image_surface_create(
        CAIRO_FORMAT_RGB24, (int)ceil(l.width * scale), (int)ceil(l.height * scale));
    cairo_t *cr = cairo_create(surface);
    cairo_scale(cr, scale, scale);
    an__canvas c = {.state = cr,
                    .begin_group = cairo_begin_group,
                    .end_group = cairo_end_group,
                    .line = cr_line,
                    .polyline = cr_polyline,
                    .polygon = cr_polygon,
                    .rect = cr_rect,
                    .circle = cr_circle,
                    .text = cr_text};
    an__figure_draw(p, &l, &c);
    cairo_status_t st = cairo_status(cr);
    cairo_destroy(cr);
    if (st != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(surface);
        util_diag_fail(d, "cannot draw the figure: %s", cairo_status_to_string(st));
        return NULL;
    }
    return surface;
}

int an_plot_png(const an_plot *p, an_plot_size size, double scale, const char *path, util_diag *d)
{
    cairo_surface_t *surface = paint(p, size, scale, d);
    if (!surface) return UTIL_EFAIL;
    cairo_status_t st = cairo_surface_write_to_png(surface, path);
    int err = errno;
    cairo_surface_destroy(surface);
    if (st != CAIRO_STATUS_SUCCESS)
        return util_diag_fail(d, "cannot write %s: %s%s%s", path, cairo_status_to_string(st),
                              st == CAIRO_STATUS_WRITE_ERROR && err ? ": " : "",
                              st == CAIRO_STATUS_WRITE_ERROR && err ? strerror(err) : "");
    return UTIL_OK;
}

typedef struct png_buffer {
    unsigned char *data;
    size_t len, cap;
} png_buffer;

static cairo_status_t to_buffer(void *closure, const unsigned char *data, unsigned int n)
{
    png_buffer *b = closure;
    if (b->len + n > b->cap) {
        b->cap = 2 * (b->len + n);
        b->data = util_xrealloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return CAIRO_STATUS_SUCCESS;
}

int an_plot_png_memory(const an_plot *p, an_plot_size size, double scale, unsigned char **png,
                       size_t *len, util_diag *d)
{
    *png = NULL;
    *len = 0;
    cairo_surface_t *surface = paint(p, size, scale, d);
    if (!surface) return UTIL_EFAIL;
    png_buffer b = {0};
    cairo_status_t st = cairo_surface_write_to_png_stream(surface, to_buffer, &b);
    cairo_surface_destroy(surface);
    if (st != CAIRO_STATUS_SUCCESS) {
        free(b.data);
        return util_diag_fail(d, "cannot encode the figure: %s", cairo_status_to_string(st));
    }
    *png = b.data;
    *len = b.len;
    return UTIL_OK;
}
