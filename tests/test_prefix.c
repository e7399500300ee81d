/*
 * test_prefix.c: prefix caching across requests, checked from each
 * request's numbers -- what an agent's next call finds cached, a Mooncake
 * replay against the hits its hash ids allow, a re-sent prompt prefilled
 * once, least-recently-used eviction, the cached context still read by
 * every decode step, distinct prompts unchanged by the cache, and the
 * prefix-aware router's choice, which sees the CPU tier too.  argv[1] is the source root.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "runner.h"
#include "support.h"
#include "tap.h"

#define BLOCK 16 /* cluster.scheduler.block_tokens of the scenarios here */

static const char *root;

static sqlite3 *run_db(const char *json, const char *const *sets)
{
    return support_run_json(json, sets, false);
}

/* Rows of one query, as numbers: up to cols columns of up to cap rows. */
typedef struct rows {
    double *v;
    int n, cols;
} rows;

static rows query(sqlite3 *db, const char *sql, int cols)
{
    rows r = {.cols = cols};
    sqlite3_stmt *st;
    if (!db || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        tap_diag("query failed: %s", db ? sqlite3_errmsg(db) : "no database");
        return r;
    }
    int cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (r.n == cap) {
            cap = cap ? 2 * cap : 256;
            r.v = util_xrealloc(r.v, (size_t)cap * cols * sizeof *r.v);
        }
        for (int c = 0; c < cols; c++)
            r.v[r.n * cols + c] = sqlite3_column_type(st, c) == SQLITE_NULL
                                      ? NAN
                                      : sqlite3_column_double(st, c);
        r.n++;
    }
    sqlite3_finalize(st);
    return r;
}

#define AT(r, i, c) ((r).v[(i) * (r).cols + (c)])

/* ---- an agent's calls ---- */

/* Call k of a sequential task re-sends call k-1's prompt and reply: every
 * block of them whose KV was computed -- all but the reply's last token's
 * -- is cached, whole blocks only, never the new prompt's last token. */
static void agent_chain(void)
{
    char *json = support_scenario_text("prefix-agent.json");
    sqlite3 *on = run_db(json, NULL);
    sqlite3 *off = run_db(json, (const char *[]){"cluster.scheduler.prefix_caching=false", NULL});
    const char *sql = "SELECT task_id, call_index, prompt_tokens, output_tokens, cached_tokens, "
                      "first_token_s - first_scheduled_s, preemptions FROM requests "
                      "WHERE status = 'completed' ORDER BY task_id, call_index";
    rows a = query(on, sql, 7);
    int checked = 0, wrong = 0, first_cached = 0;
    for (int i = 0; i < a.n; i++) {
        double want = 0;
        if (AT(a, i, 1) > 0 && i > 0 && AT(a, i - 1, 0) == AT(a, i, 0)) {
            double kv = AT(a, i - 1, 2) + AT(a, i - 1, 3) - 1; /* tokens with KV computed */
            double most = floor((AT(a, i, 2) - 1) / BLOCK);
            want = fmin(floor(kv / BLOCK), most) * BLOCK;
            checked++;
        } else {
            first_cached += AT(a, i, 4) != 0;
        }
        if (AT(a, i, 4) != want) {
            if (wrong++ < 3)
                tap_diag("task %g call %g: cached %g, want %g", AT(a, i, 0), AT(a, i, 1),
                         AT(a, i, 4), want);
        }
    }
    cmp_ok(checked, >=, 60, "later calls of 40 four-call tasks checked");
    is_int(wrong, 0, "each later call finds its previous prompt and reply cached, whole blocks");
    is_int(first_cached, 0, "a task's first call (its own prompt) finds nothing");
    is_int(support_q1(off, "SELECT sum(cached_tokens) FROM requests"), 0,
       "prefix_caching false: nothing is ever cached");
    double p_on = support_q1(on, "SELECT avg(first_token_s - first_scheduled_s) FROM requests "
                                 "WHERE call_index > 0 AND status = 'completed'");
    double p_off = support_q1(off, "SELECT avg(first_token_s - first_scheduled_s) FROM requests "
                                   "WHERE call_index > 0 AND status = 'completed'");
    cmp_ok(p_on, <, 0.5 * p_off, "later calls prefill in under half the time with the cache");
    double saved = support_q1(on, "SELECT sum(prompt_tokens - cached_tokens) FROM requests "
                                  "WHERE status = 'completed'");
    double computed = support_q1(on, "SELECT sum(prefill_tokens) FROM replicas");
    is_int(computed, saved, "the replica prefilled exactly the prompt tokens not cached");
    free(a.v);
    sqlite3_close(on);
    sqlite3_close(off);
    free(json);
}

