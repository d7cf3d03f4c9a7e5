/* The hindsight oracle: a forward dynamic programme over the time grid whose
 * states are Pareto frontiers of (work done, cost paid).
 *
 * At every grid boundary b we keep
 * - F(b): the frontier of schedules that are idle at b (or whose last run
 *   ended at b), and
 * - P_k(b): for each offer k, the frontier of schedules whose current run on
 *   k is past its overhead and still going at b.
 * A run on k started at a becomes productive at a + q + 1 (q = overhead /
 * step, all steps but the last being full), so P_k(b) is P_k(b-1) advanced
 * by one step plus F(b-q-1) advanced by the whole warm-up; F(b) is F(b-1)
 * merged with every P_k(b). F of the last q+1 boundaries is kept in a ring.
 * A state is a pair (work, cost); one with less work and no less cost is
 * dominated and dropped. Nothing else is approximated, so the result is the
 * exact optimum over grid schedules.
 *
 * Exact pruning keeps the frontiers small:
 * - a state that reaches the work is finished: stopping is best because
 *   prices are not negative, so it becomes a candidate answer and leaves;
 * - a state that cannot finish even if every later step ran the fastest
 *   usable offer is dropped (suffix sums of the best work per step);
 * - a state whose cost plus a lower bound of the rest (remaining work times
 *   the cheapest later price per unit of work) reaches the best answer so
 *   far is dropped. The best single run, found in O(steps * offers) first,
 *   gives that bound from the start.
 * Back-pointers (one node per surviving run start) rebuild the schedule.
 */
#include "oracle.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack: a job is done when work >= W * (1 - EPS_REL). */
#define EPS_REL 1e-9

struct ent {
    double w;      /* work done, reference ms */
    int64_t c;     /* cost, micro-USD * seconds / hour (exact) */
    int32_t node;  /* run node of the current / last run, -1 none */
    int32_t end;   /* F only: where the last run ended (grid index) */
};

struct node {
    int32_t parent;      /* node of the previous run, -1 none */
    int32_t parent_end;  /* grid index where the previous run ended */
    int32_t start;       /* grid index where this run starts */
    int32_t offer;
};

struct vec {
    struct ent *v;
    size_t n, cap;
};

/* The fractional lower bound (see lp_build). Segments of every step's
 * lower hull, sorted by cost per work; Fenwick trees over that order hold
 * the work and cost of the segments of the steps not yet passed. */
struct seg {
    double w, slope;
    int64_t c;
    int32_t step;
};

struct bound {
    struct seg *seg;  /* m segments, sorted by slope */
    int32_t *order;   /* by step: the sorted positions of each step's segs */
    int32_t *first;   /* n + 1 offsets into order */
    double *fw;       /* Fenwick, 1-based: work */
    int64_t *fc;      /* Fenwick, 1-based: cost */
    size_t m, top;    /* top: highest power of two <= m */
};

struct solver {
    const struct ebb__oracle_offer *offers;
    size_t k_n;
    int32_t n;           /* steps; boundaries 0..n */
    int32_t q;           /* full steps inside the overhead */
    ebb_dur_ms overhead;
    ebb_time_ms *t;      /* n + 1 boundaries */
    int64_t *pc;         /* k_n * (n + 1) prefix sums of step costs */
    int32_t *bad;        /* k_n * (n + 1) prefix counts of unusable steps */
    double *smax;        /* n + 1: best work obtainable from b on */
    struct bound lp;     /* lower bound of the cost of the rest */
    double wgoal, wdone; /* W and the completion threshold */
    int want_runs;
    struct node *nodes;
    size_t n_nodes, cap_nodes;
    int64_t best;
    int32_t best_node, best_end;
    int nomem;
};

static int64_t step_cost(const struct solver *s, size_t k, int32_t j)
{
    const int64_t *p = s->pc + k * (size_t)(s->n + 1);
    return p[j + 1] - p[j];
}

static int usable(const struct solver *s, size_t k, int32_t a, int32_t b)
{
    const int32_t *p = s->bad + k * (size_t)(s->n + 1);
    return p[b] == p[a];
}

