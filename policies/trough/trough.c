/* trough — waits for a forecast price trough when the deadline and the
 * budget leave room, otherwise runs now; provider, zone and instance type
 * are chosen by expected cost per unit of work.
 *
 * Expected cost of finishing on offer k when starting `w` from now
 * (pu_expected_cost in policy_util.h): the forecast p50 price integrated
 * over the hours needed, (remaining work / speed_k + restart overhead) *
 * (1 + hazard_k * loss_k), loss_k being the restart overhead (plus half a
 * checkpoint interval with lose_unsaved). A faster, pricier instance wins
 * when its price per unit of work is lower; a risky offer loses by its
 * expected rework. Without forecasts the price now holds for ever.
 *
 * Rules, in order:
 * 1. Shared cases (pu_settled): budget spent, work done, nothing to run on.
 * 2. Forced changes of a running job (dl_rules.h): a market the job may not
 *    use, a budget that does not reach the next checkpoint (STOP), a
 *    spot-fallback job whose slack on on-demand would not survive one more
 *    preemption (LAUNCH on-demand).
 * 3. The trough: among the offers that can be run now (available, allowed,
 *    within the budget) and each forecast hour up to `max_wait` ahead, the
 *    start (k, w) with the lowest expected cost such that waiting still
 *    leaves the deadline safe: for a spot-fallback job the slack on its
 *    on-demand fallback after waiting w and one restart, less the expected
 *    preemption delays on k, stays above the floor (safety_margin +
 *    margin_fraction of the fallback's run time); for other jobs the same
 *    on k itself. If it beats the best start now (for a running job:
 *    keeping it, or moving) by `min_saving` and, for a running job, by
 *    more than move_factor restart overheads' worth: WAIT until then
 *    (STOP a running job first).
 * 4. Otherwise the deadline policy's rules (dl_rules.c): keep a running
 *    job unless a move clearly pays; start an idle one on the lowest
 *    expected cost per unit of work, spot first; with no spot, wait for it
 *    while the slack is above a reserve, then on-demand.
 * Without forecasts (n_forecast == 0) rule 3 never fires: the job runs now
 * on the cheapest expected cost per work; it waits only for spot capacity,
 * as the deadline policy does, never for nothing.
 */
#include <ebb/policy.h>

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "common/dl_rules.h"
#include "common/policy_util.h"

struct trough_cfg {
    struct dl_cfg dl; /* the deadline rules' knobs, first */
    double min_saving;
    ebb_dur_ms max_wait;
};

struct trough {
    const struct ebb_host *host;
    struct trough_cfg cfg;
    struct pu_memo memo;
};

static const struct ebb_cfg_key trough_keys[] = {
    DL_CFG_KEYS(struct trough_cfg, dl.)
    {"min_saving", EBB_CFG_DOUBLE, "0.05",
     offsetof(struct trough_cfg, min_saving),
     "Wait for a trough only when it is expected to save this fraction of "
     "the best cost now."},
    {"max_wait", EBB_CFG_DURATION, "24h",
     offsetof(struct trough_cfg, max_wait),
     "Look this far ahead in the forecast for a cheaper start."},
    EBB_CFG_END,
};

static int trough_create(const struct ebb_host *host, const void *config,
                         void **self)
{
    struct trough *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return EBB_ENOMEM;
    p->host = host;
    if (config != NULL)
        p->cfg = *(const struct trough_cfg *)config;
    else
        p->cfg = (struct trough_cfg){dl_cfg_defaults(), 0.05, 24 * EBB_MS_PER_HOUR};
    const struct trough_cfg *k = &p->cfg;
    int rc = dl_cfg_check(&k->dl, host, "trough");
    if (rc == 0 && (k->max_wait < 0 || !(k->min_saving >= 0 && k->min_saving < 1))) {
        if (host != NULL && host->log != NULL)
            host->log(host->ctx, EBB_LOG_ERROR, "trough: max_wait must be >= 0 "
                      "and min_saving in [0, 1) (try min_saving: 0.05, "
                      "max_wait: 24h)");
        rc = EBB_ECONFIG;
    }
    if (rc != 0) {
        free(p);
        return rc;
    }
    *self = p;
    return 0;
}

static void trough_destroy(void *self)
{
    struct trough *p = self;
    if (p != NULL)
        pu_memo_free(&p->memo);
    free(p);
}

/* A later start: offer k, `wait` ms from now, expected cost `cost`. */
struct later {
    size_t k;
    double wait;
    double cost;
};

/* When starting on offer k after a wait keeps the deadline safe: the
 * slack left after the wait, less a restart and the preemption delays
 * expected on k, stays at or above the floor. The parts that do not depend
 * on the wait are worked out once per offer; so are the delays unless the
 * offer's hazard depends on the hour. */
struct safety {
    int always;   /* no deadline */
    double slack; /* the guard's q, or the slack on k itself */
    double start; /* the restart counted on top of the wait (guard) */
    double delays;
    double floor;
    int by_hour;  /* delays depend on when the run starts */
    const struct dlr_state *s;
    size_t k;
    double run;   /* the run's wall ms, its restart included */
};

static void safety_init(const struct dlr_state *s, size_t k, struct safety *f)
{
    const struct pu_ctx *c = s->c;
    *f = (struct safety){.always = !pu_has_deadline(c)};
    if (f->always)
        return;
    f->s = s;
    f->k = k;
    f->run = pu_wall_ms(c, k) + s->g.d;
    f->by_hour = pu_hazard_by_hour(c, k) != NULL;
    /* Preemptions expected while running on k, each costing its loss. */
    f->delays = pu_expected_delays_ms(c, k, &s->m, (double)c->now, f->run);
    if (s->g.on) {
        f->slack = s->g.q;
        f->start = pu_offer(c, k)->market == EBB_MARKET_SPOT ? s->g.d : 0;
        f->floor = s->g.floor;
    } else {
        f->slack = pu_slack_fresh(c, k);
        f->floor = s->m.margin_ms + s->m.margin_frac * pu_wall_ms(c, k);
    }
}

