/* ebb.yaml's keys for ebbd itself (see config_impl.h). Sub-sections with
 * fixed keys go through the same table code as plugin sections, so they
 * get the same defaults and messages. */
#include "config/config_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/cfg_table.h"
#include "base/str.h"
#include "base/yaml_read.h"
#include "io/httpd.h"

struct api_cfg {
    char *socket_mode;
    char *socket_group;
    int64_t max_connections;
    ebb_dur_ms request_timeout;
    ebb_dur_ms idle_timeout;
    int64_t max_store_readers;
};
static const struct ebb_cfg_key api_keys[] = {
    {"socket_mode", EBB_CFG_STRING, "0600", offsetof(struct api_cfg, socket_mode),
     "permissions of the CLI socket, octal"},
    {"socket_group", EBB_CFG_STRING, NULL, offsetof(struct api_cfg, socket_group),
     "group that owns the CLI socket"},
    {"max_connections", EBB_CFG_INT, "64", offsetof(struct api_cfg, max_connections),
     "CLI connections open at once; one more is told ebbd is busy"},
    {"request_timeout", EBB_CFG_DURATION, "10s",
     offsetof(struct api_cfg, request_timeout),
     "time a request may take to arrive in full (wall time)"},
    {"idle_timeout", EBB_CFG_DURATION, "60s", offsetof(struct api_cfg, idle_timeout),
     "time a connection with nothing to answer stays open (wall time)"},
    {"max_store_readers", EBB_CFG_INT, "4", offsetof(struct api_cfg, max_store_readers),
     "long reads of the store (history, report, forecast) at once; more are busy"},
    EBB_CFG_END,
};

struct agent_api_cfg {
    char *listen;
    char *url;
    ebb_dur_ms heartbeat;
    ebb_dur_ms heartbeat_timeout;
    char *tls;
    char *tls_cert;
    char *tls_key;
    char *tls_ca;
    int insecure;
    ebb_dur_ms enrol_ttl;
    ebb_dur_ms gang_timeout;
    int64_t max_connections;
    ebb_dur_ms header_timeout;
    ebb_dur_ms idle_timeout;
};
static const struct ebb_cfg_key agent_api_keys[] = {
    {"listen", EBB_CFG_STRING, "127.0.0.1:0",
     offsetof(struct agent_api_cfg, listen), "host:port agents connect to"},
    {"url", EBB_CFG_STRING, "", offsetof(struct agent_api_cfg, url),
     "URL agents are given (default: http:// and listen)"},
    {"heartbeat", EBB_CFG_DURATION, "5s",
     offsetof(struct agent_api_cfg, heartbeat), "how often agents report"},
    {"heartbeat_timeout", EBB_CFG_DURATION, "60s",
     offsetof(struct agent_api_cfg, heartbeat_timeout),
     "silence after which ebbd asks the provider whether an instance is gone"},
    {"tls", EBB_CFG_STRING, "auto", offsetof(struct agent_api_cfg, tls),
     "auto (TLS unless listen is loopback-only and no tls_cert is set), on or off"},
    {"tls_cert", EBB_CFG_STRING, NULL, offsetof(struct agent_api_cfg, tls_cert),
     "PEM certificate (and chain) agents see; default: one ebbd makes in its "
     "state directory"},
    {"tls_key", EBB_CFG_STRING, NULL, offsetof(struct agent_api_cfg, tls_key),
     "PEM private key of tls_cert"},
    {"tls_ca", EBB_CFG_STRING, NULL, offsetof(struct agent_api_cfg, tls_ca),
     "PEM CA certificate agents verify tls_cert with (default: the pin of a "
     "self-signed tls_cert, else the instance's own CAs)"},
    {"insecure", EBB_CFG_BOOL, "false", offsetof(struct agent_api_cfg, insecure),
     "allow plain HTTP from agents that are not on this host"},
    {"enrol_ttl", EBB_CFG_DURATION, "1h", offsetof(struct agent_api_cfg, enrol_ttl),
     "how long after a launch an instance's one-time enrolment token is good"},
    {"gang_timeout", EBB_CFG_DURATION, "10m", offsetof(struct agent_api_cfg, gang_timeout),
     "how long after a launch every node of a gang must have reported before "
     "the gang is released (wall time)"},
    {"max_connections", EBB_CFG_INT, "256",
     offsetof(struct agent_api_cfg, max_connections),
     "agent connections open at once; more are closed at once"},
    {"header_timeout", EBB_CFG_DURATION, "10s",
     offsetof(struct agent_api_cfg, header_timeout),
     "time a request's head may take to arrive in full (wall time)"},
    {"idle_timeout", EBB_CFG_DURATION, "60s",
     offsetof(struct agent_api_cfg, idle_timeout),
     "time a kept-alive connection waits for its next request (wall time)"},
    EBB_CFG_END,
};

