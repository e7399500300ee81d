/*
 * point.c: one point of a sweep or a plan -- the base scenario with its
 * overrides and seed, run by rec_run into a database of its own (a scratch
 * file or memory) and summarised there.  Whether it was overloaded is the
 * engine's verdict (sim_engine_limit_in_flight), stored as the run's status.
 */
#include "pl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an.h"

/* "path=value" for util_json_set, the value as JSON; null removes the key
 * (a plan over a day runs its static fleet without cluster.autoscaler). */
static int apply(cJSON *root, const char *path, const cJSON *value, util_diag *d)
{
    if (cJSON_IsNull(value)) return util_json_unset(root, path, d);
    char *text = cJSON_PrintUnformatted(value);
    char *set = util_xasprintf("%s=%s", path, text);
    int rc = util_json_set(root, set, d);
    free(set);
    free(text);
    return rc;
}

int pl_point_scenario(const pl_base *b, const pl_point *p, char **json, util_diag *d)
{
    cJSON *root = cJSON_Parse(b->json);
    if (!root) return util_diag_fail(d, "the base scenario is not JSON");
    int rc = UTIL_OK;
    const cJSON *o;
    cJSON_ArrayForEach(o, p->overrides) if (!rc) rc = apply(root, o->string, o, d);
    cJSON *seed = cJSON_CreateNumber((double)p->seed);
    if (!rc) rc = apply(root, "seed", seed, d);
    cJSON_Delete(seed);
    *json = rc ? NULL : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return rc;
}

/* A fleet of several models: the whole fleet's GPUs and cost an hour, and
 * each model's part (report --by model), paid as the run's cost is. */
static void model_figures(const an_report *r, pl_summary *out)
{
    if (r->n_models < 2) return; /* one model: the run's figures say it all */
    double hours = r->req.window_s / 3600;
    out->gpus = r->cost.gpu_count;
    out->usd_per_hour = r->cost.usd_per_gpu_hour * r->cost.gpu_count *
                        (1 + r->cost.overhead_fraction);
    out->n_models = r->n_models < PL_MAX_MODELS ? r->n_models : PL_MAX_MODELS;
    for (int m = 0; m < out->n_models; m++) {
        const an_model *am = &r->models[m];
        pl_model_figures *f = &out->models[m];
        snprintf(f->id, sizeof f->id, "%s", am->id);
        f->replicas = am->replicas;
        f->gpus = am->gpus;
        f->usd_per_hour = hours > 0 ? am->usd / hours : NAN;
        f->attainment = am->req.attainment;
    }
}

/* The figures of a stored run, with the base's SLOs and targets. */
int pl_summarise(sqlite3 *db, int64_t run, const pl_base *b, pl_summary *out, util_diag *d)
{
    an_options opt = {.by_model = true}; /* a fleet of several models is planned per model */
    int rc = UTIL_OK;
    for (int i = 0; !rc && i < b->n_slo_args; i++) rc = an_options_add_slo(&opt, b->slo_args[i], d);
    an_report r;
    if (!rc) rc = an_report_compute_with(db, run, &opt, &r, d);
    if (!rc) {
        *out = (pl_summary){
            .run_id = run,
            .overloaded = !strcmp(r.status, "overloaded"),
            .measured = r.req.measured,
            .ttft_p50 = r.req.ttft.p50,
            .ttft_p99 = r.req.ttft.p99,
            .tpot_p50 = r.req.tpot.p50,
            .tpot_p99 = r.req.tpot.p99,
            .requests_per_s = r.req.requests_per_s,
            .output_tokens_per_s = r.req.output_tokens_per_s,
            .goodput_requests_per_s = r.req.goodput_requests_per_s,
            .attainment = r.req.attainment,
            .task_attainment = r.tasks.attainment,
            .busy_fraction = r.use.busy_fraction,
            .batch_fill = r.use.batch_fill,
            .kv_mean_fraction = r.use.kv_mean_fraction,
            .usd_per_million_output_tokens = r.cost.usd_per_million_output_tokens,
            .usd = r.cost.usd,
            .gpu_hours = r.cost.gpu_hours,
            .j_per_output_token = r.energy.gpu_j_per_output_token,
            .not_completed_fraction = r.req.ended ? (double)(r.req.ended - r.req.measured) /
                                                        (double)r.req.ended
                                                  : 0,
            .n_targets = r.n_targets < 8 ? r.n_targets : 8,
        };
        for (int i = 0; i < out->n_targets; i++) out->target_value[i] = r.targets[i].value_all_s;
        model_figures(&r, out);
    }
    an_report_fini(&r);
    an_options_fini(&opt);
    return rc;
}

/* Runs the point by rec_run: into file, or in memory when file is NULL. */
static int run_point(const pl_base *b, const pl_point *p, const char *file, bool iterations,
                     rec_run_result *res, util_diag *d)
{
    char *json = NULL;
    int rc = pl_point_scenario(b, p, &json, d);
    if (rc) return rc;
    char *overrides = cJSON_PrintUnformatted(p->overrides);
    rec_run_spec spec = {.catalog = b->catalog, .scenario = cJSON_Parse(json),
                         .base_dir = b->base_dir, .scratch = file, .iterations = iterations,
                         .label = {overrides, b->sweep, p->run_id}};
    rc = rec_run(&spec, res, d);
    free(overrides);
    free(json);
    return rc;
}

