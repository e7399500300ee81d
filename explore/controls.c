/*
 * controls.c: the sliders and buttons of each lesson's panel -- those of
 * the article the lessons come from: drag the prompt to 32k, then the
 * reply; users from 4 to 64 to 256; speculation's users, then its drafter's
 * accepted length; utilisation down to 10%; slow requests
 * to 2%, then 5%; batch traffic up to 90%, then the rate and the gateway's
 * depth; sessions in flight up to 384, then the CPU tier; the autoscaler's
 * target, then a node's provisioning; 1, 10 or 100 calls.  Each is one --set of the lesson.
 * Declared here is what is the explorer's own: which controls a panel has,
 * their labels and units, the path each sets and how, and the choices of a
 * control over a single value.  The numbers that are the lesson's -- a
 * sweep's grid, a value's default -- are read from its shipped file
 * (examples/lessons/NAME.json, compiled into lessons/) when the server
 * starts, so that they have one copy: a sweep is cut to the chosen value,
 * a request is never larger than the lesson as shipped, and the page and
 * `servesim lesson NAME --set ...` agree.
 */
#include "ex_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* What the explorer declares of a control; ex_control adds the file's numbers. */
typedef struct control_decl {
    const char *name, *label, *unit;
    bool choice;
    const char *path;
    ex_set_kind set;
    int fewest;           /* a sweep: the fewest points a cut leaves, as its lesson requires */
    const double *values; /* a value: the choices offered, the file's value among them */
    int n_values;
    double shown;             /* a label's factor: 100 shows a fraction as a percentage */
    const char *const *names; /* a choice's button texts, value by value (EX_VALUE only) */
} control_decl;

typedef struct lesson_decl {
    const char *id;
    bool quick;
    const char *fixed;
    const control_decl *controls;
    int n_controls;
} lesson_decl;

/* Each: name, label, unit, buttons (not a slider), the --set path, how it
 * sets; a sweep's shortest cut, the fewest points its lesson runs with
 * (each says "give at least ..." otherwise: two, three for batching); a
 * value's choices, the article's, around the value the file ships; a
 * label's factor; a choice's button texts. */
static const control_decl two_clocks[] = {
    {"prompt", "longest prompt", "tokens", false, "lesson.prompt_tokens", EX_PREFIX, 2, NULL, 0, 1,
     NULL},
    {"reply", "longest reply", "tokens", false, "lesson.reply_tokens", EX_PREFIX, 2, NULL, 0, 1,
     NULL},
};
static const double chat_tokens[] = {10, 20, 40, 80, 160};
static const double summary_tokens[] = {200, 400, 800, 1600};
static const control_decl chat_vs_summary[] = {
    {"chat", "chat reply", "tokens", false, "lesson.chat_tokens", EX_VALUE, 0, chat_tokens,
     N(chat_tokens), 1, NULL},
    {"summary", "summary", "tokens", false, "lesson.summary_tokens", EX_VALUE, 0, summary_tokens,
     N(summary_tokens), 1, NULL},
};
static const control_decl batching[] = {
    {"users", "most users", "users", false, "lesson.users", EX_PREFIX, 3, NULL, 0, 1, NULL},
};
/* the shipped 2.39 is vLLM issue #20780's EAGLE at K = 4; a better drafter moves the crossover
 * to more users, 4 (every draft kept) past the sweep */
static const double accepted_length[] = {1.5, 2, 2.39, 3, 3.5, 4};
static const control_decl speculation[] = {
    {"users", "most users", "users", false, "lesson.users", EX_PREFIX, 2, NULL, 0, 1, NULL},
    {"accepted", "accepted length", "tokens", false, "cluster.speculative.acceptance_length",
     EX_VALUE, 0, accepted_length, N(accepted_length), 1, NULL},
};
static const double whole_server[] = {0, 1};
static const char *const energy_of[] = {"the GPUs", "the whole server"};
static const control_decl utilisation[] = {
    {"load", "lowest utilisation", "%", false, "lesson.loads", EX_SUFFIX, 2, NULL, 0, 100, NULL},
    /* "then switch to the whole server": hosts and cooling counted in */
    {"whole", "energy counted for", "", true, "lesson.whole_server", EX_VALUE, 0, whole_server,
     N(whole_server), 1, energy_of},
};
static const control_decl tail[] = {
    {"slow", "most slow requests", "%", false, "lesson.slow_fractions", EX_PREFIX, 2, NULL, 0, 100,
     NULL},
};
/* the shipped 20 req/s overloads the H100 from a 30% batch share; a lighter
 * rate moves that share up (8: 80%), 4 keeps up at every share.  The
 * gateway saturates at 300 waiting requests as shipped; GIE's default, 5,
 * sheds from the lightest share and holds the interactive requests too */
