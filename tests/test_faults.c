/*
 * test_faults.c: faults and neighbours never lose data, and verdicts count
 * every request -- from the command line, as users meet them.  Two writers
 * creating one database at once, readers while a run writes and after a
 * writer was killed with kill -9, a sweep's run ids beside another writer,
 * SIGTERM, SIGHUP and SIGINT on runs and SIGTERM on a sweep (kept rows, no
 * stray files or processes, exit within 2 s), a sweep's worker killed
 * (exit 1, --resume finishes it and removes what a killed sweep left), a
 * WAL database read from a folder the reader may not write, a damaged
 * file (exit 2, saying so), a database removed while a run appends and a
 * disk full while a sweep merges (the run kept, exit 1), file names that
 * are no database, the overload guard of a plain run, an empty
 * measurement window, targets failed by requests that never completed,
 * and validate refusing a broken trace.  argv[1] is the servesim binary,
 * argv[2] the source root.
 */
/* wait4, for a child's own peak memory; setgroups(2), to drop root's groups */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "runner.h"
#include "tap.h"
#include "util.h"

/* cmp_ok(a, op, b, "description"): a op b on numbers, printing both sides on
 * failure (tap.h has no such assertion; a candidate for it). */
static const char *servesim;
static char *quick;
static char dir[] = "/tmp/servesim-faults-XXXXXX";

/* Runs servesim with up to 30 arguments (NULL-terminated). */
#define sv(...) runner_run(servesim, dir, __VA_ARGS__)

static char *in_dir(const char *name)
{
    return util_xasprintf("%s/%s", dir, name);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* One integer from SQL on a database file (-1 when it cannot be read). */
static long long q1(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    long long v = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(h, 10000);
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* Entries of the test folder whose name contains part. */
static int files_with(const char *part)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, part) != NULL;
    if (d) closedir(d);
    return n;
}

/* Processes whose command line names path (a sweep's workers are forks of
 * it, with its argv). */
static int processes_naming(const char *path)
{
    DIR *d = opendir("/proc");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char *f = util_xasprintf("/proc/%s/cmdline", e->d_name);
        FILE *in = fopen(f, "r");
        free(f);
        if (!in) continue;
        char buf[4096];
        size_t k = fread(buf, 1, sizeof buf - 1, in);
        fclose(in);
        for (size_t i = 0; i < k; i++)
            if (!buf[i]) buf[i] = ' ';
        buf[k] = '\0';
        n += strstr(buf, path) != NULL;
    }
    if (d) closedir(d);
    return n;
}

/* The first n bytes of s, for is_str on how an output starts. */
static const char *head(const char *s, int n)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "%.*s", n, s ? s : "");
    return buf;
}

static pid_t spawn(char **args, const char *tag)
{
    char *out = util_xasprintf("%s/%s.out", dir, tag), *err = util_xasprintf("%s/%s.err", dir, tag);
    pid_t pid = runner_spawn(servesim, args, out, err);
    free(out);
    free(err);
    return pid;
}

static result finish(pid_t pid, const char *tag)
{
    char *out = util_xasprintf("%s/%s.out", dir, tag), *err = util_xasprintf("%s/%s.err", dir, tag);
    result r = runner_finish(pid, out, err);
    unlink(out);
    unlink(err);
    free(out);
    free(err);
    return r;
}

/* ---- two writers, one new file ---- */

static void test_concurrent_creators(void)
{
    char *db = in_dir("new.db");
    int exited = 0, runs = 0, rows = 0, clean = 0;
    const int tries = 12;
    for (int t = 0; t < tries; t++) {
        unlink(db);
        char *args[] = {(char *)servesim, "run", quick, "-o", db, "--json", "--set",
                        "stop.requests=300", NULL};
        pid_t a = spawn(args, "a"), b = spawn(args, "b");
        result ra = finish(a, "a"), rb = finish(b, "b");
        exited += (ra.status == 0) + (rb.status == 0);
        runs += q1(db, "SELECT count(*) FROM runs") == 2;
        rows += q1(db, "SELECT count(DISTINCT run_id) FROM requests") == 2;
        clean += files_with("new.db") == 1; /* no private file left beside it */
        runner_drop(&ra);
        runner_drop(&rb);
    }
    is_int(exited, 2 * tries, "two runs creating one database at once: both exit 0, every time");
    is_int(runs, tries, "two runs creating one database at once: both stored, every time");
    is_int(rows, tries, "each with its requests");
    is_int(clean, tries, "and nothing but the database is left");
    /* appending: one writes straight in, the other into its own file, copied in at its end */
    int appended = 0;
    for (int t = 0; t < 4; t++) {
        char *args[] = {(char *)servesim, "run", quick, "-o", db, "--json", "--set",
                        "stop.requests=20000", NULL};
        pid_t a = spawn(args, "a"), b = spawn(args, "b");
        result ra = finish(a, "a"), rb = finish(b, "b");
        appended += (ra.status == 0) + (rb.status == 0);
        runner_drop(&ra);
        runner_drop(&rb);
    }
    is_int(appended, 8, "two runs appending at once both succeed");
    is_int(q1(db, "SELECT count(*) FROM runs"), 10, "and are stored");
    is_int(q1(db, "SELECT count(*) FROM requests WHERE run_id > 2"), 8 * 20000,
           "each with every one of its requests");
    is_int(files_with("new.db.run-"), 0, "no private file is left");
    unlink(db);
    free(db);
}

/* ---- readers beside a writer, and after kill -9 ---- */

