/* The fake ebbd's checkpoint store (see fake_store.h). */
#include "fake_store.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include <ebb/digest.h>

#include "io/ckpt_manifest.h"
#include "io/http_client.h"
#include "objstore/objstore.h"

/* tests/objstore/servers.h names a function as fake.h does: it is built
 * for these tests under another name (tests/agent/meson.build). */
#define fake_count s3fake_count
#include "../objstore/servers.h"
#undef fake_count

#define BUCKET "ckpt-bucket"
#define PREFIX "ebb"

static int64_t wall_ms(void *ctx)
{
    (void)ctx;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

const char *fstore_key(json_t *row, int index, char *buf, size_t size)
{
    long long id = (long long)json_integer_value(json_object_get(row, "id"));
    const char *name = json_string_value(json_object_get(row, "name"));
    if (index < 0)
        snprintf(buf, size, "jobs/" FSTORE_JOB "/ckpt/%lld-%s/manifest.json", id, name);
    else
        snprintf(buf, size, "jobs/" FSTORE_JOB "/ckpt/%lld-%s/f%d", id, name, index);
    return buf;
}

/* The URL the agent uses for `key`: presigned, or file:// for a directory. */
static char *url_for(struct fake_store *fs, enum ebb__objstore_presign_op op,
                     const char *key, const char *upload_id, int part)
{
    if (!fs->s3)
        return ebb_strfmt("file://%s/%s", fs->dir, key);
    char *url = NULL;
    assert_int_equal(ebb__objstore_presign(fs->os, op, key, upload_id, part, 3600, &url), 0);
    if (op != EBB__PRESIGN_GET && fs->spoil_urls > 0) {
        char *last = url + strlen(url) - 1;  /* X-Amz-Signature's last digit */
        *last = *last == '0' ? '1' : '0';
    }
    return url;
}

/* ---- rows ---- */

static json_t *row_by_id(struct fake_store *fs, int64_t id)
{
    size_t i;
    json_t *row;
    json_array_foreach(fs->rows, i, row)
        if (json_integer_value(json_object_get(row, "id")) == id)
            return row;
    return NULL;
}

static void set_state(json_t *row, const char *state, const char *reason)
{
    json_object_set_new(row, "state", json_string(state));
    if (reason != NULL)
        json_object_set_new(row, "reason", json_string(reason));
}

json_t *fstore_row(const struct fake_store *fs, size_t nth)
{
    return json_array_get(fs->rows, nth);
}

size_t fstore_count(const struct fake_store *fs, const char *state)
{
    size_t n = 0, i;
    json_t *row;
    json_array_foreach(fs->rows, i, row)
        n += strcmp(json_string_value(json_object_get(row, "state")), state) == 0;
    return n;
}

/* An operation on a row's objects: when the row's last one is back, `next`
 * moves it on. */
struct op {
    struct fake_store *fs;
    json_t *row;
    json_t *file;
    void (*next)(struct fake_store *fs, json_t *row);
    int fd;
};

static struct op *op_new(struct fake_store *fs, json_t *row, json_t *file,
                         void (*next)(struct fake_store *, json_t *))
{
    struct op *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    *o = (struct op){fs, row, file, next, -1};
    json_object_set_new(row, "ops", json_integer(json_integer_value(
                                        json_object_get(row, "ops")) + 1));
    fs->ops++;
    return o;
}

static void op_done(struct op *o, const struct ebb__objstore_result *r, const char *what)
{
    struct fake_store *fs = o->fs;
    fs->ops--;
    int left = (int)json_integer_value(json_object_get(o->row, "ops")) - 1;
    json_object_set_new(o->row, "ops", json_integer(left));
    if (r->status != 0 && json_object_get(o->row, "reason") == NULL) {
        char why[512];
        snprintf(why, sizeof(why), "%s: %s", what, r->message);
        set_state(o->row, "failed", why);
    }
    if (left == 0 && strcmp(json_string_value(json_object_get(o->row, "state")),
                            "failed") != 0)
        o->next(fs, o->row);
    if (o->fd >= 0)
        close(o->fd);
    free(o);
}

/* ---- preparing -> uploading ---- */

static void to_uploading(struct fake_store *fs, json_t *row)
{
    (void)fs;
    set_state(row, "uploading", NULL);
}

static void on_created(void *arg, const struct ebb__objstore_result *r)
{
    struct op *o = arg;
    if (r->status == 0)
        json_object_set_new(o->file, "upload_id", json_string(r->upload_id));
    op_done(o, r, "CreateMultipartUpload");
}

static void prepare(struct fake_store *fs, json_t *row)
{
    size_t i;
    json_t *file;
    bool any = false;
    json_array_foreach(json_object_get(row, "files"), i, file) {
        int64_t stored = json_integer_value(json_object_get(file, "stored_size"));
        if (!fs->s3 || stored <= fs->part_size)
            continue;
        char key[512];
        fstore_key(row, (int)i, key, sizeof(key));
        struct op *o = op_new(fs, row, file, to_uploading);
        assert_int_equal(ebb__objstore_mpu_create(fs->os, key, on_created, o), 0);
        any = true;
    }
    if (!any)
        to_uploading(fs, row);
}

/* ---- completing -> durable ---- */

static void to_durable(struct fake_store *fs, json_t *row)
{
    (void)fs;
    set_state(row, "durable", NULL);
}

static void on_manifest_put(void *arg, const struct ebb__objstore_result *r)
{
    op_done(arg, r, "PutObject manifest");
}

static int unhex32(const char *hex, unsigned char *out)
{
    return hex != NULL && strlen(hex) == 64 ? ebb__ckpt_unhex(hex, out, 32) : EBB_EINVAL;
}

/* Everything is stored: the manifest, last. */
static void write_manifest(struct fake_store *fs, json_t *row)
{
    struct ebb__ckpt_manifest m = {0};
    ebb__strlcpy(m.name, json_string_value(json_object_get(row, "name")), sizeof(m.name));
    m.kind = strcmp(json_string_value(json_object_get(row, "kind")), "file") == 0
                 ? EBB__CKPT_KIND_FILE : EBB__CKPT_KIND_DIRECTORY;
    ebb__strlcpy(m.job, FSTORE_JOB, sizeof(m.job));
    m.created = wall_ms(NULL);
    m.encrypt = fs->encrypt;
    assert_int_equal(ebb__ckpt_manifest_set_key(&m, &fs->key, 1), 0);
    json_t *commit = json_object_get(json_object_get(row, "commit"), "files");
    m.n_files = json_array_size(commit);
    m.files = calloc(m.n_files, sizeof(*m.files));
    assert_non_null(m.files);
    for (size_t i = 0; i < m.n_files; i++) {
        json_t *cf = json_array_get(commit, i);
        struct ebb__ckpt_manifest_file *mf = &m.files[i];
        mf->path = ebb_strfmt("%s", json_string_value(json_object_get(cf, "path")));
        mf->size = (uint64_t)json_integer_value(json_object_get(cf, "size"));
        assert_int_equal(unhex32(json_string_value(json_object_get(cf, "sha256")),
                                 mf->sha256), 0);
        if (fs->encrypt) {
            mf->stored_size = (uint64_t)json_integer_value(json_object_get(cf, "stored_size"));
            assert_int_equal(unhex32(json_string_value(json_object_get(cf, "stored_sha256")),
                                     mf->stored_sha256), 0);
        }
    }
    char *text = NULL;
    size_t len = 0;
    struct ebb__ckpt_error err = {0};
    int rc = ebb__ckpt_manifest_write(&m, &fs->key, &text, &len, &err);
    ebb__ckpt_manifest_clear(&m);
    if (rc != 0) {
        set_state(row, "failed", err.diag.msg);
        return;
    }
    char path[512], key[512];
    snprintf(path, sizeof(path), "%s/manifest-XXXXXX", fs->f->dir);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    free(text);
    struct op *o = op_new(fs, row, NULL, to_durable);
    o->fd = fd;
    fstore_key(row, -1, key, sizeof(key));
    assert_int_equal(ebb__objstore_put(fs->os, key, fd, 0, (int64_t)len, on_manifest_put, o), 0);
}

static void on_completed(void *arg, const struct ebb__objstore_result *r)
{
    op_done(arg, r, "CompleteMultipartUpload");
}

static void on_headed(void *arg, const struct ebb__objstore_result *r)
{
    struct op *o = arg;
    int64_t want = json_integer_value(json_object_get(o->file, "stored_size"));
    if (r->status == 0 && r->size != want) {
        char why[128];
        snprintf(why, sizeof(why), "stored %lld bytes, not %lld", (long long)r->size,
                 (long long)want);
        set_state(o->row, "failed", why);
    }
    op_done(o, r, "HeadObject");
}

/* Completes (or checks) the row's objects one at a time, as the row's
 * "cursor" goes: the fake S3 serves one request at a time, and a burst of
 * hundreds of connections would overflow its listen queue. Then the
 * manifest. */
static void complete(struct fake_store *fs, json_t *row)
{
    size_t i = (size_t)json_integer_value(json_object_get(row, "cursor"));
    json_t *file = json_array_get(json_object_get(row, "files"), i);
    if (file == NULL) {
        write_manifest(fs, row);
        return;
    }
    json_object_set_new(row, "cursor", json_integer((json_int_t)i + 1));
    char key[512];
    fstore_key(row, (int)i, key, sizeof(key));
    json_t *cf = json_array_get(json_object_get(json_object_get(row, "commit"), "files"), i);
    const char *upload = json_string_value(json_object_get(file, "upload_id"));
    struct op *o = op_new(fs, row, file, complete);
    if (upload == NULL) {
        assert_int_equal(ebb__objstore_head(fs->os, key, on_headed, o), 0);
        return;
    }
    json_t *parts = json_object_get(cf, "parts");
    size_t n = json_array_size(parts);
    const char **etags = calloc(n ? n : 1, sizeof(*etags));
    assert_non_null(etags);
    for (size_t k = 0; k < n; k++)
        etags[k] = json_string_value(json_object_get(json_array_get(parts, k), "etag"));
    assert_int_equal(ebb__objstore_mpu_complete(fs->os, key, upload, etags, n, on_completed,
                                                o), 0);
    free(etags);
}

/* ---- the endpoints ---- */

static void answer(struct ebb__httpd_response *res, int status, json_t *body)
{
    res->status = status;
    char *text = json_dumps(body, JSON_COMPACT);
    ebb__httpd_set_bodyf(res, "%s", text);
    free(text);
    json_decref(body);
}

static void refuse(struct ebb__httpd_response *res, int status, const char *why)
{
    answer(res, status, json_pack("{s:s}", "error", why));
}

static void post_checkpoint(struct fake_store *fs, json_t *body,
                            struct ebb__httpd_response *res)
{
    const char *name = json_string_value(json_object_get(body, "name"));
    const char *kind = json_string_value(json_object_get(body, "kind"));
    json_t *files = json_object_get(body, "files");
    if (name == NULL || kind == NULL || !json_is_array(files) || json_array_size(files) == 0) {
        refuse(res, 400, "name, kind and files are required");
        return;
    }
    fs->posts++;
    res->delay_ms = fs->post_delay_ms;
    int64_t id = (int64_t)json_array_size(fs->rows) + 1;
    json_t *row = json_pack("{s:I, s:s, s:s, s:s, s:O, s:i}", "id", (json_int_t)id,
                            "name", name, "kind", kind, "state", "preparing",
                            "files", files, "ops", 0);
    json_array_append_new(fs->rows, row);
    if (!fs->s3) {  /* ebbd makes the checkpoint's directory */
        char cmd[1024], key[512];
        fstore_key(row, 0, key, sizeof(key));
        *strrchr(key, '/') = '\0';
        snprintf(cmd, sizeof(cmd), "mkdir -p -m 0700 '%s/%s'", fs->dir, key);
        assert_int_equal(system(cmd), 0);
    }
    prepare(fs, row);
    answer(res, 202, json_pack("{s:I, s:s}", "id", (json_int_t)id, "state", "preparing"));
}

static json_t *upload_urls(struct fake_store *fs, json_t *row)
{
    json_t *out = json_array();
    size_t i;
    json_t *file;
    json_array_foreach(json_object_get(row, "files"), i, file) {
        char key[512];
        fstore_key(row, (int)i, key, sizeof(key));
        const char *path = json_string_value(json_object_get(file, "path"));
        const char *upload = json_string_value(json_object_get(file, "upload_id"));
        if (upload == NULL) {
            char *url = url_for(fs, EBB__PRESIGN_PUT, key, NULL, 0);
            json_array_append_new(out, json_pack("{s:s, s:s}", "path", path, "url", url));
            free(url);
            continue;
        }
        int64_t stored = json_integer_value(json_object_get(file, "stored_size"));
        json_t *parts = json_array();
        int n = 1;
        for (int64_t at = 0; at < stored; at += fs->part_size, n++) {
            int64_t len = stored - at < fs->part_size ? stored - at : fs->part_size;
            char *url = url_for(fs, EBB__PRESIGN_PART, key, upload, n);
            json_array_append_new(parts, json_pack("{s:i, s:I, s:I, s:s}", "number", n,
                                                   "offset", (json_int_t)at,
                                                   "length", (json_int_t)len, "url", url));
            free(url);
        }
        json_array_append_new(out, json_pack("{s:s, s:o}", "path", path, "parts", parts));
    }
    return out;
}

static void get_checkpoint(struct fake_store *fs, json_t *row,
                           struct ebb__httpd_response *res)
{
    const char *state = json_string_value(json_object_get(row, "state"));
    json_t *body = json_pack("{s:O, s:s}", "id", json_object_get(row, "id"), "state", state);
    if (strcmp(state, "uploading") == 0) {
        fs->url_gets++;
        json_object_set_new(body, "expires_at", json_integer(wall_ms(NULL) + 3600000));
        json_object_set_new(body, "files", upload_urls(fs, row));
        if (fs->spoil_urls > 0)
            fs->spoil_urls--;
    } else if (strcmp(state, "failed") == 0) {
        json_object_set(body, "reason", json_object_get(row, "reason"));
    } else if (strcmp(state, "durable") == 0) {
        json_object_set_new(body, "bytes", json_integer(0));
        json_object_set(body, "upload_ms", json_object_get(json_object_get(row, "commit"),
                                                           "upload_ms"));
    }
    answer(res, 200, body);
    if (strcmp(state, "uploading") == 0 && fs->on_uploading != NULL)
        fs->on_uploading(fs);
}

static void commit(struct fake_store *fs, json_t *row, json_t *body,
                   struct ebb__httpd_response *res)
{
    json_t *files = json_object_get(body, "files");
    if (strcmp(json_string_value(json_object_get(row, "state")), "uploading") != 0 ||
        json_array_size(files) != json_array_size(json_object_get(row, "files"))) {
        refuse(res, 409, "not uploading, or not its files");
        return;
    }
    fs->commits++;
    json_object_set(row, "commit", body);
    set_state(row, "completing", NULL);
    complete(fs, row);
    res->delay_ms = fs->commit_delay_ms;
    answer(res, 202, json_pack("{s:s}", "state", "completing"));
}

static void get_resume(struct fake_store *fs, struct ebb__httpd_response *res)
{
    fs->resume_gets++;
    json_t *list = json_array();
    for (size_t i = json_array_size(fs->rows); i-- > 0;) {
        json_t *row = json_array_get(fs->rows, i);
        if (strcmp(json_string_value(json_object_get(row, "state")), "durable") != 0)
            continue;
        char key[512];
        json_t *files = json_array();
        size_t k;
        json_t *file;
        json_array_foreach(json_object_get(row, "files"), k, file) {
            char *url = url_for(fs, EBB__PRESIGN_GET, fstore_key(row, (int)k, key, sizeof(key)),
                                NULL, 0);
            json_array_append_new(files, json_pack("{s:O, s:s, s:O}", "path",
                                                   json_object_get(file, "path"), "url", url,
                                                   "stored_size",
                                                   json_object_get(file, "stored_size")));
            free(url);
        }
        char *murl = url_for(fs, EBB__PRESIGN_GET, fstore_key(row, -1, key, sizeof(key)),
                             NULL, 0);
        json_array_append_new(list, json_pack("{s:O, s:O, s:s, s:o}", "id",
                                              json_object_get(row, "id"), "name",
                                              json_object_get(row, "name"), "manifest_url",
                                              murl, "files", files));
        free(murl);
    }
    answer(res, 200, json_pack("{s:o}", "checkpoints", list));
    res->delay_ms = fs->resume_delay_ms;
}

static bool route(struct fake *f, const struct ebb__httpd_request *req,
                  struct ebb__httpd_response *res)
{
    struct fake_store *fs = f->user;
    const char *p = req->path;
    if (strcmp(req->method, "GET") == 0 && strcmp(p, "/v1/agent/resume") == 0) {
        get_resume(fs, res);
        return true;
    }
    json_t *body = req->body_len ? json_loadb(req->body, req->body_len, 0, NULL) : NULL;
    if (strcmp(req->method, "POST") == 0 && strcmp(p, "/v1/agent/checkpoints") == 0) {
        post_checkpoint(fs, body, res);
        json_decref(body);
        return true;
    }
    static const char base[] = "/v1/agent/checkpoints/";
    if (strncmp(p, base, strlen(base)) != 0) {
        json_decref(body);
        return false;
    }
    char *end;
    int64_t id = strtoll(p + strlen(base), &end, 10);
    json_t *row = row_by_id(fs, id);
    if (row == NULL) {
        refuse(res, 404, "no such checkpoint");
    } else if (strcmp(req->method, "GET") == 0 && *end == '\0') {
        get_checkpoint(fs, row, res);
    } else if (strcmp(req->method, "DELETE") == 0 && *end == '\0') {
        fs->deletes++;
        set_state(row, "failed", "the agent gave up");
        answer(res, 200, json_pack("{s:s}", "state", "failed"));
    } else if (strcmp(req->method, "POST") == 0 && strcmp(end, "/commit") == 0 &&
               json_is_object(body)) {
        commit(fs, row, body, res);
    } else {
        refuse(res, 400, "bad checkpoint request");
    }
    json_decref(body);
    return true;
}

/* ---- setup ---- */

void fstore_init(struct fake_store *fs, struct fake *f, int kind, int64_t part_size,
                 int parallel, bool encrypt)
{
    memset(fs, 0, sizeof(*fs));
    fs->f = f;
    fs->s3 = kind != FSTORE_FILE;
    fs->oss = kind == FSTORE_OSS;
    fs->part_size = part_size;
    fs->parallel = parallel;
    fs->encrypt = encrypt;
    fs->rows = json_array();
    assert_int_equal(ebb__ckpt_key_generate(&fs->key), 0);
    ebb__ckpt_key_to_hex(&fs->key, fs->key_hex);
    char url[512], endpoint[64];
    struct ebb__objstore_cfg cfg = {.url = url, .now = wall_ms};
    struct ebb__objstore_creds creds = {0};
    if (fs->s3) {
        struct test_server srv;
        fake_start_flavour(&srv, fs->oss ? "oss" : "s3", BUCKET, 1000, 5 << 20);
        fs->s3_pid = srv.pid;
        fs->s3_port = srv.port;
        memcpy(fs->s3_dir, srv.dir, sizeof(fs->s3_dir));
        memcpy(fs->s3_log, srv.log, sizeof(fs->s3_log));
        memcpy(fs->s3_faults, srv.faults, sizeof(fs->s3_faults));
        /* OSS addresses buckets by host only: BUCKET.localhost. */
        snprintf(url, sizeof(url), "%s://" BUCKET "/" PREFIX, fs->oss ? "oss" : "s3");
        snprintf(endpoint, sizeof(endpoint), "http://%s:%d",
                 fs->oss ? "localhost" : "127.0.0.1", srv.port);
        cfg.region = fs->oss ? "cn-hangzhou" : "us-east-1";
        cfg.endpoint = endpoint;
        cfg.path_style = !fs->oss;
        creds.access_key_id = FAKE_AKID;
        creds.secret_access_key = FAKE_SECRET;
    } else {
        snprintf(fs->dir, sizeof(fs->dir), "%s/store", f->dir);
        assert_int_equal(mkdir(fs->dir, 0700), 0);
        snprintf(url, sizeof(url), "file://%s", fs->dir);
    }
    assert_int_equal(ebb__http_init(&fs->http, &f->loop), 0);
    char err[256];
    int rc = ebb__objstore_open(&cfg, &creds, fs->http, &f->loop, &fs->os, err, sizeof(err));
    if (rc != 0)
        fail_msg("objstore: %s", err);
    f->user = fs;
    f->route = route;
}

static void on_http_closed(void *arg)
{
    bool *closed = arg;
    *closed = true;
}

void fstore_close(struct fake_store *fs)
{
    while (fs->ops > 0 && !fs->f->watchdog_fired)
        uv_run(&fs->f->loop, UV_RUN_ONCE);
    bool closed = false;
    ebb__http_close(fs->http, on_http_closed, &closed);
    while (!closed)
        uv_run(&fs->f->loop, UV_RUN_ONCE);
    ebb__objstore_free(fs->os);
    fs->f->route = NULL;
    json_decref(fs->rows);
    if (fs->s3) {
        struct test_server srv = {.pid = fs->s3_pid};
        memcpy(srv.dir, fs->s3_dir, sizeof(srv.dir));
        server_stop(&srv);
    }
}

const char *fstore_doc(const struct fake_store *fs)
{
    static char doc[512];
    if (fs->encrypt)
        snprintf(doc, sizeof(doc), ", \"store\": {\"name\": \"ckpt\", \"kind\": \"%s\", "
                 "\"encrypt\": true, \"key\": \"%s\", \"key_version\": 1, "
                 "\"part_size\": %lld, \"parallel\": %d}", fs->oss ? "oss" : fs->s3 ? "s3" : "file",
                 fs->key_hex, (long long)fs->part_size, fs->parallel);
    else
        snprintf(doc, sizeof(doc), ", \"store\": {\"name\": \"ckpt\", \"kind\": \"%s\", "
                 "\"encrypt\": false, \"key\": \"%s\", \"part_size\": %lld, "
                 "\"parallel\": %d}", fs->oss ? "oss" : fs->s3 ? "s3" : "file", fs->key_hex,
                 (long long)fs->part_size, fs->parallel);
    return doc;
}

/* ---- reading and changing stored objects ---- */

struct wait {
    bool done;
    int status;
    int64_t size;
};

static void on_op(void *arg, const struct ebb__objstore_result *r)
{
    struct wait *w = arg;
    w->done = true;
    w->status = r->status;
    w->size = r->size;
}

static void wait_op(struct fake_store *fs, struct wait *w)
{
    while (!w->done && !fs->f->watchdog_fired)
        uv_run(&fs->f->loop, UV_RUN_ONCE);
    assert_true(w->done);
}

char *fstore_get(struct fake_store *fs, const char *key, size_t *len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/get-XXXXXX", fs->f->dir);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    struct wait w = {0};
    assert_int_equal(ebb__objstore_get(fs->os, key, 0, -1, fd, 0, on_op, &w), 0);
    wait_op(fs, &w);
    if (w.status != 0) {
        close(fd);
        return NULL;
    }
    off_t n = lseek(fd, 0, SEEK_END);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)n, 0), n);
    buf[n] = '\0';
    close(fd);
    *len = (size_t)n;
    return buf;
}

void fstore_put(struct fake_store *fs, const char *key, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/put-XXXXXX", fs->f->dir);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    struct wait w = {0};
    assert_int_equal(ebb__objstore_put(fs->os, key, fd, 0, (int64_t)len, on_op, &w), 0);
    wait_op(fs, &w);
    close(fd);
    assert_int_equal(w.status, 0);
}

void fstore_delete(struct fake_store *fs, const char *key)
{
    struct wait w = {0};
    assert_int_equal(ebb__objstore_delete(fs->os, key, on_op, &w), 0);
    wait_op(fs, &w);
    assert_int_equal(w.status, 0);
}

void fstore_faults(struct fake_store *fs, const char *json)
{
    struct test_server srv = {0};
    memcpy(srv.faults, fs->s3_faults, sizeof(srv.faults));
    fake_faults(&srv, json);
}

int fstore_s3_count(const struct fake_store *fs, const char *op)
{
    struct test_server srv = {0};
    memcpy(srv.log, fs->s3_log, sizeof(srv.log));
    return s3fake_count(&srv, op, NULL);
}
