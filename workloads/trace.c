/*
 * trace.c: request traces, streamed a line at a time (util_lines) -- a file
 * of any size needs memory for its longest line only, and a line may be as
 * long as UTIL_LINE_MAX (4 MiB: a Mooncake line carries one hash id per 512
 * prompt tokens).  Only regular files are read: a trace is read twice.
 * Three layouts:
 *
 *   csv       arrival_time_s,input_tokens,output_tokens[,hash_ids] --
 *             seconds from the start, as written; hash_ids, when there,
 *             are block ids separated by spaces (no quoting needed); an
 *             optional first line starting "arrival_time_s" is a header
 *             (data/validation's files).  A header that names a priority,
 *             deadline_s or tenant column names every column instead, in
 *             any order, and each row has as many fields.
 *   azure     TIMESTAMP,ContextTokens,GeneratedTokens, timestamps like
 *             "2023-11-16 18:17:03.9799600" (Azure LLM inference traces).
 *             A header starting "TIMESTAMP" names the columns, so extra
 *             columns (the 2025 trace's NumImages) are skipped, but for
 *             priority, deadline_s and tenant; without one the three
 *             columns come in this order.
 *   mooncake  one JSON object a line: timestamp (ms), input_length,
 *             output_length and (optional) hash_ids, priority, deadline_s
 *             and tenant.  cJSON is the
 *             reference reader; a scanner (below) reads the plain lines,
 *             all of the shipped traces', in one pass, and hands cJSON
 *             every line it is not sure of, so the two accept the same
 *             lines, make the same records and write the same messages.
 *
 * Hash ids name the prompt's blocks of block_tokens tokens in order (512 in
 * Mooncake's files, whose README says so); equal ids mean equal blocks.  A
 * request's segments are its ids chained (wl_chain), one block each, for
 * the whole blocks only: a final partial block (input_length not a multiple
 * of block_tokens) is the prompt's own.  Fewer ids than blocks is allowed
 * -- the ids name the leading blocks, the rest is the prompt's own -- but
 * more than ceil(input_length / block_tokens) is an error: Mooncake's files
 * have exactly that many, so more means a wrong block size.  The segments
 * live in one buffer per trace, grown to its longest line's, and are
 * valid until the next record.
 *
 * A row may carry its own priority (a tier's name or an integer, as
 * workload.classes[].priority), deadline_s (seconds > 0) and tenant (a
 * string): each overrides its class's for that request, and a row without
 * one (an empty cell, a missing or null key) keeps its class's.  A csv or
 * azure tenant is its cell, blanks trimmed; it cannot hold a comma.
 *
 * Auto-detection looks at the first non-empty line only: one starting
 * "TIMESTAMP" is azure, one starting '{' is mooncake, anything else csv.
 *
 * Azure and Mooncake times are taken relative to the trace's first request,
 * which arrives at 0.  An Azure timestamp is split into whole seconds (days
 * from the civil date, computed here: no time zone or locale is involved,
 * the trace is UTC-agnostic; a trailing "Z" or "+HH:MM" offset is applied)
 * and nanoseconds, and each part is subtracted from the first request's
 * before the two meet in a double, so sub-microsecond digits survive.
 *
 * Every line is checked: arrival times never decrease (the engine replays
 * them in order; nothing is sorted here), lie within WL_HORIZON_S of the
 * trace's start (csv: of time 0) so that no replayed time can overflow the
 * engine's int64 nanoseconds, and token counts are whole numbers
 * >= 1 -- a reply of 0 tokens is not a request the engine can serve, and no
 * shipped trace has one, so such a row is an error rather than silently
 * changed.  A malformed line is reported as "FILE:LINE: field N (name):
 * what, got 'text'".
 *
 * A scenario's trace is read twice: once when the scenario is loaded, so
 * that a malformed line is an input error before anything is simulated or
 * written; and once as the run goes.
 */
#include "wl.h"
#include "wl_int.h"

#include <assert.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const wl_trace_formats[] = {"auto", "csv", "azure", "mooncake", NULL};

#define MAX_COLS 32

/* The columns a row may have: the three every row has, csv's hash ids,
 * then a row's own priority, deadline and tenant (each optional, named by
 * a header or a JSON key). */
enum { COL_TIME, COL_PROMPT, COL_OUTPUT, COL_IDS, COL_PRIORITY, COL_DEADLINE, COL_TENANT, N_COLS };

static const char *const csv_names[] = {"arrival_time_s", "input_tokens", "output_tokens",
                                        "hash_ids",       "priority",     "deadline_s",
                                        "tenant"};
static const char *const azure_names[] = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"};
static const char *const mooncake_names[] = {"timestamp", "input_length", "output_length"};

struct wl_trace {
    util_lines *lines;
    char *path;
    wl_trace_format format; /* never WL_TRACE_AUTO once open */
    int64_t line;           /* of the line in buf */
    char *buf;              /* the line, in util_lines' buffer */
    bool pending;           /* buf holds a line read ahead for detection */
    bool seen_first;        /* the first non-empty line (perhaps a header) is behind */
    int ncols, col[N_COLS]; /* csv, azure: fields a row has; where COL_* are (-1: none) */
    bool named;             /* csv: a header names the columns (else the legacy 3 or 4) */
    char *tenant;           /* the record's tenant, copied from its line */
    size_t tenant_cap;
    int64_t rows;
    int64_t sec0, nsec0;    /* azure: first request's time */
    double ms0;             /* mooncake: first request's time */
    double last_t;
    int32_t block_tokens;   /* tokens a hash id names; 0: hash ids are read past */
    wl_segment *segs;       /* the record's segments (ids while a line is parsed) */
    size_t cap;
    bool no_scan;           /* mooncake: every line through cJSON (tests compare the two) */
    int64_t scanned;        /* mooncake: lines the scanner took */
};

