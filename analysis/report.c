/*
 * report.c: the report of one run, from the database alone: the run's row
 * and stored scenario (warm-up, SLOs, classes, cost and energy settings),
 * then the run's, each class's, tenant's, tier's and replica's per-request
 * sections in one scan (scan.c) and agent tasks, utilisation, cost and
 * energy (usage.c) and the what-if targets, the scenario's and the options'
 * (whatif.c).  The run's attainment sums its classes', each judged by its
 * own targets.
 */
#include "an_int.h"
#include "mdl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *column_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return util_xstrdup(t ? (const char *)t : "");
}

/* ---- SLOs: the stored scenario's, then the what-if's, key by key ---- */

/* base with over's keys in place of its own; a key of over that is not a
 * threshold (NAN, or 0 in a zeroed struct) leaves base's. */
static an_slo slo_over(an_slo base, const an_slo *over)
{
    if (over) {
        if (over->ttft_s > 0) base.ttft_s = over->ttft_s;
        if (over->tpot_s > 0) base.tpot_s = over->tpot_s;
        if (over->e2e_s > 0) base.e2e_s = over->e2e_s;
        if (over->task_e2e_s > 0) base.task_e2e_s = over->task_e2e_s;
    }
    base.set = !isnan(base.ttft_s) || !isnan(base.tpot_s) || !isnan(base.e2e_s);
    return base;
}

/* The targets in obj.slo, each falling back to base's. */
static an_slo slo_from(const cJSON *obj, an_slo base)
{
    const cJSON *slo = cJSON_GetObjectItemCaseSensitive(obj, "slo");
    an_slo own = {.ttft_s = util_json_number(slo, "ttft_s", NAN),
                  .tpot_s = util_json_number(slo, "tpot_s", NAN),
                  .e2e_s = util_json_number(slo, "e2e_s", NAN),
                  .task_e2e_s = util_json_number(slo, "task_e2e_s", NAN)};
    return slo_over(base, &own);
}

static const an_slo *class_whatif(const an_options *opt, const char *cls)
{
    for (int i = 0; opt && i < opt->n_class_slo; i++)
        if (!strcmp(opt->class_slo[i].cls, cls)) return &opt->class_slo[i].slo;
    return NULL;
}

/* A class's priority, deadline and tenant as its scenario gives them (a
 * run before them has none). */
static void class_sched(const cJSON *c, an_class *k)
{
    const cJSON *prio = cJSON_GetObjectItemCaseSensitive(c, "priority");
    const cJSON *deadline = cJSON_GetObjectItemCaseSensitive(c, "deadline_s");
    const cJSON *tenant = cJSON_GetObjectItemCaseSensitive(c, "tenant");
    if (cJSON_IsString(prio)) k->priority = util_xstrdup(prio->valuestring);
    else if (cJSON_IsNumber(prio)) k->priority = util_xasprintf("%.0f", prio->valuedouble);
    k->deadline_s = cJSON_IsNumber(deadline) ? deadline->valuedouble : NAN;
    if (cJSON_IsString(tenant)) k->tenant = util_xstrdup(tenant->valuestring);
}

/* The classes of the stored scenario, each with its SLO: the what-if's keys
 * for the class, else the class's own, else the run's; without
 * workload.classes, one class "default" (the engine's name for it). */
static void load_classes(const cJSON *sc, const an_options *opt, an_report *r)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(sc, "workload"), "classes");
    r->has_classes = cJSON_IsArray(list) && cJSON_GetArraySize(list) > 0;
    r->n_classes = r->has_classes ? cJSON_GetArraySize(list) : 1;
    r->classes = util_xcalloc((size_t)r->n_classes, sizeof *r->classes);
    if (!r->has_classes) {
        r->classes[0].name = util_xstrdup("default");
        r->classes[0].deadline_s = NAN;
        r->req.slo = slo_over(r->req.slo, class_whatif(opt, "default"));
        r->classes[0].req.slo = r->req.slo;
        return;
    }
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, list) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
        an_class *k = &r->classes[i++];
        k->name = util_xstrdup(cJSON_IsString(name) ? name->valuestring : "?");
        k->req.slo = slo_over(slo_from(c, r->req.slo), class_whatif(opt, k->name));
        class_sched(c, k);
    }
}

