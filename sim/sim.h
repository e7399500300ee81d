/*
 * sim: the discrete-event engine of a serving cluster.
 *
 * A sim_scenario is a validated scenario file: the effective JSON (defaults
 * and overrides applied, kept for the record) plus the typed values the
 * engine runs on.  A sim_engine runs one scenario once: requests arrive from a
 * workloads/ source, a router sends each to a replica, and every replica runs
 * iteration-level (continuous) batching, asking models/ what each iteration
 * costs.  The engine computes no metric.  It emits facts -- one row per
 * request, one per replica -- through a sim_sink; record/ is the sink that
 * streams them into SQLite (the engine knows only the sink), and analysis/
 * derives every metric from there.
 *
 * Time is int64 nanoseconds inside the engine and seconds (double) in rows.
 * A run is deterministic: the same scenario and seed give identical rows.
 * Nothing here is process-global, so several engines may run in one process.
 */
#ifndef SIM_H
#define SIM_H

#include <signal.h>
#include <stdint.h>

#include "mdl.h"
#include "util.h"
#include "wl.h"

/* ---- scenario ---- */

/* The scheduler families (sim/sched.c) and the routers (sim/router.c):
 * X(ENUM, name) for each, the one list from which the enums, the scenario
 * schema's choices and the engine's tables are made, as record/schema.h
 * makes every table's columns. */
#define SIM_POLICIES(X)                                                                            \
    X(CONTINUOUS, continuous)                                                                      \
    X(PREFILL_FIRST, prefill_first)                                                                \
    X(CHUNKED, chunked)                                                                            \
    X(STATIC, static)

#define SIM_ROUTERS(X)                                                                             \
    X(ROUND_ROBIN, round_robin)                                                                    \
    X(RANDOM, random)                                                                              \
    X(LEAST_OUTSTANDING, least_outstanding)                                                        \
    X(LEAST_KV, least_kv)                                                                          \
    X(POWER_OF_TWO, power_of_two)                                                                  \
    X(CENTRAL, central_queue)     /* one queue per pool; a replica pulls when it can admit */     \
    X(PREFIX_AFFINITY, prefix_affinity) /* the longest cached prefix, traded against load */   \
    X(LORA_AFFINITY, lora_affinity) /* a replica holding the adapter, below a queue length */  \
    X(SESSION_AFFINITY, session_affinity) /* a task's last replica, below a queue length */

#define SIM__POLICY_ENUM(id, name) SIM_##id,
#define SIM__ROUTER_ENUM(id, name) SIM_ROUTER_##id,
typedef enum sim_policy { SIM_POLICIES(SIM__POLICY_ENUM) SIM_N_POLICIES } sim_policy;
typedef enum sim_router { SIM_ROUTERS(SIM__ROUTER_ENUM) SIM_N_ROUTERS } sim_router;
typedef enum sim_preemption { SIM_PREEMPT_RECOMPUTE, SIM_PREEMPT_SWAP } sim_preemption;
/* The scenario's names, NULL-terminated, in enum order. */
extern const char *const sim_policy_names[];
extern const char *const sim_router_names[];

/* The waiting queue's order (cluster.scheduler.scheduling_policy), for
 * every scheduler family: first come first served; vLLM's `priority`
 * (lower value first, arrival among equals, and a more urgent request that
 * cannot be admitted preempts the least urgent running one); or earliest
 * deadline first, aged (docs/scenario.md, "Priorities and deadlines"). */
typedef enum sim_order { SIM_ORDER_FCFS, SIM_ORDER_PRIORITY, SIM_ORDER_DEADLINE, SIM_N_ORDERS } sim_order;
extern const char *const sim_order_names[];

/* What a request carries for the scheduler and the record, by its class
 * (workload.classes[].priority, deadline_s, tenant). */
typedef struct sim_class_sched {
    int32_t priority;   /* lower is more urgent */
    double deadline_s;  /* after arrival; 0: none */
    const char *tenant; /* owned by the scenario's JSON, or NULL */
    int32_t model;      /* the index of its model in sim_scenario.models */
} sim_class_sched;

