/* Price and availability trace readers (src/base/trace.c) and the CSV reader
 * under them (src/base/csv.c).
 *
 * Good inputs are files under tests/data/traces; malformed inputs are
 * written by the test into its own temporary directory, which is the
 * working directory while the test runs, so messages start with a short,
 * exact "prices.csv:LINE:". The shipped data/ files are loaded too, with
 * series counts taken independently (awk/sort) when the test was written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ebb/trace.h>
#include <ebb/units.h>

#include "base/csv.h"

static char tmpdir[PATH_MAX];
static char olddir[PATH_MAX];

static const char *src_path(const char *rel, char *buf, size_t size)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    snprintf(buf, size, "%s/%s", root ? root : ".", rel);
    return buf;
}

static ebb_time_ms T(const char *s)
{
    ebb_time_ms t = 0;
    assert_int_equal(ebb_parse_time(s, &t), 0);
    return t;
}

static void write_file(const char *name, const char *text, size_t len)
{
    FILE *f = fopen(name, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* Writes `len` bytes of `text` to `name` and checks that loading it fails
 * with exactly `msg`: as an availability trace when `name` is
 * "avail.csv", else as a price trace. */
static void load_fails(const char *name, const char *text, size_t len,
                       const char *msg)
{
    write_file(name, text, len);
    struct ebb_diag d = {{0}};
    if (strcmp(name, "avail.csv") == 0) {
        struct ebb_avail_trace *t = NULL;
        assert_int_equal(ebb_avail_trace_load(name, &t, &d), EBB_EINVAL);
        assert_null(t);
    } else {
        struct ebb_price_trace *t = NULL;
        assert_int_equal(ebb_price_trace_load(name, &t, &d), EBB_EINVAL);
        assert_null(t);
    }
    assert_string_equal(d.msg, msg);
}

/* The value of series `s` at time `when` is `want`. */
static void price_at_is(const struct ebb_price_series *s, const char *when,
                        ebb_micros want)
{
    ebb_micros p = -1;
    assert_int_equal(ebb_price_series_at(s, T(when), &p), 0);
    assert_int_equal(p, want);
}

static void avail_at_is(const struct ebb_avail_series *s, const char *when,
                        int32_t want)
{
    int32_t n = -1;
    assert_int_equal(ebb_avail_series_at(s, T(when), &n), 0);
    assert_int_equal(n, want);
}

/* An input and the exact message it is rejected with. */
struct bad_input {
    const char *text;
    const char *msg;
};

static int setup(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof(tmpdir), "%s/ebb-test-trace-XXXXXX",
             base ? base : "/tmp");
    if (mkdtemp(tmpdir) == NULL || getcwd(olddir, sizeof(olddir)) == NULL ||
        chdir(tmpdir) != 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    const char *names[] = {"prices.csv", "avail.csv", "x.csv"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        unlink(names[i]);
    if (chdir(olddir) != 0)
        return -1;
    return rmdir(tmpdir);
}

/* ---- CSV reader ---- */

static void csv_quotes_crlf_and_blank_lines(void **state)
{
    (void)state;
    static const char text[] = "\xEF\xBB\xBF"
                               "a,\"b,c\",\"say \"\"hi\"\"\"\r\n"
                               "\r\n"
                               "\n"
                               ",,\r\n"
                               "\"two\nlines\",x\n"
                               "last,no newline";
    struct ebb__csv c;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__csv_open_mem(&c, "t.csv", text, sizeof(text) - 1), 0);
    assert_int_equal(ebb__csv_next(&c, &d), 1);
    assert_int_equal(c.line, 1);
    assert_int_equal(c.n_field, 3);
    assert_string_equal(c.field[0], "a");
    assert_string_equal(c.field[1], "b,c");
    assert_string_equal(c.field[2], "say \"hi\"");
    assert_int_equal(ebb__csv_next(&c, &d), 1);
    assert_int_equal(c.line, 4);
    assert_int_equal(c.n_field, 3);
    assert_string_equal(c.field[0], "");
    assert_string_equal(c.field[2], "");
    assert_int_equal(ebb__csv_next(&c, &d), 1);
    assert_int_equal(c.line, 5);
    assert_string_equal(c.field[0], "two\nlines");
    assert_string_equal(c.field[1], "x");
    assert_int_equal(ebb__csv_next(&c, &d), 1);
    assert_int_equal(c.line, 7);
    assert_string_equal(c.field[1], "no newline");
    assert_int_equal(ebb__csv_next(&c, &d), 0);
    assert_int_equal(ebb__csv_next(&c, &d), 0);
    ebb__csv_close(&c);
}

