/*
 * spec.c: the `workload` section -- its schema and its translation into a
 * wl_spec: arrival streams, request classes, agent shapes, the delays before
 * the model, stragglers and client time-outs.
 *
 * Without `classes`, the workload is one class, "default", made of the
 * workload-level keys.  With them, each class takes what it does not set
 * (lengths, agent) from the workload level, and either a share (`weight`) of
 * the shared `workload.arrival` stream or an arrival process of its own.
 *
 * `shared_prefix` gives the prompts instead of a distribution: it stands
 * where workload.prompt_tokens would (so setting both is an error), and a
 * class with prompt_tokens of its own draws its prompts from them instead.
 */
#include "wl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* vLLM's `vllm bench serve` (vllm/benchmarks/serve.py, vllm-project/vllm
 * at 009e6d4a1cd6): --request-rate inf gives every request a delay of 0,
 * and --max-concurrency makes each request, generated on the rate's
 * schedule, wait on an asyncio.Semaphore before it is sent; the request's
 * start_time, from which TTFT and latency count, is taken at the send.
 * servesim does the same: "inf" puts every arrival at time 0, and a capped
 * stream's arrival is its send (sim/client.c). */
#define RATE_DOC "mean arrival rate; \"inf\": every request at time 0 (vllm bench serve's " \
                 "--request-rate inf)"
#define MAX_CONCURRENCY_FIELD                                                                    \
    {.key = "max_concurrency", .type = UTIL_T_INTEGER, .unit = "requests", .min = 1, .max = 1e7, \
     .doc = "most of the stream's requests (agent tasks) in flight: one due while that many "    \
            "are in flight waits at the client, sent when one ends, its TTFT counted from the "  \
            "send (vllm bench serve's --max-concurrency; absent: no cap)"}

static const util_field rate_fields[] = {
    {.key = "rate_per_s", .type = UTIL_T_NUMBER, .unit = "1/s", .min = WL_MIN_RATE_PER_S,
     .max = 1e9, .flags = UTIL_REQUIRED | UTIL_INF_OK, .doc = RATE_DOC},
    MAX_CONCURRENCY_FIELD,
    {0},
};

static const util_field gamma_fields[] = {
    {.key = "rate_per_s", .type = UTIL_T_NUMBER, .unit = "1/s", .min = WL_MIN_RATE_PER_S,
     .max = 1e9, .flags = UTIL_REQUIRED | UTIL_INF_OK, .doc = RATE_DOC},
    {.key = "cv", .type = UTIL_T_NUMBER, .min = 0, .max = 100,
     .flags = UTIL_REQUIRED | UTIL_MIN_EXCLUSIVE,
     .doc = "coefficient of variation of the gaps (1: Poisson; > 1 bursty); cv^2 / rate_per_s "
            "at most 1e7 s"},
    MAX_CONCURRENCY_FIELD,
    {0},
};

static const util_field closed_fields[] = {
    {.key = "users", .type = UTIL_T_INTEGER, .min = 1, .max = 1e7, .flags = UTIL_REQUIRED,
     .doc = "concurrent clients, each with one request (or task) in flight"},
    {.key = "think_s", .type = UTIL_T_UNION, .unit = "s", .un = &wl_dist_schema,
     .def = "{\"dist\": \"fixed\", \"value\": 0}",
     .doc = "pause between a reply (a task's end) and the user's next request"},
    {0},
};

static const util_field trace_fields[] = {
    {.key = "path", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED,
     .doc = "trace file; relative to the scenario file's folder"},
    {.key = "format", .type = UTIL_T_STRING, .def = "\"auto\"", .choices = wl_trace_formats,
     .doc = "csv (arrival_time_s,input_tokens,output_tokens[,hash_ids]), azure, mooncake, or "
            "auto; a row may carry its own priority, deadline_s and tenant (named csv or azure "
            "columns, mooncake keys)"},
    {.key = "hash_block_tokens", .type = UTIL_T_INTEGER, .unit = "tokens", .def = "512",
     .min = 1, .max = 1e6,
     .doc = "tokens each of the trace's hash ids names (Mooncake's hash_ids: 512); a final "
            "partial block is the prompt's own"},
    {.key = "time_scale", .type = UTIL_T_NUMBER, .def = "1", .min = 0, .max = 1e9,
     .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "multiplies every arrival time: 2 is half the rate (the replay within 1e9 s)"},
    {.key = "rate_per_s", .type = UTIL_T_NUMBER, .unit = "1/s", .min = WL_MIN_RATE_PER_S,
     .max = 1e9,
     .doc = "rescale arrival times so that the replayed requests' mean rate, (n - 1) gaps over "
            "their span, is this"},
    {.key = "start_s", .type = UTIL_T_NUMBER, .unit = "s", .def = "0", .min = 0,
     .max = WL_HORIZON_S, .doc = "replay from this trace time on (it becomes time 0)"},
    {.key = "limit", .type = UTIL_T_INTEGER, .unit = "requests", .def = "0", .min = 0,
     .max = 1e13, .doc = "replay at most this many requests (0: all)"},
    {.key = "loop", .type = UTIL_T_BOOL, .def = "false",
     .doc = "start the trace over at its end, for as long as stop allows"},
    MAX_CONCURRENCY_FIELD,
    {0},
};

static const util_variant arrival_variants[] = {
    {"poisson", rate_fields, "open loop, exponential gaps"},
    {"constant", rate_fields, "open loop, equal gaps"},
    {"gamma", gamma_fields, "open loop, gamma gaps (burstiness)"},
    {"closed", closed_fields, "closed loop: fixed concurrency"},
    {"trace", trace_fields, "open loop, times and lengths replayed from a file"},
    {0},
};

