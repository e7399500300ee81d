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
#include "rec_int.h"
#include "schema.h"

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


const int rec_schema_version = REC__SCHEMA_VERSION;

/* The schema is one text, past the 4095 characters ISO C promises a
 * literal (-Woverlength-strings under -Wpedantic): GCC and Clang, the
 * compilers the build supports, take any length. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
const char rec_schema_sql[] =
    "CREATE TABLE runs (" REC_RUNS(REC_DDL, REC_DDL_LAST) ");"
    "CREATE TABLE requests (" REC_REQUESTS(REC_DDL, REC_DDL) "  PRIMARY KEY (run_id, id)) WITHOUT ROWID;"
    "CREATE TABLE replicas (" REC_REPLICAS(REC_DDL, REC_DDL) "  PRIMARY KEY (run_id, replica));"
    "CREATE TABLE iterations (" REC_ITERATIONS(REC_DDL, REC_DDL_LAST) ");"
    "CREATE TABLE tasks (" REC_TASKS(REC_DDL, REC_DDL) "  PRIMARY KEY (run_id, id));"
    "CREATE VIEW task_metrics AS SELECT"
    "  run_id, id, class, status, start_s, calls, slow_calls,"
    "  finish_s - start_s AS e2e_s"
    "  FROM tasks;"
    REC__REQUEST_METRICS
    REC__MEASUREMENTS;
#pragma GCC diagnostic pop

/* Requests finish out of the order they arrived in, but `requests` is a
 * B-tree keyed by (run_id, id): rows are put back in id order
 * (util_idring) and written so, so the table grows by appends, as a bare
 * insert in key order does.  They go in ROWS_PER_INSERT at a time, one
 * statement each: SQLite's cost per statement, spread. */
#define REORDER_MIN 4096
#define REORDER_MAX ((int64_t)1 << 20)
#define ROWS_PER_INSERT 16

struct rec_recorder {
    sqlite3 *db;
    util_idring ring;         /* rows waiting for a smaller id */
    sim_request_row batch[ROWS_PER_INSERT]; /* rows in id order, for the next statement */
    int n_batch;
    char *path;      /* the database the run is stored in; NULL: none */
    char *file;      /* the private file the run is written to; NULL: in memory, or direct */
    bool direct;     /* writing straight into path's database, its write lock held */
    bool in_txn;
    int64_t run_id;
    sqlite3_stmt *ins_request, *ins_requests, *ins_replica, *ins_task, *ins_iteration;
    char *error; /* message of a failed sink callback */
    rec_run_label label;
    rec__writer *writer; /* the thread writing the rows (rec_start_writer), or NULL */
    bool measured;       /* a measured run (rec_begin_measured): its status says so */
    int64_t requests;    /* request rows written: runs.requests, which readers check */
    dev_t dev;           /* writing straight into path: the file it was when opened */
    ino_t ino;
};

rec__writer *rec__recorder_writer(void *ctx)
{
    return ((rec_recorder *)ctx)->writer;
}

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
     * neither a journal on disk nor an fsync per commit; a new file's pages
     * are 64 KiB, which an append-only table of small rows fills a tenth as
     * often as 4 KiB ones (its inserts, scans and the copies of a sweep's
     * points all walk fewer pages).  A database in memory (a lesson's
     * point) is never copied and its pages are malloc'd: it keeps SQLite's
     * default, with which the day lesson's quick points took a fifth less
     * CPU (issue 30, docs/explore.md) */
    const char *pages = r->file ? "PRAGMA page_size = 65536; " : "";
    char *sql = util_xasprintf("%sPRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY;", pages);
    int rc = exec(r, sql, d);
    free(sql);
    return rc;
}

static rec_recorder *recorder_new(void)
{
    rec_recorder *r = util_xcalloc(1, sizeof *r);
    util_idring_init(&r->ring, sizeof(sim_request_row), REORDER_MIN, REORDER_MAX);
    return r;
}

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
    struct stat id; /* which file this is, to tell at the end whether it is still there */
    if (stat(r->path, &id) == 0) {
        r->dev = id.st_dev;
        r->ino = id.st_ino;
    }
    sqlite3_busy_timeout(r->db, REC__BUSY_TIMEOUT_MS);
    rc = rec__check_db(r->db, r->path, d); /* again, under the lock */
    return rc ? rc : rec__upgrade(r->db, r->path, d);
}