/* ---- lines ---- */

/* The next non-blank line into t->buf, without its line ending: 1, or 0 at
 * the end of the file. */
static int read_line(wl_trace *t, util_diag *d)
{
    if (t->pending) {
        t->pending = false;
        return 1;
    }
    size_t n;
    int rc;
    while ((rc = util_lines_next(t->lines, &t->buf, &n, d)) == 1) {
        t->line = util_lines_number(t->lines);
        if (t->line == 1 && !strncmp(t->buf, "\xef\xbb\xbf", 3)) /* a UTF-8 byte-order mark */
            memmove(t->buf, t->buf + 3, n - 2);
        if (t->buf[strspn(t->buf, " \t")]) return 1;
    }
    return rc;
}

static wl_trace_format detect(const char *line)
{
    if (!strncmp(line, "TIMESTAMP", 9)) return WL_TRACE_AZURE;
    if (line[strspn(line, " \t")] == '{') return WL_TRACE_MOONCAKE;
    return WL_TRACE_CSV;
}

/* ---- messages ---- */

static int bad(const wl_trace *t, util_diag *d, int col, const char *name, const char *what,
               const char *got)
{
    util_clip_buf cb; /* a runaway field (a missing newline, binary data) is cut short */
    return util_diag_add(d, "%s:%lld: field %d (%s): %s, got '%s'", t->path, (long long)t->line,
                         col, name, what, util_clip(got, &cb));
}

static int bad_line(const wl_trace *t, util_diag *d, const char *what)
{
    return util_diag_add(d, "%s:%lld: %s", t->path, (long long)t->line, what);
}

/* ---- fields ---- */

static bool parse_count(const char *s, int32_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    while (*end == ' ' || *end == '\t') end++;
    if (end == s || *end || errno || v < 1 || v > INT32_MAX) return false;
    *out = (int32_t)v;
    return true;
}

static int parse_tokens(const wl_trace *t, const char *s, int col, const char *name,
                        int32_t *out, util_diag *d)
{
    if (parse_count(s, out)) return UTIL_OK;
    return bad(t, d, col, name, "expected a whole number of tokens >= 1", s);
}

/* Arrival times must not decrease: the engine replays them in order. */
static int set_arrival(wl_trace *t, double at, int col, const char *name, const char *got,
                       wl_record *rec, util_diag *d)
{
    if (t->rows && at < t->last_t)
        return bad(t, d, col, name, "earlier than the line before", got);
    if (at > WL_HORIZON_S)
        return bad(t, d, col, name,
                   t->format == WL_TRACE_CSV
                       ? "beyond the simulation's horizon, 1e9 s (31.7 years)"
                       : "beyond the simulation's horizon, 1e9 s (31.7 years) after the first "
                         "request",
                   got);
    rec->arrival_s = t->last_t = at;
    return UTIL_OK;
}

/* ---- a row's own priority, deadline and tenant ---- */

#define PRIORITY_WANTED                                                                            \
    "expected a tier (critical, standard, batch, sheddable, background) or a whole number from "  \
    "-1000000 to 1000000"
#define DEADLINE_WANTED "expected seconds > 0, at most 1e9"

/* A tier's name or an integer, as workload.classes[].priority takes them. */
static bool parse_priority(const char *s, int32_t *out)
{
    for (int i = 0; wl_tier_names[i]; i++)
        if (!strcmp(s, wl_tier_names[i])) {
            *out = wl_tier_values[i];
            return true;
        }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < WL_PRIORITY_MIN || v > WL_PRIORITY_MAX) return false;
    *out = (int32_t)v;
    return true;
}

static bool valid_deadline(double x)
{
    return isfinite(x) && x > 0 && x <= WL_HORIZON_S;
}

/* The record's tenant, copied: the line it came from is gone by the time
 * the record is used (cJSON's tree, the next line). */
static void set_tenant(wl_trace *t, const char *s, wl_record *rec)
{
    size_t len = strlen(s);
    if (len + 1 > t->tenant_cap) {
        t->tenant_cap = len + 1;
        t->tenant = util_xrealloc(t->tenant, t->tenant_cap);
    }
    memcpy(t->tenant, s, len + 1);
    rec->tenant = t->tenant;
}

/* s without its leading and trailing blanks, in place. */
static char *trim(char *s)
{
    s += strspn(s, " \t");
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
    return s;
}

/* The optional cells of a csv or azure row (f: its fields); an empty cell
 * keeps the class's. */
static int text_extras(wl_trace *t, char **f, wl_record *rec, util_diag *d)
{
    int c = t->col[COL_PRIORITY];
    char *v;
    if (c >= 0 && *(v = trim(f[c]))) {
        if (!parse_priority(v, &rec->priority))
            return bad(t, d, c + 1, csv_names[COL_PRIORITY], PRIORITY_WANTED, v);
        rec->has_priority = true;
    }
    if ((c = t->col[COL_DEADLINE]) >= 0 && *(v = trim(f[c]))) {
        char *end;
        double x = strtod(v, &end);
        if (*end || !valid_deadline(x))
            return bad(t, d, c + 1, csv_names[COL_DEADLINE], DEADLINE_WANTED, v);
        rec->deadline_s = x;
    }
    if ((c = t->col[COL_TENANT]) >= 0 && *(v = trim(f[c]))) set_tenant(t, v, rec);
    return UTIL_OK;
}

/* ---- hash ids into segments ---- */

/* Room for n segments in the trace's one buffer, grown by doubling, so a
 * trace allocates O(log longest line) times however many rows it has. */
