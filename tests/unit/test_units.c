/* Durations, money and timestamps: tables of good and bad inputs, the
 * reasons given for the bad ones, and round trips through the formatters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ebb/units.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- durations ---------------------------------------------------------- */

static const struct {
    const char *text;
    ebb_dur_ms ms;
} good_durations[] = {
    {"90s", 90000},
    {"5m", 300000},
    {"8h", 8 * 3600000},
    {"2d", 2 * 86400000LL},
    {"1h30m", 5400000},
    {"1.5h", 5400000},
    {"250ms", 250},
    {"0s", 0},
    {"1s500ms", 1500},
    {"1d2h3m4s5ms", 86400000LL + 2 * 3600000 + 3 * 60000 + 4000 + 5},
    {"0.25s", 250},
    {"0.0000003125d", 27},
    {"1.50000000000h", 5400000},
    {"007m", 420000},
    {"36525d", 36525LL * 86400000LL},
};

static const struct {
    const char *text;
    const char *why; /* NULL: no specific reason */
} bad_durations[] = {
    {"8", "no unit; use d, h, m, s or ms"},
    {"-5m", "negative"},
    {"5 parsecs", "unknown unit; use d, h, m, s or ms"},
    {"5 m", "no space allowed before the unit"},
    {"", "empty"},
    {"5x", "unknown unit; use d, h, m, s or ms"},
    {"30m1h", "units must go from largest to smallest, each once, as in "
              "1h30m"},
    {"1h1h", "units must go from largest to smallest, each once, as in "
             "1h30m"},
    {"0.5ms", "finer than a millisecond"},
    {"1.h", "expected digits after '.'"},
    {"h", NULL},
    {".5h", NULL},
    {"+5m", NULL},
    {"5m ", NULL},
    {"1.0000000001s", "finer than a millisecond"},
    {"0.00000000003125d", "finer than a millisecond"},
    {"1.000000000000000000000000000000000001h", "finer than a millisecond"},
    {"106751991168d", "too large"},
    {"106751991167d", "longer than 100 years (36525d)"},
    {"36525d1ms", "longer than 100 years (36525d)"},
    {"9223372036854775807ms", "longer than 100 years (36525d)"},
    {"9223372036854775808ms", "too large"},
    {"106751991167d1d", "units must go from largest to smallest, each once, "
                        "as in 1h30m"},
    {"106751991167d23h", "too large"},
    {"5M", "unknown unit; use d, h, m, s or ms"},
};

static void durations_good(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(good_durations); i++) {
        ebb_dur_ms v = -1;
        const char *why = "unset";
        int rc = ebb_parse_duration_why(good_durations[i].text, &v, &why);
        if (rc != 0)
            fail_msg("%s: %s", good_durations[i].text, why);
        assert_int_equal(v, good_durations[i].ms);
        assert_null(why);
        assert_int_equal(ebb_parse_duration(good_durations[i].text, &v), 0);
    }
}

static void durations_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(bad_durations); i++) {
        ebb_dur_ms v = 12345;
        const char *why = "unset";
        int rc = ebb_parse_duration_why(bad_durations[i].text, &v, &why);
        if (rc != EBB_EINVAL)
            fail_msg("%s parsed as %lld", bad_durations[i].text,
                     (long long)v);
        assert_int_equal(v, 12345);
        if (bad_durations[i].why == NULL)
            assert_null(why);
        else
            assert_string_equal(why, bad_durations[i].why);
    }
    ebb_dur_ms v;
    assert_int_equal(ebb_parse_duration(NULL, &v), EBB_EINVAL);
}

static void durations_format(void **state)
{
    (void)state;
    static const struct {
        ebb_dur_ms ms;
        const char *text;
    } cases[] = {
        {5400000, "1h30m"},
        {45000, "45s"},
        {2 * 86400000LL + 3 * 3600000, "2d3h"},
        {0, "0s"},
        {250, "250ms"},
        {1500, "1s500ms"},
        {-300000, "-5m"},
        {INT64_MAX, "106751991167d7h12m55s807ms"},
        {INT64_MIN, "-106751991167d7h12m55s808ms"},
    };
    char buf[EBB_DURATION_BUFSZ];
    for (size_t i = 0; i < ARRAY_LEN(cases); i++)
        assert_string_equal(ebb_format_duration(cases[i].ms, buf, sizeof(buf)),
                            cases[i].text);
    /* Truncation, never overflow. */
    char small[4];
    assert_string_equal(ebb_format_duration(5400000, small, sizeof(small)),
                        "1h3");
}

