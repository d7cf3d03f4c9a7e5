/* renewal — spot or on-demand by solving the job's finite-horizon problem
 * against a learned model of the spot pool's availability.
 *
 * The model (rn_model.h): up and down periods of the spot offer's capacity
 * alternate, each a mixture of a short and a long exponential kind,
 * fitted to the lengths in the offer's record (ebb_offer up_lengths,
 * down_lengths) plus a prior worth prior_weight periods (the settings
 * up_short, up_long, up_short_share and the same for down), so a pool's
 * first job plans with the prior and later jobs with what the pool
 * showed; how long the period in effect has lasted says which kind it
 * likely is.
 * The decision (rn_dp.h): the least expected cost to finish by the
 * deadline over (work left, slack left above the safety net's floor, job
 * idle / on spot / on on-demand, the chain's phase), solved by backward
 * induction on a grid whose step divides the restart overhead; the job
 * takes the action with the lowest expected cost under its belief about
 * the phase. Solved tables and fits are kept in the instance and shared
 * by every job and decision with the same inputs (the answers are those
 * of solving anew).
 *
 * The safety net, and why it always finishes on on-demand. Let q be the
 * slack on the on-demand fallback counting one restart (pu_guard: deadline
 * - now - work left / its speed - restart overhead d) and F >= 0 the floor
 * (safety_margin). The policy keeps q >= F whenever the job is not on
 * on-demand:
 * - idle, q falls at rate 1: the policy never waits past q = F (it asks
 *   to be woken then) and at q <= F launches on-demand, which finishes
 *   d + work / speed = deadline - now - q <= deadline - F after now;
 * - on on-demand q stays put; the job leaves it (for spot or to wait)
 *   only while q > F + one grid step, or q - d >= F for a spot start;
 * - a spot start is allowed only when q - d >= F: its overhead spends d of
 *   q, and at the fallback's speed or faster q does not fall after, so a
 *   preemption at the worst moment leaves q >= F, and on-demand as above;
 *   a spot offer slower than the fallback is left for on-demand when q
 *   reaches F (it is asked again then).
 * So whatever spot capacity does, a job whose deadline was feasible when
 * it could still start on-demand with q >= F finishes by it, whatever the
 * model believes: the model only chooses among safe moves. A job already
 * past saving runs on the fastest on-demand offer.
 *
 * Rules for a spot-fallback job (others as in every policy: pu_decide):
 * without a deadline or an on-demand offer it runs on spot only; with no
 * spot offer in its view at all it runs on on-demand. Otherwise the spot
 * offer planned for is the one it runs on, else the cheapest available
 * per unit of work, else the cheapest of all (waiting for it to come).
 */
#include <ebb/policy.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/policy_util.h"
#include "rn_cache.h"
#include "rn_dp.h"
#include "rn_model.h"

struct rn_cfg {
    ebb_dur_ms up_short, up_long, down_short, down_long;
    double up_short_share, down_short_share;
    double prior_weight;
    ebb_dur_ms safety_margin;
};

struct rn {
    const struct ebb_host *host;
    struct rn_cfg cfg;
    struct rn_mix up, down;       /* the prior */
    struct rn_mix up_no, down_no; /* the fit of an empty record */
    struct rn_cache *cache;
};

/* Defaults: the prior fitted on every shipped availability trace
 * (bench-policies --cbl prints the fit; docs/policies.md). */
static const struct ebb_cfg_key rn_keys[] = {
    {"up_short", EBB_CFG_DURATION, "22m", offsetof(struct rn_cfg, up_short),
     "Prior: mean length of a short period with spot capacity."},
    {"up_long", EBB_CFG_DURATION, "18h", offsetof(struct rn_cfg, up_long),
     "Prior: mean length of a long period with spot capacity."},
    {"up_short_share", EBB_CFG_DOUBLE, "0.74",
     offsetof(struct rn_cfg, up_short_share),
     "Prior: share of periods with capacity that are short (0..1)."},
    {"down_short", EBB_CFG_DURATION, "16m",
     offsetof(struct rn_cfg, down_short),
     "Prior: mean length of a short period without spot capacity."},
    {"down_long", EBB_CFG_DURATION, "5h49m", offsetof(struct rn_cfg, down_long),
     "Prior: mean length of a long period without spot capacity."},
    {"down_short_share", EBB_CFG_DOUBLE, "0.78",
     offsetof(struct rn_cfg, down_short_share),
     "Prior: share of periods without capacity that are short (0..1)."},
    {"prior_weight", EBB_CFG_DOUBLE, "4",
     offsetof(struct rn_cfg, prior_weight),
     "How many periods the prior counts for against the pool's own record."},
    {"safety_margin", EBB_CFG_DURATION, "5m",
     offsetof(struct rn_cfg, safety_margin),
     "Slack kept on the on-demand fallback at all times (the safety net's "
     "floor): launch latency, rounding."},
    EBB_CFG_END,
};

