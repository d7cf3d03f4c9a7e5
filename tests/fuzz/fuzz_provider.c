/* The provider conversation harness (see fuzz_provider.h). */
#include "fuzz_provider.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/common.h>

#include "base/cfg_table.h"
#include "base/yaml_doc.h"
#include "fuzz.h"

/* Bounds of one run: answers taken from the input, requests and timers a
 * plugin may have pending, and events processed (a plugin that retries
 * for ever stops being served there; destroy() still ends it all). */
#define MAX_ANSWERS 32
#define MAX_PENDING 64
#define MAX_STEPS 512

struct answer {
    int status;
    char *body; /* own block, NUL-terminated, so ASan sees overreads */
    size_t len;
};

struct pending_http {
    int live;
    ebb_http_cb cb;
    void *arg;
    int max_attempts;
    ebb_http_prepare_fn prepare;
    ebb_http_classify_fn classify;
    void *hook_arg;
};

struct pending_timer {
    int64_t id; /* 0: free */
    ebb_time_ms due;
    ebb_timer_fn fn;
    void *arg;
};

struct fhost {
    struct answer answers[MAX_ANSWERS];
    size_t n_answers, next_answer;
    struct pending_http http[MAX_PENDING];
    size_t http_head; /* requests are answered in the order started */
    size_t n_http_started;
    struct pending_timer timers[MAX_PENDING];
    int64_t next_timer_id;
    ebb_time_ms now;
    ebb_dur_ms poll_interval;
};

/* FUZZ_PROVIDER_TRACE=1 in the environment prints the conversation to
 * stderr: each request, the status it got, each operation's outcome (for
 * writing corpus entries). */
static int tracing(void)
{
    static int on = -1;
    if (on < 0)
        on = getenv("FUZZ_PROVIDER_TRACE") != NULL;
    return on;
}

/* ---- the input ---- */

static void add_answer(struct fhost *h, const char *p, size_t len)
{
    if (h->n_answers == MAX_ANSWERS)
        return;
    struct answer *a = &h->answers[h->n_answers++];
    a->status = 200;
    const char *nl = memchr(p, '\n', len);
    size_t head = nl != NULL ? (size_t)(nl - p) : len;
    if (head >= 1 && head <= 3) {
        int st = 0;
        size_t i = 0;
        while (i < head && p[i] >= '0' && p[i] <= '9')
            st = st * 10 + (p[i++] - '0');
        if (i == head) {
            a->status = st;
            p += nl != NULL ? head + 1 : head;
            len -= nl != NULL ? head + 1 : head;
        }
    }
    a->body = malloc(len + 1);
    FUZZ_CHECK(a->body != NULL);
    memcpy(a->body, p, len);
    a->body[len] = '\0';
    a->len = len;
}

static void split_answers(struct fhost *h, const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    for (;;) {
        const char *sep = NULL;
        for (const char *q = p; q + 4 <= end; q++) {
            if (memcmp(q, "\n--\n", 4) == 0) {
                sep = q;
                break;
            }
        }
        add_answer(h, p, (size_t)((sep != NULL ? sep : end) - p));
        if (sep == NULL || h->n_answers == MAX_ANSWERS)
            return;
        p = sep + 4;
    }
}

/* ---- the host ---- */

static void touch(const void *p, size_t len)
{
    volatile unsigned char sum = 0;
    for (size_t i = 0; i < len; i++)
        sum ^= ((const unsigned char *)p)[i];
    (void)sum;
}

static void h_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
    EBB_PRINTF(3, 4);

static void h_log(void *ctx, enum ebb_log_level level, const char *fmt, ...)
{
    (void)ctx;
    (void)level;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
}

static ebb_time_ms h_now(void *ctx)
{
    return ((struct fhost *)ctx)->now;
}

static int64_t h_timer_start(void *ctx, ebb_time_ms due, ebb_timer_fn fn,
                             void *arg)
{
    struct fhost *h = ctx;
    for (size_t i = 0; i < MAX_PENDING; i++) {
        if (h->timers[i].id == 0) {
            h->timers[i] = (struct pending_timer){++h->next_timer_id, due, fn,
                                                  arg};
            return h->timers[i].id;
        }
    }
    return EBB_ENOMEM;
}

static void h_timer_stop(void *ctx, int64_t id)
{
    struct fhost *h = ctx;
    for (size_t i = 0; i < MAX_PENDING; i++)
        if (id > 0 && h->timers[i].id == id)
            h->timers[i].id = 0;
}

static int run_prepare(const struct pending_http *r, int attempt)
{
    if (r->prepare == NULL)
        return 0;
    struct ebb_http_attempt a = {.struct_size = sizeof(a), .attempt = attempt};
    int rc = r->prepare(r->hook_arg, &a);
    if (rc == 0 && a.body != NULL)
        touch(a.body, a.body_len);
    for (size_t i = 0; rc == 0 && a.headers != NULL && i < a.n_headers; i++)
        touch(a.headers[i], strlen(a.headers[i]));
    return rc;
}

