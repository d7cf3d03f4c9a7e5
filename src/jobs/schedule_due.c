/* The decision of which fire time of a schedule to start now (see
 * ebb__schedule_due() in schedule.h). Pure: the caller brings the store's
 * view and the clock's now.
 */
#include "jobs/schedule.h"

#include <string.h>

const char *ebb__skip_reason_text(enum ebb__skip_reason r)
{
    switch (r) {
    case EBB__SKIP_RUNNING:
        return "the previous run of this schedule is still going";
    case EBB__SKIP_NONE:
        break;
    }
    return "not skipped";
}

/* The latest fire time in (since, now], found without walking every fire
 * since `since` (after a long downtime an every-minute schedule has
 * thousands): look back an hour, then twice as far each time, until a
 * window holds a fire, and walk only that window. Returns 0 when there is
 * none. */
static int latest_due(const struct ebb__schedule *s, ebb_time_ms since,
                      ebb_time_ms now, ebb_time_ms *out)
{
    ebb_time_ms f, next;
    if (ebb__cron_next(&s->cron, s->tz, since, &f) != 0 || f > now)
        return 0;
    ebb_time_ms from = since;
    for (ebb_dur_ms back = EBB_MS_PER_HOUR; now - since > back; back *= 2) {
        if (ebb__cron_next(&s->cron, s->tz, now - back, &next) == 0 &&
            next <= now) {
            from = now - back;
            break;
        }
    }
    ebb__cron_next(&s->cron, s->tz, from, &f);
    while (ebb__cron_next(&s->cron, s->tz, f, &next) == 0 && next <= now)
        f = next;
    *out = f;
    return 1;
}

void ebb__schedule_due(const struct ebb__schedule *s,
                       const struct ebb__schedule_state *st, ebb_time_ms now,
                       struct ebb__schedule_decision *out)
{
    memset(out, 0, sizeof(*out));
    out->last_fire = st->since;
    ebb_time_ms latest, first;
    if (latest_due(s, st->since, now, &latest)) {
        out->last_fire = latest;
        ebb__cron_next(&s->cron, s->tz, st->since, &first);
        int on_time = now - latest <= EBB__SCHEDULE_LATE_OK;
        /* The one fire that may get a run: the latest, when it is on time
         * or when missed fires get one run. */
        int candidate = on_time || s->missed == EBB__MISSED_RUN_ONCE;
        if (!candidate) {
            out->has_missed = 1;
            out->missed_first = first;
            out->missed_last = latest;
        } else if (first < latest) {
            out->has_missed = 1;
            out->missed_first = first;
            latest_due(s, st->since, latest - 1, &out->missed_last);
        }
        if (candidate && st->running) {
            out->skip = EBB__SKIP_RUNNING;
            out->skipped_fire = latest;
        } else if (candidate) {
            out->start = 1;
            out->fire = latest;
            out->release = on_time ? latest : now;
            out->deadline = out->release + s->window;
        }
    }
    ebb_time_ms after = now > out->last_fire ? now : out->last_fire;
    out->has_next =
        ebb__cron_next(&s->cron, s->tz, after, &out->next_fire) == 0;
}
