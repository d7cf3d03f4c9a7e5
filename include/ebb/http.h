/* ebb — HTTP requests as the host lends them to plugins.
 *
 * Plugins never call libcurl: they describe a request and the host performs
 * it on ebbd's loop, with timeouts, retries (connect errors, 5xx, 429 with
 * Retry-After) and TLS verification. The callback runs exactly once.
 */
#ifndef EBB_HTTP_H
#define EBB_HTTP_H

#include <stddef.h>

#include "common.h"

struct ebb_http_request {
    const char *method;  /* "GET", "POST", "PUT", "DELETE" */
    const char *url;
    /* Extra request headers as "Name: value" strings; borrowed until the call
     * returns (the host copies them). */
    const char *const *headers;
    size_t n_headers;
    const void *body; /* copied by the host; may be NULL */
    size_t body_len;
    ebb_dur_ms timeout;  /* per attempt; 0 picks the host default (30 s) */
    int max_attempts;    /* 0 picks the host default (4); 1 disables retries */
};

struct ebb_http_response {
    int status;         /* 0 (with `error` set) when no response arrived */
    int error;          /* 0, or EBB_ETIMEDOUT, EBB_EIO, EBB_ECANCELED ... */
    const char *error_message; /* libcurl's words when error != 0, else "" */
    const char *body;   /* NUL-terminated, body_len bytes before the NUL */
    size_t body_len;
    const char *headers; /* raw response header block of the last attempt */
    int attempts;        /* how many attempts were made */
};

/* Runs once per request; the response is valid only during the call. */
typedef void (*ebb_http_cb)(const struct ebb_http_response *res, void *arg);

#endif