/* The agent API's timing. A heartbeat of 0 has every agent report in a
 * busy loop and give up, and ebbd declare it lost at once; a timeout
 * shorter than a few heartbeats declares an agent lost between two of its
 * reports. The timeout must cover HEARTBEAT_MISSES heartbeats, so that one
 * or two reports lost on the way (a slow network, a paused VM, a
 * restarting ebbd) never end an instance that is fine. */
#define HEARTBEAT_MISSES 3
#define HEARTBEAT_TIMEOUT_MAX (24.0 * 3600 * 1000)
static const struct ebb__cfg_range agent_api_ranges[] = {
    {"heartbeat", 1000, 600000, false},
    {"heartbeat_timeout", 1000 * HEARTBEAT_MISSES, HEARTBEAT_TIMEOUT_MAX, false},
    EBB__CFG_RANGE_END,
};

/* heartbeat_timeout against heartbeat (each already in its range). Sets d
 * and returns EBB_ECONFIG when the timeout covers fewer than
 * HEARTBEAT_MISSES heartbeats. */
static int check_heartbeat(const struct agent_api_cfg *a, const struct ebb__ynode *n,
                           const char *file, struct ebb_diag *d)
{
    struct ebb__cfg_range r = {"heartbeat_timeout",
                               (double)a->heartbeat * HEARTBEAT_MISSES,
                               HEARTBEAT_TIMEOUT_MAX, false};
    if ((double)a->heartbeat_timeout >= r.min)
        return 0;
    char to[EBB_DURATION_BUFSZ], hb[EBB_DURATION_BUFSZ], range[3 * EBB_DURATION_BUFSZ];
    const struct ebb__ynode *m = ebb__ymap_get(n, "heartbeat_timeout");
    if (m == NULL)
        m = ebb__ymap_get(n, "heartbeat");
    ebb_diag_set(d, m != NULL ? m->file : file, m != NULL ? m->line : 0,
                 "agent_api.heartbeat_timeout: %s is outside the allowed range (%s): "
                 "it must cover %d heartbeats of agent_api.heartbeat (%s)",
                 ebb_format_duration(a->heartbeat_timeout, to, sizeof(to)),
                 ebb__cfg_range_format(EBB_CFG_DURATION, &r, range, sizeof(range)),
                 HEARTBEAT_MISSES, ebb_format_duration(a->heartbeat, hb, sizeof(hb)));
    return EBB_ECONFIG;
}

struct metrics_cfg {
    char *listen;
};
static const struct ebb_cfg_key metrics_keys[] = {
    {"listen", EBB_CFG_STRING, NULL, offsetof(struct metrics_cfg, listen),
     "host:port of the Prometheus endpoint (GET /metrics)"},
    EBB_CFG_END,
};

struct clock_cfg {
    char *start;
    double speed;
};
static const struct ebb_cfg_key clock_keys[] = {
    {"start", EBB_CFG_STRING, "", offsetof(struct clock_cfg, start),
     "time the clock reads when ebbd first starts on a state directory; "
     "a restart resumes where the store's clock got to (ISO 8601; "
     "default: now)"},
    {"speed", EBB_CFG_DOUBLE, "1", offsetof(struct clock_cfg, speed),
     "how many times faster than the wall clock time runs"},
    EBB_CFG_END,
};

/* The connection limits must be positive: a cap of 0 would refuse
 * everyone, a timeout of 0 close every connection at once. Sets d and
 * returns EBB_ECONFIG when one is not. */
