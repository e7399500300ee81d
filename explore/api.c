/*
 * api.c: the JSON API behind the page.
 *
 *   GET /api/lessons                 the lessons and their controls
 *   GET /api/lesson?name=ID&...      one lesson at the controls' values
 *   GET /api/figure?name=ID&...&format=svg|png   its figure, as a download
 *   GET /api/runs                    the database's runs (explore FILE.db)
 *   GET /api/whatif?run=ID&ttft=S&ttft_p99=S&...&metric=M   `report --slo` of a run
 *
 * A parameter is checked here against what the request may name (a
 * control's values; a number in plain decimals), then by the same code
 * `--set` and `--slo` go through; a bad one, or one the request does not
 * take, is a 400 naming its path.  The work itself is a task (ex_task) the
 * server runs in the sandbox (sandbox.c) when its turn comes: ls_run and
 * ls_json, exactly as `servesim lesson NAME --set ... --json` does, or
 * an_report_compute_with and an_report_json, as `servesim report --slo ...
 * --by class --json`.  A task owns what it needs, since the request that
 * made it may be long gone by the time it runs.  The client is told the
 * database's name, never where it is: a message naming its path names the
 * file alone.
 */
#include "ex_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ex_api {
    ex_config cfg;
    char *db;           /* its path, for the children to open */
    const char *name;   /* its name, all a client is told of it */
    ex_lesson *lessons; /* the panels, their controls' numbers from the lessons' files */
};

ex_api *ex_api_new(const ex_config *cfg, util_diag *d)
{
    ex_api *a = util_xcalloc(1, sizeof *a);
    a->cfg = *cfg;
    if (a->cfg.jobs <= 0) a->cfg.jobs = 1; /* the limits are the server's (jobs.c) */
    if (ex_lessons_load(&a->lessons, d)) {
        free(a);
        return NULL;
    }
    if (cfg->db) {
        /* a database that is not servesim's says so now, not at the first request */
        sqlite3 *db = NULL;
        int64_t last;
        int rc = an_open(cfg->db, &db, d);
        if (!rc) rc = an_last_run(db, cfg->db, &last, d);
        sqlite3_close(db);
        if (rc) {
            ex_api_free(a);
            return NULL;
        }
        a->db = util_xstrdup(cfg->db);
        const char *slash = strrchr(a->db, '/');
        a->name = slash ? slash + 1 : a->db;
    }
    a->cfg.db = a->db;
    return a;
}

/* A computation killed at a stop may have held the database open: its
 * -wal and -shm files stay until a connection closes it cleanly, as the
 * last one.  Opening it once and closing it, after every child is gone,
 * leaves the folder as the server found it. */
static void tidy_db(const char *path)
{
    sqlite3 *db = NULL;
    util_diag d;
    util_diag_init(&d);
    if (an_open(path, &db, &d) == UTIL_OK) sqlite3_close(db);
    util_diag_fini(&d);
}

void ex_api_free(ex_api *a)
{
    if (!a) return;
    if (a->db) tidy_db(a->db);
    ex_lessons_free(a->lessons);
    free(a->db);
    free(a);
}

const char *ex_query_get(const ex_query *q, const char *key)
{
    for (int i = 0; i < q->n; i++)
        if (!strcmp(q->keys[i], key)) return q->values[i];
    return NULL;
}

static ex_reply json_reply(int status, cJSON *o)
{
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return (ex_reply){
        .status = status, .type = "application/json", .body = text, .len = strlen(text)};
}

