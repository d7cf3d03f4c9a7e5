/* Internals shared by oracle.c (the search) and oracle_bound.c (its lower
 * and upper bounds). Nothing outside src/oracle_*.c includes this. */
#ifndef EBB_ORACLE_IMPL_H
#define EBB_ORACLE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "report/oracle.h"

/* A run in the back-pointer forest: the schedule ending with this run is
 * the one ending with (parent, parent_end) plus [start, end of the run). */
struct ebb__oracle_node {
    int32_t parent;      /* -1: this is the first run */
    int32_t parent_end;  /* grid index where the previous run ended */
    int32_t start;       /* grid index where this run starts */
    int32_t offer;
};

/* Lagrangian bounds: for multipliers lam[i], the least value of
 * cost - lam * work over all continuations from each state. */
#define EBB__ORACLE_NLAM 6
struct ebb__oracle_lag {
    size_t nl;
    double lam[EBB__ORACLE_NLAM];
    double err[EBB__ORACLE_NLAM];  /* rounding margin of each table */
    double *v;  /* [i * (n + 1) + b]: idle at b */
    double *u;  /* [(i * (n + 1) + b) * k_n + k]: running on k, productive */
};

struct ebb__oracle_solver {
    const struct ebb__oracle_offer *offers;
    size_t k_n;
    int32_t n;           /* steps; grid boundaries 0..n */
    int32_t q;           /* whole steps inside the overhead */
    ebb_dur_ms overhead;
    ebb_time_ms *t;      /* n + 1 boundaries */
    int64_t *pc;         /* [b * k_n + k]: prefix sums of step costs */
    int32_t *bad;        /* [b * k_n + k]: prefix counts of unusable steps */
    double *smax;        /* n + 1: most work obtainable from b on */
    struct ebb__oracle_lag lag;
    double wdone;        /* the completion threshold */
    int want_runs;
    struct ebb__oracle_node *nodes;
    size_t n_nodes, cap_nodes;
    int64_t ub;          /* cost of a schedule found by a heuristic */
    int64_t best;        /* best answer of this pass, or its limit */
    int32_t best_node, best_end;
    int nomem;
};

/* Cost of step j on offer k, price-seconds (micro-USD * s / h). */
static inline int64_t ebb__oracle_step_cost(
    const struct ebb__oracle_solver *s, size_t k, int32_t j)
{
    const int64_t *p = s->pc + k;
    return p[(size_t)(j + 1) * s->k_n] - p[(size_t)j * s->k_n];
}

/* Cost of the run [a, b) on offer k, price-seconds. */
static inline int64_t ebb__oracle_run_cost(
    const struct ebb__oracle_solver *s, size_t k, int32_t a, int32_t b)
{
    const int64_t *p = s->pc + k;
    return p[(size_t)b * s->k_n] - p[(size_t)a * s->k_n];
}

/* True when offer k is usable throughout steps a..b-1. */
static inline int ebb__oracle_usable(const struct ebb__oracle_solver *s,
                                     size_t k, int32_t a, int32_t b)
{
    const int32_t *p = s->bad + k;
    return p[(size_t)b * s->k_n] == p[(size_t)a * s->k_n];
}

/* Work of a run [a, b) on offer k; 0 when it never passes its overhead. */
static inline double ebb__oracle_run_work(const struct ebb__oracle_solver *s,
                                          size_t k, int32_t a, int32_t b)
{
    ebb_dur_ms d = s->t[b] - s->t[a] - s->overhead;
    return d > 0 ? (double)d * s->offers[k].speed : 0.0;
}

/* Searches the Lagrangian dual for good multipliers, keeps their value
 * tables for ebb__oracle_lag_bound, and lowers s->ub to the cost of the
 * best schedule met on the way (its primal solutions, cut at the work
 * goal). 0 or EBB_ENOMEM. */
int ebb__oracle_lag_build(struct ebb__oracle_solver *s);
/* A lower bound of the cost still to pay for `need` more work from
 * boundary b, idle (k < 0) or running on offer k past its overhead. */
double ebb__oracle_lag_bound(const struct ebb__oracle_solver *s, int32_t b,
                             ptrdiff_t k, double need);

/* True when, for some multiplier, the Lagrangian bound of the cost still
 * to pay from (b, k) for `need` more work reaches `room`. Cheaper than
 * ebb__oracle_lag_bound: it stops at the first multiplier that does. */
static inline int ebb__oracle_lag_prunes(const struct ebb__oracle_solver *s,
                                         int32_t b, ptrdiff_t k, double need,
                                         double room)
{
    const struct ebb__oracle_lag *g = &s->lag;
    size_t n1 = (size_t)s->n + 1;
    for (size_t i = 0; i < g->nl; i++) {
        double val = k < 0 ? g->v[i * n1 + (size_t)b]
                           : g->u[(i * n1 + (size_t)b) * s->k_n + (size_t)k];
        if (val + g->lam[i] * need - g->err[i] >= room)
            return 1;
    }
    return 0;
}

/* Lowers s->ub to the cost of the cheapest single run doing the job. */
void ebb__oracle_single_run(struct ebb__oracle_solver *s);

#endif
