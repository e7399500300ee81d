/*
 * clocks.c: the two clocks of a request -- the prompt sets the first
 * (TTFT, prefill, compute-bound), the reply the second (TPOT per token,
 * decode, bandwidth-bound) -- and what that means when two systems trade
 * one clock against the other.
 */
#include "ls_int.h"

#include <math.h>
#include <stdlib.h>

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

static void clock_row(ls_result *r, const char *phase, const clock_point *p)
{
    cJSON *row = ls_row(r);
    cJSON_AddStringToObject(row, "varied", phase);
    cJSON_AddNumberToObject(row, "prompt", p->prompt);
    cJSON_AddNumberToObject(row, "reply", p->reply);
    cJSON_AddNumberToObject(row, "ttft_s", p->ttft);
    cJSON_AddNumberToObject(row, "tpot_ms", 1e3 * p->tpot);
    cJSON_AddNumberToObject(row, "e2e_s", p->e2e);
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
    int rc = np > 1 && nr > 1 ? ls_points(c, ov, n, false, rep, d)
                              : util_diag_add(d, "lesson.prompt_tokens and lesson.reply_tokens: "
                                                 "give at least two values each");
    for (int i = 0; !rc && i < n; i++) {
        p[i].ttft = rep[i].ttft_mean;
        p[i].tpot = rep[i].tpot_mean;
        p[i].e2e = rep[i].e2e_mean;
        clock_row(r, i < np ? "prompt" : "reply", &p[i]);
    }
    if (!rc) {
        const clock_point *a = &p[0], *b = &p[np - 1], *s = &p[np], *l = &p[n - 1];
        ls_say(r, "The prompt sets the first clock: from %g to %g prompt tokens (x%.0f) TTFT goes "
                  "from %.3f s to %.3f s (x%.1f), while TPOT moves from %.1f to %.1f ms (x%.2f). "
                  "Prefill computes every prompt token at once: it is compute-bound.",
               a->prompt, b->prompt, b->prompt / a->prompt, a->ttft, b->ttft, b->ttft / a->ttft,
               1e3 * a->tpot, 1e3 * b->tpot, b->tpot / a->tpot);
        ls_say(r, "The reply sets the second clock: from %g to %g reply tokens end-to-end latency "
                  "goes from %.2f s to %.2f s (x%.1f) while TTFT stays at %.3f s (%+.1f%%). Each "
                  "decode step reads the weights once for one token per sequence: it is "
                  "bandwidth-bound, %.1f ms a token here.",
               s->reply, l->reply, s->e2e, l->e2e, l->e2e / s->e2e, s->ttft,
               100 * (l->ttft / s->ttft - 1), 1e3 * l->tpot);
        const clock_point *m = &p[np]; /* the reply sweep's first point, for the arithmetic */
        for (int i = np; i < n; i++)
            if (fabs(p[i].reply - 100) < fabs(m->reply - 100)) m = &p[i];
        double after = m->reply - 1;
        ls_say(r, "e2e = TTFT + TPOT x (tokens - 1): %.3f s + %.1f ms x %g = %.3f s, the measured "
                  "e2e %.3f s. The %g tokens after the first took %.2f s: a TPOT of %.1f ms, %.0f "
                  "tokens/s per user (100 tokens after the first in 5 s would be 50 ms, 20/s).",
               m->ttft, 1e3 * m->tpot, after, m->ttft + m->tpot * after, m->e2e, after,
               m->tpot * after, 1e3 * m->tpot, 1 / m->tpot);
        ls_keep(r, "ttft_ratio_prompt", b->ttft / a->ttft);
        ls_keep(r, "tpot_ratio_prompt", b->tpot / a->tpot);
        ls_keep(r, "e2e_ratio_reply", l->e2e / s->e2e);
        ls_keep(r, "ttft_ratio_reply", l->ttft / s->ttft);
        ls_keep(r, "e2e_identity_error_s", fabs(m->ttft + m->tpot * after - m->e2e));
        double *x = util_xcalloc((size_t)np, sizeof *x), *y1 = util_xcalloc((size_t)np, sizeof *y1),
               *y2 = util_xcalloc((size_t)np, sizeof *y2);
        for (int i = 0; i < np; i++) x[i] = p[i].prompt, y1[i] = p[i].ttft, y2[i] = 1e3 * p[i].tpot;
        ls_plot_init(r, "two-clocks: the prompt moves TTFT, not TPOT", "prompt tokens", true);
        ls_plot_series(r, ls_plot_panel(r, "TTFT (s)"), "mean ttft", x, y1, np);
        ls_plot_series(r, ls_plot_panel(r, "TPOT (ms)"), "mean tpot", x, y2, np);
        free(x);
        free(y1);
        free(y2);
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

int ls__chat_vs_summary(ls_context *c, ls_result *r, util_diag *d)
{
    const double lengths[2] = {ls_knob(c, "chat_tokens", 40), ls_knob(c, "summary_tokens", 800)};
    static const char *const sys[2] = {"A", "B"};
    cJSON *ov[4];
    ls_figures rep[4];
    for (int i = 0; i < 4; i++) ov[i] = system_overrides(c, sys[i / 2], lengths[i % 2]);
    int rc = ls_points(c, ov, 4, false, rep, d);
    double ttft[2] = {0}, tpot[2] = {0}, e2e[4] = {0};
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
        double reading = ls_knob(c, "reading_words_per_minute", 250) *
                         ls_knob(c, "tokens_per_word", 1.33) / 60; /* tokens/s */
        const char *chat_first = e2e[0] < e2e[2] ? "A" : "B";
        const char *sum_first = e2e[1] < e2e[3] ? "A" : "B";
        ls_say(r, "A starts in %.2f s and streams at %.0f ms a token; B starts in %.2f s and "
                  "streams at %.0f ms (x%.1f faster).",
               ttft[0], 1e3 * tpot[0], ttft[1], 1e3 * tpot[1], tpot[0] / tpot[1]);
        ls_say(r, "The %g-token chat reply is done first on %s (%.2f s against %.2f s); the "
                  "%g-token summary on %s (%.2f s against %.2f s). They cross at %.0f tokens: "
                  "shorter replies favour the quick start, longer ones the fast stream.",
               lengths[0], chat_first, fmin(e2e[0], e2e[2]), fmax(e2e[0], e2e[2]), lengths[1],
               sum_first, fmin(e2e[1], e2e[3]), fmax(e2e[1], e2e[3]), cross);
        ls_say(r, "A reader takes in about %.1f tokens/s (%g words a minute), so any TPOT under "
                  "%.0f ms streams faster than they read: A's %.0f ms and B's %.0f ms both do. A "
                  "chatbot should watch TTFT; a summary read when complete should watch "
                  "end-to-end latency.",
               reading, ls_knob(c, "reading_words_per_minute", 250), 1e3 / reading,
               1e3 * tpot[0], 1e3 * tpot[1]);
        ls_keep(r, "crossover_tokens", cross);
        ls_keep(r, "chat_e2e_a", e2e[0]);
        ls_keep(r, "chat_e2e_b", e2e[2]);
        ls_keep(r, "summary_e2e_a", e2e[1]);
        ls_keep(r, "summary_e2e_b", e2e[3]);
        ls_plot_init(r, "chat-vs-summary: who finishes first depends on how much is said",
                     "reply tokens", false);
        int panel = ls_plot_panel(r, "end-to-end latency (s)");
        double ya[2] = {e2e[0], e2e[1]}, yb[2] = {e2e[2], e2e[3]};
        ls_plot_series(r, panel, "system A", lengths, ya, 2);
        ls_plot_series(r, panel, "system B", lengths, yb, 2);
        ls_plot_guide(r, panel, "crossover", cross, true);
    }
    for (int i = 0; i < 4; i++) cJSON_Delete(ov[i]);
    return rc;
}
