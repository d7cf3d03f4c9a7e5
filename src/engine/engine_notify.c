/* Budget and deadline events for notifications (docs/notify.md): the
 * engine tells opt.note (ebb__engine_note, engine_state.c) inside the
 * transaction of what it records, and ebbd writes the outbox.
 * Budget thresholds are 50, 80 and 100% of a job's cap and of its team's
 * monthly cap, each crossed once: the event's key names the job (or the
 * team and month) and the threshold, so checking again never repeats it.
 * A team's cap is forecast to run out (budget.forecast, once a month)
 * when what is left of it, at the rate its running instances are billed
 * now, lasts less than the rest of the month. A deadline is at risk
 * (deadline.at_risk, once a job) when finishing on the fastest on-demand
 * offer it may use would leave less slack than one restart overhead: one
 * more preemption, and only on-demand can still make it. */
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "config/config_file.h"
#include "store/store.h"
#include "engine/internal.h"

void ebb__engine_set_note(struct ebb__engine *e,
                          void (*note)(void *arg, const struct ebb__engine_note *n),
                          void *arg)
{
    e->opt.note = note;
    e->opt.note_arg = arg;
}

static const int thresholds[] = {50, 80, 100};
#define N_THRESHOLDS (sizeof(thresholds) / sizeof(thresholds[0]))

/* As ebb__engine_note, with the team's spend in place of the job's. */
static void note_team_as(struct ebb__job *job, const char *type, const char *key,
                         const char *reason, const char *team, ebb_micros spent)
{
    struct ebb__engine *e = job->engine;
    if (e->opt.note == NULL)
        return;
    struct ebb__engine_note n = {
        .type = type, .key = key, .spec = &job->spec, .team = team,
        .job_id = job->id, .state = ebb__job_state_name(job->state),
        .reason = reason, .currency = "USD", .spent = spent,
        .at = ebb__clock_now(e->opt.clock),
    };
    e->opt.note(e->opt.note_arg, &n);
}

struct team_sum {
    const struct ebb__engine *e;
    ebb_micros usd;
    int rc;
};

static int add_usd(void *arg, const char *currency, ebb_micros total)
{
    struct team_sum *t = arg;
    ebb_micros usd = 0;
    t->rc = ebb__engine_convert(t->e, total, currency, "USD", EBB__ROUND_UP, &usd);
    t->usd += usd;
    return t->rc;
}

void ebb__engine_note_forecast(struct ebb__job *job, const char *team,
                               ebb_micros spent, ebb_micros cap, ebb_micros burn,
                               ebb_time_ms month_from, ebb_time_ms month_to)
{
    struct ebb__engine *e = job->engine;
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    if (e->opt.note == NULL || burn <= 0 || cap <= 0 || spent >= cap)
        return;
    double hours = (double)(cap - spent) / (double)burn;
    if ((double)now + hours * (double)EBB_MS_PER_HOUR >= (double)month_to)
        return;
    ebb_time_ms out = now + (ebb_time_ms)(hours * (double)EBB_MS_PER_HOUR);
    char key[160], why[320], at[40], rate[EBB_MONEY_BUFSZ], spent_s[EBB_MONEY_BUFSZ],
        cap_s[EBB_MONEY_BUFSZ];
    snprintf(key, sizeof(key), "forecast:team:%s:%lld", team, (long long)month_from);
    snprintf(why, sizeof(why), "team %s's monthly budget runs out about %s at "
             "its current burn of %s/h (%s of %s spent)", team,
             ebb_format_time(out, at, sizeof(at)),
             ebb_format_money(burn, "USD", rate, sizeof(rate)),
             ebb_format_money(spent, "USD", spent_s, sizeof(spent_s)),
             ebb_format_money(cap, "USD", cap_s, sizeof(cap_s)));
    note_team_as(job, "budget.forecast", key, why, team, spent);
}

/* The team's billed spend this month (its ledger, not what running
 * instances accrued, which a provider may yet not charge) against its
 * cap. Spend is added when an instance's ledger rows are written, and
 * ebbd's group commit puts the event in the transaction of those rows. */
