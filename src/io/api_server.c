/* The API socket's server; see api_server.h.
 *
 * A connection reads lines and dispatches each as a call. It takes at most
 * MAX_CALLS calls at a time and stops reading while they are open or while
 * more than MAX_QUEUED answer bytes wait to be written, so a client that
 * sends without reading cannot make ebbd queue without bound. The limits
 * (ebb__api_server_set_limits) live in their own section: the connection
 * cap at accept, and one deadline per connection that conn_watch()
 * re-arms as it moves between waiting, receiving a message, working and
 * writing.
 */
#include "io/api_server.h"

#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/ratelimit.h"
#include "base/str.h"
#include "io/api_request.h"

/* Calls one connection may have open, and answer bytes it may have queued,
 * before it stops reading. */
#define MAX_CALLS 32
#define MAX_QUEUED (4u * 1024u * 1024u)

/* What a connection is doing, for its deadline (conn_watch). */
enum phase {
    PHASE_NEW,     /* accepted, no byte yet: the request timeout */
    PHASE_IDLE,    /* no call, nothing partial: the idle timeout */
    PHASE_PARTIAL, /* part of a message: the request timeout, not moved */
    PHASE_WORKING, /* calls being answered: ebbd's own time, no deadline */
    PHASE_WRITING, /* answers not yet taken: the idle timeout per write */
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
    enum phase phase;
    struct ebb__timer deadline; /* on server->limits.clock */
    uid_t uid;
    gid_t gid;
    pid_t pid;
};

struct write_req {
    uv_write_t req;
    struct ebb__api_conn *conn;
    char *data;
};

static void conn_maybe_close(struct ebb__api_conn *conn);
static void server_maybe_finish(struct ebb__api_server *s);
static void conn_dispatch(struct ebb__api_conn *conn);
static void conn_flow(struct ebb__api_conn *conn);
static void conn_watch(struct ebb__api_conn *conn);
static void conn_release(struct ebb__api_conn *conn);
static int conn_full(const struct ebb__api_conn *conn);
static void on_deadline(struct ebb__timer *t);

static void on_conn_closed(uv_handle_t *handle)
{
    struct ebb__api_conn *conn = handle->data;
    struct ebb__api_server *s = conn->server;
    conn_release(conn);
    ebb_list_remove(&conn->node);
    ebb_buf_free(&conn->in);
    free(conn);
    server_maybe_finish(s);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct ebb__api_conn *conn = req->data;
    (void)status;
    uv_close((uv_handle_t *)&conn->pipe, on_conn_closed);
}

/* A connection closes once the client is done sending (or we stopped
 * reading) and every call on it has been answered and written. Shutting
 * down first flushes what is queued, so no answer is cut off; a connection
 * given up closes at once, cancelling its writes, once no call of it is
 * open (a call keeps a pointer to it). */
static void conn_maybe_close(struct ebb__api_conn *conn)
{
    if (conn->closing || !conn->read_done || conn->pending_calls > 0)
        return;
    if (conn->aborted) {
        conn->closing = 1;
        conn_release(conn);
        uv_close((uv_handle_t *)&conn->pipe, on_conn_closed);
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
        conn_watch(conn);
    }
    conn_maybe_close(conn);
}

