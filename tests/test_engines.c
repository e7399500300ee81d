/*
 * test_engines.c: engine presets (cluster.engine, the catalog's "engines")
 * and the host latencies they bring -- each preset's defaults read back from
 * the effective scenario (GPU tiers and vLLM's rules included), a scenario's
 * own key winning over the preset, an unknown engine refused with its path
 * and the choices, `ideal` giving exactly the rows of the old defaults,
 * host.output_s moving what the client sees (and when a closed-loop client
 * sends again) by exactly output_s, host.frontend_s delaying a request's
 * first scheduling by exactly its frontend time, and the host's time per
 * iteration in single iterations and in closed-form decode runs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "tap.h"

#define EPS 1e-9

/* One replica of Llama-3.1-8B, a light Poisson load on the roofline; the
 * engine and the GPU are the tests' to set. */
#define BASE                                                                                       \
    "{\"seed\": 3, \"stop\": {\"requests\": 60}, \"cluster\": {\"gpu\": \"h100-sxm\", "            \
    "\"model\": \"llama-3.1-8b\"}, \"workload\": {\"arrival\": {\"process\": \"poisson\", "        \
    "\"rate_per_s\": 4}, \"prompt_tokens\": {\"dist\": \"lognormal\", \"median\": 600, "           \
    "\"sigma\": 0.6, \"max\": 4000}, \"output_tokens\": {\"dist\": \"uniform\", \"min\": 20, "     \
    "\"max\": 120}}}"

/* Loads BASE with the overrides; NULL (and a TAP comment) if it fails. */
static bool load(const char *const *sets, sim_scenario *sc)
{
    return support_scenario(BASE, sets, sc, NULL) == 0; /* its errors as TAP comments */
}

static double num(const sim_scenario *sc, const char *path)
{
    return util_json_number(sc->json, path, NAN);
}

static bool flag(const sim_scenario *sc, const char *path)
{
    return cJSON_IsTrue(util_json_get(sc->json, path));
}

static const char *str(const sim_scenario *sc, const char *path)
{
    const cJSON *v = util_json_get(sc->json, path);
    return cJSON_IsString(v) ? v->valuestring : "(none)";
}

/* ---- each preset's defaults ---- */

