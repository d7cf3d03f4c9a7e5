/* Bringing the newest durable checkpoint back at the start (store.h).
 *
 * GET /v1/agent/resume lists the job's durable checkpoints, newest first.
 * For each in turn: the manifest is downloaded and verified under the job
 * key (MAC, key id) and must list exactly the files ebbd lists; every
 * object is opened (each chunk authenticated, sizes and hashes matched
 * against the manifest) on the thread pool while it downloads (ranged
 * GETs into a bounded ring, ckpt_fetch.h; a file:// object is read in
 * place) into a temporary ".ebb-dl-*" entry of the checkpoint directory,
 * marked as the job's so that a killed run's leftovers are removed (one
 * object at a time: one descriptor whatever the number of files), and
 * renamed to the checkpoint's name. A URL the store refuses (403: expired
 * during a long download) is asked of ebbd again, REFRESH_MAX times per
 * checkpoint, and the download goes on where it was. Any fault is a
 * `checkpoint_fallback` event and the next one is tried; when none is
 * left the job starts afresh.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/ckpt_fetch.h"
#include "agent/ckpt_walk.h"
#include "agent/store.h"
#include "base/log.h"
#include "base/str.h"

#define DL_TIMEOUT_MS (10 * 60 * 1000)
#define DL_ATTEMPTS 6
/* How often refused (403) URLs are asked of ebbd again per checkpoint. */
#define REFRESH_MAX 3

struct agent_resume {
    struct agent *a;             /* NULL once the agent let go of it */
    void (*done)(struct agent *a);
    json_t *list;                /* the answer's "checkpoints" */
    size_t idx;                  /* the candidate being tried */
    json_t *cand;                /* its entry, or a fresher one (URLs) */
    const char *name;            /* its name (in list) */
    int64_t id;
    int refreshes;               /* fresh URLs asked for it */
    struct ebb__ckpt_manifest *m;
    int object;                  /* a file:// object being opened, -1: none */
    struct agent_fetch *fetch;   /* http(s) objects; NULL until one */
    bool fetching;               /* the object comes through `fetch` */
    size_t next;                 /* the object being opened */
    uint64_t bytes;              /* downloaded, all candidates */
    int64_t started_ms;
    char tmp[64];
    /* For the thread pool. */
    uv_work_t work;
    ebb__ckpt_read_fn rd;        /* what the object is read with */
    void *rd_arg;
    int work_rc;
    bool work_done;
    int dirfd;
    bool encrypt, has_key;
    struct ebb__ckpt_key key;
    struct ebb__ckpt_error err;
    int pending;                 /* callbacks still to come */
};

static void try_next(struct agent_resume *r);

static void close_objects(struct agent_resume *r)
{
    if (r->object >= 0)
        close(r->object);
    r->object = -1;
    ebb__ckpt_manifest_free(r->m);
    r->m = NULL;
}

static void resume_free(struct agent_resume *r)
{
    close_objects(r);
    agent_fetch_close(r->fetch);
    json_decref(r->cand);
    json_decref(r->list);
    if (r->dirfd >= 0)
        close(r->dirfd);
    ebb__ckpt_key_wipe(&r->key);
    free(r);
}

/* A callback came back: true when the resume is still the agent's. */
static bool alive(struct agent_resume *r)
{
    r->pending--;
    if (r->a != NULL)
        return true;
    if (r->pending == 0)
        resume_free(r);
    return false;
}

static void finish(struct agent_resume *r)
{
    struct agent *a = r->a;
    a->resume = NULL;
    void (*done)(struct agent *) = r->done;
    a->download_bytes = (int64_t)r->bytes;
    a->download_ms = ebb__clock_now(&a->clock) - r->started_ms;
    resume_free(r);
    done(a);
}