int rec_open(const char *path, rec_recorder **out, util_diag *d)
{
    *out = NULL;
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

/* INSERT INTO t VALUES (?, ?, ...): one parameter per column, in the
 * table's order (schema.h). */
static int prepare(rec_recorder *r, util_diag *d)
{
#define ROW_PARAMS "(" REC_REQUESTS(REC_PARAM, REC_PARAM_LAST) ")"
    static const char req[] = "INSERT INTO requests VALUES " ROW_PARAMS;
    static const char reqs[] = "INSERT INTO requests VALUES " ROW_PARAMS "," ROW_PARAMS ","
        ROW_PARAMS "," ROW_PARAMS "," ROW_PARAMS "," ROW_PARAMS "," ROW_PARAMS "," ROW_PARAMS ","
        ROW_PARAMS "," ROW_PARAMS "," ROW_PARAMS "," ROW_PARAMS "," ROW_PARAMS "," ROW_PARAMS ","
        ROW_PARAMS "," ROW_PARAMS;
    _Static_assert(ROWS_PER_INSERT == 16, "reqs holds ROWS_PER_INSERT rows");
    static const char rep[] = "INSERT INTO replicas VALUES (" REC_REPLICAS(REC_PARAM, REC_PARAM_LAST) ")";
    static const char task[] = "INSERT INTO tasks VALUES (" REC_TASKS(REC_PARAM, REC_PARAM_LAST) ")";
    static const char iteration[] =
        "INSERT INTO iterations VALUES (" REC_ITERATIONS(REC_PARAM, REC_PARAM_LAST) ")";
    if (sqlite3_prepare_v2(r->db, req, -1, &r->ins_request, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, reqs, -1, &r->ins_requests, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, rep, -1, &r->ins_replica, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, task, -1, &r->ins_task, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, iteration, -1, &r->ins_iteration, NULL) != SQLITE_OK)
        return db_fail(r, d, "cannot prepare");
    return UTIL_OK;
}

static int bind_named_text(sqlite3_stmt *st, const char *name, const char *v)
{
    return v ? sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, name), v, -1, SQLITE_STATIC)
             : SQLITE_OK;
}

/* The run's row, status 'running' until rec_finish.  The id asked for (a
 * sweep's point) is taken only if free: NULL lets SQLite number it. */
static int insert_run(rec_recorder *r, const sim_scenario *sc, util_diag *d)
{
    char started[32];
    utc_now(started, sizeof started);
    char *scenario = cJSON_PrintUnformatted(sc->json);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(r->db,
                                "INSERT INTO runs (id, name, seed, scenario, version, started_at, "
                                "status, overrides, sweep) VALUES ((SELECT :id WHERE NOT EXISTS "
                                "(SELECT 1 FROM runs WHERE id = :id)), :name, :seed, :scenario, "
                                ":version, :started_at, 'running', :overrides, :sweep)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        if (r->label.run_id > 0)
            sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":id"), r->label.run_id);
        sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":seed"), (sqlite3_int64)sc->seed);
        bind_named_text(st, ":name", sc->name);
        bind_named_text(st, ":scenario", scenario);
        bind_named_text(st, ":version", SERVESIM_VERSION);
        bind_named_text(st, ":started_at", started);
        bind_named_text(st, ":overrides", r->label.overrides);
        bind_named_text(st, ":sweep", r->label.sweep);
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
                                   REC__APPLICATION_ID, REC__SCHEMA_VERSION);
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

/* A measured run's row in `runs` (seed 0, its tool as the version) and in
 * `measurements`. */
static int insert_measured(rec_recorder *r, const rec_measured *m, util_diag *d)
{
    char started[32];
    utc_now(started, sizeof started);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(r->db,
                                "INSERT INTO runs (name, seed, scenario, version, started_at, "
                                "status, overrides) VALUES (:name, 0, :scenario, :version, "
                                ":started_at, 'running', :overrides)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        bind_named_text(st, ":name", m->name);
        bind_named_text(st, ":scenario", m->scenario);
        bind_named_text(st, ":version", m->format);
        bind_named_text(st, ":started_at", started);
        bind_named_text(st, ":overrides", r->label.overrides);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return db_fail(r, d, "cannot record the measured run");
    r->run_id = sqlite3_last_insert_rowid(r->db);
    rc = sqlite3_prepare_v2(r->db,
                            "INSERT INTO measurements VALUES (:id, :format, :source, :clock, "
                            ":metrics, :missing)",
                            -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":id"), r->run_id);
        bind_named_text(st, ":format", m->format);
        bind_named_text(st, ":source", m->source);
        bind_named_text(st, ":clock", m->clock);
        bind_named_text(st, ":metrics", m->metrics);
        bind_named_text(st, ":missing", m->missing);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK : db_fail(r, d, "cannot record the measurement");
}

