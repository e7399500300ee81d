/*
 * bench_merge.c: the serial share of a distributed sweep -- how many rows a
 * second the one writer (the sweep's parent, MPI's rank 0) merges.  Makes
 * one point database with servesim (`servesim run SCENARIO --set
 * stop.requests=N`), copies it K times with the run ids a sweep would have
 * given them (untimed), then times rec_publish of each into one output, as
 * the sweep's writer does, and prints rows merged per second.
 * Usage: bench_merge SERVESIM SCENARIO.json [REQUESTS [POINTS [DIR]]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rec.h"

static int exec_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open(path, &db) == SQLITE_OK &&
             sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(db);
    return rc ? 0 : -1;
}

static long rows_in(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long n = -1;
    sqlite3_open(path, &db);
    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT count(*) FROM requests) + (SELECT count(*) FROM "
                           "replicas) + (SELECT count(*) FROM runs)",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_merge SERVESIM SCENARIO.json [REQUESTS [POINTS [DIR]]]\n");
        return 2;
    }
    long requests = argc > 3 ? atol(argv[3]) : 20000, points = argc > 4 ? atol(argv[4]) : 20;
    const char *dir = argc > 5 ? argv[5] : "/tmp";
    char template[1024], out[1024], point[1024];
    snprintf(template, sizeof template, "%s/servesim-merge-%ld-template.db", dir, (long)getpid());
    snprintf(out, sizeof out, "%s/servesim-merge-%ld-out.db", dir, (long)getpid());
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' run '%s' -o '%s' --quiet --set stop.requests=%ld > /dev/null",
             argv[1], argv[2], template, requests);
    if (system(cmd) != 0) {
        fprintf(stderr, "bench_merge: servesim run failed\n");
        return 1;
    }
    /* the run just made is the template; its copies get ids 1..K */
    long rows = rows_in(template);
    double merge_s = 0;
    util_diag d;
    util_diag_init(&d);
    for (long k = 1; k <= points; k++) {
        snprintf(point, sizeof point, "%s/servesim-merge-%ld-point-%ld.db", dir, (long)getpid(), k);
        char sql[512];
        snprintf(cmd, sizeof cmd, "cp '%s' '%s'", template, point);
        if (system(cmd) != 0) return 1;
        snprintf(sql, sizeof sql,
                 "UPDATE runs SET id = %ld; UPDATE requests SET run_id = %ld; "
                 "UPDATE replicas SET run_id = %ld",
                 k, k, k);
        if (exec_sql(point, sql)) return 1;
        double t0 = util_wall_s();
        int64_t id = k;
        if (rec_publish(point, out, &id, &d)) {
            util_diag_print(&d, stderr, "bench_merge");
            return 1;
        }
        merge_s += util_wall_s() - t0;
    }
    long merged = rows_in(out);
    printf("merged %ld points of %ld requests (%ld rows) in %.3f s: %.0f rows/s, %.1f ms a point\n",
           points, requests, merged, merge_s, merged / merge_s, 1e3 * merge_s / points);
    if (merged != rows * points) printf("MISMATCH: expected %ld rows\n", rows * points);
    unlink(template);
    unlink(out);
    char wal[1100];
    snprintf(wal, sizeof wal, "%s-wal", out);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", out);
    unlink(wal);
    util_diag_fini(&d);
    return 0;
}
