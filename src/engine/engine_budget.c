/* Budget caps, whatever the policy (docs/budgets.md): a job's own cap and
 * its team's cap for the calendar month (UTC). A launch, or staying on an
 * instance, must fit its worst-case spend until the job's next checkpoint
 * (the grace period of engine_grace.c, the restart overhead when it
 * moves, what the release itself may bill) under what is left of both caps; for the
 * team, what its other running jobs have committed the same way is taken
 * off first. All sums are in USD micro-units (currency_rates convert).
 *
 * This file judges and never acts: what the caps want done with a job (it
 * pauses, it ends budget_exhausted, its instance is released with or
 * without a checkpoint) is a verdict that the planner carries out
 * (engine_plan.c). Only the job's reserve, the budget's own bookkeeping,
 * changes here. */
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "base/log.h"
#include "base/str.h"
#include "config/config_file.h"
#include "engine/internal.h"
#include "market/billing.h"
#include "market/store_prices.h"

void ebb__engine_add_spend(struct ebb__job *job, ebb_micros amount,
                           const char *currency)
{
    ebb_micros converted = 0;
    if (ebb__engine_convert(job->engine, amount, currency, job->currency,
                            EBB__ROUND_UP, &converted) != 0) {
        /* Only a config that lost a rate since the instance started gets
         * here; the ledger keeps the exact amount either way. */
        ebb__error("job %s: no currency_rates entry converts %s to %s; its "
                   "spend leaves out %lld micro-units of %s", job->id, currency,
                   job->currency, (long long)amount, currency);
        return;
    }
    ebb_micros before = job->spent;
    job->spent += converted;
    ebb_time_ms from, to;
    ebb__budget_month(ebb__clock_now(job->engine->opt.clock), &from, &to);
    ebb__engine_note_spend(job, before, from, to);
    ebb__engine_budget_burn(job, job); /* its instance has just ended */
}

/* `amount` of `currency` in USD micro-units; costs round up and caps
 * down, so that conversions never let a cap be passed. Returns 0 or
 * EBB_ENOTFOUND (no rate). */
static int to_usd(const struct ebb__engine *e, ebb_micros amount,
                  const char *currency, int cost, ebb_micros *out)
{
    return ebb__engine_convert(e, amount, currency, "USD",
                               cost ? EBB__ROUND_UP : EBB__ROUND_DOWN, out);
}

static const struct ebb__team *team_cap(const struct ebb__job *job)
{
    const struct ebb__config *c = job->engine->opt.budget_config;
    if (c == NULL || job->spec.team == NULL)
        return NULL;
    const struct ebb__team *t = ebb__config_team(c, job->spec.team);
    return t != NULL && t->has_budget ? t : NULL;
}

/* The job's owner's monthly cap in its team (teams.T.users.NAME.budget),
 * or NULL; *team is set to the team when one is returned. */
static const struct ebb__team_user *user_cap(const struct ebb__job *job,
                                             const struct ebb__team **team)
{
    const struct ebb__config *c = job->engine->opt.budget_config;
    if (c == NULL || job->spec.team == NULL)
        return NULL;
    const struct ebb__team *t = ebb__config_team(c, job->spec.team);
    const struct ebb__team_user *u = t != NULL ? ebb__team_user(t, job->owner_name)
                                               : NULL;
    *team = t;
    return u != NULL && u->has_budget ? u : NULL;
}

int ebb__engine_budget_applies(const struct ebb__job *job)
{
    const struct ebb__team *t;
    return job->budget >= 0 || team_cap(job) != NULL || user_cap(job, &t) != NULL;
}

/* What the running attempt has cost by `now` and not billed yet, in its
 * offer's currency: each node from its member's start (a gang's lost
 * member was billed when it went; its replacement bills from its own
 * start), as the executor bills them. */
static ebb_micros accrued(const struct ebb__job *job, ebb_time_ms now)
{
    const struct ebb__attempt *a = job->current;
    if (a == NULL || !a->launched)
        return 0;
    const struct ebb__offer *o = &job->engine->market.offers[a->offer];
    ebb_micros sum = 0;
    for (unsigned r = 0; r < a->n_nodes; r++)
        if (a->nodes[r].billed_from > 0)
            sum += ebb__bill(o, a->billing, a->nodes[r].billed_from, now, NULL, NULL);
    return sum;
}

