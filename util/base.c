/*
 * base.c: allocation wrapper, diagnostics, file reading, typo suggestions and
 * random streams -- the parts of util that have no JSON in them.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void oom(size_t n)
{
    fprintf(stderr, "servesim: out of memory allocating %zu bytes\n", n);
    abort();
}

void *util_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *util_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) oom(count * size);
    return p;
}

void *util_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *util_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(util_xmalloc(n), s, n);
}

char *util_xvasprintf(const char *fmt, va_list ap)
{
    /* Most messages fit a line: format once on the stack, again only if not. */
    char line[256];
    if (!fmt) fmt = ""; /* never NULL; says so to GCC's -fsanitize=undefined analysis */
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(line, sizeof line, fmt, ap2);
    va_end(ap2);
    if (n < 0) n = 0;
    char *s = util_xmalloc((size_t)n + 1);
    if ((size_t)n < sizeof line) memcpy(s, line, (size_t)n + 1);
    else vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *util_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = util_xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

/* ---- diagnostics ---- */

void util_diag_init(util_diag *d)
{
    memset(d, 0, sizeof *d);
}

void util_diag_clear(util_diag *d)
{
    for (int i = 0; i < d->count; i++) free(d->msgs[i]);
    d->count = 0;
}

void util_diag_fini(util_diag *d)
{
    if (!d) return;
    util_diag_clear(d);
    free(d->msgs);
    memset(d, 0, sizeof *d);
}

static void diag_push(util_diag *d, char *msg)
{
    if (d->count == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 8;
        d->msgs = util_xrealloc(d->msgs, (size_t)d->cap * sizeof *d->msgs);
    }
    d->msgs[d->count++] = msg;
}

int util_diag_add(util_diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_push(d, util_xvasprintf(fmt, ap));
    va_end(ap);
    return UTIL_EINPUT;
}

int util_diag_fail(util_diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_push(d, util_xvasprintf(fmt, ap));
    va_end(ap);
    return UTIL_EFAIL;
}

void util_diag_print(const util_diag *d, FILE *f, const char *prefix)
{
    for (int i = 0; i < d->count; i++) fprintf(f, "%s: %s\n", prefix, d->msgs[i]);
}

/* ---- files ---- */

/* Opens path for reading if it is a regular file: opened without waiting
 * (a FIFO's open would wait for a writer for ever), then checked by what
 * was opened, not by its name. */
static FILE *open_regular(const char *path, util_diag *d)
{
    util_clip_buf cb;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        util_diag_add(d, "%s: cannot open: %s", util_clip_path(path, &cb), strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *why = fstat(fd, &st) ? strerror(errno)
                      : S_ISDIR(st.st_mode) ? "is a folder, not a file"
                      : !S_ISREG(st.st_mode)
                          ? "not a regular file (a pipe or a device: a scenario, catalog or "
                            "configuration is read from a file)"
                          : NULL;
    FILE *f = NULL;
    if (!why && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0) f = fdopen(fd, "rb");
    if (!f) {
        util_diag_add(d, "%s: %s", util_clip_path(path, &cb), why ? why : strerror(errno));
        close(fd);
    }
    return f;
}

int util_read_file(const char *path, char **out, size_t *len, util_diag *d)
{
    util_clip_buf cb;
    FILE *f = open_regular(path, d);
    if (!f) return UTIL_EINPUT;
    size_t cap = 4096, n = 0;
    char *buf = util_xmalloc(cap);
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0 || n > UTIL_MAX_FILE_BYTES) break;
        if (cap - n - 1 == 0) buf = util_xrealloc(buf, cap *= 2);
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    int rc = UTIL_OK;
    if (err)
        rc = util_diag_add(d, "%s: cannot read: %s", util_clip_path(path, &cb), strerror(err));
    else if (n > UTIL_MAX_FILE_BYTES)
        rc = util_diag_add(d, "%s: larger than %d MiB: not a scenario or catalog file",
                           util_clip_path(path, &cb), UTIL_MAX_FILE_BYTES >> 20);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    if (len) *len = n;
    return UTIL_OK;
}

/* ---- echoing input ---- */

/* Bytes of the UTF-8 character that starts with c (1 for a stray byte). */
static size_t utf8_len(unsigned char c)
{
    return c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
}

static const char *clip(const char *text, size_t max, util_clip_buf *b)
{
    size_t n = 0, chars = 0, i = 0;
    bool plain = true;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        plain &= *p >= 0x20 && *p != 0x7f;
    if (plain && strlen(text) <= max) return text;
    while (text[i] && chars < UTIL_CLIP_CHARS) {
        size_t k = utf8_len((unsigned char)text[i]);
        for (size_t j = 1; j < k; j++)
            if (!text[i + j]) k = j; /* a character cut short by the end */
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == 0x7f) b->s[n++] = '?';
        else memcpy(b->s + n, text + i, k), n += k;
        i += c < 0x20 || c == 0x7f ? 1 : k;
        chars++;
    }
    if (text[i]) memcpy(b->s + n, "...", 3), n += 3;
    b->s[n] = '\0';
    return b->s;
}

const char *util_clip(const char *text, util_clip_buf *b)
{
    return clip(text, UTIL_CLIP_CHARS, b);
}

