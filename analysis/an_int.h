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
} an__query;

/* The filters of a class and a replica section, for tables that have both
 * columns (requests, request_metrics), and of a class alone (tasks). */
#define AN__IN_CLASS " AND (?3 IS NULL OR class = ?3)"
#define AN__IN_GROUP AN__IN_CLASS " AND (?9 IS NULL OR replica = ?9)"

int an__db_fail(sqlite3 *db, util_diag *d, const char *what);
/* Prepares sql with the context's parameters bound; NULL on error. */
sqlite3_stmt *an__prepare(const an__query *q, const char *sql);
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
int an__schema(sqlite3 *db);
/* a / b, NAN unless b > 0. */
double an__ratio(double a, double b);

/* section.c: the per-request sections of q's group (its slo set first);
 * called by report.c (the run, each class) and usage.c (each replica). */
int an__load_section(const an__query *q, an_section *s, util_diag *d);
/* Attainment and goodput from s's good and ended requests, or NAN when no
 * SLO applies. */
void an__set_attainment(an_section *s, bool applies);

/* usage.c: utilisation per replica and overall, cost and energy (after the
 * run's request sections); by_replica adds each replica's request sections. */
int an__load_usage(const an__query *q, bool by_replica, an_report *r, util_diag *d);
void an__usage_fini(an_report *r);

/* whatif.c: the options' percentile targets, evaluated into r->targets. */
int an__load_targets(const an__query *q, const an_options *opt, an_report *r, util_diag *d);

#endif /* AN_INT_H */
