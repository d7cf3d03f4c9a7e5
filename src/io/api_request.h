/* Reading one request line of the API socket (framing in api_server.h):
 * the JSON object's id, method and params, apart from the server's
 * connections so that it can be fuzzed (tests/fuzz/fuzz-api.c). */
#ifndef EBB_API_REQUEST_H
#define EBB_API_REQUEST_H

#include <stddef.h>

#include <jansson.h>

#include <ebb/diag.h>

struct ebb__api_request {
    json_t *id;     /* echoed back; NULL when the line had none */
    char *method;   /* "" when missing */
    json_t *params; /* an object, {} when missing or not an object */
};

/* Splits the `len` bytes at `line` (one message, without its newline)
 * into *r. Returns 0; or EBB_EINVAL when the line is not a JSON object or
 * has no "method" string, with the reason in d and *r still filled (id
 * when there was one, method "", params {}) so that the error answer can
 * echo the id; or EBB_ENOMEM with *r empty. Free *r with
 * ebb__api_request_free() in every case. */
int ebb__api_request_parse(const char *line, size_t len,
                           struct ebb__api_request *r, struct ebb_diag *d);

/* Frees what *r holds and empties it. */
void ebb__api_request_free(struct ebb__api_request *r);

#endif
