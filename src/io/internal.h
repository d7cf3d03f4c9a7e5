/* io's private header: what the files of one io module share with each
 * other and with nothing else. The rest of src/ uses the front headers
 * (io/httpd.h, io/api_server.h, ...); tests/check_source.py refuses this
 * one outside io/.
 *
 * The HTTP server (io/httpd.h) is three files with one job each:
 *   httpd.c         the listener, accepting, the server's lifecycle and its
 *                   accessors;
 *   httpd_conn.c    one connection: reading into its buffer, parsing and
 *                   answering one request at a time, writing, TLS, closing;
 *   httpd_limits.c  what the limits do: the connection cap at accept and
 *                   the deadline of each connection.
 * The API socket's server (io/api_server.h) is four:
 *   api_server.c    the listener, accepting with the peer's credentials,
 *                   the server's lifecycle;
 *   api_conn.c      one connection: reading lines, writing answers in
 *                   order, its flow control, closing;
 *   api_call.c      calls and answers: a line becomes a call for its
 *                   method, answered once, some after the store's commit;
 *   api_limits.c    what the limits do: the connection cap at accept and
 *                   the deadline of each connection.
 * In each, the files call each other both ways: a connection re-arms its
 * deadline as it moves on, and a deadline answers or closes the
 * connection; api_conn.c hands each line to api_call.c, whose answers go
 * out through api_conn.c. Those cycles are the servers' own; the files
 * are apart only so that each reads as one job.
 */
#ifndef EBB_IO_INTERNAL_H
#define EBB_IO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <uv.h>

#include <ebb/list.h>

#include "base/ratelimit.h"
#include "base/str.h"
#include "io/api_server.h"
#include "io/clock.h"
#include "io/httpd.h"

/* ---- the HTTP server ----------------------------------------------------- */

struct ebb__tls;

/* What a connection is doing, for its deadline (ebb__httpd_conn_watch). */
enum ebb__httpd_phase {
    EBB__HTTPD_NEW,     /* accepted, no byte yet: the header timeout runs */
    EBB__HTTPD_IDLE,    /* kept alive after an answer, no byte yet: idle timeout */
    EBB__HTTPD_HEAD,    /* part of a head: the header timeout, not moved by bytes */
    EBB__HTTPD_BODY,    /* part of a body: the idle timeout, from the last read */
    EBB__HTTPD_ANSWER,  /* writing an answer: the idle timeout */
    EBB__HTTPD_DELAYED, /* a handler delayed its answer: no deadline */
};

struct ebb__httpd_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    struct ebb__timer deadline; /* on s->limits.clock */
    struct ebb__httpd *s;
    struct ebb_list node; /* in s->conns until closing */
    char *in;             /* unparsed bytes are in[in_off, in_len) */
    size_t in_off, in_len, in_cap;
    size_t need;          /* head + body of a request whose body is due; 0 */
    enum ebb__httpd_phase phase;
    bool busy;    /* an answer is delayed or being written */
    bool reading;
    bool closing;
    int open_handles;
    char *pending; /* a delayed answer */
    size_t pending_len;
    bool pending_close;
    struct ebb__tls *tls; /* NULL: plain HTTP */
    bool peer_loopback;
};

struct ebb__httpd {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uint16_t port;
    char url[72];
    ebb__httpd_handler handler;
    void *arg;
    uint64_t requests;
    struct ebb__tls_ctx *tls; /* borrowed; NULL: plain HTTP */
    struct ebb_list conns; /* open connections */
    struct ebb__httpd_limits limits;
    struct ebb__httpd_stats stats;
    bool closing;
    unsigned handles;
    void (*closed)(void *arg);
    void *closed_arg;
};

/* httpd.c: one of the handles `s` counts in s->handles (the listener, a
 * connection's pair, a refused connection) has closed; after the last one
 * `s` is freed and its closed callback runs. */
void ebb__httpd_handle_closed(struct ebb__httpd *s);

