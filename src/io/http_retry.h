/* Internal to http_client.c and http_retry.c: the client's retry policy
 * (every retry ebb makes goes through it) and the helpers it needs. */
#ifndef EBB_HTTP_RETRY_H
#define EBB_HTTP_RETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include <ebb/common.h>
#include <ebb/http.h>

/* Whether a finished attempt is worth another by default: connect and
 * resolve errors, timeouts (provider calls carry idempotency tokens), 5xx
 * and 429. */
bool ebb__http_retryable(CURLcode c, long status);

/* Whether a finished attempt (`res`, from transfer result `c` and HTTP
 * `status`) is retried: `classify(arg, res)` decides when it is set and
 * has a verdict, else ebb__http_retryable(). */
bool ebb__http_should_retry(CURLcode c, long status,
                            const struct ebb_http_response *res,
                            ebb_http_classify_fn classify, void *arg);

/* The wait before the retry after `attempts_done` attempts: uniformly
 * drawn from `rnd` in [0, ceiling] ("full jitter"), the ceiling starting
 * at `base` and doubling per attempt up to `cap` (base/backoff.h). */
ebb_dur_ms ebb__http_retry_delay(ebb_dur_ms base, ebb_dur_ms cap, int attempts_done,
                                 uint64_t rnd);

/* The EBB_E* code for a transfer that failed with `c`. */
int ebb__http_error_of(CURLcode c);

/* Scheme, host and path of `url` for logs: no credentials, no query. */
void ebb__http_loggable_url(const char *url, char *out, size_t size);

#endif
