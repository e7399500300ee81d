/*
 * wl: what clients send -- arrival processes and the lengths of prompts and
 * replies.  It knows nothing of GPUs or queues.
 *
 * A wl_spec is the validated `workload` section of a scenario.  A wl_source
 * draws from it: inter-arrival gaps for open-loop processes, think times for
 * closed-loop users, and (prompt, output) token counts.  Each kind of draw has
 * its own random stream derived from the master seed, so changing the length
 * distribution leaves arrival times unchanged and vice versa.
 */
#ifndef WL_H
#define WL_H

#include <stdbool.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "util.h"

/* ---- the horizon ---- */

/* The engine keeps time in int64 nanoseconds, which end at 9.2e9 s (292
 * years).  Every time a scenario states -- stop.duration_s, warmup_s, each
 * duration distribution, time-outs, SLOs, a trace's times after its
 * rescaling -- is kept within WL_HORIZON_S (1e9 s, 31.7 years), and every
 * rate at or above WL_MIN_RATE_PER_S (a mean gap of 1e6 s, 11.6 days), so
 * that no single event time -- an arrival plus its delays and its time-out,
 * each within the horizon -- can overflow.  What adds up over a long run
 * (many gaps, a looped trace) is the engine's to guard. */
#define WL_HORIZON_S 1e9
#define WL_MIN_RATE_PER_S 1e-6

/* ---- distributions (token counts and durations) ---- */

typedef enum wl_dist_kind {
    WL_DIST_FIXED,       /* a = value */
    WL_DIST_UNIFORM,     /* on [lo, hi]; whole numbers: each integer in it equally likely */
    WL_DIST_EXPONENTIAL, /* a = mean */
    WL_DIST_NORMAL,      /* a = mean, b = standard deviation */
    WL_DIST_LOGNORMAL,   /* a = median, b = sigma of the underlying normal */
    WL_DIST_EMPIRICAL,   /* the values of a trace's column, each as often as it occurs */
    WL_DIST_DATASET,     /* one column of a built-in dataset's pairs (datasets.c) */
} wl_dist_kind;

typedef struct wl_empirical wl_empirical; /* a trace column as a table of distinct values */
typedef struct wl_dataset wl_dataset;     /* a built-in dataset's (prompt, output) pairs */

typedef struct wl_dist {
    wl_dist_kind kind;
    double a, b;
    double lo, hi; /* clamps (uniform: its range); whole numbers are never below 1 */
    bool whole;    /* token counts: rounded to the nearest integer */
    wl_empirical *emp; /* WL_DIST_EMPIRICAL: owned, freed by wl_dist_fini */
    wl_dataset *ds;    /* WL_DIST_DATASET: owned, freed by wl_dist_fini ... */
    bool ds_output;    /* ... and which of its columns: output (else the prompt) */
} wl_dist;

/* A distribution object: {"dist": KIND, ...parameters, "min", "max"}. */
extern const util_union wl_dist_schema;

/* Builds from a validated object; whole selects token counts (>= 1, rounded)
 * rather than durations in seconds (>= 0).  Files (empirical) are relative
 * to base_dir (NULL: the current directory). */
int wl_dist_from_json(const cJSON *obj, const char *path, const char *base_dir, bool whole,
                      wl_dist *out, util_diag *d);
void wl_dist_fini(wl_dist *dist);
double wl_dist_sample(const wl_dist *dist, gsl_rng *r);

/* ---- traces ---- */

typedef enum wl_trace_format {
    WL_TRACE_AUTO,     /* decided from the file's first line */
    WL_TRACE_CSV,      /* arrival_time_s,input_tokens,output_tokens[,hash_ids] (seconds from the
                        * start; hash_ids separated by spaces); a header may name priority,
                        * deadline_s and tenant columns too */
    WL_TRACE_AZURE,    /* Azure LLM inference trace: TIMESTAMP,ContextTokens,GeneratedTokens
                        * (and, named in its header, priority, deadline_s, tenant) */
    WL_TRACE_MOONCAKE, /* Mooncake JSONL: timestamp (ms), input_length, output_length, hash_ids
                        * (and priority, deadline_s, tenant) */
} wl_trace_format;

/* "auto", "csv", "azure", "mooncake", NULL: the `format` key's values. */
extern const char *const wl_trace_formats[];

