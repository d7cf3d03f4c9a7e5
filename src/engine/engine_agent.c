/* The engine's side of the agent channel: finding the job an agent speaks
 * for, turning its reports into instance events, what to tell it, the
 * metadata endpoint's session token, and the look for agents that went
 * silent. The HTTP and JSON around it are src/daemon/agent_api.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/histogram.h"
#include "base/log.h"
#include "engine/internal.h"
#include "plugin/provider_call.h"

/* The job and node of agent token `agent_token`, or NULL. */
static struct ebb__job *job_of_agent(struct ebb__engine *e, const char *agent_token,
                                     unsigned *rank)
{
    char token[EBB__TOKEN_SIZE];
    int gang = ebb__gang_split_token(agent_token, token, rank);
    struct ebb__job *job = gang >= 0 ? ebb__engine_job_of_token(e, token) : NULL;
    /* A gang member's token names its rank; a single instance's none. */
    if (job == NULL || (gang == 1) != (job->current->n_nodes > 1) ||
        *rank >= job->current->n_nodes)
        return NULL;
    return job;
}

struct ebb__job *ebb__engine_agent_job(struct ebb__engine *e, const char *bearer,
                                       unsigned *rank)
{
    const char *dot = bearer != NULL ? strrchr(bearer, '.') : NULL;
    char token[EBB__AGENT_TOKEN_SIZE];
    if (dot == NULL || (size_t)(dot - bearer) >= sizeof(token))
        return NULL;
    memcpy(token, bearer, (size_t)(dot - bearer));
    token[dot - bearer] = '\0';
    struct ebb__job *job = job_of_agent(e, token, rank);
    if (job == NULL)
        return NULL;
    /* Only the hash is kept across restarts, so the hash is compared. */
    char hash[65];
    const char *want = job->current->nodes[*rank].agent_hash;
    if (want[0] == '\0' || ebb__agent_secret_hash(dot + 1, hash) != 0 ||
        !ebb__secret_hash_equal(hash, want))
        return NULL;
    return job;
}

/* Enrolment (docs/agent-protocol.md): the token the instance's boot data
 * carries is good once. Which kind of hash the node holds says whether
 * it was used: after the trade it holds the session secret's, which no
 * enrolment secret matches, so a second use fails here and after a
 * restart alike. `enrolled` only lets the log say which case it was. */
