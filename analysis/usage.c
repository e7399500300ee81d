/*
 * usage.c: what the run used and what it cost -- utilisation per replica and
 * for the cluster, the cost of the GPUs over the measurement window, and
 * their energy, at the GPU and at the wall.  Everything comes from the
 * `replicas` rows (busy time, work, KV integral, energy while busy, power
 * and price figures) and the request rows (queue length).
 *
 * Time bases: utilisation and mean power are over the simulated time, so an
 * idle replica shows as idle; cost and energy are over the measurement
 * window, the same window the throughputs divide by, so that cost and energy
 * per token are per token the report counted.
 */
#include "an_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A replica's row, as the sums it is made of. */
typedef struct replica_row {
    int replica, gpus;
    char *pool, *gpu;
    double busy_s, batch_seq_s, flops, bytes, peak_flops, peak_bw;
    double kv_capacity, kv_peak, kv_token_s;
    double tdp_w, idle_w, energy_j, usd_per_gpu_hour, evicted_blocks;
    double weight_bytes, kv_bytes_per_token; /* NAN in a database older than schema 4 */
    double max_batch; /* its pool's scheduler.max_batch in the stored scenario; NAN: unknown */
    double spec[8];   /* replicas.spec_k .. spec_verify_s, in SPEC_COLUMNS' order */
    double lora[6];   /* replicas.lora_slots .. lora_kernel_s, in LORA_COLUMNS' order */
    double offload[10]; /* replicas.cpu_tier_bytes .. disk_loaded_bytes, OFFLOAD_COLUMNS' order */
    double created_s, retired_s; /* its life (LIFE_COLUMNS; retired_s NAN: to the end) */
} replica_row;

#define OFFLOAD_COLUMNS                                                                            \
    "cpu_tier_bytes, cpu_lookup_tokens, cpu_hit_tokens, cpu_stored_bytes, cpu_loaded_bytes,"      \
    " disk_tier_bytes, disk_lookup_tokens, disk_hit_tokens, disk_stored_bytes, disk_loaded_bytes"

/* A replica's life; one there at the end lived to the end, whatever its
 * retired_s says. */
#define LIFE_COLUMNS "created_s, CASE end_reason WHEN 'end_of_run' THEN NULL ELSE retired_s END"

#define LORA_COLUMNS                                                                               \
    "lora_slots, lora_lookups, lora_gpu_hits, lora_cpu_hits, lora_load_s, lora_kernel_s"

#define SPEC_COLUMNS                                                                               \
    "spec_k, spec_steps, spec_off_steps, spec_drafts, spec_draft_tokens, spec_accepted,"          \
    " spec_drafting_s, spec_verify_s"

/* A replica's batch slots, from the stored (effective) scenario: its pool's
 * scheduler, else the cluster's -- the row has no column for them, and the
 * scenario has every default filled in. */
#define MAX_BATCH                                                                                  \
    "coalesce((SELECT json_extract(p.value, '$.scheduler.max_batch') FROM runs,"                  \
    " json_each(runs.scenario, '$.cluster.pools') p WHERE runs.id = ?1"                           \
    " AND json_extract(p.value, '$.name') = replicas.pool),"                                      \
    " (SELECT json_extract(scenario, '$.cluster.scheduler.max_batch') FROM runs WHERE id = ?1))"

/* The replicas' columns, those an older schema lacks standing in as 0
 * (no prefix cache) or NULL (unknown).  Caller frees. */
