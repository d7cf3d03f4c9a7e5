/* The objects' transfers of an upload (see store.h): each object or part
 * PUT through presigned URLs as it is made from the job's files
 * (ckpt_seal.h), at most `parallel` at once, retried by the HTTP client
 * (no answer, 5xx and SlowDown, 429); a 403 (an expired URL) asks ebbd
 * for fresh URLs once none is out; file:// objects are written on the
 * thread pool. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/upload_internal.h"
#include "base/log.h"
#include "base/str.h"

/* Per object or part: one attempt may take this long, and the HTTP
 * client tries this often (5xx, SlowDown, 429, no answer). */
#define XFER_TIMEOUT_MS (10 * 60 * 1000)
#define XFER_ATTEMPTS 6
/* How often refused URLs are asked for again in one upload. */
#define REFRESH_MAX 3

/* Lookups try `hint` first: ebbd answers in the order the agent sent
 * (the manifest's), so a checkpoint of 100,000 files is not matched in
 * quadratic time; another order is still accepted, at that cost. */
static struct xfer *find_xfer(struct agent_upload *u, size_t hint, size_t file, int number)
{
    if (hint < u->n_xfers && u->xfers[hint].file == file && u->xfers[hint].number == number)
        return &u->xfers[hint];
    for (size_t i = 0; i < u->n_xfers; i++)
        if (u->xfers[i].file == file && u->xfers[i].number == number)
            return &u->xfers[i];
    return NULL;
}

static size_t find_file(const struct agent_upload *u, size_t hint, const char *path)
{
    if (hint < u->m.n_files && strcmp(u->m.files[hint].path, path) == 0)
        return hint;
    for (size_t i = 0; i < u->m.n_files; i++)
        if (strcmp(u->m.files[i].path, path) == 0)
            return i;
    return SIZE_MAX;
}

/* `*k` counts the transfers this answer named so far (the hint). */
static int add_xfer(struct agent_upload *u, size_t *cap, size_t *k, size_t file, int number,
                    uint64_t offset, uint64_t length, const char *url)
{
    struct xfer *x = find_xfer(u, (*k)++, file, number);
    if (x != NULL) {   /* fresh URLs for what is still to do */
        if (x->offset != offset || x->length != length)
            return EBB_EPROTO;
        char *copy = ebb_strfmt("%s", url);
        if (copy == NULL)
            return EBB_ENOMEM;
        free(x->url);
        x->url = copy;
        return 0;
    }
    struct xfer *v = ebb__grow(u->xfers, cap, u->n_xfers, sizeof(*v), 16);
    if (v == NULL)
        return EBB_ENOMEM;
    u->xfers = v;
    x = &v[u->n_xfers];
    *x = (struct xfer){.u = u, .file = file, .number = number, .offset = offset,
                       .length = length, .url = ebb_strfmt("%s", url)};
    if (x->url == NULL)
        return EBB_ENOMEM;
    u->n_xfers++;
    return 0;
}

/* An object URL the agent may use: http(s) for s3 and oss; for file://
 * an absolute path with no "." or ".." component and no empty one. */
static bool is_url(const char *url, bool store_file)
{
    if (!store_file)
        return strncmp(url, "https://", 8) == 0 || strncmp(url, "http://", 7) == 0;
    if (strncmp(url, "file:///", 8) != 0)
        return false;
    for (const char *c = url + 7; *c == '/';) {
        const char *seg = c + 1;
        size_t n = strcspn(seg, "/");
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return false;
        c = seg + n;
    }
    return true;
}

/* The `uploading` answer's files: every file exactly once, one PUT or
 * parts covering the stored object in order. */
