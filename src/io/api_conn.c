/* One connection of the API socket's server (api_server.h): reading
 * lines, handing each to api_call.c, writing the answers, closing.
 *
 * A connection reads lines and dispatches each as a call. It takes at most
 * MAX_CALLS calls at a time and stops reading while they are open or while
 * more than MAX_QUEUED answer bytes wait to be written, so a client that
 * sends without reading cannot make ebbd queue without bound. Its deadline
 * is api_limits.c's: ebb__api_conn_watch() is called after anything that
 * may move the connection between waiting, receiving a message, working
 * and writing.
 */
#include "io/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/str.h"

/* Calls one connection may have open, and answer bytes it may have queued,
 * before it stops reading. */
#define MAX_CALLS 32
#define MAX_QUEUED (4u * 1024u * 1024u)

struct write_req {
    uv_write_t req;
    struct ebb__api_conn *conn;
    char *data;
};

static void conn_dispatch(struct ebb__api_conn *conn);
static void conn_flow(struct ebb__api_conn *conn);
static int conn_full(const struct ebb__api_conn *conn);

/* Takes a closing connection out of the counts and its deadline off the
 * clock; safe to call twice. */
static void conn_release(struct ebb__api_conn *conn)
{
    ebb__api_deadline_stop(conn);
    if (conn->counted) {
        conn->counted = 0;
        conn->server->stats.open--;
    }
}

static void on_conn_closed(uv_handle_t *handle)
{
    struct ebb__api_conn *conn = handle->data;
    struct ebb__api_server *s = conn->server;
    conn_release(conn);
    ebb_list_remove(&conn->node);
    ebb_buf_free(&conn->in);
    free(conn);
    ebb__api_server_maybe_finish(s);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct ebb__api_conn *conn = req->data;
    (void)status;
    uv_close((uv_handle_t *)&conn->pipe, on_conn_closed);
}

void ebb__api_conn_close(struct ebb__api_conn *conn)
{
    conn->closing = 1;
    conn_release(conn);
    uv_close((uv_handle_t *)&conn->pipe, on_conn_closed);
}

/* A connection closes once the client is done sending (or we stopped
 * reading) and every call on it has been answered and written. Shutting
 * down first flushes what is queued, so no answer is cut off; a connection
 * given up closes at once, cancelling its writes, once no call of it is
 * open (a call keeps a pointer to it). */
void ebb__api_conn_maybe_close(struct ebb__api_conn *conn)
{
    if (conn->closing || !conn->read_done || conn->pending_calls > 0)
        return;
    if (conn->aborted) {
        ebb__api_conn_close(conn);
        return;
    }
    if (conn->pending_writes > 0)
        return;
    conn->closing = 1;
    conn_release(conn);
    uv_read_stop((uv_stream_t *)&conn->pipe);
    conn->shutdown_req.data = conn;
    if (uv_shutdown(&conn->shutdown_req, (uv_stream_t *)&conn->pipe, on_shutdown) != 0)
        uv_close((uv_handle_t *)&conn->pipe, on_conn_closed);
}

static void on_written(uv_write_t *req, int status)
{
    struct write_req *w = (struct write_req *)req;
    struct ebb__api_conn *conn = w->conn;
    if (status < 0)
        ebb__debug("api: write failed: %s", uv_strerror(status));
    free(w->data);
    free(w);
    conn->pending_writes--;
    if (!conn->closing) {
        conn_dispatch(conn);
        conn_flow(conn);
        ebb__api_conn_watch(conn);
    }
    ebb__api_conn_maybe_close(conn);
}

void ebb__api_conn_send(struct ebb__api_conn *conn, json_t *msg)
{
    if (conn->aborted) {
        json_decref(msg);
        return;
    }
    char *text = json_dumps(msg, JSON_COMPACT |
                                 JSON_REAL_PRECISION(EBB__JSON_REAL_DIGITS));
    if (text != NULL && strlen(text) >= EBB__API_MAX_MESSAGE) {
        /* The client would read the line to its cap and find no answer:
         * it gets one that says why instead. */
        size_t len = strlen(text);
        free(text);
        ebb__warn("api: an answer of %zu bytes to pid %ld is over the %u MiB a "
                  "message may hold; answered with an error", len, (long)conn->pid,
                  EBB__API_MAX_MESSAGE >> 20);
        char why[160];
        snprintf(why, sizeof(why), "answer too large: %zu bytes, more than the %u MiB "
                 "an answer may hold", len, EBB__API_MAX_MESSAGE >> 20);
        json_t *err = json_pack("{s:O?,s:{s:s,s:s}}", "id", json_object_get(msg, "id"),
                                "error", "code", "too_large", "message", why);
        text = err != NULL ? json_dumps(err, JSON_COMPACT) : NULL;
        json_decref(err);
    }
    json_decref(msg);
    struct write_req *w = text ? calloc(1, sizeof(*w)) : NULL;
    if (w == NULL) {
        free(text);
        ebb__error("api: out of memory writing an answer");
        conn->read_done = 1;
        ebb__api_conn_maybe_close(conn);
        return;
    }
    size_t len = strlen(text);
    /* json_dumps leaves room only for its NUL; swap it for the newline. */
    char *line = realloc(text, len + 2);
    if (line == NULL) {
        free(text);
        free(w);
        return;
    }
    line[len] = '\n';
    line[len + 1] = '\0';
    w->conn = conn;
    w->data = line;
    uv_buf_t buf = uv_buf_init(line, (unsigned)(len + 1));
    conn->pending_writes++;
    int rc = uv_write(&w->req, (uv_stream_t *)&conn->pipe, &buf, 1, on_written);
    if (rc != 0) {
        ebb__debug("api: cannot write: %s", uv_strerror(rc));
        conn->pending_writes--;
        free(line);
        free(w);
        return;
    }
    ebb__api_conn_watch(conn);
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    (void)handle;
    buf->base = malloc(suggested);
    buf->len = buf->base ? suggested : 0;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct ebb__api_conn *conn = stream->data;
    if (nread < 0) {
        free(buf->base);
        conn->read_done = 1;
        conn->reading = 0;
        uv_read_stop(stream);
        ebb__api_conn_maybe_close(conn);
        return;
    }
    ebb_buf_append(&conn->in, buf->base, (size_t)nread);
    free(buf->base);
    conn_dispatch(conn);
    conn_flow(conn);
    ebb__api_conn_watch(conn);
}

