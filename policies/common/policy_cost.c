/* The expected cost of finishing on an offer, from its forecast, its
 * preemption hazard and the restart overhead; and the budget and safety
 * guards built on it. Shared by the deadline and trough policies. */

#include "policy_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- expected cost, risk and safety ------------------------------------- */

double pu_checkpoint_ms(const struct ebb_job_view *job, ebb_dur_ms fallback)
{
    if (job != NULL && job->checkpoint_every > 0)
        return (double)job->checkpoint_every;
    return fallback > 0 ? (double)fallback : 0;
}

double pu_unsaved(const struct pu_ctx *c)
{
    double u = (double)c->job->work_done - (double)c->job->work_saved;
    return u > 0 && isfinite(u) ? u : 0;
}

static double rate(double l)
{
    return isfinite(l) && l > 0 ? l : 0;
}

/* The hazard of a run on offer k over [start, start + span) (ms): the
 * flat preemption_per_hour, or with a hazard by hour of day the mean of
 * the hours the run covers, each weighted by the time spent in it. A
 * run of no length takes its start hour's rate. */
static double hazard_over(const struct pu_ctx *c, size_t k, double start,
                          double span)
{
    const double *by = pu_hazard_by_hour(c, k);
    if (by == NULL || !isfinite(start) || !isfinite(span) || !(span >= 0) ||
        !(fabs(start) < 1e15))
        return rate(pu_offer(c, k)->preemption_per_hour);
    const double hour = (double)EBB_MS_PER_HOUR, day = 24 * hour;
    double h = fmod(floor(start / hour), 24);
    if (h < 0)
        h += 24;
    if (!(span > 0))
        return rate(by[(int)h]);
    double days = floor(span / day), sum = 0, whole_day = 0;
    for (int i = 0; i < 24; i++)
        whole_day += rate(by[i]);
    /* Whole days first, then the hours of the last part day. */
    double t = start + days * day, end = start + span, total = days * whole_day;
    while (t < end) {
        double next = (floor(t / hour) + 1) * hour;
        double stop = next < end ? next : end;
        sum += rate(by[(int)h]) * (stop - t) / hour;
        t = stop;
        h = h == 23 ? 0 : h + 1;
    }
    return (total + sum) / (span / hour);
}

/* The least hazard_over() can give on offer k, whatever the start. */
static double hazard_least(const struct pu_ctx *c, size_t k)
{
    const double *by = pu_hazard_by_hour(c, k);
    if (by == NULL)
        return rate(pu_offer(c, k)->preemption_per_hour);
    double least = rate(by[0]);
    for (int i = 1; i < 24; i++)
        if (rate(by[i]) < least)
            least = rate(by[i]);
    return least;
}

double pu_loss_ms(const struct pu_ctx *c, size_t k, const struct pu_model *m)
{
    if (k >= c->n || !pu_usable(pu_offer(c, k)))
        return INFINITY;
    double loss = pu_restart_ms(c);
    if (m->lose_unsaved && m->checkpoint_ms > 0)
        loss += m->checkpoint_ms / (2.0 * pu_offer(c, k)->speed);
    return loss;
}

/* Expected wall ms on k for a run from absolute time `start` (ms);
 * `restart` says whether a start is counted. */
static double expected_ms(const struct pu_ctx *c, size_t k, int restart,
                          const struct pu_model *m, double start)
{
    double h0 = pu_wall_ms(c, k) + (restart ? pu_restart_ms(c) : 0);
    double rework = hazard_over(c, k, start, h0) * pu_loss_ms(c, k, m) /
                    (double)EBB_MS_PER_HOUR;
    return h0 * (1.0 + rework);
}

/* The least expected_ms() can give on k, whatever the start. */
static double expected_ms_least(const struct pu_ctx *c, size_t k, int restart,
                                const struct pu_model *m)
{
    double h0 = pu_wall_ms(c, k) + (restart ? pu_restart_ms(c) : 0);
    double rework = hazard_least(c, k) * pu_loss_ms(c, k, m) /
                    (double)EBB_MS_PER_HOUR;
    return h0 * (1.0 + rework);
}

