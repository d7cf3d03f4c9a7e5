/* ebbd's configuration file, ebb.yaml (annotated in examples/ebb.yaml).
 *
 * The loader checks everything it owns (log level, API sockets, teams,
 * currency rates) and reports the first problem as "file:line: message".
 * Provider and policy sections stay YAML nodes: the plugin loader applies
 * each plugin's own key table to them with ebb__cfg_apply(), because only
 * the plugin knows its keys. The config owns its YAML document, so those
 * nodes live as long as the config.
 */
#ifndef EBB_CONFIG_LOAD_H
#define EBB_CONFIG_LOAD_H

#include <stddef.h>

#include <ebb/common.h>
#include <ebb/config.h>
#include <ebb/diag.h>

#include "base/currency.h"
#include "base/yaml_doc.h"
#include "config/notify.h"

struct ebb__plan;
struct ebb__store_cfg;

/* A named plugin section: `providers: { aws: {...} }`. `node` is the
 * section's value (a mapping, or NULL / a null value for "all defaults"),
 * ready for ebb__cfg_apply(). */
struct ebb__config_section {
    char *name;
    int line;
    const struct ebb__ynode *node;
};

/* A member's own limits inside a team (teams.T.users.NAME, quotas.c). */
struct ebb__team_user {
    char *name;
    int line;
    int has_budget;                 /* 0: no monthly cap of their own */
    struct ebb_money budget;        /* per calendar month, their jobs in the team */
    int64_t max_gpus;               /* 0: no limit */
};

struct ebb__team {
    char *name;
    int line;
    struct ebb_string_list members; /* user names */
    struct ebb_string_list admins;  /* user names: members who see the
                                     * team's jobs and schedules in full */
    int has_budget;                 /* 0: no monthly cap */
    struct ebb_money budget;        /* per calendar month */
    /* Quotas (docs/budgets.md "Quotas"): GPUs and spend per hour across
     * the team's instances, and members' own limits. */
    int64_t max_gpus;               /* 0: no limit */
    int has_max_burn;
    struct ebb_money max_burn;      /* per hour */
    size_t n_users;
    struct ebb__team_user *users;
    /* admission: p90 (docs/budgets.md "Admission"): a submission whose
     * p90 cost exceeds what is left of the cap is refused. */
    int admission_p90;
    /* fair_share: the team's waiting jobs of one priority go in the order
     * of their owners' spend this month against their share (quotas.c,
     * engine_order.c). */
    int fair_share;
};

/* Instances of market `market`'s offers run on provider `runner`. */
struct ebb__run_on {
    char *market, *runner;
    int line;
};

struct ebb__config {
    struct ebb__ydoc *doc; /* owned; sections point into it */
    const char *file;      /* display name of the file, owned by doc */

    enum ebb_log_level log_level;      /* default info */
    struct ebb_string_list plugin_dirs; /* default empty: built-in dir */

    unsigned api_socket_mode;  /* default 0600 */
    char *api_socket_group;    /* default NULL: the daemon's own group */
    int api_socket_group_line; /* where it was set; 0: not set */
    char *agent_listen;        /* default "127.0.0.1:0": a port the OS picks, kept */
    char *agent_url;           /* NULL: "http(s)://" + the address listened on */
    int agent_tls;             /* the agent listener speaks TLS (decided from
                                * agent_api.tls, tls_cert and listen) */
    char *agent_tls_cert, *agent_tls_key; /* NULL: ebbd's own, in STATE */
    char *agent_tls_ca;        /* NULL: agents pin a self-signed cert */
    int agent_insecure;        /* agent_api.insecure: plain HTTP from afar */
    ebb_dur_ms agent_enrol_ttl; /* default 1 h */
    ebb_dur_ms agent_gang_timeout; /* default 10 min */
    ebb_dur_ms agent_heartbeat;         /* default 5 s */
    ebb_dur_ms agent_heartbeat_timeout; /* default 60 s */
    /* Connection limits (docs/security.md, "Hostile input"). */
    unsigned api_max_connections;       /* api.max_connections, default 64 */
    ebb_dur_ms api_request_timeout;     /* api.request_timeout, default 10 s */
    ebb_dur_ms api_idle_timeout;        /* api.idle_timeout, default 60 s */
    unsigned api_max_store_readers;     /* api.max_store_readers, default 4 */
    unsigned agent_max_connections;     /* agent_api.max_connections, default 256 */
    ebb_dur_ms agent_header_timeout;    /* agent_api.header_timeout, default 10 s */
    ebb_dur_ms agent_idle_timeout;      /* agent_api.idle_timeout, default 60 s */
    char *metrics_listen;      /* metrics.listen; NULL: no metrics endpoint */
    ebb_time_ms clock_start;   /* 0: the wall clock's time */
    double clock_speed;        /* 1: real time */
    size_t n_run_on;
    struct ebb__run_on *run_on;
    char *default_policy;      /* default "renewal" */
    int default_policy_line;   /* where it was set; 0: the default */

