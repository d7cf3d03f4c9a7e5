/* Who may do what in ebbd's API (docs/security.md): who a caller is, which
 * team a job or a schedule's run counts against, and who sees a job or a
 * schedule in full.
 *
 * One function (ebb__config_settle_team, config/teams.c) settles the team
 * for submit, schedule add and every schedule fire, so the three can
 * never disagree about membership. One list per kind says what everyone
 * may see of another's job or schedule (the redacted view); answers for
 * others keep only those keys, so a field added to a job's answer later
 * stays private until it is added here on purpose. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebb/runas.h>

#include "daemon/daemon.h"
#include "jobs/jobspec.h"

const char *ebb__daemon_user_name(int64_t uid, char *buf, size_t len)
{
    return ebb_runas_user(uid, buf, NULL, len) == 0 ? buf : NULL;
}

int ebb__daemon_is_admin(const struct ebb__daemon *d, uid_t uid)
{
    char name[256];
    return uid == 0 || uid == getuid() ||
           ebb__config_admin_named(d->config,
                                   ebb__daemon_user_name(uid, name, sizeof(name)));
}

int ebb__daemon_settle_team(const struct ebb__daemon *d, int64_t uid,
                            const char *file, int line, const char *named,
                            const char **team, struct ebb_diag *why)
{
    char name[256];
    return ebb__config_settle_team(d->config,
                                   ebb__daemon_user_name(uid, name, sizeof(name)),
                                   ebb__daemon_is_admin(d, (uid_t)uid), file,
                                   line, named, team, why);
}

int ebb__daemon_settle_job_team(const struct ebb__daemon *d, int64_t uid,
                                struct ebb__job_spec *spec, struct ebb_diag *why)
{
    const char *team = NULL;
    int rc = ebb__daemon_settle_team(d, uid, spec->file, spec->team_line,
                                     spec->team, &team, why);
    if (rc != 0 || spec->team != NULL || team == NULL)
        return rc;
    spec->team = strdup(team);
    if (spec->team != NULL)
        return 0;
    ebb_diag_set(why, NULL, 0, "out of memory");
    return EBB_ENOMEM;
}

const char *ebb__daemon_team_code(int rc)
{
    return rc == EBB_EPERM ? "forbidden" : rc == EBB_ENOMEM ? "internal" : "invalid";
}

int ebb__daemon_may_see(const struct ebb__daemon *d, uid_t uid,
                        int64_t owner, const char *team)
{
    if ((int64_t)uid == owner || ebb__daemon_is_admin(d, uid))
        return 1;
    const struct ebb__team *t =
        team != NULL && team[0] != '\0' ? ebb__config_team(d->config, team) : NULL;
    char name[256];
    return t != NULL &&
           ebb__team_has_admin(t, ebb__daemon_user_name(uid, name, sizeof(name)));
}

/* What anyone may see of another's job: the columns `ebb jobs` lists.
 * Never the spec (argv, env, workdir, checkpoint dir), its events (their
 * reasons name instances), its instances or its checkpoints. */
static const char *const job_summary[] = {
    "id", "name", "state", "policy", "owner_uid", "team", "submitted_at",
    "deadline", "work_ms", "work_done_ms", "budget_micros", "currency",
    "spent_micros", "retries", "preemptions", "updated_at", NULL,
};

/* What anyone may see of another's schedule: the columns `ebb schedule
 * list` shows, less the file it came from, and when it fires next. Never
 * its YAML (the job's argv and env), file, workdir, runs or events. */
static const char *const schedule_summary[] = {
    "id", "name", "owner_uid", "team", "cron", "timezone", "window_ms",
    "budget_micros", "currency", "missed", "created_at", "last_fire_at",
    "next_fire_at", "last_job_id", "last_job_state", "next_fires", "running",
    "loaded", NULL,
};

static int kept(const char *const *keep, const char *key)
{
    for (size_t i = 0; keep[i] != NULL; i++)
        if (strcmp(keep[i], key) == 0)
            return 1;
    return 0;
}

static void redact(json_t *o, const char *const *keep)
{
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(o, tmp, key, v) {
        if (!kept(keep, key))
            json_object_del(o, key);
    }
    json_object_set_new(o, "redacted", json_true());
}

void ebb__daemon_redact_job(json_t *job)
{
    redact(job, job_summary);
}

void ebb__daemon_redact_schedule(json_t *schedule)
{
    redact(schedule, schedule_summary);
}
