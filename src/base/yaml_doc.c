#include "base/yaml_doc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

struct ebb__ydoc {
    char *name;
    struct ebb__ynode *root;
};

/* An open sequence or mapping while events arrive; `key` is a mapping key
 * read but not yet paired with its value (not yet owned by the tree). */
struct frame {
    struct ebb__ynode *node;
    struct ebb__ynode *key;
};

struct builder {
    const char *name;
    const char *buf;
    size_t len;
    const struct ebb__ylimits *lim;
    size_t nodes; /* created so far */
    struct ebb_diag *d;
    struct ebb__ynode *root;
    struct frame stack[EBB__YAML_MAX_DEPTH];
    int depth;
    int docs;
};

/* What every document may hold: only the limits in yaml_doc.h. */
static const struct ebb__ylimits no_limits = {
    .what = "a YAML file", .max_bytes = EBB__YAML_MAX_FILE, .max_nodes = SIZE_MAX,
    .max_entries = SIZE_MAX, .max_depth = EBB__YAML_MAX_DEPTH,
};

const struct ebb__ylimits ebb__ylimits_spec = {
    .what = "a job spec or schedule", .max_bytes = EBB__YAML_SPEC_MAX_BYTES, .max_nodes = 20000,
    .max_entries = 1000, .max_depth = 16,
};

static void node_free(struct ebb__ynode *n)
{
    if (n == NULL)
        return;
    /* Depth is capped at EBB__YAML_MAX_DEPTH, so recursion is bounded. */
    for (size_t i = 0; i < n->n; i++) {
        node_free(n->items[i]);
        if (n->keys != NULL)
            node_free(n->keys[i]);
    }
    free(n->items);
    free(n->keys);
    free(n->value);
    free(n);
}

static int oom(struct builder *b)
{
    ebb_diag_set(b->d, b->name, 0, "out of memory");
    return EBB_ENOMEM;
}

static struct ebb__ynode *node_new(struct builder *b, enum ebb__ykind kind,
                                   const yaml_mark_t *mark)
{
    struct ebb__ynode *n = calloc(1, sizeof(*n));
    if (n == NULL)
        return NULL;
    n->kind = kind;
    n->line = (int)mark->line + 1;
    n->file = b->name;
    return n;
}

/* Grows an array of node pointers holding `n` entries so one more fits.
 * Capacity is implied: the arrays double whenever n reaches a power of 2. */
static int grow(struct ebb__ynode ***arr, size_t n)
{
    if (n != 0 && (n & (n - 1)) != 0)
        return 0;
    size_t cap = n == 0 ? 4 : n * 2;
    if (n != 0 && n < 4)
        return 0;
    struct ebb__ynode **p = realloc(*arr, cap * sizeof(*p));
    if (p == NULL)
        return EBB_ENOMEM;
    *arr = p;
    return 0;
}

/* Attaches a finished node (a scalar, or a container just opened) to the
 * innermost open container, or makes it the root. Takes ownership of
 * `child` in all cases, freeing it on error. */
static int attach(struct builder *b, struct ebb__ynode *child)
{
    if (b->depth == 0) {
        b->root = child;
        return 0;
    }
    struct frame *f = &b->stack[b->depth - 1];
    struct ebb__ynode *parent = f->node;
    /* A new item or key (a mapping's value completes an entry). */
    bool adds = parent->kind == EBB__YSEQ || f->key == NULL;
    if (adds && parent->n >= b->lim->max_entries) {
        bool seq = parent->kind == EBB__YSEQ;
        ebb_diag_set(b->d, b->name, child->line,
                      "more than %zu %s in one %s; %s may have at most that many",
                      b->lim->max_entries, seq ? "items" : "keys",
                      seq ? "list" : "mapping", b->lim->what);
        node_free(child);
        return EBB_ECONFIG;
    }
    if (parent->kind == EBB__YSEQ) {
        if (grow(&parent->items, parent->n) != 0) {
            node_free(child);
            return oom(b);
        }
        parent->items[parent->n++] = child;
        return 0;
    }
    if (f->key == NULL) {
        if (child->kind != EBB__YSCALAR) {
            ebb_diag_set(b->d, b->name, child->line,
                          "a mapping key must be a single value, not %s",
                          ebb__ykind_name(child->kind));
            node_free(child);
            return EBB_ECONFIG;
        }
        f->key = child;
        return 0;
    }
    if (grow(&parent->items, parent->n) != 0 ||
        grow(&parent->keys, parent->n) != 0) {
        node_free(child);
        return oom(b);
    }
    parent->keys[parent->n] = f->key;
    parent->items[parent->n] = child;
    parent->n++;
    f->key = NULL;
    return 0;
}

