/* rn_model — what the renewal policy believes about a spot offer's
 * availability, and the grid it plans on.
 *
 * Availability alternates between up periods (spot can be had) and down
 * periods. Each kind of period is a mixture of two exponentials, a short
 * and a long kind (a two-phase hyperexponential): the traces show many
 * brief flaps and a few long stretches, which one exponential cannot
 * (a period that has lasted long is likely to last longer). A period's
 * kind is drawn when it begins, so the whole is a four-phase Markov chain
 * (rn_dp.h) whose phase within the observed up or down is hidden; given
 * the age a of the period in effect, the belief in its kind is
 *     P(short | a) = p e^(-r_s a) / (p e^(-r_s a) + (1 - p) e^(-r_l a)).
 * The mixture of each kind of period is fitted by EM to the lengths the
 * offer's record holds (ebb_offer's up_lengths and down_lengths, log2
 * buckets of minutes) plus `weight` periods spread as the prior mixture,
 * so a new pool plans with the prior and the record takes over as
 * periods are seen. The prior is the policy's settings, fitted the same
 * way on other pools' traces (bench-policies --cbl does this
 * leave-one-trace-out).
 *
 * Pure: no I/O, no clock, no globals. */
#ifndef EBB_RN_MODEL_H
#define EBB_RN_MODEL_H

#include <ebb/policy.h>

#include "rn_dp.h"

/* A two-phase mixture of period lengths. */
struct rn_mix {
    double p_short;  /* share of short periods, in (0, 1) */
    double short_h;  /* mean length of a short one, hours */
    double long_h;   /* ... of a long one, hours (>= short_h) */
};

/* The probability that a period of mixture *m falls in each bucket of
 * EBB_PERIOD_BUCKETS (include/ebb/policy.h). */
void rn_bucket_probs(const struct rn_mix *m, double probs[EBB_PERIOD_BUCKETS]);

/* Fits *out by EM to the bucket counts (NULL: none) plus `weight`
 * periods spread as *prior (weight 0: the counts alone; then *prior is
 * only the start). With nothing to fit, *out is *prior. */
void rn_fit(const unsigned *counts, const struct rn_mix *prior, double weight,
            struct rn_mix *out);

/* The chain's parameters (rate, to_short_up, to_short_down of *p) from
 * the up and down mixtures. */
void rn_chain_params(const struct rn_mix *up, const struct rn_mix *down,
                     struct rn_params *p);

/* The belief over the chain's phases (rn_dp.h) when spot is `up` (1) or
 * not and the period in effect has lasted `age_h` hours. */
void rn_belief(const struct rn_mix *up, const struct rn_mix *down, int up_now,
               double age_h, double belief[RN_PHASES]);

/* Rounds x > 0 to the nearest point of a grid `step` apart in log (0.05:
 * 5%), so that decisions whose inputs differ by a little share one solved
 * table: the chain's fits on RN_QSTEP_CHAIN, the price on RN_QSTEP_PRICE. */
double rn_quantize(double x, double step);
#define RN_QSTEP_CHAIN 0.05
#define RN_QSTEP_PRICE 0.01

/* The most grid points (work x slack) a table is sized for. */
#define RN_GRID_POINTS 100000.0

/* The grid of a job with `work_ms` of work (wall time on on-demand),
 * `slack_ms` of slack at submission and `overhead_ms` per restart: the
 * step is the overhead divided by a whole k >= 1 so that a restart is
 * exactly k steps, k on the ladder 1, 2, 3, 4, 6, 8, 12, ... (2^n and
 * 3 2^n), the largest that keeps the step at least sqrt(work * slack /
 * RN_GRID_POINTS) (a step up to twice the overhead when the overhead is
 * below that: k = 1); an overhead under half of that bound is planned as
 * none (k = 0) on a ladder of steps sqrt(2) apart from 1 s. The ladders
 * let jobs of many shapes share a few tables (rn_cache.h). Fills
 * step_ms, k, nw and ns of *p. */
void rn_grid(double work_ms, double slack_ms, double overhead_ms,
             struct rn_params *p);

#endif
