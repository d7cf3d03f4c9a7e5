/* The grace period: how long an instance that is asked to stop (or gets a
 * preemption notice) may go on running. One figure serves three ends: the
 * budget prices it (engine_budget.c, engine_plan.c), the agent is told it
 * (engine_agent.c), and the executor releases the instance when it ends
 * (engine_exec.c), whatever the agent does. Were they different, spend
 * could pass a cap by the difference: at x120 a 60 s grace that the agent
 * really gets as 10 s of wall time is 20 minutes of billed market time.
 *
 * The figure is the job's checkpoint.grace, in market time, except where
 * an agent runs the job under an accelerated clock: the agent keeps wall
 * time, and writing a checkpoint takes the wall time it takes, so the
 * grace is never less than EBB__AGENT_MIN_GRACE of wall time there, and
 * that longer grace is what the budget counts. A provider that simulates
 * the job itself (stop_job: the sim market) runs it in market time and
 * gets the job's own grace. */
#include <string.h>

#include "engine/internal.h"

struct ebb__plugin_slot *ebb__engine_runner(const struct ebb__engine *e,
                                            const char *market,
                                            const char **missing)
{
    *missing = NULL;
    for (size_t i = 0; i < e->opt.n_run_on; i++) {
        if (strcmp(e->opt.run_on[i].market, market) != 0)
            continue;
        struct ebb__plugin_slot *s =
            ebb__registry_provider(e->opt.registry, e->opt.run_on[i].runner);
        if (s == NULL || s->self == NULL)
            *missing = e->opt.run_on[i].runner;
        return s;
    }
    return NULL;
}

/* Whether `runner`'s jobs are run by an agent on the wall clock while
 * ebbd's clock is accelerated. */
static int agent_on_wall_clock(const struct ebb__engine *e,
                               const struct ebb__plugin_slot *runner)
{
    const struct ebb__clock *c = e->opt.clock;
    return c->speed > 1.0 &&
           (runner == NULL || runner->plugin->provider->stop_job == NULL);
}

static ebb_dur_ms grace_on(const struct ebb__job *job,
                           const struct ebb__plugin_slot *runner)
{
    const struct ebb__engine *e = job->engine;
    ebb_dur_ms grace = job->spec.checkpoint.grace > 0 ? job->spec.checkpoint.grace : 0;
    if (agent_on_wall_clock(e, runner)) {
        ebb_dur_ms floor = ebb__clock_from_real_ms(e->opt.clock, EBB__AGENT_MIN_GRACE);
        if (grace < floor)
            grace = floor;
    }
    return grace;
}

ebb_dur_ms ebb__engine_release_slack(const struct ebb__engine *e)
{
    ebb_dur_ms latency = ebb__clock_from_real_ms(e->opt.clock, EBB__RELEASE_LATENCY);
    return latency > EBB_MS_PER_SECOND ? latency : EBB_MS_PER_SECOND;
}

ebb_dur_ms ebb__engine_offer_grace(const struct ebb__job *job, size_t offer)
{
    const struct ebb__engine *e = job->engine;
    const struct ebb__offer *o = &e->market.offers[offer];
    const char *missing = NULL;
    struct ebb__plugin_slot *runner = ebb__engine_runner(e, o->plugin, &missing);
    if (runner == NULL && missing == NULL)
        runner = ebb__registry_provider(e->opt.registry, o->plugin);
    return grace_on(job, runner);
}

ebb_dur_ms ebb__engine_attempt_grace(const struct ebb__job *job)
{
    return grace_on(job, job->current->provider);
}

int ebb__engine_holds_past_loss(const struct ebb__job *job)
{
    const struct ebb__attempt *a = job->current;
    return a->notice && a->agent_seen != 0 &&
           agent_on_wall_clock(job->engine, a->provider);
}

ebb_time_ms ebb__engine_grace_end(const struct ebb__job *job)
{
    const struct ebb__attempt *a = job->current;
    ebb_dur_ms grace = ebb__engine_attempt_grace(job);
    ebb_time_ms end = INT64_MAX;
    if (a->stop_sent)
        end = a->stop_at + grace;
    if (a->notice) {
        /* The market takes the instance at the notice's deadline; an
         * agent on the wall clock is given its grace past it. */
        ebb_time_ms gone = a->notice_deadline > 0 ? a->notice_deadline : a->notice_at;
        if (ebb__engine_holds_past_loss(job) && a->notice_at + grace > gone)
            gone = a->notice_at + grace;
        if (gone < end)
            end = gone;
    }
    return end;
}
