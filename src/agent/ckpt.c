/* Scanning and pruning the checkpoint directory (see ckpt.h). */
#include "agent/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

int agent_ckpt_scan(const char *dir, struct agent_ckpt_list *out)
{
    *out = (struct agent_ckpt_list){0};
    DIR *d = opendir(dir);
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
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
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

static int remove_one(const char *path, const struct stat *st, int flag,
                      struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    /* Keep going on errors: nftw stops at a non-zero return, and removing
     * the rest is still worth it. The caller sees the final result. */
    remove(path);
    return 0;
}

/* Removes `dir/name` and everything below it. Returns 0 or a negative errno. */
static int remove_tree(const char *dir, const char *name)
{
    char *path = agent_ckpt_path(dir, name);
    if (path == NULL)
        return -ENOMEM;
    int rc = 0;
    if (nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        rc = -errno;
    struct stat st;
    if (rc == 0 && lstat(path, &st) == 0)
        rc = -ENOTEMPTY; /* something below could not be removed */
    free(path);
    return rc;
}

int agent_ckpt_remove_temporaries(const char *dir, size_t *removed)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -errno;
    /* Collect first: removing while readdir walks is unspecified. */
    struct ebb_buf names = {0};
    for (;;) {
        struct dirent *e = readdir(d);
        if (e == NULL)
            break;
        if (e->d_name[0] != '.' || strcmp(e->d_name, ".") == 0 ||
            strcmp(e->d_name, "..") == 0)
            continue;
        ebb_buf_append(&names, e->d_name, strlen(e->d_name) + 1);
    }
    closedir(d);
    if (names.failed) {
        ebb_buf_free(&names);
        return -ENOMEM;
    }
    int first = 0;
    for (size_t off = 0; off < names.len; off += strlen(names.data + off) + 1) {
        int rc = remove_tree(dir, names.data + off);
        if (rc == 0)
            (*removed)++;
        else if (first == 0)
            first = rc;
    }
    ebb_buf_free(&names);
    return first;
}

int agent_ckpt_prune(const char *dir, const struct agent_ckpt_list *list,
                     size_t keep, size_t *removed)
{
    int first = 0;
    for (size_t i = 0; i + keep < list->n; i++) {
        int rc = remove_tree(dir, list->items[i].name);
        if (rc == 0)
            (*removed)++;
        else if (first == 0)
            first = rc;
    }
    return first;
}
