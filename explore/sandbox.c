/*
 * sandbox.c: a computation in a child process of its own.  The child sets
 * its limits (address space, CPU time), runs, and writes its reply to a
 * pipe as "STATUS LENGTH TYPE FILENAME\n" and the body; the parent reads it
 * with the wall-time limit, checking a cancel flag every 50 ms.  A child
 * past its time, or asked to stop, is killed with its whole process group
 * (a lesson's own worker processes too).  Whatever a request asks, the
 * server's own memory and time stay its own.  A child keeps no descriptor
 * but its own pipe: not the server's sockets.
 */
#define _GNU_SOURCE /* pipe2, close_range */
#include "ex_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

/* Everything the child wrote, until it closed the pipe, the deadline
 * passed or the cancel flag was set; returns whether it closed in time. */
static bool read_reply(int fd, double deadline, volatile sig_atomic_t *cancel, char **buf,
                       size_t *len)
{
    size_t cap = 1 << 16;
    *buf = util_xmalloc(cap);
    *len = 0;
    for (;;) {
        double left = deadline - util_wall_s();
        if (left <= 0 || (cancel && *cancel)) return false;
        struct pollfd p = {fd, POLLIN, 0};
        int wait_ms = left < 0.05 ? (int)(left * 1000) + 1 : 50;
        int k = poll(&p, 1, wait_ms);
        if (k < 0 && errno != EINTR) return false;
        if (k <= 0) continue;
        if (*len == cap) *buf = util_xrealloc(*buf, cap *= 2);
        ssize_t got = read(fd, *buf + *len, cap - *len);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return got == 0;
        *len += (size_t)got;
    }
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

ex_reply ex_sandbox(ex_job_fn fn, void *arg, double time_limit_s, double memory_limit_mb,
                    volatile sig_atomic_t *cancel)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return ex_error(503, NULL, "cannot start the computation: %s", strerror(errno));
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return ex_error(503, NULL, "cannot start the computation: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], fn, arg, time_limit_s, memory_limit_mb);
    }
    close(fds[1]);
    setpgid(pid, pid); /* also here: the kill below must find the group at once */
    char *buf;
    size_t len;
    bool done = read_reply(fds[0], util_wall_s() + time_limit_s, cancel, &buf, &len);
    close(fds[0]);
    if (!done) kill(-pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (done) kill(-pid, SIGKILL); /* workers it left behind, if any */
    ex_reply r;
    if (!done && cancel && *cancel)
        r = ex_error(503, NULL, "stopped: the server is shutting down");
    else if (!done)
        r = ex_error(503, NULL, "the computation took longer than its limit of %g s", time_limit_s);
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        /* out of memory aborts (util_xmalloc), out of CPU time is SIGXCPU */
        r = WIFSIGNALED(st) &&
                    (WTERMSIG(st) == SIGXCPU || WTERMSIG(st) == SIGKILL || WTERMSIG(st) == SIGABRT)
                ? ex_error(503, NULL, "the computation went past its limits")
                : ex_error(500, NULL, "the computation failed (%s %d)",
                           WIFSIGNALED(st) ? "signal" : "exit status",
                           WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    else
        r = parse_reply(buf, len);
    free(buf);
    return r;
}
