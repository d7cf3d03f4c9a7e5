/* The network probe (netprobe.h): address, free port and link speed. */
#include "agent/netprobe.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ebb/common.h>

#include "base/log.h"
#include "base/str.h"

struct netprobe {
    uv_getaddrinfo_t req;
    char *sysfs;
    agent_netprobe_cb cb;
    void *arg;
};

int agent_net_url_host(const char *url, char *host, size_t host_size, char *port,
                       size_t port_size)
{
    const char *def = strncmp(url, "https://", 8) == 0 ? "443"
                      : strncmp(url, "http://", 7) == 0 ? "80" : NULL;
    if (def == NULL)
        return EBB_EINVAL;
    const char *p = strstr(url, "://") + 3;
    size_t len = strcspn(p, "/?#");
    const char *at = memchr(p, '@', len);
    if (at != NULL) {
        len -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    const char *h = p, *rest;
    size_t hlen;
    if (*p == '[') {
        const char *close = memchr(p, ']', len);
        if (close == NULL)
            return EBB_EINVAL;
        h = p + 1;
        hlen = (size_t)(close - h);
        rest = close + 1;
    } else {
        const char *colon = memchr(p, ':', len);
        hlen = colon ? (size_t)(colon - p) : len;
        rest = p + hlen;
    }
    /* What follows the host: nothing, or ':' and 1 to 5 digits. */
    size_t rlen = len - (size_t)(rest - p);
    size_t digits = rlen > 0 ? rlen - 1 : 0;
    if (hlen == 0 || hlen >= host_size || (rlen > 0 && rest[0] != ':') ||
        (rlen > 0 && (digits == 0 || digits > 5 || digits >= port_size ||
                      strspn(rest + 1, "0123456789") < digits)))
        return EBB_EINVAL;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    if (rlen == 0) {
        ebb__strlcpy(port, def, port_size);
        return 0;
    }
    memcpy(port, rest + 1, digits);
    port[digits] = '\0';
    return strtol(port, NULL, 10) <= 65535 ? 0 : EBB_EINVAL;
}

/* `addr` as a socket address with port 0; false when it is no address. */
static bool sockaddr_of(const char *addr, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        *len = sizeof(*v4);
        return true;
    }
    if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        *len = sizeof(*v6);
        return true;
    }
    return false;
}

int agent_net_free_port(const char *addr)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (!sockaddr_of(addr, &ss, &len))
        return -EINVAL;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        rc = -errno;
    close(fd);
    if (rc != 0)
        return rc;
    return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                         : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

int64_t agent_net_iface_mbps(const char *sysfs, const char *iface)
{
    if (iface[0] == '\0' || strchr(iface, '/') != NULL || strcmp(iface, "..") == 0)
        return 0;
    char *path = ebb_strfmt("%s/class/net/%s/speed", sysfs, iface);
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    free(path);
    if (fd < 0)
        return 0;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end;
    long long v = strtoll(buf, &end, 10);
    if (end == buf || (*end != '\0' && *end != '\n'))
        return 0;
    return v > 0 ? v : 0;
}

/* The IPv4 or IPv6 address `sa` as text into buf; false for another
 * family. */
static bool sockaddr_text(const struct sockaddr *sa, char *buf, socklen_t len)
{
    if (sa != NULL && sa->sa_family == AF_INET)
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf,
                         len) != NULL;
    if (sa != NULL && sa->sa_family == AF_INET6)
        return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf,
                         len) != NULL;
    return false;
}

int64_t agent_net_link_mbps(const char *sysfs, const char *addr)
{
    struct ifaddrs *list;
    if (getifaddrs(&list) != 0)
        return 0;
    int64_t mbps = 0;
    char text[INET6_ADDRSTRLEN];
    for (const struct ifaddrs *ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
        if (!sockaddr_text(ifa->ifa_addr, text, sizeof(text)) || strcmp(text, addr) != 0)
            continue;
        if (!(ifa->ifa_flags & IFF_LOOPBACK))
            mbps = agent_net_iface_mbps(sysfs, ifa->ifa_name);
        break;
    }
    freeifaddrs(list);
    return mbps;
}

/* The local address a connection to `ai` would leave from, into out. */
static bool local_addr_to(const struct addrinfo *ai, char *out, size_t size)
{
    int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    bool ok = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
              getsockname(fd, (struct sockaddr *)&ss, &len) == 0;
    close(fd);
    return ok && sockaddr_text((struct sockaddr *)&ss, out, (socklen_t)size);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct netprobe *np = req->data;
    struct agent_net net = {0};
    if (status != 0)
        ebb__warn("cannot resolve ebbd's host: %s; reporting no address", uv_strerror(status));
    for (const struct addrinfo *ai = res; ai != NULL && net.addr[0] == '\0'; ai = ai->ai_next)
        if (!local_addr_to(ai, net.addr, sizeof(net.addr)))
            net.addr[0] = '\0';
    uv_freeaddrinfo(res);
    if (status == 0 && net.addr[0] == '\0')
        ebb__warn("no local address reaches ebbd's host; reporting none");
    if (net.addr[0] != '\0') {
        int port = agent_net_free_port(net.addr);
        if (port > 0)
            net.port = port;
        else
            ebb__warn("cannot find a free port on %s: %s", net.addr, strerror(-port));
        net.link_mbps = agent_net_link_mbps(np->sysfs, net.addr);
    }
    np->cb(np->arg, &net);
    free(np->sysfs);
    free(np);
}

int agent_netprobe_start(uv_loop_t *loop, const char *url, const char *sysfs,
                         agent_netprobe_cb cb, void *arg)
{
    char host[256], port[8];
    if (agent_net_url_host(url, host, sizeof(host), port, sizeof(port)) != 0)
        return EBB_EINVAL;
    struct netprobe *np = calloc(1, sizeof(*np));
    if (np == NULL)
        return EBB_ENOMEM;
    np->sysfs = ebb_strfmt("%s", sysfs);
    np->cb = cb;
    np->arg = arg;
    np->req.data = np;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    int rc = np->sysfs ? uv_getaddrinfo(loop, &np->req, on_resolved, host, port, &hints)
                       : UV_ENOMEM;
    if (rc != 0) {
        free(np->sysfs);
        free(np);
        return rc == UV_ENOMEM ? EBB_ENOMEM : EBB_EINVAL;
    }
    return 0;
}
