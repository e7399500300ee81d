/*
 * test_speculative.c: speculative decoding (cluster.speculative) -- the
 * accepted drafts against the geometric closed form within their sampling
 * error, the exact token-budget and KV (lookahead) accounting of a
 * speculative step, disable_by_batch_size, the light-load gain and the
 * heavy-load loss, a draft model's passes, prefill and memory against
 * their closed forms, and the messages for bad keys.  argv[1] is the
 * source root (tests/hf_configs).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "tap.h"

/* One closed-loop user on Llama-3.1-8B, H100: one sequence at a time, so
 * every speculative step verifies exactly one sequence. */
#define USER_CLUSTER "{\"seed\": 7, \"stop\": {\"requests\": 400}," \
    " \"cluster\": {\"gpu\": \"h100-sxm\", \"model\": \"llama-3.1-8b\""
#define USER_SPEC ", \"speculative\": {\"method\": \"eagle\", \"num_speculative_tokens\": 4," \
    " \"acceptance_rate\": 0.6}"
#define USER_WORKLOAD "}, \"workload\": {\"arrival\": {\"process\": \"closed\", \"users\": 1}," \
    "  \"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 200}," \
    "  \"output_tokens\": {\"dist\": \"fixed\", \"value\": 300}}}"
static const char *one_user = USER_CLUSTER USER_SPEC USER_WORKLOAD;
static const char *one_user_plain = USER_CLUSTER USER_WORKLOAD;

static double q(sqlite3 *db, const char *sql)
{
    return support_q1(db, sql);
}

/* Mean accepted drafts over K positions under P(accepted >= i) = at[i]:
 * the mean is the sum of at[i], the variance E[J^2] - mean^2 with
 * E[J^2] = sum (2i - 1) at[i]. */
static void moments(const double *at, int k, double *mean, double *var)
{
    double m = 0, m2 = 0;
    for (int i = 1; i <= k; i++) {
        m += at[i];
        m2 += (2.0 * i - 1) * at[i];
    }
    *mean = m;
    *var = m2 - m * m;
}

/* The run's accepted drafts per verification against the model's mean,
 * within 5 standard errors of the drafts the run drew. */
static void check_mean(sqlite3 *db, const double *at, int k, const char *what)
{
    double mean, var;
    moments(at, k, &mean, &var);
    double drafts = q(db, "SELECT spec_drafts FROM replicas");
    double got = q(db, "SELECT 1.0 * spec_accepted / spec_drafts FROM replicas");
    ok(drafts > 10000, "%s: %g verifications drawn", what, drafts);
    is_near(got, mean, 5 * sqrt(var / drafts), "%s: accepted drafts per step %.4f, model %.4f",
            what, got, mean);
}

static void test_geometric(void)
{
    sqlite3 *db = support_run_json(one_user, NULL, false);
    double a = 0.6, at[5] = {1};
    for (int i = 1; i <= 4; i++) at[i] = at[i - 1] * a;
    check_mean(db, at, 4, "acceptance_rate 0.6, K 4");
    /* the mean tokens a step emits: (1 - a^(K+1)) / (1 - a) */
    double len = (1 - pow(a, 5)) / (1 - a);
    double got = q(db, "SELECT 1 + 1.0 * spec_accepted / spec_drafts FROM replicas");
    double mean, var;
    moments(at, 4, &mean, &var);
    is_near(got, len, 5 * sqrt(var / q(db, "SELECT spec_drafts FROM replicas")),
            "mean accepted length %.4f against (1 - a^(K+1)) / (1 - a) = %.4f", got, len);
    /* one sequence a step: a verification per speculative step, K drafts each */
    is_int((int64_t)q(db, "SELECT spec_drafts - spec_steps FROM replicas"), 0,
           "one verification per step at one sequence");
    is_int((int64_t)q(db, "SELECT spec_draft_tokens - 4 * spec_drafts FROM replicas"), 0,
           "K drafts per verification");
    /* every token after a prompt's first is a decode step's: 299 a request */
    is_int((int64_t)q(db, "SELECT decode_tokens FROM replicas"),
           (int64_t)q(db, "SELECT sum(output_tokens - 1) FROM requests WHERE status = 'completed'"),
           "the decode steps emitted every completed request's tokens but its first");
    /* tokens a step: the accepted ones and one more, short only where a
     * request's last step had fewer left than it accepted */
    double per_step = q(db, "SELECT 1.0 * decode_tokens / spec_steps FROM replicas");
    ok(per_step <= len + 5 * sqrt(var / q(db, "SELECT spec_drafts FROM replicas")) &&
           per_step > len - 0.05, "tokens per step %.4f, at most the mean length %.4f", per_step,
       len);
    sqlite3_close(db);
}

