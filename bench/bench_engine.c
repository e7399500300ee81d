/*
 * bench_engine.c: times servesim against the floor SQLite sets for it.
 *
 * One run makes every measurement of the same number of requests, so that
 * the ratios compare figures of one machine at one moment: `servesim run`
 * of the scenario end to end (load, simulate, record every row, compute and
 * print the report) and `servesim report` of the database it wrote, each
 * the real binary in its own process; the run path alone (rec_run with the
 * writer thread: simulate and record), the engine alone (a sink that drops
 * every row), and the floor: a bare SQLite insert of as many rows of the
 * recorder's `requests` width into a fresh file with journal and sync off,
 * one prepared statement, one transaction.  No recorder can write rows
 * faster than SQLite takes them, so "servesim run within 1.5x of the bare
 * insert" says everything else -- the engine, the copies, the report --
 * costs at most half again what the database alone does.  Each measurement
 * runs in its own forked child, so each has its own peak RSS (from wait4)
 * and none inherits another's heap; the child sends its wall time back over
 * a pipe.  `--rss-only N` makes the memory measurement alone: `servesim run`
 * of N requests, report included, peak RSS against the 100 MB target.
 * This is a report, not a test: missing a target is printed as MISS, and
 * only a real error gives a non-zero exit status.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "rec.h"

#define RUN_TARGET_RATIO 1.5    /* servesim run, end to end */
#define REPORT_TARGET_RATIO 0.3 /* servesim report of its database */
#define RSS_TARGET_MB 100.0 /* the default; --rss-target sets another */

static const char usage[] =
    "usage: bench_engine SCENARIO.json --servesim PATH [--requests N] [--dir DIR]\n"
    "       bench_engine SCENARIO.json --servesim PATH --rss-only N [--rss-target MB]\n"
    "                    [--dir DIR]\n"
    "\n"
    "Times servesim run and servesim report of SCENARIO, the run path and the engine\n"
    "alone, and a bare SQLite insert of as many rows of the same width, each in its\n"
    "own process; prints requests/s, peak RSS and the ratio to the bare insert.\n"
    "\n"
    "  --servesim PATH  the servesim binary to time\n"
    "  --requests N     override the scenario's stop.requests\n"
    "  --rss-only N     only servesim run of N requests (for sessions or agent tasks:\n"
    "                   N arrivals); report peak RSS against the target\n"
    "  --rss-target MB  the peak RSS target (default 100)\n"
    "  --dir DIR        where the temporary databases go (default /tmp); removed afterwards\n";

typedef struct bench_opts {
    const char *scenario, *dir, *servesim;
    int64_t requests; /* stop.requests override; 0: the scenario's own */
    int64_t rss_only; /* requests of the memory measurement; 0: the full comparison */
    double rss_target_mb;
} bench_opts;

/* What a child sends its parent: one fixed-size write, well under PIPE_BUF. */
typedef struct outcome {
    int rc;
    int64_t rows; /* requests simulated (and recorded, if it records) */
    double wall_s;
    double exec_rss_mb; /* > 0: the peak RSS of the binary it ran, which is the figure */
} outcome;

typedef struct measurement {
    const char *label;
    outcome out;
    double rss_mb; /* peak resident set of the child, 10^6 bytes */
} measurement;

/* A measurement body, run in the child; rows is the count the bare insert
 * must match (the others take theirs from the scenario). */
typedef int (*bench_fn)(const bench_opts *o, const char *db_path, int64_t rows, outcome *out);

/* ---- the scenario ---- */

/* The scenario with the --requests override applied, unvalidated. */
static int read_scenario(const bench_opts *o, int64_t requests, mdl_catalog **cat, cJSON **root,
                         util_diag *d)
{
    int rc = mdl_catalog_load_default(cat, d);
    if (!rc) rc = util_json_read_file(o->scenario, root, d);
    if (rc || requests <= 0) return rc;
    char set[64];
    snprintf(set, sizeof set, "stop.requests=%" PRId64, requests);
    if ((rc = util_json_set(*root, set, d))) {
        cJSON_Delete(*root);
        *root = NULL;
    }
    return rc;
}

