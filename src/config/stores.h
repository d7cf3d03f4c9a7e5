/* The stores: section of ebb.yaml: where checkpoints (and, later, a job's
 * packed workdir) are kept. Each named store has exactly the keys url,
 * region, endpoint, path_style, price_per_gb_month and egress_per_gb;
 * the URL, region, endpoint and addressing are checked here with the
 * object-store client's own rules (objstore/objstore.h), so that a store
 * ebbd accepts is one it can open. Credentials are not part of the file:
 * they come from the environment when a store is opened. */
#ifndef EBB_CONFIG_STORES_H
#define EBB_CONFIG_STORES_H

#include <stddef.h>

#include <ebb/common.h>
#include <ebb/diag.h>

#include "base/yaml_doc.h"
#include "objstore/objstore.h"

struct ebb__store_cfg {
    char *name; /* what job specs name (checkpoint.store) */
    int line;
    char *url;
    enum ebb__objstore_kind kind;
    char *region;   /* NULL for file:// */
    char *endpoint; /* NULL: the cloud's own */
    int path_style;
    int has_price;  /* 0: price_per_gb_month not set (no default yet) */
    struct ebb_money price_per_gb_month;
    int has_egress; /* 0: egress_per_gb not set */
    struct ebb_money egress_per_gb;
};

/* Reads the stores: mapping (name -> settings) into a new array. Returns
 * 0 (with *out NULL and *n 0 for an absent or empty section) or
 * EBB_ECONFIG / EBB_ENOMEM with "file:line: stores.NAME: ..." in `d`. */
int ebb__stores_load(const struct ebb__ynode *node, struct ebb__store_cfg **out,
                     size_t *n, struct ebb_diag *d);
void ebb__stores_free(struct ebb__store_cfg *stores, size_t n);

/* The objstore configuration of `s` (strings borrowed from it). */
struct ebb__objstore_cfg ebb__store_objstore_cfg(const struct ebb__store_cfg *s);

#endif