static void test_rates_and_length(void)
{
    const char *rates[] = {"cluster.speculative={\"method\": \"eagle3\", "
                           "\"num_speculative_tokens\": 3, \"acceptance_rates\": [0.8, 0.5, 0.3]}",
                           NULL};
    sqlite3 *db = support_run_json(one_user, rates, false);
    double at[4] = {1, 0.8, 0.5, 0.3};
    check_mean(db, at, 3, "acceptance_rates [0.8, 0.5, 0.3]");
    sqlite3_close(db);
    const char *length[] = {"cluster.speculative={\"method\": \"mtp\", "
                            "\"num_speculative_tokens\": 2, \"acceptance_length\": 2.2}",
                            NULL};
    db = support_run_json(one_user, length, false);
    double got = q(db, "SELECT 1 + 1.0 * spec_accepted / spec_drafts FROM replicas");
    /* the geometric a with 1 + a + a^2 = 2.2 */
    double a = (-1 + sqrt(1 + 4 * 1.2)) / 2, at2[3] = {1, a, a * a}, mean, var;
    moments(at2, 2, &mean, &var);
    is_near(got, 2.2, 5 * sqrt(var / q(db, "SELECT spec_drafts FROM replicas")),
            "acceptance_length 2.2: measured %.4f", got);
    sqlite3_close(db);
}

/* A chunked step's budget: each decoder takes K + 1 tokens of
 * max_batched_tokens and the prompt chunks get the rest, exactly. */
static void test_budget(void)
{
    const char *sets[] = {"workload.arrival.users=6", "cluster.scheduler.policy=chunked",
                          "cluster.scheduler.max_batched_tokens=256",
                          "cluster.scheduler.max_batch=8", "stop.requests=60",
                          "workload.prompt_tokens.value=1000", NULL};
    sqlite3 *db = support_run_json(one_user, sets, true);
    double over = q(db, "SELECT count(*) FROM iterations WHERE decode_seqs > 0 AND "
                        "prefill_tokens + 5 * decode_seqs > 256");
    double full = q(db, "SELECT count(*) FROM iterations WHERE decode_seqs > 0 AND "
                        "prefill_tokens + 5 * decode_seqs = 256");
    is_int((int64_t)over, 0, "no step over the budget at K + 1 tokens a decoder");
    ok(full > 50, "%g steps fill the budget exactly: prefill = 256 - 5 x decoders", full);
    sqlite3_close(db);
}

/* KV: a decoder of context c holds blocks for c + K drafts + the
 * drafter's K lookahead slots (n-gram: no lookahead).  Prompt 56, blocks
 * of 16: the one decode step attends 57 tokens -- 4 blocks alone, 4 with
 * n-gram's 4 drafts (61), 5 with EAGLE's 4 + 4 (65). */
static void test_lookahead(void)
{
    const char *base[] = {"stop.requests=1", "workload.prompt_tokens.value=56",
                          "workload.output_tokens.value=2", "cluster.scheduler.block_tokens=16",
                          NULL, NULL};
    struct {
        const char *spec;
        int64_t peak;
    } cases[] = {
        {"cluster.speculative={\"method\": \"eagle\", \"num_speculative_tokens\": 4, "
         "\"acceptance_rate\": 0}", 80},
        {"cluster.speculative={\"method\": \"ngram\", \"num_speculative_tokens\": 4, "
         "\"acceptance_rate\": 0}", 64},
    };
    for (int i = 0; i < 2; i++) {
        base[4] = cases[i].spec;
        sqlite3 *db = support_run_json(one_user, base, false);
        is_int((int64_t)q(db, "SELECT kv_peak_tokens FROM replicas"), cases[i].peak,
               "%s: KV peak %lld tokens", i == 0 ? "eagle" : "ngram", (long long)cases[i].peak);
        sqlite3_close(db);
    }
}

/* disable_by_batch_size: 16 users keep more than 8 sequences running. */
static void test_disable(void)
{
    const char *on[] = {"workload.arrival.users=16", "stop.requests=200", NULL};
    const char *off[] = {"workload.arrival.users=16", "stop.requests=200",
                         "cluster.speculative.disable_by_batch_size=8", NULL};
    sqlite3 *a = support_run_json(one_user, on, false), *b = support_run_json(one_user, off, false);
    is_int((int64_t)q(a, "SELECT spec_off_steps FROM replicas"), 0,
           "without the limit every decode step speculates");
    ok(q(b, "SELECT spec_off_steps FROM replicas") > 10 * q(b, "SELECT spec_steps FROM replicas"),
       "above 8 running the steps do not speculate (%g off, %g on)",
       q(b, "SELECT spec_off_steps FROM replicas"), q(b, "SELECT spec_steps FROM replicas"));
    sqlite3_close(a);
    sqlite3_close(b);
}

/* The trade: at one user a step's verification costs little more than a
 * plain step and emits ~2.3 tokens, so TPOT falls; at a saturated batch
 * verification's K + 1 positions per sequence are compute, and it rises. */
