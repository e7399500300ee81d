/*
 * test_offload_published.c: the KV offload tier (cluster.kv_offload) against
 * published figures -- the scenarios of examples/validation/kv-offload, as
 * docs/validation.md ("KV offload") reports them.  Each figure servesim
 * reproduces is held within the 25% of the published one; for the
 * ones it does not (vLLM PR #27743's timings, the compute-bound TTFT of
 * llm-d's guide, most of its gpt-oss-120B figures), the test holds what
 * servesim predicts instead: the tier's load is exactly its bytes over the
 * link, and the direction of its effect.  argv[1] is the source root.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "support.h"
#include "tap.h"

#define PUBLISHED_TOL 0.25 /* servesim issue 29: within 25% of the published figure */
/* the run without a tier: cpu_gib 0 is the same run as without the key
 * (test_offload.c, unchanged) */
#define NO_TIER "cluster.kv_offload.cpu_gib=0"

static const char *root = ".";

/* Runs examples/validation/kv-offload/FILE with sets (NULL terminated);
 * its trace, if any, is named by a set, since a scenario given as text has
 * no folder to resolve a relative path against. */
static sqlite3 *run_published(const char *file, const char *const *sets)
{
    char *path = util_xasprintf("%s/examples/validation/kv-offload/%s", root, file), *text = NULL;
    size_t len;
    util_diag d;
    util_diag_init(&d);
    sqlite3 *db = util_read_file(path, &text, &len, &d) ? NULL : support_run_json(text, sets, false);
    ok(db != NULL, "%s runs", file);
    util_diag_fini(&d);
    free(text);
    free(path);
    return db;
}

/* The --set that replays examples/validation/kv-offload/TRACE (caller frees). */
static char *trace_set(const char *trace)
{
    return util_xasprintf("workload.arrival.path=\"%s/examples/validation/kv-offload/%s\"", root,
                          trace);
}

/* Request id's TTFT in db, s. */
static double ttft(sqlite3 *db, int id)
{
    char sql[120];
    snprintf(sql, sizeof sql, "SELECT ttft_s FROM request_metrics WHERE id = %d", id);
    return support_q1(db, sql);
}

static bool within(double servesim, double published)
{
    return fabs(servesim / published - 1) <= PUBLISHED_TOL;
}

/* ---- vLLM PR #27743: not reproduced ---- */

/* Llama-3.2-1B, one 10001-token prompt: 145.48 ms cold, 9.03 ms a GPU hit,
 * 43.14 ms a CPU hit with the cross-layer layout (H100 assumed).  servesim's
 * prefill is 2.5x faster and its load 7x faster than that (docs/validation.md
 * says why), so what is held is its own prediction: the CPU hit lies between
 * the two, and exceeds the GPU hit -- the same 17 tokens computed on the same
 * context -- by exactly the load, 9984 tokens x 32768 bytes over 64 GB/s. */
static void pr27743(void)
{
    char *trace = trace_set("pr27743.csv");
    sqlite3 *db = run_published("pr27743.json", (const char *[]){trace, NULL});
    double cold = ttft(db, 0), gpu = ttft(db, 1), cpu = ttft(db, 4);
    tap_diag("cold %.2f ms, GPU hit %.2f ms, CPU hit %.2f ms (published 145.48, 9.03, 43.14)",
             1e3 * cold, 1e3 * gpu, 1e3 * cpu);
    ok(gpu < cpu && cpu < cold, "a CPU hit is slower than a GPU hit and faster than cold");
    double load = 9984 * 32768.0 / 64e9;
    is_near(cpu - gpu, load, 1e-6, "its extra time is the load: 9984 x 32768 B / 64 GB/s = %.6f s",
            load);
    sqlite3_close(db);
    free(trace);
}

/* ---- the vLLM blog of 2025-12-29 ---- */

/* Figure 1, Llama-3.1-8B on an H100: "loading KV values from the CPU
 * reduces TTFT by X2-X22", x2 at 512 tokens (the blog: "TTFT for this
 * prompt size only decreased by X2"). */
static void blog_ttft(void)
{
    char *trace = trace_set("blog-ttft.csv");
    sqlite3 *db = run_published("blog-ttft.json", (const char *[]){trace, NULL});
    double speedup = ttft(db, 0) / ttft(db, 4);
    ok(within(speedup, 2), "512 tokens: a CPU hit's TTFT x%.2f shorter than cold, published x2",
       speedup);
    sqlite3_close(db);
    free(trace);
}

