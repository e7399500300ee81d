/*
 * test_pipeline.c: the step pipeline of docs/engines.md, hand-worked.  An
 * asynchronous scheduler (cluster.scheduler.async_scheduling: vLLM V1's
 * batch queue, SGLang's overlap loop) plans step n + 1 as step n starts, so
 * a request queued during step n first runs in step n + 2 (a synchronous
 * engine: n + 1), and a request that finishes in step n keeps its batch
 * slot until the next plan is made, so one waiting for that slot joins in
 * step n + 2 too.  Tokens reach the client host.output_s after the step
 * that made them ends.
 *
 * Two traces on one replica of max_batch 2, each run sync and async:
 *   light load: B (t = 0, 100 in, 1000 out) decodes alone; A (t = 35.5 ms,
 *     100 in, 50 out) is queued at 36.5 ms, during B's step [33, 43) ms;
 *   full load: B and C (t = 0, 100 in, 3 out) fill the batch; A (t = 25.5
 *     ms) waits for C's slot, C finishing in the step [33, 43) ms.
 * On linear costs (a decode step 10 ms, a 100-token prefill alone 12 ms,
 * 200 tokens 22 ms, decodes with a 100-token prefill 20 ms; the datasheet
 * floor, about 4.8 ms, below them all) every instant is a round number,
 * checked as docs/engines.md works it.  With pipeline parallelism on the
 * roofline the steps are the cost model's: they are costed here with
 * mdl_cost_step and composed by the same rules, and each stage hand-off
 * (the model's comm term) is seen to lengthen the steps.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support.h"
#include "tap.h"

#define US 1e-6 /* the timelines hold to the microsecond */

#define BASE                                                                                       \
    "{\"seed\": 1, \"cluster\": {\"engine\": \"ideal\", \"gpu\": \"h100-sxm\", "                   \
    "\"model\": \"llama-3.1-8b\", \"scheduler\": {\"max_batch\": 2}, \"host\": "                   \
    "{\"frontend_s\": 0.001, \"output_s\": 0.0005}, \"cost_model\": {\"kind\": \"linear\", "       \
    "\"iteration_s\": 0.002, \"prefill_s_per_token\": 0.0001, \"decode_step_s\": 0.008, "          \
    "\"decode_s_per_seq\": 0}}, \"workload\": {\"arrival\": {\"process\": \"trace\"}}}"

#define FRONTEND_S 0.001
#define OUTPUT_S   0.0005
#define PROMPT     100

/* Trace rows (arrival_time_s,input_tokens,output_tokens); A is the last. */
#define LIGHT           "0,100,1000\n0.0355,100,50\n"
#define FULL            "0,100,1000\n0,100,3\n0.0255,100,50\n"
#define LIGHT_A         1
#define FULL_A          2
#define FULL_C          1
#define A_ARRIVAL_LIGHT 0.0355
#define A_ARRIVAL_FULL  0.0255

static const char *const PIPELINE[] = {"cluster.pipeline_parallel=2",
                                       "cluster.cost_model={\"kind\": \"roofline\"}", NULL};
static const char *const ROOFLINE[] = {"cluster.cost_model={\"kind\": \"roofline\"}", NULL};

/* ---- a run, its request rows and its iteration rows ---- */

typedef struct run {
    sim_scenario sc; /* kept for its cost model */
    support_rows rows; /* its requests, and its steps in rows.it */
    int rc;
} run;

static const sim_request_row NO_REQUEST = {.id = -1,
                                           .first_scheduled_s = NAN,
                                           .first_token_s = NAN,
                                           .finish_s = NAN,
                                           .engine_first_token_s = NAN,
                                           .engine_finish_s = NAN};
static const sim_iteration_row NO_STEP = {.start_s = NAN,
                                          .end_s = NAN,
                                          .scheduled_s = NAN,
                                          .gpu_start_s = NAN,
                                          .gpu_end_s = NAN,
                                          .client_s = NAN,
                                          .prefill_tokens = -1,
                                          .decode_seqs = -1};