/* The cached prefix still costs every decode step its attention: alone on
 * the GPU (one user), each call streams exactly as fast as without the
 * cache, while its prefill is shorter. */
static void cached_context_decodes(void)
{
    char *json = support_scenario_text("prefix-agent.json");
    const char *one[] = {"workload.arrival={\"process\": \"closed\", \"users\": 1}",
                         "stop.requests=10", NULL};
    const char *one_off[] = {"workload.arrival={\"process\": \"closed\", \"users\": 1}",
                             "stop.requests=10", "cluster.scheduler.prefix_caching=false", NULL};
    sqlite3 *on = run_db(json, one), *off = run_db(json, one_off);
    const char *sql = "SELECT (finish_s - first_token_s) / (output_tokens - 1), "
                      "first_token_s - first_scheduled_s, cached_tokens FROM requests "
                      "WHERE status = 'completed' ORDER BY id";
    rows a = query(on, sql, 3), b = query(off, sql, 3);
    is_int(a.n, b.n, "the same calls complete with and without the cache");
    int same_tpot = 0, faster_prefill = 0, hits = 0;
    for (int i = 0; i < a.n && i < b.n; i++) {
        same_tpot += fabs(AT(a, i, 0) - AT(b, i, 0)) <= 1e-9 * AT(b, i, 0);
        if (AT(a, i, 2) > 0) {
            hits++;
            faster_prefill += AT(a, i, 1) < AT(b, i, 1);
        }
    }
    is_int(same_tpot, a.n, "every call's TPOT is the same: decode reads the cached context");
    cmp_ok(hits, >, 0, "some calls hit the cache");
    is_int(faster_prefill, hits, "and each of those prefills faster");
    free(a.v);
    free(b.v);
    sqlite3_close(on);
    sqlite3_close(off);
    free(json);
}

/* ---- distinct prompts ---- */

/* A workload whose prompts share nothing runs exactly as without the
 * cache: the closed-form tests hold with it on and off. */
static void distinct_prompts_unchanged(void)
{
    char *json = support_scenario_text("queueing-md1.json");
    const char *on[] = {"stop.requests=3000", "cluster.scheduler.prefix_caching=true", NULL};
    const char *off[] = {"stop.requests=3000", "cluster.scheduler.prefix_caching=false", NULL};
    sqlite3 *a = run_db(json, on), *b = run_db(json, off);
    rows x = query(a, "SELECT first_token_s, finish_s, cached_tokens FROM requests ORDER BY id", 3);
    rows y = query(b, "SELECT first_token_s, finish_s, cached_tokens FROM requests ORDER BY id", 3);
    int same = x.n == y.n && x.n > 0;
    for (int i = 0; same && i < x.n; i++)
        same = AT(x, i, 0) == AT(y, i, 0) && AT(x, i, 1) == AT(y, i, 1) && AT(x, i, 2) == 0;
    ok(same, "M/D/1 with distinct prompts: every row identical with prefix caching on and off");
    free(x.v);
    free(y.v);
    sqlite3_close(a);
    sqlite3_close(b);
    free(json);
}

/* ---- a Mooncake replay ---- */

/* Each request's hash ids, as the text "id,id,...," of its whole blocks'
 * ids, and its prompt length: the first n lines of a Mooncake trace. */
static int read_ids(const char *path, int n, char **ids, int *prompt)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    static char line[1 << 16];
    int k = 0;
    while (k < n && fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        prompt[k] = cJSON_GetObjectItem(j, "input_length")->valueint;
        int whole = prompt[k] / 512, b = 0;
        char text[1 << 14] = "";
        for (const cJSON *id = cJSON_GetObjectItem(j, "hash_ids")->child; id && b < whole;
             id = id->next, b++) {
            size_t at = strlen(text);
            snprintf(text + at, sizeof text - at, "%d,", id->valueint);
        }
        ids[k++] = util_xstrdup(text);
        cJSON_Delete(j);
    }
    fclose(f);
    return k;
}

/* Leading ids that a and b share, in whole ids. */
static int shared_ids(const char *a, const char *b)
{
    int n = 0;
    for (size_t i = 0; a[i] && a[i] == b[i]; i++) n += a[i] == ',';
    return n;
}

