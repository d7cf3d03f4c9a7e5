/* The object-store work of checkpoints (daemon_ckpt.h): each piece of
 * work on a row is a task of operations run a few at a time on ebbd's
 * loop, whose end moves the row on. Tasks hold nothing the row does not:
 * a restart loses only what was in flight, and the first sweep takes the
 * rows up again (completes `completing` ones, aborts the others whose
 * instance is gone).
 *
 * Order is what makes a checkpoint trustworthy: a row is durable only
 * once every object has the size its commit stated and the manifest,
 * written after them, is stored; a durable checkpoint is deleted
 * manifest first, so one half deleted is never offered. */
#include "daemon/daemon_ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ebb/units.h>

#include "base/log.h"
#include "base/str.h"
#include "daemon/agent_ckpt_parse.h"
#include "daemon/daemon.h"
#include "daemon/daemon_notify.h"
#include "io/ckpt_manifest.h"
#include "store/store_ckpt.h"

/* Operations one task keeps in flight. */
#define OPS_IN_FLIGHT 8

enum op_kind { OP_CREATE, OP_COMPLETE, OP_HEAD, OP_PUT, OP_DELETE, OP_ABORT };

enum phase { PREPARE, COMPLETE, MANIFEST, ABORT, DELETE_MANIFEST, DELETE_FILES };

struct task;

struct op {
    enum op_kind kind;
    long file;          /* index into the row's files; -1: the manifest */
    char *key;
    struct task *t;
};

struct task {
    struct ebb__daemon *d;
    struct task *next;
    int64_t seq;
    enum phase phase;
    char *job_id, *store, *name, *kind, *instance_token, *why;
    int encrypt;
    unsigned rank;            /* the gang rank that stored it */
    ebb_time_ms created_at;
    json_t *files;            /* the row's, owned */
    struct ebb__objstore *os;
    struct op *ops;
    size_t n_ops, started, finished;
    int failed;
    char reason[512];
    char *abort_reason;       /* abort once the work in flight ends */
    int manifest_fd;
    ebb_dur_ms upload_ms, duration_ms;
    int periodic;
    double fraction;          /* the commit's; < 0: not known */
};

struct ebb__daemon_ckpt {
    struct task *tasks;
    uv_timer_t sweep;
    int sweep_ready;
    ebb_time_ms uploads_swept_at; /* wall ms of the last ebb__daemon_mpu_sweep */
};

char *ebb__ckpt_object_key(const char *job_id, int64_t seq, const char *name,
                           long index)
{
    if (index < 0)
        return ebb_strfmt("jobs/%s/ckpt/%lld-%s/manifest.json", job_id,
                          (long long)seq, name);
    return ebb_strfmt("jobs/%s/ckpt/%lld-%s/f%ld", job_id, (long long)seq, name,
                      index);
}

char *ebb__ckpt_file_path(struct ebb__daemon *d, const char *store, const char *key)
{
    const struct ebb__store_cfg *sc = ebb__daemon_store_cfg(d, store);
    struct ebb__objstore_url u = {0};
    char err[256];
    if (sc == NULL || sc->kind != EBB__OBJSTORE_FILE ||
        ebb__objstore_url_parse(sc->url, &u, err, sizeof(err)) != 0)
        return NULL;
    char *path = ebb_strfmt("%s/%s", u.dir, key);
    ebb__objstore_url_free(&u);
    return path;
}

/* ---- tasks ---------------------------------------------------------------- */

static struct task *find_task(const struct ebb__daemon *d, int64_t seq)
{
    for (struct task *t = d->ckpt ? d->ckpt->tasks : NULL; t != NULL; t = t->next)
        if (t->seq == seq)
            return t;
    return NULL;
}

int ebb__daemon_ckpt_busy(const struct ebb__daemon *d, int64_t seq)
{
    return find_task(d, seq) != NULL;
}

static void clear_ops(struct task *t)
{
    for (size_t i = 0; i < t->n_ops; i++)
        free(t->ops[i].key);
    free(t->ops);
    t->ops = NULL;
    t->n_ops = t->started = t->finished = 0;
}

