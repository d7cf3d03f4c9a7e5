/* file:// stores: a directory on a disk the instances share (or ebbd's
 * own), with the same operations as a bucket. Keys are paths below the
 * directory (checked: no empty, '.' or '..' part). Each operation runs on
 * libuv's thread pool, since a large copy or an fsync() would block the
 * loop, and completes on the loop.
 *
 * A put is durable and atomic: the bytes go to a temporary file beside
 * the target (".ebb-tmp.NAME.XXXXXX", which listings skip), which is
 * fsync()ed and renamed over the target, and the directory is fsync()ed
 * so that the rename survives a crash. Readers see the old object or the
 * whole new one. Copies go through one EBB__OBJSTORE_HASH_BUF buffer.
 */
#include "objstore/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ebb/buf.h>

#include "base/str.h"

#define TMP_PREFIX ".ebb-tmp."
#define LIST_DEPTH_MAX 32

enum fop_kind { F_PUT, F_GET, F_HEAD, F_DELETE, F_LIST };

struct fop {
    uv_work_t work;
    enum fop_kind kind;
    ebb__objstore_cb cb;
    void *arg;
    char *root; /* the store's directory */
    char *path; /* root + "/" + key; list: the prefix asked for */
    int fd;
    int64_t offset, len, fd_offset;
    size_t max;
    /* What the work found. */
    int status;
    const char *code; /* S3's name for the error, as the s3 path reports */
    char message[320];
    int64_t size;
    char etag[64];
    struct ebb__objstore_entry *v;
    size_t n, cap;
};

static void fail(struct fop *f, int status, const char *what, int err)
{
    f->status = status;
    snprintf(f->message, sizeof(f->message), "%s %s: %s", what, f->path,
             err != 0 ? strerror(err) : "failed");
}

/* Opens the directory that holds f->path's object, walking down from the
 * root one component at a time and following no link: directories below
 * the root may belong to a job's user (ebbd makes a job's own for its
 * agent), who could swap one for a link to anywhere else ebbd may write.
 * With `create` missing directories are made (0700). Returns the
 * directory's descriptor with *leaf the object's name in it, or -1 after
 * fail() (EBB_ENOTFOUND when a directory is missing). */
static int open_parent(struct fop *f, int create, const char **leaf)
{
    int dir = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) {
        fail(f, EBB_EIO, "cannot open the store's directory for", errno);
        return -1;
    }
    char *p = f->path + strlen(f->root) + 1;
    for (char *slash; (slash = strchr(p, '/')) != NULL; p = slash + 1) {
        *slash = '\0';
        int err = 0;
        if (create && mkdirat(dir, p, 0700) != 0 && errno != EEXIST)
            err = errno;
        int next = err ? -1 : openat(dir, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && err == 0)
            err = errno;
        *slash = '/';
        close(dir);
        if (next < 0) {
            fail(f, err == ENOENT ? EBB_ENOTFOUND : EBB_EIO,
                 "cannot open a directory (not a link) above", err);
            f->code = err == ENOENT ? "NoSuchKey" : "";
            return -1;
        }
        dir = next;
    }
    *leaf = p;
    return dir;
}

/* Copies `len` bytes (len < 0: to the end) from `in` at `in_off` to `out`
 * at `out_off`; returns the bytes copied or -errno. */
static int64_t copy_range(int in, int64_t in_off, int out, int64_t out_off,
                          int64_t len)
{
    char *buf = malloc(EBB__OBJSTORE_HASH_BUF);
    if (buf == NULL)
        return -ENOMEM;
    int64_t done = 0;
    int64_t rc = 0;
    while (len < 0 || done < len) {
        size_t want = EBB__OBJSTORE_HASH_BUF;
        if (len >= 0 && len - done < (int64_t)want)
            want = (size_t)(len - done);
        ssize_t n = pread(in, buf, want, (off_t)(in_off + done));
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0) {
            rc = len < 0 ? 0 : -EIO; /* the source is shorter than said */
            break;
        }
        for (ssize_t w = 0; w < n;) {
            ssize_t k = pwrite(out, buf + w, (size_t)(n - w),
                               (off_t)(out_off + done + w));
            if (k <= 0) {
                rc = k < 0 ? -errno : -EIO;
                break;
            }
            w += k;
        }
        if (rc != 0)
            break;
        done += n;
    }
    free(buf);
    return rc != 0 ? rc : done;
}

/* A file's ETag: its size and modification time, which change with every
 * put (a digest would mean reading it all again). */
static void set_etag(struct fop *f, const struct stat *st)
{
    snprintf(f->etag, sizeof(f->etag), "\"%llx-%llx.%lx\"",
             (unsigned long long)st->st_size, (unsigned long long)st->st_mtim.tv_sec,
             (long)st->st_mtim.tv_nsec);
}

