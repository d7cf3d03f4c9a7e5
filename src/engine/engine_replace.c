/* gang.restart: replace_lost (docs/gangs.md): a notice or loss of one node
 * of a running gang, rank 0 excepted, replaces that node alone while the
 * others run on, their job rejoined by the newcomer through its own
 * rendezvous. One node at a time: a loss while another is being replaced,
 * a lost rank 0 (the job's rendezvous), a provider that cannot launch one
 * member into a gang, and a replacement that fails or does not join in
 * time all restart the gang whole, from its checkpoint. */
#include <stdio.h>

#include <ebb/gang.h>
#include <ebb/units.h>

#include "base/log.h"
#include "engine/internal.h"

/* Whether `slot` (NULL: none needed) can launch one member into a gang. */
static int can_join(const struct ebb__plugin_slot *slot)
{
    const struct ebb_provider *p = slot != NULL ? slot->plugin->provider : NULL;
    return slot == NULL ||
           (EBB_HAS(struct ebb_provider, p, flags) && (p->flags & EBB_PROVIDER_GANG_REPLACE));
}

/* Whether event `ev` of the job's gang is one node's that is to be
 * replaced rather than restart the gang. */
static int replaceable(const struct ebb__job *job, const struct ebb_instance_event *ev)
{
    const struct ebb__attempt *a = job->current;
    int rank = EBB_HAS(struct ebb_instance_event, ev, rank) ? ev->rank : -1;
    int busy = ebb__gang_replacing(a);
    return job->spec.gang_restart == EBB__GANG_REPLACE_LOST && a->n_nodes > 1 &&
           a->formed && !a->stop_sent && !a->terminating && !a->notice && rank > 0 &&
           (unsigned)rank < a->n_nodes && (busy < 0 || busy == rank) &&
           can_join(a->provider) && can_join(a->market);
}

/* Ends member `rank` of gang id `ids` on `slot`, when it is there. */
static void release_member(struct ebb__engine *e, struct ebb__plugin_slot *slot,
                           const char *ids, unsigned rank)
{
    char id[256];
    if (slot != NULL && ids != NULL && ebb_gang_member(ids, rank, id, sizeof(id)) == 0)
        ebb__engine_release_aside(e, slot, id);
}

int ebb__engine_replace_notice(struct ebb__job *job, const struct ebb_instance_event *ev)
{
    if (!replaceable(job, ev))
        return 0;
    struct ebb__node *n = &job->current->nodes[ev->rank];
    if (n->replacing_at == 0 && n->started) {
        char when[40];
        ebb_format_time(ev->deadline, when, sizeof(when));
        ebb__engine_set_state(job, job->state, "node %d gets a preemption notice (it "
                              "goes at %s): it will be replaced, the other nodes run on",
                              ev->rank, when);
    }
    return 1;
}

int ebb__engine_replace_lost(struct ebb__job *job, const struct ebb_instance_event *ev)
{
    if (!replaceable(job, ev))
        return 0;
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    unsigned rank = (unsigned)ev->rank;
    if (a->nodes[rank].replacing_at != 0)
        return 1; /* the market and the runner both tell of it */
    ebb__engine_bill_node(job, rank, ev->at);
    release_member(e, a->provider, a->instance_id, rank);
    release_member(e, a->market, a->shadow_id, rank);
    job->preemptions++;
    e->market.offers[a->offer].losses++;
    char hashes[EBB__JOB_NODES_MAX * 66];
    if (ebb__gang_node_renew(a, rank, ev->at) != 0) {
        ebb__engine_release(job, EBB__JOB_WAITING, SIZE_MAX, "cannot draw random "
                            "bytes for a replacement's agent; the gang resumes whole "
                            "from its checkpoint");
        return 1;
    }
    ebb__gang_hashes(a, hashes, sizeof(hashes));
    if (ebb__store_instance_agent_hash(e->opt.store, a->token, hashes) != 0)
        ebb__error("job %s: %s", job->id, ebb__store_errmsg(e->opt.store));
    ebb__engine_set_state(job, job->state, "node %u lost (%s): replacing it, the other "
                          "nodes run on", rank, ev->reason ? ev->reason : "instance lost");
    ebb__engine_launch_member(job);
    return 1;
}
