/* The HTTP server's listener (httpd.h): binding, accepting, the server's
 * lifecycle and its accessors.
 *
 * A connection, once accepted, is httpd_conn.c's; the connection cap and
 * the deadlines are httpd_limits.c's; what the three share is in
 * io/internal.h. The server counts its open handles (the listener, one per
 * connection, one per refused connection) and is freed when the last of
 * them has closed.
 */
#include "io/internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/tls.h"

void ebb__httpd_handle_closed(struct ebb__httpd *s)
{
    if (--s->handles > 0)
        return;
    void (*closed)(void *) = s->closed;
    void *arg = s->closed_arg;
    free(s);
    if (closed != NULL)
        closed(arg);
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

static void on_connection(uv_stream_t *listener, int status)
{
    struct ebb__httpd *s = listener->data;
    if (status < 0 || s->closing)
        return;
    if (ebb__httpd_refuse_over_cap(s))
        return;
    struct ebb__httpd_conn *c = ebb__httpd_conn_new(s);
    if (c == NULL)
        return;
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
        ebb__httpd_conn_close(c);
        return;
    }
    ebb__httpd_conn_start(c);
}

static void listener_closed(uv_handle_t *handle)
{
    ebb__httpd_handle_closed(handle->data);
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

void ebb__httpd_close(struct ebb__httpd *s, void (*closed)(void *arg),
                           void *arg)
{
    if (s->closing)
        return;
    s->closing = true;
    s->closed = closed;
    s->closed_arg = arg;
    while (!ebb_list_empty(&s->conns))
        ebb__httpd_conn_close(ebb_list_entry(ebb_list_first(&s->conns),
                                             struct ebb__httpd_conn, node));
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
