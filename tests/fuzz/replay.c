/*
 * replay.c: a main() for a fuzz harness without libFuzzer, so that every
 * build (gcc, valgrind, the sanitizer build) runs the harness over its seed
 * corpus and its saved regressions.  Each argument is a file, or a folder
 * whose files (not those starting with '.') are fed in name order; each
 * argument is one TAP line.  An input that breaks a check aborts the
 * program, naming the file on stderr first.
 *
 * usage: replay_HARNESS FILE|FOLDER...
 */
#include "fuzz.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

/* realloc that aborts: a replay out of memory has nothing to report */
static void *grow(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) abort();
    return p;
}

static int feed(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t cap = 4096, len = 0, n;
    uint8_t *buf = grow(NULL, cap);
    while ((n = fread(buf + len, 1, cap - len, f)) > 0)
        if ((len += n) == cap) buf = grow(buf, cap *= 2);
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return -1;
    }
    /* an exact-size copy, so an overread past the input is caught */
    uint8_t *in = grow(NULL, len ? len : 1);
    memcpy(in, buf, len);
    free(buf);
    fprintf(stderr, "replay: %s\n", path);
    LLVMFuzzerTestOneInput(in, len);
    free(in);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files fed from path, or -1 when it cannot be read. */
static int feed_path(const char *path)
{
    struct stat st;
    if (stat(path, &st)) return -1;
    if (!S_ISDIR(st.st_mode)) return feed(path) ? -1 : 1;
    DIR *dir = opendir(path);
    if (!dir) return -1;
    char **names = NULL;
    int n = 0, cap = 0, fed = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) names = grow(names, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(dir);
    if (n) qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(path) + strlen(names[i]) + 2;
        char *file = grow(NULL, len);
        snprintf(file, len, "%s/%s", path, names[i]);
        if (fed >= 0) fed = feed(file) ? -1 : fed + 1;
        free(file);
        free(names[i]);
    }
    free(names);
    return fed;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        int fed = feed_path(argv[i]);
        if (fed < 0) {
            failed++;
            printf("not ok %d - %s: cannot be read\n", i, argv[i]);
        } else {
            printf("ok %d - %s: %d input%s\n", i, argv[i], fed, fed == 1 ? "" : "s");
        }
        fflush(stdout);
    }
    printf("1..%d\n", argc - 1);
    return failed ? 1 : 0;
}
