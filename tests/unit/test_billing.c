/* Billing (src/market/billing.c): what running on an offer from start to end
 * costs under each provider rule, as ledger segments.
 *
 * Offers are built by hand from a steps array, so every figure below can be
 * checked on paper. 3.6 USD/h is exactly 1000 micro-USD per second, which
 * keeps the arithmetic readable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "market/billing.h"

#define S EBB_MS_PER_SECOND
#define MIN EBB_MS_PER_MINUTE
#define H EBB_MS_PER_HOUR
#define USD EBB_MICROS_PER_UNIT

/* 1000 micro-USD per second. */
#define R36 (3600000)

static struct ebb__offer offer_of(struct ebb__market_step *steps, size_t n)
{
    return (struct ebb__offer){
        .plugin = "sim",
        .provider = "aws",
        .region = "us-east-1",
        .zone = "us-east-1a",
        .instance_type = "p3.2xlarge",
        .market = EBB_MARKET_SPOT,
        .currency = "USD",
        .speed = 1.0,
        .steps = steps,
        .n_steps = n,
        .cap_steps = n,
    };
}

/* Records the segments ebb__bill reports. */
struct segs {
    struct ebb__charge c[512];
    size_t n;
    size_t stop_after; /* 0: never stop */
};

static int collect(void *arg, const struct ebb__charge *c)
{
    struct segs *s = arg;
    assert_true(s->n < sizeof(s->c) / sizeof(s->c[0]));
    s->c[s->n++] = *c;
    return s->stop_after != 0 && s->n >= s->stop_after;
}

/* Every segment is contiguous with the previous one, covers [start,
 * billed_end), is billed at cost_of(rate, length), and the amounts add up
 * to the total. */
static void check_segments(const struct segs *s, ebb_time_ms start,
                           ebb_time_ms billed_end, ebb_micros total)
{
    ebb_micros sum = 0;
    ebb_time_ms at = start;
    for (size_t i = 0; i < s->n; i++) {
        assert_int_equal(s->c[i].start, at);
        assert_true(s->c[i].end > s->c[i].start);
        assert_int_equal(s->c[i].amount,
                         ebb__cost_of(s->c[i].rate, s->c[i].end - s->c[i].start));
        sum += s->c[i].amount;
        at = s->c[i].end;
    }
    assert_int_equal(at, billed_end);
    assert_int_equal(sum, total);
}

/* ---- ebb__cost_of ------------------------------------------------------ */

static void cost_of_rounds_half_up(void **state)
{
    (void)state;
    assert_int_equal(ebb__cost_of(R36, S), 1000);
    assert_int_equal(ebb__cost_of(3060000, H), 3060000);
    /* 1 micro per hour for half an hour is 0.5: up. */
    assert_int_equal(ebb__cost_of(1, H / 2), 1);
    assert_int_equal(ebb__cost_of(1, H / 2 - 1), 0);
    /* 1.5 -> 2 and 2.5 -> 3: half up, not to even. */
    assert_int_equal(ebb__cost_of(3, H / 2), 2);
    assert_int_equal(ebb__cost_of(5, H / 2), 3);
    assert_int_equal(ebb__cost_of(1, 3 * H / 2), 2);
    /* 0.9 USD/h for 1 ms is 0.25 micro: down. */
    assert_int_equal(ebb__cost_of(900000, 1), 0);
    assert_int_equal(ebb__cost_of(900000, 2), 1); /* 0.5 */
    assert_int_equal(ebb__cost_of(0, 100 * H), 0);
    assert_int_equal(ebb__cost_of(R36, 0), 0);
}

static void cost_of_long_runs_do_not_overflow(void **state)
{
    (void)state;
    /* 100 USD/h for 10,000 days: rate * ms = 8.64e19 overflows int64, the
     * cost (2.4e13 micro-USD = 24 million USD) does not. */
    ebb_micros rate = 100 * USD;
    ebb_dur_ms ms = 10000 * EBB_MS_PER_DAY;
    assert_int_equal(ebb__cost_of(rate, ms), INT64_C(24000000000000));
    /* 30,000 USD/h for a year: rate * ms = 9.5e20, the cost 2.628e14. */
    assert_int_equal(ebb__cost_of(30000 * USD, 365 * EBB_MS_PER_DAY),
                     INT64_C(262800000000000));
    /* And the same through ebb__bill, per second and hourly. */
    struct ebb__market_step st[] = {{0, rate, -1}};
    struct ebb__offer o = offer_of(st, 1);
    assert_int_equal(ebb__bill(&o, EBB_BILLING_PER_SECOND, 0, ms, NULL, NULL),
                     INT64_C(24000000000000));
    assert_int_equal(ebb__bill(&o, EBB_BILLING_HOURLY_START_PRICE, 0, ms, NULL,
                               NULL),
                     INT64_C(24000000000000));
}

