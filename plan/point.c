/*
 * point.c: one point of a sweep or a plan -- the base scenario with its
 * overrides and seed, simulated into a database of its own and summarised
 * there, with overload classified rather than waited out.
 *
 * Overload: arrivals that outpace completions leave a backlog that grows
 * with the run.  A run stops as soon as more requests are in flight than
 * twice the cluster's batch slots plus 1,000 (closed-loop users can never
 * exceed their number), which bounds every point's time; a run that ends
 * with more than a tenth of its requests still queued behind full batches
 * when arrivals stopped is marked overloaded too.
 */
#include "pl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an.h"

/* "path=value" for util_json_set, the value as JSON. */
static int apply(cJSON *root, const char *path, const cJSON *value, util_diag *d)
{
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

/* The in-flight limit: see the file's comment. */
static int64_t in_flight_limit(const sim_scenario *sc)
{
    int64_t slots = 0, users = 0;
    for (int i = 0; i < sc->n_pools; i++)
        slots += (int64_t)sc->pools[i].replicas * sc->pools[i].max_batch;
    const wl_spec *w = &sc->workload;
    for (int i = 0; i < w->n_streams; i++)
        if (w->streams[i].process == WL_CLOSED) users += w->streams[i].users;
    int64_t limit = 2 * slots + 1000;
    return users + 1 > limit ? users + 1 : limit;
}

static bool closed_loop(const sim_scenario *sc)
{
    for (int i = 0; i < sc->workload.n_streams; i++)
        if (sc->workload.streams[i].process == WL_CLOSED) return true;
    return false;
}

static double q1(sqlite3 *db, int64_t run, const char *sql)
{
    sqlite3_stmt *st;
    double v = NAN;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run);
        if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

/* Arrivals outpaced completions: the backlog when the last request was sent
 * is more than the batch slots could hold plus a tenth of all requests. */
static bool backlogged(sqlite3 *db, int64_t run, const sim_scenario *sc)
{
    if (closed_loop(sc)) return false; /* users wait for their replies: never a backlog */
    double slots = 0;
    for (int i = 0; i < sc->n_pools; i++) slots += sc->pools[i].replicas * sc->pools[i].max_batch;
    double sent = q1(db, run, "SELECT count(*) FROM requests WHERE run_id = ?1");
    double left = q1(db, run, "SELECT count(*) FROM requests, (SELECT max(arrival_s) AS t FROM "
                              "requests WHERE run_id = ?1) WHERE run_id = ?1 AND "
                              "coalesce(finish_s, 1e300) > t AND status <> 'rejected'");
    return left > slots + 0.1 * sent;
}

static int mark_overloaded(sqlite3 *db, int64_t run, util_diag *d)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "UPDATE runs SET status = 'overloaded' WHERE id = ?1", -1, &st,
                                NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK : util_diag_fail(d, "cannot mark the run: %s",
                                                        sqlite3_errmsg(db));
}

/* The figures of a stored run, with the base's SLOs and targets. */
int pl_summarise(sqlite3 *db, int64_t run, const pl_base *b, pl_summary *out, util_diag *d)
{
    an_options opt = {0};
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
            .busy_fraction = r.use.busy_fraction,
            .usd_per_million_output_tokens = r.cost.usd_per_million_output_tokens,
            .j_per_output_token = r.energy.gpu_j_per_output_token,
            .n_targets = r.n_targets < 8 ? r.n_targets : 8,
        };
        for (int i = 0; i < out->n_targets; i++) out->target_value[i] = r.targets[i].value_s;
    }
    an_report_fini(&r);
    an_options_fini(&opt);
    return rc;
}

/* Simulates sc into rec as the labelled run; the run's status follows how
 * it ended. */
static int simulate(const sim_scenario *sc, sim_recorder *rec, int64_t *run, util_diag *d)
{
    int rc = sim_recorder_begin(rec, sc, run, d);
    if (rc) return rc;
    sim_sink sink = sim_recorder_sink(rec);
    sim_engine *e = sim_engine_create(sc, &sink);
    sim_engine_limit_in_flight(e, in_flight_limit(sc));
    rc = sim_engine_run(e, NULL, NULL, NULL);
    sim_progress pr;
    sim_engine_progress(e, &pr);
    if (rc == UTIL_EFAIL && sim_engine_error(e)) util_diag_add(d, "%s", sim_engine_error(e));
    sim_engine_destroy(e);
    if (rc == UTIL_OK || rc == SIM_EOVERLOAD)
        return sim_recorder_finish(rec, rc ? "overloaded" : "completed", pr.sim_s, 0, pr.events, d);
    if (rc == UTIL_EFAIL) util_diag_add(d, "%s", sim_recorder_error(rec));
    return UTIL_EFAIL;
}