static int vec_reserve(struct vec *v, size_t n)
{
    if (n <= v->cap)
        return 0;
    size_t cap = v->cap ? v->cap : 16;
    while (cap < n)
        cap *= 2;
    struct ent *nv = realloc(v->v, cap * sizeof(*nv));
    if (!nv)
        return EBB_ENOMEM;
    v->v = nv;
    v->cap = cap;
    return 0;
}

static int32_t new_node(struct solver *s, int32_t parent, int32_t parent_end,
                        int32_t start, size_t offer)
{
    if (!s->want_runs)
        return -1;
    if (s->n_nodes == s->cap_nodes) {
        size_t cap = s->cap_nodes ? 2 * s->cap_nodes : 1024;
        struct node *nn = NULL;
        if (cap < (size_t)INT32_MAX)
            nn = realloc(s->nodes, cap * sizeof(*nn));
        if (!nn) {
            s->nomem = 1;
            return -1;
        }
        s->nodes = nn;
        s->cap_nodes = cap;
    }
    s->nodes[s->n_nodes] = (struct node){parent, parent_end, start,
                                         (int32_t)offer};
    return (int32_t)s->n_nodes++;
}

/* One input of a merge: a frontier (work descending) shifted by (dw, dc).
 * When `start_offer` >= 0 its states begin a run at `start`, and a survivor
 * gets a fresh node whose parent is the state's own (node, end). */
struct src {
    const struct ent *v;
    size_t n;
    double dw;
    int64_t dc;
    int32_t start_offer;
    int32_t start;
    int32_t end;  /* >= 0: the states' runs stop here (they enter F) */
};

/* The least cost of `need` more work from the steps still in the trees,
 * taking the cheapest segments first and the last one in part. */
static double lp_query(const struct bound *lp, double need)
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

/* Takes step j's segments out of the trees once the sweep passes it. */
static void lp_remove(struct bound *lp, int32_t j)
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

/* True when (w, c) at boundary b cannot lead to an answer below best. */
static int hopeless(const struct solver *s, int32_t b, double w, int64_t c)
{
    if (c >= s->best)
        return 1;
    double need = s->wdone - w;
    if (w + s->smax[b] * (1.0 + 1e-12) < s->wdone)
        return 1;
    /* Margins keep the bound below the true rest despite rounding. */
    double lb = lp_query(&s->lp, need) * (1.0 - 1e-9) - 1.0;
    return lb > 0 && lb >= (double)(s->best - c);
}

/* Merges x and y (each work-descending) into out, dropping dominated,
 * finished and hopeless states. Finished states update the best answer with
 * their run ending at b. */
static int merge(struct solver *s, int32_t b, const struct src *x,
                 const struct src *y, struct vec *out)
{
    if (vec_reserve(out, x->n + y->n))
        return EBB_ENOMEM;
    size_t i = 0, j = 0, m = 0;
    int64_t cmin = INT64_MAX;
    while (i < x->n || j < y->n) {
        const struct src *from;
        const struct ent *e;
        if (i < x->n && j < y->n) {
            double wx = x->v[i].w + x->dw, wy = y->v[j].w + y->dw;
            int64_t cx = x->v[i].c + x->dc, cy = y->v[j].c + y->dc;
            if (wx > wy || (wx == wy && cx <= cy))
                from = x;
            else
                from = y;
        } else {
            from = i < x->n ? x : y;
        }
        if (from == x)
            e = &x->v[i++];
        else
            e = &y->v[j++];
        double w = e->w + from->dw;
        int64_t c = e->c + from->dc;
        if (w >= s->wdone) {
            if (c < s->best) {
                int32_t nd = e->node;
                if (from->start_offer >= 0)
                    nd = new_node(s, e->node, e->end, from->start,
                                  (size_t)from->start_offer);
                s->best = c;
                s->best_node = nd;
                s->best_end = b;
            }
            continue;
        }
        if (c >= cmin)
            continue;
        if (w + s->smax[b] * (1.0 + 1e-12) < s->wdone)
            break; /* everything after has less work */
        if (hopeless(s, b, w, c))
            continue;
        cmin = c;
        struct ent ne = {w, c, e->node, from->end >= 0 ? from->end : e->end};
        if (from->start_offer >= 0)
            ne.node = new_node(s, e->node, e->end, from->start,
                               (size_t)from->start_offer);
        out->v[m++] = ne;
    }
    out->n = m;
    return s->nomem ? EBB_ENOMEM : 0;
}

