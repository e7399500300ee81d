/*
 * test_util.c: the base library -- diagnostics, typo suggestions, JSON
 * parsing with locations, --set overrides, the schema validator, and random
 * streams.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
    is_near(util_json_number(o, "rate", -1), 5, 0, "default number filled in");
    ok(cJSON_IsFalse(cJSON_GetObjectItem(o, "flag")), "default bool filled in");
    is_near(util_json_number(o, "box.size", -1), 3, 0, "nested object created with its defaults");
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
    is_int(util_json_parse("{\"a\": 1,\n  \"b\": [1, 2,]\n}", "f.json", &o, &d), UTIL_EINPUT,
           "malformed JSON is an input error");
    has_str(d.count ? d.msgs[0] : "", "f.json:2:14:", "its line and column are named");
    util_diag_clear(&d);

    is_int(util_json_parse("{\"a\": {\"b\": 1}, \"l\": [{\"x\": 1}]}", "g", &o, &d), 0, "parse");
    is_int(util_json_set(o, "a.b=2.5", &d), 0, "--set replaces a number");
    is_near(util_json_number(o, "a.b", 0), 2.5, 0, "a.b is now 2.5");
    is_int(util_json_set(o, "a.c.d=true", &d), 0, "--set creates missing objects");
    ok(cJSON_IsTrue(util_json_get(o, "a.c.d")), "a.c.d is now true");
    is_int(util_json_set(o, "a.s=h100-sxm", &d), 0, "a value that is not JSON is a string");
    is_str(cJSON_GetStringValue(util_json_get(o, "a.s")), "h100-sxm", "a.s is the string");
    is_int(util_json_set(o, "l.0.x=7", &d), 0, "array elements by index");
    is_near(util_json_number(o, "l.0.x", 0), 7, 0, "l.0.x is now 7");
    is_int(util_json_set(o, "a.b.c=1", &d), UTIL_EINPUT, "cannot descend into a number");
    has_str(d.count ? d.msgs[0] : "", "'b' is not an object", "and says why");
    is_int(util_json_set(o, "novalue", &d), UTIL_EINPUT, "PATH=VALUE is required");
    cJSON_Delete(o);
    util_diag_fini(&d);
}

/* --set indexes are decimal digits naming an existing item, and the
 * bracket notation of `servesim keys` works too. */
static void test_set_indexes(void)
{
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse("{\"l\": [{\"x\": 1}, {\"x\": 2}], \"e\": []}");
    is_int(util_json_set(o, "l.4294967297.x=3", &d), UTIL_EINPUT, "2^32 + 1 is not index 1");
    has_str(d.count ? d.msgs[0] : "",
            "--set l.4294967297.x=3: index 4294967297 is past the end of l (2 items, 0 to 1)",
            "the assignment and the list are named");
    is_near(util_json_number(o, "l.1.x", 0), 2, 0, "and l[1] is untouched");
    util_diag_clear(&d);
    is_int(util_json_set(o, "l.16666666666666666666=4", &d), UTIL_EINPUT,
           "an index past 2^64 is refused, not ignored");
    has_str(d.count ? d.msgs[0] : "", "index 16666666666666666666 is past the end of l",
            "with the index as written");
    util_diag_clear(&d);
    is_int(util_json_set(o, "l.2=5", &d), UTIL_EINPUT, "the index just past the end");
    util_diag_clear(&d);
    is_int(util_json_set(o, "l.-1.x=5", &d), UTIL_EINPUT,
           "signs, spaces and exponents are not indexes");
    ok(util_json_set(o, "l.+1.x=5", &d) != 0, "nor is +1");
    ok(util_json_set(o, "l. 1.x=5", &d) != 0, "nor ' 1'");
    ok(util_json_set(o, "l.1e0.x=5", &d) != 0, "nor 1e0");
    has_str(d.count ? d.msgs[0] : "", "--set l.-1.x=5: l is a list: expected an index (2 items, "
                                      "0 to 1), got '-1'",
            "and say what an index is");
    util_diag_clear(&d);
    is_int(util_json_set(o, "e.0=1", &d), UTIL_EINPUT, "an empty list has no items");
    has_str(d.count ? d.msgs[0] : "", "past the end of e (it is empty)", "and says so");
    util_diag_clear(&d);

    is_int(util_json_set(o, "l[1].x=7", &d), 0, "l[1].x is l.1.x");
    is_near(util_json_number(o, "l.1.x", 0), 7, 0, "l.1.x is now 7");
    is_int(util_json_set(o, "l[0]={\"x\": 9}", &d), 0, "a bracket at the end replaces the item");
    is_near(util_json_number(o, "l.0.x", 0), 9, 0, "l.0.x is now 9");
    is_int(util_json_set(o, "l.01.x=8", &d), 0, "leading zeros are still decimal digits");
    is_near(util_json_number(o, "l.1.x", 0), 8, 0, "l.1.x is now 8");
    static const char *const bad[] = {"l[x].x=1", "l[].x=1", "l[1.x=1", "l[1]x=1", "l..x=1",
                                      "l.=1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        util_diag_clear(&d);
        is_int(util_json_set(o, bad[i], &d), UTIL_EINPUT, "%s is refused, naming the assignment",
               bad[i]);
        is_int(d.count, 1, "%s: one message", bad[i]);
        char *head = util_xasprintf("%.6s", d.count ? d.msgs[0] : "");
        is_str(head, "--set ", "%s: it starts with the assignment", bad[i]);
        free(head);
    }
    cJSON_Delete(o);
    util_diag_fini(&d);
}

