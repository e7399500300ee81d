/*
 * replay.c: the cases of a validation folder, each replayed and measured.
 *
 * A case is the workload CSV that both measured runs served, on the
 * matching GPU and model, with the engine settings read from the run's
 * meta.json (max_num_seqs, max_num_batched_tokens, block size, the KV block
 * count where vLLM recorded it, prefix caching; vLLM 0.19's V1 engine
 * chunks prefills).  Each run is simulated with the roofline cost model,
 * and the RTX PRO 6000 run also with the measured-table model built from
 * the profiler CSVs of the same GPU, and each of those three times: with
 * the GPU's steps alone, with the host's time per step added, and with the
 * asynchronous scheduler's pipeline -- the `vllm-v1` preset as it runs --
 * so that each term's share of the error shows.  The measured side is the
 * run's requests.jsonl as rows of an in-memory servesim database.  Its
 * stamps are the engine core's (queued_ts, first_token_ts, last_token_ts:
 * vLLM's RequestStateStats), so both sides are read on the engine's clock:
 * TTFT and E2E from a request's arrival in the engine's queue to its first
 * and last token out of it, before the API server streams them.
 * docs/validation.md discusses the result.
 */
#include "val.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rec.h"

/* The file whose presence tells a validation folder. */
#define WORKLOAD "workload_sharegpt-llama-3.1-8b-300-sps10.csv"

typedef struct case_def {
    const char *name;     /* e.g. "rtx4090/roofline" */
    const char *clock;    /* which clock the run's stamps read: "engine" or "client" */
    const char *hardware; /* folder under bench/examples */
    const char *gpu;      /* catalog id */
    const char *cost;     /* cost_model JSON; %s: the data folder */
} case_def;

static const case_def cases[VAL_N_CASES] = {
    {.name = "rtx4090/roofline", .clock = "engine", .hardware = "RTX4090", .gpu = "rtx-4090",
     .cost = "{\"kind\": \"roofline\"}"},
    {.name = "rtxpro6000/roofline", .clock = "engine", .hardware = "RTXPRO6000", .gpu = "rtx-pro-6000",
     .cost = "{\"kind\": \"roofline\"}"},
    {.name = "rtxpro6000/table", .clock = "engine", .hardware = "RTXPRO6000", .gpu = "rtx-pro-6000",
     .cost = "{\"kind\": \"table\", \"dir\": "
             "\"%s/profiler/perf/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1\"}"},
};

const char *const val_term_names[VAL_N_TERMS] = {"gpu", "host", "pipeline"};

/* What each term sets over the preset, a term's keys keeping the ones
 * before it (cluster.scheduler / cluster.host, as JSON members). */
static const struct {
    bool async;
    bool host_step; /* the preset's host.step_s and step_s_per_seq; else 0 */
} terms[VAL_N_TERMS] = {
    [VAL_GPU] = {false, false},
    [VAL_HOST] = {false, true},
    [VAL_PIPELINE] = {true, true},
};

bool val_has_data(const char *dir)
{
    char *probe = util_xasprintf("%s/" WORKLOAD, dir);
    bool found = access(probe, R_OK) == 0;
    free(probe);
    return found;
}

/* A file of the case's measured run. */
static char *run_file(const char *data, const case_def *c, const char *name)
{
    return util_xasprintf("%s/bench/examples/%s/Llama-3.1-8B/vllm/%s", data, c->hardware, name);
}

/* ---- both sides, through the report ---- */

/* TTFT, TPOT and E2E of run_id's measured requests on the client's clock,
 * as the report has them. */
static int client_stats(sqlite3 *db, int64_t run_id, an_stats out[VAL_N_METRICS], util_diag *d)
{
    an_report r;
    int rc = an_report_compute(db, run_id, &r, d);
    if (!rc) {
        out[VAL_TTFT] = r.req.ttft;
        out[VAL_TPOT] = r.req.tpot;
        out[VAL_E2E] = r.req.e2e;
    }
    an_report_fini(&r);
    return rc;
}

/* The same on the engine core's clock, as --definitions has it: TPOT is
 * the difference of two stamps of one clock, the same on either. */
