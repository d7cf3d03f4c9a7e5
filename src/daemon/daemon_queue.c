/* The `queue` API method (`ebb queue`, docs/api.md): the waiting jobs in
 * the order the engine considers them (engine_order.c: priority, fair
 * share, submit time), and for each what it waits for and the reason the
 * engine recorded when it last looked at it. Params: "team" (optional)
 * keeps one team's. A job the caller may not see in full (another's, not
 * an admin's) shows its place, id, team, state, priority and what it
 * waits for, without its name, owner, usage or reason (a reason may name
 * instances, as `jobs` redacts it). Reads the engine's memory (with one
 * ledger sum per job of a fair_share team): it runs on the loop. */
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"

static json_t *row_json(struct ebb__daemon *d, struct ebb__api_call *call,
                        struct ebb__job *job, size_t place, ebb_time_ms now)
{
    struct ebb__job_info info;
    ebb__engine_job_info(job, &info);
    struct ebb__queue_rank rank;
    ebb__engine_job_rank(job, now, &rank);
    const char *pname = ebb__job_priority_name(info.spec->priority);
    const char *kind = ebb__wait_kind_name(info.waiting_kind);
    json_t *o = json_pack("{s:I,s:s,s:o,s:s,s:i,s:o,s:I,s:o}", "place",
                          (json_int_t)place, "id", info.id, "team",
                          info.spec->team ? json_string(info.spec->team) : json_null(),
                          "state", ebb__job_state_name(info.state), "priority",
                          info.spec->priority, "priority_name",
                          pname ? json_string(pname) : json_null(), "submitted_at",
                          (json_int_t)info.submitted_at, "waiting_for",
                          kind[0] ? json_string(kind) : json_null());
    if (o == NULL)
        return NULL;
    if (!ebb__daemon_may_see(d, call->uid, info.owner_uid, info.spec->team)) {
        json_object_set_new(o, "redacted", json_true());
        return o;
    }
    json_object_set_new(o, "name", json_string(info.spec->name));
    json_object_set_new(o, "owner_uid", json_integer(info.owner_uid));
    json_object_set_new(o, "fair_share_usage", json_real(rank.usage));
    json_object_set_new(o, "waiting_reason", info.waiting_reason
                                                 ? json_string(info.waiting_reason)
                                                 : json_null());
    return o;
}

void ebb__api_queue(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    const char *want;
    if (ebb__api_team_param(d, call, &want) != 0)
        return;
    struct ebb__job **jobs = NULL;
    size_t n = 0;
    if (ebb__engine_queue(d->engine, want, &jobs, &n) != 0) {
        ebb__api_fail(call, "internal", "out of memory");
        return;
    }
    ebb_time_ms now = ebb__clock_now(&d->clock);
    json_t *rows = json_array();
    for (size_t i = 0; rows != NULL && i < n; i++) {
        json_t *row = row_json(d, call, jobs[i], i + 1, now);
        if (row == NULL || json_array_append_new(rows, row) != 0) {
            json_decref(rows);
            rows = NULL;
        }
    }
    free(jobs);
    if (rows == NULL) {
        ebb__api_fail(call, "internal", "out of memory");
        return;
    }
    ebb__api_reply(call, json_pack("{s:o}", "queue", rows));
}
