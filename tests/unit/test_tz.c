/* Time zones: our TZif reader and POSIX rules against glibc's localtime_r
 * (which reads the same files and rules; used here, in a single-threaded
 * test, as the oracle), the boundaries of spans, and every way a zone
 * name or file can be wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <ebb/units.h>

#include "base/tz.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static int32_t glibc_offset(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    assert_non_null(localtime_r(&tt, &tm));
    return (int32_t)tm.tm_gmtoff;
}

static void use_glibc_zone(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
}

/* Compares offsets at many instants from `year` to 2200 and checks that
 * each span agrees with glibc at both of its ends. */
static void compare_with_glibc(const struct ebb__tz *tz, const char *what,
                               int year)
{
    int64_t from = ebb_days_from_civil(year, 1, 1) * 86400;
    int64_t to = ebb_days_from_civil(2200, 1, 1) * 86400;
    /* A step that is not a whole number of hours or days, so that the
     * samples fall at all times of day. */
    for (int64_t t = from; t < to; t += 86400 * 3 + 3671) {
        struct ebb__tz_span s;
        ebb__tz_span_at(tz, t, &s);
        int32_t want = glibc_offset(t);
        if (s.offset != want || t < s.start || t >= s.end)
            fail_msg("%s at %lld: offset %d, glibc %d (span %lld..%lld)", what,
                     (long long)t, s.offset, want, (long long)s.start,
                     (long long)s.end);
        if (s.start > from && glibc_offset(s.start) != s.offset)
            fail_msg("%s: span starting %lld: glibc has %d there, not %d",
                     what, (long long)s.start, glibc_offset(s.start),
                     s.offset);
        if (s.end < to && glibc_offset(s.end - 1) != s.offset)
            fail_msg("%s: span ending %lld: glibc has %d before, not %d", what,
                     (long long)s.end, glibc_offset(s.end - 1), s.offset);
    }
}

static void zones_match_glibc(void **state)
{
    (void)state;
    static const char *const zones[] = {
        "UTC", "Asia/Shanghai", "America/New_York", "America/Los_Angeles",
        "Europe/London", "Europe/Berlin", "Europe/Dublin", /* negative DST */
        "Australia/Sydney", "Australia/Lord_Howe", /* 30-minute DST */
        "Pacific/Chatham", "Pacific/Apia", /* skipped a whole day in 2011 */
        "America/Sao_Paulo", "America/Santiago", "Asia/Kolkata",
        "Asia/Tehran", "Africa/Casablanca", "Antarctica/Troll",
        "America/St_Johns", "Asia/Kathmandu", "Pacific/Kiritimati",
        "America/Godthab", "Asia/Gaza",
    };
    for (size_t i = 0; i < ARRAY_LEN(zones); i++) {
        struct ebb__tz *tz;
        struct ebb_diag d = {{0}};
        if (ebb__tz_load(zones[i], &tz, &d) != 0)
            fail_msg("%s", d.msg);
        assert_string_equal(ebb__tz_name(tz), zones[i]);
        char env[64];
        snprintf(env, sizeof(env), ":%s", zones[i]);
        use_glibc_zone(env);
        compare_with_glibc(tz, zones[i], 1900);
        ebb__tz_free(tz);
    }
    unsetenv("TZ");
}

/* Rules alone, as they appear in TZif footers. glibc reads TZ rules the
 * same way, extensions of RFC 8536 included, but applies them from 1970 on
 * only, and not to the hours of 1970 that are still 1969 in local time;
 * a footer only ever applies after a zone's table, so we compare from
 * 1971. */