/* Figure 2: 10000 prompts of 512 tokens at once, "throughput increases by
 * up to X9" with the CPU hit rate -- all hits against none. */
static double second_pass_tokens_per_s(sqlite3 *db)
{
    return support_q1(db, "SELECT (SELECT sum(prompt_tokens) FROM requests WHERE id >= 10000) / "
                          "((SELECT max(finish_s) FROM requests WHERE id >= 10000) - "
                          "(SELECT max(finish_s) FROM requests WHERE id < 10000))");
}

static void blog_throughput(void)
{
    sqlite3 *hit = run_published("blog-throughput.json", (const char *[]){NULL});
    sqlite3 *miss = run_published("blog-throughput.json",
                                  (const char *[]){NO_TIER, NULL});
    double gain = second_pass_tokens_per_s(hit) / second_pass_tokens_per_s(miss);
    ok(within(gain, 9), "every prompt from the tier: x%.2f the throughput, published up to x9",
       gain);
    sqlite3_close(hit);
    sqlite3_close(miss);
}

/* ---- llm-d's guides/tiered-prefix-cache/cpu: Qwen3-32B, 8 x TP2 H100 ---- */

typedef struct llmd_run {
    double ttft, e2e, tpot, tokens_per_s, requests_per_s;
} llmd_run;

/* The report's means and throughputs of examples/validation/kv-offload/FILE. */
static llmd_run report_of(const char *file, const char *const *sets)
{
    llmd_run r = {NAN, NAN, NAN, NAN, NAN};
    sqlite3 *db = run_published(file, sets);
    util_diag d;
    util_diag_init(&d);
    an_report a;
    if (db && an_report_compute(db, 1, &a, &d) == UTIL_OK) {
        r = (llmd_run){a.req.ttft.mean, a.req.e2e.mean, a.req.tpot.mean,
                       a.req.input_tokens_per_s + a.req.output_tokens_per_s,
                       a.req.requests_per_s};
        an_report_fini(&a);
    }
    util_diag_fini(&d);
    sqlite3_close(db);
    return r;
}

static llmd_run llmd(const char *const *sets)
{
    return report_of("llmd-qwen3-32b.json", sets);
}

/* Memory-bound (30000-token system prompts): mean TTFT 9.0 -> 6.7 s (-25%),
 * mean E2E 37.8 -> 31.0 s (-18%), 38534.8 -> 46662.5 tokens/s (+21.1%). */
static void llmd_memory_bound(void)
{
    llmd_run hbm = llmd((const char *[]){NO_TIER, NULL});
    llmd_run cpu = llmd((const char *[]){NULL});
    double ttft_cut = 1 - cpu.ttft / hbm.ttft, e2e_cut = 1 - cpu.e2e / hbm.e2e,
           gain = cpu.tokens_per_s / hbm.tokens_per_s - 1;
    tap_diag("TTFT %.2f -> %.2f s, E2E %.2f -> %.2f s, %.0f -> %.0f tokens/s", hbm.ttft, cpu.ttft,
             hbm.e2e, cpu.e2e, hbm.tokens_per_s, cpu.tokens_per_s);
    ok(within(ttft_cut, 0.25), "memory-bound: the tier cuts mean TTFT by %.1f%%, published 25%%",
       100 * ttft_cut);
    ok(within(e2e_cut, 0.18), "memory-bound: mean E2E by %.1f%%, published 18%%", 100 * e2e_cut);
    ok(within(gain, 0.211), "memory-bound: throughput +%.1f%%, published +21.1%%", 100 * gain);
    ok(within(hbm.tokens_per_s, 38534.8) && within(cpu.tokens_per_s, 46662.5),
       "memory-bound: throughput %.0f and %.0f tokens/s, published 38534.8 and 46662.5",
       hbm.tokens_per_s, cpu.tokens_per_s);
    ok(within(hbm.e2e, 37.8) && within(cpu.e2e, 31.0),
       "memory-bound: mean E2E %.2f and %.2f s, published 37.8 and 31.0", hbm.e2e, cpu.e2e);
    /* servesim's mean TTFTs are 40-45% above the published ones: only
     * their ratio is reproduced (docs/validation.md) */
    ok(hbm.ttft > cpu.ttft, "memory-bound: mean TTFT lower with the tier");
}

