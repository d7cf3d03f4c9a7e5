/* A YAML document loaded into a small tree that remembers where each node
 * was written, so that every later check can say "file:line: ...".
 *
 * Built on libyaml's event parser. Deliberately smaller than YAML: one
 * document per file, no anchors or aliases, no custom tags, mapping keys
 * are scalars and appear once (checked in O(n log n) per mapping). Scalars stay strings; their meaning (number,
 * duration, amount) is decided by whoever reads them.
 */
#ifndef EBB_YAML_DOC_H
#define EBB_YAML_DOC_H

#include <stddef.h>

#include <ebb/diag.h>

enum ebb__ykind {
    EBB__YSCALAR,
    EBB__YSEQ,
    EBB__YMAP,
};

/* Documents nested deeper than this are rejected. */
#define EBB__YAML_MAX_DEPTH 64
/* Files larger than this are rejected. */
#define EBB__YAML_MAX_FILE (16u * 1024 * 1024)

/* What a document may hold, beyond the limits above that bind every
 * document. Our own files (ebb.yaml, a backtest workload) are read with
 * no more than those; what other people send ebbd (job specs, schedules)
 * with ebb__ylimits_spec, so that one spec cannot make ebbd spend long on
 * it while the loop waits. */
struct ebb__ylimits {
    const char *what;  /* "a job spec or schedule", for messages */
    size_t max_bytes;  /* the input's length */
    size_t max_nodes;  /* values, lists and mappings in all, keys included */
    size_t max_entries; /* keys in one mapping, items in one list */
    int max_depth;     /* at most EBB__YAML_MAX_DEPTH */
};

/* A job spec or schedule file is at most this long; the CLI refuses a
 * larger file before sending it, and ebbd refuses one it is sent. */
#define EBB__YAML_SPEC_MAX_BYTES (256u * 1024)

/* The limits for job specs and schedules: EBB__YAML_SPEC_MAX_BYTES, 20000
 * nodes, 1000 keys per mapping and items per list, 16 levels. */
extern const struct ebb__ylimits ebb__ylimits_spec;

/* A node. All fields are read-only to users and owned by the document.
 * Iterate a sequence over items[0..n); a mapping over keys[i] -> items[i],
 * in the order written. */
struct ebb__ynode {
    enum ebb__ykind kind;
    int line;          /* 1-based line where the node starts */
    const char *file;  /* the document's display name */
    /* EBB__YSCALAR: */
    char *value;       /* NUL-terminated; len bytes (may hold "\0" escapes) */
    size_t len;
    int quoted;        /* 1 when written '...', "...", | or >; 0 if plain */
    /* EBB__YSEQ and EBB__YMAP: */
    size_t n;
    struct ebb__ynode **items;
    struct ebb__ynode **keys; /* EBB__YMAP only: scalar keys, all distinct */
};

struct ebb__ydoc;

/* Loads the YAML document in `buf` (len bytes, need not be NUL-terminated);
 * `name` is used in messages and copied. On success *out is a new document
 * the caller frees with ebb__ydoc_free(). Returns 0, EBB_ECONFIG (syntax
 * error or unsupported feature: d says "name:line: problem") or EBB_ENOMEM. */
int ebb__ydoc_load_buffer(const char *name, const char *buf, size_t len,
                          struct ebb__ydoc **out, struct ebb_diag *d);

/* As ebb__ydoc_load_buffer(), within `lim` (borrowed): a document over one
 * of its limits is EBB_ECONFIG, and d names the limit ("job.yaml: 300000
 * bytes; a job spec or schedule may be at most 262144"). */
int ebb__ydoc_load_bounded(const char *name, const char *buf, size_t len,
                           const struct ebb__ylimits *lim,
                           struct ebb__ydoc **out, struct ebb_diag *d);

/* Reads and loads the file at `path` (the path is the name in messages).
 * Returns as ebb__ydoc_load_buffer(), or EBB_ENOTFOUND when the file does
 * not exist, EBB_EIO when it cannot be read or is over 16 MiB. */
int ebb__ydoc_load_file(const char *path, struct ebb__ydoc **out,
                        struct ebb_diag *d);

/* Frees the document and all its nodes. NULL is allowed. */
void ebb__ydoc_free(struct ebb__ydoc *doc);

/* The root node, or NULL when the input holds no document at all (empty or
 * only comments). Borrowed from the document. */
const struct ebb__ynode *ebb__ydoc_root(const struct ebb__ydoc *doc);

/* The display name given at load time. Borrowed from the document. */
const char *ebb__ydoc_name(const struct ebb__ydoc *doc);

/* The value for `key` in mapping `map`, or NULL when absent or when `map` is
 * NULL or not a mapping. Borrowed. */
const struct ebb__ynode *ebb__ymap_get(const struct ebb__ynode *map,
                                       const char *key);

/* 1 for a missing node (NULL) or a plain scalar that YAML reads as null:
 * empty, "~", "null", "Null", "NULL". A quoted "" or "null" is a string. */
int ebb__ynode_is_null(const struct ebb__ynode *n);

/* "a value", "a list" or "a mapping", for messages such as
 * "expected a list, not a mapping". */
const char *ebb__ykind_name(enum ebb__ykind kind);

#endif