static int engine_stats(sqlite3 *db, int64_t run_id, an_stats out[VAL_N_METRICS], util_diag *d)
{
    static const char *const names[VAL_N_METRICS] = {"ttft_engine", "tpot", "e2e_engine"};
    int rc = UTIL_OK;
    for (int m = 0; !rc && m < VAL_N_METRICS; m++) {
        an_definition def;
        rc = an_definition_of(db, run_id, names[m], &def, d);
        if (!rc) out[m] = def.stats;
    }
    return rc;
}

static int clock_stats(sqlite3 *db, int64_t run_id, const char *clock,
                       an_stats out[VAL_N_METRICS], util_diag *d)
{
    return strcmp(clock, "engine") ? client_stats(db, run_id, out, d)
                                   : engine_stats(db, run_id, out, d);
}

/* ---- the measured side ---- */

static int db_fail(sqlite3 *db, util_diag *d)
{
    return util_diag_fail(d, "the measured requests' database: %s", sqlite3_errmsg(db));
}

/* An in-memory servesim database holding run 1, completed, with no
 * scenario keys (so no warm-up: every measured request counts). */
static int open_measured(const case_def *c, sqlite3 **db, sqlite3_stmt **insert, util_diag *d)
{
    char *version = sqlite3_mprintf("PRAGMA user_version = %d", rec_schema_version);
    int made = sqlite3_open(":memory:", db) == SQLITE_OK &&
               sqlite3_exec(*db, rec_schema_sql, NULL, NULL, NULL) == SQLITE_OK &&
               sqlite3_exec(*db, version, NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_free(version);
    if (!made) return db_fail(*db, d);
    char *sql = sqlite3_mprintf("INSERT INTO runs (id, name, seed, scenario, version, started_at, "
                                "status) VALUES (1, 'measured %q', 0, '{}', 'vllm', '', "
                                "'completed')",
                                c->name);
    int rc = sqlite3_exec(*db, sql, NULL, NULL, NULL);
    sqlite3_free(sql);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(*db,
                                "INSERT INTO requests (run_id, id, arrival_s, enqueue_s, "
                                "first_scheduled_s, first_token_s, finish_s, prompt_tokens, "
                                "output_tokens, preemptions, slow, status) VALUES (1, ?1, ?2, ?2, "
                                "?7, ?3, ?4, ?5, ?6, 0, 0, 'completed')",
                                -1, insert, NULL);
    return rc == SQLITE_OK ? UTIL_OK : db_fail(*db, d);
}

/* One line of requests.jsonl as a row of `requests`: its stamps, whichever
 * clock they are on, as the row's times (measure reads them as they are). */
static int insert_line(sqlite3_stmt *st, const char *line, int64_t id, const char *path,
                       int64_t ln, util_diag *d)
{
    cJSON *o = cJSON_Parse(line);
    double q = util_json_number(o, "queued_ts", NAN), t1 = util_json_number(o, "first_token_ts", NAN);
    double tl = util_json_number(o, "last_token_ts", NAN), out = util_json_number(o, "output_toks", NAN);
    double in = util_json_number(o, "input_toks", 0), s = util_json_number(o, "scheduled_ts", NAN);
    cJSON_Delete(o);
    util_clip_buf b;
    if (isnan(q) || isnan(t1) || isnan(tl) || isnan(out))
        return util_diag_add(d, "%s:%lld: expected queued_ts, first_token_ts, last_token_ts and "
                                "output_toks", util_clip_path(path, &b), (long long)ln);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_double(st, 2, q);
    sqlite3_bind_double(st, 3, t1);
    sqlite3_bind_double(st, 4, tl);
    sqlite3_bind_int64(st, 5, (int64_t)in);
    sqlite3_bind_int64(st, 6, (int64_t)out);
    if (isnan(s)) sqlite3_bind_null(st, 7);
    else sqlite3_bind_double(st, 7, s);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? UTIL_OK : db_fail(sqlite3_db_handle(st), d);
}

/* The measured distributions: requests.jsonl through the report. */
static int measure(const char *data, const case_def *c, val_case *out, util_diag *d)
{
    char *path = run_file(data, c, "requests.jsonl");
    sqlite3 *db = NULL;
    sqlite3_stmt *insert = NULL;
    util_lines *l = NULL;
    char *line;
    size_t len;
    int rc = util_lines_open(path, &l, d), more = 0;
    if (!rc) rc = open_measured(c, &db, &insert, d);
    for (int64_t id = 0; !rc && (more = util_lines_next(l, &line, &len, d)) == 1; id++)
        rc = insert_line(insert, line, id, path, util_lines_number(l), d);
    if (!rc && more < 0) rc = more;
    sqlite3_finalize(insert);
    if (!rc) rc = client_stats(db, 1, out->measured, d); /* the rows hold the run's own clock */
    util_lines_close(l);
    sqlite3_close(db);
    free(path);
    return rc;
}

/* ---- the predicted side ---- */

/* The scenario of a case with one term set: the engine settings of its
 * meta.json on the vllm-v1 engine (the runs are vLLM 0.19), the KV block
 * count vLLM resolved for the run where it was recorded. */
static cJSON *scenario(const char *data, const case_def *c, int term, util_diag *d)
{
    char *path = run_file(data, c, "meta.json");
    cJSON *meta = NULL;
    int rc = util_json_read_file(path, &meta, d);
    free(path);
    if (rc) return NULL;
    const cJSON *kw = util_json_get(meta, "engine_kwargs");
    double blocks = util_json_number(meta, "kv_cache.num_gpu_blocks", NAN);
    const cJSON *prefix = util_json_get(meta, "kv_cache.enable_prefix_caching");
    char *cost = util_xasprintf(c->cost, data);
    char *text = util_xasprintf(
        "{\"name\": \"validate-%s\", \"cluster\": {\"gpu\": \"%s\", \"model\": \"llama-3.1-8b\", "
        "\"engine\": \"vllm-v1\", \"host\": {%s}, "
        "\"scheduler\": {\"policy\": \"chunked\", \"max_batch\": %g, \"max_batched_tokens\": %g, "
        "\"block_tokens\": %g, \"prefix_caching\": %s, \"async_scheduling\": %s}, "
        "\"cost_model\": %s}, \"workload\": "
        "{\"arrival\": {\"process\": \"trace\", \"path\": \"%s/" WORKLOAD "\"}}}",
        c->name, c->gpu, terms[term].host_step ? "" : "\"step_s\": 0, \"step_s_per_seq\": 0",
        util_json_number(kw, "max_num_seqs", 256),
        util_json_number(kw, "max_num_batched_tokens", 2048),
        util_json_number(meta, "kv_cache.block_size", 16),
        /* vLLM 0.19 enables prefix caching unless told otherwise */
        !prefix || cJSON_IsTrue(prefix) ? "true" : "false", terms[term].async ? "true" : "false",
        cost, data);
    cJSON *root = cJSON_Parse(text);
    if (!isnan(blocks)) /* vLLM's own count, where it was recorded */
        cJSON_AddNumberToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "cluster"), "scheduler"),
                                "kv_blocks", blocks);
    free(text);
    free(cost);
    cJSON_Delete(meta);
    return root;
}

