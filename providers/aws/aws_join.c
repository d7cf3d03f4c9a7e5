/* Replacement members (ebb_launch.join_gang, gang.restart: replace_lost):
 * a member's rank as lists read it, the ClientToken of a join, and the
 * checks that a join goes into a gang EC2 still runs, at a rank that is
 * free. aws_instances.c makes the calls. */
#include <stdio.h>
#include <string.h>

#include <ebb/buf.h>
#include <ebb/digest.h>
#include <ebb/gang.h>

#include "aws.h"
#include "aws_ec2.h"

int aws_member_rank(const struct aws_ec2_instance *i)
{
    return i->rank_tag >= 0 ? i->rank_tag : i->launch_index;
}

int aws_join_client_token(const char *token, unsigned rank, const char *lost_id,
                          char out[AWS_CLIENT_TOKEN_MAX + 1])
{
    struct ebb_buf b = {0};
    ebb_buf_printf(&b, "%s+%u+%s", token, rank, lost_id);
    char hex[EBB_SHA256_HEX_LEN];
    int rc = b.failed ? EBB_ENOMEM : ebb_sha256_hex(b.data, b.len, hex);
    ebb_buf_free(&b);
    if (rc == 0) {
        /* As many hex digits as fit after the rank. */
        int head = snprintf(out, AWS_CLIENT_TOKEN_MAX + 1, "ebb-join-%u-", rank);
        snprintf(out + head, (size_t)(AWS_CLIENT_TOKEN_MAX + 1 - head), "%.*s",
                 AWS_CLIENT_TOKEN_MAX - head, hex);
    }
    return rc;
}

static int live(const struct aws_ec2_instance *i)
{
    return strcmp(i->state, "pending") == 0 || strcmp(i->state, "running") == 0;
}

/* Whether `id` is a member of gang id `gang` at a rank other than `rank`. */
static int other_member(const char *gang, unsigned rank, const char *id)
{
    char member[sizeof(((struct aws_ec2_instance *)0)->id)];
    for (size_t k = 0; ebb_gang_member(gang, k, member, sizeof(member)) == 0; k++)
        if (k != rank && strcmp(member, id) == 0)
            return 1;
    return 0;
}

const char *aws_join_refusal(const struct aws_instance_set *set, const char *gang,
                             unsigned rank, const char *token, const char *zone,
                             const char *client_token, char *why, size_t size)
{
    const struct aws_ec2_instance *peer = NULL;
    for (size_t i = 0; i < set->n; i++) {
        const struct aws_ec2_instance *in = &set->v[i];
        if (strcmp(in->token, token) != 0 || !live(in))
            continue;
        if (aws_member_rank(in) == (int)rank &&
            strcmp(in->client_token, client_token) != 0) {
            snprintf(why, size, "its member %s still runs", in->id);
            return why;
        }
        if (peer == NULL && other_member(gang, rank, in->id))
            peer = in;
    }
    if (peer == NULL) {
        snprintf(why, size, "no other member of it runs (EC2 lists none tagged "
                 "ebb:token=%s)", token);
        return why;
    }
    if (zone[0] != '\0' && strcmp(peer->zone, zone) != 0) {
        snprintf(why, size, "the gang runs in %s, not %s", peer->zone, zone);
        return why;
    }
    return NULL;
}