static const double priority_rates[] = {4, 8, 12, 16, 20, 24};
static const double gateway_depths[] = {5, 20, 100, 300, 1000};
static const control_decl priorities[] = {
    {"batch", "most batch traffic", "%", false, "lesson.batch_shares", EX_PREFIX, 2, NULL, 0, 100,
     NULL},
    {"rate", "arrival rate", "req/s", false, "workload.arrival.rate_per_s", EX_VALUE, 0,
     priority_rates, N(priority_rates), 1, NULL},
    {"gateway", "gateway saturates at", "waiting", false, "cluster.gateway.queue_depth_threshold",
     EX_VALUE, 0, gateway_depths, N(gateway_depths), 1, NULL},
};
/* the CPU tier per replica: 0 is none, the GPU alone; the shipped 64 GiB
 * holds the working set up to 256 sessions, and 256 GiB holds it all */
static const double cpu_gib[] = {0, 16, 32, 64, 128, 256};
static const control_decl memory[] = {
    {"sessions", "most sessions in flight", "sessions", false, "lesson.sessions_in_flight",
     EX_PREFIX, 2, NULL, 0, 1, NULL},
    {"cpu", "CPU tier", "GiB", false, "cluster.kv_offload.cpu_gib", EX_VALUE, 0, cpu_gib,
     N(cpu_gib), 1, NULL},
};
/* a new replica's node: 0 is a free node, the shipped 60 s a cloud VM's,
 * 600 s a GPU node scarce enough to wait for */
static const double provision_s[] = {0, 30, 60, 120, 300, 600};
static const control_decl day[] = {
    {"target", "highest autoscaler target", "running", false, "lesson.target", EX_PREFIX, 2, NULL,
     0, 1, NULL},
    {"provision", "node provisioning", "s", false, "cluster.lifecycle.provision_s", EX_VALUE, 0,
     provision_s, N(provision_s), 1, NULL},
};
static const double slow_probability[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05};
static const control_decl fan_out[] = {
    {"p", "chance a call is slow", "%", false, "lesson.slow_probability", EX_VALUE, 0,
     slow_probability, N(slow_probability), 100, NULL},
    {"calls", "most calls per task", "calls", true, "lesson.calls", EX_PREFIX, 2, NULL, 0, 1, NULL},
};
static const double rates[] = {2, 4, 6, 8, 10, 12, 14};
static const control_decl definitions[] = {
    {"rate", "arrival rate", "req/s", false, "workload.arrival.rate_per_s", EX_VALUE, 0, rates,
     N(rates), 1, NULL},
};

/* fan-out's full size takes about a second: live, it runs its --quick one
 * with 5,000 calls a point (its 95% intervals about 1.4 times as wide),
 * under 300 ms on two cores where 10,000 took 350.  utilisation's full
 * size (600 s of arrivals a load, so that the drain after the last is a
 * small part of the window) takes 640 ms; its --quick one (120 s), 160 ms,
 * its sentence saying how much of "of full" the drain then takes.  day's
 * full size (six compressed days and their peaks' static fleets) takes
 * seconds; its --quick one runs each day eight times faster again
 * (lessons/day.c quicken), under 300 ms (docs/explore.md) */
static const lesson_decl lessons[] = {
    {"two-clocks", false, NULL, two_clocks, N(two_clocks)},
    {"chat-vs-summary", false, NULL, chat_vs_summary, N(chat_vs_summary)},
    {"batching", false, NULL, batching, N(batching)},
    {"speculation", false, NULL, speculation, N(speculation)},
    {"utilisation", true, NULL, utilisation, N(utilisation)},
    {"tail", false, NULL, tail, N(tail)},
    {"priorities", false, NULL, priorities, N(priorities)},
    {"memory", false, NULL, memory, N(memory)},
    {"day", true, NULL, day, N(day)},
    {"fan-out", true, "lesson.quick_calls_per_point=5000", fan_out, N(fan_out)},
    {"definitions", false, NULL, definitions, N(definitions)},
};

/* ---- each control's numbers from its lesson's file ---- */

/* A sweep: the file's numbers at the path, rising (a cut keeps those up to
 * or from a value) and no fewer than the shortest cut.  Its default is the
 * whole sweep, the lesson as shipped. */
static int derive_sweep(const control_decl *k, const cJSON *at, const char *id, ex_control *c,
                        util_diag *d)
{
    assert(k->fewest >= 1); /* a cut keeps a point at least */
    int n = cJSON_GetArraySize(at);
    if (!cJSON_IsArray(at) || n < k->fewest)
        return util_diag_fail(d,
                              "lesson %s, control %s: %s is not a sweep of %d values or more in "
                              "the lesson's file",
                              id, k->name, k->path, k->fewest);
    c->grid = util_xcalloc((size_t)n, sizeof *c->grid);
    const cJSON *v;
    cJSON_ArrayForEach(v, at)
    {
        if (!cJSON_IsNumber(v) || (c->n_grid && v->valuedouble <= c->grid[c->n_grid - 1]))
            return util_diag_fail(d,
                                  "lesson %s, control %s: %s is not of rising numbers in the "
                                  "lesson's file",
                                  id, k->name, k->path);
        c->grid[c->n_grid++] = v->valuedouble;
    }
    bool prefix = k->set == EX_PREFIX;
    c->first = prefix ? k->fewest - 1 : 0;
    c->last = prefix ? n - 1 : n - k->fewest;
    c->dflt = prefix ? c->grid[n - 1] : c->grid[0];
    return UTIL_OK;
}

