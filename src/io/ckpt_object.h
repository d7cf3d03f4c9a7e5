/* The stored form of a checkpoint's files: AES-256-GCM in fixed chunks
 * under keys derived from the job's key (docs/checkpoint-format.md).
 *
 * ebbd generates one 256-bit key per job (ebb__ckpt_key_generate) and
 * holds it; it never goes into the store and is never logged. Each file
 * of each checkpoint is sealed under a key of its own, derived with
 * HKDF-SHA256 from the job key, a random 256-bit salt drawn for that one
 * encryption, and the checkpoint's name and the file's path; chunk i is
 * sealed with the nonce i under that key. The stored object is an 80-byte
 * header (magic, version, algorithm, chunk size, salt, key check) followed
 * by the chunks, each its ciphertext and a 16-byte tag. Every chunk's
 * additional data binds the header, the chunk's index, whether it is the
 * last, and the checkpoint and file it belongs to, so an altered,
 * reordered, dropped, truncated or transplanted chunk fails to open.
 *
 * Streaming (ckpt_stream.c) holds one chunk in memory:
 * EBB__CKPT_STREAM_MEMORY bytes per stream, whatever the file's size.
 * Decrypted bytes are written as each chunk verifies, so a caller writes
 * them to a temporary and keeps it only when the whole object verified.
 */
#ifndef EBB_IO_CKPT_OBJECT_H
#define EBB_IO_CKPT_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ebb/common.h>
#include <ebb/diag.h>

#define EBB__CKPT_KEY_LEN 32
/* The hex form of a key (ebb__ckpt_key_to_hex), with its NUL. */
#define EBB__CKPT_KEY_HEX_SIZE (2 * EBB__CKPT_KEY_LEN + 1)
/* A key's id (ebb__ckpt_key_id): 32 hex digits and a NUL. */
#define EBB__CKPT_KEY_ID_SIZE 33
/* Plaintext bytes per chunk, fixed by format version 1. */
#define EBB__CKPT_CHUNK_SIZE (UINT32_C(4) << 20)
#define EBB__CKPT_TAG_LEN 16
#define EBB__CKPT_HEADER_LEN 80
#define EBB__CKPT_SALT_LEN 32
/* The longest checkpoint name and file path the format carries, in bytes. */
#define EBB__CKPT_NAME_MAX 255
#define EBB__CKPT_PATH_MAX 4096
/* The largest file one object holds: 16 TiB, 4 Mi chunks. */
#define EBB__CKPT_FILE_MAX (UINT64_C(1) << 44)
/* What one encrypting or decrypting stream allocates: one chunk with its
 * tag and a byte of look-ahead. */
#define EBB__CKPT_STREAM_MEMORY ((size_t)EBB__CKPT_CHUNK_SIZE + EBB__CKPT_TAG_LEN + 1)

/* A job's key. Wipe it with ebb__ckpt_key_wipe() when done. */
struct ebb__ckpt_key {
    unsigned char bytes[EBB__CKPT_KEY_LEN];
};

/* Why a stored object or a manifest was refused; `chunk` names the chunk
 * for the chunk faults. */
enum ebb__ckpt_fault {
    EBB__CKPT_OK = 0,
    EBB__CKPT_IO,             /* reading or writing failed */
    EBB__CKPT_BAD_HEADER,     /* not an ebb checkpoint object of a known version */
    EBB__CKPT_KEY_MISMATCH,   /* the header's key check fails: another key, checkpoint or file */
    EBB__CKPT_CHUNK_AUTH,     /* a chunk fails authentication: altered, moved or reordered */
    EBB__CKPT_TRUNCATED,      /* the object ends before its last chunk */
    EBB__CKPT_TRAILING,       /* bytes follow the last chunk */
    EBB__CKPT_TOO_LARGE,      /* past the format's limits */
    EBB__CKPT_MANIFEST_INVALID, /* a manifest that is not well formed */
    EBB__CKPT_MANIFEST_KEY,   /* a manifest written under another key */
    EBB__CKPT_MANIFEST_MAC,   /* a manifest whose MAC does not match */
    EBB__CKPT_MISMATCH,       /* an object that is not the one its manifest lists */
};

struct ebb__ckpt_error {
    enum ebb__ckpt_fault fault;
    uint64_t chunk;
    struct ebb_diag diag;   /* a sentence saying what is wrong */
};

/* Sets `err` (which may be NULL) to `fault` at `chunk` with a message. */
void ebb__ckpt_fail(struct ebb__ckpt_error *err, enum ebb__ckpt_fault fault,
                    uint64_t chunk, const char *fmt, ...) EBB_PRINTF(4, 5);

/* ---- keys (ckpt_key.c) ------------------------------------------------- */

/* Fills `out` from OpenSSL's CSPRNG (RAND_bytes, seeded by the kernel's
 * getrandom). Returns 0, or EBB_EIO when the generator fails. */
int ebb__ckpt_key_generate(struct ebb__ckpt_key *out);

