/* Packed workdirs kept in a job's store (daemon_workdir.h). Each tar a
 * client uploaded for a store is one seal: sealed into an encrypted file
 * on libuv's thread pool, then HEAD and, unless the store holds it
 * already, PUT on the loop. Seals live in memory; what is stored is in
 * the database, so a restarted ebbd still knows every stored tar. */
#include "daemon/daemon_workdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <ebb/digest.h>

#include "base/log.h"
#include "base/str.h"
#include "daemon/daemon.h"
#include "daemon/daemon_ckpt.h"
#include "daemon/daemon_notify.h"
#include "store/store_workdir.h"

enum seal_state { SEALING, STORED, FAILED };

struct seal {
    struct ebb__daemon *d;
    char *store;
    char sha[65];
    uint64_t size;
    int64_t stored_size;
    char *tar, *sealed;     /* spool files this seal owns */
    struct ebb__ckpt_key key;
    enum seal_state state;
    char reason[600];
    ebb_time_ms ended_at;
    uv_work_t work;
    int fd;                 /* the sealed file, while it is PUT */
    struct seal *next;
};

struct ebb__workdir_seals {
    struct seal *list;
    uint64_t serial;        /* names the seals' spool files */
};

static char *object_key(const char *sha)
{
    return ebb_strfmt("workdirs/%s", sha);
}

static void seal_free(struct seal *s)
{
    if (s->fd >= 0)
        close(s->fd);
    if (s->tar != NULL)
        unlink(s->tar);
    if (s->sealed != NULL)
        unlink(s->sealed);
    ebb__ckpt_key_wipe(&s->key);
    free(s->tar);
    free(s->sealed);
    free(s->store);
    free(s);
}

static void unlink_seal(struct ebb__workdir_seals *w, struct seal *s)
{
    for (struct seal **p = &w->list; *p != NULL; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            return;
        }
}

/* Drops outcomes older than EBB__WORKDIR_OUTCOME_MS, and the oldest ended
 * ones past EBB__WORKDIR_SEALS_MAX. Seals in flight are never dropped. */
static void prune(struct ebb__daemon *d)
{
    struct ebb__workdir_seals *w = d->workdir_seals;
    ebb_time_ms now = ebb__daemon_wall_ms();
    size_t n = 0;
    for (struct seal **p = &w->list; *p != NULL;) {
        struct seal *s = *p;
        if (s->state != SEALING && (now - s->ended_at > EBB__WORKDIR_OUTCOME_MS ||
                                    ++n > EBB__WORKDIR_SEALS_MAX)) {
            *p = s->next;
            seal_free(s);
        } else {
            p = &s->next;
        }
    }
}

static struct seal *find(struct ebb__daemon *d, const char *store, const char *sha)
{
    for (struct seal *s = d->workdir_seals ? d->workdir_seals->list : NULL; s; s = s->next)
        if (strcmp(s->store, store) == 0 && strcmp(s->sha, sha) == 0)
            return s;
    return NULL;
}

int ebb__daemon_workdir_key(struct ebb__daemon *d, const char *sha,
                            struct ebb__ckpt_key *out)
{
    char hex[EBB__CKPT_KEY_HEX_SIZE];
    struct ebb__ckpt_key secret;
    unsigned char sum[32];
    int rc = ebb__ckpt_unhex(sha, sum, sizeof(sum));
    if (rc == 0)
        rc = ebb__store_workdir_secret_get(d->store, hex);
    if (rc == EBB_ENOTFOUND) {
        rc = ebb__ckpt_key_generate(&secret);
        if (rc == 0) {
            ebb__ckpt_key_to_hex(&secret, hex);
            rc = ebb__store_workdir_secret_put(d->store, hex, ebb__daemon_wall_ms());
        }
        /* Committed before anything is sealed under it. */
        if (rc == 0)
            rc = ebb__store_flush(d->store);
    } else if (rc == 0) {
        rc = ebb__ckpt_key_from_hex(hex, &secret);
    }
    OPENSSL_cleanse(hex, sizeof(hex));
    if (rc == 0)
        rc = ebb__ckpt_workdir_key(secret.bytes, sum, out);
    ebb__ckpt_key_wipe(&secret);
    if (rc != 0)
        ebb__error("workdir %.12s: cannot get its key: %s", sha,
                   rc == EBB_EDB || rc == EBB_EBUSY ? ebb__store_errmsg(d->store)
                                                    : ebb_strerror(rc));
    return rc;
}

