/*
 * lesson.c: `servesim lesson` -- the effects behind "inference performance
 * is not one number", each run with the real engine (lessons/).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls.h"

static const char lesson_usage[] =
    "usage: servesim lesson [NAME [--set PATH=VALUE]... [--plot FILE.svg] [--json] [--quick]\n"
    "                       [-j N]]\n"
    "\n"
    "Without NAME, lists the lessons.  With it, runs the lesson's sweep with the real engine\n"
    "and prints the numbers that carry its point and what they say.  --set changes the\n"
    "lesson's scenario or its knobs (lesson.*, see examples/lessons/NAME.json); the\n"
    "sentences follow the new numbers.\n"
    "\n"
    "  --plot FILE.svg   also draw the lesson's figure\n"
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
    FILE *f = fopen(path, "w");
    if (!f) return util_diag_add(d, "%s: cannot write", path);
    an_plot_svg(&r->plot, f);
    return fclose(f) ? util_diag_fail(d, "%s: cannot write", path) : UTIL_OK;
}

int cli_lesson(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"set", required_argument, NULL, 's'},  {"plot", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'J'},       {"quick", no_argument, NULL, 'Q'},
        {"jobs", required_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    char **sets = util_xcalloc((size_t)argc, sizeof *sets);
    int n_sets = 0, jobs = pl_cores(), code = CLI_CONTINUE, c;
    const char *plot = NULL;
    bool json = false, quick = false;
    optind = 1;
    opterr = 0;
    while (code == CLI_CONTINUE && (c = getopt_long(argc, argv, ":j:h", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 's': sets[n_sets++] = optarg; break;
        case 'p': plot = optarg; break;
        case 'J': json = true; break;
        case 'Q': quick = true; break;
        case 'j':
            jobs = (int)strtol(optarg, &end, 10);
            if (*end || jobs < 1 || jobs > 1024)
                code = cli_usage_error("lesson", "-j %s: expected 1 .. 1024", optarg);
            break;
        case 'h': fputs(lesson_usage, stdout); code = CLI_EXIT_OK; break;
        case ':': code = cli_usage_error("lesson", "option '%s' needs a value", argv[optind - 1]); break;
        default: code = cli_usage_error("lesson", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (code == CLI_CONTINUE && optind == argc) {
        list();
        code = CLI_EXIT_OK;
    }
    const ls_lesson *l = NULL;
    if (code == CLI_CONTINUE && optind != argc - 1)
        code = cli_usage_error("lesson", "expected one lesson name");
    if (code == CLI_CONTINUE && !(l = ls_find(argv[optind]))) {
        const char *names[16];
        int n = 0;
        for (const ls_lesson *k = ls_lessons; k->name && n < 15; k++) names[n++] = k->name;
        names[n] = NULL;
        const char *near = util_closest(argv[optind], names);
        util_clip_buf b;
        code = cli_usage_error("lesson", "no lesson '%s'%s%s%s (servesim lesson lists them)",
                               util_clip(argv[optind], &b), near ? " (did you mean '" : "",
                               near ? near : "",
                               near ? "'?)" : "");
    }
    if (code == CLI_CONTINUE) {
        util_diag d;
        util_diag_init(&d);
        mdl_catalog *cat = NULL;
        ls_result r = {0};
        int rc = mdl_catalog_load_default(&cat, &d);
        if (!rc) rc = ls_run(l, cat, sets, n_sets, quick, jobs, &r, &d);
        if (!rc && plot) rc = write_plot(&r, plot, &d);
        if (!rc && json) {
            cJSON *o = ls_json(l, &r);
            char *text = cJSON_Print(o);
            printf("%s\n", text);
            free(text);
            cJSON_Delete(o);
        } else if (!rc) {
            ls_print(l, &r, stdout);
        }
        code = cli_fail(&d, rc);
        ls_result_fini(&r);
        mdl_catalog_destroy(cat);
        util_diag_fini(&d);
    }
    free(sets);
    return code;
}