static int check_limits(const struct ebb__ynode *n, const char *file, const char *section,
                        int64_t max_connections, int64_t max_readers,
                        const char *timeout_name, ebb_dur_ms timeout,
                        ebb_dur_ms idle_timeout, struct ebb_diag *d)
{
    const char *bad = NULL;
    if (max_connections < 1 || max_connections > 65536)
        bad = "max_connections";
    else if (max_readers < 1 || max_readers > 64)
        bad = "max_store_readers";
    else if (timeout <= 0)
        bad = timeout_name;
    else if (idle_timeout <= 0)
        bad = "idle_timeout";
    if (bad == NULL)
        return 0;
    const struct ebb__ynode *m = ebb__ymap_get(n, bad);
    ebb_diag_set(d, m != NULL ? m->file : file, m != NULL ? m->line : 0,
                  "%s.%s: must be %s", section, bad,
                  strcmp(bad, "max_connections") == 0   ? "from 1 to 65536"
                  : strcmp(bad, "max_store_readers") == 0 ? "from 1 to 64"
                                                          : "longer than 0s (example: 10s)");
    return EBB_ECONFIG;
}

static int parse_mode(const char *s, unsigned *out)
{
    if (strncmp(s, "0o", 2) == 0)
        s += 2;
    if (*s == '\0' || strlen(s) > 4)
        return EBB_EINVAL;
    unsigned v = 0;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '7')
            return EBB_EINVAL;
        v = v * 8 + (unsigned)(*s - '0');
    }
    if (v > 0777)
        return EBB_EINVAL;
    *out = v;
    return 0;
}

int ebb__config_do_api(struct ebb__config *cfg, const struct ebb__ynode *n,
                  struct ebb_diag *d)
{
    void *raw;
    int rc = ebb__cfg_apply(api_keys, sizeof(struct api_cfg), n, "api", &raw,
                            d);
    if (rc != 0)
        return rc;
    struct api_cfg *api = raw;
    /* A mode is always read as octal, as chmod reads it: YAML 1.1 would
     * read a plain 0600 as octal and YAML 1.2 as decimal 600, and neither
     * is what people mean by "600". */
    if (check_limits(n, cfg->file, "api", api->max_connections, api->max_store_readers,
                     "request_timeout", api->request_timeout, api->idle_timeout,
                     d) != 0) {
        rc = EBB_ECONFIG;
    } else if (parse_mode(api->socket_mode, &cfg->api_socket_mode) != 0) {
        const struct ebb__ynode *m = ebb__ymap_get(n, "socket_mode");
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_quote(api->socket_mode, strlen(api->socket_mode), q,
                        sizeof(q));
        ebb_diag_set(d, m != NULL ? m->file : cfg->file,
                      m != NULL ? m->line : 0,
                      "api.socket_mode: %s is not a file mode (octal, at most "
                      "0777; example: 0660)", q);
        rc = EBB_ECONFIG;
    } else {
        free(cfg->api_socket_group);
        cfg->api_socket_group = api->socket_group;
        api->socket_group = NULL;
        const struct ebb__ynode *g = ebb__ymap_get(n, "socket_group");
        cfg->api_socket_group_line = g != NULL ? g->line : 0;
        cfg->api_max_connections = (unsigned)api->max_connections;
        cfg->api_request_timeout = api->request_timeout;
        cfg->api_idle_timeout = api->idle_timeout;
        cfg->api_max_store_readers = (unsigned)api->max_store_readers;
    }
    ebb__cfg_free(api_keys, api);
    return rc;
}

/* Accepts "host:port" and "[v6addr]:port" with a port from 1 to 65535;
 * whether the address can be bound is found out when ebbd binds it. */
static int valid_listen(const char *s)
{
    const char *colon = strrchr(s, ':');
    if (colon == NULL || colon == s)
        return 0;
    if (s[0] == '[' && colon[-1] != ']')
        return 0;
    const char *p = colon + 1;
    if (*p == '\0' || strlen(p) > 5)
        return 0;
    long port = 0;
    for (; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        port = port * 10 + (*p - '0');
    }
    return port <= 65535; /* 0: the OS picks a free port */
}

/* Whether agents reach `listen` only from this host. */
static bool loopback_only(const char *listen)
{
    char ip[64];
    uint16_t port;
    return ebb__httpd_parse_address(listen, ip, sizeof(ip), &port) == 0 &&
           ebb__httpd_is_loopback_ip(ip);
}

/* Decides whether the agent listener speaks TLS, and refuses what would
 * send agents' tokens and jobs' env across a network in clear. Returns
 * NULL, or what is wrong and the key to blame in `*key`. */
