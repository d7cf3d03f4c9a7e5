/* See ratelimit.h. A token bucket: `burst` tokens, one earned back per
 * interval. */
#include "base/ratelimit.h"

bool ebb__ratelimit_allow(struct ebb__ratelimit *rl, ebb_time_ms now, uint64_t *held)
{
    unsigned burst = rl->burst > 0 ? rl->burst : 1;
    if (!rl->started) {
        rl->started = true;
        rl->last = now;
        rl->spent = 0;
    } else if (rl->interval <= 0) {
        rl->spent = 0; /* no limit */
    } else if (now - rl->last >= rl->interval) {
        int64_t earned = (now - rl->last) / rl->interval;
        rl->spent = earned >= (int64_t)rl->spent ? 0 : rl->spent - (unsigned)earned;
        rl->last += earned * rl->interval;
    }
    if (rl->spent >= burst) {
        rl->held++;
        return false;
    }
    rl->spent++;
    *held = rl->held;
    rl->held = 0;
    return true;
}