static void durations_round_trip(void **state)
{
    (void)state;
    static const ebb_dur_ms values[] = {
        0, 1, 999, 1000, 59999, 60000, 3599999, 3600000, 86399999,
        86400000, 90061001, 123456789012, EBB_DURATION_MAX};
    char buf[EBB_DURATION_BUFSZ];
    for (size_t i = 0; i < ARRAY_LEN(values); i++) {
        ebb_dur_ms back = -1;
        ebb_format_duration(values[i], buf, sizeof(buf));
        assert_int_equal(ebb_parse_duration(buf, &back), 0);
        assert_int_equal(back, values[i]);
    }
    /* A cheap pseudo-random sweep over many magnitudes. */
    uint64_t x = 88172645463325252u;
    for (int i = 0; i < 2000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ebb_dur_ms v = (ebb_dur_ms)(x >> (1 + i % 60));
        ebb_dur_ms back = -1;
        ebb_format_duration(v, buf, sizeof(buf));
        if (v > EBB_DURATION_MAX) { /* formatted, but refused when read */
            assert_int_equal(ebb_parse_duration(buf, &back), EBB_EINVAL);
            continue;
        }
        assert_int_equal(ebb_parse_duration(buf, &back), 0);
        assert_int_equal(back, v);
    }
}

/* ---- money -------------------------------------------------------------- */

static const struct {
    const char *text;
    ebb_micros amount;
    const char *currency;
} good_money[] = {
    {"40 USD", 40000000, "USD"},
    {"40.5 USD", 40500000, "USD"},
    {"0.000001 USD", 1, "USD"},
    {"1200 CNY", 1200000000, "CNY"},
    {"0 EUR", 0, "EUR"},
    {"0.918 USD", 918000, "USD"},
    {"1000000000 USD", EBB_MONEY_MAX, "USD"},
    {"00012.50 JPY", 12500000, "JPY"},
};

static const struct {
    const char *text;
    const char *why;
} bad_money[] = {
    {"forty", NULL},
    {"40", "no currency; add a code such as USD"},
    {"40 dollars", "the currency must be a 3-letter upper-case code such as "
                   "USD"},
    {"40 usd", "the currency must be a 3-letter upper-case code such as "
               "USD"},
    {"40 US", "the currency must be a 3-letter upper-case code such as USD"},
    {"-5 USD", "negative"},
    {"", "empty"},
    {"40USD", "put a space between the number and the currency"},
    {"40  USD", "the currency must be a 3-letter upper-case code such as "
                "USD"},
    {"0.0000001 USD", "more than 6 decimals"},
    {"40. USD", "expected digits after '.'"},
    {".5 USD", NULL},
    {"+5 USD", NULL},
    {"1e3 USD", NULL},
    {"1000000000.000001 USD", "more than 1000000000, the largest amount ebb "
                              "takes"},
    {"1000000001 USD", "more than 1000000000, the largest amount ebb takes"},
    {"9223372036854.775807 USD", "more than 1000000000, the largest amount "
                                 "ebb takes"},
    {"9223372036855 USD", "too large"},
    {"9223372036854.775808 USD", "too large"},
    {"99999999999999999999999 USD", "too large"},
    {"40 USD ", "the currency must be a 3-letter upper-case code such as "
                "USD"},
    {"$40", NULL},
};

static void money_good(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(good_money); i++) {
        struct ebb_money m;
        const char *why = "unset";
        int rc = ebb_parse_money_why(good_money[i].text, &m, &why);
        if (rc != 0)
            fail_msg("%s: %s", good_money[i].text, why);
        assert_int_equal(m.amount, good_money[i].amount);
        assert_string_equal(m.currency, good_money[i].currency);
        assert_int_equal(ebb_parse_money(good_money[i].text, &m), 0);
    }
}

static void money_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(bad_money); i++) {
        struct ebb_money m = {777, "XXX"};
        const char *why = "unset";
        int rc = ebb_parse_money_why(bad_money[i].text, &m, &why);
        if (rc != EBB_EINVAL)
            fail_msg("%s parsed", bad_money[i].text);
        assert_int_equal(m.amount, 777);
        if (bad_money[i].why == NULL)
            assert_null(why);
        else
            assert_string_equal(why, bad_money[i].why);
    }
}

