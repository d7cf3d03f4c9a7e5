/* Readers of single YAML values (see yaml_read.h). Values go through the
 * same parser as plugin tables (ebb__cfg_parse_value), so "8" is rejected
 * as a duration with the same words in ebb.yaml and in a job spec. */
#include "base/yaml_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cfg_table.h"

int ebb__yread_nomem(struct ebb_diag *d)
{
    ebb_diag_set(d, NULL, 0, "out of memory");
    return EBB_ENOMEM;
}

const char *ebb__yread_quote(const struct ebb__ynode *n, char *buf,
                             size_t size)
{
    return ebb_diag_quote(n->value, n->len, buf, size);
}

int ebb__yread_is_key(const struct ebb__ynode *key, const char *name)
{
    return strlen(name) == key->len && memcmp(name, key->value, key->len) == 0;
}

/* job.yaml:7: job: unknown key "deadine" (known: name, run, ...) */
static int unknown_key(const struct ebb__ynode *key, const char *const *keys,
                       const char *where, struct ebb_diag *d)
{
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
    char q[EBB_DIAG_QUOTE_SIZE];
    ebb_diag_set(d, key->file, key->line, "%s%sunknown key %s (known: %s)",
                  where != NULL ? where : "", where != NULL ? ": " : "",
                  ebb__yread_quote(key, q, sizeof(q)), known);
    return EBB_ECONFIG;
}

int ebb__yread_check_keys(const struct ebb__ynode *map,
                          const char *const *keys, const char *where,
                          struct ebb_diag *d)
{
    for (size_t i = 0; map != NULL && i < map->n; i++) {
        int found = 0;
        for (size_t k = 0; !found && keys[k] != NULL; k++)
            found = ebb__yread_is_key(map->keys[i], keys[k]);
        if (!found)
            return unknown_key(map->keys[i], keys, where, d);
    }
    return 0;
}

int ebb__yread_expect_map(const struct ebb__ynode *n, const char *what,
                          struct ebb_diag *d)
{
    if (n->kind == EBB__YMAP)
        return 0;
    ebb_diag_set(d, n->file, n->line, "%s: expected a mapping, not %s", what,
                  ebb__ykind_name(n->kind));
    return EBB_ECONFIG;
}

int ebb__yread_not_a(const struct ebb__ynode *n, const char *what,
                     const char *a_what, const char *why, const char *example,
                     struct ebb_diag *d)
{
    char q[EBB_DIAG_QUOTE_SIZE];
    ebb_diag_set(d, n->file, n->line, "%s: %s is not %s (%s%sexample: %s)",
                  what, ebb__yread_quote(n, q, sizeof(q)), a_what,
                  why != NULL ? why : "", why != NULL ? "; " : "", example);
    return EBB_ECONFIG;
}

int ebb__yread_scalar(const struct ebb__ynode *n, const char *what,
                      const char *expected, struct ebb_diag *d)
{
    if (n->kind == EBB__YSCALAR && strlen(n->value) == n->len)
        return 0;
    if (n->kind == EBB__YSCALAR)
        ebb_diag_set(d, n->file, n->line, "%s: contains a NUL character",
                      what);
    else
        ebb_diag_set(d, n->file, n->line, "%s: expected %s, not %s", what,
                      expected, ebb__ykind_name(n->kind));
    return EBB_ECONFIG;
}

int ebb__yread_text(const struct ebb__ynode *n, const char *what,
                    const char *example, char **out, struct ebb_diag *d)
{
    int rc = ebb__cfg_parse_value(EBB_CFG_STRING, n, what, out, d);
    if (rc == 0 && (*out)[0] == '\0') {
        free(*out);
        *out = NULL;
        ebb_diag_set(d, n->file, n->line, "%s: empty (example: %s)", what,
                      example);
        rc = EBB_ECONFIG;
    }
    return rc;
}

int ebb__yread_list(const struct ebb__ynode *n, const char *what,
                    struct ebb_string_list *out, struct ebb_diag *d)
{
    int rc = ebb__cfg_parse_value(EBB_CFG_STRING_LIST, n, what, out, d);
    for (size_t i = 0; rc == 0 && i < out->n; i++) {
        if (out->items[i][0] == '\0') {
            const struct ebb__ynode *item = n->items[i];
            ebb_diag_set(d, item->file, item->line, "%s[%zu]: empty", what, i);
            rc = EBB_ECONFIG;
        }
    }
    if (rc != 0)
        ebb__string_list_free(out);
    return rc;
}

int ebb__yread_int(const struct ebb__ynode *n, const char *what, int64_t lo,
                   int64_t hi, int *out, struct ebb_diag *d)
{
    int64_t v;
    int rc = ebb__cfg_parse_value(EBB_CFG_INT, n, what, &v, d);
    if (rc != 0)
        return rc;
    if (v < lo || v > hi) {
        ebb_diag_set(d, n->file, n->line,
                      "%s: %s must be between %lld and %lld", what, n->value,
                      (long long)lo, (long long)hi);
        return EBB_ECONFIG;
    }
    *out = (int)v;
    return 0;
}

int ebb__yread_name_valid(const char *s, size_t len)
{
    if (len == 0 || len > 64)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return 0;
    }
    return 1;
}
