/* Parsing and formatting of durations, money and timestamps as users write
 * them in ebb.yaml, job specs and on the command line.
 *
 * The parsers are strict: the whole string must match, nothing is guessed
 * (no default unit, no default currency, no local time zone). Each parser
 * returns 0 or EBB_EINVAL; the `_why` variants also say what is wrong in a
 * short phrase (a static string, or NULL when "not a duration" is all there
 * is to say) for messages such as
 *   ebb.yaml:7: poll_interval: "8" is not a duration (no unit; example: 90s)
 * The formatters write what the parsers read back (round trip).
 */
#ifndef EBB_UNITS_H
#define EBB_UNITS_H

#include <stddef.h>

#include "common.h"

/* Buffer sizes that fit any formatted value. */
#define EBB_DURATION_BUFSZ 48
#define EBB_MONEY_BUFSZ 48
#define EBB_TIME_BUFSZ 48

/* Parses a duration: one or more <number><unit> parts, largest unit first,
 * each unit at most once, no spaces: "90s", "5m", "8h", "2d", "1h30m",
 * "250ms", "1.5h". Units: d, h, m, s, ms. A fraction must come to a whole
 * number of milliseconds. Rejects "8" (no unit), "-5m", "5 parsecs" and
 * anything longer than EBB_DURATION_MAX (100 years), so that a time plus
 * any parsed duration stays far inside int64 milliseconds. On success
 * stores into *out. */
#define EBB_DURATION_MAX ((ebb_dur_ms)36525 * 86400000)
int ebb_parse_duration(const char *s, ebb_dur_ms *out);
int ebb_parse_duration_why(const char *s, ebb_dur_ms *out, const char **why);

/* Formats `d` as parts from days down to milliseconds, zero parts omitted:
 * "1h30m", "45s", "2d3h", "1s250ms", "0s"; negative values get a leading
 * "-". Truncates like snprintf if `size` is too small. Returns buf. */
const char *ebb_format_duration(ebb_dur_ms d, char *buf, size_t size);

/* Parses an amount: digits, optionally '.' and 1 to 6 more digits, one
 * space, and a 3-letter upper-case currency code: "40 USD", "40.5 USD",
 * "0.000001 USD", "1200 CNY". Exact (integer arithmetic, no double).
 * Rejects "forty", "40", "40 dollars", "-5 USD", more than 6 decimals and
 * anything more than EBB_MONEY_MAX (a billion units of the currency), so
 * that over nine thousand parsed amounts add up without leaving int64
 * micro-units. */
#define EBB_MONEY_MAX ((ebb_micros)1000000000 * 1000000)
int ebb_parse_money(const char *s, struct ebb_money *out);
int ebb_parse_money_why(const char *s, struct ebb_money *out,
                         const char **why);

/* Formats micro-units with at least 2 decimals and more only when needed
 * ("40.50 USD", "0.918 USD", "0.000001 USD", "-3.00 USD"), followed by a
 * space and `currency` unless currency is NULL or "". Returns buf. */
const char *ebb_format_money(ebb_micros amount, const char *currency,
                              char *buf, size_t size);

/* Parses RFC 3339 / ISO 8601: "2026-11-30T12:00:00Z",
 * "2026-11-30T12:00:00.250Z", "2026-11-30T20:00:00+08:00", or a date alone,
 * "2026-11-30", meaning midnight UTC. 't', 'z' and a space instead of 'T'
 * are accepted. A date-time must say its offset; the TZ environment
 * variable is never consulted. Fractions finer than a millisecond are
 * truncated. Years 0000-9999. */
int ebb_parse_time(const char *s, ebb_time_ms *out);
int ebb_parse_time_why(const char *s, ebb_time_ms *out, const char **why);

/* Formats as UTC "2026-11-30T12:00:00Z": whole seconds (the time rounded
 * down to its second), one form for every time ebb shows. Returns buf. */
const char *ebb_format_time(ebb_time_ms t, char *buf, size_t size);
/* The same with the milliseconds when there are any
 * ("2026-11-30T12:00:00.250Z"), for what is read back by a program (a
 * spec's JSON, a checkpoint manifest): ebb_parse_time() returns exactly
 * `t`. Returns buf. */
const char *ebb_format_time_exact(ebb_time_ms t, char *buf, size_t size);

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1-12), and
 * back. Exposed for the cron and report code. */
int64_t ebb_days_from_civil(int64_t y, int m, int d);
void ebb_civil_from_days(int64_t days, int64_t *y, int *m, int *d);

#endif
