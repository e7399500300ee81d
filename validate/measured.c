/*
 * measured.c: a measured run between its file and its database -- settled
 * against --scenario and --set, stored as a run whose status is
 * `measured`, read back, and turned into the scenario that replays it.
 *
 * A measured request is stored as a simulated one is, on the run's clock:
 * arrival_s when it was sent (or queued in the engine), first_token_s and
 * finish_s at arrival + TTFT and arrival + E2E (or, when a tool gives only
 * the mean gap between tokens, the first token plus that gap for each
 * token after it), so that the `request_metrics` view and every analysis
 * read it as they read a simulated request.  Its replica is unknown
 * (NULL).  The tool's own aggregates and the clock go to `measurements`.
 */
#include "val_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"

const char *const val_agg_names[VAL_N_AGG + 1] = {
    "ttft_mean_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "itl_mean_s",
    "tpot_mean_s", "tpot_p50_s", "tpot_p90_s", "tpot_p99_s", "e2e_mean_s",
    "e2e_p50_s",   "e2e_p90_s",  "e2e_p99_s",  "output_tokens_per_s", NULL,
};

const char *const val_formats[] = {"vllm-bench", "inference-perf", "genai-perf",
                                   "llmservingsim", "servesim", NULL};

/* The engine settings a replay needs, in the order an import lists those
 * it could not find. */
static const char *const settings[] = {
    "cluster.gpu",
    "cluster.model",
    "cluster.engine",
    "cluster.tensor_parallel",
    "cluster.scheduler.max_batch",
    "cluster.scheduler.max_batched_tokens",
    "cluster.scheduler.block_tokens",
    "cluster.scheduler.prefix_caching",
    "cluster.scheduler.kv_blocks",
    NULL,
};

/* ---- the structs ---- */

val_run *val_runs_add(val_runs *rs)
{
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? 2 * rs->cap : 4;
        rs->v = util_xrealloc(rs->v, (size_t)rs->cap * sizeof *rs->v);
    }
    val_run *m = &rs->v[rs->n++];
    *m = (val_run){.clock = "client", .scenario = cJSON_CreateObject(),
                   .missing = cJSON_CreateArray()};
    for (int k = 0; k < VAL_N_AGG; k++) m->metrics[k] = NAN;
    return m;
}

val_request *val_run_add_request(val_run *m)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 256;
        m->req = util_xrealloc(m->req, m->cap * sizeof *m->req);
    }
    val_request *q = &m->req[m->n++];
    *q = (val_request){.arrival_s = NAN, .ttft_s = NAN, .e2e_s = NAN, .itl_s = NAN,
                       .scheduled_s = NAN};
    return q;
}

void val_run_fini(val_run *m)
{
    free(m->name);
    free(m->source);
    cJSON_Delete(m->scenario);
    cJSON_Delete(m->missing);
    free(m->req);
    *m = (val_run){0};
}

void val_runs_fini(val_runs *rs)
{
    for (int i = 0; i < rs->n; i++) val_run_fini(&rs->v[i]);
    free(rs->v);
    *rs = (val_runs){0};
}

/* ---- settling the engine settings ---- */

cJSON *val__parent(cJSON *root, const char *path, const char **leaf)
{
    cJSON *o = root;
    const char *dot;
    while ((dot = strchr(path, '.'))) {
        char *key = util_xasprintf("%.*s", (int)(dot - path), path);
        cJSON *next = cJSON_GetObjectItemCaseSensitive(o, key);
        if (!cJSON_IsObject(next)) {
            cJSON_DeleteItemFromObjectCaseSensitive(o, key);
            next = cJSON_AddObjectToObject(o, key);
        }
        free(key);
        o = next;
        path = dot + 1;
    }
    *leaf = path;
    return o;
}

/* Recorded values are numbers, strings or booleans: equal by value. */
static bool same_value(const cJSON *a, const cJSON *b)
{
    if (cJSON_IsNumber(a) && cJSON_IsNumber(b)) return a->valuedouble == b->valuedouble;
    return cJSON_Compare(a, b, true);
}

/* Every leaf of rec (the file's recorded settings) into out unless base
 * has it: equal, it is kept; different, the two contradict. */