/* A what-if for a class the run does not have is a typo, not a no-op. */
static int check_classes(const an_options *opt, const an_report *r, util_diag *d)
{
    for (int i = 0; opt && i < opt->n_class_slo; i++) {
        bool known = false;
        for (int k = 0; k < r->n_classes; k++) known |= !strcmp(r->classes[k].name, opt->class_slo[i].cls);
        if (!known)
            return util_diag_add(d, "--slo %s.*: run %lld has no class '%s'", opt->class_slo[i].cls,
                                 (long long)r->run_id, opt->class_slo[i].cls);
    }
    return UTIL_OK;
}

/* The scenario's cost and energy settings, for usage.c. */
static void load_settings(const cJSON *sc, an_report *r)
{
    r->cost.overhead_fraction = util_json_number(sc, "cost.overhead_fraction", 0);
    r->energy.host_w_per_gpu = util_json_number(sc, "energy.host_w_per_gpu", NAN);
    r->energy.pue = util_json_number(sc, "energy.pue", 1);
    r->timeout_s = util_json_number(sc, "workload.timeout_s", 0);
    const cJSON *decode = util_json_get(sc, "cluster.disaggregated.decode");
    if (cJSON_IsString(decode)) r->decode_pool = util_xstrdup(decode->valuestring);
}

/* Which replicas decode for a disaggregated cluster: its decode pool's
 * (their sections are of the requests they decoded, which the rows say). */
static void mark_decoders(an_report *r)
{
    for (int i = 0; r->decode_pool && i < r->n_replicas; i++)
        r->replicas[i].decodes = r->replicas[i].pool && !strcmp(r->replicas[i].pool, r->decode_pool);
}

/* ---- precision: the form each pool's quantization ran in ---- */

/* A quantization the GPU may lack the tensor cores of (fp8, int8, mxfp4):
 * its index in mdl_quantizations, else -1 (none, w4a16: nothing to ask). */
static int narrow_quant(const cJSON *pool)
{
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(pool, "quantization");
    for (int i = 0; cJSON_IsString(q) && mdl_quantizations[i]; i++)
        if (!strcmp(q->valuestring, mdl_quantizations[i]))
            return i == MDL_Q_FP8 || i == MDL_Q_INT8 || i == MDL_Q_MXFP4 ? i : -1;
    return -1;
}

/* The pool's weight-only form from its stored quantization and GPU (a
 * catalog id, read from the catalog compiled in and loaded at the first
 * that needs it, or the inline entry the run used); NULL when it computed
 * in its dtype, or the GPU is no longer in the catalog. */
static const char *pool_weight_only(const cJSON *pool, mdl_catalog **cat)
{
    int q = narrow_quant(pool);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(pool, "gpu");
    if (q < 0 || !(cJSON_IsString(g) || cJSON_IsObject(g))) return NULL;
    mdl_gpu gpu;
    if (cJSON_IsObject(g)) {
        mdl_gpu_from_json(g, &gpu);
        return mdl_weight_only_form((mdl_quant)q, &gpu);
    }
    util_diag ignored;
    util_diag_init(&ignored);
    if (!*cat) mdl_catalog_load_default(cat, &ignored);
    util_diag_fini(&ignored);
    const mdl_gpu *known = *cat ? mdl_catalog_find_gpu(*cat, g->valuestring) : NULL;
    return known ? mdl_weight_only_form((mdl_quant)q, known) : NULL;
}

/* Each replica's form, by its pool's name (the short form's is "default"),
 * and the cluster's when every replica has the same one. */
