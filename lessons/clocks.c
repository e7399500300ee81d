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

static void clock_row(ls_result *r, const char *phase, const clock_point *p)
{
    cJSON *row = ls_row(r);
    cJSON_AddStringToObject(row, "varied", phase);
    cJSON_AddNumberToObject(row, "prompt", p->prompt);
    cJSON_AddNumberToObject(row, "reply", p->reply);
    cJSON_AddNumberToObject(row, "ttft_ms", 1e3 * p->ttft);
    cJSON_AddNumberToObject(row, "tpot_ms", 1e3 * p->tpot);
    cJSON_AddNumberToObject(row, "e2e_s", p->e2e);
}

static void clock_columns(ls_result *r)
{
    ls_column_format(r, "varied", "varied", "", 0);
    ls_column_format(r, "prompt", "prompt", "tokens", 0);
    ls_column_format(r, "reply", "reply", "tokens", 0);
    ls_column_format(r, "ttft_ms", "TTFT", "ms", 1);
    ls_column_format(r, "tpot_ms", "TPOT", "ms", 2);
    ls_column_format(r, "e2e_s", "e2e", "s", 3);
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
    if (!rc) clock_columns(r);
    for (int i = 0; !rc && i < n; i++) {
        p[i].ttft = rep[i].ttft_mean;
        p[i].tpot = rep[i].tpot_mean;
        p[i].e2e = rep[i].e2e_mean;
        clock_row(r, i < np ? "prompt" : "reply", &p[i]);
    }
    if (!rc) {
        clock_findings(r, p, np, n);
        clock_figure(c, r, p, np, n);
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