static int merge_leaves(const cJSON *rec, const char *path, const cJSON *base, cJSON *out,
                        const val_run *m, const char *origin, util_diag *d)
{
    int rc = UTIL_OK;
    const cJSON *c;
    cJSON_ArrayForEach(c, rec) {
        char *sub = *path ? util_xasprintf("%s.%s", path, c->string) : util_xstrdup(c->string);
        const cJSON *theirs = base ? util_json_get(base, sub) : NULL;
        if (cJSON_IsObject(c) && (!theirs || cJSON_IsObject(theirs))) {
            rc |= merge_leaves(c, sub, base, out, m, origin, d);
        } else if (theirs && !same_value(theirs, c)) {
            char *a = cJSON_PrintUnformatted(theirs), *b = cJSON_PrintUnformatted(c);
            util_clip_buf cb;
            rc = util_diag_add(d, "%s: %s is %s, but %s recorded %s for its run", origin, sub, a,
                               util_clip_path(m->source, &cb), b);
            free(a);
            free(b);
        } else if (!theirs) {
            const char *leaf;
            cJSON *p = val__parent(out, sub, &leaf);
            cJSON_AddItemToObject(p, leaf, cJSON_Duplicate(c, true));
        }
        free(sub);
    }
    return rc;
}

int val_settle(val_run *m, const cJSON *base, const char *origin, const val_overrides *ov,
               util_diag *d)
{
    cJSON *out = base ? cJSON_Duplicate(base, true) : cJSON_CreateObject();
    int rc = merge_leaves(m->scenario, "", base, out, m, origin ? origin : "--scenario", d);
    for (int i = 0; !rc && ov && i < ov->n_unset; i++) rc = util_json_unset(out, ov->unset[i], d);
    for (int i = 0; !rc && ov && i < ov->n_set; i++) rc = util_json_set(out, ov->set[i], d);
    if (rc) {
        cJSON_Delete(out);
        return UTIL_EINPUT;
    }
    cJSON_Delete(m->scenario);
    m->scenario = out;
    cJSON_Delete(m->missing);
    m->missing = cJSON_CreateArray();
    for (int k = 0; settings[k]; k++)
        if (!util_json_get(out, settings[k]))
            cJSON_AddItemToArray(m->missing, cJSON_CreateString(settings[k]));
    if (m->arrivals_unknown)
        cJSON_AddItemToArray(m->missing, cJSON_CreateString(VAL_NO_ARRIVALS));
    return UTIL_OK;
}

/* ---- storing ---- */

/* A request's row: its stamps on the run's clock.  A failed request has
 * no tokens out (status `failed`). */
static sim_request_row request_row(const val_request *q, int64_t id)
{
    double t0 = q->arrival_s, first = t0 + q->ttft_s, last = t0 + q->e2e_s;
    if (isnan(last) && !isnan(q->itl_s))
        last = first + q->itl_s * (double)(q->output_tokens > 1 ? q->output_tokens - 1 : 0);
    bool failed = q->failed || isnan(first);
    return (sim_request_row){
        .id = id, .cls = "default", .task_id = -1, .call_index = -1, .replica = -1,
        .decode_replica = -1, .status = failed ? "failed" : "completed", .arrival_s = t0,
        .enqueue_s = t0,
        .first_scheduled_s = isnan(q->scheduled_s) ? NAN : t0 + q->scheduled_s,
        .first_token_s = failed ? NAN : first, .finish_s = failed ? NAN : last,
        .decode_enqueue_s = NAN, .engine_first_token_s = NAN, .engine_finish_s = NAN,
        .prompt_tokens = (int32_t)q->prompt_tokens, .output_tokens = (int32_t)q->output_tokens,
        .retry_of = -1, .cpu_hit_tokens = -1, .disk_hit_tokens = -1, /* not measured */
        .restarted_from = -1,
    };
}