int pl_point_run(const pl_base *b, const pl_point *p, const char *path, pl_summary *out,
                 util_diag *d)
{
    bool in_memory = !path;
    rec_run_result res;
    int rc = run_point(b, p, in_memory ? NULL : path, false, &res, d);
    sqlite3 *db = res.db;
    if (!rc && !in_memory && sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        rc = util_diag_fail(d, "%s: cannot open the point's database", path);
    if (!rc) rc = pl_summarise(db, res.run_id, b, out, d);
    if (!in_memory) sqlite3_close(db);
    rec_run_result_fini(&res);
    return rc;
}

/* ---- a summary as one line of JSON, from a worker to the parent ---- */

#define FIELDS(X)                                                                                  \
    X(ttft_p50) X(ttft_p99) X(tpot_p50) X(tpot_p99) X(requests_per_s) X(output_tokens_per_s)       \
    X(goodput_requests_per_s) X(attainment) X(task_attainment) X(busy_fraction) X(usd_per_million_output_tokens)     \
    X(j_per_output_token) X(not_completed_fraction) X(batch_fill) X(kv_mean_fraction) X(usd) X(gpu_hours)

static void add_num(cJSON *o, const char *key, double v)
{
    if (isnan(v)) cJSON_AddNullToObject(o, key);
    else cJSON_AddNumberToObject(o, key, v);
}

cJSON *pl_summary_json(const pl_summary *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "run_id", (double)s->run_id);
    cJSON_AddStringToObject(o, "status", s->overloaded ? "overloaded" : "completed");
    cJSON_AddNumberToObject(o, "measured", (double)s->measured);
#define ADD(f) add_num(o, #f, s->f);
    FIELDS(ADD)
#undef ADD
    cJSON *t = cJSON_AddArrayToObject(o, "targets");
    for (int i = 0; i < s->n_targets; i++) /* JSON has no infinity: say it in words */
        cJSON_AddItemToArray(t, isnan(s->target_value[i])   ? cJSON_CreateNull()
                                : isinf(s->target_value[i]) ? cJSON_CreateString("infinite")
                                                            : cJSON_CreateNumber(s->target_value[i]));
    if (s->n_models < 2) return o;
    cJSON_AddNumberToObject(o, "gpus", s->gpus);
    add_num(o, "usd_per_hour", s->usd_per_hour);
    cJSON *ms = cJSON_AddArrayToObject(o, "models");
    for (int m = 0; m < s->n_models; m++) {
        const pl_model_figures *f = &s->models[m];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "id", f->id);
        cJSON_AddNumberToObject(x, "replicas", f->replicas);
        cJSON_AddNumberToObject(x, "gpus", f->gpus);
        add_num(x, "usd_per_hour", f->usd_per_hour);
        add_num(x, "attainment", f->attainment);
        cJSON_AddItemToArray(ms, x);
    }
    return o;
}

void pl_summary_from_json(const cJSON *o, pl_summary *s)
{
    memset(s, 0, sizeof *s);
    s->run_id = (int64_t)util_json_number(o, "run_id", 0);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
    s->overloaded = cJSON_IsString(st) && !strcmp(st->valuestring, "overloaded");
    s->measured = (int64_t)util_json_number(o, "measured", 0);
#define GET(f) s->f = util_json_number(o, #f, NAN);
    FIELDS(GET)
#undef GET
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "targets"), *v;
    cJSON_ArrayForEach(v, t) if (s->n_targets < 8) s->target_value[s->n_targets++] =
        cJSON_IsNumber(v) ? v->valuedouble : cJSON_IsString(v) ? INFINITY : NAN;
    s->gpus = (int)util_json_number(o, "gpus", 0);
    s->usd_per_hour = util_json_number(o, "usd_per_hour", NAN);
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(o, "models"), *m;
    cJSON_ArrayForEach(m, ms) if (s->n_models < PL_MAX_MODELS) {
        pl_model_figures *f = &s->models[s->n_models++];
        snprintf(f->id, sizeof f->id, "%s",
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "id")));
        f->replicas = (int)util_json_number(m, "replicas", 0);
        f->gpus = (int)util_json_number(m, "gpus", 0);
        f->usd_per_hour = util_json_number(m, "usd_per_hour", NAN);
        f->attainment = util_json_number(m, "attainment", NAN);
    }
}

/* ---- a point as a worker's job ---- */

char *pl_point_job(const char *job, void *base)
{
    cJSON *j = cJSON_Parse(job);
    pl_point p = {cJSON_GetObjectItemCaseSensitive(j, "overrides"),
                  (int64_t)util_json_number(j, "seed", 0), (int64_t)util_json_number(j, "run_id", 0)};
    const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "path"));
    util_diag d;
    util_diag_init(&d);
    pl_summary s;
    int rc = pl_point_run(base, &p, path, &s, &d);
    cJSON *out = cJSON_CreateObject();
    cJSON_AddBoolToObject(out, "ok", rc == UTIL_OK);
    if (rc == UTIL_OK) cJSON_AddItemToObject(out, "summary", pl_summary_json(&s));
    else cJSON_AddStringToObject(out, "error", d.count ? d.msgs[0] : "the point failed");
    char *text = cJSON_PrintUnformatted(out);
    cJSON_Delete(out);
    cJSON_Delete(j);
    util_diag_fini(&d);
    return text;
}

/* ---- a point's whole report ---- */

int pl_point_compute(const pl_base *b, const pl_point *p, bool iterations, an_report *report,
                     an_definition defs[AN_N_DEFINITIONS], util_diag *d)
{
    *report = (an_report){0};
    rec_run_result res;
    int rc = run_point(b, p, NULL, iterations, &res, d);
    an_options opt = {0};
    for (int i = 0; !rc && i < b->n_slo_args; i++) rc = an_options_add_slo(&opt, b->slo_args[i], d);
    if (!rc) rc = an_report_compute_with(res.db, res.run_id, &opt, report, d);
    if (!rc && iterations) rc = an_definitions(res.db, res.run_id, defs, d);
    an_options_fini(&opt);
    rec_run_result_fini(&res);
    return rc;
}
