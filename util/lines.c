/*
 * lines.c: a text file a line at a time, in bounded memory.  getline() would
 * grow its buffer without end on a file with no newline (/dev/zero: gigabytes
 * before anything fails), so lines are cut out of a fixed read buffer with
 * memchr() and copied into a line buffer that may grow to UTIL_LINE_MAX and
 * no further.  The checks that a file is a regular file and that a line is
 * text live here, once, for every reader of line files.
 */
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CHUNK 65536

struct util_lines {
    FILE *f;
    char *path;
    char chunk[CHUNK]; /* what fread() brought, from pos to end */
    size_t pos, end;
    char *line; /* the line being assembled, NUL-terminated */
    size_t len, cap;
    int64_t number;
    bool eof;
};

int util_lines_open(const char *path, util_lines **out, util_diag *d)
{
    util_clip_buf cb;
    *out = NULL;
    /* the kind of file first: opening a pipe would wait for a writer */
    struct stat st;
    if (stat(path, &st))
        return util_diag_add(d, "%s: cannot open: %s", util_clip_path(path, &cb), strerror(errno));
    const char *why = NULL;
    if (S_ISDIR(st.st_mode)) why = "is a folder, not a file";
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file (a pipe or a device cannot be read twice, once to check it "
              "and once to replay it, and a device may never end)";
    if (why) return util_diag_add(d, "%s: %s", util_clip_path(path, &cb), why);
    FILE *f = fopen(path, "rb");
    if (!f)
        return util_diag_add(d, "%s: cannot open: %s", util_clip_path(path, &cb), strerror(errno));
    /* malloc, not calloc: zeroing the 64 KiB chunk on every open showed in
     * profiles of many small files */
    util_lines *l = util_xmalloc(sizeof *l);
    *l = (util_lines){.f = f, .path = util_xstrdup(path), .cap = 256};
    l->line = util_xmalloc(l->cap);
    *out = l;
    return UTIL_OK;
}

void util_lines_close(util_lines *l)
{
    if (!l) return;
    fclose(l->f);
    free(l->line);
    free(l->path);
    free(l);
}

int64_t util_lines_number(const util_lines *l)
{
    return l->number;
}

/* Appends n bytes to the line, refusing to pass UTIL_LINE_MAX. */
static int append(util_lines *l, const char *s, size_t n, util_diag *d)
{
    if (l->len + n > UTIL_LINE_MAX) {
        util_clip_buf cb;
        return util_diag_add(d, "%s:%lld: a line longer than %d MiB (not a trace file?)",
                             util_clip_path(l->path, &cb), (long long)l->number + 1,
                             UTIL_LINE_MAX >> 20);
    }
    if (l->len + n + 1 > l->cap) {
        while (l->len + n + 1 > l->cap) l->cap *= 2;
        l->line = util_xrealloc(l->line, l->cap);
    }
    memcpy(l->line + l->len, s, n);
    l->len += n;
    l->line[l->len] = '\0';
    return UTIL_OK;
}

/* Refills the chunk: 1 with bytes, 0 at the end, < 0 on a read error. */
static int refill(util_lines *l, util_diag *d)
{
    if (l->eof) return 0;
    l->pos = 0;
    l->end = fread(l->chunk, 1, CHUNK, l->f);
    if (l->end) return 1;
    l->eof = true;
    if (!ferror(l->f)) return 0;
    util_clip_buf cb;
    return util_diag_add(d, "%s:%lld: cannot read: %s", util_clip_path(l->path, &cb),
                         (long long)l->number + 1, strerror(errno));
}

/* The line is complete in l->line: drops its "\r", refuses NUL bytes. */
static int finish(util_lines *l, char **line, size_t *len, util_diag *d)
{
    l->number++;
    if (memchr(l->line, '\0', l->len)) {
        util_clip_buf cb;
        return util_diag_add(d, "%s:%lld: a NUL byte in the line (a binary file?)",
                             util_clip_path(l->path, &cb), (long long)l->number);
    }
    if (l->len && l->line[l->len - 1] == '\r') l->line[--l->len] = '\0';
    char *start = l->line;
    size_t n = l->len;
    if (l->number == 1 && n >= 3 && !memcmp(start, "\xef\xbb\xbf", 3)) { /* a UTF-8 BOM */
        start += 3;
        n -= 3;
    }
    *line = start;
    *len = n;
    return 1;
}

int util_lines_next(util_lines *l, char **line, size_t *len, util_diag *d)
{
    l->len = 0;
    l->line[0] = '\0';
    bool any = false; /* bytes of this line seen: a last line without "\n" counts */
    for (;;) {
        if (l->pos == l->end) {
            int rc = refill(l, d);
            if (rc < 0) return rc;
            if (rc == 0) return any ? finish(l, line, len, d) : 0;
        }
        const char *start = l->chunk + l->pos;
        const char *nl = memchr(start, '\n', l->end - l->pos);
        size_t n = nl ? (size_t)(nl - start) : l->end - l->pos;
        if (append(l, start, n, d)) return UTIL_EINPUT;
        any = true;
        l->pos += n + (nl != NULL);
        if (nl) return finish(l, line, len, d);
    }
}

int util_lines_error(const util_lines *l, util_diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = util_xvasprintf(fmt, ap);
    va_end(ap);
    util_clip_buf cb;
    util_diag_add(d, "%s:%lld: %s", util_clip_path(l->path, &cb), (long long)l->number, m);
    free(m);
    return UTIL_EINPUT;
}

int util_split(char *line, char sep, char **fields, int max)
{
    int n = 0;
    for (char *s = line;; n++) {
        if (n < max) fields[n] = s;
        char *at = strchr(s, sep);
        if (!at) return n + 1;
        *at = '\0';
        s = at + 1;
    }
}
