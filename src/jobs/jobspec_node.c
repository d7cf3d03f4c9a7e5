/* Readers of YAML values that know about jobs, for the job spec and
 * workload loaders (jobspec.c, jobspec_workload.c): a job's mapping seen
 * over the workload's defaults, names and times. Each reports a problem as
 * "file:line: what: ..." at the node. The readers that know nothing of
 * jobs are in yaml_read.c, shared with ebb.yaml (config.c). */
#include "jobs/jobspec.h"

#include <stdlib.h>

#include <ebb/units.h>

/* The value of `key`: the job's own unless absent or null, else the
 * default's unless absent or null, else NULL. */
const struct ebb__ynode *ebb__jy_get(const struct ebb__jy_layer *l,
                                     const char *key)
{
    const struct ebb__ynode *v = ebb__ymap_get(l->own, key);
    if (!ebb__ynode_is_null(v))
        return v;
    v = ebb__ymap_get(l->dflt, key);
    return ebb__ynode_is_null(v) ? NULL : v;
}

/* One of the layer's mappings, if present: a mapping holding only `keys`
 * (any keys when `keys` is NULL). */
static int check_map(const struct ebb__ynode *map, const char *const *keys,
                     const char *what, struct ebb_diag *d)
{
    if (map == NULL)
        return 0;
    int rc = ebb__yread_expect_map(map, what, d);
    if (rc == 0 && keys != NULL)
        rc = ebb__yread_check_keys(map, keys, what, d);
    return rc;
}

/* The layer of the mapping under `key` in both of l's mappings, each
 * checked against `keys`, the defaults' first. */
int ebb__jy_sub(const struct ebb__jy_layer *l, const char *key,
                const char *const *keys, const char *what,
                struct ebb__jy_layer *out, struct ebb_diag *d)
{
    const struct ebb__ynode *own = ebb__ymap_get(l->own, key);
    const struct ebb__ynode *dflt = ebb__ymap_get(l->dflt, key);
    out->own = ebb__ynode_is_null(own) ? NULL : own;
    out->dflt = ebb__ynode_is_null(dflt) ? NULL : dflt;
    int rc = check_map(out->dflt, keys, what, d);
    if (rc == 0)
        rc = check_map(out->own, keys, what, d);
    return rc;
}

/* Names of plugins and teams: the characters ebb.yaml allows for them. */
int ebb__jy_ident(const struct ebb__ynode *n, const char *what,
                  const char *example, char **out, struct ebb_diag *d)
{
    int rc = ebb__yread_text(n, what, example, out, d);
    if (rc != 0)
        return rc;
    if (ebb__job_ident_valid(*out))
        return 0;
    free(*out);
    *out = NULL;
    char q[EBB_DIAG_QUOTE_SIZE];
    ebb_diag_set(d, n->file, n->line,
                  "%s: %s is not a valid name (1 to 64 letters, digits, - "
                  "and _; example: %s)",
                  what, ebb__yread_quote(n, q, sizeof(q)), example);
    return EBB_ECONFIG;
}

int ebb__jy_time(const struct ebb__ynode *n, const char *what, ebb_time_ms *out,
                 struct ebb_diag *d)
{
    int rc = ebb__yread_scalar(n, what, "a time", d);
    if (rc != 0)
        return rc;
    const char *why;
    if (ebb_parse_time_why(n->value, out, &why) != 0)
        return ebb__yread_not_a(n, what, "a time", why,
                                "2020-01-06T09:00:00Z", d);
    return 0;
}