static const char *agent_tls_check(struct ebb__config *cfg, const struct agent_api_cfg *a,
                                   const char **key)
{
    /* YAML 1.1 people write on/off as true/false: the same here. */
    bool on = strcmp(a->tls, "on") == 0 || strcmp(a->tls, "true") == 0;
    bool off = strcmp(a->tls, "off") == 0 || strcmp(a->tls, "false") == 0;
    bool loopback = loopback_only(a->listen);
    *key = "tls";
    if (!on && !off && strcmp(a->tls, "auto") != 0)
        return "agent_api.tls: use auto, on or off";
    if ((a->tls_cert == NULL) != (a->tls_key == NULL)) {
        *key = a->tls_cert == NULL ? "tls_key" : "tls_cert";
        return "agent_api.tls_cert and agent_api.tls_key go together";
    }
    if (off && a->tls_cert != NULL)
        return "agent_api.tls is off but agent_api.tls_cert is set";
    if (a->tls_ca != NULL && a->tls_cert == NULL) {
        *key = "tls_ca";
        return "agent_api.tls_ca needs agent_api.tls_cert (the certificate it signs)";
    }
    cfg->agent_tls = on || (!off && (a->tls_cert != NULL || !loopback));
    if (!cfg->agent_tls && !loopback && !a->insecure) {
        *key = "listen";
        return "agent_api.listen is reachable from other hosts and agent_api.tls "
               "is off: agents' tokens and jobs' env would cross the network in "
               "clear; turn TLS on (agent_api.tls: auto) or, on a network you "
               "trust, set agent_api.insecure: true";
    }
    const char *want = cfg->agent_tls ? "https://" : "http://";
    if (a->url[0] != '\0' && strncmp(a->url, want, strlen(want)) != 0) {
        *key = "url";
        return cfg->agent_tls ? "agent_api.url must be https:// (the listener speaks TLS)"
                              : "agent_api.url must be http:// (agent_api.tls is off)";
    }
    return NULL;
}

static void take_str(char **dst, char **src)
{
    free(*dst);
    *dst = *src;
    *src = NULL;
}

int ebb__config_do_agent_api(struct ebb__config *cfg, const struct ebb__ynode *n,
                        struct ebb_diag *d)
{
    void *raw;
    int rc = ebb__cfg_apply(agent_api_keys, sizeof(struct agent_api_cfg), n,
                            "agent_api", &raw, d);
    if (rc != 0)
        return rc;
    struct agent_api_cfg *agent = raw;
    if (ebb__cfg_check_ranges(agent_api_keys, agent_api_ranges, agent, n, cfg->file,
                              "agent_api", d) != 0 ||
        check_heartbeat(agent, n, cfg->file, d) != 0) {
        rc = EBB_ECONFIG;
    } else if (check_limits(n, cfg->file, "agent_api", agent->max_connections, 1,
                     "header_timeout", agent->header_timeout, agent->idle_timeout,
                     d) != 0) {
        rc = EBB_ECONFIG;
    } else if (!valid_listen(agent->listen)) {
        const struct ebb__ynode *m = ebb__ymap_get(n, "listen");
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_quote(agent->listen, strlen(agent->listen), q, sizeof(q));
        ebb_diag_set(d, m != NULL ? m->file : cfg->file,
                      m != NULL ? m->line : 0,
                      "agent_api.listen: %s is not an address and port "
                      "(example: 0.0.0.0:7311 or [::]:7311)", q);
        rc = EBB_ECONFIG;
    }
    const char *key = NULL;
    const char *bad_tls = rc == 0 ? agent_tls_check(cfg, agent, &key) : NULL;
    if (bad_tls != NULL) {
        const struct ebb__ynode *m = ebb__ymap_get(n, key);
        ebb_diag_set(d, m != NULL ? m->file : cfg->file, m != NULL ? m->line : 0,
                     "%s", bad_tls);
        rc = EBB_ECONFIG;
    }
    if (rc == 0) {
        take_str(&cfg->agent_tls_cert, &agent->tls_cert);
        take_str(&cfg->agent_tls_key, &agent->tls_key);
        take_str(&cfg->agent_tls_ca, &agent->tls_ca);
        cfg->agent_insecure = agent->insecure;
        cfg->agent_enrol_ttl = agent->enrol_ttl;
        cfg->agent_gang_timeout = agent->gang_timeout;
        free(cfg->agent_listen);
        cfg->agent_listen = agent->listen;
        agent->listen = NULL;
        free(cfg->agent_url);
        cfg->agent_url = NULL;
        if (agent->url[0] != '\0') {
            cfg->agent_url = agent->url;
            agent->url = NULL;
        }
        cfg->agent_heartbeat = agent->heartbeat;
        cfg->agent_heartbeat_timeout = agent->heartbeat_timeout;
        cfg->agent_max_connections = (unsigned)agent->max_connections;
        cfg->agent_header_timeout = agent->header_timeout;
        cfg->agent_idle_timeout = agent->idle_timeout;
    }
    ebb__cfg_free(agent_api_keys, agent);
    return rc;
}

