/*
 * schema.c: the table-driven validator.  One walk over a cJSON object checks
 * every key against its util_field, collects all errors (so a user fixes a
 * scenario in one pass, not one error per run), suggests the closest key for
 * a misspelt one, and writes defaults into the object so that what remains is
 * the effective configuration stored with the run.
 */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LISTS 3
#define MAX_KEYS 128

/* path.key, the key cut short if it is long (an unknown key is the user's
 * text; known keys are short and kept whole). */
static char *join(const char *path, const char *key)
{
    util_clip_buf cb;
    key = util_clip(key, &cb);
    return *path ? util_xasprintf("%s.%s", path, key) : util_xstrdup(key);
}

static const char *kind_of(const cJSON *v)
{
    /* JSON has no infinity: cJSON reads 1e309 as one, a number out of range */
    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
        return v->valuedouble > 0 ? "a number out of range (beyond 1.8e308, the largest double)"
                                  : "a number out of range (beyond -1.8e308, the lowest double)";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "an invalid value";
}

static const char *expected(const util_field *f)
{
    switch (f->type) {
    case UTIL_T_NUMBER: return (f->flags & UTIL_INF_OK) ? "a number or \"inf\"" : "a number";
    case UTIL_T_INTEGER: return f->choices ? "a whole number or a name" : "a whole number";
    case UTIL_T_STRING: return "a string";
    case UTIL_T_BOOL: return "true or false";
    case UTIL_T_OBJECT: return "an object";
    case UTIL_T_UNION: return f->un->scalar ? "a number or an object" : "an object";
    case UTIL_T_NAME_OR_OBJECT: return "a name or an object";
    case UTIL_T_NUMBERS: return "an array of numbers";
    case UTIL_T_LIST: return "an array of objects";
    case UTIL_T_STRINGS: return "an array of names";
    }
    return "?";
}

/* "a, b, c" from a NULL-terminated list. */
static char *list_words(const char *const *words)
{
    size_t n = 1;
    for (const char *const *w = words; *w; w++) n += strlen(*w) + 2;
    char *s = util_xmalloc(n);
    s[0] = '\0';
    for (const char *const *w = words; *w; w++) {
        if (w != words) strcat(s, ", ");
        strcat(s, *w);
    }
    return s;
}

int util_diag_unknown(util_diag *d, const char *path, const char *what, const char *word,
                      const char *const *known)
{
    char *near = util_did_you_mean(word, known);
    char *all = list_words(known);
    /* A key's path already names it; a value or an id is quoted. */
    util_clip_buf cb;
    char *subject = strcmp(what, "key") ? util_xasprintf("%s '%s'", what, util_clip(word, &cb))
                                        : util_xstrdup(what);
    if (near)
        util_diag_add(d, "%s: unknown %s (%s known: %s)", path, subject, near, all);
    else
        util_diag_add(d, "%s: unknown %s (known: %s)", path, subject, all);
    free(near);
    free(subject);
    free(all);
    return UTIL_EINPUT;
}

/* The unit after a range, so that a figure typed in the wrong unit (500
 * for a 0.5 s TTFT, 864 GB/s as TB/s) says which unit was meant. */
static const char *unit_words(const util_field *f)
{
    if (!f->unit) return "";
    if (!strcmp(f->unit, "s")) return " seconds";
    if (!strcmp(f->unit, "1/s")) return " per second";
    return NULL;
}

static int check_range(const util_field *f, double v, const char *path, util_diag *d)
{
    if (!(f->min < f->max)) return UTIL_OK;
    bool low = (f->flags & UTIL_MIN_EXCLUSIVE) ? v <= f->min : v < f->min;
    if (!low && v <= f->max) return UTIL_OK;
    const char *words = unit_words(f);
    return util_diag_add(d, "%s: %g is out of range (expected %s %g and <= %g%s%s)", path, v,
                         (f->flags & UTIL_MIN_EXCLUSIVE) ? ">" : ">=", f->min, f->max,
                         words ? words : " ", words ? "" : f->unit);
}

