/*
 * test_invariants.c: the engine's invariant checks (SIM_CHECKS, built with
 * meson -Dinvariants=true) run through the paths that move the most state --
 * paged KV with preemption by recompute and by swap, prefix caching,
 * chunked prefill, prefill_first, static batching, a disaggregated cluster,
 * time-outs under every scheduler, a central queue, agent tasks -- and a
 * heap corrupted on purpose, in a child process, dies by the check.  Built
 * without the checks, the program says so as a TAP skip.
 */
#if !SIM_CHECKS

#include <stdio.h>

int main(void)
{
    printf("1..0 # SKIP invariants not compiled in\n"); /* meson setup -Dinvariants=true */
    return 0;
}

#else

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim_int.h"
#include "support.h"
#include "tap.h"

/* An L40S holding Llama-3.1-8B with 200 KV blocks (3,200 tokens) and 32
 * closed-loop users whose requests need 22,400: preemption all the time. */
#define STARVED                                                                                    \
    "{\"stop\": {\"requests\": 120}, \"cluster\": {\"engine\": \"ideal\", \"gpu\": \"l40s\", "     \
    "\"model\": \"llama-3.1-8b\", \"scheduler\": {\"kv_blocks\": 200}}, \"workload\": "            \
    "{\"arrival\": {\"process\": \"closed\", \"users\": 32}, \"prompt_tokens\": {\"dist\": "       \
    "\"uniform\", \"min\": 300, \"max\": 500}, \"output_tokens\": {\"dist\": \"uniform\", "        \
    "\"min\": 200, \"max\": 400}}}"

/* The same starved cache, its prompts three groups' system prompts and
 * their questions (inference-perf's shared_prefix). */
#define STARVED_SHARED                                                                             \
    "{\"stop\": {\"requests\": 120}, \"cluster\": {\"engine\": \"ideal\", \"gpu\": \"l40s\", "     \
    "\"model\": \"llama-3.1-8b\", \"scheduler\": {\"kv_blocks\": 200}}, \"workload\": "            \
    "{\"arrival\": {\"process\": \"closed\", \"users\": 32}, \"shared_prefix\": "               \
    "{\"num_groups\": 3, \"num_prompts_per_group\": 4, \"system_prompt_len\": 200, "           \
    "\"question_len\": 150}, \"output_tokens\": {\"dist\": \"uniform\", \"min\": 200, "          \
    "\"max\": 400}}}"

/* Two replicas on a linear cost model, Poisson arrivals, short replies. */
#define BASE                                                                                       \
    "{\"seed\": 11, \"stop\": {\"requests\": 400}, \"cluster\": {\"engine\": \"ideal\", "          \
    "\"gpu\": \"h100-sxm\", \"model\": \"llama-3.1-8b\", \"replicas\": 2, \"cost_model\": "        \
    "{\"kind\": \"linear\", \"iteration_s\": 0.001, \"prefill_s_per_token\": 1e-6, "               \
    "\"decode_step_s\": 0.001, \"decode_s_per_seq\": 0}}, \"workload\": {\"arrival\": "            \
    "{\"process\": \"poisson\", \"rate_per_s\": 20}, \"prompt_tokens\": {\"dist\": \"fixed\", "    \
    "\"value\": 100}, \"output_tokens\": {\"dist\": \"uniform\", \"min\": 2, \"max\": 20}}}"

typedef struct outcome {
    int rc;
    long long checks;
    int64_t completed, timed_out, rejected, preemptions;
    double swap_bytes;
} outcome;

/* Runs json with its overrides, counting the checks it made. */
static outcome run(const char *json, const char *const *sets)
{
    support_rows rows;
    long long before = sim__checks_run;
    outcome o = {.rc = support_run(json, sets, &rows, NULL)};
    o.checks = sim__checks_run - before;
    for (size_t i = 0; i < rows.n; i++) {
        o.completed += !strcmp(rows.req[i].status, SIM_COMPLETED);
        o.timed_out += !strcmp(rows.req[i].status, SIM_TIMED_OUT);
        o.rejected += !strcmp(rows.req[i].status, SIM_REJECTED);
    }
    for (int i = 0; i < rows.n_rep; i++) {
        o.preemptions += rows.rep[i].preemptions;
        o.swap_bytes += rows.rep[i].swap_bytes;
    }
    support_rows_fini(&rows);
    return o;
}

