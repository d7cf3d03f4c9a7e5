/* The planner: builds what a policy may see of one job and the market,
 * asks the job's policy, and turns its decision, and the budget caps' and
 * the quotas' verdicts on it (engine_budget.c, engine_quota.c), into
 * actions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/log.h"
#include "engine/internal.h"
#include "market/billing.h"

/* Spot instances (a gang's nodes each) ebb runs on offer `k` now, other
 * than `job`'s own. */
static uint32_t running_on(const struct ebb__engine *e, size_t k,
                           const struct ebb__job *job)
{
    uint32_t n = e->market.offers[k].n_running;
    if (job->current != NULL && job->current->offer == k)
        n = n > job->current->n_nodes ? n - job->current->n_nodes : 0;
    return n;
}

/* Whether spot capacity `capacity` (-1: unlimited or unknown) holds the
 * job's nodes beside `others` instances: a gang launches all or none. */
static int capacity_holds(int32_t capacity, uint32_t others, const struct ebb__job *job)
{
    return capacity < 0 ||
           (uint64_t)capacity >= (uint64_t)others + (uint64_t)ebb__job_nodes(job);
}

static int grow_view(struct ebb__engine *e, size_t n)
{
    if (n <= e->view_cap)
        return 0;
    struct ebb_offer *offers = realloc(e->view_offers, n * sizeof(*offers));
    if (offers == NULL)
        return EBB_ENOMEM;
    e->view_offers = offers;
    size_t *map = realloc(e->view_map, n * sizeof(*map));
    if (map == NULL)
        return EBB_ENOMEM;
    e->view_map = map;
    size_t *allowed = realloc(e->view_allowed, n * sizeof(*allowed));
    if (allowed == NULL)
        return EBB_ENOMEM;
    e->view_allowed = allowed;
    double *hazard = realloc(e->view_hazard, n * 24 * sizeof(*hazard));
    if (hazard == NULL)
        return EBB_ENOMEM;
    e->view_hazard = hazard;
    unsigned char *filled = realloc(e->view_filled, n);
    if (filled == NULL)
        return EBB_ENOMEM;
    e->view_filled = filled;
    e->view_cap = n;
    return 0;
}

static int view_reusable(const struct ebb__engine *e, const struct ebb__job *job,
                         ebb_time_ms now)
{
    const char *family = job->spec.name != NULL ? job->spec.name : "";
    return e->view_valid && e->view_now == now &&
           e->view_nodes == ebb__job_nodes(job) &&
           strcmp(e->view_currency, job->currency) == 0 &&
           e->view_version == e->market.version &&
           (e->n_speeds == 0 || strcmp(e->view_family, family) == 0) &&
           e->view_n_allowed == job->n_allowed &&
           (job->n_allowed == 0 ||
            memcmp(e->view_allowed, job->allowed,
                   job->n_allowed * sizeof(*job->allowed)) == 0);
}

/* `price` of offer `o` in `currency`, rounded up: a policy must not see
 * a price lower than what it will be billed. */
static ebb_micros price_in(const struct ebb__engine *e, const struct ebb__offer *o,
                           ebb_micros price, const char *currency)
{
    ebb_micros out = price;
    (void)ebb__engine_convert(e, price, o->currency, currency, EBB__ROUND_UP, &out);
    return out; /* offer_allowed made sure a rate exists */
}

/* Whether offer `o`'s forecast is the view's own copy (converted into
 * `currency`, or scaled to a gang's `nodes`) rather than the market's. */
static int own_forecast(const struct ebb__offer *o, const char *currency, int nodes)
{
    return nodes > 1 || strcmp(o->currency, currency) != 0;
}

