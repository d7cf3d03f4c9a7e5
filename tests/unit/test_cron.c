/* Cron expressions: every row of the tables in tests/data/cron (robfig/cron's
 * spec_test.go tables and the croniter vectors; README.md there says how
 * each is read), the parser's messages, and the daylight-saving rules
 * against a simulation of Vixie cron's main loop driven by glibc's
 * localtime (an oracle that shares no code with src/tz*.c).
 *
 * How the robfig tables map onto ebb:
 * - `?` is `*`; `TZ=Zone ` and `CRON_TZ=Zone ` prefixes on a spec name the
 *   zone; on a time, the zone the time is in (robfig computes in the
 *   time's zone when the spec has none). A fixed offset such as +0530
 *   becomes the POSIX zone <+0530>-5:30. The "local" layout (Mon Jul 9
 *   15:00 2012) is read as UTC: the rows using it are far from any
 *   daylight-saving change, and ebb names its zone instead of using the
 *   machine's.
 * - TestNext's specs have a seconds field first (robfig's secondParser);
 *   ebb has none. The seconds field is parsed as a minute field (same
 *   range and syntax) and the rest as an ebb expression; the answer is the
 *   first "fire minute + listed second" after `from`.
 * - Every row is checked with both day rules: Vixie's (ebb's default) and
 *   robfig's and croniter's (EBB__CRON_STAR_EXACT). Where ebb's answer
 *   differs from the table's, vixie-differences.tsv gives it and why, and
 *   the test checks that it really differs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <ebb/units.h>

#include "base/tz.h"
#include "jobs/cron.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MODES 2
static const unsigned mode_flags[MODES] = {0, EBB__CRON_STAR_EXACT};
static const char *const mode_names[MODES] = {"vixie", "exact"};

/* ---- reading the tables ------------------------------------------------- */

struct row {
    char *f[12];
    size_t n;
};

/* Reads the data rows (not '#' comments, not the header line starting with
 * `header`) of a tab-separated file; returns how many. */
