/*
 * json.c: parsing with line:column errors, dotted-path lookups, and the
 * PATH=VALUE overrides behind `--set`.
 */
#include "util.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void line_col(const char *text, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (const char *p = text; p < at && *p; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* ---- why a parse failed ---- */

/* cJSON says where it stopped, not why, and it sometimes stops past the
 * mistake (at the end of the input for a trailing comma).  So a failed parse
 * is read again by this checker, which walks the same grammar and names the
 * first mistake and its place.  It is no stricter than cJSON (leading zeros
 * and raw control characters in strings pass), so it never blames text that
 * cJSON accepted; what cJSON alone refuses keeps cJSON's position. */
typedef struct json_check {
    const char *text, *p; /* the input; the next character to read */
    const char *open;     /* the innermost '{' or '[' not yet closed */
    const char *at;       /* the mistake, once found */
    char why[256];
} json_check;

static bool check_value(json_check *c, int depth);

__attribute__((format(printf, 3, 4))) static bool fail_at(json_check *c, const char *at,
                                                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
    c->at = at;
    return false;
}

static void skip_space(json_check *c)
{
    while (*c->p && (unsigned char)*c->p <= ' ') c->p++; /* as cJSON's buffer_skip_whitespace */
}

/* What stands at p, for "found ...": a word whole, a character quoted. */
static const char *found(const char *p, char buf[32])
{
    size_t n = 0;
    while (n < 16 && (p[n] == '_' || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') ||
                      (n && p[n] >= '0' && p[n] <= '9')))
        n++;
    if (!*p) snprintf(buf, 32, "the end of the input");
    else if (*p == '\'') snprintf(buf, 32, "\"'\"");
    else if (n) snprintf(buf, 32, "'%.*s'", (int)n, p);
    else if ((unsigned char)*p > ' ' && (unsigned char)*p < 0x7f) snprintf(buf, 32, "'%c'", *p);
    else snprintf(buf, 32, "byte 0x%02x", (unsigned char)*p);
    return buf;
}

/* "the '{' at 3:5 is not closed", in buf. */
static const char *not_closed(const json_check *c, const char *open, char buf[64])
{
    int line, col;
    line_col(c->text, open, &line, &col);
    snprintf(buf, 64, "the '%c' at %d:%d is not closed", *open, line, col);
    return buf;
}

static bool at_end(json_check *c)
{
    char b[64];
    if (!c->open)
        return fail_at(c, c->p, "unexpected end of input%s",
                       c->p == c->text + strspn(c->text, " \t\r\n") ? " (the input is empty)" : "");
    return fail_at(c, c->p, "unexpected end of input (%s)", not_closed(c, c->open, b));
}

static bool check_string(json_check *c)
{
    const char *open = c->p++;
    for (; *c->p != '"'; c->p++) {
        if (!*c->p) return fail_at(c, open, "unterminated string (no closing '\"')");
        if (*c->p != '\\') continue;
        const char *esc = c->p++;
        if (!*c->p) return fail_at(c, open, "unterminated string (no closing '\"')");
        if (*c->p == 'u') {
            for (int i = 1; i <= 4; i++)
                if (!strchr("0123456789abcdefABCDEF", c->p[i]) || !c->p[i])
                    return fail_at(c, esc,
                                   "invalid escape in a string ('\\u' takes four hex digits)");
            c->p += 4;
        } else if (!strchr("\"\\/bfnrt", *c->p)) {
            return fail_at(c, esc, "invalid escape '\\%c' in a string (JSON has \\\" \\\\ \\/ \\b "
                                   "\\f \\n \\r \\t \\uXXXX)", *c->p);
        }
    }
    c->p++;
    return true;
}

/* The characters cJSON hands to strtod; all of them must make the number,
 * since none of them may follow a value. */
static bool check_number(json_check *c)
{
    size_t n = strspn(c->p, "0123456789+-eE.");
    char buf[64], *end;
    if (n < sizeof buf) {
        memcpy(buf, c->p, n);
        buf[n] = '\0';
        if (strtod(buf, &end), end == buf + n) return c->p += n, true;
    }
    return fail_at(c, c->p, "malformed number '%.*s%s'", n > 24 ? 24 : (int)n, c->p,
                   n > 24 ? "..." : "");
}

