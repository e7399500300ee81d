/*
 * run.c: one run, end to end -- the one path every command takes (`run`,
 * sweep and plan points, lessons, `validate`, the benchmark):
 *
 *   scenario JSON --load/validate--> sim_scenario        (bad: UTIL_EINPUT, nothing written)
 *                 --open recorder--> private file / memory
 *                 --engine--------> rows streamed to the recorder
 *                 --status--------> completed | interrupted | overloaded  (failed: rolled back)
 *                 --finish--------> status recorded, run published into the database
 *
 * The engine decides overload (sim_engine_limit_in_flight says how); the
 * recorder is the only code that writes a run's status; nothing here
 * prints.
 */
#include "rec.h"

#include <stdlib.h>
#include <string.h>

static sim_status status_of(int engine_rc)
{
    switch (engine_rc) {
    case UTIL_OK: return SIM_STATUS_COMPLETED;
    case UTIL_EINTR: return SIM_STATUS_INTERRUPTED;
    case SIM_EOVERLOAD: return SIM_STATUS_OVERLOADED;
    default: return SIM_STATUS_FAILED;
    }
}

/* Why it was interrupted: the signal's number is the stop flag's value. */
static char *interrupted_reason(const volatile sig_atomic_t *stop, const sim_progress *p)
{
    int sig = stop ? (int)*stop : 0;
    if (sig > 0)
        return util_xasprintf("stopped by signal %d (%s) at %.3f s simulated, %lld requests "
                              "ended of %lld sent",
                              sig, strsignal(sig), p->sim_s, (long long)p->done,
                              (long long)p->arrived);
    return util_xasprintf("stopped on request at %.3f s simulated, %lld requests ended of %lld "
                          "sent",
                          p->sim_s, (long long)p->done, (long long)p->arrived);
}

static int open_recorder(const rec_run_spec *s, rec_recorder **rec, util_diag *d)
{
    int rc = s->scratch ? rec_open_scratch(s->scratch, rec, d)
                        : rec_open(s->output, rec, d);
    if (!rc) rec_label(*rec, &s->label);
    return rc;
}

/* The recorder's sink with the spec's tee beside it. */
typedef struct teed {
    sim_sink inner;
    const rec_run_spec *spec;
} teed;

static int tee_request(void *ctx, const sim_request_row *row)
{
    teed *t = ctx;
    int rc = t->inner.request(t->inner.ctx, row);
    if (!rc) t->spec->tee(t->spec->tee_arg, row);
    return rc;
}

static int tee_replica(void *ctx, const sim_replica_row *row)
{
    teed *t = ctx;
    return t->inner.replica(t->inner.ctx, row);
}

static int tee_task(void *ctx, const sim_task_row *row)
{
    teed *t = ctx;
    return t->inner.task(t->inner.ctx, row);
}

static int tee_iteration(void *ctx, const sim_iteration_row *row)
{
    teed *t = ctx;
    return t->inner.iteration(t->inner.ctx, row);
}

/* Runs the engine into the recorder; the run's end in *end (its reason
 * owned by out). */
static int simulate(const rec_run_spec *s, const sim_scenario *sc, rec_recorder *rec,
                    rec_run_result *out, util_diag *d)
{
    sim_sink sink = s->iterations ? rec_sink_with_iterations(rec) : rec_sink(rec);
    teed t = {sink, s};
    if (s->tee)
        sink = (sim_sink){.ctx = &t, .request = tee_request, .replica = tee_replica,
                          .task = sink.task ? tee_task : NULL,
                          .iteration = sink.iteration ? tee_iteration : NULL};
    sim_engine *e = sim_engine_create(sc, &sink);
    if (s->in_flight_limit) sim_engine_limit_in_flight(e, s->in_flight_limit < 0 ? 0 : s->in_flight_limit);
    double start = util_wall_s();
    int rc = sim_engine_run(e, s->stop, s->progress, s->progress_arg);
    out->wall_s = util_wall_s() - start;
    sim_engine_progress(e, &out->progress);
    out->status = status_of(rc);
    if (out->status == SIM_STATUS_FAILED) {
        const char *why = sim_engine_error(e);
        util_diag_add(d, "%s", why ? why : rec_error(rec));
        if (rc != UTIL_EINPUT) rc = UTIL_EFAIL;
    } else if (out->status == SIM_STATUS_OVERLOADED) {
        out->reason = util_xstrdup(sim_engine_reason(e));
    } else if (out->status == SIM_STATUS_INTERRUPTED) {
        out->reason = interrupted_reason(s->stop, &out->progress);
    }
    sim_engine_destroy(e);
    return out->status == SIM_STATUS_FAILED ? rc : UTIL_OK;
}

int rec_run(const rec_run_spec *s, rec_run_result *out, util_diag *d)
{
    memset(out, 0, sizeof *out);
    out->status = SIM_STATUS_FAILED;
    sim_scenario sc = {0};
    int rc = sim_scenario_load(s->scenario, s->catalog, s->base_dir, &sc, d);
    if (rc) {
        sim_scenario_fini(&sc);
        /* name the file once, so messages with bare JSON paths have a home */
        if (s->origin)
            util_diag_add(d, "%s: %d error%s; nothing was run", s->origin, d->count,
                          d->count == 1 ? "" : "s");
        return rc;
    }
    for (int i = 0; s->warnings && i < sc.warnings.count; i++)
        util_diag_add(s->warnings, "%s", sc.warnings.msgs[i]);
    rec_recorder *rec = NULL;
    rc = open_recorder(s, &rec, d);
    if (!rc) rc = rec_begin(rec, &sc, d);
    if (!rc && s->writer_thread) rc = rec_start_writer(rec, d);
    if (!rc && s->on_load) s->on_load(s->tee_arg, &sc);
    if (!rc) rc = simulate(s, &sc, rec, out, d);
    if (!rc) {
        rec_run_end end = {out->status, out->reason, out->progress.sim_s, out->wall_s,
                           out->progress.events};
        rc = rec_finish(rec, &end, d);
    }
    if (rc) {
        out->status = SIM_STATUS_FAILED;
        free(out->reason);
        out->reason = util_xstrdup(d->count ? d->msgs[d->count - 1] : "the run failed");
        rec_abort(rec);
    } else {
        out->run_id = rec_run_id(rec);
        if (!s->output && !s->scratch) {
            out->db = rec_release(rec); /* in memory: the caller's to read */
            rec = NULL;
        }
    }
    rec_close(rec);
    sim_scenario_fini(&sc);
    return rc;
}

void rec_run_result_fini(rec_run_result *r)
{
    if (!r) return;
    free(r->reason);
    sqlite3_close(r->db);
    memset(r, 0, sizeof *r);
}
