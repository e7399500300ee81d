/*
 * validate.c: `servesim validate` -- the simulator against real vLLM runs:
 * the options, where the data is, and the table.  The replays and both
 * sides' figures are validate/'s (val_replay); docs/validation.md discusses
 * the result.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

#include "val.h"

static const char validate_usage[] =
    "usage: servesim validate [--data DIR] [--json]\n"
    "\n"
    "Replays the measured vLLM runs of DIR and prints predicted against measured\n"
    "mean/p50/p90/p99 of TTFT, TPOT and E2E.  Without --data, DIR is the first of\n"
    "these that holds the runs:\n"
    "  ./data/" VAL_DATA "  (the repository's root)\n"
    "  " SERVESIM_DATADIR "/" VAL_DATA "  (installed)\n"
    "  " SERVESIM_SOURCE_DATADIR "/" VAL_DATA "  (the source tree built from)\n";

static const char *const metric_names[VAL_N_METRICS] = {"ttft_s", "tpot_s", "e2e_s"};
static const char *const metric_labels[VAL_N_METRICS] = {"TTFT", "TPOT", "E2E"};

static double err(double pred, double meas)
{
    return 100 * (pred - meas) / meas;
}

static const double *pick(const an_stats *s, int i)
{
    const double *v[] = {&s->mean, &s->p50, &s->p90, &s->p99};
    return v[i];
}

static const char *const stat_names[] = {"mean", "p50", "p90", "p99"};

static void print_text(const val_case *cases)
{
    printf("%-20s %-6s %-4s %12s %12s %8s\n", "case", "metric", "stat", "measured", "predicted",
           "error");
    for (int k = 0; k < VAL_N_CASES; k++)
        for (int m = 0; m < VAL_N_METRICS; m++)
            for (int i = 0; i < 4; i++) {
                double meas = *pick(&cases[k].measured[m], i), pred = *pick(&cases[k].predicted[m], i);
                printf("%-20s %-6s %-4s %10.4f s %10.4f s %+7.1f%%\n", cases[k].name,
                       metric_labels[m], stat_names[i], meas, pred, err(pred, meas));
            }
}

static void print_json(const val_case *cases)
{
    cJSON *all = cJSON_CreateArray();
    for (int k = 0; k < VAL_N_CASES; k++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "case", cases[k].name);
        for (int m = 0; m < VAL_N_METRICS; m++) {
            cJSON *o = cJSON_AddObjectToObject(c, metric_names[m]);
            for (int i = 0; i < 4; i++) {
                cJSON *s = cJSON_AddObjectToObject(o, stat_names[i]);
                double meas = *pick(&cases[k].measured[m], i), pred = *pick(&cases[k].predicted[m], i);
                cJSON_AddNumberToObject(s, "measured", meas);
                cJSON_AddNumberToObject(s, "predicted", pred);
                cJSON_AddNumberToObject(s, "error_pct", err(pred, meas));
            }
        }
        cJSON_AddItemToArray(all, c);
    }
    char *text = cJSON_Print(all);
    printf("%s\n", text);
    free(text);
    cJSON_Delete(all);
}

/* The default data folder: the current directory's data/ first, so that a
 * checkout run from its root reads its own copy, then the installed one, then
 * the source tree the binary was built from (a build tree run from elsewhere,
 * as the tests do).  CLI_CONTINUE, or CLI_EXIT_USAGE after naming the places
 * it looked. */
static int default_data(const char **data)
{
    static const char *const dirs[] = {
        "data/" VAL_DATA,
        SERVESIM_DATADIR "/" VAL_DATA,
        SERVESIM_SOURCE_DATADIR "/" VAL_DATA,
    };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (val_has_data(dirs[i])) {
            *data = dirs[i];
            return CLI_CONTINUE;
        }
    return cli_usage_error("validate", "no validation data in ./%s, %s or %s; name the folder "
                                       "with --data DIR", dirs[0], dirs[1], dirs[2]);
}

int cli_validate(int argc, char **argv)
{
    const char *data = NULL;
    bool json = false;
    const cli_opt opts[] = {
        {.name = "data", .kind = CLI_STRING, .dest = &data},
        {.name = "json", .kind = CLI_FLAG, .dest = &json},
        {0},
    };
    cli_args pos;
    util_clip_buf b;
    int code = cli_parse("validate", validate_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    if (pos.n) return cli_usage_error("validate", "unexpected argument '%s'", util_clip(pos.v[0], &b));
    if (!data && default_data(&data) != CLI_CONTINUE) return CLI_EXIT_USAGE;
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *cat = NULL;
    val_case cases[VAL_N_CASES];
    int rc = mdl_catalog_load_default(&cat, &d);
    if (!rc) rc = val_replay(data, cat, cases, &d);
    if (!rc) json ? print_json(cases) : print_text(cases);
    mdl_catalog_destroy(cat);
    code = cli_fail(&d, rc);
    util_diag_fini(&d);
    return code;
}
