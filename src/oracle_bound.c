/* Bounds for the oracle's search (see oracle.c): a fractional lower bound,
 * Lagrangian lower bounds, and quick schedules that give upper bounds.
 * Pure code: no I/O, no clock, no globals. */
#include "oracle_impl.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int32_t ebb__oracle_new_node(struct ebb__oracle_solver *s, int32_t parent, int32_t parent_end,
                        int32_t start, size_t offer)
{
    if (!s->want_runs)
        return -1;
    if (s->n_nodes == s->cap_nodes) {
        size_t cap = s->cap_nodes ? 2 * s->cap_nodes : 1024;
        struct ebb__oracle_node *nn = NULL;
        if (cap < (size_t)INT32_MAX)
            nn = realloc(s->nodes, cap * sizeof(*nn));
        if (!nn) {
            s->nomem = 1;
            return -1;
        }
        s->nodes = nn;
        s->cap_nodes = cap;
    }
    s->nodes[s->n_nodes] = (struct ebb__oracle_node){parent, parent_end, start,
                                         (int32_t)offer};
    return (int32_t)s->n_nodes++;
}

/* The least cost of `need` more work from the steps still in the trees,
 * taking the cheapest segments first and the last one in part. */
double ebb__oracle_lp_query(const struct ebb__oracle_lp *lp, double need)
{
    size_t pos = 0;
    double w = 0;
    int64_t c = 0;
    for (size_t bit = lp->top; bit; bit >>= 1) {
        if (pos + bit <= lp->m && w + lp->fw[pos + bit] < need) {
            pos += bit;
            w += lp->fw[pos];
            c += lp->fc[pos];
        }
    }
    if (pos >= lp->m)
        return (double)c;
    return (double)c + (need - w) * lp->seg[pos].slope;
}

void ebb__oracle_lp_reset(struct ebb__oracle_lp *lp)
{
    memcpy(lp->fw, lp->fw0, (lp->m + 1) * sizeof(*lp->fw));
    memcpy(lp->fc, lp->fc0, (lp->m + 1) * sizeof(*lp->fc));
}

/* Takes step j's segments out of the trees once the sweep passes it. */
void ebb__oracle_lp_remove(struct ebb__oracle_lp *lp, int32_t j)
{
    for (int32_t x = lp->first[j]; x < lp->first[j + 1]; x++) {
        size_t r = (size_t)lp->order[x];
        double w = lp->seg[r].w;
        int64_t c = lp->seg[r].c;
        for (size_t i = r + 1; i <= lp->m; i += i & (~i + 1)) {
            lp->fw[i] -= w;
            lp->fc[i] -= c;
        }
    }
}

struct by_speed {
    double speed;
    size_t k;
};

static int cmp_speed(const void *x, const void *y)
{
    double a = ((const struct by_speed *)x)->speed;
    double b = ((const struct by_speed *)y)->speed;
    return (a > b) - (a < b);
}

static int cmp_slope(const void *x, const void *y)
{
    double a = ((const struct ebb__oracle_seg *)x)->slope;
    double b = ((const struct ebb__oracle_seg *)y)->slope;
    return (a > b) - (a < b);
}

/* The lower bound of the rest relaxes a schedule to: each later step gives
 * any work up to its best offer's, at a cost no less than the lower convex
 * hull of its offers' (work, cost) points and the origin; overheads are
 * ignored. The cheapest mix is fractional knapsack over the hull segments:
 * take them by increasing cost per work. All steps' segments are sorted
 * once; the sweep removes a step's segments when it passes it, and a query
 * walks the Fenwick trees in O(log m). */