static void mark_weight_only(const cJSON *sc, an_report *r)
{
    const cJSON *cluster = cJSON_GetObjectItemCaseSensitive(sc, "cluster");
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(cluster, "pools");
    mdl_catalog *cat = NULL;
    const cJSON *p = cJSON_IsArray(pools) ? pools->child : cluster;
    for (; p; p = cJSON_IsArray(pools) ? p->next : NULL) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
        const char *pool = cJSON_IsArray(pools) ? cJSON_GetStringValue(name) : "default";
        const char *form = pool ? pool_weight_only(p, &cat) : NULL;
        for (int i = 0; form && i < r->n_replicas; i++)
            if (r->replicas[i].pool && !strcmp(r->replicas[i].pool, pool))
                r->replicas[i].weight_only = form;
    }
    mdl_catalog_destroy(cat);
    r->use.weight_only = r->n_replicas > 0 ? r->replicas[0].weight_only : NULL;
    for (int i = 1; i < r->n_replicas; i++)
        if (r->replicas[i].weight_only != r->use.weight_only) r->use.weight_only = NULL;
}

/* A measured run's facts (schema 7 on; an older database has none). */
static void load_measured(an__query *q, an_report *r)
{
    sqlite3_stmt *st = an__prepare(q, "SELECT format, source, clock, metrics FROM measurements "
                                      "WHERE run_id = ?1");
    if (!st) return;
    if (sqlite3_step(st) == SQLITE_ROW) {
        r->measured_format = column_text(st, 0);
        r->measured_source = column_text(st, 1);
        r->measured_clock = column_text(st, 2);
        r->measured_metrics = column_text(st, 3);
    }
    sqlite3_finalize(st);
}

/* The profile a calibrated run used, as its file says now: the stored
 * scenario keeps the values the run used, the file only says where they
 * came from, so a file gone or changed is reported, not an error.  Only a
 * regular file is read: the path comes from a database, perhaps made
 * elsewhere, and a pipe there would never end. */
static void load_calibration(const cJSON *sc, an_report *r)
{
    const cJSON *path = util_json_get(sc, "cluster.calibration");
    if (!cJSON_IsString(path)) return;
    r->calibration_path = util_xstrdup(path->valuestring);
    util_diag ignored;
    util_diag_init(&ignored);
    cJSON *prof = NULL;
    struct stat st;
    bool regular = stat(path->valuestring, &st) == 0 && S_ISREG(st.st_mode);
    if (regular && !util_json_read_file(path->valuestring, &prof, &ignored) &&
        cJSON_IsObject(prof)) {
        const cJSON *gpu = util_json_member(prof, "gpu"), *engine = util_json_member(prof, "engine");
        const cJSON *runs = util_json_member(prof, "fitted_on");
        r->calibration_found = true;
        r->calibration_gpu = util_xstrdup(cJSON_IsString(gpu) ? gpu->valuestring : "?");
        r->calibration_engine = util_xstrdup(cJSON_IsString(engine) ? engine->valuestring : "?");
        r->calibration_runs = cJSON_IsArray(runs) ? cJSON_GetArraySize(runs) : 0;
        r->calibration_fitted_on = cJSON_IsArray(runs) ? cJSON_PrintUnformatted(runs)
                                                       : util_xstrdup("[]");
    }
    cJSON_Delete(prof);
    util_diag_fini(&ignored);
}

/* The run's row, and from its stored scenario the warm-up, SLOs, classes and
 * the cost and energy settings. */