static void conn_send(struct ebb__api_conn *conn, json_t *msg)
{
    if (conn->aborted) {
        json_decref(msg);
        return;
    }
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    struct write_req *w = text ? calloc(1, sizeof(*w)) : NULL;
    if (w == NULL) {
        free(text);
        ebb__error("api: out of memory writing an answer");
        conn->read_done = 1;
        conn_maybe_close(conn);
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
    conn_watch(conn);
}

/* Sends the answers at the head of the connection's queue that are ready. */
static void conn_send_ready(struct ebb__api_conn *conn)
{
    while (!ebb_list_empty(&conn->calls)) {
        struct ebb__api_call *call =
            ebb_list_entry(ebb_list_first(&conn->calls), struct ebb__api_call, node);
        if (call->answer == NULL || ebb_list_linked(&call->held_node))
            break;
        ebb_list_remove(&call->node);
        conn_send(conn, call->answer);
        json_decref(call->id);
        json_decref(call->params);
        free((char *)call->method);
        free(call);
        conn->pending_calls--;
    }
    conn_maybe_close(conn);
}

static void call_finish(struct ebb__api_call *call, json_t *msg)
{
    json_object_set(msg, "id", call->id ? call->id : json_null());
    call->answer = msg;
    conn_send_ready(call->conn);
}

void ebb__api_reply(struct ebb__api_call *call, json_t *result)
{
    json_t *msg = json_object();
    json_object_set_new(msg, "result", result ? result : json_object());
    call_finish(call, msg);
}

void ebb__api_reply_after_commit(struct ebb__api_call *call, json_t *result)
{
    struct ebb__api_server *s = call->conn->server;
    ebb_list_insert_head(&s->held, &call->held_node);
    ebb__api_reply(call, result);
}

void ebb__api_server_committed(struct ebb__api_server *server, int ok,
                               const char *why)
{
    /* One at a time from the head: sending an answer frees its call and
     * may free later ones of the same connection, never a held one. */
    while (!ebb_list_empty(&server->held)) {
        struct ebb__api_call *call = ebb_list_entry(ebb_list_first(&server->held),
                                                    struct ebb__api_call, held_node);
        ebb_list_remove(&call->held_node);
        json_t *error = ok ? NULL
                           : json_pack("{s:O,s:{s:s,s:s++}}", "id",
                                       call->id ? call->id : json_null(), "error",
                                       "code", "internal", "message",
                                       "not stored: ", why ? why : "");
        if (error != NULL) {
            json_decref(call->answer);
            call->answer = error;
        }
        conn_send_ready(call->conn);
    }
}

void ebb__api_fail(struct ebb__api_call *call, const char *code,
                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *message = ebb_vstrfmt(fmt, ap);
    va_end(ap);
    json_t *msg = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message",
                            message ? message : "out of memory");
    free(message);
    call_finish(call, msg);
}

/* A new call, last in the connection's queue; NULL when out of memory. */
static struct ebb__api_call *call_new(struct ebb__api_conn *conn)
{
    struct ebb__api_call *call = calloc(1, sizeof(*call));
    if (call == NULL)
        return NULL;
    call->conn = conn;
    call->uid = conn->uid;
    call->gid = conn->gid;
    call->pid = conn->pid;
    ebb_list_init(&call->held_node);
    conn->pending_calls++;
    ebb_list_insert_tail(&conn->calls, &call->node);
    return call;
}

static void dispatch(struct ebb__api_conn *conn, const char *line, size_t len)
{
    struct ebb__api_call *call = call_new(conn);
    if (call == NULL)
        return;
    struct ebb__api_request r;
    struct ebb_diag why;
    int rc = ebb__api_request_parse(line, len, &r, &why);
    call->id = r.id;
    call->method = r.method != NULL ? r.method : strdup("");
    call->params = r.params;
    if (rc != 0) {
        ebb__api_fail(call, rc == EBB_ENOMEM ? "internal" : "bad_request",
                      "%s", why.msg);
        return;
    }
    for (const struct ebb__api_method *m = conn->server->methods; m->name; m++) {
        if (strcmp(m->name, call->method) == 0) {
            m->fn(conn->server->ctx, call);
            return;
        }
    }
    ebb__api_fail(call, "unknown_method", "unknown method \"%s\"", call->method);
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
        conn_maybe_close(conn);
        return;
    }
    ebb_buf_append(&conn->in, buf->base, (size_t)nread);
    free(buf->base);
    conn_dispatch(conn);
    conn_flow(conn);
    conn_watch(conn);
}

