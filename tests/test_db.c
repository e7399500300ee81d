/*
 * test_db.c: the SQLite record and the report computed from it.  Hand-made
 * rows go in through the recorder; the report's counts, percentiles,
 * throughput, SLO attainment and utilisation are checked against independent
 * computations over the same rows.  Also: runs are appended and never
 * overwrite each other, a failed run leaves a database exactly as it was, and
 * files that are not servesim databases are refused untouched.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support.h"
#include "tap.h"

/* Ten requests arriving at t = id: id 8 rejected, id 9 a one-token reply;
 * ids 0 and 1 are before the 1.5 s warm-up. */
static const double ttft[10] = {0.2, 0.3, 0.1, 0.9, 0.4, 0.25, 0.6, 0.35, NAN, 0.45};
static const int out_tokens[10] = {5, 5, 11, 3, 21, 2, 9, 6, 4, 1};
static const double tpot[10] = {0.01, 0.02, 0.03, 0.04, 0.06, 0.05, 0.02, 0.07, NAN, NAN};

static sim_request_row make_row(int i)
{
    sim_request_row r = {.id = i, .replica = i % 2, .status = SIM_COMPLETED, .arrival_s = i,
                         .enqueue_s = i, .prompt_tokens = 100 + i, .output_tokens = out_tokens[i],
                         .deadline_s = NAN, .cpu_hit_tokens = -1, .disk_hit_tokens = -1,
                         .restarted_from = -1};
    if (i == 8) {
        r.status = SIM_REJECTED;
        r.first_scheduled_s = r.first_token_s = r.finish_s = NAN;
        return r;
    }
    r.first_scheduled_s = i + 0.05 * (i % 3);
    r.first_token_s = i + ttft[i];
    r.finish_s = r.first_token_s + (out_tokens[i] > 1 ? tpot[i] * (out_tokens[i] - 1) : 0);
    return r;
}

static void record(rec_recorder *rec, const sim_scenario *sc, sim_status status)
{
    util_diag d;
    util_diag_init(&d);
    rec_begin(rec, sc, &d);
    sim_sink sink = rec_sink(rec);
    for (int i = 0; i < 10; i++) {
        sim_request_row r = make_row(i);
        sink.request(sink.ctx, &r);
    }
    for (int i = 0; i < 2; i++) {
        sim_replica_row rp = {.replica = i, .pool = "default", .gpu = "h100-sxm", .output_s = 5e-4,
                              .model = "llama-3.1-8b", .gpus = 1,
                              .busy_s = 4 + i, .prefill_s = 1, .decode_s = 3 + i,
                              .iterations = 100, .flops = 1e15 * (i + 1), .bytes = 2e12,
                              .batch_seq_s = 20, .kv_capacity_tokens = 1000,
                              .kv_peak_tokens = 300 + 100 * i, .peak_flops = 1e15,
                              .peak_bw = 1e12, .weight_bytes = 16e9,
                              .kv_bytes_per_token = 131072, .end_reason = SIM_END_OF_RUN,
                              .drain_s = NAN};
        sink.replica(sink.ctx, &rp);
    }
    rec_run_end end = {status, status == SIM_STATUS_COMPLETED ? NULL : "a test's reason", 10.0,
                       0.5, 1234};
    rec_finish(rec, &end, &d);
    util_diag_print(&d, stdout, "# record");
    util_diag_fini(&d);
}

