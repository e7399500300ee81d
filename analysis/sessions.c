/*
 * sessions.c: `report --by session` -- the run's chat sessions
 * (workload.sessions) turn by turn: how many requests each turn number
 * sent, the mean prompt (the history sent and the user's new tokens), the
 * prefix cache's hit rate and the TTFT's P50 and P99.
 *
 * A session is a task (the tasks table) and its turns are its calls, so a
 * request's turn is requests.call_index + 1 and the database needs no
 * column for it.  Which classes are sessions the stored scenario says: a
 * class's own `sessions` (or `agent`), else the workload's, as
 * workloads/spec.c reads them.  Two queries over the run's requests, sent
 * after warm-up: one grouped by turn for the counts and token sums, one
 * ordered by turn and TTFT, streamed, for the percentiles -- SQLite sorts,
 * so memory is per turn number, not per request.
 */
#include "an_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether the workload-level object or a class object o makes sessions:
 * its own sessions, else (not an agent of its own) the fallback. */
static bool session_level(const cJSON *o, bool fallback)
{
    if (cJSON_GetObjectItemCaseSensitive(o, "sessions")) return true;
    if (cJSON_GetObjectItemCaseSensitive(o, "agent")) return false;
    return fallback;
}

/* "class IN ('a', 'b')" over the session classes of sc, or NULL: none. */
static char *session_filter(const cJSON *sc)
{
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(sc, "workload");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(w, "classes"), *c;
    bool workload = session_level(w, false);
    char *sql = NULL;
    if (!list) return workload ? sqlite3_mprintf("class = 'default'") : NULL;
    cJSON_ArrayForEach(c, list) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
        if (!cJSON_IsString(name) || !session_level(c, workload)) continue;
        char *more = sqlite3_mprintf("%s%s%Q", sql ? sql : "class IN (", sql ? ", " : "",
                                     name->valuestring);
        sqlite3_free(sql);
        sql = more;
    }
    if (!sql) return NULL;
    char *done = sqlite3_mprintf("%s)", sql);
    sqlite3_free(sql);
    return done;
}

/* gsl_stats_quantile_from_sorted_data's interpolation point of q over n. */
static void point(double q, int64_t n, int64_t *lhs, double *delta)
{
    double index = q * (double)(n - 1);
    *lhs = (int64_t)index;
    *delta = index - (double)*lhs;
}

/* One quantile as the sorted values stream past: v is the value of rank i. */
typedef struct quantile {
    int64_t lhs;
    double delta, lo, out;
} quantile;

static void quantile_start(quantile *k, double q, int64_t n)
{
    point(q, n, &k->lhs, &k->delta);
    k->lo = k->out = NAN;
}

static void quantile_see(quantile *k, int64_t i, double v)
{
    if (i == k->lhs) k->lo = k->out = v; /* the last rank: no neighbour, delta 0 */
    else if (i == k->lhs + 1) k->out = k->lo + k->delta * (v - k->lo);
}

static int load_turns(const an__query *q, const char *filter, an_report *r, util_diag *d)
{
    char *sql = sqlite3_mprintf(
        "SELECT call_index, count(*), avg(prompt_tokens),"
        " total(CASE WHEN first_scheduled_s IS NOT NULL THEN prompt_tokens END),"
        " total(CASE WHEN first_scheduled_s IS NOT NULL THEN cached_tokens END),"
        " total(status = 'completed' AND first_token_s IS NOT NULL)"
        " FROM requests WHERE run_id = ?1 AND arrival_s >= ?2 AND task_id IS NOT NULL"
        " AND call_index >= 0 AND %s%s GROUP BY call_index ORDER BY call_index", filter,
        an__counted(q->schema)); /* a retried attempt is not its turn's outcome */
    sqlite3_stmt *st = an__prepare(q, sql);
    sqlite3_free(sql);
    if (!st) return an__db_fail(q->db, d, "cannot query");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        r->turns = util_xrealloc(r->turns, (size_t)(r->n_turns + 1) * sizeof *r->turns);
        an_turn *t = &r->turns[r->n_turns++];
        *t = (an_turn){.turn = sqlite3_column_int(st, 0) + 1,
                       .requests = sqlite3_column_int64(st, 1),
                       .mean_prompt = an__column_num(st, 2),
                       .prompt_scheduled = (int64_t)sqlite3_column_double(st, 3),
                       .cached = (int64_t)sqlite3_column_double(st, 4),
                       .completed = (int64_t)sqlite3_column_double(st, 5),
                       .ttft_p50 = NAN, .ttft_p99 = NAN};
        t->hit_rate = t->prompt_scheduled > 0 ? (double)t->cached / (double)t->prompt_scheduled
                                              : NAN;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK : an__db_fail(q->db, d, "cannot query");
}

/* The TTFTs of each turn's completed requests, in order, through the two
 * quantiles. */
static int load_ttft(const an__query *q, const char *filter, an_report *r, util_diag *d)
{
    char *sql = sqlite3_mprintf(
        "SELECT call_index, first_token_s - arrival_s AS ttft FROM requests"
        " WHERE run_id = ?1 AND arrival_s >= ?2 AND task_id IS NOT NULL AND call_index >= 0"
        " AND %s AND status = 'completed' AND first_token_s IS NOT NULL%s"
        " ORDER BY call_index, ttft", filter, an__counted(q->schema));
    sqlite3_stmt *st = an__prepare(q, sql);
    sqlite3_free(sql);
    if (!st) return an__db_fail(q->db, d, "cannot query");
    int rc, k = -1;
    int64_t i = 0;
    quantile p50 = {0}, p99 = {0};
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int turn = sqlite3_column_int(st, 0) + 1;
        if (k < 0 || r->turns[k].turn != turn) {
            if (k >= 0) {
                r->turns[k].ttft_p50 = p50.out;
                r->turns[k].ttft_p99 = p99.out;
            }
            for (k = k + 1; k < r->n_turns && r->turns[k].turn != turn; k++) {}
            if (k >= r->n_turns) break; /* the rows changed between the queries */
            quantile_start(&p50, 0.5, r->turns[k].completed);
            quantile_start(&p99, 0.99, r->turns[k].completed);
            i = 0;
        }
        double v = sqlite3_column_double(st, 1);
        quantile_see(&p50, i, v);
        quantile_see(&p99, i, v);
        i++;
    }
    if (k >= 0 && k < r->n_turns) {
        r->turns[k].ttft_p50 = p50.out;
        r->turns[k].ttft_p99 = p99.out;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? UTIL_OK
                                                 : an__db_fail(q->db, d, "cannot query");
}

int an__sessions_load(const an__query *q, const cJSON *sc, an_report *r, util_diag *d)
{
    char *filter = session_filter(sc);
    if (!filter) return UTIL_OK; /* no sessions: no turns */
    int rc = load_turns(q, filter, r, d);
    if (!rc) rc = load_ttft(q, filter, r, d);
    sqlite3_free(filter);
    return rc;
}
