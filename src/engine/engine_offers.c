/* Which of the market's offers a job may use: its resources, its market
 * setting, a rate to show the offer's prices in the job's currency, for a
 * gang (nodes > 1) a provider that launches gangs, and the network
 * bandwidth it asks for (resources.network); and whether a job could ever
 * run (at submit).
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

/* What an offer is judged on, in the order a refusal names them. */
enum criterion {
    CRIT_CURRENCY,
    CRIT_MARKET,
    CRIT_PROVIDERS,
    CRIT_TYPES,
    CRIT_REGIONS,
    CRIT_ZONES,
    CRIT_GPU,
    CRIT_GANG,
    CRIT_NETWORK,
    CRIT_COUNT,
};

/* The provider plugin that runs market plugin `plugin`'s instances
 * (run_on), or NULL when it runs its own. The lookup of
 * ebb__engine_runner (engine_grace.c, a file this one may not call). */
static const char *runner_name(const struct ebb__engine *e, const char *plugin)
{
    for (size_t i = 0; i < e->opt.n_run_on; i++)
        if (strcmp(e->opt.run_on[i].market, plugin) == 0)
            return e->opt.run_on[i].runner;
    return NULL;
}

/* Whether provider plugin `name` is loaded and launches gangs. */
static int launches_gangs(const struct ebb__engine *e, const char *name)
{
    const struct ebb__plugin_slot *s = ebb__registry_provider(e->opt.registry, name);
    return s != NULL && (s->plugin->provider->flags & EBB_PROVIDER_GANGS) != 0;
}

/* A gang (nodes > 1) runs only where both the market's plugin and, with
 * run_on, the runner launch all its nodes together (EBB_PROVIDER_GANGS). */
static int gang_allowed(const struct ebb__engine *e, const struct ebb__job *job,
                        const struct ebb__offer *o)
{
    if (job->spec.nodes <= 1)
        return 1;
    const char *runner = runner_name(e, o->plugin);
    return launches_gangs(e, o->plugin) && (runner == NULL || launches_gangs(e, runner));
}

/* resources.network: the catalog's bandwidth of the type, known and at
 * least what the job asks for. */
static int network_allowed(const struct ebb__job_resources *r, const struct ebb__offer *o)
{
    return r->network_gbps <= 0 ||
           (o->catalog != NULL && o->catalog->network_gbps >= r->network_gbps);
}

static int gpu_allowed(const struct ebb__job_resources *r, const struct ebb__offer *o)
{
    if (r->gpu_model == NULL && r->gpu_count == 0 && r->gpu_memory_gb <= 0)
        return 1;
    const struct ebb__catalog_entry *c = o->catalog;
    if (c == NULL)
        return 0;
    if (r->gpu_model != NULL && strcasecmp(c->gpu_model, r->gpu_model) != 0)
        return 0;
    if (r->gpu_count > 0 && c->gpus != r->gpu_count)
        return 0;
    return !(r->gpu_memory_gb > 0 && c->gpu_memory_gb > 0 &&
             c->gpu_memory_gb < r->gpu_memory_gb);
}

/* Whether offer `o` passes criterion `c` for the job, judged for market
 * setting `market`. */
static int passes(const struct ebb__engine *e, const struct ebb__job *job,
                  const struct ebb__offer *o, enum criterion c,
                  enum ebb_job_market market)
{
    const struct ebb__job_resources *r = &job->spec.resources;
    ebb_micros unit;
    switch (c) {
    case CRIT_CURRENCY:
        /* The planner shows a policy every price in the job's currency:
         * an offer in another (CNY in Alibaba's Chinese regions) needs a
         * rate. */
        return strcmp(o->currency, job->currency) == 0 ||
               ebb__engine_convert(e, EBB_MICROS_PER_UNIT, o->currency,
                                   job->currency, EBB__ROUND_UP, &unit) == 0;
    case CRIT_MARKET:
        return !(market == EBB_JOB_SPOT && o->market != EBB_MARKET_SPOT) &&
               !(market == EBB_JOB_ON_DEMAND && o->market != EBB_MARKET_ON_DEMAND);
    case CRIT_PROVIDERS:
        return r->providers.n == 0 || list_has(&r->providers, o->provider) ||
               list_has(&r->providers, o->plugin);
    case CRIT_TYPES:
        return r->instance_types.n == 0 || list_has(&r->instance_types, o->instance_type);
    case CRIT_REGIONS:
        return r->regions.n == 0 || list_has(&r->regions, o->region);
    case CRIT_ZONES:
        return zone_allowed(&r->zones, o);
    case CRIT_GPU:
        return gpu_allowed(r, o);
    case CRIT_GANG:
        return gang_allowed(e, job, o);
    case CRIT_NETWORK:
        return network_allowed(r, o);
    case CRIT_COUNT:
        break;
    }
    return 0;
}

