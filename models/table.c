/*
 * table.c: a cost model read from measured kernel latencies, in the layout of
 * LLMServingSim's profiler bundle for one tensor-parallel degree: dense.csv
 * (layer,tokens,time_us), per_sequence.csv (layer,sequences,time_us) and
 * attention.csv (prefill_chunk,kv_prefill,n_decode,kv_decode,time_us), every
 * time in microseconds for one decoder layer or one head/prologue op.  The
 * 1-D curves are interpolated linearly with GSL; the attention table is a
 * sparse 4-D grid, stored as a tree of axes (prefill_chunk, then n_decode,
 * kv_prefill, kv_decode) so that each axis is bracketed among the values
 * measured under the coordinates already fixed -- multilinear interpolation
 * where the grid is full, and no invented corners where it is not.  Outside
 * the measured range the nearest measured value stands in and the lookup
 * says so; docs/cost-models.md gives the rules and why.  Files are streamed
 * line by line and every malformed line is reported as FILE:LINE.
 */
#include "mdl_int.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_interp.h>

#define MAX_FIELDS 8
#define MAX_ERRORS 10 /* malformed lines reported per file before giving up on it */

/* ---- the data ---- */

/* The ops of one iteration, in LLMServingSim's profiler/models/llama.yaml order. */
enum { EMBEDDING, LAYERNORM, QKV_PROJ, ROTARY_EMB, O_PROJ, GATE_UP_PROJ, ACT_FN, DOWN_PROJ,
       FINAL_LAYERNORM, N_DENSE };
enum { LM_HEAD, SAMPLER, N_PER_SEQ };

static const char *const dense_names[] = {"embedding", "layernorm",    "qkv_proj",
                                          "rotary_emb", "o_proj",      "gate_up_proj",
                                          "act_fn",    "down_proj",    "final_layernorm",
                                          NULL};
static const char *const per_seq_names[] = {"lm_head", "sampler", NULL};

/* One op's latency against a count; x strictly increasing, y in us. */
typedef struct curve {
    double *x, *y;
    int n;
    gsl_interp *interp; /* NULL when n < 2 (GSL's linear needs two points) */
} curve;

/* The attention table as a tree: level 0 holds the prefill_chunk values,
 * level 1 the n_decode values measured under each of them, level 2 the
 * kv_prefill values under each (prefill_chunk, n_decode), level 3 the
 * kv_decode values and their times.  A node's children are contiguous on the
 * next level, so every sibling range is a sorted array to search. */
typedef struct grid {
    int32_t n[4];                 /* nodes on each level */
    double *x[4];                 /* each node's coordinate */
    int32_t *first[3], *count[3]; /* levels 0-2: the node's children */
    double *us;                   /* level 3: measured time */
    double mixed_nd_max;          /* largest n_decode measured beside a prefill chunk */
} grid;

struct mdl_table {
    int layers;
    curve dense[N_DENSE];
    curve per_seq[N_PER_SEQ];
    grid attn;
};

/* ---- reading CSV ---- */

typedef struct csv {
    util_lines *lines;
    char *name; /* the file's path, for messages */
    int errors; /* malformed lines reported */
    char *field[MAX_FIELDS];
    int nf; /* fields on the line (may exceed MAX_FIELDS; only those are kept) */
} csv;

/* The line reader's messages carry path (the scenario key) in front. */
static int csv_open(csv *c, const char *dir, const char *file, const char *path, util_diag *d)
{
    memset(c, 0, sizeof *c);
    c->name = util_path_join(dir, file);
    util_diag od;
    util_diag_init(&od);
    int rc = util_lines_open(c->name, &c->lines, &od);
    for (int i = 0; i < od.count; i++) util_diag_add(d, "%s: %s", path, od.msgs[i]);
    util_diag_fini(&od);
    if (rc) {
        free(c->name);
        c->name = NULL;
    }
    return rc;
}

static void csv_close(csv *c)
{
    util_lines_close(c->lines);
    free(c->name);
}

