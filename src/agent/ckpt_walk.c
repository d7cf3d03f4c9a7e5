/* Walking and unstaging a checkpoint (see ckpt_walk.h). */
#include "agent/ckpt_walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/str.h"

struct walk {
    struct ebb__ckpt_manifest *m;
    size_t cap;
    char *why;
    size_t len;
};

static int add_file(struct walk *w, const char *path, uint64_t size)
{
    const char *bad = NULL;
    if (ebb__ckpt_path_check(path, &bad) != 0) {
        snprintf(w->why, w->len, "%s: %s", path, bad);
        return EBB_EINVAL;
    }
    if (w->m->n_files >= EBB__CKPT_FILES_MAX) {
        snprintf(w->why, w->len, "more than %d files", EBB__CKPT_FILES_MAX);
        return EBB_EINVAL;
    }
    struct ebb__ckpt_manifest_file *v =
        ebb__grow(w->m->files, &w->cap, w->m->n_files, sizeof(*v), 64);
    char *p = ebb_strfmt("%s", path);
    if (v == NULL || p == NULL) {
        free(p);
        snprintf(w->why, w->len, "out of memory");
        return EBB_ENOMEM;
    }
    w->m->files = v;
    v[w->m->n_files++] = (struct ebb__ckpt_manifest_file){.path = p, .size = size};
    return 0;
}

static int refuse_type(struct walk *w, const char *path, mode_t mode)
{
    snprintf(w->why, w->len, "%s is %s; a stored checkpoint holds only regular "
             "files and directories", path,
             S_ISLNK(mode) ? "a symbolic link" : "not a regular file");
    return EBB_EINVAL;
}

/* Adds every regular file below the directory `fd` (whose path in the
 * checkpoint is `prefix`, "" at the top). */
static int walk_dir(struct walk *w, int fd, const char *prefix, int depth)
{
    if (depth >= AGENT_WALK_DEPTH_MAX) {
        snprintf(w->why, w->len, "%s: directories nest deeper than %d", prefix,
                 AGENT_WALK_DEPTH_MAX);
        return EBB_EINVAL;
    }
    int dfd = dup(fd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (d == NULL) {
        if (dfd >= 0)
            close(dfd);
        snprintf(w->why, w->len, "%s: %s", prefix[0] ? prefix : ".", strerror(errno));
        return EBB_EIO;
    }
    rewinddir(d);
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *path = prefix[0] ? ebb_strfmt("%s/%s", prefix, e->d_name)
                               : ebb_strfmt("%s", e->d_name);
        if (path == NULL) {
            rc = EBB_ENOMEM;
            snprintf(w->why, w->len, "out of memory");
            break;
        }
        struct stat st;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            snprintf(w->why, w->len, "%s: %s", path, strerror(errno));
            rc = EBB_EIO;
        } else if (S_ISREG(st.st_mode)) {
            rc = add_file(w, path, (uint64_t)st.st_size);
        } else if (S_ISDIR(st.st_mode)) {
            int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                snprintf(w->why, w->len, "%s: %s", path, strerror(errno));
                rc = EBB_EIO;
            } else {
                rc = walk_dir(w, sub, path, depth + 1);
                close(sub);
            }
        } else {
            rc = refuse_type(w, path, st.st_mode);
        }
        free(path);
    }
    closedir(d);
    return rc;
}

