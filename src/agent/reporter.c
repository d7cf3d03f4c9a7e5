/* The ebbd reporter (see reporter.h). */
#include "agent/reporter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/str.h"

#define REQUEST_TIMEOUT_MS 15000
#define MAX_LOG_POST (64 * 1024)

struct agent_event {
    struct ebb_list node; /* in r->events */
    json_t *body;
    char kind[24];      /* "checkpoint_fallback" fits */
};

struct agent_chunk {
    struct ebb_list node; /* in r->chunks */
    enum agent_stream stream;
    size_t len;
    char data[];
};

static void ev_send(struct agent_reporter *r);
static void log_send(struct agent_reporter *r);

/* The oldest queued event or output chunk, the newest event; NULL when
 * none. */
static struct agent_event *ev_first(const struct agent_reporter *r)
{
    struct ebb_list *n = ebb_list_first(&r->events);
    return n ? ebb_list_entry(n, struct agent_event, node) : NULL;
}

static struct agent_event *ev_last(const struct agent_reporter *r)
{
    return ebb_list_empty(&r->events)
               ? NULL
               : ebb_list_entry(r->events.prev, struct agent_event, node);
}

static struct agent_chunk *log_first(const struct agent_reporter *r)
{
    struct ebb_list *n = ebb_list_first(&r->chunks);
    return n ? ebb_list_entry(n, struct agent_chunk, node) : NULL;
}

int64_t agent_backoff_ms(int64_t base, int64_t cap, int failures)
{
    int64_t d = base;
    for (int i = 1; i < failures && d < cap; i++)
        d *= 2;
    if (d > cap)
        d = cap;
    if (d < 2)
        return d;
    return d / 2 + (int64_t)(rand() % (int)(d / 2 + 1));
}

const char *agent_describe_failure(const struct ebb_http_response *res,
                                   char *buf, size_t size)
{
    if (res->error != 0) {
        snprintf(buf, size, "%s (%s)", ebb_strerror(res->error),
                 res->error_message && res->error_message[0] ? res->error_message : "no answer");
        return buf;
    }
    json_t *root = json_loadb(res->body, res->body_len, 0, NULL);
    json_t *err = json_object_get(root, "error");
    snprintf(buf, size, "HTTP %d%s%s%s", res->status, json_is_string(err) ? ": " : "",
             json_is_string(err) ? json_string_value(err) : "",
             res->status == 401 ? " (ebbd refused the agent's token: check "
                                  "--token-file or EBB_AGENT_TOKEN)" : "");
    json_decref(root);
    return buf;
}

/* True for answers worth retrying: no answer, 5xx, 429, 408 and 401 (a
 * restarted ebbd may not know the instance yet). Other 4xx mean ebbd
 * will never take this request. */
static bool retryable(const struct ebb_http_response *res)
{
    return res->error != 0 || res->status >= 500 || res->status == 429 ||
           res->status == 408 || res->status == 401;
}

static void on_ev_timer(struct ebb__timer *t) { ev_send(t->data); }
static void on_log_timer(struct ebb__timer *t) { log_send(t->data); }

int agent_reporter_init(struct agent_reporter *r, struct ebb__http *http,
                        struct ebb__clock *clock, const char *base_url,
                        const char *token, size_t log_limit)
{
    *r = (struct agent_reporter){
        .http = http, .clock = clock, .log_limit = log_limit,
        .backoff_base_ms = 250, .backoff_cap_ms = 30000,
    };
    size_t n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/')
        n--;
    r->base_url = ebb_strfmt("%.*s", (int)n, base_url);
    r->auth_header = ebb_strfmt("Authorization: Bearer %s", token);
    ebb_list_init(&r->events);
    ebb_list_init(&r->chunks);
    ebb__timer_init(&r->ev_timer, on_ev_timer, r);
    ebb__timer_init(&r->log_timer, on_log_timer, r);
    return r->base_url && r->auth_header ? 0 : EBB_ENOMEM;
}

int agent_reporter_set_token(struct agent_reporter *r, const char *token)
{
    char *header = ebb_strfmt("Authorization: Bearer %s", token);
    if (header == NULL)
        return EBB_ENOMEM;
    explicit_bzero(r->auth_header, strlen(r->auth_header));
    free(r->auth_header);
    r->auth_header = header;
    return 0;
}