static bool no_value(json_check *c)
{
    char b[32];
    const char *p = c->p, *hint = "";
    if (!*p) return at_end(c);
    if (*p == '\'') hint = " (JSON strings take double quotes)";
    else if (*p == '/') hint = " (JSON has no comments)";
    else if (*p == '.' || *p == '+') hint = " (a number starts with a digit or '-': 0.5)";
    else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
        hint = " (JSON's words are true, false and null)";
    return fail_at(c, p, "expected a value, found %s%s", found(p, b), hint);
}

/* After an element or member, at neither ',' nor its closer. */
static bool after_item(json_check *c, const char *what, char closer)
{
    char b[64];
    if (!*c->p) return at_end(c);
    if (*c->p == '}' || *c->p == ']') /* the wrong closer: say which opener it leaves open */
        return fail_at(c, c->p, "expected ',' or '%c' after %s, found '%c' (%s)", closer, what,
                       *c->p, not_closed(c, c->open, b));
    const char *hint = *c->p == '"' || *c->p == '{' || *c->p == '[' ? " (a comma missing?)" : "";
    return fail_at(c, c->p, "expected ',' or '%c' after %s, found %s%s", closer, what,
                   found(c->p, b), hint);
}

static bool check_key(json_check *c)
{
    char b[32];
    skip_space(c);
    const char *key = c->p;
    if (!*key) return at_end(c);
    if (*key != '"')
        return fail_at(c, key, "expected a key in double quotes, found %s", found(key, b));
    if (!check_string(c)) return false;
    int n = (int)(c->p - key);
    skip_space(c);
    if (*c->p == ':') return c->p++, true;
    if (!*c->p) return at_end(c);
    return fail_at(c, c->p, "expected ':' after the key %.*s%s, found %s", n > 40 ? 39 : n, key,
                   n > 40 ? "...\"" : "", found(c->p, b));
}

/* Placed at the closer, where cJSON stops in an array, and so a line below
 * the comma when the closer has a line of its own: then it says where. */
static bool trailing_comma(json_check *c, const char *comma)
{
    int line, col, closer_line, closer_col;
    line_col(c->text, comma, &line, &col);
    line_col(c->text, c->p, &closer_line, &closer_col);
    if (line == closer_line)
        return fail_at(c, c->p, "a trailing comma before '%c' (JSON allows none)", *c->p);
    return fail_at(c, c->p, "a trailing comma at %d:%d before '%c' (JSON allows none)", line, col,
                   *c->p);
}

/* An object or an array, c->p at its opener. */
static bool check_container(json_check *c, int depth)
{
    const char *outer = c->open;
    char closer = *c->p == '{' ? '}' : ']';
    c->open = c->p++;
    skip_space(c);
    while (*c->p != closer) {
        if (closer == '}' ? !check_key(c) || !check_value(c, depth) : !check_value(c, depth))
            return false;
        skip_space(c);
        if (*c->p == closer) break;
        if (*c->p != ',') return after_item(c, closer == '}' ? "a member" : "an element", closer);
        const char *comma = c->p++;
        skip_space(c);
        if (*c->p == closer) return trailing_comma(c, comma);
    }
    c->p++;
    c->open = outer;
    return true;
}

static bool check_value(json_check *c, int depth)
{
    static const char *const words[] = {"true", "false", "null"};
    skip_space(c);
    const char *p = c->p;
    if (*p == '{' || *p == '[') {
        if (depth >= CJSON_NESTING_LIMIT)
            return fail_at(c, p, "nested more than %d deep", CJSON_NESTING_LIMIT);
        return check_container(c, depth + 1);
    }
    if (*p == '"') return check_string(c);
    if (*p == '-' || (*p >= '0' && *p <= '9')) return check_number(c);
    for (int i = 0; i < 3; i++)
        if (!strncmp(p, words[i], strlen(words[i]))) return c->p += strlen(words[i]), true;
    return no_value(c);
}

