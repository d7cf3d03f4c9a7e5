/* A small HTTP/1.1 server on libuv; see httpd.h.
 *
 * Each connection buffers what it reads and parses one request at a time.
 * While an answer is delayed or being written the connection keeps reading
 * (so a client that gives up and closes is noticed) but parses nothing
 * more, and it stops reading once BUSY_INPUT_MAX bytes wait: a client that
 * pipelines without reading its answers cannot make it buffer more. The
 * buffer is consumed by moving an offset; its unread rest is moved to the
 * front only when a read needs the room. A connection owns two handles,
 * its TCP stream and its delay timer, and is freed when both are closed.
 * Over TLS, tls_in() stands between the socket and the buffer and
 * tls_seal() between an answer and the socket; everything in between is
 * the same.
 *
 * The limits (ebb__httpd_set_limits) live in their own section below:
 * the connection cap at accept, and one deadline per connection that
 * conn_watch() re-arms as the connection moves between waiting for a
 * request, reading one, and answering.
 */
#include "io/httpd.h"
#include "io/http_head.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ebb/list.h>

#include "base/log.h"
#include "io/tls.h"

/* How much a read asks room for, and how many unparsed bytes a connection
 * keeps while it answers before it stops reading. */
#define READ_CHUNK (64 * 1024)
#define BUSY_INPUT_MAX (64 * 1024)

/* What a connection is doing, for its deadline (conn_watch). */
enum phase {
    PHASE_NEW,     /* accepted, no byte yet: the header timeout runs */
    PHASE_IDLE,    /* kept alive after an answer, no byte yet: idle timeout */
    PHASE_HEAD,    /* part of a head: the header timeout, not moved by bytes */
    PHASE_BODY,    /* part of a body: the idle timeout, from the last read */
    PHASE_ANSWER,  /* writing an answer: the idle timeout */
    PHASE_DELAYED, /* a handler delayed its answer: no deadline */
};

struct conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    struct ebb__timer deadline; /* on s->limits.clock */
    struct ebb__httpd *s;
    struct ebb_list node; /* in s->conns until closing */
    char *in;             /* unparsed bytes are in[in_off, in_len) */
    size_t in_off, in_len, in_cap;
    size_t need;          /* head + body of a request whose body is due; 0 */
    enum phase phase;
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

