#include "base/cfg_table.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

static const struct {
    const char *name;
    const char *a_name; /* with its article, for "is not a ..." */
    const char *example;
    size_t size;
} types[] = {
    [EBB_CFG_STRING] = {"string", "a string", "\"some text\"", sizeof(char *)},
    [EBB_CFG_INT] = {"integer", "an integer", "42", sizeof(int64_t)},
    [EBB_CFG_DOUBLE] = {"number", "a number", "0.5", sizeof(double)},
    [EBB_CFG_BOOL] = {"boolean", "a boolean", "true or false", sizeof(int)},
    [EBB_CFG_DURATION] = {"duration", "a duration", "90s, 5m, 1h30m",
                          sizeof(ebb_dur_ms)},
    [EBB_CFG_MONEY] = {"amount", "an amount", "40 USD",
                       sizeof(struct ebb_money)},
    [EBB_CFG_STRING_LIST] = {"string list", "a string list", "[a, b]",
                             sizeof(struct ebb_string_list)},
};
#define N_TYPES (sizeof(types) / sizeof(types[0]))

static int known_type(enum ebb_cfg_type type)
{
    return (unsigned)type < N_TYPES;
}

const char *ebb__cfg_type_name(enum ebb_cfg_type type)
{
    return known_type(type) ? types[type].name : "unknown type";
}

const char *ebb__cfg_type_example(enum ebb_cfg_type type)
{
    return known_type(type) ? types[type].example : "";
}

void ebb__string_list_free(struct ebb_string_list *list)
{
    for (size_t i = 0; i < list->n; i++)
        free(list->items[i]);
    free(list->items);
    list->items = NULL;
    list->n = 0;
}

void ebb__cfg_free_value(enum ebb_cfg_type type, void *dst)
{
    if (type == EBB_CFG_STRING) {
        char *s;
        memcpy(&s, dst, sizeof(s));
        free(s);
        s = NULL;
        memcpy(dst, &s, sizeof(s));
    } else if (type == EBB_CFG_STRING_LIST) {
        struct ebb_string_list list;
        memcpy(&list, dst, sizeof(list));
        ebb__string_list_free(&list);
        memcpy(dst, &list, sizeof(list));
    }
}

/* "what: "forty" is not an amount (example: 40 USD)", with the parser's
 * reason before the example when it has one. */
static int not_a(const struct ebb__ynode *node, const char *what,
                 enum ebb_cfg_type type, const char *why,
                 struct ebb_diag *d)
{
    char q[EBB_DIAG_QUOTE_SIZE];
    ebb_diag_quote(node->value, node->len, q, sizeof(q));
    ebb_diag_set(d, node->file, node->line, "%s: %s is not %s (%s%sexample: %s)",
                  what, q, types[type].a_name, why != NULL ? why : "",
                  why != NULL ? "; " : "", types[type].example);
    return EBB_ECONFIG;
}

static int wrong_kind(const struct ebb__ynode *node, const char *what,
                      enum ebb_cfg_type type, struct ebb_diag *d)
{
    ebb_diag_set(d, node->file, node->line,
                  "%s: expected %s, not %s (example: %s)", what,
                  types[type].a_name, ebb__ykind_name(node->kind),
                  types[type].example);
    return EBB_ECONFIG;
}

static int nomem(const struct ebb__ynode *node, struct ebb_diag *d)
{
    ebb_diag_set(d, node->file, 0, "out of memory");
    return EBB_ENOMEM;
}

/* The reason for a number beyond EBB_CFG_NUMBER_MAX either way. */
#define OUTSIDE "outside -1000000000 to 1000000000"

static int parse_int(const char *s, int64_t *out, const char **why)
{
    const char *p = s;
    int neg = 0;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    } else if (p[0] == '0' && p[1] == 'o') {
        base = 8;
        p += 2;
    }
    /* strtoull would skip spaces and accept its own sign; insist on a
     * digit first so " 5" and "0x-5" are rejected. */
    int digit_first = (*p >= '0' && *p <= '9') ||
                      (base == 16 && ((*p >= 'a' && *p <= 'f') ||
                                      (*p >= 'A' && *p <= 'F')));
    if (!digit_first)
        return EBB_EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(p, &end, base);
    if (*end != '\0')
        return EBB_EINVAL;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (errno == ERANGE || v > limit) {
        *why = "out of range";
        return EBB_EINVAL;
    }
    *out = neg ? (int64_t)(0 - (uint64_t)v) : (int64_t)v;
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No",
                                     "NO",    "off",   "Off",   "OFF"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return EBB_EINVAL;
}