static void test_readers(void)
{
    char *db = in_dir("shared.db");
    result r = sv("run", quick, "-o", db, "--quiet", NULL);
    is_int(r.status, 0, "a first run");
    runner_drop(&r);
    char *args[] = {(char *)servesim, "run", quick, "-o", db, "--quiet", "--set",
                    "stop.requests=100000000", NULL};
    pid_t w = spawn(args, "w");
    sleep_s(0.8);
    r = sv("report", db, "--json", NULL);
    is_int(r.status, 0, "report works while a run writes the same file");
    has_str(r.out, "\"status\":\t\"completed\"", "and sees the committed run");
    runner_drop(&r);
    r = sv("slo-curve", db, NULL);
    is_int(r.status, 0, "so does slo-curve");
    runner_drop(&r);
    r = sv("timeline", db, NULL);
    is_int(r.status, 0, "and timeline");
    runner_drop(&r);
    r = sv("report", db, "--run", "2", NULL);
    is_int(r.status, 2, "the run in progress is not visible");
    has_str(r.err, "no run with id 2", "report says there is no such run");
    runner_drop(&r);
    kill(w, SIGKILL);
    r = finish(w, "w");
    runner_drop(&r);
    /* it wrote straight into the database (its log frames never committed) */
    is_int(files_with(".tmp"), 0, "kill -9 of a run appending leaves no file behind");
    r = sv("report", db, NULL);
    is_int(r.status, 0, "report works after the writer was killed");
    has_str(r.out, "completed", "and shows the completed run");
    runner_drop(&r);
    char *svg = in_dir("cdf.svg");
    r = sv("plot", db, "cdf", "-o", svg, NULL);
    is_int(r.status, 0, "so does plot");
    runner_drop(&r);
    r = sv("compare", db, db, NULL);
    is_int(r.status, 0, "and compare");
    runner_drop(&r);
    r = sv("run", quick, "-o", db, "--quiet", NULL);
    is_int(r.status, 0, "a later run writes the file as before");
    runner_drop(&r);
    is_int(q1(db, "SELECT count(*) FROM runs WHERE status = 'completed'"), 2,
           "holding both completed runs: nothing committed was lost");
    is_int(q1(db, "SELECT count(*) FROM requests WHERE run_id = 1"), 2000,
           "the first run whole, every one of its 2,000 requests");
    unlink(svg);
    free(svg);
    free(db);
}

/* ---- a sweep beside another writer ---- */

static void test_sweep_neighbour(void)
{
    char *db = in_dir("grid.db");
    char *args[] = {(char *)servesim, "sweep", quick, "--vary", "workload.arrival.rate_per_s=2:12:2",
                    "--set", "stop.requests=40000", "-j", "1", "-o", db, "--quiet", NULL};
    pid_t s = spawn(args, "s");
    int others = 0;
    for (int i = 0; i < 3; i++) {
        sleep_s(0.3);
        result r = sv("run", quick, "-o", db, "--quiet", "--set", "stop.requests=200", NULL);
        others += r.status == 0;
        runner_drop(&r);
    }
    result r = finish(s, "s");
    is_int(r.status, 0, "a sweep runs to its end while other runs are written to its database (%s)",
           r.err);
    runner_drop(&r);
    is_int(others, 3, "and so do they");
    is_int(q1(db, "SELECT count(*) FROM runs"), 9, "all 6 points and 3 runs are stored");
    is_int(q1(db, "SELECT count(*) FROM runs WHERE sweep IS NOT NULL"), 6,
           "the points as the sweep's, whatever ids they ended up with");
    is_int(q1(db, "SELECT count(*) FROM (SELECT run_id FROM requests GROUP BY run_id)"), 9,
           "every run with its own requests");
    free(db);
}

/* ---- signals ---- */

static void test_signal_run(int sig, const char *name)
{
    char *db = in_dir("sig.db");
    unlink(db);
    char *args[] = {(char *)servesim, "run", quick, "-o", db, "--set", "stop.requests=100000000",
                    "--set", "warmup_s=0", NULL};
    pid_t pid = spawn(args, "sig");
    sleep_s(1.2);
    double t0 = util_wall_s();
    kill(pid, sig);
    result r = finish(pid, "sig");
    double took = util_wall_s() - t0;
    is_int(r.status, 128 + sig, "%s: the run exits 128 + %d", name, sig);
    cmp_ok(took, <, 2.0, "%s: within 2 s of the signal (%.2f s)", name, took);
    has_str(r.err, "servesim report", "%s: it says how to get the report", name);
    long long rows = q1(db, "SELECT count(*) FROM requests");
    cmp_ok(rows, >, 10000, "%s: the rows recorded are kept (%lld)", name, rows);
    const char *said = r.err ? strstr(r.err, "; the ") : NULL;
    is_int(said ? atoll(said + 6) : -1, rows, "%s: the message counts the rows stored", name);
    said = r.err ? strstr(r.err, "ended, ") : NULL;
    is_int(said ? atoll(said + 7) : -1,
           q1(db, "SELECT count(*) FROM requests WHERE status = 'unfinished'"),
           "%s: and the unfinished among them", name);
    runner_drop(&r);
    r = sv("report", db, "--json", NULL);
    is_int(r.status, 0, "%s: report exits 0", name);
    has_str(r.out, "\"interrupted\"", "%s: the run is marked interrupted", name);
    has_str(r.out, "stopped by signal", "%s: and says by what", name);
    runner_drop(&r);
    is_int(files_with(".tmp"), 0, "%s: no private file left", name);
    unlink(db);
    free(db);
}

