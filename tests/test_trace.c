/*
 * test_trace.c: trace replay and empirical length distributions, against the
 * real traces the repository ships (argv[1]: its data/ folder).
 *
 * Expected values were read from the files with other tools (Python's csv,
 * json, datetime and fractions modules): the first records of each trace,
 * the row counts and spans, the Azure timestamp differences as exact
 * fractions, and the Mooncake traces' whole blocks (segments) and distinct
 * id prefixes (distinct keys).  Malformed lines are written to temporary files and must be
 * reported with their line and field.  The Mooncake scanner is held to
 * cJSON, the reference reader: every line of the shipped traces, a table
 * of tricky lines and a few thousand randomly edited ones are read both
 * ways and must give the same records, segments and messages.  Sampling
 * tolerances are Z = 5 standard errors of the mean of N draws (sigma from
 * the column itself), as in test_workloads.c; the seeds are fixed, so
 * outcomes are deterministic.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"
#include "wl.h"
#include "wl_int.h"

#define N 200000
#define Z 5.0

static const char *shared;

static char *shared_path(const char *rel)
{
    return util_path_join(shared, rel);
}

static char *write_temp(const char *text)
{
    char *path = util_xstrdup("/tmp/servesim-trace-XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* ---- the shipped traces ---- */

typedef struct want {
    double at;
    int32_t prompt, output;
} want;

/* The first n records of a trace, read with format, against want[]. */
static void first_records(const char *rel, wl_trace_format format, const want *w, int n)
{
    char *path = shared_path(rel);
    util_diag d;
    util_diag_init(&d);
    wl_trace *t;
    int orc = wl_trace_open(path, format, &t, &d);
    is_int(orc, 0, "%s opens", rel);
    bool opened = orc == 0;
    for (int i = 0; opened && i < n; i++) {
        wl_record r = {0};
        int rc = wl_trace_next(t, &r, &d);
        is_int(rc, 1, "%s record %d: %.9f s, %d, %d (got %.9f, %d, %d)", rel, i + 1, w[i].at,
               w[i].prompt, w[i].output, r.arrival_s, r.prompt, r.output);
        /* the traces' times have at most 7 decimals (Azure) or whole ms: |got - want| < 1e-9 */
        is_near(r.arrival_s, w[i].at, nextafter(1e-9, 0), "%s record %d: its time", rel, i + 1);
        is_int(r.prompt, w[i].prompt, "%s record %d: its prompt tokens", rel, i + 1);
        is_int(r.output, w[i].output, "%s record %d: its output tokens", rel, i + 1);
    }
    if (d.count) tap_diag("%s", d.msgs[0]);
    if (opened) wl_trace_close(t);
    util_diag_fini(&d);
    free(path);
}

static void test_first_records(void)
{
    /* 18:17:03.9799600 is the origin; 18:17:04.0319600 - it = 0.052 s, ... */
    static const want code[] = {{0, 4808, 10}, {0.052, 3180, 8}, {0.098189, 110, 27},
                                {0.140684, 7433, 14}, {0.444994, 34, 12}};
    first_records("traces/AzureLLMInferenceTrace_code.csv", WL_TRACE_AUTO, code, 5);
    static const want conv[] = {{0, 374, 44}, {4.314579, 396, 109}, {4.541877, 879, 55},
                                {4.710427, 91, 16}, {5.892655, 91, 16}};
    first_records("traces/AzureLLMInferenceTrace_conv.csv", WL_TRACE_AZURE, conv, 5);
    /* Mooncake: ms -> s */
    static const want synth[] = {{0, 40160, 6}, {0, 36640, 4}, {0.040, 23769, 3},
                                 {0.277, 32140, 92}, {0.471, 18663, 210}};
    first_records("traces/synthetic_trace.jsonl", WL_TRACE_AUTO, synth, 5);
    static const want conversation[] = {{0, 6758, 500}, {0, 7322, 490}, {0, 7236, 794},
                                        {0, 2290, 316}, {0, 6760, 3}};
    first_records("traces/conversation_trace.jsonl", WL_TRACE_MOONCAKE, conversation, 5);
    /* its first ten requests are at 0 ms; the eleventh is the first at 3000 ms */
    char *path = shared_path("traces/conversation_trace.jsonl");
    util_diag d;
    util_diag_init(&d);
    wl_trace *t;
    wl_record r = {0};
    wl_trace_open(path, WL_TRACE_AUTO, &t, &d);
    for (int i = 0; i < 11; i++) wl_trace_next(t, &r, &d);
    is_near(r.arrival_s, 3, 0, "conversation record 11: 3000 ms is 3 s (got %g, %d, %d)",
            r.arrival_s, r.prompt, r.output);
    is_int(r.prompt, 13544, "conversation record 11: its prompt tokens");
    is_int(r.output, 71, "conversation record 11: its output tokens");
    wl_trace_close(t);
    util_diag_fini(&d);
    free(path);
    static const want distserve[] = {{0, 55, 4}, {1.380639, 829, 170}};
    first_records("validation/distserve-opt13b/workload_rate1_n100.csv", WL_TRACE_AUTO,
                  distserve, 2);
    static const want sharegpt[] = {{0.046926808, 2358, 531}, {0.347938951, 1034, 769}};
    first_records("validation/llmservingsim/workload_sharegpt-llama-3.1-8b-300-sps10.csv",
                  WL_TRACE_CSV, sharegpt, 2);
}

typedef struct whole_trace {
    const char *rel;
    wl_trace_format format;
    int64_t rows;
    double first_s, last_s;
} whole_trace;

/* Rows and spans read through with Python; Azure spans as exact fractions. */
static const whole_trace shipped[] = {
    {"traces/AzureLLMInferenceTrace_code.csv", WL_TRACE_AZURE, 8819, 0, 3435.948056},
    {"traces/AzureLLMInferenceTrace_conv.csv", WL_TRACE_AZURE, 19366, 0, 3501.721937},
    {"traces/conversation_trace.jsonl", WL_TRACE_MOONCAKE, 12031, 0, 3536.999},
    {"traces/synthetic_trace.jsonl", WL_TRACE_MOONCAKE, 3993, 0, 1022.025},
    {"validation/distserve-opt13b/workload_rate1.5_n150.csv", WL_TRACE_CSV, 150, 0, 100.001408},
    {"validation/distserve-opt13b/workload_rate1_n100.csv", WL_TRACE_CSV, 100, 0, 100.001251},
    {"validation/distserve-opt13b/workload_rate2.5_n250.csv", WL_TRACE_CSV, 250, 0, 100.001327},
    {"validation/distserve-opt13b/workload_rate2_n100.csv", WL_TRACE_CSV, 100, 0, 50.000787},
    {"validation/distserve-opt13b/workload_rate2_n200.csv", WL_TRACE_CSV, 200, 0, 100.001211},
    {"validation/distserve-opt13b/workload_rate3.5_n350.csv", WL_TRACE_CSV, 350, 0, 100.001244},
    {"validation/distserve-opt13b/workload_rate3_n300.csv", WL_TRACE_CSV, 300, 0, 100.001925},
    {"validation/distserve-opt13b/workload_rate4_n400.csv", WL_TRACE_CSV, 400, 0, 100.000687},
    {"validation/llmservingsim/workload_sharegpt-llama-3.1-8b-300-sps10.csv", WL_TRACE_CSV, 300,
     0.046926808, 29.183763203},
};

static void test_check_shipped(void)
{
    for (size_t i = 0; i < sizeof shipped / sizeof *shipped; i++) {
        const whole_trace *w = &shipped[i];
        char *path = shared_path(w->rel);
        util_diag d;
        util_diag_init(&d);
        wl_trace_info info = {0};
        int rc = wl_trace_check(path, WL_TRACE_AUTO, &info, &d);
        is_int(rc, 0, "%s: detected %s, %lld rows, %.9f to %.9f s (got %s, %lld, %.9f to %.9f)",
               w->rel, wl_trace_formats[w->format], (long long)w->rows, w->first_s, w->last_s,
               wl_trace_formats[info.format], (long long)info.rows, info.first_s, info.last_s);
        is_int(info.format, w->format, "%s: its format", w->rel);
        is_int(info.rows, w->rows, "%s: its rows", w->rel);
        /* |got - want| < 1e-9 */
        is_near(info.first_s, w->first_s, nextafter(1e-9, 0), "%s: its first arrival", w->rel);
        is_near(info.last_s, w->last_s, nextafter(1e-9, 0), "%s: its last arrival", w->rel);
        if (d.count) tap_diag("%s", d.msgs[0]);
        util_diag_fini(&d);
        free(path);
    }
}

/* ---- Azure timestamps and layouts ---- */

static wl_record one(const char *text, wl_trace_format format, int index, util_diag *d)
{
    char *path = write_temp(text);
    wl_trace *t;
    wl_record r = {.arrival_s = -1};
    if (wl_trace_open(path, format, &t, d) == 0) {
        for (int i = 0; i <= index; i++)
            if (wl_trace_next(t, &r, d) != 1) r.arrival_s = -1;
        wl_trace_close(t);
    }
    unlink(path);
    free(path);
    return r;
}