ex_reply ex_error(int status, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = util_xvasprintf(fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    if (path) cJSON_AddStringToObject(o, "path", path);
    free(msg);
    return json_reply(status, o);
}

/* text with each occurrence of path replaced by name (caller frees). */
static char *without_path(const char *text, const char *path, const char *name)
{
    char *out = util_xstrdup("");
    size_t n = path ? strlen(path) : 0;
    for (const char *at; n && (at = strstr(text, path)); text = at + n) {
        char *t = util_xasprintf("%s%.*s%s", out, (int)(at - text), text, name);
        free(out);
        out = t;
    }
    char *t = util_xasprintf("%s%s", out, text);
    free(out);
    return t;
}

/* The diagnostics as one message, the database named by its name alone;
 * an input error is the user's (400). */
static ex_reply diag_reply(const ex_api *a, int rc, util_diag *d)
{
    char *all = util_xstrdup("");
    for (int i = 0; i < d->count; i++) {
        char *msg = without_path(d->msgs[i], a->db, a->name);
        char *t = util_xasprintf("%s%s%s", all, i ? "; " : "", msg);
        free(msg);
        free(all);
        all = t;
    }
    ex_reply r = ex_error(rc == UTIL_EINPUT ? 400 : 500, NULL, "%s", *all ? all : "failed");
    free(all);
    return r;
}

/* The length of the decimal number text starts with -- [-+]digits[.digits]
 * [e[-+]digits] -- or 0: not hexadecimal, not inf or nan, no space, which
 * strtod would all take. */
static size_t decimal_length(const char *text)
{
    static const char digits[] = "0123456789";
    const char *p = text + (*text == '-' || *text == '+');
    size_t n = strspn(p, digits);
    p += n;
    if (*p == '.') {
        size_t f = strspn(p + 1, digits);
        n += f;
        p += 1 + f;
    }
    if (!n) return 0;
    if (*p == 'e' || *p == 'E') {
        const char *e = p + 1 + (p[1] == '-' || p[1] == '+');
        size_t x = strspn(e, digits);
        if (x) p = e + x;
    }
    return (size_t)(p - text);
}

/* A finite number, in decimals, that is the whole of text. */
static bool number_of(const char *text, double *v)
{
    size_t n = decimal_length(text);
    if (!n || text[n]) return false;
    errno = 0;
    *v = strtod(text, NULL);
    return !errno && isfinite(*v);
}

/* ---- /api/lessons ----------------------------------------------------------- */

/* "10%" for a share, "1,024" stays "1024": what the page shows for a value. */
static char *value_label(const ex_control *c, double v)
{
    return util_xasprintf("%.6g%s", v * c->shown, !strcmp(c->unit, "%") ? "%" : "");
}

static cJSON *control_json(const ex_control *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "label", c->label);
    cJSON_AddStringToObject(o, "unit", c->unit);
    cJSON_AddStringToObject(o, "kind", c->choice ? "choice" : "range");
    cJSON_AddStringToObject(o, "set", c->path);
    cJSON *values = cJSON_AddArrayToObject(o, "values");
    cJSON *labels = cJSON_AddArrayToObject(o, "labels");
    for (int i = c->first; i <= c->last; i++) {
        cJSON_AddItemToArray(values, cJSON_CreateNumber(c->grid[i]));
        char *l = c->names ? util_xstrdup(c->names[i]) : value_label(c, c->grid[i]);
        cJSON_AddItemToArray(labels, cJSON_CreateString(l));
        free(l);
    }
    cJSON_AddNumberToObject(o, "default", c->dflt);
    return o;
}

/* The lesson file's own seed, the one a re-roll replaces. */
static double lesson_seed(const ls_lesson *l)
{
    cJSON *f = cJSON_Parse(l->file);
    double seed = util_json_number(f, "seed", 1);
    cJSON_Delete(f);
    return seed;
}

static ex_reply lessons(const ex_api *a)
{
    cJSON *o = cJSON_CreateObject();
    if (a->db) {
        cJSON_AddStringToObject(o, "file", a->name);
    } else {
        cJSON_AddNullToObject(o, "file");
    }
    cJSON *arr = cJSON_AddArrayToObject(o, "lessons");
    for (const ex_lesson *l = a->lessons; l->id; l++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "id", l->id);
        cJSON_AddStringToObject(j, "summary", l->ls->summary);
        cJSON_AddBoolToObject(j, "quick", l->quick);
        cJSON_AddNumberToObject(j, "seed", lesson_seed(l->ls));
        cJSON *controls = cJSON_AddArrayToObject(j, "controls");
        for (int i = 0; i < l->n_controls; i++)
            cJSON_AddItemToArray(controls, control_json(&l->controls[i]));
        cJSON_AddItemToArray(arr, j);
    }
    return json_reply(200, o);
}