static void test_signal_sweep(void)
{
    char *db = in_dir("sweep.db");
    char *args[] = {(char *)servesim, "sweep", quick, "--vary", "workload.arrival.rate_per_s=2:40:2",
                    "--set", "stop.requests=20000", "-j", "2", "-o", db, NULL};
    pid_t pid = spawn(args, "sw");
    for (int i = 0; i < 300 && q1(db, "SELECT count(*) FROM runs") < 1; i++) sleep_s(0.02);
    double t0 = util_wall_s();
    kill(pid, SIGTERM);
    result r = finish(pid, "sw");
    double took = util_wall_s() - t0;
    is_int(r.status, 128 + SIGTERM, "SIGTERM stops a sweep, exit 143");
    cmp_ok(took, <, 2.0, "within 2 s (%.2f s)", took);
    runner_drop(&r);
    long long kept = q1(db, "SELECT count(*) FROM runs"),
              whole = q1(db, "SELECT count(*) FROM runs WHERE status = 'completed'");
    cmp_ok(kept, >=, 1, "finished points kept (%lld)", kept);
    is_int(whole, kept, "each whole");
    is_int(files_with(".tmp"), 0, "no point files left");
    sleep_s(0.2);
    is_int(processes_naming(db), 0, "no worker left running");
    r = sv("sweep", quick, "--vary", "workload.arrival.rate_per_s=2:40:2", "--set",
           "stop.requests=20000", "-o", db, "--resume", "--quiet", NULL);
    is_int(r.status, 0, "--resume finishes the grid");
    runner_drop(&r);
    is_int(q1(db, "SELECT count(*) FROM runs"), 20, "all 20 points");
    free(db);
}

/* A child process of parent (a sweep's worker), or 0. */
static pid_t child_of(pid_t parent)
{
    DIR *d = opendir("/proc");
    pid_t found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char *f = util_xasprintf("/proc/%s/stat", e->d_name);
        FILE *in = fopen(f, "r");
        free(f);
        if (!in) continue;
        char buf[1024], state;
        size_t k = fread(buf, 1, sizeof buf - 1, in);
        fclose(in);
        buf[k] = '\0';
        int ppid = 0;
        char *comm_end = strrchr(buf, ')'); /* "pid (comm) state ppid": comm may hold spaces */
        if (comm_end && sscanf(comm_end + 1, " %c %d", &state, &ppid) == 2 && ppid == parent)
            found = (pid_t)atoi(e->d_name);
    }
    if (d) closedir(d);
    return found;
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* A worker killed mid-sweep: the sweep ends as an interrupted one, exit 1
 * with a message (it died of SIGPIPE, 141, writing its next job to the dead
 * worker, without a word, leaving point files), and --resume finishes it,
 * removing the point files a sweep killed outright left. */
static void test_sweep_worker_killed(void)
{
    char *db = in_dir("killed.db");
    char *args[] = {(char *)servesim, "sweep", quick, "-o", db, "--quiet", "-j", "2", "--set",
                    "stop.requests=20000", "--vary", "workload.arrival.rate_per_s=4,6,8,10,12,14",
                    "--seeds", "2", NULL};
    pid_t pid = spawn(args, "wk");
    for (int i = 0; i < 300 && q1(db, "SELECT count(*) FROM runs") < 1; i++) sleep_s(0.02);
    pid_t worker = child_of(pid);
    ok(worker > 0, "a worker found mid-sweep (pid %d)", (int)worker);
    if (worker > 0) kill(worker, SIGKILL);
    result r = finish(pid, "wk");
    is_int(r.status, 1, "a killed worker fails the sweep: exit 1, not SIGPIPE's 141 (%d)",
           r.status);
    has_str(r.err, "killed by signal 9", "it says the worker was killed");
    has_str(r.err, "interrupted: --resume finishes it", "and that --resume finishes the sweep");
    has_str(r.out, "(interrupted: --resume finishes it)",
            "the table of the finished points says so");
    runner_drop(&r);
    long long kept = q1(db, "SELECT count(*) FROM runs"),
              whole = q1(db, "SELECT count(*) FROM runs WHERE status = 'completed' AND "
                             "(SELECT count(*) FROM requests WHERE run_id = runs.id) = 20000");
    cmp_ok(kept, >=, 1, "finished points kept (%lld)", kept);
    is_int(whole, kept, "each whole");
    is_int(files_with(".tmp"), 0, "no point files left");
    sleep_s(0.2);
    is_int(processes_naming(db), 0, "no worker left running");

    /* a sweep killed outright leaves its points' files: --resume removes
     * those of a process that is gone, never a live one's */
    pid_t gone = fork();
    if (gone == 0) _exit(0);
    waitpid(gone, NULL, 0);
    char *stale = util_xasprintf("%s.point-%d-3.tmp", db, (int)gone),
         *journal = util_xasprintf("%s-journal", stale),
         *live = util_xasprintf("%s.point-%d-4.tmp", db, (int)getpid());
    fclose(fopen(stale, "w"));
    fclose(fopen(journal, "w"));
    fclose(fopen(live, "w"));
    r = sv("sweep", quick, "-o", db, "--quiet", "-j", "2", "--set", "stop.requests=20000", "--vary",
           "workload.arrival.rate_per_s=4,6,8,10,12,14", "--seeds", "2", "--resume", NULL);
    is_int(r.status, 0, "--resume finishes the sweep");
    runner_drop(&r);
    is_int(q1(db, "SELECT count(*) FROM runs"), 12, "all 12 points");
    ok(!exists(stale) && !exists(journal), "--resume removed the point files of a sweep gone");
    ok(exists(live), "and left those of a live process");
    unlink(live);
    free(stale);
    free(journal);
    free(live);
    free(db);
}

/* ---- a WAL database in a folder the reader may not write ---- */

/* Runs servesim with args (NULL-terminated, argv[0] included), its files
 * limited to fsize bytes (0: no limit) -- a full disk without a small
 * file system: a write past it fails with EFBIG, SIGXFSZ ignored -- and,
 * unprivileged, as a user who may not write a folder of mode 0555: nobody
 * (65534) when this test runs as root, which writes anywhere, else this
 * user.  Exit status 77: nobody cannot reach the binary (a build tree in a
 * private home). */
