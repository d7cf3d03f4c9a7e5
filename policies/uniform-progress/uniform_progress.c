/* uniform-progress — the Uniform Progress policy of Z. Wu, W.-L. Chiang,
 * Z. Mao, Z. Yang, E. Friedman, S. Shenker, I. Stoica, "Can't Be Late:
 * Optimizing Spot Instance Savings under Deadlines", NSDI'24.
 *
 * The job should progress along the straight line from submission to the
 * deadline: expected progress ep(t) = work_total * (t - submitted_at) /
 * (deadline - submitted_at); current progress cp = work_done. With d the
 * restart overhead, the paper's rules are:
 *   (1) uniform progress: idle and cp < ep(t): go on-demand to catch up;
 *   (2) exploitation ("taking risks"): take spot whenever it is available,
 *       even when behind, and stay on it until it is preempted;
 *   (3) hysteresis: on on-demand, stay until cp >= ep(t + 2d);
 *   (4) safety net: idle and R(t) < C(t) + 2d (time to the deadline vs.
 *       compute left): go on-demand and stay until the end.
 * Here, with slack = R - C - d when idle (policy_util.h), rule 4 reads
 * slack < safety_overheads * d + safety_margin (defaults 1 and 0s: the
 * paper's 2d), and rule 3's look-ahead is hysteresis_overheads * d +
 * hysteresis_margin (defaults 2 and 0s: the paper's 2d). The margins add
 * fixed time for what the overhead does not cover (launch latency, work
 * lost since the last checkpoint).
 *
 * Rules for a spot-fallback job, in order:
 * 1. Shared cases (pu_settled): budget spent, work done, nothing to run on.
 * 2. On on-demand: KEEP while leaving would trip the safety net (the net
 *    "stays until the end": on on-demand the slack does not grow) or while
 *    cp < ep(now + H). Then LAUNCH the cheapest available spot, or, with
 *    none, STOP (ahead of the line: run only on spot).
 * 3. On spot: KEEP (exploitation). Only when this spot instance cannot
 *    finish by the deadline and the safety net trips is the job moved to
 *    on-demand, if that finishes sooner (a slower spot type).
 * 4. Idle and the safety net trips: LAUNCH on-demand.
 * 5. Idle, spot available: LAUNCH the one cheapest per unit of work.
 * 6. Idle, no spot, behind the line: LAUNCH on-demand.
 * 7. Idle, no spot, ahead: WAIT until the line catches up with progress or
 *    the safety net would trip, whichever is first.
 * The on-demand offer is the cheapest per unit of work that still finishes
 * by the deadline (else the fastest). With no on-demand offer or no
 * deadline a spot-fallback job runs as a spot-only one. Spot-only jobs:
 * cheapest available spot, kept, else WAIT. On-demand-only jobs: as the
 * on-demand policy.
 */
#include <ebb/policy.h>

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "common/policy_util.h"

struct up_cfg {
    double hysteresis_overheads;
    ebb_dur_ms hysteresis_margin;
    double safety_overheads;
    ebb_dur_ms safety_margin;
};

struct up {
    const struct ebb_host *host;
    struct up_cfg cfg;
};

static const struct ebb_cfg_key up_keys[] = {
    {"hysteresis_overheads", EBB_CFG_DOUBLE, "2",
     offsetof(struct up_cfg, hysteresis_overheads),
     "Leave on-demand only when progress is ahead of where the line will be "
     "this many restart overheads from now (paper: 2)."},
    {"hysteresis_margin", EBB_CFG_DURATION, "0s",
     offsetof(struct up_cfg, hysteresis_margin),
     "Fixed time added to that look-ahead, to flap less when restarts are "
     "cheap."},
    {"safety_overheads", EBB_CFG_DOUBLE, "1",
     offsetof(struct up_cfg, safety_overheads),
     "Safety net: go on-demand until done when the slack after a restart is "
     "under this many restart overheads (paper: 1, i.e. R < C + 2d)."},
    {"safety_margin", EBB_CFG_DURATION, "0s",
     offsetof(struct up_cfg, safety_margin),
     "Fixed time added to the safety net's threshold (launch latency, work "
     "lost since the last checkpoint)."},
    EBB_CFG_END,
};

