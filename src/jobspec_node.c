/* Readers of single YAML values for the job spec and workload loaders
 * (jobspec.c, jobspec_workload.c): each checks one node and reports a
 * problem as "file:line: what: ..." at that node. Values go through the
 * same parser as ebb.yaml (ebb__cfg_parse_value), so "8" is rejected as a
 * duration with the same words in both files. config.c has helpers like
 * these, but they are static there. */
#include "jobspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_table.h"
#include "units.h"

int ebb__jy_nomem(struct ebb__diag *d)
{
    ebb__diag_set(d, NULL, 0, "out of memory");
    return EBB_ENOMEM;
}

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

int ebb__jy_is_key(const struct ebb__ynode *key, const char *name)
{
    return strlen(name) == key->len && memcmp(name, key->value, key->len) == 0;
}

/* Rejects a key of `map` that is not in `keys`, listing the known ones:
 * job.yaml:7: job: unknown key "deadine" (known: name, run, ...) */
int ebb__jy_check_keys(const struct ebb__ynode *map, const char *const *keys,
                       const char *where, struct ebb__diag *d)
{
    for (size_t i = 0; map != NULL && i < map->n; i++) {
        const struct ebb__ynode *key = map->keys[i];
        int found = 0;
        for (size_t k = 0; !found && keys[k] != NULL; k++)
            found = ebb__jy_is_key(key, keys[k]);
        if (found)
            continue;
        char known[400];
        size_t at = 0;
        known[0] = '\0';
        for (size_t k = 0; keys[k] != NULL; k++) {
            int n = snprintf(known + at, sizeof(known) - at, "%s%s",
                             k > 0 ? ", " : "", keys[k]);
            if (n < 0 || (size_t)n >= sizeof(known) - at)
                break;
            at += (size_t)n;
        }
        char q[EBB__DIAG_QUOTE_SIZE];
        ebb__diag_quote(key->value, key->len, q, sizeof(q));
        ebb__diag_set(d, key->file, key->line, "%s: unknown key %s (known: %s)",
                      where, q, known);
        return EBB_ECONFIG;
    }
    return 0;
}

int ebb__jy_expect_map(const struct ebb__ynode *n, const char *what,
                       struct ebb__diag *d)
{
    if (n->kind == EBB__YMAP)
        return 0;
    ebb__diag_set(d, n->file, n->line, "%s: expected a mapping, not %s", what,
                  ebb__ykind_name(n->kind));
    return EBB_ECONFIG;
}

/* The layer of the mapping under `key` in both of l's mappings, each
 * checked against `keys`. */
int ebb__jy_sub(const struct ebb__jy_layer *l, const char *key,
                const char *const *keys, const char *what,
                struct ebb__jy_layer *out, struct ebb__diag *d)
{
    const struct ebb__ynode *own = ebb__ymap_get(l->own, key);
    const struct ebb__ynode *dflt = ebb__ymap_get(l->dflt, key);
    out->own = ebb__ynode_is_null(own) ? NULL : own;
    out->dflt = ebb__ynode_is_null(dflt) ? NULL : dflt;
    int rc = 0;
    if (out->dflt != NULL) {
        rc = ebb__jy_expect_map(out->dflt, what, d);
        if (rc == 0 && keys != NULL)
            rc = ebb__jy_check_keys(out->dflt, keys, what, d);
    }
    if (rc == 0 && out->own != NULL) {
        rc = ebb__jy_expect_map(out->own, what, d);
        if (rc == 0 && keys != NULL)
            rc = ebb__jy_check_keys(out->own, keys, what, d);
    }
    return rc;
}

/* "what: "x" is not <a_what> (<why>; example: <example>)". */
int ebb__jy_not_a(const struct ebb__ynode *n, const char *what,
                  const char *a_what, const char *why, const char *example,
                  struct ebb__diag *d)
{
    char q[EBB__DIAG_QUOTE_SIZE];
    ebb__diag_quote(n->value, n->len, q, sizeof(q));
    ebb__diag_set(d, n->file, n->line, "%s: %s is not %s (%s%sexample: %s)",
                  what, q, a_what, why != NULL ? why : "",
                  why != NULL ? "; " : "", example);
    return EBB_ECONFIG;
}