static result run_limited(char **args, const char *tag, bool unprivileged, long fsize)
{
    char *out = util_xasprintf("%s/%s.out", dir, tag), *err = util_xasprintf("%s/%s.err", dir, tag);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), STDOUT_FILENO);
        dup2(open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600), STDERR_FILENO);
        if (fsize) {
            signal(SIGXFSZ, SIG_IGN); /* kept across exec: writes fail with EFBIG instead */
            struct rlimit lim = {(rlim_t)fsize, (rlim_t)fsize};
            if (setrlimit(RLIMIT_FSIZE, &lim)) _exit(126);
        }
        if (unprivileged && geteuid() == 0 &&
            (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
            _exit(77);
        if (access(servesim, X_OK) != 0) _exit(77);
        execv(servesim, args);
        _exit(127);
    }
    result r = runner_finish(pid, out, err);
    unlink(out);
    unlink(err);
    free(out);
    free(err);
    return r;
}

/* A WAL database whose -shm file is gone (its last writer closed it), in a
 * folder the reader may not write: SQLite can neither create the -shm file
 * nor read without it, and `report` said "not a servesim database".  It is
 * read as immutable now; and one whose -wal still holds pages (which only
 * the -shm file could place) is refused, saying why. */
static void test_readonly_wal(void)
{
    char *ro = in_dir("ro"), *db = in_dir("ro/wal.db");
    chmod(dir, 0755); /* nobody must reach the folder */
    mkdir(ro, 0755);
    for (int i = 0; i < 2; i++) { /* the second run, appended, puts the file in WAL mode */
        result r = sv("run", quick, "-o", db, "--quiet", "--set", "stop.requests=200", NULL);
        is_int(r.status, 0, "run %d into the database", i + 1);
        runner_drop(&r);
    }
    unsigned char v[2] = {0, 0};
    FILE *f = fopen(db, "rb");
    if (f && fseek(f, 18, SEEK_SET) == 0 && fread(v, 1, 2, f) == 2) fclose(f);
    else if (f) fclose(f);
    ok(v[0] == 2 && v[1] == 2, "the database is in WAL mode (header %d %d)", v[0], v[1]);
    char *shm = util_xasprintf("%s-shm", db), *wal = util_xasprintf("%s-wal", db);
    ok(!exists(shm) && !exists(wal), "without -shm and -wal files");
    chmod(db, 0644);
    chmod(ro, 0555);
    char *args[] = {(char *)servesim, "report", db, NULL};
    result r = run_limited(args, "ro", true, 0);
    if (r.status == 77) {
        ok(1, "a WAL database in a read-only folder # SKIP nobody cannot run %s", servesim);
    } else {
        is_int(r.status, 0, "report reads a WAL database in a folder it may not write (%s)", r.err);
        has_str(r.out, "run 2 ", "its last run");
        has_str(r.out, "200 completed", "whole");
        ok(!exists(shm), "and leaves no -shm file");
    }
    runner_drop(&r);

    /* a -wal file with pages in it and no -shm: a copy made while a writer
     * held the database open with a commit not yet checkpointed */
    chmod(ro, 0755);
    char *walro = in_dir("walro"), *copy = in_dir("walro/wal.db");
    mkdir(walro, 0755);
    sqlite3 *h = NULL;
    sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL);
    sqlite3_exec(h, "PRAGMA wal_autocheckpoint = 0; UPDATE runs SET name = 'renamed' WHERE id = 1",
                 NULL, NULL, NULL);
    char *cmd = util_xasprintf("cp %s %s-wal %s/", db, db, walro);
    is_int(system(cmd), 0, "a copy of a database and its -wal, no -shm");
    free(cmd);
    sqlite3_close(h);
    chmod(copy, 0644);
    char *copy_wal = util_xasprintf("%s-wal", copy);
    chmod(copy_wal, 0644);
    chmod(walro, 0555);
    char *args2[] = {(char *)servesim, "report", copy, NULL};
    r = run_limited(args2, "walro", true, 0);
    if (r.status == 77) {
        ok(1, "a WAL database with its log in a read-only folder # SKIP nobody cannot run it");
    } else {
        is_int(r.status, 2, "a WAL database whose log holds pages, no -shm: exit 2 (%d)", r.status);
        has_str(r.err, "holds pages cannot be read without its -shm file",
                "saying why, not 'not a servesim database'");
    }
    runner_drop(&r);
    chmod(walro, 0755);
    free(copy_wal);
    free(walro);
    free(copy);
    free(shm);
    free(wal);
    free(ro);
    free(db);
}

/* ---- a damaged file ---- */

/* 64 bytes of noise (a fixed generator: the same damage every time) at a
 * place in every page but the first, of a file of page_size pages. */
static void damage(const char *path, long page_size)
{
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long pages = ftell(f) / page_size;
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (long p = 1; p < pages; p++) {
        unsigned char noise[64];
        for (int i = 0; i < 64; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            noise[i] = (unsigned char)(x >> 56);
        }
        fseek(f, p * page_size + (long)(x % (uint64_t)(page_size - 64)), SEEK_SET);
        fwrite(noise, 1, sizeof noise, f);
    }
    fclose(f);
}

/* A database with noise on every page read as 206 of its 2000 requests,
 * reported with exit 0: a report now checks that it read the requests the
 * run recorded (runs.requests), and says the file is damaged, with what
 * PRAGMA quick_check finds, exit 2 (bad input).  Rows deleted by hand, in
 * a file SQLite finds sound, are caught the same way. */
