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
int ebb__config_do_run_on(struct ebb__config *cfg, const struct ebb__ynode *n,
                          struct ebb_diag *d);

#endif
