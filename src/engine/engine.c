/* The engine's life, jobs' submission and cancelling, the prices polls
 * bring (the poller, plugin/poller.c, decides when to poll) and the
 * planning pass. Decisions are in engine_plan.c, their execution in
 * engine_exec.c, the instance events in engine_events.c, the job states
 * and the dirty queue in engine_state.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/log.h"
#include "base/str.h"
#include "engine/internal.h"

/* ---- planning pass ----------------------------------------------------- */

/* A pass decides for this many jobs at most, and stops early once this
 * many provider calls wait for its commit; the rest is planned by the next
 * pass at the same instant, after the loop has served what came in. Counts,
 * not wall time, so that a virtual run stays deterministic. A decision
 * costs microseconds; a launch, with its store writes, a hundred or so. */
#define PASS_MAX_PLANS 512
#define PASS_MAX_CALLS 16

static void on_plan_timer(struct ebb__timer *t)
{
    struct ebb__engine *e = t->data;
    /* The pass plans the jobs dirty when it began, at most PASS_MAX_PLANS,
     * in the order of their teams' queues (engine_order.c): a job ranked
     * ahead decides, and takes what a quota has room for, first. Jobs
     * marked dirty while it runs queue up behind them, for the next pass. */
    size_t n = ebb__engine_order_dirty(e, PASS_MAX_PLANS);
    ebb__engine_batch_begin(e);
    for (size_t planned = 0; planned < n && !ebb_list_empty(&e->dirty); planned++) {
        if (e->n_calls >= PASS_MAX_CALLS)
            break;
        struct ebb_list *node = e->dirty.next;
        ebb_list_remove(node);
        struct ebb__job *job = ebb_list_entry(node, struct ebb__job, dirty);
        if (!ebb__job_state_terminal(job->state))
            ebb__engine_plan_job(job);
    }
    /* The rest, still at the queue's front, goes first next time. */
    if (!ebb_list_empty(&e->dirty) && (n == PASS_MAX_PLANS || e->n_calls >= PASS_MAX_CALLS))
        ebb__timer_start(e->opt.clock, &e->plan_timer, ebb__clock_now(e->opt.clock));
    ebb__engine_batch_end(e);
}

/* ---- prices ------------------------------------------------------------ */

void ebb__engine_prices(void *engine, const char *provider, int status,
                        const struct ebb_price *prices, size_t n)
{
    struct ebb__engine *e = engine;
    (void)status; /* a failed poll may still bring what it read */
    /* Wake only the jobs that may use an offer that changed. A batch that
     * changes many offers (a first poll's history) wakes everyone once. */
    size_t n_offers_before = e->market.n_offers;
    size_t changed = SIZE_MAX, n_changed = 0;
    for (size_t i = 0; i < n; i++) {
        size_t offer;
        if (ebb__market_observe(&e->market, provider, &prices[i], &offer) != 0) {
            ebb__error("out of memory recording prices");
            break;
        }
        if (offer != SIZE_MAX && offer != changed) {
            changed = offer;
            n_changed++;
        }
    }
    if (e->opt.store_prices && n > 0) {
        size_t inserted = 0;
        if (ebb__store_put_prices(e->opt.store, provider, prices, n, &inserted) != 0)
            ebb__error("cannot store prices: %s", ebb__store_errmsg(e->opt.store));
    }
    if (n_changed == 1 && e->market.n_offers == n_offers_before)
        ebb__engine_wake_offer(e, changed, NULL);
    else if (n_changed > 0)
        ebb__engine_wake_offer(e, SIZE_MAX, NULL);
}

void ebb__engine_all_polled(void *engine)
{
    struct ebb__engine *e = engine;
    e->all_polled = 1;
    if (e->recovery != NULL)
        ebb__engine_reconcile(e);
}

void ebb__engine_host_env(struct ebb__engine *e, struct ebb__host_env *env)
{
    env->sink = e;
    env->instance_event = ebb__engine_instance_event;
}

/* ---- life -------------------------------------------------------------- */

