/* SHA-256 and HMAC-SHA256 (OpenSSL), and lower-case hex: the pieces every
 * cloud signature is built from (AWS SigV4, Alibaba ACS3 and OSS V4), kept
 * here once. Plugins link them with base. */
#ifndef EBB_DIGEST_H
#define EBB_DIGEST_H

#include <stddef.h>

#define EBB_SHA256_LEN 32
#define EBB_SHA256_HEX_LEN 65 /* 64 hex digits and a NUL */

/* Writes `n` bytes of `in` as lower-case hex to `out` (2n + 1 bytes). */
void ebb_hex(const unsigned char *in, size_t n, char *out);

/* The SHA-256 of `len` bytes of `data` (NULL only with len 0), raw into
 * `out`. Returns 0, or EBB_ENOMEM when OpenSSL fails. */
int ebb_sha256(const void *data, size_t len, unsigned char out[EBB_SHA256_LEN]);

/* The same as lower-case hex. Returns 0 or EBB_ENOMEM. */
int ebb_sha256_hex(const void *data, size_t len, char out[EBB_SHA256_HEX_LEN]);

/* HMAC-SHA256 of `len` bytes of `msg` keyed by `key_len` bytes of `key`,
 * raw into `out`. Returns 0 or EBB_ENOMEM. */
int ebb_hmac_sha256(const void *key, size_t key_len, const void *msg,
                    size_t len, unsigned char out[EBB_SHA256_LEN]);

#endif
