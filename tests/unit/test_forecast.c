/* Price forecasts and preemption hazard (src/market/forecast.c) on small
 * hand-made histories whose right answer is known. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "market/forecast.h"
#include "market/forecast_impl.h"

#define HOUR EBB_MS_PER_HOUR
#define DAY EBB_MS_PER_DAY
#define USD EBB_MICROS_PER_UNIT
/* 2024-01-01T00:00:00Z, a Monday. */
#define T0 INT64_C(1704067200000)
#define MAXROWS 4096

struct series {
    ebb_time_ms at[MAXROWS];
    ebb_micros price[MAXROWS];
    size_t n;
};

static void add(struct series *s, ebb_time_ms at, ebb_micros price)
{
    assert_true(s->n < MAXROWS);
    s->at[s->n] = at;
    s->price[s->n] = price;
    s->n++;
}

static struct ebb__price_history hist(const struct series *s)
{
    struct ebb__price_history h = {s->at, s->price, s->n};
    return h;
}

static void check_order(const struct ebb_forecast_point *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_true(p[i].p10 <= p[i].p50);
        assert_true(p[i].p50 <= p[i].p90);
        assert_true(p[i].p10 >= 0);
    }
}

/* Daily rows at a constant price for 40 days. */
static void test_flat(void **state)
{
    (void)state;
    static struct series s;
    memset(&s, 0, sizeof s);
    for (int d = 0; d < 40; d++)
        add(&s, T0 + d * DAY + 13 * HOUR, 918000);
    struct ebb__price_history h = hist(&s);
    struct ebb_forecast_point out[168];
    ebb_time_ms origin = T0 + 40 * DAY;
    assert_int_equal(ebb__forecast_prices(&h, origin, HOUR, 168, out), 0);
    for (size_t k = 0; k < 168; k++) {
        assert_int_equal(out[k].at, origin + (ebb_time_ms)(k + 1) * HOUR);
        assert_int_equal(out[k].p50, 918000);
        assert_int_equal(out[k].p10, 918000);
        assert_int_equal(out[k].p90, 918000);
    }
}

/* Flat for weeks with small noise-free steps, then a shift two days ago:
 * the level is the new one. */
static void test_regime_shift(void **state)
{
    (void)state;
    static struct series s;
    memset(&s, 0, sizeof s);
    for (int d = 0; d < 26; d++)
        add(&s, T0 + d * DAY, 2 * USD);
    for (int d = 26; d < 28; d++)
        add(&s, T0 + d * DAY + 5 * HOUR, 3 * USD);
    struct ebb__price_history h = hist(&s);
    struct ebb_forecast_point out[48];
    assert_int_equal(ebb__forecast_prices(&h, T0 + 28 * DAY, HOUR, 48, out),
                     0);
    check_order(out, 48);
    for (size_t k = 0; k < 48; k++)
        assert_int_equal(out[k].p50, 3 * USD);
    /* The history holds one jump: the band admits some movement. */
    assert_true(out[47].p10 < 3 * USD || out[47].p90 > 3 * USD);
}

/* A half-hourly price with a clean daily cycle: low (1.00) from 02:00 to
 * 06:00 UTC, high (2.00) otherwise. The forecast finds the trough. */
static void test_daily_cycle(void **state)
{
    (void)state;
    static struct series s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < 21 * 48; i++) {
        ebb_time_ms t = T0 + (ebb_time_ms)i * 30 * 60 * 1000;
        int hod = (int)((t / HOUR) % 24);
        add(&s, t, (hod >= 2 && hod < 6) ? 1 * USD : 2 * USD);
    }
    struct ebb__price_history h = hist(&s);
    struct ebb_forecast_point out[48];
    /* Just after the last row (23:30): an origin 12 hours later would see
     * the price held at 2.00 through that night's trough hours. */
    ebb_time_ms origin = T0 + 21 * DAY;
    assert_int_equal(ebb__forecast_prices(&h, origin, HOUR, 48, out), 0);
    check_order(out, 48);
    for (size_t k = 0; k < 48; k++) {
        int hod = (int)((out[k].at / HOUR) % 24);
        ebb_micros want = (hod >= 2 && hod < 6) ? 1 * USD : 2 * USD;
        assert_true(llabs(out[k].p50 - want) < USD / 10);
    }
    /* The last value alone would say 2.00 throughout; the trough hour is
     * forecast cheaper than the hour before it. */
    size_t trough = 0;
    for (size_t k = 1; k < 48; k++)
        if (out[k].p50 < out[trough].p50)
            trough = k;
    int hod = (int)((out[trough].at / HOUR) % 24);
    assert_true(hod >= 2 && hod < 6);
}

