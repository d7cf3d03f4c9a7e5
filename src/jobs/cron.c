/* Fire times of cron expressions in a time zone (see cron.h).
 *
 * The search runs on local wall-clock minutes ("local minute" L: minutes
 * since 1970-01-01 00:00 local time) and maps them to instants one span of
 * constant UTC offset at a time (tz.h). Inside a span local time runs
 * straight, so the first matching local minute in the span is its first
 * fire. Between two spans the clock jumps: forward (a gap of local times
 * that never happen) or back (local times that happen twice); what a
 * schedule does then is Vixie cron's rule, explained in cron.h. Vixie cron
 * treats a jump of 3 hours or more as the clock being set, not as
 * daylight-saving time, and neither catches up nor holds back then; so do
 * we.
 */
#include <ebb/units.h>

#include "jobs/cron.h"

#define DST_LIMIT (3 * 3600) /* seconds */
#define MIN_PER_DAY 1440
/* The Gregorian calendar repeats every 400 years (146097 days): what does
 * not match within that never will. */
#define CYCLE_DAYS 146097

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return -floor_div(-a, b);
}

static int day_matches(const struct ebb__cron *c, int mday, int wday)
{
    int dom = (c->dom >> mday) & 1;
    int dow = (c->dow >> wday) & 1;
    if (c->dom_star || c->dow_star)
        return dom && dow;
    return dom || dow;
}

int ebb__cron_matches(const struct ebb__cron *c, int month, int mday,
                      int wday, int hour, int minute)
{
    return ((c->month >> month) & 1) && day_matches(c, mday, wday) &&
           ((c->hour >> hour) & 1) && ((c->minute >> minute) & 1);
}

/* The first matching local minute >= L whose day is before `end_day`, or
 * INT64_MAX. Skips whole months and days that cannot match. */
static int64_t next_local(const struct ebb__cron *c, int64_t L, int64_t end_day)
{
    int64_t day = floor_div(L, MIN_PER_DAY);
    int mod = (int)(L - day * MIN_PER_DAY);
    int h = mod / 60, m = mod % 60;
    while (day < end_day) {
        int64_t y;
        int mo, d;
        ebb_civil_from_days(day, &y, &mo, &d);
        if (!((c->month >> mo) & 1)) {
            day = mo == 12 ? ebb_days_from_civil(y + 1, 1, 1)
                           : ebb_days_from_civil(y, mo + 1, 1);
            h = m = 0;
            continue;
        }
        int wday = (int)(((day % 7) + 7 + 4) % 7); /* 1970-01-01: Thursday */
        if (day_matches(c, d, wday)) {
            for (; h < 24; h++, m = 0) {
                if (!((c->hour >> h) & 1))
                    continue;
                uint64_t later = c->minute >> m;
                if (later != 0)
                    return day * MIN_PER_DAY + h * 60 + m +
                           __builtin_ctzll(later);
            }
        }
        day++;
        h = m = 0;
    }
    return INT64_MAX;
}

static void span_at(const struct ebb__tz *tz, int64_t t, struct ebb__tz_span *s)
{
    if (tz == NULL)
        *s = (struct ebb__tz_span){INT64_MIN, INT64_MAX, 0};
    else
        ebb__tz_span_at(tz, t, s);
}

int ebb__cron_next(const struct ebb__cron *c, const struct ebb__tz *tz,
                   ebb_time_ms after, ebb_time_ms *out)
{
    int64_t after_s = floor_div(after, 1000);
    struct ebb__tz_span span;
    span_at(tz, after_s, &span);
    int32_t prev_offset = span.offset;
    if (span.start != INT64_MIN) {
        struct ebb__tz_span before;
        span_at(tz, span.start - 1, &before);
        prev_offset = before.offset;
    }
    int64_t end_day = floor_div(after_s, 86400) + CYCLE_DAYS + 2;
    int64_t year_10000 = ebb_days_from_civil(10000, 1, 1);
    if (end_day > year_10000)
        end_day = year_10000;
    int64_t lo = floor_div(after_s + span.offset, 60) + 1;
    for (;;) {
        int32_t o = span.offset;
        if (span.start != INT64_MIN) {
            int64_t seg_lo = ceil_div(span.start + o, 60);
            /* Local times repeated after a jump back: a fixed-time
             * expression already fired at their first occurrence. */
            int64_t back = (int64_t)prev_offset - o;
            if (!c->wildcard && back > 0 && back < DST_LIMIT)
                seg_lo = ceil_div(span.start + prev_offset, 60);
            if (seg_lo > lo)
                lo = seg_lo;
        }
        int64_t L = next_local(c, lo, end_day);
        if (L == INT64_MAX)
            return EBB_ENOTFOUND;
        int64_t fire = L * 60 - o;
        if (fire < span.end) {
            *out = fire * 1000;
            return 0;
        }
        /* The next span starts at T, after `after`. */
        int64_t T = span.end;
        if (floor_div(T, 86400) >= end_day)
            return EBB_ENOTFOUND;
        struct ebb__tz_span next;
        span_at(tz, T, &next);
        int64_t gap = (int64_t)next.offset - o;
        if (!c->wildcard && gap > 0 && gap < DST_LIMIT) {
            /* Local times skipped by a jump forward: a fixed-time
             * expression that matches any of them fires at the jump. */
            int64_t skipped = next_local(c, ceil_div(T + o, 60), end_day);
            if (skipped < ceil_div(T + next.offset, 60)) {
                *out = T * 1000;
                return 0;
            }
        }
        prev_offset = o;
        span = next;
        lo = INT64_MIN;
    }
}