static struct rn_cfg rn_defaults(void)
{
    return (struct rn_cfg){
        .up_short = 22 * 60000LL,
        .up_long = 18 * 3600000LL,
        .up_short_share = 0.74,
        .down_short = 16 * 60000LL,
        .down_long = (5 * 60 + 49) * 60000LL,
        .down_short_share = 0.78,
        .prior_weight = 4,
        .safety_margin = 5 * 60000LL,
    };
}

static int share_ok(double x)
{
    return isfinite(x) && x > 0 && x < 1;
}

static int rn_cfg_ok(const struct rn_cfg *k)
{
    return k->up_short > 0 && k->up_long >= k->up_short &&
           k->down_short > 0 && k->down_long >= k->down_short &&
           share_ok(k->up_short_share) && share_ok(k->down_short_share) &&
           isfinite(k->prior_weight) && k->prior_weight >= 0 &&
           k->safety_margin >= 0;
}

static int rn_create(const struct ebb_host *host, const void *config,
                     void **self)
{
    struct rn *p = calloc(1, sizeof(*p));
    struct rn_cache *cache = rn_cache_new();
    if (p == NULL || cache == NULL) {
        free(p);
        rn_cache_free(cache);
        return EBB_ENOMEM;
    }
    p->host = host;
    p->cache = cache;
    p->cfg = config != NULL ? *(const struct rn_cfg *)config : rn_defaults();
    const struct rn_cfg *k = &p->cfg;
    if (!rn_cfg_ok(k)) {
        if (host != NULL && host->log != NULL)
            host->log(host->ctx, EBB_LOG_ERROR, "renewal: the prior's "
                      "lengths must be > 0 with short <= long, its shares "
                      "strictly between 0 and 1, prior_weight and "
                      "safety_margin >= 0 (try up_short: 22m, up_long: 18h, "
                      "up_short_share: 0.74)");
        rn_cache_free(cache);
        free(p);
        return EBB_ECONFIG;
    }
    p->up = (struct rn_mix){k->up_short_share, (double)k->up_short / 3600000.0,
                            (double)k->up_long / 3600000.0};
    p->down = (struct rn_mix){k->down_short_share,
                              (double)k->down_short / 3600000.0,
                              (double)k->down_long / 3600000.0};
    rn_fit(NULL, &p->up, k->prior_weight, &p->up_no);
    rn_fit(NULL, &p->down, k->prior_weight, &p->down_no);
    *self = p;
    return 0;
}

static void rn_destroy(void *self)
{
    struct rn *p = self;
    if (p == NULL)
        return;
    rn_cache_free(p->cache);
    free(p);
}

/* The cheapest usable spot offer the job may use, available or not. */
static size_t rn_any_spot(const struct pu_ctx *c)
{
    size_t best = PU_NONE;
    for (size_t k = 0; k < c->n; k++) {
        const struct ebb_offer *o = pu_offer(c, k);
        if (o->market != EBB_MARKET_SPOT || !pu_usable(o) || !pu_allowed(c, k))
            continue;
        if (best == PU_NONE ||
            (double)o->price_per_hour * pu_offer(c, best)->speed <
                (double)pu_offer(c, best)->price_per_hour * o->speed)
            best = k;
    }
    return best;
}

/* One decision's facts. */
struct rn_job {
    const struct pu_ctx *c;
    struct pu_guard g;
    size_t spot;     /* the spot offer planned for */
    int spot_up;     /* it can be run now */
    const struct rn_table *t;
    double step;     /* the table's step, ms */
    double w;        /* work left, wall ms on the fallback */
    double s;        /* slack: time left - w - overhead still to run */
    int i, j;        /* the grid point of (w, s - the net's floor) */
    enum rn_job_state state;
    unsigned allowed; /* the actions weighed (rn_best) */
    struct rn_mix up, down;
    double belief[RN_PHASES];
};

