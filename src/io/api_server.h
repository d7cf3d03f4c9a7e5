/* The API server: ebbd's unix socket for the ebb CLI.
 *
 * Framing (docs/api.md): every message is one JSON object on one line,
 * terminated by "\n" (JSON escapes newlines inside strings, so a raw newline
 * only ever ends a message). A request is
 *     {"id": 1, "method": "status", "params": {...}}
 * and its answer, in order on the same connection, is either
 *     {"id": 1, "result": {...}}
 * or  {"id": 1, "error": {"code": "not_found", "message": "..."}}.
 * An answer larger than EBB__API_MAX_MESSAGE is replaced by the error
 * "too_large" ("answer too large: N bytes, ..."); a
 * request larger than EBB__API_MAX_REQUEST is read to its end, dropped and
 * answered "bad_request". A connection has at most 32 calls open and 4 MiB of answers
 * queued; past that it reads nothing more until the client takes them.
 * Limits (ebb__api_server_set_limits) cap the connections and close those
 * that stay idle or send half a message.
 *
 * Each request becomes a call that is answered exactly once, with
 * ebb__api_reply() or ebb__api_fail(), now or later.
 */
#ifndef EBB_API_SERVER_H
#define EBB_API_SERVER_H

#include <sys/types.h>

#include <jansson.h>
#include <uv.h>

#include <ebb/common.h>
#include <ebb/list.h>

#include "io/clock.h"

#define EBB__API_MAX_MESSAGE (16u * 1024u * 1024u)
/* What ebbd reads of one request: specs are at most 256 KiB (their JSON
 * parses in 5 ms), and parsing a 16 MiB line of escapes held the loop for
 * 0.7 s (1 MiB: 25 ms). */
#define EBB__API_MAX_REQUEST (1024u * 1024u)
/* At most one log line a minute about connections refused at the cap. */
#define EBB__API_REFUSAL_LOG_MS 60000

struct ebb__api_server;
struct ebb__api_conn;

struct ebb__api_call {
    struct ebb__api_conn *conn;
    json_t *id;          /* echoed back; owned by the call */
    const char *method;
    json_t *params;      /* an object, never NULL; owned by the call */
    /* The caller's identity from SO_PEERCRED. */
    uid_t uid;
    gid_t gid;
    pid_t pid;
    /* The server's: its place in the connection's calls (request order),
     * the answer once there is one, and its place among the answers that
     * wait for the store's commit (linked only while it waits). */
    struct ebb_list node;
    struct ebb_list held_node;
    json_t *answer;
};

typedef void (*ebb__api_handler)(void *ctx, struct ebb__api_call *call);

struct ebb__api_method {
    const char *name;
    ebb__api_handler fn;
};

/* Binds `socket_path` (a stale file left by a crash is replaced: the caller
 * holds the state lock, so no live daemon owns it), sets its mode and,
 * when `group` is non-NULL, its group, and starts accepting. `methods` ends
 * with a NULL name and must outlive the server. Returns 0 or a negative
 * code with a message in err. */
int ebb__api_server_start(struct ebb__api_server **out, uv_loop_t *loop,
                          const char *socket_path, int mode, const char *group,
                          const struct ebb__api_method *methods, void *ctx,
                          char *err, size_t errlen);

/* What the server allows. Zero means no limit. */
struct ebb__api_limits {
    /* Connections open at once, and half of them for one user; one more
     * gets the error "busy" and is closed. */
    unsigned max_connections;
    /* Wall-clock ms a message may take from its first byte (or the accept)
     * to its newline; then the connection closes. */
    ebb_dur_ms request_timeout;
    /* Wall-clock ms a connection with no call open may stay quiet, and
     * answers may wait for a client that does not read them; then it
     * closes. */
    ebb_dur_ms idle_timeout;
    /* Runs the timeouts (borrowed; must outlive the server); needed when
     * either is set. */
    struct ebb__clock *clock;
};

/* Sets the limits (copied) for connections accepted from now on; call it
 * right after the server starts. Returns 0, or EBB_EINVAL for a timeout
 * without a clock. */
int ebb__api_server_set_limits(struct ebb__api_server *server,
                               const struct ebb__api_limits *lim);

/* What the limits did, for tests. */
struct ebb__api_stats {
    unsigned open;      /* connections open now (refused ones not counted) */
    uint64_t refused;   /* turned away at max_connections */
    uint64_t timed_out; /* closed at a deadline */
};
struct ebb__api_stats ebb__api_server_stats(const struct ebb__api_server *server);

/* Stops accepting at once. Calls in flight still get their answers written;
 * each connection is shut down once its writes have finished; then the
 * socket file is removed and `cb(arg)` runs. */
void ebb__api_server_close(struct ebb__api_server *server,
                           void (*cb)(void *arg), void *arg);

/* Answers a call with `result` (reference taken; NULL means {}) and frees
 * the call. */
void ebb__api_reply(struct ebb__api_call *call, json_t *result);

/* Answers a call with `result` once what the call stored is durable: the
 * answer waits for ebb__api_server_committed, so that every call served in
 * one loop turn shares one commit (one fsync) instead of one each. */
void ebb__api_reply_after_commit(struct ebb__api_call *call, json_t *result);
/* The store committed (ok) or failed to (`why`): the answers held for it
 * go out, or become "internal" errors saying the change was not stored. */
void ebb__api_server_committed(struct ebb__api_server *server, int ok,
                               const char *why);
/* Answers a call with an error and frees it. `code` is a short stable word
 * ("bad_request", "not_found", "permission_denied", "internal"). */
void ebb__api_fail(struct ebb__api_call *call, const char *code,
                   const char *fmt, ...) EBB_PRINTF(3, 4);

#endif
