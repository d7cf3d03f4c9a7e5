#include "io/clock.h"

#include <stdlib.h>
#include <time.h>

/* Timer heap: a binary min-heap ordered by (due, seq). Each timer knows its
 * index so that stop is O(log n) without searching. */

static int timer_before(const struct ebb__timer *a, const struct ebb__timer *b)
{
    if (a->due != b->due)
        return a->due < b->due;
    return a->seq < b->seq;
}

static void heap_place(struct ebb__clock *c, size_t i, struct ebb__timer *t)
{
    c->heap[i] = t;
    t->heap_index = i;
}

static void heap_sift_up(struct ebb__clock *c, size_t i)
{
    struct ebb__timer *t = c->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!timer_before(t, c->heap[parent]))
            break;
        heap_place(c, i, c->heap[parent]);
        i = parent;
    }
    heap_place(c, i, t);
}

static void heap_sift_down(struct ebb__clock *c, size_t i)
{
    struct ebb__timer *t = c->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= c->n_heap)
            break;
        if (child + 1 < c->n_heap && timer_before(c->heap[child + 1], c->heap[child]))
            child++;
        if (!timer_before(c->heap[child], t))
            break;
        heap_place(c, i, c->heap[child]);
        i = child;
    }
    heap_place(c, i, t);
}

static void heap_remove(struct ebb__clock *c, struct ebb__timer *t)
{
    size_t i = t->heap_index;
    struct ebb__timer *last = c->heap[--c->n_heap];
    t->heap_index = SIZE_MAX;
    if (last == t)
        return;
    heap_place(c, i, last);
    if (i > 0 && timer_before(last, c->heap[(i - 1) / 2]))
        heap_sift_up(c, i);
    else
        heap_sift_down(c, i);
}