/* Overwrites the key with zeros in a way the compiler keeps. */
void ebb__ckpt_key_wipe(struct ebb__ckpt_key *k);

/* The key's id: 32 hex digits of HKDF-SHA256(key, "ebb ckpt v1 key id").
 * It names the key in manifests and tells a wrong key from a tampered
 * object without revealing anything about the key. `out` holds
 * EBB__CKPT_KEY_ID_SIZE bytes. Returns 0 or EBB_EIO. */
int ebb__ckpt_key_id(const struct ebb__ckpt_key *k, char *out);

/* The key as 64 lower-case hex digits into `out` (EBB__CKPT_KEY_HEX_SIZE
 * bytes), for ebbd's database and the agent API, never for logs. */
void ebb__ckpt_key_to_hex(const struct ebb__ckpt_key *k, char *out);

/* Parses 64 hex digits (either case) into `out`. Returns 0 or EBB_EINVAL. */
int ebb__ckpt_key_from_hex(const char *hex, struct ebb__ckpt_key *out);

/* Parses exactly 2 * len hex digits of `hex` (NUL-terminated) into `out`.
 * Returns 0, or EBB_EINVAL for another length or a non-hex digit. */
int ebb__ckpt_unhex(const char *hex, unsigned char *out, size_t len);

/* The 32-byte key that authenticates manifests (HMAC-SHA256):
 * HKDF-SHA256(job key, "ebb ckpt v1 manifest"). Returns 0 or EBB_EIO. */
int ebb__ckpt_manifest_key(const struct ebb__ckpt_key *k, unsigned char out[32]);

/* The key a packed workdir (a tar of `ebb submit`) is sealed under:
 * HKDF-SHA256(secret, info "ebb workdir v1" || the tar's SHA-256 bytes),
 * no salt. Workdirs are stored content-addressed and shared by every job
 * that submits the same tar, so their key follows the content, not the
 * job: `secret` is ebbd's 32-byte workdir secret, which never leaves it;
 * an agent gets only the key of its own job's tar. Returns 0 or EBB_EIO
 * (out wiped). */
int ebb__ckpt_workdir_key(const unsigned char secret[EBB__CKPT_KEY_LEN],
                          const unsigned char sha256[32], struct ebb__ckpt_key *out);

/* ---- one file's object (ckpt_object.c) ----------------------------------- */

/* The keys and header of one stored object, to seal or to open it. The
 * struct is plain data plus an OpenSSL context; it allocates nothing else. */
struct ebb__ckpt_file {
    unsigned char header[EBB__CKPT_HEADER_LEN];
    unsigned char file_id[32];   /* SHA-256 of the checkpoint name and path */
    unsigned char enc_key[32];
    void *evp;                   /* EVP_CIPHER_CTX */
};

/* Starts sealing the file `path` of checkpoint `name` under the job key:
 * draws a fresh salt, derives the file's keys and builds the header (in
 * f->header, to be written first). `name` is 1..EBB__CKPT_NAME_MAX bytes
 * and `path` 1..EBB__CKPT_PATH_MAX; neither is stored in the object.
 * Returns 0, EBB_EINVAL (err says why), EBB_ENOMEM or EBB_EIO. Close `f`
 * with ebb__ckpt_file_close() after success. */
int ebb__ckpt_file_seal(struct ebb__ckpt_file *f, const struct ebb__ckpt_key *k,
                        const char *name, const char *path,
                        struct ebb__ckpt_error *err);

/* Starts opening an object whose first EBB__CKPT_HEADER_LEN bytes are
 * `header`, as the file `path` of checkpoint `name`. Returns 0, or
 * EBB_EPROTO with EBB__CKPT_BAD_HEADER (not ours, another version, another
 * chunk size), EBB_EAUTH with EBB__CKPT_KEY_MISMATCH (another job key, or
 * an object of another checkpoint or file), EBB_EINVAL, EBB_ENOMEM. */
int ebb__ckpt_file_open(struct ebb__ckpt_file *f, const struct ebb__ckpt_key *k,
                        const char *name, const char *path,
                        const unsigned char *header, struct ebb__ckpt_error *err);

/* Seals chunk `index` (`len` bytes at `buf`, at most EBB__CKPT_CHUNK_SIZE;
 * only the last chunk may be shorter, and an empty file is one empty last
 * chunk) in place, and writes its tag to `tag`. Chunks are independent, so
 * parts of one object may be sealed in parallel, each worker with its own
 * `f` opened on the sealer's header (ebb__ckpt_file_open). Returns 0,
 * EBB_EINVAL or EBB_EIO. */
int ebb__ckpt_chunk_seal(struct ebb__ckpt_file *f, uint64_t index, bool last,
                         unsigned char *buf, size_t len, unsigned char *tag);

/* Opens chunk `index` (`len` bytes of ciphertext at `buf`, then `tag`) in
 * place. Returns 0, or EBB_EAUTH when the chunk is not the one sealed at
 * `index` with `last` in this object (EBB__CKPT_CHUNK_AUTH in err). On
 * failure the bytes at `buf` are not plaintext and must not be used. */