static int apply_union(const util_union *un, cJSON *obj, const char *path, void *ctx,
                       util_diag *d);

/* For arrays the range bounds the length, when max > 0. */
static int check_length(const util_field *f, int n, const char *what, const char *path,
                        util_diag *d)
{
    if (f->max <= 0 || (n >= f->min && n <= f->max)) return UTIL_OK;
    if (f->min == f->max)
        return util_diag_add(d, "%s: expected %g %s, got %d", path, f->min, what, n);
    return util_diag_add(d, "%s: expected %g to %g %s, got %d", path, f->min, f->max, what, n);
}

/* An array of finite numbers (a check hook can bound the values). */
static int check_numbers(const util_field *f, const cJSON *v, const char *path, util_diag *d)
{
    if (!cJSON_IsArray(v))
        return util_diag_add(d, "%s: expected an array of numbers, got %s", path, kind_of(v));
    int n = cJSON_GetArraySize(v), i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++)
        if (cJSON_IsNumber(e) && !isfinite(e->valuedouble))
            return util_diag_add(d, "%s[%d]: %s", path, i, kind_of(e));
        else if (!cJSON_IsNumber(e))
            return util_diag_add(d, "%s[%d]: expected a number, got %s", path, i, kind_of(e));
    return check_length(f, n, "numbers", path, d);
}

/* An array of names, each one of f->choices and none twice. */
static int check_strings(const util_field *f, const cJSON *v, const char *path, util_diag *d)
{
    if (!cJSON_IsArray(v))
        return util_diag_add(d, "%s: expected an array of names, got %s", path, kind_of(v));
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        char *p = util_xasprintf("%s[%d]", path, i);
        int rc = UTIL_OK;
        if (!cJSON_IsString(e)) {
            rc = util_diag_add(d, "%s: expected a string, got %s", p, kind_of(e));
        } else if (f->choices) {
            const char *const *c = f->choices;
            while (*c && strcmp(*c, e->valuestring)) c++;
            if (!*c) rc = util_diag_unknown(d, p, "value", e->valuestring, f->choices);
        }
        for (const cJSON *b = v->child; !rc && b != e; b = b->next)
            if (!strcmp(b->valuestring, e->valuestring))
                rc = util_diag_add(d, "%s: '%s' is given twice", p, e->valuestring);
        free(p);
        if (rc) return rc;
    }
    return check_length(f, i, "names", path, d);
}

/* An array of objects, each validated against f->sub at "path[i]". */
static int check_list(const util_field *f, cJSON *v, const char *path, void *ctx, util_diag *d)
{
    if (!cJSON_IsArray(v))
        return util_diag_add(d, "%s: expected an array of objects, got %s", path, kind_of(v));
    int rc = check_length(f, cJSON_GetArraySize(v), "objects", path, d), i = 0;
    for (cJSON *e = v->child; e; e = e->next, i++) {
        char *p = util_xasprintf("%s[%d]", path, i);
        if (!cJSON_IsObject(e)) rc = util_diag_add(d, "%s: expected an object, got %s", p, kind_of(e));
        else if (util_schema_apply(f->sub, e, p, ctx, d)) rc = UTIL_EINPUT;
        free(p);
    }
    return rc;
}

/* An INTEGER with choices takes one of their names instead of a number
 * (a class's priority: a tier's name or vLLM's integer); the reader maps
 * the name. */
static int check_named_integer(const util_field *f, const cJSON *v, const char *path,
                               util_diag *d)
{
    for (const char *const *c = f->choices; *c; c++)
        if (!strcmp(*c, v->valuestring)) return UTIL_OK;
    return util_diag_unknown(d, path, "value", v->valuestring, f->choices);
}