int agent_up_take_urls(struct agent_upload *u, json_t *files, char *why, size_t len)
{
    bool store_file = u->a->doc.store.kind == AGENT_STORE_FILE;
    if (!json_is_array(files) || json_array_size(files) != u->m.n_files) {
        snprintf(why, len, "ebbd's upload URLs do not list the checkpoint's %zu files",
                 u->m.n_files);
        return EBB_EPROTO;
    }
    size_t cap = u->n_xfers, k = 0, i;
    json_t *f;
    bool *seen = calloc(u->m.n_files, sizeof(*seen));
    if (seen == NULL) {
        snprintf(why, len, "out of memory");
        return EBB_ENOMEM;
    }
    json_array_foreach(files, i, f) {
        const char *path = json_string_value(json_object_get(f, "path"));
        size_t fi = path ? find_file(u, i, path) : SIZE_MAX;
        if (fi == SIZE_MAX || seen[fi]) {
            free(seen);
            snprintf(why, len, "ebbd sent URLs for a file the checkpoint does not have, "
                     "or twice for one");
            return EBB_EPROTO;
        }
        seen[fi] = true;
        uint64_t stored = u->m.files[fi].stored_size;
        json_t *parts = json_object_get(f, "parts");
        const char *url = json_string_value(json_object_get(f, "url"));
        int rc = 0;
        if (url != NULL && parts == NULL) {
            if (!is_url(url, store_file) || stored > (uint64_t)AGENT_PART_MAX)
                rc = EBB_EPROTO;
            else
                rc = add_xfer(u, &cap, &k, fi, 0, 0, stored, url);
        } else if (json_is_array(parts) && json_array_size(parts) > 0 &&
                   json_array_size(parts) <= 10000 && !store_file) {
            uint64_t at = 0;
            size_t pk;
            json_t *p;
            json_array_foreach(parts, pk, p) {
                json_t *n = json_object_get(p, "number"), *o = json_object_get(p, "offset"),
                       *l = json_object_get(p, "length");
                const char *purl = json_string_value(json_object_get(p, "url"));
                if (!json_is_integer(n) || json_integer_value(n) != (json_int_t)pk + 1 ||
                    !json_is_integer(o) || json_integer_value(o) != (json_int_t)at ||
                    !json_is_integer(l) || json_integer_value(l) <= 0 ||
                    json_integer_value(l) > AGENT_PART_MAX ||
                    (uint64_t)json_integer_value(l) > stored - at || purl == NULL ||
                    !is_url(purl, false)) {
                    rc = EBB_EPROTO;
                    break;
                }
                rc = add_xfer(u, &cap, &k, fi, (int)pk + 1, at,
                              (uint64_t)json_integer_value(l), purl);
                if (rc != 0)
                    break;
                at += (uint64_t)json_integer_value(l);
            }
            if (rc == 0 && at != stored)
                rc = EBB_EPROTO;
        } else {
            rc = EBB_EPROTO;
        }
        if (rc != 0) {
            free(seen);
            if (rc == EBB_ENOMEM)
                snprintf(why, len, "out of memory");
            else
                snprintf(why, len, "ebbd's upload URLs for %.200s are not usable (parts "
                         "must cover the object in order)", path);
            return rc;
        }
    }
    free(seen);
    return 0;
}

/* ETag of a PUT answer, quotes kept (CompleteMultipartUpload wants them). */
static void take_etag(struct xfer *x, const struct ebb_http_response *res)
{
    if (res->headers == NULL ||
        ebb__http_header(res->headers, "ETag", x->etag, sizeof(x->etag)) != 0)
        x->etag[0] = '\0';
}

/* A transfer's chunk buffer: a spare one, or a new one while fewer than
 * `parallel` exist. */
static unsigned char *take_buffer(struct agent_upload *u)
{
    return u->n_spare > 0 ? u->spare[--u->n_spare] : malloc(EBB__CKPT_STREAM_MEMORY);
}

void agent_xfer_release(struct xfer *x)
{
    agent_seal_reader_close(&x->reader);
    if (x->buf != NULL)
        x->u->spare[x->u->n_spare++] = x->buf;
    x->buf = NULL;
    free(x->fps);
    x->fps = NULL;
}

static void xfer_finished(struct xfer *x, bool ok)
{
    struct agent_upload *u = x->u;
    agent_xfer_release(x);
    x->running = false;
    u->running--;
    if (ok) {
        x->done = true;
        u->done++;
    }
    if (u->state != UP_ENDING)
        agent_up_run(u);
}

