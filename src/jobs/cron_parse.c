/* Reading cron expressions (see cron.h for the syntax). Every error names
 * the field it is in and where, so that `ebb cron next` and schedule files
 * can point at it. */
#include "jobs/cron.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <ebb/diag.h>

const char *const ebb__cron_field_names[6] = {
    "expression", "minute", "hour", "day of month", "month", "day of week",
};

struct field_def {
    int lo, hi;   /* values accepted */
    int step_hi;  /* the end of "n/s" (the day of week stops at Saturday) */
    const char *const *names; /* names for lo.., or NULL */
};

static const char *const month_names[] = {"JAN", "FEB", "MAR", "APR",
                                          "MAY", "JUN", "JUL", "AUG",
                                          "SEP", "OCT", "NOV", "DEC", NULL};
static const char *const dow_names[] = {"SUN", "MON", "TUE", "WED",
                                        "THU", "FRI", "SAT", NULL};

static const struct field_def fields[5] = {
    {0, 59, 59, NULL},
    {0, 23, 23, NULL},
    {1, 31, 31, NULL},
    {1, 12, 12, month_names},
    {0, 7, 6, dow_names},
};

static const struct {
    const char *name;
    const char *expr;
} macros[] = {
    {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

/* The field being parsed, for messages. */
struct fctx {
    const char *expr;
    size_t at, len; /* the field within expr */
    int field;      /* 1-5 */
    struct ebb__cron_error *err;
};

static int fail(const struct fctx *f, const char *fmt, ...) EBB_PRINTF(2, 3);

static int fail(const struct fctx *f, const char *fmt, ...)
{
    if (f->err == NULL)
        return EBB_EINVAL;
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    char q[EBB_DIAG_QUOTE_SIZE];
    ebb_diag_quote(f->expr + f->at, f->len, q, sizeof(q));
    if (f->field == 0)
        snprintf(f->err->msg, sizeof(f->err->msg), "%s", why);
    else
        snprintf(f->err->msg, sizeof(f->err->msg), "field %d (%s) %s: %s",
                 f->field, ebb__cron_field_names[f->field], q, why);
    f->err->field = f->field;
    f->err->at = f->at;
    f->err->len = f->len;
    return EBB_EINVAL;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int upper(char c)
{
    return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

/* A number or, where the field has them, a three-letter name. Advances
 * *p past it. */
static int value(const struct fctx *f, const struct field_def *def,
                 const char **p, const char *end, int *out)
{
    const char *s = *p;
    if (s < end && is_digit(*s)) {
        int v = 0, n = 0;
        while (s < end && is_digit(*s) && n < 4) {
            v = v * 10 + (*s - '0');
            s++;
            n++;
        }
        if (s < end && is_digit(*s))
            return fail(f, "number too long");
        if (v < def->lo || v > def->hi)
            return fail(f, "%d is out of range %d-%d", v, def->lo, def->hi);
        *p = s;
        *out = v;
        return 0;
    }
    if (s < end && *s == '?')
        return fail(f, "\"?\" is not cron syntax here; write *");
    size_t n = 0;
    while (s + n < end && ((upper(s[n]) >= 'A' && upper(s[n]) <= 'Z')))
        n++;
    if (n == 0 && s == end)
        return fail(f, "a number is missing");
    if (n == 0)
        return fail(f, "expected a number%s, found \"%c\"",
                    def->names != NULL ? " or a name" : "", *s);
    for (size_t i = 0; def->names != NULL && n == 3 && def->names[i]; i++) {
        if (upper(s[0]) == def->names[i][0] && upper(s[1]) == def->names[i][1] &&
            upper(s[2]) == def->names[i][2]) {
            *p = s + 3;
            *out = def->lo + (int)i;
            return 0;
        }
    }
    if (def->names == NULL)
        return fail(f, "\"%.*s\" is not a number (%d-%d)", (int)n, s, def->lo,
                    def->hi);
    return fail(f, "unknown name \"%.*s\" (%s-%s or %d-%d)", (int)n, s,
                def->names[0], def == &fields[3] ? "DEC" : "SAT", def->lo,
                def->hi);
}

/* One item of a comma list: *, n, a-b, each optionally /step. */
static int item(const struct fctx *f, const struct field_def *def,
                const char *s, const char *end, uint64_t *bits)
{
    int lo, hi;
    int single = 0;
    if (s < end && *s == '*') {
        lo = def->lo;
        hi = def->hi;
        s++;
    } else {
        int rc = value(f, def, &s, end, &lo);
        if (rc != 0)
            return rc;
        hi = lo;
        single = 1;
        if (s < end && *s == '-') {
            s++;
            rc = value(f, def, &s, end, &hi);
            if (rc != 0)
                return rc;
            if (hi < lo)
                return fail(f, "range %d-%d goes backwards", lo, hi);
            single = 0;
        }
    }
    int step = 1;
    if (s < end && *s == '/') {
        s++;
        step = 0;
        int n = 0;
        while (s < end && is_digit(*s) && n < 4) {
            step = step * 10 + (*s - '0');
            s++;
            n++;
        }
        if (n == 0 || (s < end && is_digit(*s)))
            return fail(f, "a step must be a number (example: */15)");
        if (step < 1 || step > def->hi)
            return fail(f, "step %d is out of range 1-%d", step, def->hi);
        if (single) /* n/s: from n to the end of the field */
            hi = def->step_hi < lo ? lo : def->step_hi;
    }
    if (s != end)
        return fail(f, "unexpected \"%c\"", *s);
    for (int v = lo; v <= hi; v += step)
        *bits |= UINT64_C(1) << v;
    return 0;
}

static int field(struct fctx *f, const char *s, size_t len, uint64_t *bits)
{
    const struct field_def *def = &fields[f->field - 1];
    const char *end = s + len;
    *bits = 0;
    for (const char *p = s;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma != NULL ? comma : end;
        if (e == p)
            return fail(f, "empty item in a list");
        int rc = item(f, def, p, e, bits);
        if (rc != 0)
            return rc;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Splits the fields first, so that a wrong count (often a seconds field
 * from another cron dialect) is what gets reported, not a value that only
 * looks wrong because the fields are shifted. */
static int parse_fields(const char *expr, const char *text, size_t base,
                        unsigned flags, struct ebb__cron *out,
                        struct ebb__cron_error *err)
{
    struct fctx f = {.expr = expr, .err = err};
    size_t at[6], len[6];
    int n = 0;
    for (const char *p = text;;) {
        while (is_space(*p))
            p++;
        if (*p == '\0')
            break;
        const char *s = p;
        while (*p != '\0' && !is_space(*p))
            p++;
        if (n == 5) {
            f.at = base + (size_t)(s - text);
            f.len = strlen(s);
            while (f.len > 0 && is_space(s[f.len - 1]))
                f.len--;
            return fail(&f, "more than 5 fields (minute hour day-of-month "
                            "month day-of-week; ebb has no seconds field)");
        }
        at[n] = (size_t)(s - text);
        len[n] = (size_t)(p - s);
        n++;
    }
    if (n < 5) {
        f.len = strlen(expr);
        return fail(&f, "%d field%s, expected 5: minute hour day-of-month "
                        "month day-of-week (example: 30 2 * * *)",
                    n, n == 1 ? "" : "s");
    }
    uint64_t bits[5];
    int star[5], exact[5];
    for (int i = 0; i < 5; i++) {
        const char *s = text + at[i];
        f.at = base + at[i];
        f.len = len[i];
        f.field = i + 1;
        int rc = field(&f, s, len[i], &bits[i]);
        if (rc != 0)
            return rc;
        star[i] = s[0] == '*';
        exact[i] = len[i] == 1 && s[0] == '*';
    }
    memset(out, 0, sizeof(*out));
    out->minute = bits[0];
    out->hour = (uint32_t)bits[1];
    out->dom = (uint32_t)bits[2];
    out->month = (uint32_t)bits[3];
    out->dow = (uint32_t)(bits[4] & 0x7f) | (uint32_t)((bits[4] >> 7) & 1);
    int exact_rule = (flags & EBB__CRON_STAR_EXACT) != 0;
    out->dom_star = exact_rule ? exact[2] : star[2];
    out->dow_star = exact_rule ? exact[4] : star[4];
    out->wildcard = star[0] || star[1];
    return 0;
}

int ebb__cron_parse(const char *expr, unsigned flags, struct ebb__cron *out,
                    struct ebb__cron_error *err)
{
    const char *p = expr;
    while (is_space(*p))
        p++;
    if (strncmp(p, "TZ=", 3) == 0 || strncmp(p, "CRON_TZ=", 8) == 0) {
        size_t n = strcspn(p, " \t");
        struct fctx f = {expr, (size_t)(p - expr), n, 0, err};
        return fail(&f, "a time zone is not part of the expression; give it "
                        "separately (timezone: in a schedule, --tz for ebb "
                        "cron next)");
    }
    if (*p != '@')
        return parse_fields(expr, expr, 0, flags, out, err);
    size_t n = 0;
    while (p[n] != '\0' && !is_space(p[n]))
        n++;
    size_t rest = n;
    while (is_space(p[rest]))
        rest++;
    for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++) {
        if (strlen(macros[i].name) != n || memcmp(macros[i].name, p, n) != 0)
            continue;
        struct fctx f = {expr, (size_t)(p - expr) + rest,
                         strlen(p + rest), 0, err};
        if (p[rest] != '\0')
            return fail(&f, "unexpected text after %s", macros[i].name);
        return parse_fields(macros[i].expr, macros[i].expr, 0, flags, out,
                            NULL);
    }
    struct fctx f = {expr, (size_t)(p - expr), n, 0, err};
    char q[EBB_DIAG_QUOTE_SIZE];
    return fail(&f,
                "unknown macro %s (known: @yearly, @annually, @monthly, "
                "@weekly, @daily, @midnight, @hourly)",
                ebb_diag_quote(p, n, q, sizeof(q)));
}
