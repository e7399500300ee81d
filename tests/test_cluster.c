/*
 * test_cluster.c: clusters of several replicas and pools -- each router
 * policy does what it says, checked from the request rows; pools of
 * different GPUs serve one stream of requests; a disaggregated cluster moves
 * each KV cache from the prefill pool to the decode pool in the time the
 * link takes, and records both hops, and a static decode pool batches the
 * arrived KV caches without prefilling them again.
 */
#include <math.h>
#include <stdlib.h>

#include "support.h"
#include "tap.h"

/* cmp_ok(a, op, b, "description"): a op b on numbers, printing both sides on
 * failure (tap.h has no such assertion; a candidate for it). */
#define EPS_T 1e-9

/* What every test starts from (tests/scenarios/cluster-base.json): four H100
 * replicas on linear costs, Poisson arrivals at 40/s. */
static char *base;

/* Requests routed to replica k, not yet finished, when request `id` arrived. */
static int in_flight(const support_rows *r, int64_t id, int k)
{
    const sim_request_row *a = support_row(r, id);
    int n = 0;
    for (int64_t j = 0; j < id; j++) {
        const sim_request_row *b = support_row(r, j);
        n += b->replica == k && b->finish_s > a->arrival_s;
    }
    return n;
}

static double p99_queue(const support_rows *r)
{
    double *q = util_xmalloc(r->n * sizeof *q);
    for (size_t i = 0; i < r->n; i++)
        q[i] = r->req[i].first_scheduled_s - r->req[i].enqueue_s;
    an_stats s;
    an_stats_compute(q, r->n, &s);
    free(q);
    return s.p99;
}

static void test_routers(void)
{
    support_rows r;
    support_run(base, NULL, &r, NULL);
    is_int(r.n, 400, "round_robin: every request has a row");
    bool cyclic = r.n == 400;
    for (int64_t id = 0; id < 400 && cyclic; id++)
        cyclic &= support_row(&r, id)->replica == id % 4;
    ok(cyclic, "round_robin: request i goes to replica i mod 4");
    support_rows_fini(&r);

    support_run(base, (const char *[]){"cluster.router=least_outstanding", NULL}, &r, NULL);
    bool least = true;
    for (int64_t id = 1; id < 400; id++) {
        int chosen = support_row(&r, id)->replica, mine = in_flight(&r, id, chosen);
        for (int k = 0; k < 4; k++)
            least &= mine <= in_flight(&r, id, k);
    }
    ok(least, "least_outstanding: every request went to a replica with the fewest in flight");
    support_rows_fini(&r);

    support_rows rnd, p2;
    /* about 75% of what four replicas can prefill (0.16 s a prompt) */
    const char *busy[] = {"workload.arrival.rate_per_s=19", "stop.requests=3000", NULL};
    support_run(base, (const char *[]){"cluster.router=random", busy[0], busy[1], NULL}, &rnd,
                NULL);
    support_run(base, (const char *[]){"cluster.router=power_of_two", busy[0], busy[1], NULL}, &p2,
                NULL);
    int counts[4] = {0};
    for (size_t i = 0; i < rnd.n; i++)
        counts[rnd.req[i].replica]++;
    double chi2 = 0;
    for (int k = 0; k < 4; k++)
        chi2 += (counts[k] - 750.0) * (counts[k] - 750.0) / 750.0;
    cmp_ok(chi2, <, 16.27,
           "random: replicas chosen uniformly (chi-square %.2f < 16.27, p = 0.001, 3 dof)", chi2);
    double q_rnd = p99_queue(&rnd), q_p2 = p99_queue(&p2);
    cmp_ok(q_p2, <, q_rnd, "power_of_two: P99 queueing %.3f s, below random's %.3f s", q_p2, q_rnd);
    support_rows_fini(&rnd);
    support_rows_fini(&p2);

    support_rows kv;
    support_run(base, (const char *[]){"cluster.router=least_kv", busy[0], busy[1], NULL}, &kv,
                NULL);
    double q_kv = p99_queue(&kv);
    is_int(kv.n, 3000, "least_kv: every request has a row");
    cmp_ok(q_kv, <, q_rnd, "least_kv: P99 queueing %.3f s, below random's %.3f s", q_kv, q_rnd);
    support_rows_fini(&kv);
}

/* One H100 and one L4 behind least_outstanding (the L4 inherits the
 * cluster's model and scheduler): the faster GPU serves more. */
static void test_pools(void)
{
    support_rows r;
    const char *sets[] = {"cluster.router=least_outstanding",
                          "cluster.pools=[{\"name\": \"fast\", \"replicas\": 1, \"gpu\": "
                          "\"h100-sxm\", \"cost_model\": {\"kind\": \"roofline\"}}, {\"name\": "
                          "\"slow\", \"replicas\": 1, \"gpu\": \"l4\", \"cost_model\": "
                          "{\"kind\": \"roofline\"}}]",
                          "workload.arrival.rate_per_s=8", NULL};
    support_run(base, sets, &r, NULL);
    is_int(r.n_rep, 2, "two pools of one replica each");
    is_str(r.rep[0].pool, "fast", "each row naming its pool");
    is_str(r.rep[1].gpu, "l4", "and GPU");
    int served[2] = {0};
    for (size_t i = 0; i < r.n; i++)
        served[r.req[i].replica]++;
    cmp_ok(served[0], >, served[1], "the H100 serves more than the L4 (%d against %d)", served[0],
           served[1]);
    support_rows_fini(&r);
}

