/* Sending S3 and OSS operations over the HTTP client of io/.
 *
 * Each operation is one `struct op`: it is signed when it is sent and
 * re-signed before every retry (prepare hook), so a signature is never
 * older than one attempt. An upload to S3 first has its SHA-256 computed
 * on libuv's thread pool (x-amz-content-sha256 names the body), reading
 * the file through one EBB__OBJSTORE_HASH_BUF buffer; the body is then
 * streamed from the file (io/http_client.h, ebb__http_request_stream).
 * A download is streamed into the caller's file and checked against the
 * Content-Length the server announced. Listings follow continuation
 * tokens, one page (at most 1000 keys) in memory at a time besides the
 * entries kept.
 */
#include "objstore/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <ebb/buf.h>
#include <ebb/digest.h>
#include <ebb/urlenc.h>

void ebb__os_op_free(struct op *o)
{
    ebb__os_signed_free(&o->sig);
    ebb__os_list_page_free(&o->page);
    free(o->key);
    free(o->query);
    free(o->body);
    free(o->list_prefix);
    free(o);
}

static void finish(struct op *o, struct ebb__objstore_result *r)
{
    if (r->code == NULL)
        r->code = "";
    if (r->message == NULL)
        r->message = "";
    if (r->etag == NULL)
        r->etag = "";
    if (r->upload_id == NULL)
        r->upload_id = "";
    o->cb(o->arg, r);
    ebb__os_op_free(o);
}

static void finish_status(struct op *o, int status, const char *message)
{
    struct ebb__objstore_result r = {.status = status, .message = message};
    finish(o, &r);
}

static int header_int(const char *headers, const char *name, int64_t *out)
{
    char v[32];
    if (ebb__http_header(headers, name, v, sizeof(v)) != 0 || v[0] < '0' || v[0] > '9')
        return EBB_EPROTO;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0')
        return EBB_EPROTO;
    *out = x;
    return 0;
}

/* ---- sending ---- */

static int sign(struct op *o)
{
    struct ebb_sigv4_header extra[2];
    size_t n = 0;
    if (o->range[0] != '\0')
        extra[n++] = (struct ebb_sigv4_header){"Range", o->range};
    if (o->content_type != NULL)
        extra[n++] = (struct ebb_sigv4_header){"Content-Type", o->content_type};
    ebb__os_signed_free(&o->sig);
    const char *hash = o->hashed ? o->hash : NULL;
    char body_hash[EBB_SHA256_HEX_LEN];
    if (o->body != NULL) {
        int rc = ebb_sha256_hex(o->body, o->body_len, body_hash);
        if (rc != 0)
            return rc;
        hash = body_hash;
    }
    return ebb__os_sign(o->st, o->method, o->key, o->query, hash, extra, n, &o->sig);
}

/* Every attempt after the first is signed anew, with the time it is
 * sent at. */
static int prepare(void *arg, struct ebb_http_attempt *a)
{
    struct op *o = arg;
    if (a->attempt > 1) {
        int rc = sign(o);
        if (rc != 0)
            return rc;
    }
    a->headers = (const char *const *)o->sig.lines;
    a->n_headers = o->sig.n;
    return 0;
}

static int classify(void *arg, const struct ebb_http_response *res)
{
    struct op *o = arg;
    if (res->error != 0)
        return -1;
    if (o->kind == OP_COMPLETE && res->status == 200) {
        /* S3 says a 200 may carry an <Error> or invalid XML: both are a
         * failed attempt (botocore's _handle_200_error). */
        char *etag = NULL;
        struct ebb__os_error e;
        int rc = ebb__os_parse_complete(res->body, res->body_len, &etag, &e);
        free(etag);
        return rc == 0 ? 0 : 1;
    }
    if (res->status >= 200 && res->status < 300)
        return 0;
    struct ebb__os_error e;
    const char *code = ebb__os_parse_error(res->body, res->body_len, &e) == 0
                           ? e.code : "";
    /* Our clock is off by more than the 15 minutes S3 and OSS allow: the
     * answer's Date says by how much, and the next attempt (signed anew
     * by prepare) and every later signature of this store take it into
     * account. */
    ebb_time_ms server;
    if (strcmp(code, "RequestTimeTooSkewed") == 0 &&
        ebb__http_header_time(res->headers, "Date", &server) == 0) {
        o->st->skew = server - o->st->now(o->st->now_ctx);
        return 1;
    }
    return ebb__os_retryable(res->status, code) ? 1 : 0;
}

