/*
 * test_plot.c: `servesim plot` as users run it, and its figures read back.
 * Runs are made with the servesim binary and labelled as a sweep's points
 * with SQL (runs.sweep, runs.overrides), as a sweep would store them.  Every
 * SVG must be well-formed XML with a title, a legend and axis labels with
 * units, and its series' data attributes must equal the database: a sweep's
 * P99 TTFT the mean over seeds of a percentile computed here from the rows,
 * a CDF the sorted measured values, the timeline and the SLO curve what
 * an_timeline_compute and an_slo_curve give.  argv[1] is the servesim binary,
 * argv[2] the source root (for examples/quickstart.json).
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cairo.h>
#include <gsl/gsl_cdf.h>

#include "an.h"
#include "figure.h"
#include "tap.h"

static const char *servesim, *quick;
static char dir[] = "/tmp/servesim-plot-XXXXXX";

/* ---- running servesim ------------------------------------------------------ */

typedef struct result {
    int status;
    char *out; /* stdout and stderr */
} result;

static char *read_stream(FILE *f)
{
    size_t n = 0, cap = 4096, got;
    char *s = util_xmalloc(cap);
    while ((got = fread(s + n, 1, cap - n - 1, f)) > 0)
        if ((n += got) + 1 == cap) s = util_xrealloc(s, cap *= 2);
    s[n] = '\0';
    return s;
}

