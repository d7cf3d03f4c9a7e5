/* The agent endpoints of durable checkpoints (daemon_ckpt.h;
 * docs/agent-protocol.md "Checkpoint transfer (ebbd)"). Each answers at
 * once from the checkpoint's row; the store work runs behind it
 * (daemon_ckpt_store.c) and the agent polls. */
#include "daemon/daemon_ckpt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include <ebb/digest.h>

#include "base/log.h"
#include "base/str.h"
#include "daemon/agent_ckpt_parse.h"
#include "daemon/daemon.h"
#include "daemon/daemon_notify.h"
#include "daemon/daemon_workdir.h"
#include "store/store_ckpt.h"

static void reply_error(struct ebb__httpd_response *res, int status, const char *fmt, ...)
    EBB_PRINTF(3, 4);
static void reply_error(struct ebb__httpd_response *res, int status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ebb__httpd_set_json(res, status, json_pack("{s:s}", "error", msg));
}

static const char *kind_name(enum ebb__objstore_kind k)
{
    return k == EBB__OBJSTORE_S3 ? "s3" : k == EBB__OBJSTORE_OSS ? "oss" : "file";
}

/* The job's spec and its store's configuration (NULL: no store). */
static const struct ebb__store_cfg *job_store(struct ebb__daemon *d, struct ebb__job *job,
                                              const struct ebb__job_spec **spec)
{
    struct ebb__job_info ji;
    ebb__engine_job_info(job, &ji);
    *spec = ji.spec;
    const char *name = ji.spec->checkpoint.store;
    return name != NULL && ebb__daemon_objstore(d, name) != NULL
               ? ebb__daemon_store_cfg(d, name) : NULL;
}

int ebb__daemon_ckpt_job_doc(void *arg, struct ebb__job *job, json_t *doc)
{
    struct ebb__daemon *d = arg;
    const struct ebb__job_spec *spec;
    const struct ebb__store_cfg *sc = job_store(d, job, &spec);
    if (sc == NULL)
        return 0;
    struct ebb__ckpt_key key;
    int version = 0;
    int rc = ebb__daemon_ckpt_key(d, ebb__engine_job_id(job), &key, &version);
    if (rc != 0)
        return rc;
    json_t *st = json_pack("{s:s,s:s,s:b,s:i,s:I,s:i}", "name", sc->name, "kind",
                           kind_name(sc->kind), "encrypt", spec->checkpoint.encrypt,
                           "key_version", version, "part_size",
                           (json_int_t)EBB__CKPT_PART_SIZE, "parallel", EBB__CKPT_PARALLEL);
    /* The key also authenticates the manifests, so an unencrypted job's
     * agent needs it as well to trust what it downloads. */
    if (st != NULL) {
        char hex[EBB__CKPT_KEY_HEX_SIZE];
        ebb__ckpt_key_to_hex(&key, hex);
        json_object_set_new(st, "key", json_string(hex));
        OPENSSL_cleanse(hex, sizeof(hex));
    }
    ebb__ckpt_key_wipe(&key);
    if (st == NULL || json_object_set_new(doc, "store", st) != 0)
        return EBB_ENOMEM;
    return ebb__daemon_workdir_job_doc(d, job, doc);
}

/* ---- one row ------------------------------------------------------------------ */

/* A copy of a row for the handlers (the row's strings live only in the
 * store's callback). */
struct row {
    int64_t seq, bytes;
    unsigned rank;
    ebb_dur_ms upload_ms;
    char state[16], kind[16];
    char *name, *store, *reason;
    json_t *files;
    int encrypt;
};

static int copy_row(void *arg, const struct ebb__ckpt_row *r)
{
    struct row *w = arg;
    w->seq = r->seq;
    w->rank = r->rank;
    w->bytes = r->bytes;
    w->upload_ms = r->upload_ms;
    w->encrypt = r->encrypt;
    snprintf(w->state, sizeof(w->state), "%s", r->state);
    snprintf(w->kind, sizeof(w->kind), "%s", r->kind);
    w->name = strdup(r->name);
    w->store = strdup(r->store);
    w->reason = strdup(r->reason);
    w->files = json_loads(r->files, 0, NULL);
    return w->name && w->store && w->reason && json_is_array(w->files) ? 0 : EBB_ENOMEM;
}

