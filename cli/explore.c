/*
 * explore.c: `servesim explore` -- starts the explorer's server (explore/),
 * prints its URL and serves until Ctrl-C.  The stop signals are blocked in
 * every thread before the server starts, and this thread waits for one:
 * then the server stops (each computation running or waiting is killed and
 * its request answered 503) and the command exits 128 + the signal, 130 for
 * Ctrl-C, leaving nothing behind.
 */
#include "cli.h"
#include "ex.h"
#include "pl.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char explore_usage[] =
    "usage: servesim explore [FILE.db] [--port N] [--listen ADDR] [--time-limit S] [-j N]\n"
    "\n"
    "Serves the lessons as live demos to a browser: each lesson a panel whose sliders\n"
    "and buttons run it again on the real engine, with its numbers, figure and\n"
    "sentences; with FILE.db, a what-if page too (SLO thresholds against any of its\n"
    "runs).  Prints the URL and serves until Ctrl-C; nothing is written.\n"
    "\n"
    "  --port N          the port (default 8321; 0: any free one)\n"
    "  --listen ADDR     the IPv4 address to listen on (default 127.0.0.1: this machine\n"
    "                    only; 0.0.0.0 serves every network the machine is on)\n"
    "  --time-limit S    wall time one computation may take (default 10 s)\n"
    "  -j N              worker processes a lesson may use (default: the cores, at most 4)\n";

enum { DEFAULT_PORT = 8321 };

typedef struct options {
    const char *db, *listen;
    int port, jobs;
    double time_limit_s;
} options;

static int parse(int argc, char **argv, options *o)
{
    int cores = pl_cores();
    *o = (options){.port = DEFAULT_PORT, .jobs = cores < 4 ? cores : 4, .time_limit_s = 10};
    const cli_opt opts[] = {
        {.name = "port", .kind = CLI_INT, .dest = &o->port, .lo = 0, .hi = 65535},
        {.name = "listen", .kind = CLI_STRING, .dest = &o->listen},
        {.name = "time-limit",
         .kind = CLI_NUMBER,
         .dest = &o->time_limit_s,
         .lo = 0.001,
         .hi = 3600,
         .expect = "expected seconds, 0.001 to 3600"},
        {.name = "jobs", .short_name = 'j', .kind = CLI_INT, .dest = &o->jobs, .lo = 1, .hi = 64},
        {0},
    };
    cli_args pos;
    int code = cli_parse("explore", explore_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    if (pos.n > 1) return cli_usage_error("explore", "expected at most one FILE.db");
    o->db = pos.n ? pos.v[0] : NULL;
    return CLI_CONTINUE;
}

static int serve(const options *o, util_diag *d)
{
    mdl_catalog *cat = NULL;
    int rc = mdl_catalog_load_default(&cat, d);
    if (rc) return rc;
    /* blocked before the server's thread starts, so that it inherits the mask
     * and the signal comes to sigwait below */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    ex_config cfg = {.listen = o->listen,
                     .port = o->port,
                     .db = o->db,
                     .cat = cat,
                     .time_limit_s = o->time_limit_s,
                     .jobs = o->jobs};
    ex_server *s = NULL;
    rc = ex_start(&cfg, &s, d);
    if (!rc) {
        /* 0.0.0.0 is every address, not one to browse to: this machine's is */
        bool any = o->listen && !strcmp(o->listen, "0.0.0.0");
        printf("servesim explore: http://%s:%d/%s\n", o->listen && !any ? o->listen : "127.0.0.1",
               ex_port(s), any ? " (and this machine's other addresses)" : "");
        printf("(Ctrl-C to stop)\n");
        fflush(stdout);
        int sig = 0;
        sigwait(&stop, &sig);
        ex_stop(s);
        rc = 128 + sig;
    }
    mdl_catalog_destroy(cat);
    return rc;
}

int cli_explore(int argc, char **argv)
{
    options o;
    int code = parse(argc, argv, &o);
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    int rc = serve(&o, &d);
    code = rc > 128 ? rc : cli_fail(&d, rc);
    util_diag_fini(&d);
    return code;
}