int ebb__engine_new(const struct ebb__engine_options *o, struct ebb__engine **out)
{
    struct ebb__engine *e = calloc(1, sizeof(*e));
    *out = NULL;
    if (e == NULL)
        return EBB_ENOMEM;
    e->opt = *o;
    e->job_end = ebb__engine_transfer_job_end;
    ebb_list_init(&e->jobs);
    ebb_list_init(&e->dirty);
    ebb_list_init(&e->releases);
    ebb__market_init(&e->market, o->catalog);
    ebb__timer_init(&e->plan_timer, on_plan_timer, e);
    ebb__timer_init(&e->agent_sweep, NULL, e);
    *out = e;
    return 0;
}

void ebb__engine_free(struct ebb__engine *e)
{
    if (e == NULL)
        return;
    ebb__timer_stop(e->opt.clock, &e->plan_timer);
    ebb__timer_stop(e->opt.clock, &e->agent_sweep);
    ebb__engine_recovery_free(e);
    struct ebb_list *node, *tmp;
    ebb_list_foreach_safe(node, tmp, &e->jobs) {
        struct ebb__job *job = ebb_list_entry(node, struct ebb__job, node);
        ebb__timer_stop(e->opt.clock, &job->wake);
        if (job->current != NULL)
            ebb__engine_attempt_free(e, job->current);
        ebb__engine_job_free(job);
    }
    free(e->by_id);
    free(e->view_offers);
    free(e->view_map);
    free(e->view_allowed);
    free(e->view_fc);
    free(e->view_hazard);
    free(e->view_filled);
    ebb__engine_outlook_free(e);
    ebb__engine_speed_free(e);
    free(e->view_family);
    free(e->calls);
    ebb__engine_releases_free(e);
    ebb__market_free(&e->market);
    free(e);
}

const struct ebb__engine_options *ebb__engine_options(const struct ebb__engine *e)
{
    return &e->opt;
}

void ebb__engine_set_outlook_refresh(struct ebb__engine *e, ebb_dur_ms refresh)
{
    e->opt.outlook_refresh = refresh;
}

void ebb__engine_set_agent_url(struct ebb__engine *e, const char *url)
{
    e->opt.agent_url = url;
}

void ebb__engine_set_agent_tls(struct ebb__engine *e, const char *pin,
                               const char *ca_pem)
{
    e->opt.agent_tls_pin = pin;
    e->opt.agent_tls_ca = ca_pem;
}

void ebb__engine_set_budget_config(struct ebb__engine *e,
                                   const struct ebb__config *config)
{
    e->opt.budget_config = config;
}

const struct ebb__market *ebb__engine_market(const struct ebb__engine *e)
{
    return &e->market;
}

void ebb__engine_stats(const struct ebb__engine *e, struct ebb__engine_stats *s)
{
    *s = (struct ebb__engine_stats){
        .jobs = e->n_jobs,
        .active = e->n_active,
        .decisions = e->decisions,
    };
}

/* ---- submission -------------------------------------------------------- */

/* Job ids are short and stable (the same backtest always names its jobs
 * the same way); unique within the store, see ebb__engine_submit_also. */
static void make_id(struct ebb__engine *e, const char *name, ebb_time_ms at,
                    char *out, size_t len)
{
    ebb__short_id("j", name, at, ++e->id_seq, out, len);
}

int ebb__engine_submit(struct ebb__engine *e, struct ebb__job_spec *spec,
                       const char *spec_yaml, int64_t owner_uid,
                       const char *workdir, struct ebb__job **out,
                       struct ebb_diag *d)
{
    return ebb__engine_submit_also(e, spec, spec_yaml, owner_uid, workdir, NULL,
                                   out, d);
}