/* Noisy prices with a random-walk flavour: the band is ordered everywhere
 * and not degenerate. */
static void test_ordered_band(void **state)
{
    (void)state;
    static struct series s;
    memset(&s, 0, sizeof s);
    uint64_t x = 12345;
    ebb_micros p = 2 * USD;
    for (int i = 0; i < 30 * 24; i++) {
        x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        p += (ebb_micros)((x >> 33) % 20001) - 10000;
        if (p < USD / 2)
            p = USD / 2;
        add(&s, T0 + (ebb_time_ms)i * HOUR, p);
    }
    struct ebb__price_history h = hist(&s);
    struct ebb_forecast_point out[200];
    assert_int_equal(ebb__forecast_prices(&h, T0 + 30 * DAY, HOUR, 200, out),
                     0);
    check_order(out, 200);
    assert_true(out[0].p90 > out[0].p10);
    /* The band widens (or at least never narrows) with the horizon. */
    assert_true(out[199].p90 - out[199].p10 >= out[0].p90 - out[0].p10);
    /* Odd steps work too. */
    assert_int_equal(
        ebb__forecast_prices(&h, T0 + 30 * DAY + 17, 7 * 60 * 1000, 50, out),
        0);
    check_order(out, 50);
}

/* Rows at or after the origin change nothing. */
static void test_ignores_future(void **state)
{
    (void)state;
    static struct series a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    ebb_time_ms origin = T0 + 10 * DAY;
    for (int i = 0; i < 10 * 24; i++) {
        ebb_micros p = USD + (i % 7) * 1000 + (i % 24 < 6 ? 50000 : 0);
        add(&a, T0 + (ebb_time_ms)i * HOUR, p);
        add(&b, T0 + (ebb_time_ms)i * HOUR, p);
    }
    add(&b, origin, 9 * USD);
    add(&b, origin + HOUR, 7 * USD);
    struct ebb__price_history ha = hist(&a), hb = hist(&b);
    struct ebb_forecast_point oa[24], ob[24];
    assert_int_equal(ebb__forecast_prices(&ha, origin, HOUR, 24, oa), 0);
    assert_int_equal(ebb__forecast_prices(&hb, origin, HOUR, 24, ob), 0);
    assert_memory_equal(oa, ob, sizeof oa);
}

static void test_errors(void **state)
{
    (void)state;
    ebb_time_ms at[2] = {T0, T0 + HOUR};
    ebb_micros price[2] = {USD, USD};
    struct ebb__price_history h = {at, price, 2};
    struct ebb_forecast_point out[4];
    assert_int_equal(ebb__forecast_prices(&h, T0, HOUR, 4, out),
                     EBB_ENOTFOUND);
    assert_int_equal(ebb__forecast_prices(&h, T0 - DAY, HOUR, 4, out),
                     EBB_ENOTFOUND);
    assert_int_equal(ebb__forecast_prices(&h, T0 + DAY, 0, 4, out),
                     EBB_EINVAL);
    assert_int_equal(ebb__forecast_prices(&h, T0 + DAY, -HOUR, 4, out),
                     EBB_EINVAL);
    assert_int_equal(ebb__forecast_prices(&h, T0 + DAY, HOUR, 0, out),
                     EBB_EINVAL);
    struct ebb__price_history empty = {at, price, 0};
    assert_int_equal(ebb__forecast_prices(&empty, T0 + DAY, HOUR, 4, out),
                     EBB_ENOTFOUND);
    /* One row just before the origin is enough: it holds. */
    assert_int_equal(ebb__forecast_prices(&h, T0 + 1, HOUR, 4, out), 0);
    assert_int_equal(out[3].p50, USD);
    /* A huge step count with a huge step must not overflow. */
    struct ebb_forecast_point one[1];
    assert_int_equal(ebb__forecast_prices(&h, T0 + DAY, INT64_MAX / 4, 1,
                                          one),
                     0);
    assert_int_equal(one[0].p50, USD);
}