static ebb_time_ms wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (ebb_time_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Real mode: the clock's time, which runs `speed` times as fast as the
 * wall clock from `origin` on (speed 1 and origin 0: the wall clock). */
static ebb_time_ms real_now(const struct ebb__clock *c)
{
    ebb_time_ms wall = wall_now();
    if (c->speed == 1.0 && c->origin == 0)
        return wall;
    return c->origin + (ebb_time_ms)((double)(wall - c->wall_origin) * c->speed);
}

static void arm_uv_timer(struct ebb__clock *c);

/* Real mode: how long one wake of the libuv timer may run due timers
 * before the loop serves its I/O again. Thousands of timers can fall due
 * at once (a provider answering every launch of a restart), and the
 * sockets must not wait for all of them. */
#define REAL_SLICE_NS (3u * 1000u * 1000u)

static void on_uv_timer(uv_timer_t *handle)
{
    struct ebb__clock *c = handle->data;
    ebb_time_ms now = real_now(c);
    uint64_t until = uv_hrtime() + REAL_SLICE_NS;
    while (c->n_heap > 0 && c->heap[0]->due <= now) {
        if (uv_hrtime() > until && !c->closing) {
            /* The rest after a poll: a libuv timer re-armed at 0 from its
             * callback would run again before any I/O. */
            uv_timer_start(&c->uv_timer, on_uv_timer, 1, 0);
            return;
        }
        struct ebb__timer *t = c->heap[0];
        heap_remove(c, t);
        t->cb(t);
    }
    arm_uv_timer(c);
}

/* Re-arms the single libuv timer for the earliest pending ebb timer. */
static void arm_uv_timer(struct ebb__clock *c)
{
    if (c->is_virtual || c->closing)
        return;
    if (c->n_heap == 0) {
        uv_timer_stop(&c->uv_timer);
        return;
    }
    ebb_time_ms ahead = c->heap[0]->due - real_now(c);
    ebb_time_ms wait = ebb__clock_real_ms(c, ahead);
    /* A timer not yet due waits at least a millisecond: an accelerated
     * clock's next due may be less than one wall millisecond away, and a
     * libuv timer re-armed at 0 from its own callback runs again at once,
     * forever, since libuv does not update its time in between. */
    if (ahead > 0 && wait < 1)
        wait = 1;
    if (wait < 0)
        wait = 0;
    uv_timer_start(&c->uv_timer, on_uv_timer, (uint64_t)wait, 0);
}

int ebb__clock_init_real(struct ebb__clock *clock, uv_loop_t *loop)
{
    return ebb__clock_init_real_at(clock, loop, 0, 1.0);
}

int ebb__clock_init_real_at(struct ebb__clock *clock, uv_loop_t *loop,
                            ebb_time_ms start, double speed)
{
    if (!(speed > 0))
        return EBB_EINVAL;
    *clock = (struct ebb__clock){.loop = loop, .speed = speed, .origin = start,
                                 .wall_origin = wall_now()};
    if (start == 0)
        clock->origin = speed == 1.0 ? 0 : clock->wall_origin;
    if (uv_timer_init(loop, &clock->uv_timer) != 0)
        return EBB_EIO;
    clock->uv_timer.data = clock;
    return 0;
}

void ebb__clock_init_virtual(struct ebb__clock *clock, ebb_time_ms start)
{
    *clock = (struct ebb__clock){.is_virtual = 1, .virtual_now = start,
                                 .speed = 1.0};
}

static void on_uv_timer_closed(uv_handle_t *handle)
{
    struct ebb__clock *c = handle->data;
    if (c->close_cb != NULL)
        c->close_cb(c);
}

void ebb__clock_close(struct ebb__clock *clock,
                      void (*cb)(struct ebb__clock *clock))
{
    for (size_t i = 0; i < clock->n_heap; i++)
        clock->heap[i]->heap_index = SIZE_MAX;
    free(clock->heap);
    clock->heap = NULL;
    clock->n_heap = clock->cap_heap = 0;
    clock->closing = 1;
    clock->close_cb = cb;
    if (clock->is_virtual) {
        if (cb != NULL)
            cb(clock);
        return;
    }
    uv_close((uv_handle_t *)&clock->uv_timer, on_uv_timer_closed);
}

ebb_time_ms ebb__clock_now(const struct ebb__clock *clock)
{
    return clock->is_virtual ? clock->virtual_now : real_now(clock);
}

ebb_dur_ms ebb__clock_real_ms(const struct ebb__clock *clock, ebb_dur_ms d)
{
    if (clock->speed == 1.0)
        return d;
    return (ebb_dur_ms)((double)d / clock->speed);
}

ebb_dur_ms ebb__clock_from_real_ms(const struct ebb__clock *clock, ebb_dur_ms d)
{
    if (clock->speed == 1.0)
        return d;
    return (ebb_dur_ms)((double)d * clock->speed);
}

void ebb__clock_advance(struct ebb__clock *clock, ebb_time_ms to)
{
    if (to <= ebb__clock_now(clock))
        return;
    if (clock->is_virtual) {
        clock->virtual_now = to;
        return;
    }
    clock->origin = to;
    clock->wall_origin = wall_now();
    arm_uv_timer(clock);
}

void ebb__timer_init(struct ebb__timer *timer, ebb__timer_cb cb, void *data)
{
    *timer = (struct ebb__timer){.cb = cb, .data = data, .heap_index = SIZE_MAX};
}

int ebb__timer_start(struct ebb__clock *clock, struct ebb__timer *timer,
                     ebb_time_ms due)
{
    if (clock->closing)
        return EBB_ESHUTDOWN;
    if (ebb__timer_pending(timer))
        heap_remove(clock, timer);
    if (clock->n_heap == clock->cap_heap) {
        size_t cap = clock->cap_heap ? clock->cap_heap * 2 : 64;
        struct ebb__timer **heap = realloc(clock->heap, cap * sizeof(*heap));
        if (heap == NULL)
            return EBB_ENOMEM;
        clock->heap = heap;
        clock->cap_heap = cap;
    }
    timer->due = due;
    timer->seq = clock->next_seq++;
    clock->heap[clock->n_heap] = timer;
    timer->heap_index = clock->n_heap++;
    heap_sift_up(clock, timer->heap_index);
    if (clock->heap[0] == timer)
        arm_uv_timer(clock);
    return 0;
}

void ebb__timer_stop(struct ebb__clock *clock, struct ebb__timer *timer)
{
    if (!ebb__timer_pending(timer))
        return;
    int was_first = clock->heap[0] == timer;
    heap_remove(clock, timer);
    if (was_first)
        arm_uv_timer(clock);
}

uint64_t ebb__clock_run_until(struct ebb__clock *clock, ebb_time_ms until)
{
    uint64_t ran = 0;
    while (clock->n_heap > 0 && clock->heap[0]->due <= until) {
        struct ebb__timer *t = clock->heap[0];
        heap_remove(clock, t);
        /* Time never runs backwards: a timer started for the past runs at
         * the current virtual time. */
        if (t->due > clock->virtual_now)
            clock->virtual_now = t->due;
        t->cb(t);
        ran++;
    }
    if (until != INT64_MAX && until > clock->virtual_now)
        clock->virtual_now = until;
    return ran;
}

ebb_time_ms ebb__clock_next_due(const struct ebb__clock *clock)
{
    return clock->n_heap > 0 ? clock->heap[0]->due : INT64_MAX;
}