/* Loads BASE on the trace at path, sync or async, with the overrides extra
 * (NULL terminated, at most 4, or NULL); 0 on success. */
static int load(const char *path, bool async, const char *const *extra, sim_scenario *sc)
{
    char *at = util_xasprintf("workload.arrival.path=%s", path);
    const char *sets[8] = {at, async ? "cluster.scheduler.async_scheduling=true"
                                     : "cluster.scheduler.async_scheduling=false"};
    for (int i = 0; extra && extra[i] && i < 4; i++)
        sets[2 + i] = extra[i];
    int rc = support_scenario(BASE, sets, sc, NULL); /* its errors as TAP comments */
    free(at);
    return rc;
}

/* Runs BASE on the trace rows (see load), every iteration recorded.  r->rc
 * is the engine's status (-100: the scenario did not load). */
static void run_trace(const char *trace, bool async, const char *const *extra, run *r)
{
    memset(r, 0, sizeof *r);
    r->rc = -100;
    char *path = support_write_trace(trace);
    if (!load(path, async, extra, &r->sc)) {
        sim_sink sink = support_capture_steps(&r->rows);
        sim_engine *e = sim_engine_create(&r->sc, &sink);
        sim_engine_limit_in_flight(e, 0);
        r->rc = sim_engine_run(e, NULL, NULL, NULL);
        sim_engine_destroy(e);
    }
    unlink(path);
    free(path);
}

static void run_fini(run *r)
{
    support_rows_fini(&r->rows);
    sim_scenario_fini(&r->sc);
}

/* Request id's row (NO_REQUEST's NANs when it has none). */
static const sim_request_row *req(const run *r, int64_t id)
{
    const sim_request_row *q = support_row(&r->rows, id);
    return q ? q : &NO_REQUEST;
}

/* Iteration i (NO_STEP when there is none). */
static const sim_iteration_row *step(const run *r, long i)
{
    return i >= 0 && (size_t)i < r->rows.n_it ? &r->rows.it[i] : &NO_STEP;
}

/* The index of the iteration that starts at t, or -1. */
static long step_from(const run *r, double t)
{
    for (size_t i = 0; i < r->rows.n_it; i++)
        if (fabs(r->rows.it[i].start_s - t) < US / 10) return (long)i;
    return -1;
}

/* The index of the nth iteration (0: the first) that prefills, or -1. */
static long prefill_step(const run *r, int nth)
{
    for (size_t i = 0; i < r->rows.n_it; i++)
        if (r->rows.it[i].prefill_tokens > 0 && nth-- == 0) return (long)i;
    return -1;
}

/* ---- the linear timelines, as docs/engines.md works them ---- */

/* Every step's pipeline stamps: planned as it starts (sync, and an async
 * engine's first step, after an idle spell) or as the step before it
 * started (async), its GPU work its whole span (no host step time), its
 * tokens at the client output_s after it ends. */
static void check_stamps(const run *r, bool async, const char *what)
{
    size_t planned_off = 0, gpu_off = 0, client_off = 0;
    for (size_t i = 0; i < r->rows.n_it; i++) {
        const sim_iteration_row *s = &r->rows.it[i];
        double planned = async && i > 0 ? r->rows.it[i - 1].start_s : s->start_s;
        planned_off += fabs(s->scheduled_s - planned) > US / 10;
        gpu_off +=
            fabs(s->gpu_start_s - s->start_s) > US / 10 || fabs(s->gpu_end_s - s->end_s) > US / 10;
        client_off += fabs(s->client_s - (s->end_s + OUTPUT_S)) > US / 10;
    }
    if (async)
        is_int(planned_off, 0, "%s: the first step is planned as it starts, the rest a step ahead",
               what);
    else
        is_int(planned_off, 0, "%s: every step is planned as it starts", what);
    is_int(gpu_off, 0, "%s: every step's GPU work spans it (no host step time)", what);
    is_int(client_off, 0, "%s: every step's tokens reach the client 0.5 ms after it ends", what);
}