int ebb__ckpt_chunk_open(struct ebb__ckpt_file *f, uint64_t index, bool last,
                         unsigned char *buf, size_t len, const unsigned char *tag,
                         struct ebb__ckpt_error *err);

/* Wipes the keys and frees the OpenSSL context. Safe on a zeroed `f`. */
void ebb__ckpt_file_close(struct ebb__ckpt_file *f);

/* The stored size of a file of `size` plaintext bytes: the header and
 * max(1, ceil(size / chunk)) tags on top. */
uint64_t ebb__ckpt_stored_size(uint64_t size);

/* ---- streams (ckpt_stream.c) --------------------------------------------- */

/* Reads up to `len` bytes into `buf`: returns how many (0 at the end) or a
 * negative EBB_E* code. */
typedef ssize_t (*ebb__ckpt_read_fn)(void *arg, void *buf, size_t len);
/* Writes all `len` bytes of `buf`: returns 0 or a negative EBB_E* code. */
typedef int (*ebb__ckpt_write_fn)(void *arg, const void *buf, size_t len);

/* What a stream saw: the plaintext's size and SHA-256 and the stored
 * object's (the same for a plain copy). */
struct ebb__ckpt_sums {
    uint64_t size;
    uint64_t stored_size;
    unsigned char sha256[32];
    unsigned char stored_sha256[32];
};

/* Seals everything `rd` yields as the file `path` of checkpoint `name` and
 * hands the stored object to `wr`: the header in one call, then each
 * sealed chunk with its tag in one call. Fills `sums`. Returns 0 or the
 * first error (err says which; an error of `rd` or `wr` is EBB__CKPT_IO
 * with their code returned). */
int ebb__ckpt_encrypt(const struct ebb__ckpt_key *k, const char *name,
                      const char *path, ebb__ckpt_read_fn rd, void *rd_arg,
                      ebb__ckpt_write_fn wr, void *wr_arg,
                      struct ebb__ckpt_sums *sums, struct ebb__ckpt_error *err);

/* As ebb__ckpt_encrypt(), under the header and keys `f` already holds
 * (from ebb__ckpt_file_seal, or ebb__ckpt_file_open on a header drawn
 * before): the same plaintext makes the same object byte for byte, so
 * parts of it may be made again, elsewhere, as they are sent. `f` stays
 * open. */
int ebb__ckpt_encrypt_file(struct ebb__ckpt_file *f, ebb__ckpt_read_fn rd, void *rd_arg,
                           ebb__ckpt_write_fn wr, void *wr_arg,
                           struct ebb__ckpt_sums *sums, struct ebb__ckpt_error *err);

/* Opens the stored object `rd` yields as the file `path` of checkpoint
 * `name`, handing each chunk's plaintext to `wr` once it verified.
 * `expect_stored` is the object's size from its manifest, or -1 when it is
 * not known (the end of the input then decides, and a cut on a chunk
 * boundary is still found: the chunk before it was not sealed as the
 * last). Returns 0 and fills `sums`; or, with the fault in err:
 * EBB_EPROTO (BAD_HEADER, TRUNCATED, TRAILING, TOO_LARGE), EBB_EAUTH
 * (KEY_MISMATCH, CHUNK_AUTH), EBB_EINVAL (MISMATCH: `expect_stored` is no
 * object's size), or the code of `rd`, `wr` or OpenSSL (IO), EBB_ENOMEM.
 * After an error `wr` has had a prefix of the plaintext at most, every
 * byte of it verified. */
int ebb__ckpt_decrypt(const struct ebb__ckpt_key *k, const char *name,
                      const char *path, int64_t expect_stored,
                      ebb__ckpt_read_fn rd, void *rd_arg,
                      ebb__ckpt_write_fn wr, void *wr_arg,
                      struct ebb__ckpt_sums *sums, struct ebb__ckpt_error *err);

/* Copies `rd` to `wr` unchanged (a checkpoint with `encrypt: false`),
 * hashing as it goes: size == stored_size and both hashes equal. `wr`
 * gets one call per chunk's worth (EBB__CKPT_CHUNK_SIZE bytes, the last
 * one shorter or empty). Same memory bound and returns as
 * ebb__ckpt_encrypt(). */
int ebb__ckpt_copy(ebb__ckpt_read_fn rd, void *rd_arg, ebb__ckpt_write_fn wr,
                   void *wr_arg, struct ebb__ckpt_sums *sums,
                   struct ebb__ckpt_error *err);

/* Read and write functions for the streams above on a file descriptor
 * (`arg` points to the int): read(2) and write(2), retried on EINTR and
 * short writes; an error is EBB_EIO. */
ssize_t ebb__ckpt_fd_read(void *arg, void *buf, size_t len);
int ebb__ckpt_fd_write(void *arg, const void *buf, size_t len);

#endif
