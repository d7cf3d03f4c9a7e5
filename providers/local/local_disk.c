/* Private disks of local instances: PLUGIN_DIR/disks/<key>/ (the launch
 * token; a gang's member's is "<token>+<rank>"), one per instance, owned by the job's user (mode 0700), removed when the instance
 * ends, so that what a job left on its disk dies with its instance as on a
 * cloud. Removal works below an open descriptor of the disks directory
 * (openat/unlinkat), never following a link: a link the job made to a
 * file elsewhere is removed as a link, and nothing outside the disks
 * directory is ever touched. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local.h"

/* Deeper trees than this are left (and logged): the removal is bounded. */
#define DISK_DEPTH_MAX 256

/* PLUGIN_DIR/disks opened (created 0711 when missing: the job's user
 * enters its own disk by path, but lists no other), or -1 with errno.
 * PLUGIN_DIR itself is made searchable (not readable) by all for the same
 * reason: what else is in it is ebbd's (logs 0640) or meant for the agent
 * (the CA, 0644). */
static int open_disks(const struct local *l)
{
    int dir = open(l->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (dir < 0)
        return -1;
    if (fstat(dir, &st) == 0 && (st.st_mode & 0011) != 0011)
        (void)fchmod(dir, (st.st_mode & 07777) | 0011);
    if (mkdirat(dir, "disks", 0711) != 0 && errno != EEXIST) {
        close(dir);
        return -1;
    }
    int disks = openat(dir, "disks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    close(dir);
    errno = err;
    return disks;
}

/* Whether `token` may name a directory entry: no '/', not "", "." or "..",
 * not hidden. Tokens come from ebbd, but a path is built from them. */
static int token_ok(const char *token)
{
    return token[0] != '\0' && token[0] != '.' && strchr(token, '/') == NULL;
}

static int remove_tree(int parent, const char *name, int depth);

/* Removes every entry of the open directory `dir` (which it closes). */
static int empty_dir(int dir, int depth)
{
    DIR *d = fdopendir(dir);
    if (d == NULL) {
        close(dir);
        return -1;
    }
    int rc = 0;
    struct dirent *de;
    /* Entries are removed while the directory is read: read it again
     * after each pass that removed something, so none is missed; bounded,
     * since the instance's processes are gone and create no more. */
    for (int removed = 1, pass = 0; removed && rc == 0; pass++) {
        if (pass == 8) {
            errno = ENOTEMPTY;
            rc = -1;
            break;
        }
        removed = 0;
        rewinddir(d);
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            if (remove_tree(dirfd(d), de->d_name, depth + 1) != 0) {
                rc = -1;
                break;
            }
            removed = 1;
        }
    }
    closedir(d);
    return rc;
}

/* Removes `name` below `parent` and everything in it, links as links. A
 * directory the job made unwritable is made writable first (it is the
 * job's user's, as ebbd is, or ebbd is root). Returns 0 or -1 with errno. */
static int remove_tree(int parent, const char *name, int depth)
{
    struct stat st;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(parent, name, 0) == 0 || errno == ENOENT ? 0 : -1;
    if (depth >= DISK_DEPTH_MAX) {
        errno = ELOOP;
        return -1;
    }
    int dir = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return -1;
    if ((st.st_mode & 0700) != 0700)
        (void)fchmod(dir, 0700);
    if (empty_dir(dir, depth) != 0)
        return -1;
    return unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

/* Whether the user `who` may search (x) every directory from / to `path`,
 * by the mode bits: a disk the job's user cannot reach is not handed to
 * the agent, which would fail on it. */
static int reachable(const char *path, const struct ebb_runas *who)
{
    if (who->uid == 0)
        return 1;
    char copy[4096];
    snprintf(copy, sizeof(copy), "%s", path);
    for (char *slash = copy + strlen(copy);; slash = strrchr(copy, '/')) {
        if (slash == NULL)
            return 1;
        *slash = '\0';
        struct stat st;
        if (stat(copy[0] ? copy : "/", &st) != 0)
            return 0;
        int in_group = st.st_gid == who->gid;
        for (size_t g = 0; g < who->n_groups && !in_group; g++)
            in_group = who->groups[g] == st.st_gid;
        mode_t bit = st.st_uid == who->uid ? S_IXUSR : in_group ? S_IXGRP : S_IXOTH;
        if ((st.st_mode & bit) == 0)
            return 0;
        if (copy[0] == '\0')
            return 1;
    }
}

int local_disk_create(struct local *l, const struct local_inst *inst,
                      const struct ebb_runas *who, char **out)
{
    char *path = NULL;
    *out = NULL;
    if (!token_ok(inst->key) ||
        asprintf(&path, "%s/disks/%s", l->dir, inst->key) < 0) {
        l->host->log(l->host->ctx, EBB_LOG_ERROR, "job %s: launch token \"%s\" "
                     "cannot name a disk", inst->job_id, inst->key);
        return EBB_EIO;
    }
    int disks = open_disks(l);
    /* A disk left by an instance of this token that ended while no ebbd
     * ran is not this instance's: it starts empty. */
    int ok = disks >= 0 && remove_tree(disks, inst->key, 0) == 0 &&
             mkdirat(disks, inst->key, 0700) == 0;
    /* Giving it to the job's user needs CAP_CHOWN, which the shipped unit
     * does not grant (it grants what starting the job needs). */
    int cannot_give = 0;
    if (ok && who->switch_ids &&
        fchownat(disks, inst->key, who->uid, who->gid, AT_SYMLINK_NOFOLLOW) != 0) {
        ok = errno == EPERM;
        cannot_give = ok;
    }
    const char *why = ok ? NULL : strerror(errno);
    int rc = ok ? 0 : EBB_EIO;
    if (disks >= 0)
        close(disks);
    /* A user who cannot reach the state directory (ebbd's, 0700 unless
     * api.socket_mode opens it), or to whom ebbd cannot give the disk,
     * runs on this machine's disk, as with disk: shared, rather than not
     * at all. */
    if (ok && (cannot_give || !reachable(path, who))) {
        l->host->log(l->host->ctx, EBB_LOG_WARN, "job %s: %s %s, so the instance gets "
                     "no disk of its own (disk: shared for it)", inst->job_id,
                     cannot_give ? "ebbd may not give (CAP_CHOWN) to its user" : "its user "
                     "cannot enter", path);
        local_disk_remove(l, inst->key);
        free(path);
        return 0;
    }
    if (rc != 0) {
        l->host->log(l->host->ctx, EBB_LOG_ERROR, "job %s: cannot make the "
                     "instance's disk %s: %s", inst->job_id, path, why);
        local_disk_remove(l, inst->key);
        free(path);
        return rc;
    }
    *out = path;
    return 0;
}

void local_disk_remove(struct local *l, const char *key)
{
    if (!token_ok(key))
        return;
    int disks = open_disks(l);
    struct stat st;
    if (disks < 0 || fstatat(disks, key, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (disks >= 0)
            close(disks);
        return; /* none: shared disks, or removed already */
    }
    if (remove_tree(disks, key, 0) == 0)
        l->host->log(l->host->ctx, EBB_LOG_INFO, "removed the disk of instance %s",
                     key);
    else
        l->host->log(l->host->ctx, EBB_LOG_ERROR, "cannot remove %s/disks/%s: %s",
                     l->dir, key, strerror(errno));
    close(disks);
}

void local_disk_sweep(struct local *l)
{
    int disks = open_disks(l);
    DIR *d = disks >= 0 ? fdopendir(disks) : NULL;
    if (d == NULL) {
        if (disks >= 0)
            close(disks);
        return;
    }
    /* Names first, removal after: the directory is not read while it
     * changes. At most as many as the loop met. */
    struct ebb_list *pos;
    struct dirent *de;
    char **orphans = NULL;
    size_t n = 0, cap = 0;
    while ((de = readdir(d)) != NULL) {
        if (!token_ok(de->d_name))
            continue;
        int owned = 0;
        ebb_list_foreach(pos, &l->insts)
            owned |= strcmp(ebb_list_entry(pos, struct local_inst, node)->key,
                            de->d_name) == 0;
        if (owned)
            continue;
        if (n == cap) {
            size_t more = cap ? cap * 2 : 8;
            char **grown = realloc(orphans, more * sizeof(*grown));
            if (grown == NULL)
                break;
            orphans = grown;
            cap = more;
        }
        if ((orphans[n] = strdup(de->d_name)) != NULL)
            n++;
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) {
        local_disk_remove(l, orphans[i]);
        free(orphans[i]);
    }
    free(orphans);
}
