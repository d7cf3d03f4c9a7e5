#include "market/market.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/str.h"

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

void ebb__market_init(struct ebb__market *m, const struct ebb__catalog *catalog)
{
    *m = (struct ebb__market){.catalog = catalog};
}

void ebb__market_free(struct ebb__market *m)
{
    for (size_t i = 0; i < m->n_offers; i++) {
        struct ebb__offer *o = &m->offers[i];
        free(o->plugin);
        free(o->provider);
        free(o->region);
        free(o->zone);
        free(o->instance_type);
        free(o->product);
        free(o->steps);
        free(o->fc);
        ebb__catalog_entry_free(o->own_entry);
    }
    free(m->offers);
    *m = (struct ebb__market){0};
}

size_t ebb__market_find(const struct ebb__market *m,
                        const struct ebb__offer_key *key)
{
    for (size_t i = 0; i < m->n_offers; i++) {
        const struct ebb__offer *o = &m->offers[i];
        if (o->market == key->market &&
            strcmp(o->instance_type, key->instance_type) == 0 &&
            strcmp(o->zone, key->zone) == 0 && strcmp(o->region, key->region) == 0 &&
            strcmp(o->product, key->product) == 0 &&
            strcmp(o->provider, key->provider) == 0 &&
            strcmp(o->plugin, key->plugin) == 0)
            return i;
    }
    return SIZE_MAX;
}

static int push_step(struct ebb__offer *o, ebb_time_ms at, ebb_micros price,
                     int32_t capacity)
{
    struct ebb__market_step *steps = ebb__grow(o->steps, &o->cap_steps, o->n_steps,
                                               sizeof(*steps), 16);
    if (steps == NULL)
        return EBB_ENOMEM;
    o->steps = steps;
    o->steps[o->n_steps++] = (struct ebb__market_step){at, price, capacity};
    return 0;
}

static size_t add_offer(struct ebb__market *m, const struct ebb__offer_key *key,
                        const char *currency, const struct ebb_shape *shape)
{
    struct ebb__offer *offers = ebb__grow(m->offers, &m->cap_offers, m->n_offers,
                                          sizeof(*offers), 32);
    if (offers == NULL)
        return SIZE_MAX;
    m->offers = offers;
    struct ebb__offer *o = &m->offers[m->n_offers];
    *o = (struct ebb__offer){
        .plugin = strdup(key->plugin),
        .provider = strdup(key->provider),
        .region = strdup(key->region),
        .zone = strdup(key->zone),
        .instance_type = strdup(key->instance_type),
        .product = strdup(key->product),
        .market = key->market,
        .speed = 1.0,
    };
    snprintf(o->currency, sizeof(o->currency), "%s", currency);
    if (!o->plugin || !o->provider || !o->region || !o->zone ||
        !o->instance_type || !o->product) {
        free(o->plugin);
        free(o->provider);
        free(o->region);
        free(o->zone);
        free(o->instance_type);
        free(o->product);
        return SIZE_MAX;
    }
    if (shape != NULL) {
        o->own_entry = ebb__catalog_entry_from_shape(m->catalog, key->provider,
                                                     key->region, key->instance_type,
                                                     shape);
        o->catalog = o->own_entry;
    } else if (m->catalog != NULL) {
        o->catalog = ebb__catalog_find(m->catalog, key->provider, key->region,
                                       key->instance_type);
    }
    if (o->catalog != NULL)
        o->speed = o->catalog->speed;
    return m->n_offers++;
}

/* The on-demand sibling of a new spot series: listed at the catalog's
 * price from the first observation on, with unlimited capacity. */
static int add_on_demand(struct ebb__market *m, const struct ebb__offer *spot,
                         ebb_time_ms at)
{
    if (spot->catalog == NULL)
        return 0;
    struct ebb__offer_key key = {
        spot->plugin, spot->provider, spot->region, "", spot->instance_type,
        spot->product, EBB_MARKET_ON_DEMAND,
    };
    if (ebb__market_find(m, &key) != SIZE_MAX)
        return 0;
    if (spot->catalog->on_demand <= 0) /* a self-described machine */
        return 0;
    ebb_micros price = spot->catalog->on_demand;
    size_t i = add_offer(m, &key, "USD", NULL);
    if (i == SIZE_MAX)
        return EBB_ENOMEM;
    return push_step(&m->offers[i], at, price, -1);
}

int ebb__market_observe(struct ebb__market *m, const char *plugin,
                        const struct ebb_price *p, size_t *changed)
{
    *changed = SIZE_MAX;
    struct ebb__offer_key key = {
        .plugin = plugin,
        .provider = p->provider != NULL ? p->provider : plugin,
        .region = or_empty(p->region),
        .zone = p->market == EBB_MARKET_ON_DEMAND ? "" : or_empty(p->zone),
        .instance_type = p->instance_type,
        .product = or_empty(p->product),
        .market = p->market,
    };
    size_t i = ebb__market_find(m, &key);
    if (i == SIZE_MAX) {
        i = add_offer(m, &key, p->currency ? p->currency : "USD", p->shape);
        if (i == SIZE_MAX)
            return EBB_ENOMEM;
        int rc = push_step(&m->offers[i], p->at, p->price_per_hour, p->capacity);
        if (rc == 0 && p->market == EBB_MARKET_SPOT) {
            /* add_on_demand may move the offers array: copy what it reads. */
            struct ebb__offer spot = m->offers[i];
            rc = add_on_demand(m, &spot, p->at);
        }
        *changed = i;
        m->version++;
        return rc;
    }
    struct ebb__offer *o = &m->offers[i];
    const struct ebb__market_step *last = &o->steps[o->n_steps - 1];
    if (p->at < last->at)
        return 0;
    if (last->price == p->price_per_hour && last->capacity == p->capacity)
        return 0;
    if (p->at == last->at) {
        /* A correction at the same instant replaces the step. */
        o->steps[o->n_steps - 1].price = p->price_per_hour;
        o->steps[o->n_steps - 1].capacity = p->capacity;
    } else if (push_step(o, p->at, p->price_per_hour, p->capacity) != 0) {
        return EBB_ENOMEM;
    }
    *changed = i;
    m->version++;
    return 0;
}

const struct ebb__market_step *ebb__offer_at(const struct ebb__offer *o,
                                             ebb_time_ms t)
{
    size_t lo = 0, hi = o->n_steps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->steps[mid].at <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? NULL : &o->steps[lo - 1];
}