static void test_crossover(void)
{
    const char *light[] = {"stop.requests=100", NULL};
    const char *heavy[] = {"workload.arrival.users=256", "stop.requests=1500", NULL};
    const char *tpot = "SELECT avg(tpot_s) FROM request_metrics WHERE status = 'completed'";
    sqlite3 *pl = support_run_json(one_user_plain, light, false);
    sqlite3 *sl = support_run_json(one_user, light, false);
    sqlite3 *ph = support_run_json(one_user_plain, heavy, false);
    sqlite3 *sh = support_run_json(one_user, heavy, false);
    double gain = q(pl, tpot) / q(sl, tpot), loss = q(sh, tpot) / q(ph, tpot);
    ok(gain > 1.5, "one user: TPOT %.2f ms plain, %.2f ms speculating (%.2fx faster)",
       1e3 * q(pl, tpot), 1e3 * q(sl, tpot), gain);
    ok(loss > 1.0, "256 users: TPOT %.2f ms plain, %.2f ms speculating (%.2fx slower)",
       1e3 * q(ph, tpot), 1e3 * q(sh, tpot), loss);
    sqlite3_close(pl);
    sqlite3_close(sl);
    sqlite3_close(ph);
    sqlite3_close(sh);
}

/* A class's own acceptance: code accepts every draft, chat none.  Replies
 * of 301 tokens leave 300 to the decode steps: a code request takes 60
 * steps of K + 1 = 5 tokens, accepting 4 each; a chat request 300 steps of
 * one token, accepting none -- exactly, whatever the pool's 0.6. */
static void test_class_acceptance(void)
{
    const char *sets[] = {"workload.output_tokens.value=301", "stop.requests=40",
                          "workload.classes=[{\"name\": \"code\", \"weight\": 1, \"speculative\":"
                          " {\"acceptance_rate\": 1}}, {\"name\": \"chat\", \"weight\": 1,"
                          " \"speculative\": {\"acceptance_length\": 1}}]",
                          NULL};
    sqlite3 *db = support_run_json(one_user, sets, false);
    const char *count = "SELECT count(*) FROM requests WHERE status = 'completed' AND class = '%s'";
    char sql[160];
    snprintf(sql, sizeof sql, count, "code");
    int64_t code = (int64_t)q(db, sql);
    snprintf(sql, sizeof sql, count, "chat");
    int64_t chat = (int64_t)q(db, sql);
    ok(code > 5 && chat > 5 && code + chat == 40, "%lld code and %lld chat requests completed",
       (long long)code, (long long)chat);
    is_int((int64_t)q(db, "SELECT spec_accepted FROM replicas"), 240 * code,
           "accepted drafts: 4 a step over 60 steps of each code request");
    is_int((int64_t)q(db, "SELECT spec_drafts FROM replicas"), 60 * code + 300 * chat,
           "verifications: 60 a code request, 300 a chat request");
    sqlite3_close(db);
}

/* Speculation under every scheduler family, prefix caching, pipeline and
 * tensor parallelism, a disaggregated decode pool and an MoE model: every
 * request completes, the decode steps emit every token but each reply's
 * first, and the drafts accepted match the geometric model. */
static void test_everywhere(void)
{
    static const char *const cases[][4] = {
        {"cluster.scheduler.policy=continuous"},
        {"cluster.scheduler.policy=prefill_first"},
        {"cluster.scheduler.policy=chunked", "cluster.scheduler.max_batched_tokens=512"},
        {"cluster.scheduler.policy=static"},
        {"cluster.scheduler.prefix_caching=true"},
        {"cluster.tensor_parallel=2", "cluster.pipeline_parallel=2"},
        {"cluster.model=qwen3-30b-a3b"},
        {"cluster.pools=[{\"name\": \"P\"}, {\"name\": \"D\"}]",
         "cluster.disaggregated={\"prefill\": \"P\", \"decode\": \"D\", \"link_gbs\": 50}"},
        {"cluster.pools=[{\"name\": \"A\"}, {\"name\": \"B\", \"gpu\": \"h200\"}]"},
    };
    double at[5] = {1}, mean, var;
    for (int i = 1; i <= 4; i++) at[i] = at[i - 1] * 0.6;
    moments(at, 4, &mean, &var);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const char *sets[8] = {"workload.arrival.users=8", "stop.requests=300"};
        int n = 2;
        for (int j = 0; j < 4 && cases[c][j]; j++) sets[n++] = cases[c][j];
        sqlite3 *db = support_run_json(one_user, sets, false);
        if (strstr(cases[c][0], "pools"))
            is_int((int64_t)q(db, "SELECT sum(spec_k = 4) * 10 + sum(spec_k = 0) FROM replicas"),
                   cases[c][1] ? 11 : 20,
                   "%s: the pools inherit cluster.speculative%s", cases[c][0],
                   cases[c][1] ? ", but for the prefill pool, which never decodes" : "");
        is_int((int64_t)q(db, "SELECT count(*) FROM requests WHERE status = 'completed'"), 300,
               "%s: every request completed", cases[c][0]);
        is_int((int64_t)q(db, "SELECT sum(decode_tokens) FROM replicas"),
               (int64_t)q(db, "SELECT sum(output_tokens - 1) FROM requests"),
               "%s: the decode steps emitted every token but each reply's first", cases[c][0]);
        double drafts = q(db, "SELECT sum(spec_drafts) FROM replicas");
        double got = q(db, "SELECT 1.0 * sum(spec_accepted) / sum(spec_drafts) FROM replicas");
        is_near(got, mean, 5 * sqrt(var / drafts), "%s: accepted drafts per step %.4f, model %.4f",
                cases[c][0], got, mean);
        sqlite3_close(db);
    }
}

