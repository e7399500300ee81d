/*
 * scenario.c: the scenario file's schema and its translation into the typed
 * sim_scenario.  The schema tables here (with those of models/ and
 * workloads/ for their sections) are the single description of every key:
 * validation, defaults and `servesim keys` all read them.
 *
 * A cluster is one or more pools of identical replicas.  The short form --
 * `cluster.gpu`, `cluster.model`, `cluster.replicas`, ... -- is one pool; with
 * `cluster.pools`, each pool takes whatever it does not set from those same
 * cluster-level keys (the scheduler key by key), so a mixed cluster states
 * only what differs.  Inherited values are written into each pool of the
 * effective scenario, which therefore says exactly what every pool ran.
 *
 * Each pool runs an engine (`engine`, a catalog preset: vllm-v1 unless
 * told): every scheduler and host key the pool has not set, itself or by
 * inheritance, comes from the preset, for the pool's GPU, and is written
 * into the effective scenario like an inherited one.  A key the scenario
 * sets always wins over the preset.
 *
 * A calibration profile (`cluster.calibration`) comes between the two: each
 * coefficient fitted on measured runs of the pools' GPU and engine sets its
 * key in every pool that has not set it, before the preset and the GPU's
 * catalog values fill what is still missing.
 */
#include "sim_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GIB 1073741824.0

/* What a cluster runs when it names no engine: the engine of the validation
 * runs (docs/engines.md). */
#define SIM_DEFAULT_ENGINE "vllm-v1"

#define NAME_OF(id, name) #name,
const char *const sim_policy_names[] = {SIM_POLICIES(NAME_OF) NULL};
const char *const sim_router_names[] = {SIM_ROUTERS(NAME_OF) NULL};
const char *const sim_order_names[] = {"fcfs", "priority", "deadline", NULL};
#undef NAME_OF
static const char *const preemptions[] = {"recompute", "swap", NULL};