static long csv_line(const csv *c)
{
    return (long)util_lines_number(c->lines);
}

static int bad_at(csv *c, long line, util_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reports a malformed line seen earlier (a duplicate found once the file is
 * read); always UTIL_EINPUT. */
static int bad_at(csv *c, long line, util_diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = util_xvasprintf(fmt, ap);
    va_end(ap);
    util_diag_add(d, "%s:%ld: %s", c->name, line, m);
    free(m);
    c->errors++;
    return UTIL_EINPUT;
}

static int bad(csv *c, util_diag *d, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reports a malformed line, "FILE:LINE: ..."; always UTIL_EINPUT. */
static int bad(csv *c, util_diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = util_xvasprintf(fmt, ap);
    va_end(ap);
    util_lines_error(c->lines, d, "%s", m);
    free(m);
    c->errors++;
    return UTIL_EINPUT;
}

/* The next non-empty line, split at commas: 1, or 0 at the end, or a
 * negative status when the file cannot be read on (util_lines says why). */
static int csv_next(csv *c, util_diag *d)
{
    char *line;
    size_t len;
    int rc;
    while ((rc = util_lines_next(c->lines, &line, &len, d)) == 1) {
        if (!len) continue;
        c->nf = util_split(line, ',', c->field, MAX_FIELDS);
        return 1;
    }
    return rc;
}

/* The first line must name the columns, so a file of another layout (or
 * one whose columns moved) is refused rather than misread. */
static int csv_header(csv *c, const char *want, util_diag *d)
{
    int r = csv_next(c, d);
    if (r < 0) return r;
    if (r == 0) return bad(c, d, "empty file (expected the header '%s')", want);
    char *got = util_xstrdup("");
    for (int i = 0; i < c->nf && i < MAX_FIELDS; i++) {
        char *next = util_xasprintf("%s%s%s", got, i ? "," : "", c->field[i]);
        free(got);
        got = next;
    }
    int rc = strcmp(got, want) ? bad(c, d, "expected the header '%s'", want) : UTIL_OK;
    free(got);
    return rc;
}

static int csv_fields(csv *c, int want, const char *header, util_diag *d)
{
    if (c->nf == want) return UTIL_OK;
    return bad(c, d, "expected %d fields (%s), got %d", want, header, c->nf);
}

/* Field i as a finite number >= 0; a whole one when it counts tokens or
 * sequences. */
static int csv_number(csv *c, int i, const char *col, bool whole, double *out, util_diag *d)
{
    const char *s = c->field[i];
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v) || v < 0)
        return bad(c, d, "%s: expected a number >= 0, got '%s'", col, s);
    if (whole && v != floor(v))
        return bad(c, d, "%s: expected a whole number, got '%s'", col, s);
    *out = v;
    return UTIL_OK;
}

/* Whether to keep reading after a malformed line: a file that is wrong
 * throughout should not bury the other messages. */
static bool csv_give_up(csv *c, util_diag *d)
{
    if (c->errors < MAX_ERRORS) return false;
    util_diag_add(d, "%s: stopped after %d malformed lines", c->name, c->errors);
    return true;
}

/* ---- 1-D curves: dense.csv and per_sequence.csv ---- */

typedef struct point {
    double x, us;
    long line;
} point;

typedef struct points {
    point *p;
    int n, cap;
} points;

static void points_add(points *ps, point p)
{
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 64;
        ps->p = util_xrealloc(ps->p, (size_t)ps->cap * sizeof *ps->p);
    }
    ps->p[ps->n++] = p;
}

static int cmp_point(const void *a, const void *b)
{
    const point *p = a, *q = b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return (p->line > q->line) - (p->line < q->line);
}

static int index_of(const char *const *names, const char *name)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) return i;
    return -1;
}

