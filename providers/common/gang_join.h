/* What the cloud providers (aws, alibaba) share of replacement members
 * (ebb_launch.join_gang, gang.restart: replace_lost): the checks a join
 * passes before the cloud is asked, the ClientToken it sends, and, from
 * the gang's members as the cloud lists them, whether the gang takes the
 * member. Compiled into each of those modules. */
#ifndef PROVIDERS_GANG_JOIN_H
#define PROVIDERS_GANG_JOIN_H

#include <stddef.h>

#include <ebb/host.h>
#include <ebb/types.h>

/* The longest ClientToken EC2 and ECS take. */
#define GANG_JOIN_CLIENT_TOKEN_MAX 64

/* One instance of the gang's launch (tagged with its token) as the cloud
 * lists it. */
struct gang_join_member {
    const char *id;
    const char *zone;
    const char *client_token; /* the join that started it; "" for none */
    int rank;                 /* -1: none */
    int runs;                 /* pending or running, not being reclaimed */
};

/* The checks before the cloud is asked: one member, into a gang id of 2
 * to `max` members, at one of its ranks. Returns 0 with the ClientToken of
 * the join in `client_token`: "ebb-join-RANK-" and as many hex digits of
 * SHA-256("TOKEN+RANK+LOST") as fit in GANG_JOIN_CLIENT_TOKEN_MAX, LOST
 * being the id of the member it replaces (join_gang's at that rank), so
 * that a retried join sends the same token and the next replacement of
 * that rank another. Else EBB_EINVAL (logged) or EBB_ENOMEM. */
int gang_join_prepare(const struct ebb_host *host, const struct ebb_launch *req,
                      unsigned max, char client_token[GANG_JOIN_CLIENT_TOKEN_MAX + 1]);

/* Why the gang `req->join_gang`, whose launch's instances are v[0..n),
 * takes no member at `req->join_rank` in `req->zone` with `client_token`:
 * none of its other members runs, they run in another zone, or that
 * rank's member still runs (unless this join started it: a retry). Into
 * `why`, or NULL when it takes one. */
const char *gang_join_refusal(const struct gang_join_member *v, size_t n,
                              const struct ebb_launch *req, const char *client_token,
                              char *why, size_t size);

#endif