/* Speculative decoding (cluster.speculative, docs/speculative-decoding.md):
 * each step a drafter proposes k tokens per running sequence and the target
 * verifies k + 1 positions; a sequence keeps the accepted prefix and one
 * token more. */
#define SIM_SPEC_MAX_K WL_SPEC_MAX_K
/* n-gram lookup's host time, s per context token scanned: vLLM's proposer
 * (ngram_proposer.py, a KMP-style scan of each sequence's whole context on
 * one thread at v0.11) took 70.28 ms for a batch of 512 x 129,536 tokens
 * (66.3M) on the 4 x H100 host of vLLM PR #56732's microbenchmark. */
#define SIM_NGRAM_S_PER_TOKEN (70.28e-3 / 66.3e6)
/* How many of a sequence's k drafts a verification accepts: cdf[j] is
 * P(accepted drafts <= j), j = 0..k, the distribution every draw inverts. */
typedef struct sim_accept {
    double cdf[SIM_SPEC_MAX_K + 1];
    double mean; /* accepted drafts per verification */
} sim_accept;
typedef enum { SIM_SPEC_NONE = -1, SIM_SPEC_EAGLE, SIM_SPEC_EAGLE3, SIM_SPEC_MTP,
               SIM_SPEC_NGRAM, SIM_SPEC_DRAFT } sim_spec_method;
extern const char *const sim_spec_methods[]; /* by sim_spec_method, NULL-terminated */
typedef struct sim_spec {
    sim_spec_method method;
    int k;                      /* num_speculative_tokens */
    int lookahead;              /* KV slots held beyond the verified ones (vLLM: k for the
                                 * drafters that write KV, 0 for n-gram) */
    int pad;                    /* KV tokens a decoder holds beyond its context in a
                                 * speculative step: k drafts + lookahead */
    int64_t disable_above;      /* disable_by_batch_size: off while more run; 0: never */
    double lookup_s_per_token;  /* ngram: the host's lookup, s per context token scanned */
    sim_accept accept;          /* the pool's acceptance ... */
    sim_accept *by_class;       /* ... or a class's own (workload.classes[].speculative),
                                 * one a class, NULL when no class sets its own; owned */
    mdl_cost head;              /* the drafter's one forward pass: a one-layer head (eagle,
                                 * eagle3, mtp), or the whole draft model (draft) */
    double head_weight_bytes;   /* its weights beside the target's, all GPUs */
    double head_kv_bytes_per_token; /* the KV its layers keep, all GPUs, in the target's
                                     * shards (mdl_model_kv_shards) */
} sim_spec;

/* LoRA adapters (cluster.lora, docs/lora.md): max_loras GPU slots and a
 * CPU cache of max_cpu_loras adapters a replica, each kept least recently
 * used first; a request names its adapter (or the base model) as
 * workload.classes[].adapter says.  An adapter's bytes and the kernels'
 * cost are the model's (models/lora.c). */
typedef struct sim_lora {
    bool on;
    int max_loras, max_rank, max_cpu;
    int n_adapters;
    int32_t *rank;        /* [n_adapters]; owned */
    double *cdf;          /* [n_adapters]: the popularity's cumulative shares; owned */
    int32_t *by_class;    /* [classes]: adapter + 1, 0 the base model, SIM_LORA_DRAW a draw
                           * by the popularity; owned */
    double bytes_per_rank; /* an adapter's bytes a unit of rank, every layer, all GPUs */
    double gpu_bytes;     /* the slots: max_loras x max_lora_rank x bytes_per_rank */
    double disk_bw, disk_latency_s, cpu_latency_s; /* disk -> CPU; CPU -> GPU's latency */
    int launches;         /* LoRA kernel launches a layer a step (kernel_launches) */
    double floor_s;       /* the fixed time of each (kernel_floor_s) */
    double prefill_step_s; /* more for a step with adapters' prompt tokens, run without
                            * CUDA graphs (prefill_step_s; vLLM V0) */
} sim_lora;
#define SIM_LORA_DRAW (-1)