static void test_vllm_v1(void)
{
    sim_scenario sc;
    const char *h100[] = {NULL};
    if (!load(h100, &sc)) return;
    is_str(str(&sc, "cluster.engine"), "vllm-v1", "no engine named: vllm-v1, stated");
    is_str(sc.pools[0].engine, "vllm-v1", "and typed");
    is_str(str(&sc, "cluster.scheduler.policy"), "chunked", "vllm-v1: chunked prefill");
    is_near(num(&sc, "cluster.scheduler.max_batch"), 1024, 0, "max_num_seqs 1024 on an H100");
    is_near(num(&sc, "cluster.scheduler.max_batched_tokens"), 8192, 0,
            "max_num_batched_tokens 8192 on an H100");
    is_near(num(&sc, "cluster.scheduler.block_tokens"), 16, 0, "block size 16");
    is_near(num(&sc, "cluster.scheduler.gpu_memory_utilization"), 0.9, 0,
            "gpu_memory_utilization 0.9");
    is_str(str(&sc, "cluster.scheduler.preemption"), "recompute", "recompute preemption");
    ok(flag(&sc, "cluster.scheduler.prefix_caching"), "prefix caching on");
    ok(flag(&sc, "cluster.scheduler.async_scheduling"), "asynchronous scheduling on");
    ok(sc.pools[0].async_scheduling, "typed: asynchronous scheduling");
    ok(sc.pools[0].cost.host_overlap, "typed: host time overlaps");
    is_near(num(&sc, "cluster.host.frontend_s"), 0.0009, 0, "frontend 0.9 ms");
    is_near(num(&sc, "cluster.host.frontend_s_per_token"), 2.25e-6, 0, "2.25 us per prompt token");
    is_near(num(&sc, "cluster.host.step_s"), 0, 0, "no fixed host time per step");
    is_near(num(&sc, "cluster.host.step_s_per_seq"), 2.1e-5, 0, "21 us per sequence per step");
    is_near(num(&sc, "cluster.host.output_s"), 0.0005, 0, "output 0.5 ms");
    is_near(sc.pools[0].frontend_s, 0.0009, 0, "typed frontend_s");
    is_near(sc.pools[0].frontend_s_per_token, 2.25e-6, 0, "typed frontend_s_per_token");
    is_near(sc.pools[0].output_s, 0.0005, 0, "typed output_s");
    is_near(sc.pools[0].cost.host_step_s_per_seq, 2.1e-5, 0, "the cost model's host time");
    sim_scenario_fini(&sc);

    const char *small[] = {"cluster.gpu=rtx-4090", NULL};
    if (!load(small, &sc)) return;
    is_near(num(&sc, "cluster.scheduler.max_batch"), 256, 0, "256 sequences below 70 GiB");
    is_near(num(&sc, "cluster.scheduler.max_batched_tokens"), 2048, 0, "2048 tokens below 70 GiB");
    sim_scenario_fini(&sc);
    const char *a100[] = {"cluster.gpu=a100-80gb", NULL};
    if (!load(a100, &sc)) return;
    is_near(num(&sc, "cluster.scheduler.max_batched_tokens"), 2048, 0,
            "an A100-80GB keeps the small defaults");
    sim_scenario_fini(&sc);
    const char *inline_gpu[] = {"cluster.gpu={\"id\": \"big\", \"bf16_tflops\": 500, "
                                "\"memory_gib\": 96, \"memory_bw_tbs\": 2, \"tdp_w\": 600, "
                                "\"idle_w\": 60, \"usd_per_hour\": 2}",
                                NULL};
    if (!load(inline_gpu, &sc)) return;
    is_near(num(&sc, "cluster.scheduler.max_batch"), 1024, 0, "an inline 96 GiB GPU is large");
    sim_scenario_fini(&sc);
}

static void test_vllm_v0(void)
{
    sim_scenario sc;
    const char *sets[] = {"cluster.engine=vllm-v0", NULL};
    if (!load(sets, &sc)) return;
    is_str(str(&sc, "cluster.scheduler.policy"), "prefill_first", "vllm-v0: prefill first");
    is_near(num(&sc, "cluster.scheduler.max_batch"), 256, 0, "max_num_seqs 256");
    is_near(num(&sc, "cluster.scheduler.max_batched_tokens"), 131072, 0,
            "max_num_batched_tokens = max(max_model_len, 2048)");
    ok(!flag(&sc, "cluster.scheduler.prefix_caching"), "no prefix caching");
    ok(!flag(&sc, "cluster.scheduler.async_scheduling"), "synchronous");
    ok(!sc.pools[0].cost.host_overlap, "typed: host time adds to the GPU's");
    is_near(num(&sc, "cluster.host.step_s"), 0.0025, 0, "2.5 ms of scheduling per iteration");
    sim_scenario_fini(&sc);
}

static void test_sglang(void)
{
    sim_scenario sc;
    const char *h100[] = {"cluster.engine=sglang", NULL};
    if (!load(h100, &sc)) return;
    is_near(num(&sc, "cluster.scheduler.max_batched_tokens"), 8192, 0,
            "sglang: chunked_prefill_size 8192 on an H100");
    is_near(num(&sc, "cluster.scheduler.max_batch"), 2048, 0, "2048 running requests");
    is_near(num(&sc, "cluster.scheduler.block_tokens"), 1, 0, "page size 1");
    is_near(num(&sc, "cluster.scheduler.gpu_memory_utilization"), 1, 0,
            "all memory, less SGLang's reserve");
    is_near(num(&sc, "cluster.scheduler.activation_reserve_gib"), 13.125, 0,
            "a reserve of 13,440 MiB");
    sim_scenario_fini(&sc);
    const char *l40s[] = {"cluster.engine=sglang", "cluster.gpu=l40s", NULL};
    if (!load(l40s, &sc)) return;
    is_near(num(&sc, "cluster.scheduler.max_batched_tokens"), 4096, 0, "4096 on a 48 GiB L40S");
    is_near(num(&sc, "cluster.scheduler.activation_reserve_gib"), 6.6875, 0, "its reserve");
    sim_scenario_fini(&sc);
}

