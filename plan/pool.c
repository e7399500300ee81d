/*
 * pool.c: worker processes.  Each worker reads jobs, one line of text each,
 * from a pipe, runs them and writes each result as one line to another
 * pipe; the parent hands jobs to workers and waits on their results with
 * poll(), so a slow point never holds up the others.  Each worker holds up
 * to DEPTH jobs, so that it starts its next one at once while the parent is
 * busy with its last result.  Processes, not
 * threads: a point is a whole simulation with its own SQLite connection,
 * and a worker that crashes takes nothing else with it.  A worker that dies
 * (killed, out of memory) fails the pool, as a lost MPI rank does: its jobs
 * are lost and the caller ends with what finished.  The parent ignores
 * SIGPIPE while it has workers, so that a job written to a dead worker's
 * pipe is an EPIPE it can tell, not a silent death.
 */
#include "pl.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEPTH 2

typedef struct worker {
    pid_t pid;
    FILE *jobs;      /* to the worker */
    int results;     /* from the worker */
    int held;        /* jobs handed to it and not answered */
    int64_t tags[DEPTH]; /* theirs, oldest first: answers come in order */
    char *buf;       /* a result line as it arrives */
    size_t len, cap;
    bool reaped;     /* waited for: it died */
} worker;

struct pl_pool {
    worker *w;
    pl__mpi *mpi; /* the workers are MPI ranks (mpi.c); then w is unused */
    bool failed;  /* a worker died or an MPI rank stopped answering */
    char *why;    /* which worker, and how it died (a local one's), or NULL */
    int64_t lost; /* the tag of the job it was running, or -1 */
    struct sigaction pipe_action; /* SIGPIPE's, restored when the workers stop */
    int n, busy;
    int64_t delivered;  /* results handed out */
    pl_tick_fn tick;    /* called about every TICK_S while waiting, or NULL */
    void *tick_arg;
    double last_tick;
};

#define TICK_S 0.25

void pl_pool_set_tick(pl_pool *p, pl_tick_fn fn, void *arg)
{
    p->tick = fn;
    p->tick_arg = arg;
    p->last_tick = util_wall_s();
}

bool pl_pool_failed(const pl_pool *p)
{
    return p->failed;
}

const char *pl_pool_why(const pl_pool *p, int64_t *tag)
{
    *tag = p->lost;
    return p->why;
}

/* Worker w is gone (its results pipe ended, or its jobs pipe is broken):
 * the pool has failed, and says which worker died and how. */
static void lost(pl_pool *p, worker *w)
{
    int status = 0;
    pid_t got;
    while ((got = waitpid(w->pid, &status, 0)) < 0 && errno == EINTR) continue;
    w->reaped = got == w->pid;
    if (p->failed) return;
    p->failed = true;
    p->lost = w->held ? w->tags[0] : -1;
    if (w->reaped && WIFSIGNALED(status))
        p->why = util_xasprintf("worker process %d died (killed by signal %d, %s)", (int)w->pid,
                                WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (w->reaped && WIFEXITED(status))
        p->why = util_xasprintf("worker process %d died (exit status %d)", (int)w->pid,
                                WEXITSTATUS(status));
    else
        p->why = util_xasprintf("worker process %d died", (int)w->pid);
}

int64_t pl_pool_delivered(const pl_pool *p)
{
    return p->delivered;
}

/* The caller's redraw, at most every TICK_S. */
static void maybe_tick(pl_pool *p)
{
    double now = util_wall_s();
    if (!p->tick || now - p->last_tick < TICK_S) return;
    p->last_tick = now;
    p->tick(p, p->tick_arg);
}

int pl_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The worker's life: jobs until the parent closes the pipe. */
static void serve(FILE *in, int out, pl_job_fn fn, void *ctx)
{
    /* Ctrl-C, SIGTERM and SIGHUP (sent to the whole process group by a
     * terminal or a job runner) are the parent's to handle: it stops us */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, in) > 0) {
        char *result = fn(line, ctx);
        size_t len = strlen(result), off = 0;
        result[len] = '\n'; /* the line's end replaces the terminator */
        while (off < len + 1) {
            ssize_t k = write(out, result + off, len + 1 - off);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) _exit(1);
            off += (size_t)k;
        }
        free(result);
    }
    free(line);
    _exit(0);
}

