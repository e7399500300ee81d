/*
 * publish.c: which files may take runs, and publishing a finished run's
 * file into its database -- by link(2) when the database is new, else by
 * one transaction copying its rows in (see recorder.c's opening comment and
 * docs/database.md).  Also the helpers recorder.c shares (rec_int.h).
 */
#include "rec_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int64_t rec__query_int(sqlite3 *db, const char *sql, int *rc)
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
int rec__check_db(sqlite3 *db, const char *path, util_diag *d)
{
    int rc;
    int64_t app = rec__query_int(db, "PRAGMA application_id", &rc);
    if (rc == SQLITE_NOTADB)
        return util_diag_add(d, "%s: not a SQLite database (left untouched)", path);
    if (rc != SQLITE_OK)
        return util_diag_fail(d, "%s: cannot read: %s", path, sqlite3_errmsg(db));
    int64_t version = rec__query_int(db, "PRAGMA user_version", &rc);
    if (app != REC__APPLICATION_ID)
        return util_diag_add(d, "%s: exists and is not a servesim database (left untouched); "
                                "write to a new file",
                             path);
    if (version > REC__SCHEMA_VERSION)
        return util_diag_add(d, "%s: written by a newer servesim (schema %lld, this one writes %d)",
                             path, (long long)version, REC__SCHEMA_VERSION);
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
        sqlite3_busy_timeout(db, REC__BUSY_TIMEOUT_MS);
        rc = rec__check_db(db, path, d);
    }
    sqlite3_close(db);
    return rc;
}

