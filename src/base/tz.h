/* Time zones: the UTC offset in effect at any instant in an IANA zone
 * ("Asia/Shanghai", "America/New_York"), read from the system's compiled
 * TZif files (RFC 8536; Debian package tzdata, /usr/share/zoneinfo) by a
 * reader of our own.
 *
 * Nothing here touches the process-wide TZ variable or calls localtime():
 * ebbd has worker threads, and each schedule has its own zone. A loaded
 * zone is immutable, so threads may share it.
 *
 * Times here are int64 seconds since the epoch (TZif's unit). Beyond the
 * last transition listed in the file, the POSIX TZ rule in the file's
 * footer ("EST5EDT,M3.2.0,M11.1.0") gives the transitions of every later
 * year; before the first, the file's first time type applies. Leap-second
 * ("right/") zones are refused.
 */
#ifndef EBB_TZ_H
#define EBB_TZ_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/diag.h>

struct ebb__tz;

/* Where zone files are read from unless $TZDIR says otherwise. */
#define EBB__TZ_DIR "/usr/share/zoneinfo"

/* Loads the zone `name` ("UTC", "Asia/Shanghai") from $TZDIR or
 * /usr/share/zoneinfo. Names are letters, digits, '/', '_', '-' and '+',
 * without "." or ".." parts. On success *out is a new zone the caller frees
 * with ebb__tz_free(). Returns EBB_ENOTFOUND for an unknown zone (d: which,
 * and an example of a valid name), EBB_EINVAL for a name that cannot be a
 * zone, EBB_ECONFIG for a file that is not a valid TZif file, EBB_EIO,
 * EBB_ENOMEM; then *out is NULL. */
int ebb__tz_load(const char *name, struct ebb__tz **out, struct ebb_diag *d);

/* Builds a zone from the TZif data in buf (len bytes); `name` (copied) is
 * its name. Returns 0, EBB_ECONFIG (d says what is wrong) or EBB_ENOMEM. */
int ebb__tz_from_tzif(const char *name, const unsigned char *buf, size_t len,
                      struct ebb__tz **out, struct ebb_diag *d);

/* Builds a zone from a POSIX TZ rule alone, as found in a TZif footer:
 * "CST-8", "<+0530>-5:30", "EST5EDT,M3.2.0,M11.1.0",
 * "<-03>3<-02>,M10.3.0/0,M2.3.0/0" (RFC 8536 3.3.1, hours up to 167 in
 * rule times). The zone's name is the rule. Returns as ebb__tz_from_tzif(). */
int ebb__tz_from_posix(const char *rule, struct ebb__tz **out,
                       struct ebb_diag *d);

/* The UTC zone (no file needed). Returns 0 or EBB_ENOMEM. */
int ebb__tz_utc(struct ebb__tz **out);

/* Frees a zone. NULL is allowed. */
void ebb__tz_free(struct ebb__tz *tz);

/* The name given when the zone was built. Borrowed. */
const char *ebb__tz_name(const struct ebb__tz *tz);

/* A stretch of time with one UTC offset: [start, end). start is INT64_MIN
 * when no transition precedes it, end INT64_MAX when none follows. Two
 * neighbouring spans may have the same offset (a change of name or of
 * isdst only). */
struct ebb__tz_span {
    int64_t start, end;
    int32_t offset; /* seconds east of UTC: local = utc + offset */
};

/* The span holding instant `t` (seconds since the epoch). */
void ebb__tz_span_at(const struct ebb__tz *tz, int64_t t,
                     struct ebb__tz_span *out);

/* The UTC offset in effect at `t`, in seconds east of UTC. */
int32_t ebb__tz_offset(const struct ebb__tz *tz, int64_t t);

/* ---- internal to src/tz*.c: POSIX TZ rules ------------------------------ */

/* A day of the year in a POSIX rule: Jn (1-365, February 29 never
 * counted), n (0-365, counted) or Mm.w.d (month, week 1-5 where 5 is the
 * last, weekday 0 = Sunday). */
struct ebb__tz_rule_day {
    char kind; /* 'J', 'n' or 'M' */
    int n, m, w, wd;
};

struct ebb__tz_rule {
    int32_t std_offset; /* seconds east of UTC */
    int has_dst;
    int32_t dst_offset;
    struct ebb__tz_rule_day start, end;
    int32_t start_time, end_time; /* local seconds after midnight */
};

/* Parses a POSIX TZ rule (see ebb__tz_from_posix()). Returns 0 or
 * EBB_EINVAL with *why a static phrase. */
int ebb__tz_rule_parse(const char *s, struct ebb__tz_rule *out,
                       const char **why);

/* The span holding `t` under rule r alone. */
void ebb__tz_rule_span(const struct ebb__tz_rule *r, int64_t t,
                       struct ebb__tz_span *out);

#endif