/* MoE: verifying K + 1 positions a sequence routes K + 1 tokens, so a step
 * reads the experts any of them reached -- E (1 - (1 - k/E)^t) of E in
 * expectation under uniform routing -- where a plain step reads k.  The
 * step's bytes beyond the plain one's are those experts, the drafts' own
 * KV and the embedding rows of the drafts (the table is untied). */
static void test_moe_experts(void)
{
    const char *sets[] = {"cluster.model=qwen3-30b-a3b", NULL};
    sim_scenario sc;
    char *errors = NULL;
    int rc = support_scenario(one_user, sets, &sc, &errors);
    support_one_line(errors);
    ok(rc == 0, "an MoE model speculates (%s)",
       errors ? errors : "loaded");
    const mdl_cost *cm = &sc.pools[0].cost;
    const mdl_model *m = &cm->model;
    mdl_batch one = {.n_decode = 1, .decode_context = 1000, .decode_width = 1};
    mdl_batch five = one;
    five.decode_width = 5;
    mdl_step a, b;
    mdl_cost_step(cm, &one, &a);
    mdl_cost_step(cm, &five, &b);
    double miss = 1.0 - (double)m->experts_active / m->experts;
    double experts = cm->expert_params * m->experts * (miss - pow(miss, 5));
    double rows = 4.0 * m->hidden * (m->tied_embeddings ? 0 : 1);
    double kv = cm->kv_read_per_layer_token * m->layers * 4.0;
    ok(m->experts > m->experts_active, "qwen3-30b-a3b: %d experts, %d active", m->experts,
       m->experts_active);
    is_near(b.bytes - a.bytes, (experts + rows) * m->weight_bytes_per_param + kv,
            1e-9 * a.bytes, "a step verifying 5 positions reads %.3g more bytes: %.3g of "
            "experts reached", b.bytes - a.bytes, experts * m->weight_bytes_per_param);
    sim_scenario_fini(&sc);
    free(errors);
}

/* n-gram lookup is host time: every speculating step scans each
 * sequence's whole context.  One user, prompts of 200, replies of 300,
 * nothing accepted: a request's 299 decode steps scan contexts of 201 to
 * 499 tokens, 104,650 in all, at lookup_s_per_token each -- its drafting
 * time, exactly, and its steps that much longer than at 0. */
static void test_ngram_lookup(void)
{
    const char *slow[] = {"stop.requests=20", "cluster.speculative={\"method\": \"ngram\", "
                          "\"num_speculative_tokens\": 4, \"acceptance_rate\": 0, "
                          "\"lookup_s_per_token\": 1e-6}", NULL};
    const char *free_[] = {"stop.requests=20", "cluster.speculative={\"method\": \"ngram\", "
                           "\"num_speculative_tokens\": 4, \"acceptance_rate\": 0, "
                           "\"lookup_s_per_token\": 0}", NULL};
    sqlite3 *a = support_run_json(one_user, slow, false), *b = support_run_json(one_user, free_, false);
    double n = q(a, "SELECT count(*) FROM requests WHERE status = 'completed'");
    is_near(q(a, "SELECT spec_drafting_s FROM replicas"), n * 104650e-6, 1e-9,
            "drafting: %g requests x 104,650 tokens scanned x 1 us", n);
    is_near(q(b, "SELECT spec_drafting_s FROM replicas"), 0, 1e-12, "at 0 s a token, none");
    const char *busy = "SELECT busy_s FROM replicas";
    is_near(q(a, busy) - q(b, busy), n * 104650e-6, 1e-6,
            "the lookup lengthens the steps by as much: the GPU waits for it");
    sqlite3_close(a);
    sqlite3_close(b);
}

/* Two runs of one seed accept the same drafts. */
static void test_deterministic(void)
{
    support_rows a = {0}, b = {0};
    const char *sets[] = {"workload.arrival.users=8", "stop.requests=100", NULL};
    char *json = util_xstrdup(one_user);
    support_run(json, sets, &a, NULL);
    support_run(json, sets, &b, NULL);
    ok(support_rows_equal(&a, &b) && a.rep[0].spec_accepted == b.rep[0].spec_accepted,
       "same seed, same rows and accepted drafts");
    free(json);
    support_rows_fini(&a);
    support_rows_fini(&b);
}

/* ---- method draft: Llama-3.2-1B drafting for Llama-3.1-8B ---- */

