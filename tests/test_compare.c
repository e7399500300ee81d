/*
 * test_compare.c: two stored runs side by side.  A run compared with itself
 * shows no difference at all; runs that differ in one scenario key list that
 * key alone, and their metric differences equal B - A and 100 (B - A) / |A|
 * computed from each run's own report.  Then `servesim compare` as users
 * run it: the text, --json, one file with two runs, and bad input (exit 2,
 * the file named).  argv[1] is the servesim binary, argv[2] the source root.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"
#include "runner.h"
#include "tap.h"

/* cmp_ok(a, op, b, "description"): a op b on numbers, printing both sides on
 * failure (tap.h has no such assertion; a candidate for it). */
static const char *servesim;
static char dir[] = "/tmp/servesim-compare-XXXXXX";
static char *scenario; /* tests/scenarios/compare-base.json */

/* The scenario with overrides, run into a fresh in-memory database. */
static sqlite3 *run_db(const char *const *sets, int64_t *run)
{
    sim_scenario sc;
    sqlite3 *db = NULL;
    if (support_scenario(scenario, sets, &sc, NULL) == 0) db = support_run_db(&sc, run);
    sim_scenario_fini(&sc);
    return db;
}

static cJSON *compare(sqlite3 *a, int64_t run_a, sqlite3 *b, int64_t run_b)
{
    an_run_ref ra = {a, "a.db", run_a}, rb = {b, "b.db", run_b};
    util_diag d;
    util_diag_init(&d);
    cJSON *cmp = NULL;
    if (an_compare(&ra, &rb, &cmp, &d)) util_diag_print(&d, stdout, "# compare");
    util_diag_fini(&d);
    return cmp;
}

static const cJSON *metric(const cJSON *cmp, const char *path)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(cmp, "metrics")) {
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(m, "path")), path)) return m;
    }
    return NULL;
}

static double field(const cJSON *m, const char *key)
{
    return util_json_number(m, key, NAN);
}

static int n_scenario(const cJSON *cmp)
{
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cmp, "scenario"));
}

/* The comparison as an_compare_print writes it; caller frees. */
static char *text_of(const cJSON *cmp, bool all)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    an_compare_print(cmp, all, f);
    fclose(f);
    return buf;
}

static void test_flatten(void)
{
    cJSON *j = cJSON_Parse("{\"a\": {\"b\": 1, \"c\": [2, {\"d\": null}]}, \"e\": \"x\", "
                           "\"f\": [], \"g\": {}}");
    cJSON *f = an_json_flatten(j);
    const char *paths[] = {"a.b", "a.c[0]", "a.c[1].d", "e", "f", "g"};
    int i = 0;
    is_int(cJSON_GetArraySize(f), 6, "flatten: one entry per leaf");
    bool in_order = cJSON_GetArraySize(f) == 6;
    const cJSON *v;
    cJSON_ArrayForEach(v, f) {
        in_order &= i < 6 && !strcmp(v->string, paths[i++]);
    }
    ok(in_order, "flatten: dotted paths, arrays as [i], empty containers as leaves, in order");
    ok(cJSON_IsNull(cJSON_GetObjectItem(f, "a.c[1].d")), "and the leaves keep their values: null");
    is_near(cJSON_GetNumberValue(cJSON_GetObjectItem(f, "a.c[0]")), 2, 0, "numbers");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(f, "e")), "x", "and strings");
    cJSON_Delete(f);
    cJSON_Delete(j);
}

/* A difference of a run with itself is exactly 0, or null where there is
 * nothing to compare: diff where A is null, rel where A is 0 or null. */
static bool diff_zero(const cJSON *m)
{
    double a = field(m, "a"), diff = field(m, "diff");
    return isnan(a) ? isnan(diff) : diff == 0;
}

static bool rel_zero(const cJSON *m)
{
    double a = field(m, "a"), rel = field(m, "rel");
    return !isnan(a) && a != 0 ? rel == 0 : isnan(rel);
}

