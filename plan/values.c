/*
 * values.c: the values of a varied key -- `1,2,4,8`, `2:40:2`, `1:256:x2`,
 * `h100-sxm,a100-80gb` -- as a JSON array.
 */
#include "pl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES 100000

/* An item of a list: JSON if it parses as a JSON value, else a string, as
 * --set reads values. */
static cJSON *item(const char *text, size_t len)
{
    char *s = util_xmalloc(len + 1);
    memcpy(s, text, len);
    s[len] = '\0';
    cJSON *v = cJSON_Parse(s);
    if (!v) v = cJSON_CreateString(s);
    free(s);
    return v;
}

static bool number(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return end != s && !*end && isfinite(*out);
}

/* start:stop:step or start:stop:xFACTOR; 0 when values is not a range. */
static int range(const char *arg, const char *values, cJSON *out, util_diag *d)
{
    char a[64], b[64], c[64];
    if (strlen(values) >= sizeof a || sscanf(values, "%63[^:]:%63[^:]:%63s", a, b, c) != 3) return 0;
    bool geometric = c[0] == 'x';
    double lo, hi, step;
    if (!number(a, &lo) || !number(b, &hi) || !number(c + geometric, &step))
        return util_diag_add(d, "--vary %s: a range is START:STOP:STEP or START:STOP:xFACTOR", arg);
    if (geometric ? !(step > 1 && lo > 0) : !(step > 0))
        return util_diag_add(d, "--vary %s: the %s must be %s", arg,
                             geometric ? "factor" : "step",
                             geometric ? "above 1 (and START above 0)" : "positive");
    if (hi < lo) return util_diag_add(d, "--vary %s: STOP is below START", arg);
    /* a step's rounding must not drop the last value: compare with slack */
    for (int i = 0;; i++) {
        double v = geometric ? lo * pow(step, i) : lo + i * step;
        if (v > hi * (1 + 1e-12) + 1e-12) break;
        if (i == MAX_VALUES) return util_diag_add(d, "--vary %s: more than %d values", arg, MAX_VALUES);
        cJSON_AddItemToArray(out, cJSON_CreateNumber(v));
    }
    return 1;
}

int pl_axis_parse(const char *arg, pl_axis *out, util_diag *d)
{
    memset(out, 0, sizeof *out);
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return util_diag_add(d, "--vary %s: expected PATH=VALUES (1,2,4 or 2:40:2 or 1:256:x2)",
                             arg);
    cJSON *values = cJSON_CreateArray();
    int rc = range(arg, eq + 1, values, d);
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
                return util_diag_add(d, "--vary %s: an empty value in the list", arg);
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