#define DRAFT_SPEC "cluster.speculative={\"method\": \"draft\", \"draft_model\": " \
    "\"llama-3.2-1b\", \"num_speculative_tokens\": 4, \"acceptance_rate\": "

/* The same with another draft model (JSON text), acceptance 0.5. */
#define DRAFT_OF(model) "cluster.speculative={\"method\": \"draft\", \"draft_model\": " \
    model ", \"num_speculative_tokens\": 4, \"acceptance_rate\": 0.5}"

static const char *root;

/* A draft pass over one sequence at context c (its new tokens included)
 * and width w, at batch size 1 memory-bound: Llama-3.2-1B's 1.24e9 BF16
 * weights (its head is its embedding, read once) and its KV of 16 layers
 * x 2 x 8 KV heads x 64 x 2 bytes a token for the c keys and the w - 1
 * drafts, at mbu x the H100's bandwidth. */
static double draft_pass_s(const sim_pool *p, double c, double w)
{
    double bytes = 1.24e9 * 2 + 16 * 2 * 8 * 64 * 2 * (c + w - 1);
    return bytes / (p->cost.gpu.mem_bw * p->cost.mbu);
}

/* The draft model's pass over a prompt of n tokens, by the public cost
 * model: the draft's roofline beside the pool's, at its precision. */
static double draft_prefill_s(const sim_pool *p, int64_t n)
{
    mdl_cost c;
    mdl_cost_draft_model(&p->cost, mdl_catalog_find_model(support_catalog, "llama-3.2-1b"),
                         p->tensor_parallel, &c);
    mdl_precision pr = {.quant = MDL_Q_NONE, .kv = MDL_KV_AUTO, .engine = "vllm-v1"};
    util_diag d;
    util_diag_init(&d);
    mdl_precision_apply(&c, &pr, "test", &d);
    util_diag_fini(&d);
    mdl_chunk chunk = {.tokens = n, .cached = 0};
    mdl_batch b = {.n_prefill = 1, .prefill_tokens = n, .prefill_sq = (double)n * n,
                   .prefill_pairs = n * (n + 1) / 2.0, .chunks = &chunk};
    mdl_step s;
    mdl_cost_step(&c, &b, &s);
    return s.gpu_s;
}

/* One request, prompt 200, 50 tokens, K = 4, nothing accepted: 49
 * speculative steps, step j verifying context 200 + j, each drafting K
 * passes (the first of width K + 1), and the prompt's one draft prefill. */
static void test_draft_cost(void)
{
    const char *sets[] = {DRAFT_SPEC "0}", "stop.requests=1", "workload.output_tokens.value=50",
                          NULL};
    sim_scenario sc;
    if (support_scenario(one_user, sets, &sc, NULL)) {
        ok(0, "the draft scenario loads");
        return;
    }
    sqlite3 *db = support_run_json(one_user, sets, false);
    double want = draft_prefill_s(&sc.pools[0], 200);
    for (int j = 1; j <= 49; j++)
        for (int pass = 0; pass < 4; pass++)
            want += draft_pass_s(&sc.pools[0], 200 + j + pass, pass == 0 ? 5 : 1);
    is_int((int64_t)q(db, "SELECT spec_steps FROM replicas"), 49, "49 speculative steps");
    double got = q(db, "SELECT spec_drafting_s FROM replicas");
    is_near(got, want, 1e-12 * want, "drafting %.9f s: 4 passes of the 1B model a step and its "
            "prefill, %.9f s", got, want);
    /* the one step of a 2-token reply: K passes, no more */
    const char *one[] = {DRAFT_SPEC "0}", "stop.requests=1", "workload.output_tokens.value=2",
                         NULL};
    sqlite3 *db1 = support_run_json(one_user, one, false);
    double step = q(db1, "SELECT spec_drafting_s FROM replicas") -
                  draft_prefill_s(&sc.pools[0], 200);
    double passes = draft_pass_s(&sc.pools[0], 201, 5) + draft_pass_s(&sc.pools[0], 202, 1) +
                    draft_pass_s(&sc.pools[0], 203, 1) + draft_pass_s(&sc.pools[0], 204, 1);
    is_near(step, passes, 1e-12 * passes, "one step's drafting %.9f s = its 4 passes %.9f s",
            step, passes);
    sqlite3_close(db);
    sqlite3_close(db1);
    sim_scenario_fini(&sc);
}

/* At batch size 1 a step costs the target's pass and the draft's four:
 * with acceptance 0.8 it emits 3.36 tokens on average and TPOT falls;
 * with 0 it emits one and TPOT rises. */
