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
#define REC__SCHEMA_VERSION 5
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

/* recorder.c: the synchronous sink, a rec_recorder as ctx (each returns
 * -1 with the recorder's error set when a write fails). */
int rec__put_request(void *ctx, const sim_request_row *row);
int rec__put_replica(void *ctx, const sim_replica_row *row);
int rec__put_task(void *ctx, const sim_task_row *row);
int rec__put_iteration(void *ctx, const sim_iteration_row *row);

/* writer.c: the same rows written by a thread of their own (rec_start_writer). */
typedef struct rec__writer rec__writer;
rec__writer *rec__recorder_writer(void *ctx);
/* 0, or -1 when the thread could not be started. */
int rec__writer_start(rec_recorder *rec, rec__writer **out);
/* Writes what is left, ends the thread and frees w (NULL: nothing);
 * -1 when some write failed. */
int rec__writer_stop(rec__writer *w);
int rec__writer_put_request(void *ctx, const sim_request_row *row);
int rec__writer_put_replica(void *ctx, const sim_replica_row *row);
int rec__writer_put_task(void *ctx, const sim_task_row *row);
int rec__writer_put_iteration(void *ctx, const sim_iteration_row *row);

#endif /* REC_INT_H */