static void test_azure_times(void)
{
    util_diag d;
    util_diag_init(&d);
    wl_record r = one("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                      "2023-12-31 23:59:59.9999999,1,1\n2024-01-01 00:00:00.0000001,1,1\n",
                      WL_TRACE_AUTO, 1, &d);
    is_near(r.arrival_s, 2e-7, 1e-15, "across a year's end: 0.0000002 s");
    r = one("2024-02-28 12:00:00,1,1\n2024-03-01 12:00:00.5,2,3\n", WL_TRACE_AZURE, 1, &d);
    is_near(r.arrival_s, 2 * 86400 + 0.5, 1e-9, "no header; 2024 is a leap year");
    r = one("2023-02-28 12:00:00,1,1\n2023-03-01 12:00:00,2,3\n", WL_TRACE_AZURE, 1, &d);
    is_near(r.arrival_s, 86400, 1e-9, "2023 is not");
    r = one("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+00:00,5,6\n"
            "2024-05-10 02:00:00.019930+02:00,7,8\n",
            WL_TRACE_AUTO, 1, &d);
    is_near(r.arrival_s, 0.01, 1e-12, "a UTC offset is applied (2024 trace layout)");
    r = one("TIMESTAMP,NumImages,ContextTokens,GeneratedTokens\n"
            "2025-01-01T00:00:00Z,3,100,20\n2025-01-01T00:00:01.25Z,0,300,40\n",
            WL_TRACE_AUTO, 1, &d);
    is_near(r.arrival_s, 1.25, 0,
            "columns found by the header's names (2025 layout with NumImages)");
    is_int(r.prompt, 300, "the 2025 layout's ContextTokens");
    is_int(r.output, 40, "the 2025 layout's GeneratedTokens");
    r = one("TIMESTAMP,ContextTokens,GeneratedTokens\n1970-01-01 00:00:00.123456789123,1,1\n"
            "1970-01-01 00:00:01.123456790,1,1\n",
            WL_TRACE_AUTO, 1, &d);
    is_near(r.arrival_s, 1.000000001, 1e-15, "fraction digits past the ninth are dropped");
    is_int(d.count, 0, "no messages for good lines");
    if (d.count) tap_diag("%s", d.msgs[0]);
    util_diag_fini(&d);
}

/* ---- malformed lines ---- */

/* The first message of checking text, without the temporary file's name. */
static char *errors_of(const char *text, wl_trace_format format)
{
    char *path = write_temp(text);
    util_diag d;
    util_diag_init(&d);
    wl_trace_check(path, format, NULL, &d);
    char *msg = util_xstrdup(d.count ? d.msgs[0] : "");
    size_t n = strlen(path);
    if (d.count && !strncmp(msg, path, n)) memmove(msg, msg + n, strlen(msg + n) + 1);
    util_diag_fini(&d);
    unlink(path);
    free(path);
    return msg;
}

static void expect_error(const char *text, wl_trace_format format, const char *expected,
                         const char *what)
{
    char *m = errors_of(text, format);
    is_str(m, expected, "%s", what);
    free(m);
}

static void test_csv(void)
{
    char *path = write_temp("arrival_time_s,input_tokens,output_tokens\n0.5,100,20\r\n\n"
                            "0.75,3,1\n2,4000,512\n");
    util_diag d;
    util_diag_init(&d);
    wl_trace *t;
    wl_record r = {0};
    is_int(wl_trace_open(path, WL_TRACE_AUTO, &t, &d), 0, "a trace opens");
    is_int(wl_trace_next(t, &r, &d), 1, "header skipped, CRLF accepted, first record read");
    is_near(r.arrival_s, 0.5, 0, "the first record's time");
    is_int(r.prompt, 100, "the first record's prompt tokens");
    is_int(r.output, 20, "the first record's output tokens");
    is_int(wl_trace_next(t, &r, &d), 1, "a blank line is skipped");
    is_near(r.arrival_s, 0.75, 0, "the second record's time");
    is_int(r.prompt, 3, "the second record's prompt tokens");
    is_int(wl_trace_next(t, &r, &d), 1, "the last record, then the end");
    is_int(r.output, 512, "the last record's output tokens");
    is_int(wl_trace_next(t, &r, &d), 0, "then the end");
    wl_trace_close(t);
    unlink(path);
    free(path);
    util_diag_fini(&d);

    expect_error("0,10,10\n1,ten,10\n", WL_TRACE_AUTO,
                 ":2: field 2 (input_tokens): expected a whole number of tokens >= 1, got 'ten'",
                 "csv: a malformed field is reported with its line");
    expect_error("0,10,10\n1,10,10\n0.5,10,10\n", WL_TRACE_CSV,
                 ":3: field 1 (arrival_time_s): earlier than the line before, got '0.5'",
                 "csv: arrivals must not go back in time");
    expect_error("0,10\n", WL_TRACE_AUTO,
                 ":1: expected 3 or 4 fields (arrival_time_s, input_tokens, output_tokens[, "
                 "hash_ids])",
                 "csv: a short line is reported");
    expect_error("0,10,0\n", WL_TRACE_AUTO,
                 ":1: field 3 (output_tokens): expected a whole number of tokens >= 1, got '0'",
                 "csv: zero output tokens are refused");
    expect_error("\n\n-1,10,10\n", WL_TRACE_AUTO,
                 ":3: field 1 (arrival_time_s): expected seconds >= 0, got '-1'",
                 "csv: line numbers count blank lines");
    expect_error("", WL_TRACE_AUTO, ": no requests in the trace", "an empty file is refused");
    expect_error("TIMESTAMP,ContextTokens,GeneratedTokens\n", WL_TRACE_AUTO,
                 ": no requests in the trace", "a header alone is refused");
}

/* ---- a row's own priority, deadline and tenant ---- */

/* Every record's own priority, deadline and tenant, "P D T;" each ("-": none,
 * the class's), read with or without the Mooncake scanner. */
static char *owns(const char *text, wl_trace_format format, bool scanner, int64_t *scanned)
{
    char *path = write_temp(text), *out = util_xstrdup("");
    util_diag d;
    util_diag_init(&d);
    wl_trace *t;
    if (wl_trace_open(path, format, &t, &d) == 0) {
        wl__trace_set_scanner(t, scanner);
        wl_record r;
        while (wl_trace_next(t, &r, &d) == 1) {
            char p[16] = "-", dl[32] = "-";
            if (r.has_priority) snprintf(p, sizeof p, "%d", r.priority);
            if (r.deadline_s > 0) snprintf(dl, sizeof dl, "%g", r.deadline_s);
            char *more = util_xasprintf("%s%s %s %s;", out, p, dl, r.tenant ? r.tenant : "-");
            free(out);
            out = more;
        }
        if (scanned) *scanned = wl__trace_scanned(t);
        wl_trace_close(t);
    }
    for (int i = 0; i < d.count; i++) tap_diag("%s", d.msgs[i]);
    util_diag_fini(&d);
    unlink(path);
    free(path);
    return out;
}

static void test_own_columns(void)
{
    char *got = owns("arrival_time_s,input_tokens,output_tokens,priority,deadline_s,tenant\n"
                     "0,10,10,,,\n1,10,10,critical,2.5,acme\n2,10,10,7, ,  beta \n"
                     "3,10,10,-3,,\n4,10,10,background,1e9,acme\n",
                     WL_TRACE_AUTO, true, NULL);
    is_str(got, "- - -;-1 2.5 acme;7 - beta;-3 - -;3 1e+09 acme;",
           "csv: a header's priority, deadline_s and tenant columns, empty cells the class's");
    free(got);
    got = owns("arrival_time_s,tenant,input_tokens,output_tokens,hash_ids\n0,x,1024,5,1 2\n",
               WL_TRACE_AUTO, true, NULL);
    is_str(got, "- - x;", "csv: named columns in any order, hash ids among them");
    free(got);
    got = owns("arrival_time_s,input_tokens,output_tokens\n0,10,10,7\n", WL_TRACE_AUTO, true,
               NULL);
    is_str(got, "- - -;", "csv: a header of the three columns leaves rows as they were");
    free(got);
    got = owns("TIMESTAMP,ContextTokens,GeneratedTokens,Tenant,Priority\n"
               "2023-11-16 18:17:03,1,1,acme,batch\n2023-11-16 18:17:04,1,1,,\n",
               WL_TRACE_AUTO, true, NULL);
    is_str(got, "1 - acme;- - -;", "azure: the columns found by the header's names");
    free(got);
    const char *jsonl =
        "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2, \"priority\": "
        "\"sheddable\", \"deadline_s\": 0.5, \"tenant\": \"x\"}\n"
        "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 2, \"priority\": 4, "
        "\"tenant\": null}\n"
        "{\"timestamp\": 2, \"input_length\": 5, \"output_length\": 2}\n";
    int64_t scanned = -1;
    got = owns(jsonl, WL_TRACE_AUTO, true, &scanned);
    is_str(got, "2 0.5 x;4 - -;- - -;", "mooncake: the keys, null the class's");
    is_int(scanned, 1, "the scanner leaves the lines with them to cJSON");
    char *ref = owns(jsonl, WL_TRACE_AUTO, false, NULL);
    is_str(got, ref, "and reads them as cJSON alone does");
    free(ref);
    free(got);

    const char *h = "arrival_time_s,input_tokens,output_tokens,priority,deadline_s,tenant\n";
    static const struct {
        const char *row, *msg, *what;
    } bad_rows[] = {
        {"0,1,1,urgent,,", ":2: field 4 (priority): expected a tier (critical, standard, batch, "
                           "sheddable, background) or a whole number from -1000000 to 1000000, "
                           "got 'urgent'",
         "csv: an unknown tier"},
        {"0,1,1,1000001,,", ":2: field 4 (priority): expected a tier (critical, standard, batch, "
                            "sheddable, background) or a whole number from -1000000 to 1000000, "
                            "got '1000001'",
         "csv: a priority out of range"},
        {"0,1,1,,-1,", ":2: field 5 (deadline_s): expected seconds > 0, at most 1e9, got '-1'",
         "csv: a negative deadline"},
        {"0,1,1,,0,", ":2: field 5 (deadline_s): expected seconds > 0, at most 1e9, got '0'",
         "csv: a deadline of 0"},
        {"0,1,1,,", ":2: expected 6 fields (as the header has)", "csv: a short row"},
    };
    for (size_t i = 0; i < sizeof bad_rows / sizeof *bad_rows; i++) {
        char *text = util_xasprintf("%s%s\n", h, bad_rows[i].row);
        expect_error(text, WL_TRACE_AUTO, bad_rows[i].msg, bad_rows[i].what);
        free(text);
    }
    expect_error("arrival_time_s,input_tokens,output_tokens,tenant,colour\n0,1,1,a,b\n",
                 WL_TRACE_AUTO,
                 ":1: field 5 (header): expected one of arrival_time_s, input_tokens, "
                 "output_tokens, hash_ids, priority, deadline_s, tenant, got 'colour'",
                 "csv: a named header's unknown column");
    expect_error("arrival_time_s,input_tokens,tenant\n0,1,a\n", WL_TRACE_AUTO,
                 ":1: the header has no column output_tokens", "csv: a named header's missing one");
    expect_error("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"tenant\": 5}\n",
                 WL_TRACE_AUTO, ":1: field 4 (tenant): expected a non-empty string, got '5'",
                 "mooncake: a tenant that is not a string");
    expect_error("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"priority\": "
                 "1.5}\n",
                 WL_TRACE_AUTO,
                 ":1: field 4 (priority): expected a tier (critical, standard, batch, sheddable, "
                 "background) or a whole number from -1000000 to 1000000, got '1.5'",
                 "mooncake: a fractional priority");
    expect_error("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"deadline_s\": "
                 "\"soon\"}\n",
                 WL_TRACE_AUTO,
                 ":1: field 4 (deadline_s): expected seconds > 0, at most 1e9, got '\"soon\"'",
                 "mooncake: a deadline that is not a number");
}