static void test_draft_tpot(void)
{
    const char *light[] = {"stop.requests=30", NULL};
    const char *good[] = {"stop.requests=30", DRAFT_SPEC "0.8}", NULL};
    const char *none[] = {"stop.requests=30", DRAFT_SPEC "0}", NULL};
    const char *tpot = "SELECT avg(tpot_s) FROM request_metrics WHERE status = 'completed'";
    sqlite3 *pl = support_run_json(one_user_plain, light, false);
    sqlite3 *g = support_run_json(one_user_plain, good, false);
    sqlite3 *z = support_run_json(one_user_plain, none, false);
    ok(q(g, tpot) < q(pl, tpot), "acceptance 0.8: TPOT %.2f ms, plain %.2f ms", 1e3 * q(g, tpot),
       1e3 * q(pl, tpot));
    ok(q(z, tpot) > q(pl, tpot), "acceptance 0: TPOT %.2f ms, plain %.2f ms", 1e3 * q(z, tpot),
       1e3 * q(pl, tpot));
    sqlite3_close(pl);
    sqlite3_close(g);
    sqlite3_close(z);
}

/* draft_tensor_parallel_size 1 on a TP-2 target: the draft's weights and
 * all its KV sit on one GPU, and since both GPUs hold as many KV blocks,
 * the replica holds what that GPU leaves; its passes run on one GPU. */
static void test_draft_one_gpu(void)
{
    const char *sets[] = {"stop.requests=5", "cluster.tensor_parallel=2",
                          "cluster.speculative={\"method\": \"draft\", \"draft_model\": "
                          "\"llama-3.2-1b\", \"num_speculative_tokens\": 4, "
                          "\"acceptance_rate\": 0.5, \"draft_tensor_parallel_size\": 1}",
                          NULL};
    sim_scenario sc;
    if (support_scenario(one_user_plain, sets, &sc, NULL)) {
        ok(0, "the draft scenario loads");
        return;
    }
    const sim_pool *p = &sc.pools[0];
    double usable = p->cost.gpu.mem_bytes * p->gpu_memory_utilization;
    double wt = 8.03e9 * 2, wd = 1.24e9 * 2, kvt = 32 * 2 * 8 * 128 * 2, kvd = 16 * 2 * 8 * 64 * 2;
    /* the first GPU: half the target and all the draft */
    int64_t tokens = (int64_t)floor((usable - wt / 2 - wd - p->activation_reserve_bytes) /
                                    ((kvt / 2 + kvd) * 16)) * 16;
    sqlite3 *db = support_run_json(one_user_plain, sets, false);
    is_int((int64_t)q(db, "SELECT kv_capacity_tokens FROM replicas"), tokens,
           "draft on one of two GPUs: KV capacity %lld tokens, what that GPU leaves",
           (long long)tokens);
    sqlite3_close(db);
    is_int(p->spec.head.tp, 1, "its passes are costed on one GPU");
    mdl_batch b = {.n_decode = 1, .decode_context = 500, .decode_width = 1};
    mdl_step one, two;
    mdl_cost_step(&p->spec.head, &b, &one);
    mdl_cost c;
    mdl_cost_draft_model(&p->cost, mdl_catalog_find_model(support_catalog, "llama-3.2-1b"), 2, &c);
    mdl_cost_step(&c, &b, &two);
    ok(one.gpu_s > two.gpu_s, "a pass on one GPU (%.3f ms) is slower than on two (%.3f ms)",
       1e3 * one.gpu_s, 1e3 * two.gpu_s);
    sim_scenario_fini(&sc);
}

/* The KV cache: what memory leaves beside the target's weights and the
 * draft's, in blocks of the two models' KV a token (8 KV heads each, so
 * one GPU holds all of both). */
static void test_draft_memory(void)
{
    const char *sets[] = {"stop.requests=5", DRAFT_SPEC "0.5}", NULL};
    const char *plain_sets[] = {"stop.requests=5", NULL};
    sim_scenario sc;
    if (support_scenario(one_user_plain, sets, &sc, NULL)) {
        ok(0, "the draft scenario loads");
        return;
    }
    const sim_pool *p = &sc.pools[0];
    const mdl_model *t = mdl_catalog_find_model(support_catalog, "llama-3.1-8b");
    double usable = p->cost.gpu.mem_bytes * p->gpu_memory_utilization;
    double wt = 8.03e9 * 2, wd = 1.24e9 * 2, kvt = 32 * 2 * 8 * 128 * 2, kvd = 16 * 2 * 8 * 64 * 2;
    is_near(mdl_model_weight_bytes(t), wt, 1e-6 * wt, "Llama-3.1-8B: %g bytes of weights",
            mdl_model_weight_bytes(t));
    int64_t alone = (int64_t)floor((usable - wt - p->activation_reserve_bytes) / (kvt * 16)) * 16;
    int64_t beside = (int64_t)floor((usable - wt - wd - p->activation_reserve_bytes) /
                                    ((kvt + kvd) * 16)) * 16;
    sqlite3 *a = support_run_json(one_user_plain, plain_sets, false);
    sqlite3 *b = support_run_json(one_user_plain, sets, false);
    is_int((int64_t)q(a, "SELECT kv_capacity_tokens FROM replicas"), alone,
           "alone: KV capacity %lld tokens", (long long)alone);
    is_int((int64_t)q(b, "SELECT kv_capacity_tokens FROM replicas"), beside,
           "beside the draft's weights, with its KV in every block: %lld tokens",
           (long long)beside);
    is_near(q(b, "SELECT weight_bytes - kv_bytes_per_token FROM replicas"),
            wt + wd - kvt - kvd, 1, "the replica's weights and KV a token count the draft's");
    sqlite3_close(a);
    sqlite3_close(b);
    sim_scenario_fini(&sc);
}

