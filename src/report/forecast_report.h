/* Forecast reports: price forecasts of many series as one JSON document,
 * and that document as a table for people. Shared by `ebb forecast
 * --prices` (series from a CSV trace, in the CLI process) and ebbd's
 * `forecast` API method (series from the store), so both print the same.
 *
 * The document is
 *   {"forecasts": [{"provider", "region", "zone", "instance_type",
 *                   "product", ["market",] "current_price",
 *                   "current_price_at",
 *                   "points": [{"t", "p10", "p50", "p90"}, ...]}, ...]}
 * with times as ISO-8601 UTC strings and prices as decimal USD per hour
 * (JSON numbers). `current_price` is the price in effect at the origin (the
 * last row before it) and `current_price_at` that row's time. A series
 * with no row before the origin has nothing to forecast from and is left
 * out.
 */
#ifndef EBB_FORECAST_REPORT_H
#define EBB_FORECAST_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include <ebb/common.h>
#include <ebb/diag.h>
#include <ebb/trace.h>

#include "store/store.h"

/* The most points one forecast may have (horizon / step). */
#define EBB__FORECAST_MAX_POINTS 10000

/* What to forecast: points at origin + k*step for k = 1..n_steps. */
struct ebb__forecast_opts {
    ebb_time_ms origin;
    ebb_dur_ms step;
    size_t n_steps;
    /* When non-zero, the most points a whole report may hold (series times
     * n_steps); more is EBB_EINVAL with a message saying how to narrow it.
     * ebbd sets it so that an answer fits in one API message. */
    size_t max_total_points;
};

/* The number of points for `horizon` and `step` into *n: horizon / step,
 * rounded down. Returns 0, or EBB_EINVAL with a short reason in *why (a
 * static string) when step <= 0, horizon < step, or the count is beyond
 * EBB__FORECAST_MAX_POINTS. */
int ebb__forecast_count_steps(ebb_dur_ms horizon, ebb_dur_ms step, size_t *n,
                              const char **why);

/* Forecasts every series of the trace `t` (borrowed) matching `f` (NULL
 * fields, or f NULL: all), in the trace's key order. On success stores the
 * document in *out (caller decrefs) and returns 0. Otherwise returns
 * EBB_EINVAL (bad options, too many points) or EBB_ENOMEM with a message in
 * `d` (may be NULL). */
int ebb__forecast_report_trace(const struct ebb_price_trace *t,
                               const struct ebb__price_filter *f,
                               const struct ebb__forecast_opts *o,
                               json_t **out, struct ebb_diag *d);

/* Builds a document from store rows (ebb__store_price_history()): rows of
 * one series (provider, region, zone, instance type, product, market) must
 * come together, in time order. Such documents also carry "market" in
 * each forecast. */
struct ebb__forecast_acc;

/* A new accumulator for `o` (copied), or NULL when out of memory. */
struct ebb__forecast_acc *ebb__forecast_acc_new(const struct ebb__forecast_opts *o);

/* Adds one row (borrowed; copied as needed). Returns 0, EBB_EINVAL (rows
 * out of order, too many points; message in `d`) or EBB_ENOMEM. After a
 * failure only _free() may be called. */
int ebb__forecast_acc_add(struct ebb__forecast_acc *acc,
                          const struct ebb__price_row *row,
                          struct ebb_diag *d);

/* Forecasts the last series and stores the document in *out (caller
 * decrefs). Returns 0 or an error as _add() does. The accumulator stays
 * the caller's: free it with _free() either way. */
int ebb__forecast_acc_finish(struct ebb__forecast_acc *acc, json_t **out,
                             struct ebb_diag *d);

/* Frees an accumulator. NULL is a no-op. */
void ebb__forecast_acc_free(struct ebb__forecast_acc *acc);

/* Prints a document as text: per series a name line, the current price,
 * up to three troughs of the median forecast (its lowest local minima, in
 * time order) and a one-line sparkline of the median in the block
 * characters U+2581..U+2588 (a flat forecast is a flat line). `empty` is
 * printed when there is no forecast (may be NULL). */
void ebb__forecast_report_print(json_t *doc, FILE *out, const char *empty);

#endif
