/*
 * recorder.c: the SQLite sink.  Every request becomes a row of `requests`,
 * every replica a row of `replicas`, every run a row of `runs`; the view
 * `request_metrics` defines the per-request metrics once, in SQL, for the
 * analysis and for users.
 *
 * `requests` is a WITHOUT ROWID table clustered on (run_id, id): one B-tree
 * instead of a table plus a key index, so inserts (in near-id order) append,
 * and reading one run is a sequential range scan.
 *
 * A run is one transaction.  Rows are streamed through prepared statements as
 * requests finish (SQLite spills dirty pages to the file, so memory does not
 * grow with the run), and the commit at the end makes the run appear whole.
 * Should anything fail, the rollback leaves an existing database exactly as
 * it was and a database this run created is removed.  Ctrl-C is not a
 * failure: the engine stops, the rows so far are committed and the run is
 * marked interrupted.
 */
#include "sim.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef SERVESIM_VERSION
#define SERVESIM_VERSION "unknown"
#endif

/* "Serv" in the database header: marks a file as a servesim database. */
#define APPLICATION_ID 0x53657276
#define SCHEMA_VERSION 1

const char sim_recorder_schema_sql[] =
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL,"
    "  seed INTEGER NOT NULL,"
    "  scenario TEXT NOT NULL,"
    "  version TEXT NOT NULL,"
    "  started_at TEXT NOT NULL,"
    "  status TEXT NOT NULL,"
    "  sim_end_s REAL,"
    "  wall_s REAL,"
    "  events INTEGER,"
    "  overrides TEXT,"
    "  sweep TEXT);"
    "CREATE TABLE requests ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  id INTEGER NOT NULL,"
    "  replica INTEGER,"
    "  class TEXT,"
    "  task_id INTEGER,"
    "  call_index INTEGER,"
    "  arrival_s REAL NOT NULL,"
    "  enqueue_s REAL,"
    "  first_scheduled_s REAL,"
    "  first_token_s REAL,"
    "  finish_s REAL,"
    "  prompt_tokens INTEGER NOT NULL,"
    "  output_tokens INTEGER NOT NULL,"
    "  preemptions INTEGER NOT NULL,"
    "  slow INTEGER NOT NULL,"
    "  status TEXT NOT NULL,"
    "  decode_replica INTEGER,"
    "  decode_enqueue_s REAL,"
    "  PRIMARY KEY (run_id, id)) WITHOUT ROWID;"
    "CREATE TABLE replicas ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  replica INTEGER NOT NULL,"
    "  pool TEXT NOT NULL,"
    "  gpu TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  gpus INTEGER NOT NULL,"
    "  busy_s REAL NOT NULL,"
    "  prefill_s REAL NOT NULL,"
    "  decode_s REAL NOT NULL,"
    "  iterations INTEGER NOT NULL,"
    "  flops REAL NOT NULL,"
    "  bytes REAL NOT NULL,"
    "  batch_seq_s REAL NOT NULL,"
    "  kv_capacity_tokens INTEGER NOT NULL,"
    "  kv_peak_tokens INTEGER NOT NULL,"
    "  preemptions INTEGER NOT NULL,"
    "  prefill_tokens INTEGER NOT NULL,"
    "  decode_tokens INTEGER NOT NULL,"
    "  swap_bytes REAL NOT NULL,"
    "  out_of_range_iterations INTEGER NOT NULL,"
    "  peak_flops REAL NOT NULL,"
    "  peak_bw REAL NOT NULL,"
    "  tdp_w REAL NOT NULL,"
    "  idle_w REAL NOT NULL,"
    "  prefill_w REAL NOT NULL,"
    "  decode_w REAL NOT NULL,"
    "  energy_j REAL NOT NULL,"
    "  kv_token_s REAL NOT NULL,"
    "  usd_per_gpu_hour REAL NOT NULL,"
    "  PRIMARY KEY (run_id, replica));"
    "CREATE TABLE iterations ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  replica INTEGER NOT NULL,"
    "  start_s REAL NOT NULL,"
    "  end_s REAL NOT NULL,"
    "  prefill_tokens INTEGER NOT NULL,"
    "  decode_seqs INTEGER NOT NULL,"
    "  kv_tokens INTEGER NOT NULL,"
    "  flops REAL NOT NULL,"
    "  bytes REAL NOT NULL,"
    "  energy_j REAL NOT NULL);"
    "CREATE TABLE tasks ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  id INTEGER NOT NULL,"
    "  class TEXT NOT NULL,"
    "  status TEXT NOT NULL,"
    "  start_s REAL NOT NULL,"
    "  finish_s REAL,"
    "  calls INTEGER NOT NULL,"
    "  slow_calls INTEGER NOT NULL,"
    "  PRIMARY KEY (run_id, id));"
    "CREATE VIEW task_metrics AS SELECT"
    "  run_id, id, class, status, start_s, calls, slow_calls,"
    "  finish_s - start_s AS e2e_s"
    "  FROM tasks;"
    "CREATE VIEW request_metrics AS SELECT"
    "  run_id, id, replica, class, task_id, call_index, slow, status, arrival_s,"
    "  prompt_tokens, output_tokens,"
    "  first_token_s - arrival_s AS ttft_s,"
    "  CASE WHEN output_tokens >= 2"
    "       THEN (finish_s - first_token_s) / (output_tokens - 1) END AS tpot_s,"
    "  (finish_s - arrival_s) / output_tokens AS tpot_incl_ttft_s,"
    "  finish_s - arrival_s AS e2e_s,"
    "  first_scheduled_s - enqueue_s AS queue_s"
    "  FROM requests;";

