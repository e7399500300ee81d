/*
 * test_gateway.c: cluster.gateway and workload.retry -- every refusal a
 * row with its reason and the report's counts theirs; a tenant's token
 * bucket held to the token (the test keeps its own bucket over the rows);
 * a tenant's share of the batch slots held and reached; the gateway's queue
 * within its capacity and its time-to-live; shedding only of the sheddable
 * tiers; retries linked to the attempts they retry, waiting their backoff,
 * and each call counted once; and the keys' bad input.
 *
 * tests/scenarios/gateway.json: one H100 replica of 16 batch slots, no
 * front-end time (a request dispatched by the gateway reaches the replica's
 * queue at that instant, so a row's enqueue_s is its dispatch), and three
 * classes: chat (critical, tenant acme with a bucket of 8,000 input tokens
 * a second and 12,000 of burst), batch (sheddable) and std (standard), both
 * of tenant beta with a quarter of the slots; 20 requests a second, more
 * than the replica serves, so every reason shows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "tap.h"

#define RATE 8000.0  /* acme's bucket, tokens a second */
#define BURST 12000.0
#define SLOTS 16
#define SHARE 0.25
#define CAPACITY 40
#define TTL_S 10.0

static double q1(sqlite3 *db, const char *sql)
{
    return support_q1(db, sql);
}

/* Every rejected row has a reason the gateway (or the replica) gives, and
 * the report's rejected and shed counts are the rows'. */
static void test_reasons(sqlite3 *db)
{
    ok(q1(db, "SELECT count(*) FROM requests WHERE status = 'rejected' AND reason NOT IN "
              "('shed', 'queue_full', 'ttl', 'budget')") == 0,
       "every rejection has one of the gateway's reasons");
    ok(q1(db, "SELECT count(*) FROM requests WHERE status <> 'rejected' AND reason IS NOT NULL") ==
           0, "and only rejections have a reason");
    static const char *const reasons[] = {"shed", "queue_full", "ttl", "budget"};
    for (int i = 0; i < 4; i++) {
        char *sql = util_xasprintf("SELECT count(*) FROM requests WHERE reason = '%s'", reasons[i]);
        cmp_ok(q1(db, sql), >, 0, "some requests are refused for %s", reasons[i]);
        free(sql);
    }
    ok(q1(db, "SELECT count(*) FROM requests WHERE reason = 'shed' AND priority < 2") == 0,
       "only the sheddable tiers are shed");
    ok(q1(db, "SELECT count(*) FROM requests WHERE reason = 'budget' AND tenant <> 'acme'") == 0,
       "only the tenant with a bucket is over its budget");
    an_report r;
    util_diag d;
    util_diag_init(&d);
    an_options opt = {.by_tier = true};
    if (!ok(!an_report_compute_with(db, 1, &opt, &r, &d), "the report by tier computes")) {
        util_diag_fini(&d);
        return;
    }
    is_int(r.req.rejected, (int64_t)q1(db, "SELECT count(*) FROM requests WHERE status = "
                                           "'rejected'"), "the report's rejected: the rows'");
    is_int(r.req.shed, (int64_t)q1(db, "SELECT count(*) FROM requests WHERE reason = 'shed'"),
           "its shed: the rows shed");
    for (int i = 0; i < r.n_tiers; i++)
        if (!strcmp(r.tiers[i].name, "sheddable"))
            is_near(r.tiers[i].shed_share,
                    q1(db, "SELECT avg(coalesce(reason, '') = 'shed') FROM requests WHERE priority "
                          "= 2"), 1e-15,
                    "the sheddable tier's shed share: its rows shed over its rows");
    an_report_fini(&r);
    util_diag_fini(&d);
}

/* acme's bucket, kept here over its rows in arrival order (the gateway
 * sees a request at its arrival: no pre-model delay): a request is
 * refused for its budget exactly when the bucket holds fewer tokens than
 * its prompt, and what passes never exceeds the burst plus the refill. */
static void test_bucket(sqlite3 *db)
{
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT arrival_s, prompt_tokens, reason = 'budget' FROM requests "
                           "WHERE tenant = 'acme' ORDER BY arrival_s, id", -1, &st, NULL);
    double level = BURST, last = 0, taken = 0, worst = -INFINITY;
    int64_t n = 0, agree = 0, refused = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        double t = sqlite3_column_double(st, 0), p = sqlite3_column_double(st, 1);
        bool budget = sqlite3_column_int(st, 2);
        level = fmin(BURST, level + RATE * (t - last));
        last = t;
        bool fits = level >= p;
        if (fits) level -= p, taken += p;
        n++;
        agree += fits == !budget;
        refused += budget;
        worst = fmax(worst, taken - (BURST + RATE * t));
    }
    sqlite3_finalize(st);
    cmp_ok(refused, >, 10, "acme is over its budget at times (%lld of %lld)", (long long)refused,
           (long long)n);
    is_int(agree, n, "each of acme's requests refused exactly when its bucket lacked its prompt");
    /* a nanosecond's refill is 8e-6 tokens: the engine's clock is ns */
    cmp_ok(worst, <=, 1e-3, "what passed is within 12,000 + 8,000 t tokens at every arrival");
}

