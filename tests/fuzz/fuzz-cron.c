/* Fuzz target: cron expressions (jobs/cron_parse.c) and their fire times
 * (jobs/cron.c), in UTC and in zones with daylight-saving time.
 *
 * Invariants: a failed parse says why and where (the bad text lies inside
 * the expression); a fire time is after the start, at second 0, and in UTC
 * its date and time match the expression; in any zone the next fire after
 * a fire is later still. */
#include <ebb/units.h>

#include "base/tz.h"
#include "fuzz.h"
#include "jobs/cron.h"

/* Zones with a jump forward and back each year (New York: one hour; Lord
 * Howe: half an hour) and a zone whose rule puts DST in the southern
 * summer across the new year (Santiago). */
static const char *const rules[] = {
    "EST5EDT,M3.2.0,M11.1.0",
    "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
    "<-04>4<-03>,M9.1.6/24,M4.1.6/24",
};

/* Starting points: the epoch, a leap day, just before a US jump forward,
 * late in year 9999. */
static const ebb_time_ms starts[] = {
    0, 951782400000, 1710054000000, 253402300000000,
};

static void check_utc(const struct ebb__cron *c, ebb_time_ms after)
{
    ebb_time_ms next;
    if (ebb__cron_next(c, NULL, after, &next) != 0)
        return;
    FUZZ_CHECK(next > after);
    FUZZ_CHECK(next % 60000 == 0);
    int64_t min = next / 60000;
    int64_t day = min / 1440;
    int64_t y;
    int mo, d;
    ebb_civil_from_days(day, &y, &mo, &d);
    int wday = (int)((day % 7 + 7 + 4) % 7);
    int mod = (int)(min % 1440);
    FUZZ_CHECK(ebb__cron_matches(c, mo, d, wday, mod / 60, mod % 60));
}

static void check_zone(const struct ebb__cron *c, const struct ebb__tz *tz,
                       ebb_time_ms after)
{
    ebb_time_ms next, again;
    if (ebb__cron_next(c, tz, after, &next) != 0)
        return;
    FUZZ_CHECK(next > after);
    if (ebb__cron_next(c, tz, next, &again) == 0)
        FUZZ_CHECK(again > next);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *expr = fuzz_cstr(data, size);
    size_t len = strlen(expr);
    for (unsigned flags = 0; flags <= EBB__CRON_STAR_EXACT; flags++) {
        struct ebb__cron c;
        struct ebb__cron_error err;
        memset(&err, 0, sizeof(err));
        if (ebb__cron_parse(expr, flags, &c, &err) != 0) {
            FUZZ_CHECK(err.msg[0] != '\0');
            FUZZ_CHECK(err.field >= 0 && err.field <= 5);
            FUZZ_CHECK(err.at <= len && err.len <= len - err.at);
            continue;
        }
        for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++)
            check_utc(&c, starts[i]);
        for (size_t r = 0; r < sizeof(rules) / sizeof(rules[0]); r++) {
            struct ebb__tz *tz;
            FUZZ_CHECK(ebb__tz_from_posix(rules[r], &tz, NULL) == 0);
            check_zone(&c, tz, starts[2]);
            check_zone(&c, tz, starts[1]);
            ebb__tz_free(tz);
        }
    }
    free(expr);
    return 0;
}