static void task_free(struct task *t)
{
    struct task **p = &t->d->ckpt->tasks;
    while (*p != NULL && *p != t)
        p = &(*p)->next;
    if (*p == t)
        *p = t->next;
    clear_ops(t);
    json_decref(t->files);
    if (t->manifest_fd >= 0)
        close(t->manifest_fd);
    free(t->job_id);
    free(t->store);
    free(t->name);
    free(t->kind);
    free(t->instance_token);
    free(t->why);
    free(t->abort_reason);
    free(t);
}

static int copy_row(void *arg, const struct ebb__ckpt_row *r)
{
    struct task *t = arg;
    t->job_id = strdup(r->job_id);
    t->store = strdup(r->store);
    t->name = strdup(r->name);
    t->kind = strdup(r->kind);
    t->instance_token = strdup(r->instance_token);
    t->encrypt = r->encrypt;
    t->rank = r->rank;
    t->created_at = r->created_at;
    t->upload_ms = r->upload_ms;
    t->duration_ms = r->duration_ms;
    t->periodic = r->periodic;
    t->files = json_loads(r->files, 0, NULL);
    return 0;
}

/* A task for row `seq` (none may be in flight), loaded from its row. */
static struct task *task_new(struct ebb__daemon *d, int64_t seq, enum phase phase)
{
    struct task *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->d = d;
    t->seq = seq;
    t->phase = phase;
    t->manifest_fd = -1;
    t->fraction = -1;
    t->next = d->ckpt->tasks;
    d->ckpt->tasks = t;
    int rc = ebb__store_ckpt_get(d->store, seq, NULL, copy_row, t);
    if (rc != 0 || t->job_id == NULL || t->store == NULL || t->name == NULL ||
        t->kind == NULL || t->instance_token == NULL || !json_is_array(t->files) ||
        (t->os = ebb__daemon_objstore(d, t->store)) == NULL) {
        ebb__error("checkpoint %lld: cannot take up its row: %s", (long long)seq,
                   rc != 0 ? ebb_strerror(rc) : "its store is not configured");
        task_free(t);
        return NULL;
    }
    return t;
}

static ebb_time_ms now_wall(void)
{
    return ebb__daemon_wall_ms();
}

static void set_state(struct task *t, const char *state, const char *reason)
{
    int rc = ebb__store_ckpt_update(t->d->store, t->seq, state, NULL, reason,
                                    now_wall(), 0, -1, -1, -1);
    if (rc == 0)
        rc = ebb__store_flush(t->d->store);
    if (rc != 0)
        ebb__error("checkpoint %lld: cannot record it %s: %s", (long long)t->seq,
                   state, ebb__store_errmsg(t->d->store));
}

static void compact(struct task *t, const char *state)
{
    if (ebb__store_ckpt_update(t->d->store, t->seq, state, "[]", NULL, now_wall(), 0,
                               -1, -1, -1) != 0)
        ebb__warn("checkpoint %lld: cannot drop its file list: %s", (long long)t->seq,
                  ebb__store_errmsg(t->d->store));
}

/* ---- running operations ----------------------------------------------------- */

static void phase_done(struct task *t);
static void run_ops(struct task *t);

static void op_fail(struct task *t, const struct op *o, const char *what,
                    const char *message)
{
    if (t->failed)
        return;
    t->failed = 1;
    json_t *f = o->file >= 0 ? json_array_get(t->files, (size_t)o->file) : NULL;
    const char *path = f ? json_string_value(json_object_get(f, "path")) : "manifest.json";
    snprintf(t->reason, sizeof(t->reason), "%s %s: %s", what, path ? path : "?",
             message);
}

static const char *file_str(const struct task *t, long file, const char *key)
{
    return json_string_value(json_object_get(json_array_get(t->files, (size_t)file), key));
}

static int64_t file_int(const struct task *t, long file, const char *key)
{
    return json_integer_value(json_object_get(json_array_get(t->files, (size_t)file), key));
}

/* ETags compare without their quotes. */
static int etag_same(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la >= 2 && a[0] == '"' && a[la - 1] == '"')
        a++, la -= 2;
    if (lb >= 2 && b[0] == '"' && b[lb - 1] == '"')
        b++, lb -= 2;
    return la == lb && memcmp(a, b, la) == 0;
}

/* A multipart object's ETag ends in "-N", N its parts: the upload's
 * parts made it (S3 and OSS; a store whose ETag says nothing passes). */
