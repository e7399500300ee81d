/*
 * compare.c: `servesim compare` -- two stored runs side by side, from their
 * databases alone: the scenario keys that differ, then each metric of the
 * report with its absolute and relative difference (analysis/compare.c).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

#include "an.h"
#include "val.h"

static const char compare_usage[] =
    "usage: servesim compare A.db B.db [--run-a ID] [--run-b ID] [--json] [--all]\n"
    "\n"
    "Puts two stored runs side by side: the scenario keys that differ first, then\n"
    "every metric of the report (classes included) with B - A and (B - A) / |A|.\n"
    "A and B may be the same file, with different runs. When one of the two is a\n"
    "measured run (servesim import), each metric and percentile the measurement has\n"
    "is printed measured against simulated, with the error in %, on the clock the\n"
    "measurement used (the client's, or vLLM's engine core's).\n"
    "\n"
    "  --run-a ID   the run of A.db (default: the newest)\n"
    "  --run-b ID   the run of B.db (default: the newest)\n"
    "  --all        list the metrics that are equal too (--json always lists all)\n"
    "  --json       print the comparison as JSON\n";

/* A side left at run 0 gets its file's newest run. */
static int parse_options(int argc, char **argv, an_run_ref *a, an_run_ref *b, bool *json, bool *all)
{
    const cli_opt opts[] = {
        {.name = "run-a", .kind = CLI_RUN, .dest = &a->run},
        {.name = "run-b", .kind = CLI_RUN, .dest = &b->run},
        {.name = "json", .kind = CLI_FLAG, .dest = json},
        {.name = "all", .kind = CLI_FLAG, .dest = all},
        {0},
    };
    cli_args pos;
    int code = cli_parse("compare", compare_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    if (pos.n != 2) return cli_usage_error("compare", "expected two files, A.db B.db");
    a->file = pos.v[0];
    b->file = pos.v[1];
    return CLI_CONTINUE;
}

/* Opens a side's file and picks its newest run unless one was asked for. */
static int open_side(an_run_ref *s, util_diag *d)
{
    int rc = an_open(s->file, &s->db, d);
    if (!rc && !s->run) rc = an_last_run(s->db, s->file, &s->run, d);
    return rc;
}

static int print_comparison(const cJSON *cmp, bool json, bool all, util_diag *d)
{
    if (!cmp) return fflush(stdout) ? util_diag_fail(d, "cannot write the comparison") : UTIL_OK;
    if (json) {
        char *text = cJSON_Print(cmp);
        printf("%s\n", text);
        free(text);
    } else {
        an_compare_print(cmp, all, stdout);
    }
    return fflush(stdout) ? util_diag_fail(d, "cannot write the comparison") : UTIL_OK;
}

int cli_compare(int argc, char **argv)
{
    an_run_ref a = {0}, b = {0};
    bool json = false, all = false;
    int code = parse_options(argc, argv, &a, &b, &json, &all);
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    cJSON *cmp = NULL;
    int rc = open_side(&a, &d);
    if (!rc) rc = open_side(&b, &d);
    bool ma = !rc && val_is_measured(a.db, a.run), mb = !rc && val_is_measured(b.db, b.run);
    if (!rc && (ma || mb)) {
        const an_run_ref *m = ma ? &a : &b, *s = ma ? &b : &a;
        rc = val_compare(m->db, m->file, m->run, s->db, s->file, s->run, &cmp, &d);
        if (!rc && !json) {
            val_compare_print(cmp, stdout);
            json = true, all = false; /* printed */
            cJSON_Delete(cmp);
            cmp = NULL;
        }
    } else if (!rc) {
        rc = an_compare(&a, &b, &cmp, &d);
    }
    if (!rc) rc = print_comparison(cmp, json, all, &d);
    code = cli_fail(&d, rc);
    cJSON_Delete(cmp);
    sqlite3_close(a.db);
    sqlite3_close(b.db);
    util_diag_fini(&d);
    return code;
}
