/* Fuzz target: TZif files (base/tz.c, as ebb__tz_load() reads them from
 * /usr/share/zoneinfo or $TZDIR) and POSIX TZ rules (base/tz_posix.c, the
 * footer of every TZif file). The whole input is tried as a TZif file; an
 * input without NUL bytes of at most 255 bytes is also tried as a rule.
 *
 * Invariants, at instants between the years 0 and 9999 (what schedules and
 * cron can ask for): a failure says why; the span returned holds the
 * instant and has the offset ebb__tz_offset() gives; walking from span to
 * span (as cron's search does) the next span starts where the last one
 * ended, and every offset is within RFC 8536's 26 hours. */
#include "base/tz.h"
#include "fuzz.h"

#define YEAR_0 (-62167219200LL)
#define YEAR_9999_END 253402300799LL

/* The first instant of 1900, 1970, 2000, 2038 (past 32-bit time) and
 * 2100, and the edges of the range. */
static const int64_t samples[] = {
    YEAR_0, -2208988800LL, 0, 946684800LL, 2147483648LL, 4102444800LL,
    YEAR_9999_END - 86400 * 400,
};

static void check_offset(int32_t off)
{
    FUZZ_CHECK(off >= -93599 && off <= 93599);
}

static void walk(const struct ebb__tz *tz, int64_t t)
{
    struct ebb__tz_span s;
    ebb__tz_span_at(tz, t, &s);
    FUZZ_CHECK(s.start <= t && t < s.end);
    FUZZ_CHECK(ebb__tz_offset(tz, t) == s.offset);
    check_offset(s.offset);
    for (int i = 0; i < 8 && s.end <= YEAR_9999_END; i++) {
        struct ebb__tz_span next;
        ebb__tz_span_at(tz, s.end, &next);
        FUZZ_CHECK(next.start == s.end);
        FUZZ_CHECK(next.end > next.start);
        check_offset(next.offset);
        s = next;
    }
}

static void check_zone(const struct ebb__tz *tz, const uint8_t *data,
                       size_t size)
{
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
        walk(tz, samples[i]);
    /* And an instant taken from the input's last bytes, so the fuzzer can
     * aim at its own transitions. */
    if (size >= 8) {
        uint64_t u = 0;
        for (size_t i = size - 8; i < size; i++)
            u = u << 8 | data[i];
        int64_t span = YEAR_9999_END - YEAR_0;
        walk(tz, YEAR_0 + (int64_t)(u % (uint64_t)span));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ebb__tz *tz;
    struct ebb_diag d;
    ebb_diag_clear(&d);
    if (ebb__tz_from_tzif("Fuzz/Zone", data, size, &tz, &d) == 0) {
        FUZZ_CHECK(strcmp(ebb__tz_name(tz), "Fuzz/Zone") == 0);
        check_zone(tz, data, size);
        ebb__tz_free(tz);
    } else {
        FUZZ_CHECK(tz == NULL && d.msg[0] != '\0');
    }
    if (size > 255 || memchr(data, '\0', size) != NULL)
        return 0;
    char *rule = fuzz_cstr(data, size);
    ebb_diag_clear(&d);
    if (ebb__tz_from_posix(rule, &tz, &d) == 0) {
        check_zone(tz, data, size);
        ebb__tz_free(tz);
    } else {
        FUZZ_CHECK(tz == NULL && d.msg[0] != '\0');
    }
    free(rule);
    return 0;
}
