/* Private to src/objstore: the store itself and the signed requests its
 * files share. The rest of ebb sees objstore/objstore.h. */
#ifndef EBB_OBJSTORE_INTERNAL_H
#define EBB_OBJSTORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebb/buf.h>
#include <ebb/digest.h>
#include <ebb/sigv4.h>

#include "objstore/objstore.h"
#include "objstore/objstore_xml.h"

struct ebb__objstore {
    enum ebb__objstore_kind kind;
    char *bucket, *prefix, *dir; /* from the URL */
    char *region;
    char *scheme;   /* "https" or "http" */
    char *host;     /* the endpoint's authority: "s3.us-east-1.amazonaws.com",
                     * "127.0.0.1:9000" */
    int path_style; /* bucket in the path (s3 only) */
    struct ebb__objstore_creds creds;
    struct ebb__http *http;
    uv_loop_t *loop;
    int max_attempts;
    ebb_dur_ms timeout;
    ebb_time_ms (*now)(void *ctx);
    void *now_ctx;
    /* The server's clock minus ours, learned from a RequestTimeTooSkewed
     * answer's Date header; signatures carry now + skew. */
    ebb_dur_ms skew;
};

/* The time a signature carries: the wall clock, corrected by the skew. */
ebb_time_ms ebb__os_now(const struct ebb__objstore *st);

/* The most headers one request carries (the signed ones, Authorization
 * and the extras a caller adds). */
#define OS_MAX_HEADERS 12

/* One signed request: its URL and its "Name: value" header lines. */
struct os_signed {
    char *url;
    char *lines[OS_MAX_HEADERS];
    size_t n;
};

/* Signs `method` on `key` (relative to the prefix; NULL: the bucket) with
 * `query` (as sent, "" for none) for an Authorization header, at the
 * store's wall-clock time. `payload_hash` is the body's SHA-256 hex (S3;
 * NULL: the empty body's) and is ignored for OSS, which signs
 * UNSIGNED-PAYLOAD. `extra` headers (Range, Content-Type) are sent and
 * signed. Returns 0, EBB_EINVAL or EBB_ENOMEM. */
int ebb__os_sign(const struct ebb__objstore *st, const char *method,
                 const char *key, const char *query, const char *payload_hash,
                 const struct ebb_sigv4_header *extra, size_t n_extra,
                 struct os_signed *out);
void ebb__os_signed_free(struct os_signed *s);

/* The full object key: prefix + "/" + key (or key). Caller frees. */
char *ebb__os_full_key(const struct ebb__objstore *st, const char *key);

/* Checks a key given to an operation: 1..1024 bytes, no control
 * character, no empty, "." or ".." segment. Returns 0 or EBB_EINVAL. */
int ebb__os_check_key(const char *key);

/* Checks a listing's prefix: "" (everything), or a key with or without
 * one trailing '/'. Returns 0 or EBB_EINVAL. */
int ebb__os_check_prefix(const char *prefix);

/* One S3/OSS operation in flight (objstore_s3.c sends it, objstore_ops.c
 * makes it). */
enum op_kind { OP_PUT, OP_PART, OP_GET, OP_HEAD, OP_DELETE, OP_LIST, OP_CREATE,
               OP_COMPLETE, OP_ABORT, OP_LIST_UPLOADS };

struct op {
    struct ebb__objstore *st;
    enum op_kind kind;
    ebb__objstore_cb cb;
    void *arg;
    const char *method;
    char *key;   /* relative to the prefix; NULL for the bucket (list) */
    char *query; /* as sent */
    char hash[EBB_SHA256_HEX_LEN];
    int hashed;
    struct ebb__http_stream stream;
    char range[64];
    const char *content_type;
    char *body; /* CompleteMultipartUpload's document */
    size_t n_parts; /* CompleteMultipartUpload's */
    size_t body_len;
    struct os_signed sig;
    uv_work_t work;
    int work_rc;
    /* list */
    char *list_prefix; /* the full prefix asked for (store prefix + ...) */
    size_t max;
    struct ebb__os_list_page page;
};

/* A new operation of `kind` on `key` (NULL: the bucket), or NULL. */
struct op *ebb__os_op_new(struct ebb__objstore *st, enum op_kind kind,
                          const char *method, const char *key, ebb__objstore_cb cb,
                          void *arg);
void ebb__os_op_free(struct op *o);

/* Starts `o`: hashes its upload first where S3 needs the hash, then
 * sends it. Returns 0 (the callback runs once, later) or an EBB_E* code
 * (`o` is freed and the callback never runs). */
int ebb__os_op_start(struct op *o);

/* Makes what `q` holds o's query (o owns it; q is emptied). Returns 0, or
 * EBB_ENOMEM when q failed to grow (q is freed, the query unchanged). */
int ebb__os_op_take_query(struct op *o, struct ebb_buf *q);

/* Sets a listing's query from its prefix and continuation token (or, for
 * OP_LIST_UPLOADS, its key and upload id markers). */
int ebb__os_list_query(struct op *o);

/* file:// operations (objstore_file.c), same contracts as objstore.h. */
int ebb__os_file_put(struct ebb__objstore *st, const char *key, int fd,
                     int64_t offset, int64_t len, ebb__objstore_cb cb, void *arg);
int ebb__os_file_get(struct ebb__objstore *st, const char *key, int64_t first,
                     int64_t len, int fd, int64_t fd_offset, ebb__objstore_cb cb,
                     void *arg);
int ebb__os_file_head(struct ebb__objstore *st, const char *key,
                      ebb__objstore_cb cb, void *arg);
int ebb__os_file_delete(struct ebb__objstore *st, const char *key,
                        ebb__objstore_cb cb, void *arg);
int ebb__os_file_list(struct ebb__objstore *st, const char *prefix, size_t max,
                      ebb__objstore_cb cb, void *arg);

#endif
