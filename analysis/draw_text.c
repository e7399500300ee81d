/*
 * draw_text.c: an an_plot in text characters, for a look over ssh.  The
 * axes are the SVG's (axis.c); each panel is a grid of cells in which
 * lines join a series' points, a marker shows each point, guides have a
 * character per kind (SLO '=' and '|', others '-' and ':'), and a cell two
 * series share shows '&' rather than whichever came last.  Lanes (the
 * pipeline) are rows of their items' characters over the same axis.
 */
#include "figure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { Y_COLUMN = 12, MIN_GRID_W = 20, MIN_GRID_H = 6 };

static const char markers[] = "o*+x@%$s";
#define N_MARKERS  ((int)sizeof markers - 1)
#define SHARED     '&'
#define LINE       '.'
#define OVERLOADED 'X'

static char guide_char(an_plot_guide_kind k, bool vertical)
{
    static const char across[] = {'-', '=', '~', '#'}, down[] = {':', '|', '!', '#'};
    return vertical ? down[k] : across[k];
}

typedef struct grid {
    char *cell;
    int *owner; /* the series whose marker or line is there, -1 none */
    int w, h;
} grid;

/* Column (or row from the bottom) of v on an axis of cells cells. */
static int cell_of(const an__axis *a, double v, int cells)
{
    return (int)lround(an__axis_frac(a, v) * (cells - 1));
}

/* A line's cell: it never covers a marker or a guide, and a cell two
 * series' lines cross is shared. */
static void put_line(grid *g, int c, int r, int s, char ch)
{
    size_t i = (size_t)r * (size_t)g->w + (size_t)c;
    if (g->cell[i] == ' ') {
        g->cell[i] = ch;
        g->owner[i] = s;
    }
}

static void put_marker(grid *g, int c, int r, int s)
{
    size_t i = (size_t)r * (size_t)g->w + (size_t)c;
    bool other = g->owner[i] >= 0 && g->owner[i] != s && g->cell[i] != LINE && g->cell[i] != ' ';
    g->cell[i] = other || g->cell[i] == SHARED ? SHARED : markers[s % N_MARKERS];
    g->owner[i] = s;
}

/* Bresenham's line between two cells, of ch. */
static void join(grid *g, int c0, int r0, int c1, int r1, int s, char ch)
{
    int dc = abs(c1 - c0), dr = -abs(r1 - r0), sc = c0 < c1 ? 1 : -1, sr = r0 < r1 ? 1 : -1;
    int err = dc + dr;
    for (;;) {
        put_line(g, c0, r0, s, ch);
        if (c0 == c1 && r0 == r1) return;
        int e2 = 2 * err;
        if (e2 >= dr) err += dr, c0 += sc;
        if (e2 <= dc) err += dc, r0 += sr;
    }
}

static void draw_series(grid *g, const an_plot_series *ser, int s, const an__axis *ax,
                        const an__axis *ay)
{
    /* a step function (a CDF of many values) is drawn in its marker: its
     * points are too many to mark one by one */
    char ch = ser->style == AN_STYLE_STEPS ? markers[s % N_MARKERS] : LINE;
    int pc = 0, pr = 0;
    for (size_t i = 0; i < ser->n; i++) {
        int c = cell_of(ax, ser->x[i], g->w), r = g->h - 1 - cell_of(ay, ser->y[i], g->h);
        if (i > 0 && ser->style == AN_STYLE_STEPS) {
            join(g, pc, pr, c, pr, s, ch);
            join(g, c, pr, c, r, s, ch);
        } else if (i > 0 && ser->style == AN_STYLE_LINE) {
            join(g, pc, pr, c, r, s, ch);
        }
        pc = c;
        pr = r;
    }
    /* markers after the lines: a line never hides a point */
    for (size_t i = 0; ser->style != AN_STYLE_STEPS && i < ser->n; i++)
        put_marker(g, cell_of(ax, ser->x[i], g->w), g->h - 1 - cell_of(ay, ser->y[i], g->h), s);
}