static void ended(struct seal *s, enum seal_state state)
{
    s->state = state;
    s->ended_at = ebb__daemon_wall_ms();
    ebb__ckpt_key_wipe(&s->key);
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    if (state == FAILED)
        ebb__warn("workdir %s for store %s: %s", s->sha, s->store, s->reason);
    else
        ebb__info("workdir %s is in store %s (%lld bytes stored)", s->sha, s->store,
                  (long long)s->stored_size);
    /* Stored or not, the spooled tar and its sealed form are done with: a
     * failed seal is begun again from a new upload. */
    unlink(s->tar);
    unlink(s->sealed);
}

static void fail(struct seal *s, const char *fmt, ...) EBB_PRINTF(2, 3);
static void fail(struct seal *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
    va_end(ap);
    ended(s, FAILED);
}

/* Off the loop: the tar sealed into s->sealed, and checked to be the tar
 * named (it was hashed as it came in; this reads what is on disk). */
static void seal_work(uv_work_t *req)
{
    struct seal *s = req->data;
    int in = open(s->tar, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int out = open(s->sealed, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct ebb__ckpt_sums sums;
    struct ebb__ckpt_error err = {0};
    if (in < 0 || out < 0) {
        snprintf(s->reason, sizeof(s->reason), "cannot seal it: %s", strerror(errno));
    } else if (ebb__ckpt_encrypt(&s->key, "workdir", s->sha, ebb__ckpt_fd_read, &in,
                                 ebb__ckpt_fd_write, &out, &sums, &err) != 0) {
        snprintf(s->reason, sizeof(s->reason), "cannot seal it: %.500s", err.diag.msg);
    } else {
        char hex[65];
        ebb_hex(sums.sha256, sizeof(sums.sha256), hex);
        if (sums.size != s->size || strcmp(hex, s->sha) != 0)
            snprintf(s->reason, sizeof(s->reason), "the spooled tar changed: %llu bytes "
                     "with SHA-256 %s", (unsigned long long)sums.size, hex);
        else if (fsync(out) != 0)
            snprintf(s->reason, sizeof(s->reason), "cannot seal it: %s", strerror(errno));
        s->stored_size = (int64_t)sums.stored_size;
    }
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
}

static void on_put(void *arg, const struct ebb__objstore_result *r);

/* A file:// store: its workdirs/ directory reachable by every job's user
 * (0711), and each object readable (0644; it is sealed) once in place. */
static int file_store_dir(struct seal *s)
{
    char *dir = ebb__ckpt_file_path(s->d, s->store, "workdirs");
    int rc = dir == NULL ? -1 : 0;
    if (rc == 0 && mkdir(dir, 0711) != 0 && errno != EEXIST)
        rc = -1;
    if (rc == 0 && chmod(dir, 0711) != 0)
        rc = -1;
    if (rc != 0)
        fail(s, "cannot make %s: %s", dir ? dir : "workdirs/", strerror(errno));
    free(dir);
    return rc;
}

static void put(struct seal *s)
{
    const struct ebb__store_cfg *sc = ebb__daemon_store_cfg(s->d, s->store);
    if (sc != NULL && sc->kind == EBB__OBJSTORE_FILE && file_store_dir(s) != 0)
        return;
    char *key = object_key(s->sha);
    s->fd = open(s->sealed, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int rc = key == NULL ? EBB_ENOMEM : s->fd < 0 ? EBB_EIO : 0;
    if (rc == 0)
        rc = ebb__objstore_put(ebb__daemon_objstore(s->d, s->store), key, s->fd, 0,
                               s->stored_size, on_put, s);
    free(key);
    if (rc != 0)
        fail(s, "cannot store it: %s", s->fd < 0 ? strerror(errno) : ebb_strerror(rc));
}

static void stored(struct seal *s)
{
    struct ebb__daemon *d = s->d;
    int rc = ebb__store_workdir_stored_put(d->store, s->store, s->sha, (int64_t)s->size,
                                           s->stored_size, ebb__daemon_wall_ms());
    if (rc == 0)
        rc = ebb__store_flush(d->store);
    if (rc != 0)
        fail(s, "cannot record it as stored: %s", ebb__store_errmsg(d->store));
    else
        ended(s, STORED);
}

static void on_put(void *arg, const struct ebb__objstore_result *r)
{
    struct seal *s = arg;
    if (r->status != 0) {
        fail(s, "cannot put it into store %s: %s%s%s", s->store, ebb_strerror(r->status),
             r->message[0] ? ": " : "", r->message);
        return;
    }
    const struct ebb__store_cfg *sc = ebb__daemon_store_cfg(s->d, s->store);
    if (sc != NULL && sc->kind == EBB__OBJSTORE_FILE) {
        char *key = object_key(s->sha);
        char *path = key ? ebb__ckpt_file_path(s->d, s->store, key) : NULL;
        int ok = path != NULL && chmod(path, 0644) == 0;
        free(key);
        free(path);
        if (!ok) {
            fail(s, "cannot make it readable to jobs: %s", strerror(errno));
            return;
        }
    }
    stored(s);
}

/* The first bytes of an object of the sealed size: its header must open
 * under this tar's key, else it was sealed under another secret (another
 * ebbd, or this one's database made afresh) and is replaced. */
static void on_header(void *arg, const struct ebb__objstore_result *r)
{
    struct seal *s = arg;
    unsigned char header[EBB__CKPT_HEADER_LEN];
    struct ebb__ckpt_file f = {0};
    struct ebb__ckpt_error err = {0};
    int same = r->status == 0 && pread(s->fd, header, sizeof(header), 0) ==
                                     (ssize_t)sizeof(header) &&
               ebb__ckpt_file_open(&f, &s->key, "workdir", s->sha, header, &err) == 0;
    ebb__ckpt_file_close(&f);
    close(s->fd);
    s->fd = -1;
    if (same) {
        ebb__info("workdir %s: store %s holds it already", s->sha, s->store);
        stored(s);
        return;
    }
    ebb__info("workdir %s: store %s holds an object of its size that is not it (%s); "
              "replacing it", s->sha, s->store,
              r->status != 0 ? ebb_strerror(r->status) : "sealed under another key");
    put(s);
}

/* An object already there of the sealed size may be the same tar under
 * the same key: its header says (on_header). */
static void on_head(void *arg, const struct ebb__objstore_result *r)
{
    struct seal *s = arg;
    if (r->status == 0 && r->size == s->stored_size) {
        char *key = object_key(s->sha);
        s->fd = memfd_create("ebb-workdir-header", MFD_CLOEXEC);
        int rc = key == NULL ? EBB_ENOMEM : s->fd < 0 ? EBB_EIO : 0;
        if (rc == 0)
            rc = ebb__objstore_get(ebb__daemon_objstore(s->d, s->store), key, 0,
                                   EBB__CKPT_HEADER_LEN, s->fd, 0, on_header, s);
        free(key);
        if (rc != 0)
            fail(s, "cannot read its header in store %s: %s", s->store, ebb_strerror(rc));
    } else if (r->status == 0 || r->status == EBB_ENOTFOUND) {
        put(s);
    } else {
        fail(s, "cannot look it up in store %s: %s%s%s", s->store, ebb_strerror(r->status),
             r->message[0] ? ": " : "", r->message);
    }
}

static void after_seal(uv_work_t *req, int status)
{
    struct seal *s = req->data;
    if (status != 0) {
        fail(s, "cannot seal it: %s", uv_strerror(status));
        return;
    }
    if (s->reason[0] != '\0') {
        ended(s, FAILED);
        return;
    }
    if (s->d->shutting_down) {
        fail(s, "ebbd is stopping");
        return;
    }
    char *key = object_key(s->sha);
    int rc = key == NULL ? EBB_ENOMEM
                         : ebb__objstore_head(ebb__daemon_objstore(s->d, s->store), key,
                                              on_head, s);
    free(key);
    if (rc != 0)
        fail(s, "cannot look it up in store %s: %s", s->store, ebb_strerror(rc));
}

void ebb__daemon_workdir_seal(struct ebb__daemon *d, const char *store, const char *sha,
                              uint64_t size, const char *tar)
{
    if (d->workdir_seals == NULL &&
        (d->workdir_seals = calloc(1, sizeof(*d->workdir_seals))) == NULL) {
        ebb__error("workdir %s: out of memory", sha);
        unlink(tar);
        return;
    }
    prune(d);
    struct ebb__workdir_seals *w = d->workdir_seals;
    struct seal *old = find(d, store, sha);
    if (old != NULL && old->state != FAILED) { /* sealed or sealing already */
        unlink(tar);
        return;
    }
    if (old != NULL) {
        unlink_seal(w, old);
        seal_free(old);
    }
    struct seal *s = calloc(1, sizeof(*s));
    char *spool = tar ? ebb_strfmt("%s", tar) : NULL;
    char *slash = spool ? strrchr(spool, '/') : NULL;
    if (s != NULL && slash != NULL) {
        *slash = '\0';
        s->fd = -1;
        s->d = d;
        s->store = ebb_strfmt("%s", store);
        s->tar = ebb_strfmt("%s/seal-%llu.tar", spool, (unsigned long long)++w->serial);
        s->sealed = ebb_strfmt("%s/seal-%llu.sealed.part", spool,
                               (unsigned long long)w->serial);
    }
    free(spool);
    if (s == NULL || s->store == NULL || s->tar == NULL || s->sealed == NULL) {
        ebb__error("workdir %s: out of memory", sha);
        unlink(tar);
        if (s != NULL)
            seal_free(s);
        return;
    }
    snprintf(s->sha, sizeof(s->sha), "%s", sha);
    s->size = size;
    s->state = SEALING;
    s->next = w->list;
    w->list = s;
    s->work.data = s;
    int rc = rename(tar, s->tar) != 0 ? EBB_EIO : 0;
    if (rc != 0) {
        fail(s, "cannot take the spooled tar: %s", strerror(errno));
        unlink(tar);
    }
    else if (ebb__daemon_workdir_key(d, sha, &s->key) != 0)
        fail(s, "cannot get its key (see ebbd's log)");
    else if ((rc = uv_queue_work(&d->loop, &s->work, seal_work, after_seal)) != 0)
        fail(s, "cannot seal it: %s", uv_strerror(rc));
}

int ebb__daemon_workdir_answer(struct ebb__daemon *d, struct ebb__api_call *call,
                               const char *store, const char *sha, uint64_t size)
{
    if (d->workdir_seals != NULL)
        prune(d);
    struct seal *s = find(d, store, sha);
    if (s != NULL && s->size == size) {
        static const char *const names[] = {"sealing", "stored", "failed"};
        json_t *r = json_pack("{s:b,s:I,s:s}", "needed", 0, "offset", (json_int_t)size,
                              "state", names[s->state]);
        if (r != NULL && s->state == FAILED)
            json_object_set_new(r, "reason", json_string(s->reason));
        if (s->state == FAILED) { /* answered once: the next begin tries again */
            unlink_seal(d->workdir_seals, s);
            seal_free(s);
        }
        ebb__api_reply(call, r);
        return 1;
    }
    int64_t have = 0, stored_size = 0;
    int rc = ebb__store_workdir_stored(d->store, store, sha, &have, &stored_size);
    if (rc == 0 && (uint64_t)have == size) {
        /* Found in use: the sweep of unused tars counts from now. */
        if (ebb__store_workdir_touch(d->store, store, sha, ebb__daemon_wall_ms()) != 0)
            ebb__warn("workdir %.12s: cannot note its use: %s", sha,
                      ebb__store_errmsg(d->store));
        ebb__api_reply(call, json_pack("{s:b,s:I,s:s}", "needed", 0, "offset",
                                       (json_int_t)size, "state", "stored"));
        return 1;
    }
    if (rc != 0 && rc != EBB_ENOTFOUND) {
        ebb__api_fail(call, "internal", "cannot read the store: %s",
                      ebb__store_errmsg(d->store));
        return 1;
    }
    return 0;
}

int ebb__daemon_workdir_job_doc(struct ebb__daemon *d, struct ebb__job *job, json_t *doc)
{
    struct ebb__job_workdir w;
    int rc = ebb__store_job_workdir_get(d->store, ebb__engine_job_id(job), &w);
    if (rc == EBB_ENOTFOUND)
        return 0;
    if (rc != 0)
        return rc;
    const struct ebb__store_cfg *sc = ebb__daemon_store_cfg(d, w.store);
    struct ebb__objstore *st = ebb__daemon_objstore(d, w.store);
    if (sc == NULL || st == NULL) {
        ebb__error("job %s: its workdir is in store %s, which ebb.yaml no longer has",
                   ebb__engine_job_id(job), w.store);
        return EBB_ENOTFOUND;
    }
    char *key = object_key(w.sha256), *url = NULL;
    if (key != NULL && sc->kind == EBB__OBJSTORE_FILE) {
        char *path = ebb__ckpt_file_path(d, w.store, key);
        url = path ? ebb_strfmt("file://%s", path) : NULL;
        free(path);
    } else if (key != NULL) {
        rc = ebb__objstore_presign(st, EBB__PRESIGN_GET, key, NULL, 0, EBB__CKPT_URL_TTL_S,
                                   &url);
    }
    free(key);
    if (url == NULL)
        return rc != 0 ? rc : EBB_ENOMEM;
    struct ebb__ckpt_key k;
    rc = ebb__daemon_workdir_key(d, w.sha256, &k);
    char hex[EBB__CKPT_KEY_HEX_SIZE];
    json_t *a = NULL;
    if (rc == 0) {
        ebb__ckpt_key_to_hex(&k, hex);
        ebb__ckpt_key_wipe(&k);
        a = json_pack("{s:s,s:s,s:I,s:I,s:s}", "url", url, "sha256", w.sha256, "size",
                      (json_int_t)w.size, "stored_size", (json_int_t)w.stored_size,
                      "key", hex);
        OPENSSL_cleanse(hex, sizeof(hex));
    }
    free(url);
    if (rc != 0)
        return rc;
    /* A checkpoint.dir below the directory ebb submit ran in (a relative
     * one in the spec, resolved there at submit) is the job's own: sent
     * relative, for the agent to put below the workdir it unpacks. */
    const char *wd = json_string_value(json_object_get(doc, "workdir"));
    json_t *ck = json_object_get(doc, "checkpoint");
    const char *dir = json_string_value(json_object_get(ck, "dir"));
    size_t n = wd != NULL ? strlen(wd) : 0;
    if (n > 1 && dir != NULL && strncmp(dir, wd, n) == 0 && dir[n] == '/' &&
        dir[n + 1] != '\0' &&
        json_object_set_new(ck, "dir", json_string(dir + n + 1)) != 0) {
        json_decref(a);
        return EBB_ENOMEM;
    }
    return a != NULL && json_object_set_new(doc, "workdir_archive", a) == 0 ? 0
                                                                          : EBB_ENOMEM;
}

int ebb__daemon_workdir_sealing(struct ebb__daemon *d, const char *store, const char *sha)
{
    const struct seal *s = find(d, store, sha);
    return s != NULL && s->state == SEALING;
}

void ebb__daemon_workdir_seals_free(struct ebb__daemon *d)
{
    struct ebb__workdir_seals *w = d->workdir_seals;
    while (w != NULL && w->list != NULL) {
        struct seal *s = w->list;
        w->list = s->next;
        seal_free(s);
    }
    free(w);
    d->workdir_seals = NULL;
}
