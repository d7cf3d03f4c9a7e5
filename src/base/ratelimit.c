/* See ratelimit.h. */
#include "base/ratelimit.h"

bool ebb__ratelimit_allow(struct ebb__ratelimit *rl, ebb_time_ms now, uint64_t *held)
{
    if (rl->started && now - rl->last < rl->interval) {
        rl->held++;
        return false;
    }
    *held = rl->held;
    rl->held = 0;
    rl->last = now;
    rl->started = true;
    return true;
}
