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
 * A run is one transaction, and the database never holds part of one.  A
 * run into an existing database writes straight into it, in WAL mode, with
 * its write lock held for the run: readers see the committed runs
 * throughout, and a writer killed mid-run leaves only log frames that were
 * never committed.  A run into a new file, or into a database another
 * run holds, is written into a private file beside it (no journal on disk,
 * no fsync: nobody else knows the file, and a failed run simply removes
 * it) and published when it ends: a new database is the private file made
 * durable and linked into place (link(2) fails rather than replace a file
 * another process created meanwhile); an existing one gets the run copied
 * in by one short transaction, renumbered if another writer took its id.
 * So concurrent writers wait for each other only to publish, and no file
 * this process did not create is ever removed.  Ctrl-C is not a failure:
 * the engine stops, the rows so far are committed, and the run is marked
 * interrupted.
 */
#include "rec.h"

#include <errno.h>
#include <fcntl.h>
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
/* 2: runs.status_reason (a version-1 database gains the column when a run
 * is published into it). */
#define SCHEMA_VERSION 2
/* Writers wait this long for each other's publishing transaction. */
#define BUSY_TIMEOUT_MS 60000

const char rec_schema_sql[] =
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
    "  sweep TEXT,"
    "  status_reason TEXT);"
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

struct rec_recorder {
    sqlite3 *db;
    sim_request_row *pending; /* min-heap by id, up to REORDER_ROWS */
    int n_pending;
    char *path;      /* the database the run is stored in; NULL: none */
    char *file;      /* the private file the run is written to; NULL: in memory, or direct */
    bool direct;     /* writing straight into path's database, its write lock held */
    bool in_txn;
    int64_t run_id;
    sqlite3_stmt *ins_request, *ins_replica, *ins_task, *ins_iteration;
    char *error; /* message of a failed sink callback */
    rec_run_label label;
};

static int db_fail(rec_recorder *r, util_diag *d, const char *what)
{
    return util_diag_fail(d, "%s: %s: %s", r->path ? r->path : "(memory)", what,
                          sqlite3_errmsg(r->db));
}

static int exec(rec_recorder *r, const char *sql, util_diag *d)
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

/* ---- which files may take runs ---- */

/* Whether db is a servesim database of a schema this build writes. */
static int check_db(sqlite3 *db, const char *path, util_diag *d)
{
    int rc;
    int64_t app = query_int(db, "PRAGMA application_id", &rc);
    if (rc == SQLITE_NOTADB)
        return util_diag_add(d, "%s: not a SQLite database (left untouched)", path);
    if (rc != SQLITE_OK)
        return util_diag_fail(d, "%s: cannot read: %s", path, sqlite3_errmsg(db));
    int64_t version = query_int(db, "PRAGMA user_version", &rc);
    if (app != APPLICATION_ID)
        return util_diag_add(d, "%s: exists and is not a servesim database (left untouched); "
                                "write to a new file",
                             path);
    if (version > SCHEMA_VERSION)
        return util_diag_add(d, "%s: written by a newer servesim (schema %lld, this one writes %d)",
                             path, (long long)version, SCHEMA_VERSION);
    return UTIL_OK;
}

int rec_check(const char *path, util_diag *d)
{
    if (!path || !*path) return util_diag_add(d, "the database path is empty");
    if (!strcmp(path, ":memory:") || !strncmp(path, "file:", 5))
        return util_diag_add(d, "%s: not a file name (a run must be stored in a file)", path);
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) return util_diag_add(d, "%s: %s", path, strerror(errno));
        char *dir = util_dirname(path);
        int ok = access(dir, W_OK | X_OK);
        int err = errno;
        free(dir);
        return ok ? util_diag_add(d, "%s: cannot create a file there: %s", path, strerror(err))
                  : UTIL_OK;
    }
    if (!S_ISREG(st.st_mode)) return util_diag_add(d, "%s: not a regular file", path);
    sqlite3 *db = NULL;
    int rc = UTIL_OK;
    /* read-write though it only reads: the last connection to close a WAL
     * database removes its -wal and -shm files only if it may write */
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        rc = util_diag_add(d, "%s: cannot open for writing: %s", path,
                           db ? sqlite3_errmsg(db) : "?");
    else {
        sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
        rc = check_db(db, path, d);
    }
    sqlite3_close(db);
    return rc;
}

