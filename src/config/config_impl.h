/* The parts of ebb.yaml that set up ebbd itself: the API socket, the agent
 * endpoint, the metrics endpoint, the clock and run_on (config_daemon.c).
 * Each applies one top-level key to the config; internal to config*.c. */
#ifndef EBB_CONFIG_IMPL_H
#define EBB_CONFIG_IMPL_H

#include "base/yaml_doc.h"
#include "config/config_file.h"

int ebb__config_do_api(struct ebb__config *cfg, const struct ebb__ynode *n,
                       struct ebb_diag *d);
int ebb__config_do_agent_api(struct ebb__config *cfg, const struct ebb__ynode *n,
                             struct ebb_diag *d);
int ebb__config_do_metrics(struct ebb__config *cfg, const struct ebb__ynode *n,
                           struct ebb_diag *d);
int ebb__config_do_clock(struct ebb__config *cfg, const struct ebb__ynode *n,
                         struct ebb_diag *d);
/* notify: (notify.c). */
int ebb__config_do_notify(struct ebb__config *cfg, const struct ebb__ynode *n,
                          struct ebb_diag *d);
/* A team's budget and quotas (quotas.c). ebb__config_team_split checks
 * the team's keys and fills *rest with the mapping `team` without budget,
 * max_gpus, max_burn and users, for the key table (free it with
 * ebb__config_team_split_free); ebb__config_team_limits reads those into
 * `t`, whose members and admins are set (ebb__config_team_limits_free
 * frees what it stored). `what` is "teams.NAME". */
int ebb__config_team_split(const struct ebb__ynode *team, const char *what,
                           struct ebb__ynode *rest, struct ebb_diag *d);
void ebb__config_team_split_free(struct ebb__ynode *rest);
int ebb__config_team_limits(struct ebb__team *t, const struct ebb__ynode *team,
                            const char *what, struct ebb_diag *d);
void ebb__config_team_limits_free(struct ebb__team *t);
int ebb__config_do_run_on(struct ebb__config *cfg, const struct ebb__ynode *n,
                          struct ebb_diag *d);

#endif
