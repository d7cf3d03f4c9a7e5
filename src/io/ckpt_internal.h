/* Internal to the checkpoint format's files (ckpt_*.c): the KDF, the
 * chunk restore the stream needs, and the manifest's canonical form. */
#ifndef EBB_IO_CKPT_INTERNAL_H
#define EBB_IO_CKPT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "io/ckpt_object.h"
#include "io/ckpt_manifest.h"

/* The manifest's "format" value, and the latest "created" it accepts
 * (9999-12-31T23:59:59.999Z). */
#define EBB__CKPT_MANIFEST_FORMAT "ebb-checkpoint-manifest"
#define EBB__CKPT_CREATED_MAX INT64_C(253402300799999)

/* HKDF-SHA256 (RFC 5869) of `ikm` with `salt` (none when salt_len is 0)
 * and `info` into `out_len` bytes at `out`. Returns 0 or EBB_EIO (and
 * zeroes `out`). */
int ebb__ckpt_hkdf(const unsigned char *ikm, size_t ikm_len,
                   const unsigned char *salt, size_t salt_len,
                   const unsigned char *info, size_t info_len,
                   unsigned char *out, size_t out_len);

/* Restores the ciphertext of a chunk that ebb__ckpt_chunk_open() failed
 * to open in place. GCM's encryption is a keystream XORed in, and the
 * keystream depends only on the key and the nonce (the additional data
 * changes only the tag), so running the encryption over the failed
 * output gives the ciphertext back: the stream uses it to try the chunk
 * once more with another `last` flag without holding a second copy.
 * `index` and `len` are those of the failed open. Returns 0 or EBB_EIO. */
int ebb__ckpt_chunk_unopen(struct ebb__ckpt_file *f, uint64_t index, bool last,
                           unsigned char *buf, size_t len);

/* The manifest without its "mac", as JSON built from the fields of `m`
 * (which ebb__ckpt_manifest_check accepted): the one form the writer
 * writes and the MAC covers. Returns a new reference, or NULL when out of
 * memory. */
json_t *ebb__ckpt_manifest_body(const struct ebb__ckpt_manifest *m);

/* HMAC-SHA256 under the manifest key of `k` over `body` dumped compact
 * with sorted keys. Returns 0, EBB_ENOMEM or EBB_EIO. */
int ebb__ckpt_manifest_mac(json_t *body, const struct ebb__ckpt_key *k,
                           unsigned char mac[32]);

#endif
