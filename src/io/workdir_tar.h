/* A job's workdir as a tar (libarchive, POSIX pax): packed by `ebb submit`,
 * unpacked by ebb-agent on every instance as the job's working directory.
 *
 * The tar is made the same way for the same tree (entries in byte order
 * of their names, owner 0/0 without names, modes and modification times
 * kept), so the same code packs to the same bytes and is stored once
 * (content-addressed by its SHA-256). It holds regular files and
 * directories only: a symbolic link or a special file in the workdir is
 * refused by name, never followed (leave it out with workdir_exclude).
 * Extraction refuses anything else too, and any name that is absolute,
 * holds "..", or would pass through a link on the disk.
 */
#ifndef EBB_IO_WORKDIR_TAR_H
#define EBB_IO_WORKDIR_TAR_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/common.h>

/* The largest packed workdir: 2 GiB of tar. Code, not data: data belongs
 * in the image, a volume, or a bucket the job reads itself. */
#define EBB__WORKDIR_MAX_BYTES (UINT64_C(2) << 30)
/* The most entries (files and directories) one workdir tar holds. */
#define EBB__WORKDIR_MAX_ENTRIES 1000000
/* The deepest directory nesting packed or unpacked. */
#define EBB__WORKDIR_MAX_DEPTH 128

/* Whether the packing leaves out `path` (relative to the workdir, "a/b"),
 * a directory when is_dir (everything below it then goes too). */
typedef int (*ebb__workdir_skip_fn)(void *arg, const char *path, int is_dir);

struct ebb__workdir_packed {
    uint64_t size;             /* bytes of tar written */
    unsigned char sha256[32];  /* of those bytes */
    size_t files, dirs;        /* entries packed */
};

/* Packs directory `dir` into `out_fd` (written from its offset on),
 * leaving out what `skip` says (may be NULL), at most `max_bytes` of tar.
 * Returns 0 with *res filled, or EBB_EINVAL (a link or special file, a
 * file that changed while packed, too big, too many or too deep: what and
 * where in err), EBB_EIO (with the path and errno's text), EBB_ENOMEM. */
int ebb__workdir_pack(const char *dir, int out_fd, ebb__workdir_skip_fn skip, void *arg,
                      uint64_t max_bytes, struct ebb__workdir_packed *res, char *err,
                      size_t errlen);

/* Unpacks the tar read from `in_fd` into the existing, empty directory
 * `dest`, at most `max_bytes` of file contents. Every entry must be a
 * regular file or a directory with a relative name without ".." parts;
 * none may pass through a link. Modes keep their permission bits (no
 * set-id), files belong to the caller. Returns 0, or EBB_EINVAL (a
 * refused entry, named) / EBB_EIO with err set; `dest` may then hold part
 * of the tree, which the caller removes. */
int ebb__workdir_extract(int in_fd, const char *dest, uint64_t max_bytes, char *err,
                         size_t errlen);

#endif
