/* The job's packed workdir (the job document's workdir_archive), made the
 * job's working directory before it starts: the stored object is fetched
 * (a file:// store's file, or a presigned GET into an unnamed file on the
 * disk), decrypted and verified (ebb__ckpt_decrypt under the archive's
 * key, as checkpoint "workdir", file "<sha256>"; the plaintext's size and
 * SHA-256 must be the document's), and unpacked with
 * ebb__workdir_extract into a new directory beside <disk>/work/<job id>,
 * renamed into place once complete; a relative checkpoint.dir (ebbd sends
 * one that lies below the directory the job was submitted from) is put
 * below it. A later start on the same disk finds
 * it there and uses it as it is (the job may have written into it).
 * Decrypting and unpacking run on the loop, before the job and its
 * heartbeats start. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "base/log.h"
#include "base/paths.h"
#include "base/str.h"
#include "io/ckpt_object.h"
#include "io/workdir_tar.h"

/* A presigned GET's attempts and each one's time. */
#define FETCH_ATTEMPTS 5
#define FETCH_TIMEOUT_MS (30 * 60 * 1000)

struct fetch {
    struct agent *a;
    agent_workdir_done done;
    char *work;  /* <disk>/work */
    char *dest;  /* <disk>/work/<job id> */
    int fd;      /* the stored object */
    struct ebb__http_stream stream;
};

static void fetch_free(struct fetch *f)
{
    if (f->fd >= 0)
        close(f->fd);
    free(f->work);
    free(f->dest);
    free(f);
}

static void finish(struct fetch *f, const char *why)
{
    agent_workdir_done done = f->done;
    struct agent *a = f->a;
    char *ckpt = NULL;
    /* A relative checkpoint.dir lies below the workdir, as on the machine
     * the job was submitted from. */
    if (why == NULL && a->doc.ckpt_dir != NULL && a->doc.ckpt_dir[0] != '\0' &&
        a->doc.ckpt_dir[0] != '/' &&
        (ckpt = ebb_strfmt("%s/%s", f->dest, a->doc.ckpt_dir)) == NULL)
        why = "out of memory";
    if (why == NULL) {
        free(a->doc.workdir);
        a->doc.workdir = f->dest;
        f->dest = NULL;
        ebb__info("the job's workdir is %s", a->doc.workdir);
    }
    if (ckpt != NULL) {
        free(a->doc.ckpt_dir);
        a->doc.ckpt_dir = ckpt;
    }
    fetch_free(f);
    done(a, why);
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        return rmdir(path) == 0 ? 0 : -1;
    return unlink(path) == 0 ? 0 : -1;
}

/* Removes a half-unpacked tree of ours: depth first, links not followed. */
static void remove_tree(const char *dir)
{
    if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        ebb__warn("cannot remove %s: %s", dir, strerror(errno));
}

/* Decrypts the object in f->fd into an unnamed file, checks it is the
 * tar the document names, unpacks it and renames it into place. */