/* Request A's timeline in a hand-worked run: when the scheduler took it
 * (and planned the step that prefills it), that step's span -- its end is
 * A's first token out of the engine -- and the end of the step after, its
 * second token; each reaches the client OUTPUT_S later. */
typedef struct a_timeline {
    double scheduled, runs_from, runs_to, second_out;
} a_timeline;

static void check_a(const run *r, const sim_request_row *a, const a_timeline *t,
                    const char *what)
{
    long pa = prefill_step(r, 1);
    is_near(a->first_scheduled_s, t->scheduled, US, "%s: A is first scheduled at %g ms", what,
            1e3 * t->scheduled);
    is_near(step(r, pa)->start_s, t->runs_from, US, "%s: A first runs in the step from %g ms", what,
            1e3 * t->runs_from);
    is_near(step(r, pa)->end_s, t->runs_to, US, "%s: which ends at %g ms", what, 1e3 * t->runs_to);
    is_near(step(r, pa)->scheduled_s, t->scheduled, US, "%s: and was planned at %g ms", what,
            1e3 * t->scheduled);
    is_near(a->engine_first_token_s, t->runs_to, US,
            "%s: A's first token leaves the engine at %g ms", what, 1e3 * t->runs_to);
    is_near(a->first_token_s, t->runs_to + OUTPUT_S, US, "%s: and reaches the client at %g ms",
            what, 1e3 * (t->runs_to + OUTPUT_S));
    is_near(step(r, pa + 1)->start_s, t->runs_to, US, "%s: A's second token's step starts then",
            what);
    is_near(step(r, pa + 1)->end_s, t->second_out, US,
            "%s: A's second token leaves the engine at %g ms", what, 1e3 * t->second_out);
    is_near(step(r, pa + 1)->client_s, t->second_out + OUTPUT_S, US,
            "%s: and reaches the client at %g ms", what, 1e3 * (t->second_out + OUTPUT_S));
    is_near(a->finish_s - a->engine_finish_s, OUTPUT_S, US,
            "%s: A's last token reaches the client 0.5 ms after it leaves the engine", what);
}

static void test_light_sync(void)
{
    const char *what = "light load, sync";
    run r;
    run_trace(LIGHT, false, NULL, &r);
    is_int(r.rc, 0, "%s: the run completes", what);
    const sim_request_row *a = req(&r, LIGHT_A);
    is_near(a->enqueue_s, 0.0365, US, "%s: A is queued at 36.5 ms", what);
    check_a(&r, a, &(a_timeline){0.043, 0.043, 0.063, 0.073}, what);
    is_int(step(&r, prefill_step(&r, 1) + 1)->decode_seqs, 2, "%s: the next step decodes A and B",
           what);
    check_stamps(&r, false, what);
    run_fini(&r);
}

static void test_light_async(void)
{
    const char *what = "light load, async";
    run r;
    run_trace(LIGHT, true, NULL, &r);
    is_int(r.rc, 0, "%s: the run completes", what);
    const sim_iteration_row *s43 = step(&r, step_from(&r, 0.043));
    is_near(s43->end_s, 0.053, US, "%s: the step from 43 ms ends at 53 ms", what);
    is_near(s43->scheduled_s, 0.033, US, "%s: it was planned at 33 ms, before A was queued", what);
    ok(s43->decode_seqs == 1 && s43->prefill_tokens == 0, "%s: so it decodes B alone", what);
    check_a(&r, req(&r, LIGHT_A), &(a_timeline){0.043, 0.053, 0.073, 0.083}, what);
    const sim_iteration_row *s13 = step(&r, step_from(&r, 0.013)),
                            *s23 = step(&r, step_from(&r, 0.023));
    is_near(s13->scheduled_s, 0.001, US,
            "%s: B's first decode step [13, 23) ms was planned at 1 ms, as its prefill began",
            what);
    is_near(s23->scheduled_s, 0.013, US, "%s: the step [23, 33) ms was planned at 13 ms", what);
    check_stamps(&r, true, what);
    run_fini(&r);
}

