/* Reads of jobs for the CLI (`ebb jobs`, `ebb job show`), as JSON rows:
 * each row an object of its columns (integers, reals, text; NULL as
 * null). Not on any hot path: statements are prepared per call. */
#ifndef EBB_STORE_READ_H
#define EBB_STORE_READ_H

#include <jansson.h>

#include "store.h"

/* Jobs, newest first: unfinished ones, or with `all` every job. */
int ebb__store_jobs_json(struct ebb__store *s, int all, json_t **out);

/* One job: its row with "spec" (the stored spec as JSON), "events",
 * "instances", "checkpoints" and "spent_by_kind". EBB_ENOTFOUND when no
 * job has this id. */
int ebb__store_job_json(struct ebb__store *s, const char *id, json_t **out);

/* The owner's uid of job `id` into *uid. EBB_ENOTFOUND when none. */
int ebb__store_job_owner(struct ebb__store *s, const char *id, int64_t *uid);

/* The rows of `sql`, with `id` (may be NULL) bound to ?1, as JSON. */
int ebb__store_query_json(struct ebb__store *s, const char *sql, const char *id,
                          json_t **out);

#endif
