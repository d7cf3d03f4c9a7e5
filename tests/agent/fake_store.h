/* The fake ebbd's checkpoint store endpoints (docs/agent-protocol.md,
 * "Checkpoint stores"), for the agent tests: POST /v1/agent/checkpoints,
 * GET/DELETE /v1/agent/checkpoints/SEQ, POST .../commit and GET
 * /v1/agent/resume, served as ebbd serves them, over a real object
 * store (src/objstore): a file:// directory, or the strict S3 fake
 * (tests/objstore/fake_s3.py, every presigned URL's SigV4 recomputed with
 * botocore). Like ebbd it creates and completes the multipart uploads,
 * hands out presigned URLs, writes the manifest (HMAC under the job key)
 * last, and lists durable checkpoints newest first.
 */
#ifndef EBB_TESTS_AGENT_FAKE_STORE_H
#define EBB_TESTS_AGENT_FAKE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "fake.h"
#include "io/ckpt_object.h"

struct ebb__http;
struct ebb__objstore;

#define FSTORE_JOB "j-20261130-0001"

enum { FSTORE_FILE = 0, FSTORE_S3 = 1, FSTORE_OSS = 2 };

struct fake_store {
    struct fake *f;
    bool s3;                    /* presigned URLs: S3 or OSS */
    bool oss;
    char dir[400];              /* file://: the store's directory */
    pid_t s3_pid;               /* s3: the fake S3 (tests/objstore/servers.h) */
    char s3_dir[256], s3_log[320], s3_faults[320];
    int s3_port;
    struct ebb__http *http;
    struct ebb__objstore *os;
    struct ebb__ckpt_key key;
    char key_hex[EBB__CKPT_KEY_HEX_SIZE];
    bool encrypt;
    int64_t part_size;
    int parallel;
    json_t *rows;               /* every checkpoint, oldest first */
    int posts, commits, deletes, url_gets, resume_gets;
    int ops;                    /* object-store operations in flight */
    int64_t resume_delay_ms;    /* GET /v1/agent/resume answers this late */
    int64_t post_delay_ms;      /* ... and POST /v1/agent/checkpoints */
    int64_t commit_delay_ms;    /* ... and POST /v1/agent/checkpoints/ID/commit */
    int spoil_urls;             /* s3: this many `uploading` answers carry bad
                                 * signatures (the store answers 403) */
    /* Called after an `uploading` answer went out (the SIGKILL test). */
    void (*on_uploading)(struct fake_store *fs);
};

/* Starts a store of `kind` (FSTORE_*; S3 and OSS: the fake S3 in that
 * flavour too) with parts of `part_size`, `parallel` transfers and
 * encryption on or off, and routes the fake ebbd's store endpoints to it. */
void fstore_init(struct fake_store *fs, struct fake *f, int kind, int64_t part_size,
                 int parallel, bool encrypt);

/* Stops it (waits for its operations) and removes what it made. */
void fstore_close(struct fake_store *fs);

/* The job document's "store" member, for JOB_DOC's `more` (static). */
const char *fstore_doc(const struct fake_store *fs);

/* The row of checkpoint `nth` (0: the oldest), or NULL. */
json_t *fstore_row(const struct fake_store *fs, size_t nth);
size_t fstore_count(const struct fake_store *fs, const char *state);

/* The stored bytes of `key` (below the store's prefix) into a new buffer
 * (*len); NULL when there is none. Runs the loop. */
char *fstore_get(struct fake_store *fs, const char *key, size_t *len);

/* Replaces `key` with `len` bytes of `data`. Runs the loop. */
void fstore_put(struct fake_store *fs, const char *key, const void *data, size_t len);

/* Deletes `key`. Runs the loop. */
void fstore_delete(struct fake_store *fs, const char *key);

/* The key of checkpoint `row`'s object `index`, or of its manifest
 * (index -1), into buf. */
const char *fstore_key(json_t *row, int index, char *buf, size_t size);

/* s3: writes the fake S3's faults file (fake_s3.py --faults) and counts
 * logged requests of `op`. */
void fstore_faults(struct fake_store *fs, const char *json);
int fstore_s3_count(const struct fake_store *fs, const char *op);

#endif
