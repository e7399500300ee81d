/*
 * clocks.c: the two clocks of a request -- the prompt sets the first
 * (TTFT, prefill, compute-bound), the reply the second (TPOT per token,
 * decode, bandwidth-bound) -- and what that means when two systems trade
 * one clock against the other.
 */
#include "ls_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* {"path": {"dist": "fixed", "value": v}} added to o. */
static void fixed(cJSON *o, const char *path, double v)
{
    cJSON *dist = cJSON_AddObjectToObject(o, path);
    cJSON_AddStringToObject(dist, "dist", "fixed");
    cJSON_AddNumberToObject(dist, "value", v);
}

static double requests(const ls_context *c)
{
    return c->quick ? ls_knob(c, "quick_requests", 8) : ls_knob(c, "requests", 40);
}

/* ---- two-clocks ---- */

typedef struct clock_point {
    double prompt, reply, ttft, tpot, e2e;
} clock_point;

/* A row: what was varied, the point, and the engine that ran it. */
static void clock_row(ls_result *r, const char *phase, const clock_point *p, const char *engine)
{
    cJSON *row = ls_row(r);
    cJSON_AddStringToObject(row, "varied", phase);
    cJSON_AddNumberToObject(row, "prompt", p->prompt);
    cJSON_AddNumberToObject(row, "reply", p->reply);
    cJSON_AddNumberToObject(row, "ttft_ms", 1e3 * p->ttft);
    cJSON_AddNumberToObject(row, "tpot_ms", 1e3 * p->tpot);
    cJSON_AddNumberToObject(row, "e2e_s", p->e2e);
    cJSON_AddStringToObject(row, "engine", engine);
}

static void clock_columns(ls_result *r)
{
    ls_column_format(r, "varied", "varied", "", 0);
    ls_column_format(r, "prompt", "prompt", "tokens", 0);
    ls_column_format(r, "reply", "reply", "tokens", 0);
    /* two decimals: the engine rows differ by ms of host time, or 0.01 ms of pipeline */
    ls_column_format(r, "ttft_ms", "TTFT", "ms", 2);
    ls_column_format(r, "tpot_ms", "TPOT", "ms", 2);
    ls_column_format(r, "e2e_s", "e2e", "s", 3);
    ls_column_format(r, "engine", "engine", "", 0);
}

/* The sentences, each only as strong as its numbers: p[0..np) the prompt
 * sweep, p[np..n) the reply sweep. */
static void clock_findings(ls_result *r, const clock_point *p, int np, int n)
{
    const clock_point *a = &p[0], *b = &p[np - 1], *s = &p[np], *l = &p[n - 1];
    double ttft_x = b->ttft / a->ttft, tpot_x = b->tpot / a->tpot;
    if (ttft_x > 2 * tpot_x)
        ls_say(r, "The prompt sets the first clock: from %g to %g prompt tokens (x%.0f) TTFT goes "
                  "from %.3f s to %.3f s (x%.1f), while TPOT moves from %.1f to %.1f ms (x%.2f). "
                  "Prefill computes every prompt token at once: it is compute-bound.",
               a->prompt, b->prompt, b->prompt / a->prompt, a->ttft, b->ttft, ttft_x,
               1e3 * a->tpot, 1e3 * b->tpot, tpot_x);
    else
        ls_say(r, "From %g to %g prompt tokens TTFT goes from %.3f s to %.3f s (x%.1f) and TPOT "
                  "from %.1f to %.1f ms (x%.2f): here the prompt moves both clocks alike.",
               a->prompt, b->prompt, a->ttft, b->ttft, ttft_x, 1e3 * a->tpot, 1e3 * b->tpot,
               tpot_x);
    double ttft_change = l->ttft / s->ttft - 1, e2e_x = l->e2e / s->e2e;
    char ttft_text[96];
    if (fabs(ttft_change) < 0.05)
        snprintf(ttft_text, sizeof ttft_text, "TTFT stays at %.3f s (%+.1f%%)", s->ttft,
                 100 * ttft_change);
    else
        snprintf(ttft_text, sizeof ttft_text, "TTFT moves from %.3f s to %.3f s (%+.0f%%)",
                 s->ttft, l->ttft, 100 * ttft_change);
    ls_say(r, "The reply %s: from %g to %g reply tokens end-to-end latency goes from %.2f s to "
              "%.2f s (x%.1f) while %s. Each decode step reads the weights once for one token "
              "per sequence: it is bandwidth-bound, %.1f ms a token here.",
           e2e_x > 2 ? "sets the second clock" : "moves the second clock little", s->reply,
           l->reply, s->e2e, l->e2e, e2e_x, ttft_text, 1e3 * l->tpot);
    const clock_point *m = &p[np]; /* the reply sweep's point nearest 100 tokens */
    for (int i = np; i < n; i++)
        if (fabs(p[i].reply - 100) < fabs(m->reply - 100)) m = &p[i];
    double after = m->reply - 1;
    ls_say(r, "e2e = TTFT + TPOT x (tokens - 1): %.3f s + %.1f ms x %g = %.3f s, the measured "
              "e2e %.3f s. The %g tokens after the first took %.2f s: a TPOT of %.1f ms, %.0f "
              "tokens/s per user (100 tokens after the first in 5 s would be 50 ms, 20/s).",
           m->ttft, 1e3 * m->tpot, after, m->ttft + m->tpot * after, m->e2e, after,
           m->tpot * after, 1e3 * m->tpot, 1 / m->tpot);
    ls_keep(r, "ttft_ratio_prompt", ttft_x);
    ls_keep(r, "tpot_ratio_prompt", tpot_x);
    ls_keep(r, "e2e_ratio_reply", e2e_x);
    ls_keep(r, "ttft_ratio_reply", l->ttft / s->ttft);
    ls_keep(r, "e2e_identity_error_s", fabs(m->ttft + m->tpot * after - m->e2e));
}

