/* The API socket's server (api_server.h): binding the socket, accepting
 * (with the peer's credentials), the server's lifecycle.
 *
 * A connection, once accepted, is api_conn.c's; its calls and their
 * answers are api_call.c's; the connection cap and the deadlines are
 * api_limits.c's; what the four share is in io/internal.h. A closing
 * server is freed once its listener and every connection have closed.
 */
#include "io/internal.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

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
    struct ebb__api_conn *conn = ebb__api_conn_new(s);
    if (conn == NULL)
        return;
    if (uv_accept(listener, (uv_stream_t *)&conn->pipe) != 0) {
        ebb__api_conn_close(conn);
        return;
    }
    read_peer_credentials(conn);
    if (ebb__api_refuse_over_cap(conn))
        return;
    ebb__api_conn_start(conn);
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

void ebb__api_server_maybe_finish(struct ebb__api_server *s)
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
    ebb__api_server_maybe_finish(s);
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
    /* ebb__api_conn_maybe_close may unlink a connection from the list in
     * a later callback, never synchronously, so iterating a snapshot is
     * safe. */
    ebb_list_foreach(pos, &server->conns)
        ebb__api_conn_maybe_close(ebb_list_entry(pos, struct ebb__api_conn, node));
    uv_close((uv_handle_t *)&server->listener, on_listener_closed);
}
