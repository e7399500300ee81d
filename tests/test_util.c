/*
 * test_util.c: the base library -- diagnostics, typo suggestions, JSON
 * parsing with locations, --set overrides, the schema validator, and random
 * streams.
 */
#include <stdlib.h>

#include "tap.h"
#include "util.h"

static const char *const colours[] = {"red", "green", "blue", NULL};

static const util_field inner[] = {
    {.key = "size", .type = UTIL_T_INTEGER, .def = "3", .min = 1, .max = 10, .doc = "n"},
    {0},
};

static const util_field a_fields[] = {
    {.key = "x", .type = UTIL_T_NUMBER, .flags = UTIL_REQUIRED, .min = 0, .max = 1,
     .doc = "x"},
    {0},
};

static const util_variant variants[] = {{"a", a_fields, "a"}, {"b", NULL, "b"}, {0}};
static const util_union shape = {.tag = "kind", .def = "b", .variants = variants};

static const util_field fields[] = {
    {.key = "rate", .type = UTIL_T_NUMBER, .min = 0, .max = 100, .flags = UTIL_MIN_EXCLUSIVE,
     .def = "5", .doc = "r"},
    {.key = "count", .type = UTIL_T_INTEGER, .min = 1, .max = 10, .flags = UTIL_REQUIRED,
     .doc = "c"},
    {.key = "colour", .type = UTIL_T_STRING, .choices = colours, .doc = "c"},
    {.key = "flag", .type = UTIL_T_BOOL, .def = "false", .doc = "f"},
    {.key = "box", .type = UTIL_T_OBJECT, .sub = inner, .doc = "b"},
    {.key = "shape", .type = UTIL_T_UNION, .un = &shape, .def = "{}", .doc = "s"},
    {.key = "coef", .type = UTIL_T_NUMBERS, .min = 3, .max = 3, .doc = "three numbers"},
    {0},
};

/* Validates text and returns the messages joined by '\n'. */
static char *validate(const char *text, cJSON **out)
{
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse(text);
    util_schema_apply(fields, o, "", NULL, &d);
    size_t n = 1;
    for (int i = 0; i < d.count; i++) n += strlen(d.msgs[i]) + 1;
    char *all = calloc(1, n);
    for (int i = 0; i < d.count; i++) {
        strcat(all, d.msgs[i]);
        strcat(all, "\n");
    }
    util_diag_fini(&d);
    if (out) *out = o;
    else cJSON_Delete(o);
    return all;
}

static void test_schema(void)
{
    cJSON *o;
    char *m = validate("{\"count\": 2}", &o);
    is_str(m, "", "a valid object has no errors");
    ok(util_json_number(o, "rate", -1) == 5, "default number filled in");
    ok(cJSON_IsFalse(cJSON_GetObjectItem(o, "flag")), "default bool filled in");
    ok(util_json_number(o, "box.size", -1) == 3, "nested object created with its defaults");
    is_str(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "shape"), "kind")->valuestring, "b",
           "union takes its default variant");
    cJSON_Delete(o);
    free(m);

    m = validate("{\"cout\": 2}", NULL);
    has_str(m, "cout: unknown key (did you mean 'count'?", "misspelt key suggests the right one");
    has_str(m, "count: missing (expected a whole number)", "required key reported as missing");
    free(m);

    m = validate("{\"count\": 2.5, \"rate\": 0, \"colour\": \"bleu\", \"flag\": 1, "
                 "\"box\": {\"size\": 11}, \"shape\": {\"kind\": \"a\", \"x\": 2}}",
                 NULL);
    has_str(m, "count: expected a whole number, got 2.5", "non-integer rejected");
    has_str(m, "rate: 0 is out of range (expected > 0 and <= 100)", "exclusive minimum");
    has_str(m, "colour: unknown value 'bleu' (did you mean 'blue'?", "choices with suggestion");
    has_str(m, "flag: expected true or false, got a number", "bool type");
    has_str(m, "box.size: 11 is out of range (expected >= 1 and <= 10)", "nested path named");
    has_str(m, "shape.x: 2 is out of range", "union variant field checked");
    int lines = 0;
    for (char *p = m; *p; p++) lines += *p == '\n';
    is_int(lines, 6, "every error is collected, not just the first");
    free(m);

    m = validate("{\"count\": 1, \"shape\": {\"kind\": \"c\"}, \"count\": 2}", NULL);
    has_str(m, "shape.kind: unknown kind 'c' (known: a, b)", "unknown union kind lists kinds");
    has_str(m, "count: duplicate key", "duplicate keys are errors");
    free(m);

    m = validate("{\"count\": 1, \"coef\": [1, 2]}", NULL);
    has_str(m, "coef: expected 3 numbers, got 2", "array length checked");
    free(m);
    m = validate("{\"count\": 1, \"coef\": [1, \"x\", 3]}", NULL);
    has_str(m, "coef[1]: expected a number, got a string", "array elements checked");
    free(m);
    m = validate("{\"count\": 1, \"coef\": [1, 2.5, -3]}", NULL);
    is_str(m, "", "a good array passes");
    free(m);

    m = validate("{\"count\": 1, \"shape\": {\"kind\": \"b\", \"x\": 0.5}}", NULL);
    has_str(m, "shape.x: unknown key", "a key of another variant is not allowed");
    free(m);
}

