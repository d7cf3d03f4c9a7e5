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
 * - a state whose cost plus a Lagrangian lower bound of the rest reaches
 *   the limit of the pass is dropped (oracle_bound.c: for a few multipliers
 *   lam, the least cost - lam * work of any continuation from each (b, idle
 *   or running on k), a shortest path without a work dimension; the bound
 *   pays restart overheads, so it is usually within 0.01-3 % of the truth);
 *   whole offers are skipped as starts when even the best idle state fails;
 * - a running state that an idle one shadows (at least overhead * speed more
 *   work for no more cost: restarting the same offer matches it) is dropped.
 * search() runs the sweep with a cost limit just above the Lagrangian bound
 * and widens it geometrically (x2.5) until a schedule turns up, the last
 * limit being one above a heuristic schedule (the dual's primal solutions
 * cut at the goal, or the best single run). A sweep under limit L only
 * drops states whose every completion costs >= L, so the first schedule
 * found is optimal.
 * Back-pointers (one node per surviving run start) rebuild the schedule.
 */
#include "report/oracle_impl.h"

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

struct vec {
    struct ent *v;
    size_t n, cap;
};

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

/* Appends a back-pointer node; -1 when runs are not wanted, or on ENOMEM
 * (then s->nomem is set). */
static int32_t new_node(struct ebb__oracle_solver *s, int32_t parent,
                        int32_t parent_end, int32_t start, size_t offer)
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
    s->nodes[s->n_nodes] =
        (struct ebb__oracle_node){parent, parent_end, start, (int32_t)offer};
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
    int checked;  /* states already passed hopeless() at this boundary */
};

/* True when (w, c) at boundary b cannot lead to an answer below best. */
static int hopeless(const struct ebb__oracle_solver *s, int32_t b,
                    ptrdiff_t kind, double w, int64_t c)
{
    if (c >= s->best)
        return 1;
    double need = s->wdone - w;
    if (w + s->smax[b] * (1.0 + 1e-12) < s->wdone)
        return 1;
    double room = (double)(s->best - c);
    /* The bound carries margins that keep it below the true rest. */
    return ebb__oracle_lag_prunes(s, b, kind, need, room);
}

/* Merges x and y (each work-descending) into out, dropping dominated,
 * finished and hopeless states. Finished states update the best answer with
 * their run ending at b. */
static int merge(struct ebb__oracle_solver *s, int32_t b, ptrdiff_t kind,
                 const struct src *x, const struct src *y, struct vec *out)
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
        if (!from->checked && hopeless(s, b, kind, w, c))
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
static void fill_offer(struct ebb__oracle_solver *s, size_t k)
{
    const struct ebb__oracle_offer *o = &s->offers[k];
    size_t kn = s->k_n, pi = 0, ai = 0;
    int64_t *pc = s->pc + k;
    int32_t *bad = s->bad + k;
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
        pc[(size_t)(j + 1) * kn] = pc[(size_t)j * kn] + cost;
        bad[(size_t)(j + 1) * kn] = bad[(size_t)j * kn] + !ok;
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

/* Grid, step costs, bounds; then the best single run as a first answer. */
static int prepare(struct ebb__oracle_solver *s,
                   const struct ebb__oracle_job *job)
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
            if (ebb__oracle_usable(s, k, j, j + 1) && w > wbest)
                wbest = w;
        }
        s->smax[j] = s->smax[j + 1] + wbest;
    }

    ebb__oracle_single_run(s);
    if (ebb__oracle_lag_build(s))
        return EBB_ENOMEM;
    return 0;
}

/* The forward pass over boundaries 1..n. */
/* F(b) = the idle states in *f merged with every running state stopping
 * at b, pairwise in rounds (log K merges per state, not K). All inputs
 * passed hopeless() already. The result replaces *f. */