static void note_team(struct ebb__job *job, ebb_time_ms from, ebb_time_ms to)
{
    struct ebb__engine *e = job->engine;
    const struct ebb__config *c = e->opt.budget_config;
    const struct ebb__team *t =
        c != NULL && job->spec.team != NULL ? ebb__config_team(c, job->spec.team)
                                            : NULL;
    if (t == NULL || !t->has_budget)
        return;
    /* The cap rounds down and costs up, as the budget check has them. */
    ebb_micros cap = 0;
    struct team_sum sum = {e, 0, 0};
    if (ebb__engine_convert(e, t->budget.amount, t->budget.currency, "USD",
                            EBB__ROUND_DOWN, &cap) != 0 || cap <= 0 ||
        ebb__store_ledger_team_sums(e->opt.store, t->name, from, to, add_usd,
                                    &sum) != 0 || sum.rc != 0)
        return;
    for (size_t i = 0; i < N_THRESHOLDS; i++) {
        if (sum.usd < cap / 100 * thresholds[i])
            continue;
        char key[160], why[240], spent[EBB_MONEY_BUFSZ], cap_s[EBB_MONEY_BUFSZ];
        snprintf(key, sizeof(key), "budget:team:%s:%lld:%d", t->name,
                 (long long)from, thresholds[i]);
        snprintf(why, sizeof(why), "team %s has spent %d%% of its monthly "
                 "budget (%s of %s)", t->name, thresholds[i],
                 ebb_format_money(sum.usd, "USD", spent, sizeof(spent)),
                 ebb_format_money(cap, "USD", cap_s, sizeof(cap_s)));
        note_team_as(job, "budget.threshold", key, why, t->name, sum.usd);
    }
}

void ebb__engine_note_spend(struct ebb__job *job, ebb_micros before,
                            ebb_time_ms month_from, ebb_time_ms month_to)
{
    if (job->engine->opt.note == NULL)
        return;
    for (size_t i = 0; job->budget > 0 && i < N_THRESHOLDS; i++) {
        ebb_micros mark = job->budget / 100 * thresholds[i];
        if (before >= mark || job->spent < mark)
            continue;
        char key[96], why[200], spent[EBB_MONEY_BUFSZ], cap[EBB_MONEY_BUFSZ];
        snprintf(key, sizeof(key), "budget:%s:%d", job->id, thresholds[i]);
        snprintf(why, sizeof(why), "the job has spent %d%% of its budget (%s "
                 "of %s)", thresholds[i],
                 ebb_format_money(job->spent, job->currency, spent, sizeof(spent)),
                 ebb_format_money(job->budget, job->currency, cap, sizeof(cap)));
        ebb__engine_note(job, "budget.threshold", key, why);
    }
    note_team(job, month_from, month_to);
}

void ebb__engine_note_deadline(struct ebb__job *job, const struct ebb_offer *offers,
                               size_t n, ebb_time_ms now)
{
    if (job->engine->opt.note == NULL || job->deadline <= 0 || now >= job->deadline)
        return;
    /* The fastest on-demand offer, the safety net; without one (a job
     * that may use spot only) the fastest offer of all. */
    double speed = 0, any = 0;
    for (size_t i = 0; i < n; i++) {
        if (offers[i].market == EBB_MARKET_ON_DEMAND && offers[i].speed > speed)
            speed = offers[i].speed;
        if (offers[i].speed > any)
            any = offers[i].speed;
    }
    if (speed <= 0)
        speed = any;
    if (speed <= 0)
        return;
    ebb_dur_ms d = job->spec.restart_overhead;
    ebb_dur_ms left = job->work_total - ebb__job_work_done(job, now);
    ebb_dur_ms slack = job->deadline - now - d - (ebb_dur_ms)((double)left / speed);
    if (slack >= d)
        return;
    char key[96], why[240], at[40], s_slack[EBB_DURATION_BUFSZ], s_d[EBB_DURATION_BUFSZ];
    snprintf(key, sizeof(key), "deadline:%s", job->id);
    snprintf(why, sizeof(why), "deadline %s at risk: finishing on its fastest "
             "offer leaves %s of slack, less than one restart (%s)",
             ebb_format_time(job->deadline, at, sizeof(at)),
             slack > 0 ? ebb_format_duration(slack, s_slack, sizeof(s_slack)) : "none",
             ebb_format_duration(d, s_d, sizeof(s_d)));
    ebb__engine_note(job, "deadline.at_risk", key, why);
}
