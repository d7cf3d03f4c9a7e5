#include "trace.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "units.h"

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
};

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

int ebb__parse_decimal_micros(const char *s, ebb_micros *out, const char **why)
{
    const char *p = s;
    if (*p == '-') {
        *why = "is negative";
        return EBB_EINVAL;
    }
    if (*p < '0' || *p > '9') {
        *why = "is not a number";
        return EBB_EINVAL;
    }
    int64_t whole = 0;
    const int64_t max_whole = INT64_MAX / EBB_MICROS_PER_UNIT;
    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (*p - '0');
        if (whole > max_whole) {
            *why = "is too large";
            return EBB_EINVAL;
        }
    }
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9') {
            *why = "is not a number";
            return EBB_EINVAL;
        }
        int digits = 0;
        bool round_up = false;
        for (; *p >= '0' && *p <= '9'; p++, digits++) {
            if (digits < 6)
                frac = frac * 10 + (*p - '0');
            else if (digits == 6)
                round_up = *p >= '5';
        }
        for (; digits < 6; digits++)
            frac *= 10;
        if (round_up)
            frac++;
    }
    if (*p != '\0') {
        *why = "is not a number";
        return EBB_EINVAL;
    }
    if (whole == max_whole && frac > INT64_MAX % EBB_MICROS_PER_UNIT) {
        *why = "is too large";
        return EBB_EINVAL;
    }
    *out = whole * EBB_MICROS_PER_UNIT + frac;
    return 0;
}

static int parse_price(const char *s, int64_t *out, const char **why)
{
    return ebb__parse_decimal_micros(s, out, why);
}

static int parse_count(const char *s, int64_t *out, const char **why)
{
    if (*s == '-') {
        *why = "is negative";
        return EBB_EINVAL;
    }
    int64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX) {
            *why = "is too large";
            return EBB_EINVAL;
        }
    }
    if (p == s || *p != '\0') {
        *why = "is not a whole number";
        return EBB_EINVAL;
    }
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
    .parse_value = parse_price,
    .value_hint = "USD per hour, like 0.918",
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
                        struct ebb__diag *d)
{
    if (c->n_field != fmt->n_column) {
        ebb__diag_set(d, c->name, c->line,
                      "header has %zu columns, expected %zu; %s starts "
                      "with the line %s",
                      c->n_field, fmt->n_column, fmt->what, fmt->header);
        return EBB_EINVAL;
    }
    for (size_t i = 0; i < fmt->n_column; i++) {
        if (strcmp(c->field[i], fmt->column[i]) != 0) {
            char q[EBB__DIAG_QUOTE_SIZE];
            ebb__diag_set(d, c->name, c->line,
                          "column %zu of the header is %s, expected \"%s\"; "
                          "%s starts with the line %s",
                          i + 1,
                          ebb__diag_quote(c->field[i], strlen(c->field[i]), q,
                                          sizeof(q)),
                          fmt->column[i], fmt->what, fmt->header);
            return EBB_EINVAL;
        }
    }
    return 0;
}