/* false with the first mistake in c, or true if the checker finds none. */
static bool check_document(json_check *c)
{
    char b[32];
    if (!check_value(c, 0)) return false;
    skip_space(c);
    if (!*c->p) return true;
    const char *hint = *c->p == '}' || *c->p == ']' ? " (one too many?)" : "";
    return fail_at(c, c->p, "unexpected %s after the end of the document%s", found(c->p, b), hint);
}

/* ---- NUL in a string ---- */

/* cJSON decodes the escape \u0000 into the NUL that ends a C string, so
 * "a\u0000b" would be read as "a", silently.  A string or key that holds
 * one is refused instead, named by its path: the text is parsed again with
 * each such escape replaced by a marker no input writes, and the strings
 * holding the marker are the ones named. */
#define NUL_MARK "\\u0001servesim:NUL\\u0001" /* as JSON text */
#define NUL_SEEN "\001servesim:NUL\001"      /* as cJSON decodes it */

/* Where the first \u0000 escape inside a string of text starts, or NULL. */
static const char *nul_escape(const char *text)
{
    bool in = false;
    for (const char *p = text; *p; p++) {
        if (!in) {
            in = *p == '"';
        } else if (*p == '"') {
            in = false;
        } else if (*p == '\\') {
            if (p[1] == 'u' && !strncmp(p + 2, "0000", 4)) return p;
            if (p[1]) p++; /* the escaped character: \\u0000 is a backslash and "u0000" */
        }
    }
    return NULL;
}

/* s with every from replaced by to (caller frees). */
static char *replace_all(const char *s, const char *from, const char *to)
{
    size_t nf = strlen(from), nt = strlen(to), n = 0;
    for (const char *p = s; (p = strstr(p, from)); p += nf) n++;
    char *out = util_xmalloc(strlen(s) + n * nt + 1), *o = out;
    for (const char *p; (p = strstr(s, from)); s = p + nf) {
        memcpy(o, s, (size_t)(p - s));
        o += p - s;
        memcpy(o, to, nt);
        o += nt;
    }
    strcpy(o, s);
    return out;
}

/* Names each string and key under node that holds the marker. */
static void name_nuls(const cJSON *node, const char *path, const char *origin, util_diag *d)
{
    int i = 0;
    for (const cJSON *c = node->child; c; c = c->next, i++) {
        char *key = c->string ? replace_all(c->string, NUL_SEEN, "\\u0000") : NULL;
        char *at = key ? (*path ? util_xasprintf("%s.%s", path, key) : util_xstrdup(key))
                       : util_xasprintf("%s[%d]", path, i);
        if (key && strstr(c->string, NUL_SEEN))
            util_diag_add(d, "%s%s%s: a key holds a NUL character (\\u0000), which would cut it "
                             "short",
                          origin ? origin : "", origin ? ": " : "", at);
        if (cJSON_IsString(c) && strstr(c->valuestring, NUL_SEEN))
            util_diag_add(d, "%s%s%s: a string holds a NUL character (\\u0000), which would cut "
                             "it short",
                          origin ? origin : "", origin ? ": " : "", at);
        name_nuls(c, at, origin, d);
        free(at);
        free(key);
    }
}

int util_json_refuse_nul(const char *text, const char *origin, const char *path, util_diag *d)
{
    if (!nul_escape(text)) return UTIL_OK;
    int before = d->count;
    char *marked = replace_all(text, "\\u0000", NUL_MARK);
    cJSON *root = cJSON_ParseWithOpts(marked, NULL, 1);
    if (cJSON_IsString(root) && strstr(root->valuestring, NUL_SEEN))
        util_diag_add(d, "%s%s%s: a string holds a NUL character (\\u0000), which would cut it "
                         "short",
                      origin ? origin : "", origin ? ": " : "", path);
    else if (root)
        name_nuls(root, path, origin, d);
    cJSON_Delete(root);
    free(marked);
    if (d->count > before) return UTIL_EINPUT;
    /* \\u0000 outside a string is no escape, and cJSON refused that text */
    return UTIL_OK;
}