/* Prefill on one replica, decode on another over a 10 GB/s link with 1 ms of
 * latency.  A 1000-token prompt of Llama-3.1-8B is 1000 x 128 KiB = 131 MB
 * of KV: 13.1 ms on the link.  Prefill 0.01 + 0.5 s; transfer to
 * 0.5241072 s; two decode steps alone (0.016 s): 0.5561072 s. */
static void test_disaggregated(void)
{
    support_rows r;
    const char *sets[] = {"stop.requests=1",
                          "workload.prompt_tokens={\"dist\": \"fixed\", "
                          "\"value\": 1000}",
                          "workload.output_tokens={\"dist\": \"fixed\", "
                          "\"value\": 3}",
                          "cluster.replicas=1",
                          "cluster.pools=[{\"name\": \"prefill\"}, {\"name\": \"decode\"}]",
                          "cluster.disaggregated={\"prefill\": \"prefill\", \"decode\": "
                          "\"decode\", \"link_gbs\": 10, \"link_latency_s\": 0.001}",
                          NULL};
    support_run(base, sets, &r, NULL);
    const sim_request_row *q = support_row(&r, 0);
    if (!q) return;
    is_near(q->first_token_s, 0.51, EPS_T, "the first token comes from the prefill pool");
    is_int(q->replica, 0, "prefilled on the prefill pool's replica");
    is_int(q->decode_replica, 1, "decoded on the decode pool's replica");
    is_near(q->decode_enqueue_s, 0.51 + 0.001 + 1000 * 131072 / 10e9, EPS_T,
            "the KV cache arrives after latency + bytes / bandwidth");
    is_near(q->finish_s, 0.5561072, EPS_T, "then decodes there");
    is_int(r.rep[0].decode_tokens, 0, "the prefill pool only prefills");
    is_int(r.rep[1].decode_tokens, 2, "the decode pool decodes");
    is_int(r.rep[1].prefill_tokens, 0, "and only decodes");
    support_rows_fini(&r);
}

/* A static decode pool (tests/scenarios/cluster-static-decode.json): four
 * 100-token prompts 50 ms apart, prefilled by a continuous pool, reach the
 * decode pool with their first token; its batch of 4 forms when the fourth
 * KV cache arrives and runs until its longest member is done.  Nothing is
 * prefilled there: each member decodes its output_tokens - 1 remaining
 * tokens in steps of 0.01 + 0.005 + 4 x 0.001 = 0.019 s (the padded batch
 * stays 4 wide).  With two requests the batch does not fill and forms
 * batch_timeout_s (0.5 s) after the first KV cache reached the decode
 * pool -- not after the request reached the prefill pool -- and its steps
 * take 0.017 s. */
static void test_static_decode(void)
{
    char *json = support_scenario_text("cluster-static-decode.json");
    support_rows r;
    support_run(json, NULL, &r, NULL);
    is_int(r.n, 4, "static decode pool: every request has a row");
    is_int(r.n_rep, 2, "a prefill and a decode replica");
    double start = 0;
    int64_t owed = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (r.req[i].decode_enqueue_s > start) start = r.req[i].decode_enqueue_s;
        owed += r.req[i].output_tokens - 1;
    }
    for (size_t i = 0; i < r.n; i++) {
        const sim_request_row *q = &r.req[i];
        is_str(q->status, SIM_COMPLETED, "request %lld completes", (long long)q->id);
        is_int(q->decode_replica, 1, "request %lld decodes on the static pool", (long long)q->id);
        is_near(q->finish_s, start + (q->output_tokens - 1) * 0.019, EPS_T,
                "request %lld: %d - 1 decode steps of the batch of 4 from its start",
                (long long)q->id, q->output_tokens);
    }
    if (r.n_rep == 2) {
        is_int(r.rep[1].prefill_tokens, 0, "the static decode pool prefills nothing");
        is_int(r.rep[1].decode_tokens, owed, "and decodes what each request still owes");
        is_int(r.rep[0].prefill_tokens, 400, "the prefill pool prefills every prompt once");
    }
    support_rows_fini(&r);

    support_run(json, (const char *[]){"stop.requests=2", NULL}, &r, NULL);
    const sim_request_row *q = support_row(&r, 0);
    if (q)
        is_near(q->finish_s, q->decode_enqueue_s + 0.5 + (q->output_tokens - 1) * 0.017, EPS_T,
                "an unfilled batch forms batch_timeout_s after its head's KV cache arrived");
    support_rows_fini(&r);
    free(json);
}

int main(void)
{
    if (support_init()) return 1;
    base = support_scenario_text("cluster-base.json");
    test_routers();
    test_pools();
    test_disaggregated();
    test_static_decode();
    free(base);
    support_fini();
    return tap_done();
}
