/* base/backoff.c: the one backoff every retry in ebb computes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ebb/backoff.h>

static void doubles_to_the_cap_and_resets(void **state)
{
    (void)state;
    struct ebb_backoff b;
    ebb_backoff_init(&b, 500, 3000);
    const ebb_dur_ms want[] = {500, 1000, 2000, 3000, 3000};
    for (int i = 0; i < 5; i++)
        assert_int_equal(ebb_backoff_next(&b), want[i]);
    ebb_backoff_reset(&b);
    assert_int_equal(ebb_backoff_next(&b), 500);
}

static void initial_above_the_cap_is_the_cap(void **state)
{
    (void)state;
    struct ebb_backoff b;
    ebb_backoff_init(&b, 5000, 1000);
    assert_int_equal(ebb_backoff_next(&b), 1000);
    ebb_backoff_init(&b, -5, 1000);
    assert_int_equal(ebb_backoff_next(&b), 0);
    assert_int_equal(ebb_backoff_next(&b), 0);
}

static void no_overflow_near_the_top(void **state)
{
    (void)state;
    struct ebb_backoff b;
    ebb_backoff_init(&b, INT64_MAX / 2 + 1, INT64_MAX);
    assert_int_equal(ebb_backoff_next(&b), INT64_MAX / 2 + 1);
    assert_int_equal(ebb_backoff_next(&b), INT64_MAX);
}

/* The engine's terminate retries: 10 s doubling to 5 minutes. */
static void after_n_failures(void **state)
{
    (void)state;
    const ebb_dur_ms s = 1000;
    assert_int_equal(ebb_backoff_after(10 * s, 300 * s, 0), 10 * s);
    assert_int_equal(ebb_backoff_after(10 * s, 300 * s, 1), 10 * s);
    assert_int_equal(ebb_backoff_after(10 * s, 300 * s, 2), 20 * s);
    assert_int_equal(ebb_backoff_after(10 * s, 300 * s, 5), 160 * s);
    assert_int_equal(ebb_backoff_after(10 * s, 300 * s, 6), 300 * s);
    assert_int_equal(ebb_backoff_after(10 * s, 300 * s, 1000), 300 * s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(doubles_to_the_cap_and_resets),
        cmocka_unit_test(initial_above_the_cap_is_the_cap),
        cmocka_unit_test(no_overflow_near_the_top),
        cmocka_unit_test(after_n_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