/* What a prompt's leading tokens are, for prefix caching: a chain of
 * segments, each naming `tokens` tokens of content by a key that already
 * encodes everything before it (a hash chain, as vLLM's block hashes are:
 * key_i = wl_chain(key_{i-1}, id_i)).  Equal keys mean equal content from
 * the prompt's first token to the segment's end, so two prompts share
 * exactly their common leading segments.  Tokens after the last segment are
 * the prompt's own: no other request holds them. */
typedef struct wl_segment {
    uint64_t key;
    int32_t tokens;
} wl_segment;

/* The key of a segment `id` that follows content `prev` (0: the prompt's
 * start).  A 64-bit mix: distinct inputs collide with chance ~2^-64; never
 * 0, so a key is never taken for the prompt's start. */
uint64_t wl_chain(uint64_t prev, uint64_t id);

/* Tokens a trace's hash id names unless workload.arrival.hash_block_tokens
 * says otherwise: Mooncake's block. */
#define WL_HASH_BLOCK_TOKENS 512

/* One request of an arrival stream. */
typedef struct wl_record {
    double arrival_s; /* csv: as written; azure, mooncake: from the trace's first request */
    int32_t prompt, output;
    int cls;          /* wl_source: the request's class */
    /* its shared content: segments' tokens sum to at most prompt; NULL and 0
     * for a prompt nobody else sends.  Owned by whoever filled the record:
     * wl_trace_next's until that trace's next call; wl_source_next's until
     * that stream's next call; wl_source_draw's until its next call. */
    const wl_segment *segments;
    int32_t n_segments;
    /* A trace row's own priority, deadline and tenant, each overriding its
     * class's for this request (an agent row's: its task's calls); a row
     * without one keeps its class's.  wl_trace_next's tenant is its own
     * until that trace's next call; wl_source_next's is the spec's
     * (wl_arrival.tenants), valid as long as the spec is. */
    bool has_priority;
    int32_t priority;
    double deadline_s;  /* > 0; 0: the class's */
    const char *tenant; /* NULL: the class's */
} wl_record;

/* A set of distinct strings (names.c), each kept once: a trace's tenants,
 * memory for the distinct names and not for the rows.  A name's pointer
 * is valid until the set is destroyed. */
typedef struct wl_names wl_names;
wl_names *wl_names_create(void);
/* s's copy in the set, added if it was not there. */
const char *wl_names_intern(wl_names *n, const char *s);
/* s's copy in the set, or NULL (n NULL: an empty set). */
const char *wl_names_find(const wl_names *n, const char *s);
int64_t wl_names_count(const wl_names *n);
void wl_names_destroy(wl_names *n);

typedef struct wl_trace_info {
    wl_trace_format format; /* as detected */
    int64_t rows;
    double first_s, last_s; /* arrival_s of the first and last rows */
} wl_trace_info;

/* A trace file, streamed one line at a time (never read whole).  Its
 * hash ids (Mooncake's hash_ids, csv's fourth column) become segments of
 * WL_HASH_BLOCK_TOKENS tokens each, unless wl_trace_set_block_tokens says
 * otherwise. */
typedef struct wl_trace wl_trace;
int wl_trace_open(const char *path, wl_trace_format format, wl_trace **out, util_diag *d);
/* Tokens each hash id names; 0 reads past hash ids, unchecked (a trace read
 * for its lengths only).  Call before the first wl_trace_next. */
void wl_trace_set_block_tokens(wl_trace *t, int32_t block_tokens);
/* 1 with the next record, 0 at the end, UTIL_EINPUT for a malformed line
 * ("FILE:LINE: field N (name): ..."). */
int wl_trace_next(wl_trace *t, wl_record *rec, util_diag *d);
void wl_trace_close(wl_trace *t);
/* Reads a whole trace through, checking every line (hash ids in blocks of
 * WL_HASH_BLOCK_TOKENS). */
int wl_trace_check(const char *path, wl_trace_format format, wl_trace_info *info, util_diag *d);
/* The same with hash ids in blocks of block_tokens, and what a replay takes
 * of it into *slice (when not NULL): the rows from trace time start_s on, at
 * most limit of them (0: all); every row's tenant is added to tenants (when
 * not NULL). */
int wl_trace_check_slice(const char *path, wl_trace_format format, int32_t block_tokens,
                         double start_s, int64_t limit, wl_trace_info *whole,
                         wl_trace_info *slice, wl_names *tenants, util_diag *d);

/* A column of a trace (prompt or output lengths) as an empirical
 * distribution: memory for its distinct values, not for its rows. */