int rec_begin_measured(rec_recorder *r, const rec_measured *m, util_diag *d)
{
    r->measured = true;
    int rc = begin(r, d);
    if (!rc) rc = insert_measured(r, m, d);
    if (!rc) rc = prepare(r, d);
    return rc;
}

/* ---- the binders schema.h names ---- */

static void bind_i64(sqlite3_stmt *st, int i, int64_t v)
{
    sqlite3_bind_int64(st, i, v);
}

static void bind_opt(sqlite3_stmt *st, int i, int64_t v)
{
    if (v < 0) sqlite3_bind_null(st, i);
    else sqlite3_bind_int64(st, i, v);
}

static void bind_real(sqlite3_stmt *st, int i, double v)
{
    sqlite3_bind_double(st, i, v);
}

static void bind_time(sqlite3_stmt *st, int i, double s)
{
    if (isnan(s)) sqlite3_bind_null(st, i);
    else sqlite3_bind_double(st, i, s);
}

/* A deadline is after arrival: 0 (a row made without one, as an importer's
 * are) is none, as NAN is. */
static void bind_deadline(sqlite3_stmt *st, int i, double s)
{
    if (!(s > 0)) sqlite3_bind_null(st, i);
    else sqlite3_bind_double(st, i, s);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    /* the statement is stepped before the row's strings can change */
    sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

/* A speculative step's decoders by the drafts each accepted, as the JSON
 * array [n0, n1, .., nK]; NULL for a step that did not speculate. */
static void bind_accepted(sqlite3_stmt *st, int i, const sim_iteration_row *row)
{
    if (row->spec_k <= 0) {
        sqlite3_bind_null(st, i);
        return;
    }
    char text[(SIM_SPEC_MAX_K + 1) * 12 + 2];
    int n = 0;
    for (int j = 0; j <= row->spec_k; j++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%c%d", j ? ',' : '[',
                      (int)row->accepted[j]);
    snprintf(text + n, sizeof text - (size_t)n, "]");
    sqlite3_bind_text(st, i, text, -1, SQLITE_TRANSIENT);
}

/* Binds every column of a list (schema.h) in order, from `row` and `r`. */
#define REC_BIND(name, type, bind, value) bind_##bind(st, ++col, (value));
#define BIND_ALL(TABLE)                                                                            \
    do {                                                                                           \
        int col = 0;                                                                               \
        TABLE(REC_BIND, REC_BIND)                                                                  \
    } while (0)

static int step_reset(rec_recorder *r, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE) return 0;
    free(r->error);
    r->error = util_xasprintf("%s: cannot write: %s", r->path ? r->path : r->file,
                              sqlite3_errmsg(r->db));
    return -1;
}

/* Binds every column of a list from `row` and `r`, from parameter col + 1
 * on (a multi-row statement's row k starts at k x columns). */
#define BIND_FROM(TABLE, first)                                                                    \
    do {                                                                                           \
        int col = (first);                                                                         \
        TABLE(REC_BIND, REC_BIND)                                                                  \
    } while (0)

static int insert_request(rec_recorder *r, const sim_request_row *row)
{
    sqlite3_stmt *st = r->ins_request;
    BIND_ALL(REC_REQUESTS);
    return step_reset(r, st);
}

/* The batch's rows: a full batch in one statement, a partial one row by row. */
static int write_batch(rec_recorder *r)
{
    int rc = 0;
    if (r->n_batch == ROWS_PER_INSERT) {
        sqlite3_stmt *st = r->ins_requests;
        enum { COLUMNS = REC_REQUESTS(REC_COUNT, REC_COUNT) 0 };
        for (int k = 0; k < ROWS_PER_INSERT; k++) {
            const sim_request_row *row = &r->batch[k];
            BIND_FROM(REC_REQUESTS, k * COLUMNS);
        }
        rc = step_reset(r, st);
    } else {
        for (int k = 0; k < r->n_batch && !rc; k++) rc = insert_request(r, &r->batch[k]);
    }
    r->n_batch = 0;
    return rc;
}