static void test_deterministic(void **state)
{
    (void)state;
    static struct series s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < 25 * 24; i++)
        add(&s, T0 + (ebb_time_ms)i * HOUR + 17,
            USD + ((i * 7919) % 13) * 3000 + (i % 24 > 18 ? 20000 : 0));
    struct ebb__price_history h = hist(&s);
    struct ebb_forecast_point a[168], b[168];
    assert_int_equal(ebb__forecast_prices(&h, T0 + 25 * DAY, HOUR, 168, a), 0);
    assert_int_equal(ebb__forecast_prices(&h, T0 + 25 * DAY, HOUR, 168, b), 0);
    assert_memory_equal(a, b, sizeof a);
    check_order(a, 168);
}

/* Hourly prices that flicker around a level: 2.40 half the time, 2.39 or
 * 2.41 a quarter each, independently every hour, for four weeks; the last
 * hour before the origin is 2.41. The level (the median), not the last
 * flick, is the forecast, and it is a price that was in effect. */
static void test_flicker(void **state)
{
    (void)state;
    static struct series s;
    memset(&s, 0, sizeof s);
    uint64_t x = 777;
    int n = 28 * 24;
    for (int i = 0; i < n; i++) {
        x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        unsigned r = (unsigned)(x >> 62);
        ebb_micros p = r == 0 ? 2390000 : (r == 1 ? 2410000 : 2400000);
        if (i == n - 1)
            p = 2410000;
        add(&s, T0 + (ebb_time_ms)i * HOUR, p);
    }
    struct ebb__price_history h = hist(&s);
    struct ebb_forecast_point out[24];
    assert_int_equal(ebb__forecast_prices(&h, T0 + 28 * DAY, HOUR, 24, out),
                     0);
    check_order(out, 24);
    for (size_t k = 0; k < 24; k++) {
        assert_int_equal(out[k].p50, 2400000);
        assert_true(out[k].p10 <= 2390000);
        assert_true(out[k].p90 >= 2410000);
    }
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return *x >> 33;
}

/* Uniform noise in [-a, a] micro-dollars. */
static ebb_micros noise(uint64_t *x, ebb_micros a)
{
    return (ebb_micros)(lcg(x) % (uint64_t)(2 * a + 1)) - a;
}

/* A daily cycle (+-0.50 in four-hour blocks) under hourly noise of
 * +-0.05 for 28 days: the forecast converges on the cycle, far closer to
 * it than the last value is. */
static ebb_micros cycle_at(ebb_time_ms t)
{
    int hod = (int)((t / HOUR) % 24);
    return 2 * USD + ((hod / 4) % 2 ? USD / 2 : -USD / 2);
}

static void test_periodic_converges(void **state)
{
    (void)state;
    static struct series s;
    memset(&s, 0, sizeof s);
    uint64_t x = 99;
    for (int i = 0; i < 28 * 24; i++) {
        ebb_time_ms t = T0 + (ebb_time_ms)i * HOUR;
        add(&s, t, cycle_at(t) + noise(&x, USD / 20));
    }
    struct ebb__price_history h = hist(&s);
    struct ebb_forecast_point out[24];
    ebb_time_ms origin = T0 + 28 * DAY;
    assert_int_equal(ebb__forecast_prices(&h, origin, HOUR, 24, out), 0);
    check_order(out, 24);
    double err = 0.0, err_last = 0.0;
    for (size_t k = 0; k < 24; k++) {
        err += fabs((double)(out[k].p50 - cycle_at(out[k].at)));
        err_last += fabs((double)(s.price[s.n - 1] - cycle_at(out[k].at)));
    }
    /* Within the noise of the cycle (the seasonal naive value carries one
     * day's noise, mean 0.025 on top of the target's), and under a fifth
     * of the last value's error (about 0.5). */
    assert_true(err / 24 < 0.08 * USD);
    assert_true(err < 0.2 * err_last);
}