static void row_free(struct row *w)
{
    free(w->name);
    free(w->store);
    free(w->reason);
    json_decref(w->files);
}

/* Loads the job's row `seq` stored by rank `rank`; answers 404 (or 500)
 * and returns non-zero when it cannot. Another rank's row is not this
 * agent's to see. */
static int load_row(struct ebb__daemon *d, struct ebb__job *job, unsigned rank,
                    int64_t seq, struct row *w, struct ebb__httpd_response *res)
{
    memset(w, 0, sizeof(*w));
    int rc = ebb__store_ckpt_get(d->store, seq, ebb__engine_job_id(job), copy_row, w);
    if (rc == 0 && w->rank != rank) {
        row_free(w);
        memset(w, 0, sizeof(*w));
        rc = EBB_ENOTFOUND;
    }
    if (rc == EBB_ENOTFOUND)
        reply_error(res, 404, "the job has no checkpoint %lld", (long long)seq);
    else if (rc != 0)
        reply_error(res, 500, "cannot read checkpoint %lld", (long long)seq);
    if (rc != 0)
        row_free(w);
    return rc;
}

/* A URL for `op` on `key` of the row's store: presigned, or file:///PATH. */
static char *object_url(struct ebb__daemon *d, const char *store,
                        enum ebb__objstore_presign_op op, const char *key,
                        const char *upload_id, int part)
{
    const struct ebb__store_cfg *sc = ebb__daemon_store_cfg(d, store);
    if (sc == NULL)
        return NULL;
    if (sc->kind == EBB__OBJSTORE_FILE) {
        char *path = ebb__ckpt_file_path(d, store, key);
        char *url = path ? ebb_strfmt("file://%s", path) : NULL;
        free(path);
        return url;
    }
    char *url = NULL;
    return ebb__objstore_presign(ebb__daemon_objstore(d, store), op, key, upload_id,
                                 part, EBB__CKPT_URL_TTL_S, &url) == 0 ? url : NULL;
}

static int add_url(json_t *o, const char *key, char *url)
{
    int rc = url != NULL ? json_object_set_new(o, key, json_string(url)) : -1;
    free(url);
    return rc;
}

