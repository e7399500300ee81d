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

static void test_paged_kv(void)
{
    outcome o = run(STARVED, NULL);
    ok(o.rc == 0 && o.completed == 120 && o.preemptions > 0 && o.checks > 1000,
       "recompute: %lld preemptions, %lld checks passed", (long long)o.preemptions, o.checks);
    o = run(STARVED, (const char *[]){"cluster.scheduler.preemption=swap", NULL});
    ok(o.rc == 0 && o.completed == 120 && o.swap_bytes > 0 && o.checks > 1000,
       "swap: %.3g bytes swapped, %lld checks passed", o.swap_bytes, o.checks);
    o = run(STARVED, (const char *[]){"cluster.scheduler.prefix_caching=true", NULL});
    ok(o.rc == 0 && o.completed == 120 && o.preemptions > 0 && o.checks > 1000,
       "prefix caching of preempted sequences: %lld checks passed", o.checks);
    /* a central queue hands a preempted sequence to either replica: its
     * cached blocks are its old replica's only */
    o = run(STARVED, (const char *[]){"cluster.scheduler.prefix_caching=true",
                                      "cluster.replicas=2", "cluster.router=\"central_queue\"",
                                      "workload.arrival.users=64", NULL});
    ok(o.rc == 0 && o.completed == 120 && o.preemptions > 0 && o.checks > 1000,
       "prefix caching, preempted sequences moving between replicas: %lld checks passed",
       o.checks);
    /* shared system prompts and chained agent calls, evicted and preempted */
    o = run(STARVED_SHARED, (const char *[]){"cluster.scheduler.prefix_caching=true",
                                             "cluster.scheduler.policy=chunked",
                                             "cluster.scheduler.max_batched_tokens=256", NULL});
    ok(o.rc == 0 && o.completed == 120 && o.preemptions > 0 && o.checks > 1000,
       "prefix caching of shared prompts, chunked, under preemption: %lld checks passed",
       o.checks);
    o = run(STARVED, (const char *[]){"cluster.scheduler.prefix_caching=true",
                                      "cluster.router=\"prefix_affinity\"", "cluster.replicas=2",
                                      "workload.agent={\"mode\": \"sequential\", \"calls\": 3, "
                                      "\"tool_output_tokens\": {\"dist\": \"fixed\", "
                                      "\"value\": 40}}",
                                      NULL});
    ok(o.rc == 0 && o.completed >= 120 && o.preemptions > 0 && o.checks > 1000,
       "prefix caching of agent chains routed by prefix: %lld checks passed", o.checks);
    o = run(STARVED, (const char *[]){"cluster.scheduler.policy=chunked",
                                      "cluster.scheduler.max_batched_tokens=256", NULL});
    ok(o.rc == 0 && o.completed == 120 && o.preemptions > 0 && o.checks > 1000,
       "chunked prefill under preemption: %lld checks passed", o.checks);
    o = run(STARVED, (const char *[]){"cluster.scheduler.policy=prefill_first", NULL});
    ok(o.rc == 0 && o.completed == 120 && o.checks > 1000,
       "prefill_first: %lld checks passed", o.checks);
    o = run(STARVED, (const char *[]){"cluster.scheduler.preemption=swap", "workload.timeout_s=8",
                                      NULL});
    ok(o.rc == 0 && o.completed + o.timed_out == 120 && o.timed_out > 0 && o.swap_bytes > 0 &&
           o.checks > 1000,
       "swap with time-outs in the swap space and the batch: %lld timed out, %lld checks passed",
       (long long)o.timed_out, o.checks);
}

static void test_static(void)
{
    outcome o = run(BASE, (const char *[]){"cluster.scheduler.policy=static",
                                           "cluster.scheduler.max_batch=4",
                                           "cluster.scheduler.batch_timeout_s=0.05", NULL});
    ok(o.rc == 0 && o.completed == 400 && o.checks > 1000,
       "static batching, padded batches: %lld checks passed", o.checks);
    /* batches that end with their prefill give their reservation back */
    o = run(BASE, (const char *[]){"cluster.scheduler.policy=static",
                                   "cluster.scheduler.max_batch=4",
                                   "cluster.scheduler.kv_blocks=60",
                                   "workload.output_tokens={\"dist\": \"fixed\", \"value\": 1}",
                                   NULL});
    ok(o.rc == 0 && o.completed == 400 && o.checks > 100,
       "static batching, 1-token replies: %lld checks passed", o.checks);
}