static const util_field stop_fields[] = {
    {.key = "requests", .type = UTIL_T_INTEGER, .unit = "requests", .min = 1, .max = 1e13,
     .doc = "arrivals stop after this many requests"},
    {.key = "duration_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = WL_HORIZON_S,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "arrivals stop at this simulated time"},
    {.key = "max_in_flight", .type = UTIL_T_INTEGER, .unit = "requests", .min = 1, .max = 1e9,
     .doc = "the overload guard: more requests in flight stop the run as overloaded (default: "
            "twice the batch slots plus 1000, and a backlog test at the last arrival; set, "
            "this limit alone)"},
    {0},
};

/* The keys an engine preset sets have no default here: the preset's is
 * the default (apply_engine), written into the effective scenario. */
static const util_field scheduler_fields[] = {
    {.key = "policy", .type = UTIL_T_STRING, .choices = sim_policy_names,
     .doc = "scheduler family (see docs/scenario.md; default: the engine's)"},
    {.key = "max_batch", .type = UTIL_T_INTEGER, .unit = "sequences", .min = 1, .max = 1e6,
     .doc = "most sequences in one iteration (vLLM max_num_seqs; default: the engine's)"},
    {.key = "max_batched_tokens", .type = UTIL_T_INTEGER, .unit = "tokens", .min = 1, .max = 1e9,
     .doc = "most prompt tokens in one iteration; chunked: most tokens of any kind "
            "(vLLM max_num_batched_tokens; default: the engine's)"},
    {.key = "gpu_memory_utilization", .type = UTIL_T_NUMBER, .min = 0, .max = 1,
     .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "share of GPU memory for weights, activations and KV (default: the engine's)"},
    {.key = "block_tokens", .type = UTIL_T_INTEGER, .unit = "tokens", .min = 1, .max = 4096,
     .doc = "tokens per KV-cache block (vLLM block_size; default: the engine's)"},
    {.key = "kv_blocks", .type = UTIL_T_INTEGER, .unit = "blocks", .min = 1, .max = 1e12,
     .doc = "KV blocks per replica, to match a real engine's count (default: from memory)"},
    {.key = "activation_reserve_gib", .type = UTIL_T_NUMBER, .unit = "GiB", .min = 0,
     .max = 1e4, .doc = "memory per GPU kept from the KV cache for activations and runtime "
                        "(default: an estimate, written into the effective scenario)"},
    {.key = "preemption", .type = UTIL_T_STRING, .choices = preemptions,
     .doc = "when the cache is full: drop and recompute, or swap to host memory (default: the "
            "engine's)"},
    {.key = "prefix_caching", .type = UTIL_T_BOOL,
     .doc = "automatic prefix caching (vLLM v1): full KV blocks stay cached after their "
            "request, evicted least recently used first, and a prompt whose leading blocks are "
            "cached prefills from the first that is not -- a preempted sequence's recompute too "
            "(docs/prefix-caching.md; default: the engine's)"},
    {.key = "reserve_full_isl", .type = UTIL_T_BOOL,
     .doc = "a waiting request is admitted only if the free KV blocks hold its whole prompt "
            "(a recompute's generated tokens too), though a family that cuts prompts holds "
            "only its first chunk's (vLLM V1's scheduler_reserve_full_isl; default: the "
            "engine's)"},
    {.key = "async_scheduling", .type = UTIL_T_BOOL,
     .doc = "the host plans the next iteration while the GPU runs this one (vLLM V1's async "
            "scheduling, SGLang's overlap loop): host.step_s overlaps the GPU's time instead "
            "of adding to it, a request queued during step n first runs in step n + 2, and a "
            "finished one frees its slot and blocks a step later (docs/engines.md, the step "
            "pipeline; default: the engine's)"},
    {.key = "swap_space_gib", .type = UTIL_T_NUMBER, .unit = "GiB", .def = "4", .min = 0,
     .max = 1e6, .doc = "host memory for swapped KV, per replica (vLLM swap_space)"},
    {.key = "batch_timeout_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0,
     .max = 1e6, .doc = "static: longest wait for a batch to fill"},
    /* no defaults written: a scenario without them is the one it was */
    {.key = "scheduling_policy", .type = UTIL_T_STRING, .choices = sim_order_names,
     .doc = "the waiting queue's order: fcfs; priority (vLLM's: the class's priority, lower "
            "first, arrival among equals, and a more urgent request that cannot be admitted "
            "preempts the least urgent running one); deadline (earliest deadline first, aged) "
            "(default: fcfs)"},
    {.key = "deadline_aging", .type = UTIL_T_NUMBER, .min = 0, .max = 1e6,
     .doc = "scheduling_policy deadline only: seconds a waiting request's deadline comes in "
            "per second it waits, so a long-deadline request overtakes later short-deadline "
            "ones (default: 0)"},
    {0},
};

/* cluster.speculative: names as vLLM's speculative config has them. */
const char *const sim_spec_methods[] = {"eagle", "eagle3", "mtp", "ngram", "draft", NULL};

static const util_field speculative_fields[] = {
    {.key = "method", .type = UTIL_T_STRING, .choices = sim_spec_methods, .flags = UTIL_REQUIRED,
     .doc = "the drafter: eagle or eagle3 (a one-layer head on the target's hidden states), mtp "
            "(the model's multi-token-prediction layer), ngram (prompt lookup, on the host), "
            "draft (a smaller model of the same vocabulary, draft_model)"},
    {.key = "num_speculative_tokens", .type = UTIL_T_INTEGER, .unit = "tokens", .min = 1,
     .max = SIM_SPEC_MAX_K, .flags = UTIL_REQUIRED,
     .doc = "K: drafts proposed per sequence per step, and verified with it as K + 1 positions"},
    WL_ACCEPTANCE_FIELDS("cluster.speculative"),
    {.key = "disable_by_batch_size", .type = UTIL_T_INTEGER, .unit = "sequences", .min = 1,
     .max = 1e6, .doc = "speculation is off in a step while more sequences than this are running"},
    {.key = "draft_vocab_size", .type = UTIL_T_INTEGER, .unit = "tokens", .min = 1, .max = 1e7,
     .doc = "eagle3: the head's own vocabulary (default 32000, as EAGLE-3's Llama-3.1 heads)"},
    {.key = "lookup_s_per_token", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 1e-3,
     .doc = "ngram: the host's prompt lookup, seconds per context token scanned, each step, "
            "every speculating sequence's whole context (default 1.06e-9: vLLM's one-thread "
            "lookup, 70.28 ms for 66.3M tokens in PR #56732's benchmark)"},
    {.key = "draft_tensor_parallel_size", .type = UTIL_T_INTEGER, .min = 1, .max = 64,
     .doc = "draft: the GPUs of the replica's tensor-parallel group the draft model runs on, 1 "
            "or tensor_parallel (vLLM's two; default tensor_parallel)"},
    {.key = "draft_model", .type = UTIL_T_NAME_OR_OBJECT, .sub = mdl_model_fields,
     .check = mdl_check_model_id,
     .doc = "draft: the draft model, a catalog id or an inline model (or {\"hf_config\": "
            "PATH}, as cluster.model), of the target's vocabulary; it runs on the target's "
            "GPUs at its precision"},
    {0},
};

/* The keys a pool and the cluster share (a pool inherits them). */
#define POOL_KEYS                                                                              \
    {.key = "replicas", .type = UTIL_T_INTEGER, .def = "1", .min = 1, .max = 1e5,              \
     .doc = "identical replicas"},                                                             \
        {.key = "tensor_parallel", .type = UTIL_T_INTEGER, .def = "1", .min = 1, .max = 64,     \
         .doc = "GPUs splitting every layer of a replica"},                                    \
        {.key = "pipeline_parallel", .type = UTIL_T_INTEGER, .def = "1", .min = 1, .max = 64,   \
         .doc = "pipeline stages of a replica, each a share of the layers"},                   \
        {.key = "engine", .type = UTIL_T_STRING, .def = "\"" SIM_DEFAULT_ENGINE "\"",          \
         .check = mdl_check_engine_id,                                                         \
         .doc = "serving engine preset giving the scheduler and host defaults: vllm-v1, "      \
                "vllm-v0, sglang, ideal (`servesim catalog engines`, docs/engines.md)"},       \
        {.key = "scheduler", .type = UTIL_T_OBJECT, .sub = scheduler_fields,                   \
         .doc = "batching, KV cache and preemption"},                                          \
        {.key = "host", .type = UTIL_T_OBJECT, .sub = mdl_host_fields,                         \
         .doc = "latencies outside the GPU kernels: before the scheduler, per iteration, "      \
                "before the client"},                                                          \
        {.key = "cost_model", .type = UTIL_T_UNION, .un = &mdl_cost_schema,                    \
         .def = "{\"kind\": \"roofline\"}", .doc = "how long one iteration takes"},            \
        {.key = "quantization", .type = UTIL_T_STRING, .def = "\"none\"",                      \
         .choices = mdl_quantizations,                                                         \
         .doc = "weights as served (vLLM --quantization): none (the model's dtype), fp8 or "    \
                "int8 (W8A8: 1 byte, the GPU's fp8 or int8 peak), w4a16 (4-bit, fp16 scale "    \
                "per 128: 0.515625 bytes, bf16 compute), mxfp4 (0.53125 bytes, fp4 peak)"},    \
        {.key = "kv_cache_dtype", .type = UTIL_T_STRING, .def = "\"auto\"",                    \
         .choices = mdl_kv_dtypes,                                                             \
         .doc = "KV-cache element (vLLM --kv-cache-dtype): auto (the model's dtype, whatever "  \
                "the weights), bf16, fp16, fp8 (1 byte; any GPU: storage only)"},              \
        {.key = "expert_parallel", .type = UTIL_T_INTEGER, .def = "1", .min = 1, .max = 1024,  \
         .doc = "GPUs of a replica's tensor-parallel group that its MoE layers' routed "        \
                "experts are split over, with an all-to-all dispatch and combine per MoE "      \
                "layer (vLLM --enable-expert-parallel: tensor_parallel; 1: every expert split " \
                "by tensor parallelism)"},                                                     \
        {.key = "expert_skew", .type = UTIL_T_NUMBER, .min = 1, .max = 1024,                   \
         .doc = "expert parallelism: the busiest GPU's routed tokens over the mean, which "     \
                "paces every MoE layer (default 1: balanced)"},                                \
        {.key = "expert_counts", .type = UTIL_T_NUMBERS, .unit = "tokens", .min = 1,          \
         .max = 10000,                                                                         \
         .doc = "expert parallelism: measured tokens per routed expert, one per expert; "      \
                "experts sit on the GPUs in order (vLLM's linear placement) and the busiest "   \
                "GPU's share gives expert_skew"},                                              \
        {.key = "gpus_per_node", .type = UTIL_T_INTEGER, .def = "8", .min = 1, .max = 1024,    \
         .doc = "GPUs of a node: expert-parallel peers beyond them are reached over "           \
                "network_gbs"},                                                                \
        {.key = "network_gbs", .type = UTIL_T_NUMBER, .unit = "GB/s", .def = "50",            \
         .min = 0.01, .max = 1e4,                                                              \
         .doc = "scale-out bandwidth per GPU, each direction (50: a 400 Gb/s NIC per GPU, as "  \
                "in DGX H100)"},                                                               \
        {.key = "speculative", .type = UTIL_T_OBJECT, .sub = speculative_fields,               \
         .doc = "speculative decoding: a drafter proposes num_speculative_tokens per sequence "   \
                "each step and the target verifies them (docs/speculative-decoding.md)"},      \
        {.key = "lora", .type = UTIL_T_OBJECT, .sub = sim__lora_fields,                        \
         .doc = "LoRA adapters: GPU slots and a CPU cache a replica, loads, and the kernels' "  \
                "cost (docs/lora.md)"},                                                    \
        {.key = "failures", .type = UTIL_T_OBJECT, .sub = sim__failure_fields,                 \
         .doc = "unplanned failures (mtbf_s per GPU or at_s), their repair, spot take-backs "   \
                "and what the requests see (docs/failures.md)"},                              \
        {.key = "autoscaler", .type = UTIL_T_OBJECT, .sub = sim__autoscaler_fields,            \
         .doc = "resize the pool as the Kubernetes HPA does, on a metric per replica "          \
                "(docs/autoscaling.md)"},                                                      \
        {.key = "lifecycle", .type = UTIL_T_OBJECT, .sub = sim__lifecycle_fields,              \
         .doc = "how long a replica the fleet adds (the autoscaler's, a failed one's "         \
                "replacement) takes to serve: provisioning, the model's load, warm-up "        \
                "(docs/autoscaling.md)"}

static const util_field pool_fields[] = {
    {.key = "name", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED, .doc = "pool name"},
    {.key = "gpu", .type = UTIL_T_NAME_OR_OBJECT, .sub = mdl_gpu_fields, .flags = UTIL_REQUIRED,
     .check = mdl_check_gpu_id, .doc = "catalog id or an inline GPU"},
    {.key = "model", .type = UTIL_T_NAME_OR_OBJECT, .sub = mdl_model_fields,
     .flags = UTIL_REQUIRED, .check = mdl_check_model_id, .doc = "catalog id or an inline model"},
    POOL_KEYS,
    {0},
};

static const util_field disagg_fields[] = {
    {.key = "prefill", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED,
     .doc = "the pool that prefills prompts"},
    {.key = "decode", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED,
     .doc = "the pool that decodes"},
    {.key = "link_gbs", .type = UTIL_T_NUMBER, .unit = "GB/s", .min = 0.01, .max = 1e4,
     .flags = UTIL_REQUIRED, .doc = "bandwidth of the KV transfer link"},
    {.key = "link_latency_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0,
     .max = 10, .doc = "fixed latency of one KV transfer"},
    {0},
};

static const char *const offload_choices[] = {"prompt_only", "all", NULL};
static const char *const scope_choices[] = {"replica", "node", NULL};

/* cluster.kv_offload: docs/kv-offload.md says what each does and its source. */
static const util_field kv_offload_fields[] = {
    {.key = "cpu_gib", .type = UTIL_T_NUMBER, .unit = "GiB", .min = 0, .max = 1e6,
     .flags = UTIL_REQUIRED,
     .doc = "host memory per replica holding the KV blocks its prefix cache evicts (vLLM's "
            "OffloadingConnector, LMCache's local CPU backend); 0: no tier"},
    {.key = "offload", .type = UTIL_T_STRING, .def = "\"prompt_only\"", .choices = offload_choices,
     .doc = "what goes down a tier: the prompts' blocks (LMCache's save_decode_cache false, its "
            "default), or all: the blocks of finished replies too"},
    {.key = "cpu_latency_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0, .max = 10,
     .doc = "fixed latency of one step's load from the CPU tier, beside bytes / the GPU's "
            "host link (pcie_gbs x GPUs)"},
    {.key = "disk_gib", .type = UTIL_T_NUMBER, .unit = "GiB", .def = "0", .min = 0, .max = 1e9,
     .doc = "a disk tier per replica below the CPU tier, taking what it evicts (LMCache's "
            "local_disk); 0: none. Needs cpu_gib, disk_read_gbs and disk_latency_s"},
    {.key = "disk_read_gbs", .type = UTIL_T_NUMBER, .unit = "GB/s", .min = 0.001, .max = 1e4,
     .doc = "the disk tier's read bandwidth (its device's sequential read; docs/kv-offload.md "
            "lists sourced figures)"},
    {.key = "disk_latency_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 10,
     .doc = "fixed latency of one step's read from the disk tier"},
    {.key = "scope", .type = UTIL_T_STRING, .choices = scope_choices,
     .doc = "whose tiers cpu_gib and disk_gib are: replica (the default), or node: the "
            "replicas of a pool on one node (gpus_per_node GPUs) share its tiers"},
    {0},
};

static const util_field cluster_fields[] = {
    {.key = "gpu", .type = UTIL_T_NAME_OR_OBJECT, .sub = mdl_gpu_fields,
     .check = mdl_check_gpu_id, .doc = "catalog id (`servesim catalog gpus`) or an inline GPU"},
    {.key = "model", .type = UTIL_T_NAME_OR_OBJECT, .sub = mdl_model_fields,
     .check = mdl_check_model_id,
     .doc = "catalog id (`servesim catalog models`) or an inline model"},
    POOL_KEYS,
    {.key = "router", .type = UTIL_T_STRING, .def = "\"round_robin\"", .choices = sim_router_names,
     .doc = "how a request picks a replica of its pool"},
    {.key = "prefix_weight", .type = UTIL_T_NUMBER, .unit = "tokens/token", .def = "1", .min = 0,
     .max = 1e6,
     .doc = "prefix_affinity: a replica's cost is this x the prompt tokens it would prefill "
            "(not cached there) + the tokens it holds (queued prompts, KV in use); Dynamo's "
            "kv-overlap-score-weight"},
    {.key = "lora_queue_threshold", .type = UTIL_T_INTEGER, .unit = "requests", .min = 0,
     .max = 1e9,
     .doc = "lora_affinity: the replicas holding a request's adapter with fewer requests "
            "waiting than this are preferred, the least loaded of them; else the least loaded "
            "of all (default 128: the Gateway API Inference Extension's queueingThresholdLoRA)"},
    {.key = "session_queue_threshold", .type = UTIL_T_INTEGER, .unit = "requests", .min = 0,
     .max = 1e9,
     .doc = "session_affinity: a task's call goes to the replica of its last call unless this "
            "many requests or more wait there; then to the least loaded, its new home (default "
            "128: the Gateway API Inference Extension's queueingThresholdLoRA, its bound on "
            "affinity)"},
    {.key = "pools", .type = UTIL_T_LIST, .sub = pool_fields, .min = 1, .max = 64,
     .doc = "several pools (each inherits the cluster-level keys it does not set)"},
    {.key = "disaggregated", .type = UTIL_T_OBJECT, .sub = disagg_fields,
     .doc = "prefill in one pool, decode in another (DistServe, Splitwise)"},
    {.key = "kv_offload", .type = UTIL_T_OBJECT, .sub = kv_offload_fields,
     .doc = "a CPU tier below each replica's prefix cache: evicted blocks go down to it, a "
            "prompt that hits it loads them back over PCIe (docs/kv-offload.md)"},
    {.key = "gateway", .type = UTIL_T_OBJECT, .sub = sim__gateway_fields,
     .doc = "a gateway in front of the replicas: tenants' token budgets and slot shares, a "
            "queue while they are saturated, shedding (docs/gateway.md)"},
    {.key = "calibration", .type = UTIL_T_STRING,
     .doc = "a calibration profile (servesim calibrate's PROFILE.json, relative to the scenario "
            "file's folder; stored as the absolute path read): every pool must run its GPU and "
            "engine, and each fitted coefficient sets its key in every pool -- cost_model.mfu, "
            "mbu, attn_efficiency, iteration_overhead_s (roofline only) and host.step_s, "
            "step_s_per_seq, output_s, frontend_s, frontend_s_per_token. A key the scenario "
            "sets itself wins over the profile; the profile wins over the engine preset and "
            "the GPU's catalog values (docs/calibration.md)"},
    {0},
};

static const util_field cost_fields[] = {
    {.key = "usd_per_gpu_hour", .type = UTIL_T_NUMBER, .unit = "USD/h", .min = 0, .max = 100,
     .doc = "price of one GPU-hour, busy or idle (default: the catalog's, per GPU)"},
    {.key = "overhead_fraction", .type = UTIL_T_NUMBER, .def = "0", .min = 0, .max = 100,
     .doc = "added on top of the GPU price: memory, power, infrastructure, maintenance, fees"},
    {0},
};

static const util_field energy_fields[] = {
    {.key = "host_w_per_gpu", .type = UTIL_T_NUMBER, .unit = "W", .min = 0, .max = 1e4,
     .doc = "each GPU's share of the host (CPU, memory, network), always on (default: 10% of "
            "the GPU's TDP)"},
    {.key = "pue", .type = UTIL_T_NUMBER, .def = "1", .min = 1, .max = 10,
     .doc = "power usage effectiveness: facility (cooling, conversion) over IT power"},
    {0},
};

const util_field sim_scenario_fields[] = {
    {.key = "name", .type = UTIL_T_STRING, .def = "\"scenario\"",
     .doc = "label stored with the run (servesim run: the file's name without .json)"},
    {.key = "seed", .type = UTIL_T_INTEGER, .def = "1", .min = 0, .max = 9007199254740991.0,
     .doc = "master seed; every random stream derives from it"},
    {.key = "stop", .type = UTIL_T_OBJECT, .sub = stop_fields,
     .doc = "when arrivals stop (at least one of its keys, unless a trace ends them); requests "
            "in flight then finish"},
    {.key = "warmup_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0,
     .max = WL_HORIZON_S,
     .doc = "requests arriving earlier are simulated and stored but left out of the report"},
    {.key = "cluster", .type = UTIL_T_OBJECT, .sub = cluster_fields, .flags = UTIL_REQUIRED,
     .doc = "the serving cluster"},
    {.key = "workload", .type = UTIL_T_OBJECT, .sub = wl_workload_fields,
     .flags = UTIL_REQUIRED, .doc = "the traffic"},
    {.key = "slo", .type = UTIL_T_OBJECT, .sub = wl_slo_fields,
     .doc = "targets, each optional: per request (ttft_s), per agent task (task_e2e_s), on "
            "the run's percentiles (ttft_p99_s)"},
    {.key = "cost", .type = UTIL_T_OBJECT, .sub = cost_fields,
     .doc = "what the cluster costs (the report's cost section)"},
    {.key = "energy", .type = UTIL_T_OBJECT, .sub = energy_fields,
     .doc = "beyond the GPUs: the host and the facility (the report's energy section)"},
    {0},
};

/* ---- pools inherit from the cluster ---- */

static void copy_missing(cJSON *to, const cJSON *from, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, key);
    if (v && !cJSON_GetObjectItemCaseSensitive(to, key))
        cJSON_AddItemToObject(to, key, cJSON_Duplicate(v, 1));
}