static void csv_errors(void **state)
{
    (void)state;
    static const struct bad_input cases[] = {
        {"a,b\n\"open,c\n\n", "t.csv:2: quoted field is not closed (a field "
                              "that starts with \" must end with \")"},
        {"a,b\nx,\"q\"y\n", "t.csv:2: text after the closing quote of field "
                            "2 (write a quote inside a quoted field as \"\")"},
        {"a,b\nx,y\"z\n", "t.csv:2: quote inside unquoted field 2 (quote the "
                          "whole field and double the quote: \"a \"\"b\"\"\")"},
        {"a,b\rc,d\r", "t.csv:1: carriage return not followed by a line feed "
                       "(lines must end in LF or CRLF)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ebb__csv c;
        struct ebb_diag d = {{0}};
        assert_int_equal(ebb__csv_open_mem(&c, "t.csv", cases[i].text,
                                           strlen(cases[i].text)),
                         0);
        int rc;
        do
            rc = ebb__csv_next(&c, &d);
        while (rc == 1);
        assert_int_equal(rc, EBB_EINVAL);
        assert_string_equal(d.msg, cases[i].msg);
        ebb__csv_close(&c);
    }
}

static void decimal_micros(void **state)
{
    (void)state;
    ebb_micros m;
    const char *why = NULL;
    assert_int_equal(ebb_parse_decimal_micros("3.06", &m, &why), 0);
    assert_int_equal(m, 3060000);
    assert_int_equal(ebb_parse_decimal_micros("0.918000", &m, &why), 0);
    assert_int_equal(m, 918000);
    assert_int_equal(ebb_parse_decimal_micros("12", &m, &why), 0);
    assert_int_equal(m, 12000000);
    assert_int_equal(ebb_parse_decimal_micros("0.0000005", &m, &why), 0);
    assert_int_equal(m, 1);
    /* Above 0 but below a micro-unit: refused, never rounded to a free
     * price (#16 point 8: "saved 100%"). Zeros stay zero. */
    static const char *const tiny[] = {"0.00000049999", "0.0000004", "0.0000000001"};
    for (size_t i = 0; i < sizeof(tiny) / sizeof(tiny[0]); i++) {
        m = 777;
        assert_int_equal(ebb_parse_decimal_micros(tiny[i], &m, &why), EBB_EINVAL);
        assert_string_equal(why, "is below 0.000001, the smallest amount ebb keeps "
                                 "(write 0 for free)");
        assert_int_equal(m, 777);
    }
    assert_int_equal(ebb_parse_decimal_micros("0.0000000", &m, &why), 0);
    assert_int_equal(m, 0);
    assert_int_equal(ebb_parse_decimal_micros("0", &m, &why), 0);
    assert_int_equal(m, 0);
    assert_int_equal(ebb_parse_decimal_micros("1.0000001", &m, &why), 0);
    assert_int_equal(m, 1000000); /* rounded, not zeroed */
    assert_int_equal(ebb_parse_decimal_micros("0.9999995", &m, &why), 0);
    assert_int_equal(m, 1000000);
    assert_int_equal(ebb_parse_decimal_micros("1000000000", &m, &why), 0);
    assert_int_equal(m, EBB_MONEY_MAX);
    m = 777;
    assert_int_equal(ebb_parse_decimal_micros("1000000000.000001", &m, &why),
                     EBB_EINVAL);
    assert_string_equal(why, "is more than 1000000000, the largest amount "
                             "ebb takes");
    assert_int_equal(m, 777);
    assert_int_equal(
        ebb_parse_decimal_micros("9223372036854.775807", &m, &why),
        EBB_EINVAL);
    assert_int_equal(
        ebb_parse_decimal_micros("9223372036854.775808", &m, &why),
        EBB_EINVAL);
    assert_int_equal(
        ebb_parse_decimal_micros("9223372036854.7758075", &m, &why),
        EBB_EINVAL);
    assert_int_equal(ebb_parse_decimal_micros("92233720368547", &m, &why),
                     EBB_EINVAL);
    assert_string_equal(why, "is too large");
    const char *bad[] = {"", ".5", "5.", "1e3", " 1", "1 ", "+1", "0x10",
                         "1.2.3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(ebb_parse_decimal_micros(bad[i], &m, &why),
                         EBB_EINVAL);
        assert_string_equal(why, "is not a number");
    }
    assert_int_equal(ebb_parse_decimal_micros("-0.5", &m, &why), EBB_EINVAL);
    assert_string_equal(why, "is negative");
}

