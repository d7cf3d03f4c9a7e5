/* A checkpoint's manifest: the JSON document, stored last, that makes a
 * checkpoint durable (docs/checkpoint-format.md).
 *
 * It lists the checkpoint's name, kind, job, creation time, whether its
 * files are encrypted and with what (algorithm, KDF, chunk size, the id
 * and version of the job key, never the key), and each file's relative
 * path, plaintext size and SHA-256, and for encrypted files the stored
 * object's size and SHA-256. An HMAC-SHA256 under a key derived from the
 * job key authenticates all of it, so a manifest is also what
 * authenticates the checkpoint as a whole: a file dropped, added, swapped
 * for another object or cut short no longer matches it.
 *
 * The MAC covers a canonical form rebuilt from the fields after they
 * were checked (compact JSON, keys sorted, without "mac"), not the bytes
 * read, so the reader refuses every unknown key and every field it did
 * not check, and the writer and the reader share one serialiser.
 */
#ifndef EBB_IO_CKPT_MANIFEST_H
#define EBB_IO_CKPT_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>

#include "io/ckpt_object.h"

/* The bounds a reader holds a manifest to. */
#define EBB__CKPT_MANIFEST_MAX (16u << 20)   /* bytes of JSON */
#define EBB__CKPT_FILES_MAX 100000           /* files in one checkpoint */
#define EBB__CKPT_JOB_MAX 64                 /* bytes of a job id */

enum ebb__ckpt_kind {
    EBB__CKPT_KIND_FILE = 0,       /* one file, its path the checkpoint's name */
    EBB__CKPT_KIND_DIRECTORY = 1,  /* a directory, paths relative to it */
};

struct ebb__ckpt_manifest_file {
    char *path;                     /* relative, '/'-separated; owned */
    uint64_t size;                  /* plaintext bytes */
    unsigned char sha256[32];       /* of the plaintext */
    uint64_t stored_size;           /* encrypted: the object's bytes */
    unsigned char stored_sha256[32];/* encrypted: of the object */
};

struct ebb__ckpt_manifest {
    char name[EBB__CKPT_NAME_MAX + 1];
    enum ebb__ckpt_kind kind;
    char job[EBB__CKPT_JOB_MAX + 1];
    ebb_time_ms created;
    bool encrypt;
    char key_id[EBB__CKPT_KEY_ID_SIZE];  /* the key the MAC (and the files) use */
    uint32_t key_version;                /* 1 or more: ebbd's number for that key */
    struct ebb__ckpt_manifest_file *files;  /* sorted by path ('/' first), owned */
    size_t n_files;
};

/* Checks that `name` may name a checkpoint: 1..EBB__CKPT_NAME_MAX bytes,
 * no '/', no NUL or control byte, not starting with '.'. Returns 0, or
 * EBB_EINVAL with a reason in `why` (static text). */
int ebb__ckpt_name_check(const char *name, const char **why);

/* Checks that `path` may name a file in a checkpoint: 1..EBB__CKPT_PATH_MAX
 * bytes, relative, components of 1..255 bytes separated by single '/',
 * none "." or "..", no control byte. Returns 0, or EBB_EINVAL with `why`. */
int ebb__ckpt_path_check(const char *path, const char **why);

/* Checks every field of `m` as the reader does: names and paths as above,
 * a job id of 1..EBB__CKPT_JOB_MAX printable bytes, at most
 * EBB__CKPT_FILES_MAX files in strictly increasing path order (as
 * ebb__ckpt_manifest_sort sorts) with no
 * file inside another's path, a file checkpoint one file named as it,
 * stored sizes matching the plaintext sizes. Returns 0 or EBB_EINVAL with
 * the problem in `err` (EBB__CKPT_MANIFEST_INVALID). */
int ebb__ckpt_manifest_check(const struct ebb__ckpt_manifest *m,
                             struct ebb__ckpt_error *err);

/* Sorts m->files by path, as the format wants them: byte by byte, with
 * '/' before every other byte ("a", "a/b", "a-b"). */
void ebb__ckpt_manifest_sort(struct ebb__ckpt_manifest *m);

/* Sets m->key_id from `k` (and m->key_version to `version`). Returns 0 or
 * EBB_EIO. */
int ebb__ckpt_manifest_set_key(struct ebb__ckpt_manifest *m,
                               const struct ebb__ckpt_key *k, uint32_t version);

/* Writes `m` as the manifest's JSON with its MAC under `k`, whose id must
 * be m->key_id. On success `*out` is a NUL-terminated string the caller
 * frees and `*len` its length. Returns 0, EBB_EINVAL (err says which
 * field is wrong), EBB_ENOMEM or EBB_EIO. */
int ebb__ckpt_manifest_write(const struct ebb__ckpt_manifest *m,
                             const struct ebb__ckpt_key *k, char **out,
                             size_t *len, struct ebb__ckpt_error *err);

/* Reads a manifest (`len` bytes of `text`, at most EBB__CKPT_MANIFEST_MAX)
 * and verifies it under `k`. On success `*out` is a new manifest the
 * caller frees with ebb__ckpt_manifest_free(). Returns 0; EBB_EPROTO with
 * EBB__CKPT_MANIFEST_INVALID and the field in err for anything malformed
 * (not JSON, a key missing, unknown or duplicated, a wrong type, a value
 * out of bounds, a path that climbs out); EBB_EAUTH with
 * EBB__CKPT_MANIFEST_KEY when it names another key than `k`, or
 * EBB__CKPT_MANIFEST_MAC when its MAC does not match; EBB_ENOMEM. */
int ebb__ckpt_manifest_read(const char *text, size_t len,
                            const struct ebb__ckpt_key *k,
                            struct ebb__ckpt_manifest **out,
                            struct ebb__ckpt_error *err);

/* Checks what a stream saw (`sums`) against the manifest's entry `f`:
 * sizes and hashes of the stored object and of the plaintext (only the
 * plaintext's when `encrypted` is false). Returns 0 or EBB_EAUTH with
 * EBB__CKPT_MISMATCH naming the file and what differs. */
int ebb__ckpt_manifest_match(const struct ebb__ckpt_manifest_file *f, bool encrypted,
                             const struct ebb__ckpt_sums *sums,
                             struct ebb__ckpt_error *err);

/* Frees the files and their paths (not `m` itself). */
void ebb__ckpt_manifest_clear(struct ebb__ckpt_manifest *m);

/* Frees a manifest from ebb__ckpt_manifest_read(); NULL is a no-op. */
void ebb__ckpt_manifest_free(struct ebb__ckpt_manifest *m);

#endif
