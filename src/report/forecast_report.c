/* Forecast reports (see forecast_report.h): series -> forecast -> JSON,
 * and JSON -> table. The forecasting itself is forecast.c's; this file
 * only feeds it histories and lays out what comes back. */
#include "report/forecast_report.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/currency.h"
#include "market/forecast.h"

int ebb__forecast_count_steps(ebb_dur_ms horizon, ebb_dur_ms step, size_t *n,
                              const char **why)
{
    const char *w = NULL;
    if (step <= 0)
        w = "the step must be longer than 0s";
    else if (horizon < step)
        w = "the horizon is shorter than one step";
    else if (horizon / step > EBB__FORECAST_MAX_POINTS)
        w = "gives more than 10000 points (use a longer step or a shorter horizon)";
    if (w != NULL) {
        if (why != NULL)
            *why = w;
        return EBB_EINVAL;
    }
    *n = (size_t)(horizon / step);
    return 0;
}

/* The last point must be a time we can print (years up to 9999), which
 * also keeps origin + k*step far from overflowing. */
#define LATEST_TIME INT64_C(253402300799999) /* 9999-12-31T23:59:59.999Z */

static int check_opts(const struct ebb__forecast_opts *o, struct ebb_diag *d)
{
    if (o->step <= 0 || o->n_steps == 0 || o->n_steps > EBB__FORECAST_MAX_POINTS) {
        ebb_diag_set(d, NULL, 0, "a forecast needs 1 to %d points of a positive step",
                      EBB__FORECAST_MAX_POINTS);
        return EBB_EINVAL;
    }
    if (o->origin < 0 || o->origin > LATEST_TIME ||
        o->step > (LATEST_TIME - o->origin) / (ebb_dur_ms)o->n_steps) {
        ebb_diag_set(d, NULL, 0, "the forecast would reach past the year 9999");
        return EBB_EINVAL;
    }
    return 0;
}

/* Prices go out as decimal numbers; the micro-unit integers are exact, the
 * double nearest to them prints back as the same decimal with
 * JSON_REAL_PRECISION(12) or more. */
static json_t *usd(ebb_micros m)
{
    return json_real((double)m / (double)EBB_MICROS_PER_UNIT);
}

static json_t *time_json(ebb_time_ms t)
{
    char buf[EBB_TIME_BUFSZ];
    return json_string(ebb_format_time(t, buf, sizeof(buf)));
}

struct series_key {
    const char *provider, *region, *zone, *instance_type, *product;
    const char *market; /* NULL: not reported (traces are spot only) */
};

/* Forecasts one series into a JSON object appended to `arr`. `pts` has
 * room for o->n_steps points. A series with nothing before the origin is
 * skipped. Returns 0 or a negative EBB_E* code. */
static int add_series(json_t *arr, const struct series_key *k,
                      const struct ebb__price_history *h,
                      const struct ebb__forecast_opts *o,
                      struct ebb_forecast_point *pts, struct ebb_diag *d)
{
    size_t before = 0; /* rows with at < origin */
    while (before < h->n && h->at[before] < o->origin)
        before++;
    if (before == 0)
        return 0;
    int rc = ebb__forecast_prices(h, o->origin, o->step, o->n_steps, pts);
    if (rc == EBB_ENOTFOUND)
        return 0;
    if (rc != 0) {
        ebb_diag_set(d, NULL, 0, "cannot forecast %s %s %s: %s", k->provider,
                      k->zone, k->instance_type, ebb_strerror(rc));
        return rc;
    }
    json_t *points = json_array();
    json_t *obj = json_object();
    if (points == NULL || obj == NULL)
        goto nomem;
    int bad = 0;
    for (size_t i = 0; i < o->n_steps; i++) {
        json_t *p = json_object();
        if (p == NULL) {
            bad = 1;
            break;
        }
        /* The point's time is ours, not the forecaster's: the contract is
         * origin + k*step, and the tests hold us to it. */
        bad |= json_object_set_new(p, "t", time_json(o->origin + (ebb_time_ms)(i + 1) * o->step));
        bad |= json_object_set_new(p, "p10", usd(pts[i].p10));
        bad |= json_object_set_new(p, "p50", usd(pts[i].p50));
        bad |= json_object_set_new(p, "p90", usd(pts[i].p90));
        bad |= json_array_append_new(points, p);
        if (bad)
            break;
    }
    bad |= json_object_set_new(obj, "provider", json_string(k->provider));
    bad |= json_object_set_new(obj, "region", json_string(k->region));
    bad |= json_object_set_new(obj, "zone", json_string(k->zone));
    bad |= json_object_set_new(obj, "instance_type", json_string(k->instance_type));
    bad |= json_object_set_new(obj, "product", json_string(k->product));
    if (k->market != NULL)
        bad |= json_object_set_new(obj, "market", json_string(k->market));
    bad |= json_object_set_new(obj, "current_price", usd(h->price[before - 1]));
    bad |= json_object_set_new(obj, "current_price_at", time_json(h->at[before - 1]));
    bad |= json_object_set(obj, "points", points);
    if (bad || json_array_append(arr, obj) != 0)
        goto nomem;
    json_decref(points);
    json_decref(obj);
    return 0;
nomem:
    json_decref(points);
    json_decref(obj);
    ebb_diag_set(d, NULL, 0, "out of memory");
    return EBB_ENOMEM;
}