    size_t n_providers;
    struct ebb__config_section *providers;
    size_t n_policies;
    struct ebb__config_section *policies;
    size_t n_teams;
    struct ebb__team *teams;
    struct ebb_string_list admins;
    size_t n_rates;
    struct ebb__currency_rate *rates;
    size_t n_plans;
    struct ebb__plan *plans; /* report.h; read by report_advice.c */
    size_t n_stores;
    struct ebb__store_cfg *stores; /* config/stores.h */
    struct ebb__notify_config notify; /* notify: (config/notify.h) */
};

/* Loads the file at `path`. On success *out is a new config the caller
 * frees with ebb__config_free(). Returns 0; EBB_ECONFIG for bad content,
 * EBB_ENOTFOUND when the file does not exist, EBB_EIO when it cannot be
 * read, EBB_ENOMEM; d->msg then says what and where, *out is NULL and
 * nothing leaks. */
int ebb__config_load_file(const char *path, struct ebb__config **out,
                          struct ebb_diag *d);

/* As ebb__config_load_file() for `len` bytes at `buf`; `name` (copied) is
 * the file name shown in messages. */
int ebb__config_load_buffer(const char *name, const char *buf, size_t len,
                            struct ebb__config **out, struct ebb_diag *d);

/* Loads the configuration compiled into the binary (used when no ebb.yaml
 * exists): the sim market on the shipped data run on local processes, and
 * the store `ckpt` at file://STATE_DIR/store (`state_dir` absolute, without
 * "." or ".." parts). Same return values. */
int ebb__config_load_default(const char *state_dir, struct ebb__config **out,
                             struct ebb_diag *d);

/* The text of that built-in configuration. Static; never freed. */
const char *ebb__config_default_text(void);

/* Frees the config, its strings and its YAML document. NULL is allowed. */
void ebb__config_free(struct ebb__config *cfg);

/* The section named `name` under providers: / policies:, or NULL. Borrowed
 * from cfg. */
const struct ebb__config_section *
ebb__config_provider(const struct ebb__config *cfg, const char *name);
const struct ebb__config_section *
ebb__config_policy(const struct ebb__config *cfg, const char *name);

/* The store named `name` under stores:, or NULL. Borrowed from cfg. */
const struct ebb__store_cfg *ebb__config_store(const struct ebb__config *cfg,
                                               const char *name);

/* The team named `name`, or NULL. Borrowed from cfg. */
const struct ebb__team *ebb__config_team(const struct ebb__config *cfg,
                                         const char *name);

/* Teams and admins (teams.c). `user` is a user name; NULL (a uid with no
 * name) is in no list. */

/* Whether `user` is named in the top-level admins:. */
int ebb__config_admin_named(const struct ebb__config *cfg, const char *user);

/* Whether `user` is a member of team `t`: in its members or its admins. */
int ebb__team_has_member(const struct ebb__team *t, const char *user);

/* Team `t`'s own limits for `user` (teams.T.users), or NULL. */
const struct ebb__team_user *ebb__team_user(const struct ebb__team *t,
                                            const char *user);

/* Whether `user` is one of team `t`'s admins. */
int ebb__team_has_admin(const struct ebb__team *t, const char *user);

/* Which team a job of `user` counts against, given the team its spec
 * names (`named`, NULL for none; `file` and `line`, 0 when unknown, say
 * where it was named, for messages) and
 * whether the user is an admin (who may submit for any team). A named
 * team must be in cfg and `user` a member (or an admin); with none named,
 * the one team `user` is a member of, or none. Returns 0 with *team
 * borrowed from cfg (NULL: no team); EBB_ENOTFOUND (no such team),
 * EBB_EPERM (not a member) or EBB_EINVAL (a member of several teams who
 * named none; the message lists them), with `why` filled and *team
 * NULL. */
int ebb__config_settle_team(const struct ebb__config *cfg, const char *user,
                            int is_admin, const char *file, int line,
                            const char *named, const char **team,
                            struct ebb_diag *why);

#endif
