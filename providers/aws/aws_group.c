/* A gang's cluster placement group: its name, derived from the launch's
 * token (so a retried launch finds the group the first one made), and its
 * best-effort deletion once its instances are gone. EC2 refuses to delete
 * a group while an instance in it is not yet terminated
 * (InvalidPlacementGroup.InUse); a deletion is then tried again on a later
 * list. Deletions are logged, never reported: a group left behind costs
 * nothing but a name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws.h"

void aws_group_name(const char *token, char *out, size_t size)
{
    snprintf(out, size, "%s%s", AWS_GROUP_PREFIX, token);
}

/* Whether a deletion of `name` is done or under way. */
static int group_deleted(const struct aws *a, const char *name)
{
    for (size_t i = 0; i < AWS_GROUPS_DELETED; i++)
        if (strcmp(a->groups_deleted[i], name) == 0)
            return 1;
    return 0;
}

void aws_group_forget(struct aws *a, const char *name)
{
    for (size_t i = 0; i < AWS_GROUPS_DELETED; i++)
        if (strcmp(a->groups_deleted[i], name) == 0)
            a->groups_deleted[i][0] = '\0';
}

struct group_del {
    struct aws *a;
    char region[32];
    char name[AWS_GROUP_NAME_MAX];
};

static void on_group_deleted(void *arg, const struct aws_reply *r)
{
    struct group_del *d = arg;
    struct aws *a = d->a;
    if (r->status == EBB_ECANCELED) {
        free(d);
        return;
    }
    if (r->status == 0 || strcmp(r->code, "InvalidPlacementGroup.Unknown") == 0) {
        a->host->log(a->host->ctx, EBB_LOG_INFO, "%s: placement group %s deleted",
                     d->region, d->name);
    } else {
        /* InUse: a member is still shutting down; a later list retries. */
        aws_group_forget(a, d->name);
        a->host->log(a->host->ctx, EBB_LOG_INFO,
                     "%s: placement group %s not deleted yet: %s%s%s", d->region,
                     d->name, r->code[0] ? r->code : ebb_strerror(r->status),
                     r->message[0] ? ": " : "", r->message);
    }
    free(d);
}

int aws_group_delete(struct aws *a, const char *region, const char *name)
{
    if (name[0] == '\0' || group_deleted(a, name))
        return 0;
    struct group_del *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return EBB_ENOMEM;
    d->a = a;
    snprintf(d->region, sizeof(d->region), "%s", region);
    snprintf(d->name, sizeof(d->name), "%s", name);
    struct ebb_buf p = {0};
    aws_param(&p, "GroupName", name);
    int rc = p.failed ? EBB_ENOMEM
                      : aws_call(a, region, "DeletePlacementGroup", p.data,
                                 on_group_deleted, d);
    ebb_buf_free(&p);
    if (rc != 0) {
        free(d);
        return rc;
    }
    snprintf(a->groups_deleted[a->next_deleted], AWS_GROUP_NAME_MAX, "%s", name);
    a->next_deleted = (a->next_deleted + 1) % AWS_GROUPS_DELETED;
    return 0;
}
