/* Teams' quotas, whatever the policy (docs/budgets.md "Quotas"): a launch
 * must fit the team's max_gpus (GPUs across its instances, from the
 * catalog's gpus column, a gang's nodes each) and max_burn (what its instances are billed per
 * hour now, plus the new instance's worst price over its step, the one the
 * budget judges: engine_plan.c), and its owner's max_gpus in the team
 * (teams.T.users). A member's monthly budget is a cap like the team's and
 * lives with the caps (engine_budget.c).
 *
 * Quotas admit launches, and max_burn holds around every decision: a
 * step that stays on an instance is judged against it too, and the
 * team's lowest ranked running jobs pause with a checkpoint when the
 * team's instances billed now and this one's worst rate until its next
 * checkpoint pass it (stay_refuses). An instance counts from the
 * launch call on, and a job that moves counts the larger of its instance
 * and the one it moves to. A refused job waits with the reason recorded
 * and is planned again when an instance of its team ends.
 *
 * The team's queue (engine_order.c) is kept: a launch is refused while a
 * job of the team ranked ahead of it holds its place (it waits for the
 * quota, or backs off after a failed launch), so that a job that backs
 * off is not overtaken; the job waits behind it and is planned again when
 * that one launches, stops waiting for the quota, or may try again.
 *
 * A launch the team's quota refuses may take the place of running jobs of
 * the team of strictly lower priority (preemption by checkpoint, never by
 * kill): the verdict lists the fewest of the lowest ranked whose
 * instances make room, and the planner pauses them through the path a
 * policy's STOP takes (a checkpoint, then the release; at once only where
 * a cap leaves no room for the grace period). Instances already stopping
 * count as freed, so a job waiting for its victims' checkpoints pauses no
 * more. In a team with fair_share only an urgent job takes the place of
 * a member who spent less against their share than its owner. Victims
 * wait for the quota and resume when it frees.
 *
 * As engine_budget.c, this file judges and never acts: the planner
 * carries out the verdict. */
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "base/str.h"
#include "engine/internal.h"

static const struct ebb__team *job_team(const struct ebb__job *job)
{
    const struct ebb__config *c = job->engine->opt.budget_config;
    if (c == NULL || job->spec.team == NULL)
        return NULL;
    return ebb__config_team(c, job->spec.team);
}

static int team_has_quota(const struct ebb__team *t)
{
    if (t->max_gpus > 0 || t->has_max_burn)
        return 1;
    for (size_t i = 0; i < t->n_users; i++)
        if (t->users[i].max_gpus > 0)
            return 1;
    return 0;
}

/* The GPUs job `j` holds on `offer`: each of a gang's nodes has the
 * catalog's gpus. */
static int64_t offer_gpus(const struct ebb__job *j, size_t offer)
{
    const struct ebb__catalog_entry *c = j->engine->market.offers[offer].catalog;
    return c != NULL && c->gpus > 0 ? (int64_t)ebb__job_nodes(j) * c->gpus : 0;
}

/* The price per hour of `offer` now for job `j`'s nodes, USD rounded up;
 * 0 without a price or a rate (the planner never launches there then). */
static ebb_micros price_now(const struct ebb__job *j, size_t offer, ebb_time_ms now)
{
    const struct ebb__engine *e = j->engine;
    const struct ebb__offer *o = &e->market.offers[offer];
    const struct ebb__market_step *st = ebb__offer_at(o, now);
    ebb_micros usd = 0;
    if (st == NULL || ebb__engine_convert(e, ebb__job_nodes(j) * st->price, o->currency,
                                          "USD", EBB__ROUND_UP, &usd) != 0)
        return 0;
    return usd;
}

/* "p3.8xlarge", or for a gang "2 nodes of p3.8xlarge": what job `j`
 * takes on `offer`, into buf. */
static const char *what_on(const struct ebb__job *j, size_t offer, char *buf, size_t size)
{
    const char *type = j->engine->market.offers[offer].instance_type;
    if (ebb__job_nodes(j) > 1)
        snprintf(buf, size, "%d nodes of %s", ebb__job_nodes(j), type);
    else
        snprintf(buf, size, "%s", type);
    return buf;
}

/* What job `j`'s instance holds now: its GPUs and the rate it is billed,
 * USD; for a move (launch_next), the larger of both instances'. */