/* ---- prices ---- */

/* prices_good.csv and prices_crlf.csv hold the same rows. */
static void check_good_prices(const char *rel)
{
    char path[PATH_MAX];
    struct ebb_price_trace *t = NULL;
    struct ebb_diag d = {{0}};
    assert_int_equal(
        ebb_price_trace_load(src_path(rel, path, sizeof(path)), &t, &d), 0);
    assert_string_equal(d.msg, "");
    assert_string_equal(t->path, path);
    assert_int_equal(t->n_series, 4);
    assert_int_equal(t->first_at, T("2020-01-01T00:00:00Z"));
    assert_int_equal(t->last_at, T("2020-01-04T00:00:00Z"));

    /* Sorted by key, whatever the file order. */
    assert_string_equal(t->series[0].zone, "us-east-1a");
    assert_string_equal(t->series[1].zone, "us-east-1b");
    assert_string_equal(t->series[2].provider, "azure");
    assert_string_equal(t->series[2].region, "us_east");
    assert_string_equal(t->series[2].zone, "");
    assert_string_equal(t->series[2].product,
                        "low-priority (daily, manually recorded)");
    assert_string_equal(t->series[3].product,
                        "per-gpu-hour, \"interruptible\"");

    ssize_t i = ebb_price_trace_find(t, "aws", "us-east-1", "us-east-1a",
                                      "p3.2xlarge", "Linux/UNIX");
    assert_int_equal(i, 0);
    assert_int_equal(ebb_price_trace_find(t, "aws", "us-east-1", "us-east-1b",
                                           "p3.2xlarge", NULL),
                     1);
    assert_int_equal(ebb_price_trace_find(t, "vast", "", "", "RTX_4090",
                                           "per-gpu-hour, \"interruptible\""),
                     3);
    assert_int_equal(ebb_price_trace_find(t, "aws", "us-east-1", "us-east-1c",
                                           "p3.2xlarge", NULL),
                     EBB_ENOTFOUND);
    assert_int_equal(ebb_price_trace_find(t, "vast", "", "", "RTX_4090",
                                           "other"),
                     EBB_ENOTFOUND);
    assert_int_equal(ebb_price_trace_find(t, "zzz", "", "", "x", NULL),
                     EBB_ENOTFOUND);

    /* Equal timestamps: the later row (0.95) replaced 0.9500005. */
    const struct ebb_price_series *s = &t->series[0];
    assert_int_equal(s->n, 3);
    ebb_micros p = -1;
    assert_int_equal(ebb_price_series_at(s, T("2019-12-31T23:59:59.999Z"), &p),
                     EBB_ENOTFOUND);
    assert_int_equal(p, -1);
    price_at_is(s, "2020-01-01T00:00:00Z", 918000);
    price_at_is(s, "2020-01-01T13:00:00Z", 918000);
    price_at_is(s, "2020-01-02T00:00:00Z", 950000);
    price_at_is(s, "2020-01-03T23:59:59Z", 950000);
    price_at_is(s, "2020-01-04T00:00:00Z", 3060000);
    price_at_is(s, "2030-01-01T00:00:00Z", 3060000);

    assert_int_equal(ebb_price_series_next_change(s, T("2019-01-01")),
                     T("2020-01-01T00:00:00Z"));
    assert_int_equal(ebb_price_series_next_change(s, T("2020-01-01T00:00:00Z")),
                     T("2020-01-02T00:00:00Z"));
    assert_int_equal(ebb_price_series_next_change(s, T("2020-01-02T05:00:00Z")),
                     T("2020-01-04T00:00:00Z"));
    assert_int_equal(ebb_price_series_next_change(s, T("2020-01-04T00:00:00Z")),
                     INT64_MAX);

    /* Interleaved series keep their own rows; 7th decimal rounds half up. */
    assert_int_equal(t->series[1].n, 2);
    assert_int_equal(t->series[1].price[1], 1200000);
    assert_int_equal(t->series[2].n, 1);
    assert_int_equal(t->series[2].price[0], 180000);
    assert_int_equal(t->series[3].price[0], 351235);
    assert_int_equal(t->series[3].price[1], 12000000);
    ebb_price_trace_free(t);
}

