/* Which of the market's offers a job may use: its resources, its market
 * setting, and a rate to show the offer's prices in the job's currency.
 * Each job keeps the offers it may use (the market only ever appends, so
 * only new offers are examined), which lets a price change wake just the
 * jobs that may use the offer that changed. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/internal.h"

int ebb__engine_convert(const struct ebb__engine *e, ebb_micros amount,
                        const char *from, const char *to,
                        enum ebb__rounding how, ebb_micros *out)
{
    const struct ebb__config *c = e->opt.budget_config;
    return ebb__currency_convert(amount, from, to, c ? c->rates : NULL,
                                 c ? c->n_rates : 0, how, out);
}

static int list_has(const struct ebb_string_list *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], s) == 0)
            return 1;
    return 0;
}

/* A zone filter admits a region-wide (on-demand) offer when one of the
 * zones lies in its region; zone names start with their region's name on
 * AWS ("us-east-1a") and Alibaba ("cn-hangzhou-b"). */
static int zone_allowed(const struct ebb_string_list *zones,
                        const struct ebb__offer *o)
{
    if (zones->n == 0)
        return 1;
    if (o->zone[0] != '\0')
        return list_has(zones, o->zone);
    size_t len = strlen(o->region);
    for (size_t i = 0; i < zones->n; i++)
        if (len > 0 && strncmp(zones->items[i], o->region, len) == 0)
            return 1;
    return 0;
}

int ebb__engine_offer_allowed(const struct ebb__engine *e,
                              const struct ebb__job *job, size_t offer,
                              enum ebb_job_market market)
{
    const struct ebb__offer *o = &e->market.offers[offer];
    const struct ebb__job_resources *r = &job->spec.resources;
    /* The planner shows a policy every price in the job's currency: an
     * offer in another (CNY in Alibaba's Chinese regions) needs a rate. */
    ebb_micros unit;
    if (strcmp(o->currency, job->currency) != 0 &&
        ebb__engine_convert(e, EBB_MICROS_PER_UNIT, o->currency, job->currency,
                            EBB__ROUND_UP, &unit) != 0)
        return 0;
    if (market == EBB_JOB_SPOT && o->market != EBB_MARKET_SPOT)
        return 0;
    if (market == EBB_JOB_ON_DEMAND && o->market != EBB_MARKET_ON_DEMAND)
        return 0;
    if (r->providers.n > 0 && !list_has(&r->providers, o->provider) &&
        !list_has(&r->providers, o->plugin))
        return 0;
    if (r->instance_types.n > 0 && !list_has(&r->instance_types, o->instance_type))
        return 0;
    if (r->regions.n > 0 && !list_has(&r->regions, o->region))
        return 0;
    if (!zone_allowed(&r->zones, o))
        return 0;
    if (r->gpu_model != NULL || r->gpu_count > 0 || r->gpu_memory_gb > 0) {
        const struct ebb__catalog_entry *c = o->catalog;
        if (c == NULL)
            return 0;
        if (r->gpu_model != NULL && strcasecmp(c->gpu_model, r->gpu_model) != 0)
            return 0;
        if (r->gpu_count > 0 && c->gpus != r->gpu_count)
            return 0;
        if (r->gpu_memory_gb > 0 && c->gpu_memory_gb > 0 &&
            c->gpu_memory_gb < r->gpu_memory_gb)
            return 0;
    }
    return 1;
}

int ebb__engine_update_allowed(struct ebb__job *job)
{
    struct ebb__engine *e = job->engine;
    for (; job->offers_examined < e->market.n_offers; job->offers_examined++) {
        size_t k = job->offers_examined;
        if (!ebb__engine_offer_allowed(e, job, k, job->spec.market))
            continue;
        if (job->n_allowed == job->cap_allowed) {
            size_t cap = job->cap_allowed ? job->cap_allowed * 2 : 16;
            size_t *allowed = realloc(job->allowed, cap * sizeof(*allowed));
            if (allowed == NULL)
                return EBB_ENOMEM;
            job->allowed = allowed;
            job->cap_allowed = cap;
        }
        job->allowed[job->n_allowed++] = k;
    }
    return 0;
}

static int allows(const struct ebb__job *job, size_t k)
{
    size_t lo = 0, hi = job->n_allowed;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (job->allowed[mid] == k)
            return 1;
        if (job->allowed[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

void ebb__engine_wake_offer(struct ebb__engine *e, size_t offer,
                            const struct ebb__job *except)
{
    struct ebb_list *node;
    ebb_list_foreach(node, &e->jobs) {
        struct ebb__job *job = ebb_list_entry(node, struct ebb__job, node);
        if (job == except || ebb__job_state_terminal(job->state))
            continue;
        if (ebb__engine_update_allowed(job) != 0 || offer == SIZE_MAX ||
            allows(job, offer))
            ebb__engine_mark_dirty(job);
    }
}