const struct ebb__store_cfg *ebb__engine_job_store(const struct ebb__job *job)
{
    const struct ebb__config *c = job->engine->opt.budget_config;
    if (c == NULL || job->spec.checkpoint.store == NULL)
        return NULL;
    return ebb__config_store(c, job->spec.checkpoint.store);
}

/* What the checkpoints the job holds in its store have cost by `now`, not
 * billed yet (each is, when it leaves the store: engine_transfer.c), in
 * the store's storage currency (into `currency`). */
static ebb_micros stored(const struct ebb__job *job, ebb_time_ms now,
                         char currency[4])
{
    const struct ebb__store_cfg *s = job->xfer != NULL ? ebb__engine_job_store(job)
                                                       : NULL;
    memcpy(currency, "USD", 4);
    if (s == NULL || job->xfer->n_held == 0)
        return 0;
    struct ebb__store_rates r;
    ebb__store_rates(job->engine->opt.store_fees, s, &r);
    memcpy(currency, r.storage_currency, 4);
    ebb_micros sum = 0;
    for (size_t i = 0; i < job->xfer->n_held; i++) {
        const struct ebb__held_ckpt *h = &job->xfer->held[i];
        if (now > h->at)
            sum += ebb__store_storage_cost(&r, h->bytes, now - h->at);
    }
    return sum;
}

/* The job's spend by `now` (billed, accrued by its instance and by its
 * stored checkpoints), USD. */
static int job_used(const struct ebb__job *job, ebb_time_ms now, ebb_micros *out)
{
    const struct ebb__engine *e = job->engine;
    ebb_micros spent = 0, run = 0, kept = 0;
    char kept_in[4];
    ebb_micros kept_native = stored(job, now, kept_in);
    int rc = to_usd(e, job->spent, job->currency, 1, &spent);
    if (rc == 0 && job->current != NULL)
        rc = to_usd(e, accrued(job, now),
                    e->market.offers[job->current->offer].currency, 1, &run);
    if (rc == 0 && kept_native > 0)
        rc = to_usd(e, kept_native, kept_in, 1, &kept);
    *out = spent + run + kept;
    return rc;
}

ebb_micros ebb__engine_spent_now(const struct ebb__job *job, ebb_time_ms now)
{
    ebb_micros run = 0, kept = 0;
    char kept_in[4];
    ebb_micros kept_native = stored(job, now, kept_in);
    if (job->current != NULL &&
        ebb__engine_convert(job->engine, accrued(job, now),
                            job->engine->market.offers[job->current->offer].currency,
                            job->currency, EBB__ROUND_UP, &run) != 0)
        run = 0; /* no rate: the planner leaves such offers out */
    if (kept_native > 0 &&
        ebb__engine_convert(job->engine, kept_native, kept_in, job->currency,
                            EBB__ROUND_UP, &kept) != 0)
        kept = 0; /* no rate: billed at deletion, counted then */
    return job->spent + run + kept;
}

int ebb__engine_job_budget(const struct ebb__job *job, ebb_time_ms now,
                           struct ebb__budget_usage *u)
{
    *u = (struct ebb__budget_usage){.has_cap = job->budget >= 0};
    int rc = job_used(job, now, &u->spent);
    if (rc == 0 && u->has_cap)
        rc = to_usd(job->engine, job->budget, job->currency, 0, &u->cap);
    if (rc == 0 && job->current != NULL && job->reserve > u->spent)
        u->committed = job->reserve - u->spent;
    return rc;
}

/* [start, end) of the calendar month (UTC) holding `now`. */
void ebb__budget_month(ebb_time_ms now, ebb_time_ms *start, ebb_time_ms *end)
{
    int64_t days = now / EBB_MS_PER_DAY, y;
    int m, d;
    ebb_civil_from_days(days, &y, &m, &d);
    *start = ebb_days_from_civil(y, m, 1) * EBB_MS_PER_DAY;
    *end = (m == 12 ? ebb_days_from_civil(y + 1, 1, 1)
                    : ebb_days_from_civil(y, m + 1, 1)) * EBB_MS_PER_DAY;
}