int ebb__engine_offer_allowed(const struct ebb__engine *e,
                              const struct ebb__job *job, size_t offer,
                              enum ebb_job_market market)
{
    const struct ebb__offer *o = &e->market.offers[offer];
    for (int c = 0; c < CRIT_COUNT; c++)
        if (!passes(e, job, o, (enum criterion)c, market))
            return 0;
    return 1;
}

/* ---- can the job ever run ---------------------------------------------- */

/* The field of offer `o` that criterion `c` looks at, to list what there
 * is; NULL for criteria without one value to show. */
static const char *offer_field(const struct ebb__offer *o, enum criterion c)
{
    switch (c) {
    case CRIT_CURRENCY: return o->currency;
    case CRIT_MARKET: return o->market == EBB_MARKET_SPOT ? "spot" : "on-demand";
    case CRIT_PROVIDERS: return o->provider;
    case CRIT_TYPES: return o->instance_type;
    case CRIT_REGIONS: return o->region;
    case CRIT_ZONES: return o->zone[0] ? o->zone : NULL;
    case CRIT_GPU: return o->catalog && o->catalog->gpu_model[0] ? o->catalog->gpu_model
                                                                 : NULL;
    case CRIT_GANG: /* refusal() lists what there is its own way */
    case CRIT_NETWORK:
    case CRIT_COUNT: break;
    }
    return NULL;
}

/* What the market has of criterion `c`'s field: distinct values, the first
 * few, as "a, b, c, ..." into buf. */
static void list_offered(const struct ebb__engine *e, enum criterion c, char *buf,
                         size_t len)
{
    enum { SHOWN = 8 };
    const char *seen[SHOWN];
    size_t n_seen = 0, used = 0;
    int more = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < e->market.n_offers; k++) {
        const char *v = offer_field(&e->market.offers[k], c);
        size_t i = 0;
        while (v != NULL && i < n_seen && strcmp(seen[i], v) != 0)
            i++;
        if (v == NULL || v[0] == '\0' || i < n_seen)
            continue;
        if (n_seen == SHOWN) {
            more = 1;
            break;
        }
        seen[n_seen++] = v;
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", v);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    if (more && used + 6 < len)
        snprintf(buf + used, len - used, ", ...");
    if (n_seen == 0)
        snprintf(buf, len, "none");
}

static const char *const criterion_key[] = {
    [CRIT_CURRENCY] = "budget", [CRIT_MARKET] = "market",
    [CRIT_PROVIDERS] = "resources.providers",
    [CRIT_TYPES] = "resources.instance_types", [CRIT_REGIONS] = "resources.regions",
    [CRIT_ZONES] = "resources.zones", [CRIT_GPU] = "resources.gpu",
};

static const char *const criterion_offered[] = {
    [CRIT_CURRENCY] = "offers are priced in", [CRIT_MARKET] = "markets offered:",
    [CRIT_PROVIDERS] = "providers offering:", [CRIT_TYPES] = "types offered:",
    [CRIT_REGIONS] = "regions offered:", [CRIT_ZONES] = "zones offered:",
    [CRIT_GPU] = "GPU models offered:",
};

/* Appends `text` to buf[len] at *used, as far as it fits. */
static void put(char *buf, size_t len, size_t *used, const char *text)
{
    int w = snprintf(buf + *used, len - *used, "%s", text);
    if (w > 0)
        *used += (size_t)w < len - *used ? (size_t)w : len - *used - 1;
}

/* "a, b do; c does not": the configured providers by whether they launch
 * gangs, into buf. */
static void list_gang_providers(const struct ebb__engine *e, char *buf, size_t len)
{
    const struct ebb__registry *r = e->opt.registry;
    size_t used = 0;
    buf[0] = '\0';
    for (int want = 1; want >= 0; want--) {
        size_t n = 0;
        for (size_t i = 0; i < r->n_providers; i++) {
            const char *name = r->providers[i].plugin->name;
            if (launches_gangs(e, name) != want)
                continue;
            if (n == 0 && used > 0)
                put(buf, len, &used, "; ");
            put(buf, len, &used, n > 0 ? ", " : "");
            put(buf, len, &used, name);
            n++;
        }
        if (n > 0)
            put(buf, len, &used, want ? (n > 1 ? " do" : " does")
                                      : (n > 1 ? " do not" : " does not"));
    }
    if (used == 0)
        snprintf(buf, len, "no provider is configured");
}

/* Whether offer `o` passes every criterion before `c`: what the job's
 * other resources leave of the market. */