static result sv(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static result sv(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *args = util_xvasprintf(fmt, ap);
    va_end(ap);
    char *cmd = util_xasprintf("'%s' %s 2>&1", servesim, args);
    FILE *p = popen(cmd, "r");
    char *out = read_stream(p);
    int st = pclose(p);
    free(cmd);
    free(args);
    return (result){WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

static char *in_dir(const char *name)
{
    return util_xasprintf("%s/%s", dir, name);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *s = f ? read_stream(f) : util_xstrdup("");
    if (f) fclose(f);
    return s;
}

/* quickstart.json with 200 requests and the given options, into db. */
static void run_into(const char *db, const char *options)
{
    result r = sv("run '%s' -o '%s' -q --set stop.requests=200 %s", quick, db, options);
    is_int(r.status, 0, "servesim run %s", options);
    free(r.out);
}

static void sql(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sql(const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = util_xvasprintf(fmt, ap), *err = NULL;
    va_end(ap);
    sqlite3 *db = NULL;
    sqlite3_open(path, &db);
    if (sqlite3_exec(db, text, NULL, NULL, &err) != SQLITE_OK) tap_diag("%s: %s", text, err);
    sqlite3_free(err);
    sqlite3_close(db);
    free(text);
}

/* Labels runs first..last as points of sweep, overrides holding the keys. */
static void label(const char *path, int first, int last, const char *sweep, const char *keys)
{
    sql(path,
        "UPDATE runs SET sweep = '%s', overrides = json_object(%s) WHERE id BETWEEN %d AND %d",
        sweep, keys, first, last);
}

/* ---- reading an SVG back ------------------------------------------------- */

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == ':' || c == '.';
}

/* An entity reference at s, or NULL. */
static const char *entity(const char *s)
{
    static const char *const known[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (int i = 0; i < 5; i++)
        if (!strncmp(s, known[i], strlen(known[i]))) return s + strlen(known[i]);
    if (s[1] != '#') return NULL;
    const char *e = s + 2;
    while (isalnum((unsigned char)*e))
        e++;
    return *e == ';' && e > s + 2 ? e + 1 : NULL;
}

/* Text or an attribute value up to stop: no '<', entities only. */
static const char *chars(const char *s, char stop)
{
    while (*s && *s != stop) {
        if (*s == '<') return NULL;
        if (*s == '&' && !(s = entity(s)))
            return NULL;
        else if (*s != '&')
            s++;
    }
    return s;
}

/* One start or end tag at s (after '<'); pushes or pops the stack. */
static const char *tag(const char *s, const char **stack, int *depth)
{
    bool end = *s == '/';
    const char *name = s += end, *e = name;
    while (name_char(*e))
        e++;
    if (e == name) return NULL;
    if (end) {
        if (!*depth || strncmp(stack[*depth - 1], name, (size_t)(e - name)) ||
            name_char(stack[*depth - 1][e - name]))
            return NULL;
        --*depth;
        return *e == '>' ? e + 1 : NULL;
    }
    for (s = e;;) {
        while (isspace((unsigned char)*s))
            s++;
        if (!strncmp(s, "/>", 2)) return s + 2;
        if (*s == '>') break;
        const char *a = s;
        while (name_char(*s))
            s++;
        if (s == a || s[0] != '=' || s[1] != '"' || !(s = chars(s + 2, '"')) || !*s) return NULL;
        s++;
    }
    if (*depth == 64) return NULL;
    stack[(*depth)++] = name;
    return s + 1;
}

/* Whether s is well-formed XML as far as an SVG goes: a declaration,
 * comments, one root element, nested tags with quoted attributes, text with
 * entity references only. */
static bool well_formed(const char *s)
{
    const char *stack[64];
    int depth = 0, roots = 0;
    while (s && *s) {
        if (*s != '<') {
            if (!depth && !isspace((unsigned char)*s)) return false;
            s = chars(s, '<');
        } else if (!strncmp(s, "<?", 2) || !strncmp(s, "<!--", 4)) {
            s = strstr(s, s[1] == '?' ? "?>" : "-->");
            if (s) s += s[0] == '?' ? 2 : 3;
        } else {
            roots += !depth && s[1] != '/';
            s = tag(s + 1, stack, &depth);
        }
    }
    return s && depth == 0 && roots == 1;
}

/* The checker itself, so that a pass means something. */
static void test_well_formed(void)
{
    ok(well_formed("<?xml version=\"1.0\"?>\n<svg a=\"1 &amp; 2\"><g><t>x &lt; y</t></g>"
                   "<line/></svg>\n"),
       "xml: a declaration, nesting, entities, an empty element");
    ok(!well_formed("<svg><g></svg></g>"), "xml: tags that cross or stay open are not");
    ok(!well_formed("<svg><g></svg>"), "xml: a tag left open is not");
    ok(!well_formed("<svg a=\"x < y\"/>"),
       "xml: '<' in a value, a bare '&', an unquoted value, two roots are not");
    ok(!well_formed("<svg>R&D</svg>"), "xml: a bare '&' is not");
    ok(!well_formed("<svg a=1/>"), "xml: an unquoted value is not");
    ok(!well_formed("<svg/><svg/>"), "xml: two roots are not");
}

/* The numbers of attribute attr in the element holding the attribute
 * data-series="name"; n = -1 when there is no such series. */
static double *series_attr(const char *svg, const char *name, const char *attr, int *n)
{
    char *key = util_xasprintf("data-series=\"%s\"", name);
    const char *at = strstr(svg, key), *close = at ? strstr(at, "/>") : NULL;
    free(key);
    *n = -1;
    char *want = util_xasprintf(" %s=\"", attr);
    const char *v = at ? strstr(at, want) : NULL;
    size_t skip = strlen(want);
    free(want);
    if (!v || v > close) return NULL;
    double *out = util_xmalloc(strlen(v) * sizeof *out);
    char *end;
    for (v += skip, *n = 0; *v != '"'; v = end)
        out[(*n)++] = strtod(v, &end);
    return out;
}

/* A series' points as the figure holds them. */
typedef struct points {
    double *x, *y;
    int n;
} points;

static points series(const char *svg, const char *name)
{
    points p;
    int ny;
    p.x = series_attr(svg, name, "data-x", &p.n);
    p.y = series_attr(svg, name, "data-y", &ny);
    if (ny != p.n) p.n = -1;
    return p;
}

static void points_fini(points *p)
{
    free(p->x);
    free(p->y);
}

/* How many points the series has; -1: there is no such series. */
static int count(const char *svg, const char *name)
{
    points p = series(svg, name);
    points_fini(&p);
    return p.n;
}

/* The text of every <text> element, one a line (caller frees). */
static char *texts(const char *svg)
{
    char *all = util_xstrdup("");
    for (const char *s = svg; (s = strstr(s, "<text ")); s++) {
        const char *open = strchr(s, '>'), *end = strstr(s, "</text>");
        if (!open || !end) break;
        char *t = util_xasprintf("%s%.*s\n", all, (int)(end - open - 1), open + 1);
        free(all);
        all = t;
    }
    return all;
}

/* There are axis names, at least two, and the x axis' (the last) names a
 * unit in parentheses. */
static bool axis_units(const char *svg)
{
    int n = 0;
    const char *last = NULL;
    for (const char *s = svg; (s = strstr(s, "class=\"axis-label\"")); s++, n++)
        last = s;
    const char *text = last ? strchr(last, '>') : NULL,
               *end = last ? strstr(last, "</text>") : NULL;
    return n >= 2 && text && end && end[-1] == ')' && memchr(text, '(', (size_t)(end - text));
}

/* A raw dotted scenario key in text: a letter, a dot, a letter. */
static bool dotted_key(const char *text)
{
    for (const char *c = text; *c; c++)
        if (c > text && c[0] == '.' && isalpha((unsigned char)c[-1]) &&
            isalpha((unsigned char)c[1]))
            return true;
    return false;
}

/* Draws db as kind with extra options into an SVG; returns the text. */
static char *plot_svg(const char *db, const char *kind, const char *options)
{
    char *path = in_dir("plot.svg");
    unlink(path);
    result r = sv("plot '%s' %s -o '%s' %s", db, kind, path, options);
    if (r.status) tap_diag("plot %s %s: %s", kind, options, r.out);
    free(r.out);
    char *svg = slurp(path);
    free(path);
    return svg;
}

/* The common checks every figure passes. */
static void check_figure(const char *svg, const char *db, const char *kind)
{
    ok(well_formed(svg), "%s: the SVG is well-formed XML", kind);
    ok(axis_units(svg), "%s: the axis labels carry units", kind);
    has_str(svg, "class=\"legend\"", "%s: a legend", kind);
    has_str(svg, "class=\"legend-label\"", "%s: the legend's labels", kind);
    const char *at = strstr(svg, "<title>"), *end = at ? strstr(at, "</title>") : NULL;
    char *text = end ? util_xasprintf("%.*s", (int)(end - at), at) : NULL;
    has_str(text, "<title>quickstart: llama-3.1-8b on 1 x h100-sxm",
            "%s: the title says what was simulated", kind);
    has_str(svg, "class=\"title\"", "%s: the title is drawn", kind);
    char *source = util_xasprintf("data-source=\"%s, ", db);
    has_str(svg, source, "%s: the file is kept as metadata", kind);
    free(source);
    char *shown = texts(svg);
    ok(!strstr(shown, db) && !strstr(shown, "/tmp"), "%s: no text shows the file's path", kind);
    ok(!dotted_key(shown), "%s: no text shows a raw dotted key", kind);
    free(shown);
    bool plain = true; /* tick labels as people write them: 10k, not 1e+04 */
    for (const char *t = strstr(svg, "class=\"tick\""); t; t = strstr(t + 1, "class=\"tick\"")) {
        const char *open = strchr(t, '>'), *close = open ? strstr(open, "</text>") : NULL;
        for (const char *c = open; c && c < close; c++)
            plain &= !(c[0] == 'e' && (c[1] == '+' || c[1] == '-'));
    }
    ok(plain, "%s: no tick label in exponent notation", kind);
    ok(!strstr(svg, "href"), "%s: self-contained", kind);
    ok(!strstr(svg, "<script"), "%s: no script", kind);
    ok(!strstr(svg, "@import"), "%s: no imported style", kind);
    free(text);
}

/* ---- what the database says, computed here --------------------------------- */

static sqlite3 *open_db(const char *path)
{
    util_diag d;
    util_diag_init(&d);
    sqlite3 *db = NULL;
    if (an_open(path, &db, &d)) util_diag_print(&d, stdout, "# open");
    util_diag_fini(&d);
    return db;
}

/* The measured requests' column of a run, sorted by SQL (the runs here have
 * at most 400 requests). */
static double *measured(sqlite3 *db, int64_t run, const char *column, int *n)
{
    char *q = util_xasprintf("SELECT %s FROM request_metrics WHERE run_id = %lld AND status ="
                             " 'completed' AND %s IS NOT NULL AND arrival_s >= (SELECT"
                             " json_extract(scenario, '$.warmup_s') FROM runs WHERE id = %lld)"
                             " ORDER BY 1",
                             column, (long long)run, column, (long long)run);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, q, -1, &st, NULL);
    free(q);
    double *v = util_xmalloc(4096 * sizeof *v);
    for (*n = 0; *n < 4096 && sqlite3_step(st) == SQLITE_ROW; ++*n)
        v[*n] = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* numpy's default percentile: linear between the order statistics. */
static double percentile(const double *sorted, int n, double q)
{
    double h = (n - 1) * q, lo = floor(h);
    int i = (int)lo;
    return i + 1 < n ? sorted[i] + (h - lo) * (sorted[i + 1] - sorted[i]) : sorted[i];
}

static double p99_ttft(sqlite3 *db, int64_t run)
{
    int n;
    double *v = measured(db, run, "ttft_s", &n), p = percentile(v, n, 0.99);
    free(v);
    return p;
}

static double p99_of(sqlite3 *db, int64_t run, const char *column)
{
    int n;
    double *v = measured(db, run, column, &n), p = percentile(v, n, 0.99);
    free(v);
    return p;
}

/* The number in the attribute attr of the element whose data-guide is
 * label (NAN: none). */
static double guide_at(const char *svg, const char *label)
{
    char *key = util_xasprintf("data-guide=\"%s\"", label);
    const char *g = strstr(svg, key);
    free(key);
    const char *at = g ? strstr(g, "data-at=\"") : NULL;
    return at ? strtod(at + 9, NULL) : NAN;
}

/* A sweep made by servesim sweep, 150 requests a point after 2 s of
 * warm-up, into db. */
static void sweep_into(const char *db, const char *options)
{
    result r = sv("sweep '%s' -o '%s' -q -j 1 --set stop.requests=150 --set warmup_s=2 %s", quick,
                  db, options);
    is_int(r.status, 0, "servesim sweep %s", options);
    free(r.out);
}

/* The number after attr=" in the first element of class cls whose text is
 * text, or in the guide line labelled text (cls "guide"); NAN: none. */
static double text_attr(const char *svg, const char *cls, const char *text, const char *attr)
{
    char *head = util_xasprintf("class=\"%s\"", cls);
    char *want = !strcmp(cls, "guide") ? util_xasprintf("data-guide=\"%s\"", text)
                                       : util_xasprintf(">%s</text>", text);
    double v = NAN;
    for (const char *e = strstr(svg, head); e && isnan(v); e = strstr(e + 1, head)) {
        const char *end = strchr(e, '\n');
        const char *hit = strstr(e, want);
        if (!hit || (end && hit > end)) continue;
        char *a = util_xasprintf(" %s=\"", attr);
        const char *at = strstr(e, a);
        if (at && (!end || at < end)) v = strtod(at + strlen(a), NULL);
        free(a);
    }
    free(head);
    free(want);
    return v;
}

/* The colours (fill) of the elements of class cls whose text ends in
 * text, in order, into out; returns how many. */
static int text_fills(const char *svg, const char *cls, const char *text, char (*out)[8], int max)
{
    char *head = util_xasprintf("class=\"%s\"", cls), *want = util_xasprintf("%s</text>", text);
    int n = 0;
    for (const char *e = strstr(svg, head); e && n < max; e = strstr(e + 1, head)) {
        const char *end = strchr(e, '\n'), *hit = strstr(e, want), *fill = strstr(e, " fill=\"");
        if (!hit || (end && hit > end)) continue;
        snprintf(out[n++], 8, "%.7s", fill && fill < hit ? fill + 7 : "#222");
    }
    free(head);
    free(want);
    return n;
}

/* ---- the kinds -------------------------------------------------------------- */

typedef struct look {
    char colour[8], dash[24];
} look;
static int series_looks(const char *svg, look *out, int max);

/* Runs 1-8: rates 2, 4, 8, 16 by seeds 1 and 2, as sweep s1; run 6 (rate 8,
 * seed 2) and both at rate 16 overloaded.  Runs 9-12: sweep s2 varies the
 * rate and the batch limit, without an SLO. */
static void make_sweeps(const char *db)
{
    const char *rates[] = {"2", "4", "8", "16"};
    for (int i = 0; i < 8; i++) {
        char *o = util_xasprintf("--set workload.arrival.rate_per_s=%s --seed %d", rates[i / 2],
                                 1 + i % 2);
        run_into(db, o);
        free(o);
    }
    label(db, 1, 8, "s1",
          "'workload.arrival.rate_per_s', json_extract(scenario, "
          "'$.workload.arrival.rate_per_s'), 'seed', seed");
    sql(db, "UPDATE runs SET status = 'overloaded' WHERE id IN (6, 7, 8)");
    for (int i = 0; i < 4; i++) {
        char *o = util_xasprintf("--set slo={} --set workload.arrival.rate_per_s=%s "
                                 "--set cluster.scheduler.max_batch=%s",
                                 rates[i % 2], i < 2 ? "16" : "256");
        run_into(db, o);
        free(o);
    }
    label(db, 9, 12, "s2",
          "'workload.arrival.rate_per_s', json_extract(scenario, "
          "'$.workload.arrival.rate_per_s'), 'cluster.scheduler.max_batch', "
          "json_extract(scenario, '$.cluster.scheduler.max_batch')");
}

static void test_latency_load(const char *path)
{
    char *svg = plot_svg(path, "latency-load", "--sweep s1");
    check_figure(svg, path, "latency-load");
    points p = series(svg, "p99 TTFT");
    sqlite3 *db = open_db(path);
    is_int(p.n, 3, "s1: points at rates 2, 4, 8; 16 had only overloaded runs");
    double want[3] = {(p99_ttft(db, 1) + p99_ttft(db, 2)) / 2,
                      (p99_ttft(db, 3) + p99_ttft(db, 4)) / 2, p99_ttft(db, 5)};
    for (int i = 0; i < 3 && p.n == 3; i++) {
        /* the report interpolates with GSL's formula: equal up to the last bits */
        is_near(p.x[i], 2 << i, 0, "point %d: x is the rate", i);
        is_near(p.y[i], want[i], 1e-12 * want[i],
                "point %d: P99 TTFT is the mean over seeds of the rows' percentile", i);
    }
    int n_lo, n_hi;
    double *lo = series_attr(svg, "p99 TTFT", "data-lo", &n_lo),
           *hi = series_attr(svg, "p99 TTFT", "data-hi", &n_hi);
    is_int(n_lo, 3, "each point has a band: the seeds' range");
    if (n_lo == 3 && n_hi == 3) {
        double a = p99_ttft(db, 1), b = p99_ttft(db, 2);
        is_near(lo[0], a < b ? a : b, 1e-12 * a, "rate 2: the band from the lower seed");
        is_near(hi[0], a < b ? b : a, 1e-12 * a, "to the higher");
        is_near(lo[2], p99_ttft(db, 5), 1e-12 * lo[2], "rate 8, one seed kept: no width");
    }
    free(lo);
    free(hi);
    is_int(count(svg, "p50 TPOT"), 3, "P50/P90 and TPOT too");
    is_int(count(svg, "p90 TTFT"), 3, "P90 TTFT too");
    is_int(count(svg, "goodput (met every SLO)"), 3, "a goodput panel");
    is_int(count(svg, "throughput"), 3, "beside the throughput");
    has_str(svg, "each point: the mean over the 1 to 2 runs", "a note says points average seeds");
    has_str(svg, "class=\"overloaded\" data-x=\"8 16\" data-k=\"1 2\" data-n=\"2 2\"",
            "overloaded seeds are marked where they ran, k of n: none dropped silently");
    has_str(svg, "data-guide=\"TTFT SLO 500 ms\" data-kind=\"slo\" data-at=\"0.5\"",
            "the TTFT SLO is drawn");
    has_str(svg, "data-guide=\"TPOT SLO 50 ms\"", "and the TPOT SLO");
    has_str(svg, "SLO mark (--criterion mean", "the mark's criterion is stated");
    free(svg);
    svg = plot_svg(path, "latency-load", "--sweep s1 --criterion all-seeds");
    has_str(svg, "data-guide=\"p99 SLO met up to 4 req/s\" data-kind=\"mark\" data-at=\"4\"",
            "the highest rate whose every run met the SLO is marked (8 had an overloaded seed)");
    has_str(svg, ">arrival rate (req/s)</text>", "the x axis in words, with its unit");
    has_str(svg, "data-x-scale=\"log\"", "a geometric sweep gets a log x axis");
    has_str(svg, ">TTFT (ms)</text>", "latencies below a second in milliseconds");
    points_fini(&p);
    free(svg);

    result r = sv("plot '%s' latency-load --terminal", path);
    is_int(r.status, 2, "s2 (the newest) varies two keys: --x is needed");
    has_str(r.out, "sweep 's2': 2 keys vary", "the message says two keys vary");
    has_str(r.out, "--x", "and names --x");
    free(r.out);
    svg = plot_svg(path, "latency-load", "--x workload.arrival.rate_per_s");
    p = series(svg, "p99 TTFT, max batch=16");
    is_int(p.n, 2, "with --x: one series per value of the other key, one run a point");
    if (p.n == 2) {
        is_near(p.y[0], p99_ttft(db, 9), 1e-12 * p.y[0], "its first point is run 9's P99 TTFT");
        is_near(p.y[1], p99_ttft(db, 10), 1e-12 * p.y[1], "its second run 10's");
    }
    is_int(count(svg, "p99 TTFT, max batch=256"), 2, "and the other value");
    ok(!strstr(svg, "data-kind=\"slo\""), "no SLO in the scenario: no threshold line");
    look l[16];
    int nl = series_looks(svg, l, 16);
    /* series in order: p50, p90, p99 TTFT of max batch 8, then of 256 */
    cmp_ok(nl, >=, 6, "three percentiles of two configurations: six series");
    ok(nl >= 6 && !strcmp(l[0].colour, l[2].colour),
       "a configuration's percentiles share a colour");
    ok(nl >= 6 && strcmp(l[0].colour, l[3].colour), "configurations differ by colour");
    ok(nl >= 6 && strcmp(l[0].dash, l[2].dash), "percentiles differ by dash");
    ok(nl >= 6 && !strcmp(l[0].dash, l[3].dash),
       "a percentile has one dash in every configuration");
    check_figure(svg, path, "latency-load --x");
    points_fini(&p);
    free(svg);
    sqlite3_close(db);
}

/* ---- where the SLO is met: up to a load, from a capacity (issue 26) ---- */

/* GPUs x replicas at 20 req/s: more replicas meet the SLO, so the mark is
 * "met from N replicas" per GPU -- the fewest from which every higher
 * count met it, each seed's p99 within slo.ttft_s and slo.tpot_s. */
static void test_capacity(const char *path)
{
    sweep_into(path, "--vary cluster.gpu=h100-sxm,a100-80gb --vary cluster.replicas=1,2,4 "
                     "--set workload.arrival.rate_per_s=20");
    char *svg = plot_svg(path, "latency-load", "--x cluster.replicas");
    ok(well_formed(svg), "the SVG is well-formed XML");
    sqlite3 *db = open_db(path);
    const char *gpus[] = {"h100-sxm", "a100-80gb"};
    bool some_above_one = false;
    for (int g = 0; g < 2; g++) {
        double from = NAN;
        for (int k = 2; k >= 0; k--) { /* runs 1-3: h100 at 1, 2, 4; runs 4-6: a100 */
            int64_t run = 3 * g + k + 1;
            bool met = p99_of(db, run, "ttft_s") <= 0.5 && p99_of(db, run, "tpot_s") <= 0.05;
            if (!met) break;
            from = 1 << k;
        }
        some_above_one |= from > 1;
        char *want = isnan(from) ? util_xasprintf("gpu=%s: the p99 SLO is met at no replicas swept",
                                                  gpus[g])
                                 : util_xasprintf("data-guide=\"p99 SLO met from %g replica%s: "
                                                  "gpu=%s\" data-kind=\"mark\" data-at=\"%g\"",
                                                  from, from == 1 ? "" : "s", gpus[g], from);
        has_str(svg, want, "%s: met from the fewest replicas that, and all above, met it", gpus[g]);
        free(want);
    }
    ok(some_above_one, "the fixture: one GPU needs more than one replica");
    ok(!strstr(svg, "met up to"), "a capacity axis has no 'met up to'");
    has_str(svg, ">replicas</text>", "the x axis: replicas");
    ok(!strstr(svg, "replicas (replicas)"), "not 'replicas (replicas)'");
    has_str(svg, ">quickstart: llama-3.1-8b on h100-sxm or a100-80gb<",
            "the title names the GPUs swept, not 'on GPUs'");
    free(svg);
    result r = sv("plot '%s' latency-load --x cluster.replicas --plan --terminal", path);
    is_int(r.status, 2, "--plan needs an axis of arrival rates");
    has_str(r.out, "on an x axis of workload.arrival.rate_per_s, not cluster.replicas",
            "and says so");
    free(r.out);
    sqlite3_close(db);
}

typedef struct rate_point {
    double x, worst, upper; /* worst: the highest seed's p99 TTFT; upper: the interval's end */
    bool overloaded;
} rate_point;

/* Rates 4, 8, 16 by two seeds, p99 TTFT the one target at a threshold
 * that every seed meets at 8 but the mean's interval does not: plot's default (plan's
 * rule) and --criterion all-seeds then mark different rates, and --plan
 * the crossing of the interval's end, as computed here from the rows. */
static void test_criterion(const char *path)
{
    sweep_into(path, "--vary workload.arrival.rate_per_s=4,8,16 --seeds 2");
    sqlite3 *db = open_db(path);
    rate_point pt[3];
    double t = gsl_cdf_tdist_Pinv(0.975, 1);
    for (int i = 0; i < 3; i++) { /* runs 2i + 1, 2i + 2: the rate's seeds */
        double a = p99_of(db, 2 * i + 1, "ttft_s"), b = p99_of(db, 2 * i + 2, "ttft_s");
        pt[i] = (rate_point){4 << i, a > b ? a : b, (a + b) / 2 + t * fabs(a - b) / 2, false};
    }
    /* within the interval's end at 4 and every seed at 8, short of the
     * interval's end at 8: the criteria differ, and --plan crosses between */
    double mid = (pt[0].upper + pt[1].upper) / 2;
    double slo = pt[1].worst > mid ? pt[1].worst : mid;
    sql(path, "UPDATE runs SET scenario = json_set(json_remove(scenario, '$.slo.tpot_s'), "
              "'$.slo.ttft_s', %.17g)", slo);
    int all = -1, mean = -1;
    while (all + 1 < 3 && pt[all + 1].worst <= slo)
        all++;
    while (mean + 1 < 3 && pt[mean + 1].upper <= slo)
        mean++;
    ok(all >= 1 && mean == 0 && slo < pt[1].upper,
       "the fixture: every seed meets it at 8 (or above), the interval only at 4");
    char *svg = plot_svg(path, "latency-load", "");
    char *want = util_xasprintf("p99 SLO met up to %g req/s", pt[mean].x);
    is_near(guide_at(svg, want), pt[mean].x, 0, "default: plan's criterion, the mean's interval");
    has_str(svg, "SLO mark (--criterion mean, as servesim plan judges)",
            "the note states the criterion");
    has_str(svg, "95% Student-t interval", "and its confidence");
    free(want);
    free(svg);
    svg = plot_svg(path, "latency-load", "--criterion all-seeds");
    want = util_xasprintf("p99 SLO met up to %g req/s", pt[all].x);
    is_near(guide_at(svg, want), pt[all].x, 0, "--criterion all-seeds: every seed within it");
    has_str(svg, "SLO mark (--criterion all-seeds)", "the note says so");
    free(want);
    free(svg);
    svg = plot_svg(path, "latency-load", "--plan");
    double x = pt[0].x + (pt[1].x - pt[0].x) * (slo - pt[0].upper) / (pt[1].upper - pt[0].upper);
    want = util_xasprintf("plan's max: %.4g req/s", x);
    is_near(guide_at(svg, want), x, 1e-9 * x,
            "--plan: where the interval's end crosses the target, between 4 and 8");
    has_str(svg, "plan's max: where the first target to fail crosses", "the note says what it is");
    free(want);
    free(svg);
    result r = sv("plot '%s' latency-load --plan --criterion all-seeds --terminal", path);
    is_int(r.status, 2, "--plan with --criterion all-seeds is refused");
    free(r.out);
    sqlite3_close(db);
}

/* ---- colour-blind readers ---- */

/* sRGB "#rrggbb" to linear RGB. */
static void linear_rgb(const char *hex, double *v)
{
    for (int i = 0; i < 3; i++) {
        char part[3] = {hex[1 + 2 * i], hex[2 + 2 * i], 0};
        double c = (double)strtol(part, NULL, 16) / 255;
        v[i] = c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
    }
}

/* Machado, Oliveira and Fernandes (2009), severity 1.0, in linear RGB:
 * what a protanope and a deuteranope see. */
static const double protan[3][3] = {{0.152286, 1.052583, -0.204868},
                                    {0.114503, 0.786281, 0.099216},
                                    {-0.003882, -0.048116, 1.051998}};
static const double deutan[3][3] = {{0.367322, 0.860646, -0.227968},
                                    {0.280085, 0.672501, 0.047413},
                                    {-0.011820, 0.042940, 0.968881}};

/* CIELAB (D65) of linear RGB, after vision m (NULL: normal). */
static void lab_of(const double *rgb, const double (*m)[3], double *lab)
{
    double v[3];
    for (int i = 0; i < 3; i++) {
        v[i] = m ? m[i][0] * rgb[0] + m[i][1] * rgb[1] + m[i][2] * rgb[2] : rgb[i];
        v[i] = v[i] < 0 ? 0 : v[i] > 1 ? 1 : v[i];
    }
    double xyz[3] = {(0.4124 * v[0] + 0.3576 * v[1] + 0.1805 * v[2]) / 0.95047,
                     0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2],
                     (0.0193 * v[0] + 0.1192 * v[1] + 0.9505 * v[2]) / 1.08883};
    double f[3];
    for (int i = 0; i < 3; i++)
        f[i] = xyz[i] > 0.008856 ? cbrt(xyz[i]) : 7.787 * xyz[i] + 16.0 / 116;
    lab[0] = 116 * f[1] - 16;
    lab[1] = 500 * (f[0] - f[1]);
    lab[2] = 200 * (f[1] - f[2]);
}

/* Each series' stroke and dash, in the figure's order. */
static int series_looks(const char *svg, look *out, int max)
{
    int n = 0;
    for (const char *p = svg; n < max && (p = strstr(p, "<polyline class=\"series\"")); p++) {
        const char *end = strstr(p, "points=\"");
        const char *st = strstr(p, " stroke=\"#"), *da = strstr(p, " stroke-dasharray=\"");
        look *l = &out[n++];
        memset(l, 0, sizeof *l);
        if (st && st < end) memcpy(l->colour, st + 9, 7);
        if (da && da < end) {
            const char *q = da + 19, *close = strchr(q, '"');
            memcpy(l->dash, q, (size_t)(close - q) < sizeof l->dash - 1 ? (size_t)(close - q) : 0);
        }
    }
    return n;
}

/* CIELAB distance of two colours as vision v sees them. */
static double distance(const char *a, const char *b, const double (*v)[3])
{
    double ra[3], rb[3], la[3], lb[3];
    linear_rgb(a, ra);
    linear_rgb(b, rb);
    lab_of(ra, v, la);
    lab_of(rb, v, lb);
    return sqrt((la[0] - lb[0]) * (la[0] - lb[0]) + (la[1] - lb[1]) * (la[1] - lb[1]) +
                (la[2] - lb[2]) * (la[2] - lb[2]));
}

/* The palette's first six colours -- a panel of six series -- stay apart
 * for normal vision, protanopia and deuteranopia (the smallest CIELAB
 * distance of every pair); a figure's series differ in colour and dash
 * within each panel; SLO lines are black. */
static void test_colour_blind(const char *path)
{
    const double(*vision[3])[3] = {NULL, protan, deutan};
    static const char *const names[] = {"normal vision", "protanopia", "deuteranopia"};
    for (int v = 0; v < 3; v++) {
        double least = INFINITY;
        for (int a = 0; a < 6; a++)
            for (int b = a + 1; b < 6; b++) {
                double d = distance(an_plot_colour(a), an_plot_colour(b), vision[v]);
                if (d < least) least = d;
            }
        /* CIE76 distance 15: two lines' colours told apart at a glance */
        cmp_ok(least, >=, 15.0, "%s: the first six series colours at least 15 apart (%.1f)",
               names[v], least);
    }
    bool dashes_differ = true;
    for (int a = 0; a < 6; a++)
        for (int b = a + 1; b < 6; b++)
            dashes_differ &= strcmp(an_plot_dash(a), an_plot_dash(b)) != 0;
    ok(dashes_differ, "and their dashes differ: a second channel beside colour");
    char *svg = plot_svg(path, "latency-load", "--sweep s1");
    bool distinct = true;
    int panels = 0;
    for (const char *p = strstr(svg, "<g class=\"panel\""); p; panels++) {
        const char *next = strstr(p + 1, "<g class=\"panel\"");
        size_t len = next ? (size_t)(next - p) : strlen(p);
        char *panel = util_xasprintf("%.*s", (int)len, p);
        look l[16];
        int n = series_looks(panel, l, 16);
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++)
                distinct &= strcmp(l[a].colour, l[b].colour) || strcmp(l[a].dash, l[b].dash);
        free(panel);
        p = next;
    }
    cmp_ok(panels, >=, 2, "the figure has its panels");
    ok(distinct, "within a panel no two series share colour or dash");
    const char *slo = strstr(svg, "data-kind=\"slo\"");
    const char *stroke = slo ? strstr(slo, "stroke=\"") : NULL;
    ok(stroke && !strncmp(stroke, "stroke=\"#000\"", 13), "SLO lines are black, no series' colour");
    free(svg);
}

static void test_throughput(const char *path)
{
    for (int users = 1; users <= 16; users *= 4) {
        char *o = util_xasprintf("--set 'workload.arrival={\"process\": \"closed\", "
                                 "\"users\": %d}'",
                                 users);
        run_into(path, o);
        free(o);
    }
    label(path, 1, 3, "users",
          "'workload.arrival.users', json_extract(scenario, "
          "'$.workload.arrival.users')");
    char *svg = plot_svg(path, "throughput-concurrency", "");
    check_figure(svg, path, "throughput-concurrency");
    has_str(svg, ">1k</text>", "thousands of tokens/s are labelled 1k, 1.5k");
    points total = series(svg, "total output, labelled by concurrent users");
    is_int(total.n, 3, "one point per user count");
    sqlite3 *db = open_db(path);
    for (int i = 0; i < 3 && total.n == 3; i++) {
        an_report rep;
        util_diag d;
        util_diag_init(&d);
        an_report_compute(db, i + 1, &rep, &d);
        /* relative 1e-12, not ==: under valgrind this process's arithmetic may
         * differ from the (native) servesim's in the last bit */
        double tot = rep.req.output_tokens_per_s, per = rep.req.per_user_tokens_per_s.mean;
        is_near(total.x[i], per, 1e-12 * per, "%d users: x is the per-user tokens/s", 1 << (2 * i));
        is_near(total.y[i], tot, 1e-12 * tot, "%d users: y the total tokens/s", 1 << (2 * i));
        an_report_fini(&rep);
        util_diag_fini(&d);
    }
    if (total.n == 3) {
        ok(total.y[2] > total.y[0], "more users: more tokens in all");
        ok(total.x[2] < total.x[0], "fewer tokens/s each (%.1f against %.1f)", total.x[2],
           total.x[0]);
    } else {
        ok(false, "more users: more tokens in all, fewer each (%d points)", total.n);
    }
    has_str(svg, "class=\"point-label\"", "each point labelled");
    has_str(svg, ">16</text>", "with its users");
    has_str(svg, "data-guide=\"TPOT SLO 50 ms = 20 tokens/s\" data-kind=\"slo\" data-at=\"20\"",
            "the TPOT SLO as tokens/s per user");
    has_str(svg, ">output per user (tokens/s)</text>", "the x axis: tokens/s per user");
    points_fini(&total);
    /* the terminal labels its points too, and its legend says what one is */
    result r = sv("plot '%s' throughput-concurrency --terminal --width 80", path);
    is_int(r.status, 0, "throughput-concurrency --terminal");
    for (int users = 1; users <= 16; users *= 4) {
        char right[16], left[16];
        snprintf(right, sizeof right, "o %d", users);
        snprintf(left, sizeof left, "%d o", users);
        ok(strstr(r.out, right) || strstr(r.out, left), "the %d users' point is labelled", users);
    }
    has_str(r.out, "legend:  o total output, labelled by concurrent users",
            "the legend says what the labels are");
    free(r.out);
    sqlite3_close(db);
    free(svg);
}

/* The empirical CDF of sorted v as the figure draws it: each distinct
 * value at the share of values at or below it (a tie at its last rank). */
static bool is_cdf(const points *p, const double *v, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (i + 1 < n && v[i + 1] == v[i]) continue;
        if (k >= p->n || p->x[k] != v[i] || p->y[k] != (i + 1.0) / n) return false;
        k++;
    }
    return k == p->n && n > 100;
}

static void test_cdf(const char *path)
{
    char *svg = plot_svg(path, "cdf", "--run 1 --run 2");
    check_figure(svg, path, "cdf");
    sqlite3 *db = open_db(path);
    /* run 1: 400 requests at the scenario's rate; run 2: 200 at rate 5 */
    static const char *const names[] = {"requests=400, rate=10", "requests=200, rate=5"};
    for (int run = 1; run <= 2; run++) {
        int n;
        double *v = measured(db, run, "ttft_s", &n);
        points p = series(svg, names[run - 1]);
        ok(is_cdf(&p, v, n), "run %d: named '%s' by what differs; the CDF of its measured TTFTs",
           run, names[run - 1]);
        char *guide = util_xasprintf("data-guide=\"P99 %s ", names[run - 1]);
        has_str(svg, guide, "its P99 is marked on the tail");
        free(guide);
        points_fini(&p);
        free(v);
    }
    has_str(svg, "data-guide=\"TTFT SLO 500 ms\"", "the SLO threshold is drawn");
    has_str(svg, "data-style=\"steps\"", "a CDF is a step function");
    has_str(svg, "data-y-scale=\"log\"", "the tail panel: 1 - CDF on a log axis");
    has_str(svg, "data-x-scale=\"linear\"", "a linear x axis");
    char *logged = plot_svg(path, "cdf", "--run 1 --run 2 --log");
    has_str(logged, "data-x-scale=\"log\"", "--log: a log x axis");
    const char *a = strstr(svg, "points=\""), *b = strstr(logged, "points=\"");
    has_str(svg, "points=\"", "the linear figure has points");
    has_str(logged, "points=\"", "and the log one");
    ok(strncmp(a ? a : "", b ? b : "", 200) != 0, "--log moves the points");
    points lin = series(svg, names[0]), lg = series(logged, names[0]);
    is_int(lg.n, lin.n, "but not the values");
    ok(lin.n > 0, "run 1 has points (%d)", lin.n);
    if (lin.n == lg.n && lin.n > 0)
        ok(!memcmp(lin.x, lg.x, (size_t)lin.n * sizeof *lin.x), "the same x values on both");
    points_fini(&lin);
    points_fini(&lg);
    free(logged);
    free(svg);

    svg = plot_svg(path, "cdf", "--metric tpot");
    int n;
    double *v = measured(db, 2, "tpot_s", &n);
    points p = series(svg, "run 2");
    ok(is_cdf(&p, v, n), "--metric tpot: the newest run's TPOTs, named by its id alone");
    has_str(svg, ">TPOT (ms)</text>", "named on the axis, in milliseconds");
    points_fini(&p);
    free(v);
    free(svg);
    sqlite3_close(db);
}

static void test_timeline(const char *path)
{
    char *svg = plot_svg(path, "timeline", "--run 1 --interval 2");
    check_figure(svg, path, "timeline");
    sqlite3 *db = open_db(path);
    an_timeline t;
    util_diag d;
    util_diag_init(&d);
    an_timeline_compute(db, 1, 2, -1, &t, &d);
    struct {
        const char *name;
        const double *v;
    } cols[] = {{"queue", t.queue},
                {"running", t.running},
                {"KV in use", t.kv_occupancy},
                {"output", t.output_tokens_per_s},
                {"power", t.power_w}};
    for (int c = 0; c < 5; c++) {
        points p = series(svg, cols[c].name);
        bool same = p.n == (int)t.n && t.n > 10;
        for (size_t i = 0; same && i < t.n; i++)
            same = p.x[i] == i * 2.0 && p.y[i] == cols[c].v[i];
        ok(same, "timeline %s: every interval as an_timeline_compute has it", cols[c].name);
        points_fini(&p);
    }
    an_timeline_fini(&t);
    util_diag_fini(&d);
    sqlite3_close(db);
    has_str(svg, "data-guide=\"max batch 256\" data-kind=\"limit\" data-at=\"256\"",
            "the running batch's ceiling, max_batch");
    has_str(svg, "data-guide=\"KV capacity\" data-kind=\"limit\" data-at=\"1\"",
            "and the KV cache's");
    has_str(svg,
            "class=\"span\" data-span=\"warm-up (not measured)\" data-lo=\"0\" "
            "data-hi=\"10\"",
            "the warm-up shaded");
    char *units = plot_svg(path, "timeline", "--run 1 --interval 2s");
    ok(*svg && !strcmp(svg, units), "--interval 2s: the figure of --interval 2");
    free(units);
    free(svg);
    svg = plot_svg(path, "timeline", "--run 1 --interval 0.5");
    units = plot_svg(path, "timeline", "--run 1 --interval 500ms");
    ok(*svg && !strcmp(svg, units), "--interval 500ms: the figure of --interval 0.5");
    free(units);
    free(svg);
    svg = plot_svg(path, "timeline", "--run 2");
    ok(count(svg, "queue") > 0, "a run without iterations still has a queue panel");
    is_int(count(svg, "KV in use"), -1, "a run without iterations: no KV panel");
    is_int(count(svg, "power"), -1, "nor a power panel");
    free(svg);
}

/* Two runs' curves: each "met" label in its run's colour, and the 90% and
 * 99% labels each beside its own line, never between the two (issue 26). */
static void test_curve_labels(const char *path)
{
    char *svg = plot_svg(path, "slo-curve", "--run 1 --run 2");
    look l[8];
    int nl = series_looks(svg, l, 8);
    /* series: run 1's curve, its point at the SLO, run 2's curve, its point */
    sqlite3 *db = open_db(path);
    for (int run = 1; run <= 2; run++) {
        an_curve c;
        util_diag d;
        util_diag_init(&d);
        an_slo_curve(db, run, AN_TTFT, NULL, 101, &c, &d);
        int n, within = 0;
        double *v = measured(db, run, "ttft_s", &n);
        while (within < n && v[within] <= 0.5)
            within++;
        free(v);
        char *met = util_xasprintf(">%.1f%% met</text>", 100.0 * within / (double)c.ended);
        has_str(svg, met, "run %d's share at the SLO is printed", run);
        free(met);
        an_curve_fini(&c);
        util_diag_fini(&d);
    }
    /* both may read "100.0% met" at one point: only their colours tell them apart */
    char fills[4][8];
    int found = text_fills(svg, "point-label", "% met", fills, 4);
    is_int(found, 2, "a 'met' label per run");
    ok(found == 2 && nl >= 4 && !strcmp(fills[0], l[0].colour) && !strcmp(fills[1], l[2].colour),
       "each in its run's colour (%s, %s; the curves %s, %s)", found > 0 ? fills[0] : "-",
       found > 1 ? fills[1] : "-", nl >= 4 ? l[0].colour : "-", nl >= 4 ? l[2].colour : "-");
    double y90 = text_attr(svg, "guide", "90% of requests", "y1"),
           y99 = text_attr(svg, "guide", "99% of requests", "y1");
    const char *names[2] = {"90% of requests", "99% of requests"};
    double own[2] = {y90, y99}, other[2] = {y99, y90};
    for (int i = 0; i < 2; i++) {
        /* a label's middle: its baseline less a third of the 11 px font */
        double mid = text_attr(svg, "guide-label", names[i], "y") - 11 / 3.0;
        bool between = mid > fmin(own[i], other[i]) + 3 && mid < fmax(own[i], other[i]) - 3;
        ok(!isnan(mid) && !between,
           "'%s' (middle at %.1f) is not between its line (%.1f) and the other (%.1f)", names[i],
           mid, own[i], other[i]);
    }
    free(svg);
    sqlite3_close(db);
}

static void test_curve(const char *path)
{
    char *svg = plot_svg(path, "slo-curve", "--run 1");
    check_figure(svg, path, "slo-curve");
    sqlite3 *db = open_db(path);
    an_curve c;
    util_diag d;
    util_diag_init(&d);
    an_slo_curve(db, 1, AN_TTFT, NULL, 101, &c, &d);
    points p = series(svg, "attainment");
    bool same = p.n == c.n_points && p.n == 101;
    for (int i = 0; same && i < p.n; i++)
        same = p.x[i] == c.points[i].threshold_s && p.y[i] == c.points[i].attainment;
    ok(same, "the curve is an_slo_curve's, 101 thresholds");
    char *need = util_xasprintf("data-guide=\"99%% need %.4g ms\" data-kind=\"reference\" "
                                "data-at=\"%.17g\"",
                                1e3 * c.needed[3].threshold_s, c.needed[3].threshold_s);
    has_str(svg, need, "the threshold 99%% needs is marked, labelled at its own line");
    has_str(svg,
            "data-guide=\"90% of requests\" data-kind=\"reference\" "
            "data-at=\"0.90000000000000002\"",
            "a guide at 90%%");
    has_str(svg, "data-guide=\"TTFT SLO 500 ms\"", "and the scenario's threshold");
    points at = series(svg, "at the SLO");
    int n;
    double *v = measured(db, 1, "ttft_s", &n);
    int within = 0;
    while (within < n && v[within] <= 0.5)
        within++;
    free(v);
    double want = (double)within / (double)c.ended;
    is_int(at.n, 1, "the attainment at the SLO is marked: one point");
    ok(at.n > 0 && at.x[0] == 0.5, "at the SLO, 500 ms");
    ok(at.n > 0 && at.y[0] == want, "at the share of ended requests within 500 ms (%d of %lld)",
       within, (long long)c.ended);
    char *met = util_xasprintf(">%.1f%% met</text>", 100 * want);
    has_str(svg, met, "and printed");
    free(met);
    points_fini(&at);
    free(need);
    points_fini(&p);
    an_curve_fini(&c);
    util_diag_fini(&d);
    sqlite3_close(db);
    free(svg);
    svg = plot_svg(path, "slo-curve", "--run 1 --run 2");
    cmp_ok(count(svg, "requests=400, rate=10"), >, 50,
           "several --run: a curve each, named by what differs (run 1's)");
    cmp_ok(count(svg, "requests=200, rate=5"), >, 50, "and run 2's");
    is_int(count(svg, "at the SLO, requests=200, rate=5"), 1, "each with its point at the SLO");
    free(svg);
    test_curve_labels(path);
}

/* ---- the terminal and bad input ----------------------------------------------- */

/* Lines of the grid: ten characters of value, then " |". */
static int grid_rows(const char *s)
{
    int n = 0;
    for (const char *line = s; *line;) {
        size_t len = strcspn(line, "\n");
        n += len > 12 && line[10] == ' ' && line[11] == '|';
        line += len + (line[len] == '\n');
    }
    return n;
}

static void test_terminal(const char *sweeps, const char *runs)
{
    result r = sv("plot '%s' cdf --run 1 --run 2 --terminal", runs);
    is_int(r.status, 0, "cdf --terminal exits 0");
    is_int(grid_rows(r.out), 40, "two panels (the CDF, its tail): 20 rows each");
    has_str(r.out, "legend:  o requests=400, rate=10  * requests=200, rate=5  | TTFT SLO 500 ms",
            "a legend: a marker per series, the SLO's own character");
    has_str(r.out, "TTFT (ms)", "the x label");
    free(r.out);
    r = sv("plot '%s' timeline --run 1 --terminal", runs);
    is_int(grid_rows(r.out), 100, "timeline with iterations: five panels of 20 rows");
    has_str(r.out, "~ max batch 256", "limits have their own character");
    free(r.out);
    r = sv("plot '%s' latency-load --sweep s1 --terminal --width 70 --height 12", sweeps);
    is_int(grid_rows(r.out), 36, "latency-load: three panels, --height rows each");
    has_str(r.out, "X overloaded runs", "the overloaded x is in the legend");
    has_str(r.out, "......", "lines join the points");
    bool fits = true;
    for (const char *line = r.out; *line;) {
        size_t len = strcspn(line, "\n");
        fits &= len <= 70 || !strncmp(line, "note:", 5) || strstr(line, "legend") || line[0] == ' ';
        if (len > 12 && line[10] == ' ' && line[11] == '|') fits &= len <= 70;
        line += len + (line[len] == '\n');
    }
    ok(fits, "--width 70: the grid fits 70 columns");
    free(r.out);
}

/* The PNG's width and height from its IHDR chunk; 0 when it is no PNG. */
static void png_size(const char *path, unsigned *w, unsigned *h)
{
    unsigned char b[24] = {0};
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    *w = *h = 0;
    if (n == 24 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8) && !memcmp(b + 12, "IHDR", 4)) {
        *w = (unsigned)b[16] << 24 | (unsigned)b[17] << 16 | (unsigned)b[18] << 8 | b[19];
        *h = (unsigned)b[20] << 24 | (unsigned)b[21] << 16 | (unsigned)b[22] << 8 | b[23];
    }
}

