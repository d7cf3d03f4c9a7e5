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

struct api_cfg {
    char *socket_mode;
    char *socket_group;
};
static const struct ebb_cfg_key api_keys[] = {
    {"socket_mode", EBB_CFG_STRING, "0600", offsetof(struct api_cfg, socket_mode),
     "permissions of the CLI socket, octal"},
    {"socket_group", EBB_CFG_STRING, NULL, offsetof(struct api_cfg, socket_group),
     "group that owns the CLI socket"},
    EBB_CFG_END,
};

struct agent_api_cfg {
    char *listen;
    char *url;
    ebb_dur_ms heartbeat;
    ebb_dur_ms heartbeat_timeout;
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
    EBB_CFG_END,
};

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
     "time the clock reads when ebbd starts (ISO 8601; default: now)"},
    {"speed", EBB_CFG_DOUBLE, "1", offsetof(struct clock_cfg, speed),
     "how many times faster than the wall clock time runs"},
    EBB_CFG_END,
};

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
    if (parse_mode(api->socket_mode, &cfg->api_socket_mode) != 0) {
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

int ebb__config_do_agent_api(struct ebb__config *cfg, const struct ebb__ynode *n,
                        struct ebb_diag *d)
{
    void *raw;
    int rc = ebb__cfg_apply(agent_api_keys, sizeof(struct agent_api_cfg), n,
                            "agent_api", &raw, d);
    if (rc != 0)
        return rc;
    struct agent_api_cfg *agent = raw;
    if (!valid_listen(agent->listen)) {
        const struct ebb__ynode *m = ebb__ymap_get(n, "listen");
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_quote(agent->listen, strlen(agent->listen), q, sizeof(q));
        ebb_diag_set(d, m != NULL ? m->file : cfg->file,
                      m != NULL ? m->line : 0,
                      "agent_api.listen: %s is not an address and port "
                      "(example: 0.0.0.0:7311 or [::]:7311)", q);
        rc = EBB_ECONFIG;
    } else {
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

