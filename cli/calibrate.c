/*
 * calibrate.c: `servesim calibrate` -- a GPU's and an engine's physical
 * coefficients fitted to the user's measured runs, with the error on runs
 * the fit did not see, written as the profile a scenario names with
 * `cluster.calibration`.  The fit is validate/'s (val_calibrate);
 * docs/calibration.md walks through it.
 */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "val.h"

static const char calibrate_usage[] =
    "usage: servesim calibrate MEASURED... -o PROFILE.json [--fit NAME,...] [--folds K]\n"
    "                          [--scenario S.json] [--set PATH=VALUE]... [--unset PATH]...\n"
    "                          [--json]\n"
    "\n"
    "Fits physical coefficients of one GPU and one engine to measured runs by nonlinear\n"
    "least squares on the relative errors of the metrics they give, each coefficient\n"
    "within its physical range, and prints the fitted values with their uncertainty,\n"
    "the training error per metric and the k-fold cross-validated error (each run\n"
    "predicted by a profile fitted without it). MEASURED is a database of measured\n"
    "runs (servesim import; every measured run in it) or any file import reads.\n"
    "\n"
    "  -o PROFILE.json     where to write the profile (a scenario uses it with\n"
    "                      \"cluster\": {\"calibration\": \"PROFILE.json\"})\n"
    "  --fit NAME,...      the coefficients to fit (default mfu,mbu):\n"
    "%s"
    "  --folds K           cross-validation folds, 2 .. runs (default: min(runs, 5);\n"
    "                      none with one run)\n"
    "  --scenario S.json   engine settings a measured file did not record\n"
    "  --set PATH=VALUE    override one key of every run's scenario (repeatable)\n"
    "  --unset PATH        remove one key of every run's scenario, before any --set\n"
    "  --json              print the profile instead of the table\n";

typedef struct opts {
    const char *output, *fit, *scenario;
    cli_args unsets, sets, pos;
    int folds;
    bool json;
} opts;

static void print_usage_text(void)
{
    char names[2048] = "";
    size_t at = 0;
    for (int c = 0; c < MDL_N_COEFS; c++)
        at += (size_t)snprintf(names + at, sizeof names - at, "                        %-21s %s\n",
                               mdl_coefs[c].name, val_coefs[c].doc);
    printf(calibrate_usage, names);
}

static int parse(int argc, char **argv, opts *o)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            print_usage_text();
            return CLI_EXIT_OK;
        }
    const cli_opt table[] = {
        {.name = "output", .short_name = 'o', .kind = CLI_STRING, .dest = &o->output},
        {.name = "fit", .kind = CLI_STRING, .dest = &o->fit},
        {.name = "folds", .kind = CLI_INT, .dest = &o->folds, .lo = 2, .hi = 1000},
        {.name = "scenario", .kind = CLI_STRING, .dest = &o->scenario},
        {.name = "set", .kind = CLI_STRINGS, .dest = &o->sets},
        {.name = "unset", .kind = CLI_STRINGS, .dest = &o->unsets},
        {.name = "json", .kind = CLI_FLAG, .dest = &o->json},
        {0},
    };
    int code = cli_parse("calibrate", "usage: servesim calibrate MEASURED... -o PROFILE.json\n",
                         table, argc, argv, &o->pos);
    if (code != CLI_CONTINUE) return code;
    if (!o->output) return cli_usage_error("calibrate", "give the profile to write: -o PROFILE.json");
    if (o->pos.n == 0) return cli_usage_error("calibrate", "expected MEASURED...");
    return CLI_CONTINUE;
}

/* --fit's names into fit[]. */
static int parse_fit(const char *list, bool fit[MDL_N_COEFS], util_diag *d)
{
    static const char *names[MDL_N_COEFS + 1];
    for (int c = 0; c < MDL_N_COEFS; c++) names[c] = mdl_coefs[c].name;
    char *copy = util_xstrdup(list ? list : "mfu,mbu"), *save = NULL;
    int rc = UTIL_OK, n = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int c = mdl_coef_of(t);
        if (c < 0) rc = util_diag_unknown(d, "--fit", "coefficient", t, names);
        else fit[c] = true, n++;
    }
    if (!rc && n == 0) rc = util_diag_add(d, "--fit: name at least one coefficient");
    free(copy);
    return rc;
}