/* Whether cells [lo, hi) of row r are blank (cells past an edge count). */
static bool blank(const grid *g, int r, int lo, int hi)
{
    for (int c = lo < 0 ? 0 : lo; c < hi && c < g->w; c++)
        if (g->cell[(size_t)r * (size_t)g->w + (size_t)c] != ' ') return false;
    return true;
}

/* A point's label beside its marker with a blank cell either side, in
 * cells nothing else uses: right of it, else left; none where it would
 * cover something. */
static void put_label(grid *g, int c, int r, const char *label)
{
    int len = (int)strlen(label);
    int from = c + 2 + len <= g->w && blank(g, r, c + 1, c + 3 + len) ? c + 2
               : c - 1 - len >= 0 && blank(g, r, c - 2 - len, c)   ? c - 1 - len
                                                                    : -1;
    if (from >= 0) memcpy(g->cell + (size_t)r * (size_t)g->w + (size_t)from, label, (size_t)len);
}

static void draw_labels(grid *g, const an_plot_series *ser, const an__axis *ax, const an__axis *ay)
{
    for (size_t i = 0; ser->labels && i < ser->n; i++)
        if (ser->labels[i] && *ser->labels[i])
            put_label(g, cell_of(ax, ser->x[i], g->w), g->h - 1 - cell_of(ay, ser->y[i], g->h),
                      ser->labels[i]);
}

static void fill_grid(const an_plot *p, const an_plot_panel *pl, const an__axis *ax,
                      const an__axis *ay, grid *g)
{
    size_t cells = (size_t)g->w * (size_t)g->h;
    memset(g->cell, ' ', cells);
    for (size_t i = 0; i < cells; i++)
        g->owner[i] = -1;
    for (int k = 0; k < pl->n_guides; k++) {
        const an_plot_guide *gd = &pl->guides[k];
        int at = gd->vertical ? cell_of(ax, gd->at, g->w) : g->h - 1 - cell_of(ay, gd->at, g->h);
        char ch = guide_char(gd->kind, gd->vertical);
        for (int i = 0; i < (gd->vertical ? g->h : g->w); i++)
            g->cell[gd->vertical ? i * g->w + at : at * g->w + i] = ch;
    }
    for (int s = 0; s < pl->n_series; s++)
        draw_series(g, &pl->series[s], s, ax, ay);
    /* labels last: they take only blank cells, so no point or line is lost */
    for (int s = 0; s < pl->n_series; s++)
        draw_labels(g, &pl->series[s], ax, ay);
    for (size_t i = 0; i < p->n_overloaded; i++)
        g->cell[cell_of(ax, p->overloaded_x[i], g->w)] = OVERLOADED;
}

/* The x tick values placed under their columns, skipping those that would
 * run into the previous one. */
static void x_ticks(const an__axis *ax, int w, FILE *out)
{
    double t[AN__MAX_TICKS];
    int n = an__axis_ticks(ax, t, AN__MAX_TICKS), end = -1;
    char *line = util_xmalloc((size_t)w + 16);
    memset(line, ' ', (size_t)w + 15);
    line[w + 15] = '\0';
    for (int i = 0; i < n; i++) {
        char label[32];
        an__tick_label(ax, i, t[i], label, sizeof label);
        int len = (int)strlen(label);
        int start = cell_of(ax, t[i], w) - len / 2;
        if (start < 0) start = 0;
        if (start > w + 15 - len) start = w + 15 - len;
        if (start <= end) continue;
        memcpy(line + start, label, (size_t)len);
        end = start + len;
    }
    while (end > 0 && line[end - 1] == ' ')
        end--;
    fprintf(out, "%*s%.*s\n", Y_COLUMN, "", end > 0 ? end : 0, line);
    free(line);
}

/* The axis line, with the spans (the warm-up) drawn as '=' along it. */
static void x_rule(const an_plot *p, const an__axis *ax, int w, FILE *out)
{
    fprintf(out, "%10s +", "");
    for (int c = 0; c < w; c++) {
        bool span = false;
        for (int i = 0; i < p->n_spans; i++)
            span |= c >= cell_of(ax, p->spans[i].lo, w) && c <= cell_of(ax, p->spans[i].hi, w);
        fputc(span ? '=' : '-', out);
    }
    fputc('\n', out);
}

