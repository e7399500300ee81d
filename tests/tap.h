/*
 * tap.h: a tiny TAP producer for the test programs (meson test, protocol
 * 'tap').  Every assertion prints "ok N - what" or "not ok N - what" and, on
 * failure, the expression, both values and file:line as TAP diagnostics, as
 * libuv's test/task.h does.  A program ends with tap_done(), which prints the
 * plan and returns the exit status.
 */
#ifndef TAP_H
#define TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int tap__n, tap__failed;

static inline bool tap__report(bool ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline bool tap__report(bool ok, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", ok ? "ok" : "not ok", ++tap__n);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (!ok) {
        tap__failed++;
        printf("#   at %s:%d\n", file, line);
    }
    fflush(stdout);
    return ok;
}

/* ok(condition, "description %s", ...) */
#define ok(cond, ...)                                                                          \
    (tap__report((cond), __FILE__, __LINE__, __VA_ARGS__) ||                                   \
     (printf("#   failed: %s\n", #cond), false))

/* is_int(got, want, "description") for integers */
#define is_int(got, want, ...)                                                                 \
    do {                                                                                       \
        long long tap__g = (long long)(got), tap__w = (long long)(want);                       \
        if (!tap__report(tap__g == tap__w, __FILE__, __LINE__, __VA_ARGS__))                   \
            printf("#   %s == %s\n#   got: %lld\n#   want: %lld\n", #got, #want, tap__g,       \
                   tap__w);                                                                    \
    } while (0)

/* cmp_ok(a, <, b, "description"): a comparison of two numbers (as doubles)
 * that prints both sides when it fails. */
#define cmp_ok(a, op, b, ...)                                                                      \
    do {                                                                                           \
        double cmp__a = (double)(a), cmp__b = (double)(b);                                         \
        if (!tap__report(cmp__a op cmp__b, __FILE__, __LINE__, __VA_ARGS__))                       \
            printf("#   %s %s %s\n#   got: %.12g\n#   against: %.12g\n", #a, #op, #b, cmp__a,      \
                   cmp__b);                                                                        \
    } while (0)

/* is_near(got, want, tol, "description"): |got - want| <= tol */
#define is_near(got, want, tol, ...)                                                           \
    do {                                                                                       \
        double tap__g = (got), tap__w = (want), tap__t = (tol);                                \
        if (!tap__report(fabs(tap__g - tap__w) <= tap__t, __FILE__, __LINE__, __VA_ARGS__))    \
            printf("#   |%s - %s| <= %s\n#   got: %.12g\n#   want: %.12g\n#   diff: %.6g, "   \
                   "tolerance %.6g\n",                                                         \
                   #got, #want, #tol, tap__g, tap__w, fabs(tap__g - tap__w), tap__t);          \
    } while (0)

/* is_str(got, want, "description") for strings */
#define is_str(got, want, ...)                                                                 \
    do {                                                                                       \
        const char *tap__g = (got), *tap__w = (want);                                          \
        bool tap__ok = tap__g && tap__w && !strcmp(tap__g, tap__w);                            \
        if (!tap__report(tap__ok, __FILE__, __LINE__, __VA_ARGS__))                            \
            printf("#   %s == %s\n#   got: \"%s\"\n#   want: \"%s\"\n", #got, #want,           \
                   tap__g ? tap__g : "(null)", tap__w ? tap__w : "(null)");                    \
    } while (0)

/* has_str(haystack, needle, "description"): needle occurs in haystack */
#define has_str(hay, needle, ...)                                                              \
    do {                                                                                       \
        const char *tap__h = (hay), *tap__s = (needle);                                        \
        bool tap__ok = tap__h && tap__s && strstr(tap__h, tap__s);                             \
        if (!tap__report(tap__ok, __FILE__, __LINE__, __VA_ARGS__))                            \
            printf("#   %s contains %s\n#   text: \"%s\"\n#   wanted: \"%s\"\n", #hay, #needle,  \
                   tap__h ? tap__h : "(null)", tap__s ? tap__s : "(null)");                    \
    } while (0)

static inline void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tap_diag(const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* every line a comment, so that a multi-line message cannot break TAP */
    for (char *line = buf, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        if (!end) end = line + strlen(line) - 1;
        printf("# %.*s\n", (int)(end - line + (*end != '\n')), line);
    }
}

static inline int tap_done(void)
{
    printf("1..%d\n", tap__n);
    return tap__failed ? 1 : 0;
}

#endif /* TAP_H */
