/* on-demand — the baseline every saving is measured against: run on
 * on-demand at once and stay there.
 *
 * Rules, in order:
 * 1. The cases all policies share (policy_util.h pu_settled): budget spent,
 *    work done, nothing to run on.
 * 2. Already on an on-demand instance: KEEP it, even if a cheaper offer
 *    appeared, since moving would cost a restart.
 * 3. Otherwise LAUNCH the on-demand offer that is cheapest per unit of work
 *    (price_per_hour / speed, so a faster, pricier type can win) among
 *    those that still finish by the deadline; when none does, the fastest.
 *    An instance on spot is moved to it.
 * A spot-only job (job->market == EBB_JOB_SPOT) is honoured: it gets the
 * same rule on the spot market (cheapest available spot, kept), or WAITs.
 */
#include <ebb/policy.h>

#include <stdlib.h>

#include "common/policy_util.h"

struct on_demand {
    const struct ebb_host *host;
};

static int on_demand_create(const struct ebb_host *host, const void *config,
                            void **self)
{
    (void)config;
    struct on_demand *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return EBB_ENOMEM;
    p->host = host;
    *self = p;
    return 0;
}

static void on_demand_destroy(void *self)
{
    free(self);
}

static int on_demand_decide(void *self, const struct ebb_job_view *job,
                            const struct ebb_market_view *market,
                            ebb_time_ms now, struct ebb_decision *out)
{
    (void)self;
    struct pu_ctx c;
    int rc = pu_begin(&c, job, market, now, out);
    if (rc != 0)
        return rc;
    if (pu_settled(&c, out))
        return 0;
    pu_run_market(&c, job->market == EBB_JOB_SPOT ? EBB_MARKET_SPOT
                                                  : EBB_MARKET_ON_DEMAND,
                  out);
    return 0;
}

static const struct ebb_cfg_key on_demand_keys[] = {
    EBB_CFG_END,
};

static const struct ebb_policy on_demand_policy = {
    .abi = EBB_POLICY_ABI,
    .struct_size = sizeof(struct ebb_policy),
    .name = "on-demand",
    .description = "Run on the cheapest on-demand offer per unit of work at "
                   "once and keep it (the cost baseline).",
    .config_keys = on_demand_keys,
    .config_size = 0,
    .create = on_demand_create,
    .destroy = on_demand_destroy,
    .decide = on_demand_decide,
    .flags = EBB_POLICY_ASKS_FORECASTS,
};

const struct ebb_policy *ebb_policy_entry(void)
{
    return &on_demand_policy;
}
