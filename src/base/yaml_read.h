/* Readers of single YAML values, shared by ebb.yaml (config.c) and job
 * specs and workloads (jobspec*.c), so that both files word a problem the
 * same way.
 *
 * Each checks one node and, on a problem, sets d to "file:line: what: ..."
 * at that node and returns EBB_ECONFIG (EBB_ENOMEM when out of memory).
 * Strings and lists they store are newly allocated; the caller frees them.
 */
#ifndef EBB_YAML_READ_H
#define EBB_YAML_READ_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/config.h>
#include <ebb/diag.h>

#include "base/yaml_doc.h"

/* Sets d to "out of memory"; returns EBB_ENOMEM. */
int ebb__yread_nomem(struct ebb_diag *d);

/* The scalar n quoted for a message (see ebb_diag_quote()); returns buf. */
const char *ebb__yread_quote(const struct ebb__ynode *n, char *buf,
                             size_t size);

/* 1 when the scalar `key` is exactly `name`. */
int ebb__yread_is_key(const struct ebb__ynode *key, const char *name);

/* Rejects the first key of `map` (may be NULL) that is not in `keys`
 * (NULL-terminated): "where: unknown key "x" (known: a, b)", or without
 * the "where: " when `where` is NULL. */
int ebb__yread_check_keys(const struct ebb__ynode *map,
                          const char *const *keys, const char *where,
                          struct ebb_diag *d);

/* Requires a mapping: "what: expected a mapping, not a list". */
int ebb__yread_expect_map(const struct ebb__ynode *n, const char *what,
                          struct ebb_diag *d);

/* Reports "what: "x" is not <a_what> (<why>; example: <example>)"; `why`
 * may be NULL. Always returns EBB_ECONFIG. */
int ebb__yread_not_a(const struct ebb__ynode *n, const char *what,
                     const char *a_what, const char *why, const char *example,
                     struct ebb_diag *d);

/* Requires a scalar without NUL bytes ("expected <expected>, not ..."), so
 * that its value is a C string. */
int ebb__yread_scalar(const struct ebb__ynode *n, const char *what,
                      const char *expected, struct ebb_diag *d);

/* A non-empty string into *out ("what: empty (example: <example>)"). */
int ebb__yread_text(const struct ebb__ynode *n, const char *what,
                    const char *example, char **out, struct ebb_diag *d);

/* A list of non-empty strings into *out (left empty on failure). */
int ebb__yread_list(const struct ebb__ynode *n, const char *what,
                    struct ebb_string_list *out, struct ebb_diag *d);

/* An integer from lo to hi into *out. */
int ebb__yread_int(const struct ebb__ynode *n, const char *what, int64_t lo,
                   int64_t hi, int *out, struct ebb_diag *d);

/* 1 when the `len` bytes at `s` are a name ebb accepts for plugins, teams
 * and policies: 1 to 64 letters, digits, - and _. Names become store
 * identifiers, file names and CLI arguments, so they stay plain. */
int ebb__yread_name_valid(const char *s, size_t len);

#endif
