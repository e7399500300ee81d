/*
 * scan.c: every per-request figure of a report in one pass over the run's
 * request rows, in primary-key order.
 *
 * A row adds to the run's section, its class's (when the scenario has
 * classes), with --by tenant and --by tier its tenant's and its tier's
 * (groups met as the rows come, each judged by the row's own class SLO)
 * and, with --by replica, its replica's -- and, disaggregated,
 * its decode replica's, without the prefill side's TTFT, queue and prefix
 * cache, which its prefill replica's has: counts by status, the
 * latency distributions of the measured requests (dist.c), the window and
 * token totals, SLO attainment against each section's targets, and the
 * prefix cache's tokens.  The same pass sweeps the replicas' queues: rows
 * come in id order, which is arrival order, and a request joins its
 * replica's queue no earlier than it arrived, so every join and leave
 * before the current row's arrival is final and can be applied in time
 * order from two small heaps (what is in flight at that instant), never a
 * sort of the whole run.  A database whose arrivals are not in id order
 * (not written by this engine) has its queues swept by usage.c's sort
 * instead.
 *
 * Each metric is computed here as the `request_metrics` view defines it
 * (record/recorder.c), operation for operation, so that a value is the same
 * double the view gives.  When a run's latencies do not fit the scan's
 * budget, the distributions spill to histograms and the rows are read again
 * (usually once) to pick their exact order statistics.
 */
#include "an_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BUDGET_VALUES ((size_t)8 << 20) /* 64 MiB of kept latencies, then histograms */

/* The scan's budget (what a refining pass keeps of one bucket is a 32nd of
 * it: 2 MiB by default). */
static size_t budget_of(size_t asked)
{
    return asked ? asked : BUDGET_VALUES;
}

/* The metrics of a section's distributions, in an_section's order. */
enum { M_TTFT, M_TPOT, M_TPOT_INCL, M_E2E, M_QUEUE, N_METRICS };

/* One section being accumulated: its figures go straight into out. */
typedef struct acc {
    an_section *out;
    an__dist m[N_METRICS];
    double first_arrival, last_finish;
    /* the queue's wait against the arrival time, as a least-squares line
     * (Welford's running means and co-moments: no cancellation however
     * late in a run the arrivals are) */
    int64_t qn;
    double qt, qw, qtw, qtt, q_last;
} acc;

/* A request's status, read once a row (the column's text, compared once). */
typedef enum status { ST_COMPLETED, ST_REJECTED, ST_TIMED_OUT, ST_UNFINISHED, ST_OTHER } status;

static status status_of(const char *s)
{
    static const char *const names[] = {"completed", "rejected", "timed_out", "unfinished"};
    for (int i = 0; i < 4; i++)
        if (s[0] == names[i][0] && !strcmp(s, names[i])) return (status)i;
    return ST_OTHER;
}

/* One request row, as read. */
typedef struct row {
    int64_t id;      /* the stream's order; a scan reads rows in it */
    int replica;     /* -1: NULL */
    int decode_replica; /* -1: NULL (not disaggregated, or never decoded) */
    int cls;         /* its class's index in the report's classes; -1: none of them */
    int tenant, tier; /* its groups' indices (scan.tenants, tiers); -1: not grouped */
    status status;
    bool shed;       /* rejected: shed by the gateway (before schema 13: any rejection) */
    bool retried;    /* streamed rows only: an attempt its client retried (read_rows'
                      * query leaves those out) */
    double arrival, enqueue, scheduled, first_token, finish; /* NAN: NULL */
    double prompt, output, preemptions, cached;
} row;

/* ---- queue sweep ---- */

/* A future join or leave of replica k's queue at time t. */
typedef struct qevent {
    double t;
    int k;
} qevent;

typedef struct heap {
    qevent *e;
    size_t n, cap;
} heap;

