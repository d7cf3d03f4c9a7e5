/* Fuzz target: schedule files (jobs/schedule.c), as ebbd reads the YAML
 * that `ebb schedule add` sends and re-reads it from its store, and the
 * decision of what to start (jobs/schedule_due.c) for what was read.
 *
 * Invariants: a failure says why and leaves the schedule zeroed; the
 * schedule's job survives the store's JSON round trip; a decision starts
 * a fire time in (since, now], released no earlier than it and due a
 * window after release, moves `since` only forward and not past now, and
 * asks again only after now. */
#include <jansson.h>

#include "fuzz.h"
#include "jobs/schedule.h"

static int zeroed(const struct ebb__schedule *s)
{
    static const struct ebb__schedule zero;
    return memcmp(s, &zero, sizeof(zero)) == 0;
}

static void check_job(const struct ebb__job_spec *spec)
{
    json_t *j = ebb__jobspec_to_json(spec);
    FUZZ_CHECK(j != NULL);
    struct ebb__job_spec again;
    struct ebb_diag d;
    FUZZ_CHECK(ebb__jobspec_from_json(j, &again, &d) == 0);
    json_t *j2 = ebb__jobspec_to_json(&again);
    FUZZ_CHECK(j2 != NULL && json_equal(j, j2));
    json_decref(j2);
    json_decref(j);
    ebb__jobspec_free(&again);
}

static void check_due(const struct ebb__schedule *s, ebb_time_ms since,
                      ebb_time_ms now, int running)
{
    struct ebb__schedule_state st = {since, running};
    struct ebb__schedule_decision dec;
    ebb__schedule_due(s, &st, now, &dec);
    FUZZ_CHECK(dec.last_fire >= since && dec.last_fire <= now);
    if (dec.start) {
        FUZZ_CHECK(!running);
        FUZZ_CHECK(dec.fire > since && dec.fire <= now);
        FUZZ_CHECK(dec.release >= dec.fire && dec.release <= now);
        FUZZ_CHECK(dec.deadline == dec.release + s->window);
        FUZZ_CHECK(dec.deadline > dec.release);
    }
    if (dec.skip != EBB__SKIP_NONE)
        FUZZ_CHECK(running && dec.skipped_fire > since);
    if (dec.has_missed)
        FUZZ_CHECK(dec.missed_first > since &&
                   dec.missed_first <= dec.missed_last &&
                   dec.missed_last <= now);
    if (dec.has_next)
        FUZZ_CHECK(dec.next_fire > now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ebb__schedule s;
    struct ebb_diag d;
    ebb_diag_clear(&d);
    if (ebb__schedule_load_buffer("nightly.yaml", (const char *)data, size, &s,
                                  &d) != 0) {
        FUZZ_CHECK(d.msg[0] != '\0' && zeroed(&s));
        return 0;
    }
    FUZZ_CHECK(s.window > 0 && s.tz != NULL);
    check_job(&s.job);
    /* 2026-12-01T00:00Z: on time, a minute late, after a day, a year and
     * a century of downtime. */
    const ebb_time_ms t0 = 1796083200000;
    const ebb_dur_ms later[] = {0, 60000, 61000, 86400000, 31536000000,
                                3155760000000};
    for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++) {
        check_due(&s, t0, t0 + later[i], 0);
        check_due(&s, t0, t0 + later[i], 1);
    }
    ebb__schedule_free(&s);
    FUZZ_CHECK(zeroed(&s));
    return 0;
}
