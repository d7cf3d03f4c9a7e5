/* Metrics (src/report/metrics.c): the rendered text checked line by line against
 * the rules of the Prometheus text exposition format (a small validator
 * below), plus exact figures: escaping, histogram buckets, value
 * formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/metrics.h"

/* ---- a validator ------------------------------------------------------- */

#define MAX_FAMILIES 32

struct family {
    char name[96];
    char type[16];
    int help, samples;
};

struct checked {
    struct family f[MAX_FAMILIES];
    size_t n;
};

static int name_ok(const char *s, size_t len)
{
    if (len == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
        return 0;
    for (size_t i = 1; i < len; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
            return 0;
    return 1;
}

static struct family *find(struct checked *c, const char *name, size_t len)
{
    for (size_t i = 0; i < c->n; i++)
        if (strlen(c->f[i].name) == len && strncmp(c->f[i].name, name, len) == 0)
            return &c->f[i];
    return NULL;
}

/* The family a sample belongs to: its name, or for a histogram the name
 * without _bucket, _sum or _count. */
static struct family *family_of(struct checked *c, const char *name, size_t len)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    struct family *f = find(c, name, len);
    if (f != NULL)
        return f;
    for (size_t i = 0; i < 3; i++) {
        size_t sl = strlen(suffixes[i]);
        if (len > sl && strncmp(name + len - sl, suffixes[i], sl) == 0) {
            f = find(c, name, len - sl);
            if (f != NULL && strcmp(f->type, "histogram") == 0)
                return f;
        }
    }
    return NULL;
}

/* Reads a label set {a="x",b="y"}; returns the end or NULL when malformed.
 * Label values may hold only the escapes \\ \" \n. */
static const char *labels(const char *p, char *le, size_t le_len)
{
    le[0] = '\0';
    if (*p != '{')
        return p;
    p++;
    while (*p != '}') {
        const char *n = p;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        if (p == n || p[0] != '=' || p[1] != '"')
            return NULL;
        int is_le = p - n == 2 && strncmp(n, "le", 2) == 0;
        p += 2;
        size_t k = 0;
        while (*p != '"') {
            if (*p == '\0' || *p == '\n')
                return NULL;
            if (*p == '\\') {
                if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
                    return NULL;
                p++;
            }
            if (is_le && k + 1 < le_len)
                le[k++] = *p;
            p++;
        }
        if (is_le)
            le[k] = '\0';
        p++;
        if (*p == ',')
            p++;
        else if (*p != '}')
            return NULL;
    }
    return p + 1;
}

static int value_ok(const char *s)
{
    if (strcmp(s, "NaN") == 0 || strcmp(s, "+Inf") == 0 || strcmp(s, "-Inf") == 0)
        return 1;
    char *end;
    strtod(s, &end);
    return end != s && *end == '\0';
}

/* Checks every line. Returns NULL, or the first broken rule (in a static
 * buffer). */
static const char *validate(const char *text, struct checked *c)
{
    static char why[600];
#define BROKEN(...) (snprintf(why, sizeof(why), __VA_ARGS__), why)
    memset(c, 0, sizeof(*c));
    if (text[0] == '\0' || text[strlen(text) - 1] != '\n')
        return BROKEN("empty, or no line feed at the end");
    double last_bucket = -1;
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n');
        char buf[512];
        size_t len = (size_t)(eol - line);
        if (len >= sizeof(buf))
            return BROKEN("line too long");
        memcpy(buf, line, len);
        buf[len] = '\0';
        line = eol + 1;
        if (strncmp(buf, "# HELP ", 7) == 0 || strncmp(buf, "# TYPE ", 7) == 0) {
            const char *name = buf + 7, *sp = strchr(name, ' ');
            if (sp == NULL || !name_ok(name, (size_t)(sp - name)))
                return BROKEN("bad metric name: %s", buf);
            struct family *f = find(c, name, (size_t)(sp - name));
            if (f == NULL) {
                if (c->n == MAX_FAMILIES)
                    return BROKEN("too many families");
                f = &c->f[c->n++];
                snprintf(f->name, sizeof(f->name), "%.*s", (int)(sp - name), name);
            }
            if (f->samples)
                return BROKEN("HELP/TYPE of %s after its samples", f->name);
            if (buf[2] == 'H') {
                if (f->help++)
                    return BROKEN("two HELP lines for %s", f->name);
                continue;
            }
            if (f->type[0] != '\0')
                return BROKEN("two TYPE lines for %s", f->name);
            static const char *const types[] = {"counter", "gauge", "histogram",
                                                "summary", "untyped"};
            int known = 0;
            for (size_t i = 0; i < 5; i++)
                known |= strcmp(sp + 1, types[i]) == 0;
            if (!known)
                return BROKEN("unknown type: %s", buf);
            snprintf(f->type, sizeof(f->type), "%s", sp + 1);
            last_bucket = -1;
            continue;
        }
        if (buf[0] == '#')
            return BROKEN("a comment that is neither HELP nor TYPE: %s", buf);
        const char *p = buf;
        while (*p && *p != '{' && *p != ' ')
            p++;
        struct family *f = family_of(c, buf, (size_t)(p - buf));
        if (f == NULL || f->type[0] == '\0')
            return BROKEN("sample without a TYPE: %s", buf);
        size_t n = strlen(f->name);
        if (strcmp(f->type, "counter") == 0 &&
            (n < 6 || strcmp(f->name + n - 6, "_total") != 0))
            return BROKEN("counter %s does not end in _total", f->name);
        char le[32];
        p = labels(p, le, sizeof(le));
        if (p == NULL || *p != ' ' || !value_ok(p + 1))
            return BROKEN("malformed sample: %s", buf);
        if (le[0] != '\0') {
            double v = strtod(p + 1, NULL);
            if (v < last_bucket)
                return BROKEN("buckets not cumulative: %s", buf);
            last_bucket = v;
        }
        f->samples++;
    }
    for (size_t i = 0; i < c->n; i++)
        if (c->f[i].help != 1 || c->f[i].type[0] == '\0')
            return BROKEN("%s lacks HELP or TYPE", c->f[i].name);
    return NULL;
#undef BROKEN
}

