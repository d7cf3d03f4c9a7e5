/* Packed workdirs in object stores (store_workdir.c; docs/stores.md):
 * ebbd's workdir secret, the tars it has put into each store, and the tar
 * each job runs.
 *
 * A tar is stored content-addressed (PREFIX/workdirs/<sha256>) and shared
 * by every job that submits it, sealed under a key derived from the
 * secret and its SHA-256 (ebb__ckpt_workdir_key). The secret is 64 hex
 * digits, read and written here only, and never logged. */
#ifndef EBB_STORE_WORKDIR_H
#define EBB_STORE_WORKDIR_H

#include <stdint.h>

#include <ebb/common.h>

struct ebb__store;

/* ebbd's workdir secret (hex, 65 bytes with the NUL). Returns 0,
 * EBB_ENOTFOUND when none was made yet, or a negative EBB_E* code. */
int ebb__store_workdir_secret_get(struct ebb__store *s, char hex[65]);
/* Stores the secret; EBB_EEXISTS (or EBB_EDB) when there is one. */
int ebb__store_workdir_secret_put(struct ebb__store *s, const char *hex, ebb_time_ms at);

/* A tar that `store` holds: its plaintext and stored sizes into *size and
 * *stored_size. Returns 0, EBB_ENOTFOUND or a negative code. */
int ebb__store_workdir_stored(struct ebb__store *s, const char *store, const char *sha256,
                              int64_t *size, int64_t *stored_size);
/* Records that `store` holds the tar `sha256`. */
int ebb__store_workdir_stored_put(struct ebb__store *s, const char *store,
                                  const char *sha256, int64_t size, int64_t stored_size,
                                  ebb_time_ms at);

/* A submit found the tar in `store`: its used_at moves on to `at`. */
int ebb__store_workdir_touch(struct ebb__store *s, const char *store, const char *sha256,
                             ebb_time_ms at);
/* Forgets that `store` holds the tar (its object is being deleted). */
int ebb__store_workdir_forget(struct ebb__store *s, const char *store, const char *sha256);

typedef int (*ebb__workdir_row_cb)(void *arg, const char *store, const char *sha256);
/* Up to `max` stored tars, least lately used first, used before `before`
 * and named by no job that has not ended, to `cb` (which may not write).
 * Returns 0, cb's non-zero value, or a negative code. */
int ebb__store_workdir_unused(struct ebb__store *s, ebb_time_ms before, int max,
                              ebb__workdir_row_cb cb, void *arg);

/* The tar a job runs. */
struct ebb__job_workdir {
    char store[256];
    char sha256[65];
    int64_t size, stored_size;
};

/* Records the job's tar (in the transaction that stores the job). */
int ebb__store_job_workdir_put(struct ebb__store *s, const char *job_id,
                               const struct ebb__job_workdir *w);
/* The job's tar into *w. Returns 0, EBB_ENOTFOUND (the job has none) or
 * a negative code. */
int ebb__store_job_workdir_get(struct ebb__store *s, const char *job_id,
                               struct ebb__job_workdir *w);

#endif
