/* Packing and unpacking a job's workdir (see workdir_tar.h). A tar
 * writer and reader is what libarchive is for; the walk is ours, below
 * open descriptors (openat with O_NOFOLLOW), so nothing is followed. */
#include "io/workdir_tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/str.h"

static int fail(char *err, size_t len, int rc, const char *fmt, ...) EBB_PRINTF(4, 5);
static int fail(char *err, size_t len, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- packing ------------------------------------------------------------ */

struct pack {
    struct archive *a;
    struct archive_entry *entry;
    ebb__workdir_skip_fn skip;
    void *skip_arg;
    int out_fd;
    uint64_t max_bytes;
    EVP_MD_CTX *sha;
    struct ebb__workdir_packed *res;
    int too_big;  /* the writer stopped at max_bytes */
    int out_errno;
    char *err;
    size_t errlen;
};

/* libarchive's output: every byte to out_fd and the hash, at most
 * max_bytes of them. */
static la_ssize_t pack_write(struct archive *a, void *arg, const void *buf, size_t len)
{
    struct pack *p = arg;
    if (p->res->size + len > p->max_bytes) {
        p->too_big = 1;
        archive_set_error(a, EFBIG, "too big");
        return -1;
    }
    for (size_t done = 0; done < len;) {
        ssize_t n = write(p->out_fd, (const char *)buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            p->out_errno = n < 0 ? errno : EIO;
            archive_set_error(a, p->out_errno, "write");
            return -1;
        }
        done += (size_t)n;
    }
    EVP_DigestUpdate(p->sha, buf, len);
    p->res->size += len;
    return (la_ssize_t)len;
}

/* Why libarchive stopped: the size bound, the output, or its message. */
static int pack_error(struct pack *p, const char *path)
{
    if (p->too_big)
        return fail(p->err, p->errlen, EBB_EINVAL, "the workdir packs to more than "
                    "%llu MiB (at %s); leave large files out with workdir_exclude",
                    (unsigned long long)(p->max_bytes >> 20), path);
    if (p->out_errno != 0)
        return fail(p->err, p->errlen, EBB_EIO, "cannot write the packed workdir: %s",
                    strerror(p->out_errno));
    return fail(p->err, p->errlen, EBB_EIO, "packing %s: %s", path,
                archive_error_string(p->a));
}

static int cmp_names(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The names in directory `fd` (not closed), sorted, "." and ".." left out.
 * Returns 0 with *names (free each and it), or -1 with errno. */
static int list_dir(int fd, char ***names, size_t *n)
{
    *names = NULL;
    *n = 0;
    int copy = dup(fd);
    DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
    if (d == NULL) {
        if (copy >= 0)
            close(copy);
        return -1;
    }
    size_t cap = 0;
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (*n == cap) {
            size_t more = cap ? cap * 2 : 16;
            char **grown = realloc(*names, more * sizeof(*grown));
            if (grown == NULL) {
                rc = -1;
                errno = ENOMEM;
                break;
            }
            *names = grown;
            cap = more;
        }
        if (((*names)[*n] = strdup(de->d_name)) == NULL) {
            rc = -1;
            errno = ENOMEM;
            break;
        }
        (*n)++;
    }
    closedir(d);
    if (rc == 0 && *n > 1)
        qsort(*names, *n, sizeof(**names), cmp_names);
    return rc;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* One header: the name, type, permission bits and time; no owner. */
static int put_header(struct pack *p, const char *path, const struct stat *st)
{
    struct archive_entry *e = archive_entry_clear(p->entry);
    archive_entry_set_pathname(e, path);
    archive_entry_set_filetype(e, S_ISDIR(st->st_mode) ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(e, st->st_mode & 0777);
    archive_entry_set_mtime(e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
    archive_entry_set_size(e, S_ISDIR(st->st_mode) ? 0 : st->st_size);
    return archive_write_header(p->a, e) == ARCHIVE_OK ? 0 : pack_error(p, path);
}

static int pack_file(struct pack *p, int fd, const char *path, const struct stat *st)
{
    int rc = put_header(p, path, st);
    char buf[64 * 1024];
    off_t left = st->st_size;
    while (rc == 0 && left > 0) {
        ssize_t n = read(fd, buf, sizeof(buf) < (size_t)left ? sizeof(buf) : (size_t)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail(p->err, p->errlen, EBB_EIO, "reading %s: %s", path, strerror(errno));
        if (n == 0)
            break;
        if (archive_write_data(p->a, buf, (size_t)n) != n)
            return pack_error(p, path);
        left -= n;
    }
    struct stat after;
    if (rc == 0 && (left != 0 || fstat(fd, &after) != 0 || after.st_size != st->st_size))
        return fail(p->err, p->errlen, EBB_EINVAL, "%s changed while it was packed; "
                    "submit again once nothing writes to the workdir", path);
    return rc;
}

static int pack_dir(struct pack *p, int dir, const char *prefix, int depth);

/* Packs entry `name` of directory `dir`; `path` is its name in the tar. */
static int pack_entry(struct pack *p, int dir, const char *name, const char *path,
                      int depth)
{
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return fail(p->err, p->errlen, EBB_EIO, "%s: %s", path, strerror(errno));
    int is_dir = S_ISDIR(st.st_mode);
    if (p->skip != NULL && p->skip(p->skip_arg, path, is_dir))
        return 0;
    if (S_ISLNK(st.st_mode))
        return fail(p->err, p->errlen, EBB_EINVAL, "%s is a symbolic link; a workdir "
                    "is packed without links (add it to workdir_exclude, or put what "
                    "it points to in its place)", path);
    if (!is_dir && !S_ISREG(st.st_mode))
        return fail(p->err, p->errlen, EBB_EINVAL, "%s is not a regular file or a "
                    "directory (add it to workdir_exclude)", path);
    if (p->res->files + p->res->dirs >= EBB__WORKDIR_MAX_ENTRIES)
        return fail(p->err, p->errlen, EBB_EINVAL, "the workdir has more than %d "
                    "files and directories (at %s); leave some out with "
                    "workdir_exclude", EBB__WORKDIR_MAX_ENTRIES, path);
    int fd = openat(dir, name, (is_dir ? O_DIRECTORY : 0) | O_RDONLY | O_NOFOLLOW |
                                   O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return fail(p->err, p->errlen, EBB_EIO, "cannot open %s: %s", path,
                    strerror(errno));
    int rc;
    if (is_dir) {
        p->res->dirs++;
        rc = put_header(p, path, &st);
        if (rc == 0)
            rc = pack_dir(p, fd, path, depth + 1);
    } else {
        p->res->files++;
        rc = pack_file(p, fd, path, &st);
    }
    close(fd);
    return rc;
}

static int pack_dir(struct pack *p, int dir, const char *prefix, int depth)
{
    if (depth > EBB__WORKDIR_MAX_DEPTH)
        return fail(p->err, p->errlen, EBB_EINVAL, "%s is nested more than %d "
                    "directories deep", prefix, EBB__WORKDIR_MAX_DEPTH);
    char **names;
    size_t n;
    if (list_dir(dir, &names, &n) != 0)
        return fail(p->err, p->errlen, errno == ENOMEM ? EBB_ENOMEM : EBB_EIO,
                    "cannot list %s: %s", prefix[0] ? prefix : ".", strerror(errno));
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *path = prefix[0] ? ebb_strfmt("%s/%s", prefix, names[i])
                               : ebb_strfmt("%s", names[i]);
        rc = path ? pack_entry(p, dir, names[i], path, depth) : EBB_ENOMEM;
        free(path);
    }
    free_names(names, n);
    return rc;
}

int ebb__workdir_pack(const char *dir, int out_fd, ebb__workdir_skip_fn skip, void *arg,
                      uint64_t max_bytes, struct ebb__workdir_packed *res, char *err,
                      size_t errlen)
{
    *res = (struct ebb__workdir_packed){0};
    err[0] = '\0';
    struct pack p = {.skip = skip, .skip_arg = arg, .out_fd = out_fd,
                     .max_bytes = max_bytes, .res = res, .err = err, .errlen = errlen};
    int top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (top < 0)
        return fail(err, errlen, errno == ENOENT || errno == ENOTDIR ? EBB_EINVAL : EBB_EIO,
                    "%s: %s", dir, strerror(errno));
    p.a = archive_write_new();
    p.entry = archive_entry_new();
    p.sha = EVP_MD_CTX_new();
    int rc = p.a && p.entry && p.sha && EVP_DigestInit_ex(p.sha, EVP_sha256(), NULL) == 1
                 ? 0
                 : EBB_ENOMEM;
    if (rc == 0 && (archive_write_set_format_pax_restricted(p.a) != ARCHIVE_OK ||
                    archive_write_set_bytes_in_last_block(p.a, 1) != ARCHIVE_OK ||
                    archive_write_open2(p.a, &p, NULL, pack_write, NULL, NULL) != ARCHIVE_OK))
        rc = pack_error(&p, dir);
    if (rc == 0)
        rc = pack_dir(&p, top, "", 0);
    /* Closed after a failure too: once a write has failed,
     * archive_write_free skips the close, which is what frees libarchive's
     * output buffer (libarchive 3.6). */
    if (p.a != NULL && archive_write_close(p.a) != ARCHIVE_OK && rc == 0)
        rc = pack_error(&p, dir);
    unsigned int len = 0;
    if (rc == 0 && EVP_DigestFinal_ex(p.sha, res->sha256, &len) != 1)
        rc = EBB_ENOMEM;
    if (p.a != NULL)
        archive_write_free(p.a);
    archive_entry_free(p.entry);
    EVP_MD_CTX_free(p.sha);
    close(top);
    return rc;
}

/* ---- unpacking ---------------------------------------------------------- */

/* Whether `name` is relative, without "." or ".." parts or empty ones but
 * a trailing "/" (directories), and not too deep. */
static int name_ok(const char *name)
{
    if (name == NULL || name[0] == '\0' || name[0] == '/' || strlen(name) >= PATH_MAX / 2)
        return 0;
    int depth = 0;
    for (const char *part = name; *part != '\0';) {
        size_t n = strcspn(part, "/");
        if (n == 0 || (n == 1 && part[0] == '.') ||
            (n == 2 && part[0] == '.' && part[1] == '.'))
            return 0;
        if (++depth > EBB__WORKDIR_MAX_DEPTH + 1)
            return 0;
        part += n;
        if (*part == '/')
            part++;
    }
    return 1;
}

int ebb__workdir_extract(int in_fd, const char *dest, uint64_t max_bytes, char *err,
                         size_t errlen)
{
    err[0] = '\0';
    /* Canonical, so that the link check below (which looks at every part
     * of the path, the destination's own ancestors too) sees no link. */
    char *top = realpath(dest, NULL);
    if (top == NULL)
        return fail(err, errlen, EBB_EIO, "%s: %s", dest, strerror(errno));
    struct archive *in = archive_read_new();
    struct archive *out = archive_write_disk_new();
    int rc = in && out ? 0 : EBB_ENOMEM;
    if (rc == 0 && (archive_read_support_format_tar(in) != ARCHIVE_OK ||
                    archive_read_open_fd(in, in_fd, 64 * 1024) != ARCHIVE_OK))
        rc = fail(err, errlen, EBB_EINVAL, "not a workdir tar: %s", archive_error_string(in));
    if (rc == 0)
        archive_write_disk_set_options(out, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM |
                                                ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                                ARCHIVE_EXTRACT_NO_OVERWRITE);
    uint64_t bytes = 0;
    size_t entries = 0;
    struct archive_entry *e;
    while (rc == 0) {
        int r = archive_read_next_header(in, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK) {
            rc = fail(err, errlen, EBB_EINVAL, "the workdir tar is damaged: %s",
                      archive_error_string(in));
            break;
        }
        const char *name = archive_entry_pathname(e);
        mode_t type = archive_entry_filetype(e);
        char q[128];
        snprintf(q, sizeof(q), "%s", name ? name : "(no name)");
        if (!name_ok(name)) {
            rc = fail(err, errlen, EBB_EINVAL, "the workdir tar holds \"%s\": not a "
                      "relative name inside the workdir", q);
        } else if ((type != AE_IFREG && type != AE_IFDIR) ||
                   archive_entry_hardlink(e) != NULL) {
            rc = fail(err, errlen, EBB_EINVAL, "the workdir tar holds \"%s\", which is "
                      "not a regular file or a directory", q);
        } else if (++entries > EBB__WORKDIR_MAX_ENTRIES ||
                   (uint64_t)archive_entry_size(e) > max_bytes - bytes) {
            rc = fail(err, errlen, EBB_EINVAL, "the workdir tar holds more than it may "
                      "(%d entries, %llu bytes)", EBB__WORKDIR_MAX_ENTRIES,
                      (unsigned long long)max_bytes);
        }
        if (rc != 0)
            break;
        bytes += (uint64_t)archive_entry_size(e);
        char *full = ebb_strfmt("%s/%s", top, name);
        if (full == NULL) {
            rc = EBB_ENOMEM;
            break;
        }
        archive_entry_set_pathname(e, full);
        archive_entry_set_perm(e, archive_entry_perm(e) & 0777);
        archive_entry_set_uid(e, getuid());
        archive_entry_set_gid(e, getgid());
        free(full);
        if (archive_write_header(out, e) != ARCHIVE_OK) {
            rc = fail(err, errlen, EBB_EIO, "cannot unpack \"%s\": %s", q,
                      archive_error_string(out));
            break;
        }
        const void *buf;
        size_t len;
        la_int64_t off;
        while (rc == 0 && (r = archive_read_data_block(in, &buf, &len, &off)) == ARCHIVE_OK)
            if (archive_write_data_block(out, buf, len, off) != ARCHIVE_OK)
                rc = fail(err, errlen, EBB_EIO, "cannot write \"%s\": %s", q,
                          archive_error_string(out));
        if (rc == 0 && r != ARCHIVE_EOF)
            rc = fail(err, errlen, EBB_EINVAL, "the workdir tar is damaged at \"%s\": %s",
                      q, archive_error_string(in));
        if (rc == 0 && archive_write_finish_entry(out) != ARCHIVE_OK)
            rc = fail(err, errlen, EBB_EIO, "cannot finish \"%s\": %s", q,
                      archive_error_string(out));
    }
    /* Directory modes and times are set at close (libarchive defers them,
     * so that a read-only directory still receives its files). */
    if (out != NULL && archive_write_close(out) != ARCHIVE_OK && rc == 0)
        rc = fail(err, errlen, EBB_EIO, "unpacking: %s", archive_error_string(out));
    if (in != NULL)
        archive_read_free(in);
    if (out != NULL)
        archive_write_free(out);
    free(top);
    return rc;
}
