/* The planner: builds what a policy may see of one job and the market,
 * asks the job's policy, and turns its decision into actions. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine.h"
#include "log.h"

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
                              const struct ebb__job *job, size_t offer)
{
    const struct ebb__offer *o = &e->market.offers[offer];
    const struct ebb__job_resources *r = &job->spec.resources;
    if (job->spec.market == EBB_JOB_SPOT && o->market != EBB_MARKET_SPOT)
        return 0;
    if (job->spec.market == EBB_JOB_ON_DEMAND && o->market != EBB_MARKET_ON_DEMAND)
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
    }
    return 1;
}

/* Spot instances ebb runs on offer `k` now, other than `job`'s own. */
static int32_t running_on(const struct ebb__engine *e, size_t k,
                          const struct ebb__job *job)
{
    int32_t n = 0;
    for (const struct ebb__job *j = e->jobs; j != NULL; j = j->next)
        if (j != job && j->current != NULL && j->current->offer == k)
            n++;
    return n;
}

static int grow_view(struct ebb__engine *e, size_t n)
{
    if (n <= e->view_cap)
        return 0;
    struct ebb_offer *offers = realloc(e->view_offers, n * sizeof(*offers));
    if (offers == NULL)
        return EBB_ENOMEM;
    e->view_offers = offers;
    size_t *map = realloc(e->view_map, n * sizeof(*map));
    if (map == NULL)
        return EBB_ENOMEM;
    e->view_map = map;
    e->view_cap = n;
    return 0;
}

/* Fills the engine's view buffers with the offers the job may use that
 * have a price now. Returns how many. */
static size_t build_market_view(struct ebb__engine *e, const struct ebb__job *job,
                                ebb_time_ms now)
{
    if (grow_view(e, e->market.n_offers) != 0)
        return 0;
    size_t n = 0;
    for (size_t k = 0; k < e->market.n_offers; k++) {
        const struct ebb__offer *o = &e->market.offers[k];
        const struct ebb__market_step *step = ebb__offer_at(o, now);
        if (step == NULL || !ebb__engine_offer_allowed(e, job, k))
            continue;
        int available = 1;
        if (o->market == EBB_MARKET_SPOT && step->capacity >= 0)
            available = step->capacity > running_on(e, k, job);
        e->view_offers[n] = (struct ebb_offer){
            .provider = o->provider,
            .region = o->region,
            .zone = o->zone,
            .instance_type = o->instance_type,
            .market = o->market,
            .price_per_hour = step->price,
            .speed = o->speed,
            .available = available,
        };
        e->view_map[n] = k;
        n++;
    }
    return n;
}

static void fill_job_view(const struct ebb__job *job, ebb_time_ms now,
                          size_t n_view, struct ebb_job_view *v)
{
    const struct ebb__engine *e = job->engine;
    *v = (struct ebb_job_view){
        .id = job->id,
        .name = job->spec.name,
        .market = job->spec.market,
        .work_total = job->work_total,
        .work_done = ebb__job_work_done(job, now),
        .submitted_at = job->submitted_at,
        .deadline = job->deadline,
        .restart_overhead = job->spec.restart_overhead,
        .checkpoint_grace = job->spec.checkpoint.grace,
        .budget = job->budget > 0 ? job->budget : 0,
        .spent = job->spent,
        .preemptions = job->preemptions,
        .running_offer = SIZE_MAX,
        .work_saved = job->work_saved,
        .currency = job->currency,
    };
    if (job->current != NULL && job->state == EBB__JOB_RUNNING) {
        for (size_t i = 0; i < n_view; i++)
            if (e->view_map[i] == job->current->offer)
                v->running_offer = i;
        v->running_since = job->current->launched_at;
    }
}

static void wake_at(struct ebb__job *job, ebb_time_ms until, ebb_time_ms now)
{
    struct ebb__engine *e = job->engine;
    if (until > now)
        ebb__timer_start(e->opt.clock, &job->wake, until);
    else
        ebb__timer_stop(e->opt.clock, &job->wake);
}

void ebb__engine_plan_job(struct ebb__job *job)
{
    struct ebb__engine *e = job->engine;
    int running = job->state == EBB__JOB_RUNNING && job->current != NULL &&
                  !job->current->stop_sent && !job->current->notice;
    if (!running && job->state != EBB__JOB_WAITING)
        return; /* launching, checkpointing: the next event will re-plan */
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    size_t n_view = build_market_view(e, job, now);
    struct ebb_market_view market = {e->view_offers, n_view};
    struct ebb_job_view view;
    fill_job_view(job, now, n_view, &view);
    if (running && view.running_offer == SIZE_MAX)
        return; /* its offer lost its price: wait for the market */

    struct ebb_decision d = {0};
    const struct ebb_policy *policy = job->policy->plugin->policy;
    e->decisions++;
    int rc = policy->decide(job->policy->self, &view, &market, now, &d);
    d.reason[sizeof(d.reason) - 1] = '\0';
    if (rc != 0) {
        ebb__error("job %s: policy %s failed: %s", job->id,
                   job->policy->plugin->name, ebb_strerror(rc));
        return;
    }
    if (d.kind == EBB_DECIDE_LAUNCH && d.offer >= n_view) {
        ebb__error("job %s: policy %s chose offer %zu of %zu", job->id,
                   job->policy->plugin->name, d.offer, n_view);
        return;
    }
    switch (d.kind) {
    case EBB_DECIDE_LAUNCH: {
        size_t offer = e->view_map[d.offer];
        if (!running) {
            ebb__engine_launch(job, offer, d.reason);
        } else if (offer != job->current->offer) {
            ebb__engine_release(job, EBB__JOB_WAITING, offer, d.reason);
        } else {
            wake_at(job, d.until, now);
        }
        break;
    }
    case EBB_DECIDE_STOP:
        if (running)
            ebb__engine_release(job, EBB__JOB_PAUSED, SIZE_MAX, d.reason);
        else
            wake_at(job, d.until, now);
        break;
    case EBB_DECIDE_WAIT:
    case EBB_DECIDE_KEEP:
    default:
        wake_at(job, d.until, now);
        break;
    }
}