/* The most rows "in" at once, from a query of (time, +1 or -1) rows in
 * time order, leaves before joins at one instant. */
static int64_t most_at_once(sqlite3 *db, char *sql)
{
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    free(sql);
    int64_t now = 0, most = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        now += sqlite3_column_int(st, 1);
        if (now > most) most = now;
    }
    sqlite3_finalize(st);
    return most;
}

/* The most of a tenant's requests between their dispatch (enqueue_s) and
 * the engine's end of them (the gateway frees a slot then; the row's
 * finish_s is the client's, host.output_s later), at any instant; ends
 * before dispatches at one instant. */
static int64_t most_in_flight(sqlite3 *db, const char *tenant)
{
    char *sql = util_xasprintf(
        "SELECT t, d FROM (SELECT enqueue_s AS t, 1 AS d FROM requests WHERE tenant = '%s' AND "
        "enqueue_s IS NOT NULL UNION ALL SELECT m.arrival_s + m.engine_e2e_s, -1 FROM "
        "request_metrics m JOIN requests q USING (run_id, id) WHERE q.tenant = '%s' AND "
        "q.enqueue_s IS NOT NULL) ORDER BY t, d", tenant, tenant);
    return most_at_once(db, sql);
}

/* beta's share: a quarter of 16 slots. */
static void test_share(sqlite3 *db, sqlite3 *unshared)
{
    int64_t limit = (int64_t)(SHARE * SLOTS);
    int64_t most = most_in_flight(db, "beta");
    ok(most <= limit, "beta never holds more than its share, %lld of %d slots (held %lld)",
       (long long)limit, SLOTS, (long long)most);
    is_int(most, limit, "and reaches it");
    cmp_ok(most_in_flight(unshared, "beta"), >, limit, "without its share it holds more");
}

/* The gateway's queue: requests held from their arrival to their dispatch
 * (or to their time-to-live), never more than its capacity at once; none
 * dispatched after waiting longer than the time-to-live. */
static void test_queue(sqlite3 *db)
{
    char *sql = util_xasprintf(
        "SELECT t, d FROM (SELECT arrival_s AS t, 1 AS d FROM requests WHERE (enqueue_s > "
        "arrival_s) OR reason = 'ttl' UNION ALL SELECT CASE WHEN reason = 'ttl' THEN arrival_s + "
        "%g ELSE enqueue_s END, -1 FROM requests WHERE (enqueue_s > arrival_s) OR reason = "
        "'ttl') ORDER BY t, d", TTL_S);
    int64_t most = most_at_once(db, sql);
    ok(most <= CAPACITY, "the gateway held at most its capacity, %d (held %lld)", CAPACITY,
       (long long)most);
    cmp_ok(most, >=, CAPACITY - 1, "and filled it");
    cmp_ok(q1(db, "SELECT max(enqueue_s - arrival_s) FROM requests"), <=, TTL_S + 1e-9,
           "no request was dispatched after waiting past the time-to-live");
}

/* Retries: each retry names an attempt its client retried, of the same
 * call; it waits its backoff (refusals at the gateway end at their arrival:
 * the wait is from there); and the report counts each call once. */