struct ebb__job *ebb__engine_agent_enrol(struct ebb__engine *e, const char *enrol_token,
                                         char bearer[EBB__BEARER_SIZE], int *status,
                                         char *why, size_t whylen)
{
    size_t plen = strlen(EBB__ENROL_PREFIX);
    const char *rest = enrol_token != NULL &&
                               strncmp(enrol_token, EBB__ENROL_PREFIX, plen) == 0
                           ? enrol_token + plen
                           : NULL;
    const char *dot = rest != NULL ? strrchr(rest, '.') : NULL;
    char token[EBB__AGENT_TOKEN_SIZE];
    *status = 401;
    if (dot == NULL || (size_t)(dot - rest) >= sizeof(token)) {
        snprintf(why, whylen, "not an enrolment token");
        return NULL;
    }
    memcpy(token, rest, (size_t)(dot - rest));
    token[dot - rest] = '\0';
    unsigned rank = 0;
    struct ebb__job *job = job_of_agent(e, token, &rank);
    struct ebb__attempt *a = job != NULL ? job->current : NULL;
    char hash[65];
    if (a == NULL) {
        snprintf(why, whylen, "no live instance has the token %s", token);
        return NULL;
    }
    struct ebb__node *node = &a->nodes[rank];
    if (node->agent_hash[0] == '\0' || ebb__enrol_secret_hash(dot + 1, hash) != 0 ||
        !ebb__secret_hash_equal(hash, node->agent_hash)) {
        snprintf(why, whylen, "%s: %s", token,
                 node->enrolled ? "its enrolment token was used already"
                                : "not its enrolment token, or one used already");
        return NULL;
    }
    ebb_dur_ms ttl = e->opt.agent_enrol_ttl > 0 ? e->opt.agent_enrol_ttl
                                                : EBB__ENROL_TTL_DEFAULT;
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    if (now > a->requested_at + ebb__clock_from_real_ms(e->opt.clock, ttl)) {
        snprintf(why, whylen, "%s: its enrolment token expired (good for %lld s "
                 "after the launch)", token, (long long)(ttl / EBB_MS_PER_SECOND));
        return NULL;
    }
    char secret[65], session_hash[65];
    if (ebb__random_hex(secret, sizeof(secret)) != 0 ||
        ebb__agent_secret_hash(secret, session_hash) != 0) {
        *status = 503;
        snprintf(why, whylen, "cannot draw random bytes; enrol again");
        return NULL;
    }
    /* Durable before the agent hears it: a restart must know the session.
     * The row holds every node's hash. */
    char enrol_hash[65];
    memcpy(enrol_hash, node->agent_hash, sizeof(enrol_hash));
    memcpy(node->agent_hash, session_hash, sizeof(node->agent_hash));
    char hashes[EBB__JOB_NODES_MAX * 66];
    ebb__gang_hashes(a, hashes, sizeof(hashes));
    if (ebb__store_instance_agent_hash(e->opt.store, a->token, hashes) != 0 ||
        ebb__store_flush(e->opt.store) != 0) {
        memcpy(node->agent_hash, enrol_hash, sizeof(node->agent_hash));
        *status = 503;
        snprintf(why, whylen, "cannot record the session: %s; enrol again",
                 ebb__store_errmsg(e->opt.store));
        return NULL;
    }
    node->agent_secret[0] = '\0';
    node->enrolled = 1;
    snprintf(bearer, EBB__BEARER_SIZE, "%s.%s", token, secret);
    return job;
}

/* Whether the host the agent probed meets the job's needs: "" when it
 * does, else why not. Without nvidia-smi there is nothing to judge. */
static void host_refusal(const struct ebb__job *job, const struct ebb__agent_report *r,
                         char *why, size_t len)
{
    const struct ebb__job_resources *need = &job->spec.resources;
    why[0] = '\0';
    if (!r->nvidia_smi)
        return;
    if (need->gpu_count > 0 && r->n_gpus < (size_t)need->gpu_count)
        snprintf(why, len, "the host has %zu GPUs, the job needs %d", r->n_gpus,
                 need->gpu_count);
    else if (need->gpu_model != NULL && r->gpu_model != NULL &&
             strcasestr(r->gpu_model, need->gpu_model) == NULL)
        snprintf(why, len, "the host's GPU is a %s, the job needs a %s", r->gpu_model,
                 need->gpu_model);
    else if (need->gpu_memory_gb > 0 && r->n_gpus > 0 &&
             r->gpu_memory_gb_min + 0.5 < need->gpu_memory_gb)
        snprintf(why, len, "the host's GPUs have %.0f GB, the job needs %.0f GB",
                 r->gpu_memory_gb_min, need->gpu_memory_gb);
    else if (r->n_gpus > 0 && r->pcie_width_min > 0 &&
             r->pcie_width_min < EBB__MIN_PCIE_WIDTH)
        snprintf(why, len, "the host runs a GPU on a PCIe x%d link (at least x%d "
                 "needed)", r->pcie_width_min, EBB__MIN_PCIE_WIDTH);
}

/* A host below the job's needs is released and its offer (for a
 * marketplace, the machine) left out of the choice for a day. A gang is
 * released whole. */
static void refuse_host(struct ebb__job *job, const char *why)
{
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    const struct ebb__offer *o = &e->market.offers[a->offer];
    ebb__engine_mark_host(job, ebb__clock_now(e->opt.clock));
    ebb__warn("job %s: refusing host %s (%s %s): %s", job->id,
              a->instance_id ? a->instance_id : a->token, o->instance_type,
              o->zone[0] ? o->zone : o->region, why);
    a->agent_exited = 1; /* it will not start the job: release at once */
    char reason[256];
    snprintf(reason, sizeof(reason), "host refused: %s", why);
    ebb__engine_release(job, EBB__JOB_WAITING, SIZE_MAX, reason);
}