/* Fills step costs and usability of offer k over the grid. Price pieces
 * and availability changes are walked once, in step with the grid. */
static void fill_offer(struct solver *s, size_t k)
{
    const struct ebb__oracle_offer *o = &s->offers[k];
    int64_t *pc = s->pc + k * (size_t)(s->n + 1);
    int32_t *bad = s->bad + k * (size_t)(s->n + 1);
    size_t pi = 0, ai = 0;
    pc[0] = 0;
    bad[0] = 0;
    for (int32_t j = 0; j < s->n; j++) {
        ebb_time_ms a = s->t[j], b = s->t[j + 1];
        int ok = a >= o->price_at[0];
        if (ok && o->avail) {
            while (ai < o->n_avail && o->avail_at[ai] <= a)
                ai++;
            if (ai > 0 && !o->avail[ai - 1])
                ok = 0;
            for (size_t x = ai; ok && x < o->n_avail && o->avail_at[x] < b;
                 x++)
                if (!o->avail[x])
                    ok = 0;
        }
        int64_t cost = 0;
        if (ok) {
            int64_t nsec = (b - a + 999) / 1000;
            while (pi + 1 < o->n_price && o->price_at[pi + 1] <= a)
                pi++;
            int64_t lo = 0;
            for (size_t p = pi; lo < nsec; p++) {
                int64_t hi = nsec;
                if (p + 1 < o->n_price) {
                    int64_t e = o->price_at[p + 1] - a;
                    int64_t h = (e + 999) / 1000; /* e > 0 here */
                    if (h < hi)
                        hi = h;
                }
                cost += o->price[p] * (hi - lo);
                lo = hi;
            }
        }
        pc[j + 1] = pc[j] + cost;
        bad[j + 1] = bad[j] + !ok;
    }
}

static int check_input(const struct ebb__oracle_job *job,
                       const struct ebb__oracle_offer *offers, size_t n_offers)
{
    if (!job || (n_offers && !offers))
        return EBB_EINVAL;
    if (job->step <= 0 || job->step % 1000 || job->overhead < 0 ||
        job->deadline < job->release)
        return EBB_EINVAL;
    ebb_dur_ms window = job->deadline - job->release;
    if (window / job->step >= INT32_MAX / 4)
        return EBB_EINVAL;
    int64_t secs = window / 1000 + 1;
    for (size_t k = 0; k < n_offers; k++) {
        const struct ebb__oracle_offer *o = &offers[k];
        if (!(o->speed > 0) || !isfinite(o->speed) || o->n_price == 0 ||
            !o->price_at || !o->price)
            return EBB_EINVAL;
        for (size_t i = 0; i < o->n_price; i++) {
            if (o->price[i] < 0 || o->price[i] > INT64_MAX / 4 / secs)
                return EBB_EINVAL;
            if (i && o->price_at[i] < o->price_at[i - 1])
                return EBB_EINVAL;
        }
        if (o->avail) {
            if (!o->avail_at)
                return EBB_EINVAL;
            for (size_t i = 0; i < o->n_avail; i++) {
                if (o->avail[i] != 0 && o->avail[i] != 1)
                    return EBB_EINVAL;
                if (i && o->avail_at[i] < o->avail_at[i - 1])
                    return EBB_EINVAL;
            }
        }
    }
    return 0;
}

/* Work of a run [a, b) on offer k, 0 when it never passes its overhead. */
static double run_work(const struct solver *s, size_t k, int32_t a, int32_t b)
{
    ebb_dur_ms d = s->t[b] - s->t[a] - s->overhead;
    return d > 0 ? (double)d * s->offers[k].speed : 0.0;
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
    double a = ((const struct seg *)x)->slope;
    double b = ((const struct seg *)y)->slope;
    return (a > b) - (a < b);
}

/* The lower bound of the rest relaxes a schedule to: each later step gives
 * any work up to its best offer's, at a cost no less than the lower convex
 * hull of its offers' (work, cost) points and the origin; overheads are
 * ignored. The cheapest mix is fractional knapsack over the hull segments:
 * take them by increasing cost per work. All steps' segments are sorted
 * once; the sweep removes a step's segments when it passes it, and a query
 * walks the Fenwick trees in O(log m). */
