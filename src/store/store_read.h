/* Reads of jobs: for the CLI (`ebb jobs`, `ebb job show`) as JSON rows,
 * each row an object of its columns (integers, reals, text; NULL as null),
 * and what ebbd takes back after a restart as typed rows. Not on any hot
 * path: statements are prepared per call. */
#ifndef EBB_STORE_READ_H
#define EBB_STORE_READ_H

#include <jansson.h>

#include "store/store.h"

/* Jobs, newest first: unfinished ones, or with `all` every job. */
int ebb__store_jobs_json(struct ebb__store *s, int all, json_t **out);

/* The most events, instances and checkpoints one job's answer holds: the
 * newest ones. A job relaunched for hours had 21.7 MB of them, over the
 * API's 16 MiB answer; 1000 rows of each stay far below it. */
#define EBB__STORE_JOB_ROWS 1000

/* One job: its row with "spec" (the stored spec as JSON), "events",
 * "instances", "checkpoints" (each the newest EBB__STORE_JOB_ROWS, oldest
 * first; for a job whose agent offered checkpoints to a store, those
 * instead, newest first: id, name, state, durable, bytes, upload_seconds,
 * created, store, durable_at, reason, rank), "omitted" ({"events": n, "instances": n, "checkpoints": n}: how
 * many older rows of each were left out) and "spent_by_kind" (all the
 * job's spend, omitted rows included). EBB_ENOTFOUND when no job has this
 * id. */
int ebb__store_job_json(struct ebb__store *s, const char *id, json_t **out);

/* The owner's uid of job `id` into *uid. EBB_ENOTFOUND when none. */
int ebb__store_job_owner(struct ebb__store *s, const char *id, int64_t *uid);

/* ---- what ebbd takes back after a restart ---- */

/* A job that has not ended, as stored. Strings valid during the callback. */
struct ebb__recover_job_row {
    const char *id, *spec_json, *spec_yaml, *state, *workdir;
    int64_t owner_uid;
    ebb_time_ms submitted_at, deadline;  /* deadline 0: none */
    ebb_dur_ms work_done_ms;
    ebb_micros spent;
    int retries, preemptions, attempts;  /* attempts: its instance rows */
};

/* An instance that was not known to have ended when ebbd stopped. */
struct ebb__open_instance_row {
    const char *token, *job_id, *provider, *market_plugin, *region, *zone,
        *instance_type, *product, *market, *state, *provider_instance_id,
        *shadow_id, *agent_token_hash, *currency;
    ebb_time_ms requested_at, started_at;  /* started_at 0: unknown */
    ebb_micros price;
};

/* Calls `cb` for each unfinished job in submission order; a non-zero
 * return stops and is returned. */
int ebb__store_unfinished_jobs(struct ebb__store *s,
                               int (*cb)(void *arg, const struct ebb__recover_job_row *r),
                               void *arg);

/* Calls `cb` for each instance in state intent, launching, running or
 * terminating. */
int ebb__store_open_instances(struct ebb__store *s,
                              int (*cb)(void *arg, const struct ebb__open_instance_row *r),
                              void *arg);

#endif
