/* Uploading a complete checkpoint to the job's store (see store.h).
 *
 * One upload at a time: walk its files (thread pool) -> POST
 * /v1/agent/checkpoints -> poll GET until `uploading` -> PUT every object
 * or part (at most `parallel` at once, each made from the job's files as
 * it is sent, ckpt_seal.h) -> commit, once the hash pass that ran beside
 * the transfers is back -> poll until `durable` or `failed`. A checkpoint
 * that completes
 * meanwhile waits; only the newest waiting one is uploaded next. Every
 * wait is bounded (AGENT_POLL_LIMIT_MS); giving up sends DELETE, so ebbd
 * aborts what was started, and never commits.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <ebb/digest.h>

#include "agent/agent.h"
#include "agent/ckpt_walk.h"
#include "agent/store.h"
#include "agent/upload_internal.h"
#include "base/log.h"
#include "base/str.h"

static int64_t now_ms(struct agent *a)
{
    return ebb__clock_now(&a->clock);
}

static void up_free(struct agent_upload *u)
{
    for (size_t i = 0; i < u->n_xfers; i++) {
        free(u->xfers[i].url);
        agent_xfer_release(&u->xfers[i]);
    }
    for (size_t i = 0; i < u->n_spare; i++) {
        OPENSSL_cleanse(u->spare[i], EBB__CKPT_STREAM_MEMORY);
        free(u->spare[i]);
    }
    free(u->xfers);
    free(u->sums);
    agent_seal_free(&u->seal);
    ebb__ckpt_manifest_clear(&u->m);
    if (u->dirfd >= 0)
        close(u->dirfd);
    ebb__ckpt_key_wipe(&u->key);
    free(u);
}

/* A callback came back: true when the upload is still the agent's. */
bool agent_up_alive(struct agent_upload *u)
{
    u->pending--;
    if (u->a != NULL)
        return true;
    if (u->pending == 0)
        up_free(u);
    return false;
}

static void start_next(struct agent *a);

/* The upload is over (durable, failed, given up): frees it and goes on
 * with the waiting checkpoint, if any. */
static void up_end(struct agent_upload *u)
{
    struct agent *a = u->a;
    ebb__timer_stop(&a->clock, &u->poll_timer);
    a->upload = NULL;
    u->a = NULL;
    if (u->pending == 0)
        up_free(u);
    if (a->upload_next != NULL && !a->upload_cancelled)
        start_next(a);
    else
        agent_upload_idle(a);
}

static void on_deleted(struct agent *a, void *arg, const struct ebb_http_response *res,
                       json_t *body)
{
    (void)a, (void)res, (void)body;
    struct agent_upload *u = arg;
    if (agent_up_alive(u))
        up_end(u);
}

