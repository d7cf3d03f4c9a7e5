/* The store's schedule side: cron schedules (docs/cron.md), the link from
 * each run (a job) to its schedule and fire time, and schedule_events,
 * the history of what became of each fire time (started, skipped and why,
 * missed while ebbd was down, failed to start).
 *
 * A fire time gets at most one run: jobs has a unique index on
 * (schedule_id, schedule_fire_at). ebbd writes a run's job row, its link
 * and the schedule's new last_fire_at in one transaction (see
 * ebb__engine_submit_also()), so after a crash either all of them are
 * there or none is.
 *
 * Not on any hot path: statements are prepared per call. Errors as in
 * store.h; the words of the last failure: ebb__store_errmsg().
 */
#ifndef EBB_STORE_SCHEDULES_H
#define EBB_STORE_SCHEDULES_H

#include <jansson.h>

#include "store/store.h"

/* A schedule as stored. Strings borrowed. */
struct ebb__schedule_row {
    const char *id, *name, *cron, *timezone;
    const char *yaml;    /* the schedule file as added (template_yaml) */
    const char *file;    /* its name, for messages */
    const char *workdir; /* where `ebb schedule add` ran; "" unknown */
    const char *missed;  /* "skip" or "run-once" */
    const char *currency;
    int64_t owner_uid;
    ebb_dur_ms window;
    ebb_micros budget;          /* < 0: no cap */
    ebb_time_ms created_at;
    ebb_time_ms last_fire_at;   /* 0: has never fired */
    ebb_time_ms next_fire_at;   /* 0: fires no more */
    /* Read only (ebb__store_schedules_each): the job of the latest run,
     * "" when none. */
    const char *last_job_id;
};

/* Adds a schedule (last_fire_at and last_job_id are ignored: a new one
 * has not fired). Returns 0, EBB_EEXISTS when the id or the name is taken,
 * EBB_EINVAL for missing strings, or another EBB_E* code. */
int ebb__store_schedule_insert(struct ebb__store *s,
                               const struct ebb__schedule_row *r);

/* Calls `cb` with every schedule, by name; a non-zero return stops and is
 * returned. Rows are valid during the call. `cb` may call other store
 * functions. Returns 0, the callback's value or an EBB_E* code. */
int ebb__store_schedules_each(struct ebb__store *s,
                              int (*cb)(void *arg,
                                        const struct ebb__schedule_row *r),
                              void *arg);

/* Looks a schedule up by id, or else by name. Copies its id into `id`
 * (`idlen` bytes) and its owner into *owner_uid (may be NULL). Returns 0,
 * EBB_ENOTFOUND, or another EBB_E* code. */
int ebb__store_schedule_find(struct ebb__store *s, const char *id_or_name,
                             char *id, size_t idlen, int64_t *owner_uid);

/* Deletes schedule `id` and its events; its runs (jobs) stay, with their
 * link. Returns 0, EBB_ENOTFOUND, or another EBB_E* code. */
int ebb__store_schedule_remove(struct ebb__store *s, const char *id);

/* Records that every fire time up to `last_fire_at` has been dealt with
 * and that the next one is `next_fire_at` (0: none). */
int ebb__store_schedule_fired(struct ebb__store *s, const char *id,
                              ebb_time_ms last_fire_at,
                              ebb_time_ms next_fire_at);

/* Marks job `job_id` as the run of schedule `schedule_id` for fire time
 * `fire_at`. Returns 0, EBB_EEXISTS when that fire time already has a run
 * (nothing changes), EBB_ENOTFOUND when there is no such job, or another
 * EBB_E* code. */
int ebb__store_schedule_link(struct ebb__store *s, const char *job_id,
                             const char *schedule_id, ebb_time_ms fire_at);

/* Appends to schedule_events. `kind`: "started" (with `job_id`),
 * "skipped", "missed" or "failed"; `job_id` may be NULL. */
int ebb__store_schedule_event(struct ebb__store *s, const char *schedule_id,
                              ebb_time_ms at, ebb_time_ms fire_at,
                              const char *kind, const char *job_id,
                              const char *reason);

/* Every schedule, by name, as JSON rows (id, name, cron, timezone,
 * window_ms, budget_micros, currency, missed, owner_uid, file,
 * created_at, last_fire_at, next_fire_at, last_job_id, last_job_state;
 * NULL as null). */
int ebb__store_schedules_json(struct ebb__store *s, json_t **out);

/* One schedule (`id`): its row as above with "yaml" and "workdir",
 * "runs" (its jobs, the latest fire time first, at most `max_rows`: id,
 * state, fire_at, submitted_at, deadline, spent_micros, currency) and
 * "events" (the newest `max_rows` schedule_events, newest first: at,
 * fire_at, kind, job_id, reason). EBB_ENOTFOUND when there is none. */
int ebb__store_schedule_json(struct ebb__store *s, const char *id,
                             int max_rows, json_t **out);

#endif