/* Echoed input is cut to a readable length; infinite numbers and values
 * in the wrong unit say what is wrong. */
static void test_messages(void)
{
    char *key = util_xmalloc(10000001);
    memset(key, 'k', 10000000);
    key[10000000] = '\0';
    char *json = util_xasprintf("{\"count\": 1, \"%s\": 1}", key);
    char *m = validate(json, NULL);
    ok(strlen(m) < 400, "a 10 MB unknown key makes a short message (%zu bytes)", strlen(m));
    has_str(m, "kkkkkkkkkk...: unknown key", "cut with '...'");
    free(m);
    free(json);
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_CreateObject();
    char *set = util_xasprintf("%s", key);
    util_json_set(o, set, &d);
    is_int(d.count, 1, "a 10 MB --set without '=' is cut short too");
    size_t len = strlen(d.count ? d.msgs[0] : "");
    ok(len < 200, "to %zu bytes", len);
    free(set);
    cJSON_Delete(o);
    util_diag_fini(&d);
    free(key);

    util_clip_buf b;
    is_str(util_clip("short", &b), "short", "short text is left alone");
    is_str(util_clip("tab\there", &b), "tab?here", "control characters become '?'");
    /* 59 ASCII letters then a two-byte character: the cut keeps it whole */
    char text[200];
    memset(text, 'a', 59);
    strcpy(text + 59, "\xc3\xa9" "bcdef");
    const char *c = util_clip(text, &b);
    is_int(strlen(c), 59 + 2 + 3, "60 characters, a UTF-8 character kept whole, then '...'");
    if (strlen(c) >= 59)
        is_str(c + 59, "\xc3\xa9...", "the 60th is the whole character, then '...'");

    m = validate("{\"count\": 1, \"rate\": 1e309}", NULL);
    has_str(m, "rate: a number out of range (beyond 1.8e308, the largest double)",
            "1e309 is not 'a number' but out of range");
    free(m);
    m = validate("{\"count\": 1, \"rate\": -1e309, \"coef\": [1, 1e400, 2]}", NULL);
    has_str(m, "rate: a number out of range (beyond -1.8e308, the lowest double)", "-1e309");
    has_str(m, "coef[1]: a number out of range (beyond 1.8e308", "and in an array");
    free(m);
}

/* A range error says the unit the key is in. */
static const util_field unit_fields[] = {
    {.key = "ttft_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 300,
     .flags = UTIL_MIN_EXCLUSIVE, .doc = "t"},
    {.key = "bw", .type = UTIL_T_NUMBER, .unit = "TB/s", .min = 0.05, .max = 50, .doc = "b"},
    {0},
};