/* Both sweeps over one axis of tokens: the prompt's length in one colour,
 * the reply's in another, each clock a panel. */
static void clock_figure(const ls_context *c, ls_result *r, const clock_point *p, int np, int n)
{
    char *title = ls_title(c);
    ls_plot_init(r, title, "the prompt moves TTFT, the reply moves end-to-end latency, TPOT stays",
                 "length of the part varied", "tokens", AN_SCALE_LOG);
    free(title);
    int panels[3] = {ls_plot_panel(r, "TTFT", "s", AN_SCALE_AUTO),
                     ls_plot_panel(r, "TPOT", "s", AN_SCALE_AUTO),
                     ls_plot_panel(r, "end-to-end latency", "s", AN_SCALE_AUTO)};
    double *x = util_xcalloc((size_t)n, sizeof *x), *y = util_xcalloc((size_t)n, sizeof *y);
    static const char *const names[2] = {"prompt varied", "reply varied"};
    for (int k = 0; k < 3; k++)
        for (int sweep = 0; sweep < 2; sweep++) {
            int from = sweep ? np : 0, m = sweep ? n - np : np;
            for (int i = 0; i < m; i++) {
                const clock_point *q = &p[from + i];
                x[i] = sweep ? q->reply : q->prompt;
                y[i] = k == 0 ? q->ttft : k == 1 ? q->tpot : q->e2e;
            }
            an_plot_series *s = ls_plot_series(r, panels[k], names[sweep], x, y, m);
            s->colour = sweep + 1;
        }
    free(x);
    free(y);
}

/* ---- two-clocks: what a real engine adds to TTFT at the lesson's load ---- */

/* The lesson's own point (its fixed prompt and reply, its load) three
 * times: on the lesson's engine; on lesson.pipeline_engine with its host
 * latencies but planning each step after the last; and on that engine as
 * it ships, planning step n + 1 while step n runs.  Only the engine and
 * async_scheduling differ: the lesson's effective scheduler keys are pinned,
 * so the preset's own policy, batch and prefix cache do not come in. */
enum { ENGINE_LESSON, ENGINE_SYNC, ENGINE_PIPELINED, N_ENGINE_POINTS };

typedef struct engine_point {
    clock_point p;
    double engine_ttft; /* the engine core's clock: queued to first token out */
} engine_point;

/* What the engine adds outside its steps, from its effective scenario. */
typedef struct engine_terms {
    const char *engine, *lesson_engine;
    bool pipelined;    /* it schedules asynchronously as it ships */
    double frontend_s; /* API server: frontend_s + per token x the prompt */
    double output_s;   /* engine core to the client */
} engine_terms;