/* ---- opening ---- */

/* A file of this process beside path, created empty (O_EXCL: never one that
 * exists); caller frees. */
static char *private_file(const char *path, util_diag *d)
{
    for (int k = 0; k < 1000; k++) {
        char *f = util_xasprintf("%s.run-%ld-%d.tmp", path, (long)getpid(), k);
        int fd = open(f, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            close(fd);
            return f;
        }
        int err = errno;
        free(f);
        if (err != EEXIST) {
            util_diag_fail(d, "%s: cannot create a file beside it: %s", path, strerror(err));
            return NULL;
        }
    }
    util_diag_fail(d, "%s: cannot create a file beside it", path);
    return NULL;
}

/* Opens the connection to r->file (or memory). */
static int connect(rec_recorder *r, util_diag *d)
{
    /* One connection, used by one thread: SQLite's per-call mutex is pure
     * cost (about 5% of a 1M-request record in a profile). */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(r->file ? r->file : ":memory:", &r->db, flags, NULL) != SQLITE_OK)
        return util_diag_fail(d, "%s: cannot open: %s", r->file ? r->file : ":memory:",
                              r->db ? sqlite3_errmsg(r->db) : strerror(errno));
    /* a file nobody else knows, removed if anything goes wrong, needs
     * neither a journal on disk nor an fsync per commit */
    return exec(r, "PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY;", d);
}

static rec_recorder *recorder_new(void)
{
    rec_recorder *r = util_xcalloc(1, sizeof *r);
    r->pending = util_xmalloc(REORDER_ROWS * sizeof *r->pending);
    return r;
}

static int upgrade(sqlite3 *db, const char *path, util_diag *d);

/* Writing straight into an existing database: in WAL mode (readers go on
 * beside the writer) with its write lock taken now and held for the run.
 * Returns 1 when another process holds it: the run goes to a private file,
 * to be copied in when it ends. */