/* One row "layer,x,time_us" into its layer's points. */
static int curve_row(csv *c, const char *const *names, const char *xcol, const char *header,
                     points *pts, util_diag *d)
{
    if (csv_fields(c, 3, header, d)) return UTIL_EINPUT;
    int k = index_of(names, c->field[0]);
    if (k < 0) {
        char *where = util_xasprintf("%s:%ld", c->name, csv_line(c));
        util_diag_unknown(d, where, "layer", c->field[0], names);
        free(where);
        c->errors++;
        return UTIL_EINPUT;
    }
    point p = {.line = csv_line(c)};
    if (csv_number(c, 1, xcol, true, &p.x, d) || csv_number(c, 2, "time_us", false, &p.us, d))
        return UTIL_EINPUT;
    points_add(&pts[k], p);
    return UTIL_OK;
}

/* Sorts one layer's points into a curve; a count measured twice is an
 * error, since which of the two to believe is not ours to guess. */
static int curve_build(csv *c, const char *name, const char *xcol, points *ps, curve *cv,
                       util_diag *d)
{
    if (ps->n == 0) return util_diag_add(d, "%s: no rows for layer '%s'", c->name, name);
    qsort(ps->p, (size_t)ps->n, sizeof *ps->p, cmp_point);
    int rc = UTIL_OK;
    for (int i = 1; i < ps->n; i++)
        if (ps->p[i].x == ps->p[i - 1].x)
            rc = bad_at(c, ps->p[i].line, d, "layer '%s' at %s %g was measured on line %ld too",
                        name, xcol, ps->p[i].x, ps->p[i - 1].line);
    if (rc) return rc;
    cv->n = ps->n;
    cv->x = util_xmalloc((size_t)cv->n * sizeof *cv->x);
    cv->y = util_xmalloc((size_t)cv->n * sizeof *cv->y);
    for (int i = 0; i < cv->n; i++) cv->x[i] = ps->p[i].x, cv->y[i] = ps->p[i].us;
    if (cv->n >= 2) {
        cv->interp = gsl_interp_alloc(gsl_interp_linear, (size_t)cv->n);
        gsl_interp_init(cv->interp, cv->x, cv->y, (size_t)cv->n); /* x checked increasing */
    }
    return UTIL_OK;
}

static int load_curves(const char *dir, const char *file, const char *xcol,
                       const char *const *names, curve *curves, const char *path, util_diag *d)
{
    csv c;
    int rc = csv_open(&c, dir, file, path, d);
    if (rc) return rc;
    char *header = util_xasprintf("layer,%s,time_us", xcol);
    int n = 0, r = 0;
    while (names[n]) n++;
    points *pts = util_xcalloc((size_t)n, sizeof *pts);
    rc = csv_header(&c, header, d);
    while (!rc && (r = csv_next(&c, d)) > 0)
        if (curve_row(&c, names, xcol, header, pts, d) && csv_give_up(&c, d)) break;
    if (r < 0) rc = r;
    if (!rc && c.errors) rc = UTIL_EINPUT;
    for (int k = 0; k < n && !rc; k++) rc = curve_build(&c, names[k], xcol, &pts[k], &curves[k], d);
    for (int k = 0; k < n; k++) free(pts[k].p);
    free(pts);
    free(header);
    csv_close(&c);
    return rc;
}

static void curve_free(curve *cv)
{
    if (cv->interp) gsl_interp_free(cv->interp);
    free(cv->x);
    free(cv->y);
}

/* The curve at v; outside the measured counts, the end value. */
static double curve_at(const curve *cv, double v, bool *clamped)
{
    if (cv->n == 1 || v <= cv->x[0]) {
        if (v != cv->x[0]) *clamped = true;
        return cv->y[0];
    }
    if (v >= cv->x[cv->n - 1]) {
        if (v > cv->x[cv->n - 1]) *clamped = true;
        return cv->y[cv->n - 1];
    }
    return gsl_interp_eval(cv->interp, cv->x, cv->y, v, NULL);
}

/* ---- the attention grid ---- */