/* Requests finish out of the order they arrived in (by up to about a
 * thousand places on the 1M benchmark), but `requests` is a B-tree keyed by
 * (run_id, id): rows are held in a small min-heap by id and written smallest
 * first once it is full, so the table grows by appends, as a bare insert in
 * key order does. */
#define REORDER_ROWS 4096

struct sim_recorder {
    sqlite3 *db;
    sim_request_row *pending; /* min-heap by id, up to REORDER_ROWS */
    int n_pending;
    char *path;
    bool created;     /* this recorder made the file: remove it if the run fails */
    bool need_schema; /* empty database: create the tables in the run's transaction */
    bool in_txn;
    int64_t run_id;
    sqlite3_stmt *ins_request, *ins_replica, *ins_task, *ins_iteration;
    char *error; /* message of a failed sink callback */
    sim_run_label label;
};

static int db_fail(sim_recorder *r, util_diag *d, const char *what)
{
    return util_diag_fail(d, "%s: %s: %s", r->path, what, sqlite3_errmsg(r->db));
}

static int exec(sim_recorder *r, const char *sql, util_diag *d)
{
    if (sqlite3_exec(r->db, sql, NULL, NULL, NULL) == SQLITE_OK) return UTIL_OK;
    return db_fail(r, d, "SQLite error");
}