/* The tenants a check finds, each once: memory for the distinct names. */
static void test_check_tenants(void)
{
    char *path = write_temp("arrival_time_s,input_tokens,output_tokens,tenant\n0,1,1,a\n"
                            "1,1,1,b\n2,1,1,a\n3,1,1,\n4,1,1,b\n");
    util_diag d;
    util_diag_init(&d);
    wl_names *names = wl_names_create();
    is_int(wl_trace_check_slice(path, WL_TRACE_AUTO, 0, 0, 0, NULL, NULL, names, &d), 0,
           "a trace with tenants checks");
    is_int(wl_names_count(names), 2, "two distinct tenants in five rows");
    const char *a = wl_names_find(names, "a");
    ok(a && !strcmp(a, "a") && a == wl_names_intern(names, "a"), "each kept once");
    ok(!wl_names_find(names, "c"), "and no other");
    wl_names_destroy(names);
    util_diag_fini(&d);
    unlink(path);
    free(path);
}

static void test_azure_errors(void)
{
    const char *h = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
    char *text = util_xasprintf("%s2023-11-16 18:17:03.9,1,1\n2023-11-16 18:17:03.89,1,1\n", h);
    expect_error(text, WL_TRACE_AUTO,
                 ":3: field 1 (TIMESTAMP): earlier than the line before, got "
                 "'2023-11-16 18:17:03.89'",
                 "azure: arrivals must not go back in time");
    free(text);
    text = util_xasprintf("%s2023-02-29 00:00:00,1,1\n", h);
    expect_error(text, WL_TRACE_AUTO,
                 ":2: field 1 (TIMESTAMP): expected a time like 2023-11-16 18:17:03.9799600, "
                 "got '2023-02-29 00:00:00'",
                 "azure: a date that does not exist");
    free(text);
    text = util_xasprintf("%s2023-11-16 18:17:03.9799600,4808,0\n", h);
    expect_error(text, WL_TRACE_AUTO,
                 ":2: field 3 (GeneratedTokens): expected a whole number of tokens >= 1, got '0'",
                 "azure: zero generated tokens are refused");
    free(text);
    text = util_xasprintf("%s2023-11-16 18:17:03.97,4808\n", h);
    expect_error(text, WL_TRACE_AUTO, ":2: expected 3 fields (as the header has)",
                 "azure: a short line");
    free(text);
    expect_error("TIMESTAMP,Context,GeneratedTokens\n", WL_TRACE_AUTO,
                 ":1: the header has no column ContextTokens", "azure: a header without a column");
    expect_error("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16,1,1\n", WL_TRACE_CSV,
                 ":1: field 1 (arrival_time_s): expected seconds >= 0, got 'TIMESTAMP'",
                 "a named format overrides detection");
}

static void test_mooncake_errors(void)
{
    expect_error("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n"
                 "{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 2.5}\n",
                 WL_TRACE_AUTO,
                 ":2: field 3 (output_length): expected a whole number of tokens >= 1, got '2.5'",
                 "mooncake: a fractional token count");
    expect_error("{\"timestamp\": 20, \"input_length\": 5, \"output_length\": 2}\n"
                 "{\"input_length\": 5, \"output_length\": 2, \"timestamp\": 19}\n",
                 WL_TRACE_AUTO,
                 ":2: field 3 (timestamp): earlier than the line before, got '19'",
                 "mooncake: arrivals must not go back in time; N is the key's position");
    expect_error("{\"timestamp\": 0, \"input_length\": 5}\n", WL_TRACE_MOONCAKE,
                 ":1: no field output_length", "mooncake: a missing key");
    expect_error("{\"timestamp\": \"0\", \"input_length\": 5, \"output_length\": 2}\n",
                 WL_TRACE_AUTO,
                 ":1: field 1 (timestamp): expected a number of milliseconds, got '\"0\"'",
                 "mooncake: a string timestamp");
    expect_error("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n"
                 "{\"timestamp\": 1, \"input_length\": 5 \"output_length\": 2}\n",
                 WL_TRACE_AUTO, ":2:36: expected one JSON object on the line",
                 "mooncake: broken JSON, with its column");
    expect_error("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2} x\n",
                 WL_TRACE_AUTO, ":1:57: expected one JSON object on the line",
                 "mooncake: trailing text");
}

/* ---- hash ids: what prompts share ---- */

#define MAX_SEGS 8

typedef struct rec_segs {
    int32_t prompt, n;
    wl_segment seg[MAX_SEGS];
} rec_segs;

/* Every record of text, with a copy of its segments (valid only until the
 * next record); the count, or -1 on an error. */
static int read_segs(const char *text, wl_trace_format format, int32_t block, rec_segs *out,
                     int max)
{
    char *path = write_temp(text);
    util_diag d;
    util_diag_init(&d);
    wl_trace *t;
    int n = -1;
    if (wl_trace_open(path, format, &t, &d) == 0) {
        wl_trace_set_block_tokens(t, block);
        wl_record r;
        int rc;
        for (n = 0; n < max && (rc = wl_trace_next(t, &r, &d)) == 1; n++) {
            out[n].prompt = r.prompt;
            out[n].n = r.n_segments;
            for (int i = 0; i < r.n_segments && i < MAX_SEGS; i++) out[n].seg[i] = r.segments[i];
        }
        if (d.count) n = -1;
        wl_trace_close(t);
    }
    if (d.count) tap_diag("%s", d.msgs[0]);
    util_diag_fini(&d);
    unlink(path);
    free(path);
    return n;
}

static bool all_tokens(const rec_segs *r, int32_t tokens)
{
    for (int i = 0; i < r->n; i++)
        if (r->seg[i].tokens != tokens) return false;
    return true;
}

static const char mooncake_shared[] =
    "{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n"
    "{\"timestamp\": 1, \"input_length\": 1200, \"output_length\": 1, \"hash_ids\": [1, 2, 9]}\n"
    "{\"timestamp\": 2, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": [1, 5]}\n"
    "{\"timestamp\": 3, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": []}\n"
    "{\"timestamp\": 4, \"input_length\": 600, \"output_length\": 1}\n"
    "{\"timestamp\": 5, \"input_length\": 2048, \"output_length\": 1, \"hash_ids\": [2]}\n"
    "{\"timestamp\": 6, \"input_length\": 511, \"output_length\": 1, \"hash_ids\": [1]}\n";

static void test_mooncake_segments(void)
{
    rec_segs r[8];
    int n = read_segs(mooncake_shared, WL_TRACE_AUTO, 512, r, 8);
    is_int(n, 7, "a small Mooncake trace with hash_ids reads through");
    if (n != 7) return;
    uint64_t k1 = wl_chain(0, 1), k2 = wl_chain(k1, 2), k3 = wl_chain(k2, 3);
    is_int(r[0].n, 3, "1536 tokens, ids [1, 2, 3]: 3 whole blocks, 3 segments");
    ok(r[0].seg[0].key == k1, "keys chained: the first block's is wl_chain(0, 1)");
    ok(r[0].seg[1].key == k2, "the second's wl_chain(that, 2)");
    ok(r[0].seg[2].key == k3, "the third's wl_chain(that, 3)");
    ok(all_tokens(&r[0], 512), "each of 512 tokens (hash_block_tokens)");
    is_int(r[1].n, 2,
           "1200 tokens, ids [1, 2, 9]: the final partial block (9) is the prompt's own");
    ok(r[1].seg[0].key == k1, "equal leading ids, equal keys: the first block's");
    ok(r[1].seg[1].key == k2, "and the second's: the two prompts share 1024 tokens");
    is_int(r[2].n, 2, "1100 tokens, ids [1, 5]");
    ok(r[2].seg[0].key == k1, "an equal first id, an equal first key");
    ok(r[2].seg[1].key != k2, "ids diverge at the second block: so do the keys, from there");
    is_int(r[3].n, 0, "hash_ids [] : no segments");
    is_int(r[4].n, 0, "no hash_ids: no segments");
    is_int(r[5].n, 1, "2048 tokens and one id: fewer ids than blocks name the leading ones");
    ok(r[5].seg[0].key == wl_chain(0, 2), "id 2 first: its key is wl_chain(0, 2)");
    ok(r[5].seg[0].key != k2,
       "a key names the content from the prompt's start: id 2 first is not id 2 second");
    is_int(r[6].n, 0, "511 tokens: its one block is partial, never shared");

    n = read_segs(mooncake_shared, WL_TRACE_AUTO, 256, r, 8);
    is_int(r[0].n, 3, "hash_block_tokens 256: 1536 tokens have 6 blocks; 3 ids name the first 3");
    ok(all_tokens(&r[0], 256), "of 256 tokens each");
    is_int(r[1].n, 3, "1200 tokens (4 whole blocks of 256): all 3 ids are whole blocks");
    is_int(r[6].n, 1, "511 tokens: one whole block of 256");
    n = read_segs(mooncake_shared, WL_TRACE_AUTO, 0, r, 8);
    is_int(n, 7, "block size 0: the trace reads through");
    is_int(r[0].n, 0, "block size 0 reads hash ids past (empirical): none for record 1");
    is_int(r[1].n, 0, "nor for record 2");
}

