/*
 * support.c: see support.h.
 */
#include "support.h"
#include "runner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

mdl_catalog *support_catalog;

char *support_scenario_text(const char *name)
{
    char *path = util_xasprintf("%s/%s", SUPPORT_SCENARIOS_DIR, name);
    char *text = runner_read_or_bail(path);
    free(path);
    return text;
}

/* A temporary csv file of a header and rows (caller unlinks and frees). */
static char *write_csv(const char *header, const char *rows)
{
    char *path = util_xstrdup("/tmp/servesim-trace-XXXXXX");
    FILE *f = fdopen(mkstemp(path), "w");
    fprintf(f, "%s\n%s", header, rows);
    fclose(f);
    return path;
}

char *support_write_trace(const char *rows)
{
    return write_csv("arrival_time_s,input_tokens,output_tokens", rows);
}

char *support_hash_trace(const char *rows, char *set, size_t size)
{
    char *path = write_csv("arrival_time_s,input_tokens,output_tokens,hash_ids", rows);
    snprintf(set, size, "workload.arrival.path=\"%s\"", path);
    return path;
}

int support_init(void)
{
    util_diag d;
    util_diag_init(&d);
    int rc = mdl_catalog_load_default(&support_catalog, &d);
    util_diag_print(&d, stdout, "# catalog");
    util_diag_fini(&d);
    return rc;
}

void support_fini(void)
{
    mdl_catalog_destroy(support_catalog);
}

int support_scenario(const char *json, const char *const *sets, sim_scenario *sc, char **errors)
{
    util_diag d;
    util_diag_init(&d);
    memset(sc, 0, sizeof *sc);
    cJSON *root = NULL;
    int rc = util_json_parse(json, "scenario", &root, &d);
    for (; !rc && sets && *sets; sets++) rc = util_json_set(root, *sets, &d);
    if (!rc) rc = sim_scenario_load(root, support_catalog, NULL, sc, &d);
    else cJSON_Delete(root);
    if (errors) *errors = util_diag_join(&d);
    else if (d.count) util_diag_print(&d, stdout, "# scenario");
    util_diag_fini(&d);
    return rc;
}

char *support_refusal(const char *json, const char *const *sets)
{
    sim_scenario sc;
    char *errors = NULL;
    int rc = support_scenario(json, sets, &sc, &errors);
    sim_scenario_fini(&sc); /* refused or not: the load leaves it to be finished */
    if (!rc) {
        free(errors);
        return NULL;
    }
    support_one_line(errors);
    return errors;
}

void support_one_line(char *s)
{
    for (; s && *s; s++)
        if (*s == '\n') *s = ' ';
}

static int keep_request(void *ctx, const sim_request_row *row)
{
    support_rows *r = ctx;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->req = util_xrealloc(r->req, r->cap * sizeof *r->req);
    }
    r->req[r->n++] = *row;
    if (r->stop_after > 0 && (int)r->n >= r->stop_after && r->stop_flag) *r->stop_flag = 1;
    return 0;
}

static int keep_replica(void *ctx, const sim_replica_row *row)
{
    support_rows *r = ctx;
    if (r->n_rep == 64) return 0;
    char (*names)[32] = r->rep_names[r->n_rep];
    snprintf(names[0], 32, "%s", row->pool);
    snprintf(names[1], 32, "%s", row->gpu);
    snprintf(names[2], 32, "%s", row->model);
    sim_replica_row *kept = &r->rep[r->n_rep++];
    *kept = *row;
    kept->pool = names[0];
    kept->gpu = names[1];
    kept->model = names[2];
    return 0;
}

static int keep_iteration(void *ctx, const sim_iteration_row *row)
{
    support_rows *r = ctx;
    if (r->n_it == r->cap_it) {
        r->cap_it = r->cap_it ? 2 * r->cap_it : 256;
        r->it = util_xrealloc(r->it, r->cap_it * sizeof *r->it);
    }
    r->it[r->n_it++] = *row;
    return 0;
}

sim_sink support_capture(support_rows *rows)
{
    return (sim_sink){.ctx = rows, .request = keep_request, .replica = keep_replica};
}

sim_sink support_capture_steps(support_rows *rows)
{
    sim_sink s = support_capture(rows);
    s.iteration = keep_iteration;
    return s;
}

void support_rows_fini(support_rows *rows)
{
    free(rows->req);
    free(rows->it);
    memset(rows, 0, sizeof *rows);
}