double pu_expected_delays_ms(const struct pu_ctx *c, size_t k,
                             const struct pu_model *m, double start,
                             double run_ms)
{
    if (k >= c->n || !pu_usable(pu_offer(c, k)))
        return INFINITY;
    return hazard_over(c, k, start, run_ms) * run_ms /
           (double)EBB_MS_PER_HOUR * pu_loss_ms(c, k, m);
}

double pu_expected_hours(const struct pu_ctx *c, size_t k,
                         const struct pu_model *m)
{
    if (k >= c->n || !pu_usable(pu_offer(c, k)))
        return INFINITY;
    return expected_ms(c, k, k != c->running, m, (double)c->now) /
           (double)EBB_MS_PER_HOUR;
}

/* A forecast the engine left without points is no forecast. */
static size_t n_points(const struct ebb_offer *o)
{
    return o->forecast != NULL ? o->n_forecast : 0;
}

static double point_price(const struct ebb_forecast_point *p, int band)
{
    ebb_micros v = band <= 10 ? p->p10 : band >= 90 ? p->p90 : p->p50;
    return v > 0 ? (double)v : 0;
}

double pu_price_at(const struct pu_ctx *c, size_t k, double t, int band)
{
    if (k >= c->n)
        return INFINITY;
    const struct ebb_offer *o = pu_offer_fc(c, k);
    double price = o->price_per_hour > 0 ? (double)o->price_per_hour : 0;
    /* Points are in time order; the last one at or before t holds. The
     * price now is known, so points at or before now do not replace it. An
     * out-of-order point ends the scan, so bad input stays deterministic. */
    for (size_t i = 0; i < n_points(o); i++) {
        if (o->forecast[i].at <= c->now)
            continue;
        if ((double)o->forecast[i].at > t)
            break;
        price = point_price(&o->forecast[i], band);
    }
    return price;
}

/* The integral as first written, point by point in floating point: the
 * reference the fast path below must match, and the answer for forecasts
 * it does not take (points out of order, sums too large to be exact). */
static double span_slow(const struct pu_ctx *c, size_t k, double start,
                        double end, int band)
{
    const struct ebb_offer *o = pu_offer_fc(c, k);
    double t = start, price = pu_price_at(c, k, start, band), sum = 0;
    for (size_t i = 0; i < n_points(o); i++) {
        double at = (double)o->forecast[i].at;
        if (o->forecast[i].at <= c->now || at <= t)
            continue;
        if (at >= end)
            break;
        sum += price * (at - t);
        t = at;
        price = point_price(&o->forecast[i], band);
    }
    sum += price * (end - t);
    return sum / (double)EBB_MS_PER_HOUR;
}

/* The fast path. Prices are whole micros and times whole milliseconds, so
 * every step's price * duration is a whole number, and so is every partial
 * sum: while they stay below 2^53 the floating-point sum above is exact
 * and equals the same sum in int64. Summing in int64 (no rounding, no
 * floating-point dependency chain) therefore gives the very same bits, as
 * long as each price is at most 2^31 micros per hour, each step at most
 * 2^22 ms (70 minutes) so that one term stays under 2^53, times are under
 * 2^52 and the points after now are in increasing order. Anything else
 * falls back to span_slow(). */
#define FAST_PRICE_MAX (INT64_C(1) << 31)
#define FAST_STEP_MAX (INT64_C(1) << 22)
#define FAST_SUM_LIMIT (INT64_C(1) << 53)
#define FAST_TIME_MAX (INT64_C(1) << 52)

static int fast_time(ebb_time_ms t)
{
    return t > -FAST_TIME_MAX && t < FAST_TIME_MAX;
}