/* ---- /api/lesson, /api/figure ------------------------------------------------ */

enum { MAX_SETS = 8 }; /* the controls', a fixed one and the seed */

typedef struct lesson_job {
    const ex_api *api;
    const ex_lesson *lesson;
    double values[MAX_SETS]; /* each control's */
    double seed;
    char *sets[MAX_SETS + 1];
    int n_sets;
    const char *format; /* NULL: the JSON; "svg", "png": the figure alone */
} lesson_job;

static void lesson_job_free(void *arg)
{
    lesson_job *j = arg;
    for (int i = 0; i < j->n_sets; i++)
        free(j->sets[i]);
    free(j);
}

/* The controls' values from the query (their defaults when absent), each
 * one of the control's own, and the seed; then their --set assignments. */
static bool read_knobs(const ex_query *q, lesson_job *j, ex_reply *err)
{
    const ex_lesson *l = j->lesson;
    j->seed = lesson_seed(l->ls);
    for (int i = 0; i < l->n_controls; i++)
        j->values[i] = l->controls[i].dflt;
    for (int k = 0; k < q->n; k++) {
        const char *key = q->keys[k], *text = q->values[k];
        if (!strcmp(key, "name") || (j->format && !strcmp(key, "format"))) continue;
        double v;
        if (!strcmp(key, "seed")) {
            if (!number_of(text, &v) || v != floor(v) || v < 1 || v > 1e6) {
                *err = ex_error(400, "seed", "seed: expected a whole number from 1 to 1000000");
                return false;
            }
            j->seed = v;
            continue;
        }
        int c = 0;
        while (c < l->n_controls && strcmp(l->controls[c].name, key))
            c++;
        if (c == l->n_controls) {
            char *names = util_xstrdup("");
            for (int i = 0; i < l->n_controls; i++) {
                char *t = util_xasprintf("%s%s, ", names, l->controls[i].name);
                free(names);
                names = t;
            }
            util_clip_buf b;
            *err = ex_error(400, util_clip(key, &b),
                            "%s: lesson %s has no such control (it takes %sseed%s)",
                            util_clip(key, &b), l->id, names, j->format ? ", format" : "");
            free(names);
            return false;
        }
        const ex_control *ctl = &l->controls[c];
        if (!number_of(text, &v) || !ex_control_allows(ctl, v)) {
            util_clip_buf b;
            *err = ex_error(400, ctl->path,
                            "%s: '%s' is not one of the control %s's values (from %g to %g, "
                            "as the lesson ships them)",
                            ctl->path, util_clip(text, &b), ctl->name, ctl->grid[ctl->first],
                            ctl->grid[ctl->last]);
            return false;
        }
        j->values[c] = v;
    }
    for (int i = 0; i < l->n_controls; i++)
        j->sets[j->n_sets++] = ex_control_set(&l->controls[i], j->values[i]);
    if (l->fixed) j->sets[j->n_sets++] = util_xstrdup(l->fixed);
    j->sets[j->n_sets++] = util_xasprintf("seed=%.17g", j->seed);
    return true;
}

static char *svg_text(const an_plot *p, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f) return NULL;
    an_plot_svg(p, (an_plot_size){0}, f);
    fclose(f);
    return buf;
}

static cJSON *knobs_json(const lesson_job *j)
{
    cJSON *k = cJSON_CreateObject();
    for (int i = 0; i < j->lesson->n_controls; i++)
        cJSON_AddNumberToObject(k, j->lesson->controls[i].name, j->values[i]);
    cJSON_AddNumberToObject(k, "seed", j->seed);
    return k;
}