static void posix_rules_match_glibc(void **state)
{
    (void)state;
    static const char *const rules[] = {
        "CST-8",
        "<+0530>-5:30",
        "EST5EDT,M3.2.0,M11.1.0",
        "CET-1CEST,M3.5.0,M10.5.0/3",
        "<-03>3<-02>,M10.3.0/0,M2.3.0/0",   /* southern hemisphere */
        "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", /* half-hour DST */
        "IST-1GMT0,M10.5.0,M3.5.0/1",       /* Dublin: negative DST */
        "<-02>2<-01>,M3.5.0/-1,M10.5.0/0",  /* negative rule time */
        "XXX3YYY,J60/2,300/4",              /* Julian and 0-based days */
        "<+13>-13<+14>,M9.5.0/3,M4.1.0/4",
        "AAA-2BBB,M3.5.4/26,M10.5.5/1",     /* hours past 24 */
        "WGT3WGST,M3.5.0/-2,M10.5.0/-1",
    };
    for (size_t i = 0; i < ARRAY_LEN(rules); i++) {
        struct ebb__tz *tz;
        struct ebb_diag d = {{0}};
        if (ebb__tz_from_posix(rules[i], &tz, &d) != 0)
            fail_msg("%s", d.msg);
        use_glibc_zone(rules[i]);
        compare_with_glibc(tz, rules[i], 1971);
        ebb__tz_free(tz);
    }
    unsetenv("TZ");
}

/* Without a rule, the United States' current one (glibc would read it from
 * its posixrules file instead, so it is no oracle here). */
static void posix_default_rule(void **state)
{
    (void)state;
    struct ebb__tz *a, *b;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__tz_from_posix("EST5EDT", &a, &d), 0);
    assert_int_equal(ebb__tz_from_posix("EST5EDT,M3.2.0,M11.1.0", &b, &d), 0);
    for (int64_t t = 0; t < INT64_C(4102444800); t += 86400 + 1234) {
        struct ebb__tz_span x, y;
        ebb__tz_span_at(a, t, &x);
        ebb__tz_span_at(b, t, &y);
        assert_true(x.start == y.start && x.end == y.end &&
                    x.offset == y.offset);
    }
    assert_int_equal(ebb__tz_offset(a, 1783162800), -4 * 3600); /* 2026-07 */
    ebb__tz_free(a);
    ebb__tz_free(b);
}

/* RFC 8536 3.3.1: starting January 1 00:00 and ending December 31 24:00
 * plus the DST offset means daylight time all year (glibc gets the hours
 * around New Year wrong, so it is no oracle here). */
static void posix_all_year_dst(void **state)
{
    (void)state;
    struct ebb__tz *tz;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__tz_from_posix("EST5EDT,0/0,J365/25", &tz, &d), 0);
    for (int64_t t = 0; t < INT64_C(4102444800); t += 3600 * 7 + 13)
        assert_int_equal(ebb__tz_offset(tz, t), -4 * 3600);
    ebb__tz_free(tz);
}

static void posix_rules_rejected(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",          "8",           "ES5",          "EST",
        "EST25",     "EST5EDT,M3",  "EST5EDT,M13.1.0,M11.1.0",
        "EST5EDT,M3.6.0,M11.1.0",   "EST5EDT,M3.2.7,M11.1.0",
        "EST5EDT,J0,J365",          "EST5EDT,366,1",
        "EST5EDT,M3.2.0/168,M11.1.0", "EST5EDT,M3.2.0",
        "<+05>-5 junk", "<+5>-5",   "EST5:60",
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        struct ebb__tz *tz = (struct ebb__tz *)1;
        struct ebb_diag d = {{0}};
        if (ebb__tz_from_posix(bad[i], &tz, &d) != EBB_ECONFIG)
            fail_msg("accepted \"%s\"", bad[i]);
        assert_null(tz);
        assert_non_null(strstr(d.msg, "is not a POSIX TZ rule"));
    }
}