static void on_put(const struct ebb_http_response *res, void *arg)
{
    struct xfer *x = arg;
    struct agent_upload *u = x->u;
    if (!agent_up_alive(u))
        return;
    if (res->error == 0 && res->status / 100 == 2) {
        take_etag(x, res);
        if (x->etag[0] == '\0') {
            xfer_finished(x, false);
            if (u->state != UP_ENDING)
                agent_up_fail(u, "the store's answer to %s has no ETag", u->m.files[x->file].path);
            return;
        }
        xfer_finished(x, true);
        return;
    }
    if (res->error == 0 && res->status == 403 && u->refreshes < REFRESH_MAX) {
        /* Most likely an expired URL: ask ebbd for fresh ones once the
         * transfers in flight are back. */
        u->refresh_wanted = true;
        xfer_finished(x, false);
        return;
    }
    char why[300];
    bool refused = x->why[0] != '\0';   /* the reader's: the file, not the store */
    if (refused)
        memcpy(why, x->why, sizeof(why));
    else
        agent_describe_failure(res, why, sizeof(why));
    xfer_finished(x, false);
    if (u->state == UP_ENDING)
        return;
    if (refused)
        agent_up_refuse(u, why);
    else
        agent_up_fail(u, "uploading %s%s: %s", u->m.files[x->file].path,
                      x->number ? " (a part)" : "", why);
}

/* The loop's reads: every chunk matched at once, before it is sent. */
static int seen_on_loop(void *arg, uint64_t chunk, const unsigned char *fp)
{
    struct xfer *x = arg;
    return agent_seal_check(&x->u->seal, chunk, fp);
}

static ssize_t xfer_read(void *arg, int64_t offset, void *buf, size_t len)
{
    struct xfer *x = arg;
    ssize_t n = agent_seal_read(&x->reader, x->offset + (uint64_t)offset, buf, len,
                                seen_on_loop, x);
    if (n < 0)
        memcpy(x->why, x->reader.why, sizeof(x->why));
    return n;
}

/* The thread pool's reads (file://): kept, and matched on the loop once
 * the object is written and before it counts. */
static int seen_on_pool(void *arg, uint64_t chunk, const unsigned char *fp)
{
    struct xfer *x = arg;
    uint64_t k = chunk - x->u->seal.first_chunk[x->file];
    memcpy(x->fps[k], fp, AGENT_FP_LEN);
    x->n_fps = k + 1;
    return 0;
}

/* file:// objects: a temporary beside the object, fsync()ed and renamed;
 * no link followed in the last component. Runs on the thread pool. */
static void file_put_work(uv_work_t *w)
{
    struct xfer *x = w->data;
    const char *path = x->url + strlen("file://");
    const char *slash = strrchr(path, '/');
    x->work_rc = 0;
    char *dir = ebb_strfmt("%.*s", (int)(slash - path), path);
    char *tmp = ebb_strfmt(".%s.tmp-%d", slash + 1, (int)getpid());
    int dfd = dir && tmp ? open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                      O_CLOEXEC) : -1;
    int out = dfd >= 0 ? openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
                                              O_CLOEXEC, 0600) : -1;
    int rc = out >= 0 ? 0 : -errno;
    uint64_t at = x->offset, left = x->length;
    static const size_t buf_size = 256 << 10;
    char *buf = rc == 0 ? malloc(buf_size) : NULL;
    if (rc == 0 && buf == NULL)
        rc = -ENOMEM;
    bool read_failed = false;
    while (rc == 0 && left > 0) {
        ssize_t n = agent_seal_read(&x->reader, at, buf, left < buf_size ? left : buf_size,
                                    seen_on_pool, x);
        if (n < 0) {
            read_failed = true;
            rc = -EIO;
            break;
        }
        int wfd = out;
        rc = ebb__ckpt_fd_write(&wfd, buf, (size_t)n) == 0 ? 0 : -EIO;
        at += (uint64_t)n;
        left -= (uint64_t)n;
    }
    free(buf);
    if (rc == 0 && fsync(out) != 0)
        rc = -errno;
    if (out >= 0 && close(out) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && renameat(dfd, tmp, dfd, slash + 1) != 0)
        rc = -errno;
    if (rc == 0 && fsync(dfd) != 0)
        rc = -errno;
    if (rc != 0 && dfd >= 0)
        unlinkat(dfd, tmp, 0);
    if (read_failed) {
        memcpy(x->why, x->reader.why, sizeof(x->why));
        x->work_rc = rc;
    } else if (rc != 0) {
        snprintf(x->why, sizeof(x->why), "%s: %s", path, strerror(-rc));
        x->work_rc = rc;
    }
    if (dfd >= 0)
        close(dfd);
    free(dir);
    free(tmp);
}