static void test_full_sync(void)
{
    const char *what = "full load, sync";
    run r;
    run_trace(FULL, false, NULL, &r);
    is_int(r.rc, 0, "%s: the run completes", what);
    const sim_request_row *c = req(&r, FULL_C);
    is_near(step(&r, 0)->end_s, 0.023, US, "%s: B and C are prefilled together in [1, 23) ms",
            what);
    is_near(c->engine_finish_s, 0.043, US, "%s: C's last token leaves the engine at 43 ms", what);
    is_near(c->finish_s, 0.0435, US, "%s: C finishes at 43.5 ms", what);
    check_a(&r, req(&r, FULL_A), &(a_timeline){0.043, 0.043, 0.063, 0.073},
            "full load, sync (A, after C's slot)");
    check_stamps(&r, false, what);
    run_fini(&r);
}

static void test_full_async(void)
{
    const char *what = "full load, async";
    run r;
    run_trace(FULL, true, NULL, &r);
    is_int(r.rc, 0, "%s: the run completes", what);
    const sim_request_row *c = req(&r, FULL_C);
    const sim_iteration_row *s43 = step(&r, step_from(&r, 0.043));
    is_near(step(&r, 0)->end_s, 0.023, US, "%s: B and C are prefilled together in [1, 23) ms",
            what);
    is_near(c->engine_finish_s, 0.043, US, "%s: C's last token leaves the engine at 43 ms", what);
    is_near(c->finish_s, 0.0435, US, "%s: C finishes at 43.5 ms, not when its slot is freed", what);
    is_near(s43->end_s, 0.053, US, "%s: the step from 43 ms ends at 53 ms", what);
    ok(s43->decode_seqs == 1 && s43->prefill_tokens == 0,
       "%s: C holds its slot through its plan: B decodes alone", what);
    check_a(&r, req(&r, FULL_A), &(a_timeline){0.043, 0.053, 0.073, 0.083}, what);
    check_stamps(&r, true, what);
    run_fini(&r);
}

/* ---- the same rules on the cost model's own steps ---- */

/* One iteration: n_prefill whole prompts and n_decode decoders whose
 * contexts sum to ctx, as start_single fills its batch. */
static double step_s(const mdl_cost *cm, int n_prefill, int n_decode, int64_t ctx)
{
    const mdl_chunk chunks[2] = {{.tokens = PROMPT}, {.tokens = PROMPT}};
    double c = PROMPT;
    mdl_batch b = {.n_prefill = n_prefill,
                   .prefill_tokens = (int64_t)PROMPT * n_prefill,
                   .prefill_sq = n_prefill * c * c,
                   .prefill_pairs = n_prefill * c * (c + 1) / 2,
                   .chunks = n_prefill ? chunks : NULL,
                   .n_decode = n_decode,
                   .decode_context = ctx};
    mdl_step s;
    mdl_cost_step(cm, &b, &s);
    return s.time_s;
}

/* When each step starts (start[i], step i) while the prompts of t = 0 run
 * alone (B, and C at full load): step 0 prefills them; then they decode,
 * each first attending prompt + 1 tokens and one more every step, C
 * producing its 2nd and 3rd tokens in steps 1 and 2 (C_LAST).  Each
 * boundary is a double sum; the engine ends steps on whole
 * nanoseconds (rounding each single step, and a decode run's total so
 * far), a few nanoseconds at most off these, far inside the microsecond. */