static int load_run(an__query *q, const an_options *opt, an_report *r, cJSON **scenario,
                    util_diag *d)
{
    sqlite3_stmt *st = an__prepare(q, "SELECT name, seed, status, sim_end_s, wall_s, events, "
                                      "scenario, status_reason FROM runs WHERE id = ?1");
    if (!st) /* a database of schema 1, before runs.status_reason */
        st = an__prepare(q, "SELECT name, seed, status, sim_end_s, wall_s, events, scenario, "
                            "NULL FROM runs WHERE id = ?1");
    if (!st) return an__db_fail(q->db, d, "cannot read runs");
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return util_diag_add(d, "no run with id %lld", (long long)q->run);
    }
    r->name = column_text(st, 0);
    r->seed = sqlite3_column_int64(st, 1);
    r->status = column_text(st, 2);
    r->sim_time_s = an__column_num(st, 3);
    r->wall_time_s = an__column_num(st, 4);
    r->events = sqlite3_column_int64(st, 5);
    if (sqlite3_column_type(st, 7) != SQLITE_NULL) r->status_reason = column_text(st, 7);
    cJSON *sc = cJSON_Parse((const char *)sqlite3_column_text(st, 6));
    sqlite3_finalize(st);
    if (!sc) return util_diag_add(d, "run %lld: stored scenario is not JSON", (long long)q->run);
    int n = cJSON_GetArraySize(util_json_get(sc, "workload.classes"));
    if (n > UTIL_MAX_CLASSES) { /* a run could not have had them: read no more than it could */
        cJSON_Delete(sc);
        return util_diag_add(d, "run %lld: runs.scenario has %d workload.classes, more than the "
                                "%d a scenario may have: the database was edited or is damaged",
                             (long long)q->run, n, UTIL_MAX_CLASSES);
    }
    an__report_setup(sc, opt, r);
    an__scenario_targets(sc, r);
    load_calibration(sc, r);
    *scenario = sc;
    q->warmup = r->warmup_s;
    load_measured(q, r);
    return check_classes(opt, r, d);
}

void an__report_setup(const cJSON *sc, const an_options *opt, an_report *r)
{
    r->warmup_s = util_json_number(sc, "warmup_s", 0);
    an_slo none = {NAN, NAN, NAN, NAN, false};
    r->req.slo = slo_over(slo_from(sc, none), opt ? &opt->slo : NULL);
    r->slo_whatif = opt && (opt->slo.set || opt->slo.task_e2e_s > 0 || opt->n_class_slo > 0);
    load_classes(sc, opt, r);
    load_settings(sc, r);
}

/* The task SLO of tasks whose requests' window is window_s: with no target
 * (slo_s NAN) every completed task is good, as a request is with no SLO,
 * so that a run's sum over its classes counts them, but the section itself
 * has no attainment. */
static int load_task_slo(const an__query *q, an_tasks *t, double slo_s, double window_s,
                         util_diag *d)
{
    t->slo_s = slo_s;
    double good = (double)t->completed;
    if (!isnan(slo_s)) {
        char *sql = util_xasprintf("SELECT total(e2e_s <= %.17g) FROM task_metrics WHERE"
                                   " run_id = ?1 AND status = 'completed' AND start_s >= ?2"
                                   AN__IN_CLASS, slo_s);
        int rc = an__row(q, sql, &good, 1, d);
        free(sql);
        if (rc) return UTIL_EFAIL;
    }
    t->good = (int64_t)good;
    an__set_task_attainment(t, !isnan(slo_s), window_s);
    return UTIL_OK;
}

void an__set_task_attainment(an_tasks *t, bool applies, double window_s)
{
    t->attainment = applies ? an__ratio((double)t->good, (double)t->count) : NAN;
    t->goodput_tasks_per_s = applies ? an__ratio((double)t->good, window_s) : NAN;
}