static void test_disaggregated(void)
{
    outcome o = run(BASE, (const char *[]){
        "cluster.replicas=1", "cluster.pools=[{\"name\": \"prefill\"}, {\"name\": \"decode\"}]",
        "cluster.disaggregated={\"prefill\": \"prefill\", \"decode\": \"decode\", "
        "\"link_gbs\": 10, \"link_latency_s\": 0.001}",
        "workload.timeout_s=0.02", NULL});
    ok(o.rc == 0 && o.completed + o.timed_out == 400 && o.completed > 0 && o.checks > 1000,
       "disaggregated, KV over the link, some timing out on it: %lld checks passed", o.checks);
    /* a static prefill pool: of a batch, 1-token replies end with the
     * prefill, the others leave over the link */
    o = run(BASE, (const char *[]){
        "cluster.replicas=1",
        "cluster.pools=[{\"name\": \"prefill\", \"scheduler\": {\"policy\": \"static\", "
        "\"max_batch\": 4, \"kv_blocks\": 60}}, {\"name\": \"decode\"}]",
        "cluster.disaggregated={\"prefill\": \"prefill\", \"decode\": \"decode\", "
        "\"link_gbs\": 10, \"link_latency_s\": 0.001}",
        "workload.output_tokens={\"dist\": \"uniform\", \"min\": 1, \"max\": 3}", NULL});
    ok(o.rc == 0 && o.completed == 400 && o.checks > 1000,
       "disaggregated, a static prefill pool: %lld checks passed", o.checks);
}

/* Overloaded replicas whose clients give up all the time, under each
 * scheduler: sequences leave mid-decode and mid-prefill. */
static void test_timeouts(void)
{
    static const char *policies[] = {"continuous", "chunked", "static", "prefill_first"};
    for (int i = 0; i < 4; i++) {
        char policy[64];
        snprintf(policy, sizeof policy, "cluster.scheduler.policy=%s", policies[i]);
        outcome o = run(BASE, (const char *[]){"workload.arrival.rate_per_s=400",
                                               "workload.output_tokens={\"dist\": \"uniform\", "
                                               "\"min\": 2, \"max\": 400}",
                                               "workload.timeout_s=0.5", "cluster.replicas=1",
                                               "cluster.scheduler.kv_blocks=2000", policy, NULL});
        ok(o.rc == 0 && o.completed + o.timed_out == 400 && o.timed_out > 0 && o.completed > 0 &&
               o.checks > 1000,
           "%s with time-outs: %lld of 400 timed out, %lld checks passed", policies[i],
           (long long)o.timed_out, o.checks);
    }
    outcome o = run(BASE, (const char *[]){"cluster.router=central_queue",
                                           "workload.arrival.rate_per_s=400",
                                           "workload.timeout_s=0.05", NULL});
    ok(o.rc == 0 && o.completed + o.timed_out == 400 && o.checks > 1000,
       "central queue with time-outs: %lld checks passed", o.checks);
    /* time-outs in the replicas' own queues: each replica's count of
     * outstanding requests, which these routers read, stays exact */
    static const char *routers[] = {"least_outstanding", "power_of_two"};
    for (int i = 0; i < 2; i++) {
        char router[64];
        snprintf(router, sizeof router, "cluster.router=%s", routers[i]);
        o = run(BASE, (const char *[]){router, "workload.arrival.rate_per_s=400",
                                       "cluster.scheduler.max_batch=4", "workload.timeout_s=0.05",
                                       NULL});
        ok(o.rc == 0 && o.completed + o.timed_out == 400 && o.timed_out > 0 && o.checks > 1000,
           "%s with time-outs in the queues: %lld timed out, %lld checks passed", routers[i],
           (long long)o.timed_out, o.checks);
    }
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
        ok(o.rc == 0 && o.completed > 100 && o.checks > 1000,
           "agent tasks: %lld calls completed, %lld checks passed", (long long)o.completed,
           o.checks);
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
    test_timeouts();
    test_agents(argv[1]);
    test_corrupted_heap();
    support_fini();
    return tap_done();
}

#endif /* SIM_CHECKS */