/* numpy's default percentile, written out independently of analysis/. */
static double np_percentile(double *v, int n, double q)
{
    for (int i = 1; i < n; i++) /* insertion sort: a handful of values */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    double h = (n - 1) * q;
    int lo = (int)floor(h);
    return lo + 1 < n ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

static void test_report(sqlite3 *db)
{
    util_diag d;
    util_diag_init(&d);
    an_report r;
    is_int(an_report_compute(db, 1, &r, &d), 0, "report of run 1");
    is_str(r.name, "hand", "name");
    is_str(r.status, "completed", "status");
    is_int(r.req.arrived, 10, "counts: 10 arrived");
    is_int(r.req.completed, 9, "9 completed");
    is_int(r.req.measured, 7, "7 measured after warm-up");
    is_int(r.req.rejected, 1, "1 rejected");

    double m[10];
    int n = 0;
    for (int i = 2; i < 10; i++)
        if (i != 8) m[n++] = ttft[i];
    double mean = 0;
    for (int i = 0; i < n; i++) mean += m[i] / n;
    is_near(r.req.ttft.mean, mean, 1e-12, "TTFT mean over measured requests");
    is_near(r.req.ttft.p50, np_percentile(m, n, 0.5), 1e-12, "TTFT p50 by linear interpolation");
    is_near(r.req.ttft.p90, np_percentile(m, n, 0.9), 1e-12, "TTFT p90");
    is_near(r.req.ttft.p99, np_percentile(m, n, 0.99), 1e-12, "TTFT p99");
    is_near(r.req.ttft.max, 0.9, 1e-12, "TTFT max");

    n = 0;
    for (int i = 2; i < 10; i++)
        if (i != 8 && out_tokens[i] > 1) m[n++] = tpot[i];
    is_int(r.req.tpot.n, 6, "TPOT only for replies of two or more tokens");
    is_near(r.req.tpot.p95, np_percentile(m, n, 0.95), 1e-12, "TPOT p95");
    is_near(r.req.queue.max, 0.1, 1e-12, "queue time = first scheduled - enqueue");
    /* incl. TTFT = e2e / output tokens: id 9 (one token) is 0.45 / 1 */
    is_near(r.req.tpot_incl_ttft.max, 0.45, 1e-12, "TPOT incl. TTFT = e2e / output tokens");

    /* window: first arrival after warm-up (t=2) to last measured finish */
    double last = 0, out = 0, in = 0;
    for (int i = 2; i < 10; i++) {
        sim_request_row row = make_row(i);
        if (i == 8) continue;
        last = fmax(last, row.finish_s);
        out += row.output_tokens;
        in += row.prompt_tokens;
    }
    is_near(r.req.window_s, last - 2, 1e-12, "window from first measured arrival to last finish");
    is_near(r.req.requests_per_s, 7 / (last - 2), 1e-12, "request throughput");
    is_near(r.req.output_tokens_per_s, out / (last - 2), 1e-9, "output token throughput");
    is_near(r.req.input_tokens_per_s, in / (last - 2), 1e-9, "input token throughput");

    /* SLO ttft <= 0.5, tpot <= 0.05: measured ids 2 (0.1, 0.03) ok, 3 (0.9) no,
     * 4 (tpot 0.06) no, 5 ok, 6 (0.6) no, 7 (tpot 0.07) no, 9 (1 token) ok;
     * the rejected id 8 counts against. */
    is_near(r.req.attainment, 3.0 / 8, 1e-12, "attainment: 3 good of 8 ended after warm-up");
    is_near(r.req.goodput_requests_per_s, 3 / (last - 2), 1e-12, "goodput: good requests / window");
    ok(isnan(r.req.slo.e2e_s), "unset SLOs stay unset");
    is_near(r.req.slo.ttft_s, 0.5, 0, "set ones keep their value");

    is_near(r.use.busy_fraction, (4.0 + 5) / (2 * 10), 1e-12, "busy = sum busy / (replicas x time)");
    is_near(r.use.mean_batch, 40.0 / 9, 1e-12, "mean batch = batch-seconds / busy seconds");
    is_near(r.use.mfu, 3e15 / (1e15 * 9), 1e-12, "MFU = FLOPs / (peak x busy)");
    is_near(r.use.mbu, 4e12 / (1e12 * 9), 1e-12, "MBU = bytes / (peak bandwidth x busy)");
    is_near(r.use.kv_peak_fraction, 0.4, 1e-12, "KV peak is the fullest replica's");
    an_report_fini(&r);

    /* the view users query matches */
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM request_metrics WHERE run_id = 1 AND "
                           "ttft_s <= 0.5 AND arrival_s >= 1.5", -1, &st, NULL);
    sqlite3_step(st);
    is_int(sqlite3_column_int(st, 0), 5, "request_metrics answers SQL questions directly");
    sqlite3_finalize(st);
    util_diag_fini(&d);
}

static char *slurp(const char *path, size_t *len)
{
    util_diag d;
    util_diag_init(&d);
    char *buf = NULL;
    if (util_read_file(path, &buf, len, &d)) *len = 0;
    util_diag_fini(&d);
    return buf;
}

static bool unchanged(const char *path, const char *before, size_t len)
{
    size_t now_len;
    char *now = slurp(path, &now_len);
    bool same = now && now_len == len && !memcmp(now, before, len);
    free(now);
    return same;
}

