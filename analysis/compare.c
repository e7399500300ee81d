/*
 * compare.c: two stored runs side by side.  Both the stored scenarios and
 * the reports are flattened to dotted paths and matched path by path, so a
 * new report key or scenario section is compared without code here knowing
 * of it.  The comparison is a cJSON object (the `compare --json` contract);
 * the text form is printed from that object alone.
 */
#include "an.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void add_num(cJSON *o, const char *key, double v)
{
    if (isnan(v)) cJSON_AddNullToObject(o, key);
    else cJSON_AddNumberToObject(o, key, v);
}

/* ---- flattening ---- */

/* An empty object or array is a leaf of its own: "[]" against an absent key
 * is a difference worth listing. */
static void flatten_into(const cJSON *item, const char *path, cJSON *out)
{
    bool array = cJSON_IsArray(item);
    if ((!cJSON_IsObject(item) && !array) || !item->child) {
        cJSON_AddItemToObject(out, path, cJSON_Duplicate(item, true));
        return;
    }
    int i = 0;
    for (const cJSON *c = item->child; c; c = c->next, i++) {
        char *sub = array   ? util_xasprintf("%s[%d]", path, i)
                    : *path ? util_xasprintf("%s.%s", path, c->string)
                            : util_xstrdup(c->string);
        flatten_into(c, sub, out);
        free(sub);
    }
}

cJSON *an_json_flatten(const cJSON *root)
{
    cJSON *out = cJSON_CreateObject();
    flatten_into(root, "", out);
    return out;
}

/* Calls fn for every path of a, then for each path only b has (a's value
 * NULL), so the listing follows A's order and ends with B's additions. */
typedef void pair_fn(cJSON *list, const char *path, const cJSON *va, const cJSON *vb);

static void each_path(const cJSON *fa, const cJSON *fb, pair_fn *fn, cJSON *list)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, fa) {
        fn(list, v->string, v, cJSON_GetObjectItemCaseSensitive(fb, v->string));
    }
    cJSON_ArrayForEach(v, fb) {
        if (!cJSON_GetObjectItemCaseSensitive(fa, v->string)) fn(list, v->string, NULL, v);
    }
}

/* ---- the two lists ---- */

/* A scenario key that differs; an absent side has no "a" or "b". */
static void add_change(cJSON *list, const char *path, const cJSON *va, const cJSON *vb)
{
    if (va && vb && cJSON_Compare(va, vb, true)) return;
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "path", path);
    if (va) cJSON_AddItemToObject(c, "a", cJSON_Duplicate(va, true));
    if (vb) cJSON_AddItemToObject(c, "b", cJSON_Duplicate(vb, true));
    cJSON_AddItemToArray(list, c);
}

static bool is_metric(const cJSON *v)
{
    return cJSON_IsNumber(v) || cJSON_IsNull(v);
}

static double value_of(const cJSON *v)
{
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* One metric: nothing measured (null) or absent on either side makes the
 * difference null; so does A = 0 for the relative one, which has no scale. */
static void add_metric(cJSON *list, const char *path, const cJSON *va, const cJSON *vb)
{
    if (!is_metric(va) && !is_metric(vb)) return; /* run.status: not a number */
    double a = value_of(va), b = value_of(vb);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "path", path);
    add_num(m, "a", a);
    add_num(m, "b", b);
    add_num(m, "diff", b - a);
    add_num(m, "rel", a != 0 ? 100 * (b - a) / fabs(a) : NAN);
    cJSON_AddItemToArray(list, m);
}

static cJSON *diff_list(const cJSON *a, const cJSON *b, pair_fn *fn)
{
    cJSON *fa = an_json_flatten(a), *fb = an_json_flatten(b);
    cJSON *list = cJSON_CreateArray();
    each_path(fa, fb, fn, list);
    cJSON_Delete(fa);
    cJSON_Delete(fb);
    return list;
}

/* ---- one side ---- */

typedef struct side {
    cJSON *scenario;
    an_report r;
} side;

/* The stored effective scenario, read first so that a missing run is
 * reported with its file, which an_report_compute does not know. */
