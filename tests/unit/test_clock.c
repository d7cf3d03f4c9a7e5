#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* ---- resuming on a store with history (#16 point 1) ---- */

#define T2020 1578268800000LL /* 2020-01-06T00:00:00Z, the built-in clock.start */
#define HOUR 3600000LL

struct real_clock {
    uv_loop_t loop;
    struct ebb__clock clock;
};

static void real_open(struct real_clock *r, ebb_time_ms start, double speed)
{
    assert_int_equal(uv_loop_init(&r->loop), 0);
    assert_int_equal(ebb__clock_init_real_at(&r->clock, &r->loop, start, speed), 0);
}

static void real_close(struct real_clock *r)
{
    ebb__clock_close(&r->clock, NULL);
    uv_run(&r->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&r->loop), 0);
}

static void advance_moves_forward_only(void **state)
{
    (void)state;
    struct ebb__clock v;
    ebb__clock_init_virtual(&v, 5000);
    ebb__clock_advance(&v, 4000);
    assert_int_equal(ebb__clock_now(&v), 5000);
    ebb__clock_advance(&v, 9000);
    assert_int_equal(ebb__clock_now(&v), 9000);

    struct real_clock r;
    real_open(&r, T2020, 720);
    ebb__clock_advance(&r.clock, T2020 - HOUR);
    ebb_time_ms now = ebb__clock_now(&r.clock);
    assert_true(now >= T2020 && now < T2020 + HOUR);
    ebb__clock_advance(&r.clock, T2020 + 5 * HOUR);
    now = ebb__clock_now(&r.clock);
    assert_true(now >= T2020 + 5 * HOUR && now < T2020 + 6 * HOUR);
    real_close(&r);
}

/* The built-in configuration restarted (same clock.start, after SIGKILL
 * or SIGTERM) goes on from the store's latest time, whatever the speed. */
static void same_start_resumes_from_the_store(void **state)
{
    (void)state;
    const double speeds[] = {1, 720};
    for (size_t i = 0; i < 2; i++) {
        struct real_clock r;
        real_open(&r, T2020, speeds[i]);
        struct ebb__clock_history h = {.latest = T2020 + 98 * 60000,
                                       .start_known = 1, .start = T2020,
                                       .speed = 720};
        char err[512] = "";
        assert_int_equal(ebb__clock_resume(&r.clock, T2020, &h, err, sizeof(err)), 1);
        ebb_time_ms now = ebb__clock_now(&r.clock);
        assert_true(now >= h.latest && now < h.latest + HOUR);
        /* and runs on at its speed */
        assert_true(ebb__clock_real_ms(&r.clock, 720000) == (ebb_dur_ms)(720000 / speeds[i]));
        assert_string_equal(err, "");
        real_close(&r);
    }
    /* An accelerated clock without clock.start resumes too. */
    struct real_clock r;
    real_open(&r, 0, 720);
    ebb_time_ms ahead = ebb__clock_now(&r.clock) + 1000 * HOUR;
    struct ebb__clock_history h = {.latest = ahead, .start_known = 1, .speed = 720};
    char err[512] = "";
    assert_int_equal(ebb__clock_resume(&r.clock, 0, &h, err, sizeof(err)), 1);
    assert_true(ebb__clock_now(&r.clock) >= ahead);
    real_close(&r);
}

/* A store whose time the clock already passed changes nothing; a store
 * with nothing recorded neither. */
static void a_clock_ahead_is_left_alone(void **state)
{
    (void)state;
    struct real_clock r;
    real_open(&r, T2020 + 10 * HOUR, 1);
    struct ebb__clock_history none = {0};
    struct ebb__clock_history behind = {.latest = T2020 + HOUR, .start_known = 1,
                                        .start = T2020, .speed = 1};
    char err[512] = "";
    assert_int_equal(ebb__clock_resume(&r.clock, T2020 + 10 * HOUR, &none, err,
                                       sizeof(err)), 0);
    assert_int_equal(ebb__clock_resume(&r.clock, T2020 + 10 * HOUR, &behind, err,
                                       sizeof(err)), 0);
    ebb_time_ms now = ebb__clock_now(&r.clock);
    assert_true(now >= T2020 + 10 * HOUR && now < T2020 + 11 * HOUR);
    real_close(&r);
}

/* A clock.start earlier than the store's time that is not the one the
 * store ran with (changed, or a store from before the clock was kept):
 * refused, naming both times and what to do. */
static void an_earlier_new_start_is_refused(void **state)
{
    (void)state;
    struct real_clock r;
    real_open(&r, T2020, 720);
    struct ebb__clock_history h = {.latest = T2020 + 98 * 60000, .start_known = 1,
                                   .start = T2020 + HOUR, .speed = 720};
    char err[512] = "";
    assert_int_equal(ebb__clock_resume(&r.clock, T2020, &h, err, sizeof(err)),
                     EBB_ECONFIG);
    assert_non_null(strstr(err, "clock.start is 2020-01-06T00:00:00"));
    assert_non_null(strstr(err, "before 2020-01-06T01:38:00Z, the latest time "
                                "recorded in the store"));
    assert_non_null(strstr(err, "would run backwards"));
    assert_non_null(strstr(err, "Set clock.start to that time or later"));
    assert_non_null(strstr(err, "clock.start 2020-01-06T01:00:00Z (the one the "
                                "store last ran with) resumes from there"));
    assert_non_null(strstr(err, "or use a new --state-dir"));
    ebb_time_ms now = ebb__clock_now(&r.clock);
    assert_true(now >= T2020 && now < T2020 + HOUR); /* untouched */

    struct ebb__clock_history unknown = {.latest = T2020 + 98 * 60000};
    assert_int_equal(ebb__clock_resume(&r.clock, T2020, &unknown, err, sizeof(err)),
                     EBB_ECONFIG);
    assert_null(strstr(err, "last ran with"));
    real_close(&r);
}

/* The wall clock behind the store's time (a store written by a clock run
 * ahead, or a system clock set back) cannot be moved: refused. */
static void the_wall_clock_behind_the_store_is_refused(void **state)
{
    (void)state;
    struct real_clock r;
    real_open(&r, 0, 1);
    ebb_time_ms wall = ebb__clock_now(&r.clock);
    struct ebb__clock_history h = {.latest = wall + 1000 * HOUR, .start_known = 1,
                                   .start = 0, .speed = 720};
    char err[512] = "";
    assert_int_equal(ebb__clock_resume(&r.clock, 0, &h, err, sizeof(err)),
                     EBB_ECONFIG);
    assert_non_null(strstr(err, "the wall clock reads "));
    assert_non_null(strstr(err, "Fix the system clock or wait until then"));
    assert_non_null(strstr(err, "clock.speed 720 without clock.start"));
    ebb_time_ms now = ebb__clock_now(&r.clock);
    assert_true(now >= wall && now < wall + HOUR);
    real_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(virtual_runs_in_due_then_start_order),
        cmocka_unit_test(stop_and_restart),
        cmocka_unit_test(time_never_goes_back),
        cmocka_unit_test(many_timers_stay_ordered),
        cmocka_unit_test(real_mode_fires_through_libuv),
        cmocka_unit_test(advance_moves_forward_only),
        cmocka_unit_test(same_start_resumes_from_the_store),
        cmocka_unit_test(a_clock_ahead_is_left_alone),
        cmocka_unit_test(an_earlier_new_start_is_refused),
        cmocka_unit_test(the_wall_clock_behind_the_store_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
