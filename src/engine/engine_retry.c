/* Failed runs and failed starts: when a job may launch again, and when it
 * has failed too often to be tried again. Nothing relaunches a job without
 * bound: a run that exits non-zero is retried `max_retries` times, a
 * launch that never starts the job (the provider refuses it, the instance
 * goes before its agent reports, the agent never reports) at most
 * EBB__MAX_FAILED_STARTS times in a row; each try waits longer than the
 * last, in market time, so an accelerated clock keeps its proportions. */
#include <stdio.h>

#include <ebb/backoff.h>
#include <ebb/units.h>

#include "engine/internal.h"

ebb_dur_ms ebb__engine_retry_backoff(unsigned n)
{
    return ebb_backoff_after(EBB__RETRY_BACKOFF_FIRST, EBB__RETRY_BACKOFF_MAX, n);
}

int ebb__engine_retry_pending(const struct ebb__job *job, ebb_time_ms now)
{
    return job->retry_at > now;
}

void ebb__engine_wait_to_retry(struct ebb__job *job, const char *why)
{
    struct ebb__engine *e = job->engine;
    char at[40];
    ebb_format_time(job->retry_at, at, sizeof(at));
    ebb__engine_set_state(job, EBB__JOB_WAITING, "%s; trying again at %s", why, at);
    ebb__engine_wait_kind(job, EBB__WAIT_RETRY);
    /* A deadline before the next try ends the job then (the planner). */
    ebb_time_ms wake = job->deadline > 0 && job->deadline < job->retry_at
                           ? job->deadline
                           : job->retry_at;
    ebb__timer_start(e->opt.clock, &job->wake, wake);
}

int ebb__engine_start_failed(struct ebb__job *job, const char *why)
{
    struct ebb__engine *e = job->engine;
    job->start_failures++;
    if (job->start_failures >= EBB__MAX_FAILED_STARTS) {
        ebb__engine_set_state(job, EBB__JOB_FAILED, "%s; %u launches in a row "
                              "never started the job, giving up", why,
                              job->start_failures);
        return 1;
    }
    job->retry_at = ebb__clock_now(e->opt.clock) +
                    ebb__engine_retry_backoff(job->start_failures);
    ebb__engine_wait_to_retry(job, why);
    return 0;
}