#define C_LAST  2
#define N_STEPS 64
static void compose_without_a(const mdl_cost *cm, bool full, double start[N_STEPS])
{
    start[0] = FRONTEND_S;
    start[1] = start[0] + step_s(cm, full ? 2 : 1, 0, 0);
    for (int i = 1; i + 1 < N_STEPS; i++) {
        int n = full && i <= C_LAST ? 2 : 1;
        start[i + 1] = start[i] + step_s(cm, 0, n, n * (PROMPT + i)); /* B's context: prompt + i */
    }
}

/* Where A joins, composed by hand from single steps. */
typedef struct composed {
    long step;            /* the iteration A is first prefilled in (0: the first prompts') */
    double sched;         /* its first_scheduled_s */
    double first, second; /* when its first and second tokens reach the client */
} composed;

/* The plan of step i is made as step i - lag starts (lag 1 async, 0
 * sync): A, queued at a_queued, joins the first step whose plan had it
 * queued and a free slot -- at full load C's, freed once the plan after
 * its last step is made.  Its step decodes B too, and the next one both. */
static composed compose(const mdl_cost *cm, bool full, bool async, double a_queued)
{
    const int lag = async ? 1 : 0, c_last = full ? C_LAST : -1;
    double start[N_STEPS];
    compose_without_a(cm, full, start);
    for (long i = 1; i < N_STEPS; i++) {
        bool seen = a_queued <= start[i - lag], slot = i > c_last + lag;
        if (!seen || !slot) continue;
        int64_t ctx = PROMPT + i; /* B's */
        double first = start[i] + step_s(cm, 1, 1, ctx);
        double second = first + step_s(cm, 0, 2, ctx + 1 + PROMPT + 1);
        return (composed){.step = i,
                          .sched = start[i - lag],
                          .first = first + OUTPUT_S,
                          .second = second + OUTPUT_S};
    }
    return (composed){.step = -1, .sched = NAN, .first = NAN, .second = NAN};
}

/* The engine's timeline of A against the composition. */
static void check_composed(const run *r, int64_t a_id, const composed *c, const char *what)
{
    const sim_request_row *a = req(r, a_id);
    long pa = prefill_step(r, 1);
    is_int(pa, c->step, "%s: A first runs in step %ld", what, c->step);
    is_near(a->first_scheduled_s, c->sched, US, "%s: A is first scheduled at %.6f s", what,
            c->sched);
    is_near(a->first_token_s, c->first, US, "%s: A's first token reaches the client at %.6f s",
            what, c->first);
    is_near(step(r, pa + 1)->client_s, c->second, US,
            "%s: A's second token reaches the client at %.6f s", what, c->second);
}

/* A trace, sync and async (c[0], c[1]), with the overrides, A queued at
 * a_queued: the engine's timeline of A against the composition on the
 * scenario's own cost model. */
static void test_composed(const char *trace, bool full, double a_queued, const char *const *sets,
                          const char *label, composed c[2])
{
    for (int async = 0; async <= 1; async++) {
        char *what = util_xasprintf("%s, %s", label, async ? "async" : "sync");
        run r;
        run_trace(trace, async, sets, &r);
        is_int(r.rc, 0, "%s: the run completes", what);
        c[async] = compose(&r.sc.pools[0].cost, full, async, a_queued);
        check_composed(&r, full ? FULL_A : LIGHT_A, &c[async], what);
        run_fini(&r);
        free(what);
    }
    is_int(c[1].step, c[0].step + 1, "%s: async, A runs one step later than sync", label);
}

/* The traces of docs/engines.md on the linear costs (the composition
 * against the hand-worked numbers) and with 2 pipeline stages on the
 * roofline.  There the steps are shorter than the linear ones (about 8
 * ms), and C finishes before A is queued at 26.5 ms, so a third trace
 * queues A in C's first decode step: it waits for C's slot. */