/* The same cycle without noise steps up by 1.00 at S: within a day of
 * points (the seasonal naive value and the drift both look back a day)
 * the forecast is the new cycle again, and stays so while the step sits
 * among the replayed origins. */
static void test_step_followed(void **state)
{
    (void)state;
    static struct series s;
    memset(&s, 0, sizeof s);
    ebb_time_ms S = T0 + 21 * DAY + 7 * HOUR;
    for (int i = 0; i < 26 * 24; i++) {
        ebb_time_ms t = T0 + (ebb_time_ms)i * HOUR;
        add(&s, t, cycle_at(t) + (t >= S ? USD : 0));
    }
    struct ebb__price_history h = hist(&s);
    for (int k = 1; k <= 72; k++) {
        ebb_time_ms origin = S + (ebb_time_ms)k * HOUR;
        struct ebb_forecast_point out[24];
        assert_int_equal(ebb__forecast_prices(&h, origin, HOUR, 24, out), 0);
        check_order(out, 24);
        ebb_micros worst = 0;
        for (size_t j = 0; j < 24; j++) {
            ebb_micros e = llabs(out[j].p50 - (cycle_at(out[j].at) + USD));
            if (e > worst)
                worst = e;
        }
        /* Right after the step, hours not yet seen at the new level may
         * be off by the step (the seasonal naive value is a day old);
         * from 24 points on, nothing is. */
        if (k >= 24)
            assert_true(worst <= USD / 100);
        else
            assert_true(worst <= USD + USD / 100);
    }
}

/* A price rising 0.001 an hour, hourly for 28 days: the drift is
 * followed, and far: of the candidate drifts the series' own fit takes
 * the slowly damped one (0.99 carries 21.4 h of slope at 24 h), not the
 * quickly damped one (0.90: at most 9 h), which errs more on every
 * replayed origin. */
static void test_drift_followed(void **state)
{
    (void)state;
    static struct series s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < 28 * 24; i++)
        add(&s, T0 + (ebb_time_ms)i * HOUR, USD + (ebb_micros)i * 1000);
    struct ebb__price_history h = hist(&s);
    struct ebb_forecast_point out[24];
    assert_int_equal(ebb__forecast_prices(&h, T0 + 28 * DAY, HOUR, 24, out),
                     0);
    check_order(out, 24);
    ebb_micros last = s.price[s.n - 1];
    for (size_t k = 1; k < 24; k++)
        assert_true(out[k].p50 > out[k - 1].p50);
    assert_true(out[23].p50 - last >= 18000);
    assert_true(out[23].p50 - last <= 25000);
}

/* A level of 2.00 under iid uniform noise of +-0.10, hourly for 40 days,
 * seeded: over 10 daily origins the p10..p90 band holds 80% of actuals
 * within 10 points either way, and the median is nearer the level than
 * the last noisy value is. (Not at the level: the weight of the recent
 * median is fitted by least absolute deviations, whose objective is flat
 * near the optimum for such noise, and lands near 0.4-0.5 here.) */