/* Entries of dir other than . and .. */
static int count_files(const char *dir)
{
    DIR *dd = opendir(dir);
    int n = 0;
    for (struct dirent *e; dd && (e = readdir(dd));) n += e->d_name[0] != '.';
    if (dd) closedir(dd);
    return n;
}

/* An upgraded database's old run with an iteration of four decoders: its
 * tokens unknown (NULL), so the ITL that counts chunks has it and the two
 * that count tokens have no samples rather than a guess. */
static void old_iteration(sqlite3 *db, const char *path, util_diag *d)
{
    int rc = sqlite3_exec(db, "INSERT INTO iterations (run_id, replica, start_s, end_s, "
                              "prefill_tokens, decode_seqs, kv_tokens, flops, bytes, energy_j) "
                              "VALUES (1, 0, 1e6, 1e6 + 0.01, 0, 4, 0, 0, 0, 0)", NULL, NULL, NULL);
    is_int(rc, SQLITE_OK, "an old run's iteration, its tokens NULL");
    sqlite3 *ro;
    an_definition chunk = {0}, token = {0}, chunked = {0};
    an_chunks c = {0};
    if (an_open(path, &ro, d)) return;
    an_definition_of(ro, 1, "itl_pooled", &chunk, d);
    an_definition_of(ro, 1, "itl_per_token", &token, d);
    an_definition_of(ro, 1, "itl_chunked", &chunked, d);
    an_definition_chunks(ro, 1, &c, d);
    sqlite3_close(ro);
    is_int(chunk.stats.n, 1, "its chunks are counted");
    is_int(token.stats.n + chunked.stats.n, 0, "its tokens are not guessed");
    ok(isnan(c.tokens_per_chunk) && !c.speculative, "nor its tokens a chunk");
}

/* A database of schema 2, before the prefix cache's and the precision's
 * columns and the engine core's clock: made as today's, its new columns
 * dropped and its view as it was.  Adding a run upgrades
 * it in place -- the old rows read 0 -- and the report reads it before and
 * after. */
