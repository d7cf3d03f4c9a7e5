/* The host's price poller (src/plugin/poller.c) on a virtual clock, with
 * a scripted provider: each poll completes on the next timer turn with
 * the status the test queued, or not at all until the test completes it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "io/clock.h"
#include "plugin/poller.h"

#define MINUTE EBB_MS_PER_MINUTE
#define T0 INT64_C(1800000000000)

struct script {
    struct ebb__clock *clock;
    struct ebb__timer done;   /* completes the poll in flight */
    ebb_prices_cb cb;
    void *arg;
    int statuses[16];         /* what polls 1, 2, ... complete with */
    int refuse;               /* poll_prices itself returns this */
    int hold;                 /* leave polls in flight */
    int started;
    ebb_time_ms started_at[32];
    /* The sink. */
    int sunk, last_status, all_polled;
    char log[4096];
};

static void complete(struct ebb__timer *t)
{
    struct script *s = t->data;
    int k = s->started - 1;
    int status = k < 16 ? s->statuses[k] : 0;
    const struct ebb_price p = {.struct_size = sizeof(p), .region = "r",
                                .instance_type = "t", .at = 1};
    s->cb(s->arg, status, status == 0 ? &p : NULL, status == 0 ? 1 : 0);
}

static int poll_prices(void *self, ebb_prices_cb cb, void *arg)
{
    struct script *s = self;
    if (s->refuse != 0)
        return s->refuse;
    if (s->started < 32)
        s->started_at[s->started] = ebb__clock_now(s->clock);
    s->started++;
    s->cb = cb;
    s->arg = arg;
    if (!s->hold)
        ebb__timer_start(s->clock, &s->done, ebb__clock_now(s->clock));
    return 0;
}

static const struct ebb_provider provider = {
    .abi = EBB_PROVIDER_ABI,
    .struct_size = sizeof(struct ebb_provider),
    .name = "scripted",
    .poll_prices = poll_prices,
};

static void host_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
    EBB_PRINTF(3, 4);

static void host_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
{
    struct script *s = ctx;
    (void)level;
    size_t n = strlen(s->log);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->log + n, sizeof(s->log) - n, fmt, ap);
    va_end(ap);
    n = strlen(s->log);
    snprintf(s->log + n, sizeof(s->log) - n, "\n");
}

static void sink_prices(void *arg, const char *name, int status,
                        const struct ebb_price *prices, size_t n)
{
    struct script *s = arg;
    assert_string_equal(name, "scripted");
    assert_int_equal(n, status == 0 ? 1 : 0);
    (void)prices;
    s->sunk++;
    s->last_status = status;
}

static void sink_all_polled(void *arg)
{
    ((struct script *)arg)->all_polled++;
}

struct fx {
    struct ebb__clock clock;
    struct script s;
    struct ebb_host host;
    struct ebb__poller poller;
};

static void fx_open(struct fx *f, ebb_dur_ms interval)
{
    memset(f, 0, sizeof(*f));
    ebb__clock_init_virtual(&f->clock, T0);
    f->s.clock = &f->clock;
    ebb__timer_init(&f->s.done, complete, &f->s);
    f->host = (struct ebb_host){.abi = EBB_HOST_ABI, .ctx = &f->s, .log = host_log};
    const struct ebb__poll_sink sink = {
        .arg = &f->s, .prices = sink_prices, .all_polled = sink_all_polled};
    ebb__poller_init(&f->poller, &f->clock, &sink);
    assert_int_equal(ebb__poller_add(&f->poller, "scripted", &provider, &f->s,
                                     &f->host, interval),
                     0);
}

static void fx_close(struct fx *f)
{
    ebb__timer_stop(&f->clock, &f->s.done);
    ebb__poller_fini(&f->poller);
    ebb__clock_close(&f->clock, NULL);
}

static const struct ebb__poll_health *health(struct fx *f)
{
    return ebb__poller_health(&f->poller, "scripted");
}

/* Polls at start, then `interval` after each good poll completed. */
static void polls_every_interval(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 5 * MINUTE);
    ebb__poller_start(&f.poller);
    ebb__clock_run_until(&f.clock, T0 + 16 * MINUTE);
    assert_int_equal(f.s.started, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(f.s.started_at[i], T0 + i * 5 * MINUTE);
    assert_int_equal(f.s.sunk, 4);
    assert_int_equal(f.s.all_polled, 4);
    assert_int_equal(health(&f)->polls, 4);
    assert_int_equal(health(&f)->errors, 0);
    assert_int_equal(health(&f)->next_at, T0 + 20 * MINUTE);
    assert_int_equal(health(&f)->interval, 5 * MINUTE);
    fx_close(&f);
}

