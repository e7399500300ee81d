/*
 * sweep.c: `servesim sweep` and `servesim plan` -- many runs of one
 * scenario, in worker processes (plan/).
 */
#include "cli.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pl.h"

static const char sweep_usage[] =
    "usage: servesim sweep SCENARIO.json --vary PATH=VALUES... [-o FILE.db] [-j N]\n"
    "                      [--seeds K] [--resume] [--set PATH=VALUE]... [--slo KEY=S]...\n"
    "                      [--json] [--quiet]\n"
    "\n"
    "Runs the scenario at every point of a grid, each point a run of FILE.db (default\n"
    "sweep.db) with its overrides stored, and prints one row per point.\n"
    "\n"
    "  --vary PATH=VALUES  a list (1,2,4,8 or h100-sxm,a100-80gb), a range (2:40:2) or a\n"
    "                      log range (1:256:x2); several make a grid\n"
    "  -j N                worker processes (default: the number of cores)\n"
    "  --seeds K           run each point with K seeds (the scenario's, +1, ...)\n"
    "  --resume            run only the points FILE.db does not hold yet\n"
    "  --set, --slo        as for servesim run and report (--slo sets the table's goodput)\n"
    "  --json              the table as a JSON array of points\n"
    "\n"
    "Ctrl-C keeps every finished point; the same command with --resume finishes.\n";

static const char plan_usage[] =
    "usage: servesim plan SCENARIO.json --target METRIC<=S... --find max-rate|min-replicas|cheapest\n"
    "                     [--rate R] [--candidates PATH=VALUES]... [--attainment A]\n"
    "                     [--seeds K] [--confidence C] [-j N] [--set PATH=VALUE]... [--json]\n"
    "\n"
    "  --target T          ttft_p99<=2 (a percentile or _mean of the run), or ttft<=0.5 (a\n"
    "                      per-request SLO that --attainment of requests must meet)\n"
    "  --find max-rate     the highest workload.arrival.rate_per_s meeting every target\n"
    "  --find min-replicas the fewest cluster.replicas meeting them at --rate R\n"
    "  --find cheapest     among --candidates (e.g. cluster.gpu=h100-sxm,a100-80gb), the\n"
    "                      lowest cost per million output tokens meeting them at --rate R\n"
    "  --attainment A      share of requests per-request targets need (default 0.9)\n"
    "  --seeds K           seeds per configuration (default 3; more when too close to call)\n"
    "  --confidence C      of each verdict's interval (default 0.95)\n"
    "  --rel-tol F         max-rate: stop when the bracket is this narrow (default 0.02)\n"
    "  --max-replicas N    min-replicas, cheapest: give up beyond N (default 64)\n";

/* What both commands read: the scenario, --set, -j, --seeds, --slo. */
typedef struct common {
    const char *scenario;
    char **sets;
    int n_sets;
    char **slo;
    int n_slo;
    int jobs, seeds;
    bool json, quiet;
} common;

static int parse_int(const char *cmd, const char *opt, const char *v, int lo, int hi, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || end == v || x < lo || x > hi)
        return cli_usage_error(cmd, "%s %s: expected %d .. %d", opt, v, lo, hi);
    *out = (int)x;
    return CLI_CONTINUE;
}

static int parse_num(const char *cmd, const char *opt, const char *v, double lo, double hi,
                     double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (*end || end == v || !(x >= lo && x <= hi))
        return cli_usage_error(cmd, "%s %s: expected a number in %g .. %g", opt, v, lo, hi);
    *out = x;
    return CLI_CONTINUE;
}

/* The base every point starts from: the scenario file with --set applied. */
static int base_of(const common *c, const mdl_catalog *cat, pl_base *b, char **json, char **dir,
                   util_diag *d)
{
    cJSON *root;
    int rc = cli_read_scenario(c->scenario, c->sets, c->n_sets, NULL, &root, d);
    if (rc) return rc;
    *json = cJSON_PrintUnformatted(root);
    *dir = util_dirname(c->scenario);
    cJSON_Delete(root);
    *b = (pl_base){.catalog = cat, .json = *json, .base_dir = *dir, .slo_args = c->slo,
                   .n_slo_args = c->n_slo};
    return UTIL_OK;
}

