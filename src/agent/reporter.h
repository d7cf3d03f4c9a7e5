/* The ebbd reporter: delivers events (POST /v1/agent/events) and the job's
 * output (POST /v1/agent/log) in order, with the per-instance token.
 *
 * Events and output are two queues, each with one request in flight at a
 * time, so each arrives in order. When ebbd cannot be reached (or answers
 * 5xx, 429 or 401) the head is retried with capped exponential backoff and
 * jitter; nothing is lost meanwhile except output beyond the log bound
 * (what waits for ebbd, not counting one body on the wire), which is
 * dropped oldest first and replaced by a marker line. Queued
 * heartbeats coalesce, as do consecutive progress reports (the latest
 * fraction wins), so an hour without ebbd does not queue thousands.
 */
#ifndef EBB_AGENT_REPORTER_H
#define EBB_AGENT_REPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ebb/list.h>

#include "agent/job.h"
#include "io/clock.h"
#include "io/http_client.h"

struct agent_event;
struct agent_chunk;

/* Called for each event that left the queue, with the event's kind and
 * ebbd's reply object ({"command": ...}, borrowed), or NULL when ebbd
 * refused the event for good (a 4xx other than 401, 408, 429) or its
 * reply was not an object; either way the agent carries on. */
typedef void (*agent_reply_cb)(void *arg, const char *kind, json_t *reply);

struct agent_reporter {
    struct ebb__http *http;
    struct ebb__clock *clock;
    char *base_url;        /* "http://127.0.0.1:7427", no trailing slash */
    char *auth_header;     /* "Authorization: Bearer ..." */
    int64_t backoff_base_ms;
    int64_t backoff_cap_ms;
    agent_reply_cb on_reply;
    void (*on_idle)(void *arg);  /* both queues became empty */
    void *arg;

    struct ebb_list events;  /* struct agent_event, oldest first */
    bool ev_in_flight;
    int ev_failures;
    struct ebb__timer ev_timer;

    struct ebb_list chunks;  /* struct agent_chunk, oldest first */
    size_t log_queued;     /* bytes queued, not counting the one in flight */
    size_t log_limit;
    size_t log_dropped;    /* bytes dropped since the last marker */
    char *log_sending;     /* the body in flight or waiting for a retry */
    size_t log_sending_len;
    size_t log_sending_marker; /* bytes of it that are a drop marker ... */
    size_t log_sending_marked; /* ... standing for this many dropped bytes */
    bool log_in_flight;
    enum agent_stream log_sending_stream;
    int log_failures;
    struct ebb__timer log_timer;

    bool down_logged;      /* "cannot reach ebbd" said once per outage */
    bool closed;
};

/* Sets up a reporter; `token` and `base_url` are copied. Returns 0 or
 * EBB_ENOMEM. */
int agent_reporter_init(struct agent_reporter *r, struct ebb__http *http,
                        struct ebb__clock *clock, const char *base_url,
                        const char *token, size_t log_limit);

/* Sends `token` (copied) from now on. Returns 0 or EBB_ENOMEM. */
int agent_reporter_set_token(struct agent_reporter *r, const char *token);

/* Queues an event (a JSON object with "kind"); takes the reference. */
void agent_reporter_event(struct agent_reporter *r, json_t *event);

/* Queues job output (copied). */
void agent_reporter_log(struct agent_reporter *r, enum agent_stream stream,
                        const char *data, size_t len);

/* True when nothing is queued or in flight. */
bool agent_reporter_idle(const struct agent_reporter *r);

/* How much is still undelivered, for the give-up message. */
void agent_reporter_pending(const struct agent_reporter *r, size_t *events,
                            size_t *log_bytes);

/* Stops the timers and frees the queues; requests still in flight must
 * have been cancelled (by closing the HTTP client) first. */
void agent_reporter_free(struct agent_reporter *r);

/* The backoff before retry number `failures` (1, 2, ...): a uniformly
 * random time in [d/2, d] with d = min(cap, base * 2^(failures-1)). */
int64_t agent_backoff_ms(int64_t base, int64_t cap, int failures);

/* A short description of a failed ebbd answer: the transport error, or
 * "HTTP 401: <error from the body>". Writes into buf; returns buf. */
const char *agent_describe_failure(const struct ebb_http_response *res,
                                   char *buf, size_t size);

#endif
