/* Order statistics for the price forecast (forecast.c): quantiles of
 * replayed errors and the weighted median that fits its weights. */
#include <stdlib.h>

#include "market/forecast.h"
#include "market/forecast_impl.h"

static void swapd(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* The k-th smallest of v[0..n) (0-based), partially reordering v so that
 * v[0..k) <= v[k] <= v[k+1..n). Quickselect with a median-of-three pivot
 * (the classic "select" of Numerical Recipes): O(n) expected, and runs of
 * equal values (common: most replay errors of a flat price are 0) stop the
 * scans early instead of degrading them. */
static double select_kth(double *v, size_t n, size_t k)
{
    size_t l = 0, ir = n - 1;
    for (;;) {
        if (ir <= l + 1) {
            if (ir == l + 1 && v[ir] < v[l])
                swapd(&v[l], &v[ir]);
            return v[k];
        }
        size_t mid = l + (ir - l) / 2;
        swapd(&v[mid], &v[l + 1]);
        if (v[l] > v[ir])
            swapd(&v[l], &v[ir]);
        if (v[l + 1] > v[ir])
            swapd(&v[l + 1], &v[ir]);
        if (v[l] > v[l + 1])
            swapd(&v[l], &v[l + 1]);
        size_t i = l + 1, j = ir;
        double pivot = v[l + 1];
        for (;;) {
            do
                i++;
            while (v[i] < pivot);
            do
                j--;
            while (v[j] > pivot);
            if (j < i)
                break;
            swapd(&v[i], &v[j]);
        }
        v[l + 1] = v[j];
        v[j] = pivot;
        if (j >= k)
            ir = j - 1;
        if (j <= k)
            l = i;
    }
}

/* See forecast_impl.h. Quantile q (0..1) of v[0..n), linear between order statistics (the
 * usual "type 7"). Reorders v. n > 0. */
double ebb__fc_quantile(double *v, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t k = (size_t)pos;
    double frac = pos - (double)k;
    double a = select_kth(v, n, k);
    if (frac <= 0.0 || k + 1 >= n)
        return a;
    /* After selection everything above k is >= a: the next order
     * statistic is the minimum of that part. */
    double b = v[k + 1];
    for (size_t i = k + 2; i < n; i++)
        if (v[i] < b)
            b = v[i];
    return a + frac * (b - a);
}

static int by_value(const void *a, const void *b)
{
    const struct ebb__fc_wpoint *x = a, *y = b;
    return (x->v > y->v) - (x->v < y->v);
}

double ebb__fc_weighted_median(struct ebb__fc_wpoint *p, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(p, n, sizeof *p, by_value);
    double total = 0.0;
    for (size_t i = 0; i < n; i++)
        total += p[i].w;
    /* The first value whose cumulative weight reaches half the total: the
     * lower weighted median, which minimises sum w_i |v_i - m|. */
    double run = 0.0;
    for (size_t i = 0; i < n; i++) {
        run += p[i].w;
        if (run >= 0.5 * total)
            return p[i].v;
    }
    return p[n - 1].v;
}
