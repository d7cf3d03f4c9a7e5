/* Forecasting spot prices and spot availability. Pure functions: no I/O,
 * no clock, no globals; the same history always gives the same forecast.
 *
 * Prices are step functions: a series is its change times and the price
 * in effect from each until the next. A forecast looks only at rows before
 * its origin and describes the price in effect at each future step with a
 * median and a p10..p90 band.
 */
#ifndef EBB_FORECAST_H
#define EBB_FORECAST_H

#include <stddef.h>

#include <ebb/common.h>
#include <ebb/policy.h> /* struct ebb_forecast_point */

/* A price history, borrowed: n rows sorted by time, at[i] < at[i+1]. */
struct ebb__price_history {
    const ebb_time_ms *at;
    const ebb_micros *price;
    size_t n;
};

/* The price model's free constant (docs/forecast.md, "Model"). The
 * forecast is last + w_level z_level + w_season z_season + w_trend
 * z_trend, each weight fitted on the series' own replayed origins and
 * shrunk toward 0 (the last value) with a prior worth `prior_origins`
 * origins (>= 0, finite); the drift's window and damping are chosen per
 * series by the same fit. */
struct ebb__forecast_model {
    double prior_origins;
};

/* The constant ebb__forecast_prices() uses, chosen by bench-forecast's
 * leave-one-trace-out search over the shipped traces. */
extern const struct ebb__forecast_model ebb__forecast_default_model;

/* Forecasts the price in effect at origin + k*step for k = 1..n_steps,
 * using only rows with at < origin, into out[0..n_steps). Each point has
 * p10 <= p50 <= p90. Returns 0; EBB_ENOTFOUND when no row is before the
 * origin; EBB_EINVAL for step <= 0 or n_steps == 0; EBB_ENOMEM. */
int ebb__forecast_prices(const struct ebb__price_history *h, ebb_time_ms origin,
                         ebb_dur_ms step, size_t n_steps,
                         struct ebb_forecast_point *out);

/* ebb__forecast_prices() with the given constant instead of the default
 * one (for the bench's cross-validation). Same arguments, same returns;
 * EBB_EINVAL also for a constant out of range. */
int ebb__forecast_prices_model(const struct ebb__forecast_model *m,
                               const struct ebb__price_history *h,
                               ebb_time_ms origin, ebb_dur_ms step,
                               size_t n_steps, struct ebb_forecast_point *out);

/* Quantile q (0..1) of v[0..n), linear between order statistics (the
 * usual "type 7"), by quickselect. Reorders v. n > 0. Shared with the
 * quotes of `ebb plan` (report/plan.c). */
double ebb__fc_quantile(double *v, size_t n, double q);

/* A spot capacity history, borrowed: n rows sorted by time, capacity in
 * effect from at[i] (-1 unknown or unlimited, 0 none, else instances). */
struct ebb__capacity_history {
    const ebb_time_ms *at;
    const int32_t *capacity;
    size_t n;
};

/* Estimated preemption hazard (expected losses per instance-hour) for
 * spot instances of one offer, from its capacity history before `origin`
 * and from preemptions ebb observed there itself (`observed_losses` over
 * `observed_hours` instance-hours; pass 0 and 0 when none). Returns a
 * non-negative rate; 0 when nothing suggests a risk. */
double ebb__preemption_hazard(const struct ebb__capacity_history *h,
                              ebb_time_ms origin, unsigned observed_losses,
                              double observed_hours);

/* The same hazard by hour of day (UTC): out[k] is the expected losses per
 * instance-hour for hours starting at k:00, from drops in the capacity
 * history before `origin` at that hour, shrunk toward the flat rate where
 * an hour has little exposure (see forecast.c). With no drop at all every
 * entry is 0. Returns 0, or EBB_EINVAL when out is NULL. */
int ebb__preemption_hazard_by_hour(const struct ebb__capacity_history *h,
                                   ebb_time_ms origin, double out[24]);

/* The capacity history before `origin` as alternating up (capacity > 0)
 * and down (capacity 0) periods, for struct ebb_offer's record: the
 * lengths of the periods that ended there, counted in EBB_PERIOD_BUCKETS
 * log2 buckets of minutes, and when the period in effect at `origin`
 * began (0 when it began at the first row, before which nothing is
 * known, or the history says nothing). Rows of -1 (unknown) end no
 * period and start none: a period across them is not counted. */
struct ebb__avail_record {
    unsigned up[EBB_PERIOD_BUCKETS], down[EBB_PERIOD_BUCKETS];
    ebb_time_ms since;
};
void ebb__availability_record(const struct ebb__capacity_history *h,
                              ebb_time_ms origin, struct ebb__avail_record *out);

/* The bucket of a period `ms` long (see struct ebb__avail_record). */
unsigned ebb__period_bucket(ebb_dur_ms ms);

#endif
