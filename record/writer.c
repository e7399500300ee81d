/*
 * writer.c: the recorder's SQLite writes on a thread of their own, so that
 * the engine simulates on one core while its rows are inserted on another.
 *
 * The engine's sink callbacks copy each row, tagged with its table, into a
 * batch buffer; a full batch goes to a FIFO that the writer thread drains,
 * handing every row, in the order the engine emitted them, to the same
 * functions that write synchronously.  So the connection sees exactly the
 * calls it would see without the thread, and the database is the same file,
 * byte for byte, whatever the threads' timing.  The buffers are a fixed
 * set, recycled: the engine waits only when every one is full (the writer
 * is that far behind), and memory stays the set's, not the run's.  The
 * connection is the writer's alone from the first row to rec__writer_stop;
 * a write that fails makes the next callback fail, which stops the run as a
 * synchronous failure would.
 */
#include "rec_int.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_BYTES (256 << 10)
#define BUFFERS 6 /* one filling, up to five waiting or being written: 1.5 MiB */

/* A row's tag: which table, so which size follows. */
enum { ROW_REQUEST, ROW_REPLICA, ROW_TASK, ROW_ITERATION };

static const size_t row_size[] = {sizeof(sim_request_row), sizeof(sim_replica_row),
                                  sizeof(sim_task_row), sizeof(sim_iteration_row)};

typedef struct buffer {
    unsigned char *data;
    size_t len;
} buffer;

struct rec__writer {
    rec_recorder *rec;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t to_writer, to_engine;
    buffer *free_list[BUFFERS]; /* empty buffers */
    int n_free;
    buffer *full[BUFFERS];      /* FIFO of filled ones */
    int head, n_full;
    buffer *cur;                /* the engine's, being filled */
    buffer bufs[BUFFERS];
    bool closing;
    bool failed;                /* a write failed: the recorder holds the message */
};

/* Writes one batch's rows through the synchronous path; false on failure. */
static bool write_batch(rec__writer *w, const buffer *b)
{
    for (size_t at = 0; at < b->len;) {
        unsigned char tag = b->data[at++];
        union {
            sim_request_row req;
            sim_replica_row rep;
            sim_task_row task;
            sim_iteration_row it;
        } row;
        memcpy(&row, b->data + at, row_size[tag]);
        at += row_size[tag];
        int rc = tag == ROW_REQUEST   ? rec__put_request(w->rec, &row.req)
                 : tag == ROW_REPLICA ? rec__put_replica(w->rec, &row.rep)
                 : tag == ROW_TASK    ? rec__put_task(w->rec, &row.task)
                                      : rec__put_iteration(w->rec, &row.it);
        if (rc) return false;
    }
    return true;
}

static void *writer_main(void *arg)
{
    rec__writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->n_full == 0 && !w->closing) pthread_cond_wait(&w->to_writer, &w->mu);
        if (w->n_full == 0) break; /* closing, and everything written */
        buffer *b = w->full[w->head];
        w->head = (w->head + 1) % BUFFERS;
        w->n_full--;
        bool skip = w->failed;
        pthread_mutex_unlock(&w->mu);
        bool ok = skip || write_batch(w, b);
        pthread_mutex_lock(&w->mu);
        if (!ok) w->failed = true;
        b->len = 0;
        w->free_list[w->n_free++] = b;
        pthread_cond_signal(&w->to_engine);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int rec__writer_start(rec_recorder *rec, rec__writer **out)
{
    rec__writer *w = util_xcalloc(1, sizeof *w);
    w->rec = rec;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->to_writer, NULL);
    pthread_cond_init(&w->to_engine, NULL);
    for (int i = 0; i < BUFFERS; i++) {
        w->bufs[i].data = util_xmalloc(BATCH_BYTES);
        w->free_list[w->n_free++] = &w->bufs[i];
    }
    w->cur = w->free_list[--w->n_free];
    /* Signals are the engine's thread's to take (Ctrl-C sets its stop flag). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        for (int i = 0; i < BUFFERS; i++) free(w->bufs[i].data);
        free(w);
        *out = NULL;
        return -1;
    }
    *out = w;
    return 0;
}

/* Hands the engine's buffer to the writer and takes an empty one. */
static bool submit(rec__writer *w)
{
    pthread_mutex_lock(&w->mu);
    w->full[(w->head + w->n_full) % BUFFERS] = w->cur;
    w->n_full++;
    pthread_cond_signal(&w->to_writer);
    while (w->n_free == 0) pthread_cond_wait(&w->to_engine, &w->mu);
    w->cur = w->free_list[--w->n_free];
    bool failed = w->failed;
    pthread_mutex_unlock(&w->mu);
    return !failed;
}

static int put(rec__writer *w, int tag, const void *row)
{
    size_t need = 1 + row_size[tag];
    if (w->cur->len + need > BATCH_BYTES && !submit(w)) return -1;
    unsigned char *p = w->cur->data + w->cur->len;
    p[0] = (unsigned char)tag;
    memcpy(p + 1, row, row_size[tag]);
    w->cur->len += need;
    return 0;
}

int rec__writer_stop(rec__writer *w)
{
    if (!w) return 0;
    pthread_mutex_lock(&w->mu);
    if (w->cur->len) {
        w->full[(w->head + w->n_full) % BUFFERS] = w->cur;
        w->n_full++;
        w->cur = NULL;
    }
    w->closing = true;
    pthread_cond_signal(&w->to_writer);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    bool failed = w->failed;
    for (int i = 0; i < BUFFERS; i++) free(w->bufs[i].data);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->to_writer);
    pthread_cond_destroy(&w->to_engine);
    free(w);
    return failed ? -1 : 0;
}

int rec__writer_put_request(void *ctx, const sim_request_row *row)
{
    return put(rec__recorder_writer(ctx), ROW_REQUEST, row);
}

int rec__writer_put_replica(void *ctx, const sim_replica_row *row)
{
    return put(rec__recorder_writer(ctx), ROW_REPLICA, row);
}

int rec__writer_put_task(void *ctx, const sim_task_row *row)
{
    return put(rec__recorder_writer(ctx), ROW_TASK, row);
}

int rec__writer_put_iteration(void *ctx, const sim_iteration_row *row)
{
    return put(rec__recorder_writer(ctx), ROW_ITERATION, row);
}
