/*
 * util: the small base every servesim library stands on.
 *
 * It holds what models/, workloads/, sim/ and analysis/ all need and none of
 * them owns: the one allocation wrapper (out of memory aborts, so callers never
 * check for NULL), the error convention, a table-driven JSON validator, JSON
 * path overrides, the derivation of independent random streams from one
 * master seed, and two guards on what users give: input echoed in a message
 * is cut to a readable length, and line files are read from regular files
 * only, a line of bounded length at a time.
 *
 * Error convention.  A fallible function returns 0 or a negative UTIL_E*
 * status and appends one or more human-readable messages to a caller-owned
 * util_diag.  Messages start with their location (a JSON path such as
 * "workload.arrival.rate_per_s" or "file.json:3:14").  Libraries never print;
 * the command line prints the messages and maps the status to an exit code.
 *
 * Schemas.  A scenario section is described by a static table of util_field
 * (key, type, unit, default, range, documentation).  util_schema_apply()
 * checks a cJSON object against it, collects every error rather than the
 * first, suggests the closest key for a misspelt one, and fills defaults in
 * place, so the object left behind is the effective configuration.  The same
 * tables print the key reference (`servesim keys`), so docs and validation
 * cannot drift apart.
 */
#ifndef UTIL_H
#define UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_rng.h>

/* ---- status codes ------------------------------------------------------ */

enum {
    UTIL_OK = 0,
    UTIL_EFAIL = -1,  /* I/O, SQLite or another failure that is not the user's input */
    UTIL_EINPUT = -2, /* bad input: scenario, override, file; exit status 2 */
    UTIL_EINTR = -3,  /* stopped on request (Ctrl-C) */
};

/* ---- memory ------------------------------------------------------------ */

/* Allocation never fails from the caller's point of view: on exhaustion the
 * process prints one line and aborts, as redis's zmalloc does. */
void *util_xmalloc(size_t n);
void *util_xcalloc(size_t count, size_t size);
void *util_xrealloc(void *p, size_t n);
char *util_xstrdup(const char *s);
char *util_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *util_xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* ---- diagnostics ------------------------------------------------------- */

typedef struct util_diag {
    char **msgs; /* owned; each message is one line without a newline */
    int count;
    int cap;
} util_diag;

void util_diag_init(util_diag *d);
void util_diag_fini(util_diag *d);
void util_diag_clear(util_diag *d);
/* Appends a message; always returns UTIL_EINPUT so a caller can write
 * `return util_diag_add(d, ...)` for input errors. */