int ebb__oracle_lp_build(struct ebb__oracle_solver *s)
{
    struct ebb__oracle_lp *lp = &s->lp;
    size_t cap = (size_t)s->n * s->k_n + 1;
    struct by_speed *sp = malloc(s->k_n * sizeof(*sp));
    double *hw = malloc((s->k_n + 1) * sizeof(*hw));
    int64_t *hc = malloc((s->k_n + 1) * sizeof(*hc));
    lp->seg = malloc(cap * sizeof(*lp->seg));
    int rc = EBB_ENOMEM;
    if (!sp || !hw || !hc || !lp->seg)
        goto out;
    for (size_t k = 0; k < s->k_n; k++)
        sp[k] = (struct by_speed){s->offers[k].speed, k};
    qsort(sp, s->k_n, sizeof(*sp), cmp_speed);
    size_t m = 0;
    for (int32_t j = 0; j < s->n; j++) {
        double len = (double)(s->t[j + 1] - s->t[j]);
        size_t h = 1;
        hw[0] = 0;
        hc[0] = 0;
        for (size_t i = 0; i < s->k_n; i++) {
            size_t k = sp[i].k;
            if (!ebb__oracle_usable(s, k, j, j + 1))
                continue;
            double w = len * sp[i].speed;
            int64_t c = ebb__oracle_step_cost(s, k, j);
            if (hw[h - 1] == w) {
                if (c >= hc[h - 1])
                    continue;
                h--;
            }
            while (h >= 2 && (hw[h - 1] - hw[h - 2]) * (double)(c - hc[h - 2]) -
                                     (double)(hc[h - 1] - hc[h - 2]) *
                                         (w - hw[h - 2]) <= 0)
                h--;
            hw[h] = w;
            hc[h] = c;
            h++;
        }
        for (size_t i = 1; i < h; i++) {
            double dw = hw[i] - hw[i - 1];
            int64_t dc = hc[i] - hc[i - 1];
            lp->seg[m++] = (struct ebb__oracle_seg){dw, (double)dc / dw, dc, j};
        }
    }
    qsort(lp->seg, m, sizeof(*lp->seg), cmp_slope);
    lp->m = m;
    lp->order = malloc((m + 1) * sizeof(*lp->order));
    lp->first = calloc((size_t)s->n + 2, sizeof(*lp->first));
    lp->fw = calloc(m + 1, sizeof(*lp->fw));
    lp->fc = calloc(m + 1, sizeof(*lp->fc));
    if (!lp->order || !lp->first || !lp->fw || !lp->fc)
        goto out;
    for (size_t r = 0; r < m; r++)
        lp->first[lp->seg[r].step + 1]++;
    for (int32_t j = 0; j < s->n; j++)
        lp->first[j + 1] += lp->first[j];
    for (size_t r = 0; r < m; r++) {
        /* first[] doubles as a cursor here and is restored below. */
        lp->order[lp->first[lp->seg[r].step]++] = (int32_t)r;
    }
    for (int32_t j = s->n; j > 0; j--)
        lp->first[j] = lp->first[j - 1];
    lp->first[0] = 0;
    for (size_t i = 1; i <= m; i++) {
        lp->fw[i] += lp->seg[i - 1].w;
        lp->fc[i] += lp->seg[i - 1].c;
        size_t up = i + (i & (~i + 1));
        if (up <= m) {
            lp->fw[up] += lp->fw[i];
            lp->fc[up] += lp->fc[i];
        }
    }
    lp->fw0 = malloc((m + 1) * sizeof(*lp->fw0));
    lp->fc0 = malloc((m + 1) * sizeof(*lp->fc0));
    if (!lp->fw0 || !lp->fc0)
        goto out;
    memcpy(lp->fw0, lp->fw, (m + 1) * sizeof(*lp->fw0));
    memcpy(lp->fc0, lp->fc, (m + 1) * sizeof(*lp->fc0));
    lp->top = 1;
    while (lp->top * 2 <= m)
        lp->top *= 2;
    if (m == 0)
        lp->top = 0;
    rc = 0;
out:
    free(sp);
    free(hw);
    free(hc);
    return rc;
}


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

/* Scratch for one multiplier: values and the work of the minimiser. */
struct lagtab {
    double *v, *u, *wv, *wu;
};

