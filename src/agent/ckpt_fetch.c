/* Ranged GETs of one stored object into a ring its opening reads (see
 * ckpt_fetch.h).
 *
 * Threads: everything but agent_fetch_read runs on the loop. A slot is
 * the loop's while FREE or FILLING (curl writes into it) and the
 * reader's while READY; the state changes under `mu`, the reader waits
 * on `cond`, and a slot it frees wakes the loop through `async`. */
#include "agent/ckpt_fetch.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "agent/agent.h"
#include "base/str.h"
#include "io/http_client.h"

/* Per GET: one attempt may take this long, and the HTTP client tries
 * this often (5xx, SlowDown, 429, no answer). */
#define GET_TIMEOUT_MS (10 * 60 * 1000)
#define GET_ATTEMPTS 6

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_READY };

struct slot {
    struct agent_fetch *f;
    unsigned char *buf;          /* AGENT_FETCH_RANGE bytes */
    uint64_t range;              /* the range it holds or awaits */
    size_t len;                  /* that range's length */
    enum slot_state state;
    bool refused;                /* its GET met a 403: ask again */
    struct ebb__http_stream s;
};

struct agent_fetch {
    struct agent *a;
    struct agent_fetch_hooks hooks;
    size_t parallel, n_slots;
    struct slot *slots;
    uv_async_t async;
    uv_mutex_t mu;
    uv_cond_t cond;
    /* The loop's. */
    char *path, *url;
    uint64_t size, n_ranges, next;   /* stored bytes, ranges, the next to ask for */
    size_t in_flight;
    bool waiting;                    /* a 403 came: no GET until a fresh URL */
    bool closing;
    uint64_t bytes;
    char why[600];
    /* Shared, under mu. */
    bool failed;
    uint64_t read_range;             /* the reader's range, and where in it */
    size_t read_pos;
};

static void pump(struct agent_fetch *f);

static void free_slots(struct agent_fetch *f)
{
    for (size_t i = 0; f->slots != NULL && i < f->n_slots; i++)
        free(f->slots[i].buf);
    free(f->slots);
}

static void freed(uv_handle_t *h)
{
    struct agent_fetch *f = h->data;
    free_slots(f);
    uv_cond_destroy(&f->cond);
    uv_mutex_destroy(&f->mu);
    free(f->path);
    free(f->url);
    free(f);
}

static void on_async(uv_async_t *h)
{
    struct agent_fetch *f = h->data;
    if (!f->closing)
        pump(f);
}

struct agent_fetch *agent_fetch_new(struct agent *a, int parallel,
                                    const struct agent_fetch_hooks *hooks)
{
    struct agent_fetch *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return NULL;
    *f = (struct agent_fetch){.a = a, .hooks = *hooks, .parallel = (size_t)parallel,
                              .n_slots = (size_t)parallel + 1};
    f->slots = calloc(f->n_slots, sizeof(*f->slots));
    bool ok = f->slots != NULL;
    for (size_t i = 0; ok && i < f->n_slots; i++) {
        f->slots[i] = (struct slot){.f = f, .buf = malloc(AGENT_FETCH_RANGE)};
        ok = f->slots[i].buf != NULL;
    }
    int step = 0;
    if (ok && uv_mutex_init(&f->mu) == 0 && ++step && uv_cond_init(&f->cond) == 0 &&
        ++step && uv_async_init(&a->loop, &f->async, on_async) == 0) {
        f->async.data = f;
        return f;
    }
    if (step == 2)
        uv_cond_destroy(&f->cond);
    if (step >= 1)
        uv_mutex_destroy(&f->mu);
    free_slots(f);
    free(f);
    return NULL;
}

void agent_fetch_fail(struct agent_fetch *f, const char *fmt, ...)
{
    if (fmt != NULL && f->why[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->why, sizeof(f->why), fmt, ap);
        va_end(ap);
    }
    uv_mutex_lock(&f->mu);
    f->failed = true;
    uv_cond_broadcast(&f->cond);
    uv_mutex_unlock(&f->mu);
}