static void known_offsets(void **state)
{
    (void)state;
    struct ebb__tz *tz;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__tz_load("America/New_York", &tz, &d), 0);
    ebb_time_ms t;
    /* 2040-03-11 07:00Z, the second Sunday of March, from the footer. */
    assert_int_equal(ebb_parse_time("2040-03-11T06:59:59Z", &t), 0);
    assert_int_equal(ebb__tz_offset(tz, t / 1000), -5 * 3600);
    assert_int_equal(ebb__tz_offset(tz, t / 1000 + 1), -4 * 3600);
    struct ebb__tz_span s;
    ebb__tz_span_at(tz, t / 1000 + 1, &s);
    assert_int_equal(s.start, t / 1000 + 1);
    assert_int_equal(ebb_parse_time("2040-11-04T06:00:00Z", &t), 0);
    assert_int_equal(s.end, t / 1000);
    ebb__tz_free(tz);
    assert_int_equal(ebb__tz_load("Asia/Shanghai", &tz, &d), 0);
    assert_int_equal(ebb_parse_time("2026-06-01T00:00:00Z", &t), 0);
    assert_int_equal(ebb__tz_offset(tz, t / 1000), 8 * 3600);
    ebb__tz_span_at(tz, t / 1000, &s);
    assert_true(s.end == INT64_MAX);
    ebb__tz_free(tz);
    assert_int_equal(ebb__tz_utc(&tz), 0);
    ebb__tz_span_at(tz, 0, &s);
    assert_true(s.start == INT64_MIN && s.end == INT64_MAX && s.offset == 0);
    ebb__tz_free(tz);
}

static void bad_names(void **state)
{
    (void)state;
    static const char *const names[] = {
        "", "/etc/localtime", "../../etc/passwd", "America/../../etc/passwd",
        "America//New_York", ".hidden", "America/", "Asia/Shang hai",
        "Asia/Shanghai\n",
    };
    for (size_t i = 0; i < ARRAY_LEN(names); i++) {
        struct ebb__tz *tz = (struct ebb__tz *)1;
        struct ebb_diag d = {{0}};
        assert_int_equal(ebb__tz_load(names[i], &tz, &d), EBB_EINVAL);
        assert_null(tz);
        assert_non_null(strstr(d.msg, "is not a time zone name"));
    }
    struct ebb__tz *tz;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__tz_load("Asia/Shangai", &tz, &d), EBB_ENOTFOUND);
    assert_null(tz);
    assert_non_null(strstr(d.msg, "unknown time zone \"Asia/Shangai\""));
    assert_non_null(strstr(d.msg, "tzdata"));
}

/* ---- files made here ---------------------------------------------------- */

static void put32(unsigned char **p, uint32_t v)
{
    (*p)[0] = (unsigned char)(v >> 24);
    (*p)[1] = (unsigned char)(v >> 16);
    (*p)[2] = (unsigned char)(v >> 8);
    (*p)[3] = (unsigned char)v;
    *p += 4;
}

static void put_header(unsigned char **p, char version, uint32_t timecnt,
                       uint32_t typecnt, uint32_t leapcnt)
{
    memcpy(*p, "TZif", 4);
    (*p)[4] = (unsigned char)version;
    memset(*p + 5, 0, 15);
    *p += 20;
    put32(p, 0);       /* isutcnt */
    put32(p, 0);       /* isstdcnt */
    put32(p, leapcnt);
    put32(p, timecnt);
    put32(p, typecnt);
    put32(p, 4);       /* charcnt: "AAA\0" */
}

/* A zone with offsets +1h until t1, +2h from t1, -3h from t2 (v2: then the
 * footer). */