static void test_ideal(void)
{
    sim_scenario sc;
    const char *sets[] = {"cluster.engine=ideal", NULL};
    if (!load(sets, &sc)) return;
    is_str(str(&sc, "cluster.scheduler.policy"), "continuous", "ideal: continuous");
    is_near(num(&sc, "cluster.scheduler.max_batch"), 256, 0, "256 sequences");
    is_near(num(&sc, "cluster.scheduler.max_batched_tokens"), 8192, 0, "8192 tokens");
    ok(!flag(&sc, "cluster.scheduler.prefix_caching"), "no prefix caching");
    ok(!flag(&sc, "cluster.scheduler.async_scheduling"), "no asynchronous scheduling");
    double host = num(&sc, "cluster.host.frontend_s") +
                  num(&sc, "cluster.host.frontend_s_per_token") + num(&sc, "cluster.host.step_s") +
                  num(&sc, "cluster.host.step_s_per_seq") + num(&sc, "cluster.host.output_s");
    is_near(host, 0, 0, "no host latency at all");
    sim_scenario_fini(&sc);
}

/* Every preset of the catalog, on every GPU, is a valid scenario: the
 * catalog checks types and sources, the scenario the names and ranges.
 * (A model of 4,096 tokens: vllm-v0's unchunked budget holds the whole
 * context, whose activations a 24 GiB GPU cannot hold beside Llama-3.1-8B's
 * 128K, as vLLM V0 could not without --max-model-len.) */
static void test_every_preset(void)
{
    bool all = true;
    int n = 0;
    for (int i = 0; i < mdl_catalog_engine_count(support_catalog); i++) {
        const cJSON *e = mdl_catalog_engine_json(support_catalog, i);
        for (int g = 0; g < mdl_catalog_gpu_count(support_catalog); g++) {
            char *engine = util_xasprintf("cluster.engine=%s",
                                          cJSON_GetObjectItem(e, "id")->valuestring);
            char *gpu =
                util_xasprintf("cluster.gpu=%s", mdl_catalog_gpu_at(support_catalog, g)->id);
            const char *sets[] = {engine, gpu, "cluster.model=llama-2-7b", NULL};
            sim_scenario sc;
            char *errors = NULL;
            if (support_scenario(BASE, sets, &sc, &errors)) {
                all = false;
                tap_diag("%s on %s: %s", engine, gpu, errors ? errors : "?");
            }
            n++;
            free(errors);
            sim_scenario_fini(&sc);
            free(engine);
            free(gpu);
        }
    }
    ok(all, "every engine preset loads on every GPU of the catalog (%d)", n);
    cmp_ok(n, >=, 4 * 11, "the catalog's presets and GPUs: at least 4 x 11 pairs");
}

/* ---- the scenario wins ---- */

