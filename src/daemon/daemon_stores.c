/* The stores of ebb.yaml, opened at start, and each job's checkpoint key
 * (daemon_ckpt.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "base/log.h"
#include "base/paths.h"
#include "daemon/daemon.h"
#include "daemon/daemon_ckpt.h"
#include "daemon/daemon_notify.h"
#include "store/store_ckpt.h"

/* A file:// store's directory, made when it is missing: 0711, so that
 * jobs of other users reach their own job's directory in it. */
static int file_store_dir(const struct ebb__store_cfg *s, char *err, size_t len)
{
    struct ebb__objstore_url u = {0};
    int rc = ebb__objstore_url_parse(s->url, &u, err, len);
    struct stat st;
    if (rc == 0 && stat(u.dir, &st) != 0) {
        rc = ebb__mkdir_p(u.dir, err, len);
        if (rc == 0 && chmod(u.dir, 0711) != 0) {
            snprintf(err, len, "%s: %s", u.dir, strerror(errno));
            rc = EBB_EIO;
        }
    }
    ebb__objstore_url_free(&u);
    return rc;
}

static ebb_time_ms store_now(void *ctx)
{
    (void)ctx;
    return ebb__daemon_wall_ms();
}

int ebb__daemon_stores_open(struct ebb__daemon *d)
{
    const struct ebb__config *cfg = d->config;
    if (cfg->n_stores == 0)
        return 0;
    d->objstores = calloc(cfg->n_stores, sizeof(d->objstores[0]));
    if (d->objstores == NULL) {
        ebb__error("out of memory opening the stores");
        return 1;
    }
    for (size_t i = 0; i < cfg->n_stores; i++) {
        const struct ebb__store_cfg *s = &cfg->stores[i];
        struct ebb__objstore_creds creds = {0};
        char err[512] = "";
        int rc = ebb__objstore_creds_load(s->kind, &creds, err, sizeof(err));
        if (rc != 0) {
            ebb__error("%s:%d: stores.%s: no credentials for %s: %s", cfg->file,
                       s->line, s->name, s->url, err[0] ? err : ebb_strerror(rc));
            return 2;
        }
        struct ebb__objstore_cfg oc = ebb__store_objstore_cfg(s);
        oc.now = store_now;
        rc = ebb__objstore_open(&oc, &creds, d->http, &d->loop, &d->objstores[i],
                                err, sizeof(err));
        ebb__objstore_creds_free(&creds);
        if (rc != 0) {
            ebb__error("%s:%d: stores.%s: %s", cfg->file, s->line, s->name,
                       err[0] ? err : ebb_strerror(rc));
            return 2;
        }
    }
    return 0;
}

int ebb__daemon_stores_make_dirs(struct ebb__daemon *d)
{
    const struct ebb__config *cfg = d->config;
    for (size_t i = 0; i < cfg->n_stores; i++) {
        const struct ebb__store_cfg *s = &cfg->stores[i];
        char err[512] = "";
        if (s->kind == EBB__OBJSTORE_FILE && file_store_dir(s, err, sizeof(err)) != 0) {
            ebb__error("%s:%d: stores.%s: cannot make its directory: %s", cfg->file,
                       s->line, s->name, err);
            return 1;
        }
    }
    return 0;
}

void ebb__daemon_stores_free(struct ebb__daemon *d)
{
    for (size_t i = 0; d->objstores != NULL && i < d->config->n_stores; i++)
        ebb__objstore_free(d->objstores[i]);
    free(d->objstores);
    d->objstores = NULL;
}

struct ebb__objstore *ebb__daemon_objstore(struct ebb__daemon *d, const char *name)
{
    for (size_t i = 0; name != NULL && d->objstores != NULL && i < d->config->n_stores; i++)
        if (strcmp(d->config->stores[i].name, name) == 0)
            return d->objstores[i];
    return NULL;
}

const struct ebb__store_cfg *ebb__daemon_store_cfg(const struct ebb__daemon *d,
                                                   const char *name)
{
    return name != NULL ? ebb__config_store(d->config, name) : NULL;
}

int ebb__daemon_ckpt_key(struct ebb__daemon *d, const char *job_id,
                         struct ebb__ckpt_key *key, int *version)
{
    char hex[EBB__CKPT_KEY_HEX_SIZE];
    int rc = ebb__store_ckpt_key_get(d->store, job_id, hex, version);
    if (rc == EBB_ENOTFOUND) {
        rc = ebb__ckpt_key_generate(key);
        if (rc == 0) {
            ebb__ckpt_key_to_hex(key, hex);
            rc = ebb__store_ckpt_key_put(d->store, job_id, hex, ebb__daemon_wall_ms());
        }
        /* The key goes to an agent only once it is stored: checkpoints
         * sealed under a key ebbd lost could never be opened. */
        if (rc == 0)
            rc = ebb__store_flush(d->store);
        *version = 1;
    } else if (rc == 0) {
        rc = ebb__ckpt_key_from_hex(hex, key);
    }
    OPENSSL_cleanse(hex, sizeof(hex));
    if (rc != 0) {
        ebb__ckpt_key_wipe(key);
        ebb__error("job %s: cannot get its checkpoint key: %s", job_id,
                   rc == EBB_EDB || rc == EBB_EBUSY ? ebb__store_errmsg(d->store)
                                                    : ebb_strerror(rc));
    }
    return rc;
}