static char *replica_select(int schema)
{
    return util_xasprintf(
        "SELECT replica, gpus, pool, gpu, busy_s, batch_seq_s, flops, bytes, peak_flops,"
        " peak_bw, kv_capacity_tokens, kv_peak_tokens, kv_token_s, tdp_w, idle_w,"
        " energy_j, usd_per_gpu_hour, %s, %s, " MAX_BATCH ", %s, %s, %s, %s FROM replicas"
        " WHERE run_id = ?1 ORDER BY replica",
        schema >= AN__SCHEMA_CACHE ? "evicted_blocks" : "0",
        schema >= AN__SCHEMA_PRECISION ? "weight_bytes, kv_bytes_per_token" : "NULL, NULL",
        schema >= AN__SCHEMA_SPEC ? SPEC_COLUMNS : "0, 0, 0, 0, 0, 0, 0, 0",
        schema >= AN__SCHEMA_LORA ? LORA_COLUMNS : "0, 0, 0, 0, 0, 0",
        schema >= AN__SCHEMA_OFFLOAD ? OFFLOAD_COLUMNS : "0, 0, 0, 0, 0, 0, 0, 0, 0, 0",
        schema >= AN__SCHEMA_LIFE ? LIFE_COLUMNS : "0, NULL");
}

/* A replica's figures are checked as input is: each a number, finite and
 * not negative, as a run writes them -- a price or an energy below zero
 * would make every cost and joule per token of the report negative. */
static bool replica_row_valid(sqlite3_stmt *st, const replica_row *x, const an__query *q,
                              util_diag *d)
{
    static const char *const names[] = {
        "busy_s", "batch_seq_s", "flops", "bytes", "peak_flops", "peak_bw", "kv_capacity_tokens",
        "kv_peak_tokens", "kv_token_s", "tdp_w", "idle_w", "energy_j", "usd_per_gpu_hour",
        "evicted_blocks"};
    for (int i = 0; i < 14; i++) {
        int type = sqlite3_column_type(st, 4 + i);
        double v = sqlite3_column_double(st, 4 + i);
        if (type == SQLITE_NULL || /* an older file's column it lacked: read as 0, as before */
            ((type == SQLITE_INTEGER || type == SQLITE_FLOAT) && isfinite(v) && v >= 0))
            continue;
        util_diag_add(d, "%s: run %lld, replica %d: replicas.%s is %s: no run writes that, so the "
                         "file was edited or is damaged",
                      sqlite3_db_filename(q->db, "main"), (long long)q->run, x->replica, names[i],
                      type == SQLITE_INTEGER || type == SQLITE_FLOAT
                          ? (isfinite(v) ? "negative" : "not finite")
                          : "not a number");
        return false;
    }
    return true;
}

static int read_replicas(const an__query *q, replica_row **out, int *n, util_diag *d)
{
    char *sql = replica_select(q->schema);
    sqlite3_stmt *st = an__prepare(q, sql);
    free(sql);
    if (!st) return an__db_fail(q->db, d, "cannot read replicas");
    int cap = 8, rc;
    replica_row *v = util_xmalloc((size_t)cap * sizeof *v);
    *n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) v = util_xrealloc(v, (size_t)(cap *= 2) * sizeof *v);
        replica_row *x = &v[(*n)++];
        x->replica = sqlite3_column_int(st, 0);
        x->gpus = sqlite3_column_int(st, 1);
        x->pool = util_xstrdup((const char *)sqlite3_column_text(st, 2));
        x->gpu = util_xstrdup((const char *)sqlite3_column_text(st, 3));
        double *f[] = {&x->busy_s,     &x->batch_seq_s, &x->flops,      &x->bytes,
                       &x->peak_flops, &x->peak_bw,     &x->kv_capacity, &x->kv_peak,
                       &x->kv_token_s, &x->tdp_w,       &x->idle_w,     &x->energy_j,
                       &x->usd_per_gpu_hour, &x->evicted_blocks};
        for (int i = 0; i < 14; i++) *f[i] = sqlite3_column_double(st, 4 + i);
        if (!replica_row_valid(st, x, q, d)) {
            rc = UTIL_EINPUT;
            break;
        }
        x->weight_bytes = an__column_num(st, 18);
        x->kv_bytes_per_token = an__column_num(st, 19);
        x->max_batch = an__column_num(st, 20);
        for (int i = 0; i < 8; i++) x->spec[i] = sqlite3_column_double(st, 21 + i);
        for (int i = 0; i < 6; i++) x->lora[i] = sqlite3_column_double(st, 29 + i);
        for (int i = 0; i < 10; i++) x->offload[i] = sqlite3_column_double(st, 35 + i);
        x->created_s = sqlite3_column_double(st, 45);
        x->retired_s = an__column_num(st, 46);
    }
    sqlite3_finalize(st);
    *out = v;
    if (rc == UTIL_EINPUT) return rc;
    return rc == SQLITE_DONE ? UTIL_OK : an__db_fail(q->db, d, "cannot read replicas");
}

