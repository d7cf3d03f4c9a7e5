/* Money between currencies (src/base/currency.c): exact for a currency to
 * itself, through USD otherwise, rounded as asked, never overflowing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/currency.h"

static const struct ebb__currency_rate rates[] = {
    {"CNY", 1, 140000000},  /* 0.14 USD */
    {"EUR", 2, 1080000000}, /* 1.08 USD */
};
#define N_RATES (sizeof(rates) / sizeof(rates[0]))

static ebb_micros convert(ebb_micros amount, const char *from, const char *to,
                          enum ebb__rounding how)
{
    ebb_micros out = -1;
    assert_int_equal(ebb__currency_convert(amount, from, to, rates, N_RATES,
                                           how, &out), 0);
    return out;
}

static void test_through_usd(void **state)
{
    (void)state;
    assert_int_equal(convert(1000000, "CNY", "USD", EBB__ROUND_NEAREST), 140000);
    assert_int_equal(convert(140000, "USD", "CNY", EBB__ROUND_NEAREST), 1000000);
    /* 1 EUR = 1.08 / 0.14 CNY = 7.714285714... */
    assert_int_equal(convert(1000000, "EUR", "CNY", EBB__ROUND_NEAREST), 7714286);
    assert_int_equal(convert(1000000, "EUR", "CNY", EBB__ROUND_DOWN), 7714285);
    assert_int_equal(convert(1000000, "EUR", "CNY", EBB__ROUND_UP), 7714286);
}

static void test_rounding(void **state)
{
    (void)state;
    /* 3 CNY micro-units are 0.42 USD micro-units. */
    assert_int_equal(convert(3, "CNY", "USD", EBB__ROUND_NEAREST), 0);
    assert_int_equal(convert(3, "CNY", "USD", EBB__ROUND_UP), 1);
    assert_int_equal(convert(3, "CNY", "USD", EBB__ROUND_DOWN), 0);
    assert_int_equal(convert(-3, "CNY", "USD", EBB__ROUND_NEAREST), 0);
    assert_int_equal(convert(-3, "CNY", "USD", EBB__ROUND_UP), 0);
    assert_int_equal(convert(-3, "CNY", "USD", EBB__ROUND_DOWN), -1);
    /* 4 CNY micro-units are 0.56: nearest goes up, half away from zero. */
    assert_int_equal(convert(4, "CNY", "USD", EBB__ROUND_NEAREST), 1);
    assert_int_equal(convert(-4, "CNY", "USD", EBB__ROUND_NEAREST), -1);
    /* Exact results are never nudged. */
    assert_int_equal(convert(50, "CNY", "USD", EBB__ROUND_UP), 7);
    assert_int_equal(convert(50, "CNY", "USD", EBB__ROUND_DOWN), 7);
}

static void test_identity_and_missing(void **state)
{
    (void)state;
    ebb_micros out = 0;
    /* A currency converts to itself without any rate. */
    assert_int_equal(ebb__currency_convert(5, "JPY", "JPY", NULL, 0,
                                           EBB__ROUND_UP, &out), 0);
    assert_int_equal(out, 5);
    assert_int_equal(ebb__currency_convert(5, "USD", "USD", NULL, 0,
                                           EBB__ROUND_UP, &out), 0);
    assert_int_equal(out, 5);
    assert_int_equal(ebb__currency_convert(5, "JPY", "USD", rates, N_RATES,
                                           EBB__ROUND_UP, &out), EBB_ENOTFOUND);
    assert_int_equal(ebb__currency_convert(5, "USD", "JPY", rates, N_RATES,
                                           EBB__ROUND_UP, &out), EBB_ENOTFOUND);
    assert_int_equal(ebb__currency_convert(5, "CNY", "USD", NULL, 0,
                                           EBB__ROUND_UP, &out), EBB_ENOTFOUND);
}

static void test_large_amounts(void **state)
{
    (void)state;
    /* Exact through 128-bit products: no precision lost on big sums. */
    assert_int_equal(convert(INT64_MAX / 2, "EUR", "USD", EBB__ROUND_DOWN),
                     INT64_C(4980620899901578935));
    ebb_micros out = 0;
    assert_int_equal(ebb__currency_convert(INT64_MAX, "EUR", "USD", rates,
                                           N_RATES, EBB__ROUND_DOWN, &out),
                     EBB_EINVAL);
    assert_int_equal(ebb__currency_convert(INT64_MIN, "EUR", "USD", rates,
                                           N_RATES, EBB__ROUND_DOWN, &out),
                     EBB_EINVAL);
}

/* Tables print every amount of a currency with the same decimals: half
 * away from zero, padded, whatever the micro-units (#16, alignment). */
static void test_format_amount(void **state)
{
    (void)state;
    char b[64];
    assert_string_equal(ebb__format_amount(2580000, 2, "USD", b, sizeof(b)), "2.58 USD");
    assert_string_equal(ebb__format_amount(392600, 2, "USD", b, sizeof(b)), "0.39 USD");
    assert_string_equal(ebb__format_amount(1234565, 2, NULL, b, sizeof(b)), "1.23");
    assert_string_equal(ebb__format_amount(1235000, 2, NULL, b, sizeof(b)), "1.24");
    assert_string_equal(ebb__format_amount(-1235000, 2, "", b, sizeof(b)), "-1.24");
    assert_string_equal(ebb__format_amount(-4000, 2, NULL, b, sizeof(b)), "0.00");
    assert_string_equal(ebb__format_amount(10608000, 4, NULL, b, sizeof(b)), "10.6080");
    assert_string_equal(ebb__format_amount(392550, 4, "USD", b, sizeof(b)), "0.3926 USD");
    assert_string_equal(ebb__format_amount(7, 6, NULL, b, sizeof(b)), "0.000007");
    assert_string_equal(ebb__format_amount(2500000, 0, "JPY", b, sizeof(b)), "3 JPY");
    assert_string_equal(ebb__format_amount(INT64_MIN, 2, NULL, b, sizeof(b)),
                        "-9223372036854.78");
    assert_string_equal(ebb__format_amount(INT64_MAX, 6, NULL, b, sizeof(b)),
                        "9223372036854.775807");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_through_usd),
        cmocka_unit_test(test_rounding),
        cmocka_unit_test(test_identity_and_missing),
        cmocka_unit_test(test_large_amounts),
        cmocka_unit_test(test_format_amount),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