static int h_http(void *ctx, const struct ebb_http_request *req, ebb_http_cb cb,
                  void *arg)
{
    struct fhost *h = ctx;
    FUZZ_CHECK(req->struct_size >= EBB_HTTP_REQUEST_SIZE_V1);
    FUZZ_CHECK(req->method != NULL && req->url != NULL && cb != NULL);
    touch(req->url, strlen(req->url));
    for (size_t i = 0; i < req->n_headers; i++)
        touch(req->headers[i], strlen(req->headers[i]));
    if (req->body != NULL)
        touch(req->body, req->body_len);
    size_t slot = (h->http_head + h->n_http_started) % MAX_PENDING;
    for (size_t i = 0; i < MAX_PENDING; i++) {
        slot = (h->http_head + i) % MAX_PENDING;
        if (!h->http[slot].live)
            break;
    }
    if (h->http[slot].live)
        return EBB_EIO;
    int covers = req->struct_size >= sizeof(struct ebb_http_request);
    h->http[slot] = (struct pending_http){
        .live = 1, .cb = cb, .arg = arg, .max_attempts = req->max_attempts,
        .prepare = covers ? req->prepare : NULL,
        .classify = covers ? req->classify : NULL,
        .hook_arg = covers ? req->hook_arg : NULL,
    };
    h->n_http_started++;
    if (tracing())
        fprintf(stderr, "request %s %s\n", req->method, req->url);
    return 0;
}

static void h_instance_event(void *ctx, const struct ebb_instance_event *ev)
{
    (void)ctx;
    FUZZ_CHECK(ev->instance_id != NULL);
    touch(ev->instance_id, strlen(ev->instance_id));
}

static void h_market_changed(void *ctx)
{
    (void)ctx;
}

static ebb_time_ms h_price_cursor(void *ctx, const struct ebb_series_key *key)
{
    (void)ctx;
    (void)key;
    return 0;
}

static const char *h_plugin_dir(void *ctx)
{
    (void)ctx;
    return NULL;
}

static void h_poll_every(void *ctx, ebb_dur_ms interval)
{
    ((struct fhost *)ctx)->poll_interval = interval;
}

/* The next request's answer: the input's next, or a refused connection. */
static void next_response(struct fhost *h, struct ebb_http_response *res,
                          int attempt)
{
    *res = (struct ebb_http_response){
        .struct_size = sizeof(*res), .error_message = "", .body = "",
        .headers = "", .attempts = attempt,
    };
    if (h->next_answer == h->n_answers) {
        res->error = EBB_EIO;
        res->error_message = "Connection refused";
        return;
    }
    const struct answer *a = &h->answers[h->next_answer++];
    res->status = a->status;
    res->body = a->body;
    res->body_len = a->len;
    res->headers = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";
}

/* Answers the oldest request: its attempts until one is final. */
static void answer_http(struct fhost *h, size_t slot)
{
    struct pending_http r = h->http[slot];
    struct ebb_http_response res;
    int max = r.max_attempts > 0 ? r.max_attempts : 4;
    int rc = run_prepare(&r, 1);
    for (int attempt = 1; rc == 0; attempt++) {
        next_response(h, &res, attempt);
        if (attempt >= max || r.classify == NULL ||
            r.classify(r.hook_arg, &res) != 1)
            break;
        rc = run_prepare(&r, attempt + 1);
    }
    if (rc != 0) {
        res = (struct ebb_http_response){.struct_size = sizeof(res),
                                         .error = rc, .error_message = "",
                                         .body = "", .headers = ""};
    }
    h->http[slot].live = 0;
    if (tracing())
        fprintf(stderr, "  answered %d (error %d, %zu bytes)\n", res.status,
                res.error, res.body_len);
    r.cb(&res, r.arg);
}

/* One event: the oldest request, else the earliest timer. 0 when idle. */
static int step(struct fhost *h)
{
    for (size_t i = 0; i < MAX_PENDING; i++) {
        size_t slot = (h->http_head + i) % MAX_PENDING;
        if (h->http[slot].live) {
            h->http_head = (slot + 1) % MAX_PENDING;
            answer_http(h, slot);
            return 1;
        }
    }
    struct pending_timer *t = NULL;
    for (size_t i = 0; i < MAX_PENDING; i++)
        if (h->timers[i].id != 0 && (t == NULL || h->timers[i].due < t->due))
            t = &h->timers[i];
    if (t == NULL)
        return 0;
    struct pending_timer fire = *t;
    t->id = 0;
    if (fire.due > h->now)
        h->now = fire.due;
    fire.fn(fire.arg);
    return 1;
}

static void run_loop(struct fhost *h)
{
    for (int i = 0; i < MAX_STEPS && step(h); i++)
        continue;
}

/* After destroy(): every request still pending gets its callback with
 * EBB_ECANCELED (the host's client outlives the plugin); timers go. */
