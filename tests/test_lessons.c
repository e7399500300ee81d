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
    ok(rc == 0 && result.n_findings >= 2 && cJSON_GetArraySize(result.table) >= 2,
       "%s runs: %d rows, %d findings", name, cJSON_GetArraySize(result.table),
       result.n_findings);
    return rc == 0;
}

static double kept(const char *name)
{
    return util_json_number(result.numbers, name, NAN);
}

static bool said(const char *text)
{
    for (int i = 0; i < result.n_findings; i++)
        if (strstr(result.findings[i], text)) return true;
    return false;
}

static void test_two_clocks(void)
{
    if (!run("two-clocks", NULL, 0)) return;
    ok(kept("ttft_ratio_prompt") > 20 && kept("tpot_ratio_prompt") < 1.5,
       "the prompt moves TTFT (x%.0f over 256x the tokens) and barely TPOT (x%.2f)",
       kept("ttft_ratio_prompt"), kept("tpot_ratio_prompt"));
    ok(kept("e2e_ratio_reply") > 20 && fabs(kept("ttft_ratio_reply") - 1) < 0.05,
       "the reply moves e2e (x%.0f over 100x the tokens) and not TTFT", kept("e2e_ratio_reply"));
    ok(kept("e2e_identity_error_s") < 1e-6, "e2e = TTFT + TPOT x (tokens - 1) on the means");
    char *set[] = {"lesson.reply_tokens=[10, 50, 400]"};
    if (run("two-clocks", set, 1))
        ok(said("x 49 = ") && said("from 10 to 400 reply tokens"),
           "--set lesson.reply_tokens: the sentences follow the new sweep");
}

static void test_chat_vs_summary(void)
{
    if (!run("chat-vs-summary", NULL, 0)) return;
    ok(kept("chat_e2e_a") < kept("chat_e2e_b") && kept("summary_e2e_b") < kept("summary_e2e_a"),
       "the quick starter finishes the chat first, the fast streamer the summary");
    /* the shipped systems: TTFT 0.01 + 0.2 and 0.01 + 2.2 s, TPOT 0.03 and 0.01 s */
    is_near(kept("crossover_tokens"), 1 + 2.0 / 0.02, 1.5, "they cross at 101 tokens (%.1f)",
            kept("crossover_tokens"));
}

static void test_batching(void)
{
    if (!run("batching", NULL, 0)) return;
    ok(kept("throughput_gain") > 10 && kept("per_user_ratio") < 1,
       "64 users get x%.0f the throughput of 1, each user %.0f%% of the speed",
       kept("throughput_gain"), 100 * kept("per_user_ratio"));
    ok(kept("ttft_growth_past_batch") > 10 && fabs(kept("throughput_change_past_batch")) < 0.25,
       "past the batch TTFT climbs (x%.0f) while throughput flattens (%+.0f%%)",
       kept("ttft_growth_past_batch"), 100 * kept("throughput_change_past_batch"));
    ok(kept("goodput_last") < 0.5 * kept("goodput_peak"), "goodput peaks, then falls");
}

static void test_utilisation(void)
{
    if (!run("utilisation", NULL, 0)) return;
    ok(kept("cost_ratio") > 3 && kept("energy_ratio") > 1.5,
       "at 10%% load a token costs x%.1f and x%.1f the energy of one at full load",
       kept("cost_ratio"), kept("energy_ratio"));
    ok(kept("wall_over_gpu") >= 1, "wall energy is at least GPU energy");
}

static void test_tail(void)
{
    if (!run("tail", NULL, 0)) return;
    ok(kept("p99_growth") > 5 && kept("mean_growth") < 2 && kept("p50_growth") < 1.2,
       "5%% slow requests move P99 x%.1f, the mean x%.2f, the median x%.2f", kept("p99_growth"),
       kept("mean_growth"), kept("p50_growth"));
    ok(kept("p99_slow") > 15, "P99 over 15 s at 5%% slow (%.1f s)", kept("p99_slow"));
}

static void test_fan_out(void)
{
    if (!run("fan-out", NULL, 0)) return;
    /* every measured share against 1 - (1 - p)^n, in standard errors of its sample */
    ok(kept("worst_z") < 4, "each share is within 4 standard errors of 1 - (1 - p)^n (worst %.2f)",
       kept("worst_z"));
    ok(said("1 - (1 - p)^n = 9.6%"), "10 calls at 1%%: 9.6%%, the seed's figure");
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
    ok(ls_find("nope") == NULL && ls_find("tail") != NULL, "lessons are found by name");
    support_fini();
    return tap_done();
}