static void test_damaged(void)
{
    char *db = in_dir("damaged.db");
    result r = sv("run", quick, "-o", db, "--quiet", "--set", "stop.requests=2000", NULL);
    is_int(r.status, 0, "a run of 2000 requests");
    runner_drop(&r);
    is_int(q1(db, "SELECT requests FROM runs WHERE id = 1"), 2000,
           "its row in runs holds the requests it recorded");
    long page = (long)q1(db, "PRAGMA page_size");
    char *copy = in_dir("deleted.db"), *cmd = util_xasprintf("cp %s %s", db, copy);
    is_int(system(cmd), 0, "a copy");
    free(cmd);
    damage(db, page);
    r = sv("report", db, NULL);
    is_int(r.status, 2, "a damaged file is bad input: exit 2, not a report of part of it (%d)",
           r.status);
    has_str(r.err, "damaged.db: the file is damaged", "naming the file");
    has_str(r.err, "PRAGMA quick_check: ", "with what SQLite's check finds");
    is_str(head(r.out, 10), "", "and no report");
    runner_drop(&r);

    sqlite3 *h = NULL;
    sqlite3_open_v2(copy, &h, SQLITE_OPEN_READWRITE, NULL);
    sqlite3_exec(h, "DELETE FROM requests WHERE run_id = 1 AND id >= 1990", NULL, NULL, NULL);
    sqlite3_close(h);
    r = sv("report", copy, NULL);
    is_int(r.status, 2, "rows deleted by hand: exit 2 (%d)", r.status);
    has_str(r.err, "deleted.db: the file is damaged: run 1 recorded 2000 requests, 1990 could be "
                   "read (PRAGMA quick_check: ok)",
            "the count that disagrees, and a sound file by SQLite's check");
    runner_drop(&r);
    unlink(copy);
    unlink(db);
    free(copy);
    free(db);
}

/* ---- a database removed, a disk full ---- */

/* The database removed while a run appends to it: the run was committed
 * into a file no name reached (lost when it closed) and `run` exited 2,
 * 'no such file', reading it back.  Now it is kept beside the name, with
 * the runs the file held, the message says where, exit 1 (a fault); the
 * removed file's log is not left to be replayed into a new file of its
 * name. */
static void test_removed_while_appending(void)
{
    char *db = in_dir("gone.db");
    result r = sv("run", quick, "-o", db, "--quiet", "--set", "stop.requests=100", NULL);
    is_int(r.status, 0, "a database with one run");
    runner_drop(&r);
    char *args[] = {(char *)servesim, "run", quick, "-o", db, "--quiet", "--set",
                    "stop.requests=100000000", NULL};
    pid_t pid = spawn(args, "gone");
    char *wal = util_xasprintf("%s-wal", db), *shm = util_xasprintf("%s-shm", db);
    for (int i = 0; i < 250 && !exists(wal); i++) sleep_s(0.02); /* appending, in WAL mode */
    sleep_s(0.5);
    is_int(unlink(db), 0, "the database removed while a run appends to it");
    kill(pid, SIGTERM); /* its rows so far are committed: where do they go? */
    r = finish(pid, "gone");
    is_int(r.status, 1, "the run fails as a fault, exit 1, not 2 (%d)", r.status);
    has_str(r.err, "gone.db was removed while the run was written: the run (id 2), with the runs "
                   "the file held, is kept in ",
            "saying so, and where the run is kept");
    const char *at = strstr(r.err, "is kept in ");
    char *kept = at ? util_xasprintf("%.*s", (int)strcspn(at + 11, ","), at + 11) : NULL;
    ok(kept && exists(kept), "in a file that is there (%s)", kept ? kept : "none");
    runner_drop(&r);
    if (kept) {
        r = sv("report", kept, "--run", "2", NULL);
        is_int(r.status, 0, "a servesim database: report reads it");
        has_str(r.out, "interrupted", "the run as it was stopped");
        runner_drop(&r);
        is_int(q1(kept, "SELECT count(*) FROM runs"), 2, "with the first run too");
        unlink(kept);
    }
    ok(!exists(wal) && !exists(shm), "the removed file's -wal and -shm are not left by its name");
    free(kept);
    free(wal);
    free(shm);
    free(db);
}

/* A full disk while a sweep merges its points (files limited to 6 MB, a
 * point 2.5 MB): the point that could not be merged was removed with its
 * run.  Now its file is kept and named, the sweep ends as interrupted, exit
 * 1, and --resume finishes it, removing the file. */
static void test_disk_full_sweep(void)
{
    char *db = in_dir("full.db");
    char *args[] = {(char *)servesim, "sweep", quick, "-o", db, "--quiet", "-j", "2", "--set",
                    "stop.requests=20000", "--vary", "workload.arrival.rate_per_s=4,6,8,10,12,14",
                    NULL};
    result r = run_limited(args, "full", false, 6000000);
    is_int(r.status, 1, "a disk full while merging: exit 1, a fault (%d)", r.status);
    has_str(r.err, "could not be merged: it is kept in ", "saying the point's file is kept");
    has_str(r.out, "(interrupted: --resume finishes it)", "the table of the points merged");
    const char *at = strstr(r.err, "is kept in ");
    char *kept = at ? util_xasprintf("%.*s", (int)strcspn(at + 11, ","), at + 11) : NULL;
    ok(kept && exists(kept), "its file is there (%s)", kept ? kept : "none");
    runner_drop(&r);
    if (kept) {
        r = sv("report", kept, NULL);
        is_int(r.status, 0, "a servesim database of the point: report reads it");
        runner_drop(&r);
    }
    long long merged = q1(db, "SELECT count(*) FROM runs");
    cmp_ok(merged, >=, 1, "the points merged are kept (%lld)", merged);
    is_int(q1(db, "SELECT count(*) FROM runs WHERE requests = 20000 AND "
                  "(SELECT count(*) FROM requests WHERE run_id = runs.id) = 20000"),
           merged, "each whole");
    r = sv("sweep", quick, "-o", db, "--quiet", "-j", "2", "--set", "stop.requests=20000",
           "--vary", "workload.arrival.rate_per_s=4,6,8,10,12,14", "--resume", NULL);
    is_int(r.status, 0, "--resume finishes the sweep");
    runner_drop(&r);
    is_int(q1(db, "SELECT count(*) FROM runs"), 6, "all 6 points");
    ok(!kept || !exists(kept), "and removes the kept point's file");
    free(kept);
    free(db);
}