int wl_empirical_load(const char *path, wl_trace_format format, bool output_column,
                      wl_empirical **out, util_diag *d);
double wl_empirical_sample(const wl_empirical *e, gsl_rng *r);
double wl_empirical_mean(const wl_empirical *e);
void wl_empirical_destroy(wl_empirical *e);

/* ---- built-in length datasets (datasets.c) ---- */

/* (prompt, output) token pairs of public benchmark workloads, built into the
 * program from data/datasets/ (each file's source, licence and figures in
 * data/datasets/README.md).  The names are a contract, NULL-terminated:
 * "sharegpt", "arxiv-summarization", "azure-code", "azure-conv". */
extern const char *const wl_dataset_names[];
/* Each dataset's source and licence, in a line, in wl_dataset_names' order
 * (data/datasets/README.md has the files, commits and sha256). */
extern const char *const wl_dataset_sources[];
/* The pairs of the dataset called name, in their source's order; NULL when
 * no dataset has that name.  Each call parses its own copy. */
wl_dataset *wl_dataset_create(const char *name);
void wl_dataset_destroy(wl_dataset *ds);
int64_t wl_dataset_size(const wl_dataset *ds);
/* Pair i (0 <= i < size). */
void wl_dataset_pair(const wl_dataset *ds, int64_t i, int32_t *prompt, int32_t *output);
/* One pair, each as likely as any other: prompt and output stay together. */
void wl_dataset_draw(const wl_dataset *ds, gsl_rng *r, int32_t *prompt, int32_t *output);

/* ---- arrivals ---- */

typedef enum wl_process {
    WL_POISSON,  /* exponential gaps at rate_per_s */
    WL_CONSTANT, /* gaps of exactly 1 / rate_per_s */
    WL_GAMMA,    /* gamma gaps with mean 1 / rate_per_s and coefficient of variation cv */
    WL_CLOSED,   /* `users` clients, each sending its next request (task) think_s after its last */
    WL_TRACE,    /* arrival times and lengths replayed from a file */
} wl_process;

typedef struct wl_arrival {
    wl_process process;
    double rate_per_s; /* INFINITY: "inf", every arrival at time 0 (not for a trace) */
    double cv;
    int users;
    int max_concurrency; /* open loop: most arrivals (calls or tasks) in flight; 0: no cap */
    wl_dist think_s;
    /* WL_TRACE */
    char *trace_path; /* relative paths resolved; owned */
    wl_trace_format format;
    wl_trace_info info;  /* the whole file */
    wl_trace_info slice; /* the rows a pass replays */
    double time_scale; /* multiplies every time (after rate_per_s's rescaling) */
    double trace_rate; /* > 0: times rescaled so that the slice's mean rate, (rows - 1) gaps
                        * over its first to last request, is this */
    double start_s;    /* the slice starts here (trace time) ... */
    int64_t limit;     /* ... and holds at most this many requests (0: all) */
    bool loop;         /* start over at the end, for as long as stop allows */
    int32_t hash_block_tokens; /* tokens each of the trace's hash ids names */
    double scale;      /* replay time = (trace time - start_s) x scale */
    double last_s;     /* replay time of a pass's last request */
    wl_names *tenants; /* the trace's rows' tenants, found as it was checked (NULL: none); a
                        * replayed row's tenant is its copy here; owned */
} wl_arrival;

/* ---- agent tasks ---- */

typedef enum wl_agent_mode {
    WL_AGENT_NONE,       /* each arrival is one model call */
    WL_AGENT_SEQUENTIAL, /* a chain of calls, each prompt holding the previous outputs */
    WL_AGENT_PARALLEL,   /* calls fanned out at once, joined when the last finishes */
    WL_AGENT_MAP_REDUCE, /* a parallel fan-out, then one call aggregating its outputs */
    WL_AGENT_SESSION,    /* workload.sessions: a user's chat, turns sent think time apart, each
                          * prompt the history (the last prompt and its reply) and new tokens */
} wl_agent_mode;