static const util_union arrival_schema = {.tag = "process", .def = "poisson",
                                          .variants = arrival_variants};

/* workload.sessions.history: "full", or {"max_tokens": N}. */
static const util_field history_fields[] = {
    {.key = "max_tokens", .type = UTIL_T_INTEGER, .unit = "tokens", .min = 1, .max = 1e9,
     .flags = UTIL_REQUIRED,
     .doc = "a call's (turn's) prompt is at most this many tokens: the history is cut from its "
            "front (the last max_tokens tokens are sent)"},
    {0},
};

/* A history's name: "full" (sessions), or "full" or "none" (agents: ctx non-NULL). */
static int check_history(cJSON *item, const char *path, void *ctx, util_diag *d)
{
    if (!cJSON_IsString(item) || !strcmp(item->valuestring, "full") ||
        (ctx && !strcmp(item->valuestring, "none")))
        return UTIL_OK;
    return util_diag_add(d, "%s: '%s' is not a history (expected \"full\"%s or "
                            "{\"max_tokens\": N})", path, item->valuestring,
                         ctx ? ", \"none\"" : "");
}

static int check_agent_history(cJSON *item, const char *path, void *ctx, util_diag *d)
{
    (void)ctx;
    return check_history(item, path, "agent", d);
}

static const char *const agent_modes[] = {"sequential", "parallel", "map_reduce", NULL};

static const util_field agent_fields[] = {
    {.key = "mode", .type = UTIL_T_STRING, .choices = agent_modes, .flags = UTIL_REQUIRED,
     .doc = "sequential (a chain), parallel (fan-out and join), map_reduce (fan-out, then one "
            "aggregating call)"},
    {.key = "calls", .type = UTIL_T_INTEGER, .unit = "calls", .min = 1, .max = 1e6,
     .flags = UTIL_REQUIRED, .doc = "model calls of a task (map_reduce: of its fan-out)"},
    {.key = "tool_output_tokens", .type = UTIL_T_UNION, .unit = "tokens", .un = &wl_dist_schema,
     .def = "{\"dist\": \"fixed\", \"value\": 0}",
     .doc = "sequential: tokens a tool adds to the next call's prompt; parallel and map_reduce "
            "with a history: each fan-out call's own tokens after the shared history"},
    {.key = "tool_s", .type = UTIL_T_UNION, .unit = "s", .un = &wl_dist_schema,
     .def = "{\"dist\": \"fixed\", \"value\": 0}",
     .doc = "sequential: time a tool takes between two calls"},
    {.key = "history", .type = UTIL_T_NAME_OR_OBJECT, .sub = history_fields,
     .check = check_agent_history,
     .doc = "what each call's prompt carries of the task: \"full\" (sequential: the first "
            "prompt and every reply and tool result since; parallel: the task's prompt, shared "
            "by the fan-out's calls, map_reduce's last call adding their replies), \"none\" "
            "(each call its own prompt), or {\"max_tokens\": N}, full cut to its last N tokens. "
            "Default: full for sequential, none for parallel and map_reduce (docs/scenario.md, "
            "\"Agent tasks\")"},
    {0},
};

/* workload.sessions: multi-turn chat (docs/scenario.md, "Sessions"). */
static const util_field session_fields[] = {
    {.key = "turns", .type = UTIL_T_UNION, .unit = "turns", .un = &wl_dist_schema,
     .flags = UTIL_REQUIRED, .doc = "turns (model calls) of a session, drawn as it starts"},
    {.key = "user_tokens", .type = UTIL_T_UNION, .unit = "tokens", .un = &wl_dist_schema,
     .flags = UTIL_REQUIRED,
     .doc = "the new tokens a user adds to the history in each turn after the first (the "
            "first turn's prompt is prompt_tokens' draw)"},
    {.key = "think_s", .type = UTIL_T_UNION, .unit = "s", .un = &wl_dist_schema,
     .def = "{\"dist\": \"fixed\", \"value\": 0}",
     .doc = "pause between a turn's reply and the next turn"},
    {.key = "history", .type = UTIL_T_NAME_OR_OBJECT, .sub = history_fields, .def = "\"full\"",
     .check = check_history,
     .doc = "what each turn sends of the conversation before it: \"full\" (every earlier "
            "prompt and reply), or {\"max_tokens\": N}, its last N tokens"},
    {0},
};

/* Targets in seconds, bounded where common figures in milliseconds would
 * land (ttft_s: 500 meant 0.5 s): five minutes for a first token (a
 * million-token prefill), an hour for a whole reply, 10 s for one output
 * token.  Each metric also takes targets on the run's mean and percentiles
 * (ttft_p99_s), with the same bounds: the forms `report --slo` takes, p99.9
 * spelt p999 since a dot would split the key in a --set path. */
