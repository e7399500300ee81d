/*
 * test_sessions.c: workload.sessions, multi-turn chat, checked on whole
 * runs from the database -- each turn's prompt is the last turn's prompt,
 * its reply and the user's new tokens (cut to history.max_tokens), turns
 * are think_s apart, the prefix cache hits the history and loses what a
 * cut history no longer starts with, `report --by session` against
 * SQL over the rows, and router session_affinity keeping a session on one
 * replica until its queue reaches cluster.session_queue_threshold.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

#include "support.h"
#include "tap.h"

static char *base; /* tests/scenarios/clients-base.json: tiny requests, a linear model */

#define TURNS                                                                                      \
    "workload.sessions={\"turns\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 6}, "             \
    "\"user_tokens\": {\"dist\": \"fixed\", \"value\": 30}, "
#define SESSIONS TURNS "\"think_s\": {\"dist\": \"fixed\", \"value\": 0.5}"
#define FULL SESSIONS "}"
#define CUT SESSIONS ", \"history\": {\"max_tokens\": 250}}"

/* Consecutive turns of a session: a (turn k - 1) and b (turn k). */
#define PAIRS " FROM requests a JOIN requests b ON a.task_id = b.task_id" \
              " AND b.call_index = a.call_index + 1"

static void test_full_history(void)
{
    sqlite3 *db = support_run_json(base, (const char *[]){"stop.requests=500", FULL, NULL}, false);
    ok(db != NULL, "full history: ran");
    if (!db) return;
    double pairs = support_q1(db, "SELECT count(*)" PAIRS);
    double rows = support_q1(db, "SELECT count(*) FROM requests");
    is_near(support_q1(db, "SELECT count(*) FROM tasks"), 500, 0, "500 sessions");
    is_near(pairs, rows - 500, 0, "every turn after the first follows one (%g of %g)", pairs,
            rows);
    is_near(support_q1(db, "SELECT count(*)" PAIRS
                           " WHERE b.prompt_tokens <> a.prompt_tokens + a.output_tokens + 30"),
            0, 0, "turn k's prompt = turn k-1's prompt + its reply + 30 new tokens");
    is_near(support_q1(db, "SELECT max(abs(b.arrival_s - a.finish_s - 0.5))" PAIRS), 0, 1e-9,
            "each turn is sent think_s = 0.5 s after the last one's reply");
    is_near(support_q1(db, "SELECT min(calls) FROM tasks"), 1, 0, "turns from 1 ...");
    is_near(support_q1(db, "SELECT max(calls) FROM tasks"), 6, 0, "... to 6");
    is_near(support_q1(db, "SELECT count(*) FROM tasks t WHERE calls <> (SELECT count(*) FROM"
                           " requests r WHERE r.task_id = t.id)"),
            0, 0, "a session's row counts its turns");
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE call_index = 0 AND"
                           " prompt_tokens <> 100"),
            0, 0, "the first turn's prompt is prompt_tokens' draw");
    sqlite3_close(db);
}

static void test_truncated_history(void)
{
    sqlite3 *db = support_run_json(base, (const char *[]){"stop.requests=500", CUT, NULL}, false);
    ok(db != NULL, "truncated history: ran");
    if (!db) return;
    is_near(support_q1(db, "SELECT count(*)" PAIRS " WHERE b.prompt_tokens <>"
                           " min(a.prompt_tokens + a.output_tokens + 30, 250)"),
            0, 0, "turn k's prompt = min(last prompt + reply + 30, max_tokens 250)");
    ok(support_q1(db, "SELECT count(*) FROM requests WHERE prompt_tokens = 250") > 100,
       "and many turns are cut");
    is_near(support_q1(db, "SELECT max(prompt_tokens) FROM requests"), 250, 0,
            "none is longer than 250");
    sqlite3_close(db);
}

/* With one replica and a cache that holds everything, turn k finds turn
 * k-1's prompt and reply cached -- but the block holding the reply's last
 * token, whose KV was never computed, and the last partial block. */
