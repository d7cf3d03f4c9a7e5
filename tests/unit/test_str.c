/* base/str.h's growing arrays (ebb__grow): the first allocation, doubling
 * when full, nothing done while there is room, and a size that would
 * overflow refused with the array and its capacity left as they were;
 * hex digits (ebb__hex_digit) in either case, anything else -1; a
 * wiped secret (ebb__str_wipe) is freed and its pointer NULL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/str.h"

static void test_grow(void **state)
{
    (void)state;
    int *v = NULL;
    size_t cap = 0, n = 0;
    for (int i = 0; i < 100; i++) {
        int *nv = ebb__grow(v, &cap, n, sizeof(*v), 4);
        assert_non_null(nv);
        v = nv;
        v[n++] = i;
        assert_true(n <= cap);
    }
    /* 4, 8, 16, 32, 64, 128: each time full, twice as many. */
    assert_int_equal(cap, 128);
    for (int i = 0; i < 100; i++)
        assert_int_equal(v[i], i);
    /* Room left: the same array back, the capacity unchanged. */
    assert_ptr_equal(ebb__grow(v, &cap, 100, sizeof(*v), 4), v);
    assert_int_equal(cap, 128);
    /* Full, and twice the capacity's bytes would overflow size_t. */
    size_t huge = SIZE_MAX / 8 + 1;
    assert_null(ebb__grow(v, &huge, huge, 4, 4));
    assert_int_equal(huge, SIZE_MAX / 8 + 1);
    free(v);
}

static void test_hex_digit(void **state)
{
    (void)state;
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        assert_int_equal(ebb__hex_digit(digits[i]), i);
        assert_int_equal(ebb__hex_digit((char)(digits[i] >= 'a' ? digits[i] - 32
                                                               : digits[i])), i);
    }
    static const char not_hex[] = "gG/:@`xX \0";
    for (size_t i = 0; i < sizeof(not_hex); i++)
        assert_int_equal(ebb__hex_digit(not_hex[i]), -1);
    assert_int_equal(ebb__hex_digit((char)0xff), -1);
}

static void test_str_wipe(void **state)
{
    (void)state;
    char *secret = strdup("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
    assert_non_null(secret);
    ebb__str_wipe(&secret);
    assert_null(secret);
    ebb__str_wipe(&secret); /* NULL: nothing to do */
    assert_null(secret);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_hex_digit),
        cmocka_unit_test(test_str_wipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