static int parts_match(const struct task *t, long file, const char *etag)
{
    json_t *parts = json_object_get(json_array_get(t->files, (size_t)file), "parts");
    const char *dash = strrchr(etag, '-');
    if (!json_is_array(parts) || dash == NULL)
        return 1;
    return strtoll(dash + 1, NULL, 10) == (long long)json_array_size(parts);
}

static int start_op(struct op *o);

static void on_op(void *arg, const struct ebb__objstore_result *r)
{
    struct op *o = arg;
    struct task *t = o->t;
    if (t->d->shutting_down) {
        t->finished++;
        if (t->finished == t->started)
            task_free(t);
        return;
    }
    int again = 0;
    switch (o->kind) {
    case OP_CREATE:
        if (r->status != 0)
            op_fail(t, o, "cannot start the upload of", r->message);
        else
            json_object_set_new(json_array_get(t->files, (size_t)o->file), "upload_id",
                                json_string(r->upload_id));
        break;
    case OP_COMPLETE:
        /* NoSuchUpload: completed already, by an ebbd that stopped before
         * it recorded so; the object's size and part count decide. */
        if (r->status != 0 && r->status != EBB_ENOTFOUND)
            op_fail(t, o, "cannot complete the upload of", r->message);
        else
            o->kind = OP_HEAD, again = 1;
        break;
    case OP_HEAD: {
        int64_t want = file_int(t, o->file, "stored_size");
        const char *etag = file_str(t, o->file, "etag");
        char msg[160];
        if (r->status != 0) {
            op_fail(t, o, "the store has no", r->message);
        } else if (r->size != want) {
            snprintf(msg, sizeof(msg), "%lld bytes stored, the commit said %lld",
                     (long long)r->size, (long long)want);
            op_fail(t, o, "wrong size of", msg);
        } else if (etag != NULL && etag[0] != '\0' && r->etag[0] != '\0' &&
                   !etag_same(etag, r->etag)) {
            op_fail(t, o, "another object than the agent uploaded for",
                    "its ETag differs");
        } else if (!parts_match(t, o->file, r->etag)) {
            op_fail(t, o, "another object than the parts uploaded for",
                    "its ETag does not count them");
        }
        break;
    }
    case OP_PUT:
        if (r->status != 0)
            op_fail(t, o, "cannot store", r->message);
        break;
    case OP_ABORT:
        if (r->status != 0 && r->status != EBB_ENOTFOUND)
            ebb__warn("checkpoint %lld: cannot abort the upload of %s: %s",
                      (long long)t->seq, o->key, r->message);
        o->kind = OP_DELETE, again = 1; /* it may have completed */
        break;
    case OP_DELETE:
        if (r->status != 0 && r->status != EBB_ENOTFOUND) {
            ebb__warn("checkpoint %lld: cannot delete %s: %s", (long long)t->seq,
                      o->key, r->message);
            op_fail(t, o, "cannot delete", r->message);
        }
        break;
    }
    if (again && start_op(o) == 0)
        return;
    t->finished++;
    run_ops(t);
}

static int start_op(struct op *o)
{
    struct task *t = o->t;
    switch (o->kind) {
    case OP_CREATE:
        return ebb__objstore_mpu_create(t->os, o->key, on_op, o);
    case OP_COMPLETE: {
        json_t *parts = json_object_get(json_array_get(t->files, (size_t)o->file), "parts");
        size_t n = json_array_size(parts);
        const char **etags = n ? calloc(n, sizeof(*etags)) : NULL;
        if (etags == NULL)
            return EBB_ENOMEM;
        for (size_t i = 0; i < n; i++)
            etags[i] = json_string_value(json_array_get(parts, i));
        int rc = ebb__objstore_mpu_complete(t->os, o->key,
                                            file_str(t, o->file, "upload_id"),
                                            etags, n, on_op, o);
        free(etags);
        return rc;
    }
    case OP_HEAD:
        return ebb__objstore_head(t->os, o->key, on_op, o);
    case OP_PUT: {
        off_t len = lseek(t->manifest_fd, 0, SEEK_END);
        return len < 0 ? EBB_EIO
                       : ebb__objstore_put(t->os, o->key, t->manifest_fd, 0, len, on_op, o);
    }
    case OP_ABORT:
        return ebb__objstore_mpu_abort(t->os, o->key, file_str(t, o->file, "upload_id"),
                                       on_op, o);
    case OP_DELETE:
        return ebb__objstore_delete(t->os, o->key, on_op, o);
    }
    return EBB_EINVAL;
}

