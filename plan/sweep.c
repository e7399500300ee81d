/*
 * sweep.c: a grid of points run by worker processes into one database.
 *
 * Every point is validated before anything runs (a bad value is bad input,
 * and nothing is written), numbered with its run id, and given its seed;
 * workers simulate points into files of their own next to the output and
 * summarise them there; the parent merges each finished file into the
 * output in one transaction and removes it.  So an interrupted sweep holds
 * exactly the points that finished, and `--resume` finds them by their
 * overrides and seed and runs the rest (and removes the point files a
 * sweep killed outright left).
 */
#include "pl.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* ---- the grid ---- */

static int grid_size(const pl_sweep_opts *o)
{
    int n = 1;
    for (int i = 0; i < o->n_axes; i++) n *= cJSON_GetArraySize(o->axes[i].values);
    return n * o->seeds;
}

/* Point i: the first axis varies slowest, the seed fastest. */
static void grid_point(const pl_sweep_opts *o, int i, pl_point *p)
{
    p->overrides = cJSON_CreateObject();
    p->seed = o->seed + i % o->seeds;
    int rest = i / o->seeds;
    for (int a = o->n_axes - 1; a >= 0; a--) {
        int n = cJSON_GetArraySize(o->axes[a].values);
        cJSON *v = cJSON_Duplicate(cJSON_GetArrayItem(o->axes[a].values, rest % n), 1);
        rest /= n;
        cJSON_AddItemToObject(p->overrides, o->axes[a].path, v);
    }
    /* keep the axes' order in the object: it is the point's stored identity */
    cJSON *ordered = cJSON_CreateObject();
    for (int a = 0; a < o->n_axes; a++)
        cJSON_AddItemToObject(ordered, o->axes[a].path,
                              cJSON_DetachItemFromObjectCaseSensitive(p->overrides, o->axes[a].path));
    cJSON_Delete(p->overrides);
    p->overrides = ordered;
}

static char *point_name(const pl_point *p)
{
    char *o = cJSON_PrintUnformatted(p->overrides);
    char *s = util_xasprintf("point %s seed %lld", o, (long long)p->seed);
    free(o);
    return s;
}

/* ---- checking the points ---- */

/* The object at a dotted path of a scenario, or NULL. */
static const cJSON *at_path(const cJSON *root, const char *path)
{
    char *copy = util_xstrdup(path), *save = NULL;
    const cJSON *o = root;
    for (char *seg = strtok_r(copy, ".", &save); seg && o; seg = strtok_r(NULL, ".", &save))
        o = cJSON_GetObjectItemCaseSensitive(o, seg);
    free(copy);
    return cJSON_IsObject(o) ? o : NULL;
}

/* Whether key is among the "known: a, b, c" words of an unknown-key message. */
static bool known_in(const char *msg, const char *key)
{
    const char *k = strstr(msg, "known: ");
    if (!k) return false;
    size_t n = strlen(key);
    for (const char *w = k + 7; *w && *w != ')';) {
        size_t len = strcspn(w, ",)");
        if (len == n && !strncmp(w, key, n)) return true;
        w += len;
        w += strspn(w, ", ");
    }
    return false;
}

/* "PATH.KEY: unknown key (... known: ...)" about an object with a
 * "process" -- a key left over from the arrival process a --set switched
 * away from -- gets a hint: drop it, and the object that --set may give
 * whole instead, of the keys the new process knows. */
static void process_hint(const char *json, const char *msg, util_diag *d)
{
    const char *colon = strstr(msg, ": unknown key (");
    const char *dot = colon;
    while (dot && dot > msg && *dot != '.') dot--;
    if (!dot || *dot != '.') return;
    char *parent = util_xasprintf("%.*s", (int)(dot - msg), msg);
    char *key = util_xasprintf("%.*s", (int)(colon - dot - 1), dot + 1);
    cJSON *root = cJSON_Parse(json);
    const cJSON *obj = at_path(root, parent);
    const char *process = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "process"));
    if (process) {
        char *example = util_xasprintf("{\"process\": \"%s\"", process);
        for (const cJSON *c = obj ? obj->child : NULL; c; c = c->next) {
            if (!strcmp(c->string, "process") || !known_in(msg, c->string)) continue;
            char *v = cJSON_PrintUnformatted(c), *next;
            next = util_xasprintf("%s, \"%s\": %s", example, c->string, v);
            free(v);
            free(example);
            example = next;
        }
        util_diag_add(d, "%s is not a key of process %s: drop it, e.g. --set %s='%s}'", key,
                      process, parent, example);
        free(example);
    }
    cJSON_Delete(root);
    free(parent);
    free(key);
}

