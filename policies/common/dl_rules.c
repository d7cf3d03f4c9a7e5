/* dl_rules — see dl_rules.h and the rules in deadline.c. */
#include "dl_rules.h"

#include <math.h>

void dlr_begin(struct dlr_state *s, const struct dlr_params *p,
               const struct pu_ctx *c, const struct pu_model *m)
{
    s->p = p;
    s->c = c;
    s->m = *m;
    pu_guard_init(c, m, &s->g);
    s->hyst = p->hysteresis_overheads * s->g.d;
}

double dlr_reserve(const struct dlr_state *s)
{
    return s->g.floor + (2 + s->p->hysteresis_overheads +
                         s->p->reserve_overheads) * s->g.d;
}

int dlr_move_pays(const struct dlr_state *s, size_t j, double keep,
                  double there)
{
    const struct pu_ctx *c = s->c;
    double restart_cost = (double)pu_offer(c, j)->price_per_hour * s->g.d /
                          (double)EBB_MS_PER_HOUR;
    double saving = keep - there;
    return saving > 0 && saving > s->p->move_factor * restart_cost &&
           saving > s->p->move_fraction * keep;
}

int dlr_running_forced(const struct dlr_state *s, struct ebb_decision *out)
{
    const struct pu_ctx *c = s->c;
    const struct pu_guard *g = &s->g;
    size_t r = c->running;
    char what[PU_OFFER_TEXT], other[PU_OFFER_TEXT];
    char dur[PU_DUR_TEXT], fdur[PU_DUR_TEXT];
    char m1[PU_MONEY_TEXT], m2[PU_MONEY_TEXT];
    double need, left;

    if (!pu_guard_market_ok(c, g, r)) {
        size_t k = pu_best_fit(c, g, &s->m, -1, r, NULL, NULL);
        if (k != PU_NONE)
            pu_launch(out, k, "the job may not run on %s: moving to %s",
                      pu_offer_text(c, r, what), pu_offer_text(c, k, other));
        else
            pu_stop(out, "the job may not run on %s and nothing else is "
                    "available: releasing it", pu_offer_text(c, r, what));
        return 1;
    }
    if (!pu_budget_fits(c, r, &s->m, &need, &left)) {
        pu_stop(out, "budget: up to %s until the next checkpoint on %s, "
                "only %s left: releasing it", pu_money_text(need, m1),
                pu_offer_text(c, r, what), pu_money_text(left, m2));
        return 1;
    }
    if (g->on && pu_offer(c, r)->market == EBB_MARKET_SPOT && g->q < g->floor) {
        pu_launch(out, g->od, "slack %s on on-demand would not survive one "
                  "more preemption (floor %s): switching to %s",
                  pu_dur_text(g->q, dur), pu_dur_text(g->floor, fdur),
                  pu_offer_text(c, g->od, what));
        return 1;
    }
    return 0;
}

void dlr_running(const struct dlr_state *s, struct ebb_decision *out)
{
    const struct pu_ctx *c = s->c;
    const struct pu_guard *g = &s->g;
    size_t r = c->running;
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT], fdur[PU_DUR_TEXT];
    char m1[PU_MONEY_TEXT], m2[PU_MONEY_TEXT];

    if (dlr_running_forced(s, out))
        return;
    int on_spot = pu_offer(c, r)->market == EBB_MARKET_SPOT;
    double keep = pu_expected_cost(c, r, 0, &s->m);
    /* Leaving on-demand (for a guarded job) or moving between offers of a
     * market: one test, a clear saving with room for the restart. */
    int filter = g->on && !on_spot ? EBB_MARKET_SPOT
                                   : (int)pu_offer(c, r)->market;
    double there = INFINITY;
    size_t j = pu_best_fit(c, g, &s->m, filter, r, &there, NULL);
    if (j != PU_NONE && pu_guard_spot_ok(c, g, j, s->hyst) &&
        dlr_move_pays(s, j, keep, there)) {
        pu_launch(out, j, "%s: expected %s to finish vs %s here, worth a "
                  "restart (slack %s)", pu_offer_text(c, j, what),
                  pu_money_text(there, m1), pu_money_text(keep, m2),
                  pu_dur_text(g->q, dur));
        return;
    }
    ebb_time_ms until = 0;
    if (g->on && on_spot)
        until = pu_after(c->now, g->q - g->floor);
    if (g->on)
        pu_keep(out, until, "on %s, expected %s to finish; slack %s on "
                "on-demand (floor %s)", pu_offer_text(c, r, what),
                pu_money_text(keep, m1), pu_dur_text(g->q, dur),
                pu_dur_text(g->floor, fdur));
    else
        pu_keep(out, until, "on %s, expected %s to finish; keeping it",
                pu_offer_text(c, r, what), pu_money_text(keep, m1));
}

