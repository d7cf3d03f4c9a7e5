/* Fuzz target: the unix-socket API (docs/api.md). Each input is one
 * request line as ebbd's server reads it (io/api_request.c, called by
 * api_server.c's dispatch), and the params of the calls that take times
 * and durations go through the daemon's readers (daemon/daemon_params.c)
 * as forecast, prices and report read them, then through the forecast's
 * step count.
 *
 * Invariants: a refused line says why and still has a method ("") and
 * params ({}) to answer with; an accepted one, written back as JSON and
 * read again, gives the same id, method and params; a time accepted is one
 * the ISO-8601 reader could give (years 0 to 9999) and a duration one
 * from 0 to EBB_DURATION_MAX; a step count n has n * step <= horizon. */
#include <jansson.h>

#include <ebb/units.h>

#include "daemon/daemon_params.h"
#include "fuzz.h"
#include "io/api_request.h"
#include "report/forecast_report.h"

#define YEAR_0_MS (-62167219200000LL)
#define YEAR_10000_MS 253402300800000LL

/* 2026-12-01T00:00:00Z, the daemon's "now" here. */
#define NOW 1796083200000LL

static void check_time(ebb_time_ms t)
{
    FUZZ_CHECK(t >= YEAR_0_MS && t < YEAR_10000_MS);
}

static void check_duration(ebb_dur_ms d)
{
    FUZZ_CHECK(d >= 0 && d <= EBB_DURATION_MAX);
}

static void check_params(const json_t *params)
{
    struct ebb_diag d;
    ebb_time_ms at = NOW;
    ebb_dur_ms horizon = 24 * EBB_MS_PER_HOUR, step = EBB_MS_PER_HOUR;
    ebb_diag_clear(&d);
    if (ebb__param_time(params, "at", &at, &d) == 0)
        check_time(at);
    else
        FUZZ_CHECK(d.msg[0] != '\0');
    int ok = 1;
    const char *const durations[] = {"horizon", "step"};
    ebb_dur_ms *dur_out[] = {&horizon, &step};
    for (size_t i = 0; i < 2; i++) {
        ebb_diag_clear(&d);
        if (ebb__param_duration(params, durations[i], dur_out[i], &d) == 0) {
            check_duration(*dur_out[i]);
        } else {
            FUZZ_CHECK(d.msg[0] != '\0');
            ok = 0;
        }
    }
    size_t n;
    const char *why;
    if (ok && ebb__forecast_count_steps(horizon, step, &n, &why) == 0)
        FUZZ_CHECK(n >= 1 && (ebb_dur_ms)n <= horizon / step);
    const char *const whens[] = {"since", "until"};
    for (int ago = 0; ago <= 1; ago++) {
        ebb_time_ms t = NOW;
        ebb_diag_clear(&d);
        if (ebb__param_when(params, whens[ago], NOW, ago, &t, &d) == 0)
            check_time(t);
        else
            FUZZ_CHECK(d.msg[0] != '\0');
    }
}

/* Written back as the CLI would send it and read again: the same call. */
static void check_round_trip(const struct ebb__api_request *r)
{
    json_t *o = json_pack("{s:s,s:O}", "method", r->method, "params",
                          r->params);
    FUZZ_CHECK(o != NULL);
    if (r->id != NULL)
        FUZZ_CHECK(json_object_set(o, "id", r->id) == 0);
    char *line = json_dumps(o, JSON_COMPACT);
    FUZZ_CHECK(line != NULL && strchr(line, '\n') == NULL);
    struct ebb__api_request again;
    struct ebb_diag d;
    FUZZ_CHECK(ebb__api_request_parse(line, strlen(line), &again, &d) == 0);
    FUZZ_CHECK(strcmp(again.method, r->method) == 0);
    FUZZ_CHECK(json_equal(again.params, r->params));
    FUZZ_CHECK(r->id == NULL ? again.id == NULL : json_equal(again.id, r->id));
    ebb__api_request_free(&again);
    free(line);
    json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ebb__api_request r;
    struct ebb_diag d;
    ebb_diag_clear(&d);
    int rc = ebb__api_request_parse((const char *)data, size, &r, &d);
    FUZZ_CHECK(rc == 0 || rc == EBB_EINVAL);
    FUZZ_CHECK(r.method != NULL && json_is_object(r.params));
    if (rc != 0) {
        FUZZ_CHECK(d.msg[0] != '\0' && r.method[0] == '\0');
    } else {
        check_round_trip(&r);
        check_params(r.params);
    }
    ebb__api_request_free(&r);
    return 0;
}
