/* Path names worked out as text, without asking the file system: where a
 * relative path a user wrote lands below a directory, and whether its ".."
 * components climb out of it. */
#ifndef EBB_PATHNAME_H
#define EBB_PATHNAME_H

/* Resolves `path` against `base` (an absolute directory, or NULL) by
 * text: "." and empty components go, each ".." takes back the component
 * before it. An absolute `path` ignores `base`; a relative one is joined
 * below `base`, or stays relative when base is NULL ("." when nothing is
 * left). A ".." with nothing of `path` before it to take back, which would
 * climb out of `base` (or above "/"), is refused: "ckpt/../../x" never
 * leaves the job's directory. Symbolic links are not looked at.
 * On success returns 0 and *out, a new string the caller frees. Returns
 * EBB_EINVAL for an empty path or a ".." that climbs out, EBB_ENOMEM. */
int ebb__path_resolve(const char *base, const char *path, char **out);

#endif
