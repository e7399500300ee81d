/*
 * lessons.c: the lessons, in the order a course would take them.  Each
 * file in examples/lessons/ is compiled in (lessons/meson.build), so
 * `servesim lesson` works from any folder.
 */
#include "ls_int.h"

extern const char ls__file_two_clocks[], ls__file_chat_vs_summary[], ls__file_batching[],
    ls__file_speculation[], ls__file_utilisation[], ls__file_tail[], ls__file_priorities[],
    ls__file_memory[], ls__file_day[], ls__file_fan_out[], ls__file_definitions[];

const ls_lesson ls_lessons[] = {
    {"two-clocks", "a request has two phases, each with its own clock (TTFT and TPOT)",
     ls__file_two_clocks, ls__two_clocks},
    {"chat-vs-summary", "which system is faster depends on how much it says",
     ls__file_chat_vs_summary, ls__chat_vs_summary},
    {"batching", "more users make the system faster and every user slower", ls__file_batching,
     ls__batching},
    {"speculation", "speculative decoding speeds every user up at light load, slows them at heavy",
     ls__file_speculation, ls__speculation},
    {"utilisation", "cost and energy per token are mostly a utilisation problem",
     ls__file_utilisation, ls__utilisation},
    {"tail", "the average hides the requests people remember", ls__file_tail, ls__tail},
    {"priorities", "priority holds the interactive tail; the batch tier absorbs the queue",
     ls__file_priorities, ls__priorities},
    {"memory", "past HBM the hit rate falls and TTFT climbs; a CPU tier pulls it back",
     ls__file_memory, ls__memory},
    {"day", "a low autoscaler target buys the tail with cost; a high one pays in start-up lag",
     ls__file_day, ls__day},
    {"fan-out", "an agent is a fan-out system: 1 - (1 - p)^n", ls__file_fan_out, ls__fan_out},
    {"definitions", "two tools, two TPOTs: one run under every tool's definition",
     ls__file_definitions, ls__definitions},
    {0},
};
