/* deadline — a deadline-aware spot/on-demand policy: Uniform Progress
 * (Wu et al., NSDI'24) made risk-aware. Instead of a progress line it
 * watches one number, the slack q the job has on its on-demand fallback
 * (pu_guard in policy_util.h: deadline - now - remaining work / speed - one
 * restart), against a floor F (a margin, a fraction of the fallback's wall
 * time for checkpoint pauses and, optionally, unsaved work). q never grows;
 * it falls while the job waits or restarts, so the policy spends it where
 * it buys the most: waiting for spot, and moving back to spot.
 *
 * With d the restart overhead and H = hysteresis_overheads * d, the rules
 * for a spot-fallback job with a deadline and an on-demand offer are:
 * 1. Shared cases (pu_settled): budget spent, work done, nothing to run on.
 * 2. On spot: if q < F (one more preemption and restart would miss the
 *    deadline), LAUNCH on-demand. Else if another spot offer's expected
 *    cost for the remaining work (restart included) beats this one's by
 *    more than move_factor restart overheads' worth of money and by
 *    move_fraction, and q - d >= F + H, move there. Else KEEP, asking again
 *    when q would reach F.
 * 3. On on-demand: if a spot offer is available, q - d >= F + H (the
 *    hysteresis: going back to spot must leave room to come back), and
 *    its expected cost is clearly lower, LAUNCH it; else KEEP.
 * 4. Idle: if q - d < F, LAUNCH on-demand (no room for a spot start).
 *    Else LAUNCH the ready offer with the lowest expected cost per unit of
 *    work, rework from the preemption hazard included (pu_expected_cost),
 *    spot first. With no spot ready: WAIT while q > R = F + (2 + H/d +
 *    reserve_overheads) d, so that after the on-demand stint the job can
 *    still go back to spot; at R, LAUNCH on-demand.
 * Every launch must fit the budget (pu_budget_fits: worst-case spend until
 * the next checkpoint); otherwise WAIT, or STOP a running instance. A job
 * whose deadline cannot be met runs on the fastest on-demand offer. Without
 * a deadline or an on-demand offer a spot-fallback job runs on spot only;
 * spot-only and on-demand-only jobs take the best expected offer of their
 * market, kept unless a move clearly pays (rule 2's test).
 */
#include <ebb/policy.h>

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "common/dl_rules.h"
#include "common/policy_util.h"

struct dl {
    const struct ebb_host *host;
    struct dl_cfg cfg;
    struct pu_memo memo;
};

static const struct ebb_cfg_key dl_keys[] = {
    DL_CFG_KEYS(struct dl_cfg, )
    EBB_CFG_END,
};

static int dl_create(const struct ebb_host *host, const void *config,
                     void **self)
{
    struct dl *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return EBB_ENOMEM;
    p->host = host;
    p->cfg = config != NULL ? *(const struct dl_cfg *)config : dl_cfg_defaults();
    if (dl_cfg_check(&p->cfg, host, "deadline") != 0) {
        free(p);
        return EBB_ECONFIG;
    }
    *self = p;
    return 0;
}

static void dl_destroy(void *self)
{
    struct dl *p = self;
    if (p != NULL)
        pu_memo_free(&p->memo);
    free(p);
}

static int dl_decide(void *self, const struct ebb_job_view *job,
                     const struct ebb_market_view *market, ebb_time_ms now,
                     struct ebb_decision *out)
{
    struct dl *p = self;
    struct dl_decision d;
    int rc;
    if (dl_prepare(&d, p != NULL ? &p->cfg : NULL, p != NULL ? &p->memo : NULL,
                   job, market, now, out, &rc))
        return rc;
    dl_decide_rules(&d, out);
    return 0;
}

static const struct ebb_policy dl_policy = {
    .abi = EBB_POLICY_ABI,
    .struct_size = sizeof(struct ebb_policy),
    .name = "deadline",
    .description = "Deadline-aware spot/on-demand: the spot offer with the "
                   "lowest expected cost including preemption risk, "
                   "on-demand only when the slack would not survive one more "
                   "preemption, hysteresis, and zone moves that clearly pay.",
    .config_keys = dl_keys,
    .config_size = sizeof(struct dl_cfg),
    .create = dl_create,
    .destroy = dl_destroy,
    .decide = dl_decide,
    .flags = EBB_POLICY_ASKS_FORECASTS,
};

const struct ebb_policy *ebb_policy_entry(void)
{
    return &dl_policy;
}