struct write_req {
    uv_write_t w;
    struct conn *c;
    char *data;
    bool close_after;
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

static void process(struct conn *c);
static void conn_watch(struct conn *c);
static void conn_flow(struct conn *c);
static void answer_error(struct conn *c, int status);

static void server_handle_closed(struct ebb__httpd *s)
{
    if (--s->handles > 0)
        return;
    void (*closed)(void *) = s->closed;
    void *arg = s->closed_arg;
    free(s);
    if (closed != NULL)
        closed(arg);
}

static void conn_handle_closed(uv_handle_t *handle)
{
    struct conn *c = handle->data;
    if (--c->open_handles > 0)
        return;
    struct ebb__httpd *s = c->s;
    free(c->in);
    free(c->pending);
    ebb__tls_free(c->tls);
    free(c);
    server_handle_closed(s);
}

static void conn_close(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    if (c->s->limits.clock != NULL)
        ebb__timer_stop(c->s->limits.clock, &c->deadline);
    c->s->stats.open--;
    ebb_list_remove(&c->node);
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

static void on_write(uv_write_t *w, int status)
{
    struct write_req *wr = (struct write_req *)w;
    struct conn *c = wr->c;
    bool close_after = wr->close_after;
    free(wr->data);
    free(wr);
    if (c->closing) /* canceled by uv_close(); c is freed right after */
        return;
    if (status < 0 || close_after) {
        conn_close(c);
        return;
    }
    c->busy = false;
    process(c);
    conn_flow(c);
    conn_watch(c);
}

/* TLS: replaces the plaintext `*data` with its records (and close_notify
 * when the connection closes after it). */
static int tls_seal(struct conn *c, char **data, size_t *len, bool close_after)
{
    int rc = ebb__tls_write(c->tls, *data, *len);
    if (rc == 0 && close_after)
        ebb__tls_shutdown(c->tls);
    free(*data);
    *data = rc == 0 ? ebb__tls_take(c->tls, len) : NULL;
    return *data != NULL ? 0 : EBB_EIO;
}

/* Takes ownership of `data`. */
static void send_bytes(struct conn *c, char *data, size_t len, bool close_after)
{
    if (c->tls != NULL && tls_seal(c, &data, &len, close_after) != 0) {
        conn_close(c);
        return;
    }
    struct write_req *wr = calloc(1, sizeof(*wr));
    if (wr == NULL) {
        free(data);
        conn_close(c);
        return;
    }
    wr->c = c;
    wr->data = data;
    wr->close_after = close_after;
    c->busy = true;
    uv_buf_t b = uv_buf_init(data, (unsigned)len);
    if (uv_write(&wr->w, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
        free(data);
        free(wr);
        conn_close(c);
        return;
    }
    conn_watch(c);
}

static void on_delay(uv_timer_t *timer)
{
    struct conn *c = timer->data;
    char *data = c->pending;
    c->pending = NULL;
    send_bytes(c, data, c->pending_len, c->pending_close);
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
    }
}

/* Serialises a response; NULL when out of memory. */
static char *render(const struct ebb__httpd_response *res, bool head_only,
                    bool close, size_t *len)
{
    char top[160];
    int n = snprintf(top, sizeof(top), "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\n%s",
                     res->status, reason(res->status), res->body_len_,
                     close ? "Connection: close\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof(top))
        return NULL;
    size_t body_len = head_only ? 0 : res->body_len_;
    size_t total = (size_t)n + res->headers_len_ + 2 + body_len;
    char *out = malloc(total);
    if (out == NULL)
        return NULL;
    memcpy(out, top, (size_t)n);
    if (res->headers_len_ > 0)
        memcpy(out + n, res->headers_, res->headers_len_);
    memcpy(out + (size_t)n + res->headers_len_, "\r\n", 2);
    if (body_len > 0)
        memcpy(out + (size_t)n + res->headers_len_ + 2, res->body_, body_len);
    *len = total;
    return out;
}

static void answer_error(struct conn *c, int status)
{
    struct ebb__httpd_response res = {.status = status};
    size_t len;
    char *data = render(&res, false, true, &len);
    if (data == NULL) {
        conn_close(c);
        return;
    }
    send_bytes(c, data, len, true);
}

/* Drops the first `n` unparsed bytes. An emptied buffer starts over at
 * its front, and one grown past a read for a large body is freed. */
static void consume(struct conn *c, size_t n)
{
    c->in_off += n;
    if (c->in_off < c->in_len)
        return;
    c->in_off = c->in_len = 0;
    if (c->in_cap > 2 * READ_CHUNK) {
        free(c->in);
        c->in = NULL;
        c->in_cap = 0;
    }
}

/* Parses and answers one complete request from c->in. Returns false when
 * more bytes are needed or the connection was given up. */
static bool handle_one(struct conn *c)
{
    const char *in = c->in + c->in_off;
    size_t in_len = c->in_len - c->in_off;
    struct ebb__http_head h;
    int rc = ebb__http_parse_head(in, in_len, &h);
    if (rc == EBB__HTTP_HEAD_MORE)
        return false;
    if (rc < 0) {
        conn_close(c);
        return false;
    }
    if (rc != EBB__HTTP_HEAD_DONE) {
        answer_error(c, rc);
        return false;
    }
    size_t head_len = h.head_len, body_len = h.body_len;
    if (in_len < head_len + body_len) {
        c->need = head_len + body_len;
        ebb__http_head_free(&h);
        return false;
    }
    c->need = 0;

    char *body = malloc(body_len + 1);
    if (body == NULL) {
        ebb__http_head_free(&h);
        conn_close(c);
        return false;
    }
    memcpy(body, in + head_len, body_len);
    body[body_len] = '\0';
    struct ebb__httpd_request req = {
        .method = h.method, .target = h.target, .path = h.path,
        .query = h.query, .version = h.version, .n_headers = h.n_headers,
        .header_names = h.names, .header_values = h.values,
        .body = body, .body_len = body_len,
    };
    bool keep_alive = h.keep_alive, head_only = h.head_only;

    req.seq = ++c->s->requests;
    req.tls = c->tls != NULL;
    req.peer_loopback = c->peer_loopback;
    struct ebb__httpd_response res = {.status = 200};
    c->s->handler(&req, &res, c->s->arg);

    consume(c, head_len + body_len); /* whatever the handler said */

    free(body);
    ebb__http_head_free(&h);

    bool ok = true;
    if (res.drop || c->closing) { /* the handler may close the server */
        conn_close(c);
        ok = false;
    } else {
        if (res.oom_) {
            free(res.body_);
            res.body_ = NULL;
            res.body_len_ = 0;
            res.status = 500;
        }
        bool close = res.close || !keep_alive;
        size_t len;
        char *data = render(&res, head_only, close, &len);
        if (data == NULL) {
            conn_close(c);
            ok = false;
        } else if (res.delay_ms > 0) {
            c->busy = true;
            c->pending = data;
            c->pending_len = len;
            c->pending_close = close;
            uv_timer_start(&c->timer, on_delay, (uint64_t)res.delay_ms, 0);
            conn_watch(c);
        } else {
            send_bytes(c, data, len, close);
        }
    }
    free(res.headers_);
    free(res.body_);
    return ok;
}

static void process(struct conn *c)
{
    while (!c->busy && !c->closing && c->in_len > c->in_off) {
        if (!handle_one(c))
            return;
    }
}

/* Room for one read at the end of the buffer: the unread rest moves to the
 * front first when that makes room, so the bytes move once per read, not
 * once per answer. */
static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = handle->data;
    (void)suggested;
    size_t want = READ_CHUNK;
    if (c->in_off > 0 && c->in_cap - c->in_len < want) {
        memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
        c->in_len -= c->in_off;
        c->in_off = 0;
    }
    if (c->in_cap - c->in_len < want) {
        /* Doubling keeps a 16 MiB body from being copied at every read. */
        size_t cap = c->in_len + want > 2 * c->in_cap ? c->in_len + want : 2 * c->in_cap;
        char *in = realloc(c->in, cap);
        if (in == NULL) {
            *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
            return;
        }
        c->in = in;
        c->in_cap = cap;
        if (cap > c->s->stats.input_peak)
            c->s->stats.input_peak = cap;
    }
    *buf = uv_buf_init(c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}

static void on_tls_written(uv_write_t *w, int status)
{
    struct write_req *wr = (struct write_req *)w;
    struct conn *c = wr->c;
    free(wr->data);
    free(wr);
    if (status < 0 && !c->closing)
        conn_close(c);
}

/* Sends the records a TLS session made on its own (the handshake's) apart
 * from the answers, so they leave `busy` as it is. */
static void tls_flush(struct conn *c)
{
    size_t len;
    char *data = ebb__tls_take(c->tls, &len);
    struct write_req *wr = data != NULL ? calloc(1, sizeof(*wr)) : NULL;
    if (wr == NULL) {
        free(data);
        return;
    }
    wr->c = c;
    wr->data = data;
    uv_buf_t b = uv_buf_init(data, (unsigned)len);
    if (uv_write(&wr->w, (uv_stream_t *)&c->tcp, &b, 1, on_tls_written) != 0) {
        free(data);
        free(wr);
        conn_close(c);
    }
}

/* TLS: the `n` bytes just read into c->in's free space are records. The
 * session takes a copy; the plaintext goes where they were, in room that
 * on_alloc() grants as it would for a plain read. A read yields one
 * record at most, so the loop runs until nothing is left to decrypt; it
 * ends, as each round that yields anything consumes what was fed. A peer
 * that breaks the protocol (plain HTTP included) is cut off. */
static bool tls_in(struct conn *c, const char *data, size_t n)
{
    bool ok = ebb__tls_feed(c->tls, data, n) == 0;
    size_t got = 0;
    uv_buf_t room = uv_buf_init(NULL, 0);
    do {
        on_alloc((uv_handle_t *)&c->tcp, 16384, &room);
        ok = ok && room.base != NULL;
        int rc = ok ? ebb__tls_read(c->tls, room.base, room.len, &got) : 0;
        if (rc != 0)
            ebb__debug("httpd: closing a TLS connection: %s", ebb__tls_error(c->tls));
        ok = ok && rc == 0;
        c->in_len += ok ? got : 0;
    } while (ok && got > 0);
    if (ok)
        tls_flush(c);
    else
        conn_close(c);
    return !c->closing;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = stream->data;
    if (nread < 0) {
        conn_close(c);
        return;
    }
    if (c->tls == NULL)
        c->in_len += (size_t)nread;
    else if (!tls_in(c, buf->base, (size_t)nread))
        return;
    process(c);
    conn_flow(c);
    conn_watch(c);
}

static bool is_loopback(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->ss_family != AF_INET6)
        return false;
    const struct in6_addr *a6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a6) ||
           (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
}

/* ---- limits: the connection cap, reading, deadlines ---------------------- */

static bool over_cap(const struct ebb__httpd *s)
{
    return s->limits.max_connections > 0 && s->stats.open >= s->limits.max_connections;
}

static void refused_closed(uv_handle_t *handle)
{
    struct ebb__httpd *s = handle->data;
    free(handle);
    server_handle_closed(s);
}

/* Over the cap, a connection is accepted and closed at once: the client
 * learns at once, and neither the kernel's backlog nor ebbd's descriptors
 * fill with connections nobody serves. */
static void refuse(struct ebb__httpd *s)
{
    uv_tcp_t *t = malloc(sizeof(*t));
    if (t == NULL)
        return;
    uv_tcp_init(s->loop, t);
    t->data = s;
    s->handles++;
    s->stats.refused++;
    uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)t);
    uv_close((uv_handle_t *)t, refused_closed);
}

