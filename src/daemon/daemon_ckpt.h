/* ebbd's side of durable checkpoints (docs/stores.md, docs/agent-protocol.md
 * "Checkpoint transfer (ebbd)").
 *
 * daemon_stores.c opens the configured stores at start and holds each
 * job's key; daemon_ckpt.c serves the agent endpoints (the job
 * document's `store`, /v1/agent/checkpoints..., /v1/agent/resume);
 * daemon_ckpt_store.c does the object-store work off the request: create,
 * complete and abort multipart uploads, check the objects' sizes, write
 * the manifest last, prune beyond `keep` (manifest first), delete a
 * finished job's checkpoints, and sweep what was abandoned.
 *
 * A checkpoint's state lives in its store row (store/store_ckpt.h); what
 * is in memory is only the work in flight, so an ebbd restarted in the
 * middle picks up from the rows. Times on the rows are wall-clock ms. */
#ifndef EBB_DAEMON_CKPT_H
#define EBB_DAEMON_CKPT_H

#include <jansson.h>

#include "config/stores.h"
#include "io/ckpt_object.h"
#include "io/httpd.h"
#include "objstore/objstore.h"

struct ebb__daemon;
struct ebb__job;
struct ebb__ckpt_row;
struct ebb__job_spec;

/* What one part (and the single PUT limit) holds: 64 MiB; the agent
 * uploads parts of this size, the last shorter. */
#define EBB__CKPT_PART_SIZE ((int64_t)64 << 20)
/* Parallel part uploads an agent is told to keep at most. */
#define EBB__CKPT_PARALLEL 4
/* How long presigned URLs stay good. */
#define EBB__CKPT_URL_TTL_S 3600
/* A checkpoint still in flight this long after it was offered is
 * abandoned. */
#define EBB__CKPT_ABANDON_MS ((int64_t)6 * 3600 * 1000)
/* Wall ms between sweeps of abandoned and finished checkpoints. */
#define EBB__CKPT_SWEEP_MS 5000
/* Wall ms between listings of the stores' multipart uploads (each a LIST
 * request, billed). */
#define EBB__MPU_SWEEP_MS ((int64_t)3600 * 1000)

/* ---- stores and keys (daemon_stores.c) ---------------------------------- */

/* Opens every store of ebb.yaml (ebb__objstore_open with the credentials
 * of its kind). Returns 0, or 2 after logging which store lacks which
 * credentials or cannot open. */
int ebb__daemon_stores_open(struct ebb__daemon *d);
/* Makes a file:// store's missing directory (0711), once the state
 * directory is checked and locked (the built-in configuration's store is
 * in it; ebbd --check changes nothing). Returns 0, or 1 after logging. */
int ebb__daemon_stores_make_dirs(struct ebb__daemon *d);
void ebb__daemon_stores_free(struct ebb__daemon *d);

/* The open store named `name`, or NULL; and its configuration. */
struct ebb__objstore *ebb__daemon_objstore(struct ebb__daemon *d, const char *name);
const struct ebb__store_cfg *ebb__daemon_store_cfg(const struct ebb__daemon *d,
                                                   const char *name);

/* The directories of checkpoint `seq` named `name` of job `job_id` in
 * the file:// store `store`: DIR/jobs (0711), then .../JOB, .../ckpt and
 * .../SEQ-NAME (0700, the job's user's when ebbd, as root, can give them
 * away), each made and opened below the one before it, never through a
 * link. Returns 0, or EBB_EIO with a sentence in `why`. */
int ebb__daemon_store_job_dirs(struct ebb__daemon *d, const char *store,
                               const char *job_id, int64_t seq, const char *name,
                               char *why, size_t len);

/* The job's key, made (and committed) on first need. Returns 0, or an
 * EBB_E* code (logged without the key). */
int ebb__daemon_ckpt_key(struct ebb__daemon *d, const char *job_id,
                         struct ebb__ckpt_key *key, int *version);

/* The submit checks of a spec's checkpoint keys: a store that exists,
 * and encrypt: false only where no marketplace host may run the job.
 * Returns 0, or EBB_EINVAL with "file:line: ..." in `why`. */