/* httpd_conn.c: a connection of `s` with its handles initialised, counted
 * in `s` and listed in s->conns, for the listener to accept into; NULL
 * when out of memory. Close it with ebb__httpd_conn_close(), also when the
 * accept fails. */
struct ebb__httpd_conn *ebb__httpd_conn_new(struct ebb__httpd *s);

/* httpd_conn.c: starts reading an accepted connection and its header
 * timeout; closes it when it cannot read. */
void ebb__httpd_conn_start(struct ebb__httpd_conn *c);

/* httpd_conn.c: closes both handles of `c` (once; later calls do nothing)
 * and takes it out of the server's list and counts. It is freed when both
 * are closed. */
void ebb__httpd_conn_close(struct ebb__httpd_conn *c);

/* httpd_conn.c: answers `status` with an empty body and
 * "Connection: close", then closes. */
void ebb__httpd_answer_error(struct ebb__httpd_conn *c, int status);

/* httpd_limits.c: at max_connections, accepts the waiting connection and
 * closes it at once, and returns true; false when under the cap. */
bool ebb__httpd_refuse_over_cap(struct ebb__httpd *s);

/* httpd_limits.c: readies the deadline of a new connection (not running)
 * in the phase EBB__HTTPD_NEW. */
void ebb__httpd_deadline_init(struct ebb__httpd_conn *c);

/* httpd_limits.c: starts the header timeout of a connection just accepted;
 * closes it when the clock cannot take the timer. */
void ebb__httpd_deadline_start(struct ebb__httpd_conn *c);

/* httpd_limits.c: stops the deadline of a closing connection. */
void ebb__httpd_deadline_stop(struct ebb__httpd_conn *c);

/* httpd_limits.c: re-arms the deadline when the connection's phase
 * changed; call it after anything that may have moved it on. */
void ebb__httpd_conn_watch(struct ebb__httpd_conn *c);

/* ---- the API socket's server --------------------------------------------- */

/* What a connection is doing, for its deadline (ebb__api_conn_watch). */
enum ebb__api_phase {
    EBB__API_NEW,     /* accepted, no byte yet: the request timeout */
    EBB__API_IDLE,    /* no call, nothing partial: the idle timeout */
    EBB__API_PARTIAL, /* part of a message: the request timeout, not moved */
    EBB__API_WORKING, /* calls being answered: ebbd's own time, no deadline */
    EBB__API_WRITING, /* answers not yet taken: the idle timeout per write */
};

struct ebb__api_server {
    uv_loop_t *loop;
    uv_pipe_t listener;
    char *socket_path;
    const struct ebb__api_method *methods;
    void *ctx;
    struct ebb_list conns; /* open connections */
    struct ebb_list held;  /* answers waiting for the store's commit */
    int closing;
    int listener_closed;
    struct ebb__api_limits limits;
    struct ebb__api_stats stats;
    struct ebb__ratelimit refusals; /* log lines about the cap */
    void (*close_cb)(void *arg);
    void *close_arg;
};

struct ebb__api_conn {
    struct ebb__api_server *server;
    struct ebb_list node; /* in server->conns */
    uv_pipe_t pipe;
    uv_shutdown_t shutdown_req;
    struct ebb_buf in;      /* bytes received, not yet a whole line */
    /* Calls not yet answered on the wire, oldest first: answers go out in
     * request order even when a later call is answered first. */
    struct ebb_list calls;
    size_t pending_calls;    /* calls not yet answered */
    size_t pending_writes;   /* answers not yet written */
    int read_done;           /* EOF, error, or server closing */
    int reading;
    int discarding;          /* skipping a request over EBB__API_MAX_REQUEST */
    int closing;
    int aborted;             /* given up: answers are dropped, not written */
    int counted;             /* in stats.open */
    enum ebb__api_phase phase;
    struct ebb__timer deadline; /* on server->limits.clock */
    uid_t uid;
    gid_t gid;
    pid_t pid;
};

/* api_server.c: frees a closing server, and runs its close callback, once
 * its listener and every connection have closed; otherwise does nothing. */
void ebb__api_server_maybe_finish(struct ebb__api_server *s);