static void money_format(void **state)
{
    (void)state;
    static const struct {
        ebb_micros amount;
        const char *currency;
        const char *text;
    } cases[] = {
        {40500000, "USD", "40.50 USD"},
        {40000000, "USD", "40.00 USD"},
        {918000, "USD", "0.918 USD"},
        {1, "USD", "0.000001 USD"},
        {1200000000, "CNY", "1200.00 CNY"},
        {-3000000, "USD", "-3.00 USD"},
        {123456, NULL, "0.123456"},
        {10000, "", "0.01"},
        {INT64_MAX, "USD", "9223372036854.775807 USD"},
        {INT64_MIN, "USD", "-9223372036854.775808 USD"},
    };
    char buf[EBB_MONEY_BUFSZ];
    for (size_t i = 0; i < ARRAY_LEN(cases); i++)
        assert_string_equal(ebb_format_money(cases[i].amount,
                                              cases[i].currency, buf,
                                              sizeof(buf)),
                            cases[i].text);
}

static void money_round_trip(void **state)
{
    (void)state;
    char buf[EBB_MONEY_BUFSZ];
    uint64_t x = 2463534242u;
    for (int i = 0; i < 2000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ebb_micros v = (ebb_micros)(x >> (1 + i % 60));
        struct ebb_money m;
        ebb_format_money(v, "EUR", buf, sizeof(buf));
        if (v > EBB_MONEY_MAX) { /* formatted, but refused when read */
            assert_int_equal(ebb_parse_money(buf, &m), EBB_EINVAL);
            continue;
        }
        assert_int_equal(ebb_parse_money(buf, &m), 0);
        assert_int_equal(m.amount, v);
        assert_string_equal(m.currency, "EUR");
    }
}

/* ---- times -------------------------------------------------------------- */

static const struct {
    const char *text;
    ebb_time_ms ms;
} good_times[] = {
    {"1970-01-01T00:00:00Z", 0},
    {"1970-01-01", 0},
    {"2026-11-30T12:00:00Z", 1796040000000LL},
    {"2026-11-30", 1795996800000LL},
    {"2026-11-30T12:00:00.5Z", 1796040000500LL},
    {"2026-11-30T12:00:00.123456789Z", 1796040000123LL},
    {"2026-11-30T20:00:00+08:00", 1796040000000LL},
    {"2026-11-30T06:30:00-05:30", 1796040000000LL},
    {"2026-11-30t12:00:00z", 1796040000000LL},
    {"2026-11-30 12:00:00Z", 1796040000000LL},
    {"2024-02-29T00:00:00Z", 1709164800000LL},
    {"2000-02-29", 951782400000LL},
    {"1969-12-31T23:59:59.999Z", -1},
    {"0000-01-01", -62167219200000LL},
    {"9999-12-31T23:59:59Z", 253402300799000LL},
    {"0000-01-01T00:59:00+00:59", -62167219200000LL},
    {"9999-12-31T23:59:59.999+00:00", 253402300799999LL},
};

static const struct {
    const char *text;
    const char *why;
} bad_times[] = {
    {"2026-11-30T12:00:00", "no time zone; add Z for UTC or an offset such "
                            "as +08:00"},
    {"2026-13-01", "month out of range"},
    {"2026-00-01", "month out of range"},
    {"2026-02-29", "day out of range"},
    {"1900-02-29", "day out of range"},
    {"2026-04-31", "day out of range"},
    {"2026-11-30T24:00:00Z", "time of day out of range"},
    {"2026-11-30T12:60:00Z", "time of day out of range"},
    {"2026-11-30T12:00:60Z", "time of day out of range"},
    {"2026-11-30T12:00:00+24:00", "offset out of range"},
    {"2026-11-30T12:00:00+0800", "expected an offset such as +08:00"},
    {"2026-11-30T12:00:00.Z", "expected digits after '.'"},
    {"2026-11-30T12:00Z", "expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"},
    {"26-11-30", "expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"},
    {"2026/11/30", "expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"},
    {"2026-11-30X", "expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"},
    {"2026-11-30T12:00:00Zjunk", "expected YYYY-MM-DD or "
                                 "YYYY-MM-DDTHH:MM:SSZ"},
    {"", "empty"},
    {"tomorrow", "expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"},
    {"0000-01-01T00:00:00+00:01", "outside the years 0000 to 9999"},
    {"9999-12-31T23:59:59-00:01", "outside the years 0000 to 9999"},
};

static void times_good(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(good_times); i++) {
        ebb_time_ms t = 42;
        const char *why = "unset";
        int rc = ebb_parse_time_why(good_times[i].text, &t, &why);
        if (rc != 0)
            fail_msg("%s: %s", good_times[i].text, why);
        if (t != good_times[i].ms)
            fail_msg("%s: got %lld", good_times[i].text, (long long)t);
        assert_int_equal(ebb_parse_time(good_times[i].text, &t), 0);
    }
}