static int check_value(const util_field *f, cJSON *v, const char *path, void *ctx, util_diag *d)
{
    switch (f->type) {
    case UTIL_T_NUMBER:
    case UTIL_T_INTEGER:
        if (f->type == UTIL_T_INTEGER && f->choices && cJSON_IsString(v))
            return check_named_integer(f, v, path, d);
        if ((f->flags & UTIL_INF_OK) && cJSON_IsString(v)) {
            util_clip_buf cb;
            if (!strcmp(v->valuestring, "inf")) break;
            return util_diag_add(d, "%s: expected %s, got '%s'", path, expected(f),
                                 util_clip(v->valuestring, &cb));
        }
        if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
            return util_diag_add(d, "%s: %s", path, kind_of(v));
        if (!cJSON_IsNumber(v))
            return util_diag_add(d, "%s: expected %s, got %s", path, expected(f), kind_of(v));
        if (f->type == UTIL_T_INTEGER &&
            (v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 9.007e15))
            return util_diag_add(d, "%s: expected a whole number, got %g", path, v->valuedouble);
        if (check_range(f, v->valuedouble, path, d)) return UTIL_EINPUT;
        break;
    case UTIL_T_STRING:
        if (!cJSON_IsString(v))
            return util_diag_add(d, "%s: expected a string, got %s", path, kind_of(v));
        if (f->choices) {
            const char *const *c = f->choices;
            while (*c && strcmp(*c, v->valuestring)) c++;
            if (!*c) return util_diag_unknown(d, path, "value", v->valuestring, f->choices);
        }
        break;
    case UTIL_T_BOOL:
        if (!cJSON_IsBool(v))
            return util_diag_add(d, "%s: expected true or false, got %s", path, kind_of(v));
        break;
    case UTIL_T_OBJECT:
        if (!cJSON_IsObject(v))
            return util_diag_add(d, "%s: expected an object, got %s", path, kind_of(v));
        if (util_schema_apply(f->sub, v, path, ctx, d)) return UTIL_EINPUT;
        break;
    case UTIL_T_UNION:
        if (!cJSON_IsObject(v))
            return util_diag_add(d, "%s: expected %s, got %s", path, expected(f), kind_of(v));
        if (apply_union(f->un, v, path, ctx, d)) return UTIL_EINPUT;
        break;
    case UTIL_T_NUMBERS:
        if (check_numbers(f, v, path, d)) return UTIL_EINPUT;
        break;
    case UTIL_T_LIST:
        if (check_list(f, v, path, ctx, d)) return UTIL_EINPUT;
        break;
    case UTIL_T_STRINGS:
        if (check_strings(f, v, path, d)) return UTIL_EINPUT;
        break;
    case UTIL_T_NAME_OR_OBJECT:
        if (cJSON_IsObject(v)) {
            if (util_schema_apply(f->sub, v, path, ctx, d)) return UTIL_EINPUT;
        } else if (!cJSON_IsString(v)) {
            return util_diag_add(d, "%s: expected a name or an object, got %s", path, kind_of(v));
        }
        break;
    }
    /* Cross-field checks run only on values whose own keys were valid. */
    return f->check ? f->check(v, path, ctx, d) : UTIL_OK;
}

static const util_field *find_field(const util_field *const *lists, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        for (const util_field *f = lists[i]; f && f->key; f++)
            if (!strcmp(f->key, key)) return f;
    return NULL;
}

/* A key the union's chosen variant lacks but others take (rate_per_s under
 * process closed): reported as unknown, in the form "known: ...)" readers
 * of the message parse (plan/sweep.c), and then with the variants it
 * belongs to, since switching the tag leaves it behind.  UTIL_OK when no
 * variant takes it. */
static int misplaced_key(const util_union *un, const util_variant *var, const char *key,
                         const char *const *known, const char *path, util_diag *d)
{
    const char *owners[MAX_KEYS];
    int k = 0;
    for (const util_variant *v = un->variants; v->name && k < MAX_KEYS - 1; v++)
        if (v != var && find_field(&v->fields, 1, key)) owners[k++] = v->name;
    owners[k] = NULL;
    if (!k) return UTIL_OK;
    char *who = list_words(owners), *all = list_words(known);
    util_diag_add(d, "%s: unknown key (known: %s) under %s '%s': a key of %s %s; --unset it "
                     "when switching %s",
                  path, all, un->tag, var->name, un->tag, who, un->tag);
    free(all);
    free(who);
    return UTIL_EINPUT;
}