static void heap_push(heap *h, qevent x)
{
    if (h->n == h->cap) h->e = util_xrealloc(h->e, (h->cap = h->cap ? 2 * h->cap : 256) * sizeof *h->e);
    size_t i = h->n++;
    while (i > 0 && h->e[(i - 1) / 2].t > x.t) {
        h->e[i] = h->e[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->e[i] = x;
}

static qevent heap_pop(heap *h)
{
    qevent top = h->e[0], last = h->e[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->e[c + 1].t < h->e[c].t) c++;
        if (last.t <= h->e[c].t) break;
        h->e[i] = h->e[c];
        i = c;
    }
    if (h->n) h->e[i] = last;
    return top;
}

typedef struct sweep {
    heap joins, leaves;
    int64_t *len;     /* per replica index, [n]: the cluster */
    double *waited;
    int64_t *waiting;      /* still queued at the run's end (interrupted runs) ... */
    double *waiting_since; /* ... and the sum of their enqueue times */
    int n;
    double last_arrival;
    bool unordered;   /* arrivals went back in time: usage.c sorts instead */
} sweep;

/* Applies every event before `until` in time order, leaves before joins at
 * one instant (a request handed straight on never stands in line). */
static void sweep_to(sweep *s, an_report *r, double until)
{
    for (;;) {
        bool leave = s->leaves.n && s->leaves.e[0].t < until;
        bool join = s->joins.n && s->joins.e[0].t < until;
        if (!leave && !join) return;
        if (leave && (!join || s->leaves.e[0].t <= s->joins.e[0].t)) {
            qevent e = heap_pop(&s->leaves);
            s->len[e.k]--;
            s->len[s->n]--;
            continue;
        }
        qevent e = heap_pop(&s->joins);
        an_use *u = &r->replicas[e.k];
        if (++s->len[e.k] > u->queue_peak) u->queue_peak = s->len[e.k];
        if (++s->len[s->n] > r->use.queue_peak) r->use.queue_peak = s->len[s->n];
    }
}

/* When a queued request stopped waiting: scheduled, else timed out (its
 * client's deadline), else still waiting when an interrupted run ended; as
 * usage.c's LEFT_QUEUE.  NAN: it never waited. */
static double left_queue(const row *x, const an_report *r)
{
    if (!isnan(x->scheduled)) return x->scheduled;
    if (x->status == ST_TIMED_OUT) return x->arrival + r->timeout_s;
    if (x->status == ST_UNFINISHED) return INFINITY; /* at the run's end: see finish_queues */
    return NAN;
}

static void sweep_row(sweep *s, an_report *r, int k, const row *x)
{
    if (x->arrival < s->last_arrival) s->unordered = true;
    s->last_arrival = x->arrival;
    if (s->unordered) return;
    sweep_to(s, r, x->arrival); /* nothing later can come before this arrival */
    double left = left_queue(x, r);
    if (k < 0 || isnan(x->enqueue) || isnan(left)) return;
    heap_push(&s->joins, (qevent){x->enqueue, k});
    heap_push(&s->leaves, (qevent){left, k});
    if (isinf(left)) { /* waiting still when the run ended, which the rows do not say */
        s->waiting[k]++;
        s->waiting[s->n]++;
        s->waiting_since[k] += x->enqueue;
        s->waiting_since[s->n] += x->enqueue;
        return;
    }
    s->waited[k] += left - x->enqueue;
    s->waited[s->n] += left - x->enqueue;
}

/* ---- sections ---- */

static void acc_init(acc *a, an_section *out)
{
    a->out = out;
    for (int i = 0; i < N_METRICS; i++) an__dist_init(&a->m[i], i == M_TPOT);
    a->first_arrival = INFINITY;
    a->last_finish = -INFINITY;
    a->q_last = -INFINITY;
}

/* One measured request's wait in the queue at its arrival time. */
static void acc_wait(acc *a, double t, double wait)
{
    if (isnan(wait)) return;
    double dt = t - a->qt;
    a->qn++;
    a->qt += dt / (double)a->qn;
    a->qw += (wait - a->qw) / (double)a->qn;
    a->qtw += dt * (wait - a->qw);
    a->qtt += dt * (t - a->qt);
    if (t > a->q_last) a->q_last = t;
}

/* Whether the queue grew throughout the run: a request's wait rose by at
 * least AN_QUEUE_GROWTH seconds a second of arrivals, and by a second or
 * more over them -- a cluster that could not keep up with a finite
 * stream, which ended before the overload guard would stop it.  A stable
 * queue's wait does not trend with the arrival time, whatever its level. */
static void acc_growth(acc *a)
{
    an_section *s = a->out;
    s->queue_growth = a->qn >= 2 && a->qtt > 0 ? a->qtw / a->qtt : NAN;
    s->arrival_span_s = a->qn >= 2 ? a->q_last - a->first_arrival : NAN;
    s->queue_grew = s->queue_growth >= AN_QUEUE_GROWTH &&
                    s->queue_growth * s->arrival_span_s >= 1.0;
}

static void acc_fini(acc *a)
{
    for (int i = 0; i < N_METRICS; i++) an__dist_fini(&a->m[i]);
}

/* The view's columns of a measured row; NAN where the view has NULL
 * (SQLite's arithmetic on NULL, or its division by zero). */
static void metrics(const row *x, double *v)
{
    v[M_TTFT] = x->first_token - x->arrival;
    v[M_TPOT] = x->output >= 2 ? (x->finish - x->first_token) / (x->output - 1) : NAN;
    v[M_TPOT_INCL] = x->output != 0 ? (x->finish - x->arrival) / x->output : NAN;
    v[M_E2E] = x->finish - x->arrival;
    v[M_QUEUE] = x->scheduled - x->enqueue;
}

/* Meets every target of the SLO (with load_slo's SQL: a NULL metric fails
 * a comparison, a NULL TPOT passes its target). */
bool an__meets_slo(const an_slo *slo, double ttft, double tpot, double e2e)
{
    return (isnan(slo->ttft_s) || ttft <= slo->ttft_s) &&
           (isnan(slo->tpot_s) || isnan(tpot) || tpot <= slo->tpot_s) &&
           (isnan(slo->e2e_s) || e2e <= slo->e2e_s);
}

static bool good(const an_slo *slo, const double *v)
{
    return an__meets_slo(slo, v[M_TTFT], v[M_TPOT], v[M_E2E]);
}

/* Whether a section has metric m: a decode replica's (decode) leaves the
 * prefill side's TTFT and queue to the replica that prefilled. */
static bool side_has(int m, bool decode)
{
    return !decode || (m != M_TTFT && m != M_QUEUE);
}

/* slo: the row's targets -- the section's own, or for a tenant's or a
 * tier's the row's class's. */
static void acc_row(acc *a, const row *x, const an_slo *slo, double warmup, bool decode,
                    size_t *stored)
{
    an_section *s = a->out;
    bool completed = x->status == ST_COMPLETED, late = x->arrival >= warmup;
    s->arrived++;
    s->handed_over += decode;
    s->completed += completed;
    s->rejected += x->status == ST_REJECTED;
    s->shed += x->shed;
    s->timed_out += x->status == ST_TIMED_OUT;
    s->unfinished += x->status == ST_UNFINISHED;
    s->preempted += x->preemptions > 0;
    s->preemptions += (int64_t)x->preemptions;
    if (!late) return;
    if (x->arrival < a->first_arrival) a->first_arrival = x->arrival;
    if (!isnan(x->scheduled) && !decode) {
        s->cached_tokens += x->cached;
        s->prompt_tokens_scheduled += x->prompt;
    }
    s->ended++; /* every request sent after warm-up: one not completed fails every SLO */
    if (!completed) return;
    double v[N_METRICS];
    metrics(x, v);
    s->good += good(slo, v);
    s->measured++;
    if (!decode) acc_wait(a, x->arrival, v[M_QUEUE]);
    if (x->finish > a->last_finish) a->last_finish = x->finish;
    s->input_tokens += x->prompt;
    s->output_tokens += x->output;
    for (int i = 0; i < N_METRICS; i++)
        if (!isnan(v[i]) && side_has(i, decode)) an__dist_add(&a->m[i], v[i], stored);
}

static void acc_refine(acc *a, const row *x, double warmup, bool decode)
{
    if (x->arrival < warmup || x->status != ST_COMPLETED) return;
    double v[N_METRICS];
    metrics(x, v);
    for (int i = 0; i < N_METRICS; i++)
        if (!isnan(v[i]) && side_has(i, decode) && a->m[i].ranks)
            an__dist_refine(&a->m[i], v[i]);
}

static void acc_summarise(acc *a)
{
    an_section *s = a->out;
    an_stats *out[] = {&s->ttft, &s->tpot, &s->tpot_incl_ttft, &s->e2e, &s->queue};
    for (int i = 0; i < N_METRICS; i++) an__dist_stats(&a->m[i], out[i]);
    an__dist_reciprocal_stats(&a->m[M_TPOT], &s->per_user_tokens_per_s);
    s->window_s = isfinite(a->first_arrival) && isfinite(a->last_finish)
                      ? a->last_finish - a->first_arrival : NAN;
    s->window_start_s = a->first_arrival;
    s->window_end_s = a->last_finish;
    s->requests_per_s = an__ratio((double)s->measured, s->window_s);
    s->input_tokens_per_s = an__ratio(s->input_tokens, s->window_s);
    s->output_tokens_per_s = an__ratio(s->output_tokens, s->window_s);
    s->prefix_hit_rate = an__ratio(s->cached_tokens, s->prompt_tokens_scheduled);
    acc_growth(a);
    an__set_attainment(s, s->slo.set);
}

void an__set_attainment(an_section *s, bool applies)
{
    s->attainment = applies ? an__ratio((double)s->good, (double)s->ended) : NAN;
    s->goodput_requests_per_s = applies ? an__ratio((double)s->good, s->window_s) : NAN;
}

/* ---- the scan ---- */

/* ---- groups: tenants and tiers, met as the rows come ---- */

/* One tenant or tier: the column's text (NULL: the NULL group), its order
 * in the report, its section (where its accumulator writes: allocated
 * alone, so that it stays put as groups are added) and that accumulator's
 * index in scan.accs. */
typedef struct group {
    char *key;
    double order;
    bool slo_applies; /* a request of it had an SLO */
    an_section sec;
    int acc;
} group;

/* The groups of one column: a table from text to group, open addressing on
 * FNV-1a (a scan may meet as many values as a scenario has classes). */
typedef struct groups {
    bool on;
    int col;          /* the read's column */
    group **g;
    int n, cap;
    int *slot;        /* group index + 1; 0: empty */
    size_t n_slots;   /* a power of two, at least twice n */
    int null_group;   /* -1: none yet */
} groups;

static uint64_t hash_text(const char *t)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (; *t; t++) h = (h ^ (unsigned char)*t) * 0x100000001b3u;
    return h;
}

