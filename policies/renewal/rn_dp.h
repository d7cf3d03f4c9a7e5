/* rn_dp — the finite-horizon problem the renewal policy solves: finish W
 * of work by a deadline at the least expected cost, when spot capacity
 * follows a continuous-time Markov chain over RN_PHASES phases (two up,
 * two down: a short and a long kind of each period, rn_model.h) and
 * on-demand is always there. Backward induction on a grid of step
 * `step_ms` over
 *   i = work left / step       (0..nw; work in wall time on on-demand)
 *   j = slack / step           (0..ns; slack = time left - work left)
 *   the job: idle, on spot, on on-demand; and the chain's phase.
 * Per step: running (spot or on-demand) does one step of work (i - 1,
 * j kept) and pays one step of its price; idling costs nothing and loses
 * one step of slack (j - 1); the chain moves by its exact transition over
 * one step, and a spot run whose capacity goes (an up phase to a down
 * one) is idle at the work it reached. A start costs `k` steps of slack
 * and of the new instance's price (the restart overhead, k = overhead /
 * step) while the chain moves over those k steps, so a spot start whose
 * capacity goes during its overhead gains nothing. Done (i = 0) costs 0;
 * a point from which the deadline cannot be met costs RN_BIG. Costs are in
 * the unit of the prices given (micros per hour).
 *
 * Pure: no I/O, no clock, no globals. */
#ifndef EBB_RN_DP_H
#define EBB_RN_DP_H

#include <stddef.h>

/* The chain's phases: 0 and 1 are up (spot can be had), 2 and 3 down. */
#define RN_PHASES 4
#define RN_UP_PHASES 2

/* A table's values per grid point: idle in each phase, on spot in each up
 * phase, on on-demand in each phase. */
#define RN_IDLE(c) (c)
#define RN_SPOT(c) (RN_PHASES + (c))
#define RN_OD(c) (RN_PHASES + RN_UP_PHASES + (c))
#define RN_VALUES (2 * RN_PHASES + RN_UP_PHASES)

enum rn_job_state { RN_JOB_IDLE, RN_JOB_SPOT, RN_JOB_OD };

enum rn_action {
    RN_WAIT,      /* wait a step idle (stopping a running instance) */
    RN_RUN_SPOT,  /* start spot, or keep running on it */
    RN_RUN_OD,    /* start on-demand, or keep running on it */
};

/* Unreachable or infeasible: the deadline would be missed. */
#define RN_BIG 1e30f

struct rn_params {
    double rate[RN_PHASES];     /* per hour: how fast each phase ends */
    double to_short_up;         /* share of up periods that are short */
    double to_short_down;       /* share of down periods that are short */
    double spot_price, od_price; /* per hour of on-demand-speed work */
    double step_ms;             /* > 0 */
    int k;                      /* restart overhead in steps, >= 0 */
    int nw, ns;                 /* grid extents, >= 0 */
};

/* A solved table: the values at every grid point (i, j) with j <= ext[i],
 * ext non-increasing in i (a staircase: the union of the rectangles of
 * the jobs it has served; a value at a point depends only on the points
 * below and left of it, never on the table's extent). */
struct rn_table {
    struct rn_params p; /* p.nw: the last row; p.ns: row 0's last point */
    double one[RN_PHASES][RN_PHASES];  /* the chain over one step */
    double over[RN_PHASES][RN_PHASES]; /* ... over k steps */
    float **row;  /* row[i]: (ext[i] + 1) * RN_VALUES values */
    int *ext;
    size_t points; /* grid points solved */
};

/* Solves the problem for *p (its rectangle nw x ns) into *t (allocated
 * here; free with rn_table_free). Returns 0, or -1 when p is invalid or
 * memory runs out (then t->row is NULL). */
int rn_solve(const struct rn_params *p, struct rn_table *t);

/* Extends solved table *t to cover the rectangle nw x ns, solving only
 * the points it lacked. Returns 0, or -1 when the table would grow past
 * its bound or memory runs out (then *t is freed: t->row is NULL). */
int rn_extend(struct rn_table *t, int nw, int ns);

/* How many points rn_extend(t, nw, ns) would solve (nw, ns >= 0). */
size_t rn_extend_points(const struct rn_table *t, int nw, int ns);

/* 1 when *t holds every point of the rectangle nw x ns. */
int rn_covers(const struct rn_table *t, int nw, int ns);

void rn_table_free(struct rn_table *t);

/* The optimal expected cost of value `slot` (RN_IDLE(c), RN_SPOT(c),
 * RN_OD(c)) at grid point (i, j), i clamped into the table and j into
 * row i (j < 0: RN_BIG unless i <= 0). */
float rn_value(const struct rn_table *t, int i, int j, int slot);

/* The expected cost of taking `a` now from `state` at (i, j), with the
 * chain in each phase with probability belief[c] (the up phases' or the
 * down phases' beliefs are 0), acting optimally after. RN_BIG when `a` is
 * not possible there (spot while spot is down). Starting an instance
 * counts its overhead; keeping the one the job runs on does not. Waiting
 * while spot is down, and staying on on-demand while it is up, are valued
 * without learning the phase (rn_dp.c: wait_down_value, stay_up_value);
 * the rest as a job told the phase after one step would value them. */
float rn_action_value(const struct rn_table *t, int i, int j,
                      enum rn_job_state state, const double *belief,
                      enum rn_action a);

/* The best of the actions in `allowed` (bits 1 << action) from there,
 * ties going to spot, then to waiting, then to on-demand (cheapest now
 * first). With every allowed action at RN_BIG it answers RN_RUN_OD
 * (finish as early as possible). *value (may be NULL) gets its expected
 * cost. */
#define RN_ALL ((1u << RN_WAIT) | (1u << RN_RUN_SPOT) | (1u << RN_RUN_OD))
enum rn_action rn_best(const struct rn_table *t, int i, int j,
                       enum rn_job_state state, const double *belief,
                       unsigned allowed, float *value);

/* For the actions valued without learning the phase (rn_action_value):
 * the horizon, in steps, of the plan that gives their value (wait that
 * long for spot, then on-demand; stay on on-demand that long, then
 * spot), at which the job should be asked again; 0 for the others. */
int rn_horizon(const struct rn_table *t, int i, int j, enum rn_job_state state,
               const double *belief, enum rn_action a);

/* The chain's transition matrix over `hours` for the rates and shares of
 * *p: m[a][b] = P(phase b after | phase a now). */
void rn_chain(const struct rn_params *p, double hours,
              double m[RN_PHASES][RN_PHASES]);

#endif
