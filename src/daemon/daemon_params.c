/* Time and duration params of API calls (see daemon_params.h). */
#include "daemon/daemon_params.h"

#include <ebb/units.h>

#include "report/report.h"

/* What ebb_parse_time() reads: 0000-01-01T00:00:00Z to the last
 * millisecond of 9999. A number outside it would carry times that no
 * string can give into the planner's and the report's arithmetic. */
static int time_ok(json_int_t t)
{
    return t >= ebb_days_from_civil(0, 1, 1) * EBB_MS_PER_DAY &&
           t < ebb_days_from_civil(10000, 1, 1) * EBB_MS_PER_DAY;
}

/* Reads an integer `key` into *out when it is in range. Returns 1 when
 * `key` is an integer (0 done, EBB_EINVAL in *rc with d set otherwise), 0
 * when it is something else. */
static int integer(const json_t *v, const char *key, int is_time,
                   int64_t *out, int *rc, struct ebb_diag *d)
{
    if (!json_is_integer(v))
        return 0;
    json_int_t n = json_integer_value(v);
    int ok = is_time ? time_ok(n) : n >= 0 && n <= EBB_DURATION_MAX;
    *rc = ok ? 0 : EBB_EINVAL;
    if (ok)
        *out = n;
    else if (is_time)
        ebb_diag_set(d, NULL, 0, "%s: %lld ms is outside the years 0000 to "
                     "9999", key, (long long)n);
    else
        ebb_diag_set(d, NULL, 0, "%s: %lld ms is not a duration from 0 to "
                     "100 years (36525d)", key, (long long)n);
    return 1;
}

int ebb__param_time(const json_t *params, const char *key, ebb_time_ms *out,
                    struct ebb_diag *d)
{
    json_t *v = json_object_get(params, key);
    const char *why = NULL;
    int rc;
    if (v == NULL)
        return 0;
    if (integer(v, key, 1, out, &rc, d))
        return rc;
    if (json_is_string(v) &&
        ebb_parse_time_why(json_string_value(v), out, &why) == 0)
        return 0;
    ebb_diag_set(d, NULL, 0, "%s: not a time (ms since the epoch or "
                 "ISO-8601, e.g. 2020-01-01T00:00:00Z)%s%s", key,
                 why != NULL ? ": " : "", why != NULL ? why : "");
    return EBB_EINVAL;
}

int ebb__param_duration(const json_t *params, const char *key,
                        ebb_dur_ms *out, struct ebb_diag *d)
{
    json_t *v = json_object_get(params, key);
    const char *why = NULL;
    int rc;
    if (v == NULL)
        return 0;
    if (integer(v, key, 0, out, &rc, d))
        return rc;
    if (json_is_string(v) &&
        ebb_parse_duration_why(json_string_value(v), out, &why) == 0)
        return 0;
    ebb_diag_set(d, NULL, 0, "%s: not a duration (ms or e.g. 1h)%s%s", key,
                 why != NULL ? ": " : "", why != NULL ? why : "");
    return EBB_EINVAL;
}

int ebb__param_when(const json_t *params, const char *key, ebb_time_ms now,
                    int ago, ebb_time_ms *out, struct ebb_diag *d)
{
    json_t *v = json_object_get(params, key);
    const char *why = NULL;
    int rc;
    if (v == NULL)
        return 0;
    if (integer(v, key, 1, out, &rc, d))
        return rc;
    if (json_is_string(v) &&
        ebb__report_parse_when(json_string_value(v), now, ago, out, &why) == 0)
        return 0;
    ebb_diag_set(d, NULL, 0, "%s: %s", key, why != NULL ? why : "not a time");
    return EBB_EINVAL;
}
