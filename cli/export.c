/*
 * export.c: `servesim export` -- a stored run written in a benchmark tool's
 * result format (validate/export.c writes it), so that a simulated run can
 * be compared with a measured one by the tool's own scripts.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

#include "mdl.h"
#include "val.h"

static const char export_usage[] =
    "usage: servesim export FILE.db [--run ID] --format vllm-bench|genai-perf -o OUT\n"
    "\n"
    "Writes a stored run (default: the newest) as a benchmark tool writes its\n"
    "result: the requests sent after warm-up, each with its TTFT, end-to-end\n"
    "latency and lengths, and the report's summaries in the tool's units.\n"
    "  vllm-bench   the JSON of `vllm bench serve --save-result --save-detailed`\n"
    "  genai-perf   GenAI-Perf's profile_export.json (perf_analyzer's export)\n"
    "A run stores each request's first and last token, not every token's time:\n"
    "the gaps between tokens are its TPOT repeated (docs/import-formats.md).\n"
    "OUT appears whole or not at all; `servesim import OUT` reads it back.\n"
    "\n"
    "  --run ID          which run (servesim numbers runs 1, 2, ... in each database)\n"
    "  --format F        vllm-bench or genai-perf\n"
    "  -o OUT            the file to write\n";

typedef struct opts {
    const char *format, *output;
    int64_t run;
    cli_args pos;
} opts;

static int parse(int argc, char **argv, opts *o)
{
    const cli_opt table[] = {
        {.name = "run", .kind = CLI_RUN, .dest = &o->run},
        {.name = "format", .kind = CLI_STRING, .dest = &o->format},
        {.name = "output", .short_name = 'o', .kind = CLI_STRING, .dest = &o->output},
        {0},
    };
    int code = cli_parse("export", export_usage, table, argc, argv, &o->pos);
    if (code != CLI_CONTINUE) return code;
    if (o->pos.n != 1) return cli_usage_error("export", "expected one FILE.db");
    if (!o->format)
        return cli_usage_error("export", "give the format: --format vllm-bench|genai-perf");
    if (!o->output) return cli_usage_error("export", "give the file to write: -o OUT");
    return CLI_CONTINUE;
}

int cli_export(int argc, char **argv)
{
    opts o = {0};
    int code = parse(argc, argv, &o);
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    sqlite3 *db = NULL;
    mdl_catalog *cat = NULL;
    int64_t run = o.run;
    int rc = cli_open_run(o.pos.v[0], &db, &run, &d);
    if (!rc) rc = mdl_catalog_load_default(&cat, &d);
    if (!rc) rc = val_export(db, o.pos.v[0], run, o.format, cat, o.output, &d);
    if (!rc)
        printf("wrote run %lld of %s as %s to %s\n", (long long)run, o.pos.v[0], o.format,
               o.output);
    code = cli_fail(&d, rc);
    mdl_catalog_destroy(cat);
    sqlite3_close(db);
    util_diag_fini(&d);
    return code;
}