/* Pixels of the PNG whose colour is within 8 of rgb in every channel. */
static long pixels_of(const char *path, unsigned rgb)
{
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    long n = 0;
    if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
        int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
        int stride = cairo_image_surface_get_stride(s);
        const unsigned char *d = cairo_image_surface_get_data(s);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                uint32_t px;
                memcpy(&px, d + (size_t)y * (size_t)stride + 4 * (size_t)x, 4);
                bool near = true;
                for (int c = 0; c < 3; c++) {
                    int a = (int)((px >> (8 * c)) & 255), b = (int)((rgb >> (8 * c)) & 255);
                    near &= abs(a - b) <= 8;
                }
                n += near;
            }
    }
    cairo_surface_destroy(s);
    return n;
}

/* A PNG is the SVG's figure at twice its pixels, drawn through cairo. */
static void test_png(const char *sweeps, const char *runs)
{
    char *png = in_dir("plot.png"), *svg_path = in_dir("plot.svg");
    unlink(png);
    result r = sv("plot '%s' latency-load --sweep s1 -o '%s'", sweeps, png);
    is_int(r.status, 0, "-o FILE.png exits 0");
    free(r.out);
    char *svg = plot_svg(sweeps, "latency-load", "--sweep s1");
    unsigned w, h, sw = 0, sh = 0;
    png_size(png, &w, &h);
    const char *at = strstr(svg, "<svg ");
    if (at)
        sscanf(strstr(at, "width=") ? strstr(at, "width=") : "", "width=\"%u\" height=\"%u\"", &sw,
               &sh);
    cmp_ok(w, >, 0, "-o FILE.png writes a PNG");
    is_int(w, 2 * sw, "the PNG twice the SVG's %u pixels wide", sw);
    is_int(h, 2 * sh, "and twice its %u pixels high", sh);
    cmp_ok(pixels_of(png, 0x0072B2), >, 1000, "drawn in the palette's first colour");
    cmp_ok(pixels_of(png, 0x000000), >, 500, "with black SLO lines and text");
    free(svg);
    r = sv("plot '%s' cdf --run 1 -o '%s' --width 1200 --height 700", runs, png);
    png_size(png, &w, &h);
    is_int(r.status, 0, "-o FILE.png --width 1200 --height 700 exits 0");
    is_int(w, 2400, "--width 1200: 2400 pixels wide");
    is_int(h, 1400, "--height 700: 1400 pixels high");
    free(r.out);
    svg = plot_svg(runs, "cdf", "--run 1 --width 1200 --height 700");
    has_str(svg, "width=\"1200\" height=\"700\"", "and the SVG 1200 x 700");
    free(svg);
    r = sv("plot '%s' cdf --run 1 -o /nonexistent/dir/x.png", runs);
    is_int(r.status, 1, "an unwritable PNG path fails");
    has_str(r.out, "cannot write /nonexistent/dir/x.png", "naming the file");
    free(r.out);
    svg = plot_svg(runs, "slo-curve", "--run 1 --title 'Our chat service' --log-y");
    has_str(svg, "<title>Our chat service", "--title replaces the title");
    ok(!strstr(svg, "data-y-scale=\"linear\""), "--log-y: no panel's y axis is linear");
    has_str(svg, "data-y-scale=\"log\"", "its y axes are logarithmic");
    free(svg);
    free(png);
    free(svg_path);
}