/* The same, validated. */
static int load_scenario(const bench_opts *o, int64_t requests, mdl_catalog **cat,
                         sim_scenario *sc, util_diag *d)
{
    cJSON *root;
    int rc = read_scenario(o, requests, cat, &root, d);
    return rc ? rc : sim_scenario_load(root, *cat, NULL, sc, d);
}

/* Runs the engine to the end into sink; *done counts the requests finished. */
static int run_engine(const sim_scenario *sc, const sim_sink *sink, int64_t *done)
{
    sim_engine *e = sim_engine_create(sc, sink);
    int rc = sim_engine_run(e, NULL, NULL, NULL);
    sim_progress p;
    sim_engine_progress(e, &p);
    sim_engine_destroy(e);
    *done = p.done;
    return rc;
}

/* ---- (a) simulate and record ---- */

/* The run path of `servesim run`: rec_run -- load, open, simulate into the
 * recorder with its writer thread, finish (which commits and publishes).
 * Reading the file and the catalog, and the report, are left out. */
static int record_run(const mdl_catalog *cat, cJSON *root, const char *path, outcome *out,
                      util_diag *d)
{
    double t0 = util_wall_s();
    rec_run_spec spec = {.catalog = cat, .scenario = root, .output = path, .writer_thread = true};
    rec_run_result res;
    int rc = rec_run(&spec, &res, d);
    if (!rc && res.status != SIM_STATUS_COMPLETED)
        rc = util_diag_fail(d, "the run was %s: %s", sim_status_names[res.status], res.reason);
    out->rows = res.progress.done;
    out->wall_s = util_wall_s() - t0;
    rec_run_result_fini(&res);
    return rc;
}

/* Counts what was committed, outside the timing: a benchmark whose recorder
 * silently wrote nothing would report a splendid and meaningless figure. */
static int check_rows(const char *path, int64_t want, util_diag *d)
{
    sqlite3 *db;
    sqlite3_stmt *st = NULL;
    int64_t got = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM requests", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        got = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (got == want) return UTIL_OK;
    return util_diag_fail(d, "%s: %" PRId64 " request rows committed, expected %" PRId64, path,
                          got, want);
}

static int time_record(const bench_opts *o, const char *path, int64_t rows, outcome *out)
{
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *cat = NULL;
    cJSON *root = NULL;
    int rc = read_scenario(o, rows, &cat, &root, &d);
    if (!rc) rc = record_run(cat, root, path, out, &d);
    if (!rc) rc = check_rows(path, out->rows, &d);
    util_diag_print(&d, stderr, "bench_engine");
    mdl_catalog_destroy(cat);
    util_diag_fini(&d);
    return rc;
}

/* ---- (b) simulate only ---- */

static int drop_request(void *ctx, const sim_request_row *row)
{
    return 0;
}

static int drop_replica(void *ctx, const sim_replica_row *row)
{
    return 0;
}

/* The same run with a sink that keeps nothing: the engine's share of (a). */
static int time_simulate(const bench_opts *o, const char *path, int64_t rows, outcome *out)
{
    util_diag d;
    util_diag_init(&d);
    mdl_catalog *cat = NULL;
    sim_scenario sc = {0};
    int rc = load_scenario(o, rows, &cat, &sc, &d);
    if (!rc) {
        sim_sink sink = {.ctx = NULL, .request = drop_request, .replica = drop_replica};
        double t0 = util_wall_s();
        rc = run_engine(&sc, &sink, &out->rows);
        out->wall_s = util_wall_s() - t0;
    }
    util_diag_print(&d, stderr, "bench_engine");
    sim_scenario_fini(&sc);
    mdl_catalog_destroy(cat);
    util_diag_fini(&d);
    return rc;
}

/* ---- (c) bare insert ---- */

/* The recorder's own statement, with the row a plain request of a
 * one-class workload has: class "default", no task, NULL literals for the
 * columns it leaves empty. */
static const char insert_sql[] = "INSERT INTO requests (run_id, id, replica, class, task_id, "
                                 "call_index, arrival_s, enqueue_s, first_scheduled_s, "
                                 "first_token_s, finish_s, prompt_tokens, output_tokens, "
                                 "preemptions, slow, status) VALUES "
                                 "(?1, ?2, ?3, ?14, NULL, NULL, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                                 "?11, ?12, ?13)";

