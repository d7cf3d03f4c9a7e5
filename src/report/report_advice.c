/* Plan advice: when a team's usage is steady enough that a monthly or
 * reserved plan would have been cheaper, say so with the figures.
 *
 * A plan (ebb.yaml `plans:`) buys `covers` of instance time on matching
 * instances (a provider, optionally a region and an instance type) for
 * `price` every `period`. For each team, the report window is cut into
 * whole periods from its start; in each one the team's matching usage U
 * cost S. On the plan it would have cost price + S * (U - covers) / U when
 * U exceeds covers (the time beyond the plan at the rate the team actually
 * paid), else price. The plan is advised when it is cheaper in every whole
 * period, not only on average: that is what "steady" means here, and no
 * threshold tuned to anyone's data is involved. A window shorter than one
 * period gives no advice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cfg_table.h"
#include "base/yaml_read.h"
#include "report/report_impl.h"
#include "store/store_ledger.h"

/* ---- advice ------------------------------------------------------------ */

struct team_usage {
    const struct ebb__report_opts *o;
    const struct ebb__plan *plan;
    ebb_micros price;   /* converted */
    int periods;
    ebb_micros *spend;  /* per period */
    ebb_dur_ms *used;
    /* The walk over the plan's usage: the report, the team whose rows are
     * coming (any: one has), and why the walk stopped. */
    struct ebb__report *r;
    struct ebb_diag *d;
    char team[256];
    int any;
    int stop;
};

/* What period k would have cost on the plan. */
static ebb_micros with_plan(const struct team_usage *t, int k)
{
    ebb_dur_ms over = t->used[k] - t->plan->covers;
    if (over <= 0)
        return t->price;
    ebb__i128 beyond = (ebb__i128)t->spend[k] * over / t->used[k];
    return t->price + (ebb_micros)beyond;
}

/* Appends advice for the team whose usage is in `t` when the plan wins in
 * every period; resets the usage. */
static int judge(struct ebb__report *r, struct team_usage *t, const char *team)
{
    struct ebb__report_advice a = {
        .periods = t->periods, .period = t->plan->period,
    };
    int wins = 1;
    for (int k = 0; k < t->periods; k++) {
        ebb_micros plan = with_plan(t, k);
        wins &= plan < t->spend[k];
        a.spend += t->spend[k];
        a.used_ms += t->used[k];
        a.with_plan += plan;
    }
    memset(t->spend, 0, (size_t)t->periods * sizeof(*t->spend));
    memset(t->used, 0, (size_t)t->periods * sizeof(*t->used));
    if (!wins)
        return 0;
    void *n = realloc(r->advice, (r->n_advice + 1) * sizeof(*r->advice));
    if (n == NULL)
        return EBB_ENOMEM;
    r->advice = n;
    a.team = strdup(team);
    a.plan = strdup(t->plan->name);
    r->advice[r->n_advice++] = a;
    return a.team != NULL && a.plan != NULL ? 0 : EBB_ENOMEM;
}

/* One row of the team's matching usage (teams come one after the other):
 * judges the team before when a new one starts, then adds the row to its
 * period. */
static int add_usage(struct team_usage *t, const struct ebb__usage_row *u)
{
    struct ebb__report *r = t->r;
    const struct ebb__plan *p = t->plan;
    int rc = 0;
    if (t->any && strcmp(u->team, t->team) != 0)
        rc = judge(r, t, t->team);
    t->any = 1;
    snprintf(t->team, sizeof(t->team), "%s", u->team);
    if (rc != 0)
        return rc;
    ebb_micros amount;
    if (ebb__currency_convert(u->amount, u->currency, r->currency,
                              t->o->rates, t->o->n_rates, EBB__ROUND_NEAREST,
                              &amount) != 0) {
        ebb_diag_set(t->d, NULL, 0, "no exchange rate between %s and %s: "
                      "add it under currency_rates: in ebb.yaml",
                      u->currency, r->currency);
        return EBB_EINVAL;
    }
    int k = (int)((u->start_at - r->since) / p->period);
    t->spend[k] += amount;
    t->used[k] += u->end_at - u->start_at;
    return 0;
}

static int on_usage(void *arg, const struct ebb__usage_row *u)
{
    struct team_usage *t = arg;
    t->stop = add_usage(t, u);
    return t->stop;
}

static int advise_plan(struct ebb__store *store, struct team_usage *t)
{
    const struct ebb__plan *p = t->plan;
    struct ebb__report *r = t->r;
    ebb_time_ms end = r->since + (ebb_time_ms)t->periods * p->period;
    struct ebb__usage_filter f = {
        .provider = p->provider, .region = p->region,
        .instance_type = p->instance_type,
    };
    int rc = ebb__store_plan_usage(store, &f, r->since, end, on_usage, t);
    if (t->stop != 0)
        return t->stop;
    if (rc != 0) {
        ebb_diag_set(t->d, NULL, 0, "cannot read the ledger: %s",
                      ebb__store_errmsg(store));
        return EBB_EDB;
    }
    return t->any ? judge(r, t, t->team) : 0;
}

int ebb__report_advise(struct ebb__store *store,
                       const struct ebb__report_opts *o, struct ebb__report *r,
                       struct ebb_diag *d)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < o->n_plans; i++) {
        const struct ebb__plan *p = &o->plans[i];
        int64_t periods = (r->until - r->since) / p->period;
        if (periods < 1)
            continue;
        struct team_usage t = {.o = o, .plan = p, .periods = (int)periods,
                               .r = r, .d = d};
        if (ebb__currency_convert(p->price.amount, p->price.currency,
                                  r->currency, o->rates, o->n_rates,
                                  EBB__ROUND_NEAREST, &t.price) != 0) {
            ebb_diag_set(d, NULL, 0, "plans.%s: no exchange rate between %s "
                          "and %s: add it under currency_rates: in ebb.yaml",
                          p->name, p->price.currency, r->currency);
            return EBB_EINVAL;
        }
        t.spend = calloc((size_t)periods, sizeof(*t.spend));
        t.used = calloc((size_t)periods, sizeof(*t.used));
        rc = t.spend != NULL && t.used != NULL ? advise_plan(store, &t)
                                               : EBB_ENOMEM;
        free(t.spend);
        free(t.used);
    }
    return rc;
}