static wl_segment *grow_segs(wl_trace *t, size_t n)
{
    if (n > t->cap) {
        t->cap = n > 2 * t->cap ? n : 2 * t->cap;
        t->segs = util_xrealloc(t->segs, t->cap * sizeof *t->segs);
    }
    return t->segs;
}

/* The first keep ids in t->segs[].key, chained in place, are the record's
 * segments. */
static void chain_segments(wl_trace *t, int64_t keep, wl_record *rec)
{
    uint64_t key = 0;
    for (int64_t i = 0; i < keep; i++) {
        key = wl_chain(key, t->segs[i].key);
        t->segs[i] = (wl_segment){.key = key, .tokens = t->block_tokens};
    }
    rec->segments = keep ? t->segs : NULL;
    rec->n_segments = (int32_t)keep;
}

/* n ids in t->segs[].key become the record's segments: the whole blocks'
 * ids chained in place (the final partial block is the prompt's own).
 * More ids than the prompt has blocks is an error (see the top). */
static int make_segments(wl_trace *t, int64_t n, int col, wl_record *rec, util_diag *d)
{
    int64_t b = t->block_tokens, blocks = (rec->prompt + b - 1) / b, whole = rec->prompt / b;
    if (n > blocks)
        return util_diag_add(d, "%s:%lld: field %d (hash_ids): %lld block ids for %d tokens, "
                                "more than its ceil(%d / %lld) = %lld blocks (is hash_block_tokens "
                                "%lld the trace's block size?)",
                             t->path, (long long)t->line, col, (long long)n, rec->prompt,
                             rec->prompt, (long long)b, (long long)blocks, (long long)b);
    chain_segments(t, n < whole ? n : whole, rec);
    return UTIL_OK;
}

/* ---- csv ---- */

/* Block ids separated by spaces or tabs, each a whole number from 0 to
 * 2^64 - 1, into t->segs[].key; their count, or -1 after a message (col:
 * the field's number). */
static int64_t csv_ids(wl_trace *t, const char *s, int col, util_diag *d)
{
    int64_t n = 0;
    for (s += strspn(s, " \t"); *s; s += strspn(s, " \t")) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (*s < '0' || *s > '9' || errno || (*end && *end != ' ' && *end != '\t')) {
            size_t len = strcspn(s, " \t");
            char *item = util_xasprintf("%.*s", (int)(len < 64 ? len : 64), s);
            char *name = util_xasprintf("hash_ids[%lld]", (long long)n);
            bad(t, d, col, name, "expected a block id, a whole number from 0 to 2^64 - 1", item);
            free(name);
            free(item);
            return -1;
        }
        grow_segs(t, (size_t)n + 1)[n].key = v;
        n++;
        s = end;
    }
    return n;
}

/* A header that names a priority, deadline_s or tenant column names every
 * column, in any order; any other (the legacy "arrival_time_s,..." line)
 * leaves rows positional, 3 or 4 fields, as before. */
static int csv_header(wl_trace *t, char *line, util_diag *d)
{
    char *f[MAX_COLS];
    int n = util_split(line, ',', f, MAX_COLS);
    bool named = false;
    for (int i = 0; i < n && i < MAX_COLS; i++) {
        f[i] = trim(f[i]);
        for (int c = COL_PRIORITY; c < N_COLS; c++) named |= !strcmp(f[i], csv_names[c]);
    }
    if (!named) return UTIL_OK;
    if (n > MAX_COLS) return bad_line(t, d, "more than 32 columns in the header");
    t->named = true;
    t->ncols = n;
    for (int c = 0; c < N_COLS; c++) t->col[c] = -1;
    for (int i = 0; i < n; i++) {
        int c = 0;
        while (c < N_COLS && strcmp(f[i], csv_names[c])) c++;
        if (c == N_COLS || t->col[c] >= 0)
            return bad(t, d, i + 1, "header",
                       c == N_COLS ? "expected one of arrival_time_s, input_tokens, "
                                     "output_tokens, hash_ids, priority, deadline_s, tenant"
                                   : "a column named twice",
                       f[i]);
        t->col[c] = i;
    }
    for (int c = 0; c < 3; c++)
        if (t->col[c] < 0)
            return util_diag_add(d, "%s:%lld: the header has no column %s", t->path,
                                 (long long)t->line, csv_names[c]);
    return UTIL_OK;
}

static int parse_csv(wl_trace *t, char *line, wl_record *rec, util_diag *d)
{
    char *f[MAX_COLS];
    int nf = util_split(line, ',', f, MAX_COLS);
    if (t->named && nf != t->ncols) {
        char *what = util_xasprintf("expected %d fields (as the header has)", t->ncols);
        int rc = bad_line(t, d, what);
        free(what);
        return rc;
    }
    if (!t->named && nf != 3 && nf != 4)
        return bad_line(t, d, "expected 3 or 4 fields (arrival_time_s, input_tokens, "
                              "output_tokens[, hash_ids])");
    int ct = t->col[COL_TIME], cp = t->col[COL_PROMPT], co = t->col[COL_OUTPUT];
    int ci = t->named ? t->col[COL_IDS] : nf == 4 ? 3 : -1;
    char *end;
    double at = strtod(f[ct], &end);
    while (*end == ' ' || *end == '\t') end++;
    if (end == f[ct] || *end || !isfinite(at) || at < 0)
        return bad(t, d, ct + 1, csv_names[COL_TIME], "expected seconds >= 0", f[ct]);
    if (parse_tokens(t, f[cp], cp + 1, csv_names[COL_PROMPT], &rec->prompt, d) ||
        parse_tokens(t, f[co], co + 1, csv_names[COL_OUTPUT], &rec->output, d))
        return UTIL_EINPUT;
    if (ci >= 0 && t->block_tokens) {
        int64_t n = csv_ids(t, f[ci], ci + 1, d);
        if (n < 0 || make_segments(t, n, ci + 1, rec, d)) return UTIL_EINPUT;
    }
    if (text_extras(t, f, rec, d)) return UTIL_EINPUT;
    return set_arrival(t, at, ct + 1, csv_names[COL_TIME], f[ct], rec, d);
}