/* xorshift64: lengths that vary like the simulated ones, at a cost of a few
 * cycles, so the floor measures SQLite and not the generator. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* One row of plausible values: fractional times (stored as 8-byte REALs, as
 * the simulated ones are), token counts of a few hundred, ids in order. */
static void bind_row(sqlite3_stmt *st, int64_t id, uint64_t *rng)
{
    uint64_t x = next_random(rng);
    double arrival = (double)id / 50.0 + (double)(x & 0xffff) * 1e-6;
    sqlite3_bind_int64(st, 1, 1);
    sqlite3_bind_int64(st, 2, id);
    sqlite3_bind_int(st, 3, (int)(id % 4));
    sqlite3_bind_double(st, 4, arrival);
    sqlite3_bind_double(st, 5, arrival);
    sqlite3_bind_double(st, 6, arrival + 0.0013);
    sqlite3_bind_double(st, 7, arrival + 0.0307);
    sqlite3_bind_double(st, 8, arrival + 1.6408 + (double)(x >> 48) * 1e-5);
    sqlite3_bind_int(st, 9, 100 + (int)((x >> 16) % 1500));
    sqlite3_bind_int(st, 10, 20 + (int)((x >> 32) % 400));
    sqlite3_bind_int(st, 11, 0);
    sqlite3_bind_int(st, 12, 0);
    sqlite3_bind_text(st, 13, SIM_COMPLETED, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 14, "default", -1, SQLITE_STATIC);
}

/* One transaction, as the recorder's run is: BEGIN IMMEDIATE ... COMMIT. */
static int insert_rows(sqlite3 *db, int64_t rows)
{
    sqlite3_stmt *st;
    if (sqlite3_exec(db, rec_schema_sql, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, insert_sql, -1, &st, NULL) != SQLITE_OK)
        return UTIL_EFAIL;
    uint64_t rng = 0x9e3779b97f4a7c15u;
    int rc = SQLITE_DONE;
    for (int64_t id = 0; id < rows && rc == SQLITE_DONE; id++) {
        bind_row(st, id, &rng);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return UTIL_EFAIL;
    return sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? UTIL_OK : UTIL_EFAIL;
}

/* Open, create, insert, commit, close, with journal and sync off: SQLite
 * at its fastest, the floor. */
static int time_insert(const bench_opts *o, const char *path, int64_t rows, outcome *out)
{
    sqlite3 *db;
    double t0 = util_wall_s();
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                            SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;", NULL,
                          NULL, NULL);
    if (rc == SQLITE_OK) rc = insert_rows(db, rows);
    if (rc) fprintf(stderr, "bench_engine: %s: bare insert: %s\n", path, sqlite3_errmsg(db));
    sqlite3_close(db);
    out->wall_s = util_wall_s() - t0;
    out->rows = rows;
    return rc ? UTIL_EFAIL : UTIL_OK;
}

/* ---- (d) the servesim binary ---- */

/* Runs o->servesim with argv (its own argv[0] first), its output to
 * /dev/null, and waits: the wall time and the binary's own peak RSS. */
static int exec_servesim(const bench_opts *o, char *const *argv, outcome *out)
{
    double t0 = util_wall_s();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        execv(o->servesim, argv);
        _exit(127);
    }
    struct rusage ru;
    int status = 0;
    if (pid < 0) return UTIL_EFAIL;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) return UTIL_EFAIL;
    out->wall_s = util_wall_s() - t0;
    out->exec_rss_mb = (double)ru.ru_maxrss * 1024.0 / 1e6;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_engine: %s %s: exit status %d\n", o->servesim, argv[1],
                WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        return UTIL_EFAIL;
    }
    return UTIL_OK;
}

/* `servesim run SCENARIO -o path -q [--set stop.requests=N]`: everything a
 * user waits for. */
static int time_servesim_run(const bench_opts *o, const char *path, int64_t rows, outcome *out)
{
    char set[64];
    snprintf(set, sizeof set, "stop.requests=%" PRId64, rows);
    char *argv[] = {"servesim", "run", (char *)o->scenario, "-o", (char *)path, "--quiet",
                    rows > 0 ? "--set" : NULL, set, NULL};
    int rc = exec_servesim(o, argv, out);
    util_diag d;
    util_diag_init(&d);
    if (!rc) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, "SELECT count(*) FROM requests", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            out->rows = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        if (out->rows <= 0) rc = util_diag_fail(&d, "%s: no request rows", path);
    }
    util_diag_print(&d, stderr, "bench_engine");
    util_diag_fini(&d);
    return rc;
}

