/* The CLI side of the API socket: one blocking request and its answer.
 * The CLI is a short-lived process, so blocking here is fine; ebbd itself
 * never uses this. Framing as described in api_server.h. */
#ifndef EBB_API_CLIENT_H
#define EBB_API_CLIENT_H

#include <stddef.h>

#include <jansson.h>

#include <ebb/common.h>

/* Connects to `socket_path`, sends {"id":1,"method":method,"params":params}
 * (params borrowed; NULL sends {}), waits up to `timeout_ms` for the answer.
 * On success returns 0 and *result (caller decrefs). On an error answer
 * returns 1 and fills err with the daemon's message; 2 when the error says
 * the request's input was bad (codes "invalid" and "bad_request").
 * When the daemon is not running returns EBB_ENOTFOUND (no socket file) or
 * EBB_EIO (refused: a stale socket); other failures EBB_EIO/ETIMEDOUT,
 * EBB_EPROTO for an answer that is not JSON or is over
 * EBB__API_MAX_MESSAGE ("answer too large: ..."); err always says what
 * happened. */
int ebb__api_call(const char *socket_path, const char *method,
                  json_t *params, int timeout_ms, json_t **result,
                  char *err, size_t errlen);

#endif
