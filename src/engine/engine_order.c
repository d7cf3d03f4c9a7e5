/* The order in which a team's waiting jobs are considered (docs/budgets.md
 * "Priorities and fair share"): higher priority first; then, in a team
 * with fair_share, the job whose owner spent less this month against
 * their share; then the earlier submitted (and of two submitted in the
 * same millisecond, the one the engine took first), so that the order is
 * total and the same in every run.
 *
 * The planning pass plans its jobs in this order, those with an instance
 * first (engine.c), and a job
 * ranked ahead that waits for its team's quota or backs off after a
 * failed launch keeps its place: a quota admits no job ranked behind it
 * of the same team meanwhile (engine_quota.c). Slurm's multifactor
 * priority, in money: strict order, no backfill.
 *
 * A member's share is their teams.T.users budget when the team has a
 * budget and they have one of their own; the others share what is left
 * of the team's budget equally; without a team budget every member's
 * share is equal. Usage is their spend this month in the team (ledger,
 * running instances and stored checkpoints, as the caps count it) over
 * that share. */
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "engine/internal.h"

int ebb__queue_rank_cmp(const struct ebb__queue_rank *a, const struct ebb__queue_rank *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->usage != b->usage)
        return a->usage < b->usage ? -1 : 1;
    if (a->submitted_at != b->submitted_at)
        return a->submitted_at < b->submitted_at ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static const struct ebb__team *job_team(const struct ebb__job *job)
{
    const struct ebb__config *c = job->engine->opt.budget_config;
    if (c == NULL || job->spec.team == NULL)
        return NULL;
    return ebb__config_team(c, job->spec.team);
}

/* Members and admins, each counted once. */
static size_t n_members(const struct ebb__team *t)
{
    size_t n = t->members.n;
    for (size_t i = 0; i < t->admins.n; i++) {
        size_t k = 0;
        while (k < t->members.n && strcmp(t->members.items[k], t->admins.items[i]) != 0)
            k++;
        n += k == t->members.n;
    }
    return n;
}

ebb_micros ebb__engine_fair_share(const struct ebb__engine *e, const struct ebb__team *t,
                                  const char *user)
{
    ebb_micros team = 0;
    if (!t->has_budget || ebb__engine_convert(e, t->budget.amount, t->budget.currency,
                                              "USD", EBB__ROUND_DOWN, &team) != 0)
        return EBB_MICROS_PER_UNIT; /* equal shares */
    ebb_micros given = 0, own = -1;
    size_t with = 0;
    for (size_t i = 0; i < t->n_users; i++) {
        const struct ebb__team_user *u = &t->users[i];
        ebb_micros usd = 0;
        if (!u->has_budget || ebb__engine_convert(e, u->budget.amount, u->budget.currency,
                                                  "USD", EBB__ROUND_DOWN, &usd) != 0)
            continue;
        given += usd;
        with++;
        if (user != NULL && strcmp(u->name, user) == 0)
            own = usd;
    }
    if (own >= 0)
        return own > 0 ? own : 1;
    size_t rest = n_members(t) > with ? n_members(t) - with : 1;
    ebb_micros left = team > given ? (team - given) / (ebb_micros)rest : 0;
    return left > 0 ? left : 1;
}

void ebb__engine_job_rank(const struct ebb__job *job, ebb_time_ms now,
                            struct ebb__queue_rank *r)
{
    *r = (struct ebb__queue_rank){
        .priority = job->spec.priority,
        .submitted_at = job->submitted_at,
        .seq = job->seq,
    };
    const struct ebb__team *t = job_team(job);
    if (t == NULL || !t->fair_share || job->owner_uid < 0)
        return;
    ebb_micros spent = 0;
    if (ebb__engine_owner_spent(job->engine, t->name, job->owner_uid, now, &spent) != 0)
        return; /* no rate: ranked as if nothing was spent */
    r->usage = (double)spent / (double)ebb__engine_fair_share(job->engine, t,
                                                              job->owner_name);
}

struct ranked {
    struct ebb__job *job;
    int running;             /* it has an instance */
    struct ebb__queue_rank rank;
};

/* Jobs with an instance first (their budget checks renew what they
 * commit of their team's cap before a waiting job launches against it,
 * as after a restart), then by rank. */