/* The tool's aggregates as a JSON object, absent ones left out. */
static char *metrics_json(const val_run *m)
{
    cJSON *o = cJSON_CreateObject();
    for (int k = 0; k < VAL_N_AGG; k++)
        if (!isnan(m->metrics[k])) cJSON_AddNumberToObject(o, val_agg_names[k], m->metrics[k]);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

/* The latest stamp of the run: where its record ends. */
static double run_end_s(const val_run *m)
{
    double end = 0;
    for (size_t i = 0; i < m->n; i++) {
        sim_request_row row = request_row(&m->req[i], 0);
        end = fmax(end, isnan(row.finish_s) ? row.arrival_s : row.finish_s);
    }
    return end;
}

/* m as a run of the database at path, or of a new one in memory (path
 * NULL: *mem its connection). */
static int store(const val_run *m, const char *path, sqlite3 **mem, int64_t *run_id, util_diag *d)
{
    char *scenario = cJSON_PrintUnformatted(m->scenario), *metrics = metrics_json(m);
    char *missing = cJSON_PrintUnformatted(m->missing);
    rec_measured info = {.name = m->name, .scenario = scenario, .format = m->format,
                         .source = m->source, .clock = m->clock, .metrics = metrics,
                         .missing = missing};
    rec_recorder *r = NULL;
    int rc = rec_open(path, &r, d);
    if (!rc) rc = rec_begin_measured(r, &info, d);
    sim_sink sink = rc ? (sim_sink){0} : rec_sink(r);
    for (size_t i = 0; !rc && i < m->n; i++) {
        sim_request_row row = request_row(&m->req[i], (int64_t)i);
        if (sink.request(sink.ctx, &row)) rc = util_diag_fail(d, "%s", rec_error(r));
    }
    rec_run_end end = {.status = SIM_STATUS_COMPLETED, .sim_end_s = run_end_s(m)};
    if (!rc) rc = rec_finish(r, &end, d);
    if (!rc && run_id) *run_id = rec_run_id(r);
    if (rc) rec_abort(r);
    if (!rc && mem) *mem = rec_release(r);
    else rec_close(r);
    free(scenario);
    free(metrics);
    free(missing);
    return rc;
}

int val_store(const val_run *m, const char *path, int64_t *run_id, util_diag *d)
{
    return store(m, path, NULL, run_id, d);
}

bool val_has_completed(const val_run *m)
{
    for (size_t i = 0; i < m->n; i++)
        if (!m->req[i].failed) return true;
    return false;
}

int val__store_memory(const val_run *m, sqlite3 **db, int64_t *run_id, util_diag *d)
{
    return store(m, NULL, db, run_id, d);
}

/* ---- reading back ---- */

static int db_fail(sqlite3 *db, const char *file, util_diag *d)
{
    return util_diag_fail(d, "%s: %s", file, sqlite3_errmsg(db));
}

int64_t val_last_measured(sqlite3 *db)
{
    sqlite3_stmt *st;
    int64_t id = 0;
    if (sqlite3_prepare_v2(db, "SELECT max(run_id) FROM measurements", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}

bool val_is_measured(sqlite3 *db, int64_t run_id)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM measurements WHERE run_id = ?1", -1, &st,
                           NULL) != SQLITE_OK)
        return false; /* a database from before schema 7 */
    sqlite3_bind_int64(st, 1, run_id);
    bool found = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
    sqlite3_finalize(st);
    return found;
}

int val_check_measured(sqlite3 *db, const char *file, int64_t run_id, util_diag *d)
{
    return val_is_measured(db, run_id)
               ? UTIL_OK
               : util_diag_add(d, "%s: run %lld is not a measured run", file, (long long)run_id);
}

static const char *static_of(const char *text, const char *const *names, const char *dflt)
{
    for (int k = 0; text && names[k]; k++)
        if (!strcmp(text, names[k])) return names[k];
    return dflt;
}

/* The run's own facts: name, scenario, measurements. */
static int load_facts(sqlite3 *db, const char *file, int64_t run_id, val_run *m, util_diag *d)
{
    static const char *const clocks[] = {"client", "engine", NULL};
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT r.name, r.scenario, m.format, m.source, m.clock, m.metrics, "
                           "m.missing FROM runs r JOIN measurements m ON m.run_id = r.id "
                           "WHERE r.id = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, file, d);
    sqlite3_bind_int64(st, 1, run_id);
    int rc = UTIL_OK;
    if (sqlite3_step(st) == SQLITE_ROW) {
        m->name = util_xstrdup((const char *)sqlite3_column_text(st, 0));
        cJSON_Delete(m->scenario);
        m->scenario = cJSON_Parse((const char *)sqlite3_column_text(st, 1));
        m->format = static_of((const char *)sqlite3_column_text(st, 2), val_formats, "servesim");
        m->source = util_xstrdup((const char *)sqlite3_column_text(st, 3));
        m->clock = static_of((const char *)sqlite3_column_text(st, 4), clocks, "client");
        cJSON *metrics = cJSON_Parse((const char *)sqlite3_column_text(st, 5));
        for (int k = 0; k < VAL_N_AGG; k++)
            m->metrics[k] = util_json_number(metrics, val_agg_names[k], NAN);
        cJSON_Delete(metrics);
        cJSON_Delete(m->missing);
        m->missing = cJSON_Parse((const char *)sqlite3_column_text(st, 6));
        if (!m->scenario || !m->missing)
            rc = util_diag_add(d, "%s: run %lld: its stored scenario is not JSON", file,
                               (long long)run_id);
        const cJSON *c;
        cJSON_ArrayForEach(c, m->missing)
            m->arrivals_unknown |= cJSON_IsString(c) && !strcmp(c->valuestring, VAL_NO_ARRIVALS);
    } else {
        rc = util_diag_add(d, "%s: run %lld is not a measured run", file, (long long)run_id);
    }
    sqlite3_finalize(st);
    return rc;
}