/* In the sandbox: the lesson as `servesim lesson` runs it. */
static void run_lesson(void *arg, ex_reply *out)
{
    lesson_job *j = arg;
    const ls_lesson *ls = j->lesson->ls;
    util_diag d;
    util_diag_init(&d);
    ls_result r = {0};
    double start = util_wall_s();
    int rc =
        ls_run(ls, j->api->cfg.cat, j->sets, j->n_sets, j->lesson->quick, j->api->cfg.jobs, &r, &d);
    double elapsed = 1e3 * (util_wall_s() - start);
    if (rc) {
        *out = diag_reply(j->api, rc, &d);
    } else if (j->format) {
        snprintf(out->filename, sizeof out->filename, "%s.%s", j->lesson->id, j->format);
        out->status = 200;
        if (!strcmp(j->format, "png")) {
            unsigned char *png = NULL;
            rc = an_plot_png_memory(&r.plot, (an_plot_size){0}, 2, &png, &out->len, &d);
            out->body = (char *)png;
            out->type = "image/png";
            if (rc) *out = diag_reply(j->api, rc, &d);
        } else {
            out->body = svg_text(&r.plot, &out->len);
            out->type = "image/svg+xml";
        }
    } else {
        cJSON *o = ls_json(ls, &r);
        cJSON_AddItemToObject(o, "knobs", knobs_json(j));
        cJSON *sets = cJSON_AddArrayToObject(o, "sets");
        for (int i = 0; i < j->n_sets; i++)
            cJSON_AddItemToArray(sets, cJSON_CreateString(j->sets[i]));
        cJSON_AddBoolToObject(o, "quick", j->lesson->quick);
        size_t len;
        char *svg = r.has_plot ? svg_text(&r.plot, &len) : NULL;
        if (svg) cJSON_AddStringToObject(o, "svg", svg);
        free(svg);
        cJSON_AddNumberToObject(o, "elapsed_ms", elapsed);
        *out = json_reply(200, o);
    }
    ls_result_fini(&r);
    util_diag_fini(&d);
}

static ex_reply lesson(ex_api *a, const ex_query *q, bool figure, ex_task *task)
{
    const char *name = ex_query_get(q, "name");
    if (!name) return ex_error(400, "name", "name: which lesson (name=batching)");
    lesson_job *j = util_xcalloc(1, sizeof *j);
    *j = (lesson_job){.api = a, .lesson = ex_lesson_find(a->lessons, name)};
    util_clip_buf b;
    ex_reply r = {0};
    if (!j->lesson) {
        r = ex_error(404, "name", "no lesson '%s'", util_clip(name, &b));
    } else if (figure) {
        j->format = ex_query_get(q, "format");
        if (!j->format) j->format = "svg";
        if (strcmp(j->format, "svg") && strcmp(j->format, "png"))
            r = ex_error(400, "format", "format: expected svg or png");
    }
    if (!r.status && read_knobs(q, j, &r)) {
        /* the format is one of the two literals: the job may keep it */
        if (j->format) j->format = !strcmp(j->format, "png") ? "png" : "svg";
        *task = (ex_task){.fn = run_lesson, .arg = j, .free_arg = lesson_job_free};
        return r;
    }
    lesson_job_free(j);
    return r;
}

/* ---- /api/runs ---------------------------------------------------------------- */

static void add_class_names(cJSON *run, const cJSON *scenario)
{
    cJSON *names = cJSON_AddArrayToObject(run, "classes");
    const cJSON *c;
    cJSON_ArrayForEach(c, util_json_get(scenario, "workload.classes"))
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "name");
        if (cJSON_IsString(n)) cJSON_AddItemToArray(names, cJSON_CreateString(n->valuestring));
    }
}

static void add_slo(cJSON *run, const cJSON *scenario)
{
    cJSON *slo = cJSON_AddObjectToObject(run, "slo");
    static const char *const keys[] = {"ttft_s", "tpot_s", "e2e_s"};
    for (int i = 0; i < 3; i++) {
        char path[16];
        snprintf(path, sizeof path, "slo.%s", keys[i]);
        double v = util_json_number(scenario, path, NAN);
        if (isfinite(v))
            cJSON_AddNumberToObject(slo, keys[i], v);
        else
            cJSON_AddNullToObject(slo, keys[i]);
    }
}