/* Unplanned failures and spot take-backs of a pool's replicas
 * (cluster.failures, docs/failures.md).  Times in seconds; 0: none.  The
 * lists of instants point into the scenario's JSON, which owns them. */
typedef struct sim_failures {
    double mtbf_s;           /* per GPU: a replica of g GPUs fails at rate g / mtbf_s */
    const cJSON *at_s;       /* failure instants, or NULL */
    double repair_s;         /* a replacement is made this long after; < 0: never */
    bool retry;              /* on_failure retry: held requests go back to the router */
    double spot_mtbf_s;      /* per replica: mean time between take-backs */
    const cJSON *spot_at_s;  /* take-back notices, or NULL */
    double notice_s;         /* a take-back's notice: it drains, then fails */
} sim_failures;
/* The default disk: a PCIe 4.0 NVMe SSD's sequential read, 7,450 MB/s
 * (Samsung 990 PRO's datasheet). */
#define SIM_LORA_DISK_BW 7.45e9
/* The LoRA kernels' launches a layer a step, vLLM v0.11: one lora_shrink
 * and one lora_expand (their slices fused into one launch) for each of
 * qkv_proj, o_proj, gate_up_proj and down_proj
 * (vllm/lora/punica_wrapper/punica_gpu.py add_lora_linear). */
#define SIM_LORA_LAUNCHES 8
/* The fixed time of each: vLLM PR #32425 (2026-01-15) profiled
 * _lora_expand_kernel at ~14 us before and ~10 us after its heuristic,
 * for gpt-oss-20b at batches of at most 16 (work a roofline puts far below
 * a microsecond), and found qkv_proj's shrink faster than its expand; the
 * lower figure, 10 us, for every launch. */
#define SIM_LORA_KERNEL_FLOOR_S 10e-6

/* The adapter + 1 drawn by the popularity for request id under seed. */
int32_t sim_lora_draw(const sim_lora *lr, uint64_t seed, int64_t id);

/* cluster.autoscaler (docs/autoscaling.md): the Kubernetes Horizontal Pod
 * Autoscaler's algorithm over one pool, every interval_s, on a metric per
 * replica seen scrape_delay_s late. */
typedef enum sim_as_metric {
    SIM_AS_QUEUE,       /* waiting requests per replica */
    SIM_AS_KV,          /* KV cache use fraction */
    SIM_AS_RUNNING,     /* running requests per replica */
    SIM_AS_UTILISATION, /* busy fraction over the last interval */
    SIM_AS_RPS,         /* arrivals per second per replica over the last interval */
} sim_as_metric;
extern const char *const sim_as_metric_names[];

/* A scaling policy (the HPA's behavior.scaleUp/scaleDown.policies): within
 * any period_s, at most value replicas (pods) or value % of the replicas
 * at the period's start (percent) added, or removed. */
typedef enum sim_as_policy_type { SIM_AS_PODS, SIM_AS_PERCENT } sim_as_policy_type;
extern const char *const sim_as_policy_names[];
typedef struct sim_as_policy {
    sim_as_policy_type type;
    int value;
    double period_s;
} sim_as_policy;

/* Which policy bounds a move: the one allowing the most change, the least,
 * or none at all (the HPA's selectPolicy Max, Min, Disabled). */
typedef enum sim_as_select {
    SIM_AS_SELECT_MAX,
    SIM_AS_SELECT_MIN,
    SIM_AS_SELECT_DISABLED
} sim_as_select;
extern const char *const sim_as_select_names[];

#define SIM_AS_MAX_POLICIES 8
typedef struct sim_as_rules {
    sim_as_policy policy[SIM_AS_MAX_POLICIES];
    int n_policies;
    sim_as_select select;
} sim_as_rules;