/* Reads while the bytes may be needed: always while no answer is under
 * way (a head is capped by the parser, a body by its Content-Length), and
 * while answering only until BUSY_INPUT_MAX bytes wait. */
static void conn_flow(struct conn *c)
{
    if (c->closing)
        return;
    bool want = !c->busy || c->in_len - c->in_off < BUSY_INPUT_MAX;
    if (want && !c->reading)
        c->reading = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0;
    else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
}

/* Sets the deadline `after` wall-clock ms from now (none for 0). */
static void arm(struct conn *c, ebb_dur_ms after)
{
    struct ebb__clock *clock = c->s->limits.clock;
    if (clock == NULL)
        return;
    if (after <= 0) {
        ebb__timer_stop(clock, &c->deadline);
        return;
    }
    ebb_time_ms due = ebb__clock_now(clock) + ebb__clock_from_real_ms(clock, after);
    if (ebb__timer_start(clock, &c->deadline, due) != 0)
        conn_close(c);
}

/* Re-arms the deadline when the connection's phase changed. A head's
 * deadline is not moved by its bytes (a client sending one byte a second
 * still has only header_timeout for all of it, counted from the accept or
 * from the end of the last answer); a body's is moved by each read. */
static void conn_watch(struct conn *c)
{
    if (c->closing || c->s->limits.clock == NULL)
        return;
    enum phase p;
    if (c->pending != NULL)
        p = PHASE_DELAYED;
    else if (c->busy)
        p = PHASE_ANSWER;
    else if (c->in_len > c->in_off)
        p = c->need > 0 ? PHASE_BODY : PHASE_HEAD;
    else
        p = c->phase == PHASE_NEW ? PHASE_NEW : PHASE_IDLE;
    enum phase was = c->phase;
    c->phase = p;
    if (p == was && p != PHASE_BODY)
        return;
    const struct ebb__httpd_limits *l = &c->s->limits;
    if (p == PHASE_HEAD && was == PHASE_NEW)
        return; /* the accept started the header timeout */
    if (p == PHASE_HEAD || p == PHASE_NEW)
        arm(c, l->header_timeout);
    else if (p == PHASE_DELAYED)
        arm(c, 0);
    else
        arm(c, l->idle_timeout);
}

