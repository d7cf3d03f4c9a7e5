/* The API socket's calls and answers (api_server.h): a request line
 * becomes a call, dispatched to its method, and every call is answered
 * exactly once; the answers go out in request order, some only after the
 * store's commit.
 */
#include "io/internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/str.h"
#include "io/api_request.h"

/* Sends the answers at the head of the connection's queue that are ready. */
static void conn_send_ready(struct ebb__api_conn *conn)
{
    while (!ebb_list_empty(&conn->calls)) {
        struct ebb__api_call *call =
            ebb_list_entry(ebb_list_first(&conn->calls), struct ebb__api_call, node);
        if (call->answer == NULL || ebb_list_linked(&call->held_node))
            break;
        ebb_list_remove(&call->node);
        ebb__api_conn_send(conn, call->answer);
        json_decref(call->id);
        json_decref(call->params);
        free((char *)call->method);
        free(call);
        conn->pending_calls--;
    }
    ebb__api_conn_maybe_close(conn);
}

static void call_finish(struct ebb__api_call *call, json_t *msg)
{
    json_object_set(msg, "id", call->id ? call->id : json_null());
    call->answer = msg;
    conn_send_ready(call->conn);
}

void ebb__api_reply(struct ebb__api_call *call, json_t *result)
{
    json_t *msg = json_object();
    json_object_set_new(msg, "result", result ? result : json_object());
    call_finish(call, msg);
}

void ebb__api_reply_after_commit(struct ebb__api_call *call, json_t *result)
{
    struct ebb__api_server *s = call->conn->server;
    ebb_list_insert_head(&s->held, &call->held_node);
    ebb__api_reply(call, result);
}

void ebb__api_server_committed(struct ebb__api_server *server, int ok,
                               const char *why)
{
    /* One at a time from the head: sending an answer frees its call and
     * may free later ones of the same connection, never a held one. */
    while (!ebb_list_empty(&server->held)) {
        struct ebb__api_call *call = ebb_list_entry(ebb_list_first(&server->held),
                                                    struct ebb__api_call, held_node);
        ebb_list_remove(&call->held_node);
        json_t *error = ok ? NULL
                           : json_pack("{s:O,s:{s:s,s:s++}}", "id",
                                       call->id ? call->id : json_null(), "error",
                                       "code", "internal", "message",
                                       "not stored: ", why ? why : "");
        if (error != NULL) {
            json_decref(call->answer);
            call->answer = error;
        }
        conn_send_ready(call->conn);
    }
}

void ebb__api_fail(struct ebb__api_call *call, const char *code,
                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *message = ebb_vstrfmt(fmt, ap);
    va_end(ap);
    json_t *msg = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message",
                            message ? message : "out of memory");
    free(message);
    call_finish(call, msg);
}

/* A new call, last in the connection's queue; NULL when out of memory. */
static struct ebb__api_call *call_new(struct ebb__api_conn *conn)
{
    struct ebb__api_call *call = calloc(1, sizeof(*call));
    if (call == NULL)
        return NULL;
    call->conn = conn;
    call->uid = conn->uid;
    call->gid = conn->gid;
    call->pid = conn->pid;
    ebb_list_init(&call->held_node);
    conn->pending_calls++;
    ebb_list_insert_tail(&conn->calls, &call->node);
    return call;
}

void ebb__api_dispatch(struct ebb__api_conn *conn, const char *line, size_t len)
{
    struct ebb__api_call *call = call_new(conn);
    if (call == NULL)
        return;
    struct ebb__api_request r;
    struct ebb_diag why;
    int rc = ebb__api_request_parse(line, len, &r, &why);
    call->id = r.id;
    call->method = r.method != NULL ? r.method : strdup("");
    call->params = r.params;
    if (rc != 0) {
        ebb__api_fail(call, rc == EBB_ENOMEM ? "internal" : "bad_request",
                      "%s", why.msg);
        return;
    }
    for (const struct ebb__api_method *m = conn->server->methods; m->name; m++) {
        if (strcmp(m->name, call->method) == 0) {
            m->fn(conn->server->ctx, call);
            return;
        }
    }
    ebb__api_fail(call, "unknown_method", "unknown method \"%s\"", call->method);
}

/* A request over EBB__API_MAX_REQUEST is read to its end without being
 * kept or parsed, then answered in its turn, so the client learns why
 * (closing at once would leave it a broken pipe). */
void ebb__api_answer_too_large(struct ebb__api_conn *conn)
{
    struct ebb__api_call *call = call_new(conn);
    if (call == NULL)
        return;
    call->method = strdup("");
    ebb__api_fail(call, "bad_request", "a request may be at most %u KiB (a job "
                  "spec at most 256 KiB); this one was longer and was not read",
                  EBB__API_MAX_REQUEST / 1024);
}
