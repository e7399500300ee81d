/*
 * mpi.c: the pool's workers as MPI ranks, for sweeps and plans beyond one
 * machine (`mpirun -np N servesim sweep ...`, or `srun` under Slurm).
 *
 * Every rank runs the same command line up to pl_pool_start.  There rank 0
 * becomes the coordinator and the one writer: it hands jobs out (at most
 * DEPTH to a rank, each rank asking for the next by answering), merges the
 * answers exactly as it merges local workers' (the same job text in, the
 * same result text out, a sweep point's database file shipped along from
 * another machine, left where it is on rank 0's own), and
 * draws the progress.  Every other rank serves jobs until told to stop, and
 * exits there.  Nothing else is distributed, so the database is the one
 * `sweep -j 1` writes: run ids are given before any point runs.
 *
 * Waiting is polled (MPI_Iprobe, then a millisecond's sleep), not blocked:
 * Open MPI's blocking calls spin, and a rank spinning on a shared core
 * slows the ranks that simulate.
 */
#include "pl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if SERVESIM_MPI

#include <mpi.h>
#include <signal.h>

enum { TAG_JOB = 1, TAG_RESULT = 2, TAG_FILE = 3, TAG_STOP = 4, DEPTH = 2 };

static bool started;
static int rank, size = 1;
static bool beside_root;   /* this rank is on rank 0's machine: its files are rank 0's too */
static bool abort_at_exit; /* workers were cut short: take the whole job down */

bool pl_mpi_built(void)
{
    return true;
}

/* Launched by mpirun or srun: their environment says so.  A plain
 * `servesim sweep` of an MPI build stays a local sweep (no MPI_Init: a
 * singleton init is slow and may print warnings). */
static bool under_launcher(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                       "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return true;
    return false;
}

static void finish(void)
{
    if (abort_at_exit)
        MPI_Abort(MPI_COMM_WORLD, 130);
    else
        MPI_Finalize();
}

bool pl_mpi_start(int *argc, char ***argv)
{
    if (started || !under_launcher()) return started;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return false;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    started = true;
    atexit(finish);
    return true;
}

int pl_mpi_rank(void)
{
    return rank;
}

int pl_mpi_size(void)
{
    return size;
}

static void nap(void)
{
    nanosleep(&(struct timespec){0, 1000000}, NULL);
}

/* Waits (polling) for a message from source with tag; false when *stop is
 * raised or the wait passes timeout_s (0: no limit). */
static bool await(int source, int tag, MPI_Status *st, const volatile sig_atomic_t *stop,
                  double timeout_s)
{
    double until = timeout_s > 0 ? util_wall_s() + timeout_s : 0;
    for (;;) {
        int flag = 0;
        if (MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, st) != MPI_SUCCESS) return false;
        if (flag) return true;
        if ((stop && *stop) || (until && util_wall_s() > until)) return false;
        nap();
    }
}

static char *recv_text(MPI_Status *st, int tag)
{
    int n = 0;
    MPI_Get_count(st, MPI_CHAR, &n);
    char *s = util_xmalloc((size_t)n + 1);
    MPI_Recv(s, n, MPI_CHAR, st->MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    s[n] = '\0';
    return s;
}

/* ---- a worker rank ---- */

/* A whole file, however large (a point of a million requests); NULL when
 * there is none. */
static char *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20;
    char *buf = util_xmalloc(cap);
    *len = 0;
    for (size_t k; (k = fread(buf + *len, 1, cap - *len, f)) > 0;)
        if ((*len += k) == cap) buf = util_xrealloc(buf, cap *= 2);
    bool failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* A sweep point's file: read, then removed here (rank 0 writes it again
 * where it merges, on its own file system).  "" when the job has none. */
static char *take_file(const char *job, size_t *len)
{
    cJSON *j = cJSON_Parse(job);
    const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "path"));
    char *out = NULL, *data = NULL;
    size_t n = 0;
    if (path && (data = read_whole(path, &n))) {
        size_t plen = strlen(path);
        out = util_xmalloc(plen + 1 + n);
        memcpy(out, path, plen + 1); /* the path, its terminator, the bytes */
        memcpy(out + plen + 1, data, n);
        *len = plen + 1 + n;
        unlink(path);
    }
    free(data);
    cJSON_Delete(j);
    if (!out) *len = 0;
    return out;
}

/* The last answer's sends, left to complete while the next job runs: a
 * large message waits for rank 0 to take it (it may be merging), and a
 * blocking send would spin a core the other ranks need. */
typedef struct pending {
    MPI_Request req[2];
    char *result, *file;
    bool out;
} pending;

static void complete(pending *p)
{
    if (!p->out) return;
    for (;;) {
        int done = 0;
        MPI_Testall(2, p->req, &done, MPI_STATUSES_IGNORE);
        if (done) break;
        nap();
    }
    free(p->result);
    free(p->file);
    p->out = false;
}

