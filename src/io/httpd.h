/* A small HTTP/1.1 server on a libuv loop.
 *
 * ebbd serves its agent API, the local instances' metadata endpoint and
 * the metrics page with it; tests build fake cloud servers (EC2, Alibaba,
 * vast.ai) on it. It listens on a given IPv4 address and port (port 0: the
 * OS picks one, so tests never collide). A handler sees each parsed
 * request and fills in the response synchronously. Requests are read
 * with Content-Length bodies (no chunked uploads), connections are kept
 * alive as HTTP/1.1 says, and one request per connection is answered at a
 * time (clients do not pipeline).
 *
 * With ebb__httpd_set_tls() it speaks TLS (io/tls.h) instead: the same
 * requests and answers, decrypted on the way in and encrypted on the way
 * out, and a peer that does not speak TLS is disconnected unanswered.
 *
 * A handler can also delay its response (to make clients time out) or drop
 * the connection without answering. Closing the server closes every handle
 * it owns, so a test can end with uv_loop_close() == 0.
 *
 * A server facing the network is given limits (ebb__httpd_set_limits): a
 * cap on open connections, and timeouts for a request to arrive and for a
 * kept-alive connection to stay idle. Whatever the limits, a connection
 * buffers at most one request (a head of 64 KiB, a body of 16 MiB) plus
 * 128 KiB, and writes one answer at a time.
 */
#ifndef EBB_HTTPD_H
#define EBB_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include <ebb/common.h>

#include "io/clock.h"

struct ebb__httpd;

/* A request as the handler sees it. Every string is NUL-terminated and
 * valid only during the handler call. */
struct ebb__httpd_request {
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
    bool tls;            /* it came over TLS (ebb__httpd_set_tls) */
    bool peer_loopback;  /* the peer's address is 127.0.0.0/8 or ::1 */
};

/* What the handler answers. The server resets it before each call to
 * status 200, no extra headers, an empty body, no delay. */
struct ebb__httpd_response {
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

typedef void (*ebb__httpd_handler)(const struct ebb__httpd_request *req,
                                        struct ebb__httpd_response *res,
                                        void *arg);

/* Starts a server on `loop` at 127.0.0.1:<OS-chosen port> that answers with
 * `handler(req, res, arg)`. Returns 0 and sets `*out`, or EBB_EIO /
 * EBB_ENOMEM. Release it with ebb__httpd_close(). */
int ebb__httpd_start(struct ebb__httpd **out, uv_loop_t *loop,
                     ebb__httpd_handler handler, void *arg);

/* The same on `ip` (IPv4 dotted quad, or IPv6 without brackets) and `port`
 * (0: the OS picks). Returns EBB_EINVAL for an address that is neither,
 * EBB_EIO when it cannot listen there (in use, not ours). */
int ebb__httpd_listen(struct ebb__httpd **out, uv_loop_t *loop, const char *ip,
                      uint16_t port, ebb__httpd_handler handler, void *arg);

/* What a server allows each connection. Zero means no limit. */
struct ebb__httpd_limits {
    unsigned max_connections; /* open at once; more are accepted and closed */
    /* Wall-clock ms a request's head may take to arrive in full, counted
     * from the accept or from the end of the previous answer; then 408
     * and the connection closes. */
    ebb_dur_ms header_timeout;
    /* Wall-clock ms a kept-alive connection may wait for its next request,
     * a body may go without a byte, and an answer may take to be written
     * (a client that does not read); then the connection closes. */
    ebb_dur_ms idle_timeout;
    /* Runs the timeouts (borrowed; must outlive the server). Needed when
     * either timeout is set; a virtual clock lets tests step them. */
    struct ebb__clock *clock;
};

/* Sets the limits (copied) for connections accepted from now on; call it
 * right after the server starts. Returns 0, or EBB_EINVAL for a timeout
 * without a clock. */
int ebb__httpd_set_limits(struct ebb__httpd *s, const struct ebb__httpd_limits *lim);

/* What the limits did, for tests and metrics. */
struct ebb__httpd_stats {
    unsigned open;      /* connections open now */
    uint64_t refused;   /* accepted and closed at max_connections */
    uint64_t timed_out; /* closed (or answered 408) at a deadline */
    size_t input_peak;  /* the largest input buffer a connection has had */
};

/* The server's counts now. */
struct ebb__httpd_stats ebb__httpd_stats(const struct ebb__httpd *s);

/* Splits "IPV4:PORT" or "[IPV6]:PORT" into the address (without brackets)
 * and the port. Returns 0 or EBB_EINVAL. */
int ebb__httpd_parse_address(const char *address, char *ip, size_t ip_size,
                             uint16_t *port);

/* Whether `ip` (as ebb__httpd_parse_address() gives it) is a loopback
 * address: 127.0.0.0/8 or ::1. */
bool ebb__httpd_is_loopback_ip(const char *ip);

/* The port it listens on. */
uint16_t ebb__httpd_port(const struct ebb__httpd *s);

/* Its base URL, "http://127.0.0.1:<port>" (no trailing slash); owned by the
 * server. */
const char *ebb__httpd_url(const struct ebb__httpd *s);

struct ebb__tls_ctx;

/* Serves TLS with `ctx` (borrowed: it must outlive the server) on the
 * connections accepted from now on, and makes the URL https://; NULL
 * goes back to plain HTTP. A peer that does not speak TLS, or breaks it,
 * is disconnected. */
void ebb__httpd_set_tls(struct ebb__httpd *s, struct ebb__tls_ctx *ctx);

/* How many complete requests it has received (dropped and delayed ones
 * included). */
uint64_t ebb__httpd_requests(const struct ebb__httpd *s);

/* Closes the listener and every connection (delayed answers are never
 * sent); when all its handles are closed the server is freed and
 * `closed(arg)` runs, if not NULL. */
void ebb__httpd_close(struct ebb__httpd *s, void (*closed)(void *arg),
                           void *arg);

/* Case-insensitive header lookup; the value, or NULL when absent. */
const char *ebb__httpd_header(const struct ebb__httpd_request *req,
                                   const char *name);

/* Sets the response body (copied); `len` bytes from `body`. */
void ebb__httpd_set_body(struct ebb__httpd_response *res,
                              const void *body, size_t len);

/* Sets the response body from a format string (copied). */
void ebb__httpd_set_bodyf(struct ebb__httpd_response *res,
                               const char *fmt, ...) EBB_PRINTF(2, 3);

/* Answers `status` with `body` (reference taken) as compact JSON and its
 * Content-Type; 500 when it cannot be rendered (out of memory). */
void ebb__httpd_set_json(struct ebb__httpd_response *res, int status, json_t *body);

/* Adds a response header "name: value" (copied). Content-Length and
 * Connection are written by the server; do not add them. */
void ebb__httpd_add_header(struct ebb__httpd_response *res,
                                const char *name, const char *value);

/* A TCP port on 127.0.0.1 where nothing listens (bound by the OS, then
 * closed), for connection-refused tests. Returns 0 or EBB_EIO. */
int ebb__httpd_unused_port(uint16_t *port);

#endif
