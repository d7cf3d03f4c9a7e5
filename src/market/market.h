/* The market as the engine sees it: every offer a job could run on (one
 * provider plugin, market provider, region, zone, instance type and
 * market), its current price and spot capacity, and the history of both.
 *
 * Spot offers appear as their prices are observed. Each spot series also
 * brings an on-demand offer for its (provider, region, instance type) when
 * the catalog lists an on-demand price for it: on-demand prices come from
 * the catalog (public list prices), and on-demand capacity is unlimited.
 * The history is what billing and the hindsight oracle read.
 */
#ifndef EBB_MARKET_H
#define EBB_MARKET_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/policy.h>
#include <ebb/types.h>

#include "market/catalog.h"
#include "market/forecast.h"

/* One step of an offer's history: from `at` until the next step. */
struct ebb__market_step {
    ebb_time_ms at;
    ebb_micros price;
    int32_t capacity; /* -1: unlimited or unknown */
};

struct ebb__offer {
    char *plugin;        /* the provider plugin that launches it ("sim") */
    char *provider;      /* whose market ("aws") */
    char *region;
    char *zone;          /* "" for on-demand offers */
    char *instance_type;
    char *product;       /* "Linux/UNIX"; "" when the market has none */
    enum ebb_market market;
    char currency[4];
    double speed;        /* from the catalog; 1.0 when not listed */
    const struct ebb__catalog_entry *catalog; /* NULL when not listed */
    struct ebb__catalog_entry *own_entry; /* the offer's own shape, if any */
    struct ebb__market_step *steps; /* sorted by time */
    size_t n_steps;
    size_t cap_steps;
    /* Kept by the engine: */
    uint32_t n_running;      /* ebb instances on this offer now */
    unsigned losses;         /* preemptions ebb saw here */
    double instance_hours;   /* hours ebb ran here */
    /* The provider said it has no capacity here (EBB_ENOCAPACITY): the
     * offer counts as unavailable until then. */
    ebb_time_ms unavailable_until;
    /* The forecast and hazard policies see, as of fc_origin for the
     * steps known then; due again when the hour or the history moves.
     * The price forecast is computed when first read (fc_pending until
     * then, with n_fc 0), the rest at once. */
    struct ebb_forecast_point *fc;
    size_t n_fc;
    ebb_micros fc_p50_low;   /* the lowest p50 in fc */
    ebb_time_ms fc_origin;
    size_t fc_steps_seen;
    int fc_pending;
    double hazard;
    double hazard_by_hour[24]; /* by UTC hour of day, when has_by_hour */
    int has_by_hour;
    /* Up and down periods of the capacity history (ebb_offer's record),
     * as of fc_origin; has_record when it has any. */
    struct ebb__avail_record record;
    int has_record;
};

struct ebb__market {
    const struct ebb__catalog *catalog; /* borrowed; may be NULL */
    uint64_t version; /* bumped by every change to prices, capacity or use */
    struct ebb__offer *offers;
    size_t n_offers;
    size_t cap_offers;
};

void ebb__market_init(struct ebb__market *m, const struct ebb__catalog *catalog);
void ebb__market_free(struct ebb__market *m);

/* Records an observation reported by provider plugin `plugin`. Adds the
 * offer (and its on-demand sibling) when new. Observations older than the
 * offer's latest step are ignored (a re-delivered history); one equal in
 * price and capacity to the step in effect adds nothing. Sets *changed to
 * the offer's index when its price or capacity changed, else SIZE_MAX.
 * Returns 0 or EBB_ENOMEM. */
int ebb__market_observe(struct ebb__market *m, const char *plugin,
                        const struct ebb_price *p, size_t *changed);

/* What identifies an offer. */
struct ebb__offer_key {
    const char *plugin, *provider, *region, *zone, *instance_type, *product;
    enum ebb_market market;
};

/* Index of the offer with this identity, or SIZE_MAX. */
size_t ebb__market_find(const struct ebb__market *m,
                        const struct ebb__offer_key *key);

/* The step in effect at `t` (NULL before the first one). */
const struct ebb__market_step *ebb__offer_at(const struct ebb__offer *o,
                                             ebb_time_ms t);

#endif
