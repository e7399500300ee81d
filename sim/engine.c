/*
 * engine.c: the event loop, and a run's beginning and end (the top of the
 * call chain drawn in sim_int.h; the request pool is request.c's, the
 * replica table fleet.c's).
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
#include <stdlib.h>

#define PROGRESS_EVERY 16384

const char *const sim_status_names[] = {"completed", "interrupted", "overloaded", "failed", NULL};

enum { STREAM_ROUTER = 5 };

/* Every stream in use starts: open-loop ones with their first arrival,
 * closed-loop ones with their users sending at time 0, one event a stream
 * that makes them in turn (sim__cl_users_start). */
static void start_streams(sim_engine *e)
{
    const wl_spec *w = &e->sc->workload;
    e->next = util_xcalloc((size_t)w->n_streams, sizeof *e->next);
    e->in_flight = util_xcalloc((size_t)w->n_streams, sizeof *e->in_flight);
    e->held = util_xcalloc((size_t)w->n_streams, sizeof *e->held);
    for (int s = 0; s < w->n_streams; s++) {
        if (s == 0 && !w->shared_used) continue;
        if (w->streams[s].process != WL_CLOSED) sim__cl_schedule_arrival(e, s);
        else sim__heap_push(&e->events, 0, sim__cl_users_start, NULL, s);
    }
}

/* Sequences the cluster can batch at once: the overload tests' scale. */
static int64_t batch_slots(const sim_scenario *sc)
{
    int64_t slots = 0;
    for (int i = 0; i < sc->n_pools; i++)
        slots += (int64_t)sc->pools[i].replicas * sc->pools[i].max_batch;
    return slots;
}

/* The default in-flight limit: see sim_engine_limit_in_flight.  Closed-loop
 * users and capped streams are held to it as open-loop arrivals are: more
 * of them than it is a load the cluster cannot hold. */
static int64_t default_limit(const sim_scenario *sc)
{
    return 2 * batch_slots(sc) + 1000;
}

sim_engine *sim_engine_create(const sim_scenario *sc, const sim_sink *sink)
{
    sim_engine *e = util_xcalloc(1, sizeof *e);
    e->sc = sc;
    if (sink) e->sink = *sink;
    sim__heap_init(&e->events);
    e->src = wl_source_create(&sc->workload, sc->seed);
    e->router_rng = util_rng_stream(sc->seed, STREAM_ROUTER);
    sim__gw_init(e);
    sim__fa_init(e); /* before the replicas: their clocks start as they are ready */
    sim__fl_init(e);
    e->stop_ns = sc->stop_duration_s > 0 ? sim__ns(sc->stop_duration_s) : INT64_MAX;
    e->slots = batch_slots(sc);
    e->open_loop = true; /* closed-loop users wait for their replies: never a backlog */
    for (int i = 0; i < sc->workload.n_streams; i++)
        if (sc->workload.streams[i].process == WL_CLOSED || sc->workload.streams[i].max_concurrency)
            e->open_loop = false; /* a capped stream too: its backlog is at most its cap */
    e->in_flight_limit = sc->max_in_flight > 0 ? sc->max_in_flight : default_limit(sc);
    e->backlog_test = sc->max_in_flight == 0; /* a limit of the user's own is the whole guard */
    start_streams(e);
    sim__as_init(e); /* after the streams: their time-0 arrivals come first */
    return e;
}


void sim_engine_destroy(sim_engine *e)
{
    if (!e) return;
    sim__as_fini(e);
    sim__fl_fini(e);
    sim__fa_destroy(e);
    sim__gw_destroy(e);
    sim__heap_fini(&e->events);
    wl_source_destroy(e->src);
    gsl_rng_free(e->router_rng);
    util_diag_fini(&e->error);
    sim__rq_pool_fini(e);
    sim__cl_fini(e);
    free(e->next);
    free(e->in_flight);
    free(e->held);
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
    *out = (sim_progress){sim__secs(e->now), e->arrived, e->done, e->events_run};
}

/* An interrupted run: every request still in the system -- wherever it is,
 * a queue, a replica, the link -- becomes an unfinished row (the pool knows
 * them all), and so does every task in flight. */
static void drain(sim_engine *e)
{
    sim__rq_drain(e);
    for (const sim__task *t = e->tasks; t; t = t->next)
        sim__cl_task_record(e, t, SIM_UNFINISHED, -1);
}