static void test_overrides(void)
{
    sim_scenario sc;
    const char *sets[] = {"cluster.scheduler.max_batch=64", "cluster.host.output_s=0.1",
                          "cluster.scheduler.prefix_caching=false", NULL};
    if (!load(sets, &sc)) return;
    is_near(num(&sc, "cluster.scheduler.max_batch"), 64, 0, "a scheduler key wins over the preset");
    ok(!flag(&sc, "cluster.scheduler.prefix_caching"), "a false one too");
    is_near(num(&sc, "cluster.scheduler.max_batched_tokens"), 8192, 0,
            "the preset fills the rest");
    is_near(sc.pools[0].output_s, 0.1, 0, "a host key wins over the preset");
    is_near(num(&sc, "cluster.host.frontend_s"), 0.0009, 0, "and the preset fills the others");
    sim_scenario_fini(&sc);

    const char *budget[] = {"cluster.scheduler.max_batched_tokens=128", NULL};
    if (!load(budget, &sc)) return;
    is_near(num(&sc, "cluster.scheduler.max_batch"), 128, 0,
            "vLLM's rule: a default max_num_seqs is at most max_num_batched_tokens");
    sim_scenario_fini(&sc);
    const char *whole[] = {"cluster.scheduler.policy=continuous", NULL};
    if (!load(whole, &sc)) return;
    is_near(num(&sc, "cluster.scheduler.max_batched_tokens"), 131072, 0,
            "vllm-v1 without chunked prefill: the token budget holds the model's context");
    sim_scenario_fini(&sc);

    /* Pools: the cluster's own keys win over a pool's engine; a pool's
     * engine over the cluster's. */
    const char *pools[] = {
        "cluster.scheduler={\"max_batch\": 32}",
        "cluster.pools=[{\"name\": \"a\", \"gpu\": \"h100-sxm\"}, {\"name\": \"b\", \"gpu\": "
        "\"l40s\", \"engine\": \"sglang\", \"host\": {\"output_s\": 0.2}}]",
        NULL};
    if (!load(pools, &sc)) return;
    is_str(str(&sc, "cluster.pools.0.engine"), "vllm-v1", "a pool inherits the engine, stated");
    is_str(str(&sc, "cluster.pools.1.engine"), "sglang", "a pool names its own");
    is_near(num(&sc, "cluster.pools.0.scheduler.max_batch"), 32, 0,
            "a cluster-level key wins over the pool's preset");
    is_near(num(&sc, "cluster.pools.1.scheduler.max_batch"), 32, 0, "in every pool");
    is_near(num(&sc, "cluster.pools.0.scheduler.max_batched_tokens"), 8192, 0,
            "pool a: vllm-v1's H100 budget");
    is_near(num(&sc, "cluster.pools.1.scheduler.max_batched_tokens"), 4096, 0,
            "pool b: sglang's L40S budget");
    is_near(sc.pools[1].output_s, 0.2, 0, "a pool's host key wins");
    is_near(sc.pools[1].frontend_s, 0.0009, 0, "its preset fills the others");
    is_near(sc.pools[0].output_s, 0.0005, 0, "the other pool keeps its preset's");
    sim_scenario_fini(&sc);
}

static void test_unknown(void)
{
    sim_scenario sc;
    char *errors = NULL;
    const char *sets[] = {"cluster.engine=vllm-v2", NULL};
    int rc = support_scenario(BASE, sets, &sc, &errors);
    is_int(rc, UTIL_EINPUT, "an unknown engine is bad input (exit status 2)");
    has_str(errors, "cluster.engine: unknown engine 'vllm-v2' (did you mean 'vllm-v1'? known: "
                    "vllm-v1, vllm-v0, sglang, ideal)",
            "named by its path, with the choices");
    sim_scenario_fini(&sc);
    free(errors);
    errors = NULL;
    const char *pool[] = {"cluster.pools=[{\"name\": \"a\", \"gpu\": \"h100-sxm\", \"engine\": "
                          "\"tensorrt\"}]",
                          NULL};
    support_scenario(BASE, pool, &sc, &errors);
    has_str(errors, "cluster.pools[0].engine: unknown engine 'tensorrt'", "a pool's, by its path");
    sim_scenario_fini(&sc);
    free(errors);
}

/* ---- runs ---- */

/* ideal is servesim before engine presets: the old defaults stated key by
 * key under another engine give the very same rows (the golden test holds
 * the numbers themselves). */