/* ---- azure ---- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil): exact integer arithmetic, no time zone. */
static int64_t days_from_civil(int64_t y, int m, int day)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int64_t y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return days[m - 1] + (m == 2 && leap);
}

/* Exactly n decimal digits at *s into *out, advancing *s. */
static bool digits(const char **s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if ((*s)[i] < '0' || (*s)[i] > '9') return false;
        v = v * 10 + ((*s)[i] - '0');
    }
    *s += n;
    *out = v;
    return true;
}

static bool literal(const char **s, char c)
{
    if (**s != c) return false;
    (*s)++;
    return true;
}

/* A fraction of a second ".fffffff" (any number of digits; those past the
 * ninth are below a nanosecond and dropped). */
static void parse_fraction(const char **s, int64_t *nsec)
{
    *nsec = 0;
    if (**s != '.') return;
    int n = 0;
    for ((*s)++; **s >= '0' && **s <= '9'; (*s)++, n++)
        if (n < 9) *nsec = *nsec * 10 + (**s - '0');
    for (; n < 9; n++) *nsec *= 10;
}

/* An optional "Z", "+HH:MM" or "-HH:MM" into seconds east of UTC. */
static bool parse_offset(const char **s, int64_t *east)
{
    *east = 0;
    if (literal(s, 'Z')) return true;
    int sign = **s == '+' ? 1 : **s == '-' ? -1 : 0, hh, mm;
    if (!sign) return true;
    (*s)++;
    if (!digits(s, 2, &hh) || !literal(s, ':') || !digits(s, 2, &mm) || hh > 23 || mm > 59)
        return false;
    *east = sign * (hh * 3600 + mm * 60);
    return true;
}

/* "YYYY-MM-DD HH:MM:SS[.fffffff][Z|+HH:MM]" ('T' may separate date and
 * time) into whole seconds since 1970 and nanoseconds. */
static bool parse_timestamp(const char *s, int64_t *sec, int64_t *nsec)
{
    int y, mo, dd, hh, mi, ss;
    s += strspn(s, " \t");
    if (!digits(&s, 4, &y) || !literal(&s, '-') || !digits(&s, 2, &mo) || !literal(&s, '-') ||
        !digits(&s, 2, &dd) || !(literal(&s, ' ') || literal(&s, 'T')) || !digits(&s, 2, &hh) ||
        !literal(&s, ':') || !digits(&s, 2, &mi) || !literal(&s, ':') || !digits(&s, 2, &ss))
        return false;
    if (mo < 1 || mo > 12 || dd < 1 || dd > days_in_month(y, mo) || hh > 23 || mi > 59 ||
        ss > 59)
        return false;
    int64_t east;
    parse_fraction(&s, nsec);
    if (!parse_offset(&s, &east)) return false;
    if (s[strspn(s, " \t")]) return false;
    *sec = days_from_civil(y, mo, dd) * 86400 + hh * 3600 + mi * 60 + ss - east;
    return true;
}

/* A header names the columns: find the three this reads among them. */
static int azure_header(wl_trace *t, char *line, util_diag *d)
{
    char *f[MAX_COLS];
    int n = util_split(line, ',', f, MAX_COLS);
    if (n > MAX_COLS) return bad_line(t, d, "more than 32 columns in the header");
    t->ncols = n;
    for (int c = 0; c < 3; c++) {
        t->col[c] = -1;
        for (int i = 0; i < n; i++)
            if (!strcasecmp(f[i] + strspn(f[i], " \t"), azure_names[c])) t->col[c] = i;
        if (t->col[c] < 0)
            return util_diag_add(d, "%s:%lld: the header has no column %s", t->path,
                                 (long long)t->line, azure_names[c]);
    }
    for (int i = 0; i < n; i++) /* a row's own priority, deadline and tenant, if named */
        for (int c = COL_PRIORITY; c < N_COLS; c++)
            if (!strcasecmp(trim(f[i]), csv_names[c])) t->col[c] = i;
    return UTIL_OK;
}

static int parse_azure(wl_trace *t, char *line, wl_record *rec, util_diag *d)
{
    char *f[MAX_COLS];
    if (util_split(line, ',', f, MAX_COLS) != t->ncols) {
        char *what = util_xasprintf("expected %d fields (as the header has)", t->ncols);
        int rc = bad_line(t, d, what);
        free(what);
        return rc;
    }
    int ct = t->col[COL_TIME], cp = t->col[COL_PROMPT], co = t->col[COL_OUTPUT];
    int64_t sec, nsec;
    if (!parse_timestamp(f[ct], &sec, &nsec))
        return bad(t, d, ct + 1, azure_names[0],
                   "expected a time like 2023-11-16 18:17:03.9799600", f[ct]);
    if (parse_tokens(t, f[cp], cp + 1, azure_names[1], &rec->prompt, d) ||
        parse_tokens(t, f[co], co + 1, azure_names[2], &rec->output, d) ||
        text_extras(t, f, rec, d))
        return UTIL_EINPUT;
    if (!t->rows) {
        t->sec0 = sec;
        t->nsec0 = nsec;
    }
    /* whole seconds and nanoseconds subtracted apart, both exactly */
    double at = (double)(sec - t->sec0) + (double)(nsec - t->nsec0) * 1e-9;
    return set_arrival(t, at, ct + 1, azure_names[0], f[ct], rec, d);
}