static void test_band_covers_noise(void **state)
{
    (void)state;
    static struct series s;
    memset(&s, 0, sizeof s);
    uint64_t x = 4242;
    for (int i = 0; i < 40 * 24; i++)
        add(&s, T0 + (ebb_time_ms)i * HOUR, 2 * USD + noise(&x, USD / 10));
    struct ebb__price_history h = hist(&s);
    size_t in = 0, total = 0;
    double dev = 0.0, dev_last = 0.0;
    for (int d = 29; d < 39; d++) {
        ebb_time_ms origin = T0 + (ebb_time_ms)d * DAY + 30 * 60 * 1000;
        struct ebb_forecast_point out[24];
        assert_int_equal(ebb__forecast_prices(&h, origin, HOUR, 24, out), 0);
        check_order(out, 24);
        for (size_t k = 0; k < 24; k++) {
            size_t i = (size_t)((out[k].at - T0) / HOUR);
            ebb_micros a = s.price[i];
            in += (a >= out[k].p10 && a <= out[k].p90);
            total++;
            dev += fabs((double)(out[k].p50 - 2 * USD));
        }
        size_t last = (size_t)((origin - T0) / HOUR);
        dev_last += 24 * fabs((double)(s.price[last] - 2 * USD));
    }
    assert_true(dev < 0.6 * dev_last);
    double cover = (double)in / (double)total;
    assert_true(cover >= 0.70 && cover <= 0.90);
}

/* Ten hours of moving prices: no replayed origin yet, so no weight is
 * fitted and the forecast is the last value, with the random-walk band. */
static void test_little_history(void **state)
{
    (void)state;
    static struct series s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < 10; i++)
        add(&s, T0 + (ebb_time_ms)i * HOUR, USD + (i % 2) * 50000 + i * 1000);
    struct ebb__price_history h = hist(&s);
    struct ebb_forecast_point out[24];
    assert_int_equal(ebb__forecast_prices(&h, T0 + 10 * HOUR, HOUR, 24, out),
                     0);
    check_order(out, 24);
    for (size_t k = 0; k < 24; k++)
        assert_int_equal(out[k].p50, s.price[9]);
    assert_true(out[0].p90 > out[0].p50 && out[0].p10 < out[0].p50);
    assert_true(out[23].p90 - out[23].p10 >= out[0].p90 - out[0].p10);
}

/* The weights' fit: the weighted median minimises sum w |v - m| (checked
 * against every value, seeded random points with many repeats), gives
 * the lower value on an exact tie whatever the order of the points, and
 * handles one point and all-equal values. */
static double wabs(const struct ebb__fc_wpoint *p, size_t n, double m)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += p[i].w * fabs(p[i].v - m);
    return s;
}

static void test_weighted_median(void **state)
{
    (void)state;
    struct ebb__fc_wpoint p[64], q[64];
    unsigned seed = 7;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(round % 40);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            p[i].v = (double)((seed >> 16) % 9) - 4.0;
            seed = seed * 1103515245u + 12345u;
            p[i].w = 0.1 + (double)((seed >> 16) % 100) / 10.0;
        }
        memcpy(q, p, n * sizeof p[0]);
        double m = ebb__fc_weighted_median(q, n);
        double best = INFINITY;
        for (size_t i = 0; i < n; i++)
            best = fmin(best, wabs(p, n, p[i].v));
        assert_true(wabs(p, n, m) <= best * (1.0 + 1e-12));
    }
    /* A tie: every value in [1, 3] minimises; the lower one, both ways
     * round, and with the tie's weights summed in any order. */
    struct ebb__fc_wpoint tie[4] = {{3.0, 0.1}, {1.0, 0.2}, {3.0, 0.2},
                                    {1.0, 0.1}};
    assert_true(ebb__fc_weighted_median(tie, 4) == 1.0);
    struct ebb__fc_wpoint tie2[4] = {{1.0, 0.1}, {3.0, 0.2}, {1.0, 0.2},
                                     {3.0, 0.1}};
    assert_true(ebb__fc_weighted_median(tie2, 4) == 1.0);
    struct ebb__fc_wpoint one[1] = {{2.5, 1.0}};
    assert_true(ebb__fc_weighted_median(one, 1) == 2.5);
    struct ebb__fc_wpoint same[3] = {{-1.0, 1.0}, {-1.0, 2.0}, {-1.0, 3.0}};
    assert_true(ebb__fc_weighted_median(same, 3) == -1.0);
    /* A heavy point wins over many light ones. */
    struct ebb__fc_wpoint heavy[4] = {{0.0, 1.0}, {1.0, 1.0}, {2.0, 1.0},
                                      {9.0, 10.0}};
    assert_true(ebb__fc_weighted_median(heavy, 4) == 9.0);
}

