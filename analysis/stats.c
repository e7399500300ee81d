/*
 * stats.c: summaries of one metric.  Percentiles interpolate linearly between
 * order statistics -- GSL's gsl_stats_quantile_from_sorted_data, which is
 * numpy's default -- so the numbers match what vLLM's and GenAI-Perf's
 * benchmark scripts print for the same requests.
 */
#include "an.h"

#include <math.h>

#include <stdlib.h>

#include <gsl/gsl_statistics_double.h>

double an_quantile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0) return NAN;
    return gsl_stats_quantile_from_sorted_data(sorted, 1, n, q);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void an_stats_compute(double *v, size_t n, an_stats *out)
{
    out->n = (int64_t)n;
    if (n == 0) {
        out->mean = out->p50 = out->p90 = out->p95 = out->p99 = out->p999 = out->max = NAN;
        return;
    }
    qsort(v, n, sizeof *v, cmp_double); /* glibc's merge sort: twice GSL's heapsort here */
    out->mean = gsl_stats_mean(v, 1, n);
    out->p50 = an_quantile_sorted(v, n, 0.50);
    out->p90 = an_quantile_sorted(v, n, 0.90);
    out->p95 = an_quantile_sorted(v, n, 0.95);
    out->p99 = an_quantile_sorted(v, n, 0.99);
    out->p999 = an_quantile_sorted(v, n, 0.999);
    out->max = v[n - 1];
}

/* Jain, Chiu and Hawe, "A Quantitative Measure of Fairness and
 * Discrimination for Resource Allocation in Shared Computer Systems" (DEC
 * TR-301, 1984), eq. 1. */
double an_jain_index(const double *x, size_t n)
{
    double sum = 0, squares = 0;
    for (size_t i = 0; i < n; i++) {
        sum += x[i];
        squares += x[i] * x[i];
    }
    return n > 0 && squares > 0 ? sum * sum / ((double)n * squares) : NAN;
}
