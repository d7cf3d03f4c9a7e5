/* Replacement members of local gangs (ebb_launch.join_gang): which gang
 * and rank a join goes into, and why one is refused. local.c starts the
 * member. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "local.h"

int local_join_target(struct local *l, const struct ebb_launch *req, unsigned *size,
                      struct local_inst **at)
{
    struct local_inst *g = NULL;
    if (req->count > 1)
        return ebb_gang_join_refuse(l->host, req, "a join starts one member, not %u", req->count);
    size_t n = ebb_gang_size(req->join_gang);
    for (size_t k = 0; k < n && k < EBB_GANG_MAX; k++) {
        char id[sizeof(g->id)];
        struct local_inst *m = ebb_gang_member(req->join_gang, k, id, sizeof(id)) == 0
                                   ? local_find(l, id, 1)
                                   : NULL;
        if (m != NULL && g != NULL && strcmp(m->token, g->token) != 0)
            return ebb_gang_join_refuse(l->host, req, "it names members of different gangs");
        g = m != NULL ? m : g;
    }
    if (g == NULL)
        return ebb_gang_join_refuse(l->host, req, "no member of it is here");
    if (g->size < 2)
        return ebb_gang_join_refuse(l->host, req, "%s is a single instance, not a gang", g->id);
    if (strcmp(req->token, g->token) != 0)
        return ebb_gang_join_refuse(l->host, req, "the launch's token %s is not the gang's (%s)",
                                 req->token, g->token);
    if (req->join_rank >= g->size)
        return ebb_gang_join_refuse(l->host, req, "the gang's ranks are 0 to %u", g->size - 1);
    int runs = 0;
    *at = NULL;
    struct ebb_list *pos;
    ebb_list_foreach(pos, &l->insts) {
        struct local_inst *m = ebb_list_entry(pos, struct local_inst, node);
        if (strcmp(m->token, g->token) != 0)
            continue;
        if (m->rank == req->join_rank)
            *at = m;
        else
            runs |= local_alive(m);
    }
    if (!runs)
        return ebb_gang_join_refuse(l->host, req, "no other member of the gang runs");
    if (*at != NULL && !(*at)->joined && local_alive(*at))
        return ebb_gang_join_refuse(l->host, req, "its member %s still runs", (*at)->id);
    *size = g->size;
    return 0;
}

