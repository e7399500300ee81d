/*
 * fuzz_trace.c: bytes as a trace file.  The input is written to the
 * harness's temporary file and read through to its end as each format --
 * detected (auto), csv, azure and mooncake -- with wl_trace_open and
 * wl_trace_next, then once more with wl_trace_check.
 *
 * Every record handed out must keep the promises of wl.h and trace.c: token
 * counts >= 1, arrival times finite, >= 0, within WL_HORIZON_S and never
 * decreasing; an error is a negative status with a message; and
 * wl_trace_check agrees with the stream on the rows and on success.
 */
#include "fuzz.h"

#include <math.h>

#include "wl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_file_init();
    return 0;
}

/* Reads the stream to its end; the status of the last wl_trace_next. */
static int read_through(wl_trace *t, int64_t *rows, util_diag *d)
{
    wl_record rec;
    double last = 0;
    int rc;
    *rows = 0;
    while ((rc = wl_trace_next(t, &rec, d)) == 1) {
        FUZZ_CHECK(rec.prompt >= 1 && rec.output >= 1);
        FUZZ_CHECK(isfinite(rec.arrival_s) && rec.arrival_s >= 0);
#ifdef WL_HORIZON_S
        FUZZ_CHECK(rec.arrival_s <= WL_HORIZON_S);
#endif
        FUZZ_CHECK(!*rows || rec.arrival_s >= last);
        last = rec.arrival_s;
        ++*rows;
    }
    FUZZ_CHECK(rc == 0 || (rc < 0 && d->count > 0));
    return rc;
}

static void read_as(const char *path, wl_trace_format format)
{
    util_diag d;
    util_diag_init(&d);
    wl_trace *t;
    int64_t rows = -1;
    int rc = wl_trace_open(path, format, &t, &d);
    if (!rc) {
        rc = read_through(t, &rows, &d);
        wl_trace_close(t);
    }
    fuzz_show(&d, wl_trace_formats[format]);
    util_diag_clear(&d);
    wl_trace_info info;
    int crc = wl_trace_check(path, format, &info, &d);
    FUZZ_CHECK(crc == 0 || (crc < 0 && d.count > 0));
    if (!rc && rows > 0) FUZZ_CHECK(crc == 0 && info.rows == rows);
    if (!crc) FUZZ_CHECK(!rc && info.rows == rows && info.first_s <= info.last_s);
    util_diag_fini(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    static const wl_trace_format formats[] = {WL_TRACE_AUTO, WL_TRACE_CSV, WL_TRACE_AZURE,
                                              WL_TRACE_MOONCAKE};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        read_as(path, formats[i]);
    return 0;
}
