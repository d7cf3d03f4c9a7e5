/* Object stores for checkpoints: S3 (and any S3-compatible server),
 * Alibaba OSS, or a directory (file://), behind one asynchronous client.
 *
 * A store is configured by a URL (s3://BUCKET[/PREFIX], oss://BUCKET[/
 * PREFIX], file:///DIR), a region, an optional endpoint (default: the
 * cloud's own for that region) and path_style. Keys given to the
 * operations are relative to the URL's prefix.
 *
 * S3 requests are signed with SigV4 (service s3, x-amz-content-sha256 the
 * body's SHA-256, hashed off the loop), OSS requests with OSS V4
 * (OSS4-HMAC-SHA256, UNSIGNED-PAYLOAD); both go through the HTTP client
 * of io/ and its retries (5xx and 503 SlowDown, bounded by max_attempts;
 * CompleteMultipartUpload's 200 with an <Error> body and RequestTimeout
 * are retried too). Bodies are streamed from and to file descriptors: a
 * transfer holds at most OBJSTORE_STREAM_BOUND bytes whatever the
 * object's size. file:// operations run on libuv's thread pool; a write
 * goes to a temporary file, is fsync()ed and renamed into place.
 *
 * Every operation is a request in libuv's sense: it returns 0 and calls
 * its callback exactly once on the loop (never from inside the call), or
 * returns an EBB_E* code and never calls it. Single-threaded: calls are
 * made on the loop's thread.
 */
#ifndef EBB_OBJSTORE_H
#define EBB_OBJSTORE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebb/common.h>

#include "io/http_client.h"

enum ebb__objstore_kind {
    EBB__OBJSTORE_S3 = 0,
    EBB__OBJSTORE_OSS = 1,
    EBB__OBJSTORE_FILE = 2,
};

/* What one transfer holds in memory at most, whatever the object's size:
 * libcurl's upload and download buffers (EBB__HTTP_STREAM_BUFFER, 128 KiB
 * each), an error body (64 KiB) and the 256 KiB buffer an upload's SHA-256
 * is computed through: 576 KiB, with curl's and OpenSSL's own state well
 * inside 640 KiB. */
#define EBB__OBJSTORE_HASH_BUF ((size_t)256 << 10)
#define EBB__OBJSTORE_STREAM_BOUND ((size_t)640 << 10)

/* S3's multipart limits: parts (and single puts) of 5 GiB at most,
 * numbered 1..10000. Parts but the last must be 5 MiB at least, which the
 * server checks at complete (EntityTooSmall). */
#define EBB__OBJSTORE_PART_MAX ((int64_t)5 << 30)
#define EBB__OBJSTORE_PARTS_MAX 10000

/* A parsed store URL; strings owned (ebb__objstore_url_free). */
struct ebb__objstore_url {
    enum ebb__objstore_kind kind;
    char *bucket; /* s3, oss */
    char *prefix; /* s3, oss: "" or "a/b" (no leading or trailing '/') */
    char *dir;    /* file: the absolute directory, no trailing '/' */
};

/* Parses `url`. Returns 0, or EBB_EINVAL with a sentence in `err` that
 * says what is wrong and what to write ("s3://BUCKET[/PREFIX]"), or
 * EBB_ENOMEM. Bucket names: 3..63 of [a-z0-9.-], starting and ending
 * with a letter or digit; a prefix holds no empty, "." or ".." segment. */
int ebb__objstore_url_parse(const char *url, struct ebb__objstore_url *out,
                            char *err, size_t err_size);
void ebb__objstore_url_free(struct ebb__objstore_url *u);

/* Keys to sign with; strings owned (ebb__objstore_creds_free wipes). */
struct ebb__objstore_creds {
    char *access_key_id;
    char *secret_access_key;
    char *session_token; /* NULL without temporary credentials */
};

/* Loads the credentials a store of `kind` uses: for s3 the AWS default
 * chain (ebb/aws_creds.h: environment, then the shared credentials file),
 * for oss ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET
 * (and ALIBABA_CLOUD_SECURITY_TOKEN when set). file:// needs none (0,
 * empty). Returns 0, EBB_EAUTH with what is missing in `err`, or
 * EBB_ENOMEM. */
