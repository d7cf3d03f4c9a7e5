/* The warning a spot job gets at submit when a preemption would take its
 * checkpoints with the instance: it has no checkpoint store, and one of
 * the providers it may run on keeps nothing of an instance once it ends
 * (aws, alibaba and vastai instances' disks, and local instances' with
 * `disk: private`, the default, where a job that names no checkpoint.dir
 * checkpoints on the instance's disk). Such a job is accepted: the
 * warning says what each preemption will cost it. A market run_on
 * another provider is judged by the one its instances run on. */
#include <stdlib.h>
#include <string.h>

#include "base/str.h"
#include "daemon/daemon.h"

/* Whether the instances of provider section `s` lose their disk, and the
 * checkpoints of `spec` on it, when they end. A local instance's private
 * disk holds them only when the spec names no directory of this machine. */
static int disk_dies(const struct ebb__config_section *s, const struct ebb__job_spec *spec)
{
    static const char *const cloud[] = {"aws", "alibaba", "vastai"};
    for (size_t i = 0; i < sizeof(cloud) / sizeof(cloud[0]); i++)
        if (strcmp(s->name, cloud[i]) == 0)
            return 1;
    if (strcmp(s->name, "local") != 0 || spec->checkpoint.dir != NULL)
        return 0;
    const struct ebb__ynode *disk = s->node != NULL ? ebb__ymap_get(s->node, "disk") : NULL;
    return disk == NULL || disk->kind != EBB__YSCALAR || strcmp(disk->value, "shared") != 0;
}

/* Where the instances of market `name` run: its run_on runner, or itself. */
static const struct ebb__config_section *runs_on(const struct ebb__config *cfg,
                                                 const struct ebb__config_section *m)
{
    for (size_t i = 0; i < cfg->n_run_on; i++)
        if (strcmp(cfg->run_on[i].market, m->name) == 0)
            return ebb__config_provider(cfg, cfg->run_on[i].runner);
    return m;
}

static int allowed(const struct ebb__job_spec *spec, const char *provider)
{
    const struct ebb_string_list *p = &spec->resources.providers;
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->items[i], provider) == 0)
            return 1;
    return p->n == 0;
}

int ebb__daemon_spot_warning(struct ebb__daemon *d, const struct ebb__job_spec *spec,
                             json_t *warnings)
{
    if (spec->market == EBB_JOB_ON_DEMAND || spec->checkpoint.store != NULL)
        return 0;
    const struct ebb__config *cfg = d->config;
    const struct ebb__config_section *loses = NULL;
    for (size_t i = 0; i < cfg->n_providers && loses == NULL; i++) {
        const struct ebb__config_section *m = &cfg->providers[i];
        const struct ebb__config_section *r = runs_on(cfg, m);
        if (allowed(spec, m->name) && r != NULL && disk_dies(r, spec))
            loses = r;
    }
    if (loses == NULL)
        return 0;
    char *w = ebb_strfmt("%s: a spot job without a checkpoint store: on %s its "
                         "checkpoints stay on the instance's disk, which a preemption "
                         "takes with the instance, so every preemption costs it all "
                         "the work done since it started (name a store in "
                         "checkpoint.store to resume where it stopped)",
                         spec->file, loses->name);
    int rc = w != NULL && json_array_append_new(warnings, json_string(w)) == 0 ? 0
                                                                             : EBB_ENOMEM;
    free(w);
    return rc;
}
