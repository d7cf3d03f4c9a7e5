#include "market/billing.h"

/* 128-bit intermediates: rate * ms overflows int64 beyond ~1000 days of a
 * 100 USD/h instance. */
__extension__ typedef __int128 wide;

ebb_micros ebb__cost_of(ebb_micros rate_per_hour, ebb_dur_ms ms)
{
    wide x = (wide)rate_per_hour * ms;
    return (ebb_micros)((x + EBB_MS_PER_HOUR / 2) / EBB_MS_PER_HOUR);
}

static ebb_micros price_at(const struct ebb__offer *o, ebb_time_ms t)
{
    const struct ebb__market_step *s = ebb__offer_at(o, t);
    if (s == NULL)
        s = o->n_steps > 0 ? &o->steps[0] : NULL;
    return s != NULL ? s->price : 0;
}

/* The first second boundary of the instance at or after t. */
static ebb_time_ms snap(ebb_time_ms start, ebb_time_ms t)
{
    if (t <= start)
        return start;
    return start + (t - start + 999) / 1000 * 1000;
}

static ebb_micros emit(ebb__charge_cb cb, void *arg, ebb_time_ms a,
                       ebb_time_ms b, ebb_micros rate, int *stop)
{
    struct ebb__charge c = {a, b, rate, ebb__cost_of(rate, b - a)};
    if (cb != NULL && !*stop)
        *stop = cb(arg, &c);
    return c.amount;
}

static ebb_micros bill_per_second(const struct ebb__offer *o, ebb_time_ms start,
                                  ebb_time_ms end, ebb__charge_cb cb, void *arg)
{
    ebb_micros total = 0;
    int stop = 0;
    ebb_time_ms a = start;
    while (a < end) {
        ebb_micros rate = price_at(o, a);
        /* The next price change after a, snapped to the second grid. */
        ebb_time_ms b = end;
        const struct ebb__market_step *s = ebb__offer_at(o, a);
        size_t next = s != NULL ? (size_t)(s - o->steps) + 1 : 0;
        for (; next < o->n_steps; next++) {
            ebb_time_ms t = snap(start, o->steps[next].at);
            if (t > a && o->steps[next].price != rate) {
                b = t < end ? t : end;
                break;
            }
        }
        total += emit(cb, arg, a, b, rate, &stop);
        a = b;
    }
    return total;
}

static ebb_micros bill_hourly(const struct ebb__offer *o, ebb_time_ms start,
                              ebb_time_ms end, ebb__charge_cb cb, void *arg)
{
    ebb_micros total = 0;
    int stop = 0;
    for (ebb_time_ms a = start; a < end; a += EBB_MS_PER_HOUR) {
        ebb_time_ms b = a + EBB_MS_PER_HOUR < end ? a + EBB_MS_PER_HOUR : end;
        total += emit(cb, arg, a, b, price_at(o, a), &stop);
    }
    return total;
}

ebb_micros ebb__bill(const struct ebb__offer *o, enum ebb_billing rule,
                     ebb_time_ms start, ebb_time_ms end, ebb__charge_cb cb,
                     void *arg)
{
    if (end <= start)
        return 0;
    end = snap(start, end);
    if (rule == EBB_BILLING_HOURLY_START_PRICE)
        return bill_hourly(o, start, end, cb, arg);
    return bill_per_second(o, start, end, cb, arg);
}