/* The hits each request's hash ids allow, with a cache that forgets
 * nothing: the leading ids it shares with any request scheduled before it
 * (order: the requests by first scheduling, ties by arrival at the queue),
 * in tokens -- whole blocks, never the prompt's last token. */
static void allowed_hits(sqlite3 *db, char **ids, const int *prompt, int n, double *want)
{
    rows o = query(db, "SELECT id FROM requests ORDER BY first_scheduled_s, enqueue_s, id", 1);
    for (int i = 0; i < o.n; i++) {
        int me = (int)AT(o, i, 0), best = 0;
        for (int j = 0; j < i; j++) {
            int s = shared_ids(ids[me], ids[(int)AT(o, j, 0)]);
            if (s > best) best = s;
        }
        if (me < n) want[me] = fmin(best * 512.0, floor((prompt[me] - 1) / (double)BLOCK) * BLOCK);
    }
    free(o.v);
}

/* A slow replay of the Mooncake conversation trace into a cache that holds
 * everything: each request finds cached exactly the leading blocks its ids
 * share with an earlier request -- never more; and the same trace into a
 * real H100's cache: a hit rate, an exact account of what was prefilled,
 * and a lower TTFT than without the cache. */
static void mooncake_replay(void)
{
    enum { N = 400 };
    char path[1024];
    snprintf(path, sizeof path, "%s/data/traces/conversation_trace.jsonl", root);
    static char *ids[N];
    static int prompt[N];
    static double want[N];
    int n = read_ids(path, N, ids, prompt);
    is_int(n, N, "the trace's first %d requests read", N);
    char *json = support_scenario_text("prefix-base.json");
    char set_path[1100];
    snprintf(set_path, sizeof set_path, "workload.arrival.path=\"%s\"", path);
    const char *big[] = {set_path, "workload.arrival.format=\"mooncake\"",
                         "workload.arrival.limit=400", "workload.arrival.time_scale=20",
                         "cluster.scheduler.kv_blocks=10000000", NULL};
    sqlite3 *db = run_db(json, big);
    allowed_hits(db, ids, prompt, n, want);
    rows r = query(db, "SELECT cached_tokens, prompt_tokens FROM requests ORDER BY id", 2);
    int over = 0, exact = 0;
    double got = 0, allowed = 0;
    for (int i = 0; i < r.n && i < n; i++) {
        over += AT(r, i, 0) > want[i];
        exact += AT(r, i, 0) == want[i];
        got += AT(r, i, 0);
        allowed += want[i];
    }
    is_int(r.n, N, "every request replayed");
    is_int(over, 0, "no request finds more cached than its hash ids share with those before it");
    cmp_ok(exact, >=, 0.95 * N, "at a slow replay, almost all find exactly that (%d of %d)",
           exact, N);
    tap_diag("slow replay: %.1f%% of prompt tokens cached, %.1f%% of what the ids allow",
         100 * got / support_q1(db, "SELECT sum(prompt_tokens) FROM requests"),
         100 * got / allowed);
    free(r.v);
    sqlite3_close(db);
    for (int i = 0; i < n; i++) free(ids[i]);

    const char *real[] = {set_path, "workload.arrival.format=\"mooncake\"",
                          "workload.arrival.limit=400", "workload.arrival.time_scale=3",
                          "cluster.replicas=2", NULL};
    const char *real_off[] = {set_path, "workload.arrival.format=\"mooncake\"",
                              "workload.arrival.limit=400", "workload.arrival.time_scale=3",
                              "cluster.replicas=2", "cluster.scheduler.prefix_caching=false", NULL};
    sqlite3 *on = run_db(json, real), *off = run_db(json, real_off);
    double pre = support_q1(on, "SELECT sum(preemptions) FROM requests");
    double not_cached = support_q1(on, "SELECT sum(prompt_tokens - cached_tokens) FROM requests "
                                       "WHERE first_scheduled_s IS NOT NULL");
    double prefilled = support_q1(on, "SELECT sum(prefill_tokens) FROM replicas");
    is_int(pre, 0, "two H100s replay 400 requests at a third of the trace's rate unpreempted");
    is_int(prefilled, not_cached, "so cached_tokens sums to the prompt tokens not prefilled");
    cmp_ok(support_q1(on, "SELECT sum(cached_tokens) FROM requests"), >, 0,
           "the replay hits the cache");
    double ttft_on = support_q1(on, "SELECT avg(first_token_s - arrival_s) FROM requests");
    double ttft_off = support_q1(off, "SELECT avg(first_token_s - arrival_s) FROM requests");
    cmp_ok(ttft_on, <, ttft_off, "TTFT falls with the cache (%.3f s against %.3f s)", ttft_on,
           ttft_off);
    sqlite3_close(on);
    sqlite3_close(off);
    free(json);
}