static void test_csv_segments(void)
{
    rec_segs r[8];
    int n = read_segs("arrival_time_s,input_tokens,output_tokens,hash_ids\n0,1024,5,1 2\n"
                      "1,1100,5, 1  3\t4 \n2,10,1,\n3,10,1\n",
                      WL_TRACE_AUTO, 512, r, 8);
    is_int(n, 4, "csv with a hash_ids column: header skipped, 4 rows");
    if (n != 4) return;
    uint64_t k1 = wl_chain(0, 1);
    is_int(r[0].n, 2, "'1 2' over 1024 tokens: 2 segments");
    ok(r[0].seg[0].key == k1, "the first key as Mooncake's, wl_chain(0, 1)");
    ok(r[0].seg[1].key == wl_chain(k1, 2), "the second chained on it");
    ok(all_tokens(&r[0], 512), "512 tokens each");
    is_int(r[1].n, 2, "' 1  3<TAB>4 ' over 1100 tokens: spaces and tabs separate, 2 whole blocks");
    ok(r[1].seg[0].key == k1, "sharing the first block");
    ok(r[1].seg[1].key == wl_chain(k1, 3), "the second chained on it");
    is_int(r[2].n, 0, "an empty hash_ids field: none");
    is_int(r[3].n, 0, "a row of 3 fields: none");
    n = read_segs("0,1024,5,18446744073709551615\n", WL_TRACE_CSV, 512, r, 8);
    is_int(n, 1, "a csv row with id 2^64 - 1 reads");
    is_int(r[0].n, 1, "as one segment");
    ok(r[0].seg[0].key == wl_chain(0, UINT64_MAX), "csv ids go up to 2^64 - 1");
}