/* `servesim report path` of the database time_servesim_run left. */
static int time_servesim_report(const bench_opts *o, const char *path, int64_t rows, outcome *out)
{
    char *argv[] = {"servesim", "report", (char *)path, NULL};
    out->rows = rows;
    return exec_servesim(o, argv, out);
}

/* ---- one measurement, one process ---- */

static void remove_db(const char *path)
{
    char journal[4200];
    snprintf(journal, sizeof journal, "%s-journal", path);
    unlink(path);
    unlink(journal);
}

static void run_child(bench_fn fn, const bench_opts *o, const char *path, int64_t rows, int fd)
{
    outcome out = {0};
    out.rc = fn(o, path, rows, &out);
    ssize_t n = write(fd, &out, sizeof out);
    _exit(n == (ssize_t)sizeof out && out.rc == 0 ? 0 : 1);
}

/* Reads the child's outcome and reaps it; the rusage of wait4 is that one
 * child's, so its ru_maxrss is this measurement's peak alone. */
static int collect_child(pid_t pid, int fd, measurement *m)
{
    m->out.exec_rss_mb = 0;
    ssize_t n;
    do n = read(fd, &m->out, sizeof m->out);
    while (n < 0 && errno == EINTR);
    close(fd);
    struct rusage ru;
    int status;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) return UTIL_EFAIL;
    m->rss_mb = (double)ru.ru_maxrss * 1024.0 / 1e6; /* Linux reports KiB */
    if (m->out.exec_rss_mb > 0) m->rss_mb = m->out.exec_rss_mb; /* the binary's, not ours */
    bool ok = n == (ssize_t)sizeof m->out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) fprintf(stderr, "bench_engine: %s: the measurement failed\n", m->label);
    return ok ? UTIL_OK : UTIL_EFAIL;
}

/* Forks, runs fn in the child against a fresh database in o->dir, and
 * removes the database whatever happened. */
static int measure_in(bench_fn fn, const bench_opts *o, const char *label, int64_t rows,
                      const char *path, bool keep, measurement *m);

static int measure(bench_fn fn, const bench_opts *o, const char *label, int64_t rows,
                   measurement *m)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/servesim-bench-%ld-%s.db", o->dir, (long)getpid(), label);
    return measure_in(fn, o, label, rows, path, false, m);
}

/* The same on a given database, kept afterwards with keep (a run's, for the
 * report measured next), else removed whatever happened. */
static int measure_in(bench_fn fn, const bench_opts *o, const char *label, int64_t rows,
                      const char *path, bool keep, measurement *m)
{
    if (!keep || fn == time_servesim_run) remove_db(path); /* a killed run's leftover */
    *m = (measurement){.label = label};
    int fd[2];
    fflush(NULL); /* else the child could print the parent's buffered output again */
    pid_t pid = pipe(fd) < 0 ? -1 : fork();
    if (pid < 0) {
        fprintf(stderr, "bench_engine: %s: cannot start: %s\n", label, strerror(errno));
        return UTIL_EFAIL;
    }
    if (pid == 0) {
        close(fd[0]);
        run_child(fn, o, path, rows, fd[1]);
    }
    close(fd[1]);
    int rc = collect_child(pid, fd[0], m);
    if (!keep) remove_db(path);
    return rc;
}

/* ---- the report ---- */

static void print_header(void)
{
    printf("%-20s %10s %9s %12s %12s %15s\n", "measurement", "requests", "wall s",
           "requests/s", "peak RSS MB", "vs bare insert");
}

static void print_row(const measurement *m, const measurement *floor)
{
    double rate = m->out.wall_s > 0 ? (double)m->out.rows / m->out.wall_s : 0;
    printf("%-20s %10" PRId64 " %9.2f %12.0f %12.1f", m->label, m->out.rows, m->out.wall_s, rate,
           m->rss_mb);
    if (floor) printf(" %14.2fx", m->out.wall_s / floor->out.wall_s);
    printf("\n");
}

static void verdict(const char *what, double ratio, double target)
{
    printf("target: %s within %.1fx of the bare insert: %s (%.2fx)\n", what, target,
           ratio <= target ? "PASS" : "MISS", ratio);
}