int util_diag_add(util_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends a message and returns UTIL_EFAIL: for failures that are not the
 * user's input (I/O, SQLite). */
int util_diag_fail(util_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Every message followed by a newline, as one string (caller frees). */
char *util_diag_join(const util_diag *d);
/* Prints every message as "prefix: message\n". */
void util_diag_print(const util_diag *d, FILE *f, const char *prefix);

/* ---- small helpers ----------------------------------------------------- */

/* Reads a whole small file (a scenario, a catalog) into a NUL-terminated
 * buffer.  Large inputs such as traces are streamed, never read this way.
 * A file beyond UTIL_MAX_FILE_BYTES (a trace named as a scenario), a
 * folder, or anything not a regular file (a FIFO, whose open would wait
 * for a writer for ever; a device such as /dev/zero) is an input error. */
#define UTIL_MAX_FILE_BYTES (64 << 20)
/* workload.classes: the most a scenario may have (the schema's limit), and
 * the most a report reads of a stored one. */
#define UTIL_MAX_CLASSES 1000
int util_read_file(const char *path, char **out, size_t *len, util_diag *d);

/* How many columns text written to out has: $COLUMNS when set, else the
 * terminal's width when out is one, else fallback. */
int util_terminal_columns(FILE *out, int fallback);

/* Input echoed in a message (a key, a value, an id, a --set assignment, a
 * trace field) is cut to UTIL_CLIP_CHARS characters and "...", at a UTF-8
 * character boundary, with control characters shown as '?', so that a 10 MB
 * key or a binary field makes a readable one-line message.  The result is
 * text itself when it needs no change, else it is written into b. */
#define UTIL_CLIP_CHARS 60
typedef struct util_clip_buf {
    char s[4 * UTIL_CLIP_CHARS + 8];
} util_clip_buf;
const char *util_clip(const char *text, util_clip_buf *b);
/* A file name: kept whole up to UTIL_CLIP_PATH bytes (every path the system
 * can open is shorter), else cut as util_clip does. */
#define UTIL_CLIP_PATH 4096
const char *util_clip_path(const char *path, util_clip_buf *b);

/* ---- line-by-line files (traces) ---- */

/* A text file read a line at a time, with memory for one line: the trace
 * and empirical-distribution readers both use it.  Only regular files are
 * read -- a trace is read twice (checked when the scenario loads, then
 * replayed), which a pipe or a device cannot do, and a device such as
 * /dev/zero never ends.  A line is at most UTIL_LINE_MAX bytes (4 MiB: the
 * longest line of the shipped traces is 2,698 bytes, and a Mooncake line of
 * 4 MiB holds the hash ids of a prompt of some 200 million tokens) and has
 * no NUL byte (a binary file); either, or a read error, is an input error
 * "FILE:LINE: ...". */
#define UTIL_LINE_MAX (4 << 20)
typedef struct util_lines util_lines;
int util_lines_open(const char *path, util_lines **out, util_diag *d);
/* 1 with the next line in *line (NUL-terminated, without its "\n" or
 * "\r\n", nor a UTF-8 byte-order mark on the first; valid until the next
 * call) and its length in *len; 0 at the end
 * of the file; UTIL_EINPUT with a message otherwise. */
int util_lines_next(util_lines *l, char **line, size_t *len, util_diag *d);
/* The number of the line last returned (1 for the first). */
int64_t util_lines_number(const util_lines *l);
/* Adds "FILE:LINE: message" for the line last returned; returns UTIL_EINPUT. */
int util_lines_error(const util_lines *l, util_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Splits line in place at every sep: the first max fields' starts into
 * fields; returns how many there are (which may exceed max). */
int util_split(char *line, char sep, char **fields, int max);
void util_lines_close(util_lines *l);

/* The candidates word plausibly meant, at most max of them, into out;
 * returns how many (0 when none is close enough to be a plausible typo).
 * Candidates that begin with word come first and alone, shortest first
 * ("h100": h100-sxm, h100-pcie); else the one closest by edit distance.
 * candidates is NULL-terminated. */
int util_suggest(const char *word, const char *const *candidates, const char **out, int max);
/* The first of util_suggest's answers, or NULL. */
const char *util_closest(const char *word, const char *const *candidates);
/* The most suggestions a message lists. */
#define UTIL_SUGGEST_MAX 4
/* "did you mean 'x'?", "did you mean 'x' or 'y'?" (util_suggest's answers,
 * at most UTIL_SUGGEST_MAX), or NULL when nothing is close; caller frees. */
char *util_did_you_mean(const char *word, const char *const *candidates);
/* Adds "PATH: unknown WHAT 'word' (did you mean 'x'? known: a, b)", or
 * "(known: a, b)" when nothing is close; returns UTIL_EINPUT. */
int util_diag_unknown(util_diag *d, const char *path, const char *what, const char *word,
                      const char *const *known);

/* The folder part of a path ("." when it has none); caller frees. */
char *util_dirname(const char *path);
/* path itself when absolute or dir is NULL, else dir/path; caller frees. */
char *util_path_join(const char *dir, const char *path);

/* Monotonic wall clock in seconds, for progress lines and wall_s. */
double util_wall_s(void);

/* ---- records back in the order of their ids (idring.c) ---------------- */

/* Records of `size` bytes, each with a distinct id >= 0, put in any order
 * and handed to an emit callback in increasing id order (while the ring
 * holds at most max records ahead: see idring.c).  emit's non-zero result
 * stops a put or a flush and is returned. */
typedef int (*util_idring_fn)(void *ctx, const void *rec);
typedef struct util_idring {
    unsigned char *slots; /* cap records: the one of id i at i mod cap */
    bool *held;
    size_t size;
    int64_t cap, max;     /* powers of 2 */
    int64_t next;         /* the id handed on next */
    int64_t n_held;
} util_idring;
void util_idring_init(util_idring *r, size_t size, int64_t min_cap, int64_t max_cap);
void util_idring_fini(util_idring *r);
/* id_of reads a held record's id (to place it when the ring grows). */
int util_idring_put(util_idring *r, int64_t id, const void *rec, int64_t (*id_of)(const void *),
                    util_idring_fn emit, void *ctx);
/* Hands on every held record, in id order, past missing ids. */
int util_idring_flush(util_idring *r, util_idring_fn emit, void *ctx);

/* ---- random streams ---------------------------------------------------- */

/* A GSL generator (MT19937) seeded from mix(master, stream).  Each simulated
 * component owns one stream, so adding a replica or changing a length
 * distribution leaves every other component's draws unchanged (common random
 * numbers).  Free with gsl_rng_free(). */
gsl_rng *util_rng_stream(uint64_t master_seed, uint64_t stream_id);
uint64_t util_mix64(uint64_t x);

/* ---- JSON -------------------------------------------------------------- */

/* Parses text; on a syntax error reports "origin:LINE:COL: ..." .  A
 * string or key holding a NUL (the escape \u0000, which cJSON would cut the
 * string short at) is refused, named by its path: "origin: name: ...". */
int util_json_parse(const char *text, const char *origin, cJSON **out, util_diag *d);
/* The same from a file (a NUL byte in it refused too). */
int util_json_read_file(const char *path, cJSON **out, util_diag *d);
/* As util_json_read_file, letting \u0000 through (the string cut short):
 * for a tool's output (a benchmark's results), whose texts servesim never
 * uses, and which a model's reply holding a NUL must not make unreadable. */
int util_json_read_data(const char *path, cJSON **out, util_diag *d);
/* UTIL_EINPUT, naming each string and key of the JSON text that holds a
 * NUL (\u0000) as "origin: PATH.KEY: ..." (path: where the text sits, ""
 * for a whole document; origin may be NULL); UTIL_OK when none does. */
int util_json_refuse_nul(const char *text, const char *origin, const char *path, util_diag *d);

/* Applies an override "a.b.c=VALUE" (list items by index, "a.0.b" or "a[0].b",
 * the index decimal digits naming an existing item):
 * VALUE is read as JSON, else taken as a string.  Missing objects along the
 * path are created; validation later rejects keys that do not belong. */
int util_json_set(cJSON *root, const char *assignment, util_diag *d);
/* Removes the key (or list item) at path, addressed as util_json_set's; a
 * path that is not there is an error naming the first missing key, with a
 * did-you-mean from the keys beside it. */
int util_json_unset(cJSON *root, const char *path, util_diag *d);

/* The member key of object o (case-sensitive), or NULL. */
const cJSON *util_json_member(const cJSON *o, const char *key);
/* The index in names (NULL-terminated) of the string at o[key]: for a key
 * the schema has checked to be one of them (its choices); the length of
 * names when it is not. */
int util_json_choice(const cJSON *o, const char *key, const char *const *names);

/* Number at a dotted path, or dflt when absent or not a number. */
double util_json_number(const cJSON *root, const char *dotted_path, double dflt);
const cJSON *util_json_get(const cJSON *root, const char *dotted_path);

/* ---- schemas ----------------------------------------------------------- */

typedef enum util_type {
    UTIL_T_NUMBER,         /* finite number, range-checked when min < max */
    UTIL_T_INTEGER,        /* whole number, range-checked when min < max; with choices, one
                            * of their names instead */
    UTIL_T_STRING,         /* one of choices when given; check() may look it up */
    UTIL_T_BOOL,           /* true or false */
    UTIL_T_OBJECT,         /* nested object described by sub */
    UTIL_T_UNION,          /* object whose tag key picks a variant, or a number (see util_union) */
    UTIL_T_NAME_OR_OBJECT, /* a name checked by check(), or an inline object described by sub */
    UTIL_T_NUMBERS,        /* an array of finite numbers; its length within [min, max] when max > 0 */
    UTIL_T_LIST,           /* an array of objects, each described by sub; length as for NUMBERS */
    UTIL_T_STRINGS,        /* an array of distinct strings, each one of choices; length as for
                            * NUMBERS */
} util_type;

enum {
    UTIL_REQUIRED = 1u << 0,      /* absent is an error (no default) */
    UTIL_MIN_EXCLUSIVE = 1u << 1, /* value must be > min rather than >= min */
    UTIL_INF_OK = 1u << 2,        /* NUMBER: the string "inf" stands for infinity too */
};

typedef struct util_field util_field;
typedef struct util_union util_union;

/* Extra check for a field (a catalog lookup, a cross-field rule), run after
 * the field's own type and keys passed: returns 0 or adds a message naming
 * path and returns UTIL_EINPUT.  It may fill in values derived from others. */
typedef int (*util_check_fn)(cJSON *item, const char *path, void *ctx, util_diag *d);

struct util_field {
    const char *key;
    util_type type;
    const char *unit;            /* "s", "tokens", "1/s", ... or NULL */
    const char *def;             /* default as JSON text, or NULL */
    double min, max;             /* inclusive range for numbers when min < max;
                                  * for NUMBERS and LIST, of the array's length when max > 0 */
    unsigned flags;              /* UTIL_REQUIRED, UTIL_MIN_EXCLUSIVE */
    const char *const *choices;  /* NULL-terminated allowed strings, or NULL */
    const util_field *sub;       /* fields of OBJECT / NAME_OR_OBJECT / LIST items, {NULL}-terminated */
    const util_union *un;        /* variants of a UNION */
    util_check_fn check;         /* optional extra check */
    const char *doc;             /* one line for the key reference */
    const char *conflicts;       /* a key that may not be set beside this one (its full
                                  * path, for the key reference; the check is the
                                  * reader's), or NULL */
};

typedef struct util_variant {
    const char *name;
    const util_field *fields; /* {NULL}-terminated; may be NULL for none */
    const char *doc;
} util_variant;

struct util_union {
    const char *tag;             /* the key that names the variant: "dist", "process", "kind" */
    const char *def;             /* default variant name, or NULL when the tag is required */
    const util_field *common;    /* keys every variant accepts, or NULL */
    const util_variant *variants; /* {NULL}-terminated */
    /* The variant a bare number stands for, and its key the number fills
     * (wl_dist_schema: 2 means {"dist": "fixed", "value": 2}); NULL when a
     * value must be an object.  util_schema_apply writes the object in the
     * number's place. */
    const char *scalar, *scalar_key;
};

/* Validates obj against fields (an object schema) at path, filling defaults
 * in place.  Every error found is added to d; returns 0 or UTIL_EINPUT. */
int util_schema_apply(const util_field *fields, cJSON *obj, const char *path, void *ctx,
                      util_diag *d);
/* Validates obj as one value of a union. */
int util_schema_apply_union(const util_union *un, cJSON *obj, const char *path, void *ctx,
                            util_diag *d);

/* Writes the key reference as Markdown table rows: path | type | unit |
 * default | range | meaning.  prefix is the dotted path of fields' object. */
void util_schema_doc(const util_field *fields, const char *prefix, FILE *out);
/* The unit the schema gives the key at a dotted path ("s", "1/s"), or NULL. */
const char *util_schema_unit(const util_field *fields, const char *path);
#endif /* UTIL_H */