/* A request over EBB__API_MAX_REQUEST is read to its end without being
 * kept or parsed, then answered in its turn, so the client learns why
 * (closing at once would leave it a broken pipe). */
static void answer_too_large(struct ebb__api_conn *conn)
{
    struct ebb__api_call *call = call_new(conn);
    if (call == NULL)
        return;
    call->method = strdup("");
    ebb__api_fail(call, "bad_request", "a request may be at most %u KiB (a job "
                  "spec at most 256 KiB); this one was longer and was not read",
                  EBB__API_MAX_REQUEST / 1024);
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
    answer_too_large(conn);
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
            answer_too_large(conn);
        else if (end > start)
            dispatch(conn, conn->in.data + start, end - start);
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
        conn_maybe_close(conn);
    } else if (conn->in.len > EBB__API_MAX_REQUEST) {
        ebb__debug("api: skipping a request over %u KiB from pid %ld",
                   EBB__API_MAX_REQUEST / 1024, (long)conn->pid);
        ebb_buf_free(&conn->in);
        conn->discarding = 1;
    }
}

/* ---- limits: the connection cap, reading, deadlines ---------------------- */

/* Takes a closing connection out of the counts and its deadline off the
 * clock; safe to call twice. */
static void conn_release(struct ebb__api_conn *conn)
{
    struct ebb__api_server *s = conn->server;
    if (s->limits.clock != NULL)
        ebb__timer_stop(s->limits.clock, &conn->deadline);
    if (conn->counted) {
        conn->counted = 0;
        s->stats.open--;
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
            conn_maybe_close(conn);
        }
    } else if (!want && conn->reading) {
        uv_read_stop((uv_stream_t *)&conn->pipe);
        conn->reading = 0;
    }
}

/* Sets the deadline `after` wall-clock ms from now (none for 0). */
static void arm(struct ebb__api_conn *conn, ebb_dur_ms after)
{
    struct ebb__clock *clock = conn->server->limits.clock;
    if (clock == NULL)
        return;
    if (after <= 0) {
        ebb__timer_stop(clock, &conn->deadline);
        return;
    }
    ebb__timer_start(clock, &conn->deadline,
                     ebb__clock_now(clock) + ebb__clock_from_real_ms(clock, after));
}

/* Re-arms the deadline when the connection's phase changed: a message has
 * request_timeout from its first byte (or the accept) to its newline, more
 * bytes do not move that; a connection with nothing open may stay idle
 * idle_timeout; answers not taken by the client get idle_timeout from the
 * last write that completed. While ebbd works on calls there is none. */
static void conn_watch(struct ebb__api_conn *conn)
{
    const struct ebb__api_limits *l = &conn->server->limits;
    if (conn->closing || l->clock == NULL)
        return;
    enum phase p;
    if (conn->pending_writes > 0)
        p = PHASE_WRITING;
    else if (conn->pending_calls > 0)
        p = PHASE_WORKING;
    else if (conn->in.len > 0 || conn->discarding)
        p = PHASE_PARTIAL;
    else
        p = conn->phase == PHASE_NEW ? PHASE_NEW : PHASE_IDLE;
    enum phase was = conn->phase;
    conn->phase = p;
    if ((p == was && p != PHASE_WRITING) || (p == PHASE_PARTIAL && was == PHASE_NEW))
        return;
    if (p == PHASE_NEW || p == PHASE_PARTIAL)
        arm(conn, l->request_timeout);
    else if (p == PHASE_WORKING)
        arm(conn, 0);
    else
        arm(conn, l->idle_timeout);
}

/* A deadline passed: the connection reads no more and closes; answers a
 * client does not take are dropped. */
static void on_deadline(struct ebb__timer *t)
{
    struct ebb__api_conn *conn = t->data;
    conn->server->stats.timed_out++;
    conn->read_done = 1;
    if (conn->reading) {
        uv_read_stop((uv_stream_t *)&conn->pipe);
        conn->reading = 0;
    }
    conn->aborted = conn->phase == PHASE_WRITING;
    conn_maybe_close(conn);
}