static void test_units(void)
{
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Parse("{\"ttft_s\": 500, \"bw\": 864}");
    util_schema_apply(unit_fields, o, "", NULL, &d);
    is_int(d.count, 2, "both out of range");
    if (d.count == 2) {
        is_str(d.msgs[0], "ttft_s: 500 is out of range (expected > 0 and <= 300 seconds)",
               "seconds are named: 500 was milliseconds");
        is_str(d.msgs[1], "bw: 864 is out of range (expected >= 0.05 and <= 50 TB/s)",
               "and TB/s: 864 was GB/s");
    }
    cJSON_Delete(o);
    util_diag_clear(&d);
    char *text = NULL;
    char big[] = "/tmp/servesim-util-big-XXXXXX";
    int fd = mkstemp(big);
    ok(fd >= 0 && ftruncate(fd, (off_t)UTIL_MAX_FILE_BYTES + 4096) == 0, "a 64 MiB + 4 KiB file");
    if (fd >= 0) close(fd);
    is_int(util_read_file(big, &text, NULL, &d), UTIL_EINPUT,
           "util_read_file stops at 64 MiB (a trace as a scenario)");
    ok(!text, "and returns no text");
    has_str(d.count ? d.msgs[0] : "", "larger than 64 MiB", "and says so");
    unlink(big);
    util_diag_clear(&d);
    is_int(util_read_file("/dev/zero", &text, NULL, &d), UTIL_EINPUT, "/dev/zero is refused");
    has_str(d.count ? d.msgs[0] : "", "/dev/zero: not a regular file", "as not a regular file");
    util_diag_clear(&d);
    char fifo[] = "/tmp/servesim-util-fifo-XXXXXX";
    fd = mkstemp(fifo);
    if (fd >= 0) close(fd);
    unlink(fifo);
    is_int(mkfifo(fifo, 0600), 0, "a FIFO made");
    is_int(util_read_file(fifo, &text, NULL, &d), UTIL_EINPUT,
           "a FIFO is refused, not waited on for a writer");
    has_str(d.count ? d.msgs[0] : "", "not a regular file", "as not a regular file");
    unlink(fifo);
    util_diag_clear(&d);
    is_int(util_read_file("/tmp", &text, NULL, &d), UTIL_EINPUT, "a folder is an input error");
    has_str(d.count ? d.msgs[0] : "", "/tmp: is a folder, not a file", "named as such");
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

/* ---- util_idring ---- */

typedef struct emitted {
    int64_t ids[4096];
    int n;
} emitted;

static int collect(void *ctx, const void *rec)
{
    emitted *e = ctx;
    if (e->n < 4096) e->ids[e->n++] = *(const int64_t *)rec;
    return 0;
}

static int64_t id_of(const void *rec)
{
    return *(const int64_t *)rec;
}

/* Records put in a shuffled order come out in id order, through growth;
 * past the ring's limit the records before a newcomer go out as they are,
 * a missing id is skipped and a latecomer goes out at once. */
static void test_idring(void)
{
    util_idring r;
    util_idring_init(&r, sizeof(int64_t), 4, 64);
    emitted e = {.n = 0};
    int64_t order[40];
    for (int i = 0; i < 40; i++) order[i] = i;
    uint64_t x = 12345; /* a fixed shuffle */
    for (int i = 39; i > 0; i--) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        int j = (int)((x >> 33) % (uint64_t)(i + 1));
        int64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < 40; i++) util_idring_put(&r, order[i], &order[i], id_of, collect, &e);
    util_idring_flush(&r, collect, &e);
    bool sorted = e.n == 40;
    for (int i = 0; sorted && i < 40; i++) sorted = e.ids[i] == i;
    ok(sorted, "40 records in a shuffled order come out 0 .. 39, the ring grown from 4");
    cmp_ok(r.cap, <=, 64, "within its limit (%lld)", (long long)r.cap);
    util_idring_fini(&r);

    util_idring_init(&r, sizeof(int64_t), 4, 8);
    e.n = 0;
    int64_t a = 1, b = 2, far = 20, late = 0;
    util_idring_put(&r, a, &a, id_of, collect, &e);
    util_idring_put(&r, b, &b, id_of, collect, &e);
    is_int(e.n, 0, "ids 1 and 2 wait for 0");
    util_idring_put(&r, far, &far, id_of, collect, &e);
    is_int(e.n, 2, "id 20, past a ring of 8: the waiting two go out, 0 skipped");
    is_int(e.ids[0], 1, "1 first");
    is_int(e.ids[1], 2, "then 2");
    util_idring_put(&r, late, &late, id_of, collect, &e);
    is_int(e.n, 3, "the latecomer goes out at once");
    is_int(e.ids[2], 0, "it is 0");
    util_idring_flush(&r, collect, &e);
    is_int(e.n, 4, "the flush hands on the one left");
    is_int(e.ids[3], 20, "20, past the ids never put");
    util_idring_fini(&r);
}

int main(void)
{
    test_schema();
    test_json();
    test_set_indexes();
    test_messages();
    test_units();
    test_misc();
    test_idring();
    return tap_done();
}