/* -o names the format: FILE.svg or FILE.png in any case, or - for stdout.
 * Any other name is refused before a byte is written, rather than SVG in
 * x.jpg (an image viewer's "broken file"). */
static void test_figure_names(const char *runs)
{
    static const char *const refused[] = {"x.jpg", "out", "x.svg.bak", "x.pdf"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, refused[i]);
        unlink(path);
        result r = sv("plot '%s' cdf --run 1 -o '%s'", runs, path);
        is_int(r.status, 2, "-o %s: refused as bad usage", refused[i]);
        has_str(r.out, path, "-o %s: the message names the file", refused[i]);
        has_str(r.out, "name it FILE.svg or FILE.png (or - for SVG on stdout)",
                "-o %s: and the names accepted", refused[i]);
        ok(access(path, F_OK) != 0, "-o %s: nothing written", refused[i]);
        free(r.out);
    }
    static const struct {
        const char *name, *magic;
    } taken[] = {{"UPPER.SVG", "<?xml"}, {"UPPER.PNG", "\x89PNG"}, {"Mixed.Svg", "<?xml"}};
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
        char *path = in_dir(taken[i].name);
        result r = sv("plot '%s' cdf --run 1 -o '%s'", runs, path);
        is_int(r.status, 0, "-o %s exits 0", taken[i].name);
        char *text = slurp(path);
        const char *magic = taken[i].magic;
        ok(!strncmp(text, magic, strlen(magic)), "-o %s: %s", taken[i].name,
           magic[0] == '<' ? "an SVG" : "a PNG");
        free(text);
        free(r.out);
        unlink(path);
        free(path);
    }
    result r = sv("plot '%s' cdf --run 1 -o -", runs);
    is_int(r.status, 0, "-o - exits 0");
    has_str(r.out, "<svg", "-o -: SVG on stdout");
    free(r.out);
}