static int load_tasks(const an__query *q, an_tasks *t, double slo_s, double window_s,
                      util_diag *d)
{
    double c[6];
    if (an__row(q,
                "SELECT count(*), total(status = 'completed'), total(status = 'failed'),"
                " total(status = 'unfinished'),"
                " avg(CASE WHEN status <> 'unfinished' THEN calls END),"
                " avg(CASE WHEN status <> 'unfinished' THEN slow_calls > 0 END)"
                " FROM tasks WHERE run_id = ?1 AND start_s >= ?2" AN__IN_CLASS,
                c, 6, d))
        return UTIL_EFAIL;
    t->count = (int64_t)c[0];
    t->completed = (int64_t)c[1];
    t->failed = (int64_t)c[2];
    t->unfinished = (int64_t)c[3];
    t->calls_per_task = c[4];
    t->any_slow_fraction = c[5];
    if (an__metric_of(q, "task_metrics", "status = 'completed' AND start_s >= ?2", "e2e_s",
                      &t->e2e, d))
        return UTIL_EFAIL;
    return load_task_slo(q, t, slo_s, window_s, d);
}

/* Each class's tasks; the run's attainment is then the classes' good over
 * their ended requests, each judged by its own targets.  Without
 * workload.classes the one class is the run, and is not queried twice. */
static int load_classes_tasks(an__query *q, an_report *r, util_diag *d)
{
    if (!r->has_classes) {
        r->classes[0].req = r->req;
        r->classes[0].tasks = r->tasks;
        return UTIL_OK;
    }
    bool any_slo = false, any_task_slo = false;
    r->req.good = r->req.ended = 0;
    r->tasks.good = 0;
    for (int i = 0; i < r->n_classes; i++) {
        an_class *c = &r->classes[i];
        q->cls = c->name;
        int rc = load_tasks(q, &c->tasks, c->req.slo.task_e2e_s, c->req.window_s, d);
        if (rc) return rc;
        any_slo |= c->req.slo.set;
        any_task_slo |= !isnan(c->tasks.slo_s);
        r->req.good += c->req.good;
        r->req.ended += c->req.ended;
        r->tasks.good += c->tasks.good;
    }
    q->cls = NULL;
    an__set_attainment(&r->req, any_slo);
    an__set_task_attainment(&r->tasks, any_task_slo, r->req.window_s);
    return UTIL_OK;
}

/* The replicas' rows (each marked from the stored scenario sc), then one
 * scan of the requests for every section, the hit rates and the queues --
 * or the sections a stream of the same run's rows made as they were
 * recorded -- then what needs the run's section. */
static int load_sections(an__query *q, const cJSON *sc, bool by_replica, bool by_model,
                         an_stream *stream, an_report *r, util_diag *d)
{
    an__usage *u = NULL;
    bool unordered = false;
    int rc = an__usage_begin(q, by_replica, r, &u, d);
    if (!rc) {
        mark_decoders(r);
        mark_weight_only(sc, r);
    }
    if (!rc && by_model) rc = an__models_begin(q, sc, r, d);
    if (!rc && !(stream && an__stream_sections(stream, q, r, &unordered, &rc, d)))
        rc = an__scan_requests(q, r, an__usage_replica_ids(u), &unordered, d);
    if (!rc) rc = load_tasks(q, &r->tasks, r->req.slo.task_e2e_s, r->req.window_s, d);
    if (!rc) rc = load_classes_tasks(q, r, d);
    if (!rc) rc = an__usage_end(q, u, unordered, r, d);
    if (!rc && by_model) an__models_end(r); /* after the cost's overhead is known */
    an__usage_free(u);
    return rc;
}

/* The requests read are the requests the run recorded (runs.requests,
 * schema 9): a damaged file can read as fewer rows without an error (a
 * B-tree page of random bytes ends a range scan early), so a report of a
 * part would pass for the whole. */
/* The attempts left out as retried (schema 13 on). */
static int count_retried(const an__query *q, an_report *r, util_diag *d)
{
    if (q->schema < AN__SCHEMA_RETRY) return UTIL_OK;
    double n = 0;
    if (an__row(q, "SELECT count(*) FROM requests WHERE run_id = ?1 AND retried", &n, 1, d))
        return UTIL_EFAIL;
    r->retried_attempts = (int64_t)n;
    return UTIL_OK;
}