/* Refuses a report that would pass the caller's cap on points, before it
 * is built. */
static int check_total(const struct ebb__forecast_opts *o, size_t n_series,
                       struct ebb_diag *d)
{
    if (o->max_total_points == 0 || n_series <= o->max_total_points / o->n_steps)
        return 0;
    ebb_diag_set(d, NULL, 0,
                  "%zu series of %zu points is more than %zu points in all "
                  "(narrow it with --provider, --type or --zone, or use a "
                  "longer step)", n_series, o->n_steps, o->max_total_points);
    return EBB_EINVAL;
}

static int matches(const char *want, const char *have)
{
    return want == NULL || strcmp(want, have) == 0;
}

int ebb__forecast_report_trace(const struct ebb_price_trace *t,
                               const struct ebb__price_filter *f,
                               const struct ebb__forecast_opts *o,
                               json_t **out, struct ebb_diag *d)
{
    int rc = check_opts(o, d);
    if (rc != 0)
        return rc;
    struct ebb__price_filter all = {0};
    if (f == NULL)
        f = &all;
    size_t n = 0;
    for (size_t i = 0; i < t->n_series; i++) {
        const struct ebb_price_series *s = &t->series[i];
        n += matches(f->provider, s->provider) && matches(f->zone, s->zone) &&
             matches(f->instance_type, s->instance_type);
    }
    rc = check_total(o, n, d);
    if (rc != 0)
        return rc;
    json_t *arr = json_array();
    struct ebb_forecast_point *pts = calloc(o->n_steps, sizeof(*pts));
    rc = arr != NULL && pts != NULL ? 0 : EBB_ENOMEM;
    for (size_t i = 0; rc == 0 && i < t->n_series; i++) {
        const struct ebb_price_series *s = &t->series[i];
        if (!matches(f->provider, s->provider) || !matches(f->zone, s->zone) ||
            !matches(f->instance_type, s->instance_type))
            continue;
        struct series_key k = {s->provider, s->region, s->zone,
                               s->instance_type, s->product, NULL};
        struct ebb__price_history h = {s->at, s->price, s->n};
        rc = add_series(arr, &k, &h, o, pts, d);
    }
    free(pts);
    json_t *doc = rc == 0 ? json_object() : NULL;
    if (doc == NULL || json_object_set_new(doc, "forecasts", arr) != 0) {
        if (rc == 0) {
            rc = EBB_ENOMEM;
            ebb_diag_set(d, NULL, 0, "out of memory");
        }
        json_decref(doc);
        if (doc == NULL)
            json_decref(arr);
        return rc;
    }
    *out = doc;
    return 0;
}

/* ---- from store rows --------------------------------------------------- */

struct ebb__forecast_acc {
    struct ebb__forecast_opts o;
    json_t *arr;
    struct ebb_forecast_point *pts;
    char *key[6]; /* provider, region, zone, type, product, market */
    int have_key;
    ebb_time_ms *at;
    ebb_micros *price;
    size_t n, cap;
    size_t n_series;
};

struct ebb__forecast_acc *ebb__forecast_acc_new(const struct ebb__forecast_opts *o)
{
    struct ebb__forecast_acc *acc = calloc(1, sizeof(*acc));
    if (acc == NULL)
        return NULL;
    acc->o = *o;
    acc->arr = json_array();
    /* Bad options are reported by _add() and _finish(), with words. */
    size_t n = o->n_steps > 0 && o->n_steps <= EBB__FORECAST_MAX_POINTS ? o->n_steps : 1;
    acc->pts = calloc(n, sizeof(*acc->pts));
    if (acc->arr == NULL || acc->pts == NULL) {
        ebb__forecast_acc_free(acc);
        return NULL;
    }
    return acc;
}

