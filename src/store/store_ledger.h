/* The ledger read back, for savings reports, plan advice and metrics: the
 * rows of a window with what explains them (the instance each ran on, the
 * job it billed), the jobs' preemptions and checkpoints, each instance's
 * run, a team's usage of what a plan covers, and the sums per currency.
 *
 * These reads may take a while on a large ledger: callers run them off
 * ebbd's loop (a store handle of their own in libuv's thread pool) or in
 * the CLI's process, never on the loop's handle.
 *
 * Each walk calls `cb` once per row, in the order it documents. The row's
 * strings are valid during the call only. `cb` returns 0 to go on; any
 * other value stops the walk, which then returns it. `cb` may call other
 * store functions but not the walk it is called from. Otherwise a walk
 * returns 0 or a negative EBB_E* code, with the words in
 * ebb__store_errmsg(). Windows are half open: [since, until). */
#ifndef EBB_STORE_LEDGER_H
#define EBB_STORE_LEDGER_H

#include "store/store.h"

/* A ledger row starting in the window, with its instance and job. */
struct ebb__ledger_window_row {
    const char *job_id, *team, *provider;
    const char *kind; /* "compute", "overhead" or "fee" */
    const char *currency, *note;
    /* The instance it billed: "" when the row has none. */
    const char *region, *zone, *instance_type;
    const char *market; /* "spot", "on-demand" or "" */
    ebb_time_ms start_at, end_at;
    ebb_micros amount;        /* in `currency` */
    ebb_time_ms submitted_at; /* the job's; start_at for a row without one */
    /* The job's productive compute time (not lost, see lost_ms) in ledger
     * rows before this one: those before the window, and those in it that
     * start earlier (or at the same time and were written earlier). */
    ebb_dur_ms prior_compute;
    /* Of [start_at, end_at), the time lost (at its end): the restart
     * overhead of every instance after the job's first, and the compute
     * time after an instance's last complete checkpoint (all of it
     * without one) when the job did not finish on that instance. An
     * on-demand run of the same work would not have spent it. */
    ebb_dur_ms lost_ms;
};

/* Calls `cb` for each ledger row starting in [since, until), by start. */
int ebb__store_ledger_window(
    struct ebb__store *s, ebb_time_ms since, ebb_time_ms until,
    int (*cb)(void *arg, const struct ebb__ledger_window_row *r), void *arg);

/* A job's preemption or checkpoint, with the instance it held then (the
 * latest started at or before the event; "" fields when none). */
struct ebb__window_event_row {
    const char *job_id, *team;
    const char *to_state; /* "preempted" or "checkpointing" */
    const char *provider; /* as the instance's ledger rows name it */
    const char *instance_type, *instance_token;
    ebb_time_ms at;
    int has_next;        /* the job has a later event ... */
    ebb_time_ms next_at; /* ... at this time (when has_next) */
};

/* Calls `cb` for each preemption and checkpoint event in [since, until),
 * by time. */
int ebb__store_window_events(
    struct ebb__store *s, ebb_time_ms since, ebb_time_ms until,
    int (*cb)(void *arg, const struct ebb__window_event_row *r), void *arg);

/* An instance's run: its first billed second to its last, of its compute
 * and overhead rows starting in the window. */
struct ebb__instance_run_row {
    const char *instance_token, *job_id, *provider;
    const char *region, *zone, *instance_type, *market;
    ebb_time_ms start_at, end_at;
};

/* Calls `cb` for each instance with compute or overhead rows starting in
 * [since, until), by start and then token. */
int ebb__store_instance_runs(
    struct ebb__store *s, ebb_time_ms since, ebb_time_ms until,
    int (*cb)(void *arg, const struct ebb__instance_run_row *r), void *arg);

/* What a plan covers: instances of `provider`, in `region` and of
 * `instance_type` unless those are NULL (any). Strings borrowed. */
struct ebb__usage_filter {
    const char *provider, *region, *instance_type;
};

/* A compute or overhead ledger row on matching instances. */
struct ebb__usage_row {
    const char *team, *currency;
    ebb_time_ms start_at, end_at;
    ebb_micros amount; /* in `currency` */
};

/* Calls `cb` for each compute and overhead row on instances matching `f`
 * that starts in [since, until), the rows of one team together (teams in
 * order). */
int ebb__store_plan_usage(struct ebb__store *s,
                          const struct ebb__usage_filter *f, ebb_time_ms since,
                          ebb_time_ms until,
                          int (*cb)(void *arg, const struct ebb__usage_row *r),
                          void *arg);

/* Calls `cb` with the sum of the whole ledger's amounts in each currency,
 * in currency order. */
int ebb__store_ledger_sums(struct ebb__store *s, ebb__store_sum_cb cb,
                           void *arg);

#endif