/* ---- one prompt re-sent ---- */

/* inference-perf's shared_prefix with one group of one prompt: each replica
 * prefills it once, and every later copy only the block holding its last
 * token. */
static void resent_prompt(void)
{
    char *json = support_scenario_text("prefix-resent.json");
    const char *sets[] = {NULL};
    sqlite3 *db = run_db(json, sets);
    is_int(support_q1(db, "SELECT count(*) FROM requests WHERE prompt_tokens = 1200"), 200,
           "200 copies of one 1200-token prompt");
    is_int(support_q1(db, "SELECT count(*) FROM requests WHERE cached_tokens = 0"), 2,
           "prefilled in full once per replica");
    is_int(support_q1(db, "SELECT min(cached_tokens) FROM requests WHERE cached_tokens > 0"),
           1184, "every other copy finds all but its last block cached (74 of 75 blocks)");
    is_int(support_q1(db, "SELECT sum(prefill_tokens) FROM replicas"), 2 * 1200 + 198 * 16,
           "so the replicas prefill 2 x 1200 + 198 x 16 tokens");
    util_diag d;
    util_diag_init(&d);
    an_report r;
    if (an_report_compute(db, 1, &r, &d) == UTIL_OK) {
        double want = (198 * 1184.0) / (200 * 1200.0); /* no warm-up: every request counts */
        is_near(r.req.prefix_hit_rate, want, 1e-12,
                "the report's hit rate is 198 x 1184 / 200 x 1200");
        double per[2];
        for (int i = 0; i < 2; i++)
            per[i] = support_q1(db, i ? "SELECT sum(cached_tokens) * 1.0 / sum(prompt_tokens) FROM "
                                        "requests WHERE replica = 1"
                                      : "SELECT sum(cached_tokens) * 1.0 / sum(prompt_tokens) FROM "
                                        "requests WHERE replica = 0");
        is_int(r.n_replicas, 2, "two replicas reported");
        for (int i = 0; i < r.n_replicas && i < 2; i++)
            is_near(r.replicas[i].prefix_hit_rate, per[i], 1e-12, "replica %d's hit rate", i);
        cJSON *o = an_report_json(&r, true);
        const cJSON *cls = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "classes"), "default");
        is_near(util_json_number(cls, "prefix_cache.hit_rate", NAN), want, 1e-12,
                "and the class's, in the JSON report");
        cJSON_Delete(o);
        an_report_fini(&r);
    } else {
        ok(false, "the report is computed");
    }
    util_diag_fini(&d);
    sqlite3_close(db);
    free(json);
}

/* ---- eviction order ---- */

/* Three prompts A, B, C of three 512-token hash ids each (96 blocks) into
 * a cache of 250 blocks, one at a time: C's admission evicts from the
 * least recently freed -- A's last 38 blocks.  Re-sent, C and B are whole;
 * A, whose first 58 blocks survive, evicts what was freed least recently
 * now -- C's last 38 -- and C, re-sent last, finds 58 blocks. */
static void lru_eviction(void)
{
    char path[200];
    char *trace = support_hash_trace("0,1536,1,1 2 3\n10,1536,1,4 5 6\n20,1536,1,7 8 9\n"
                                     "30,1536,1,7 8 9\n40,1536,1,4 5 6\n50,1536,1,1 2 3\n"
                                     "60,1536,1,7 8 9\n",
                                     path, sizeof path);
    char *json = support_scenario_text("prefix-base.json");
    sqlite3 *db = run_db(json, (const char *[]){path, "cluster.scheduler.kv_blocks=250", NULL});
    rows r = query(db, "SELECT cached_tokens FROM requests ORDER BY id", 1);
    static const int want[] = {0, 0, 0, 1520, 1520, 58 * 16, 58 * 16};
    is_int(r.n, 7, "seven requests");
    for (int i = 0; i < r.n && i < 7; i++)
        is_int(AT(r, i, 0), want[i], "request %d (%c) finds %d tokens cached", i,
               "ABCCBAC"[i], want[i]);
    is_int(support_q1(db, "SELECT evicted_blocks FROM replicas"), 3 * 38,
           "three admissions evicted 38 cached blocks each");
    free(r.v);
    sqlite3_close(db);
    free(json);
    unlink(trace);
    free(trace);
}

/* ---- the prefix-aware router ---- */

