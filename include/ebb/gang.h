/* Gangs: `count` instances a launch starts together as one unit
 * (docs/gangs.md). A provider that launches gangs (EBB_PROVIDER_GANGS)
 * reports one struct ebb_instance per gang whose `id` is its members'
 * ids in rank order joined by EBB_GANG_SEP; terminate() of that id ends
 * every member. A provider's own instance ids never hold the separator.
 * Each member is tagged with the launch's token and its rank, so that a
 * list after a restart finds the gang whole, or finds what is left of it.
 * Plugins link this with base. */
#ifndef EBB_GANG_H
#define EBB_GANG_H

#include <stddef.h>

#include "buf.h"
#include "common.h"
#include "host.h"
#include "types.h"

#define EBB_GANG_SEP ','
/* The most members a gang has (a job's `nodes`); a provider refuses a
 * larger ebb_launch.count with EBB_EINVAL. */
#define EBB_GANG_MAX 64

/* How many members the gang id `ids` names (1 for a plain id, 0 for ""). */
size_t ebb_gang_size(const char *ids);

/* Member `rank`'s id of gang id `ids` into out[len]. Returns 0, or -1 when
 * there is no such member or it does not fit. */
int ebb_gang_member(const char *ids, size_t rank, char *out, size_t len);

/* Whether gang launch `req` is of at most EBB_GANG_MAX members and gives
 * each its agent token (ebb_launch.agent_tokens, none empty). */
int ebb_gang_tokens_ok(const struct ebb_launch *req);

/* Logs "join of rank R into gang G refused: WHY" for replacement launch
 * `req` (ebb_launch.join_gang) and returns EBB_EINVAL: the words every
 * provider refuses a join with. */
int ebb_gang_join_refuse(const struct ebb_host *host, const struct ebb_launch *req,
                         const char *fmt, ...) EBB_PRINTF(3, 4);

/* Appends member id `id` to the gang id being built in `b`. */
void ebb_gang_append(struct ebb_buf *b, const char *id);

#endif