/* What every run here shows, one check a thing: it ended well, and the
 * engine checked its invariants more than least times on the way. */
static void ran_checked(const outcome *o, long long least, const char *what)
{
    is_int(o->rc, 0, "%s: the run ends well", what);
    cmp_ok(o->checks, >, least, "%s: %lld checks passed", what, o->checks);
}

/* A run's requests all completed, and some were preempted. */
static void preempted_all_done(const outcome *o, int64_t requests, const char *what)
{
    ran_checked(o, 1000, what);
    is_int(o->completed, requests, "%s: every request completes", what);
    cmp_ok(o->preemptions, >, 0, "%s: %lld preemptions", what, (long long)o->preemptions);
}

static void test_paged_kv(void)
{
    outcome o = run(STARVED, NULL);
    preempted_all_done(&o, 120, "recompute");
    o = run(STARVED, (const char *[]){"cluster.scheduler.preemption=swap", NULL});
    ran_checked(&o, 1000, "swap");
    is_int(o.completed, 120, "swap: every request completes");
    cmp_ok(o.swap_bytes, >, 0, "swap: %.3g bytes swapped", o.swap_bytes);
    o = run(STARVED, (const char *[]){"cluster.scheduler.prefix_caching=true", NULL});
    preempted_all_done(&o, 120, "prefix caching of preempted sequences");
    /* a central queue hands a preempted sequence to either replica: its
     * cached blocks are its old replica's only */
    o = run(STARVED, (const char *[]){"cluster.scheduler.prefix_caching=true",
                                      "cluster.replicas=2", "cluster.router=\"central_queue\"",
                                      "workload.arrival.users=64", NULL});
    preempted_all_done(&o, 120, "prefix caching, preempted sequences moving between replicas");
    /* shared system prompts and chained agent calls, evicted and preempted */
    o = run(STARVED_SHARED, (const char *[]){"cluster.scheduler.prefix_caching=true",
                                             "cluster.scheduler.policy=chunked",
                                             "cluster.scheduler.max_batched_tokens=256", NULL});
    preempted_all_done(&o, 120, "prefix caching of shared prompts, chunked, under preemption");
    o = run(STARVED, (const char *[]){"cluster.scheduler.prefix_caching=true",
                                      "cluster.router=\"prefix_affinity\"", "cluster.replicas=2",
                                      "workload.agent={\"mode\": \"sequential\", \"calls\": 3, "
                                      "\"tool_output_tokens\": {\"dist\": \"fixed\", "
                                      "\"value\": 40}}",
                                      NULL});
    ran_checked(&o, 1000, "prefix caching of agent chains routed by prefix");
    cmp_ok(o.completed, >=, 120, "prefix caching of agent chains: at least 120 calls complete");
    cmp_ok(o.preemptions, >, 0, "prefix caching of agent chains: %lld preemptions",
           (long long)o.preemptions);
    o = run(STARVED, (const char *[]){"cluster.scheduler.policy=chunked",
                                      "cluster.scheduler.max_batched_tokens=256", NULL});
    preempted_all_done(&o, 120, "chunked prefill under preemption");
    o = run(STARVED, (const char *[]){"cluster.scheduler.policy=prefill_first", NULL});
    ran_checked(&o, 1000, "prefill_first");
    is_int(o.completed, 120, "prefill_first: every request completes");
    o = run(STARVED, (const char *[]){"cluster.scheduler.preemption=swap", "workload.timeout_s=8",
                                      NULL});
    ran_checked(&o, 1000, "swap with time-outs in the swap space and the batch");
    is_int(o.completed + o.timed_out, 120, "swap with time-outs: every request completes or "
                                           "times out");
    cmp_ok(o.timed_out, >, 0, "swap with time-outs: %lld timed out", (long long)o.timed_out);
    cmp_ok(o.swap_bytes, >, 0, "swap with time-outs: %.3g bytes swapped", o.swap_bytes);
    /* LoRA adapters: preempted sequences give their adapters back, and
     * admission keeps every running adapter in a slot */
    o = run(STARVED, (const char *[]){"cluster.lora={\"max_loras\": 2, \"max_cpu_loras\": 3, "
                                      "\"adapter_count\": 6, \"zipf_s\": 1}",
                                      "workload.classes=[{\"name\": \"t\", \"weight\": 3, "
                                      "\"adapter\": \"*\"}, {\"name\": \"b\", \"weight\": 1}]",
                                      "cluster.replicas=2", "cluster.router=\"lora_affinity\"",
                                      "workload.arrival.users=64", NULL});
    preempted_all_done(&o, 120, "LoRA adapters under preemption");
}