static void test_compositions(void)
{
    composed c[2];
    test_composed(LIGHT, false, A_ARRIVAL_LIGHT + FRONTEND_S, NULL, "light load, linear", c);
    test_composed(FULL, true, A_ARRIVAL_FULL + FRONTEND_S, NULL, "full load, linear", c);
    test_composed(LIGHT, false, A_ARRIVAL_LIGHT + FRONTEND_S, PIPELINE, "light load, PP 2", c);
    test_composed(FULL, true, A_ARRIVAL_FULL + FRONTEND_S, PIPELINE, "full load, PP 2", c);

    sim_scenario sc;
    char *path = support_write_trace(FULL);
    double start[N_STEPS], a_queued = NAN;
    if (!load(path, false, PIPELINE, &sc)) {
        compose_without_a(&sc.pools[0].cost, true, start);
        a_queued = (start[1] + start[2]) / 2;
    }
    sim_scenario_fini(&sc);
    unlink(path);
    free(path);
    char trace[128];
    snprintf(trace, sizeof trace, "0,100,1000\n0,100,3\n%.9f,100,50\n", a_queued - FRONTEND_S);
    test_composed(trace, true, a_queued, PIPELINE, "full load, PP 2, A queued in step 1", c);
    is_int(c[0].step, C_LAST + 1, "full load, PP 2, sync: A waits for C's slot: step %d",
           C_LAST + 1);
    is_int(c[1].step, C_LAST + 2, "full load, PP 2, async: C holds it a step more: step %d",
           C_LAST + 2);
}

/* Each stage hand-off of a step of `tokens` tokens: the fixed latency plus
 * the hidden state over one direction of the GPU's link (models/cost.c). */
static double hand_off_s(const mdl_cost *cm, double tokens)
{
    double bw = cm->gpu.link_bw > 0 ? cm->gpu.link_bw / 2 : cm->gpu.pcie_bw;
    return cm->allreduce_latency_s + tokens * cm->model.hidden * cm->model.bytes_per_param / bw;
}

/* Pipeline parallelism lengthens every step by one hand-off, against the
 * same trace on one stage: B's prefill, its first decode step, and so A's
 * first token by the hand-offs of every step up to it (A runs in the same
 * step on both). */
static void test_pipeline_lengthens(void)
{
    run one, two;
    run_trace(LIGHT, false, ROOFLINE, &one);
    run_trace(LIGHT, false, PIPELINE, &two);
    const mdl_cost *cm = &two.sc.pools[0].cost;
    is_int(cm->pp, 2, "pipeline: the replica has 2 stages");
    cmp_ok(hand_off_s(cm, PROMPT), >, 0, "pipeline: a stage hand-off takes time");
    const sim_iteration_row *p1 = step(&one, 0), *p2 = step(&two, 0);
    const sim_iteration_row *d1 = step(&one, 1), *d2 = step(&two, 1);
    is_near((p2->end_s - p2->start_s) - (p1->end_s - p1->start_s), hand_off_s(cm, PROMPT), US,
            "pipeline: 2 stages lengthen B's prefill by one hand-off of 100 tokens (%.3f us)",
            hand_off_s(cm, PROMPT) * 1e6);
    is_near((d2->end_s - d2->start_s) - (d1->end_s - d1->start_s), hand_off_s(cm, 1), US,
            "pipeline: and B's first decode step by one hand-off of 1 token (%.3f us)",
            hand_off_s(cm, 1) * 1e6);
    long pa = prefill_step(&one, 1);
    is_int(prefill_step(&two, 1), pa, "pipeline: A first runs in step %ld on 1 stage and on 2", pa);
    double later = 0;
    for (long i = 0; i <= pa; i++)
        later += hand_off_s(cm, step(&one, i)->prefill_tokens + step(&one, i)->decode_seqs);
    is_near(req(&two, LIGHT_A)->first_token_s - req(&one, LIGHT_A)->first_token_s, later, US,
            "pipeline: A's first token comes %.3f us later, a hand-off for each step to it",
            later * 1e6);
    run_fini(&one);
    run_fini(&two);
}