/* The metrics endpoint is off unless the section names where it listens. */
int ebb__config_do_metrics(struct ebb__config *cfg, const struct ebb__ynode *n,
                      struct ebb_diag *d)
{
    void *raw;
    int rc = ebb__cfg_apply(metrics_keys, sizeof(struct metrics_cfg), n,
                            "metrics", &raw, d);
    if (rc != 0)
        return rc;
    struct metrics_cfg *m = raw;
    if (m->listen != NULL && !valid_listen(m->listen)) {
        const struct ebb__ynode *l = ebb__ymap_get(n, "listen");
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_quote(m->listen, strlen(m->listen), q, sizeof(q));
        ebb_diag_set(d, l != NULL ? l->file : cfg->file, l != NULL ? l->line : 0,
                      "metrics.listen: %s is not an address and port "
                      "(example: 127.0.0.1:9464)", q);
        rc = EBB_ECONFIG;
    } else {
        free(cfg->metrics_listen);
        cfg->metrics_listen = m->listen;
        m->listen = NULL;
    }
    ebb__cfg_free(metrics_keys, m);
    return rc;
}

int ebb__config_do_clock(struct ebb__config *cfg, const struct ebb__ynode *n,
                    struct ebb_diag *d)
{
    void *raw;
    int rc = ebb__cfg_apply(clock_keys, sizeof(struct clock_cfg), n, "clock",
                            &raw, d);
    if (rc != 0)
        return rc;
    struct clock_cfg *c = raw;
    const char *why = NULL;
    if (c->start[0] != '\0' &&
        ebb_parse_time_why(c->start, &cfg->clock_start, &why) != 0) {
        const struct ebb__ynode *m = ebb__ymap_get(n, "start");
        ebb_diag_set(d, m->file, m->line,
                      "clock.start: %s (example: 2020-01-06T00:00:00Z)", why);
        rc = EBB_ECONFIG;
    } else if (!(c->speed > 0 && c->speed <= 1e6)) {
        const struct ebb__ynode *m = ebb__ymap_get(n, "speed");
        ebb_diag_set(d, m->file, m->line,
                      "clock.speed: must be above 0 and at most 1000000");
        rc = EBB_ECONFIG;
    } else {
        cfg->clock_speed = c->speed;
    }
    ebb__cfg_free(clock_keys, c);
    return rc;
}

/* run_on: {MARKET: RUNNER}: instances of MARKET's offers run on RUNNER. */
int ebb__config_do_run_on(struct ebb__config *cfg, const struct ebb__ynode *n,
                     struct ebb_diag *d)
{
    if (n->kind != EBB__YMAP) {
        ebb_diag_set(d, n->file, n->line,
                      "run_on: expected a mapping of market: runner "
                      "(example: run_on: {sim: local})");
        return EBB_ECONFIG;
    }
    for (size_t i = 0; i < n->n; i++) {
        const struct ebb__ynode *key = n->keys[i], *v = n->items[i];
        int rc = ebb__yread_scalar(v, "run_on", "a provider name", d);
        if (rc != 0)
            return rc;
        struct ebb__run_on *grown =
            realloc(cfg->run_on, (cfg->n_run_on + 1) * sizeof(*grown));
        if (grown == NULL)
            return ebb__yread_nomem(d);
        cfg->run_on = grown;
        struct ebb__run_on *r = &cfg->run_on[cfg->n_run_on];
        r->market = strdup(key->value);
        r->runner = strdup(v->value);
        r->line = key->line;
        if (r->market == NULL || r->runner == NULL) {
            free(r->market);
            free(r->runner);
            return ebb__yread_nomem(d);
        }
        cfg->n_run_on++;
    }
    return 0;
}