typedef struct sim_autoscaler {
    bool on;
    sim_as_metric metric;
    double target;
    int min_replicas, max_replicas;
    int max_step;              /* most replicas added or removed a decision; 0: no limit */
    double interval_s, scrape_delay_s, up_window_s, down_window_s;
    sim_as_rules up, down;     /* scale_up_policies / scale_down_policies and their select */
} sim_autoscaler;

/* cluster.lifecycle: how long a replica the autoscaler adds takes before it
 * serves -- a node's provisioning, the model's load, the engine's warm-up --,
 * how slowly it serves its first requests, and how a replica let go lets go
 * of its work.  The scenario's own replicas are ready, and warm, at time 0. */
typedef struct sim_lifecycle {
    double provision_s, load_s, warm_up_s; /* load_s: given, or weight bytes / read_bw */
    double read_bw;                        /* storage's bytes/s; 0 when load_s was given */
    int64_t warm_up_requests; /* a new replica's iterations are slower until it served these */
    double warm_up_factor;    /* ... by this factor (1: not slower) */
    int drain;                /* on scale-down and a spot notice: a sim__drain (sim_int.h) */
} sim_lifecycle;

/* cluster.lifecycle.drain's names, in sim__drain's order. */
extern const char *const sim_lc_drain_names[];
/* A local NVMe SSD's sequential read (Samsung 990 PRO datasheet, as
 * SIM_LORA_DISK_BW) and a network filesystem's most per client (Amazon EFS,
 * Elastic throughput: 1,500 MiBps per client, "Amazon EFS performance
 * specifications"). */
#define SIM_STORAGE_NVME_BW SIM_LORA_DISK_BW
#define SIM_STORAGE_NETFS_BW (1500.0 * 1048576.0)

/* Identical replicas of one model on one kind of GPU, run by one engine.
 * The engine preset (cluster.engine) gave every scheduler and host key the
 * scenario did not set; the host latencies per iteration are in cost
 * (host_step_s, host_step_s_per_seq, host_overlap). */
typedef struct sim_pool {
    const char *name;
    const char *engine;         /* the preset's id (catalog "engines") */
    int index, replicas; /* replicas: how many the scenario starts with */
    int tensor_parallel, pipeline_parallel, gpus; /* gpus = tensor x pipeline, per replica */
    sim_policy policy;
    int max_batch;              /* sequences in one iteration */
    int64_t max_batched_tokens; /* tokens computed in one iteration (prompt tokens, or all) */
    double gpu_memory_utilization;
    int block_tokens;           /* tokens per KV block */
    int64_t kv_blocks;          /* KV blocks per replica */
    double activation_reserve_bytes; /* per GPU */
    sim_preemption preemption;
    bool prefix_caching;        /* a preempted sequence's blocks stay cached until reused */
    bool reserve_full_isl;      /* admission needs the whole prompt's blocks free */
    double swap_space_bytes;    /* host memory for swapped KV, per replica */
    double batch_timeout_s;     /* static batching */
    bool async_scheduling;      /* the host plans iteration n + 1 while the GPU runs n */
    sim_order order;            /* the waiting queue's order (scheduling_policy) */
    double deadline_aging;      /* deadline: how much a second waited brings the deadline in */
    /* Host latencies outside the GPU kernels (cluster.host), seconds.  A
     * request reaches a replica's queue frontend_s + frontend_s_per_token x
     * its prompt after the router chose it (HTTP, tokenisation); its tokens
     * reach the client output_s after the iteration that made them ends, and
     * its owner (closed-loop user, agent task) learns of its end that late. */
    double frontend_s;
    double frontend_s_per_token;
    double output_s;
    mdl_cost cost;              /* holds the GPU and the model */
    double usd_per_gpu_hour;    /* cost.usd_per_gpu_hour, else the GPU's catalog price */
    sim_spec spec;              /* speculative decoding (cluster.speculative) */
    sim_lora lora;              /* LoRA adapters (cluster.lora) */
    sim_failures failures;      /* cluster.failures */
    sim_autoscaler autoscaler;  /* cluster.autoscaler; .on false without it */
    sim_lifecycle lifecycle;    /* cluster.lifecycle: a new replica's start-up */
    int model;                  /* the index of its model in sim_scenario.models */
} sim_pool;