/* While a request over the cap is skipped: where the input after its end
 * starts, or conn->in.len while its end has not come. */
static size_t skip_too_large(struct ebb__api_conn *conn)
{
    if (conn->in.len == 0)
        return 0;
    const char *nl = memchr(conn->in.data, '\n', conn->in.len);
    if (nl == NULL)
        return conn->in.len;
    conn->discarding = 0;
    ebb__api_answer_too_large(conn);
    return (size_t)(nl - conn->in.data) + 1;
}

/* Dispatches the whole lines received, while the connection may take more
 * calls, and keeps the partial rest (moved to the front once per read or
 * answer, not once per line). */
static void conn_dispatch(struct ebb__api_conn *conn)
{
    size_t start = conn->discarding && !conn->read_done ? skip_too_large(conn) : 0;
    while (!conn->read_done && !conn_full(conn) && start < conn->in.len) {
        const char *nl = memchr(conn->in.data + start, '\n', conn->in.len - start);
        if (nl == NULL)
            break;
        size_t end = (size_t)(nl - conn->in.data);
        if (end - start > EBB__API_MAX_REQUEST)
            ebb__api_answer_too_large(conn);
        else if (end > start)
            ebb__api_dispatch(conn, conn->in.data + start, end - start);
        start = end + 1;
    }
    if (start > 0) {
        memmove(conn->in.data, conn->in.data + start, conn->in.len - start);
        conn->in.len -= start;
        conn->in.data[conn->in.len] = '\0';
    }
    if (conn->in.failed) {
        ebb__warn("api: out of memory reading from pid %ld; closing the "
                  "connection", (long)conn->pid);
        ebb_buf_free(&conn->in);
        conn->read_done = 1;
        ebb__api_conn_maybe_close(conn);
    } else if (conn->in.len > EBB__API_MAX_REQUEST) {
        ebb__debug("api: skipping a request over %u KiB from pid %ld",
                   EBB__API_MAX_REQUEST / 1024, (long)conn->pid);
        ebb_buf_free(&conn->in);
        conn->discarding = 1;
    }
}

static int conn_full(const struct ebb__api_conn *conn)
{
    return conn->pending_calls >= MAX_CALLS ||
           uv_stream_get_write_queue_size((const uv_stream_t *)&conn->pipe) > MAX_QUEUED;
}

/* Reads while the connection may take more calls. */
static void conn_flow(struct ebb__api_conn *conn)
{
    if (conn->closing || conn->read_done)
        return;
    int want = !conn_full(conn);
    if (want && !conn->reading) {
        conn->reading = uv_read_start((uv_stream_t *)&conn->pipe, on_alloc, on_read) == 0;
        if (!conn->reading) {
            conn->read_done = 1;
            ebb__api_conn_maybe_close(conn);
        }
    } else if (!want && conn->reading) {
        uv_read_stop((uv_stream_t *)&conn->pipe);
        conn->reading = 0;
    }
}

struct ebb__api_conn *ebb__api_conn_new(struct ebb__api_server *s)
{
    struct ebb__api_conn *conn = calloc(1, sizeof(*conn));
    if (conn == NULL)
        return NULL;
    conn->server = s;
    uv_pipe_init(s->loop, &conn->pipe, 0);
    conn->pipe.data = conn;
    ebb__api_deadline_init(conn);
    ebb_list_init(&conn->calls);
    ebb_list_insert_head(&s->conns, &conn->node);
    return conn;
}

void ebb__api_conn_start(struct ebb__api_conn *conn)
{
    conn->counted = 1;
    conn->server->stats.open++;
    conn_flow(conn);
    ebb__api_deadline_start(conn);
}
