/*
 * json.c: parsing with line:column errors, dotted-path lookups, and the
 * PATH=VALUE overrides behind `--set`.
 */
#include "util.h"

#include <limits.h>
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

int util_json_parse(const char *text, const char *origin, cJSON **out, util_diag *d)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        const char *at = end ? end : cJSON_GetErrorPtr();
        int line, col;
        line_col(text, at ? at : text, &line, &col);
        const char *what = (at && *at) ? "invalid JSON" : "invalid JSON (unexpected end of input)";
        return util_diag_add(d, "%s:%d:%d: %s", origin, line, col, what);
    }
    *out = root;
    return UTIL_OK;
}

int util_json_read_file(const char *path, cJSON **out, util_diag *d)
{
    char *text;
    int rc = util_read_file(path, &text, NULL, d);
    if (rc) return rc;
    rc = util_json_parse(text, path, out, d);
    free(text);
    return rc;
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
static char **split_path(const char *path, size_t len, int *n, const char *assignment,
                         util_diag *d)
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
    util_diag_add(d, "--set %s: %s", util_clip(assignment, &cb), why);
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
static int array_index(cJSON *node, char **segs, int at, const char *assignment, int *idx,
                       util_diag *d)
{
    util_clip_buf ca, cs;
    char *arr = prefix_of(segs, at);
    int n = cJSON_GetArraySize(node), rc = UTIL_OK;
    char *range = n ? util_xasprintf("%d item%s, 0 to %d", n, n == 1 ? "" : "s", n - 1)
                    : util_xstrdup("it is empty");
    if (!parse_index(segs[at], idx))
        rc = util_diag_add(d, "--set %s: %s is a list: expected an index (%s), got '%s'",
                           util_clip(assignment, &ca), arr, range, util_clip(segs[at], &cs));
    else if (*idx >= n)
        rc = util_diag_add(d, "--set %s: index %s is past the end of %s (%s)",
                           util_clip(assignment, &ca), util_clip(segs[at], &cs), arr, range);
    free(range);
    free(arr);
    return rc;
}

/* Walks segs[0 .. n - 1) from root, creating missing objects, to the node
 * that holds the last segment. */
static int walk_to(cJSON *root, char **segs, int n, const char *assignment, cJSON **out,
                   util_diag *d)
{
    util_clip_buf ca, cs;
    cJSON *node = root;
    for (int i = 0; i < n - 1; i++) {
        cJSON *next;
        int idx;
        if (cJSON_IsArray(node)) {
            if (array_index(node, segs, i, assignment, &idx, d)) return UTIL_EINPUT;
            next = cJSON_GetArrayItem(node, idx);
        } else {
            next = cJSON_GetObjectItemCaseSensitive(node, segs[i]);
            if (!next) next = cJSON_AddObjectToObject(node, segs[i]);
        }
        if (!cJSON_IsObject(next) && !cJSON_IsArray(next))
            return util_diag_add(d, "--set %s: '%s' is not an object", util_clip(assignment, &ca),
                                 util_clip(segs[i], &cs));
        node = next;
    }
    *out = node;
    return UTIL_OK;
}

int util_json_set(cJSON *root, const char *assignment, util_diag *d)
{
    util_clip_buf cb;
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return util_diag_add(d, "--set %s: expected PATH=VALUE", util_clip(assignment, &cb));
    int n;
    char **segs = split_path(assignment, (size_t)(eq - assignment), &n, assignment, d);
    if (!segs) return UTIL_EINPUT;
    cJSON *node = NULL;
    int rc = walk_to(root, segs, n, assignment, &node, d), idx;
    const char *last = segs[n - 1];
    if (!rc && cJSON_IsArray(node)) {
        rc = array_index(node, segs, n - 1, assignment, &idx, d);
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