static void test_ideal_rows(void)
{
    const char *old[] = {
        "cluster.engine=vllm-v1",
        "cluster.scheduler={\"policy\": \"continuous\", \"max_batch\": 256, "
        "\"max_batched_tokens\": 8192, \"block_tokens\": 16, \"gpu_memory_utilization\": 0.9, "
        "\"preemption\": \"recompute\", \"prefix_caching\": false, \"async_scheduling\": false}",
        "cluster.host={\"frontend_s\": 0, \"frontend_s_per_token\": 0, \"step_s\": 0, "
        "\"step_s_per_seq\": 0, \"output_s\": 0}",
        "workload.arrival.rate_per_s=30", NULL};
    const char *ideal[] = {"cluster.engine=ideal", "workload.arrival.rate_per_s=30", NULL};
    support_rows a, b;
    int64_t ea = 0, eb = 0;
    is_int(support_run(BASE, old, &a, &ea), 0, "the old defaults, stated, run");
    is_int(support_run(BASE, ideal, &b, &eb), 0, "ideal runs");
    ok(support_rows_equal(&a, &b), "ideal gives exactly the rows of the old defaults (%zu rows)", a.n);
    is_int(ea, eb, "in the same number of events");
    is_near(a.rep[0].busy_s, b.rep[0].busy_s, 0, "and the same busy time");
    support_rows_fini(&a);
    support_rows_fini(&b);
}

/* Open loop: output_s changes nothing in the engine, only what the client
 * sees, so every first token and every finish moves by exactly output_s. */
static void test_output_shift(void)
{
    const char *base[] = {"cluster.engine=ideal", NULL};
    const char *late[] = {"cluster.engine=ideal", "cluster.host.output_s=0.25", NULL};
    support_rows a, b;
    support_run(BASE, base, &a, NULL);
    support_run(BASE, late, &b, NULL);
    bool rows = a.n == b.n && a.n > 0;
    bool tokens = rows, finishes = rows, arrivals = rows, scheduled = rows;
    for (size_t i = 0; rows && i < a.n; i++) {
        const sim_request_row *x = &a.req[i], *y = &b.req[i];
        tokens &= fabs(y->first_token_s - x->first_token_s - 0.25) <= EPS;
        finishes &= fabs(y->finish_s - x->finish_s - 0.25) <= EPS;
        arrivals &= x->arrival_s == y->arrival_s;
        scheduled &= x->first_scheduled_s == y->first_scheduled_s;
    }
    ok(tokens, "output_s moves every first token by exactly output_s (%zu rows)", a.n);
    ok(finishes, "and every finish");
    ok(arrivals, "and changes no arrival");
    ok(scheduled, "and no scheduling");
    support_rows_fini(&a);
    support_rows_fini(&b);
}

/* Closed loop, one user, no think time: each request is sent when the
 * client has the previous reply, output_s after the engine finished it. */
static void test_output_closed_loop(void)
{
    const char *base[] = {"cluster.engine=ideal", "stop.requests=4",
                          "workload.arrival={\"process\": \"closed\", \"users\": 1}", NULL};
    const char *late[] = {"cluster.engine=ideal", "stop.requests=4",
                          "workload.arrival={\"process\": \"closed\", \"users\": 1}",
                          "cluster.host.output_s=0.25", NULL};
    support_rows a, b;
    support_run(BASE, base, &a, NULL);
    support_run(BASE, late, &b, NULL);
    bool rows = a.n == 4 && b.n == 4;
    bool sent = rows, later = rows, ttft = rows;
    for (size_t i = 0; rows && i < 4; i++) {
        const sim_request_row *x = support_row(&a, (int64_t)i), *y = support_row(&b, (int64_t)i);
        later &= fabs(y->arrival_s - x->arrival_s - 0.25 * (double)i) <= EPS;
        ttft &= fabs((y->first_token_s - y->arrival_s) - (x->first_token_s - x->arrival_s) -
                     0.25) <= EPS;
        if (i > 0) sent &= fabs(y->arrival_s - support_row(&b, (int64_t)i - 1)->finish_s) <= EPS;
    }
    ok(sent, "a closed-loop user sends its next request when it has the reply");
    ok(later, "so request i leaves i x output_s later than without output_s");
    ok(ttft, "and each TTFT is output_s longer");
    support_rows_fini(&a);
    support_rows_fini(&b);
}