static int parse_list(const struct ebb__ynode *node, const char *what,
                      void *dst, struct ebb_diag *d)
{
    struct ebb_string_list list = {0, NULL};
    if (node->n > 0) {
        list.items = calloc(node->n, sizeof(*list.items));
        if (list.items == NULL)
            return nomem(node, d);
    }
    for (size_t i = 0; i < node->n; i++) {
        const struct ebb__ynode *item = node->items[i];
        char item_what[256];
        snprintf(item_what, sizeof(item_what), "%s[%zu]", what, i);
        int rc = ebb__ynode_is_null(item)
                     ? not_a(item, item_what, EBB_CFG_STRING, "null", d)
                     : ebb__cfg_parse_value(EBB_CFG_STRING, item, item_what,
                                            &list.items[i], d);
        if (rc != 0) {
            list.n = i + 1;
            ebb__string_list_free(&list);
            return rc;
        }
        list.n = i + 1;
    }
    memcpy(dst, &list, sizeof(list));
    return 0;
}

int ebb__cfg_parse_value(enum ebb_cfg_type type, const struct ebb__ynode *node,
                         const char *what, void *dst, struct ebb_diag *d)
{
    if (!known_type(type)) {
        ebb_diag_set(d, node->file, node->line,
                      "%s: unsupported configuration type %d (plugin built "
                      "for a newer ebb?)", what, (int)type);
        return EBB_ECONFIG;
    }
    if (type == EBB_CFG_STRING_LIST) {
        if (node->kind != EBB__YSEQ)
            return wrong_kind(node, what, type, d);
        return parse_list(node, what, dst, d);
    }
    if (node->kind != EBB__YSCALAR)
        return wrong_kind(node, what, type, d);
    /* A "\0" escape would silently cut every C string that follows. */
    if (strlen(node->value) != node->len)
        return not_a(node, what, type, "contains a NUL character", d);

    const char *s = node->value;
    const char *why = NULL;
    switch (type) {
    case EBB_CFG_STRING: {
        char *copy = strdup(s);
        if (copy == NULL)
            return nomem(node, d);
        memcpy(dst, &copy, sizeof(copy));
        return 0;
    }
    case EBB_CFG_INT: {
        int64_t v;
        if (parse_int(s, &v, &why) != 0)
            return not_a(node, what, type, why, d);
        if (v > EBB_CFG_NUMBER_MAX || v < -EBB_CFG_NUMBER_MAX)
            return not_a(node, what, type, OUTSIDE, d);
        memcpy(dst, &v, sizeof(v));
        return 0;
    }
    case EBB_CFG_DOUBLE: {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (*s == '\0' || strchr("+-.0123456789", *s) == NULL ||
            *end != '\0')
            return not_a(node, what, type, NULL, d);
        if (!isfinite(v) || errno == ERANGE)
            return not_a(node, what, type, "out of range", d);
        if (v > EBB_CFG_NUMBER_MAX || v < -EBB_CFG_NUMBER_MAX)
            return not_a(node, what, type, OUTSIDE, d);
        memcpy(dst, &v, sizeof(v));
        return 0;
    }
    case EBB_CFG_BOOL: {
        int v;
        if (parse_bool(s, &v) != 0)
            return not_a(node, what, type, NULL, d);
        memcpy(dst, &v, sizeof(v));
        return 0;
    }
    case EBB_CFG_DURATION: {
        ebb_dur_ms v;
        if (ebb_parse_duration_why(s, &v, &why) != 0)
            return not_a(node, what, type, why, d);
        memcpy(dst, &v, sizeof(v));
        return 0;
    }
    case EBB_CFG_MONEY: {
        struct ebb_money v;
        memset(&v, 0, sizeof(v));
        if (ebb_parse_money_why(s, &v, &why) != 0)
            return not_a(node, what, type, why, d);
        memcpy(dst, &v, sizeof(v));
        return 0;
    }
    case EBB_CFG_STRING_LIST:
        break;
    }
    return EBB_ECONFIG;
}

static void key_what(const char *where, const char *key, char *buf,
                     size_t size)
{
    if (where != NULL && where[0] != '\0')
        snprintf(buf, size, "%s.%s", where, key);
    else
        snprintf(buf, size, "%s", key);
}

