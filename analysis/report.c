/*
 * report.c: the report of one run, from the database alone.  Per-request
 * metrics come from the `request_metrics` view (their one definition, in
 * SQL); each distribution is read into memory one metric at a time, so the
 * report needs 8 bytes per measured request, not a row cache.  A class's
 * sections are the same queries with the class bound.
 */
#include "an.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define APPLICATION_ID 0x53657276

/* Every query here may use ?1 = run id, ?2 = warm-up seconds and ?3 = a
 * class name, NULL for every class (binding an absent parameter is
 * harmless). */
typedef struct query {
    sqlite3 *db;
    int64_t run;
    double warmup;
    const char *cls;
} query;

#define IN_CLASS " AND (?3 IS NULL OR class = ?3)"

static int db_fail(sqlite3 *db, util_diag *d, const char *what)
{
    return util_diag_fail(d, "%s: %s", what, sqlite3_errmsg(db));
}

static sqlite3_stmt *prepare(const query *q, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_int64(st, 1, q->run);
    sqlite3_bind_double(st, 2, q->warmup);
    if (q->cls) sqlite3_bind_text(st, 3, q->cls, -1, SQLITE_STATIC);
    return st;
}

/* Runs a one-row query and copies its columns as doubles (NULL -> NAN). */
static int row(const query *q, const char *sql, double *out, int n, util_diag *d)
{
    for (int i = 0; i < n; i++) out[i] = NAN;
    sqlite3_stmt *st = prepare(q, sql);
    if (!st) return db_fail(q->db, d, "cannot query");
    int rc = sqlite3_step(st);
    for (int i = 0; i < n; i++)
        out[i] = (rc == SQLITE_ROW && sqlite3_column_type(st, i) != SQLITE_NULL)
                     ? sqlite3_column_double(st, i) : NAN;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? UTIL_OK : db_fail(q->db, d, "cannot query");
}

/* One metric of the rows of a view that pass a filter, summarised. */
static int metric_of(const query *q, const char *view, const char *filter, const char *expr,
                     an_stats *out, util_diag *d)
{
    char *sql = util_xasprintf("SELECT %s FROM %s WHERE run_id = ?1 AND %s" IN_CLASS
                               " AND %s IS NOT NULL",
                               expr, view, filter, expr);
    sqlite3_stmt *st = prepare(q, sql);
    free(sql);
    if (!st) return db_fail(q->db, d, "cannot query");
    size_t n = 0, cap = 1024;
    double *v = util_xmalloc(cap * sizeof *v);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) v = util_xrealloc(v, (cap *= 2) * sizeof *v);
        v[n++] = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) an_stats_compute(v, n, out);
    free(v);
    return rc == SQLITE_DONE ? UTIL_OK : db_fail(q->db, d, "cannot read requests");
}

/* One metric of the measured requests. */
static int metric(const query *q, const char *expr, an_stats *out, util_diag *d)
{
    return metric_of(q, "request_metrics", "status = 'completed' AND arrival_s >= ?2", expr, out,
                     d);
}

int an_open(const char *path, sqlite3 **out, util_diag *d)
{
    struct stat st;
    if (stat(path, &st) != 0) return util_diag_add(d, "%s: no such file", path);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        util_diag_add(d, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "?");
        sqlite3_close(db);
        return UTIL_EINPUT;
    }
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &q, NULL);
    int64_t app = (rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) ? sqlite3_column_int64(q, 0)
                                                                     : -1;
    rc = sqlite3_errcode(db);
    sqlite3_finalize(q);
    if (app != APPLICATION_ID) {
        util_diag_add(d, "%s: %s", path,
                      rc == SQLITE_NOTADB ? "not a SQLite database" : "not a servesim database");
        sqlite3_close(db);
        return UTIL_EINPUT;
    }
    *out = db;
    return UTIL_OK;
}

int an_last_run(sqlite3 *db, const char *origin, int64_t *run_id, util_diag *d)
{
    query q = {db, 0, 0, NULL};
    double id = NAN;
    if (row(&q, "SELECT max(id) FROM runs", &id, 1, d)) return UTIL_EFAIL;
    if (isnan(id)) return util_diag_add(d, "%s: holds no runs", origin);
    *run_id = (int64_t)id;
    return UTIL_OK;
}

static char *column_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return util_xstrdup(t ? (const char *)t : "");
}

static double column_num(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}


/* The targets in obj.slo, each falling back to base's (NULL: none). */
static an_slo slo_from(const cJSON *obj, const an_slo *base)
{
    const cJSON *slo = cJSON_GetObjectItemCaseSensitive(obj, "slo");
    an_slo s = {
        util_json_number(slo, "ttft_s", base ? base->ttft_s : NAN),
        util_json_number(slo, "tpot_s", base ? base->tpot_s : NAN),
        util_json_number(slo, "e2e_s", base ? base->e2e_s : NAN),
        false,
    };
    s.set = !isnan(s.ttft_s) || !isnan(s.tpot_s) || !isnan(s.e2e_s);
    return s;
}

