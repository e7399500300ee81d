/*
 * test_offload.c: KV offload's CPU tier (cluster.kv_offload,
 * docs/kv-offload.md) -- a prefix hit in the tier loaded back in
 * bytes / (PCIe bandwidth x GPUs) + latency exactly, the bytes moved each
 * way equal to the blocks moved x a block's bytes, a working set larger
 * than HBM served from the tier, LRU hit rates of the tier under
 * independent references against Che's approximation, each request's
 * hits in each tier adding up to its replica's, the report's TTFT by
 * where the prefix came from against SQL (and a hit quicker than a miss),
 * the timeline's tier column, and runs without a tier (or with one nothing
 * reaches) unchanged.  argv[1] is the source root.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"
#include "support.h"
#include "tap.h"

#define BLOCK    16       /* prefix-base.json's block_tokens */
#define KV_TOKEN 131072.0 /* llama-3.1-8b, bf16: 32 layers x 8 KV heads x 128 x 2 x 2 bytes */
#define PCIE_BW  64e9     /* h100-sxm's pcie_gbs (models/catalog.json), B/s */

/* ---- the tier's arithmetic ---- */

/* Prompts A, B, C of three 512-token ids (32 blocks each) into 250 blocks,
 * one at a time, then A again (test_prefix's lru_eviction): C's admission
 * evicts A's last 38 blocks -- its third segment and 6 blocks of its second
 * -- which go down to the tier, each entry whole (64 blocks stored).  A
 * re-sent finds 58 blocks on the GPU and loads the other 38 from the tier,
 * evicting B's last 38 blocks (64 more stored).  The step that admits it
 * lasts longer than the same step with A whole on the GPU by exactly
 * 38 x 16 x 131072 bytes / 64 GB/s + the latency. */
static void load_arithmetic(void)
{
    char path[200];
    char *trace = support_hash_trace(
        "0,1536,1,1 2 3\n10,1536,1,4 5 6\n20,1536,1,7 8 9\n30,1536,1,1 2 3\n", path, sizeof path);
    char *json = support_scenario_text("prefix-base.json");
    const double latency = 0.002;
    sqlite3 *cpu = support_run_json(
        json,
        (const char *[]){path, "cluster.scheduler.kv_blocks=250",
                         "cluster.kv_offload={\"cpu_gib\": 4, \"cpu_latency_s\": 0.002}", NULL},
        true);
    sqlite3 *gpu = support_run_json(json, (const char *[]){path, NULL}, true);
    const char *last = "SELECT cached_tokens FROM requests WHERE id = 3";
    is_int(support_q1(cpu, last), 1520, "with the tier, A re-sent has 95 blocks cached");
    is_int(support_q1(gpu, last), 1520, "as it has with HBM enough to keep it");
    is_int(support_q1(gpu, "SELECT evicted_blocks FROM replicas"), 0, "(which evicts nothing)");
    const char *step = "SELECT end_s - start_s FROM iterations WHERE start_s >= 30 "
                       "AND prefill_tokens > 0 ORDER BY start_s LIMIT 1";
    double block_bytes = BLOCK * KV_TOKEN;
    double want = 38 * block_bytes / PCIE_BW + latency;
    is_near(support_q1(cpu, step) - support_q1(gpu, step), want, 2e-9,
            "its step pays the load: 38 blocks x %.0f B / 64 GB/s + 2 ms = %.9f s", block_bytes,
            want);
    is_near(support_q1(cpu, "SELECT kv_bytes_per_token FROM replicas"), KV_TOKEN, 0,
            "a token's KV is 131072 bytes");
    is_near(support_q1(cpu, "SELECT cpu_loaded_bytes FROM replicas"), 38 * block_bytes, 0,
            "bytes loaded: 38 blocks x a block's bytes");
    is_near(support_q1(cpu, "SELECT cpu_stored_bytes FROM replicas"), 128 * block_bytes, 0,
            "bytes stored: A's and B's last two segments, 4 x 32 blocks");
    is_int(support_q1(cpu, "SELECT cpu_hit_tokens FROM replicas"), 1520 - 58 * BLOCK,
           "the tier served 1520 - 58 x 16 tokens");
    is_int(support_q1(cpu, "SELECT cpu_lookup_tokens FROM replicas"),
           3 * 1536 + (1536 - 58 * BLOCK), "of the prompt tokens the GPU cache missed");
    is_near(support_q1(cpu, "SELECT cpu_tier_bytes FROM replicas"),
            floor(4 * 1073741824.0 / block_bytes) * block_bytes, 0,
            "the tier's size: the whole blocks 4 GiB holds");
    sqlite3_close(cpu);
    sqlite3_close(gpu);
    free(json);
    unlink(trace);
    free(trace);
}