static cJSON *engine_overrides(const ls_context *c, int which, const char *engine,
                               const clock_point *at)
{
    cJSON *o = cJSON_CreateObject();
    fixed(o, "workload.prompt_tokens", at->prompt);
    fixed(o, "workload.output_tokens", at->reply);
    cJSON_AddNumberToObject(o, "stop.requests", requests(c));
    if (which == ENGINE_LESSON) return o;
    cJSON_AddStringToObject(o, "cluster.engine", engine);
    const cJSON *own = util_json_get(c->scenario->json, "cluster.scheduler");
    if (!own) { /* pools only: each keeps its scheduler, only the engine changes */
        if (which == ENGINE_SYNC) cJSON_AddFalseToObject(o, "cluster.scheduler.async_scheduling");
        return o;
    }
    cJSON *sched = cJSON_Duplicate(own, 1);
    /* as it ships, the preset says whether it plans ahead; else it does not */
    cJSON_DeleteItemFromObjectCaseSensitive(sched, "async_scheduling");
    if (which == ENGINE_SYNC) cJSON_AddFalseToObject(sched, "async_scheduling");
    cJSON_AddItemToObject(o, "cluster.scheduler", sched);
    return o;
}

/* The engine's terms as its effective scenario has them: the preset's host
 * keys (or the scenario's own, which win) and its async_scheduling. */
static int engine_terms_of(const ls_context *c, cJSON *shipped, double prompt, engine_terms *t,
                           util_diag *d)
{
    pl_point p = {shipped, 1, 0};
    char *json = NULL;
    int rc = pl_point_scenario(&c->base, &p, &json, d);
    sim_scenario sc;
    memset(&sc, 0, sizeof sc);
    if (!rc) rc = sim_scenario_load(cJSON_Parse(json), c->base.catalog, NULL, &sc, d);
    if (!rc) {
        const sim_pool *pool = &sc.pools[0];
        t->pipelined = pool->async_scheduling;
        t->frontend_s = pool->frontend_s + pool->frontend_s_per_token * prompt;
        t->output_s = pool->output_s;
    }
    sim_scenario_fini(&sc);
    free(json);
    return rc;
}

static double engine_ttft_of(const ls_figures *f)
{
    for (int i = 0; i < f->n_definitions; i++)
        if (!strcmp(f->definitions[i].name, "ttft_engine")) return f->definitions[i].mean;
    return NAN;
}

/* The load the lesson's point runs at, as the sentence names it ("one
 * request at a time", "8 closed-loop users", "2 req/s, poisson", "every
 * request due at once"), or "". */
static void load_text(char *buf, size_t size, const ls_context *c)
{
    const cJSON *arrival = util_json_get(c->scenario->json, "workload.arrival");
    const char *process = cJSON_GetStringValue(util_json_get(arrival, "process"));
    double users = util_json_number(arrival, "users", NAN);
    double rate = util_json_number(arrival, "rate_per_s", NAN);
    if (process && !strcmp(process, "closed") && users == 1)
        snprintf(buf, size, " (one request at a time)");
    else if (process && !strcmp(process, "closed") && isfinite(users))
        snprintf(buf, size, " (%g closed-loop users)", users);
    else if (process && isfinite(rate))
        snprintf(buf, size, " (%g req/s, %s)", rate, process);
    else if (cJSON_IsString(util_json_get(arrival, "rate_per_s"))) /* "inf" */
        snprintf(buf, size, " (every request due at once%s)",
                 util_json_number(arrival, "max_concurrency", 0) >= 1 ? ", capped in flight" : "");
    else
        *buf = '\0';
}

/* What the step pipeline does to the mean TTFT, from sync to pipelined:
 * under a tenth of a decode step (0.1 ms for a one-token reply, which has
 * none) is nothing -- the requests found the engine idle --, more is the
 * wait for the step after next, less the host's step time hidden behind
 * the GPU's. */