/* Whether every metric holds, naming each one that does not. */
static bool every_metric(const cJSON *cmp, bool (*holds)(const cJSON *), const char *what)
{
    const cJSON *m;
    bool all = true;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(cmp, "metrics")) {
        if (holds(m)) continue;
        tap_diag("%s differs (%s)", cJSON_GetStringValue(cJSON_GetObjectItem(m, "path")), what);
        all = false;
    }
    return all;
}

static void test_self(void)
{
    const char *sets[] = {"workload.classes=[{\"name\": \"chat\", \"weight\": 3}, "
                          "{\"name\": \"batch\", \"weight\": 1, \"slo\": {\"e2e_s\": 20}}]",
                          NULL};
    int64_t run;
    sqlite3 *db = run_db(sets, &run);
    cJSON *cmp = compare(db, run, db, run);
    ok(cmp != NULL, "a run compared with itself");
    is_int(n_scenario(cmp), 0, "no scenario key differs");
    cmp_ok(cJSON_GetArraySize(cJSON_GetObjectItem(cmp, "metrics")), >, 100,
           "every metric is listed");
    ok(every_metric(cmp, diff_zero, "diff"), "every diff is exactly 0 (null where A is null)");
    ok(every_metric(cmp, rel_zero, "rel"), "every rel is exactly 0 (null where A is 0 or null)");
    ok(metric(cmp, "classes.batch.slo.attainment") != NULL, "classes are compared");
    ok(metric(cmp, "requests.arrived") != NULL, "and the run's metrics");
    ok(!metric(cmp, "run.wall_time_s"), "wall time is not a metric");
    ok(!metric(cmp, "run.id"), "nor the id");
    ok(!metric(cmp, "run.name"), "nor the name");
    ok(!metric(cmp, "run.status"), "nor the status, not a number");
    char *text = text_of(cmp, false);
    has_str(text, "scenario: identical", "text: the scenarios are identical");
    has_str(text, "metrics: 0 differ", "and no metric differs");
    free(text);
    cJSON_Delete(cmp);
    sqlite3_close(db);
}

/* B - A of one metric, against the two reports computed independently. */
static void check_diff(const cJSON *cmp, const char *path, double a, double b)
{
    const cJSON *m = metric(cmp, path);
    ok(m != NULL, "%s: compared", path);
    is_near(field(m, "a"), a, 0, "%s: A is A's report", path);
    is_near(field(m, "b"), b, 0, "%s: B is B's report", path);
    is_near(field(m, "diff"), b - a, 0, "%s: diff = B - A exactly", path);
    is_near(field(m, "rel"), 100 * (b - a) / fabs(a), 0, "%s: rel = 100 (B - A) / |A|", path);
}

static void test_one_key(void)
{
    const char *slow[] = {"workload.arrival.rate_per_s=5", NULL};
    const char *fast[] = {"workload.arrival.rate_per_s=10", NULL};
    int64_t run_a, run_b;
    sqlite3 *a = run_db(slow, &run_a), *b = run_db(fast, &run_b);
    cJSON *cmp = compare(a, run_a, b, run_b);
    is_int(n_scenario(cmp), 1, "rate 5 against 10, same seed: one scenario key differs");
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(cmp, "scenario"), 0);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(first, "path")), "workload.arrival.rate_per_s",
           "and it is the rate");
    is_near(field(first, "a"), 5, 0, "from 5");
    is_near(field(first, "b"), 10, 0, "to 10");

    util_diag d;
    util_diag_init(&d);
    an_report ra, rb;
    is_int(an_report_compute(a, run_a, &ra, &d), 0, "each run's own report");
    is_int(an_report_compute(b, run_b, &rb, &d), 0, "and B's");
    cmp_ok(rb.req.requests_per_s, >, ra.req.requests_per_s,
           "twice the rate: more requests per second");
    check_diff(cmp, "throughput.requests_per_s", ra.req.requests_per_s, rb.req.requests_per_s);
    check_diff(cmp, "requests.measured", (double)ra.req.measured, (double)rb.req.measured);
    check_diff(cmp, "ttft_s.p99", ra.req.ttft.p99, rb.req.ttft.p99);
    check_diff(cmp, "run.sim_time_s", ra.sim_time_s, rb.sim_time_s);
    ok(!metric(cmp, "classes.default.requests.arrived"),
       "runs without classes are not listed twice as class \"default\"");

    char *text = text_of(cmp, false);
    has_str(text, "scenario: 1 key differs\n  workload.arrival.rate_per_s: 5 -> 10\n",
            "text: the differing key, first");
    has_str(text, "throughput.requests_per_s", "text: a metric that differs");
    free(text);
    an_report_fini(&ra);
    an_report_fini(&rb);
    util_diag_fini(&d);
    cJSON_Delete(cmp);
    sqlite3_close(a);
    sqlite3_close(b);
}