int ebb__engine_submit_also(struct ebb__engine *e, struct ebb__job_spec *spec,
                            const char *spec_yaml, int64_t owner_uid,
                            const char *workdir, const struct ebb__submit_also *also,
                            struct ebb__job **out, struct ebb_diag *d)
{
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    /* A deadline already past can only be missed, at on-demand prices;
     * checked here, not in job_new, which also restores jobs whose
     * deadline passed while ebbd was down. */
    if (spec->has_deadline && ebb__jobspec_deadline(spec, now) <= now) {
        char at[40], clock_now[40];
        ebb_diag_set(d, spec->file, 0, "deadline %s is in the past (now is %s): "
                     "the job could only miss it",
                     ebb_format_time(ebb__jobspec_deadline(spec, now), at, sizeof(at)),
                     ebb_format_time(now, clock_now, sizeof(clock_now)));
        return EBB_EINVAL;
    }
    /* A relative checkpoint dir lies below the job's working directory;
     * without one it would lie wherever the agent happens to run. */
    const char *ckpt = spec->checkpoint.dir;
    if (ckpt != NULL && ckpt[0] != '/' && (workdir == NULL || workdir[0] != '/')) {
        ebb_diag_set(d, spec->file, 0, "checkpoint.dir \"%s\" is relative, and the "
                     "submit names no working directory to put it below: write an "
                     "absolute path", ckpt);
        return EBB_EINVAL;
    }
    struct ebb__job *job = NULL;
    int rc = ebb__engine_job_new(e, spec, owner_uid, workdir, now, &job, d);
    if (rc != 0)
        return rc;
    /* What can never run is refused here rather than left waiting for
     * ever; restored jobs (job_new alone) are not judged again. */
    char why[512];
    if (ebb__engine_job_runnable(e, job, why, sizeof(why)) != 0) {
        ebb_diag_set(d, job->spec.file, 0, "%s", why);
        ebb__engine_job_free(job);
        return EBB_EINVAL;
    }
    const struct ebb__plugin_slot *policy = job->policy;
    make_id(e, job->spec.name, now, job->id, sizeof(job->id));

    json_t *j = ebb__jobspec_to_json(&job->spec);
    char *spec_json = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(j);
    struct ebb__job_row row = {
        .id = job->id,
        .name = job->spec.name,
        .team = job->spec.team,
        .spec_yaml = spec_yaml ? spec_yaml : "",
        .spec_json = spec_json ? spec_json : "{}",
        .state = ebb__job_state_name(EBB__JOB_PENDING),
        .policy = policy->plugin->name,
        .owner_uid = owner_uid,
        .submitted_at = now,
        .deadline = job->deadline,
        .updated_at = now,
        .work_ms = job->work_total,
        .budget = job->budget,
        .currency = job->currency,
        .workdir = job->workdir,
        .priority = job->spec.priority,
    };
    struct ebb__store *s = e->opt.store;
    rc = ebb__store_begin(s);
    /* Ids are short: with many thousands of jobs two may hash alike. */
    for (int tries = 0; rc == 0; tries++) {
        rc = ebb__store_job_insert(s, &row);
        if (rc != EBB_EEXISTS || tries == 8)
            break;
        make_id(e, job->spec.name, now, job->id, sizeof(job->id));
        rc = 0;
    }
    if (rc == 0)
        rc = ebb__store_job_event(s, job->id, now, NULL, "pending", "submitted");
    if (rc == 0 && also != NULL)
        rc = also->write(also->arg, s, job->id);
    if (rc == 0)
        rc = ebb__store_commit(s);
    free(spec_json);
    if (rc != 0) {
        ebb__store_rollback(s);
        ebb_diag_set(d, NULL, 0, "cannot store job %s: %s", job->spec.name,
                      ebb__store_errmsg(s));
        ebb__engine_job_free(job);
        return rc;
    }
    if (ebb__engine_job_add(e, job) != 0) {
        ebb_diag_set(d, NULL, 0, "out of memory");
        ebb__engine_job_free(job);
        return EBB_ENOMEM;
    }
    ebb__engine_set_state(job, EBB__JOB_WAITING, "policy %s will decide when "
                          "and where to run", policy->plugin->name);
    ebb__engine_mark_dirty(job);
    if (out != NULL)
        *out = job;
    return 0;
}

int ebb__engine_cancel(struct ebb__job *job, const char *why)
{
    if (ebb__job_state_terminal(job->state))
        return EBB_EINVAL;
    if (job->current != NULL) {
        ebb__engine_release(job, EBB__JOB_CANCELLED, SIZE_MAX, why);
        return 0;
    }
    ebb__engine_quota_yield(job);
    ebb__engine_set_state(job, EBB__JOB_CANCELLED, "%s", why);
    return 0;
}