/* A deadline passed: a request that is late gets 408 and the connection
 * closes; an idle connection, or one whose client does not take its
 * answer, is closed. */
static void on_deadline(struct ebb__timer *t)
{
    struct conn *c = t->data;
    c->s->stats.timed_out++;
    if ((c->phase == PHASE_HEAD || c->phase == PHASE_BODY) && !c->busy) {
        c->need = 0;
        c->in_off = c->in_len = 0; /* what came of it is not parsed */
        answer_error(c, 408);
        return;
    }
    conn_close(c);
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct ebb__httpd *s = listener->data;
    if (status < 0 || s->closing)
        return;
    if (over_cap(s)) {
        refuse(s);
        return;
    }
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return;
    c->s = s;
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    ebb__timer_init(&c->deadline, on_deadline, c);
    c->tcp.data = c;
    c->timer.data = c;
    c->open_handles = 2;
    c->phase = PHASE_NEW;
    s->handles++; /* one per connection, released when both its handles are closed */
    s->stats.open++;
    ebb_list_insert_head(&s->conns, &c->node);
    struct sockaddr_storage peer;
    int peer_len = sizeof(peer);
    int rc = uv_accept(listener, (uv_stream_t *)&c->tcp);
    if (rc == 0)
        rc = uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&peer, &peer_len);
    c->peer_loopback = rc == 0 && is_loopback(&peer);
    if (rc == 0 && s->tls != NULL) {
        c->tls = ebb__tls_new(s->tls);
        rc = c->tls != NULL ? 0 : UV_ENOMEM;
    }
    if (rc != 0) {
        conn_close(c);
        return;
    }
    conn_flow(c);
    if (!c->reading) {
        conn_close(c);
        return;
    }
    arm(c, s->limits.header_timeout);
}

static void listener_closed(uv_handle_t *handle)
{
    server_handle_closed(handle->data);
}

int ebb__httpd_start(struct ebb__httpd **out, uv_loop_t *loop,
                     ebb__httpd_handler handler, void *arg)
{
    return ebb__httpd_listen(out, loop, "127.0.0.1", 0, handler, arg);
}

