/* Scanning and pruning the checkpoint directory (see ckpt.h). */
#include "agent/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/str.h"

int agent_ckpt_mkdir(const char *dir)
{
    char *p = ebb_strfmt("%s", dir);
    if (p == NULL)
        return -ENOMEM;
    int rc = 0;
    /* Each prefix ending before a '/' is created in turn, then the whole. */
    for (char *s = p + 1;; s++) {
        bool last = *s == '\0';
        if (*s != '/' && !last)
            continue;
        char saved = *s;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            rc = -errno;
            break;
        }
        *s = saved;
        if (last)
            break;
    }
    free(p);
    if (rc == 0) {
        struct stat st;
        if (stat(dir, &st) != 0)
            return -errno;
        if (!S_ISDIR(st.st_mode))
            return -ENOTDIR;
    }
    return rc;
}

char *agent_ckpt_path(const char *dir, const char *name)
{
    return ebb_strfmt("%s/%s", dir, name);
}

static int cmp_ckpt(const void *a, const void *b)
{
    const struct agent_ckpt *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A stream over the directory `dirfd` of its own (the caller's descriptor
 * keeps its offset); NULL with errno set on failure. */
static DIR *dir_stream(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (d == NULL)
        close(fd);
    return d;
}

int agent_dir_open_owned(const char *path, char *why, size_t len)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        /* With O_DIRECTORY, Linux says ENOTDIR for a link. */
        int err = errno;
        struct stat lst;
        if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
            err = ELOOP;
        snprintf(why, len, "%s: %s", path, err == ELOOP
                     ? "is a symbolic link; name the directory itself"
                     : strerror(err));
        return -err;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        snprintf(why, len, "%s: %s", path, strerror(err));
        close(fd);
        return -err;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, len, "%s belongs to uid %ld, not to the job's user (uid "
                 "%ld); a job uses only its own user's directories", path,
                 (long)st.st_uid, (long)geteuid());
        close(fd);
        return -EPERM;
    }
    return fd;
}

static bool is_marker(const char *name)
{
    return strncmp(name, AGENT_CKPT_MARK, strlen(AGENT_CKPT_MARK)) == 0;
}

int agent_ckpt_scan(int dirfd, struct agent_ckpt_list *out)
{
    *out = (struct agent_ckpt_list){0};
    DIR *d = dir_stream(dirfd);
    if (d == NULL)
        return -errno;
    size_t cap = 0;
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (e == NULL) {
            rc = -errno;
            break;
        }
        if (e->d_name[0] == '.')
            continue;
        struct stat st;
        /* An entry may vanish between readdir and stat (pruned, renamed):
         * it is simply not listed. */
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            struct agent_ckpt *items = realloc(out->items, ncap * sizeof(*items));
            if (items == NULL) {
                rc = -ENOMEM;
                break;
            }
            out->items = items;
            cap = ncap;
        }
        char *name = ebb_strfmt("%s", e->d_name);
        if (name == NULL) {
            rc = -ENOMEM;
            break;
        }
        out->items[out->n++] = (struct agent_ckpt){name, st.st_mtim};
    }
    closedir(d);
    if (rc != 0) {
        agent_ckpt_list_free(out);
        return rc;
    }
    if (out->n > 1)
        qsort(out->items, out->n, sizeof(out->items[0]), cmp_ckpt);
    return 0;
}

void agent_ckpt_list_free(struct agent_ckpt_list *list)
{
    for (size_t i = 0; i < list->n; i++)
        free(list->items[i].name);
    free(list->items);
    *list = (struct agent_ckpt_list){0};
}

const struct agent_ckpt *agent_ckpt_latest(const struct agent_ckpt_list *list)
{
    return list->n ? &list->items[list->n - 1] : NULL;
}

bool agent_ckpt_contains(const struct agent_ckpt_list *list,
                         const struct agent_ckpt *c)
{
    for (size_t i = 0; i < list->n; i++) {
        const struct agent_ckpt *x = &list->items[i];
        if (strcmp(x->name, c->name) == 0 && x->mtime.tv_sec == c->mtime.tv_sec &&
            x->mtime.tv_nsec == c->mtime.tv_nsec)
            return true;
    }
    return false;
}

/* The marker's name of entry `name` into buf; false when it would not fit
 * (such an entry is never marked, so never removed). */
static bool marker_name(const char *name, char *buf, size_t len)
{
    int n = snprintf(buf, len, AGENT_CKPT_MARK "%s", name);
    return n > 0 && (size_t)n < len && (size_t)n <= NAME_MAX;
}

int agent_ckpt_mark(int dirfd, const char *name, const char *job_id)
{
    char marker[NAME_MAX + 1];
    if (!marker_name(name, marker, sizeof(marker)))
        return -ENAMETOOLONG;
    int fd = openat(dirfd, marker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0600);
    if (fd < 0)
        return errno == EEXIST ? 0 : -errno;
    size_t len = strlen(job_id);
    ssize_t w = write(fd, job_id, len);
    int rc = w == (ssize_t)len ? 0 : -EIO;
    close(fd);
    if (rc != 0)
        unlinkat(dirfd, marker, 0);
    return rc;
}

/* Whether marker `marker` of `dirfd` is job_id's: a regular file of this
 * process's user holding exactly the job id. */
