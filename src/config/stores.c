/* Reading the stores: section of ebb.yaml into struct ebb__store_cfg. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cfg_table.h"
#include "base/yaml_read.h"
#include "config/config_file.h"
#include "config/stores.h"

struct store_keys {
    char *url, *region, *endpoint;
    int path_style;
    struct ebb_money price, egress;
};

static const struct ebb_cfg_key store_keys[] = {
    {"url", EBB_CFG_STRING, NULL, offsetof(struct store_keys, url),
     "s3://BUCKET[/PREFIX], oss://BUCKET[/PREFIX] or file:///DIR; required"},
    {"region", EBB_CFG_STRING, NULL, offsetof(struct store_keys, region),
     "the bucket's region (us-east-1, cn-hangzhou); required for s3 and oss"},
    {"endpoint", EBB_CFG_STRING, NULL, offsetof(struct store_keys, endpoint),
     "http[s]://HOST[:PORT] of an S3-compatible server; default the cloud's "
     "own endpoint for the region"},
    {"path_style", EBB_CFG_BOOL, "false", offsetof(struct store_keys, path_style),
     "put the bucket in the path, not the host name (S3-compatible servers)"},
    {"price_per_gb_month", EBB_CFG_MONEY, NULL, offsetof(struct store_keys, price),
     "what a GB kept for a month costs (e.g. 0.023 USD)"},
    {"egress_per_gb", EBB_CFG_MONEY, NULL, offsetof(struct store_keys, egress),
     "what a GB costs when it leaves the store's region or cloud (e.g. 0.09 USD)"},
    EBB_CFG_END,
};

static char *take(char **s)
{
    char *v = *s;
    *s = NULL;
    return v;
}

static int money_set(const struct ebb_money *m)
{
    return m->currency[0] != '\0';
}

struct ebb__objstore_cfg ebb__store_objstore_cfg(const struct ebb__store_cfg *s)
{
    return (struct ebb__objstore_cfg){.url = s->url, .region = s->region,
                                      .endpoint = s->endpoint,
                                      .path_style = s->path_style};
}

/* Checks one store's keys; fills `out` (taking c's strings) on success. */
static int check_store(const struct ebb__ynode *key, const char *what,
                       struct store_keys *c, struct ebb__store_cfg *out,
                       struct ebb_diag *d)
{
    const char *problem = NULL;
    char err[512];
    if (c->url == NULL || c->url[0] == '\0') {
        problem = "url is required (s3://BUCKET[/PREFIX], oss://BUCKET[/PREFIX] "
                  "or file:///DIR)";
    } else {
        struct ebb__objstore_cfg oc = {.url = c->url, .region = c->region,
                                       .endpoint = c->endpoint,
                                       .path_style = c->path_style};
        int rc = ebb__objstore_cfg_check(&oc, &out->kind, err, sizeof(err));
        if (rc == EBB_ENOMEM)
            return ebb__yread_nomem(d);
        if (rc != 0)
            problem = err;
    }
    if (problem != NULL) {
        ebb_diag_set(d, key->file, key->line, "%s: %s", what, problem);
        return EBB_ECONFIG;
    }
    out->name = strdup(key->value);
    if (out->name == NULL)
        return ebb__yread_nomem(d);
    out->line = key->line;
    out->url = take(&c->url);
    out->region = take(&c->region);
    out->endpoint = take(&c->endpoint);
    out->path_style = c->path_style;
    out->has_price = money_set(&c->price);
    out->price_per_gb_month = c->price;
    out->has_egress = money_set(&c->egress);
    out->egress_per_gb = c->egress;
    return 0;
}

int ebb__stores_load(const struct ebb__ynode *node, struct ebb__store_cfg **out,
                     size_t *n, struct ebb_diag *d)
{
    *out = NULL;
    *n = 0;
    if (node == NULL || ebb__ynode_is_null(node))
        return 0;
    int rc = ebb__yread_expect_map(node, "stores", d);
    if (rc != 0 || node->n == 0)
        return rc;
    struct ebb__store_cfg *stores = calloc(node->n, sizeof(*stores));
    if (stores == NULL)
        return ebb__yread_nomem(d);
    size_t count = 0;
    for (size_t i = 0; rc == 0 && i < node->n; i++) {
        const struct ebb__ynode *key = node->keys[i];
        char what[128];
        snprintf(what, sizeof(what), "stores.%s", key->value);
        if (!ebb__yread_name_valid(key->value, key->len)) {
            char q[EBB_DIAG_QUOTE_SIZE];
            ebb_diag_set(d, key->file, key->line, "stores: %s is not a valid "
                         "name (1 to 64 letters, digits, - and _)",
                         ebb__yread_quote(key, q, sizeof(q)));
            rc = EBB_ECONFIG;
            break;
        }
        void *raw = NULL;
        rc = ebb__cfg_apply(store_keys, sizeof(struct store_keys), node->items[i],
                            what, &raw, d);
        if (rc != 0)
            break;
        rc = check_store(key, what, raw, &stores[count], d);
        if (rc == 0)
            count++;
        ebb__cfg_free(store_keys, raw);
    }
    if (rc != 0) {
        ebb__stores_free(stores, count);
        return rc;
    }
    *out = stores;
    *n = count;
    return 0;
}

void ebb__stores_free(struct ebb__store_cfg *stores, size_t n)
{
    for (size_t i = 0; stores != NULL && i < n; i++) {
        free(stores[i].name);
        free(stores[i].url);
        free(stores[i].region);
        free(stores[i].endpoint);
    }
    free(stores);
}

const struct ebb__store_cfg *ebb__config_store(const struct ebb__config *cfg,
                                               const char *name)
{
    for (size_t i = 0; i < cfg->n_stores; i++)
        if (strcmp(cfg->stores[i].name, name) == 0)
            return &cfg->stores[i];
    return NULL;
}