static void test_hash_id_errors(void)
{
    const char *ok_line = "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n";
    char *text = util_xasprintf("%s{\"timestamp\": 1, \"input_length\": 600, \"output_length\": "
                                "2, \"hash_ids\": [1, 2, 3]}\n",
                                ok_line);
    expect_error(text, WL_TRACE_AUTO,
                 ":2: field 4 (hash_ids): 3 block ids for 600 tokens, more than its ceil(600 / "
                 "512) = 2 blocks (is hash_block_tokens 512 the trace's block size?)",
                 "mooncake: more ids than blocks");
    free(text);
    expect_error("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": "
                 "[1, -1]}\n",
                 WL_TRACE_AUTO,
                 ":1: field 4 (hash_ids[1]): expected a block id, a whole number from 0 to 2^53, "
                 "got '-1'",
                 "mooncake: a negative id, with its index");
    expect_error("{\"timestamp\": 0, \"input_length\": 600, \"hash_ids\": [1.5], "
                 "\"output_length\": 2}\n",
                 WL_TRACE_AUTO,
                 ":1: field 3 (hash_ids[0]): expected a block id, a whole number from 0 to 2^53, "
                 "got '1.5'",
                 "mooncake: a fractional id");
    expect_error("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": "
                 "[1e16]}\n",
                 WL_TRACE_AUTO,
                 ":1: field 4 (hash_ids[0]): expected a block id, a whole number from 0 to 2^53, "
                 "got '1e+16'",
                 "mooncake: an id past 2^53, which a double cannot hold exactly");
    expect_error("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": "
                 "\"1 2\"}\n",
                 WL_TRACE_AUTO,
                 ":1: field 4 (hash_ids): expected an array of block ids, got '\"1 2\"'",
                 "mooncake: hash_ids not an array");
    expect_error("0,1024,5,1 x2\n", WL_TRACE_AUTO,
                 ":1: field 4 (hash_ids[1]): expected a block id, a whole number from 0 to 2^64 - "
                 "1, got 'x2'",
                 "csv: a malformed id, with its index");
    expect_error("0,1024,5,1\n1,1024,5,-3\n", WL_TRACE_AUTO,
                 ":2: field 4 (hash_ids[0]): expected a block id, a whole number from 0 to 2^64 - "
                 "1, got '-3'",
                 "csv: a negative id");
    expect_error("0,1024,5,18446744073709551616\n", WL_TRACE_AUTO,
                 ":1: field 4 (hash_ids[0]): expected a block id, a whole number from 0 to 2^64 - "
                 "1, got '18446744073709551616'",
                 "csv: an id past 2^64 - 1");
    expect_error("0,1024,5,1;2\n", WL_TRACE_AUTO,
                 ":1: field 4 (hash_ids[0]): expected a block id, a whole number from 0 to 2^64 - "
                 "1, got '1;2'",
                 "csv: ids are separated by spaces, not semicolons");
    expect_error("0,100,5,1 2\n", WL_TRACE_AUTO,
                 ":1: field 4 (hash_ids): 2 block ids for 100 tokens, more than its ceil(100 / "
                 "512) = 1 blocks (is hash_block_tokens 512 the trace's block size?)",
                 "csv: more ids than blocks");
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

typedef struct shipped_segs {
    const char *rel;
    int64_t segments, distinct, rows_with;
} shipped_segs;

/* Every key of a trace's segments (sorted) and its requests with any. */
static uint64_t *trace_keys(const char *rel, size_t *n, int64_t *rows_with, bool *whole)
{
    char *path = shared_path(rel);
    util_diag d;
    util_diag_init(&d);
    wl_trace *t;
    size_t cap = 1 << 19;
    uint64_t *keys = util_xmalloc(cap * sizeof *keys);
    *n = 0;
    *rows_with = 0;
    *whole = true;
    wl_record r;
    if (wl_trace_open(path, WL_TRACE_AUTO, &t, &d) == 0) {
        while (wl_trace_next(t, &r, &d) == 1) {
            *rows_with += r.n_segments > 0;
            for (int i = 0; i < r.n_segments && *n < cap; i++) {
                *whole &= r.segments[i].tokens == 512;
                keys[(*n)++] = r.segments[i].key;
            }
        }
        wl_trace_close(t);
    }
    if (d.count) tap_diag("%s", d.msgs[0]);
    util_diag_fini(&d);
    free(path);
    qsort(keys, *n, sizeof *keys, cmp_u64);
    return keys;
}

/* Whole blocks, min(len(hash_ids), input_length // 512) a request, and
 * distinct id prefixes, as counted with Python's json module. */
static void test_shipped_segments(void)
{
    static const shipped_segs expect[] = {
        {"traces/conversation_trace.jsonl", 276491, 170899, 12031},
        {"traces/synthetic_trace.jsonl", 117888, 40148, 2886},
    };
    for (size_t w = 0; w < 2; w++) {
        size_t n;
        int64_t rows_with;
        bool whole;
        uint64_t *keys = trace_keys(expect[w].rel, &n, &rows_with, &whole);
        int64_t distinct = n > 0;
        for (size_t i = 1; i < n; i++) distinct += keys[i] != keys[i - 1];
        is_int(n, expect[w].segments, "%s: %lld segments (its whole blocks)", expect[w].rel,
               (long long)expect[w].segments);
        ok(whole, "%s: each of 512 tokens", expect[w].rel);
        is_int(distinct, expect[w].distinct, "%s: %lld distinct keys (distinct id prefixes)",
               expect[w].rel, (long long)expect[w].distinct);
        is_int(rows_with, expect[w].rows_with, "%s: %lld requests with segments", expect[w].rel,
               (long long)expect[w].rows_with);
        free(keys);
    }
    /* conversation's first two requests: ids [0, 1, ...] and [0, 14, ...] */
    rec_segs r[2];
    char *path = shared_path("traces/conversation_trace.jsonl");
    wl_trace *t;
    util_diag d;
    util_diag_init(&d);
    wl_record rec;
    wl_trace_open(path, WL_TRACE_AUTO, &t, &d);
    for (int i = 0; i < 2 && wl_trace_next(t, &rec, &d) == 1; i++) {
        r[i].n = rec.n_segments;
        for (int j = 0; j < 2 && j < rec.n_segments; j++) r[i].seg[j] = rec.segments[j];
    }
    wl_trace_close(t);
    is_int(r[0].n, 13, "conversation record 1: 6758 tokens, 14 ids, 13 whole blocks");
    ok(r[0].seg[0].key == r[1].seg[0].key, "records 1 and 2 share their first block (id 0)");
    ok(r[0].seg[1].key != r[1].seg[1].key, "and no more");
    util_diag_fini(&d);
    free(path);
}

/* ---- the Mooncake scanner against cJSON ---- */

/* Equal records, bit for bit (-0.0 is not 0.0), segments and all. */
static bool same_record(const wl_record *a, const wl_record *b)
{
    if (memcmp(&a->arrival_s, &b->arrival_s, sizeof a->arrival_s) || a->prompt != b->prompt ||
        a->output != b->output || a->cls != b->cls || a->n_segments != b->n_segments ||
        (a->segments == NULL) != (b->segments == NULL))
        return false;
    for (int32_t i = 0; i < a->n_segments; i++)
        if (a->segments[i].key != b->segments[i].key ||
            a->segments[i].tokens != b->segments[i].tokens)
            return false;
    return true;
}

typedef struct paths {
    int64_t lines, rows, scanned, differ; /* differ: lines the two readings disagree on */
} paths;

/* The Mooncake file at path read through twice in step -- by the scanner
 * (with cJSON behind it) and by cJSON alone -- comparing every line's
 * status, record and message.  A line in error does not end a stream, so
 * every line of the file is compared. */
static paths scan_vs_json(const char *path, int32_t block)
{
    paths p = {0};
    util_diag df, dj;
    util_diag_init(&df);
    util_diag_init(&dj);
    wl_trace *f = NULL, *j = NULL;
    if (wl_trace_open(path, WL_TRACE_MOONCAKE, &f, &df) ||
        wl_trace_open(path, WL_TRACE_MOONCAKE, &j, &dj)) {
        p.differ = -1;
        goto done;
    }
    wl_trace_set_block_tokens(f, block);
    wl_trace_set_block_tokens(j, block);
    wl__trace_set_scanner(j, false);
    for (;;) {
        wl_record a = {0}, b = {0};
        int ra = wl_trace_next(f, &a, &df), rb = wl_trace_next(j, &b, &dj);
        if (ra == 0 && rb == 0) break;
        p.lines++;
        p.rows += ra == 1;
        bool same = ra == rb && df.count == dj.count &&
                    (!df.count || !strcmp(df.msgs[0], dj.msgs[0])) &&
                    (ra != 1 || same_record(&a, &b));
        if (!same && !p.differ++)
            tap_diag("line %lld of %s differs: %d '%s' (%.17g, %d, %d, %d segments) vs cJSON's %d "
                     "'%s' (%.17g, %d, %d, %d)",
                     (long long)p.lines, path, ra, df.count ? df.msgs[0] : "", a.arrival_s,
                     a.prompt, a.output, a.n_segments, rb, dj.count ? dj.msgs[0] : "",
                     b.arrival_s, b.prompt, b.output, b.n_segments);
        if (ra == 0 || rb == 0) break;
        util_diag_clear(&df);
        util_diag_clear(&dj);
    }
    p.scanned = wl__trace_scanned(f);
done:
    wl_trace_close(f);
    wl_trace_close(j);
    util_diag_fini(&df);
    util_diag_fini(&dj);
    return p;
}

static paths text_vs_json(const char *text, int32_t block)
{
    char *path = write_temp(text);
    paths p = scan_vs_json(path, block);
    unlink(path);
    free(path);
    return p;
}

/* Every line of the shipped Mooncake traces: the scanner takes each one,
 * and reads it as cJSON does. */
static void test_scanner_shipped(void)
{
    static const char *const rel[] = {"traces/conversation_trace.jsonl",
                                      "traces/synthetic_trace.jsonl"};
    static const int32_t blocks[] = {512, 0, 100};
    for (size_t i = 0; i < 2; i++)
        for (size_t k = 0; k < 3; k++) {
            char *path = shared_path(rel[i]);
            paths p = scan_vs_json(path, blocks[k]);
            is_int(p.differ, 0, "%s, hash_block_tokens %d: every line as cJSON reads it", rel[i],
                   blocks[k]);
            /* 100-token blocks: more ids than blocks on some lines, which cJSON reports */
            if (blocks[k] != 100) {
                is_int(p.scanned, p.lines,
                       "%s, hash_block_tokens %d: the scanner reads all %lld lines", rel[i],
                       blocks[k], (long long)p.lines);
                is_int(p.rows, p.lines, "%s, hash_block_tokens %d: each a row", rel[i], blocks[k]);
            }
            free(path);
        }
}

typedef struct tricky {
    const char *line;
    int scanned; /* 1: the scanner reads it; 0: it leaves it to cJSON */
    const char *what;
} tricky;

#define TS "\"timestamp\": 2000, "
#define LENS "\"input_length\": 1100, \"output_length\": 3"
#define IDS ", \"hash_ids\": [1, 2, 3]"

/* Each after the line {"timestamp": 1000, ...} (its arrival at 0). */
static const tricky tricky_lines[] = {
    {"{" TS LENS IDS "}", 1, "plain"},
    {"{" TS LENS IDS ", \"model\": \"m\", \"n\": 5, \"p\": -0.25e-3, \"x\": null}", 1,
     "other keys"},
    {"{\"hash_ids\": [4, 5], \"output_length\": 7, \"input_length\": 1024, \"timestamp\": 2500}",
     1, "keys in another order"},
    {"{\"meta\": {\"a\": [1, {\"b\": null}, true, false, -1.5E+3, []], \"c\": {}}, " TS LENS IDS
     "}",
     1, "a nested object skipped"},
    {"{" TS "\"s\": \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t\", " LENS IDS
     "}",
     1, "escapes, unicode and a surrogate pair, in a skipped string"},
    {"{" TS "\"s\": \"\\x\", " LENS "}", 0, "a bad escape in a skipped string"},
    {"{" TS "\"s\": \"\\uZZZZ\", " LENS "}", 0, "bad hex in \\u (cJSON reads it as U+0000)"},
    {"{" TS "\"s\": \"\\udc00\", " LENS "}", 0, "a lone low surrogate"},
    {"{" TS "\"s\": \"\\ud800x\", " LENS "}", 0, "a lone high surrogate"},
    {"{" TS "\"s\": \"\\u00\", " LENS "}", 0, "a short \\u"},
    {"{" TS "\"s\": \"ab\\\", " LENS "}", 0, "an escaped closing quote"},
    {"{" TS "\"s\": \"\x01\x7f\xc3\xa9\", " LENS "}", 1, "raw control and UTF-8 bytes"},
    {"{\"timestamp\": -5, " LENS "}", 0, "a negative timestamp, before the first"},
    {"{\"timestamp\": 1000.25, " LENS "}", 1, "a fractional timestamp"},
    {"{\"timestamp\": 1234.56789012345, " LENS "}", 1, "15 digits"},
    {"{\"timestamp\": 1234.567890123456, " LENS "}", 0, "16 digits: strtod's"},
    {"{\"timestamp\": 2e3, " LENS "}", 0, "an exponent"},
    {"{\"timestamp\": 2000., " LENS "}", 0, "2000. (strtod reads it)"},
    {"{\"timestamp\": 02000, " LENS "}", 1, "leading zeros (strtod reads them)"},
    {"{\"timestamp\": 1e999, " LENS "}", 0, "infinity"},
    {"{\"timestamp\": 1e13, " LENS "}", 0, "past the horizon"},
    {"{\"timestamp\": 1000000001000, " LENS "}", 1, "1e9 s after the first: the horizon"},
    {"{\"timestamp\": 1000000001001, " LENS "}", 0, "a millisecond past it"},
    {"{\"timestamp\": 0x10, " LENS "}", 0, "hex"},
    {"{\"timestamp\": -, " LENS "}", 0, "a lone minus"},
    {"{\"timestamp\": \"2000\", " LENS "}", 0, "a string"},
    {"{\"timestamp\": null, " LENS "}", 0, "null"},
    {"{" TS "\"input_length\": 0600, \"output_length\": 2}", 1, "tokens with a leading zero"},
    {"{" TS "\"input_length\": 5.0, \"output_length\": 2}", 0, "tokens 5.0"},
    {"{" TS "\"input_length\": -5, \"output_length\": 2}", 0, "negative tokens"},
    {"{" TS "\"input_length\": 2147483647, \"output_length\": 2}", 1, "INT32_MAX tokens"},
    {"{" TS "\"input_length\": 2147483648, \"output_length\": 2}", 0, "INT32_MAX + 1"},
    {"{" TS "\"input_length\": 99999999999, \"output_length\": 2}", 0, "11 digits"},
    {"{" TS "\"input_length\": 5, \"output_length\": 0}", 0, "no output"},
    {"{" TS "\"input_length\": 5, \"output_length\": true}", 0, "true"},
    {"{" TS "\"input_length\": 5}", 0, "no output_length"},
    {"{" TS "\"input_length\": 5, \"input_length\": 6, \"output_length\": 2}", 0,
     "a duplicate key (cJSON takes the first)"},
    {"{" TS "\"time\\u0073tamp\": 1, " LENS "}", 0, "an escaped key"},
    {"{\"time\\u0073tamp\": 3000, " LENS "}", 0, "an escaped key, the only timestamp"},
    {"{\"timestamp\\u0000x\": 3000, " LENS "}", 0, "a key with U+0000 (cJSON's strcmp)"},
    {"{\"hash_ids\": 7, " TS LENS "}", 0, "hash_ids not an array"},
    {"{" TS "\"input_length\": 9000, \"output_length\": 1, \"hash_ids\": [9007199254740992]}", 1,
     "an id of 2^53"},
    {"{" TS "\"input_length\": 9000, \"output_length\": 1, \"hash_ids\": [9007199254740993]}", 0,
     "2^53 + 1 (strtod rounds it to 2^53)"},
    {"{" TS "\"input_length\": 9000, \"output_length\": 1, \"hash_ids\": [18446744073709551616]}",
     0, "an id of 2^64"},
    {"{" TS "\"input_length\": 9000, \"output_length\": 1, \"hash_ids\": [007, 0]}", 1,
     "ids with leading zeros"},
    {"{" TS "\"input_length\": 9000, \"output_length\": 1, \"hash_ids\": [-0]}", 0, "an id -0"},
    {"{" TS "\"input_length\": 9000, \"output_length\": 1, \"hash_ids\": [1.0]}", 0, "an id 1.0"},
    {"{" TS "\"input_length\": 9000, \"output_length\": 1, \"hash_ids\": [1e2]}", 0, "an id 1e2"},
    {"{" TS "\"input_length\": 9000, \"output_length\": 1, \"hash_ids\": [1,]}", 0,
     "a trailing comma"},
    {"{" TS "\"input_length\": 9000, \"output_length\": 1, \"hash_ids\": [,]}", 0, "[,]"},
    {"{" TS "\"input_length\": 9000, \"output_length\": 1, \"hash_ids\": [[1]]}", 0,
     "a nested array"},
    {"{" TS LENS ", \"hash_ids\": []}", 1, "an empty array"},
    {"{" TS LENS ", \"hash_ids\": [ \t]}", 1, "an empty array with blanks"},
    {"{" TS "\"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}", 0,
     "more ids than blocks"},
    {"{" TS LENS IDS "} x", 0, "trailing garbage"},
    {"{" TS LENS IDS "}{}", 0, "a second object"},
    {"{" TS LENS IDS "}\t \x0b\x0c", 1, "trailing blanks"},
    {"\x0b{\x01\"timestamp\"\x1f:\t2000 ,\"input_length\"\x0c:1100,\"output_length\":3}", 1,
     "bytes 1 to 32 as blanks, as cJSON has them"},
    {"\xef\xbb\xbf{" TS LENS "}", 0, "a byte-order mark on line 2 (cJSON skips it)"},
    {"{" TS LENS ", \"n\": 1.5.3}", 0, "1.5.3"},
    {"{" TS LENS ", \"n\": 2.}", 0, "2. (strtod reads it)"},
    {"{" TS LENS ", \"n\": 1e}", 0, "1e"},
    {"{" TS LENS ", \"n\": .5}", 0, ".5"},
    {"{" TS LENS ", \"n\": nul}", 0, "nul"},
    {"{" TS LENS ", \"n\": nullx}", 0, "nullx"},
    {"{" TS LENS ", \"n\": 12345678901234567890123456789012345678901234567890123456789012}", 1,
     "a skipped number of 62 bytes"},
    {"{" TS LENS ", \"n\": 123456789012345678901234567890123456789012345678901234567890123}", 0,
     "63 bytes (cJSON's buffer, full)"},
    {"{" TS LENS ", \"n\": 1234567890123456789012345678901234567890123456789012345678901234}", 0,
     "64 bytes (cJSON cuts it)"},
    {"{" TS LENS ", \"n\": {\"a\" 1}}", 0, "a nested object without a colon"},
    {"{" TS LENS ", \"n\": {1: 1}}", 0, "a nested key not a string"},
    {"{" TS LENS ",}", 0, "a trailing comma"},
    {"{" TS LENS, 0, "no closing brace"},
    {"{}", 0, "an empty object"},
    {"[1, 2]", 0, "an array"},
    {"\"x\"", 0, "a string"},
};

/* A value nested depth deep, as a skipped key's: [[[...]]]. */
static char *nested(int depth)
{
    char *s = util_xmalloc((size_t)depth * 2 + 128);
    int n = sprintf(s, "{" TS LENS ", \"n\": ");
    for (int i = 0; i < depth; i++) s[n++] = '[';
    for (int i = 0; i < depth; i++) s[n++] = ']';
    strcpy(s + n, "}");
    return s;
}

static const char base_line[] =
    "{\"timestamp\": 1000, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [7, 8]}\n";

static void test_scanner_tricky(void)
{
    for (size_t i = 0; i < sizeof tricky_lines / sizeof *tricky_lines; i++) {
        const tricky *c = &tricky_lines[i];
        char *text = util_xasprintf("%s%s\n", base_line, c->line);
        paths p = text_vs_json(text, 512);
        is_int(p.differ, 0, "%s: as cJSON reads it", c->what);
        is_int(p.scanned, 1 + c->scanned, "%s: %s", c->what,
               c->scanned ? "the scanner reads it" : "left to cJSON");
        free(text);
        /* alone (the trace's first line), and with hash ids read past */
        text = util_xasprintf("%s\n", c->line);
        p = text_vs_json(text, 512);
        ok(p.differ == 0, "%s: as the first line too", c->what);
        p = text_vs_json(text, 0);
        ok(p.differ == 0, "%s: with hash_block_tokens 0 too", c->what);
        free(text);
    }
    static const int depths[] = {30, 31, 40, 998, 999, 1000};
    for (size_t i = 0; i < sizeof depths / sizeof *depths; i++) {
        char *line = nested(depths[i]);
        char *text = util_xasprintf("%s%s\n", base_line, line);
        paths p = text_vs_json(text, 512);
        is_int(p.differ, 0, "a skipped value nested %d deep: as cJSON reads it (%lld rows)",
               depths[i], (long long)p.rows);
        free(text);
        free(line);
    }
}

/* Lines the scanner reads, each changed by a few random edits (bytes of
 * JSON's alphabet put in, taken out or replaced), each the second line of
 * its own file: the scanner and cJSON agree on every one. */
static void test_scanner_mutations(void)
{
    static const char alphabet[] = "{}[]\":,.-+eE0123456789 \t\\/untrlsfa\x01\xc3";
    static const char *const seeds[] = {
        "{\"timestamp\": 2000, \"input_length\": 1100, \"output_length\": 3, \"hash_ids\": [1, "
        "2, 3]}",
        "{\"hash_ids\": [4, 5], \"output_length\": 7, \"input_length\": 1024, \"timestamp\": "
        "2500.5}",
        "{\"m\": {\"a\": [1, {\"b\": null}, true, false, -1.5e+3], \"s\": \"\\u00e9\\n\"}, "
        "\"timestamp\": 3000, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [9]}",
    };
    gsl_rng *r = util_rng_stream(11, 3);
    int64_t scanned = 0, rows = 0, differ = 0;
    const int n = 3000;
    for (int i = 0; i < n; i++) {
        const char *seed = seeds[i % 3];
        char line[512];
        size_t len = strlen(seed);
        memcpy(line, seed, len + 1);
        for (int e = 1 + (int)gsl_rng_uniform_int(r, 3); e > 0; e--) {
            size_t at = gsl_rng_uniform_int(r, len);
            char c = alphabet[gsl_rng_uniform_int(r, sizeof alphabet - 1)];
            switch (gsl_rng_uniform_int(r, 3)) {
            case 0: line[at] = c; break;
            case 1: memmove(line + at + 1, line + at, len - at + 1), line[at] = c, len++; break;
            default: memmove(line + at, line + at + 1, len - at), len--;
            }
        }
        char *text = util_xasprintf("%s%s\n", base_line, line);
        paths p = text_vs_json(text, 512);
        differ += p.differ != 0;
        scanned += p.scanned - 1;
        rows += p.rows - 1;
        free(text);
    }
    gsl_rng_free(r);
    is_int(differ, 0, "%d edited lines: the scanner and cJSON agree on every one", n);
    cmp_ok(rows, >, n / 20, "cJSON accepts more than 1 in 20 of them (%lld)", (long long)rows);
    ok(scanned > rows / 2 && scanned < rows,
       "the scanner read most of the lines cJSON accepts (%lld of %lld), cJSON the rest",
       (long long)scanned, (long long)rows);
}

/* ---- the source: a trace's segments, and the shared-prefix scenarios ---- */

/* A workload from JSON text, files relative to base_dir; 0 or the status. */
static int workload_of(const cJSON *w, const char *base_dir, wl_spec *s)
{
    util_diag d;
    util_diag_init(&d);
    cJSON *o = cJSON_Duplicate(w, true);
    int rc = util_schema_apply(wl_workload_fields, o, "workload", NULL, &d);
    if (rc == 0) rc = wl_spec_from_json(o, "workload", base_dir, s, &d);
    else memset(s, 0, sizeof *s);
    if (d.count) tap_diag("%s", d.msgs[0]);
    cJSON_Delete(o);
    util_diag_fini(&d);
    return rc;
}

static int workload_text(const char *json, wl_spec *s)
{
    cJSON *o = cJSON_Parse(json);
    char *dir = shared_path("traces");
    int rc = workload_of(o, dir, s);
    free(dir);
    cJSON_Delete(o);
    return rc;
}

/* hash_block_tokens reaches the replay; a prompt that is not the trace's
 * (a class's own prompt_tokens, or shared_prefix's) is not its content. */
static void test_source_trace_segments(void)
{
    wl_spec s;
    int rc = workload_text("{\"arrival\": {\"process\": \"trace\", \"path\": "
                           "\"conversation_trace.jsonl\", \"hash_block_tokens\": 256, "
                           "\"limit\": 2}}",
                           &s);
    is_int(rc, 0, "a Mooncake replay with hash_block_tokens 256 builds");
    if (rc) return;
    wl_source *src = wl_source_create(&s, 1);
    util_diag d;
    util_diag_init(&d);
    wl_record r;
    wl_source_next(src, 0, &r, &d);
    /* 6758 tokens, 14 ids: all 14 name whole blocks of 256 (26 of them) */
    is_int(r.n_segments, 14, "the replay's first record: a segment for each of its 14 ids");
    ok(r.n_segments > 0 && r.segments[0].tokens == 256,
       "the replay's segments are blocks of 256 tokens");
    wl_source_destroy(src);
    wl_spec_fini(&s);

    rc = workload_text("{\"arrival\": {\"process\": \"trace\", \"path\": "
                       "\"conversation_trace.jsonl\", \"limit\": 5}, \"classes\": [{\"name\": "
                       "\"a\", \"weight\": 1, \"prompt_tokens\": {\"dist\": \"fixed\", "
                       "\"value\": 9}}]}",
                       &s);
    src = wl_source_create(&s, 1);
    wl_source_next(src, 0, &r, &d);
    is_int(rc, 0, "a trace with a class of its own prompt_tokens builds");
    is_int(r.prompt, 9, "a class's own prompt_tokens over a trace: its length");
    is_int(r.n_segments, 0, "its hash ids go with its length: no segments");
    ok(r.segments == NULL, "and no segment array");
    wl_source_destroy(src);
    wl_spec_fini(&s);

    rc = workload_text("{\"arrival\": {\"process\": \"trace\", \"path\": "
                       "\"conversation_trace.jsonl\", \"limit\": 5}, \"shared_prefix\": "
                       "{\"num_groups\": 2, \"num_prompts_per_group\": 2}}",
                       &s);
    src = wl_source_create(&s, 1);
    wl_source_next(src, 0, &r, &d);
    is_int(rc, 0, "shared_prefix over a trace builds");
    is_int(r.prompt, 150, "shared_prefix over a trace: its prompts' 100 + 50 tokens");
    is_int(r.n_segments, 2, "as 2 segments");
    is_int(r.output, 500, "the trace's output");
    wl_source_destroy(src);
    wl_spec_fini(&s);
    util_diag_fini(&d);
}

/* The workload of tests/scenarios/NAME (beside data/), built. */
static int scenario_workload(const char *name, wl_spec *s)
{
    char *dir = shared_path("../tests/scenarios");
    char *path = util_path_join(dir, name);
    util_diag d;
    util_diag_init(&d);
    cJSON *root = NULL;
    int rc = util_json_read_file(path, &root, &d);
    if (d.count) tap_diag("%s", d.msgs[0]);
    util_diag_fini(&d);
    if (rc == 0) rc = workload_of(util_json_member(root, "workload"), dir, s);
    cJSON_Delete(root);
    free(path);
    free(dir);
    return rc;
}

static void test_scenario_files(void)
{
    wl_spec s;
    int rc = scenario_workload("shared-prefix-groups.json", &s);
    is_int(rc, 0, "shared-prefix-groups.json's workload builds");
    if (rc == 0) {
        wl_source *src = wl_source_create(&s, 3);
        util_diag d;
        util_diag_init(&d);
        uint64_t k0[100], k1[100];
        bool prompt_len = true, two_segments = true, system_len = true;
        for (int i = 0; i < 100; i++) {
            wl_record r;
            wl_source_next(src, 0, &r, &d);
            prompt_len &= r.prompt == 2176;
            two_segments &= r.n_segments == 2;
            system_len &= r.segments[0].tokens == 2048;
            k0[i] = r.segments[0].key;
            k1[i] = r.segments[1].key;
        }
        qsort(k0, 100, sizeof *k0, cmp_u64);
        qsort(k1, 100, sizeof *k1, cmp_u64);
        int g = 1, q = 1;
        for (int i = 1; i < 100; i++) {
            g += k0[i] != k0[i - 1];
            q += k1[i] != k1[i - 1];
        }
        ok(prompt_len, "its prompts: 2048 + 128 tokens");
        ok(two_segments, "as 2 segments");
        ok(system_len, "the first of them the system prompt's 2048 tokens");
        is_int(g, 4, "its first 100 requests: 4 system prompts");
        is_int(q, 100, "100 distinct prompts");
        wl_source_destroy(src);
        util_diag_fini(&d);
    }
    wl_spec_fini(&s);
    rc = scenario_workload("shared-prefix-closed.json", &s);
    is_int(rc, 0, "shared-prefix-closed.json's workload builds");
    if (rc == 0) {
        ok(s.classes[0].shared_prompt, "its first class shares the prompts");
        ok(!s.classes[1].shared_prompt, "its class with prompt_tokens of its own does not share");
        wl_source *src = wl_source_create(&s, 3);
        wl_record a, b;
        wl_source_draw(src, 0, &a);
        uint64_t first = a.segments[0].key;
        wl_source_draw(src, 1, &b);
        wl_source_draw(src, 0, &a);
        is_int(b.n_segments, 0, "draws: the class of its own prompts shares no segment");
        is_int(b.prompt, 512, "of its distinct 512 tokens");
        is_int(a.n_segments, 2, "the sharing class's prompt: 2 segments");
        is_int(a.prompt, 1024, "of 1000 + 24 tokens");
        ok(a.n_segments > 0 && a.segments[0].key == first, "in order: group 0 again");
        wl_source_destroy(src);
    }
    wl_spec_fini(&s);
    rc = scenario_workload("shared-prefix-mooncake.json", &s);
    is_int(rc, 0, "shared-prefix-mooncake.json's workload builds (the trace beside the tests)");
    if (rc == 0) {
        wl_source *src = wl_source_create(&s, 1);
        util_diag d;
        util_diag_init(&d);
        wl_record r;
        int64_t n = 0, segs = 0;
        while (wl_source_next(src, 0, &r, &d) == 1) {
            n++;
            segs += r.n_segments;
        }
        is_int(n, 300, "its 300 requests");
        cmp_ok(segs, >, 0, "carry segments (%lld)", (long long)segs);
        wl_source_destroy(src);
        util_diag_fini(&d);
    }
    wl_spec_fini(&s);
}

/* A line of a few megabytes (hash_ids of a long prompt) is one line. */
static void test_long_line(void)
{
    size_t cap = 8 << 20, n = 0;
    char *text = util_xmalloc(cap);
    /* 400000 blocks of 512 tokens: as many ids as the prompt has blocks */
    n += (size_t)snprintf(text, cap, "{\"timestamp\": 5, \"input_length\": 204800000, "
                                     "\"output_length\": 9, \"hash_ids\": [0");
    for (int i = 1; i < 400000; i++) n += (size_t)snprintf(text + n, cap - n, ", %d", i);
    snprintf(text + n, cap - n, "]}\n{\"timestamp\": 1005, \"input_length\": 1, "
                                "\"output_length\": 2, \"hash_ids\": []}\n");
    util_diag d;
    util_diag_init(&d);
    wl_record r = one(text, WL_TRACE_AUTO, 0, &d);
    is_int(r.n_segments, 400000, "a %zu-byte line's 400000 hash ids are 400000 segments", n);
    r = one(text, WL_TRACE_AUTO, 1, &d);
    is_near(r.arrival_s, 1, 0, "a %zu-byte line is read whole, and the next after it", n);
    is_int(r.prompt, 1, "the next record's prompt tokens");
    is_int(r.output, 2, "the next record's output tokens");
    is_int(r.n_segments, 0, "and its empty hash_ids, no segments");
    if (d.count) tap_diag("%s", d.msgs[0]);
    util_diag_fini(&d);
    free(text);
}

/* Times past the 1e9 s horizon, a line past the 4 MiB cap, a NUL byte and
 * files that are not regular files are input errors with FILE:LINE. */
static void test_bounds(void)
{
    expect_error("0,1,1\n1e10,1,1\n", WL_TRACE_AUTO,
                 ":2: field 1 (arrival_time_s): beyond the simulation's horizon, 1e9 s (31.7 "
                 "years), got '1e10'",
                 "csv: a time past the horizon");
    expect_error("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,1,1\n"
                 "2057-01-01 00:00:00,1,1\n",
                 WL_TRACE_AUTO,
                 ":3: field 1 (TIMESTAMP): beyond the simulation's horizon, 1e9 s (31.7 years) "
                 "after the first request, got '2057-01-01 00:00:00'",
                 "azure: 33 years after the first request");
    expect_error("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n"
                 "{\"timestamp\": 1e13, \"input_length\": 5, \"output_length\": 2}\n",
                 WL_TRACE_AUTO,
                 ":2: field 1 (timestamp): beyond the simulation's horizon, 1e9 s (31.7 years) "
                 "after the first request, got '10000000000000'",
                 "mooncake: 1e13 ms");
    expect_error("{\"timestamp\": 1e309, \"input_length\": 5, \"output_length\": 2}\n",
                 WL_TRACE_AUTO,
                 ":1: field 1 (timestamp): a number out of range (beyond 1.8e308, not a finite "
                 "double)",
                 "mooncake: 1e309 is not a finite number");

    /* a line of 5 MiB without a newline, after a good one */
    size_t big = 5u << 20;
    char *text = util_xmalloc(big + 16);
    strcpy(text, "0,1,1\n");
    memset(text + 6, '7', big);
    text[6 + big] = '\0';
    expect_error(text, WL_TRACE_AUTO, ":2: a line longer than 4 MiB (not a trace file?)",
                 "a line past the cap is refused, with its number");
    free(text);

    char *path = util_xstrdup("/tmp/servesim-trace-XXXXXX");
    FILE *f = fdopen(mkstemp(path), "w");
    fwrite("0,1,1\n1,2\0003,1\n", 1, 15, f);
    fclose(f);
    util_diag d;
    util_diag_init(&d);
    is_int(wl_trace_check(path, WL_TRACE_AUTO, NULL, &d), UTIL_EINPUT, "a NUL byte is refused");
    has_str(d.count ? d.msgs[0] : "", ":2: a NUL byte in the line (a binary file?)",
            "at its line");
    util_diag_clear(&d);
    unlink(path);
    free(path);

    is_int(wl_trace_check("/dev/zero", WL_TRACE_AUTO, NULL, &d), UTIL_EINPUT,
           "/dev/zero is refused at once, not read for ever");
    has_str(d.count ? d.msgs[0] : "", "/dev/zero: not a regular file", "as not a regular file");
    util_diag_clear(&d);
    is_int(wl_trace_check("/tmp", WL_TRACE_AUTO, NULL, &d), UTIL_EINPUT, "a folder is refused");
    has_str(d.count ? d.msgs[0] : "", "/tmp: is a folder, not a file", "and named as one");
    util_diag_clear(&d);
    wl_empirical *e = NULL;
    is_int(wl_empirical_load("/dev/zero", WL_TRACE_AUTO, false, &e, &d), UTIL_EINPUT,
           "the empirical reader refuses /dev/zero too (the same line reader)");
    ok(!e, "and makes no table");
    util_diag_fini(&d);
}

/* Draws every arrival of a workload whose arrival is the trace rel with
 * options; its mean rate, (n - 1) gaps over the span, and n. */
static double replayed_rate(const char *rel, const char *options, int64_t *n)
{
    char *path = shared_path(rel);
    char *json = util_xasprintf("{\"arrival\": {\"process\": \"trace\", \"path\": \"%s\"%s}}",
                                path, options);
    cJSON *w = cJSON_Parse(json);
    util_diag d;
    util_diag_init(&d);
    wl_spec spec;
    double rate = NAN;
    *n = 0;
    bool built = util_schema_apply(wl_workload_fields, w, "workload", NULL, &d) == 0;
    if (built && wl_spec_from_json(w, "workload", NULL, &spec, &d) == 0) {
        wl_source *src = wl_source_create(&spec, 1);
        wl_record r;
        double first = 0, last = 0;
        while (wl_source_next(src, 0, &r, &d) == 1) {
            if (!*n) first = r.arrival_s;
            last = r.arrival_s;
            ++*n;
        }
        rate = (double)(*n - 1) / (last - first);
        wl_source_destroy(src);
    }
    if (built) wl_spec_fini(&spec); /* a failed build too: it owns what it made */
    if (d.count) tap_diag("%s", d.msgs[0]);
    util_diag_fini(&d);
    cJSON_Delete(w);
    free(json);
    free(path);
    return rate;
}

/* rate_per_s is the mean rate of the requests replayed -- after start_s
 * and limit have cut the slice, not of the whole file. */
static void test_rate_of_slice(void)
{
    const char *code = "traces/AzureLLMInferenceTrace_code.csv";
    int64_t n;
    double rate = replayed_rate(code, ", \"rate_per_s\": 5, \"limit\": 2000, \"start_s\": 600", &n);
    is_int(n, 2000, "limit 2000 from 600 s: 2000 requests");
    is_near(rate, 5, 5e-9, "and their mean rate is rate_per_s, 5/s (got %.12g)", rate);
    rate = replayed_rate(code, ", \"rate_per_s\": 5, \"limit\": 2000", &n);
    is_near(rate, 5, 5e-9, "limit alone (got %.12g)", rate);
    rate = replayed_rate(code, ", \"rate_per_s\": 5, \"start_s\": 600", &n);
    is_near(rate, 5, 5e-9, "start_s alone (got %.12g)", rate);
    rate = replayed_rate(code, ", \"rate_per_s\": 5", &n);
    is_int(n, 8819, "the whole trace");
    is_near(rate, 5, 5e-9, "at 5/s (got %.12g)", rate);
    rate = replayed_rate(code, ", \"rate_per_s\": 5, \"time_scale\": 2", &n);
    is_near(rate, 2.5, 2.5e-9, "time_scale 2 after it halves the rate (got %.12g)", rate);
}

/* ---- empirical ---- */

typedef struct column {
    double mean, var;
    bool *present; /* present[v]: v occurs in the column */
    int32_t max;
} column;

/* The column read record by record, for comparison with the table. */
static column read_column(const char *path, bool output)
{
    column c = {0};
    util_diag d;
    util_diag_init(&d);
    wl_trace *t;
    wl_record r;
    double s = 0, s2 = 0;
    int64_t n = 0;
    size_t cap = 1;
    c.present = util_xcalloc(cap, 1);
    wl_trace_open(path, WL_TRACE_AUTO, &t, &d);
    while (wl_trace_next(t, &r, &d) == 1) {
        int32_t v = output ? r.output : r.prompt;
        if ((size_t)v >= cap) {
            c.present = util_xrealloc(c.present, (size_t)v * 2);
            memset(c.present + cap, 0, (size_t)v * 2 - cap);
            cap = (size_t)v * 2;
        }
        c.present[v] = true;
        c.max = v > c.max ? v : c.max;
        s += v;
        s2 += (double)v * v;
        n++;
    }
    wl_trace_close(t);
    util_diag_fini(&d);
    c.mean = s / (double)n;
    c.var = s2 / (double)n - c.mean * c.mean;
    return c;
}

static void check_sampling(const char *rel, bool output, double mean, int64_t distinct)
{
    char *path = shared_path(rel);
    util_diag d;
    util_diag_init(&d);
    wl_empirical *e = NULL;
    is_int(wl_empirical_load(path, WL_TRACE_AUTO, output, &e, &d), 0, "%s loads", rel);
    if (!e) {
        tap_diag("%s", d.count ? d.msgs[0] : "?");
        util_diag_fini(&d);
        free(path);
        return;
    }
    column c = read_column(path, output);
    is_near(wl_empirical_mean(e), mean, 1e-9 * mean, "%s %s: the table's mean", rel,
            output ? "output" : "input");
    is_int(wl__empirical_distinct(e), distinct, "%s: %lld distinct values", rel,
           (long long)distinct);
    gsl_rng *r = util_rng_stream(7, 7);
    double s = 0;
    bool all_present = true;
    for (int i = 0; i < N; i++) {
        double x = wl_empirical_sample(e, r);
        all_present &= x >= 1 && x <= c.max && x == floor(x) && c.present[(int32_t)x];
        s += x;
    }
    gsl_rng_free(r);
    is_near(s / N, c.mean, Z * sqrt(c.var / N), "%s: the mean of %d draws", rel, N);
    ok(all_present, "%s: every draw is a value of the column", rel);
    free(c.present);
    wl_empirical_destroy(e);
    util_diag_fini(&d);
    free(path);
}

static void test_empirical(void)
{
    check_sampling("traces/AzureLLMInferenceTrace_code.csv", true, 27.88252636353328, 281);
    check_sampling("traces/conversation_trace.jsonl", false, 12035.061341534369, 8559);
}

/* 100,000 rows of 37 distinct values: the table holds 37 entries. */
static void test_streaming(void)
{
    char *path = util_xstrdup("/tmp/servesim-trace-XXXXXX");
    FILE *f = fdopen(mkstemp(path), "w");
    double sum = 0;
    fputs("arrival_time_s,input_tokens,output_tokens\n", f);
    for (int i = 0; i < 100000; i++) {
        int v = 1 + (i * 7919) % 37;
        fprintf(f, "%d.5,%d,%d\n", i, 1000 + v, v);
        sum += v;
    }
    fclose(f);
    util_diag d;
    util_diag_init(&d);
    wl_empirical *e = NULL;
    is_int(wl_empirical_load(path, WL_TRACE_AUTO, true, &e, &d), 0, "a 100k-line trace loads");
    if (e) {
        is_int(wl__empirical_distinct(e), 37, "the table holds the distinct values only");
        is_near(wl_empirical_mean(e), sum / 100000, 1e-12, "and their counts");
    }
    wl_empirical_destroy(e);
    unlink(path);
    free(path);
    util_diag_fini(&d);
}

/* ---- the empirical distribution in a scenario ---- */

static int dist_of(const char *json, bool whole, wl_dist *out, util_diag *d)
{
    cJSON *o = cJSON_Parse(json);
    int rc = util_schema_apply_union(&wl_dist_schema, o, "w.p", NULL, d);
    char *dir = shared_path("traces");
    if (!rc) rc = wl_dist_from_json(o, "w.p", dir, whole, out, d);
    free(dir);
    cJSON_Delete(o);
    return rc;
}

static void test_dist(void)
{
    util_diag d;
    util_diag_init(&d);
    wl_dist dist;
    int rc = dist_of("{\"dist\": \"empirical\", \"path\": \"AzureLLMInferenceTrace_conv.csv\", "
                     "\"column\": \"output\", \"max\": 500}",
                     true, &dist, &d);
    is_int(rc, 0, "empirical from a scenario");
    if (rc == 0) { /* else dist holds nothing to look at */
        is_int(dist.kind, WL_DIST_EMPIRICAL, "of kind empirical");
        ok(dist.emp != NULL, "with its table");
    }
    if (d.count) tap_diag("%s", d.msgs[0]);
    if (rc == 0) {
        gsl_rng *r = util_rng_stream(3, 1);
        double lo = INFINITY, hi = 0;
        for (int i = 0; i < N; i++) {
            double x = wl_dist_sample(&dist, r);
            lo = fmin(lo, x);
            hi = fmax(hi, x);
        }
        gsl_rng_free(r);
        is_near(lo, 7, 0, "draws span the column, clamped by max (got %g..%g)", lo, hi);
        is_near(hi, 500, 0, "the largest draw is max");
        wl_dist_fini(&dist);
        ok(dist.emp == NULL, "wl_dist_fini frees the table");
    }
    util_diag_clear(&d);
    rc = dist_of("{\"dist\": \"empirical\", \"path\": \"synthetic_trace.jsonl\", "
                 "\"column\": \"input\"}",
                 false, &dist, &d);
    is_int(rc, UTIL_EINPUT, "empirical durations are refused");
    ok(dist.emp == NULL, "and no table is kept");
    has_str(d.count ? d.msgs[0] : "", "w.p.dist: empirical is for token counts",
            "with the path named");
    util_diag_clear(&d);
    rc = dist_of("{\"dist\": \"empirical\", \"path\": \"nope.csv\", \"column\": \"input\"}",
                 true, &dist, &d);
    is_int(rc, UTIL_EINPUT, "a missing file is an input error");
    has_str(d.count ? d.msgs[0] : "", "w.p.path: ", "naming the scenario key");
    has_str(d.count ? d.msgs[0] : "", "traces/nope.csv: cannot open",
            "and the file, relative to base_dir");
    util_diag_clear(&d);
    rc = dist_of("{\"dist\": \"empirical\", \"path\": \"README.md\", \"column\": \"input\", "
                 "\"format\": \"mooncake\"}",
                 true, &dist, &d);
    has_str(d.count ? d.msgs[0] : "", "README.md:1:1: expected one JSON object on the line",
            "a malformed file's FILE:LINE comes through");
    util_diag_clear(&d);
    rc = dist_of("{\"dist\": \"empirical\", \"path\": \"x.csv\", \"column\": \"prompt\"}", true,
                 &dist, &d);
    has_str(d.count ? d.msgs[0] : "", "w.p.column: unknown value 'prompt'",
            "column is input or output");
    util_diag_fini(&d);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("Bail out! usage: test_trace DATA_FOLDER\n");
        return 1;
    }
    shared = argv[1];
    char *probe = shared_path("traces/README.md");
    bool found = access(probe, R_OK) == 0;
    free(probe);
    if (!found) {
        printf("Bail out! no traces in %s\n", shared);
        return 1;
    }
    test_first_records();
    test_check_shipped();
    test_azure_times();
    test_csv();
    test_azure_errors();
    test_own_columns();
    test_check_tenants();
    test_mooncake_errors();
    test_long_line();
    test_mooncake_segments();
    test_csv_segments();
    test_hash_id_errors();
    test_shipped_segments();
    test_scanner_shipped();
    test_scanner_tricky();
    test_scanner_mutations();
    test_source_trace_segments();
    test_scenario_files();
    test_bounds();
    test_rate_of_slice();
    test_empirical();
    test_streaming();
    test_dist();
    return tap_done();
}