/* fsync(2) of a file or folder by name. */
int rec__sync_path(const char *path, int flags)
{
    int fd = open(path, flags);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* ---- publishing a finished file into the database ---- */

/* The file becomes the database: made durable first (it was written
 * without fsyncs), then linked, which fails with EEXIST instead of
 * replacing a database created meanwhile.  Returns 1 when path exists. */
static int link_new(const char *file, const char *path, util_diag *d)
{
    if (rec__sync_path(file, O_RDONLY) != 0)
        return util_diag_fail(d, "%s: cannot sync: %s", file, strerror(errno));
    if (link(file, path) != 0) {
        if (errno == EEXIST) return 1;
        return util_diag_fail(d, "%s: cannot create: %s", path, strerror(errno));
    }
    char *dir = util_dirname(path);
    rec__sync_path(dir, O_RDONLY | O_DIRECTORY); /* the new name, durable */
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

/* An older database gains the columns added since (inside the
 * transaction): version 2 runs.status_reason, version 3 the prefix cache's
 * requests.cached_tokens and replicas.evicted_blocks, version 4 the
 * precision's replicas.weight_bytes and replicas.kv_bytes_per_token, version
 * 5 a replica's life: replicas.created_s, ready_s, retired_s and end_reason
 * (old rows: made and ready at 0, retired unknown, there at the end), 6 the
 * step pipeline's stamps, 7 the table of measured runs, 8 speculative
 * decoding's replicas.spec_* totals, 9 the tokens an iteration's decoders
 * streamed and their acceptances (old rows: NULL, unknown), 10 runs.requests (NULL in
 * old rows: their reads are not checked), 11 a request's class's priority,
 * deadline_s and tenant (NULL in old rows: not recorded), 14 the KV
 * offload tiers' replicas.cpu_* and disk_* totals (old rows: no tier), 15
 * the tiers' requests.cpu_hit_tokens and disk_hit_tokens and
 * iterations.cpu_tier_tokens and disk_tier_tokens (NULL in old rows: not
 * recorded). */
int rec__upgrade(sqlite3 *db, const char *path, util_diag *d)
{
    static const char *const added[] = {
        [2] = "ALTER TABLE main.runs ADD COLUMN status_reason TEXT;",
        [3] = "ALTER TABLE main.requests ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0; "
              "ALTER TABLE main.replicas ADD COLUMN evicted_blocks INTEGER NOT NULL DEFAULT 0;",
        [4] = "ALTER TABLE main.replicas ADD COLUMN weight_bytes REAL NOT NULL DEFAULT 0; "
              "ALTER TABLE main.replicas ADD COLUMN kv_bytes_per_token REAL NOT NULL DEFAULT 0;",
        [5] = "ALTER TABLE main.replicas ADD COLUMN created_s REAL NOT NULL DEFAULT 0; "
              "ALTER TABLE main.replicas ADD COLUMN ready_s REAL DEFAULT 0; "
              "ALTER TABLE main.replicas ADD COLUMN retired_s REAL; "
              "ALTER TABLE main.replicas ADD COLUMN end_reason TEXT NOT NULL DEFAULT 'end_of_run';",
        [6] = "ALTER TABLE main.replicas ADD COLUMN output_s REAL; "
              "ALTER TABLE main.iterations ADD COLUMN scheduled_s REAL; "
              "ALTER TABLE main.iterations ADD COLUMN gpu_start_s REAL; "
              "ALTER TABLE main.iterations ADD COLUMN gpu_end_s REAL; "
              "ALTER TABLE main.iterations ADD COLUMN client_s REAL; "
              "DROP VIEW main.request_metrics; " REC__REQUEST_METRICS,
        [7] = REC__MEASUREMENTS,
        [8] = "ALTER TABLE main.replicas ADD COLUMN spec_k INTEGER NOT NULL DEFAULT 0; "
              "ALTER TABLE main.replicas ADD COLUMN spec_steps INTEGER NOT NULL DEFAULT 0; "
              "ALTER TABLE main.replicas ADD COLUMN spec_off_steps INTEGER NOT NULL DEFAULT 0; "
              "ALTER TABLE main.replicas ADD COLUMN spec_drafts INTEGER NOT NULL DEFAULT 0; "
              "ALTER TABLE main.replicas ADD COLUMN spec_draft_tokens INTEGER NOT NULL DEFAULT 0; "
              "ALTER TABLE main.replicas ADD COLUMN spec_accepted INTEGER NOT NULL DEFAULT 0; "
              "ALTER TABLE main.replicas ADD COLUMN spec_drafting_s REAL NOT NULL DEFAULT 0; "
              "ALTER TABLE main.replicas ADD COLUMN spec_verify_s REAL NOT NULL DEFAULT 0;",
        [9] = "ALTER TABLE main.iterations ADD COLUMN decode_tokens INTEGER; "
              "ALTER TABLE main.iterations ADD COLUMN decode_accepted TEXT;",
        [10] = "ALTER TABLE main.runs ADD COLUMN requests INTEGER;",
        [11] = "ALTER TABLE main.requests ADD COLUMN priority INTEGER; "
               "ALTER TABLE main.requests ADD COLUMN deadline_s REAL; "
               "ALTER TABLE main.requests ADD COLUMN tenant TEXT;",
        /* LoRA adapters (sim/lora.c): one statement, kept apart */
        [12] = "ALTER TABLE main.replicas ADD COLUMN lora_slots INTEGER NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN lora_lookups INTEGER NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN lora_gpu_hits INTEGER NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN lora_cpu_hits INTEGER NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN lora_load_s REAL NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN lora_kernel_s REAL NOT NULL DEFAULT 0;",
        [13] = "ALTER TABLE main.requests ADD COLUMN reason TEXT; "
               "ALTER TABLE main.requests ADD COLUMN retry_of INTEGER; "
               "ALTER TABLE main.requests ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;",
        /* KV offload's tiers (cluster.kv_offload) */
        [14] = "ALTER TABLE main.replicas ADD COLUMN cpu_tier_bytes REAL NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN cpu_lookup_tokens INTEGER NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN cpu_hit_tokens INTEGER NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN cpu_stored_bytes REAL NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN cpu_loaded_bytes REAL NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN disk_tier_bytes REAL NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN disk_lookup_tokens INTEGER NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN disk_hit_tokens INTEGER NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN disk_stored_bytes REAL NOT NULL DEFAULT 0; "
               "ALTER TABLE main.replicas ADD COLUMN disk_loaded_bytes REAL NOT NULL DEFAULT 0;",
        /* ... each tier's share of a request's prompt, and what it held at a step */
        [15] = "ALTER TABLE main.requests ADD COLUMN cpu_hit_tokens INTEGER; "
               "ALTER TABLE main.requests ADD COLUMN disk_hit_tokens INTEGER; "
               "ALTER TABLE main.iterations ADD COLUMN cpu_tier_tokens INTEGER; "
               "ALTER TABLE main.iterations ADD COLUMN disk_tier_tokens INTEGER;",
        /* a fleet's day: when a replica began to drain, and requests a failure restarted */
        [16] = "ALTER TABLE main.replicas ADD COLUMN drain_s REAL; "
               "ALTER TABLE main.requests ADD COLUMN restarts INTEGER NOT NULL DEFAULT 0; "
               "ALTER TABLE main.requests ADD COLUMN restarted_from INTEGER;",
    };
    int rc;
    int64_t version = rec__query_int(db, "PRAGMA main.user_version", &rc);
    if (rc != SQLITE_OK) return util_diag_fail(d, "%s: %s", path, sqlite3_errmsg(db));
    for (int64_t v = version < 1 ? 2 : version + 1; !rc && v <= REC__SCHEMA_VERSION; v++) {
        char *sql = util_xasprintf("%s PRAGMA main.user_version = %lld;", added[v], (long long)v);
        rc = exec_db(db, path, sql, d);
        free(sql);
    }
    return rc;
}

/* The file's runs take ids above every id on both sides when any of theirs
 * is taken in main (the file is ours: renumbering it changes nothing else). */
static int renumber(sqlite3 *db, const char *path, util_diag *d)
{
    int rc;
    int64_t taken = rec__query_int(db, "SELECT count(*) FROM main.runs WHERE id IN "
                                  "(SELECT id FROM point.runs)", &rc);
    if (rc != SQLITE_OK) return util_diag_fail(d, "%s: %s", path, sqlite3_errmsg(db));
    if (!taken) return UTIL_OK;
    int64_t shift = rec__query_int(db, "SELECT max((SELECT max(id) FROM main.runs), "
                                  "(SELECT max(id) FROM point.runs)) - "
                                  "(SELECT min(id) FROM point.runs) + 1", &rc);
    static const char *const tables[] = {"requests", "replicas", "tasks", "iterations",
                                         "measurements", NULL};
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
static const char *const merged_tables[] = {"runs", "measurements", "requests", "replicas",
                                            "tasks", "iterations", NULL};

/* Copies the attached point's runs into main, in one transaction. */
static int copy_runs(sqlite3 *db, const char *path, int64_t *first_id, util_diag *d)
{
    int rc = exec_db(db, path, "BEGIN IMMEDIATE", d);
    if (rc) return rc;
    rc = rec__check_db(db, path, d);
    if (!rc) rc = rec__upgrade(db, path, d);
    if (!rc) rc = renumber(db, path, d);
    for (int i = 0; !rc && merged_tables[i]; i++) {
        /* the same schema on both sides: whole rows copied as they are */
        char *sql = util_xasprintf("INSERT INTO main.%s SELECT * FROM point.%s", merged_tables[i],
                                   merged_tables[i]);
        rc = exec_db(db, path, sql, d);
        free(sql);
    }
    int qrc;
    if (!rc && first_id) *first_id = rec__query_int(db, "SELECT min(id) FROM point.runs", &qrc);
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
    sqlite3_busy_timeout(db, REC__BUSY_TIMEOUT_MS);
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
            *first_id = rec__query_int(db, "SELECT min(id) FROM runs", &rc);
        sqlite3_close(db);
    }
    int rc = link_new(file, path, d);
    return rc == 1 ? merge_into(file, path, first_id, d) : rc;
}

