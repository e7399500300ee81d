/*
 * compare.c: a measured run against a simulated one, metric by metric, on
 * the clock the measurement used.  Both sides' figures come from the same
 * definitions: the report's sections (an_report_compute) on the client's
 * clock, the engine-clock definitions (ttft_engine, e2e_engine) on the
 * engine's; TPOT and the gap between tokens are the difference of two
 * stamps of one clock, the same on either.  A measured run without
 * requests (inference-perf's aggregates, a measured-run JSON of metrics
 * only) is compared on the figures its tool gave.
 */
#include "val_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double val_error_pct(double predicted, double measured)
{
    return 100 * (predicted - measured) / measured;
}

static void put_stats(const an_stats *s, double *mean, double *p50, double *p90, double *p99)
{
    bool none = s->n == 0;
    *mean = none ? NAN : s->mean;
    *p50 = none ? NAN : s->p50;
    *p90 = none ? NAN : s->p90;
    *p99 = none ? NAN : s->p99;
}

/* The mean gap between tokens over every gap of the measured requests
 * (vLLM's mean ITL), not the mean of each request's mean (TPOT). */
static double pooled_itl(sqlite3 *db, int64_t run_id, double warmup_s)
{
    sqlite3_stmt *st;
    double v = NAN;
    if (sqlite3_prepare_v2(db,
                           "SELECT total(finish_s - first_token_s) / total(output_tokens - 1) "
                           "FROM requests WHERE run_id = ?1 AND status = 'completed' "
                           "AND output_tokens >= 2 AND arrival_s >= ?2",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_double(st, 2, warmup_s);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            v = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    return isfinite(v) ? v : NAN;
}

/* TTFT and E2E on the engine core's clock. */
static int engine_clock(sqlite3 *db, int64_t run_id, double out[VAL_N_AGG], util_diag *d)
{
    an_definition ttft, e2e;
    int rc = an_definition_of(db, run_id, "ttft_engine", &ttft, d);
    if (!rc) rc = an_definition_of(db, run_id, "e2e_engine", &e2e, d);
    if (rc) return rc;
    put_stats(&ttft.stats, &out[VAL_TTFT_MEAN], &out[VAL_TTFT_P50], &out[VAL_TTFT_P90],
              &out[VAL_TTFT_P99]);
    put_stats(&e2e.stats, &out[VAL_E2E_MEAN], &out[VAL_E2E_P50], &out[VAL_E2E_P90],
              &out[VAL_E2E_P99]);
    return UTIL_OK;
}

int val_run_metrics(sqlite3 *db, int64_t run_id, const char *clock, double out[VAL_N_AGG],
                    util_diag *d)
{
    an_report r;
    int rc = an_report_compute(db, run_id, &r, d);
    if (!rc) {
        const an_section *s = &r.req;
        put_stats(&s->ttft, &out[VAL_TTFT_MEAN], &out[VAL_TTFT_P50], &out[VAL_TTFT_P90],
                  &out[VAL_TTFT_P99]);
        put_stats(&s->tpot, &out[VAL_TPOT_MEAN], &out[VAL_TPOT_P50], &out[VAL_TPOT_P90],
                  &out[VAL_TPOT_P99]);
        put_stats(&s->e2e, &out[VAL_E2E_MEAN], &out[VAL_E2E_P50], &out[VAL_E2E_P90],
                  &out[VAL_E2E_P99]);
        out[VAL_ITL_MEAN] = pooled_itl(db, run_id, r.warmup_s);
        out[VAL_OUTPUT_TPS] = s->measured ? s->output_tokens_per_s : NAN;
    }
    an_report_fini(&r);
    if (!rc && clock && !strcmp(clock, "engine")) rc = engine_clock(db, run_id, out, d);
    return rc;
}

/* What m gives, its requests being run id of db where it has them. */
static int figures_of(const val_run *m, sqlite3 *db, int64_t id, double out[VAL_N_AGG],
                      util_diag *d)
{
    if (!val_has_completed(m)) {
        memcpy(out, m->metrics, sizeof m->metrics);
        return UTIL_OK;
    }
    int rc = val_run_metrics(db, id, NULL, out, d);
    /* every arrival at 0 spans the run wrong: the tool's own throughput */
    if (m->arrivals_unknown) out[VAL_OUTPUT_TPS] = m->metrics[VAL_OUTPUT_TPS];
    return rc;
}

int val_measured_metrics(sqlite3 *db, int64_t run_id, double out[VAL_N_AGG], util_diag *d)
{
    val_run m;
    int rc = val_load(db, "the database", run_id, &m, d);
    if (!rc) rc = figures_of(&m, db, run_id, out, d);
    val_run_fini(&m);
    return rc;
}

int val_run_figures(const val_run *m, double out[VAL_N_AGG], util_diag *d)
{
    if (!val_has_completed(m)) return figures_of(m, NULL, 0, out, d);
    sqlite3 *db = NULL;
    int64_t id = 0;
    int rc = val__store_memory(m, &db, &id, d);
    if (!rc) rc = figures_of(m, db, id, out, d);
    sqlite3_close(db);
    return rc;
}

/* ---- the comparison ---- */

static void add_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

static const char *clock_of(sqlite3 *db, int64_t run_id)
{
    sqlite3_stmt *st;
    const char *clock = "client";
    if (sqlite3_prepare_v2(db, "SELECT clock FROM measurements WHERE run_id = ?1", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run_id);
        if (sqlite3_step(st) == SQLITE_ROW &&
            !strcmp((const char *)sqlite3_column_text(st, 0), "engine"))
            clock = "engine";
    }
    sqlite3_finalize(st);
    return clock;
}

static cJSON *side(const char *file, int64_t run)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", file);
    cJSON_AddNumberToObject(o, "run", (double)run);
    return o;
}

int val_compare(sqlite3 *mdb, const char *mfile, int64_t m, sqlite3 *sdb, const char *sfile,
                int64_t s, cJSON **out, util_diag *d)
{
    double meas[VAL_N_AGG], pred[VAL_N_AGG];
    int rc = val_check_measured(mdb, mfile, m, d);
    const char *clock = clock_of(mdb, m);
    if (!rc) rc = val_measured_metrics(mdb, m, meas, d);
    if (!rc) rc = val_run_metrics(sdb, s, clock, pred, d);
    if (rc) return rc;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "measured", side(mfile, m));
    cJSON_AddItemToObject(o, "simulated", side(sfile, s));
    cJSON_AddStringToObject(o, "clock", clock);
    cJSON *list = cJSON_AddArrayToObject(o, "metrics");
    for (int k = 0; k < VAL_N_AGG; k++) {
        if (isnan(meas[k])) continue; /* compared on what was measured */
        cJSON *row = cJSON_CreateObject();
        cJSON_AddStringToObject(row, "metric", val_agg_names[k]);
        add_num(row, "measured", meas[k]);
        add_num(row, "simulated", pred[k]);
        add_num(row, "error_pct", val_error_pct(pred[k], meas[k]));
        cJSON_AddItemToArray(list, row);
    }
    *out = o;
    return UTIL_OK;
}

void val_compare_print(const cJSON *cmp, FILE *out)
{
    const cJSON *ms = util_json_get(cmp, "measured"), *ss = util_json_get(cmp, "simulated");
    fprintf(out, "measured  %s run %g\nsimulated %s run %g\nclock     %s\n\n",
            cJSON_GetStringValue(util_json_member(ms, "file")),
            util_json_number(ms, "run", 0), cJSON_GetStringValue(util_json_member(ss, "file")),
            util_json_number(ss, "run", 0), cJSON_GetStringValue(util_json_member(cmp, "clock")));
    fprintf(out, "%-22s %14s %14s %9s\n", "metric", "measured", "simulated", "error");
    const cJSON *row;
    cJSON_ArrayForEach(row, util_json_member(cmp, "metrics")) {
        double a = util_json_number(row, "measured", NAN), b = util_json_number(row, "simulated", NAN);
        double e = util_json_number(row, "error_pct", NAN);
        fprintf(out, "%-22s %14.6g %14.6g ", cJSON_GetStringValue(util_json_member(row, "metric")),
                a, b);
        if (isnan(e)) fprintf(out, "%9s\n", "-");
        else fprintf(out, "%+8.1f%%\n", e);
    }
}