/* ---- mooncake ---- */

/* The item for key and its position in the object (1-based), for messages. */
static const cJSON *member(const cJSON *obj, const char *key, int *pos)
{
    *pos = 1;
    for (const cJSON *c = obj->child; c; c = c->next, ++*pos)
        if (c->string && !strcmp(c->string, key)) return c;
    return NULL;
}

static int bad_json(const wl_trace *t, util_diag *d, int pos, const char *name,
                    const char *what, const cJSON *v)
{
    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble)) /* 1e309: cJSON reads it as infinity */
        return util_diag_add(d, "%s:%lld: field %d (%s): a number out of range (beyond %s1.8e308, "
                                "not a finite double)",
                             t->path, (long long)t->line, pos, name, v->valuedouble < 0 ? "-" : "");
    char *text = cJSON_PrintUnformatted(v);
    int rc = bad(t, d, pos, name, what, text ? text : "?");
    cJSON_free(text);
    return rc;
}

static int json_tokens(const wl_trace *t, const cJSON *obj, const char *key, int32_t *out,
                       util_diag *d)
{
    int pos;
    const cJSON *v = member(obj, key, &pos);
    if (!v) return util_diag_add(d, "%s:%lld: no field %s", t->path, (long long)t->line, key);
    double x = cJSON_IsNumber(v) ? v->valuedouble : 0;
    if (x != floor(x) || x < 1 || x > INT32_MAX)
        return bad_json(t, d, pos, key, "expected a whole number of tokens >= 1", v);
    *out = (int32_t)x;
    return UTIL_OK;
}

/* 2^53: up to it a double holds every whole number, so no two ids merge. */
#define MAX_JSON_ID 9007199254740992.0

/* hash_ids, when the line has them and they are read: an array of block
 * ids, each a whole number from 0 to 2^53. */
static int mooncake_ids(wl_trace *t, const cJSON *obj, wl_record *rec, util_diag *d)
{
    int pos;
    const cJSON *ids = t->block_tokens ? member(obj, "hash_ids", &pos) : NULL;
    if (!ids) return UTIL_OK;
    if (!cJSON_IsArray(ids))
        return bad_json(t, d, pos, "hash_ids", "expected an array of block ids", ids);
    int64_t n = 0;
    for (const cJSON *c = ids->child; c; c = c->next, n++) {
        double x = cJSON_IsNumber(c) ? c->valuedouble : -1;
        if (!(x >= 0 && x <= MAX_JSON_ID) || x != floor(x)) {
            char name[48];
            snprintf(name, sizeof name, "hash_ids[%lld]", (long long)n);
            return bad_json(t, d, pos, name, "expected a block id, a whole number from 0 to 2^53",
                            c);
        }
        grow_segs(t, (size_t)n + 1)[n].key = (uint64_t)x;
    }
    return make_segments(t, n, pos, rec, d);
}

/* A line's own priority, deadline and tenant, each optional (null: none). */
static int mooncake_extras(wl_trace *t, const cJSON *obj, wl_record *rec, util_diag *d)
{
    int pos;
    const cJSON *v = member(obj, csv_names[COL_PRIORITY], &pos);
    if (v && !cJSON_IsNull(v)) {
        double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        bool ok = cJSON_IsString(v) ? parse_priority(v->valuestring, &rec->priority)
                                    : x == floor(x) && x >= WL_PRIORITY_MIN && x <= WL_PRIORITY_MAX;
        if (!ok) return bad_json(t, d, pos, csv_names[COL_PRIORITY], PRIORITY_WANTED, v);
        if (cJSON_IsNumber(v)) rec->priority = (int32_t)x;
        rec->has_priority = true;
    }
    v = member(obj, csv_names[COL_DEADLINE], &pos);
    if (v && !cJSON_IsNull(v)) {
        if (!cJSON_IsNumber(v) || !valid_deadline(v->valuedouble))
            return bad_json(t, d, pos, csv_names[COL_DEADLINE], DEADLINE_WANTED, v);
        rec->deadline_s = v->valuedouble;
    }
    v = member(obj, csv_names[COL_TENANT], &pos);
    if (v && !cJSON_IsNull(v)) {
        if (!cJSON_IsString(v) || !*v->valuestring)
            return bad_json(t, d, pos, csv_names[COL_TENANT], "expected a non-empty string", v);
        set_tenant(t, v->valuestring, rec);
    }
    return UTIL_OK;
}

static int mooncake_fields(wl_trace *t, const cJSON *obj, wl_record *rec, util_diag *d)
{
    int pos;
    const char *key = mooncake_names[0];
    const cJSON *ts = member(obj, key, &pos);
    if (!ts) return util_diag_add(d, "%s:%lld: no field %s", t->path, (long long)t->line, key);
    if (!cJSON_IsNumber(ts) || !isfinite(ts->valuedouble))
        return bad_json(t, d, pos, key, "expected a number of milliseconds", ts);
    if (json_tokens(t, obj, mooncake_names[1], &rec->prompt, d) ||
        json_tokens(t, obj, mooncake_names[2], &rec->output, d) || mooncake_ids(t, obj, rec, d) ||
        mooncake_extras(t, obj, rec, d))
        return UTIL_EINPUT;
    if (!t->rows) t->ms0 = ts->valuedouble;
    char got[32];
    snprintf(got, sizeof got, "%.15g", ts->valuedouble);
    return set_arrival(t, (ts->valuedouble - t->ms0) / 1000, pos, key, got, rec, d);
}

/* The reference reading of a Mooncake line, and the one that writes every
 * message about one. */