/* api_conn.c: a connection of `s` with its pipe initialised and listed in
 * s->conns, for the listener to accept into; NULL when out of memory. */
struct ebb__api_conn *ebb__api_conn_new(struct ebb__api_server *s);

/* api_conn.c: counts an accepted connection as open, starts reading it
 * and starts its request timeout. */
void ebb__api_conn_start(struct ebb__api_conn *conn);

/* api_conn.c: closes `conn` at once, cancelling its writes; it is freed
 * when its pipe has closed. Only for a connection no call points to. */
void ebb__api_conn_close(struct ebb__api_conn *conn);

/* api_conn.c: closes `conn` when it is done: nothing more to read and
 * every call answered (and, unless it was given up, written). */
void ebb__api_conn_maybe_close(struct ebb__api_conn *conn);

/* api_conn.c: writes `msg` (reference taken) as one line; a connection
 * given up drops it. */
void ebb__api_conn_send(struct ebb__api_conn *conn, json_t *msg);

/* api_call.c: makes the `len` bytes at `line` (one message, without its
 * newline) a call, last in the connection's queue, and hands it to its
 * method, or answers it with the error that says why not. */
void ebb__api_dispatch(struct ebb__api_conn *conn, const char *line, size_t len);

/* api_call.c: a call, last in the queue, answered "bad_request" for a
 * request over EBB__API_MAX_REQUEST that was skipped unread. */
void ebb__api_answer_too_large(struct ebb__api_conn *conn);

/* api_limits.c: at a cap (all connections, or half of them for this
 * user), answers `conn` "busy", closes it and returns true; false when it
 * may be served. Needs the peer's credentials. */
bool ebb__api_refuse_over_cap(struct ebb__api_conn *conn);

/* api_limits.c: readies the deadline of a new connection (not running)
 * in the phase EBB__API_NEW. */
void ebb__api_deadline_init(struct ebb__api_conn *conn);

/* api_limits.c: starts the request timeout of a connection just accepted. */
void ebb__api_deadline_start(struct ebb__api_conn *conn);

/* api_limits.c: stops the deadline of a closing connection. */
void ebb__api_deadline_stop(struct ebb__api_conn *conn);

/* api_limits.c: re-arms the deadline when the connection's phase changed;
 * call it after anything that may have moved it on. */
void ebb__api_conn_watch(struct ebb__api_conn *conn);


/* ---- the HTTP client ------------------------------------------------------
 * Two files: http_client.c (requests, attempts, retries, completion) and
 * http_multi.c (libcurl's multi socket API on libuv: socket polls and the
 * curl timer). The glue hands finished transfers back to the client
 * (ebb__http_drain), and both count the client's open uv handles. */

struct sock {
    uv_poll_t poll;
    curl_socket_t fd;
    struct ebb__http *h;
    struct ebb_list node; /* on h->socks */
};

struct ebb__http {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;
    struct ebb_list reqs;
    struct ebb_list socks;
    /* Open uv handles: the curl timer, the socket polls and one timer per
     * request. The client is freed when this drops to zero while closing. */
    unsigned handles;
    bool closing;
    void (*closed)(void *arg);
    void *closed_arg;
    ebb_dur_ms backoff_base;
    ebb_dur_ms backoff_cap;
    ebb_dur_ms connect_timeout;
    size_t max_response;
    char *ca_file;
    char *pinned_key;
    uint64_t rng;
};

/* http_multi.c: sets libcurl's socket and timer callbacks on h->multi and
 * initialises h->timer (the caller counts it in h->handles). */
void ebb__http_multi_init(struct ebb__http *h);
/* http_multi.c: closes the socket polls libcurl did not report removed. */
void ebb__http_multi_close_socks(struct ebb__http *h);
/* http_client.c: completes every transfer libcurl reports finished; stops
 * when a completion closed the client. */
void ebb__http_drain(struct ebb__http *h);
/* http_client.c: one of the client's uv handles has closed; frees the
 * client when it was the last and the client is closing. */
void ebb__http_handle_closed(struct ebb__http *h);

#endif