/* Constants out of range are refused. */
static void test_model_checked(void **state)
{
    (void)state;
    ebb_time_ms at[1] = {T0};
    ebb_micros price[1] = {USD};
    struct ebb__price_history h = {at, price, 1};
    struct ebb_forecast_point out[2];
    struct ebb__forecast_model m = ebb__forecast_default_model;
    assert_int_equal(ebb__forecast_prices_model(&m, &h, T0 + 1, HOUR, 2, out),
                     0);
    m.prior_origins = -1.0;
    assert_int_equal(ebb__forecast_prices_model(&m, &h, T0 + 1, HOUR, 2, out),
                     EBB_EINVAL);
    m.prior_origins = INFINITY;
    assert_int_equal(ebb__forecast_prices_model(&m, &h, T0 + 1, HOUR, 2, out),
                     EBB_EINVAL);
}

/* Capacity histories. */

static void test_hazard_none(void **state)
{
    (void)state;
    ebb_time_ms at[3] = {T0, T0 + DAY, T0 + 2 * DAY};
    int32_t cap[3] = {1, 3, 1};
    struct ebb__capacity_history h = {at, cap, 3};
    assert_true(ebb__preemption_hazard(&h, T0 + 5 * DAY, 0, 0) == 0.0);
    double by[24];
    assert_int_equal(ebb__preemption_hazard_by_hour(&h, T0 + 5 * DAY, by), 0);
    for (int k = 0; k < 24; k++)
        assert_true(by[k] == 0.0);
    assert_true(ebb__preemption_hazard(NULL, T0, 0, 0) == 0.0);
    assert_int_equal(ebb__preemption_hazard_by_hour(&h, T0, NULL),
                     EBB_EINVAL);
}

/* Available for 9 hours, gone for 1, repeated 100 times: one loss per 9
 * available hours. */
static void test_hazard_regular(void **state)
{
    (void)state;
    static ebb_time_ms at[200];
    static int32_t cap[200];
    for (int i = 0; i < 100; i++) {
        at[2 * i] = T0 + (ebb_time_ms)i * 10 * HOUR;
        cap[2 * i] = 1;
        at[2 * i + 1] = at[2 * i] + 9 * HOUR;
        cap[2 * i + 1] = 0;
    }
    struct ebb__capacity_history h = {at, cap, 200};
    ebb_time_ms origin = T0 + 1000 * HOUR;
    double r = ebb__preemption_hazard(&h, origin, 0, 0);
    assert_true(fabs(r - 1.0 / 9.0) < 0.01);
    /* Rows at or after the origin do not count. */
    double early = ebb__preemption_hazard(&h, T0 + 500 * HOUR, 0, 0);
    assert_true(fabs(early - 1.0 / 9.0) < 0.01);
    /* Losses ebb saw itself at a higher rate raise the estimate. */
    double more = ebb__preemption_hazard(&h, origin, 50, 100.0);
    assert_true(more > r);
    assert_true(fabs(more - (100.0 + 50.0) / (900.0 + 100.0)) < 1e-9);
    /* Observed losses alone give a rate too. */
    assert_true(ebb__preemption_hazard(NULL, origin, 2, 10.0) > 0.19);
    /* Unknown (-1) capacity is neither exposure nor a drop. */
    int32_t unk[2] = {-1, 0};
    struct ebb__capacity_history hu = {at, unk, 2};
    assert_true(ebb__preemption_hazard(&hu, origin, 0, 0) == 0.0);
}

/* Losses only at 03:00 UTC, every day for 28 days: that hour carries the
 * risk. */