/* Why `conn` may not be served: NULL when it may. One user may hold at
 * most half of the connections, so that no one user can shut the others
 * out; it is O(connections), at most max_connections. */
static const char *over_cap(const struct ebb__api_conn *conn)
{
    const struct ebb__api_server *s = conn->server;
    unsigned max = s->limits.max_connections;
    if (max == 0)
        return NULL;
    if (s->stats.open >= max)
        return "ebbd has as many API connections open as it allows "
               "(api.max_connections); try again";
    unsigned mine = 0;
    const struct ebb_list *pos;
    ebb_list_foreach(pos, &s->conns) {
        const struct ebb__api_conn *c = ebb_list_entry(pos, struct ebb__api_conn, node);
        mine += c->counted && c->uid == conn->uid;
    }
    if (mine >= (max / 2 > 0 ? max / 2 : 1))
        return "this user has half of the API connections ebbd allows open "
               "(api.max_connections); close some and try again";
    return NULL;
}

/* Over a cap a connection gets one "busy" answer and is closed: the
 * client says why instead of that ebbd is not running. */
static void refuse(struct ebb__api_conn *conn, const char *why)
{
    struct ebb__api_server *s = conn->server;
    s->stats.refused++;
    uint64_t held = 0;
    if (ebb__ratelimit_allow(&s->refusals, (ebb_time_ms)uv_now(s->loop), &held))
        ebb__warn("api: refused a connection from uid %ld pid %ld: %s (%u open; "
                  "and %llu more refused since the last such line)",
                  (long)conn->uid, (long)conn->pid, why, s->stats.open,
                  (unsigned long long)held);
    conn_send(conn, json_pack("{s:n,s:{s:s,s:s}}", "id", "error", "code", "busy",
                              "message", why));
    conn->read_done = 1;
    conn_maybe_close(conn);
}

static void read_peer_credentials(struct ebb__api_conn *conn)
{
    uv_os_fd_t fd;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    conn->uid = (uid_t)-1;
    conn->gid = (gid_t)-1;
    if (uv_fileno((uv_handle_t *)&conn->pipe, &fd) == 0 &&
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
        conn->uid = cred.uid;
        conn->gid = cred.gid;
        conn->pid = cred.pid;
    }
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct ebb__api_server *s = listener->data;
    if (status < 0 || s->closing)
        return;
    struct ebb__api_conn *conn = calloc(1, sizeof(*conn));
    if (conn == NULL)
        return;
    conn->server = s;
    uv_pipe_init(s->loop, &conn->pipe, 0);
    conn->pipe.data = conn;
    ebb__timer_init(&conn->deadline, on_deadline, conn);
    ebb_list_init(&conn->calls);
    ebb_list_insert_head(&s->conns, &conn->node);
    if (uv_accept(listener, (uv_stream_t *)&conn->pipe) != 0) {
        conn->closing = 1;
        uv_close((uv_handle_t *)&conn->pipe, on_conn_closed);
        return;
    }
    read_peer_credentials(conn);
    const char *why = over_cap(conn);
    if (why != NULL) {
        refuse(conn, why);
        return;
    }
    conn->counted = 1;
    s->stats.open++;
    conn_flow(conn);
    arm(conn, s->limits.request_timeout);
}

static int apply_group(const char *path, const char *group, char *err,
                       size_t errlen)
{
    struct group *gr = getgrnam(group);
    if (gr == NULL) {
        snprintf(err, errlen, "api.socket_group: no group named \"%s\"", group);
        return EBB_ECONFIG;
    }
    if (chown(path, (uid_t)-1, gr->gr_gid) != 0) {
        snprintf(err, errlen, "cannot give %s to group %s: %s", path, group,
                 strerror(errno));
        return EBB_EPERM;
    }
    return 0;
}

