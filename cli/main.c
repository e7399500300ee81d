/*
 * main.c: command dispatch, --help and --version.
 */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef SERVESIM_VERSION
#define SERVESIM_VERSION "unknown"
#endif

static const char usage[] =
    "usage: servesim COMMAND [OPTIONS]\n"
    "\n"
    "A discrete-event simulator of an LLM serving cluster.\n"
    "\n"
    "commands:\n"
    "  run SCENARIO.json     simulate a scenario, record every request, print the report\n"
    "  report FILE.db        print the report of a stored run (what-if SLOs, breakdowns)\n"
    "  slo-curve FILE.db     SLO attainment as a function of the threshold\n"
    "  timeline FILE.db      a stored run as a time series, per interval\n"
    "  sweep SCENARIO.json   run a grid of overrides in parallel, one run per point\n"
    "  lesson [NAME]         the effects behind \"performance is not one number\", run live\n"
    "  plan SCENARIO.json    the highest rate, fewest replicas or cheapest configuration\n"
    "                        meeting latency targets\n"
    "  compare A.db B.db     two stored runs side by side: scenario keys, then metrics\n"
    "  plot FILE.db KIND     a figure of stored runs: SVG (-o FILE.svg) or text (--terminal)\n"
    "  catalog [gpus|models] list the GPUs and models servesim knows\n"
    "  keys                  list every scenario key with its unit, default and range\n"
    "  validate              replay measured vLLM runs and compare (data/validation)\n"
    "\n"
    "servesim COMMAND --help describes a command; servesim --version prints the version.\n"
    "Exit status: 0 success, 2 bad usage or input, 1 other failure, 128 + N stopped by\n"
    "signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).\n";

int cli_fail(const util_diag *d, int status)
{
    util_diag_print(d, stderr, "servesim");
    switch (status) {
    case UTIL_OK: return CLI_EXIT_OK;
    case UTIL_EINPUT: return CLI_EXIT_USAGE;
    case UTIL_EINTR: return CLI_EXIT_INTERRUPTED;
    default: return CLI_EXIT_FAIL;
    }
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "servesim %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(servesim %s --help for usage)\n", cmd);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("servesim %s\n", SERVESIM_VERSION);
        return CLI_EXIT_OK;
    }
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } commands[] = {
        {"run", cli_run},   {"report", cli_report},     {"catalog", cli_catalog},
        {"keys", cli_keys}, {"validate", cli_validate}, {"slo-curve", cli_slo_curve},
        {"timeline", cli_timeline},
        {"sweep", cli_sweep},       {"plan", cli_plan}, {"compare", cli_compare},
        {"plot", cli_plot}, {"lesson", cli_lesson},
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    const char *names[] = {"run",      "report",    "catalog",  "keys",    "validate",
                           "slo-curve", "timeline", "compare", "sweep",   "plan",
                           "plot",     "lesson",    NULL};
    const char *near = util_closest(cmd, names);
    fprintf(stderr, "servesim: unknown command '%s'", cmd);
    if (near) fprintf(stderr, " (did you mean '%s'?)", near);
    fprintf(stderr, "\n\n%s", usage);
    return CLI_EXIT_USAGE;
}