/* The slot of key: its group's, or the empty one where it would go. */
static size_t slot_of(const groups *gs, const char *key)
{
    size_t mask = gs->n_slots - 1, i = hash_text(key) & mask;
    while (gs->slot[i] && strcmp(gs->g[gs->slot[i] - 1]->key, key)) i = (i + 1) & mask;
    return i;
}

static void groups_rehash(groups *gs)
{
    free(gs->slot);
    gs->n_slots = gs->n_slots ? 2 * gs->n_slots : 16;
    gs->slot = util_xcalloc(gs->n_slots, sizeof *gs->slot);
    for (int i = 0; i < gs->n; i++)
        if (gs->g[i]->key) gs->slot[slot_of(gs, gs->g[i]->key)] = i + 1;
}

static void groups_fini(groups *gs)
{
    for (int i = 0; i < gs->n; i++) {
        free(gs->g[i]->key);
        free(gs->g[i]);
    }
    free(gs->g);
    free(gs->slot);
}

typedef struct scan {
    const an__query *q; /* the database: the first pass's (a scan), or the refining passes' */
    double warmup;
    size_t budget;
    an_report *r;
    const int *replica_ids; /* the replicas' numbers, by index */
    int *index_of;          /* a replica's number -> its index in r->replicas, or -1 ... */
    int n_index;            /* ... for numbers 0 .. n_index - 1; 0: search replica_ids */
    acc *accs;              /* [0] the run, the classes, the replicas, the models, then the
                             * groups, as the rows bring them */
    int n_accs, first_class, first_replica, first_model;
    groups tenants, tiers;
    bool first_pass;
    int64_t priorities;     /* rows with a priority (none: the run predates them) */
    bool too_many;          /* a column had more values than a run could: the scan stopped */
    double *rep_cached, *rep_prompt;
    sweep sw;
    size_t stored;          /* latencies kept, until ... */
    bool spilled;           /* ... past the budget: histograms since */
} scan;