/* A target costed by another model lends the drafter the GPU's default
 * efficiencies (its own mfu and mbu are the roofline's only): a linear
 * target's EAGLE head drafts in finite time, the roofline's. */
static void test_linear_target(void)
{
    const char *sets[] = {"stop.requests=3", "workload.output_tokens.value=20",
                          "cluster.cost_model={\"kind\": \"linear\", \"decode_step_s\": 0.01}",
                          NULL};
    sqlite3 *db = support_run_json(one_user, sets, false);
    double per_step = q(db, "SELECT spec_drafting_s / spec_steps FROM replicas");
    ok(isfinite(per_step) && per_step > 0 && per_step < 0.01,
       "linear target: %.6f s of EAGLE drafting a step", per_step);
    sqlite3_close(db);
}

static void bad(const char *set, const char *want)
{
    const char *sets[] = {set, NULL};
    char *errors = support_refusal(one_user, sets);
    ok(errors && strstr(errors, want), "%s: refused naming '%s' (%s)", set, want,
       errors ? errors : "accepted");
    free(errors);
}

static void test_bad_input(void)
{
    bad("cluster.speculative.num_speculative_tokens=0", "speculative.num_speculative_tokens");
    bad("cluster.speculative.num_speculative_tokens=17", "speculative.num_speculative_tokens");
    bad("cluster.speculative.acceptance_rate=1.5", "speculative.acceptance_rate");
    bad("cluster.speculative={\"method\": \"eagle\", \"num_speculative_tokens\": 3, "
        "\"acceptance_rates\": [0.5, 0.4]}", "acceptance_rates: 2 rates for num_speculative_tokens 3");
    bad("cluster.speculative={\"method\": \"eagle\", \"num_speculative_tokens\": 2, "
        "\"acceptance_rates\": [0.5, 1.2]}", "acceptance_rates[1]");
    bad("cluster.speculative={\"method\": \"eagle\", \"num_speculative_tokens\": 2, "
        "\"acceptance_rates\": [0.5, 0.7]}", "above the position before it");
    bad("cluster.speculative={\"method\": \"eagle\", \"num_speculative_tokens\": 2, "
        "\"acceptance_rate\": 0.5, \"acceptance_length\": 2}", "more than one is set");
    bad("cluster.speculative={\"method\": \"eagle\", \"num_speculative_tokens\": 2}",
        "none is set");
    bad("cluster.speculative={\"method\": \"eagle\", \"num_speculative_tokens\": 2, "
        "\"acceptance_length\": 3.5}", "above num_speculative_tokens + 1");
    bad("cluster.speculative.method=medusa", "speculative.method");
    bad("cluster.speculative.draft_vocab_size=32000", "applies only to method eagle3");
    bad("workload.classes=[{\"name\": \"code\", \"weight\": 1, \"speculative\": {\"acceptance_rates\": "
        "[0.9, 0.8]}}]", "workload.classes[0].speculative.acceptance_rates: 2 rates for "
        "num_speculative_tokens 4");
    bad("workload.classes=[{\"name\": \"code\", \"weight\": 1, \"speculative\": {}}]",
        "workload.classes[0].speculative: give one of");
    bad("workload.classes=[{\"name\": \"code\", \"weight\": 1, \"speculative\": {\"acceptance_rate\": 2}}]",
        "workload.classes[0].speculative.acceptance_rate");
    const char *plain[] = {"workload.classes=[{\"name\": \"code\", \"weight\": 1, \"speculative\": "
                           "{\"acceptance_rate\": 0.9}}]", NULL};
    char *errors = support_refusal(one_user_plain, plain);
    ok(errors && strstr(errors, "workload.classes[0].speculative: no pool speculates"),
       "a class's acceptance without cluster.speculative is refused (%s)",
       errors ? errors : "accepted");
    free(errors);
    bad("cluster.speculative.method=draft", "speculative.draft_model: missing");
    bad("cluster.speculative.draft_model=llama-3.2-1b",
        "speculative.draft_model: applies only to method draft");
    bad(DRAFT_OF("\"llama-3.1-70b\""),
        "speculative.draft_model: llama-3.1-70b (141.2 GB of weights, 320 KiB of KV a token) "
        "does not fit beside llama-3.1-8b");
    bad(DRAFT_OF("\"llama-3.2\""), "speculative.draft_model: unknown model 'llama-3.2'");
    bad("cluster.speculative={\"method\": \"draft\", \"draft_model\": \"llama-3.2-1b\", "
        "\"num_speculative_tokens\": 4, \"acceptance_rate\": 0.5, "
        "\"draft_tensor_parallel_size\": 2}",
        "draft_tensor_parallel_size: 2 is neither 1 nor the target's tensor_parallel (1)");
    bad("cluster.speculative.lookup_s_per_token=1e-9",
        "speculative.lookup_s_per_token: applies only to method ngram");
    bad("cluster.speculative.draft_tensor_parallel_size=1",
        "speculative.draft_tensor_parallel_size: applies only to method draft");
    char *other = util_xasprintf(DRAFT_OF("{\"hf_config\": \"%s/tests/hf_configs/"
                                          "mistral-nemo-12b\"}"), root);
    bad(other, "speculative.draft_model: mistral-nemo-12b's vocabulary (131072 tokens) is not "
               "the target llama-3.1-8b's (128256)");
    free(other);
}