/* A new temporary file beside the target in `dir`: ".ebb-tmp.LEAF.N". */
static int temp_file(int dir, const char *leaf, char *name, size_t len)
{
    static unsigned counter;
    for (int tries = 0; tries < 16; tries++) {
        snprintf(name, len, TMP_PREFIX "%s.%ld.%u", leaf, (long)getpid(),
                 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
        int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

static void do_put(struct fop *f)
{
    const char *leaf = NULL;
    int dir = open_parent(f, 1, &leaf);
    if (dir < 0)
        return;
    char tmp[NAME_MAX + 1];
    int out = strlen(leaf) + 48 < sizeof(tmp) ? temp_file(dir, leaf, tmp, sizeof(tmp)) : -1;
    if (out < 0) {
        fail(f, EBB_EIO, "cannot create a temporary file for", errno ? errno : ENAMETOOLONG);
        close(dir);
        return;
    }
    int64_t n = copy_range(f->fd, f->offset, out, 0, f->len);
    int err = n < 0 ? (int)-n : 0;
    if (err == 0 && fsync(out) != 0)
        err = errno;
    if (close(out) != 0 && err == 0)
        err = errno;
    if (err == 0 && renameat(dir, tmp, dir, leaf) != 0)
        err = errno;
    if (err != 0) {
        unlinkat(dir, tmp, 0);
        fail(f, EBB_EIO, "cannot write", err);
    } else {
        /* The rename is durable once its directory is. */
        if (fsync(dir) != 0)
            fail(f, EBB_EIO, "cannot sync the directory of", errno);
        f->size = n;
        struct stat st;
        if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
            set_etag(f, &st);
    }
    close(dir);
}

static int open_object(struct fop *f, struct stat *st)
{
    const char *leaf = NULL;
    int dir = open_parent(f, 0, &leaf);
    if (dir < 0)
        return -1;
    int fd = openat(dir, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int open_err = errno;
    close(dir);
    errno = open_err;
    if (fd < 0) {
        int err = errno;
        fail(f, err == ENOENT ? EBB_ENOTFOUND : EBB_EIO, "cannot open", err);
        f->code = err == ENOENT ? "NoSuchKey" : "";
        return -1;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        fail(f, EBB_ENOTFOUND, "not an object:", 0);
        close(fd);
        return -1;
    }
    return fd;
}

static void do_get(struct fop *f)
{
    struct stat st;
    int in = open_object(f, &st);
    if (in < 0)
        return;
    int64_t size = (int64_t)st.st_size;
    if (f->offset > 0 && f->offset >= size) {
        fail(f, EBB_EINVAL, "the range starts past the end of", 0);
        f->code = "InvalidRange";
    } else {
        int64_t len = f->len < 0 || f->offset + f->len > size ? size - f->offset : f->len;
        int64_t n = copy_range(in, f->offset, f->fd, f->fd_offset, len);
        if (n < 0)
            fail(f, EBB_EIO, "cannot copy", (int)-n);
        else
            f->size = n;
    }
    close(in);
}

static void do_head(struct fop *f)
{
    struct stat st;
    int fd = open_object(f, &st);
    if (fd >= 0) {
        f->size = (int64_t)st.st_size;
        set_etag(f, &st);
        close(fd);
    }
}

static void do_delete(struct fop *f)
{
    const char *leaf = NULL;
    int dir = open_parent(f, 0, &leaf);
    if (dir < 0) {
        if (f->status == EBB_ENOTFOUND) { /* a missing key is not an error */
            f->status = 0;
            f->code = "";
            f->message[0] = '\0';
        }
        return;
    }
    if (unlinkat(dir, leaf, 0) != 0 && errno != ENOENT)
        fail(f, EBB_EIO, "cannot delete", errno);
    close(dir);
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct ebb__objstore_entry *)a)->key,
                  ((const struct ebb__objstore_entry *)b)->key);
}

static int add_entry(struct fop *f, const char *key, int64_t size)
{
    if (f->n == f->max) {
        f->status = EBB_EIO;
        snprintf(f->message, sizeof(f->message),
                 "more than %zu keys under the prefix", f->max);
        return -1;
    }
    struct ebb__objstore_entry *v = ebb__grow(f->v, &f->cap, f->n, sizeof(*v), 64);
    if (v == NULL) {
        f->status = EBB_ENOMEM;
        return -1;
    }
    f->v = v;
    f->v[f->n] = (struct ebb__objstore_entry){.key = strdup(key), .size = size};
    if (f->v[f->n].key == NULL) {
        f->status = EBB_ENOMEM;
        return -1;
    }
    f->n++;
    return 0;
}

/* Walks `rel` (a key prefix ending in '/' or "") below the root, adding
 * regular files whose key starts with f->path. Links are not followed. */
static int walk(struct fop *f, const char *rel, int depth)
{
    if (depth > LIST_DEPTH_MAX)
        return 0;
    char *dir = ebb_strfmt("%s/%s", f->root, rel);
    DIR *d = dir != NULL ? opendir(dir) : NULL;
    free(dir);
    if (d == NULL)
        return 0; /* a prefix no object has */
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' &&
            (e->d_name[1] == '\0' || strcmp(e->d_name, "..") == 0 ||
             strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0))
            continue;
        char *key = ebb_strfmt("%s%s", rel, e->d_name);
        struct stat st;
        char *full = key != NULL ? ebb_strfmt("%s/%s", f->root, key) : NULL;
        if (full == NULL) {
            f->status = EBB_ENOMEM;
            rc = -1;
        } else if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
            char *sub = ebb_strfmt("%s/", key);
            size_t n = strlen(f->path);
            /* Descend only where the prefix can still match. */
            if (sub == NULL)
                rc = -1;
            else if (strncmp(sub, f->path, n < strlen(sub) ? n : strlen(sub)) == 0)
                rc = walk(f, sub, depth + 1);
            free(sub);
        } else if (S_ISREG(st.st_mode) && strncmp(key, f->path, strlen(f->path)) == 0) {
            rc = add_entry(f, key, (int64_t)st.st_size);
        }
        free(full);
        free(key);
    }
    closedir(d);
    return rc;
}

