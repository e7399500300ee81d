/*
 * ex: `servesim explore` -- the lessons as live demos and a what-if page
 * for a stored run, served to a browser on this machine by libmicrohttpd.
 * The page (explore/page/, compiled in) asks a small JSON API; every
 * computation behind it runs in a child process of its own with a time and
 * a memory limit, so that no request can stall, crash or grow the server,
 * and waits its turn in a bounded queue shared fairly between the clients,
 * so that none can hold up the others: the page's files and the cheap calls
 * are answered at once, whatever is computing.
 * Parameters are the page's controls, each one a `--set` of the lesson
 * checked against its shipped grid and then by the scenario's own schema,
 * or `report --slo` thresholds: nothing else is accepted, nothing is
 * written, and no path but the page's own and the API's is served.
 */
#ifndef EX_H
#define EX_H

#include <stdbool.h>
#include <stdint.h>

#include "ls.h"
#include "mdl.h"
#include "util.h"

typedef struct ex_config {
    const char *listen;     /* an IPv4 address; NULL: 127.0.0.1 */
    int port;               /* 0: any free port */
    const char *db;         /* the what-if page's database, or NULL */
    const mdl_catalog *cat; /* the lessons' catalog */
    double time_limit_s;    /* wall time a computation may take; 0: 10 s */
    double memory_limit_mb; /* address space of a computation; 0: 4096 MB */
    int jobs;               /* worker processes a lesson may use; 0: 1 */
} ex_config;

typedef struct ex_server ex_server;

/* Binds and starts serving in a thread of its own.  A database that is not
 * one servesim wrote, or an address that cannot be bound, is an error that
 * names it. */
int ex_start(const ex_config *cfg, ex_server **out, util_diag *d);
/* The port it listens on (the one chosen when cfg.port was 0). */
int ex_port(const ex_server *s);
/* Stops serving: a computation in flight or waiting is killed and its
 * request answered 503 (given a second to be sent); nothing is left
 * behind. */
void ex_stop(ex_server *s);

/* ---- what the server is made of (api.c, controls.c, sandbox.c) ---- */

/* A response: status, content type, body (owned). */
typedef struct ex_reply {
    int status;
    const char *type;
    char *body;
    size_t len;
    char filename[64]; /* a download's name, "" for none */
    int retry_after_s; /* a 503's Retry-After, 0 for none */
} ex_reply;

/* A request's query: its arguments in order, already capped in number and size. */
typedef struct ex_query {
    const char **keys, **values;
    int n;
} ex_query;

const char *ex_query_get(const ex_query *q, const char *key);

/* The JSON of an error, {"error": message, "path": path or absent}. */
ex_reply ex_error(int status, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A computation, to be run by fn(arg, &reply) in a child process (sandbox.c)
 * when its turn comes (jobs.c); free_arg(arg) once it is over.  A light one
 * (the list of runs) only reads a little and has slots of its own, so that
 * it never waits behind a heavy one (a lesson, a what-if). */
typedef void (*ex_job_fn)(void *arg, ex_reply *out);
typedef struct ex_task {
    ex_job_fn fn; /* NULL: no computation, the reply is ready */
    void *arg;
    void (*free_arg)(void *arg);
    bool light;
} ex_task;

/* The API: /api/lessons, /api/lesson, /api/figure, /api/runs, /api/whatif. */
typedef struct ex_api ex_api;
ex_api *ex_api_new(const ex_config *cfg, util_diag *d);
void ex_api_free(ex_api *a);
/* GET path?query: false when path is not the API's; else either the reply
 * in *out (a list, an error) or, in *task, the computation that makes it. */
bool ex_api_handle(ex_api *a, const char *path, const ex_query *q, ex_reply *out, ex_task *task);

#endif /* EX_H */
