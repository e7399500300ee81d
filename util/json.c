/*
 * json.c: parsing with line:column errors, dotted-path lookups, and the
 * PATH=VALUE overrides behind `--set`.
 */
#include "util.h"

#include <ctype.h>
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

static bool is_index(const char *seg)
{
    if (!*seg) return false;
    for (const char *p = seg; *p; p++)
        if (!isdigit((unsigned char)*p)) return false;
    return true;
}

/* Child of node named seg; creates an empty object when create is set and the
 * parent is an object that lacks it. */
static cJSON *step(cJSON *node, const char *seg, bool create)
{
    if (cJSON_IsArray(node) && is_index(seg)) return cJSON_GetArrayItem(node, atoi(seg));
    if (!cJSON_IsObject(node)) return NULL;
    cJSON *child = cJSON_GetObjectItemCaseSensitive(node, seg);
    if (!child && create) child = cJSON_AddObjectToObject(node, seg);
    return child;
}

static cJSON *parse_value(const char *text)
{
    cJSON *v = cJSON_ParseWithOpts(text, NULL, 1);
    return v ? v : cJSON_CreateString(text);
}

int util_json_set(cJSON *root, const char *assignment, util_diag *d)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return util_diag_add(d, "--set %s: expected PATH=VALUE", assignment);
    char *path = util_xasprintf("%.*s", (int)(eq - assignment), assignment);
    int rc = UTIL_OK;
    cJSON *node = root;
    char *seg = path;
    for (char *dot; (dot = strchr(seg, '.')); seg = dot + 1) {
        *dot = '\0';
        cJSON *next = step(node, seg, true);
        if (!next || !(cJSON_IsObject(next) || cJSON_IsArray(next))) {
            rc = util_diag_add(d, "--set %s: '%s' is not an object", assignment, seg);
            goto done;
        }
        node = next;
    }
    cJSON *value = parse_value(eq + 1);
    if (cJSON_IsArray(node) && is_index(seg)) {
        if (atoi(seg) >= cJSON_GetArraySize(node)) {
            cJSON_Delete(value);
            rc = util_diag_add(d, "--set %s: index %s is past the end of the array", assignment,
                               seg);
            goto done;
        }
        cJSON_ReplaceItemInArray(node, atoi(seg), value);
    } else if (!cJSON_IsObject(node) || !*seg) {
        cJSON_Delete(value);
        rc = util_diag_add(d, "--set %s: cannot set '%s' here", assignment, seg);
    } else if (cJSON_GetObjectItemCaseSensitive(node, seg)) {
        cJSON_ReplaceItemInObjectCaseSensitive(node, seg, value);
    } else {
        cJSON_AddItemToObject(node, seg, value);
    }
done:
    free(path);
    return rc;
}

const cJSON *util_json_get(const cJSON *root, const char *dotted_path)
{
    char *path = util_xstrdup(dotted_path);
    const cJSON *node = root;
    char *save = NULL;
    for (char *seg = strtok_r(path, ".", &save); seg && node; seg = strtok_r(NULL, ".", &save))
        node = step((cJSON *)node, seg, false);
    free(path);
    return node;
}

double util_json_number(const cJSON *root, const char *dotted_path, double dflt)
{
    const cJSON *n = util_json_get(root, dotted_path);
    return cJSON_IsNumber(n) ? n->valuedouble : dflt;
}
