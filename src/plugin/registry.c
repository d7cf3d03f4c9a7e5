#include "plugin/registry.h"

#include <stdlib.h>
#include <string.h>

#include "base/cfg_table.h"
#include "base/str.h"

static int slot_add(struct ebb__plugin_slot **slots, size_t *n,
                    struct ebb__plugin *plugin, const struct ebb__ynode *section,
                    const char *where, struct ebb_diag *d)
{
    void *config = NULL;
    int rc = ebb__cfg_apply(ebb__plugin_config_keys(plugin),
                            ebb__plugin_config_size(plugin), section, where,
                            &config, d);
    if (rc != 0) {
        ebb__plugin_close(plugin);
        return rc;
    }
    struct ebb__plugin_slot *grown = realloc(*slots, (*n + 1) * sizeof(*grown));
    if (grown == NULL) {
        ebb__cfg_free(ebb__plugin_config_keys(plugin), config);
        ebb__plugin_close(plugin);
        return EBB_ENOMEM;
    }
    *slots = grown;
    grown[*n] = (struct ebb__plugin_slot){.plugin = plugin, .config = config};
    (*n)++;
    return 0;
}

static int load_providers(struct ebb__registry *r, const struct ebb__config *cfg,
                          struct ebb_diag *d)
{
    for (size_t i = 0; i < cfg->n_providers; i++) {
        const struct ebb__config_section *sec = &cfg->providers[i];
        struct ebb__plugin *plugin;
        int rc = ebb__plugin_open(EBB__PLUGIN_PROVIDER, sec->name, &r->path,
                                  &plugin, d);
        if (rc != 0) {
            /* Point at the line in ebb.yaml that asked for the plugin. */
            struct ebb_diag inner = *d;
            ebb_diag_set(d, cfg->file, sec->line, "providers.%s: %s",
                          sec->name, inner.msg);
            return rc;
        }
        char *where = ebb_strfmt("providers.%s", sec->name);
        if (where == NULL) {
            ebb__plugin_close(plugin);
            return EBB_ENOMEM;
        }
        rc = slot_add(&r->providers, &r->n_providers, plugin, sec->node, where, d);
        free(where);
        if (rc != 0)
            return rc;
    }
    return 0;
}

struct policy_list {
    struct ebb__registry *r;
    const struct ebb__config *cfg;
    struct ebb_diag *d;
    int rc;
};

static void on_policy_found(void *arg, const char *name, const char *file)
{
    struct policy_list *pl = arg;
    if (pl->rc != 0)
        return;
    (void)file; /* opened by name so that the name check applies */
    struct ebb__plugin *plugin;
    pl->rc = ebb__plugin_open(EBB__PLUGIN_POLICY, name, &pl->r->path, &plugin,
                              pl->d);
    if (pl->rc != 0)
        return;
    const struct ebb__config_section *sec = ebb__config_policy(pl->cfg, name);
    const struct ebb__ynode *section = sec ? sec->node : NULL;
    char *where = ebb_strfmt("policies.%s", name);
    if (where == NULL) {
        ebb__plugin_close(plugin);
        pl->rc = EBB_ENOMEM;
        return;
    }
    pl->rc = slot_add(&pl->r->policies, &pl->r->n_policies, plugin, section,
                      where, pl->d);
    free(where);
}

static int load_policies(struct ebb__registry *r, const struct ebb__config *cfg,
                         struct ebb_diag *d)
{
    struct policy_list pl = {.r = r, .cfg = cfg, .d = d};
    int rc = ebb__plugin_list(EBB__PLUGIN_POLICY, &r->path, on_policy_found, &pl);
    if (rc == 0)
        rc = pl.rc;
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < cfg->n_policies; i++) {
        const struct ebb__config_section *sec = &cfg->policies[i];
        if (ebb__registry_policy(r, sec->name) == NULL) {
            ebb_diag_set(d, cfg->file, sec->line,
                          "policies.%s: no such policy is installed", sec->name);
            return EBB_ECONFIG;
        }
    }
    if (cfg->default_policy != NULL &&
        ebb__registry_policy(r, cfg->default_policy) == NULL) {
        ebb_diag_set(d, cfg->default_policy_line ? cfg->file : NULL,
                     cfg->default_policy_line, "default_policy: \"%s\" is not "
                     "installed (check plugin_dirs or EBB_PLUGIN_PATH)",
                     cfg->default_policy);
        return EBB_ECONFIG;
    }
    return 0;
}

int ebb__registry_load(struct ebb__registry *r, const struct ebb__config *cfg,
                       struct ebb_diag *d)
{
    *r = (struct ebb__registry){0};
    int rc = ebb__plugin_path_init(&r->path, &cfg->plugin_dirs);
    if (rc == 0)
        rc = load_providers(r, cfg, d);
    if (rc == 0)
        rc = load_policies(r, cfg, d);
    if (rc != 0)
        ebb__registry_free(r);
    return rc;
}

static int slot_start(struct ebb__plugin_slot *slot,
                      const struct ebb__host_env *env, struct ebb_diag *d)
{
    int rc = ebb__host_init(&slot->host, env, slot->plugin->name);
    if (rc != 0)
        return rc;
    slot->host_ready = 1;
    const struct ebb__plugin *p = slot->plugin;
    rc = p->kind == EBB__PLUGIN_PROVIDER
             ? p->provider->create(&slot->host.host, slot->config, &slot->self)
             : p->policy->create(&slot->host.host, slot->config, &slot->self);
    if (rc != 0) {
        slot->self = NULL;
        ebb_diag_set(d, NULL, 0, "%s %s: cannot start: %s",
                      ebb__plugin_kind_dir(p->kind), p->name, ebb_strerror(rc));
    }
    return rc;
}

int ebb__registry_start(struct ebb__registry *r, const struct ebb__host_env *env,
                        struct ebb_diag *d)
{
    for (size_t i = 0; i < r->n_providers; i++) {
        int rc = slot_start(&r->providers[i], env, d);
        if (rc != 0)
            return rc;
    }
    for (size_t i = 0; i < r->n_policies; i++) {
        int rc = slot_start(&r->policies[i], env, d);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static void slots_free(struct ebb__plugin_slot *slots, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct ebb__plugin_slot *s = &slots[i];
        const struct ebb__plugin *p = s->plugin;
        if (s->self != NULL) {
            if (p->kind == EBB__PLUGIN_PROVIDER)
                p->provider->destroy(s->self);
            else
                p->policy->destroy(s->self);
        }
        if (s->host_ready)
            ebb__host_fini(&s->host);
        ebb__cfg_free(ebb__plugin_config_keys(p), s->config);
        ebb__plugin_close(s->plugin);
    }
    free(slots);
}

void ebb__registry_free(struct ebb__registry *r)
{
    slots_free(r->providers, r->n_providers);
    slots_free(r->policies, r->n_policies);
    ebb__plugin_path_free(&r->path);
    *r = (struct ebb__registry){0};
}

static struct ebb__plugin_slot *find(struct ebb__plugin_slot *slots, size_t n,
                                     const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(slots[i].plugin->name, name) == 0)
            return &slots[i];
    return NULL;
}

struct ebb__plugin_slot *ebb__registry_provider(struct ebb__registry *r,
                                                const char *name)
{
    return find(r->providers, r->n_providers, name);
}

struct ebb__plugin_slot *ebb__registry_policy(struct ebb__registry *r,
                                              const char *name)
{
    return find(r->policies, r->n_policies, name);
}