/* 1 when a start after waiting `w` ms passes. */
static int safe_after(const struct safety *f, double w)
{
    if (f->always)
        return 1;
    double delays = f->delays;
    if (f->by_hour)
        delays = pu_expected_delays_ms(f->s->c, f->k, &f->s->m,
                                       (double)f->s->c->now + w, f->run);
    return f->slack - w - f->start - delays >= f->floor;
}

/* The cheapest safe start after some wait that costs less than `below`:
 * offers that can be run now (a trough is waited for where the job can go
 * now, not on a hope of capacity), each forecast point within max_wait, up
 * to the first point where the wait would no longer be safe (later points
 * are later still). pu_cheapest_later() integrates each offer's forecast
 * in one pass; offers that cannot beat `below` or the best so far are
 * passed over. k is PU_NONE when no start costs less than `below`. */
static struct later best_later(const struct dlr_state *s, double max_wait,
                               double below)
{
    const struct pu_ctx *c = s->c;
    struct later best = {PU_NONE, 0, below};
    for (size_t i = 0; i < c->n; i++) {
        size_t k = pu_nth(c, i);
        if (pu_past_bound(c, k, best.cost))
            break;
        const struct ebb_offer *o = pu_offer_fc(c, k);
        if (o->forecast == NULL || o->n_forecast == 0 ||
            !pu_guard_market_ok(c, &s->g, k) || !pu_ready(c, k) ||
            !pu_budget_fits(c, k, &s->m, NULL, NULL))
            continue;
        if (pu_cannot_beat(c, k, &s->m, best.cost))
            continue;
        struct safety f;
        safety_init(s, k, &f);
        size_t end = 0;
        for (; end < o->n_forecast; end++) {
            double w = (double)o->forecast[end].at - (double)c->now;
            if (!(w > 0))
                continue;
            if (w > max_wait || !safe_after(&f, w))
                break;
        }
        double e, w;
        if (pu_cheapest_later(c, k, end, &s->m, &e, &w) == PU_NONE)
            continue;
        /* Ties go to the lower index, whatever order the offers come in. */
        if (e < best.cost ||
            (e == best.cost && best.k != PU_NONE && k < best.k))
            best = (struct later){k, w, e};
    }
    return best;
}

static int trough_decide(void *self, const struct ebb_job_view *job,
                         const struct ebb_market_view *market, ebb_time_ms now,
                         struct ebb_decision *out)
{
    struct trough *p = self;
    struct dl_decision d;
    int rc;
    if (dl_prepare(&d, p != NULL ? &p->cfg.dl : NULL,
                   p != NULL ? &p->memo : NULL, job, market, now, out, &rc))
        return rc;
    if (d.c.running != PU_NONE && dlr_running_forced(&d.s, out))
        return 0;

    /* The best start now: keeping the running instance, or the cheapest
     * expected launch the rules allow. */
    double now_cost = INFINITY;
    if (d.c.running != PU_NONE)
        now_cost = pu_expected_cost(&d.c, d.c.running, 0, &d.m);
    double launch_cost = INFINITY;
    size_t launch = pu_best_fit(&d.c, &d.s.g, &d.m, -1, d.c.running,
                                &launch_cost, NULL);
    if (launch != PU_NONE && launch_cost < now_cost)
        now_cost = launch_cost;

    /* Only a start that saves min_saving matters, so the search looks for
     * nothing dearer. */
    struct later l = best_later(&d.s, (double)p->cfg.max_wait,
                                now_cost * (1.0 - p->cfg.min_saving));
    int worth = l.k != PU_NONE;
    if (worth && d.c.running != PU_NONE)
        worth = dlr_move_pays(&d.s, l.k,
                              pu_expected_cost(&d.c, d.c.running, 0, &d.m),
                              l.cost);
    if (worth) {
        char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT];
        char m1[PU_MONEY_TEXT], m2[PU_MONEY_TEXT];
        if (d.c.running != PU_NONE)
            pu_stop(out, "forecast trough in %s on %s: expected %s to "
                    "finish vs %s now; pausing until then",
                    pu_dur_text(l.wait, dur), pu_offer_text(&d.c, l.k, what),
                    pu_money_text(l.cost, m1), pu_money_text(now_cost, m2));
        else
            pu_wait(out, pu_after(now, l.wait), "forecast trough in %s on "
                    "%s: expected %s to finish vs %s now",
                    pu_dur_text(l.wait, dur), pu_offer_text(&d.c, l.k, what),
                    pu_money_text(l.cost, m1), pu_money_text(now_cost, m2));
        return 0;
    }
    dl_decide_rules(&d, out);
    return 0;
}

static const struct ebb_policy trough_policy = {
    .abi = EBB_POLICY_ABI,
    .struct_size = sizeof(struct ebb_policy),
    .name = "trough",
    .description = "Waits for a forecast price trough when deadline and "
                   "budget allow, else runs now on the offer with the lowest "
                   "expected cost per unit of work (price, forecast, "
                   "preemption risk, restarts, speed).",
    .config_keys = trough_keys,
    .config_size = sizeof(struct trough_cfg),
    .create = trough_create,
    .destroy = trough_destroy,
    .decide = trough_decide,
    .flags = EBB_POLICY_ASKS_FORECASTS,
};

const struct ebb_policy *ebb_policy_entry(void)
{
    return &trough_policy;
}
