/* Where a clock starts on a store with history (clock.h,
 * ebb__clock_resume). Pure but for moving the clock: the store's record
 * comes in, a decision and its words go out. */
#include <stdio.h>

#include <ebb/units.h>

#include "io/clock.h"

static int is_wall(const struct ebb__clock *c)
{
    return !c->is_virtual && c->speed == 1.0 && c->origin == 0;
}

int ebb__clock_resume(struct ebb__clock *clock, ebb_time_ms start,
                      const struct ebb__clock_history *h, char *err,
                      size_t errlen)
{
    ebb_time_ms now = ebb__clock_now(clock);
    if (h->latest <= now)
        return 0;
    int wall = is_wall(clock);
    if (!wall && h->start_known && h->start == start) {
        ebb__clock_advance(clock, h->latest);
        return 1;
    }
    char at[40], latest[40], before[40], what[160], also[192] = "";
    ebb_format_time(now, at, sizeof(at));
    ebb_format_time(h->latest, latest, sizeof(latest));
    if (wall)
        snprintf(what, sizeof(what), "the wall clock reads %s", at);
    else if (start != 0)
        snprintf(what, sizeof(what), "clock.start is %s",
                 ebb_format_time(start, before, sizeof(before)));
    else
        snprintf(what, sizeof(what), "the clock (speed %g, no clock.start) "
                 "would start at the wall clock's %s", clock->speed, at);
    /* How the store's own clock can be had again, when it is known. */
    if (h->start_known && h->start != 0)
        snprintf(also, sizeof(also), "; clock.start %s (the one the store last "
                 "ran with) resumes from there",
                 ebb_format_time(h->start, before, sizeof(before)));
    else if (h->start_known && h->speed != 1.0 && h->speed > 0)
        snprintf(also, sizeof(also), "; clock.speed %g without clock.start "
                 "(the clock the store last ran with) resumes from there",
                 h->speed);
    snprintf(err, errlen,
             "%s, before %s, the latest time recorded in the store: the clock "
             "would run backwards, and instances would end before they "
             "started. %s%s, or use a new --state-dir",
             what, latest,
             wall ? "Fix the system clock or wait until then"
                  : "Set clock.start to that time or later",
             also);
    return EBB_ECONFIG;
}