/* The candidate is refused: the event, then the next one. */
static void fallback(struct agent_resume *r, const char *fmt, ...) EBB_PRINTF(2, 3);
static void fallback(struct agent_resume *r, const char *fmt, ...)
{
    struct agent *a = r->a;
    char why[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    ebb__warn("stored checkpoint %s (id %lld) is refused: %s; trying the one before it",
              r->name, (long long)r->id, why);
    agent_reporter_event(&a->rep, json_pack("{s:s, s:s, s:s}", "kind", "checkpoint_fallback",
                                            "name", r->name, "reason", why));
    close_objects(r);
    if (r->tmp[0] != '\0') {
        size_t removed = 0;
        agent_ckpt_remove_temporaries(a->ckpt_fd, a->doc.job_id, &removed);
        r->tmp[0] = '\0';
    }
    r->idx++;
    try_next(r);
}

/* ---- opening the objects into the directory ---- */

static void download_next(struct agent_resume *r);

static void unstage_work(uv_work_t *w)
{
    struct agent_resume *r = w->data;
    r->err = (struct ebb__ckpt_error){0};
    r->work_rc = agent_ckpt_unstage_file(r->dirfd, r->tmp, r->m, r->next,
                                         r->encrypt ? &r->key : NULL, r->rd, r->rd_arg,
                                         &r->err);
}

/* Every object is in place: the checkpoint takes its name. */
static void unstaged(struct agent_resume *r)
{
    struct agent *a = r->a;
    struct ebb__ckpt_error err = {0};
    if (agent_ckpt_unstage_end(a->ckpt_fd, r->tmp, r->m, &err) != 0) {
        fallback(r, "%s", err.diag.msg);
        return;
    }
    if (renameat(a->ckpt_fd, r->tmp, a->ckpt_fd, r->name) != 0) {
        fallback(r, "cannot rename it into %s: %s", a->doc.ckpt_dir, strerror(errno));
        return;
    }
    char marker[128];
    snprintf(marker, sizeof(marker), AGENT_CKPT_MARK "%s", r->tmp);
    unlinkat(a->ckpt_fd, marker, 0);
    r->tmp[0] = '\0';
    int rc = agent_ckpt_mark(a->ckpt_fd, r->name, a->doc.job_id);
    if (rc != 0)
        ebb__warn("cannot mark checkpoint %s as this job's (it will not be pruned): %s",
                  r->name, strerror(-rc));
    free(a->resume_from);
    a->resume_from = agent_ckpt_path(a->doc.ckpt_dir, r->name);
    a->resume_id = r->id;
    ebb__info("brought stored checkpoint %s (id %lld) back: %zu file(s), %llu bytes "
              "downloaded in %lld ms", r->name, (long long)r->id, r->m->n_files,
              (unsigned long long)r->bytes,
              (long long)(ebb__clock_now(&a->clock) - r->started_ms));
    finish(r);
}

/* The object's end, once it is opened (or refused) and no GET is out:
 * a download's fault says more than the reader's "reading failed". */
static void object_end(struct agent_resume *r)
{
    if (!r->work_done || (r->fetching && agent_fetch_busy(r->fetch)))
        return;
    r->work_done = false;
    char why[600] = "";
    if (r->fetching) {
        snprintf(why, sizeof(why), "%s", agent_fetch_failure(r->fetch));
        r->bytes += agent_fetch_bytes(r->fetch);
        r->fetching = false;
    }
    if (why[0] == '\0' && r->work_rc != 0)
        snprintf(why, sizeof(why), "%.590s", r->err.diag.msg);
    if (why[0] != '\0') {
        fallback(r, "%s", why);
        return;
    }
    if (r->object >= 0)
        close(r->object);
    r->object = -1;
    r->next++;
    download_next(r);
}

static void unstage_done(uv_work_t *w, int status)
{
    struct agent_resume *r = w->data;
    if (!alive(r))
        return;
    if (status != 0) {
        r->work_rc = EBB_ECANCELED;
        snprintf(r->err.diag.msg, sizeof(r->err.diag.msg), "cancelled");
    }
    r->work_done = true;
    if (r->work_rc != 0 && r->fetching)
        agent_fetch_fail(r->fetch, NULL);
    object_end(r);
}

/* Object r->next comes through r->rd: open it into the temporary. */
static void unstage(struct agent_resume *r)
{
    r->work.data = r;
    r->work_done = false;
    if (uv_queue_work(&r->a->loop, &r->work, unstage_work, unstage_done) != 0) {
        r->work_rc = EBB_EIO;
        snprintf(r->err.diag.msg, sizeof(r->err.diag.msg), "cannot use the thread pool");
        r->work_done = true;
        if (r->fetching)
            agent_fetch_fail(r->fetch, "cannot use the thread pool");
        object_end(r);
        return;
    }
    r->pending++;
}

/* The temporary the objects go into, marked as the job's first. */
static void begin(struct agent_resume *r)
{
    struct agent *a = r->a;
    snprintf(r->tmp, sizeof(r->tmp), ".ebb-dl-%d-%zu", (int)getpid(), r->idx);
    int rc = agent_ckpt_mark(a->ckpt_fd, r->tmp, a->doc.job_id);
    if (rc != 0) {
        r->tmp[0] = '\0';
        fallback(r, "cannot mark the temporary in %s: %s", a->doc.ckpt_dir, strerror(-rc));
        return;
    }
    struct ebb__ckpt_error err = {0};
    if (agent_ckpt_unstage_begin(a->ckpt_fd, r->tmp, r->m, &err) != 0) {
        fallback(r, "%s", err.diag.msg);
        return;
    }
    r->next = 0;
    download_next(r);
}

/* ---- objects ---- */

static bool is_path(json_t *f, const char *path)
{
    const char *p = json_string_value(json_object_get(f, "path"));
    return p != NULL && strcmp(p, path) == 0;
}

/* ebbd's entry for `path` (its URL, and its stored size or -1), entry
 * `hint` first: ebbd lists them in the manifest's order, and a
 * checkpoint of 100,000 files is not matched in quadratic time. */
static const char *answer_url(json_t *cand, size_t hint, const char *path, int64_t *stored)
{
    json_t *files = json_object_get(cand, "files");
    json_t *found = is_path(json_array_get(files, hint), path) ? json_array_get(files, hint)
                                                               : NULL;
    for (size_t i = 0; found == NULL && i < json_array_size(files); i++)
        if (is_path(json_array_get(files, i), path))
            found = json_array_get(files, i);
    if (found == NULL)
        return NULL;
    json_t *s = json_object_get(found, "stored_size");
    *stored = json_is_integer(s) ? json_integer_value(s) : -1;
    return json_string_value(json_object_get(found, "url"));
}

/* ---- refused URLs ---- */

static void get_manifest(struct agent_resume *r);
static int check_manifest(struct agent_resume *r, char *why, size_t len);

/* ebbd's fresh entry for the candidate: the manifest asked again, or the
 * refused ranges of the object. */
static void on_fresh(struct agent *a, void *arg, const struct ebb_http_response *res,
                     json_t *body)
{
    (void)a;
    struct agent_resume *r = arg;
    if (!alive(r))
        return;
    json_t *list = json_object_get(body, "checkpoints"), *cand = NULL, *c;
    size_t i;
    char why[400] = "";
    if (res->error != 0 || res->status != 200 || !json_is_array(list)) {
        char api[300];
        snprintf(why, sizeof(why), "ebbd gave no fresh ones (%s)",
                 agent_api_why(res, body, api, sizeof(api)));
    } else {
        json_array_foreach(list, i, c)
            if (json_integer_value(json_object_get(c, "id")) == r->id)
                cand = c;
        if (cand == NULL)
            snprintf(why, sizeof(why), "ebbd no longer lists it");
    }
    if (cand != NULL) {
        json_decref(r->cand);
        r->cand = json_incref(cand);
    }
    if (r->m == NULL) {
        if (why[0] != '\0')
            fallback(r, "downloading its manifest: the store refused its URL (HTTP 403) "
                     "and %s", why);
        else
            get_manifest(r);
        return;
    }
    const char *path = r->m->files[r->next].path;
    int64_t stored = -1;
    const char *url = why[0] == '\0' && check_manifest(r, why, sizeof(why)) == 0
                          ? answer_url(r->cand, r->next, path, &stored) : NULL;
    if (url != NULL) {
        ebb__info("downloading %s of checkpoint %s on where it was, with a fresh URL",
                  path, r->name);
        agent_fetch_url(r->fetch, url);
        return;
    }
    agent_fetch_fail(r->fetch, "downloading %s: the store refused its URL (HTTP 403) and %s",
                     path, why[0] ? why : "ebbd gave none for it");
}

/* The store answered 403 (an expired URL, most likely): ebbd is asked
 * for fresh URLs, REFRESH_MAX times per checkpoint. Returns false when
 * that is used up or impossible (`why` says so). */
static bool refresh(struct agent_resume *r, char *why, size_t len)
{
    if (r->refreshes >= REFRESH_MAX) {
        snprintf(why, len, "the store refused its URL (HTTP 403) after %d fresh ones "
                 "from ebbd", REFRESH_MAX);
        return false;
    }
    r->refreshes++;
    ebb__warn("the store refused a download URL of checkpoint %s (HTTP 403; expired?); "
              "asking ebbd for fresh ones", r->name);
    int rc = agent_api(r->a, "GET", "resume", NULL, on_fresh, r);
    if (rc != 0) {
        snprintf(why, len, "the store refused its URL (HTTP 403) and ebbd could not be "
                 "asked for a fresh one: %s", ebb_strerror(rc));
        return false;
    }
    r->pending++;
    return true;
}

static void on_refused(void *arg)
{
    struct agent_resume *r = arg;
    char why[300];
    if (r->a != NULL && !refresh(r, why, sizeof(why)))
        agent_fetch_fail(r->fetch, "downloading %s: %s", r->m->files[r->next].path, why);
}

static void on_settled(void *arg)
{
    struct agent_resume *r = arg;
    if (r->a != NULL)
        object_end(r);
}

static void download_next(struct agent_resume *r)
{
    struct agent *a = r->a;
    if (r->next == r->m->n_files) {
        unstaged(r);
        return;
    }
    const struct ebb__ckpt_manifest_file *f = &r->m->files[r->next];
    int64_t stored = -1;
    const char *url = answer_url(r->cand, r->next, f->path, &stored);
    if (url == NULL) {
        fallback(r, "ebbd gave no URL for %s", f->path);
        return;
    }
    if (strncmp(url, "file:///", 8) == 0) {
        int fd = open(url + 7, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            fallback(r, "%s: %s", url + 7, fd < 0 ? strerror(errno) : "not a regular file");
            if (fd >= 0)
                close(fd);
            return;
        }
        r->object = fd;
        r->bytes += (uint64_t)st.st_size;
        r->rd = ebb__ckpt_fd_read;
        r->rd_arg = &r->object;
        unstage(r);
        return;
    }
    if (r->fetch == NULL) {
        struct agent_fetch_hooks hooks = {.refused = on_refused, .settled = on_settled,
                                          .arg = r};
        r->fetch = agent_fetch_new(a, a->doc.store.parallel, &hooks);
    }
    if (r->fetch == NULL || agent_fetch_begin(r->fetch, f->path, url, f->stored_size) != 0) {
        fallback(r, "downloading %s: out of memory", f->path);
        return;
    }
    r->fetching = true;
    r->rd = agent_fetch_read;
    r->rd_arg = r->fetch;
    unstage(r);
}

/* ---- the manifest ---- */

/* The manifest must be this checkpoint's and list exactly ebbd's files. */
static int check_manifest(struct agent_resume *r, char *why, size_t len)
{
    json_t *files = json_object_get(r->cand, "files");
    if (strcmp(r->m->name, r->name) != 0) {
        snprintf(why, len, "its manifest is checkpoint \"%.64s\"'s", r->m->name);
        return EBB_EAUTH;
    }
    if (strcmp(r->m->job, r->a->doc.job_id) != 0) {
        snprintf(why, len, "its manifest is job %.64s's", r->m->job);
        return EBB_EAUTH;
    }
    if (r->m->encrypt != r->a->doc.store.encrypt) {
        snprintf(why, len, "its manifest says encrypt: %s", r->m->encrypt ? "true" : "false");
        return EBB_EAUTH;
    }
    if (!json_is_array(files) || json_array_size(files) != r->m->n_files) {
        snprintf(why, len, "ebbd lists %zu files, the manifest %zu",
                 json_array_size(files), r->m->n_files);
        return EBB_EAUTH;
    }
    for (size_t i = 0; i < r->m->n_files; i++) {
        int64_t stored = -1;
        if (answer_url(r->cand, i, r->m->files[i].path, &stored) == NULL) {
            snprintf(why, len, "ebbd does not list %s, which the manifest does",
                     r->m->files[i].path);
            return EBB_EAUTH;
        }
        uint64_t want = r->m->encrypt ? r->m->files[i].stored_size : r->m->files[i].size;
        if (stored >= 0 && (uint64_t)stored != want) {
            snprintf(why, len, "%s: ebbd says %lld stored bytes, the manifest %llu",
                     r->m->files[i].path, (long long)stored, (unsigned long long)want);
            return EBB_EAUTH;
        }
        if (!r->m->encrypt)
            r->m->files[i].stored_size = r->m->files[i].size;
    }
    return 0;
}

static void take_manifest(struct agent_resume *r, const char *text, size_t len)
{
    struct ebb__ckpt_error err = {0};
    if (!r->has_key) {
        fallback(r, "no job key to verify its manifest with (ebbd sent none)");
        return;
    }
    int rc = ebb__ckpt_manifest_read(text, len, &r->key, &r->m, &err);
    if (rc != 0) {
        fallback(r, "its manifest: %s", err.diag.msg);
        return;
    }
    char why[400];
    if (check_manifest(r, why, sizeof(why)) != 0) {
        fallback(r, "%s", why);
        return;
    }
    begin(r);
}

static void on_manifest(const struct ebb_http_response *res, void *arg)
{
    struct agent_resume *r = arg;
    if (!alive(r))
        return;
    char why[300];
    if (res->error == 0 && res->status == 403) {
        if (!refresh(r, why, sizeof(why)))
            fallback(r, "downloading its manifest: %s", why);
        return;
    }
    if (res->error != 0 || res->status != 200) {
        fallback(r, "downloading its manifest: %s",
                 agent_describe_failure(res, why, sizeof(why)));
        return;
    }
    r->bytes += res->body_len;
    take_manifest(r, res->body, res->body_len);
}

/* A file:// manifest, read at once (it is small: EBB__CKPT_MANIFEST_MAX). */
static void read_file_manifest(struct agent_resume *r, const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size > (off_t)EBB__CKPT_MANIFEST_MAX) {
        fallback(r, "its manifest %s: %s", path, fd < 0 ? strerror(errno)
                 : "not a regular file of at most 16 MiB");
        if (fd >= 0)
            close(fd);
        return;
    }
    char *text = malloc((size_t)st.st_size + 1);
    ssize_t n = text ? read(fd, text, (size_t)st.st_size) : -1;
    close(fd);
    if (n != st.st_size) {
        free(text);
        fallback(r, "cannot read its manifest %s", path);
        return;
    }
    r->bytes += (uint64_t)n;
    take_manifest(r, text, (size_t)n);
    free(text);
}