static int parse_mooncake_json(wl_trace *t, const char *line, wl_record *rec, util_diag *d)
{
    const char *end = NULL;
    cJSON *obj = cJSON_ParseWithOpts(line, &end, true);
    if (!obj || !cJSON_IsObject(obj)) {
        int col = obj || !end ? 1 : (int)(end - line) + 1;
        cJSON_Delete(obj);
        return util_diag_add(d, "%s:%lld:%d: expected one JSON object on the line", t->path,
                             (long long)t->line, col);
    }
    int rc = mooncake_fields(t, obj, rec, d);
    cJSON_Delete(obj);
    return rc;
}

/* ---- mooncake: the scanner ---- */

/* cJSON builds a node for every value of a line -- malloc and free, strtod
 * and localeconv for each of its ~28 hash ids -- and that was most of a
 * Mooncake replay's time.  The scanner reads a line in one pass with no
 * allocation, but only the lines it is sure cJSON reads the same way and
 * mooncake_fields accepts: on anything else (escapes in a key, a duplicate
 * key, a number with an exponent, a value out of range, an error of any
 * kind) it declines and the line goes through cJSON, so every message and
 * every corner of cJSON's dialect stay exactly as they were. */

enum { MC_TS = 1, MC_PROMPT = 2, MC_OUTPUT = 4, MC_IDS = 8, MC_NEEDED = 7, MC_OWN = 16 };

/* What the scanner found on a line. */
typedef struct mc_line {
    unsigned seen; /* MC_* */
    double ms;
    int32_t prompt, output;
    int64_t ids; /* in t->segs[].key */
} mc_line;

/* Deeper nesting in a value the scanner skips sends the line to cJSON
 * (whose own limit, CJSON_NESTING_LIMIT, is 1000). */
#define MC_MAX_DEPTH 32

/* cJSON's whitespace: every byte from 1 to 32. */
static const char *json_ws(const char *s)
{
    while ((unsigned char)*s - 1u < 32u) s++;
    return s;
}

static bool is_digit(char c)
{
    return (unsigned)(unsigned char)c - '0' < 10u;
}

/* The bytes cJSON copies into a number before strtod reads it: a number the
 * scanner reads must not be followed by one, or strtod might read further. */