int agent_ckpt_walk(int dirfd, const char *name, struct ebb__ckpt_manifest *m,
                    char *why, size_t len)
{
    *m = (struct ebb__ckpt_manifest){0};
    struct walk w = {.m = m, .why = why, .len = len};
    const char *bad = NULL;
    if (ebb__ckpt_name_check(name, &bad) != 0 || ebb__strlcpy(m->name, name, sizeof(m->name))) {
        snprintf(why, len, "checkpoint name \"%.64s\": %s", name, bad ? bad : "too long");
        return EBB_EINVAL;
    }
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        snprintf(why, len, "%s: %s", name, strerror(errno));
        return EBB_EIO;
    }
    int rc;
    if (S_ISREG(st.st_mode)) {
        m->kind = EBB__CKPT_KIND_FILE;
        rc = add_file(&w, name, (uint64_t)st.st_size);
    } else if (S_ISDIR(st.st_mode)) {
        m->kind = EBB__CKPT_KIND_DIRECTORY;
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            snprintf(why, len, "%s: %s", name, strerror(errno));
            return EBB_EIO;
        }
        rc = walk_dir(&w, fd, "", 0);
        close(fd);
        if (rc == 0 && m->n_files == 0) {
            snprintf(why, len, "%s is an empty directory", name);
            rc = EBB_EINVAL;
        }
    } else {
        rc = refuse_type(&w, name, st.st_mode);
    }
    if (rc == 0)
        ebb__ckpt_manifest_sort(m);
    else
        ebb__ckpt_manifest_clear(m);
    return rc;
}

int agent_open_beneath(int dirfd, const char *path)
{
    char *copy = ebb_strfmt("%s", path);
    if (copy == NULL)
        return -ENOMEM;
    int fd = dirfd, rc = 0;
    char *save = NULL;
    char *part = strtok_r(copy, "/", &save);
    while (part != NULL) {
        char *next = strtok_r(NULL, "/", &save);
        int flags = O_NOFOLLOW | O_CLOEXEC | (next ? O_RDONLY | O_DIRECTORY
                                                   : O_RDONLY | O_NONBLOCK);
        int nfd = openat(fd, part, flags);
        int err = errno;
        if (fd != dirfd)
            close(fd);
        if (nfd < 0) {
            rc = err == ENOTDIR && next ? -ELOOP : -err;
            fd = -1;
            break;
        }
        fd = nfd;
        part = next;
    }
    free(copy);
    if (rc != 0)
        return rc;
    struct stat st;
    if (fd == dirfd || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd != dirfd)
            close(fd);
        return -EINVAL;
    }
    /* Reads block normally from here on. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

/* Creates the directories of `path`'s parent below `top` (no links
 * followed) and returns a descriptor of that parent, or a negative errno;
 * *base points at the last component. */
static int make_parents(int top, char *path, char **base)
{
    int fd = top;
    char *s = path;
    for (char *slash; (slash = strchr(s, '/')) != NULL; s = slash + 1) {
        *slash = '\0';
        if (mkdirat(fd, s, 0700) != 0 && errno != EEXIST) {
            int err = errno;
            if (fd != top)
                close(fd);
            return -err;
        }
        int nfd = openat(fd, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int err = errno;
        if (fd != top)
            close(fd);
        *slash = '/';
        if (nfd < 0)
            return -err;
        fd = nfd;
    }
    *base = s;
    return fd == top ? dup(top) : fd;
}

/* A restored file's writer: every AGENT_WRITE_BEHIND bytes it starts the
 * kernel writing them to the disk and waits for the window before, so
 * that the disk works while the object still arrives, the closing
 * fsync() finds at most two windows left, and the file's dirty pages
 * stay bounded. sync_file_range() only schedules; the fsync() decides,
 * so its own failure (a file system without it) changes nothing. */
struct out {
    int fd;
    uint64_t at, flushed;   /* written; written back from 0 to here (started) */
};

static int out_write(void *arg, const void *buf, size_t len)
{
    struct out *o = arg;
    int rc = ebb__ckpt_fd_write(&o->fd, buf, len);
    if (rc != 0)
        return rc;
    o->at += len;
    if (o->at - o->flushed >= AGENT_WRITE_BEHIND) {
        sync_file_range(o->fd, (off_t)o->flushed, (off_t)(o->at - o->flushed),
                        SYNC_FILE_RANGE_WRITE);
        if (o->flushed > 0)
            sync_file_range(o->fd, 0, (off_t)o->flushed,
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                SYNC_FILE_RANGE_WAIT_AFTER);
        o->flushed = o->at;
    }
    return 0;
}

static int unstage_one(int parent, const char *base, const struct ebb__ckpt_manifest *m,
                       const struct ebb__ckpt_manifest_file *f,
                       const struct ebb__ckpt_key *key, ebb__ckpt_read_fn rd, void *rd_arg,
                       struct ebb__ckpt_error *err)
{
    int out = openat(parent, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                     0600);
    if (out < 0) {
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "%s: %s", f->path, strerror(errno));
        return EBB_EIO;
    }
    struct ebb__ckpt_sums sums;
    struct out o = {.fd = out};
    int rc = key ? ebb__ckpt_decrypt(key, m->name, f->path, (int64_t)f->stored_size, rd,
                                     rd_arg, out_write, &o, &sums, err)
                 : ebb__ckpt_copy(rd, rd_arg, out_write, &o, &sums, err);
    if (rc == 0)
        rc = ebb__ckpt_manifest_match(f, key != NULL, &sums, err);
    if (rc != 0 && err != NULL && strncmp(err->diag.msg, f->path, strlen(f->path)) != 0) {
        /* Say which file: a chunk's fault does not. */
        char msg[sizeof(err->diag.msg)];
        memcpy(msg, err->diag.msg, sizeof(msg));
        ebb_diag_set(&err->diag, NULL, 0, "%.200s: %.800s", f->path, msg);
    }
    if (rc == 0 && fsync(out) != 0) {
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "%s: %s", f->path, strerror(errno));
        rc = EBB_EIO;
    }
    close(out);
    return rc;
}