/* Gives up: says why, tells ebbd to abort (when it knows the checkpoint). */
void agent_up_fail(struct agent_upload *u, const char *fmt, ...)
{
    struct agent *a = u->a;
    char why[sizeof(u->why)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    memcpy(u->why, why, sizeof(why));
    ebb__warn("checkpoint %s is not stored: %s", u->m.name, u->why);
    ebb__timer_stop(&a->clock, &u->poll_timer);
    if (u->seq > 0 && u->state != UP_ENDING) {
        u->state = UP_ENDING;
        char path[64];
        snprintf(path, sizeof(path), "checkpoints/%lld", (long long)u->seq);
        if (agent_api(a, "DELETE", path, NULL, on_deleted, u) == 0) {
            u->pending++;
            return;
        }
    }
    /* Transfers still out come back to an upload the agent let go of. */
    u->state = UP_ENDING;
    up_end(u);
}

/* A checkpoint the store cannot hold as it is (a link in it, a file the
 * job changed after it was complete): ebbd hears that it was not stored,
 * and why. */
void agent_up_refuse(struct agent_upload *u, const char *why)
{
    agent_reporter_event(&u->a->rep, json_pack("{s:s, s:s, s:s}", "kind",
                                               "checkpoint_skipped", "name", u->m.name,
                                               "reason", why));
    agent_up_fail(u, "%s", why);
}

/* ---- polling ---- */

static void poll_now(struct agent_upload *u);

static void poll_later(struct agent_upload *u)
{
    struct agent *a = u->a;
    if (now_ms(a) + AGENT_POLL_MS > u->poll_deadline) {
        agent_up_fail(u, "ebbd did not get the checkpoint %s within %d minutes",
                u->state == UP_PREPARING ? "ready for upload" : "stored",
                AGENT_POLL_LIMIT_MS / 60000);
        return;
    }
    ebb__timer_start(&a->clock, &u->poll_timer, now_ms(a) + AGENT_POLL_MS);
}

static void on_poll_timer(struct ebb__timer *t)
{
    poll_now(t->data);
}

/* ---- ebbd's answers ---- */

static void on_state(struct agent *a, void *arg, const struct ebb_http_response *res,
                     json_t *body);

static void poll_now(struct agent_upload *u)
{
    char path[64];
    snprintf(path, sizeof(path), "checkpoints/%lld", (long long)u->seq);
    int rc = agent_api(u->a, "GET", path, NULL, on_state, u);
    if (rc == 0)
        u->pending++;
    else
        agent_up_fail(u, "cannot ask ebbd about the checkpoint: %s", ebb_strerror(rc));
}

void agent_up_refresh(struct agent_upload *u)
{
    u->refresh_wanted = false;
    u->cursor = 0;  /* the refused ones are before it */
    u->refreshes++;
    ebb__info("the store refused an upload URL (expired?); asking ebbd for fresh ones");
    poll_now(u);
}

static void durable(struct agent_upload *u, json_t *body)
{
    struct agent *a = u->a;
    int64_t ms = u->transfer_ms > 0 ? u->transfer_ms : 1;
    a->upload_rate = (double)u->stored_bytes / (double)ms;
    a->last_complete_ms = now_ms(a) - u->committed_ms;
    a->last_stored_bytes = u->stored_bytes;
    json_t *b = json_object_get(body, "bytes");
    ebb__info("checkpoint %s is durable (id %lld, %lld bytes; uploaded %llu bytes in "
              "%lld ms, %.1f MB/s; ebbd completed it in %lld ms; %lld ms in all)", u->m.name,
              (long long)u->seq, json_is_integer(b) ? (long long)json_integer_value(b) : -1LL,
              (unsigned long long)u->stored_bytes, (long long)u->transfer_ms,
              a->upload_rate / 1000.0, (long long)a->last_complete_ms,
              (long long)(now_ms(a) - u->started_ms));
    if (a->stopping)
        a->checkpointed_since_stop = true;
    u->state = UP_ENDING;
    up_end(u);
}

static void on_state(struct agent *a, void *arg, const struct ebb_http_response *res,
                     json_t *body)
{
    (void)a;
    struct agent_upload *u = arg;
    if (!agent_up_alive(u) || u->state == UP_ENDING)
        return;
    char why[400];
    if (res->error != 0 || res->status != 200 || body == NULL) {
        agent_up_fail(u, "ebbd's answer about checkpoint %lld: %s", (long long)u->seq,
                agent_api_why(res, body, why, sizeof(why)));
        return;
    }
    const char *state = json_string_value(json_object_get(body, "state"));
    state = state ? state : "";
    if (strcmp(state, "failed") == 0) {
        const char *reason = json_string_value(json_object_get(body, "reason"));
        u->seq = 0; /* ebbd gave it up itself: nothing to DELETE */
        agent_up_fail(u, "ebbd failed it: %s", reason ? reason : "no reason given");
        return;
    }
    if (strcmp(state, "durable") == 0 && u->state == UP_COMPLETING) {
        durable(u, body);
        return;
    }
    if (strcmp(state, "uploading") == 0 && (u->state == UP_PREPARING ||
                                            u->state == UP_TRANSFER)) {
        int rc = agent_up_take_urls(u, json_object_get(body, "files"), why, sizeof(why));
        if (rc != 0) {
            agent_up_fail(u, "%s", why);
            return;
        }
        if (u->state == UP_PREPARING) {
            u->transfer_ms = -now_ms(a);
            ebb__debug("checkpoint %s: sending %zu object(s) or part(s)", u->m.name, u->n_xfers);
        }
        u->state = UP_TRANSFER;
        agent_up_run(u);
        return;
    }
    bool waiting = (u->state == UP_PREPARING && strcmp(state, "preparing") == 0) ||
                   (u->state == UP_COMPLETING && (strcmp(state, "completing") == 0 ||
                                                  strcmp(state, "uploading") == 0));
    if (!waiting) {
        agent_up_fail(u, "ebbd says the checkpoint is \"%.32s\"", state);
        return;
    }
    poll_later(u);
}

static void on_committed(struct agent *a, void *arg, const struct ebb_http_response *res,
                         json_t *body)
{
    struct agent_upload *u = arg;
    if (!agent_up_alive(u) || u->state == UP_ENDING)
        return;
    if (res->error != 0 || res->status / 100 != 2) {
        char why[400];
        agent_up_fail(u, "ebbd refused the commit: %s", agent_api_why(res, body, why, sizeof(why)));
        return;
    }
    u->state = UP_COMPLETING;
    u->poll_deadline = now_ms(a) + AGENT_POLL_LIMIT_MS;
    poll_now(u);
}

/* The commit's files, each with its ETag or its parts' (one pass over the
 * transfers: a file's parts are consecutive, in order). */
static json_t *commit_files(struct agent_upload *u)
{
    json_t *files = json_array();
    for (size_t i = 0; files != NULL && i < u->m.n_files; i++) {
        const struct ebb__ckpt_manifest_file *f = &u->m.files[i];
        char sha[65], stored_sha[65];
        ebb_hex(f->sha256, 32, sha);
        ebb_hex(f->stored_sha256, 32, stored_sha);
        json_array_append_new(files, json_pack("{s:s, s:I, s:s, s:I, s:s}", "path", f->path,
                                               "size", (json_int_t)f->size, "sha256", sha,
                                               "stored_size", (json_int_t)f->stored_size,
                                               "stored_sha256", stored_sha));
    }
    for (size_t k = 0; files != NULL && k < u->n_xfers; k++) {
        const struct xfer *x = &u->xfers[k];
        json_t *o = json_array_get(files, x->file);
        if (x->number == 0) {
            if (x->etag[0] != '\0')
                json_object_set_new(o, "etag", json_string(x->etag));
            continue;
        }
        json_t *parts = json_object_get(o, "parts");
        if (parts == NULL) {
            parts = json_array();
            json_object_set_new(o, "parts", parts);
        }
        json_array_append_new(parts, json_pack("{s:i, s:s}", "number", x->number, "etag",
                                               x->etag));
    }
    return files;
}

void agent_up_commit(struct agent_upload *u)
{
    struct agent *a = u->a;
    u->transfer_ms += now_ms(a);
    u->committed_ms = now_ms(a);
    u->state = UP_COMMITTING;
    ebb__debug("checkpoint %s: sent in %lld ms; committing", u->m.name, (long long)u->transfer_ms);
    json_t *body = json_pack("{s:o, s:I, s:b, s:I}", "files", commit_files(u),
                             "upload_ms", (json_int_t)u->transfer_ms,
                             "periodic", u->periodic,
                             "duration_ms", (json_int_t)u->duration_ms);
    if (body != NULL && u->fraction >= 0.0 && u->fraction <= 1.0)
        json_object_set_new(body, "fraction", json_real(u->fraction));
    char path[80];
    snprintf(path, sizeof(path), "checkpoints/%lld/commit", (long long)u->seq);
    int rc = body ? agent_api(a, "POST", path, body, on_committed, u) : EBB_ENOMEM;
    if (rc == 0)
        u->pending++;
    else
        agent_up_fail(u, "cannot commit: %s", ebb_strerror(rc));
}

static void on_posted(struct agent *a, void *arg, const struct ebb_http_response *res,
                      json_t *body)
{
    struct agent_upload *u = arg;
    if (!agent_up_alive(u) || u->state == UP_ENDING)
        return;
    json_t *id = json_object_get(body, "id");
    if (res->error != 0 || res->status / 100 != 2 || !json_is_integer(id) ||
        json_integer_value(id) <= 0) {
        char why[400];
        agent_up_fail(u, "ebbd did not take it: %s", agent_api_why(res, body, why, sizeof(why)));
        return;
    }
    u->seq = json_integer_value(id);
    u->state = UP_PREPARING;
    u->poll_deadline = now_ms(a) + AGENT_POLL_LIMIT_MS;
    ebb__debug("checkpoint %s is %lld at ebbd", u->m.name, (long long)u->seq);
    poll_now(u);
}

/* ---- walking and hashing ---- */

static void walk_work(uv_work_t *w)
{
    struct agent_upload *u = w->data;
    char name[sizeof(u->m.name)];
    memcpy(name, u->m.name, sizeof(name));
    u->work_rc = agent_ckpt_walk(u->dirfd, name, &u->m, u->why, sizeof(u->why));
    if (u->work_rc != 0) {
        memcpy(u->m.name, name, sizeof(name));
        return;
    }
    u->sums = calloc(u->m.n_files ? u->m.n_files : 1, sizeof(*u->sums));
    if (u->sums == NULL) {
        u->work_rc = EBB_ENOMEM;
        snprintf(u->why, sizeof(u->why), "out of memory");
        return;
    }
    u->work_rc = agent_seal_prepare(&u->seal, &u->m, u->dirfd, u->encrypt ? &u->key : NULL,
                                    u->why, sizeof(u->why));
}

static void hash_work(uv_work_t *w)
{
    struct agent_upload *u = w->data;
    u->hash_rc = agent_seal_hash(&u->seal, u->sums, u->hash_why, sizeof(u->hash_why));
}

static void hash_done(uv_work_t *w, int status)
{
    struct agent_upload *u = w->data;
    if (!agent_up_alive(u) || u->state == UP_ENDING)
        return;
    if (status != 0) {
        agent_up_fail(u, "cancelled");
        return;
    }
    size_t changed = 0;
    if (u->hash_rc == 0 && agent_seal_hashed(&u->seal, &changed) != 0)
        snprintf(u->hash_why, sizeof(u->hash_why), "%s changed while it was read",
                 u->m.files[changed].path);
    if (u->hash_rc != 0 || u->hash_why[0] != '\0') {
        agent_up_refuse(u, u->hash_why);
        return;
    }
    for (size_t i = 0; i < u->m.n_files; i++) {
        memcpy(u->m.files[i].sha256, u->sums[i].sha256, 32);
        memcpy(u->m.files[i].stored_sha256, u->sums[i].stored_sha256, 32);
    }
    ebb__info("hashed checkpoint %s: %zu file(s), %llu bytes %s, in %lld ms", u->m.name,
              u->m.n_files, (unsigned long long)u->stored_bytes,
              u->encrypt ? "sealed" : "stored as they are",
              (long long)(now_ms(u->a) - u->started_ms));
    agent_up_run(u);
}

static void walk_done(uv_work_t *w, int status)
{
    struct agent_upload *u = w->data;
    if (!agent_up_alive(u))
        return;
    struct agent *a = u->a;
    if (status != 0 || u->work_rc != 0) {
        if (status == 0)
            agent_up_refuse(u, u->why);
        else
            agent_up_fail(u, "cancelled");
        return;
    }
    json_t *files = json_array();
    for (size_t i = 0; i < u->m.n_files; i++) {
        u->stored_bytes += u->m.files[i].stored_size;
        json_array_append_new(files, json_pack("{s:s, s:I, s:I}", "path", u->m.files[i].path,
                                               "size", (json_int_t)u->m.files[i].size,
                                               "stored_size",
                                               (json_int_t)u->m.files[i].stored_size));
    }
    a->last_stored_bytes = u->stored_bytes;
    json_t *body = json_pack("{s:s, s:s, s:o}", "name", u->m.name, "kind",
                             u->m.kind == EBB__CKPT_KIND_FILE ? "file" : "directory",
                             "files", files);
    u->hash_work.data = u;
    if (uv_queue_work(&a->loop, &u->hash_work, hash_work, hash_done) != 0) {
        json_decref(body);
        agent_up_fail(u, "cannot hash it: thread pool");
        return;
    }
    u->pending++;
    u->state = UP_POSTING;
    int rc = body ? agent_api(a, "POST", "checkpoints", body, on_posted, u) : EBB_ENOMEM;
    if (rc == 0)
        u->pending++;
    else
        agent_up_fail(u, "cannot offer it to ebbd: %s", ebb_strerror(rc));
}

static void start_upload(struct agent *a, const char *name, bool periodic,
                         int64_t duration_ms, double fraction)
{
    struct agent_upload *u = calloc(1, sizeof(*u));
    if (u == NULL) {
        ebb__error("out of memory: checkpoint %s is not stored", name);
        return;
    }
    *u = (struct agent_upload){.a = a, .periodic = periodic, .duration_ms = duration_ms,
                               .started_ms = now_ms(a),
                               .fraction = fraction,
                               .encrypt = a->doc.store.encrypt, .key = a->key,
                               .dirfd = dup(a->ckpt_fd)};
    ebb__strlcpy(u->m.name, name, sizeof(u->m.name));
    ebb__strlcpy(u->name, name, sizeof(u->name));
    ebb__timer_init(&u->poll_timer, on_poll_timer, u);
    a->upload = u;
    u->work.data = u;
    if (u->dirfd < 0 || uv_queue_work(&a->loop, &u->work, walk_work, walk_done) != 0) {
        agent_up_fail(u, "cannot read it: %s", u->dirfd < 0 ? strerror(errno) : "thread pool");
        return;
    }
    u->pending++;
    ebb__info("storing checkpoint %s", name);
}

static void start_next(struct agent *a)
{
    char *name = a->upload_next;
    a->upload_next = NULL;
    start_upload(a, name, a->upload_next_periodic, a->upload_next_duration,
                 a->upload_next_fraction);
    free(name);
}

void agent_upload_offer(struct agent *a, const char *name, bool periodic,
                        int64_t duration_ms)
{
    char *copy = ebb_strfmt("%s", name);
    if (copy == NULL) {
        ebb__error("out of memory: checkpoint %s is not stored", name);
        return;
    }
    if (a->upload_next != NULL)
        ebb__info("checkpoint %s is not stored: %s is newer", a->upload_next, name);
    free(a->upload_next);
    a->upload_next = copy;
    a->upload_next_periodic = periodic;
    a->upload_next_duration = duration_ms;
    a->upload_next_fraction = a->last_progress;  /* what the checkpoint holds */
    a->upload_cancelled = false;
    if (a->upload == NULL)
        start_next(a);
}

bool agent_upload_busy(const struct agent *a)
{
    return a->upload != NULL || a->upload_next != NULL;
}

const char *agent_upload_name(const struct agent *a)
{
    return a->upload != NULL ? a->upload->name : NULL;
}

void agent_upload_cancel(struct agent *a, const char *why)
{
    free(a->upload_next);
    a->upload_next = NULL;
    a->upload_cancelled = true;
    if (a->upload == NULL)
        agent_upload_idle(a);
    else if (a->upload->state != UP_ENDING)
        agent_up_fail(a->upload, "%s", why);
}

void agent_upload_free(struct agent *a)
{
    free(a->upload_next);
    a->upload_next = NULL;
    struct agent_upload *u = a->upload;
    a->upload = NULL;
    if (u == NULL)
        return;
    ebb__timer_stop(&a->clock, &u->poll_timer);
    u->a = NULL;
    if (u->pending == 0)
        up_free(u);
}

bool agent_upload_fits(const struct agent *a, int64_t time_left_ms, int64_t *need_ms)
{
    *need_ms = -1;
    if (a->upload_rate <= 0 || a->last_stored_bytes == 0)
        return true;
    *need_ms = (int64_t)((double)a->last_stored_bytes / a->upload_rate) + a->last_write_ms +
               a->last_complete_ms;
    return *need_ms <= time_left_ms;
}
