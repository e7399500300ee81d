/*
 * sweep.c: `servesim sweep` and `servesim plan` -- many runs of one
 * scenario, in worker processes (plan/).
 */
#include "cli.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pl.h"

static const char sweep_usage[] =
    "usage: servesim sweep SCENARIO.json --vary PATH=VALUES... [-o FILE.db] [-j N]\n"
    "                      [--seeds K] [--resume] [--set PATH=VALUE]... [--unset PATH]...\n"
    "                      [--slo KEY=S]... [--json] [--quiet]\n"
    "\n"
    "Runs the scenario at every point of a grid, each point a run of FILE.db (default\n"
    "sweep.db) with its overrides stored, and prints one row per point.\n"
    "\n"
    "  --vary PATH=VALUES  a list (1,2,4,8 or h100-sxm,a100-80gb), a range (2:40:2) or a\n"
    "                      log range (1:256:x2); several make a grid\n"
    "  -j N                worker processes (default: the number of cores)\n"
    "  --seeds K           run each point with K seeds (the scenario's, +1, ...)\n"
    "  --resume            run only the points FILE.db does not hold yet\n"
    "  --set, --unset, --slo  as for servesim run and report (--slo sets the table's\n"
    "                      goodput)\n"
    "  --json              the table as a JSON array of points\n"
    "\n"
    "Ctrl-C keeps every finished point; the same command with --resume finishes.\n";

static const char plan_usage[] =
    "usage: servesim plan SCENARIO.json --target METRIC<=S... --find max-rate|min-replicas|cheapest\n"
    "                     [--rate R] [--candidates PATH=VALUES]... [--attainment A]\n"
    "                     [--scale-min VALUES] [--scale-max VALUES] [--scale-target VALUES]\n"
    "                     [--seeds K] [--confidence C] [-j N] [--set PATH=VALUE]...\n"
    "                     [--unset PATH]... [--json] [--emit-vllm-args] [--quiet]\n"
    "\n"
    "Prints the answer, every configuration tried, and the vllm serve command line that\n"
    "deploys the answer with its replica count.\n"
    "\n"
    "  --target T          ttft_p99<=2 (a percentile or _mean of the run), ttft<=0.5 (a\n"
    "                      per-request SLO that --attainment of requests must meet), or\n"
    "                      task_e2e<=30 (an agent task's SLO, --attainment of tasks);\n"
    "                      none: the scenario's own mean and percentile targets\n"
    "                      (slo.ttft_p99_s and each class's)\n"
    "  --find max-rate     the highest workload.arrival.rate_per_s meeting every target\n"
    "  --find min-replicas the fewest cluster.replicas meeting them at --rate R\n"
    "  --find cheapest     among --candidates (e.g. cluster.gpu=h100-sxm,a100-80gb), the\n"
    "                      lowest cost per million output tokens meeting them at --rate R;\n"
    "                      with cluster.autoscaler, over the scenario's day: the autoscaler's\n"
    "                      settings that cost least, beside the cheapest static fleet\n"
    "  --scale-min VALUES  over a day: cluster.autoscaler.min_replicas to try (1:4:1, 1,2,4;\n"
    "                      default 1 to the static answer's replicas)\n"
    "  --scale-max VALUES  ... max_replicas (default: the scenario's)\n"
    "  --scale-target VALUES ... target (default: the scenario's, 3/4 and 1/2 of it)\n"
    "  --attainment A      share of requests (tasks) per-request (task) targets need\n"
    "                      (default 0.9)\n"
    "  --seeds K           seeds per configuration (default 3; more when too close to call)\n"
    "  --confidence C      of each verdict's interval (default 0.95)\n"
    "  --rel-tol F         max-rate: stop when the bracket is this narrow (default 0.02)\n"
    "  --max-replicas N    min-replicas, cheapest: give up beyond N (default 64)\n"
    "  --emit-vllm-args    print only the vllm serve command line (with --json: its argv and\n"
    "                      replicas); an answer vllm serve cannot deploy is bad input\n"
    "  -q, --quiet         no progress line (shown on a terminal: points run and in flight)\n";