static void test_prefix_hits(void)
{
    const char *one[] = {"stop.requests=300", "cluster.replicas=1",
                         "cluster.scheduler.prefix_caching=true", FULL, NULL};
    sqlite3 *db = support_run_json(base, one, false);
    ok(db != NULL, "prefix caching, full history: ran");
    if (!db) return;
    double hit = support_q1(db, "SELECT 1.0 * sum(cached_tokens) / sum(prompt_tokens) FROM"
                                " requests WHERE call_index > 0");
    double history = support_q1(db, "SELECT 1.0 * sum(a.prompt_tokens + a.output_tokens) /"
                                    " sum(b.prompt_tokens)" PAIRS);
    is_near(hit, history, 0.05, "turns 2+: hit rate %.3f, close to history / prompt %.3f", hit,
            history);
    is_near(support_q1(db, "SELECT count(*)" PAIRS " WHERE b.cached_tokens <"
                           " a.prompt_tokens + a.output_tokens - 32 OR b.cached_tokens >"
                           " a.prompt_tokens + a.output_tokens"),
            0, 0, "each turn's cached tokens are its history's, within two 16-token blocks");
    is_near(support_q1(db, "SELECT sum(cached_tokens) FROM requests WHERE call_index = 0"), 0, 0,
            "a first turn (distinct prompts) hits nothing");
    sqlite3_close(db);

    const char *cut[] = {"stop.requests=300", "cluster.replicas=1",
                         "cluster.scheduler.prefix_caching=true", CUT, NULL};
    db = support_run_json(base, cut, false);
    ok(db != NULL, "prefix caching, history cut: ran");
    if (!db) return;
    is_near(support_q1(db, "SELECT sum(b.cached_tokens)" PAIRS " WHERE b.prompt_tokens <"
                           " a.prompt_tokens + a.output_tokens + 30"),
            0, 0, "a turn whose history was cut at its front hits nothing");
    double kept = support_q1(db, "SELECT 1.0 * sum(b.cached_tokens) / sum(b.prompt_tokens)" PAIRS
                                 " WHERE b.prompt_tokens = a.prompt_tokens + a.output_tokens + 30");
    double cut_hit = support_q1(db, "SELECT 1.0 * sum(cached_tokens) / sum(prompt_tokens) FROM"
                                    " requests WHERE call_index > 0");
    ok(kept > 0.7, "an uncut turn still hits its history (%.3f)", kept);
    ok(cut_hit < hit - 0.2, "turns 2+: hit rate %.3f with the cut, %.3f without", cut_hit, hit);
    sqlite3_close(db);
}

/* Sessions in their think time outnumber what a GPU cache of 200 blocks
 * holds: without a tier their histories are evicted before the next turn;
 * with cluster.kv_offload's CPU tier the next turn loads them back. */
static void test_offload_tier(void)
{
    const char *sets[] = {"stop.requests=400", "cluster.replicas=1",
                          "cluster.scheduler.prefix_caching=true", "cluster.scheduler.kv_blocks=200",
                          TURNS "\"think_s\": {\"dist\": \"fixed\", \"value\": 2}}", NULL,
                          NULL};
    const char *hit = "SELECT 1.0 * sum(cached_tokens) / sum(prompt_tokens) FROM requests"
                      " WHERE call_index > 0";
    sqlite3 *gpu = support_run_json(base, sets, false);
    sets[5] = "cluster.kv_offload={\"cpu_gib\": 4}";
    sqlite3 *cpu = support_run_json(base, sets, false);
    ok(gpu && cpu, "a small GPU cache, without and with a CPU tier: ran");
    if (gpu && cpu) {
        double g = support_q1(gpu, hit), c = support_q1(cpu, hit);
        ok(c > 0.7 && c > g + 0.3, "turns 2+: hit rate %.3f with the tier, %.3f without", c, g);
        ok(support_q1(cpu, "SELECT cpu_loaded_bytes FROM replicas") > 0,
           "the tier loaded the histories back");
    }
    sqlite3_close(gpu);
    sqlite3_close(cpu);
}

