/* Applies a plugin's configuration table (include/ebb/config.h) to its
 * section of ebb.yaml.
 *
 * Defaults are YAML text ("5m", "[us-east-1]") read by the same code as the
 * user's values, so a default can never mean something a user could not
 * write. Messages name the section and key and show an example:
 *   ebb.yaml:14: providers.aws: unknown key "regoins" (known: regions, ...)
 *   ebb.yaml:16: providers.aws.budget: "forty" is not an amount
 *       (example: 40 USD)
 */
#ifndef EBB_CFG_TABLE_H
#define EBB_CFG_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include <ebb/config.h>
#include <ebb/diag.h>

#include "base/yaml_doc.h"

/* Allocates `config_size` zeroed bytes, stores each key's default, then
 * each value in `section` (a mapping; NULL or a null value means "all
 * defaults"), at the key's offset. A null value for a key (`key:` or
 * `key: ~`) keeps its default. `where` names the section in messages
 * ("providers.aws"); it may be NULL for a top-level table.
 * On success *out owns the struct (free it with ebb__cfg_free()) and
 * returns 0. Returns EBB_ECONFIG with d set for bad input (unknown key,
 * wrong type, a table whose default does not parse or whose offset lies
 * outside config_size), EBB_ENOMEM; *out is then NULL and nothing leaks. */
int ebb__cfg_apply(const struct ebb_cfg_key *table, size_t config_size,
                   const struct ebb__ynode *section, const char *where,
                   void **out, struct ebb_diag *d);

/* Frees the strings and string lists that ebb__cfg_apply() stored in
 * `config`, then `config` itself. `table` must be the one it was built
 * with. NULL config is allowed. */
void ebb__cfg_free(const struct ebb_cfg_key *table, void *config);

/* Parses one value of `type` from `node` into `dst` (a field of the type's
 * C type, see include/ebb/config.h; strings and lists are newly allocated
 * and replace nothing: free the old value first). `what` names the value
 * in messages ("providers.aws.poll_interval"). Returns 0, EBB_ECONFIG with
 * d set to "file:line: what: ..." or EBB_ENOMEM. */
int ebb__cfg_parse_value(enum ebb_cfg_type type, const struct ebb__ynode *node,
                         const char *what, void *dst, struct ebb_diag *d);

/* The range a number or duration of a table must lie in, inclusive: an
 * EBB_CFG_INT, EBB_CFG_DOUBLE or EBB_CFG_DURATION (in milliseconds) key.
 * `off` also allows 0, meaning "none" (checkpoint.every: 0). Ranges are
 * the core's own (a plugin checks its ranges in create()); a table of
 * them ends with a NULL key. */
struct ebb__cfg_range {
    const char *key;
    double min, max;
    bool off;
};
#define EBB__CFG_RANGE_END { NULL, 0, 0, false }

/* Writes a range for users into buf: "from 1s to 10m" for a duration,
 * "from 0 to 10" for a number, with "0 (none), or " in front when 0 is
 * allowed as off. Returns buf. */
const char *ebb__cfg_range_format(enum ebb_cfg_type type,
                                  const struct ebb__cfg_range *r, char *buf,
                                  size_t size);

/* Checks `value` (a field of the type's C type) against range `r`; on a
 * value outside it sets d to "what: VALUE is outside the allowed range
 * (RANGE)" at `node`'s line (file `file`, line 0 when node is NULL) and
 * returns EBB_ECONFIG, else returns 0. */
int ebb__cfg_check_range(enum ebb_cfg_type type, const void *value,
                         const struct ebb__cfg_range *r, const char *what,
                         const struct ebb__ynode *node, const char *file,
                         struct ebb_diag *d);

/* Checks each key of `ranges` in `config` (a struct ebb__cfg_apply() built
 * from `table` and `section`): the first value outside its range sets d,
 * at the key's line in `section`, or line 0 of `file` for a default, and
 * returns EBB_ECONFIG. `where` prefixes key names as in ebb__cfg_apply().
 * A key of `ranges` that `table` lacks, or of another type, is a bad table
 * (EBB_ECONFIG with d set). */
int ebb__cfg_check_ranges(const struct ebb_cfg_key *table,
                          const struct ebb__cfg_range *ranges,
                          const void *config, const struct ebb__ynode *section,
                          const char *file, const char *where,
                          struct ebb_diag *d);

/* Frees a value ebb__cfg_parse_value() stored at `dst` (strings and string
 * lists; other types own nothing) and zeroes it. */
void ebb__cfg_free_value(enum ebb_cfg_type type, void *dst);

/* Frees the items of a string list and empties it. */
void ebb__string_list_free(struct ebb_string_list *list);

/* A type's name for users: "string", "integer", "number", "boolean",
 * "duration", "amount", "string list". */
const char *ebb__cfg_type_name(enum ebb_cfg_type type);

/* An example of a valid value of the type, as written in YAML: "90s, 5m,
 * 1h30m" for a duration, "40 USD" for an amount. */
const char *ebb__cfg_type_example(enum ebb_cfg_type type);

#endif
