/* Cron expressions, as Vixie cron (and cronie, Debian's cron) reads them,
 * and their fire times in any time zone. docs/cron.md is the user's guide.
 *
 *   minute hour day-of-month month day-of-week
 *   0-59   0-23 1-31         1-12  0-7 (0 and 7 are Sunday)
 *          JAN-DEC and SUN-SAT in any case
 *
 * Each field is a comma list of `*`, `n`, `a-b`, `*\/s`, `a-b/s` and
 * `n/s` (n to the field's maximum by s, as cronie, robfig/cron and
 * croniter read it; the day of week's maximum is then 6). Macros:
 * @yearly @annually @monthly @weekly @daily @midnight @hourly.
 *
 * Day of month and day of week: when both are restricted a day matches if
 * either does. As in Vixie cron, a field counts as unrestricted when it
 * starts with `*`, so `0 0 *\/2 * MON` means "odd days that are Mondays".
 *
 * Daylight-saving time, as Vixie cron's main loop does it: a "fixed-time"
 * expression (neither minute nor hour starts with `*`) whose local time is
 * skipped by a jump forward of less than 3 hours fires once at the jump;
 * one whose local time repeats in a jump back of less than 3 hours fires
 * the first time only. A "wildcard" expression (minute or hour starts with
 * `*`, such as @hourly) fires at the times that exist, each time they
 * occur: never for skipped ones, twice for repeated ones.
 */
#ifndef EBB_CRON_H
#define EBB_CRON_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>

#include "base/tz.h"

struct ebb__cron {
    uint64_t minute; /* bit m for minute m, 0-59 */
    uint32_t hour;   /* bits 0-23 */
    uint32_t dom;    /* bits 1-31 */
    uint32_t month;  /* bits 1-12 */
    uint32_t dow;    /* bits 0-6, 0 = Sunday (7 is folded into 0) */
    int dom_star, dow_star; /* unrestricted for the day rule */
    int wildcard;    /* minute or hour starts with '*' (see above) */
};

/* Flags for ebb__cron_parse(). */
enum {
    /* Count a day field as unrestricted only when it is exactly "*" (the
     * rule of robfig/cron and croniter), not when it starts with '*'. Used
     * to check our matcher against their test tables. */
    EBB__CRON_STAR_EXACT = 1u << 0,
};

/* Where and why an expression is invalid. `field` is 1-5 (minute .. day of
 * week) or 0 for the expression as a whole; the bad text is expr[at, at +
 * len). msg reads like
 *   field 2 (hour) "60": 60 is out of range 0-23
 */
struct ebb__cron_error {
    char msg[512];
    int field;
    size_t at, len;
};

/* The names of the fields, 1-based ("minute", ..., "day of week"). */
extern const char *const ebb__cron_field_names[6];

/* Parses `expr` (leading and trailing spaces allowed, fields separated by
 * spaces or tabs). Returns 0 and fills *out, or EBB_EINVAL and fills *err
 * (may be NULL). */
int ebb__cron_parse(const char *expr, unsigned flags, struct ebb__cron *out,
                    struct ebb__cron_error *err);

/* 1 when the local date and time match (month 1-12, wday 0-6 = Sun-Sat). */
int ebb__cron_matches(const struct ebb__cron *c, int month, int mday,
                      int wday, int hour, int minute);

/* The first fire time strictly after `after` (ms since the epoch) with
 * local time in zone `tz` (NULL: UTC), following the daylight-saving rules
 * above. Fire times are at second 0 of a local minute. Returns 0 and sets
 * *out, or EBB_ENOTFOUND when the expression never fires (such as
 * "0 0 30 2 *") or not before the year 10000. */
int ebb__cron_next(const struct ebb__cron *c, const struct ebb__tz *tz,
                   ebb_time_ms after, ebb_time_ms *out);

#endif