/* report --by session against SQL over the rows. */
static void test_report_by_session(void)
{
    const char *sets[] = {"stop.requests=400", "cluster.replicas=1", "warmup_s=2",
                          "cluster.scheduler.prefix_caching=true", FULL, NULL};
    sqlite3 *db = support_run_json(base, sets, false);
    ok(db != NULL, "report --by session: ran");
    if (!db) return;
    an_options opt = {.by_session = true};
    an_report r;
    util_diag d;
    util_diag_init(&d);
    int rc = an_report_compute_with(db, 1, &opt, &r, &d);
    util_diag_print(&d, stdout, "# report");
    util_diag_fini(&d);
    ok(rc == UTIL_OK, "the report is computed");
    if (rc) {
        sqlite3_close(db);
        return;
    }
    is_int(r.n_turns, 6, "six turn numbers");
    for (int i = 0; i < r.n_turns; i++) {
        const an_turn *t = &r.turns[i];
        char sql[512];
        const char *where = "FROM requests WHERE run_id = 1 AND arrival_s >= 2 AND call_index = ";
        snprintf(sql, sizeof sql, "SELECT count(*) %s%d", where, i);
        is_int(t->turn, i + 1, "turn %d", i + 1);
        is_near((double)t->requests, support_q1(db, sql), 0, "turn %d: requests", i + 1);
        snprintf(sql, sizeof sql, "SELECT avg(prompt_tokens) %s%d", where, i);
        is_near(t->mean_prompt, support_q1(db, sql), 1e-9, "turn %d: mean prompt", i + 1);
        snprintf(sql, sizeof sql, "SELECT 1.0 * sum(cached_tokens) / sum(prompt_tokens) %s%d",
                 where, i);
        is_near(t->hit_rate, support_q1(db, sql), 1e-12, "turn %d: hit rate %.4f", i + 1,
                t->hit_rate);
        /* the TTFTs, sorted, through gsl's quantile */
        snprintf(sql, sizeof sql, "SELECT first_token_s - arrival_s AS x %s%d AND status ="
                 " 'completed' ORDER BY x", where, i);
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        size_t n = 0, cap = 64;
        double *v = malloc(cap * sizeof *v);
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
            v[n++] = sqlite3_column_double(st, 0);
        }
        sqlite3_finalize(st);
        is_int(t->completed, (int64_t)n, "turn %d: %zu TTFTs", i + 1, n);
        if (n) {
            is_near(t->ttft_p50, gsl_stats_quantile_from_sorted_data(v, 1, n, 0.5), 1e-12,
                    "turn %d: TTFT P50", i + 1);
            is_near(t->ttft_p99, gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99), 1e-12,
                    "turn %d: TTFT P99", i + 1);
        }
        free(v);
    }
    ok(r.n_turns > 1 && r.turns[1].hit_rate > 0.5, "turn 2 hits its history");
    an_report_fini(&r);
    sqlite3_close(db);

    db = support_run_json(base, (const char *[]){"stop.requests=50", NULL}, false);
    util_diag_init(&d);
    rc = db ? an_report_compute_with(db, 1, &opt, &r, &d) : UTIL_EFAIL;
    util_diag_fini(&d);
    ok(rc == UTIL_OK && r.n_turns == 0, "a run without sessions has no turns");
    if (rc == UTIL_OK) an_report_fini(&r);
    sqlite3_close(db);
}

/* A class's own sessions beside a class of single calls: only its
 * requests are turns. */
