/*
 * values.c: the values of a varied key -- `1,2,4,8`, `2:40:2`, `1:256:x2`,
 * `h100-sxm,a100-80gb` -- as a JSON array.
 */
#include "pl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES 100000

/* An item of a list: JSON if the whole item parses as a JSON value, else a
 * string, as --set reads values (`2x` is the string, not the number 2). */
static cJSON *item(const char *text, size_t len)
{
    char *s = util_xmalloc(len + 1);
    memcpy(s, text, len);
    s[len] = '\0';
    cJSON *v = cJSON_ParseWithOpts(s, NULL, true);
    if (!v) v = cJSON_CreateString(s);
    free(s);
    return v;
}

/* A JSON item holding a NUL (\u0000) in a string, which would cut it short:
 * refused as --set refuses one, naming the path (the first path_len
 * characters of arg). */
static int nul_in(const char *opt, const char *arg, size_t path_len, const char *text, size_t len,
                  util_diag *d)
{
    char *s = util_xasprintf("%.*s", (int)len, text);
    char *path = util_xasprintf("%.*s", (int)path_len, arg);
    char *where = util_xasprintf("%s %s", opt, arg);
    int rc = util_json_refuse_nul(s, where, path, d);
    free(where);
    free(path);
    free(s);
    return rc;
}

static bool number(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return end != s && !*end && isfinite(*out);
}

/* Every refusal of a range ends with the forms that are accepted: a range
 * that reads as something else (2:10 as the number 2) must never run. */
static int refuse(util_diag *d, const char *opt, const char *arg, const char *why)
{
    return util_diag_add(d, "%s %s: %s; the forms are START:STOP:STEP (2:10:2) or "
                            "START:STOP:xFACTOR (1:256:x2), both ends included, or a list of "
                            "values (2,4,8)",
                         opt, arg, why);
}

/* A value with a colon is a range unless it is a list (a comma) or JSON (an
 * object, an array or a quoted string): list items may hold colons. */
static bool looks_like_range(const char *values)
{
    return strchr(values, ':') && !strchr(values, ',') && !strchr("{[\"", values[0]);
}

/* START, STOP and STEP as text: false unless there are exactly three,
 * none empty. */
static bool split3(const char *values, char part[3][64], int *n)
{
    *n = 0;
    for (const char *p = values;; (*n)++) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (*n < 3 && len < 64) {
            memcpy(part[*n], p, len);
            part[*n][len] = '\0';
        }
        if (!colon) break;
        p = colon + 1;
    }
    (*n)++;
    if (*n != 3) return false;
    for (int i = 0; i < 3; i++)
        if (!part[i][0] || strlen(part[i]) >= 63) return false;
    return true;
}

/* The values from lo to hi (both included, with slack for a step's
 * rounding) by step, or times it: -1 past MAX_VALUES. */
static int fill(double lo, double hi, double step, bool geometric, cJSON *out)
{
    for (int i = 0;; i++) {
        double v = geometric ? lo * pow(step, i) : lo + i * step;
        if (v > hi * (1 + 1e-12) + 1e-12) return i;
        if (i == MAX_VALUES) return -1;
        cJSON_AddItemToArray(out, cJSON_CreateNumber(v));
    }
}

/* start:stop:step or start:stop:xFACTOR; 0 when values is not a range. */
static int range(const char *opt, const char *arg, const char *values, cJSON *out, util_diag *d)
{
    if (!looks_like_range(values)) return 0;
    char part[3][64] = {{0}}, why[256];
    int n;
    if (!split3(values, part, &n))
        return refuse(d, opt, arg, n == 2 && part[0][0] && part[1][0]
                                       ? "a range needs a step"
                                       : "a range needs START, STOP and a step");
    bool geometric = part[2][0] == 'x';
    double lo, hi, step;
    for (int i = 0; i < 3; i++) {
        double *v = i == 0 ? &lo : i == 1 ? &hi : &step;
        if (!number(part[i] + (i == 2 && geometric), v)) {
            snprintf(why, sizeof why, "%s '%s' is not a number",
                     i == 0 ? "START" : i == 1 ? "STOP" : geometric ? "the factor" : "STEP", part[i]);
            return refuse(d, opt, arg, why);
        }
    }
    if (geometric && !(step > 1)) return refuse(d, opt, arg, "the factor must be above 1");
    if (geometric && !(lo > 0)) return refuse(d, opt, arg, "a log range's START must be above 0");
    if (!geometric && !(step > 0)) return refuse(d, opt, arg, "the step must be above 0");
    if (hi < lo) return refuse(d, opt, arg, "STOP is below START");
    int count = fill(lo, hi, step, geometric, out);
    if (count < 0) return util_diag_add(d, "%s %s: more than %d values", opt, arg, MAX_VALUES);
    if (count == 1 && hi > lo) { /* 2:10:20 is 2 alone: a typo, not a sweep */
        snprintf(why, sizeof why, "the %s %s goes past STOP at once: the range would hold %s alone",
                 geometric ? "factor" : "step", part[2], part[0]);
        return refuse(d, opt, arg, why);
    }
    return 1;
}

int pl_axis_parse(const char *arg, pl_axis *out, util_diag *d)
{
    return pl_axis_parse_as("--vary", arg, out, d);
}

int pl_axis_parse_as(const char *opt, const char *arg, pl_axis *out, util_diag *d)
{
    memset(out, 0, sizeof *out);
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return util_diag_add(d, "%s %s: expected PATH=VALUES (1,2,4 or 2:40:2 or 1:256:x2)", opt,
                             arg);
    cJSON *values = cJSON_CreateArray();
    int rc = range(opt, arg, eq + 1, values, d);
    if (rc < 0) {
        cJSON_Delete(values);
        return rc;
    }
    if (rc == 0) /* a list */
        for (const char *p = eq + 1;;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            if (len == 0) {
                cJSON_Delete(values);
                return util_diag_add(d, "%s %s: an empty value in the list", opt, arg);
            }
            if (nul_in(opt, arg, (size_t)(eq - arg), p, len, d)) {
                cJSON_Delete(values);
                return UTIL_EINPUT;
            }
            cJSON_AddItemToArray(values, item(p, len));
            if (!comma) break;
            p = comma + 1;
        }
    out->path = util_xmalloc((size_t)(eq - arg) + 1);
    memcpy(out->path, arg, (size_t)(eq - arg));
    out->path[eq - arg] = '\0';
    out->values = values;
    return UTIL_OK;
}

void pl_axis_fini(pl_axis *a)
{
    free(a->path);
    cJSON_Delete(a->values);
    memset(a, 0, sizeof *a);
}