static void run_ops(struct task *t)
{
    while (t->started < t->n_ops && t->started - t->finished < OPS_IN_FLIGHT) {
        struct op *o = &t->ops[t->started++];
        int rc = start_op(o);
        if (rc != 0) {
            if (o->kind != OP_DELETE && o->kind != OP_ABORT)
                op_fail(t, o, "cannot ask the store about", ebb_strerror(rc));
            t->finished++;
        }
    }
    if (t->finished == t->n_ops)
        phase_done(t);
}

/* Sets the task's operations: one of `kind` per file that `want` picks
 * (NULL: all), and the manifest's when `manifest`. */
static int plan_ops(struct task *t, enum op_kind kind,
                    int (*want)(const struct task *t, long file), int manifest)
{
    clear_ops(t);
    t->failed = 0;
    size_t n = json_array_size(t->files);
    t->ops = calloc(n + 1, sizeof(*t->ops));
    if (t->ops == NULL)
        return EBB_ENOMEM;
    for (long i = manifest ? -1 : 0; i < (long)n; i++) {
        if (i >= 0 && want != NULL && !want(t, i))
            continue;
        struct op *o = &t->ops[t->n_ops];
        *o = (struct op){.kind = kind, .file = i, .t = t,
                         .key = ebb__ckpt_object_key(t->job_id, t->seq, t->name, i)};
        if (o->key == NULL)
            return EBB_ENOMEM;
        t->n_ops++;
    }
    return 0;
}

static int multipart(const struct task *t, long file)
{
    return ebb__ckpt_parts_of(file_int(t, file, "stored_size"), EBB__CKPT_PART_SIZE,
                              ebb__daemon_store_cfg(t->d, t->store)->kind !=
                                  EBB__OBJSTORE_FILE) > 0;
}

/* The manifest alone. */
static int no_file(const struct task *t, long file)
{
    (void)t;
    (void)file;
    return 0;
}

/* Starts the task's phase `p` with its operations. */
static void begin(struct task *t, enum phase p)
{
    t->phase = p;
    int rc = 0;
    switch (p) {
    case PREPARE:
        rc = plan_ops(t, OP_CREATE, multipart, 0);
        break;
    case COMPLETE:
        rc = plan_ops(t, OP_HEAD, NULL, 0);
        for (size_t i = 0; rc == 0 && i < t->n_ops; i++)
            if (file_str(t, t->ops[i].file, "upload_id") != NULL)
                t->ops[i].kind = OP_COMPLETE;
        break;
    case MANIFEST:
        rc = plan_ops(t, OP_PUT, no_file, 1);
        break;
    case ABORT:
        rc = plan_ops(t, OP_DELETE, NULL, 1);
        for (size_t i = 0; rc == 0 && i < t->n_ops; i++)
            if (t->ops[i].file >= 0 && file_str(t, t->ops[i].file, "upload_id") != NULL)
                t->ops[i].kind = OP_ABORT;
        break;
    case DELETE_MANIFEST:
        rc = plan_ops(t, OP_DELETE, no_file, 1);
        break;
    case DELETE_FILES:
        rc = plan_ops(t, OP_DELETE, NULL, 0);
        break;
    }
    if (rc != 0) {
        t->failed = 1;
        snprintf(t->reason, sizeof(t->reason), "%s", ebb_strerror(rc));
        clear_ops(t);
    }
    run_ops(t);
}

/* ---- phases ---------------------------------------------------------------- */

/* The row failed (`reason`): recorded with a checkpoint.failed event for
 * the job's notifications, in one transaction. */