/* One legend entry, on a new line when it would pass the grid's right edge. */
static int entry(FILE *out, int col, int w, const char *mark, const char *text)
{
    int len = (int)strlen(text) + (int)strlen(mark) + 3;
    if (col > 9 && col + len > Y_COLUMN + w) {
        fprintf(out, "\n%9s", "");
        col = 9;
    }
    fprintf(out, "  %s %s", mark, text);
    return col + len;
}

static void legend(const an_plot *p, const an_plot_panel *pl, const grid *g, FILE *out)
{
    fputs("  legend:", out);
    int col = 9;
    char mark[8];
    for (int s = 0; s < pl->n_series; s++) {
        snprintf(mark, sizeof mark, "%c", markers[s % N_MARKERS]);
        col = entry(out, col, g->w, mark, pl->series[s].name);
    }
    for (int k = 0; k < pl->n_guides; k++) {
        snprintf(mark, sizeof mark, "%c", guide_char(pl->guides[k].kind, pl->guides[k].vertical));
        col = entry(out, col, g->w, mark, pl->guides[k].label);
    }
    if (memchr(g->cell, SHARED, (size_t)g->w * (size_t)g->h))
        col = entry(out, col, g->w, "&", "two series at one place");
    for (int i = 0; i < p->n_spans; i++)
        col = entry(out, col, g->w, "=", p->spans[i].label);
    if (p->n_overloaded) entry(out, col, g->w, "X", "overloaded runs");
    fputc('\n', out);
}

static void panel(const an_plot *p, const an_plot_panel *pl, const an__axis *ax, int w, int h,
                  FILE *out)
{
    an__axis ay = an__y_axis(pl);
    grid g = {util_xmalloc((size_t)w * (size_t)h),
              util_xmalloc((size_t)w * (size_t)h * sizeof(int)), w, h};
    fill_grid(p, pl, ax, &ay, &g);
    char *title = an__axis_title(pl->y_label, &ay);
    fprintf(out, "%s%s\n", title, ay.log ? ", log scale" : "");
    free(title);
    /* each y tick's value on the row it falls in (the first, when two share one) */
    double t[AN__MAX_TICKS];
    int n = an__axis_ticks(&ay, t, AN__MAX_TICKS);
    for (int r = 0; r < h; r++) {
        int k = n - 1;
        while (k >= 0 && h - 1 - cell_of(&ay, t[k], h) != r)
            k--;
        char label[32] = "";
        if (k >= 0) an__tick_label(&ay, k, t[k], label, sizeof label);
        fprintf(out, "%10s |%.*s\n", label, w, g.cell + (size_t)r * (size_t)w);
    }
    x_rule(p, ax, w, out);
    x_ticks(ax, w, out);
    char *x_title = an__axis_title(p->x_label ? p->x_label : "", ax);
    int pad = (w - (int)strlen(x_title)) / 2;
    fprintf(out, "%*s%s%s\n", Y_COLUMN + (pad > 0 ? pad : 0), "", x_title,
            ax->log ? ", log scale" : "");
    free(x_title);
    legend(p, pl, &g, out);
    free(g.cell);
    free(g.owner);
}

/* ---- lanes ---- */

/* A bar's cells: its character, brackets at its ends when it is wide
 * enough to tell it from its neighbours, its label inside when it fits. */
static void put_bar(char *row, const an__item *it, const an__axis *ax, int w)
{
    int c0 = cell_of(ax, it->lo, w), c1 = cell_of(ax, it->hi, w);
    if (c1 <= c0) c1 = c0 + 1; /* the next bar starts at this one's end cell */
    if (c1 > w) c1 = w;
    for (int c = c0; c < c1; c++)
        row[c] = it->glyph;
    if (c1 - c0 >= 3) row[c0] = '[', row[c1 - 1] = ']';
    const char *label = it->short_label;
    int len = label ? (int)strlen(label) : 0;
    if (label && len + 2 <= c1 - c0) memcpy(row + c0 + (c1 - c0 - len) / 2, label, (size_t)len);
}