/* A trace of prompts A, B, B, B, A (three 512-token ids each) on two
 * replicas: A goes to replica 0; B, arriving while A runs there, to the
 * idle replica 1; and every later copy to the replica that caches it --
 * where round-robin sends the first B copy to replica 0, which has none of
 * it.  With prefix_weight 0 the router weighs load alone. */
static void router_choice(void)
{
    char path[200];
    char *trace = support_hash_trace("0,1536,50,1 2 3\n0.001,1536,50,4 5 6\n10,1536,50,4 5 6\n"
                                     "20,1536,50,4 5 6\n30,1536,50,1 2 3\n",
                                     path, sizeof path);
    char *json = support_scenario_text("prefix-base.json");
    const char *sql = "SELECT replica, cached_tokens FROM requests ORDER BY id";
    struct {
        const char *router, *weight;
        int replica[5], cached[5];
    } cases[] = {
        {"prefix_affinity", "1", {0, 1, 1, 1, 0}, {0, 0, 1520, 1520, 1520}},
        {"round_robin", "1", {0, 1, 0, 1, 0}, {0, 0, 0, 1520, 1520}},
        {"prefix_affinity", "0", {0, 1, 0, 0, 0}, {0, 0, 0, 1520, 1520}},
    };
    for (int c = 0; c < 3; c++) {
        char router[64], weight[64];
        snprintf(router, sizeof router, "cluster.router=\"%s\"", cases[c].router);
        snprintf(weight, sizeof weight, "cluster.prefix_weight=%s", cases[c].weight);
        sqlite3 *db = run_db(json, (const char *[]){path, router, weight, "cluster.replicas=2",
                                                    NULL});
        rows r = query(db, sql, 2);
        int same = r.n == 5;
        for (int i = 0; same && i < 5; i++)
            same = AT(r, i, 0) == cases[c].replica[i] && AT(r, i, 1) == cases[c].cached[i];
        ok(same, "%s (weight %s): replicas %d%d%d%d%d, cached %d %d %d %d %d", cases[c].router,
           cases[c].weight, cases[c].replica[0], cases[c].replica[1], cases[c].replica[2],
           cases[c].replica[3], cases[c].replica[4], cases[c].cached[0], cases[c].cached[1],
           cases[c].cached[2], cases[c].cached[3], cases[c].cached[4]);
        for (int i = 0; !same && i < r.n; i++)
            tap_diag("request %d: replica %g, cached %g", i, AT(r, i, 0), AT(r, i, 1));
        free(r.v);
        sqlite3_close(db);
    }
    free(json);
    unlink(trace);
    free(trace);
}

/* The router sees the tiers below the GPU (sim__rp_cached_prefix counts
 * what cluster.kv_offload's CPU tier holds): two replicas of a 100-block
 * GPU cache, one prompt each.  A goes to replica 0 and X, while A runs, to
 * replica 1; then Z and Y likewise, and Y's blocks evict X from replica
 * 1's GPU.  X, re-sent, finds itself only in replica 1's CPU tier and goes
 * there; without the tier no replica holds it and it goes to the lower
 * id, replica 0, as a tie. */
static void router_sees_tier(void)
{
    char path[200];
    char *trace = support_hash_trace("0,1536,50,1 2 3\n0.001,1536,50,4 5 6\n10,1536,50,7 8 9\n"
                                     "10.001,1536,50,10 11 12\n20,1536,50,4 5 6\n",
                                     path, sizeof path);
    char *json = support_scenario_text("prefix-base.json");
    const char *sets[] = {path, "cluster.router=\"prefix_affinity\"", "cluster.replicas=2",
                          "cluster.scheduler.kv_blocks=100", NULL, NULL};
    const char *last = "SELECT replica, cached_tokens FROM requests ORDER BY id DESC LIMIT 1";
    for (int tier = 0; tier < 2; tier++) {
        sets[4] = tier ? "cluster.kv_offload={\"cpu_gib\": 1}" : NULL;
        sqlite3 *db = run_db(json, sets);
        rows r = query(db, last, 2);
        int want = tier ? 1 : 0;
        ok(r.n == 1 && AT(r, 0, 0) == want && (AT(r, 0, 1) > 0) == tier,
           "%s: the re-sent prompt goes to replica %d (replica %g, cached %g)",
           tier ? "replica 1's CPU tier holds it" : "no tier", want, r.n ? AT(r, 0, 0) : -1,
           r.n ? AT(r, 0, 1) : -1);
        if (tier)
            cmp_ok(support_q1(db, "SELECT cpu_loaded_bytes FROM replicas WHERE replica = 1"), >, 0,
                   "replica 1 loaded it from its CPU tier");
        free(r.v);
        sqlite3_close(db);
    }
    free(json);
    unlink(trace);
    free(trace);
}