static int emit(void *ctx, const void *rec)
{
    rec_recorder *r = ctx;
    r->requests++;
    r->batch[r->n_batch++] = *(const sim_request_row *)rec;
    return r->n_batch == ROWS_PER_INSERT ? write_batch(r) : 0;
}

static int64_t row_id(const void *rec)
{
    return ((const sim_request_row *)rec)->id;
}

int rec__put_request(void *ctx, const sim_request_row *row)
{
    rec_recorder *r = ctx;
    return util_idring_put(&r->ring, row->id, row, row_id, emit, r);
}

static int flush_requests(rec_recorder *r)
{
    return util_idring_flush(&r->ring, emit, r) || write_batch(r) ? -1 : 0;
}

int rec__put_replica(void *ctx, const sim_replica_row *row)
{
    rec_recorder *r = ctx;
    sqlite3_stmt *st = r->ins_replica;
    BIND_ALL(REC_REPLICAS);
    return step_reset(r, st);
}

int rec__put_task(void *ctx, const sim_task_row *row)
{
    rec_recorder *r = ctx;
    sqlite3_stmt *st = r->ins_task;
    BIND_ALL(REC_TASKS);
    return step_reset(r, st);
}

int rec__put_iteration(void *ctx, const sim_iteration_row *row)
{
    rec_recorder *r = ctx;
    sqlite3_stmt *st = r->ins_iteration;
    BIND_ALL(REC_ITERATIONS);
    return step_reset(r, st);
}

void rec_label(rec_recorder *r, const rec_run_label *label)
{
    r->label = *label;
}

int rec_start_writer(rec_recorder *r, util_diag *d)
{
    if (r->writer) return UTIL_OK;
    if (rec__writer_start(r, &r->writer))
        return util_diag_fail(d, "%s: cannot start the writer thread", r->path ? r->path : "(memory)");
    return UTIL_OK;
}

sim_sink rec_sink(rec_recorder *r)
{
    if (r->writer)
        return (sim_sink){.ctx = r, .request = rec__writer_put_request,
                          .replica = rec__writer_put_replica, .task = rec__writer_put_task};
    return (sim_sink){.ctx = r, .request = rec__put_request, .replica = rec__put_replica,
                      .task = rec__put_task};
}

sim_sink rec_sink_with_iterations(rec_recorder *r)
{
    sim_sink s = rec_sink(r);
    s.iteration = r->writer ? rec__writer_put_iteration : rec__put_iteration;
    return s;
}

/* The writer thread's rows are all written (or it failed) and the
 * connection is this thread's again. */
static int stop_writer(rec_recorder *r)
{
    int rc = rec__writer_stop(r->writer);
    r->writer = NULL;
    return rc;
}

const char *rec_error(const rec_recorder *r)
{
    return r->error ? r->error : "no error";
}

static void finalize(rec_recorder *r)
{
    sqlite3_finalize(r->ins_request);
    sqlite3_finalize(r->ins_requests);
    sqlite3_finalize(r->ins_replica);
    sqlite3_finalize(r->ins_task);
    sqlite3_finalize(r->ins_iteration);
    r->ins_request = r->ins_requests = r->ins_replica = r->ins_task = r->ins_iteration = NULL;
}

/* ---- the run's end ---- */

/* The one place a run's status is written. */
static int record_end(rec_recorder *r, const rec_run_end *end, util_diag *d)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(r->db,
                                "UPDATE runs SET status = :status, sim_end_s = :sim_end_s, "
                                "wall_s = :wall_s, events = :events, "
                                "status_reason = :status_reason, requests = :requests "
                                "WHERE id = :id",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        bind_named_text(st, ":status", r->measured && end->status == SIM_STATUS_COMPLETED
                                           ? "measured"
                                           : sim_status_names[end->status]);
        bind_named_text(st, ":status_reason", end->reason);
        sqlite3_bind_double(st, sqlite3_bind_parameter_index(st, ":sim_end_s"), end->sim_end_s);
        sqlite3_bind_double(st, sqlite3_bind_parameter_index(st, ":wall_s"), end->wall_s);
        sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":events"), end->events);
        sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":requests"), r->requests);
        sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":id"), r->run_id);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK : db_fail(r, d, "cannot record the run's end");
}

