/* Packed workdirs kept in a job's store (daemon_workdir_store.c;
 * docs/stores.md "Workdirs").
 *
 * Once the last workdir_put chunk of an upload that named a store has
 * verified, ebbd seals the tar off the loop (ebb__ckpt_encrypt under
 * K(sha) = ebb__ckpt_workdir_key(ebbd's workdir secret, sha), as the file
 * "<sha256 hex>" of checkpoint "workdir"), HEADs PREFIX/workdirs/<sha256>
 * in that store and keeps an object of the right stored size as it is,
 * else PUTs the sealed file, and then records (store, sha) as stored
 * (store/store_workdir.h) and removes the spooled files. The CLI polls
 * with workdir_put until the seal is stored or failed. Objects are shared
 * by every job with the same tar; a job's end deletes nothing. The sweep
 * (daemon_workdir_sweep.c) deletes a tar no job that has not ended names
 * and no submit found for EBB__WORKDIR_UNUSED_MS. */
#ifndef EBB_DAEMON_WORKDIR_H
#define EBB_DAEMON_WORKDIR_H

#include <stdint.h>

#include <jansson.h>

#include "io/api_server.h"
#include "io/ckpt_object.h"

struct ebb__daemon;
struct ebb__job;

/* How long a seal's outcome stays to be polled, and how many are kept. */
#define EBB__WORKDIR_OUTCOME_MS ((int64_t)10 * 60 * 1000)
#define EBB__WORKDIR_SEALS_MAX 64

/* The key tar `sha` (64 hex digits) is sealed under; ebbd's secret is
 * made (RAND_bytes) and committed on first need. Returns 0 or an EBB_E*
 * code (logged, without the secret). */
int ebb__daemon_workdir_key(struct ebb__daemon *d, const char *sha,
                            struct ebb__ckpt_key *out);

/* Starts keeping the spooled tar at `tar` (taken: renamed or removed) of
 * `size` bytes and SHA-256 `sha` in `store`. Never fails: a fault is the
 * seal's outcome, which ebb__daemon_workdir_answer reports. */
void ebb__daemon_workdir_seal(struct ebb__daemon *d, const char *store, const char *sha,
                              uint64_t size, const char *tar);

/* Answers a workdir_put begin for (store, sha) when ebbd seals it now,
 * sealed it lately, or the store holds it: {needed: false, offset: size,
 * state: "sealing" | "stored" | "failed", reason}. A failure is answered
 * once and then forgotten, so that the next submit tries again. Returns 1
 * when it answered, 0 when ebbd knows nothing of it. */
int ebb__daemon_workdir_answer(struct ebb__daemon *d, struct ebb__api_call *call,
                               const char *store, const char *sha, uint64_t size);

/* Adds "workdir_archive" {url, sha256, size, stored_size, key} to the
 * document of a job whose workdir is in a store (url: presigned GET valid
 * EBB__CKPT_URL_TTL_S, or file:///PATH). Returns 0 or an EBB_E* code. */
int ebb__daemon_workdir_job_doc(struct ebb__daemon *d, struct ebb__job *job, json_t *doc);

/* Whether ebbd is sealing (store, sha) now. */
int ebb__daemon_workdir_sealing(struct ebb__daemon *d, const char *store, const char *sha);

/* Frees what is left once the loop has stopped. */
void ebb__daemon_workdir_seals_free(struct ebb__daemon *d);

/* A stored tar unused this long (wall ms) is deleted; sweeps run at start
 * and every EBB__WORKDIR_SWEEP_MS, EBB__WORKDIR_SWEEP_ROWS tars at most
 * each. */
#define EBB__WORKDIR_UNUSED_MS ((int64_t)7 * 24 * 3600 * 1000)
#define EBB__WORKDIR_SWEEP_MS ((int64_t)3600 * 1000)
#define EBB__WORKDIR_SWEEP_ROWS 32

/* Starts the sweep of unused tars (nothing without stores). 0 or 1. */
int ebb__daemon_workdir_sweep_start(struct ebb__daemon *d);
/* Stops its timer (at shutdown); deletes in flight end with the HTTP
 * client. */
void ebb__daemon_workdir_sweep_stop(struct ebb__daemon *d);

#endif