bool agent_reporter_idle(const struct agent_reporter *r)
{
    return ebb_list_empty(&r->events) && ebb_list_empty(&r->chunks) &&
           r->log_sending == NULL;
}

void agent_reporter_pending(const struct agent_reporter *r, size_t *events,
                            size_t *log_bytes)
{
    *events = 0;
    const struct ebb_list *pos;
    ebb_list_foreach(pos, &r->events)
        (*events)++;
    *log_bytes = r->log_queued + (r->log_sending ? r->log_sending_len : 0);
}

static void check_idle(struct agent_reporter *r)
{
    if (agent_reporter_idle(r) && r->on_idle != NULL)
        r->on_idle(r->arg);
}

/* Logs an outage once and recovery once, not every retry. */
static void note_failure(struct agent_reporter *r, const char *what,
                         const struct ebb_http_response *res, int64_t delay)
{
    char why[512];
    agent_describe_failure(res, why, sizeof(why));
    if (!r->down_logged || res->status == 401)
        ebb__log(res->status == 401 ? EBB_LOG_ERROR : EBB_LOG_WARN, "agent",
                 "ebbd did not take %s: %s; the job keeps running, retrying "
                 "(next in %lld ms)", what, why, (long long)delay);
    else
        ebb__debug("ebbd did not take %s: %s; retrying in %lld ms", what, why,
                   (long long)delay);
    r->down_logged = true;
}

static void note_success(struct agent_reporter *r)
{
    if (r->down_logged)
        ebb__info("ebbd answers again; delivering what was queued");
    r->down_logged = false;
}

static void retry_later(struct agent_reporter *r, struct ebb__timer *t, int *failures,
                        const char *what, const struct ebb_http_response *res)
{
    (*failures)++;
    int64_t delay = agent_backoff_ms(r->backoff_base_ms, r->backoff_cap_ms, *failures);
    note_failure(r, what, res, delay);
    ebb__timer_start(r->clock, t, ebb__clock_now(r->clock) + delay);
}

/* ---- events ---- */

static void on_ev_done(const struct ebb_http_response *res, void *arg)
{
    struct agent_reporter *r = arg;
    r->ev_in_flight = false;
    if (r->closed || res->error == EBB_ECANCELED)
        return;
    struct agent_event *e = ev_first(r);
    char what[48];
    snprintf(what, sizeof(what), "the \"%s\" event", e->kind);
    if (retryable(res)) {
        retry_later(r, &r->ev_timer, &r->ev_failures, what, res);
        return;
    }
    note_success(r);
    r->ev_failures = 0;
    ebb_list_remove(&e->node);
    json_t *reply = NULL;
    if (res->status / 100 == 2) {
        /* A NUL inside a string is read, so that whoever uses the string
         * can refuse it (an env value), not have it silently dropped. */
        reply = json_loadb(res->body, res->body_len, JSON_ALLOW_NUL, NULL);
        if (!json_is_object(reply))
            ebb__warn("ebbd's reply to the \"%s\" event is not a JSON object; "
                      "carrying on", e->kind);
    } else {
        char why[512];
        ebb__error("ebbd refused the \"%s\" event for good (%s); dropping it",
                   e->kind, agent_describe_failure(res, why, sizeof(why)));
    }
    r->on_reply(r->arg, e->kind, json_is_object(reply) ? reply : NULL);
    json_decref(reply);
    json_decref(e->body);
    free(e);
    if (r->closed)
        return;
    if (!ebb_list_empty(&r->events))
        ev_send(r);
    else
        check_idle(r);
}

/* The final report waits for the output before it: ebbd releases the
 * instance once it hears the job exited, and with it the agent, so output
 * still queued then (a failed run's last lines, the reason a job could not
 * start) would never reach `ebb logs`. */
static bool ev_held(const struct agent_reporter *r)
{
    const struct agent_event *e = ev_first(r);
    return e != NULL && strcmp(e->kind, "exited") == 0 &&
           (!ebb_list_empty(&r->chunks) || r->log_sending != NULL);
}