static void record_failed(struct task *t, const char *reason)
{
    struct ebb__store *s = t->d->store;
    struct ebb__job *job = ebb__engine_job(t->d->engine, t->job_id);
    int rc = ebb__store_begin(s);
    if (rc == 0)
        rc = ebb__store_ckpt_update(s, t->seq, "failed", NULL, reason, now_wall(), 0,
                                    -1, -1, -1);
    if (rc == 0 && job != NULL) {
        char why[600];
        snprintf(why, sizeof(why), "checkpoint %s could not be stored in %s: %s", t->name,
                 t->store, reason);
        ebb__engine_job_note(job, "checkpoint.failed", why);
    }
    if (rc == 0)
        rc = ebb__store_commit(s);
    if (rc == 0)
        rc = ebb__store_flush(s);
    if (rc != 0) {
        ebb__store_rollback(s);
        ebb__error("checkpoint %lld: cannot record it failed: %s", (long long)t->seq,
                   ebb__store_errmsg(s));
    }
}

static void abort_now(struct task *t, const char *reason)
{
    ebb__warn("job %s: checkpoint %s (%lld) failed: %s", t->job_id, t->name,
              (long long)t->seq, reason);
    record_failed(t, reason);
    begin(t, ABORT);
}

/* The row's files with their hashes, as the manifest lists them. */
static int manifest_of(struct task *t, struct ebb__ckpt_manifest *m)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "%s", t->name);
    snprintf(m->job, sizeof(m->job), "%s", t->job_id);
    m->kind = strcmp(t->kind, "file") == 0 ? EBB__CKPT_KIND_FILE : EBB__CKPT_KIND_DIRECTORY;
    m->created = t->created_at;
    m->encrypt = t->encrypt;
    size_t n = json_array_size(t->files);
    m->files = calloc(n, sizeof(m->files[0]));
    if (m->files == NULL)
        return EBB_ENOMEM;
    m->n_files = n;
    for (size_t i = 0; i < n; i++) {
        struct ebb__ckpt_manifest_file *f = &m->files[i];
        const char *path = file_str(t, (long)i, "path");
        const char *sha = file_str(t, (long)i, "sha256");
        const char *ssha = file_str(t, (long)i, "stored_sha256");
        f->size = (uint64_t)file_int(t, (long)i, "size");
        f->stored_size = (uint64_t)file_int(t, (long)i, "stored_size");
        if (path == NULL || sha == NULL || ssha == NULL ||
            ebb__ckpt_unhex(sha, f->sha256, 32) != 0 ||
            ebb__ckpt_unhex(ssha, f->stored_sha256, 32) != 0 ||
            (f->path = strdup(path)) == NULL)
            return EBB_EINVAL;
    }
    return 0;
}

/* Writes the manifest into a memory file for its PUT. */
static int write_manifest(struct task *t)
{
    struct ebb__ckpt_manifest m;
    struct ebb__ckpt_key key;
    int version = 0;
    int rc = manifest_of(t, &m);
    if (rc == 0)
        rc = ebb__daemon_ckpt_key(t->d, t->job_id, &key, &version);
    if (rc == 0) {
        rc = ebb__ckpt_manifest_set_key(&m, &key, (uint32_t)version);
        char *text = NULL;
        size_t len = 0;
        struct ebb__ckpt_error err = {0};
        if (rc == 0)
            rc = ebb__ckpt_manifest_write(&m, &key, &text, &len, &err);
        ebb__ckpt_key_wipe(&key);
        if (rc != 0)
            snprintf(t->reason, sizeof(t->reason), "cannot write its manifest: %.400s",
                     err.diag.msg[0] ? err.diag.msg : ebb_strerror(rc));
        if (rc == 0) {
            t->manifest_fd = memfd_create("ebb-manifest", MFD_CLOEXEC);
            size_t done = 0;
            while (t->manifest_fd >= 0 && done < len) {
                ssize_t w = write(t->manifest_fd, text + done, len - done);
                if (w < 0 && errno == EINTR)
                    continue;
                if (w <= 0)
                    break;
                done += (size_t)w;
            }
            if (done != len) {
                rc = EBB_EIO;
                snprintf(t->reason, sizeof(t->reason), "cannot hold its manifest: %s",
                         strerror(errno));
            }
        }
        free(text);
    } else if (t->reason[0] == '\0') {
        snprintf(t->reason, sizeof(t->reason), "cannot build its manifest: %s",
                 ebb_strerror(rc));
    }
    ebb__ckpt_manifest_clear(&m);
    return rc;
}