/* Failures double the wait (2, 4, 8 ... intervals) up to an hour; one
 * good poll resets it. */
static void failures_back_off_and_success_resets(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 10 * MINUTE);
    for (int i = 0; i < 6; i++)
        f.s.statuses[i] = EBB_ETIMEDOUT;
    ebb__poller_start(&f.poller);
    ebb__clock_run_until(&f.clock, T0 + 325 * MINUTE);
    /* 0, +20, +40, +60 (capped), +60, +60, then good at +60 and +10. */
    const ebb_time_ms at[] = {0, 20, 60, 120, 180, 240, 300, 310, 320};
    assert_int_equal(f.s.started, 9);
    for (int i = 0; i < 9; i++)
        assert_int_equal(f.s.started_at[i], T0 + at[i] * MINUTE);
    assert_int_equal(health(&f)->errors, 6);
    assert_int_equal(health(&f)->last_status, 0);
    assert_non_null(strstr(f.s.log, "price poll failed: timed out"));
    fx_close(&f);
}

/* An interval longer than the cap is the cap. */
static void a_long_interval_caps_at_itself(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 2 * EBB_MS_PER_HOUR);
    f.s.statuses[0] = EBB_EIO;
    ebb__poller_start(&f.poller);
    ebb__clock_run_until(&f.clock, T0 + 3 * EBB_MS_PER_HOUR);
    assert_int_equal(f.s.started_at[1], T0 + 2 * EBB_MS_PER_HOUR);
    fx_close(&f);
}

/* Refused credentials: one error, no timer, no more polls, changes
 * announced afterwards ignored; the health says stopped. */
static void auth_failure_stops_polling(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, MINUTE);
    f.s.statuses[0] = EBB_EAUTH;
    ebb__poller_start(&f.poller);
    ebb__clock_run_until(&f.clock, T0 + EBB_MS_PER_DAY);
    assert_int_equal(f.s.started, 1);
    ebb__poller_market_changed(&f.poller, "scripted");
    ebb__clock_run_until(&f.clock, T0 + 2 * EBB_MS_PER_DAY);
    assert_int_equal(f.s.started, 1);
    assert_true(health(&f)->stopped);
    assert_int_equal(health(&f)->next_at, 0);
    assert_int_equal(health(&f)->last_status, EBB_EAUTH);
    assert_int_equal(f.s.all_polled, 1);
    const char *line = strstr(f.s.log, "price polling stopped");
    assert_non_null(line);
    assert_null(strstr(line + 1, "price polling stopped"));
    fx_close(&f);
}

/* A poll that cannot start is a failed poll: counted, backed off, and a
 * refusal of the credentials stops polling just the same. */
static void a_poll_that_cannot_start_fails(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, MINUTE);
    f.s.refuse = EBB_EAUTH;
    ebb__poller_start(&f.poller);
    assert_int_equal(f.s.sunk, 1);
    assert_int_equal(f.s.last_status, EBB_EAUTH);
    assert_true(health(&f)->stopped);
    assert_true(ebb__poller_all_polled(&f.poller));
    fx_close(&f);
}

/* Without an interval: polled at start and at each announced change; a
 * change during a poll polls once more after it, not twice. */
static void changes_poll_without_an_interval(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 0);
    f.s.hold = 1;
    ebb__poller_start(&f.poller);
    assert_int_equal(f.s.started, 1);
    assert_false(ebb__poller_all_polled(&f.poller));
    ebb__poller_market_changed(&f.poller, "scripted");
    ebb__poller_market_changed(&f.poller, "scripted");
    ebb__poller_market_changed(&f.poller, "nobody");
    assert_int_equal(f.s.started, 1);
    f.s.hold = 0;
    ebb__timer_start(&f.clock, &f.s.done, T0);
    ebb__clock_run_until(&f.clock, T0 + EBB_MS_PER_DAY);
    assert_int_equal(f.s.started, 2);
    assert_int_equal(f.s.sunk, 2);
    assert_int_equal(health(&f)->next_at, 0);
    /* Cancelled polls (the provider destroyed) reach nobody. */
    f.s.hold = 1;
    ebb__poller_market_changed(&f.poller, "scripted");
    f.s.cb(f.s.arg, EBB_ECANCELED, NULL, 0);
    assert_int_equal(f.s.sunk, 2);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(polls_every_interval),
        cmocka_unit_test(failures_back_off_and_success_resets),
        cmocka_unit_test(a_long_interval_caps_at_itself),
        cmocka_unit_test(auth_failure_stops_polling),
        cmocka_unit_test(a_poll_that_cannot_start_fails),
        cmocka_unit_test(changes_poll_without_an_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