/* The index of class name cls among the report's classes, or -1 (a run
 * without classes, or a class the scenario does not have). */
static int class_index(const an_report *r, const char *cls)
{
    for (int i = 0; r->has_classes && i < r->n_classes; i++)
        if (!strcmp(r->classes[i].name, cls)) return i;
    return -1;
}

/* The read's columns after the first two, in order, for what a check says. */
static const char *const row_columns[] = {
    "arrival_s", "enqueue_s", "first_scheduled_s", "first_token_s", "finish_s", "prompt_tokens",
    "output_tokens", "preemptions", "status", "cached_tokens"};

/* Column i as a number: NAN for NULL (where null allows it); false, with
 * why, when it is no number a run writes -- text, a blob, not finite. */
static bool number(sqlite3_stmt *st, int i, bool null, double *v, char *why, size_t n)
{
    int type = sqlite3_column_type(st, i);
    *v = type == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
    const char *bad = type == SQLITE_NULL ? (null ? NULL : "NULL")
                      : type != SQLITE_INTEGER && type != SQLITE_FLOAT ? "not a number"
                      : !isfinite(*v) ? "not finite" : NULL;
    if (bad) snprintf(why, n, "its %s is %s", row_columns[i - 2], bad);
    return !bad;
}

/* Reads row x; false, with why, when its values are none a run writes, as
 * input is checked: times numbers, the arrival at or after 0 and every
 * later time at or after it, a token count at least one, a count of
 * cached tokens or preemptions not negative. */
static bool read_row(sqlite3_stmt *st, const an_report *r, row *x, char *why, size_t n)
{
    x->replica = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 0);
    const unsigned char *c = sqlite3_column_text(st, 1), *s = sqlite3_column_text(st, 10);
    x->cls = class_index(r, c ? (const char *)c : "");
    x->status = s ? status_of((const char *)s) : ST_OTHER;
    x->decode_replica = sqlite3_column_type(st, 12) == SQLITE_NULL ? -1
                                                                    : sqlite3_column_int(st, 12);
    double *v[] = {&x->arrival, &x->enqueue, &x->scheduled, &x->first_token, &x->finish,
                   &x->prompt, &x->output, &x->preemptions};
    for (int i = 0; i < 8; i++)
        if (!number(st, 2 + i, i >= 1 && i <= 4, v[i], why, n)) return false;
    if (!number(st, 11, false, &x->cached, why, n)) return false;
    x->shed = sqlite3_column_int(st, 16) != 0;
    if (x->arrival < 0) {
        snprintf(why, n, "its arrival_s is %g, before the run began", x->arrival);
        return false;
    }
    for (int i = 1; i <= 4; i++)
        if (*v[i] < x->arrival) {
            snprintf(why, n, "its %s (%g) is before its arrival (%g)", row_columns[i], *v[i],
                     x->arrival);
            return false;
        }
    if (x->prompt < 1 || x->output < 1 || x->preemptions < 0 || x->cached < 0) {
        snprintf(why, n, "its %s is %g", x->prompt < 1 ? "prompt_tokens" : x->output < 1 ?
                 "output_tokens" : x->preemptions < 0 ? "preemptions" : "cached_tokens",
                 x->prompt < 1 ? x->prompt : x->output < 1 ? x->output : x->preemptions < 0 ?
                 x->preemptions : x->cached);
        return false;
    }
    return true;
}

static int replica_index(const scan *s, int replica)
{
    if (s->n_index) return replica >= 0 && replica < s->n_index ? s->index_of[replica] : -1;
    for (int i = 0; replica >= 0 && i < s->r->n_replicas; i++) /* numbers far apart */
        if (s->replica_ids[i] == replica) return i;
    return -1;
}

/* The most sections a row belongs to: the run, its class, model, tenant,
 * tier, replica and decode replica. */
#define MAX_SECTIONS 7

/* The model of a row of class cls (models.c), or -1: no --by model, or a
 * class the scenario does not have. */
static int model_of(const an_report *r, int cls)
{
    if (!r->n_models) return -1;
    if (!r->has_classes) return r->model_of_class[0];
    return cls >= 0 ? r->model_of_class[cls] : -1;
}

/* The sections x belongs to, into which[], each marked when it is x's
 * decode replica's (decode[]); returns how many. */