/* A gang member's host report: the job starts on no node until every node
 * reported and the nodes are alike (docs/gangs.md). */
static void gang_host(struct ebb__job *job, unsigned rank,
                      const struct ebb__agent_report *r, struct ebb__agent_reply *reply)
{
    struct ebb__attempt *a = job->current;
    ebb__gang_note_host(a, rank, r);
    unsigned have = ebb__gang_hosts_reported(a);
    if (have < a->n_nodes) {
        reply->command = EBB__AGENT_WAIT;
        reply->retry = EBB__GANG_HOST_RETRY;
        snprintf(reply->reason, sizeof(reply->reason), "the gang is not complete: "
                 "%u of %u nodes have reported", have, a->n_nodes);
        return;
    }
    /* A new gang is checked once every node is there; a gang whose lost
     * node is being replaced, once the newcomer is. */
    int renewing = ebb__gang_replacing(a);
    if (!a->formed || renewing >= 0) {
        if (ebb__gang_check(job, a, reply->reason, sizeof(reply->reason))) {
            reply->command = EBB__AGENT_RELEASE;
            refuse_host(job, reply->reason);
            return;
        }
        if (ebb__gang_build_env(a) != 0) {
            reply->command = EBB__AGENT_WAIT;
            reply->retry = EBB__GANG_HOST_RETRY;
            snprintf(reply->reason, sizeof(reply->reason), "ebbd is out of memory");
            return;
        }
        a->formed = 1;
        if (renewing >= 0) {
            a->nodes[renewing].replacing_at = 0;
            ebb__engine_set_state(job, job->state, "node %d replaced: the gang is whole "
                                  "again", renewing);
        }
    }
    if (a->gang_env == NULL) { /* taken back after a restart, then a node asked */
        reply->command = EBB__AGENT_RELEASE;
        snprintf(reply->reason, sizeof(reply->reason), "the gang runs already");
        return;
    }
    reply->env = a->gang_env[rank];
    reply->n_env = a->n_gang_env;
}

/* What a gang member's report means for the gang's job: the event to
 * deliver, if any (0: none). A single instance's passes as it is. */
static int gang_event(struct ebb__job *job, unsigned rank, const struct ebb__agent_report *r,
                      struct ebb_instance_event *ev)
{
    struct ebb__attempt *a = job->current;
    if (a->n_nodes <= 1)
        return 1;
    switch (r->kind) {
    case EBB__AGENT_STARTED:
        /* The gang runs once its first node does (the overhead runs from
         * the launch all the same). */
        a->nodes[rank].started = 1;
        return 1;
    case EBB__AGENT_PROGRESS:
        return rank == 0; /* the ranks step together: rank 0 speaks for them */
    case EBB__AGENT_CHECKPOINT:
        return r->path != NULL && ebb__gang_checkpoint(a, rank, r->path);
    case EBB__AGENT_EXITED:
        return ebb__gang_exit(a, rank, ev->exit_status, &ev->exit_status);
    default:
        return 1;
    }
}

