/*
 * engine.c: the event loop, the request pool, and a run's beginning and end.
 *
 * Each open-loop stream is a chain of arrival events, each scheduling the
 * next; the first request is sent at time 0, as benchmark clients do (a
 * trace at its first time).  Closed-loop users each send one request at
 * time 0 and their next one think time after the last finished (client.c).
 * Arrivals stop when stop.requests have arrived or at stop.duration_s,
 * whichever comes first; the run ends when the last request in flight is
 * done and the event queue is empty.
 */
#include "sim_int.h"

#include <assert.h>

#include <math.h>
#include <stdlib.h>

#define SLAB_REQUESTS 1024
#define PROGRESS_EVERY 16384

const char *const sim_status_names[] = {"completed", "interrupted", "overloaded", "failed", NULL};

/* Just past the horizon: a time no event may have. */
#define PAST_HORIZON_NS ((int64_t)(SIM_HORIZON_S * SIM__NS_PER_S) + 1)

int64_t sim__ns(double seconds)
{
    /* Durations and times are never negative: round half up without libm's
     * llround, which showed in profiles.  Beyond the horizon (or NaN) a
     * duration saturates, so that now + duration cannot overflow and the
     * event loop reports the horizon instead. */
    if (!(seconds < SIM_HORIZON_S)) return PAST_HORIZON_NS;
    return (int64_t)(seconds * SIM__NS_PER_S + 0.5);
}

static double secs(int64_t ns)
{
    return ns < 0 ? NAN : (double)ns / SIM__NS_PER_S;
}

/* ---- request pool ---- */

sim__request *sim__request_new(sim_engine *e)
{
    if (!e->free_list) { /* memory grows with requests in flight, never with the run */
        sim__slab *s = util_xmalloc(sizeof *s + SLAB_REQUESTS * sizeof(sim__request));
        s->next = e->slabs;
        e->slabs = s;
        for (int i = 0; i < SLAB_REQUESTS; i++) {
            s->reqs[i].id = -1;
            s->reqs[i].next = e->free_list;
            e->free_list = &s->reqs[i];
        }
    }
    sim__request *r = e->free_list;
    e->free_list = r->next;
    *r = (sim__request){.arrival_ns = -1, .enqueue_ns = -1, .sched_ns = -1,
                        .first_token_ns = -1, .decode_enqueue_ns = -1, .replica = -1,
                        .decode_replica = -1, .user = -1, .call_index = -1,
                        .timeout_slot = SIM__NO_SLOT, .finish_slot = SIM__NO_SLOT};
    return r;
}

void sim__request_free(sim_engine *e, sim__request *r)
{
    /* A time-out that can no longer fire would still hold the heap, and the
     * run's end, until its time. */
    if (r->timeout_slot != SIM__NO_SLOT) sim__heap_remove(&e->events, r->timeout_slot);
    r->id = -1; /* a walk of the pool knows it is gone */
    r->next = e->free_list;
    e->free_list = r;
}

void sim__request_record(sim_engine *e, const sim__request *r, const char *status,
                         int64_t finish_ns)
{
    sim_request_row row = {
        .id = r->id,
        .cls = e->sc->workload.classes[r->cls].name,
        .task_id = r->task ? r->task->id : -1,
        .call_index = r->call_index,
        .replica = r->replica,
        .decode_replica = r->decode_replica,
        .status = status,
        .arrival_s = secs(r->arrival_ns),
        .enqueue_s = secs(r->enqueue_ns),
        .first_scheduled_s = secs(r->sched_ns),
        .first_token_s = secs(r->first_token_ns),
        .finish_s = secs(finish_ns),
        .decode_enqueue_s = secs(r->decode_enqueue_ns),
        .prompt_tokens = r->prompt,
        .output_tokens = r->output,
        .preemptions = r->preemptions,
        .slow = r->slow,
    };
    if (!e->sink_rc && e->sink.request) e->sink_rc = e->sink.request(e->sink.ctx, &row);
}

/* ---- engine ---- */

enum { STREAM_ROUTER = 5 };

/* Without disaggregation the router sees every replica of every pool;
 * disaggregated, arrivals go to the prefill pool and prefilled requests to
 * the decode pool. */
