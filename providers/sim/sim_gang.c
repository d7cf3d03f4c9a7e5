/* Gangs on the sim: the `count` members of one launch, numbered one after
 * the other, each an instance of its own (its own preemptions, counted
 * against its offer's capacity), seen from outside as one instance whose
 * id joins the members' ids in rank order (ebb/gang.h). A single instance
 * is a gang of 1 with its own id. A join (ebb_launch.join_gang) starts a
 * new member, numbered as any new instance, in the rank of one that
 * ended. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/buf.h>

#include "sim.h"

/* The ids of the lead's members, all of them or the live ones. */
static char *joined(const struct sim_instance *lead, int live_only)
{
    struct ebb_buf b = {0};
    for (unsigned k = 0; k < lead->size; k++) {
        if (!live_only || !lead->members[k]->dead)
            ebb_gang_append(&b, lead->members[k]->id);
    }
    return ebb_buf_take(&b);
}

struct sim_instance *sim_gang_new(struct sim *s, const struct ebb_launch *req,
                                  const struct ebb_job_model *model,
                                  const struct sim_offer *o, unsigned count)
{
    struct sim_instance *lead = sim_instance_new(s, req, model, o, NULL, 0, 0);
    if (lead == NULL || count < 2)
        return lead;
    lead->size = count;
    lead->members = calloc(count, sizeof(*lead->members));
    if (lead->members == NULL) {
        lead->size = 1;
        sim_instance_free(s, lead);
        return NULL;
    }
    lead->members[0] = lead;
    for (unsigned k = 1; k < count; k++) {
        lead->members[k] = sim_instance_new(s, req, model, o, lead, k, k);
        if (lead->members[k] == NULL) {
            lead->size = k;
            sim_gang_discard(s, lead);
            return NULL;
        }
    }
    lead->gang_id = joined(lead, 0);
    lead->live_id = joined(lead, 0);
    if (lead->gang_id == NULL || lead->live_id == NULL) {
        sim_gang_discard(s, lead);
        return NULL;
    }
    return lead;
}

void sim_gang_discard(struct sim *s, struct sim_instance *lead)
{
    for (unsigned k = 1; lead->members != NULL && k < lead->size; k++)
        sim_instance_free(s, lead->members[k]);
    sim_instance_free(s, lead);
}

const char *sim_unit_id(const struct sim_instance *in)
{
    return in->lead->gang_id != NULL ? in->lead->gang_id : in->id;
}

/* The live id made again (out of memory: the list shows the gang as it
 * was). */
static void remake_live(struct sim_instance *lead)
{
    char *id = sim_gang_live(lead) > 0 ? joined(lead, 1) : strdup(lead->gang_id);
    if (id == NULL)
        return;
    free(lead->live_id);
    lead->live_id = id;
}

void sim_gang_member_ended(struct sim_instance *in)
{
    if (in->lead->size > 1)
        remake_live(in->lead);
}

/* Logs why a join is refused; returns EBB_EINVAL. */
int sim_gang_join_target(const struct sim *s, const struct ebb_launch *req,
                         struct sim_instance **lead, struct sim_instance **again)
{
    struct sim_instance *v[EBB_GANG_MAX];
    size_t n;
    *lead = *again = NULL;
    if (req->count > 1)
        return ebb_gang_join_refuse(s->host, req, "a join starts one member, not %u", req->count);
    if (sim_gang_find(s, req->join_gang, v, &n) != 0)
        return ebb_gang_join_refuse(s->host, req, "it names an instance the sim never started");
    struct sim_instance *g = v[0]->lead;
    for (size_t k = 1; k < n; k++) {
        if (v[k]->lead != g)
            return ebb_gang_join_refuse(s->host, req, "it names members of different gangs");
    }
    if (g->size < 2)
        return ebb_gang_join_refuse(s->host, req, "%s is a single instance, not a gang", g->id);
    if (strcmp(req->token, g->token) != 0)
        return ebb_gang_join_refuse(s->host, req, "the launch's token %s is not the gang's (%s)", req->token,
                      g->token);
    if (req->join_rank >= g->size)
        return ebb_gang_join_refuse(s->host, req, "the gang's ranks are 0 to %u", g->size - 1);
    if (sim_gang_live(g) == 0)
        return ebb_gang_join_refuse(s->host, req, "every member of the gang has ended");
    struct sim_instance *m = g->members[req->join_rank];
    if (!m->dead && !m->joined)
        return ebb_gang_join_refuse(s->host, req, "its member %s still runs", m->id);
    *lead = g;
    *again = m->dead ? NULL : m;
    return 0;
}

int sim_gang_has_room(const struct sim *s, const struct sim_instance *lead)
{
    if (lead->market != EBB_MARKET_SPOT)
        return 1;
    int32_t cap = sim_market_capacity(&s->market, lead->avail, sim_now(s));
    return cap < 0 || sim_instance_count(s, lead->avail) + 1 <= (size_t)cap;
}

void sim_gang_seat(struct sim_instance *in)
{
    struct sim_instance *lead = in->lead;
    lead->members[in->rank] = in;
    char *id = joined(lead, 0);
    if (id == NULL)
        return; /* out of memory: events name the gang as it was */
    free(lead->gang_id);
    lead->gang_id = id;
    remake_live(lead);
}

unsigned sim_gang_live(const struct sim_instance *lead)
{
    if (lead->size < 2)
        return !lead->dead;
    unsigned n = 0;
    for (unsigned k = 0; k < lead->size; k++)
        n += !lead->members[k]->dead;
    return n;
}

/* Running while every live member is; stopping once one of them had a
 * notice; terminated when none lives, preempted when one was. */
void sim_gang_view(const struct sim *s, const struct sim_instance *lead,
                   struct ebb_instance *out)
{
    int noticed = 0, preempted = 0;
    for (unsigned k = 0; k < lead->size; k++) {
        const struct sim_instance *m = lead->size > 1 ? lead->members[k] : lead;
        noticed |= !m->dead && m->noticed;
        preempted |= m->preempted;
    }
    enum ebb_instance_state st = EBB_INSTANCE_RUNNING;
    if (sim_gang_live(lead) == 0)
        st = EBB_INSTANCE_TERMINATED;
    else if (noticed)
        st = EBB_INSTANCE_STOPPING;
    *out = (struct ebb_instance){
        .struct_size = sizeof(struct ebb_instance),
        .id = lead->size > 1 ? lead->live_id : lead->id,
        .token = lead->token,
        .job_id = lead->job_id,
        .region = lead->region,
        .zone = lead->zone,
        .instance_type = lead->instance_type,
        .market = lead->market,
        .state = st,
        .launched_at = lead->launched_at,
        .preempted = st == EBB_INSTANCE_TERMINATED && preempted,
        .billing = s->billing,
    };
}

int sim_gang_find(const struct sim *s, const char *id, struct sim_instance **out,
                  size_t *n)
{
    size_t size = ebb_gang_size(id);
    *n = 0;
    if (size == 0 || size > EBB_GANG_MAX)
        return EBB_ENOTFOUND;
    for (size_t k = 0; k < size; k++) {
        char member[32];
        if (ebb_gang_member(id, k, member, sizeof(member)) != 0 ||
            (out[k] = sim_find_id(s, member)) == NULL)
            return EBB_ENOTFOUND;
    }
    *n = size;
    return 0;
}
