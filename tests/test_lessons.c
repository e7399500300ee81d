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

/* ---- the figure, read back ---- */

/* The series called name in any panel (its panel in *panel), or NULL. */
static const an_plot_series *series(const char *name, int *panel)
{
    for (int k = 0; k < result.plot.n_panels; k++)
        for (int i = 0; i < result.plot.panels[k].n_series; i++)
            if (!strcmp(result.plot.panels[k].series[i].name, name)) {
                if (panel) *panel = k;
                return &result.plot.panels[k].series[i];
            }
    return NULL;
}

/* The guide of that kind at at (vertical or not) in any panel, or NULL. */
static const an_plot_guide *guide(an_plot_guide_kind kind, double at, bool vertical)
{
    for (int k = 0; k < result.plot.n_panels; k++)
        for (int i = 0; i < result.plot.panels[k].n_guides; i++) {
            const an_plot_guide *g = &result.plot.panels[k].guides[i];
            if (g->kind == kind && g->vertical == vertical && fabs(g->at - at) < 1e-9) return g;
        }
    return NULL;
}

/* A series is there with n points (n < 0: at least -n) drawn in style. */
static void has_series(const char *name, int n, an_plot_style style)
{
    const an_plot_series *s = series(name, NULL);
    ok(s != NULL, "the figure has the series '%s'", name);
    if (!s) return;
    if (n >= 0)
        is_int((int)s->n, n, "'%s' has %d points", name, n);
    else
        ok((int)s->n >= -n, "'%s' has at least %d points (%zu)", name, -n, s->n);
    is_int((int)s->style, (int)style, "'%s' is drawn in style %d", name, (int)style);
}

/* The title says what was simulated, not a path or a key: the lesson's
 * name first, no slash, no dotted key. */
static void title_is_plain(const char *name)
{
    const char *t = result.plot.title;
    ok(t && !strncmp(t, name, strlen(name)), "%s: the title starts with the lesson's name (%s)",
       name, t ? t : "none");
    ok(t && !strchr(t, '/'), "%s: the title is not a path", name);
    ok(t && !strstr(t, "workload.") && !strstr(t, "cluster."), "%s: nor a dotted key", name);
}

/* ---- the table, printed ---- */

/* Every numeric column prints with its one number of decimals on every row,
 * its unit on the second header line; and the findings wrap at width. */
static void table_is_fixed(const char *name)
{
    ok(result.n_columns > 0, "%s: the table has column formats", name);
    cJSON *first = cJSON_GetArrayItem(result.table, 0);
    is_int(result.n_columns, cJSON_GetArraySize(first), "%s: a format for every column", name);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    ls_print_width(ls_find(name), &result, 72, f);
    fclose(f);
    char *lines[128];
    int n = 0;
    for (char *l = text; l && *l && n < 128;) {
        lines[n++] = l;
        if ((l = strchr(l, '\n'))) *l++ = 0;
    }
    /* lines: the summary (maybe wrapped), a blank, headers, units, the rows, a blank, the
     * findings */
    int head = 0;
    while (head < n && *lines[head])
        head++;
    head++;
    int bad = 0, checked = 0, rows = cJSON_GetArraySize(result.table);
    ok(head + 2 + rows <= n, "%s: the header, the units and %d rows print", name, rows);
    const char *at = head < n ? lines[head] : "";
    for (int k = 0; k < result.n_columns && head + 2 + rows <= n; k++) {
        const ls_column *c = &result.columns[k];
        const char *h = strstr(at, c->header);
        if (!h) {
            bad++;
            continue;
        }
        at = h + strlen(c->header);
        size_t end = (size_t)(at - lines[head]); /* numbers align to their header's end */
        if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(first, c->key))) continue;
        if (*c->unit && !strstr(lines[head + 1], c->unit)) bad++;
        for (int i = 0; i < rows; i++) {
            const char *row = lines[head + 2 + i];
            if (strlen(row) < end) {
                bad++;
                continue;
            }
            size_t b = end;
            while (b > 0 && row[b - 1] != ' ')
                b--;
            const char *dot = memchr(row + b, '.', end - b);
            int decimals = dot ? (int)(row + end - dot - 1) : 0;
            checked++;
            if (decimals != c->decimals) {
                bad++;
                tap_diag("%s: column %s row %d: '%.*s' has %d decimals, not %d", name, c->header, i,
                         (int)(end - b), row + b, decimals, c->decimals);
            }
        }
    }
    is_int(bad, 0, "%s: %d numeric cells each to its column's decimals, units in the header", name,
           checked);
    int long_lines = 0;
    for (int i = head + 3 + rows; i < n; i++)
        if (strlen(lines[i]) > 72 && strchr(lines[i], ' ')) long_lines++;
    is_int(long_lines, 0, "%s: the findings wrap at 72 columns", name);
    free(text);
}

/* ---- two-clocks: what a real engine's pipeline and host add ---- */

/* The rows of the engine comparison ("varied": "engine"), in order: the
 * lesson's engine, the real one synchronous, the real one as it ships.
 * Returns how many (at most 3, row[n] the n-th row or NULL). */
static int engine_rows(const cJSON *row[3])
{
    int n = 0;
    const cJSON *r;
    row[0] = row[1] = row[2] = NULL;
    cJSON_ArrayForEach(r, result.table)
    {
        const char *varied = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "varied"));
        if (varied && !strcmp(varied, "engine") && n < 3) row[n++] = r;
    }
    return n;
}

static double row_number(const cJSON *row, const char *key)
{
    return util_json_number(row, key, NAN);
}

static const char *row_text(const cJSON *row, const char *key)
{
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, key));
    return t ? t : "";
}

/* The TPOT of the engine as it ships, ms: a step, the pipeline's yardstick. */
static double pipelined_step_ms(void)
{
    const cJSON *row[3];
    return engine_rows(row) == 3 ? row_number(row[2], "tpot_ms") : NAN;
}

/* The pipeline's sentence and its rows agree: what it adds is the
 * difference of the two vllm-v1 rows' mean TTFT, what the host adds that of
 * the synchronous row and the ideal one, and that is the API server, the
 * stream and the engine core's own TTFT together. */
static void pipeline_agrees(const char *what)
{
    const cJSON *row[3];
    int n = engine_rows(row);
    is_int(n, 3, "%s: three engine rows", what);
    if (n != 3) return;
    static const char *const engines[3] = {"ideal", "vllm-v1, async off", "vllm-v1"};
    double ttft[3];
    for (int i = 0; i < 3; i++) {
        ttft[i] = row_number(row[i], "ttft_ms");
        const char *engine = row_text(row[i], "engine");
        ok(!strcmp(engine, engines[i]), "%s: engine row %d is %s (%s)", what, i, engines[i],
           engine);
        is_near(row_number(row[i], "prompt"), 512, 0, "%s: at the lesson's prompt", what);
        is_near(row_number(row[i], "reply"), 100, 0, "%s: and its reply", what);
    }
    is_near(kept("pipeline_ttft_ms"), ttft[2] - ttft[1], 1e-9,
            "%s: the pipeline adds the vllm-v1 rows' difference (%.3f ms)", what,
            ttft[2] - ttft[1]);
    is_near(kept("host_ttft_ms"), ttft[1] - ttft[0], 1e-9,
            "%s: the host adds the synchronous row's TTFT less the ideal one's (%.3f ms)", what,
            ttft[1] - ttft[0]);
    ok(kept("frontend_ms") > 0 && kept("output_ms") > 0,
       "%s: the API server (%.2f ms) and the stream (%.2f ms) take time", what, kept("frontend_ms"),
       kept("output_ms"));
    is_near(kept("host_ttft_ms"),
            kept("frontend_ms") + kept("output_ms") + kept("engine_core_ttft_ms"), 1e-6,
            "%s: which is the API server, the stream and the engine core together", what);
    char *said = findings(), text[160];
    snprintf(text, sizeof text, "Its host terms add %.2f ms to the ideal engine's %.2f ms: %.2f ms "
                                "in the API server",
             kept("host_ttft_ms"), ttft[0], kept("frontend_ms"));
    has_str(said, text, "%s: the sentence splits the host's share with the kept numbers", what);
    snprintf(text, sizeof text, "%.2f ms to stream the first token out", kept("output_ms"));
    has_str(said, text, "%s: and names the stream's", what);
    snprintf(text, sizeof text, "%.2f -> %.2f ms with async scheduling off and on", ttft[1],
             ttft[2]);
    has_str(said, text, "%s: the pipeline's sentence quotes the rows' TTFTs", what);
    free(said);
}