static void on_http(const struct ebb_http_response *res, void *arg);

static int send_op(struct op *o)
{
    int rc = sign(o);
    if (rc != 0)
        return rc;
    struct ebb_http_request req = {
        .struct_size = sizeof(req),
        .method = o->method,
        .url = o->sig.url,
        .headers = (const char *const *)o->sig.lines,
        .n_headers = o->sig.n,
        .body = o->body,
        .body_len = o->body_len,
        .timeout = o->st->timeout,
        .max_attempts = o->st->max_attempts,
        .prepare = prepare,
        .classify = classify,
        .hook_arg = o,
    };
    int streamed = o->stream.upload_fd >= 0 || o->stream.download_fd >= 0;
    return ebb__http_request_stream(o->st->http, &req, streamed ? &o->stream : NULL,
                                    on_http, o);
}

/* An error answer as a result: the code the body names, else the status. */
static void finish_error(struct op *o, const struct ebb_http_response *res)
{
    struct ebb__os_error e;
    if (ebb__os_parse_error(res->body, res->body_len, &e) != 0)
        memset(&e, 0, sizeof(e));
    char msg[512];
    snprintf(msg, sizeof(msg), "%s %s: HTTP %d%s%s%s%s%s%s", o->method,
             o->key != NULL ? o->key : "(bucket)", res->status,
             e.code[0] ? " " : "", e.code, e.message[0] ? ": " : "", e.message,
             e.ec[0] ? " EC " : "", e.ec);
    struct ebb__objstore_result r = {
        .status = ebb__os_status_of(res->status, e.code),
        .http_status = res->status,
        .code = e.code,
        .message = msg,
        .attempts = res->attempts,
    };
    finish(o, &r);
}

/* Strips the store's prefix (and its '/') from every listed key. */
static int strip_prefix(struct op *o)
{
    size_t n = strlen(o->st->prefix);
    for (size_t i = 0; n > 0 && i < o->page.n; i++) {
        char *k = o->page.v[i].key;
        if (strncmp(k, o->st->prefix, n) != 0 || k[n] != '/')
            return EBB_EPROTO;
        memmove(k, k + n + 1, strlen(k + n + 1) + 1);
    }
    return 0;
}

int ebb__os_op_take_query(struct op *o, struct ebb_buf *q)
{
    if (q->failed) {
        ebb_buf_free(q);
        return EBB_ENOMEM;
    }
    free(o->query);
    o->query = ebb_buf_take(q);
    return 0;
}

/* ListMultipartUploads' query, its names in the order SigV4 sorts them. */
static int uploads_query(struct op *o)
{
    struct ebb_buf q = {0};
    ebb_buf_puts(&q, "");
    if (o->page.next_key_marker != NULL) {
        ebb_buf_puts(&q, "key-marker=");
        ebb_pct_encode(&q, o->page.next_key_marker, strlen(o->page.next_key_marker), 0);
        ebb_buf_puts(&q, "&");
    }
    ebb_buf_printf(&q, "max-uploads=%zu&prefix=", o->max);
    ebb_pct_encode(&q, o->list_prefix, strlen(o->list_prefix), 0);
    if (o->page.next_upload_marker != NULL) {
        ebb_buf_puts(&q, "&upload-id-marker=");
        ebb_pct_encode(&q, o->page.next_upload_marker, strlen(o->page.next_upload_marker), 0);
    }
    ebb_buf_puts(&q, "&uploads=");
    return ebb__os_op_take_query(o, &q);
}

int ebb__os_list_query(struct op *o)
{
    if (o->kind == OP_LIST_UPLOADS)
        return uploads_query(o);
    struct ebb_buf q = {0};
    ebb_buf_puts(&q, "");
    if (o->page.next_token != NULL) {
        ebb_buf_puts(&q, "continuation-token=");
        ebb_pct_encode(&q, o->page.next_token, strlen(o->page.next_token), 0);
        ebb_buf_puts(&q, "&");
    }
    ebb_buf_puts(&q, "list-type=2&prefix=");
    ebb_pct_encode(&q, o->list_prefix, strlen(o->list_prefix), 0);
    return ebb__os_op_take_query(o, &q);
}

