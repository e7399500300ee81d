/*
 * models.c: a fleet's models for `report --by model` -- which replicas
 * serve each (replicas.model, as the pools resolved it) and which classes
 * are each one's (the stored scenario's workload.classes[].model).  A
 * request's model is its class's: the engine routes a class only to its
 * model's pools, so the class says it exactly, rejected requests (which
 * have no replica) included, and the database needs no column for it.
 * scan.c fills each model's request section in its one pass; each model's
 * attainment then sums its classes', as the run's does.
 */
#include "an_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int model_index(const an_report *r, const char *id)
{
    for (int m = 0; m < r->n_models; m++)
        if (!strcmp(r->models[m].id, id)) return m;
    return -1;
}

/* id's index, a new model when no replica serves it (a database not
 * written by this engine: its section has no GPUs). */
static int model_add(an_report *r, const char *id)
{
    int m = model_index(r, id);
    if (m >= 0) return m;
    r->models = util_xrealloc(r->models, (size_t)(r->n_models + 1) * sizeof *r->models);
    r->models[r->n_models] = (an_model){.id = util_xstrdup(id)};
    r->models[r->n_models].req.slo = (an_slo){NAN, NAN, NAN, NAN, false}; /* its classes' */
    return r->n_models++;
}

/* The models in the order of their first replica, with their replicas,
 * GPUs and what those cost an hour (kept in usd until the window is known). */
static int load_replicas(const an__query *q, an_report *r, util_diag *d)
{
    sqlite3_stmt *st = an__prepare(q, "SELECT model, count(*), total(gpus),"
                                      " total(gpus * usd_per_gpu_hour) FROM replicas"
                                      " WHERE run_id = ?1 GROUP BY model ORDER BY min(replica)");
    if (!st) return an__db_fail(q->db, d, "cannot query");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *id = sqlite3_column_text(st, 0);
        int k = model_add(r, id ? (const char *)id : "");
        an_model *m = &r->models[k];
        m->replicas = sqlite3_column_int(st, 1);
        m->gpus = (int)sqlite3_column_double(st, 2);
        m->usd = sqlite3_column_double(st, 3);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK : an__db_fail(q->db, d, "cannot query");
}

/* The model a class without one is for: the fleet's only one -- the first
 * replica's, or disaggregated, the first of the pools that is not the
 * decode pool (the fleet serves the prefill pool's model). */
static int default_model(const an_report *r)
{
    for (int i = 0; i < r->n_replicas; i++) {
        const an_use *u = &r->replicas[i];
        if (!r->decode_pool || !u->pool || strcmp(u->pool, r->decode_pool)) return i;
    }
    return -1;
}

static int first_model_of(const an__query *q, int replica, an_report *r, util_diag *d)
{
    if (replica < 0) return r->n_models ? 0 : -1;
    char *sql = util_xasprintf("SELECT model FROM replicas WHERE run_id = ?1 AND replica = %d",
                               r->replicas[replica].replica);
    sqlite3_stmt *st = an__prepare(q, sql);
    free(sql);
    if (!st) return an__db_fail(q->db, d, "cannot query"), -2;
    int m = -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        m = model_index(r, (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return m;
}

int an__models_begin(const an__query *q, const cJSON *sc, an_report *r, util_diag *d)
{
    int rc = load_replicas(q, r, d);
    if (rc) return rc;
    int fallback = first_model_of(q, default_model(r), r, d);
    if (fallback == -2) return UTIL_EFAIL;
    const cJSON *list = util_json_get(sc, "workload.classes");
    r->model_of_class = util_xcalloc((size_t)r->n_classes, sizeof *r->model_of_class);
    for (int i = 0; i < r->n_classes; i++) {
        const cJSON *c = r->has_classes ? cJSON_GetArrayItem(list, i) : NULL;
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "model"));
        r->model_of_class[i] = id ? model_add(r, id) : fallback;
    }
    return UTIL_OK;
}

/* A model's cost over the run's window, as usage.c's cluster's. */
static void model_cost(an_model *m, const an_report *r)
{
    double hours = r->req.window_s / 3600;
    m->usd *= hours * (1 + r->cost.overhead_fraction);
    m->usd_per_million_output_tokens = an__ratio(m->usd, m->req.output_tokens / 1e6);
    m->usd_per_million_total_tokens =
        an__ratio(m->usd, (m->req.input_tokens + m->req.output_tokens) / 1e6);
    m->usd_per_request = an__ratio(m->usd, (double)m->req.measured);
}

void an__models_end(an_report *r)
{
    for (int m = 0; m < r->n_models; m++) {
        an_section *s = &r->models[m].req;
        bool any_slo = false;
        s->good = 0;
        for (int i = 0; i < r->n_classes; i++) {
            if (r->model_of_class[i] != m) continue;
            s->good += r->classes[i].req.good;
            any_slo |= r->classes[i].req.slo.set;
        }
        an__set_attainment(s, any_slo);
        model_cost(&r->models[m], r);
    }
}

void an__models_fini(an_report *r)
{
    for (int m = 0; m < r->n_models; m++) free(r->models[m].id);
    free(r->models);
    free(r->model_of_class);
    r->models = NULL;
    r->model_of_class = NULL;
    r->n_models = 0;
}