struct sum_ctx {
    const struct ebb__engine *e;
    ebb_micros usd;
    int rc;
};

static int add_sum(void *arg, const char *currency, ebb_micros total)
{
    struct sum_ctx *c = arg;
    ebb_micros usd = 0;
    c->rc = to_usd(c->e, total, currency, 1, &usd);
    c->usd += usd;
    return c->rc;
}

/* Team spend this month: its ledger rows that start in the month, plus
 * what its running instances have accrued (counted whole, which can only
 * overstate it); with `owner` >= 0, of the jobs that uid owns only.
 * `except` (may be NULL) commits nothing. */
static int team_usage(const struct ebb__engine *e, const char *team,
                      int64_t owner, const struct ebb__job *except,
                      ebb_time_ms now, struct ebb__budget_usage *u)
{
    ebb_time_ms from, to;
    ebb__budget_month(now, &from, &to);
    struct sum_ctx c = {e, 0, 0};
    int rc = owner >= 0
                 ? ebb__store_ledger_owner_sums(e->opt.store, team, owner, from,
                                                to, add_sum, &c)
                 : ebb__store_ledger_team_sums(e->opt.store, team, from, to,
                                               add_sum, &c);
    if (rc == 0)
        rc = c.rc;
    u->spent = c.usd;
    u->committed = 0;
    const struct ebb_list *node;
    ebb_list_foreach(node, &e->jobs) {
        const struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        if (rc != 0)
            break;
        if (j->spec.team == NULL || strcmp(j->spec.team, team) != 0 ||
            (owner >= 0 && j->owner_uid != owner))
            continue;
        char kept_in[4];
        ebb_micros kept_native = stored(j, now, kept_in), kept = 0;
        if (kept_native > 0)
            rc = to_usd(e, kept_native, kept_in, 1, &kept);
        u->spent += kept;
        if (rc != 0 || j->current == NULL)
            continue;
        ebb_micros run = 0;
        rc = to_usd(e, accrued(j, now),
                    e->market.offers[j->current->offer].currency, 1, &run);
        u->spent += run;
        ebb_micros used = 0;
        if (rc == 0 && j != except)
            rc = job_used(j, now, &used);
        if (rc == 0 && j != except && j->reserve > used)
            u->committed += j->reserve - used;
    }
    return rc;
}

int ebb__engine_owner_spent(const struct ebb__engine *e, const char *team,
                            int64_t uid, ebb_time_ms now, ebb_micros *out)
{
    struct ebb__budget_usage u = {0};
    int rc = team_usage(e, team, uid, NULL, now, &u);
    *out = u.spent;
    return rc;
}

int ebb__engine_team_budget(const struct ebb__engine *e,
                            const struct ebb__team *t, ebb_time_ms now,
                            struct ebb__budget_usage *u)
{
    *u = (struct ebb__budget_usage){.has_cap = t->has_budget};
    int rc = team_usage(e, t->name, -1, NULL, now, u);
    if (rc == 0 && t->has_budget)
        rc = to_usd(e, t->budget.amount, t->budget.currency, 0, &u->cap);
    return rc;
}

int ebb__engine_user_budget(const struct ebb__engine *e, const struct ebb__team *t,
                            const struct ebb__team_user *user, int64_t uid,
                            ebb_time_ms now, struct ebb__budget_usage *u)
{
    *u = (struct ebb__budget_usage){.has_cap = user->has_budget};
    int rc = uid >= 0 ? team_usage(e, t->name, uid, NULL, now, u) : 0;
    if (rc == 0 && user->has_budget)
        rc = to_usd(e, user->budget.amount, user->budget.currency, 0, &u->cap);
    return rc;
}

/* What is left of the job's owner's monthly cap in its team, their other
 * running jobs keeping their commitments (INT64_MAX: no such cap), USD;
 * *u and *user say what it was taken from. */
