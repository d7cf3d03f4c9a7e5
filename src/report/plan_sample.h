/* The futures `ebb plan` samples (private to report/): price paths drawn
 * from the forecaster's distribution and spot outages drawn from the
 * preemption hazard. Pure functions of their arguments and a seeded
 * generator, so the same seed always gives the same futures.
 */
#ifndef EBB_REPORT_PLAN_SAMPLE_H
#define EBB_REPORT_PLAN_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>
#include <ebb/policy.h> /* struct ebb_forecast_point */

/* A small generator (splitmix64): its whole state is one word, so each
 * sample seeds its own from (seed, sample index) and sample i is the same
 * whatever the number of samples. */
struct ebb__plan_rng {
    uint64_t s;
};

/* Seeds `r` for stream `stream` (a sample index) of `seed`. */
void ebb__plan_rng_seed(struct ebb__plan_rng *r, uint64_t seed, uint64_t stream);

/* A uniform draw in (0, 1), never 0 or 1. */
double ebb__plan_rng_uniform(struct ebb__plan_rng *r);

/* A standard normal draw (Box-Muller). */
double ebb__plan_rng_normal(struct ebb__plan_rng *r);

/* How long a sampled price path remembers: its normal scores follow an
 * AR(1) process whose correlation over a time t is exp(-t / 24 h). Chosen
 * a priori (spot prices move over days, not hours), not fitted to the
 * shipped traces. */
#define EBB__PLAN_PATH_MEMORY (24 * EBB_MS_PER_HOUR)

/* The price at a normal score `z` under a forecast point: p50 at 0, p10
 * and p90 at -/+1.2816 (their normal scores), linear between and beyond,
 * and never below half of p10 (a spot price stays positive). */
ebb_micros ebb__plan_price_at(const struct ebb_forecast_point *p, double z);

/* One price path over the forecast fc[0..n): out[k] is the price at fc[k],
 * with scores that follow an AR(1) process of correlation `rho` from one
 * step to the next (0: each step drawn alone), each step's marginal
 * being the forecast's distribution at that step. */
void ebb__plan_sample_path(const struct ebb_forecast_point *fc, size_t n,
                           double rho, struct ebb__plan_rng *r, ebb_micros *out);

/* Spot outages over [from, until): a Poisson process of `hazard` losses
 * per hour of capacity, each outage lasting an exponential time of mean
 * `mean_down`. Writes at most `max` [start, end) pairs into starts/ends in
 * time order, not overlapping (an outage starts after the last ended),
 * and returns how many. hazard <= 0: none. */
size_t ebb__plan_sample_outages(double hazard, ebb_dur_ms mean_down,
                                ebb_time_ms from, ebb_time_ms until,
                                struct ebb__plan_rng *r, ebb_time_ms *starts,
                                ebb_time_ms *ends, size_t max);

#endif