static void pipeline_text(char *buf, size_t size, const engine_terms *t, const char *load,
                          const engine_point *s, const engine_point *a)
{
    double added = a->p.ttft - s->p.ttft, step = isfinite(a->p.tpot) ? a->p.tpot : 1e-3;
    char step_text[48] = "";
    if (isfinite(a->p.tpot))
        snprintf(step_text, sizeof step_text, " (a decode step is %.1f ms here)", 1e3 * step);
    if (!t->pipelined)
        snprintf(buf, size,
                 "At this load%s %s plans each step after the last one: it has no step "
                 "pipeline (async scheduling is off) to add to TTFT.",
                 load, t->engine);
    else if (fabs(added) < 0.1 * step)
        snprintf(buf, size,
                 "At this load%s %s's step pipeline adds nothing to the mean TTFT "
                 "(%+.2f ms: %.2f -> %.2f ms with async scheduling off and on): the "
                 "requests found the engine idle and were planned at once; only a "
                 "request that reaches it while a step runs waits for the step after "
                 "next.",
                 load, t->engine, 1e3 * added, 1e3 * s->p.ttft, 1e3 * a->p.ttft);
    else if (added > 0)
        snprintf(buf, size,
                 "At this load%s %s's step pipeline adds %.2f ms to the mean TTFT "
                 "(%.2f -> %.2f ms with async scheduling off and on): a request that "
                 "reaches the engine while a step runs waits for the step after next%s.",
                 load, t->engine, 1e3 * added, 1e3 * s->p.ttft, 1e3 * a->p.ttft, step_text);
    else
        snprintf(buf, size,
                 "At this load%s %s's step pipeline saves %.2f ms of the mean TTFT "
                 "(%.2f -> %.2f ms with async scheduling off and on): hiding the "
                 "host's step time behind the GPU's gains more than waiting for the "
                 "step after next costs.",
                 load, t->engine, -1e3 * added, 1e3 * s->p.ttft, 1e3 * a->p.ttft);
}

/* What the host adds from the lesson's engine to the synchronous one: the
 * API server and the stream (the client's clock less the engine's), split
 * by the engine's own figures where they are the whole of it, and the
 * engine core's own TTFT. */
static void host_text(char *buf, size_t size, const engine_terms *t, const engine_point *l,
                      const engine_point *s)
{
    double outside = (s->p.ttft - s->engine_ttft) - (l->p.ttft - l->engine_ttft);
    double inside = s->engine_ttft - l->engine_ttft;
    char split[160];
    if (fabs(outside - (t->frontend_s + t->output_s)) < 1e-6)
        snprintf(split, sizeof split,
                 "%.2f ms in the API server before the engine sees the "
                 "request, %.2f ms to stream the first token out",
                 1e3 * t->frontend_s, 1e3 * t->output_s);
    else
        snprintf(split, sizeof split, "%.2f ms outside the engine core", 1e3 * outside);
    snprintf(buf, size,
             "Its host terms add %.2f ms to the %s engine's %.2f ms: %s, and %+.2f ms "
             "in the engine core itself.",
             1e3 * (s->p.ttft - l->p.ttft), t->lesson_engine, 1e3 * l->p.ttft, split, 1e3 * inside);
}

static void engine_findings(const ls_context *c, ls_result *r, const engine_terms *t,
                            const engine_point *e)
{
    const engine_point *l = &e[ENGINE_LESSON], *s = &e[ENGINE_SYNC], *a = &e[ENGINE_PIPELINED];
    char load[96], pipe[512], host[384];
    load_text(load, sizeof load, c);
    pipeline_text(pipe, sizeof pipe, t, load, s, a);
    host_text(host, sizeof host, t, l, s);
    ls_say(r, "%s %s", pipe, host);
    ls_keep(r, "pipeline_ttft_ms", t->pipelined ? 1e3 * (a->p.ttft - s->p.ttft) : NAN);
    ls_keep(r, "host_ttft_ms", 1e3 * (s->p.ttft - l->p.ttft));
    ls_keep(r, "frontend_ms", 1e3 * t->frontend_s);
    ls_keep(r, "output_ms", 1e3 * t->output_s);
    ls_keep(r, "engine_core_ttft_ms", 1e3 * (s->engine_ttft - l->engine_ttft));
}