pl_pool *pl_pool_start(int n, pl_job_fn fn, void *ctx)
{
    pl_pool *p = util_xcalloc(1, sizeof *p);
    p->lost = -1;
    if (pl_mpi_size() > 1) { /* a worker rank serves inside and never returns */
        p->mpi = pl__mpi_start(fn, ctx);
        p->n = pl__mpi_workers(p->mpi);
        return p;
    }
    p->w = util_xcalloc((size_t)n, sizeof *p->w);
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &p->pipe_action);
    fflush(NULL); /* nothing buffered is written twice */
    for (int i = 0; i < n; i++) {
        int down[2], up[2];
        if (pipe(down) || pipe(up)) abort();
        pid_t pid = fork();
        if (pid < 0) abort();
        if (pid == 0) {
            sigaction(SIGPIPE, &p->pipe_action, NULL); /* the parent's gone: so are we */
            close(down[1]);
            close(up[0]);
            for (int j = 0; j < i; j++) { /* the other workers' pipes are not ours */
                fclose(p->w[j].jobs);
                close(p->w[j].results);
            }
            serve(fdopen(down[0], "r"), up[1], fn, ctx);
        }
        close(down[0]);
        close(up[1]);
        p->w[i] = (worker){.pid = pid, .jobs = fdopen(down[1], "w"), .results = up[0]};
        p->n++;
    }
    return p;
}

bool pl_pool_submit(pl_pool *p, int64_t tag, const char *job)
{
    if (p->mpi) {
        if (!pl__mpi_submit(p->mpi, tag, job)) return false;
        p->busy++;
        return true;
    }
    if (p->failed) return false;
    worker *w = NULL; /* the one holding fewest jobs */
    for (int i = 0; i < p->n; i++)
        if (p->w[i].held < DEPTH && (!w || p->w[i].held < w->held)) w = &p->w[i];
    if (!w) return false;
    if (fprintf(w->jobs, "%s\n", job) < 0 || fflush(w->jobs) != 0) { /* EPIPE: it died */
        lost(p, w);
        return false;
    }
    w->tags[w->held++] = tag;
    p->busy++;
    return true;
}

int pl_pool_busy(const pl_pool *p)
{
    return p->busy;
}

/* Reads what worker w has sent; true with a whole line at the start of
 * w->buf.  The pipe's end (or an error) is the worker's death mid-job: the
 * pool has failed. */
static bool read_some(pl_pool *p, worker *w)
{
    if (w->len && memchr(w->buf, '\n', w->len)) return true; /* came with an earlier one */
    if (w->cap - w->len < 4096) w->buf = util_xrealloc(w->buf, w->cap = 2 * w->cap + 8192);
    ssize_t k;
    while ((k = read(w->results, w->buf + w->len, w->cap - w->len - 1)) < 0 && errno == EINTR)
        continue;
    if (k <= 0) {
        lost(p, w);
        return false;
    }
    w->len += (size_t)k;
    return memchr(w->buf, '\n', w->len) != NULL;
}

/* Takes the first whole line out of w->buf. */
static char *take_line(worker *w)
{
    char *nl = memchr(w->buf, '\n', w->len);
    size_t n = (size_t)(nl - w->buf);
    char *line = util_xmalloc(n + 1);
    memcpy(line, w->buf, n);
    line[n] = '\0';
    memmove(w->buf, nl + 1, w->len - n - 1);
    w->len -= n + 1;
    return line;
}