/* Reports keys that no list allows (a key of another of un's variants as
 * misplaced_key says), and keys given twice (cJSON keeps both, and the
 * second would silently lose). */
static int check_keys(const util_field *const *lists, int n, const char *extra,
                      const util_union *un, const util_variant *var, cJSON *obj,
                      const char *path, util_diag *d)
{
    const char *known[MAX_KEYS + 2];
    int k = 0;
    if (extra) known[k++] = extra;
    for (int i = 0; i < n; i++)
        for (const util_field *f = lists[i]; f && f->key && k < MAX_KEYS; f++) known[k++] = f->key;
    known[k] = NULL;

    int rc = UTIL_OK;
    for (cJSON *c = obj->child; c; c = c->next) {
        char *p = join(path, c->string);
        bool ok = (extra && !strcmp(c->string, extra)) || find_field(lists, n, c->string);
        if (!ok && un && misplaced_key(un, var, c->string, known, p, d)) {
            rc = UTIL_EINPUT;
            free(p);
            continue;
        }
        if (!ok) {
            rc = util_diag_unknown(d, p, "key", c->string, known) ? UTIL_EINPUT : rc;
            free(p);
            continue;
        }
        for (cJSON *e = obj->child; e != c; e = e->next)
            if (!strcmp(e->string, c->string)) {
                rc = util_diag_add(d, "%s: duplicate key", p);
                break;
            }
        free(p);
    }
    return rc;
}

/* Whether an absent optional object is made, with its defaults: only when
 * it has defaults to show and no key it would then be missing (an optional
 * section that needs keys of its own, like cluster.disaggregated, stays
 * absent until given). */
static bool has_defaults(const util_field *fields)
{
    bool any = false;
    for (const util_field *f = fields; f && f->key; f++) {
        if (f->flags & UTIL_REQUIRED) return false;
        any |= f->def || (f->type == UTIL_T_OBJECT && has_defaults(f->sub));
    }
    return any;
}

/* A number given where a union takes one stands for its scalar variant
 * ({"dist": "fixed", "value": N}).  The object takes the number's place in
 * obj, so that the effective scenario shows what the number meant and the
 * variant's own range check judges it. */
static cJSON *expand_scalar(const util_field *f, cJSON *obj, cJSON *v)
{
    if (f->type != UTIL_T_UNION || !f->un->scalar || !cJSON_IsNumber(v)) return v;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, f->un->tag, f->un->scalar);
    cJSON_AddNumberToObject(o, f->un->scalar_key, v->valuedouble);
    cJSON_ReplaceItemInObjectCaseSensitive(obj, f->key, o); /* frees v */
    return o;
}

static int apply_field(const util_field *f, cJSON *obj, const char *path, void *ctx,
                       util_diag *d)
{
    char *p = join(path, f->key);
    cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, f->key);
    int rc = UTIL_OK;
    if (!v && f->def) {
        v = cJSON_Parse(f->def);
        if (!v) { /* a broken default is a programming error, not user input */
            fprintf(stderr, "servesim: bad default for %s: %s\n", p, f->def);
            abort();
        }
        cJSON_AddItemToObject(obj, f->key, v);
    } else if (!v && f->type == UTIL_T_OBJECT && !(f->flags & UTIL_REQUIRED) &&
               has_defaults(f->sub)) {
        v = cJSON_AddObjectToObject(obj, f->key); /* so nested defaults appear */
    }
    if (!v) {
        if (f->flags & UTIL_REQUIRED)
            rc = util_diag_add(d, "%s: missing (expected %s)", p, expected(f));
    } else {
        rc = check_value(f, expand_scalar(f, obj, v), p, ctx, d);
    }
    free(p);
    return rc;
}

static int apply_lists(const util_field *const *lists, int n, const char *extra,
                       const util_union *un, const util_variant *var, cJSON *obj,
                       const char *path, void *ctx, util_diag *d)
{
    int rc = check_keys(lists, n, extra, un, var, obj, path, d);
    for (int i = 0; i < n; i++)
        for (const util_field *f = lists[i]; f && f->key; f++)
            if (apply_field(f, obj, path, ctx, d)) rc = UTIL_EINPUT;
    return rc;
}