/* A run written straight into its database is committed; but if the file
 * was removed (or replaced) meanwhile, it was committed into a file no
 * name reaches, lost when the connection closes.  It is kept instead: the
 * database as this connection sees it, the run and every run before it,
 * copied into a private file beside the name (VACUUM INTO), and the
 * message says where.  A removed file's -wal and -shm, which SQLite leaves
 * by the name, go too: a database made later under that name would replay
 * the log into itself.  A fault, not bad input: UTIL_EFAIL. */
static int keep_if_gone(rec_recorder *r, util_diag *d)
{
    struct stat st;
    bool gone = stat(r->path, &st) != 0;
    if (!gone && st.st_dev == r->dev && st.st_ino == r->ino) return UTIL_OK;
    const char *what = gone ? "was removed" : "was replaced by another file";
    char *keep = private_file(r->path, d);
    if (!keep)
        return util_diag_fail(d, "%s %s while the run was written, and the run could not be "
                                 "kept beside it",
                              r->path, what);
    sqlite3_stmt *vacuum = NULL;
    int rc = sqlite3_prepare_v2(r->db, "VACUUM INTO ?1", -1, &vacuum, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(vacuum, 1, keep, -1, SQLITE_STATIC);
        rc = sqlite3_step(vacuum);
    }
    sqlite3_finalize(vacuum);
    if (rc != SQLITE_DONE) {
        rc = util_diag_fail(d, "%s %s while the run was written, and the run could not be kept: "
                               "%s: %s",
                            r->path, what, keep, sqlite3_errmsg(r->db));
        unlink(keep);
    } else {
        rc = util_diag_fail(d, "%s %s while the run was written: the run (id %lld), with the runs "
                               "the file held, is kept in %s, a servesim database (servesim report "
                               "%s reads it)",
                            r->path, what, (long long)r->run_id, keep, keep);
    }
    free(keep);
    if (gone) { /* its log, left by name, would be replayed into a new file of that name */
        sqlite3_close(r->db);
        r->db = NULL;
        static const char *const logs[] = {"-wal", "-shm"};
        for (int i = 0; i < 2; i++) {
            char *f = util_xasprintf("%s%s", r->path, logs[i]);
            unlink(f);
            free(f);
        }
    }
    return rc;
}

/* Publishing failed (a full disk, the database replaced by another
 * program's file): the finished run's private file is kept, not removed
 * with the run, and the message says where. */
static int keep_unpublished(rec_recorder *r, int rc, util_diag *d)
{
    util_diag_add(d, "the run (id %lld) is kept in %s, a servesim database (servesim report %s "
                     "reads it)",
                  (long long)r->run_id, r->file, r->file);
    free(r->file); /* not ours to remove now: rec_abort and rec_close leave it */
    r->file = NULL;
    return rc == UTIL_EINPUT ? rc : UTIL_EFAIL;
}

int rec_finish(rec_recorder *r, const rec_run_end *end, util_diag *d)
{
    if (stop_writer(r) || flush_requests(r)) return util_diag_fail(d, "%s", r->error);
    int rc = record_end(r, end, d);
    if (rc) return rc;
    finalize(r);
    if ((rc = exec(r, "COMMIT", d))) return rc;
    r->in_txn = false;
    if (r->direct) return keep_if_gone(r, d); /* committed in place */
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
    if (rc) return keep_unpublished(r, rc, d);
    r->run_id = id;
    free(r->file); /* published: the file is gone, or is the database */
    r->file = NULL;
    return UTIL_OK;
}

int64_t rec_run_id(const rec_recorder *r)
{
    return r->run_id;
}

void rec_abort(rec_recorder *r)
{
    if (!r) return;
    stop_writer(r);
    finalize(r);
    util_idring_fini(&r->ring);
    util_idring_init(&r->ring, sizeof(sim_request_row), REORDER_MIN, REORDER_MAX);
    r->n_batch = 0;
    r->requests = 0;
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

sqlite3 *rec_release(rec_recorder *r)
{
    stop_writer(r);
    sqlite3 *db = r->db;
    finalize(r);
    r->db = NULL;
    rec_close(r);
    return db;
}

void rec_close(rec_recorder *r)
{
    if (!r) return;
    stop_writer(r);
    finalize(r);
    sqlite3_close(r->db);
    if (r->file) unlink(r->file); /* a run never finished leaves nothing behind */
    free(r->path);
    free(r->file);
    free(r->error);
    util_idring_fini(&r->ring);
    free(r);
}