/* Fills the plan's parameters for the job and finds its table. */
static void rn_plan(const struct rn *p, struct rn_job *r)
{
    const struct pu_ctx *c = r->c;
    const struct ebb_job_view *job = c->job;
    const struct ebb_offer *od = pu_offer(c, r->g.od);
    const struct ebb_offer *sp = pu_offer(c, r->spot);
    if (!rn_offer_fits(p->cache, sp, &p->up, &p->down, p->cfg.prior_weight,
                       &r->up, &r->down)) {
        r->up = p->up_no;
        r->down = p->down_no;
    }
    struct rn_params want;
    memset(&want, 0, sizeof(want)); /* compared bytewise: no stray padding */
    struct rn_mix up = {rn_quantize(r->up.p_short, RN_QSTEP_CHAIN),
                        rn_quantize(r->up.short_h, RN_QSTEP_CHAIN),
                        rn_quantize(r->up.long_h, RN_QSTEP_CHAIN)};
    struct rn_mix down = {rn_quantize(r->down.p_short, RN_QSTEP_CHAIN),
                          rn_quantize(r->down.short_h, RN_QSTEP_CHAIN),
                          rn_quantize(r->down.long_h, RN_QSTEP_CHAIN)};
    up.p_short = fmin(up.p_short, 1 - 1e-3);
    down.p_short = fmin(down.p_short, 1 - 1e-3);
    rn_chain_params(&up, &down, &want);
    /* The spot price per unit of work on a 1% grid of its ratio to
     * on-demand's: prices that move by fractions of a percent (a market's
     * small steps, the sampled futures of `ebb plan`) share one table,
     * each off by at most half a percent. */
    want.od_price = (double)od->price_per_hour;
    want.spot_price = (double)sp->price_per_hour * od->speed / sp->speed;
    if (want.od_price > 0)
        want.spot_price = want.od_price *
                          rn_quantize(want.spot_price / want.od_price, RN_QSTEP_PRICE);
    /* The grid is the job's own from submission to deadline, so that every
     * decision of the job (and of jobs like it) finds the same table. Its
     * slack is the slack above the safety net's floor: the net forbids
     * the moves that would spend the floor (rn_idle, rn_on_demand), so a
     * plan that counted on it would plan returns to spot it cannot make. */
    double total = (double)job->work_total / od->speed;
    double span = (double)job->deadline - (double)job->submitted_at;
    rn_grid(total, span - total - r->g.floor, pu_restart_ms(c), &want);
    r->t = rn_cache_table(p->cache, &want);
    r->step = want.step_ms;

    r->w = c->remaining / od->speed;
    double warm = 0;
    if (c->running != PU_NONE) {
        double left = (double)job->running_since + pu_restart_ms(c) -
                      (double)c->now;
        warm = left > 0 ? left : 0;
    }
    r->s = (double)job->deadline - (double)c->now - r->w - warm;
    r->i = (int)fmin(nearbyint(r->w / r->step), (double)INT32_MAX);
    double above = r->s - r->g.floor;
    r->j = above < 0 ? -1 : (int)fmin(floor(above / r->step), (double)INT32_MAX);
    if (c->running == PU_NONE)
        r->state = RN_JOB_IDLE;
    else if (pu_offer(c, c->running)->market == EBB_MARKET_SPOT)
        r->state = RN_JOB_SPOT;
    else
        r->state = RN_JOB_OD;
    /* Which actions are weighed. The belief about the phase is weighed as
     * if the phase were known after one step (the plan is solved per
     * phase), which overvalues waiting to see: so the job waits only for
     * spot that is not there (idle, or stopping on-demand to wait), and
     * with spot there chooses between spot and on-demand. On spot, the
     * choice is to keep it or move to on-demand. */
    if (r->state == RN_JOB_SPOT || r->spot_up)
        r->allowed = (1u << RN_RUN_SPOT) | (1u << RN_RUN_OD);
    else
        r->allowed = (1u << RN_WAIT) | (1u << RN_RUN_OD);
    ebb_time_ms since = EBB_POLICY_HAS(struct ebb_offer, sp, availability_since)
                            ? sp->availability_since
                            : 0;
    double age = since > 0 && since < c->now
                     ? (double)(c->now - since) / 3600000.0
                     : 0;
    rn_belief(&up, &down, r->spot_up, age, r->belief);
}