/* attention.csv's columns, and the tree level each coordinate sits on. */
static const char attn_header[] = "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us";
static const char *const attn_cols[] = {"prefill_chunk", "kv_prefill", "n_decode", "kv_decode"};
static const int attn_level[] = {0, 2, 1, 3};

typedef struct arow {
    double k[4]; /* by level: prefill_chunk, n_decode, kv_prefill, kv_decode */
    double us;
    long line;
} arow;

typedef struct arows {
    arow *r;
    int32_t n, cap;
} arows;

static int attn_row(csv *c, arows *rows, util_diag *d)
{
    if (csv_fields(c, 5, attn_header, d)) return UTIL_EINPUT;
    arow a = {.line = csv_line(c)};
    for (int i = 0; i < 4; i++)
        if (csv_number(c, i, attn_cols[i], true, &a.k[attn_level[i]], d)) return UTIL_EINPUT;
    if (csv_number(c, 4, "time_us", false, &a.us, d)) return UTIL_EINPUT;
    if (rows->n == rows->cap) {
        rows->cap = rows->cap ? 2 * rows->cap : 1024;
        rows->r = util_xrealloc(rows->r, (size_t)rows->cap * sizeof *rows->r);
    }
    rows->r[rows->n++] = a;
    return UTIL_OK;
}

static int cmp_arow(const void *a, const void *b)
{
    const arow *p = a, *q = b;
    for (int i = 0; i < 4; i++)
        if (p->k[i] != q->k[i]) return p->k[i] < q->k[i] ? -1 : 1;
    return (p->line > q->line) - (p->line < q->line);
}

static bool same_point(const arow *a, const arow *b)
{
    return a->k[0] == b->k[0] && a->k[1] == b->k[1] && a->k[2] == b->k[2] && a->k[3] == b->k[3];
}

/* Builds the tree from rows sorted by level order: a row opens a new node on
 * every level from the first coordinate where it differs from the row
 * before. */
static void grid_build(grid *g, const arow *r, int32_t nr)
{
    for (int lv = 0; lv < 4; lv++) g->x[lv] = util_xmalloc((size_t)nr * sizeof *g->x[lv]);
    for (int lv = 0; lv < 3; lv++) {
        g->first[lv] = util_xmalloc((size_t)nr * sizeof *g->first[lv]);
        g->count[lv] = util_xmalloc((size_t)nr * sizeof *g->count[lv]);
    }
    g->us = util_xmalloc((size_t)nr * sizeof *g->us);
    for (int32_t i = 0; i < nr; i++) {
        int lv = 0;
        if (i > 0)
            while (lv < 3 && r[i].k[lv] == r[i - 1].k[lv]) lv++;
        for (; lv < 4; lv++) {
            int32_t id = g->n[lv]++;
            g->x[lv][id] = r[i].k[lv];
            if (lv > 0) g->count[lv - 1][g->n[lv - 1] - 1]++;
            if (lv < 3) g->first[lv][id] = g->n[lv + 1], g->count[lv][id] = 0;
        }
        g->us[g->n[3] - 1] = r[i].us;
        if (r[i].k[0] > 0 && r[i].k[1] > g->mixed_nd_max) g->mixed_nd_max = r[i].k[1];
    }
}

static int load_attention(const char *dir, grid *g, const char *path, util_diag *d)
{
    csv c;
    int rc = csv_open(&c, dir, "attention.csv", path, d), r = 0;
    if (rc) return rc;
    arows rows = {0};
    rc = csv_header(&c, attn_header, d);
    while (!rc && (r = csv_next(&c, d)) > 0)
        if (attn_row(&c, &rows, d) && csv_give_up(&c, d)) break;
    if (r < 0) rc = r;
    if (!rc && c.errors) rc = UTIL_EINPUT;
    if (!rc && rows.n == 0) rc = util_diag_add(d, "%s: no measurements", c.name);
    if (!rc) {
        qsort(rows.r, (size_t)rows.n, sizeof *rows.r, cmp_arow);
        for (int32_t i = 1; i < rows.n; i++)
            if (same_point(&rows.r[i], &rows.r[i - 1]))
                rc = bad_at(&c, rows.r[i].line, d, "the same point was measured on line %ld",
                            rows.r[i - 1].line);
    }
    if (!rc) grid_build(g, rows.r, rows.n);
    free(rows.r);
    csv_close(&c);
    return rc;
}