static int parse(const char *text, const char *origin, bool nul_ok, cJSON **out, util_diag *d)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        json_check c = {.text = text, .p = text};
        if (check_document(&c)) { /* cJSON alone refused it (a lone surrogate \ud800, say) */
            util_clip_buf b;
            c.at = end ? end : cJSON_GetErrorPtr();
            if (!c.at) c.at = text;
            snprintf(c.why, sizeof c.why, "near '%s'", util_clip(c.at, &b));
        }
        int line, col;
        line_col(text, c.at, &line, &col);
        return util_diag_add(d, "%s:%d:%d: invalid JSON: %s", origin, line, col, c.why);
    }
    if (!nul_ok && util_json_refuse_nul(text, origin, "", d)) {
        cJSON_Delete(root);
        return UTIL_EINPUT;
    }
    *out = root;
    return UTIL_OK;
}

int util_json_parse(const char *text, const char *origin, cJSON **out, util_diag *d)
{
    return parse(text, origin, false, out, d);
}

/* The file's text, with a NUL byte in it refused: JSON has none, and cJSON
 * would take the text before it as the whole document. */
static int read_json(const char *path, bool nul_ok, cJSON **out, util_diag *d)
{
    char *text;
    size_t len;
    int rc = util_read_file(path, &text, &len, d);
    if (rc) return rc;
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        int line, col;
        line_col(text, nul, &line, &col);
        rc = util_diag_add(d, "%s:%d:%d: invalid JSON: a NUL byte (not a text file?)", path, line,
                           col);
    } else {
        rc = parse(text, path, nul_ok, out, d);
    }
    free(text);
    return rc;
}

int util_json_read_file(const char *path, cJSON **out, util_diag *d)
{
    return read_json(path, false, out, d);
}

int util_json_read_data(const char *path, cJSON **out, util_diag *d)
{
    return read_json(path, true, out, d);
}

/* An array index: decimal digits only (no sign, no space), its value in
 * *out, saturated at INT_MAX so that 4294967297 is past the end rather than
 * 1 (atoi's wrap-around). */
static bool parse_index(const char *seg, int *out)
{
    if (!*seg) return false;
    long long v = 0;
    for (const char *p = seg; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        if (v <= INT_MAX) v = v * 10 + (*p - '0');
    }
    *out = v > INT_MAX ? INT_MAX : (int)v;
    return true;
}

/* Child of node named seg, or NULL; lookups only. */
static cJSON *step(cJSON *node, const char *seg)
{
    int i;
    if (cJSON_IsArray(node)) return parse_index(seg, &i) ? cJSON_GetArrayItem(node, i) : NULL;
    return cJSON_IsObject(node) ? cJSON_GetObjectItemCaseSensitive(node, seg) : NULL;
}

static cJSON *parse_value(const char *text)
{
    cJSON *v = cJSON_ParseWithOpts(text, NULL, 1);
    return v ? v : cJSON_CreateString(text);
}


/* The path of an assignment as segments: "a.b[2].c" and "a.b.2.c" are both
 * {a, b, 2, c} (`servesim keys` prints list items with brackets).  NULL with
 * a message for an empty segment or a bracket that holds no index. */
static char **split_path(const char *path, size_t len, int *n, const char *opt,
                         const char *assignment, util_diag *d)
{
    char **segs = util_xcalloc(len + 2, sizeof *segs);
    const char *why = NULL;
    size_t i = 0;
    *n = 0;
    while (!why) {
        size_t k = strcspn(path + i, ".[");
        if (i + k > len) k = len - i;
        if (k == 0 && !(*n > 0 && path[i - 1] == ']')) why = "an empty key in the path";
        if (k) segs[(*n)++] = util_xasprintf("%.*s", (int)k, path + i);
        i += k;
        if (why || i == len) break;
        if (path[i] == '.') {
            i++;
            if (i == len) why = "an empty key in the path";
            continue;
        }
        size_t digits = strspn(path + i + 1, "0123456789");
        if (!digits || i + 1 + digits >= len || path[i + 1 + digits] != ']') {
            why = "a bracket holds an index, as in workload.classes[0].weight";
            break;
        }
        segs[(*n)++] = util_xasprintf("%.*s", (int)digits, path + i + 1);
        i += digits + 2;
        if (i < len && path[i] != '.' && path[i] != '[') why = "expected '.' or '[' after ']'";
        else if (i < len && path[i] == '.') i++;
    }
    if (!why) return segs;
    util_clip_buf cb;
    util_diag_add(d, "%s %s: %s", opt, util_clip(assignment, &cb), why);
    for (int j = 0; j < *n; j++) free(segs[j]);
    free(segs);
    return NULL;
}