static void instance_use(const struct ebb__job *j, ebb_time_ms now, int64_t *gpus,
                         ebb_micros *burn)
{
    const struct ebb__engine *e = j->engine;
    const struct ebb__offer *o = &e->market.offers[j->current->offer];
    ebb_micros rate = 0;
    if (ebb__engine_convert(e, ebb__engine_billed_rate(j, now), o->currency, "USD",
                            EBB__ROUND_UP, &rate) != 0)
        rate = 0; /* no rate: no offer in that currency is launched */
    int64_t g = offer_gpus(j, j->current->offer);
    if (j->launch_next != SIZE_MAX) {
        int64_t next = offer_gpus(j, j->launch_next);
        ebb_micros next_rate = price_now(j, j->launch_next, now);
        g = next > g ? next : g;
        rate = next_rate > rate ? next_rate : rate;
    }
    *gpus += g;
    *burn += rate;
}

int ebb__engine_quota_use(const struct ebb__engine *e, const char *team,
                          int64_t owner, const struct ebb__job *except,
                          ebb_time_ms now, struct ebb__quota_use *u)
{
    *u = (struct ebb__quota_use){0};
    const struct ebb_list *node;
    ebb_list_foreach(node, &e->jobs) {
        const struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        if (j == except || j->current == NULL || j->spec.team == NULL ||
            strcmp(j->spec.team, team) != 0 || (owner >= 0 && j->owner_uid != owner))
            continue;
        instance_use(j, now, &u->gpus, &u->burn);
        u->instances += (size_t)ebb__job_nodes(j); /* a gang's nodes each */
    }
    return 0;
}

int ebb__engine_quota_applies(const struct ebb__job *job)
{
    const struct ebb__team *t = job_team(job);
    return t != NULL && team_has_quota(t);
}

int ebb__engine_quota_burn_applies(const struct ebb__job *job)
{
    const struct ebb__team *t = job_team(job);
    return t != NULL && t->has_max_burn;
}

/* "4 GPUs on 2 instances" of `u`, into buf. */
static const char *held(const struct ebb__quota_use *u, char *buf, size_t size)
{
    snprintf(buf, size, "%lld GPU%s on %zu instance%s", (long long)u->gpus,
             u->gpus == 1 ? "" : "s", u->instances, u->instances == 1 ? "" : "s");
    return buf;
}

/* `own`: the refusal is the job's own (its owner's quota, an offer
 * larger than the team's), not a full team: it keeps no place in the
 * team's queue (engine_order.c). */
static void refuse(struct ebb__job *job, struct ebb__budget_verdict *v, int own)
{
    v->act = EBB__BUDGET_NOTHING;
    job->quota_wait = own ? EBB__QUOTA_WAIT_OWN : EBB__QUOTA_WAIT_TEAM;
    job->queued_behind = NULL;
}

/* Plans again the jobs the quota made wait behind `job`. */
static void wake_behind(struct ebb__job *job)
{
    struct ebb_list *node;
    ebb_list_foreach(node, &job->engine->jobs) {
        struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        if (j->queued_behind != job)
            continue;
        j->queued_behind = NULL;
        if (!ebb__job_state_terminal(j->state))
            ebb__engine_mark_dirty(j);
    }
}

/* Refuses the launch while `ahead` holds its place in the queue. */
static int behind(struct ebb__job *job, const struct ebb__job *ahead, ebb_time_ms now,
                  struct ebb__budget_verdict *v)
{
    const char *name = ebb__job_priority_name(ahead->spec.priority);
    char prio[16], at[40], why[80];
    if (name == NULL)
        snprintf(prio, sizeof(prio), "%d", ahead->spec.priority);
    if (ebb__engine_retry_pending(ahead, now))
        snprintf(why, sizeof(why), "backs off until %s",
                 ebb_format_time(ahead->retry_at, at, sizeof(at)));
    else
        snprintf(why, sizeof(why), "waits for the quota");
    snprintf(v->reason, sizeof(v->reason), "behind job %s (priority %s) in team "
             "%s's queue, which %s", ahead->id, name != NULL ? name : prio,
             job->spec.team, why);
    refuse(job, v, 0);
    job->queued_behind = ahead;
    /* A job that backs off plans itself again then; so does this one. */
    if (ebb__engine_retry_pending(ahead, now))
        ebb__timer_start(job->engine->opt.clock, &job->wake, ahead->retry_at);
    return 1;
}

/* Whether `victim` may be paused for `job`: same team, running, not
 * already stopping, strictly lower priority, and, in a fair_share team
 * unless `job` is urgent, an owner who spent no less against their share
 * than job's. */
