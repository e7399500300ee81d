/*
 * test_golden.c: a fixed scenario and seed give a reference report
 * (tests/golden/small.report.json, wall-clock field removed), and two runs
 * give byte-identical reports and request rows.  argv[1] is the source root.
 * The reference is compared to 12 significant digits rather than byte for
 * byte: under valgrind, long double is emulated as double, which moves the
 * last digits of GSL's running means; any change in behaviour moves far more.
 * To accept a deliberate change of the numbers, run the program with
 * SERVESIM_UPDATE_GOLDEN=1 and review the diff of the reference file.
 */
#include <math.h>
#include <stdlib.h>

#include "support.h"
#include "tap.h"

/* cmp_ok(a, op, b, "description"): a op b on numbers, printing both sides on
 * failure (tap.h has no such assertion; a candidate for it). */
/* The report as JSON without the one field allowed to differ between runs. */
static char *report_text(sqlite3 *db, int64_t run)
{
    util_diag d;
    util_diag_init(&d);
    an_report r;
    an_report_compute(db, run, &r, &d);
    cJSON *o = an_report_json(&r, false);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(o, "run"), "wall_time_s");
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    an_report_fini(&r);
    util_diag_fini(&d);
    return text;
}

/* Every request row, every column, at full precision. */
static char *rows_text(sqlite3 *db)
{
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT * FROM requests ORDER BY id", -1, &st, NULL);
    size_t cap = 1 << 16, len = 0;
    char *s = util_xmalloc(cap);
    s[0] = '\0';
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            char cell[64];
            if (sqlite3_column_type(st, c) == SQLITE_FLOAT)
                snprintf(cell, sizeof cell, "%.17g,", sqlite3_column_double(st, c));
            else
                snprintf(cell, sizeof cell, "%s,", (const char *)sqlite3_column_text(st, c));
            size_t n = strlen(cell);
            if (len + n + 2 > cap) s = util_xrealloc(s, cap *= 2);
            memcpy(s + len, cell, n + 1);
            len += n;
        }
        s[len++] = '\n';
        s[len] = '\0';
    }
    sqlite3_finalize(st);
    return s;
}

/* Same structure, same strings, numbers equal to 12 significant digits;
 * prints the first difference. */
static bool json_near(const cJSON *a, const cJSON *b, const char *path)
{
    if (cJSON_IsNumber(a) && cJSON_IsNumber(b)) {
        double x = a->valuedouble, y = b->valuedouble;
        if (fabs(x - y) <= 1e-12 * fmax(fabs(x), fabs(y)) + 1e-300) return true;
        printf("# %s: %.17g != %.17g\n", path, x, y);
        return false;
    }
    if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
        if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) {
            printf("# %s: different keys\n", path);
            return false;
        }
        for (const cJSON *c = a->child; c; c = c->next) {
            char *p = util_xasprintf("%s.%s", path, c->string);
            bool same = json_near(c, cJSON_GetObjectItemCaseSensitive(b, c->string), p);
            free(p);
            if (!same) return false;
        }
        return true;
    }
    bool same = a && b && cJSON_Compare(a, b, 1);
    if (!same) printf("# %s differs\n", path);
    return same;
}

static sqlite3 *run_file(const char *path, int64_t *run)
{
    util_diag d;
    util_diag_init(&d);
    char *json = NULL;
    util_read_file(path, &json, NULL, &d);
    util_diag_fini(&d);
    sim_scenario sc;
    sqlite3 *db = NULL;
    if (json && support_scenario(json, NULL, &sc, NULL) == 0) db = support_run_db(&sc, run);
    sim_scenario_fini(&sc);
    free(json);
    return db;
}

int main(int argc, char **argv)
{
    if (argc < 2 || support_init()) return 1;
    char *scenario = util_xasprintf("%s/tests/golden/small.json", argv[1]);
    char *golden = util_xasprintf("%s/tests/golden/small.report.json", argv[1]);
    int64_t r1, r2;
    sqlite3 *a = run_file(scenario, &r1), *b = run_file(scenario, &r2);
    ok(a != NULL, "the golden scenario runs");
    ok(b != NULL, "and runs again");
    if (!a || !b) return tap_done();

    char *ra = report_text(a, r1), *rb = report_text(b, r2);
    char *rows_a = rows_text(a), *rows_b = rows_text(b);
    is_str(ra, rb, "two runs give byte-identical reports");
    cmp_ok(strlen(rows_a), >, 1000, "the runs have request rows");
    is_str(rows_a, rows_b, "two runs give byte-identical request rows (%zu bytes)", strlen(rows_a));

    if (getenv("SERVESIM_UPDATE_GOLDEN")) {
        FILE *f = fopen(golden, "w");
        fprintf(f, "%s\n", ra);
        fclose(f);
        tap_diag("wrote %s", golden);
    }
    util_diag d;
    util_diag_init(&d);
    char *want = NULL;
    util_read_file(golden, &want, NULL, &d);
    if (want && *want) want[strlen(want) - 1] = '\0'; /* the file ends with a newline */
    cJSON *got_j = cJSON_Parse(ra), *want_j = cJSON_Parse(want ? want : "");
    ok(want_j != NULL, "tests/golden/small.report.json is JSON");
    ok(json_near(got_j, want_j, "report"), "the report equals tests/golden/small.report.json");
    cJSON_Delete(got_j);
    cJSON_Delete(want_j);
    util_diag_fini(&d);

    free(want);
    free(ra);
    free(rb);
    free(rows_a);
    free(rows_b);
    sqlite3_close(a);
    sqlite3_close(b);
    free(scenario);
    free(golden);
    support_fini();
    return tap_done();
}