static void serve(pl_job_fn fn, void *ctx)
{
    /* Ctrl-C reaches every rank from the launcher; rank 0 decides */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    pending last = {0};
    for (;;) {
        MPI_Status st;
        if (!await(0, MPI_ANY_TAG, &st, NULL, 0)) break;
        if (st.MPI_TAG == TAG_STOP) {
            MPI_Recv(NULL, 0, MPI_CHAR, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        }
        char *job = recv_text(&st, st.MPI_TAG);
        char *result = fn(job, ctx);
        size_t len = 0;
        /* beside rank 0 the file is where its merge reads it already */
        char *file = beside_root ? NULL : take_file(job, &len);
        free(job);
        complete(&last); /* answers go in order: the one before first */
        last = (pending){.result = result, .file = file, .out = true};
        MPI_Isend(result, (int)strlen(result), MPI_CHAR, 0, TAG_RESULT, MPI_COMM_WORLD,
                  &last.req[0]);
        MPI_Isend(file ? file : "", (int)len, MPI_BYTE, 0, TAG_FILE, MPI_COMM_WORLD, &last.req[1]);
    }
    complete(&last);
    MPI_Finalize();
    _exit(0); /* the command line's own exit (its table, its atexit) is rank 0's */
}

/* ---- rank 0 ---- */

struct pl__mpi {
    int ranks;              /* workers: ranks 1 .. ranks */
    int *held;              /* jobs out at each rank */
    int64_t (*tags)[DEPTH]; /* theirs, oldest first: a rank answers in order */
};

/* Whether this rank runs on rank 0's machine (by processor name): every
 * rank calls it, once, as the pool starts. */
static void find_root(void)
{
    char mine[MPI_MAX_PROCESSOR_NAME] = "", root[MPI_MAX_PROCESSOR_NAME] = "";
    int n = 0;
    MPI_Get_processor_name(mine, &n);
    if (rank == 0) memcpy(root, mine, sizeof root);
    MPI_Bcast(root, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    /* ranks in containers of their own share a name but not a disk */
    const char *ship = getenv("SERVESIM_MPI_SHIP_FILES");
    beside_root = !strcmp(mine, root) && !(ship && !strcmp(ship, "1"));
}

pl__mpi *pl__mpi_start(pl_job_fn fn, void *ctx)
{
    find_root();
    if (rank != 0) serve(fn, ctx);
    pl__mpi *m = util_xcalloc(1, sizeof *m);
    m->ranks = size - 1;
    m->held = util_xcalloc((size_t)size, sizeof *m->held);
    m->tags = util_xcalloc((size_t)size, sizeof *m->tags);
    return m;
}

int pl__mpi_workers(const pl__mpi *m)
{
    return m->ranks;
}

bool pl__mpi_submit(pl__mpi *m, int64_t tag, const char *job)
{
    int r = 0; /* the rank holding fewest jobs */
    for (int i = 1; i <= m->ranks; i++)
        if (m->held[i] < DEPTH && (!r || m->held[i] < m->held[r])) r = i;
    if (!r) return false;
    if (MPI_Send(job, (int)strlen(job), MPI_CHAR, r, TAG_JOB, MPI_COMM_WORLD) != MPI_SUCCESS)
        return false;
    m->tags[r][m->held[r]++] = tag;
    return true;
}

/* A point's file as the worker shipped it, written where the merge reads it. */
static bool put_file(const char *buf, size_t len)
{
    size_t plen = strnlen(buf, len);
    if (plen == len) return false;
    FILE *f = fopen(buf, "wb");
    if (!f) return false;
    size_t n = len - plen - 1;
    bool ok = fwrite(buf + plen + 1, 1, n, f) == n;
    return (fclose(f) == 0) && ok;
}

int pl__mpi_wait(pl__mpi *m, const volatile sig_atomic_t *stop, double timeout_s, int64_t *tag,
                 char **result)
{
    MPI_Status st;
    if (!await(MPI_ANY_SOURCE, TAG_RESULT, &st, stop, timeout_s)) return 0;
    int r = st.MPI_SOURCE;
    *result = recv_text(&st, TAG_RESULT);
    MPI_Status fst;
    if (MPI_Probe(r, TAG_FILE, MPI_COMM_WORLD, &fst) != MPI_SUCCESS) return -1;
    int n = 0;
    MPI_Get_count(&fst, MPI_BYTE, &n);
    char *buf = util_xmalloc((size_t)n + 1);
    MPI_Recv(buf, n, MPI_BYTE, r, TAG_FILE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (n > 0 && !put_file(buf, (size_t)n)) {
        free(*result);
        *result = util_xstrdup("{\"ok\": false, \"error\": \"cannot write a point's file on "
                               "rank 0\"}");
    }
    free(buf);
    *tag = m->tags[r][0];
    memmove(m->tags[r], m->tags[r] + 1, (size_t)(--m->held[r]) * sizeof **m->tags);
    return 1;
}

void pl__mpi_stop(pl__mpi *m)
{
    bool busy = false;
    for (int i = 1; i <= m->ranks; i++)
        busy |= m->held[i] > 0;
    if (busy) {
        abort_at_exit = true; /* ranks mid-point cannot be told: they go with the job */
    } else {
        for (int i = 1; i <= m->ranks; i++)
            MPI_Send(NULL, 0, MPI_CHAR, i, TAG_STOP, MPI_COMM_WORLD);
    }
    free(m->held);
    free(m->tags);
    free(m);
}

#else /* built without MPI */

bool pl_mpi_built(void)
{
    return false;
}

bool pl_mpi_start(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return false;
}

int pl_mpi_rank(void)
{
    return 0;
}

int pl_mpi_size(void)
{
    return 1;
}

pl__mpi *pl__mpi_start(pl_job_fn fn, void *ctx)
{
    (void)fn;
    (void)ctx;
    return NULL;
}

int pl__mpi_workers(const pl__mpi *m)
{
    (void)m;
    return 0;
}

bool pl__mpi_submit(pl__mpi *m, int64_t tag, const char *job)
{
    (void)m;
    (void)tag;
    (void)job;
    return false;
}

int pl__mpi_wait(pl__mpi *m, const volatile sig_atomic_t *stop, double timeout_s, int64_t *tag,
                 char **result)
{
    (void)m;
    (void)stop;
    (void)timeout_s;
    (void)tag;
    (void)result;
    return 0;
}

void pl__mpi_stop(pl__mpi *m)
{
    (void)m;
}

#endif