static int may_preempt(const struct ebb__job *job, const struct ebb__job *victim,
                       const struct ebb__team *t, ebb_time_ms now)
{
    if (victim == job || victim->current == NULL || victim->state != EBB__JOB_RUNNING ||
        victim->current->stop_sent || victim->current->notice ||
        victim->spec.team == NULL || strcmp(victim->spec.team, t->name) != 0 ||
        victim->spec.priority >= job->spec.priority)
        return 0;
    if (!t->fair_share || job->spec.priority >= EBB__JOB_PRIORITY_URGENT)
        return 1;
    struct ebb__queue_rank mine, theirs;
    ebb__engine_job_rank(job, now, &mine);
    ebb__engine_job_rank(victim, now, &theirs);
    return theirs.usage >= mine.usage;
}

/* Whether `a` should be paused before `b`: lower priority, then the
 * later submitted (it has less to lose). */
static int paused_first(const struct ebb__job *a, const struct ebb__job *b)
{
    if (a->spec.priority != b->spec.priority)
        return a->spec.priority < b->spec.priority;
    if (a->submitted_at != b->submitted_at)
        return a->submitted_at > b->submitted_at;
    return a->seq > b->seq;
}

/* Fills v->preempt with the running jobs to pause so that `over_gpus`
 * GPUs and `over_burn` USD/h come free, counting instances already
 * stopping; leaves it empty when they cannot. */
static void choose_victims(struct ebb__job *job, const struct ebb__team *t,
                           int64_t over_gpus, ebb_micros over_burn, ebb_time_ms now,
                           struct ebb__budget_verdict *v)
{
    struct ebb_list *node;
    ebb_list_foreach(node, &job->engine->jobs) {
        const struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        if (j->current == NULL || !j->current->stop_sent ||
            j->launch_next != SIZE_MAX || j->spec.team == NULL ||
            strcmp(j->spec.team, t->name) != 0)
            continue; /* a move launches again: it frees nothing */
        int64_t g = 0;
        ebb_micros b = 0;
        instance_use(j, now, &g, &b);
        over_gpus -= g;
        over_burn -= b;
    }
    v->n_preempt = 0;
    while ((over_gpus > 0 || over_burn > 0) && v->n_preempt < EBB__PREEMPT_MAX) {
        struct ebb__job *pick = NULL;
        ebb_list_foreach(node, &job->engine->jobs) {
            struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
            int taken = 0;
            for (size_t i = 0; i < v->n_preempt; i++)
                taken |= v->preempt[i] == j;
            if (!taken && may_preempt(job, j, t, now) &&
                (pick == NULL || paused_first(j, pick)))
                pick = j;
        }
        if (pick == NULL)
            break;
        int64_t g = 0;
        ebb_micros b = 0;
        instance_use(pick, now, &g, &b);
        over_gpus -= g;
        over_burn -= b;
        v->preempt[v->n_preempt++] = pick;
    }
    if (over_gpus > 0 || over_burn > 0)
        v->n_preempt = 0; /* pausing them would not make room */
}

/* Appends to v->reason which jobs it pauses, if any. */
static void say_victims(struct ebb__budget_verdict *v)
{
    size_t len = strlen(v->reason);
    for (size_t i = 0; i < v->n_preempt && len < sizeof(v->reason); i++) {
        snprintf(v->reason + len, sizeof(v->reason) - len, "%s%s", i == 0
                 ? "; pausing with a checkpoint to take its place: " : ", ",
                 v->preempt[i]->id);
        len = strlen(v->reason);
    }
}

/* Whether `j`, a job of team `t` with an instance, keeps billing it: not
 * stopping for good (a move launches again). */
static int keeps_billing(const struct ebb__job *j, const struct ebb__team *t)
{
    return j->current != NULL && j->spec.team != NULL &&
           strcmp(j->spec.team, t->name) == 0 &&
           !(j->current->stop_sent && j->launch_next == SIZE_MAX);
}

/* The lowest ranked job of team `t` that runs and may pause (`job`
 * included, those in v->preempt left out), or NULL. */
static struct ebb__job *lowest_running(struct ebb__job *job, const struct ebb__team *t,
                                       const struct ebb__budget_verdict *v)
{
    struct ebb__job *lowest = NULL;
    struct ebb_list *node;
    ebb_list_foreach(node, &job->engine->jobs) {
        struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        int taken = 0;
        for (size_t i = 0; i < v->n_preempt; i++)
            taken |= v->preempt[i] == j;
        if (taken || !keeps_billing(j, t) || j->state != EBB__JOB_RUNNING ||
            j->current->stop_sent || j->current->notice)
            continue;
        if (lowest == NULL || paused_first(j, lowest))
            lowest = j;
    }
    return lowest;
}