static int up_create(const struct ebb_host *host, const void *config,
                     void **self)
{
    struct up *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return EBB_ENOMEM;
    p->host = host;
    p->cfg.hysteresis_overheads = 2.0;
    p->cfg.safety_overheads = 1.0;
    if (config != NULL)
        p->cfg = *(const struct up_cfg *)config;
    const struct up_cfg *k = &p->cfg;
    if (!(isfinite(k->hysteresis_overheads) && k->hysteresis_overheads >= 0) ||
        !(isfinite(k->safety_overheads) && k->safety_overheads >= 0) ||
        k->hysteresis_margin < 0 || k->safety_margin < 0) {
        if (host != NULL && host->log != NULL)
            host->log(host->ctx, EBB_LOG_ERROR, "uniform-progress: the "
                      "hysteresis and safety settings must be >= 0 (try "
                      "hysteresis_overheads: 2, safety_margin: 5m)");
        free(p);
        return EBB_ECONFIG;
    }
    *self = p;
    return 0;
}

static void up_destroy(void *self)
{
    free(self);
}

/* What one decision needs beyond pu_ctx. */
struct up_state {
    const struct pu_ctx *c;
    double d;      /* restart overhead, ms */
    double safety; /* the safety net's threshold on slack, ms */
    double ahead;  /* hysteresis look-ahead H, ms */
    double cp;     /* progress, reference ms */
};

/* Expected progress at time t on the line from submission to deadline. */
static double up_line(const struct pu_ctx *c, double t)
{
    const struct ebb_job_view *job = c->job;
    double total = (double)job->work_total;
    double span = (double)job->deadline - (double)job->submitted_at;
    if (span <= 0)
        return total;
    double dt = t - (double)job->submitted_at;
    if (dt <= 0)
        return 0;
    if (dt >= span)
        return total;
    /* Multiplying first keeps whole numbers exact (below 2^53). */
    return total * dt / span;
}

static double up_pct(const struct pu_ctx *c, double work)
{
    return 100.0 * work / (double)c->job->work_total;
}

/* When, on on-demand offer k, progress will reach the line H ahead: solves
 * cp + s (t - start) = ep(start + H) + r (t - start) with work rate s and
 * line slope r, starting once the restart overhead has passed. 0 ("on
 * events") when on-demand does not outpace the line. */
static ebb_time_ms up_catch_up(const struct up_state *u, size_t k)
{
    const struct pu_ctx *c = u->c;
    const struct ebb_job_view *job = c->job;
    double span = (double)job->deadline - (double)job->submitted_at;
    if (span <= 0)
        return 0;
    double r = (double)job->work_total / span;
    double s = pu_offer(c, k)->speed;
    if (!(s > r))
        return 0;
    double start = (double)c->now;
    double warm = (double)job->running_since + u->d;
    if (warm > start)
        start = warm;
    double gap = up_line(c, start + u->ahead) - u->cp;
    if (gap < 0)
        gap = 0;
    return pu_after(c->now, start + gap / (s - r) - (double)c->now);
}

/* Rule 2: on on-demand. */
static void up_on_demand(const struct up_state *u, struct ebb_decision *out)
{
    const struct pu_ctx *c = u->c;
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT], tdur[PU_DUR_TEXT];
    double fresh = pu_slack_fresh(c, c->running);
    if (fresh < u->safety) {
        pu_keep(out, 0, "safety net: slack %s after a restart is under %s: "
                "staying on on-demand until done", pu_dur_text(fresh, dur),
                pu_dur_text(u->safety, tdur));
        return;
    }
    double want = up_line(c, (double)c->now + u->ahead);
    if (u->cp < want) {
        pu_keep(out, up_catch_up(u, c->running),
                "progress %.1f%% is not yet ahead of the line %s from now "
                "(%.1f%%): staying on on-demand (hysteresis)",
                up_pct(c, u->cp), pu_dur_text(u->ahead, dur),
                up_pct(c, want));
        return;
    }
    size_t spot = pu_cheapest_spot(c);
    if (spot != PU_NONE) {
        pu_launch(out, spot, "progress %.1f%% is ahead of the line (%.1f%% in "
                  "%s): leaving on-demand for %s", up_pct(c, u->cp),
                  up_pct(c, want), pu_dur_text(u->ahead, dur),
                  pu_offer_text(c, spot, what));
        pu_budget_note(c, spot, out);
        return;
    }
    pu_stop(out, "progress %.1f%% is ahead of the line (%.1f%% in %s) and no "
            "spot is available: releasing on-demand", up_pct(c, u->cp),
            up_pct(c, want), pu_dur_text(u->ahead, dur));
}

