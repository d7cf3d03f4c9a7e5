#include "base/yaml_doc.h"

#include <errno.h>
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
    struct ebb_diag *d;
    struct ebb__ynode *root;
    struct frame stack[EBB__YAML_MAX_DEPTH];
    int depth;
    int docs;
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
        for (size_t i = 0; i < parent->n; i++) {
            const struct ebb__ynode *k = parent->keys[i];
            if (k->len == child->len &&
                memcmp(k->value, child->value, k->len) == 0) {
                char q[EBB_DIAG_QUOTE_SIZE];
                ebb_diag_set(b->d, b->name, child->line,
                              "duplicate key %s (first at line %d)",
                              ebb_diag_quote(child->value, child->len, q,
                                              sizeof(q)),
                              k->line);
                node_free(child);
                return EBB_ECONFIG;
            }
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

static int open_container(struct builder *b, const yaml_event_t *ev,
                          enum ebb__ykind kind)
{
    if (b->depth >= EBB__YAML_MAX_DEPTH) {
        ebb_diag_set(b->d, b->name, (int)ev->start_mark.line + 1,
                      "nested deeper than %d levels", EBB__YAML_MAX_DEPTH);
        return EBB_ECONFIG;
    }
    struct ebb__ynode *n = node_new(b, kind, &ev->start_mark);
    if (n == NULL)
        return oom(b);
    int rc = attach(b, n);
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
    case YAML_MAPPING_END_EVENT:
        /* libyaml only emits balanced events, and a mapping always ends
         * after a value, so the frame's pending key is NULL here. */
        if (b->depth > 0)
            b->depth--;
        return 0;
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
    *out = NULL;
    struct ebb__ydoc *doc = calloc(1, sizeof(*doc));
    char *name_copy = strdup(name != NULL ? name : "<input>");
    if (doc == NULL || name_copy == NULL) {
        free(doc);
        free(name_copy);
        ebb_diag_set(d, name, 0, "out of memory");
        return EBB_ENOMEM;
    }
    doc->name = name_copy;

    struct builder b = {.name = name_copy, .buf = buf, .len = len, .d = d};
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