/* A step of `job` that stays on its instance (on market offer `offer`)
 * at worst `rate` USD/h until its next checkpoint, against the team's
 * max_burn: with the team's other instances (those stopping left out:
 * they are leaving) billed now, it must fit, or the team's lowest ranked
 * running jobs pause with a checkpoint until it does (engine_plan.c
 * carries it out). Returns 1 when `job` itself is among them. */
static int stay_refuses(struct ebb__job *job, const struct ebb__team *t, size_t offer,
                        ebb_micros rate, ebb_time_ms now, struct ebb__budget_verdict *v)
{
    struct ebb__engine *e = job->engine;
    ebb_micros cap = 0, others = 0;
    if (!t->has_max_burn ||
        ebb__engine_convert(e, t->max_burn.amount, t->max_burn.currency, "USD",
                            EBB__ROUND_DOWN, &cap) != 0)
        return 0;
    size_t n = 0;
    struct ebb_list *node;
    ebb_list_foreach(node, &e->jobs) {
        const struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        if (j == job || !keeps_billing(j, t))
            continue;
        int64_t g = 0;
        instance_use(j, now, &g, &others);
        n++;
    }
    if (others + rate <= cap)
        return 0;
    char a[48], b[48], c[48], w[96], why[640];
    ebb_format_money(cap, "USD", a, sizeof(a));
    ebb_format_money(others, "USD", b, sizeof(b));
    ebb_format_money(rate, "USD", c, sizeof(c));
    snprintf(why, sizeof(why), "team %s's max_burn %s/h: its %zu other instance%s "
             "billed %s/h now and job %s's %s could cost up to %s/h until its next "
             "checkpoint; pausing the lowest ranked of its running jobs with a "
             "checkpoint", t->name, a, n, n == 1 ? " is" : "s are", b, job->id,
             what_on(job, offer, w, sizeof(w)), c);
    ebb__strlcpy(v->preempt_why, why, sizeof(v->preempt_why));
    int self = 0;
    while (others + (self ? 0 : rate) > cap && v->n_preempt < EBB__PREEMPT_MAX) {
        struct ebb__job *pick = lowest_running(job, t, v);
        if (pick == NULL)
            break;
        v->preempt[v->n_preempt++] = pick;
        if (pick == job) {
            self = 1;
            continue;
        }
        ebb_micros use = 0;
        int64_t g = 0;
        instance_use(pick, now, &g, &use);
        others -= use;
    }
    if (self)
        ebb__strlcpy(v->reason, why, sizeof(v->reason));
    return self;
}

/* Whether a job of team `t` is held: its instance is being reconciled
 * after a restart (engine_recover.c). */
static int team_reconciling(const struct ebb__engine *e, const struct ebb__team *t)
{
    const struct ebb_list *node;
    ebb_list_foreach(node, &e->jobs) {
        const struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        if (j->held && j->spec.team != NULL && strcmp(j->spec.team, t->name) == 0)
            return 1;
    }
    return 0;
}