static void test_class_sessions(void)
{
    const char *sets[] = {
        "stop.requests=300",
        "workload.classes=[{\"name\": \"chat\", \"weight\": 1, \"sessions\": {\"turns\": 3, "
        "\"user_tokens\": 10}}, {\"name\": \"plain\", \"weight\": 1}]",
        NULL};
    sqlite3 *db = support_run_json(base, sets, false);
    ok(db != NULL, "a class of sessions: ran");
    if (!db) return;
    is_near(support_q1(db, "SELECT count(*) FROM requests WHERE class = 'plain' AND"
                           " task_id IS NOT NULL"),
            0, 0, "the plain class's requests are single calls");
    double chats = support_q1(db, "SELECT count(*) FROM tasks WHERE class = 'chat'");
    an_options opt = {.by_session = true};
    an_report r;
    util_diag d;
    util_diag_init(&d);
    int rc = an_report_compute_with(db, 1, &opt, &r, &d);
    util_diag_fini(&d);
    ok(rc == UTIL_OK && r.n_turns == 3, "three turn numbers");
    if (rc == UTIL_OK) {
        for (int i = 0; i < r.n_turns; i++)
            is_near((double)r.turns[i].requests, chats, 0, "turn %d: one per chat session (%g)",
                    i + 1, chats);
        an_report_fini(&r);
    }
    sqlite3_close(db);
}

/* Sessions whose turns went to more than one replica. */
#define MOVED                                                                                      \
    "SELECT count(*) FROM (SELECT task_id FROM requests WHERE task_id IS NOT NULL GROUP BY"       \
    " task_id HAVING count(DISTINCT replica) > 1)"
#define AFFINITY "cluster.router=\"session_affinity\""

/* Light load on four replicas (no queue near the default threshold, 128):
 * under session_affinity every session stays where its first turn went,
 * and the first turns spread; under round_robin sessions wander. */
static void test_affinity_sticks(void)
{
    const char *sets[] = {"stop.requests=500", "cluster.replicas=4", AFFINITY, FULL, NULL};
    sqlite3 *db = support_run_json(base, sets, false);
    sets[2] = "cluster.router=\"round_robin\"";
    sqlite3 *rr = support_run_json(base, sets, false);
    ok(db && rr, "session_affinity and round_robin on four replicas: ran");
    if (db && rr) {
        is_near(support_q1(db, MOVED), 0, 0, "session_affinity: every session on one replica");
        is_near(support_q1(db, "SELECT count(DISTINCT replica) FROM requests"), 4, 0,
                "the sessions spread over the four replicas");
        cmp_ok(support_q1(rr, MOVED), >, 100, "round_robin: %g sessions span replicas",
               support_q1(rr, MOVED));
    }
    sqlite3_close(db);
    sqlite3_close(rr);
}

/* A replica with session_queue_threshold requests waiting loses the
 * session: at 0 every call goes by load, as least_outstanding routes; at 1,
 * with one request per batch and queues forming, sessions move, where at
 * the default 128 none does. */
static void test_affinity_moves(void)
{
    const char *zero[] = {"stop.requests=500", "cluster.replicas=4", FULL, AFFINITY,
                          "cluster.session_queue_threshold=0", NULL};
    support_rows a = {0}, b = {0};
    int64_t events;
    int rc = support_run(base, zero, &a, &events);
    zero[3] = "cluster.router=\"least_outstanding\"", zero[4] = NULL;
    rc |= support_run(base, zero, &b, &events);
    ok(rc == 0 && support_rows_equal(&a, &b),
       "threshold 0: every request row as under least_outstanding (%zu rows)", a.n);
    support_rows_fini(&a);
    support_rows_fini(&b);

    const char *busy[] = {"stop.requests=1000", "cluster.replicas=4", FULL, AFFINITY,
                          "cluster.scheduler.max_batch=1", "cluster.session_queue_threshold=1",
                          NULL};
    sqlite3 *one = support_run_json(base, busy, false);
    busy[5] = NULL;
    sqlite3 *dflt = support_run_json(base, busy, false);
    ok(one && dflt, "queues forming, thresholds 1 and 128: ran");
    if (one && dflt) {
        cmp_ok(support_q1(one, MOVED), >, 0, "threshold 1: %g sessions moved",
               support_q1(one, MOVED));
        is_near(support_q1(dflt, MOVED), 0, 0, "threshold 128: none moved");
    }
    sqlite3_close(one);
    sqlite3_close(dflt);
}

/* Disaggregated, the affinity is the prefill pool's (where the history is
 * cached): a session keeps its prefill replica, and its KV goes to the
 * decode replica with the fewest in flight. */