static void test_upgrade(const char *dir, const sim_scenario *sc)
{
    util_diag d;
    util_diag_init(&d);
    char *path = util_xasprintf("%s/old.db", dir);
    rec_recorder *rec;
    rec_open(path, &rec, &d);
    record(rec, sc, SIM_STATUS_COMPLETED);
    rec_close(rec);
    sqlite3 *db;
    sqlite3_open(path, &db);
    int rc = sqlite3_exec(db, "DROP VIEW request_metrics; "
                              "ALTER TABLE replicas DROP COLUMN output_s; "
                              "ALTER TABLE iterations DROP COLUMN scheduled_s; "
                              "ALTER TABLE iterations DROP COLUMN gpu_start_s; "
                              "ALTER TABLE iterations DROP COLUMN gpu_end_s; "
                              "ALTER TABLE iterations DROP COLUMN client_s; "
                              "ALTER TABLE iterations DROP COLUMN decode_tokens; "
                              "ALTER TABLE iterations DROP COLUMN decode_accepted; "
                              "CREATE VIEW request_metrics AS SELECT run_id, id, replica, class, "
                              "task_id, call_index, slow, status, arrival_s, prompt_tokens, "
                              "output_tokens, first_token_s - arrival_s AS ttft_s, CASE WHEN "
                              "output_tokens >= 2 THEN (finish_s - first_token_s) / "
                              "(output_tokens - 1) END AS tpot_s, (finish_s - arrival_s) / "
                              "output_tokens AS tpot_incl_ttft_s, finish_s - arrival_s AS e2e_s, "
                              "first_scheduled_s - enqueue_s AS queue_s FROM requests; "
                              "ALTER TABLE requests DROP COLUMN cached_tokens; "
                              "ALTER TABLE replicas DROP COLUMN evicted_blocks; "
                              "ALTER TABLE replicas DROP COLUMN weight_bytes; "
                              "ALTER TABLE replicas DROP COLUMN kv_bytes_per_token; "
                              "ALTER TABLE replicas DROP COLUMN created_s; "
                              "ALTER TABLE replicas DROP COLUMN ready_s; "
                              "ALTER TABLE replicas DROP COLUMN retired_s; "
                              "ALTER TABLE replicas DROP COLUMN end_reason; "
                              "ALTER TABLE replicas DROP COLUMN spec_k; "
                              "ALTER TABLE replicas DROP COLUMN spec_steps; "
                              "ALTER TABLE replicas DROP COLUMN spec_off_steps; "
                              "ALTER TABLE replicas DROP COLUMN spec_drafts; "
                              "ALTER TABLE replicas DROP COLUMN spec_draft_tokens; "
                              "ALTER TABLE replicas DROP COLUMN spec_accepted; "
                              "ALTER TABLE replicas DROP COLUMN spec_drafting_s; "
                              "ALTER TABLE replicas DROP COLUMN spec_verify_s; "
                              "ALTER TABLE replicas DROP COLUMN lora_slots; "
                              "ALTER TABLE replicas DROP COLUMN lora_lookups; "
                              "ALTER TABLE replicas DROP COLUMN lora_gpu_hits; "
                              "ALTER TABLE replicas DROP COLUMN lora_cpu_hits; "
                              "ALTER TABLE replicas DROP COLUMN lora_load_s; "
                              "ALTER TABLE replicas DROP COLUMN lora_kernel_s; "
                              "ALTER TABLE replicas DROP COLUMN cpu_tier_bytes; "
                              "ALTER TABLE replicas DROP COLUMN cpu_lookup_tokens; "
                              "ALTER TABLE replicas DROP COLUMN cpu_hit_tokens; "
                              "ALTER TABLE replicas DROP COLUMN cpu_stored_bytes; "
                              "ALTER TABLE replicas DROP COLUMN cpu_loaded_bytes; "
                              "ALTER TABLE replicas DROP COLUMN disk_tier_bytes; "
                              "ALTER TABLE replicas DROP COLUMN disk_lookup_tokens; "
                              "ALTER TABLE replicas DROP COLUMN disk_hit_tokens; "
                              "ALTER TABLE replicas DROP COLUMN disk_stored_bytes; "
                              "ALTER TABLE replicas DROP COLUMN disk_loaded_bytes; "
                              "ALTER TABLE replicas DROP COLUMN drain_s; "
                              "DROP TABLE measurements; "
                              "ALTER TABLE runs DROP COLUMN requests; "
                              "ALTER TABLE requests DROP COLUMN priority; "
                              "ALTER TABLE requests DROP COLUMN deadline_s; "
                              "ALTER TABLE requests DROP COLUMN tenant; "
                              "ALTER TABLE requests DROP COLUMN reason; "
                              "ALTER TABLE requests DROP COLUMN retry_of; "
                              "ALTER TABLE requests DROP COLUMN retried; "
                              "ALTER TABLE requests DROP COLUMN cpu_hit_tokens; "
                              "ALTER TABLE requests DROP COLUMN disk_hit_tokens; "
                              "ALTER TABLE requests DROP COLUMN restarts; "
                              "ALTER TABLE requests DROP COLUMN restarted_from; "
                              "ALTER TABLE iterations DROP COLUMN cpu_tier_tokens; "
                              "ALTER TABLE iterations DROP COLUMN disk_tier_tokens; "
                              "PRAGMA user_version = 2;", NULL, NULL, NULL);
    sqlite3_close(db);
    is_int(rc, SQLITE_OK, "a schema-2 database made");
    an_report r;
    is_int(an_open(path, &db, &d), 0, "report opens it");
    is_int(an_report_compute(db, 1, &r, &d), 0, "and reports its run");
    is_int(r.req.cached_tokens, 0, "with no prefix cache");
    ok(isnan(r.replicas[0].weight_bytes), "and its weight bytes unknown");
    ok(isnan(r.replicas[0].kv_bytes_per_token), "and its KV bytes per token unknown");
    an_report_fini(&r);
    sqlite3_close(db);
    rec_open(path, &rec, &d);
    record(rec, sc, SIM_STATUS_COMPLETED);
    rec_close(rec);
    sqlite3_open(path, &db);
    is_int(support_q1(db, "PRAGMA user_version"), 16, "adding a run upgrades it to schema 16");
    is_int(support_q1(db, "SELECT count(*) FROM requests WHERE restarts = 0 AND "
                          "restarted_from IS NULL"),
           20, "with the restart columns, 0 and NULL (never restarted) in the old rows and the new");
    is_int(support_q1(db, "SELECT count(*) FROM replicas WHERE drain_s IS NULL"),
           support_q1(db, "SELECT count(*) FROM replicas"),
           "with drain_s, NULL (never drained) in the old rows and the new");
    is_int(support_q1(db, "SELECT count(*) FROM requests WHERE cpu_hit_tokens IS NULL AND "
                          "disk_hit_tokens IS NULL"),
           20, "with the tiers' hits per request, NULL (no tier) in the old rows and the new");
    is_int(support_q1(db, "SELECT count(*) FROM replicas WHERE cpu_tier_bytes = 0 AND "
                          "cpu_hit_tokens = 0 AND cpu_loaded_bytes = 0"),
           support_q1(db, "SELECT count(*) FROM replicas"),
           "with the KV offload tier's columns, 0 (no tier) in the old rows and the new");
    is_int(support_q1(db, "SELECT count(*) FROM requests WHERE run_id = 1 AND priority IS NULL "
                          "AND deadline_s IS NULL AND tenant IS NULL"),
           10, "its old rows' priority, deadline and tenant are unknown (NULL)");
    is_int(support_q1(db, "SELECT count(*) FROM requests WHERE run_id = 2 AND priority = 0 "
                          "AND deadline_s IS NULL AND tenant IS NULL"),
           10, "the new run's as written: standard (0), no deadline, no tenant");
    is_int(support_q1(db, "SELECT count(*) FROM runs WHERE id = 1 AND requests IS NULL"), 1,
           "its old run's count of requests is unknown (NULL: its reads are not checked)");
    is_int(support_q1(db, "SELECT requests FROM runs WHERE id = 2"), 10,
           "the new run's is its 10 requests");
    is_int(support_q1(db, "SELECT count(*) FROM replicas WHERE spec_k = 0 AND spec_steps = 0"),
           support_q1(db, "SELECT count(*) FROM replicas"),
           "with speculative decoding's columns, 0 in the old rows and the new");
    is_int(support_q1(db, "SELECT count(*) FROM measurements"), 0,
           "with the table of measured runs, empty");
    old_iteration(db, path, &d);
    is_int(support_q1(db, "SELECT count(*) FROM request_metrics WHERE run_id = 1 AND "
                          "engine_ttft_s IS NULL"),
           10, "its old rows have no engine-core clock");
    is_int(support_q1(db, "SELECT count(*) FROM request_metrics WHERE run_id = 2 AND "
                          "engine_ttft_s IS NOT NULL"),
           9, "the new run's have it (all but the rejected one), through the view remade");
    is_near(support_q1(db, "SELECT max(abs(engine_ttft_s - (ttft_s - 5e-4))) FROM request_metrics "
                           "WHERE run_id = 2"),
            0, 1e-12, "the engine's TTFT is the client's less its replica's output_s (0.5 ms)");
    is_int(support_q1(db, "SELECT count(*) FROM requests WHERE run_id = 1 AND cached_tokens = 0"),
           10, "its old rows read 0 cached tokens");
    is_int(support_q1(db, "SELECT count(*) FROM requests WHERE run_id = 2"), 10,
           "and the new run is in it");
    is_int(support_q1(db, "SELECT count(*) FROM replicas WHERE run_id = 1 AND weight_bytes = 0"
                          " AND kv_bytes_per_token = 0"), 2, "its old replicas read 0 bytes");
    ok(support_q1(db, "SELECT min(weight_bytes) FROM replicas WHERE run_id = 2") > 0,
       "the new run's replicas have their weight bytes");
    is_int(support_q1(db, "SELECT count(*) FROM replicas WHERE run_id = 1 AND retired_s IS NULL"
                          " AND end_reason = 'end_of_run'"),
           2, "its old replicas' lives are unknown, there at the end");
    is_int(support_q1(db, "SELECT count(*) FROM replicas WHERE run_id = 2 AND created_s = 0"
                          " AND ready_s = 0 AND retired_s IS NOT NULL AND end_reason = 'end_of_run'"),
           2, "the new run's replicas have their lives");
    sqlite3_close(db);
    unlink(path);
    free(path);
    util_diag_fini(&d);
}