static int load_scenario(const an_run_ref *ref, side *s, util_diag *d)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(ref->db, "SELECT scenario FROM runs WHERE id = ?", -1, &st, NULL) !=
        SQLITE_OK)
        return util_diag_fail(d, "%s: cannot read runs: %s", ref->file, sqlite3_errmsg(ref->db));
    sqlite3_bind_int64(st, 1, ref->run);
    int rc = UTIL_OK;
    if (sqlite3_step(st) != SQLITE_ROW)
        rc = util_diag_add(d, "%s: no run with id %lld", ref->file, (long long)ref->run);
    else if (!(s->scenario = cJSON_Parse((const char *)sqlite3_column_text(st, 0))))
        rc = util_diag_add(d, "%s: run %lld: stored scenario is not JSON", ref->file,
                           (long long)ref->run);
    sqlite3_finalize(st);
    return rc;
}

static int load_side(const an_run_ref *ref, side *s, util_diag *d)
{
    int rc = load_scenario(ref, s, d);
    return rc ? rc : an_report_compute(ref->db, ref->run, &s->r, d);
}

static void side_fini(side *s)
{
    cJSON_Delete(s->scenario);
    an_report_fini(&s->r);
}

/* The report as JSON, less what says nothing of the simulated system: the
 * wall time, and the id and name that the header shows instead. */
static cJSON *report_json(const an_report *r, bool by_class)
{
    cJSON *o = an_report_json(r, by_class);
    cJSON *run = cJSON_GetObjectItemCaseSensitive(o, "run");
    const char *drop[] = {"wall_time_s", "id", "name"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(run, drop[i]);
    return o;
}

static cJSON *side_json(const an_run_ref *ref, const side *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", ref->file);
    cJSON_AddNumberToObject(o, "run", (double)ref->run);
    cJSON_AddStringToObject(o, "name", s->r.name);
    return o;
}

/* Classes are compared when either run defines them; two runs without
 * would otherwise list every metric twice, once as class "default". */
static cJSON *comparison(const an_run_ref *a, const side *sa, const an_run_ref *b, const side *sb)
{
    bool by_class = sa->r.has_classes || sb->r.has_classes;
    cJSON *ra = report_json(&sa->r, by_class), *rb = report_json(&sb->r, by_class);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "a", side_json(a, sa));
    cJSON_AddItemToObject(o, "b", side_json(b, sb));
    cJSON_AddItemToObject(o, "scenario", diff_list(sa->scenario, sb->scenario, add_change));
    cJSON_AddItemToObject(o, "metrics", diff_list(ra, rb, add_metric));
    cJSON_Delete(ra);
    cJSON_Delete(rb);
    return o;
}

int an_compare(const an_run_ref *a, const an_run_ref *b, cJSON **out, util_diag *d)
{
    side sa = {0}, sb = {0};
    int rc = load_side(a, &sa, d);
    if (!rc) rc = load_side(b, &sb, d);
    if (!rc) *out = comparison(a, &sa, b, &sb);
    side_fini(&sa);
    side_fini(&sb);
    return rc;
}

/* ---- text ---- */

/* Units by the end of a key; longer suffixes first ("_per_s" ends in "_s").
 * Fractions print as percentages, so their differences are in points. */
static const struct unit {
    const char *suffix, *name;
    double scale;
} units[] = {
    {"_per_s_per_user", "/s", 1}, {"_per_s", "/s", 1}, {"_s", "s", 1},
    {"_j", "J", 1}, {"_wh", "Wh", 1}, {"_w", "W", 1},
    {"_fraction", "%", 100}, {"attainment", "%", 100}, {"mfu", "%", 100}, {"mbu", "%", 100},
};

static const struct unit *key_unit(const char *key, size_t len)
{
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t n = strlen(units[i].suffix);
        if (len >= n && !memcmp(key + len - n, units[i].suffix, n)) return &units[i];
    }
    return NULL;
}

/* The unit a metric's key names, else its section's ("ttft_s.p99"); never
 * higher, so that a class named "x_s" does not make its counts seconds. */
static const struct unit *unit_of(const char *path)
{
    static const struct unit none = {"", "", 1};
    const char *end = path + strlen(path), *dot = strrchr(path, '.');
    const char *key = dot ? dot + 1 : path;
    const struct unit *u = key_unit(key, (size_t)(end - key));
    if (!u && dot) {
        const char *parent = dot;
        while (parent > path && parent[-1] != '.') parent--;
        u = key_unit(parent, (size_t)(dot - parent));
    }
    return u ? u : &none;
}

