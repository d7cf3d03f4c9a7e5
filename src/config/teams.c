/* Teams and admins of ebb.yaml: who is in a team, and which team a job
 * counts against (config_file.h). Pure functions of the configuration
 * and a user name; ebbd finds the name from the caller's uid. */
#include <stdio.h>
#include <string.h>

#include "config/config_file.h"

static int listed(const struct ebb_string_list *l, const char *name)
{
    for (size_t i = 0; name != NULL && i < l->n; i++)
        if (strcmp(l->items[i], name) == 0)
            return 1;
    return 0;
}

int ebb__config_admin_named(const struct ebb__config *cfg, const char *user)
{
    return listed(&cfg->admins, user);
}

int ebb__team_has_member(const struct ebb__team *t, const char *user)
{
    return listed(&t->members, user) || listed(&t->admins, user);
}

int ebb__team_has_admin(const struct ebb__team *t, const char *user)
{
    return listed(&t->admins, user);
}

int ebb__config_settle_team(const struct ebb__config *cfg, const char *user,
                            int is_admin, const char *file, int line,
                            const char *named, const char **team,
                            struct ebb_diag *why)
{
    *team = NULL;
    if (named != NULL) {
        const struct ebb__team *t = ebb__config_team(cfg, named);
        if (t == NULL) {
            if (file != NULL)
                ebb_diag_set(why, file, line, "team \"%s\" is not in ebb.yaml "
                             "(teams:)", named);
            else
                ebb_diag_set(why, NULL, 0, "job: team \"%s\" is not in "
                             "ebb.yaml (teams:)", named);
            return EBB_ENOTFOUND;
        }
        if (!ebb__team_has_member(t, user) && !is_admin) {
            ebb_diag_set(why, NULL, 0, "%s is not a member of team %s "
                         "(teams.%s.members in ebb.yaml)",
                         user ? user : "this user", named, named);
            return EBB_EPERM;
        }
        *team = t->name;
        return 0;
    }
    /* Named none: the one team the user is in, if any. In several, the
     * job must say which, or it would escape every team's cap. */
    char teams[400] = "";
    size_t at = 0, n = 0;
    for (size_t i = 0; i < cfg->n_teams; i++) {
        if (!ebb__team_has_member(&cfg->teams[i], user))
            continue;
        *team = cfg->teams[i].name;
        int w = snprintf(teams + at, sizeof(teams) - at, "%s%s",
                         n > 0 ? ", " : "", cfg->teams[i].name);
        if (w > 0 && (size_t)w < sizeof(teams) - at)
            at += (size_t)w;
        n++;
    }
    if (n <= 1)
        return 0;
    *team = NULL;
    ebb_diag_set(why, NULL, 0, "%s: %s is a member of several teams (%s); "
                 "name one with team: in the job spec", file ? file : "job",
                 user, teams);
    return EBB_EINVAL;
}
