/* Exponential backoff, computed once for every retry in ebb: the HTTP
 * client's attempts (io/http_client.c), the price poller's failing polls
 * (plugin/poller.c) and the engine's terminate retries
 * (engine/engine_release.c).
 *
 * A backoff starts at `initial`, doubles with every ebb__backoff_next()
 * and never exceeds `cap`; ebb__backoff_reset() starts it over after a
 * success. Jitter, where a caller wants it, is the caller's (the HTTP
 * client draws a uniform wait below the value returned here).
 */
#ifndef EBB_BACKOFF_H
#define EBB_BACKOFF_H

#include <ebb/common.h>

struct ebb__backoff {
    ebb_dur_ms initial; /* the first wait; values below 0 count as 0 */
    ebb_dur_ms cap;     /* the longest wait */
    ebb_dur_ms next;    /* what ebb__backoff_next() returns next */
};

/* Starts a backoff at `initial` (at most `cap`). */
void ebb__backoff_init(struct ebb__backoff *b, ebb_dur_ms initial, ebb_dur_ms cap);

/* The wait before the next attempt; the one after it doubles (up to the
 * cap). */
ebb_dur_ms ebb__backoff_next(struct ebb__backoff *b);

/* Starts over at `initial` (after a success). */
void ebb__backoff_reset(struct ebb__backoff *b);

/* The wait before attempt `failures` + 1 of a backoff from `initial` to
 * `cap`, without keeping state: initial * 2^(failures - 1), capped (the
 * initial wait for 0 or 1 failure). */
ebb_dur_ms ebb__backoff_after(ebb_dur_ms initial, ebb_dur_ms cap, unsigned failures);

#endif