static int cmp_ranked(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->running != y->running)
        return x->running ? -1 : 1;
    return ebb__queue_rank_cmp(&x->rank, &y->rank);
}

/* Fills r[] with the ranks of `n` jobs and sorts it. */
static void sort_ranked(struct ranked *r, size_t n, ebb_time_ms now)
{
    for (size_t i = 0; i < n; i++) {
        r[i].running = r[i].job->current != NULL;
        ebb__engine_job_rank(r[i].job, now, &r[i].rank);
    }
    qsort(r, n, sizeof(*r), cmp_ranked);
}

size_t ebb__engine_order_dirty(struct ebb__engine *e, size_t max)
{
    size_t n = 0;
    const struct ebb_list *node;
    ebb_list_foreach(node, &e->dirty) {
        if (n == max)
            break;
        n++;
    }
    if (n < 2)
        return n;
    struct ranked *r = malloc(n * sizeof(*r));
    if (r == NULL)
        return n; /* planned in the order marked */
    for (size_t i = 0; i < n; i++) {
        struct ebb_list *first = e->dirty.next;
        r[i].job = ebb_list_entry(first, struct ebb__job, dirty);
        ebb_list_remove(first);
    }
    sort_ranked(r, n, ebb__clock_now(e->opt.clock));
    for (size_t i = n; i-- > 0;)
        ebb_list_insert_head(&e->dirty, &r[i].job->dirty);
    free(r);
    return n;
}

/* Whether `j` holds its place in the queue: it waits for its team's
 * quota, or backs off before it launches again. */
static int holds_place(const struct ebb__job *j, ebb_time_ms now)
{
    return j->current == NULL && !j->held && !ebb__job_state_terminal(j->state) &&
           (j->quota_wait == EBB__QUOTA_WAIT_TEAM || ebb__engine_retry_pending(j, now));
}

const struct ebb__job *ebb__engine_queue_ahead(const struct ebb__job *job,
                                               ebb_time_ms now)
{
    if (job->spec.team == NULL)
        return NULL;
    struct ebb__queue_rank mine, best_rank;
    const struct ebb__job *best = NULL;
    int ranked = 0;
    const struct ebb_list *node;
    ebb_list_foreach(node, &job->engine->jobs) {
        const struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        if (j == job || j->spec.team == NULL || strcmp(j->spec.team, job->spec.team) != 0 ||
            !holds_place(j, now))
            continue;
        if (!ranked) {
            ebb__engine_job_rank(job, now, &mine);
            ranked = 1;
        }
        struct ebb__queue_rank r;
        ebb__engine_job_rank(j, now, &r);
        if (ebb__queue_rank_cmp(&r, &mine) < 0 &&
            (best == NULL || ebb__queue_rank_cmp(&r, &best_rank) < 0)) {
            best = j;
            best_rank = r;
        }
    }
    return best;
}

int ebb__engine_queue(struct ebb__engine *e, const char *team, struct ebb__job ***out,
                      size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    size_t n = 0;
    const struct ebb_list *node;
    ebb_list_foreach(node, &e->jobs) {
        const struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        n += ebb__job_waits(j) &&
             (team == NULL || (j->spec.team != NULL && strcmp(j->spec.team, team) == 0));
    }
    if (n == 0)
        return 0;
    struct ranked *r = malloc(n * sizeof(*r));
    struct ebb__job **jobs = malloc(n * sizeof(*jobs));
    if (r == NULL || jobs == NULL) {
        free(r);
        free(jobs);
        return EBB_ENOMEM;
    }
    size_t k = 0;
    ebb_list_foreach(node, &e->jobs) {
        struct ebb__job *j = ebb_list_entry(node, struct ebb__job, node);
        if (ebb__job_waits(j) &&
            (team == NULL || (j->spec.team != NULL && strcmp(j->spec.team, team) == 0)))
            r[k++].job = j;
    }
    sort_ranked(r, n, ebb__clock_now(e->opt.clock));
    for (size_t i = 0; i < n; i++)
        jobs[i] = r[i].job;
    free(r);
    *out = jobs;
    *n_out = n;
    return 0;
}
