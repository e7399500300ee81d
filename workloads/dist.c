/*
 * dist.c: the distributions of token counts and durations, and their
 * validation.  Draws use GSL; token counts are rounded to the nearest integer
 * and clamped to [max(min, 1), max], so every request has at least one prompt
 * token and one output token.  An empirical distribution replays a trace
 * column's values (empirical.c); its file is read when the scenario is
 * loaded, so a bad file is an input error naming the scenario key.  A
 * dataset distribution draws one column of a built-in dataset (datasets.c):
 * the column a key implies (prompt_tokens: input, output_tokens: output)
 * unless `column` names it.
 */
#include "wl.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#define NUM(o, k) (cJSON_GetObjectItemCaseSensitive((o), (k)))

static const util_field dist_common[] = {
    {.key = "min", .type = UTIL_T_NUMBER, .min = -1e15, .max = 1e15,
     .doc = "clamp: no draw is below this (uniform: lower end of the range)"},
    {.key = "max", .type = UTIL_T_NUMBER, .min = -1e15, .max = 1e15,
     .doc = "clamp: no draw is above this (uniform: upper end of the range)"},
    {0},
};

static const util_field fixed_fields[] = {
    {.key = "value", .type = UTIL_T_NUMBER, .min = 0, .max = 1e15, .flags = UTIL_REQUIRED,
     .doc = "the value every draw takes"},
    {0},
};

static const util_field exponential_fields[] = {
    {.key = "mean", .type = UTIL_T_NUMBER, .min = 0, .max = 1e15,
     .flags = UTIL_REQUIRED | UTIL_MIN_EXCLUSIVE, .doc = "mean"},
    {0},
};

static const util_field normal_fields[] = {
    {.key = "mean", .type = UTIL_T_NUMBER, .min = -1e15, .max = 1e15, .flags = UTIL_REQUIRED,
     .doc = "mean"},
    {.key = "sd", .type = UTIL_T_NUMBER, .min = 0, .max = 1e15, .flags = UTIL_REQUIRED,
     .doc = "standard deviation"},
    {0},
};

static const util_field lognormal_fields[] = {
    {.key = "median", .type = UTIL_T_NUMBER, .min = 0, .max = 1e15,
     .flags = UTIL_REQUIRED | UTIL_MIN_EXCLUSIVE, .doc = "median, exp(mu)"},
    {.key = "sigma", .type = UTIL_T_NUMBER, .min = 0, .max = 20, .flags = UTIL_REQUIRED,
     .doc = "standard deviation of log(x)"},
    {0},
};

static const char *const column_names[] = {"input", "output", NULL};

static const util_field empirical_fields[] = {
    {.key = "path", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED,
     .doc = "trace file (relative to the scenario's folder)"},
    {.key = "format", .type = UTIL_T_STRING, .def = "\"auto\"", .choices = wl_trace_formats,
     .doc = "trace layout; auto: azure if the first line starts TIMESTAMP, mooncake if '{', "
            "else csv"},
    {.key = "column", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED, .choices = column_names,
     .doc = "which lengths to draw: input (prompt) or output"},
    {0},
};

static const util_field dataset_fields[] = {
    {.key = "name", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED, .choices = wl_dataset_names,
     .doc = "a built-in dataset (docs/scenario.md, \"Built-in datasets\")"},
    {.key = "column", .type = UTIL_T_STRING, .choices = column_names,
     .doc = "input (prompt) or output lengths; default: the key's own (prompt_tokens: input, "
            "output_tokens: output)"},
    {0},
};

static const util_variant dist_variants[] = {
    {"fixed", fixed_fields, "always value"},
    {"uniform", NULL, "uniform on [min, max]"},
    {"exponential", exponential_fields, "exponential with the given mean"},
    {"normal", normal_fields, "normal (Gaussian)"},
    {"lognormal", lognormal_fields, "log-normal: exp(N(log median, sigma^2))"},
    {"empirical", empirical_fields, "a trace column's token counts, each as often as it occurs"},
    {"dataset", dataset_fields, "one column of a built-in dataset's (prompt, output) pairs"},
    {0},
};

const util_union wl_dist_schema = {.tag = "dist", .common = dist_common,
                                   .variants = dist_variants, .scalar = "fixed",
                                   .scalar_key = "value"};

static const char *const kind_names[] = {"fixed",     "uniform",   "exponential", "normal",
                                         "lognormal", "empirical", "dataset",     NULL};

static int lookup(const char *const *names, const char *name)
{
    int k = 0;
    while (names[k] && strcmp(names[k], name)) k++;
    return k;
}

/* Loads the trace column; its FILE:LINE messages are prefixed with the
 * scenario key that names the file, so both places are in the message. */