static int sections_of(const scan *s, const row *x, int k, int *which, bool *decode)
{
    int n = 0;
    which[n] = 0;
    decode[n++] = false;
    if (x->cls >= 0) {
        which[n] = s->first_class + x->cls;
        decode[n++] = false;
    }
    int m = model_of(s->r, x->cls);
    if (m >= 0) {
        which[n] = s->first_model + m;
        decode[n++] = false;
    }
    if (x->tenant >= 0) {
        which[n] = s->tenants.g[x->tenant]->acc;
        decode[n++] = false;
    }
    if (x->tier >= 0) {
        which[n] = s->tiers.g[x->tier]->acc;
        decode[n++] = false;
    }
    if (!s->r->by_replica) return n;
    if (k >= 0) {
        which[n] = s->first_replica + k;
        decode[n++] = false;
    }
    int kd = x->decode_replica >= 0 ? replica_index(s, x->decode_replica) : -1;
    if (kd >= 0 && kd != k) {
        which[n] = s->first_replica + kd;
        decode[n++] = true;
    }
    return n;
}

/* The targets a row is judged by in a group: its class's, as the run's
 * attainment judges it; the run's for a row of no class. */
static const an_slo *row_slo(const scan *s, const row *x)
{
    return x->cls >= 0 ? &s->r->classes[x->cls].req.slo : &s->r->req.slo;
}

static void pass_one(scan *s, const row *x)
{
    int k = replica_index(s, x->replica);
    int which[MAX_SECTIONS];
    bool decode[MAX_SECTIONS];
    int n = sections_of(s, x, k, which, decode);
    for (int i = 0; i < n; i++) {
        acc *a = &s->accs[which[i]];
        /* a model, tenant or tier spans classes: each row by its own class's targets */
        const an_slo *slo = which[i] >= s->first_model ? row_slo(s, x) : &a->out->slo;
        acc_row(a, x, slo, s->warmup, decode[i], &s->stored);
    }
    if (!s->spilled && s->stored > s->budget) {
        for (int a = 0; a < s->n_accs; a++)
            for (int m = 0; m < N_METRICS; m++) an__dist_spill(&s->accs[a].m[m]);
        s->spilled = true;
    }
    if (k >= 0 && x->arrival >= s->warmup && !isnan(x->scheduled)) {
        s->rep_cached[k] += x->cached;
        s->rep_prompt[k] += x->prompt;
    }
    sweep_row(&s->sw, s->r, k, x);
}

static void pass_refine(scan *s, const row *x)
{
    int k = replica_index(s, x->replica);
    int which[MAX_SECTIONS];
    bool decode[MAX_SECTIONS];
    int n = sections_of(s, x, k, which, decode);
    for (int i = 0; i < n; i++) acc_refine(&s->accs[which[i]], x, s->warmup, decode[i]);
}

/* A new group of gs for the current row, with its section and accumulator
 * (moving scan.accs, which nothing points into); -1 past the cap. */
static int group_add(scan *s, groups *gs, sqlite3_stmt *st, const char *key)
{
    if (gs->n >= UTIL_MAX_CLASSES) { /* tenants and priorities come from classes */
        s->too_many = true;
        return -1;
    }
    if (gs->n == gs->cap) {
        gs->cap = gs->cap ? 2 * gs->cap : 8;
        gs->g = util_xrealloc(gs->g, (size_t)gs->cap * sizeof *gs->g);
    }
    group *g = util_xcalloc(1, sizeof *g);
    g->key = key ? util_xstrdup(key) : NULL;
    g->order = sqlite3_column_type(st, gs->col) == SQLITE_INTEGER
                   ? sqlite3_column_double(st, gs->col) : INFINITY;
    g->sec.slo = (an_slo){NAN, NAN, NAN, NAN, false}; /* each row brings its class's */
    g->acc = s->n_accs++;
    s->accs = util_xrealloc(s->accs, (size_t)s->n_accs * sizeof *s->accs);
    acc_init(&s->accs[g->acc], &g->sec);
    gs->g[gs->n++] = g;
    if (!key) return gs->null_group = gs->n - 1;
    if (2 * (size_t)gs->n > gs->n_slots) groups_rehash(gs);
    else gs->slot[slot_of(gs, key)] = gs->n;
    return gs->n - 1;
}

/* The group of the current row in gs, made when the first pass meets a new
 * value (a refining pass reads the same rows); -1 when gs is off. */
static int group_of(scan *s, groups *gs, sqlite3_stmt *st, const row *x)
{
    if (!gs->on) return -1;
    const char *key = (const char *)sqlite3_column_text(st, gs->col);
    int i = key ? (gs->n_slots ? gs->slot[slot_of(gs, key)] - 1 : -1) : gs->null_group;
    if (i < 0 && s->first_pass) i = group_add(s, gs, st, key);
    if (i >= 0 && s->first_pass) gs->g[i]->slo_applies |= row_slo(s, x)->set;
    return i;
}