/* Compute-bound (8000-token system prompts): "all offloading configurations
 * perform similarly to the baseline" -- 23389.6 and 23032.6 tokens/s, mean
 * TTFT 0.12 and 0.13 s.  The throughputs reproduce; the TTFTs do not
 * (servesim's router spreads a group over replicas more than llm-d's
 * scorers, docs/validation.md), and servesim predicts a shorter TTFT with
 * the tier. */
static void llmd_compute_bound(void)
{
    const char *cb = "workload.shared_prefix.system_prompt_len=8000";
    llmd_run hbm = llmd((const char *[]){cb, NO_TIER, NULL});
    llmd_run cpu = llmd((const char *[]){cb, NULL});
    tap_diag("TTFT %.2f -> %.2f s, E2E %.2f -> %.2f s, %.0f -> %.0f tokens/s", hbm.ttft, cpu.ttft,
             hbm.e2e, cpu.e2e, hbm.tokens_per_s, cpu.tokens_per_s);
    ok(within(hbm.tokens_per_s, 23389.6) && within(cpu.tokens_per_s, 23032.6),
       "compute-bound: throughput %.0f and %.0f tokens/s, published 23389.6 and 23032.6",
       hbm.tokens_per_s, cpu.tokens_per_s);
    ok(within(cpu.tokens_per_s / hbm.tokens_per_s, 23032.6 / 23389.6),
       "compute-bound: the tier changes throughput by %+.1f%%, published -1.5%%",
       100 * (cpu.tokens_per_s / hbm.tokens_per_s - 1));
    ok(within(hbm.e2e, 18.4) && within(cpu.e2e, 18.6),
       "compute-bound: mean E2E %.2f and %.2f s, published 18.4 and 18.6", hbm.e2e, cpu.e2e);
    ok(cpu.ttft <= hbm.ttft, "compute-bound: servesim's mean TTFT no higher with the tier");
}

/* The guide's gpt-oss-120B results (16 x TP1 H100, eight Poisson stages of
 * 5 to 40 QPS): requests/s 9.69 -> 11.48, mean TTFT 12.5 -> 1.2 s, mean
 * E2E 19.2 -> 5.3 s, mean TPOT 26.1 -> 15.7 ms.  servesim's H100 serves
 * gpt-oss-120B faster than the run did, so it saturates at a higher stage:
 * the mean TTFT and E2E without the tier reproduce, and the tier's factor
 * on TPOT; the rest do not (docs/validation.md), and the test holds their
 * direction. */
static void llmd_gpt_oss(void)
{
    char *trace = trace_set("gptoss-stages.csv");
    llmd_run hbm = report_of("llmd-gpt-oss-120b.json", (const char *[]){trace, NO_TIER, NULL});
    llmd_run cpu = report_of("llmd-gpt-oss-120b.json", (const char *[]){trace, NULL});
    free(trace);
    tap_diag("requests/s %.2f -> %.2f, TTFT %.2f -> %.2f s, E2E %.2f -> %.2f s, TPOT %.2f -> "
             "%.2f ms",
             hbm.requests_per_s, cpu.requests_per_s, hbm.ttft, cpu.ttft, hbm.e2e, cpu.e2e,
             1e3 * hbm.tpot, 1e3 * cpu.tpot);
    ok(within(hbm.ttft, 12.5), "gpt-oss-120B: mean TTFT without the tier %.2f s, published 12.5",
       hbm.ttft);
    ok(within(hbm.e2e, 19.2), "gpt-oss-120B: mean E2E without the tier %.2f s, published 19.2",
       hbm.e2e);
    ok(within(hbm.tpot / cpu.tpot, 26.1 / 15.7),
       "gpt-oss-120B: the tier divides mean TPOT by %.2f, published %.2f", hbm.tpot / cpu.tpot,
       26.1 / 15.7);
    ok(cpu.requests_per_s > hbm.requests_per_s && cpu.ttft < hbm.ttft / 2 && cpu.e2e < hbm.e2e,
       "gpt-oss-120B: the tier raises requests/s and cuts mean TTFT by more than half, and E2E");
}

int main(int argc, char **argv)
{
    if (argc > 1) root = argv[1];
    if (support_init()) return 1;
    pr27743();
    blog_ttft();
    blog_throughput();
    llmd_memory_bound();
    llmd_compute_bound();
    llmd_gpt_oss();
    support_fini();
    return tap_done();
}