const char *util_clip_path(const char *path, util_clip_buf *b)
{
    return strlen(path) <= UTIL_CLIP_PATH ? clip(path, UTIL_CLIP_PATH, b) : clip(path, 0, b);
}

/* ---- typo suggestions ---- */

/* Optimal string alignment distance (Levenshtein plus adjacent swaps), the
 * measure git and redis use for "did you mean". */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return (size_t)-1;
    size_t dp[65][65];
    for (size_t i = 0; i <= la; i++) dp[i][0] = i;
    for (size_t j = 0; j <= lb; j++) dp[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t best = dp[i - 1][j] + 1;
            if (dp[i][j - 1] + 1 < best) best = dp[i][j - 1] + 1;
            if (dp[i - 1][j - 1] + cost < best) best = dp[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                dp[i - 2][j - 2] + 1 < best)
                best = dp[i - 2][j - 2] + 1;
            dp[i][j] = best;
        }
    }
    return dp[la][lb];
}

/* Inserts c into the n (< max or == max) shortest prefix matches in out,
 * after those as short, so that equal lengths keep the candidates' order;
 * returns the new count. */
static int insert_by_length(const char **out, int n, int max, const char *c)
{
    size_t len = strlen(c);
    int i = 0;
    while (i < n && strlen(out[i]) <= len) i++;
    if (i >= max) return n;
    if (n == max) n--;
    memmove(out + i + 1, out + i, (size_t)(n - i) * sizeof *out);
    out[i] = c;
    return n + 1;
}

int util_suggest(const char *word, const char *const *candidates, const char **out, int max)
{
    size_t len = strlen(word);
    if (len < 3 || max < 1) return 0; /* one or two letters are too short to guess at */
    /* A word that begins candidates ("h100" for "h100-sxm", "ttft" for
     * "ttft_s") was cut short, not misspelt: those, shortest first, beat any
     * candidate a few edits away ("h200"). */
    int n = 0;
    for (const char *const *c = candidates; *c; c++)
        if (!strncmp(*c, word, len)) n = insert_by_length(out, n, max, *c);
    if (n) return n;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (; *candidates; candidates++) {
        size_t dist = edit_distance(word, *candidates);
        if (dist < best_d) {
            best_d = dist;
            best = *candidates;
        }
    }
    /* A third of the word's length (at least 1, at most 3 edits) is a typo;
     * more than that is a different word and a suggestion would mislead. */
    size_t limit = len / 3;
    if (limit < 1) limit = 1;
    if (limit > 3) limit = 3;
    if (best_d > limit) return 0;
    out[0] = best;
    return 1;
}

const char *util_closest(const char *word, const char *const *candidates)
{
    const char *near;
    return util_suggest(word, candidates, &near, 1) ? near : NULL;
}

char *util_did_you_mean(const char *word, const char *const *candidates)
{
    const char *near[UTIL_SUGGEST_MAX];
    int n = util_suggest(word, candidates, near, UTIL_SUGGEST_MAX);
    if (!n) return NULL;
    size_t size = sizeof "did you mean ?";
    for (int i = 0; i < n; i++) size += strlen(near[i]) + sizeof "'', ";
    char *s = util_xmalloc(size);
    strcpy(s, "did you mean ");
    for (int i = 0; i < n; i++) {
        if (i) strcat(s, i == n - 1 ? " or " : ", ");
        strcat(s, "'");
        strcat(s, near[i]);
        strcat(s, "'");
    }
    strcat(s, "?");
    return s;
}

char *util_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return util_xstrdup(".");
    if (slash == path) return util_xstrdup("/");
    return util_xasprintf("%.*s", (int)(slash - path), path);
}

char *util_path_join(const char *dir, const char *path)
{
    if (!dir || path[0] == '/') return util_xstrdup(path);
    return util_xasprintf("%s/%s", dir, path);
}

double util_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- random streams ---- */

/* MurmurHash3's 64-bit finaliser: a bijection that spreads every input bit
 * over the output, so neighbouring (seed, stream) pairs give unrelated seeds. */
uint64_t util_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

gsl_rng *util_rng_stream(uint64_t master_seed, uint64_t stream_id)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r) oom(sizeof(gsl_rng));
    uint64_t s = util_mix64(master_seed ^ util_mix64(stream_id + UINT64_C(0x9e3779b97f4a7c15)));
    /* MT19937 takes a 32-bit seed: fold the high half in rather than drop it. */
    gsl_rng_set(r, (unsigned long)((s ^ (s >> 32)) & 0xffffffffu));
    return r;
}

char *util_diag_join(const util_diag *d)
{
    size_t n = 1;
    for (int i = 0; i < d->count; i++) n += strlen(d->msgs[i]) + 1;
    char *s = util_xmalloc(n), *at = s;
    for (int i = 0; i < d->count; i++) {
        size_t k = strlen(d->msgs[i]);
        memcpy(at, d->msgs[i], k);
        at[k] = '\n';
        at += k + 1;
    }
    *at = '\0';
    return s;
}

int util_terminal_columns(FILE *out, int fallback)
{
    const char *env = getenv("COLUMNS");
    int w = env ? atoi(env) : 0;
    struct winsize ws;
    if (w <= 0 && isatty(fileno(out)) && !ioctl(fileno(out), TIOCGWINSZ, &ws) && ws.ws_col)
        w = ws.ws_col;
    return w > 0 ? w : fallback;
}
