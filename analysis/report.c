/*
 * report.c: the report of one run, from the database alone.  Per-request
 * metrics come from the `request_metrics` view (their one definition, in
 * SQL); each distribution is read into memory one metric at a time, so the
 * report needs 8 bytes per measured request, not a row cache.
 */
#include "an.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define APPLICATION_ID 0x53657276

/* Every query here may use ?1 = run id and ?2 = warm-up seconds (binding an
 * absent parameter is harmless). */
typedef struct query {
    sqlite3 *db;
    int64_t run;
    double warmup;
} query;

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

/* One metric of the measured requests, summarised. */
static int metric(const query *q, const char *expr, an_stats *out, util_diag *d)
{
    char *sql = util_xasprintf("SELECT %s FROM request_metrics WHERE run_id = ?1 AND "
                               "status = 'completed' AND arrival_s >= ?2 AND %s IS NOT NULL",
                               expr, expr);
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

int an_open(const char *path, sqlite3 **out, util_diag *d)
{
    struct stat st;
    if (stat(path, &st) != 0) return util_diag_add(d, "%s: no such file", path);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
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
    query q = {db, 0, 0};
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

/* The run's row, and from its stored scenario the warm-up and the SLO. */
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
    r->slo_ttft_s = util_json_number(sc, "slo.ttft_s", NAN);
    r->slo_tpot_s = util_json_number(sc, "slo.tpot_s", NAN);
    r->slo_e2e_s = util_json_number(sc, "slo.e2e_s", NAN);
    r->slo_set = !isnan(r->slo_ttft_s) || !isnan(r->slo_tpot_s) || !isnan(r->slo_e2e_s);
    cJSON_Delete(sc);
    q->warmup = r->warmup_s;
    return UTIL_OK;
}

static int load_counts(const query *q, an_report *r, util_diag *d)
{
    double c[7];
    int rc = row(q,
                 "SELECT count(*), total(status = 'completed'),"
                 " total(status = 'completed' AND arrival_s >= ?2), total(status = 'rejected'),"
                 " total(status = 'unfinished'), total(preemptions > 0), total(preemptions)"
                 " FROM requests WHERE run_id = ?1",
                 c, 7, d);
    r->arrived = (int64_t)c[0];
    r->completed = (int64_t)c[1];
    r->measured = (int64_t)c[2];
    r->rejected = (int64_t)c[3];
    r->unfinished = (int64_t)c[4];
    r->preempted = (int64_t)c[5];
    r->preemptions = (int64_t)c[6];
    return rc;
}

static int load_latency(const query *q, an_report *r, util_diag *d)
{
    if (metric(q, "ttft_s", &r->ttft, d) || metric(q, "tpot_s", &r->tpot, d) ||
        metric(q, "tpot_incl_ttft_s", &r->tpot_incl_ttft, d) || metric(q, "e2e_s", &r->e2e, d) ||
        metric(q, "queue_s", &r->queue, d) ||
        metric(q, "1.0 / tpot_s", &r->per_user_tokens_per_s, d))
        return UTIL_EFAIL;
    return UTIL_OK;
}

static double ratio(double a, double b)
{
    return b > 0 ? a / b : NAN;
}

static int load_throughput(const query *q, an_report *r, util_diag *d)
{
    double w[4];
    if (row(q,
            "SELECT (SELECT min(arrival_s) FROM requests WHERE run_id = ?1 AND arrival_s >= ?2),"
            " max(finish_s), total(prompt_tokens), total(output_tokens) FROM requests"
            " WHERE run_id = ?1 AND status = 'completed' AND arrival_s >= ?2",
            w, 4, d))
        return UTIL_EFAIL;
    r->window_s = w[1] - w[0];
    r->requests_per_s = ratio((double)r->measured, r->window_s);
    r->input_tokens_per_s = ratio(w[2], r->window_s);
    r->output_tokens_per_s = ratio(w[3], r->window_s);
    return UTIL_OK;
}

static int load_slo(const query *q, an_report *r, util_diag *d)
{
    r->attainment = r->goodput_requests_per_s = NAN;
    if (!r->slo_set) return UTIL_OK;
    sqlite3_stmt *st = prepare(
        q, "SELECT total(status = 'completed' AND (?3 IS NULL OR ttft_s <= ?3)"
           " AND (?4 IS NULL OR tpot_s IS NULL OR tpot_s <= ?4) AND (?5 IS NULL OR e2e_s <= ?5)),"
           " total(status IN ('completed', 'rejected'))"
           " FROM request_metrics WHERE run_id = ?1 AND arrival_s >= ?2");
    if (!st) return db_fail(q->db, d, "cannot query");
    const double thr[3] = {r->slo_ttft_s, r->slo_tpot_s, r->slo_e2e_s};
    for (int i = 0; i < 3; i++) {
        if (isnan(thr[i])) sqlite3_bind_null(st, 3 + i);
        else sqlite3_bind_double(st, 3 + i, thr[i]);
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        double good = sqlite3_column_double(st, 0), ended = sqlite3_column_double(st, 1);
        r->attainment = ratio(good, ended);
        r->goodput_requests_per_s = ratio(good, r->window_s);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? UTIL_OK : db_fail(q->db, d, "cannot query");
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

int an_report_compute(sqlite3 *db, int64_t run_id, an_report *r, util_diag *d)
{
    memset(r, 0, sizeof *r);
    r->run_id = run_id;
    query q = {db, run_id, 0};
    int rc = load_run(&q, r, d);
    if (!rc) rc = load_counts(&q, r, d);
    if (!rc) rc = load_latency(&q, r, d);
    if (!rc) rc = load_throughput(&q, r, d);
    if (!rc) rc = load_slo(&q, r, d);
    if (!rc) rc = load_utilisation(&q, r, d);
    return rc;
}

void an_report_fini(an_report *r)
{
    free(r->name);
    free(r->status);
    memset(r, 0, sizeof *r);
}