static char *append(char *label, const char *opt, const char *value)
{
    char *next = util_xasprintf("%s %s %s", label, opt, value);
    free(label);
    return next;
}

/* The sweep's label: the scenario's name, its --set and its axes, so that
 * the same command finds its own points again (--resume). */
static char *sweep_label(const char *json, const common *c, char **vary, int n_vary, int seeds)
{
    cJSON *root = cJSON_Parse(json);
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "name"));
    char *label = util_xstrdup(name ? name : "scenario");
    for (int i = 0; i < c->n_sets; i++) label = append(label, "--set", c->sets[i]);
    for (int i = 0; i < n_vary; i++) label = append(label, "--vary", vary[i]);
    if (seeds > 1) {
        char *next = util_xasprintf("%s --seeds %d", label, seeds);
        free(label);
        label = next;
    }
    cJSON_Delete(root);
    return label;
}

/* The sweep's progress bar on stderr, cleared when the sweep ends. */
static void draw_progress(const pl_sweep_progress *p, void *arg)
{
    (void)arg;
    int width = 30, fill = p->total ? width * p->done / p->total : width;
    fprintf(stderr, "\r  [%.*s%*s] %d/%d points, %.0f s elapsed", fill,
            "##############################", width - fill, "", p->done, p->total, p->elapsed_s);
    if (p->done > 0 && p->done < p->total)
        fprintf(stderr, ", ~%.0f s left", p->elapsed_s / p->done * (p->total - p->done));
    fprintf(stderr, "\033[K");
    if (p->done == p->total) fprintf(stderr, "\r\033[K");
}

static int print_json(cJSON *o)
{
    char *text = cJSON_Print(o);
    printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
    return UTIL_OK;
}

/* ---- sweep ---- */