/* In the sandbox: the runs, as the what-if page lists them. */
static void list_runs(void *arg, ex_reply *out)
{
    const ex_api *a = arg;
    util_diag d;
    util_diag_init(&d);
    sqlite3 *db = NULL;
    int rc = an_open(a->db, &db, &d);
    sqlite3_stmt *st = NULL;
    if (!rc && sqlite3_prepare_v2(db, "SELECT id, name, status, scenario FROM runs ORDER BY id", -1,
                                  &st, NULL) != SQLITE_OK)
        rc = util_diag_fail(&d, "%s: cannot read runs: %s", a->db, sqlite3_errmsg(db));
    if (rc) {
        *out = diag_reply(a, rc, &d);
    } else {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "file", a->name);
        cJSON *runs = cJSON_AddArrayToObject(o, "runs");
        while (sqlite3_step(st) == SQLITE_ROW) {
            cJSON *r = cJSON_CreateObject();
            cJSON_AddNumberToObject(r, "id", (double)sqlite3_column_int64(st, 0));
            cJSON_AddStringToObject(r, "name", (const char *)sqlite3_column_text(st, 1));
            cJSON_AddStringToObject(r, "status", (const char *)sqlite3_column_text(st, 2));
            cJSON *scenario = cJSON_Parse((const char *)sqlite3_column_text(st, 3));
            add_class_names(r, scenario);
            add_slo(r, scenario);
            cJSON_Delete(scenario);
            cJSON_AddItemToArray(runs, r);
        }
        *out = json_reply(200, o);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    util_diag_fini(&d);
}

/* ---- /api/whatif ---------------------------------------------------------------- */

enum { MAX_SLO_ARGS = 32 };

typedef struct whatif_job {
    const ex_api *api;
    int64_t run;
    an_metric metric;
    double threshold; /* the metric's, for the curve; NAN: the scenario's */
    char *args[MAX_SLO_ARGS];
    int n_args;
} whatif_job;

static bool read_whatif(const ex_query *q, whatif_job *j, an_options *opt, ex_reply *err)
{
    const char *run = ex_query_get(q, "run"), *metric = ex_query_get(q, "metric");
    double v;
    if (!run || !number_of(run, &v) || v != floor(v) || v < 1 || v > 9e15) {
        *err = ex_error(400, "run", "run: expected a run's id (run=1)");
        return false;
    }
    j->run = (int64_t)v;
    j->metric = AN_TTFT;
    j->threshold = NAN;
    if (metric) {
        int m = 0;
        while (m < AN_N_METRICS && strcmp(an_metric_names[m], metric))
            m++;
        if (m == AN_N_METRICS) {
            *err = ex_error(400, "metric", "metric: expected ttft, tpot, tpot_incl_ttft or e2e");
            return false;
        }
        j->metric = (an_metric)m;
    }
    for (int k = 0; k < q->n; k++) {
        const char *key = q->keys[k];
        if (!strcmp(key, "run") || !strcmp(key, "metric")) continue;
        util_clip_buf b;
        if (j->n_args == MAX_SLO_ARGS) {
            *err = ex_error(400, util_clip(key, &b), "%s: more than %d thresholds and targets",
                            util_clip(key, &b), MAX_SLO_ARGS);
            return false;
        }
        /* a number in decimals, then a unit or none: --slo's parser, which
         * checks the unit, would take 0x1 and " 1" too */
        const char *value = q->values[k];
        size_t n = decimal_length(value);
        if (!n || strspn(value + n, "abcdefghijklmnopqrstuvwxyz") != strlen(value + n)) {
            *err = ex_error(400, util_clip(key, &b),
                            "%s: expected seconds in decimals, or with a unit (0.5, 500ms)",
                            util_clip(key, &b));
            return false;
        }
        /* any key `--slo` takes -- a threshold (ttft, chat.ttft, task_e2e) or a
         * target (ttft_p99) -- and nothing else: its parser says which */
        char *arg = util_xasprintf("%s=%s", key, q->values[k]);
        util_diag d;
        util_diag_init(&d);
        int rc = an_options_add_slo(opt, arg, &d);
        if (rc) {
            *err = ex_error(400, util_clip(key, &b), "%s", d.count ? d.msgs[0] : "bad threshold");
            free(arg);
            util_diag_fini(&d);
            return false;
        }
        util_diag_fini(&d);
        j->args[j->n_args++] = arg;
        if (!strcmp(key, an_metric_names[j->metric]) && number_of(q->values[k], &v))
            j->threshold = v;
    }
    return true;
}