/* ---- queue length, from the request rows ---- */

/* When a queued request stopped waiting: scheduled, else timed out (its
 * client's deadline), else still waiting at the end of an interrupted run.
 * ?7 = timeout_s, ?8 = the run's end.  Rejected requests never wait. */
#define LEFT_QUEUE                                                                                 \
    "coalesce(first_scheduled_s, CASE status WHEN 'timed_out' THEN arrival_s + ?7"               \
    " WHEN 'unfinished' THEN ?8 END)"
#define QUEUED " enqueue_s IS NOT NULL AND " LEFT_QUEUE " IS NOT NULL"

/* One instant a request joined (+1) or left (-1) a replica's queue. */
typedef struct queue_event {
    double t;
    int32_t replica; /* index into the replica rows */
    int8_t k;
} queue_event;

static int cmp_event(const void *a, const void *b)
{
    const queue_event *x = a, *y = b;
    if (x->t != y->t) return (x->t > y->t) - (x->t < y->t);
    return x->k - y->k; /* a leave before a join at the same instant: a request handed straight
                         * on never stands in line */
}

static int replica_index(const replica_row *x, int n, int replica)
{
    for (int i = 0; i < n; i++)
        if (x[i].replica == replica) return i;
    return -1;
}

/* Queue length per replica and for the cluster: the time-weighted mean
 * (total waiting time over the simulated time: the time average of the
 * length, by Little's law) and the peak, by one sweep over every join and
 * leave in time order.  scan.c sweeps in its one pass when the rows'
 * arrivals are in id order, as this engine writes them; this sort of every
 * event (32 bytes a request) is for a database whose rows are not. */
static int load_queues(const an__query *q, const replica_row *x, int n, an_report *r,
                       util_diag *d)
{
    sqlite3_stmt *st = an__prepare(q, "SELECT replica, enqueue_s, " LEFT_QUEUE " FROM requests"
                                      " WHERE run_id = ?1 AND replica IS NOT NULL AND" QUEUED);
    if (!st) return an__db_fail(q->db, d, "cannot query the queue");
    sqlite3_bind_double(st, 7, r->timeout_s);
    sqlite3_bind_double(st, 8, r->sim_time_s);
    size_t m = 0, cap = 1024;
    queue_event *ev = util_xmalloc(cap * sizeof *ev);
    double *waited = util_xcalloc((size_t)n + 1, sizeof *waited); /* [n]: the cluster */
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int k = replica_index(x, n, sqlite3_column_int(st, 0));
        double a = sqlite3_column_double(st, 1), b = sqlite3_column_double(st, 2);
        if (k < 0) continue;
        if (m + 2 > cap) ev = util_xrealloc(ev, (cap *= 2) * sizeof *ev);
        ev[m++] = (queue_event){a, k, 1};
        ev[m++] = (queue_event){b, k, -1};
        waited[k] += b - a;
        waited[n] += b - a;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) {
        qsort(ev, m, sizeof *ev, cmp_event);
        int64_t *len = util_xcalloc((size_t)n + 1, sizeof *len);
        for (size_t i = 0; i < m; i++) {
            an_use *u = &r->replicas[ev[i].replica];
            len[ev[i].replica] += ev[i].k;
            len[n] += ev[i].k;
            if (len[ev[i].replica] > u->queue_peak) u->queue_peak = len[ev[i].replica];
            if (len[n] > r->use.queue_peak) r->use.queue_peak = len[n];
        }
        free(len);
        for (int k = 0; k < n; k++) r->replicas[k].queue_mean = an__ratio(waited[k], r->sim_time_s);
        r->use.queue_mean = an__ratio(waited[n], r->sim_time_s);
    }
    free(ev);
    free(waited);
    return rc == SQLITE_DONE ? UTIL_OK : an__db_fail(q->db, d, "cannot read the queue");
}