static int64_t int_price(const struct ebb_forecast_point *p, int band)
{
    ebb_micros v = band <= 10 ? p->p10 : band >= 90 ? p->p90 : p->p50;
    return v > 0 ? v : 0;
}

/* Returns 1 with *out set, 0 when the fast path does not apply, 2 when
 * the whole steps alone pass `limit` (micros * ms; INT64_MAX for none):
 * the caller's proof that the cost is higher than what it asked about.
 * The scan ends at the first point at or after `end`, as span_slow's does;
 * points it never reaches are never checked, by either. */
static int span_fast(const struct pu_ctx *c, size_t k, double start,
                     double end, int band, int64_t limit, double *out)
{
    const struct ebb_offer *o = pu_offer_fc(c, k);
    if (!fast_time(c->now) || !(fabs(start) < (double)FAST_TIME_MAX) ||
        start != floor(start) || !(end < (double)FAST_TIME_MAX))
        return 0;
    const struct ebb_forecast_point *f = o->forecast;
    size_t n = n_points(o), i = 0;
    int64_t from = (int64_t)start;
    int64_t price = o->price_per_hour > 0 ? o->price_per_hour : 0;
    if (price > FAST_PRICE_MAX)
        return 0;
    /* Points at or before now are ignored; on the fast path they all come
     * first. The points after now up to the start set the price in effect
     * at the start. */
    while (i < n && f[i].at <= c->now)
        i++;
    ebb_time_ms prev = c->now;
    for (; i < n && f[i].at <= from; i++) {
        if (f[i].at <= prev)
            return 0;
        price = int_price(&f[i], band);
        if (price > FAST_PRICE_MAX)
            return 0;
        prev = f[i].at;
    }
    /* For a whole number at, (double)at >= end exactly when at >= ceil(end). */
    int64_t stop = (int64_t)ceil(end), t = from, sum = 0;
    int64_t most = limit < FAST_SUM_LIMIT ? limit : FAST_SUM_LIMIT - 1;
    for (; i < n; i++) {
        ebb_time_ms at = f[i].at;
        if (at >= stop)
            break;
        /* In order (so after now and the start) and a step in range; at <
         * stop <= 2^52 keeps at - t from overflowing. */
        if (at <= t || at <= prev || at - t > FAST_STEP_MAX)
            return 0;
        ebb_micros p = band <= 10 ? f[i].p10 : band >= 90 ? f[i].p90
                                                         : f[i].p50;
        if (p < 0 || p > FAST_PRICE_MAX)
            return 0;
        sum += price * (at - t);
        if (sum > most)
            return sum >= FAST_SUM_LIMIT ? 0 : 2;
        t = at;
        price = p;
    }
    *out = ((double)sum + (double)price * (end - (double)t)) /
           (double)EBB_MS_PER_HOUR;
    return 1;
}

double pu_cost_span(const struct pu_ctx *c, size_t k, double start,
                    double hours, int band)
{
    if (k >= c->n || !(hours >= 0) || !isfinite(hours) || !isfinite(start))
        return INFINITY;
    double end = start + hours * (double)EBB_MS_PER_HOUR;
    double cost;
    if (span_fast(c, k, start, end, band, INT64_MAX, &cost) == 1)
        return cost;
    return span_slow(c, k, start, end, band);
}

static int same_model(const struct pu_model *a, const struct pu_model *b)
{
    return a->checkpoint_ms == b->checkpoint_ms &&
           a->margin_ms == b->margin_ms && a->margin_frac == b->margin_frac &&
           a->lose_unsaved == b->lose_unsaved;
}

void pu_cache_attach(struct pu_ctx *c, struct pu_cost_cache *cache,
                     const struct pu_model *m)
{
    cache->m = *m;
    cache->n = c->n < PU_CACHE_OFFERS ? c->n : PU_CACHE_OFFERS;
    for (size_t k = 0; k < cache->n; k++) {
        cache->cost[k] = NAN;
        cache->above[k] = -INFINITY;
    }
    c->cache = cache;
}