/* The checkpoint is durable: the row, the job's event, the engine's
 * checkpoint (the resume point moves only now), then older ones go. A
 * gang member's part is reported with its rank: the engine records the
 * gang's checkpoint once every rank's part of the name is durable, and
 * the part that makes it whole carries every part's bytes (the fees are
 * the whole checkpoint's). */
static void durable(struct task *t)
{
    struct ebb__daemon *d = t->d;
    struct ebb__store *s = d->store;
    int rc = ebb__store_ckpt_update(s, t->seq, "durable", NULL, NULL, now_wall(),
                                    now_wall(), -1, -1, -1);
    if (rc != 0) {
        ebb__error("checkpoint %lld: cannot record it durable: %s", (long long)t->seq,
                   ebb__store_errmsg(s));
        return;
    }
    int64_t bytes = 0;
    for (size_t i = 0; i < json_array_size(t->files); i++)
        bytes += file_int(t, (long)i, "size");
    struct ebb__job *job = ebb__engine_job(d->engine, t->job_id);
    char reason[512];
    snprintf(reason, sizeof(reason), "checkpoint stored: %s, %lld bytes in %.1f s",
             t->name, (long long)bytes, (double)t->upload_ms / 1000.0);
    ebb__info("job %s: %s", t->job_id, reason);
    struct ebb__job_info ji;
    int64_t parts_bytes = bytes;
    int whole = 1;
    if (job != NULL) {
        ebb__engine_job_info(job, &ji);
        if (ji.spec->nodes > 1)
            whole = ebb__daemon_ckpt_parts(d, t->job_id, t->name, ji.spec->nodes,
                                           &parts_bytes) == 1;
        const char *state = ebb__job_state_name(ebb__engine_job_state(job));
        ebb__store_job_event(s, t->job_id, ebb__clock_now(&d->clock), state, state,
                             reason);
        /* Only the instance that took it moves the job on (the engine
         * counts a checkpoint against its current attempt); one made
         * durable after that instance stopped is held for its fee and the
         * next download only. */
        struct ebb__agent_report r = {
            .kind = EBB__AGENT_CHECKPOINT,
            .fraction = t->fraction,
            .path = t->name,
            .duration = t->periodic ? t->duration_ms : 0,
            .bytes = parts_bytes,
            .upload_ms = t->upload_ms,
        };
        struct ebb__attempt_info a;
        if (ebb__engine_job_attempt(job, &a) == 0 &&
            strcmp(a.token, t->instance_token) == 0) {
            struct ebb__agent_reply reply;
            ebb__engine_agent_report(job, t->rank, &r, &reply);
        } else if (whole) {
            ebb__engine_durable_checkpoint(job, &r);
        }
    }
    if (ebb__store_flush(s) != 0)
        ebb__error("cannot commit to the store: %s", ebb__store_errmsg(s));
    if (job != NULL)
        ebb__daemon_ckpt_prune(d, t->job_id, ji.spec->checkpoint.keep, ji.spec->nodes);
}

static void phase_done(struct task *t)
{
    struct ebb__daemon *d = t->d;
    if (d->shutting_down) {
        task_free(t);
        return;
    }
    switch (t->phase) {
    case PREPARE:
        if (t->failed) {
            abort_now(t, t->reason);
            return;
        }
        if (t->abort_reason != NULL) {
            char *why = t->abort_reason;
            t->abort_reason = NULL;
            abort_now(t, why);
            free(why);
            return;
        }
        {
            char *files = json_dumps(t->files, JSON_COMPACT);
            int rc = files ? ebb__store_ckpt_update(d->store, t->seq, "uploading", files,
                                                    NULL, now_wall(), 0, -1, -1, -1)
                           : EBB_ENOMEM;
            free(files);
            if (rc == 0)
                rc = ebb__store_flush(d->store);
            if (rc != 0) {
                abort_now(t, "cannot record its uploads");
                return;
            }
        }
        break;
    case COMPLETE:
        if (!t->failed && write_manifest(t) != 0)
            t->failed = 1;
        if (t->failed) {
            abort_now(t, t->reason);
            return;
        }
        begin(t, MANIFEST);
        return;
    case MANIFEST:
        if (t->failed) {
            abort_now(t, t->reason);
            return;
        }
        durable(t);
        break;
    case ABORT:
        /* What is gone need not be remembered: a failed row keeps its
         * name and reason, not its (up to 100000) files. */
        if (!t->failed)
            compact(t, "failed");
        break;
    case DELETE_MANIFEST:
        if (t->failed) /* left durable; the next sweep or prune tries again */
            break;
        begin(t, DELETE_FILES);
        return;
    case DELETE_FILES:
        if (!t->failed) {
            set_state(t, "deleted", t->why);
            compact(t, "deleted");
        }
        break;
    }
    task_free(t);
}

