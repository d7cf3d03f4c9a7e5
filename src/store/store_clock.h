/* The clock's position in the store, and the check that every instance
 * that ran is billed once (#16 point 1).
 *
 * ebbd's clock must never read earlier than a time the store has
 * recorded: an instance would end before it started and its ledger row
 * (end_at >= start_at) could not be written. The store keeps one row: the
 * latest time any commit of ebbd's writer recorded, and the clock.start
 * and speed of the ebbd that last ran. An accelerated clock resumes from
 * it (daemon/daemon_clock.c, io/clock.h ebb__clock_resume()).
 */
#ifndef EBB_STORE_CLOCK_H
#define EBB_STORE_CLOCK_H

#include "io/clock.h"
#include "store/store.h"

/* Fills *out (io/clock.h) from the store: zeroes for a store with
 * nothing recorded. Returns 0 or a negative EBB_E* code. */
int ebb__store_clock_get(struct ebb__store *s, struct ebb__clock_history *out);

/* Records the clock ebbd runs on now: its clock.start (0: none), its
 * speed (> 0), and `now`, which raises the latest time (never lowers it).
 * Returns 0 or a negative EBB_E* code. */
int ebb__store_clock_set(struct ebb__store *s, ebb_time_ms start, double speed,
                         ebb_time_ms now);

/* From now on every commit of `s` also raises the recorded latest time to
 * `now(arg)`, in the same transaction, so that after a SIGKILL the store
 * knows a time no earlier than any time it holds. `now` NULL stops it.
 * Call ebb__store_clock_set() first: the row must exist. */
void ebb__store_clock_follow(struct ebb__store *s,
                             ebb_time_ms (*now)(void *arg), void *arg);

/* Checks that every instance that ran is billed exactly once: no instance
 * ends before it was requested or started; an ended instance that ran
 * (started, ended later) has ledger rows (compute and overhead) that cover
 * its run from its start to its end without gap or overlap (the last row
 * may end up to a second later: billing counts started seconds); an
 * instance that has not ended has none yet. Returns 0 when all holds;
 * EBB_EDB when not, with how many instances are wrong and the first of
 * them in `err` (may be NULL); or another negative EBB_E* code. */
int ebb__store_check_billing(struct ebb__store *s, char *err, size_t errlen);

#endif
