/* Replacement members (ebb_launch.join_gang, gang.restart: replace_lost):
 * a member's rank as lists read it, and the gang's members as
 * common/gang_join.c's checks see them. aws_instances.c makes the
 * calls. */
#include <stdlib.h>
#include <string.h>

#include "aws.h"
#include "aws_ec2.h"
#include "common/gang_join.h"

int aws_member_rank(const struct aws_ec2_instance *i)
{
    return i->rank_tag >= 0 ? i->rank_tag : i->launch_index;
}

const char *aws_join_refusal(const struct aws_instance_set *set,
                             const struct ebb_launch *req, const char *client_token,
                             char *why, size_t size)
{
    struct gang_join_member *v = calloc(set->n + 1, sizeof(*v));
    if (v == NULL)
        return "out of memory";
    size_t n = 0;
    for (size_t i = 0; i < set->n; i++) {
        const struct aws_ec2_instance *in = &set->v[i];
        if (strcmp(in->token, req->token) != 0)
            continue;
        v[n++] = (struct gang_join_member){
            .id = in->id,
            .zone = in->zone,
            .client_token = in->client_token,
            .rank = aws_member_rank(in),
            .runs = strcmp(in->state, "pending") == 0 || strcmp(in->state, "running") == 0,
        };
    }
    const char *r = gang_join_refusal(v, n, req, client_token, why, size);
    free(v);
    return r;
}