void sim_engine_limit_in_flight(sim_engine *e, int64_t limit)
{
    e->in_flight_limit = limit;
}

/* Overload (a), checked after every event: see sim_engine_limit_in_flight. */
static bool over_limit(sim_engine *e)
{
    int64_t in_flight = e->next_request_id - e->done;
    if (!e->users_over && (!e->in_flight_limit || in_flight <= e->in_flight_limit)) return false;
    char *why = !e->backlog_test ? util_xstrdup("stop.max_in_flight")
                               : util_xasprintf("twice the %lld batch slots plus 1000",
                                                (long long)e->slots);
    if (e->users_over)
        e->reason = util_xasprintf("a closed loop of more users than %lld, the requests the "
                                   "cluster can hold in flight (the limit: %s)",
                                   (long long)e->n_users, why);
    else
        e->reason = util_xasprintf("more than %lld requests in flight at %.3f s (the limit: %s): "
                                   "the cluster could not keep up with its arrivals",
                                   (long long)e->in_flight_limit, (double)e->now / SIM__NS_PER_S,
                                   why);
    free(why);
    return true;
}

/* Overload (b), once the run has ended: a backlog that grew with the
 * arrivals, though the run was short enough to drain it -- the test of (a)
 * with a margin of a tenth of the requests sent in place of 1,000. */
static bool backlogged(sim_engine *e)
{
    int64_t sent = e->next_request_id;
    double margin = 0.1 * (double)sent;
    if (!e->in_flight_limit || !e->backlog_test || !e->open_loop || (double)e->backlog <= 2.0 * (double)e->slots + margin)
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

/* Events ran out with requests still in the system: nothing would ever
 * move them (a request no iteration could take), so the run would end
 * "completed" without their rows.  It fails instead, saying so: O(1), so
 * every build checks it. */
static void stranded(sim_engine *e)
{
    int64_t left = e->next_request_id - e->done;
    if (left <= 0) return;
    e->failed = true;
    e->fail_rc = UTIL_EFAIL;
    util_diag_add(&e->error, "%lld requests were still in the system when nothing was left to "
                             "happen at %.3f s: none could ever be scheduled (an engine fault; "
                             "the run is not recorded)",
                  (long long)left, (double)e->now / SIM__NS_PER_S);
}

#if SIM_CHECKS
/* A run whose events ran out left nothing behind ("when the queue is empty
 * every request has finished"): every request sent has ended, every task
 * too, and every replica is empty. */
static void check_drained(const sim_engine *e)
{
    SIM__CHECK(e->done == e->next_request_id && !e->tasks);
    for (int32_t i = 0; i < e->fleet.n_ids; i++) {
        const sim__replica *rp = sim__fl_get(e, i);
        if (rp) sim__rp_check_drained(rp);
    }
}
#endif

/* Events that keep nothing going by themselves: the autoscalers' chains
 * and the replicas they are starting (autoscaler.c), the failure and spot
 * clocks (failures.c), which never stop.  The run ends when only they are
 * left -- with failures, once no request is in flight either, as one may
 * be waiting for a replacement. */
static bool background_only(const sim_engine *e)
{
    if (e->events.n > (size_t)e->as_pending + sim__fa_pending(e)) return false;
    return sim__fa_pending(e) == 0 || e->done == e->next_request_id;
}

int sim_engine_run(sim_engine *e, const volatile sig_atomic_t *stop, sim_progress_fn progress,
                   void *arg)
{
    sim__event ev;
    int rc = UTIL_OK;
    while (!e->sink_rc && !e->failed && !background_only(e) && sim__heap_pop(&e->events, &ev)) {
        if (stop && *stop) {
            rc = UTIL_EINTR;
            break;
        }
        if (ev.at >= SIM__PAST_HORIZON_NS - 1) {
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
    if (rc == UTIL_OK && !e->failed && !e->sink_rc) stranded(e);
    if (rc == UTIL_OK && !e->failed && !e->sink_rc) SIM__CHECKED(check_drained(e));
    if (rc == UTIL_EINTR || rc == SIM_EOVERLOAD) drain(e);
    sim__fl_emit_rows(e);
    if (e->sink_rc) return UTIL_EFAIL;
    if (e->failed) return e->fail_rc ? e->fail_rc : UTIL_EFAIL;
    if (rc == UTIL_OK && backlogged(e)) rc = SIM_EOVERLOAD;
    return rc;
}