/* The same with a CPU tier of one entry (32 blocks, 64 MiB) above a disk
 * tier: C's admission stores A's third segment, then its second, which
 * pushes the third down to disk.  A re-sent loads 6 blocks of its second
 * segment from the CPU tier and its third, 32 blocks, from disk: its step
 * pays 38 blocks over PCIe + the CPU latency, and 32 blocks read from disk
 * + the disk's latency. */
static void disk_arithmetic(void)
{
    char path[200];
    char *trace = support_hash_trace(
        "0,1536,1,1 2 3\n10,1536,1,4 5 6\n20,1536,1,7 8 9\n30,1536,1,1 2 3\n", path, sizeof path);
    char *json = support_scenario_text("prefix-base.json");
    sqlite3 *disk = support_run_json(
        json,
        (const char *[]){path, "cluster.scheduler.kv_blocks=250",
                         "cluster.kv_offload={\"cpu_gib\": 0.0625, \"cpu_latency_s\": 0.002, "
                         "\"disk_gib\": 100, \"disk_read_gbs\": 7, \"disk_latency_s\": 0.0001}",
                         NULL},
        true);
    sqlite3 *gpu = support_run_json(json, (const char *[]){path, NULL}, true);
    is_int(support_q1(disk, "SELECT cached_tokens FROM requests WHERE id = 3"), 1520,
           "with a disk tier, A re-sent has 95 blocks cached");
    const char *step = "SELECT end_s - start_s FROM iterations WHERE start_s >= 30 "
                       "AND prefill_tokens > 0 ORDER BY start_s LIMIT 1";
    double block_bytes = BLOCK * KV_TOKEN;
    double want = 38 * block_bytes / PCIE_BW + 0.002 + 32 * block_bytes / 7e9 + 0.0001;
    is_near(support_q1(disk, step) - support_q1(gpu, step), want, 2e-9,
            "its step pays 38 blocks over PCIe + 2 ms, 32 read from disk at 7 GB/s + 0.1 ms: "
            "%.9f s",
            want);
    is_near(support_q1(disk, "SELECT cpu_loaded_bytes FROM replicas"), 6 * block_bytes, 0,
            "6 blocks loaded from the CPU tier");
    is_near(support_q1(disk, "SELECT disk_loaded_bytes FROM replicas"), 32 * block_bytes, 0,
            "32 blocks from disk");
    is_int(support_q1(disk, "SELECT cpu_hit_tokens FROM replicas"), 6 * BLOCK,
           "the CPU tier served 6 blocks' tokens");
    is_int(support_q1(disk, "SELECT disk_hit_tokens FROM replicas"), 1520 - 64 * BLOCK,
           "the disk tier the rest but the last token's block");
    is_near(support_q1(disk, "SELECT disk_tier_bytes FROM replicas"), 100 * 1073741824.0, 0,
            "the disk tier's size: 100 GiB of whole blocks");
    sqlite3_close(disk);
    sqlite3_close(gpu);
    free(json);
    unlink(trace);
    free(trace);
    json = support_scenario_text("shared-prefix-groups.json");
    char *why = support_refusal(json, (const char *[]){"cluster.kv_offload={\"cpu_gib\": 1, "
                                                       "\"disk_gib\": 10}",
                                                       NULL});
    ok(why && strstr(why, "cluster.kv_offload.disk_read_gbs"),
       "a disk tier without its bandwidth is refused: %s", why ? why : "(loaded)");
    free(why);
    free(json);
}

/* ---- a working set larger than HBM ---- */

/* 64 groups of a 2048-token system prompt at 10 requests/s into 4000
 * blocks (64k tokens, 31 system prompts): the GPU cache alone loses most
 * groups between their requests; a 16 GiB tier (8192 blocks) holds them
 * all. */
