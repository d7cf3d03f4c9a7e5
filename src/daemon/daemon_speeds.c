/* ebb prices' speeds (docs/api.md "prices"): each row's offer in the
 * engine's market, with the speed the engine plans with there. */
#include <string.h>

#include "daemon/daemon.h"
#include "engine/engine.h"
#include "market/speed_est.h"

static int text_is(json_t *row, const char *key, const char *want)
{
    const char *v = json_string_value(json_object_get(row, key));
    return v != NULL && strcmp(v, want) == 0;
}

/* The market offer of price row `row`, or SIZE_MAX. */
static size_t offer_of(const struct ebb__market *m, json_t *row)
{
    const char *market = json_string_value(json_object_get(row, "market"));
    enum ebb_market want = market != NULL && strcmp(market, "spot") == 0
                               ? EBB_MARKET_SPOT
                               : EBB_MARKET_ON_DEMAND;
    for (size_t i = 0; i < m->n_offers; i++) {
        const struct ebb__offer *o = &m->offers[i];
        if (o->market == want && text_is(row, "instance_type", o->instance_type) &&
            text_is(row, "provider", o->provider) && text_is(row, "region", o->region) &&
            text_is(row, "zone", o->zone) && text_is(row, "product", o->product))
            return i;
    }
    return SIZE_MAX;
}

void ebb__daemon_price_speeds(struct ebb__daemon *d, json_t *prices)
{
    const struct ebb__market *m = ebb__engine_market(d->engine);
    size_t i;
    json_t *row;
    json_array_foreach(prices, i, row) {
        size_t k = offer_of(m, row);
        long long samples = 0;
        double speed = k == SIZE_MAX ? 0 : ebb__engine_offer_speed(d->engine, k, &samples);
        json_object_set_new(row, "speed", k == SIZE_MAX ? json_null() : json_real(speed));
        json_object_set_new(row, "speed_source", k == SIZE_MAX
                                                     ? json_null()
                                                     : json_string(ebb__speed_source(samples)));
        json_object_set_new(row, "speed_samples", json_integer(samples));
    }
}
