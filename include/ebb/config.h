/* ebb — plugin configuration tables.
 *
 * A plugin describes its configuration keys as a table (fluent-bit style).
 * The core parses the plugin's section of ebb.yaml against that table: it
 * applies defaults, rejects unknown keys and wrong types with file:line
 * messages, and stores each value at `offset` inside a struct of
 * `config_size` bytes that it then lends to the plugin's create(). The same
 * table feeds `ebb providers describe NAME`.
 */
#ifndef EBB_CONFIG_H
#define EBB_CONFIG_H

#include <stddef.h>

#include "common.h"

/* An EBB_CFG_INT or EBB_CFG_DOUBLE value is refused, with the reason,
 * unless it lies within -EBB_CFG_NUMBER_MAX to EBB_CFG_NUMBER_MAX (a
 * billion): a count, a limit or a seed fits an int, and any product of two
 * such values fits int64. A plugin checks its own narrower ranges. */
#define EBB_CFG_NUMBER_MAX 1000000000

enum ebb_cfg_type {
    EBB_CFG_STRING,      /* char *            ("" allowed; NULL when no default) */
    EBB_CFG_INT,         /* int64_t, within +-EBB_CFG_NUMBER_MAX */
    EBB_CFG_DOUBLE,      /* double, within +-EBB_CFG_NUMBER_MAX */
    EBB_CFG_BOOL,        /* int, 0 or 1 */
    EBB_CFG_DURATION,    /* ebb_dur_ms, written "90s", "5m", "1h30m" */
    EBB_CFG_MONEY,       /* struct ebb_money, written "40 USD"; at most
                          * EBB_MONEY_MAX (units.h) */
    EBB_CFG_STRING_LIST, /* struct ebb_string_list, a YAML sequence */
};

/* A list of strings owned by the core; valid until the plugin is destroyed. */
struct ebb_string_list {
    size_t n;
    char **items;
};

struct ebb_cfg_key {
    const char *key;           /* YAML key, e.g. "poll_interval" */
    enum ebb_cfg_type type;
    const char *default_value; /* in YAML syntax, NULL: no default (unset) */
    size_t offset;             /* offsetof(struct your_cfg, field) */
    const char *help;          /* one line, shown by `ebb providers describe` */
};

/* Tables end with an entry whose key is NULL. */
#define EBB_CFG_END { NULL, EBB_CFG_STRING, NULL, 0, NULL }

#endif
