/* The instance events providers and agents report: a job's instance runs,
 * progresses, checkpoints, gets a notice, is lost or its job exits; and,
 * under run_on, what the market says of a runner's machine. */
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

#include "base/currency.h"
#include "base/log.h"
#include "engine/internal.h"

/* ---- instance events --------------------------------------------------- */

static void on_running(struct ebb__job *job, const struct ebb_instance_event *ev)
{
    struct ebb__attempt *a = job->current;
    struct ebb__engine *e = job->engine;
    if (a->running_at != 0) /* the provider and the agent both say so */
        return;
    a->running_at = ev->at;
    if (job->attempts > 1)
        job->restarts++;
    /* Without agents (backtests) the provider's word is all there is that
     * the job started; with them, the agent's "started" says so. */
    if (e->opt.agent_url == NULL)
        job->start_failures = 0;
    if (ebb__store_instance_update(e->opt.store, a->token, "running", NULL,
                                   0, 0, NULL) != 0)
        ebb__error("job %s: %s", job->id, ebb__store_errmsg(e->opt.store));
    if (job->state == EBB__JOB_LAUNCHING) {
        const struct ebb__offer *o = &e->market.offers[a->offer];
        const struct ebb__market_step *st = ebb__offer_at(o, ev->at);
        char what[160], price[48];
        ebb__engine_describe_offer(o, what, sizeof(what));
        ebb__format_amount(st ? st->price : 0, EBB__RATE_DECIMALS, o->currency,
                           price, sizeof(price));
        ebb__engine_set_state(job, EBB__JOB_RUNNING, "running on %s (%s) at %s/h",
                              what, a->instance_id, price);
        ebb__engine_budget_burn(job, NULL);
    }
    ebb__engine_mark_dirty(job);
}

/* `r`: the agent's report of a checkpoint durable in the job's store
 * (r->bytes > 0), recorded with its row; NULL for any other. */
static void on_checkpoint(struct ebb__job *job, const struct ebb_instance_event *ev,
                          const struct ebb__agent_report *r)
{
    struct ebb__attempt *a = job->current;
    ebb_dur_ms saved = a->work_base + ev->work_done;
    if (saved > job->work_total)
        saved = job->work_total;
    if (saved > job->work_saved)
        job->work_saved = saved;
    struct ebb__store *s = job->engine->opt.store;
    const char *path = ev->checkpoint_path ? ev->checkpoint_path
                                           : job->spec.checkpoint.dir;
    int64_t bytes = r != NULL ? r->bytes : 0;
    int rc = ebb__store_begin(s);
    if (rc == 0)
        rc = ebb__store_checkpoint_add(s, job->id, a->token, ev->at, path, saved,
                                       1, bytes);
    if (rc == 0 && bytes > 0)
        rc = ebb__engine_transfer_checkpoint(job, ev->at, r);
    if (rc == 0)
        rc = ebb__store_commit(s);
    if (rc != 0) {
        ebb__store_rollback(s);
        ebb__error("job %s: cannot record a checkpoint: %s", job->id,
                   ebb__store_errmsg(s));
        /* What it holds is what the store says, as after a restart. */
        if (bytes > 0 && ebb__engine_transfer_recover(job) != 0)
            ebb__error("job %s: cannot read back its stored checkpoints", job->id);
    }
    /* The budget check bounds spend until the next checkpoint: a capped job
     * is checked again at each one. */
    if (ebb__engine_budget_applies(job))
        ebb__engine_mark_dirty(job);
}

void ebb__engine_stored_checkpoint(struct ebb__job *job,
                                   const struct ebb_instance_event *ev,
                                   const struct ebb__agent_report *r)
{
    on_checkpoint(job, ev, r);
}

/* Whether the attempt ended before its job ever started: ebbd has agents
 * and this one never reported, and no notice explains the loss. */
static int never_started(const struct ebb__job *job)
{
    const struct ebb__attempt *a = job->current;
    return job->engine->opt.agent_url != NULL && a->agent_seen == 0 && !a->notice;
}