static double expected_cost(const struct pu_ctx *c, size_t k, double delay_ms,
                            const struct pu_model *m)
{
    int restart = !(delay_ms == 0 && k == c->running);
    double ms = expected_ms(c, k, restart, m, (double)c->now + delay_ms);
    return pu_cost_span(c, k, (double)c->now + delay_ms,
                        ms / (double)EBB_MS_PER_HOUR, 50) +
           pu_transfer_cost(c, k);
}

static struct pu_cost_cache *cache_for(const struct pu_ctx *c, size_t k,
                                       const struct pu_model *m)
{
    struct pu_cost_cache *cache = c->cache;
    return cache != NULL && k < cache->n && same_model(&cache->m, m) ? cache
                                                                     : NULL;
}

double pu_expected_cost(const struct pu_ctx *c, size_t k, double delay_ms,
                        const struct pu_model *m)
{
    if (k >= c->n || !pu_usable(pu_offer(c, k)) || !(delay_ms >= 0))
        return INFINITY;
    struct pu_cost_cache *cache = delay_ms == 0 ? cache_for(c, k, m) : NULL;
    if (cache == NULL)
        return expected_cost(c, k, delay_ms, m);
    if (isnan(cache->cost[k]))
        cache->cost[k] = expected_cost(c, k, 0, m);
    return cache->cost[k];
}

/* The whole steps' sum (micros * ms) past which a start now is proven to
 * cost more than `bound`: above (nextafter(bound) * 1 h) with a margin for
 * the rounding of this product, so that the cost, however rounded, comes
 * out above bound. INT64_MAX (no proof sought) for a bound that is not a
 * finite amount >= 0 or too large for the fast path. */
static int64_t prune_limit(double bound)
{
    if (!(bound >= 0) || !isfinite(bound))
        return INT64_MAX;
    double l = nextafter(bound, INFINITY) * (double)EBB_MS_PER_HOUR *
               (1.0 + 1e-9);
    return l < (double)FAST_SUM_LIMIT ? (int64_t)l : INT64_MAX;
}

/* pu_expected_cost(c, k, 0, m) when it might be <= bound: returns 1 with
 * *e set, or 0 when the cost is proven to be above `bound` (the forecast
 * integrated only as far as that proof needed). The rules look for the
 * cheapest offer, and most offers lose to the best one long before their
 * whole run is summed. */
static int cost_upto(const struct pu_ctx *c, size_t k, const struct pu_model *m,
                     double bound, double *e)
{
    if (k >= c->n || !pu_usable(pu_offer(c, k))) {
        *e = INFINITY;
        return 1;
    }
    struct pu_cost_cache *cache = cache_for(c, k, m);
    if (cache != NULL && !isnan(cache->cost[k])) {
        *e = cache->cost[k];
        return 1;
    }
    if (cache != NULL && cache->above[k] >= bound)
        return 0;
    /* The span has to stay under what the move's transfer leaves. */
    double move = pu_transfer_cost(c, k);
    int64_t limit = prune_limit(bound - move);
    if (limit != INT64_MAX) {
        double ms = expected_ms(c, k, k != c->running, m, (double)c->now);
        double hours = ms / (double)EBB_MS_PER_HOUR;
        if (hours >= 0 && isfinite(hours)) {
            double start = (double)c->now;
            double end = start + hours * (double)EBB_MS_PER_HOUR;
            int rc = span_fast(c, k, start, end, 50, limit, e);
            if (rc == 2) {
                if (cache != NULL && bound > cache->above[k])
                    cache->above[k] = bound;
                return 0;
            }
            if (rc == 1) {
                *e += move;
                if (cache != NULL)
                    cache->cost[k] = *e;
                return 1;
            }
        }
    }
    *e = pu_expected_cost(c, k, 0, m);
    return 1;
}

/* Checks that point i may follow point i - 1 on the fast path: in order
 * (hence after now), times and price in range. */
