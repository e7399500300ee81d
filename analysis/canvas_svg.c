/*
 * canvas_svg.c: the canvas that writes an SVG document.  Every element
 * carries the metadata the layout gives it (class, data- attributes), so a
 * reader of the file gets the figure's numbers, not just its pixels.
 */
#include "figure.h"

#include <math.h>
#include <string.h>

static FILE *out_of(an__canvas *c)
{
    return c->state;
}

/* An attribute list: a space before it when there is one. */
static void meta_attrs(FILE *o, const char *meta)
{
    if (meta && *meta) fprintf(o, " %s", meta);
}

static void stroke_attrs(FILE *o, an__stroke s)
{
    fprintf(o, " fill=\"none\" stroke=\"%s\" stroke-width=\"%g\"", s.colour, s.width);
    if (s.dash && *s.dash) fprintf(o, " stroke-dasharray=\"%s\"", s.dash);
}

static void svg_begin_group(an__canvas *c, const char *meta)
{
    fputs("<g", out_of(c));
    meta_attrs(out_of(c), meta);
    fputs(">\n", out_of(c));
}

static void svg_end_group(an__canvas *c)
{
    fputs("</g>\n", out_of(c));
}

static void svg_line(an__canvas *c, const char *meta, double x1, double y1, double x2, double y2,
                     an__stroke s)
{
    FILE *o = out_of(c);
    fputs("<line", o);
    meta_attrs(o, meta);
    fprintf(o, " x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"", x1, y1, x2, y2);
    stroke_attrs(o, s);
    fputs("/>\n", o);
}

static void svg_polyline(an__canvas *c, const char *meta, const double *x, const double *y,
                         size_t n, an__stroke s)
{
    FILE *o = out_of(c);
    fputs("<polyline", o);
    meta_attrs(o, meta);
    if (s.width > 0)
        stroke_attrs(o, s);
    else /* points alone: the element keeps the values, draws nothing */
        fputs(" fill=\"none\" stroke=\"none\"", o);
    fputs(" points=\"", o);
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%s%.2f,%.2f", i ? " " : "", x[i], y[i]);
    fputs("\"/>\n", o);
}

static void svg_polygon(an__canvas *c, const char *meta, const double *x, const double *y, size_t n,
                        const char *fill, double opacity)
{
    FILE *o = out_of(c);
    fputs("<polygon", o);
    meta_attrs(o, meta);
    fprintf(o, " fill=\"%s\" fill-opacity=\"%g\" stroke=\"none\" points=\"", fill, opacity);
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%s%.2f,%.2f", i ? " " : "", x[i], y[i]);
    fputs("\"/>\n", o);
}

static void svg_rect(an__canvas *c, const char *meta, double x, double y, double w, double h,
                     const char *fill, double opacity, const char *stroke)
{
    FILE *o = out_of(c);
    fputs("<rect", o);
    meta_attrs(o, meta);
    fprintf(o, " x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"", x, y, w, h,
            fill ? fill : "none");
    if (fill && opacity < 1) fprintf(o, " fill-opacity=\"%g\"", opacity);
    if (stroke) fprintf(o, " stroke=\"%s\"", stroke);
    fputs("/>\n", o);
}

static void svg_circle(an__canvas *c, double x, double y, double r, const char *fill)
{
    fprintf(out_of(c), "<circle class=\"marker\" cx=\"%.2f\" cy=\"%.2f\" r=\"%g\" fill=\"%s\"/>\n",
            x, y, r, fill);
}

static void svg_text(an__canvas *c, const char *cls, double x, double y, an__anchor a, double size,
                     bool bold, bool vertical, const char *colour, const char *text)
{
    static const char *const anchors[] = {"start", "middle", "end"};
    FILE *o = out_of(c);
    if (vertical)
        fprintf(o, "<text class=\"%s\" transform=\"rotate(-90)\" x=\"%.1f\" y=\"%.1f\"", cls, -y,
                x);
    else
        fprintf(o, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\"", cls, x, y);
    fprintf(o, " text-anchor=\"%s\"", anchors[a]);
    if (size != 11) fprintf(o, " font-size=\"%g\"", size);
    if (bold) fputs(" font-weight=\"bold\"", o);
    if (strcmp(colour, "#222")) fprintf(o, " fill=\"%s\"", colour);
    fputc('>', o);
    an__xml_escaped(o, text);
    fputs("</text>\n", o);
}

void an_plot_svg(const an_plot *p, an_plot_size size, FILE *out)
{
    an__layout l = an__figure_layout(p, size);
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Verdana, sans-serif\" "
            "font-size=\"11\" fill=\"#222\" data-x-scale=\"%s\" data-x-unit=\"%s\"",
            ceil(l.width), ceil(l.height), ceil(l.width), ceil(l.height),
            l.ax.log ? "log" : "linear", l.ax.unit);
    if (p->source) {
        fputs(" data-source=\"", out);
        an__xml_escaped(out, p->source);
        fputc('"', out);
    }
    fputs(">\n<title>", out);
    an__xml_escaped(out, p->title ? p->title : "");
    if (p->subtitle) {
        fputs(" \xe2\x80\x94 ", out);
        an__xml_escaped(out, p->subtitle);
    }
    fputs("</title>\n", out);
    an__canvas c = {.state = out,
                    .wants_meta = true,
                    .begin_group = svg_begin_group,
                    .end_group = svg_end_group,
                    .line = svg_line,
                    .polyline = svg_polyline,
                    .polygon = svg_polygon,
                    .rect = svg_rect,
                    .circle = svg_circle,
                    .text = svg_text};
    an__figure_draw(p, &l, &c);
    fputs("</svg>\n", out);
}
