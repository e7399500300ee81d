/*
 * fuzz.c: the harnesses' shared helpers -- the input as text, and the one
 * temporary file a reader that takes a path is given.  The file is created
 * with mkstemp and unlinked at once; it stays reachable through its
 * descriptor as /proc/self/fd/N (Linux), so a crash, a timeout or a killed
 * fuzzing job leaves no file behind.
 */
#include "fuzz.h"

#include <string.h>
#include <unistd.h>

static int temp_fd = -1;
static char temp_path[64];

char *fuzz_text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) abort();
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

int fuzz_names_device(const char *text)
{
    return strstr(text, "dev/") || strstr(text, "proc/") || strstr(text, "sys/");
}

void fuzz_show(const util_diag *d, const char *what)
{
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("FUZZ_VERBOSE") != NULL;
    if (verbose) util_diag_print(d, stderr, what);
}

void fuzz_file_init(void)
{
    if (temp_fd >= 0) return;
    const char *dir = getenv("TMPDIR");
    char name[4096];
    snprintf(name, sizeof name, "%s/servesim-fuzz-XXXXXX", dir && *dir ? dir : "/tmp");
    temp_fd = mkstemp(name);
    if (temp_fd < 0) {
        perror("fuzz: mkstemp");
        abort();
    }
    unlink(name);
    snprintf(temp_path, sizeof temp_path, "/proc/self/fd/%d", temp_fd);
}

const char *fuzz_file(const uint8_t *data, size_t size)
{
    if (ftruncate(temp_fd, 0)) {
        perror("fuzz: ftruncate");
        abort();
    }
    for (size_t done = 0; done < size;) {
        ssize_t n = pwrite(temp_fd, data + done, size - done, (off_t)done);
        if (n <= 0) {
            perror("fuzz: pwrite");
            abort();
        }
        done += (size_t)n;
    }
    return temp_path;
}