/* One point's scenario loads: 0, or its messages in one. */
static int check_point(const pl_sweep_opts *o, const pl_point *p, char **json, util_diag *one)
{
    sim_scenario sc;
    int rc = pl_point_scenario(&o->base, p, json, one);
    if (!rc) {
        rc = sim_scenario_load(cJSON_Parse(*json), o->base.catalog, o->base.base_dir, &sc, one);
        sim_scenario_fini(&sc);
    }
    return rc;
}

/* Each point's scenario must load: a typo in a value is found before any
 * run, and named by its point.  The first point is checked alone first:
 * when it fails, the fault is most often the base's (a --set every point
 * shares), and one copy of its messages, with a hint, says it better than
 * one per point. */
static int validate(const pl_sweep_opts *o, const pl_sweep_result *r, util_diag *d)
{
    int rc = UTIL_OK;
    for (int i = 0; i < r->n_rows && d->count < 20; i++) {
        util_diag one;
        util_diag_init(&one);
        char *json = NULL;
        if (check_point(o, &r->rows[i].point, &json, &one)) {
            char *name = point_name(&r->rows[i].point);
            for (int k = 0; k < one.count; k++) util_diag_add(d, "%s: %s", name, one.msgs[k]);
            for (int k = 0; i == 0 && json && k < one.count; k++) process_hint(json, one.msgs[k], d);
            free(name);
            rc = UTIL_EINPUT;
        }
        free(json);
        util_diag_fini(&one);
        if (rc && i == 0) break;
    }
    return rc;
}

/* ---- the database: what is done, what to number ---- */

static int64_t max_run_id(sqlite3 *db)
{
    sqlite3_stmt *st;
    int64_t id = 0;
    if (sqlite3_prepare_v2(db, "SELECT max(id) FROM runs", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}

/* Points already in the database: run ids filled in for them; returns how
 * many, or -1 on error. */
static int find_done(sqlite3 *db, const char *label, pl_sweep_result *r)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT id, overrides, seed FROM runs WHERE sweep = ?1", -1, &st,
                           NULL) != SQLITE_OK)
        return sqlite3_errcode(db) == SQLITE_ERROR ? 0 : -1; /* a file without runs yet */
    sqlite3_bind_text(st, 1, label, -1, SQLITE_STATIC);
    int found = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *o = (const char *)sqlite3_column_text(st, 1);
        int64_t seed = sqlite3_column_int64(st, 2);
        for (int i = 0; i < r->n_rows; i++) {
            pl_point *p = &r->rows[i].point;
            char *mine = cJSON_PrintUnformatted(p->overrides);
            if (!p->run_id && o && !strcmp(mine, o) && p->seed == seed) {
                p->run_id = sqlite3_column_int64(st, 0);
                found++;
            }
            free(mine);
        }
    }
    sqlite3_finalize(st);
    return found;
}

/* ---- workers ---- */

/* Named by the sweep's process, so that two sweeps writing one database
 * never share a point's file. */
static char *temp_path(const pl_sweep_opts *o, int64_t run_id)
{
    return util_xasprintf("%s.point-%ld-%lld.tmp", o->output, (long)getpid(), (long long)run_id);
}

/* A point's file, and the rollback journal SQLite keeps beside it while it
 * writes (a worker killed mid-run leaves one). */
static void remove_point_file(const char *path)
{
    char *journal = util_xasprintf("%s-journal", path);
    unlink(path);
    unlink(journal);
    free(journal);
}

/* A point into its own file: the file an interrupted sweep may have left is
 * removed first, and a failed point leaves none. */
static char *run_job(const char *job, void *ctx)
{
    cJSON *j = cJSON_Parse(job);
    char *path = util_xstrdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "path")));
    cJSON_Delete(j);
    remove_point_file(path);
    char *result = pl_point_job(job, ctx);
    cJSON *res = cJSON_Parse(result);
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "ok"))) remove_point_file(path);
    cJSON_Delete(res);
    free(path);
    return result;
}

static char *job_text(const pl_sweep_opts *o, const pl_point *p)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "overrides", cJSON_Duplicate(p->overrides, 1));
    cJSON_AddNumberToObject(j, "seed", (double)p->seed);
    cJSON_AddNumberToObject(j, "run_id", (double)p->run_id);
    char *path = temp_path(o, p->run_id);
    cJSON_AddStringToObject(j, "path", path);
    free(path);
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

