/* The HTTP client: libcurl's multi socket API driven by a libuv loop.
 *
 * This is the only module that talks to libcurl. It is a handle in libuv's
 * sense: init -> requests -> close(cb), and its memory is gone once the
 * close callback has run. Every request is a one-shot with exactly one
 * completion callback, also on error and on shutdown (EBB_ECANCELED).
 *
 * Requests are retried with exponential backoff and full jitter after
 * connect or resolve errors, timeouts, HTTP 5xx and HTTP 429, or as the
 * request's classifier says (http_retry.c decides); a Retry-After header
 * is honoured (capped at 5 minutes). A request's prepare hook runs before
 * each attempt and may give it its own body and headers (a signature with
 * a fresh nonce). TLS peers are always verified, redirects are not
 * followed, responses are capped in size.
 *
 * Single-threaded: all calls must be made on the loop's thread.
 */
#ifndef EBB_SRC_HTTP_H
#define EBB_SRC_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include <ebb/common.h>
#include <ebb/http.h>

struct ebb__http;

/* Defaults; each one can be changed per client (see the setters below). */
#define EBB__HTTP_TIMEOUT_MS INT64_C(30000)          /* per attempt */
#define EBB__HTTP_CONNECT_TIMEOUT_MS INT64_C(10000)  /* capped at the above */
#define EBB__HTTP_MAX_ATTEMPTS 4
#define EBB__HTTP_BACKOFF_BASE_MS INT64_C(500)
#define EBB__HTTP_BACKOFF_CAP_MS INT64_C(30000)
#define EBB__HTTP_RETRY_AFTER_CAP_MS INT64_C(300000)  /* 5 minutes */
#define EBB__HTTP_MAX_RESPONSE ((size_t)64 << 20)     /* 64 MiB */

/* Creates a client on `loop` and stores it in `*out`.
 *
 * The first call also runs curl_global_init(), guarded by a static flag.
 * That guard is not thread-safe; ebb is single-threaded and creates its
 * clients on the loop thread. Returns 0, EBB_ENOMEM, or EBB_EIO when
 * libcurl cannot be initialised. The client must be released with
 * ebb__http_close(). */
int ebb__http_init(struct ebb__http **out, uv_loop_t *loop);

/* Starts closing the client. Every request still in flight or waiting for a
 * retry completes now, with error EBB_ECANCELED (its callback runs exactly
 * once, before this returns); new requests are refused with EBB_ESHUTDOWN.
 * Once all of the client's libuv handles are closed the client is freed and
 * `closed(arg)` runs on the loop; `closed` may be NULL. Calling it twice is
 * a no-op. After `closed` the client leaves no handle on the loop, so
 * uv_loop_close() can succeed. */
void ebb__http_close(struct ebb__http *h, void (*closed)(void *arg), void *arg);

/* Starts a request. Everything in `req` is copied before this returns.
 * Returns 0, after which `cb(res, arg)` runs exactly once on the loop (never
 * from inside this call); or a negative code, after which `cb` never runs:
 * EBB_EINVAL (no method or URL), EBB_ENOMEM, EBB_ESHUTDOWN (the client is
 * closing). Errors met while performing the request (timeouts, refused
 * connections, a malformed URL, an oversized response) reach `cb` in
 * `res->error`. */
int ebb__http_request(struct ebb__http *h, const struct ebb_http_request *req,
                      ebb_http_cb cb, void *arg);

/* libcurl's receive and send buffers for a streamed transfer. */
#define EBB__HTTP_STREAM_BUFFER (128 * 1024)

/* A request whose body is read from a file and whose successful (2xx)
 * response body is written to one (or to a buffer of the caller's), so
 * that memory does not grow with the size of what travels: libcurl's own buffers (EBB__HTTP_STREAM_BUFFER
 * each way) and at most `max_error_body` bytes of a non-2xx answer are all
 * a streamed transfer holds. Every attempt starts again at the given
 * offsets: a retried upload sends the same bytes, a retried download
 * overwrites the same range. */
/* A streamed upload's bytes made as they are sent: `len` bytes (or
 * fewer, at least one) of the body from `offset` into `buf`; returns how
 * many, or 0 or less to end the request with EBB_EIO, not retried. An
 * attempt that is retried reads again from its start. */
typedef ssize_t (*ebb__http_upload_read_fn)(void *arg, int64_t offset, void *buf, size_t len);