static size_t make_tzif(unsigned char *buf, char version, const char *footer,
                        uint32_t leapcnt, int64_t t1, int64_t t2)
{
    unsigned char *p = buf;
    int64_t times[2] = {t1, t2};
    int32_t offs[3] = {3600, 7200, -10800};
    /* v1 block, 32-bit times */
    put_header(&p, version, 2, 3, leapcnt);
    for (int i = 0; i < 2; i++)
        put32(&p, (uint32_t)(int32_t)times[i]);
    *p++ = 1;
    *p++ = 2;
    for (int i = 0; i < 3; i++) {
        put32(&p, (uint32_t)offs[i]);
        *p++ = 0;
        *p++ = 0;
    }
    memcpy(p, "AAA", 4);
    p += 4;
    for (uint32_t i = 0; i < leapcnt; i++) {
        put32(&p, 0);
        put32(&p, 1);
    }
    if (version == 0)
        return (size_t)(p - buf);
    put_header(&p, version, 2, 3, leapcnt);
    for (int i = 0; i < 2; i++) {
        put32(&p, (uint32_t)((uint64_t)times[i] >> 32));
        put32(&p, (uint32_t)times[i]);
    }
    *p++ = 1;
    *p++ = 2;
    for (int i = 0; i < 3; i++) {
        put32(&p, (uint32_t)offs[i]);
        *p++ = 0;
        *p++ = 0;
    }
    memcpy(p, "AAA", 4);
    p += 4;
    for (uint32_t i = 0; i < leapcnt; i++) {
        put32(&p, 0);
        put32(&p, 0);
        put32(&p, 1);
    }
    size_t n = strlen(footer);
    memcpy(p, footer, n);
    return (size_t)(p - buf) + n;
}

static void tzif_versions(void **state)
{
    (void)state;
    unsigned char buf[1024];
    struct ebb__tz *tz;
    struct ebb_diag d = {{0}};
    /* Version 1: the 32-bit block only; the last offset stays. */
    size_t n = make_tzif(buf, 0, "", 0, 1000, 2000);
    assert_int_equal(ebb__tz_from_tzif("v1", buf, n, &tz, &d), 0);
    assert_int_equal(ebb__tz_offset(tz, 999), 3600);
    assert_int_equal(ebb__tz_offset(tz, 1000), 7200);
    assert_int_equal(ebb__tz_offset(tz, 2000), -10800);
    assert_int_equal(ebb__tz_offset(tz, INT64_C(1) << 40), -10800);
    ebb__tz_free(tz);
    /* Version 2 with 64-bit times beyond 2038 and a footer rule after. */
    int64_t late = INT64_C(5000000000); /* 2128 */
    n = make_tzif(buf, '2', "\n<-03>3<-02>,M10.3.0/0,M2.3.0/0\n", 0, 1000,
                  late);
    assert_int_equal(ebb__tz_from_tzif("v2", buf, n, &tz, &d), 0);
    assert_int_equal(ebb__tz_offset(tz, late - 1), 7200);
    struct ebb__tz_span s;
    ebb__tz_span_at(tz, late + 1, &s);
    assert_true(s.start == late); /* not before the table's last change */
    assert_int_equal(s.offset, ebb__tz_offset(tz, late + 1));
    /* Some time later the footer's rule gives both offsets. */
    int seen_std = 0, seen_dst = 0;
    for (int64_t t = late + 86400 * 400; t < late + 86400 * 800; t += 86400) {
        int32_t o = ebb__tz_offset(tz, t);
        seen_std |= o == -3 * 3600;
        seen_dst |= o == -2 * 3600;
    }
    assert_true(seen_std && seen_dst);
    ebb__tz_free(tz);
    /* Version 3, empty footer: the last offset stays. */
    n = make_tzif(buf, '3', "\n\n", 0, 1000, 2000);
    assert_int_equal(ebb__tz_from_tzif("v3", buf, n, &tz, &d), 0);
    assert_int_equal(ebb__tz_offset(tz, INT64_C(1) << 40), -10800);
    ebb__tz_free(tz);
}

