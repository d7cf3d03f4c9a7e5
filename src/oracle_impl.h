/* Internals shared by oracle.c (the search) and oracle_bound.c (its lower
 * and upper bounds). Nothing outside src/oracle_*.c includes this. */
#ifndef EBB_ORACLE_IMPL_H
#define EBB_ORACLE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "oracle.h"

/* A run in the back-pointer forest: the schedule ending with this run is
 * the one ending with (parent, parent_end) plus [start, end of the run). */
struct ebb__oracle_node {
    int32_t parent;      /* -1: this is the first run */
    int32_t parent_end;  /* grid index where the previous run ended */
    int32_t start;       /* grid index where this run starts */
    int32_t offer;
};

/* A segment of one step's lower hull of (work, cost) over its offers. */
struct ebb__oracle_seg {
    double w, slope;
    int64_t c;
    int32_t step;
};

/* The fractional bound: segments sorted by cost per work, and Fenwick trees
 * over that order with the segments of the steps not yet passed. */
struct ebb__oracle_lp {
    struct ebb__oracle_seg *seg;
    int32_t *order;  /* by step: sorted positions of each step's segments */
    int32_t *first;  /* n + 2 offsets into order */
    double *fw;      /* Fenwick, 1-based: work */
    int64_t *fc;     /* Fenwick, 1-based: cost */
    double *fw0;     /* the trees with every step, for lp_reset */
    int64_t *fc0;
    size_t m, top;   /* top: highest power of two <= m, 0 when m == 0 */
};

/* Lagrangian bounds: for multipliers lam[i], the least value of
 * cost - lam * work over all continuations from each state. */
#define EBB__ORACLE_NLAM 6
struct ebb__oracle_lag {
    size_t nl;
    double lam[EBB__ORACLE_NLAM];
    double err[EBB__ORACLE_NLAM];  /* rounding margin of each table */
    double *v;  /* nl * (n + 1): idle at b */
    double *u;  /* nl * k_n * (n + 1): running on k past the overhead */
};

struct ebb__oracle_solver {
    const struct ebb__oracle_offer *offers;
    size_t k_n;
    int32_t n;           /* steps; grid boundaries 0..n */
    int32_t q;           /* whole steps inside the overhead */
    ebb_dur_ms overhead;
    ebb_time_ms *t;      /* n + 1 boundaries */
    int64_t *pc;         /* k_n * (n + 1) prefix sums of step costs */
    int32_t *bad;        /* k_n * (n + 1) prefix counts of unusable steps */
    double *smax;        /* n + 1: most work obtainable from b on */
    struct ebb__oracle_lp lp;
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
    const int64_t *p = s->pc + k * (size_t)(s->n + 1);
    return p[j + 1] - p[j];
}

/* Cost of the run [a, b) on offer k, price-seconds. */
static inline int64_t ebb__oracle_run_cost(
    const struct ebb__oracle_solver *s, size_t k, int32_t a, int32_t b)
{
    const int64_t *p = s->pc + k * (size_t)(s->n + 1);
    return p[b] - p[a];
}

/* True when offer k is usable throughout steps a..b-1. */
static inline int ebb__oracle_usable(const struct ebb__oracle_solver *s,
                                     size_t k, int32_t a, int32_t b)
{
    const int32_t *p = s->bad + k * (size_t)(s->n + 1);
    return p[b] == p[a];
}

/* Work of a run [a, b) on offer k; 0 when it never passes its overhead. */
static inline double ebb__oracle_run_work(const struct ebb__oracle_solver *s,
                                          size_t k, int32_t a, int32_t b)
{
    ebb_dur_ms d = s->t[b] - s->t[a] - s->overhead;
    return d > 0 ? (double)d * s->offers[k].speed : 0.0;
}

/* Appends a back-pointer node; -1 when runs are not wanted, or on ENOMEM
 * (then s->nomem is set). */
int32_t ebb__oracle_new_node(struct ebb__oracle_solver *s, int32_t parent,
                             int32_t parent_end, int32_t start, size_t offer);

/* Builds the fractional bound over all steps. 0 or EBB_ENOMEM. */
int ebb__oracle_lp_build(struct ebb__oracle_solver *s);
/* Least cost of `need` more work from the steps still in the trees. */
double ebb__oracle_lp_query(const struct ebb__oracle_lp *lp, double need);
/* Puts every step back into the trees, for another sweep. */
void ebb__oracle_lp_reset(struct ebb__oracle_lp *lp);
/* Takes step j out of the trees once the sweep has passed it. */
void ebb__oracle_lp_remove(struct ebb__oracle_lp *lp, int32_t j);

/* Searches the Lagrangian dual for good multipliers, keeps their value
 * tables for ebb__oracle_lag_bound, and lowers s->ub to the cost of the
 * best schedule met on the way (its primal solutions, cut at the work
 * goal). 0 or EBB_ENOMEM. */
int ebb__oracle_lag_build(struct ebb__oracle_solver *s);
/* A lower bound of the cost still to pay for `need` more work from
 * boundary b, idle (k < 0) or running on offer k past its overhead. */
double ebb__oracle_lag_bound(const struct ebb__oracle_solver *s, int32_t b,
                             ptrdiff_t k, double need);

/* Lowers s->ub to the cost of the cheapest single run doing the job. */
void ebb__oracle_single_run(struct ebb__oracle_solver *s);

#endif