/* ---- progress ---- */

/* Where the sweep stands; `pool` counts the points in flight. */
typedef struct standing {
    const pl_sweep_opts *o;
    int done, total;
    double start;
} standing;

static void progress(const standing *st, const pl_pool *pool, bool finished)
{
    const pl_sweep_opts *o = st->o;
    if (!o->progress) return;
    pl_sweep_progress p = {.done = st->done, .total = st->total,
                           .in_flight = pool ? pl_pool_busy(pool) : 0, .jobs = o->jobs,
                           .elapsed_s = util_wall_s() - st->start, .finished = finished};
    o->progress(&p, o->progress_arg);
}

/* Between points: the bar moves with the clock, not only as points end. */
static void tick(const pl_pool *pool, void *arg)
{
    progress(arg, pool, false);
}

/* ---- the sweep ---- */

/* Keeps every worker busy while points remain. */
static void submit(const pl_sweep_opts *o, pl_pool *pool, const int *to_run, int n_to_run, int *next,
                   const pl_sweep_result *r, bool *out)
{
    while (*next < n_to_run) {
        char *job = job_text(o, &r->rows[to_run[*next]].point);
        bool taken = pl_pool_submit(pool, to_run[*next], job);
        free(job);
        if (!taken) return;
        out[to_run[(*next)++]] = true;
    }
}

/* A worker gone (a process killed, an MPI rank lost): the sweep ends as at
 * Ctrl-C, every finished point kept, but as the failure it is, saying
 * which worker and which point. */
static int worker_lost(const pl_pool *pool, pl_sweep_result *r, util_diag *d)
{
    int64_t tag;
    const char *why = pl_pool_why(pool, &tag);
    char *name = tag >= 0 ? point_name(&r->rows[tag].point) : NULL;
    r->interrupted = true;
    int rc = util_diag_fail(d, "%s%s%s: the points that finished are kept (interrupted: "
                               "--resume finishes it)",
                            why ? why : "an MPI rank stopped answering", name ? " running " : "",
                            name ? name : "");
    free(name);
    return rc;
}

/* A finished point that could not be merged (a full disk, the output
 * replaced meanwhile): its file is kept, and the message says where; the
 * sweep ends as an interrupted one, a fault (the output replaced by a file
 * that is no servesim database stays bad input). */
static int point_kept(const pl_sweep_row *row, const char *path, int rc, pl_sweep_result *r,
                      util_diag *d)
{
    char *name = point_name(&row->point);
    r->interrupted = true;
    util_diag_add(d, "%s could not be merged: it is kept in %s, a servesim database (servesim "
                     "report %s reads it); the points that finished are kept (interrupted: "
                     "--resume finishes it, running this point again)",
                  name, path, path);
    free(name);
    return rc == UTIL_EINPUT ? rc : UTIL_EFAIL;
}

/* Hands out points and merges what comes back, until all are done or
 * *stop is raised. */
static int drive(const pl_sweep_opts *o, int *to_run, int n_to_run,
                 const volatile sig_atomic_t *stop, pl_sweep_result *r, util_diag *d)
{
    pl_pool *pool = pl_pool_start(o->jobs, run_job, (void *)&o->base);
    int next = 0, rc = UTIL_OK;
    bool *out = util_xcalloc((size_t)r->n_rows, sizeof *out);
    standing st = {o, 0, n_to_run, util_wall_s()};
    pl_pool_set_tick(pool, tick, &st);
    progress(&st, pool, false);
    while (!rc && st.done < n_to_run && !(stop && *stop)) {
        submit(o, pool, to_run, n_to_run, &next, r, out);
        int64_t tag;
        char *text;
        if (!pl_pool_wait(pool, stop, &tag, &text)) {
            if (pl_pool_failed(pool)) rc = worker_lost(pool, r, d);
            continue;
        }
        pl_sweep_row *row = &r->rows[tag];
        out[tag] = false;
        if (!(stop && *stop)) submit(o, pool, to_run, n_to_run, &next, r, out); /* before merging:
                                                                        * no worker waits on it */
        cJSON *res = cJSON_Parse(text);
        free(text);
        char *path = temp_path(o, row->point.run_id);
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "ok"))) {
            char *name = point_name(&row->point);
            rc = util_diag_fail(d, "%s: %s", name,
                                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "error")));
            free(name);
        } else {
            pl_summary_from_json(cJSON_GetObjectItemCaseSensitive(res, "summary"), &row->s);
            /* keeps its planned id unless another process took it meanwhile */
            rc = rec_publish(path, o->output, &row->point.run_id, d);
            if (rc) {
                rc = point_kept(row, path, rc, r, d);
            } else {
                row->s.run_id = row->point.run_id;
                remove_point_file(path);
                r->ran++;
                st.done++;
                progress(&st, pool, st.done == n_to_run);
            }
        }
        free(path);
        cJSON_Delete(res);
    }
    pl_pool_stop(pool);
    for (int i = 0; i < r->n_rows; i++) /* points cut short leave no file behind */
        if (out[i]) {
            char *path = temp_path(o, r->rows[i].point.run_id);
            remove_point_file(path);
            free(path);
        }
    free(out);
    if (!rc && st.done < n_to_run) {
        r->interrupted = true;
        return UTIL_EINTR;
    }
    return rc;
}