/* ---- entry points ----------------------------------------------------------- */

void ebb__daemon_ckpt_prepare(struct ebb__daemon *d, int64_t seq)
{
    struct task *t = task_new(d, seq, PREPARE);
    if (t == NULL)
        return;
    if (ebb__daemon_store_cfg(d, t->store)->kind == EBB__OBJSTORE_FILE &&
        ebb__daemon_store_job_dirs(d, t->store, t->job_id, t->seq, t->name, t->reason,
                                   sizeof(t->reason)) != 0) {
        abort_now(t, t->reason);
        return;
    }
    begin(t, PREPARE);
}

void ebb__daemon_ckpt_complete(struct ebb__daemon *d, int64_t seq, double fraction)
{
    struct task *t = task_new(d, seq, COMPLETE);
    if (t == NULL)
        return;
    t->fraction = fraction;
    begin(t, COMPLETE);
}

void ebb__daemon_ckpt_abort(struct ebb__daemon *d, int64_t seq, const char *reason)
{
    struct task *t = find_task(d, seq);
    if (t != NULL) {
        /* Uploads being created are aborted once they exist; a commit
         * being completed stands. */
        if (t->phase == PREPARE && t->abort_reason == NULL)
            t->abort_reason = strdup(reason);
        return;
    }
    t = task_new(d, seq, ABORT);
    if (t != NULL)
        abort_now(t, reason);
}

void ebb__daemon_ckpt_delete(struct ebb__daemon *d, int64_t seq, const char *why)
{
    if (find_task(d, seq) != NULL)
        return;
    struct task *t = task_new(d, seq, DELETE_MANIFEST);
    if (t == NULL)
        return;
    t->why = strdup(why);
    begin(t, DELETE_MANIFEST);
}

/* The rows' sweep, then (at most hourly) the stores' uploads, which the
 * rows' sweep has just settled. */
static void sweep(struct ebb__daemon *d, int first)
{
    ebb__daemon_ckpt_sweep(d, first);
    ebb_time_ms now = ebb__daemon_wall_ms();
    if (first || now - d->ckpt->uploads_swept_at >= EBB__MPU_SWEEP_MS) {
        d->ckpt->uploads_swept_at = now;
        ebb__daemon_mpu_sweep(d);
    }
}

static void on_sweep(uv_timer_t *timer)
{
    struct ebb__daemon *d = timer->data;
    if (!d->shutting_down)
        sweep(d, 0);
}

int ebb__daemon_ckpt_start(struct ebb__daemon *d)
{
    d->ckpt = calloc(1, sizeof(*d->ckpt));
    if (d->ckpt == NULL)
        return 1;
    if (d->config->n_stores == 0)
        return 0;
    uv_timer_init(&d->loop, &d->ckpt->sweep);
    d->ckpt->sweep.data = d;
    d->ckpt->sweep_ready = 1;
    uv_timer_start(&d->ckpt->sweep, on_sweep, EBB__CKPT_SWEEP_MS, EBB__CKPT_SWEEP_MS);
    sweep(d, 1);
    return 0;
}

void ebb__daemon_ckpt_stop(struct ebb__daemon *d)
{
    if (d->ckpt != NULL && d->ckpt->sweep_ready) {
        uv_close((uv_handle_t *)&d->ckpt->sweep, NULL);
        d->ckpt->sweep_ready = 0;
    }
}

void ebb__daemon_ckpt_free(struct ebb__daemon *d)
{
    while (d->ckpt != NULL && d->ckpt->tasks != NULL)
        task_free(d->ckpt->tasks);
    free(d->ckpt);
    d->ckpt = NULL;
}