static int build_f(struct ebb__oracle_solver *s, int32_t b,
                   const struct vec *pk, struct vec *pool, struct src *srcs,
                   struct vec *f)
{
    static const struct src none = {NULL, 0, 0.0, 0, -1, 0, -1, 1};
    size_t nl = 0, half = 0, width = s->k_n + 1;
    srcs[nl++] = (struct src){f->v, f->n, 0.0, 0, -1, 0, -1, 1};
    for (size_t k = 0; k < s->k_n; k++)
        if (pk[k].n)
            srcs[nl++] = (struct src){pk[k].v, pk[k].n, 0.0, 0, -1, 0, b, 1};
    if (nl == 1)
        return 0;
    struct vec *last = pool;
    while (nl > 1) {
        size_t m = 0;
        for (size_t i = 0; i < nl; i += 2) {
            last = &pool[half * width + m];
            const struct src *y = i + 1 < nl ? &srcs[i + 1] : &none;
            if (merge(s, b, -1, &srcs[i], y, last))
                return EBB_ENOMEM;
            srcs[m++] = (struct src){last->v, last->n, 0.0, 0, -1, 0, -1, 1};
        }
        nl = m;
        half ^= 1;
    }
    struct vec tmp = *f;
    *f = *last;
    *last = tmp;
    return 0;
}

/* Drops the running states of p that an idle state of f shadows: one with
 * at least lead = overhead * speed more work and no more cost. Restarting
 * the same offer at once, it is never behind in work and pays the same
 * from then on, so the running state cannot beat it. */
static void shadow(const struct vec *f, double lead, struct vec *p)
{
    size_t i = 0, m = 0;
    for (size_t j = 0; j < p->n; j++) {
        double want = p->v[j].w + lead;
        /* f and p are work-descending; i ends at the last f with enough
         * work, which is the cheapest of those. */
        while (i + 1 < f->n && f->v[i + 1].w >= want)
            i++;
        if (i < f->n && f->v[i].w >= want && f->v[i].c <= p->v[j].c)
            continue;
        p->v[m++] = p->v[j];
    }
    p->n = m;
}

/* key[i]: the least c + lam_i * (work still needed) over the idle states
 * f, for start_hopeless. */
static void start_keys(const struct ebb__oracle_solver *s,
                       const struct vec *f, double *key)
{
    for (size_t i = 0; i < s->lag.nl; i++) {
        double lam = s->lag.lam[i], m = INFINITY;
        for (size_t j = 0; j < f->n; j++) {
            double v = (double)f->v[j].c + lam * (s->wdone - f->v[j].w);
            if (v < m)
                m = v;
        }
        key[i] = m;
    }
}

/* True when no idle state can usefully start a run on k that becomes
 * productive at b with warm-up work dw and cost dc: for some multiplier
 * even the best state's Lagrangian bound reaches the limit. Checking a
 * whole offer at once skips most starts (those on offers dear just then)
 * without touching the frontier. */
static int start_hopeless(const struct ebb__oracle_solver *s, int32_t b,
                          size_t k, const double *key, double dw, int64_t dc)
{
    const struct ebb__oracle_lag *g = &s->lag;
    size_t n1 = (size_t)s->n + 1;
    for (size_t i = 0; i < g->nl; i++) {
        double u = g->u[(i * n1 + (size_t)b) * s->k_n + k];
        double lb = key[i] + (double)dc - g->lam[i] * dw + u - g->err[i];
        if (lb >= (double)s->best)
            return 1;
    }
    return 0;
}