static void test_affinity_disaggregated(void)
{
    const char *sets[] = {"stop.requests=300", "cluster.replicas=2", FULL, AFFINITY,
                          "cluster.pools=[{\"name\": \"p\"}, {\"name\": \"d\"}]",
                          "cluster.disaggregated={\"prefill\": \"p\", \"decode\": \"d\", "
                          "\"link_gbs\": 50, \"link_latency_s\": 0.0001}",
                          NULL};
    sqlite3 *db = support_run_json(base, sets, false);
    ok(db != NULL, "disaggregated: ran");
    if (!db) return;
    is_near(support_q1(db, MOVED), 0, 0, "every session on one prefill replica");
    is_near(support_q1(db, "SELECT count(DISTINCT replica) FROM requests"), 2, 0,
            "the sessions spread over both");
    cmp_ok(support_q1(db, "SELECT count(*) FROM (SELECT task_id FROM requests WHERE task_id IS"
                          " NOT NULL GROUP BY task_id HAVING count(DISTINCT decode_replica) > 1)"),
           >, 0, "the decode replicas go by load: some sessions decode on both");
    sqlite3_close(db);
}

/* With prefix caching on four replicas, a session that stays finds its
 * history cached as on one replica (test_prefix_hits); round_robin sends
 * most turns where the history is not. */
static void test_affinity_hits(void)
{
    const char *sets[] = {"stop.requests=500", "cluster.replicas=4",
                          "cluster.scheduler.prefix_caching=true", FULL, AFFINITY, NULL};
    const char *hit = "SELECT 1.0 * sum(cached_tokens) / sum(prompt_tokens) FROM requests"
                      " WHERE call_index > 0";
    sqlite3 *db = support_run_json(base, sets, false);
    sets[4] = "cluster.router=\"round_robin\"";
    sqlite3 *rr = support_run_json(base, sets, false);
    ok(db && rr, "prefix caching on four replicas: ran");
    if (db && rr) {
        double history = support_q1(db, "SELECT 1.0 * sum(a.prompt_tokens + a.output_tokens) /"
                                        " sum(b.prompt_tokens)" PAIRS);
        double h = support_q1(db, hit), h_rr = support_q1(rr, hit);
        is_near(h, history, 0.05, "session_affinity: turns 2+ hit %.3f, history / prompt %.3f",
                h, history);
        cmp_ok(h, >, h_rr, "above round_robin's %.3f", h_rr);
    }
    sqlite3_close(db);
    sqlite3_close(rr);
}

static void test_refused(void)
{
    static const char *const bad[] = {
        "workload.sessions={\"turns\": 3}",                              /* no user_tokens */
        "workload.sessions={\"turns\": 3, \"user_tokens\": 5, \"history\": \"some\"}",
        "workload.sessions={\"turns\": 3, \"user_tokens\": 5, \"history\": {\"max_tokens\": 0}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sqlite3 *db = support_run_json(base, (const char *[]){bad[i], NULL}, false);
        ok(db == NULL, "refused: %s", bad[i]);
        sqlite3_close(db);
    }
    sqlite3 *db = support_run_json(
        base, (const char *[]){FULL, "workload.agent={\"mode\": \"parallel\", \"calls\": 2}", NULL},
        false);
    ok(db == NULL, "refused: sessions beside an agent at one level");
    sqlite3_close(db);
    char *why = support_refusal(base, (const char *[]){"cluster.session_queue_threshold=4", NULL});
    ok(why && strstr(why, "cluster.session_queue_threshold:") && strstr(why, "round_robin"),
       "refused, naming the key and the router: %s", why ? why : "(loaded)");
    free(why);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (support_init()) {
        printf("Bail out! support_init\n");
        return 1;
    }
    base = support_scenario_text("clients-base.json");
    test_full_history();
    test_truncated_history();
    test_prefix_hits();
    test_offload_tier();
    test_report_by_session();
    test_class_sessions();
    test_affinity_sticks();
    test_affinity_moves();
    test_affinity_hits();
    test_affinity_disaggregated();
    test_refused();
    free(base);
    support_fini();
    return tap_done();
}
