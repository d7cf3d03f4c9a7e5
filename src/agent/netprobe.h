/* What the host's network offers a gang: the agent's own address on the
 * network that reaches ebbd, a free TCP port on it (the gang's
 * MASTER_PORT when this node is rank 0), and the link speed of the
 * interface that carries it, for ebbd's check of `resources.network`.
 */
#ifndef EBB_AGENT_NETPROBE_H
#define EBB_AGENT_NETPROBE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct agent_net {
    char addr[64];      /* the local IP address towards ebbd, "" when unknown */
    int port;           /* a free TCP port on addr, 0 when none was found */
    int64_t link_mbps;  /* the interface's speed in Mbit/s, 0 when unknown
                         * (loopback, a virtual link, no speed file) */
};

typedef void (*agent_netprobe_cb)(void *arg, const struct agent_net *net);

/* Resolves the host of `url` on the loop's thread pool, then finds the
 * local address the kernel would use to reach it (a UDP socket
 * connected to it: nothing is sent), a free port on that address, and
 * its link speed from `sysfs` (/sys, or a test's tree). Calls `cb` once,
 * from a later loop turn, with what it found (a warning in the log for
 * what it did not). Returns 0, or EBB_EINVAL (a URL without a host) or
 * EBB_ENOMEM, and then `cb` is never called. */
int agent_netprobe_start(uv_loop_t *loop, const char *url, const char *sysfs,
                         agent_netprobe_cb cb, void *arg);

/* The host (without brackets) and port of an http:// or https:// URL
 * (the scheme's port when it names none). Returns 0 or EBB_EINVAL. */
int agent_net_url_host(const char *url, char *host, size_t host_size, char *port,
                       size_t port_size);

/* A TCP port free on address `addr` at the moment: bound with port 0,
 * read, closed. Returns it, or a negative errno. */
int agent_net_free_port(const char *addr);

/* The speed of the interface holding address `addr`: 0 for a loopback
 * interface, an address no interface holds, or what
 * agent_net_iface_mbps says 0 for. */
int64_t agent_net_link_mbps(const char *sysfs, const char *addr);

/* <sysfs>/class/net/<iface>/speed in Mbit/s, 0 when it is missing,
 * unreadable, not a number or not positive (Linux says -1 for a link
 * without a speed). */
int64_t agent_net_iface_mbps(const char *sysfs, const char *iface);

#endif