static void test_pipeline(void)
{
    /* the lesson's load, one request at a time: each finds the engine idle */
    pipeline_agrees("one request at a time");
    double tpot = pipelined_step_ms();
    ok(fabs(kept("pipeline_ttft_ms")) < 0.1 * tpot,
       "one at a time the pipeline adds under a tenth of a step (%+.3f ms)",
       kept("pipeline_ttft_ms"));
    char *said = findings(), text[160];
    snprintf(text, sizeof text, "vllm-v1's step pipeline adds nothing to the mean TTFT (%+.2f ms",
             kept("pipeline_ttft_ms"));
    has_str(said, text, "and the sentence says it adds nothing, with its number");
    has_str(said, "At this load (one request at a time)", "naming the load");
    free(said);
    /* Poisson arrivals land while a step runs: each waits for the step after next */
    char *open[] = {"workload.arrival={\"process\": \"poisson\", \"rate_per_s\": 10}",
                    "lesson.prompt_tokens=[128, 512]", "lesson.reply_tokens=[10, 100]"};
    if (run("two-clocks", open, 3)) {
        pipeline_agrees("10 req/s");
        double pipe = kept("pipeline_ttft_ms");
        tpot = pipelined_step_ms();
        ok(pipe > 0 && pipe < 2 * tpot,
           "10 req/s: the pipeline adds TTFT, about a step at most (%.2f ms)", pipe);
        said = findings();
        snprintf(text, sizeof text, "At this load (10 req/s, poisson) vllm-v1's step pipeline "
                                    "adds %.2f ms to the mean TTFT",
                 pipe);
        has_str(said, text, "and the sentence says how much");
        ok(!strstr(said, "adds nothing"), "not that it adds nothing");
        free(said);
    }
    /* an engine that plans each step after the last has no pipeline */
    char *v0[] = {"lesson.pipeline_engine=vllm-v0", "lesson.prompt_tokens=[128, 512]",
                  "lesson.reply_tokens=[10, 100]"};
    if (run("two-clocks", v0, 3)) {
        ok(isnan(kept("pipeline_ttft_ms")), "vllm-v0: no pipeline, no number for it");
        said = findings();
        has_str(said, "vllm-v0 plans each step after the last one: it has no step pipeline",
                "and the sentence says so");
        free(said);
    }
    char *bad[] = {"lesson.pipeline_engine=vllm"};
    util_diag d;
    util_diag_init(&d);
    ls_result_fini(&result);
    int rc = ls_run(ls_find("two-clocks"), support_catalog, bad, 1, true, 2, &result, &d);
    is_int(rc, UTIL_EINPUT, "an unknown lesson.pipeline_engine is bad input");
    ok(d.count && strstr(d.msgs[0], "lesson.pipeline_engine: unknown engine 'vllm'"),
       "named by its knob (%s)", d.count ? d.msgs[0] : "nothing said");
    util_diag_fini(&d);
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
    /* the figure: both sweeps, in every panel (the shipped grid: 9 prompts, 7 replies) */
    title_is_plain("two-clocks");
    is_int(result.plot.n_panels, 3, "two-clocks: TTFT, TPOT and e2e panels");
    for (int k = 0; k < result.plot.n_panels; k++) {
        const an_plot_panel *pn = &result.plot.panels[k];
        int prompt = -1, reply = -1;
        for (int i = 0; i < pn->n_series; i++) {
            if (!strcmp(pn->series[i].name, "prompt varied")) prompt = (int)pn->series[i].n;
            if (!strcmp(pn->series[i].name, "reply varied")) reply = (int)pn->series[i].n;
        }
        is_int(prompt, 9, "panel %s draws the prompt sweep's 9 points", pn->y_label);
        is_int(reply, 7, "panel %s draws the reply sweep's 7 points", pn->y_label);
    }
    table_is_fixed("two-clocks");
    test_pipeline();
    char *set[] = {"lesson.reply_tokens=[10, 50, 400]"};
    if (run("two-clocks", set, 1)) {
        char *said = findings();
        has_str(said, "x 49 = ", "--set lesson.reply_tokens: the sentences follow the new sweep");
        has_str(said, "from 10 to 400 reply tokens", "the new sweep's ends are named");
        has_series("reply varied", 3, AN_STYLE_LINE);
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
    has_series("system A, measured", 2, AN_STYLE_POINTS);
    has_series("system B", -50, AN_STYLE_LINE);
    ok(guide(AN_GUIDE_MARK, kept("crossover_tokens"), true) != NULL, "the crossing is marked");
    table_is_fixed("chat-vs-summary");
    /* B streams no faster than A: A is first at both lengths, and nothing crosses */
    char *set[] = {"lesson.systems.B.decode_step_s=0.02"};
    if (run("chat-vs-summary", set, 1)) {
        char *said = findings();
        ok(!strstr(said, "They cross"), "no crossing is claimed when one system wins both");
        has_str(said, "One system is first at both lengths", "and the sentence says so");
        free(said);
    }
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
    /* |change| < 0.10: within the largest double below 0.10 */
    is_near(kept("throughput_change_past_batch"), 0, nextafter(0.10, 0),
            "past the batch throughput changes by under 10%%");
    ok(kept("goodput_last") < 0.5 * kept("goodput_peak"), "goodput peaks, then falls");
    char *said = findings();
    has_str(said, "only queue", "throughput stopped growing: the extra users only queue");
    free(said);
    /* the figure: the knee, the SLO, goodput and its peak */
    title_is_plain("batching");
    is_near(kept("batch_slots"), 64, 0, "the batch is the scenario's max_batch, 64");
    ok(guide(AN_GUIDE_LIMIT, 64, true) != NULL, "the max_batch knee is drawn at 64 users");
    ok(guide(AN_GUIDE_SLO, 2, false) != NULL, "the TTFT SLO (2 s) is drawn");
    ok(guide(AN_GUIDE_MARK, kept("goodput_peak_users"), true) != NULL,
       "the goodput peak (%g users) is marked", kept("goodput_peak_users"));
    has_series("goodput", 6, AN_STYLE_LINE);
    has_series("p99 TTFT", 6, AN_STYLE_LINE);
    table_is_fixed("batching");
    /* two replicas, 128 slots: from 64 users (32 a replica) to 256 throughput still grows */
    char *grow[] = {"cluster.replicas=2", "lesson.quick_users=[1, 8, 64, 256]"};
    if (run("batching", grow, 2)) {
        said = findings();
        ok(kept("throughput_change_past_batch") >= 0.10,
           "2 replicas: from 64 to 256 users throughput still grows (%+.0f%%)",
           100 * kept("throughput_change_past_batch"));
        ok(!strstr(said, "only queue"), "so the sentence does not say the users only queue");
        has_str(said, "still grows", "it says throughput still grows");
        ok(guide(AN_GUIDE_LIMIT, 128, true) != NULL, "the knee is at 2 x 64 = 128");
        free(said);
    }
    char *wide[] = {"cluster.scheduler.max_batch=512"};
    if (run("batching", wide, 1)) {
        said = findings();
        ok(!strstr(said, "only queue"), "a 512 batch: no count is past it, nobody only queues");
        has_str(said, "No user count here is past the 512-sequence batch", "and it says so");
        free(said);
    }
}

/* ---- speculation ---- */

static double cell_of(int row, const char *key)
{
    return util_json_number(cJSON_GetArrayItem(result.table, row), key, NAN);
}

/* The sentences quote the table: the lightest row's TPOTs, speedup and
 * accepted length; the crossover interpolated between the rows around it;
 * the heaviest row's TPOTs, batches and wait; the output of both ends. */
static void spec_quotes_table(void)
{
    int n = cJSON_GetArraySize(result.table), z = n - 1;
    char *said = findings(), text[256];
    snprintf(text, sizeof text,
             "With 1 user speculation cuts TPOT from %.2f ms to %.2f ms (speedup x%.2f)",
             cell_of(0, "tpot_plain_ms"), cell_of(0, "tpot_spec_ms"), cell_of(0, "speedup"));
    has_str(said, text, "the lightest load's sentence quotes its row");
    snprintf(text, sizeof text, "keeps %.2f tokens a sequence (the mean accepted length)",
             cell_of(0, "accepted_length"));
    has_str(said, text, "and its accepted length");
    double wait = cell_of(0, "tpot_spec_ms") * cell_of(0, "accepted_length");
    snprintf(text, sizeof text, "waits %.2f x %.2f = %.2f ms a step where a plain one waits %.2f ms",
             cell_of(0, "tpot_spec_ms"), cell_of(0, "accepted_length"), wait,
             cell_of(0, "tpot_plain_ms"));
    has_str(said, text, "and what a sequence waits a step, from the row");
    is_near(kept("lightest_speedup") * kept("lightest_step_growth"), cell_of(0, "accepted_length"),
            0.02, "the speedup is the accepted length over the step's growth (x%.2f x %.2f)",
            kept("lightest_speedup"), kept("lightest_step_growth"));
    int below = -1;
    for (int i = 1; i < n && below < 0; i++)
        if (cell_of(i - 1, "speedup") >= 1 && cell_of(i, "speedup") < 1) below = i - 1;
    ok(below >= 0, "the speedup falls through 1 between two rows");
    if (below >= 0) {
        double u0 = cell_of(below, "users"), u1 = cell_of(below + 1, "users");
        double s0 = cell_of(below, "speedup"), s1 = cell_of(below + 1, "speedup");
        double cross = u0 + (s0 - 1) / (s0 - s1) * (u1 - u0);
        is_near(kept("crossover_users"), cross, 1e-9, "the crossover is interpolated (%.1f users)",
                cross);
        snprintf(text, sizeof text,
                 "crosses x1 at about %.0f users (interpolated between %g users, x%.2f, and %g, "
                 "x%.2f)",
                 cross, u0, s0, u1, s1);
        has_str(said, text, "and the sentence names it and the rows around it");
        ok(guide(AN_GUIDE_MARK, cross, true) != NULL, "the figure marks it");
    }
    snprintf(text, sizeof text, "At %g users it raises TPOT from %.2f ms to %.2f ms (x%.2f)",
             cell_of(z, "users"), cell_of(z, "tpot_plain_ms"), cell_of(z, "tpot_spec_ms"),
             cell_of(z, "speedup"));
    has_str(said, text, "the heaviest load's sentence quotes its row");
    snprintf(text, sizeof text,
             "its steps run %.1f sequences on average, each verifying %g positions -- about %.0f",
             cell_of(z, "batch_spec"), kept("num_speculative_tokens") + 1,
             (kept("num_speculative_tokens") + 1) * cell_of(z, "batch_spec"));
    has_str(said, text, "its batch and the positions it verifies");
    snprintf(text, sizeof text, "compute one token for each of their %.1f",
             cell_of(z, "batch_plain"));
    has_str(said, text, "against the plain run's batch");
    wait = cell_of(z, "tpot_spec_ms") * cell_of(z, "accepted_length");
    ok(wait / cell_of(z, "tpot_plain_ms") > cell_of(z, "accepted_length"),
       "at the heaviest load the step grew (x%.2f) by more than the tokens it brings (%.2f)",
       wait / cell_of(z, "tpot_plain_ms"), cell_of(z, "accepted_length"));
    snprintf(text, sizeof text, "%.0f output tokens/s with speculation against %.0f without at 1 user",
             cell_of(0, "out_tok_s_spec"), cell_of(0, "out_tok_s_plain"));
    has_str(said, text, "the output sentence quotes the rows");
    free(said);
}

static void test_speculation(void)
{
    if (!run("speculation", NULL, 0)) return;
    int n = cJSON_GetArraySize(result.table), bad = 0;
    ok(kept("lightest_speedup") > 1, "at the lightest load speculation cuts TPOT (x%.2f)",
       kept("lightest_speedup"));
    ok(kept("heaviest_speedup") < 1, "at the heaviest it raises it (x%.2f)",
       kept("heaviest_speedup"));
    is_near(kept("lightest_speedup"), cell_of(0, "speedup"), 0, "the first row's speedup");
    is_near(kept("heaviest_speedup"), cell_of(n - 1, "speedup"), 0, "the last row's");
    for (int i = 0; i < n; i++) { /* each to its two decimals */
        double ratio = cell_of(i, "tpot_plain_ms") / cell_of(i, "tpot_spec_ms");
        bad += fabs(ratio - cell_of(i, "speedup")) > 0.006;
        bad += !(cell_of(i, "accepted_length") > 1 && cell_of(i, "accepted_length") <= 5);
    }
    is_int(bad, 0, "every row: the speedup is its TPOTs' ratio, 1 < accepted length <= K + 1");
    spec_quotes_table();
    title_is_plain("speculation");
    has_series("plain", n, AN_STYLE_LINE);
    has_series("speculative", n, AN_STYLE_LINE);
    has_series("speedup", n, AN_STYLE_LINE);
    ok(guide(AN_GUIDE_REFERENCE, 1, false) != NULL, "x1 is drawn");
    table_is_fixed("speculation");
    char *said = findings();
    has_str(said, "with a mean accepted length of 2.39 tokens, vLLM issue #20780's measurement",
            "the shipped drafter's acceptance is cited");
    free(said);
    double light = cell_of(0, "tpot_spec_ms"), plain[8];
    for (int i = 0; i < n && i < 8; i++)
        plain[i] = cell_of(i, "tpot_plain_ms");
    /* K = 3 at vLLM issue #20780's accepted length for it: another table */
    char *k3[] = {"cluster.speculative.num_speculative_tokens=3",
                  "cluster.speculative.acceptance_length=2.29"};
    if (run("speculation", k3, 2)) {
        is_near(cell_of(0, "accepted_length"), 2.29, 0.02, "K = 3: the runs accept 2.29 tokens");
        ok(cell_of(0, "tpot_spec_ms") != light, "and the speculative TPOT moves (%.2f ms, was %.2f)",
           cell_of(0, "tpot_spec_ms"), light);
        is_near(kept("num_speculative_tokens"), 3, 0, "the sentences' K is 3");
        int same = 0; /* the runs without it are without it: no drafter moves them */
        for (int i = 0; i < n && i < 8; i++)
            same += cell_of(i, "tpot_plain_ms") == plain[i];
        is_int(same, n < 8 ? n : 8, "the plain runs' TPOTs are the same whatever the drafter");
        said = findings();
        ok(!strstr(said, "#20780"), "a drafter --set is not the shipped one's source");
        has_str(said, "eagle at K = 3, with the acceptance --set gives it", "it is --set's");
        free(said);
    }
    /* loads that stop short of the crossover: the sentences say there is none */
    char *light_only[] = {"lesson.quick_users=[1, 16, 64]"};
    if (run("speculation", light_only, 1)) {
        said = findings();
        ok(isnan(kept("crossover_users")), "1 to 64 users: no crossover");
        has_str(said, "No crossover within the loads run: from 1 to 64 users speculation stays "
                      "faster", "and the sentence says so");
        ok(!strstr(said, "crosses x1"), "claiming none");
        has_str(said, "At 64 users it still cuts TPOT", "the heaviest load still gains");
        free(said);
    }
    util_diag d;
    util_diag_init(&d);
    ls_result_fini(&result);
    char *gone[] = {"cluster.speculative"};
    int rc = ls_run_edits(ls_find("speculation"), support_catalog, gone, 1, NULL, 0, true, 2,
                          &result, &d);
    is_int(rc, UTIL_EINPUT, "--unset cluster.speculative: nothing to compare");
    ok(d.count && strstr(d.msgs[0], "cluster.speculative: the lesson compares runs with and "
                                    "without it"),
       "and says so (%s)", d.count ? d.msgs[0] : "nothing said");
    util_diag_fini(&d);
}

/* ---- priorities ---- */

/* The sentences quote the table: the lightest row each way, the heaviest
 * each way and their ratio, the worst priority row, the TTFT target's first
 * missed row, the batch tier's queueing at both ends and where it moved
 * most, and the shedding. */
static void prio_quotes_table(void)
{
    int n = cJSON_GetArraySize(result.table), z = n - 1, worst = 0, moved = 0, missed = -1;
    for (int i = 0; i < n; i++) {
        if (cell_of(i, "ttft_p99_prio_s") > cell_of(worst, "ttft_p99_prio_s")) worst = i;
        if (cell_of(i, "batch_queue_prio_s") - cell_of(i, "batch_queue_fcfs_s") >
            cell_of(moved, "batch_queue_prio_s") - cell_of(moved, "batch_queue_fcfs_s"))
            moved = i;
        if (missed < 0 && cell_of(i, "ttft_p99_fcfs_s") > kept("ttft_target_s")) missed = i;
    }
    char *said = findings(), text[320];
    snprintf(text, sizeof text,
             "At a %g%% batch share the two orders serve the interactive class alike: its TTFT "
             "P99 is %.2f s first come first served and %.2f s by priority",
             cell_of(0, "batch_share_pct"), cell_of(0, "ttft_p99_fcfs_s"),
             cell_of(0, "ttft_p99_prio_s"));
    has_str(said, text, "the lightest share's sentence quotes its row");
    double ratio = cell_of(z, "ttft_p99_fcfs_s") / cell_of(z, "ttft_p99_prio_s");
    snprintf(text, sizeof text,
             ratio >= 100 ? "its TTFT P99 is %.2f s, against %.2f s by priority (x%.0f)"
                          : "its TTFT P99 is %.2f s, against %.2f s by priority (x%.1f)",
             cell_of(z, "ttft_p99_fcfs_s"), cell_of(z, "ttft_p99_prio_s"), ratio);
    has_str(said, text, "the heaviest share's sentence quotes its row and their ratio");
    snprintf(text, sizeof text, "at most %.2f s (at %g%%) over every share run",
             cell_of(worst, "ttft_p99_prio_s"), cell_of(worst, "batch_share_pct"));
    has_str(said, text, "priority's worst row is quoted");
    ok(missed >= 0, "first come first served misses the TTFT target at some share");
    if (missed >= 0) {
        snprintf(text, sizeof text, "first come first served misses it from %g%% batch (%.2f s)",
                 cell_of(missed, "batch_share_pct"), cell_of(missed, "ttft_p99_fcfs_s"));
        has_str(said, text, "and the sentence names the first row that does");
    }
    has_str(said, "priority meets it at every share run", "priority meets it at every share");
    snprintf(text, sizeof text,
             "by priority its requests wait %.1f s on average in the replica's queue at %g%% and "
             "%.1f s at %g%% (first come first served: %.1f s and %.1f s), its e2e P99 %.1f s at "
             "%g%%",
             cell_of(0, "batch_queue_prio_s"), cell_of(0, "batch_share_pct"),
             cell_of(z, "batch_queue_prio_s"), cell_of(z, "batch_share_pct"),
             cell_of(0, "batch_queue_fcfs_s"), cell_of(z, "batch_queue_fcfs_s"),
             cell_of(z, "batch_e2e_p99_prio_s"), cell_of(z, "batch_share_pct"));
    has_str(said, text, "the batch tier's sentence quotes both ends");
    snprintf(text, sizeof text,
             "At %g%% it waits %.1f s by priority against %.1f s first come first served",
             cell_of(moved, "batch_share_pct"), cell_of(moved, "batch_queue_prio_s"),
             cell_of(moved, "batch_queue_fcfs_s"));
    has_str(said, text, "and the row where priority moved the most wait onto it");
    free(said);
}

/* The gateway sheds the batch tier from some share on and nothing below it,
 * the sentence quoting the rows; without it nothing is shed and the batch
 * queue is left to grow. */
static void prio_gateway_sheds(void)
{
    int n = cJSON_GetArraySize(result.table), z = n - 1, start = -1, shed_below = 0;
    for (int i = 0; i < n && start < 0; i++)
        if (cell_of(i, "shed_pct") > 0) start = i;
    for (int i = 0; i < start; i++)
        shed_below += cell_of(i, "shed_pct") != 0;
    ok(start > 0, "shedding starts within the shares run, above the lightest (row %d)", start);
    is_int(shed_below, 0, "and no share below it shed a request");
    if (start <= 0) return;
    is_near(kept("shedding_starts_pct"), cell_of(start, "batch_share_pct"), 0,
            "the kept share is that row's (%g%%)", kept("shedding_starts_pct"));
    char *said = findings(), text[200];
    snprintf(text, sizeof text, "Shedding starts at a %g%% batch share: the gateway",
             cell_of(start, "batch_share_pct"));
    has_str(said, text, "the sentence names the share");
    snprintf(text, sizeof text,
             "By priority it refused %.1f%% of the batch requests there, none at %g%% and below, "
             "and %.1f%% at %g%%.",
             cell_of(start, "shed_pct"), cell_of(start - 1, "batch_share_pct"),
             cell_of(z, "shed_pct"), cell_of(z, "batch_share_pct"));
    has_str(said, text, "and quotes its row, the one below and the heaviest");
    int f = -1;
    for (int i = 0; i < n && f < 0; i++)
        if (cell_of(i, "shed_fcfs_pct") > 0) f = i;
    ok(f >= 0, "first come first served sheds too");
    if (f >= 0) {
        snprintf(text, sizeof text,
                 "First come first served sheds from %g%% (%.1f%% there, %.1f%% at %g%%).",
                 cell_of(f, "batch_share_pct"), cell_of(f, "shed_fcfs_pct"),
                 cell_of(z, "shed_fcfs_pct"), cell_of(z, "batch_share_pct"));
        has_str(said, text, "and the sentence quotes its rows");
    }
    has_str(said, "max(waiting requests / 300, KV cache use / 1)",
            "and the gateway's saturation from the scenario");
    free(said);
    ok(guide(AN_GUIDE_MARK, cell_of(start, "batch_share_pct"), true) != NULL,
       "the figure marks where shedding starts");
    double held = cell_of(z, "batch_queue_prio_s");
    util_diag d;
    util_diag_init(&d);
    ls_result_fini(&result);
    char *gone[] = {"cluster.gateway"};
    int rc = ls_run_edits(ls_find("priorities"), support_catalog, gone, 1, NULL, 0, true, 2,
                          &result, &d);
    util_diag_fini(&d);
    is_int(rc, 0, "--unset cluster.gateway runs");
    if (rc) return;
    int shed = 0;
    n = cJSON_GetArraySize(result.table);
    for (int i = 0; i < n; i++)
        shed += (cell_of(i, "shed_pct") != 0) + (cell_of(i, "shed_fcfs_pct") != 0);
    is_int(shed, 0, "without the gateway no share sheds");
    double grown = cell_of(n - 1, "batch_queue_prio_s");
    ok(grown > held,
       "and at the heaviest share the batch tier waits longer (%.1f s; %.1f s with it): its "
       "queue is left to grow",
       grown, held);
    said = findings();
    has_str(said, "without a gateway (cluster.gateway) every batch request is queued",
            "and the sentence says why");
    free(said);
}

static void test_priorities(void)
{
    if (!run("priorities", NULL, 0)) return;
    int n = cJSON_GetArraySize(result.table), z = n - 1, rises = 0;
    ok(cell_of(z, "ttft_p99_prio_s") < cell_of(z, "ttft_p99_fcfs_s"),
       "at the heaviest batch share priority's interactive TTFT P99 (%.2f s) is below fcfs's "
       "(%.2f s)",
       cell_of(z, "ttft_p99_prio_s"), cell_of(z, "ttft_p99_fcfs_s"));
    ok(kept("heaviest_ttft_ratio") > 10, "by more than x10 (x%.0f)", kept("heaviest_ttft_ratio"));
    is_near(kept("heaviest_ttft_p99_prio_s"), cell_of(z, "ttft_p99_prio_s"), 0, "the last row's");
    ok(kept("worst_ttft_p99_prio_s") < kept("ttft_target_s"),
       "priority keeps the interactive TTFT P99 under its %g s target at every share (worst "
       "%.2f s)",
       kept("ttft_target_s"), kept("worst_ttft_p99_prio_s"));
    for (int i = 1; i < n; i++)
        rises += cell_of(i, "batch_queue_prio_s") >= cell_of(i - 1, "batch_queue_prio_s");
    ok(rises >= n - 2, "the batch tier's queueing by priority rises with its share (%d of %d)",
       rises, n - 1);
    ok(cell_of(z, "batch_queue_prio_s") > 10 * (cell_of(0, "batch_queue_prio_s") + 0.1),
       "from %.1f s to %.1f s", cell_of(0, "batch_queue_prio_s"), cell_of(z, "batch_queue_prio_s"));
    prio_quotes_table();
    title_is_plain("priorities");
    has_series("fcfs", n, AN_STYLE_LINE);
    has_series("priority", n, AN_STYLE_LINE);
    ok(guide(AN_GUIDE_SLO, kept("ttft_target_s"), false) != NULL, "the TTFT target is drawn");
    table_is_fixed("priorities");
    prio_gateway_sheds();
    /* the classes the other way round: the more urgent one is still the interactive one */
    char *swapped[] = {"workload.classes.0.priority=\"background\"",
                       "workload.classes.1.priority=\"critical\""};
    if (run("priorities", swapped, 2)) {
        char *said = findings();
        has_str(said, "serve the batch class alike", "swapped priorities: batch is the urgent one");
        free(said);
    }
    /* a light load: the fleet keeps up at every share, so neither order misses the target */
    char *light[] = {"workload.arrival.rate_per_s=4"};
    if (run("priorities", light, 1)) {
        char *said = findings();
        has_str(said, "first come first served meets it at every share run",
                "4 req/s: first come first served meets the target too");
        ok(isnan(kept("fcfs_misses_from_pct")), "and misses it nowhere");
        free(said);
    }
    const struct {
        char *set;
        const char *says;
    } bad[] = {
        {"workload.classes.1.priority=\"standard\"", "both classes are of priority 0"},
        {"lesson.quick_batch_shares=[0, 0.5]", "0 is not a share between 0 and 1"},
        {"lesson.quick_batch_shares=[0.5]", "give at least two shares"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        util_diag d;
        util_diag_init(&d);
        ls_result_fini(&result);
        char *set[] = {bad[i].set};
        int rc = ls_run(ls_find("priorities"), support_catalog, set, 1, true, 2, &result, &d);
        is_int(rc, UTIL_EINPUT, "%s is bad input", bad[i].set);
        ok(d.count && strstr(d.msgs[0], bad[i].says), "and says %s (%s)", bad[i].says,
           d.count ? d.msgs[0] : "nothing said");
        util_diag_fini(&d);
    }
}

/* ---- memory ---- */

/* The sentences quote the table: the first row, the first past HBM and
 * the last on the GPU alone; where the tier stops helping, and why. */
static void mem_quotes_table(int past)
{
    int n = cJSON_GetArraySize(result.table), z = n - 1;
    char *said = findings(), text[320];
    snprintf(text, sizeof text,
             "%g sessions in flight hold %.1f GiB of history (%.0f tokens a session, its mean "
             "prompt) against HBM's %.1f GiB of KV: the prefix cache serves %.1f%% of the prompt "
             "tokens and TTFT P50 is %.3f s",
             cell_of(0, "sessions"), cell_of(0, "working_set_gib"), kept("session_tokens"),
             cell_of(0, "hbm_kv_gib"), cell_of(0, "hit_gpu_pct"), cell_of(0, "ttft_p50_gpu_s"));
    has_str(said, text, "the first sentence quotes the first row");
    snprintf(text, sizeof text,
             "The working set outgrows HBM from %g sessions (%.1f GiB): the hit rate falls to "
             "%.1f%% there and %.1f%% at %g, and TTFT P50 climbs to %.3f s and %.3f s",
             cell_of(past, "sessions"), cell_of(past, "working_set_gib"),
             cell_of(past, "hit_gpu_pct"), cell_of(z, "hit_gpu_pct"), cell_of(z, "sessions"),
             cell_of(past, "ttft_p50_gpu_s"), cell_of(z, "ttft_p50_gpu_s"));
    has_str(said, text, "and the first row past HBM and the last");
    int full = -1;
    for (int i = 0; i < n && full < 0; i++)
        if (cell_of(i, "working_set_gib") > cell_of(i, "hbm_kv_gib") + kept("tier_gib")) full = i;
    ok(full > past, "the working set outgrows HBM and the tier together later (row %d)", full);
    if (full > past) {
        snprintf(text, sizeof text,
                 "from %g sessions (%.1f GiB) the hit rate with it falls to %.1f%%",
                 cell_of(full, "sessions"), cell_of(full, "working_set_gib"),
                 cell_of(full, "hit_tier_pct"));
        has_str(said, text, "the tier's sentence names that row");
        ok(cell_of(full, "hit_tier_pct") < cell_of(full - 1, "hit_tier_pct"),
           "where the hit rate with the tier falls (%.1f%% from %.1f%%)",
           cell_of(full, "hit_tier_pct"), cell_of(full - 1, "hit_tier_pct"));
    }
    /* loads take a few per cent of the link: the tier's size limits it, which the run says */
    ok(kept("heaviest_link_busy_pct") < 100 * kept("heaviest_fill"),
       "at the most sessions the link's busy share (%.1f%%) is below the working set over HBM "
       "and the tier (x%.2f)",
       kept("heaviest_link_busy_pct"), kept("heaviest_fill"));
    has_str(said, "the tier's size is the limit, not PCIe", "the sentence says why");
    is_near(kept("limit_is_pcie"), 0, 0, "and keeps it");
    free(said);
}

static void test_memory(void)
{
    if (!run("memory", NULL, 0)) return;
    int n = cJSON_GetArraySize(result.table), past = -1, below = 0, above = 0, faster = 0,
        falls = 0;
    for (int i = 0; i < n && past < 0; i++)
        if (cell_of(i, "working_set_gib") > cell_of(i, "hbm_kv_gib")) past = i;
    ok(past > 0, "the working set outgrows HBM within the sweep, above its first point (row %d)",
       past);
    if (past <= 0) return;
    is_near(kept("past_hbm_sessions"), cell_of(past, "sessions"), 0, "the kept row is that one");
    for (int i = past; i < n; i++)
        falls += cell_of(i, "hit_gpu_pct") < cell_of(i - 1, "hit_gpu_pct");
    is_int(falls, n - past, "on the GPU alone the hit rate falls at every point from HBM on");
    ok(cell_of(n - 1, "hit_gpu_pct") < cell_of(0, "hit_gpu_pct") / 10, "from %.1f%% to %.1f%%",
       cell_of(0, "hit_gpu_pct"), cell_of(n - 1, "hit_gpu_pct"));
    for (int i = 0; i < n; i++) {
        below += cell_of(i, "hit_tier_pct") < cell_of(i, "hit_gpu_pct");
        if (i < past) continue;
        above += cell_of(i, "hit_tier_pct") > cell_of(i, "hit_gpu_pct");
        faster += cell_of(i, "ttft_p50_tier_s") <= cell_of(i, "ttft_p50_gpu_s");
    }
    is_int(below, 0, "the CPU tier's hit rate is the GPU's or more at every point");
    is_int(above, n - past, "and above it at every point past HBM");
    is_int(faster, n - past, "and its TTFT P50 the GPU's or less at every point past HBM");
    mem_quotes_table(past);
    title_is_plain("memory");
    has_series("GPU only", n, AN_STYLE_LINE);
    has_series("with CPU tier", n, AN_STYLE_LINE);
    ok(guide(AN_GUIDE_MARK, cell_of(past, "sessions"), true) != NULL,
       "the figure marks where the working set outgrows HBM");
    table_is_fixed("memory");
    /* no tier: both runs are the GPU's */
    char *none[] = {"cluster.kv_offload.cpu_gib=0"};
    if (run("memory", none, 1)) {
        int same = 0;
        for (int i = 0; i < n; i++)
            same += cell_of(i, "hit_tier_pct") == cell_of(i, "hit_gpu_pct");
        is_int(same, n, "cpu_gib 0: the two runs' hit rates agree at every point");
        char *said = findings();
        has_str(said, "There is no CPU tier", "and the sentence says there is no tier");
        free(said);
    }
    const struct {
        char *set;
        const char *says;
    } bad[] = {
        {"lesson.sessions_in_flight=[64, 32]", "32 is not a whole number of sessions"},
        {"lesson.sessions_in_flight=[64]", "give at least two numbers"},
        {"workload.arrival={\"process\": \"poisson\", \"rate_per_s\": 2}",
         "workload.arrival.process: the lesson's knob is a closed loop's users"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        util_diag d;
        util_diag_init(&d);
        ls_result_fini(&result);
        char *set[] = {bad[i].set};
        int rc = ls_run(ls_find("memory"), support_catalog, set, 1, true, 2, &result, &d);
        is_int(rc, UTIL_EINPUT, "%s is bad input", bad[i].set);
        ok(d.count && strstr(d.msgs[0], bad[i].says), "and says %s (%s)", bad[i].says,
           d.count ? d.msgs[0] : "nothing said");
        util_diag_fini(&d);
    }
}

/* The day's sentences quote its table: the lowest target's row against
 * the highest's, and the cheapest target meeting the SLO. */
static void day_quotes_table(void)
{
    int z = cJSON_GetArraySize(result.table) - 1;
    char *said = findings(), text[320];
    snprintf(text, sizeof text,
             "At target %g (running per replica) the autoscaler held %.2f replicas on average, "
             "%g at the peak, for %.2f GPU-hours ($%.2f): TTFT P99 %.3f s",
             cell_of(0, "target"), cell_of(0, "mean_replicas"), cell_of(0, "peak_replicas"),
             cell_of(0, "gpu_hours"), cell_of(0, "usd"), cell_of(0, "ttft_p99_s"));
    has_str(said, text, "day: the first sentence quotes the lowest target's row");
    snprintf(text, sizeof text, "At target %g it held %.2f (%g at the peak) for %.2f GPU-hours",
             cell_of(z, "target"), cell_of(z, "mean_replicas"), cell_of(z, "peak_replicas"),
             cell_of(z, "gpu_hours"));
    has_str(said, text, "day: and the highest target's");
    int best = -1;
    for (int i = 0; i <= z; i++)
        if (cell_of(i, "ttft_p99_s") <= 0.5) best = i;
    ok(best >= 0 && kept("cheapest_meeting_target") == cell_of(best, "target"),
       "day: the cheapest target meeting the SLO is the last row within it (%g)",
       kept("cheapest_meeting_target"));
    free(said);
}

/* The day: cost falls as the target rises, the tail climbs past the SLO
 * at the highest target, and a static fleet of the peak costs more. */
static void test_day(void)
{
    if (!run("day", NULL, 0)) return;
    int n = cJSON_GetArraySize(result.table), falls = 0, fewer = 0, dearer = 0, held = 0, m = 0;
    while (m + 1 < n && cell_of(m + 1, "ttft_p99_s") <= 0.5)
        m++; /* the last row meeting the SLO: up to it the fleet keeps up */
    for (int i = 1; i <= m; i++) {
        falls += cell_of(i, "usd") < cell_of(i - 1, "usd");
        fewer += cell_of(i, "mean_replicas") < cell_of(i - 1, "mean_replicas") &&
                 cell_of(i, "peak_replicas") <= cell_of(i - 1, "peak_replicas");
    }
    ok(m > 1, "day: more than two targets meet the SLO (%d)", m + 1);
    is_int(falls, m, "day: the day's cost falls at every step up in target that meets the SLO");
    is_int(fewer, m, "day: as the replicas held do, on average and at the peak");
    /* past it the backlog the start-up lag builds takes replicas to drain */
    if (cell_of(n - 1, "usd") >= cell_of(m, "usd")) {
        ok(kept("highest_saves_nothing") == 1, "day: the highest target saves nothing ($%.2f)",
           cell_of(n - 1, "usd"));
        char *said = findings();
        has_str(said, "and it saves nothing", "day: and the sentence says so");
        free(said);
    }
    for (int i = 0; i < n; i++) {
        /* the autoscaler never holds more than its peak, so the peak's fleet all day costs more */
        dearer += cell_of(i, "static_usd") > cell_of(i, "usd");
        held += cell_of(i, "static_missed_pct") <= cell_of(i, "missed_pct");
    }
    is_int(dearer, n, "day: a static fleet of each point's peak costs more than the autoscaler");
    int peaks = 0; /* the distinct peaks: one static run each */
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < i && cell_of(k, "peak_replicas") != cell_of(i, "peak_replicas"))
            k++;
        peaks += k == i;
    }
    is_near(kept("static_runs"), peaks, 0, "day: one static run a distinct peak (%d of %d points)",
            peaks, n);
    is_int(held, n, "day: and misses the SLO no more often, never waiting for a replica");
    ok(cell_of(0, "ttft_p99_s") <= 0.5 && cell_of(n - 1, "ttft_p99_s") > 0.5,
       "day: TTFT P99 within the 0.5 s SLO at the lowest target (%.3f s), past it at the highest "
       "(%.3f s)",
       cell_of(0, "ttft_p99_s"), cell_of(n - 1, "ttft_p99_s"));
    ok(cell_of(n - 1, "missed_pct") > cell_of(0, "missed_pct"),
       "day: more requests miss the SLO at the highest target (%.2f%%) than the lowest (%.2f%%)",
       cell_of(n - 1, "missed_pct"), cell_of(0, "missed_pct"));
    /* provision 60 s, Llama-3.1-8B's weights over network_fs, warm-up 20 s */
    ok(kept("startup_s") > 80 && kept("startup_s") < 100, "day: a replica starts in %.1f s",
       kept("startup_s"));
    day_quotes_table();
    title_is_plain("day");
    has_series("autoscaled", n, AN_STYLE_LINE);
    has_series("static at its peak", n, AN_STYLE_LINE);
    ok(guide(AN_GUIDE_SLO, 0.5, false) != NULL, "day: the figure draws the SLO");
    table_is_fixed("day");
    double first = cell_of(n - 1, "ttft_p99_s");
    if (run("day", NULL, 0))
        is_near(cell_of(n - 1, "ttft_p99_s"), first, 0, "day: a second run agrees (one seed)");
    const char *bad[] = {"lesson.target=[64, 32]", "lesson.target=[64]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        util_diag d;
        util_diag_init(&d);
        ls_result_fini(&result);
        char *set[] = {(char *)bad[i]};
        int rc = ls_run(ls_find("day"), support_catalog, set, 1, true, 2, &result, &d);
        is_int(rc, UTIL_EINPUT, "%s is bad input", bad[i]);
        ok(d.count && strstr(d.msgs[0], "lesson.target"), "and names lesson.target (%s)",
           d.count ? d.msgs[0] : "nothing said");
        util_diag_fini(&d);
    }
}

static double capacity(const char *replicas)
{
    char *set[] = {(char *)replicas};
    return run("utilisation", set, 1) ? kept("capacity_req_s") : NAN;
}

static void test_utilisation(void)
{
    char *said;
    if (!run("utilisation", NULL, 0)) return;
    ok(kept("cost_ratio") > 3,
       "at 10%% load a token costs x%.1f and x%.1f the energy of one at full load",
       kept("cost_ratio"), kept("energy_ratio"));
    ok(kept("energy_ratio") > 1.5, "and over x1.5 the energy (x%.1f)", kept("energy_ratio"));
    ok(kept("wall_over_gpu") >= 1, "wall energy is at least GPU energy");
    ok(kept("ttft_p99_growth") > 1.5, "high load costs waiting: P99 TTFT x%.1f from 10%% to 95%%",
       kept("ttft_p99_growth"));
    /* every run served all it was sent, so the served share of full grows with the load: no
     * two loads serve the same; what it lags the load by is the drain after the last arrival,
     * load x span / window, to the Poisson noise of the count (4 standard errors) */
    is_near(kept("not_served"), 0, 0, "no run dropped or left a request unfinished");
    int rows = cJSON_GetArraySize(result.table), grows = 0;
    for (int i = 1; i < rows; i++)
        grows += util_json_number(cJSON_GetArrayItem(result.table, i), "use_pct", NAN) >
                 util_json_number(cJSON_GetArrayItem(result.table, i - 1), "use_pct", NAN);
    is_int(grows, rows - 1, "each load serves more of full than the one below it");
    double use = kept("top_use"), drained = kept("top_load_x_span_over_window");
    ok(fabs(use - drained) <= 4 * use / sqrt(kept("top_measured")),
       "at the highest open load, %.4f of full = load x span / window (%.4f) within 4 s.e.", use,
       drained);
    cmp_ok(kept("top_drain_s"), >, 0, "its window runs on past the last arrival");
    said = findings();
    has_str(said, "after the last arrival", "and the sentence says why of full lags the load");
    free(said);
    title_is_plain("utilisation");
    has_series("1/u from full load", -50, AN_STYLE_LINE);
    has_series("measured", 11, AN_STYLE_POINTS);
    has_series("p99 TTFT", 10, AN_STYLE_LINE);
    ok(guide(AN_GUIDE_LIMIT, 100, true) != NULL, "full load is marked");
    table_is_fixed("utilisation");
    /* full load is measured for the cluster it runs */
    double one = capacity("cluster.replicas=1"), four = capacity("cluster.replicas=4");
    char text[64];
    snprintf(text, sizeof text, "serves %.1f req/s at full load", four);
    said = findings();
    has_str(said, text, "4 replicas: the sentence names the full load it measured");
    free(said);
    ok(four / one > 3.4 && four / one < 4.6,
       "4 replicas serve about 4x one at full load (%.1f and %.1f req/s: x%.2f)", four, one,
       four / one);
    /* "then switch to the whole server": the hosts and the PUE counted in,
     * which draw whatever the load, so a token's energy follows 1/u more */
    if (!run("utilisation", NULL, 0)) return;
    double gpu_x = kept("energy_ratio");
    char *set[] = {"lesson.whole_server=1"};
    if (!run("utilisation", set, 1)) return;
    ok(kept("energy_ratio") > gpu_x,
       "the whole server: energy per token x%.2f from full load to 10%%, more than the GPUs' x%.2f",
       kept("energy_ratio"), gpu_x);
    said = findings();
    has_str(said, "For the whole server -- GPUs, hosts and the PUE -- energy per token",
            "and the sentence counts the whole server");
    free(said);
    const an_plot_series *first = NULL;
    for (int p = 0; p < result.plot.n_panels && !first; p++)
        if (!strcmp(result.plot.panels[p].y_label, "energy"))
            first = &result.plot.panels[p].series[0];
    ok(first && !strcmp(first->name, "wall"), "its figure draws the whole server's energy first");
    ok(first && first->dash == 1, "and draws it solid");
}

static void test_tail(void)
{
    if (!run("tail", NULL, 0)) return;
    ok(kept("p99_growth") > 5, "5%% slow requests move P99 x%.1f, the mean x%.2f, the median x%.2f",
       kept("p99_growth"), kept("mean_growth"), kept("p50_growth"));
    ok(kept("mean_growth") < 2, "the mean under x2 (x%.2f)", kept("mean_growth"));
    ok(kept("p50_growth") < 1.2, "the median under x1.2 (x%.2f)", kept("p50_growth"));
    ok(kept("p99_slow") > 15, "P99 over 15 s at 5%% slow (%.1f s)", kept("p99_slow"));
    /* the cliff: P99 meets the slow requests just past 1%, P95 just past 5% */
    ok(kept("cliff_pct") > 0.5 && kept("cliff_pct") <= 2, "P99's cliff is near 1%% slow (%g%%)",
       kept("cliff_pct"));
    ok(kept("p95_cliff_pct") > 4 && kept("p95_cliff_pct") <= 7,
       "P95's cliff is near 5%% slow (%g%%)", kept("p95_cliff_pct"));
    char *said = findings(), text[64];
    snprintf(text, sizeof text, "(x%.1f)", kept("cliff_p99_growth"));
    has_str(said, text, "the sentence gives the cliff's own P99 growth");
    ok(!strstr(said, "hides") || kept("cliff_p99_growth") > 2 * kept("cliff_mean_growth"),
       "'the mean hides' only where P99 grew (x%.1f) far more than the mean (x%.2f)",
       kept("cliff_p99_growth"), kept("cliff_mean_growth"));
    free(said);
    /* exactly k of the 400 slow: each row's share is the one it simulated, so no two rows of
     * distinct shares are one run, and the mean climbs with every one */
    int rows = cJSON_GetArraySize(result.table), distinct = 0, climbs = 0;
    for (int i = 0; i < rows; i++) {
        const cJSON *row = cJSON_GetArrayItem(result.table, i);
        double pct = util_json_number(row, "slow_pct", NAN), k = util_json_number(row, "slow", NAN);
        distinct += fabs(pct - 100 * k / 400) < 1e-9 && k == floor(k);
        if (i > 0)
            climbs += util_json_number(row, "e2e_mean_s", NAN) >
                      util_json_number(cJSON_GetArrayItem(result.table, i - 1), "e2e_mean_s", 0);
    }
    is_int(distinct, rows, "every row's share is its whole count of slow requests over 400");
    is_int(climbs, rows - 1, "the mean grows with every share: no two rows are one run");
    /* the closed form: with exactly k of n slow, P_q (rank q(n - 1)) is a slow one from
     * k = n - floor(q(n - 1)) on: 5 of 400 (1.25%) for P99, 21 (5.25%) for P95 */
    is_near(kept("p99_theory_pct"), 1.25, 1e-9, "P99 must meet them from 5 of 400, 1.25%%");
    is_near(kept("p95_theory_pct"), 5.25, 1e-9, "P95 from 21 of 400, 5.25%%");
    is_near(kept("cliff_pct"), 1.25, 1e-9, "P99's cliff is there (%g%%)", kept("cliff_pct"));
    is_near(kept("p95_cliff_pct"), 5.5, 1e-9, "P95's at 5.5%%, the first share past 5.25%% (%g%%)",
            kept("p95_cliff_pct"));
    said = findings();
    has_str(said, "with 5 of 400 requests (1.25%) 15 s slower", "the sentence counts them");
    has_str(said, "rank 0.99 x 399 = 395.01", "and gives the rank that makes the cliff");
    free(said);
    title_is_plain("tail");
    has_series("p99", 16, AN_STYLE_STEPS);
    has_series("p95", 16, AN_STYLE_STEPS);
    has_series("mean", 16, AN_STYLE_LINE);
    ok(guide(AN_GUIDE_REFERENCE, 1, true) != NULL, "1%% slow, P99's share, is drawn");
    table_is_fixed("tail");
    /* a share that is no whole count of the requests: the row shows the count it ran */
    char *odd[] = {"lesson.requests=300", "lesson.quick_requests=300",
                   "lesson.slow_fractions=[0, 0.0025, 0.02]"};
    if (run("tail", odd, 3)) {
        const cJSON *row = cJSON_GetArrayItem(result.table, 1);
        is_near(util_json_number(row, "slow", NAN), 1, 0, "0.25%% of 300: 1 slow request");
        is_near(util_json_number(row, "slow_pct", NAN), 100.0 / 300, 1e-9,
                "shown as the 0.33%% it is, not 0.25%%");
    }
    /* under 1% slow nothing reaches P99: no cliff, no claim that the mean hides it */
    char *few[] = {"lesson.slow_fractions=[0, 0.0025, 0.005, 0.0075]"};
    if (run("tail", few, 1)) {
        said = findings();
        ok(isnan(kept("cliff_pct")), "under 1%% slow P99 has no cliff");
        ok(!strstr(said, "cliff"), "and the sentences claim none");
        ok(!strstr(said, "hides"), "nor that the mean hides one");
        has_str(said, "No share here", "they say P99 did not move");
        free(said);
    }
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
    title_is_plain("fan-out");
    has_series("1 - (1 - p)^n", -50, AN_STYLE_LINE);
    has_series("sequential, measured", 7, AN_STYLE_POINTS);
    has_series("parallel, measured", 7, AN_STYLE_POINTS);
    const an_plot_series *s = series("parallel, measured", NULL);
    int covered = 0;
    for (size_t i = 0; s && s->lo && i < s->n; i++) {
        double theory = 100 * (1 - pow(0.99, s->x[i]));
        if (s->lo[i] <= s->y[i] && s->y[i] <= s->hi[i] && s->lo[i] <= theory && theory <= s->hi[i])
            covered++;
    }
    ok(s && s->lo, "the measured shares carry 95%% intervals");
    cmp_ok(covered, >=, 6, "%d of 7 covering the formula", covered);
    int share = -1, tail = -1;
    series("1 - (1 - p)^n", &share);
    series("task P99, parallel", &tail);
    ok(tail >= 0, "the figure has the task's P99");
    ok(tail >= 0 && tail != share, "on a second panel");
    has_series("call P99", 7, AN_STYLE_LINE);
    table_is_fixed("fan-out");
    /* a call slow one time in a thousand: the call's P99 is fast, the task's of 100 calls not */
    char *rare[] = {"lesson.slow_probability=0.001"};
    if (run("fan-out", rare, 1)) {
        said = findings();
        double call = kept("parallel_call_p99"), task = kept("parallel_task_p99");
        ok(task > 1.5 * call, "p = 0.1%%: the task's P99 (%.2f s) is far from the call's (%.2f s)",
           task, call);
        has_str(said, "the task's tail is not the call's", "and the sentence says so");
        ok(!strstr(said, "rare call becomes the common task"),
           "at 10%% of tasks it does not claim the slow task became common");
        free(said);
    }
}

static void test_definitions(void)
{
    if (!run("definitions", NULL, 0)) return;
    ok(kept("itl_pooled_p99") > kept("tpot_p99"), "pooled ITL's P99 is above TPOT's");
    ok(kept("tpot_incl_ttft_mean") > kept("tpot_mean"),
       "folding TTFT in raises the per-token mean");
    title_is_plain("definitions");
    char *names = util_xstrdup("");
    int points = 0, off_tick = 0;
    for (int k = 0; k < result.plot.n_panels; k++)
        for (int i = 0; i < result.plot.panels[k].n_series; i++) {
            const an_plot_series *s = &result.plot.panels[k].series[i];
            char *more = util_xasprintf("%s%s; ", names, s->name);
            free(names);
            names = more;
            if (s->style == AN_STYLE_POINTS) points++;
            for (size_t j = 0; j < s->n; j++) {
                bool tick = false;
                for (int t = 0; t < result.plot.n_x_ticks; t++)
                    tick = tick || fabs(s->x[j] - result.plot.x_ticks[t]) < 0.25;
                off_tick += !tick;
            }
        }
    static const char *const tools[] = {"vLLM", "GenAI-Perf", "LLMPerf", "GuideLLM", "MLPerf"};
    for (int t = 0; t < 5; t++)
        has_str(names, tools[t], "the legend names %s", tools[t]);
    is_int(points, 8, "every definition is points, not a line between percentiles");
    is_int(result.plot.n_x_ticks, 5, "the x axis is five categories");
    is_int(off_tick, 0, "every point sits by a category: no value between percentiles");
    ok(result.plot.n_x_ticks == 5 && !strcmp(result.plot.x_tick_labels[4], "P99"),
       "the last category is P99");
    free(names);
    table_is_fixed("definitions");
}

/* --unset removes a key of the lesson's file before any --set applies, as
 * in run: a knob's list replaced whole, given in either order; a path that
 * is not there is bad input naming it. */
static void test_unset(void)
{
    util_diag d;
    util_diag_init(&d);
    ls_result_fini(&result);
    char *gone[] = {"lesson.slow_fractions"}, *two[] = {"lesson.slow_fractions=[0, 0.01]"};
    int rc = ls_run_edits(ls_find("tail"), support_catalog, gone, 1, NULL, 0, true, 2, &result, &d);
    is_int(rc, UTIL_EINPUT, "--unset lesson.slow_fractions alone: the tail has no shares");
    ok(d.count && strstr(d.msgs[0], "lesson.slow_fractions: give at least two fractions"),
       "and says so (%s)", d.count ? d.msgs[0] : "nothing said");
    util_diag_fini(&d);
    util_diag_init(&d);
    ls_result_fini(&result);
    rc = ls_run_edits(ls_find("tail"), support_catalog, gone, 1, two, 1, true, 2, &result, &d);
    is_int(rc, 0, "--unset then --set of the same knob: the --set stands");
    is_int(cJSON_GetArraySize(result.table), 2, "two shares, two rows");
    util_diag_fini(&d);
    util_diag_init(&d);
    ls_result_fini(&result);
    char *typo[] = {"workload.arival"};
    rc = ls_run_edits(ls_find("tail"), support_catalog, typo, 1, NULL, 0, true, 2, &result, &d);
    is_int(rc, UTIL_EINPUT, "--unset of a missing key is bad input");
    ok(d.count && strstr(d.msgs[0], "--unset workload.arival: no key 'arival' in workload (did you "
                                    "mean 'arrival'?)"),
       "named, with a did-you-mean (%s)", d.count ? d.msgs[0] : "nothing said");
    util_diag_fini(&d);
}

/* two-clocks at rate "inf" under a cap names that load (vllm bench serve's
 * --request-rate inf --max-concurrency), not nothing. */
static void test_clocks_inf(void)
{
    util_diag d;
    util_diag_init(&d);
    ls_result_fini(&result);
    char *gone[] = {"workload.arrival"},
         *sets[] = {"workload.arrival.rate_per_s=inf", "workload.arrival.max_concurrency=4"};
    int rc = ls_run_edits(ls_find("two-clocks"), support_catalog, gone, 1, sets, 2, true, 2,
                          &result, &d);
    is_int(rc, 0, "two-clocks at rate inf under a cap of 4 runs");
    char *said = findings();
    has_str(said, "At this load (every request due at once, capped in flight)",
            "and its sentence names the load");
    free(said);
    util_diag_fini(&d);
}

/* Sentences wrap to the terminal: $COLUMNS, else 100 when not a terminal. */
static void test_width(void)
{
    FILE *f = tmpfile();
    unsetenv("COLUMNS");
    is_int(ls_terminal_width(f), 100, "not a terminal, no COLUMNS: 100 columns");
    setenv("COLUMNS", "77", 1);
    is_int(ls_terminal_width(f), 77, "COLUMNS=77: 77");
    unsetenv("COLUMNS");
    fclose(f);
}

int main(void)
{
    if (support_init()) return 1;
    test_two_clocks();
    test_chat_vs_summary();
    test_batching();
    test_speculation();
    test_utilisation();
    test_tail();
    test_priorities();
    test_memory();
    test_day();
    test_fan_out();
    test_definitions();
    test_unset();
    test_clocks_inf();
    test_width();
    ls_result_fini(&result);
    ok(ls_find("nope") == NULL, "lessons are found by name");
    ok(ls_find("tail") != NULL, "the tail lesson is found");
    support_fini();
    return tap_done();
}