/* Ask again at least this often: the record, and so the fits, move. */
#define RN_REPLAN_MS 3600000.0

/* When, within RN_REPLAN_MS, the plan's best move from here stops being
 * `now_best` if nothing else changes: idle, slack falls one step per
 * step; on on-demand, work does. Returns ms from now, or INFINITY when
 * it does not within that time. */
static double rn_change_in(const struct rn_job *r, enum rn_action now_best)
{
    if (r->t == NULL)
        return INFINITY;
    int steps = (int)ceil(RN_REPLAN_MS / r->step);
    if (r->state == RN_JOB_IDLE) {
        for (int j = r->j - 1; j >= 0 && j >= r->j - steps; j--)
            if (rn_best(r->t, r->i, j, r->state, r->belief, r->allowed, NULL) != now_best)
                return r->s - r->g.floor - (double)(j + 1) * r->step;
        return INFINITY;
    }
    for (int i = r->i - 1; i >= 1 && i >= r->i - steps; i--)
        if (rn_best(r->t, i, r->j, r->state, r->belief, r->allowed, NULL) != now_best)
            return r->w - ((double)i + 0.5) * r->step;
    return INFINITY;
}

static ebb_time_ms rn_until(const struct rn_job *r, double change_ms,
                            double guard_ms)
{
    double d = fmin(fmin(change_ms, guard_ms), RN_REPLAN_MS);
    if (r->t != NULL) {
        int h = rn_horizon(r->t, r->i, r->j, r->state, r->belief,
                           r->state == RN_JOB_OD ? RN_RUN_OD : RN_WAIT);
        if (h > 0)
            d = fmin(d, h * r->step);
    }
    return pu_after(r->c->now, d > 1 ? d : 1);
}

/* The plan's best action, or (no table: out of memory) greedy's. */
static enum rn_action rn_choice(const struct rn_job *r, float *value)
{
    if (r->t != NULL)
        return rn_best(r->t, r->i, r->j, r->state, r->belief, r->allowed, value);
    *value = 0;
    if (r->state == RN_JOB_SPOT || r->spot_up)
        return RN_RUN_SPOT;
    return r->state == RN_JOB_OD ? RN_RUN_OD : RN_WAIT;
}

static void rn_note(const struct rn_job *r, struct ebb_decision *out,
                    float value)
{
    size_t len = strlen(out->reason);
    char money[PU_MONEY_TEXT];
    if (r->t == NULL)
        snprintf(out->reason + len, sizeof(out->reason) - len,
                 " (no memory for the plan: greedy)");
    else
        snprintf(out->reason + len, sizeof(out->reason) - len,
                 " (expected %s to finish; %s %.0f%% long)",
                 value < RN_BIG ? pu_money_text(value, money) : "-",
                 r->spot_up ? "up" : "down",
                 100 * r->belief[r->spot_up ? 1 : RN_UP_PHASES + 1]);
}

static void rn_idle(const struct rn_job *r, enum rn_action a,
                    struct ebb_decision *out)
{
    const struct pu_ctx *c = r->c;
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT];
    double room = r->g.q - r->g.floor; /* waiting time the net allows */
    if (room <= 0) {
        pu_launch(out, r->g.od, "safety net: slack %s on %s is at its floor",
                  pu_dur_text(r->g.q, dur), pu_offer_text(c, r->g.od, what));
        return;
    }
    if (a == RN_RUN_SPOT && r->spot_up &&
        pu_guard_spot_ok(c, &r->g, r->spot, 0)) {
        pu_launch(out, r->spot, "the plan starts %s",
                  pu_offer_text(c, r->spot, what));
        return;
    }
    if (a == RN_WAIT) {
        pu_wait(out, rn_until(r, rn_change_in(r, a), room),
                "the plan waits for spot (slack %s)", pu_dur_text(r->s, dur));
        return;
    }
    pu_launch(out, r->g.od, "the plan starts %s%s",
              pu_offer_text(c, r->g.od, what),
              a == RN_RUN_SPOT ? " (no room left for a spot start)" : "");
}