/* A scalar without NUL bytes, so that its value is a C string. */
int ebb__jy_scalar(const struct ebb__ynode *n, const char *what,
                   const char *expected, struct ebb__diag *d)
{
    if (n->kind == EBB__YSCALAR && strlen(n->value) == n->len)
        return 0;
    if (n->kind == EBB__YSCALAR)
        ebb__diag_set(d, n->file, n->line, "%s: contains a NUL character",
                      what);
    else
        ebb__diag_set(d, n->file, n->line, "%s: expected %s, not %s", what,
                      expected, ebb__ykind_name(n->kind));
    return EBB_ECONFIG;
}

/* A non-empty string. */
int ebb__jy_text(const struct ebb__ynode *n, const char *what,
                 const char *example, char **out, struct ebb__diag *d)
{
    int rc = ebb__cfg_parse_value(EBB_CFG_STRING, n, what, out, d);
    if (rc == 0 && (*out)[0] == '\0') {
        free(*out);
        *out = NULL;
        ebb__diag_set(d, n->file, n->line, "%s: empty (example: %s)", what,
                      example);
        rc = EBB_ECONFIG;
    }
    return rc;
}

/* A list of non-empty strings. */
int ebb__jy_list(const struct ebb__ynode *n, const char *what,
                 struct ebb_string_list *out, struct ebb__diag *d)
{
    int rc = ebb__cfg_parse_value(EBB_CFG_STRING_LIST, n, what, out, d);
    for (size_t i = 0; rc == 0 && i < out->n; i++) {
        if (out->items[i][0] == '\0') {
            const struct ebb__ynode *item = n->items[i];
            ebb__diag_set(d, item->file, item->line, "%s[%zu]: empty", what, i);
            rc = EBB_ECONFIG;
        }
    }
    if (rc != 0)
        ebb__string_list_free(out);
    return rc;
}

int ebb__jy_int(const struct ebb__ynode *n, const char *what, int64_t lo,
                int64_t hi, int *out, struct ebb__diag *d)
{
    int64_t v;
    int rc = ebb__cfg_parse_value(EBB_CFG_INT, n, what, &v, d);
    if (rc != 0)
        return rc;
    if (v < lo || v > hi) {
        ebb__diag_set(d, n->file, n->line,
                      "%s: %s must be between %lld and %lld", what, n->value,
                      (long long)lo, (long long)hi);
        return EBB_ECONFIG;
    }
    *out = (int)v;
    return 0;
}

/* Names of plugins and teams: the characters ebb.yaml allows for them. */
int ebb__jy_ident(const struct ebb__ynode *n, const char *what,
                  const char *example, char **out, struct ebb__diag *d)
{
    int rc = ebb__jy_text(n, what, example, out, d);
    if (rc != 0)
        return rc;
    if (ebb__job_ident_valid(*out))
        return 0;
    free(*out);
    *out = NULL;
    char q[EBB__DIAG_QUOTE_SIZE];
    ebb__diag_set(d, n->file, n->line,
                  "%s: %s is not a valid name (1 to 64 letters, digits, - "
                  "and _; example: %s)",
                  what, ebb__diag_quote(n->value, n->len, q, sizeof(q)),
                  example);
    return EBB_ECONFIG;
}

int ebb__jy_time(const struct ebb__ynode *n, const char *what, ebb_time_ms *out,
                 struct ebb__diag *d)
{
    int rc = ebb__jy_scalar(n, what, "a time", d);
    if (rc != 0)
        return rc;
    const char *why;
    if (ebb__parse_time_why(n->value, out, &why) != 0)
        return ebb__jy_not_a(n, what, "a time", why, "2020-01-06T09:00:00Z", d);
    return 0;
}
