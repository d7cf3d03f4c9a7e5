/* Who a job runs as, decided when it is submitted (docs/security.md, "Jobs
 * run as their owners"): its owner, the user who submitted it; or, when
 * root or an admin names one, the unprivileged user of its `run_as`. A job
 * ebbd could not start as that user on this machine is refused here, with
 * the reason, instead of failing at launch. */
#include <stdio.h>
#include <unistd.h>

#include <ebb/runas.h>

#include "daemon/daemon.h"
#include "jobs/jobspec.h"

/* Whether a loaded provider runs jobs' processes on this machine: only
 * then does ebbd itself need the rights to start them as their users. */
static int runs_here(const struct ebb__daemon *d)
{
    for (size_t i = 0; i < d->registry.n_providers; i++) {
        const struct ebb__plugin_slot *s = &d->registry.providers[i];
        if (s->self != NULL && (s->plugin->provider->flags & EBB_PROVIDER_RUNS_HERE))
            return 1;
    }
    return 0;
}

int ebb__daemon_check_run_as(const struct ebb__daemon *d, uid_t caller,
                             const struct ebb__job_spec *spec, char *why,
                             size_t len)
{
    int64_t uid = (int64_t)caller;
    if (spec->run_as != NULL) {
        if (ebb_runas_lookup(spec->run_as, &uid) != 0) {
            snprintf(why, len, "run_as: no user named %s on this machine",
                     spec->run_as);
            return EBB_EINVAL;
        }
        if (uid != (int64_t)caller && !ebb__daemon_is_admin(d, caller)) {
            snprintf(why, len, "run_as: only root or an admin (admins: in "
                     "ebb.yaml) may run a job as another user; uid %ld may "
                     "not run one as %s", (long)caller, spec->run_as);
            return EBB_EPERM;
        }
        /* Root's and ebbd's own rights go only to the jobs those users
         * submit themselves: an admin is not root. */
        if (uid != (int64_t)caller && (uid == 0 || uid == (int64_t)geteuid())) {
            snprintf(why, len, "run_as: %s is %s; run_as may name only an "
                     "unprivileged user", spec->run_as,
                     uid == 0 ? "uid 0" : "ebbd's own user");
            return EBB_EPERM;
        }
    }
    return runs_here(d) ? ebb_runas_permitted(uid, why, len) : 0;
}