static void ev_send(struct agent_reporter *r)
{
    if (r->ev_in_flight || ebb_list_empty(&r->events) || r->closed || ev_held(r))
        return;
    char *body = json_dumps(ev_first(r)->body, JSON_COMPACT);
    char *url = ebb_strfmt("%s/v1/agent/events", r->base_url);
    const char *headers[] = {r->auth_header, "Content-Type: application/json"};
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = "POST", .url = url, .headers = headers, .n_headers = 2,
        .body = body, .body_len = body ? strlen(body) : 0,
        .timeout = REQUEST_TIMEOUT_MS, .max_attempts = 1,
    };
    int rc = body && url ? ebb__http_request(r->http, &req, on_ev_done, r) : EBB_ENOMEM;
    free(body);
    free(url);
    if (rc == 0)
        r->ev_in_flight = true;
    else if (rc != EBB_ESHUTDOWN)
        ebb__timer_start(r->clock, &r->ev_timer, ebb__clock_now(r->clock) + 1000);
}

void agent_reporter_event(struct agent_reporter *r, json_t *event)
{
    const char *kind = json_string_value(json_object_get(event, "kind"));
    kind = kind ? kind : "?";
    /* The tail is waiting (not in flight) when it is not also the head of
     * a queue with a request out. */
    struct agent_event *tail = ev_last(r);
    bool tail_waiting = tail != NULL && !(tail == ev_first(r) && r->ev_in_flight);
    if (tail_waiting && strcmp(tail->kind, kind) == 0 &&
        (strcmp(kind, "heartbeat") == 0 || strcmp(kind, "progress") == 0)) {
        json_decref(tail->body);
        tail->body = event;
        return;
    }
    struct agent_event *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        ebb__error("out of memory: the \"%s\" event is lost", kind);
        json_decref(event);
        return;
    }
    e->body = event;
    ebb__strlcpy(e->kind, kind, sizeof(e->kind));
    ebb_list_insert_tail(&r->events, &e->node);
    /* While a retry is pending the timer sends the head; otherwise now. */
    if (r->ev_failures == 0)
        ev_send(r);
}

/* ---- output ---- */

static void drop_sending(struct agent_reporter *r)
{
    free(r->log_sending);
    r->log_sending = NULL;
    r->log_sending_len = r->log_sending_marker = r->log_sending_marked = 0;
}

/* Keeps what waits for ebbd within the bound by dropping the oldest: the
 * body waiting for a retry (not one on the wire), then queued output,
 * cutting into a chunk when needed. The next body starts with a marker
 * saying how many bytes went. */
static void enforce_bound(struct agent_reporter *r)
{
    size_t waiting = r->log_sending != NULL && !r->log_in_flight ? r->log_sending_len : 0;
    if (waiting > 0 && r->log_queued + waiting > r->log_limit) {
        r->log_dropped += r->log_sending_marked + r->log_sending_len - r->log_sending_marker;
        drop_sending(r);
        ebb__timer_stop(r->clock, &r->log_timer);
    }
    while (r->log_queued > r->log_limit && !ebb_list_empty(&r->chunks)) {
        struct agent_chunk *old = log_first(r);
        size_t excess = r->log_queued - r->log_limit;
        if (old->len > excess) {
            memmove(old->data, old->data + excess, old->len - excess);
            old->len -= excess;
            r->log_queued -= excess;
            r->log_dropped += excess;
            break;
        }
        ebb_list_remove(&old->node);
        r->log_queued -= old->len;
        r->log_dropped += old->len;
        free(old);
    }
}

static void on_log_done(const struct ebb_http_response *res, void *arg)
{
    struct agent_reporter *r = arg;
    r->log_in_flight = false;
    if (r->closed || res->error == EBB_ECANCELED)
        return;
    if (retryable(res)) {
        enforce_bound(r); /* the body waiting now may go */
        retry_later(r, &r->log_timer, &r->log_failures, "job output", res);
        return;
    }
    if (res->status / 100 != 2) {
        char why[512];
        ebb__error("ebbd refused %zu bytes of job output for good (%s); dropping them",
                   r->log_sending_len, agent_describe_failure(res, why, sizeof(why)));
    }
    note_success(r);
    r->log_failures = 0;
    drop_sending(r);
    if (!ebb_list_empty(&r->chunks)) {
        log_send(r);
        return;
    }
    if (!ebb__timer_pending(&r->ev_timer))
        ev_send(r); /* a final report held for this output */
    check_idle(r);
}