/* Whether a 2xx answer is the range the slot asked for (`why` if not). */
static bool answer_ok(struct agent_fetch *f, struct slot *sl,
                      const struct ebb_http_response *res, char *why, size_t len)
{
    uint64_t first = sl->range * AGENT_FETCH_RANGE, got = (uint64_t)sl->s.downloaded;
    if (f->n_ranges == 1) {
        if (res->status == 200 && got == sl->len)
            return true;
        snprintf(why, len, "%s: the store holds %" PRIu64 " bytes, the manifest says %" PRIu64,
                 f->path, got, f->size);
        return false;
    }
    char range[128];
    unsigned long long a = 0, b = 0, total = 0;
    if (res->status != 206 ||
        ebb__http_header(res->headers, "Content-Range", range, sizeof(range)) != 0 ||
        sscanf(range, "bytes %llu-%llu/%llu", &a, &b, &total) != 3) {
        snprintf(why, len, "downloading %s: the store answered a ranged GET with HTTP %d "
                 "and no usable Content-Range", f->path, res->status);
        return false;
    }
    if (total != f->size) {
        snprintf(why, len, "%s: the store holds %llu bytes, the manifest says %" PRIu64,
                 f->path, total, f->size);
        return false;
    }
    if (a != first || b + 1 != first + sl->len || got != sl->len) {
        snprintf(why, len, "downloading %s: the store sent %" PRIu64 " bytes (%llu-%llu) "
                 "for bytes %" PRIu64 "-%" PRIu64, f->path, got, a, b, first,
                 first + sl->len - 1);
        return false;
    }
    return true;
}

/* A 416: the object ends before the range (its size, when it says). */
static void too_short(struct agent_fetch *f, const struct ebb_http_response *res, char *why,
                      size_t len)
{
    char range[128];
    unsigned long long total = 0;
    if (ebb__http_header(res->headers, "Content-Range", range, sizeof(range)) == 0 &&
        sscanf(range, "bytes */%llu", &total) == 1)
        snprintf(why, len, "%s: the store holds %llu bytes, the manifest says %" PRIu64,
                 f->path, total, f->size);
    else
        snprintf(why, len, "%s: the store holds fewer bytes than the manifest's %" PRIu64,
                 f->path, f->size);
}

static void on_get(const struct ebb_http_response *res, void *arg)
{
    struct slot *sl = arg;
    struct agent_fetch *f = sl->f;
    f->in_flight--;
    if (f->closing) {
        if (f->in_flight == 0)
            uv_close((uv_handle_t *)&f->async, freed);
        return;
    }
    char why[400];
    if (f->failed) {
        /* the fetch is over; what came is dropped */
    } else if (res->error == 0 && res->status == 403) {
        sl->refused = true;
        f->waiting = true;
    } else if (res->error == 0 && res->status == 416 && f->n_ranges > 1) {
        too_short(f, res, why, sizeof(why));
        agent_fetch_fail(f, "%s", why);
    } else if (res->error != 0 || res->status / 100 != 2) {
        agent_fetch_fail(f, "downloading %s: %s", f->path,
                         agent_describe_failure(res, why, sizeof(why)));
    } else if (!answer_ok(f, sl, res, why, sizeof(why))) {
        agent_fetch_fail(f, "%s", why);
    } else {
        f->bytes += (uint64_t)sl->s.downloaded;
        uv_mutex_lock(&f->mu);
        sl->state = SLOT_READY;
        uv_cond_broadcast(&f->cond);
        uv_mutex_unlock(&f->mu);
    }
    if (f->in_flight > 0 || (!f->failed && !f->waiting)) {
        pump(f);
        if (f->in_flight > 0 || !f->failed)
            return;
    }
    /* Nothing is out: the hook may end the fetch, or the resume. */
    if (f->waiting && !f->failed)
        f->hooks.refused(f->hooks.arg);
    else
        f->hooks.settled(f->hooks.arg);
}

static int start_get(struct agent_fetch *f, struct slot *sl)
{
    uint64_t first = sl->range * AGENT_FETCH_RANGE;
    char range[80];
    snprintf(range, sizeof(range), "Range: bytes=%" PRIu64 "-%" PRIu64, first,
             first + sl->len - 1);
    const char *headers[] = {range};
    sl->s = (struct ebb__http_stream){.upload_fd = -1, .download_fd = -1,
                                      .download_buf = sl->buf, .download_cap = sl->len};
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = "GET", .url = f->url, .timeout = GET_TIMEOUT_MS,
        .max_attempts = GET_ATTEMPTS,
        .headers = f->n_ranges > 1 ? headers : NULL, .n_headers = f->n_ranges > 1,
    };
    int rc = ebb__http_request_stream(f->a->http, &req, &sl->s, on_get, sl);
    if (rc != 0) {
        agent_fetch_fail(f, "cannot download %s: %s", f->path, ebb_strerror(rc));
        return rc;
    }
    f->in_flight++;
    return 0;
}