/* ---- names that are no database ---- */

/* Edits the database at path by hand with sql: whether it applied. */
static bool edit(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    bool applied = sqlite3_open(path, &h) == SQLITE_OK &&
                   sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(h);
    return applied;
}

/* A run of n requests of the quick start into the test folder's file
 * name, then edited by hand with sql: its path (caller frees), and in *applied
 * whether the edit applied. */
static char *edited_run(const char *name, const char *n, const char *sql, bool *applied)
{
    char *db = in_dir(name), *stop = util_xasprintf("stop.requests=%s", n);
    result r = sv("run", quick, "-o", db, "--quiet", "--set", stop, NULL);
    runner_drop(&r);
    free(stop);
    *applied = edit(db, sql);
    return db;
}

/* A stored scenario edited to more classes than a scenario may have (the
 * schema's 1,000): report reads no more than a run could have had, and says
 * the file was edited -- 100,000 of them took 14 s and 200 MB before. */
static void test_edited_classes(void)
{
    char *list = util_xstrdup("[");
    for (int i = 0; i <= 1000; i++) {
        char *next = util_xasprintf("%s%s{\"name\": \"c%d\", \"weight\": 1}", list,
                                    i ? ", " : "", i);
        free(list);
        list = next;
    }
    char *sql = util_xasprintf("UPDATE runs SET scenario = json_set(scenario, "
                               "'$.workload.classes', json('%s]'))", list);
    bool applied;
    char *db = edited_run("classes.db", "200", sql, &applied);
    ok(applied, "the scenario edited to 1,001 classes");
    free(list);
    free(sql);
    result r = sv("report", db, NULL);
    is_int(r.status, 2, "report refuses it, exit 2");
    has_str(r.err, "1001 workload.classes, more than the 1000", "naming the count and the limit");
    runner_drop(&r);
    unlink(db);
    free(db);
}

/* Hand-edited rows (issue 31, item 8): values no run writes are checked as
 * input is.  Request rows with a time stored as text or as infinity, an
 * arrival at -1e308 or no output tokens are left out and counted, and the
 * figures are the other rows' (the mean TTFT was negative); a negative
 * price in the replicas table is refused (costs came out negative). */
static void test_edited_rows(void)
{
    bool applied;
    char *db = edited_run("edited.db", "500",
                          "UPDATE requests SET first_token_s = 'soon' WHERE id = 5;"
                          "UPDATE requests SET first_token_s = 9e999 WHERE id = 6;"
                          "UPDATE requests SET arrival_s = -1e308 WHERE id = 7;"
                          "UPDATE requests SET output_tokens = 0 WHERE id = 8;",
                          &applied);
    ok(applied, "four request rows edited");
    result r = sv("report", db, NULL);
    is_int(r.status, 0, "report reads the rest, exit 0");
    has_str(r.out, "4 request rows left out: values no run writes (request 5: its first_token_s "
                   "is not a number)", "and says what it left out");
    runner_drop(&r);
    r = sv("report", db, "--json", NULL);
    has_str(r.out, "\"skipped_rows\":", "--json counts them");
    has_str(r.out, "\"count\":\t4", "four of them");
    runner_drop(&r);
    r = sv("report", db, "--csv", NULL);
    const char *mean = r.out ? strstr(r.out, "ttft_s.mean,") : NULL;
    ok(mean && atof(mean + 12) > 0, "the mean TTFT is of the valid rows (%s)",
       mean ? head(mean + 12, 8) : "none");
    runner_drop(&r);
    ok(edit(db, "UPDATE replicas SET usd_per_gpu_hour = -3"), "its price edited below 0");
    r = sv("report", db, NULL);
    is_int(r.status, 2, "a negative price is refused, exit 2");
    has_str(r.err, "replicas.usd_per_gpu_hour is negative", "naming the column");
    runner_drop(&r);
    unlink(db);
    free(db);
}

static void test_not_databases(void)
{
    const char *names[] = {"", ":memory:"};
    for (int i = 0; i < 2; i++) {
        result r = sv("run", quick, "-o", names[i], NULL);
        is_int(r.status, 2, "-o '%s' is bad input (%d)", names[i], r.status);
        runner_drop(&r);
    }
    char *empty = in_dir("empty.db");
    fclose(fopen(empty, "w"));
    result r = sv("run", quick, "-o", empty, NULL);
    is_int(r.status, 2, "an empty file is not taken over");
    has_str(r.err, "not a servesim database", "as not a servesim database");
    runner_drop(&r);
    struct stat st = {0};
    is_int(stat(empty, &st), 0, "and is left");
    is_int(st.st_size, 0, "empty");
    unlink(empty);
    free(empty);
    /* a FIFO read as a database waited for a writer for ever */
    char *fifo = in_dir("db.fifo");
    is_int(mkfifo(fifo, 0600), 0, "a FIFO");
    r = sv("report", fifo, NULL);
    is_int(r.status, 2, "report refuses a FIFO, exit 2");
    has_str(r.err, "db.fifo: not a regular file", "as not a regular file");
    runner_drop(&r);
    unlink(fifo);
    free(fifo);
}

/* ---- the overload guard of a plain run ---- */

/* Closed-loop users past what the cluster can hold in flight: three
 * classes of 10^7 users each (30 million, the schema's limit a class) are
 * made as they first send, so the run stops as overloaded at the default
 * guard (1,512 on one H100) in bounded memory and at once -- it grew to
 * gigabytes before.  Then a closed loop under the guard, stopped by
 * SIGTERM, exits within a second. */
