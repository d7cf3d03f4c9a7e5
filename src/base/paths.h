/* Where ebb keeps its state, and the lock that lets one ebbd own it.
 *
 * The state directory holds ebb.db (the store), ebb.sock (the API socket)
 * and ebbd.lock. It is chosen, first match wins, from: an explicit
 * --state-dir, $EBB_STATE_DIR, /var/lib/ebb for root, $XDG_STATE_HOME/ebb,
 * ~/.local/state/ebb. ebbd and the ebb CLI resolve it the same way.
 */
#ifndef EBB_PATHS_H
#define EBB_PATHS_H

#include <stddef.h>

/* Resolves the state directory; `explicit_dir` may be NULL. Returns a heap
 * string (caller frees), or NULL when no home directory is known. */
char *ebb__state_dir_resolve(const char *explicit_dir);

/* Where ebb's shipped data (traces, catalog) lives: $EBB_DATA_DIR, else
 * the source tree's data/ for a program run from its build tree, else the
 * directory it was installed to. Caller frees; NULL when out of memory. */
char *ebb__data_dir(void);

/* The build tree this program was built in, when it runs from there (an
 * uninstalled build/src/ebbd), else NULL. Such a program loads the build
 * tree's plugins and the source tree's data, not what may be installed
 * (another version, or nothing). Decided from /proc/self/exe, so a copy
 * of the binary elsewhere behaves as an installed one. */
const char *ebb__uninstalled_build_root(void);

/* Creates `dir` and missing parents with mode 0700 for the last element.
 * Returns 0 or EBB_EIO/EBB_EPERM with a message in err. */
int ebb__mkdir_p(const char *dir, char *err, size_t errlen);

/* Checks that the state directory `dir` can be trusted: a directory owned
 * by this process's effective user that no one else may write into (a
 * writer could plant ebbd.lock, ebb.db or the socket). Group and others may
 * read and search it (a team's socket). Returns 0, or EBB_EPERM/EBB_EIO
 * with a message saying how to fix it in err. */
int ebb__state_dir_check(const char *dir, char *err, size_t errlen);

/* "<dir>/<name>" as a heap string, NULL on allocation failure. */
char *ebb__path_join(const char *dir, const char *name);

/* Takes the exclusive lock <dir>/ebbd.lock without blocking; a lock file
 * that is a symbolic link or not a regular file is refused (EBB_EIO), so
 * the pid is never written through a planted link. On success
 * returns an fd to keep open for the daemon's life and writes our pid into
 * the file. If another process holds it: EBB_EBUSY, with its pid in
 * *holder_pid when known (else 0). Other failures: EBB_EIO with err set. */
int ebb__state_lock(const char *dir, int *fd_out, long *holder_pid,
                    char *err, size_t errlen);

#endif
