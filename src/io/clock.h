/* ebb_clock: the only source of time in ebb.
 *
 * A clock owns a heap of timers. In real mode it reads the wall clock and
 * arms one uv_timer_t for the earliest timer; libuv wakes the loop. In
 * virtual mode nothing sleeps: ebb__clock_run_until() pops the earliest
 * timer, sets `now` to its due time and runs it, so a backtest replays
 * months of events as fast as the CPU allows. Handlers cannot tell which
 * mode drives them.
 *
 * Timers that fall due at the same instant run in the order they were
 * started, so a virtual run is deterministic.
 */
#ifndef EBB_CLOCK_H
#define EBB_CLOCK_H

#include <stdint.h>

#include <uv.h>

#include <ebb/common.h>

struct ebb__clock;
struct ebb__timer;

typedef void (*ebb__timer_cb)(struct ebb__timer *timer);

/* A timer is embedded by its owner and initialised once; it may be started
 * and stopped any number of times. */
struct ebb__timer {
    ebb__timer_cb cb;
    void *data;          /* for the owner */
    ebb_time_ms due;
    uint64_t seq;        /* start order, breaks ties between equal dues */
    size_t heap_index;   /* SIZE_MAX when not pending */
};

struct ebb__clock {
    int is_virtual;
    ebb_time_ms virtual_now;
    /* Real mode: an accelerated clock (demos) reads origin + speed x the
     * wall time since wall_origin. Virtual mode: 1, unless a test that
     * plays an accelerated ebbd's wall-clock world (its agents) sets it;
     * the conversions below use it either way. */
    double speed;
    ebb_time_ms origin, wall_origin;
    uv_loop_t *loop;     /* real mode only */
    uv_timer_t uv_timer; /* real mode only */
    struct ebb__timer **heap;
    size_t n_heap;
    size_t cap_heap;
    uint64_t next_seq;
    int closing;
    void (*close_cb)(struct ebb__clock *clock);
};

/* Real mode on `loop`. Returns 0 or a negative EBB_E* code. */
int ebb__clock_init_real(struct ebb__clock *clock, uv_loop_t *loop);

/* Real mode on `loop` that reads `start` now (0: the wall clock's time)
 * and runs `speed` times as fast as the wall clock (> 0; 1440 shows a day
 * in a minute). Returns 0, EBB_EINVAL for a bad speed, or EBB_EIO. */
int ebb__clock_init_real_at(struct ebb__clock *clock, uv_loop_t *loop,
                            ebb_time_ms start, double speed);

/* Converts a clock duration into wall-clock time and back (identities
 * unless the clock is accelerated). Things outside ebbd (an agent's grace
 * period, heartbeats) run on the wall clock. */
ebb_dur_ms ebb__clock_real_ms(const struct ebb__clock *clock, ebb_dur_ms d);
ebb_dur_ms ebb__clock_from_real_ms(const struct ebb__clock *clock, ebb_dur_ms d);

/* Virtual mode starting at `start`. Never fails. */
void ebb__clock_init_virtual(struct ebb__clock *clock, ebb_time_ms start);

/* Real mode: closes the uv timer and calls `cb` from its close callback.
 * Virtual mode: calls `cb` at once. Pending timers are dropped; the heap is
 * freed before `cb` runs. `cb` may be NULL. */
void ebb__clock_close(struct ebb__clock *clock,
                      void (*cb)(struct ebb__clock *clock));

/* The current time: wall clock (real) or the time of the event being
 * handled (virtual). */
ebb_time_ms ebb__clock_now(const struct ebb__clock *clock);

void ebb__timer_init(struct ebb__timer *timer, ebb__timer_cb cb, void *data);

/* Runs `timer->cb` once at `due` (clock time; a due in the past runs on the
 * next turn). Restarts a pending timer. Returns 0 or EBB_ENOMEM/ESHUTDOWN. */
int ebb__timer_start(struct ebb__clock *clock, struct ebb__timer *timer,
                     ebb_time_ms due);

/* Stops a pending timer; a timer that is not pending is left alone. */
void ebb__timer_stop(struct ebb__clock *clock, struct ebb__timer *timer);

static inline int ebb__timer_pending(const struct ebb__timer *timer)
{
    return timer->heap_index != SIZE_MAX;
}

/* Moves the clock forward so that it reads `to` now (nothing when it
 * reads `to` or later already), then runs on at its speed; timers due by
 * then run on the next turn. A clock that read the wall clock reads it
 * shifted from then on. Time never goes back, so there is no way to move
 * it the other way. */
void ebb__clock_advance(struct ebb__clock *clock, ebb_time_ms to);

/* What the store recorded of the clock that ran before this start
 * (store/store_clock.h fills it). */
struct ebb__clock_history {
    ebb_time_ms latest;  /* the latest time recorded; 0: nothing yet */
    int start_known;     /* 0: a store written before the clock was kept */
    ebb_time_ms start;   /* clock.start of the ebbd that last ran; 0: none */
    double speed;        /* its speed; 0 when not known */
};

/* Makes a clock that starts on a store with history never read earlier
 * than the store's latest time (#16 point 1). `start` is the configured
 * clock.start (0: none), with which `clock` was initialised.
 *   - The clock reads `latest` or later already: it is left alone.
 *   - A clock other than the wall clock (a clock.start, a speed other
 *     than 1, or virtual) whose clock.start is the one the store last ran
 *     with resumes: it is moved forward to `latest` (a restart, after
 *     SIGTERM or SIGKILL, goes on from where the last run got to).
 *   - Otherwise (the wall clock behind the store's time; a changed or
 *     unknown clock.start before it) it would run backwards: refused.
 * Returns 0 (left alone), 1 (resumed from `latest`), or EBB_ECONFIG with
 * a message in `err` that names both times and what to do. */
int ebb__clock_resume(struct ebb__clock *clock, ebb_time_ms start,
                      const struct ebb__clock_history *h, char *err,
                      size_t errlen);

/* Virtual mode: runs timers in due order while the earliest is due at or
 * before `until`, then sets now = max(now, until) unless until is INT64_MAX.
 * Returns how many timers ran. */
uint64_t ebb__clock_run_until(struct ebb__clock *clock, ebb_time_ms until);

/* Due time of the earliest pending timer, or INT64_MAX. */
ebb_time_ms ebb__clock_next_due(const struct ebb__clock *clock);

#endif
