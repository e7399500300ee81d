/*
 * sandbox.c: a computation in a child process of its own.  The child sets
 * its limits (address space, CPU time), runs, and writes its reply to a
 * pipe as "STATUS LENGTH TYPE FILENAME\n" and the body; the server reads it
 * as it comes, without blocking, in its one thread (jobs.c keeps the
 * wall-time limit).  A child past its time, or whose request has gone, is
 * killed with its whole process group (a lesson's own worker processes
 * too).  Whatever a request asks, the server's own memory and time stay its
 * own.  A child keeps no descriptor but its own pipe: not the server's
 * sockets, nor the other children's pipes.
 */
#define _GNU_SOURCE /* pipe2, close_range */
#include "ex_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* AddressSanitizer reserves terabytes of address space for its shadow:
 * under it a limit on the address space would stop every child. */
#if defined(__SANITIZE_ADDRESS__)
#define LIMIT_ADDRESS_SPACE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LIMIT_ADDRESS_SPACE 0
#endif
#endif
#ifndef LIMIT_ADDRESS_SPACE
#define LIMIT_ADDRESS_SPACE 1
#endif

static bool write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

static void set_limits(double time_limit_s, double memory_limit_mb)
{
    struct rlimit cpu = {(rlim_t)time_limit_s + 1, (rlim_t)time_limit_s + 2};
    setrlimit(RLIMIT_CPU, &cpu);
    if (LIMIT_ADDRESS_SPACE && memory_limit_mb > 0) {
        rlim_t bytes = (rlim_t)(memory_limit_mb * 1024 * 1024);
        struct rlimit as = {bytes, bytes};
        setrlimit(RLIMIT_AS, &as);
    }
}

/* The child: its own group, the signals the server blocks unblocked (a
 * kill must reach it), the limits, the job, the reply down the pipe. */
static void child(int fd, ex_job_fn fn, void *arg, double time_limit_s, double memory_limit_mb)
{
    setpgid(0, 0);
    /* nothing of the server's but this pipe: not its sockets, whose
     * connections would stay open as long as the child */
    if (fd > 3) close_range(3, (unsigned)fd - 1, 0);
    close_range((unsigned)fd + 1, ~0U, 0);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    set_limits(time_limit_s, memory_limit_mb);
    ex_reply r = {.status = 500, .type = "application/json"};
    fn(arg, &r);
    char head[256];
    int n = snprintf(head, sizeof head, "%d %zu %s %s\n", r.status, r.len, r.type,
                     *r.filename ? r.filename : "-");
    bool ok = write_all(fd, head, (size_t)n) && write_all(fd, r.body ? r.body : "", r.len);
    _exit(ok ? 0 : 1);
}

/* The reply the child wrote: its header line, then the body. */
static ex_reply parse_reply(char *buf, size_t len)
{
    static const char *const types[] = {"application/json", "image/svg+xml", "image/png",
                                        "text/plain"};
    char *nl = memchr(buf, '\n', len);
    int status = 0;
    size_t body = 0;
    /* a name no longer than the reply's filename: nothing is cut when it is copied */
    _Static_assert(sizeof ((ex_reply *)0)->filename == 64, "the %63s below reads the name");
    char type[64] = "", name[64] = "";
    if (!nl || sscanf(buf, "%d %zu %63s %63s", &status, &body, type, name) != 4 ||
        body != len - (size_t)(nl + 1 - buf))
        return ex_error(500, NULL, "the computation's reply was cut short");
    ex_reply r = {.status = status, .type = "application/json"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(type, types[i])) r.type = types[i];
    if (strcmp(name, "-")) snprintf(r.filename, sizeof r.filename, "%s", name);
    r.len = body;
    r.body = util_xmalloc(body + 1);
    memcpy(r.body, nl + 1, body);
    r.body[body] = '\0';
    return r;
}

bool ex_child_start(ex_child *c, ex_job_fn fn, void *arg, double time_limit_s,
                    double memory_limit_mb, ex_reply *err)
{
    *c = (ex_child){.pid = -1, .fd = -1};
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        *err = ex_error(503, NULL, "cannot start the computation: %s", strerror(errno));
        return false;
    }
    if (fds[0] >= FD_SETSIZE) { /* the server's select could not watch it */
        close(fds[0]);
        close(fds[1]);
        *err = ex_error(503, NULL, "cannot start the computation: too many open files");
        return false;
    }
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        *err = ex_error(503, NULL, "cannot start the computation: %s", strerror(errno));
        return false;
    }
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], fn, arg, time_limit_s, memory_limit_mb);
    }
    close(fds[1]);
    setpgid(pid, pid); /* also here: a kill must find the group at once */
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    c->pid = pid;
    c->fd = fds[0];
    c->cap = 1 << 16;
    c->buf = util_xmalloc(c->cap);
    return true;
}

bool ex_child_read(ex_child *c)
{
    for (;;) {
        if (c->len == c->cap) c->buf = util_xrealloc(c->buf, c->cap *= 2);
        ssize_t got = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (got > 0) {
            c->len += (size_t)got;
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        /* EOF, or an error (the pipe cannot fail but so): done */
        return got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    }
}

/* Reaps the child (already dead, or about to be) and whatever its group
 * left behind; releases the pipe and the buffer. */
static int reap(ex_child *c, bool kill_first)
{
    if (kill_first) kill(-c->pid, SIGKILL);
    int st = 0;
    while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR) {
    }
    kill(-c->pid, SIGKILL); /* workers it left behind, if any */
    close(c->fd);
    c->fd = -1;
    c->pid = -1;
    return st;
}

ex_reply ex_child_reply(ex_child *c)
{
    int st = reap(c, false);
    ex_reply r;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        /* out of memory aborts (util_xmalloc), out of CPU time is SIGXCPU */
        r = WIFSIGNALED(st) &&
                    (WTERMSIG(st) == SIGXCPU || WTERMSIG(st) == SIGKILL || WTERMSIG(st) == SIGABRT)
                ? ex_error(503, NULL, "the computation went past its limits")
                : ex_error(500, NULL, "the computation failed (%s %d)",
                           WIFSIGNALED(st) ? "signal" : "exit status",
                           WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    else
        r = parse_reply(c->buf, c->len);
    free(c->buf);
    c->buf = NULL;
    return r;
}

void ex_child_kill(ex_child *c)
{
    reap(c, true);
    free(c->buf);
    c->buf = NULL;
}