/* What both commands read: the scenario, --set, --unset, -j, --seeds, --slo. */
typedef struct common {
    const char *scenario;
    cli_args sets, unsets, slo;
    int jobs, seeds;
    bool json, quiet;
} common;

static void common_fini(common *c)
{
    cli_args_fini(&c->sets);
    cli_args_fini(&c->unsets);
    cli_args_fini(&c->slo);
}

/* What the points share and the base holds: the catalog, the scenario
 * with --set applied, as JSON text, and its folder. */
typedef struct base_data {
    mdl_catalog *cat;
    char *json, *dir;
} base_data;

/* The base every point starts from: the scenario file with --set applied. */
static int load_base(const common *c, pl_base *b, base_data *bd, util_diag *d)
{
    cJSON *root;
    int rc = mdl_catalog_load_default(&bd->cat, d);
    if (!rc) rc = cli_read_scenario(c->scenario, &c->unsets, &c->sets, NULL, &root, d);
    if (rc) return rc;
    bd->json = cJSON_PrintUnformatted(root);
    bd->dir = util_dirname(c->scenario);
    cJSON_Delete(root);
    *b = (pl_base){.catalog = bd->cat, .json = bd->json, .base_dir = bd->dir,
                   .slo_args = c->slo.v, .n_slo_args = c->slo.n};
    return UTIL_OK;
}

static void base_fini(base_data *bd)
{
    free(bd->json);
    free(bd->dir);
    mdl_catalog_destroy(bd->cat);
}

/* The exit code of a sweep or plan that returned rc. */
static int exit_code(const util_diag *d, int rc)
{
    int code = cli_fail(d, rc);
    return rc == UTIL_EINTR ? cli_stop_exit_code() : code;
}

static char *append(char *label, const char *opt, const char *value)
{
    char *next = util_xasprintf("%s %s %s", label, opt, value);
    free(label);
    return next;
}

/* The sweep's label: the scenario's name, its --set and its axes, so that
 * the same command finds its own points again (--resume). */
static char *sweep_label(const char *json, const common *c, const cli_args *vary)
{
    cJSON *root = cJSON_Parse(json);
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "name"));
    char *label = util_xstrdup(name ? name : "scenario");
    for (int i = 0; i < c->unsets.n; i++) label = append(label, "--unset", c->unsets.v[i]);
    for (int i = 0; i < c->sets.n; i++) label = append(label, "--set", c->sets.v[i]);
    for (int i = 0; i < vary->n; i++) label = append(label, "--vary", vary->v[i]);
    if (c->seeds > 1) {
        char *next = util_xasprintf("%s --seeds %d", label, c->seeds);
        free(label);
        label = next;
    }
    cJSON_Delete(root);
    return label;
}

static int64_t scenario_seed(const char *json)
{
    cJSON *root = cJSON_Parse(json);
    int64_t seed = (int64_t)util_json_number(root, "seed", 1);
    cJSON_Delete(root);
    return seed;
}

/* The sweep's progress bar on stderr, redrawn as points end and four times
 * a second between: points merged, in flight, and the time left at the
 * rate points have been ending (which counts every worker); when the last
 * is merged, a one-line summary in its place. */
static void draw_progress(const pl_sweep_progress *p, void *arg)
{
    (void)arg;
    if (p->finished) {
        fprintf(stderr, "\r  %d point%s in %.1f s, %.2f points/s with %s %d\033[K\n", p->done,
                p->done == 1 ? "" : "s", p->elapsed_s,
                p->elapsed_s > 0 ? p->done / p->elapsed_s : 0,
                pl_mpi_size() > 1 ? "MPI workers:" : "-j", p->jobs);
        return;
    }
    int width = 30, fill = p->total ? width * p->done / p->total : width;
    fprintf(stderr, "\r  [%.*s%*s] %d/%d points, %d in flight, %.0f s elapsed", fill,
            "##############################", width - fill, "", p->done, p->total, p->in_flight,
            p->elapsed_s);
    if (p->done > 0 && p->done < p->total)
        fprintf(stderr, ", ~%.0f s left", p->elapsed_s / p->done * (p->total - p->done));
    fprintf(stderr, "\033[K");
}

