#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "io/clock.h"

struct probe {
    struct ebb__clock *clock;
    int order[16];
    ebb_time_ms seen_at[16];
    int n;
};

struct tagged {
    struct ebb__timer timer;
    struct probe *probe;
    int tag;
};

static void record(struct ebb__timer *t)
{
    struct tagged *x = t->data;
    x->probe->order[x->probe->n] = x->tag;
    x->probe->seen_at[x->probe->n] = ebb__clock_now(x->probe->clock);
    x->probe->n++;
}

static void virtual_runs_in_due_then_start_order(void **state)
{
    (void)state;
    struct ebb__clock c;
    ebb__clock_init_virtual(&c, 1000);
    struct probe p = {.clock = &c};
    struct tagged t[5];
    const ebb_time_ms due[5] = {5000, 2000, 5000, 3000, 2000};
    for (int i = 0; i < 5; i++) {
        t[i] = (struct tagged){.probe = &p, .tag = i};
        ebb__timer_init(&t[i].timer, record, &t[i]);
        assert_int_equal(ebb__timer_start(&c, &t[i].timer, due[i]), 0);
    }
    assert_int_equal(ebb__clock_next_due(&c), 2000);
    assert_int_equal(ebb__clock_run_until(&c, INT64_MAX), 5);
    const int want[5] = {1, 4, 3, 0, 2};
    const ebb_time_ms want_at[5] = {2000, 2000, 3000, 5000, 5000};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(p.order[i], want[i]);
        assert_int_equal(p.seen_at[i], want_at[i]);
    }
    assert_int_equal(ebb__clock_now(&c), 5000);
    ebb__clock_close(&c, NULL);
}

static void stop_and_restart(void **state)
{
    (void)state;
    struct ebb__clock c;
    ebb__clock_init_virtual(&c, 0);
    struct probe p = {.clock = &c};
    struct tagged a = {.probe = &p, .tag = 1}, b = {.probe = &p, .tag = 2};
    ebb__timer_init(&a.timer, record, &a);
    ebb__timer_init(&b.timer, record, &b);
    ebb__timer_start(&c, &a.timer, 100);
    ebb__timer_start(&c, &b.timer, 200);
    ebb__timer_stop(&c, &a.timer);
    assert_false(ebb__timer_pending(&a.timer));
    ebb__timer_stop(&c, &a.timer); /* stopping twice is harmless */
    ebb__timer_start(&c, &b.timer, 50); /* restart moves it */
    assert_int_equal(ebb__clock_run_until(&c, 150), 1);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.order[0], 2);
    assert_int_equal(p.seen_at[0], 50);
    assert_int_equal(ebb__clock_now(&c), 150);
    assert_int_equal(ebb__clock_run_until(&c, INT64_MAX), 0);
    ebb__clock_close(&c, NULL);
}

/* A timer started from a callback for an earlier time runs at the current
 * time: virtual time never goes backwards. */
static void rearm(struct ebb__timer *t)
{
    struct tagged *x = t->data;
    record(t);
    if (x->tag < 3) {
        x->tag++;
        ebb__timer_start(x->probe->clock, t, 0);
    }
}

static void time_never_goes_back(void **state)
{
    (void)state;
    struct ebb__clock c;
    ebb__clock_init_virtual(&c, 0);
    struct probe p = {.clock = &c};
    struct tagged a = {.probe = &p, .tag = 1};
    ebb__timer_init(&a.timer, rearm, &a);
    ebb__timer_start(&c, &a.timer, 700);
    assert_int_equal(ebb__clock_run_until(&c, INT64_MAX), 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(p.seen_at[i], 700);
    ebb__clock_close(&c, NULL);
}

struct order_check {
    struct ebb__clock *clock;
    ebb_time_ms last;
    int ran;
    int out_of_order;
};

static void check_order(struct ebb__timer *t)
{
    struct order_check *oc = t->data;
    if (t->due < oc->last || ebb__clock_now(oc->clock) != t->due)
        oc->out_of_order++;
    oc->last = t->due;
    oc->ran++;
}

/* Random starts and stops: the heap pops in due order and runs exactly the
 * timers that were not stopped. */
static void many_timers_stay_ordered(void **state)
{
    (void)state;
    enum { N = 2000 };
    static struct ebb__timer timers[N];
    struct ebb__clock c;
    ebb__clock_init_virtual(&c, 0);
    struct order_check oc = {.clock = &c};
    uint32_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        ebb__timer_init(&timers[i], check_order, &oc);
        assert_int_equal(ebb__timer_start(&c, &timers[i], (x >> 8) % 100000), 0);
    }
    int stopped = 0;
    for (int i = 0; i < N; i += 3) {
        ebb__timer_stop(&c, &timers[i]);
        stopped++;
    }
    assert_int_equal(ebb__clock_run_until(&c, INT64_MAX), N - stopped);
    assert_int_equal(oc.ran, N - stopped);
    assert_int_equal(oc.out_of_order, 0);
    ebb__clock_close(&c, NULL);
}

struct real_probe {
    struct ebb__clock clock;
    struct ebb__timer timer;
    ebb_time_ms started, fired;
};

static void on_real(struct ebb__timer *t)
{
    struct real_probe *p = t->data;
    p->fired = ebb__clock_now(&p->clock);
    ebb__clock_close(&p->clock, NULL);
}

static void real_mode_fires_through_libuv(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct real_probe p;
    assert_int_equal(ebb__clock_init_real(&p.clock, &loop), 0);
    p.started = ebb__clock_now(&p.clock);
    ebb__timer_init(&p.timer, on_real, &p);
    ebb__timer_start(&p.clock, &p.timer, p.started + 30);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_true(p.fired >= p.started + 30);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(virtual_runs_in_due_then_start_order),
        cmocka_unit_test(stop_and_restart),
        cmocka_unit_test(time_never_goes_back),
        cmocka_unit_test(many_timers_stay_ordered),
        cmocka_unit_test(real_mode_fires_through_libuv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