/* Tags from the YAML core schema ("!!str") are harmless; anything else
 * would ask for a meaning ebb does not give. */
static int check_props(struct builder *b, const yaml_event_t *ev,
                       const yaml_char_t *anchor, const yaml_char_t *tag)
{
    int line = (int)ev->start_mark.line + 1;
    if (anchor != NULL) {
        ebb_diag_set(b->d, b->name, line,
                      "anchors and aliases (&name, *name) are not "
                      "supported; write the value out");
        return EBB_ECONFIG;
    }
    if (tag != NULL &&
        strncmp((const char *)tag, "tag:yaml.org,2002:", 18) != 0) {
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_set(b->d, b->name, line, "unsupported tag %s",
                      ebb_diag_quote((const char *)tag,
                                      strlen((const char *)tag), q,
                                      sizeof(q)));
        return EBB_ECONFIG;
    }
    return 0;
}

/* Counts one more node against the document's limit. */
static int count_node(struct builder *b, const yaml_event_t *ev)
{
    if (b->nodes < b->lim->max_nodes) {
        b->nodes++;
        return 0;
    }
    ebb_diag_set(b->d, b->name, (int)ev->start_mark.line + 1,
                  "more than %zu values, lists and mappings; %s may hold at "
                  "most that many", b->lim->max_nodes, b->lim->what);
    return EBB_ECONFIG;
}

struct key_ref {
    const struct ebb__ynode *key;
    size_t index; /* its place in the mapping */
};

static int same_key(const struct ebb__ynode *x, const struct ebb__ynode *y)
{
    return x->len == y->len && memcmp(x->value, y->value, x->len) == 0;
}

/* By length, then bytes, then place: a key's repeats follow it in the
 * order they were written. */
static int key_ref_cmp(const void *a, const void *b)
{
    const struct key_ref *x = a, *y = b;
    if (x->key->len != y->key->len)
        return x->key->len < y->key->len ? -1 : 1;
    int c = memcmp(x->key->value, y->key->value, x->key->len);
    if (c != 0)
        return c;
    return (x->index > y->index) - (x->index < y->index);
}

/* Refuses a mapping that holds a key twice, naming the first repeat in
 * the order written and the line of the key it repeats. Checked once the
 * mapping is complete, by sorting references to its keys: O(n log n),
 * where comparing each new key with those before it was O(n^2) (80,000
 * keys held the loop for minutes). */
static int check_unique(struct builder *b, const struct ebb__ynode *map)
{
    if (map->n < 2)
        return 0;
    struct key_ref *refs = malloc(map->n * sizeof(*refs));
    if (refs == NULL)
        return oom(b);
    for (size_t i = 0; i < map->n; i++)
        refs[i] = (struct key_ref){map->keys[i], i};
    qsort(refs, map->n, sizeof(*refs), key_ref_cmp);
    const struct key_ref *repeat = NULL, *first = NULL;
    size_t group = 0; /* where the run of equal keys that holds i starts */
    for (size_t i = 1; i < map->n; i++) {
        if (!same_key(refs[i].key, refs[i - 1].key)) {
            group = i;
            continue;
        }
        if (i == group + 1 && (repeat == NULL || refs[i].index < repeat->index)) {
            repeat = &refs[i];
            first = &refs[group];
        }
    }
    int rc = 0;
    if (repeat != NULL) {
        char q[EBB_DIAG_QUOTE_SIZE];
        ebb_diag_set(b->d, b->name, repeat->key->line,
                      "duplicate key %s (first at line %d)",
                      ebb_diag_quote(repeat->key->value, repeat->key->len, q,
                                      sizeof(q)),
                      first->key->line);
        rc = EBB_ECONFIG;
    }
    free(refs);
    return rc;
}