/* A label's box, as the layout estimates it. */
typedef struct label_box {
    double x, y, w, h;
} label_box;

/* The boxes of the guide, point and mark labels of each group of svg (a
 * panel, the lanes): none may overlap another in its group. */
static bool labels_apart(const char *svg, const char *group, int *checked)
{
    bool apart = true;
    *checked = 0;
    char *open_tag = util_xasprintf("<g class=\"%s\"", group);
    for (const char *p = strstr(svg, open_tag); p;) {
        const char *next = strstr(p + 1, open_tag);
        label_box b[64];
        int n = 0;
        for (const char *t = p; n < 64 && (t = strstr(t, "<text class=\"")) && (!next || t < next);
             t++) {
            if (strncmp(t + 13, "guide-label", 11) && strncmp(t + 13, "point-label", 11) &&
                strncmp(t + 13, "mark-label", 10))
                continue;
            double x, y;
            char anchor[8] = "";
            const char *xs = strstr(t, " x=\"");
            if (!xs ||
                sscanf(xs, " x=\"%lf\" y=\"%lf\" text-anchor=\"%7[a-z]", &x, &y, anchor) != 3)
                continue;
            const char *open = strchr(t, '>'), *close = strstr(t, "</text>");
            char *text = util_xasprintf("%.*s", (int)(close - open - 1), open + 1);
            double w = an__text_width(text, 11);
            double x0 = !strcmp(anchor, "middle") ? x - w / 2 : !strcmp(anchor, "end") ? x - w : x;
            b[n++] = (label_box){x0, y - 8.8, w, 11.5};
            free(text);
        }
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                apart &= !(b[i].x < b[j].x + b[j].w && b[j].x < b[i].x + b[i].w &&
                           b[i].y < b[j].y + b[j].h && b[j].y < b[i].y + b[i].h);
        *checked += n;
        p = next;
    }
    free(open_tag);
    return apart;
}

