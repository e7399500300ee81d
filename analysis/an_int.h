/*
 * an_int.h: what the analysis files share and nobody else needs -- the
 * query context and the small helpers every section is computed with.
 */
#ifndef AN_INT_H
#define AN_INT_H

#include "an.h"

/* Every query may use ?1 = run id, ?2 = warm-up seconds, ?3 = a class name
 * and ?9 = a replica (NULL: all); binding an absent parameter is harmless,
 * so every statement gets all four. */
typedef struct an__query {
    sqlite3 *db;
    int64_t run;
    double warmup;
    const char *cls; /* NULL: every class */
    int replica;     /* -1: every replica */
    int schema;      /* the database's PRAGMA user_version: what columns it has (below) */
    size_t budget;   /* latencies a scan keeps in memory before histograms; 0: scan.c's */
} an__query;

/* The filters of a class and a replica section, for tables that have both
 * columns (requests, request_metrics), and of a class alone (tasks). */
#define AN__IN_CLASS " AND (?3 IS NULL OR class = ?3)"
#define AN__IN_GROUP AN__IN_CLASS " AND (?9 IS NULL OR replica = ?9)"

int an__db_fail(sqlite3 *db, util_diag *d, const char *what);
/* The file is damaged -- SQLite found it malformed, or what was read of a
 * run disagrees with what the run recorded (why says which): bad input
 * (UTIL_EINPUT), naming the file and what PRAGMA quick_check finds. */
int an__damaged(sqlite3 *db, const char *why, util_diag *d);
/* Prepares sql with the context's parameters bound; NULL on error. */
sqlite3_stmt *an__prepare(const an__query *q, const char *sql);
/* Column i of a row as a double, NAN where it is NULL. */
double an__column_num(sqlite3_stmt *st, int i);
/* Runs a one-row query and copies its n columns as doubles (NULL -> NAN). */
int an__row(const an__query *q, const char *sql, double *out, int n, util_diag *d);
/* Reads the first column of every row into a new array (caller frees). */
int an__column(const an__query *q, const char *sql, double **out, size_t *n, util_diag *d);
/* expr over the rows of view passing filter (and the group), summarised. */
int an__metric_of(const an__query *q, const char *view, const char *filter, const char *expr,
                  an_stats *out, util_diag *d);
/* The database's schema version, which says which columns its tables have:
 * 3 added the prefix cache's (requests.cached_tokens, replicas.evicted_blocks;
 * older databases report no prefix cache), 4 the precision's
 * (replicas.weight_bytes, kv_bytes_per_token; older ones report them
 * unknown). */
#define AN__SCHEMA_CACHE 3
#define AN__SCHEMA_PRECISION 4
/* 5 a replica's life (replicas.created_s .. end_reason; older databases:
 * every replica there throughout). */
#define AN__SCHEMA_LIFE 5
/* 6 the engine's step pipeline (iterations.scheduled_s .. client_s) and the
 * engine core's clock (replicas.output_s, request_metrics.engine_ttft_s and
 * engine_e2e_s; older databases have neither). */
#define AN__SCHEMA_PIPELINE 6
/* 8 speculative decoding's replicas.spec_* (older databases: none). */
#define AN__SCHEMA_SPEC 8
/* 9 the tokens an iteration's decoders streamed (iterations.decode_tokens,
 * decode_accepted; older databases: unknown). */
#define AN__SCHEMA_TOKENS 9
/* 10 runs.requests, the request rows a run recorded: what a report reads of
 * a run must agree (older databases: not checked). */
#define AN__SCHEMA_COUNTS 10
/* 11 requests.priority, deadline_s and tenant (older databases: none, so
 * no report by tenant or tier); 12 replicas.lora_* (LoRA adapters' slots,
 * hits and loads) */
#define AN__SCHEMA_TENANT 11
#define AN__SCHEMA_LORA 12
/* 13 requests.reason (why a request was rejected: the gateway's shed,
 * queue_full, ttl, budget, ...), retry_of and retried (workload.retry: an
 * attempt its client sent again is not the call's outcome, and a report
 * counts each call once, by its last attempt; older databases: every row
 * counts, and the shed share is every rejection). */
