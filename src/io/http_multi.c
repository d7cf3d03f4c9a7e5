/* The HTTP client's event glue: libcurl's multi socket API on libuv
 * (see io/http_client.c for the client itself). libcurl says which sockets
 * to watch (CURLMOPT_SOCKETFUNCTION: one uv_poll_t per socket) and when it
 * next needs to run (CURLMOPT_TIMERFUNCTION: one uv_timer_t); each poll or
 * timer event goes back through curl_multi_socket_action(), then the
 * client collects what finished (ebb__http_drain). */
#include <stdlib.h>

#include <curl/curl.h>

#include <ebb/list.h>

#include "io/internal.h"

static void on_poll(uv_poll_t *poll, int status, int events)
{
    struct sock *s = poll->data;
    struct ebb__http *h = s->h;
    int flags = 0;
    /* On an error libuv has stopped watching the socket; telling curl lets
     * it fail the transfer and remove the socket instead of waiting for a
     * timeout. */
    if (status < 0) {
        flags = CURL_CSELECT_ERR;
    } else {
        if (events & UV_READABLE)
            flags |= CURL_CSELECT_IN;
        if (events & UV_WRITABLE)
            flags |= CURL_CSELECT_OUT;
    }
    int running;
    curl_multi_socket_action(h->multi, s->fd, flags, &running);
    ebb__http_drain(h);
}

static void on_timeout(uv_timer_t *timer)
{
    struct ebb__http *h = timer->data;
    int running;
    curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    ebb__http_drain(h);
}

static void sock_closed(uv_handle_t *handle)
{
    struct sock *s = handle->data;
    struct ebb__http *h = s->h;
    free(s);
    ebb__http_handle_closed(h);
}

static void sock_close(struct sock *s)
{
    ebb_list_remove(&s->node);
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, sock_closed);
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp,
                     void *socketp)
{
    struct ebb__http *h = userp;
    struct sock *s = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (s != NULL) {
            sock_close(s);
            if (h->multi != NULL)
                curl_multi_assign(h->multi, fd, NULL);
        }
        return 0;
    }
    if (s == NULL) {
        s = calloc(1, sizeof(*s));
        if (s == NULL)
            return -1;
        if (uv_poll_init_socket(h->loop, &s->poll, fd) != 0) {
            free(s);
            return -1;
        }
        s->poll.data = s;
        s->fd = fd;
        s->h = h;
        ebb_list_insert_head(&h->socks, &s->node);
        h->handles++;
        curl_multi_assign(h->multi, fd, s);
    }
    int events = 0;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        events |= UV_READABLE;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        events |= UV_WRITABLE;
    return uv_poll_start(&s->poll, events, on_poll) == 0 ? 0 : -1;
}

/* curl asks for at most one pending wake-up; a timeout of 0 means "as soon
 * as possible", which a 0 ms uv timer gives without recursing into curl
 * from inside its own callback. */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
    struct ebb__http *h = userp;
    if (h->multi == NULL) /* curl_multi_cleanup() is running */
        return 0;
    if (timeout_ms < 0)
        uv_timer_stop(&h->timer);
    else
        uv_timer_start(&h->timer, on_timeout, (uint64_t)timeout_ms, 0);
    return 0;
}

void ebb__http_multi_init(struct ebb__http *h)
{
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
    uv_timer_init(h->loop, &h->timer);
    h->timer.data = h;
}

void ebb__http_multi_close_socks(struct ebb__http *h)
{
    while (!ebb_list_empty(&h->socks))
        sock_close(ebb_list_entry(ebb_list_first(&h->socks), struct sock, node));
}
