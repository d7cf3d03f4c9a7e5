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
 * checkpoint counts as progress (the job is alive, writing it).
 *
 * The GPU guard (the spec's min_gpu_util) watches the utilisation its
 * agents report with their heartbeats once the restart overhead is over
 * (loading data and a checkpoint leaves GPUs idle): when every report for
 * the window (the spec's stall_after, else EBB__JOB_GPU_WINDOW_DEFAULT)
 * has been under min_gpu_util, the job is moved the same way. One report
 * at or above it starts the window again, so a checkpoint's pause or a
 * slow step does not move a job, and a gang moves when all its nodes idle
 * (a throttled node idles its peers at every collective). */
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

void ebb__engine_stall_gpu(struct ebb__job *job, int gpu_util, ebb_time_ms now)
{
    struct ebb__attempt *a = job->current;
    if (a->running_at == 0 || now < a->running_at + job->spec.restart_overhead)
        return;
    a->gpu_reports++;
    a->gpu_util = gpu_util;
    if (job->spec.min_gpu_util <= 0 || gpu_util >= job->spec.min_gpu_util) {
        a->gpu_low_since = a->gpu_low_last = 0;
        a->gpu_low_sum = 0;
        a->gpu_low_n = 0;
        return;
    }
    if (a->gpu_low_n == 0)
        a->gpu_low_since = now;
    a->gpu_low_last = now;
    a->gpu_low_sum += gpu_util;
    a->gpu_low_n++;
}

ebb_dur_ms ebb__engine_gpu_window(const struct ebb__job *job, unsigned *reports,
                                  int *latest)
{
    const struct ebb__attempt *a = job->current;
    *reports = a != NULL ? a->gpu_reports : 0;
    *latest = a != NULL ? a->gpu_util : 0;
    if (job->spec.min_gpu_util <= 0)
        return 0;
    return job->spec.stall_after > 0 ? job->spec.stall_after : EBB__JOB_GPU_WINDOW_DEFAULT;
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

/* Why the job's progress stopped into `reason` (the start of its event);
 * 0: it has not. */
static int progress_stalled(const struct ebb__job *job, ebb_time_ms now, char *reason,
                            size_t size)
{
    const struct ebb__attempt *a = job->current;
    ebb_dur_ms after = ebb__engine_stall_after(job);
    if (after <= 0 || now - a->progress_at < after)
        return 0;
    char quiet[EBB_DURATION_BUFSZ], limit[EBB_DURATION_BUFSZ];
    snprintf(reason, size, "no progress for %s (stall_after %s%s)",
             ebb_format_duration(whole_seconds(now - a->progress_at), quiet, sizeof(quiet)),
             ebb_format_duration(whole_seconds(after), limit, sizeof(limit)),
             job->spec.stall_after > 0 ? "" : ", from its progress lines");
    return 1;
}

/* Why the job's GPUs idled into `reason`; 0: they have not. Low reports
 * must span the window, first to last: an agent that stops sending
 * utilisation (nvidia-smi hung) leaves no evidence for the time after. */
static int gpus_idle(const struct ebb__job *job, char *reason, size_t size)
{
    const struct ebb__attempt *a = job->current;
    unsigned reports;
    int latest;
    ebb_dur_ms window = ebb__engine_gpu_window(job, &reports, &latest);
    if (window <= 0 || a->gpu_low_n == 0 || a->gpu_low_last - a->gpu_low_since < window)
        return 0;
    char low[EBB_DURATION_BUFSZ];
    snprintf(reason, size, "GPU utilisation under %d%% for %s (mean %lld%%)",
             job->spec.min_gpu_util,
             ebb_format_duration(whole_seconds(a->gpu_low_last - a->gpu_low_since), low,
                                 sizeof(low)),
             (a->gpu_low_sum + a->gpu_low_n / 2) / a->gpu_low_n);
    return 1;
}

void ebb__engine_stall_check(struct ebb__job *job, ebb_time_ms now)
{
    struct ebb__attempt *a = job->current;
    if (a == NULL || job->state != EBB__JOB_RUNNING || !a->launched || a->stop_sent ||
        a->notice || a->terminating || a->agent_exited)
        return;
    char why[160];
    if (!progress_stalled(job, now, why, sizeof(why)) && !gpus_idle(job, why, sizeof(why)))
        return;
    const struct ebb__offer *o = &job->engine->market.offers[a->offer];
    char where[96], reason[320], key[160];
    ebb__engine_describe_offer(o, where, sizeof(where));
    /* In whole seconds, and short: the release keeps 191 bytes of it. */
    snprintf(reason, sizeof(reason), "stalled: %s; checkpointing, moving, leaving %s out "
             "for %d h", why, where, (int)(EBB__REFUSED_HOST_PAUSE / EBB_MS_PER_HOUR));
    ebb__warn("job %s: %s", job->id, reason);
    snprintf(key, sizeof(key), "stalled:%s", a->token);
    ebb__engine_note(job, "job.stalled", key, reason);
    ebb__engine_mark_host(job, now);
    ebb__engine_release(job, EBB__JOB_WAITING, SIZE_MAX, reason);
}
