/* ebb-agent's side of durable checkpoints (docs/agent-protocol.md,
 * "Checkpoint stores"): uploading each complete checkpoint of a job with
 * a store through the presigned URLs ebbd hands out (ckpt_upload.c),
 * bringing the newest durable one back at the start (ckpt_resume.c), and
 * the JSON calls to ebbd both make (store_api.c).
 *
 * Memory: nothing is staged on the disk, and what the agent holds does
 * not grow with a checkpoint's size: per transfer in flight (`parallel`
 * of them) one chunk being sealed and its tag (EBB__CKPT_STREAM_MEMORY,
 * 4 MiB) and libcurl's buffers (EBB__OBJSTORE_STREAM_BOUND, 640 KiB at
 * most); one stream for the hash pass beside them (4 MiB); the file list
 * (a path and 100 bytes per file) and 33 bytes per 4 MiB chunk.
 */
#ifndef EBB_AGENT_STORE_H
#define EBB_AGENT_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <ebb/http.h>

struct agent;

/* How often the agent asks ebbd about a checkpoint, and for how long. */
#define AGENT_POLL_MS 500
#define AGENT_POLL_LIMIT_MS (10 * 60 * 1000)

/* ---- store_api.c ---- */

/* ebbd's answer: `status` (0 with res->error when none came), its JSON
 * body (borrowed; NULL when not JSON). */
typedef void (*agent_api_cb)(struct agent *a, void *arg, const struct ebb_http_response *res,
                             json_t *body);

/* Sends `method` `path` (under /v1/agent/) to ebbd with the token and
 * `body` (taken; NULL: none). Retries no answer, 5xx and 429. Returns 0
 * (cb runs once, also with EBB_ECANCELED at the end) or an EBB_E* code. */
int agent_api(struct agent *a, const char *method, const char *path, json_t *body,
              agent_api_cb cb, void *arg);

/* A short reason from a failed answer, for events and logs. */
const char *agent_api_why(const struct ebb_http_response *res, json_t *body, char *buf,
                          size_t size);

/* ---- ckpt_upload.c ---- */

/* A complete checkpoint `name` appeared: upload it now, or after the one
 * in flight (only the newest waiting one is kept). `periodic` and
 * `duration_ms` as the checkpoint event has them. */
void agent_upload_offer(struct agent *a, const char *name, bool periodic,
                        int64_t duration_ms);

/* True while an upload is in flight or waiting. */
bool agent_upload_busy(const struct agent *a);

/* The name of the checkpoint being stored, or NULL. */
const char *agent_upload_name(const struct agent *a);

/* Gives up the upload in flight (DELETE at ebbd) and drops the waiting
 * one; agent_upload_idle() is called when it is over. */
void agent_upload_cancel(struct agent *a, const char *why);

/* Releases everything at the end (requests in flight are cancelled by
 * the HTTP client's close, which must follow). */
void agent_upload_free(struct agent *a);

/* Whether a final checkpoint made durable within `time_left_ms` fits, by
 * the last checkpoint's stored size, the measured upload rate, the job's
 * last checkpoint write time and the time ebbd took to complete the last
 * upload; true when nothing is measured yet.
 * Writes the estimate into `*need_ms` (-1: none). */
bool agent_upload_fits(const struct agent *a, int64_t time_left_ms, int64_t *need_ms);

/* run.c: the upload queue became empty (an exit may be waiting for it). */
void agent_upload_idle(struct agent *a);

/* ---- ckpt_resume.c ---- */

/* Asks ebbd for the job's durable checkpoints and brings the newest one
 * that verifies into the checkpoint directory (a->resume_from); each one
 * refused is a `checkpoint_fallback` event. Calls `done(a)` once. */
void agent_resume_start(struct agent *a, void (*done)(struct agent *a));

/* Lets go of a resume still under way (at the end). */
void agent_resume_free(struct agent *a);

#endif
