/* A team's money and its quotas in ebb.yaml (docs/budgets.md): budget,
 * max_gpus, max_burn, users, admission and fair_share. The rest of a team's keys (members,
 * admins) go through the key table in config_file.c; these need what a
 * table cannot say (a rate per hour, a mapping of members), so they are
 * read here from the team's mapping, and the table sees the mapping
 * without them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "base/cfg_table.h"
#include "base/yaml_read.h"
#include "config/config_impl.h"

static const char *const team_keys[] = {"members", "admins", "budget", "max_gpus",
                                        "max_burn", "users", "admission", "fair_share", NULL};
static const char *const own_keys[] = {"budget", "max_gpus", "max_burn", "users",
                                       "admission", "fair_share", NULL};
static const char *const user_keys[] = {"budget", "max_gpus", NULL};

/* The most GPUs a quota may name. */
#define MAX_GPUS_LIMIT 100000

static int own_key(const struct ebb__ynode *key)
{
    for (size_t k = 0; own_keys[k] != NULL; k++)
        if (ebb__yread_is_key(key, own_keys[k]))
            return 1;
    return 0;
}

int ebb__config_team_split(const struct ebb__ynode *team, const char *what,
                           struct ebb__ynode *rest, struct ebb_diag *d)
{
    *rest = *team;
    if (team->kind != EBB__YMAP)
        return 0; /* the key table says what it expected */
    int rc = ebb__yread_check_keys(team, team_keys, what, d);
    if (rc != 0)
        return rc;
    rest->n = 0;
    rest->keys = calloc(team->n + 1, sizeof(*rest->keys));
    rest->items = calloc(team->n + 1, sizeof(*rest->items));
    if (rest->keys == NULL || rest->items == NULL) {
        ebb__config_team_split_free(rest);
        return ebb__yread_nomem(d);
    }
    for (size_t i = 0; i < team->n; i++) {
        if (own_key(team->keys[i]))
            continue;
        rest->keys[rest->n] = team->keys[i];
        rest->items[rest->n++] = team->items[i];
    }
    return 0;
}

void ebb__config_team_split_free(struct ebb__ynode *rest)
{
    if (rest->kind != EBB__YMAP)
        return;
    free(rest->keys);
    free(rest->items);
    rest->keys = rest->items = NULL;
    rest->n = 0;
}

/* An amount ("40 USD"), followed by `per` ("/month", "/h"): where
 * `required`, it must be; else it may. */
static int amount_per(const struct ebb__ynode *n, const char *what,
                      const char *per, int required, const char *a_what,
                      const char *example, struct ebb_money *out,
                      struct ebb_diag *d)
{
    int rc = ebb__yread_scalar(n, what, a_what, d);
    if (rc != 0)
        return rc;
    size_t len = n->len, plen = strlen(per);
    int has = len > plen && memcmp(n->value + len - plen, per, plen) == 0;
    char why[64];
    if (!has && required) {
        snprintf(why, sizeof(why), "a rate ends in %s", per);
        return ebb__yread_not_a(n, what, a_what, why, example, d);
    }
    char text[80];
    if (has)
        len -= plen;
    if (len >= sizeof(text))
        return ebb__yread_not_a(n, what, a_what, NULL, example, d);
    memcpy(text, n->value, len);
    text[len] = '\0';
    const char *bad = NULL;
    if (ebb_parse_money_why(text, out, &bad) != 0)
        return ebb__yread_not_a(n, what, a_what, bad, example, d);
    return 0;
}

static int budget_of(const struct ebb__ynode *n, const char *what, int *has,
                     struct ebb_money *out, struct ebb_diag *d)
{
    if (n == NULL || ebb__ynode_is_null(n))
        return 0;
    *has = 1;
    return amount_per(n, what, "/month", 0, "an amount", "40 USD", out, d);
}

static int gpus_of(const struct ebb__ynode *n, const char *what, int64_t *out,
                   struct ebb_diag *d)
{
    int v = 0;
    if (n == NULL || ebb__ynode_is_null(n))
        return 0;
    int rc = ebb__yread_int(n, what, 1, MAX_GPUS_LIMIT, &v, d);
    *out = v;
    return rc;
}

/* admission: p90, the one rule there is: a submission whose p90 cost
 * (ebb plan's quote) exceeds what is left of the team's cap is refused.
 * It needs the cap it is judged against. */
static int admission_of(struct ebb__team *t, const struct ebb__ynode *n,
                        const char *what, struct ebb_diag *d)
{
    if (n == NULL || ebb__ynode_is_null(n))
        return 0;
    int rc = ebb__yread_scalar(n, what, "p90", d);
    if (rc != 0)
        return rc;
    if (strcmp(n->value, "p90") != 0)
        return ebb__yread_not_a(n, what, "an admission rule",
                                "the one rule is p90: refuse a job whose p90 "
                                "cost exceeds what is left of the budget",
                                "p90", d);
    if (!t->has_budget) {
        ebb_diag_set(d, n->file, n->line, "%s: p90 judges a job against the "
                     "team's budget, and the team has none (add budget: "
                     "2000 USD, or remove admission)", what);
        return EBB_ECONFIG;
    }
    t->admission_p90 = 1;
    return 0;
}