/* Known pairs: 100 and 150 requests differ by +50% one way and by -33.3%
 * the other; no SLO against one has null differences. */
static void test_relative(void)
{
    const char *hundred[] = {"stop.requests=100", NULL};
    const char *more[] = {"stop.requests=150", "slo.ttft_s=1", NULL};
    int64_t run_a, run_b;
    sqlite3 *a = run_db(hundred, &run_a), *b = run_db(more, &run_b);
    cJSON *cmp = compare(a, run_a, b, run_b), *back = compare(b, run_b, a, run_a);
    const cJSON *m = metric(cmp, "requests.arrived");
    is_near(field(m, "diff"), 50, 0, "100 -> 150: +50");
    is_near(field(m, "rel"), 50, 0, "+50%%");
    m = metric(back, "requests.arrived");
    is_near(field(m, "diff"), -50, 0, "150 -> 100: -50");
    is_near(field(m, "rel"), 100.0 * -50 / 150, 0, "-33.3%%");
    m = metric(cmp, "requests.rejected");
    is_near(field(m, "diff"), 0, 0, "0 -> 0: diff 0");
    ok(cJSON_IsNull(cJSON_GetObjectItem(m, "rel")), "rel null (no scale)");
    m = metric(cmp, "slo.attainment");
    ok(cJSON_IsNull(cJSON_GetObjectItem(m, "a")), "null -> value: A null");
    ok(!isnan(field(m, "b")), "B a value");
    ok(cJSON_IsNull(cJSON_GetObjectItem(m, "diff")), "null -> value: diff null");
    ok(cJSON_IsNull(cJSON_GetObjectItem(m, "rel")), "and rel null");
    const cJSON *c, *slo = NULL;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(cmp, "scenario")) {
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "path")), "slo.ttft_s")) slo = c;
    }
    ok(slo != NULL, "a key only B has is listed");
    ok(!cJSON_GetObjectItem(slo, "a"), "a key only B has: no \"a\"");
    is_near(field(slo, "b"), 1, 0, "and B's value");
    char *text = text_of(cmp, false);
    has_str(text, "slo.ttft_s: (absent) -> 1", "text: (absent)");
    free(text);
    cJSON_Delete(cmp);
    cJSON_Delete(back);
    sqlite3_close(a);
    sqlite3_close(b);
}

static void test_no_run(void)
{
    int64_t run;
    sqlite3 *db = run_db(NULL, &run);
    an_run_ref a = {db, "a.db", run}, b = {db, "b.db", run + 7};
    util_diag d;
    util_diag_init(&d);
    cJSON *cmp = NULL;
    is_int(an_compare(&a, &b, &cmp, &d), UTIL_EINPUT, "a run that is not there is bad input");
    is_int(d.count, 1, "one message");
    ok(cmp == NULL, "no comparison");
    has_str(d.count ? d.msgs[0] : "", "b.db: no run with id", "naming the file");
    util_diag_fini(&d);
    sqlite3_close(db);
}

/* ---- the command ---- */