static void run_whatif(void *arg, ex_reply *out)
{
    whatif_job *j = arg;
    util_diag d;
    util_diag_init(&d);
    an_options opt = {0};
    for (int i = 0; i < j->n_args; i++) /* checked before the fork: they parse */
        an_options_add_slo(&opt, j->args[i], &d);
    sqlite3 *db = NULL;
    an_report rep = {0};
    an_plot fig = {0};
    int rc = an_open(j->api->db, &db, &d);
    if (!rc) rc = an_report_compute_with(db, j->run, &opt, &rep, &d);
    an_plot_request req = {.kind = AN_PLOT_SLO_CURVE,
                           .file = j->api->name, /* the figure's data-source: no path */
                           .runs = &j->run,
                           .n_runs = 1,
                           .metric = j->metric,
                           .slo_s = j->threshold};
    if (!rc) rc = an_plot_compute(db, &req, &fig, &d);
    if (rc) {
        *out = diag_reply(j->api, rc, &d);
    } else {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "run", (double)j->run);
        cJSON *args = cJSON_AddArrayToObject(o, "slo_args");
        for (int i = 0; i < j->n_args; i++)
            cJSON_AddItemToArray(args, cJSON_CreateString(j->args[i]));
        cJSON_AddItemToObject(o, "report", an_report_json(&rep, true));
        size_t len;
        char *svg = svg_text(&fig, &len);
        if (svg) cJSON_AddStringToObject(o, "svg", svg);
        free(svg);
        *out = json_reply(200, o);
    }
    an_plot_fini(&fig);
    an_report_fini(&rep);
    sqlite3_close(db);
    an_options_fini(&opt);
    util_diag_fini(&d);
}

static void whatif_job_free(void *arg)
{
    whatif_job *j = arg;
    for (int i = 0; i < j->n_args; i++)
        free(j->args[i]);
    free(j);
}

static ex_reply whatif(ex_api *a, const ex_query *q, ex_task *task)
{
    whatif_job *j = util_xcalloc(1, sizeof *j);
    j->api = a;
    an_options opt = {0};
    ex_reply r = {0};
    bool ok = read_whatif(q, j, &opt, &r);
    an_options_fini(&opt);
    if (!ok) {
        whatif_job_free(j);
        return r;
    }
    *task = (ex_task){.fn = run_whatif, .arg = j, .free_arg = whatif_job_free};
    return r;
}

/* ---- routing ---------------------------------------------------------------------- */

/* A 400 for the first parameter of a request that takes none. */
static bool takes_none(const ex_query *q, const char *path, ex_reply *out)
{
    if (!q->n) return true;
    util_clip_buf b;
    *out = ex_error(400, util_clip(q->keys[0], &b), "%s: %s takes no parameters",
                    util_clip(q->keys[0], &b), path);
    return false;
}

bool ex_api_handle(ex_api *a, const char *path, const ex_query *q, ex_reply *out, ex_task *task)
{
    *task = (ex_task){0};
    bool runs = !strcmp(path, "/api/runs");
    if (!strcmp(path, "/api/lessons")) {
        if (takes_none(q, path, out)) *out = lessons(a);
    } else if (!strcmp(path, "/api/lesson") || !strcmp(path, "/api/figure")) {
        *out = lesson(a, q, path[5] == 'f', task);
    } else if (runs || !strcmp(path, "/api/whatif")) {
        if (!a->db)
            *out = ex_error(404, NULL, "no database: start servesim explore FILE.db");
        else if (!runs)
            *out = whatif(a, q, task);
        else if (takes_none(q, path, out))
            *task = (ex_task){.fn = list_runs, .arg = a, .light = true};
    } else {
        return false;
    }
    return true;
}
