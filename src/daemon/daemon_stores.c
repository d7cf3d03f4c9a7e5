/* The stores of ebb.yaml, opened at start, and each job's checkpoint key
 * (daemon_ckpt.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "base/log.h"
#include "base/paths.h"
#include "base/str.h"
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

/* The job's directories in a file:// store: DIR/jobs (0711: users reach
 * their own job's and list none), then DIR/jobs/JOB, .../ckpt and
 * .../SEQ-NAME, the job's user's (when ebbd, as root, can give them
 * away), mode 0700. Each is made and opened below the one before it and
 * never through a link: the job's user owns those directories and could
 * put a link where ebbd expects one. */
int ebb__daemon_store_job_dirs(struct ebb__daemon *d, const char *store,
                               const char *job_id, int64_t seq, const char *name,
                               char *why, size_t len)
{
    struct ebb__job *job = ebb__engine_job(d->engine, job_id);
    int64_t uid = job != NULL ? ebb__engine_job_run_uid(job) : -1;
    char *root = ebb__ckpt_file_path(d, store, "");
    char *seq_name = ebb_strfmt("%lld-%s", (long long)seq, name);
    const char *parts[4] = {"jobs", job_id, "ckpt", seq_name};
    int dir = root != NULL && seq_name != NULL
                  ? open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    int rc = dir < 0 ? EBB_EIO : 0, err = dir < 0 ? errno : 0;
    const char *failed = root ? root : "the store";
    for (int i = 0; rc == 0 && i < 4; i++) {
        mode_t mode = i == 0 ? 0711 : 0700;
        int next = -1;
        if (mkdirat(dir, parts[i], mode) != 0 && errno != EEXIST)
            rc = EBB_EIO;
        if (rc == 0 && (next = openat(dir, parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                     O_CLOEXEC)) < 0)
            rc = EBB_EIO;
        if (rc == 0 && i > 0 && uid >= 0 && geteuid() == 0 &&
            fchown(next, (uid_t)uid, (gid_t)-1) != 0)
            rc = EBB_EIO;
        if (rc == 0 && fchmod(next, mode) != 0)
            rc = EBB_EIO;
        if (rc != 0) {
            err = errno;
            failed = parts[i];
        }
        close(dir);
        dir = next;
    }
    if (rc != 0)
        snprintf(why, len, "cannot make the directory %s in the "
                 "store (a directory, not a link): %s", failed, strerror(err));
    if (dir >= 0)
        close(dir);
    free(root);
    free(seq_name);
    return rc;
}
