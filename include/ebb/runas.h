/* Starting a process as a job's owner: the owner's uid, primary group and
 * supplementary groups, and no capabilities unless the owner is root.
 *
 * The local provider starts ebb-agent this way (so the agent, the job and
 * every file they create belong to the job's owner), and ebbd checks at
 * submit that it could (ebb_runas_permitted), so that a job it cannot run
 * is refused at once. Everything that may block or allocate (the user
 * database) happens in the parent, in ebb_runas_prepare(); the child of a
 * fork() calls only ebb_runas_become(), which is async-signal-safe.
 * Linux only (capget/capset, prctl). Plugins link this with base.
 */
#ifndef EBB_RUNAS_H
#define EBB_RUNAS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common.h"

/* The most supplementary groups a job's owner may be in. */
#define EBB_RUNAS_GROUPS_MAX 1024

/* Who a child becomes, filled by ebb_runas_prepare(). */
struct ebb_runas {
    uid_t uid;
    gid_t gid;                /* the owner's primary group */
    int switch_ids;           /* 1: the child changes uid, gid and groups
                               * (the owner is not this process's euid) */
    int drop_caps;            /* 1: the child ends with no capabilities
                               * (the owner is not root) */
    size_t n_groups;
    gid_t groups[EBB_RUNAS_GROUPS_MAX];
    char name[64];            /* the owner's user name */
    char home[512];           /* the owner's home directory */
};

/* Whether this process may start processes as `uid`: it is its own euid,
 * or the process holds CAP_SETUID, CAP_SETGID and CAP_KILL (to stop them
 * again) in its effective set, as read with capget(2). Returns 0, or
 * EBB_EPERM with a sentence in `why` (`len` bytes) that names the missing
 * capabilities and docs/security.md. */
int ebb_runas_permitted(int64_t uid, char *why, size_t len);

/* Fills *out for `uid` from the user database (getpwuid_r, getgrouplist).
 * Returns 0; EBB_EPERM as ebb_runas_permitted(), also for a negative
 * (unknown) uid; EBB_ENOTFOUND when no user has that uid; EBB_ENOMEM.
 * `why` says what went wrong. */
int ebb_runas_prepare(int64_t uid, struct ebb_runas *out, char *why, size_t len);

/* The uid of user `name` into *uid. Returns 0 or EBB_ENOTFOUND. */
int ebb_runas_lookup(const char *name, int64_t *uid);

/* The name and home directory of the user with `uid` (getpwuid_r) into
 * `name` and `home` (`len` bytes each; either may be NULL). Returns 0, or
 * EBB_ENOTFOUND for a negative uid or one no user has. */
int ebb_runas_user(int64_t uid, char *name, char *home, size_t len);

/* In the child of a fork(), before exec: becomes `r` (setgroups, setresgid,
 * setresuid when r->switch_ids) and then, when r->drop_caps, clears the
 * ambient, inheritable, permitted and effective capability sets.
 * Async-signal-safe. Returns 0 or a negative errno. */
int ebb_runas_become(const struct ebb_runas *r);

#endif
