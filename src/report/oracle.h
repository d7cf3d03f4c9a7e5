/* The hindsight oracle: the least cost at which one job could have finished,
 * knowing every future price and availability. The backtest reports it as
 * `oracle_cost_usd`, the yardstick every policy is judged against.
 *
 * Model (the simulator's):
 * - The job is released at `release` and must accumulate `work` ms of
 *   reference-instance compute by `deadline`.
 * - A run is an interval [a, b) on one offer, available throughout. Its first
 *   `overhead` ms make no progress; after that it progresses at the offer's
 *   `speed` (work ms per wall ms). Work is kept when a run ends. Runs do not
 *   overlap.
 * - Prices are micro-USD per hour, a step function; before its first change
 *   an offer cannot be used. Availability is a 0/1 step function; before its
 *   first change, and when it is NULL, the offer is available.
 * - Billing is per second: a run pays, for each second that starts inside
 *   it (the last one may be partial and is billed whole), price/3600 at the
 *   price in effect when that second starts. The oracle sums these charges
 *   exactly (in micro-USD/3600 units) and rounds the total down once to the
 *   micro-dollar, so per-run or per-second rounding up in the ledger can only
 *   make the simulator dearer.
 * - Work is a double; the job counts as done when its work reaches
 *   work * (1 - 1e-9), which forgives rounding in the simulator's sums.
 *
 * Exactness. Runs start and end on the grid release + j*step, j >= 0, plus
 * the deadline itself. The result is the exact optimum over such schedules
 * (checked against brute force in tests/unit/test_oracle.c). A policy that
 * acts between grid points could do better:
 * - When every price and availability change falls on a grid point (traces
 *   that change on whole minutes with a step dividing the minute, say), the
 *   continuous-time optimum is below the result by less than one step of the
 *   dearest usable offer's price (step * max_price / 3600000 micro-USD):
 *   with linear costs between changes, an optimal continuous schedule has
 *   all run boundaries on change points but one, fixed by the work
 *   equation, and moving that one to a grid point costs less than a step.
 * - Otherwise each run boundary may be off by up to a step's cost, and a
 *   window of availability shorter than its grid cover may be missed
 *   entirely (the oracle then says EBB_ENOTFOUND or uses a dearer offer).
 *   Choose `step` to divide the trace's change times to avoid this.
 *
 * Pure code: no I/O, no clock, no globals; safe to call from any thread.
 */
#ifndef EBB_ORACLE_H
#define EBB_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>

/* One offer (an instance type in a market). Arrays are borrowed. */
struct ebb__oracle_offer {
    double speed;                 /* work ms per wall ms; reference = 1.0 */
    const ebb_time_ms *price_at;  /* sorted ascending, n_price > 0 */
    const ebb_micros *price;      /* micro-USD per hour, >= 0 */
    size_t n_price;
    const ebb_time_ms *avail_at;  /* sorted ascending; NULL: always up */
    const int32_t *avail;         /* 0 or 1 from avail_at[i] on */
    size_t n_avail;
};

struct ebb__oracle_job {
    ebb_time_ms release, deadline;
    ebb_dur_ms work;      /* reference-instance ms; <= 0 costs nothing */
    ebb_dur_ms overhead;  /* unproductive ms at the start of every run */
    ebb_dur_ms step;      /* grid, a positive multiple of 1000 ms */
};

/* One run of the optimal schedule: [start, end) on offers[offer]. */
struct ebb__oracle_run {
    size_t offer;
    ebb_time_ms start, end;
};

/* Computes the least cost of finishing `job` on `offers` (see the model
 * above) and stores it in *cost (micro-USD, rounded down).
 *
 * When `runs` is not NULL, the optimal schedule is written there in time
 * order: up to `max_runs` runs, and *n_runs (required then) is set to the
 * schedule's full length, like snprintf; a caller whose array was too small
 * sees *n_runs > max_runs and may call again. With `runs` NULL, `n_runs` may
 * be NULL too, and the solver skips the bookkeeping.
 *
 * Returns 0; EBB_ENOTFOUND when no grid schedule finishes by the deadline;
 * EBB_EINVAL on a malformed job or offer (unsorted times, negative price,
 * speed not positive, step not a multiple of 1000, sums that could overflow);
 * EBB_ENOMEM. *cost and the runs are written only on success. */
int ebb__oracle_solve(const struct ebb__oracle_job *job,
                      const struct ebb__oracle_offer *offers, size_t n_offers,
                      ebb_micros *cost, struct ebb__oracle_run *runs,
                      size_t max_runs, size_t *n_runs);

#endif