static void test_labels(const char *sweeps, const char *runs)
{
    static const struct {
        bool sweep;
        const char *kind, *options, *what;
        int least;
    } figs[] = {
        {true, "latency-load", "--sweep s1", "the SLO and mark labels", 5},
        {false, "cdf", "--run 1 --run 2", "the P99 and SLO labels", 4},
        {false, "slo-curve", "--run 1", "each guide labelled at its line, and the point's", 6},
        {false, "timeline", "--run 1", "the limits' labels", 2},
    };
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) {
        char *svg = plot_svg(figs[i].sweep ? sweeps : runs, figs[i].kind, figs[i].options);
        int n;
        bool apart = labels_apart(svg, "panel", &n);
        ok(apart, "%s: no two labels overlap (%d labels)", figs[i].kind, n);
        cmp_ok(n, >=, figs[i].least, "%s: %s (at least %d labels)", figs[i].kind, figs[i].what,
               figs[i].least);
        free(svg);
    }
}

static void test_bad_input(const char *sweeps, const char *runs)
{
    struct {
        const char *db, *args, *message;
    } bad[] = {
        {"/nonexistent/x.db", "cdf --terminal", "no such file"},
        {runs, "cdf --run 9 --terminal", "no run with id 9"},
        {runs, "latency-load --terminal", "holds no sweep"},
        {sweeps, "latency-load --sweep nope --terminal", "no sweep 'nope'"},
        {sweeps, "cfd --terminal", "unknown KIND 'cfd' (did you mean 'cdf'?)"},
        {runs, "cdf --metric ttfb --terminal", "--metric ttfb: expected ttft"},
        {runs, "cdf", "give -o FILE.svg, -o FILE.png or --terminal"},
        {runs, "timeline --log --terminal", "timeline does not take --log"},
        {runs, "timeline --interval 2d --terminal",
         "--interval 2d: expected a time > 0, in seconds or with a unit (0.5, 500ms, 2s, 250us, "
         "1min, 1h)"},
        {runs, "timeline --interval 0 --terminal", "--interval 0: expected a time > 0"},
        {runs, "timeline --run 1 --run 2 --terminal", "timeline draws one run"},
        {runs, "cdf --width 3 --terminal", "--width"},
        {sweeps, "latency-load --sweep s1 --x workload.nothing --terminal",
         "run 1 has no workload.nothing"},
        {sweeps, "throughput-concurrency --sweep s1 --terminal",
         "run 1 has no workload.arrival.users"},
        {runs, "", "expected FILE.db and KIND"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        result r = sv("plot '%s' %s", bad[i].db, bad[i].args);
        is_int(r.status, 2, "exit 2: %s says '%s'", bad[i].args, bad[i].message);
        has_str(r.out, bad[i].message, "%s: the message", bad[i].args);
        if (r.status != 2) tap_diag("%d: %s", r.status, r.out);
        free(r.out);
    }
    result r = sv("plot --help");
    is_int(r.status, 0, "plot --help");
    has_str(r.out, "usage: servesim plot", "plot --help prints its usage");
    free(r.out);
    r = sv("--help");
    has_str(r.out, "plot FILE.db KIND", "servesim --help lists plot");
    free(r.out);
}

/* ---- pipeline ------------------------------------------------------------------ */

/* Two requests on one replica with a linear cost: B (id 0, sent at 0) is
 * prefilled in [1, 13) ms and decodes in 10 ms steps; A (id 1) is sent at
 * 35.5 ms, queued at 36.5, scheduled at 43 and prefilled in [53, 73) ms
 * (asynchronous; [43, 63) synchronous), its first token out at 73 ms and
 * seen at 73.5.  Returns the database. */
static char *pipeline_run(const char *name, bool async, const char *options)
{
    char *csv = in_dir("light.csv"), *scenario = in_dir("pipeline.json"), *db = in_dir(name);
    FILE *f = fopen(csv, "w");
    fputs("arrival_time_s,input_tokens,output_tokens\n0,100,1000\n0.0355,100,50\n", f);
    fclose(f);
    f = fopen(scenario, "w");
    fprintf(f,
            "{\"name\": \"pipeline\", \"seed\": 1, \"cluster\": {\"engine\": \"ideal\", \"gpu\": "
            "\"h100-sxm\", \"model\": \"llama-3.1-8b\", \"scheduler\": {\"max_batch\": 2, "
            "\"async_scheduling\": %s}, \"host\": {\"frontend_s\": 0.001, \"output_s\": 0.0005}, "
            "\"cost_model\": {\"kind\": \"linear\", \"iteration_s\": 0.002, "
            "\"prefill_s_per_token\": 0.0001, \"decode_step_s\": 0.008, \"decode_s_per_seq\": 0}}, "
            "\"workload\": {\"arrival\": {\"process\": \"trace\", \"path\": \"%s\"}}}\n",
            async ? "true" : "false", csv);
    fclose(f);
    unlink(db);
    result r = sv("run '%s' -o '%s' -q %s", scenario, db, options);
    is_int(r.status, 0, "pipeline scenario (%s): servesim run %s", async ? "async" : "sync",
           options);
    free(r.out);
    free(csv);
    free(scenario);
    return db;
}

/* The simulator's resolution: a nanosecond. */
static bool near(double a, double b)
{
    return fabs(a - b) < 1e-9;
}

/* Attribute attr of the element whose attributes start at el, as a number
 * (NAN: it has none). */
static double attr_number(const char *el, const char *attr)
{
    char *want = util_xasprintf(" %s=\"", attr);
    const char *end = el ? strchr(el, '>') : NULL, *v = el ? strstr(el, want) : NULL;
    double x = v && v < end ? strtod(v + strlen(want), NULL) : NAN;
    free(want);
    return x;
}

static bool attr_is(const char *el, const char *attr, const char *value)
{
    char *want = util_xasprintf(" %s=\"%s\"", attr, value);
    const char *end = el ? strchr(el, '>') : NULL, *v = el ? strstr(el, want) : NULL;
    free(want);
    return v && v < end;
}

/* The first element of class cls whose attr is at (within a nanosecond). */
static const char *element_at(const char *svg, const char *cls, const char *attr, double at)
{
    char *key = util_xasprintf("class=\"%s\"", cls);
    const char *s = strstr(svg, key);
    for (; s && !near(attr_number(s, attr), at); s = strstr(s + 1, key))
        ;
    free(key);
    return s;
}

/* The GPU bar of the step that starts at start. */
static const char *step_at(const char *svg, double start)
{
    return element_at(svg, "step", "data-start", start);
}

/* The request's mark of kind mark, or NULL. */
static const char *request_mark(const char *svg, const char *mark)
{
    char *key = util_xasprintf("data-mark=\"%s\"", mark);
    const char *s = strstr(svg, key);
    free(key);
    return s ? strstr(s - 60 > svg ? s - 60 : svg, "class=\"request-mark\"") : NULL;
}

static void test_pipeline_async(const char *db)
{
    char *svg = plot_svg(db, "pipeline", "--request 1");
    ok(well_formed(svg), "pipeline: the SVG is well-formed XML");
    has_str(svg, "<title>pipeline: llama-3.1-8b on 1 x h100-sxm",
            "pipeline: the title says what was simulated");
    has_str(svg, "asynchronous scheduling: each step planned while the one before runs",
            "pipeline: the subtitle names the engine's mode");
    has_str(svg, ">time (ms)</text>", "pipeline: a time axis in ms for a window under a second");
    has_str(svg, "class=\"lane\" data-lane=\"scheduler\"", "pipeline: a scheduler lane");
    has_str(svg, "class=\"lane\" data-lane=\"GPU\"", "pipeline: a GPU lane");
    has_str(svg, "class=\"lane\" data-lane=\"client\"", "pipeline: a client lane");
    has_str(svg, "class=\"legend\"", "pipeline: a legend");
    const char *b = step_at(svg, 0.001);
    ok(near(attr_number(b, "data-end"), 0.013), "pipeline: B's prefill step runs [1, 13) ms");
    ok(attr_is(b, "data-kind", "prefill"), "pipeline: the step at 1 ms is a prefill step");
    for (int k = 0; k < 4; k++) {
        const char *st = step_at(svg, 0.013 + 0.010 * k);
        ok(near(attr_number(st, "data-end"), 0.023 + 0.010 * k) &&
               attr_is(st, "data-kind", "decode"),
           "pipeline: a decode step [%d, %d) ms", 13 + 10 * k, 23 + 10 * k);
    }
    ok(near(attr_number(step_at(svg, 0.013), "data-scheduled"), 0.001),
       "pipeline: the step [13, 23) ms was planned at 1 ms, while the one before ran");
    const char *a = step_at(svg, 0.053);
    ok(near(attr_number(a, "data-end"), 0.073), "pipeline: A's prefill step runs [53, 73) ms");
    ok(attr_is(a, "data-kind", "prefill"), "pipeline: the step at 53 ms carries a prefill");
    ok(near(attr_number(a, "data-scheduled"), 0.043),
       "pipeline: A's prefill step planned at 43 ms");
    ok(near(attr_number(a, "data-client"), 0.0735), "pipeline: its tokens seen at 73.5 ms");
    ok(element_at(svg, "plan", "data-at", 0.043) != NULL, "pipeline: a scheduler tick at 43 ms");
    static const struct {
        const char *mark;
        double at;
    } marks[] = {{"arrival", 0.0355},
                 {"enqueue", 0.0365},
                 {"scheduled", 0.043},
                 {"engine-first-token", 0.073},
                 {"first-token", 0.0735}};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        ok(near(attr_number(request_mark(svg, marks[i].mark), "data-at"), marks[i].at),
           "pipeline: request 1's %s mark at %g ms", marks[i].mark, 1e3 * marks[i].at);
    const char *span = strstr(svg, "data-span=\"request 1: TTFT 38 ms\"");
    ok(span != NULL, "pipeline: request 1's TTFT is a labelled span");
    ok(near(attr_number(span, "data-lo"), 0.0355) && near(attr_number(span, "data-hi"), 0.0735),
       "pipeline: the TTFT span runs from 35.5 to 73.5 ms");
    int n;
    bool apart = labels_apart(svg, "lanes", &n);
    ok(apart, "pipeline: no two of its %d mark labels overlap", n);
    is_int(n, 5, "pipeline: each of request 1's five marks labelled");
    free(svg);
}

static void test_pipeline_sync(const char *db)
{
    char *svg = plot_svg(db, "pipeline", "--request 1");
    has_str(svg, "synchronous scheduling", "pipeline, synchronous: the subtitle says so");
    bool same = true;
    int bars = 0;
    for (const char *s = strstr(svg, "class=\"step\""); s;
         s = strstr(s + 1, "class=\"step\""), bars++)
        same &= attr_number(s, "data-scheduled") == attr_number(s, "data-start");
    ok(same && bars == 12, "pipeline, synchronous: each of the %d steps planned as it starts",
       bars);
    const char *a = step_at(svg, 0.043);
    ok(attr_is(a, "data-kind", "prefill") && near(attr_number(a, "data-end"), 0.063),
       "pipeline, synchronous: A's prefill step runs [43, 63) ms");
    free(svg);
}

static void test_pipeline_views(const char *db)
{
    result r = sv("plot '%s' pipeline --request 1 --terminal --width 100", db);
    is_int(r.status, 0, "pipeline --terminal exits 0");
    has_str(r.out, " scheduler |", "pipeline --terminal: the scheduler's row");
    has_str(r.out, "       GPU |  [##0###][=1==]", "pipeline --terminal: the steps as bars");
    has_str(r.out, "a sent  q queued  s scheduled", "pipeline --terminal: the request's letters");
    free(r.out);
    char *png = in_dir("plot.png");
    r = sv("plot '%s' pipeline --request 1 -o '%s'", db, png);
    is_int(r.status, 0, "pipeline -o FILE.png exits 0");
    cmp_ok(pixels_of(png, 0x0072B2), >, 1000, "pipeline PNG: decode steps in blue");
    cmp_ok(pixels_of(png, 0x009E73), >, 1000, "pipeline PNG: prefill steps in green");
    free(r.out);
    unlink(png);
    free(png);
    char *svg = plot_svg(db, "pipeline", "--from 0.02 --to 0.06");
    ok(step_at(svg, 0.013) && step_at(svg, 0.053) && !step_at(svg, 0.073),
       "pipeline --from 20ms --to 60ms: the steps with GPU work inside");
    ok(!element_at(svg, "plan", "data-at", 0.013), "and no tick outside the window");
    free(svg);
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[65536];
    size_t n;
    while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    if (in) fclose(in);
    if (out) fclose(out);
}

static void test_pipeline_errors(const char *db)
{
    char *plain = pipeline_run("plain.db", true, ""), *old = in_dir("old.db");
    struct {
        const char *db, *args, *message;
    } bad[] = {
        {plain, "pipeline --terminal", "has no iterations: run it again with --record-iterations"},
        {old, "pipeline --terminal", "schema 5 records no step's planning"},
        {db, "pipeline --request 7 --terminal", "run 1 has no request 7"},
        {db, "pipeline --replica 3 --terminal", "replica 3 ran no steps"},
        {db, "pipeline --from 50 --terminal", "ran no step after 50 s"},
        {db, "pipeline --from 0.2 --to 0.1 --terminal", "--to 0.1 is not after --from 0.2"},
        {db, "cdf --from 1 --terminal", "cdf does not take --from"},
    };
    copy_file(db, old);
    sql(old, "PRAGMA user_version = 5"); /* as a database from before schema 6 says */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        result r = sv("plot '%s' %s", bad[i].db, bad[i].args);
        is_int(r.status, 2, "exit 2: %s", bad[i].args);
        has_str(r.out, bad[i].message, "%s: says '%s'", bad[i].args, bad[i].message);
        free(r.out);
    }
    unlink(plain);
    unlink(old);
    free(plain);
    free(old);
}