static void file_put_done(uv_work_t *w, int status)
{
    struct xfer *x = w->data;
    struct agent_upload *u = x->u;
    if (!agent_up_alive(u))
        return;
    bool ok = status == 0 && x->work_rc == 0;
    bool changed = false;
    uint64_t first = u->seal.first_chunk[x->file];
    for (uint64_t k = 0; ok && !changed && k < x->n_fps; k++)
        changed = agent_seal_check(&u->seal, first + k, x->fps[k]) != 0;
    bool refused = !ok && x->reader.why[0] != '\0';
    char why[sizeof(x->why)];
    snprintf(why, sizeof(why), changed ? "%s changed while it was read" : "%s",
             changed ? u->m.files[x->file].path : x->why[0] ? x->why : "cancelled");
    xfer_finished(x, ok && !changed);
    if (ok && !changed)
        return;
    if (u->state == UP_ENDING)
        return;
    if (changed || refused)
        agent_up_refuse(u, why);
    else
        agent_up_fail(u, "writing %s to the store: %s", u->m.files[x->file].path, why);
}

static int start_file_put(struct agent_upload *u, struct xfer *x)
{
    uint64_t chunks = u->seal.first_chunk[x->file + 1] - u->seal.first_chunk[x->file];
    x->fps = calloc(chunks, sizeof(*x->fps));
    x->n_fps = 0;
    x->work.data = x;
    if (x->fps != NULL && uv_queue_work(&u->a->loop, &x->work, file_put_work, file_put_done) == 0)
        return 0;
    return EBB_EIO;
}

static int start_http_put(struct agent_upload *u, struct xfer *x)
{
    x->s = (struct ebb__http_stream){
        .upload_fd = -1,
        .upload_read = xfer_read,
        .upload_arg = x,
        .upload_len = (int64_t)x->length,
        .download_fd = -1,
    };
    /* No header of our own: OSS V4 signs Content-Type when one is sent,
     * and the presigned URL signed none. */
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = "PUT", .url = x->url,
        .timeout = XFER_TIMEOUT_MS, .max_attempts = XFER_ATTEMPTS,
    };
    return ebb__http_request_stream(u->a->http, &req, &x->s, on_put, x);
}

static int start_xfer(struct agent_upload *u, struct xfer *x)
{
    x->why[0] = '\0';
    x->buf = take_buffer(u);
    if (x->buf == NULL)
        return EBB_ENOMEM;
    int rc = agent_seal_reader_open(&x->reader, &u->seal, x->file, x->buf);
    if (rc != 0)
        memcpy(x->why, x->reader.why, sizeof(x->why));
    if (rc == 0 && strncmp(x->url, "file://", 7) == 0)
        rc = start_file_put(u, x);
    else if (rc == 0)
        rc = start_http_put(u, x);
    if (rc != 0)
        agent_xfer_release(x);
    return rc;
}

void agent_up_run(struct agent_upload *u)
{
    if (u->state != UP_TRANSFER)
        return;
    if (u->refresh_wanted) {
        if (u->running == 0)
            agent_up_refresh(u);
        return;
    }
    /* Transfers start in order; the cursor passes each once (and goes
     * back to the start after fresh URLs), so 100,000 objects are not
     * scanned again at every answer. */
    for (; u->cursor < u->n_xfers && u->running < (size_t)u->a->doc.store.parallel;
         u->cursor++) {
        struct xfer *x = &u->xfers[u->cursor];
        if (x->done || x->running)
            continue;
        int rc = start_xfer(u, x);
        if (rc != 0) {
            if (x->why[0] != '\0')   /* the file could not be opened */
                agent_up_refuse(u, x->why);
            else
                agent_up_fail(u, "cannot start an upload: %s", ebb_strerror(rc));
            return;
        }
        x->running = true;
        u->running++;
        u->pending++;
    }
    if (u->done == u->n_xfers && u->running == 0 && u->seal.hashed_done)
        agent_up_commit(u);
}
