/*
 * profile.c: a fit as the profile a scenario names with
 * `cluster.calibration` -- the GPU and engine it belongs to, each fitted
 * coefficient with its uncertainty and range, the runs it was fitted on
 * and its errors, training and held out (docs/calibration.md).
 */
#include "val.h"

#include <math.h>

static void add_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

static cJSON *errors_json(const double e[VAL_N_AGG])
{
    cJSON *o = cJSON_CreateObject();
    for (int k = 0; k < VAL_N_AGG; k++)
        if (!isnan(e[k])) cJSON_AddNumberToObject(o, val_agg_names[k], e[k]);
    return o;
}

static cJSON *run_json(const val_run *m, const double err[VAL_N_AGG], const double cv[VAL_N_AGG])
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "source", m->source ? m->source : "");
    cJSON_AddStringToObject(o, "name", m->name ? m->name : "");
    const char *model = cJSON_GetStringValue(util_json_get(m->scenario, "cluster.model"));
    cJSON_AddStringToObject(o, "model", model ? model : "custom");
    cJSON_AddNumberToObject(o, "requests", (double)m->n);
    cJSON_AddStringToObject(o, "clock", m->clock);
    cJSON_AddItemToObject(o, "error_pct", errors_json(err));
    if (cv) cJSON_AddItemToObject(o, "cv_error_pct", errors_json(cv));
    return o;
}

cJSON *val_profile_json(const val_fit *f, const val_run *runs)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "servesim_profile", 1);
    cJSON_AddStringToObject(o, "gpu", f->gpu);
    cJSON_AddStringToObject(o, "engine", f->engine);
    cJSON *co = cJSON_AddObjectToObject(o, "coefficients");
    for (int c = 0; c < MDL_N_COEFS; c++) {
        if (!f->fitted[c]) continue;
        cJSON *k = cJSON_AddObjectToObject(co, mdl_coefs[c].name);
        add_num(k, "value", f->value[c]);
        add_num(k, "stderr", f->stderr_[c]);
        cJSON_AddNumberToObject(k, "lo", val_coefs[c].lo);
        cJSON_AddNumberToObject(k, "hi", val_coefs[c].hi);
        add_num(k, "start", f->start[c]);
    }
    cJSON *on = cJSON_AddArrayToObject(o, "fitted_on");
    for (int i = 0; i < f->n_runs; i++)
        cJSON_AddItemToArray(on, run_json(&runs[i], f->per_run[i],
                                          f->folds >= 2 ? f->cv_per_run[i] : NULL));
    cJSON_AddItemToObject(o, "training_error_pct", errors_json(f->train_error));
    cJSON_AddItemToObject(o, "cv_error_pct", errors_json(f->cv_error));
    cJSON_AddNumberToObject(o, "folds", f->folds);
    cJSON_AddNumberToObject(o, "iterations", f->iterations);
    cJSON_AddNumberToObject(o, "replays", f->evaluations);
    return o;
}