/* plan's line: the number of points (configuration and seed) run so far
 * and running, redrawn four times a second; cleared before the answer. */
static void draw_plan_progress(const pl_pool *pool, void *arg)
{
    const double *start = arg;
    fprintf(stderr, "\r  planning: %lld points run, %d in flight, %.0f s elapsed\033[K",
            (long long)pl_pool_delivered(pool), pl_pool_busy(pool), util_wall_s() - *start);
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

typedef struct sweep_args {
    cli_args vary;
    bool resume;
    const char *output;
} sweep_args;

static int parse_sweep(int argc, char **argv, common *c, sweep_args *s)
{
    const cli_opt opts[] = {
        {.name = "vary", .kind = CLI_STRINGS, .dest = &s->vary},
        {.name = "output", .short_name = 'o', .kind = CLI_STRING, .dest = &s->output},
        {.name = "jobs", .short_name = 'j', .kind = CLI_INT, .dest = &c->jobs, .lo = 1, .hi = 1024},
        {.name = "seeds", .kind = CLI_INT, .dest = &c->seeds, .lo = 1, .hi = 10000},
        {.name = "resume", .kind = CLI_FLAG, .dest = &s->resume},
        {.name = "set", .kind = CLI_STRINGS, .dest = &c->sets},
        {.name = "unset", .kind = CLI_STRINGS, .dest = &c->unsets},
        {.name = "slo", .kind = CLI_STRINGS, .dest = &c->slo},
        {.name = "json", .kind = CLI_FLAG, .dest = &c->json},
        {.name = "quiet", .short_name = 'q', .kind = CLI_FLAG, .dest = &c->quiet},
        {0},
    };
    cli_args pos;
    int code = cli_parse("sweep", sweep_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    if (pos.n != 1) return cli_usage_error("sweep", "expected one SCENARIO.json");
    if (s->vary.n == 0) return cli_usage_error("sweep", "nothing to vary: give --vary PATH=VALUES");
    c->scenario = pos.v[0];
    return CLI_CONTINUE;
}

/* Runs the points and prints the table: when stopped, of the points done. */
static int run_sweep(pl_sweep_opts *o, const common *c, util_diag *d)
{
    bool bar = !c->quiet && isatty(STDERR_FILENO);
    if (bar) o->progress = draw_progress;
    pl_sweep_result res = {0};
    cli_catch_stop_signals();
    int rc = pl_sweep_run(o, cli_stop_flag(), &res, d);
    cli_release_stop_signals();
    /* a lost worker interrupts it too, as a failure: the table says what finished */
    bool table = !rc || rc == UTIL_EINTR || res.interrupted;
    if (bar && table && rc) fprintf(stderr, "\r\033[K");
    if (table && c->json) print_json(pl_sweep_json(o, &res));
    else if (table) pl_sweep_print(o, &res, stdout);
    pl_sweep_result_fini(&res);
    return rc;
}

/* The axes, then the base and the label, then the run. */
static int sweep(const common *c, const sweep_args *s, util_diag *d)
{
    pl_axis *axes = util_xcalloc((size_t)s->vary.n, sizeof *axes);
    /* under MPI the workers are the other ranks, whatever -j says */
    int jobs = pl_mpi_size() > 1 ? pl_mpi_size() - 1 : c->jobs;
    pl_sweep_opts o = {.axes = axes, .n_axes = s->vary.n, .seeds = c->seeds, .jobs = jobs,
                       .resume = s->resume, .output = s->output};
    base_data bd = {0};
    char *label = NULL;
    int rc = UTIL_OK;
    for (int i = 0; i < s->vary.n && !rc; i++) rc = pl_axis_parse(s->vary.v[i], &axes[i], d);
    if (!rc) rc = load_base(c, &o.base, &bd, d);
    if (!rc) {
        o.base.sweep = label = sweep_label(bd.json, c, &s->vary);
        o.seed = scenario_seed(bd.json);
        rc = run_sweep(&o, c, d);
    }
    for (int i = 0; i < s->vary.n; i++) pl_axis_fini(&axes[i]);
    free(axes);
    free(label);
    base_fini(&bd);
    return rc;
}

int cli_sweep(int argc, char **argv)
{
    common c = {.jobs = pl_cores(), .seeds = 1};
    sweep_args s = {.output = "sweep.db"};
    int code = parse_sweep(argc, argv, &c, &s);
    if (code == CLI_CONTINUE) {
        util_diag d;
        util_diag_init(&d);
        code = exit_code(&d, sweep(&c, &s, &d));
        util_diag_fini(&d);
    }
    cli_args_fini(&s.vary);
    common_fini(&c);
    return code;
}

/* ---- plan ---- */

static const char *const goal_names[] = {"max-rate", "min-replicas", "cheapest", NULL};

typedef struct plan_args {
    cli_args targets, candidates;
    const char *scale[3]; /* --scale-min, --scale-max, --scale-target */
    int goal; /* -1: no --find */
    bool emit_vllm_args;
} plan_args;

/* What a goal needs besides the targets. */
static int check_plan(const cli_args *pos, common *c, pl_plan_opts *o, const plan_args *a)
{
    if (pos->n != 1) return cli_usage_error("plan", "expected one SCENARIO.json");
    if (a->goal < 0) return cli_usage_error("plan", "give --find and at least one --target");
    o->goal = (pl_goal)a->goal;
    /* cheapest over a day needs neither: plan() checks, once the scenario is read */
    if (o->goal == PL_MIN_REPLICAS && isnan(o->rate))
        return cli_usage_error("plan", "--find %s needs --rate R", goal_names[o->goal]);
    c->scenario = pos->v[0];
    return CLI_CONTINUE;
}

static int parse_plan(int argc, char **argv, common *c, pl_plan_opts *o, plan_args *a)
{
    const cli_opt opts[] = {
        {.name = "target", .kind = CLI_STRINGS, .dest = &a->targets},
        {.name = "find", .kind = CLI_CHOICE, .dest = &a->goal, .choices = goal_names},
        {.name = "rate", .kind = CLI_NUMBER, .dest = &o->rate, .lo = 1e-9, .hi = 1e9},
        {.name = "candidates", .kind = CLI_STRINGS, .dest = &a->candidates},
        {.name = "scale-min", .kind = CLI_STRING, .dest = &a->scale[0]},
        {.name = "scale-max", .kind = CLI_STRING, .dest = &a->scale[1]},
        {.name = "scale-target", .kind = CLI_STRING, .dest = &a->scale[2]},
        {.name = "attainment", .kind = CLI_NUMBER, .dest = &o->attainment, .lo = 0, .hi = 1},
        {.name = "seeds", .kind = CLI_INT, .dest = &c->seeds, .lo = 2, .hi = 32},
        {.name = "confidence", .kind = CLI_NUMBER, .dest = &o->confidence, .lo = 0.5,
         .hi = 0.9999},
        {.name = "rel-tol", .kind = CLI_NUMBER, .dest = &o->rel_tol, .lo = 1e-4, .hi = 1},
        {.name = "max-replicas", .kind = CLI_INT, .dest = &o->max_replicas, .lo = 1,
         .hi = 100000},
        {.name = "jobs", .short_name = 'j', .kind = CLI_INT, .dest = &c->jobs, .lo = 1, .hi = 1024},
        {.name = "set", .kind = CLI_STRINGS, .dest = &c->sets},
        {.name = "unset", .kind = CLI_STRINGS, .dest = &c->unsets},
        {.name = "json", .kind = CLI_FLAG, .dest = &c->json},
        {.name = "emit-vllm-args", .kind = CLI_FLAG, .dest = &a->emit_vllm_args},
        {.name = "quiet", .short_name = 'q', .kind = CLI_FLAG, .dest = &c->quiet},
        {0},
    };
    cli_args pos;
    int code = cli_parse("plan", plan_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    return check_plan(&pos, c, o, a);
}

/* A scenario's target (ttft_p99_s: 2, a class's) as plan's --target
 * (ttft_p99<=2, chat.ttft_p99<=2), onto the list at ctx. */
static void add_target_text(void *ctx, int cls, const char *cls_name, const char *name,
                            an_metric m, double q, double threshold_s)
{
    cli_args *texts = ctx;
    texts->v = util_xrealloc(texts->v, (size_t)(texts->n + 1) * sizeof *texts->v);
    texts->v[texts->n++] = util_xasprintf("%s%s%s<=%.15g", cls_name ? cls_name : "",
                                          cls_name ? "." : "", name, threshold_s);
}

/* Without --target, the scenario's own targets (slo.ttft_p99_s, and each
 * class's), so that a scenario that states its SLO plans against it. */
static int scenario_targets(const char *json, cli_args *texts, util_diag *d)
{
    cJSON *root = cJSON_Parse(json);
    an_scenario_slo_targets(root, add_target_text, texts);
    cJSON_Delete(root);
    return texts->n ? UTIL_OK
                    : util_diag_add(d, "plan: give at least one --target (ttft_p99<=2), or set "
                                       "the scenario's own in its slo (\"ttft_p99_s\": 2)");
}

/* --scale-min, --scale-max, --scale-target as axes over the autoscaler's
 * keys. */
static int read_scale(const plan_args *a, pl_plan_opts *o, util_diag *d)
{
    static const char *const opt[] = {"--scale-min", "--scale-max", "--scale-target"};
    static const char *const key[] = {"min_replicas", "max_replicas", "target"};
    int rc = UTIL_OK;
    o->scale = util_xcalloc(3, sizeof *o->scale);
    for (int k = 0; k < 3 && !rc; k++) {
        if (!a->scale[k]) continue;
        char *arg = util_xasprintf("cluster.autoscaler.%s=%s", key[k], a->scale[k]);
        rc = pl_axis_parse_as(opt[k], arg, &o->scale[o->n_scale], d);
        o->n_scale += !rc;
        free(arg);
    }
    return rc;
}

/* The targets and the candidates as plan/ reads them; each target's --slo
 * form goes to the points' summaries. */
static int read_targets(const cli_args *texts, const plan_args *a, pl_plan_opts *o, common *c,
                        util_diag *d)
{
    int rc = UTIL_OK;
    o->targets = util_xcalloc((size_t)texts->n + 1, sizeof *o->targets);
    o->candidates = util_xcalloc((size_t)a->candidates.n + 1, sizeof *o->candidates);
    c->slo.v = util_xcalloc((size_t)texts->n + 1, sizeof *c->slo.v);
    for (int i = 0; i < texts->n && !rc; i++) {
        rc = pl_target_parse(texts->v[i], &o->targets[i], d);
        if (!rc) c->slo.v[c->slo.n++] = o->targets[o->n_targets++].slo;
    }
    int pct = 0; /* each percentile target's place among the report's targets */
    for (int i = 0; i < o->n_targets; i++)
        if (!o->targets[i].per_request) o->targets[i].index = pct++;
    for (; !rc && o->n_candidates < a->candidates.n; o->n_candidates++)
        rc = pl_axis_parse_as("--candidates", a->candidates.v[o->n_candidates],
                              &o->candidates[o->n_candidates], d);
    if (!rc) rc = read_scale(a, o, d);
    return rc;
}

/* What --find cheapest needs, now that the scenario is read: over a day
 * (cluster.autoscaler) the profile's rate and the autoscaler's settings;
 * else --rate and --candidates, as before. */
static int check_cheapest(const plan_args *a, const pl_plan_opts *o, util_diag *d)
{
    if (o->goal != PL_CHEAPEST) return UTIL_OK;
    bool day = pl_plan_over_a_day(o);
    if (!day && o->n_scale)
        return util_diag_add(d, "plan: --scale-min, --scale-max and --scale-target need a "
                                "scenario with cluster.autoscaler");
    if (day) return UTIL_OK;
    if (isnan(o->rate)) return util_diag_add(d, "plan: --find cheapest needs --rate R");
    if (a->candidates.n == 0)
        return util_diag_add(d, "plan: --find cheapest needs --candidates PATH=VALUES");
    return UTIL_OK;
}

static void plan_fini(pl_plan_opts *o, plan_args *a)
{
    for (int i = 0; i < o->n_targets; i++) pl_target_fini(&o->targets[i]);
    for (int i = 0; i < o->n_candidates; i++) pl_axis_fini(&o->candidates[i]);
    for (int i = 0; i < o->n_scale; i++) pl_axis_fini(&o->scale[i]);
    free(o->scale);
    free(o->targets);
    free(o->candidates);
    cli_args_fini(&a->targets);
    cli_args_fini(&a->candidates);
}

/* ---- the answer's deployment ---- */

/* The answer's vllm serve command, or why there is none: not found
 * (UTIL_EFAIL), or not a deployment vllm serve expresses (UTIL_EINPUT). */
static int answer_command(const pl_plan_opts *o, const pl_plan_result *r, pl_vllm_cmd *cmd,
                          util_diag *why)
{
    memset(cmd, 0, sizeof *cmd);
    util_diag_init(&cmd->notes);
    if (!r->found || r->best < 0)
        return util_diag_fail(why, "no configuration tried meets the targets: nothing to deploy");
    return pl_plan_vllm_args(&o->base, r->trials[r->best].overrides, cmd, why);
}

/* After the answer: "# 3 replicas (2 x h100-sxm each) of:", the command
 * and its notes; or one line saying why there is none. */
static void print_command(const pl_vllm_cmd *cmd, int rc, const util_diag *why, FILE *out)
{
    if (rc && rc != UTIL_EINPUT) return; /* no answer: the plan said so */
    if (rc) {
        fprintf(out, "\n# no vllm serve command: %s\n", why->count ? why->msgs[0] : "");
        return;
    }
    char *line = pl_vllm_cmd_line(cmd);
    bool one = cmd->replicas == 1;
    fprintf(out, "\n# %d replica%s (%d x %s%s) of:\n%s\n", cmd->replicas, one ? "" : "s",
            cmd->gpus_per_replica, cmd->gpu, one ? "" : " each", line);
    for (int i = 0; i < cmd->notes.count; i++) fprintf(out, "#   %s\n", cmd->notes.msgs[i]);
    free(line);
}

/* The plan's JSON with "vllm_serve" (or null and "vllm_serve_note"). */
static void print_plan_json(const pl_plan_opts *o, const pl_plan_result *r,
                            const pl_vllm_cmd *cmd, int rc, const util_diag *why)
{
    cJSON *j = pl_plan_json(o, r);
    if (rc) {
        cJSON_AddNullToObject(j, "vllm_serve");
        cJSON_AddStringToObject(j, "vllm_serve_note", why->count ? why->msgs[0] : "");
    } else {
        cJSON_AddItemToObject(j, "vllm_serve", pl_vllm_cmd_json(cmd));
    }
    print_json(j);
}

/* Prints the answer as asked: the plan (text or JSON) with its command, or
 * --emit-vllm-args's command alone, which fails as the command does. */
static int print_answer(const common *c, const plan_args *a, const pl_plan_opts *o,
                        const pl_plan_result *r, util_diag *d)
{
    pl_vllm_cmd cmd;
    util_diag why;
    util_diag_init(&why);
    int rc = answer_command(o, r, &cmd, &why), status = UTIL_OK;
    if (a->emit_vllm_args && rc) {
        for (int i = 0; i < why.count; i++) util_diag_add(d, "%s", why.msgs[i]);
        status = rc;
    } else if (a->emit_vllm_args && c->json) {
        print_json(pl_vllm_cmd_json(&cmd));
    } else if (a->emit_vllm_args) {
        char *line = pl_vllm_cmd_line(&cmd);
        printf("%s\n", line);
        free(line);
    } else if (c->json) {
        print_plan_json(o, r, &cmd, rc, &why);
    } else {
        pl_plan_print(o, r, stdout);
        print_command(&cmd, rc, &why, stdout);
    }
    pl_vllm_cmd_fini(&cmd);
    util_diag_fini(&why);
    return status;
}

/* --emit-vllm-args on a search whose answer differs from the scenario only
 * in its rate or replicas: whether vllm serve can deploy it is known before
 * anything runs. */
static int check_deployable(const pl_plan_opts *o, util_diag *d)
{
    if (o->goal == PL_CHEAPEST) return UTIL_OK; /* the candidates may change that */
    cJSON *none = cJSON_CreateObject();
    pl_vllm_cmd cmd;
    util_diag why;
    util_diag_init(&why);
    int rc = pl_plan_vllm_args(&o->base, none, &cmd, &why);
    for (int i = 0; rc && i < why.count; i++) util_diag_add(d, "%s", why.msgs[i]);
    pl_vllm_cmd_fini(&cmd);
    util_diag_fini(&why);
    cJSON_Delete(none);
    return rc;
}

/* The targets, the base, the search, and its answer (none when stopped). */
static int plan(common *c, const plan_args *a, pl_plan_opts *o, util_diag *d)
{
    base_data bd = {0};
    pl_plan_result res = {0};
    cli_args own = {0}; /* the scenario's targets, when --target gives none */
    int rc = load_base(c, &o->base, &bd, d);
    if (!rc && a->targets.n == 0) rc = scenario_targets(bd.json, &own, d);
    if (!rc) rc = read_targets(a->targets.n ? &a->targets : &own, a, o, c, d);
    o->base.slo_args = c->slo.v; /* load_base ran before the targets were read */
    o->base.n_slo_args = c->slo.n;
    for (int i = 0; i < own.n; i++) free(own.v[i]);
    free(own.v);
    if (!rc) rc = check_cheapest(a, o, d);
    if (!rc && a->emit_vllm_args) rc = check_deployable(o, d);
    o->seeds = c->seeds;
    o->jobs = c->jobs;
    double start = util_wall_s();
    bool bar = !c->quiet && isatty(STDERR_FILENO);
    if (bar) {
        o->progress = draw_plan_progress;
        o->progress_arg = &start;
    }
    if (!rc) {
        cli_catch_stop_signals();
        rc = pl_plan_run(o, cli_stop_flag(), &res, d);
        cli_release_stop_signals();
    }
    if (bar && util_wall_s() - start >= 0.25) fprintf(stderr, "\r\033[K");
    if (!rc) rc = print_answer(c, a, o, &res, d);
    pl_plan_result_fini(&res);
    base_fini(&bd);
    return rc;
}

int cli_plan(int argc, char **argv)
{
    common c = {.jobs = pl_cores(), .seeds = 3};
    pl_plan_opts o = {.goal = PL_MAX_RATE, .attainment = 0.9, .confidence = 0.95,
                      .rel_tol = 0.02, .max_replicas = 64, .rate = NAN};
    plan_args a = {.goal = -1};
    int code = parse_plan(argc, argv, &c, &o, &a);
    if (code == CLI_CONTINUE) {
        util_diag d;
        util_diag_init(&d);
        code = exit_code(&d, plan(&c, &a, &o, &d));
        util_diag_fini(&d);
    }
    plan_fini(&o, &a);
    common_fini(&c);
    return code;
}
