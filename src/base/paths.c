#include "base/paths.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ebb/common.h>

#include "base/str.h"
#include "ebb_build_config.h"

char *ebb__state_dir_resolve(const char *explicit_dir)
{
    if (explicit_dir != NULL && explicit_dir[0] != '\0')
        return strdup(explicit_dir);
    const char *env = getenv("EBB_STATE_DIR");
    if (env != NULL && env[0] != '\0')
        return strdup(env);
    if (geteuid() == 0)
        return strdup("/var/lib/ebb");
    const char *xdg = getenv("XDG_STATE_HOME");
    if (xdg != NULL && xdg[0] == '/')
        return ebb_strfmt("%s/ebb", xdg);
    const char *home = getenv("HOME");
    if (home == NULL || home[0] == '\0')
        return NULL;
    return ebb_strfmt("%s/.local/state/ebb", home);
}

char *ebb__path_join(const char *dir, const char *name)
{
    return ebb_strfmt("%s/%s", dir, name);
}

int ebb__mkdir_p(const char *dir, char *err, size_t errlen)
{
    char *copy = strdup(dir);
    if (copy == NULL)
        return EBB_ENOMEM;
    int rc = 0;
    for (char *p = copy + 1; rc == 0; p++) {
        int last = *p == '\0';
        if (*p != '/' && !last)
            continue;
        *p = '\0';
        if (mkdir(copy, last ? 0700 : 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s", copy, strerror(errno));
            rc = errno == EACCES ? EBB_EPERM : EBB_EIO;
        }
        if (last)
            break;
        *p = '/';
    }
    struct stat st;
    if (rc == 0 && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        snprintf(err, errlen, "%s is not a directory", dir);
        rc = EBB_EIO;
    }
    free(copy);
    return rc;
}

static long read_pid(int fd)
{
    char buf[32] = "";
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

int ebb__state_dir_check(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return EBB_EIO;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: the state directory is not a directory", dir);
        return EBB_EIO;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen, "%s: the state directory belongs to uid %ld, not "
                 "to this ebbd (uid %ld); give it to this user (chown) or use "
                 "another --state-dir", dir, (long)st.st_uid, (long)geteuid());
        return EBB_EPERM;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        snprintf(err, errlen, "%s: the state directory is writable by others "
                 "(mode %03o); chmod go-w it (700 or 750)", dir,
                 (unsigned)(st.st_mode & 0777));
        return EBB_EPERM;
    }
    return 0;
}

int ebb__state_lock(const char *dir, int *fd_out, long *holder_pid,
                    char *err, size_t errlen)
{
    *fd_out = -1;
    *holder_pid = 0;
    char *file = ebb__path_join(dir, "ebbd.lock");
    if (file == NULL)
        return EBB_ENOMEM;
    /* No O_TRUNC: a second daemon must not disturb the first one's pid.
     * O_NOFOLLOW: the pid is written into this file, never through a link
     * someone planted in its place. */
    int fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
        errno = EINVAL;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s (it must be a regular file, "
                 "not a link; remove it and start again)", file, strerror(errno));
        free(file);
        return EBB_EIO;
    }
    free(file);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK) {
            *holder_pid = read_pid(fd);
            close(fd);
            return EBB_EBUSY;
        }
        snprintf(err, errlen, "cannot lock %s/ebbd.lock: %s", dir, strerror(e));
        close(fd);
        return EBB_EIO;
    }
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        snprintf(err, errlen, "cannot write %s/ebbd.lock: %s", dir, strerror(errno));
        close(fd);
        return EBB_EIO;
    }
    *fd_out = fd;
    return 0;
}

const char *ebb__uninstalled_build_root(void)
{
    char *exe = realpath("/proc/self/exe", NULL);
    char *root = realpath(EBB_BUILD_ROOT, NULL);
    int inside = 0;
    if (exe != NULL && root != NULL) {
        size_t n = strlen(root);
        inside = strncmp(exe, root, n) == 0 && exe[n] == '/';
    }
    free(exe);
    free(root);
    return inside ? EBB_BUILD_ROOT : NULL;
}

char *ebb__data_dir(void)
{
    const char *env = getenv("EBB_DATA_DIR");
    if (env != NULL && env[0] != '\0')
        return strdup(env);
    if (ebb__uninstalled_build_root() != NULL)
        return strdup(EBB_SOURCE_ROOT "/data");
    return strdup(EBB_DATA_DIR);
}