static int64_t query_int(sqlite3 *db, const char *sql, int *rc)
{
    sqlite3_stmt *st;
    int64_t v = 0;
    *rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (*rc == SQLITE_OK) {
        *rc = sqlite3_step(st);
        if (*rc == SQLITE_ROW) {
            v = sqlite3_column_int64(st, 0);
            *rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return v;
}

/* Decides, reading only, whether an existing file may take a new run. */
static int check_existing(sim_recorder *r, util_diag *d)
{
    int rc;
    int64_t tables = query_int(r->db, "SELECT count(*) FROM sqlite_master", &rc);
    if (rc == SQLITE_NOTADB)
        return util_diag_add(d, "%s: not a SQLite database (left untouched)", r->path);
    if (rc != SQLITE_OK) return db_fail(r, d, "cannot read");
    int64_t app = query_int(r->db, "PRAGMA application_id", &rc);
    int64_t version = query_int(r->db, "PRAGMA user_version", &rc);
    if (app != APPLICATION_ID) {
        if (tables > 0)
            return util_diag_add(d, "%s: a SQLite database of another program, not servesim "
                                    "(left untouched)", r->path);
        r->need_schema = true;
    } else if (version > SCHEMA_VERSION) {
        return util_diag_add(d, "%s: written by a newer servesim (schema %lld, this one reads %d)",
                             r->path, (long long)version, SCHEMA_VERSION);
    }
    return UTIL_OK;
}

int sim_recorder_open(const char *path, sim_recorder **out, util_diag *d)
{
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) return util_diag_add(d, "%s: not a regular file", path);
    sim_recorder *r = util_xcalloc(1, sizeof *r);
    r->path = util_xstrdup(path);
    r->pending = util_xmalloc(REORDER_ROWS * sizeof *r->pending);
    r->created = !exists;
    r->need_schema = !exists;
    /* One connection, used by one thread: SQLite's per-call mutex is pure
     * cost (about 5% of a 1M-request record in a profile). */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (exists ? 0 : SQLITE_OPEN_CREATE);
    int rc = UTIL_OK;
    if (sqlite3_open_v2(path, &r->db, flags, NULL) != SQLITE_OK) {
        rc = util_diag_add(d, "%s: cannot open: %s", path,
                           r->db ? sqlite3_errmsg(r->db) : strerror(errno));
        goto fail;
    }
    sqlite3_busy_timeout(r->db, 10000);
    if (exists && (rc = check_existing(r, d))) goto fail;
    *out = r;
    return UTIL_OK;
fail:
    sim_recorder_abort(r);
    sim_recorder_close(r);
    return rc;
}

static void utc_now(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int prepare(sim_recorder *r, util_diag *d)
{
    static const char req[] = "INSERT INTO requests (run_id, id, replica, class, task_id, "
                              "call_index, arrival_s, enqueue_s, first_scheduled_s, "
                              "first_token_s, finish_s, prompt_tokens, output_tokens, "
                              "preemptions, slow, status, decode_replica, decode_enqueue_s) "
                              "VALUES (?1, ?2, ?3, ?16, ?17, ?18, ?4, ?5, ?6, ?7, ?8, ?9, "
                              "?10, ?11, ?12, ?13, ?14, ?15)";
    static const char task[] = "INSERT INTO tasks VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
    static const char iteration[] = "INSERT INTO iterations VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                                    "?8, ?9, ?10)";
    static const char rep[] = "INSERT INTO replicas (run_id, replica, pool, gpu, model, gpus, "
                              "busy_s, prefill_s, decode_s, iterations, flops, bytes, "
                              "batch_seq_s, kv_capacity_tokens, kv_peak_tokens, preemptions, "
                              "prefill_tokens, decode_tokens, swap_bytes, "
                              "out_of_range_iterations, peak_flops, peak_bw, tdp_w, idle_w, prefill_w, "
                              "decode_w, energy_j, kv_token_s, usd_per_gpu_hour) "
                              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                              "?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, "
                              "?27, ?28, ?29)";
    if (sqlite3_prepare_v2(r->db, req, -1, &r->ins_request, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, rep, -1, &r->ins_replica, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, task, -1, &r->ins_task, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, iteration, -1, &r->ins_iteration, NULL) != SQLITE_OK)
        return db_fail(r, d, "cannot prepare");
    return UTIL_OK;
}

static int insert_run(sim_recorder *r, const sim_scenario *sc, util_diag *d)
{
    char started[32];
    utc_now(started, sizeof started);
    char *scenario = cJSON_PrintUnformatted(sc->json);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(r->db,
                                "INSERT INTO runs (id, name, seed, scenario, version, started_at, "
                                "status, overrides, sweep) VALUES (?6, ?1, ?2, ?3, ?4, ?5, "
                                "'running', ?7, ?8)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, sc->name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)sc->seed);
        sqlite3_bind_text(st, 3, scenario, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, SERVESIM_VERSION, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, started, -1, SQLITE_STATIC);
        if (r->label.run_id > 0) sqlite3_bind_int64(st, 6, r->label.run_id);
        if (r->label.overrides) sqlite3_bind_text(st, 7, r->label.overrides, -1, SQLITE_STATIC);
        if (r->label.sweep) sqlite3_bind_text(st, 8, r->label.sweep, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    free(scenario);
    if (rc != SQLITE_DONE) return db_fail(r, d, "cannot record the run");
    r->run_id = sqlite3_last_insert_rowid(r->db);
    return UTIL_OK;
}

/* BEGIN IMMEDIATE, and the tables if the file is new. */
static int begin(sim_recorder *r, util_diag *d)
{
    int rc = exec(r, "BEGIN IMMEDIATE", d);
    if (rc) return rc;
    r->in_txn = true;
    if (!r->need_schema) return UTIL_OK;
    char *pragmas = util_xasprintf("PRAGMA application_id = %d; PRAGMA user_version = %d;",
                                   APPLICATION_ID, SCHEMA_VERSION);
    rc = exec(r, pragmas, d);
    free(pragmas);
    if (!rc) rc = exec(r, sim_recorder_schema_sql, d);
    return rc;
}

int sim_recorder_begin(sim_recorder *r, const sim_scenario *sc, int64_t *run_id, util_diag *d)
{
    int rc = begin(r, d);
    if (rc) return rc;
    if ((rc = insert_run(r, sc, d)) || (rc = prepare(r, d))) return rc;
    *run_id = r->run_id;
    return UTIL_OK;
}

static void bind_time(sqlite3_stmt *st, int i, double s)
{
    if (isnan(s)) sqlite3_bind_null(st, i);
    else sqlite3_bind_double(st, i, s);
}

static int step_reset(sim_recorder *r, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE) return 0;
    free(r->error);
    r->error = util_xasprintf("%s: cannot write: %s", r->path, sqlite3_errmsg(r->db));
    return -1;
}

static void bind_replica(sqlite3_stmt *st, int i, int replica)
{
    if (replica < 0) sqlite3_bind_null(st, i);
    else sqlite3_bind_int(st, i, replica);
}

static int insert_request(sim_recorder *r, const sim_request_row *row)
{
    sqlite3_stmt *st = r->ins_request;
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_int64(st, 2, row->id);
    bind_replica(st, 3, row->replica);
    bind_time(st, 4, row->arrival_s);
    bind_time(st, 5, row->enqueue_s);
    bind_time(st, 6, row->first_scheduled_s);
    bind_time(st, 7, row->first_token_s);
    bind_time(st, 8, row->finish_s);
    sqlite3_bind_int(st, 9, row->prompt_tokens);
    sqlite3_bind_int(st, 10, row->output_tokens);
    sqlite3_bind_int(st, 11, row->preemptions);
    sqlite3_bind_int(st, 12, row->slow);
    sqlite3_bind_text(st, 13, row->status, -1, SQLITE_STATIC);
    bind_replica(st, 14, row->decode_replica);
    bind_time(st, 15, row->decode_enqueue_s);
    sqlite3_bind_text(st, 16, row->cls, -1, SQLITE_STATIC);
    if (row->task_id < 0) {
        sqlite3_bind_null(st, 17);
        sqlite3_bind_null(st, 18);
    } else {
        sqlite3_bind_int64(st, 17, row->task_id);
        sqlite3_bind_int(st, 18, row->call_index);
    }
    return step_reset(r, st);
}

/* Writes the pending row of the smallest id. */
static int write_smallest(sim_recorder *r)
{
    sim_request_row *h = r->pending;
    int rc = insert_request(r, &h[0]);
    sim_request_row last = h[--r->n_pending];
    int i = 0, n = r->n_pending;
    for (;;) { /* sift down */
        int c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1].id < h[c].id) c++;
        if (h[c].id >= last.id) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return rc;
}

static int put_request(void *ctx, const sim_request_row *row)
{
    sim_recorder *r = ctx;
    /* When full, write half in one go: SQLite runs hot in cache for a burst
     * of inserts rather than one at a time between simulation events. */
    if (r->n_pending == REORDER_ROWS)
        for (int i = 0; i < REORDER_ROWS / 2; i++)
            if (write_smallest(r)) return -1;
    sim_request_row *h = r->pending;
    int i = r->n_pending++;
    while (i > 0 && h[(i - 1) / 2].id > row->id) { /* sift up */
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = *row;
    return 0;
}

static int flush_requests(sim_recorder *r)
{
    while (r->n_pending)
        if (write_smallest(r)) return -1;
    return 0;
}

static int put_replica(void *ctx, const sim_replica_row *row)
{
    sim_recorder *r = ctx;
    sqlite3_stmt *st = r->ins_replica;
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_int(st, 2, row->replica);
    sqlite3_bind_text(st, 3, row->pool, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, row->gpu, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, row->model, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 6, row->gpus);
    sqlite3_bind_double(st, 7, row->busy_s);
    sqlite3_bind_double(st, 8, row->prefill_s);
    sqlite3_bind_double(st, 9, row->decode_s);
    sqlite3_bind_int64(st, 10, row->iterations);
    sqlite3_bind_double(st, 11, row->flops);
    sqlite3_bind_double(st, 12, row->bytes);
    sqlite3_bind_double(st, 13, row->batch_seq_s);
    sqlite3_bind_int64(st, 14, row->kv_capacity_tokens);
    sqlite3_bind_int64(st, 15, row->kv_peak_tokens);
    sqlite3_bind_int64(st, 16, row->preemptions);
    sqlite3_bind_int64(st, 17, row->prefill_tokens);
    sqlite3_bind_int64(st, 18, row->decode_tokens);
    sqlite3_bind_double(st, 19, row->swap_bytes);
    sqlite3_bind_int64(st, 20, row->out_of_range);
    sqlite3_bind_double(st, 21, row->peak_flops);
    sqlite3_bind_double(st, 22, row->peak_bw);
    sqlite3_bind_double(st, 23, row->tdp_w);
    sqlite3_bind_double(st, 24, row->idle_w);
    sqlite3_bind_double(st, 25, row->prefill_w);
    sqlite3_bind_double(st, 26, row->decode_w);
    sqlite3_bind_double(st, 27, row->energy_j);
    sqlite3_bind_double(st, 28, row->kv_token_s);
    sqlite3_bind_double(st, 29, row->usd_per_gpu_hour);
    return step_reset(r, st);
}

static int put_task(void *ctx, const sim_task_row *row)
{
    sim_recorder *r = ctx;
    sqlite3_stmt *st = r->ins_task;
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_int64(st, 2, row->id);
    sqlite3_bind_text(st, 3, row->cls, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, row->status, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, row->start_s);
    bind_time(st, 6, row->finish_s);
    sqlite3_bind_int(st, 7, row->calls);
    sqlite3_bind_int(st, 8, row->slow_calls);
    return step_reset(r, st);
}

static int put_iteration(void *ctx, const sim_iteration_row *row)
{
    sim_recorder *r = ctx;
    sqlite3_stmt *st = r->ins_iteration;
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_int(st, 2, row->replica);
    sqlite3_bind_double(st, 3, row->start_s);
    sqlite3_bind_double(st, 4, row->end_s);
    sqlite3_bind_int(st, 5, row->prefill_tokens);
    sqlite3_bind_int(st, 6, row->decode_seqs);
    sqlite3_bind_int64(st, 7, row->kv_tokens);
    sqlite3_bind_double(st, 8, row->flops);
    sqlite3_bind_double(st, 9, row->bytes);
    sqlite3_bind_double(st, 10, row->energy_j);
    return step_reset(r, st);
}

void sim_recorder_scratch(sim_recorder *r)
{
    /* a file that is thrown away if anything goes wrong needs neither a
     * journal on disk nor an fsync per commit */
    sqlite3_exec(r->db, "PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY;", NULL, NULL,
                 NULL);
}

void sim_recorder_label(sim_recorder *r, const sim_run_label *label)
{
    r->label = *label;
}

sim_sink sim_recorder_sink(sim_recorder *r)
{
    return (sim_sink){.ctx = r, .request = put_request, .replica = put_replica, .task = put_task};
}

sim_sink sim_recorder_sink_with_iterations(sim_recorder *r)
{
    sim_sink s = sim_recorder_sink(r);
    s.iteration = put_iteration;
    return s;
}

const char *sim_recorder_error(const sim_recorder *r)
{
    return r->error ? r->error : "no error";
}

static void finalize(sim_recorder *r)
{
    sqlite3_finalize(r->ins_request);
    sqlite3_finalize(r->ins_replica);
    sqlite3_finalize(r->ins_task);
    sqlite3_finalize(r->ins_iteration);
    r->ins_request = r->ins_replica = r->ins_task = r->ins_iteration = NULL;
}

int sim_recorder_finish(sim_recorder *r, const char *status, double sim_end_s, double wall_s,
                        int64_t events, util_diag *d)
{
    if (flush_requests(r)) return util_diag_fail(d, "%s", r->error);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(r->db,
                                "UPDATE runs SET status = ?1, sim_end_s = ?2, wall_s = ?3, "
                                "events = ?4 WHERE id = ?5",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, status, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 2, sim_end_s);
        sqlite3_bind_double(st, 3, wall_s);
        sqlite3_bind_int64(st, 4, events);
        sqlite3_bind_int64(st, 5, r->run_id);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return db_fail(r, d, "cannot record the run's end");
    finalize(r);
    if ((rc = exec(r, "COMMIT", d))) return rc;
    r->in_txn = false;
    r->created = false; /* committed: the file is the user's now */
    return UTIL_OK;
}

void sim_recorder_abort(sim_recorder *r)
{
    if (!r) return;
    finalize(r);
    r->n_pending = 0;
    if (r->in_txn) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
    r->in_txn = false;
    if (r->created) {
        sqlite3_close(r->db);
        r->db = NULL;
        unlink(r->path);
        char *journal = util_xasprintf("%s-journal", r->path);
        unlink(journal);
        free(journal);
        r->created = false;
    }
}

/* The tables in the order a point's rows must arrive (runs first: the
 * others reference it). */
static const char *const merged_tables[] = {"runs", "requests", "replicas", "tasks", "iterations",
                                            NULL};

int sim_recorder_merge(sim_recorder *r, const char *path, util_diag *d)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(r->db, "ATTACH ?1 AS point", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return db_fail(r, d, "cannot open a point's database");
    rc = begin(r, d);
    for (int i = 0; !rc && merged_tables[i]; i++) {
        /* the same schema on both sides: whole rows copied as they are */
        char *sql = util_xasprintf("INSERT INTO main.%s SELECT * FROM point.%s", merged_tables[i],
                                   merged_tables[i]);
        rc = exec(r, sql, d);
        free(sql);
    }
    if (!rc) rc = exec(r, "COMMIT", d);
    if (rc) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
    r->in_txn = false;
    if (!rc) {
        r->need_schema = false;
        r->created = false; /* it holds a committed run: the user's now */
    }
    sqlite3_exec(r->db, "DETACH point", NULL, NULL, NULL);
    return rc;
}

sqlite3 *sim_recorder_db(sim_recorder *r)
{
    return r->db;
}

sqlite3 *sim_recorder_release(sim_recorder *r)
{
    sqlite3 *db = r->db;
    finalize(r);
    r->db = NULL;
    sim_recorder_close(r);
    return db;
}

void sim_recorder_close(sim_recorder *r)
{
    if (!r) return;
    finalize(r);
    sqlite3_close(r->db);
    free(r->path);
    free(r->error);
    free(r->pending);
    free(r);
}