static void test_pipeline(void)
{
    char *async = pipeline_run("async.db", true, "--record-iterations");
    char *sync = pipeline_run("sync.db", false, "--record-iterations");
    test_pipeline_async(async);
    test_pipeline_sync(sync);
    test_pipeline_views(async);
    test_pipeline_errors(async);
    char *junk[] = {async, sync, in_dir("light.csv"), in_dir("pipeline.json")};
    for (int i = 0; i < 4; i++) {
        unlink(junk[i]);
        if (i >= 2) free(junk[i]);
    }
    free(async);
    free(sync);
}

int main(int argc, char **argv)
{
    if (argc < 3 || !mkdtemp(dir)) {
        printf("Bail out! usage: test_plot SERVESIM SOURCE_ROOT\n");
        return 1;
    }
    servesim = argv[1];
    char *q = util_xasprintf("%s/examples/quickstart.json", argv[2]);
    quick = q;
    char *sweeps = in_dir("sweeps.db"), *users = in_dir("users.db"), *runs = in_dir("runs.db");
    char *capacity = in_dir("capacity.db"), *rates = in_dir("rates.db");
    test_well_formed();
    make_sweeps(sweeps);
    run_into(runs, "--record-iterations --set stop.requests=400");
    run_into(runs, "--set workload.arrival.rate_per_s=5");
    test_latency_load(sweeps);
    test_capacity(capacity);
    test_criterion(rates);
    test_colour_blind(sweeps);
    test_throughput(users);
    test_cdf(runs);
    test_timeline(runs);
    test_curve(runs);
    test_terminal(sweeps, runs);
    test_png(sweeps, runs);
    test_figure_names(runs);
    test_labels(sweeps, runs);
    test_bad_input(sweeps, runs);
    test_pipeline();
    char *junk[] = {sweeps, users, runs, capacity, rates, in_dir("plot.svg"), in_dir("plot.png")};
    for (int i = 0; i < 7; i++) {
        unlink(junk[i]);
        free(junk[i]);
    }
    rmdir(dir);
    free(q);
    return tap_done();
}