/* The Lagrangian relaxation drops the work constraint and charges lam per
 * unit of work instead: the least cost - lam * work from each state is a
 * plain shortest path backwards over (boundary, idle | running on k), with
 * no work dimension, O(steps * offers). For any continuation that does at
 * least `need` more work, cost >= value + lam * need. Unlike the fractional
 * bound it pays every restart's overhead, so it is tight enough to prune
 * most of the frontier. Ties prefer idling to starting and continuing to
 * stopping (fewer runs), and lag_primal retraces the same choices. */
static void lag_eval(const struct ebb__oracle_solver *s, double lam,
                     const struct lagtab *x)
{
    int32_t n = s->n;
    size_t n1 = (size_t)n + 1, kn = s->k_n;
    x->v[n] = 0;
    x->wv[n] = 0;
    for (size_t k = 0; k < kn; k++) {
        x->u[k * n1 + (size_t)n] = 0;
        x->wu[k * n1 + (size_t)n] = 0;
    }
    for (int32_t b = n - 1; b >= 0; b--) {
        double best = x->v[b + 1], bw = x->wv[b + 1];
        int32_t e = b + s->q + 1;
        if (e <= n && s->t[e] - s->t[b] > s->overhead) {
            for (size_t k = 0; k < kn; k++) {
                if (!ebb__oracle_usable(s, k, b, e))
                    continue;
                double w0 = ebb__oracle_run_work(s, k, b, e);
                double val = (double)ebb__oracle_run_cost(s, k, b, e) -
                             lam * w0 + x->u[k * n1 + (size_t)e];
                if (val < best) {
                    best = val;
                    bw = w0 + x->wu[k * n1 + (size_t)e];
                }
            }
        }
        x->v[b] = best;
        x->wv[b] = bw;
        double len = (double)(s->t[b + 1] - s->t[b]);
        for (size_t k = 0; k < kn; k++) {
            size_t i = k * n1 + (size_t)b;
            double uk = best, wk = bw;
            if (ebb__oracle_usable(s, k, b, b + 1)) {
                double w = len * s->offers[k].speed;
                double val = (double)ebb__oracle_step_cost(s, k, b) -
                             lam * w + x->u[i + 1];
                if (val <= uk) {
                    uk = val;
                    wk = w + x->wu[i + 1];
                }
            }
            x->u[i] = uk;
            x->wu[i] = wk;
        }
    }
}

/* Follows the minimiser of lag_eval forward from boundary 0, stopping the
 * run in progress as soon as the work is done, and lowers s->ub to its cost
 * when it finishes. Any path it follows is a valid schedule, so rounding
 * can only cost quality, not correctness. */
static void lag_primal(struct ebb__oracle_solver *s, double lam,
                       const struct lagtab *x)
{
    size_t n1 = (size_t)s->n + 1;
    double w = 0;
    int64_t c = 0;
    int32_t b = 0;
    while (b < s->n && w < s->wdone) {
        double best = x->v[b + 1];
        ptrdiff_t pick = -1;
        int32_t e = b + s->q + 1;
        if (e <= s->n && s->t[e] - s->t[b] > s->overhead) {
            for (size_t k = 0; k < s->k_n; k++) {
                if (!ebb__oracle_usable(s, k, b, e))
                    continue;
                double val = (double)ebb__oracle_run_cost(s, k, b, e) -
                             lam * ebb__oracle_run_work(s, k, b, e) +
                             x->u[k * n1 + (size_t)e];
                if (val < best) {
                    best = val;
                    pick = (ptrdiff_t)k;
                }
            }
        }
        if (pick < 0) {
            b++;
            continue;
        }
        size_t k = (size_t)pick;
        w += ebb__oracle_run_work(s, k, b, e);
        c += ebb__oracle_run_cost(s, k, b, e);
        b = e;
        while (w < s->wdone && b < s->n && ebb__oracle_usable(s, k, b, b + 1)) {
            double wj = (double)(s->t[b + 1] - s->t[b]) * s->offers[k].speed;
            double val = (double)ebb__oracle_step_cost(s, k, b) - lam * wj +
                         x->u[k * n1 + (size_t)b + 1];
            if (!(val <= x->v[b]))
                break;
            w += wj;
            c += ebb__oracle_step_cost(s, k, b);
            b++;
        }
    }
    if (w >= s->wdone && c < s->ub)
        s->ub = c;
}