int support_run_rows(const sim_scenario *sc, support_rows *rows, int64_t *events)
{
    sim_sink sink = support_capture(rows);
    sim_engine *e = sim_engine_create(sc, &sink);
    sim_engine_limit_in_flight(e, 0); /* queues past capacity are what some tests study */
    int rc = sim_engine_run(e, rows->stop_flag, NULL, NULL);
    sim_progress p;
    sim_engine_progress(e, &p);
    if (events) *events = p.events;
    sim_engine_destroy(e);
    return rc;
}

int support_run(const char *json, const char *const *sets, support_rows *rows, int64_t *events)
{
    sim_scenario sc;
    memset(rows, 0, sizeof *rows);
    int rc = support_scenario(json, sets, &sc, NULL) ? -100 : support_run_rows(&sc, rows, events);
    sim_scenario_fini(&sc);
    return rc;
}

static bool same_number(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

bool support_rows_equal(const support_rows *a, const support_rows *b)
{
    if (a->n != b->n) return false;
    for (size_t i = 0; i < a->n; i++) {
        const sim_request_row *x = &a->req[i], *y = &b->req[i];
        if (x->id != y->id || strcmp(x->status, y->status) || x->replica != y->replica ||
            x->prompt_tokens != y->prompt_tokens || x->output_tokens != y->output_tokens ||
            x->preemptions != y->preemptions || x->cached_tokens != y->cached_tokens ||
            !same_number(x->arrival_s, y->arrival_s) ||
            !same_number(x->enqueue_s, y->enqueue_s) ||
            !same_number(x->first_scheduled_s, y->first_scheduled_s) ||
            !same_number(x->first_token_s, y->first_token_s) ||
            !same_number(x->finish_s, y->finish_s))
            return false;
    }
    return true;
}

const sim_request_row *support_row(const support_rows *rows, int64_t id)
{
    for (size_t i = 0; i < rows->n; i++)
        if (rows->req[i].id == id) return &rows->req[i];
    return NULL;
}

static sqlite3 *run_db(const sim_scenario *sc, int64_t *run_id, bool iterations)
{
    util_diag d;
    util_diag_init(&d);
    rec_recorder *rec = NULL;
    sqlite3 *db = NULL;
    if (rec_open(NULL, &rec, &d) || rec_begin(rec, sc, &d)) {
        util_diag_print(&d, stdout, "# recorder");
        goto done;
    }
    sim_sink sink = iterations ? rec_sink_with_iterations(rec) : rec_sink(rec);
    sim_engine *e = sim_engine_create(sc, &sink);
    sim_engine_limit_in_flight(e, 0);
    int rc = sim_engine_run(e, NULL, NULL, NULL);
    sim_progress p;
    sim_engine_progress(e, &p);
    sim_engine_destroy(e);
    rec_run_end end = {SIM_STATUS_COMPLETED, NULL, p.sim_s, 0, p.events};
    if (rc || rec_finish(rec, &end, &d)) {
        util_diag_print(&d, stdout, "# recorder");
        goto done;
    }
    *run_id = rec_run_id(rec);
    db = rec_release(rec);
    rec = NULL;
done:
    rec_close(rec);
    util_diag_fini(&d);
    return db;
}

sqlite3 *support_run_db(const sim_scenario *sc, int64_t *run_id)
{
    return run_db(sc, run_id, false);
}

sqlite3 *support_run_db_iterations(const sim_scenario *sc, int64_t *run_id)
{
    return run_db(sc, run_id, true);
}

sqlite3 *support_run_json(const char *json, const char *const *sets, bool iterations)
{
    sim_scenario sc;
    if (support_scenario(json, sets, &sc, NULL)) {
        sim_scenario_fini(&sc);
        return NULL;
    }
    int64_t run;
    sqlite3 *db = run_db(&sc, &run, iterations);
    sim_scenario_fini(&sc);
    return db;
}

double support_q1(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    double v = NAN;
    if (db && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_double(st, 0);
    else if (db && !st)
        printf("# %s: %s\n", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return v;
}

double support_batch_se(sqlite3 *db, const char *cond, double duration, int batches)
{
    char *sql = util_xasprintf("WITH b AS (SELECT avg(%s) p FROM requests GROUP BY "
                               "CAST(arrival_s * %d / %.17g AS INT)) SELECT (sum(p * p) - "
                               "sum(p) * sum(p) / count(*)) / (count(*) - 1) / count(*) FROM b",
                               cond, batches, duration);
    double var = support_q1(db, sql);
    free(sql);
    return sqrt(var);
}