/* A sequential agent task sends its next call when its client has the
 * last reply: output_s after the engine finished it. */
static void test_output_task(void)
{
    const char *sets[] = {"cluster.engine=ideal", "cluster.host.output_s=0.25", "stop.requests=5",
                          "workload.agent={\"mode\": \"sequential\", \"calls\": 3}", NULL};
    support_rows r;
    support_run(BASE, sets, &r, NULL);
    is_int(r.n, 15, "5 tasks of 3 calls");
    int chained = 0;
    bool after = true;
    for (size_t i = 0; i < r.n; i++) { /* every call, so that chained counts them all */
        const sim_request_row *x = &r.req[i];
        if (x->call_index <= 0) continue;
        for (size_t j = 0; j < r.n; j++) {
            const sim_request_row *y = &r.req[j];
            if (y->task_id != x->task_id || y->call_index != x->call_index - 1) continue;
            after &= fabs(x->arrival_s - y->finish_s) <= EPS;
            chained++;
        }
    }
    ok(after, "an agent task's next call leaves when the client has the reply");
    is_int(chained, 10, "each task's second and third call follow the one before");
    support_rows_fini(&r);
}

/* One request at a time: the scheduler sees each frontend_s + per-token x
 * prompt after it reached the server (wired in router.c). */
static void test_frontend(void)
{
    const char *base[] = {"cluster.engine=ideal", "workload.arrival.rate_per_s=0.5",
                          "workload.prompt_tokens={\"dist\": \"fixed\", \"value\": 100}", NULL};
    const char *slow[] = {"cluster.engine=ideal", "workload.arrival.rate_per_s=0.5",
                          "workload.prompt_tokens={\"dist\": \"fixed\", \"value\": 100}",
                          "cluster.host.frontend_s=0.2", "cluster.host.frontend_s_per_token=0.001",
                          NULL};
    support_rows a, b;
    support_run(BASE, base, &a, NULL);
    support_run(BASE, slow, &b, NULL);
    bool delayed = a.n == b.n && a.n > 0, ttft = delayed;
    for (size_t i = 0; delayed && i < a.n; i++) {
        const sim_request_row *x = &a.req[i], *y = &b.req[i];
        delayed &= fabs(y->first_scheduled_s - x->first_scheduled_s - 0.3) <= EPS;
        ttft &= fabs(y->first_token_s - x->first_token_s - 0.3) <= EPS;
    }
    ok(delayed, "frontend_s + frontend_s_per_token x prompt delays first scheduling exactly");
    ok(ttft, "and the first token as much, at low load");
    support_rows_fini(&a);
    support_rows_fini(&b);
}

/* ---- the host's time per iteration (models/cost.c) ---- */

static mdl_cost cost(const char *json)
{
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse(json);
    util_schema_apply_union(&mdl_cost_schema, o, "cost_model", NULL, &d);
    mdl_cost cm;
    mdl_cost_init(&cm, o, mdl_catalog_find_gpu(support_catalog, "h100-sxm"),
                  mdl_catalog_find_model(support_catalog, "llama-3.1-8b"), "cost_model", NULL, &d);
    if (d.count) tap_diag("unexpected: %s", d.msgs[0]);
    cJSON_Delete(o);
    util_diag_fini(&d);
    return cm;
}

/* The run's time against its iterations costed one by one. */
static double steps_s(const mdl_cost *cm, int32_t n, int64_t ctx0, int64_t k)
{
    double total = 0;
    for (int64_t j = 0; j < k; j++) {
        mdl_batch b = {.n_decode = n, .decode_context = ctx0 + n * j};
        mdl_step s;
        mdl_cost_step(cm, &b, &s);
        total += s.time_s;
    }
    return total;
}