/* Evaluates lam into x; returns the dual value at boundary 0 and the
 * minimiser's work in *work, trying its schedule as an upper bound. */
static double lag_try(struct ebb__oracle_solver *s, double lam,
                      const struct lagtab *x, double *work)
{
    lag_eval(s, lam, x);
    *work = x->wv[0];
    if (*work >= s->wdone)
        lag_primal(s, lam, x);
    return x->v[0] + lam * s->wdone;
}

int ebb__oracle_lag_build(struct ebb__oracle_solver *s)
{
    struct ebb__oracle_lag *g = &s->lag;
    size_t n1 = (size_t)s->n + 1, kn = s->k_n;
    struct lagtab x = {
        malloc(n1 * sizeof(double)), malloc(kn * n1 * sizeof(double)),
        malloc(n1 * sizeof(double)), malloc(kn * n1 * sizeof(double)),
    };
    int rc = EBB_ENOMEM;
    if (!x.v || !x.u || !x.wv || !x.wu)
        goto out;

    /* Above the dearest price per unit of work every productive step pays
     * for itself; overheads may need more, so grow until the work is done. */
    double top = 0;
    for (int32_t j = 0; j < s->n; j++)
        for (size_t k = 0; k < kn; k++)
            if (ebb__oracle_usable(s, k, j, j + 1)) {
                double w = (double)(s->t[j + 1] - s->t[j]) *
                           s->offers[k].speed;
                double p = (double)ebb__oracle_step_cost(s, k, j) / w;
                if (p > top)
                    top = p;
            }
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
    if (s->nomem)
        goto out;
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
    if (s->nomem)
        goto out;

    /* Keep a spread of multipliers: states later in the sweep, with less
     * work left, are best bounded by other prices than the start. */
    double mid = lo > 0 ? 0.5 * (lo + hi) : hi;
    static const double spread[EBB__ORACLE_NLAM] = {0.4, 0.7, 0.9, 1.0,
                                                    1.1, 1.5};
    g->nl = EBB__ORACLE_NLAM;
    g->v = malloc(g->nl * n1 * sizeof(double));
    g->u = malloc(g->nl * kn * n1 * sizeof(double));
    if (!g->v || !g->u)
        goto out;
    for (size_t i = 0; i < g->nl; i++) {
        g->lam[i] = mid * spread[i];
        if (spread[i] == 0.9)
            g->lam[i] = lo;
        if (spread[i] == 1.1)
            g->lam[i] = hi;
        lag_eval(s, g->lam[i], &x);
        memcpy(g->v + i * n1, x.v, n1 * sizeof(double));
        memcpy(g->u + i * kn * n1, x.u, kn * n1 * sizeof(double));
    }
    /* Rounding in the backward sums: each value is a sum of at most n + 2
     * terms bounded by the dearest schedule's cost and lam * most work. */
    double cmax = 0;
    for (int32_t j = 0; j < s->n; j++) {
        int64_t m = 0;
        for (size_t k = 0; k < kn; k++) {
            int64_t c = ebb__oracle_step_cost(s, k, j);
            if (c > m)
                m = c;
        }
        cmax += (double)m;
    }
    for (size_t i = 0; i < g->nl; i++)
        g->err[i] = 4.0 * DBL_EPSILON * (double)(s->n + 2) *
                        (cmax + g->lam[i] * s->smax[0]) + 1.0;
    rc = 0;
out:
    free(x.v);
    free(x.u);
    free(x.wv);
    free(x.wu);
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
                           : g->u[(i * s->k_n + (size_t)k) * n1 + (size_t)b];
        double lb = val + g->lam[i] * need - g->err[i];
        if (lb > best)
            best = lb;
    }
    return best;
}
