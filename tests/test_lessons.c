/*
 * test_lessons.c: every lesson runs at its reduced size (--quick), with the
 * real engine, and its key claim holds in the numbers it computed; --set
 * moves the sentences with the numbers.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ls.h"
#include "support.h"
#include "tap.h"

static ls_result result;

static bool run(const char *name, char **sets, int n_sets)
{
    util_diag d;
    util_diag_init(&d);
    ls_result_fini(&result);
    int rc = ls_run(ls_find(name), support_catalog, sets, n_sets, true, 2, &result, &d);
    util_diag_print(&d, stdout, "# lesson");
    util_diag_fini(&d);
    is_int(rc, 0, "%s runs: %d rows, %d findings", name, cJSON_GetArraySize(result.table),
           result.n_findings);
    ok(result.n_findings >= 2, "%s: at least two findings (%d)", name, result.n_findings);
    ok(cJSON_GetArraySize(result.table) >= 2, "%s: at least two rows (%d)", name,
       cJSON_GetArraySize(result.table));
    return rc == 0;
}

static double kept(const char *name)
{
    return util_json_number(result.numbers, name, NAN);
}

/* The findings, one a line (caller frees): a text no finding spans, found
 * in it, is in one finding. */
static char *findings(void)
{
    char *all = util_xstrdup("");
    for (int i = 0; i < result.n_findings; i++) {
        char *more = util_xasprintf("%s%s\n", all, result.findings[i]);
        free(all);
        all = more;
    }
    return all;
}

static void test_two_clocks(void)
{
    if (!run("two-clocks", NULL, 0)) return;
    ok(kept("ttft_ratio_prompt") > 20,
       "the prompt moves TTFT (x%.0f over 256x the tokens) and barely TPOT (x%.2f)",
       kept("ttft_ratio_prompt"), kept("tpot_ratio_prompt"));
    ok(kept("tpot_ratio_prompt") < 1.5, "TPOT moves under x1.5 (x%.2f)", kept("tpot_ratio_prompt"));
    ok(kept("e2e_ratio_reply") > 20,
       "the reply moves e2e (x%.0f over 100x the tokens) and not TTFT", kept("e2e_ratio_reply"));
    /* |ratio - 1| < 0.05: within the largest double below 0.05 */
    is_near(kept("ttft_ratio_reply"), 1, nextafter(0.05, 0), "TTFT stays within 5%% (x%.3f)",
            kept("ttft_ratio_reply"));
    ok(kept("e2e_identity_error_s") < 1e-6, "e2e = TTFT + TPOT x (tokens - 1) on the means");
    char *set[] = {"lesson.reply_tokens=[10, 50, 400]"};
    if (run("two-clocks", set, 1)) {
        char *said = findings();
        has_str(said, "x 49 = ", "--set lesson.reply_tokens: the sentences follow the new sweep");
        has_str(said, "from 10 to 400 reply tokens", "the new sweep's ends are named");
        free(said);
    }
}

static void test_chat_vs_summary(void)
{
    if (!run("chat-vs-summary", NULL, 0)) return;
    ok(kept("chat_e2e_a") < kept("chat_e2e_b"),
       "the quick starter finishes the chat first, the fast streamer the summary");
    ok(kept("summary_e2e_b") < kept("summary_e2e_a"),
       "the fast streamer finishes the summary first (%.2f s against %.2f s)",
       kept("summary_e2e_b"), kept("summary_e2e_a"));
    /* the shipped systems: TTFT 0.01 + 0.2 and 0.01 + 2.2 s, TPOT 0.03 and 0.01 s */
    is_near(kept("crossover_tokens"), 1 + 2.0 / 0.02, 1.5, "they cross at 101 tokens (%.1f)",
            kept("crossover_tokens"));
}

static void test_batching(void)
{
    if (!run("batching", NULL, 0)) return;
    ok(kept("throughput_gain") > 10,
       "64 users get x%.0f the throughput of 1, each user %.0f%% of the speed",
       kept("throughput_gain"), 100 * kept("per_user_ratio"));
    ok(kept("per_user_ratio") < 1, "each user is slower (%.0f%% of the speed)",
       100 * kept("per_user_ratio"));
    ok(kept("ttft_growth_past_batch") > 10,
       "past the batch TTFT climbs (x%.0f) while throughput flattens (%+.0f%%)",
       kept("ttft_growth_past_batch"), 100 * kept("throughput_change_past_batch"));
    /* |change| < 0.25: within the largest double below 0.25 */
    is_near(kept("throughput_change_past_batch"), 0, nextafter(0.25, 0),
            "past the batch throughput changes by under 25%%");
    ok(kept("goodput_last") < 0.5 * kept("goodput_peak"), "goodput peaks, then falls");
}

static void test_utilisation(void)
{
    if (!run("utilisation", NULL, 0)) return;
    ok(kept("cost_ratio") > 3,
       "at 10%% load a token costs x%.1f and x%.1f the energy of one at full load",
       kept("cost_ratio"), kept("energy_ratio"));
    ok(kept("energy_ratio") > 1.5, "and over x1.5 the energy (x%.1f)", kept("energy_ratio"));
    ok(kept("wall_over_gpu") >= 1, "wall energy is at least GPU energy");
}

static void test_tail(void)
{
    if (!run("tail", NULL, 0)) return;
    ok(kept("p99_growth") > 5,
       "5%% slow requests move P99 x%.1f, the mean x%.2f, the median x%.2f", kept("p99_growth"),
       kept("mean_growth"), kept("p50_growth"));
    ok(kept("mean_growth") < 2, "the mean under x2 (x%.2f)", kept("mean_growth"));
    ok(kept("p50_growth") < 1.2, "the median under x1.2 (x%.2f)", kept("p50_growth"));
    ok(kept("p99_slow") > 15, "P99 over 15 s at 5%% slow (%.1f s)", kept("p99_slow"));
}

static void test_fan_out(void)
{
    if (!run("fan-out", NULL, 0)) return;
    /* every measured share against 1 - (1 - p)^n, in standard errors of its sample */
    ok(kept("worst_z") < 4, "each share is within 4 standard errors of 1 - (1 - p)^n (worst %.2f)",
       kept("worst_z"));
    char *said = findings();
    has_str(said, "1 - (1 - p)^n = 9.6%", "10 calls at 1%%: 9.6%%, the seed's figure");
    free(said);
}

static void test_definitions(void)
{
    if (!run("definitions", NULL, 0)) return;
    ok(kept("itl_pooled_p99") > kept("tpot_p99"), "pooled ITL's P99 is above TPOT's");
    ok(kept("tpot_incl_ttft_mean") > kept("tpot_mean"),
       "folding TTFT in raises the per-token mean");
}

int main(void)
{
    if (support_init()) return 1;
    test_two_clocks();
    test_chat_vs_summary();
    test_batching();
    test_utilisation();
    test_tail();
    test_fan_out();
    test_definitions();
    ls_result_fini(&result);
    ok(ls_find("nope") == NULL, "lessons are found by name");
    ok(ls_find("tail") != NULL, "the tail lesson is found");
    support_fini();
    return tap_done();
}