/* Starts GETs while slots are free and fewer than `parallel` are out. */
static void pump(struct agent_fetch *f)
{
    while (!f->failed && !f->waiting && f->in_flight < f->parallel && f->next < f->n_ranges) {
        struct slot *sl = &f->slots[f->next % f->n_slots];
        uv_mutex_lock(&f->mu);
        bool free_slot = sl->state == SLOT_FREE;
        if (free_slot)
            sl->state = SLOT_FILLING;
        uv_mutex_unlock(&f->mu);
        if (!free_slot)
            return;
        uint64_t first = f->next * AGENT_FETCH_RANGE;
        sl->range = f->next++;
        sl->len = (size_t)(f->size - first < AGENT_FETCH_RANGE ? f->size - first
                                                                : AGENT_FETCH_RANGE);
        if (start_get(f, sl) != 0)
            return;
    }
}

static int set_string(char **dst, const char *src)
{
    char *copy = ebb_strfmt("%s", src);
    if (copy == NULL)
        return EBB_ENOMEM;
    free(*dst);
    *dst = copy;
    return 0;
}

int agent_fetch_begin(struct agent_fetch *f, const char *path, const char *url,
                      uint64_t size)
{
    if (set_string(&f->path, path) != 0 || set_string(&f->url, url) != 0)
        return EBB_ENOMEM;
    f->size = size;
    /* An empty object is one empty GET, so that a missing one is seen. */
    f->n_ranges = size == 0 ? 1 : (size + AGENT_FETCH_RANGE - 1) / AGENT_FETCH_RANGE;
    f->next = 0;
    f->bytes = 0;
    f->waiting = false;
    f->why[0] = '\0';
    for (size_t i = 0; i < f->n_slots; i++) {
        f->slots[i].state = SLOT_FREE;
        f->slots[i].refused = false;
    }
    f->failed = false;
    f->read_range = 0;
    f->read_pos = 0;
    pump(f);
    return 0;
}

int agent_fetch_url(struct agent_fetch *f, const char *url)
{
    if (set_string(&f->url, url) != 0) {
        agent_fetch_fail(f, "downloading %s: out of memory", f->path);
        return EBB_ENOMEM;
    }
    f->waiting = false;
    for (size_t i = 0; i < f->n_slots && !f->failed; i++) {
        if (!f->slots[i].refused)
            continue;
        f->slots[i].refused = false;
        start_get(f, &f->slots[i]);
    }
    pump(f);
    return 0;
}

bool agent_fetch_busy(const struct agent_fetch *f)
{
    return f->in_flight > 0;
}

const char *agent_fetch_failure(const struct agent_fetch *f)
{
    return f->why;
}

uint64_t agent_fetch_bytes(const struct agent_fetch *f)
{
    return f->bytes;
}

ssize_t agent_fetch_read(void *arg, void *buf, size_t len)
{
    struct agent_fetch *f = arg;
    uv_mutex_lock(&f->mu);
    struct slot *sl = &f->slots[f->read_range % f->n_slots];
    while (!f->failed && f->read_range < f->n_ranges && sl->state != SLOT_READY) {
        uv_cond_wait(&f->cond, &f->mu);
        sl = &f->slots[f->read_range % f->n_slots];
    }
    bool failed = f->failed, end = f->read_range == f->n_ranges;
    uv_mutex_unlock(&f->mu);
    if (failed)
        return EBB_EIO;
    if (end)
        return 0;
    size_t n = sl->len - f->read_pos < len ? sl->len - f->read_pos : len;
    memcpy(buf, sl->buf + f->read_pos, n);
    f->read_pos += n;
    if (f->read_pos == sl->len) {
        uv_mutex_lock(&f->mu);
        sl->state = SLOT_FREE;
        f->read_range++;
        f->read_pos = 0;
        uv_mutex_unlock(&f->mu);
        uv_async_send(&f->async);
    }
    return (ssize_t)n;
}

void agent_fetch_close(struct agent_fetch *f)
{
    if (f == NULL)
        return;
    f->closing = true;
    if (f->in_flight == 0)
        uv_close((uv_handle_t *)&f->async, freed);
}