static void rn_on_spot(const struct rn_job *r, enum rn_action a,
                       struct ebb_decision *out)
{
    const struct pu_ctx *c = r->c;
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT];
    double room = r->g.q - r->g.floor;
    if (room < 0 || a == RN_RUN_OD) {
        pu_launch(out, r->g.od, "%s: moving to %s",
                  room < 0 ? "safety net: slack at its floor"
                           : "the plan leaves spot",
                  pu_offer_text(c, r->g.od, what));
        return;
    }
    /* q falls only on spot slower than the fallback: be asked at F. */
    double slower = pu_offer(c, c->running)->speed <
                            pu_offer(c, r->g.od)->speed
                        ? room
                        : INFINITY;
    pu_keep(out, rn_until(r, INFINITY, slower),
            "the plan keeps %s (slack %s)", pu_offer_text(c, c->running, what),
            pu_dur_text(r->s, dur));
}

static void rn_on_demand(const struct rn_job *r, enum rn_action a,
                         struct ebb_decision *out)
{
    const struct pu_ctx *c = r->c;
    char what[PU_OFFER_TEXT], dur[PU_DUR_TEXT];
    if (a == RN_RUN_SPOT && r->spot_up &&
        pu_guard_spot_ok(c, &r->g, r->spot, 0)) {
        pu_launch(out, r->spot, "the plan leaves on-demand for %s",
                  pu_offer_text(c, r->spot, what));
        return;
    }
    if (a == RN_WAIT && r->g.q - r->g.floor > r->step) {
        pu_stop(out, "the plan releases on-demand to wait for spot (slack %s)",
                pu_dur_text(r->s, dur));
        return;
    }
    pu_keep(out, rn_until(r, rn_change_in(r, RN_RUN_OD), INFINITY),
            "the plan keeps %s (slack %s)", pu_offer_text(c, c->running, what),
            pu_dur_text(r->s, dur));
}

static void rn_fallback(const void *self, const struct pu_ctx *c,
                        struct ebb_decision *out)
{
    const struct rn *p = self;
    struct pu_model m = {.margin_ms = (double)p->cfg.safety_margin};
    struct rn_job r = {.c = c};
    pu_guard_init(c, &m, &r.g);
    if (!r.g.on) {
        pu_run_market(c, EBB_MARKET_SPOT, out);
        return;
    }
    int on_spot = c->running != PU_NONE &&
                  pu_offer(c, c->running)->market == EBB_MARKET_SPOT;
    r.spot = on_spot ? c->running : pu_cheapest_spot(c);
    r.spot_up = r.spot != PU_NONE;
    if (r.spot == PU_NONE)
        r.spot = rn_any_spot(c);
    if (r.spot == PU_NONE) {
        pu_run_market(c, EBB_MARKET_ON_DEMAND, out);
        return;
    }
    rn_plan(p, &r);
    float value = 0;
    enum rn_action a = rn_choice(&r, &value);
    if (c->running == PU_NONE)
        rn_idle(&r, a, out);
    else if (on_spot)
        rn_on_spot(&r, a, out);
    else
        rn_on_demand(&r, a, out);
    rn_note(&r, out, value);
    if (out->kind == EBB_DECIDE_LAUNCH)
        pu_budget_note(c, out->offer, out);
}

static int rn_decide(void *self, const struct ebb_job_view *job,
                     const struct ebb_market_view *market, ebb_time_ms now,
                     struct ebb_decision *out)
{
    return pu_decide(self, job, market, now, out, rn_fallback);
}

static const struct ebb_policy rn_policy = {
    .abi = EBB_POLICY_ABI,
    .struct_size = sizeof(struct ebb_policy),
    .name = "renewal",
    .description = "Learns each spot pool's up and down periods and solves "
                   "the job's finish-by-the-deadline problem against them; "
                   "an on-demand safety net keeps every feasible deadline.",
    .config_keys = rn_keys,
    .config_size = sizeof(struct rn_cfg),
    .create = rn_create,
    .destroy = rn_destroy,
    .decide = rn_decide,
    .flags = EBB_POLICY_ASKS_FORECASTS,
};

const struct ebb_policy *ebb_policy_entry(void)
{
    return &rn_policy;
}
