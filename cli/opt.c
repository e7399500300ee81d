/*
 * opt.c: the one option parser.  Each command describes its options as a
 * table of cli_opt (name, kind, where the value goes, its range or
 * choices) and cli_parse reads argv against it, the way getopt_long did
 * before: options and arguments in any order, long names abbreviated to
 * any unambiguous prefix, "--" ending the options.  Every message about an
 * option is written here, so that each command says the same thing the
 * same way, and every piece of the user's text it echoes is clipped
 * (util_clip): a 10 MB argument makes a one-line message.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every command takes -h and --help; it is matched (and abbreviated) as if
 * it were the last entry of each table. */
static const cli_opt help_opt = {.name = "help", .short_name = 'h', .kind = CLI_FLAG};

/* Where cli_parse is in argv. */
typedef struct parser {
    const char *cmd, *usage;
    const cli_opt *opts;
    int argc, i; /* i: the argument being read */
    char **argv;
} parser;

void cli_args_fini(cli_args *a)
{
    free(a->v);
    *a = (cli_args){0};
}

static void push(cli_args *a, char *value)
{
    a->v = util_xrealloc(a->v, (size_t)(a->n + 2) * sizeof *a->v);
    a->v[a->n++] = value;
    a->v[a->n] = NULL;
}

static bool takes_value(const cli_opt *o)
{
    return o != &help_opt && o->kind != CLI_FLAG && o->kind != CLI_CALL_FLAG;
}

/* The option named by the first len characters of name: its exact name,
 * else the one option that name begins, else NULL (none, or ambiguous). */
static const cli_opt *find_long(const cli_opt *opts, const char *name, size_t len)
{
    const cli_opt *prefix_of = NULL;
    int n_prefix = 0;
    for (const cli_opt *o = opts;; o++) {
        const cli_opt *x = o->name ? o : &help_opt;
        if (!strncmp(x->name, name, len)) {
            if (!x->name[len]) return x;
            prefix_of = x;
            n_prefix++;
        }
        if (x == &help_opt) break;
    }
    return n_prefix == 1 && len > 0 ? prefix_of : NULL;
}

static const cli_opt *find_short(const cli_opt *opts, char c)
{
    for (const cli_opt *o = opts; o->name; o++)
        if (o->short_name == c) return o;
    return c == 'h' ? &help_opt : NULL;
}

static int unknown(const parser *p)
{
    util_clip_buf b;
    return cli_usage_error(p->cmd, "unknown option '%s'", util_clip(p->argv[p->i], &b));
}

static int needs_value(const parser *p)
{
    util_clip_buf b;
    return cli_usage_error(p->cmd, "option '%s' needs a value", util_clip(p->argv[p->i], &b));
}

/* The argument after the current one, taken as a value whatever it looks
 * like (as getopt does: --set -1); NULL at the end. */
static char *next_value(parser *p)
{
    return p->i + 1 < p->argc ? p->argv[++p->i] : NULL;
}

/* "LABEL VALUE: EXPECTED", LABEL being -c or --name. */
static int bad_value(const char *cmd, const cli_opt *o, const char *value, const char *expected)
{
    util_clip_buf b;
    char label[64];
    if (o->short_name) snprintf(label, sizeof label, "-%c", o->short_name);
    else snprintf(label, sizeof label, "--%s", o->name);
    return cli_usage_error(cmd, "%s %s: %s", label, util_clip(value, &b),
                           o->expect ? o->expect : expected);
}

static bool read_long(const char *text, long long *out)
{
    char *end;
    *out = strtoll(text, &end, 10);
    return !*end && end != text;
}

static int take_int(const char *cmd, const cli_opt *o, const char *v)
{
    long long x;
    if (!read_long(v, &x) || (double)x < o->lo || (double)x > o->hi) {
        char *expected = util_xasprintf("expected %d .. %d", (int)o->lo, (int)o->hi);
        int code = bad_value(cmd, o, v, expected);
        free(expected);
        return code;
    }
    *(int *)o->dest = (int)x;
    return CLI_CONTINUE;
}

static int take_number(const char *cmd, const cli_opt *o, const char *v)
{
    char *end;
    double x = strtod(v, &end);
    if (*end || end == v || !(x >= o->lo && x <= o->hi)) {
        char *expected = util_xasprintf("expected a number in %g .. %g", o->lo, o->hi);
        int code = bad_value(cmd, o, v, expected);
        free(expected);
        return code;
    }
    *(double *)o->dest = x;
    return CLI_CONTINUE;
}

/* A time as --slo takes it (an_parse_seconds): a number of seconds, or with
 * a unit. */
static int take_seconds(const char *cmd, const cli_opt *o, const char *v)
{
    bool unit;
    if (an_parse_seconds(v, o->dest, &unit)) return CLI_CONTINUE;
    return bad_value(cmd, o, v, "expected a time > 0, in seconds or with a unit (0.5, 500ms, 2s, "
                                "250us, 1min, 1h)");
}

static int take_run(const char *cmd, const cli_opt *o, const char *v)
{
    long long id;
    if (!read_long(v, &id) || id < 1) return bad_value(cmd, o, v, "expected a run id (1, 2, ...)");
    *(int64_t *)o->dest = id;
    return CLI_CONTINUE;
}