static void test_files(const char *dir, const sim_scenario *sc)
{
    util_diag d;
    util_diag_init(&d);
    char *path = util_xasprintf("%s/runs.db", dir);
    rec_recorder *rec;
    is_int(rec_open(path, &rec, &d), 0, "a new database is created");
    record(rec, sc, SIM_STATUS_COMPLETED);
    rec_close(rec);
    rec_open(path, &rec, &d);
    record(rec, sc, SIM_STATUS_INTERRUPTED);
    rec_close(rec);
    is_int(count_files(dir), 1, "publishing leaves no private file beside the database");

    sqlite3 *db;
    is_int(an_open(path, &db, &d), 0, "it opens read-only for analysis");
    int64_t last = 0;
    an_last_run(db, path, &last, &d);
    is_int(last, 2, "a second run is appended as run 2");
    test_report(db);
    an_report r2;
    an_report_compute(db, 2, &r2, &d);
    is_str(r2.status, "interrupted", "each run keeps its own status");
    an_report_fini(&r2);
    sqlite3_close(db);

    /* a run that fails is rolled back: the file is byte for byte as before */
    size_t len;
    char *before = slurp(path, &len);
    rec_open(path, &rec, &d);
    rec_begin(rec, sc, &d);
    sim_sink sink = rec_sink(rec);
    sim_request_row row = make_row(3);
    sink.request(sink.ctx, &row);
    rec_abort(rec);
    rec_close(rec);
    ok(unchanged(path, before, len), "an aborted run leaves the database untouched");
    free(before);

    char *fresh = util_xasprintf("%s/fresh.db", dir);
    rec_open(fresh, &rec, &d);
    rec_begin(rec, sc, &d);
    ok(access(fresh, F_OK) != 0, "a run in progress is not in the database until it finishes");
    rec_abort(rec);
    rec_close(rec);
    ok(access(fresh, F_OK) != 0, "an aborted run creates no database");
    is_int(count_files(dir), 1, "and leaves no private file");

    char *text = util_xasprintf("%s/notes.db", dir);
    FILE *f = fopen(text, "w");
    fputs("not a database\n", f);
    fclose(f);
    util_diag_clear(&d);
    is_int(rec_open(text, &rec, &d), UTIL_EINPUT, "a text file is refused");
    has_str(d.count ? d.msgs[0] : "", "not a SQLite database (left untouched)", "and says so");
    ok(unchanged(text, "not a database\n", 15), "and is left as it was");

    char *other = util_xasprintf("%s/other.db", dir);
    sqlite3_open(other, &db);
    sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", NULL, NULL, NULL);
    sqlite3_close(db);
    before = slurp(other, &len);
    util_diag_clear(&d);
    is_int(rec_open(other, &rec, &d), UTIL_EINPUT, "another program's database is refused");
    has_str(d.count ? d.msgs[0] : "", "is not a servesim database", "and says so");
    ok(unchanged(other, before, len), "and is left as it was");
    util_diag_clear(&d);
    is_int(an_open(other, &db, &d), UTIL_EINPUT, "report refuses it too");
    free(before);

    /* an empty SQLite file is another program's too: never taken over */
    char *empty = util_xasprintf("%s/empty.db", dir);
    fclose(fopen(empty, "w"));
    util_diag_clear(&d);
    is_int(rec_check(empty, &d), UTIL_EINPUT, "an empty file is refused");
    sqlite3_open(empty, &db);
    sqlite3_exec(db, "PRAGMA application_id = 42; PRAGMA user_version = 1;", NULL, NULL, NULL);
    sqlite3_close(db);
    before = slurp(empty, &len);
    util_diag_clear(&d);
    is_int(rec_open(empty, &rec, &d), UTIL_EINPUT,
           "an empty database of another program is refused");
    ok(unchanged(empty, before, len), "and is left as it was");
    free(before);
    const char *not_files[] = {"", ":memory:", "file:x.db?mode=memory"};
    for (int i = 0; i < 3; i++) {
        util_diag_clear(&d);
        is_int(rec_check(not_files[i], &d), UTIL_EINPUT, "'%s' is not a database file",
               not_files[i]);
    }
    unlink(empty);
    free(empty);

    unlink(path);
    unlink(text);
    unlink(other);
    free(path);
    free(fresh);
    free(text);
    free(other);
    util_diag_fini(&d);
}

