/* RFC 3986 percent-encoding (src/base/urlenc.c), as both cloud signatures use
 * it: unreserved characters stay, everything else is %XX in upper case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <ebb/urlenc.h>

static char *encode(const char *s, size_t len, int keep_slash)
{
    struct ebb_buf b = {0};
    ebb_pct_encode(&b, s, len, keep_slash);
    char *out = ebb_buf_take(&b);
    assert_non_null(out);
    return out;
}

static void check_encode(const char *in, int keep_slash, const char *want)
{
    char *got = encode(in, strlen(in), keep_slash);
    assert_string_equal(got, want);
    free(got);
}

static void test_encode(void **state)
{
    (void)state;
    check_encode("", 0, "");
    check_encode("-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 0,
                 "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
    check_encode("a b+c=d&e", 0, "a%20b%2Bc%3Dd%26e");
    check_encode("Linux/UNIX", 0, "Linux%2FUNIX");
    check_encode("/example space/", 1, "/example%20space/");
    check_encode("2015-01-25T08:00:00Z", 0, "2015-01-25T08%3A00%3A00Z");
    check_encode("\xe1\x88\xb4", 0, "%E1%88%B4"); /* UTF-8, upper-case hex */
    check_encode("$*'()!", 0, "%24%2A%27%28%29%21");
    /* Length, not the NUL, ends the input. */
    char *got = encode("a\0b", 3, 0);
    assert_string_equal(got, "a%00b");
    free(got);
}

static void check_decode(const char *in, int plus, const char *want)
{
    char *got = ebb_pct_decode(in, strlen(in), plus);
    if (want == NULL) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_decode(void **state)
{
    (void)state;
    check_decode("", 0, "");
    check_decode("a%20b", 0, "a b");
    check_decode("%e1%88%B4", 0, "\xe1\x88\xb4"); /* either case */
    check_decode("a+b", 0, "a+b");
    check_decode("a+b", 1, "a b");
    check_decode("%2B", 1, "+");
    /* Malformed escapes are refused, never guessed at. */
    check_decode("%", 0, NULL);
    check_decode("%4", 0, NULL);
    check_decode("abc%", 0, NULL);
    check_decode("%zz", 0, NULL);
    check_decode("%4g", 0, NULL);
    /* Only `len` bytes are read: the escape cut by the length is malformed. */
    assert_null(ebb_pct_decode("%41", 2, 0));
}

/* Every byte but NUL survives a round trip. */
static void test_round_trip(void **state)
{
    (void)state;
    char all[255];
    for (int i = 0; i < 255; i++)
        all[i] = (char)(i + 1);
    char *enc = encode(all, sizeof(all), 0);
    for (const char *p = enc; *p != '\0'; p++)
        assert_non_null(strchr("%-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "abcdefghijklmnopqrstuvwxyz", *p));
    char *dec = ebb_pct_decode(enc, strlen(enc), 0);
    assert_non_null(dec);
    assert_int_equal(strlen(dec), sizeof(all));
    assert_memory_equal(dec, all, sizeof(all));
    free(enc);
    free(dec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