/* The classes of the stored scenario, each with its SLO; without
 * workload.classes, one class "default" (the engine's name for it). */
static void load_classes(const cJSON *sc, an_report *r)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(sc, "workload"), "classes");
    r->has_classes = cJSON_IsArray(list) && cJSON_GetArraySize(list) > 0;
    r->n_classes = r->has_classes ? cJSON_GetArraySize(list) : 1;
    r->classes = util_xcalloc((size_t)r->n_classes, sizeof *r->classes);
    if (!r->has_classes) {
        r->classes[0].name = util_xstrdup("default");
        r->classes[0].req.slo = r->req.slo;
        return;
    }
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, list) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
        r->classes[i].name = util_xstrdup(cJSON_IsString(name) ? name->valuestring : "?");
        r->classes[i].req.slo = slo_from(c, &r->req.slo);
        i++;
    }
}

/* The run's row, and from its stored scenario the warm-up, SLOs and classes. */
static int load_run(query *q, an_report *r, util_diag *d)
{
    sqlite3_stmt *st = prepare(q, "SELECT name, seed, status, sim_end_s, wall_s, events, "
                                  "scenario FROM runs WHERE id = ?1");
    if (!st) return db_fail(q->db, d, "cannot read runs");
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return util_diag_add(d, "no run with id %lld", (long long)q->run);
    }
    r->name = column_text(st, 0);
    r->seed = sqlite3_column_int64(st, 1);
    r->status = column_text(st, 2);
    r->sim_time_s = column_num(st, 3);
    r->wall_time_s = column_num(st, 4);
    r->events = sqlite3_column_int64(st, 5);
    cJSON *sc = cJSON_Parse((const char *)sqlite3_column_text(st, 6));
    sqlite3_finalize(st);
    if (!sc) return util_diag_add(d, "run %lld: stored scenario is not JSON", (long long)q->run);
    r->warmup_s = util_json_number(sc, "warmup_s", 0);
    r->req.slo = slo_from(sc, NULL);
    load_classes(sc, r);
    cJSON_Delete(sc);
    q->warmup = r->warmup_s;
    return UTIL_OK;
}

static int load_counts(const query *q, an_section *s, util_diag *d)
{
    double c[8];
    int rc = row(q,
                 "SELECT count(*), total(status = 'completed'),"
                 " total(status = 'completed' AND arrival_s >= ?2), total(status = 'rejected'),"
                 " total(status = 'timed_out'), total(status = 'unfinished'),"
                 " total(preemptions > 0), total(preemptions)"
                 " FROM requests WHERE run_id = ?1" IN_CLASS,
                 c, 8, d);
    s->arrived = (int64_t)c[0];
    s->completed = (int64_t)c[1];
    s->measured = (int64_t)c[2];
    s->rejected = (int64_t)c[3];
    s->timed_out = (int64_t)c[4];
    s->unfinished = (int64_t)c[5];
    s->preempted = (int64_t)c[6];
    s->preemptions = (int64_t)c[7];
    return rc;
}

static int load_latency(const query *q, an_section *s, util_diag *d)
{
    if (metric(q, "ttft_s", &s->ttft, d) || metric(q, "tpot_s", &s->tpot, d) ||
        metric(q, "tpot_incl_ttft_s", &s->tpot_incl_ttft, d) || metric(q, "e2e_s", &s->e2e, d) ||
        metric(q, "queue_s", &s->queue, d) ||
        metric(q, "1.0 / tpot_s", &s->per_user_tokens_per_s, d))
        return UTIL_EFAIL;
    return UTIL_OK;
}

static double ratio(double a, double b)
{
    return b > 0 ? a / b : NAN;
}

static int load_throughput(const query *q, an_section *s, util_diag *d)
{
    double w[4];
    if (row(q,
            "SELECT (SELECT min(arrival_s) FROM requests WHERE run_id = ?1 AND arrival_s >= ?2"
            IN_CLASS "), max(finish_s), total(prompt_tokens), total(output_tokens) FROM requests"
            " WHERE run_id = ?1 AND status = 'completed' AND arrival_s >= ?2" IN_CLASS,
            w, 4, d))
        return UTIL_EFAIL;
    s->window_s = w[1] - w[0];
    s->requests_per_s = ratio((double)s->measured, s->window_s);
    s->input_tokens_per_s = ratio(w[2], s->window_s);
    s->output_tokens_per_s = ratio(w[3], s->window_s);
    return UTIL_OK;
}

static void bind_threshold(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v)) sqlite3_bind_null(st, i);
    else sqlite3_bind_double(st, i, v);
}

/* Counts good and ended requests; with no SLO set, every completed request
 * is good (it meets every target there is), so that a class without targets
 * still adds to the run's attainment. */
