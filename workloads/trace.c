/*
 * trace.c: request traces, streamed a line at a time -- a file of any size
 * needs one line of memory.  This reads the plain CSV layout
 * `arrival_time_s,input_tokens,output_tokens` (an optional header line,
 * times in seconds from the start and never decreasing, token counts whole
 * numbers >= 1), the layout of ../shared/validation's workloads.
 *
 * A scenario's trace is read twice: once when the scenario is loaded, so
 * that a malformed line is an input error (FILE:LINE and the field) before
 * anything is simulated or written; and once as the run goes.
 */
#include "wl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct wl_trace {
    FILE *f;
    char *path;
    int64_t line;
    double last_t;
    char buf[4096];
};

int wl_trace_open(const char *path, wl_trace **out, util_diag *d)
{
    FILE *f = fopen(path, "r");
    if (!f) return util_diag_add(d, "%s: cannot open: %s", path, strerror(errno));
    wl_trace *t = util_xcalloc(1, sizeof *t);
    t->f = f;
    t->path = util_xstrdup(path);
    *out = t;
    return UTIL_OK;
}

void wl_trace_close(wl_trace *t)
{
    if (!t) return;
    fclose(t->f);
    free(t->path);
    free(t);
}

/* Field i of a comma-separated line, terminated in place. */
static char *next_field(char **cursor)
{
    char *start = *cursor, *comma = start ? strchr(start, ',') : NULL;
    if (comma) {
        *comma = '\0';
        *cursor = comma + 1;
    } else {
        *cursor = NULL;
    }
    return start;
}

static int bad(const wl_trace *t, util_diag *d, int col, const char *name, const char *what,
               const char *got)
{
    return util_diag_add(d, "%s:%lld: field %d (%s): %s, got '%s'", t->path, (long long)t->line,
                         col, name, what, got);
}

static int parse_tokens(const wl_trace *t, char *s, int col, const char *name, int32_t *out,
                        util_diag *d)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    while (*end == ' ' || *end == '\r' || *end == '\n') end++;
    if (end == s || *end || errno || v < 1 || v > INT32_MAX)
        return bad(t, d, col, name, "expected a whole number of tokens >= 1", s);
    *out = (int32_t)v;
    return UTIL_OK;
}

static int parse_line(wl_trace *t, char *line, wl_record *rec, util_diag *d)
{
    char *cursor = line, *f[3];
    for (int i = 0; i < 3; i++) f[i] = next_field(&cursor);
    if (!f[1] || !f[2] || cursor)
        return util_diag_add(d, "%s:%lld: expected 3 fields (arrival_time_s, input_tokens, "
                                "output_tokens)", t->path, (long long)t->line);
    char *end;
    double at = strtod(f[0], &end);
    if (end == f[0] || *end || !isfinite(at) || at < 0)
        return bad(t, d, 1, "arrival_time_s", "expected seconds >= 0", f[0]);
    if (at < t->last_t)
        return bad(t, d, 1, "arrival_time_s", "earlier than the line before", f[0]);
    if (parse_tokens(t, f[1], 2, "input_tokens", &rec->prompt, d) ||
        parse_tokens(t, f[2], 3, "output_tokens", &rec->output, d))
        return UTIL_EINPUT;
    rec->arrival_s = t->last_t = at;
    return UTIL_OK;
}

/* Returns 1 with a record, 0 at the end, or UTIL_EINPUT for a malformed line. */
int wl_trace_next(wl_trace *t, wl_record *rec, util_diag *d)
{
    while (fgets(t->buf, sizeof t->buf, t->f)) {
        t->line++;
        size_t n = strlen(t->buf);
        if (n == sizeof t->buf - 1 && t->buf[n - 1] != '\n')
            return util_diag_add(d, "%s:%lld: line too long", t->path, (long long)t->line);
        while (n && (t->buf[n - 1] == '\n' || t->buf[n - 1] == '\r')) t->buf[--n] = '\0';
        if (n == 0) continue;
        if (t->line == 1 && !strncmp(t->buf, "arrival_time_s", 14)) continue; /* header */
        return parse_line(t, t->buf, rec, d) ? UTIL_EINPUT : 1;
    }
    if (ferror(t->f)) return util_diag_add(d, "%s: read error", t->path);
    return 0;
}

int wl_trace_check(const char *path, int64_t *rows, util_diag *d)
{
    wl_trace *t;
    int rc = wl_trace_open(path, &t, d);
    if (rc) return rc;
    wl_record rec;
    int64_t n = 0;
    while ((rc = wl_trace_next(t, &rec, d)) == 1) n++;
    wl_trace_close(t);
    if (rc == 0 && n == 0) rc = util_diag_add(d, "%s: no requests in the trace", path);
    if (rows) *rows = n;
    return rc;
}