static const struct ebb_cfg_key *find_key(const struct ebb_cfg_key *table,
                                          const struct ebb__ynode *key)
{
    for (const struct ebb_cfg_key *k = table; k->key != NULL; k++) {
        if (strlen(k->key) == key->len &&
            memcmp(k->key, key->value, key->len) == 0)
            return k;
    }
    return NULL;
}

static int unknown_key(const struct ebb_cfg_key *table,
                       const struct ebb__ynode *key, const char *where,
                       struct ebb_diag *d)
{
    char known[600];
    size_t at = 0;
    known[0] = '\0';
    for (const struct ebb_cfg_key *k = table; k->key != NULL; k++) {
        int n = snprintf(known + at, sizeof(known) - at, "%s%s",
                         at > 0 ? ", " : "", k->key);
        if (n < 0 || (size_t)n >= sizeof(known) - at)
            break;
        at += (size_t)n;
    }
    char q[EBB_DIAG_QUOTE_SIZE];
    ebb_diag_quote(key->value, key->len, q, sizeof(q));
    if (where != NULL && where[0] != '\0')
        ebb_diag_set(d, key->file, key->line, "%s: unknown key %s (known: %s)",
                      where, q, at > 0 ? known : "none");
    else
        ebb_diag_set(d, key->file, key->line, "unknown key %s (known: %s)", q,
                      at > 0 ? known : "none");
    return EBB_ECONFIG;
}

/* Parses a table default through the YAML loader, exactly like user text.
 * A default that reads as YAML null leaves the field zero, except that ""
 * for a string means the empty string (include/ebb/config.h). */
static int apply_default(const struct ebb_cfg_key *k, const char *what,
                         void *dst, struct ebb_diag *d)
{
    if (k->type == EBB_CFG_STRING && k->default_value[0] == '\0') {
        char *empty = strdup("");
        if (empty == NULL) {
            ebb_diag_set(d, NULL, 0, "out of memory");
            return EBB_ENOMEM;
        }
        memcpy(dst, &empty, sizeof(empty));
        return 0;
    }
    struct ebb__ydoc *doc;
    int rc = ebb__ydoc_load_buffer("built-in default", k->default_value,
                                   strlen(k->default_value), &doc, d);
    if (rc != 0)
        return rc;
    const struct ebb__ynode *root = ebb__ydoc_root(doc);
    if (!ebb__ynode_is_null(root))
        rc = ebb__cfg_parse_value(k->type, root, what, dst, d);
    ebb__ydoc_free(doc);
    return rc;
}

int ebb__cfg_apply(const struct ebb_cfg_key *table, size_t config_size,
                   const struct ebb__ynode *section, const char *where,
                   void **out, struct ebb_diag *d)
{
    *out = NULL;
    char what[256];
    if (ebb__ynode_is_null(section)) {
        section = NULL;
    } else if (section->kind != EBB__YMAP) {
        ebb_diag_set(d, section->file, section->line,
                      "%s%sexpected a mapping of keys, not %s",
                      where != NULL ? where : "", where != NULL ? ": " : "",
                      ebb__ykind_name(section->kind));
        return EBB_ECONFIG;
    }
    for (const struct ebb_cfg_key *k = table; k->key != NULL; k++) {
        if (!known_type(k->type) ||
            k->offset > config_size ||
            types[k->type].size > config_size - k->offset) {
            key_what(where, k->key, what, sizeof(what));
            ebb_diag_set(d, NULL, 0,
                          "%s: bad configuration table entry (type %d at "
                          "offset %zu of %zu bytes)", what, (int)k->type,
                          k->offset, config_size);
            return EBB_ECONFIG;
        }
    }
    for (size_t i = 0; section != NULL && i < section->n; i++) {
        if (find_key(table, section->keys[i]) == NULL)
            return unknown_key(table, section->keys[i], where, d);
    }

    /* calloc(0) may return NULL; a plugin without keys still gets a
     * pointer. */
    char *cfg = calloc(1, config_size > 0 ? config_size : 1);
    if (cfg == NULL) {
        ebb_diag_set(d, NULL, 0, "out of memory");
        return EBB_ENOMEM;
    }
    int rc = 0;
    for (const struct ebb_cfg_key *k = table; rc == 0 && k->key != NULL;
         k++) {
        if (k->default_value == NULL)
            continue;
        key_what(where, k->key, what, sizeof(what));
        rc = apply_default(k, what, cfg + k->offset, d);
    }
    for (size_t i = 0; rc == 0 && section != NULL && i < section->n; i++) {
        const struct ebb_cfg_key *k = find_key(table, section->keys[i]);
        const struct ebb__ynode *value = section->items[i];
        if (ebb__ynode_is_null(value))
            continue;
        key_what(where, k->key, what, sizeof(what));
        ebb__cfg_free_value(k->type, cfg + k->offset);
        rc = ebb__cfg_parse_value(k->type, value, what, cfg + k->offset, d);
    }
    if (rc != 0) {
        ebb__cfg_free(table, cfg);
        return rc;
    }
    *out = cfg;
    return 0;
}