/* Every key of from that to lacks. */
static void fill_missing(cJSON *to, const cJSON *from)
{
    for (const cJSON *k = from ? from->child : NULL; k; k = k->next)
        copy_missing(to, from, k->string);
}

/* A pool's own object (scheduler, host) takes the cluster's keys it lacks;
 * a pool without one takes the cluster's whole (inherit_pools). */
static void inherit_keys(cJSON *pool, const cJSON *cluster, const char *key)
{
    cJSON *own = cJSON_GetObjectItemCaseSensitive(pool, key);
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(cluster, key);
    if (cJSON_IsObject(own) && cJSON_IsObject(from)) fill_missing(own, from);
}

/* Before validation, so that what a pool inherits is validated as its own. */
static void inherit_pools(cJSON *root)
{
    cJSON *cluster = cJSON_GetObjectItemCaseSensitive(root, "cluster");
    cJSON *pools = cJSON_GetObjectItemCaseSensitive(cluster, "pools");
    if (!cJSON_IsObject(cluster) || !cJSON_IsArray(pools)) return;
    static const char *const keys[] = {"replicas", "gpu", "model", "tensor_parallel",
                                       "pipeline_parallel", "cost_model", "engine",
                                       "scheduler", "host", "quantization", "kv_cache_dtype",
                                       "expert_parallel", "expert_skew", "expert_counts",
                                       "gpus_per_node", "network_gbs", "lora", "failures",
                                       "autoscaler", "lifecycle"};
    /* speculation is a decoder's: a disaggregated cluster's prefill pool,
     * which never decodes, does not take the cluster's drafter */
    const char *prefill = cJSON_GetStringValue(
        util_json_get(cluster, "disaggregated.prefill"));
    cJSON *p;
    cJSON_ArrayForEach(p, pools)
    {
        if (!cJSON_IsObject(p)) continue;
        inherit_keys(p, cluster, "scheduler");
        inherit_keys(p, cluster, "host");
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) copy_missing(p, cluster, keys[i]);
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "name"));
        if (!prefill || !name || strcmp(name, prefill)) copy_missing(p, cluster, "speculative");
    }
}

/* ---- models from config.json ---- */

/* Every model object naming an hf_config gains what the config says, before
 * engine presets (which read the model's context) and validation (which
 * checks the result as an inline model).  Pools have inherited the
 * cluster's model by now, so each expands its own copy. */
static int expand_pool_models(cJSON *pool, const char *path, const char *base_dir, util_diag *d)
{
    char *mpath = util_xasprintf("%s.model", path);
    char *dpath = util_xasprintf("%s.speculative.draft_model", path);
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(pool, "speculative");
    int rc = mdl_hf_expand(cJSON_GetObjectItemCaseSensitive(pool, "model"), mpath, base_dir, d);
    if (mdl_hf_expand(cJSON_GetObjectItemCaseSensitive(spec, "draft_model"), dpath, base_dir, d))
        rc = UTIL_EINPUT;
    free(mpath);
    free(dpath);
    return rc;
}

static int expand_models(cJSON *root, const char *base_dir, util_diag *d)
{
    cJSON *cluster = cJSON_GetObjectItemCaseSensitive(root, "cluster");
    int rc = expand_pool_models(cluster, "cluster", base_dir, d);
    cJSON *pools = cJSON_GetObjectItemCaseSensitive(cluster, "pools"), *p;
    if (!cJSON_IsArray(pools)) return rc;
    int i = 0;
    cJSON_ArrayForEach(p, pools)
    {
        char *path = util_xasprintf("cluster.pools[%d]", i++);
        if (expand_pool_models(p, path, base_dir, d)) rc = UTIL_EINPUT;
        free(path);
    }
    return rc;
}

/* ---- engine presets ---- */

/* What a preset's tiers look at: the GPU's memory and its id and name in
 * lower case, from the catalog or an inline object not yet validated (a
 * wrong one is reported by validation; here it only picks no tier). */
typedef struct gpu_facts {
    double memory_gib;
    char names[128];
} gpu_facts;

static void lower(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z') *s = (char)(*s - 'A' + 'a');
}

static gpu_facts pool_gpu(const cJSON *pool, const mdl_catalog *cat)
{
    gpu_facts g = {0};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(pool, "gpu");
    const mdl_gpu *known = cJSON_IsString(v) ? mdl_catalog_find_gpu(cat, v->valuestring) : NULL;
    if (known) {
        g.memory_gib = known->mem_bytes / GIB;
        snprintf(g.names, sizeof g.names, "%s %s", known->id, known->name);
    } else if (cJSON_IsObject(v)) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
        g.memory_gib = util_json_number(v, "memory_gib", 0);
        snprintf(g.names, sizeof g.names, "%s %s", cJSON_IsString(id) ? id->valuestring : "",
                 cJSON_IsString(name) ? name->valuestring : "");
    }
    lower(g.names);
    return g;
}

/* The model's context in tokens, or 0 when it is not known yet. */
static double pool_context(const cJSON *pool, const mdl_catalog *cat)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(pool, "model");
    const mdl_model *known = cJSON_IsString(v) ? mdl_catalog_find_model(cat, v->valuestring) : NULL;
    if (known) return known->max_context;
    return cJSON_IsObject(v) ? util_json_number(v, "max_context", 0) : 0;
}

/* Sets o[key] to the number x, replacing what is there. */
static void set_number(cJSON *o, const char *key, double x)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    cJSON_AddNumberToObject(o, key, x);
}

/* The preset's scheduler defaults for this GPU: its base object, then each
 * tier the GPU reaches, in order, each replacing what it names.  Caller
 * deletes. */
static cJSON *preset_scheduler(const cJSON *eng, const gpu_facts *g)
{
    cJSON *sched = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(eng, "scheduler"), 1);
    const cJSON *tier;
    cJSON_ArrayForEach(tier, cJSON_GetObjectItemCaseSensitive(eng, "tiers"))
    {
        const cJSON *unless = cJSON_GetObjectItemCaseSensitive(tier, "unless_name");
        if (g->memory_gib < util_json_number(tier, "min_memory_gib", 0)) continue;
        if (cJSON_IsString(unless) && strstr(g->names, unless->valuestring)) continue;
        const cJSON *k;
        cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(tier, "scheduler"))
        {
            cJSON_DeleteItemFromObjectCaseSensitive(sched, k->string);
            cJSON_AddItemToObject(sched, k->string, cJSON_Duplicate(k, 1));
        }
    }
    return sched;
}

/* o[key], made an empty object when absent; NULL when it is something else
 * (validation reports that). */
static cJSON *object_member(cJSON *o, const char *key)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) v = cJSON_AddObjectToObject(o, key);
    return cJSON_IsObject(v) ? v : NULL;
}

/* Two of vLLM's rules for its defaults (vllm/engine/arg_utils.py), which
 * keep a scenario that sets one key consistent: a default max_num_seqs is
 * at most max_num_batched_tokens, and without chunked prefill the default
 * token budget holds the model's whole context. */
static void settle_defaults(cJSON *sched, const cJSON *eng, bool batch_set, bool tokens_set,
                            double context)
{
    const cJSON *policy = cJSON_GetObjectItemCaseSensitive(sched, "policy");
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(sched, "max_batched_tokens");
    const cJSON *batch = cJSON_GetObjectItemCaseSensitive(sched, "max_batch");
    if (!cJSON_IsNumber(tokens) || !cJSON_IsNumber(batch)) return;
    bool chunks = cJSON_IsString(policy) && !strcmp(policy->valuestring, "chunked");
    if (!tokens_set && !chunks && context > tokens->valuedouble &&
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(eng, "unchunked_covers_context")))
        set_number(sched, "max_batched_tokens", context);
    tokens = cJSON_GetObjectItemCaseSensitive(sched, "max_batched_tokens");
    if (!batch_set && batch->valuedouble > tokens->valuedouble)
        set_number(sched, "max_batch", tokens->valuedouble);
}

