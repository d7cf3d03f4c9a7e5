/* greedy — use spot whenever it is there, on-demand only when the deadline
 * leaves no other choice. The baseline policy of Wu et al., "Can't Be Late"
 * (NSDI'24), with a safety margin.
 *
 * "Slack" is the wall time the job can still lose and finish by the
 * deadline on the on-demand offer it would fall back on (policy_util.h:
 * deadline - now - remaining work / speed - one restart overhead unless it
 * already runs there). Rules for a spot-fallback job, in order:
 * 1. Shared cases (pu_settled): budget spent, work done, nothing to run on.
 * 2. On on-demand: KEEP it. Greedy never goes back to spot, except when the
 *    slack left after two more restarts (onto spot now, back to on-demand
 *    later) is still at least `return_slack` + `safety_margin` (this only
 *    happens when the deadline moved or on-demand is faster); 0 disables it.
 * 3. On spot: KEEP it while progress is being made and this instance alone
 *    still finishes by the deadline. When it cannot (a slower spot type)
 *    and the slack is under `safety_margin`, move to on-demand if that
 *    finishes sooner. A lost spot instance makes the engine ask again.
 * 4. Idle and slack <= `safety_margin`: LAUNCH on-demand (even if spot is
 *    available: a spot start with no slack left would miss the deadline on
 *    the first preemption).
 * 5. Idle: LAUNCH the available spot offer cheapest per unit of work.
 * 6. Idle, no spot: WAIT until the slack reaches `safety_margin` (or a
 *    market event comes first).
 * With no on-demand offer, or no deadline, a spot-fallback job is run as a
 * spot-only one. Spot-only jobs: cheapest available spot, kept, else WAIT.
 * On-demand-only jobs: as the on-demand policy.
 */
#include <ebb/policy.h>

#include <stddef.h>
#include <stdlib.h>

#include "common/policy_util.h"

struct greedy_cfg {
    ebb_dur_ms safety_margin;
    ebb_dur_ms return_slack;
};

struct greedy {
    const struct ebb_host *host;
    struct greedy_cfg cfg;
};

static const struct ebb_cfg_key greedy_keys[] = {
    {"safety_margin", EBB_CFG_DURATION, "10m",
     offsetof(struct greedy_cfg, safety_margin),
     "Switch to on-demand when the slack left after a restart falls under "
     "this (0 is the paper's last-moment greedy)."},
    {"return_slack", EBB_CFG_DURATION, "2h",
     offsetof(struct greedy_cfg, return_slack),
     "Leave on-demand for spot only if this much slack (over the safety "
     "margin) remains after two more restarts; 0 = never."},
    EBB_CFG_END,
};

static int greedy_create(const struct ebb_host *host, const void *config,
                         void **self)
{
    struct greedy *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return EBB_ENOMEM;
    p->host = host;
    p->cfg.safety_margin = 10 * EBB_MS_PER_MINUTE;
    p->cfg.return_slack = 2 * EBB_MS_PER_HOUR;
    if (config != NULL)
        p->cfg = *(const struct greedy_cfg *)config;
    if (p->cfg.safety_margin < 0 || p->cfg.return_slack < 0) {
        if (host != NULL && host->log != NULL)
            host->log(host->ctx, EBB_LOG_ERROR, "greedy: safety_margin and "
                      "return_slack must not be negative (try \"10m\")");
        free(p);
        return EBB_ECONFIG;
    }
    *self = p;
    return 0;
}

static void greedy_destroy(void *self)
{
    free(self);
}

/* Rule 2: on on-demand. */
static void greedy_on_demand(const struct greedy *g, const struct pu_ctx *c,
                             struct ebb_decision *out)
{
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT];
    size_t spot = pu_cheapest_spot(c);
    double margin = (double)g->cfg.safety_margin;
    if (g->cfg.return_slack > 0 && spot != PU_NONE) {
        double back = pu_slack_fresh(c, c->running) -
                      (double)(c->job->restart_overhead > 0
                                   ? c->job->restart_overhead : 0);
        if (back >= (double)g->cfg.return_slack + margin) {
            pu_launch(out, spot, "slack %s after two more restarts allows "
                      "it: back to %s", pu_dur_text(back, dur),
                      pu_offer_text(c, spot, what));
            pu_budget_note(c, spot, out);
            return;
        }
    }
    pu_keep(out, 0, "on %s; greedy stays on on-demand until done",
            pu_offer_text(c, c->running, what));
}