static int fast_next(const struct ebb_offer *o, size_t i)
{
    ebb_time_ms at = o->forecast[i].at, before = o->forecast[i - 1].at;
    return at > before && fast_time(at) && at - before <= FAST_STEP_MAX &&
           int_price(&o->forecast[i], 50) <= FAST_PRICE_MAX;
}

/* pu_cheapest_later() in one pass: a start at point s runs over the
 * points s..j before its end (the window), so its cost is the int64 sum of
 * the window's steps plus the last point's price for the rest. Both ends
 * of the window only move forward as s does. Returns 0 when the forecast
 * does not suit the fast path (see span_fast); else 1 with *best and *cost
 * as pu_expected_cost at every point would give. */
static int later_fast(const struct pu_ctx *c, size_t k, size_t end,
                      const struct pu_model *m, size_t *best, double *cost)
{
    const struct ebb_offer *o = pu_offer_fc(c, k);
    size_t n = n_points(o);
    if (!fast_time(c->now))
        return 0;
    /* One run length for every start: a hazard by hour makes it depend on
     * the start, and then the caller's point-by-point path applies. */
    if (pu_hazard_by_hour(c, k) != NULL)
        return 0;
    double hours = expected_ms(c, k, 1, m, (double)c->now) /
                   (double)EBB_MS_PER_HOUR;
    if (!(hours >= 0) || !isfinite(hours))
        return 1; /* every start costs INFINITY */
    double span = hours * (double)EBB_MS_PER_HOUR;
    size_t f = 0;
    while (f < end && o->forecast[f].at <= c->now)
        f++;
    if (f >= end)
        return 1;
    if (!fast_time(o->forecast[f].at) ||
        int_price(&o->forecast[f], 50) > FAST_PRICE_MAX)
        return 0;
    size_t j = f;
    int64_t sum = 0;
    for (size_t s = f; s < end; s++) {
        if (s > f && j < s) { /* the last window held no step */
            if (!fast_next(o, s))
                return 0;
            j = s;
            sum = 0;
        } else if (s > f) {
            sum -= int_price(&o->forecast[s - 1], 50) *
                   (o->forecast[s].at - o->forecast[s - 1].at);
        }
        double start = (double)o->forecast[s].at;
        double stop = start + span;
        while (j + 1 < n && (double)o->forecast[j + 1].at < stop) {
            if (!fast_next(o, j + 1))
                return 0;
            sum += int_price(&o->forecast[j], 50) *
                   (o->forecast[j + 1].at - o->forecast[j].at);
            if (sum >= FAST_SUM_LIMIT)
                return 0;
            j++;
        }
        double e = ((double)sum + (double)int_price(&o->forecast[j], 50) *
                                      (stop - (double)o->forecast[j].at)) /
                   (double)EBB_MS_PER_HOUR;
        if (e < *cost) {
            *best = s;
            *cost = e;
        }
    }
    return 1;
}

size_t pu_cheapest_later(const struct pu_ctx *c, size_t k, size_t end_index,
                         const struct pu_model *m, double *cost,
                         double *wait_ms)
{
    size_t best = PU_NONE;
    double best_cost = INFINITY;
    if (k < c->n && pu_usable(pu_offer(c, k))) {
        const struct ebb_offer *o = pu_offer_fc(c, k);
        size_t end = end_index < n_points(o) ? end_index : n_points(o);
        if (!later_fast(c, k, end, m, &best, &best_cost)) {
            best = PU_NONE;
            best_cost = INFINITY;
            for (size_t i = 0; i < end; i++) {
                double w = (double)o->forecast[i].at - (double)c->now;
                if (!(w > 0))
                    continue;
                double e = pu_expected_cost(c, k, w, m);
                if (e < best_cost) {
                    best = i;
                    best_cost = e;
                }
            }
        }
    }
    if (cost != NULL)
        *cost = best_cost;
    if (wait_ms != NULL)
        *wait_ms = best != PU_NONE ? (double)pu_offer_fc(c, k)->forecast[best].at -
                                         (double)c->now
                                   : 0;
    return best;
}