int ebb__engine_fill_forecast(struct ebb__engine *e, size_t i)
{
    if (i >= e->view_n)
        return EBB_EINVAL;
    if (e->view_filled[i])
        return 0;
    const struct ebb__offer *o = &e->market.offers[e->view_map[i]];
    ebb__engine_forecast(e, e->view_map[i]);
    struct ebb_offer *v = &e->view_offers[i];
    int nodes = e->view_nodes;
    const char *currency = e->view_currency;
    v->forecast = o->fc;
    if (own_forecast(o, currency, nodes) && o->n_fc > 0) {
        size_t need = e->view_n * EBB__ENGINE_OUTLOOK_STEPS;
        if (need > e->view_fc_cap) {
            /* Only before the view's first own forecast: none is linked. */
            struct ebb_forecast_point *grown = realloc(e->view_fc, need * sizeof(*grown));
            if (grown == NULL)
                return EBB_ENOMEM;
            e->view_fc = grown;
            e->view_fc_cap = need;
        }
        struct ebb_forecast_point *own = e->view_fc + i * EBB__ENGINE_OUTLOOK_STEPS;
        for (size_t j = 0; j < o->n_fc; j++) {
            const struct ebb_forecast_point *p = &o->fc[j];
            own[j] = (struct ebb_forecast_point){
                .at = p->at,
                .p10 = nodes * price_in(e, o, p->p10, currency),
                .p50 = nodes * price_in(e, o, p->p50, currency),
                .p90 = nodes * price_in(e, o, p->p90, currency),
            };
        }
        v->forecast = own;
    }
    v->n_forecast = o->n_fc;
    v->forecast_p50_low = nodes * price_in(e, o, o->fc_p50_low, currency);
    e->view_filled[i] = 1;
    return 0;
}

/* The view's fill_forecast (include/ebb/policy.h). */
static int fill_forecast(void *ctx, size_t i)
{
    return ebb__engine_fill_forecast(ctx, i);
}