static void unpack(struct fetch *f)
{
    const struct agent_workdir_archive *w = &f->a->doc.workdir_archive;
    char why[1200] = "";
    int plain = open(f->work, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    struct ebb__ckpt_key key;
    struct ebb__ckpt_sums sums;
    struct ebb__ckpt_error err = {0};
    int in = f->fd, out = plain, rc = -1;
    if (plain < 0) {
        snprintf(why, sizeof(why), "cannot make a file in %s: %s", f->work, strerror(errno));
    } else if (lseek(f->fd, 0, SEEK_SET) != 0) {
        snprintf(why, sizeof(why), "cannot read the stored workdir: %s", strerror(errno));
    } else if (w->key[0] != '\0' && ebb__ckpt_key_from_hex(w->key, &key) != 0) {
        snprintf(why, sizeof(why), "the workdir's key is not a key");
    } else {
        rc = w->key[0] != '\0'
                 ? ebb__ckpt_decrypt(&key, "workdir", w->sha256, (int64_t)w->stored_size,
                                     ebb__ckpt_fd_read, &in, ebb__ckpt_fd_write, &out,
                                     &sums, &err)
                 : ebb__ckpt_copy(ebb__ckpt_fd_read, &in, ebb__ckpt_fd_write, &out, &sums,
                                  &err);
        if (w->key[0] != '\0')
            ebb__ckpt_key_wipe(&key);
        char hex[65];
        for (size_t i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", sums.sha256[i]);
        if (rc != 0)
            snprintf(why, sizeof(why), "the stored workdir is refused: %.1000s",
                     err.diag.msg[0] ? err.diag.msg : ebb_strerror(rc));
        else if (sums.size != w->size || strcmp(hex, w->sha256) != 0 ||
                 sums.stored_size != w->stored_size)
            snprintf(why, sizeof(why), "the stored workdir is not the one submitted "
                     "(%llu bytes with SHA-256 %s, not %llu bytes with %s)",
                     (unsigned long long)sums.size, hex, (unsigned long long)w->size,
                     w->sha256);
        rc = why[0] != '\0' ? -1 : 0;
    }
    char *tmp = rc == 0 ? ebb_strfmt("%s/.%s.XXXXXX", f->work, f->a->doc.job_id) : NULL;
    if (rc == 0 && (tmp == NULL || mkdtemp(tmp) == NULL)) {
        snprintf(why, sizeof(why), "cannot make a directory in %s: %s", f->work,
                 strerror(errno));
        rc = -1;
    }
    if (rc == 0 && lseek(plain, 0, SEEK_SET) != 0)
        rc = -1;
    char ex[512];
    if (rc == 0 && ebb__workdir_extract(plain, tmp, w->size, ex, sizeof(ex)) != 0) {
        snprintf(why, sizeof(why), "cannot unpack the workdir: %s", ex);
        rc = -1;
    }
    if (rc == 0 && rename(tmp, f->dest) != 0) {
        snprintf(why, sizeof(why), "cannot put the workdir at %s: %s", f->dest,
                 strerror(errno));
        rc = -1;
    }
    if (rc != 0 && tmp != NULL && access(tmp, F_OK) == 0)
        remove_tree(tmp);
    free(tmp);
    if (plain >= 0)
        close(plain);
    finish(f, rc == 0 ? NULL : why);
}

static void on_fetched(const struct ebb_http_response *res, void *arg)
{
    struct fetch *f = arg;
    char why[300];
    if (res->error != 0 || res->status != 200) {
        if (res->error != 0)
            snprintf(why, sizeof(why), "cannot download the stored workdir: %s",
                     ebb_strerror(res->error));
        else
            snprintf(why, sizeof(why), "cannot download the stored workdir: HTTP %d",
                     res->status);
        finish(f, why);
        return;
    }
    if ((uint64_t)f->stream.downloaded != f->a->doc.workdir_archive.stored_size) {
        snprintf(why, sizeof(why), "the stored workdir is %lld bytes, not %llu",
                 (long long)f->stream.downloaded,
                 (unsigned long long)f->a->doc.workdir_archive.stored_size);
        finish(f, why);
        return;
    }
    unpack(f);
}

/* The object of a file:// URL: opened without following a last link. */
static int open_file_url(const char *url, char *why, size_t len)
{
    const char *path = url + strlen("file://");
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        snprintf(why, len, "cannot open the stored workdir %s: %s", path, strerror(errno));
    return fd;
}

void agent_workdir_prepare(struct agent *a, agent_workdir_done done)
{
    const struct agent_workdir_archive *w = &a->doc.workdir_archive;
    if (w->url == NULL) {
        done(a, NULL);
        return;
    }
    char why[600];
    const char *home = getenv("HOME");
    char *disk = a->opt.disk ? ebb_strfmt("%s", a->opt.disk)
                             : ebb_strfmt("%s/.local/state/ebb", home ? home : "");
    struct fetch *f = calloc(1, sizeof(*f));
    if (f == NULL || disk == NULL) {
        free(f);
        free(disk);
        done(a, "out of memory");
        return;
    }
    *f = (struct fetch){.a = a, .done = done, .fd = -1};
    f->work = ebb_strfmt("%s/work", disk);
    f->dest = f->work ? ebb_strfmt("%s/%s", f->work, a->doc.job_id) : NULL;
    free(disk);
    struct stat st;
    char err[300] = "";
    if (f->dest == NULL || ebb__mkdir_p(f->work, err, sizeof(err)) != 0) {
        finish(f, err[0] ? err : "out of memory");
        return;
    }
    if (lstat(f->dest, &st) == 0) { /* unpacked before, on this disk */
        if (S_ISDIR(st.st_mode)) {
            finish(f, NULL);
        } else {
            snprintf(why, sizeof(why), "%s is not a directory", f->dest);
            finish(f, why);
        }
        return;
    }
    if (strncmp(w->url, "file://", 7) == 0) {
        f->fd = open_file_url(w->url, why, sizeof(why));
        if (f->fd < 0)
            finish(f, why);
        else
            unpack(f);
        return;
    }
    f->fd = open(f->work, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (f->fd < 0) {
        snprintf(why, sizeof(why), "cannot make a file in %s: %s", f->work, strerror(errno));
        finish(f, why);
        return;
    }
    f->stream = (struct ebb__http_stream){.upload_fd = -1, .download_fd = f->fd};
    struct ebb_http_request req = {
        .struct_size = sizeof(req), .method = "GET", .url = w->url,
        .timeout = FETCH_TIMEOUT_MS, .max_attempts = FETCH_ATTEMPTS,
    };
    int rc = ebb__http_request_stream(a->http, &req, &f->stream, on_fetched, f);
    if (rc != 0) {
        snprintf(why, sizeof(why), "cannot download the stored workdir: %s",
                 ebb_strerror(rc));
        finish(f, why);
    }
}
