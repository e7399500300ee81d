/*
 * test_mpi.c: sweeps and plans over MPI ranks (`mpirun -np 3`: rank 0
 * writes, two ranks simulate) give what `-j 1` gives: the same rows in
 * every table (run ids, seeds and all; the runs' wall-clock columns aside,
 * which no two runs share), the same plan.  A worker rank killed mid-sweep
 * ends the job with the finished points kept whole, and `--resume` under
 * mpirun finishes the same database.  Skipped, saying why, when servesim
 * was built without MPI or mpirun is missing.  argv[1] is the servesim
 * binary, argv[2] the source root.
 */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "runner.h"
#include "tap.h"
#include "util.h"

static const char *servesim;
static char *mpirun_path; /* mpirun, found on PATH */
static char dir[] = "/tmp/servesim-mpi-XXXXXX";
static char *scenario;

static const char *const mpirun[] = {
    "mpirun", "-np", "3", "--oversubscribe", "--allow-run-as-root", "--bind-to", "none"};
enum { N_MPIRUN = sizeof mpirun / sizeof mpirun[0] };

/* servesim ARGS..., under mpirun when mpi is set. */
static result run(bool mpi, const char *a0, ...)
{
    char *argv[48];
    int n = 0;
    for (int i = 0; mpi && i < N_MPIRUN; i++)
        argv[n++] = (char *)mpirun[i];
    argv[n++] = (char *)servesim;
    va_list ap;
    va_start(ap, a0);
    for (const char *a = a0; a && n < 47; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    return runner_argv(mpi ? mpirun_path : servesim, dir, argv);
}

/* The rows of queries, as text, run_id (?1) bound to run. */
static void append_rows(sqlite3 *db, const char *sql, int64_t run, bool skip_first, char **text,
                        size_t *len, size_t *cap)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return;
    sqlite3_bind_int64(st, 1, run);
    while (sqlite3_step(st) == SQLITE_ROW)
        for (int c = skip_first; c < sqlite3_column_count(st); c++) {
            const char *v = (const char *)sqlite3_column_text(st, c);
            size_t k = strlen(v ? v : "NULL") + 2;
            while (*len + k + 1 > *cap)
                *text = util_xrealloc(*text, *cap *= 2);
            *len += (size_t)snprintf(*text + *len, *cap - *len, "%s%c", v ? v : "NULL",
                                     c + 1 < sqlite3_column_count(st) ? '|' : '\n');
        }
    sqlite3_finalize(st);
}

/* Every table's rows, as text: the runs in id order (by_point: in the
 * order of their overrides and seed, their ids left out, for a sweep that
 * was resumed and so numbered its last points after the others), each
 * run's rows in their key order; the runs' started_at and wall_s left out. */
static char *rows_of_as(const char *path, bool by_point)
{
    sqlite3 *db = NULL;
    sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
    static const char *const per_run[] = {
        "SELECT name, seed, scenario, version, status, sim_end_s, events, overrides, sweep, "
        "status_reason FROM runs WHERE id = ?1",
        "SELECT * FROM requests WHERE run_id = ?1 ORDER BY 2",
        "SELECT * FROM replicas WHERE run_id = ?1 ORDER BY 2",
        "SELECT * FROM tasks WHERE run_id = ?1 ORDER BY 2",
        "SELECT * FROM iterations WHERE run_id = ?1 ORDER BY 2, 3"};
    size_t cap = 1 << 16, len = 0;
    char *text = util_xmalloc(cap);
    text[0] = '\0';
    sqlite3_stmt *runs = NULL;
    sqlite3_prepare_v2(db,
                       by_point ? "SELECT id FROM runs ORDER BY overrides, seed"
                                : "SELECT id FROM runs ORDER BY id",
                       -1, &runs, NULL);
    while (sqlite3_step(runs) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(runs, 0);
        if (!by_point) len += (size_t)snprintf(text + len, cap - len, "run %lld\n", (long long)id);
        for (size_t q = 0; q < sizeof per_run / sizeof per_run[0]; q++) {
            /* by point, a row's run_id (its first column) is not compared */
            append_rows(db, per_run[q], id, by_point && q > 0, &text, &len, &cap);
        }
    }
    sqlite3_finalize(runs);
    sqlite3_close(db);
    return text;
}

