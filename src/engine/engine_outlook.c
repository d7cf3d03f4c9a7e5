/* What policies see of an offer's future: its price forecast, its
 * preemption hazard and its record of up and down periods, computed from
 * the market's history with the pure forecaster (market/forecast.c) and
 * cached on the offer until the hour (opt.outlook_refresh) or the history
 * moves, so that many jobs planning at one instant share one forecast per
 * offer. The price forecast, the dear part, waits until someone reads it
 * (ebb__engine_forecast): a policy that asks for forecasts
 * (EBB_POLICY_ASKS_FORECASTS) reads a few offers' of hundreds. It is
 * computed as of the instant it fell due, so when it is computed changes
 * nothing. */
#include <stdlib.h>

#include "base/log.h"
#include "engine/internal.h"
#include "market/forecast.h"

#define OUTLOOK_STEP EBB_MS_PER_HOUR

static int scratch_fill(struct ebb__outlook_scratch *s, const struct ebb__offer *o,
                        ebb_time_ms now, size_t *first, size_t *n)
{
    size_t end = o->n_steps;
    while (end > 0 && o->steps[end - 1].at >= now)
        end--;
    size_t begin = end;
    while (begin > 0 && o->steps[begin - 1].at >= now - EBB__ENGINE_OUTLOOK_HISTORY)
        begin--;
    if (begin > 0)
        begin--; /* the step in effect when the window opens */
    *first = begin;
    *n = end - begin;
    if (*n > s->cap) {
        size_t cap = *n * 2;
        ebb_time_ms *at = realloc(s->at, cap * sizeof(*at));
        if (at != NULL)
            s->at = at;
        ebb_micros *price = realloc(s->price, cap * sizeof(*price));
        if (price != NULL)
            s->price = price;
        int32_t *capacity = realloc(s->capacity, cap * sizeof(*capacity));
        if (capacity != NULL)
            s->capacity = capacity;
        if (at == NULL || price == NULL || capacity == NULL)
            return EBB_ENOMEM;
        s->cap = cap;
    }
    for (size_t i = 0; i < *n; i++) {
        s->at[i] = o->steps[begin + i].at;
        s->price[i] = o->steps[begin + i].price;
        s->capacity[i] = o->steps[begin + i].capacity;
    }
    return 0;
}

static void flat_outlook(struct ebb__offer *o, ebb_micros price, ebb_time_ms now)
{
    for (size_t i = 0; i < EBB__ENGINE_OUTLOOK_STEPS; i++)
        o->fc[i] = (struct ebb_forecast_point){now + (ebb_time_ms)(i + 1) * OUTLOOK_STEP,
                                               price, price, price};
    o->n_fc = EBB__ENGINE_OUTLOOK_STEPS;
}

static ebb_micros lowest_p50(const struct ebb__offer *o)
{
    ebb_micros low = o->n_fc > 0 ? o->fc[0].p50 : 0;
    for (size_t i = 1; i < o->n_fc; i++)
        if (o->fc[i].p50 < low)
            low = o->fc[i].p50;
    return low > 0 ? low : 0;
}

/* The hazard by hour of day, when the capacity history has drops to tell
 * the hours apart: the history's own hours, scaled so that they average
 * what o->hazard says (which also counts the losses ebb saw itself). */
static void hazard_by_hour(struct ebb__offer *o,
                           const struct ebb__capacity_history *ch,
                           ebb_time_ms origin)
{
    double history = ebb__preemption_hazard(ch, origin, 0, 0);
    if (!(history > 0) ||
        ebb__preemption_hazard_by_hour(ch, origin, o->hazard_by_hour) != 0)
        return;
    double scale = o->hazard / history;
    for (size_t h = 0; h < 24; h++)
        o->hazard_by_hour[h] *= scale;
    o->has_by_hour = 1;
}

void ebb__engine_outlook(struct ebb__engine *e, size_t k, ebb_time_ms now)
{
    struct ebb__offer *o = &e->market.offers[k];
    ebb_dur_ms keep = e->opt.outlook_refresh > 0 ? e->opt.outlook_refresh : OUTLOOK_STEP;
    if (o->fc != NULL && o->fc_steps_seen == o->n_steps && now < o->fc_origin + keep &&
        now >= o->fc_origin)
        return;
    if (o->fc == NULL) {
        o->fc = calloc(EBB__ENGINE_OUTLOOK_STEPS, sizeof(*o->fc));
        if (o->fc == NULL)
            return;
    }
    o->fc_origin = now;
    o->fc_steps_seen = o->n_steps;
    o->fc_pending = 0;
    o->n_fc = 0;
    o->fc_p50_low = 0;
    o->hazard = 0;
    o->has_by_hour = 0;
    o->has_record = 0;
    const struct ebb__market_step *cur = ebb__offer_at(o, now);
    if (cur == NULL)
        return;
    if (o->market == EBB_MARKET_ON_DEMAND) {
        flat_outlook(o, cur->price, now);
        o->fc_p50_low = cur->price;
        return;
    }
    struct ebb__outlook_scratch *s = &e->outlook_scratch;
    size_t first, n;
    if (scratch_fill(s, o, now + 1, &first, &n) != 0 || n == 0)
        return;
    o->fc_pending = 1;
    /* The origin is just after now so that a step that took effect at this
     * very instant is part of the history. */
    struct ebb__capacity_history ch = {s->at, s->capacity, n};
    o->hazard = ebb__preemption_hazard(&ch, now + 1, o->losses, o->instance_hours);
    hazard_by_hour(o, &ch, now + 1);
    ebb__availability_record(&ch, now + 1, &o->record);
    for (size_t b = 0; b < EBB_PERIOD_BUCKETS && !o->has_record; b++)
        o->has_record = o->record.up[b] > 0 || o->record.down[b] > 0;
    o->has_record |= o->record.since > 0;
}

void ebb__engine_forecast(struct ebb__engine *e, size_t k)
{
    struct ebb__offer *o = &e->market.offers[k];
    if (!o->fc_pending)
        return;
    o->fc_pending = 0;
    ebb_time_ms now = o->fc_origin;
    const struct ebb__market_step *cur = ebb__offer_at(o, now);
    struct ebb__outlook_scratch *s = &e->outlook_scratch;
    size_t first, n;
    if (cur == NULL || scratch_fill(s, o, now + 1, &first, &n) != 0 || n == 0)
        return;
    struct ebb__price_history ph = {s->at, s->price, n};
    if (ebb__forecast_prices(&ph, now + 1, OUTLOOK_STEP, EBB__ENGINE_OUTLOOK_STEPS,
                             o->fc) == 0)
        o->n_fc = EBB__ENGINE_OUTLOOK_STEPS;
    else
        flat_outlook(o, cur->price, now);
    o->fc_p50_low = lowest_p50(o);
}

void ebb__engine_outlook_free(struct ebb__engine *e)
{
    free(e->outlook_scratch.at);
    free(e->outlook_scratch.price);
    free(e->outlook_scratch.capacity);
    e->outlook_scratch = (struct ebb__outlook_scratch){0};
}
