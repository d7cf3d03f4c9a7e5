/* ebbd's notifications (docs/notify.md): events into the store's outbox
 * (daemon_notify.c), delivered after the commit by daemon_notify_send.c.
 * Internal to src/daemon. */
#ifndef EBB_DAEMON_NOTIFY_H
#define EBB_DAEMON_NOTIFY_H

#include <ebb/common.h>

#include "config/notify.h"
#include "engine/engine.h"

struct ebb__daemon;
struct ebb__daemon_notify;

/* How many deliveries run at once, and how many finished rows the outbox
 * keeps for `ebb notifications`. */
#define EBB__NOTIFY_CONCURRENCY 8
#define EBB__NOTIFY_KEEP_DONE 10000
/* A retry never waits longer than this. */
#define EBB__NOTIFY_BACKOFF_CAP_MS INT64_C(600000)

/* The engine's opt.note (engine.h): writes the event's outbox rows, one
 * per channel of the job (its spec's notify:, else notify.defaults), into
 * the transaction open now, and wakes the sender. `arg` is the daemon. */
void ebb__daemon_note(void *arg, const struct ebb__engine_note *n);

/* The same for an event the daemon itself sees (a schedule fired or
 * missed): `spec` gives the channels and the team (may be NULL: the
 * defaults). Call it inside the transaction that records the change.
 * Returns 0 or a negative EBB_E* code (the caller rolls back). */
int ebb__daemon_notify_event(struct ebb__daemon *d,
                             const struct ebb__engine_note *n);

/* The sender (daemon_notify_send.c). start: resumes the outbox's pending
 * rows (a restart, a SIGKILL) and delivers new ones as they commit;
 * returns 0 or 1 (out of memory). kick: there may be new rows. stop:
 * abandons deliveries in flight (their rows stay pending and go out at
 * the next start) and frees the sender once its handles closed. */
int ebb__daemon_notify_start(struct ebb__daemon *d);
void ebb__daemon_notify_kick(struct ebb__daemon *d);
void ebb__daemon_notify_stop(struct ebb__daemon *d);

/* The API method "notifications" (params: "failed", a boolean): the
 * newest outbox rows, {"notifications": [...]}. */
struct ebb__api_call;
void ebb__api_notifications(void *ctx, struct ebb__api_call *call);

/* The wall clock in ms: what deliveries are timed by and stamped with. */
ebb_time_ms ebb__daemon_wall_ms(void);

/* The text a Slack incoming webhook shows for the event JSON `body`: the
 * job, what happened and the money. Returns a new string (free()) or NULL
 * for a body that is not an event. */
char *ebb__notify_slack_text(const char *body);

#endif