/* The gateway in front of the replicas (cluster.gateway, docs/gateway.md):
 * per tenant a token bucket of input tokens and a share of the batch slots,
 * a queue that holds requests while their model's replicas are saturated,
 * and shedding of the sheddable tiers then. */
typedef struct sim_gw_tenant {
    const char *name;        /* owned by the scenario's JSON */
    double rate, burst;      /* input tokens a second, and the bucket's size; rate 0: none */
    double share;            /* of the batch slots of its model's replicas; 0: no limit */
} sim_gw_tenant;
typedef struct sim_gateway {
    bool on;
    int64_t queue_capacity;  /* requests held at once; 0: no limit */
    double ttl_s;            /* a held request is refused after this; 0: never */
    double queue_depth_threshold, kv_cache_threshold; /* saturation, as GIE computes it */
    int32_t shed_priority;   /* requests of this priority or above are shed while saturated */
    sim_gw_tenant *tenants;  /* [n_tenants]; owned */
    int n_tenants;
} sim_gateway;

typedef struct sim_scenario {
    cJSON *json; /* the effective scenario; owned */
    const char *name;
    uint64_t seed;
    int64_t stop_requests;  /* arrivals stop after this many; 0: no limit */
    double stop_duration_s; /* arrivals stop at this time; 0: no limit */
    int64_t max_in_flight;  /* stop.max_in_flight: the overload guard's limit; 0: the default */
    double warmup_s;
    sim_pool *pools;
    int n_pools;
    int replicas; /* over all pools */
    sim_router router;
    double prefix_weight; /* prefix_affinity: weight of tokens to prefill against load */
    int64_t lora_queue_threshold; /* lora_affinity: waiting requests above which a replica
                                   * holding the adapter is no longer preferred */
    int64_t session_queue_threshold; /* session_affinity: waiting requests at which a task
                                      * leaves the replica of its last call */
    int lora_pool; /* the pool whose cluster.lora names the fleet's adapters; -1: none */
    /* disaggregated prefill and decode: pool indices, -1 when not */
    int disagg_prefill, disagg_decode;
    double link_bw, link_latency_s; /* the KV transfer link */
    /* the models the fleet serves, by the pools' resolved model ids in the
     * order of their first pool (one when disaggregated: the prefill pool's);
     * a class's requests go only to the replicas of its model's pools */
    const char **models; /* [n_models]; the ids are the pools' */
    int n_models;
    wl_spec workload;
    sim_class_sched *class_sched; /* [workload.n_classes]; owned */
    sim_gateway gateway;          /* cluster.gateway */
    /* cluster.kv_offload (docs/kv-offload.md): a CPU tier per replica (per
     * node: per_node) below its prefix cache; cpu_bytes 0: none */
    struct {
        double cpu_bytes, cpu_latency_s;
        bool all;      /* offload: "all" (replies' blocks too), else "prompt_only" */
        bool per_node; /* scope: "node", the tiers shared by a node's replicas */
        /* a disk tier below the CPU tier; disk_bytes 0: none */
        double disk_bytes, disk_read_bw, disk_latency_s;
    } kv_offload;
    util_diag warnings; /* what is allowed but doubtful (a model's parameters off its
                         * dimensions), for the caller to show */
} sim_scenario;

extern const util_field sim_scenario_fields[];

/* Validates root against the scenario schema (collecting every error),
 * fills defaults, and builds the typed scenario.  Files the scenario names
 * are relative to base_dir (the scenario file's folder; NULL: the current
 * directory).  Takes ownership of root in every case, and out is the
 * caller's to sim_scenario_fini in every case, refused or not.  Returns 0
 * or UTIL_EINPUT with messages in d. */
int sim_scenario_load(cJSON *root, const mdl_catalog *catalog, const char *base_dir,
                      sim_scenario *out, util_diag *d);
void sim_scenario_fini(sim_scenario *sc);

/* ---- the facts a run emits ---- */