static int open_container(struct builder *b, const yaml_event_t *ev,
                          enum ebb__ykind kind)
{
    if (b->depth >= b->lim->max_depth) {
        ebb_diag_set(b->d, b->name, (int)ev->start_mark.line + 1,
                      "nested deeper than %d levels", b->lim->max_depth);
        return EBB_ECONFIG;
    }
    int rc = count_node(b, ev);
    if (rc != 0)
        return rc;
    struct ebb__ynode *n = node_new(b, kind, &ev->start_mark);
    if (n == NULL)
        return oom(b);
    rc = attach(b, n);
    if (rc != 0)
        return rc;
    b->stack[b->depth].node = n;
    b->stack[b->depth].key = NULL;
    b->depth++;
    return 0;
}

static int on_event(struct builder *b, const yaml_event_t *ev)
{
    int line = (int)ev->start_mark.line + 1;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        b->docs++;
        if (b->docs > 1) {
            ebb_diag_set(b->d, b->name, line,
                          "a second YAML document; ebb reads one document "
                          "per file (remove the extra '---')");
            return EBB_ECONFIG;
        }
        return 0;
    case YAML_ALIAS_EVENT:
        ebb_diag_set(b->d, b->name, line,
                      "anchors and aliases (&name, *name) are not "
                      "supported; write the value out");
        return EBB_ECONFIG;
    case YAML_SCALAR_EVENT: {
        int rc = check_props(b, ev, ev->data.scalar.anchor,
                             ev->data.scalar.tag);
        if (rc == 0)
            rc = count_node(b, ev);
        if (rc != 0)
            return rc;
        struct ebb__ynode *n = node_new(b, EBB__YSCALAR, &ev->start_mark);
        if (n == NULL)
            return oom(b);
        n->len = ev->data.scalar.length;
        n->value = malloc(n->len + 1);
        if (n->value == NULL) {
            node_free(n);
            return oom(b);
        }
        if (n->len > 0)
            memcpy(n->value, ev->data.scalar.value, n->len);
        n->value[n->len] = '\0';
        n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        return attach(b, n);
    }
    case YAML_SEQUENCE_START_EVENT: {
        int rc = check_props(b, ev, ev->data.sequence_start.anchor,
                             ev->data.sequence_start.tag);
        return rc != 0 ? rc : open_container(b, ev, EBB__YSEQ);
    }
    case YAML_MAPPING_START_EVENT: {
        int rc = check_props(b, ev, ev->data.mapping_start.anchor,
                             ev->data.mapping_start.tag);
        return rc != 0 ? rc : open_container(b, ev, EBB__YMAP);
    }
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: {
        /* libyaml only emits balanced events, and a mapping always ends
         * after a value, so the frame's pending key is NULL here. */
        if (b->depth == 0)
            return 0;
        const struct ebb__ynode *done = b->stack[b->depth - 1].node;
        int rc = done->kind == EBB__YMAP ? check_unique(b, done) : 0;
        b->depth--;
        return rc;
    }
    default:
        return 0;
    }
}

/* libyaml reports reader errors (bad UTF-8, control characters) as a byte
 * offset; turn it into a line like the other errors. */
static int line_at(const struct builder *b, size_t offset)
{
    int line = 1;
    for (size_t i = 0; i < offset && i < b->len; i++) {
        if (b->buf[i] == '\n')
            line++;
    }
    return line;
}

static int syntax_error(struct builder *b, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        return oom(b);
    int line = p->error == YAML_READER_ERROR
                   ? line_at(b, p->problem_offset)
                   : (int)p->problem_mark.line + 1;
    ebb_diag_set(b->d, b->name, line, "%s",
                  p->problem != NULL ? p->problem : "invalid YAML");
    return EBB_ECONFIG;
}

/* Frees what a failed build left: the tree and any key still waiting for
 * its value. */
static void builder_cleanup(struct builder *b)
{
    for (int i = 0; i < b->depth; i++)
        node_free(b->stack[i].key);
    node_free(b->root);
    b->root = NULL;
}

int ebb__ydoc_load_buffer(const char *name, const char *buf, size_t len,
                          struct ebb__ydoc **out, struct ebb_diag *d)
{
    return ebb__ydoc_load_bounded(name, buf, len, &no_limits, out, d);
}

