/*
 * fuzz.h: what the fuzz harnesses share (docs/fuzzing.md).
 *
 * Each harness is one file defining libFuzzer's two entry points,
 * LLVMFuzzerInitialize (one-time setup: the catalog, the temporary file) and
 * LLVMFuzzerTestOneInput (one input, everything it allocates freed before it
 * returns, so LeakSanitizer and valgrind see a leak as the library's).  The
 * same file links either with libFuzzer's main (-Dfuzz=true, clang) or with
 * replay.c's, which feeds it the files named on its command line, so the
 * seed corpora and the saved crashes are replayed by every `meson test`.
 *
 * A harness never writes anywhere but its one temporary file, which is
 * unlinked as soon as it is created (see fuzz_file): nothing is left behind,
 * even when an input crashes the process.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the library promises failed: say which, and abort, so that
 * libFuzzer saves the input as a crash and replay fails. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The input as a NUL-terminated string (cut at its first NUL); caller frees. */
char *fuzz_text(const uint8_t *data, size_t size);

/* Whether text mentions a device or kernel file ("dev/", "proc/", "sys/"):
 * a scenario naming /dev/zero or /dev/stdin as a trace would make the
 * harness read forever or block, which is the input's fault, not a bug. */
int fuzz_names_device(const char *text);

/* With FUZZ_VERBOSE set in the environment, prints d's messages after
 * what: to see why a replayed input was rejected. */
void fuzz_show(const util_diag *d, const char *what);

/* Creates the harness's temporary file (call once, from
 * LLVMFuzzerInitialize). */
void fuzz_file_init(void);
/* Replaces the temporary file's contents with data and returns a path that
 * opens it ("/proc/self/fd/N": the file itself is already unlinked). */
const char *fuzz_file(const uint8_t *data, size_t size);

#endif /* FUZZ_H */
