/* Bounds for the oracle's search (see oracle.c): Lagrangian lower bounds,
 * and quick schedules whose costs are upper bounds.
 * Pure code: no I/O, no clock, no globals. */
#include "report/oracle_impl.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* The best single run: from every start the shortest productive length on
 * an offer is the same (all steps but the last are full), so one pass. */
void ebb__oracle_single_run(struct ebb__oracle_solver *s)
{
    ebb_dur_ms step = s->t[1] - s->t[0];
    for (size_t k = 0; k < s->k_n; k++) {
        double need = (double)s->overhead + s->wdone / s->offers[k].speed;
        double len = ceil(need / (double)step);
        for (int32_t a = 0; a < s->n; a++) {
            int32_t b = len < (double)(s->n - a) ? a + (int32_t)len : s->n;
            if (ebb__oracle_run_work(s, k, a, b) < s->wdone && b < s->n)
                b++;
            if (ebb__oracle_run_work(s, k, a, b) < s->wdone)
                break;
            if (!ebb__oracle_usable(s, k, a, b))
                continue;
            int64_t c = ebb__oracle_run_cost(s, k, a, b);
            if (c < s->ub)
                s->ub = c;
        }
    }
}

/* Per (step b, offer k), b-major so that the inner loops stream: the cost
 * and work of step b (cost +inf when unusable), and of a run started at b
 * up to its first productive boundary b + q + 1 (+inf when none). */
struct lagin {
    double *sc, *sw, *wc, *ww;
    double *v, *u, *wv, *wu;  /* scratch values and minimisers' work */
};

static int lagin_init(const struct ebb__oracle_solver *s, struct lagin *x)
{
    size_t n1 = (size_t)s->n + 1, kn = s->k_n, cells = (size_t)s->n * kn;
    x->sc = malloc(cells * sizeof(double));
    x->sw = malloc(cells * sizeof(double));
    x->wc = malloc(cells * sizeof(double));
    x->ww = malloc(cells * sizeof(double));
    x->v = malloc(n1 * sizeof(double));
    x->wv = malloc(n1 * sizeof(double));
    x->u = malloc(n1 * kn * sizeof(double));
    x->wu = malloc(n1 * kn * sizeof(double));
    if (!x->sc || !x->sw || !x->wc || !x->ww || !x->v || !x->wv || !x->u ||
        !x->wu)
        return EBB_ENOMEM;
    for (int32_t b = 0; b < s->n; b++) {
        int32_t e = b + s->q + 1;
        int warm = e <= s->n && s->t[e] - s->t[b] > s->overhead;
        double len = (double)(s->t[b + 1] - s->t[b]);
        for (size_t k = 0; k < kn; k++) {
            size_t i = (size_t)b * kn + k;
            int ok = ebb__oracle_usable(s, k, b, b + 1);
            x->sw[i] = len * s->offers[k].speed;
            x->sc[i] = ok ? (double)ebb__oracle_step_cost(s, k, b) : INFINITY;
            ok = warm && ebb__oracle_usable(s, k, b, e);
            x->ww[i] = ok ? ebb__oracle_run_work(s, k, b, e) : 0.0;
            x->wc[i] = ok ? (double)ebb__oracle_run_cost(s, k, b, e)
                          : INFINITY;
        }
    }
    return 0;
}

static void lagin_free(struct lagin *x)
{
    free(x->sc);
    free(x->sw);
    free(x->wc);
    free(x->ww);
    free(x->v);
    free(x->wv);
    free(x->u);
    free(x->wu);
}

/* The Lagrangian relaxation drops the work constraint and charges lam per
 * unit of work instead: the least cost - lam * work from each state is a
 * plain shortest path backwards over (boundary, idle | running on k), with
 * no work dimension, O(steps * offers). For any continuation that does at
 * least `need` more work, cost >= value + lam * need. It pays every
 * restart's overhead, so it is tight enough to prune most of the frontier.
 * Values go to v and u (same layout as struct ebb__oracle_lag); with
 * `track`, the minimiser's work goes to x->wv and x->wu. Ties prefer idling
 * to starting and continuing to stopping (fewer runs); lag_primal retraces
 * the same choices. */