static bool marker_is(int dirfd, const char *marker, const char *job_id)
{
    int fd = openat(dirfd, marker, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    char buf[128];
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
        n = read(fd, buf, sizeof(buf));
    close(fd);
    size_t len = strlen(job_id);
    return n == (ssize_t)len && memcmp(buf, job_id, len) == 0;
}

bool agent_ckpt_is_marked(int dirfd, const char *name, const char *job_id)
{
    char marker[NAME_MAX + 1];
    return marker_name(name, marker, sizeof(marker)) &&
           marker_is(dirfd, marker, job_id);
}

/* The names in the directory `dirfd` (NUL-separated in *names) that
 * `want` accepts; collected first, since removing while readdir walks is
 * unspecified. Returns 0 or a negative errno. */
static int list_names(int dirfd, bool (*want)(const char *name), struct ebb_buf *names)
{
    DIR *d = dir_stream(dirfd);
    if (d == NULL)
        return -errno;
    for (;;) {
        struct dirent *e = readdir(d);
        if (e == NULL)
            break;
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            want(e->d_name))
            ebb_buf_append(names, e->d_name, strlen(e->d_name) + 1);
    }
    closedir(d);
    return names->failed ? -ENOMEM : 0;
}

static bool any_name(const char *name)
{
    (void)name;
    return true;
}

static bool temporary(const char *name)
{
    return name[0] == '.' && !is_marker(name);
}

/* How deep a checkpoint's directories may nest before removal gives up. */
#define TREE_DEPTH_MAX 64

/* Removes `name` of `dirfd` and everything below it, never following a
 * link (a link is removed, not what it points to). Returns 0 or a
 * negative errno. */
static int remove_tree(int dirfd, const char *name, int depth)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dirfd, name, 0) == 0 ? 0 : -errno;
    if (depth >= TREE_DEPTH_MAX)
        return -ELOOP;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct ebb_buf names = {0};
    int rc = list_names(fd, any_name, &names);
    /* Keep going on errors: removing the rest is still worth it. */
    for (size_t off = 0; off < names.len; off += strlen(names.data + off) + 1) {
        int one = remove_tree(fd, names.data + off, depth + 1);
        if (rc == 0)
            rc = one;
    }
    ebb_buf_free(&names);
    close(fd);
    if (rc == 0 && unlinkat(dirfd, name, AT_REMOVEDIR) != 0)
        rc = -errno;
    return rc;
}

/* Removes entry `name` and its marker when it is job_id's. Returns 1 when
 * it was removed, 0 when it is not job_id's, or a negative errno. */
static int remove_marked(int dirfd, const char *name, const char *job_id)
{
    if (!agent_ckpt_is_marked(dirfd, name, job_id))
        return 0;
    int rc = remove_tree(dirfd, name, 0);
    char marker[NAME_MAX + 1];
    if (rc == 0 && marker_name(name, marker, sizeof(marker)) &&
        unlinkat(dirfd, marker, 0) != 0)
        rc = -errno;
    return rc == 0 ? 1 : rc;
}

void agent_ckpt_mark_temporaries(int dirfd, const char *job_id)
{
    struct ebb_buf names = {0};
    if (list_names(dirfd, temporary, &names) == 0)
        for (size_t off = 0; off < names.len; off += strlen(names.data + off) + 1)
            agent_ckpt_mark(dirfd, names.data + off, job_id);
    ebb_buf_clear(&names);
    if (list_names(dirfd, is_marker, &names) == 0) {
        for (size_t off = 0; off < names.len; off += strlen(names.data + off) + 1) {
            const char *marker = names.data + off;
            struct stat st;
            if (fstatat(dirfd, marker + strlen(AGENT_CKPT_MARK), &st,
                        AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT &&
                marker_is(dirfd, marker, job_id))
                unlinkat(dirfd, marker, 0);
        }
    }
    ebb_buf_free(&names);
}

int agent_ckpt_remove_temporaries(int dirfd, const char *job_id, size_t *removed)
{
    struct ebb_buf names = {0};
    int first = list_names(dirfd, temporary, &names);
    for (size_t off = 0; off < names.len; off += strlen(names.data + off) + 1) {
        int rc = remove_marked(dirfd, names.data + off, job_id);
        if (rc > 0)
            (*removed)++;
        else if (rc < 0 && first == 0)
            first = rc;
    }
    ebb_buf_free(&names);
    return first;
}

static bool is_spared(const char *name, const char *const *spare, size_t n_spare)
{
    for (size_t i = 0; i < n_spare; i++)
        if (spare[i] != NULL && strcmp(name, spare[i]) == 0)
            return true;
    return false;
}

int agent_ckpt_prune(int dirfd, const struct agent_ckpt_list *list, size_t keep,
                     const char *job_id, const char *const *spare, size_t n_spare,
                     size_t *removed)
{
    size_t ours = 0;
    for (size_t i = 0; i < list->n; i++)
        ours += !is_spared(list->items[i].name, spare, n_spare) &&
                agent_ckpt_is_marked(dirfd, list->items[i].name, job_id);
    int first = 0;
    for (size_t i = 0; i < list->n && ours > keep; i++) {
        if (is_spared(list->items[i].name, spare, n_spare))
            continue;
        int rc = remove_marked(dirfd, list->items[i].name, job_id);
        if (rc > 0) {
            (*removed)++;
            ours--;
        } else if (rc < 0 && first == 0) {
            first = rc;
        }
    }
    return first;
}
