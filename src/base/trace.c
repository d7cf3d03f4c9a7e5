
#include <inttypes.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/trace.h>
#include <ebb/units.h>

#include "base/csv.h"

/* Both kinds of trace are read by one loader: a file is a header and rows
 * of (time, key fields..., value), and the loader groups rows into series
 * by key. A hash table maps a key to its series while reading, so each row
 * costs O(1) however the series are interleaved; the series are sorted by
 * key once at the end, which makes the order deterministic and lets lookups
 * binary-search. */

enum { MAX_KEY = 5 };

struct format {
    const char *what;          /* "a price trace" */
    const char *header;        /* the exact header line */
    const char *const *column; /* its columns */
    size_t n_column;
    size_t n_key;              /* key columns, after the time column */
    unsigned required;         /* bit k: key column k must not be empty */
    /* Parses the last column; returns 0 or EBB_EINVAL with *why. */
    int (*parse_value)(const char *s, int64_t *out, const char **why);
    const char *value_hint;    /* e.g. "a price in USD per hour, like 0.918" */
    /* Where this kind's public structs (struct ebb_price_trace and
     * ebb_price_series, or their availability twins) keep each thing, so
     * that one loader, one free and one find serve both kinds. */
    size_t trace_size, t_path, t_series, t_n_series, t_first_at, t_last_at;
    size_t series_size, s_key[MAX_KEY], s_n, s_at, s_val;
    bool val32;                /* values are int32_t, not int64_t */
};

/* The field at byte offset `off` of `base`, as an lvalue of `type`. */
#define FIELD(base, off, type) (*(type *)(void *)((char *)(base) + (off)))

/* The offsets that both kinds name alike. */
#define LAYOUT(T, S)                                                     \
    .trace_size = sizeof(struct T), .t_path = offsetof(struct T, path),  \
    .t_series = offsetof(struct T, series),                              \
    .t_n_series = offsetof(struct T, n_series),                          \
    .t_first_at = offsetof(struct T, first_at),                          \
    .t_last_at = offsetof(struct T, last_at),                            \
    .series_size = sizeof(struct S), .s_n = offsetof(struct S, n),       \
    .s_at = offsetof(struct S, at)

struct bseries {
    char *key[MAX_KEY];
    uint64_t hash;
    size_t n, cap;
    ebb_time_ms *at;
    int64_t *val;
};

struct builder {
    const struct format *fmt;
    struct bseries *series;
    size_t n_series, cap_series;
    size_t *slot; /* open addressing: series index + 1, 0 = empty */
    size_t n_slot; /* a power of two */
};

static const char *const price_columns[] = {
    "timestamp_utc", "provider", "region", "zone",
    "instance_type", "product", "price_usd_per_hour",
};
static const char *const avail_columns[] = {
    "timestamp_utc", "provider", "zone", "instance_type", "available",
};

/* Sets *why to `reason` ("is negative"); returns EBB_EINVAL. */
static int invalid(const char **why, const char *reason)
{
    *why = reason;
    return EBB_EINVAL;
}

int ebb_parse_decimal_micros(const char *s, ebb_micros *out, const char **why)
{
    const char *p = s;
    if (*p == '-')
        return invalid(why, "is negative");
    if (*p < '0' || *p > '9')
        return invalid(why, "is not a number");
    int64_t whole = 0;
    const int64_t max_whole = INT64_MAX / EBB_MICROS_PER_UNIT;
    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (*p - '0');
        if (whole > max_whole)
            return invalid(why, "is too large");
    }
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return invalid(why, "is not a number");
        int digits = 0;
        bool round_up = false;
        bool dropped = false; /* a non-zero digit past the sixth */
        for (; *p >= '0' && *p <= '9'; p++, digits++) {
            if (digits < 6)
                frac = frac * 10 + (*p - '0');
            else if (digits == 6)
                round_up = *p >= '5';
            dropped = dropped || (digits >= 6 && *p != '0');
        }
        for (; digits < 6; digits++)
            frac *= 10;
        if (round_up)
            frac++;
        /* Rounded to 0, a price of 0.0000004 would be free, and every
         * saving against it 100%: refused rather than silently zeroed. */
        if (whole == 0 && frac == 0 && dropped && *p == '\0')
            return invalid(why, "is below 0.000001, the smallest amount ebb "
                                "keeps (write 0 for free)");
    }
    if (*p != '\0')
        return invalid(why, "is not a number");
    if (whole == max_whole && frac > INT64_MAX % EBB_MICROS_PER_UNIT)
        return invalid(why, "is too large");
    if (whole * EBB_MICROS_PER_UNIT + frac > EBB_MONEY_MAX)
        return invalid(why, "is more than 1000000000, the largest amount ebb "
                            "takes");
    *out = whole * EBB_MICROS_PER_UNIT + frac;
    return 0;
}