int ebb__httpd_listen(struct ebb__httpd **out, uv_loop_t *loop, const char *ip,
                      uint16_t port, ebb__httpd_handler handler, void *arg)
{
    struct sockaddr_storage addr;
    int v6 = strchr(ip, ':') != NULL;
    if (v6 ? uv_ip6_addr(ip, port, (struct sockaddr_in6 *)&addr) != 0
           : uv_ip4_addr(ip, port, (struct sockaddr_in *)&addr) != 0)
        return EBB_EINVAL;
    struct ebb__httpd *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return EBB_ENOMEM;
    s->loop = loop;
    ebb_list_init(&s->conns);
    s->handler = handler;
    s->arg = arg;
    s->handles = 1;
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;

    struct sockaddr_storage bound;
    int bound_len = sizeof(bound);
    if (uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0) != 0 ||
        uv_listen((uv_stream_t *)&s->listener, 511, on_connection) != 0 ||
        uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &bound_len) != 0) {
        s->closing = true;
        uv_close((uv_handle_t *)&s->listener, listener_closed);
        return EBB_EIO;
    }
    s->port = ntohs(v6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                       : ((struct sockaddr_in *)&bound)->sin_port);
    snprintf(s->url, sizeof(s->url), v6 ? "http://[%s]:%u" : "http://%s:%u", ip,
             (unsigned)s->port);
    *out = s;
    return 0;
}

int ebb__httpd_parse_address(const char *address, char *ip, size_t ip_size,
                             uint16_t *port)
{
    const char *colon = strrchr(address, ':');
    if (colon == NULL || colon == address || (size_t)(colon - address) >= ip_size)
        return EBB_EINVAL;
    /* "[::1]:80": the brackets are not part of the address. */
    int bracketed = address[0] == '[' && colon[-1] == ']';
    char *end = NULL;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || p > 65535)
        return EBB_EINVAL;
    size_t len = (size_t)(colon - address) - (bracketed ? 2 : 0);
    memcpy(ip, address + bracketed, len);
    ip[len] = '\0';
    struct sockaddr_in probe;
    struct sockaddr_in6 probe6;
    if (bracketed ? uv_ip6_addr(ip, 0, &probe6) != 0 : uv_ip4_addr(ip, 0, &probe) != 0)
        return EBB_EINVAL;
    *port = (uint16_t)p;
    return 0;
}

bool ebb__httpd_is_loopback_ip(const char *ip)
{
    struct sockaddr_storage a = {0};
    if (uv_ip4_addr(ip, 0, (struct sockaddr_in *)&a) != 0 &&
        uv_ip6_addr(ip, 0, (struct sockaddr_in6 *)&a) != 0)
        return false;
    return is_loopback(&a);
}

uint16_t ebb__httpd_port(const struct ebb__httpd *s)
{
    return s->port;
}

const char *ebb__httpd_url(const struct ebb__httpd *s)
{
    return s->url;
}

void ebb__httpd_set_tls(struct ebb__httpd *s, struct ebb__tls_ctx *ctx)
{
    s->tls = ctx;
    const char *rest = strchr(s->url, ':');
    char url[sizeof(s->url)];
    snprintf(url, sizeof(url), "%s%s", ctx != NULL ? "https" : "http", rest);
    memcpy(s->url, url, sizeof(url));
}

uint64_t ebb__httpd_requests(const struct ebb__httpd *s)
{
    return s->requests;
}

int ebb__httpd_set_limits(struct ebb__httpd *s, const struct ebb__httpd_limits *lim)
{
    if (lim->clock == NULL && (lim->header_timeout > 0 || lim->idle_timeout > 0))
        return EBB_EINVAL;
    s->limits = *lim;
    return 0;
}

struct ebb__httpd_stats ebb__httpd_stats(const struct ebb__httpd *s)
{
    return s->stats;
}

void ebb__httpd_close(struct ebb__httpd *s, void (*closed)(void *arg),
                           void *arg)
{
    if (s->closing)
        return;
    s->closing = true;
    s->closed = closed;
    s->closed_arg = arg;
    while (!ebb_list_empty(&s->conns))
        conn_close(ebb_list_entry(ebb_list_first(&s->conns), struct conn, node));
    uv_close((uv_handle_t *)&s->listener, listener_closed);
}

int ebb__httpd_unused_port(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return EBB_EIO;
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(addr);
    int rc = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
    if (rc == 0)
        rc = getsockname(fd, (struct sockaddr *)&addr, &len);
    close(fd);
    if (rc != 0)
        return EBB_EIO;
    *port = ntohs(addr.sin_port);
    return 0;
}
