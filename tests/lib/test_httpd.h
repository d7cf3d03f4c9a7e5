/* A small HTTP/1.1 server for tests, on the test's own libuv loop.
 *
 * It listens on 127.0.0.1 with a port the OS picks, so tests never collide.
 * Fake cloud servers (EC2, Alibaba, vast.ai) are built on it: a handler
 * sees each parsed request and fills in the response. Requests are read
 * with Content-Length bodies (no chunked uploads), connections are kept
 * alive as HTTP/1.1 says, and one request per connection is answered at a
 * time (clients do not pipeline).
 *
 * A handler can also delay its response (to make clients time out) or drop
 * the connection without answering. Closing the server closes every handle
 * it owns, so a test can end with uv_loop_close() == 0.
 */
#ifndef EBB_TEST_HTTPD_H
#define EBB_TEST_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebb/common.h>

struct ebb__test_httpd;

/* A request as the handler sees it. Every string is NUL-terminated and
 * valid only during the handler call. */
struct ebb__test_httpd_request {
    const char *method;  /* "GET" */
    const char *target;  /* the raw request-target: "/v1/offers?limit=5" */
    const char *path;    /* "/v1/offers" */
    const char *query;   /* "limit=5", or "" */
    const char *version; /* "HTTP/1.1" */
    size_t n_headers;
    const char *const *header_names;  /* as sent */
    const char *const *header_values; /* blanks trimmed */
    const char *body;    /* NUL-terminated; body_len bytes before the NUL */
    size_t body_len;
    uint64_t seq;        /* 1 for the server's first request, and so on */
};

/* What the handler answers. The server resets it before each call to
 * status 200, no extra headers, an empty body, no delay. */
struct ebb__test_httpd_response {
    int status;
    int64_t delay_ms; /* answer this much later (the connection stays open) */
    bool drop;        /* close the connection without answering */
    bool close;       /* answer with "Connection: close", then close */
    /* Private: filled by the helpers below. */
    char *headers_;
    size_t headers_len_;
    char *body_;
    size_t body_len_;
    bool oom_;
};

typedef void (*ebb__test_httpd_handler)(const struct ebb__test_httpd_request *req,
                                        struct ebb__test_httpd_response *res,
                                        void *arg);

/* Starts a server on `loop` at 127.0.0.1:<OS-chosen port> that answers with
 * `handler(req, res, arg)`. Returns 0 and sets `*out`, or EBB_EIO /
 * EBB_ENOMEM. Release it with ebb__test_httpd_close(). */
int ebb__test_httpd_start(struct ebb__test_httpd **out, uv_loop_t *loop,
                          ebb__test_httpd_handler handler, void *arg);

/* The port it listens on. */
uint16_t ebb__test_httpd_port(const struct ebb__test_httpd *s);

/* Its base URL, "http://127.0.0.1:<port>" (no trailing slash); owned by the
 * server. */
const char *ebb__test_httpd_url(const struct ebb__test_httpd *s);

/* How many complete requests it has received (dropped and delayed ones
 * included). */
uint64_t ebb__test_httpd_requests(const struct ebb__test_httpd *s);

/* Closes the listener and every connection (delayed answers are never
 * sent); when all its handles are closed the server is freed and
 * `closed(arg)` runs, if not NULL. */
void ebb__test_httpd_close(struct ebb__test_httpd *s, void (*closed)(void *arg),
                           void *arg);

/* Case-insensitive header lookup; the value, or NULL when absent. */
const char *ebb__test_httpd_header(const struct ebb__test_httpd_request *req,
                                   const char *name);

/* Sets the response body (copied); `len` bytes from `body`. */
void ebb__test_httpd_set_body(struct ebb__test_httpd_response *res,
                              const void *body, size_t len);

/* Sets the response body from a format string (copied). */
void ebb__test_httpd_set_bodyf(struct ebb__test_httpd_response *res,
                               const char *fmt, ...) EBB_PRINTF(2, 3);

/* Adds a response header "name: value" (copied). Content-Length and
 * Connection are written by the server; do not add them. */
void ebb__test_httpd_add_header(struct ebb__test_httpd_response *res,
                                const char *name, const char *value);

/* A TCP port on 127.0.0.1 where nothing listens (bound by the OS, then
 * closed), for connection-refused tests. Returns 0 or EBB_EIO. */
int ebb__test_httpd_unused_port(uint16_t *port);

#endif