/* ---- per second -------------------------------------------------------- */

static void per_second_constant_price(void **state)
{
    (void)state;
    struct ebb__market_step st[] = {{0, R36, -1}};
    struct ebb__offer o = offer_of(st, 1);
    struct segs s = {0};
    ebb_micros t = ebb__bill(&o, EBB_BILLING_PER_SECOND, 5 * S, 15 * S, collect, &s);
    assert_int_equal(t, 10000);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.c[0].rate, R36);
    check_segments(&s, 5 * S, 15 * S, t);
}

static void per_second_started_second_is_billed_whole(void **state)
{
    (void)state;
    struct ebb__market_step st[] = {{0, R36, -1}};
    struct ebb__offer o = offer_of(st, 1);
    struct segs s = {0};
    /* 1.001 s billed as 2 s, counted from the instance's own start. */
    ebb_time_ms start = 123;
    ebb_micros t = ebb__bill(&o, EBB_BILLING_PER_SECOND, start, start + 1001,
                             collect, &s);
    assert_int_equal(t, 2000);
    check_segments(&s, start, start + 2 * S, t);
    /* 1 ms is one whole second; an exact second is not rounded up. */
    assert_int_equal(ebb__bill(&o, EBB_BILLING_PER_SECOND, start, start + 1, NULL,
                               NULL), 1000);
    assert_int_equal(ebb__bill(&o, EBB_BILLING_PER_SECOND, start, start + S, NULL,
                               NULL), 1000);
    assert_int_equal(ebb__bill(&o, EBB_BILLING_PER_SECOND, start, start + 3 * S,
                               NULL, NULL), 3000);
}

static void per_second_price_change_snaps_to_the_instance_grid(void **state)
{
    (void)state;
    /* The instance starts at 0.5 s; the price doubles at 3.0 s, which is
     * 2.5 s into the instance's life: the change takes effect at its next
     * second boundary, 3.5 s. */
    struct ebb__market_step st[] = {{0, R36, -1}, {3 * S, 2 * R36, -1}};
    struct ebb__offer o = offer_of(st, 2);
    struct segs s = {0};
    ebb_micros t = ebb__bill(&o, EBB_BILLING_PER_SECOND, 500, 10500, collect, &s);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.c[0].start, 500);
    assert_int_equal(s.c[0].end, 3500);
    assert_int_equal(s.c[0].rate, R36);
    assert_int_equal(s.c[0].amount, 3000);
    assert_int_equal(s.c[1].start, 3500);
    assert_int_equal(s.c[1].end, 10500);
    assert_int_equal(s.c[1].rate, 2 * R36);
    assert_int_equal(s.c[1].amount, 14000);
    assert_int_equal(t, 17000);
    check_segments(&s, 500, 10500, t);

    /* A change exactly on a boundary of the instance applies from it. */
    memset(&s, 0, sizeof(s));
    t = ebb__bill(&o, EBB_BILLING_PER_SECOND, 0, 10 * S, collect, &s);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.c[0].end, 3 * S);
    assert_int_equal(t, 3000 + 14000);

    /* A price that holds for less than a second between boundaries is
     * never billed: at 1.0 s the price is R36, at 2.0 s it is R36 again. */
    struct ebb__market_step blip[] = {
        {0, R36, -1}, {1200, 10 * R36, -1}, {1800, R36, -1}};
    o = offer_of(blip, 3);
    assert_int_equal(ebb__bill(&o, EBB_BILLING_PER_SECOND, 0, 5 * S, NULL, NULL),
                     5000);
}

