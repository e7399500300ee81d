/*
 * rec_int.h: what record/'s files share and nothing else sees -- the
 * database's identity and version, the writers' patience, and the helpers
 * the recorder (recorder.c) and publishing (publish.c) both use.
 */
#ifndef REC_INT_H
#define REC_INT_H

#include "rec.h"

/* "Serv" in the database header: marks a file as a servesim database. */
#define REC__APPLICATION_ID 0x53657276
/* 2: runs.status_reason (a version-1 database gains the column when a run
 * is added to it). */
#define REC__SCHEMA_VERSION 4
/* Writers wait this long for each other's lock. */
#define REC__BUSY_TIMEOUT_MS 60000

/* The first column of a one-row query; *rc is SQLITE_OK or the error. */
int64_t rec__query_int(sqlite3 *db, const char *sql, int *rc);
/* Whether db is a servesim database of a schema this build writes. */
int rec__check_db(sqlite3 *db, const char *path, util_diag *d);
/* A version-1 database gains runs.status_reason (inside a transaction). */
int rec__upgrade(sqlite3 *db, const char *path, util_diag *d);
/* fsync(2) of a file or folder by name; 0 or -1 (errno). */
int rec__sync_path(const char *path, int flags);

#endif /* REC_INT_H */