static void prices_good(void **state)
{
    (void)state;
    check_good_prices("tests/data/traces/prices_good.csv");
}

static void prices_crlf(void **state)
{
    (void)state;
    check_good_prices("tests/data/traces/prices_crlf.csv");
}

#define PH "timestamp_utc,provider,region,zone,instance_type,product," \
           "price_usd_per_hour"
#define ROW "2020-01-01T00:00:00Z,aws,us-east-1,us-east-1a,p3.2xlarge," \
            "Linux/UNIX,"

static void prices_errors(void **state)
{
    (void)state;
    static const struct bad_input cases[] = {
        {"", "prices.csv: file is empty; a price trace starts with the line "
             PH},
        {"\n\n", "prices.csv: file is empty; a price trace starts with the "
                 "line " PH},
        {PH "\n", "prices.csv: no rows after the header"},
        {"timestamp,provider,region,zone,instance_type,product,"
         "price_usd_per_hour\n",
         "prices.csv:1: column 1 of the header is \"timestamp\", expected "
         "\"timestamp_utc\"; a price trace starts with the line " PH},
        {"timestamp_utc,provider,zone,instance_type,available\n",
         "prices.csv:1: header has 5 columns, expected 7; a price trace "
         "starts with the line " PH},
        {PH "\n" ROW "1\n2020-01-02T00:00:00Z,aws,us-east-1,us-east-1a,"
            "p3.2xlarge,1\n",
         "prices.csv:3: 6 fields, expected 7 (" PH ")"},
        {PH "\n" ROW "1,extra\n", "prices.csv:2: 8 fields, expected 7 (" PH
                                  ")"},
        {PH "\n2020-13-01T00:00:00Z,aws,r,z,t,p,1\n",
         "prices.csv:2: timestamp_utc: \"2020-13-01T00:00:00Z\" is not a "
         "time (month out of range)"},
        {PH "\n2020-01-01T00:00:00,aws,r,z,t,p,1\n",
         "prices.csv:2: timestamp_utc: \"2020-01-01T00:00:00\" is not a "
         "time (no time zone; add Z for UTC or an offset such as +08:00)"},
        {PH "\n" ROW "abc\n", "prices.csv:2: price_usd_per_hour: \"abc\" is "
                              "not a number (USD per hour, like 0.918)"},
        {PH "\n" ROW "\n", "prices.csv:2: price_usd_per_hour: \"\" is not a "
                           "number (USD per hour, like 0.918)"},
        {PH "\n" ROW "-0.5\n", "prices.csv:2: price_usd_per_hour: \"-0.5\" is "
                               "negative (USD per hour, like 0.918)"},
        {PH "\n" ROW "0.0000004\n",
         "prices.csv:2: price_usd_per_hour: \"0.0000004\" is below 0.000001, the "
         "smallest amount ebb keeps (write 0 for free) (USD per hour, like 0.918)"},
        {PH "\n" ROW "99999999999999\n",
         "prices.csv:2: price_usd_per_hour: \"99999999999999\" is too large "
         "(USD per hour, like 0.918)"},
        {PH "\n2020-01-01T00:00:00Z,,r,z,t,p,1\n",
         "prices.csv:2: provider is empty"},
        {PH "\n2020-01-01T00:00:00Z,aws,r,z,,p,1\n",
         "prices.csv:2: instance_type is empty"},
        {PH "\n" ROW "\"1\n", "prices.csv:2: quoted field is not closed (a "
                              "field that starts with \" must end with \")"},
        {PH "\n" ROW "1\x00\n", "prices.csv:2: contains a NUL byte; this is "
                                "not a text CSV file"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = strlen(cases[i].text);
        if (strstr(cases[i].msg, "NUL") != NULL)
            len += 2; /* the NUL and the newline after it */
        load_fails("prices.csv", cases[i].text, len, cases[i].msg);
    }
}

/* The message from the design notes, reproduced exactly: an interleaved
 * file whose 812th line goes back in time for one series. */
static void prices_backwards(void **state)
{
    (void)state;
    size_t cap = 1 << 17, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)snprintf(text + len, cap - len, "%s\n", PH);
    for (int i = 0; i < 809; i++) /* lines 2..810: another series */
        len += (size_t)snprintf(text + len, cap - len,
                                "2020-01-01T%02d:%02d:00Z,aws,us-east-1,"
                                "us-east-1b,p3.2xlarge,Linux/UNIX,0.9\n",
                                i / 60, i % 60);
    len += (size_t)snprintf(text + len, cap - len,
                            "2020-01-04T00:00:00Z,aws,us-east-1,us-east-1a,"
                            "p3.2xlarge,Linux/UNIX,1.0\n"
                            "2020-01-03T00:00:00Z,aws,us-east-1,us-east-1a,"
                            "p3.2xlarge,Linux/UNIX,1.1\n");
    load_fails("prices.csv", text, len,
               "prices.csv:812: row is earlier than the previous row of "
               "series aws/us-east-1/us-east-1a/p3.2xlarge "
               "(2020-01-03T00:00:00Z < 2020-01-04T00:00:00Z); sort rows by "
               "series, then time");
    free(text);
}