/* Rule 3: on spot. */
static void up_on_spot(const struct up_state *u, size_t od,
                       struct ebb_decision *out)
{
    const struct pu_ctx *c = u->c;
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT];
    double here = pu_slack(c, c->running);
    double slack = pu_slack(c, od);
    if (here < 0 && slack < u->safety && slack > here) {
        pu_launch(out, od, "safety net: this spot instance cannot finish by "
                  "the deadline and slack is %s: switching to %s",
                  pu_dur_text(slack, dur), pu_offer_text(c, od, what));
        pu_budget_note(c, od, out);
        return;
    }
    ebb_time_ms until = 0;
    if (here < 0 && slack >= u->safety)
        until = pu_after(c->now, slack - u->safety);
    pu_keep(out, until, "on %s; staying until it is preempted (progress "
            "%.1f%%, line %.1f%%)", pu_offer_text(c, c->running, what),
            up_pct(c, u->cp), up_pct(c, up_line(c, (double)c->now)));
}

static void up_fallback(const void *self, const struct pu_ctx *c,
                        struct ebb_decision *out)
{
    const struct up *p = self;
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT], tdur[PU_DUR_TEXT];
    size_t od = pu_od_choice(c);
    if (od == PU_NONE || !pu_has_deadline(c)) {
        pu_run_market(c, EBB_MARKET_SPOT, out);
        return;
    }
    struct up_state u = {.c = c};
    u.d = c->job->restart_overhead > 0 ? (double)c->job->restart_overhead : 0;
    u.safety = p->cfg.safety_overheads * u.d + (double)p->cfg.safety_margin;
    u.ahead = p->cfg.hysteresis_overheads * u.d +
              (double)p->cfg.hysteresis_margin;
    u.cp = c->job->work_done > 0 ? (double)c->job->work_done : 0;

    if (c->running != PU_NONE) {
        if (pu_offer(c, c->running)->market == EBB_MARKET_ON_DEMAND)
            up_on_demand(&u, out);
        else
            up_on_spot(&u, od, out);
        return;
    }
    double slack = pu_slack(c, od);
    if (slack < u.safety) {
        pu_launch(out, od, "safety net: slack %s after a restart is under %s: "
                  "%s until done", pu_dur_text(slack, dur),
                  pu_dur_text(u.safety, tdur), pu_offer_text(c, od, what));
        pu_budget_note(c, od, out);
        return;
    }
    double line = up_line(c, (double)c->now);
    size_t spot = pu_cheapest_spot(c);
    if (spot != PU_NONE) {
        pu_launch(out, spot, "%s is available (progress %.1f%%, line %.1f%%)",
                  pu_offer_text(c, spot, what), up_pct(c, u.cp),
                  up_pct(c, line));
        pu_budget_note(c, spot, out);
        return;
    }
    if (u.cp < line) {
        pu_launch(out, od, "progress %.1f%% is behind the line %.1f%% and no "
                  "spot is available: %s", up_pct(c, u.cp), up_pct(c, line),
                  pu_offer_text(c, od, what));
        pu_budget_note(c, od, out);
        return;
    }
    /* The line passes cp at submitted_at + cp / work_total * span. */
    const struct ebb_job_view *job = c->job;
    double span = (double)job->deadline - (double)job->submitted_at;
    double cross = (double)job->submitted_at +
                   u.cp * span / (double)job->work_total - (double)c->now;
    double net = slack - u.safety;
    pu_wait(out, pu_after(c->now, cross < net ? cross : net),
            "progress %.1f%% is %s the line %.1f%% and no spot is "
            "available: waiting (slack %s)", up_pct(c, u.cp),
            u.cp > line ? "ahead of" : "on", up_pct(c, line),
            pu_dur_text(slack, dur));
}

static int up_decide(void *self, const struct ebb_job_view *job,
                     const struct ebb_market_view *market, ebb_time_ms now,
                     struct ebb_decision *out)
{
    return pu_decide(self, job, market, now, out, up_fallback);
}

static const struct ebb_policy up_policy = {
    .abi = EBB_POLICY_ABI,
    .struct_size = sizeof(struct ebb_policy),
    .name = "uniform-progress",
    .description = "Uniform Progress (Wu et al., NSDI'24): keep pace with the "
                   "line to the deadline, spot first, on-demand to catch up.",
    .config_keys = up_keys,
    .config_size = sizeof(struct up_cfg),
    .create = up_create,
    .destroy = up_destroy,
    .decide = up_decide,
    .flags = EBB_POLICY_ASKS_FORECASTS,
};

const struct ebb_policy *ebb_policy_entry(void)
{
    return &up_policy;
}