/* A pool (or the short form's cluster) takes from its engine's preset every
 * scheduler and host key it does not set, before validation, so that the
 * preset's values are validated and stored as the scenario's own.  An
 * unknown engine is left for validation to report. */
static void apply_engine(cJSON *pool, const mdl_catalog *cat)
{
    if (!cJSON_GetObjectItemCaseSensitive(pool, "engine"))
        cJSON_AddStringToObject(pool, "engine", SIM_DEFAULT_ENGINE);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(pool, "engine");
    const cJSON *eng = cJSON_IsString(name) ? mdl_catalog_find_engine(cat, name->valuestring)
                                            : NULL;
    cJSON *sched = eng ? object_member(pool, "scheduler") : NULL;
    cJSON *host = eng ? object_member(pool, "host") : NULL;
    if (!sched || !host) return;
    bool batch_set = cJSON_HasObjectItem(sched, "max_batch");
    bool tokens_set = cJSON_HasObjectItem(sched, "max_batched_tokens");
    gpu_facts g = pool_gpu(pool, cat);
    cJSON *preset = preset_scheduler(eng, &g);
    fill_missing(sched, preset);
    cJSON_Delete(preset);
    fill_missing(host, cJSON_GetObjectItemCaseSensitive(eng, "host"));
    settle_defaults(sched, eng, batch_set, tokens_set, pool_context(pool, cat));
}

/* Every pool that runs: each of cluster.pools, or the cluster itself. */
static void apply_engines(cJSON *root, const mdl_catalog *cat)
{
    cJSON *cluster = cJSON_GetObjectItemCaseSensitive(root, "cluster");
    if (!cJSON_IsObject(cluster)) return;
    cJSON *pools = cJSON_GetObjectItemCaseSensitive(cluster, "pools");
    if (!pools) {
        apply_engine(cluster, cat);
        return;
    }
    cJSON *p;
    cJSON_ArrayForEach(p, pools)
        if (cJSON_IsObject(p)) apply_engine(p, cat);
}

/* ---- calibration profiles ---- */

/* path from the root: itself, or below the working directory (NULL when
 * that cannot be had); caller frees. */
static char *absolute(const char *path)
{
    if (path[0] == '/') return util_xstrdup(path);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return NULL;
    return util_xasprintf("%s/%s", cwd, strncmp(path, "./", 2) ? path : path + 2);
}

/* The pool after p, the first when p is NULL: each of cluster.pools, or
 * the cluster itself; NULL after the last. */
static cJSON *next_pool(cJSON *cluster, cJSON *p)
{
    cJSON *pools = cJSON_GetObjectItemCaseSensitive(cluster, "pools");
    if (!cJSON_IsArray(pools)) return p ? NULL : cluster;
    return p ? p->next : pools->child;
}

/* A pool's name in messages: its own, or the short form's "default". */
static const char *pool_label(const cJSON *pool, bool listed, util_clip_buf *cb)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(pool, "name");
    if (!listed) return "default";
    return cJSON_IsString(name) ? util_clip(name->valuestring, cb) : "?";
}

/* The pool runs the profile's GPU (its catalog id: an inline GPU is not the
 * catalog's) with the profile's engine, the default when it names none. */
static int check_fit(const cJSON *pool, const char *label, const mdl_profile *pr,
                     const char *file, util_diag *d)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(pool, "gpu");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(pool, "engine");
    util_clip_buf gb, eb, fb;
    const char *gpu = cJSON_IsString(g)   ? util_clip(g->valuestring, &gb)
                      : cJSON_IsObject(g) ? "an inline GPU"
                                          : "no GPU";
    const char *engine = cJSON_IsString(e) ? util_clip(e->valuestring, &eb)
                         : e               ? "an engine that is not a name"
                                           : SIM_DEFAULT_ENGINE;
    if (cJSON_IsString(g) && !strcmp(g->valuestring, pr->gpu) && !strcmp(engine, pr->engine))
        return UTIL_OK;
    return util_diag_add(d, "cluster.calibration: %s was fitted on %s with %s; pool '%s' is %s "
                            "with %s", util_clip_path(file, &fb), pr->gpu, pr->engine, label,
                         gpu, engine);
}

/* Cost coefficients are the roofline's: a pool costed otherwise has no key
 * for them to set. */
static int check_kind(const cJSON *pool, const char *label, const mdl_profile *pr,
                      const char *file, util_diag *d)
{
    const cJSON *kind = util_json_get(pool, "cost_model.kind");
    if (!cJSON_IsString(kind) || !strcmp(kind->valuestring, "roofline")) return UTIL_OK;
    util_clip_buf kb, fb;
    for (int i = 0; i < MDL_N_COEFS; i++)
        if (pr->coef[i].set && !strcmp(mdl_coefs[i].section, "cost_model"))
            return util_diag_add(d, "cluster.calibration: %s fits %s, a roofline coefficient; "
                                    "pool '%s' has a %s cost model",
                                 util_clip_path(file, &fb), mdl_coefs[i].name, label,
                                 util_clip(kind->valuestring, &kb));
    return UTIL_OK;
}

/* Each fitted coefficient into the pool's key it sets, where the scenario
 * (or the cluster's keys it inherited) did not set that key. */
static void set_fitted(cJSON *pool, const mdl_profile *pr)
{
    for (int i = 0; i < MDL_N_COEFS; i++) {
        if (!pr->coef[i].set) continue;
        cJSON *obj = object_member(pool, mdl_coefs[i].section);
        if (obj && !cJSON_GetObjectItemCaseSensitive(obj, mdl_coefs[i].key))
            cJSON_AddNumberToObject(obj, mdl_coefs[i].key, pr->coef[i].value);
    }
}

/* The pools of cluster.calibration's profile checked and given its
 * coefficients, after they inherited the cluster's keys and before the
 * engine presets and the GPU's defaults fill the keys still missing, so
 * that what the profile set is validated and stored as the scenario's own.
 * The stored path is the absolute one read: `servesim report` looks there. */
static int apply_calibration(cJSON *root, const mdl_catalog *cat, const char *base_dir,
                             util_diag *d)
{
    cJSON *cluster = cJSON_GetObjectItemCaseSensitive(root, "cluster");
    const cJSON *cal = cJSON_GetObjectItemCaseSensitive(cluster, "calibration");
    if (!cJSON_IsString(cal)) return UTIL_OK; /* absent, or validation reports it */
    char *file = util_path_join(base_dir, cal->valuestring);
    mdl_profile pr;
    util_diag own;
    util_diag_init(&own);
    int rc = mdl_profile_read(file, cat, &pr, &own);
    for (int i = 0; i < own.count; i++) util_diag_add(d, "cluster.calibration: %s", own.msgs[i]);
    util_diag_fini(&own);
    bool listed = cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(cluster, "pools"));
    for (cJSON *p = rc ? NULL : next_pool(cluster, NULL); p; p = next_pool(cluster, p)) {
        if (!cJSON_IsObject(p)) continue;
        util_clip_buf cb;
        const char *label = pool_label(p, listed, &cb);
        if (check_fit(p, label, &pr, file, d)) rc = UTIL_EINPUT;
        if (check_kind(p, label, &pr, file, d)) rc = UTIL_EINPUT;
    }
    for (cJSON *p = rc ? NULL : next_pool(cluster, NULL); p; p = next_pool(cluster, p))
        if (cJSON_IsObject(p)) set_fitted(p, &pr);
    char *abs = rc ? NULL : absolute(file);
    if (abs) cJSON_ReplaceItemInObjectCaseSensitive(cluster, "calibration", cJSON_CreateString(abs));
    free(abs);
    mdl_profile_fini(&pr);
    free(file);
    return rc;
}

/* ---- typed values ---- */

/* A GPU or model is given by catalog id or inline. */
static void resolve_gpu(const cJSON *v, const mdl_catalog *cat, mdl_gpu *out)
{
    if (cJSON_IsString(v)) *out = *mdl_catalog_find_gpu(cat, v->valuestring);
    else mdl_gpu_from_json(v, out);
}

static void resolve_model(const cJSON *v, const mdl_catalog *cat, mdl_model *out)
{
    if (cJSON_IsString(v)) *out = *mdl_catalog_find_model(cat, v->valuestring);
    else mdl_model_from_json(v, out);
}

static void read_scheduler(sim_pool *p, const cJSON *s)
{
    p->policy = (sim_policy)util_json_choice(s, "policy", sim_policy_names);
    p->max_batch = (int)util_json_member(s, "max_batch")->valuedouble;
    p->max_batched_tokens = (int64_t)util_json_member(s, "max_batched_tokens")->valuedouble;
    p->gpu_memory_utilization = util_json_member(s, "gpu_memory_utilization")->valuedouble;
    p->block_tokens = (int)util_json_member(s, "block_tokens")->valuedouble;
    p->preemption = (sim_preemption)util_json_choice(s, "preemption", preemptions);
    p->prefix_caching = cJSON_IsTrue(util_json_member(s, "prefix_caching"));
    p->swap_space_bytes = util_json_member(s, "swap_space_gib")->valuedouble * GIB;
    p->batch_timeout_s = util_json_member(s, "batch_timeout_s")->valuedouble;
    p->async_scheduling = cJSON_IsTrue(util_json_member(s, "async_scheduling"));
    p->reserve_full_isl = cJSON_IsTrue(util_json_member(s, "reserve_full_isl"));
}

/* scheduling_policy and its aging, which a scenario without them lacks
 * even in its effective form (fcfs, no aging). */
static void read_scheduling_policy(sim_pool *p, const cJSON *s)
{
    int order = util_json_choice(s, "scheduling_policy", sim_order_names);
    p->order = order < SIM_N_ORDERS ? (sim_order)order : SIM_ORDER_FCFS;
    p->deadline_aging = util_json_number(s, "deadline_aging", 0);
}

/* deadline_aging orders only a deadline queue: elsewhere it would silently
 * do nothing, so it is refused. */
static int check_scheduling_policy(const sim_pool *p, const cJSON *s, const char *path,
                                   util_diag *d)
{
    if (!util_json_member(s, "deadline_aging") || p->order == SIM_ORDER_DEADLINE) return UTIL_OK;
    return util_diag_add(d, "%s.scheduler.deadline_aging: applies only to scheduling_policy "
                            "deadline (this pool's is %s)",
                         path, sim_order_names[p->order]);
}

/* After mdl_cost_init, which clears the cost model: the host's time per
 * iteration is the cost model's to add. */
