/*
 * rec_int.h: what record/'s files share and nothing else sees -- the
 * database's identity and version, the writers' patience, and the helpers
 * the recorder (recorder.c) and publishing (publish.c) both use.
 */
#ifndef REC_INT_H
#define REC_INT_H

#include "rec.h"
#include "schema.h"

/* "Serv" in the database header: marks a file as a servesim database. */
#define REC__APPLICATION_ID 0x53657276
/* 2: runs.status_reason (a version-1 database gains the column when a run
 * is added to it); ... 6: the engine core's clock (requests) and the step
 * pipeline (iterations), 7: measured runs (`measurements`), 8 speculative
 * decoding, 9 the tokens an iteration's decoders
 * streamed and their acceptances, 10 runs.requests (the rows a run recorded, against which a
 * reader checks what it reads), 11 requests.priority, deadline_s and tenant, 12 LoRA
 * adapters' totals on replicas, 13 retries, 14 the KV offload tiers' totals on
 * replicas, 15 what each tier served a request and held at each iteration;
 * rec__upgrade says each version's columns. */
#define REC__SCHEMA_VERSION 16
/* The table of measured runs (schema.h), as both a new database and an
 * upgraded one create it: the text is stored in the file. */
#define REC__MEASUREMENTS "CREATE TABLE measurements (" REC_MEASUREMENTS(REC_DDL, REC_DDL_LAST) ");"

/* The per-request metrics, defined once: the client's clock (sent to first
 * streamed token, to the last) and the engine core's (queued in the engine
 * to its first and last token out), docs/database.md.  A token leaves the
 * engine its replica's host.output_s (replicas.output_s) before the client
 * sees it: the engine's clock is derived, not stored, so that a request row
 * costs no more to write. */
#define REC__REQUEST_METRICS                                                                       \
    "CREATE VIEW request_metrics AS SELECT"                                                        \
    "  run_id, id, replica, class, task_id, call_index, slow, status, arrival_s,"                  \
    "  prompt_tokens, output_tokens,"                                                              \
    "  first_token_s - arrival_s AS ttft_s,"                                                       \
    "  CASE WHEN output_tokens >= 2"                                                               \
    "       THEN (finish_s - first_token_s) / (output_tokens - 1) END AS tpot_s,"                  \
    "  (finish_s - arrival_s) / output_tokens AS tpot_incl_ttft_s,"                                \
    "  finish_s - arrival_s AS e2e_s,"                                                             \
    "  first_scheduled_s - enqueue_s AS queue_s,"                                                  \
    "  first_token_s - enqueue_s - (SELECT output_s FROM replicas p"                               \
    "    WHERE p.run_id = requests.run_id AND p.replica = requests.replica) AS engine_ttft_s,"     \
    "  finish_s - enqueue_s - (SELECT output_s FROM replicas p"                                    \
    "    WHERE p.run_id = requests.run_id"                                                         \
    "    AND p.replica = coalesce(requests.decode_replica, requests.replica)) AS engine_e2e_s"     \
    "  FROM requests;"
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