static char *in_dir(const char *name)
{
    return util_xasprintf("%s/%s", dir, name);
}

/* Runs servesim with up to 30 arguments (NULL-terminated). */
#define sv(...) runner_run(servesim, dir, __VA_ARGS__)

static void run_into(const char *quick, const char *db, const char *rate)
{
    result r = sv("run", quick, "-o", db, "--set", "stop.requests=200", "--set", rate, "-q", NULL);
    is_int(r.status, 0, "servesim run %s", rate);
    runner_drop(&r);
}

static void test_cli(const char *quick)
{
    char *a = in_dir("a.db"), *b = in_dir("b.db"), *text = in_dir("notes.txt");
    run_into(quick, a, "workload.arrival.rate_per_s=5");
    run_into(quick, b, "workload.arrival.rate_per_s=10");

    result r = sv("--help", NULL);
    has_str(r.out, "compare A.db B.db", "servesim --help lists compare");
    runner_drop(&r);
    r = sv("compare", "--help", NULL);
    is_int(r.status, 0, "compare --help");
    has_str(r.out, "usage: servesim compare", "prints the usage");
    runner_drop(&r);

    r = sv("compare", a, b, NULL);
    is_int(r.status, 0, "compare exits 0");
    has_str(r.out, "workload.arrival.rate_per_s: 5 -> 10", "and names the key that differs");
    runner_drop(&r);

    r = sv("compare", a, b, "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    is_int(r.status, 0, "--json exits 0");
    is_int(n_scenario(j), 1, "--json: the scenario key");
    ok(metric(j, "throughput.requests_per_s") != NULL, "and the metrics");
    cJSON_Delete(j);
    runner_drop(&r);

    run_into(quick, a, "workload.arrival.rate_per_s=10"); /* a.db now holds runs 1 and 2 */
    r = sv("compare", a, a, "--run-a", "1", "--run-b", "2", NULL);
    is_int(r.status, 0, "two runs of one file");
    has_str(r.out, "rate_per_s: 5 -> 10", "compared");
    runner_drop(&r);
    r = sv("compare", a, b, "--all", NULL);
    is_int(r.status, 0, "--all exits 0");
    has_str(r.out, "scenario: identical", "--all: the same scenario");
    has_str(r.out, "requests.arrived", "--all: equal metrics listed too");
    runner_drop(&r);

    char *missing = in_dir("missing.db");
    r = sv("compare", a, missing, NULL);
    is_int(r.status, 2, "a missing file: exit 2");
    has_str(r.err, missing, "naming the file");
    runner_drop(&r);
    FILE *f = fopen(text, "w");
    fputs("not a database\n", f);
    fclose(f);
    r = sv("compare", text, b, NULL);
    is_int(r.status, 2, "not a database: exit 2");
    has_str(r.err, text, "the file named");
    runner_drop(&r);
    r = sv("compare", a, b, "--run-b", "9", NULL);
    is_int(r.status, 2, "no such run: exit 2");
    has_str(r.err, "b.db: no run with id 9", "the run named");
    runner_drop(&r);
    r = sv("compare", a, NULL);
    is_int(r.status, 2, "one file is bad usage");
    runner_drop(&r);

    char *junk[] = {a, b, text, missing};
    for (int i = 0; i < 4; i++) {
        unlink(junk[i]);
        free(junk[i]);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3 || support_init() || !mkdtemp(dir)) return 1;
    servesim = argv[1];
    scenario = support_scenario_text("compare-base.json");
    char *quick = util_xasprintf("%s/examples/quickstart.json", argv[2]);
    test_flatten();
    test_self();
    test_one_key();
    test_relative();
    test_no_run();
    test_cli(quick);
    free(quick);
    char *out = in_dir("stdout"), *err = in_dir("stderr");
    unlink(out);
    unlink(err);
    free(out);
    free(err);
    rmdir(dir);
    free(scenario);
    support_fini();
    return tap_done();
}