static int user_room(const struct ebb__job *job, ebb_time_ms now, ebb_micros *left,
                     struct ebb__budget_usage *u, const struct ebb__team_user **user)
{
    const struct ebb__team *t = NULL;
    *user = user_cap(job, &t);
    *left = INT64_MAX;
    *u = (struct ebb__budget_usage){0};
    if (*user == NULL)
        return 0;
    int rc = team_usage(job->engine, t->name, job->owner_uid, job, now, u);
    if (rc == 0)
        rc = to_usd(job->engine, (*user)->budget.amount, (*user)->budget.currency,
                    0, &u->cap);
    if (rc == 0)
        *left = u->cap - u->spent - u->committed;
    return rc;
}

/* The cheapest useful step the job could take from now on any offer it
 * may use that has a price: restart overhead, one checkpoint interval (or
 * the rest of the work) and the grace period, at the current price (of
 * every node of a gang), USD.
 * INT64_MAX when no offer has a price. */
static ebb_micros cheapest_step(const struct ebb__job *job, ebb_time_ms now)
{
    const struct ebb__engine *e = job->engine;
    ebb_dur_ms left = job->work_total - job->work_saved;
    ebb_micros best = INT64_MAX;
    for (size_t i = 0; i < job->n_allowed; i++) {
        const struct ebb__offer *o = &e->market.offers[job->allowed[i]];
        const struct ebb__market_step *st = ebb__offer_at(o, now);
        if (st == NULL)
            continue;
        double speed = ebb__engine_speed(job, job->allowed[i], NULL);
        if (!(speed > 0))
            speed = 1;
        ebb_dur_ms work = job->spec.checkpoint.every > 0 &&
                                  job->spec.checkpoint.every < left
                              ? job->spec.checkpoint.every
                              : left;
        ebb_dur_ms span = (ebb_dur_ms)((double)work / speed) +
                          job->spec.restart_overhead +
                          ebb__engine_offer_grace(job, job->allowed[i]) +
                          ebb__engine_release_slack(e);
        ebb_micros usd = 0;
        ebb_micros cost = ebb__job_nodes(job) * ebb__cost_of(st->price, span);
        if (to_usd(e, cost, o->currency, 1, &usd) == 0 && usd < best)
            best = usd;
    }
    return best;
}

static void money(ebb_micros usd, char *buf, size_t size)
{
    ebb_format_money(usd > 0 ? usd : 0, "USD", buf, size);
}

/* Why the job ends budget_exhausted: spent, cap, and the cheapest step. */
static void exhausted_reason(const struct ebb__budget_usage *ju, ebb_micros step,
                             char *buf, size_t size)
{
    char a[48], b[48], c[48];
    money(ju->spent, a, sizeof(a));
    money(ju->cap, b, sizeof(b));
    money(step, c, sizeof(c));
    snprintf(buf, size, "budget: exhausted, spent %s of %s; the cheapest "
             "step left (restart, one checkpoint interval, grace) costs up "
             "to %s", a, b, c);
}

int ebb__engine_budget_idle(struct ebb__job *job, ebb_time_ms now,
                            struct ebb__budget_verdict *v)
{
    *v = (struct ebb__budget_verdict){.act = EBB__BUDGET_NOTHING};
    struct ebb__budget_usage ju;
    if (job->current != NULL || job->budget < 0 ||
        ebb__engine_job_budget(job, now, &ju) != 0)
        return 0;
    ebb_micros step = cheapest_step(job, now);
    if (step == INT64_MAX || step <= ju.cap - ju.spent)
        return 0;
    v->act = EBB__BUDGET_ENTER;
    v->to = EBB__JOB_BUDGET_EXHAUSTED;
    exhausted_reason(&ju, step, v->reason, sizeof(v->reason));
    return 1;
}

/* What is left under the job's cap and its team's (INT64_MAX: no cap),
 * USD, the team's other running jobs keeping their commitments; *used is
 * the job's own spend. The team's left is the smaller of the team's cap
 * and the job's owner's in the team (user_room). */