/* ---- the writer thread ---- */

/* Every row of every table but the run's wall-clock fields (started_at,
 * wall_s), as text with every digit, in key order: what two runs of one
 * scenario must share (caller frees). */
static char *dump(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
    static const char *const queries[] = {
        "SELECT id, name, seed, scenario, status, sim_end_s, events FROM runs ORDER BY id",
        "SELECT * FROM requests ORDER BY run_id, id", "SELECT * FROM replicas",
        "SELECT * FROM tasks", "SELECT * FROM iterations",
        "SELECT name, sql FROM sqlite_master ORDER BY name", "PRAGMA page_count"};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, queries[q], -1, &st, NULL) != SQLITE_OK) continue;
        while (sqlite3_step(st) == SQLITE_ROW)
            for (int i = 0; i < sqlite3_column_count(st); i++) {
                if (sqlite3_column_type(st, i) == SQLITE_FLOAT)
                    fprintf(f, "%.17g|", sqlite3_column_double(st, i));
                else
                    fprintf(f, "%s|", sqlite3_column_text(st, i) ? (const char *)sqlite3_column_text(st, i) : "NULL");
            }
        fputc('\n', f);
        sqlite3_finalize(st);
    }
    fclose(f);
    sqlite3_close(db);
    return text;
}

/* The same scenario -- agent tasks, classes, iterations recorded -- run
 * with the rows written on the engine's thread and on a thread of their
 * own, several times: the same rows, tables and pages every time, whatever
 * the threads' timing. */