static void check_valid(const char *text, struct checked *c)
{
    const char *why = validate(text, c);
    if (why != NULL)
        fail_msg("%s\nin:\n%s", why, text);
}

/* ---- tests ------------------------------------------------------------- */

static void test_full(void **state)
{
    (void)state;
    struct ebb__histogram ckpt, lag;
    assert_int_equal(ebb__histogram_init(&ckpt, ebb__metrics_checkpoint_bounds,
                                         ebb__metrics_checkpoint_n_bounds), 0);
    assert_int_equal(ebb__histogram_init(&lag, ebb__metrics_lag_bounds,
                                         ebb__metrics_lag_n_bounds), 0);
    ebb__histogram_observe(&ckpt, 4.5);
    ebb__histogram_observe(&ckpt, 5);    /* on a bound: in that bucket */
    ebb__histogram_observe(&ckpt, 45);
    ebb__histogram_observe(&ckpt, 7200); /* above every bound */
    ebb__histogram_observe(&lag, 0.0002);
    struct ebb__metrics_jobs jobs[] = {{"running", 3}, {"waiting", 1}};
    struct ebb__metrics_money money[] = {{"USD", 225783600, 263426400},
                                         {"CNY", 1000000, -5}};
    struct ebb__metrics_provider prov[] = {{"aws", 120, 2, 3},
                                           {"we\"ird\\\nname", 1, 0, 0}};
    struct ebb__metrics m = {
        .version = "0.1.0", .start_time = 1790812800.5,
        .jobs = jobs, .n_jobs = 2, .money = money, .n_money = 2,
        .providers = prov, .n_providers = 2,
        .checkpoint_duration = &ckpt, .loop_lag = &lag,
    };
    char *text = ebb__metrics_render(&m);
    assert_non_null(text);
    struct checked c;
    check_valid(text, &c);
    assert_int_equal(c.n, 10);

    static const char *const want[] = {
        "# TYPE ebb_jobs gauge\nebb_jobs{state=\"running\"} 3\n"
        "ebb_jobs{state=\"waiting\"} 1\n",
        "ebb_spend_total{currency=\"USD\"} 225.7836\n",
        "ebb_savings{currency=\"CNY\"} -5e-06\n",
        "ebb_price_polls_total{provider=\"aws\"} 120\n",
        "ebb_price_poll_errors_total{provider=\"aws\"} 2\n",
        "ebb_preemptions_total{provider=\"aws\"} 3\n",
        /* \ " and a line feed escaped */
        "ebb_price_polls_total{provider=\"we\\\"ird\\\\\\nname\"} 1\n",
        "ebb_checkpoint_duration_seconds_bucket{le=\"1\"} 0\n"
        "ebb_checkpoint_duration_seconds_bucket{le=\"5\"} 2\n"
        "ebb_checkpoint_duration_seconds_bucket{le=\"10\"} 2\n"
        "ebb_checkpoint_duration_seconds_bucket{le=\"30\"} 2\n"
        "ebb_checkpoint_duration_seconds_bucket{le=\"60\"} 3\n",
        "ebb_checkpoint_duration_seconds_bucket{le=\"3600\"} 3\n"
        "ebb_checkpoint_duration_seconds_bucket{le=\"+Inf\"} 4\n"
        "ebb_checkpoint_duration_seconds_sum 7254.5\n"
        "ebb_checkpoint_duration_seconds_count 4\n",
        "ebb_event_loop_lag_seconds_bucket{le=\"0.0005\"} 1\n",
        "ebb_event_loop_lag_seconds_count 1\n",
        "ebb_start_time_seconds 1790812800.5\n",
        "ebb_build_info{version=\"0.1.0\"} 1\n",
        "# TYPE ebb_checkpoint_duration_seconds histogram\n",
        "# TYPE ebb_spend_total counter\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(text, want[i]) == NULL)
            fail_msg("missing:\n%s\nin:\n%s", want[i], text);
    free(text);
}

/* Nothing to report yet still renders valid text: families with HELP and
 * TYPE, no samples, histograms left out. */
static void test_empty(void **state)
{
    (void)state;
    struct ebb__metrics m = {.start_time = 0};
    char *text = ebb__metrics_render(&m);
    assert_non_null(text);
    struct checked c;
    check_valid(text, &c);
    assert_null(strstr(text, "ebb_build_info"));
    assert_null(strstr(text, "_bucket"));
    assert_non_null(strstr(text, "# TYPE ebb_jobs gauge\n# HELP ebb_spend_total"));
    free(text);
}

/* The validator itself rejects what the format forbids. */
static void test_validator_rejects(void **state)
{
    (void)state;
    static const char *const bad[][2] = {
        {"x 1\n", "sample without a TYPE"},
        {"# HELP a h\n# TYPE a gauge\na 1\n# TYPE a gauge\n", "after its samples"},
        {"# HELP a h\n# TYPE a gauge\n# TYPE a gauge\n", "two TYPE"},
        {"# HELP a h\n# TYPE a gauge\na{l=\"a\\tb\"} 1\n", "malformed sample"},
        {"# HELP a h\n# TYPE a counter\na 1\n", "does not end in _total"},
        {"# HELP a h\n# TYPE a gauge\na one\n", "malformed sample"},
        {"# HELP a h\n# TYPE a gauge\na 1", "no line feed"},
        {"# TYPE a gauge\na 1\n", "lacks HELP"},
        {"# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
         "h_bucket{le=\"+Inf\"} 1\n", "not cumulative"},
    };
    struct checked c;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *why = validate(bad[i][0], &c);
        if (why == NULL || strstr(why, bad[i][1]) == NULL)
            fail_msg("case %zu: wanted \"%s\", got \"%s\"", i, bad[i][1],
                     why != NULL ? why : "valid");
    }
}

static void test_histogram_init(void **state)
{
    (void)state;
    struct ebb__histogram h;
    static const double down[] = {1, 0.5};
    static const double many[EBB__HISTOGRAM_MAX_BOUNDS + 1] = {0};
    assert_int_equal(ebb__histogram_init(&h, down, 2), EBB_EINVAL);
    assert_int_equal(ebb__histogram_init(&h, many, EBB__HISTOGRAM_MAX_BOUNDS + 1),
                     EBB_EINVAL);
    static const double one[] = {1};
    assert_int_equal(ebb__histogram_init(&h, one, 1), 0);
    ebb__histogram_observe(&h, NAN);
    ebb__histogram_observe(&h, 0.5);
    ebb__histogram_observe(&h, 3);
    assert_int_equal(h.counts[0], 1);
    assert_int_equal(h.counts[1], 1);
    assert_int_equal(h.count, 2); /* NaN is not counted */
    assert_true(h.sum == 3.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_validator_rejects),
        cmocka_unit_test(test_histogram_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