/* Says where two texts first differ, line by line. */
static void first_difference(const char *a, const char *b)
{
    for (int line = 1; *a || *b; line++) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        if (la != lb || strncmp(a, b, la)) {
            tap_diag("line %d: %.*s", line, (int)(la < 300 ? la : 300), a);
            tap_diag("against: %.*s", (int)(lb < 300 ? lb : 300), b);
            return;
        }
        a += la + (a[la] == '\n');
        b += lb + (b[lb] == '\n');
    }
}

static char *rows_of(const char *path)
{
    return rows_of_as(path, false);
}

static int64_t count(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static char *in_dir(const char *name)
{
    return util_xasprintf("%s/%s", dir, name);
}

static void test_sweep(void)
{
    char *j1 = in_dir("j1.db"), *m3 = in_dir("m3.db");
    const char *grid = "workload.arrival.rate_per_s=2:20:2";
    result a = run(false, "sweep", scenario, "-o", j1, "-j", "1", "--vary", grid, "--seeds", "2",
                   "--set", "stop.requests=300", "--quiet", NULL);
    /* the point files shipped to rank 0, as between machines */
    setenv("SERVESIM_MPI_SHIP_FILES", "1", 1);
    result b = run(true, "sweep", scenario, "-o", m3, "--vary", grid, "--seeds", "2", "--set",
                   "stop.requests=300", "--quiet", NULL);
    unsetenv("SERVESIM_MPI_SHIP_FILES");
    is_int(a.status, 0, "sweep -j 1");
    is_int(b.status, 0, "the same sweep under mpirun -np 3, its points' files shipped");
    if (b.status) tap_diag("%s", b.err);
    char *ra = rows_of(j1), *rb = rows_of(m3);
    cmp_ok(strlen(ra), >, 10000, "sweep -j 1 wrote its rows (%zu bytes)", strlen(ra));
    ok(!strcmp(ra, rb), "every table's rows the same: run ids, seeds, requests, replicas");
    /* the table printed: the same but for the file's name */
    char *ta = strstr(a.out, "points run"), *tb = strstr(b.out, "points run");
    ok(ta && tb && !strcmp(ta, tb), "and the same table");
    free(ra);
    free(rb);
    runner_drop(&a);
    runner_drop(&b);
    unlink(j1);
    unlink(m3);
    free(j1);
    free(m3);
}

static void test_plan(void)
{
    result a = run(false, "plan", scenario, "--target", "ttft_p99<=0.5", "--find", "max-rate",
                   "--set", "stop.requests=300", "-j", "1", "--json", NULL);
    result b = run(true, "plan", scenario, "--target", "ttft_p99<=0.5", "--find", "max-rate",
                   "--set", "stop.requests=300", "--json", NULL);
    is_int(b.status, 0, "plan under mpirun -np 3");
    cJSON *ja = cJSON_Parse(a.out), *jb = cJSON_Parse(b.out);
    cJSON_DeleteItemFromObject(ja, "wall_s");
    cJSON_DeleteItemFromObject(jb, "wall_s");
    ok(ja && jb && cJSON_Compare(ja, jb, true), "the same plan as -j 1: every trial, the answer");
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    runner_drop(&a);
    runner_drop(&b);
}

/* The pid of the sweep's rank 1, found by its environment. */
static pid_t rank_one(const char *marker)
{
    DIR *d = opendir("/proc");
    pid_t found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 0) continue;
        char *path = util_xasprintf("/proc/%d/environ", (int)pid);
        char *cmd = util_xasprintf("/proc/%d/cmdline", (int)pid);
        FILE *f = fopen(path, "r"), *c = fopen(cmd, "r");
        char buf[1 << 15], line[4096];
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        size_t m = c ? fread(line, 1, sizeof line - 1, c) : 0;
        buf[n] = line[m] = '\0';
        for (size_t i = 0; i < m; i++)
            if (!line[i]) line[i] = ' ';
        bool rank1 = false;
        for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
            rank1 |= !strcmp(buf + i, "OMPI_COMM_WORLD_RANK=1");
        if (rank1 && strstr(line, marker) && strstr(line, "servesim")) found = pid;
        if (f) fclose(f);
        if (c) fclose(c);
        free(path);
        free(cmd);
    }
    if (d) closedir(d);
    return found;
}

/* A worker rank killed: the job ends, the finished points are whole, and
 * --resume finishes the sweep to the database -j 1 writes. */