/* Request outcome, the `status` column. */
#define SIM_COMPLETED "completed"
#define SIM_REJECTED "rejected"     /* can never fit this replica: refused at arrival, or its
                                     * recompute after a preemption is over the token budget */
#define SIM_UNFINISHED "unfinished" /* still in flight when the run was interrupted */
#define SIM_TIMED_OUT "timed_out"   /* its client gave up (workload.timeout_s) */
#define SIM_FAILED "failed"         /* a task: one of its calls was rejected or timed out */

/* Why a request was rejected, the `reason` column: the gateway's refusals
 * (shed while saturated, its queue full, held past its time-to-live, over
 * its tenant's token budget), no replica of its model ready, or too long
 * for any replica's KV cache or token budget. */
#define SIM_SHED "shed"
#define SIM_QUEUE_FULL "queue_full"
#define SIM_TTL "ttl"
#define SIM_BUDGET "budget"
#define SIM_NO_REPLICA "no_replica"
#define SIM_TOO_LONG "too_long"

typedef struct sim_request_row {
    int64_t id;
    const char *cls;      /* its class's name */
    int64_t task_id;      /* its agent task, or -1 */
    int32_t call_index;   /* its place in the task (0, 1, ...), or -1 */
    int replica;        /* that prefilled it; -1 when it never reached one */
    int decode_replica; /* disaggregated: that decoded it; -1 otherwise */
    const char *status;
    double arrival_s, enqueue_s, first_scheduled_s, first_token_s, finish_s; /* NAN: never */
    double decode_enqueue_s; /* disaggregated: its KV cache reached the decode replica */
    /* the engine core's clock: its first and last tokens left the engine
     * (first_token_s and finish_s are the client's, host.output_s later;
     * the database derives these from replicas.output_s) */
    double engine_first_token_s, engine_finish_s;
    int32_t prompt_tokens, output_tokens;
    int32_t cached_tokens; /* prompt tokens served from the prefix cache at first scheduling */
    /* ... of them, those kv_offload's CPU tier and disk tier served; -1:
     * the scenario has no such tier */
    int32_t cpu_hit_tokens, disk_hit_tokens;
    int32_t preemptions;
    int slow;
    int32_t priority;   /* its class's (0 unless set) */
    double deadline_s;  /* its class's, after arrival; NAN: none */
    const char *tenant; /* its class's, or NULL */
    const char *reason; /* why it was rejected (SIM_SHED, ...), or NULL */
    int64_t retry_of;   /* the attempt it retries (workload.retry), or -1 */
    bool retried;       /* its client sent it again: a later row is the call's outcome */
    int32_t restarts;       /* times a failed or stopped replica sent it back to the router */
    int32_t restarted_from; /* the last such replica, or -1 */
} sim_request_row;

/* How a replica left the cluster, the `end_reason` column: it was still
 * there when the run ended, it was drained, it failed (SIM_FAILED), or a
 * spot notice took it back (SIM_TAKEN_BACK). */
#define SIM_END_OF_RUN "end_of_run"
#define SIM_DRAINED "drained"
#define SIM_TAKEN_BACK "taken_back" /* a spot take-back: drained at its notice, or failed at its end */