static void times_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(bad_times); i++) {
        ebb_time_ms t = 42;
        const char *why = "unset";
        int rc = ebb_parse_time_why(bad_times[i].text, &t, &why);
        if (rc != EBB_EINVAL)
            fail_msg("%s parsed", bad_times[i].text);
        assert_int_equal(t, 42);
        assert_string_equal(why, bad_times[i].why);
    }
}

static void times_ignore_tz(void **state)
{
    (void)state;
    /* The parser must not consult the local zone. */
    setenv("TZ", "Asia/Shanghai", 1);
    ebb_time_ms t;
    assert_int_equal(ebb_parse_time("2026-11-30", &t), 0);
    assert_int_equal(t, 1795996800000LL);
    unsetenv("TZ");
}

static void times_format(void **state)
{
    (void)state;
    char buf[EBB_TIME_BUFSZ];
    assert_string_equal(ebb_format_time(1796040000000LL, buf, sizeof(buf)),
                        "2026-11-30T12:00:00Z");
    /* Whole seconds, always: one form for every time shown (#16). */
    assert_string_equal(ebb_format_time(1796040000250LL, buf, sizeof(buf)),
                        "2026-11-30T12:00:00Z");
    assert_string_equal(ebb_format_time(1796040000999LL, buf, sizeof(buf)),
                        "2026-11-30T12:00:00Z");
    assert_string_equal(ebb_format_time(0, buf, sizeof(buf)),
                        "1970-01-01T00:00:00Z");
    assert_string_equal(ebb_format_time(-1, buf, sizeof(buf)),
                        "1969-12-31T23:59:59Z");
    assert_string_equal(ebb_format_time(951782400000LL, buf, sizeof(buf)),
                        "2000-02-29T00:00:00Z");
    /* The exact form adds milliseconds only when there are any. */
    assert_string_equal(ebb_format_time_exact(1796040000250LL, buf, sizeof(buf)),
                        "2026-11-30T12:00:00.250Z");
    assert_string_equal(ebb_format_time_exact(1796040000000LL, buf, sizeof(buf)),
                        "2026-11-30T12:00:00Z");
    assert_string_equal(ebb_format_time_exact(-1, buf, sizeof(buf)),
                        "1969-12-31T23:59:59.999Z");
}

static void times_round_trip(void **state)
{
    (void)state;
    char buf[EBB_TIME_BUFSZ];
    uint64_t x = 1234567u;
    const ebb_time_ms max = 253402300799999LL; /* 9999-12-31T23:59:59.999 */
    const ebb_time_ms min = -62167219200000LL; /* 0000-01-01 */
    for (int i = 0; i < 5000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ebb_time_ms t = min + (ebb_time_ms)(x % (uint64_t)(max - min + 1));
        /* Formatting keeps the whole seconds: the time back is t rounded
         * down to its second. */
        ebb_time_ms want = t - ((t % 1000) + 1000) % 1000;
        ebb_time_ms back = 0;
        ebb_format_time(t, buf, sizeof(buf));
        if (ebb_parse_time(buf, &back) != 0 || back != want)
            fail_msg("%lld -> %s -> %lld", (long long)t, buf,
                     (long long)back);
        /* The exact form gives t itself back. */
        ebb_format_time_exact(t, buf, sizeof(buf));
        if (ebb_parse_time(buf, &back) != 0 || back != t)
            fail_msg("exact: %lld -> %s -> %lld", (long long)t, buf,
                     (long long)back);
    }
    /* Every day of a few leap and non-leap years maps back to itself. */
    for (int64_t days = ebb_days_from_civil(1899, 1, 1);
         days < ebb_days_from_civil(2101, 1, 1); days++) {
        int64_t y;
        int m, d;
        ebb_civil_from_days(days, &y, &m, &d);
        assert_int_equal(ebb_days_from_civil(y, m, d), days);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(durations_good),
        cmocka_unit_test(durations_bad),
        cmocka_unit_test(durations_format),
        cmocka_unit_test(durations_round_trip),
        cmocka_unit_test(money_good),
        cmocka_unit_test(money_bad),
        cmocka_unit_test(money_format),
        cmocka_unit_test(money_round_trip),
        cmocka_unit_test(times_good),
        cmocka_unit_test(times_bad),
        cmocka_unit_test(times_ignore_tz),
        cmocka_unit_test(times_format),
        cmocka_unit_test(times_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
