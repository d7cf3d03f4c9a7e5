/* Histograms of observations in seconds, with caller-chosen bucket bounds:
 * what ebbd's metrics export (checkpoint durations, event-loop lag). Kept
 * apart from the exposition format so that the engine can count into one
 * without depending on the metrics renderer. */
#ifndef EBB_BASE_HISTOGRAM_H
#define EBB_BASE_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define EBB__HISTOGRAM_MAX_BOUNDS 16

/* A histogram: counts per bucket, with bucket upper bounds (seconds,
 * ascending, +Inf implied) borrowed from the caller. */
struct ebb__histogram {
    const double *bounds;
    size_t n_bounds;
    uint64_t counts[EBB__HISTOGRAM_MAX_BOUNDS + 1]; /* per bucket, not cumulative */
    uint64_t count;
    double sum;
};

/* Empties `h` and sets its bounds (`n` at most EBB__HISTOGRAM_MAX_BOUNDS,
 * ascending). Returns 0 or EBB_EINVAL. */
int ebb__histogram_init(struct ebb__histogram *h, const double *bounds,
                        size_t n);

/* Counts one observation (seconds) in the first bucket whose bound is at
 * least `v`. NaN is not counted (it would poison _sum). */
void ebb__histogram_observe(struct ebb__histogram *h, double v);

#endif