static void cancel_all(struct fhost *h)
{
    for (size_t i = 0; i < MAX_PENDING; i++) {
        if (!h->http[i].live)
            continue;
        struct ebb_http_response res = {.struct_size = sizeof(res),
                                        .error = EBB_ECANCELED,
                                        .error_message = "", .body = "",
                                        .headers = ""};
        h->http[i].live = 0;
        h->http[i].cb(&res, h->http[i].arg);
    }
    memset(h->timers, 0, sizeof(h->timers));
}

/* ---- the operations ---- */

static int calls[4]; /* poll, launch, terminate, list: callbacks run */

static void check_str(const char *s)
{
    FUZZ_CHECK(s != NULL);
    touch(s, strlen(s));
}

static void on_prices(void *arg, int status, const struct ebb_price *prices,
                      size_t n)
{
    (void)arg;
    calls[0]++;
    if (tracing())
        fprintf(stderr, "poll: status %d, %zu prices\n", status, n);
    for (size_t i = 0; status == 0 && i < n; i++) {
        const struct ebb_price *p = &prices[i];
        check_str(p->region);
        check_str(p->zone);
        check_str(p->instance_type);
        check_str(p->currency);
        FUZZ_CHECK(strlen(p->currency) == 3 && p->price_per_hour >= 0);
        if (p->product != NULL)
            check_str(p->product);
        if (p->struct_size >= offsetof(struct ebb_price, shape) +
                                  sizeof(p->shape) &&
            p->shape != NULL && p->shape->gpu_model != NULL)
            check_str(p->shape->gpu_model);
    }
}

static void check_instance(const struct ebb_instance *in)
{
    check_str(in->id);
    if (in->job_id != NULL)
        check_str(in->job_id);
    if (in->token != NULL)
        check_str(in->token);
    if (in->zone != NULL)
        check_str(in->zone);
    if (in->instance_type != NULL)
        check_str(in->instance_type);
}

static void on_launched(void *arg, int status, const struct ebb_instance *inst)
{
    (void)arg;
    calls[1]++;
    if (tracing())
        fprintf(stderr, "launch: status %d\n", status);
    if (status == 0) {
        FUZZ_CHECK(inst != NULL);
        check_instance(inst);
    }
}

static void on_done(void *arg, int status)
{
    (void)arg;
    calls[2]++;
    if (tracing())
        fprintf(stderr, "terminate: status %d\n", status);
}

static void on_list(void *arg, int status, const struct ebb_instance *list,
                    size_t n)
{
    (void)arg;
    calls[3]++;
    if (tracing())
        fprintf(stderr, "list: status %d, %zu instances\n", status, n);
    for (size_t i = 0; status == 0 && i < n; i++)
        check_instance(&list[i]);
}

static void *make_config(const struct ebb_provider *p, const char *yaml)
{
    struct ebb__ydoc *doc;
    struct ebb_diag d;
    FUZZ_CHECK(ebb__ydoc_load_buffer("ebb.yaml", yaml, strlen(yaml), &doc,
                                     &d) == 0);
    void *cfg = NULL;
    if (ebb__cfg_apply(p->config_keys, p->config_size, ebb__ydoc_root(doc),
                       "providers.fuzz", &cfg, &d) != 0) {
        fprintf(stderr, "fuzz config refused: %s\n", d.msg);
        abort();
    }
    ebb__ydoc_free(doc);
    return cfg;
}

void fuzz_provider_run(const struct ebb_provider *p,
                       const struct fuzz_provider_case *c, const uint8_t *data,
                       size_t size)
{
    static struct fhost h;
    memset(&h, 0, sizeof(h));
    memset(calls, 0, sizeof(calls));
    h.now = 1796083200000; /* 2026-12-01T00:00:00Z */
    split_answers(&h, data, size);
    struct ebb_host host = {
        .abi = EBB_HOST_ABI, .struct_size = sizeof(host), .ctx = &h,
        .log = h_log, .now = h_now, .timer_start = h_timer_start,
        .timer_stop = h_timer_stop, .http = h_http,
        .instance_event = h_instance_event, .market_changed = h_market_changed,
        .price_cursor = h_price_cursor, .plugin_dir = h_plugin_dir,
        .poll_every = h_poll_every,
    };
    void *cfg = make_config(p, c->config_yaml);
    void *self = NULL;
    FUZZ_CHECK(p->create(&host, cfg, &self) == 0);
    int started[4] = {0};
    started[0] = p->poll_prices(self, on_prices, NULL) == 0;
    run_loop(&h);
    started[3] = p->list_instances(self, on_list, NULL) == 0;
    run_loop(&h);
    struct ebb_launch launch = c->launch;
    launch.struct_size = sizeof(launch);
    started[1] = p->launch(self, &launch, on_launched, NULL) == 0;
    run_loop(&h);
    started[2] = p->terminate(self, c->terminate_id, on_done, NULL) == 0;
    run_loop(&h);
    p->destroy(self);
    cancel_all(&h);
    for (int i = 0; i < 4; i++)
        FUZZ_CHECK(calls[i] == started[i]);
    ebb__cfg_free(p->config_keys, cfg);
    for (size_t i = 0; i < h.n_answers; i++)
        free(h.answers[i].body);
}
