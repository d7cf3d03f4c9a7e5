/* Workdirs that `ebb submit` packed: `workdir_put` spools a tar sent in
 * chunks to STATE/spool/<uid>-<sha256>.part, appending only at the offset
 * reached so far, hashing as it goes, and once the last byte is in checks
 * the SHA-256 the client named and renames it <uid>-<sha256>.tar. Each
 * upload belongs to the uid that began it (SO_PEERCRED): every chunk is
 * matched on the caller's uid, so no user writes another's spool. Uploads
 * in progress live in memory only; the spool is emptied when ebbd starts,
 * and keeps at most 4 finished tars per user that no submit took.
 *
 * An upload begun with a `store` is kept in that store once its last
 * chunk verified (daemon_workdir_store.c: sealed, HEAD, PUT), and the
 * client polls the same begin call until it is stored. At submit
 * (ebb__daemon_workdir_submit) a job with a store is accepted only when
 * that store holds the tar named by `workdir_archive`; a job without a
 * store runs in its directory on this machine, with a warning. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>
#include <openssl/evp.h>

#include "base/log.h"
#include "base/paths.h"
#include "base/str.h"
#include "daemon/daemon.h"
#include "daemon/daemon_ckpt.h"
#include "daemon/daemon_workdir.h"
#include "io/workdir_tar.h"
#include "store/store_workdir.h"

/* Uploads at once, per user and in all. */
#define UPLOADS_PER_UID 4
#define UPLOADS_MAX 32
/* The largest chunk decoded: what fits a 1 MiB request in base64. */
#define CHUNK_MAX (768 * 1024)

struct upload {
    uid_t uid;
    char sha[65];
    uint64_t size, offset;
    char *store;            /* the store to keep it in; NULL: none named */
    int fd;
    EVP_MD_CTX *hash;
    struct ebb_list node;
};

struct ebb__daemon_workdirs {
    char *spool;            /* STATE/spool */
    struct ebb_list uploads; /* struct upload */
    size_t n;
};

static void upload_free(struct ebb__daemon_workdirs *w, struct upload *u, const char *unlink_path)
{
    ebb_list_remove(&u->node);
    w->n--;
    if (u->fd >= 0)
        close(u->fd);
    if (unlink_path != NULL)
        unlink(unlink_path);
    EVP_MD_CTX_free(u->hash);
    free(u->store);
    free(u);
}

/* STATE/spool emptied: what a previous ebbd spooled is no upload of ours. */
static void empty_spool(const char *spool)
{
    DIR *dir = opendir(spool);
    struct dirent *de;
    while (dir != NULL && (de = readdir(dir)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len > 4 && (strcmp(de->d_name + len - 4, ".tar") == 0 ||
                        (len > 5 && strcmp(de->d_name + len - 5, ".part") == 0)))
            unlinkat(dirfd(dir), de->d_name, 0);
    }
    if (dir != NULL)
        closedir(dir);
}

int ebb__daemon_workdirs_open(struct ebb__daemon *d, char *err, size_t len)
{
    struct ebb__daemon_workdirs *w = calloc(1, sizeof(*w));
    if (w == NULL || (w->spool = ebb__path_join(d->state_dir, "spool")) == NULL) {
        free(w);
        snprintf(err, len, "out of memory");
        return EBB_ENOMEM;
    }
    ebb_list_init(&w->uploads);
    if (ebb__mkdir_p(w->spool, err, len) != 0 || chmod(w->spool, 0700) != 0) {
        if (err[0] == '\0')
            snprintf(err, len, "%s: %s", w->spool, strerror(errno));
        free(w->spool);
        free(w);
        return EBB_EIO;
    }
    empty_spool(w->spool);
    d->workdirs = w;
    return 0;
}

void ebb__daemon_workdirs_close(struct ebb__daemon *d)
{
    struct ebb__daemon_workdirs *w = d->workdirs;
    if (w == NULL)
        return;
    while (!ebb_list_empty(&w->uploads))
        upload_free(w, ebb_list_entry(ebb_list_first(&w->uploads), struct upload, node),
                    NULL);
    free(w->spool);
    free(w);
    d->workdirs = NULL;
}

static char *spool_path(const struct ebb__daemon_workdirs *w, uid_t uid, const char *sha,
                        const char *ext)
{
    return ebb_strfmt("%s/%ld-%s.%s", w->spool, (long)uid, sha, ext);
}

