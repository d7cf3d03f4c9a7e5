/* POSIX TZ rules, the footer of a TZif file (RFC 8536 section 3.3): they
 * give the transitions of the years after the file's table ends. Debian's
 * tzdata ships "slim" files whose tables stop at the last change of the
 * rules, so every current daylight-saving transition comes from here.
 *
 *   std offset [dst [offset] [,start[/time],end[/time]]]
 *
 * POSIX offsets count west of Greenwich ("EST5" is UTC-5); we store them
 * east of UTC like TZif does.
 */
#include "base/tz.h"

#include <stdlib.h>

#include <ebb/common.h>
#include <ebb/units.h>

#define HOUR 3600

static int digit(char c)
{
    return c >= '0' && c <= '9';
}

static int alpha(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* A zone abbreviation: three or more letters, or <...> of letters, digits,
 * '+' and '-'. Only its shape matters here. */
static int skip_name(const char **p)
{
    const char *s = *p;
    size_t n = 0;
    if (*s == '<') {
        s++;
        while (alpha(*s) || digit(*s) || *s == '+' || *s == '-') {
            s++;
            n++;
        }
        if (*s != '>' || n < 3)
            return -1;
        *p = s + 1;
        return 0;
    }
    while (alpha(*s)) {
        s++;
        n++;
    }
    if (n < 3)
        return -1;
    *p = s;
    return 0;
}

/* An unsigned number of at most `max_digits` digits. */
static int number(const char **p, int max_digits, int *out)
{
    int v = 0, n = 0;
    while (digit(**p) && n < max_digits) {
        v = v * 10 + (**p - '0');
        (*p)++;
        n++;
    }
    if (n == 0 || digit(**p))
        return -1;
    *out = v;
    return 0;
}

/* [+-]hh[:mm[:ss]] with hh at most max_h; returns seconds. */
static int hms(const char **p, int max_h, int32_t *out)
{
    int sign = 1, h, m = 0, s = 0;
    if (**p == '+' || **p == '-') {
        sign = **p == '-' ? -1 : 1;
        (*p)++;
    }
    if (number(p, 3, &h) != 0 || h > max_h)
        return -1;
    if (**p == ':') {
        (*p)++;
        if (number(p, 2, &m) != 0 || m > 59)
            return -1;
        if (**p == ':') {
            (*p)++;
            if (number(p, 2, &s) != 0 || s > 59)
                return -1;
        }
    }
    *out = sign * (h * HOUR + m * 60 + s);
    return 0;
}

static int rule_day(const char **p, struct ebb__tz_rule_day *out)
{
    if (**p == 'J') {
        (*p)++;
        out->kind = 'J';
        return number(p, 3, &out->n) != 0 || out->n < 1 || out->n > 365 ? -1
                                                                         : 0;
    }
    if (**p == 'M') {
        (*p)++;
        out->kind = 'M';
        if (number(p, 2, &out->m) != 0 || out->m < 1 || out->m > 12 ||
            *(*p)++ != '.' || number(p, 1, &out->w) != 0 || out->w < 1 ||
            out->w > 5 || *(*p)++ != '.' || number(p, 1, &out->wd) != 0 ||
            out->wd > 6)
            return -1;
        return 0;
    }
    out->kind = 'n';
    return number(p, 3, &out->n) != 0 || out->n > 365 ? -1 : 0;
}

/* ",date[/time]"; the time defaults to 02:00 and may be -167..167 hours
 * (RFC 8536's extension of POSIX). */
static int rule_part(const char **p, struct ebb__tz_rule_day *day,
                     int32_t *time)
{
    if (*(*p)++ != ',' || rule_day(p, day) != 0)
        return -1;
    *time = 2 * HOUR;
    if (**p == '/') {
        (*p)++;
        return hms(p, 167, time);
    }
    return 0;
}

int ebb__tz_rule_parse(const char *s, struct ebb__tz_rule *out,
                       const char **why)
{
    struct ebb__tz_rule r = {0};
    const char *p = s;
    int32_t off;
    if (skip_name(&p) != 0) {
        *why = "the standard time's name must be 3 or more letters or <...>";
        return EBB_EINVAL;
    }
    if (hms(&p, 24, &off) != 0) {
        *why = "the standard time's offset must be [+-]hh[:mm[:ss]]";
        return EBB_EINVAL;
    }
    r.std_offset = -off;
    if (*p != '\0') {
        if (skip_name(&p) != 0) {
            *why = "the daylight time's name must be 3 or more letters or <...>";
            return EBB_EINVAL;
        }
        r.has_dst = 1;
        r.dst_offset = r.std_offset + HOUR;
        if (*p != ',' && *p != '\0') {
            if (hms(&p, 24, &off) != 0) {
                *why = "the daylight time's offset must be [+-]hh[:mm[:ss]]";
                return EBB_EINVAL;
            }
            r.dst_offset = -off;
        }
        if (*p == '\0') {
            /* No rule: POSIX leaves it to the implementation; like glibc
             * we use the United States' rule. TZif footers always have
             * one. */
            r.start = (struct ebb__tz_rule_day){'M', 0, 3, 2, 0};
            r.end = (struct ebb__tz_rule_day){'M', 0, 11, 1, 0};
            r.start_time = r.end_time = 2 * HOUR;
        } else if (rule_part(&p, &r.start, &r.start_time) != 0 ||
                   rule_part(&p, &r.end, &r.end_time) != 0) {
            *why = "the rule must be ,start[/time],end[/time] with dates Jn, "
                   "n or Mm.w.d";
            return EBB_EINVAL;
        }
    }
    if (*p != '\0') {
        *why = "unexpected text after the rule";
        return EBB_EINVAL;
    }
    *out = r;
    return 0;
}

static int leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days since the epoch of the local date that `day` names in year y. */
static int64_t rule_date(const struct ebb__tz_rule_day *day, int64_t y)
{
    int64_t jan1 = ebb_days_from_civil(y, 1, 1);
    if (day->kind == 'J')
        return jan1 + day->n - 1 + (leap(y) && day->n >= 60);
    if (day->kind == 'n')
        return jan1 + day->n;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t first = ebb_days_from_civil(y, day->m, 1);
    /* 1970-01-01 was a Thursday (weekday 4). */
    int wd_first = (int)(((first % 7) + 7 + 4) % 7);
    int64_t d = (day->wd - wd_first + 7) % 7 + (int64_t)(day->w - 1) * 7;
    int len = mdays[day->m - 1] + (day->m == 2 && leap(y));
    if (d >= len)
        d -= 7;
    return first + d;
}

struct change {
    int64_t at;
    int32_t offset;
};

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* The transitions of years y-1 to y+1, in time order. The start of
 * daylight time is given in standard time and its end in daylight time.
 * When an end and a start fall on the same instant (a zone on daylight
 * time all year, RFC 8536 3.3.1), the end is put first so that daylight
 * time is what remains in effect. */
static void changes_around(const struct ebb__tz_rule *r, int64_t y,
                           struct change out[6])
{
    size_t n = 0;
    for (int64_t yy = y - 1; yy <= y + 1; yy++) {
        out[n++] = (struct change){
            rule_date(&r->end, yy) * 86400 + r->end_time - r->dst_offset,
            r->std_offset};
        out[n++] = (struct change){
            rule_date(&r->start, yy) * 86400 + r->start_time - r->std_offset,
            r->dst_offset};
    }
    /* Insertion sort of six; equal times keep the order above. */
    for (size_t i = 1; i < n; i++) {
        struct change c = out[i];
        size_t j = i;
        for (; j > 0 && out[j - 1].at > c.at; j--)
            out[j] = out[j - 1];
        out[j] = c;
    }
}

void ebb__tz_rule_span(const struct ebb__tz_rule *r, int64_t t,
                       struct ebb__tz_span *out)
{
    if (!r->has_dst) {
        *out = (struct ebb__tz_span){INT64_MIN, INT64_MAX, r->std_offset};
        return;
    }
    int64_t y;
    int m, d;
    ebb_civil_from_days(floor_div(t, 86400), &y, &m, &d);
    struct change c[6];
    changes_around(r, y, c);
    /* A rule time of up to 167 hours can move a transition into the next
     * year, so t may lie outside the three years' transitions: look at
     * the neighbouring years then. */
    if (c[0].at > t)
        changes_around(r, y - 1, c);
    else if (c[5].at <= t)
        changes_around(r, y + 1, c);
    size_t i = 0;
    while (i + 1 < 6 && c[i + 1].at <= t)
        i++;
    out->start = c[i].at;
    out->offset = c[i].offset;
    out->end = i + 1 < 6 ? c[i + 1].at : INT64_MAX;
}