static void make_groups(sim_engine *e)
{
    const sim_scenario *sc = e->sc;
    if (sc->disagg_prefill < 0) {
        e->groups[0] = (sim__group){.first = 0, .count = sc->replicas};
        e->n_groups = 1;
        return;
    }
    const sim_pool *pf = &sc->pools[sc->disagg_prefill], *dc = &sc->pools[sc->disagg_decode];
    e->groups[0] = (sim__group){.first = pf->first_replica, .count = pf->replicas};
    e->groups[1] = (sim__group){.first = dc->first_replica, .count = dc->replicas};
    e->n_groups = 2;
}

/* Every stream in use starts: open-loop ones with their first arrival,
 * closed-loop ones with all their users sending at time 0. */
static void start_streams(sim_engine *e)
{
    const wl_spec *w = &e->sc->workload;
    e->next = util_xcalloc((size_t)w->n_streams, sizeof *e->next);
    int users = 0;
    for (int s = 0; s < w->n_streams; s++)
        if (w->streams[s].process == WL_CLOSED) users += w->streams[s].users;
    e->user_stream = util_xcalloc((size_t)users + 1, sizeof *e->user_stream);
    int u = 0;
    for (int s = 0; s < w->n_streams; s++) {
        if (s == 0 && !w->shared_used) continue;
        if (w->streams[s].process != WL_CLOSED) {
            sim__schedule_arrival(e, s);
            continue;
        }
        for (int k = 0; k < w->streams[s].users; k++, u++) {
            e->user_stream[u] = s;
            sim__heap_push(&e->events, 0, sim__user_send, NULL, u);
        }
    }
}

sim_engine *sim_engine_create(const sim_scenario *sc, const sim_sink *sink)
{
    sim_engine *e = util_xcalloc(1, sizeof *e);
    e->sc = sc;
    if (sink) e->sink = *sink;
    sim__heap_init(&e->events);
    e->src = wl_source_create(&sc->workload, sc->seed);
    e->router_rng = util_rng_stream(sc->seed, STREAM_ROUTER);
    e->n_replicas = sc->replicas;
    e->replicas = util_xcalloc((size_t)sc->replicas, sizeof *e->replicas);
    make_groups(e);
    for (int i = 0; i < sc->n_pools; i++) {
        const sim_pool *p = &sc->pools[i];
        sim__group *g = &e->groups[i == sc->disagg_decode ? 1 : 0];
        for (int j = 0; j < p->replicas; j++)
            sim__replica_init(&e->replicas[p->first_replica + j], e, p, g, p->first_replica + j);
    }
    e->stop_ns = sc->stop_duration_s > 0 ? sim__ns(sc->stop_duration_s) : INT64_MAX;
    for (int i = 0; i < sc->n_pools; i++)
        e->slots += (int64_t)sc->pools[i].replicas * sc->pools[i].max_batch;
    e->open_loop = true; /* closed-loop users wait for their replies: never a backlog */
    for (int i = 0; i < sc->workload.n_streams; i++)
        if (sc->workload.streams[i].process == WL_CLOSED) e->open_loop = false;
    e->in_flight_limit = sim_engine_default_limit(sc);
    start_streams(e);
    return e;
}

int64_t sim_engine_default_limit(const sim_scenario *sc)
{
    int64_t slots = 0, users = 0;
    for (int i = 0; i < sc->n_pools; i++)
        slots += (int64_t)sc->pools[i].replicas * sc->pools[i].max_batch;
    const wl_spec *w = &sc->workload;
    for (int i = 0; i < w->n_streams; i++)
        if (w->streams[i].process == WL_CLOSED) users += w->streams[i].users;
    int64_t limit = 2 * slots + 1000;
    return users + 1 > limit ? users + 1 : limit;
}

void sim_engine_destroy(sim_engine *e)
{
    if (!e) return;
    for (int i = 0; i < e->n_replicas; i++) sim__replica_fini(&e->replicas[i]);
    free(e->replicas);
    sim__heap_fini(&e->events);
    wl_source_destroy(e->src);
    gsl_rng_free(e->router_rng);
    util_diag_fini(&e->error);
    for (sim__slab *s = e->slabs, *next; s; s = next) {
        next = s->next;
        free(s);
    }
    for (int pass = 0; pass < 2; pass++)
        for (sim__task *t = pass ? e->free_tasks : e->tasks, *next; t; t = next) {
            next = t->next;
            free(t);
        }
    free(e->next);
    free(e->user_stream);
    free(e->reason);
    free(e);
}

const char *sim_engine_error(const sim_engine *e)
{
    return e->error.count ? e->error.msgs[0] : NULL;
}

const char *sim_engine_reason(const sim_engine *e)
{
    return e->reason;
}