static int room(const struct ebb__job *job, ebb_time_ms now, ebb_micros *used,
                ebb_micros *job_left, ebb_micros *team_left)
{
    struct ebb__budget_usage ju, tu;
    int rc = ebb__engine_job_budget(job, now, &ju);
    *used = ju.spent;
    *job_left = ju.has_cap ? ju.cap - ju.spent : INT64_MAX;
    *team_left = INT64_MAX;
    const struct ebb__team *t = team_cap(job);
    ebb_micros cap = 0;
    if (rc == 0 && t != NULL)
        rc = team_usage(job->engine, t->name, -1, job, now, &tu);
    if (rc == 0 && t != NULL)
        rc = to_usd(job->engine, t->budget.amount, t->budget.currency, 0, &cap);
    if (rc == 0 && t != NULL)
        *team_left = cap - tu.spent - tu.committed;
    ebb_micros user_left = INT64_MAX;
    const struct ebb__team_user *user;
    if (rc == 0)
        rc = user_room(job, now, &user_left, &tu, &user);
    if (user_left < *team_left)
        *team_left = user_left;
    return rc;
}

/* The rate a member billed since `from` is billed at `now`: `price`, the
 * price now, or under hourly billing the price its current instance-hour
 * started at when that is higher. */
static ebb_micros member_rate(const struct ebb__attempt *a, const struct ebb__offer *o,
                              ebb_time_ms from, ebb_time_ms now, ebb_micros price)
{
    if (a->billing != EBB_BILLING_HOURLY_START_PRICE || now < from)
        return price;
    /* The rest of this instance-hour is billed at its start's price,
     * however far the price has fallen since. */
    ebb_time_ms hour = from + (now - from) / EBB_MS_PER_HOUR * EBB_MS_PER_HOUR;
    const struct ebb__market_step *h = ebb__offer_at(o, hour);
    return h != NULL && h->price > price ? h->price : price;
}

ebb_micros ebb__engine_billed_rate(const struct ebb__job *job, ebb_time_ms now)
{
    const struct ebb__attempt *a = job->current;
    const struct ebb__offer *o = &job->engine->market.offers[a->offer];
    const struct ebb__market_step *st = ebb__offer_at(o, now);
    ebb_micros price = st != NULL ? st->price : 0;
    if (!a->launched)
        return (ebb_micros)a->n_nodes * price;
    /* A gang bills each node that has a member now, from its own start. */
    ebb_micros rate = 0;
    for (unsigned r = 0; r < a->n_nodes; r++)
        if (a->nodes[r].billed_from > 0)
            rate += member_rate(a, o, a->nodes[r].billed_from, now, price);
    return rate;
}

/* What the running instance costs at most from now to `end`, at the rate
 * it is billed now, plus what the release may add
 * (ebb__engine_release_slack), USD. */
static int cost_until(const struct ebb__job *job, ebb_time_ms now,
                      ebb_time_ms end, ebb_micros *out)
{
    const struct ebb__offer *o = &job->engine->market.offers[job->current->offer];
    ebb_micros rate = ebb__engine_billed_rate(job, now);
    ebb_dur_ms span = (end > now ? end - now : 0) +
                      ebb__engine_release_slack(job->engine);
    return to_usd(job->engine, ebb__cost_of(rate, span), o->currency, 1, out);
}

/* How to release the running job into `to`: with its checkpoint when the
 * grace period at today's price still fits under its caps, else at once
 * (a price spike since the last check), keeping its latest checkpoint. */
static void stop_running(struct ebb__job *job, enum ebb__job_state to,
                         const char *reason, ebb_time_ms now,
                         struct ebb__budget_verdict *v)
{
    ebb_micros cost = 0, used = 0, job_left = 0, team_left = 0;
    int rc = cost_until(job, now, now + ebb__engine_attempt_grace(job), &cost);
    if (rc == 0)
        rc = room(job, now, &used, &job_left, &team_left);
    v->to = to;
    if (rc == 0 && cost <= job_left && cost <= team_left) {
        job->reserve = used + cost;
        v->act = EBB__BUDGET_RELEASE;
        snprintf(v->reason, sizeof(v->reason), "%s", reason);
        return;
    }
    char why[256];
    snprintf(why, sizeof(why), "no room for the checkpoint grace period; "
             "%s", reason);
    job->reserve = used;
    v->act = EBB__BUDGET_RELEASE_NOW;
    snprintf(v->reason, sizeof(v->reason), "%s", why);
}