typedef struct wl_agent {
    wl_agent_mode mode;
    int calls;                  /* model calls (map_reduce: of the fan-out) */
    wl_dist tool_output_tokens; /* sequential: tokens a tool adds to the next prompt; a fan-out
                                 * with history: each call's own tokens after it */
    wl_dist tool_s;             /* sequential: seconds a tool takes between calls */
    /* WL_AGENT_SESSION (workload.sessions): tool_output_tokens holds user_tokens (the new
     * tokens of each turn after the first), tool_s think_s (a reply's end to the next turn) */
    wl_dist turns;              /* turns of a session, drawn as it starts */
    bool history;               /* each call's prompt carries the task's history (agent.history
                                 * not "none"): sequential agents and sessions by default */
    int32_t history_max;        /* a call's prompt is at most this many tokens, the history
                                 * cut from its front; 0: the full history */
} wl_agent;

/* ---- classes ---- */

/* How speculative drafts are accepted: cluster.speculative's keys, which a
 * class may set for itself under workload.classes[].speculative (code and
 * chat accept differently).  Exactly one is given; sim reads them, since a
 * list's length and a length's ceiling depend on the pool's K.  prefix is
 * the object's path, for the key reference's conflicts. */
#define WL_SPEC_MAX_K 16
#define WL_ACCEPTANCE_FIELDS(prefix)                                                               \
    {.key = "acceptance_rate", .type = UTIL_T_NUMBER, .min = 0, .max = 1,                          \
     .doc = "the probability a that a draft is accepted, the same at every position: a step "     \
            "emits (1 - a^(K+1)) / (1 - a) tokens per sequence on average"},                      \
    {.key = "acceptance_rates", .type = UTIL_T_NUMBERS, .min = 1, .max = WL_SPEC_MAX_K,           \
     .doc = "a1..aK, the share of drafts whose position i is accepted (vLLM's per-position "      \
            "acceptance counters over its drafts): non-increasing, one per position",             \
     .conflicts = prefix ".acceptance_rate"},                                                      \
    {.key = "acceptance_length", .type = UTIL_T_NUMBER, .unit = "tokens", .min = 1,                \
     .max = WL_SPEC_MAX_K + 1,                                                                     \
     .doc = "the mean tokens a step emits per sequence (vLLM's mean acceptance length), at most " \
            "K + 1: drawn as the geometric acceptance with that mean",                            \
     .conflicts = prefix ".acceptance_rate"}

/* A class's priority tier (workload.classes[].priority), by name, and its
 * integer in vLLM's convention, lower more urgent: critical -1, standard 0
 * (vLLM's default priority, and a class's without one), batch 1, sheddable
 * 2, background 3.  critical, standard and sheddable are the Gateway API
 * Inference Extension's criticalities (docs/scenario.md cites them); batch
 * and background sit around sheddable as issue 28 orders them.  An integer
 * priority is taken as it is, within WL_PRIORITY_MIN..MAX. */
extern const char *const wl_tier_names[]; /* NULL-terminated */
extern const int wl_tier_values[];        /* by wl_tier_names's index */
#define WL_PRIORITY_MIN (-1000000)
#define WL_PRIORITY_MAX 1000000

typedef struct wl_class {
    const char *name; /* owned by the scenario's JSON */
    double weight;    /* share of the shared arrival stream; 0: it has its own */
    int stream;       /* its arrival stream (0: the shared one) */
    wl_dist prompt, output;
    bool has_prompt, has_output; /* false: a trace (or shared_prefix) gives that length */
    wl_dataset *pairs;           /* a dataset's pairs, drawn together (workload.dataset, or the
                                  * class's): then prompt and output are unused; owned */
    bool shared_prompt;          /* its prompts are workload.shared_prefix's */
    wl_agent agent;
} wl_class;

/* ---- shared prefixes ---- */

/* In which order the prompts of workload.shared_prefix are sent; either
 * way the sequence starts over after its last prompt (source.c). */
typedef enum wl_prefix_order {
    WL_PREFIX_SHUFFLED, /* one seeded permutation of every prompt (inference-perf) */
    WL_PREFIX_ORDERED,  /* group by group (SGLang --gsp-ordered, vLLM --disable-shuffle) */
} wl_prefix_order;

/* workload.shared_prefix: num_groups x num_prompts_per_group distinct
 * prompts, each its group's system prompt followed by a question of its
 * own; every class without prompt_tokens of its own sends them. */
typedef struct wl_shared_prefix {
    int32_t num_groups, num_prompts_per_group;
    int32_t system_prompt_len, question_len; /* tokens */
    wl_prefix_order order;
} wl_shared_prefix;

/* workload.retry: a client sends a call again when it ends in one of the
 * outcomes `on` (bits by wl_retry_on_names), up to `attempts` in all,
 * waiting min(backoff_s x multiplier^(k-1), max_backoff_s) less up to
 * jitter of it before the k-th retry.  attempts 0: no retries. */