int util_schema_apply(const util_field *fields, cJSON *obj, const char *path, void *ctx,
                      util_diag *d)
{
    const util_field *lists[1] = {fields};
    return apply_lists(lists, 1, NULL, NULL, NULL, obj, path, ctx, d);
}

static const util_variant *find_variant(const util_union *un, const char *name)
{
    for (const util_variant *v = un->variants; v->name; v++)
        if (!strcmp(v->name, name)) return v;
    return NULL;
}

static int apply_union(const util_union *un, cJSON *obj, const char *path, void *ctx,
                       util_diag *d)
{
    cJSON *tag = cJSON_GetObjectItemCaseSensitive(obj, un->tag);
    if (!tag && un->def) tag = cJSON_AddStringToObject(obj, un->tag, un->def);
    const char *names[MAX_KEYS];
    int k = 0;
    for (const util_variant *v = un->variants; v->name && k < MAX_KEYS - 1; v++)
        names[k++] = v->name;
    names[k] = NULL;

    char *p = join(path, un->tag);
    int rc = UTIL_OK;
    const util_variant *var = NULL;
    if (!tag) {
        char *all = list_words(names);
        rc = util_diag_add(d, "%s: missing (one of: %s)", p, all);
        free(all);
    } else if (!cJSON_IsString(tag)) {
        rc = util_diag_add(d, "%s: expected a string, got %s", p, kind_of(tag));
    } else if (!(var = find_variant(un, tag->valuestring))) {
        rc = util_diag_unknown(d, p, un->tag, tag->valuestring, names);
    }
    free(p);
    if (!var) return rc ? rc : UTIL_EINPUT;
    const util_field *lists[2] = {un->common, var->fields};
    return apply_lists(lists, 2, un->tag, un, var, obj, path, ctx, d);
}

int util_schema_apply_union(const util_union *un, cJSON *obj, const char *path, void *ctx,
                            util_diag *d)
{
    if (!cJSON_IsObject(obj))
        return util_diag_add(d, "%s: expected an object, got %s", path, kind_of(obj));
    return apply_union(un, obj, path, ctx, d);
}

/* ---- documentation ---- */

typedef void (*walk_fn)(const char *path, const util_field *f, void *arg);

static void walk(const util_field *fields, const char *prefix, walk_fn fn, void *arg);

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Two variants' fields document as one row: the same key, meaning and rules. */
static bool same_field(const util_field *a, const util_field *b)
{
    return !strcmp(a->key, b->key) && a->type == b->type && a->flags == b->flags &&
           a->min == b->min && a->max == b->max && same_str(a->def, b->def) &&
           same_str(a->doc, b->doc);
}

/* Each key of a union once per meaning, however many variants share it,
 * with the variants that accept it named in its doc line (a key that means
 * something else in another variant -- a trace's optional rate_per_s -- gets
 * its own row). */
static void walk_union(const util_union *un, const char *path, walk_fn fn, void *arg)
{
    walk(un->common, path, fn, arg);
    const util_field *seen[MAX_KEYS];
    int n = 0;
    for (const util_variant *v = un->variants; v->name; v++)
        for (const util_field *f = v->fields; f && f->key; f++) {
            bool dup = false;
            for (int i = 0; i < n; i++) dup |= same_field(seen[i], f);
            if (dup || n == MAX_KEYS) continue;
            seen[n++] = f;
            const char *owners[MAX_KEYS];
            int k = 0;
            for (const util_variant *w = un->variants; w->name; w++)
                for (const util_field *g = w->fields; g && g->key; g++)
                    if (same_field(g, f) && k < MAX_KEYS - 1) owners[k++] = w->name;
            owners[k] = NULL;
            /* the variants without the key at all, where setting it is refused */
            const char *others[MAX_KEYS];
            int m = 0;
            for (const util_variant *w = un->variants; w->name && m < MAX_KEYS - 1; w++)
                if (!find_field(&w->fields, 1, f->key)) others[m++] = w->name;
            others[m] = NULL;
            char *who = list_words(owners), *not = list_words(others);
            char *doc = m ? util_xasprintf("%s (%s: %s; refused under %s)", f->doc ? f->doc : "",
                                           un->tag, who, not)
                          : util_xasprintf("%s (%s: %s)", f->doc ? f->doc : "", un->tag, who);
            free(not);
            util_field one[2] = {*f, {0}};
            one[0].doc = doc;
            walk(one, path, fn, arg);
            free(doc);
            free(who);
        }
}