static void per_second_before_first_price_uses_the_first(void **state)
{
    (void)state;
    struct ebb__market_step st[] = {{10 * S, 2 * R36, -1}, {20 * S, R36, -1}};
    struct ebb__offer o = offer_of(st, 2);
    /* Entirely before the first price. */
    assert_int_equal(ebb__bill(&o, EBB_BILLING_PER_SECOND, 0, 5 * S, NULL, NULL),
                     10000);
    /* Across the first price (same value): one segment, then the change. */
    struct segs s = {0};
    ebb_micros t = ebb__bill(&o, EBB_BILLING_PER_SECOND, 0, 25 * S, collect, &s);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.c[0].rate, 2 * R36);
    assert_int_equal(s.c[0].end, 20 * S);
    assert_int_equal(s.c[1].rate, R36);
    assert_int_equal(t, 20 * 2000 + 5 * 1000);
    check_segments(&s, 0, 25 * S, t);
}

static void empty_interval_costs_nothing(void **state)
{
    (void)state;
    struct ebb__market_step st[] = {{0, R36, -1}};
    struct ebb__offer o = offer_of(st, 1);
    struct segs s = {0};
    assert_int_equal(ebb__bill(&o, EBB_BILLING_PER_SECOND, 7 * S, 7 * S, collect,
                               &s), 0);
    assert_int_equal(ebb__bill(&o, EBB_BILLING_HOURLY_START_PRICE, 7 * S, 7 * S,
                               collect, &s), 0);
    assert_int_equal(ebb__bill(&o, EBB_BILLING_PER_SECOND, 9 * S, 7 * S, collect,
                               &s), 0);
    assert_int_equal(ebb__bill(&o, EBB_BILLING_HOURLY_START_PRICE, 9 * S, 7 * S,
                               collect, &s), 0);
    assert_int_equal(s.n, 0);
    /* An offer without any price bills nothing either. */
    struct ebb__offer none = offer_of(NULL, 0);
    assert_int_equal(ebb__bill(&none, EBB_BILLING_PER_SECOND, 0, H, NULL, NULL), 0);
}

static void callback_can_stop(void **state)
{
    (void)state;
    struct ebb__market_step st[] = {{0, R36, -1}, {S, 2 * R36, -1},
                                    {2 * S, 3 * R36, -1}};
    struct ebb__offer o = offer_of(st, 3);
    struct segs s = {.stop_after = 1};
    ebb__bill(&o, EBB_BILLING_PER_SECOND, 0, 3 * S, collect, &s);
    assert_int_equal(s.n, 1);
}

/* ---- AWS: the price at the start of each instance-hour ----------------- */

static void hourly_start_price(void **state)
{
    (void)state;
    struct ebb__market_step st[] = {
        {0, 1 * USD, -1}, {30 * MIN, 2 * USD, -1}, {90 * MIN, 3 * USD, -1},
        {125 * MIN, 9 * USD, -1}};
    struct ebb__offer o = offer_of(st, 4);
    struct segs s = {0};
    /* Instance hours from 0:10: [0:10, 1:10) at the 0:10 price 1 USD
     * (although it doubles at 0:30), [1:10, 2:10) at the 1:10 price 2 USD
     * (although it is 3 from 1:30), [2:10, 2:40) at the 2:10 price 9 USD. */
    ebb_micros t = ebb__bill(&o, EBB_BILLING_HOURLY_START_PRICE, 10 * MIN,
                             160 * MIN, collect, &s);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.c[0].rate, 1 * USD);
    assert_int_equal(s.c[0].end, 70 * MIN);
    assert_int_equal(s.c[1].rate, 2 * USD);
    assert_int_equal(s.c[1].end, 130 * MIN);
    assert_int_equal(s.c[2].rate, 9 * USD);
    assert_int_equal(s.c[2].amount, 9 * USD / 2);
    assert_int_equal(t, 1 * USD + 2 * USD + 9 * USD / 2);
    check_segments(&s, 10 * MIN, 160 * MIN, t);

    /* From 0:00: 1 USD, then the 1:00 price (2), then the 2:00 price (3),
     * even though it rose to 9 during that hour. */
    memset(&s, 0, sizeof(s));
    t = ebb__bill(&o, EBB_BILLING_HOURLY_START_PRICE, 0, 3 * H, collect, &s);
    assert_int_equal(t, 6 * USD);
    check_segments(&s, 0, 3 * H, t);
    /* Per second the same run follows every change. */
    assert_int_equal(ebb__bill(&o, EBB_BILLING_PER_SECOND, 0, 3 * H, NULL, NULL),
                     USD / 2 + 2 * USD + 3 * USD * 35 / 60 + 9 * USD * 55 / 60);
    /* A change exactly at an instance-hour boundary applies to that hour. */
    struct ebb__market_step edge[] = {{0, 1 * USD, -1}, {H, 4 * USD, -1}};
    o = offer_of(edge, 2);
    assert_int_equal(ebb__bill(&o, EBB_BILLING_HOURLY_START_PRICE, 0, 2 * H, NULL,
                               NULL), 5 * USD);
    /* The last, partial hour is billed per second, a started second whole. */
    assert_int_equal(ebb__bill(&o, EBB_BILLING_HOURLY_START_PRICE, 0,
                               H + 1001, NULL, NULL),
                     1 * USD + ebb__cost_of(4 * USD, 2 * S));
}