void ebb__forecast_acc_free(struct ebb__forecast_acc *acc)
{
    if (acc == NULL)
        return;
    json_decref(acc->arr);
    free(acc->pts);
    for (size_t i = 0; i < 6; i++)
        free(acc->key[i]);
    free(acc->at);
    free(acc->price);
    free(acc);
}

static const char *market_name(enum ebb_market m)
{
    return m == EBB_MARKET_ON_DEMAND ? "on-demand" : "spot";
}

static int flush(struct ebb__forecast_acc *acc, struct ebb_diag *d)
{
    if (!acc->have_key || acc->n == 0)
        return 0;
    int rc = check_total(&acc->o, ++acc->n_series, d);
    if (rc != 0)
        return rc;
    struct series_key k = {acc->key[0], acc->key[1], acc->key[2],
                           acc->key[3], acc->key[4], acc->key[5]};
    struct ebb__price_history h = {acc->at, acc->price, acc->n};
    rc = add_series(acc->arr, &k, &h, &acc->o, acc->pts, d);
    acc->n = 0;
    return rc;
}

int ebb__forecast_acc_add(struct ebb__forecast_acc *acc,
                          const struct ebb__price_row *row,
                          struct ebb_diag *d)
{
    int rc = check_opts(&acc->o, d);
    if (rc != 0)
        return rc;
    const struct ebb_price *p = &row->price;
    const char *key[6] = {row->provider, p->region, p->zone, p->instance_type,
                          p->product, market_name(p->market)};
    int same = acc->have_key;
    for (size_t i = 0; same && i < 6; i++)
        same = strcmp(acc->key[i], key[i] != NULL ? key[i] : "") == 0;
    if (!same) {
        rc = flush(acc, d);
        if (rc != 0)
            return rc;
        for (size_t i = 0; i < 6; i++) {
            free(acc->key[i]);
            acc->key[i] = strdup(key[i] != NULL ? key[i] : "");
            if (acc->key[i] == NULL) {
                acc->have_key = 0;
                ebb_diag_set(d, NULL, 0, "out of memory");
                return EBB_ENOMEM;
            }
        }
        acc->have_key = 1;
    } else if (acc->n > 0 && p->at <= acc->at[acc->n - 1]) {
        ebb_diag_set(d, NULL, 0, "price rows of %s %s %s are out of order",
                      acc->key[0], acc->key[2], acc->key[3]);
        return EBB_EINVAL;
    }
    if (acc->n == acc->cap) {
        size_t cap = acc->cap ? acc->cap * 2 : 64;
        ebb_time_ms *at = realloc(acc->at, cap * sizeof(*at));
        if (at != NULL)
            acc->at = at;
        ebb_micros *price = at != NULL ? realloc(acc->price, cap * sizeof(*price)) : NULL;
        if (price == NULL) {
            ebb_diag_set(d, NULL, 0, "out of memory");
            return EBB_ENOMEM;
        }
        acc->price = price;
        acc->cap = cap;
    }
    acc->at[acc->n] = p->at;
    acc->price[acc->n] = p->price_per_hour;
    acc->n++;
    return 0;
}

int ebb__forecast_acc_finish(struct ebb__forecast_acc *acc, json_t **out,
                             struct ebb_diag *d)
{
    int rc = check_opts(&acc->o, d);
    if (rc == 0)
        rc = flush(acc, d);
    if (rc != 0)
        return rc;
    json_t *doc = json_pack("{s:O}", "forecasts", acc->arr);
    if (doc == NULL) {
        ebb_diag_set(d, NULL, 0, "out of memory");
        return EBB_ENOMEM;
    }
    *out = doc;
    return 0;
}

/* ---- JSON -> table ----------------------------------------------------- */

static ebb_micros micros_of(json_t *v)
{
    return (ebb_micros)llround(json_number_value(v) * (double)EBB_MICROS_PER_UNIT);
}

static const char *str_of(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "";
}

/* Troughs are the runs of equal medians lower than the runs on both sides
 * (or at an end): when the price is lowest, and for how long it has been
 * falling to get there. Of those, the three lowest are shown, in time
 * order, at the run's first point. A flat forecast is one run: one trough,
 * right away. */
#define MAX_TROUGHS 3