/* ---- printing ---- */

static void print_errors(const char *label, const double e[VAL_N_AGG])
{
    printf("%s\n", label);
    for (int k = 0; k < VAL_N_AGG; k++)
        if (!isnan(e[k])) printf("  %-22s %7.2f%%\n", val_agg_names[k], e[k]);
}

static void print_fit(const val_fit *f, const val_run *runs, const char *output)
{
    printf("profile of %s with %s, fitted on %d run%s (%d iterations, %d replays)\n\n", f->gpu,
           f->engine, f->n_runs, f->n_runs == 1 ? "" : "s", f->iterations, f->evaluations);
    printf("%-22s %12s %12s %12s   %s\n", "coefficient", "start", "fitted", "stderr", "range");
    for (int c = 0; c < MDL_N_COEFS; c++)
        if (f->fitted[c])
            printf("%-22s %12.6g %12.6g %12.3g   %g .. %g\n", mdl_coefs[c].name, f->start[c],
                   f->value[c], f->stderr_[c], val_coefs[c].lo, val_coefs[c].hi);
    printf("\n");
    print_errors("training error (mean |error| over the runs, fitted on all of them):",
                 f->train_error);
    if (f->folds >= 2) {
        char label[160];
        snprintf(label, sizeof label,
                 "cross-validated error (%d folds: each run predicted by a fit without it):",
                 f->folds);
        print_errors(label, f->cv_error);
    } else {
        printf("no cross-validated error: one run (give two or more to hold some out)\n");
    }
    bool held = f->folds >= 2;
    printf("\nper run (error %% fitted on all%s):\n", held ? "; held out" : "");
    for (int i = 0; i < f->n_runs; i++) {
        printf("  %s\n", runs[i].name ? runs[i].name : runs[i].source);
        for (int k = 0; k < VAL_N_AGG; k++) {
            if (isnan(f->per_run[i][k])) continue;
            printf("    %-20s %+7.1f%%", val_agg_names[k], f->per_run[i][k]);
            if (held) printf("  %+7.1f%%", f->cv_per_run[i][k]);
            printf("\n");
        }
    }
    printf("\nwrote %s\n", output);
}

/* The profile, whole or not at all: written beside and renamed. */
static int write_profile(const char *path, const cJSON *profile, util_diag *d)
{
    char *text = cJSON_Print(profile), *tmp = util_xasprintf("%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    bool ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f)) ok = false;
    if (ok && rename(tmp, path)) ok = false;
    if (!ok) remove(tmp);
    free(text);
    free(tmp);
    return ok ? UTIL_OK : util_diag_fail(d, "%s: cannot write the profile", path);
}

int cli_calibrate(int argc, char **argv)
{
    opts o = {0};
    int code = parse(argc, argv, &o);
    if (code != CLI_CONTINUE) return code;
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *cat = NULL;
    val_runs runs = {0};
    val_fit fit = {0};
    bool names[MDL_N_COEFS] = {0};
    int rc = parse_fit(o.fit, names, &d);
    if (!rc) rc = mdl_catalog_load_default(&cat, &d);
    if (!rc) rc = cli_measured_runs(o.pos.v, o.pos.n, o.scenario, &o.unsets, &o.sets, 0, false, cat,
                                    &runs, &d);
    int folds = o.folds ? o.folds : runs.n >= 2 ? (runs.n < 5 ? runs.n : 5) : 0;
    if (!rc) rc = val_calibrate(runs.v, runs.n, cat, names, folds, &fit, &d);
    cJSON *profile = rc ? NULL : val_profile_json(&fit, runs.v);
    if (!rc) rc = write_profile(o.output, profile, &d);
    if (!rc && o.json) {
        char *text = cJSON_Print(profile);
        printf("%s\n", text);
        free(text);
    } else if (!rc) {
        print_fit(&fit, runs.v, o.output);
    }
    cJSON_Delete(profile);
    val_fit_fini(&fit);
    val_runs_fini(&runs);
    mdl_catalog_destroy(cat);
    cli_args_fini(&o.sets);
    cli_args_fini(&o.unsets);
    code = cli_fail(&d, rc);
    util_diag_fini(&d);
    return code;
}
