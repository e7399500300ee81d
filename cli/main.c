/*
 * main.c: the command table -- dispatch, "did you mean" and the usage's list
 * of commands all come from it -- --help and --version.
 */
#include "cli.h"
#include "pl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef SERVESIM_VERSION
#define SERVESIM_VERSION "unknown"
#endif

/* The commands, in the order the usage lists them: dispatch, "did you
 * mean" and the usage's list all come from this table.  A help line's "\n"
 * continues it under the first. */
static const struct command {
    const char *name, *args, *help;
    int (*fn)(int, char **);
} commands[] = {
    {"run", "SCENARIO.json", "simulate a scenario, record every request, print the report",
     cli_run},
    {"report", "FILE.db", "print the report of a stored run (what-if SLOs, breakdowns)",
     cli_report},
    {"slo-curve", "FILE.db", "SLO attainment as a function of the threshold", cli_slo_curve},
    {"timeline", "FILE.db", "a stored run as a time series, per interval", cli_timeline},
    {"sweep", "SCENARIO.json", "run a grid of overrides in parallel, one run per point",
     cli_sweep},
    {"lesson", "[NAME]", "the effects behind \"performance is not one number\", run live",
     cli_lesson},
    {"plan", "SCENARIO.json",
     "the highest rate, fewest replicas or cheapest configuration\nmeeting latency targets",
     cli_plan},
    {"compare", "A.db B.db", "two stored runs side by side: scenario keys, then metrics",
     cli_compare},
    {"plot", "FILE.db KIND", "a figure of stored runs: SVG, PNG or text (--terminal)",
     cli_plot},
    {"explore", "[FILE.db]", "the lessons as live demos in a browser, and what-ifs of a run",
     cli_explore},
    {"catalog", "[gpus|models|engines]",
     "list the GPUs, models and engine presets servesim knows", cli_catalog},
    {"keys", "", "list every scenario key with its unit, default and range", cli_keys},
    {"validate", "", "replay measured vLLM runs and compare (data/validation)", cli_validate},
    {"import", "FILE... -o FILE.db", "store a benchmark tool's measured runs (vLLM, GenAI-Perf, ...)",
     cli_import},
    {"replay", "MEASURED -o FILE.db", "simulate a measured run as it was run and compare",
     cli_replay},
    {"export", "FILE.db", "write a stored run as vLLM's bench or GenAI-Perf writes results",
     cli_export},
    {"calibrate", "MEASURED... -o P.json",
     "fit a GPU's and an engine's coefficients to measured runs,\nwith the held-out error",
     cli_calibrate},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0], HELP_COLUMN = 24 };

static void print_usage(FILE *out)
{
    fputs("usage: servesim COMMAND [OPTIONS]\n"
          "\n"
          "A discrete-event simulator of an LLM serving cluster.\n"
          "\n"
          "commands:\n",
          out);
    for (int i = 0; i < N_COMMANDS; i++) {
        const struct command *c = &commands[i];
        int width = fprintf(out, "  %s%s%s", c->name, *c->args ? " " : "", c->args);
        fprintf(out, "%*s", HELP_COLUMN - width, "");
        for (const char *h = c->help; *h; h++) {
            fputc(*h, out);
            if (*h == '\n') fprintf(out, "%*s", HELP_COLUMN, "");
        }
        fputc('\n', out);
    }
    fputs("\n"
          "servesim COMMAND --help describes a command; servesim --version prints the version.\n"
          "Exit status: 0 success, 2 bad usage or input, 1 other failure, 128 + N stopped by\n"
          "signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).\n",
          out);
}

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

static int unknown_command(const char *cmd)
{
    const char *names[N_COMMANDS + 1];
    for (int i = 0; i < N_COMMANDS; i++) names[i] = commands[i].name;
    names[N_COMMANDS] = NULL;
    const char *near = util_closest(cmd, names);
    util_clip_buf b;
    fprintf(stderr, "servesim: unknown command '%s'", util_clip(cmd, &b));
    if (near) fprintf(stderr, " (did you mean '%s'?)", near);
    fprintf(stderr, "\n\n");
    print_usage(stderr);
    return CLI_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("servesim %s%s\n", SERVESIM_VERSION, pl_mpi_built() ? " (MPI)" : "");
        return CLI_EXIT_OK;
    }
    /* under mpirun or srun, sweeps and plans spread over the ranks: rank 0
     * writes and prints, the others only simulate (plan/mpi.c) */
    if ((!strcmp(cmd, "sweep") || !strcmp(cmd, "plan")) && pl_mpi_start(&argc, &argv) &&
        pl_mpi_rank() != 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
            return CLI_EXIT_FAIL;
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(cmd, commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    return unknown_command(cmd);
}