static int read_row(struct builder *b, struct ebb__csv *c,
                    struct ebb__diag *d)
{
    const struct format *fmt = b->fmt;
    char q[EBB__DIAG_QUOTE_SIZE];
    if (c->n_field != fmt->n_column) {
        ebb__diag_set(d, c->name, c->line, "%zu fields, expected %zu (%s)",
                      c->n_field, fmt->n_column, fmt->header);
        return EBB_EINVAL;
    }
    const char *ts = c->field[0];
    ebb_time_ms at;
    const char *why = NULL;
    if (ebb__parse_time_why(ts, &at, &why) != 0) {
        ebb__diag_set(d, c->name, c->line,
                      "timestamp_utc: %s is not a time (%s)",
                      ebb__diag_quote(ts, strlen(ts), q, sizeof(q)),
                      why ? why : "expected YYYY-MM-DDTHH:MM:SSZ");
        return EBB_EINVAL;
    }
    char *const *key = &c->field[1];
    for (size_t k = 0; k < fmt->n_key; k++) {
        if ((fmt->required >> k & 1u) && key[k][0] == '\0') {
            ebb__diag_set(d, c->name, c->line, "%s is empty",
                          fmt->column[k + 1]);
            return EBB_EINVAL;
        }
    }
    const char *vs = c->field[fmt->n_column - 1];
    int64_t val;
    if (fmt->parse_value(vs, &val, &why) != 0) {
        ebb__diag_set(d, c->name, c->line, "%s: %s %s (%s)",
                      fmt->column[fmt->n_column - 1],
                      ebb__diag_quote(vs, strlen(vs), q, sizeof(q)), why,
                      fmt->value_hint);
        return EBB_EINVAL;
    }
    struct bseries *s = intern(b, key);
    if (s == NULL)
        return EBB_ENOMEM;
    if (s->n > 0 && at < s->at[s->n - 1]) {
        char name[512], t1[EBB__TIME_BUFSZ], t0[EBB__TIME_BUFSZ];
        ebb__diag_set(d, c->name, c->line,
                      "row is earlier than the previous row of series %s "
                      "(%s < %s); sort rows by series, then time",
                      key_name(fmt, s->key, name, sizeof(name)),
                      ebb__format_time(at, t1, sizeof(t1)),
                      ebb__format_time(s->at[s->n - 1], t0, sizeof(t0)));
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
static int load(struct builder *b, const char *path, struct ebb__diag *d)
{
    struct ebb__csv c;
    int rc = ebb__csv_open(&c, path, d);
    if (rc != 0)
        return rc;
    rc = ebb__csv_next(&c, d);
    if (rc == 0) {
        ebb__diag_set(d, path, 0, "file is empty; %s starts with the line %s",
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
        ebb__diag_set(d, path, 0, "no rows after the header");
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

/* ---- prices ---- */

int ebb__price_trace_load(const char *path, struct ebb__price_trace **out,
                          struct ebb__diag *d)
{
    struct builder b = {.fmt = &price_format};
    int rc = load(&b, path, d);
    if (rc != 0) {
        builder_free(&b);
        return rc;
    }
    struct ebb__price_trace *t = calloc(1, sizeof(*t));
    if (t == NULL)
        goto nomem;
    t->path = strdup(path);
    t->series = calloc(b.n_series, sizeof(*t->series));
    if (t->path == NULL || t->series == NULL)
        goto nomem;
    t->first_at = INT64_MAX;
    t->last_at = INT64_MIN;
    for (size_t i = 0; i < b.n_series; i++) {
        struct bseries *s = &b.series[i];
        struct ebb__price_series *p = &t->series[i];
        p->provider = s->key[0];
        p->region = s->key[1];
        p->zone = s->key[2];
        p->instance_type = s->key[3];
        p->product = s->key[4];
        p->n = s->n;
        p->at = s->at;
        p->price = s->val;
        memset(s, 0, sizeof(*s));
        t->n_series++;
        span(p->at, p->n, &t->first_at, &t->last_at);
    }
    builder_free(&b);
    *out = t;
    return 0;
nomem:
    ebb__price_trace_free(t);
    builder_free(&b);
    return EBB_ENOMEM;
}

void ebb__price_trace_free(struct ebb__price_trace *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n_series; i++) {
        struct ebb__price_series *s = &t->series[i];
        free(s->provider);
        free(s->region);
        free(s->zone);
        free(s->instance_type);
        free(s->product);
        free(s->at);
        free(s->price);
    }
    free(t->series);
    free(t->path);
    free(t);
}

static int cmp_price_key(const struct ebb__price_series *s,
                         const char *const *key, size_t n)
{
    const char *mine[5] = {s->provider, s->region, s->zone, s->instance_type,
                           s->product};
    for (size_t k = 0; k < n; k++) {
        int c = strcmp(mine[k], key[k]);
        if (c != 0)
            return c;
    }
    return 0;
}

ssize_t ebb__price_trace_find(const struct ebb__price_trace *t,
                              const char *provider, const char *region,
                              const char *zone, const char *instance_type,
                              const char *product)
{
    const char *key[5] = {provider, region, zone, instance_type, product};
    size_t n = product != NULL ? 5 : 4;
    size_t lo = 0, hi = t->n_series;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_price_key(&t->series[mid], key, n) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < t->n_series && cmp_price_key(&t->series[lo], key, n) == 0)
        return (ssize_t)lo;
    return EBB_ENOTFOUND;
}

int ebb__price_series_at(const struct ebb__price_series *s, ebb_time_ms t,
                         ebb_micros *price)
{
    size_t i = rows_upto(s->at, s->n, t);
    if (i == 0)
        return EBB_ENOTFOUND;
    *price = s->price[i - 1];
    return 0;
}

ebb_time_ms ebb__price_series_next_change(const struct ebb__price_series *s,
                                          ebb_time_ms t)
{
    size_t i = rows_upto(s->at, s->n, t);
    return i < s->n ? s->at[i] : INT64_MAX;
}

/* ---- availability ---- */

int ebb__avail_trace_load(const char *path, struct ebb__avail_trace **out,
                          struct ebb__diag *d)
{
    struct builder b = {.fmt = &avail_format};
    int rc = load(&b, path, d);
    if (rc != 0) {
        builder_free(&b);
        return rc;
    }
    struct ebb__avail_trace *t = calloc(1, sizeof(*t));
    if (t == NULL)
        goto nomem;
    t->path = strdup(path);
    t->series = calloc(b.n_series, sizeof(*t->series));
    if (t->path == NULL || t->series == NULL)
        goto nomem;
    t->first_at = INT64_MAX;
    t->last_at = INT64_MIN;
    for (size_t i = 0; i < b.n_series; i++) {
        struct bseries *s = &b.series[i];
        struct ebb__avail_series *a = &t->series[i];
        int32_t *avail = malloc(s->n * sizeof(*avail));
        if (avail == NULL)
            goto nomem;
        for (size_t j = 0; j < s->n; j++)
            avail[j] = (int32_t)s->val[j];
        a->provider = s->key[0];
        a->zone = s->key[1];
        a->instance_type = s->key[2];
        a->n = s->n;
        a->at = s->at;
        a->available = avail;
        free(s->val);
        memset(s, 0, sizeof(*s));
        t->n_series++;
        span(a->at, a->n, &t->first_at, &t->last_at);
    }
    builder_free(&b);
    *out = t;
    return 0;
nomem:
    ebb__avail_trace_free(t);
    builder_free(&b);
    return EBB_ENOMEM;
}

void ebb__avail_trace_free(struct ebb__avail_trace *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n_series; i++) {
        struct ebb__avail_series *s = &t->series[i];
        free(s->provider);
        free(s->zone);
        free(s->instance_type);
        free(s->at);
        free(s->available);
    }
    free(t->series);
    free(t->path);
    free(t);
}

static int cmp_avail_key(const struct ebb__avail_series *s,
                         const char *const *key)
{
    const char *mine[3] = {s->provider, s->zone, s->instance_type};
    for (size_t k = 0; k < 3; k++) {
        int c = strcmp(mine[k], key[k]);
        if (c != 0)
            return c;
    }
    return 0;
}

ssize_t ebb__avail_trace_find(const struct ebb__avail_trace *t,
                              const char *provider, const char *zone,
                              const char *instance_type)
{
    const char *key[3] = {provider, zone, instance_type};
    size_t lo = 0, hi = t->n_series;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_avail_key(&t->series[mid], key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < t->n_series && cmp_avail_key(&t->series[lo], key) == 0)
        return (ssize_t)lo;
    return EBB_ENOTFOUND;
}

int ebb__avail_series_at(const struct ebb__avail_series *s, ebb_time_ms t,
                         int32_t *available)
{
    size_t i = rows_upto(s->at, s->n, t);
    if (i == 0)
        return EBB_ENOTFOUND;
    *available = s->available[i - 1];
    return 0;
}

ebb_time_ms ebb__avail_series_next_change(const struct ebb__avail_series *s,
                                          ebb_time_ms t)
{
    size_t i = rows_upto(s->at, s->n, t);
    return i < s->n ? s->at[i] : INT64_MAX;
}