void ebb__engine_agent_report(struct ebb__job *job, unsigned rank,
                              const struct ebb__agent_report *r,
                              struct ebb__agent_reply *reply)
{
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    a->agent_seen = now;
    a->nodes[rank].seen = now;
    struct ebb_instance_event ev = {
        .struct_size = sizeof(struct ebb_instance_event),
        .instance_id = a->instance_id,
        .token = a->token,
        .at = now,
        .exit_status = 0,
        .rank = -1,
    };
    int deliver = 1;
    if (r->has_gpu_util)
        ebb__engine_stall_gpu(job, r->gpu_util, now);
    switch (r->kind) {
    case EBB__AGENT_STARTED:
        ev.kind = EBB_EVENT_RUNNING;
        job->start_failures = 0;
        if (r->download_bytes > 0)
            ebb__engine_transfer_download(job, r);
        break;
    case EBB__AGENT_PROGRESS:
    case EBB__AGENT_CHECKPOINT: {
        double f = r->fraction < 0 ? 0 : r->fraction > 1 ? 1 : r->fraction;
        ebb_dur_ms done = (ebb_dur_ms)llround(f * (double)job->work_total) - a->work_base;
        if (r->fraction < 0) /* a checkpoint without a fraction: the latest */
            done = a->reported_work;
        ev.kind = r->kind == EBB__AGENT_PROGRESS ? EBB_EVENT_PROGRESS
                                                 : EBB_EVENT_CHECKPOINT;
        ev.work_done = done > 0 ? done : 0;
        ev.checkpoint_path = r->path;
        if (r->kind == EBB__AGENT_PROGRESS && r->fraction >= 0 && rank == 0) {
            ebb__engine_speed_progress(job, ev.work_done, now);
            ebb__engine_stall_progress(job, ev.work_done, now);
        } else if (r->kind == EBB__AGENT_CHECKPOINT) {
            ebb__engine_speed_pause(a);
            ebb__engine_stall_alive(a, now);
        }
        if (r->kind == EBB__AGENT_CHECKPOINT && r->duration > 0 &&
            e->opt.checkpoint_durations != NULL)
            ebb__histogram_observe(e->opt.checkpoint_durations,
                                   (double)r->duration / EBB_MS_PER_SECOND);
        break;
    }
    case EBB__AGENT_NOTICE:
        ev.kind = EBB_EVENT_NOTICE;
        ev.deadline = r->deadline > 0 ? r->deadline : now;
        ev.reason = r->reason;
        break;
    case EBB__AGENT_EXITED:
        ev.kind = EBB_EVENT_EXITED;
        ev.exit_status = r->error != NULL ? EBB_EXIT_NOT_STARTED
                         : r->stopped     ? EBB_EXIT_STOPPED
                         : r->signal > 0  ? 128 + r->signal
                                          : r->status;
        ev.reason = r->error;
        break;
    default:
        deliver = 0; /* a heartbeat or host report: seen is all */
        break;
    }
    deliver = deliver && gang_event(job, rank, r, &ev);
    /* What to say is decided before the event, which may end the attempt. */
    *reply = (struct ebb__agent_reply){.command = EBB__AGENT_NONE};
    if (r->kind == EBB__AGENT_HOST) {
        host_refusal(job, r, reply->reason, sizeof(reply->reason));
        if (reply->reason[0] != '\0') {
            reply->command = EBB__AGENT_RELEASE;
            refuse_host(job, reply->reason);
            return;
        }
        if (a->n_nodes > 1 && !a->stop_sent) {
            gang_host(job, rank, r, reply);
            return;
        }
    }
    if (a->stop_sent && !a->agent_exited && !a->nodes[rank].exited &&
        r->kind != EBB__AGENT_EXITED) {
        reply->command = EBB__AGENT_STOP;
        reply->grace = ebb__engine_agent_grace(job);
        snprintf(reply->reason, sizeof(reply->reason), "%s", job->after_reason);
    }
    if (deliver && r->kind == EBB__AGENT_CHECKPOINT && r->bytes > 0)
        ebb__engine_stored_checkpoint(job, &ev, r);
    else if (deliver)
        ebb__engine_instance_event(e, a->provider->plugin->name, &ev);
}

const char *ebb__engine_imds_token(struct ebb__job *job)
{
    struct ebb__attempt *a = job->current;
    if (a->imds_token[0] == '\0' &&
        ebb__random_hex(a->imds_token, sizeof(a->imds_token)) != 0)
        return NULL;
    return a->imds_token;
}

/* ---- agents that go silent ----------------------------------------------- */

/* Instances may vanish without notice (marketplaces; a host that dies). A
 * silent agent is only a suspicion: the provider is asked, and the
 * instance counts as lost only when the provider no longer runs it. */