int ebb__objstore_creds_load(enum ebb__objstore_kind kind,
                             struct ebb__objstore_creds *out, char *err,
                             size_t err_size);
void ebb__objstore_creds_free(struct ebb__objstore_creds *c);

struct ebb__objstore_cfg {
    const char *url;      /* as above */
    const char *region;   /* s3, oss: "us-east-1", "cn-hangzhou" */
    const char *endpoint; /* NULL: the cloud's own for the region */
    int path_style;       /* s3 only: bucket in the path, not the host */
    int max_attempts;     /* per request; 0: the HTTP client's default (4) */
    ebb_dur_ms timeout;   /* per attempt; 0: 10 minutes */
    /* The wall-clock time signatures carry (UTC, ms). Stores sign with
     * real time even where ebb's own clock is virtual: a server refuses
     * a signature 15 minutes off its clock. */
    ebb_time_ms (*now)(void *ctx);
    void *now_ctx;
};

struct ebb__objstore;

/* Opens a store: parses the URL, checks the region and endpoint, and
 * keeps a copy of everything (`creds` included). `http` (borrowed, must
 * outlive the store) carries s3 and oss requests; `loop` runs file://
 * work. Returns 0, EBB_EINVAL / EBB_ECONFIG with a sentence in `err`, or
 * EBB_ENOMEM. */
int ebb__objstore_open(const struct ebb__objstore_cfg *cfg,
                       const struct ebb__objstore_creds *creds,
                       struct ebb__http *http, uv_loop_t *loop,
                       struct ebb__objstore **out, char *err, size_t err_size);

/* The checks of ebb__objstore_open() without opening anything: the URL,
 * the region (required for s3/oss, refused for file), the endpoint
 * (http[s]://HOST[:PORT]), path_style (refused for OSS and file). Sets
 * *kind (may be NULL). Returns 0, EBB_ECONFIG with a sentence in `err`
 * that names the key, or EBB_ENOMEM. */
int ebb__objstore_cfg_check(const struct ebb__objstore_cfg *cfg,
                            enum ebb__objstore_kind *kind, char *err,
                            size_t err_size);

/* Frees the store. Operations still in flight must have completed (their
 * callbacks run); closing the HTTP client first completes them. */
void ebb__objstore_free(struct ebb__objstore *st);

/* The URL an s3/oss store sends `key`'s requests to, without a query
 * (for logs and tests). Caller frees; NULL for file:// or on ENOMEM. */
char *ebb__objstore_object_url(const struct ebb__objstore *st, const char *key);

/* One object of a listing. */
struct ebb__objstore_entry {
    char *key; /* relative to the store's prefix */
    int64_t size;
    char *etag;
    char *upload_id; /* a multipart upload's (mpu_list_page), else NULL */
};

/* Where a listing of multipart uploads resumes: after this key and
 * upload id (ListMultipartUploads' key and upload id markers, as the
 * server gave them: full keys in the bucket; upload_id may be NULL). */
struct ebb__objstore_marker {
    const char *key;
    const char *upload_id;
};

/* What an operation ended with; valid during the callback only. */
struct ebb__objstore_result {
    int status;          /* 0 or EBB_E* (ENOTFOUND, EAUTH, ETHROTTLED, EIO, ...) */
    int http_status;     /* 0 for file:// or when no answer came */
    const char *code;    /* the server's error Code ("NoSuchKey"), or "" */
    const char *message; /* what went wrong, for logs; "" on success */
    const char *etag;      /* put, part, complete, head: the ETag, or "" */
    const char *upload_id; /* multipart create */
    int64_t size;          /* head: the object's size; get: bytes written */
    const struct ebb__objstore_entry *entries; /* list */
    size_t n_entries;
    /* mpu_list_page: where the next page starts; NULL after the last. */
    const struct ebb__objstore_marker *next;
    int attempts;
};

typedef void (*ebb__objstore_cb)(void *arg, const struct ebb__objstore_result *r);