static size_t read_rows(const char *name, const char *header, struct row **out,
                        char **text)
{
    char path[1024];
    const char *root = getenv("EBB_SOURCE_ROOT");
    assert_non_null(root);
    snprintf(path, sizeof(path), "%s/tests/data/cron/%s", root, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    assert_true(len > 0);
    rewind(f);
    char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = '\0';
    fclose(f);
    size_t cap = 256, n = 0;
    struct row *rows = calloc(cap, sizeof(*rows));
    assert_non_null(rows);
    for (char *line = buf; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        if (nl != NULL)
            *nl = '\0';
        if (line[0] != '#' && line[0] != '\0' &&
            strncmp(line, header, strlen(header)) != 0) {
            assert_true(n < cap);
            struct row *r = &rows[n++];
            for (char *p = line; p != NULL && r->n < ARRAY_LEN(r->f);) {
                r->f[r->n++] = p;
                p = strchr(p, '\t');
                if (p != NULL)
                    *p++ = '\0';
            }
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    *out = rows;
    *text = buf;
    return n;
}

struct difference {
    const char *table, *line, *rule, *ebb;
};

static struct row *diff_rows;
static size_t n_diff;
static char *diff_text;
static size_t diffs_used;

/* ebb's answer where it differs from the table's, or NULL. */
static const char *difference(const char *table, const char *line, int mode)
{
    for (size_t i = 0; i < n_diff; i++) {
        struct row *r = &diff_rows[i];
        if (strcmp(r->f[0], table) != 0 || strcmp(r->f[1], line) != 0)
            continue;
        if (strcmp(r->f[2], "both") == 0 ||
            strcmp(r->f[2], mode_names[mode]) == 0) {
            diffs_used++;
            return r->f[3];
        }
    }
    return NULL;
}

static int setup_diffs(void **state)
{
    (void)state;
    n_diff = read_rows("vixie-differences.tsv", "table\t", &diff_rows,
                       &diff_text);
    return 0;
}

static int teardown_diffs(void **state)
{
    (void)state;
    free(diff_rows);
    free(diff_text);
    return 0;
}

/* ---- robfig's notations ------------------------------------------------- */

/* A copy of spec with '?' as '*' and any TZ=/CRON_TZ= prefix moved into
 * zone (empty when none). */
static void robfig_spec(const char *spec, char *out, size_t size, char *zone,
                        size_t zsize)
{
    zone[0] = '\0';
    const char *p = spec;
    size_t plen = strncmp(p, "TZ=", 3) == 0        ? 3
                  : strncmp(p, "CRON_TZ=", 8) == 0 ? 8
                                                   : 0;
    if (plen > 0) {
        const char *sp = strchr(p, ' ');
        assert_non_null(sp);
        snprintf(zone, zsize, "%.*s", (int)(sp - p - plen), p + plen);
        p = sp + 1;
    }
    snprintf(out, size, "%s", p);
    for (char *q = out; *q != '\0'; q++) {
        if (*q == '?')
            *q = '*';
    }
}

static int month_of(const char *s)
{
    static const char *const m[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (int i = 0; i < 12; i++) {
        if (strcmp(s, m[i]) == 0)
            return i + 1;
    }
    fail_msg("bad month %s", s);
    return 0;
}

/* A time in one of robfig's layouts. *zone gets a zone name ("TZ=" prefix),
 * a POSIX rule for a numeric offset, or "" (the "local" layout: UTC). */
static ebb_time_ms robfig_time(const char *s, char *zone, size_t zsize)
{
    zone[0] = '\0';
    if (strncmp(s, "TZ=", 3) == 0) {
        const char *sp = strchr(s, ' ');
        assert_non_null(sp);
        snprintf(zone, zsize, "%.*s", (int)(sp - s - 3), s + 3);
        s = sp + 1;
    }
    if (s[0] >= '0' && s[0] <= '9') {
        /* 2012-03-11T00:00:00-0500 */
        char iso[40];
        size_t n = strlen(s);
        assert_int_equal(n, 24);
        snprintf(iso, sizeof(iso), "%.22s:%s", s, s + 22);
        ebb_time_ms t;
        assert_int_equal(ebb_parse_time(iso, &t), 0);
        if (zone[0] == '\0') {
            /* POSIX offsets count west: +0530 is "<+0530>-5:30". */
            snprintf(zone, zsize, "<%.5s>%c%.2s:%.2s", s + 19,
                     s[19] == '+' ? '-' : '+', s + 20, s + 22);
        }
        return t;
    }
    char wday[4], mon[4];
    int d, h, mi, sec = 0, y;
    if (sscanf(s, "%3s %3s %d %d:%d:%d %d", wday, mon, &d, &h, &mi, &sec,
               &y) != 7) {
        sec = 0;
        assert_int_equal(
            sscanf(s, "%3s %3s %d %d:%d %d", wday, mon, &d, &h, &mi, &y), 6);
    }
    return ebb_days_from_civil(y, month_of(mon), d) * EBB_MS_PER_DAY +
           h * EBB_MS_PER_HOUR + mi * EBB_MS_PER_MINUTE +
           sec * EBB_MS_PER_SECOND;
}

static struct ebb__tz *zone_for(const char *name)
{
    struct ebb__tz *tz = NULL;
    struct ebb_diag d = {{0}};
    if (name[0] == '\0')
        return NULL;
    if (name[0] == '<')
        assert_int_equal(ebb__tz_from_posix(name, &tz, &d), 0);
    else if (ebb__tz_load(name, &tz, &d) != 0)
        fail_msg("%s", d.msg);
    return tz;
}

static void fmt(ebb_time_ms t, char *buf, size_t size)
{
    ebb_format_time(t, buf, size);
}

/* ---- TestActivation ----------------------------------------------------- */

static void robfig_activation(void **state)
{
    (void)state;
    struct row *rows;
    char *text;
    size_t n = read_rows("robfig-cron_spec_test_TestActivation.tsv", "line\t",
                         &rows, &text);
    assert_int_equal(n, 29);
    size_t failures = 0;
    for (size_t i = 0; i < n; i++) {
        struct row *r = &rows[i];
        char spec[128], zone[64], tzone[64];
        robfig_spec(r->f[2], spec, sizeof(spec), zone, sizeof(zone));
        ebb_time_ms t = robfig_time(r->f[1], tzone, sizeof(tzone));
        for (int mode = 0; mode < MODES; mode++) {
            struct ebb__cron c;
            struct ebb__cron_error err;
            assert_int_equal(ebb__cron_parse(spec, mode_flags[mode], &c, &err),
                             0);
            const char *want = r->f[3];
            const char *other = difference("activation", r->f[0], mode);
            if (other != NULL) {
                assert_string_not_equal(other, want);
                want = other;
            }
            ebb_time_ms next = 0;
            int rc = ebb__cron_next(&c, NULL, t - 1000, &next);
            const char *got = rc == 0 && next == t ? "true" : "false";
            if (strcmp(got, want) != 0) {
                print_error("activation line %s (%s rule): %s at %s: got %s, "
                            "want %s\n",
                            r->f[0], mode_names[mode], r->f[2], r->f[1], got,
                            want);
                failures++;
            }
        }
    }
    free(rows);
    free(text);
    assert_int_equal(failures, 0);
}

/* ---- TestNext ----------------------------------------------------------- */

/* robfig's Next with a seconds field, mapped as the file comment says. */
static int next_with_seconds(const struct ebb__cron *c, uint64_t seconds,
                             const struct ebb__tz *tz, ebb_time_ms from,
                             ebb_time_ms *out)
{
    ebb_time_ms m0 = from - (from % EBB_MS_PER_MINUTE);
    ebb_time_ms x;
    if (ebb__cron_next(c, tz, m0 - 1, &x) == 0 && x == m0) {
        for (int s = 0; s < 60; s++) {
            if (((seconds >> s) & 1) && m0 + s * EBB_MS_PER_SECOND > from) {
                *out = m0 + s * EBB_MS_PER_SECOND;
                return 0;
            }
        }
    }
    int rc = ebb__cron_next(c, tz, from, &x);
    if (rc != 0)
        return rc;
    *out = x + __builtin_ctzll(seconds) * EBB_MS_PER_SECOND;
    return 0;
}

static void robfig_next(void **state)
{
    (void)state;
    struct row *rows;
    char *text;
    size_t n =
        read_rows("robfig-cron_spec_test_TestNext.tsv", "line\t", &rows, &text);
    assert_int_equal(n, 62);
    size_t failures = 0, checked = 0;
    for (size_t i = 0; i < n; i++) {
        struct row *r = &rows[i];
        char spec[128], zone[64], tzone[64], five[128];
        robfig_spec(r->f[2], spec, sizeof(spec), zone, sizeof(zone));
        ebb_time_ms from = robfig_time(r->f[1], tzone, sizeof(tzone));
        struct ebb__tz *tz = zone_for(zone[0] != '\0' ? zone : tzone);
        /* TestNextWithTz (lines 254-259) uses 5-field specs. */
        int has_seconds = strtol(r->f[0], NULL, 10) < 250;
        uint64_t seconds = 1;
        const char *rest = spec;
        if (has_seconds) {
            const char *sp = strchr(spec, ' ');
            assert_non_null(sp);
            char sec_expr[64];
            snprintf(sec_expr, sizeof(sec_expr), "%.*s * * * *",
                     (int)(sp - spec), spec);
            struct ebb__cron sc;
            assert_int_equal(ebb__cron_parse(sec_expr, 0, &sc, NULL), 0);
            seconds = sc.minute;
            rest = sp + 1;
        }
        snprintf(five, sizeof(five), "%s", rest);
        for (int mode = 0; mode < MODES; mode++) {
            struct ebb__cron c;
            struct ebb__cron_error err;
            if (ebb__cron_parse(five, mode_flags[mode], &c, &err) != 0)
                fail_msg("line %s: %s: %s", r->f[0], five, err.msg);
            const char *want_text = r->n > 3 ? r->f[3] : "";
            const char *other = difference("next", r->f[0], mode);
            if (other != NULL) {
                assert_string_not_equal(other, want_text);
                want_text = other;
            }
            ebb_time_ms got = 0;
            int rc = next_with_seconds(&c, seconds, tz, from, &got);
            char g[48] = "(none)", w[48] = "(none)";
            int ok;
            if (want_text[0] == '\0') {
                ok = rc == EBB_ENOTFOUND;
            } else {
                char wz[64];
                ebb_time_ms want = robfig_time(want_text, wz, sizeof(wz));
                fmt(want, w, sizeof(w));
                ok = rc == 0 && got == want;
            }
            if (rc == 0)
                fmt(got, g, sizeof(g));
            if (!ok) {
                print_error("next line %s (%s rule): %s from %s: got %s, "
                            "want %s\n",
                            r->f[0], mode_names[mode], r->f[2], r->f[1], g, w);
                failures++;
            }
            checked++;
        }
        ebb__tz_free(tz);
    }
    free(rows);
    free(text);
    assert_int_equal(checked, 2 * n);
    assert_int_equal(failures, 0);
}

/* ---- TestErrors --------------------------------------------------------- */

static void robfig_errors(void **state)
{
    (void)state;
    struct row *rows;
    char *text;
    size_t n = read_rows("robfig-cron_spec_test_TestErrors.txt", "line\t",
                         &rows, &text);
    assert_int_equal(n, 4);
    /* The field each error must point at, by line ("xyz" is one field of
     * five, so the whole expression is wrong); and TestSlash0NoHang,
     * named in the file's header. */
    static const struct {
        const char *line;
        int field;
    } fields[] = {{"204", 0}, {"205", 1}, {"206", 2}, {"207", 5}};
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(rows[i].f[0], fields[i].line);
        for (int mode = 0; mode < MODES; mode++) {
            struct ebb__cron c;
            struct ebb__cron_error err;
            assert_int_equal(
                ebb__cron_parse(rows[i].f[1], mode_flags[mode], &c, &err),
                EBB_EINVAL);
            assert_int_equal(err.field, fields[i].field);
        }
    }
    char spec[64], zone[64];
    robfig_spec("TZ=America/New_York 15/0 * * * *", spec, sizeof(spec), zone,
                sizeof(zone));
    struct ebb__cron c;
    struct ebb__cron_error err;
    assert_int_equal(ebb__cron_parse(spec, 0, &c, &err), EBB_EINVAL);
    assert_int_equal(err.field, 1);
    assert_non_null(strstr(err.msg, "step 0 is out of range 1-59"));
    free(rows);
    free(text);
}

/* ---- croniter vectors --------------------------------------------------- */

static void croniter_vectors(void **state)
{
    (void)state;
    struct row *rows;
    char *text;
    size_t n = read_rows("cron-next-fire-vectors_croniter-and-bruteforce.tsv",
                         "expr\t", &rows, &text);
    assert_int_equal(n, 138);
    size_t failures = 0, checked = 0;
    for (size_t i = 0; i < n; i++) {
        struct row *r = &rows[i];
        assert_int_equal(r->n, 9);
        assert_string_equal(r->f[8], "yes");
        const char *mode_text = r->f[2];
        for (int mode = 0; mode < MODES; mode++) {
            if (strcmp(mode_text, "both") != 0 &&
                strcmp(mode_text, mode == 0 ? "vixie" : "or") != 0)
                continue;
            struct ebb__cron c;
            struct ebb__cron_error err;
            if (ebb__cron_parse(r->f[0], mode_flags[mode], &c, &err) != 0)
                fail_msg("%s: %s", r->f[0], err.msg);
            char iso[40];
            snprintf(iso, sizeof(iso), "%sZ", r->f[1]);
            ebb_time_ms t;
            assert_int_equal(ebb_parse_time(iso, &t), 0);
            for (int k = 0; k < 5; k++) {
                ebb_time_ms want, got;
                snprintf(iso, sizeof(iso), "%sZ", r->f[3 + k]);
                assert_int_equal(ebb_parse_time(iso, &want), 0);
                int rc = ebb__cron_next(&c, NULL, t, &got);
                if (rc != 0 || got != want) {
                    char g[48] = "(none)";
                    if (rc == 0)
                        fmt(got, g, sizeof(g));
                    print_error("croniter %s from %s (%s rule) #%d: got %s, "
                                "want %s\n",
                                r->f[0], r->f[1], mode_names[mode], k + 1, g,
                                r->f[3 + k]);
                    failures++;
                    break;
                }
                t = got;
            }
            checked++;
        }
    }
    free(rows);
    free(text);
    /* 120 rows hold for both rules, 18 for one. */
    assert_int_equal(checked, 120 * 2 + 18);
    assert_int_equal(failures, 0);
}

static void every_difference_used(void **state)
{
    (void)state;
    /* Each line of vixie-differences.tsv was looked up by a table test
     * above (and checked to differ); "both" rows count once per rule. */
    assert_int_equal(n_diff, 7);
    assert_int_equal(diffs_used, 2 + 5 * 2);
}

/* ---- the parser --------------------------------------------------------- */

static void parses_syntax(void **state)
{
    (void)state;
    struct ebb__cron c;
    assert_int_equal(ebb__cron_parse("  5,10-12,40-59/10 */6 1 jan-Mar,DEC "
                                     "Mon-fri  ",
                                     0, &c, NULL),
                     0);
    assert_true(c.minute == ((1ull << 5) | (1ull << 10) | (1ull << 11) |
                             (1ull << 12) | (1ull << 40) | (1ull << 50)));
    assert_int_equal(c.hour, (1u << 0) | (1u << 6) | (1u << 12) | (1u << 18));
    assert_int_equal(c.dom, 1u << 1);
    assert_int_equal(c.month, (1u << 1) | (1u << 2) | (1u << 3) | (1u << 12));
    assert_int_equal(c.dow, 0x3e);
    assert_true(c.wildcard); /* the hour field starts with '*' */
    assert_int_equal(ebb__cron_parse("0 6,18 * * *", 0, &c, NULL), 0);
    assert_false(c.wildcard);
    assert_int_equal(ebb__cron_parse("*/5 6 * * *", 0, &c, NULL), 0);
    assert_true(c.wildcard);
    /* 0 and 7 are Sunday; SUN names it too; 5-7 is Friday to Sunday. */
    struct ebb__cron a, b;
    assert_int_equal(ebb__cron_parse("0 0 * * 7", 0, &a, NULL), 0);
    assert_int_equal(ebb__cron_parse("0 0 * * sun", 0, &b, NULL), 0);
    assert_int_equal(a.dow, 1);
    assert_int_equal(b.dow, 1);
    assert_int_equal(ebb__cron_parse("0 0 * * 5-7", 0, &a, NULL), 0);
    assert_int_equal(a.dow, (1u << 0) | (1u << 5) | (1u << 6));
    /* n/s runs to the field's end; the day of week's end is Saturday. */
    assert_int_equal(ebb__cron_parse("5/20 0 * * 1/2", 0, &a, NULL), 0);
    assert_true(a.minute == ((1ull << 5) | (1ull << 25) | (1ull << 45)));
    assert_int_equal(a.dow, (1u << 1) | (1u << 3) | (1u << 5));
    /* The day rule: Vixie counts "*" and "*\/2" as unrestricted, the exact
     * rule only "*". */
    assert_int_equal(ebb__cron_parse("0 0 */2 * MON", 0, &a, NULL), 0);
    assert_int_equal(ebb__cron_parse("0 0 */2 * MON", EBB__CRON_STAR_EXACT, &b,
                                     NULL),
                     0);
    assert_true(a.dom_star);
    assert_false(b.dom_star);
    assert_false(a.dow_star);
}

static void parses_macros(void **state)
{
    (void)state;
    static const struct {
        const char *macro, *same_as;
    } cases[] = {
        {"@yearly", "0 0 1 1 *"},   {"@annually", "0 0 1 1 *"},
        {"@monthly", "0 0 1 * *"},  {"@weekly", "0 0 * * 0"},
        {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
        {"@hourly", "0 * * * *"},   {"  @daily  ", "0 0 * * *"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        struct ebb__cron a, b;
        assert_int_equal(ebb__cron_parse(cases[i].macro, 0, &a, NULL), 0);
        assert_int_equal(ebb__cron_parse(cases[i].same_as, 0, &b, NULL), 0);
        assert_memory_equal(&a, &b, sizeof(a));
    }
}

static void rejects_with_field(void **state)
{
    (void)state;
    static const struct {
        const char *expr;
        int field;
        size_t at, len;
        const char *msg;
    } cases[] = {
        {"0 24 * * *", 2, 2, 2, "field 2 (hour) \"24\": 24 is out of range 0-23"},
        {"0 0 0 * *", 3, 4, 1, "field 3 (day of month) \"0\": 0 is out of range 1-31"},
        {"0 0 * 13 *", 4, 6, 2, "field 4 (month) \"13\": 13 is out of range 1-12"},
        {"0 0 * * 8", 5, 8, 1, "field 5 (day of week) \"8\": 8 is out of range 0-7"},
        {"0 0 * FOO *", 4, 6, 3, "unknown name \"FOO\" (JAN-DEC or 1-12)"},
        {"0 0 * * MONDAY", 5, 8, 6, "unknown name \"MONDAY\" (SUN-SAT or 0-7)"},
        {"MON 0 * * *", 1, 0, 3, "\"MON\" is not a number (0-59)"},
        {"5-1 * * * *", 1, 0, 3, "range 5-1 goes backwards"},
        {"*/0 * * * *", 1, 0, 3, "step 0 is out of range 1-59"},
        {"*/x * * * *", 1, 0, 3, "a step must be a number"},
        {"1,,2 * * * *", 1, 0, 4, "empty item in a list"},
        {"1, * * * *", 1, 0, 2, "empty item in a list"},
        {"? * * * *", 1, 0, 1, "\"?\" is not cron syntax here; write *"},
        {"0 0 L * *", 3, 4, 1, "\"L\" is not a number (1-31)"},
        {"0 0 * * 5#3", 5, 8, 3, "unexpected \"#\""},
        {"CRON_TZ=UTC 0 0 * * *", 0, 0, 11, "a time zone is not part of"},
        {"@every 1h", 0, 0, 6, "unknown macro \"@every\""},
        {"1-2-3 * * * *", 1, 0, 5, "unexpected \"-\""},
        {"5- * * * *", 1, 0, 2, "a number is missing"},
        {"0 0 * * -1", 5, 8, 2, "expected a number or a name, found \"-\""},
        {"0 0 * * * *", 0, 10, 1, "more than 5 fields"},
        {"0 0 * *", 0, 0, 7, "4 fields, expected 5"},
        {"", 0, 0, 0, "0 fields, expected 5"},
        {"@reboot", 0, 0, 7, "unknown macro \"@reboot\""},
        {"@daily 5", 0, 7, 1, "unexpected text after @daily"},
        {"00000 * * * *", 1, 0, 5, "number too long"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        struct ebb__cron c;
        struct ebb__cron_error err;
        assert_int_equal(ebb__cron_parse(cases[i].expr, 0, &c, &err),
                         EBB_EINVAL);
        if (strstr(err.msg, cases[i].msg) == NULL)
            fail_msg("%s: %s", cases[i].expr, err.msg);
        assert_int_equal(err.field, cases[i].field);
        assert_int_equal(err.at, cases[i].at);
        assert_int_equal(err.len, cases[i].len);
    }
}

static void never_fires(void **state)
{
    (void)state;
    struct ebb__cron c;
    ebb_time_ms t;
    assert_int_equal(ebb__cron_parse("0 0 30 2 *", 0, &c, NULL), 0);
    assert_int_equal(ebb__cron_next(&c, NULL, 0, &t), EBB_ENOTFOUND);
    assert_int_equal(ebb__cron_parse("0 0 31 4,6,9,11 *", 0, &c, NULL), 0);
    assert_int_equal(ebb__cron_next(&c, NULL, 0, &t), EBB_ENOTFOUND);
    /* With both day fields restricted, a Sunday in February still fires. */
    assert_int_equal(ebb__cron_parse("0 0 31 2 0", 0, &c, NULL), 0);
    assert_int_equal(ebb__cron_next(&c, NULL, 0, &t), 0);
    char buf[48];
    assert_string_equal(ebb_format_time(t, buf, sizeof(buf)),
                        "1970-02-01T00:00:00Z");
    /* February 29 on a Monday, from 2024: the next is 2044. */
    assert_int_equal(ebb__cron_parse("0 0 29 2 *", 0, &c, NULL), 0);
    ebb_time_ms from;
    assert_int_equal(ebb_parse_time("2096-03-01T00:00:00Z", &from), 0);
    assert_int_equal(ebb__cron_next(&c, NULL, from, &t), 0);
    assert_string_equal(ebb_format_time(t, buf, sizeof(buf)),
                        "2104-02-29T00:00:00Z"); /* 2100 is no leap year */
    /* Not past the year 9999. */
    assert_int_equal(ebb_parse_time("9999-12-31T23:59:00Z", &from), 0);
    assert_int_equal(ebb__cron_parse("* * * * *", 0, &c, NULL), 0);
    assert_int_equal(ebb__cron_next(&c, NULL, from, &t), EBB_ENOTFOUND);
}

/* Sub-minute parts of `after` are dropped; fires are strictly after it. */
static void strictly_after(void **state)
{
    (void)state;
    struct ebb__cron c;
    assert_int_equal(ebb__cron_parse("*/5 * * * *", 0, &c, NULL), 0);
    ebb_time_ms t0, t;
    assert_int_equal(ebb_parse_time("2026-01-01T10:05:00Z", &t0), 0);
    assert_int_equal(ebb__cron_next(&c, NULL, t0, &t), 0);
    assert_int_equal(t - t0, 5 * EBB_MS_PER_MINUTE);
    assert_int_equal(ebb__cron_next(&c, NULL, t0 - 1, &t), 0);
    assert_int_equal(t, t0);
    assert_int_equal(ebb__cron_next(&c, NULL, t0 + 59999, &t), 0);
    assert_int_equal(t - t0, 5 * EBB_MS_PER_MINUTE);
}

/* ---- daylight-saving time against a simulation of Vixie cron ------------ */

/* Local wall-clock minute of instant t (seconds) per glibc in $TZ. */
static int64_t glibc_local_minute(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    assert_non_null(localtime_r(&tt, &tm));
    return ebb_days_from_civil(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday) *
               1440 +
           tm.tm_hour * 60 + tm.tm_min;
}

static int local_matches(const struct ebb__cron *c, int64_t L)
{
    int64_t day = L >= 0 ? L / 1440 : (L - 1439) / 1440;
    int mod = (int)(L - day * 1440);
    int64_t y;
    int m, d;
    ebb_civil_from_days(day, &y, &m, &d);
    int wday = (int)(((day % 7) + 7 + 4) % 7);
    return ebb__cron_matches(c, m, d, wday, mod / 60, mod % 60);
}

/* Vixie cron's main loop (cron.c: small / medium / negative / large clock
 * changes, virtualTime), run minute by minute over (from, to]. Fires are
 * collected as instants; several runs at one instant count once. */
static size_t vixie_simulate(const struct ebb__cron *c, int64_t from,
                             int64_t to, int64_t *out, size_t max)
{
    size_t n = 0;
    int64_t virt = glibc_local_minute(from);
    for (int64_t t = from + 60; t <= to; t += 60) {
        int64_t L = glibc_local_minute(t);
        int64_t diff = L - virt;
        int fire = 0;
        if (diff > 0 && diff < 5) { /* every minute, all jobs */
            for (int64_t v = virt + 1; v <= L; v++)
                fire |= local_matches(c, v);
            virt = L;
        } else if (diff >= 5 && diff < 180) { /* forward: DST begins */
            fire = c->wildcard && local_matches(c, L);
            for (int64_t v = virt + 1; v <= L; v++)
                fire |= !c->wildcard && local_matches(c, v);
            virt = L;
        } else if (diff <= 0 && diff > -180) { /* back: DST ends */
            fire = c->wildcard && local_matches(c, L);
        } else {
            fire = local_matches(c, L);
            virt = L;
        }
        if (fire) {
            assert_true(n < max);
            out[n++] = t;
        }
    }
    return n;
}

static void dst_matches_vixie(void **state)
{
    (void)state;
    static const char *const zones[] = {
        "America/New_York", "Europe/London", "Australia/Lord_Howe",
        "America/Sao_Paulo", "Asia/Shanghai", "Pacific/Chatham",
    };
    static const char *const exprs[] = {
        "30 2 * * *", "0,30 2 * * *", "*/15 * * * *", "0 * * * *",
        "30 1 * * *", "15 1,2 * * *", "0 0 * * *", "*/20 2 * * *",
        "45 1 * * SUN", "@daily", "0 3 * * *", "59 1 * * *",
    };
    /* Years whose transitions the zone files list, and ones only the
     * footer rule gives (2030, 2090). */
    static const int years[] = {2012, 2018, 2024, 2030, 2090};
    int64_t *want = malloc(20000 * sizeof(*want));
    assert_non_null(want);
    size_t transitions = 0;
    for (size_t z = 0; z < ARRAY_LEN(zones); z++) {
        char env[64];
        snprintf(env, sizeof(env), ":%s", zones[z]);
        setenv("TZ", env, 1);
        tzset();
        struct ebb__tz *tz = zone_for(zones[z]);
        for (size_t y = 0; y < ARRAY_LEN(years); y++) {
            /* Find the year's changes of offset, hour by hour (glibc). */
            int64_t start = ebb_days_from_civil(years[y], 1, 1) * 86400;
            int64_t prev = glibc_local_minute(start) - start / 60;
            for (int64_t h = start + 3600; h < start + 366 * 86400; h += 3600) {
                int64_t off = glibc_local_minute(h) - h / 60;
                if (off == prev)
                    continue;
                prev = off;
                transitions++;
                int64_t from = h - 2 * 86400, to = h + 2 * 86400;
                for (size_t e = 0; e < ARRAY_LEN(exprs); e++) {
                    struct ebb__cron c;
                    assert_int_equal(ebb__cron_parse(exprs[e], 0, &c, NULL), 0);
                    size_t n = vixie_simulate(&c, from, to, want, 20000);
                    size_t k = 0;
                    ebb_time_ms t = from * 1000, got;
                    while (ebb__cron_next(&c, tz, t, &got) == 0 &&
                           got <= to * 1000) {
                        if (k >= n || got != want[k] * 1000) {
                            char g[48], w[48] = "(none)";
                            fmt(got, g, sizeof(g));
                            if (k < n)
                                fmt(want[k] * 1000, w, sizeof(w));
                            fail_msg("%s in %s near %lld: fire %zu is %s, "
                                     "Vixie cron's is %s",
                                     exprs[e], zones[z], (long long)h, k, g, w);
                        }
                        k++;
                        t = got;
                    }
                    if (k != n)
                        fail_msg("%s in %s near %lld: %zu fires, Vixie cron "
                                 "has %zu",
                                 exprs[e], zones[z], (long long)h, k, n);
                }
            }
        }
        ebb__tz_free(tz);
    }
    free(want);
    unsetenv("TZ");
    /* 4 zones change twice a year in 5 years; Shanghai never since 1991. */
    assert_true(transitions >= 38);
}

/* The examples docs/cron.md gives for daylight-saving time (New York). */
static void dst_documented_examples(void **state)
{
    (void)state;
    struct ebb__tz *tz = zone_for("America/New_York");
    static const struct {
        const char *expr, *after, *fires[3];
    } cases[] = {
        /* 2026-03-08 02:00-02:59 do not happen: a fixed-time expression
         * fires at the jump, 03:00 EDT. */
        {"30 2 * * *", "2026-03-07T12:00:00Z",
         {"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z",
          "2026-03-10T06:30:00Z"}},
        /* A wildcard one skips them: 01:00 EST, then 03:00 EDT. */
        {"0 * * * *", "2026-03-08T05:30:00Z",
         {"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z",
          "2026-03-08T08:00:00Z"}},
        /* 2026-11-01 01:00-01:59 happen twice: fixed-time fires the first
         * time (EDT) only. */
        {"30 1 * * *", "2026-10-31T12:00:00Z",
         {"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z",
          "2026-11-03T06:30:00Z"}},
        /* Wildcard: both 01:00s. */
        {"0 * * * *", "2026-11-01T04:30:00Z",
         {"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z",
          "2026-11-01T07:00:00Z"}},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        struct ebb__cron c;
        assert_int_equal(ebb__cron_parse(cases[i].expr, 0, &c, NULL), 0);
        ebb_time_ms t;
        assert_int_equal(ebb_parse_time(cases[i].after, &t), 0);
        for (size_t k = 0; k < 3; k++) {
            ebb_time_ms want;
            assert_int_equal(ebb__cron_next(&c, tz, t, &t), 0);
            assert_int_equal(ebb_parse_time(cases[i].fires[k], &want), 0);
            if (t != want) {
                char g[48];
                fail_msg("%s: fire %zu is %s, want %s", cases[i].expr, k,
                         ebb_format_time(t, g, sizeof(g)), cases[i].fires[k]);
            }
        }
    }
    ebb__tz_free(tz);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(robfig_activation),
        cmocka_unit_test(robfig_next),
        cmocka_unit_test(robfig_errors),
        cmocka_unit_test(croniter_vectors),
        cmocka_unit_test(every_difference_used),
        cmocka_unit_test(parses_syntax),
        cmocka_unit_test(parses_macros),
        cmocka_unit_test(rejects_with_field),
        cmocka_unit_test(never_fires),
        cmocka_unit_test(strictly_after),
        cmocka_unit_test(dst_matches_vixie),
        cmocka_unit_test(dst_documented_examples),
    };
    return cmocka_run_group_tests(tests, setup_diffs, teardown_diffs);
}