/* ---- utilisation ---- */

/* Speculative decoding's totals over the replicas that speculate, and
 * what they say: the acceptance rate, the mean accepted length (tokens a
 * verification emits, as vLLM's mean acceptance length counts them), and
 * the shares of their busy time spent drafting and verifying. */
static void sum_spec(const replica_row *x, int n, an_spec *s)
{
    *s = (an_spec){0};
    for (int i = 0; i < n; i++) {
        const double *v = x[i].spec;
        if (v[0] <= 0) continue;
        if ((int64_t)v[0] > s->k) s->k = (int64_t)v[0];
        s->steps += (int64_t)v[1];
        s->off_steps += (int64_t)v[2];
        s->drafts += (int64_t)v[3];
        s->draft_tokens += (int64_t)v[4];
        s->accepted += (int64_t)v[5];
        s->drafting_s += v[6];
        s->verify_s += v[7];
        s->busy_s += x[i].busy_s;
    }
    s->acceptance_rate = an__ratio((double)s->accepted, (double)s->draft_tokens);
    s->mean_accepted_length = s->drafts > 0 ? 1 + (double)s->accepted / (double)s->drafts : NAN;
    s->tokens_per_step = an__ratio((double)s->drafts + (double)s->accepted, (double)s->steps);
    s->drafting_share = an__ratio(s->drafting_s, s->busy_s);
    s->verify_share = an__ratio(s->verify_s, s->busy_s);
}

/* The LoRA adapters' totals over the replicas, and their rates. */
static void sum_tier(const replica_row *x, int n, int at, an_tier *t)
{
    *t = (an_tier){0};
    for (int i = 0; i < n; i++) {
        t->tier_bytes += x[i].offload[at];
        t->lookup_tokens += (int64_t)x[i].offload[at + 1];
        t->hit_tokens += (int64_t)x[i].offload[at + 2];
        t->stored_bytes += x[i].offload[at + 3];
        t->loaded_bytes += x[i].offload[at + 4];
    }
    t->hit_rate = an__ratio((double)t->hit_tokens, (double)t->lookup_tokens);
}

static void sum_offload(const replica_row *x, int n, an_offload *o)
{
    sum_tier(x, n, 0, &o->cpu);
    sum_tier(x, n, 5, &o->disk);
}

static void sum_lora(const replica_row *x, int n, an_lora *l)
{
    *l = (an_lora){0};
    for (int i = 0; i < n; i++) {
        l->slots += (int64_t)x[i].lora[0];
        l->lookups += (int64_t)x[i].lora[1];
        l->gpu_hits += (int64_t)x[i].lora[2];
        l->cpu_hits += (int64_t)x[i].lora[3];
        l->load_s += x[i].lora[4];
        l->kernel_s += x[i].lora[5];
        l->busy_s += x[i].busy_s;
    }
    l->loads = l->lookups - l->gpu_hits;
    l->disk_loads = l->loads - l->cpu_hits;
    l->gpu_hit_rate = an__ratio((double)l->gpu_hits, (double)l->lookups);
    l->cpu_hit_rate = an__ratio((double)l->cpu_hits, (double)l->loads);
    l->mean_load_s = an__ratio(l->load_s, (double)l->loads);
    l->load_share = an__ratio(l->load_s, l->busy_s);
    l->kernel_share = an__ratio(l->kernel_s, l->busy_s);
}

/* MFU and MBU are achieved over peak while busy; the busy fraction says how
 * much of the simulated time that was -- which under continuous batching is
 * nearly all of it at any load, so the batch slots and the KV cache filled
 * (over the simulated time, idle counting as empty) are what say how close
 * the replicas are to their limits.  Energy: busy energy as the engine
 * integrated it, plus idle power for the rest of the replica's life.
 *
 * Each replica counts over its life, created to retired (the run's end if
 * it lived on), loading included: a fleet that changed is busy for the
 * share of its replica-seconds that iterations ran, not of (replicas ever
 * made x the run), which a day of scale-ups and -downs would drive to 0. */