static int read_rows(scan *s, void (*each)(scan *, const row *), util_diag *d)
{
    bool grouped = s->tenants.on || s->tiers.on;
    char *sql = util_xasprintf(
        "SELECT replica, %s, arrival_s, enqueue_s, first_scheduled_s, first_token_s, finish_s,"
        " prompt_tokens, output_tokens, preemptions, status, %s, decode_replica, id, %s, %s"
        " FROM requests WHERE run_id = ?1%s",
        s->r->has_classes ? "class" : "NULL", /* no classes: no class to compare */
        s->q->schema >= AN__SCHEMA_CACHE ? "cached_tokens" : "0",
        grouped ? "tenant, priority" : "NULL, NULL", /* report.c checks the schema */
        s->q->schema >= AN__SCHEMA_RETRY ? "reason = 'shed'" : "status = 'rejected'",
        an__counted(s->q->schema));
    sqlite3_stmt *st = an__prepare(s->q, sql);
    free(sql);
    if (!st) return an__db_fail(s->q->db, d, "cannot read requests");
    int rc = SQLITE_DONE;
    row x;
    s->first_pass = each == pass_one;
    char why[128];
    while (!s->too_many && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (read_row(st, s->r, &x, why, sizeof why)) {
            x.tenant = group_of(s, &s->tenants, st, &x);
            x.tier = group_of(s, &s->tiers, st, &x);
            s->priorities += s->first_pass && sqlite3_column_type(st, 15) != SQLITE_NULL;
            each(s, &x);
            continue;
        }
        if (s->first_pass && !s->r->skipped_rows++)
            snprintf(s->r->skipped_why, sizeof s->r->skipped_why, "request %lld: %s",
                     (long long)sqlite3_column_int64(st, 13), why);
    }
    sqlite3_finalize(st);
    if (s->too_many)
        return util_diag_add(d, "run %lld: its requests have more than %d distinct %s, more than "
                                "a scenario's classes can give: the database was edited or is "
                                "damaged", (long long)s->q->run, UTIL_MAX_CLASSES,
                             s->tenants.n > s->tiers.n ? "tenants" : "priorities");
    return rc == SQLITE_DONE ? UTIL_OK : an__db_fail(s->q->db, d, "cannot read requests");
}

/* Plans every distribution; while some need another pass, reads the rows
 * again for them. */
static int resolve(scan *s, util_diag *d)
{
    size_t collect_max = s->budget / 32;
    bool more = false;
    for (int a = 0; a < s->n_accs; a++)
        for (int m = 0; m < N_METRICS; m++) more |= an__dist_plan(&s->accs[a].m[m], collect_max);
    while (more) {
        for (int a = 0; a < s->n_accs; a++)
            for (int m = 0; m < N_METRICS; m++) an__dist_begin_pass(&s->accs[a].m[m]);
        int rc = read_rows(s, pass_refine, d);
        more = false;
        for (int a = 0; a < s->n_accs; a++)
            for (int m = 0; m < N_METRICS; m++)
                more |= an__dist_end_pass(&s->accs[a].m[m], collect_max);
        if (rc) return rc;
    }
    return UTIL_OK;
}

static void finish_queues(scan *s)
{
    an_report *r = s->r;
    sweep_to(&s->sw, r, INFINITY);
    for (int k = 0; k <= r->n_replicas; k++) /* those still queued waited until the end */
        s->sw.waited[k] += (double)s->sw.waiting[k] * r->sim_time_s - s->sw.waiting_since[k];
    for (int k = 0; k < r->n_replicas; k++)
        r->replicas[k].queue_mean = an__ratio(s->sw.waited[k], r->sim_time_s);
    r->use.queue_mean = an__ratio(s->sw.waited[r->n_replicas], r->sim_time_s);
}

static void scan_init(scan *s, const an__query *q, double warmup, size_t budget, an_report *r,
                      const int *replica_ids)
{
    int nr = r->n_replicas;
    *s = (scan){.q = q, .warmup = warmup, .budget = budget_of(budget), .r = r,
                .replica_ids = replica_ids};
    int top = 0; /* this engine numbers replicas 0 .. n - 1: a table of them */
    for (int i = 0; i < nr; i++)
        if (replica_ids[i] >= top) top = replica_ids[i] + 1;
    if (top <= 4 * nr + 1024) {
        s->n_index = top;
        s->index_of = util_xmalloc((size_t)(top ? top : 1) * sizeof *s->index_of);
        for (int i = 0; i < top; i++) s->index_of[i] = -1;
        for (int i = 0; i < nr; i++)
            if (replica_ids[i] >= 0) s->index_of[replica_ids[i]] = i;
    }
    s->first_class = 1;
    s->first_replica = 1 + (r->has_classes ? r->n_classes : 0);
    s->first_model = s->first_replica + (r->by_replica ? nr : 0);
    s->n_accs = s->first_model + r->n_models;
    s->tenants = (groups){.on = r->by_tenant, .col = 14, .null_group = -1};
    s->tiers = (groups){.on = r->by_tier, .col = 15, .null_group = -1};
    s->accs = util_xcalloc((size_t)s->n_accs, sizeof *s->accs);
    acc_init(&s->accs[0], &r->req);
    for (int i = 0; r->has_classes && i < r->n_classes; i++)
        acc_init(&s->accs[s->first_class + i], &r->classes[i].req);
    for (int i = 0; r->by_replica && i < nr; i++)
        acc_init(&s->accs[s->first_replica + i], &r->replicas[i].req);
    for (int m = 0; m < r->n_models; m++) acc_init(&s->accs[s->first_model + m], &r->models[m].req);
    s->rep_cached = util_xcalloc((size_t)nr + 1, sizeof *s->rep_cached);
    s->rep_prompt = util_xcalloc((size_t)nr + 1, sizeof *s->rep_prompt);
    s->sw.n = nr;
    s->sw.len = util_xcalloc((size_t)nr + 1, sizeof *s->sw.len);
    s->sw.waited = util_xcalloc((size_t)nr + 1, sizeof *s->sw.waited);
    s->sw.waiting = util_xcalloc((size_t)nr + 1, sizeof *s->sw.waiting);
    s->sw.waiting_since = util_xcalloc((size_t)nr + 1, sizeof *s->sw.waiting_since);
    s->sw.last_arrival = -INFINITY;
}

