/* Checkpoints in object stores (store_ckpt.c; docs/stores.md): each job's
 * checkpoint key and one row per checkpoint an agent offered to a store.
 *
 * A row moves preparing -> uploading -> completing -> durable, or to
 * failed (with its reason) from any of those, and a durable one to
 * deleted once newer ones replace it or its job ended. `files` is the
 * row's file list as JSON text (paths, sizes, upload ids, the agent's
 * sums and ETags), which ebbd writes and reads; the store keeps it as it
 * is. The key is the job's AES key as 64 hex digits: it is read and
 * written here only, and never logged. */
#ifndef EBB_STORE_CKPT_H
#define EBB_STORE_CKPT_H

#include <stdint.h>

#include <ebb/common.h>

struct ebb__store;

/* The job's key (hex, 65 bytes with the NUL) and its version into `hex`
 * and *version. Returns 0, EBB_ENOTFOUND when the job has none yet, or a
 * negative EBB_E* code. */
int ebb__store_ckpt_key_get(struct ebb__store *s, const char *job_id,
                            char hex[65], int *version);

/* Stores the job's first key (version 1). EBB_EEXISTS when it has one. */
int ebb__store_ckpt_key_put(struct ebb__store *s, const char *job_id,
                            const char *hex, ebb_time_ms at);

/* One checkpoint row. Strings borrowed (in a callback: valid during it). */
struct ebb__ckpt_row {
    int64_t seq;
    const char *job_id, *instance_token, *store, *name, *kind, *state;
    const char *files;   /* JSON text */
    int encrypt;
    int64_t bytes;       /* plaintext bytes of all files */
    ebb_dur_ms upload_ms, duration_ms;
    int periodic;
    ebb_time_ms created_at, durable_at, updated_at; /* durable_at 0: not */
    const char *reason;  /* "" unless failed */
    unsigned rank;       /* the gang member's that stored it; 0 alone */
};

/* Inserts `r` (seq, durable_at, upload_ms and reason ignored) and sets
 * *seq to its new id. */
int ebb__store_ckpt_insert(struct ebb__store *s, const struct ebb__ckpt_row *r,
                           int64_t *seq);

/* Moves row `seq` to `state`; `files` and `reason` NULL keep them,
 * durable_at 0 and upload_ms, duration_ms, periodic -1 keep theirs.
 * Returns 0 or EBB_ENOTFOUND when no such row. */
int ebb__store_ckpt_update(struct ebb__store *s, int64_t seq, const char *state,
                           const char *files, const char *reason,
                           ebb_time_ms updated_at, ebb_time_ms durable_at,
                           ebb_dur_ms upload_ms, ebb_dur_ms duration_ms,
                           int periodic);

typedef int (*ebb__ckpt_row_cb)(void *arg, const struct ebb__ckpt_row *r);

/* Row `seq` (of `job_id` when not NULL) to `cb`. Returns cb's value, or
 * EBB_ENOTFOUND, or a negative EBB_E* code. */
int ebb__store_ckpt_get(struct ebb__store *s, int64_t seq, const char *job_id,
                        ebb__ckpt_row_cb cb, void *arg);

/* The job's rows in `state` (NULL: all) stored by gang rank `rank` (< 0:
 * by any), newest first. `cb` may run the store's writes. Returns 0, cb's
 * non-zero value, or a negative code. */
int ebb__store_ckpt_of_job(struct ebb__store *s, const char *job_id,
                           const char *state, int rank, ebb__ckpt_row_cb cb, void *arg);

/* 1 when the instance with launch token `token` has ended (terminated or
 * failed) or is unknown, 0 while it may run, or a negative code. */
int ebb__store_ckpt_instance_ended(struct ebb__store *s, const char *token);

/* Every row still in flight (preparing, uploading, completing), oldest
 * first, or with `durable` also the durable rows of jobs that have ended.
 * `cb` may run the store's writes. */
int ebb__store_ckpt_open(struct ebb__store *s, int durable_of_ended,
                         ebb__ckpt_row_cb cb, void *arg);

#endif
