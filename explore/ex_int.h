/*
 * ex_int.h: what the explorer's files share -- the lessons' controls, the
 * sandbox computations run in and the queue they wait in.
 */
#ifndef EX_INT_H
#define EX_INT_H

#include <signal.h>
#include <sys/select.h>
#include <sys/types.h>

#include "ex.h"

/* ---- controls (controls.c) ---- */

/* How a control's value becomes a --set: the value itself, or the lesson's
 * shipped grid up to it (a prefix: the sweep to there) or from it (a
 * suffix).  Every value is one of the control's own, so no request asks
 * more of a lesson than its shipped size. */
typedef enum ex_set_kind { EX_VALUE, EX_PREFIX, EX_SUFFIX } ex_set_kind;

/* A control as the page gets it: what the explorer declares of it (name,
 * label, unit, path, how it sets) with the numbers its lesson's file holds
 * at path (a sweep's grid, a value's default), read when the server
 * starts.  Owned by the array of lessons it is in. */
typedef struct ex_control {
    const char *name;  /* the query key: "users" */
    const char *label; /* "most users" */
    const char *unit;  /* "users", "%", "" */
    bool choice;       /* buttons, not a slider */
    const char *path;  /* the --set path: "lesson.users" */
    ex_set_kind set;
    double *grid; /* the file's sweep at path (EX_PREFIX, EX_SUFFIX), or the explorer's values */
    int n_grid;
    int first, last;          /* the values a user may pick: grid[first..last] */
    double dflt;              /* the whole sweep as shipped, or the file's value at path */
    double shown;             /* a value's label is value x shown ("%" of a fraction), else 1 */
    const char *const *names; /* a choice's button texts, value by value; NULL: the values */
} ex_control;

typedef struct ex_lesson {
    const char *id;
    const ls_lesson *ls; /* the lesson it runs: its file, its summary */
    bool quick;          /* the interactive size is the lesson's --quick one */
    const char *fixed;   /* a --set every request adds (a smaller size), or NULL */
    ex_control *controls;
    int n_controls;
} ex_lesson;

/* The panels, every control's numbers read from its lesson's file.  A
 * declaration the file does not fit -- a path it lacks, a sweep too short
 * to cut, a default that is not among the control's values -- is an error
 * naming the lesson and the path (every one found), so the server refuses
 * to start rather than serve a control the lesson cannot run.  The array
 * ends with a NULL id; ex_lessons_free frees it. */
int ex_lessons_load(ex_lesson **out, util_diag *d);
void ex_lessons_free(ex_lesson *lessons);
const ex_lesson *ex_lesson_find(const ex_lesson *lessons, const char *id);
/* The control's value's --set ("lesson.users=[1,2,4]"; caller frees). */
char *ex_control_set(const ex_control *c, double value);
/* Whether value is one of the control's. */
bool ex_control_allows(const ex_control *c, double value);

/* ---- sandbox (sandbox.c) ---- */

/* A computation in a child process of its own process group, with the
 * limits, its reply coming back through a pipe as it writes it. */
typedef struct ex_child {
    pid_t pid;
    int fd; /* the pipe's end to read, non-blocking */
    char *buf;
    size_t len, cap;
} ex_child;

/* Forks fn(arg) into c; false, with the 503 in *err, when it cannot. */
bool ex_child_start(ex_child *c, ex_job_fn fn, void *arg, double time_limit_s,
                    double memory_limit_mb, ex_reply *err);
/* Reads what the child has written so far; true once it has closed its
 * pipe: it is done, and ex_child_reply gives its reply. */
bool ex_child_read(ex_child *c);
/* The reply of a child that is done (a crash is a 500, a limit a 503); its
 * process group is killed and c released. */
ex_reply ex_child_reply(ex_child *c);
/* Kills the child and anything it started, and releases c. */
void ex_child_kill(ex_child *c);

/* ---- the computations' queue (jobs.c) ---- */

/* The computations waiting or running, each for a request of a client (an
 * IPv4 address), with a bound on both: a client may have EX_CLIENT_JOBS
 * of them (a browser opens 6 connections to a server, so the page never
 * meets the bound), all clients EX_WAITING waiting; one more is a 503 with
 * Retry-After.  Each client runs one heavy and one light computation at a
 * time, and EX_HEAVY_SLOTS heavy ones (EX_LIGHT_SLOTS light ones) run at
 * once: a freed slot goes to the oldest waiting computation whose client
 * runs none, so that a client with many waiting never holds up one with a
 * single one.  A computation waits at most EX_WAIT_LIMITS times the time
 * limit, and runs at most the time limit: past either, its reply is a 503.
 * Everything happens in the server's one thread. */
enum {
    EX_CLIENT_JOBS = 6,
    EX_WAITING = 32,
    EX_HEAVY_SLOTS = 4,
    EX_LIGHT_SLOTS = 2,
    EX_WAIT_LIMITS = 3,
};

typedef struct ex_jobs ex_jobs;
typedef struct ex_job ex_job;
/* Called once with a job's reply (owner's to free) when it is over. */
typedef void (*ex_done_fn)(void *owner, ex_reply *reply);

ex_jobs *ex_jobs_new(double time_limit_s, double memory_limit_mb);
/* Kills every child; owners are not called. */
void ex_jobs_free(ex_jobs *q);
/* Queues the task (started at once when a slot is free); NULL, with the
 * 503 in *refused, when its client or the queue is full or its child cannot
 * be forked.  The task's arg is the queue's from now on, refused or not. */
ex_job *ex_jobs_submit(ex_jobs *q, const ex_task *t, uint32_t client, double now, ex_done_fn done,
                       void *owner, ex_reply *refused);
/* Forgets a job whose request has gone: its child is killed, done is not
 * called. */
void ex_jobs_drop(ex_jobs *q, ex_job *j);
/* Adds the running children's pipes to set (max_fd raised). */
void ex_jobs_fdset(const ex_jobs *q, fd_set *set, int *max_fd);
/* The next moment a job must be looked at (a deadline), INFINITY if none. */
double ex_jobs_next(const ex_jobs *q);
/* Reads the children readable in set (NULL: all), ends the jobs done or
 * past their time, starts waiting ones in the freed slots: owners are
 * called for the jobs over. */
void ex_jobs_run(ex_jobs *q, const fd_set *readable, double now);
/* Ends every job with a 503 of message, killing its child. */
void ex_jobs_end_all(ex_jobs *q, const char *message);

#endif /* EX_INT_H */