typedef struct sim_replica_row {
    int replica;
    const char *pool, *gpu, *model;
    int gpus;
    double busy_s, prefill_s, decode_s;
    int64_t iterations;
    double flops, bytes;   /* performed over the run, all its GPUs */
    double batch_seq_s;    /* integral of sequences in the running iteration over busy time */
    int64_t kv_capacity_tokens, kv_peak_tokens;
    double weight_bytes;       /* the model's weights as served (quantization), all its GPUs */
    double kv_bytes_per_token; /* one token's KV (kv_cache_dtype), all its GPUs */
    int64_t preemptions;
    int64_t prefill_tokens; /* prompt tokens computed, recomputation included */
    int64_t decode_tokens;  /* tokens produced by decode steps (a prefill produces one more) */
    double swap_bytes;     /* KV copied to and from host memory */
    int64_t evicted_blocks; /* prefix cache: blocks of reusable content evicted */
    /* kv_offload's CPU tier (all 0 without one): its size; at first
     * schedulings, the prompt tokens the GPU cache missed and those the tier
     * served; KV bytes copied into it and loaded from it */
    double cpu_tier_bytes;
    int64_t cpu_lookup_tokens, cpu_hit_tokens;
    double cpu_stored_bytes, cpu_loaded_bytes;
    /* ... and its disk tier's, the same figures */
    double disk_tier_bytes;
    int64_t disk_lookup_tokens, disk_hit_tokens;
    double disk_stored_bytes, disk_loaded_bytes;
    int64_t out_of_range;  /* table cost model: iterations looked up outside the measurements */
    double peak_flops, peak_bw; /* datasheet peaks of all its GPUs, for MFU and MBU */
    double tdp_w, idle_w, prefill_w, decode_w; /* one GPU's draw: limit, idle, and at the
                                                * catalog's prefill and decode efficiencies */
    double energy_j;       /* drawn by all its GPUs while busy (idle time: idle_w) */
    double kv_token_s;     /* integral of KV tokens in use over time */
    double usd_per_gpu_hour;
    /* its life: made, ready to take work (NAN: never), and out of the
     * cluster, for end_reason */
    double created_s, ready_s, retired_s;
    const char *end_reason;
    double drain_s; /* when it began to drain (scale-down, spot notice, stop); NAN: never */
    double output_s; /* its pool's host.output_s: the client sees its tokens that late */
    /* speculative decoding: K (0: none); the steps that speculated and the
     * decode steps that did not; the (sequence, step) verifications, the
     * drafts they proposed and accepted; the time drafting, and the rest
     * of the speculative steps (verifying) */
    int64_t spec_k, spec_steps, spec_off_steps, spec_drafts, spec_draft_tokens, spec_accepted;
    double spec_drafting_s, spec_verify_s;
    /* LoRA: max_loras (0: none); admissions of a request for an adapter,
     * those whose adapter was in a GPU slot, and of the rest those found in
     * the CPU cache (the others loaded from disk); the loads' time and the
     * LoRA kernels' */
    int64_t lora_slots, lora_lookups, lora_gpu_hits, lora_cpu_hits;
    double lora_load_s, lora_kernel_s;
} sim_replica_row;

/* One engine iteration (with --record-iterations): a decode run is one row
 * per step. */
typedef struct sim_iteration_row {
    int replica;
    double start_s, end_s;
    /* the step's pipeline (docs/engines.md): when the engine's scheduler
     * planned it, when its GPU work ran, when its tokens reached the client */
    double scheduled_s, gpu_start_s, gpu_end_s, client_s;
    int32_t prefill_tokens; /* prompt tokens computed */
    int32_t decode_seqs;    /* sequences decoding a token (static batching: padding included) */
    /* the tokens the decoders streamed: one each, and under speculative
     * decoding the drafts each accepted with it, in one chunk */
    int32_t decode_tokens;
    /* a speculative step's K (0: the step did not speculate), and its
     * decoders by the drafts each accepted, 0..spec_k */
    int32_t spec_k;
    int32_t accepted[SIM_SPEC_MAX_K + 1];
    int64_t kv_tokens;      /* tokens' worth of KV blocks in use */
    /* tokens' worth of KV blocks kv_offload's CPU and disk tiers hold as
     * the step ends; -1: the replica has no such tier */
    int64_t cpu_tier_tokens, disk_tier_tokens;
    double flops, bytes;    /* all its GPUs */
    double energy_j;        /* all its GPUs */
} sim_iteration_row;

/* One agent task: a user-visible job of several model calls. */
typedef struct sim_task_row {
    int64_t id;
    const char *cls;
    const char *status;   /* SIM_COMPLETED, SIM_FAILED or SIM_UNFINISHED */
    double start_s;       /* its first call was sent */
    double finish_s;      /* its last call finished (NAN unless completed) */
    int32_t calls;        /* calls made */
    int32_t slow_calls;   /* of them, stragglers */
} sim_task_row;