/* The upload URLs of an `uploading` row: one PUT per file, or its parts. */
static json_t *upload_files(struct ebb__daemon *d, const char *job_id, const struct row *w)
{
    json_t *out = json_array();
    int bad = out == NULL;
    for (size_t i = 0; !bad && i < json_array_size(w->files); i++) {
        json_t *f = json_array_get(w->files, i);
        const char *upload_id = json_string_value(json_object_get(f, "upload_id"));
        int64_t stored = json_integer_value(json_object_get(f, "stored_size"));
        char *key = ebb__ckpt_object_key(job_id, w->seq, w->name, (long)i);
        json_t *o = json_pack("{s:O}", "path", json_object_get(f, "path"));
        bad = key == NULL || o == NULL || json_array_append_new(out, o) != 0;
        if (!bad && upload_id == NULL) {
            bad = add_url(o, "url", object_url(d, w->store, EBB__PRESIGN_PUT, key,
                                               NULL, 0)) != 0;
        } else if (!bad) {
            json_t *parts = json_array();
            bad = parts == NULL || json_object_set_new(o, "parts", parts) != 0;
            int64_t n = ebb__ckpt_parts_of(stored, EBB__CKPT_PART_SIZE, true);
            for (int64_t k = 0; !bad && k < n; k++) {
                int64_t off = k * EBB__CKPT_PART_SIZE;
                int64_t len = stored - off < EBB__CKPT_PART_SIZE ? stored - off
                                                                 : EBB__CKPT_PART_SIZE;
                json_t *p = json_pack("{s:I,s:I,s:I}", "number", (json_int_t)k + 1,
                                      "offset", (json_int_t)off, "length", (json_int_t)len);
                bad = p == NULL || json_array_append_new(parts, p) != 0 ||
                      add_url(p, "url", object_url(d, w->store, EBB__PRESIGN_PART, key,
                                                   upload_id, (int)k + 1)) != 0;
            }
        }
        free(key);
    }
    if (bad) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* The row as GET /v1/agent/checkpoints/SEQ answers it. */
static void answer_row(struct ebb__daemon *d, struct ebb__job *job, const struct row *w,
                       struct ebb__httpd_response *res)
{
    json_t *body = json_pack("{s:I,s:s}", "id", (json_int_t)w->seq, "state", w->state);
    if (body == NULL) {
        reply_error(res, 500, "out of memory");
        return;
    }
    if (strcmp(w->state, "uploading") == 0) {
        json_t *files = upload_files(d, ebb__engine_job_id(job), w);
        if (files == NULL) {
            json_decref(body);
            reply_error(res, 500, "cannot sign the uploads' URLs");
            return;
        }
        json_object_set_new(body, "files", files);
        json_object_set_new(body, "expires_at", json_integer(
            (json_int_t)(ebb__daemon_wall_ms() + EBB__CKPT_URL_TTL_S * 1000)));
    } else if (strcmp(w->state, "durable") == 0) {
        json_object_set_new(body, "bytes", json_integer(w->bytes));
        json_object_set_new(body, "upload_ms", json_integer(w->upload_ms));
    } else if (strcmp(w->state, "failed") == 0 || strcmp(w->state, "deleted") == 0) {
        json_object_set_new(body, "reason", json_string(w->reason));
    }
    ebb__httpd_set_json(res, 200, body);
}

/* ---- POST /v1/agent/checkpoints -------------------------------------------------- */

static int collect(void *arg, const struct ebb__ckpt_row *r)
{
    int64_t *seqs = arg;
    for (int i = 0; i < 8; i++)
        if (seqs[i] == 0) {
            seqs[i] = r->seq;
            return 0;
        }
    return 0;
}

/* One checkpoint in flight per job and rank: an older one not yet
 * committed is given up for the new one (a gang's ranks upload their
 * parts side by side). */
static void replace_older(struct ebb__daemon *d, const char *job_id, unsigned rank,
                          int64_t seq)
{
    int64_t seqs[8] = {0};
    ebb__store_ckpt_of_job(d->store, job_id, "preparing", (int)rank, collect, seqs);
    ebb__store_ckpt_of_job(d->store, job_id, "uploading", (int)rank, collect, seqs);
    char why[96];
    snprintf(why, sizeof(why), "replaced by checkpoint %lld", (long long)seq);
    for (int i = 0; i < 8 && seqs[i] != 0; i++)
        if (seqs[i] != seq)
            ebb__daemon_ckpt_abort(d, seqs[i], why);
}

static json_t *body_json(const struct ebb__httpd_request *req)
{
    json_t *body = json_loadb(req->body, req->body_len, 0, NULL);
    if (!json_is_object(body)) {
        json_decref(body);
        return NULL;
    }
    return body;
}

static void post_offer(struct ebb__daemon *d, struct ebb__job *job, unsigned rank,
                       const struct ebb__store_cfg *sc, const struct ebb__job_spec *spec,
                       const struct ebb__httpd_request *req,
                       struct ebb__httpd_response *res)
{
    const char *job_id = ebb__engine_job_id(job);
    json_t *body = body_json(req);
    if (body == NULL) {
        reply_error(res, 400, "the body is not a JSON object");
        return;
    }
    /* One offer is prepared at a time per job and rank: an agent that
     * offers faster than ebbd creates its uploads waits. */
    int64_t preparing[8] = {0};
    ebb__store_ckpt_of_job(d->store, job_id, "preparing", (int)rank, collect, preparing);
    for (int i = 0; i < 8 && preparing[i] != 0; i++)
        if (ebb__daemon_ckpt_busy(d, preparing[i])) {
            json_decref(body);
            reply_error(res, 429, "checkpoint %lld is still being prepared; offer "
                        "again once it is uploading", (long long)preparing[i]);
            return;
        }
    struct ebb__ckpt_key key;
    int version = 0;
    char key_id[EBB__CKPT_KEY_ID_SIZE];
    if (ebb__daemon_ckpt_key(d, job_id, &key, &version) != 0 ||
        ebb__ckpt_key_id(&key, key_id) != 0) {
        ebb__ckpt_key_wipe(&key);
        json_decref(body);
        reply_error(res, 503, "cannot get the job's key; try again");
        return;
    }
    ebb__ckpt_key_wipe(&key);
    struct ebb__ckpt_offer_rules rules = {
        .job_id = job_id, .encrypt = spec->checkpoint.encrypt, .key_id = key_id,
        .key_version = (uint32_t)version, .part_size = EBB__CKPT_PART_SIZE,
        .multipart = sc->kind != EBB__OBJSTORE_FILE,
    };
    struct ebb__ckpt_manifest m;
    char why[512] = "";
    int rc = ebb__agent_ckpt_offer_parse(body, &rules, &m, why, sizeof(why));
    json_decref(body);
    if (rc != 0) {
        ebb__ckpt_manifest_clear(&m);
        ebb__warn("job %s: refused a checkpoint offer: %s", job_id,
                  rc == EBB_ENOMEM ? "out of memory" : why);
        reply_error(res, rc == EBB_ENOMEM ? 500 : 400, "%s",
                    rc == EBB_ENOMEM ? "out of memory" : why);
        return;
    }
    json_t *files = json_array();
    int64_t bytes = 0;
    for (size_t i = 0; files != NULL && i < m.n_files; i++) {
        bytes += (int64_t)m.files[i].size;
        if (json_array_append_new(files, json_pack("{s:s,s:I,s:I}", "path",
                                  m.files[i].path, "size", (json_int_t)m.files[i].size,
                                  "stored_size", (json_int_t)m.files[i].stored_size)) != 0) {
            json_decref(files);
            files = NULL;
        }
    }
    char *text = files ? json_dumps(files, JSON_COMPACT) : NULL;
    json_decref(files);
    struct ebb__attempt_info a;
    ebb__engine_job_attempt(job, &a); /* authenticated: it has one */
    struct ebb__ckpt_row r = {
        .job_id = job_id, .instance_token = a.token, .store = sc->name,
        .name = m.name, .kind = m.kind == EBB__CKPT_KIND_FILE ? "file" : "directory",
        .state = "preparing", .files = text, .encrypt = spec->checkpoint.encrypt,
        .bytes = bytes, .created_at = ebb__daemon_wall_ms(), .rank = rank,
    };
    int64_t seq = 0;
    rc = text ? ebb__store_ckpt_insert(d->store, &r, &seq) : EBB_ENOMEM;
    if (rc == 0)
        rc = ebb__store_flush(d->store);
    free(text);
    ebb__ckpt_manifest_clear(&m);
    if (rc != 0) {
        reply_error(res, 503, "cannot record the checkpoint; offer it again");
        return;
    }
    ebb__httpd_set_json(res, 202, json_pack("{s:I,s:s}", "id", (json_int_t)seq, "state",
                                   "preparing"));
    replace_older(d, job_id, rank, seq);
    ebb__daemon_ckpt_prepare(d, seq);
}

/* ---- POST /v1/agent/checkpoints/SEQ/commit ---------------------------------------- */

/* The offered files of a row as a manifest to check a commit against. */
static int row_manifest(const struct row *w, struct ebb__ckpt_manifest *m)
{
    memset(m, 0, sizeof(*m));
    size_t n = json_array_size(w->files);
    m->encrypt = w->encrypt;
    m->files = calloc(n ? n : 1, sizeof(m->files[0]));
    if (m->files == NULL)
        return EBB_ENOMEM;
    m->n_files = n;
    for (size_t i = 0; i < n; i++) {
        json_t *f = json_array_get(w->files, i);
        m->files[i].size = (uint64_t)json_integer_value(json_object_get(f, "size"));
        m->files[i].stored_size =
            (uint64_t)json_integer_value(json_object_get(f, "stored_size"));
        m->files[i].path = strdup(json_string_value(json_object_get(f, "path")));
        if (m->files[i].path == NULL)
            return EBB_ENOMEM;
    }
    return 0;
}

static void post_commit(struct ebb__daemon *d, struct ebb__job *job, struct row *w,
                        const struct ebb__httpd_request *req,
                        struct ebb__httpd_response *res)
{
    if (strcmp(w->state, "completing") == 0 || strcmp(w->state, "durable") == 0) {
        /* A commit sent again after its answer was lost. */
        ebb__httpd_set_json(res, 202, json_pack("{s:I,s:s}", "id", (json_int_t)w->seq, "state",
                                       w->state));
        return;
    }
    if (strcmp(w->state, "uploading") != 0) {
        reply_error(res, 409, "checkpoint %lld is %s%s%s", (long long)w->seq, w->state,
                    w->reason[0] ? ": " : "", w->reason);
        return;
    }
    json_t *body = body_json(req);
    struct ebb__ckpt_manifest m;
    json_t *etags = NULL;
    struct ebb__ckpt_commit_meta meta;
    char why[512] = "the body is not a JSON object";
    int multipart = ebb__daemon_store_cfg(d, w->store)->kind != EBB__OBJSTORE_FILE;
    int rc = body == NULL ? EBB_EINVAL : row_manifest(w, &m);
    if (body != NULL && rc == 0)
        rc = ebb__agent_ckpt_commit_parse(body, &m, EBB__CKPT_PART_SIZE, multipart,
                                          &etags, &meta, why, sizeof(why));
    json_decref(body);
    for (size_t i = 0; rc == 0 && i < m.n_files; i++) {
        json_t *f = json_array_get(w->files, i);
        char hex[65];
        ebb_hex(m.files[i].sha256, 32, hex);
        json_object_set_new(f, "sha256", json_string(hex));
        ebb_hex(m.files[i].stored_sha256, 32, hex);
        json_object_set_new(f, "stored_sha256", json_string(hex));
        json_t *e = json_array_get(etags, i);
        json_object_set(f, json_is_array(e) ? "parts" : "etag", e);
    }
    if (body != NULL)
        ebb__ckpt_manifest_clear(&m);
    json_decref(etags);
    if (rc != 0) {
        ebb__warn("job %s: refused the commit of checkpoint %lld: %s",
                  ebb__engine_job_id(job), (long long)w->seq,
                  rc == EBB_ENOMEM ? "out of memory" : why);
        reply_error(res, rc == EBB_ENOMEM ? 500 : 400, "%s",
                    rc == EBB_ENOMEM ? "out of memory" : why);
        return;
    }
    char *text = json_dumps(w->files, JSON_COMPACT);
    rc = text ? ebb__store_ckpt_update(d->store, w->seq, "completing", text, NULL,
                                       ebb__daemon_wall_ms(), 0, meta.upload_ms,
                                       meta.duration_ms, meta.periodic)
              : EBB_ENOMEM;
    free(text);
    if (rc == 0)
        rc = ebb__store_flush(d->store);
    if (rc != 0) {
        reply_error(res, 503, "cannot record the commit; send it again");
        return;
    }
    ebb__httpd_set_json(res, 202, json_pack("{s:I,s:s}", "id", (json_int_t)w->seq, "state",
                                   "completing"));
    ebb__daemon_ckpt_complete(d, w->seq, meta.fraction);
}

/* ---- GET /v1/agent/resume ----------------------------------------------------------- */

struct resume {
    struct ebb__daemon *d;
    const char *job_id;
    json_t *list;
    int bad;
};

static int resume_row(void *arg, const struct ebb__ckpt_row *r)
{
    struct resume *c = arg;
    if (ebb__daemon_ckpt_busy(c->d, r->seq)) /* being deleted */
        return 0;
    if (json_array_size(c->list) >= EBB__JOB_KEEP_MAX)
        return 1;
    json_t *files = json_loads(r->files, 0, NULL);
    char *mkey = ebb__ckpt_object_key(c->job_id, r->seq, r->name, -1);
    json_t *o = json_pack("{s:I,s:s,s:s}", "id", (json_int_t)r->seq, "name", r->name,
                          "kind", r->kind);
    json_t *out = json_array();
    c->bad = files == NULL || mkey == NULL || o == NULL || out == NULL ||
             add_url(o, "manifest_url", object_url(c->d, r->store, EBB__PRESIGN_GET,
                                                   mkey, NULL, 0)) != 0 ||
             json_object_set_new(o, "files", out) != 0;
    free(mkey);
    for (size_t i = 0; !c->bad && i < json_array_size(files); i++) {
        json_t *f = json_array_get(files, i);
        char *key = ebb__ckpt_object_key(c->job_id, r->seq, r->name, (long)i);
        json_t *e = json_pack("{s:O,s:O}", "path", json_object_get(f, "path"),
                              "stored_size", json_object_get(f, "stored_size"));
        c->bad = key == NULL || e == NULL || json_array_append_new(out, e) != 0 ||
                 add_url(e, "url", object_url(c->d, r->store, EBB__PRESIGN_GET, key,
                                              NULL, 0)) != 0;
        free(key);
    }
    json_decref(files);
    if (o != NULL && !c->bad)
        json_array_append(c->list, o);
    json_decref(o);
    return c->bad ? EBB_ENOMEM : 0;
}

/* The durable checkpoints rank `rank` stored: a gang member resumes from
 * its own part of the gang's checkpoint, never another rank's. */
static void get_resume(struct ebb__daemon *d, struct ebb__job *job, unsigned rank,
                       struct ebb__httpd_response *res)
{
    struct resume c = {.d = d, .job_id = ebb__engine_job_id(job), .list = json_array()};
    int rc = c.list ? ebb__store_ckpt_of_job(d->store, c.job_id, "durable", (int)rank,
                                             resume_row, &c)
                    : EBB_ENOMEM;
    if (rc < 0) {
        json_decref(c.list);
        reply_error(res, 500, "cannot list the job's checkpoints");
        return;
    }
    ebb__httpd_set_json(res, 200, json_pack("{s:o}", "checkpoints", c.list));
}

/* ---- routing ------------------------------------------------------------------------ */

/* "/SEQ" or "/SEQ/commit" after /v1/agent/checkpoints: the seq (0 when
 * it is not one) and whether it is the commit. */
static int64_t parse_seq(const char *rest, int *commit)
{
    int64_t seq = 0;
    size_t digits = 0;
    *commit = 0;
    if (*rest++ != '/')
        return 0;
    while (rest[digits] >= '0' && rest[digits] <= '9' && digits < 18)
        seq = seq * 10 + (rest[digits++] - '0');
    if (digits == 0 || (rest[0] == '0'))
        return 0;
    if (strcmp(rest + digits, "/commit") == 0)
        *commit = 1;
    else if (rest[digits] != '\0')
        return 0;
    return seq;
}

void ebb__daemon_ckpt_serve(void *arg, struct ebb__job *job, unsigned rank,
                            const struct ebb__httpd_request *req,
                            struct ebb__httpd_response *res)
{
    struct ebb__daemon *d = arg;
    const struct ebb__job_spec *spec;
    const struct ebb__store_cfg *sc = job_store(d, job, &spec);
    const char *method = req->method;
    if (sc == NULL) {
        reply_error(res, 409, "the job has no checkpoint store (checkpoint.store)");
        return;
    }
    if (strcmp(req->path, "/v1/agent/resume") == 0) {
        if (strcmp(method, "GET") != 0)
            reply_error(res, 405, "use GET");
        else
            get_resume(d, job, rank, res);
        return;
    }
    const char *rest = req->path + strlen("/v1/agent/checkpoints");
    if (*rest == '\0') {
        if (strcmp(method, "POST") != 0)
            reply_error(res, 405, "use POST");
        else
            post_offer(d, job, rank, sc, spec, req, res);
        return;
    }
    int commit = 0;
    int64_t seq = parse_seq(rest, &commit);
    if (seq <= 0) {
        reply_error(res, 404, "no such endpoint");
        return;
    }
    const char *want = commit ? "POST" : strcmp(method, "DELETE") == 0 ? "DELETE" : "GET";
    if (strcmp(method, want) != 0) {
        reply_error(res, 405, commit ? "use POST" : "use GET or DELETE");
        return;
    }
    struct row w;
    if (load_row(d, job, rank, seq, &w, res) != 0)
        return;
    if (commit) {
        post_commit(d, job, &w, req, res);
    } else if (strcmp(method, "DELETE") == 0) {
        if (strcmp(w.state, "preparing") == 0 || strcmp(w.state, "uploading") == 0) {
            ebb__daemon_ckpt_abort(d, seq, "the agent gave up on it");
            snprintf(w.state, sizeof(w.state), "failed");
        }
        ebb__httpd_set_json(res, 200, json_pack("{s:I,s:s}", "id", (json_int_t)seq, "state",
                                       w.state));
    } else {
        answer_row(d, job, &w, res);
    }
    row_free(&w);
}