void sim_engine_progress(const sim_engine *e, sim_progress *out)
{
    *out = (sim_progress){secs(e->now), e->arrived, e->done, e->events_run};
}

static void emit_replicas(sim_engine *e)
{
    for (int i = 0; i < e->n_replicas && !e->sink_rc; i++) {
        sim_replica_row row;
        sim__replica_row(&e->replicas[i], &row);
        if (e->sink.replica) e->sink_rc = e->sink.replica(e->sink.ctx, &row);
    }
}

/* An interrupted run: every request still in the system -- wherever it is,
 * a queue, a replica, the link -- becomes an unfinished row (a timed-out one
 * was recorded already), and so does every task in flight.  The pool knows
 * them all: a struct in use has an id. */
static void drain(sim_engine *e)
{
    for (sim__slab *s = e->slabs; s; s = s->next)
        for (int i = 0; i < SLAB_REQUESTS; i++) {
            const sim__request *r = &s->reqs[i];
            if (r->id >= 0 && !r->dead) sim__request_record(e, r, SIM_UNFINISHED, -1);
        }
    for (const sim__task *t = e->tasks; t; t = t->next) sim__task_record(e, t, SIM_UNFINISHED, -1);
}

void sim_engine_limit_in_flight(sim_engine *e, int64_t limit)
{
    e->in_flight_limit = limit;
}

/* Overload (a), checked after every event: see sim_engine_limit_in_flight. */
static bool over_limit(sim_engine *e)
{
    int64_t in_flight = e->next_request_id - e->done;
    if (!e->in_flight_limit || in_flight <= e->in_flight_limit) return false;
    e->reason = util_xasprintf("more than %lld requests in flight at %.3f s (the limit: twice the "
                               "%lld batch slots plus 1000): the cluster could not keep up with "
                               "its arrivals",
                               (long long)e->in_flight_limit, (double)e->now / SIM__NS_PER_S,
                               (long long)e->slots);
    return true;
}

/* Overload (b), once the run has ended: a backlog that grew with the
 * arrivals, though the run was short enough to drain it -- the test of (a)
 * with a margin of a tenth of the requests sent in place of 1,000. */
static bool backlogged(sim_engine *e)
{
    int64_t sent = e->next_request_id;
    double margin = 0.1 * (double)sent;
    if (!e->in_flight_limit || !e->open_loop || (double)e->backlog <= 2.0 * (double)e->slots + margin)
        return false;
    e->reason = util_xasprintf("%lld of %lld requests were still in flight when the last one "
                               "arrived (more than twice the %lld batch slots plus a tenth of "
                               "the requests): arrivals outpaced the cluster",
                               (long long)e->backlog, (long long)sent, (long long)e->slots);
    return true;
}

/* An event past the horizon: the scenario's times are too large to run. */
static void past_horizon(sim_engine *e)
{
    e->failed = true;
    e->fail_rc = UTIL_EINPUT;
    util_diag_add(&e->error, "simulated time would pass %.0e s (about 31 years) after %lld "
                             "requests: a rate, delay or trace time too large for the simulation",
                  SIM_HORIZON_S, (long long)e->arrived);
}

int sim_engine_run(sim_engine *e, const volatile sig_atomic_t *stop, sim_progress_fn progress,
                   void *arg)
{
    sim__event ev;
    int rc = UTIL_OK;
    while (!e->sink_rc && !e->failed && sim__heap_pop(&e->events, &ev)) {
        if (stop && *stop) {
            rc = UTIL_EINTR;
            break;
        }
        if (ev.at >= PAST_HORIZON_NS - 1) {
            past_horizon(e);
            break;
        }
        assert(ev.at >= e->now); /* simulated time never runs backwards */
        e->now = ev.at;
        ev.fn(e, ev.subject, ev.arg);
        if (over_limit(e)) {
            rc = SIM_EOVERLOAD;
            break;
        }
        if (++e->events_run % PROGRESS_EVERY == 0 && progress) {
            sim_progress p;
            sim_engine_progress(e, &p);
            progress(&p, arg);
        }
    }
    if (rc == UTIL_EINTR || rc == SIM_EOVERLOAD) drain(e);
    emit_replicas(e);
    if (e->sink_rc) return UTIL_EFAIL;
    if (e->failed) return e->fail_rc ? e->fail_rc : UTIL_EFAIL;
    if (rc == UTIL_OK && backlogged(e)) rc = SIM_EOVERLOAD;
    return rc;
}
