/* The encryption format of checkpoints kept in a store: AES-256-GCM per
 * chunk under a per-job key, with everything decryption needs in the
 * checkpoint's manifest, which is itself authenticated. Pure functions
 * (OpenSSL's EVP AES-GCM, HKDF and HMAC); no I/O. base holds it because
 * both ebbd (keys, manifests) and ebb-agent (which seals and opens the
 * chunks it uploads and downloads) need it.
 *
 * The format (version 1):
 *
 *   job key K        32 random bytes ebbd makes per job and keeps; never
 *                    in a store, never logged.
 *   object key Ko    HKDF-SHA256(ikm K, salt = the object's 32-byte random
 *                    nonce, info "ebb checkpoint object v1"): each file of
 *                    a checkpoint is sealed under a key of its own, so
 *                    chunks cannot move between files and a GCM nonce is
 *                    never reused under one key.
 *   chunks           the plaintext cut into chunk_size pieces (the last may
 *                    be shorter; an empty file is one empty chunk). Chunk i
 *                    is AES-256-GCM under Ko with the 12-byte IV
 *                    0x00000000 || i (64-bit big-endian), additional data
 *                    "ebb1" || i (8 bytes BE) || final (1 byte: 1 for the
 *                    last chunk, else 0), and is stored as ciphertext ||
 *                    16-byte tag. The stored object is the chunks in
 *                    order, nothing else: no plaintext byte reaches it.
 *   manifest tag     HMAC-SHA256 under HKDF(K, no salt, info "ebb checkpoint
 *                    manifest v1") of the job id, the checkpoint's name and,
 *                    in order, each object's name, plaintext size, chunk
 *                    size and nonce (each field length-prefixed): the
 *                    manifest authenticates which objects there are, their
 *                    order, their sizes and so every chunk count.
 *
 * What is detected: a changed byte or tag (GCM), a chunk moved to another
 * place or file (IV and additional data carry its index, keys are per
 * file), a chunk dropped at the end (the chunk that is then last was not
 * sealed as final, and the count the manifest implies is not met), chunks
 * appended (more than the count), a manifest changed in any field (its
 * tag), a wrong key (every tag fails).
 */
#ifndef EBB_BASE_CKPT_CRYPT_H
#define EBB_BASE_CKPT_CRYPT_H

#include <stddef.h>
#include <stdint.h>

#define EBB__CC_KEY_LEN 32
#define EBB__CC_NONCE_LEN 32
#define EBB__CC_TAG_LEN 16
#define EBB__CC_CHUNK_MIN ((uint32_t)4096)
#define EBB__CC_CHUNK_MAX ((uint32_t)64 << 20)
#define EBB__CC_CHUNK_DEFAULT ((uint32_t)8 << 20)

/* Fills `out` with `len` random bytes (OpenSSL's CSPRNG): job keys and
 * object nonces. Returns 0 or EBB_EIO. */
int ebb__cc_random(uint8_t *out, size_t len);

/* The object key for the object with `nonce` under job key `key`.
 * Returns 0 or EBB_ENOMEM. */
int ebb__cc_object_key(const uint8_t key[EBB__CC_KEY_LEN],
                       const uint8_t nonce[EBB__CC_NONCE_LEN],
                       uint8_t out[EBB__CC_KEY_LEN]);

/* How many chunks a plaintext of `size` bytes has (at least 1), and how
 * many bytes the stored object then holds. Return 0 for a chunk_size
 * outside EBB__CC_CHUNK_MIN..EBB__CC_CHUNK_MAX. */
uint64_t ebb__cc_chunks(uint64_t size, uint32_t chunk_size);
uint64_t ebb__cc_sealed_size(uint64_t size, uint32_t chunk_size);

/* Seals chunk `index` (`len` plaintext bytes, at most the chunk size;
 * `final`: it is the object's last) into `out`, which takes len +
 * EBB__CC_TAG_LEN bytes. Returns 0, EBB_EINVAL or EBB_ENOMEM. */
int ebb__cc_seal_chunk(const uint8_t okey[EBB__CC_KEY_LEN], uint64_t index,
                       int final, const uint8_t *in, size_t len, uint8_t *out);

/* Opens sealed chunk `index` (`len` bytes, tag included) into `out`
 * (len - EBB__CC_TAG_LEN bytes). Returns 0, EBB_EAUTH when it was changed,
 * moved, or sealed with another key or finality than asked, EBB_EINVAL
 * (shorter than a tag) or EBB_ENOMEM. `out` holds nothing to use on
 * failure (it is zeroed). */
int ebb__cc_open_chunk(const uint8_t okey[EBB__CC_KEY_LEN], uint64_t index,
                       int final, const uint8_t *in, size_t len, uint8_t *out);

/* One object of a checkpoint as its manifest describes it. */
struct ebb__cc_object {
    const char *name; /* its file name within the checkpoint */
    uint64_t size;    /* plaintext bytes */
    uint32_t chunk_size;
    uint8_t nonce[EBB__CC_NONCE_LEN];
};

/* The manifest tag of checkpoint `name` of job `job_id` with `n` objects
 * in the manifest's order. Returns 0, EBB_EINVAL (a chunk size out of
 * range, a NULL name) or EBB_ENOMEM. */
int ebb__cc_manifest_tag(const uint8_t key[EBB__CC_KEY_LEN], const char *job_id,
                         const char *name, const struct ebb__cc_object *objects,
                         size_t n, uint8_t out[32]);

/* Whether `tag` is that manifest's tag (compared in constant time).
 * Returns 0 or EBB_EAUTH (or the errors above). */
int ebb__cc_manifest_verify(const uint8_t key[EBB__CC_KEY_LEN], const char *job_id,
                            const char *name, const struct ebb__cc_object *objects,
                            size_t n, const uint8_t tag[32]);

#endif
