/* io's private header: what the files of one io module share with each
 * other and with nothing else. The rest of src/ uses the front headers
 * (io/httpd.h, ...); tests/check_source.py refuses this one outside io/.
 *
 * The HTTP server (io/httpd.h) is three files with one job each:
 *   httpd.c         the listener, accepting, the server's lifecycle and its
 *                   accessors;
 *   httpd_conn.c    one connection: reading into its buffer, parsing and
 *                   answering one request at a time, writing, TLS, closing;
 *   httpd_limits.c  what the limits do: the connection cap at accept and
 *                   the deadline of each connection.
 * They call each other both ways: a connection re-arms its deadline as it
 * moves on, and a deadline answers 408 on the connection or closes it.
 * That cycle is the server's own; the limits are a file apart only so that
 * each file reads as one job.
 */
#ifndef EBB_IO_INTERNAL_H
#define EBB_IO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebb/list.h>

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

#endif
