/*
 * engine.c: the event loop, the request pool, arrivals and the router.
 *
 * Open-loop arrivals are a chain of events, each scheduling the next; the
 * first request is sent at time 0, as benchmark clients do.  Closed-loop
 * users each send one request at time 0 and their next one think time after
 * the last finished.  Arrivals stop when stop.requests have been sent or at
 * stop.duration_s, whichever comes first; the run ends when the last request
 * in flight is done and the event queue is empty.
 */
#include "sim_int.h"

#include <math.h>
#include <stdlib.h>

#define SLAB_REQUESTS 1024
#define PROGRESS_EVERY 16384

int64_t sim__ns(double seconds)
{
    /* Durations and times are never negative: round half up without libm's
     * llround, which showed in profiles. */
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
            s->reqs[i].next = e->free_list;
            e->free_list = &s->reqs[i];
        }
    }
    sim__request *r = e->free_list;
    e->free_list = r->next;
    *r = (sim__request){.arrival_ns = -1, .enqueue_ns = -1, .sched_ns = -1,
                        .first_token_ns = -1, .replica = -1, .user = -1};
    return r;
}

void sim__request_free(sim_engine *e, sim__request *r)
{
    r->next = e->free_list;
    e->free_list = r;
}

void sim__request_emit(sim_engine *e, sim__request *r, const char *status, int64_t finish_ns)
{
    sim_request_row row = {
        .id = r->id,
        .replica = r->replica,
        .status = status,
        .arrival_s = secs(r->arrival_ns),
        .enqueue_s = secs(r->enqueue_ns),
        .first_scheduled_s = secs(r->sched_ns),
        .first_token_s = secs(r->first_token_ns),
        .finish_s = secs(finish_ns),
        .prompt_tokens = r->prompt,
        .output_tokens = r->output,
    };
    if (!e->sink_rc && e->sink.request) e->sink_rc = e->sink.request(e->sink.ctx, &row);
    sim__request_free(e, r);
}

/* ---- arrivals and routing ---- */

static bool arrivals_open(const sim_engine *e, int64_t t_ns)
{
    const sim_scenario *sc = e->sc;
    return (sc->stop_requests == 0 || e->arrived < sc->stop_requests) && t_ns < e->stop_ns;
}

static void route(sim_engine *e, sim__request *r)
{
    sim__replica *rp = &e->replicas[e->next_replica];
    e->next_replica = (e->next_replica + 1) % e->n_replicas;
    sim__replica_enqueue(rp, r);
}

static void send_request(sim_engine *e, int32_t user)
{
    sim__request *r = sim__request_new(e);
    r->id = e->arrived++;
    r->user = user;
    r->arrival_ns = e->now;
    wl_source_lengths(e->src, &r->prompt, &r->output);
    route(e, r);
}

static void open_arrival(sim_engine *e, void *subject, int64_t arg)
{
    send_request(e, -1);
    e->next_arrival_s += wl_source_next_gap(e->src);
    int64_t t = sim__ns(e->next_arrival_s);
    if (arrivals_open(e, t)) sim__heap_push(&e->events, t, open_arrival, NULL, 0);
}

static void user_send(sim_engine *e, void *subject, int64_t user)
{
    if (arrivals_open(e, e->now)) send_request(e, (int32_t)user);
}

void sim__request_done(sim_engine *e, sim__request *r, const char *status, int64_t finish_ns)
{
    int32_t user = r->user;
    e->done++;
    sim__request_emit(e, r, status, finish_ns);
    if (user < 0) return;
    int64_t think = sim__ns(wl_source_think(e->src));
    /* A rejected request ends at the instant it was sent.  Were its user to
     * send again at once, a scenario whose requests are all rejected would
     * spin without advancing time, so the error reply takes a round trip. */
    if (finish_ns < 0 && think < SIM__ERROR_REPLY_NS) think = SIM__ERROR_REPLY_NS;
    int64_t t = e->now + think;
    if (arrivals_open(e, t)) sim__heap_push(&e->events, t, user_send, NULL, user);
}

/* ---- engine ---- */

sim_engine *sim_engine_create(const sim_scenario *sc, const sim_sink *sink)
{
    sim_engine *e = util_xcalloc(1, sizeof *e);
    e->sc = sc;
    if (sink) e->sink = *sink;
    sim__heap_init(&e->events);
    e->src = wl_source_create(&sc->workload, sc->seed);
    e->n_replicas = sc->replicas;
    e->replicas = util_xcalloc((size_t)sc->replicas, sizeof *e->replicas);
    for (int i = 0; i < sc->replicas; i++) sim__replica_init(&e->replicas[i], e, i);
    e->stop_ns = sc->stop_duration_s > 0 ? sim__ns(sc->stop_duration_s) : INT64_MAX;

    const wl_arrival *a = &sc->workload.arrival;
    if (a->process == WL_CLOSED)
        for (int u = 0; u < a->users; u++) sim__heap_push(&e->events, 0, user_send, NULL, u);
    else
        sim__heap_push(&e->events, 0, open_arrival, NULL, 0);
    return e;
}

void sim_engine_destroy(sim_engine *e)
{
    if (!e) return;
    for (int i = 0; i < e->n_replicas; i++) sim__replica_fini(&e->replicas[i]);
    free(e->replicas);
    sim__heap_fini(&e->events);
    wl_source_destroy(e->src);
    for (sim__slab *s = e->slabs, *next; s; s = next) {
        next = s->next;
        free(s);
    }
    free(e);
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

int sim_engine_run(sim_engine *e, const volatile sig_atomic_t *stop, sim_progress_fn progress,
                   void *arg)
{
    sim__event ev;
    int rc = UTIL_OK;
    while (!e->sink_rc && sim__heap_pop(&e->events, &ev)) {
        if (stop && *stop) {
            rc = UTIL_EINTR;
            break;
        }
        e->now = ev.at;
        ev.fn(e, ev.subject, ev.arg);
        if (++e->events_run % PROGRESS_EVERY == 0 && progress) {
            sim_progress p;
            sim_engine_progress(e, &p);
            progress(&p, arg);
        }
    }
    if (rc == UTIL_EINTR)
        for (int i = 0; i < e->n_replicas; i++) sim__replica_drain(&e->replicas[i]);
    emit_replicas(e);
    return e->sink_rc ? UTIL_EFAIL : rc;
}
