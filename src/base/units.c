
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <ebb/units.h>

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int fail(const char **why, const char *reason)
{
    if (why != NULL)
        *why = reason;
    return EBB_EINVAL;
}

/* Reads a run of decimal digits into *out. Returns the number of digits
 * read, or -1 when the value does not fit in int64. */
static int read_uint(const char **p, int64_t *out)
{
    int64_t v = 0;
    int n = 0;
    while (is_digit(**p)) {
        int digit = **p - '0';
        if (v > (INT64_MAX - digit) / 10)
            return -1;
        v = v * 10 + digit;
        (*p)++;
        n++;
    }
    *out = v;
    return n;
}

/* ---- durations ---------------------------------------------------------- */

/* Ranked largest first; "ms" before "m" matters only for lookup by name. */
static const struct {
    const char *name;
    int64_t ms;
} dur_units[] = {
    {"d", EBB_MS_PER_DAY},    {"h", EBB_MS_PER_HOUR},
    {"m", EBB_MS_PER_MINUTE}, {"s", EBB_MS_PER_SECOND},
    {"ms", 1},
};
#define N_DUR_UNITS (sizeof(dur_units) / sizeof(dur_units[0]))

static int find_dur_unit(const char *name, size_t len)
{
    for (size_t i = 0; i < N_DUR_UNITS; i++) {
        if (strlen(dur_units[i].name) == len &&
            memcmp(dur_units[i].name, name, len) == 0)
            return (int)i;
    }
    return -1;
}

int ebb_parse_duration_why(const char *s, ebb_dur_ms *out, const char **why)
{
    static const char units_hint[] = "no unit; use d, h, m, s or ms";
    if (why != NULL)
        *why = NULL;
    if (s == NULL || *s == '\0')
        return fail(why, "empty");
    if (*s == '-')
        return fail(why, "negative");

    const char *p = s;
    int64_t total = 0;
    int last_rank = -1;
    while (*p != '\0') {
        if (!is_digit(*p))
            return fail(why, NULL);
        int64_t whole;
        if (read_uint(&p, &whole) < 0)
            return fail(why, "too large");

        /* The fraction is kept as digits/10^n with trailing zeros dropped.
         * No fraction with more than 10 significant decimals is a whole
         * number of milliseconds of any unit (a day is 2^10 * 3^3 * 5^5 ms),
         * and 10 keeps digits * unit within int64 (10^10 * 8.64e7 < 2^63). */
        int64_t frac = 0, denom = 1;
        if (*p == '.') {
            p++;
            if (!is_digit(*p))
                return fail(why, "expected digits after '.'");
            const char *fstart = p;
            while (is_digit(*p))
                p++;
            const char *fend = p;
            while (fend > fstart && fend[-1] == '0')
                fend--;
            if (fend - fstart > 10)
                return fail(why, "finer than a millisecond");
            for (const char *q = fstart; q < fend; q++) {
                frac = frac * 10 + (*q - '0');
                denom *= 10;
            }
        }

        const char *ustart = p;
        while (is_alpha(*p))
            p++;
        size_t ulen = (size_t)(p - ustart);
        if (ulen == 0) {
            if (*p == '\0')
                return fail(why, units_hint);
            if (*p == ' ') {
                const char *q = p;
                while (*q == ' ')
                    q++;
                const char *w = q;
                while (is_alpha(*w))
                    w++;
                if (w > q && find_dur_unit(q, (size_t)(w - q)) >= 0)
                    return fail(why, "no space allowed before the unit");
                return fail(why, "unknown unit; use d, h, m, s or ms");
            }
            return fail(why, NULL);
        }
        int rank = find_dur_unit(ustart, ulen);
        if (rank < 0)
            return fail(why, "unknown unit; use d, h, m, s or ms");
        if (rank <= last_rank)
            return fail(why, "units must go from largest to smallest, "
                             "each once, as in 1h30m");
        last_rank = rank;

        int64_t unit = dur_units[rank].ms;
        if (whole > (INT64_MAX - total) / unit)
            return fail(why, "too large");
        total += whole * unit;
        if (frac != 0) {
            int64_t scaled = frac * unit;
            if (scaled % denom != 0)
                return fail(why, "finer than a millisecond");
            if (scaled / denom > INT64_MAX - total)
                return fail(why, "too large");
            total += scaled / denom;
        }
    }
    if (total > EBB_DURATION_MAX)
        return fail(why, "longer than 100 years (36525d)");
    *out = total;
    return 0;
}

int ebb_parse_duration(const char *s, ebb_dur_ms *out)
{
    return ebb_parse_duration_why(s, out, NULL);
}