/* Moves up to `max` bytes of the head's consecutive output of one stream
 * into the body to send, after a marker when output was dropped. */
static void log_take_body(struct agent_reporter *r, size_t max)
{
    struct ebb_buf b = {0};
    enum agent_stream stream = log_first(r)->stream;
    r->log_sending_marked = r->log_dropped;
    if (r->log_dropped > 0) {
        ebb_buf_printf(&b, "[ebb-agent: %zu bytes of job output were dropped "
                        "while ebbd could not be reached]\n", r->log_dropped);
        r->log_dropped = 0;
    }
    r->log_sending_marker = b.len;
    size_t taken = 0;
    while (taken < max) {
        struct agent_chunk *c = log_first(r);
        if (c == NULL || c->stream != stream)
            break;
        size_t n = c->len <= max - taken ? c->len : max - taken;
        ebb_buf_append(&b, c->data, n);
        taken += n;
        r->log_queued -= n;
        if (n < c->len) {
            memmove(c->data, c->data + n, c->len - n);
            c->len -= n;
            break;
        }
        ebb_list_remove(&c->node);
        free(c);
    }
    r->log_sending_len = b.len;
    r->log_sending = ebb_buf_take(&b);
    r->log_sending_stream = stream;
}

static void log_send(struct agent_reporter *r)
{
    if (r->closed || r->log_timer.heap_index != SIZE_MAX)
        return;
    if (r->log_sending == NULL) {
        if (ebb_list_empty(&r->chunks))
            return;
        /* A body is at most half the bound, so what one failed request
         * holds back stays small against it. */
        size_t max = r->log_limit / 2 < MAX_LOG_POST ? r->log_limit / 2 : MAX_LOG_POST;
        log_take_body(r, max > 0 ? max : 1);
        if (r->log_sending == NULL) {
            ebb__error("out of memory: job output is lost");
            return;
        }
    }
    char *url = ebb_strfmt("%s/v1/agent/log?stream=%s", r->base_url,
                            r->log_sending_stream == AGENT_STDOUT ? "stdout" : "stderr");
    const char *headers[] = {r->auth_header, "Content-Type: application/octet-stream"};
    struct ebb_http_request req = {
        .struct_size = sizeof(struct ebb_http_request),
        .method = "POST", .url = url, .headers = headers, .n_headers = 2,
        .body = r->log_sending, .body_len = r->log_sending_len,
        .timeout = REQUEST_TIMEOUT_MS, .max_attempts = 1,
    };
    int rc = url ? ebb__http_request(r->http, &req, on_log_done, r) : EBB_ENOMEM;
    free(url);
    if (rc == 0)
        r->log_in_flight = true;
    else if (rc != EBB_ESHUTDOWN)
        ebb__timer_start(r->clock, &r->log_timer, ebb__clock_now(r->clock) + 1000);
}

void agent_reporter_log(struct agent_reporter *r, enum agent_stream stream,
                        const char *data, size_t len)
{
    struct agent_chunk *c = malloc(sizeof(*c) + len);
    if (c == NULL) {
        r->log_dropped += len;
        return;
    }
    c->stream = stream;
    c->len = len;
    memcpy(c->data, data, len);
    ebb_list_insert_tail(&r->chunks, &c->node);
    r->log_queued += len;
    enforce_bound(r);
    if (r->log_sending == NULL)
        log_send(r);
}

void agent_reporter_free(struct agent_reporter *r)
{
    r->closed = true;
    if (r->clock != NULL) {
        ebb__timer_stop(r->clock, &r->ev_timer);
        ebb__timer_stop(r->clock, &r->log_timer);
    }
    /* A reporter agent_reporter_init() never saw has no lists yet. */
    while (r->events.next != NULL && !ebb_list_empty(&r->events)) {
        struct agent_event *e = ev_first(r);
        ebb_list_remove(&e->node);
        json_decref(e->body);
        free(e);
    }
    while (r->chunks.next != NULL && !ebb_list_empty(&r->chunks)) {
        struct agent_chunk *c = log_first(r);
        ebb_list_remove(&c->node);
        free(c);
    }
    free(r->log_sending);
    free(r->base_url);
    free(r->auth_header);
    r->log_sending = NULL;
    r->base_url = r->auth_header = NULL;
}
