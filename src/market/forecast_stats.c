/* Order statistics for the price forecast (forecast.c): quantiles of
 * replayed errors and the weighted median that fits its weights. */

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

static void swapw(struct ebb__fc_wpoint *a, struct ebb__fc_wpoint *b)
{
    struct ebb__fc_wpoint t = *a;
    *a = *b;
    *b = t;
}

/* The lower weighted median by selection, not sorting: O(n) expected
 * (the fit asks for it six times per candidate drift). Each round splits
 * p[lo..hi) around a pivot value into < pivot, = pivot and > pivot
 * (three-way, so runs of equal values, common in step prices, end the
 * search at once) and keeps the part where the cumulative weight, in
 * value order, first reaches half the total. "Reaches" allows a relative
 * 1e-9 for rounding: exact ties are common (the prior of one origin's
 * weight against that one origin's points), and the sums come in an
 * order that depends on the pivots, so without it a tie would fall
 * either way by rounding; with it a tie gives the lower value. */
double ebb__fc_weighted_median(struct ebb__fc_wpoint *p, size_t n)
{
    if (n == 0)
        return 0.0;
    double total = 0.0;
    for (size_t i = 0; i < n; i++)
        total += p[i].w;
    double half = 0.5 * total * (1.0 - 1e-9);
    double below = 0.0; /* the weight left of p[lo] */
    size_t lo = 0, hi = n; /* the answer lies in p[lo..hi) */
    while (hi - lo > 1) {
        double a = p[lo].v, b = p[lo + (hi - lo) / 2].v, c = p[hi - 1].v;
        double pivot = a < b ? (b < c ? b : (a < c ? c : a))
                             : (a < c ? a : (b < c ? c : b));
        /* p[lo..lt) < pivot, p[lt..i) == pivot, p[gt..hi) > pivot. */
        size_t lt = lo, i = lo, gt = hi;
        double w_lt = 0.0, w_eq = 0.0;
        while (i < gt) {
            if (p[i].v < pivot) {
                w_lt += p[i].w;
                swapw(&p[lt++], &p[i++]);
            } else if (p[i].v > pivot) {
                swapw(&p[i], &p[--gt]);
            } else {
                w_eq += p[i].w;
                i++;
            }
        }
        if (lt > lo && below + w_lt >= half) {
            hi = lt;
        } else if (below + w_lt + w_eq >= half || gt == hi) {
            return pivot;
        } else {
            below += w_lt + w_eq;
            lo = gt;
        }
    }
    return p[lo].v;
}
