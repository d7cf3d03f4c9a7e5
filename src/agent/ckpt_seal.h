/* A checkpoint's stored objects made as they are sent, with no copy of
 * them on the disk (ckpt_upload.c, ckpt_transfer.c).
 *
 * agent_seal_prepare draws each file's header (its salt: one per file
 * and upload) and fixes each object's stored size. Two readers then read
 * the same plaintext: agent_seal_hash once, in order, on the thread
 * pool, for the manifest's sums; and the transfers, each object or part
 * at its offset as libcurl asks for it (agent_seal_read). The same
 * plaintext under the same header makes the same bytes, so the two
 * agree and a part sent again is sent the same.
 *
 * Unless the job changed a file after its checkpoint was complete. So
 * every read of a chunk leaves its fingerprint (its GCM tag; without
 * encryption the first 16 bytes of its SHA-256), and agent_seal_check
 * matches all reads of one chunk: a file that changed between two reads
 * fails the upload, before a second, different ciphertext under the
 * same key and nonce is sent.
 *
 * Memory: a reader holds one chunk and its tag (EBB__CKPT_STREAM_MEMORY,
 * 4 MiB) and the hash pass one stream, whatever the file's size; the
 * upload holds 80 bytes per file and 33 per chunk.
 */
#ifndef EBB_AGENT_CKPT_SEAL_H
#define EBB_AGENT_CKPT_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "io/ckpt_manifest.h"
#include "io/ckpt_object.h"

#define AGENT_FP_LEN 16
typedef unsigned char agent_fp[AGENT_FP_LEN];

struct agent_seal {
    const struct ebb__ckpt_manifest *m;  /* borrowed: the walked files */
    int dirfd;                           /* the checkpoint directory (borrowed) */
    bool encrypt;
    struct ebb__ckpt_key key;
    unsigned char (*headers)[EBB__CKPT_HEADER_LEN];  /* per file, when encrypted */
    uint64_t *first_chunk;   /* per file its first chunk's number; [n_files]: all */
    /* `hashed` is written by agent_seal_hash (thread pool) and read only
     * once it has returned (hashed_done); `sent` and `sent_known` belong
     * to the loop. */
    agent_fp *hashed, *sent;
    unsigned char *sent_known;
    bool hashed_done;
};

/* Sets `s` up for the walked files of `m` below `dirfd`, sealed under
 * `key` (NULL: stored as they are), and fills in each file's
 * stored_size. Returns 0, or EBB_ENOMEM / EBB_EIO with `why`. */
int agent_seal_prepare(struct agent_seal *s, struct ebb__ckpt_manifest *m, int dirfd,
                       const struct ebb__ckpt_key *key, char *why, size_t len);

/* Frees and wipes `s`. Safe on a zeroed one. */
void agent_seal_free(struct agent_seal *s);

/* Reads every file once, in order: its sums into sums[i], every chunk's
 * fingerprint into s->hashed. A file whose size is not the walked one
 * fails it. For the thread pool. Returns 0 or an EBB_E* code with `why`. */
int agent_seal_hash(const struct agent_seal *s, struct ebb__ckpt_sums *sums, char *why,
                    size_t len);

/* The loop's side of the fingerprints: chunk `chunk` (of all) was read
 * with `fp`. Returns 0, or EBB_EINVAL when another read of it differed. */
int agent_seal_check(struct agent_seal *s, uint64_t chunk, const unsigned char *fp);

/* agent_seal_hash has returned: matches its fingerprints with the
 * chunks read so far. Returns 0, or EBB_EINVAL with the file in *file. */
int agent_seal_hashed(struct agent_seal *s, size_t *file);

/* One object read at any offset, one chunk made at a time. */
struct agent_seal_reader {
    const struct agent_seal *s;
    size_t file;
    int fd;
    struct ebb__ckpt_file f;
    unsigned char *buf;      /* EBB__CKPT_STREAM_MEMORY bytes, borrowed */
    uint64_t chunk;          /* the chunk in buf; UINT64_MAX: none */
    size_t len;              /* its stored bytes there (with the tag) */
    char why[300];
};

/* Called for each chunk a reader makes, before any of its bytes are
 * handed out: `chunk` of all, its fingerprint. Nonzero refuses it. */
typedef int (*agent_seal_seen_fn)(void *arg, uint64_t chunk, const unsigned char *fp);

/* Opens file `file` of `s`, making its chunks in `buf`
 * (EBB__CKPT_STREAM_MEMORY bytes, lent until the reader is closed). Returns 0 or an EBB_E* code with r->why; close it
 * either way. */
int agent_seal_reader_open(struct agent_seal_reader *r, const struct agent_seal *s,
                           size_t file, unsigned char *buf);

/* Copies up to `len` bytes of the stored object from `at` into `out`:
 * returns how many (at least one), or a negative EBB_E* code with r->why
 * (the file changed or cannot be read, `seen` refused, `at` is past the
 * end). */
ssize_t agent_seal_read(struct agent_seal_reader *r, uint64_t at, void *out, size_t len,
                        agent_seal_seen_fn seen, void *arg);

/* Closes `r` (safe on a zeroed or closed one); its buffer is the
 * caller's again. */
void agent_seal_reader_close(struct agent_seal_reader *r);

#endif