/* Rule 3: on spot. */
static void greedy_on_spot(const struct greedy *g, const struct pu_ctx *c,
                           size_t od, struct ebb_decision *out)
{
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT];
    double margin = (double)g->cfg.safety_margin;
    double here = pu_slack(c, c->running);
    double slack = pu_slack(c, od);
    if (here >= 0) {
        pu_keep(out, 0, "on %s, which finishes %s before the deadline; "
                "keeping it", pu_offer_text(c, c->running, what),
                pu_dur_text(here, dur));
        return;
    }
    if (slack < margin && slack > here) {
        pu_launch(out, od, "this spot instance cannot finish by the deadline "
                  "and slack is %s: switching to %s", pu_dur_text(slack, dur),
                  pu_offer_text(c, od, what));
        pu_budget_note(c, od, out);
        return;
    }
    pu_keep(out, slack >= margin ? pu_after(c->now, slack - margin) : 0,
            "on %s while on-demand slack lasts (%s)",
            pu_offer_text(c, c->running, what), pu_dur_text(slack, dur));
}

static void greedy_fallback(const void *self, const struct pu_ctx *c,
                            struct ebb_decision *out)
{
    const struct greedy *g = self;
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT], mdur[PU_DUR_TEXT];
    size_t od = pu_od_choice(c);
    if (od == PU_NONE || !pu_has_deadline(c)) {
        pu_run_market(c, EBB_MARKET_SPOT, out);
        return;
    }
    if (c->running != PU_NONE) {
        if (pu_offer(c, c->running)->market == EBB_MARKET_ON_DEMAND)
            greedy_on_demand(g, c, out);
        else
            greedy_on_spot(g, c, od, out);
        return;
    }
    double margin = (double)g->cfg.safety_margin;
    double slack = pu_slack(c, od);
    if (slack <= margin) {
        pu_launch(out, od, "slack %s after a restart is under the %s safety "
                  "margin: switching to %s", pu_dur_text(slack, dur),
                  pu_dur_text(margin, mdur), pu_offer_text(c, od, what));
        pu_budget_note(c, od, out);
        return;
    }
    size_t spot = pu_cheapest_spot(c);
    if (spot != PU_NONE) {
        pu_launch(out, spot, "%s is available (slack %s)",
                  pu_offer_text(c, spot, what), pu_dur_text(slack, dur));
        pu_budget_note(c, spot, out);
        return;
    }
    pu_wait(out, pu_after(c->now, slack - margin),
            "no spot offer is available; slack %s, on-demand in %s unless "
            "spot returns", pu_dur_text(slack, dur),
            pu_dur_text(slack - margin, mdur));
}

static int greedy_decide(void *self, const struct ebb_job_view *job,
                     const struct ebb_market_view *market, ebb_time_ms now,
                     struct ebb_decision *out)
{
    return pu_decide(self, job, market, now, out, greedy_fallback);
}

static const struct ebb_policy greedy_policy = {
    .abi = EBB_POLICY_ABI,
    .struct_size = sizeof(struct ebb_policy),
    .name = "greedy",
    .description = "Spot whenever available; on-demand only when the "
                   "deadline's slack runs out, then stay there.",
    .config_keys = greedy_keys,
    .config_size = sizeof(struct greedy_cfg),
    .create = greedy_create,
    .destroy = greedy_destroy,
    .decide = greedy_decide,
    .flags = EBB_POLICY_ASKS_FORECASTS,
};

const struct ebb_policy *ebb_policy_entry(void)
{
    return &greedy_policy;
}