/* `from_market`: the market took the runner's machine away (run_on), which
 * is a preemption whether or not the job had started. */
static void on_lost(struct ebb__job *job, const struct ebb_instance_event *ev,
                    int from_market)
{
    const char *why = ev->reason ? ev->reason : "instance lost";
    struct ebb__attempt *a = job->current;
    /* Whatever is left of it is released: a runner whose market took the
     * machine away still has processes; an outbid marketplace machine
     * still bills its storage and restarts if the bid wins again. */
    if (a->launched && !a->terminating)
        ebb__engine_release_aside(job->engine, a->provider, a->instance_id);
    /* An instance that goes before its agent ever reported (an agent that
     * cannot start or reach ebbd) is a failed start, bounded, not a
     * preemption to resume from again and again. */
    if (!from_market && never_started(job)) {
        ebb__engine_finish_attempt(job, ev->at, "terminated", why);
        char reason[256];
        snprintf(reason, sizeof(reason), "%s before its agent reported", why);
        ebb__engine_start_failed(job, reason);
        return;
    }
    job->preemptions++;
    job->engine->market.offers[job->current->offer].losses++;
    ebb__engine_finish_attempt(job, ev->at, "terminated", why);
    char saved[32];
    ebb_format_duration(job->work_saved, saved, sizeof(saved));
    ebb__engine_set_state(job, EBB__JOB_PREEMPTED, "%s; resuming from the "
                          "checkpoint at %s of work", why, saved);
    ebb__engine_after_instance(job);
}

static void on_exited(struct ebb__job *job, const struct ebb_instance_event *ev)
{
    struct ebb__attempt *a = job->current;
    a->agent_exited = 1;
    if (ev->exit_status == EBB_EXIT_STOPPED && (a->notice || a->shadow_lost) &&
        job->after_release == EBB__JOB_WAITING && job->launch_next == SIZE_MAX)
        ebb__engine_mark_preempted(job, a->shadow_lost ? "the instance was taken away"
                                           : "preemption notice");
    if (ev->exit_status == 0) {
        job->work_saved = job->work_total;
        job->after_release = EBB__JOB_SUCCEEDED;
        job->launch_next = SIZE_MAX;
        snprintf(job->after_reason, sizeof(job->after_reason),
                 "the job exited with status 0");
    } else if (ev->exit_status == EBB_EXIT_NOT_STARTED) {
        /* No such program, no working directory: the same next time. */
        job->after_release = EBB__JOB_FAILED;
        job->launch_next = SIZE_MAX;
        snprintf(job->after_reason, sizeof(job->after_reason), "%s",
                 ev->reason ? ev->reason : "the job could not be started");
    } else if (ev->exit_status != EBB_EXIT_STOPPED) {
        if (job->retries < (unsigned)job->spec.max_retries) {
            job->retries++;
            job->retry_wait = ebb__engine_retry_backoff(job->retries);
            job->after_release = EBB__JOB_WAITING;
            snprintf(job->after_reason, sizeof(job->after_reason),
                     "the job exited with status %d; retry %u of %d",
                     ev->exit_status, job->retries, job->spec.max_retries);
        } else {
            job->after_release = EBB__JOB_FAILED;
            snprintf(job->after_reason, sizeof(job->after_reason),
                     "the job exited with status %d after %u retries",
                     ev->exit_status, job->retries);
        }
        job->launch_next = SIZE_MAX;
    }
    ebb__engine_terminate(job);
}