#define AN__SCHEMA_RETRY 13
/* 14 replicas.cpu_tier_bytes .. cpu_loaded_bytes: the KV offload CPU tier
 * (cluster.kv_offload; older databases: none). */
#define AN__SCHEMA_OFFLOAD 14
/* 15 requests.cpu_hit_tokens and disk_hit_tokens, iterations.cpu_tier_tokens
 * and disk_tier_tokens (older databases: no TTFT by source, no tiers in the
 * timeline). */
#define AN__SCHEMA_TIERS 15
/* 16 replicas.drain_s, end_reason 'taken_back', requests.restarts and
 * restarted_from (older databases: no draining state, spot take-backs
 * end 'drained' or 'failed', restarts unknown). */
#define AN__SCHEMA_DRAIN 16
/* " AND retried = 0" where the rows say which attempts were retried: what
 * a count of a run's calls adds to its WHERE clause. */
const char *an__counted(int schema);
int an__schema(sqlite3 *db);
/* a / b, NAN unless b > 0. */
double an__ratio(double a, double b);

/* dist.c: exact order statistics of one metric in bounded memory.  Add
 * every value (pass 1, counting the values kept in *stored), spill to a
 * histogram when the scan's budget is exceeded, then plan; while planning
 * says so, run another pass over the same values (begin, refine each, end),
 * then read the summary.  mirror: also summarise 1/x (GenAI-Perf's tokens
 * per second per user from TPOT) from the same ranks. */
typedef struct an__rank {
    size_t rank;     /* of the ascending values */
    size_t within;   /* rank within its bucket */
    uint64_t prefix; /* its bucket: keys k with k >> shift == prefix */
    int shift;
    uint64_t count;  /* values in the bucket */
    bool collect;    /* the next pass keeps the bucket's values (else histograms them) */
    bool done;
    double value;
} an__rank;

typedef struct an__kept {
    double *v;       /* a bucket's values, or ... */
    size_t n, cap;
    uint32_t *hist;  /* ... the histogram of their next 16 bits */
} an__kept;

typedef struct an__dist {
    int64_t n;
    double sum, comp, max;    /* compensated sum */
    bool mirror;
    double rsum, rcomp, rmax; /* of 1/x, with mirror */
    double *v;                /* the values while they fit the budget */
    size_t nv, cap;
    uint32_t *hist;           /* then: counts by the key's top 16 bits */
    an__rank *ranks;          /* after planning: the ranks wanted */
    int n_ranks;
    an__kept *kept;           /* during a refining pass, by rank (its bucket's owner) */
} an__dist;

void an__dist_init(an__dist *d, bool mirror);
void an__dist_fini(an__dist *d);
void an__dist_add(an__dist *d, double x, size_t *stored);
void an__dist_spill(an__dist *d);
/* Selects what it can; true when another pass over the values is needed,
 * which keeps the values of a rank's bucket of at most collect_max of them
 * and histograms the next 16 bits of a larger one. */
bool an__dist_plan(an__dist *d, size_t collect_max);
void an__dist_begin_pass(an__dist *d);
void an__dist_refine(an__dist *d, double x);
/* true when yet another pass is needed. */
bool an__dist_end_pass(an__dist *d, size_t collect_max);
void an__dist_stats(const an__dist *d, an_stats *out);
void an__dist_reciprocal_stats(const an__dist *d, an_stats *out);

/* scan.c: every per-request section of r -- the run's, each class's (with
 * classes), each replica's (with r->by_replica) -- the replicas' prefix-cache
 * hit rates and, unless the rows' arrivals are out of id order
 * (*queues_unordered), their queues, in one pass over the run's rows (more
 * only when the latencies outgrow the scan's budget).  Every section's slo
 * is set first; replica_ids gives the replicas' numbers by index. */
/* models.c (report --by model): the fleet's models from the replicas'
 * rows and each class's from the stored scenario sc, before the scan; then
 * their attainment and cost, once the classes' sections are done. */
int an__models_begin(const an__query *q, const cJSON *sc, an_report *r, util_diag *d);
void an__models_end(an_report *r);
void an__models_fini(an_report *r);

/* sessions.c: report --by session, the turns of the stored scenario sc's
 * session classes, from two queries over the run's requests. */