/* A value: the explorer's choices, starting at the file's value -- which
 * must be one of them, or the page would start off its own control. */
static int derive_value(const control_decl *k, const cJSON *at, const char *id, ex_control *c,
                        util_diag *d)
{
    if (!cJSON_IsNumber(at))
        return util_diag_fail(d, "lesson %s, control %s: %s is not a number in the lesson's file",
                              id, k->name, k->path);
    c->grid = util_xcalloc((size_t)k->n_values, sizeof *c->grid);
    memcpy(c->grid, k->values, (size_t)k->n_values * sizeof *c->grid);
    c->n_grid = k->n_values;
    c->last = k->n_values - 1;
    c->dflt = at->valuedouble;
    if (!ex_control_allows(c, c->dflt))
        return util_diag_fail(d,
                              "lesson %s, control %s: %s is %g in the lesson's file, not one of "
                              "the control's values",
                              id, k->name, k->path, c->dflt);
    return UTIL_OK;
}

static int derive_control(const control_decl *k, const cJSON *file, const char *id, ex_control *c,
                          util_diag *d)
{
    assert(!k->names || k->set == EX_VALUE); /* names go with the explorer's own values */
    *c = (ex_control){.name = k->name,
                      .label = k->label,
                      .unit = k->unit,
                      .choice = k->choice,
                      .path = k->path,
                      .set = k->set,
                      .shown = k->shown,
                      .names = k->names};
    const cJSON *at = util_json_get(file, k->path);
    if (!at)
        return util_diag_fail(d, "lesson %s, control %s: %s is not in the lesson's file", id,
                              k->name, k->path);
    return k->set == EX_VALUE ? derive_value(k, at, id, c, d) : derive_sweep(k, at, id, c, d);
}

/* Every control is tried, so that one start names every declaration the
 * files do not fit. */
static int derive_lesson(const lesson_decl *k, ex_lesson *l, util_diag *d)
{
    *l = (ex_lesson){.id = k->id,
                     .ls = ls_find(k->id),
                     .quick = k->quick,
                     .fixed = k->fixed,
                     .controls = util_xcalloc((size_t)k->n_controls, sizeof *l->controls),
                     .n_controls = k->n_controls};
    if (!l->ls) return util_diag_fail(d, "lesson %s: the lessons have none of that name", k->id);
    cJSON *file = cJSON_Parse(l->ls->file);
    int rc = file ? UTIL_OK : util_diag_fail(d, "lesson %s: its file is not JSON", k->id);
    for (int i = 0; file && i < k->n_controls; i++)
        if (derive_control(&k->controls[i], file, k->id, &l->controls[i], d)) rc = UTIL_EFAIL;
    cJSON_Delete(file);
    return rc;
}

int ex_lessons_load(ex_lesson **out, util_diag *d)
{
    ex_lesson *all = util_xcalloc((size_t)N(lessons) + 1, sizeof *all);
    int rc = UTIL_OK;
    for (int i = 0; i < N(lessons); i++)
        if (derive_lesson(&lessons[i], &all[i], d)) rc = UTIL_EFAIL;
    if (rc) {
        ex_lessons_free(all);
        all = NULL;
    }
    *out = all;
    return rc;
}

void ex_lessons_free(ex_lesson *all)
{
    if (!all) return;
    for (ex_lesson *l = all; l->id; l++) {
        for (int i = 0; i < l->n_controls; i++)
            free(l->controls[i].grid);
        free(l->controls);
    }
    free(all);
}

/* ---- a request's values ---- */

const ex_lesson *ex_lesson_find(const ex_lesson *all, const char *id)
{
    for (const ex_lesson *l = all; l->id; l++)
        if (!strcmp(l->id, id)) return l;
    return NULL;
}

bool ex_control_allows(const ex_control *c, double value)
{
    for (int i = c->first; i <= c->last; i++)
        if (c->grid[i] == value) return true;
    return false;
}

char *ex_control_set(const ex_control *c, double value)
{
    if (c->set == EX_VALUE) return util_xasprintf("%s=%.17g", c->path, value);
    char *list = util_xstrdup("");
    for (int i = 0; i < c->n_grid; i++) {
        bool in = c->set == EX_PREFIX ? c->grid[i] <= value : c->grid[i] >= value;
        if (!in) continue;
        char *t = util_xasprintf("%s%s%.17g", list, *list ? "," : "", c->grid[i]);
        free(list);
        list = t;
    }
    char *set = util_xasprintf("%s=[%s]", c->path, list);
    free(list);
    return set;
}
