/* One connection of the HTTP server (httpd.h): reading into its buffer,
 * parsing and answering one request at a time, writing, TLS, closing.
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
 * Its deadline is httpd_limits.c's: ebb__httpd_conn_watch() is called
 * after anything that may move the connection between waiting for a
 * request, reading one, and answering.
 */
#include "io/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "io/http_head.h"
#include "io/tls.h"

/* How much a read asks room for, and how many unparsed bytes a connection
 * keeps while it answers before it stops reading. */
#define READ_CHUNK (64 * 1024)
#define BUSY_INPUT_MAX (64 * 1024)

struct write_req {
    uv_write_t w;
    struct ebb__httpd_conn *c;
    char *data;
    bool close_after;
};

static void process(struct ebb__httpd_conn *c);
static void conn_flow(struct ebb__httpd_conn *c);

static void conn_handle_closed(uv_handle_t *handle)
{
    struct ebb__httpd_conn *c = handle->data;
    if (--c->open_handles > 0)
        return;
    struct ebb__httpd *s = c->s;
    free(c->in);
    free(c->pending);
    ebb__tls_free(c->tls);
    free(c);
    ebb__httpd_handle_closed(s);
}

void ebb__httpd_conn_close(struct ebb__httpd_conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    ebb__httpd_deadline_stop(c);
    c->s->stats.open--;
    ebb_list_remove(&c->node);
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

static void on_write(uv_write_t *w, int status)
{
    struct write_req *wr = (struct write_req *)w;
    struct ebb__httpd_conn *c = wr->c;
    bool close_after = wr->close_after;
    free(wr->data);
    free(wr);
    if (c->closing) /* canceled by uv_close(); c is freed right after */
        return;
    if (status < 0 || close_after) {
        ebb__httpd_conn_close(c);
        return;
    }
    c->busy = false;
    process(c);
    conn_flow(c);
    ebb__httpd_conn_watch(c);
}

/* TLS: replaces the plaintext `*data` with its records (and close_notify
 * when the connection closes after it). */
static int tls_seal(struct ebb__httpd_conn *c, char **data, size_t *len, bool close_after)
{
    int rc = ebb__tls_write(c->tls, *data, *len);
    if (rc == 0 && close_after)
        ebb__tls_shutdown(c->tls);
    free(*data);
    *data = rc == 0 ? ebb__tls_take(c->tls, len) : NULL;
    return *data != NULL ? 0 : EBB_EIO;
}

/* Takes ownership of `data`. */
static void send_bytes(struct ebb__httpd_conn *c, char *data, size_t len, bool close_after)
{
    if (c->tls != NULL && tls_seal(c, &data, &len, close_after) != 0) {
        ebb__httpd_conn_close(c);
        return;
    }
    struct write_req *wr = calloc(1, sizeof(*wr));
    if (wr == NULL) {
        free(data);
        ebb__httpd_conn_close(c);
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
        ebb__httpd_conn_close(c);
        return;
    }
    ebb__httpd_conn_watch(c);
}

static void on_delay(uv_timer_t *timer)
{
    struct ebb__httpd_conn *c = timer->data;
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

void ebb__httpd_answer_error(struct ebb__httpd_conn *c, int status)
{
    struct ebb__httpd_response res = {.status = status};
    size_t len;
    char *data = render(&res, false, true, &len);
    if (data == NULL) {
        ebb__httpd_conn_close(c);
        return;
    }
    send_bytes(c, data, len, true);
}

/* Drops the first `n` unparsed bytes. An emptied buffer starts over at
 * its front, and one grown past a read for a large body is freed. */
static void consume(struct ebb__httpd_conn *c, size_t n)
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
static bool handle_one(struct ebb__httpd_conn *c)
{
    const char *in = c->in + c->in_off;
    size_t in_len = c->in_len - c->in_off;
    struct ebb__http_head h;
    int rc = ebb__http_parse_head(in, in_len, &h);
    if (rc == EBB__HTTP_HEAD_MORE)
        return false;
    if (rc < 0) {
        ebb__httpd_conn_close(c);
        return false;
    }
    if (rc != EBB__HTTP_HEAD_DONE) {
        ebb__httpd_answer_error(c, rc);
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
        ebb__httpd_conn_close(c);
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
        ebb__httpd_conn_close(c);
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
            ebb__httpd_conn_close(c);
            ok = false;
        } else if (res.delay_ms > 0) {
            c->busy = true;
            c->pending = data;
            c->pending_len = len;
            c->pending_close = close;
            uv_timer_start(&c->timer, on_delay, (uint64_t)res.delay_ms, 0);
            ebb__httpd_conn_watch(c);
        } else {
            send_bytes(c, data, len, close);
        }
    }
    free(res.headers_);
    free(res.body_);
    return ok;
}

static void process(struct ebb__httpd_conn *c)
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
    struct ebb__httpd_conn *c = handle->data;
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
    struct ebb__httpd_conn *c = wr->c;
    free(wr->data);
    free(wr);
    if (status < 0 && !c->closing)
        ebb__httpd_conn_close(c);
}

/* Sends the records a TLS session made on its own (the handshake's) apart
 * from the answers, so they leave `busy` as it is. */
static void tls_flush(struct ebb__httpd_conn *c)
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
        ebb__httpd_conn_close(c);
    }
}

/* TLS: the `n` bytes just read into c->in's free space are records. The
 * session takes a copy; the plaintext goes where they were, in room that
 * on_alloc() grants as it would for a plain read. A read yields one
 * record at most, so the loop runs until nothing is left to decrypt; it
 * ends, as each round that yields anything consumes what was fed. A peer
 * that breaks the protocol (plain HTTP included) is cut off. */
static bool tls_in(struct ebb__httpd_conn *c, const char *data, size_t n)
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
        ebb__httpd_conn_close(c);
    return !c->closing;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct ebb__httpd_conn *c = stream->data;
    if (nread < 0) {
        ebb__httpd_conn_close(c);
        return;
    }
    if (c->tls == NULL)
        c->in_len += (size_t)nread;
    else if (!tls_in(c, buf->base, (size_t)nread))
        return;
    process(c);
    conn_flow(c);
    ebb__httpd_conn_watch(c);
}

/* Reads while the bytes may be needed: always while no answer is under
 * way (a head is capped by the parser, a body by its Content-Length), and
 * while answering only until BUSY_INPUT_MAX bytes wait. */
static void conn_flow(struct ebb__httpd_conn *c)
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

struct ebb__httpd_conn *ebb__httpd_conn_new(struct ebb__httpd *s)
{
    struct ebb__httpd_conn *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->s = s;
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    ebb__httpd_deadline_init(c);
    c->tcp.data = c;
    c->timer.data = c;
    c->open_handles = 2;
    s->handles++; /* one per connection, released when both its handles are closed */
    s->stats.open++;
    ebb_list_insert_head(&s->conns, &c->node);
    return c;
}

void ebb__httpd_conn_start(struct ebb__httpd_conn *c)
{
    conn_flow(c);
    if (!c->reading) {
        ebb__httpd_conn_close(c);
        return;
    }
    ebb__httpd_deadline_start(c);
}