/* The shipped example: the whole Mooncake conversation trace on four
 * H100s.  Prefix-aware routing finds more of each prompt cached than
 * round-robin, and its TTFT is lower (docs/prefix-caching.md's table). */
static void routing_example(void)
{
    char path[1024], set_path[1100];
    snprintf(path, sizeof path, "%s/examples/prefix-routing.json", root);
    char *json = runner_read_or_bail(path);
    snprintf(set_path, sizeof set_path,
             "workload.arrival.path=\"%s/data/traces/conversation_trace.jsonl\"", root);
    sqlite3 *rr = run_db(json, (const char *[]){set_path, "cluster.router=\"round_robin\"", NULL});
    sqlite3 *pa = run_db(json, (const char *[]){set_path, NULL});
    const char *hits = "SELECT sum(cached_tokens) * 1.0 / sum(prompt_tokens) FROM requests";
    const char *ttft = "SELECT avg(first_token_s - arrival_s) FROM requests";
    double h_rr = support_q1(rr, hits), h_pa = support_q1(pa, hits);
    double t_rr = support_q1(rr, ttft), t_pa = support_q1(pa, ttft);
    is_int(support_q1(pa, "SELECT count(*) FROM requests WHERE status = 'completed'"), 12031,
           "the example serves the whole trace");
    cmp_ok(h_pa, >, h_rr, "prefix_affinity hits more of the cache (%.1f%% against %.1f%%)",
           100 * h_pa, 100 * h_rr);
    cmp_ok(t_pa, <, t_rr, "and its mean TTFT is lower (%.2f s against %.2f s)", t_pa, t_rr);
    sqlite3_close(rr);
    sqlite3_close(pa);
    free(json);
}

/* The shipped conversation replay with a CPU tier (examples/
 * conversation-offload.json): the same trace and fleet as prefix-routing's,
 * with 256 GiB of host memory per replica below the GPU cache, whose hit
 * rate rises above the GPU-only one (docs/kv-offload.md's table). */
static void offload_example(void)
{
    char path[1024], set_path[1100];
    snprintf(path, sizeof path, "%s/examples/conversation-offload.json", root);
    char *json = runner_read_or_bail(path);
    snprintf(set_path, sizeof set_path,
             "workload.arrival.path=\"%s/data/traces/conversation_trace.jsonl\"", root);
    sqlite3 *gpu = run_db(json, (const char *[]){set_path, "cluster.kv_offload.cpu_gib=0", NULL});
    sqlite3 *cpu = run_db(json, (const char *[]){set_path, NULL});
    const char *hits = "SELECT sum(cached_tokens) * 1.0 / sum(prompt_tokens) FROM requests";
    const char *ttft = "SELECT avg(first_token_s - arrival_s) FROM requests";
    double h_gpu = support_q1(gpu, hits), h_cpu = support_q1(cpu, hits);
    is_int(support_q1(cpu, "SELECT count(*) FROM requests WHERE status = 'completed'"), 12031,
           "the offload example serves the whole trace");
    cmp_ok(h_cpu, >, 2 * h_gpu, "its CPU tier more than doubles the hit rate (%.1f%% against "
           "%.1f%% on the GPUs alone)", 100 * h_cpu, 100 * h_gpu);
    cmp_ok(support_q1(cpu, ttft), <, support_q1(gpu, ttft), "and lowers the mean TTFT");
    /* 256 GiB is 131072 blocks of 16 tokens x 128 KiB: the tier holds it all */
    is_int(support_q1(cpu, "SELECT sum(cpu_hit_tokens) > 0 AND sum(cpu_tier_bytes) ="
                           " 4 * 256.0 * 1073741824 FROM replicas"),
           1, "its replicas record their 256 GiB tiers and their hits");
    sqlite3_close(gpu);
    sqlite3_close(cpu);
    free(json);
}

int main(int argc, char **argv)
{
    if (argc < 2 || support_init()) return 1;
    root = argv[1];
    agent_chain();
    cached_context_decodes();
    distinct_prompts_unchanged();
    mooncake_replay();
    resent_prompt();
    lru_eviction();
    router_choice();
    router_sees_tier();
    routing_example();
    offload_example();
    support_fini();
    return tap_done();
}
