#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/log.h"
#include "base/ratelimit.h"

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

/* One line per interval; the next one let through counts those held. */
static void rate_limited_lines(void **state)
{
    (void)state;
    struct ebb__ratelimit rl = {.interval = 10000};
    uint64_t held = 99;
    assert_true(ebb__ratelimit_allow(&rl, 5000, &held));
    assert_int_equal(held, 0);
    for (int i = 0; i < 1000; i++)
        assert_false(ebb__ratelimit_allow(&rl, 5000 + i * 9, &held));
    assert_false(ebb__ratelimit_allow(&rl, 14999, &held));
    assert_true(ebb__ratelimit_allow(&rl, 15000, &held));
    assert_int_equal(held, 1001);
    assert_true(ebb__ratelimit_allow(&rl, 40000, &held));
    assert_int_equal(held, 0);
}

/* A burst passes back to back; then one line per interval is earned back,
 * never more than the burst however long it was quiet. */
static void rate_limited_burst(void **state)
{
    (void)state;
    struct ebb__ratelimit rl = {.interval = 10000, .burst = 3};
    uint64_t held = 99;
    for (int i = 0; i < 3; i++) {
        assert_true(ebb__ratelimit_allow(&rl, 1000 + i, &held));
        assert_int_equal(held, 0);
    }
    for (int i = 0; i < 50; i++)
        assert_false(ebb__ratelimit_allow(&rl, 2000 + i, &held));
    assert_false(ebb__ratelimit_allow(&rl, 10999, &held));
    assert_true(ebb__ratelimit_allow(&rl, 11000, &held));
    assert_int_equal(held, 51);
    assert_false(ebb__ratelimit_allow(&rl, 11001, &held));
    /* A long quiet earns back the whole burst and no more. */
    for (int i = 0; i < 3; i++)
        assert_true(ebb__ratelimit_allow(&rl, 500000 + i, &held));
    assert_false(ebb__ratelimit_allow(&rl, 500003, &held));
}

/* A message with a newline from outside (a request's "file" field) stays
 * one line: what follows the newline cannot pass for a line of its own. */
static void log_lines_cannot_be_forged(void **state)
{
    (void)state;
    char out[64];
    ebb__log_escape(out, sizeof(out), "a\nb\r\x1b[31m\x7f\\x");
    assert_string_equal(out, "a\\x0ab\\x0d\\x1b[31m\\x7f\\x");
    ebb__log_escape(out, 6, "ab\ncd");
    assert_string_equal(out, "ab"); /* never half an escape */

    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), 2) >= 0);
    ebb__warn("refused job.yaml\n2026-01-01T00:00:00.000Z ERROR forged by %s", "bob");
    fflush(stderr);
    assert_true(dup2(saved, 2) >= 0);
    close(saved);
    rewind(tmp);
    char text[512];
    size_t got = fread(text, 1, sizeof(text) - 1, tmp);
    fclose(tmp);
    text[got] = '\0';
    assert_non_null(strstr(text, "refused job.yaml\\x0a2026-01-01T00:00:00.000Z ERROR forged by bob\n"));
    assert_ptr_equal(strchr(text, '\n'), text + got - 1); /* one line */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_levels),
        cmocka_unit_test(error_codes_have_messages),
        cmocka_unit_test(rate_limited_lines),
        cmocka_unit_test(rate_limited_burst),
        cmocka_unit_test(log_lines_cannot_be_forged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