int ebb__engine_quota_refuses(struct ebb__job *job, const struct ebb__budget_step *s,
                              ebb_time_ms now, struct ebb__budget_verdict *v)
{
    *v = (struct ebb__budget_verdict){.act = EBB__BUDGET_NOTHING};
    const struct ebb__team *t = job_team(job);
    if (t == NULL || !team_has_quota(t))
        return 0;
    if (!s->launching) {
        ebb_micros rate = 0;
        if (ebb__engine_convert(job->engine, s->rate, job->currency, "USD",
                                EBB__ROUND_UP, &rate) != 0)
            return 0; /* no rate: its launch was never admitted */
        return stay_refuses(job, t, s->offer, rate, now, v);
    }
    /* A running job that would move stays where it is until the move is
     * admitted: its instance, at the rate billed now, must fit too. */
    if (job->current != NULL && job->state == EBB__JOB_RUNNING) {
        int64_t g = 0;
        ebb_micros rate = 0;
        instance_use(job, now, &g, &rate);
        if (stay_refuses(job, t, job->current->offer, rate, now, v))
            return 1;
    }
    struct ebb__engine *e = job->engine;
    char what[96];
    const char *type = what_on(job, s->offer, what, sizeof(what));
    int64_t want = offer_gpus(job, s->offer);
    /* After a restart, instances being reconciled belong to no job yet:
     * nothing of the team launches until they are counted (every job is
     * planned again when the reconciliation ends). */
    if (team_reconciling(e, t)) {
        snprintf(v->reason, sizeof(v->reason), "team %s's instances are being "
                 "reconciled after ebbd restarted: waiting to count them", t->name);
        refuse(job, v, 1);
        return 1;
    }
    const struct ebb__job *ahead = ebb__engine_queue_ahead(job, now);
    if (ahead != NULL)
        return behind(job, ahead, now, v);
    struct ebb__quota_use tu;
    ebb__engine_quota_use(e, t->name, -1, job, now, &tu);
    if (t->max_gpus > 0 && want > t->max_gpus) {
        snprintf(v->reason, sizeof(v->reason), "team %s's max_gpus %lld is less "
                 "than the %lld GPUs of %s: waiting for an offer that fits or a "
                 "larger quota", t->name, (long long)t->max_gpus,
                 (long long)want, type);
        refuse(job, v, 1);
        return 1;
    }
    ebb_micros cap = 0, rate = 0;
    int burn_rc = 0;
    if (t->has_max_burn) {
        burn_rc = ebb__engine_convert(e, t->max_burn.amount, t->max_burn.currency,
                                      "USD", EBB__ROUND_DOWN, &cap);
        if (burn_rc == 0)
            burn_rc = ebb__engine_convert(e, s->rate, job->currency, "USD",
                                          EBB__ROUND_UP, &rate);
    }
    int64_t over_gpus = t->max_gpus > 0 ? tu.gpus + want - t->max_gpus : 0;
    ebb_micros over_burn = t->has_max_burn && burn_rc == 0 ? tu.burn + rate - cap : 0;
    /* A job without an instance may take others' places; a move may not. */
    if ((over_gpus > 0 || over_burn > 0) && burn_rc == 0 && job->current == NULL)
        choose_victims(job, t, over_gpus, over_burn, now, v);
    if (over_gpus > 0) {
        char h[80];
        snprintf(v->reason, sizeof(v->reason), "team %s's max_gpus %lld is in "
                 "use (%s; %s has %lld)", t->name, (long long)t->max_gpus,
                 held(&tu, h, sizeof(h)), type, (long long)want);
        say_victims(v);
        refuse(job, v, 0);
        return 1;
    }
    if (t->has_max_burn) {
        if (burn_rc != 0 || over_burn > 0) {
            char a[48], b[48], c[48];
            ebb_format_money(cap, "USD", a, sizeof(a));
            ebb_format_money(tu.burn, "USD", b, sizeof(b));
            ebb_format_money(rate, "USD", c, sizeof(c));
            snprintf(v->reason, sizeof(v->reason), "team %s's max_burn %s/h: "
                     "its %zu instance%s billed %s/h now and %s could cost "
                     "up to %s/h", t->name, a, tu.instances,
                     tu.instances == 1 ? " is" : "s are", b, type, c);
            say_victims(v);
            refuse(job, v, 0);
            return 1;
        }
    }
    const struct ebb__team_user *user = ebb__team_user(t, job->owner_name);
    if (user != NULL && user->max_gpus > 0) {
        struct ebb__quota_use uu;
        ebb__engine_quota_use(e, t->name, job->owner_uid, job, now, &uu);
        if (uu.gpus + want > user->max_gpus) {
            char h[80];
            snprintf(v->reason, sizeof(v->reason), "user %s's max_gpus %lld in "
                     "team %s is in use (%s; %s has %lld)", user->name,
                     (long long)user->max_gpus, t->name, held(&uu, h, sizeof(h)),
                     type, (long long)want);
            refuse(job, v, 1);
            return 1;
        }
    }
    job->quota_wait = 0;
    wake_behind(job);
    return 0;
}

void ebb__engine_quota_yield(struct ebb__job *job)
{
    if (!job->quota_wait)
        return;
    job->quota_wait = 0;
    wake_behind(job);
}

void ebb__engine_quota_freed(struct ebb__job *ended)
{
    const struct ebb__team *t = job_team(ended);
    if (t == NULL || !team_has_quota(t))
        return;
    struct ebb_list *node;
    ebb_list_foreach(node, &ended->engine->jobs) {
        struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        if (!j->quota_wait || j->spec.team == NULL ||
            strcmp(j->spec.team, t->name) != 0)
            continue;
        j->quota_wait = 0;
        if (!ebb__job_state_terminal(j->state))
            ebb__engine_mark_dirty(j);
    }
}