static void test_writer_thread(const char *dir)
{
    char *scenario = support_scenario_text("prefix-agent.json");
    char *want = NULL;
    bool same = true;
    int rows = 0;
    for (int k = 0; k < 4; k++) {
        char *path = util_xasprintf("%s/writer-%d.db", dir, k);
        util_diag d;
        util_diag_init(&d);
        cJSON *root = cJSON_Parse(scenario);
        util_json_set(root, "stop.requests=300", &d); /* some 30 of the writer's batches */
        rec_run_spec spec = {.catalog = support_catalog, .scenario = root, .output = path,
                             .iterations = true, .writer_thread = k > 0};
        rec_run_result res;
        int rc = rec_run(&spec, &res, &d);
        util_diag_print(&d, stdout, "# run");
        util_diag_fini(&d);
        rec_run_result_fini(&res);
        char *got = rc ? NULL : dump(path);
        if (!want) {
            want = got;
            for (const char *c = got; c && *c; c++) rows += *c == '|';
        } else {
            same &= got && !strcmp(got, want);
            free(got);
        }
        unlink(path);
        free(path);
    }
    cmp_ok(rows, >, 100000, "the run records requests, tasks and iterations");
    ok(same, "with the writer on its own thread, three runs write what the engine's thread "
             "writes: the same rows, tables and pages");
    free(want);
    free(scenario);
}

/* A run into memory (a lesson's point) keeps SQLite's default pages; a
 * run into a file has 64 KiB ones (recorder.c connect says why). */
static void test_page_sizes(const char *dir)
{
    char *path = util_xasprintf("%s/pages.db", dir);
    double pages[2];
    for (int k = 0; k < 2; k++) {
        util_diag d;
        util_diag_init(&d);
        char *json = support_scenario_text("db-hand.json");
        cJSON *root = cJSON_Parse(json);
        free(json);
        rec_run_spec spec = {.catalog = support_catalog, .scenario = root,
                             .output = k ? path : NULL};
        rec_run_result res;
        int rc = rec_run(&spec, &res, &d);
        util_diag_fini(&d);
        sqlite3 *db = res.db;
        if (!rc && k) sqlite3_open(path, &db);
        pages[k] = rc ? NAN : support_q1(db, "PRAGMA page_size");
        if (k) sqlite3_close(db);
        rec_run_result_fini(&res);
    }
    sqlite3 *fresh = NULL;
    sqlite3_open(":memory:", &fresh);
    is_near(pages[0], support_q1(fresh, "PRAGMA page_size"), 0,
            "a run in memory has SQLite's default pages (%g bytes)", pages[0]);
    sqlite3_close(fresh);
    is_near(pages[1], 65536, 0, "a run into a file, 64 KiB ones");
    unlink(path);
    free(path);
}

int main(void)
{
    if (support_init()) return 1;
    /* ten requests, a 1.5 s warm-up and an SLO: the run whose rows are made by hand */
    char *json = support_scenario_text("db-hand.json");
    sim_scenario sc;
    support_scenario(json, NULL, &sc, NULL);
    free(json);
    char dir[] = "/tmp/servesim-test-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_files(dir, &sc);
    test_upgrade(dir, &sc);
    test_writer_thread(dir);
    test_page_sizes(dir);
    rmdir(dir);
    sim_scenario_fini(&sc);
    support_fini();
    return tap_done();
}
