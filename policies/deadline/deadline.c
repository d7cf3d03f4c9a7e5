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

#include "dl_rules.h"
#include "policy_util.h"

struct dl_cfg {
    ebb_dur_ms safety_margin;
    double margin_fraction;
    double hysteresis_overheads;
    double reserve_overheads;
    double move_factor;
    double move_fraction;
    ebb_dur_ms checkpoint_every;
    int lose_unsaved;
};

struct dl {
    const struct ebb_host *host;
    struct dl_cfg cfg;
};

static const struct ebb_cfg_key dl_keys[] = {
    {"safety_margin", EBB_CFG_DURATION, "10m",
     offsetof(struct dl_cfg, safety_margin),
     "Slack kept on the on-demand fallback on top of one restart (launch "
     "latency, a late decision)."},
    {"margin_fraction", EBB_CFG_DOUBLE, "0.02",
     offsetof(struct dl_cfg, margin_fraction),
     "Plus this fraction of the remaining on-demand run time (periodic "
     "checkpoint pauses slow a run down)."},
    {"hysteresis_overheads", EBB_CFG_DOUBLE, "1",
     offsetof(struct dl_cfg, hysteresis_overheads),
     "Leave on-demand for spot only with this many restart overheads of "
     "slack to spare beyond the floor (no flapping)."},
    {"reserve_overheads", EBB_CFG_DOUBLE, "1",
     offsetof(struct dl_cfg, reserve_overheads),
     "With no spot available, wait idle until the slack is down to the "
     "floor plus this many overheads more than a return to spot needs."},
    {"move_factor", EBB_CFG_DOUBLE, "2",
     offsetof(struct dl_cfg, move_factor),
     "Move a running job to a cheaper offer only when the expected saving "
     "exceeds this many restart overheads at the new price."},
    {"move_fraction", EBB_CFG_DOUBLE, "0.05",
     offsetof(struct dl_cfg, move_fraction),
     "... and this fraction of the expected cost of staying."},
    {"checkpoint_every", EBB_CFG_DURATION, "1h",
     offsetof(struct dl_cfg, checkpoint_every),
     "Reference work between checkpoints for jobs without periodic "
     "checkpoints (checkpoint: {every: ...}); a job's own interval wins. "
     "Used for budget checks and preemption rework."},
    {"lose_unsaved", EBB_CFG_BOOL, "false",
     offsetof(struct dl_cfg, lose_unsaved),
     "Count the work since the last checkpoint as lost on a preemption "
     "(false: the notice leaves time to checkpoint, as on AWS)."},
    EBB_CFG_END,
};

static int dl_create(const struct ebb_host *host, const void *config,
                     void **self)
{
    struct dl *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return EBB_ENOMEM;
    p->host = host;
    p->cfg = (struct dl_cfg){
        .safety_margin = 10 * EBB_MS_PER_MINUTE,
        .margin_fraction = 0.02,
        .hysteresis_overheads = 1,
        .reserve_overheads = 1,
        .move_factor = 2,
        .move_fraction = 0.05,
        .checkpoint_every = EBB_MS_PER_HOUR,
    };
    if (config != NULL)
        p->cfg = *(const struct dl_cfg *)config;
    const struct dl_cfg *k = &p->cfg;
    if (k->safety_margin < 0 || k->checkpoint_every < 0 ||
        !(k->margin_fraction >= 0 && k->margin_fraction < 1) ||
        !(isfinite(k->hysteresis_overheads) && k->hysteresis_overheads >= 0) ||
        !(isfinite(k->reserve_overheads) && k->reserve_overheads >= 0) ||
        !(isfinite(k->move_factor) && k->move_factor >= 0) ||
        !(k->move_fraction >= 0 && k->move_fraction < 1)) {
        if (host != NULL && host->log != NULL)
            host->log(host->ctx, EBB_LOG_ERROR, "deadline: margins, "
                      "overheads and factors must be >= 0 and fractions "
                      "below 1 (try safety_margin: 10m, margin_fraction: "
                      "0.02)");
        free(p);
        return EBB_ECONFIG;
    }
    *self = p;
    return 0;
}

static void dl_destroy(void *self)
{
    free(self);
}

static int dl_decide(void *self, const struct ebb_job_view *job,
                     const struct ebb_market_view *market, ebb_time_ms now,
                     struct ebb_decision *out)
{
    struct pu_ctx c;
    int rc = pu_begin(&c, job, market, now, out);
    if (rc != 0)
        return rc;
    if (self == NULL)
        return EBB_EINVAL;
    if (pu_settled(&c, out))
        return 0;
    const struct dl *p = self;
    struct pu_model m = {
        .checkpoint_ms = pu_checkpoint_ms(job, p->cfg.checkpoint_every),
        .margin_ms = (double)p->cfg.safety_margin,
        .margin_frac = p->cfg.margin_fraction,
        .lose_unsaved = p->cfg.lose_unsaved,
    };
    struct dlr_params rp = {
        .hysteresis_overheads = p->cfg.hysteresis_overheads,
        .reserve_overheads = p->cfg.reserve_overheads,
        .move_factor = p->cfg.move_factor,
        .move_fraction = p->cfg.move_fraction,
    };
    struct dlr_state s;
    dlr_begin(&s, &rp, &c, &m);
    struct pu_cost_cache cache;
    pu_cache_attach(&c, &cache, &m);
    if (c.running != PU_NONE)
        dlr_running(&s, out);
    else
        dlr_idle(&s, out);
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
};

EBB_EXTERN const struct ebb_policy *ebb_policy_entry(void);

const struct ebb_policy *ebb_policy_entry(void)
{
    return &dl_policy;
}