static void lag_eval(const struct ebb__oracle_solver *s, double lam,
                     const struct lagin *x, double *v, double *u, int track)
{
    int32_t n = s->n;
    size_t kn = s->k_n;
    v[n] = 0;
    x->wv[n] = 0;
    for (size_t k = 0; k < kn; k++) {
        u[(size_t)n * kn + k] = 0;
        x->wu[(size_t)n * kn + k] = 0;
    }
    for (int32_t b = n - 1; b >= 0; b--) {
        size_t row = (size_t)b * kn;
        int32_t e = b + s->q + 1;
        double best = v[b + 1], bw = x->wv[b + 1];
        if (e <= n) {
            const double *ue = u + (size_t)e * kn;
            for (size_t k = 0; k < kn; k++) {
                double val = x->wc[row + k] - lam * x->ww[row + k] + ue[k];
                if (val < best) {
                    best = val;
                    if (track)
                        bw = x->ww[row + k] + x->wu[(size_t)e * kn + k];
                }
            }
        }
        v[b] = best;
        const double *un = u + row + kn;
        double *ub = u + row;
        for (size_t k = 0; k < kn; k++) {
            double val = x->sc[row + k] - lam * x->sw[row + k] + un[k];
            ub[k] = val <= best ? val : best;
        }
        if (track) {
            x->wv[b] = bw;
            for (size_t k = 0; k < kn; k++) {
                double val = x->sc[row + k] - lam * x->sw[row + k] + un[k];
                x->wu[row + k] = val <= best ? x->sw[row + k] +
                                                   x->wu[row + kn + k]
                                             : bw;
            }
        }
    }
}

/* Follows the minimiser of lag_eval forward from boundary 0, stopping the
 * run in progress as soon as the work is done, and lowers s->ub to its cost
 * when it finishes. Any path it follows is a valid schedule (unusable steps
 * cost +inf), so rounding can only cost quality, not correctness. */
static void lag_primal(struct ebb__oracle_solver *s, double lam,
                       const struct lagin *x)
{
    size_t kn = s->k_n;
    double w = 0;
    int64_t c = 0;
    int32_t b = 0;
    while (b < s->n && w < s->wdone) {
        size_t row = (size_t)b * kn;
        int32_t e = b + s->q + 1;
        double best = x->v[b + 1];
        ptrdiff_t pick = -1;
        for (size_t k = 0; e <= s->n && k < kn; k++) {
            double val = x->wc[row + k] - lam * x->ww[row + k] +
                         x->u[(size_t)e * kn + k];
            if (val < best) {
                best = val;
                pick = (ptrdiff_t)k;
            }
        }
        if (pick < 0 || !isfinite(best)) {
            b++;
            continue;
        }
        size_t k = (size_t)pick;
        w += x->ww[row + k];
        c += ebb__oracle_run_cost(s, k, b, e);
        b = e;
        while (w < s->wdone && b < s->n) {
            size_t i = (size_t)b * kn + k;
            double val = x->sc[i] - lam * x->sw[i] + x->u[i + kn];
            if (!isfinite(x->sc[i]) || !(val <= x->v[b]))
                break;
            w += x->sw[i];
            c += ebb__oracle_step_cost(s, k, b);
            b++;
        }
    }
    if (w >= s->wdone && c < s->ub)
        s->ub = c;
}

/* Evaluates lam into the scratch; returns the dual value at boundary 0 and
 * the minimiser's work in *work, trying its schedule as an upper bound. */
static double lag_try(struct ebb__oracle_solver *s, double lam,
                      const struct lagin *x, double *work)
{
    lag_eval(s, lam, x, x->v, x->u, 1);
    *work = x->wv[0];
    if (*work >= s->wdone)
        lag_primal(s, lam, x);
    return x->v[0] + lam * s->wdone;
}