static int load_slo(const query *q, an_section *s, util_diag *d)
{
    sqlite3_stmt *st = prepare(
        q, "SELECT total(status = 'completed' AND (?4 IS NULL OR ttft_s <= ?4)"
           " AND (?5 IS NULL OR tpot_s IS NULL OR tpot_s <= ?5) AND (?6 IS NULL OR e2e_s <= ?6)),"
           " total(status IN ('completed', 'rejected', 'timed_out'))"
           " FROM request_metrics WHERE run_id = ?1 AND arrival_s >= ?2" IN_CLASS);
    if (!st) return db_fail(q->db, d, "cannot query");
    bind_threshold(st, 4, s->slo.ttft_s);
    bind_threshold(st, 5, s->slo.tpot_s);
    bind_threshold(st, 6, s->slo.e2e_s);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        s->good = (int64_t)sqlite3_column_double(st, 0);
        s->ended = (int64_t)sqlite3_column_double(st, 1);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? UTIL_OK : db_fail(q->db, d, "cannot query");
}

static void set_attainment(an_section *s, bool applies)
{
    s->attainment = applies ? ratio((double)s->good, (double)s->ended) : NAN;
    s->goodput_requests_per_s = applies ? ratio((double)s->good, s->window_s) : NAN;
}

static int load_section(const query *q, an_section *s, util_diag *d)
{
    int rc = load_counts(q, s, d);
    if (!rc) rc = load_latency(q, s, d);
    if (!rc) rc = load_throughput(q, s, d);
    if (!rc) rc = load_slo(q, s, d);
    set_attainment(s, s->slo.set);
    return rc;
}

static int load_tasks(const query *q, an_tasks *t, util_diag *d)
{
    double c[6];
    if (row(q,
            "SELECT count(*), total(status = 'completed'), total(status = 'failed'),"
            " total(status = 'unfinished'), avg(CASE WHEN status <> 'unfinished' THEN calls END),"
            " avg(CASE WHEN status <> 'unfinished' THEN slow_calls > 0 END)"
            " FROM tasks WHERE run_id = ?1 AND start_s >= ?2" IN_CLASS,
            c, 6, d))
        return UTIL_EFAIL;
    t->count = (int64_t)c[0];
    t->completed = (int64_t)c[1];
    t->failed = (int64_t)c[2];
    t->unfinished = (int64_t)c[3];
    t->calls_per_task = c[4];
    t->any_slow_fraction = c[5];
    return metric_of(q, "task_metrics", "status = 'completed' AND start_s >= ?2", "e2e_s", &t->e2e,
                     d);
}

/* MFU and MBU are achieved over peak while busy; the busy fraction says how
 * much of the simulated time that was. */
static int load_utilisation(const query *q, an_report *r, util_diag *d)
{
    double u[8];
    if (row(q,
            "SELECT count(*), total(busy_s), total(batch_seq_s), total(flops),"
            " total(peak_flops * busy_s), total(bytes), total(peak_bw * busy_s),"
            " max(1.0 * kv_peak_tokens / kv_capacity_tokens) FROM replicas WHERE run_id = ?1",
            u, 8, d))
        return UTIL_EFAIL;
    r->replicas = (int)u[0];
    r->busy_fraction = ratio(u[1], u[0] * r->sim_time_s);
    r->mean_batch = ratio(u[2], u[1]);
    r->mfu = ratio(u[3], u[4]);
    r->mbu = ratio(u[5], u[6]);
    r->kv_peak_fraction = u[7];
    return UTIL_OK;
}

/* Each class's sections; the run's attainment is then the classes' good
 * over their ended requests, each judged by its own targets.  Without
 * workload.classes the one class is the run, and is not queried twice. */
static int load_classes_sections(query *q, an_report *r, util_diag *d)
{
    if (!r->has_classes) {
        r->classes[0].req = r->req;
        r->classes[0].tasks = r->tasks;
        return UTIL_OK;
    }
    bool any_slo = false;
    r->req.good = r->req.ended = 0;
    for (int i = 0; i < r->n_classes; i++) {
        an_class *c = &r->classes[i];
        q->cls = c->name;
        int rc = load_section(q, &c->req, d);
        if (!rc) rc = load_tasks(q, &c->tasks, d);
        if (rc) return rc;
        any_slo |= c->req.slo.set;
        r->req.good += c->req.good;
        r->req.ended += c->req.ended;
    }
    q->cls = NULL;
    set_attainment(&r->req, any_slo);
    return UTIL_OK;
}

int an_report_compute(sqlite3 *db, int64_t run_id, an_report *r, util_diag *d)
{
    memset(r, 0, sizeof *r);
    r->run_id = run_id;
    query q = {db, run_id, 0, NULL};
    int rc = load_run(&q, r, d);
    if (!rc) rc = load_section(&q, &r->req, d);
    if (!rc) rc = load_tasks(&q, &r->tasks, d);
    if (!rc) rc = load_classes_sections(&q, r, d);
    if (!rc) rc = load_utilisation(&q, r, d);
    return rc;
}

void an_report_fini(an_report *r)
{
    free(r->name);
    free(r->status);
    for (int i = 0; i < r->n_classes; i++) free(r->classes[i].name);
    free(r->classes);
    memset(r, 0, sizeof *r);
}