static void test_static(void)
{
    outcome o = run(BASE, (const char *[]){"cluster.scheduler.policy=static",
                                           "cluster.scheduler.max_batch=4",
                                           "cluster.scheduler.batch_timeout_s=0.05", NULL});
    ran_checked(&o, 1000, "static batching, padded batches");
    is_int(o.completed, 400, "static batching, padded batches: every request completes");
    /* batches that end with their prefill give their reservation back */
    o = run(BASE, (const char *[]){"cluster.scheduler.policy=static",
                                   "cluster.scheduler.max_batch=4",
                                   "cluster.scheduler.kv_blocks=60",
                                   "workload.output_tokens={\"dist\": \"fixed\", \"value\": 1}",
                                   NULL});
    ran_checked(&o, 100, "static batching, 1-token replies");
    is_int(o.completed, 400, "static batching, 1-token replies: every request completes");
}

static void test_disaggregated(void)
{
    outcome o = run(BASE, (const char *[]){
        "cluster.replicas=1", "cluster.pools=[{\"name\": \"prefill\"}, {\"name\": \"decode\"}]",
        "cluster.disaggregated={\"prefill\": \"prefill\", \"decode\": \"decode\", "
        "\"link_gbs\": 10, \"link_latency_s\": 0.001}",
        "workload.timeout_s=0.02", NULL});
    ran_checked(&o, 1000, "disaggregated, KV over the link, some timing out on it");
    is_int(o.completed + o.timed_out, 400,
           "disaggregated, KV over the link: every request completes or times out");
    cmp_ok(o.completed, >, 0, "disaggregated, KV over the link: some complete");
    /* a static prefill pool: of a batch, 1-token replies end with the
     * prefill, the others leave over the link */
    o = run(BASE, (const char *[]){
        "cluster.replicas=1",
        "cluster.pools=[{\"name\": \"prefill\", \"scheduler\": {\"policy\": \"static\", "
        "\"max_batch\": 4, \"kv_blocks\": 60}}, {\"name\": \"decode\"}]",
        "cluster.disaggregated={\"prefill\": \"prefill\", \"decode\": \"decode\", "
        "\"link_gbs\": 10, \"link_latency_s\": 0.001}",
        "workload.output_tokens={\"dist\": \"uniform\", \"min\": 1, \"max\": 3}", NULL});
    ran_checked(&o, 1000, "disaggregated, a static prefill pool");
    is_int(o.completed, 400, "disaggregated, a static prefill pool: every request completes");
}

/* An engine that plans a step ahead (scheduler.async_scheduling): its
 * plans see arrivals a step late, and finished requests hold their slots
 * and blocks until the next plan -- under preemption, prefix caching,
 * chunking, time-outs and a KV link. */
