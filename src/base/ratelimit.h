/* A rate limit for repeated log lines: a burst of lines, then one more per
 * interval, and the next line that is let through says how many were held
 * back.
 *
 * Refusals that anyone on the network can cause (an agent API request with
 * a wrong token, a spent enrolment token, a connection over a cap) are
 * logged through one, so that a flood of them neither fills the disk nor
 * hides everything else, while the first few, which an operator looking
 * into one failing agent needs, are all there.
 */
#ifndef EBB_RATELIMIT_H
#define EBB_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include <ebb/common.h>

struct ebb__ratelimit {
    /* Set by the owner; zero-initialise the rest. */
    ebb_dur_ms interval; /* one line more may pass per interval */
    unsigned burst;      /* lines that may pass back to back (0: one) */
    ebb_time_ms last;    /* the start of the current interval */
    bool started;        /* a line has been let through */
    unsigned spent;      /* of the burst, not yet earned back */
    uint64_t held;       /* lines held back since the last one let through */
};

/* Whether an event at `now` (any monotonic ms, e.g. a clock's) may be
 * logged. When it may, *held says how many events were held back since the
 * last one that was, and that count starts over; when it may not, the
 * event is counted. */
bool ebb__ratelimit_allow(struct ebb__ratelimit *rl, ebb_time_ms now, uint64_t *held);

#endif
