/*
 * jobs.c: the computations waiting and running, and who gets the next
 * slot.  A slot freed goes to the oldest waiting computation of its kind
 * whose client runs none of that kind, so that one client's many requests
 * take turns with everyone else's instead of going first; a client's
 * number of computations, and everyone's waiting, are bounded, so that no
 * client can queue more work than a few time limits' worth (the bounds are
 * in ex_int.h).  A running job ends when its child closes its pipe, when
 * its time limit passes (it is killed), or when its request goes away; a
 * waiting one when it has waited too long.  All of it runs in the server's
 * thread, between two turns of its loop: nothing here locks.
 */
#include "ex_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ex_job {
    ex_job *next; /* in q->waiting or q->running, oldest first */
    ex_task task;
    uint32_t client;
    ex_done_fn done;
    void *owner;
    double deadline; /* waiting: when it gives up; running: its time limit */
    bool running;
    ex_child child;
};

struct ex_jobs {
    double time_limit_s, memory_limit_mb;
    ex_job *waiting, *running;
};

ex_jobs *ex_jobs_new(double time_limit_s, double memory_limit_mb)
{
    ex_jobs *q = util_xcalloc(1, sizeof *q);
    q->time_limit_s = time_limit_s;
    q->memory_limit_mb = memory_limit_mb;
    return q;
}

static void job_free(ex_job *j)
{
    if (j->running) ex_child_kill(&j->child);
    if (j->task.free_arg) j->task.free_arg(j->task.arg);
    free(j);
}

void ex_jobs_free(ex_jobs *q)
{
    if (!q) return;
    for (ex_job *lists[] = {q->waiting, q->running}, **l = lists; l < lists + 2; l++)
        for (ex_job *j = *l, *next; j; j = next) {
            next = j->next;
            job_free(j);
        }
    free(q);
}

/* Takes j out of the list it is in. */
static void unlink_job(ex_jobs *q, ex_job *j)
{
    for (ex_job **p = j->running ? &q->running : &q->waiting; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            return;
        }
}

static void append(ex_job **list, ex_job *j)
{
    while (*list)
        list = &(*list)->next;
    j->next = NULL;
    *list = j;
}

/* How many jobs of list are the client's (of the kind, if kind >= 0). */
static int count(const ex_job *list, uint32_t client, int kind)
{
    int n = 0;
    for (const ex_job *j = list; j; j = j->next)
        n += j->client == client && (kind < 0 || j->task.light == kind);
    return n;
}

static int running_of_kind(const ex_jobs *q, bool light)
{
    int n = 0;
    for (const ex_job *j = q->running; j; j = j->next)
        n += j->task.light == light;
    return n;
}

/* Whether j may start now: a slot of its kind is free and its client runs
 * none of its kind. */
static bool may_start(const ex_jobs *q, const ex_job *j)
{
    int slots = j->task.light ? EX_LIGHT_SLOTS : EX_HEAVY_SLOTS;
    return running_of_kind(q, j->task.light) < slots &&
           !count(q->running, j->client, j->task.light);
}

/* The job over: out of its list, its child reaped or killed by the caller;
 * its owner gets the reply and the job is freed. */
static void finish(ex_jobs *q, ex_job *j, ex_reply r)
{
    unlink_job(q, j);
    j->running = false;
    j->done(j->owner, &r);
    job_free(j);
}

static ex_reply busy(const ex_jobs *q, const char *why)
{
    ex_reply r = ex_error(503, NULL, "busy: %s; try again in a moment", why);
    double s = ceil(q->time_limit_s); /* about one computation's time */
    r.retry_after_s = s < 1 ? 1 : s > 60 ? 60 : (int)s;
    return r;
}

/* Forks the waiting j's child and moves it to the running; false, with the
 * 503 in *err and j still waiting, when it cannot. */