struct confirm {
    struct ebb__engine *e;
    char token[sizeof(((struct ebb__attempt *)0)->token)];
};

static void on_confirm_list(void *arg, int status, const struct ebb_instance *list,
                            size_t n)
{
    struct confirm *c = arg;
    struct ebb__job *job = status == EBB_ECANCELED
                               ? NULL
                               : ebb__engine_job_of_token(c->e, c->token);
    if (job == NULL || job->current->agent_exited) {
        free(c);
        return;
    }
    struct ebb__attempt *a = job->current;
    ebb_time_ms now = ebb__clock_now(c->e->opt.clock);
    a->confirming = 0;
    /* A gang listed short (a member gone) no longer has its id: lost. */
    int listed = 0;
    for (size_t i = 0; status == 0 && i < n; i++)
        if (list[i].id != NULL && a->instance_id != NULL &&
            strcmp(list[i].id, a->instance_id) == 0)
            listed = list[i].state != EBB_INSTANCE_TERMINATED && !list[i].preempted;
    if (status != 0 || listed) {
        ebb__warn("job %s: no report from the agent on %s for a while, but %s; "
                  "waiting", job->id, a->instance_id,
                  status != 0 ? "its provider cannot be asked"
                              : "its provider says it still runs");
        for (unsigned r = 0; r < a->n_nodes; r++) /* ask again after another timeout */
            if (a->nodes[r].seen != 0)
                a->nodes[r].seen = now;
        free(c);
        return;
    }
    struct ebb_instance_event ev = {
        .struct_size = sizeof(struct ebb_instance_event),
        .kind = EBB_EVENT_LOST, .instance_id = a->instance_id, .token = a->token,
        .at = now, .reason = "the agent went silent and the provider no longer "
                             "runs the instance",
    };
    ebb__engine_instance_event(c->e, a->provider->plugin->name, &ev);
    free(c);
}

static void confirm_silent(struct ebb__job *job)
{
    struct ebb__attempt *a = job->current;
    struct confirm *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return;
    c->e = job->engine;
    snprintf(c->token, sizeof(c->token), "%s", a->token);
    a->confirming = 1;
    int rc = ebb__provider_list_instances(a->provider->plugin->name,
                                          a->provider->plugin->provider,
                                          a->provider->self, on_confirm_list, c);
    if (rc != 0)
        on_confirm_list(c, rc, NULL, 0);
}

/* An agent that has not reported by the time its enrolment token expires
 * never will (it cannot start, or cannot reach ebbd): its instance only
 * bills. It is released, and counts as a failed start. */
static void release_unreported(struct ebb__job *job, ebb_dur_ms ttl)
{
    struct ebb__attempt *a = job->current;
    ebb__warn("job %s: the agent on %s never reported; releasing it", job->id,
              a->instance_id);
    job->release_failed_start = 1;
    job->after_release = EBB__JOB_WAITING;
    job->launch_next = SIZE_MAX;
    snprintf(job->after_reason, sizeof(job->after_reason), "the agent on %s "
             "never reported within %lld s of the launch (agent_api.enrol_ttl)",
             a->instance_id, (long long)(ttl / EBB_MS_PER_SECOND));
    ebb__engine_terminate(job);
}

/* A gang not complete by agent_api.gang_timeout after its launch (some
 * node never reported its host) is released whole: its nodes bill and
 * none can start the job. It counts as a failed start; what the partial
 * gang cost is in the ledger and the reason. */
static void release_incomplete_gang(struct ebb__job *job, ebb_dur_ms timeout)
{
    struct ebb__attempt *a = job->current;
    unsigned have = ebb__gang_hosts_reported(a);
    ebb__warn("job %s: the gang on %s is not complete (%u of %u nodes reported); "
              "releasing it", job->id, a->instance_id, have, a->n_nodes);
    job->release_failed_start = 1;
    job->after_release = EBB__JOB_WAITING;
    job->launch_next = SIZE_MAX;
    snprintf(job->after_reason, sizeof(job->after_reason), "the gang was not "
             "complete within %lld s of the launch (agent_api.gang_timeout): %u of "
             "%u nodes reported; the partial gang is billed",
             (long long)(timeout / EBB_MS_PER_SECOND), have, a->n_nodes);
    ebb__engine_terminate(job);
}