static void grid_free(grid *g)
{
    for (int lv = 0; lv < 4; lv++) free(g->x[lv]);
    for (int lv = 0; lv < 3; lv++) free(g->first[lv]), free(g->count[lv]);
    free(g->us);
}

/* Two neighbouring nodes of a sibling range and the weight of the upper. */
typedef struct bracket {
    int32_t lo, hi;
    double w;
} bracket;

/* Where v falls among n increasing values; beyond them, the end value. */
static bracket find(const double *x, int32_t n, double v, bool *clamped)
{
    if (n == 1 || v <= x[0]) {
        if (v != x[0]) *clamped = true;
        return (bracket){0, 0, 0};
    }
    if (v >= x[n - 1]) {
        if (v > x[n - 1]) *clamped = true;
        return (bracket){n - 1, n - 1, 0};
    }
    int32_t i = (int32_t)gsl_interp_bsearch(x, v, 0, (size_t)n - 1);
    return (bracket){i, i + 1, (v - x[i]) / (x[i + 1] - x[i])};
}

/* On the prefill_chunk and n_decode axes, 0 is a different kernel (no
 * prefill, no decode), not the low end of a range: a query of 0 takes the
 * 0 node, and a positive query is bracketed among the positive values only,
 * so a 5-token chunk is costed as the smallest measured chunk and not as a
 * blend with the absence of one. */
static bracket find_regime(const double *x, int32_t n, double v, bool *clamped)
{
    int32_t skip = (v > 0 && n > 1 && x[0] == 0) ? 1 : 0;
    bracket b = find(x + skip, n - skip, v, clamped);
    b.lo += skip;
    b.hi += skip;
    return b;
}

static double grid_range(const grid *g, int lv, int32_t first, int32_t n, const double *q,
                         bool *clamped);

static double grid_node(const grid *g, int lv, int32_t id, const double *q, bool *clamped)
{
    if (lv == 3) return g->us[id];
    return grid_range(g, lv + 1, g->first[lv][id], g->count[lv][id], q, clamped);
}

/* Interpolates along level lv among the sibling nodes [first, first + n),
 * each of which interpolates the levels below it among its own children. */
static double grid_range(const grid *g, int lv, int32_t first, int32_t n, const double *q,
                         bool *clamped)
{
    const double *x = g->x[lv] + first;
    bracket b = lv < 2 ? find_regime(x, n, q[lv], clamped) : find(x, n, q[lv], clamped);
    double lo = grid_node(g, lv, first + b.lo, q, clamped);
    if (b.w == 0) return lo;
    return lo + b.w * (grid_node(g, lv, first + b.hi, q, clamped) - lo);
}

static double grid_at(const grid *g, double pc, double kp, double nd, double kd, bool *clamped)
{
    double q[4] = {pc, nd, kp, kd};
    return grid_range(g, 0, 0, g->n[0], q, clamped);
}

/* One attention kernel, us.  A profile measures prefill chunks beside fewer
 * decodes than it measures alone (RTX PRO 6000: 128 against 256); decodes
 * beyond the mixed grid are charged what they add to a pure-decode batch,
 * rather than being dropped by clamping. */
static double attention_us(const grid *g, double pc, double kp, double nd, double kd,
                           bool *clamped)
{
    double top = g->mixed_nd_max;
    if (pc <= 0 || nd <= top) return grid_at(g, pc, kp, nd, kd, clamped);
    *clamped = true;
    double base = grid_at(g, pc, kp, top, top > 0 ? kd : 0, clamped);
    double extra = grid_at(g, 0, 0, nd, kd, clamped);
    if (top > 0) extra -= grid_at(g, 0, 0, top, kd, clamped);
    return base + fmax(extra, 0);
}