static bool start(ex_jobs *q, ex_job *j, double now, ex_reply *err)
{
    if (!ex_child_start(&j->child, j->task.fn, j->task.arg, q->time_limit_s, q->memory_limit_mb,
                        err))
        return false;
    unlink_job(q, j);
    j->running = true;
    j->deadline = now + q->time_limit_s;
    append(&q->running, j);
    return true;
}

/* Starts every waiting job that may, oldest first. */
static void start_waiting(ex_jobs *q, double now)
{
    for (ex_job *j = q->waiting, *next; j; j = next) {
        next = j->next;
        ex_reply err;
        if (may_start(q, j) && !start(q, j, now, &err)) finish(q, j, err);
    }
}

/* Why the client may not queue one more, or NULL. */
static const char *full(const ex_jobs *q, uint32_t client)
{
    if (count(q->waiting, client, -1) + count(q->running, client, -1) >= EX_CLIENT_JOBS)
        return "this address has as many computations waiting or running as it may";
    int waiting = 0;
    for (const ex_job *j = q->waiting; j; j = j->next)
        waiting++;
    return waiting >= EX_WAITING ? "too many computations are waiting" : NULL;
}

ex_job *ex_jobs_submit(ex_jobs *q, const ex_task *t, uint32_t client, double now, ex_done_fn done,
                       void *owner, ex_reply *refused)
{
    const char *why = full(q, client);
    if (why) {
        if (t->free_arg) t->free_arg(t->arg);
        *refused = busy(q, why);
        return NULL;
    }
    ex_job *j = util_xcalloc(1, sizeof *j);
    *j = (ex_job){.task = *t,
                  .client = client,
                  .done = done,
                  .owner = owner,
                  .deadline = now + EX_WAIT_LIMITS * q->time_limit_s};
    append(&q->waiting, j);
    if (may_start(q, j) && !start(q, j, now, refused)) {
        unlink_job(q, j);
        job_free(j);
        return NULL;
    }
    return j;
}

void ex_jobs_drop(ex_jobs *q, ex_job *j)
{
    unlink_job(q, j);
    job_free(j);
    start_waiting(q, util_wall_s());
}

void ex_jobs_fdset(const ex_jobs *q, fd_set *set, int *max_fd)
{
    for (const ex_job *j = q->running; j; j = j->next) {
        FD_SET(j->child.fd, set);
        if (j->child.fd > *max_fd) *max_fd = j->child.fd;
    }
}

double ex_jobs_next(const ex_jobs *q)
{
    double next = INFINITY;
    for (const ex_job *lists[] = {q->waiting, q->running}, **l = lists; l < lists + 2; l++)
        for (const ex_job *j = *l; j; j = j->next)
            if (j->deadline < next) next = j->deadline;
    return next;
}

/* A running job: past its time (killed, 503), done (its reply), or neither. */
static void look_at_running(ex_jobs *q, ex_job *j, const fd_set *readable, double now)
{
    if (now >= j->deadline) {
        ex_child_kill(&j->child);
        finish(q, j,
               ex_error(503, NULL, "the computation took longer than its limit of %g s",
                        q->time_limit_s));
    } else if ((!readable || FD_ISSET(j->child.fd, readable)) && ex_child_read(&j->child)) {
        finish(q, j, ex_child_reply(&j->child));
    }
}

void ex_jobs_run(ex_jobs *q, const fd_set *readable, double now)
{
    for (ex_job *j = q->running, *next; j; j = next) {
        next = j->next;
        look_at_running(q, j, readable, now);
    }
    for (ex_job *j = q->waiting, *next; j; j = next) {
        next = j->next;
        if (now >= j->deadline)
            finish(q, j, busy(q, "the computations ahead of this one took too long"));
    }
    start_waiting(q, now);
}

void ex_jobs_end_all(ex_jobs *q, const char *message)
{
    while (q->running || q->waiting) {
        ex_job *j = q->running ? q->running : q->waiting;
        if (j->running) ex_child_kill(&j->child);
        finish(q, j, ex_error(503, NULL, "%s", message));
    }
}