static void on_notice(struct ebb__job *job, const struct ebb_instance_event *ev)
{
    struct ebb__attempt *a = job->current;
    int first = !a->notice;
    a->notice = 1;
    if (first)
        a->notice_at = ev->at;
    if (a->notice_deadline == 0 || ev->deadline < a->notice_deadline)
        a->notice_deadline = ev->deadline;
    /* A pool reclaiming capacity takes no new launch before it is done:
     * one now would get the same notice (seen: nine launches in two
     * minutes onto a zone whose capacity was going). */
    struct ebb__offer *o = &job->engine->market.offers[a->offer];
    if (ev->deadline > o->unavailable_until) {
        o->unavailable_until = ev->deadline;
        job->engine->market.version++;
    }
    if (first && !a->stop_sent) {
        char when[40];
        ebb_format_time(ev->deadline, when, sizeof(when));
        ebb__engine_set_state(job, EBB__JOB_CHECKPOINTING, "preemption "
                              "notice: the instance goes at %s", when);
    }
    if (a->agent_seen != 0 && !a->agent_exited)
        ebb__engine_arm_grace_end(job);
    /* The caps are checked against what the notice lets the instance run
     * (ebb__engine_budget_guard) at once, not at the next market change. */
    if (ebb__engine_budget_applies(job))
        ebb__engine_mark_dirty(job);
}

/* What the market says of a runner's machine: its notice reaches the agent
 * through the metadata endpoint; its loss takes the runner's processes,
 * after the agent had its grace period when the clock is accelerated. */
static void on_shadow_event(struct ebb__job *job, const struct ebb_instance_event *ev)
{
    struct ebb__attempt *a = job->current;
    if (ev->kind == EBB_EVENT_NOTICE) {
        if (!ebb__engine_replace_notice(job, ev))
            on_notice(job, ev);
        return;
    }
    if (ev->kind != EBB_EVENT_LOST || a->shadow_lost || ebb__engine_replace_lost(job, ev))
        return;
    a->shadow_lost = 1;
    /* A machine the market took may still exist and bill (an outbid
     * vast.ai instance is stopped, not destroyed): it is released too;
     * one already gone answers "not found", which is ignored. */
    if (a->shadow_id != NULL)
        ebb__engine_release_aside(job->engine, a->market, a->shadow_id);
    if (a->agent_exited || a->terminating)
        return;
    if (ebb__engine_holds_past_loss(job)) {
        ebb__engine_arm_grace_end(job);
        return;
    }
    on_lost(job, ev, 1);
}

/* A gang member gone after its agent reported its job's end: it left as
 * it should, while its peers finish (their exits end the gang's run). */
static int member_done(const struct ebb__job *job, const struct ebb_instance_event *ev)
{
    const struct ebb__attempt *a = job->current;
    int rank = EBB_HAS(struct ebb_instance_event, ev, rank) ? ev->rank : -1;
    return rank >= 0 && (unsigned)rank < a->n_nodes && a->n_nodes > 1 &&
           a->nodes[rank].exited;
}

void ebb__engine_instance_event(void *sink, const char *provider,
                                const struct ebb_instance_event *ev)
{
    struct ebb__engine *e = sink;
    struct ebb__job *job = ebb__engine_job_of_token(e, ev->token);
    if (job == NULL) {
        ebb__debug("%s: event %d for unknown instance %s", provider,
                   (int)ev->kind, ev->instance_id ? ev->instance_id : "?");
        return;
    }
    struct ebb__attempt *a = job->current;
    if (a->market != NULL && strcmp(provider, a->market->plugin->name) == 0) {
        on_shadow_event(job, ev);
        return;
    }
    switch (ev->kind) {
    case EBB_EVENT_RUNNING:
        on_running(job, ev);
        break;
    case EBB_EVENT_PROGRESS:
        a->reported_work = ev->work_done;
        a->reported_at = ev->at;
        break;
    case EBB_EVENT_CHECKPOINT:
        on_checkpoint(job, ev, NULL);
        break;
    case EBB_EVENT_NOTICE:
        if (!ebb__engine_replace_notice(job, ev))
            on_notice(job, ev);
        break;
    case EBB_EVENT_LOST:
        if (!member_done(job, ev) && !ebb__engine_replace_lost(job, ev))
            on_lost(job, ev, 0);
        break;
    case EBB_EVENT_EXITED:
        on_exited(job, ev);
        break;
    }
}