static int empirical_from_json(const cJSON *obj, const char *path, const char *base_dir,
                               wl_dist *out, util_diag *d)
{
    char *file = util_path_join(base_dir, NUM(obj, "path")->valuestring);
    wl_trace_format format = (wl_trace_format)lookup(wl_trace_formats,
                                                     NUM(obj, "format")->valuestring);
    bool output = !strcmp(NUM(obj, "column")->valuestring, "output");
    util_diag inner;
    util_diag_init(&inner);
    int rc = wl_empirical_load(file, format, output, &out->emp, &inner);
    for (int i = 0; i < inner.count; i++) util_diag_add(d, "%s.path: %s", path, inner.msgs[i]);
    util_diag_fini(&inner);
    free(file);
    return rc;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

/* A dataset's column: `column`, else the one its key implies. */
static int dataset_from_json(const cJSON *obj, const char *path, wl_dist *out, util_diag *d)
{
    const cJSON *col = NUM(obj, "column");
    if (col) out->ds_output = !strcmp(col->valuestring, "output");
    else if (ends_with(path, ".output_tokens")) out->ds_output = true;
    else if (!ends_with(path, ".prompt_tokens"))
        return util_diag_add(d, "%s.column: missing: name input or output (only prompt_tokens "
                                "and output_tokens imply it)", path);
    out->ds = wl_dataset_create(NUM(obj, "name")->valuestring);
    assert(out->ds); /* the schema's choices hold only built-in names */
    return UTIL_OK;
}

int wl_dist_from_json(const cJSON *obj, const char *path, const char *base_dir, bool whole,
                      wl_dist *out, util_diag *d)
{
    memset(out, 0, sizeof *out);
    out->kind = (wl_dist_kind)lookup(kind_names, NUM(obj, "dist")->valuestring);
    out->whole = whole;
    const cJSON *lo = NUM(obj, "min"), *hi = NUM(obj, "max");
    double floor_v = whole ? 1 : 0;
    out->lo = lo ? fmax(lo->valuedouble, floor_v) : floor_v;
    out->hi = hi ? hi->valuedouble : INFINITY;
    int rc = UTIL_OK;
    if (lo && lo->valuedouble < floor_v)
        rc = util_diag_add(d, "%s.min: %g is below %g %s", path, lo->valuedouble, floor_v,
                           whole ? "token" : "seconds");
    if (hi && hi->valuedouble < out->lo)
        rc = util_diag_add(d, "%s.max: %g is below min (%g)", path, hi->valuedouble, out->lo);
    switch (out->kind) {
    case WL_DIST_FIXED:
        out->a = NUM(obj, "value")->valuedouble;
        if (whole && out->a < 1)
            rc = util_diag_add(d, "%s.value: %g is below 1 token", path, out->a);
        break;
    case WL_DIST_UNIFORM:
        if (!lo || !hi) rc = util_diag_add(d, "%s: uniform needs both min and max", path);
        break;
    case WL_DIST_EXPONENTIAL: out->a = NUM(obj, "mean")->valuedouble; break;
    case WL_DIST_NORMAL:
        out->a = NUM(obj, "mean")->valuedouble;
        out->b = NUM(obj, "sd")->valuedouble;
        break;
    case WL_DIST_LOGNORMAL:
        out->a = NUM(obj, "median")->valuedouble;
        out->b = NUM(obj, "sigma")->valuedouble;
        break;
    case WL_DIST_EMPIRICAL: {
        int erc = whole ? empirical_from_json(obj, path, base_dir, out, d)
                        : util_diag_add(d, "%s.dist: empirical is for token counts", path);
        if (erc) rc = erc; /* UTIL_EFAIL for a read error, else UTIL_EINPUT */
        break;
    }
    case WL_DIST_DATASET:
        if (!whole) rc = util_diag_add(d, "%s.dist: dataset is for token counts", path);
        else if (dataset_from_json(obj, path, out, d)) rc = UTIL_EINPUT;
        break;
    }
    if (rc) wl_dist_fini(out); /* a failed build owns nothing */
    return rc;
}

void wl_dist_fini(wl_dist *dist)
{
    wl_empirical_destroy(dist->emp);
    dist->emp = NULL;
    wl_dataset_destroy(dist->ds);
    dist->ds = NULL;
}

static double draw(const wl_dist *dist, gsl_rng *r)
{
    switch (dist->kind) {
    case WL_DIST_FIXED: return dist->a;
    case WL_DIST_UNIFORM:
        if (dist->whole) { /* each integer in [lo, hi] equally likely */
            double lo = ceil(dist->lo), n = floor(dist->hi) - lo + 1;
            return lo + (double)gsl_rng_uniform_int(r, (unsigned long)n);
        }
        return dist->lo + (dist->hi - dist->lo) * gsl_rng_uniform(r);
    case WL_DIST_EXPONENTIAL: return gsl_ran_exponential(r, dist->a);
    case WL_DIST_NORMAL: return dist->a + gsl_ran_gaussian_ziggurat(r, dist->b);
    case WL_DIST_LOGNORMAL: return dist->a * exp(gsl_ran_gaussian_ziggurat(r, dist->b));
    case WL_DIST_EMPIRICAL: return wl_empirical_sample(dist->emp, r);
    case WL_DIST_DATASET: {
        int32_t prompt, output;
        wl_dataset_draw(dist->ds, r, &prompt, &output);
        return dist->ds_output ? output : prompt;
    }
    }
    return 0;
}

double wl_dist_sample(const wl_dist *dist, gsl_rng *r)
{
    double x = draw(dist, r);
    if (dist->whole) x = floor(x + 0.5);
    if (x < dist->lo) x = dist->whole ? ceil(dist->lo) : dist->lo;
    if (x > dist->hi) x = dist->whole ? floor(dist->hi) : dist->hi;
    return x;
}