static void test_retry(sqlite3 *db)
{
    sqlite3_exec(db, "CREATE INDEX test_retry_of ON requests (retry_of)", NULL, NULL, NULL);
    ok(q1(db, "SELECT count(*) FROM requests r WHERE retry_of IS NOT NULL AND NOT EXISTS ("
              "SELECT 1 FROM requests p WHERE p.run_id = r.run_id AND p.id = r.retry_of AND "
              "p.retried AND p.class = r.class AND p.prompt_tokens = r.prompt_tokens AND "
              "p.output_tokens = r.output_tokens)") == 0,
       "every retry names a retried attempt of the same call");
    ok(q1(db, "SELECT count(*) FROM requests p WHERE retried AND (SELECT count(*) FROM requests "
              "r WHERE r.run_id = p.run_id AND r.retry_of = p.id) <> 1") == 0,
       "and every retried attempt has exactly one retry");
    ok(q1(db, "SELECT count(*) FROM requests WHERE retried AND status = 'completed'") == 0,
       "a completed attempt is never retried");
    /* attempt k of a chain: 3 at most (the default) */
    ok(q1(db, "SELECT count(*) FROM requests a JOIN requests b ON b.retry_of = a.id JOIN "
              "requests c ON c.retry_of = b.id WHERE c.retried") == 0,
       "a call is sent at most 3 times");
    /* the default backoff: 0.5 s, doubled, less up to 25% */
    double lo = q1(db, "SELECT min((r.arrival_s - p.arrival_s) / CASE WHEN p.retry_of IS NULL "
                       "THEN 0.5 ELSE 1.0 END) FROM requests r JOIN requests p ON p.id = "
                       "r.retry_of WHERE p.reason IN ('shed', 'queue_full', 'budget')");
    double hi = q1(db, "SELECT max((r.arrival_s - p.arrival_s) / CASE WHEN p.retry_of IS NULL "
                       "THEN 0.5 ELSE 1.0 END) FROM requests r JOIN requests p ON p.id = "
                       "r.retry_of WHERE p.reason IN ('shed', 'queue_full', 'budget')");
    ok(lo >= 0.75 - 1e-6 && hi <= 1 + 1e-6 && hi - lo > 0.2,
       "each retry waits its backoff less up to 25%% (%.4f .. %.4f of it)", lo, hi);
    an_report r;
    util_diag d;
    util_diag_init(&d);
    if (!ok(!an_report_compute(db, 1, &r, &d), "the report computes")) {
        util_diag_fini(&d);
        return;
    }
    double calls = q1(db, "SELECT count(*) FROM requests WHERE NOT retried");
    is_int(r.req.arrived, (int64_t)calls, "the report counts each call once: %g calls", calls);
    is_int(r.retried_attempts, (int64_t)q1(db, "SELECT count(*) FROM requests WHERE retried"),
           "and says how many attempts it left out");
    double good = q1(db, "SELECT count(*) FROM request_metrics m JOIN requests q USING (run_id, "
                         "id) WHERE NOT q.retried AND m.status = 'completed' AND ttft_s <= 0.5 "
                         "AND coalesce(tpot_s, 0) <= 0.05 AND e2e_s <= 60");
    is_near(r.req.attainment, good / calls, 1e-12,
            "attainment: good calls over calls, a retried call by its last attempt");
    an_report_fini(&r);
    util_diag_fini(&d);
}

/* No gateway: nothing is held or refused for a reason of the gateway's. */
static void test_without(sqlite3 *db)
{
    ok(q1(db, "SELECT count(*) FROM requests WHERE reason IN ('shed', 'queue_full', 'ttl', "
              "'budget') OR enqueue_s > arrival_s") == 0,
       "without cluster.gateway nothing is held or refused by it");
}

static void test_bad_input(const char *json)
{
    static const struct {
        const char *set, *says;
    } cases[] = {
        {"cluster.gateway.tenants=[{\"name\":\"a\"},{\"name\":\"a\"}]", "tenants[1].name"},
        {"cluster.gateway.tenants=[{\"name\":\"a\",\"burst_tokens\":5}]", "burst_tokens"},
        {"cluster.gateway.kv_cache_threshold=0", "kv_cache_threshold"},
        {"cluster.gateway.shed=1", "cluster.gateway.shed"},
        {"workload.retry={\"on\":[\"shed\",\"lost\"]}", "workload.retry.on[1]"},
        {"workload.retry={\"on\":[\"shed\",\"shed\"]}", "given twice"},
        {"workload.retry={\"attempts\":0}", "workload.retry.attempts"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *sets[] = {cases[i].set, NULL};
        char *why = support_refusal(json, sets);
        has_str(why, cases[i].says, "--set %s is refused, naming %s", cases[i].set,
                cases[i].says);
        free(why);
    }
}

/* The scenario less its gateway. */
static char *without_gateway(const char *json)
{
    cJSON *root = cJSON_Parse(json);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItem(root, "cluster"), "gateway");
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

int main(void)
{
    support_init();
    char *json = support_scenario_text("gateway.json"), *plain = without_gateway(json);
    sqlite3 *db = support_run_json(json, NULL, false);
    const char *no_share[] = {"cluster.gateway.tenants[1].share=1", NULL};
    sqlite3 *unshared = support_run_json(json, no_share, false);
    const char *retry[] = {"workload.retry={}", NULL};
    sqlite3 *retried = support_run_json(json, retry, false);
    sqlite3 *bare = support_run_json(plain, NULL, false);
    if (!ok(db && unshared && retried && bare, "the scenarios run")) return tap_done();
    test_reasons(db);
    test_bucket(db);
    test_share(db, unshared);
    test_queue(db);
    test_retry(retried);
    test_without(bare);
    test_bad_input(json);
    sqlite3_close(db);
    sqlite3_close(unshared);
    sqlite3_close(retried);
    sqlite3_close(bare);
    free(plain);
    free(json);
    support_fini();
    return tap_done();
}