/* segs[0 .. n) joined by dots, for messages. */
static char *prefix_of(char **segs, int n)
{
    char *p = util_xstrdup("");
    for (int i = 0; i < n; i++) {
        char *q = util_xasprintf("%s%s%s", p, i ? "." : "", segs[i]);
        free(p);
        p = q;
    }
    return p;
}

/* The index segs[at] of the array node: 0 with it in *idx, or a message
 * naming the array.  Only existing items can be addressed (no appending: a
 * list is given whole as a JSON value). */
static int array_index(cJSON *node, char **segs, int at, const char *opt, const char *assignment,
                       int *idx, util_diag *d)
{
    util_clip_buf ca, cs;
    char *arr = prefix_of(segs, at);
    int n = cJSON_GetArraySize(node), rc = UTIL_OK;
    char *range = n ? util_xasprintf("%d item%s, 0 to %d", n, n == 1 ? "" : "s", n - 1)
                    : util_xstrdup("it is empty");
    if (!parse_index(segs[at], idx))
        rc = util_diag_add(d, "%s %s: %s is a list: expected an index (%s), got '%s'", opt,
                           util_clip(assignment, &ca), arr, range, util_clip(segs[at], &cs));
    else if (*idx >= n)
        rc = util_diag_add(d, "%s %s: index %s is past the end of %s (%s)", opt,
                           util_clip(assignment, &ca), util_clip(segs[at], &cs), arr, range);
    free(range);
    free(arr);
    return rc;
}

/* "OPT PATH: no key 'k' in a.b (did you mean 'x'?)": segs[at] is not a
 * member of the object node. */
static int no_key(const cJSON *node, char **segs, int at, const char *opt, const char *path,
                  util_diag *d)
{
    util_clip_buf cp, cs;
    int n = cJSON_GetArraySize(node), k = 0;
    const char **keys = util_xcalloc((size_t)n + 1, sizeof *keys);
    for (const cJSON *c = node->child; c; c = c->next)
        if (c->string) keys[k++] = c->string;
    char *where = at ? prefix_of(segs, at) : util_xstrdup("the scenario");
    char *hint = util_did_you_mean(segs[at], keys);
    int rc = util_diag_add(d, "%s %s: no key '%s' in %s%s%s%s", opt, util_clip(path, &cp),
                           util_clip(segs[at], &cs), where, hint ? " (" : "", hint ? hint : "",
                           hint ? ")" : "");
    free(hint);
    free(where);
    free(keys);
    return rc;
}

/* Walks segs[0 .. n - 1) from root to the node that holds the last segment,
 * creating missing objects when create is set (--set), else naming the first
 * missing key (--unset). */
static int walk_to(cJSON *root, char **segs, int n, const char *opt, const char *assignment,
                   bool create, cJSON **out, util_diag *d)
{
    util_clip_buf ca, cs;
    cJSON *node = root;
    for (int i = 0; i < n - 1; i++) {
        cJSON *next;
        int idx;
        if (cJSON_IsArray(node)) {
            if (array_index(node, segs, i, opt, assignment, &idx, d)) return UTIL_EINPUT;
            next = cJSON_GetArrayItem(node, idx);
        } else {
            next = cJSON_GetObjectItemCaseSensitive(node, segs[i]);
            if (!next && !create) return no_key(node, segs, i, opt, assignment, d);
            if (!next) next = cJSON_AddObjectToObject(node, segs[i]);
        }
        if (!cJSON_IsObject(next) && !cJSON_IsArray(next))
            return util_diag_add(d, "%s %s: '%s' is not an object", opt, util_clip(assignment, &ca),
                                 util_clip(segs[i], &cs));
        node = next;
    }
    *out = node;
    return UTIL_OK;
}