/* ---- the model ---- */

int mdl__table_load(mdl_table **out, const char *dir, int layers, const char *path,
                    util_diag *d)
{
    mdl_table *t = util_xcalloc(1, sizeof *t);
    t->layers = layers;
    /* Each file is read even when another failed, so one run reports all. */
    int rc = load_curves(dir, "dense.csv", "tokens", dense_names, t->dense, path, d);
    int r = load_curves(dir, "per_sequence.csv", "sequences", per_seq_names, t->per_seq, path, d);
    if (!rc) rc = r;
    r = load_attention(dir, &t->attn, path, d);
    if (!rc) rc = r;
    if (rc) {
        mdl__table_destroy(t);
        t = NULL;
    }
    *out = t;
    return rc;
}

void mdl__table_destroy(mdl_table *t)
{
    if (!t) return;
    for (int i = 0; i < N_DENSE; i++) curve_free(&t->dense[i]);
    for (int i = 0; i < N_PER_SEQ; i++) curve_free(&t->per_seq[i]);
    grid_free(&t->attn);
    free(t);
}

double mdl__table_rest_s(const mdl_table *t, double tokens, double seqs, bool *clamped)
{
    const curve *c = t->dense;
    double layer = 2 * curve_at(&c[LAYERNORM], tokens, clamped);
    for (int i = QKV_PROJ; i <= DOWN_PROJ; i++) layer += curve_at(&c[i], tokens, clamped);
    double us = curve_at(&c[EMBEDDING], tokens, clamped) + t->layers * layer +
                curve_at(&c[FINAL_LAYERNORM], tokens, clamped) +
                curve_at(&t->per_seq[LM_HEAD], seqs, clamped) +
                curve_at(&t->per_seq[SAMPLER], seqs, clamped);
    return us * 1e-6;
}

/* The chunk that shares its kernel with the decodes: the largest (then the
 * one with the longest history), so the choice does not depend on the order
 * the engine lists chunks in. */
static int32_t carrier(const mdl_batch *b)
{
    int32_t best = 0;
    for (int32_t i = 1; i < b->n_prefill; i++) {
        const mdl_chunk *c = &b->chunks[i], *m = &b->chunks[best];
        if (c->tokens > m->tokens || (c->tokens == m->tokens && c->cached > m->cached)) best = i;
    }
    return best;
}

double mdl__table_attention_s(const mdl_table *t, const mdl_batch *b, bool *clamped)
{
    assert(b->n_prefill == 0 || b->chunks);
    double nd = b->n_decode, kd = nd > 0 ? (double)b->decode_context / nd : 0, us = 0;
    if (b->n_prefill == 0) return t->layers * attention_us(&t->attn, 0, 0, nd, kd, clamped) * 1e-6;
    int32_t with_decodes = carrier(b);
    for (int32_t i = 0; i < b->n_prefill; i++) {
        const mdl_chunk *c = &b->chunks[i];
        assert(c->tokens > 0 && c->cached >= 0);
        bool joint = i == with_decodes;
        us += attention_us(&t->attn, (double)c->tokens, (double)c->cached, joint ? nd : 0,
                           joint ? kd : 0, clamped);
    }
    return t->layers * us * 1e-6;
}

double mdl__table_layer_s(const mdl_table *t, const char *layer, double x, bool *clamped)
{
    int k = index_of(dense_names, layer);
    if (k >= 0) return curve_at(&t->dense[k], x, clamped) * 1e-6;
    k = index_of(per_seq_names, layer);
    if (k >= 0) return curve_at(&t->per_seq[k], x, clamped) * 1e-6;
    return -1;
}

double mdl__table_attention_point_s(const mdl_table *t, double prefill_chunk, double kv_prefill,
                                    double n_decode, double kv_decode, bool *clamped)
{
    return attention_us(&t->attn, prefill_chunk, kv_prefill, n_decode, kv_decode, clamped) * 1e-6;
}
