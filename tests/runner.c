/*
 * runner.c: see runner.h.
 */
#include "runner.h"

#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "util.h"

char *runner_read(const char *path)
{
    util_diag d;
    util_diag_init(&d);
    char *s = NULL;
    if (util_read_file(path, &s, NULL, &d)) s = util_xstrdup("");
    util_diag_fini(&d);
    return s;
}

pid_t runner_spawn(const char *exe, char *const *argv, const char *out, const char *err)
{
    pid_t pid = fork();
    if (pid == 0) {
        dup2(open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), STDOUT_FILENO);
        dup2(open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600), STDERR_FILENO);
        execv(exe, argv);
        _exit(127);
    }
    return pid;
}

result runner_finish(pid_t pid, const char *out, const char *err)
{
    int st = 0;
    waitpid(pid, &st, 0);
    return (result){WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), runner_read(out),
                    runner_read(err)};
}

result runner_vrun(const char *exe, const char *dir, const char *a0, va_list ap)
{
    char *args[32] = {(char *)exe};
    int n = 1;
    for (const char *a = a0; a && n < 31; a = va_arg(ap, const char *))
        args[n++] = (char *)a;
    args[n] = NULL;
    return runner_argv(exe, dir, args);
}

result runner_argv(const char *exe, const char *dir, char *const *argv)
{
    char *out = util_xasprintf("%s/stdout", dir), *err = util_xasprintf("%s/stderr", dir);
    result r = runner_finish(runner_spawn(exe, argv, out, err), out, err);
    free(out);
    free(err);
    return r;
}

result runner_run(const char *exe, const char *dir, const char *a0, ...)
{
    va_list ap;
    va_start(ap, a0);
    result r = runner_vrun(exe, dir, a0, ap);
    va_end(ap);
    return r;
}

char *runner_read_or_bail(const char *path)
{
    char *text = NULL;
    util_diag d;
    util_diag_init(&d);
    if (util_read_file(path, &text, NULL, &d)) {
        printf("Bail out! %s\n", d.count ? d.msgs[0] : path);
        exit(1);
    }
    util_diag_fini(&d);
    return text;
}

void runner_drop(result *r)
{
    free(r->out);
    free(r->err);
}

/* ---- reading back what the binary stored ---- */

static sqlite3_stmt *first_row(const char *path, const char *sql, sqlite3 **db)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(*db, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

double runner_q1(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = first_row(path, sql, &db);
    double v = st && sqlite3_column_type(st, 0) != SQLITE_NULL ? sqlite3_column_double(st, 0) : NAN;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

char *runner_q1_text(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = first_row(path, sql, &db);
    const unsigned char *t = st ? sqlite3_column_text(st, 0) : NULL;
    char *v = util_xstrdup(t ? (const char *)t : "");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}