static int user_limits(struct ebb__team *t, const struct ebb__ynode *key,
                       const struct ebb__ynode *val, const char *what,
                       struct ebb__team_user *u, struct ebb_diag *d)
{
    char q[EBB_DIAG_QUOTE_SIZE];
    if (!ebb__team_has_member(t, key->value)) {
        ebb_diag_set(d, key->file, key->line, "%s: %s is not a member of team "
                     "%s (add them to teams.%s.members or admins)", what,
                     ebb__yread_quote(key, q, sizeof(q)), t->name, t->name);
        return EBB_ECONFIG;
    }
    char where[256];
    snprintf(where, sizeof(where), "%s.%s", what, key->value);
    int rc = ebb__yread_expect_map(val, where, d);
    if (rc == 0)
        rc = ebb__yread_check_keys(val, user_keys, where, d);
    char sub[300];
    snprintf(sub, sizeof(sub), "%s.budget", where);
    if (rc == 0)
        rc = budget_of(ebb__ymap_get(val, "budget"), sub, &u->has_budget,
                       &u->budget, d);
    snprintf(sub, sizeof(sub), "%s.max_gpus", where);
    if (rc == 0)
        rc = gpus_of(ebb__ymap_get(val, "max_gpus"), sub, &u->max_gpus, d);
    if (rc == 0 && !u->has_budget && u->max_gpus == 0) {
        ebb_diag_set(d, key->file, key->line, "%s: no limits (give budget, "
                     "max_gpus or both, e.g. {budget: 1500 USD/month, "
                     "max_gpus: 8})", where);
        rc = EBB_ECONFIG;
    }
    u->line = key->line;
    u->name = strdup(key->value);
    if (rc == 0 && u->name == NULL)
        rc = ebb__yread_nomem(d);
    return rc;
}

static int users_of(struct ebb__team *t, const struct ebb__ynode *n,
                    const char *what, struct ebb_diag *d)
{
    if (n == NULL || ebb__ynode_is_null(n))
        return 0;
    int rc = ebb__yread_expect_map(n, what, d);
    if (rc != 0 || n->n == 0)
        return rc;
    t->users = calloc(n->n, sizeof(*t->users));
    if (t->users == NULL)
        return ebb__yread_nomem(d);
    for (size_t i = 0; i < n->n && rc == 0; i++)
        rc = user_limits(t, n->keys[i], n->items[i], what, &t->users[t->n_users++], d);
    return rc;
}

int ebb__config_team_limits(struct ebb__team *t, const struct ebb__ynode *team,
                            const char *what, struct ebb_diag *d)
{
    if (team->kind != EBB__YMAP)
        return 0;
    char sub[200];
    snprintf(sub, sizeof(sub), "%s.budget", what);
    int rc = budget_of(ebb__ymap_get(team, "budget"), sub, &t->has_budget,
                       &t->budget, d);
    snprintf(sub, sizeof(sub), "%s.max_gpus", what);
    if (rc == 0)
        rc = gpus_of(ebb__ymap_get(team, "max_gpus"), sub, &t->max_gpus, d);
    const struct ebb__ynode *burn = ebb__ymap_get(team, "max_burn");
    snprintf(sub, sizeof(sub), "%s.max_burn", what);
    if (rc == 0 && burn != NULL && !ebb__ynode_is_null(burn)) {
        t->has_max_burn = 1;
        rc = amount_per(burn, sub, "/h", 1, "a spend rate", "40 USD/h",
                        &t->max_burn, d);
    }
    snprintf(sub, sizeof(sub), "%s.users", what);
    if (rc == 0)
        rc = users_of(t, ebb__ymap_get(team, "users"), sub, d);
    snprintf(sub, sizeof(sub), "%s.admission", what);
    if (rc == 0)
        rc = admission_of(t, ebb__ymap_get(team, "admission"), sub, d);
    const struct ebb__ynode *fair = ebb__ymap_get(team, "fair_share");
    snprintf(sub, sizeof(sub), "%s.fair_share", what);
    if (rc == 0 && fair != NULL && !ebb__ynode_is_null(fair))
        rc = ebb__cfg_parse_value(EBB_CFG_BOOL, fair, sub, &t->fair_share, d);
    return rc;
}

void ebb__config_team_limits_free(struct ebb__team *t)
{
    for (size_t i = 0; i < t->n_users; i++)
        free(t->users[i].name);
    free(t->users);
    t->users = NULL;
    t->n_users = 0;
}

const struct ebb__team_user *ebb__team_user(const struct ebb__team *t,
                                            const char *user)
{
    for (size_t i = 0; user != NULL && i < t->n_users; i++)
        if (strcmp(t->users[i].name, user) == 0)
            return &t->users[i];
    return NULL;
}