static void test_closed_loop_overload(void)
{
    char *db = in_dir("closed.db");
    char *args[] = {(char *)servesim, "run", quick, "-o", db, "--quiet", "--set",
                    "workload.classes=[{\"name\": \"a\", \"arrival\": {\"process\": \"closed\", "
                    "\"users\": 10000000}}, {\"name\": \"b\", \"arrival\": {\"process\": "
                    "\"closed\", \"users\": 10000000}}, {\"name\": \"c\", \"arrival\": "
                    "{\"process\": \"closed\", \"users\": 10000000}}]",
                    "--unset", "workload.arrival", "--set", "stop.requests=100000000", NULL};
    double t0 = util_wall_s();
    pid_t pid = spawn(args, "closed");
    int st = 0;
    struct rusage ru;
    pid_t got = wait4(pid, &st, 0, &ru);
    double took = util_wall_s() - t0;
    char *out = in_dir("closed.out"), *err = in_dir("closed.err");
    unlink(out);
    unlink(err);
    free(out);
    free(err);
    ok(got == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "30 million closed-loop users: exit 0");
    cmp_ok(took, <, 5, "ends at once (%.2f s)", took);
    cmp_ok(ru.ru_maxrss, <, 100 * 1024, "peak memory %ld KiB, under 100 MiB", ru.ru_maxrss);
    is_int(q1(db, "SELECT status = 'overloaded' FROM runs"), 1, "runs.status is overloaded");
    cmp_ok(q1(db, "SELECT count(*) FROM requests"), <=, 1512,
           "no more requests than the guard's 1,512 (%lld)", q1(db, "SELECT count(*) FROM requests"));
    result r = sv("report", db, NULL);
    has_str(r.out, "a closed loop of more users than 1512", "the report says why");
    runner_drop(&r);
    unlink(db);
    /* under the guard it runs, and a signal stops it at once */
    char *under[] = {(char *)servesim, "run", quick, "-o", db, "--quiet", "--set",
                     "workload.arrival={\"process\": \"closed\", \"users\": 1500}", "--set",
                     "stop.requests=100000000", NULL};
    pid = spawn(under, "under");
    sleep_s(1.0);
    t0 = util_wall_s();
    kill(pid, SIGTERM);
    r = finish(pid, "under");
    took = util_wall_s() - t0;
    is_int(r.status, 128 + SIGTERM, "1,500 users run until SIGTERM, exit 143");
    cmp_ok(took, <, 1.0, "within a second of it (%.2f s)", took);
    long long open = q1(db, "SELECT count(*) FROM requests WHERE status = 'unfinished'");
    ok(open > 1000 && open <= 1500, "the requests in flight kept as unfinished, at most one a "
       "user (%lld; a user between its reply and its next send has none)", open);
    runner_drop(&r);
    unlink(db);
    free(db);
}

static void test_run_overload(void)
{
    char *db = in_dir("over.db");
    double t0 = util_wall_s();
    result r = sv("run", quick, "-o", db, "--set", "workload.arrival.rate_per_s=1000000", "--set",
                  "stop.requests=10000000", NULL);
    double took = util_wall_s() - t0;
    is_int(r.status, 0, "a run at 1e6 req/s exits 0");
    cmp_ok(took, <, 10, "a run at 1e6 req/s ends at once (%.2f s)", took);
    is_str(head(r.out, 5), "run 1", "the report starts with the run");
    has_str(strtok(r.out, "\n"), "overloaded", "the report says overloaded on its first line");
    runner_drop(&r);
    r = sv("report", db, "--json", NULL);
    has_str(r.out, "could not keep up", "with the reason, stored with the run");
    runner_drop(&r);
    is_int(q1(db, "SELECT status = 'overloaded' FROM runs"), 1, "runs.status is overloaded");
    cmp_ok(q1(db, "SELECT count(*) FROM requests"), <, 10000,
           "memory bounded: %lld requests recorded", q1(db, "SELECT count(*) FROM requests"));
    unlink(db);
    /* stop.max_in_flight: the user's own limit is the whole guard */
    r = sv("run", quick, "-o", db, "--quiet", "--set", "workload.arrival.rate_per_s=1000", "--set",
           "stop.requests=5000", "--set", "warmup_s=0", NULL);
    is_int(q1(db, "SELECT status = 'overloaded' FROM runs WHERE id = 1"), 1,
           "a burst of 5,000 at 1000 req/s is overloaded by the default guard (1,512)");
    runner_drop(&r);
    r = sv("run", quick, "-o", db, "--quiet", "--set", "workload.arrival.rate_per_s=1000", "--set",
           "stop.requests=5000", "--set", "warmup_s=0", "--set", "stop.max_in_flight=100000",
           NULL);
    is_int(q1(db, "SELECT status = 'completed' FROM runs WHERE id = 2"), 1,
           "stop.max_in_flight=100000 lets it run to its end");
    is_int(q1(db, "SELECT count(*) FROM requests WHERE run_id = 2 AND status = 'completed'"), 5000,
           "every request completed");
    runner_drop(&r);
    r = sv("run", quick, "-o", db, "--quiet", "--set", "stop.max_in_flight=5", NULL);
    is_int(q1(db, "SELECT status = 'overloaded' FROM runs WHERE id = 3"), 1,
           "stop.max_in_flight=5 stops the quickstart, whose batch holds more");
    runner_drop(&r);
    r = sv("report", db, "--run", "3", NULL);
    has_str(r.out, "(the limit: stop.max_in_flight)", "and the reason names the key");
    runner_drop(&r);
    unlink(db);
    free(db);
}

/* ---- an empty measurement window ---- */