static void on_list_page(struct op *o, const struct ebb_http_response *res)
{
    int uploads = o->kind == OP_LIST_UPLOADS;
    int rc = uploads ? ebb__os_parse_uploads(res->body, res->body_len, &o->page)
                     : ebb__os_parse_list(res->body, res->body_len, &o->page);
    if (rc != 0) {
        finish_status(o, rc, uploads ? "the listing is not a ListMultipartUploadsResult"
                                     : "the listing is not a ListBucketResult");
        return;
    }
    /* An uploads page is one page asked for, so more is the server's
     * fault; keys are every page's, so more is the caller's bound. */
    if (o->page.n > o->max) {
        char msg[128];
        snprintf(msg, sizeof(msg),
                 uploads ? "more than the %zu multipart uploads asked for in one page"
                         : "more than %zu keys under the prefix",
                 o->max);
        finish_status(o, uploads ? EBB_EPROTO : EBB_EIO, msg);
        return;
    }
    if (o->page.truncated && !uploads) {
        rc = ebb__os_list_query(o);
        if (rc == 0)
            rc = send_op(o);
        if (rc != 0)
            finish_status(o, rc, "could not ask for the next page");
        return;
    }
    rc = strip_prefix(o);
    struct ebb__objstore_marker next = {o->page.next_key_marker,
                                        o->page.next_upload_marker};
    struct ebb__objstore_result r = {.status = rc, .http_status = res->status,
                                     .entries = o->page.v, .n_entries = o->page.n,
                                     .next = uploads && o->page.truncated ? &next : NULL,
                                     .attempts = res->attempts};
    if (rc != 0)
        r.message = "a listed key lies outside the store's prefix";
    finish(o, &r);
}

/* A retried CompleteMultipartUpload that meets NoSuchUpload may have
 * completed on an attempt whose answer was lost. It did if the key now
 * holds a multipart object of as many parts (its ETag ends in "-N", as
 * S3's and OSS's do); then the upload is complete, else the error stands.
 * Checkpoint keys are never reused, so an older object cannot pass. */
static void on_confirmed(void *arg, const struct ebb__objstore_result *h)
{
    struct op *o = arg;
    char suffix[32];
    snprintf(suffix, sizeof(suffix), "-%zu", o->n_parts);
    size_t el = strlen(h->etag), sl = strlen(suffix);
    const char *end = h->etag + el - (el > 0 && h->etag[el - 1] == '"');
    int done = h->status == 0 && (size_t)(end - h->etag) > sl &&
               strncmp(end - sl, suffix, sl) == 0;
    struct ebb__objstore_result r = {
        .status = done ? 0 : EBB_ENOTFOUND,
        .code = done ? "" : "NoSuchUpload",
        .message = done ? "" : "the upload is gone and the key holds no object it made",
        .etag = done ? h->etag : "",
        .http_status = done ? 200 : 404,
        .attempts = h->attempts,
    };
    finish(o, &r);
}

static int confirm_completed(struct op *o, const struct ebb_http_response *res)
{
    struct ebb__os_error e;
    if (o->kind != OP_COMPLETE || res->status != 404 || res->attempts < 2 ||
        ebb__os_parse_error(res->body, res->body_len, &e) != 0 ||
        strcmp(e.code, "NoSuchUpload") != 0)
        return -1;
    return ebb__objstore_head(o->st, o->key, on_confirmed, o);
}

