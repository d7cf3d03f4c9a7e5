/* The reason texts the policies format by hand (policy_util.c) against
 * snprintf, which they replace for speed: the same bytes for every value.
 * The shared policy code is compiled into this test as into each module. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>

#include "common/policy_util.h"

/* pu_dur_text() as it was written with snprintf. */
static void dur_reference(double ms, char buf[PU_DUR_TEXT])
{
    if (isnan(ms) || isinf(ms)) {
        snprintf(buf, PU_DUR_TEXT, "%s", ms < 0 ? "-unlimited" : "unlimited");
        return;
    }
    const char *sign = ms < 0 ? "-" : "";
    double a = fabs(ms) / 1000.0;
    if (a >= 1e15) {
        snprintf(buf, PU_DUR_TEXT, "%sunlimited", sign);
        return;
    }
    long long s = (long long)a;
    long long h = s / 3600, m = s / 60 % 60, sec = s % 60;
    if (h > 0 && m > 0)
        snprintf(buf, PU_DUR_TEXT, "%s%lldh%02lldm", sign, h, m);
    else if (h > 0)
        snprintf(buf, PU_DUR_TEXT, "%s%lldh", sign, h);
    else if (m > 0 && sec > 0)
        snprintf(buf, PU_DUR_TEXT, "%s%lldm%02llds", sign, m, sec);
    else if (m > 0)
        snprintf(buf, PU_DUR_TEXT, "%s%lldm", sign, m);
    else
        snprintf(buf, PU_DUR_TEXT, "%s%llds", sign, sec);
}

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

static void durations_as_snprintf(void **state)
{
    (void)state;
    const double fixed[] = {0, -0.0, 999, 1000, 59999, 60000, 61000,
                            3600000, 3660000, -300000, 1e18, -1e18,
                            INFINITY, -INFINITY, NAN, 999999999999999999.0};
    char got[PU_DUR_TEXT], want[PU_DUR_TEXT];
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        pu_dur_text(fixed[i], got);
        dur_reference(fixed[i], want);
        assert_string_equal(got, want);
    }
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 200000; i++) {
        double ms = (double)(next(&x) % 400000000000ULL) / (double)(1 + i % 7);
        if (i % 3 == 0)
            ms = -ms;
        pu_dur_text(ms, got);
        dur_reference(ms, want);
        assert_string_equal(got, want);
    }
}

/* Money: pu_money_text() is "%.2f" of micros / 1e6, now through
 * pu_fixed2 where its rounding is certain. Half cents and their
 * neighbours are where the two could part. */
static void money_as_snprintf(void **state)
{
    (void)state;
    char got[PU_MONEY_TEXT], want[PU_MONEY_TEXT];
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 400000; i++) {
        double micros;
        switch (i % 4) {
        case 0: /* whole micros near a half cent */
            micros = (double)(next(&x) % 100000000) * 10000 + 5000 +
                     (double)((int)(next(&x) % 5) - 2);
            break;
        case 1: /* fractional micros, as expected costs are */
            micros = (double)(next(&x) % 1000000000000ULL) / 7.0;
            break;
        case 2: /* small and negative amounts */
            micros = ((double)(next(&x) % 20001) - 10000.0) / 3.0;
            break;
        default: /* large ones, past where pu_fixed2 gives up */
            micros = (double)(next(&x) % 4000000000000000000ULL);
            break;
        }
        pu_money_text(micros, got);
        snprintf(want, sizeof(want), "%.2f", micros / 1e6);
        assert_string_equal(got, want);
    }
    pu_money_text(-0.0, got);
    assert_string_equal(got, "-0.00");
    pu_money_text(INFINITY, got);
    assert_string_equal(got, "inf");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(durations_as_snprintf),
        cmocka_unit_test(money_as_snprintf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