/* How to stop the job in state `to`: a running job is released, one
 * without an instance changes state. */
static void stop_job(struct ebb__job *job, enum ebb__job_state to,
                     const char *reason, ebb_time_ms now,
                     struct ebb__budget_verdict *v)
{
    if (job->current != NULL && job->state == EBB__JOB_RUNNING) {
        stop_running(job, to, reason, now, v);
    } else if (job->current == NULL && job->state != to) {
        v->act = EBB__BUDGET_ENTER;
        v->to = to;
        ebb__strlcpy(v->reason, reason, sizeof(v->reason)); /* cut to fit */
    }
}

int ebb__engine_budget_stop(struct ebb__job *job, const char *reason,
                            ebb_time_ms now, struct ebb__budget_verdict *v)
{
    *v = (struct ebb__budget_verdict){.act = EBB__BUDGET_NOTHING};
    if (!ebb__engine_budget_applies(job) || job->current == NULL)
        return 0;
    stop_running(job, EBB__JOB_PAUSED, reason, now, v);
    return 1;
}

int ebb__engine_budget_guard(struct ebb__job *job, ebb_time_ms now,
                             struct ebb__budget_verdict *v)
{
    struct ebb__attempt *a = job->current;
    *v = (struct ebb__budget_verdict){.act = EBB__BUDGET_NOTHING};
    if (!ebb__engine_budget_applies(job) || a == NULL || a->terminating ||
        !a->launched || (!a->stop_sent && !a->notice))
        return 0;
    ebb_time_ms end = ebb__engine_grace_end(job);
    if (end == INT64_MAX)
        return 0;
    ebb_micros cost = 0, used = 0, job_left = 0, team_left = 0;
    int rc = cost_until(job, now, end, &cost);
    if (rc == 0)
        rc = room(job, now, &used, &job_left, &team_left);
    if (rc == 0 && cost <= job_left && cost <= team_left)
        return 0;
    char why[256];
    snprintf(why, sizeof(why), "the price rose: no room for the rest of "
             "the grace period; %s", job->after_reason);
    job->reserve = used;
    v->act = EBB__BUDGET_RELEASE_NOW;
    v->to = job->after_release;
    snprintf(v->reason, sizeof(v->reason), "%s", why);
    return 1;
}