/* ---- against a brute force --------------------------------------------- */

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 33;
}

static ebb_micros price_at_ref(const struct ebb__market_step *st, size_t n,
                               ebb_time_ms t)
{
    ebb_micros p = st[0].price;
    for (size_t i = 0; i < n && st[i].at <= t; i++)
        p = st[i].price;
    return p;
}

/* Random step series; for each, the billed time at each rate must be what
 * a second-by-second (or hour-by-hour) reading gives, and the segments
 * must add up to the total. */
static void segments_match_a_brute_force(void **state)
{
    (void)state;
    uint64_t x = 42;
    enum { NSTEP = 40, NRATE = 4 };
    const ebb_micros rates[NRATE] = {900000, 1230000, 3060000, 7};
    for (int round = 0; round < 60; round++) {
        struct ebb__market_step st[NSTEP];
        ebb_time_ms at = (ebb_time_ms)(lcg(&x) % 5000);
        for (size_t i = 0; i < NSTEP; i++) {
            st[i] = (struct ebb__market_step){at, rates[lcg(&x) % NRATE], -1};
            at += 1 + (ebb_time_ms)(lcg(&x) % (round % 2 ? 4000 : 900000));
        }
        struct ebb__offer o = offer_of(st, NSTEP);
        ebb_time_ms start = (ebb_time_ms)(lcg(&x) % (uint64_t)(at / 2));
        ebb_time_ms end = start + 1 + (ebb_time_ms)(lcg(&x) % (uint64_t)at);
        ebb_time_ms billed_end = start + (end - start + 999) / 1000 * 1000;
        for (int rule = 0; rule < 2; rule++) {
            ebb_dur_ms unit = rule == 0 ? S : H;
            struct segs s = {0};
            ebb_micros t = ebb__bill(&o, (enum ebb_billing)rule, start, end,
                                     collect, &s);
            check_segments(&s, start, billed_end, t);
            ebb_dur_ms got[NRATE] = {0}, want[NRATE] = {0};
            for (size_t i = 0; i < s.n; i++)
                for (int r = 0; r < NRATE; r++)
                    if (s.c[i].rate == rates[r])
                        got[r] += s.c[i].end - s.c[i].start;
            for (ebb_time_ms a = start; a < billed_end; a += unit) {
                ebb_time_ms b = a + unit < billed_end ? a + unit : billed_end;
                ebb_micros p = price_at_ref(st, NSTEP, a);
                for (int r = 0; r < NRATE; r++)
                    if (p == rates[r])
                        want[r] += b - a;
            }
            for (int r = 0; r < NRATE; r++)
                assert_int_equal(got[r], want[r]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cost_of_rounds_half_up),
        cmocka_unit_test(cost_of_long_runs_do_not_overflow),
        cmocka_unit_test(per_second_constant_price),
        cmocka_unit_test(per_second_started_second_is_billed_whole),
        cmocka_unit_test(per_second_price_change_snaps_to_the_instance_grid),
        cmocka_unit_test(per_second_before_first_price_uses_the_first),
        cmocka_unit_test(empty_interval_costs_nothing),
        cmocka_unit_test(callback_can_stop),
        cmocka_unit_test(hourly_start_price),
        cmocka_unit_test(segments_match_a_brute_force),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
