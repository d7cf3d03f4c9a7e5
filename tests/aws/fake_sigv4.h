/* The fake EC2's own SigV4 check, written apart from the provider's signer
 * (src/base/sigv4.c) so that one cannot hide the other's mistake. */
#ifndef FAKE_SIGV4_H
#define FAKE_SIGV4_H

#include <stddef.h>

#include "io/httpd.h"

/* Verifies the Authorization header of `req` for service "ec2": scope,
 * signed headers (host and x-amz-date at least, and x-amz-security-token
 * when `token` is not NULL) and the signature over a canonical request
 * rebuilt from what arrived. Returns 0 and copies the scope's region to
 * `region`, or -1 with the reason in `why`. */
int fake_sigv4_verify(const struct ebb__httpd_request *req, const char *akid,
                      const char *secret, const char *token, char *region,
                      size_t region_size, char *why, size_t why_size);

#endif