static void test_step_ahead(void)
{
    const char *ahead = "cluster.scheduler.async_scheduling=true";
    outcome o = run(STARVED, (const char *[]){ahead, NULL});
    preempted_all_done(&o, 120, "a step ahead, recompute");
    o = run(STARVED, (const char *[]){ahead, "cluster.scheduler.prefix_caching=true",
                                      "cluster.scheduler.policy=chunked",
                                      "cluster.scheduler.max_batched_tokens=256", NULL});
    preempted_all_done(&o, 120, "a step ahead, prefix caching, chunked");
    o = run(STARVED, (const char *[]){ahead, "cluster.scheduler.preemption=swap",
                                      "workload.timeout_s=8", NULL});
    ran_checked(&o, 1000, "a step ahead, swap and time-outs");
    is_int(o.completed + o.timed_out, 120, "a step ahead, swap and time-outs: every request "
                                           "completes or times out");
    o = run(STARVED, (const char *[]){ahead, "cluster.scheduler.prefix_caching=true",
                                      "cluster.replicas=2", "cluster.router=\"central_queue\"",
                                      "workload.arrival.users=64", NULL});
    preempted_all_done(&o, 120, "a step ahead, a central queue");
    o = run(BASE, (const char *[]){
        ahead, "cluster.replicas=1",
        "cluster.pools=[{\"name\": \"prefill\"}, {\"name\": \"decode\"}]",
        "cluster.disaggregated={\"prefill\": \"prefill\", \"decode\": \"decode\", "
        "\"link_gbs\": 10, \"link_latency_s\": 0.001}",
        "workload.output_tokens={\"dist\": \"uniform\", \"min\": 1, \"max\": 3}", NULL});
    ran_checked(&o, 1000, "a step ahead, disaggregated, 1-3 token replies");
    is_int(o.completed, 400, "a step ahead, disaggregated: every request completes");
}

/* One thing checked over the cases of a loop: how many failed it, and the
 * first that did -- so that a loop adds a check per thing, not per case. */
typedef struct tally {
    int failed;
    const char *first;
} tally;

static void tally_case(tally *t, bool pass, const char *name)
{
    if (!pass && !t->failed++) t->first = name;
}

static void tally_ok(const tally *t, const char *what)
{
    if (!ok(t->failed == 0, "%s", what))
        tap_diag("%d case(s) fail it, the first: %s", t->failed, t->first);
}

/* Overloaded replicas whose clients give up all the time, under each
 * scheduler: sequences leave mid-decode and mid-prefill. */
static void test_timeouts(void)
{
    static const char *policies[] = {"continuous", "chunked", "static", "prefill_first"};
    tally ended = {0}, all = {0}, some_out = {0}, some_done = {0}, checked = {0};
    for (int i = 0; i < 4; i++) {
        char policy[64];
        snprintf(policy, sizeof policy, "cluster.scheduler.policy=%s", policies[i]);
        outcome o = run(BASE, (const char *[]){"workload.arrival.rate_per_s=400",
                                               "workload.output_tokens={\"dist\": \"uniform\", "
                                               "\"min\": 2, \"max\": 400}",
                                               "workload.timeout_s=0.5", "cluster.replicas=1",
                                               "cluster.scheduler.kv_blocks=2000", policy, NULL});
        tally_case(&ended, o.rc == 0, policies[i]);
        tally_case(&all, o.completed + o.timed_out == 400, policies[i]);
        tally_case(&some_out, o.timed_out > 0, policies[i]);
        tally_case(&some_done, o.completed > 0, policies[i]);
        tally_case(&checked, o.checks > 1000, policies[i]);
    }
    tally_ok(&ended, "every scheduler with time-outs: the run ends well");
    tally_ok(&all, "every scheduler: each of the 400 requests completes or times out");
    tally_ok(&some_out, "every scheduler: some requests time out");
    tally_ok(&some_done, "every scheduler: some requests complete");
    tally_ok(&checked, "every scheduler: more than 1000 checks passed");
    outcome o = run(BASE, (const char *[]){"cluster.router=central_queue",
                                           "workload.arrival.rate_per_s=400",
                                           "workload.timeout_s=0.05", NULL});
    ran_checked(&o, 1000, "central queue with time-outs");
    is_int(o.completed + o.timed_out, 400,
           "central queue with time-outs: every request completes or times out");
    /* time-outs in the replicas' own queues: each replica's count of
     * outstanding requests, which these routers read, stays exact */
    static const char *routers[] = {"least_outstanding", "power_of_two"};
    tally q_ended = {0}, q_all = {0}, q_out = {0}, q_checked = {0};
    for (int i = 0; i < 2; i++) {
        char router[64];
        snprintf(router, sizeof router, "cluster.router=%s", routers[i]);
        o = run(BASE, (const char *[]){router, "workload.arrival.rate_per_s=400",
                                       "cluster.scheduler.max_batch=4", "workload.timeout_s=0.05",
                                       NULL});
        tally_case(&q_ended, o.rc == 0, routers[i]);
        tally_case(&q_all, o.completed + o.timed_out == 400, routers[i]);
        tally_case(&q_out, o.timed_out > 0, routers[i]);
        tally_case(&q_checked, o.checks > 1000, routers[i]);
    }
    tally_ok(&q_ended, "each router with time-outs in the queues: the run ends well");
    tally_ok(&q_all, "each router: every request completes or times out");
    tally_ok(&q_out, "each router: some requests time out in the queues");
    tally_ok(&q_checked, "each router: more than 1000 checks passed");
}

