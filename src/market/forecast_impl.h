/* Shared by forecast.c, forecast_stats.c and forecast_hazard.c only. */
#ifndef EBB_FORECAST_IMPL_H
#define EBB_FORECAST_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>

/* a / m rounded towards minus infinity (m > 0). */
int64_t ebb__fc_floor_div(int64_t a, int64_t m);

/* Which of `period` hourly classes t falls in: the hour of day for 24,
 * the hour of week for 168 (hours since the epoch modulo period). */
int ebb__fc_hour_class(ebb_time_ms t, int period);

/* First index with at[i] >= t in an ascending array. */
size_t ebb__fc_first_at(const ebb_time_ms *at, size_t n, ebb_time_ms t);

/* A value with a non-negative weight, for ebb__fc_weighted_median(). */
struct ebb__fc_wpoint {
    double v, w;
};

/* The lower weighted median of p[0..n): a value m minimising
 * sum w_i |v_i - m|. Reorders p. Returns 0 for n == 0. */
double ebb__fc_weighted_median(struct ebb__fc_wpoint *p, size_t n);

#endif