typedef enum wl_retry_on {
    WL_RETRY_SHED = 1u << 0, WL_RETRY_QUEUE_FULL = 1u << 1, WL_RETRY_TTL = 1u << 2,
    WL_RETRY_BUDGET = 1u << 3, WL_RETRY_REJECTED = 1u << 4, WL_RETRY_FAILED = 1u << 5,
    WL_RETRY_TIMED_OUT = 1u << 6,
} wl_retry_on;
extern const char *const wl_retry_on_names[]; /* by bit, NULL-terminated */
typedef struct wl_retry {
    int attempts;
    double backoff_s, multiplier, max_backoff_s, jitter;
    unsigned on;
} wl_retry;

typedef struct wl_spec {
    wl_arrival *streams; /* [0]: workload.arrival (shared by weighted classes); then one per
                          * class with its own arrival */
    int n_streams;
    bool shared_used;    /* some class takes its arrivals from streams[0] */
    wl_class *classes;   /* at least one: without workload.classes, one named "default" */
    int n_classes;
    bool has_pre_model;
    wl_dist pre_model_s; /* delay between the client sending and the router */
    double slow_p;       /* chance that a call is slow ... */
    int64_t slow_of, slow_k; /* ... or exactly slow_k of each slow_of calls (0: independent) */
    wl_dist slow_extra_s;/* ... and then waits this much more before the router */
    double timeout_s;    /* a client gives up after this; 0: never */
    wl_retry retry;      /* workload.retry; attempts 0 without it */
    bool has_shared_prefix;
    wl_shared_prefix shared_prefix;
} wl_spec;

/* A request's targets, {ttft_s, tpot_s, e2e_s}: the scenario's `slo` and a
 * class's. */
extern const util_field wl_slo_fields[];

/* The `workload` section.  Files it names are relative to base_dir (NULL:
 * the current directory); a trace is read through once here, so that a
 * malformed line is reported (FILE:LINE) before anything runs. */
extern const util_field wl_workload_fields[];
int wl_spec_from_json(const cJSON *workload, const char *path, const char *base_dir,
                      wl_spec *out, util_diag *d);
void wl_spec_fini(wl_spec *spec);

/* ---- the source of requests ---- */

typedef struct wl_source wl_source;

wl_source *wl_source_create(const wl_spec *spec, uint64_t seed);
void wl_source_destroy(wl_source *s);
/* The next arrival of an open-loop stream, with its class and the lengths
 * of its (first) call: 1, or 0 when a trace has ended, or UTIL_EINPUT /
 * UTIL_EFAIL when a trace cannot be read (message in d). */
int wl_source_next(wl_source *s, int stream, wl_record *rec, util_diag *d);
/* A class for the next request of a stream, by the classes' weights. */
int wl_source_pick_class(wl_source *s, int stream);
/* Token counts of a call of class cls, both >= 1.  A class whose prompts
 * are workload.shared_prefix's gets their length, and no prompt is picked:
 * wl_source_draw picks one. */
void wl_source_lengths(wl_source *s, int cls, int32_t *prompt, int32_t *output);
/* A new call of class cls that is not a stream's arrival (a closed-loop
 * user's request, a fan-out's other calls): its lengths and, where the
 * workload shares prefixes (workload.shared_prefix), its segments, into
 * rec's prompt, output, segments and n_segments (rec's other fields are
 * left alone).  Without shared_prefix the draws are wl_source_lengths'
 * exactly, and n_segments is 0.  Open-loop arrivals and these calls take
 * their prompts from one sequence, in the order they are drawn. */
void wl_source_draw(wl_source *s, int cls, wl_record *rec);
/* Seconds a closed-loop user of a stream waits before its next request. */
double wl_source_think(wl_source *s, int stream);
/* Sequential agents: a tool's output tokens and its time, between calls. */
int32_t wl_source_tool_tokens(wl_source *s, int cls);
double wl_source_tool_s(wl_source *s, int cls);
/* Sessions: the turns of a new session of class cls (>= 1), from a stream of its own. */
int32_t wl_source_turns(wl_source *s, int cls);
/* Seconds between a client sending a call and the call reaching the router:
 * the pre-model delay, plus the straggler's extra when the call is slow
 * (*slow is set). */
double wl_source_delay(wl_source *s, bool *slow);

#endif /* WL_H */
