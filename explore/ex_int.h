/*
 * ex_int.h: what the explorer's files share -- the lessons' controls and
 * the sandbox computations run in.
 */
#ifndef EX_INT_H
#define EX_INT_H

#include <signal.h>

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

/* Runs fn(arg) in a child process of its own process group with the
 * limits: the reply it builds comes back through a pipe.  Past the time
 * limit, or when *cancel is set, the child and anything it started are
 * killed and the reply is a 503; a crash is a 500. */
typedef void (*ex_job_fn)(void *arg, ex_reply *out);
ex_reply ex_sandbox(ex_job_fn fn, void *arg, double time_limit_s, double memory_limit_mb,
                    volatile sig_atomic_t *cancel);

#endif /* EX_INT_H */