void ebb__cfg_free(const struct ebb_cfg_key *table, void *config)
{
    if (config == NULL)
        return;
    for (const struct ebb_cfg_key *k = table; k->key != NULL; k++)
        ebb__cfg_free_value(k->type, (char *)config + k->offset);
    free(config);
}

/* ---- ranges --------------------------------------------------------------- */

/* A number or duration as users write it: "1m30s", "0.05". */
static void format_number(enum ebb_cfg_type type, double v, char *buf,
                          size_t size)
{
    if (type == EBB_CFG_DURATION)
        ebb_format_duration((ebb_dur_ms)v, buf, size);
    else
        snprintf(buf, size, "%.15g", v);
}

const char *ebb__cfg_range_format(enum ebb_cfg_type type,
                                  const struct ebb__cfg_range *r, char *buf,
                                  size_t size)
{
    char lo[EBB_DURATION_BUFSZ], hi[EBB_DURATION_BUFSZ];
    format_number(type, r->min, lo, sizeof(lo));
    format_number(type, r->max, hi, sizeof(hi));
    snprintf(buf, size, "%sfrom %s to %s", r->off ? "0 (none), or " : "", lo, hi);
    return buf;
}

/* The value at `value` as a double: ranges compare in doubles, exact for
 * every int and duration below 2^53 (285 000 years in milliseconds). */
static int range_value(enum ebb_cfg_type type, const void *value, double *out)
{
    if (type == EBB_CFG_INT || type == EBB_CFG_DURATION) {
        int64_t v;
        memcpy(&v, value, sizeof(v));
        *out = (double)v;
        return 0;
    }
    if (type == EBB_CFG_DOUBLE) {
        memcpy(out, value, sizeof(*out));
        return 0;
    }
    return EBB_EINVAL;
}

int ebb__cfg_check_range(enum ebb_cfg_type type, const void *value,
                         const struct ebb__cfg_range *r, const char *what,
                         const struct ebb__ynode *node, const char *file,
                         struct ebb_diag *d)
{
    double v;
    if (range_value(type, value, &v) != 0) {
        ebb_diag_set(d, NULL, 0, "%s: a range applies only to a number or a "
                     "duration", what);
        return EBB_ECONFIG;
    }
    if ((v >= r->min && v <= r->max) || (r->off && v == 0))
        return 0;
    char shown[EBB_DURATION_BUFSZ], range[3 * EBB_DURATION_BUFSZ];
    format_number(type, v, shown, sizeof(shown));
    ebb_diag_set(d, node != NULL ? node->file : file, node != NULL ? node->line : 0,
                 "%s: %s is outside the allowed range (%s)", what, shown,
                 ebb__cfg_range_format(type, r, range, sizeof(range)));
    return EBB_ECONFIG;
}

int ebb__cfg_check_ranges(const struct ebb_cfg_key *table,
                          const struct ebb__cfg_range *ranges,
                          const void *config, const struct ebb__ynode *section,
                          const char *file, const char *where,
                          struct ebb_diag *d)
{
    char what[256];
    for (const struct ebb__cfg_range *r = ranges; r->key != NULL; r++) {
        const struct ebb_cfg_key *k = table;
        while (k->key != NULL && strcmp(k->key, r->key) != 0)
            k++;
        key_what(where, r->key, what, sizeof(what));
        if (k->key == NULL) {
            ebb_diag_set(d, NULL, 0, "%s: a range for a key the table lacks", what);
            return EBB_ECONFIG;
        }
        int rc = ebb__cfg_check_range(k->type, (const char *)config + k->offset, r,
                                      what, ebb__ymap_get(section, r->key), file, d);
        if (rc != 0)
            return rc;
    }
    return 0;
}
