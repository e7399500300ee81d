/*
 * query.c: opening a servesim database read-only, and the helpers that run
 * the report's queries with the section's parameters bound.
 */
#include "an_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define APPLICATION_ID 0x53657276

int an__db_fail(sqlite3 *db, util_diag *d, const char *what)
{
    return util_diag_fail(d, "%s: %s", what, sqlite3_errmsg(db));
}

/* Appends text to buf (n used of cap) after a "; ", its lines joined so. */
static size_t append_joined(char *buf, size_t n, size_t cap, const char *text)
{
    if (n && n + 3 < cap) buf[n++] = ';', buf[n++] = ' ';
    for (const char *c = text; *c && n + 3 < cap; c++) {
        if (*c == '\n') buf[n++] = ';', buf[n++] = ' ';
        else buf[n++] = *c;
    }
    buf[n] = '\0';
    return n;
}

int an__damaged(sqlite3 *db, const char *why, util_diag *d)
{
    static const char header[] = "*** in database main ***\n";
    const char *file = sqlite3_db_filename(db, "main");
    char found[600] = "";
    size_t n = 0;
    sqlite3_stmt *st = NULL;
    /* the first few problems (a file with random bytes on every page has
     * thousands), as rows or as lines of one */
    if (sqlite3_prepare_v2(db, "PRAGMA quick_check(4)", -1, &st, NULL) == SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *t = (const char *)sqlite3_column_text(st, 0);
            if (t && !strncmp(t, header, sizeof header - 1)) t += sizeof header - 1;
            n = append_joined(found, n, sizeof found, t ? t : "");
        }
    sqlite3_finalize(st);
    if (!*found) snprintf(found, sizeof found, "could not run: %s", sqlite3_errmsg(db));
    return util_diag_add(d, "%s: the file is damaged: %s (PRAGMA quick_check: %s)",
                         file && *file ? file : "the database", why, found);
}

sqlite3_stmt *an__prepare(const an__query *q, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_int64(st, 1, q->run);
    sqlite3_bind_double(st, 2, q->warmup);
    if (q->cls) sqlite3_bind_text(st, 3, q->cls, -1, SQLITE_STATIC);
    if (q->replica >= 0) sqlite3_bind_int(st, 9, q->replica);
    return st;
}

int an__schema(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int version = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
                          sqlite3_step(st) == SQLITE_ROW
                      ? sqlite3_column_int(st, 0)
                      : 0;
    sqlite3_finalize(st);
    return version;
}

double an__column_num(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

int an__row(const an__query *q, const char *sql, double *out, int n, util_diag *d)
{
    for (int i = 0; i < n; i++) out[i] = NAN;
    sqlite3_stmt *st = an__prepare(q, sql);
    if (!st) return an__db_fail(q->db, d, "cannot query");
    int rc = sqlite3_step(st);
    for (int i = 0; i < n; i++) out[i] = rc == SQLITE_ROW ? an__column_num(st, i) : NAN;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? UTIL_OK : an__db_fail(q->db, d, "cannot query");
}

int an__column(const an__query *q, const char *sql, double **out, size_t *n, util_diag *d)
{
    sqlite3_stmt *st = an__prepare(q, sql);
    *out = NULL;
    *n = 0;
    if (!st) return an__db_fail(q->db, d, "cannot query");
    size_t cap = 1024;
    double *v = util_xmalloc(cap * sizeof *v);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) v = util_xrealloc(v, (cap *= 2) * sizeof *v);
        v[(*n)++] = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(v);
        *n = 0;
        return an__db_fail(q->db, d, "cannot read requests");
    }
    *out = v;
    return UTIL_OK;
}

const char *an__counted(int schema)
{
    return schema >= AN__SCHEMA_RETRY ? " AND retried = 0" : "";
}

int an__metric_of(const an__query *q, const char *view, const char *filter, const char *expr,
                  an_stats *out, util_diag *d)
{
    bool tasks = strcmp(view, "request_metrics") != 0; /* tasks have no replica */
    char *sql = util_xasprintf("SELECT %s FROM %s WHERE run_id = ?1 AND %s%s AND %s IS NOT NULL",
                               expr, view, filter, tasks ? AN__IN_CLASS : AN__IN_GROUP, expr);
    double *v;
    size_t n;
    int rc = an__column(q, sql, &v, &n, d);
    free(sql);
    if (!rc) an_stats_compute(v, n, out);
    free(v);
    return rc;
}

double an__ratio(double a, double b)
{
    return b > 0 ? a / b : NAN;
}

/* Whether path is a WAL database (its header's read and write versions, 2)
 * without its -shm file: SQLite reads one only if it may create that file
 * beside it (docs: wal.html, "Read-Only Databases"), or if told the file is
 * immutable. */
static bool wal_without_shm(const char *path)
{
    unsigned char v[2] = {0, 0};
    FILE *f = fopen(path, "rb");
    bool wal = f && fseek(f, 18, SEEK_SET) == 0 && fread(v, 1, 2, f) == 2 && v[0] == 2 && v[1] == 2;
    if (f) fclose(f);
    char *shm = util_xasprintf("%s-shm", path);
    struct stat st;
    bool no_shm = stat(shm, &st) != 0;
    free(shm);
    return wal && no_shm;
}