/* A --set value that is JSON holding a NUL (\u0000) in a string, refused
 * with the path the string would have. */
static int refuse_nul_value(const char *assignment, const char *value, char **segs, int n,
                            util_diag *d)
{
    cJSON *v = cJSON_ParseWithOpts(value, NULL, 1);
    int rc = UTIL_OK;
    if (v) {
        util_clip_buf cb;
        char *path = prefix_of(segs, n);
        char *opt = util_xasprintf("--set %s", util_clip(assignment, &cb));
        rc = util_json_refuse_nul(value, opt, path, d);
        free(opt);
        free(path);
    }
    cJSON_Delete(v);
    return rc;
}

int util_json_set(cJSON *root, const char *assignment, util_diag *d)
{
    util_clip_buf cb;
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return util_diag_add(d, "--set %s: expected PATH=VALUE", util_clip(assignment, &cb));
    int n;
    char **segs = split_path(assignment, (size_t)(eq - assignment), &n, "--set", assignment, d);
    if (!segs) return UTIL_EINPUT;
    cJSON *node = NULL;
    int rc = refuse_nul_value(assignment, eq + 1, segs, n, d), idx;
    if (!rc) rc = walk_to(root, segs, n, "--set", assignment, true, &node, d);
    const char *last = segs[n - 1];
    if (!rc && cJSON_IsArray(node)) {
        rc = array_index(node, segs, n - 1, "--set", assignment, &idx, d);
        if (!rc) cJSON_ReplaceItemInArray(node, idx, parse_value(eq + 1));
    } else if (!rc) {
        cJSON *value = parse_value(eq + 1);
        if (cJSON_GetObjectItemCaseSensitive(node, last))
            cJSON_ReplaceItemInObjectCaseSensitive(node, last, value);
        else
            cJSON_AddItemToObject(node, last, value);
    }
    for (int i = 0; i < n; i++) free(segs[i]);
    free(segs);
    return rc;
}

int util_json_unset(cJSON *root, const char *path, util_diag *d)
{
    util_clip_buf cb;
    if (!*path || strchr(path, '='))
        return util_diag_add(d, "--unset %s: expected a PATH (no =VALUE)", util_clip(path, &cb));
    int n;
    char **segs = split_path(path, strlen(path), &n, "--unset", path, d);
    if (!segs) return UTIL_EINPUT;
    cJSON *node = NULL;
    int rc = walk_to(root, segs, n, "--unset", path, false, &node, d), idx;
    const char *last = segs[n - 1];
    if (!rc && cJSON_IsArray(node)) {
        rc = array_index(node, segs, n - 1, "--unset", path, &idx, d);
        if (!rc) cJSON_DeleteItemFromArray(node, idx);
    } else if (!rc && !cJSON_GetObjectItemCaseSensitive(node, last)) {
        rc = no_key(node, segs, n - 1, "--unset", path, d);
    } else if (!rc) {
        cJSON_DeleteItemFromObjectCaseSensitive(node, last);
    }
    for (int i = 0; i < n; i++) free(segs[i]);
    free(segs);
    return rc;
}

const cJSON *util_json_get(const cJSON *root, const char *dotted_path)
{
    char *path = util_xstrdup(dotted_path);
    const cJSON *node = root;
    char *save = NULL;
    for (char *seg = strtok_r(path, ".", &save); seg && node; seg = strtok_r(NULL, ".", &save))
        node = step((cJSON *)node, seg);
    free(path);
    return node;
}

double util_json_number(const cJSON *root, const char *dotted_path, double dflt)
{
    const cJSON *n = util_json_get(root, dotted_path);
    return cJSON_IsNumber(n) ? n->valuedouble : dflt;
}

const cJSON *util_json_member(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

int util_json_choice(const cJSON *o, const char *key, const char *const *names)
{
    const char *name = cJSON_GetStringValue(util_json_member(o, key));
    int i = 0;
    while (names[i] && (!name || strcmp(names[i], name))) i++;
    return i;
}