/* "expected a, b or c", from the choices. */
static int take_choice(const char *cmd, const cli_opt *o, const char *v)
{
    int n = 0;
    for (; o->choices[n]; n++)
        if (!strcmp(v, o->choices[n])) {
            *(int *)o->dest = n;
            return CLI_CONTINUE;
        }
    char *expected = util_xstrdup("expected");
    for (int i = 0; i < n; i++) {
        char *next = util_xasprintf("%s%s%s", expected, i == 0 ? " " : i < n - 1 ? ", " : " or ",
                                    o->choices[i]);
        free(expected);
        expected = next;
    }
    int code = bad_value(cmd, o, v, expected);
    free(expected);
    return code;
}

/* Takes option o with its value v (NULL for a flag). */
static int take(const parser *p, const cli_opt *o, char *v)
{
    if (o == &help_opt) {
        fputs(p->usage, stdout);
        return CLI_EXIT_OK;
    }
    if (o->seen) *o->seen = true;
    switch (o->kind) {
    case CLI_FLAG: *(bool *)o->dest = true; return CLI_CONTINUE;
    case CLI_STRING: *(const char **)o->dest = v; return CLI_CONTINUE;
    case CLI_STRINGS: push(o->dest, v); return CLI_CONTINUE;
    case CLI_INT: return take_int(p->cmd, o, v);
    case CLI_NUMBER: return take_number(p->cmd, o, v);
    case CLI_SECONDS: return take_seconds(p->cmd, o, v);
    case CLI_RUN: return take_run(p->cmd, o, v);
    case CLI_CHOICE: return take_choice(p->cmd, o, v);
    default: return o->call(o, p->cmd, v);
    }
}

/* --name, --name=VALUE or --name VALUE. */
static int take_long(parser *p)
{
    char *name = p->argv[p->i] + 2, *eq = strchr(name, '=');
    const cli_opt *o = find_long(p->opts, name, eq ? (size_t)(eq - name) : strlen(name));
    if (!o || (eq && !takes_value(o))) return unknown(p);
    if (!takes_value(o)) return take(p, o, NULL);
    char *v = eq ? eq + 1 : next_value(p);
    return v ? take(p, o, v) : needs_value(p);
}

/* -c, a cluster of flags -qv, -cVALUE or -c VALUE. */
static int take_short(parser *p)
{
    for (char *c = p->argv[p->i] + 1; *c; c++) {
        const cli_opt *o = find_short(p->opts, *c);
        if (!o) return unknown(p);
        if (takes_value(o)) {
            char *v = c[1] ? c + 1 : next_value(p);
            return v ? take(p, o, v) : needs_value(p);
        }
        int code = take(p, o, NULL);
        if (code != CLI_CONTINUE) return code;
    }
    return CLI_CONTINUE;
}

int cli_parse(const char *cmd, const char *usage, const cli_opt *opts, int argc, char **argv,
              cli_args *positional)
{
    parser p = {.cmd = cmd, .usage = usage, .opts = opts, .argc = argc, .argv = argv};
    *positional = (cli_args){.v = argv + 1};
    bool options = true;
    for (p.i = 1; p.i < argc; p.i++) {
        char *a = argv[p.i];
        if (!options || a[0] != '-' || !a[1]) {
            /* slot 1 + n is at or before i: already read */
            argv[1 + positional->n++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            options = false;
            continue;
        }
        int code = a[1] == '-' ? take_long(&p) : take_short(&p);
        if (code != CLI_CONTINUE) return code;
    }
    return CLI_CONTINUE;
}

/* ---- the options every report shares ---- */

static int take_slo(cli_view *v, const char *cmd, const char *value)
{
    util_diag d;
    util_diag_init(&d);
    util_clip_buf b;
    int code = CLI_CONTINUE;
    if (an_options_add_slo(&v->what_if, value, &d))
        code = cli_usage_error(cmd, "%s", d.count ? d.msgs[0] : util_clip(value, &b));
    util_diag_fini(&d);
    return code;
}

int cli_view_option(const cli_opt *opt, const char *cmd, const char *value)
{
    cli_view *v = opt->dest;
    util_clip_buf b;
    if (!strcmp(opt->name, "json")) v->format = CLI_JSON;
    else if (!strcmp(opt->name, "csv")) v->format = CLI_CSV;
    else if (!strcmp(opt->name, "markdown")) v->format = CLI_MARKDOWN;
    else if (!strcmp(opt->name, "definitions")) v->definitions = true;
    else if (!strcmp(opt->name, "by") && !strcmp(value, "class")) v->by_class = true;
    else if (!strcmp(opt->name, "by") && !strcmp(value, "replica")) v->what_if.by_replica = true;
    else if (!strcmp(opt->name, "by") && !strcmp(value, "tenant")) v->what_if.by_tenant = true;
    else if (!strcmp(opt->name, "by") && !strcmp(value, "tier")) v->what_if.by_tier = true;
    else if (!strcmp(opt->name, "by") && !strcmp(value, "model")) v->what_if.by_model = true;
    else if (!strcmp(opt->name, "by") && !strcmp(value, "session")) v->what_if.by_session = true;
    else if (!strcmp(opt->name, "by"))
        return cli_usage_error(cmd, "--by %s: expected class, replica, model, tenant, tier or "
                                    "session",
                               util_clip(value, &b));
    else return take_slo(v, cmd, value);
    return CLI_CONTINUE;
}

int64_t cli_parse_run(const char *cmd, const char *value)
{
    int64_t id = 0;
    cli_opt run = {.name = "run", .kind = CLI_RUN, .dest = &id};
    return take_run(cmd, &run, value) == CLI_CONTINUE ? id : 0;
}