static void test_host_step(void)
{
    static const char *const kinds[] = {
        "{\"kind\": \"roofline\"}",
        "{\"kind\": \"linear\", \"iteration_s\": 0.002, \"decode_step_s\": 0.003, "
        "\"decode_s_per_seq\": 0.0001}",
        "{\"kind\": \"polynomial\", \"prefill\": [0.01, 1e-4, 0], \"decode\": [0.006, 1e-7, 2e-5], "
        "\"overhead\": [0.002, 0]}"};
    const int32_t n = 24;
    const int64_t ctx0 = 24 * 700, k = 300;
    for (size_t i = 0; i < 3; i++) {
        mdl_cost cm = cost(kinds[i]);
        mdl_step plain, added;
        mdl_cost_decode_run(&cm, n, ctx0, k, &plain);
        cm.host_step_s = 0.003;
        cm.host_step_s_per_seq = 1e-5;
        mdl_cost_decode_run(&cm, n, ctx0, k, &added);
        double host = 0.003 + 1e-5 * n;
        is_near(added.time_s - plain.time_s, (double)k * host, 1e-9,
                "%s: a synchronous host adds k x (step_s + step_s_per_seq x n) to a run", kinds[i]);
        is_near(added.time_s, steps_s(&cm, n, ctx0, k), 1e-9, "as its %lld iterations one by one",
                (long long)k);
        mdl_run r;
        mdl_run_init(&r, &cm, n, ctx0);
        is_near(mdl_run_time(&r, k), added.time_s, 1e-12, "mdl_run_time agrees");
        is_near(added.flops, plain.flops, 0, "host time does no FLOPs");

        cm.host_overlap = true;
        mdl_cost_decode_run(&cm, n, ctx0, k, &added);
        is_near(added.time_s, plain.time_s, 1e-9, "overlapped, a host faster than the GPU hides");
        cm.host_step_s = 1.0; /* slower than any step here */
        mdl_cost_decode_run(&cm, n, ctx0, k, &added);
        is_near(added.time_s, (double)k * (1.0 + 1e-5 * n), 1e-9,
                "a host slower than the GPU paces every iteration");
        is_near(added.time_s, steps_s(&cm, n, ctx0, k), 1e-9, "as the iterations one by one");
        mdl_run_init(&r, &cm, n, ctx0);
        is_near(mdl_run_time(&r, k / 3), (double)(k / 3) * (1.0 + 1e-5 * n), 1e-9,
                "and any prefix of the run");
        mdl_cost_fini(&cm);
    }

    /* A single mixed iteration: the host's time counts every sequence. */
    mdl_cost cm = cost(kinds[0]);
    mdl_chunk chunk = {.tokens = 500, .cached = 0};
    mdl_batch b = {.n_prefill = 1, .prefill_tokens = 500, .prefill_sq = 250000,
                   .prefill_pairs = 500 * 501 / 2.0, .chunks = &chunk, .n_decode = 9,
                   .decode_context = 9 * 300};
    mdl_step s0, s1;
    mdl_cost_step(&cm, &b, &s0);
    cm.host_step_s = 0.001;
    cm.host_step_s_per_seq = 1e-4;
    mdl_cost_step(&cm, &b, &s1);
    is_near(s1.time_s - s0.time_s, 0.001 + 10 * 1e-4, 1e-12,
            "one iteration: step_s + step_s_per_seq x its sequences");
    is_near(s1.prefill_s + s1.decode_s, s1.time_s, 1e-12, "split between prefill and decode");
    mdl_cost_fini(&cm);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (support_init()) return 1;
    test_vllm_v1();
    test_vllm_v0();
    test_sglang();
    test_ideal();
    test_every_preset();
    test_overrides();
    test_unknown();
    test_ideal_rows();
    test_output_shift();
    test_output_closed_loop();
    test_output_task();
    test_frontend();
    test_host_step();
    support_fini();
    return tap_done();
}