/* Downloads the manifest of r->cand (again, after fresh URLs). */
static void get_manifest(struct agent_resume *r)
{
    const char *manifest = json_string_value(json_object_get(r->cand, "manifest_url"));
    if (manifest == NULL) {
        fallback(r, "ebbd gave no manifest URL");
        return;
    }
    if (strncmp(manifest, "file:///", 8) == 0) {
        read_file_manifest(r, manifest + 7);
        return;
    }
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = "GET", .url = manifest, .timeout = DL_TIMEOUT_MS,
        .max_attempts = DL_ATTEMPTS,
    };
    int rc = ebb__http_request(r->a->http, &req, on_manifest, r);
    if (rc != 0) {
        fallback(r, "cannot download its manifest: %s", ebb_strerror(rc));
        return;
    }
    r->pending++;
}

/* Whether ebbd's entry `cand` may be brought back: a gang member brings
 * back only the gang's checkpoint, the one its job document names. */
static bool wanted(const struct agent *a, json_t *cand)
{
    const char *name = json_string_value(json_object_get(cand, "name"));
    return !a->doc.has_resume || (name != NULL && strcmp(name, a->doc.resume) == 0);
}

static void try_next(struct agent_resume *r)
{
    struct agent *a = r->a;
    while (r->idx < json_array_size(r->list) && !wanted(a, json_array_get(r->list, r->idx)))
        r->idx++;
    json_t *cand = json_array_get(r->list, r->idx);
    json_decref(r->cand);
    r->cand = json_incref(cand);
    r->refreshes = 0;
    if (cand == NULL) {
        if (a->doc.has_resume)
            ebb__warn("no stored checkpoint %s could be brought back", a->doc.resume);
        else if (json_array_size(r->list) > 0)
            ebb__warn("no stored checkpoint could be used; the job starts from the "
                      "beginning");
        finish(r);
        return;
    }
    json_t *id = json_object_get(cand, "id");
    r->name = json_string_value(json_object_get(cand, "name"));
    r->id = json_is_integer(id) ? json_integer_value(id) : 0;
    const char *bad = NULL;
    if (r->name == NULL || ebb__ckpt_name_check(r->name, &bad) != 0) {
        r->name = "?";
        fallback(r, "ebbd's entry has no usable name (%s)", bad ? bad : "none");
        return;
    }
    struct stat st;
    if (fstatat(a->ckpt_fd, r->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        /* A shared disk already holds it: the job's own copy. */
        ebb__info("stored checkpoint %s is already in %s; using that copy", r->name,
                  a->doc.ckpt_dir);
        free(a->resume_from);
        a->resume_from = agent_ckpt_path(a->doc.ckpt_dir, r->name);
        a->resume_id = r->id;
        finish(r);
        return;
    }
    ebb__info("downloading stored checkpoint %s (id %lld)", r->name, (long long)r->id);
    get_manifest(r);
}

static void on_list(struct agent *a, void *arg, const struct ebb_http_response *res,
                    json_t *body)
{
    (void)a;
    struct agent_resume *r = arg;
    if (!alive(r))
        return;
    json_t *list = json_object_get(body, "checkpoints");
    if (res->error != 0 || res->status != 200 || !json_is_array(list)) {
        char why[400];
        ebb__warn("cannot learn the job's stored checkpoints from ebbd (%s); starting "
                  "from what %s holds", agent_api_why(res, body, why, sizeof(why)),
                  r->a->doc.ckpt_dir);
        finish(r);
        return;
    }
    if (json_array_size(list) == 0)
        ebb__info("the store holds no checkpoint of this job yet");
    r->list = json_incref(list);
    try_next(r);
}

void agent_resume_start(struct agent *a, void (*done)(struct agent *a))
{
    struct agent_resume *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        ebb__error("out of memory: not resuming from the store");
        done(a);
        return;
    }
    *r = (struct agent_resume){.a = a, .done = done, .dirfd = dup(a->ckpt_fd), .object = -1,
                               .encrypt = a->doc.store.encrypt, .key = a->key,
                               .has_key = a->doc.store.key_hex[0] != '\0',
                               .started_ms = ebb__clock_now(&a->clock)};
    a->resume = r;
    int rc = r->dirfd >= 0 ? agent_api(a, "GET", "resume", NULL, on_list, r) : EBB_EIO;
    if (rc != 0) {
        ebb__warn("cannot ask ebbd for the stored checkpoints: %s", ebb_strerror(rc));
        finish(r);
        return;
    }
    r->pending++;
}

void agent_resume_free(struct agent *a)
{
    struct agent_resume *r = a->resume;
    a->resume = NULL;
    if (r == NULL)
        return;
    r->a = NULL;
    if (r->fetch != NULL)
        agent_fetch_fail(r->fetch, NULL);   /* wakes the reader, if one waits */
    if (r->pending == 0)
        resume_free(r);
}