static bool num_char(char c)
{
    return is_digit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

/* Digits only, at most max of them (leading zeros allowed, as strtod allows
 * them), into a whole number; -1 for anything else. */
static int64_t json_uint(const char **s, int max)
{
    const char *p = *s;
    uint64_t v = 0; /* wraps past max digits, refused then: the loop stays lean */
    for (; is_digit(*p); p++) v = v * 10 + (uint64_t)(*p - '0');
    if (p == *s || p - *s > max || num_char(*p)) return -1;
    *s = p;
    return (int64_t)v;
}

/* A timestamp "-?D+(.D+)?" of at most 15 digits, as strtod reads it but
 * without the locale: the digits as a whole number m < 2^53 and 10^k (k <=
 * 15) are both exact doubles, so m / 10^k, rounded once by the division,
 * is the correctly rounded value strtod returns.  Exponents and longer
 * numbers are cJSON's. */
static bool json_ms(const char **s, double *out)
{
    static const double pow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    const char *p = *s;
    bool neg = *p == '-';
    int64_t m = 0;
    int digits = 0, frac = -1; /* digits after the point; -1 before it */
    for (p += neg;; p++) {
        if (is_digit(*p)) {
            if (++digits > 15) return false;
            m = m * 10 + (*p - '0');
            frac += frac >= 0;
        } else if (*p == '.' && frac < 0 && digits) {
            frac = 0;
        } else {
            break;
        }
    }
    if (!digits || !frac || num_char(*p)) return false;
    if (frac > 0 && FLT_EVAL_METHOD != 0) return false; /* the division must round once */
    double v = frac > 0 ? (double)m / pow10[frac] : (double)m;
    *out = neg ? -v : v; /* "-0" is -0.0, as strtod has it */
    *s = p;
    return true;
}

static int hex_digit(char c)
{
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* \uXXXX at s: its code, or -1. */
static long json_u4(const char *s)
{
    if (s[0] != '\\' || s[1] != 'u') return -1;
    long code = 0;
    for (int i = 2; i < 6; i++) {
        int h = hex_digit(s[i]);
        if (h < 0) return -1;
        code = code * 16 + h;
    }
    return code;
}

/* Past a string at s (on its '"'), or NULL.  Escapes are the ones cJSON
 * decodes without fault -- \" \\ \/ \b \f \n \r \t, \uXXXX outside the
 * surrogates and a high surrogate followed by a low one -- so the string
 * ends where cJSON's first pass (which skips a byte after each backslash)
 * ends it, and its second pass accepts every escape. */
static const char *skip_string(const char *s)
{
    for (const char *p = s + 1;; p++) {
        if (*p == '"') return p + 1;
        if (!*p) return NULL;
        if (*p != '\\') continue;
        if (p[1] && strchr("\"\\/bfnrt", p[1])) {
            p++;
            continue;
        }
        long hi = json_u4(p), lo;
        if (hi < 0 || (hi >= 0xdc00 && hi <= 0xdfff)) return NULL;
        if (hi >= 0xd800 && hi <= 0xdbff) {
            if ((lo = json_u4(p + 6)) < 0xdc00 || lo > 0xdfff) return NULL;
            p += 6;
        }
        p += 5;
    }
}

/* Past a number "-?D+(.D+)?([eE][+-]?D+)?" at s, or NULL.  cJSON copies up
 * to 63 bytes of num_char into a buffer for strtod; a number shorter than
 * that and followed by none of them is read by strtod whole. */
static const char *skip_number(const char *s)
{
    const char *p = s + (*s == '-');
    if (!is_digit(*p)) return NULL;
    while (is_digit(*p)) p++;
    if (*p == '.') {
        if (!is_digit(*++p)) return NULL;
        while (is_digit(*p)) p++;
    }
    if (*p == 'e' || *p == 'E') {
        p += p[1] == '+' || p[1] == '-';
        if (!is_digit(*++p)) return NULL;
        while (is_digit(*p)) p++;
    }
    return num_char(*p) || p - s >= 63 ? NULL : p;
}

static const char *skip_value(const char *s, int depth);

/* Past the members or items of an object or array at s (on '{' or '['),
 * up to its closing byte; NULL where cJSON might not read it so. */
static const char *skip_container(const char *s, int depth)
{
    char close = *s == '{' ? '}' : ']';
    const char *p = json_ws(s + 1);
    if (*p == close) return p + 1;
    for (;;) {
        if (close == '}') {
            if (*p != '"' || !(p = skip_string(p))) return NULL;
            if (*(p = json_ws(p)) != ':') return NULL;
            p = json_ws(p + 1);
        }
        if (!(p = skip_value(p, depth + 1))) return NULL;
        p = json_ws(p);
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = json_ws(p + 1);
    }
}

/* Past any JSON value at s (a key the reader does not use), or NULL. */
static const char *skip_value(const char *s, int depth)
{
    switch (*s) {
    case '"': return skip_string(s);
    case '{':
    case '[': return depth < MC_MAX_DEPTH ? skip_container(s, depth) : NULL;
    case 'n': return strncmp(s, "null", 4) ? NULL : s + 4;
    case 't': return strncmp(s, "true", 4) ? NULL : s + 4;
    case 'f': return strncmp(s, "false", 5) ? NULL : s + 5;
    default: return skip_number(s);
    }
}

/* The hash_ids array at s (on its '['), each id a whole number from 0 to
 * 2^53, into t->segs[].key; their count, or -1. */
static int64_t scan_ids(wl_trace *t, const char **s)
{
    const char *p = json_ws(*s + 1);
    int64_t n = 0;
    if (*p != ']')
        for (;;) {
            int64_t id = json_uint(&p, 16);
            if (id < 0 || id > (int64_t)MAX_JSON_ID) return -1;
            if ((size_t)n >= t->cap) grow_segs(t, (size_t)n + 1);
            t->segs[n++].key = (uint64_t)id;
            if (*(p = json_ws(p)) == ']') break;
            if (*p != ',') return -1;
            p = json_ws(p + 1);
        }
    *s = p + 1;
    return n;
}

/* The MC_* a key names (0: a key the reader skips; MC_OWN: one that sends
 * the line to cJSON), from its bytes. */
static unsigned mc_key(const wl_trace *t, const char *k, size_t len)
{
    switch (len) { /* the four names differ in length; priority shares hash_ids' */
    case 9: return memcmp(k, "timestamp", 9) ? 0 : MC_TS;
    case 12: return memcmp(k, "input_length", 12) ? 0 : MC_PROMPT;
    case 13: return memcmp(k, "output_length", 13) ? 0 : MC_OUTPUT;
    case 8:
        if (!memcmp(k, "priority", 8)) return MC_OWN;
        return memcmp(k, "hash_ids", 8) || !t->block_tokens ? 0 : MC_IDS;
    case 10: return memcmp(k, "deadline_s", 10) ? 0 : MC_OWN;
    case 6: return memcmp(k, "tenant", 6) ? 0 : MC_OWN;
    default: return 0;
    }
}

/* One member at *s (on its key's '"') into m; false to decline the line. */
static bool scan_member(wl_trace *t, const char **s, mc_line *m)
{
    const char *k = *s + 1, *e = k;
    while (*e && *e != '"' && *e != '\\') e++;
    if (*e != '"') return false; /* an escape: cJSON decodes the key */
    unsigned field = mc_key(t, k, (size_t)(e - k));
    if (field == MC_OWN) return false; /* a row's own priority, deadline or tenant: cJSON's */
    const char *p = json_ws(e + 1);
    if (*p != ':' || (field & m->seen)) return false; /* a duplicate: cJSON takes the first */
    m->seen |= field;
    p = json_ws(p + 1);
    int64_t v = 0;
    switch (field) {
    case MC_TS:
        if (!json_ms(&p, &m->ms)) return false;
        break;
    case MC_PROMPT:
    case MC_OUTPUT:
        if ((v = json_uint(&p, 10)) < 1 || v > INT32_MAX) return false;
        *(field == MC_PROMPT ? &m->prompt : &m->output) = (int32_t)v;
        break;
    case MC_IDS:
        if (*p != '[' || (m->ids = scan_ids(t, &p)) < 0) return false;
        break;
    default:
        if (!(p = skip_value(p, 1))) return false;
    }
    *s = p;
    return true;
}

/* What mooncake_fields would make of m, where it would accept the line. */
static bool commit_line(wl_trace *t, const mc_line *m, wl_record *rec)
{
    if ((m->seen & MC_NEEDED) != MC_NEEDED) return false;
    int64_t b = t->block_tokens, ids = m->seen & MC_IDS ? m->ids : 0; /* b > 0 when seen */
    if (ids && ids > (m->prompt + b - 1) / b) return false;
    double ms0 = t->rows ? t->ms0 : m->ms, at = (m->ms - ms0) / 1000;
    if ((t->rows && at < t->last_t) || at > WL_HORIZON_S) return false;
    rec->prompt = m->prompt;
    rec->output = m->output;
    if (ids) chain_segments(t, ids < m->prompt / b ? ids : m->prompt / b, rec);
    t->ms0 = ms0;
    rec->arrival_s = t->last_t = at;
    t->scanned++;
    return true;
}

/* A line into rec, as parse_mooncake_json would read it; false (and t and
 * rec untouched, but for t->segs' scratch) to leave it to cJSON. */
static bool scan_mooncake(wl_trace *t, const char *line, wl_record *rec)
{
    mc_line m = {0};
    const char *p = json_ws(line);
    if (*p != '{') return false;
    p = json_ws(p + 1);
    for (;;) {
        if (*p != '"' || !scan_member(t, &p, &m)) return false;
        if (*(p = json_ws(p)) == '}') break;
        if (*p != ',') return false;
        p = json_ws(p + 1);
    }
    if (*json_ws(p + 1)) return false; /* trailing text */
    return commit_line(t, &m, rec);
}

static int parse_mooncake(wl_trace *t, const char *line, wl_record *rec, util_diag *d)
{
    if (!t->no_scan && scan_mooncake(t, line, rec)) return UTIL_OK;
    return parse_mooncake_json(t, line, rec, d);
}

/* ---- the stream ---- */

int wl_trace_open(const char *path, wl_trace_format format, wl_trace **out, util_diag *d)
{
    *out = NULL;
    util_lines *lines;
    int orc = util_lines_open(path, &lines, d);
    if (orc) return orc;
    wl_trace *t = util_xcalloc(1, sizeof *t);
    t->lines = lines;
    t->path = util_xstrdup(path);
    t->format = format;
    t->block_tokens = WL_HASH_BLOCK_TOKENS;
    t->ncols = 3;
    for (int c = 0; c < N_COLS; c++) t->col[c] = c < 3 ? c : -1;
    if (format == WL_TRACE_AUTO) {
        /* read ahead to the first line; wl_trace_next starts from it */
        int rc = read_line(t, d);
        if (rc < 0) {
            wl_trace_close(t);
            return rc;
        }
        t->pending = rc == 1;
        t->format = rc == 1 ? detect(t->buf) : WL_TRACE_CSV;
    }
    *out = t;
    return UTIL_OK;
}

void wl_trace_set_block_tokens(wl_trace *t, int32_t block_tokens)
{
    assert(block_tokens >= 0 && t->rows == 0);
    t->block_tokens = block_tokens;
}

void wl__trace_set_scanner(wl_trace *t, bool on)
{
    t->no_scan = !on;
}

int64_t wl__trace_scanned(const wl_trace *t)
{
    return t->scanned;
}

void wl_trace_close(wl_trace *t)
{
    if (!t) return;
    util_lines_close(t->lines);
    free(t->path);
    free(t->segs);
    free(t->tenant);
    free(t);
}

/* The first non-empty line of a csv or azure file may be a header. */
static int header(wl_trace *t, bool *was, util_diag *d)
{
    t->seen_first = true;
    *was = false;
    if (t->format == WL_TRACE_CSV && !strncmp(t->buf, csv_names[0], strlen(csv_names[0]))) {
        *was = true;
        return csv_header(t, t->buf, d);
    }
    if (t->format == WL_TRACE_AZURE && !strncmp(t->buf, "TIMESTAMP", 9)) {
        *was = true;
        return azure_header(t, t->buf, d);
    }
    return UTIL_OK;
}

static int parse(wl_trace *t, wl_record *rec, util_diag *d)
{
    switch (t->format) {
    case WL_TRACE_AZURE: return parse_azure(t, t->buf, rec, d);
    case WL_TRACE_MOONCAKE: return parse_mooncake(t, t->buf, rec, d);
    default: return parse_csv(t, t->buf, rec, d);
    }
}

int wl_trace_next(wl_trace *t, wl_record *rec, util_diag *d)
{
    int rc;
    while ((rc = read_line(t, d)) == 1) {
        bool was_header = false;
        if (!t->seen_first && header(t, &was_header, d)) return UTIL_EINPUT;
        if (was_header) continue;
        rec->cls = 0;
        rec->segments = NULL;
        rec->n_segments = 0;
        rec->has_priority = false;
        rec->priority = 0;
        rec->deadline_s = 0;
        rec->tenant = NULL;
        if (parse(t, rec, d)) return UTIL_EINPUT;
        t->rows++;
        return 1;
    }
    return rc;
}

int wl_trace_check_slice(const char *path, wl_trace_format format, int32_t block_tokens,
                         double start_s, int64_t limit, wl_trace_info *whole,
                         wl_trace_info *slice, wl_names *tenants, util_diag *d)
{
    wl_trace *t;
    int rc = wl_trace_open(path, format, &t, d);
    if (rc) return rc;
    wl_trace_set_block_tokens(t, block_tokens);
    wl_trace_info in = {.format = t->format}, sl = {.format = t->format};
    wl_record rec;
    while ((rc = wl_trace_next(t, &rec, d)) == 1) {
        if (!in.rows) in.first_s = rec.arrival_s;
        in.last_s = rec.arrival_s;
        in.rows++;
        if (tenants && rec.tenant) wl_names_intern(tenants, rec.tenant);
        /* the rows a replay takes: source.c's next_from_trace skips the same */
        if (rec.arrival_s < start_s || (limit && sl.rows >= limit)) continue;
        if (!sl.rows) sl.first_s = rec.arrival_s;
        sl.last_s = rec.arrival_s;
        sl.rows++;
    }
    wl_trace_close(t);
    if (rc == 0 && in.rows == 0) rc = util_diag_add(d, "%s: no requests in the trace", path);
    if (whole) *whole = in;
    if (slice) *slice = sl;
    return rc;
}

int wl_trace_check(const char *path, wl_trace_format format, wl_trace_info *info, util_diag *d)
{
    return wl_trace_check_slice(path, format, WL_HASH_BLOCK_TOKENS, 0, 0, info, NULL, NULL, d);
}