static int sweep(struct ebb__oracle_solver *s)
{
    int32_t ring = s->q + 1;
    int rc = EBB_ENOMEM;
    struct vec *hist = calloc((size_t)ring, sizeof(*hist));
    struct vec *pk = calloc(s->k_n, sizeof(*pk));
    struct vec *pn = calloc(s->k_n, sizeof(*pn));
    struct vec fa = {0}, fb = {0};
    double key[EBB__ORACLE_NLAM];
    struct vec *pool = calloc(2 * (s->k_n + 1), sizeof(*pool));
    struct src *srcs = calloc(s->k_n + 1, sizeof(*srcs));
    if (!pool || !srcs || !hist || !pk || !pn || vec_reserve(&hist[0], 1))
        goto out;
    hist[0].v[0] = (struct ent){0.0, 0, -1, 0};
    hist[0].n = 1;

    for (int32_t b = 1; b <= s->n; b++) {
        const struct vec *fprev = &hist[(b - 1) % ring];
        const struct vec *fstart = &hist[b % ring];
        int32_t a = b - s->q - 1;
        double len = (double)(s->t[b] - s->t[b - 1]);
        if (a >= 0)
            start_keys(s, fstart, key);
        for (size_t k = 0; k < s->k_n; k++) {
            struct src cont = {pk[k].v, pk[k].n, len * s->offers[k].speed,
                               0, -1, 0, -1, 0};
            struct src start = {NULL, 0, 0.0, 0, (int32_t)k, a, -1, 0};
            if (ebb__oracle_usable(s, k, b - 1, b))
                cont.dc = ebb__oracle_step_cost(s, k, b - 1);
            else
                cont.n = 0;
            if (a >= 0 && fstart->n && ebb__oracle_usable(s, k, a, b) &&
                s->t[b] - s->t[a] > s->overhead) {
                start.dw = ebb__oracle_run_work(s, k, a, b);
                start.dc = ebb__oracle_run_cost(s, k, a, b);
                if (!start_hopeless(s, b, k, key, start.dw, start.dc)) {
                    start.v = fstart->v;
                    start.n = fstart->n;
                }
            }
            if (merge(s, b, (ptrdiff_t)k, &cont, &start, &pn[k]))
                goto out;
            struct vec tmp = pk[k];
            pk[k] = pn[k];
            pn[k] = tmp;
        }
        /* F(b): idle states carried from b-1, then every running state
         * stopping at b. */
        struct src idle = {fprev->v, fprev->n, 0.0, 0, -1, 0, -1, 0};
        struct src none = {NULL, 0, 0.0, 0, -1, 0, -1, 1};
        if (merge(s, b, -1, &idle, &none, &fa))
            goto out;
        if (build_f(s, b, pk, pool, srcs, &fa))
            goto out;
        for (size_t k = 0; s->overhead > 0 && k < s->k_n; k++)
            if (pk[k].n)
                shadow(&fa, s->overhead * s->offers[k].speed, &pk[k]);
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
    for (size_t i = 0; pool && i < 2 * (s->k_n + 1); i++)
        free(pool[i].v);
    free(pool);
    free(srcs);
    free(hist);
    free(pk);
    free(pn);
    free(fa.v);
    free(fb.v);
    return rc;
}

/* Runs the sweep with growing cost limits: first just above the lower
 * bound, where pruning leaves almost nothing, then wider, last just above
 * the heuristic schedule's cost (or with no limit). A sweep under limit L
 * drops only states whose every completion costs >= L, so the first one
 * that finds any schedule has found the optimum. */
static int search(struct ebb__oracle_solver *s)
{
    double lb = ebb__oracle_lag_bound(s, 0, -1, s->wdone);
    int64_t last = s->ub == INT64_MAX ? INT64_MAX : s->ub + 1;
    for (double slack = 1e-4;; slack *= 2.5) {
        double want = lb * (1.0 + slack) + 1.0;
        int64_t limit = want < (double)last ? (int64_t)want : last;
        s->best = limit;
        s->best_node = -1;
        s->n_nodes = 0;
        int rc = sweep(s);
        if (rc)
            return rc;
        if (s->best < limit)
            return 0;
        if (limit == last)
            return EBB_ENOTFOUND;
    }
}

static void emit_runs(const struct ebb__oracle_solver *s,
                      struct ebb__oracle_run *runs,
                      size_t max_runs, size_t *n_runs)
{
    size_t count = 0;
    for (int32_t nd = s->best_node; nd >= 0; nd = s->nodes[nd].parent)
        count++;
    *n_runs = count;
    size_t i = count;
    int32_t end = s->best_end;
    for (int32_t nd = s->best_node; nd >= 0; nd = s->nodes[nd].parent) {
        const struct ebb__oracle_node *x = &s->nodes[nd];
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

    struct ebb__oracle_solver s = {0};
    s.offers = offers;
    s.k_n = n_offers;
    s.overhead = job->overhead;
    s.wdone = (double)job->work * (1.0 - EPS_REL);
    s.want_runs = runs != NULL;
    s.ub = INT64_MAX;
    rc = prepare(&s, job);
    if (!rc && s.smax[0] < s.wdone)
        rc = EBB_ENOTFOUND;
    if (!rc)
        rc = search(&s);
    if (!rc) {
        *cost = s.best / 3600;
        if (runs)
            emit_runs(&s, runs, max_runs, n_runs);
    }
    free(s.t);
    free(s.pc);
    free(s.bad);
    free(s.smax);
    free(s.lag.v);
    free(s.lag.u);
    free(s.nodes);
    return rc;
}
