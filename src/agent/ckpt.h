/* The checkpoint directory, as the agent sees it.
 *
 * A job writes each checkpoint under a name that starts with "." (a
 * temporary: ".tmp-XXXX") and renames it to its final name when complete.
 * Only entries whose names do not start with "." are complete checkpoints;
 * a checkpoint killed half-way therefore stays a temporary and is never
 * offered to the next run. Entries may be files or directories.
 *
 * The directory is opened once (agent_dir_open_owned) and every call works
 * relative to that descriptor, so a path swapped for a link later changes
 * nothing. These calls touch the file system synchronously: a checkpoint directory
 * holds a handful of entries, and the agent has nothing else to do while
 * it reads one.
 */
#ifndef EBB_AGENT_CKPT_H
#define EBB_AGENT_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct agent_ckpt {
    char *name;             /* entry name inside the directory */
    struct timespec mtime;  /* its modification time */
};

/* Complete checkpoints, oldest first: by modification time, then name. */
struct agent_ckpt_list {
    struct agent_ckpt *items;
    size_t n;
};

/* Creates `dir` and its missing parents. Returns 0 or a negative errno. */
int agent_ckpt_mkdir(const char *dir);

/* Opens the directory `path` without following a symbolic link in its
 * last component, and checks that it belongs to this process's user (the
 * job's: the agent runs as the job's user). Returns the descriptor
 * (O_CLOEXEC), or a negative errno with a sentence in `why` (`len`
 * bytes): -ELOOP for a link, -EPERM for another user's directory. */
int agent_dir_open_owned(const char *path, char *why, size_t len);

/* Lists the complete checkpoints in the directory `dirfd` into `*out`
 * (`*out` is overwritten). Returns 0 or a negative errno; `*out` is empty
 * on failure. */
int agent_ckpt_scan(int dirfd, struct agent_ckpt_list *out);

void agent_ckpt_list_free(struct agent_ckpt_list *list);

/* The newest complete checkpoint, or NULL when there is none. */
const struct agent_ckpt *agent_ckpt_latest(const struct agent_ckpt_list *list);

/* True when `list` has an entry with the same name and modification time. */
bool agent_ckpt_contains(const struct agent_ckpt_list *list,
                         const struct agent_ckpt *c);

/* Markers. The agent removes only what it marked as its job's: entry NAME
 * is job `job_id`'s when the regular file ".ebb-checkpoint.NAME" beside it
 * belongs to this process's user and holds the job id. A directory may
 * hold anything else (a user's dot-files, another job's checkpoints):
 * none of it is ever removed. Nothing here follows a symbolic link. */
#define AGENT_CKPT_MARK ".ebb-checkpoint."

/* Marks entry `name` of `dirfd` as job `job_id`'s (once: an existing
 * marker is left as it is). Returns 0 or a negative errno. */
int agent_ckpt_mark(int dirfd, const char *name, const char *job_id);

/* While the job runs: marks each of its temporaries ("."-prefixed
 * entries other than markers) as `job_id`'s, and removes markers of
 * `job_id` whose entry is gone (a temporary renamed to its final name). */
void agent_ckpt_mark_temporaries(int dirfd, const char *job_id);

/* Removes every temporary of `dirfd` marked as `job_id`'s, recursively:
 * leftovers of a run killed while it wrote a checkpoint. Adds the number
 * removed to `*removed`. Returns 0 or the first negative errno met (it
 * goes on with the other entries). */
int agent_ckpt_remove_temporaries(int dirfd, const char *job_id, size_t *removed);

/* Whether entry `name` of `dirfd` is marked as `job_id`'s. */
bool agent_ckpt_is_marked(int dirfd, const char *name, const char *job_id);

/* Removes the oldest complete checkpoints of `list` (as scanned from
 * `dirfd`) marked as `job_id`'s, so that the newest `keep` marked ones
 * remain besides the `n_spare` names of `spare` (NULL entries ignored),
 * which are never removed and not counted: a gang's resume point, the
 * checkpoint being stored. Unmarked entries are never removed. Adds the
 * number removed to `*removed`. Returns 0 or the first negative errno
 * met. */
int agent_ckpt_prune(int dirfd, const struct agent_ckpt_list *list, size_t keep,
                     const char *job_id, const char *const *spare, size_t n_spare,
                     size_t *removed);

/* "dir/name" in a new string (caller frees), NULL on allocation failure. */
char *agent_ckpt_path(const char *dir, const char *name);

#endif
