/* The plugins an engine runs with: the providers named in ebb.yaml and
 * every policy on the plugin path, each opened, configured from its
 * section and, once started, created with its own host.
 *
 * Loading (open + apply configuration tables) touches no state, so ebbd can
 * validate everything before it creates its state directory; starting
 * creates the plugin instances.
 */
#ifndef EBB_REGISTRY_H
#define EBB_REGISTRY_H

#include <ebb/diag.h>

#include "base/yaml_doc.h"
#include "config/config_file.h"
#include "plugin/plugin.h"
#include "plugin/plugin_host.h"

struct ebb__plugin_slot {
    struct ebb__plugin *plugin;
    void *config;  /* filled from the plugin's table; owned here */
    void *self;    /* NULL until started */
    struct ebb__host host;
    int host_ready;
};

struct ebb__registry {
    struct ebb__plugin_path path;
    struct ebb__plugin_slot *providers;
    size_t n_providers;
    struct ebb__plugin_slot *policies;
    size_t n_policies;
};

/* Opens and configures the providers listed under `providers:` and every
 * policy on the plugin path, applying `policies:` sections to them. A
 * policy section naming no installed policy is an error, as is a
 * `default_policy` that is not installed. Returns 0 or an EBB_E* code with
 * d set; on failure *r is empty. `cfg` must outlive the registry. */
int ebb__registry_load(struct ebb__registry *r, const struct ebb__config *cfg,
                       struct ebb_diag *d);

/* Creates every plugin instance with a host from `env`. Returns 0 or the
 * first failure with d set (instances created so far stay registered and
 * are destroyed by ebb__registry_free). */
int ebb__registry_start(struct ebb__registry *r, const struct ebb__host_env *env,
                        struct ebb_diag *d);

/* Destroys instances (providers complete their requests with
 * EBB_ECANCELED), frees configurations and closes the plugins. */
void ebb__registry_free(struct ebb__registry *r);

struct ebb__plugin_slot *ebb__registry_provider(struct ebb__registry *r,
                                                const char *name);
struct ebb__plugin_slot *ebb__registry_policy(struct ebb__registry *r,
                                              const char *name);

#endif
