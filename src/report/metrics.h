/* ebbd's metrics in the Prometheus text exposition format (version 0.0.4).
 *
 * The daemon keeps the current values in a struct ebb__metrics (plain
 * numbers and borrowed arrays, filled on the loop) and renders it for each
 * scrape of the metrics endpoint. docs/metrics.md lists every metric.
 *
 * Rendering follows the format's rules: one HELP and one TYPE line per
 * family, before its samples; label values escaped (\\, \", \n); counters
 * end in _total; times are in seconds; histograms give cumulative _bucket
 * samples ending in le="+Inf", then _sum and _count.
 */
#ifndef EBB_METRICS_H
#define EBB_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>

#include "base/histogram.h"

/* The Content-Type of the rendered text. */
#define EBB__METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Bucket bounds that suit the two histograms ebbd keeps. */
extern const double ebb__metrics_checkpoint_bounds[];
extern const size_t ebb__metrics_checkpoint_n_bounds;
extern const double ebb__metrics_lag_bounds[];
extern const size_t ebb__metrics_lag_n_bounds;

/* Jobs in one state now. */
struct ebb__metrics_jobs {
    const char *state;
    int64_t count;
};

/* Money in one currency since the ledger began, in micro-units. */
struct ebb__metrics_money {
    const char *currency;
    ebb_micros spend;    /* the ledger's sum */
    ebb_micros savings;  /* against on-demand, as `ebb report` computes it */
};

/* Counters of one provider plugin since ebbd started. */
struct ebb__metrics_provider {
    const char *provider;
    uint64_t price_polls, price_poll_errors;
    uint64_t preemptions;
};

/* Everything one scrape shows. Arrays and strings are borrowed; NULL
 * histograms are left out. */
struct ebb__metrics {
    const char *version;                       /* ebb_build_info; may be NULL */
    double start_time;                         /* seconds since the epoch */
    const struct ebb__metrics_jobs *jobs;
    size_t n_jobs;
    const struct ebb__metrics_money *money;
    size_t n_money;
    const struct ebb__metrics_provider *providers;
    size_t n_providers;
    const struct ebb__histogram *checkpoint_duration;
    const struct ebb__histogram *loop_lag;
};

/* Renders `m` as exposition text in a new heap string (the caller frees),
 * or NULL when out of memory. */
char *ebb__metrics_render(const struct ebb__metrics *m);

#endif