static void working_set(void)
{
    char *json = support_scenario_text("offload-groups.json");
    sqlite3 *gpu = support_run_json(json, NULL, false);
    sqlite3 *cpu = support_run_json(
        json, (const char *[]){"cluster.kv_offload={\"cpu_gib\": 16}", NULL}, false);
    util_diag d;
    util_diag_init(&d);
    an_report a, b;
    if (an_report_compute(gpu, 1, &a, &d) == UTIL_OK &&
        an_report_compute(cpu, 1, &b, &d) == UTIL_OK) {
        tap_diag("hit rate: GPU alone %.4f, with the CPU tier %.4f (tier %.4f); TTFT mean %.4f "
                 "against %.4f s",
                 a.req.prefix_hit_rate, b.req.prefix_hit_rate, b.use.offload.cpu.hit_rate,
                 a.req.ttft.mean, b.req.ttft.mean);
        ok(b.req.prefix_hit_rate > a.req.prefix_hit_rate + 0.2,
           "the tier raises the prefix hit rate by more than 20 points");
        ok(b.use.offload.cpu.hit_tokens > 0 && b.use.offload.cpu.hit_rate > 0.5,
           "most of what the GPU cache missed came from the tier");
        is_int(a.use.offload.cpu.tier_bytes, 0, "the run without a tier reports none");
        double block_bytes = BLOCK * KV_TOKEN;
        double s = b.use.offload.cpu.stored_bytes / block_bytes,
               l = b.use.offload.cpu.loaded_bytes / block_bytes;
        ok(s == floor(s) && l == floor(l) && s > 0 && l > 0,
           "bytes stored and loaded are whole blocks (%.0f and %.0f)", s, l);
        an_report_fini(&a);
        an_report_fini(&b);
    } else {
        ok(false, "the reports are computed");
    }
    util_diag_fini(&d);
    sqlite3_close(gpu);
    sqlite3_close(cpu);
    free(json);
}

/* ---- Che's approximation ---- */

/* The characteristic time T of an LRU cache of c items under independent
 * references with probabilities p: sum of 1 - exp(-p_i T) = c. */