/* Where facts go.  A callback returning non-zero stops the run (the sink
 * keeps its own error message). */
typedef struct sim_sink {
    void *ctx;
    int (*request)(void *ctx, const sim_request_row *row);
    int (*replica)(void *ctx, const sim_replica_row *row);
    int (*task)(void *ctx, const sim_task_row *row); /* may be NULL */
    int (*iteration)(void *ctx, const sim_iteration_row *row); /* NULL: none are emitted */
} sim_sink;

/* ---- engine ---- */

typedef struct sim_engine sim_engine;

typedef struct sim_progress {
    double sim_s;
    int64_t arrived, done, events;
} sim_progress;

typedef void (*sim_progress_fn)(const sim_progress *p, void *arg);

/* sim_engine_run's status when the cluster could not keep up with its
 * arrivals (see sim_engine_reason for which of the two signs it showed). */
enum { SIM_EOVERLOAD = -10 };

/* Simulated times end at this horizon (1e9 s, about 31 years): far past any
 * real run, and far enough below int64 nanoseconds' range (292 years) that
 * the sum of two times can never overflow.  A run that would schedule an
 * event past it fails as bad input. */
#define SIM_HORIZON_S 1e9

/* The scenario must outlive the engine.  The engine starts with its
 * overload guard on: see sim_engine_limit_in_flight. */
sim_engine *sim_engine_create(const sim_scenario *sc, const sim_sink *sink);
void sim_engine_destroy(sim_engine *e);
/* Overload, the one definition: a run is overloaded when (a) more than
 * `limit` requests are in flight (sent and not ended) at any time -- the run
 * stops there, so no run of an overloaded cluster outgrows its memory or its
 * time -- or (b) for open-loop arrivals, when just after the last arrival
 * more were in flight than twice the batch slots plus a tenth of all
 * requests sent (a queue that a short run drains but that grew with it).  The default limit is twice the cluster's batch slots plus
 * 1,000 (closed-loop users can never exceed their number, so the limit is at
 * least that plus one); 0 turns the guard off, (a) and (b): the engine's own
 * tests drive queues past capacity on purpose.  A scenario's
 * stop.max_in_flight replaces the default: that limit, (a) alone, is then
 * the whole guard (a bursty trace may hold more in flight without a
 * growing queue). */
void sim_engine_limit_in_flight(sim_engine *e, int64_t limit);
/* Runs to the end, or until *stop becomes non-zero (checked before every
 * event), calling progress every few thousand events.  Returns 0, UTIL_EINTR
 * when stopped, SIM_EOVERLOAD when overloaded (either way in-flight requests
 * are emitted as unfinished), UTIL_EINPUT when an event time would pass
 * SIM_HORIZON_S, or UTIL_EFAIL when the sink or a trace failed. */
int sim_engine_run(sim_engine *e, const volatile sig_atomic_t *stop, sim_progress_fn progress,
                   void *arg);
void sim_engine_progress(const sim_engine *e, sim_progress *out);
/* Why a run failed when the sink did not fail (a trace that could not be
 * read, the horizon), or NULL. */
const char *sim_engine_error(const sim_engine *e);
/* Why the run was overloaded, in words with its figures, or NULL. */
const char *sim_engine_reason(const sim_engine *e);

/* ---- how a run ended ---- */

/* A run's status, the `runs.status` column: one enum for every command. */
typedef enum sim_status {
    SIM_STATUS_COMPLETED,   /* every request ended */
    SIM_STATUS_INTERRUPTED, /* stopped on request (a signal); what was recorded is kept */
    SIM_STATUS_OVERLOADED,  /* the cluster could not keep up (sim_engine_limit_in_flight) */
    SIM_STATUS_FAILED,      /* nothing was recorded: the error says why */
} sim_status;
/* "completed", "interrupted", "overloaded", "failed". */
extern const char *const sim_status_names[];


#endif /* SIM_H */