/* Sequential and map-reduce agents: a call that ends sends the next one
 * from inside a replica's iteration end. */
static void test_agents(const char *root)
{
    char *path = util_xasprintf("%s/examples/agents.json", root), *json = NULL;
    util_diag d;
    util_diag_init(&d);
    if (util_read_file(path, &json, NULL, &d)) {
        ok(false, "read %s", path);
    } else {
        outcome o = run(json, (const char *[]){"stop={\"duration_s\": 20}", "warmup_s=0", NULL});
        ran_checked(&o, 1000, "agent tasks");
        cmp_ok(o.completed, >, 100, "agent tasks: %lld calls completed", (long long)o.completed);
    }
    util_diag_fini(&d);
    free(json);
    free(path);
}

static void corrupt_order(sim__heap *h)
{
    h->a[0].at = 1000; /* the root now comes after its children */
    sim__heap_push(h, 50, NULL, NULL, 0);
}

static void corrupt_slot(sim__heap *h)
{
    size_t slot;
    sim__heap_push_tracked(h, 25, NULL, NULL, 0, &slot); /* a leaf, at position 4 */
    slot = 0;
    sim__heap_push(h, 100, NULL, NULL, 0); /* placed at 5: nothing moves the leaf */
}

/* In a child process: a heap of four entries, corrupted, then changed
 * through the heap's own functions, which check it.  Returns the child's
 * wait status; its stderr goes to err (of size n). */
static int in_child(void (*corrupt)(sim__heap *), char *err, size_t n)
{
    int fd[2];
    if (pipe(fd)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        sim__heap h;
        sim__heap_init(&h);
        for (int i = 0; i < 4; i++) sim__heap_push(&h, 10 * (i + 1), NULL, NULL, i);
        corrupt(&h);
        _exit(0); /* the check did not fire */
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t k;
    while (got + 1 < n && (k = read(fd[0], err + got, n - 1 - got)) > 0) got += (size_t)k;
    err[got] = 0;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

static void test_corrupted_heap(void)
{
    char err[512];
    int status = in_child(corrupt_order, err, sizeof err);
    ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
       "a heap out of order aborts at its next push (status %d)", status);
    has_str(err, "invariant broken", "the check names the broken invariant on stderr");
    status = in_child(corrupt_slot, err, sizeof err);
    ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
       "a tracked entry's slot that lost its place aborts at the next push (status %d)", status);
    has_str(err, "*ev->slot == i", "the slot check fired");
}

int main(int argc, char **argv)
{
    if (argc < 2 || support_init()) {
        printf("Bail out! usage: test_invariants SOURCE_ROOT\n");
        return 1;
    }
    test_paged_kv();
    test_static();
    test_disaggregated();
    test_step_ahead();
    test_timeouts();
    test_agents(argv[1]);
    test_corrupted_heap();
    support_fini();
    return tap_done();
}

#endif /* SIM_CHECKS */
