/* ebbd's connection limits (#15 finding 5; docs/security.md, "Hostile
 * input"): the caps and timeouts from api: and agent_api: given to the API
 * socket, the agent listener and the metrics listener, fitted into the
 * files ebbd may open.
 *
 * Why fit them: every connection is a file descriptor, and when the TCP
 * listeners take the last one, accepting on the API socket fails and `ebb
 * status` says ebbd is not running (110 idle connections under a 128-file
 * limit did that). So ebbd raises its soft RLIMIT_NOFILE to the hard one,
 * keeps FD_RESERVE descriptors (plus three per store reader) for its own
 * files, the providers' HTTP and the local agents' pipes, gives the API
 * socket up to half of the rest and the TCP listeners what remains; each
 * cap is the configured one unless that does not fit, which is logged.
 */
#include <stdint.h>
#include <sys/resource.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "io/httpd.h"

#define FD_RESERVE 64
/* Prometheus scrapes over one or two connections. */
#define METRICS_MAX_CONNECTIONS 16

/* The files ebbd may open, after raising the soft limit to the hard one. */
static unsigned open_files_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit raised = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
            rl.rlim_cur = rl.rlim_max;
    }
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > UINT32_MAX ? UINT32_MAX
                                                                    : (unsigned)rl.rlim_cur;
}

static unsigned min_u(unsigned a, unsigned b)
{
    return a < b ? a : b;
}

int ebb__daemon_limits_apply(struct ebb__daemon *d)
{
    const struct ebb__config *c = d->config;
    unsigned files = open_files_limit();
    unsigned reserve = FD_RESERVE + 3 * c->api_max_store_readers;
    unsigned avail = files > reserve ? files - reserve : 0;
    unsigned api = min_u(c->api_max_connections, avail / 2 > 0 ? avail / 2 : 1);
    unsigned tcp = avail > api ? avail - api : 0;
    unsigned metrics = d->metrics != NULL ? min_u(METRICS_MAX_CONNECTIONS,
                                                  tcp / 8 > 0 ? tcp / 8 : 1)
                                          : 0;
    unsigned agent = min_u(c->agent_max_connections,
                           tcp > metrics + 1 ? tcp - metrics : 1);
    if (api < c->api_max_connections || agent < c->agent_max_connections)
        ebb__warn("ebbd may open %u files (ulimit -n; LimitNOFILE= in its unit): "
                  "it serves at most %u API connections (api.max_connections: %u) "
                  "and %u agent connections (agent_api.max_connections: %u)",
                  files, api, c->api_max_connections, agent, c->agent_max_connections);

    struct ebb__api_limits al = {.max_connections = api,
                                 .request_timeout = c->api_request_timeout,
                                 .idle_timeout = c->api_idle_timeout,
                                 .clock = &d->clock};
    struct ebb__httpd_limits hl = {.max_connections = agent,
                                   .header_timeout = c->agent_header_timeout,
                                   .idle_timeout = c->agent_idle_timeout,
                                   .clock = &d->clock};
    int rc = ebb__api_server_set_limits(d->api, &al);
    if (rc == 0)
        rc = ebb__httpd_set_limits(ebb__agent_api_httpd(d->agent_api), &hl);
    if (rc == 0 && d->metrics != NULL) {
        hl.max_connections = metrics;
        rc = ebb__httpd_set_limits(ebb__daemon_metrics_httpd(d->metrics), &hl);
    }
    if (rc != 0) {
        ebb__error("cannot set the connection limits: %s", ebb_strerror(rc));
        return 1;
    }
    ebb__debug("connection limits: %u files; API %u, agents %u, metrics %u", files,
               api, agent, metrics);
    return 0;
}