/* Whole numbers (counts, seeds) in full, the rest to six digits. */
static void fmt_num(char *buf, size_t n, double v, bool sign)
{
    if (isnan(v)) snprintf(buf, n, "-");
    else if (v == 0) snprintf(buf, n, "0"); /* not "+0" */
    else if (v == floor(v) && fabs(v) < 1e15) snprintf(buf, n, sign ? "%+.0f" : "%.0f", v);
    else snprintf(buf, n, sign ? "%+.6g" : "%.6g", v);
}

static void print_side(FILE *out, const char *label, const cJSON *s)
{
    fprintf(out, "%s: %s run %lld \"%s\"\n", label,
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "file")),
            (long long)util_json_number(s, "run", 0),
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "name")));
}

static void print_value(FILE *out, const cJSON *v)
{
    char *text = v ? cJSON_PrintUnformatted(v) : NULL;
    fputs(text ? text : "(absent)", out);
    free(text);
}

static void print_scenario(FILE *out, const cJSON *list)
{
    int n = cJSON_GetArraySize(list);
    if (n == 0) {
        fprintf(out, "scenario: identical\n");
        return;
    }
    fprintf(out, "scenario: %d key%s differ%s\n", n, n == 1 ? "" : "s", n == 1 ? "s" : "");
    const cJSON *c;
    cJSON_ArrayForEach(c, list) {
        fprintf(out, "  %s: ", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "path")));
        print_value(out, cJSON_GetObjectItemCaseSensitive(c, "a"));
        fputs(" -> ", out);
        print_value(out, cJSON_GetObjectItemCaseSensitive(c, "b"));
        fputs("\n", out);
    }
}

/* A metric differs when its difference is not 0: a value against null does. */
static bool differs(const cJSON *m)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, "a");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(m, "b");
    return cJSON_IsNull(a) != cJSON_IsNull(b) || util_json_number(m, "diff", 0) != 0;
}

static void print_metric(FILE *out, const cJSON *m, int width)
{
    const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "path"));
    const struct unit *u = unit_of(path);
    char a[32], b[32], diff[32], rel[32];
    fmt_num(a, sizeof a, u->scale * util_json_number(m, "a", NAN), false);
    fmt_num(b, sizeof b, u->scale * util_json_number(m, "b", NAN), false);
    fmt_num(diff, sizeof diff, u->scale * util_json_number(m, "diff", NAN), true);
    double r = util_json_number(m, "rel", NAN);
    if (isnan(r)) snprintf(rel, sizeof rel, "-");
    else snprintf(rel, sizeof rel, "%+.2f%%", r);
    fprintf(out, "  %-*s %-4s %14s %14s %14s %10s\n", width, path, u->name, a, b, diff, rel);
}

static void print_metrics(FILE *out, const cJSON *list, bool all)
{
    int width = (int)strlen("metric"), n_diff = 0, n = cJSON_GetArraySize(list);
    const cJSON *m;
    cJSON_ArrayForEach(m, list) {
        bool diff = differs(m);
        n_diff += diff;
        int len = (int)strlen(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "path")));
        if ((all || diff) && len > width) width = len;
    }
    fprintf(out, "metrics: %d differ, %d equal%s\n", n_diff, n - n_diff,
            all || n_diff == n ? "" : " (--all lists them)");
    if (!all && n_diff == 0) return;
    fprintf(out, "  %-*s %-4s %14s %14s %14s %10s\n", width, "metric", "unit", "A", "B", "B-A",
            "(B-A)/|A|");
    cJSON_ArrayForEach(m, list) {
        if (all || differs(m)) print_metric(out, m, width);
    }
}

void an_compare_print(const cJSON *cmp, bool all, FILE *out)
{
    print_side(out, "A", cJSON_GetObjectItemCaseSensitive(cmp, "a"));
    print_side(out, "B", cJSON_GetObjectItemCaseSensitive(cmp, "b"));
    fputs("\n", out);
    print_scenario(out, cJSON_GetObjectItemCaseSensitive(cmp, "scenario"));
    fputs("\n", out);
    print_metrics(out, cJSON_GetObjectItemCaseSensitive(cmp, "metrics"), all);
}