/* Stores `len` bytes of `fd` from `offset` as `key` in one request (up to
 * 5 GiB). */
int ebb__objstore_put(struct ebb__objstore *st, const char *key, int fd,
                      int64_t offset, int64_t len, ebb__objstore_cb cb, void *arg);

/* Writes `key`'s bytes first..first+len-1 (len < 0: to the end) to `fd`
 * at `fd_offset`. A range past the end fails with EBB_EINVAL
 * ("InvalidRange"); a body shorter than announced with EBB_EIO. */
int ebb__objstore_get(struct ebb__objstore *st, const char *key, int64_t first,
                      int64_t len, int fd, int64_t fd_offset, ebb__objstore_cb cb,
                      void *arg);

/* The size and ETag of `key` (EBB_ENOTFOUND when it does not exist). */
int ebb__objstore_head(struct ebb__objstore *st, const char *key,
                       ebb__objstore_cb cb, void *arg);

/* Deletes `key`; a key that does not exist is not an error. */
int ebb__objstore_delete(struct ebb__objstore *st, const char *key,
                         ebb__objstore_cb cb, void *arg);

/* Every key under `prefix` (relative to the store's, "" for all), in key
 * order, following continuation tokens (ListObjectsV2). More than `max`
 * keys fails with EBB_EIO and a message saying so. */
int ebb__objstore_list(struct ebb__objstore *st, const char *prefix, size_t max,
                       ebb__objstore_cb cb, void *arg);

/* Multipart: create returns the upload id in r->upload_id. */
int ebb__objstore_mpu_create(struct ebb__objstore *st, const char *key,
                             ebb__objstore_cb cb, void *arg);
/* Uploads part `part` (1..10000) from `len` bytes of `fd` at `offset`;
 * r->etag is what complete needs. */
int ebb__objstore_mpu_part(struct ebb__objstore *st, const char *key,
                           const char *upload_id, int part, int fd,
                           int64_t offset, int64_t len, ebb__objstore_cb cb,
                           void *arg);
/* Completes the upload from `n` parts in ascending part order, each with
 * the ETag its upload returned. */
int ebb__objstore_mpu_complete(struct ebb__objstore *st, const char *key,
                               const char *upload_id, const char *const *etags,
                               size_t n, ebb__objstore_cb cb, void *arg);
int ebb__objstore_mpu_abort(struct ebb__objstore *st, const char *key,
                            const char *upload_id, ebb__objstore_cb cb, void *arg);
/* The most uploads one page of mpu_list_page holds (S3's and OSS's
 * max-uploads limit, which ebb asks for). */
#define EBB__OBJSTORE_UPLOADS_PAGE 1000

/* One page of the multipart uploads in progress under `prefix` (relative
 * to the store's; ListMultipartUploads), from `from` (NULL: the first
 * page): entries with key and upload_id, and r->next. A page of more
 * than EBB__OBJSTORE_UPLOADS_PAGE entries fails with EBB_EPROTO, so the
 * memory a page takes is bounded; a file:// store has none
 * (EBB_EUNSUPPORTED). */
int ebb__objstore_mpu_list_page(struct ebb__objstore *st, const char *prefix,
                                const struct ebb__objstore_marker *from,
                                ebb__objstore_cb cb, void *arg);

enum ebb__objstore_presign_op {
    EBB__PRESIGN_GET = 0,
    EBB__PRESIGN_PUT = 1,
    EBB__PRESIGN_PART = 2, /* UploadPart: upload_id and part required */
};

/* A URL that lets its holder, without the store's keys, GET or PUT `key`
 * (or upload one part) for `expires_s` seconds (1..604800) from now.
 * The holder sends Host as the URL says and nothing else signed. Returns
 * 0 with a new string in *url (caller frees), EBB_EINVAL (bad expiry,
 * part or upload id), EBB_EUNSUPPORTED for file:// or EBB_ENOMEM. */
int ebb__objstore_presign(const struct ebb__objstore *st,
                          enum ebb__objstore_presign_op op, const char *key,
                          const char *upload_id, int part, int64_t expires_s,
                          char **url);

#endif
