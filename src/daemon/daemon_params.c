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

/* How one kind of param reads its string form. */
struct param_kind {
    int is_time;       /* a time (else a duration) when given as a number */
    const char *what;  /* "not a time (...)", or NULL: the parser says why */
    int (*parse)(const char *s, const void *ctx, int64_t *out, const char **why);
};

/* Reads `key` of `params` into *out as `kind` says. Returns 0 (also when
 * absent: *out is left alone) or EBB_EINVAL with d set. */
static int read_param(const json_t *params, const char *key,
                      const struct param_kind *kind, const void *ctx,
                      int64_t *out, struct ebb_diag *d)
{
    json_t *v = json_object_get(params, key);
    const char *why = NULL;
    int rc;
    if (v == NULL)
        return 0;
    if (integer(v, key, kind->is_time, out, &rc, d))
        return rc;
    if (json_is_string(v) && kind->parse(json_string_value(v), ctx, out, &why) == 0)
        return 0;
    if (kind->what != NULL)
        ebb_diag_set(d, NULL, 0, "%s: %s%s%s", key, kind->what,
                     why != NULL ? ": " : "", why != NULL ? why : "");
    else
        ebb_diag_set(d, NULL, 0, "%s: %s", key, why != NULL ? why : "not a time");
    return EBB_EINVAL;
}

static int parse_time(const char *s, const void *ctx, int64_t *out, const char **why)
{
    (void)ctx;
    return ebb_parse_time_why(s, out, why);
}

static int parse_duration(const char *s, const void *ctx, int64_t *out,
                          const char **why)
{
    (void)ctx;
    return ebb_parse_duration_why(s, out, why);
}

struct when_ctx {
    ebb_time_ms now;
    int ago;
};

static int parse_when(const char *s, const void *ctx, int64_t *out, const char **why)
{
    const struct when_ctx *w = ctx;
    return ebb__report_parse_when(s, w->now, w->ago, out, why);
}

int ebb__param_time(const json_t *params, const char *key, ebb_time_ms *out,
                    struct ebb_diag *d)
{
    static const struct param_kind kind = {
        1, "not a time (ms since the epoch or ISO-8601, e.g. 2020-01-01T00:00:00Z)",
        parse_time};
    return read_param(params, key, &kind, NULL, out, d);
}

int ebb__param_duration(const json_t *params, const char *key,
                        ebb_dur_ms *out, struct ebb_diag *d)
{
    static const struct param_kind kind = {0, "not a duration (ms or e.g. 1h)",
                                           parse_duration};
    return read_param(params, key, &kind, NULL, out, d);
}

int ebb__param_when(const json_t *params, const char *key, ebb_time_ms now,
                    int ago, ebb_time_ms *out, struct ebb_diag *d)
{
    static const struct param_kind kind = {1, NULL, parse_when};
    const struct when_ctx ctx = {now, ago};
    return read_param(params, key, &kind, &ctx, out, d);
}