int ebb__daemon_ckpt_spec_check(const struct ebb__daemon *d,
                                const struct ebb__job_spec *spec, char *why,
                                size_t len);

/* ---- endpoints (daemon_ckpt.c) ------------------------------------------- */

/* Adds "store" to a job document for a job with a store. Returns 0, or an EBB_E* code
 * (the document cannot be served). */
int ebb__daemon_ckpt_job_doc(void *arg, struct ebb__job *job, json_t *doc);

/* Serves /v1/agent/checkpoints... and /v1/agent/resume for `job`'s
 * agent of gang rank `rank` (from its bearer token): it sees and stores
 * only its own rank's checkpoints. */
void ebb__daemon_ckpt_serve(void *arg, struct ebb__job *job, unsigned rank,
                            const struct ebb__httpd_request *req,
                            struct ebb__httpd_response *res);

/* ---- work on the stores (daemon_ckpt_store.c) ---------------------------- */

/* Object keys of checkpoint `seq` of job `job_id` named `name`: file
 * `index` (index >= 0) or the manifest (index < 0). New strings. */
char *ebb__ckpt_object_key(const char *job_id, int64_t seq, const char *name,
                           long index);

/* The local path (file:// stores) of `key`: a new string, or NULL. */
char *ebb__ckpt_file_path(struct ebb__daemon *d, const char *store, const char *key);

/* Lists each s3/oss store's multipart uploads under jobs/ and aborts
 * those no checkpoint in flight owns (daemon_mpu_sweep.c). */
void ebb__daemon_mpu_sweep(struct ebb__daemon *d);

/* Starts the sweep timer and the first sweep (resumes `completing` rows,
 * aborts what was left). Returns 0 or 1. */
int ebb__daemon_ckpt_start(struct ebb__daemon *d);
/* Stops the timer; work in flight ends with ebbd's HTTP client. */
void ebb__daemon_ckpt_stop(struct ebb__daemon *d);
/* Frees what is left once the loop has stopped. */
void ebb__daemon_ckpt_free(struct ebb__daemon *d);

/* Starts the work of a row just offered (multipart uploads). */
void ebb__daemon_ckpt_prepare(struct ebb__daemon *d, int64_t seq);
/* Starts completing a committed row; `fraction` is the commit's progress
 * (< 0: not known), which the engine's checkpoint is given. */
void ebb__daemon_ckpt_complete(struct ebb__daemon *d, int64_t seq, double fraction);
/* Marks row `seq` failed with `reason` and aborts its uploads (a row
 * whose work is in flight is aborted when that work ends). */
void ebb__daemon_ckpt_abort(struct ebb__daemon *d, int64_t seq, const char *reason);
/* Whether work on row `seq` is in flight (deleting included). */
int ebb__daemon_ckpt_busy(const struct ebb__daemon *d, int64_t seq);
/* Deletes durable row `seq`'s objects (manifest first), then marks it
 * deleted with `why`; nothing when work on it is in flight. */
void ebb__daemon_ckpt_delete(struct ebb__daemon *d, int64_t seq, const char *why);

/* ---- which rows need work (daemon_ckpt_sweep.c) ---------------------------- */

/* Deletes job `job_id`'s durable checkpoints older than its newest `keep`
 * whole ones: a checkpoint of a gang of `nodes` is whole once every rank
 * stored a part of its name. Every part of a kept name is kept, and so
 * are the parts of a name newer than the oldest kept one (not yet whole);
 * every part of an older name goes. */
void ebb__daemon_ckpt_prune(struct ebb__daemon *d, const char *job_id, int keep,
                            int nodes);
/* 1 when every rank of a gang of `nodes` has a durable part of job
 * `job_id`'s checkpoint `name` (a single instance: its one), else 0, or
 * a negative code; *bytes (when not NULL): the parts' bytes, each rank's
 * newest part once. */
int ebb__daemon_ckpt_parts(struct ebb__daemon *d, const char *job_id, const char *name,
                           int nodes, int64_t *bytes);
/* Looks at every open row (first: ebbd has just started) and starts the
 * work each needs. */
void ebb__daemon_ckpt_sweep(struct ebb__daemon *d, int first);

#endif