int pl_point_run(const pl_base *b, const pl_point *p, const char *path, pl_summary *out,
                 util_diag *d)
{
    char *json = NULL;
    int rc = pl_point_scenario(b, p, &json, d);
    if (rc) return rc;
    sim_scenario sc;
    rc = sim_scenario_load(cJSON_Parse(json), b->catalog, b->base_dir, &sc, d);
    char *overrides = cJSON_PrintUnformatted(p->overrides);
    sim_recorder *rec = NULL;
    if (!rc) rc = sim_recorder_open(path, &rec, d);
    int64_t run = 0;
    if (!rc) {
        sim_run_label label = {overrides, b->sweep, p->run_id};
        sim_recorder_label(rec, &label);
        sim_recorder_scratch(rec); /* a point's file is merged, then deleted */
        rc = simulate(&sc, rec, &run, d);
        if (rc) sim_recorder_abort(rec);
    }
    sqlite3 *db = rec && !rc ? sim_recorder_db(rec) : NULL;
    if (db && backlogged(db, run, &sc)) rc = mark_overloaded(db, run, d);
    if (db && !rc) rc = pl_summarise(db, run, b, out, d);
    sim_recorder_close(rec);
    sim_scenario_fini(&sc);
    free(overrides);
    free(json);
    return rc;
}

/* ---- a summary as one line of JSON, from a worker to the parent ---- */

#define FIELDS(X)                                                                                  \
    X(ttft_p50) X(ttft_p99) X(tpot_p50) X(tpot_p99) X(requests_per_s) X(output_tokens_per_s)       \
    X(goodput_requests_per_s) X(attainment) X(busy_fraction) X(usd_per_million_output_tokens)     \
    X(j_per_output_token)

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
    for (int i = 0; i < s->n_targets; i++)
        cJSON_AddItemToArray(t, isnan(s->target_value[i]) ? cJSON_CreateNull()
                                                          : cJSON_CreateNumber(s->target_value[i]));
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
        cJSON_IsNumber(v) ? v->valuedouble : NAN;
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
    int rc = pl_point_run(base, &p, path ? path : ":memory:", &s, &d);
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

int pl_point_report(const pl_base *b, const pl_point *p, bool iterations, cJSON **report,
                    util_diag *d)
{
    *report = NULL;
    char *json = NULL;
    int rc = pl_point_scenario(b, p, &json, d);
    if (rc) return rc;
    sim_scenario sc;
    rc = sim_scenario_load(cJSON_Parse(json), b->catalog, b->base_dir, &sc, d);
    sim_recorder *rec = NULL;
    if (!rc) rc = sim_recorder_open(":memory:", &rec, d);
    int64_t run = 0;
    if (!rc) rc = sim_recorder_begin(rec, &sc, &run, d);
    if (!rc) {
        sim_sink sink = iterations ? sim_recorder_sink_with_iterations(rec) : sim_recorder_sink(rec);
        sim_engine *e = sim_engine_create(&sc, &sink);
        sim_engine_limit_in_flight(e, in_flight_limit(&sc));
        int erc = sim_engine_run(e, NULL, NULL, NULL);
        sim_progress pr;
        sim_engine_progress(e, &pr);
        sim_engine_destroy(e);
        rc = erc == UTIL_OK || erc == SIM_EOVERLOAD
                 ? sim_recorder_finish(rec, erc ? "overloaded" : "completed", pr.sim_s, 0,
                                       pr.events, d)
                 : util_diag_fail(d, "%s", sim_recorder_error(rec));
    }
    an_options opt = {0};
    for (int i = 0; !rc && i < b->n_slo_args; i++) rc = an_options_add_slo(&opt, b->slo_args[i], d);
    an_report r = {0};
    if (!rc) rc = an_report_compute_with(sim_recorder_db(rec), run, &opt, &r, d);
    if (!rc) {
        *report = an_report_json(&r, true);
        an_definition defs[AN_N_DEFINITIONS];
        if (iterations && !(rc = an_definitions(sim_recorder_db(rec), run, defs, d)))
            cJSON_AddItemToObject(*report, "definitions", an_definitions_json(defs));
    }
    an_report_fini(&r);
    an_options_fini(&opt);
    sim_recorder_close(rec);
    sim_scenario_fini(&sc);
    free(json);
    return rc;
}