#define SLO_TARGET(m, form, what, max_s)                                                           \
    {.key = m "_" form "_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = max_s,          \
     .flags = UTIL_MIN_EXCLUSIVE, .doc = what " target over the requests (report: met or not)"}
#define SLO_TARGETS(m, name, max_s)                                                                \
    SLO_TARGET(m, "mean", "mean " name, max_s), SLO_TARGET(m, "p50", "P50 " name, max_s),          \
        SLO_TARGET(m, "p90", "P90 " name, max_s), SLO_TARGET(m, "p95", "P95 " name, max_s),        \
        SLO_TARGET(m, "p99", "P99 " name, max_s), SLO_TARGET(m, "p999", "P99.9 " name, max_s)

const util_field wl_slo_fields[] = {
    {.key = "ttft_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 300,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "time-to-first-token target per request"},
    {.key = "tpot_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 10,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "time-per-output-token target (first token excluded)"},
    {.key = "e2e_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 3600,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "end-to-end latency target per request"},
    {.key = "task_e2e_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 86400,
     .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "agent task target: its first call's arrival to its last call's end"},
    SLO_TARGETS("ttft", "TTFT", 300),
    SLO_TARGETS("tpot", "TPOT", 10),
    SLO_TARGETS("tpot_incl_ttft", "TPOT incl. TTFT (e2e / output tokens)", 10),
    SLO_TARGETS("e2e", "end-to-end latency", 3600),
    {0},
};

static const util_field class_speculative_fields[] = {
    WL_ACCEPTANCE_FIELDS("workload.classes[].speculative"),
    {0},
};

const char *const wl_tier_names[] = {"critical", "standard", "batch", "sheddable", "background",
                                      NULL};
const int wl_tier_values[] = {-1, 0, 1, 2, 3};

static const util_field class_fields[] = {
    {.key = "name", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED,
     .doc = "class name (requests.class)"},
    {.key = "weight", .type = UTIL_T_NUMBER, .min = 0, .max = 1e12, .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "share of workload.arrival's requests (or give the class its own arrival)"},
    {.key = "arrival", .type = UTIL_T_UNION, .un = &arrival_schema,
     .doc = "the class's own arrival process (instead of a weight)"},
    {.key = "dataset", .type = UTIL_T_STRING, .choices = wl_dataset_names,
     .doc = "a built-in dataset whose (prompt, output) pairs give both lengths, drawn together "
            "(instead of prompt_tokens and output_tokens)"},
    {.key = "prompt_tokens", .type = UTIL_T_UNION, .unit = "tokens", .un = &wl_dist_schema,
     .doc = "prompt length (default: workload.prompt_tokens)"},
    {.key = "output_tokens", .type = UTIL_T_UNION, .unit = "tokens", .un = &wl_dist_schema,
     .doc = "reply length (default: workload.output_tokens)"},
    {.key = "agent", .type = UTIL_T_OBJECT, .sub = agent_fields,
     .doc = "the class's requests are agent tasks (default: workload.agent)",
     .conflicts = "workload.classes[].sessions"},
    {.key = "sessions", .type = UTIL_T_OBJECT, .sub = session_fields,
     .doc = "the class's arrivals are chat sessions of several turns (default: "
            "workload.sessions)"},
    {.key = "slo", .type = UTIL_T_OBJECT, .sub = wl_slo_fields,
     .doc = "the class's targets (each replaces the scenario-level one)"},
    {.key = "speculative", .type = UTIL_T_OBJECT, .sub = class_speculative_fields,
     .doc = "the class's own acceptance of speculative drafts, one of the three keys (replaces "
            "cluster.speculative's for its requests)"},
    {.key = "priority", .type = UTIL_T_INTEGER, .min = WL_PRIORITY_MIN, .max = WL_PRIORITY_MAX,
     .choices = wl_tier_names,
     .doc = "a tier (critical, standard, batch, sheddable, background) or vLLM's integer, lower "
            "more urgent (default: standard, 0); the scheduler's order under "
            "scheduling_policy priority"},
    {.key = "deadline_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = WL_HORIZON_S,
     .flags = UTIL_MIN_EXCLUSIVE,
     .doc = "the class's deadline after arrival, which scheduling_policy deadline orders by "
            "(default: none)"},
    {.key = "tenant", .type = UTIL_T_STRING, .doc = "who sends the class's requests (recorded)"},
    {.key = "model", .type = UTIL_T_STRING,
     .doc = "the model its requests are for, the model id of some pool (a catalog id, or an "
            "inline model's id); its requests go only to that model's pools (default: the "
            "pools' model, required when the pools serve several)"},
    {.key = "adapter", .type = UTIL_T_STRING,
     .doc = "the LoRA adapter its requests are for, a name of cluster.lora's, or \"*\": each "
            "request draws one by cluster.lora.zipf_s's popularity (absent: the base model; "
            "docs/lora.md)"},
    {0},
};

static const char *const prefix_orders[] = {"shuffled", "ordered", NULL};

/* The lengths default to inference-perf's (config.py, SharedPrefix); the
 * counts are required, since an object whose keys all have defaults would be
 * made by the schema where the scenario has none. */
static const util_field shared_prefix_fields[] = {
    {.key = "num_groups", .type = UTIL_T_INTEGER, .min = 1, .max = 1e6, .flags = UTIL_REQUIRED,
     .doc = "groups, each with its own system prompt"},
    {.key = "num_prompts_per_group", .type = UTIL_T_INTEGER, .min = 1, .max = 1e6,
     .flags = UTIL_REQUIRED,
     .doc = "distinct prompts (questions) per group; num_groups x this at most 1e7"},
    {.key = "system_prompt_len", .type = UTIL_T_INTEGER, .unit = "tokens", .def = "100",
     .min = 1, .max = 1e9, .doc = "a group's system prompt, shared by each of its prompts"},
    {.key = "question_len", .type = UTIL_T_INTEGER, .unit = "tokens", .def = "50", .min = 1,
     .max = 1e9, .doc = "a prompt's own question, after the system prompt"},
    {.key = "order", .type = UTIL_T_STRING, .def = "\"shuffled\"", .choices = prefix_orders,
     .doc = "shuffled: one seeded permutation of every prompt, repeated (inference-perf); "
            "ordered: group by group (SGLang --gsp-ordered)"},
    {0},
};

static const util_field slow_fields[] = {
    {.key = "probability", .type = UTIL_T_NUMBER, .min = 0, .max = 1, .flags = UTIL_REQUIRED,
     .doc = "chance that a call is slow, independently of every other (with of: the share "
            "slow)"},
    {.key = "of", .type = UTIL_T_INTEGER, .unit = "calls", .min = 1, .max = 1e13,
     .doc = "exactly probability x of of each consecutive `of` calls are slow (a whole "
            "number), placed at random among them, instead of each call independently"},
    {.key = "extra_s", .type = UTIL_T_UNION, .unit = "s", .un = &wl_dist_schema,
     .flags = UTIL_REQUIRED, .doc = "how much longer a slow call takes to reach the router"},
    {0},
};

/* workload.retry.  The defaults are the OpenAI Python client's (openai-python
 * v1.x, _constants.py and _base_client.py _calculate_retry_timeout): two
 * retries, 0.5 s doubling to at most 8 s, each less up to 25% at random. */
const char *const wl_retry_on_names[] = {"shed", "queue_full", "ttl", "budget", "rejected",
                                         "failed", "timed_out", NULL};
static const util_field retry_fields[] = {
    {.key = "attempts", .type = UTIL_T_INTEGER, .min = 1, .max = 100,
     .doc = "the most attempts of one call, the first included (default 3: the OpenAI "
            "client's two retries)"},
    {.key = "backoff_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0,
     .max = 3600, .doc = "the wait before the first retry (default 0.5)"},
    {.key = "multiplier", .type = UTIL_T_NUMBER, .min = 1, .max = 100,
     .doc = "each further retry waits this many times the last (default 2)"},
    {.key = "max_backoff_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0,
     .max = 86400, .doc = "the longest wait (default 8)"},
    {.key = "jitter", .type = UTIL_T_NUMBER, .min = 0, .max = 1,
     .doc = "each wait is cut by up to this share of it, uniformly at random (1: AWS's full "
            "jitter; 0: none; default 0.25)"},
    {.key = "on", .type = UTIL_T_STRINGS, .choices = wl_retry_on_names, .min = 1, .max = 7,
     .doc = "the outcomes retried: a gateway's refusals (shed, queue_full, ttl, budget), any "
            "rejection (rejected), a replica's failure (failed), the client's own time-out "
            "(timed_out); default the gateway's four and failed"},
    {0},
};

const util_field wl_workload_fields[] = {
    {.key = "arrival", .type = UTIL_T_UNION, .un = &arrival_schema,
     .doc = "how requests arrive (required unless every class has its own)"},
    {.key = "dataset", .type = UTIL_T_STRING, .choices = wl_dataset_names,
     .doc = "a built-in dataset whose (prompt, output) pairs give both lengths, drawn together "
            "(instead of prompt_tokens and output_tokens; docs/scenario.md, \"Built-in "
            "datasets\")",
     .conflicts = "workload.prompt_tokens, workload.output_tokens, workload.shared_prefix"},
    {.key = "prompt_tokens", .type = UTIL_T_UNION, .unit = "tokens", .un = &wl_dist_schema,
     .doc = "prompt length (required unless a trace, dataset, shared_prefix or every class "
            "gives it)",
     .conflicts = "workload.shared_prefix, workload.dataset"},
    {.key = "shared_prefix", .type = UTIL_T_OBJECT, .sub = shared_prefix_fields,
     .doc = "prompts that share system prompts, in groups (inference-perf's shared_prefix); "
            "instead of prompt_tokens",
     .conflicts = "workload.prompt_tokens, workload.dataset"},
    {.key = "output_tokens", .type = UTIL_T_UNION, .unit = "tokens", .un = &wl_dist_schema,
     .doc = "reply length, first token included (required unless a trace, dataset or every "
            "class gives it)",
     .conflicts = "workload.dataset"},
    {.key = "agent", .type = UTIL_T_OBJECT, .sub = agent_fields,
     .doc = "each arrival is an agent task of several model calls",
     .conflicts = "workload.sessions"},
    {.key = "sessions", .type = UTIL_T_OBJECT, .sub = session_fields,
     .doc = "each arrival starts a user's chat session: turns think_s apart, each prompt the "
            "history (the last prompt and its reply) and user_tokens new tokens (docs/scenario.md, "
            "\"Sessions\")"},
    {.key = "classes", .type = UTIL_T_LIST, .sub = class_fields, .min = 1, .max = UTIL_MAX_CLASSES,
     .doc = "request classes, each with its share or arrivals, lengths, agent and SLO"},
    {.key = "pre_model_s", .type = UTIL_T_UNION, .unit = "s", .un = &wl_dist_schema,
     .doc = "delay between a client sending a call and the router (network, retrieval); it "
            "counts in TTFT"},
    {.key = "slow", .type = UTIL_T_OBJECT, .sub = slow_fields,
     .doc = "stragglers: calls that wait extra before the router"},
    {.key = "timeout_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = WL_HORIZON_S,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "a client gives up on a call not finished by then"},
    {.key = "retry", .type = UTIL_T_OBJECT, .sub = retry_fields,
     .doc = "clients send a refused or failed call again, after a backoff (docs/gateway.md); "
            "every attempt is a row naming the one it retries"},
    {0},
};

/* A distribution at obj[key], with its path. */
static int dist_at(const cJSON *obj, const char *key, const char *path, const char *base_dir,
                   bool whole, wl_dist *out, util_diag *d)
{
    char *p = util_xasprintf("%s.%s", path, key);
    int rc = wl_dist_from_json(util_json_member(obj, key), p, base_dir, whole, out, d);
    free(p);
    return rc;
}

/* A duration distribution: like dist_at, and within the horizon -- its
 * parameters by message, its draws by a clamp at WL_HORIZON_S (a lognormal
 * or normal tail has no end). */
static int duration_at(const cJSON *obj, const char *key, const char *path, const char *base_dir,
                       wl_dist *out, util_diag *d)
{
    static const char *const params[] = {"value", "mean", "median", "min", "max"};
    const cJSON *o = util_json_member(obj, key);
    int rc = UTIL_OK;
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        const cJSON *v = util_json_member(o, params[i]);
        if (cJSON_IsNumber(v) && v->valuedouble > WL_HORIZON_S)
            rc = util_diag_add(d, "%s.%s.%s: %g is out of range (expected <= %g seconds, the "
                                  "simulation's horizon of 31.7 years)",
                               path, key, params[i], v->valuedouble, WL_HORIZON_S);
    }
    if (rc) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    rc = dist_at(obj, key, path, base_dir, false, out, d);
    if (!rc && out->hi > WL_HORIZON_S) out->hi = WL_HORIZON_S;
    return rc;
}

/* The scale that gives the slice its rate, and the replay's last time,
 * which must stay within the horizon. */
static int trace_scale(const char *path, wl_arrival *out, util_diag *d)
{
    const wl_trace_info *sl = &out->slice;
    double span = sl->last_s - sl->first_s;
    out->scale = out->time_scale;
    if (out->trace_rate > 0) {
        if (sl->rows < 2 || !(span > 0))
            return util_diag_add(d, "%s.rate_per_s: the replayed requests (%lld from start_s %g) "
                                    "span no time, so they have no rate to rescale",
                                 path, (long long)sl->rows, out->start_s);
        out->scale *= (double)(sl->rows - 1) / span / out->trace_rate;
    }
    out->last_s = (sl->last_s - out->start_s) * out->scale;
    if (!(out->last_s <= WL_HORIZON_S))
        return util_diag_add(d, "%s.%s: the replay would reach %g s (trace time %g s x %g), "
                                "beyond the simulation's horizon of %g s (31.7 years)",
                             path, out->trace_rate > 0 ? "rate_per_s" : "time_scale", out->last_s,
                             sl->last_s - out->start_s, out->scale, WL_HORIZON_S);
    return UTIL_OK;
}

static int trace_from_json(const cJSON *a, const char *path, const char *base_dir,
                           wl_arrival *out, util_diag *d)
{
    out->trace_path = util_path_join(base_dir, util_json_member(a, "path")->valuestring);
    out->format = (wl_trace_format)util_json_choice(a, "format", wl_trace_formats);
    out->time_scale = util_json_member(a, "time_scale")->valuedouble;
    out->trace_rate = util_json_number(a, "rate_per_s", 0);
    out->start_s = util_json_member(a, "start_s")->valuedouble;
    out->limit = (int64_t)util_json_member(a, "limit")->valuedouble;
    out->loop = cJSON_IsTrue(util_json_member(a, "loop"));
    out->hash_block_tokens = (int32_t)util_json_member(a, "hash_block_tokens")->valuedouble;
    out->tenants = wl_names_create();
    int rc = wl_trace_check_slice(out->trace_path, out->format, out->hash_block_tokens,
                                  out->start_s, out->limit, &out->info, &out->slice,
                                  out->tenants, d);
    if (!wl_names_count(out->tenants)) { /* most traces name none: keep nothing */
        wl_names_destroy(out->tenants);
        out->tenants = NULL;
    }
    if (rc) return rc;
    if (out->slice.rows == 0)
        return util_diag_add(d, "%s.start_s: %g s is after the trace's last request (at %g s): "
                                "nothing would be replayed",
                             path, out->start_s, out->info.last_s);
    return trace_scale(path, out, d);
}

/* Gamma gaps have scale cv^2 / rate: a scale within 1e7 s keeps a gap past
 * the horizon (1e9 s, a hundred scales) below e^-100. */
static int check_gamma(const wl_arrival *a, const char *path, util_diag *d)
{
    double scale = a->cv * a->cv / a->rate_per_s;
    if (scale <= 1e7) return UTIL_OK;
    return util_diag_add(d, "%s.cv: %g at rate_per_s %g gives gamma gaps of scale cv^2 / "
                            "rate_per_s = %g s; at most 1e7 s keeps every gap within the "
                            "simulation's horizon of 1e9 s",
                         path, a->cv, a->rate_per_s, scale);
}

static int arrival_from_json(const cJSON *a, const char *path, const char *base_dir,
                             wl_arrival *out, util_diag *d)
{
    static const char *const names[] = {"poisson", "constant", "gamma", "closed", "trace", NULL};
    memset(out, 0, sizeof *out);
    out->process = (wl_process)util_json_choice(a, "process", names);
    const cJSON *rate = util_json_member(a, "rate_per_s");
    out->rate_per_s = cJSON_IsString(rate) ? INFINITY : util_json_number(a, "rate_per_s", 0);
    out->cv = util_json_number(a, "cv", 1);
    out->users = (int)util_json_number(a, "users", 0);
    out->max_concurrency = (int)util_json_number(a, "max_concurrency", 0);
    if (out->process == WL_CLOSED)
        return duration_at(a, "think_s", path, base_dir, &out->think_s, d);
    if (out->process == WL_TRACE) return trace_from_json(a, path, base_dir, out, d);
    if (out->process == WL_GAMMA) return check_gamma(out, path, d);
    return UTIL_OK;
}

/* agent.history or sessions.history (h, NULL when left out) into out,
 * whose mode is set: a history carried unless "none", or left out of a
 * fan-out (whose calls had their own prompts before the key existed). */
static void history_from_json(const cJSON *h, wl_agent *out)
{
    out->history = h ? !(cJSON_IsString(h) && !strcmp(h->valuestring, "none"))
                     : out->mode == WL_AGENT_SEQUENTIAL || out->mode == WL_AGENT_SESSION;
    if (cJSON_IsObject(h)) out->history_max = (int32_t)util_json_number(h, "max_tokens", 0);
}

static int agent_from_json(const cJSON *a, const char *path, const char *base_dir, wl_agent *out,
                           util_diag *d)
{
    memset(out, 0, sizeof *out);
    if (!a) return UTIL_OK; /* WL_AGENT_NONE */
    out->mode = (wl_agent_mode)(util_json_choice(a, "mode", agent_modes) + 1);
    out->calls = (int)util_json_member(a, "calls")->valuedouble;
    /* tool outputs may be 0 tokens: drawn as a number >= 0 and rounded by the source */
    int rc = dist_at(a, "tool_output_tokens", path, base_dir, false, &out->tool_output_tokens, d);
    if (duration_at(a, "tool_s", path, base_dir, &out->tool_s, d)) rc = UTIL_EINPUT;
    history_from_json(util_json_member(a, "history"), out);
    return rc;
}

/* workload.sessions (or a class's), into an agent of mode WL_AGENT_SESSION. */
static int session_from_json(const cJSON *o, const char *path, const char *base_dir,
                             wl_agent *out, util_diag *d)
{
    memset(out, 0, sizeof *out);
    out->mode = WL_AGENT_SESSION;
    int rc = dist_at(o, "turns", path, base_dir, true, &out->turns, d);
    if (dist_at(o, "user_tokens", path, base_dir, true, &out->tool_output_tokens, d))
        rc = UTIL_EINPUT;
    if (duration_at(o, "think_s", path, base_dir, &out->tool_s, d)) rc = UTIL_EINPUT;
    history_from_json(util_json_member(o, "history"), out);
    return rc;
}

/* A class's agent or sessions: its own, else the workload's; both at one level are refused. */
static int calls_from_json(const cJSON *cls, const cJSON *w, const char *cpath,
                           const char *base_dir, wl_agent *out, util_diag *d)
{
    const cJSON *levels[] = {cls, w};
    const char *paths[] = {cpath, "workload"};
    for (int i = cls ? 0 : 1; i < 2; i++) {
        const cJSON *agent = util_json_member(levels[i], "agent");
        const cJSON *sess = util_json_member(levels[i], "sessions");
        if (agent && sess)
            return util_diag_add(d, "%s.sessions: not with %s.agent (a session is a chat of "
                                    "turns; an agent task a job of calls)", paths[i], paths[i]);
        char *p = util_xasprintf("%s.%s", paths[i], agent ? "agent" : "sessions");
        int rc = agent ? agent_from_json(agent, p, base_dir, out, d)
                 : sess ? session_from_json(sess, p, base_dir, out, d)
                        : UTIL_OK;
        free(p);
        if (agent || sess) return rc;
    }
    memset(out, 0, sizeof *out); /* WL_AGENT_NONE */
    return UTIL_OK;
}

/* A dataset's `output` (or prompt) column as a distribution of its own. */
static void dataset_column(const char *name, bool output, wl_dist *out)
{
    *out = (wl_dist){.kind = WL_DIST_DATASET, .whole = true, .lo = 1, .hi = INFINITY,
                     .ds = wl_dataset_create(name), .ds_output = output};
}

/* Lengths: the class's own, else the workload's (its prompts: shared_prefix's
 * when it has one); neither is needed when the class's arrivals are a trace,
 * which carries them.  A dataset gives both, as pairs drawn together: the
 * class's, or the workload's unless the class sets a length of its own --
 * its other length is then the workload dataset's column, alone. */
static int lengths_from_json(const cJSON *cls, const cJSON *w, const char *cpath,
                             const char *base_dir, bool from_trace, wl_class *out, util_diag *d)
{
    static const char *const keys[] = {"prompt_tokens", "output_tokens"};
    wl_dist *dists[] = {&out->prompt, &out->output};
    bool *has[] = {&out->has_prompt, &out->has_output};
    const cJSON *cds = cls ? util_json_member(cls, "dataset") : NULL;
    const cJSON *wds = util_json_member(w, "dataset");
    bool own_any = cls && (util_json_member(cls, keys[0]) || util_json_member(cls, keys[1]));
    if (cds && own_any)
        return util_diag_add(d, "%s.dataset: not with the class's own prompt_tokens or "
                                "output_tokens: the dataset gives both (for one length, use "
                                "{\"dist\": \"dataset\", \"name\": \"%s\"})",
                             cpath, cds->valuestring);
    const cJSON *pairs = cds ? cds : own_any ? NULL : wds;
    if (pairs) {
        out->pairs = wl_dataset_create(pairs->valuestring);
        out->has_prompt = out->has_output = true;
        return UTIL_OK;
    }
    int rc = UTIL_OK;
    for (int i = 0; i < 2; i++) {
        const cJSON *own = cls ? util_json_member(cls, keys[i]) : NULL;
        if (i == 0 && !own && util_json_member(w, "shared_prefix")) {
            out->shared_prompt = true;
            continue;
        }
        if (!own && wds) {
            dataset_column(wds->valuestring, i == 1, dists[i]);
            *has[i] = true;
            continue;
        }
        const cJSON *o = own ? cls : util_json_member(w, keys[i]) ? w : NULL;
        const char *p = own ? cpath : "workload";
        if (o && dist_at(o, keys[i], p, base_dir, true, dists[i], d)) rc = UTIL_EINPUT;
        *has[i] = o != NULL;
        if (!o) {
            if (!from_trace)
                rc = util_diag_add(d, "%s.%s: missing (expected an object)", cls ? cpath : "workload",
                                   keys[i]);
        }
    }
    return rc;
}

/* workload.dataset gives both lengths, so it stands alone at its level. */
static int check_dataset(const cJSON *w, const char *path, util_diag *d)
{
    static const char *const others[] = {"prompt_tokens", "output_tokens", "shared_prefix"};
    const cJSON *ds = util_json_member(w, "dataset");
    int rc = UTIL_OK;
    for (size_t i = 0; ds && i < sizeof others / sizeof others[0]; i++)
        if (util_json_member(w, others[i]))
            rc = util_diag_add(d, "%s.dataset: not with %s.%s: the dataset gives both lengths "
                                  "(for one length, use {\"dist\": \"dataset\", \"name\": "
                                  "\"%s\"}; a class may set its own)",
                               path, path, others[i], ds->valuestring);
    return rc;
}

/* A trace gives the lengths of a task's first call, not of the calls after
 * it: those are drawn from the class's distributions, which must then be
 * there (a sequential task's later prompts are carried, but their replies
 * drawn; a fan-out's calls and a map-reduce's aggregation are drawn). */
static int check_agent_lengths(const wl_class *c, const char *path, util_diag *d)
{
    const wl_agent *a = &c->agent;
    if (a->mode == WL_AGENT_NONE) return UTIL_OK;
    bool more = a->mode == WL_AGENT_SESSION || a->mode != WL_AGENT_PARALLEL || a->calls > 1;
    bool prompts = a->mode != WL_AGENT_SEQUENTIAL && a->mode != WL_AGENT_SESSION && a->calls > 1;
    int rc = UTIL_OK;
    if (prompts && !c->has_prompt && !c->shared_prompt)
        rc = util_diag_add(d, "%s.prompt_tokens: missing (expected an object): the trace gives "
                              "a task's first call only, and its agent sends more", path);
    if (more && !c->has_output)
        rc = util_diag_add(d, "%s.output_tokens: missing (expected an object): the trace gives "
                              "a task's first call only, and its agent sends more", path);
    return rc;
}

/* A stream of arrivals more for the spec; returns its index. */
static int add_stream(wl_spec *s)
{
    s->streams = util_xrealloc(s->streams, (size_t)(s->n_streams + 1) * sizeof *s->streams);
    memset(&s->streams[s->n_streams], 0, sizeof s->streams[0]);
    return s->n_streams++;
}

static int class_from_json(const cJSON *cls, const cJSON *w, int i, const char *base_dir,
                           wl_spec *s, util_diag *d)
{
    wl_class *c = &s->classes[i];
    char *path = util_xasprintf("workload.classes[%d]", i);
    const cJSON *weight = util_json_member(cls, "weight"), *arrival = util_json_member(cls, "arrival");
    int rc = UTIL_OK;
    c->name = util_json_member(cls, "name")->valuestring;
    if (!weight == !arrival)
        rc = util_diag_add(d, "%s: give the class a weight (a share of workload.arrival) or an "
                              "arrival of its own, not %s", path, weight ? "both" : "neither");
    c->weight = weight ? weight->valuedouble : 0;
    if (arrival && !rc) {
        c->stream = add_stream(s);
        char *ap = util_xasprintf("%s.arrival", path);
        rc = arrival_from_json(arrival, ap, base_dir, &s->streams[c->stream], d);
        free(ap);
    }
    s->shared_used |= weight != NULL;
    bool trace = arrival ? s->streams[c->stream].process == WL_TRACE
                         : util_json_member(w, "arrival") && s->streams[0].process == WL_TRACE;
    if (lengths_from_json(cls, w, path, base_dir, trace, c, d)) rc = UTIL_EINPUT;
    if (calls_from_json(cls, w, path, base_dir, &c->agent, d)) rc = UTIL_EINPUT;
    if (!rc && check_agent_lengths(c, path, d)) rc = UTIL_EINPUT;
    free(path);
    return rc;
}

static int classes_from_json(const cJSON *w, const char *base_dir, wl_spec *s, util_diag *d)
{
    const cJSON *list = util_json_member(w, "classes");
    int n = list ? cJSON_GetArraySize(list) : 1, rc = UTIL_OK;
    s->classes = util_xcalloc((size_t)n, sizeof *s->classes);
    s->n_classes = n;
    if (!list) { /* one class of the workload-level keys */
        s->classes[0] = (wl_class){.name = "default", .weight = 1};
        s->shared_used = true;
        bool trace = s->streams[0].process == WL_TRACE;
        rc = lengths_from_json(NULL, w, "workload", base_dir, trace, &s->classes[0], d);
        if (calls_from_json(NULL, w, "workload", base_dir, &s->classes[0].agent, d))
            rc = UTIL_EINPUT;
        if (!rc && check_agent_lengths(&s->classes[0], "workload", d)) rc = UTIL_EINPUT;
        return rc;
    }
    util_clip_buf cb;
    for (int i = 0; i < n; i++) {
        if (class_from_json(cJSON_GetArrayItem(list, i), w, i, base_dir, s, d)) rc = UTIL_EINPUT;
        for (int j = 0; j < i; j++)
            if (!strcmp(s->classes[j].name, s->classes[i].name))
                rc = util_diag_add(d, "workload.classes[%d].name: '%s' is used twice", i,
                                   util_clip(s->classes[i].name, &cb));
    }
    return rc;
}

/* workload.shared_prefix, which stands where workload.prompt_tokens would. */
static int prefix_from_json(const cJSON *w, const char *path, wl_spec *s, util_diag *d)
{
    const cJSON *o = util_json_member(w, "shared_prefix");
    if (!o) return UTIL_OK;
    wl_shared_prefix *sp = &s->shared_prefix;
    sp->num_groups = (int32_t)util_json_member(o, "num_groups")->valuedouble;
    sp->num_prompts_per_group = (int32_t)util_json_member(o, "num_prompts_per_group")->valuedouble;
    sp->system_prompt_len = (int32_t)util_json_member(o, "system_prompt_len")->valuedouble;
    sp->question_len = (int32_t)util_json_member(o, "question_len")->valuedouble;
    sp->order = (wl_prefix_order)util_json_choice(o, "order", prefix_orders);
    s->has_shared_prefix = true;
    int rc = UTIL_OK;
    if (util_json_member(w, "prompt_tokens"))
        rc = util_diag_add(d, "%s.prompt_tokens: not with %s.shared_prefix, whose prompts are "
                              "system_prompt_len + question_len tokens (a class may set its own "
                              "prompt_tokens)", path, path);
    /* a shuffled order holds every prompt's number: 4 bytes each */
    double n = (double)sp->num_groups * sp->num_prompts_per_group;
    if (n > 1e7)
        rc = util_diag_add(d, "%s.shared_prefix.num_prompts_per_group: num_groups x "
                              "num_prompts_per_group = %.0f prompts, more than 1e7", path, n);
    return rc;
}

/* workload.slow.of: the whole number of slow calls in each block of `of`;
 * a share that does not make one (0.013 of 400) is refused rather than
 * rounded, so the share asked for is the share simulated. */
static int exact_slow(const cJSON *slow, wl_spec *s, util_diag *d)
{
    s->slow_of = (int64_t)util_json_number(slow, "of", 0);
    if (!s->slow_of) return UTIL_OK;
    double k = s->slow_p * (double)s->slow_of;
    s->slow_k = (int64_t)floor(k + 0.5);
    if (fabs(k - (double)s->slow_k) > 1e-9 * fmax(1, k))
        return util_diag_add(d, "workload.slow.of: probability %g x %lld = %g calls, not a whole "
                                "number of slow calls (give a probability that is k / %lld)",
                             s->slow_p, (long long)s->slow_of, k, (long long)s->slow_of);
    return UTIL_OK;
}

/* workload.retry, validated by the schema already; its defaults here (the
 * schema would make the section, and turn retries on, in every scenario). */
static void retry_from_json(const cJSON *o, wl_retry *r)
{
    if (!o) return;
    r->attempts = (int)util_json_number(o, "attempts", 3);
    r->backoff_s = util_json_number(o, "backoff_s", 0.5);
    r->multiplier = util_json_number(o, "multiplier", 2);
    r->max_backoff_s = util_json_number(o, "max_backoff_s", 8);
    r->jitter = util_json_number(o, "jitter", 0.25);
    const cJSON *list = util_json_member(o, "on"), *on;
    if (!list) {
        r->on = WL_RETRY_SHED | WL_RETRY_QUEUE_FULL | WL_RETRY_TTL | WL_RETRY_BUDGET |
                WL_RETRY_FAILED;
        return;
    }
    cJSON_ArrayForEach(on, list)
        for (int i = 0; wl_retry_on_names[i]; i++)
            if (!strcmp(on->valuestring, wl_retry_on_names[i])) r->on |= 1u << i;
}

static int delays_from_json(const cJSON *w, const char *base_dir, wl_spec *s, util_diag *d)
{
    int rc = UTIL_OK;
    s->has_pre_model = util_json_member(w, "pre_model_s") != NULL;
    if (s->has_pre_model && duration_at(w, "pre_model_s", "workload", base_dir, &s->pre_model_s, d))
        rc = UTIL_EINPUT;
    const cJSON *slow = util_json_member(w, "slow");
    if (slow) {
        s->slow_p = util_json_member(slow, "probability")->valuedouble;
        if (exact_slow(slow, s, d)) rc = UTIL_EINPUT;
        if (duration_at(slow, "extra_s", "workload.slow", base_dir, &s->slow_extra_s, d))
            rc = UTIL_EINPUT;
    }
    s->timeout_s = util_json_number(w, "timeout_s", 0);
    retry_from_json(util_json_member(w, "retry"), &s->retry);
    return rc;
}

int wl_spec_from_json(const cJSON *w, const char *path, const char *base_dir, wl_spec *out,
                      util_diag *d)
{
    memset(out, 0, sizeof *out);
    add_stream(out); /* streams[0]: workload.arrival, even if no class uses it */
    int rc = UTIL_OK;
    if (util_json_member(w, "arrival")) {
        char *pa = util_xasprintf("%s.arrival", path);
        rc = arrival_from_json(util_json_member(w, "arrival"), pa, base_dir, &out->streams[0], d);
        free(pa);
    }
    int prc = prefix_from_json(w, path, out, d);
    if (check_dataset(w, path, d)) prc = UTIL_EINPUT;
    if (!rc && classes_from_json(w, base_dir, out, d)) rc = UTIL_EINPUT;
    if (!rc && out->shared_used && !util_json_member(w, "arrival"))
        rc = util_diag_add(d, "%s.arrival: missing (classes with a weight share it)", path);
    if (delays_from_json(w, base_dir, out, d) || prc) rc = UTIL_EINPUT;
    return rc;
}

static void arrival_fini(wl_arrival *a)
{
    free(a->trace_path);
    wl_names_destroy(a->tenants);
    wl_dist_fini(&a->think_s);
}

void wl_spec_fini(wl_spec *s)
{
    for (int i = 0; i < s->n_streams; i++) arrival_fini(&s->streams[i]);
    for (int i = 0; i < s->n_classes; i++) {
        wl_dist_fini(&s->classes[i].prompt);
        wl_dist_fini(&s->classes[i].output);
        wl_dataset_destroy(s->classes[i].pairs);
        wl_dist_fini(&s->classes[i].agent.tool_output_tokens);
        wl_dist_fini(&s->classes[i].agent.tool_s);
        wl_dist_fini(&s->classes[i].agent.turns);
    }
    wl_dist_fini(&s->pre_model_s);
    wl_dist_fini(&s->slow_extra_s);
    free(s->streams);
    free(s->classes);
    memset(s, 0, sizeof *s);
}