/* When the plan made a step ahead is empty, the engine plans again at
 * once (vLLM schedules at once): X (t = 0, 100 in, 1 out) is done with its
 * prefill [1, 13) ms, and A, queued at 5 ms, after that step's plan, is
 * planned at 13 ms and runs from there, as on a sync engine. */
static void test_empty_plan(void)
{
    const char *what = "empty ahead plan, async";
    run r;
    run_trace("0,100,1\n0.004,100,50\n", true, NULL, &r);
    is_int(r.rc, 0, "%s: the run completes", what);
    const sim_request_row *a = req(&r, 1);
    const sim_iteration_row *s = step(&r, 1);
    is_near(step(&r, 0)->end_s, 0.013, US, "%s: X's prefill ends at 13 ms", what);
    is_int(s->prefill_tokens, PROMPT, "%s: the next step prefills A", what);
    is_near(s->start_s, 0.013, US, "%s: it starts at 13 ms, not a step later", what);
    is_near(s->scheduled_s, 0.013, US, "%s: planned as it starts", what);
    is_near(a->first_scheduled_s, 0.013, US, "%s: A is first scheduled at 13 ms", what);
    is_near(a->first_token_s, 0.0255, US, "%s: A's first token reaches the client at 25.5 ms",
            what);
    run_fini(&r);
}

/* vLLM V1's scheduler_reserve_full_isl (cluster.scheduler.reserve_full_isl):
 * a waiting request joins only when the free blocks hold its whole prompt,
 * not just its first chunk.  B (96 in, 200 out) holds 16 of 21 blocks when
 * A (96 in: 6 blocks, first chunk of 64 tokens: 4) is queued at 1.501 s.
 * Without the rule A takes its first chunk, B's growth then preempts it,
 * and it runs again after B; with it A waits for B's blocks and is never
 * preempted, and its first token is out sooner. */
#define ISL_TRACE "0,96,200\n1.5,96,20\n"

static void test_reserve_full_isl(void)
{
    const char *off[] = {"cluster.scheduler.policy=chunked", "cluster.scheduler.max_batched_tokens=64",
                         "cluster.scheduler.kv_blocks=21", "cluster.scheduler.reserve_full_isl=false",
                         NULL};
    const char *on[] = {"cluster.scheduler.policy=chunked", "cluster.scheduler.max_batched_tokens=64",
                        "cluster.scheduler.kv_blocks=21", "cluster.scheduler.reserve_full_isl=true",
                        NULL};
    run a, b;
    run_trace(ISL_TRACE, false, off, &a);
    run_trace(ISL_TRACE, false, on, &b);
    is_int(a.rc, 0, "full prompt not reserved: the run ends well");
    is_int(b.rc, 0, "full prompt reserved: the run ends well");
    is_near(req(&a, 1)->first_scheduled_s, 1.5046, US,
            "not reserved: A takes its first chunk at 1.5046 s, beside B");
    is_int(req(&a, 1)->preemptions, 1, "not reserved: B's growth then preempts A");
    is_near(req(&b, 1)->first_scheduled_s, req(&b, 0)->engine_finish_s, US,
            "reserved: A waits until B has finished and freed its blocks");
    is_near(req(&b, 1)->first_scheduled_s, 2.0046, US, "reserved: at 2.0046 s");
    is_int(req(&b, 1)->preemptions, 0, "reserved: A is never preempted");
    ok(req(&b, 1)->engine_first_token_s < req(&a, 1)->engine_first_token_s,
       "reserved: A's first token leaves sooner (%.4f s against %.4f s)",
       req(&b, 1)->engine_first_token_s, req(&a, 1)->engine_first_token_s);
    run_fini(&a);
    run_fini(&b);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (support_init()) return 1;
    test_light_sync();
    test_light_async();
    test_full_sync();
    test_full_async();
    test_compositions();
    test_pipeline_lengthens();
    test_empty_plan();
    test_reserve_full_isl();
    support_fini();
    return tap_done();
}
