/*
 * profile.c: reading a calibration profile (PROFILE.json).  What a scenario
 * uses -- the version, the GPU, the engine, each coefficient's name, value
 * and bounds -- is checked by a schema table as a scenario is (every error
 * collected, "did you mean" for a misspelt coefficient), and each value
 * against the range of the scenario key it sets, so that a profile can only
 * give values the scenario itself could.  The rest describes the fit
 * (fitted_on, the errors, folds, a coefficient's stderr and start, the
 * fit's own counts): it is the fitting's to extend, kept as read for
 * printing, and only the shape of what is printed is checked.
 */
#include "mdl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define COEF_INFO(id, name, section, key) {name, section, key},
const mdl_coef_info mdl_coefs[MDL_N_COEFS] = {MDL_COEFS(COEF_INFO)};
#undef COEF_INFO

/* The version of the format this file reads. */
#define PROFILE_VERSION 1

static int check_coef(cJSON *item, const char *path, void *ctx, util_diag *d);
static int check_version(cJSON *item, const char *path, void *ctx, util_diag *d);

static const util_field fitted_fields[] = {
    {.key = "value", .type = UTIL_T_NUMBER, .flags = UTIL_REQUIRED, .doc = "the fitted value"},
    {.key = "stderr", .type = UTIL_T_NUMBER, .min = 0, .max = 1e300,
     .doc = "its standard error (null: not known)"},
    {.key = "lo", .type = UTIL_T_NUMBER, .doc = "the lower bound of the fit"},
    {.key = "hi", .type = UTIL_T_NUMBER, .doc = "the upper bound of the fit"},
    {0},
};

#define COEF_FIELD(id, name_, section_, key_)                                                   \
    {.key = name_, .type = UTIL_T_OBJECT, .sub = fitted_fields, .check = check_coef,           \
     .doc = "sets cluster." section_ "." key_},
static const util_field coef_fields[] = {MDL_COEFS(COEF_FIELD){0}};
#undef COEF_FIELD

/* The keys a scenario uses (checked_part keeps only these). */
static const util_field profile_fields[] = {
    {.key = "servesim_profile", .type = UTIL_T_INTEGER, .flags = UTIL_REQUIRED,
     .check = check_version, .doc = "the format's version"},
    {.key = "gpu", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED, .check = mdl_check_gpu_id,
     .doc = "the catalog GPU the runs were measured on"},
    {.key = "engine", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED,
     .check = mdl_check_engine_id, .doc = "the engine preset they ran"},
    {.key = "coefficients", .type = UTIL_T_OBJECT, .sub = coef_fields, .flags = UTIL_REQUIRED,
     .doc = "the fitted coefficients"},
    {0},
};

static int check_version(cJSON *item, const char *path, void *ctx, util_diag *d)
{
    if (item->valuedouble == PROFILE_VERSION) return UTIL_OK;
    return util_diag_add(d, "%s: version %g is not one this servesim reads (%d)", path,
                         item->valuedouble, PROFILE_VERSION);
}

int mdl_coef_of(const char *name)
{
    for (int i = 0; i < MDL_N_COEFS; i++)
        if (!strcmp(mdl_coefs[i].name, name)) return i;
    return -1;
}

/* The scenario's field that coefficient c sets (its range and unit). */
static const util_field *scenario_field(mdl_coef c)
{
    const util_field *fields = mdl_host_fields;
    if (!strcmp(mdl_coefs[c].section, "cost_model"))
        for (const util_variant *v = mdl_cost_schema.variants; v->name; v++)
            if (!strcmp(v->name, "roofline")) fields = v->fields;
    for (const util_field *f = fields; f->key; f++)
        if (!strcmp(f->key, mdl_coefs[c].key)) return f;
    return NULL;
}

static bool in_range(const util_field *f, double v)
{
    bool low = (f->flags & UTIL_MIN_EXCLUSIVE) ? v > f->min : v >= f->min;
    return low && v <= f->max;
}

/* A coefficient's value within its key's range and within its own fit's
 * bounds, which are in order. */
static int check_coef(cJSON *item, const char *path, void *ctx, util_diag *d)
{
    mdl_coef c = (mdl_coef)mdl_coef_of(item->string); /* the schema knows it by now */
    const util_field *f = scenario_field(c);
    double v = util_json_member(item, "value")->valuedouble;
    double lo = util_json_number(item, "lo", -INFINITY), hi = util_json_number(item, "hi", INFINITY);
    if (!in_range(f, v))
        return util_diag_add(d, "%s.value: %g is outside the range of cluster.%s.%s (%s %g and "
                                "<= %g)", path, v, mdl_coefs[c].section, f->key,
                             (f->flags & UTIL_MIN_EXCLUSIVE) ? ">" : ">=", f->min, f->max);
    if (lo > hi) return util_diag_add(d, "%s: lo %g is above hi %g", path, lo, hi);
    if (v < lo || v > hi)
        return util_diag_add(d, "%s.value: %g is outside the fit's bounds [%g, %g]", path, v, lo,
                             hi);
    return UTIL_OK;
}

/* fitted_on: a list of objects; the errors: objects.  Their entries are
 * only printed. */