static void read_host(sim_pool *p, const cJSON *h)
{
    p->frontend_s = util_json_member(h, "frontend_s")->valuedouble;
    p->frontend_s_per_token = util_json_member(h, "frontend_s_per_token")->valuedouble;
    p->output_s = util_json_member(h, "output_s")->valuedouble;
    p->cost.host_step_s = util_json_member(h, "step_s")->valuedouble;
    p->cost.host_step_s_per_seq = util_json_member(h, "step_s_per_seq")->valuedouble;
    p->cost.host_overlap = p->async_scheduling;
}

/* Rules that join several keys of a pool. */
static int check_pool(const sim_pool *p, const char *path, util_diag *d)
{
    const mdl_model *m = &p->cost.model;
    int rc = UTIL_OK;
    int tp = p->tensor_parallel;
    if (m->heads % tp || (m->kv_heads % tp && tp % m->kv_heads))
        rc = util_diag_add(d, "%s.tensor_parallel: %d does not divide %s's heads (%d), or its KV "
                              "heads (%d) are neither split evenly nor replicated evenly",
                           path, tp, m->id, m->heads, m->kv_heads);
    if (p->pipeline_parallel > m->layers)
        rc = util_diag_add(d, "%s.pipeline_parallel: %d stages for %d layers", path,
                           p->pipeline_parallel, m->layers);
    if (p->policy == SIM_CHUNKED && p->max_batched_tokens < p->max_batch)
        rc = util_diag_add(d, "%s.scheduler.max_batched_tokens: %lld is below max_batch (%d): "
                              "chunked prefill needs a token for every running sequence",
                           path, (long long)p->max_batched_tokens, p->max_batch);
    return rc;
}

/* The KV blocks the pool's memory leaves beside its model and what sits
 * beside it (NULL: nothing); d NULL: only whether any is left. */
static int cache_blocks(const sim_pool *p, const mdl_beside *beside, const char *path,
                        int64_t *blocks, util_diag *d)
{
    util_diag quiet;
    util_diag_init(&quiet);
    int rc = mdl_kv_capacity_blocks(&p->cost.gpu, &p->cost.model, p->tensor_parallel,
                                    p->pipeline_parallel, p->gpu_memory_utilization,
                                    p->activation_reserve_bytes, p->block_tokens, beside,
                                    path ? path : "", blocks, d ? d : &quiet);
    util_diag_fini(&quiet);
    return rc;
}

/* The target fits but not with its draft model beside it: the draft is
 * what to change, so the message names it. */
static int draft_too_big(const sim_pool *p, const char *path, util_diag *d)
{
    const mdl_cost *dc = &p->spec.head;
    return util_diag_add(d, "%s.speculative.draft_model: %s (%.1f GB of weights, %.0f KiB of KV "
                            "a token) does not fit beside %s on %d GPU%s (%s) at "
                            "gpu_memory_utilization %g: no room is left for the KV cache; "
                            "a smaller draft model, or more GPUs (tensor_parallel)",
                         path, dc->model.id, p->spec.head_weight_bytes / 1e9,
                         p->spec.head_kv_bytes_per_token / 1024, p->cost.model.id, p->gpus,
                         p->gpus == 1 ? "" : "s", p->cost.gpu.id, p->gpu_memory_utilization);
}

/* The KV cache: a block count given, or what memory leaves for it. */
static int size_cache(sim_pool *p, cJSON *sched, const char *path, util_diag *d)
{
    const cJSON *reserve = util_json_member(sched, "activation_reserve_gib");
    if (reserve) {
        p->activation_reserve_bytes = reserve->valuedouble * GIB;
    } else {
        p->activation_reserve_bytes = mdl_activation_reserve_bytes(
            &p->cost.model, p->tensor_parallel, p->max_batched_tokens, p->max_batch);
        cJSON_AddNumberToObject(sched, "activation_reserve_gib", p->activation_reserve_bytes / GIB);
    }
    const cJSON *blocks = util_json_member(sched, "kv_blocks");
    if (blocks) {
        p->kv_blocks = (int64_t)blocks->valuedouble;
        return UTIL_OK;
    }
    mdl_beside drafter = {p->spec.head_weight_bytes, p->spec.head_kv_bytes_per_token};
    drafter.weight_bytes += p->lora.gpu_bytes; /* the adapters' slots (lora.c) */
    if (p->spec.method == SIM_SPEC_DRAFT && !cache_blocks(p, NULL, NULL, &p->kv_blocks, NULL) &&
        cache_blocks(p, &drafter, NULL, &p->kv_blocks, NULL))
        return draft_too_big(p, path, d);
    char *mpath = util_xasprintf("%s.model", path);
    int rc = cache_blocks(p, &drafter, mpath, &p->kv_blocks, d);
    free(mpath);
    return rc;
}

/* expert_counts as the skew they give: experts placed on the ep GPUs in
 * order, experts / ep each, and the busiest GPU's tokens over the mean. */
static int counts_skew(const cJSON *counts, int experts, int ep, const char *path, double *skew,
                       util_diag *d)
{
    int n = cJSON_GetArraySize(counts), per = experts / ep, i = 0;
    if (n != experts)
        return util_diag_add(d, "%s.expert_counts: %d counts for %d experts (one per routed "
                                "expert)", path, n, experts);
    double busiest = 0, total = 0, gpu = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, counts)
    {
        if (c->valuedouble < 0)
            return util_diag_add(d, "%s.expert_counts[%d]: %g is negative", path, i, c->valuedouble);
        gpu += c->valuedouble;
        total += c->valuedouble;
        if (++i % per == 0) busiest = fmax(busiest, gpu), gpu = 0;
    }
    if (total <= 0) return util_diag_add(d, "%s.expert_counts: every count is 0", path);
    *skew = busiest / (total / ep);
    return UTIL_OK;
}

/* Expert parallelism's keys, checked against the model and the replica. */
static int read_experts(const sim_pool *p, const cJSON *obj, const char *path, mdl_ep *ep,
                        util_diag *d)
{
    const mdl_model *m = &p->cost.model;
    *ep = (mdl_ep){.degree = (int)util_json_member(obj, "expert_parallel")->valuedouble,
                   .skew = 1,
                   .gpus_per_node = (int)util_json_member(obj, "gpus_per_node")->valuedouble,
                   .network_bw = util_json_member(obj, "network_gbs")->valuedouble * 1e9};
    const cJSON *skew = util_json_member(obj, "expert_skew");
    const cJSON *counts = util_json_member(obj, "expert_counts");
    if (ep->degree == 1) {
        if (skew || counts)
            return util_diag_add(d, "%s.%s: applies only with expert_parallel above 1", path,
                                 skew ? "expert_skew" : "expert_counts");
        return UTIL_OK;
    }
    if (m->experts < 2)
        return util_diag_add(d, "%s.expert_parallel: %s is a dense model, with no experts to "
                                "split", path, m->id);
    if (p->tensor_parallel % ep->degree)
        return util_diag_add(d, "%s.expert_parallel: %d does not divide tensor_parallel (%d): "
                                "the experts are split over GPUs of one replica's tensor-parallel "
                                "group", path, ep->degree, p->tensor_parallel);
    if (m->experts % ep->degree)
        return util_diag_add(d, "%s.expert_parallel: %d does not divide %s's %d experts", path,
                             ep->degree, m->id, m->experts);
    if (skew && counts)
        return util_diag_add(d, "%s.expert_counts: give expert_skew or expert_counts, not both",
                             path);
    if (skew) ep->skew = skew->valuedouble;
    if (counts) return counts_skew(counts, m->experts, ep->degree, path, &ep->skew, d);
    return UTIL_OK;
}

/* A model whose given parameters are far from what its dimensions count
 * still runs (the given figures are used) but is worth a word: a typo in
 * a dimension or a figure of another checkpoint. */
#define PARAMS_WARN 0.03

static void check_params(const mdl_model *m, const char *path, util_diag *warnings)
{
    double err = mdl_model_params_error(m);
    if (err <= PARAMS_WARN) return;
    mdl_params c;
    mdl_model_count_params(m, &c);
    util_diag_add(warnings, "%s.model: params_b %.4g and active_params_b %.4g are %.0f%% off what "
                            "its dimensions count (%.4g and %.4g); the given figures are used",
                  path, m->params / 1e9, m->active_params / 1e9, 100 * err, c.total / 1e9,
                  c.active / 1e9);
}

/* quantization and kv_cache_dtype, with what the pool's engine serves
 * weight-only on a GPU that lacks the dtype. */
static mdl_precision pool_precision(const cJSON *obj, const mdl_catalog *cat)
{
    mdl_precision pr = {
        .quant = (mdl_quant)util_json_choice(obj, "quantization", mdl_quantizations),
        .kv = (mdl_kv_dtype)util_json_choice(obj, "kv_cache_dtype", mdl_kv_dtypes),
        .engine = util_json_member(obj, "engine")->valuestring,
    };
    const cJSON *wo = cJSON_GetObjectItemCaseSensitive(mdl_catalog_find_engine(cat, pr.engine),
                                                       "weight_only");
    pr.weight_only = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(wo, mdl_quantizations[pr.quant]));
    return pr;
}

static int apply_precision(sim_pool *p, const cJSON *obj, const mdl_catalog *cat,
                           const char *path, util_diag *d)
{
    mdl_precision pr = pool_precision(obj, cat);
    return mdl_precision_apply(&p->cost, &pr, path, d);
}

/* ---- speculative decoding ---- */

/* The geometric acceptance whose mean emitted length over K drafts is
 * (1 - a^(K+1)) / (1 - a); increasing in a, from 1 at 0 to K + 1 at 1. */
static double geometric_length(double a, int k)
{
    double len = 0, term = 1;
    for (int i = 0; i <= k; i++, term *= a) len += term;
    return len;
}