static void do_list(struct fop *f)
{
    if (walk(f, "", 0) == 0)
        qsort(f->v, f->n, sizeof(*f->v), entry_cmp);
}

static void fop_work(uv_work_t *w)
{
    struct fop *f = w->data;
    switch (f->kind) {
    case F_PUT: do_put(f); break;
    case F_GET: do_get(f); break;
    case F_HEAD: do_head(f); break;
    case F_DELETE: do_delete(f); break;
    case F_LIST: do_list(f); break;
    }
}

static void fop_done(uv_work_t *w, int status)
{
    struct fop *f = w->data;
    struct ebb__objstore_result r = {
        .status = status != 0 ? EBB_ECANCELED : f->status,
        .code = f->code != NULL ? f->code : "", .message = f->message, .etag = f->etag, .upload_id = "",
        .size = f->size, .entries = f->v, .n_entries = f->n, .attempts = 1,
    };
    f->cb(f->arg, &r);
    for (size_t i = 0; i < f->n; i++)
        free(f->v[i].key);
    free(f->v);
    free(f->root);
    free(f->path);
    free(f);
}

static int queue(struct ebb__objstore *st, enum fop_kind kind, const char *key,
                 ebb__objstore_cb cb, void *arg, struct fop **out)
{
    struct fop *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return EBB_ENOMEM;
    f->kind = kind;
    f->cb = cb;
    f->arg = arg;
    f->root = strdup(st->dir);
    f->path = kind == F_LIST ? strdup(key) : ebb_strfmt("%s/%s", st->dir, key);
    f->work.data = f;
    if (f->root == NULL || f->path == NULL) {
        free(f->root);
        free(f->path);
        free(f);
        return EBB_ENOMEM;
    }
    *out = f;
    return 0;
}

static int submit(struct ebb__objstore *st, struct fop *f)
{
    if (uv_queue_work(st->loop, &f->work, fop_work, fop_done) == 0)
        return 0;
    free(f->root);
    free(f->path);
    free(f);
    return EBB_ENOMEM;
}

int ebb__os_file_put(struct ebb__objstore *st, const char *key, int fd,
                     int64_t offset, int64_t len, ebb__objstore_cb cb, void *arg)
{
    struct fop *f;
    int rc = queue(st, F_PUT, key, cb, arg, &f);
    if (rc != 0)
        return rc;
    f->fd = fd;
    f->offset = offset;
    f->len = len;
    return submit(st, f);
}

int ebb__os_file_get(struct ebb__objstore *st, const char *key, int64_t first,
                     int64_t len, int fd, int64_t fd_offset, ebb__objstore_cb cb,
                     void *arg)
{
    struct fop *f;
    int rc = queue(st, F_GET, key, cb, arg, &f);
    if (rc != 0)
        return rc;
    f->fd = fd;
    f->offset = first;
    f->len = len;
    f->fd_offset = fd_offset;
    return submit(st, f);
}

int ebb__os_file_head(struct ebb__objstore *st, const char *key,
                      ebb__objstore_cb cb, void *arg)
{
    struct fop *f;
    int rc = queue(st, F_HEAD, key, cb, arg, &f);
    return rc != 0 ? rc : submit(st, f);
}

int ebb__os_file_delete(struct ebb__objstore *st, const char *key,
                        ebb__objstore_cb cb, void *arg)
{
    struct fop *f;
    int rc = queue(st, F_DELETE, key, cb, arg, &f);
    return rc != 0 ? rc : submit(st, f);
}

int ebb__os_file_list(struct ebb__objstore *st, const char *prefix, size_t max,
                      ebb__objstore_cb cb, void *arg)
{
    struct fop *f;
    int rc = queue(st, F_LIST, prefix, cb, arg, &f);
    if (rc != 0)
        return rc;
    f->max = max;
    return submit(st, f);
}
