/* ebb — exponential backoff, computed once for every retry in ebb: the
 * HTTP client's attempts (src/io/http_client.c), the price poller's
 * failing polls (src/plugin/poller.c), the engine's terminate retries
 * (src/engine/engine_release.c) and the one retry a plugin makes itself,
 * vast.ai's check-then-rent (a rent cannot be resent blindly).
 * Implemented in src/base/backoff.c, which plugins link with base.
 *
 * A backoff starts at `initial`, doubles with every ebb_backoff_next()
 * and never exceeds `cap`; ebb_backoff_reset() starts it over after a
 * success. Jitter, where a caller wants it, is the caller's (the HTTP
 * client draws a uniform wait below the value returned here).
 */
#ifndef EBB_BACKOFF_H
#define EBB_BACKOFF_H

#include "common.h"

struct ebb_backoff {
    ebb_dur_ms initial; /* the first wait; values below 0 count as 0 */
    ebb_dur_ms cap;     /* the longest wait */
    ebb_dur_ms next;    /* what ebb_backoff_next() returns next */
};

/* Starts a backoff at `initial` (at most `cap`). */
void ebb_backoff_init(struct ebb_backoff *b, ebb_dur_ms initial, ebb_dur_ms cap);

/* The wait before the next attempt; the one after it doubles (up to the
 * cap). */
ebb_dur_ms ebb_backoff_next(struct ebb_backoff *b);

/* Starts over at `initial` (after a success). */
void ebb_backoff_reset(struct ebb_backoff *b);

/* The wait before attempt `failures` + 1 of a backoff from `initial` to
 * `cap`, without keeping state: initial * 2^(failures - 1), capped (the
 * initial wait for 0 or 1 failure). */
ebb_dur_ms ebb_backoff_after(ebb_dur_ms initial, ebb_dur_ms cap, unsigned failures);

#endif