const char *ebb_format_duration(ebb_dur_ms d, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    buf[0] = '\0';
    /* Negate in unsigned arithmetic so INT64_MIN works too. */
    uint64_t left = d < 0 ? 0 - (uint64_t)d : (uint64_t)d;
    size_t at = 0;
    if (d < 0) {
        int n = snprintf(buf, size, "-");
        at = n > 0 ? (size_t)n : 0;
    }
    if (left == 0) {
        snprintf(buf + at, size - at, "0s");
        return buf;
    }
    for (size_t i = 0; i < N_DUR_UNITS && left > 0; i++) {
        uint64_t unit = (uint64_t)dur_units[i].ms;
        uint64_t count = left / unit;
        left %= unit;
        if (count == 0)
            continue;
        if (at >= size)
            break;
        int n = snprintf(buf + at, size - at, "%" PRIu64 "%s", count,
                         dur_units[i].name);
        if (n < 0)
            break;
        at += (size_t)n;
    }
    return buf;
}

/* ---- money -------------------------------------------------------------- */

int ebb_parse_money_why(const char *s, struct ebb_money *out,
                         const char **why)
{
    if (why != NULL)
        *why = NULL;
    if (s == NULL || *s == '\0')
        return fail(why, "empty");
    if (*s == '-')
        return fail(why, "negative");
    const char *p = s;
    if (!is_digit(*p))
        return fail(why, NULL);
    int64_t whole;
    if (read_uint(&p, &whole) < 0 || whole > INT64_MAX / EBB_MICROS_PER_UNIT)
        return fail(why, "too large");
    int64_t micros = 0;
    if (*p == '.') {
        p++;
        int64_t scale = EBB_MICROS_PER_UNIT;
        int digits = 0;
        while (is_digit(*p)) {
            digits++;
            if (digits > 6)
                return fail(why, "more than 6 decimals");
            scale /= 10;
            micros += (*p - '0') * scale;
            p++;
        }
        if (digits == 0)
            return fail(why, "expected digits after '.'");
    }
    int64_t amount = whole * EBB_MICROS_PER_UNIT;
    if (micros > INT64_MAX - amount)
        return fail(why, "too large");
    amount += micros;
    if (amount > EBB_MONEY_MAX)
        return fail(why, "more than 1000000000, the largest amount ebb takes");

    if (*p == '\0')
        return fail(why, "no currency; add a code such as USD");
    if (p[0] >= 'A' && p[0] <= 'Z' && p[1] >= 'A' && p[1] <= 'Z' &&
        p[2] >= 'A' && p[2] <= 'Z' && p[3] == '\0')
        return fail(why, "put a space between the number and the currency");
    if (*p != ' ')
        return fail(why, NULL);
    p++;
    for (int i = 0; i < 3; i++) {
        if (p[i] < 'A' || p[i] > 'Z')
            return fail(why, "the currency must be a 3-letter upper-case "
                             "code such as USD");
    }
    if (p[3] != '\0')
        return fail(why, "the currency must be a 3-letter upper-case code "
                         "such as USD");
    out->amount = amount;
    memcpy(out->currency, p, 3);
    out->currency[3] = '\0';
    return 0;
}

int ebb_parse_money(const char *s, struct ebb_money *out)
{
    return ebb_parse_money_why(s, out, NULL);
}

const char *ebb_format_money(ebb_micros amount, const char *currency,
                              char *buf, size_t size)
{
    if (size == 0)
        return buf;
    uint64_t mag = amount < 0 ? 0 - (uint64_t)amount : (uint64_t)amount;
    uint64_t units = mag / (uint64_t)EBB_MICROS_PER_UNIT;
    uint64_t frac = mag % (uint64_t)EBB_MICROS_PER_UNIT;
    /* Six digits, then drop trailing zeros but keep at least two. */
    char digits[8];
    snprintf(digits, sizeof(digits), "%06" PRIu64, frac);
    int keep = 6;
    while (keep > 2 && digits[keep - 1] == '0')
        keep--;
    int has_cur = currency != NULL && currency[0] != '\0';
    snprintf(buf, size, "%s%" PRIu64 ".%.*s%s%s", amount < 0 ? "-" : "",
             units, keep, digits, has_cur ? " " : "",
             has_cur ? currency : "");
    return buf;
}

/* ---- times -------------------------------------------------------------- */

/* Howard Hinnant's days_from_civil: exact for the proleptic Gregorian
 * calendar, no tables, no time zone database. */