int an__sessions_load(const an__query *q, const cJSON *sc, an_report *r, util_diag *d);
/* The windows a fleet was short (availability.c), whole-run (every
 * replica): `down`, a replica retired 'failed' from its retired_s to its
 * replacement's ready_s -- the failures in time order each take the first
 * replica made at or after it that no earlier one took, as the rows do not
 * link them -- or to end_s; `starting`, every other replica made after 0,
 * from its created_s to its ready_s (its retired_s, end_s: never ready).
 * Each list sorted by start and merged into disjoint spans. */
typedef struct an__span {
    double from, to;
} an__span;
typedef struct an__fleet_spans {
    an__span *starting, *down;
    size_t n_starting, n_down;
    double down_s;           /* replica-seconds down: the failures' spans summed before
                              * they are merged (two replicas down at once count twice) */
    int peak_ready;          /* the most replicas ready at once */
    double peak_ready_gpus;  /* the most GPUs ready at once */
} an__fleet_spans;
int an__fleet_spans_load(sqlite3 *db, int64_t run, double end_s, an__fleet_spans *f,
                         util_diag *d);
void an__fleet_spans_fini(an__fleet_spans *f);
/* Whether x falls in one of the n merged spans. */
bool an__spans_cover(const an__span *s, size_t n, double x);
/* The report's failures section (replicas failed or taken back,
 * availability, the requests failures failed or sent again; nothing when
 * none was lost) and its fleet section (an_fleet, when the fleet changed
 * and the report is the whole run's), from one read of the replicas'
 * lives (availability.c). */
int an__fleet_sections_load(const an__query *q, an_report *r, util_diag *d);

int an__scan_requests(const an__query *q, an_report *r, const int *replica_ids,
                      bool *queues_unordered, util_diag *d);
/* Attainment and goodput from s's good and ended requests, or NAN when no
 * SLO applies. */
void an__set_attainment(an_section *s, bool applies);
/* A completed request's TTFT, TPOT (NAN: one token) and E2E meet every
 * target slo sets (scan.c; timeline.c's attainment). */
bool an__meets_slo(const an_slo *slo, double ttft, double tpot, double e2e);
/* Task attainment and goodput from t's good and started tasks over
 * window_s, or NAN when no task SLO applies. */
void an__set_task_attainment(an_tasks *t, bool applies, double window_s);
/* The stream's sections into r when it was set up as r is (true, *rc the
 * outcome); false when not, and r's rows are to be scanned instead. */
bool an__stream_sections(an_stream *st, const an__query *q, an_report *r, bool *queues_unordered,
                         int *rc, util_diag *d);
/* report.c: what a report takes from its run's scenario -- warm-up, SLOs
 * (with opt's what-ifs), classes, cost and energy settings, time-out. */
void an__report_setup(const cJSON *scenario, const an_options *opt, an_report *r);

/* usage.c: the replicas' rows -- utilisation per replica and overall (begin,
 * before the scan, which needs the replicas) -- then the queue by a sort
 * when the scan could not sweep it, cost and energy (end, after the run's
 * request section). */
typedef struct an__usage an__usage;
int an__usage_begin(const an__query *q, bool by_replica, an_report *r, an__usage **u,
                    util_diag *d);
const int *an__usage_replica_ids(const an__usage *u);
int an__usage_end(const an__query *q, an__usage *u, bool sort_queues, an_report *r, util_diag *d);
void an__usage_free(an__usage *u);
void an__usage_fini(an_report *r);

/* definitions.c: the text's name of a definition (an_definition.name):
 * the tool and metric it reproduces, "vLLM TPOT"; an unknown name itself. */
const char *an__definition_label(const char *name);

/* whatif.c: the stored scenario's mean and percentile targets (slo and each
 * class's slo: ttft_p99_s) into r->targets, unevaluated, after r's classes
 * are set up; then an__load_targets puts the options' targets (opt may be
 * NULL) first, keeps the scenario's that none of them replaces, and
 * evaluates them all. */
void an__scenario_targets(const cJSON *sc, an_report *r);
int an__load_targets(const an__query *q, const an_options *opt, an_report *r, util_diag *d);

#endif /* AN_INT_H */
