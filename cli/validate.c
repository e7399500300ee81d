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
    "mean/p50/p90/p99 of TTFT, TPOT and E2E, on the clock each run was measured\n"
    "with, and the error as the engine preset's terms are added: the GPU's steps\n"
    "alone, the host's time per step, the asynchronous scheduler's pipeline.\n"
    "Without --data, DIR is the first of these that holds the runs:\n"
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

/* One row per case, metric and statistic: the measured figure, the
 * model's prediction and its error, then, after the bar, the error with
 * each term of the engine preset added in turn (the last is the model's). */
static void print_text(const val_case *cases)
{
    printf("%-20s %-6s %-6s %-4s %12s %12s %8s | %10s %10s %10s\n", "case", "clock", "metric",
           "stat", "measured", "predicted", "error", "gpu", "+ host", "+ pipeline");
    for (int k = 0; k < VAL_N_CASES; k++)
        for (int m = 0; m < VAL_N_METRICS; m++)
            for (int i = 0; i < 4; i++) {
                const val_case *c = &cases[k];
                double meas = *pick(&c->measured[m], i);
                double pred = *pick(&c->predicted[VAL_PIPELINE][m], i);
                printf("%-20s %-6s %-6s %-4s %10.4f s %10.4f s %+7.1f%% |", c->name, c->clock,
                       metric_labels[m], stat_names[i], meas, pred, err(pred, meas));
                for (int t = 0; t < VAL_N_TERMS; t++)
                    printf(" %+9.1f%%", err(*pick(&c->predicted[t][m], i), meas));
                printf("\n");
            }
}

/* {"mean": {"measured", "predicted", "error_pct"}, ...} of one metric. */
static cJSON *metric_json(const an_stats *measured, const an_stats *predicted)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < 4; i++) {
        cJSON *s = cJSON_AddObjectToObject(o, stat_names[i]);
        double meas = *pick(measured, i), pred = *pick(predicted, i);
        cJSON_AddNumberToObject(s, "measured", meas);
        cJSON_AddNumberToObject(s, "predicted", pred);
        cJSON_AddNumberToObject(s, "error_pct", err(pred, meas));
    }
    return o;
}

static void print_json(const val_case *cases)
{
    cJSON *all = cJSON_CreateArray();
    for (int k = 0; k < VAL_N_CASES; k++) {
        const val_case *vc = &cases[k];
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "case", vc->name);
        cJSON_AddStringToObject(c, "clock", vc->clock);
        for (int m = 0; m < VAL_N_METRICS; m++)
            cJSON_AddItemToObject(c, metric_names[m],
                                  metric_json(&vc->measured[m], &vc->predicted[VAL_PIPELINE][m]));
        cJSON *terms = cJSON_AddObjectToObject(c, "terms");
        for (int t = 0; t < VAL_N_TERMS; t++) {
            cJSON *o = cJSON_AddObjectToObject(terms, val_term_names[t]);
            for (int m = 0; m < VAL_N_METRICS; m++)
                cJSON_AddItemToObject(o, metric_names[m],
                                      metric_json(&vc->measured[m], &vc->predicted[t][m]));
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