size_t pu_best_expected(const struct pu_ctx *c, int market_filter, size_t skip,
                        const struct pu_model *m, double *cost)
{
    size_t best = PU_NONE;
    double best_cost = INFINITY;
    for (size_t k = 0; k < c->n; k++) {
        if (k == skip || !pu_allowed(c, k) || !pu_ready(c, k))
            continue;
        if (market_filter >= 0 && (int)pu_offer(c, k)->market != market_filter)
            continue;
        double e = pu_expected_cost(c, k, 0, m);
        if (!isfinite(e))
            continue;
        if (best == PU_NONE || e < best_cost) {
            best = k;
            best_cost = e;
        }
    }
    if (cost != NULL)
        *cost = best_cost;
    return best;
}

double pu_floor_ms(const struct pu_ctx *c, size_t fb, const struct pu_model *m)
{
    if (fb >= c->n || !pu_usable(pu_offer(c, fb)))
        return INFINITY;
    double f = m->margin_ms + m->margin_frac * pu_wall_ms(c, fb);
    if (m->lose_unsaved)
        f += pu_unsaved(c) / pu_offer(c, fb)->speed;
    return f;
}

int pu_budget_fits(const struct pu_ctx *c, size_t k, const struct pu_model *m,
                   double *need, double *left)
{
    const struct ebb_job_view *job = c->job;
    double have = (double)job->budget - (double)job->spent;
    if (left != NULL)
        *left = have;
    if (need != NULL)
        *need = 0;
    if (job->budget <= 0)
        return 1;
    if (k >= c->n || !pu_usable(pu_offer(c, k)))
        return 0;
    double s = pu_offer(c, k)->speed;
    double ckpt = m->checkpoint_ms > 0 ? m->checkpoint_ms : c->remaining;
    /* Work to the next checkpoint: from the latest one when running on k,
     * a whole interval after a (re)start. */
    double work = ckpt;
    if (k == c->running) {
        work = (double)job->work_saved + ckpt - (double)job->work_done;
        if (!(work > 0))
            work = ckpt;
    }
    if (work > c->remaining)
        work = c->remaining;
    double ms = work / s + (k == c->running ? 0 : pu_restart_ms(c)) +
                (job->checkpoint_grace > 0 ? (double)job->checkpoint_grace : 0);
    /* The worst price over that span: now, or any p90 point inside it. */
    const struct ebb_offer *o = pu_offer_fc(c, k);
    double worst = pu_price_at(c, k, (double)c->now, 90);
    double now_price = o->price_per_hour > 0 ? (double)o->price_per_hour : 0;
    if (now_price > worst)
        worst = now_price;
    for (size_t i = 0; i < n_points(o); i++) {
        double at = (double)o->forecast[i].at;
        if (at > (double)c->now + ms)
            break;
        if (point_price(&o->forecast[i], 90) > worst)
            worst = point_price(&o->forecast[i], 90);
    }
    double cost = worst * ms / (double)EBB_MS_PER_HOUR;
    if (need != NULL)
        *need = cost;
    return cost <= have;
}

const char *pu_money_text(double micros, char buf[PU_MONEY_TEXT])
{
    if (!isfinite(micros))
        snprintf(buf, PU_MONEY_TEXT, "%s", micros < 0 ? "-inf" : "inf");
    else if (!pu_fixed2(micros / 1e6, buf, PU_MONEY_TEXT))
        snprintf(buf, PU_MONEY_TEXT, "%.2f", micros / 1e6);
    return buf;
}

void pu_guard_init(const struct pu_ctx *c, const struct pu_model *m,
                   struct pu_guard *g)
{
    memset(g, 0, sizeof(*g));
    g->od = PU_NONE;
    g->q = INFINITY;
    g->d = pu_restart_ms(c);
    if (c->job->market != EBB_JOB_SPOT_FALLBACK || !pu_has_deadline(c))
        return;
    g->od = pu_od_choice(c);
    if (g->od == PU_NONE)
        return;
    g->on = 1;
    g->q = pu_slack_fresh(c, g->od);
    g->floor = pu_floor_ms(c, g->od, m);
}