static void test_json(void)
{
    util_diag d;
    util_diag_init(&d);
    cJSON *o = NULL;
    ok(util_json_parse("{\"a\": 1,\n  \"b\": [1, 2,]\n}", "f.json", &o, &d) == UTIL_EINPUT,
       "malformed JSON is an input error");
    has_str(d.count ? d.msgs[0] : "", "f.json:2:14:", "its line and column are named");
    util_diag_clear(&d);

    ok(util_json_parse("{\"a\": {\"b\": 1}, \"l\": [{\"x\": 1}]}", "g", &o, &d) == 0, "parse");
    ok(util_json_set(o, "a.b=2.5", &d) == 0 && util_json_number(o, "a.b", 0) == 2.5,
       "--set replaces a number");
    ok(util_json_set(o, "a.c.d=true", &d) == 0 && cJSON_IsTrue(util_json_get(o, "a.c.d")),
       "--set creates missing objects");
    ok(util_json_set(o, "a.s=h100-sxm", &d) == 0 &&
           !strcmp(util_json_get(o, "a.s")->valuestring, "h100-sxm"),
       "a value that is not JSON is a string");
    ok(util_json_set(o, "l.0.x=7", &d) == 0 && util_json_number(o, "l.0.x", 0) == 7,
       "array elements by index");
    ok(util_json_set(o, "a.b.c=1", &d) == UTIL_EINPUT, "cannot descend into a number");
    has_str(d.count ? d.msgs[0] : "", "'b' is not an object", "and says why");
    ok(util_json_set(o, "novalue", &d) == UTIL_EINPUT, "PATH=VALUE is required");
    cJSON_Delete(o);
    util_diag_fini(&d);
}

static void test_misc(void)
{
    const char *words[] = {"arrival", "prompt_tokens", "output_tokens", NULL};
    is_str(util_closest("arival", words), "arrival", "one deletion is a typo");
    is_str(util_closest("output_tokesn", words), "output_tokens", "a swap is a typo");
    ok(util_closest("zzz", words) == NULL, "an unrelated word gets no suggestion");

    gsl_rng *a = util_rng_stream(42, 1), *b = util_rng_stream(42, 1);
    gsl_rng *c = util_rng_stream(42, 2), *e = util_rng_stream(43, 1);
    bool same = true, diff_stream = false, diff_seed = false;
    for (int i = 0; i < 100; i++) {
        unsigned long x = gsl_rng_get(a), y = gsl_rng_get(b);
        same &= x == y;
        diff_stream |= x != gsl_rng_get(c);
        diff_seed |= x != gsl_rng_get(e);
    }
    ok(same, "a stream is reproducible from (seed, id)");
    ok(diff_stream, "another stream id gives other numbers");
    ok(diff_seed, "another seed gives other numbers");
    gsl_rng_free(a);
    gsl_rng_free(b);
    gsl_rng_free(c);
    gsl_rng_free(e);
}

int main(void)
{
    test_schema();
    test_json();
    test_misc();
    return tap_done();
}
