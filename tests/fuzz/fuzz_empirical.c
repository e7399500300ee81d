/*
 * fuzz_empirical.c: bytes as the trace an empirical length distribution is
 * taken from.  The input is written to the harness's temporary file and
 * loaded with wl_empirical_load as each format and each column (prompt,
 * output).
 *
 * The table is checked against the trace read row by row: it loads exactly
 * when the trace reads to its end with at least one row, its mean is the
 * column's mean, and every draw is one of the column's values (within its
 * minimum and maximum).
 */
#include "fuzz.h"

#include <math.h>

#include "wl.h"

#define DRAWS 16

static gsl_rng *rng;

static void drop_rng(void)
{
    gsl_rng_free(rng);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_file_init();
    rng = util_rng_stream(1, 0);
    atexit(drop_rng);
    return 0;
}

typedef struct column {
    int64_t rows;
    double sum, min, max;
} column;

/* The column read row by row, as wl_empirical_load reads it (its hash
 * ids are not read: a distribution of lengths has no use for them); 0 when
 * the whole trace reads. */
static int read_column(const char *path, wl_trace_format format, bool output, column *c)
{
    *c = (column){0, 0, INFINITY, -INFINITY};
    util_diag d;
    util_diag_init(&d);
    wl_trace *t;
    int rc = wl_trace_open(path, format, &t, &d);
    if (!rc) {
        wl_trace_set_block_tokens(t, 0); /* as the loader reads: lengths only, hash ids past */
        wl_record rec;
        while ((rc = wl_trace_next(t, &rec, &d)) == 1) {
            double v = output ? rec.output : rec.prompt;
            c->rows++;
            c->sum += v;
            c->min = fmin(c->min, v);
            c->max = fmax(c->max, v);
        }
        wl_trace_close(t);
    }
    util_diag_fini(&d);
    return rc;
}

static void load_as(const char *path, wl_trace_format format, bool output)
{
    column c;
    int trc = read_column(path, format, output, &c);
    util_diag d;
    util_diag_init(&d);
    wl_empirical *e;
    int rc = wl_empirical_load(path, format, output, &e, &d);
    fuzz_show(&d, wl_trace_formats[format]);
    FUZZ_CHECK(rc == 0 || (rc < 0 && d.count > 0));
    FUZZ_CHECK((rc == 0) == (trc == 0 && c.rows > 0));
    if (!rc) {
        double mean = wl_empirical_mean(e);
        FUZZ_CHECK(fabs(mean - c.sum / (double)c.rows) <= 1e-9 * c.max);
        for (int i = 0; i < DRAWS; i++) {
            double v = wl_empirical_sample(e, rng);
            FUZZ_CHECK(v >= c.min && v <= c.max && v == floor(v));
        }
    }
    wl_empirical_destroy(e);
    util_diag_fini(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    static const wl_trace_format formats[] = {WL_TRACE_AUTO, WL_TRACE_CSV, WL_TRACE_AZURE,
                                              WL_TRACE_MOONCAKE};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        load_as(path, formats[i], false);
        load_as(path, formats[i], true);
    }
    return 0;
}