/* A lost node whose replacement has not joined by agent_api.gang_timeout
 * after the loss: the gang checkpoints and resumes whole. */
static void release_unreplaced(struct ebb__job *job, ebb_dur_ms timeout)
{
    int rank = ebb__gang_replacing(job->current);
    char reason[192];
    snprintf(reason, sizeof(reason), "node %d's replacement did not join within %lld s "
             "(agent_api.gang_timeout); the gang resumes whole from its checkpoint",
             rank, (long long)(timeout / EBB_MS_PER_SECOND));
    job->current->nodes[rank].replacing_at = 0;
    ebb__engine_release(job, EBB__JOB_WAITING, SIZE_MAX, reason);
}

/* Whether a lost node's replacement has been on its way for `timeout`. */
static int replacement_late(const struct ebb__attempt *a, ebb_time_ms now,
                            ebb_dur_ms timeout)
{
    int rank = ebb__gang_replacing(a);
    return rank >= 0 && now - a->nodes[rank].replacing_at > timeout;
}

/* Whether some node's agent, heard before, has been silent for `silence`. */
static int node_silent(const struct ebb__attempt *a, ebb_time_ms now, ebb_dur_ms silence)
{
    for (unsigned r = 0; r < a->n_nodes; r++)
        if (a->nodes[r].seen != 0 && !a->nodes[r].exited &&
            now - a->nodes[r].seen > silence)
            return 1;
    return 0;
}

static void on_sweep(struct ebb__timer *t)
{
    struct ebb__engine *e = t->data;
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    ebb_dur_ms silence = ebb__clock_from_real_ms(e->opt.clock,
                                                 e->opt.agent_heartbeat_timeout);
    ebb_dur_ms ttl = e->opt.agent_enrol_ttl > 0 ? e->opt.agent_enrol_ttl
                                                : EBB__ENROL_TTL_DEFAULT;
    ebb_dur_ms unreported = ebb__clock_from_real_ms(e->opt.clock, ttl);
    ebb_dur_ms gang_wall = e->opt.agent_gang_timeout > 0 ? e->opt.agent_gang_timeout
                                                         : EBB__GANG_TIMEOUT_DEFAULT;
    ebb_dur_ms gang_timeout = ebb__clock_from_real_ms(e->opt.clock, gang_wall);
    struct ebb_list *node;
    ebb_list_foreach(node, &e->jobs) {
        struct ebb__job *job = ebb_list_entry(node, struct ebb__job, node);
        struct ebb__attempt *a = job->current;
        if (a == NULL || !a->launched || a->terminating)
            continue;
        if (a->agent_seen != 0 && !a->agent_exited && !a->confirming &&
            node_silent(a, now, silence))
            confirm_silent(job);
        else if (a->n_nodes > 1 && !a->formed && !a->stop_sent &&
                 e->opt.agent_url != NULL && now - a->requested_at > gang_timeout)
            release_incomplete_gang(job, gang_wall);
        else if (!a->stop_sent && replacement_late(a, now, gang_timeout))
            release_unreplaced(job, gang_wall);
        else if (a->agent_seen == 0 && e->opt.agent_url != NULL &&
                 now - a->requested_at > unreported)
            release_unreported(job, ttl);
        else
            ebb__engine_stall_check(job, now);
    }
    ebb__engine_agent_sweep_start(e);
}

void ebb__engine_agent_sweep_start(struct ebb__engine *e)
{
    ebb_dur_ms every = ebb__clock_from_real_ms(e->opt.clock,
                                               e->opt.agent_heartbeat_timeout / 4 + 1);
    e->agent_sweep.cb = on_sweep;
    ebb__timer_start(e->opt.clock, &e->agent_sweep, ebb__clock_now(e->opt.clock) + every);
}
