/* Replacement members' checks and ClientToken, shared by the cloud
 * providers (gang_join.h). */
#include "common/gang_join.h"

#include <stdio.h>
#include <string.h>

#include <ebb/buf.h>
#include <ebb/digest.h>
#include <ebb/gang.h>

/* "ebb-join-RANK-" and the hex digits of SHA-256("TOKEN+RANK+LOST") that
 * fit. */
static int client_token_of(const char *token, unsigned rank, const char *lost,
                           char out[GANG_JOIN_CLIENT_TOKEN_MAX + 1])
{
    struct ebb_buf b = {0};
    ebb_buf_printf(&b, "%s+%u+%s", token, rank, lost);
    char hex[EBB_SHA256_HEX_LEN];
    int rc = b.failed ? EBB_ENOMEM : ebb_sha256_hex(b.data, b.len, hex);
    ebb_buf_free(&b);
    if (rc != 0)
        return rc;
    int head = snprintf(out, GANG_JOIN_CLIENT_TOKEN_MAX + 1, "ebb-join-%u-", rank);
    snprintf(out + head, (size_t)(GANG_JOIN_CLIENT_TOKEN_MAX + 1 - head), "%.*s",
             GANG_JOIN_CLIENT_TOKEN_MAX - head, hex);
    return 0;
}

int gang_join_prepare(const struct ebb_host *host, const struct ebb_launch *req,
                      unsigned max, char client_token[GANG_JOIN_CLIENT_TOKEN_MAX + 1])
{
    char why[160], lost[128];
    size_t n = ebb_gang_size(req->join_gang);
    if (req->count > 1)
        snprintf(why, sizeof(why), "a join starts one member, not %u", req->count);
    else if (n < 2 || n > max)
        snprintf(why, sizeof(why), "it is no gang of 2 to %u members", max);
    else if (req->join_rank >= n)
        snprintf(why, sizeof(why), "the gang's ranks are 0 to %zu", n - 1);
    else if (ebb_gang_member(req->join_gang, req->join_rank, lost, sizeof(lost)) != 0 ||
             lost[0] == '\0')
        snprintf(why, sizeof(why), "it has no member id at that rank");
    else
        return client_token_of(req->token, req->join_rank, lost, client_token);
    return ebb_gang_join_refuse(host, req, "%s", why);
}

/* Whether `id` is a member of gang id `gang` at a rank other than `rank`. */
static int other_member(const char *gang, unsigned rank, const char *id)
{
    char member[128];
    for (size_t k = 0; ebb_gang_member(gang, k, member, sizeof(member)) == 0; k++)
        if (k != rank && strcmp(member, id) == 0)
            return 1;
    return 0;
}

const char *gang_join_refusal(const struct gang_join_member *v, size_t n,
                              const struct ebb_launch *req, const char *client_token,
                              char *why, size_t size)
{
    const struct gang_join_member *peer = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].runs)
            continue;
        if (v[i].rank == (int)req->join_rank &&
            strcmp(v[i].client_token, client_token) != 0) {
            snprintf(why, size, "its member %s still runs", v[i].id);
            return why;
        }
        if (peer == NULL && other_member(req->join_gang, req->join_rank, v[i].id))
            peer = &v[i];
    }
    const char *zone = req->zone != NULL ? req->zone : "";
    if (peer == NULL)
        snprintf(why, size, "no other member of it runs");
    else if (zone[0] != '\0' && strcmp(peer->zone, zone) != 0)
        snprintf(why, size, "the gang runs in %s, not %s", peer->zone, zone);
    else
        return NULL;
    return why;
}
