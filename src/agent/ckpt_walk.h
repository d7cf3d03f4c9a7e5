/* A complete checkpoint's files, as the store keeps them.
 *
 * agent_ckpt_walk lists entry NAME of the checkpoint directory: itself
 * when it is a regular file, or every regular file below it when it is a
 * directory, in the manifest's order (ebb__ckpt_manifest_sort). Nothing
 * is followed: a symbolic link, a device, a FIFO or a socket anywhere in
 * it refuses the whole checkpoint, since the store could not bring it
 * back as it was.
 *
 * The way up is agent_seal_* (ckpt_seal.h), which makes the stored
 * objects as they are sent.
 *
 * agent_ckpt_unstage_* is the way back, one object at a time (as its
 * bytes arrive, so that one descriptor is held whatever the number of
 * files): each stored object is opened into a new
 * directory tree or file, every chunk verified and the manifest's sums
 * matched.
 */
#ifndef EBB_AGENT_CKPT_WALK_H
#define EBB_AGENT_CKPT_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "io/ckpt_manifest.h"
#include "io/ckpt_object.h"

/* How deep a checkpoint's directories may nest. */
#define AGENT_WALK_DEPTH_MAX 64

/* Lists entry `name` of `dirfd` into `m` (name, kind, files with path and
 * size; `m` is overwritten, free it with ebb__ckpt_manifest_clear()).
 * Returns 0, or a negative EBB_E* / errno code with a sentence in `why`:
 * EBB_EINVAL for a link or special file, a bad path, too many files. */
int agent_ckpt_walk(int dirfd, const char *name, struct ebb__ckpt_manifest *m,
                    char *why, size_t len);

/* Opens `path` ('/'-separated, relative) below `dirfd` for reading
 * without following a link in any component; regular files only.
 * Returns the descriptor or a negative errno (-ELOOP for a link, -EINVAL
 * for something else than a regular file). */
int agent_open_beneath(int dirfd, const char *path);

/* Starts unstaging `m` into the new entry `tmp_name` of `dirfd`: creates
 * it as a directory for a directory checkpoint (a file checkpoint's entry
 * is the file, made by agent_ckpt_unstage_file). Returns 0 or EBB_EIO
 * with the fault in `err`. */
int agent_ckpt_unstage_begin(int dirfd, const char *tmp_name,
                             const struct ebb__ckpt_manifest *m,
                             struct ebb__ckpt_error *err);

/* Bytes a restored file's writer lets the page cache hold before it
 * starts their write-back (and waits for the window before). */
#define AGENT_WRITE_BEHIND ((uint64_t)8 << 20)

/* Opens the stored object `rd` yields (ebb__ckpt_fd_read on a descriptor
 * at its start, or the ranged download's ring, ckpt_fetch.h) under `key`
 * (NULL: a plain copy) as file `i` of `m` below `tmp_name`, creating its
 * directories; it must match the manifest (sizes and hashes). The file is
 * written back as it is written (AGENT_WRITE_BEHIND) and fsync()ed.
 * Returns 0, or an EBB_E* code with the fault in `err` naming the file
 * (what was written stays, for the caller to remove). */
int agent_ckpt_unstage_file(int dirfd, const char *tmp_name,
                            const struct ebb__ckpt_manifest *m, size_t i,
                            const struct ebb__ckpt_key *key, ebb__ckpt_read_fn rd,
                            void *rd_arg, struct ebb__ckpt_error *err);

/* Ends: the tree's directories are flushed (fsync). Returns 0 or EBB_EIO. */
int agent_ckpt_unstage_end(int dirfd, const char *tmp_name,
                           const struct ebb__ckpt_manifest *m,
                           struct ebb__ckpt_error *err);

#endif