int pu_guard_market_ok(const struct pu_ctx *c, const struct pu_guard *g,
                       size_t k)
{
    if (!pu_allowed(c, k))
        return 0;
    if (c->job->market == EBB_JOB_SPOT_FALLBACK && !g->on)
        return pu_offer(c, k)->market == EBB_MARKET_SPOT;
    return 1;
}

int pu_guard_spot_ok(const struct pu_ctx *c, const struct pu_guard *g,
                     size_t k, double extra_ms)
{
    if (!g->on || k >= c->n || pu_offer(c, k)->market != EBB_MARKET_SPOT)
        return 1;
    double start = k == c->running ? 0 : g->d;
    return g->q - start >= g->floor + extra_ms;
}

/* An offer pu_best_fit() may take, before price and budget. */
static int fit_ok(const struct pu_ctx *c, const struct pu_guard *g,
                  int market_filter, size_t skip, size_t k)
{
    if (k == skip || !pu_guard_market_ok(c, g, k) || !pu_ready(c, k) ||
        !pu_guard_spot_ok(c, g, k, 0))
        return 0;
    return market_filter < 0 || (int)pu_offer(c, k)->market == market_filter;
}

/* The margin keeps rounding from deciding a near tie. */
int pu_cannot_beat(const struct pu_ctx *c, size_t k, const struct pu_model *m,
                   double bound)
{
    const struct ebb_offer *o = pu_offer_fc(c, k);
    if (o->forecast_p50_low <= 0 || !isfinite(bound))
        return 0;
    ebb_micros low = o->price_per_hour < o->forecast_p50_low ? o->price_per_hour
                                                             : o->forecast_p50_low;
    double ms = expected_ms_least(c, k, k != c->running, m);
    if (!(ms >= 0) || !isfinite(ms))
        return 0;
    double floor_cost = (double)low * ms / (double)EBB_MS_PER_HOUR;
    return floor_cost > bound * (1.0 + 1e-9) + 1e-6;
}

size_t pu_best_fit(const struct pu_ctx *c, const struct pu_guard *g,
                   const struct pu_model *m, int market_filter, size_t skip,
                   double *cost, int *budget_blocked)
{
    if (budget_blocked != NULL)
        *budget_blocked = 0;
    /* The answer is the first offer of the lowest expected cost. Once one
     * is costed, the others stop integrating their forecasts as soon as
     * they are sure to cost more (cost_upto); with a memo they come
     * cheapest first and the search ends at the first that cannot win. */
    size_t best = PU_NONE;
    double best_cost = INFINITY;
    for (size_t i = 0; i < c->n; i++) {
        size_t k = pu_nth(c, i);
        if (best != PU_NONE && pu_past_bound(c, k, best_cost))
            break;
        if (!fit_ok(c, g, market_filter, skip, k))
            continue;
        if (!pu_budget_fits(c, k, m, NULL, NULL)) {
            if (budget_blocked != NULL &&
                isfinite(pu_expected_cost(c, k, 0, m)))
                *budget_blocked = 1;
            continue;
        }
        if (best != PU_NONE && pu_cannot_beat(c, k, m, best_cost))
            continue;
        double e;
        if (!cost_upto(c, k, m, best_cost, &e) || !isfinite(e))
            continue;
        if (best == PU_NONE || e < best_cost || (e == best_cost && k < best)) {
            best = k;
            best_cost = e;
        }
    }
    /* The search may have stopped before offers left out for the budget:
     * the flag speaks only when nothing was found, and then it saw all. */
    if (budget_blocked != NULL && best != PU_NONE)
        *budget_blocked = 0;
    if (cost != NULL)
        *cost = best_cost;
    return best;
}
