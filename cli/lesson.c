/*
 * lesson.c: `servesim lesson` -- the effects behind "inference performance
 * is not one number", each run with the real engine (lessons/).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls.h"

static const char lesson_usage[] =
    "usage: servesim lesson [NAME [--set PATH=VALUE]... [--unset PATH]... [--plot FILE]\n"
    "                       [--json] [--quick] [-j N]]\n"
    "\n"
    "Without NAME, lists the lessons.  With it, runs the lesson's sweep with the real engine\n"
    "and prints the numbers that carry its point and what they say.  --set changes the\n"
    "lesson's scenario or its knobs (lesson.*, see examples/lessons/NAME.json); the\n"
    "sentences follow the new numbers.  --unset PATH removes a key first: every --unset\n"
    "applies before every --set, so --unset lesson.loads --set lesson.loads=[0.5, 1] replaces\n"
    "a knob whole.\n"
    "\n"
    "  --plot FILE       also draw the lesson's figure (FILE.svg, or FILE.png)\n"
    "  --json            the table, the findings and their numbers as JSON\n"
    "  --quick           a reduced size (what the test suite runs)\n"
    "  -j N              worker processes (default: the number of cores)\n";

static void list(void)
{
    printf("lessons (servesim lesson NAME):\n\n");
    for (const ls_lesson *l = ls_lessons; l->name; l++) printf("  %-16s %s\n", l->name, l->summary);
}

static int write_plot(const ls_result *r, const char *path, util_diag *d)
{
    if (!r->has_plot) return util_diag_add(d, "this lesson has no figure");
    return cli_write_figure(&r->plot, (an_plot_size){0}, path, d);
}

/* The command line, checked: a lesson to run, or nothing more to do. */
typedef struct options {
    const ls_lesson *lesson;
    cli_args sets, unsets;
    const char *plot;
    int jobs;
    bool json, quick;
} options;

/* "no lesson 'x'", with the closest name when one is close. */
static int no_lesson(const char *name)
{
    const char *names[16];
    int n = 0;
    for (const ls_lesson *k = ls_lessons; k->name && n < 15; k++) names[n++] = k->name;
    names[n] = NULL;
    const char *near = util_closest(name, names);
    util_clip_buf b;
    return cli_usage_error("lesson", "no lesson '%s'%s%s%s (servesim lesson lists them)",
                           util_clip(name, &b), near ? " (did you mean '" : "", near ? near : "",
                           near ? "'?)" : "");
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.jobs = pl_cores()};
    const cli_opt opts[] = {
        {.name = "set", .kind = CLI_STRINGS, .dest = &o->sets},
        {.name = "unset", .kind = CLI_STRINGS, .dest = &o->unsets},
        {.name = "plot", .kind = CLI_STRING, .dest = &o->plot},
        {.name = "json", .kind = CLI_FLAG, .dest = &o->json},
        {.name = "quick", .kind = CLI_FLAG, .dest = &o->quick},
        {.name = "jobs", .short_name = 'j', .kind = CLI_INT, .dest = &o->jobs, .lo = 1, .hi = 1024},
        {0},
    };
    cli_args pos;
    int code = cli_parse("lesson", lesson_usage, opts, argc, argv, &pos);
    if (code != CLI_CONTINUE) return code;
    if (pos.n == 0) {
        list();
        return CLI_EXIT_OK;
    }
    if (pos.n != 1) return cli_usage_error("lesson", "expected one lesson name");
    o->lesson = ls_find(pos.v[0]);
    return o->lesson ? CLI_CONTINUE : no_lesson(pos.v[0]);
}

static int run_lesson(const options *o, util_diag *d)
{
    mdl_catalog *cat = NULL;
    ls_result r = {0};
    int rc = mdl_catalog_load_default(&cat, d);
    if (!rc)
        rc = ls_run_edits(o->lesson, cat, o->unsets.v, o->unsets.n, o->sets.v, o->sets.n,
                          o->quick, o->jobs, &r, d);
    if (!rc && o->plot) rc = write_plot(&r, o->plot, d);
    if (!rc && o->json) {
        cJSON *j = ls_json(o->lesson, &r);
        char *text = cJSON_Print(j);
        printf("%s\n", text);
        free(text);
        cJSON_Delete(j);
    } else if (!rc) {
        ls_print(o->lesson, &r, stdout);
    }
    ls_result_fini(&r);
    mdl_catalog_destroy(cat);
    return rc;
}

int cli_lesson(int argc, char **argv)
{
    options o;
    int code = parse(argc, argv, &o);
    if (code == CLI_CONTINUE) {
        util_diag d;
        util_diag_init(&d);
        code = cli_fail(&d, run_lesson(&o, &d));
        util_diag_fini(&d);
    }
    cli_args_fini(&o.sets);
    cli_args_fini(&o.unsets);
    return code;
}