void dlr_idle(const struct dlr_state *s, struct ebb_decision *out)
{
    const struct pu_ctx *c = s->c;
    const struct pu_guard *g = &s->g;
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT], fdur[PU_DUR_TEXT];
    char m1[PU_MONEY_TEXT];
    int blocked = 0;

    if (g->on && g->q - g->d < g->floor) {
        if (!pu_budget_fits(c, g->od, &s->m, NULL, NULL))
            pu_wait(out, 0, "budget: %s could cost more before its next "
                    "checkpoint than is left; waiting",
                    pu_offer_text(c, g->od, what));
        else if (g->q < 0)
            pu_launch(out, g->od, "the deadline cannot be met (short by "
                      "%s): the safest offer, %s", pu_dur_text(-g->q, dur),
                      pu_offer_text(c, g->od, what));
        else
            pu_launch(out, g->od, "slack %s leaves no room for a spot start "
                      "(floor %s): %s until done", pu_dur_text(g->q, dur),
                      pu_dur_text(g->floor, fdur),
                      pu_offer_text(c, g->od, what));
        return;
    }
    double cost = INFINITY;
    size_t spot = pu_best_fit(c, g, &s->m, EBB_MARKET_SPOT, PU_NONE, NULL,
                              NULL);
    size_t any = pu_best_fit(c, g, &s->m, -1, PU_NONE, &cost, &blocked);
    if (any != PU_NONE && (spot != PU_NONE || !g->on)) {
        if (pu_has_deadline(c) && pu_slack(c, any) < 0)
            pu_launch(out, any, "%s is the best offer, but the deadline "
                      "will be missed by %s", pu_offer_text(c, any, what),
                      pu_dur_text(-pu_slack(c, any), dur));
        else
            pu_launch(out, any, "%s has the lowest expected cost per unit "
                      "of work (%s to finish)", pu_offer_text(c, any, what),
                      pu_money_text(cost, m1));
        return;
    }
    if (blocked && any == PU_NONE) {
        pu_wait(out, 0, "budget: every available offer could cost more "
                "before its next checkpoint than is left; waiting");
        return;
    }
    if (!g->on) {
        pu_wait(out, 0, "no %s offer is available; waiting for one",
                c->job->market == EBB_JOB_ON_DEMAND ? "on-demand" : "spot");
        return;
    }
    /* Guarded, no spot: wait for it while the reserve allows. */
    double reserve = dlr_reserve(s);
    if (g->q > reserve) {
        pu_wait(out, pu_after(c->now, g->q - reserve), "no spot is "
                "available; slack %s, on-demand in %s unless spot returns",
                pu_dur_text(g->q, dur), pu_dur_text(g->q - reserve, fdur));
        return;
    }
    if (any == PU_NONE) {
        pu_wait(out, 0, "no spot is available and nothing else may run "
                "now; waiting");
        return;
    }
    pu_launch(out, any, "no spot is available and slack %s is down to the "
              "reserve %s: %s", pu_dur_text(g->q, dur),
              pu_dur_text(reserve, fdur), pu_offer_text(c, any, what));
}

struct dl_cfg dl_cfg_defaults(void)
{
    return (struct dl_cfg){
        .safety_margin = 10 * EBB_MS_PER_MINUTE,
        .margin_fraction = 0.02,
        .hysteresis_overheads = 1,
        .reserve_overheads = 1,
        .move_factor = 2,
        .move_fraction = 0.05,
        .checkpoint_every = EBB_MS_PER_HOUR,
    };
}

int dl_cfg_check(const struct dl_cfg *k, const struct ebb_host *host,
                 const char *name)
{
    if (k->safety_margin < 0 || k->checkpoint_every < 0 ||
        !(k->margin_fraction >= 0 && k->margin_fraction < 1) ||
        !(isfinite(k->hysteresis_overheads) && k->hysteresis_overheads >= 0) ||
        !(isfinite(k->reserve_overheads) && k->reserve_overheads >= 0) ||
        !(isfinite(k->move_factor) && k->move_factor >= 0) ||
        !(k->move_fraction >= 0 && k->move_fraction < 1)) {
        if (host != NULL && host->log != NULL)
            host->log(host->ctx, EBB_LOG_ERROR, "%s: margins, overheads and "
                      "factors must be >= 0 and fractions below 1 (try "
                      "safety_margin: 10m, margin_fraction: 0.02)", name);
        return EBB_ECONFIG;
    }
    return 0;
}

void dl_cfg_apply(const struct dl_cfg *k, const struct ebb_job_view *job,
                  struct pu_model *m, struct dlr_params *rp)
{
    *m = (struct pu_model){
        .checkpoint_ms = pu_checkpoint_ms(job, k->checkpoint_every),
        .margin_ms = (double)k->safety_margin,
        .margin_frac = k->margin_fraction,
        .lose_unsaved = k->lose_unsaved,
    };
    *rp = (struct dlr_params){
        .hysteresis_overheads = k->hysteresis_overheads,
        .reserve_overheads = k->reserve_overheads,
        .move_factor = k->move_factor,
        .move_fraction = k->move_fraction,
    };
}

int dl_prepare(struct dl_decision *d, const struct dl_cfg *k,
               struct pu_memo *memo, const struct ebb_job_view *job,
               const struct ebb_market_view *market, ebb_time_ms now,
               struct ebb_decision *out, int *rc)
{
    *rc = pu_begin(&d->c, job, market, now, out);
    if (*rc == 0 && k == NULL)
        *rc = EBB_EINVAL;
    if (*rc != 0 || pu_settled(&d->c, out))
        return 1;
    dl_cfg_apply(k, job, &d->m, &d->rp);
    pu_memo_attach(&d->c, memo);
    dlr_begin(&d->s, &d->rp, &d->c, &d->m);
    pu_cache_attach(&d->c, &d->cache, &d->m);
    return 0;
}

void dl_decide_rules(const struct dl_decision *d, struct ebb_decision *out)
{
    if (d->c.running != PU_NONE)
        dlr_running(&d->s, out);
    else
        dlr_idle(&d->s, out);
}