static int check_info(const cJSON *root, util_diag *d)
{
    int rc = UTIL_OK;
    const cJSON *runs = util_json_member(root, "fitted_on");
    if (runs && !cJSON_IsArray(runs)) rc = util_diag_add(d, "fitted_on: expected an array");
    int i = 0;
    for (const cJSON *r = cJSON_IsArray(runs) ? runs->child : NULL; r; r = r->next, i++)
        if (!cJSON_IsObject(r)) rc = util_diag_add(d, "fitted_on[%d]: expected an object", i);
    static const char *const errors[] = {"training_error_pct", "cv_error_pct"};
    for (int k = 0; k < 2; k++) {
        const cJSON *e = util_json_member(root, errors[k]);
        if (e && !cJSON_IsObject(e)) rc = util_diag_add(d, "%s: expected an object", errors[k]);
    }
    return rc;
}

/* A coefficient's object with only what a scenario uses: its value and
 * bounds, and a stderr that is not null (unknown). */
static cJSON *checked_coef(const cJSON *c)
{
    if (!cJSON_IsObject(c)) return cJSON_Duplicate(c, 1); /* for the schema to report */
    cJSON *o = cJSON_CreateObject();
    for (const util_field *f = fitted_fields; f->key; f++) {
        const cJSON *v = util_json_member(c, f->key);
        if (v && !cJSON_IsNull(v)) cJSON_AddItemToObject(o, f->key, cJSON_Duplicate(v, 1));
    }
    return o;
}

/* What the schema checks: the keys of profile_fields, and of each
 * coefficient the keys of fitted_fields (every coefficient's name stays,
 * so that an unknown one is reported). */
static cJSON *checked_part(const cJSON *root)
{
    cJSON *o = cJSON_CreateObject();
    for (const util_field *f = profile_fields; f->key; f++) {
        const cJSON *v = util_json_member(root, f->key);
        if (!v) continue;
        if (strcmp(f->key, "coefficients") || !cJSON_IsObject(v)) {
            cJSON_AddItemToObject(o, f->key, cJSON_Duplicate(v, 1));
            continue;
        }
        cJSON *coefs = cJSON_AddObjectToObject(o, f->key);
        for (const cJSON *c = v->child; c; c = c->next)
            cJSON_AddItemToObject(coefs, c->string, checked_coef(c));
    }
    return o;
}

static void read_fitted(const cJSON *coefs, mdl_profile *p)
{
    for (int i = 0; i < MDL_N_COEFS; i++) {
        const cJSON *c = util_json_member(coefs, mdl_coefs[i].name);
        if (!c) continue;
        p->coef[i] = (mdl_fitted){.set = true,
                                  .value = util_json_member(c, "value")->valuedouble,
                                  .err = util_json_number(c, "stderr", NAN),
                                  .lo = util_json_number(c, "lo", NAN),
                                  .hi = util_json_number(c, "hi", NAN)};
    }
}

/* Each message of from, as "path: message", into d. */
static int prefixed(const util_diag *from, const char *path, util_diag *d)
{
    util_clip_buf cb;
    for (int i = 0; i < from->count; i++)
        util_diag_add(d, "%s: %s", util_clip_path(path, &cb), from->msgs[i]);
    return from->count ? UTIL_EINPUT : UTIL_OK;
}

int mdl_profile_read(const char *path, const mdl_catalog *cat, mdl_profile *out, util_diag *d)
{
    memset(out, 0, sizeof *out);
    cJSON *root;
    int rc = util_json_read_file(path, &root, d);
    if (rc) return rc;
    util_diag own;
    util_diag_init(&own);
    if (!cJSON_IsObject(root)) {
        util_diag_add(&own, "expected a JSON object");
    } else {
        cJSON *part = checked_part(root);
        if (!util_schema_apply(profile_fields, part, "", (void *)cat, &own)) {
            snprintf(out->gpu, sizeof out->gpu, "%s", util_json_member(part, "gpu")->valuestring);
            snprintf(out->engine, sizeof out->engine, "%s",
                     util_json_member(part, "engine")->valuestring);
            read_fitted(util_json_member(part, "coefficients"), out);
        }
        cJSON_Delete(part);
        check_info(root, &own);
    }
    rc = prefixed(&own, path, d);
    util_diag_fini(&own);
    if (rc) {
        cJSON_Delete(root);
        memset(out, 0, sizeof *out);
        return rc;
    }
    out->json = root;
    out->fitted_runs = cJSON_GetArraySize(util_json_member(root, "fitted_on"));
    return UTIL_OK;
}

void mdl_profile_fini(mdl_profile *p)
{
    if (!p) return;
    cJSON_Delete(p->json);
    memset(p, 0, sizeof *p);
}

double mdl_profile_default(const mdl_profile *p, const mdl_catalog *cat, mdl_coef c)
{
    const mdl_gpu *g = mdl_catalog_find_gpu(cat, p->gpu);
    switch (c) {
    case MDL_COEF_MFU: return g ? g->mfu : NAN;
    case MDL_COEF_MBU: return g ? g->mbu : NAN;
    case MDL_COEF_OVERHEAD_S: return g ? g->overhead_s : NAN;
    case MDL_COEF_ATTN_EFFICIENCY: return 1;
    default: break;
    }
    const cJSON *host = util_json_member(mdl_catalog_find_engine(cat, p->engine), "host");
    return util_json_number(host, mdl_coefs[c].key, NAN);
}
