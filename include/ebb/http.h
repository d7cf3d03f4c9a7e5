/* ebb — HTTP requests as the host lends them to plugins.
 *
 * Plugins never call libcurl: they describe a request and the host performs
 * it on ebbd's loop, with timeouts, retries (connect errors, 5xx, 429 with
 * Retry-After, and whatever the request's classifier says) and TLS
 * verification. The callback runs exactly once. Every retry in ebb is the
 * host's: a plugin whose attempts must differ (a fresh nonce and time in
 * a signature) says so with `prepare`, one whose server signals "try
 * again" in its own words (a Throttling code in a 400 body) with
 * `classify`.
 */
#ifndef EBB_HTTP_H
#define EBB_HTTP_H

#include <stddef.h>

#include "common.h"

struct ebb_http_response;

/* What one attempt sends instead of the request's own body and headers;
 * the host sets struct_size (its sizeof) and `attempt`, a prepare hook
 * fills the rest, and the host copies it as soon as the hook returns. A
 * hook writes only the fields struct_size covers (provider.h). */
struct ebb_http_attempt {
    uint32_t struct_size;       /* sizeof(struct ebb_http_attempt) in ebbd */
    int attempt;                /* 1 for the first */
    const void *body;           /* NULL: the request's own */
    size_t body_len;
    const char *const *headers; /* replace the request's; NULL: keep them */
    size_t n_headers;
};

/* Runs before every attempt, the first included; returns 0, or an EBB_E*
 * code that ends the request with that error. */
typedef int (*ebb_http_prepare_fn)(void *arg, struct ebb_http_attempt *a);

/* Runs after every attempt but the last allowed: 1 retries it, 0 completes
 * the request with it, -1 leaves it to the host (connect errors, timeouts,
 * 5xx and 429 are retried). */
typedef int (*ebb_http_classify_fn)(void *arg, const struct ebb_http_response *res);

/* Filled by the plugin (struct_size is its sizeof), read by the host under
 * the rules of provider.h; fields are only ever appended. */
struct ebb_http_request {
    uint32_t struct_size; /* sizeof(struct ebb_http_request) in the plugin */
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
    /* Appended after the first version, as were the hooks below; absent
     * (not covered by struct_size) they read as 0 and NULL. The ceiling
     * of the first retry's jittered wait, doubling with every retry up to
     * the host's cap; 0 picks the host default (500 ms). */
    ebb_dur_ms retry_backoff;
    ebb_http_prepare_fn prepare;   /* NULL: every attempt sends the same */
    ebb_http_classify_fn classify; /* NULL: the host decides alone */
    void *hook_arg; /* for both; must stay valid until the callback ran */
};

/* The size of the first version: the least struct_size the host accepts. */
#define EBB_HTTP_REQUEST_SIZE_V1                                              \
    (offsetof(struct ebb_http_request, max_attempts) + sizeof(int))

/* Filled by the host (struct_size is its sizeof), read by the plugin
 * under the rules of provider.h. */
struct ebb_http_response {
    uint32_t struct_size; /* sizeof(struct ebb_http_response) in ebbd */
    int status;         /* 0 (with `error` set) when no response arrived */
    int error;          /* 0, or EBB_ETIMEDOUT, EBB_EIO, EBB_ECANCELED ... */
    const char *error_message; /* libcurl's words when error != 0, else "" */
    const char *body;   /* NUL-terminated, body_len bytes before the NUL */
    size_t body_len;
    const char *headers; /* raw response header block of the last attempt */
    int attempts;        /* how many attempts were made */
};

/* The size of the first version: what a plugin may read of any response. */
#define EBB_HTTP_RESPONSE_SIZE_V1                                             \
    (offsetof(struct ebb_http_response, attempts) + sizeof(int))

/* Runs once per request; the response is valid only during the call. */
typedef void (*ebb_http_cb)(const struct ebb_http_response *res, void *arg);

#endif