static double life_s(const replica_row *x, double sim_s)
{
    double born = fmax(0, fmin(x->created_s, sim_s));
    double gone = isnan(x->retired_s) ? sim_s : fmin(x->retired_s, sim_s);
    return fmax(0, gone - born);
}

static void sum_use(const replica_row *x, int n, double sim_s, an_use *u)
{
    double busy = 0, seq_s = 0, flops = 0, peak_f = 0, bytes = 0, peak_b = 0;
    double kv_s = 0, kv_cap_s = 0, energy = 0, slots = 0, slots_s = 0, lived = 0;
    u->kv_peak_fraction = NAN;
    double first_life = n > 0 ? life_s(&x[0], sim_s) : 0;
    for (int i = 0; i < n; i++) {
        double life = life_s(&x[i], sim_s);
        lived += life;
        u->lives_differ |= life != first_life;
        busy += x[i].busy_s;
        seq_s += x[i].batch_seq_s;
        flops += x[i].flops;
        peak_f += x[i].peak_flops * x[i].busy_s;
        bytes += x[i].bytes;
        peak_b += x[i].peak_bw * x[i].busy_s;
        kv_s += x[i].kv_token_s;
        kv_cap_s += x[i].kv_capacity * life;
        energy += x[i].energy_j + x[i].idle_w * x[i].gpus * fmax(0, life - x[i].busy_s);
        double peak = an__ratio(x[i].kv_peak, x[i].kv_capacity);
        if (isnan(u->kv_peak_fraction) || peak > u->kv_peak_fraction) u->kv_peak_fraction = peak;
        u->gpus += x[i].gpus;
        u->evicted_blocks += (int64_t)x[i].evicted_blocks;
        u->weight_bytes += x[i].weight_bytes;
        u->kv_capacity_tokens += (int64_t)x[i].kv_capacity;
        slots += x[i].max_batch; /* NAN when one is unknown: no fill for the whole */
        slots_s += x[i].max_batch * life;
    }
    u->batch_slots = isnan(slots) ? 0 : (int64_t)(u->lives_differ ? slots_s / sim_s + 0.5 : slots);
    sum_spec(x, n, &u->spec);
    sum_lora(x, n, &u->lora);
    sum_offload(x, n, &u->offload);
    u->batch_fill = an__ratio(seq_s, slots_s);
    u->kv_bytes_per_token = n > 0 ? x[0].kv_bytes_per_token : NAN;
    for (int i = 1; i < n; i++) /* pools of different dtypes: no one figure */
        if (x[i].kv_bytes_per_token != x[0].kv_bytes_per_token) u->kv_bytes_per_token = NAN;
    u->busy_fraction = an__ratio(busy, lived);
    u->mean_batch = an__ratio(seq_s, busy);
    u->mfu = an__ratio(flops, peak_f);
    u->mbu = an__ratio(bytes, peak_b);
    u->kv_mean_fraction = an__ratio(kv_s, kv_cap_s);
    u->gpu_j = energy;
    u->mean_gpu_w = an__ratio(energy, sim_s);
}

static void load_replica(bool by_replica, const replica_row *x, an_report *r, an_use *u)
{
    u->replica = x->replica;
    u->pool = util_xstrdup(x->pool);
    u->gpu = util_xstrdup(x->gpu);
    sum_use(x, 1, r->sim_time_s, u);
    if (by_replica) u->req.slo = r->req.slo;
}

/* ---- cost and energy ---- */

/* The share of the window replica x lived: 1 for one there throughout. */
static double share_of_window(const replica_row *x, const an_section *s)
{
    double from = s->window_start_s, to = s->window_end_s;
    double born = fmax(x->created_s, from), gone = isnan(x->retired_s) ? to : fmin(x->retired_s, to);
    if (born <= from && gone >= to) return 1;
    return gone > born ? (gone - born) / s->window_s : 0;
}