int ebb__api_server_start(struct ebb__api_server **out, uv_loop_t *loop,
                          const char *socket_path, int mode, const char *group,
                          const struct ebb__api_method *methods, void *ctx,
                          char *err, size_t errlen)
{
    *out = NULL;
    struct ebb__api_server *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return EBB_ENOMEM;
    s->loop = loop;
    ebb_list_init(&s->conns);
    ebb_list_init(&s->held);
    s->methods = methods;
    s->ctx = ctx;
    s->refusals.interval = EBB__API_REFUSAL_LOG_MS;
    s->socket_path = strdup(socket_path);
    uv_pipe_init(loop, &s->listener, 0);
    s->listener.data = s;

    unlink(socket_path);
    /* Create the socket owner-only, then widen to the configured mode:
     * there is never a moment when others could connect unintended. */
    mode_t old_umask = umask(0177);
    int rc = uv_pipe_bind(&s->listener, socket_path);
    umask(old_umask);
    int result = 0;
    if (rc != 0) {
        snprintf(err, errlen, "cannot bind %s: %s", socket_path, uv_strerror(rc));
        result = EBB_EIO;
    } else if (chmod(socket_path, (mode_t)mode) != 0) {
        snprintf(err, errlen, "cannot chmod %s: %s", socket_path, strerror(errno));
        result = EBB_EIO;
    } else if (group != NULL && group[0] != '\0') {
        result = apply_group(socket_path, group, err, errlen);
    }
    if (result == 0) {
        rc = uv_listen((uv_stream_t *)&s->listener, 64, on_connection);
        if (rc != 0) {
            snprintf(err, errlen, "cannot listen on %s: %s", socket_path,
                     uv_strerror(rc));
            result = EBB_EIO;
        }
    }
    if (result != 0) {
        /* Closing needs a loop turn; the caller runs the loop to tear down. */
        ebb__api_server_close(s, NULL, NULL);
        return result;
    }
    *out = s;
    return 0;
}

static void server_maybe_finish(struct ebb__api_server *s)
{
    if (!s->closing || !s->listener_closed || !ebb_list_empty(&s->conns))
        return;
    unlink(s->socket_path);
    void (*cb)(void *) = s->close_cb;
    void *arg = s->close_arg;
    free(s->socket_path);
    free(s);
    if (cb != NULL)
        cb(arg);
}

static void on_listener_closed(uv_handle_t *handle)
{
    struct ebb__api_server *s = handle->data;
    s->listener_closed = 1;
    server_maybe_finish(s);
}

int ebb__api_server_set_limits(struct ebb__api_server *server,
                               const struct ebb__api_limits *lim)
{
    if (lim->clock == NULL && (lim->request_timeout > 0 || lim->idle_timeout > 0))
        return EBB_EINVAL;
    server->limits = *lim;
    return 0;
}

struct ebb__api_stats ebb__api_server_stats(const struct ebb__api_server *server)
{
    return server->stats;
}

void ebb__api_server_close(struct ebb__api_server *server,
                           void (*cb)(void *arg), void *arg)
{
    server->closing = 1;
    server->close_cb = cb;
    server->close_arg = arg;
    struct ebb_list *pos;
    ebb_list_foreach(pos, &server->conns) {
        struct ebb__api_conn *c = ebb_list_entry(pos, struct ebb__api_conn, node);
        if (!c->read_done) {
            c->read_done = 1;
            c->reading = 0;
            uv_read_stop((uv_stream_t *)&c->pipe);
        }
    }
    /* conn_maybe_close may unlink a connection from the list in a later
     * callback, never synchronously, so iterating a snapshot is safe. */
    ebb_list_foreach(pos, &server->conns)
        conn_maybe_close(ebb_list_entry(pos, struct ebb__api_conn, node));
    uv_close((uv_handle_t *)&server->listener, on_listener_closed);
}
