/* Signature Version 4, once for all of ebb: AWS's AWS4-HMAC-SHA256 (EC2
 * for the aws provider, S3 for checkpoint stores) and Alibaba OSS's
 * OSS4-HMAC-SHA256, which is the same algorithm under other names, in
 * both forms: an Authorization header, and a presigned URL (query
 * signing) that lets someone without the keys make one request.
 *
 * The signer signs exactly the headers it is given (the caller adds Host,
 * X-Amz-Date / x-oss-date and, for S3, x-amz-content-sha256 first). Known
 * answers: the AWS suites (tests/data/sigv4, tests/data/sigv4-aws-c-auth),
 * S3's and OSS's documented examples (tests/data/s3-oss). Plugins link it
 * with base.
 */
#ifndef EBB_SIGV4_H
#define EBB_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* Which names the algorithm goes by. */
enum ebb_sigv4_flavour {
    EBB_SIGV4_AWS = 0, /* AWS4-HMAC-SHA256, key "AWS4"+secret, "aws4_request" */
    /* OSS4-HMAC-SHA256, key "aliyun_v4"+secret, "aliyun_v4_request"; only
     * x-oss-*, content-type, content-md5 and the additional headers are
     * signed, and an empty query value is written "name", not "name=". */
    EBB_SIGV4_OSS = 1,
};

/* The shortest and longest life of a presigned URL, in seconds (S3 and
 * OSS both refuse more than 7 days). */
#define EBB_SIGV4_EXPIRES_MIN 1
#define EBB_SIGV4_EXPIRES_MAX 604800

/* What S3 takes in x-amz-content-sha256 (and presigned URLs always sign)
 * when the body is not hashed. */
#define EBB_SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"

struct ebb_sigv4_header {
    const char *name;
    const char *value; /* may hold folded lines; blanks are collapsed */
};

struct ebb_sigv4_request {
    const char *method;  /* "PUT" */
    const char *path;    /* raw path, unencoded: "/", "/example space/" */
    const char *query;   /* query as sent, without '?': "A=1&B=2", "" or NULL */
    const struct ebb_sigv4_header *headers;
    size_t n_headers;
    const void *payload; /* hashed when payload_hash is NULL */
    size_t payload_len;
    /* The canonical request's last line as given ("UNSIGNED-PAYLOAD", or
     * 64 hex digits the caller computed while streaming); NULL: the
     * SHA-256 of the payload. */
    const char *payload_hash;
    /* 1: S3's path rules (also OSS's): every byte but the unreserved
     * characters and '/' encoded once, and no '.', '..' or '//' folded
     * away. 0: the other services' rules (the path is normalised). */
    int s3_path;
    /* OSS only: headers to sign beyond the default ones, lower-case,
     * ';'-joined ("abc;zabc"); NULL or "" for none. */
    const char *additional_headers;
};

struct ebb_sigv4_scope {
    enum ebb_sigv4_flavour flavour;
    const char *access_key_id;
    const char *secret_access_key;
    const char *region;   /* "us-east-1", "cn-hangzhou" */
    const char *service;  /* "ec2", "s3", "oss" */
    const char *amz_date; /* "20150830T123600Z", as sent in X-Amz-Date */
    /* Temporary credentials' token for presigned URLs (it is then signed
     * in the query); NULL without one. Header signing ignores it: the
     * caller sends and signs X-Amz-Security-Token as a header. */
    const char *session_token;
};

/* Everything a signature is made of; each string is owned (free with
 * ebb_sigv4_result_free()). */
struct ebb_sigv4_result {
    char *canonical_request;
    char *string_to_sign;
    /* Header form: "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
     * Signature=..." (OSS: "OSS4-HMAC-SHA256 Credential=...,Signature=...").
     * Presigned form: the whole query to send after '?', the request's
     * own parameters first and the signature last. */
    char *authorization;
    char signature[65];
};

/* Signs `req` for an Authorization header. Returns 0, EBB_EINVAL (a
 * malformed query escape, an amz_date that is not YYYYMMDDTHHMMSSZ, a
 * payload_hash that is neither UNSIGNED-PAYLOAD nor 64 hex digits) or
 * EBB_ENOMEM; on failure `out` holds nothing. */
int ebb_sigv4_sign(const struct ebb_sigv4_request *req,
                   const struct ebb_sigv4_scope *scope,
                   struct ebb_sigv4_result *out);

/* Signs `req` as a presigned URL valid for `expires_s` seconds from
 * scope->amz_date: the algorithm, credential, date, expiry, signed (OSS:
 * additional) headers and session token join the request's query, and
 * out->authorization is that query with the signature appended. The
 * request's headers (Host at least) are what its user must send. Returns
 * 0, EBB_EINVAL (as ebb_sigv4_sign(), or `expires_s` outside
 * EBB_SIGV4_EXPIRES_MIN..EBB_SIGV4_EXPIRES_MAX) or EBB_ENOMEM. */
int ebb_sigv4_presign(const struct ebb_sigv4_request *req,
                      const struct ebb_sigv4_scope *scope, int64_t expires_s,
                      struct ebb_sigv4_result *out);

void ebb_sigv4_result_free(struct ebb_sigv4_result *r);

/* Formats `t` as an X-Amz-Date: "20150830T123600Z" (16 characters + NUL). */
void ebb_sigv4_amz_date(ebb_time_ms t, char out[17]);

#endif