static void on_http(const struct ebb_http_response *res, void *arg)
{
    struct op *o = arg;
    if (res->error != 0) {
        struct ebb__objstore_result r = {.status = res->error,
                                         .message = res->error_message,
                                         .attempts = res->attempts};
        finish(o, &r);
        return;
    }
    if (res->status < 200 || res->status >= 300) {
        if (confirm_completed(o, res) != 0)
            finish_error(o, res);
        return;
    }
    struct ebb__objstore_result r = {.http_status = res->status,
                                     .attempts = res->attempts};
    char etag[256] = "";
    char *owned = NULL;
    struct ebb__os_error e; /* outlives the switch: r.code may point into it */
    switch (o->kind) {
    case OP_LIST:
    case OP_LIST_UPLOADS:
        on_list_page(o, res);
        return;
    case OP_CREATE:
        r.status = ebb__os_parse_upload_id(res->body, res->body_len, &owned);
        r.upload_id = owned;
        if (r.status != 0)
            r.message = "the answer holds no UploadId";
        break;
    case OP_COMPLETE:
        r.status = ebb__os_parse_complete(res->body, res->body_len, &owned, &e);
        r.etag = owned;
        if (r.status != 0) {
            r.code = e.code;
            r.status = e.code[0] ? ebb__os_status_of(200, e.code) : EBB_EPROTO;
            r.message = e.code[0] ? e.message : "the answer is not a "
                                                "CompleteMultipartUploadResult";
        }
        break;
    case OP_GET: {
        int64_t want;
        if (header_int(res->headers, "Content-Length", &want) != 0 ||
            want != o->stream.downloaded) {
            r.status = EBB_EIO;
            r.message = "the object's body ended before its Content-Length";
        }
        r.size = o->stream.downloaded;
        break;
    }
    case OP_HEAD:
        if (header_int(res->headers, "Content-Length", &r.size) != 0) {
            r.status = EBB_EPROTO;
            r.message = "the answer has no Content-Length";
        }
        ebb__http_header(res->headers, "ETag", etag, sizeof(etag));
        r.etag = etag;
        break;
    case OP_PUT:
    case OP_PART:
        if (ebb__http_header(res->headers, "ETag", etag, sizeof(etag)) != 0) {
            r.status = EBB_EPROTO;
            r.message = "the answer has no ETag";
        }
        r.etag = etag;
        break;
    case OP_DELETE:
    case OP_ABORT:
        break;
    }
    finish(o, &r);
    free(owned);
}

/* ---- hashing uploads off the loop ---- */

static void hash_work(uv_work_t *w)
{
    struct op *o = w->data;
    unsigned char *buf = malloc(EBB__OBJSTORE_HASH_BUF);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int rc = buf != NULL && ctx != NULL &&
                     EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1
                 ? 0
                 : EBB_ENOMEM;
    for (int64_t done = 0; rc == 0 && done < o->stream.upload_len;) {
        int64_t left = o->stream.upload_len - done;
        size_t want = left < (int64_t)EBB__OBJSTORE_HASH_BUF ? (size_t)left
                                                             : EBB__OBJSTORE_HASH_BUF;
        ssize_t n = pread(o->stream.upload_fd, buf, want,
                          (off_t)(o->stream.upload_offset + done));
        if (n <= 0)
            rc = EBB_EIO; /* shorter than it was said to be, or unreadable */
        else if (EVP_DigestUpdate(ctx, buf, (size_t)n) != 1)
            rc = EBB_ENOMEM;
        else
            done += n;
    }
    unsigned char md[EBB_SHA256_LEN];
    unsigned int md_len = 0;
    if (rc == 0 && EVP_DigestFinal_ex(ctx, md, &md_len) != 1)
        rc = EBB_ENOMEM;
    if (rc == 0)
        ebb_hex(md, sizeof(md), o->hash);
    o->hashed = rc == 0;
    o->work_rc = rc;
    EVP_MD_CTX_free(ctx);
    free(buf);
}

static void hash_done(uv_work_t *w, int status)
{
    struct op *o = w->data;
    int rc = status != 0 ? EBB_ECANCELED : o->work_rc;
    if (rc == 0)
        rc = send_op(o);
    if (rc != 0)
        finish_status(o, rc, rc == EBB_EIO ? "could not read the file to upload"
                                           : "could not start the upload");
}

/* ---- making and starting operations ---- */

struct op *ebb__os_op_new(struct ebb__objstore *st, enum op_kind kind,
                          const char *method, const char *key, ebb__objstore_cb cb,
                          void *arg)
{
    struct op *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return NULL;
    *o = (struct op){.st = st, .kind = kind, .method = method, .cb = cb, .arg = arg,
                     .stream = {.upload_fd = -1, .download_fd = -1}};
    o->key = key != NULL ? strdup(key) : NULL;
    o->query = strdup("");
    if ((key != NULL && o->key == NULL) || o->query == NULL) {
        ebb__os_op_free(o);
        return NULL;
    }
    return o;
}

int ebb__os_op_start(struct op *o)
{
    int rc;
    if (o->stream.upload_fd >= 0 && o->st->kind == EBB__OBJSTORE_S3) {
        o->work.data = o;
        rc = uv_queue_work(o->st->loop, &o->work, hash_work, hash_done) == 0
                 ? 0 : EBB_ENOMEM;
    } else {
        rc = send_op(o);
    }
    if (rc != 0)
        ebb__os_op_free(o);
    return rc;
}