int ebb__engine_budget_refuses(struct ebb__job *job,
                               const struct ebb__budget_step *s,
                               ebb_time_ms now, struct ebb__budget_verdict *v)
{
    *v = (struct ebb__budget_verdict){.act = EBB__BUDGET_NOTHING};
    struct ebb__engine *e = job->engine;
    const struct ebb__offer *o = &e->market.offers[s->offer];
    ebb_micros worst = 0, extra = 0;
    char reason[320], a[48], b[48], c[48];
    int rc = to_usd(e, ebb__cost_of(s->rate, s->span + ebb__engine_release_slack(e)),
                    job->currency, 1, &worst);
    if (rc == 0)
        rc = to_usd(e, s->extra, job->currency, 1, &extra);
    worst += extra;
    struct ebb__budget_usage ju;
    if (rc == 0)
        rc = ebb__engine_job_budget(job, now, &ju);
    if (rc != 0) {
        snprintf(reason, sizeof(reason), "budget: no currency_rates entry "
                 "converts %s or %s to USD; add one to ebb.yaml",
                 job->currency, o->currency);
        stop_job(job, EBB__JOB_PAUSED, reason, now, v);
        return 1;
    }
    if (ju.has_cap && ju.spent + worst > ju.cap) {
        ebb_micros left = ju.cap - ju.spent;
        ebb_micros step = cheapest_step(job, now);
        int exhausted = step > left;
        money(ju.spent, a, sizeof(a));
        money(ju.cap, b, sizeof(b));
        money(worst, c, sizeof(c));
        if (exhausted)
            exhausted_reason(&ju, step, reason, sizeof(reason));
        else
            snprintf(reason, sizeof(reason), "budget: spent %s of %s; %s %s "
                     "could cost up to %s before its next checkpoint; waiting "
                     "for a lower price", a, b,
                     s->launching ? "launching on" : "staying on",
                     o->instance_type, c);
        stop_job(job, exhausted ? EBB__JOB_BUDGET_EXHAUSTED : EBB__JOB_PAUSED,
                 reason, now, v);
        return 1;
    }
    const struct ebb__team *t = team_cap(job);
    if (t != NULL) {
        struct ebb__budget_usage tu;
        ebb_micros cap = 0;
        rc = team_usage(e, t->name, -1, job, now, &tu);
        if (rc == 0)
            rc = to_usd(e, t->budget.amount, t->budget.currency, 0, &cap);
        if (rc != 0 || tu.spent + tu.committed + worst > cap) {
            money(tu.spent, a, sizeof(a));
            money(cap, b, sizeof(b));
            money(tu.committed + worst, c, sizeof(c));
            snprintf(reason, sizeof(reason), "team %s budget: spent %s of %s "
                     "this month; running jobs and this step could add up to "
                     "%s; waiting for a lower price or the next month",
                     t->name, a, b, c);
            stop_job(job, EBB__JOB_PAUSED, reason, now, v);
            ebb_time_ms from;
            ebb__budget_month(now, &from, &v->wake);
            return 1;
        }
    }
    ebb_micros user_left = INT64_MAX;
    struct ebb__budget_usage uu;
    const struct ebb__team_user *user;
    rc = user_room(job, now, &user_left, &uu, &user);
    if (rc != 0 || (user != NULL && worst > user_left)) {
        money(uu.spent, a, sizeof(a));
        money(uu.cap, b, sizeof(b));
        money(uu.committed + worst, c, sizeof(c));
        char why[640]; /* names and amounts: longer than reason */
        snprintf(why, sizeof(why), "user %s's budget in team %s: spent %s "
                 "of %s this month; their running jobs and this step could add "
                 "up to %s; waiting for a lower price or the next month",
                 job->owner_name, job->spec.team, a, b, c);
        stop_job(job, EBB__JOB_PAUSED, why, now, v);
        ebb_time_ms from;
        ebb__budget_month(now, &from, &v->wake);
        return 1;
    }
    job->reserve = ju.spent + worst;
    return 0;
}

/* What the team's running instances, but `ending`'s, are billed per hour
 * now, USD; -1 when a rate cannot be converted. */
static ebb_micros team_burn(const struct ebb__engine *e, const char *team,
                            const struct ebb__job *ending, ebb_time_ms now)
{
    ebb_micros burn = 0;
    const struct ebb_list *node;
    ebb_list_foreach(node, &e->jobs) {
        const struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        if (j == ending || j->current == NULL || !j->current->launched ||
            j->spec.team == NULL || strcmp(j->spec.team, team) != 0)
            continue;
        ebb_micros usd = 0;
        if (ebb__engine_convert(e, ebb__engine_billed_rate(j, now),
                                e->market.offers[j->current->offer].currency, "USD",
                                EBB__ROUND_UP, &usd) != 0)
            return -1;
        burn += usd;
    }
    return burn;
}

void ebb__engine_budget_burn(struct ebb__job *job, const struct ebb__job *ending)
{
    struct ebb__engine *e = job->engine;
    const struct ebb__team *t = team_cap(job);
    if (e->opt.note == NULL || t == NULL)
        return;
    ebb_time_ms now = ebb__clock_now(e->opt.clock), from, to;
    ebb__budget_month(now, &from, &to);
    struct ebb__budget_usage u;
    ebb_micros burn = team_burn(e, t->name, ending, now);
    if (burn > 0 && ebb__engine_team_budget(e, t, now, &u) == 0)
        ebb__engine_note_forecast(job, t->name, u.spent, u.cap, burn, from, to);
}
