/* A rate limit for repeated log lines: at most one line per interval, and
 * the next line that is let through says how many were held back.
 *
 * Refusals that anyone on the network can cause (an agent API request with
 * a wrong token, a connection over a cap) are logged through one, so that a
 * flood of them neither fills the disk nor hides everything else.
 */
#ifndef EBB_RATELIMIT_H
#define EBB_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include <ebb/common.h>

struct ebb__ratelimit {
    ebb_dur_ms interval; /* set by the owner; zero-initialise the rest */
    ebb_time_ms last;    /* when a line was last let through */
    bool started;        /* a line has been let through */
    uint64_t held;       /* lines held back since */
};

/* Whether an event at `now` (any monotonic ms, e.g. a clock's) may be
 * logged. When it may, *held says how many events were held back since the
 * last one that was, and that count starts over; when it may not, the
 * event is counted. */
bool ebb__ratelimit_allow(struct ebb__ratelimit *rl, ebb_time_ms now, uint64_t *held);

#endif
