/* Reading the params of API calls (daemon_api.c) that are times and
 * durations, apart from the calls so that they can be fuzzed
 * (tests/fuzz/fuzz-api.c). Each leaves *out as it was when `key` is
 * absent, and accepts only what the string readers would: times from the
 * year 0 to 9999, durations from 0 to EBB_DURATION_MAX, also when given as
 * a number of milliseconds. */
#ifndef EBB_DAEMON_PARAMS_H
#define EBB_DAEMON_PARAMS_H

#include <jansson.h>

#include <ebb/common.h>
#include <ebb/diag.h>

/* `key` in `params` (an object, borrowed) as a time: ms since the epoch
 * or an ISO-8601 string. Returns 0 or EBB_EINVAL with d naming the key
 * and what is accepted. */
int ebb__param_time(const json_t *params, const char *key, ebb_time_ms *out,
                    struct ebb_diag *d);

/* `key` as a duration: ms or a string such as "24h". Returns as
 * ebb__param_time(). */
int ebb__param_duration(const json_t *params, const char *key,
                        ebb_dur_ms *out, struct ebb_diag *d);

/* `key` as a report boundary: ms since the epoch, a date or ISO-8601 time
 * or (when `ago`) a duration back from `now` such as "30d" (see
 * ebb__report_parse_when()). Returns as ebb__param_time(). */
int ebb__param_when(const json_t *params, const char *key, ebb_time_ms now,
                    int ago, ebb_time_ms *out, struct ebb_diag *d);

#endif
