#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/log.h"

static void parse_levels(void **state)
{
    (void)state;
    enum ebb_log_level level;
    assert_int_equal(ebb__log_parse_level("debug", &level), 0);
    assert_int_equal(level, EBB_LOG_DEBUG);
    assert_int_equal(ebb__log_parse_level("error", &level), 0);
    assert_int_equal(level, EBB_LOG_ERROR);
    assert_int_equal(ebb__log_parse_level("loud", &level), EBB_EINVAL);
    assert_string_equal(ebb__log_level_name(EBB_LOG_WARN), "warn");
}

static void error_codes_have_messages(void **state)
{
    (void)state;
    assert_int_equal(EBB_ENOMEM, -1);
    assert_string_equal(ebb_strerror(0), "success");
    assert_string_equal(ebb_strerror(EBB_ETIMEDOUT), "timed out");
    assert_string_equal(ebb_strerror(-9999), "unknown error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_levels),
        cmocka_unit_test(error_codes_have_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