static int parse_count(const char *s, int64_t *out, const char **why)
{
    if (*s == '-')
        return invalid(why, "is negative");
    int64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX)
            return invalid(why, "is too large");
    }
    if (p == s || *p != '\0')
        return invalid(why, "is not a whole number");
    *out = v;
    return 0;
}

static const struct format price_format = {
    .what = "a price trace",
    .header = "timestamp_utc,provider,region,zone,instance_type,product,"
              "price_usd_per_hour",
    .column = price_columns,
    .n_column = 7,
    .n_key = 5,
    .required = 1u << 0 | 1u << 3, /* provider, instance_type */
    .parse_value = ebb_parse_decimal_micros,
    .value_hint = "USD per hour, like 0.918",
    LAYOUT(ebb_price_trace, ebb_price_series),
#define P(f) offsetof(struct ebb_price_series, f)
    .s_key = {P(provider), P(region), P(zone), P(instance_type), P(product)},
    .s_val = P(price),
#undef P
};

static const struct format avail_format = {
    .what = "an availability trace",
    .header = "timestamp_utc,provider,zone,instance_type,available",
    .column = avail_columns,
    .n_column = 5,
    .n_key = 3,
    .required = 1u << 0 | 1u << 2, /* provider, instance_type */
    .parse_value = parse_count,
    .value_hint = "instances, a whole number >= 0",
    LAYOUT(ebb_avail_trace, ebb_avail_series),
#define A(f) offsetof(struct ebb_avail_series, f)
    .s_key = {A(provider), A(zone), A(instance_type)},
    .s_val = A(available),
    .val32 = true,
#undef A
};

/* FNV-1a over the key fields, with a separator byte that CSV text of our
 * files never holds so that ("ab", "c") and ("a", "bc") differ. */
static uint64_t hash_key(char *const *key, size_t n)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) {
        for (const unsigned char *p = (const unsigned char *)key[i]; *p; p++) {
            h ^= *p;
            h *= UINT64_C(1099511628211);
        }
        h ^= 0x1f;
        h *= UINT64_C(1099511628211);
    }
    return h;
}

static bool same_key(char *const *a, char *const *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

static void builder_free(struct builder *b)
{
    for (size_t i = 0; i < b->n_series; i++) {
        for (size_t k = 0; k < MAX_KEY; k++)
            free(b->series[i].key[k]);
        free(b->series[i].at);
        free(b->series[i].val);
    }
    free(b->series);
    free(b->slot);
}

static int grow_table(struct builder *b)
{
    size_t n_slot = b->n_slot ? b->n_slot * 2 : 64;
    size_t *slot = calloc(n_slot, sizeof(*slot));
    if (slot == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < b->n_series; i++) {
        size_t j = (size_t)b->series[i].hash & (n_slot - 1);
        while (slot[j] != 0)
            j = (j + 1) & (n_slot - 1);
        slot[j] = i + 1;
    }
    free(b->slot);
    b->slot = slot;
    b->n_slot = n_slot;
    return 0;
}

/* The series for `key`, created (with copies of the key strings) when it is
 * new. Returns NULL when out of memory. */
static struct bseries *intern(struct builder *b, char *const *key)
{
    size_t n_key = b->fmt->n_key;
    uint64_t h = hash_key(key, n_key);
    if (b->n_slot != 0) {
        size_t j = (size_t)h & (b->n_slot - 1);
        while (b->slot[j] != 0) {
            struct bseries *s = &b->series[b->slot[j] - 1];
            if (s->hash == h && same_key(s->key, key, n_key))
                return s;
            j = (j + 1) & (b->n_slot - 1);
        }
    }
    if ((b->n_series + 1) * 2 > b->n_slot && grow_table(b) != 0)
        return NULL;
    if (b->n_series == b->cap_series) {
        size_t cap = b->cap_series ? b->cap_series * 2 : 16;
        struct bseries *bigger = realloc(b->series, cap * sizeof(*bigger));
        if (bigger == NULL)
            return NULL;
        b->series = bigger;
        b->cap_series = cap;
    }
    struct bseries *s = &b->series[b->n_series];
    memset(s, 0, sizeof(*s));
    s->hash = h;
    for (size_t k = 0; k < n_key; k++) {
        s->key[k] = strdup(key[k]);
        if (s->key[k] == NULL) {
            for (size_t i = 0; i < k; i++)
                free(s->key[i]);
            return NULL;
        }
    }
    size_t j = (size_t)h & (b->n_slot - 1);
    while (b->slot[j] != 0)
        j = (j + 1) & (b->n_slot - 1);
    b->slot[j] = ++b->n_series;
    return s;
}

static int append(struct bseries *s, ebb_time_ms at, int64_t val)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        ebb_time_ms *a = realloc(s->at, cap * sizeof(*a));
        if (a == NULL)
            return EBB_ENOMEM;
        s->at = a;
        int64_t *v = realloc(s->val, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        s->val = v;
        s->cap = cap;
    }
    s->at[s->n] = at;
    s->val[s->n] = val;
    s->n++;
    return 0;
}