static void test_rank_dies(void)
{
    char *out = in_dir("die.db"), *ref = in_dir("ref.db");
    const char *grid = "workload.arrival.rate_per_s=2:24:1";
    char *argv[32];
    int n = 0;
    for (int i = 0; i < N_MPIRUN; i++)
        argv[n++] = (char *)mpirun[i];
    const char *rest[] = {
        servesim,  "sweep", scenario, "-o", out, "--vary", grid, "--set", "stop.requests=3000",
        "--quiet", NULL};
    for (int i = 0; rest[i]; i++)
        argv[n++] = (char *)rest[i];
    argv[n] = NULL;
    char *o = in_dir("die.out"), *e = in_dir("die.err");
    pid_t job = runner_spawn(mpirun_path, argv, o, e);
    pid_t victim = 0;
    for (int tries = 0; tries < 400 && !victim; tries++) { /* once some points are in */
        nanosleep(&(struct timespec){0, 25000000}, NULL);
        if (count(out, "SELECT count(*) FROM runs") >= 2) victim = rank_one("die.db");
    }
    ok(victim > 0, "a worker rank found mid-sweep (pid %d)", (int)victim);
    if (victim) kill(victim, SIGKILL);
    result r = runner_finish(job, o, e);
    ok(r.status != 0, "the job ends (exit %d)", r.status);
    int64_t runs = count(out, "SELECT count(*) FROM runs");
    int64_t whole = count(out, "SELECT count(*) FROM runs WHERE (SELECT count(*) FROM requests "
                               "WHERE run_id = runs.id) = 3000");
    ok(runs > 0 && runs < 23, "the points that finished are kept (%lld of 23)", (long long)runs);
    is_int(whole, runs, "each whole");
    runner_drop(&r);
    result resumed = run(true, "sweep", scenario, "-o", out, "--vary", grid, "--set",
                         "stop.requests=3000", "--quiet", "--resume", NULL);
    is_int(resumed.status, 0, "--resume under mpirun finishes it");
    runner_drop(&resumed);
    result fresh = run(false, "sweep", scenario, "-o", ref, "-j", "1", "--vary", grid, "--set",
                       "stop.requests=3000", "--quiet", NULL);
    /* a resumed sweep numbers its missing points after the others: its ids
     * differ from an uninterrupted one's, point for point the rest is the same */
    char *ra = rows_of_as(ref, true), *rb = rows_of_as(out, true);
    cmp_ok(strlen(ra), >, 10000, "the same sweep with -j 1 wrote its rows (%zu bytes)",
           strlen(ra));
    ok(!strcmp(ra, rb), "to the rows of the same sweep with -j 1, point for point");
    first_difference(ra, rb);
    free(ra);
    free(rb);
    runner_drop(&fresh);
    unlink(o);
    unlink(e);
    unlink(out);
    unlink(ref);
    free(o);
    free(e);
    free(out);
    free(ref);
}

int main(int argc, char **argv)
{
    if (argc < 3 || !mkdtemp(dir)) {
        printf("Bail out! usage: test_mpi SERVESIM SOURCE_ROOT\n");
        return 1;
    }
    servesim = argv[1];
    scenario = util_xasprintf("%s/examples/quickstart.json", argv[2]);
    result v = run(false, "--version", NULL);
    bool built = strstr(v.out, "(MPI)") != NULL;
    runner_drop(&v);
    FILE *which = popen("command -v mpirun", "r");
    char found[4096] = "";
    if (which && fgets(found, sizeof found, which)) found[strcspn(found, "\n")] = '\0';
    if (which) pclose(which);
    mpirun_path = util_xstrdup(found);
    bool launcher = *found && system("mpirun --version >/dev/null 2>&1") == 0;
    if (!built || !launcher) {
        printf("1..0 # SKIP %s\n", !built ? "servesim was built without MPI (meson -Dmpi)"
                                          : "no mpirun (apt-get install openmpi-bin)");
        rmdir(dir);
        free(scenario);
        free(mpirun_path);
        return 0;
    }
    /* Open MPI's plugins leak what they allocate at MPI_Init and are unloaded
     * before LeakSanitizer looks (no module to suppress by name): under
     * the sanitizer build the ranks are checked for memory errors, not leaks */
    const char *asan = getenv("ASAN_OPTIONS");
    char *opts = util_xasprintf("%s%sdetect_leaks=0", asan ? asan : "", asan ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    free(opts);
    test_sweep();
    test_plan();
    test_rank_dies();
    char *out = in_dir("stdout"), *err = in_dir("stderr");
    unlink(out);
    unlink(err);
    free(out);
    free(err);
    rmdir(dir);
    free(scenario);
    free(mpirun_path);
    return tap_done();
}