/* 64 lowercase hex digits. */
static int sha_ok(const char *s)
{
    if (s == NULL || strlen(s) != 64)
        return 0;
    for (size_t i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* sha256 and size of params, checked; 0 or fails the call. */
static int read_id(struct ebb__api_call *call, const char **sha, uint64_t *size)
{
    *sha = json_string_value(json_object_get(call->params, "sha256"));
    json_t *sz = json_object_get(call->params, "size");
    if (!sha_ok(*sha) || !json_is_integer(sz) || json_integer_value(sz) <= 0 ||
        (uint64_t)json_integer_value(sz) > EBB__WORKDIR_MAX_BYTES) {
        ebb__api_fail(call, "bad_request", "workdir: \"sha256\" (64 lowercase hex digits) "
                      "and \"size\" (1 to %llu bytes) are required",
                      (unsigned long long)EBB__WORKDIR_MAX_BYTES);
        return -1;
    }
    *size = (uint64_t)json_integer_value(sz);
    return 0;
}

static struct upload *find(struct ebb__daemon_workdirs *w, uid_t uid, const char *sha,
                           size_t *of_uid)
{
    struct upload *found = NULL;
    struct ebb_list *pos;
    *of_uid = 0;
    ebb_list_foreach(pos, &w->uploads) {
        struct upload *u = ebb_list_entry(pos, struct upload, node);
        if (u->uid != uid)
            continue;
        (*of_uid)++;
        if (strcmp(u->sha, sha) == 0)
            found = u;
    }
    return found;
}

/* Keeps at most UPLOADS_PER_UID finished tars of `uid` in the spool (ones
 * a submit never took, as when ebbd refused the job): the oldest go. */
static void bound_finished(const struct ebb__daemon_workdirs *w, uid_t uid)
{
    char prefix[32];
    int plen = snprintf(prefix, sizeof(prefix), "%ld-", (long)uid);
    for (int round = 0; round < 64; round++) {
        DIR *dir = opendir(w->spool);
        if (dir == NULL)
            return;
        struct dirent *de;
        char oldest[128] = "";
        time_t oldest_at = 0;
        int n = 0;
        while ((de = readdir(dir)) != NULL) {
            size_t len = strlen(de->d_name);
            struct stat st;
            if (strncmp(de->d_name, prefix, (size_t)plen) != 0 || len < 5 ||
                strcmp(de->d_name + len - 4, ".tar") != 0 || len >= sizeof(oldest) ||
                fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue;
            n++;
            if (oldest[0] == '\0' || st.st_mtime < oldest_at) {
                oldest_at = st.st_mtime;
                snprintf(oldest, sizeof(oldest), "%s", de->d_name);
            }
        }
        if (n >= UPLOADS_PER_UID)
            unlinkat(dirfd(dir), oldest, 0);
        closedir(dir);
        if (n < UPLOADS_PER_UID)
            return;
    }
}

/* workdir_put without "data": begins (or begins again) an upload, unless
 * ebbd does not want it: it holds it already, or it has no store to keep
 * it in (the job then runs in its directory on this machine). With a
 * `store`, a tar ebbd seals or that store holds is answered with its
 * state (ebb__daemon_workdir_answer), which is how the client polls. */
static void begin(struct ebb__daemon *d, struct ebb__api_call *call, const char *sha,
                  uint64_t size, const char *store)
{
    struct ebb__daemon_workdirs *w = d->workdirs;
    if (store != NULL && ebb__daemon_workdir_answer(d, call, store, sha, size))
        return;
    char *done = spool_path(w, call->uid, sha, "tar");
    struct stat st;
    int have = done != NULL && stat(done, &st) == 0 && (uint64_t)st.st_size == size;
    if (have && store != NULL) { /* spooled before, for no store: keep it now */
        ebb__daemon_workdir_seal(d, store, sha, size, done);
        free(done);
        ebb__api_reply(call, json_pack("{s:b,s:I,s:s}", "needed", 0, "offset",
                                       (json_int_t)size, "state", "sealing"));
        return;
    }
    free(done);
    if (have || d->config->n_stores == 0) {
        ebb__api_reply(call, json_pack("{s:b,s:I}", "needed", 0, "offset", (json_int_t)size));
        return;
    }
    bound_finished(w, call->uid);
    size_t of_uid;
    struct upload *u = find(w, call->uid, sha, &of_uid);
    char *part = spool_path(w, call->uid, sha, "part");
    if (u != NULL) /* begun again: from the start */
        upload_free(w, u, NULL);
    else if (of_uid >= UPLOADS_PER_UID || w->n >= UPLOADS_MAX) {
        free(part);
        ebb__api_fail(call, "busy", "workdir: %s uploads are in progress; try again "
                      "once they end", of_uid >= UPLOADS_PER_UID ? "4 of your" : "32");
        return;
    }
    u = calloc(1, sizeof(*u));
    if (u != NULL) {
        u->fd = -1;
        u->hash = EVP_MD_CTX_new();
        u->store = store != NULL ? strdup(store) : NULL;
    }
    if (u == NULL || part == NULL || u->hash == NULL ||
        (store != NULL && u->store == NULL) ||
        EVP_DigestInit_ex(u->hash, EVP_sha256(), NULL) != 1 ||
        (u->fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                      0600)) < 0) {
        ebb__api_fail(call, "internal", "workdir: cannot spool %s: %s",
                      part ? part : "(out of memory)", strerror(errno));
        if (u != NULL) {
            if (u->fd >= 0)
                close(u->fd);
            EVP_MD_CTX_free(u->hash);
            free(u->store);
        }
        free(u);
        free(part);
        return;
    }
    u->uid = call->uid;
    snprintf(u->sha, sizeof(u->sha), "%s", sha);
    u->size = size;
    ebb_list_insert_head(&w->uploads, &u->node);
    w->n++;
    free(part);
    ebb__api_reply(call, json_pack("{s:b,s:I}", "needed", 1, "offset", (json_int_t)0));
}

/* The last chunk is in: the hash must be the one named. An upload for a
 * store goes on to be sealed into it. */
static int finish(struct ebb__daemon *d, struct upload *u, char *why, size_t len)
{
    struct ebb__daemon_workdirs *w = d->workdirs;
    unsigned char sum[32];
    unsigned int n = 0;
    char hex[65];
    EVP_DigestFinal_ex(u->hash, sum, &n);
    for (size_t i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", sum[i]);
    char *part = spool_path(w, u->uid, u->sha, "part");
    char *done = spool_path(w, u->uid, u->sha, "tar");
    int rc = 0;
    if (part == NULL || done == NULL) {
        rc = EBB_ENOMEM;
        snprintf(why, len, "out of memory");
    } else if (strcmp(hex, u->sha) != 0) {
        rc = EBB_EINVAL;
        snprintf(why, len, "workdir: the bytes sent have SHA-256 %s, not %s", hex, u->sha);
    } else if (fsync(u->fd) != 0 || rename(part, done) != 0) {
        rc = EBB_EIO;
        snprintf(why, len, "workdir: cannot keep %s: %s", done, strerror(errno));
    }
    if (rc == 0)
        ebb__info("workdir %s spooled for uid %ld: %llu bytes", u->sha, (long)u->uid,
                  (unsigned long long)u->size);
    if (rc == 0 && u->store != NULL)
        ebb__daemon_workdir_seal(d, u->store, u->sha, u->size, done);
    upload_free(w, u, rc != 0 ? part : NULL);
    free(part);
    free(done);
    return rc;
}

static void chunk(struct ebb__daemon *d, struct ebb__api_call *call, const char *sha,
                  uint64_t size)
{
    struct ebb__daemon_workdirs *w = d->workdirs;
    size_t of_uid;
    struct upload *u = find(w, call->uid, sha, &of_uid);
    json_t *off = json_object_get(call->params, "offset");
    const char *data = json_string_value(json_object_get(call->params, "data"));
    size_t b64 = data ? strlen(data) : 0;
    if (u == NULL) {
        ebb__api_fail(call, "bad_request", "workdir: no upload of %.12s is in progress "
                      "for you (begin it with workdir_put {sha256, size})", sha);
        return;
    }
    if (!json_is_integer(off) || (uint64_t)json_integer_value(off) != u->offset ||
        size != u->size) {
        ebb__api_fail(call, "bad_request", "workdir: expected the chunk at offset %llu "
                      "of %llu bytes", (unsigned long long)u->offset,
                      (unsigned long long)u->size);
        return;
    }
    static unsigned char raw[CHUNK_MAX + 3];
    int n = b64 > 0 && b64 % 4 == 0 && b64 / 4 * 3 <= CHUNK_MAX
                ? EVP_DecodeBlock(raw, (const unsigned char *)data, (int)b64)
                : -1;
    if (n > 0) /* EVP_DecodeBlock counts the padding as bytes */
        n -= (data[b64 - 1] == '=') + (data[b64 - 2] == '=');
    if (n <= 0 || (uint64_t)n > u->size - u->offset) {
        ebb__api_fail(call, "bad_request", "workdir: \"data\" must be base64 of 1 to %d "
                      "bytes, none past the size", CHUNK_MAX);
        return;
    }
    if (pwrite(u->fd, raw, (size_t)n, (off_t)u->offset) != n) {
        ebb__api_fail(call, "internal", "workdir: cannot spool: %s", strerror(errno));
        char *part = spool_path(w, u->uid, u->sha, "part");
        upload_free(w, u, part);
        free(part);
        return;
    }
    EVP_DigestUpdate(u->hash, raw, (size_t)n);
    u->offset += (uint64_t)n;
    uint64_t reached = u->offset;
    char why[256];
    int rc = reached == u->size ? finish(d, u, why, sizeof(why)) : 0;
    if (rc != 0) {
        ebb__api_fail(call, rc == EBB_EINVAL ? "invalid" : "internal", "%s", why);
        return;
    }
    ebb__api_reply(call, json_pack("{s:I}", "offset", (json_int_t)reached));
}

void ebb__api_workdir_put(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    const char *sha;
    uint64_t size;
    if (read_id(call, &sha, &size) != 0)
        return;
    json_t *st = json_object_get(call->params, "store");
    const char *store = json_string_value(st);
    if (st != NULL && (store == NULL || ebb__daemon_objstore(d, store) == NULL)) {
        ebb__api_fail(call, "bad_request", "workdir: \"store\" must name a store of "
                      "ebb.yaml's stores: (%s is not one)", store ? store : "a non-string");
        return;
    }
    if (json_object_get(call->params, "data") == NULL)
        begin(d, call, sha, size, store);
    else
        chunk(d, call, sha, size);
}

/* A job with a store: the store must hold the tar (ebb submit stored it
 * before submitting), and *stored becomes the job's row. */
static int stored_archive(struct ebb__daemon *d, struct ebb__api_call *call,
                          const struct ebb__job_spec *spec, const char *sha,
                          json_t *size, struct ebb__job_workdir *stored)
{
    const char *store = spec->checkpoint.store;
    int64_t have = 0, stored_size = 0;
    int rc = ebb__store_workdir_stored(d->store, store, sha, &have, &stored_size);
    if (rc != 0 && rc != EBB_ENOTFOUND) {
        ebb__api_fail(call, "internal", "cannot read the store: %s",
                      ebb__store_errmsg(d->store));
        return -1;
    }
    if (rc != 0 || !json_is_integer(size) || json_integer_value(size) != have ||
        strlen(store) >= sizeof(stored->store)) {
        ebb__api_fail(call, "invalid", "%s:%d: workdir: store %s does not hold the packed "
                      "workdir %.12s; submit with ebb submit, which stores it first",
                      spec->file, spec->workdir_line, store, sha);
        return -1;
    }
    snprintf(stored->store, sizeof(stored->store), "%s", store);
    snprintf(stored->sha256, sizeof(stored->sha256), "%s", sha);
    stored->size = have;
    stored->stored_size = stored_size;
    return 0;
}

int ebb__daemon_workdir_submit(struct ebb__daemon *d, struct ebb__api_call *call,
                               const struct ebb__job_spec *spec, const char *dir,
                               json_t *warnings, struct ebb__job_workdir *stored)
{
    json_t *a = json_object_get(call->params, "workdir_archive");
    stored->store[0] = '\0';
    if (spec->workdir_src == NULL)
        return 0;
    const char *sha = json_string_value(json_object_get(a, "sha256"));
    if (!sha_ok(sha) || dir == NULL || dir[0] != '/') {
        ebb__api_fail(call, "bad_request", "%s: the spec has workdir: but the submit "
                      "names no packed workdir (\"workdir_archive\" {sha256, size} and "
                      "an absolute \"workdir\"; submit with ebb submit)", spec->file);
        return -1;
    }
    /* The job's instances, wherever they run, fetch the tar from its
     * store (the job document's workdir_archive). */
    if (spec->checkpoint.store != NULL)
        return stored_archive(d, call, spec, sha, json_object_get(a, "size"), stored);
    /* The job has no store to keep the tar in: it runs in the directory
     * it was packed from, which only instances on this machine reach. The
     * spooled tar is not needed. */
    char *done = spool_path(d->workdirs, call->uid, sha, "tar");
    if (done != NULL)
        unlink(done);
    free(done);
    char *w = ebb_strfmt("%s:%d: workdir: the job has no checkpoint store to keep its "
                         "packed workdir in, so it runs in %s itself, which only "
                         "instances that share this machine's disk reach (the local "
                         "provider); name a store in checkpoint.store for instances "
                         "elsewhere", spec->file, spec->workdir_line, dir);
    if (w == NULL || json_array_append_new(warnings, json_string(w)) != 0) {
        free(w);
        ebb__api_fail(call, "internal", "out of memory");
        return -1;
    }
    free(w);
    return 0;
}
