/* The stall guard (docs/agent.md "Stall guard"): a job whose progress stops
 * for its stall_after is checkpointed and moved, its host marked out of
 * the choice like a host the host check refused, with the reason in its
 * event and a `job.stalled` notification.
 *
 * The guard watches the work the agent's progress lines report: it is on
 * from the first line on an instance, and a line that reports no more work
 * than the one before does not count as progress. Without a spec's
 * stall_after it waits EBB__STALL_FACTOR times the longest interval seen
 * between the job's progress lines (the first on an instance counted
 * from the end of its restart overhead), at least EBB__STALL_AFTER_MIN. A
 * checkpoint counts as progress (the job is alive, writing it). */
#include <stdio.h>

#include <ebb/units.h>

#include "base/log.h"
#include "engine/internal.h"

void ebb__engine_mark_host(struct ebb__job *job, ebb_time_ms now)
{
    struct ebb__engine *e = job->engine;
    e->market.offers[job->current->offer].unavailable_until = now + EBB__REFUSED_HOST_PAUSE;
    e->market.version++;
}

void ebb__engine_stall_progress(struct ebb__job *job, ebb_dur_ms done, ebb_time_ms now)
{
    struct ebb__attempt *a = job->current;
    if (a->progress_at != 0 && done <= a->progress_work)
        return; /* no more work: not progress */
    /* The first line on an instance counts from the end of its restart
     * overhead: a job that reports once an hour is not moved ten minutes
     * after its first line. */
    ebb_time_ms from = a->progress_at != 0 ? a->progress_at
                                           : a->running_at + job->spec.restart_overhead;
    if (a->running_at != 0 && now - from > job->progress_gap)
        job->progress_gap = now - from;
    a->progress_at = now;
    a->progress_work = done;
}

void ebb__engine_stall_alive(struct ebb__attempt *a, ebb_time_ms now)
{
    if (a->progress_at != 0)
        a->progress_at = now;
}

ebb_dur_ms ebb__engine_stall_after(const struct ebb__job *job)
{
    const struct ebb__attempt *a = job->current;
    if (a == NULL || a->progress_at == 0)
        return 0;
    if (job->spec.stall_after > 0)
        return job->spec.stall_after;
    ebb_dur_ms after = EBB__STALL_FACTOR * job->progress_gap;
    return after > EBB__STALL_AFTER_MIN ? after : EBB__STALL_AFTER_MIN;
}

static ebb_dur_ms whole_seconds(ebb_dur_ms d)
{
    return d / EBB_MS_PER_SECOND * EBB_MS_PER_SECOND;
}

void ebb__engine_stall_check(struct ebb__job *job, ebb_time_ms now)
{
    struct ebb__attempt *a = job->current;
    if (a == NULL || job->state != EBB__JOB_RUNNING || !a->launched || a->stop_sent ||
        a->notice || a->terminating || a->agent_exited)
        return;
    ebb_dur_ms after = ebb__engine_stall_after(job);
    if (after <= 0 || now - a->progress_at < after)
        return;
    const struct ebb__offer *o = &job->engine->market.offers[a->offer];
    char quiet[EBB_DURATION_BUFSZ], limit[EBB_DURATION_BUFSZ], where[96];
    char reason[320], key[160];
    ebb__engine_describe_offer(o, where, sizeof(where));
    /* In whole seconds, and short: the release keeps 191 bytes of it. */
    snprintf(reason, sizeof(reason), "stalled: no progress for %s (stall_after %s%s); "
             "checkpointing, moving, leaving %s out for %d h",
             ebb_format_duration(whole_seconds(now - a->progress_at), quiet, sizeof(quiet)),
             ebb_format_duration(whole_seconds(after), limit, sizeof(limit)),
             job->spec.stall_after > 0 ? "" : ", from its progress lines", where,
             (int)(EBB__REFUSED_HOST_PAUSE / EBB_MS_PER_HOUR));
    ebb__warn("job %s: %s", job->id, reason);
    snprintf(key, sizeof(key), "stalled:%s", a->token);
    ebb__engine_note(job, "job.stalled", key, reason);
    ebb__engine_mark_host(job, now);
    ebb__engine_release(job, EBB__JOB_WAITING, SIZE_MAX, reason);
}