int cli_sweep(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"vary", required_argument, NULL, 'v'},  {"output", required_argument, NULL, 'o'},
        {"jobs", required_argument, NULL, 'j'},  {"seeds", required_argument, NULL, 'k'},
        {"resume", no_argument, NULL, 'R'},      {"set", required_argument, NULL, 's'},
        {"slo", required_argument, NULL, 'L'},   {"json", no_argument, NULL, 'J'},
        {"quiet", no_argument, NULL, 'q'},       {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    common c = {.jobs = pl_cores(), .seeds = 1};
    c.sets = util_xcalloc((size_t)argc, sizeof *c.sets);
    c.slo = util_xcalloc((size_t)argc, sizeof *c.slo);
    char **vary = util_xcalloc((size_t)argc, sizeof *vary);
    int n_vary = 0, code = CLI_CONTINUE, ch;
    bool resume = false;
    const char *output = "sweep.db";
    optind = 1;
    opterr = 0;
    while (code == CLI_CONTINUE && (ch = getopt_long(argc, argv, ":o:j:qh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'v': vary[n_vary++] = optarg; break;
        case 'o': output = optarg; break;
        case 'j': code = parse_int("sweep", "-j", optarg, 1, 1024, &c.jobs); break;
        case 'k': code = parse_int("sweep", "--seeds", optarg, 1, 10000, &c.seeds); break;
        case 'R': resume = true; break;
        case 's': c.sets[c.n_sets++] = optarg; break;
        case 'L': c.slo[c.n_slo++] = optarg; break;
        case 'J': c.json = true; break;
        case 'q': c.quiet = true; break;
        case 'h': fputs(sweep_usage, stdout); code = CLI_EXIT_OK; break;
        case ':': code = cli_usage_error("sweep", "option '%s' needs a value", argv[optind - 1]); break;
        default: code = cli_usage_error("sweep", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (code == CLI_CONTINUE && optind != argc - 1)
        code = cli_usage_error("sweep", "expected one SCENARIO.json");
    if (code == CLI_CONTINUE && n_vary == 0)
        code = cli_usage_error("sweep", "nothing to vary: give --vary PATH=VALUES");
    util_diag d;
    util_diag_init(&d);
    pl_axis *axes = util_xcalloc((size_t)(n_vary ? n_vary : 1), sizeof *axes);
    int rc = UTIL_OK;
    for (int i = 0; code == CLI_CONTINUE && i < n_vary && !rc; i++)
        rc = pl_axis_parse(vary[i], &axes[i], &d);
    mdl_catalog *cat = NULL;
    char *json = NULL, *dir = NULL, *label = NULL;
    pl_sweep_result res = {0};
    if (code == CLI_CONTINUE) {
        c.scenario = argv[optind];
        pl_base b;
        if (!rc) rc = mdl_catalog_load_default(&cat, &d);
        if (!rc) rc = base_of(&c, cat, &b, &json, &dir, &d);
        if (!rc) {
            label = sweep_label(json, &c, vary, n_vary, c.seeds);
            b.sweep = label;
            cJSON *root = cJSON_Parse(json);
            pl_sweep_opts o = {.base = b, .axes = axes, .n_axes = n_vary, .seeds = c.seeds,
                               .seed = (int64_t)util_json_number(root, "seed", 1),
                               .jobs = c.jobs, .resume = resume, .output = output};
            bool bar = !c.quiet && isatty(STDERR_FILENO);
            if (bar) o.progress = draw_progress;
            cJSON_Delete(root);
            cli_catch_stop_signals();
            rc = pl_sweep_run(&o, cli_stop_flag(), &res, &d);
            cli_release_stop_signals();
            if (bar && rc == UTIL_EINTR) fprintf(stderr, "\r\033[K");
            if (!rc || rc == UTIL_EINTR) {
                if (c.json) print_json(pl_sweep_json(&o, &res));
                else pl_sweep_print(&o, &res, stdout);
            }
        }
        code = cli_fail(&d, rc);
        if (rc == UTIL_EINTR) code = cli_stop_exit_code();
    }
    pl_sweep_result_fini(&res);
    for (int i = 0; i < n_vary; i++) pl_axis_fini(&axes[i]);
    free(axes);
    free(json);
    free(dir);
    free(label);
    mdl_catalog_destroy(cat);
    util_diag_fini(&d);
    free(vary);
    free(c.sets);
    free(c.slo);
    return code;
}

/* ---- plan ---- */

static int parse_goal(const char *v, pl_goal *g)
{
    static const char *const names[] = {"max-rate", "min-replicas", "cheapest", NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(v, names[i])) {
            *g = (pl_goal)i;
            return CLI_CONTINUE;
        }
    return cli_usage_error("plan", "--find %s: expected max-rate, min-replicas or cheapest", v);
}

int cli_plan(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"target", required_argument, NULL, 't'},     {"find", required_argument, NULL, 'f'},
        {"rate", required_argument, NULL, 'r'},       {"candidates", required_argument, NULL, 'c'},
        {"attainment", required_argument, NULL, 'a'}, {"seeds", required_argument, NULL, 'k'},
        {"confidence", required_argument, NULL, 'C'}, {"rel-tol", required_argument, NULL, 'T'},
        {"max-replicas", required_argument, NULL, 'M'}, {"jobs", required_argument, NULL, 'j'},
        {"set", required_argument, NULL, 's'},        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},             {0, 0, 0, 0},
    };
    common c = {.jobs = pl_cores(), .seeds = 3};
    c.sets = util_xcalloc((size_t)argc, sizeof *c.sets);
    c.slo = util_xcalloc((size_t)argc, sizeof *c.slo);
    char **targets = util_xcalloc((size_t)argc, sizeof *targets), **cands = util_xcalloc((size_t)argc, sizeof *cands);
    int n_targets = 0, n_cands = 0, code = CLI_CONTINUE, ch;
    pl_plan_opts o = {.goal = PL_MAX_RATE, .attainment = 0.9, .confidence = 0.95,
                      .rel_tol = 0.02, .max_replicas = 64, .rate = NAN};
    bool have_goal = false;
    optind = 1;
    opterr = 0;
    while (code == CLI_CONTINUE && (ch = getopt_long(argc, argv, ":j:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 't': targets[n_targets++] = optarg; break;
        case 'f': code = parse_goal(optarg, &o.goal), have_goal = true; break;
        case 'r': code = parse_num("plan", "--rate", optarg, 1e-9, 1e9, &o.rate); break;
        case 'c': cands[n_cands++] = optarg; break;
        case 'a': code = parse_num("plan", "--attainment", optarg, 0, 1, &o.attainment); break;
        case 'k': code = parse_int("plan", "--seeds", optarg, 2, 32, &c.seeds); break;
        case 'C': code = parse_num("plan", "--confidence", optarg, 0.5, 0.9999, &o.confidence); break;
        case 'T': code = parse_num("plan", "--rel-tol", optarg, 1e-4, 1, &o.rel_tol); break;
        case 'M': code = parse_int("plan", "--max-replicas", optarg, 1, 100000, &o.max_replicas); break;
        case 'j': code = parse_int("plan", "-j", optarg, 1, 1024, &c.jobs); break;
        case 's': c.sets[c.n_sets++] = optarg; break;
        case 'J': c.json = true; break;
        case 'h': fputs(plan_usage, stdout); code = CLI_EXIT_OK; break;
        case ':': code = cli_usage_error("plan", "option '%s' needs a value", argv[optind - 1]); break;
        default: code = cli_usage_error("plan", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (code == CLI_CONTINUE && optind != argc - 1)
        code = cli_usage_error("plan", "expected one SCENARIO.json");
    if (code == CLI_CONTINUE && (!have_goal || n_targets == 0))
        code = cli_usage_error("plan", "give --find and at least one --target");
    if (code == CLI_CONTINUE && o.goal != PL_MAX_RATE && isnan(o.rate))
        code = cli_usage_error("plan", "--find %s needs --rate R",
                               o.goal == PL_MIN_REPLICAS ? "min-replicas" : "cheapest");
    if (code == CLI_CONTINUE && o.goal == PL_CHEAPEST && n_cands == 0)
        code = cli_usage_error("plan", "--find cheapest needs --candidates PATH=VALUES");
    util_diag d;
    util_diag_init(&d);
    int rc = UTIL_OK;
    o.targets = util_xcalloc((size_t)n_targets + 1, sizeof *o.targets);
    o.candidates = util_xcalloc((size_t)n_cands + 1, sizeof *o.candidates);
    for (int i = 0; code == CLI_CONTINUE && i < n_targets && !rc; i++, o.n_targets++) {
        rc = pl_target_parse(targets[i], &o.targets[i], &d);
        if (rc) break;
        c.slo[c.n_slo++] = o.targets[i].slo;
    }
    int pct = 0; /* each percentile target's place among the report's targets */
    for (int i = 0; i < o.n_targets; i++)
        if (!o.targets[i].per_request) o.targets[i].index = pct++;
    for (int i = 0; code == CLI_CONTINUE && i < n_cands && !rc; i++, o.n_candidates++)
        rc = pl_axis_parse(cands[i], &o.candidates[i], &d);
    mdl_catalog *cat = NULL;
    char *json = NULL, *dir = NULL;
    pl_plan_result res = {0};
    if (code == CLI_CONTINUE) {
        c.scenario = argv[optind];
        if (!rc) rc = mdl_catalog_load_default(&cat, &d);
        if (!rc) rc = base_of(&c, cat, &o.base, &json, &dir, &d);
        o.seeds = c.seeds;
        o.jobs = c.jobs;
        if (!rc) {
            cli_catch_stop_signals();
            rc = pl_plan_run(&o, cli_stop_flag(), &res, &d);
            cli_release_stop_signals();
        }
        if (!rc && c.json) print_json(pl_plan_json(&o, &res));
        else if (!rc) pl_plan_print(&o, &res, stdout);
        code = cli_fail(&d, rc);
        if (rc == UTIL_EINTR) code = cli_stop_exit_code();
    }
    pl_plan_result_fini(&res);
    for (int i = 0; i < o.n_targets; i++) pl_target_fini(&o.targets[i]);
    for (int i = 0; i < o.n_candidates; i++) pl_axis_fini(&o.candidates[i]);
    free(o.targets);
    free(o.candidates);
    free(json);
    free(dir);
    mdl_catalog_destroy(cat);
    util_diag_fini(&d);
    free(targets);
    free(cands);
    free(c.sets);
    free(c.slo);
    return code;
}