/* A validation scenario of examples/validation/speculative, with sets, and
 * without its cluster.speculative when plain. */
static sqlite3 *run_validation(const char *file, const char *const *sets, bool plain)
{
    char *path = util_xasprintf("%s/examples/validation/speculative/%s", root, file), *text = NULL;
    size_t len;
    util_diag d;
    util_diag_init(&d);
    cJSON *root_json = util_read_file(path, &text, &len, &d) ? NULL : cJSON_Parse(text);
    if (plain) cJSON_DeleteItemFromObject(cJSON_GetObjectItem(root_json, "cluster"), "speculative");
    char *json = root_json ? cJSON_PrintUnformatted(root_json) : NULL;
    sqlite3 *db = json ? support_run_json(json, sets, false) : NULL;
    ok(db != NULL, "%s runs%s", file, plain ? " without speculation" : "");
    cJSON_Delete(root_json);
    util_diag_fini(&d);
    free(json);
    free(text);
    free(path);
    return db;
}

/* The published figures docs/validation.md reproduces within the issue's
 * 20%: EAGLE's TPOT at batch size 1 for every K (vLLM issue #20780), and
 * the vLLM blog's speedup at QPS 1 and slowdown at QPS 10 (draft model,
 * Llama-3-70B on 4 x H100) -- so that a change to the cost model that
 * moves them out is seen. */
static void test_published(void)
{
    static const struct {
        int k;
        double al, tpot_ms;
    } eagle[] = {{2, 2.10, 4.37}, {3, 2.29, 4.29}, {4, 2.39, 4.48}, {5, 2.43, 4.71}, {7, 2.47, 5.20}};
    const char *tpot = "SELECT avg(tpot_s) FROM request_metrics WHERE status = 'completed'";
    for (size_t i = 0; i < sizeof eagle / sizeof *eagle; i++) {
        char *spec = util_xasprintf("cluster.speculative={\"method\": \"eagle\", "
                                    "\"num_speculative_tokens\": %d, \"acceptance_length\": %g}",
                                    eagle[i].k, eagle[i].al);
        const char *sets[] = {spec, NULL};
        sqlite3 *db = run_validation("batch1.json", sets, false);
        double ms = 1e3 * q(db, tpot);
        ok(fabs(ms / eagle[i].tpot_ms - 1) <= 0.2, "EAGLE K = %d at batch size 1: TPOT %.2f ms, "
           "published %.2f ms", eagle[i].k, ms, eagle[i].tpot_ms);
        sqlite3_close(db);
        free(spec);
    }
    const char *e2e = "SELECT avg(e2e_s) FROM request_metrics WHERE status = 'completed'";
    static const struct {
        const char *rate;
        double published; /* mean E2E without / with speculation */
    } blog[] = {{"workload.arrival.rate_per_s=1", 2.55 / 1.65},
                {"workload.arrival.rate_per_s=10", 3.45 / 4.80}};
    for (int i = 0; i < 2; i++) {
        const char *with[] = {blog[i].rate, NULL};
        sqlite3 *a = run_validation("qps-draft.json", with, false);
        sqlite3 *b = run_validation("qps-draft.json", with, true);
        double x = q(b, e2e) / q(a, e2e);
        ok(fabs(x / blog[i].published - 1) <= 0.2, "the vLLM blog at QPS %s: x%.2f, published "
           "x%.2f", strchr(blog[i].rate, '=') + 1, x, blog[i].published);
        sqlite3_close(a);
        sqlite3_close(b);
    }
}

int main(int argc, char **argv)
{
    root = argc > 1 ? argv[1] : ".";
    if (support_init()) return 1;
    test_geometric();
    test_rates_and_length();
    test_budget();
    test_lookahead();
    test_disable();
    test_crossover();
    test_class_acceptance();
    test_ngram_lookup();
    test_everywhere();
    test_moe_experts();
    test_deterministic();
    test_draft_cost();
    test_draft_tpot();
    test_draft_memory();
    test_draft_one_gpu();
    test_linear_target();
    test_bad_input();
    test_published();
    support_fini();
    return tap_done();
}