int agent_ckpt_unstage_begin(int dirfd, const char *tmp_name,
                             const struct ebb__ckpt_manifest *m,
                             struct ebb__ckpt_error *err)
{
    if (m->kind == EBB__CKPT_KIND_DIRECTORY && mkdirat(dirfd, tmp_name, 0700) != 0) {
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "%s: %s", tmp_name, strerror(errno));
        return EBB_EIO;
    }
    return 0;
}

int agent_ckpt_unstage_file(int dirfd, const char *tmp_name,
                            const struct ebb__ckpt_manifest *m, size_t i,
                            const struct ebb__ckpt_key *key, ebb__ckpt_read_fn rd,
                            void *rd_arg, struct ebb__ckpt_error *err)
{
    const struct ebb__ckpt_manifest_file *f = &m->files[i];
    if (m->kind == EBB__CKPT_KIND_FILE)
        return unstage_one(dirfd, tmp_name, m, f, key, rd, rd_arg, err);
    int top = openat(dirfd, tmp_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (top < 0) {
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "%s: %s", tmp_name, strerror(errno));
        return EBB_EIO;
    }
    char *path = ebb_strfmt("%s", f->path);
    char *base = NULL;
    int parent = path ? make_parents(top, path, &base) : -ENOMEM;
    int rc;
    if (parent < 0) {
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "%s: %s", f->path, strerror(-parent));
        rc = parent == -ENOMEM ? EBB_ENOMEM : EBB_EIO;
    } else {
        rc = unstage_one(parent, base, m, f, key, rd, rd_arg, err);
        close(parent);
    }
    free(path);
    close(top);
    return rc;
}

/* fsync()s directory `fd` and every directory below it. */
static int sync_tree(int fd, int depth)
{
    if (depth > AGENT_WALK_DEPTH_MAX)
        return EBB_EIO;
    int dfd = dup(fd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (d == NULL) {
        if (dfd >= 0)
            close(dfd);
        return EBB_EIO;
    }
    rewinddir(d);
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
        if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        rc = sub >= 0 ? sync_tree(sub, depth + 1) : EBB_EIO;
        if (sub >= 0)
            close(sub);
    }
    closedir(d);
    return rc == 0 && fsync(fd) != 0 ? EBB_EIO : rc;
}

int agent_ckpt_unstage_end(int dirfd, const char *tmp_name,
                           const struct ebb__ckpt_manifest *m,
                           struct ebb__ckpt_error *err)
{
    if (m->kind == EBB__CKPT_KIND_FILE)
        return 0;
    int top = openat(dirfd, tmp_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc = top >= 0 ? sync_tree(top, 0) : EBB_EIO;
    if (top >= 0)
        close(top);
    if (rc != 0)
        ebb__ckpt_fail(err, EBB__CKPT_IO, 0, "%s: cannot flush it", tmp_name);
    return rc;
}