static int connect_direct(rec_recorder *r, util_diag *d)
{
    if (sqlite3_open_v2(r->path, &r->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK)
        return util_diag_fail(d, "%s: cannot open: %s", r->path,
                              r->db ? sqlite3_errmsg(r->db) : strerror(errno));
    sqlite3_busy_timeout(r->db, 250); /* a reader's brief lock, not another run's */
    int rc;
    sqlite3_stmt *st = NULL;
    bool wal = sqlite3_prepare_v2(r->db, "PRAGMA journal_mode = WAL", -1, &st, NULL) == SQLITE_OK &&
               sqlite3_step(st) == SQLITE_ROW &&
               !strcmp((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    if (!wal || sqlite3_exec(r->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        rc = sqlite3_errcode(r->db);
        sqlite3_close(r->db);
        r->db = NULL;
        if (!wal || rc == SQLITE_BUSY || rc == SQLITE_LOCKED) return 1;
        return util_diag_fail(d, "%s: cannot write", r->path);
    }
    r->in_txn = true;
    r->direct = true;
    sqlite3_busy_timeout(r->db, BUSY_TIMEOUT_MS);
    rc = check_db(r->db, r->path, d); /* again, under the lock */
    return rc ? rc : upgrade(r->db, r->path, d);
}

int rec_open(const char *path, rec_recorder **out, util_diag *d)
{
    *out = NULL;
    if (path && !strcmp(path, ":memory:")) path = NULL; /* the tests' and plans' spelling */
    int rc = path ? rec_check(path, d) : UTIL_OK;
    if (rc) return rc;
    rec_recorder *r = recorder_new();
    if (path) r->path = util_xstrdup(path);
    if (path && access(path, F_OK) == 0) rc = connect_direct(r, d);
    if (path && !r->direct && rc >= 0) {
        rc = UTIL_OK;
        if (!(r->file = private_file(path, d))) rc = UTIL_EFAIL;
    }
    if (!rc && !r->direct) rc = connect(r, d);
    if (rc) {
        rec_abort(r);
        rec_close(r);
        return rc;
    }
    *out = r;
    return UTIL_OK;
}

int rec_open_scratch(const char *file, rec_recorder **out, util_diag *d)
{
    *out = NULL;
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return util_diag_fail(d, "%s: cannot create: %s", file, strerror(errno));
    close(fd);
    rec_recorder *r = recorder_new();
    r->file = util_xstrdup(file);
    int rc = connect(r, d);
    if (rc) {
        rec_abort(r);
        rec_close(r);
        return rc;
    }
    *out = r;
    return UTIL_OK;
}

static void utc_now(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int prepare(rec_recorder *r, util_diag *d)
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

static int insert_run(rec_recorder *r, const sim_scenario *sc, util_diag *d)
{
    char started[32];
    utc_now(started, sizeof started);
    char *scenario = cJSON_PrintUnformatted(sc->json);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(r->db,
                                "INSERT INTO runs (id, name, seed, scenario, version, started_at, "
                                "status, overrides, sweep) VALUES ((SELECT ?6 WHERE NOT EXISTS "
                                "(SELECT 1 FROM runs WHERE id = ?6)), ?1, ?2, ?3, ?4, ?5, "
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

/* A private file is new: its tables are created in the run's transaction.
 * Writing straight into the database, the transaction is open already. */
static int begin(rec_recorder *r, util_diag *d)
{
    if (r->direct) return UTIL_OK;
    int rc = exec(r, "BEGIN", d);
    if (rc) return rc;
    r->in_txn = true;
    char *pragmas = util_xasprintf("PRAGMA application_id = %d; PRAGMA user_version = %d;",
                                   APPLICATION_ID, SCHEMA_VERSION);
    rc = exec(r, pragmas, d);
    free(pragmas);
    if (!rc) rc = exec(r, rec_schema_sql, d);
    return rc;
}

int rec_begin(rec_recorder *r, const sim_scenario *sc, util_diag *d)
{
    int rc = begin(r, d);
    if (!rc) rc = insert_run(r, sc, d);
    if (!rc) rc = prepare(r, d);
    return rc;
}

static void bind_time(sqlite3_stmt *st, int i, double s)
{
    if (isnan(s)) sqlite3_bind_null(st, i);
    else sqlite3_bind_double(st, i, s);
}

static int step_reset(rec_recorder *r, sqlite3_stmt *st)
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

static int insert_request(rec_recorder *r, const sim_request_row *row)
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
static int write_smallest(rec_recorder *r)
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
    rec_recorder *r = ctx;
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

static int flush_requests(rec_recorder *r)
{
    while (r->n_pending)
        if (write_smallest(r)) return -1;
    return 0;
}

static int put_replica(void *ctx, const sim_replica_row *row)
{
    rec_recorder *r = ctx;
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
    rec_recorder *r = ctx;
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
    rec_recorder *r = ctx;
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

void rec_label(rec_recorder *r, const rec_run_label *label)
{
    r->label = *label;
}

sim_sink rec_sink(rec_recorder *r)
{
    return (sim_sink){.ctx = r, .request = put_request, .replica = put_replica, .task = put_task};
}

sim_sink rec_sink_with_iterations(rec_recorder *r)
{
    sim_sink s = rec_sink(r);
    s.iteration = put_iteration;
    return s;
}

const char *rec_error(const rec_recorder *r)
{
    return r->error ? r->error : "no error";
}

static void finalize(rec_recorder *r)
{
    sqlite3_finalize(r->ins_request);
    sqlite3_finalize(r->ins_replica);
    sqlite3_finalize(r->ins_task);
    sqlite3_finalize(r->ins_iteration);
    r->ins_request = r->ins_replica = r->ins_task = r->ins_iteration = NULL;
}

/* ---- the run's end ---- */

static int record_end(rec_recorder *r, const rec_run_end *end, util_diag *d)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(r->db,
                                "UPDATE runs SET status = ?1, sim_end_s = ?2, wall_s = ?3, "
                                "events = ?4, status_reason = ?6 WHERE id = ?5",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, sim_status_names[end->status], -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 2, end->sim_end_s);
        sqlite3_bind_double(st, 3, end->wall_s);
        sqlite3_bind_int64(st, 4, end->events);
        sqlite3_bind_int64(st, 5, r->run_id);
        if (end->reason) sqlite3_bind_text(st, 6, end->reason, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK : db_fail(r, d, "cannot record the run's end");
}

/* fsync(2) of a file or folder by name. */
static int sync_path(const char *path, int flags)
{
    int fd = open(path, flags);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int rec_finish(rec_recorder *r, const rec_run_end *end, util_diag *d)
{
    if (flush_requests(r)) return util_diag_fail(d, "%s", r->error);
    int rc = record_end(r, end, d);
    if (rc) return rc;
    finalize(r);
    if ((rc = exec(r, "COMMIT", d))) return rc;
    r->in_txn = false;
    if (r->direct) return UTIL_OK; /* committed in place */
    if (!r->path) { /* in memory, or a scratch file: the caller's now */
        free(r->file);
        r->file = NULL;
        return UTIL_OK;
    }
    /* A published file is read by others while runs are added: WAL lets
     * readers go on during a writer's transaction and recover cleanly from
     * a writer killed mid-way.  Closing checkpoints the log into the file. */
    rc = exec(r, "PRAGMA journal_mode = WAL", d);
    sqlite3_close(r->db);
    r->db = NULL;
    if (rc) return rc;
    int64_t id;
    rc = rec_publish(r->file, r->path, &id, d);
    if (!rc) {
        r->run_id = id;
        free(r->file); /* published: the file is gone, or is the database */
        r->file = NULL;
    }
    return rc;
}

int64_t rec_run_id(const rec_recorder *r)
{
    return r->run_id;
}

void rec_abort(rec_recorder *r)
{
    if (!r) return;
    finalize(r);
    r->n_pending = 0;
    if (r->in_txn && r->db) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
    r->in_txn = false;
    if (r->file) { /* ours alone: nobody else knows its name */
        sqlite3_close(r->db);
        r->db = NULL;
        unlink(r->file);
        free(r->file);
        r->file = NULL;
    }
}

/* ---- publishing a finished file into the database ---- */

/* The file becomes the database: made durable first (it was written
 * without fsyncs), then linked, which fails with EEXIST instead of
 * replacing a database created meanwhile.  Returns 1 when path exists. */
static int link_new(const char *file, const char *path, util_diag *d)
{
    if (sync_path(file, O_RDONLY) != 0)
        return util_diag_fail(d, "%s: cannot sync: %s", file, strerror(errno));
    if (link(file, path) != 0) {
        if (errno == EEXIST) return 1;
        return util_diag_fail(d, "%s: cannot create: %s", path, strerror(errno));
    }
    char *dir = util_dirname(path);
    sync_path(dir, O_RDONLY | O_DIRECTORY); /* the new name, durable */
    free(dir);
    unlink(file);
    return UTIL_OK;
}

/* A database file of ours and the files SQLite keeps beside it. */
static void remove_db_file(const char *file)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal", NULL};
    for (int i = 0; suffixes[i]; i++) {
        char *f = util_xasprintf("%s%s", file, suffixes[i]);
        unlink(f);
        free(f);
    }
}

static int exec_db(sqlite3 *db, const char *path, const char *sql, util_diag *d)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK) return UTIL_OK;
    return util_diag_fail(d, "%s: %s", path, sqlite3_errmsg(db));
}

/* A version-1 database gains runs.status_reason (inside the transaction). */
static int upgrade(sqlite3 *db, const char *path, util_diag *d)
{
    int rc;
    if (query_int(db, "PRAGMA main.user_version", &rc) >= SCHEMA_VERSION) return UTIL_OK;
    char *sql = util_xasprintf("ALTER TABLE main.runs ADD COLUMN status_reason TEXT; "
                               "PRAGMA main.user_version = %d;", SCHEMA_VERSION);
    rc = exec_db(db, path, sql, d);
    free(sql);
    return rc;
}

/* The file's runs take ids above every id on both sides when any of theirs
 * is taken in main (the file is ours: renumbering it changes nothing else). */
static int renumber(sqlite3 *db, const char *path, util_diag *d)
{
    int rc;
    int64_t taken = query_int(db, "SELECT count(*) FROM main.runs WHERE id IN "
                                  "(SELECT id FROM point.runs)", &rc);
    if (rc != SQLITE_OK) return util_diag_fail(d, "%s: %s", path, sqlite3_errmsg(db));
    if (!taken) return UTIL_OK;
    int64_t shift = query_int(db, "SELECT max((SELECT max(id) FROM main.runs), "
                                  "(SELECT max(id) FROM point.runs)) - "
                                  "(SELECT min(id) FROM point.runs) + 1", &rc);
    static const char *const tables[] = {"requests", "replicas", "tasks", "iterations", NULL};
    char *sql = util_xasprintf("UPDATE point.runs SET id = id + %lld", (long long)shift);
    rc = exec_db(db, path, sql, d);
    free(sql);
    for (int i = 0; !rc && tables[i]; i++) {
        sql = util_xasprintf("UPDATE point.%s SET run_id = run_id + %lld", tables[i],
                             (long long)shift);
        rc = exec_db(db, path, sql, d);
        free(sql);
    }
    return rc;
}

/* The tables in the order a point's rows must arrive (runs first: the
 * others reference it). */
static const char *const merged_tables[] = {"runs", "requests", "replicas", "tasks", "iterations",
                                            NULL};

/* Copies the attached point's runs into main, in one transaction. */
static int copy_runs(sqlite3 *db, const char *path, int64_t *first_id, util_diag *d)
{
    int rc = exec_db(db, path, "BEGIN IMMEDIATE", d);
    if (rc) return rc;
    rc = check_db(db, path, d);
    if (!rc) rc = upgrade(db, path, d);
    if (!rc) rc = renumber(db, path, d);
    for (int i = 0; !rc && merged_tables[i]; i++) {
        /* the same schema on both sides: whole rows copied as they are */
        char *sql = util_xasprintf("INSERT INTO main.%s SELECT * FROM point.%s", merged_tables[i],
                                   merged_tables[i]);
        rc = exec_db(db, path, sql, d);
        free(sql);
    }
    int qrc;
    if (!rc && first_id) *first_id = query_int(db, "SELECT min(id) FROM point.runs", &qrc);
    if (!rc) rc = exec_db(db, path, "COMMIT", d);
    if (rc) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static int merge_into(const char *file, const char *path, int64_t *first_id, util_diag *d)
{
    sqlite3 *db = NULL;
    int rc = UTIL_OK;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        rc = util_diag_fail(d, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "?");
        sqlite3_close(db);
        return rc;
    }
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    /* journal_mode needs no transaction; a database already in WAL says so */
    rc = exec_db(db, path, "PRAGMA journal_mode = WAL", d);
    sqlite3_stmt *st = NULL;
    if (!rc && (sqlite3_prepare_v2(db, "ATTACH ?1 AS point", -1, &st, NULL) != SQLITE_OK ||
                (sqlite3_bind_text(st, 1, file, -1, SQLITE_STATIC), sqlite3_step(st)) !=
                    SQLITE_DONE))
        rc = util_diag_fail(d, "%s: cannot open: %s", file, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (!rc) {
        rc = copy_runs(db, path, first_id, d);
        sqlite3_exec(db, "DETACH point", NULL, NULL, NULL);
    }
    sqlite3_close(db);
    if (!rc) remove_db_file(file);
    return rc;
}

int rec_publish(const char *file, const char *path, int64_t *first_id, util_diag *d)
{
    if (first_id) {
        sqlite3 *db = NULL;
        int rc;
        /* read-write, though it only reads: see an_open */
        if (sqlite3_open_v2(file, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK)
            *first_id = query_int(db, "SELECT min(id) FROM runs", &rc);
        sqlite3_close(db);
    }
    int rc = link_new(file, path, d);
    return rc == 1 ? merge_into(file, path, first_id, d) : rc;
}

sqlite3 *rec_db(rec_recorder *r)
{
    return r->db;
}

sqlite3 *rec_release(rec_recorder *r)
{
    sqlite3 *db = r->db;
    finalize(r);
    r->db = NULL;
    rec_close(r);
    return db;
}

void rec_close(rec_recorder *r)
{
    if (!r) return;
    finalize(r);
    sqlite3_close(r->db);
    if (r->file) unlink(r->file); /* a run never finished leaves nothing behind */
    free(r->path);
    free(r->file);
    free(r->error);
    free(r->pending);
    free(r);
}
