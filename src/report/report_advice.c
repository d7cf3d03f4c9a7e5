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

#include <sqlite3.h>

#include "base/cfg_table.h"
#include "base/yaml_read.h"
#include "report/report_impl.h"

/* ---- advice ------------------------------------------------------------ */

/* The team's matching usage, team by team. */
static const char usage_sql[] =
    "SELECT l.team, l.start_at, l.end_at, l.amount_micros, l.currency"
    " FROM ledger l JOIN instances i ON i.token = l.instance_token"
    " WHERE l.kind IN ('compute', 'overhead') AND l.start_at >= ?1"
    " AND l.start_at < ?2 AND l.provider = ?3"
    " AND (?4 IS NULL OR i.region = ?4)"
    " AND (?5 IS NULL OR i.instance_type = ?5)"
    " ORDER BY l.team";

struct team_usage {
    const struct ebb__report_opts *o;
    const struct ebb__plan *plan;
    ebb_micros price;   /* converted */
    int periods;
    ebb_micros *spend;  /* per period */
    ebb_dur_ms *used;
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

static int advise_plan(sqlite3 *db, struct ebb__report *r,
                       struct team_usage *t, struct ebb_diag *d)
{
    const struct ebb__plan *p = t->plan;
    ebb_time_ms end = r->since + (ebb_time_ms)t->periods * p->period;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, usage_sql, -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 1, r->since);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, end);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 3, p->provider, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 4, p->region, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 5, p->instance_type, -1, SQLITE_STATIC);
    char team[256] = "";
    int any = 0, r2 = 0;
    while (rc == SQLITE_OK && r2 == 0) {
        int step = sqlite3_step(st);
        if (step != SQLITE_ROW) {
            rc = step == SQLITE_DONE ? SQLITE_OK : step;
            break;
        }
        const char *row_team = (const char *)sqlite3_column_text(st, 0);
        if (any && strcmp(row_team, team) != 0)
            r2 = judge(r, t, team);
        any = 1;
        snprintf(team, sizeof(team), "%s", row_team);
        ebb_time_ms start = sqlite3_column_int64(st, 1);
        ebb_micros amount;
        if (ebb__currency_convert(sqlite3_column_int64(st, 3),
                                  (const char *)sqlite3_column_text(st, 4),
                                  r->currency, t->o->rates, t->o->n_rates,
                                  EBB__ROUND_NEAREST, &amount) != 0) {
            ebb_diag_set(d, NULL, 0, "no exchange rate between %s and %s: "
                          "add it under currency_rates: in ebb.yaml",
                          (const char *)sqlite3_column_text(st, 4), r->currency);
            r2 = EBB_EINVAL;
            break;
        }
        int k = (int)((start - r->since) / p->period);
        t->spend[k] += amount;
        t->used[k] += sqlite3_column_int64(st, 2) - start;
    }
    if (rc == SQLITE_OK && r2 == 0 && any)
        r2 = judge(r, t, team);
    if (rc != SQLITE_OK) {
        ebb_diag_set(d, NULL, 0, "cannot read the ledger: %s",
                      sqlite3_errmsg(db));
        r2 = EBB_EDB;
    }
    sqlite3_finalize(st);
    return r2;
}

int ebb__report_advise(struct sqlite3 *db, const struct ebb__report_opts *o,
                       struct ebb__report *r, struct ebb_diag *d)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < o->n_plans; i++) {
        const struct ebb__plan *p = &o->plans[i];
        int64_t periods = (r->until - r->since) / p->period;
        if (periods < 1)
            continue;
        struct team_usage t = {.o = o, .plan = p, .periods = (int)periods};
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
        rc = t.spend != NULL && t.used != NULL ? advise_plan(db, r, &t, d)
                                               : EBB_ENOMEM;
        free(t.spend);
        free(t.used);
    }
    return rc;
}
