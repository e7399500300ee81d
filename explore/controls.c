/*
 * controls.c: the sliders and buttons of each lesson's panel -- those of
 * the article the lessons come from: drag the prompt to 32k, then the
 * reply; users from 1 to 64 to 256; utilisation down to 10%; slow requests
 * to 2%, then 5%; 1, 10 or 100 calls.  Each is one --set of the lesson,
 * over values from its shipped file (examples/lessons/NAME.json): a sweep
 * is cut to the chosen value, so a request is never larger than the lesson
 * as shipped, and the page and `servesim lesson NAME --set ...` agree.
 */
#include "ex_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The shipped grids (tests/test_explore.c checks them against the files). */
static const double prompts[] = {128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
static const double replies[] = {10, 20, 50, 100, 200, 500, 1000};
static const double chat_tokens[] = {10, 20, 40, 80, 160};
static const double summary_tokens[] = {200, 400, 800, 1600};
static const double users[] = {1, 2, 4, 8, 16, 24, 32, 48, 64, 80, 96, 128, 192, 256};
static const double loads[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0};
static const double slow_fractions[] = {0,    0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.02,
                                        0.03, 0.04,   0.05,  0.055,  0.06, 0.07,   0.08,  0.1};
static const double slow_probability[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05};
static const double calls[] = {1, 2, 5, 10, 20, 50, 100};
static const double rates[] = {2, 4, 6, 8, 10, 12, 14};

static const ex_control two_clocks[] = {
    {"prompt", "longest prompt", "tokens", false, "lesson.prompt_tokens", EX_PREFIX, prompts,
     N(prompts), 1, N(prompts) - 1, 32768, 1, NULL},
    {"reply", "longest reply", "tokens", false, "lesson.reply_tokens", EX_PREFIX, replies,
     N(replies), 1, N(replies) - 1, 1000, 1, NULL},
};
static const ex_control chat_vs_summary[] = {
    {"chat", "chat reply", "tokens", false, "lesson.chat_tokens", EX_VALUE, chat_tokens,
     N(chat_tokens), 0, N(chat_tokens) - 1, 40, 1, NULL},
    {"summary", "summary", "tokens", false, "lesson.summary_tokens", EX_VALUE, summary_tokens,
     N(summary_tokens), 0, N(summary_tokens) - 1, 800, 1, NULL},
};
static const ex_control batching[] = {
    {"users", "most users", "users", false, "lesson.users", EX_PREFIX, users, N(users), 2,
     N(users) - 1, 256, 1, NULL},
};
static const double whole_server[] = {0, 1};
static const char *const energy_of[] = {"the GPUs", "the whole server"};
static const ex_control utilisation[] = {
    {"load", "lowest utilisation", "%", false, "lesson.loads", EX_SUFFIX, loads, N(loads), 0,
     N(loads) - 2, 0.1, 100, NULL},
    /* "then switch to the whole server": hosts and cooling counted in */
    {"whole", "energy counted for", "", true, "lesson.whole_server", EX_VALUE, whole_server,
     N(whole_server), 0, 1, 0, 1, energy_of},
};
static const ex_control tail[] = {
    {"slow", "most slow requests", "%", false, "lesson.slow_fractions", EX_PREFIX, slow_fractions,
     N(slow_fractions), 1, N(slow_fractions) - 1, 0.1, 100, NULL},
};
static const ex_control fan_out[] = {
    {"p", "chance a call is slow", "%", false, "lesson.slow_probability", EX_VALUE,
     slow_probability, N(slow_probability), 0, N(slow_probability) - 1, 0.01, 100, NULL},
    {"calls", "most calls per task", "calls", true, "lesson.calls", EX_PREFIX, calls, N(calls), 1,
     N(calls) - 1, 100, 1, NULL},
};
static const ex_control definitions[] = {
    {"rate", "arrival rate", "req/s", false, "workload.arrival.rate_per_s", EX_VALUE, rates,
     N(rates), 0, N(rates) - 1, 10, 1, NULL},
};

/* fan-out's full size takes about a second: live, it runs its --quick one
 * with 5,000 calls a point (its 95% intervals about 1.4 times as wide),
 * under 300 ms on two cores where 10,000 took 350 */
const ex_lesson ex_lessons[] = {
    {"two-clocks", false, NULL, two_clocks, N(two_clocks)},
    {"chat-vs-summary", false, NULL, chat_vs_summary, N(chat_vs_summary)},
    {"batching", false, NULL, batching, N(batching)},
    {"utilisation", false, NULL, utilisation, N(utilisation)},
    {"tail", false, NULL, tail, N(tail)},
    {"fan-out", true, "lesson.quick_calls_per_point=5000", fan_out, N(fan_out)},
    {"definitions", false, NULL, definitions, N(definitions)},
    {NULL, false, NULL, NULL, 0},
};

const ex_lesson *ex_lesson_find(const char *id)
{
    for (const ex_lesson *l = ex_lessons; l->id; l++)
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