static size_t find_troughs(const ebb_micros *p50, size_t n, size_t *out)
{
    size_t n_out = 0;
    size_t start = 0;
    while (start < n) {
        size_t end = start;
        while (end + 1 < n && p50[end + 1] == p50[start])
            end++;
        int lower_left = start == 0 || p50[start - 1] > p50[start];
        int lower_right = end + 1 == n || p50[end + 1] > p50[start];
        if (lower_left && lower_right) {
            if (n_out < MAX_TROUGHS) {
                out[n_out++] = start;
            } else {
                /* Replace the highest kept one if this run is lower. */
                size_t worst = 0;
                for (size_t i = 1; i < n_out; i++)
                    if (p50[out[i]] >= p50[out[worst]])
                        worst = i;
                if (p50[start] < p50[out[worst]]) {
                    for (size_t i = worst; i + 1 < n_out; i++)
                        out[i] = out[i + 1];
                    out[n_out - 1] = start;
                }
            }
        }
        start = end + 1;
    }
    return n_out;
}

#define SPARK_WIDTH 72

/* One column per point up to SPARK_WIDTH points; beyond that each column
 * shows the lowest median of its share of points, so no trough vanishes. */
/* A price per hour, with the four decimals every table gives one. */
static const char *rate_text(ebb_micros v, const char *unit, char *buf, size_t size)
{
    return ebb__format_amount(v, EBB__RATE_DECIMALS, unit, buf, size);
}

static void print_sparkline(FILE *out, const ebb_micros *p50, size_t n)
{
    static const char *const blocks[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                          "\u2585", "\u2586", "\u2587", "\u2588"};
    size_t cols = n < SPARK_WIDTH ? n : SPARK_WIDTH;
    ebb_micros lo = p50[0], hi = p50[0];
    for (size_t i = 1; i < n; i++) {
        lo = p50[i] < lo ? p50[i] : lo;
        hi = p50[i] > hi ? p50[i] : hi;
    }
    fputs("  p50  ", out);
    for (size_t c = 0; c < cols; c++) {
        size_t a = c * n / cols, b = (c + 1) * n / cols;
        ebb_micros v = p50[a];
        for (size_t i = a + 1; i < b; i++)
            v = p50[i] < v ? p50[i] : v;
        int level = hi > lo ? (int)llround(7.0 * (double)(v - lo) / (double)(hi - lo)) : 0;
        fputs(blocks[level], out);
    }
    char a[EBB_MONEY_BUFSZ], b[EBB_MONEY_BUFSZ];
    fprintf(out, "  %s..%s\n", rate_text(lo, NULL, a, sizeof(a)),
            rate_text(hi, "USD/h", b, sizeof(b)));
}

static void print_one(json_t *f, FILE *out)
{
    const char *market = json_string_value(json_object_get(f, "market"));
    fprintf(out, "%s %s %s %s %s%s%s\n", str_of(f, "provider"), str_of(f, "region"),
            str_of(f, "zone"), str_of(f, "instance_type"), str_of(f, "product"),
            market != NULL ? " " : "", market != NULL ? market : "");
    char money[EBB_MONEY_BUFSZ];
    json_t *cur = json_object_get(f, "current_price");
    if (json_is_number(cur))
        fprintf(out, "  now     %s  (since %s)\n",
                rate_text(micros_of(cur), "USD/h", money, sizeof(money)),
                str_of(f, "current_price_at"));
    json_t *points = json_object_get(f, "points");
    size_t n = json_array_size(points);
    ebb_micros *p50 = n > 0 ? calloc(n, sizeof(*p50)) : NULL;
    if (p50 == NULL) {
        fputs("  no forecast points\n", out);
        return;
    }
    for (size_t i = 0; i < n; i++)
        p50[i] = micros_of(json_object_get(json_array_get(points, i), "p50"));
    size_t troughs[MAX_TROUGHS];
    size_t nt = find_troughs(p50, n, troughs);
    for (size_t i = 0; i < nt; i++) {
        json_t *pt = json_array_get(points, troughs[i]);
        char p10[EBB_MONEY_BUFSZ], p90[EBB_MONEY_BUFSZ];
        fprintf(out, "  trough  %s  at %s  (p10..p90 %s..%s)\n",
                rate_text(p50[troughs[i]], "USD/h", money, sizeof(money)),
                str_of(pt, "t"),
                rate_text(micros_of(json_object_get(pt, "p10")), NULL, p10, sizeof(p10)),
                rate_text(micros_of(json_object_get(pt, "p90")), NULL, p90, sizeof(p90)));
    }
    print_sparkline(out, p50, n);
    free(p50);
}

void ebb__forecast_report_print(json_t *doc, FILE *out, const char *empty)
{
    json_t *forecasts = json_object_get(doc, "forecasts");
    if (json_array_size(forecasts) == 0) {
        if (empty != NULL)
            fprintf(out, "%s\n", empty);
        return;
    }
    size_t i;
    json_t *f;
    json_array_foreach(forecasts, i, f) {
        if (i > 0)
            fputc('\n', out);
        print_one(f, out);
    }
}