static void scan_fini(scan *s)
{
    free(s->index_of);
    for (int a = 0; a < s->n_accs; a++) acc_fini(&s->accs[a]);
    free(s->accs);
    free(s->rep_cached);
    free(s->rep_prompt);
    free(s->sw.joins.e);
    free(s->sw.leaves.e);
    free(s->sw.len);
    free(s->sw.waited);
    free(s->sw.waiting);
    free(s->sw.waiting_since);
    groups_fini(&s->tenants);
    groups_fini(&s->tiers);
}

/* ---- the groups into the report ---- */

static const char *const tier_names[] = {"critical", "standard", "batch", "sheddable",
                                         "background"}; /* workloads' wl_tier_names */

const char *an_tier_name(int64_t priority)
{
    return priority >= -1 && priority <= 3 ? tier_names[priority + 1] : NULL;
}

/* The report's order: by order (a tier's priority), then by name, the NULL
 * group last. */
static int group_cmp(const void *pa, const void *pb)
{
    const group *a = *(group *const *)pa, *b = *(group *const *)pb;
    if (!a->key || !b->key) return !a->key - !b->key;
    if (a->order != b->order) return a->order < b->order ? -1 : 1;
    return strcmp(a->key, b->key);
}

/* gs's groups as the report's, in its order; tier: named as tiers (else
 * tenants), null the NULL group's name. */
static an_group *groups_out(groups *gs, bool tier, const char *null, int *n)
{
    qsort(gs->g, (size_t)gs->n, sizeof *gs->g, group_cmp); /* the scan is done with them */
    an_group *out = util_xcalloc((size_t)(gs->n ? gs->n : 1), sizeof *out);
    for (int i = 0; i < gs->n; i++) {
        const group *g = gs->g[i];
        an_group *o = &out[i];
        o->null = !g->key;
        o->priority = tier && isfinite(g->order) ? g->order : NAN;
        const char *name = !isnan(o->priority) ? an_tier_name((int64_t)o->priority) : NULL;
        o->name = util_xstrdup(o->null ? null : name ? name : g->key);
        o->req = g->sec;
        an__set_attainment(&o->req, g->slo_applies);
        o->shed_share = an__ratio((double)o->req.shed, (double)o->req.arrived);
    }
    *n = gs->n;
    return out;
}

/* Jain's index over the named tenants of their good requests over those
 * ended after warm-up (an_report.tenant_jain). */
static void tenant_fairness(an_report *r)
{
    double *x = util_xmalloc((size_t)(r->n_tenants ? r->n_tenants : 1) * sizeof *x);
    size_t n = 0;
    for (int i = 0; i < r->n_tenants; i++)
        if (!r->tenants[i].null && r->tenants[i].req.ended > 0)
            x[n++] = (double)r->tenants[i].req.good / (double)r->tenants[i].req.ended;
    r->tenant_jain = an_jain_index(x, n);
    r->tenant_jain_n = (int)n;
    free(x);
}

/* The groups into the report -- unless the run's rows carry no priority,
 * which every row since schema 11 has: a run recorded before it (in a
 * database upgraded since) or imported knows no tenant or tier. */
static int finish_groups(scan *s, util_diag *d)
{
    an_report *r = s->r;
    if (!s->tenants.on && !s->tiers.on) return UTIL_OK;
    if (r->req.arrived > 0 && s->priorities == 0)
        return util_diag_add(d, "--by %s: run %lld's requests carry no tenant or priority (it "
                                "was recorded before they were, or imported)",
                             s->tenants.on ? "tenant" : "tier", (long long)s->q->run);
    if (s->tenants.on) r->tenants = groups_out(&s->tenants, false, "(none)", &r->n_tenants);
    if (s->tiers.on) r->tiers = groups_out(&s->tiers, true, "(not recorded)", &r->n_tiers);
    if (s->tenants.on) tenant_fairness(r);
    return UTIL_OK;
}

/* After the first pass: the percentiles resolved (reading q's rows again
 * if the budget was exceeded), every section summarised, the replicas' hit
 * rates and, when the rows came in arrival order, their queues. */
static int scan_finish(scan *s, const an__query *q, bool *queues_unordered, util_diag *d)
{
    an_report *r = s->r;
    s->q = q;
    int rc = resolve(s, d);
    if (rc) return rc;
    for (int a = 0; a < s->n_accs; a++) acc_summarise(&s->accs[a]);
    rc = finish_groups(s, d);
    if (rc) return rc;
    for (int k = 0; k < r->n_replicas; k++)
        r->replicas[k].prefix_hit_rate =
            q->schema >= AN__SCHEMA_CACHE ? an__ratio(s->rep_cached[k], s->rep_prompt[k]) : NAN;
    r->use.prefix_hit_rate = r->req.prefix_hit_rate;
    *queues_unordered = s->sw.unordered;
    if (!s->sw.unordered) finish_queues(s);
    return UTIL_OK;
}