static void engine_rows(ls_result *r, const engine_terms *t, const engine_point *e, int n)
{
    char *sync = util_xasprintf("%s, async off", t->engine);
    const char *names[N_ENGINE_POINTS] = {t->lesson_engine, sync, t->engine};
    for (int i = 0; i < n; i++)
        clock_row(r, "engine", &e[i].p, names[i]);
    free(sync);
}

/* lesson.pipeline_engine, a preset of the catalog: refused here, by the
 * knob's name, rather than as the cluster.engine of a point the user did
 * not write.  Absent, vllm-v1. */
static int pipeline_engine(const ls_context *c, const char **engine, util_diag *d)
{
    const cJSON *k = util_json_get(c->knobs, "pipeline_engine");
    *engine = k ? cJSON_GetStringValue(k) : "vllm-v1";
    if (!*engine) return util_diag_add(d, "lesson.pipeline_engine: expected an engine's name");
    return mdl_catalog_check_engine(c->base.catalog, *engine, "lesson.pipeline_engine", d);
}

/* The comparison at the lesson's fixed prompt and reply: its rows and its
 * sentence.  An engine that does not plan ahead runs twice, not thrice. */
static int engine_compare(ls_context *c, ls_result *r, const char *engine, const clock_point *at,
                          util_diag *d)
{
    engine_terms t = {.engine = engine, .lesson_engine = c->scenario->pools[0].engine};
    cJSON *ov[N_ENGINE_POINTS];
    for (int i = 0; i < N_ENGINE_POINTS; i++)
        ov[i] = engine_overrides(c, i, t.engine, at);
    int rc = engine_terms_of(c, ov[ENGINE_PIPELINED], at->prompt, &t, d);
    int n = t.pipelined ? N_ENGINE_POINTS : ENGINE_PIPELINED;
    ls_figures f[N_ENGINE_POINTS];
    if (!rc) rc = ls_points(c, ov, n, true, f, d); /* iterations: the engine's clock too */
    engine_point e[N_ENGINE_POINTS] = {0};
    for (int i = 0; !rc && i < n; i++)
        e[i] =
            (engine_point){{at->prompt, at->reply, f[i].ttft_mean, f[i].tpot_mean, f[i].e2e_mean},
                           engine_ttft_of(&f[i])};
    if (!t.pipelined) e[ENGINE_PIPELINED] = e[ENGINE_SYNC];
    if (!rc) {
        engine_rows(r, &t, e, n);
        engine_findings(c, r, &t, e);
    }
    for (int i = 0; i < N_ENGINE_POINTS; i++)
        cJSON_Delete(ov[i]);
    return rc;
}

int ls__two_clocks(ls_context *c, ls_result *r, util_diag *d)
{
    int np, nr;
    double *prompts = ls_knobs(c, "prompt_tokens", &np), *replies = ls_knobs(c, "reply_tokens", &nr);
    double fp = ls_knob(c, "fixed_prompt", 512), fr = ls_knob(c, "fixed_reply", 100);
    int n = np + nr;
    cJSON **ov = util_xcalloc((size_t)n + 1, sizeof *ov);
    ls_figures *rep = util_xcalloc((size_t)n + 1, sizeof *rep);
    clock_point *p = util_xcalloc((size_t)n + 1, sizeof *p);
    for (int i = 0; i < n; i++) {
        p[i].prompt = i < np ? prompts[i] : fp;
        p[i].reply = i < np ? fr : replies[i - np];
        ov[i] = cJSON_CreateObject();
        fixed(ov[i], "workload.prompt_tokens", p[i].prompt);
        fixed(ov[i], "workload.output_tokens", p[i].reply);
        cJSON_AddNumberToObject(ov[i], "stop.requests", requests(c));
    }
    const char *engine = NULL;
    int rc = np > 1 && nr > 1 ? pipeline_engine(c, &engine, d)
                              : util_diag_add(d, "lesson.prompt_tokens and lesson.reply_tokens: "
                                                 "give at least two values each");
    if (!rc) rc = ls_points(c, ov, n, false, rep, d);
    if (!rc) clock_columns(r);
    for (int i = 0; !rc && i < n; i++) {
        p[i].ttft = rep[i].ttft_mean;
        p[i].tpot = rep[i].tpot_mean;
        p[i].e2e = rep[i].e2e_mean;
        clock_row(r, i < np ? "prompt" : "reply", &p[i], c->scenario->pools[0].engine);
    }
    if (!rc) {
        clock_findings(r, p, np, n);
        clock_figure(c, r, p, np, n);
        rc = engine_compare(c, r, engine, &(clock_point){.prompt = fp, .reply = fr}, d);
    }
    for (int i = 0; i < n; i++) cJSON_Delete(ov[i]);
    free(ov);
    free(rep);
    free(p);
    free(prompts);
    free(replies);
    return rc;
}

