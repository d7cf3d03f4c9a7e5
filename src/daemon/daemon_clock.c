/* ebbd's clock across restarts (#16 point 1). The built-in configuration
 * and most demos set clock.start, and each start used to put the clock
 * back there: an instance adopted after a restart then ended before it
 * started and was never billed. Now the store keeps the clock's position
 * (store/store_clock.h): a clock that is not the wall clock resumes from
 * it, one that would run backwards is refused, and every commit moves the
 * position on. Once the clock is settled, the store's billing check runs
 * and says what it finds: it only reads. */
#include "base/log.h"
#include "daemon/daemon.h"
#include "store/store_clock.h"

#include <ebb/units.h>

static ebb_time_ms clock_now(void *arg)
{
    return ebb__clock_now(arg);
}

int ebb__daemon_clock_start(struct ebb__daemon *d)
{
    struct ebb__clock_history h;
    char err[640] = "";
    int rc = ebb__store_clock_get(d->store, &h);
    if (rc != 0) {
        ebb__error("cannot read the clock's position from the store: %s",
                   ebb__store_errmsg(d->store));
        return 1;
    }
    rc = ebb__clock_resume(&d->clock, d->config->clock_start, &h, err, sizeof(err));
    if (rc < 0) {
        ebb__error("%s/ebb.db: %s", d->state_dir, err);
        return 2;
    }
    ebb_time_ms now = ebb__clock_now(&d->clock);
    d->started_at = now;
    if (rc == 1) {
        char at[40];
        ebb__info("the clock resumes at %s, where ebbd's last run got to",
                  ebb_format_time(now, at, sizeof(at)));
    }
    if (ebb__store_clock_set(d->store, d->config->clock_start, d->clock_speed, now) != 0) {
        ebb__error("cannot record the clock in the store: %s",
                   ebb__store_errmsg(d->store));
        return 1;
    }
    ebb__store_clock_follow(d->store, clock_now, &d->clock);
    if (ebb__store_check_billing(d->store, err, sizeof(err)) != 0)
        ebb__warn("store check: %s", err[0] ? err : ebb__store_errmsg(d->store));
    return 0;
}