static void prices_missing_file(void **state)
{
    (void)state;
    struct ebb_price_trace *t = NULL;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb_price_trace_load("nope.csv", &t, &d), EBB_EIO);
    assert_null(t);
    assert_string_equal(d.msg, "nope.csv: cannot open: No such file or "
                               "directory");
    ebb_price_trace_free(NULL);
    ebb_avail_trace_free(NULL);
}

/* ---- availability ---- */

static void avail_good(void **state)
{
    (void)state;
    char path[PATH_MAX];
    struct ebb_avail_trace *t = NULL;
    struct ebb_diag d = {{0}};
    assert_int_equal(
        ebb_avail_trace_load(
            src_path("tests/data/traces/avail_good.csv", path, sizeof(path)),
            &t, &d),
        0);
    assert_int_equal(t->n_series, 2);
    assert_int_equal(t->first_at, T("2020-03-15T10:00:00Z"));
    assert_int_equal(t->last_at, T("2020-03-15T12:00:00Z"));
    ssize_t b = ebb_avail_trace_find(t, "aws", "us-east-1b", "p3.2xlarge");
    ssize_t c = ebb_avail_trace_find(t, "aws", "us-east-1c", "p2.xlarge");
    assert_int_equal(b, 0);
    assert_int_equal(c, 1);
    assert_int_equal(ebb_avail_trace_find(t, "aws", "us-east-1c",
                                           "p3.2xlarge"),
                     EBB_ENOTFOUND);
    const struct ebb_avail_series *s = &t->series[b];
    int32_t n = -1;
    assert_int_equal(ebb_avail_series_at(s, T("2020-03-15T09:59:59Z"), &n),
                     EBB_ENOTFOUND);
    avail_at_is(s, "2020-03-15T10:00:00Z", 1);
    avail_at_is(s, "2020-03-15T10:30:00Z", 1);
    avail_at_is(s, "2020-03-15T11:00:00Z", 0);
    avail_at_is(s, "2021-01-01", 0);
    assert_int_equal(ebb_avail_series_next_change(s, T("2020-03-15T10:30:00Z")),
                     T("2020-03-15T11:00:00Z"));
    assert_int_equal(ebb_avail_series_next_change(s, T("2020-03-15T11:00:00Z")),
                     INT64_MAX);
    s = &t->series[c]; /* two rows at 12:00: the later (2) wins */
    assert_int_equal(s->n, 2);
    avail_at_is(s, "2020-03-15T12:00:00Z", 2);
    ebb_avail_trace_free(t);
}