/* The most replicas alive at once within the window: the count is
 * highest at some replica's birth (or the window's start), so those are
 * the instants to count at. */
static double peak_alive(const replica_row *x, int n, const an_section *s)
{
    int peak = 0;
    for (int i = 0; i < n; i++) {
        if (x[i].created_s > s->window_end_s) continue;
        double t = fmax(x[i].created_s, s->window_start_s);
        int alive = 0;
        for (int j = 0; j < n; j++)
            alive += x[j].created_s <= t && (isnan(x[j].retired_s) || x[j].retired_s > t);
        peak = alive > peak ? alive : peak;
    }
    return peak;
}

/* Every GPU is paid for, busy or idle, over the part of the window its
 * replica lived: a fleet that changed pays for what it had when, a fixed
 * one for every GPU over the whole window. */
static void load_cost(const replica_row *x, int n, an_report *r)
{
    an_cost *c = &r->cost;
    const an_section *s = &r->req;
    double usd_per_hour = 0, gpus_held = 0; /* the cluster's, over the window */
    c->gpu_count = 0;
    c->mean_replicas = 0;
    c->changing = false;
    for (int i = 0; i < n; i++) {
        double share = share_of_window(&x[i], s);
        c->changing |= share != 1;
        c->gpu_count += x[i].gpus;
        usd_per_hour += x[i].gpus * x[i].usd_per_gpu_hour * share;
        gpus_held += x[i].gpus * share;
        c->mean_replicas += share;
    }
    c->peak_replicas = peak_alive(x, n, s);
    double hours = s->window_s / 3600;
    c->usd_per_gpu_hour = an__ratio(usd_per_hour, gpus_held);
    c->gpu_hours = gpus_held * hours;
    c->usd = usd_per_hour * hours * (1 + c->overhead_fraction);
    c->usd_per_million_output_tokens = an__ratio(c->usd, s->output_tokens / 1e6);
    c->usd_per_million_total_tokens = an__ratio(c->usd, (s->input_tokens + s->output_tokens) / 1e6);
    c->usd_per_request = an__ratio(c->usd, (double)s->measured);
    c->utilisation = r->use.busy_fraction;
    /* the same cluster kept busy all the time, at the throughput it has while busy */
    c->usd_per_million_output_tokens_at_full_utilisation =
        c->usd_per_million_output_tokens * c->utilisation;
}

/* GPU energy over the window at the run's mean GPU power; the wall adds the
 * hosts' share (default 10% of each GPU's TDP) and the facility (PUE). */
static void load_energy(const replica_row *x, int n, an_report *r)
{
    an_energy *e = &r->energy;
    double host_w = 0;
    int gpus = 0;
    for (int i = 0; i < n; i++) {
        double per_gpu = isnan(e->host_w_per_gpu) ? 0.1 * x[i].tdp_w : e->host_w_per_gpu;
        host_w += per_gpu * x[i].gpus;
        gpus += x[i].gpus;
    }
    e->host_w_per_gpu = an__ratio(host_w, gpus);
    double window = r->req.window_s;
    e->mean_gpu_w = r->use.mean_gpu_w;
    e->gpu_j = e->mean_gpu_w * window;
    e->wall_j = (e->gpu_j + host_w * window) * e->pue;
    e->gpu_wh = e->gpu_j / 3600;
    e->wall_wh = e->wall_j / 3600;
    e->gpu_j_per_output_token = an__ratio(e->gpu_j, r->req.output_tokens);
    e->wall_j_per_output_token = an__ratio(e->wall_j, r->req.output_tokens);
}

/* ---- TTFT by where the prefix came from (kv_offload) ---- */

const char *const an_source_names[AN_N_SOURCES] = {"none", "gpu", "cpu", "disk"};

/* A request's source (an_source): the lowest tier that served any of its
 * prompt; NULL tier columns (no such tier) compare as not served. */