int64_t ebb_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t mp = (m + 9) % 12;
    int64_t doy = (153 * mp + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void ebb_civil_from_days(int64_t days, int64_t *y, int *m, int *d)
{
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    int64_t doe = days - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int days_in_month(int64_t y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return days[m - 1];
}

/* Consumes `c` if it is next. Returns 1 if it was. */
static int eat(const char **p, char c)
{
    if (**p != c)
        return 0;
    (*p)++;
    return 1;
}

/* Reads exactly `n` digits. Returns -1 when they are not there. */
static int fixed(const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit((*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    return v;
}

int ebb_parse_time_why(const char *s, ebb_time_ms *out, const char **why)
{
    static const char shape[] =
        "expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ";
    if (why != NULL)
        *why = NULL;
    if (s == NULL || *s == '\0')
        return fail(why, "empty");
    const char *p = s;
    int y = fixed(&p, 4);
    if (y < 0 || !eat(&p, '-'))
        return fail(why, shape);
    int mo = fixed(&p, 2);
    if (mo < 0 || !eat(&p, '-'))
        return fail(why, shape);
    int d = fixed(&p, 2);
    if (d < 0)
        return fail(why, shape);
    if (mo < 1 || mo > 12)
        return fail(why, "month out of range");
    if (d < 1 || d > days_in_month(y, mo))
        return fail(why, "day out of range");
    int64_t ms = ebb_days_from_civil(y, mo, d) * EBB_MS_PER_DAY;
    if (*p == '\0') {
        *out = ms;
        return 0;
    }
    if (*p != 'T' && *p != 't' && *p != ' ')
        return fail(why, shape);
    p++;
    int h = fixed(&p, 2);
    if (h < 0 || !eat(&p, ':'))
        return fail(why, shape);
    int mi = fixed(&p, 2);
    if (mi < 0 || !eat(&p, ':'))
        return fail(why, shape);
    int sec = fixed(&p, 2);
    if (sec < 0)
        return fail(why, shape);
    if (h > 23 || mi > 59 || sec > 59)
        return fail(why, "time of day out of range");
    ms += h * EBB_MS_PER_HOUR + mi * EBB_MS_PER_MINUTE +
          sec * EBB_MS_PER_SECOND;
    if (*p == '.') {
        p++;
        if (!is_digit(*p))
            return fail(why, "expected digits after '.'");
        int64_t scale = 100;
        for (; is_digit(*p); p++) {
            ms += (*p - '0') * scale;
            scale /= 10;
        }
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        p++;
        int oh = fixed(&p, 2);
        if (oh < 0 || !eat(&p, ':'))
            return fail(why, "expected an offset such as +08:00");
        int om = fixed(&p, 2);
        if (om < 0)
            return fail(why, "expected an offset such as +08:00");
        if (oh > 23 || om > 59)
            return fail(why, "offset out of range");
        ms -= sign * (oh * EBB_MS_PER_HOUR + om * EBB_MS_PER_MINUTE);
    } else if (*p == '\0') {
        return fail(why, "no time zone; add Z for UTC or an offset such as "
                         "+08:00");
    } else {
        return fail(why, shape);
    }
    if (*p != '\0')
        return fail(why, shape);
    /* An offset can move a time near either end of the calendar outside
     * 0000-9999, which ebb_format_time() could not write back. */
    if (ms < ebb_days_from_civil(0, 1, 1) * EBB_MS_PER_DAY ||
        ms >= ebb_days_from_civil(10000, 1, 1) * EBB_MS_PER_DAY)
        return fail(why, "outside the years 0000 to 9999");
    *out = ms;
    return 0;
}

int ebb_parse_time(const char *s, ebb_time_ms *out)
{
    return ebb_parse_time_why(s, out, NULL);
}

const char *ebb_format_time(ebb_time_ms t, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    /* Floor division, so times before 1970 land on the right day. */
    int64_t days = t / EBB_MS_PER_DAY;
    int64_t rem = t % EBB_MS_PER_DAY;
    if (rem < 0) {
        rem += EBB_MS_PER_DAY;
        days--;
    }
    int64_t y;
    int m, d;
    ebb_civil_from_days(days, &y, &m, &d);
    int h = (int)(rem / EBB_MS_PER_HOUR);
    int mi = (int)(rem / EBB_MS_PER_MINUTE % 60);
    int sec = (int)(rem / EBB_MS_PER_SECOND % 60);
    snprintf(buf, size, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02dZ", y, m, d, h,
             mi, sec);
    return buf;
}

const char *ebb_format_time_exact(ebb_time_ms t, char *buf, size_t size)
{
    ebb_format_time(t, buf, size);
    int ms = (int)(((t % 1000) + 1000) % 1000);
    size_t len = strlen(buf);
    if (ms != 0 && len > 0 && len + 4 < size)
        snprintf(buf + len - 1, size - len + 1, ".%03dZ", ms);
    return buf;
}