/* Fills every view offer's forecast, for a policy that does not ask. */
static int fill_forecasts(struct ebb__engine *e, size_t n_view)
{
    for (size_t i = 0; i < n_view; i++) {
        int rc = ebb__engine_fill_forecast(e, i);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The view's hazard by hour of offer `o` at view index `i` for a gang
 * of `nodes`: it is lost when any one of its nodes is, and nodes are
 * preempted independently, so the rate is `nodes` times one node's. NULL
 * when the offer has none. */
static const double *hazard_by_hour(struct ebb__engine *e, const struct ebb__offer *o,
                                    size_t i, int nodes)
{
    if (!o->has_by_hour)
        return NULL;
    if (nodes <= 1)
        return o->hazard_by_hour;
    double *h = e->view_hazard + i * 24;
    for (int k = 0; k < 24; k++)
        h[k] = nodes * o->hazard_by_hour[k];
    return h;
}

/* Fills the engine's view buffers with the offers the job may use that
 * have a price now, in the job's currency, counting every ebb instance
 * against spot capacity (see own_offer_available for the job's own). A
 * gang of N nodes sees each offer as one instance of N: N times the
 * price, forecast and hazard, available only where the capacity holds
 * all N (docs/policies.md "Gangs"). Jobs planned at the same instant with
 * the same offers, currency and number of nodes share the view: with
 * thousands of jobs most of a planning pass would otherwise copy the same
 * offers. Returns how many offers the view has. */
static size_t build_market_view(struct ebb__engine *e, struct ebb__job *job,
                                ebb_time_ms now)
{
    if (ebb__engine_update_allowed(job) != 0 || grow_view(e, job->n_allowed) != 0)
        return 0;
    if (view_reusable(e, job, now))
        return e->view_n;
    e->view_valid = 0;
    int nodes = ebb__job_nodes(job);
    size_t n = 0;
    for (size_t i = 0; i < job->n_allowed; i++) {
        size_t k = job->allowed[i];
        struct ebb__offer *o = &e->market.offers[k];
        const struct ebb__market_step *step = ebb__offer_at(o, now);
        if (step == NULL)
            continue;
        int available = 1;
        if (o->market == EBB_MARKET_SPOT)
            available = capacity_holds(step->capacity, o->n_running, job);
        if (now < o->unavailable_until)
            available = 0;
        ebb__engine_outlook(e, k, now);
        e->view_offers[n] = (struct ebb_offer){
            .struct_size = sizeof(struct ebb_offer),
            .provider = o->provider,
            .region = o->region,
            .zone = o->zone,
            .instance_type = o->instance_type,
            .market = o->market,
            .price_per_hour = nodes * price_in(e, o, step->price, job->currency),
            .speed = ebb__engine_speed(job, k, NULL),
            .available = available,
            .preemption_per_hour = nodes * o->hazard,
            /* forecast, n_forecast, forecast_p50_low: fill_forecast */
            .preemption_by_hour = hazard_by_hour(e, o, n, nodes),
            .up_lengths = o->has_record ? o->record.up : NULL,
            .down_lengths = o->has_record ? o->record.down : NULL,
            .availability_since = o->has_record ? o->record.since : 0,
        };
        e->view_map[n] = k;
        e->view_filled[n] = 0;
        n++;
    }
    if (job->n_allowed > 0) /* allowed is NULL when nothing is */
        memcpy(e->view_allowed, job->allowed, job->n_allowed * sizeof(*job->allowed));
    e->view_n_allowed = job->n_allowed;
    e->view_n = n;
    e->view_now = now;
    e->view_nodes = nodes;
    memcpy(e->view_currency, job->currency, sizeof(e->view_currency));
    e->view_version = e->market.version;
    free(e->view_family);
    e->view_family = strdup(job->spec.name != NULL ? job->spec.name : "");
    e->view_valid = e->view_family != NULL;
    e->view_generation++;
    return n;
}

/* The view index of market offer `offer`, or SIZE_MAX when the view lacks
 * it. view_map ascends (the view follows job->allowed, which lists offers
 * by index), so a binary search finds it: the planner asks for the job's
 * own offer three times per decision. */
static size_t view_index(const struct ebb__engine *e, size_t n_view,
                         size_t offer)
{
    size_t lo = 0, hi = n_view;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->view_map[mid] < offer)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n_view && e->view_map[lo] == offer ? lo : SIZE_MAX;
}

/* The job's own instance does not take capacity from itself: whether its
 * offer is available to it counts the other instances only, and a pause
 * on new launches there (unavailable_until) is not for an instance that
 * already runs. Returns the view index patched (SIZE_MAX for none) and the
 * value to restore. */
static size_t own_offer_available(struct ebb__engine *e, const struct ebb__job *job,
                                  size_t n_view, ebb_time_ms now, int *saved)
{
    if (job->current == NULL)
        return SIZE_MAX;
    size_t i = view_index(e, n_view, job->current->offer);
    if (i == SIZE_MAX)
        return SIZE_MAX;
    const struct ebb__offer *o = &e->market.offers[e->view_map[i]];
    const struct ebb__market_step *step = ebb__offer_at(o, now);
    *saved = e->view_offers[i].available;
    int available = 1;
    if (o->market == EBB_MARKET_SPOT && step != NULL)
        available = capacity_holds(step->capacity, running_on(e, e->view_map[i], job), job);
    e->view_offers[i].available = available;
    return i;
}

/* The shared view's offers carry no transfer cost (it is the job's, not
 * the market's): a job whose checkpoint would travel gets its own for its
 * decision and the budget check after it; the next job's planning clears
 * them first. Returns 1 when some offer has one. */
static int transfer_costs(struct ebb__engine *e, const struct ebb__job *job,
                          size_t n_view)
{
    if (e->view_transfer_set)
        for (size_t i = 0; i < n_view; i++)
            e->view_offers[i].transfer_cost = 0;
    e->view_transfer_set = 0;
    if (job->xfer == NULL || job->xfer->last_bytes <= 0)
        return 0;
    for (size_t i = 0; i < n_view; i++) {
        e->view_offers[i].transfer_cost = ebb__engine_transfer_cost(job, e->view_map[i]);
        e->view_transfer_set |= e->view_offers[i].transfer_cost != 0;
    }
    return e->view_transfer_set;
}

static void fill_job_view(const struct ebb__job *job, ebb_time_ms now,
                          size_t n_view, struct ebb_job_view *v)
{
    const struct ebb__engine *e = job->engine;
    *v = (struct ebb_job_view){
        .struct_size = sizeof(struct ebb_job_view),
        .id = job->id,
        .name = job->spec.name,
        .market = job->spec.market,
        .work_total = job->work_total,
        .work_done = ebb__job_work_done(job, now),
        .submitted_at = job->submitted_at,
        .deadline = job->deadline,
        .restart_overhead = ebb__engine_restart_overhead(job),
        .checkpoint_grace = job->spec.checkpoint.grace,
        .budget = job->budget > 0 ? job->budget : 0,
        .spent = ebb__engine_spent_now(job, now),
        .preemptions = job->preemptions,
        .running_offer = SIZE_MAX,
        .work_saved = job->work_saved,
        .currency = job->currency,
        .checkpoint_every = ebb__engine_job_checkpoint_every(job),
    };
    if (job->current != NULL && job->state == EBB__JOB_RUNNING) {
        v->running_offer = view_index(e, n_view, job->current->offer);
        v->running_since = job->current->launched_at;
    }
}

static void wake_at(struct ebb__job *job, ebb_time_ms until, ebb_time_ms now)
{
    struct ebb__engine *e = job->engine;
    if (until > now)
        ebb__timer_start(e->opt.clock, &job->wake, until);
    else
        ebb__timer_stop(e->opt.clock, &job->wake);
}

/* The highest price the offer may charge over the next `span`: the
 * current price and the forecast's p90 over that span. */
static ebb_micros worst_price(const struct ebb_offer *o, ebb_time_ms now,
                              ebb_dur_ms span)
{
    ebb_micros worst = o->price_per_hour;
    for (size_t i = 0; i < o->n_forecast; i++) {
        if (o->forecast[i].at > now + span + EBB_MS_PER_HOUR)
            break;
        if (o->forecast[i].p90 > worst)
            worst = o->forecast[i].p90;
    }
    return worst;
}

static ebb_micros max_micros(ebb_micros a, ebb_micros b)
{
    return a > b ? a : b;
}

/* The rate the job's running instance (all its nodes) is billed at now,
 * in the job's currency (the view's). */
static ebb_micros billed_rate(const struct ebb__job *job, ebb_time_ms now)
{
    const struct ebb__engine *e = job->engine;
    return price_in(e, &e->market.offers[job->current->offer],
                    ebb__engine_billed_rate(job, now), job->currency);
}

/* Carries out what the budget caps or the quotas decided for the job
 * (engine_budget.c and engine_quota.c only judge). A verdict that does
 * nothing but has a reason is why a job without an instance waits. */
static void carry_out(struct ebb__job *job, const struct ebb__budget_verdict *v)
{
    struct ebb__engine *e = job->engine;
    switch (v->act) {
    case EBB__BUDGET_ENTER:
        ebb__engine_set_state(job, v->to, "%s", v->reason);
        break;
    case EBB__BUDGET_RELEASE:
        ebb__engine_release(job, v->to, SIZE_MAX, v->reason);
        break;
    case EBB__BUDGET_RELEASE_NOW:
        ebb__engine_release_now(job, v->to, v->reason);
        break;
    case EBB__BUDGET_NOTHING:
        if (v->reason[0] != '\0' && job->current == NULL)
            ebb__engine_note_waiting(job, v->reason);
        break;
    }
    if (v->wake > 0)
        ebb__timer_start(e->opt.clock, &job->wake, v->wake);
}

/* Pauses `victim` with a checkpoint so that `job` takes its place in
 * their team's quota (`why` NULL or ""), or so that the team's max_burn
 * holds (`why` says so): the path a policy's STOP takes (a capped job is
 * released at once only when its caps leave no room for the grace
 * period). It waits for the quota and resumes when it frees. */
static void pause_for(struct ebb__job *victim, const struct ebb__job *job,
                      const char *why, ebb_time_ms now)
{
    const char *name = ebb__job_priority_name(job->spec.priority);
    char prio[16], reason[320];
    snprintf(prio, sizeof(prio), "%d", job->spec.priority);
    if (why != NULL && why[0] != '\0')
        snprintf(reason, sizeof(reason), "%s", why);
    else
        snprintf(reason, sizeof(reason), "paused for job %s (priority %s), which "
                 "takes its place in team %s's quota; resuming when the quota "
                 "frees", job->id, name != NULL ? name : prio, job->spec.team);
    struct ebb__budget_verdict v;
    if (ebb__engine_budget_stop(victim, reason, now, &v))
        carry_out(victim, &v);
    else
        ebb__engine_release(victim, EBB__JOB_PAUSED, SIZE_MAX, reason);
    victim->quota_wait = EBB__QUOTA_WAIT_TEAM;
    victim->paused_for = job;
}

/* The budget caps and the quotas, whatever the policy (engine_budget.c,
 * engine_quota.c): the step a decision takes is its worst-case spend
 * until the job's next checkpoint. Returns 1 when the caps or the quotas
 * refused the decision (and what they want done instead is done). When a
 * running capped job may stay, *recheck is when the stretch the caps
 * allowed runs out: the job is planned again then even if no checkpoint
 * came (a slow one, or none), so that the next step is judged before the
 * reserve is spent; else 0. */
static int budget_refuses(struct ebb__job *job, const struct ebb_decision *d,
                          size_t n_view, ebb_time_ms now, ebb_time_ms *recheck)
{
    struct ebb__engine *e = job->engine;
    *recheck = 0;
    int capped = ebb__engine_budget_applies(job);
    if (!capped && !ebb__engine_quota_applies(job))
        return 0;
    int running = job->current != NULL && job->state == EBB__JOB_RUNNING;
    size_t cur = running ? view_index(e, n_view, job->current->offer) : SIZE_MAX;
    size_t view_k = d->kind == EBB_DECIDE_LAUNCH && d->offer < n_view ? d->offer : cur;
    if (view_k == SIZE_MAX || d->kind == EBB_DECIDE_STOP)
        return 0;
    if (ebb__engine_fill_forecast(e, view_k) != 0 ||
        (cur != SIZE_MAX && ebb__engine_fill_forecast(e, cur) != 0)) {
        /* No worst case to judge by: nothing is spent until there is. */
        ebb__error("job %s: out of memory for the offers' forecasts", job->id);
        return 1;
    }
    const struct ebb_offer *o = &e->view_offers[view_k];
    int moving = !running || e->view_map[view_k] != job->current->offer;
    ebb_dur_ms left = job->work_total - ebb__job_work_done(job, now);
    ebb_dur_ms to_finish = (ebb_dur_ms)((double)left / (o->speed > 0 ? o->speed : 1));
    ebb_dur_ms every_on = ebb__engine_every_on(job, e->view_map[view_k]);
    ebb_dur_ms every = every_on > 0
                           ? (ebb_dur_ms)((double)every_on /
                                          (o->speed > 0 ? o->speed : 1))
                           : to_finish;
    ebb_dur_ms stretch = every < to_finish ? every : to_finish;
    /* An instance still in its restart overhead works only after it. */
    if (running && !moving && job->current->launched) {
        ebb_time_ms productive = job->current->launched_at + job->spec.restart_overhead;
        if (productive > now)
            stretch += productive - now;
    }
    struct ebb__budget_step step = {
        .offer = e->view_map[view_k],
        .span = stretch + ebb__engine_offer_grace(job, e->view_map[view_k]) +
                (moving ? ebb__engine_restart_overhead(job) : 0),
        .launching = moving,
        /* A move brings the checkpoint along: its egress is spent at once. */
        .extra = moving ? o->transfer_cost : 0,
    };
    step.rate = worst_price(o, now, step.span);
    if (running && !moving)
        step.rate = max_micros(step.rate, billed_rate(job, now));
    /* Moving away: the current instance still runs its grace period. */
    if (running && moving) {
        ebb_dur_ms grace = ebb__engine_attempt_grace(job);
        if (cur != SIZE_MAX)
            step.extra += ebb__cost_of(
                max_micros(worst_price(&e->view_offers[cur], now, grace),
                           billed_rate(job, now)),
                grace);
    }
    struct ebb__budget_verdict v;
    if (capped && ebb__engine_budget_refuses(job, &step, now, &v)) {
        carry_out(job, &v);
        ebb__engine_wait_kind(job, EBB__WAIT_BUDGET);
        return 1;
    }
    int refused = ebb__engine_quota_refuses(job, &step, now, &v);
    if (refused && job->current == NULL) {
        carry_out(job, &v);
        ebb__engine_wait_kind(job, EBB__WAIT_QUOTA);
    }
    for (size_t i = 0; i < v.n_preempt; i++)
        pause_for(v.preempt[i], job, v.preempt_why, now);
    if (refused)
        return 1;
    if (capped && running && !moving)
        *recheck = now + (stretch > EBB_MS_PER_SECOND ? stretch : EBB_MS_PER_SECOND);
    /* A price the market already holds for later (a replayed trace)
     * comes without an event: a job of a team with max_burn that runs, or
     * launches, on an offer is judged again when its price next changes. */
    if ((!moving || !running) && ebb__engine_quota_burn_applies(job)) {
        const struct ebb__offer *mo = &e->market.offers[step.offer];
        const struct ebb__market_step *st = ebb__offer_at(mo, now);
        if (st != NULL && st + 1 < mo->steps + mo->n_steps && st[1].at > now &&
            (*recheck == 0 || st[1].at < *recheck))
            *recheck = st[1].at;
    }
    return 0;
}

/* Whether some offer of the view is available now. */
static int any_available(const struct ebb__engine *e, size_t n_view)
{
    for (size_t i = 0; i < n_view; i++)
        if (e->view_offers[i].available)
            return 1;
    return 0;
}

/* The earliest end of a pause on new launches (unavailable_until: a pool
 * under notice, one without capacity, a refused host) among the view's
 * offers, or 0 when none is paused. A job that waits for an offer must
 * hear when one comes back: nothing else happens on the market then. */
static ebb_time_ms pause_ends(const struct ebb__engine *e, size_t n_view, ebb_time_ms now)
{
    ebb_time_ms first = 0;
    for (size_t i = 0; i < n_view; i++) {
        ebb_time_ms until = e->market.offers[e->view_map[i]].unavailable_until;
        if (until > now && (first == 0 || until < first))
            first = until;
    }
    return first;
}

/* A job without an instance whose deadline has passed ends
 * deadline_missed, its checkpoint kept: ebb neither starts nor resumes a
 * job after its deadline (one running then runs on to its end, as its
 * policy chose). Returns 1 when it ended. */
static int deadline_passed(struct ebb__job *job, ebb_time_ms now)
{
    if (job->current != NULL || job->deadline <= 0 || now < job->deadline)
        return 0;
    char at[40], saved[32], total[32];
    ebb__engine_set_state(job, EBB__JOB_DEADLINE_MISSED, "the deadline %s passed "
                          "with %s of %s work saved%s",
                          ebb_format_time(job->deadline, at, sizeof(at)),
                          ebb_format_duration(job->work_saved, saved, sizeof(saved)),
                          ebb_format_duration(job->work_total, total, sizeof(total)),
                          job->work_saved > 0 ? "; its latest checkpoint is kept" : "");
    return 1;
}

/* A job that waits looks again at its deadline at the latest. */
static void wake_by_deadline(struct ebb__job *job, ebb_time_ms now)
{
    struct ebb__engine *e = job->engine;
    if (job->current != NULL || ebb__job_state_terminal(job->state) ||
        job->deadline <= now)
        return;
    if (!ebb__timer_pending(&job->wake) || job->wake.due > job->deadline)
        ebb__timer_start(e->opt.clock, &job->wake, job->deadline);
}

static void plan_now(struct ebb__job *job, ebb_time_ms now)
{
    struct ebb__engine *e = job->engine;

    int running = job->state == EBB__JOB_RUNNING && job->current != NULL &&
                  !job->current->stop_sent && !job->current->notice;
    if (!running && job->state != EBB__JOB_WAITING && job->state != EBB__JOB_PAUSED) {
        struct ebb__budget_verdict v;
        if (ebb__engine_budget_guard(job, now, &v))
            carry_out(job, &v);
        return; /* launching, checkpointing: the next event will re-plan */
    }
    if (!running && (deadline_passed(job, now) || ebb__engine_retry_pending(job, now)))
        return; /* ended, or its wake-up is set for the next try */
    size_t n_view = build_market_view(e, job, now); /* updates job->allowed */
    struct ebb__budget_verdict idle;
    if (!running && ebb__engine_budget_idle(job, now, &idle)) {
        carry_out(job, &idle);
        return;
    }
    const struct ebb_policy *policy = job->policy->plugin->policy;
    struct ebb_market_view market = {
        .struct_size = sizeof(market),
        .offers = e->view_offers,
        .n_offers = n_view,
        .generation = e->view_generation,
    };
    if (policy->flags & EBB_POLICY_ASKS_FORECASTS) {
        market.fill_forecast = fill_forecast;
        market.fill_ctx = e;
    } else if (fill_forecasts(e, n_view) != 0) {
        ebb__error("job %s: out of memory for the offers' forecasts", job->id);
        return;
    }
    struct ebb_job_view view;
    fill_job_view(job, now, n_view, &view);
    ebb__engine_note_deadline(job, e->view_offers, n_view, now);
    if (running && view.running_offer == SIZE_MAX)
        return; /* its offer lost its price: wait for the market */

    struct ebb_decision d = {0};
    e->decisions++;
    int saved = 0;
    size_t patched = own_offer_available(e, job, n_view, now, &saved);
    if (transfer_costs(e, job, n_view))
        market.generation = 0; /* this job's own: no promise for the next */
    int rc = policy->decide(job->policy->self, &view, &market, now, &d);
    if (patched != SIZE_MAX)
        e->view_offers[patched].available = saved;
    d.reason[sizeof(d.reason) - 1] = '\0';
    if (rc != 0) {
        ebb__error("job %s: policy %s failed: %s", job->id,
                   job->policy->plugin->name, ebb_strerror(rc));
        return;
    }
    if (d.kind == EBB_DECIDE_LAUNCH && d.offer >= n_view) {
        ebb__error("job %s: policy %s chose offer %zu of %zu", job->id,
                   job->policy->plugin->name, d.offer, n_view);
        return;
    }
    ebb_time_ms recheck = 0;
    if (budget_refuses(job, &d, n_view, now, &recheck))
        return;
    if (recheck > 0 && (d.until <= 0 || d.until > recheck))
        d.until = recheck;
    switch (d.kind) {
    case EBB_DECIDE_LAUNCH: {
        size_t offer = e->view_map[d.offer];
        if (!running) {
            ebb__engine_launch(job, offer, d.reason);
            if (recheck > 0 && job->current != NULL)
                wake_at(job, recheck, now);
        } else if (offer != job->current->offer) {
            ebb__engine_release(job, EBB__JOB_WAITING, offer, d.reason);
        } else {
            wake_at(job, d.until, now);
        }
        break;
    }
    case EBB_DECIDE_STOP: {
        struct ebb__budget_verdict v;
        if (running && ebb__engine_budget_stop(job, d.reason, now, &v)) {
            carry_out(job, &v);
            break;
        }
        if (running)
            ebb__engine_release(job, EBB__JOB_PAUSED, SIZE_MAX, d.reason);
        else
            wake_at(job, d.until, now);
        break;
    }
    case EBB_DECIDE_WAIT:
    case EBB_DECIDE_KEEP:
    default:
        wake_at(job, d.until, now);
        break;
    }
    if (job->current == NULL) {
        ebb_time_ms back = pause_ends(e, n_view, now);
        if (back > 0 && (!ebb__timer_pending(&job->wake) || job->wake.due > back))
            ebb__timer_start(e->opt.clock, &job->wake, back);
        ebb__engine_quota_yield(job);
        ebb__engine_note_waiting(job, d.reason[0] ? d.reason
                                                  : "the policy chose to wait");
        ebb__engine_wait_kind(job, !any_available(e, n_view) ? EBB__WAIT_CAPACITY
                                   : d.until > now           ? EBB__WAIT_TIMER
                                                             : EBB__WAIT_PRICE);
    }
}

void ebb__engine_plan_job(struct ebb__job *job)
{
    if (job->held)
        return;
    ebb_time_ms now = ebb__clock_now(job->engine->opt.clock);
    plan_now(job, now);
    wake_by_deadline(job, now);
}