#define AH "timestamp_utc,provider,zone,instance_type,available"
#define AROW "2020-03-15T10:00:00Z,aws,us-east-1b,p3.2xlarge,"

static void avail_errors(void **state)
{
    (void)state;
    static const struct bad_input cases[] = {
        {PH "\n", "avail.csv:1: header has 7 columns, expected 5; an "
                  "availability trace starts with the line " AH},
        {"timestamp_utc,provider,zone,instance_type,capacity\n",
         "avail.csv:1: column 5 of the header is \"capacity\", expected "
         "\"available\"; an availability trace starts with the line " AH},
        {AH "\n" AROW "-1\n", "avail.csv:2: available: \"-1\" is negative "
                              "(instances, a whole number >= 0)"},
        {AH "\n" AROW "1.5\n", "avail.csv:2: available: \"1.5\" is not a "
                               "whole number (instances, a whole number >= "
                               "0)"},
        {AH "\n" AROW "3000000000\n",
         "avail.csv:2: available: \"3000000000\" is too large (instances, a "
         "whole number >= 0)"},
        {AH "\n" AROW "1\n2020-03-15T09:00:00Z,aws,us-east-1b,p3.2xlarge,0\n",
         "avail.csv:3: row is earlier than the previous row of series "
         "aws/us-east-1b/p3.2xlarge (2020-03-15T09:00:00Z < "
         "2020-03-15T10:00:00Z); sort rows by series, then time"},
        {AH "\n" AROW "1,2\n", "avail.csv:2: 6 fields, expected 5 (" AH ")"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        load_fails("avail.csv", cases[i].text, strlen(cases[i].text),
                   cases[i].msg);
}

/* ---- shipped data ---- */

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
           (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static size_t total_rows_p(const struct ebb_price_trace *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_series; i++)
        n += t->series[i].n;
    return n;
}

/* Counts from the files themselves, taken while writing this test:
 *   tail -n +2 F | wc -l                        (rows)
 *   tail -n +2 F | cut -d, -f2-6 | sort -u | wc -l   (series)
 * No shipped file has two rows of one series at the same time. */
static void shipped_price_traces(void **state)
{
    (void)state;
    static const struct {
        const char *rel;
        size_t n_series, n_rows;
    } files[] = {
        {"data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv",
         98, 12454},
        {"data/traces/azure_lowpri_gpu_3regions_2020-02_2020-03.csv", 28, 812},
        {"data/traces/"
         "gpu_marketplace_primeintellect_2025-10-19_2025-11-08.csv",
         56, 30283},
    };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[PATH_MAX];
        struct ebb_price_trace *t = NULL;
        struct ebb_diag d = {{0}};
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = ebb_price_trace_load(src_path(files[i].rel, path,
                                                sizeof(path)),
                                       &t, &d);
        double ms = ms_since(&t0);
        if (rc != 0)
            fail_msg("%s", d.msg);
        print_message("%s: %zu rows, %zu series, loaded in %.1f ms\n",
                      files[i].rel, total_rows_p(t), t->n_series, ms);
        assert_int_equal(t->n_series, files[i].n_series);
        assert_int_equal(total_rows_p(t), files[i].n_rows);
        ebb_price_trace_free(t);
    }

    char path[PATH_MAX];
    struct ebb_price_trace *t = NULL;
    assert_int_equal(ebb_price_trace_load(src_path(files[0].rel, path,
                                                    sizeof(path)),
                                           &t, NULL),
                     0);
    /* README: us-east-1 p2.xlarge starts 2020-01-03. 228 rows in 1a. */
    ssize_t i = ebb_price_trace_find(t, "aws", "us-east-1", "us-east-1a",
                                      "p2.xlarge", "Linux/UNIX");
    assert_true(i >= 0);
    const struct ebb_price_series *s = &t->series[i];
    assert_int_equal(s->n, 228);
    ebb_micros p;
    assert_int_equal(ebb_price_series_at(s, T("2020-01-03T18:11:16Z"), &p),
                     EBB_ENOTFOUND);
    price_at_is(s, "2020-01-03T18:11:17Z", 448000);
    price_at_is(s, "2020-01-03T23:00:00Z", 448000);
    assert_int_equal(ebb_price_series_next_change(s, T("2020-01-03T18:11:17Z")),
                     T("2020-01-03T23:21:20Z"));
    price_at_is(s, "2020-03-01", 377500);
    assert_int_equal(t->first_at, T("2019-12-20T06:39:10Z"));
    assert_int_equal(t->last_at, T("2020-02-29T23:47:11Z"));
    ebb_price_trace_free(t);
}

/* tail -n +2 F | cut -d, -f2-4 | sort -u | wc -l  ->  8 series, 80 rows. */
static void shipped_avail_trace(void **state)
{
    (void)state;
    char path[PATH_MAX];
    struct ebb_avail_trace *t = NULL;
    struct ebb_diag d = {{0}};
    int rc = ebb_avail_trace_load(
        src_path("data/availability_aws_2020-03.csv", path, sizeof(path)), &t,
        &d);
    if (rc != 0)
        fail_msg("%s", d.msg);
    assert_int_equal(t->n_series, 8);
    size_t rows = 0;
    for (size_t i = 0; i < t->n_series; i++)
        rows += t->series[i].n;
    assert_int_equal(rows, 80);
    /* The V100 slot in us-east-1b ran for the whole two days. */
    ssize_t i = ebb_avail_trace_find(t, "aws", "us-east-1b", "p3.2xlarge");
    assert_true(i >= 0);
    avail_at_is(&t->series[i], "2020-03-16T12:00:00Z", 1);
    /* us-east-1c p2.8xlarge: no capacity at first, granted at 12:08:47. */
    i = ebb_avail_trace_find(t, "aws", "us-east-1c", "p2.8xlarge");
    assert_true(i >= 0);
    avail_at_is(&t->series[i], "2020-03-15T12:00:00Z", 0);
    assert_int_equal(ebb_avail_series_next_change(&t->series[i],
                                                   T("2020-03-15T12:00:00Z")),
                     T("2020-03-15T12:08:47Z"));
    ebb_avail_trace_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(csv_quotes_crlf_and_blank_lines),
        cmocka_unit_test(csv_errors),
        cmocka_unit_test(decimal_micros),
        cmocka_unit_test(prices_good),
        cmocka_unit_test(prices_crlf),
        cmocka_unit_test(prices_errors),
        cmocka_unit_test(prices_backwards),
        cmocka_unit_test(prices_missing_file),
        cmocka_unit_test(avail_good),
        cmocka_unit_test(avail_errors),
        cmocka_unit_test(shipped_price_traces),
        cmocka_unit_test(shipped_avail_trace),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
