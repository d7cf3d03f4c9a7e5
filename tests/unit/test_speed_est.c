/* The learned-speed estimator (src/market/speed_est.c): it falls back to
 * the catalog's speed without data, converges to a host's real speed,
 * resists an outlier, and reads back what it writes for the store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "market/speed_est.h"

static void test_no_data_is_the_catalog(void **state)
{
    (void)state;
    struct ebb__speed_samples s = {0};
    assert_true(ebb__speed_estimate(&s, 1.7) == 1.7);
    assert_true(ebb__speed_estimate(NULL, 0.5) == 0.5);
}

static void test_shrunk_toward_the_catalog_then_converges(void **state)
{
    (void)state;
    /* The catalog says 1.0; the host really does 0.4 (a throttled PCIe
     * link). One rate: (3 * 1.0 + 0.4) / 4 = 0.85. */
    struct ebb__speed_samples s = {0};
    assert_int_equal(ebb__speed_add(&s, 0.4), 1);
    assert_true(fabs(ebb__speed_estimate(&s, 1.0) - 0.85) < 1e-12);
    double before = ebb__speed_estimate(&s, 1.0);
    for (int i = 0; i < 300; i++)
        assert_int_equal(ebb__speed_add(&s, 0.4), 1);
    double after = ebb__speed_estimate(&s, 1.0);
    assert_true(after < before);
    /* 301 rates against a prior of 3: (3 + 301 * 0.4) / 304, within 2%
     * of the real speed. */
    assert_true(fabs(after - 0.4) < 0.02 * 0.4);
    assert_int_equal(s.total, 301);
    assert_int_equal(s.n_kept, EBB__SPEED_WINDOW);
}

static void test_one_outlier_is_resisted(void **state)
{
    (void)state;
    struct ebb__speed_samples s = {0};
    for (int i = 0; i < 10; i++)
        ebb__speed_add(&s, 0.5);
    double steady = ebb__speed_estimate(&s, 1.0);
    /* A progress line that jumps (a fraction rounded late) gives a rate
     * 20 times the real one: the median does not move. */
    ebb__speed_add(&s, 10.0);
    double with_outlier = ebb__speed_estimate(&s, 1.0);
    double median_part = (with_outlier * (EBB__SPEED_PRIOR + 11) - EBB__SPEED_PRIOR) / 11;
    assert_true(fabs(median_part - 0.5) < 1e-9);
    /* Only the count moved, toward the measured speed. */
    assert_true(with_outlier <= steady);
    /* A mean would have been pulled to about 1.4. */
    assert_true(with_outlier < 0.65);
}

static void test_not_speeds_are_not_counted(void **state)
{
    (void)state;
    struct ebb__speed_samples s = {0};
    assert_int_equal(ebb__speed_add(&s, 0), 0);
    assert_int_equal(ebb__speed_add(&s, -0.3), 0);
    assert_int_equal(ebb__speed_add(&s, NAN), 0);
    assert_int_equal(ebb__speed_add(&s, INFINITY), 0);
    assert_int_equal(ebb__speed_add(&s, EBB__SPEED_MAX * 2), 0);
    assert_int_equal(s.total, 0);
    assert_true(ebb__speed_estimate(&s, 2.0) == 2.0);
}

static void test_text_round_trip(void **state)
{
    (void)state;
    struct ebb__speed_samples s = {0}, back;
    for (int i = 0; i < EBB__SPEED_WINDOW + 5; i++)
        ebb__speed_add(&s, 0.1 + 0.01 * i); /* wraps the ring */
    char text[EBB__SPEED_TEXT_SIZE];
    ebb__speed_format(&s, text, sizeof(text));
    assert_int_equal(ebb__speed_parse(text, s.total, &back), 0);
    assert_int_equal(back.total, s.total);
    assert_int_equal(back.n_kept, EBB__SPEED_WINDOW);
    assert_true(ebb__speed_estimate(&back, 1.0) == ebb__speed_estimate(&s, 1.0));
    /* The oldest kept rate is the one that goes next in both. */
    ebb__speed_add(&s, 0.9);
    ebb__speed_add(&back, 0.9);
    assert_true(ebb__speed_estimate(&back, 1.0) == ebb__speed_estimate(&s, 1.0));
    assert_int_equal(ebb__speed_parse("", 0, &back), 0);
    assert_int_equal(back.n_kept, 0);
}

static void test_bad_text_is_refused(void **state)
{
    (void)state;
    struct ebb__speed_samples s;
    assert_int_equal(ebb__speed_parse("0.5 x", 2, &s), -1);
    assert_int_equal(ebb__speed_parse("0.5 -1", 2, &s), -1);
    assert_int_equal(ebb__speed_parse("0.5,0.6", 2, &s), -1);
    assert_int_equal(ebb__speed_parse("0.5 0.6", 1, &s), -1); /* total < listed */
    char many[EBB__SPEED_TEXT_SIZE * 2];
    size_t at = 0;
    for (int i = 0; i <= EBB__SPEED_WINDOW; i++)
        at += (size_t)snprintf(many + at, sizeof(many) - at, "%s", i ? " 0.5" : "0.5");
    assert_int_equal(ebb__speed_parse(many, 100, &s), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_data_is_the_catalog),
        cmocka_unit_test(test_shrunk_toward_the_catalog_then_converges),
        cmocka_unit_test(test_one_outlier_is_resisted),
        cmocka_unit_test(test_not_speeds_are_not_counted),
        cmocka_unit_test(test_text_round_trip),
        cmocka_unit_test(test_bad_text_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