/* Bytes in path's -wal file (0: none). */
static long long wal_bytes(const char *path)
{
    char *wal = util_xasprintf("%s-wal", path);
    struct stat st;
    long long n = stat(wal, &st) == 0 ? (long long)st.st_size : 0;
    free(wal);
    return n;
}

/* path as a SQLite URI with immutable=1: read without locks or the -shm
 * file, as a file nobody changes (caller frees). */
static char *immutable_uri(const char *path)
{
    size_t n = strlen(path);
    char *uri = util_xmalloc(3 * n + 32), *o = uri;
    o += sprintf(o, "file:%s", path[0] == '/' ? "//" : "");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        o += (*p <= ' ' || *p >= 0x7f || strchr("%?#", *p)) ? sprintf(o, "%%%02X", *p)
                                                           : sprintf(o, "%c", *p);
    strcpy(o, "?immutable=1");
    return uri;
}

/* The database's application id (-1: unreadable), with SQLite's error in
 * *rc. */
static int64_t application_id(sqlite3 *db, int *rc)
{
    sqlite3_stmt *q = NULL;
    int prc = sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &q, NULL);
    int64_t app = (prc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) ? sqlite3_column_int64(q, 0)
                                                                      : -1;
    *rc = sqlite3_errcode(db);
    sqlite3_finalize(q);
    return app;
}

/* A WAL database the connection could not read for want of its -shm file
 * (a folder this user may not write): read again as immutable, or, when
 * its log holds pages that only the -shm file could place, say so. */
static int reopen_immutable(const char *path, sqlite3 **db, int *rc, int64_t *app, util_diag *d)
{
    if ((*rc & 0xff) != SQLITE_READONLY && (*rc & 0xff) != SQLITE_CANTOPEN) return UTIL_OK;
    if (!wal_without_shm(path)) return UTIL_OK;
    if (wal_bytes(path) > 32) /* a log with frames in it: committed runs may be there alone */
        return util_diag_add(d, "%s: a WAL database whose log (%s-wal) holds pages cannot be read "
                                "without its -shm file, which this user may not create in the "
                                "folder: read it as a user who may write the folder, or copy "
                                "the file and its -wal to a folder you may write",
                             path, path);
    sqlite3_close(*db);
    *db = NULL;
    char *uri = immutable_uri(path);
    int orc = sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                              NULL);
    free(uri);
    if (orc != SQLITE_OK)
        return util_diag_add(d, "%s: cannot open: %s", path, *db ? sqlite3_errmsg(*db) : "?");
    *app = application_id(*db, rc);
    return UTIL_OK;
}

int an_open(const char *path, sqlite3 **out, util_diag *d)
{
    struct stat st;
    if (stat(path, &st) != 0) return util_diag_add(d, "%s: no such file", path);
    if (S_ISDIR(st.st_mode)) return util_diag_add(d, "%s: is a folder, not a file", path);
    if (!S_ISREG(st.st_mode)) /* a FIFO's read would wait for a writer for ever */
        return util_diag_add(d, "%s: not a regular file", path);
    sqlite3 *db = NULL;
    /* Read-write where the file allows it, though nothing here writes: the
     * last connection to close a WAL database removes its -wal and -shm
     * files only if it may write.  A file the user cannot write is read
     * read-only; a WAL database in a folder the user cannot write, whose
     * -shm file is gone, as immutable (reopen_immutable). */
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        db = NULL;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK) {
            util_diag_add(d, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "?");
            sqlite3_close(db);
            return UTIL_EINPUT;
        }
    }
    /* a writer publishing a run holds the lock for a moment: wait for it */
    sqlite3_busy_timeout(db, 10000);
    int rc;
    int64_t app = application_id(db, &rc);
    if (app < 0 && reopen_immutable(path, &db, &rc, &app, d)) {
        sqlite3_close(db);
        return UTIL_EINPUT;
    }
    if (app != APPLICATION_ID) {
        if (rc == SQLITE_NOTADB)
            util_diag_add(d, "%s: not a SQLite database", path);
        else if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
            util_diag_add(d, "%s: cannot read: %s", path, sqlite3_errmsg(db));
        else
            util_diag_add(d, "%s: not a servesim database", path);
        sqlite3_close(db);
        return UTIL_EINPUT;
    }
    *out = db;
    return UTIL_OK;
}

int an_last_run(sqlite3 *db, const char *origin, int64_t *run_id, util_diag *d)
{
    an__query q = {db, 0, 0, NULL, -1, an__schema(db), 0};
    double id = NAN;
    if (an__row(&q, "SELECT max(id) FROM runs", &id, 1, d)) return UTIL_EFAIL;
    if (isnan(id)) return util_diag_add(d, "%s: holds no runs", origin);
    *run_id = (int64_t)id;
    return UTIL_OK;
}
