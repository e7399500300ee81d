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
                        .first_token_ns = -1, .decode_enqueue_ns = -1, .replica = -1,
                        .decode_replica = -1, .user = -1};
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

/* ---- routing ---- */

static sim__replica *member(sim_engine *e, const sim__group *g, int i)
{
    return &e->replicas[g->first + i];
}

/* Fewest requests in flight (ties: the lowest index). */
static int least_outstanding(sim_engine *e, const sim__group *g)
{
    int best = 0;
    for (int i = 1; i < g->count; i++)
        if (member(e, g, i)->outstanding < member(e, g, best)->outstanding) best = i;
    return best;
}

/* Most free KV blocks (ties: the lowest index). */
static int least_kv(sim_engine *e, const sim__group *g)
{
    int best = 0;
    for (int i = 1; i < g->count; i++)
        if (sim__replica_free_blocks(member(e, g, i)) > sim__replica_free_blocks(member(e, g, best)))
            best = i;
    return best;
}

/* Two distinct replicas at random; the one with fewer in flight. */
static int power_of_two(sim_engine *e, const sim__group *g)
{
    if (g->count == 1) return 0;
    int a = (int)gsl_rng_uniform_int(e->router_rng, (unsigned long)g->count);
    int b = (int)gsl_rng_uniform_int(e->router_rng, (unsigned long)g->count - 1);
    if (b >= a) b++;
    return member(e, g, b)->outstanding < member(e, g, a)->outstanding ? b : a;
}

static int pick(sim_engine *e, sim__group *g)
{
    switch (e->sc->router) {
    case SIM_ROUTER_ROUND_ROBIN: {
        int i = g->rr_next;
        g->rr_next = (i + 1) % g->count;
        return i;
    }
    case SIM_ROUTER_RANDOM:
        return (int)gsl_rng_uniform_int(e->router_rng, (unsigned long)g->count);
    case SIM_ROUTER_LEAST_OUTSTANDING: return least_outstanding(e, g);
    case SIM_ROUTER_LEAST_KV: return least_kv(e, g);
    case SIM_ROUTER_POWER_OF_TWO: return power_of_two(e, g);
    case SIM_ROUTER_CENTRAL: break;
    }
    return 0;
}

void sim__route(sim_engine *e, sim__group *g, sim__request *r)
{
    if (e->sc->router == SIM_ROUTER_CENTRAL) {
        /* Into the group's queue; every replica gets the chance to take it:
         * idle ones start, ones running ahead through decode steps stop at
         * the next step if they could admit it. */
        sim__replica_enqueue(member(e, g, 0), r);
        for (int i = 0; i < g->count; i++) sim__replica_wake(member(e, g, i));
        return;
    }
    sim__replica *rp = member(e, g, pick(e, g));
    sim__replica_enqueue(rp, r);
    sim__replica_wake(rp);
}

static void transfer_done(sim_engine *e, void *subject, int64_t from)
{
    sim__request *r = subject;
    sim__replica *src = &e->replicas[from];
    src->kv_other -= r->blocks; /* the copy is done: the prefill replica's blocks are free */
    r->blocks = 0;
    sim__replica_wake(src);
    r->state = SIM__ARRIVED_KV;
    sim__route(e, &e->groups[1], r);
}

void sim__transfer(sim_engine *e, sim__replica *from, sim__request *r)
{
    const sim_scenario *sc = e->sc;
    r->state = SIM__TRANSFERRING;
    double bytes = (double)r->cached * from->pool->cost.kv_bytes_per_token;
    int64_t t = e->now + sim__ns(sc->link_latency_s + bytes / sc->link_bw);
    sim__heap_push(&e->events, t, transfer_done, r, from->id);
}

static void send_request(sim_engine *e, int32_t user, int32_t prompt, int32_t output)
{
    sim__request *r = sim__request_new(e);
    r->id = e->arrived++;
    r->user = user;
    r->arrival_ns = e->now;
    r->prompt = prompt;
    r->output = output;
    r->prefill_target = prompt;
    sim__route(e, &e->groups[0], r);
}

static void open_arrival(sim_engine *e, void *subject, int64_t arg);

/* Open loop: the source's next request becomes the next arrival event, if
 * the stop conditions still allow it. */
static void schedule_arrival(sim_engine *e)
{
    int rc = wl_source_next(e->src, &e->next, &e->error);
    if (rc < 0) { /* the trace changed since it was checked: end the run */
        e->failed = true;
        return;
    }
    int64_t t = sim__ns(e->next.arrival_s);
    if (rc == 1 && arrivals_open(e, t)) sim__heap_push(&e->events, t, open_arrival, NULL, 0);
}

static void open_arrival(sim_engine *e, void *subject, int64_t arg)
{
    send_request(e, -1, e->next.prompt, e->next.output);
    schedule_arrival(e);
}

static void user_send(sim_engine *e, void *subject, int64_t user)
{
    if (!arrivals_open(e, e->now)) return;
    int32_t prompt, output;
    wl_source_lengths(e->src, &prompt, &output);
    send_request(e, (int32_t)user, prompt, output);
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

    const wl_arrival *a = &sc->workload.arrival;
    if (a->process == WL_CLOSED)
        for (int u = 0; u < a->users; u++) sim__heap_push(&e->events, 0, user_send, NULL, u);
    else
        schedule_arrival(e);
    return e;
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
    free(e);
}

const char *sim_engine_error(const sim_engine *e)
{
    return e->error.count ? e->error.msgs[0] : NULL;
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

/* An interrupted run: every request still in the system becomes an
 * unfinished row, wherever it is -- a queue, a replica, or in transfer. */
static void drain(sim_engine *e)
{
    for (int i = 0; i < e->n_replicas; i++) sim__replica_drain(&e->replicas[i]);
    sim__request *r;
    for (int i = 0; i < e->n_groups; i++)
        while ((r = sim__queue_pop(&e->groups[i].central)))
            sim__request_emit(e, r, SIM_UNFINISHED, -1);
    sim__event ev;
    while (sim__heap_pop(&e->events, &ev))
        if (ev.fn == transfer_done) sim__request_emit(e, ev.subject, SIM_UNFINISHED, -1);
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
        e->now = ev.at;
        ev.fn(e, ev.subject, ev.arg);
        if (++e->events_run % PROGRESS_EVERY == 0 && progress) {
            sim_progress p;
            sim_engine_progress(e, &p);
            progress(&p, arg);
        }
    }
    if (rc == UTIL_EINTR) drain(e);
    emit_replicas(e);
    return e->sink_rc || e->failed ? UTIL_EFAIL : rc;
}
