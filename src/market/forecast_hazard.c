/* Preemption hazard from capacity histories: see forecast.h for the
 * contract and docs/forecast.md for the reasoning. */
#include <stdint.h>
#include <string.h>

#include "market/forecast.h"
#include "market/forecast_impl.h"

#define HOUR EBB_MS_PER_HOUR

/* Preemption hazard.
 *
 * A capacity history says when an offer could be had (capacity > 0) and
 * when it could not (0). Each fall from > 0 to 0 is counted as one loss of
 * an instance held there; the exposure is the time spent at capacity > 0
 * (rows with -1, unknown or unlimited, count as neither). Losses ebb saw
 * itself are pooled with these as one Poisson process:
 *     rate = (drops + observed_losses) / (available_hours + observed_hours),
 * the posterior mean under the improper Gamma(0, 0) prior, so a history
 * with no drop and no loss gives exactly 0 and any loss raises the rate. */
struct drops {
    double hours;    /* exposure, instance-availability hours */
    unsigned n;      /* drops to zero */
    double by_hour_hours[24];
    unsigned by_hour_n[24];
};

static void add_exposure(struct drops *d, ebb_time_ms from, ebb_time_ms to,
                         int by_hour)
{
    d->hours += (double)(to - from) / (double)HOUR;
    if (!by_hour)
        return;
    while (from < to) {
        ebb_time_ms hour_end = (ebb__fc_floor_div(from, HOUR) + 1) * HOUR;
        ebb_time_ms end = hour_end < to ? hour_end : to;
        d->by_hour_hours[ebb__fc_hour_class(from, 24)] += (double)(end - from) /
                                               (double)HOUR;
        from = end;
    }
}

static void count_drops(const struct ebb__capacity_history *h,
                        ebb_time_ms origin, int by_hour, struct drops *d)
{
    memset(d, 0, sizeof *d);
    if (!h || !h->at || !h->capacity)
        return;
    size_t n = ebb__fc_first_at(h->at, h->n, origin);
    for (size_t i = 0; i < n; i++) {
        ebb_time_ms end = i + 1 < n ? h->at[i + 1] : origin;
        if (h->capacity[i] > 0)
            add_exposure(d, h->at[i], end, by_hour);
        if (i > 0 && h->capacity[i] == 0 && h->capacity[i - 1] > 0) {
            d->n++;
            d->by_hour_n[ebb__fc_hour_class(h->at[i], 24)]++;
        }
    }
}

double ebb__preemption_hazard(const struct ebb__capacity_history *h,
                              ebb_time_ms origin, unsigned observed_losses,
                              double observed_hours)
{
    struct drops d;
    count_drops(h, origin, 0, &d);
    if (!(observed_hours > 0.0))
        observed_hours = 0.0;
    double events = (double)d.n + (double)observed_losses;
    double exposure = d.hours + observed_hours;
    if (events <= 0.0)
        return 0.0;
    /* Losses with no exposure at all: one hour is the least exposure that
     * a loss implies. */
    if (exposure < 1.0)
        exposure = 1.0;
    return events / exposure;
}

/* By hour of day: each hour's own drops and exposure, shrunk toward the
 * flat rate with a Gamma prior worth PRIOR_HOURS of exposure at that rate:
 *     rate[k] = (drops[k] + PRIOR_HOURS * flat) / (hours[k] + PRIOR_HOURS).
 * With a few days of history each hour has a few hours of exposure and
 * the flat rate dominates; after weeks an hour's own record takes over.
 * Seven days of history give each hour 7 hours of exposure, and that is
 * where an hour's own record and the flat rate weigh the same. */
#define PRIOR_HOURS 7.0

int ebb__preemption_hazard_by_hour(const struct ebb__capacity_history *h,
                                   ebb_time_ms origin, double out[24])
{
    if (!out)
        return EBB_EINVAL;
    struct drops d;
    count_drops(h, origin, 1, &d);
    double flat = d.n > 0 ? (double)d.n / (d.hours < 1.0 ? 1.0 : d.hours)
                          : 0.0;
    for (int k = 0; k < 24; k++)
        out[k] = ((double)d.by_hour_n[k] + PRIOR_HOURS * flat) /
                 (d.by_hour_hours[k] + PRIOR_HOURS);
    return 0;
}

unsigned ebb__period_bucket(ebb_dur_ms ms)
{
    unsigned b = 0;
    for (ebb_dur_ms m = ms / 60000; m >= 2 && b + 1 < EBB_PERIOD_BUCKETS; m /= 2)
        b++;
    return b;
}

/* Alternating renewal record: one pass over the rows before the origin.
 * A period's state is whether capacity is > 0; it begins at a change of
 * state between known rows (a first known row begins an unknown one). */
void ebb__availability_record(const struct ebb__capacity_history *h,
                              ebb_time_ms origin, struct ebb__avail_record *out)
{
    memset(out, 0, sizeof *out);
    if (!h || !h->at || !h->capacity)
        return;
    size_t n = ebb__fc_first_at(h->at, h->n, origin);
    int prev = -1;          /* -1 unknown, 0 down, 1 up */
    ebb_time_ms begin = 0;  /* of the period in effect; 0 unknown */
    for (size_t i = 0; i < n; i++) {
        int state = h->capacity[i] < 0 ? -1 : h->capacity[i] > 0;
        if (state == prev)
            continue;
        if (prev >= 0 && state >= 0 && begin > 0) {
            unsigned b = ebb__period_bucket(h->at[i] - begin);
            if (prev == 1)
                out->up[b]++;
            else
                out->down[b]++;
        }
        begin = prev >= 0 && state >= 0 ? h->at[i] : 0;
        prev = state;
    }
    out->since = prev >= 0 ? begin : 0;
}