static double column_time(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

static int load_requests(sqlite3 *db, const char *file, int64_t run_id, val_run *m, util_diag *d)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT arrival_s, first_token_s - arrival_s, finish_s - arrival_s, "
                           "first_scheduled_s - arrival_s, prompt_tokens, output_tokens, "
                           "status <> 'completed' FROM requests WHERE run_id = ?1 ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, file, d);
    sqlite3_bind_int64(st, 1, run_id);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        val_request *q = val_run_add_request(m);
        q->arrival_s = sqlite3_column_double(st, 0);
        q->ttft_s = column_time(st, 1);
        q->e2e_s = column_time(st, 2);
        q->scheduled_s = column_time(st, 3);
        q->prompt_tokens = sqlite3_column_int64(st, 4);
        q->output_tokens = sqlite3_column_int64(st, 5);
        q->failed = sqlite3_column_int(st, 6) != 0;
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? UTIL_OK : db_fail(db, file, d);
}

int val_load(sqlite3 *db, const char *file, int64_t run_id, val_run *out, util_diag *d)
{
    val_runs one = {0};
    val_run *m = val_runs_add(&one);
    int rc = load_facts(db, file, run_id, m, d);
    if (!rc) rc = load_requests(db, file, run_id, m, d);
    if (rc) {
        val_runs_fini(&one);
        return rc;
    }
    *out = *m;
    free(one.v);
    return UTIL_OK;
}

/* ---- the replay ---- */

int val_write_trace(const val_run *m, const char *path, util_diag *d)
{
    FILE *f = fopen(path, "w");
    if (!f) return util_diag_fail(d, "%s: cannot write the replay's trace", path);
    fputs("arrival_time_s,input_tokens,output_tokens\n", f);
    /* a failed request may have no tokens out (vLLM's bench records 0): it
     * is replayed with one, the load its prefill put on the engine */
    for (size_t i = 0; i < m->n; i++)
        fprintf(f, "%.9g,%lld,%lld\n", m->req[i].arrival_s,
                (long long)(m->req[i].prompt_tokens > 1 ? m->req[i].prompt_tokens : 1),
                (long long)(m->req[i].output_tokens > 1 ? m->req[i].output_tokens : 1));
    bool ok = !ferror(f);
    if (fclose(f) || !ok) {
        remove(path);
        return util_diag_fail(d, "%s: cannot write the replay's trace", path);
    }
    return UTIL_OK;
}

/* Arrivals not recorded: the recorded generator sends the requests, each
 * length drawn from the measured ones (the trace's columns). */
static cJSON *replay_lengths(cJSON *sc, cJSON *wl, const char *trace_path)
{
    static const char *const keys[] = {"prompt_tokens", "output_tokens"};
    static const char *const columns[] = {"input", "output"};
    for (int k = 0; k < 2; k++) {
        cJSON_DeleteItemFromObjectCaseSensitive(wl, keys[k]);
        cJSON *dist = cJSON_AddObjectToObject(wl, keys[k]);
        cJSON_AddStringToObject(dist, "dist", "empirical");
        cJSON_AddStringToObject(dist, "path", trace_path);
        cJSON_AddStringToObject(dist, "format", "csv");
        cJSON_AddStringToObject(dist, "column", columns[k]);
    }
    return sc;
}

cJSON *val_replay_scenario(const val_run *m, const char *trace_path)
{
    cJSON *sc = cJSON_Duplicate(m->scenario, true);
    cJSON_DeleteItemFromObjectCaseSensitive(sc, "name");
    char *name = util_xasprintf("replay of %s", m->name ? m->name : "a measured run");
    cJSON_AddStringToObject(sc, "name", name);
    free(name);
    if (m->n == 0 || !trace_path) return sc; /* a generator replays itself */
    cJSON *wl = cJSON_GetObjectItemCaseSensitive(sc, "workload");
    if (!cJSON_IsObject(wl)) {
        cJSON_DeleteItemFromObjectCaseSensitive(sc, "workload");
        wl = cJSON_AddObjectToObject(sc, "workload");
    }
    if (m->arrivals_unknown) return replay_lengths(sc, wl, trace_path);
    /* the measured requests, as they came, whatever made them; a client's
     * cap on requests in flight stays, as the client would have kept it */
    double cap = util_json_number(sc, "workload.arrival.max_concurrency", 0);
    static const char *const generated[] = {"arrival", "prompt_tokens", "output_tokens",
                                            "classes", "shared_prefix", NULL};
    for (int k = 0; generated[k]; k++) cJSON_DeleteItemFromObjectCaseSensitive(wl, generated[k]);
    cJSON *arrival = cJSON_AddObjectToObject(wl, "arrival");
    cJSON_AddStringToObject(arrival, "process", "trace");
    cJSON_AddStringToObject(arrival, "path", trace_path);
    cJSON_AddStringToObject(arrival, "format", "csv");
    if (cap >= 1) cJSON_AddNumberToObject(arrival, "max_concurrency", cap);
    return sc;
}