static bool has_nan(const char *s)
{
    for (const char *p = s; *p; p++)
        if ((p[0] == 'n' || p[0] == 'N') && (p[1] == 'a' || p[1] == 'A') &&
            (p[2] == 'n' || p[2] == 'N') && (p == s || !((p[-1] | 32) >= 'a' && (p[-1] | 32) <= 'z')) &&
            !((p[3] | 32) >= 'a' && (p[3] | 32) <= 'z'))
            return true;
    return strstr(s, "inf ") || strstr(s, "inf\n") || strstr(s, "inf,");
}

static void test_empty_window(void)
{
    char *db = in_dir("empty-window.db");
    result r = sv("run", quick, "-o", db, "--set", "workload.timeout_s=0.001", "--slo",
                  "ttft_p99=1", NULL);
    is_int(r.status, 0, "a run whose every request timed out is recorded");
    ok(!has_nan(r.out), "its report prints no NaN");
    has_str(r.out, "measurement window is empty", "and says the window is empty in words");
    runner_drop(&r);
    const char *formats[] = {"--json", "--csv", "--markdown"};
    for (int i = 0; i < 3; i++) {
        r = sv("report", db, formats[i], "--slo", "ttft_p99=1", NULL);
        is_int(r.status, 0, "report %s exits 0", formats[i]);
        ok(!has_nan(r.out), "report %s prints no NaN", formats[i]);
        runner_drop(&r);
    }
    unlink(db);
    free(db);
}

/* ---- verdicts count every request ---- */

static void test_verdicts(void)
{
    char *db = in_dir("rejects.db");
    /* most prompts are longer than 512 tokens: rejected by the scheduler
     * (ideal's continuous one, which does not split prompts) */
    result r = sv("run", quick, "-o", db, "--set", "cluster.engine=ideal", "--set",
                  "cluster.scheduler.max_batched_tokens=512", "--slo", "ttft_p99=10", "--json",
                  NULL);
    cJSON *j = cJSON_Parse(r.out);
    const cJSON *t = cJSON_GetArrayItem(util_json_get(j, "slo.targets"), 0);
    cmp_ok(util_json_number(j, "requests.rejected", 0), >, 1000, "most requests are rejected");
    cmp_ok(util_json_number(t, "value_s", 1e9), <, 10,
           "P99 TTFT of the completed requests alone is within 10 s (%g)",
           util_json_number(t, "value_s", NAN));
    ok(cJSON_IsFalse(cJSON_GetObjectItem(t, "met")),
       "but the target is not met: the rejected count as infinitely late");
    cmp_ok(util_json_number(t, "not_completed", 0), >, 1000, "and are counted");
    cJSON_Delete(j);
    runner_drop(&r);
    unlink(db);
    free(db);

    r = sv("plan", quick, "--set", "cluster.engine=ideal", "--set",
           "cluster.scheduler.max_batched_tokens=512", "--target", "ttft_p99<=0.2", "--find",
           "min-replicas", "--rate", "30", "--max-replicas", "4", NULL);
    is_int(r.status, 0, "plan exits 0");
    has_str(r.out, "no configuration tried meets the targets",
            "plan: no replica count meets a P99 target most requests are rejected from");
    has_str(r.out, "ttft_p99<=0.2 fails", "and says which target failed at each trial");
    has_str(r.out, "of requests not completed", "and why");
    runner_drop(&r);

    r = sv("plan", quick, "--target", "ttft_p99<=500ms", "--find", "cheapest", "--rate", "4",
           "--candidates", "cluster.gpu=h100-sxm,a100-80gb", "--max-replicas", "2", NULL);
    is_int(r.status, 0, "plan --find cheapest exits 0");
    has_str(r.out, "candidates at 4 req/s:", "cheapest prints its candidates");
    has_str(r.out, "gpu=h100-sxm ", "one line each");
    has_str(r.out, "gpu=a100-80gb ", "the A100's too");
    has_str(r.out, "replica", "with replicas and cost, or why not met");
    runner_drop(&r);
}

/* ---- validate takes the one run path too ---- */

static void test_validate_bad_trace(const char *root)
{
    char *cmd = util_xasprintf("cp -r %s/data/validation/llmservingsim %s/v && sed -i "
                               "'5s/.*/1.0,abc,12/' %s/v/workload_sharegpt-llama-3.1-8b-300-sps10.csv",
                               root, dir, dir);
    is_int(system(cmd), 0, "a validation folder with a broken workload line");
    free(cmd);
    char *v = in_dir("v");
    result r = sv("validate", "--data", v, NULL);
    is_int(r.status, 2, "validate: a broken trace is bad input, exit 2 (%d)", r.status);
    has_str(r.err, "workload_sharegpt-llama-3.1-8b-300-sps10.csv:5: field 2 (input_tokens)",
            "and says where");
    runner_drop(&r);
    free(v);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_faults SERVESIM SOURCE_ROOT\n");
        return 2;
    }
    servesim = argv[1];
    quick = util_xasprintf("%s/examples/quickstart.json", argv[2]);
    if (!mkdtemp(dir)) return 1;
    test_concurrent_creators();
    test_readers();
    test_sweep_neighbour();
    test_signal_run(SIGTERM, "SIGTERM");
    test_signal_run(SIGHUP, "SIGHUP");
    test_signal_run(SIGINT, "SIGINT");
    test_signal_sweep();
    test_sweep_worker_killed();
    test_readonly_wal();
    test_damaged();
    test_removed_while_appending();
    test_disk_full_sweep();
    test_not_databases();
    test_edited_classes();
    test_edited_rows();
    test_run_overload();
    test_closed_loop_overload();
    test_empty_window();
    test_verdicts();
    test_validate_bad_trace(argv[2]);
    char *cmd = util_xasprintf("rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    free(cmd);
    free(quick);
    return tap_done();
}