/* ---- chat-vs-summary ---- */

static cJSON *system_overrides(const ls_context *c, const char *sys, double reply)
{
    const cJSON *k = util_json_get(c->knobs, "systems");
    k = cJSON_GetObjectItemCaseSensitive(k, sys);
    cJSON *o = cJSON_CreateObject();
    cJSON *cm = cJSON_AddObjectToObject(o, "cluster.cost_model");
    cJSON_AddStringToObject(cm, "kind", "linear");
    static const char *const keys[] = {"iteration_s", "prefill_s_per_token", "decode_step_s"};
    for (int i = 0; i < 3; i++) cJSON_AddNumberToObject(cm, keys[i], util_json_number(k, keys[i], 0));
    cJSON_AddNumberToObject(cm, "decode_s_per_seq", 0);
    fixed(o, "workload.output_tokens", reply);
    cJSON_AddNumberToObject(o, "stop.requests", requests(c));
    return o;
}

/* The sentences: who starts first, who finishes which reply first, where
 * they cross (if they do), and whether both outpace a reader. */
static void chat_findings(const ls_context *c, ls_result *r, const double *lengths,
                          const double *ttft, const double *tpot, const double *e2e, double cross)
{
    double reading = ls_knob(c, "reading_words_per_minute", 250) *
                     ls_knob(c, "tokens_per_word", 1.33) / 60; /* tokens/s */
    const char *faster = tpot[1] < tpot[0] ? "faster" : "slower";
    ls_say(r, "A starts in %.2f s and streams at %.0f ms a token; B starts in %.2f s and "
              "streams at %.0f ms (x%.1f %s).",
           ttft[0], 1e3 * tpot[0], ttft[1], 1e3 * tpot[1],
           tpot[1] < tpot[0] ? tpot[0] / tpot[1] : tpot[1] / tpot[0], faster);
    const char *chat_first = e2e[0] < e2e[2] ? "A" : "B";
    const char *sum_first = e2e[1] < e2e[3] ? "A" : "B";
    bool crosses = isfinite(cross) && cross > 1 && strcmp(chat_first, sum_first);
    ls_say(r, "The %g-token chat reply is done first on %s (%.2f s against %.2f s); the "
              "%g-token summary on %s (%.2f s against %.2f s).%s",
           lengths[0], chat_first, fmin(e2e[0], e2e[2]), fmax(e2e[0], e2e[2]), lengths[1],
           sum_first, fmin(e2e[1], e2e[3]), fmax(e2e[1], e2e[3]),
           crosses ? "" : " One system is first at both lengths: no trade between the clocks.");
    if (crosses)
        ls_say(r, "They cross at %.0f tokens: shorter replies favour the %s, longer ones the %s.",
               cross, ttft[0] < ttft[1] ? "quick start (A)" : "quick start (B)",
               tpot[0] < tpot[1] ? "fast stream (A)" : "fast stream (B)");
    int keep_up = (1 / tpot[0] > reading) + (1 / tpot[1] > reading);
    ls_say(r, "A reader takes in about %.1f tokens/s (%g words a minute), so any TPOT under "
              "%.0f ms streams faster than they read: %s. A chatbot should watch TTFT; a summary "
              "read when complete should watch end-to-end latency.",
           reading, ls_knob(c, "reading_words_per_minute", 250), 1e3 / reading,
           keep_up == 2   ? "A's and B's both do"
           : keep_up == 0 ? "neither A nor B does"
           : 1 / tpot[0] > reading ? "A does, B does not"
                                   : "B does, A does not");
}

/* e2e against the reply's length: each system's line TTFT + TPOT x (n - 1)
 * from its measured clocks, and the measured replies as points on it. */