/* A labelled mark (a request's event) in the next free cell when another
 * holds its own: events a cell apart (sent, then queued a millisecond
 * later) stay readable, in their order. */
static void put_mark(char *row, const an__item *it, const an__axis *ax, int w)
{
    int c = cell_of(ax, it->lo, w);
    for (int k = 0; it->label && k < 2 && c + 1 < w && row[c] != ' '; k++)
        c++;
    row[c] = it->glyph;
}

static bool has_low(const an__lane *ln)
{
    for (size_t k = 0; k < ln->n_items; k++)
        if (ln->items[k].low) return true;
    return false;
}

/* A lane's rows: the steps', then the low marks' when it has any. */
static void lane_rows(const an__lane *ln, const an__axis *ax, int w, FILE *out)
{
    char *rows[2] = {util_xmalloc((size_t)w), util_xmalloc((size_t)w)};
    memset(rows[0], ' ', (size_t)w);
    memset(rows[1], ' ', (size_t)w);
    for (size_t k = 0; k < ln->n_items; k++) {
        const an__item *it = &ln->items[k];
        if (it->shape == AN__BAR)
            put_bar(rows[it->low], it, ax, w);
        else
            put_mark(rows[it->low], it, ax, w);
    }
    fprintf(out, "%10.10s |%.*s\n", ln->name, w, rows[0]);
    if (has_low(ln)) fprintf(out, "%10s |%.*s\n", "", w, rows[1]);
    free(rows[0]);
    free(rows[1]);
}

/* The keys, then each labelled mark's character once ("a sent"). */
static void lanes_legend(const an_plot *p, int w, FILE *out)
{
    const an_plot_lanes *ln = p->lanes;
    fputs("  legend:", out);
    int col = 9;
    char mark[8];
    for (int i = 0; i < ln->n_keys; i++) {
        if (!ln->keys[i].glyph) continue; /* its marks show their own characters */
        snprintf(mark, sizeof mark, "%c", ln->keys[i].glyph);
        col = entry(out, col, w, mark, ln->keys[i].text);
    }
    for (int i = 0; i < ln->n_lanes; i++)
        for (size_t k = 0; k < ln->lanes[i].n_items; k++) {
            const an__item *it = &ln->lanes[i].items[k];
            if (!it->label || it->shape == AN__BAR) continue;
            snprintf(mark, sizeof mark, "%c", it->glyph);
            col = entry(out, col, w, mark, it->label);
        }
    for (int i = 0; i < p->n_spans; i++)
        col = entry(out, col, w, "=", p->spans[i].label);
    fputc('\n', out);
}

static void lanes(const an_plot *p, const an__axis *ax, int w, FILE *out)
{
    for (int i = 0; i < p->lanes->n_lanes; i++)
        lane_rows(&p->lanes->lanes[i], ax, w, out);
    x_rule(p, ax, w, out);
    x_ticks(ax, w, out);
    char *x_title = an__axis_title(p->x_label ? p->x_label : "", ax);
    int pad = (w - (int)strlen(x_title)) / 2;
    fprintf(out, "%*s%s\n", Y_COLUMN + (pad > 0 ? pad : 0), "", x_title);
    free(x_title);
    lanes_legend(p, w, out);
}

void an_plot_text(const an_plot *p, int width, int height, FILE *out)
{
    int w = width - Y_COLUMN, h = height;
    if (w < MIN_GRID_W) w = MIN_GRID_W;
    if (h < MIN_GRID_H) h = MIN_GRID_H;
    an__axis ax = an__x_axis(p);
    fprintf(out, "%s\n", p->title ? p->title : "");
    if (p->subtitle) fprintf(out, "%s\n", p->subtitle);
    for (int i = 0; i < p->n_panels; i++) {
        fputc('\n', out);
        panel(p, &p->panels[i], &ax, w, h, out);
    }
    if (p->lanes) {
        fputc('\n', out);
        lanes(p, &ax, w, out);
    }
    for (int i = 0; i < p->n_notes; i++)
        fprintf(out, "note: %s\n", p->notes[i]);
}