static int check_recorded(const an__query *q, const an_report *r, util_diag *d)
{
    if (q->schema < AN__SCHEMA_COUNTS) return UTIL_OK;
    double n = NAN;
    if (an__row(q, "SELECT requests FROM runs WHERE id = ?1", &n, 1, d)) return UTIL_EFAIL;
    int64_t read = r->req.arrived + r->skipped_rows + r->retried_attempts;
    if (isnan(n) || (int64_t)n == read) return UTIL_OK;
    char *why = util_xasprintf("run %lld recorded %lld requests, %lld could be read",
                               (long long)q->run, (long long)n, (long long)read);
    int rc = an__damaged(q->db, why, d);
    free(why);
    return rc;
}

/* --by tenant and --by tier read requests.tenant and priority, which a
 * database before schema 11 does not have: said, rather than one group. */
static int check_groups(const an__query *q, const an_report *r, util_diag *d)
{
    if ((!r->by_tenant && !r->by_tier) || q->schema >= AN__SCHEMA_TENANT) return UTIL_OK;
    return util_diag_add(d, "--by %s: run %lld predates tenants and priorities: its database is "
                            "of schema %d, and requests.tenant and priority came in schema %d "
                            "(run its scenario again with this servesim)",
                         r->by_tenant ? "tenant" : "tier", (long long)q->run, q->schema,
                         AN__SCHEMA_TENANT);
}

int an_report_compute_with(sqlite3 *db, int64_t run_id, const an_options *opt, an_report *r,
                           util_diag *d)
{
    memset(r, 0, sizeof *r);
    r->run_id = run_id;
    an__query q = {db, run_id, 0, NULL, -1, an__schema(db), opt ? opt->scan_budget_values : 0};
    cJSON *sc = NULL;
    r->by_tenant = opt && opt->by_tenant;
    r->by_tier = opt && opt->by_tier;
    int rc = load_run(&q, opt, r, &sc, d);
    if (!rc) rc = check_groups(&q, r, d);
    if (!rc)
        rc = load_sections(&q, sc, opt && opt->by_replica, opt && opt->by_model,
                           opt ? opt->stream : NULL, r, d);
    r->by_session = opt && opt->by_session;
    if (!rc && r->by_session) rc = an__sessions_load(&q, sc, r, d);
    cJSON_Delete(sc);
    if (!rc) rc = count_retried(&q, r, d);
    if (!rc) rc = an__fleet_sections_load(&q, r, d);
    if (!rc && !(opt && opt->stream)) rc = check_recorded(&q, r, d);
    if (!rc && (r->n_targets || (opt && opt->n_targets))) rc = an__load_targets(&q, opt, r, d);
    if (rc == UTIL_EFAIL && (sqlite3_errcode(db) & 0xff) == SQLITE_CORRUPT)
        rc = an__damaged(db, "SQLite found it malformed", d);
    return rc;
}

int an_report_compute(sqlite3 *db, int64_t run_id, an_report *r, util_diag *d)
{
    return an_report_compute_with(db, run_id, NULL, r, d);
}

void an_report_fini(an_report *r)
{
    free(r->name);
    free(r->status);
    free(r->status_reason);
    for (int i = 0; i < r->n_classes; i++) {
        free(r->classes[i].name);
        free(r->classes[i].priority);
        free(r->classes[i].tenant);
    }
    free(r->classes);
    for (int i = 0; i < r->n_tenants; i++) free(r->tenants[i].name);
    for (int i = 0; i < r->n_tiers; i++) free(r->tiers[i].name);
    free(r->tenants);
    free(r->tiers);
    free(r->targets);
    free(r->measured_format);
    free(r->measured_source);
    free(r->measured_clock);
    free(r->measured_metrics);
    free(r->calibration_path);
    free(r->calibration_gpu);
    free(r->calibration_engine);
    free(r->calibration_fitted_on);
    free(r->decode_pool);
    an__models_fini(r);
    free(r->turns);
    an__usage_fini(r);
    memset(r, 0, sizeof *r);
}
