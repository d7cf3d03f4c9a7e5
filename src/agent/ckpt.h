/* The checkpoint directory, as the agent sees it.
 *
 * A job writes each checkpoint under a name that starts with "." (a
 * temporary: ".tmp-XXXX") and renames it to its final name when complete.
 * Only entries whose names do not start with "." are complete checkpoints;
 * a checkpoint killed half-way therefore stays a temporary and is never
 * offered to the next run. Entries may be files or directories.
 *
 * These calls touch the file system synchronously: a checkpoint directory
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

/* Lists the complete checkpoints in `dir` into `*out` (replacing nothing:
 * `*out` is overwritten). Returns 0 or a negative errno (-ENOENT when the
 * directory does not exist); `*out` is empty on failure. */
int agent_ckpt_scan(const char *dir, struct agent_ckpt_list *out);

void agent_ckpt_list_free(struct agent_ckpt_list *list);

/* The newest complete checkpoint, or NULL when there is none. */
const struct agent_ckpt *agent_ckpt_latest(const struct agent_ckpt_list *list);

/* True when `list` has an entry with the same name and modification time. */
bool agent_ckpt_contains(const struct agent_ckpt_list *list,
                         const struct agent_ckpt *c);

/* Removes every temporary ("."-prefixed entry) in `dir`, recursively:
 * leftovers of a run killed while it wrote a checkpoint. Adds the number
 * removed to `*removed`. Returns 0 or the first negative errno met (it
 * goes on with the other entries). */
int agent_ckpt_remove_temporaries(const char *dir, size_t *removed);

/* Removes the oldest complete checkpoints of `list` (as scanned from `dir`)
 * so that the newest `keep` remain. Adds the number removed to `*removed`.
 * Returns 0 or the first negative errno met. */
int agent_ckpt_prune(const char *dir, const struct agent_ckpt_list *list,
                     size_t keep, size_t *removed);

/* "dir/name" in a new string (caller frees), NULL on allocation failure. */
char *agent_ckpt_path(const char *dir, const char *name);

#endif