int an__scan_requests(const an__query *q, an_report *r, const int *replica_ids,
                      bool *queues_unordered, util_diag *d)
{
    scan s;
    scan_init(&s, q, q->warmup, q->budget, r, replica_ids);
    int rc = read_rows(&s, pass_one, d);
    if (!rc) rc = scan_finish(&s, q, queues_unordered, d);
    scan_fini(&s);
    return rc;
}

/* ---- the rows as the engine makes them ---- */

/* A run's rows on their way to the database, summarised as they come: the
 * same first pass as a scan's, fed in id order (the engine ends requests out
 * of order; util_idring puts them back, as for the recorder), so that the
 * report `servesim run` prints need not read them back.  Its sections are
 * a skeleton report's, set up from the scenario as the report sets up its
 * own from the stored one. */
#define STREAM_RING_MIN 4096
#define STREAM_RING_MAX ((int64_t)1 << 20)

struct an_stream {
    an_report sk;       /* the sections being filled */
    int *ids;           /* replica numbers 0 .. n - 1 */
    scan sc;
    util_idring ring;   /* rows waiting for a smaller id */
    bool finished;
};

an_stream *an_stream_new(const cJSON *scenario, int replicas, const an_options *opt)
{
    an_stream *st = util_xcalloc(1, sizeof *st);
    an__report_setup(scenario, opt, &st->sk);
    st->sk.by_replica = opt && opt->by_replica;
    st->sk.n_replicas = replicas;
    st->sk.replicas = util_xcalloc((size_t)(replicas ? replicas : 1), sizeof *st->sk.replicas);
    st->ids = util_xcalloc((size_t)(replicas ? replicas : 1), sizeof *st->ids);
    for (int i = 0; i < replicas; i++) {
        st->ids[i] = i;
        st->sk.replicas[i].req.slo = st->sk.req.slo;
    }
    scan_init(&st->sc, NULL, st->sk.warmup_s, opt ? opt->scan_budget_values : 0, &st->sk, st->ids);
    util_idring_init(&st->ring, sizeof(row), STREAM_RING_MIN, STREAM_RING_MAX);
    return st;
}

static int stream_pass(void *ctx, const void *rec)
{
    const row *x = rec;
    if (!x->retried) pass_one(&((an_stream *)ctx)->sc, x); /* as read_rows leaves it out */
    return 0;
}

static int64_t row_id(const void *rec)
{
    return ((const row *)rec)->id;
}

void an_stream_add(an_stream *st, const an_request *q)
{
    row x = {.id = q->id, .replica = q->replica, .cls = class_index(&st->sk, q->cls ? q->cls : ""),
             .status = status_of(q->status ? q->status : ""), .arrival = q->arrival_s,
             .enqueue = q->enqueue_s, .scheduled = q->first_scheduled_s,
             .first_token = q->first_token_s, .finish = q->finish_s, .prompt = q->prompt_tokens,
             .output = q->output_tokens, .preemptions = q->preemptions, .cached = q->cached_tokens,
             .decode_replica = q->decode_replica, .tenant = -1, .tier = -1,
             .shed = q->shed, .retried = q->retried};
    util_idring_put(&st->ring, x.id, &x, row_id, stream_pass, st);
}

void an_stream_free(an_stream *st)
{
    if (!st) return;
    scan_fini(&st->sc);
    an_report_fini(&st->sk);
    free(st->ids);
    util_idring_fini(&st->ring);
    free(st);
}

/* The stream's sections into r (its report of the same run), when the
 * stream was set up as r was: the same warm-up, classes and replicas; else
 * false, and the report scans the rows itself. */
bool an__stream_sections(an_stream *st, const an__query *q, an_report *r, bool *queues_unordered,
                         int *rc, util_diag *d)
{
    an_report *sk = &st->sk;
    bool same = sk->warmup_s == r->warmup_s && sk->timeout_s == r->timeout_s &&
                sk->n_replicas == r->n_replicas &&
                sk->has_classes == r->has_classes && sk->n_classes == r->n_classes &&
                sk->by_replica == r->by_replica && sk->n_models == r->n_models &&
                !r->by_tenant && !r->by_tier &&
                !st->finished; /* the engine's rows carry no tenant: scan the stored ones */
    for (int i = 0; same && i < r->n_replicas; i++) same = r->replicas[i].replica == i;
    if (!same) return false;
    st->finished = true;
    util_idring_flush(&st->ring, stream_pass, st);
    sk->sim_time_s = r->sim_time_s; /* known now: the run's end, for those still queued */
    *rc = scan_finish(&st->sc, q, queues_unordered, d);
    if (*rc) return true;
    r->req = sk->req;
    for (int i = 0; i < r->n_classes; i++) r->classes[i].req = sk->classes[i].req;
    for (int i = 0; i < r->n_replicas; i++) {
        an_use *u = &r->replicas[i], *v = &sk->replicas[i];
        if (r->by_replica) u->req = v->req;
        u->prefix_hit_rate = v->prefix_hit_rate;
        u->queue_peak = v->queue_peak;
        u->queue_mean = v->queue_mean;
    }
    r->use.prefix_hit_rate = sk->use.prefix_hit_rate;
    r->use.queue_peak = sk->use.queue_peak;
    r->use.queue_mean = sk->use.queue_mean;
    return true;
}
