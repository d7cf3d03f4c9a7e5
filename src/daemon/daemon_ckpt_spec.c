/* The submit checks of a job spec's checkpoint keys (daemon_ckpt.h): a
 * store ebb.yaml has, and `encrypt: false` only where no marketplace host
 * may run the job. Apart from the rest of ebbd so that a unit test can
 * give it a configuration and providers of its own. */
#include <stdio.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/daemon_ckpt.h"

/* Marketplace hosts belong to people the user does not know. */
static int is_marketplace(const char *provider)
{
    return strcmp(provider, "vastai") == 0;
}

int ebb__daemon_ckpt_spec_check(const struct ebb__daemon *d,
                                const struct ebb__job_spec *spec, char *why,
                                size_t len)
{
    const struct ebb__job_checkpoint *cp = &spec->checkpoint;
    const char *file = spec->file ? spec->file : "job spec";
    if (cp->store != NULL && ebb__config_store(d->config, cp->store) == NULL) {
        size_t used = (size_t)snprintf(why, len, "%s:%d: checkpoint.store: no store "
                                       "named \"%s\" in ebb.yaml (", file,
                                       cp->store_line, cp->store);
        for (size_t i = 0; i < d->config->n_stores && used < len; i++)
            used += (size_t)snprintf(why + used, len - used, "%s%s", i ? ", " : "",
                                     d->config->stores[i].name);
        if (used < len)
            snprintf(why + used, len - used, "%s)", d->config->n_stores == 0
                     ? "it has no stores: section" : "");
        return EBB_EINVAL;
    }
    if (cp->store == NULL || cp->encrypt)
        return 0;
    const struct ebb_string_list *named = &spec->resources.providers;
    for (size_t i = 0; i < d->registry.n_providers; i++) {
        const char *p = d->registry.providers[i].plugin->name;
        int allowed = named->n == 0;
        for (size_t k = 0; k < named->n && !allowed; k++)
            allowed = strcmp(named->items[k], p) == 0;
        if (allowed && is_marketplace(p)) {
            snprintf(why, len, "%s:%d: checkpoint.encrypt: false is refused: provider "
                     "%s may run this job, on a marketplace host whose owner could "
                     "read its checkpoints (remove encrypt: false, or leave %s out "
                     "of resources.providers)", file,
                     cp->encrypt_line ? cp->encrypt_line : cp->store_line, p, p);
            return EBB_EINVAL;
        }
    }
    return 0;
}