/* "aws/us-east-1/us-east-1a/p3.2xlarge": the key without the product, which
 * is what people call a series. */
static const char *key_name(const struct format *fmt, char *const *key,
                            char *buf, size_t size)
{
    size_t n = fmt->n_key == 5 ? 4 : fmt->n_key;
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at < size; i++) {
        int w = snprintf(buf + at, size - at, "%s%s", i ? "/" : "", key[i]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
    return buf;
}

static int check_header(const struct format *fmt, struct ebb__csv *c,
                        struct ebb_diag *d)
{
    if (c->n_field != fmt->n_column) {
        ebb_diag_set(d, c->name, c->line,
                      "header has %zu columns, expected %zu; %s starts "
                      "with the line %s",
                      c->n_field, fmt->n_column, fmt->what, fmt->header);
        return EBB_EINVAL;
    }
    for (size_t i = 0; i < fmt->n_column; i++) {
        if (strcmp(c->field[i], fmt->column[i]) != 0) {
            char q[EBB_DIAG_QUOTE_SIZE];
            ebb_diag_set(d, c->name, c->line,
                          "column %zu of the header is %s, expected \"%s\"; "
                          "%s starts with the line %s",
                          i + 1,
                          ebb_diag_quote(c->field[i], strlen(c->field[i]), q,
                                          sizeof(q)),
                          fmt->column[i], fmt->what, fmt->header);
            return EBB_EINVAL;
        }
    }
    return 0;
}

static int read_row(struct builder *b, struct ebb__csv *c,
                    struct ebb_diag *d)
{
    const struct format *fmt = b->fmt;
    char q[EBB_DIAG_QUOTE_SIZE];
    if (c->n_field != fmt->n_column) {
        ebb_diag_set(d, c->name, c->line, "%zu fields, expected %zu (%s)",
                      c->n_field, fmt->n_column, fmt->header);
        return EBB_EINVAL;
    }
    const char *ts = c->field[0];
    ebb_time_ms at;
    const char *why = NULL;
    if (ebb_parse_time_why(ts, &at, &why) != 0) {
        ebb_diag_set(d, c->name, c->line,
                      "timestamp_utc: %s is not a time (%s)",
                      ebb_diag_quote(ts, strlen(ts), q, sizeof(q)),
                      why ? why : "expected YYYY-MM-DDTHH:MM:SSZ");
        return EBB_EINVAL;
    }
    char *const *key = &c->field[1];
    for (size_t k = 0; k < fmt->n_key; k++) {
        if ((fmt->required >> k & 1u) && key[k][0] == '\0') {
            ebb_diag_set(d, c->name, c->line, "%s is empty",
                          fmt->column[k + 1]);
            return EBB_EINVAL;
        }
    }
    const char *vs = c->field[fmt->n_column - 1];
    int64_t val;
    if (fmt->parse_value(vs, &val, &why) != 0) {
        ebb_diag_set(d, c->name, c->line, "%s: %s %s (%s)",
                      fmt->column[fmt->n_column - 1],
                      ebb_diag_quote(vs, strlen(vs), q, sizeof(q)), why,
                      fmt->value_hint);
        return EBB_EINVAL;
    }
    struct bseries *s = intern(b, key);
    if (s == NULL)
        return EBB_ENOMEM;
    if (s->n > 0 && at < s->at[s->n - 1]) {
        char name[512], t1[EBB_TIME_BUFSZ], t0[EBB_TIME_BUFSZ];
        ebb_diag_set(d, c->name, c->line,
                      "row is earlier than the previous row of series %s "
                      "(%s < %s); sort rows by series, then time",
                      key_name(fmt, s->key, name, sizeof(name)),
                      ebb_format_time(at, t1, sizeof(t1)),
                      ebb_format_time(s->at[s->n - 1], t0, sizeof(t0)));
        return EBB_EINVAL;
    }
    if (s->n > 0 && at == s->at[s->n - 1]) {
        s->val[s->n - 1] = val; /* equal times: the later row wins */
        return 0;
    }
    return append(s, at, val);
}

/* Key slots past the format's key count are NULL in every series. */
static int cmp_series(const void *pa, const void *pb)
{
    const struct bseries *a = pa, *b = pb;
    for (size_t k = 0; k < MAX_KEY && a->key[k] != NULL; k++) {
        int c = strcmp(a->key[k], b->key[k]);
        if (c != 0)
            return c;
    }
    return 0;
}

/* Reads `path` into `b`, series sorted by key. */
static int load(struct builder *b, const char *path, struct ebb_diag *d)
{
    struct ebb__csv c;
    int rc = ebb__csv_open(&c, path, d);
    if (rc != 0)
        return rc;
    rc = ebb__csv_next(&c, d);
    if (rc == 0) {
        ebb_diag_set(d, path, 0, "file is empty; %s starts with the line %s",
                      b->fmt->what, b->fmt->header);
        rc = EBB_EINVAL;
    }
    if (rc == 1)
        rc = check_header(b->fmt, &c, d);
    while (rc == 0) {
        rc = ebb__csv_next(&c, d);
        if (rc == 1)
            rc = read_row(b, &c, d);
        else if (rc == 0)
            break;
    }
    if (rc == 0 && b->n_series == 0) {
        ebb_diag_set(d, path, 0, "no rows after the header");
        rc = EBB_EINVAL;
    }
    ebb__csv_close(&c);
    if (rc != 0)
        return rc;
    qsort(b->series, b->n_series, sizeof(*b->series), cmp_series);
    return 0;
}

/* Number of rows at or before t: the row in effect at t is the one before
 * that count, the next change is at that count. */
static size_t rows_upto(const ebb_time_ms *at, size_t n, ebb_time_ms t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (at[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void span(const ebb_time_ms *at, size_t n, ebb_time_ms *first,
                 ebb_time_ms *last)
{
    if (at[0] < *first)
        *first = at[0];
    if (at[n - 1] > *last)
        *last = at[n - 1];
}

/* ---- both kinds, through the format's layout ---- */

static char *series_at(const struct format *fmt, const void *t, size_t i)
{
    return FIELD(t, fmt->t_series, char *) + i * fmt->series_size;
}

static void trace_free(const struct format *fmt, void *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < FIELD(t, fmt->t_n_series, size_t); i++) {
        char *s = series_at(fmt, t, i);
        for (size_t k = 0; k < fmt->n_key; k++)
            free(FIELD(s, fmt->s_key[k], char *));
        free(FIELD(s, fmt->s_at, ebb_time_ms *));
        if (fmt->val32)
            free(FIELD(s, fmt->s_val, int32_t *));
        else
            free(FIELD(s, fmt->s_val, int64_t *));
    }
    free(FIELD(t, fmt->t_series, char *));
    free(FIELD(t, fmt->t_path, char *));
    free(t);
}

/* Moves the builder's series `s` into the public series `dst`, narrowing
 * the values when the kind keeps int32_t (parse_value has checked the
 * range). On failure `s` is left as it was. */
static int publish(const struct format *fmt, struct bseries *s, char *dst)
{
    if (fmt->val32) {
        int32_t *v = malloc(s->n * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        for (size_t j = 0; j < s->n; j++)
            v[j] = (int32_t)s->val[j];
        free(s->val);
        FIELD(dst, fmt->s_val, int32_t *) = v;
    } else {
        FIELD(dst, fmt->s_val, int64_t *) = s->val;
    }
    for (size_t k = 0; k < fmt->n_key; k++)
        FIELD(dst, fmt->s_key[k], char *) = s->key[k];
    FIELD(dst, fmt->s_n, size_t) = s->n;
    FIELD(dst, fmt->s_at, ebb_time_ms *) = s->at;
    memset(s, 0, sizeof(*s));
    return 0;
}

static int trace_load(const struct format *fmt, const char *path, void **out,
                      struct ebb_diag *d)
{
    struct builder b = {.fmt = fmt};
    int rc = load(&b, path, d);
    void *t = rc == 0 ? calloc(1, fmt->trace_size) : NULL;
    if (t != NULL) {
        FIELD(t, fmt->t_path, char *) = strdup(path);
        FIELD(t, fmt->t_series, char *) = calloc(b.n_series, fmt->series_size);
        FIELD(t, fmt->t_first_at, ebb_time_ms) = INT64_MAX;
        FIELD(t, fmt->t_last_at, ebb_time_ms) = INT64_MIN;
    }
    if (rc == 0 && (t == NULL || FIELD(t, fmt->t_path, char *) == NULL ||
                    FIELD(t, fmt->t_series, char *) == NULL))
        rc = EBB_ENOMEM;
    for (size_t i = 0; rc == 0 && i < b.n_series; i++) {
        struct bseries *s = &b.series[i];
        span(s->at, s->n, &FIELD(t, fmt->t_first_at, ebb_time_ms),
             &FIELD(t, fmt->t_last_at, ebb_time_ms));
        rc = publish(fmt, s, series_at(fmt, t, i));
        if (rc == 0)
            FIELD(t, fmt->t_n_series, size_t)++;
    }
    builder_free(&b);
    if (rc != 0) {
        trace_free(fmt, t);
        return rc;
    }
    *out = t;
    return 0;
}

static int cmp_key(const struct format *fmt, const char *s,
                   const char *const *key, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        int c = strcmp(FIELD(s, fmt->s_key[k], char *), key[k]);
        if (c != 0)
            return c;
    }
    return 0;
}

/* The index of the series whose first n key strings are `key` (the first
 * such in key order), or EBB_ENOTFOUND. */
static ssize_t trace_find(const struct format *fmt, const void *t,
                          const char *const *key, size_t n)
{
    size_t lo = 0, n_series = FIELD(t, fmt->t_n_series, size_t);
    size_t hi = n_series;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_key(fmt, series_at(fmt, t, mid), key, n) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n_series && cmp_key(fmt, series_at(fmt, t, lo), key, n) == 0)
        return (ssize_t)lo;
    return EBB_ENOTFOUND;
}

static ebb_time_ms next_change(const ebb_time_ms *at, size_t n, ebb_time_ms t)
{
    size_t i = rows_upto(at, n, t);
    return i < n ? at[i] : INT64_MAX;
}

/* ---- the public functions, price then availability ---- */

int ebb_price_trace_load(const char *path, struct ebb_price_trace **out,
                          struct ebb_diag *d)
{
    void *t;
    int rc = trace_load(&price_format, path, &t, d);
    if (rc == 0)
        *out = t;
    return rc;
}

int ebb_avail_trace_load(const char *path, struct ebb_avail_trace **out,
                          struct ebb_diag *d)
{
    void *t;
    int rc = trace_load(&avail_format, path, &t, d);
    if (rc == 0)
        *out = t;
    return rc;
}

void ebb_price_trace_free(struct ebb_price_trace *t)
{
    trace_free(&price_format, t);
}

void ebb_avail_trace_free(struct ebb_avail_trace *t)
{
    trace_free(&avail_format, t);
}

ssize_t ebb_price_trace_find(const struct ebb_price_trace *t,
                              const char *provider, const char *region,
                              const char *zone, const char *instance_type,
                              const char *product)
{
    const char *key[5] = {provider, region, zone, instance_type, product};
    return trace_find(&price_format, t, key, product != NULL ? 5 : 4);
}

ssize_t ebb_avail_trace_find(const struct ebb_avail_trace *t,
                              const char *provider, const char *zone,
                              const char *instance_type)
{
    const char *key[3] = {provider, zone, instance_type};
    return trace_find(&avail_format, t, key, 3);
}

int ebb_price_series_at(const struct ebb_price_series *s, ebb_time_ms t,
                         ebb_micros *price)
{
    size_t i = rows_upto(s->at, s->n, t);
    if (i == 0)
        return EBB_ENOTFOUND;
    *price = s->price[i - 1];
    return 0;
}

int ebb_avail_series_at(const struct ebb_avail_series *s, ebb_time_ms t,
                         int32_t *available)
{
    size_t i = rows_upto(s->at, s->n, t);
    if (i == 0)
        return EBB_ENOTFOUND;
    *available = s->available[i - 1];
    return 0;
}

ebb_time_ms ebb_price_series_next_change(const struct ebb_price_series *s,
                                          ebb_time_ms t)
{
    return next_change(s->at, s->n, t);
}

ebb_time_ms ebb_avail_series_next_change(const struct ebb_avail_series *s,
                                          ebb_time_ms t)
{
    return next_change(s->at, s->n, t);
}

struct ebb_avail_alignment ebb_avail_trace_align(const struct ebb_avail_trace *a,
                                                 const struct ebb_price_trace *p)
{
    if (a->first_at <= p->last_at && a->last_at >= p->first_at)
        return (struct ebb_avail_alignment){0};
    return (struct ebb_avail_alignment){
        .shifted = 1,
        .start = p->first_at,
        .orig_first = a->first_at,
        .period = a->last_at - a->first_at,
        .end = p->last_at,
    };
}