/* Hands out w's oldest answer. */
static bool deliver(pl_pool *p, worker *w, int64_t *tag, char **result)
{
    *result = take_line(w);
    *tag = w->tags[0];
    memmove(w->tags, w->tags + 1, (size_t)(--w->held) * sizeof *w->tags);
    p->busy--;
    p->delivered++;
    return true;
}

/* The same from MPI ranks: a tick between polls, as below. */
static bool wait_mpi(pl_pool *p, const volatile sig_atomic_t *stop, int64_t *tag, char **result)
{
    while (p->busy > 0 && !(stop && *stop)) {
        maybe_tick(p);
        int got = pl__mpi_wait(p->mpi, stop, TICK_S, tag, result);
        if (got < 0) { /* a rank is gone: the caller ends as at Ctrl-C */
            p->failed = true;
            return false;
        }
        if (got) {
            p->busy--;
            p->delivered++;
            return true;
        }
    }
    return false;
}

bool pl_pool_wait(pl_pool *p, const volatile sig_atomic_t *stop, int64_t *tag, char **result)
{
    if (p->mpi) return wait_mpi(p, stop, tag, result);
    struct pollfd *fds = util_xmalloc((size_t)p->n * sizeof *fds);
    int *who = util_xmalloc((size_t)p->n * sizeof *who);
    bool got = false;
    while (p->busy > 0 && !got && !p->failed && !(stop && *stop)) {
        int m = 0;
        for (int i = 0; i < p->n && !got; i++) { /* an answer already read comes first */
            worker *w = &p->w[i];
            if (w->held && w->len && memchr(w->buf, '\n', w->len)) got = deliver(p, w, tag, result);
        }
        for (int i = 0; i < p->n && !got; i++)
            if (p->w[i].held) {
                fds[m] = (struct pollfd){.fd = p->w[i].results, .events = POLLIN};
                who[m++] = i;
            }
        maybe_tick(p);
        if (got || poll(fds, (nfds_t)m, (int)(TICK_S * 1000)) <= 0)
            continue; /* a timeout or a signal: check stop, redraw */
        for (int k = 0; k < m && !got; k++) {
            worker *w = &p->w[who[k]];
            if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) && read_some(p, w))
                got = deliver(p, w, tag, result);
        }
    }
    free(fds);
    free(who);
    return got;
}

int pl_pool_map(pl_pool *p, char *const *jobs, int n, const volatile sig_atomic_t *stop,
                char **results)
{
    int next = 0, done = 0;
    for (int i = 0; i < n; i++) results[i] = NULL;
    while (done < n) {
        while (next < n && pl_pool_submit(p, next, jobs[next])) next++;
        int64_t tag;
        char *text;
        if (!pl_pool_wait(p, stop, &tag, &text)) break;
        results[tag] = text;
        done++;
    }
    for (int i = 0; p->failed && i < n; i++) /* the jobs lost, each with why */
        if (!results[i]) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddFalseToObject(o, "ok");
            cJSON_AddStringToObject(o, "error", p->why ? p->why : "an MPI rank stopped answering");
            results[i] = cJSON_PrintUnformatted(o);
            cJSON_Delete(o);
        }
    return done;
}

void pl_pool_stop(pl_pool *p)
{
    if (!p) return;
    if (p->mpi) {
        pl__mpi_stop(p->mpi);
        free(p);
        return;
    }
    for (int i = 0; i < p->n; i++) {
        worker *w = &p->w[i];
        fclose(w->jobs); /* an idle worker reads the end and exits */
        if (w->held && !w->reaped) kill(w->pid, SIGKILL);
        close(w->results);
    }
    for (int i = 0; i < p->n; i++)
        if (!p->w[i].reaped) waitpid(p->w[i].pid, NULL, 0);
    for (int i = 0; i < p->n; i++) free(p->w[i].buf);
    sigaction(SIGPIPE, &p->pipe_action, NULL);
    free(p->why);
    free(p->w);
    free(p);
}