static void tzif_rejected(void **state)
{
    (void)state;
    unsigned char buf[1024];
    struct ebb__tz *tz;
    static const struct {
        const char *what;
        char version;
        const char *footer;
        uint32_t leap;
        int64_t t1, t2;
        size_t cut; /* bytes removed from the end */
        size_t poke_at;
        unsigned char poke; /* 0: none */
        const char *msg;
    } cases[] = {
        {"leap seconds", '2', "\n\n", 1, 1000, 2000, 0, 0, 0, "leap seconds"},
        {"out of order", '2', "\n\n", 0, 2000, 1000, 0, 0, 0, "out of order"},
        {"truncated", '2', "\n\n", 0, 1000, 2000, 20, 0, 0, "truncated"},
        {"no footer", '2', "", 0, 1000, 2000, 0, 0, 0, "no footer"},
        {"bad footer", '2', "\nnot a rule\n", 0, 1000, 2000, 0, 0, 0,
         "footer is not a POSIX TZ rule"},
        {"unterminated footer", '2', "\nCST-8", 0, 1000, 2000, 0, 0, 0,
         "unterminated footer"},
        {"bad magic", '2', "\n\n", 0, 1000, 2000, 0, 0, 'X', "bad header"},
        {"missing type", '2', "\n\n", 0, 1000, 2000, 0, 1, 9,
         "missing type"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        size_t n = make_tzif(buf, cases[i].version, cases[i].footer,
                             cases[i].leap, cases[i].t1, cases[i].t2);
        n -= cases[i].cut;
        if (cases[i].poke != 0 && cases[i].poke_at == 0)
            buf[0] = cases[i].poke;
        if (cases[i].poke_at == 1) {
            /* the first type index of the 64-bit block */
            size_t v1 = 44 + 2 * 4 + 2 + 3 * 6 + 4;
            buf[v1 + 44 + 2 * 8] = cases[i].poke;
        }
        struct ebb_diag d = {{0}};
        tz = (struct ebb__tz *)1;
        assert_int_equal(ebb__tz_from_tzif("Bad/Zone", buf, n, &tz, &d),
                         EBB_ECONFIG);
        assert_null(tz);
        if (strstr(d.msg, cases[i].msg) == NULL ||
            strstr(d.msg, "Bad/Zone") == NULL)
            fail_msg("%s: %s", cases[i].what, d.msg);
    }
}

/* $TZDIR chooses the directory; a file that is not TZif, or a directory,
 * gives a clear error. */
static void tzdir(void **state)
{
    (void)state;
    char dir[] = "/tmp/ebb-tz-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    unsigned char buf[1024];
    size_t n = make_tzif(buf, '2', "\nCST-8\n", 0, 1000, 2000);
    snprintf(path, sizeof(path), "%s/Test", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    snprintf(path, sizeof(path), "%s/Text", dir);
    f = fopen(path, "wb");
    assert_non_null(f);
    fputs("not a zone\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/Dir", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    setenv("TZDIR", dir, 1);
    struct ebb__tz *tz;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__tz_load("Test", &tz, &d), 0);
    assert_int_equal(ebb__tz_offset(tz, 5000), 8 * 3600);
    ebb__tz_free(tz);
    assert_int_equal(ebb__tz_load("Text", &tz, &d), EBB_ECONFIG);
    assert_non_null(strstr(d.msg, "time zone Text: not a valid TZif file"));
    assert_int_equal(ebb__tz_load("Dir", &tz, &d), EBB_EIO);
    assert_non_null(strstr(d.msg, "cannot read"));
    assert_int_equal(ebb__tz_load("America/New_York", &tz, &d), EBB_ENOTFOUND);
    assert_non_null(strstr(d.msg, dir));
    unsetenv("TZDIR");
    assert_int_equal(rmdir(path), 0);
    snprintf(path, sizeof(path), "%s/Test", dir);
    assert_int_equal(unlink(path), 0);
    snprintf(path, sizeof(path), "%s/Text", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zones_match_glibc),
        cmocka_unit_test(posix_rules_match_glibc),
        cmocka_unit_test(posix_default_rule),
        cmocka_unit_test(posix_all_year_dst),
        cmocka_unit_test(posix_rules_rejected),
        cmocka_unit_test(known_offsets),
        cmocka_unit_test(bad_names),
        cmocka_unit_test(tzif_versions),
        cmocka_unit_test(tzif_rejected),
        cmocka_unit_test(tzdir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