enum { M_RUN, M_REPORT, M_RECORD, M_SIMULATE, M_INSERT, N_MEASUREMENTS };

static void print_comparison(const measurement m[N_MEASUREMENTS])
{
    print_header();
    for (int i = 0; i < N_MEASUREMENTS; i++) print_row(&m[i], &m[M_INSERT]);
    printf("\n");
    verdict("servesim run, end to end,", m[M_RUN].out.wall_s / m[M_INSERT].out.wall_s,
            RUN_TARGET_RATIO);
    verdict("servesim report", m[M_REPORT].out.wall_s / m[M_INSERT].out.wall_s,
            REPORT_TARGET_RATIO);
}

static void print_memory(const measurement *m, double target_mb)
{
    print_header();
    print_row(m, NULL);
    printf("\ntarget: servesim run of %" PRId64 " requests, report included, under %.0f MB peak "
           "RSS: %s (%.1f MB)\n",
           m->out.rows, target_mb, m->rss_mb < target_mb ? "PASS" : "MISS", m->rss_mb);
}

/* ---- the runs ---- */

/* servesim run first: its request count is what the others must match; its
 * database is the one the report reads. */
static int compare(const bench_opts *o)
{
    measurement m[N_MEASUREMENTS];
    char db[4096];
    snprintf(db, sizeof db, "%s/servesim-bench-%ld-run.db", o->dir, (long)getpid());
    printf("%s: servesim run and report, the run path, the engine, a bare insert (SQLite %s)\n\n",
           o->scenario, sqlite3_libversion());
    int rc = measure_in(time_servesim_run, o, "servesim run", o->requests, db, true, &m[M_RUN]);
    int64_t rows = m[M_RUN].out.rows;
    if (!rc) rc = measure_in(time_servesim_report, o, "servesim report", rows, db, true, &m[M_REPORT]);
    remove_db(db);
    if (!rc) rc = measure(time_record, o, "simulate+record", rows, &m[M_RECORD]);
    if (!rc) rc = measure(time_simulate, o, "simulate only", rows, &m[M_SIMULATE]);
    if (!rc) rc = measure(time_insert, o, "bare insert", rows, &m[M_INSERT]);
    if (rc) return UTIL_EFAIL;
    print_comparison(m);
    return UTIL_OK;
}

static int memory(const bench_opts *o)
{
    measurement m;
    printf("%s: peak RSS of servesim run, report included\n\n", o->scenario);
    if (measure(time_servesim_run, o, "servesim run", o->rss_only, &m)) return UTIL_EFAIL;
    print_memory(&m, o->rss_target_mb);
    return UTIL_OK;
}

static bool parse_count(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 1) return false;
    *out = v;
    return true;
}

static bool parse_mb(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0)) return false;
    *out = v;
    return true;
}

/* Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, bench_opts *o)
{
    static const struct option longopts[] = {
        {"requests", required_argument, NULL, 'n'}, {"rss-only", required_argument, NULL, 'r'},
        {"dir", required_argument, NULL, 'd'},      {"help", no_argument, NULL, 'h'},
        {"servesim", required_argument, NULL, 's'}, {"rss-target", required_argument, NULL, 't'},
        {0, 0, 0, 0},
    };
    *o = (bench_opts){.dir = "/tmp", .rss_target_mb = RSS_TARGET_MB};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        bool ok = true;
        switch (c) {
        case 'n': ok = parse_count(optarg, &o->requests); break;
        case 'r': ok = parse_count(optarg, &o->rss_only); break;
        case 'd': o->dir = optarg; break;
        case 's': o->servesim = optarg; break;
        case 't': ok = parse_mb(optarg, &o->rss_target_mb); break;
        case 'h': fputs(usage, stdout); return 0;
        default: ok = false;
        }
        if (!ok) {
            fputs(usage, stderr);
            return 2;
        }
    }
    if (optind != argc - 1 || !o->servesim) {
        fputs(usage, stderr);
        return 2;
    }
    o->scenario = argv[optind];
    return -1;
}

int main(int argc, char **argv)
{
    bench_opts o;
    int code = parse(argc, argv, &o);
    if (code >= 0) return code;
    int rc = o.rss_only ? memory(&o) : compare(&o);
    return rc ? 1 : 0;
}