static void test_hazard_by_hour(void **state)
{
    (void)state;
    static ebb_time_ms at[64];
    static int32_t cap[64];
    size_t n = 0;
    for (int d = 0; d < 28; d++) {
        at[n] = T0 + d * DAY + 3 * HOUR + 10 * 60 * 1000;
        cap[n++] = 0;
        at[n] = T0 + d * DAY + 3 * HOUR + 40 * 60 * 1000;
        cap[n++] = 2;
    }
    struct ebb__capacity_history h = {at, cap, n};
    double by[24];
    ebb_time_ms origin = T0 + 28 * DAY;
    assert_int_equal(ebb__preemption_hazard_by_hour(&h, origin, by), 0);
    double flat = ebb__preemption_hazard(&h, origin, 0, 0);
    for (int k = 0; k < 24; k++) {
        if (k == 3)
            assert_true(by[k] > 5 * flat);
        else
            assert_true(by[k] < flat);
        assert_true(by[k] > 0.0);
    }
    /* Same answer twice. */
    double again[24];
    assert_int_equal(ebb__preemption_hazard_by_hour(&h, origin, again), 0);
    assert_memory_equal(by, again, sizeof by);
}

/* The renewal record (ebb_offer up_lengths / down_lengths): periods that
 * ended, by log2 bucket of minutes; the first period's start is unknown,
 * so it is not counted; an unknown row breaks the record; rows at or after
 * the origin do not count; `since` is when the period in effect began. */
static void test_availability_record(void **state)
{
    (void)state;
    const ebb_time_ms M = 60 * 1000;
    ebb_time_ms at[] = {T0,            T0 + 10 * M,  T0 + 13 * M,
                        T0 + 73 * M,   T0 + 74 * M,  T0 + 90 * M,
                        T0 + 100 * M,  T0 + 400 * M};
    int32_t cap[] = {1, 0, 2, 0, 3, -1, 0, 1};
    struct ebb__capacity_history h = {at, cap, 8};
    struct ebb__avail_record r;
    ebb__availability_record(&h, T0 + 500 * M, &r);
    /* up 10 min (its start unknown: not counted), down 3 min, up 60 min
     * (2 and 0: the same kind of period), down 1 min, up 16 min cut by
     * the unknown row (not counted), down 300 min after it (its start
     * unknown: not counted), up since T0 + 400 min. */
    unsigned up[EBB_PERIOD_BUCKETS] = {0}, down[EBB_PERIOD_BUCKETS] = {0};
    up[ebb__period_bucket(60 * M)]++;
    down[ebb__period_bucket(3 * M)]++;
    down[ebb__period_bucket(1 * M)]++;
    assert_memory_equal(r.up, up, sizeof(up));
    assert_memory_equal(r.down, down, sizeof(down));
    assert_true(r.since == T0 + 400 * M);
    assert_int_equal(ebb__period_bucket(1 * M), 0);
    assert_int_equal(ebb__period_bucket(2 * M), 1);
    assert_int_equal(ebb__period_bucket(60 * M), 5);
    assert_int_equal(ebb__period_bucket(100 * DAY), EBB_PERIOD_BUCKETS - 1);
    /* Before the origin only: down 3 min and up 60 min ended, down since
     * T0 + 73 min. */
    ebb__availability_record(&h, T0 + 74 * M, &r);
    assert_true(r.since == T0 + 73 * M);
    unsigned none[EBB_PERIOD_BUCKETS] = {0};
    down[ebb__period_bucket(1 * M)]--;
    assert_memory_equal(r.up, up, sizeof(up));
    assert_memory_equal(r.down, down, sizeof(down));
    ebb__availability_record(NULL, T0, &r);
    assert_memory_equal(r.up, none, sizeof(none));
    assert_true(r.since == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flat),
        cmocka_unit_test(test_regime_shift),
        cmocka_unit_test(test_drift_followed),
        cmocka_unit_test(test_daily_cycle),
        cmocka_unit_test(test_ordered_band),
        cmocka_unit_test(test_ignores_future),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_flicker),
        cmocka_unit_test(test_periodic_converges),
        cmocka_unit_test(test_step_followed),
        cmocka_unit_test(test_band_covers_noise),
        cmocka_unit_test(test_little_history),
        cmocka_unit_test(test_weighted_median),
        cmocka_unit_test(test_model_checked),
        cmocka_unit_test(test_hazard_none),
        cmocka_unit_test(test_hazard_regular),
        cmocka_unit_test(test_hazard_by_hour),
        cmocka_unit_test(test_availability_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