static int passes_before(const struct ebb__engine *e, const struct ebb__job *job,
                         const struct ebb__offer *o, enum criterion c)
{
    for (int k = 0; k < (int)c; k++)
        if (!passes(e, job, o, (enum criterion)k, job->spec.market))
            return 0;
    return 1;
}

/* "p3.2xlarge has 10Gbps, p2.xlarge unknown, ...": the bandwidth of the
 * types the job's other resources allow (all the market's when they
 * allow none), the first few, into buf. */
static void list_networks(const struct ebb__engine *e, const struct ebb__job *job,
                          char *buf, size_t len)
{
    enum { SHOWN = 8 };
    const char *seen[SHOWN];
    size_t n_seen = 0, used = 0;
    int any = 0;
    for (size_t k = 0; k < e->market.n_offers && !any; k++)
        any = passes_before(e, job, &e->market.offers[k], CRIT_NETWORK);
    buf[0] = '\0';
    for (size_t k = 0; k < e->market.n_offers; k++) {
        const struct ebb__offer *o = &e->market.offers[k];
        size_t i = 0;
        while (i < n_seen && strcmp(seen[i], o->instance_type) != 0)
            i++;
        if (i < n_seen || (any && !passes_before(e, job, o, CRIT_NETWORK)))
            continue;
        if (n_seen == SHOWN) {
            put(buf, len, &used, ", ...");
            break;
        }
        seen[n_seen++] = o->instance_type;
        char one[96];
        if (o->catalog != NULL && o->catalog->network_gbps > 0)
            snprintf(one, sizeof(one), "%s has %.15gGbps", o->instance_type,
                     o->catalog->network_gbps);
        else
            snprintf(one, sizeof(one), "%s unknown", o->instance_type);
        put(buf, len, &used, used ? ", " : "");
        put(buf, len, &used, one);
    }
}

/* Why no offer passes criterion `c`, into why[len]. */
static void refusal(const struct ebb__engine *e, const struct ebb__job *job,
                    enum criterion c, char *why, size_t len)
{
    char offered[256];
    switch (c) {
    case CRIT_GANG:
        list_gang_providers(e, offered, sizeof(offered));
        snprintf(why, len, "nodes: %d: no offer's provider launches gangs, so the "
                 "job could never run (%s; see ebb prices)", job->spec.nodes, offered);
        return;
    case CRIT_NETWORK:
        list_networks(e, job, offered, sizeof(offered));
        snprintf(why, len, "resources.network: %.15gGbps: no matching instance type "
                 "has that much (the catalog's network_gbps), so the job could never "
                 "run (%s; see ebb prices)", job->spec.resources.network_gbps, offered);
        return;
    default:
        list_offered(e, c, offered, sizeof(offered));
        snprintf(why, len, "%s: no offer of any configured provider matches, so "
                 "the job could never run (%s %s; see ebb prices)", criterion_key[c],
                 criterion_offered[c], offered);
        return;
    }
}

int ebb__engine_job_runnable(struct ebb__engine *e, struct ebb__job *job,
                             char *why, size_t len)
{
    /* Caps, spend and the team rule are compared in USD. */
    ebb_micros usd;
    if (strcmp(job->currency, "USD") != 0 &&
        ebb__engine_convert(e, EBB_MICROS_PER_UNIT, job->currency, "USD",
                            EBB__ROUND_DOWN, &usd) != 0) {
        snprintf(why, len, "budget: no rate for %s in currency_rates (ebb.yaml), so "
                 "ebbd cannot compare the job's budget with prices and caps; add "
                 "one (USD per unit, e.g. currency_rates: {%s: 1.08})",
                 job->currency, job->currency);
        return EBB_EINVAL;
    }
    if (ebb__engine_update_allowed(job) != 0)
        return 0; /* out of memory: the planner will judge */
    /* Until every provider has answered a first poll the market is not
     * complete, and what it lacks now may come. */
    if (job->n_allowed > 0 || !e->all_polled || e->market.n_offers == 0)
        return 0; /* with no offer at all (failed polls) there is nothing to judge by */
    for (int c = 0; c < CRIT_COUNT; c++) {
        size_t k = 0;
        while (k < e->market.n_offers &&
               !passes(e, job, &e->market.offers[k], (enum criterion)c,
                       job->spec.market))
            k++;
        if (k < e->market.n_offers)
            continue;
        refusal(e, job, (enum criterion)c, why, len);
        return EBB_EINVAL;
    }
    snprintf(why, len, "resources: no offer of any configured provider matches "
             "all of the job's resources and market together, so the job could "
             "never run (see ebb prices)");
    return EBB_EINVAL;
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