/* What a sweep into output that was killed outright (kill -9 of its parent)
 * left: its points' files, OUTPUT.point-PID-ID.tmp (and a journal), made by
 * a process that is gone.  Files of a live process -- another sweep into
 * the same database -- and files not ours are left alone. */
static void remove_stale_points(const char *output)
{
    char *dir = util_dirname(output);
    const char *base = strrchr(output, '/');
    base = base ? base + 1 : output;
    size_t n = strlen(base);
    DIR *dd = opendir(dir);
    for (struct dirent *e; dd && (e = readdir(dd));) {
        const char *name = e->d_name, *tail = name + n + 7;
        if (strncmp(name, base, n) || strncmp(name + n, ".point-", 7) ||
            !isdigit((unsigned char)*tail))
            continue;
        long pid;
        long long id;
        int end = 0;
        if (sscanf(tail, "%ld-%lld.tmp%n", &pid, &id, &end) != 2 || !end ||
            (tail[end] && strcmp(tail + end, "-journal")))
            continue;
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* its process lives (or is another user's) */
        char *f = util_xasprintf("%s/%s", dir, name);
        struct stat st;
        if (lstat(f, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) unlink(f);
        free(f);
    }
    if (dd) closedir(dd);
    free(dir);
}

/* The output as it stands, read only: NULL when it does not exist yet. */
static int open_output(const char *path, sqlite3 **db, util_diag *d)
{
    *db = NULL;
    int rc = rec_check(path, d);
    if (rc || access(path, F_OK) != 0) return rc;
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(*db);
        *db = NULL;
        return util_diag_fail(d, "%s: cannot open", path);
    }
    sqlite3_busy_timeout(*db, 60000);
    return UTIL_OK;
}

int pl_sweep_run(const pl_sweep_opts *o, const volatile sig_atomic_t *stop, pl_sweep_result *r,
                 util_diag *d)
{
    memset(r, 0, sizeof *r);
    r->n_rows = grid_size(o);
    r->rows = util_xcalloc((size_t)r->n_rows, sizeof *r->rows);
    for (int i = 0; i < r->n_rows; i++) grid_point(o, i, &r->rows[i].point);
    int rc = validate(o, r, d);
    sqlite3 *db = NULL;
    if (!rc) rc = open_output(o->output, &db, d);
    if (rc) return rc;
    int found = db ? find_done(db, o->base.sweep, r) : 0;
    if (found > 0 && !o->resume)
        rc = util_diag_add(d, "%s already holds sweep '%s' (%d of its points): --resume runs the "
                              "missing ones, or write to another file",
                           o->output, o->base.sweep, found);
    int *to_run = util_xmalloc((size_t)r->n_rows * sizeof *to_run), n_to_run = 0;
    int64_t id = db ? max_run_id(db) : 0;
    for (int i = 0; !rc && i < r->n_rows; i++) {
        pl_sweep_row *row = &r->rows[i];
        if (row->point.run_id) { /* done before */
            rc = pl_summarise(db, row->point.run_id, &o->base, &row->s, d);
            r->resumed++;
        } else {
            row->point.run_id = ++id; /* numbered before they run: the same ids for any -j */
            to_run[n_to_run++] = i;
        }
    }
    sqlite3_close(db);
    if (!rc && o->resume) remove_stale_points(o->output);
    if (!rc) rc = drive(o, to_run, n_to_run, stop, r, d);
    free(to_run);
    return rc;
}

void pl_sweep_result_fini(pl_sweep_result *r)
{
    for (int i = 0; i < r->n_rows; i++) cJSON_Delete(r->rows[i].point.overrides);
    free(r->rows);
    memset(r, 0, sizeof *r);
}
