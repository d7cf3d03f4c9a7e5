/* AWS Signature Version 4, as the AWS test suite exercises it: canonical
 * request, string to sign, signing key and the Authorization header value.
 *
 * The signer signs exactly the headers it is given (the caller adds Host,
 * X-Amz-Date and, with temporary credentials, X-Amz-Security-Token first).
 * Paths are normalised ('.', '..', '//') as for every service but S3.
 */
#ifndef AWS_SIGV4_H
#define AWS_SIGV4_H

#include <stddef.h>

#include <ebb/common.h>

struct aws_header {
    const char *name;
    const char *value; /* may hold folded lines; blanks are collapsed */
};

struct aws_sigv4_request {
    const char *method;  /* "POST" */
    const char *path;    /* raw path, unencoded: "/", "/example space/" */
    const char *query;   /* raw query without '?': "A=1&B=2", or "" */
    const struct aws_header *headers;
    size_t n_headers;
    const void *payload;
    size_t payload_len;
};

struct aws_sigv4_scope {
    const char *access_key_id;
    const char *secret_access_key;
    const char *region;   /* "us-east-1" */
    const char *service;  /* "ec2" */
    const char *amz_date; /* "20150830T123600Z", as sent in X-Amz-Date */
};

/* Everything a signature is made of; each string is owned (free with
 * aws_sigv4_result_free()). */
struct aws_sigv4_result {
    char *canonical_request;
    char *string_to_sign;
    char *authorization; /* "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..." */
};

/* Signs `req`. Returns 0, EBB_EINVAL (a malformed query escape or an
 * amz_date that is not YYYYMMDDTHHMMSSZ) or EBB_ENOMEM; on failure `out`
 * holds nothing. */
int aws_sigv4_sign(const struct aws_sigv4_request *req,
                   const struct aws_sigv4_scope *scope,
                   struct aws_sigv4_result *out);

void aws_sigv4_result_free(struct aws_sigv4_result *r);

/* Formats `t` as an X-Amz-Date: "20150830T123600Z" (16 characters + NUL). */
void aws_sigv4_amz_date(ebb_time_ms t, char out[17]);

#endif