static void walk_tag(const util_union *un, const char *path, walk_fn fn, void *arg)
{
    const char *names[MAX_KEYS];
    int k = 0;
    for (const util_variant *v = un->variants; v->name && k < MAX_KEYS - 1; v++)
        names[k++] = v->name;
    names[k] = NULL;
    char *tp = join(path, un->tag);
    char *def = un->def ? util_xasprintf("\"%s\"", un->def) : NULL;
    util_field tag = {.key = un->tag, .type = UTIL_T_STRING, .def = def, .choices = names,
                      .flags = un->def ? 0 : UTIL_REQUIRED, .doc = "which kind"};
    fn(tp, &tag, arg);
    free(def);
    free(tp);
}

static void walk(const util_field *fields, const char *prefix, walk_fn fn, void *arg)
{
    for (const util_field *f = fields; f && f->key; f++) {
        char *p = join(prefix, f->key);
        fn(p, f, arg);
        if (f->sub && (f->type == UTIL_T_OBJECT || f->type == UTIL_T_NAME_OR_OBJECT))
            walk(f->sub, p, fn, arg);
        if (f->type == UTIL_T_LIST) {
            char *items = util_xasprintf("%s[]", p);
            walk(f->sub, items, fn, arg);
            free(items);
        }
        if (f->type == UTIL_T_UNION) {
            walk_tag(f->un, p, fn, arg);
            walk_union(f->un, p, fn, arg);
        }
        free(p);
    }
}

static void doc_row(const char *path, const util_field *f, void *arg)
{
    FILE *out = arg;
    char range[96] = "";
    if ((f->type == UTIL_T_NUMBERS || f->type == UTIL_T_LIST || f->type == UTIL_T_STRINGS) &&
        f->max > 0)
        snprintf(range, sizeof range, f->min == f->max ? "%g items" : "%g to %g items", f->min,
                 f->max);
    if ((f->type == UTIL_T_NUMBER || f->type == UTIL_T_INTEGER) && f->min < f->max)
        snprintf(range, sizeof range, "%s %g .. %g", (f->flags & UTIL_MIN_EXCLUSIVE) ? ">" : "",
                 f->min, f->max);
    if (f->choices) {
        char *all = list_words(f->choices);
        snprintf(range, sizeof range, "%s", all);
        free(all);
    }
    fprintf(out, "| `%s` | %s | %s | %s | %s | %s%s%s |\n", path, expected(f),
            f->unit ? f->unit : "", f->def ? f->def : ((f->flags & UTIL_REQUIRED) ? "required" : ""),
            range, f->doc ? f->doc : "", f->conflicts ? "; conflicts with " : "",
            f->conflicts ? f->conflicts : "");
}

void util_schema_doc(const util_field *fields, const char *prefix, FILE *out)
{
    fprintf(out, "| key | type | unit | default | range | meaning |\n");
    fprintf(out, "|---|---|---|---|---|---|\n");
    walk(fields, prefix, doc_row, out);
}

typedef struct unit_query {
    const char *path;
    const char *unit;
} unit_query;

static void unit_of(const char *path, const util_field *f, void *arg)
{
    unit_query *q = arg;
    if (!q->unit && f->unit && !strcmp(path, q->path)) q->unit = f->unit;
}

const char *util_schema_unit(const util_field *fields, const char *path)
{
    unit_query q = {path, NULL};
    walk(fields, "", unit_of, &q);
    return q.unit;
}