struct ebb__http_stream {
    int upload_fd;           /* -1: the request's own body, upload_read, or none */
    int64_t upload_offset;   /* where the body starts in upload_fd */
    int64_t upload_len;      /* its length, sent as Content-Length */
    ebb__http_upload_read_fn upload_read;  /* with upload_fd -1: the body's source */
    void *upload_arg;
    int download_fd;         /* -1: a 2xx body goes to download_buf, or
                              * with none is kept in memory */
    int64_t download_offset; /* where byte 0 of a 2xx body is written */
    /* With download_fd -1: a 2xx body is written here from byte 0; one
     * longer than download_cap fails the request (EBB_EIO). */
    unsigned char *download_buf;
    size_t download_cap;
    /* Set by the client before the callback runs: bytes of the last
     * attempt's 2xx body written to download_fd or download_buf. */
    int64_t downloaded;
    size_t max_error_body;   /* a non-2xx body beyond this fails (0: 64 KiB) */
};

/* As ebb__http_request(), with the body read from and the response
 * written to the files `s` names (a method other than PUT with an upload
 * is sent with CUSTOMREQUEST). `s` is borrowed and must stay valid until
 * the callback has run; the descriptors are not closed. A prepare hook
 * may change headers but not the body of a streamed upload (EBB_EINVAL).
 * A failed write to download_fd, or a 2xx body longer than download_cap,
 * ends the request with EBB_EIO. */
int ebb__http_request_stream(struct ebb__http *h, const struct ebb_http_request *req,
                             struct ebb__http_stream *s, ebb_http_cb cb, void *arg);

/* Sets the backoff between attempts: attempt n waits a uniformly random
 * time in [0, min(cap, base * 2^(n-1))] ("full jitter", http_retry.c), or
 * longer when the server asked for it with Retry-After. A request's own
 * retry_backoff replaces `base` for it. Defaults: 500 ms and 30 s. Tests
 * shorten them. Values below 0 are treated as 0. */
void ebb__http_set_backoff(struct ebb__http *h, ebb_dur_ms base, ebb_dur_ms cap);

/* Sets the connect timeout for later requests (default 10 s; never longer
 * than a request's own timeout). A value <= 0 restores the default. */
void ebb__http_set_connect_timeout(struct ebb__http *h, ebb_dur_ms timeout);

/* Verifies TLS peers against the CA bundle at `path` instead of the system
 * default; NULL restores the default. The path is copied. Verification
 * itself cannot be turned off. Returns 0 or EBB_ENOMEM. */
int ebb__http_set_ca_file(struct ebb__http *h, const char *path);

/* Trusts a TLS peer by its public key instead of a chain: `pin` is
 * "sha256//<base64 of the SHA-256 of its SubjectPublicKeyInfo>" (curl's
 * CURLOPT_PINNEDPUBLICKEY; several may be joined with ';'). With a pin
 * the chain and host name are not checked, the key is, and a peer with
 * another key fails the request (EBB_EIO). NULL restores chain checks.
 * The pin is copied. Returns 0 or EBB_ENOMEM. */
int ebb__http_set_pinned_key(struct ebb__http *h, const char *pin);

/* Sets the largest response (header block plus body) a request accepts,
 * for later requests; larger ones fail with EBB_EIO. 0 restores the
 * default, 64 MiB. */
void ebb__http_set_max_response(struct ebb__http *h, size_t bytes);

/* The value of header `name` (case-insensitive) in a raw response header
 * block, trimmed, into `out` (`size` bytes). Returns 0, EBB_ENOTFOUND, or
 * EBB_EPROTO when it does not fit. */
int ebb__http_header(const char *block, const char *name, char *out, size_t size);

/* Header `name` read as an HTTP-date (any form HTTP allows), in ms since
 * the epoch: a server's Date, to learn how far its clock is from ours.
 * Returns 0 or EBB_ENOTFOUND (absent or not a date). */
int ebb__http_header_time(const char *block, const char *name, ebb_time_ms *out);

/* Reads the Retry-After header from a raw response header block (as found
 * in ebb_http_response.headers). It may be delta-seconds or an HTTP-date;
 * a date is taken relative to the same response's Date header, so neither
 * the local clock nor clock skew matters. The result is capped at
 * EBB__HTTP_RETRY_AFTER_CAP_MS. Returns 0 and sets `*out` (milliseconds),
 * or EBB_ENOTFOUND when there is no usable Retry-After. */
int ebb__http_parse_retry_after(const char *headers, ebb_dur_ms *out);

#endif