static void chat_figure(ls_result *r, const double *lengths, const double *ttft,
                        const double *tpot, const double *e2e, double cross)
{
    ls_plot_init(r, "chat-vs-summary: system A starts quickly, system B streams quickly",
                 "which finishes first depends on how long the reply is", "reply length",
                 "tokens", AN_SCALE_LINEAR);
    int panel = ls_plot_panel(r, "end-to-end latency", "s", AN_SCALE_LINEAR);
    enum { FINE = 64 };
    double x[FINE], y[FINE], hi = 1.25 * fmax(lengths[0], lengths[1]);
    static const char *const line[2] = {"system A", "system B"},
                             *measured[2] = {"system A, measured", "system B, measured"};
    for (int sys = 0; sys < 2; sys++) {
        for (int i = 0; i < FINE; i++) {
            x[i] = 1 + (hi - 1) * i / (FINE - 1);
            y[i] = ttft[sys] + tpot[sys] * (x[i] - 1);
        }
        ls_plot_series(r, panel, line[sys], x, y, FINE)->colour = sys + 1;
        an_plot_series *m = ls_plot_series(r, panel, measured[sys], lengths, &e2e[2 * sys], 2);
        m->colour = sys + 1;
        m->style = AN_STYLE_POINTS;
    }
    if (isfinite(cross) && cross > 1 && cross < hi) {
        char label[64];
        snprintf(label, sizeof label, "they cross at %.0f tokens", cross);
        ls_plot_guide(r, panel, AN_GUIDE_MARK, label, cross, true);
    }
}

int ls__chat_vs_summary(ls_context *c, ls_result *r, util_diag *d)
{
    const double lengths[2] = {ls_knob(c, "chat_tokens", 40), ls_knob(c, "summary_tokens", 800)};
    static const char *const sys[2] = {"A", "B"};
    cJSON *ov[4];
    ls_figures rep[4];
    for (int i = 0; i < 4; i++) ov[i] = system_overrides(c, sys[i / 2], lengths[i % 2]);
    int rc = ls_points(c, ov, 4, false, rep, d);
    double ttft[2] = {0}, tpot[2] = {0}, e2e[4] = {0};
    if (!rc) {
        ls_column_format(r, "system", "system", "", 0);
        ls_column_format(r, "reply", "reply", "", 0);
        ls_column_format(r, "tokens", "tokens", "tokens", 0);
        ls_column_format(r, "ttft_s", "TTFT", "s", 3);
        ls_column_format(r, "tpot_ms", "TPOT", "ms", 1);
        ls_column_format(r, "e2e_s", "e2e", "s", 2);
    }
    for (int i = 0; !rc && i < 4; i++) {
        cJSON *row = ls_row(r);
        cJSON_AddStringToObject(row, "system", sys[i / 2]);
        cJSON_AddStringToObject(row, "reply", i % 2 ? "summary" : "chat");
        cJSON_AddNumberToObject(row, "tokens", lengths[i % 2]);
        e2e[i] = rep[i].e2e_mean;
        ttft[i / 2] += rep[i].ttft_mean / 2;
        tpot[i / 2] += rep[i].tpot_mean / 2;
        cJSON_AddNumberToObject(row, "ttft_s", rep[i].ttft_mean);
        cJSON_AddNumberToObject(row, "tpot_ms", 1e3 * rep[i].tpot_mean);
        cJSON_AddNumberToObject(row, "e2e_s", e2e[i]);
    }
    if (!rc) {
        /* e2e_A(n) = e2e_B(n) where TTFT_A + TPOT_A (n - 1) = TTFT_B + TPOT_B (n - 1) */
        double cross = 1 + (ttft[1] - ttft[0]) / (tpot[0] - tpot[1]);
        chat_findings(c, r, lengths, ttft, tpot, e2e, cross);
        ls_keep(r, "crossover_tokens", cross);
        ls_keep(r, "chat_e2e_a", e2e[0]);
        ls_keep(r, "chat_e2e_b", e2e[2]);
        ls_keep(r, "summary_e2e_a", e2e[1]);
        ls_keep(r, "summary_e2e_b", e2e[3]);
        chat_figure(r, lengths, ttft, tpot, e2e, cross);
    }
    for (int i = 0; i < 4; i++) cJSON_Delete(ov[i]);
    return rc;
}