int ebb__ydoc_load_bounded(const char *name, const char *buf, size_t len,
                           const struct ebb__ylimits *lim,
                           struct ebb__ydoc **out, struct ebb_diag *d)
{
    *out = NULL;
    if (len > lim->max_bytes) {
        ebb_diag_set(d, name, 0, "%zu bytes; %s may be at most %zu (%zu KiB)",
                      len, lim->what, lim->max_bytes, lim->max_bytes / 1024);
        return EBB_ECONFIG;
    }
    struct ebb__ydoc *doc = calloc(1, sizeof(*doc));
    char *name_copy = strdup(name != NULL ? name : "<input>");
    if (doc == NULL || name_copy == NULL) {
        free(doc);
        free(name_copy);
        ebb_diag_set(d, name, 0, "out of memory");
        return EBB_ENOMEM;
    }
    doc->name = name_copy;

    struct builder b = {.name = name_copy, .buf = buf, .len = len, .lim = lim,
                        .d = d};
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        free(name_copy);
        free(doc);
        ebb_diag_set(d, name, 0, "out of memory");
        return EBB_ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = syntax_error(&b, &parser);
            break;
        }
        int done = ev.type == YAML_STREAM_END_EVENT;
        rc = on_event(&b, &ev);
        yaml_event_delete(&ev);
        if (rc != 0 || done)
            break;
    }
    yaml_parser_delete(&parser);
    if (rc != 0) {
        builder_cleanup(&b);
        free(name_copy);
        free(doc);
        return rc;
    }
    doc->root = b.root;
    *out = doc;
    return 0;
}

int ebb__ydoc_load_file(const char *path, struct ebb__ydoc **out,
                        struct ebb_diag *d)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int err = errno;
        ebb_diag_set(d, path, 0, "cannot open: %s", strerror(err));
        return err == ENOENT ? EBB_ENOTFOUND : EBB_EIO;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (len == cap) {
            if (cap >= EBB__YAML_MAX_FILE) {
                ebb_diag_set(d, path, 0, "larger than %u MiB",
                              EBB__YAML_MAX_FILE / (1024 * 1024));
                rc = EBB_EIO;
                break;
            }
            size_t ncap = cap == 0 ? 4096 : cap * 2;
            char *p = realloc(buf, ncap + 1);
            if (p == NULL) {
                ebb_diag_set(d, path, 0, "out of memory");
                rc = EBB_ENOMEM;
                break;
            }
            buf = p;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                ebb_diag_set(d, path, 0, "cannot read: %s",
                              strerror(errno));
                rc = EBB_EIO;
            }
            break;
        }
    }
    fclose(f);
    if (rc == 0)
        rc = ebb__ydoc_load_buffer(path, buf, len, out, d);
    free(buf);
    return rc;
}

void ebb__ydoc_free(struct ebb__ydoc *doc)
{
    if (doc == NULL)
        return;
    node_free(doc->root);
    free(doc->name);
    free(doc);
}

const struct ebb__ynode *ebb__ydoc_root(const struct ebb__ydoc *doc)
{
    return doc->root;
}

const char *ebb__ydoc_name(const struct ebb__ydoc *doc)
{
    return doc->name;
}

const struct ebb__ynode *ebb__ymap_get(const struct ebb__ynode *map,
                                       const char *key)
{
    if (map == NULL || map->kind != EBB__YMAP)
        return NULL;
    size_t klen = strlen(key);
    for (size_t i = 0; i < map->n; i++) {
        const struct ebb__ynode *k = map->keys[i];
        if (k->len == klen && memcmp(k->value, key, klen) == 0)
            return map->items[i];
    }
    return NULL;
}

int ebb__ynode_is_null(const struct ebb__ynode *n)
{
    if (n == NULL)
        return 1;
    if (n->kind != EBB__YSCALAR || n->quoted)
        return 0;
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++) {
        if (strcmp(n->value, nulls[i]) == 0 && strlen(n->value) == n->len)
            return 1;
    }
    return 0;
}

const char *ebb__ykind_name(enum ebb__ykind kind)
{
    switch (kind) {
    case EBB__YSCALAR:
        return "a single value";
    case EBB__YSEQ:
        return "a list";
    case EBB__YMAP:
        return "a mapping";
    }
    return "a node";
}