static double rate_for_length(double len, int k)
{
    double lo = 0, hi = 1;
    for (int i = 0; i < 100; i++) {
        double mid = 0.5 * (lo + hi);
        if (geometric_length(mid, k) < len) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* at_least[i] = P(accepted >= i), i = 0..k (at_least[0] = 1), into the
 * distribution's cdf and mean. */
static void spec_distribution(sim_accept *acc, int k, const double *at_least)
{
    double cdf = 0, mean = 0;
    for (int j = 0; j <= k; j++) {
        cdf += at_least[j] - (j < k ? at_least[j + 1] : 0);
        acc->cdf[j] = cdf;
        if (j > 0) mean += at_least[j];
    }
    acc->cdf[k] = 1; /* rounding never leaves a draw unanswered */
    acc->mean = mean;
}

/* acceptance_rates as P(accepted >= i): K of them, each a probability and
 * none above the one before. */
static int read_rates(const cJSON *rates, int k, const char *path, double *at_least,
                      util_diag *d)
{
    int n = cJSON_GetArraySize(rates), i = 1;
    if (n != k)
        return util_diag_add(d, "%s.acceptance_rates: %d rates for num_speculative_tokens %d "
                                "(one per position)", path, n, k);
    const cJSON *v;
    cJSON_ArrayForEach(v, rates)
    {
        if (v->valuedouble < 0 || v->valuedouble > 1)
            return util_diag_add(d, "%s.acceptance_rates[%d]: %g is not a probability (0 to 1)",
                                 path, i - 1, v->valuedouble);
        if (v->valuedouble > at_least[i - 1])
            return util_diag_add(d, "%s.acceptance_rates[%d]: %g is above the position before "
                                    "it (%g): a position is accepted only after every one "
                                    "before it", path, i - 1, v->valuedouble, at_least[i - 1]);
        at_least[i++] = v->valuedouble;
    }
    return UTIL_OK;
}

/* The acceptance keys of object o (at path), exactly one of them, for k
 * drafts a step. */
static int read_acceptance(sim_accept *acc, int k, const cJSON *o, const char *path,
                           util_diag *d)
{
    const cJSON *rate = util_json_member(o, "acceptance_rate");
    const cJSON *rates = util_json_member(o, "acceptance_rates");
    const cJSON *len = util_json_member(o, "acceptance_length");
    if (!!rate + !!rates + !!len != 1)
        return util_diag_add(d, "%s: give one of acceptance_rate, acceptance_rates and "
                                "acceptance_length (%s)", path,
                             rate || rates || len ? "more than one is set" : "none is set");
    double at_least[SIM_SPEC_MAX_K + 1] = {1};
    if (rates) {
        if (read_rates(rates, k, path, at_least, d)) return UTIL_EINPUT;
    } else {
        double a = rate ? rate->valuedouble : 0;
        if (len && len->valuedouble > k + 1)
            return util_diag_add(d, "%s.acceptance_length: %g is above num_speculative_tokens "
                                    "+ 1 (%d), the most a step emits", path, len->valuedouble,
                                 k + 1);
        if (len) a = rate_for_length(len->valuedouble, k);
        for (int i = 1; i <= k; i++) at_least[i] = at_least[i - 1] * a;
    }
    spec_distribution(acc, k, at_least);
    return UTIL_OK;
}

/* method draft: the draft model, costed on the target's GPUs at the
 * pool's precision.  It must share the target's vocabulary (vLLM V0's
 * SpecDecodeWorker asserts the two vocabulary sizes equal: the target
 * verifies the draft's token ids) and split over its tensor-parallel
 * group as the target does. */
static int read_draft_model(sim_pool *p, const cJSON *obj, const cJSON *v, const char *path,
                            const mdl_catalog *cat, util_diag *d)
{
    sim_spec *sp = &p->spec;
    const mdl_model *t = &p->cost.model;
    mdl_model dm;
    resolve_model(v, cat, &dm);
    const cJSON *dtp = util_json_member(util_json_member(obj, "speculative"),
                                        "draft_tensor_parallel_size");
    int tp = dtp ? (int)dtp->valuedouble : p->tensor_parallel;
    if (tp != 1 && tp != p->tensor_parallel)
        return util_diag_add(d, "%s.speculative.draft_tensor_parallel_size: %d is neither 1 nor "
                                "the target's tensor_parallel (%d), the two vLLM accepts", path,
                             tp, p->tensor_parallel);
    if (dm.vocab != t->vocab)
        return util_diag_add(d, "%s.speculative.draft_model: %s's vocabulary (%d tokens) is not "
                                "the target %s's (%d): the target verifies the draft's tokens, "
                                "so both need one tokenizer", path, dm.id, dm.vocab, t->id,
                             t->vocab);
    if (dm.heads % tp || (dm.kv_heads % tp && tp % dm.kv_heads))
        return util_diag_add(d, "%s.speculative.draft_model: tensor_parallel %d does not divide "
                                "%s's heads (%d), or its KV heads (%d) are neither split evenly "
                                "nor replicated evenly: the draft runs on %d of the target's "
                                "GPUs (draft_tensor_parallel_size 1 puts it on one)",
                             path, tp, dm.id, dm.heads, dm.kv_heads, tp);
    mdl_cost_draft_model(&p->cost, &dm, tp, &sp->head);
    mdl_precision pr = pool_precision(obj, cat);
    if (mdl_precision_apply(&sp->head, &pr, path, d)) return UTIL_EINPUT;
    /* Beside the target, in its all-GPU terms.  On the target's group the
     * draft's KV is in the target's shards: a draft whose KV heads are
     * replicated over more of the GPUs keeps more of its KV on each.  On
     * one GPU (tp 1) that GPU holds all of it, and since every GPU of the
     * group holds as many KV blocks, the group holds what that one leaves:
     * as if each of the target's GPUs held the draft. */
    int group = p->tensor_parallel;
    if (tp == group) {
        sp->head_weight_bytes = sp->head.weight_bytes;
        sp->head_kv_bytes_per_token = sp->head.kv_bytes_per_token * mdl_model_kv_shards(t, tp) /
                                      mdl_model_kv_shards(&sp->head.model, tp);
    } else { /* mdl_kv_capacity_blocks divides these by the GPUs and the KV's shards */
        sp->head_weight_bytes = sp->head.weight_bytes * p->gpus;
        sp->head_kv_bytes_per_token = sp->head.kv_bytes_per_token * mdl_model_kv_shards(t, group) *
                                      p->pipeline_parallel;
    }
    return UTIL_OK;
}

/* The keys that belong to one method: draft_vocab_size to eagle3,
 * draft_model to draft (and draft needs it). */
static int check_method_keys(const sim_spec *sp, const cJSON *o, const char *path, util_diag *d)
{
    if (util_json_member(o, "draft_vocab_size") && sp->method != SIM_SPEC_EAGLE3)
        return util_diag_add(d, "%s.speculative.draft_vocab_size: applies only to method eagle3 "
                                "(the others draft in the target's vocabulary)", path);
    bool model = util_json_member(o, "draft_model") != NULL;
    if (model && sp->method != SIM_SPEC_DRAFT)
        return util_diag_add(d, "%s.speculative.draft_model: applies only to method draft (%s "
                                "drafts with %s)", path, sim_spec_methods[sp->method],
                             sp->method == SIM_SPEC_NGRAM ? "prompt lookup" : "a head of its own");
    if (util_json_member(o, "lookup_s_per_token") && sp->method != SIM_SPEC_NGRAM)
        return util_diag_add(d, "%s.speculative.lookup_s_per_token: applies only to method ngram "
                                "(the others draft on the GPU)", path);
    if (util_json_member(o, "draft_tensor_parallel_size") && sp->method != SIM_SPEC_DRAFT)
        return util_diag_add(d, "%s.speculative.draft_tensor_parallel_size: applies only to "
                                "method draft (a head runs where the target does)", path);
    if (!model && sp->method == SIM_SPEC_DRAFT)
        return util_diag_add(d, "%s.speculative.draft_model: missing (method draft needs the "
                                "draft model: a catalog id or an inline model)", path);
    return UTIL_OK;
}

/* cluster.speculative (a pool's own or inherited), with its drafter's
 * cost and memory beside the target's. */
static int read_speculative(sim_pool *p, const cJSON *obj, const char *path,
                            const mdl_catalog *cat, util_diag *d)
{
    sim_spec *sp = &p->spec;
    *sp = (sim_spec){.method = SIM_SPEC_NONE};
    const cJSON *o = util_json_member(obj, "speculative");
    if (!o) return UTIL_OK;
    sp->method = (sim_spec_method)util_json_choice(o, "method", sim_spec_methods);
    sp->k = (int)util_json_member(o, "num_speculative_tokens")->valuedouble;
    const cJSON *off = util_json_member(o, "disable_by_batch_size");
    sp->disable_above = off ? (int64_t)off->valuedouble : 0;
    const cJSON *dv = util_json_member(o, "draft_vocab_size");
    if (check_method_keys(sp, o, path, d)) return UTIL_EINPUT;
    sp->lookup_s_per_token = util_json_number(o, "lookup_s_per_token", SIM_NGRAM_S_PER_TOKEN);
    char *spath = util_xasprintf("%s.speculative", path);
    int rc = read_acceptance(&sp->accept, sp->k, o, spath, d);
    free(spath);
    if (rc) return rc;
    /* vLLM reserves K lookahead slots for the drafters that write KV */
    sp->lookahead = sp->method == SIM_SPEC_NGRAM ? 0 : sp->k;
    sp->pad = sp->k + sp->lookahead;
    const mdl_model *m = &p->cost.model;
    double layer_kv = mdl_model_kv_bytes_per_layer_token(m);
    switch (sp->method) {
    case SIM_SPEC_EAGLE:
        mdl_cost_draft_head(&p->cost, false, m->vocab, 2, &sp->head, &sp->head_weight_bytes);
        break;
    case SIM_SPEC_EAGLE3:
        mdl_cost_draft_head(&p->cost, false, dv ? (int)dv->valuedouble : 32000, 3, &sp->head,
                            &sp->head_weight_bytes);
        break;
    case SIM_SPEC_MTP:
        mdl_cost_draft_head(&p->cost, true, m->vocab, 2, &sp->head, &sp->head_weight_bytes);
        break;
    case SIM_SPEC_DRAFT:
        return read_draft_model(p, obj, util_json_member(o, "draft_model"), path, cat, d);
    case SIM_SPEC_NGRAM:
    case SIM_SPEC_NONE: layer_kv = 0; break;
    }
    sp->head_kv_bytes_per_token = layer_kv;
    return UTIL_OK;
}

static int build_pool(sim_pool *p, cJSON *obj, const char *path, const mdl_catalog *cat,
                      const char *base_dir, util_diag *d)
{
    cJSON *sched = cJSON_GetObjectItemCaseSensitive(obj, "scheduler");
    p->replicas = (int)util_json_member(obj, "replicas")->valuedouble;
    p->tensor_parallel = (int)util_json_member(obj, "tensor_parallel")->valuedouble;
    p->pipeline_parallel = (int)util_json_member(obj, "pipeline_parallel")->valuedouble;
    p->gpus = p->tensor_parallel * p->pipeline_parallel;
    read_scheduler(p, sched);
    read_scheduling_policy(p, sched);
    mdl_gpu gpu;
    mdl_model model;
    resolve_gpu(util_json_member(obj, "gpu"), cat, &gpu);
    resolve_model(util_json_member(obj, "model"), cat, &model);
    char *cpath = util_xasprintf("%s.cost_model", path);
    int rc = mdl_cost_init(&p->cost, cJSON_GetObjectItemCaseSensitive(obj, "cost_model"), &gpu,
                           &model, cpath, base_dir, d);
    free(cpath);
    if (apply_precision(p, obj, cat, path, d)) rc = UTIL_EINPUT;
    mdl_ep ep;
    if (read_experts(p, obj, path, &ep, d)) rc = UTIL_EINPUT;
    mdl_cost_set_parallel(&p->cost, p->tensor_parallel, p->pipeline_parallel, &ep);
    p->engine = util_json_member(obj, "engine")->valuestring;
    read_host(p, cJSON_GetObjectItemCaseSensitive(obj, "host"));
    if (check_pool(p, path, d)) rc = UTIL_EINPUT;
    if (check_scheduling_policy(p, sched, path, d)) rc = UTIL_EINPUT;
    if (read_speculative(p, obj, path, cat, d)) rc = UTIL_EINPUT;
    else if (sim__lr_read(p, obj, path, d)) rc = UTIL_EINPUT;
    if (sim__fa_read(p, obj, path, d)) rc = UTIL_EINPUT;
    else if (size_cache(p, sched, path, d)) rc = UTIL_EINPUT;
    if (sim__as_read(p, obj, path, d)) rc = UTIL_EINPUT;
    return rc;
}

static int find_pool(const sim_scenario *sc, const cJSON *name, const char *path, util_diag *d)
{
    for (int i = 0; i < sc->n_pools; i++)
        if (!strcmp(sc->pools[i].name, name->valuestring)) return i;
    util_clip_buf cb;
    util_diag_add(d, "%s: no pool named '%s'", path, util_clip(name->valuestring, &cb));
    return -1;
}

static int build_disaggregation(sim_scenario *sc, const cJSON *cluster, util_diag *d)
{
    const cJSON *dis = util_json_member(cluster, "disaggregated");
    sc->disagg_prefill = sc->disagg_decode = -1;
    if (!dis || !util_json_member(dis, "prefill")) return UTIL_OK;
    if (!util_json_member(cluster, "pools"))
        return util_diag_add(d, "cluster.disaggregated: needs cluster.pools (a prefill pool and "
                                "a decode pool)");
    sc->disagg_prefill = find_pool(sc, util_json_member(dis, "prefill"), "cluster.disaggregated.prefill", d);
    sc->disagg_decode = find_pool(sc, util_json_member(dis, "decode"), "cluster.disaggregated.decode", d);
    sc->link_bw = util_json_member(dis, "link_gbs")->valuedouble * 1e9;
    sc->link_latency_s = util_json_member(dis, "link_latency_s")->valuedouble;
    if (sc->disagg_prefill < 0 || sc->disagg_decode < 0) return UTIL_EINPUT;
    if (sc->disagg_prefill == sc->disagg_decode)
        return util_diag_add(d, "cluster.disaggregated: prefill and decode are the same pool");
    if (sc->n_pools != 2)
        return util_diag_add(d, "cluster.disaggregated: a disaggregated cluster has exactly two "
                                "pools, the prefill pool and the decode pool (it has %d)",
                             sc->n_pools);
    const mdl_model *a = &sc->pools[0].cost.model, *b = &sc->pools[1].cost.model;
    if (a->layers == b->layers && a->kv_heads == b->kv_heads && a->head_dim == b->head_dim &&
        a->kv_bytes_per_elem != b->kv_bytes_per_elem)
        return util_diag_add(d, "cluster.disaggregated: the pools cache KV in different dtypes "
                                "(%g and %g bytes an element); set one kv_cache_dtype for both",
                             a->kv_bytes_per_elem, b->kv_bytes_per_elem);
    if (mdl_model_kv_bytes_per_token(a) != mdl_model_kv_bytes_per_token(b) ||
        a->layers != b->layers)
        return util_diag_add(d, "cluster.disaggregated: the pools run different models (%s, "
                                "%s); a KV cache can only move between replicas of one model",
                             a->id, b->id);
    return UTIL_OK;
}

/* The short form, or each of cluster.pools. */
static int build_pools(sim_scenario *sc, cJSON *cluster, const mdl_catalog *cat,
                       const char *base_dir, util_diag *d)
{
    cJSON *pools = cJSON_GetObjectItemCaseSensitive(cluster, "pools");
    sc->n_pools = pools ? cJSON_GetArraySize(pools) : 1;
    sc->pools = util_xcalloc((size_t)sc->n_pools, sizeof *sc->pools);
    if (!pools && (!util_json_member(cluster, "gpu") || !util_json_member(cluster, "model")))
        return util_diag_add(d, "cluster.%s: missing (give a gpu and a model, or cluster.pools)",
                             util_json_member(cluster, "gpu") ? "model" : "gpu");
    int rc = UTIL_OK;
    for (int i = 0; i < sc->n_pools; i++) {
        sim_pool *p = &sc->pools[i];
        cJSON *obj = pools ? cJSON_GetArrayItem(pools, i) : cluster;
        char *path = pools ? util_xasprintf("cluster.pools[%d]", i) : util_xstrdup("cluster");
        p->name = pools ? util_json_member(obj, "name")->valuestring : "default";
        p->index = i;
        if (build_pool(p, obj, path, cat, base_dir, d)) rc = UTIL_EINPUT;
        else check_params(&p->cost.model, path, &sc->warnings);
        p->usd_per_gpu_hour =
            util_json_number(sc->json, "cost.usd_per_gpu_hour", p->cost.gpu.usd_per_hour);
        sc->replicas += p->replicas;
        util_clip_buf cb;
        for (int j = 0; j < i; j++)
            if (!strcmp(sc->pools[j].name, p->name))
                rc = util_diag_add(d, "%s.name: '%s' is used twice", path,
                                   util_clip(p->name, &cb));
        free(path);
    }
    return rc;
}

/* Whether every arrival stream in use ends by itself: traces that do not
 * loop. */
static bool ends_alone(const wl_spec *w)
{
    for (int i = 0; i < w->n_streams; i++) {
        if (i == 0 && !w->shared_used) continue;
        if (w->streams[i].process != WL_TRACE || w->streams[i].loop) return false;
    }
    return true;
}

/* The last arrival a workload of traces that end by themselves makes: the
 * latest last replayed request of its streams in use. */
static double last_arrival_s(const wl_spec *w)
{
    double last = 0;
    for (int i = 0; i < w->n_streams; i++)
        if ((i > 0 || w->shared_used) && w->streams[i].last_s > last) last = w->streams[i].last_s;
    return last;
}

/* A warm-up must leave a measurement window: requests arriving before it
 * are left out of the report, so one past every arrival measures nothing --
 * refused here rather than reported as an empty run. */
static int check_warmup(const sim_scenario *sc, util_diag *d)
{
    if (sc->warmup_s <= 0) return UTIL_OK;
    if (sc->stop_duration_s > 0 && sc->warmup_s >= sc->stop_duration_s)
        return util_diag_add(d, "warmup_s: %g s is not before stop.duration_s (%g s): arrivals "
                                "stop at stop.duration_s and requests arriving before warmup_s "
                                "are left out of the report, so nothing would be measured",
                             sc->warmup_s, sc->stop_duration_s);
    if (!ends_alone(&sc->workload)) return UTIL_OK;
    double last = last_arrival_s(&sc->workload);
    if (sc->warmup_s >= last)
        return util_diag_add(d, "warmup_s: %g s is not before the trace's last replayed arrival "
                                "(at %g s): requests arriving before warmup_s are left out of "
                                "the report, so nothing would be measured",
                             sc->warmup_s, last);
    return UTIL_OK;
}

/* Rate "inf" without max_concurrency sends every request at time 0, which
 * stop.duration_s never reaches: only stop.requests ends it. */
static int check_endless(const sim_scenario *sc, util_diag *d)
{
    const wl_spec *w = &sc->workload;
    if (sc->stop_requests > 0) return UTIL_OK;
    for (int i = 0; i < w->n_streams; i++) {
        const wl_arrival *a = &w->streams[i];
        if ((i == 0 && !w->shared_used) || !isinf(a->rate_per_s) || a->max_concurrency) continue;
        int cls = 0;
        while (i > 0 && w->classes[cls].stream != i) cls++;
        char path[64];
        if (i == 0) snprintf(path, sizeof path, "workload.arrival");
        else snprintf(path, sizeof path, "workload.classes[%d].arrival", cls);
        return util_diag_add(d, "%s.rate_per_s: \"inf\" sends every request at time 0, so it "
                                "needs stop.requests or max_concurrency (stop.duration_s is "
                                "never reached)",
                             path);
    }
    return UTIL_OK;
}

/* A class's own acceptance (workload.classes[i].speculative) for pool p,
 * read at p's K.  *by_class is made at the first class that has one. */
static int class_acceptance(sim_pool *p, const cJSON *cls, int i, int n_classes,
                            util_diag *d)
{
    const cJSON *o = util_json_member(cls, "speculative");
    if (!o) return UTIL_OK;
    sim_spec *sp = &p->spec;
    if (!sp->by_class) {
        sp->by_class = util_xcalloc((size_t)n_classes, sizeof *sp->by_class);
        for (int c = 0; c < n_classes; c++) sp->by_class[c] = sp->accept;
    }
    char *path = util_xasprintf("workload.classes[%d].speculative", i);
    int rc = read_acceptance(&sp->by_class[i], sp->k, o, path, d);
    free(path);
    return rc;
}

/* workload.classes[].speculative, for every pool that speculates; a class
 * that sets it in a cluster where none does is refused, since it would
 * silently do nothing. */
static int read_class_acceptances(sim_scenario *sc, util_diag *d)
{
    const cJSON *classes = util_json_member(util_json_member(sc->json, "workload"), "classes");
    const cJSON *cls;
    int i = 0, rc = UTIL_OK;
    bool any = false;
    for (int p = 0; p < sc->n_pools; p++) any |= sc->pools[p].spec.method != SIM_SPEC_NONE;
    cJSON_ArrayForEach(cls, classes)
    {
        if (util_json_member(cls, "speculative") && !any)
            return util_diag_add(d, "workload.classes[%d].speculative: no pool speculates (set "
                                    "cluster.speculative)", i);
        for (int p = 0; p < sc->n_pools && !rc; p++)
            if (sc->pools[p].spec.method != SIM_SPEC_NONE)
                rc = class_acceptance(&sc->pools[p], cls, i, sc->workload.n_classes, d);
        i++;
    }
    return rc;
}

/* A class's priority (a tier's name or an integer), deadline and tenant,
 * validated by the schema already. */
static sim_class_sched class_sched(const cJSON *cls)
{
    sim_class_sched cs = {0};
    const cJSON *prio = util_json_member(cls, "priority");
    if (cJSON_IsString(prio)) cs.priority = wl_tier_values[util_json_choice(cls, "priority",
                                                                            wl_tier_names)];
    else if (cJSON_IsNumber(prio)) cs.priority = (int32_t)prio->valuedouble;
    cs.deadline_s = util_json_number(cls, "deadline_s", 0);
    cs.tenant = cJSON_GetStringValue(util_json_member(cls, "tenant"));
    return cs;
}

/* workload.classes[].priority, deadline_s and tenant, one a class (the
 * default class, without workload.classes, has none). */
static void read_class_sched(sim_scenario *sc)
{
    int n = sc->workload.n_classes;
    sc->class_sched = util_xcalloc((size_t)n, sizeof *sc->class_sched);
    const cJSON *classes = util_json_member(util_json_member(sc->json, "workload"), "classes");
    const cJSON *cls;
    int i = 0;
    cJSON_ArrayForEach(cls, classes) if (i < n) sc->class_sched[i++] = class_sched(cls);
}

/* ---- several models ---- */

static int model_index(const sim_scenario *sc, const char *id)
{
    for (int m = 0; m < sc->n_models; m++)
        if (!strcmp(sc->models[m], id)) return m;
    return -1;
}

/* The fleet's models, each pool's index among them.  Disaggregated, the
 * fleet serves the prefill pool's model: build_disaggregation has checked
 * that the decode pool's caches KV alike, whatever its id. */
static void list_models(sim_scenario *sc)
{
    sc->models = util_xcalloc((size_t)sc->n_pools, sizeof *sc->models);
    for (int i = 0; i < sc->n_pools; i++) {
        sim_pool *p = &sc->pools[i];
        if (sc->disagg_prefill >= 0) p = &sc->pools[sc->disagg_prefill];
        int m = model_index(sc, p->cost.model.id);
        if (m < 0) sc->models[m = sc->n_models++] = p->cost.model.id;
        sc->pools[i].model = m;
    }
}

/* "a, b, c": the models, for a message. */
static char *model_list(const sim_scenario *sc)
{
    char *s = util_xstrdup(sc->models[0]);
    for (int m = 1; m < sc->n_models; m++) {
        char *t = util_xasprintf("%s, %s", s, sc->models[m]);
        free(s);
        s = t;
    }
    return s;
}

/* A class's model: the one it names, which some pool must serve, or, when
 * it names none, the fleet's only one -- a fleet of several has no model
 * to guess (the first pool's would route silently by the order of pools). */
static int class_model(sim_scenario *sc, const cJSON *cls, int i, util_diag *d)
{
    const char *id = cJSON_GetStringValue(util_json_member(cls, "model"));
    int m = id ? model_index(sc, id) : sc->n_models == 1 ? 0 : -1;
    if (m >= 0) {
        if (sc->class_sched && i < sc->workload.n_classes) sc->class_sched[i].model = m;
        return UTIL_OK;
    }
    char *list = model_list(sc);
    util_clip_buf cb;
    if (id) util_diag_add(d, "workload.classes[%d].model: no pool serves '%s' (the pools serve %s)",
                          i, util_clip(id, &cb), list);
    else if (cls) util_diag_add(d, "workload.classes[%d].model: missing: the pools serve several "
                                   "models (%s); name the class's", i, list);
    else util_diag_add(d, "workload.classes: missing: the pools serve several models (%s); give "
                          "each class its model", list);
    free(list);
    return UTIL_EINPUT;
}

/* workload.classes[].model for every class (the default class: the fleet's
 * only model). */
static int read_class_models(sim_scenario *sc, util_diag *d)
{
    list_models(sc);
    const cJSON *classes = util_json_member(util_json_member(sc->json, "workload"), "classes");
    if (!classes) return class_model(sc, NULL, 0, d);
    const cJSON *cls;
    int i = 0, rc = UTIL_OK;
    cJSON_ArrayForEach(cls, classes) if (class_model(sc, cls, i++, d)) rc = UTIL_EINPUT;
    return rc;
}

/* cluster.kv_offload: its tiers, a disk tier with what its loads cost. */
static int read_kv_offload(sim_scenario *sc, const cJSON *cluster, util_diag *d)
{
    sc->kv_offload.cpu_bytes = util_json_number(cluster, "kv_offload.cpu_gib", 0) * GIB;
    sc->kv_offload.cpu_latency_s = util_json_number(cluster, "kv_offload.cpu_latency_s", 0);
    const cJSON *off = util_json_get(cluster, "kv_offload.offload");
    sc->kv_offload.all = off && cJSON_IsString(off) && !strcmp(off->valuestring, "all");
    sc->kv_offload.disk_bytes = util_json_number(cluster, "kv_offload.disk_gib", 0) * GIB;
    const cJSON *scope = util_json_get(cluster, "kv_offload.scope");
    sc->kv_offload.per_node = scope && cJSON_IsString(scope) && !strcmp(scope->valuestring, "node");
    if (sc->kv_offload.disk_bytes <= 0) return UTIL_OK;
    int rc = UTIL_OK;
    if (sc->kv_offload.cpu_bytes <= 0)
        rc = util_diag_add(d, "cluster.kv_offload.disk_gib: a disk tier sits below the CPU "
                              "tier, which blocks reach it through: set cpu_gib above 0 too");
    if (!util_json_get(cluster, "kv_offload.disk_read_gbs"))
        rc = util_diag_add(d, "cluster.kv_offload.disk_read_gbs: missing: a disk tier needs "
                              "its device's read bandwidth (docs/kv-offload.md lists some)");
    if (!util_json_get(cluster, "kv_offload.disk_latency_s"))
        rc = util_diag_add(d, "cluster.kv_offload.disk_latency_s: missing: a disk tier needs "
                              "its device's latency (docs/kv-offload.md lists some)");
    sc->kv_offload.disk_read_bw = util_json_number(cluster, "kv_offload.disk_read_gbs", 0) * 1e9;
    sc->kv_offload.disk_latency_s = util_json_number(cluster, "kv_offload.disk_latency_s", 0);
    return rc;
}

/* A threshold that no router would read is a scenario that does not do
 * what its author meant. */
static int check_session_router(const sim_scenario *sc, const cJSON *cluster, util_diag *d)
{
    if (!util_json_get(cluster, "session_queue_threshold") ||
        sc->router == SIM_ROUTER_SESSION_AFFINITY)
        return 0;
    return util_diag_add(d, "cluster.session_queue_threshold: only cluster.router "
                            "\"session_affinity\" reads it (the router is \"%s\")",
                         sim_router_names[sc->router]);
}

static int build(sim_scenario *sc, const mdl_catalog *cat, const char *base_dir, util_diag *d)
{
    cJSON *root = sc->json, *cluster = cJSON_GetObjectItemCaseSensitive(root, "cluster");
    sc->name = util_json_member(root, "name")->valuestring;
    sc->seed = (uint64_t)util_json_member(root, "seed")->valuedouble;
    sc->stop_requests = (int64_t)util_json_number(root, "stop.requests", 0);
    sc->stop_duration_s = util_json_number(root, "stop.duration_s", 0);
    sc->max_in_flight = (int64_t)util_json_number(root, "stop.max_in_flight", 0);
    sc->warmup_s = util_json_member(root, "warmup_s")->valuedouble;
    sc->router = (sim_router)util_json_choice(cluster, "router", sim_router_names);
    sc->prefix_weight = util_json_number(cluster, "prefix_weight", 1);
    sc->lora_queue_threshold = (int64_t)util_json_number(cluster, "lora_queue_threshold", 128);
    sc->session_queue_threshold =
        (int64_t)util_json_number(cluster, "session_queue_threshold", 128);
    sc->lora_pool = -1;
    int rc = build_pools(sc, cluster, cat, base_dir, d);
    if (check_session_router(sc, cluster, d) && !rc) rc = UTIL_EINPUT;
    if (!rc && build_disaggregation(sc, cluster, d)) rc = UTIL_EINPUT;
    if (wl_spec_from_json(util_json_member(root, "workload"), "workload", base_dir, &sc->workload, d))
        rc = UTIL_EINPUT;
    if (!rc && !(sc->stop_requests > 0 || sc->stop_duration_s > 0) && !ends_alone(&sc->workload))
        rc = util_diag_add(d, "stop: set requests, duration_s or both (arrivals stop at "
                              "whichever comes first; traces that do not loop also stop at "
                              "their end)");
    if (!rc && read_class_acceptances(sc, d)) rc = UTIL_EINPUT;
    if (!rc) read_class_sched(sc);
    if (!rc && read_class_models(sc, d)) rc = UTIL_EINPUT;
    if (!rc && sim__lr_read_classes(sc, d)) rc = UTIL_EINPUT;
    if (!rc && sim__gw_read(sc, cluster, d)) rc = UTIL_EINPUT;
    if (!rc && read_kv_offload(sc, cluster, d)) rc = UTIL_EINPUT;
    if (!rc && check_warmup(sc, d)) rc = UTIL_EINPUT;
    if (!rc && check_endless(sc, d)) rc = UTIL_EINPUT;
    return rc;
}

int sim_scenario_load(cJSON *root, const mdl_catalog *catalog, const char *base_dir,
                      sim_scenario *out, util_diag *d)
{
    memset(out, 0, sizeof *out);
    util_diag_init(&out->warnings);
    out->json = root;
    if (!cJSON_IsObject(root)) return util_diag_add(d, "scenario: expected a JSON object");
    inherit_pools(root);
    if (expand_models(root, base_dir, d)) return UTIL_EINPUT;
    int rc = apply_calibration(root, catalog, base_dir, d);
    apply_engines(root, catalog);
    if (util_schema_apply(sim_scenario_fields, root, "", (void *)catalog, d)) return UTIL_EINPUT;
    return rc ? rc : build(out, catalog, base_dir, d);
}

void sim_scenario_fini(sim_scenario *sc)
{
    if (!sc) return;
    for (int i = 0; i < sc->n_pools; i++) {
        mdl_cost_fini(&sc->pools[i].cost);
        free(sc->pools[i].spec.by_class);
        sim__lr_fini(&sc->pools[i].lora);
    }
    wl_spec_fini(&sc->workload);
    free(sc->class_sched);
    sim__gw_fini(&sc->gateway);
    free(sc->models);
    util_diag_fini(&sc->warnings);
    free(sc->pools);
    cJSON_Delete(sc->json);
    memset(sc, 0, sizeof *sc);
}