static double che_time(const double *p, int n, double c)
{
    double lo = 0, hi = 1;
    for (;;) {
        double s = 0;
        for (int i = 0; i < n; i++)
            s += 1 - exp(-p[i] * hi);
        if (s >= c) break;
        hi *= 2;
    }
    for (int k = 0; k < 200; k++) {
        double mid = (lo + hi) / 2, s = 0;
        for (int i = 0; i < n; i++)
            s += 1 - exp(-p[i] * mid);
        if (s < c)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

/* One request at a time, each a single 512-token item drawn from a Zipf
 * popularity over N items, into a GPU cache that holds little more than the
 * running prompt: every item goes down to the tier as the next one is
 * admitted, so the tier is an LRU cache of C items under independent
 * references, and the hit rate is Che's sum of p_i (1 - exp(-p_i T)). */
static void che(void)
{
    enum { N = 400, C = 40, REQUESTS = 24000, WARM = 4000 };
    const double alpha = 0.8;
    double p[N], sum = 0, cdf[N];
    for (int i = 0; i < N; i++)
        sum += p[i] = pow(i + 1, -alpha);
    for (int i = 0; i < N; i++) {
        p[i] /= sum;
        cdf[i] = (i ? cdf[i - 1] : 0) + p[i];
    }
    size_t cap = (size_t)REQUESTS * 32 + 64;
    char *lines = util_xmalloc(cap), *at = lines;
    uint64_t x = 88172645463325252ULL; /* xorshift64 */
    for (int k = 0; k < REQUESTS; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double u = (double)(x >> 11) / 9007199254740992.0;
        int i = 0;
        while (i < N - 1 && cdf[i] < u)
            i++;
        at += sprintf(at, "%d,512,1,%d\n", k, i + 1);
    }
    char path[200], gib[100];
    char *trace = support_hash_trace(lines, path, sizeof path);
    free(lines);
    /* C entries of 32 blocks of 16 x 131072 bytes: C x 64 MiB */
    snprintf(gib, sizeof gib, "cluster.kv_offload={\"cpu_gib\": %.6f}", C * 64.0 / 1024);
    char *json = support_scenario_text("prefix-base.json");
    double t = che_time(p, N, C), want = 0;
    for (int i = 0; i < N; i++)
        want += p[i] * (1 - exp(-p[i] * t));
    /* sampling error of a mean of n = 20000 (correlated) draws: a few x
     * sqrt(h (1 - h) / n), about 0.0035 */
    double se = sqrt(want * (1 - want) / (REQUESTS - WARM));
    /* ... and two replicas taking turns, on one node whose tier of C items
     * they share (kv_offload.scope "node"): one LRU of their combined
     * references, so the same hit rate */
    char node[140];
    snprintf(node, sizeof node, "cluster.kv_offload={\"cpu_gib\": %.6f, \"scope\": \"node\"}",
             C * 64.0 / 1024);
    const char *const cases[][6] = {
        {path, "cluster.scheduler.kv_blocks=40", gib, NULL},
        {path, "cluster.scheduler.kv_blocks=40", node, "cluster.replicas=2",
         "cluster.gpus_per_node=2", NULL},
    };
    const char *what[] = {"the tier's LRU hit rate", "a node's shared tier's"};
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT avg(cached_tokens > 0) FROM requests WHERE id >= %d", WARM);
    for (int k = 0; k < 2; k++) {
        sqlite3 *db = support_run_json(json, cases[k], false);
        double got = support_q1(db, sql);
        tap_diag("LRU of %d items of %d, Zipf %.1f: hit rate %.4f, Che %.4f (se %.4f)", C, N,
                 alpha, got, want, se);
        is_near(got, want, 4 * se, "%s is Che's approximation within 4 se", what[k]);
        sqlite3_close(db);
    }
    free(json);
    unlink(trace);
    free(trace);
}

/* ---- per request and per step (schema 15) ---- */

/* Each request's tier hits are its share of its replica's totals, kept at
 * its first scheduling as the totals are: 2 replicas of 1500 blocks at 40
 * requests/s preempt (and re-admit) some of the requests the tiers served. */
static void per_request(void)
{
    char *json = support_scenario_text("offload-groups.json");
    sqlite3 *db = support_run_json(
        json,
        (const char *[]){"cluster.replicas=2", "cluster.scheduler.kv_blocks=1500",
                         "workload.arrival.rate_per_s=40",
                         "cluster.kv_offload={\"cpu_gib\": 0.5, \"disk_gib\": 64, "
                         "\"disk_read_gbs\": 7, \"disk_latency_s\": 0.0001}",
                         NULL},
        false);
    ok(support_q1(db, "SELECT count(*) FROM requests WHERE preemptions > 0 AND "
                      "cpu_hit_tokens + disk_hit_tokens > 0") > 0,
       "some requests the tiers served were preempted and admitted again");
    const char *tiers[] = {"cpu", "disk"};
    for (int i = 0; i < 2; i++) {
        char sql[400];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM replicas p WHERE %s_hit_tokens = (SELECT "
                 "total(%s_hit_tokens) FROM requests q WHERE q.run_id = p.run_id AND "
                 "q.replica = p.replica)",
                 tiers[i], tiers[i]);
        is_int(support_q1(db, sql), 2,
               "each replica's %s_hit_tokens is the sum of its requests' (preempted ones once)",
               tiers[i]);
        snprintf(sql, sizeof sql, "SELECT total(%s_hit_tokens) FROM requests", tiers[i]);
        ok(support_q1(db, sql) > 0, "(the %s tier served some)", tiers[i]);
    }
    is_int(support_q1(db, "SELECT count(*) FROM requests WHERE cpu_hit_tokens IS NULL OR "
                          "disk_hit_tokens IS NULL OR cpu_hit_tokens + disk_hit_tokens > "
                          "cached_tokens"),
           0, "every row has both, and they are part of its cached tokens");
    sqlite3_close(db);
    db = support_run_json(json, (const char *[]){"cluster.kv_offload={\"cpu_gib\": 2}", NULL},
                          true);
    is_int(support_q1(db, "SELECT count(*) FROM requests WHERE cpu_hit_tokens IS NULL OR "
                          "disk_hit_tokens IS NOT NULL"),
           0, "a CPU tier alone: cpu_hit_tokens in every row, disk_hit_tokens NULL");
    is_int(support_q1(db, "SELECT count(*) FROM iterations WHERE cpu_tier_tokens IS NULL OR "
                          "disk_tier_tokens IS NOT NULL OR cpu_tier_tokens % 16 <> 0 OR "
                          "cpu_tier_tokens > 16384"),
           0, "and each step the CPU tier's whole blocks, at most its 2 GiB (16384 tokens)");
    sqlite3_close(db);
    db = support_run_json(json, NULL, true);
    is_int(support_q1(db, "SELECT count(*) FROM requests WHERE cpu_hit_tokens IS NOT NULL OR "
                          "disk_hit_tokens IS NOT NULL") +
               support_q1(db, "SELECT count(*) FROM iterations WHERE cpu_tier_tokens IS NOT "
                              "NULL OR disk_tier_tokens IS NOT NULL"),
           0, "without kv_offload every tier column is NULL");
    sqlite3_close(db);
    free(json);
}

/* numpy's default percentile of a sorted column. */
static double percentile(const double *v, int n, double q)
{
    double h = (n - 1) * q;
    int lo = (int)floor(h);
    return lo + 1 < n ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

/* The report's TTFT by source against SQL over the rows: a source's
 * completed requests' TTFTs, sorted. */
static void source_matches(sqlite3 *db, const an_by_source *b, const char *where,
                           const char *name)
{
    char sql[300];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM requests WHERE %s", where);
    is_int(b->requests, support_q1(db, sql), "%s: its requests", name);
    snprintf(sql, sizeof sql,
             "SELECT first_token_s - arrival_s FROM requests WHERE %s AND status = 'completed' "
             "ORDER BY 1",
             where);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    int n = 0;
    double v[4096], sum = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < 4096)
        sum += v[n++] = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    is_int(b->ttft.n, n, "%s: its completed requests' TTFTs", name);
    if (n == 0) return;
    is_near(b->ttft.mean, sum / n, 1e-12, "%s: TTFT mean", name);
    is_near(b->ttft.p50, percentile(v, n, 0.5), 1e-12, "%s: TTFT p50", name);
    is_near(b->ttft.p99, percentile(v, n, 0.99), 1e-12, "%s: TTFT p99", name);
}

/* The mean TTFT of a source and its squared standard error, from SQL. */
static double mean_ttft(sqlite3 *db, const char *where, double *se2)
{
    char sql[300];
    snprintf(sql, sizeof sql,
             "SELECT avg(t), (avg(t * t) - avg(t) * avg(t)) / (count(*) - 1) FROM (SELECT "
             "first_token_s - arrival_s AS t FROM requests WHERE %s AND status = 'completed')",
             where);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    sqlite3_step(st);
    double m = sqlite3_column_double(st, 0);
    *se2 = sqlite3_column_double(st, 1);
    sqlite3_finalize(st);
    return m;
}

/* With a CPU tier of 2 GiB below 4000 blocks, the requests whose prefix came
 * (partly) from it wait less for their first token than those that found
 * nothing: loading 2048 tokens of KV (256 MiB) over 64 GB/s takes 4 ms,
 * prefilling them tens of ms. */
static void ttft_by_source(void)
{
    char *json = support_scenario_text("offload-groups.json");
    sqlite3 *db = support_run_json(
        json, (const char *[]){"cluster.kv_offload={\"cpu_gib\": 2}", NULL}, true);
    util_diag d;
    util_diag_init(&d);
    an_report r;
    if (an_report_compute(db, 1, &r, &d) != UTIL_OK) {
        ok(false, "the report is computed");
        goto done;
    }
    const an_offload *o = &r.use.offload;
    ok(o->has_sources, "the report has the TTFT by source");
    static const char *const where[AN_N_SOURCES] = {
        "cached_tokens = 0", "cached_tokens > 0 AND cpu_hit_tokens = 0",
        "cpu_hit_tokens > 0", "disk_hit_tokens > 0"};
    for (int i = 0; i < AN_N_SOURCES; i++)
        source_matches(db, &o->by_source[i], where[i], an_source_names[i]);
    double se_none, se_cpu;
    double none = mean_ttft(db, where[AN_SOURCE_NONE], &se_none);
    double cpu = mean_ttft(db, where[AN_SOURCE_CPU], &se_cpu);
    double se = sqrt(se_none + se_cpu);
    tap_diag("TTFT mean: none %.4f s, CPU tier %.4f s (se of the difference %.4f)", none, cpu, se);
    ok(none - cpu > 3 * se, "a CPU tier hit waits less than a miss, by more than 3 se");
    cJSON *j = an_report_json(&r, false);
    const cJSON *by = util_json_get(j, "utilisation.kv_offload.ttft_by_source");
    is_near(util_json_number(by, "cpu.ttft_p99_s", NAN), o->by_source[AN_SOURCE_CPU].ttft.p99, 0,
            "the JSON's utilisation.kv_offload.ttft_by_source.cpu.ttft_p99_s");
    is_int(util_json_number(by, "disk.requests", NAN), 0, "and its disk source, with no request");
    cJSON_Delete(j);
    an_report_fini(&r);
done:
    util_diag_fini(&d);
    sqlite3_close(db);
    free(json);
}

/* The timeline's CPU tier column at 2 requests/s, a replica idle a third
 * of the time: the time average of the iterations' cpu_tier_tokens, each
 * held from its step's start to the replica's next step's (or its end: a
 * tier keeps its content while the replica is idle), over its capacity. */
static void tier_timeline(void)
{
    char *json = support_scenario_text("offload-groups.json");
    sqlite3 *db = support_run_json(
        json,
        (const char *[]){"workload.arrival.rate_per_s=2", "stop.requests=400",
                         "cluster.kv_offload={\"cpu_gib\": 2}", NULL},
        true);
    util_diag d;
    util_diag_init(&d);
    an_timeline t;
    if (an_timeline_compute(db, 1, 40, -1, &t, &d) == UTIL_OK && t.n > 2) {
        const char *held = "SELECT total(v * max(0, min(e, 80) - max(s, 40))) / (40 * (SELECT "
                           "cpu_tier_bytes / kv_bytes_per_token FROM replicas)) FROM (SELECT "
                           "start_s AS s, cpu_tier_tokens AS v, coalesce(lead(start_s) OVER "
                           "(PARTITION BY replica ORDER BY start_s), (SELECT retired_s FROM "
                           "replicas p WHERE p.replica = i.replica)) AS e FROM iterations i)";
        const char *stepping = "SELECT total(cpu_tier_tokens * max(0, min(end_s, 80) - "
                               "max(start_s, 40))) / (40 * 16384) FROM iterations";
        double want = support_q1(db, held);
        tap_diag("CPU tier in use over [40, 80) s: %.4f of its capacity (%.4f counting only "
                 "the steps' own time); busy %.3f",
                 want, support_q1(db, stepping),
                 support_q1(db, "SELECT busy_s / (SELECT sim_end_s FROM runs) FROM replicas"));
        is_near(t.cpu_tier_occupancy[1], want, 1e-9,
                "the timeline's CPU tier over [40, 80) s: the tier's tokens held between steps");
        ok(t.disk_tier_occupancy == NULL, "and no disk tier column");
    } else {
        ok(false, "the timeline is computed");
    }
    an_timeline_fini(&t);
    sqlite3_close(db);
    /* two replicas sharing their node's 2 GiB: each step's row is the
     * replica's half, as its cpu_tier_bytes is, so the node is never over
     * its capacity */
    db = support_run_json(json,
                          (const char *[]){"cluster.replicas=2",
                                           "cluster.kv_offload={\"cpu_gib\": 2, "
                                           "\"scope\": \"node\"}",
                                           NULL},
                          true);
    is_int(support_q1(db, "SELECT max(cpu_tier_tokens) FROM iterations"), 8192,
           "scope node: a replica's row holds half the node's full tier (16384 tokens)");
    if (an_timeline_compute(db, 1, 20, -1, &t, &d) == UTIL_OK) {
        double most = 0;
        for (size_t i = 0; i < t.n; i++) most = fmax(most, t.cpu_tier_occupancy[i]);
        ok(most <= 1 + 1e-9 && most > 0.99, "and the timeline's node tier fills to 1: %.6f", most);
    } else {
        ok(false, "the timeline is computed");
    }
    an_timeline_fini(&t);
    util_diag_fini(&d);
    sqlite3_close(db);
    free(json);
}

/* ---- tiers shared by a node's replicas ---- */

/* kv_offload.scope "node": a pool's replicas fill nodes of gpus_per_node
 * GPUs, each node's tier cpu_gib, its bytes split over its replicas' rows;
 * a replica wider than a node has the tiers of every node it spans; and
 * at equal host memory, replicas that share their node's tier hit more
 * than with tiers of their own, which hold the same shared prompts twice. */
static void node_scope(void)
{
    char *json = support_scenario_text("offload-groups.json");
    const char *block = "16 * 131072.0"; /* a block's bytes: the tier holds whole blocks */
    struct {
        const char *sets[5];
        double gib; /* the tiers' host memory in all */
        const char *what;
    } cases[] = {
        {{"cluster.replicas=4", NULL}, 1, "four replicas of one GPU, one node of 8"},
        {{"cluster.replicas=4", "cluster.gpus_per_node=2", NULL}, 2, "two nodes of 2 GPUs"},
        {{"cluster.replicas=2", "cluster.gpus_per_node=1", "cluster.tensor_parallel=2", NULL}, 4,
         "two replicas of two 1-GPU nodes each"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *sets[6] = {"stop.requests=200",
                               "cluster.kv_offload={\"cpu_gib\": 1, \"scope\": \"node\"}"};
        for (int i = 0; cases[k].sets[i]; i++) sets[2 + i] = cases[k].sets[i];
        sqlite3 *db = support_run_json(json, sets, false);
        char sql[200];
        snprintf(sql, sizeof sql, "SELECT sum(cpu_tier_bytes) / (%s) FROM replicas", block);
        is_near(support_q1(db, sql), floor(cases[k].gib * 1073741824.0 / (16 * 131072.0)), 1e-6,
                "%s: the rows add up to %g GiB of tiers", cases[k].what, cases[k].gib);
        sqlite3_close(db);
    }
    const char *own[] = {"cluster.replicas=2", "cluster.kv_offload={\"cpu_gib\": 1}", NULL};
    const char *shared[] = {"cluster.replicas=2",
                            "cluster.kv_offload={\"cpu_gib\": 2, \"scope\": \"node\"}", NULL};
    sqlite3 *a = support_run_json(json, own, false), *b = support_run_json(json, shared, false);
    const char *hits = "SELECT sum(cpu_hit_tokens) FROM replicas";
    double ha = support_q1(a, hits), hb = support_q1(b, hits);
    cmp_ok(hb, >, 1.2 * ha, "2 GiB shared by a node's two replicas hits %.0f tokens, 1 GiB each "
           "%.0f", hb, ha);
    is_near(support_q1(b, "SELECT sum(cpu_loaded_bytes) / (16 * 131072.0) * 16 -"
                          " sum(cpu_hit_tokens) FROM replicas"),
            0, 16 * 2000, "each replica's loads are its own hits (to a block a request)");
    sqlite3_close(a);
    sqlite3_close(b);
    free(json);
}

/* ---- unchanged without a tier ---- */

static void unchanged(void)
{
    char *json = support_scenario_text("shared-prefix-groups.json");
    support_rows a = {0}, b = {0}, c = {0};
    int64_t ev;
    int ra = support_run(json, NULL, &a, &ev);
    int rb =
        support_run(json, (const char *[]){"cluster.kv_offload={\"cpu_gib\": 0}", NULL}, &b, &ev);
    /* 4 groups fit the GPU: the tier is never reached */
    int rc =
        support_run(json, (const char *[]){"cluster.kv_offload={\"cpu_gib\": 8}", NULL}, &c, &ev);
    ok(ra == 0 && rb == 0 && rc == 0, "the runs complete");
    ok(support_rows_equal(&a, &b), "cpu_gib 0: every request row as without the key");
    ok(support_rows_equal(&a, &c), "a tier nothing is evicted to: every request row unchanged");
    is_int(c.rep[0].cpu_stored_bytes, 0, "(nothing was stored)");
    char *why =
        support_refusal(json, (const char *[]){"cluster.kv_offload={\"cpu_gib\": -1}", NULL});
    ok(why && strstr(why, "cluster.kv_offload.cpu_gib"), "a negative cpu_gib is refused: %s",
       why ? why : "(loaded)");
    free(why);
    support_rows_fini(&a);
    support_rows_fini(&b);
    support_rows_fini(&c);
    free(json);
}

int main(int argc, char **argv)
{
    if (argc < 2 || support_init()) return 1;
    load_arithmetic();
    disk_arithmetic();
    working_set();
    che();
    node_scope();
    per_request();
    ttft_by_source();
    tier_timeline();
    unchanged();
    support_fini();
    return tap_done();
}
