/* The `budget` API method: each team's monthly cap and each capped job's
 * cap, with what was spent, what running jobs have committed (their worst
 * case until their next checkpoint) and what is left, in USD micro-units
 * (docs/budgets.md); and each team's quotas next to what its instances
 * hold now: GPUs, burn (USD micro-units per hour) and each listed
 * member's cap and GPUs. Params: "team" (optional) keeps one team and its
 * jobs. Reads the engine's memory and one small ledger sum per team: it
 * runs on the loop. A row whose amounts cannot be converted (a rate that
 * left currency_rates since) carries null amounts and an "error"; the
 * other rows are answered as ever. */
#include <stdio.h>
#include <string.h>

#include <ebb/runas.h>
#include <ebb/units.h>

#include "daemon/daemon.h"

/* The row's figures; for rc != 0 (no rate converts them) null amounts
 * and `error`. */
static json_t *usage_json(const struct ebb__budget_usage *u, int rc, const char *error)
{
    if (rc != 0)
        return json_pack("{s:n,s:n,s:n,s:n,s:s}", "spent_micros", "committed_micros",
                         "cap_micros", "left_micros", "error", error);
    json_t *o = json_pack("{s:I,s:I}", "spent_micros", (json_int_t)u->spent,
                          "committed_micros", (json_int_t)u->committed);
    if (u->has_cap) {
        json_object_set_new(o, "cap_micros", json_integer(u->cap));
        json_object_set_new(o, "left_micros",
                            json_integer(u->cap - u->spent - u->committed));
    } else {
        json_object_set_new(o, "cap_micros", json_null());
        json_object_set_new(o, "left_micros", json_null());
    }
    return o;
}

static json_t *int_or_null(int has, json_int_t v)
{
    return has ? json_integer(v) : json_null();
}

/* The team's quotas and what its instances hold now, into `o`. */
static void quotas_json(const struct ebb__daemon *d, const struct ebb__team *team,
                        ebb_time_ms now, json_t *o)
{
    struct ebb__quota_use use;
    ebb__engine_quota_use(d->engine, team->name, -1, NULL, now, &use);
    ebb_micros burn_cap = 0;
    int has_burn = team->has_max_burn &&
                   ebb__engine_convert(d->engine, team->max_burn.amount,
                                       team->max_burn.currency, "USD",
                                       EBB__ROUND_DOWN, &burn_cap) == 0;
    json_object_set_new(o, "max_gpus", int_or_null(team->max_gpus > 0, team->max_gpus));
    json_object_set_new(o, "gpus_in_use", json_integer(use.gpus));
    json_object_set_new(o, "instances", json_integer((json_int_t)use.instances));
    json_object_set_new(o, "max_burn_micros", int_or_null(has_burn, burn_cap));
    json_object_set_new(o, "burn_micros", json_integer(use.burn));
    json_t *users = json_array();
    for (size_t i = 0; i < team->n_users; i++) {
        const struct ebb__team_user *tu = &team->users[i];
        int64_t uid = -1;
        if (ebb_runas_lookup(tu->name, &uid) != 0)
            uid = -1; /* no such user here: nothing of theirs runs */
        struct ebb__budget_usage u;
        int rc = ebb__engine_user_budget(d->engine, team, tu, uid, now, &u);
        json_t *row = usage_json(&u, rc, "cannot convert the user's spend to "
                                 "USD: a job of theirs is billed or capped in a "
                                 "currency that has no currency_rates entry");
        struct ebb__quota_use mine = {0};
        if (uid >= 0)
            ebb__engine_quota_use(d->engine, team->name, uid, NULL, now, &mine);
        json_object_set_new(row, "name", json_string(tu->name));
        json_object_set_new(row, "max_gpus", int_or_null(tu->max_gpus > 0, tu->max_gpus));
        json_object_set_new(row, "gpus_in_use", json_integer(mine.gpus));
        json_array_append_new(users, row);
    }
    json_object_set_new(o, "users", users);
}

static int keep(const char *want, const char *team)
{
    return want == NULL || (team != NULL && strcmp(want, team) == 0);
}

int ebb__api_team_param(struct ebb__daemon *d, struct ebb__api_call *call,
                        const char **team)
{
    json_t *t = json_object_get(call->params, "team");
    if (t != NULL && !json_is_string(t)) {
        ebb__api_fail(call, "bad_request", "team: expected a team name");
        return -1;
    }
    *team = t != NULL ? json_string_value(t) : NULL;
    if (*team != NULL && ebb__config_team(d->config, *team) == NULL) {
        ebb__api_fail(call, "not_found", "no team %s in %s (see its teams: "
                      "section)", *team, d->config_name);
        return -1;
    }
    return 0;
}

void ebb__api_budget(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    const char *want;
    if (ebb__api_team_param(d, call, &want) != 0)
        return;
    ebb_time_ms now = ebb__clock_now(&d->clock), from, to;
    ebb__budget_month(now, &from, &to);
    int64_t y;
    int m, day;
    ebb_civil_from_days(from / EBB_MS_PER_DAY, &y, &m, &day);
    char month[16];
    snprintf(month, sizeof(month), "%04lld-%02d", (long long)y, m);
    json_t *teams = json_array(), *jobs = json_array();
    for (size_t i = 0; i < d->config->n_teams; i++) {
        const struct ebb__team *team = &d->config->teams[i];
        struct ebb__budget_usage u;
        if (!keep(want, team->name))
            continue;
        int rc = ebb__engine_team_budget(d->engine, team, now, &u);
        json_t *o = usage_json(&u, rc, "cannot convert the team's spend to USD: "
                               "a job of the team is billed or capped in a "
                               "currency that has no currency_rates entry");
        json_object_set_new(o, "team", json_string(team->name));
        quotas_json(d, team, now, o);
        json_array_append_new(teams, o);
    }
    for (const struct ebb__job *j = ebb__engine_job_next(d->engine, NULL);
         j != NULL; j = ebb__engine_job_next(d->engine, j)) {
        struct ebb__budget_usage u;
        struct ebb__job_info ji;
        ebb__engine_job_info(j, &ji);
        if (ji.budget < 0 || ebb__job_state_terminal(ji.state) ||
            !keep(want, ji.spec->team))
            continue;
        int rc = ebb__engine_job_budget(j, now, &u);
        char error[160];
        snprintf(error, sizeof(error), "cannot convert the job's amounts to USD: "
                 "no currency_rates entry for %s (or for what it was billed in); "
                 "add one to ebb.yaml", ji.currency);
        json_t *o = usage_json(&u, rc, error);
        json_object_set_new(o, "id", json_string(ji.id));
        json_object_set_new(o, "name", json_string(ji.spec->name ? ji.spec->name : ""));
        json_object_set_new(o, "team", ji.spec->team ? json_string(ji.spec->team)
                                                     : json_null());
        json_object_set_new(o, "state", json_string(ebb__job_state_name(ji.state)));
        json_array_append_new(jobs, o);
    }
    ebb__api_reply(call, json_pack("{s:s,s:s,s:o,s:o}", "month", month,
                                   "currency", "USD", "teams", teams,
                                   "jobs", jobs));
}