/* The replay with one term set, through rec_run into memory, read on the
 * case's clock. */
static int predict(const char *data, const mdl_catalog *cat, const case_def *c, int term,
                   an_stats out[VAL_N_METRICS], util_diag *d)
{
    cJSON *root = scenario(data, c, term, d);
    if (!root) return UTIL_EINPUT;
    rec_run_spec spec = {.catalog = cat, .scenario = root, .origin = c->name};
    rec_run_result res;
    int rc = rec_run(&spec, &res, d);
    if (!rc && res.status != SIM_STATUS_COMPLETED)
        rc = util_diag_fail(d, "%s: the replay was %s (%s): its figures would not compare",
                            c->name, sim_status_names[res.status], res.reason);
    if (!rc) rc = clock_stats(res.db, res.run_id, c->clock, out, d);
    rec_run_result_fini(&res);
    return rc;
}

int val_replay(const char *dir, const mdl_catalog *cat, val_case out[VAL_N_CASES], util_diag *d)
{
    int rc = UTIL_OK;
    for (int k = 0; !rc && k < VAL_N_CASES; k++) {
        out[k] = (val_case){.name = cases[k].name, .clock = cases[k].clock};
        rc = measure(dir, &cases[k], &out[k], d);
        for (int t = 0; !rc && t < VAL_N_TERMS; t++)
            rc = predict(dir, cat, &cases[k], t, out[k].predicted[t], d);
    }
    return rc;
}