static int lp_build(struct solver *s)
{
    struct bound *lp = &s->lp;
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
            if (!usable(s, k, j, j + 1))
                continue;
            double w = len * sp[i].speed;
            int64_t c = step_cost(s, k, j);
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
            lp->seg[m++] = (struct seg){dw, (double)dc / dw, dc, j};
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

/* Grid, step costs, bounds; then the best single run as a first answer. */
static int prepare(struct solver *s, const struct ebb__oracle_job *job)
{
    ebb_dur_ms window = job->deadline - job->release;
    s->n = (int32_t)((window + job->step - 1) / job->step);
    s->q = (int32_t)(job->overhead / job->step);
    size_t n1 = (size_t)s->n + 1;
    s->t = malloc(n1 * sizeof(*s->t));
    s->pc = malloc(s->k_n * n1 * sizeof(*s->pc));
    s->bad = malloc(s->k_n * n1 * sizeof(*s->bad));
    s->smax = malloc(n1 * sizeof(*s->smax));
    if (!s->t || !s->pc || !s->bad || !s->smax)
        return EBB_ENOMEM;
    for (int32_t j = 0; j < s->n; j++)
        s->t[j] = job->release + (ebb_time_ms)j * job->step;
    s->t[s->n] = job->deadline;
    for (size_t k = 0; k < s->k_n; k++)
        fill_offer(s, k);

    s->smax[s->n] = 0;
    for (int32_t j = s->n - 1; j >= 0; j--) {
        double len = (double)(s->t[j + 1] - s->t[j]), wbest = 0;
        for (size_t k = 0; k < s->k_n; k++) {
            double w = len * s->offers[k].speed;
            if (usable(s, k, j, j + 1) && w > wbest)
                wbest = w;
        }
        s->smax[j] = s->smax[j + 1] + wbest;
    }
    if (lp_build(s))
        return EBB_ENOMEM;

    /* Best single run: on each offer the shortest productive length is the
     * same from every start (full steps), so one pass per offer. */
    for (size_t k = 0; k < s->k_n; k++) {
        double need = (double)job->overhead +
                      s->wdone / s->offers[k].speed;
        int64_t len = (int64_t)ceil(need / (double)job->step);
        for (int32_t a = 0; a < s->n; a++) {
            int32_t b = len < s->n - a ? a + (int32_t)len : s->n;
            if (run_work(s, k, a, b) < s->wdone && b < s->n)
                b++;
            if (run_work(s, k, a, b) < s->wdone)
                break;
            if (!usable(s, k, a, b))
                continue;
            int64_t *p = s->pc + k * n1;
            int64_t c = p[b] - p[a];
            if (c < s->best) {
                s->best = c;
                s->best_node = new_node(s, -1, 0, a, k);
                s->best_end = b;
                if (s->nomem)
                    return EBB_ENOMEM;
            }
        }
    }
    return 0;
}

/* The forward pass over boundaries 1..n. */
static int sweep(struct solver *s)
{
    int32_t ring = s->q + 1;
    int rc = EBB_ENOMEM;
    struct vec *hist = calloc((size_t)ring, sizeof(*hist));
    struct vec *pk = calloc(s->k_n, sizeof(*pk));
    struct vec *pn = calloc(s->k_n, sizeof(*pn));
    struct vec fa = {0}, fb = {0};
    if (!hist || !pk || !pn || vec_reserve(&hist[0], 1))
        goto out;
    hist[0].v[0] = (struct ent){0.0, 0, -1, 0};
    hist[0].n = 1;

    for (int32_t b = 1; b <= s->n; b++) {
        const struct vec *fprev = &hist[(b - 1) % ring];
        const struct vec *fstart = &hist[b % ring];
        int32_t a = b - s->q - 1;
        double len = (double)(s->t[b] - s->t[b - 1]);
        lp_remove(&s->lp, b - 1);
        for (size_t k = 0; k < s->k_n; k++) {
            struct src cont = {pk[k].v, pk[k].n, len * s->offers[k].speed,
                               0, -1, 0, -1};
            struct src start = {NULL, 0, 0.0, 0, (int32_t)k, a, -1};
            if (usable(s, k, b - 1, b))
                cont.dc = step_cost(s, k, b - 1);
            else
                cont.n = 0;
            if (a >= 0 && usable(s, k, a, b) &&
                s->t[b] - s->t[a] > s->overhead) {
                const int64_t *p = s->pc + k * (size_t)(s->n + 1);
                start.v = fstart->v;
                start.n = fstart->n;
                start.dw = run_work(s, k, a, b);
                start.dc = p[b] - p[a];
            }
            if (merge(s, b, &cont, &start, &pn[k]))
                goto out;
            struct vec tmp = pk[k];
            pk[k] = pn[k];
            pn[k] = tmp;
        }
        /* F(b): idle states carried from b-1, then every running state
         * stopping at b. */
        struct src idle = {fprev->v, fprev->n, 0.0, 0, -1, 0, -1};
        struct src none = {NULL, 0, 0.0, 0, -1, 0, -1};
        if (merge(s, b, &idle, &none, &fa))
            goto out;
        for (size_t k = 0; k < s->k_n; k++) {
            if (!pk[k].n)
                continue;
            struct src cur = {fa.v, fa.n, 0.0, 0, -1, 0, -1};
            struct src run = {pk[k].v, pk[k].n, 0.0, 0, -1, 0, b};
            if (merge(s, b, &cur, &run, &fb))
                goto out;
            struct vec tmp = fa;
            fa = fb;
            fb = tmp;
        }
        struct vec tmp = hist[b % ring];
        hist[b % ring] = fa;
        fa = tmp;
    }
    rc = 0;
out:
    for (int32_t i = 0; hist && i < ring; i++)
        free(hist[i].v);
    for (size_t k = 0; k < s->k_n; k++) {
        if (pk)
            free(pk[k].v);
        if (pn)
            free(pn[k].v);
    }
    free(hist);
    free(pk);
    free(pn);
    free(fa.v);
    free(fb.v);
    return rc;
}

static void emit_runs(const struct solver *s, struct ebb__oracle_run *runs,
                      size_t max_runs, size_t *n_runs)
{
    size_t count = 0;
    for (int32_t nd = s->best_node; nd >= 0; nd = s->nodes[nd].parent)
        count++;
    *n_runs = count;
    size_t i = count;
    int32_t end = s->best_end;
    for (int32_t nd = s->best_node; nd >= 0; nd = s->nodes[nd].parent) {
        const struct node *x = &s->nodes[nd];
        i--;
        if (i < max_runs)
            runs[i] = (struct ebb__oracle_run){(size_t)x->offer,
                                               s->t[x->start], s->t[end]};
        end = x->parent_end;
    }
}

int ebb__oracle_solve(const struct ebb__oracle_job *job,
                      const struct ebb__oracle_offer *offers, size_t n_offers,
                      ebb_micros *cost, struct ebb__oracle_run *runs,
                      size_t max_runs, size_t *n_runs)
{
    if (!cost || (runs && !n_runs))
        return EBB_EINVAL;
    int rc = check_input(job, offers, n_offers);
    if (rc)
        return rc;
    if (job->work <= 0) {
        *cost = 0;
        if (n_runs)
            *n_runs = 0;
        return 0;
    }
    if (job->deadline == job->release || n_offers == 0)
        return EBB_ENOTFOUND;

    struct solver s = {0};
    s.offers = offers;
    s.k_n = n_offers;
    s.overhead = job->overhead;
    s.wgoal = (double)job->work;
    s.wdone = s.wgoal * (1.0 - EPS_REL);
    s.want_runs = runs != NULL;
    s.best = INT64_MAX;
    s.best_node = -1;
    rc = prepare(&s, job);
    if (!rc && s.smax[0] < s.wdone)
        rc = EBB_ENOTFOUND;
    if (!rc)
        rc = sweep(&s);
    if (!rc && s.best == INT64_MAX)
        rc = EBB_ENOTFOUND;
    if (!rc) {
        *cost = s.best / 3600;
        if (runs)
            emit_runs(&s, runs, max_runs, n_runs);
    }
    free(s.t);
    free(s.pc);
    free(s.bad);
    free(s.smax);
    free(s.lp.seg);
    free(s.lp.order);
    free(s.lp.first);
    free(s.lp.fw);
    free(s.lp.fc);
    free(s.nodes);
    return rc;
}
