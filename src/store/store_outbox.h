/* The notification outbox (store_outbox.c; docs/notify.md).
 *
 * An event worth a person's attention is written here, one row per
 * channel, in the same transaction as the change that caused it, so that a
 * committed change always has its event and a rolled-back one never does.
 * ebbd delivers pending rows after the commit: a row is delivered, or
 * retried at next_at, or dead once its channel's attempts are spent. Rows
 * survive restarts; pending ones are picked up again on start.
 *
 * Bounds: a body is at most EBB__OUTBOX_BODY_MAX bytes; at most
 * EBB__OUTBOX_MAX_PENDING rows wait at once (the oldest beyond it turns
 * dead with "outbox full", so a dead receiver cannot grow the file
 * without end); ebb__store_outbox_prune() keeps the newest finished rows
 * only. */
#ifndef EBB_STORE_OUTBOX_H
#define EBB_STORE_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>

struct ebb__store;
struct json_t;

#define EBB__OUTBOX_BODY_MAX 8192
#define EBB__OUTBOX_MAX_PENDING 10000

/* One event. Strings borrowed. `job_id` may be NULL. */
struct ebb__outbox_event {
    const char *event_id; /* stable: every channel's row and every retry */
    const char *type;     /* "job.state", "budget.threshold", ... */
    const char *job_id;
    ebb_time_ms created_at; /* wall clock */
    const char *body;       /* the event as JSON text */
};

/* Adds a pending row for `ev` per channel in channels[0..n), due at once,
 * joining the caller's transaction. A row whose (event_id, channel) is
 * already stored is left as it is (that is how an event is sent once).
 * Then turns the oldest pending rows beyond EBB__OUTBOX_MAX_PENDING dead.
 * Returns the number of rows added, or a negative EBB_E* code (EBB_EINVAL
 * for a missing field or a body over EBB__OUTBOX_BODY_MAX). */
int ebb__store_outbox_add(struct ebb__store *s, const struct ebb__outbox_event *ev,
                          const char *const *channels, size_t n);

/* A pending row, valid during the callback only. */
struct ebb__outbox_row {
    int64_t seq;
    const char *event_id, *channel, *type, *body;
    int attempts;
};

typedef int (*ebb__outbox_row_cb)(void *arg, const struct ebb__outbox_row *row);

/* Calls `cb` with up to `limit` pending rows due at `now` (next_at <= now),
 * oldest first, skipping seq values in skip[0..n_skip) (rows in flight).
 * `cb` may call the store's writes. Returns 0, cb's non-zero value, or a
 * negative EBB_E* code. */
int ebb__store_outbox_due(struct ebb__store *s, ebb_time_ms now, size_t limit,
                          const int64_t *skip, size_t n_skip,
                          ebb__outbox_row_cb cb, void *arg);

/* The most rows in flight ebb__store_outbox_next_due() can leave out. */
#define EBB__OUTBOX_SKIP_MAX 8

/* The earliest next_at of a pending row whose seq is not in
 * skip[0..n_skip) (n_skip <= EBB__OUTBOX_SKIP_MAX) into *at; 0 when none
 * waits. Returns 0 or a negative EBB_E* code. */
int ebb__store_outbox_next_due(struct ebb__store *s, const int64_t *skip,
                               size_t n_skip, ebb_time_ms *at);

/* Marks row `seq` delivered at `now` after `attempts` attempts. */
int ebb__store_outbox_delivered(struct ebb__store *s, int64_t seq, int attempts,
                                ebb_time_ms now);

/* Records a failed attempt of row `seq`: `attempts` so far, `error`
 * (borrowed, cut to 300 bytes), and either the time of the next attempt
 * or, with `dead`, the end (the dead letter an admin sees). */
int ebb__store_outbox_failed(struct ebb__store *s, int64_t seq, int attempts,
                             const char *error, ebb_time_ms next_at, int dead,
                             ebb_time_ms now);

/* Deletes delivered and dead rows but the newest `keep`. Returns the
 * number deleted or a negative EBB_E* code. */
int ebb__store_outbox_prune(struct ebb__store *s, int64_t keep);

/* The newest `limit` rows (only dead ones with `failed_only`), newest
 * first, as a JSON array of objects (seq, event_id, channel, type, job_id,
 * created_at, status, attempts, next_at, last_error, done_at) in *out.
 * Returns 0 or a negative EBB_E* code. */
int ebb__store_outbox_json(struct ebb__store *s, int failed_only, int64_t limit,
                           struct json_t **out);

#endif
