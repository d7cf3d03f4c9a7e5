/* Internal to http.c and http_retry.c: the client's retry policy and the
 * helpers it needs. */
#ifndef EBB_HTTP_RETRY_H
#define EBB_HTTP_RETRY_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

#include <ebb/common.h>

/* Whether a finished attempt is worth another: connect and resolve errors,
 * timeouts (provider calls carry idempotency tokens), 5xx and 429. */
bool ebb__http_retryable(CURLcode c, long status);

/* The EBB_E* code for a transfer that failed with `c`. */
int ebb__http_error_of(CURLcode c);

/* Scheme, host and path of `url` for logs: no credentials, no query. */
void ebb__http_loggable_url(const char *url, char *out, size_t size);

#endif