#define SOURCE_OF                                                                                  \
    "CASE WHEN disk_hit_tokens > 0 THEN 3 WHEN cpu_hit_tokens > 0 THEN 2"                          \
    " WHEN cached_tokens > 0 THEN 1 ELSE 0 END"

/* A growing list of TTFTs. */
typedef struct ttfts {
    double *v;
    size_t n, cap;
} ttfts;

static void ttfts_push(ttfts *t, double x)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->v = util_xrealloc(t->v, t->cap * sizeof *t->v);
    }
    t->v[t->n++] = x;
}

/* One pass over the run's requests sent after warm-up: each counted under
 * its source, and the TTFT of each completed one kept for its source's
 * summary. */
static int load_sources(const an__query *q, an_offload *o, util_diag *d)
{
    char *sql = util_xasprintf("SELECT " SOURCE_OF ", CASE WHEN status = 'completed' AND"
                               " first_token_s IS NOT NULL THEN first_token_s - arrival_s END"
                               " FROM requests"
                               " WHERE run_id = ?1 AND arrival_s >= ?2%s",
                               an__counted(q->schema));
    sqlite3_stmt *st = an__prepare(q, sql);
    free(sql);
    if (!st) return an__db_fail(q->db, d, "cannot read requests");
    ttfts t[AN_N_SOURCES] = {{0}};
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int src = sqlite3_column_int(st, 0);
        o->by_source[src].requests++;
        if (sqlite3_column_type(st, 1) != SQLITE_NULL)
            ttfts_push(&t[src], sqlite3_column_double(st, 1));
    }
    sqlite3_finalize(st);
    for (int i = 0; i < AN_N_SOURCES; i++) {
        an_stats_compute(t[i].v, t[i].n, &o->by_source[i].ttft);
        free(t[i].v);
    }
    o->has_sources = rc == SQLITE_DONE;
    return rc == SQLITE_DONE ? UTIL_OK : an__db_fail(q->db, d, "cannot read requests");
}

struct an__usage {
    replica_row *x;
    int n;
    int *ids; /* the replicas' numbers, by index */
};

int an__usage_begin(const an__query *q, bool by_replica, an_report *r, an__usage **out,
                    util_diag *d)
{
    an__usage *u = util_xcalloc(1, sizeof *u);
    *out = u;
    int rc = read_replicas(q, &u->x, &u->n, d);
    r->use.replica = -1;
    r->by_replica = by_replica;
    r->replicas = util_xcalloc((size_t)(u->n ? u->n : 1), sizeof *r->replicas);
    u->ids = util_xcalloc((size_t)(u->n ? u->n : 1), sizeof *u->ids);
    if (rc) return rc;
    sum_use(u->x, u->n, r->sim_time_s, &r->use);
    for (int i = 0; i < u->n; i++, r->n_replicas++) {
        load_replica(by_replica, &u->x[i], r, &r->replicas[i]);
        u->ids[i] = u->x[i].replica;
    }
    return UTIL_OK;
}

const int *an__usage_replica_ids(const an__usage *u)
{
    return u->ids;
}

int an__usage_end(const an__query *q, an__usage *u, bool sort_queues, an_report *r, util_diag *d)
{
    int rc = sort_queues ? load_queues(q, u->x, u->n, r, d) : UTIL_OK;
    if (!rc) {
        load_cost(u->x, u->n, r);
        load_energy(u->x, u->n, r);
    }
    if (!rc && r->use.offload.cpu.tier_bytes > 0 && q->schema >= AN__SCHEMA_TIERS)
        rc = load_sources(q, &r->use.offload, d);
    return rc;
}

void an__usage_free(an__usage *u)
{
    if (!u) return;
    for (int i = 0; i < u->n; i++) {
        free(u->x[i].pool);
        free(u->x[i].gpu);
    }
    free(u->x);
    free(u->ids);
    free(u);
}

void an__usage_fini(an_report *r)
{
    for (int i = 0; i < r->n_replicas; i++) {
        free(r->replicas[i].pool);
        free(r->replicas[i].gpu);
    }
    free(r->replicas);
    r->replicas = NULL;
    r->n_replicas = 0;
}
