/* Price and availability traces: recorded market history that `ebb
 * backtest` and the `sim` provider replay.
 *
 * Both are CSV files (see data/README.md). A trace holds several series; a
 * series is one thing observed over time (one instance type in one zone).
 * Each row's value holds from its timestamp until that series' next row: a
 * step function, so "the value at t" is the last row at or before t and
 * "the next event" is the first row after t.
 *
 * Price traces have the header
 *   timestamp_utc,provider,region,zone,instance_type,product,price_usd_per_hour
 * and a series is (provider, region, zone, instance_type, product); region,
 * zone and product may be empty. Availability traces have the header
 *   timestamp_utc,provider,zone,instance_type,available
 * where `available` is the spot capacity, in instances, from that time until
 * the series' next row (0: none); a series is (provider, zone,
 * instance_type).
 *
 * Rules for both: rows of one series must not go back in time (series may
 * be contiguous or interleaved); of rows with equal timestamps the later one
 * wins. Loading checks every row and reports the first problem as
 * "file:line: message". Loading is O(n log n) in the rows; lookups are
 * binary searches. A loaded trace is immutable and may be shared between
 * threads.
 */
#ifndef EBB_TRACE_H
#define EBB_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common.h"

#include "diag.h"

struct ebb_price_series {
    char *provider, *region, *zone, *instance_type, *product;
    size_t n;           /* rows, at least 1 */
    ebb_time_ms *at;    /* strictly increasing */
    ebb_micros *price;  /* USD per hour, from at[i] until at[i + 1] */
};

struct ebb_price_trace {
    char *path;                       /* as given to the loader */
    struct ebb_price_series *series; /* sorted by key, see _find() */
    size_t n_series;
    ebb_time_ms first_at, last_at;    /* earliest and latest row */
};

struct ebb_avail_series {
    char *provider, *zone, *instance_type;
    size_t n;           /* rows, at least 1 */
    ebb_time_ms *at;    /* strictly increasing */
    int32_t *available; /* instances, from at[i] until at[i + 1] */
};

struct ebb_avail_trace {
    char *path;
    struct ebb_avail_series *series; /* sorted by key */
    size_t n_series;
    ebb_time_ms first_at, last_at;
};

/* Loads the price trace at `path`. On success stores a new trace in *out
 * (free it with ebb_price_trace_free()) and returns 0. Otherwise returns
 * EBB_EINVAL (malformed file), EBB_EIO (unreadable) or EBB_ENOMEM, with
 * "file:line: message" in `d` (which may be NULL), and *out is untouched.
 * Prices are parsed exactly into micro-USD; digits beyond the sixth decimal
 * are rounded half up. A file with a header and no rows is an error. */
int ebb_price_trace_load(const char *path, struct ebb_price_trace **out,
                          struct ebb_diag *d);

/* Frees a trace from ebb_price_trace_load(). NULL is a no-op. */
void ebb_price_trace_free(struct ebb_price_trace *t);

/* The index in t->series of the series with this key, or EBB_ENOTFOUND.
 * All strings are compared exactly ("" for an empty column). `product` may
 * be NULL to take the first series (in key order) that matches the other
 * four, e.g. when a trace has a single product per instance type. */
ssize_t ebb_price_trace_find(const struct ebb_price_trace *t,
                              const char *provider, const char *region,
                              const char *zone, const char *instance_type,
                              const char *product);

/* The price in effect at time `t` (the last row at or before t) into
 * *price. Returns 0, or EBB_ENOTFOUND when t is before the first row. The
 * last row holds forever after. */
int ebb_price_series_at(const struct ebb_price_series *s, ebb_time_ms t,
                         ebb_micros *price);

/* The time of the first row after `t`, or INT64_MAX when there is none. A
 * row may repeat the previous price: this is the next row, not necessarily
 * the next different price. */
ebb_time_ms ebb_price_series_next_change(const struct ebb_price_series *s,
                                          ebb_time_ms t);

/* Like ebb_price_trace_load() for an availability trace. `available` must
 * be an integer from 0 to 2147483647. */
int ebb_avail_trace_load(const char *path, struct ebb_avail_trace **out,
                          struct ebb_diag *d);

/* Frees a trace from ebb_avail_trace_load(). NULL is a no-op. */
void ebb_avail_trace_free(struct ebb_avail_trace *t);

/* The index in t->series of (provider, zone, instance_type), or
 * EBB_ENOTFOUND. */
ssize_t ebb_avail_trace_find(const struct ebb_avail_trace *t,
                              const char *provider, const char *zone,
                              const char *instance_type);

/* The capacity in effect at `t` into *available. Returns 0, or
 * EBB_ENOTFOUND when t is before the first row. */
int ebb_avail_series_at(const struct ebb_avail_series *s, ebb_time_ms t,
                         int32_t *available);

/* The time of the first row after `t`, or INT64_MAX. */
ebb_time_ms ebb_avail_series_next_change(const struct ebb_avail_series *s,
                                          ebb_time_ms t);

/* How an availability trace recorded in another period than its prices is
 * replayed when that is asked for (the sim's `align_availability`, `ebb
 * backtest --align-availability`): when the traces do not overlap, row
 * time r is replayed at start + k * period + (r - orig_first) for cycle
 * k = 0, 1, ... up to `end` (the prices' last row), after which capacity
 * holds still. Traces that overlap are used as recorded (shifted 0). */
struct ebb_avail_alignment {
    int shifted;
    ebb_time_ms start;      /* the prices' first row */
    ebb_time_ms orig_first; /* the availability's first row */
    ebb_time_ms period;     /* the availability's span */
    ebb_time_ms end;        /* the prices' last row */
};

/* The alignment of availability `a` over prices `p`. */
struct ebb_avail_alignment ebb_avail_trace_align(const struct ebb_avail_trace *a,
                                                 const struct ebb_price_trace *p);

/* Parses a non-negative decimal amount ("0.918", "12", "3.5", ".5" is
 * rejected) into micro-units, exactly: up to 6 decimals as integers, more
 * rounded half up on the seventh, at most EBB_MONEY_MAX (units.h). An
 * amount above 0 that would round to 0 (0.0000004) is refused, never
 * silently made 0. Returns 0, or EBB_EINVAL with a short reason in *why
 * ("is negative", "is not a number", "is too large", "is more than
 * 1000000000, ...", "is below 0.000001, ...").
 * Shared with the catalog. */
int ebb_parse_decimal_micros(const char *s, ebb_micros *out,
                              const char **why);

#endif
