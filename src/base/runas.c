/* Starting a process as a job's owner (see ebb/runas.h). */
#include <ebb/runas.h>

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* getpwuid_r's scratch space: enough for any sane passwd entry. */
#define PW_SCRATCH 4096

/* Reads (get) or sets this process's capability sets, two 32-bit words
 * each, with the raw system calls: glibc has no wrapper and libcap is not
 * worth a dependency for three bits. */
static int caps_io(int set, struct __user_cap_data_struct data[2])
{
    struct __user_cap_header_struct hdr = {
        .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0,
    };
    long rc = set ? syscall(SYS_capset, &hdr, data) : syscall(SYS_capget, &hdr, data);
    return rc == 0 ? 0 : -errno;
}

static int has_cap(const struct __user_cap_data_struct data[2], int cap)
{
    return (data[cap / 32].effective & (UINT32_C(1) << (cap % 32))) != 0;
}

int ebb_runas_permitted(int64_t uid, char *why, size_t len)
{
    if (uid < 0) {
        snprintf(why, len, "the job has no known owner to run as");
        return EBB_EPERM;
    }
    if ((uid_t)uid == geteuid())
        return 0;
    struct __user_cap_data_struct data[2] = {{0}};
    if (caps_io(0, data) == 0 && has_cap(data, CAP_SETUID) &&
        has_cap(data, CAP_SETGID) && has_cap(data, CAP_KILL))
        return 0;
    snprintf(why, len, "ebbd runs as uid %ld without CAP_SETUID, CAP_SETGID "
             "and CAP_KILL, so it cannot start (and stop) a job as uid %lld; "
             "grant them to ebbd (AmbientCapabilities= in its unit) or run "
             "it as root (see docs/security.md)", (long)geteuid(), (long long)uid);
    return EBB_EPERM;
}

int ebb_runas_lookup(const char *name, int64_t *uid)
{
    struct passwd pw, *found = NULL;
    char scratch[PW_SCRATCH];
    if (name == NULL || getpwnam_r(name, &pw, scratch, sizeof(scratch), &found) != 0 ||
        found == NULL)
        return EBB_ENOTFOUND;
    *uid = (int64_t)pw.pw_uid;
    return 0;
}

int ebb_runas_user(int64_t uid, char *name, char *home, size_t len)
{
    struct passwd pw, *found = NULL;
    char scratch[PW_SCRATCH];
    if (uid < 0 || (int64_t)(uid_t)uid != uid ||
        getpwuid_r((uid_t)uid, &pw, scratch, sizeof(scratch), &found) != 0 ||
        found == NULL)
        return EBB_ENOTFOUND;
    if (name != NULL)
        snprintf(name, len, "%s", pw.pw_name);
    if (home != NULL)
        snprintf(home, len, "%s", pw.pw_dir != NULL ? pw.pw_dir : "/");
    return 0;
}

int ebb_runas_prepare(int64_t uid, struct ebb_runas *out, char *why, size_t len)
{
    memset(out, 0, sizeof(*out));
    int rc = ebb_runas_permitted(uid, why, len);
    if (rc != 0)
        return rc;
    struct passwd pw, *found = NULL;
    char scratch[PW_SCRATCH];
    if (getpwuid_r((uid_t)uid, &pw, scratch, sizeof(scratch), &found) != 0 ||
        found == NULL) {
        snprintf(why, len, "no user has uid %lld (getpwuid)", (long long)uid);
        return EBB_ENOTFOUND;
    }
    out->uid = pw.pw_uid;
    out->gid = pw.pw_gid;
    out->switch_ids = pw.pw_uid != geteuid();
    out->drop_caps = pw.pw_uid != 0;
    snprintf(out->name, sizeof(out->name), "%s", pw.pw_name);
    snprintf(out->home, sizeof(out->home), "%s", pw.pw_dir ? pw.pw_dir : "/");
    int n = EBB_RUNAS_GROUPS_MAX;
    if (getgrouplist(pw.pw_name, pw.pw_gid, out->groups, &n) < 0) {
        snprintf(why, len, "user %s is in more than %d groups", pw.pw_name,
                 EBB_RUNAS_GROUPS_MAX);
        return EBB_EPERM;
    }
    out->n_groups = (size_t)n;
    return 0;
}

int ebb_runas_become(const struct ebb_runas *r)
{
    /* Groups before the gid, the gid before the uid: each step needs the
     * privilege the next one gives up. setres*id sets the saved ids too,
     * so there is no way back. */
    if (r->switch_ids &&
        (setgroups(r->n_groups, r->groups) != 0 ||
         setresgid(r->gid, r->gid, r->gid) != 0 ||
         setresuid(r->uid, r->uid, r->uid) != 0))
        return -errno;
    if (!r->drop_caps)
        return 0;
    /* A change of uid between non-root users keeps every capability, and
     * ambient ones survive exec: an agent started by an ebbd with
     * CAP_SETUID would hold it too. Clear them all. */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0L, 0L, 0L) != 0 &&
        errno != EINVAL)
        return -errno;
    struct __user_cap_data_struct none[2] = {{0}};
    return caps_io(1, none);
}