int ebb__oracle_lag_build(struct ebb__oracle_solver *s)
{
    struct ebb__oracle_lag *g = &s->lag;
    size_t n1 = (size_t)s->n + 1, kn = s->k_n;
    struct lagin x = {0};
    int rc = EBB_ENOMEM;
    if (lagin_init(s, &x))
        goto out;

    /* Above the dearest price per unit of work every productive step pays
     * for itself; overheads may need more, so grow until the work is done. */
    double top = 0;
    for (size_t i = 0; i < (size_t)s->n * kn; i++)
        if (isfinite(x.sc[i]) && x.sc[i] / x.sw[i] > top)
            top = x.sc[i] / x.sw[i];
    double lo = 0, dlo = 0, glo = s->wdone;
    double hi = 2 * top + 1, whi = 0;
    double dhi = lag_try(s, hi, &x, &whi);
    for (int i = 0; i < 40 && whi < s->wdone; i++) {
        lo = hi;
        dlo = dhi;
        glo = s->wdone - whi;
        hi *= 4;
        dhi = lag_try(s, hi, &x, &whi);
    }
    double ghi = s->wdone - whi;
    /* The dual is concave and piecewise linear: cut with the two supporting
     * lines until they meet the function. */
    for (int i = 0; i < 12 && whi >= s->wdone && glo > 0; i++) {
        double mid = (dhi - dlo + glo * lo - ghi * hi) / (glo - ghi);
        if (!(mid > lo && mid < hi))
            break;
        double wm;
        double dm = lag_try(s, mid, &x, &wm);
        double line = dlo + glo * (mid - lo);
        if (wm >= s->wdone) {
            hi = mid;
            dhi = dm;
            ghi = s->wdone - wm;
        } else {
            lo = mid;
            dlo = dm;
            glo = s->wdone - wm;
        }
        if (dm >= line - 1e-9 * fabs(line))
            break;
    }

    /* Keep a spread of multipliers: states later in the sweep, with less
     * work left, are best bounded by other prices than the start. */
    static const double spread[EBB__ORACLE_NLAM] = {0, 0, 0.7, 1.3, 0.4, 2};
    g->nl = EBB__ORACLE_NLAM;
    g->v = malloc(g->nl * n1 * sizeof(double));
    g->u = malloc(g->nl * n1 * kn * sizeof(double));
    if (!g->v || !g->u)
        goto out;
    for (size_t i = 0; i < g->nl; i++) {
        g->lam[i] = spread[i] * (lo > 0 ? lo : hi);
        if (i == 0)
            g->lam[i] = lo;
        if (i == 1)
            g->lam[i] = hi;
        lag_eval(s, g->lam[i], &x, g->v + i * n1, g->u + i * n1 * kn, 0);
    }
    /* Rounding in the backward sums: each value is a sum of at most n + 2
     * terms bounded by the dearest schedule's cost and lam * most work. */
    double cmax = 0;
    for (int32_t j = 0; j < s->n; j++) {
        double m = 0;
        for (size_t k = 0; k < kn; k++) {
            double c = x.sc[(size_t)j * kn + k];
            if (isfinite(c) && c > m)
                m = c;
        }
        cmax += m;
    }
    for (size_t i = 0; i < g->nl; i++)
        g->err[i] = 4.0 * DBL_EPSILON * (double)(s->n + 2) *
                        (cmax + g->lam[i] * s->smax[0]) + 1.0;
    rc = 0;
out:
    lagin_free(&x);
    return rc;
}

double ebb__oracle_lag_bound(const struct ebb__oracle_solver *s, int32_t b,
                             ptrdiff_t k, double need)
{
    const struct ebb__oracle_lag *g = &s->lag;
    size_t n1 = (size_t)s->n + 1;
    double best = 0;
    for (size_t i = 0; i < g->nl; i++) {
        double val = k < 0 ? g->v[i * n1 + (size_t)b]
                           : g->u[(i * n1 + (size_t)b) * s->k_n + (size_t)k];
        double lb = val + g->lam[i] * need - g->err[i];
        if (lb > best)
            best = lb;
    }
    return best;
}
