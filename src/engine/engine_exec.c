/* The executor: launches and releases instances through provider plugins
 * and bills each instance into the ledger when it is gone. What providers
 * and agents report about instances is engine_events.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/job_model.h>
#include <ebb/units.h>

#include "base/log.h"
#include "engine/internal.h"
#include "market/billing.h"
#include "plugin/provider_call.h"

static const char *market_word(enum ebb_market m)
{
    return m == EBB_MARKET_SPOT ? "spot" : "on-demand";
}

void ebb__engine_describe_offer(const struct ebb__offer *o, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s %s %s", market_word(o->market), o->instance_type,
             o->zone[0] ? o->zone : o->region, o->provider);
}

static void on_backstop(struct ebb__timer *t);

void ebb__engine_attempt_init(struct ebb__job *job, struct ebb__attempt *a)
{
    ebb__timer_init(&a->backstop, on_backstop, job);
}

void ebb__engine_attempt_free(struct ebb__engine *e, struct ebb__attempt *a)
{
    ebb__timer_stop(e->opt.clock, &a->backstop);
    ebb__gang_free(a);
    free(a->instance_id);
    free(a->shadow_id);
    free(a);
}

/* The market's shadow of the attempt ends with it. */
static void release_shadow(struct ebb__job *job)
{
    struct ebb__attempt *a = job->current;
    if (a->market != NULL && a->shadow_id != NULL && !a->shadow_lost) {
        a->shadow_lost = 1;
        ebb__engine_release_aside(job->engine, a->market, a->shadow_id);
    }
}

/* ---- ledger ------------------------------------------------------------ */

struct bill_ctx {
    struct ebb__job *job;
    const struct ebb__attempt *a;
    const struct ebb__offer *o;
    ebb_time_ms from;        /* the billed node's member started then */
    int rc;
};

static int add_row(struct bill_ctx *b, const char *kind, ebb_time_ms start,
                   ebb_time_ms end, ebb_micros rate, ebb_micros amount)
{
    struct ebb__ledger_row row = {
        .job_id = b->job->id,
        .instance_token = b->a->token,
        .team = b->job->spec.team,
        .provider = b->o->provider,
        .kind = kind,
        .currency = b->o->currency,
        .note = b->o->instance_type,
        .start_at = start,
        .end_at = end,
        .rate = rate,
        .amount = amount,
    };
    b->rc = ebb__store_ledger_add(b->job->engine->opt.store, &row);
    return b->rc;
}

static int write_charge(void *arg, const struct ebb__charge *c)
{
    struct bill_ctx *b = arg;
    /* The first restart_overhead of every instance buys no progress:
     * reports count it apart from compute (restart and lost time). A
     * segment across that moment is cut there, the overhead part priced
     * at the segment's rate and the compute part the rest, so the rows
     * still add up to the segment exactly. */
    ebb_time_ms productive = b->from + b->job->spec.restart_overhead;
    if (c->end <= productive)
        return add_row(b, "overhead", c->start, c->end, c->rate, c->amount);
    if (c->start >= productive)
        return add_row(b, "compute", c->start, c->end, c->rate, c->amount);
    ebb_micros head = ebb__cost_of(c->rate, productive - c->start);
    if (head > c->amount)
        head = c->amount;
    if (add_row(b, "overhead", c->start, productive, c->rate, head) != 0)
        return b->rc;
    return add_row(b, "compute", productive, c->end, c->rate, c->amount - head);
}

/* Writes node `rank`'s ledger rows from its member's start to `end`
 * (inside the caller's transaction) and stops its billing there. Returns
 * what they came to; b->rc says whether they were written. */
static ebb_micros bill_node(struct bill_ctx *b, struct ebb__node *n, ebb_time_ms end)
{
    if (n->billed_from <= 0 || end <= n->billed_from)
        return 0;
    b->from = n->billed_from;
    n->billed_from = 0;
    return ebb__bill(b->o, b->a->billing, b->from, end, write_charge, b);
}

ebb_micros ebb__engine_bill_node(struct ebb__job *job, unsigned rank, ebb_time_ms end)
{
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    const struct ebb__offer *o = &e->market.offers[a->offer];
    struct ebb__store *s = e->opt.store;
    struct bill_ctx b = {job, a, o, 0, 0};
    ebb_time_ms from = a->nodes[rank].billed_from;
    int rc = ebb__store_begin(s);
    ebb_micros total = rc == 0 ? bill_node(&b, &a->nodes[rank], end) : 0;
    if (rc == 0)
        rc = b.rc;
    if (rc == 0)
        rc = ebb__store_commit(s);
    if (rc != 0) {
        ebb__store_rollback(s);
        a->nodes[rank].billed_from = from; /* billed with the others at the end */
        ebb__error("job %s: cannot bill node %u of %s: %s", job->id, rank, a->token,
                   ebb__store_errmsg(s));
        return 0;
    }
    ebb__engine_add_spend(job, total, o->currency);
    if (end > from)
        e->market.offers[a->offer].instance_hours += (double)(end - from) / EBB_MS_PER_HOUR;
    return total;
}

/* Bills the attempt up to `end`, records the instance as ended and drops
 * it from the job. */
void ebb__engine_finish_attempt(struct ebb__job *job, ebb_time_ms end,
                           const char *state, const char *why)
{
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    const struct ebb__offer *o = &e->market.offers[a->offer];
    struct ebb__store *s = e->opt.store;
    struct bill_ctx b = {job, a, o, 0, 0};
    int rc = ebb__store_begin(s);
    ebb_micros total = 0;
    double node_hours = 0;
    /* A gang bills each node (one set of rows per node), each from its
     * member's start: a replaced node's from its replacement's. */
    for (unsigned r = 0; rc == 0 && b.rc == 0 && a->launched && r < a->n_nodes; r++) {
        if (a->nodes[r].billed_from > 0 && end > a->nodes[r].billed_from)
            node_hours += (double)(end - a->nodes[r].billed_from) / EBB_MS_PER_HOUR;
        total += bill_node(&b, &a->nodes[r], end);
    }
    if (rc == 0)
        rc = b.rc;
    if (rc == 0)
        rc = ebb__store_instance_update(s, a->token, state, NULL, 0, end, why);
    if (rc == 0)
        rc = ebb__store_commit(s);
    if (rc != 0) {
        ebb__store_rollback(s);
        ebb__error("job %s: cannot record the end of %s: %s", job->id, a->token,
                   ebb__store_errmsg(s));
    }
    ebb__engine_add_spend(job, total, o->currency);
    struct ebb__offer *held = &e->market.offers[a->offer];
    held->n_running -= a->n_nodes;
    e->market.version++;
    held->instance_hours += node_hours;
    size_t offer = a->offer;
    release_shadow(job);
    ebb__engine_attempt_free(e, a);
    job->current = NULL;
    /* Spot capacity this instance held is free again: jobs waiting for it
     * ("ask again on the next market event") must hear of it, and so must
     * those of its team that a quota held back. */
    if (held->market == EBB_MARKET_SPOT)
        ebb__engine_wake_offer(e, offer, job);
    ebb__engine_quota_freed(job);
}

/* After an instance is gone: go where the release said, or re-plan. */
void ebb__engine_after_instance(struct ebb__job *job)
{
    enum ebb__job_state next = job->after_release;
    size_t launch = job->launch_next;
    job->after_release = EBB__JOB_WAITING;
    job->launch_next = SIZE_MAX;
    if (ebb__job_state_terminal(job->state))
        return;
    if (job->release_failed_start) {
        job->release_failed_start = 0;
        ebb__engine_start_failed(job, job->after_reason);
        return;
    }
    if (launch != SIZE_MAX) {
        ebb__engine_launch(job, launch, job->after_reason);
        return;
    }
    if (next == EBB__JOB_WAITING && job->retry_wait > 0) {
        job->retry_at = ebb__clock_now(job->engine->opt.clock) + job->retry_wait;
        job->retry_wait = 0;
        ebb__engine_wait_to_retry(job, job->after_reason);
        return;
    }
    if (next != EBB__JOB_WAITING) {
        ebb__engine_set_state(job, next, "%s", job->after_reason);
        if (ebb__job_state_terminal(next))
            return;
        /* Paused for another job's place in its team's quota: it stays
         * paused until it resumes (engine_quota.c). */
        if (next == EBB__JOB_PAUSED && job->paused_for != NULL) {
            ebb__engine_mark_dirty(job);
            return;
        }
    }
    ebb__engine_set_state(job, EBB__JOB_WAITING, "instance released; "
                          "waiting for the policy");
    ebb__engine_mark_dirty(job);
}

/* ---- launch ------------------------------------------------------------ */

static void on_launched(void *arg, int status, const struct ebb_instance *inst)
{
    struct ebb__job *job = arg;
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    if (status == EBB_ECANCELED || a == NULL)
        return;
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    if (status != 0) {
        char what[160];
        ebb__engine_describe_offer(&e->market.offers[a->offer], what, sizeof(what));
        if (ebb__store_instance_update(e->opt.store, a->token, "failed", NULL, 0,
                                       now, ebb_strerror(status)) != 0)
            ebb__error("job %s: %s", job->id, ebb__store_errmsg(e->opt.store));
        e->market.offers[a->offer].n_running -= a->n_nodes;
        e->market.version++;
        /* A pool without capacity stays out of the policy's choice for a
         * while, so it picks another zone or type instead of asking again. */
        if (status == EBB_ENOCAPACITY)
            e->market.offers[a->offer].unavailable_until =
                now + EBB__NO_CAPACITY_PAUSE;
        release_shadow(job);
        ebb__engine_attempt_free(e, a);
        job->current = NULL;
        ebb__engine_quota_freed(job);
        /* The provider may not run the job as its user: asking again
         * changes nothing, so the job fails and says why. */
        if (status == EBB_EPERM) {
            ebb__engine_set_state(job, EBB__JOB_FAILED, "launch on %s refused: "
                                  "ebbd may not run the job as uid %lld there "
                                  "(see ebbd's log and docs/security.md)", what,
                                  (long long)ebb__engine_job_run_uid(job));
            return;
        }
        /* Without capacity, choose again now among the other offers (the
         * pool stays out of the choice for a while). Other failures count
         * as failed starts: tried again later and later, then the job
         * fails, so a provider that refuses every launch neither spins
         * the planner nor keeps the job waiting for ever. */
        if (status == EBB_ENOCAPACITY) {
            ebb__engine_set_state(job, EBB__JOB_WAITING, "launch on %s failed: %s",
                                  what, ebb_strerror(status));
            ebb__engine_mark_dirty(job);
            return;
        }
        char why[256];
        snprintf(why, sizeof(why), "launch on %s failed: %s", what, ebb_strerror(status));
        ebb__engine_start_failed(job, why);
        return;
    }
    a->launched = 1;
    a->instance_id = strdup(inst->id ? inst->id : "");
    a->billing = inst->billing;
    a->launched_at = inst->launched_at > 0 ? inst->launched_at : now;
    for (unsigned r = 0; r < a->n_nodes; r++)
        a->nodes[r].billed_from = a->launched_at;
    if (ebb__store_instance_update(e->opt.store, a->token, "launching",
                                   a->instance_id, a->launched_at, 0, NULL) != 0)
        ebb__error("job %s: %s", job->id, ebb__store_errmsg(e->opt.store));
}

struct ebb_job_model ebb__engine_job_model(const struct ebb__job *job,
                                           const struct ebb__attempt *a, int shadow)
{
    return (struct ebb_job_model){
        .struct_size = sizeof(struct ebb_job_model),
        .work_remaining = shadow ? INT64_MAX / 4 : job->work_total - job->work_saved,
        /* The speed the engine plans with (learned, else the catalog's):
         * a quote's engine that starts with ebbd's learned speeds then
         * simulates the job as fast as it really runs there. */
        .speed = ebb__engine_speed(job, a->offer, NULL),
        .restart_overhead = job->spec.restart_overhead,
        .checkpoint_every = shadow ? 0 : ebb__engine_every_on(job, a->offer),
        .checkpoint_grace = job->spec.checkpoint.grace,
    };
}

static int issue_launch(struct ebb__job *job, const struct ebb__provider_call *c)
{
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    const struct ebb__offer *o = &e->market.offers[a->offer];
    int shadow = c->shadow;
    /* The whole gang, or the one member replacing a lost node. */
    int join = ebb__gang_replacing(a);
    unsigned first = join >= 0 ? (unsigned)join : 0;
    unsigned count = join >= 0 ? 1 : a->n_nodes;
    /* Each node's agent has its own enrolment token (a gang member's
     * names its rank). */
    char (*enrol)[EBB__BEARER_SIZE + sizeof(EBB__ENROL_PREFIX)] =
        calloc(count, sizeof(*enrol));
    const char **enrols = calloc(count, sizeof(*enrols));
    if (enrol == NULL || enrols == NULL) {
        free(enrol);
        free(enrols);
        return EBB_ENOMEM;
    }
    for (unsigned i = 0; i < count; i++) {
        char agent_token[EBB__AGENT_TOKEN_SIZE];
        ebb__gang_agent_token(a, first + i, agent_token, sizeof(agent_token));
        snprintf(enrol[i], sizeof(enrol[i]), EBB__ENROL_PREFIX "%s.%s", agent_token,
                 a->nodes[first + i].agent_secret);
        enrols[i] = enrol[i];
    }
    int agents = !shadow && e->opt.agent_url != NULL;
    struct ebb_job_model model = ebb__engine_job_model(job, a, shadow);
    struct ebb_launch req = {
        .struct_size = sizeof(req),
        .token = a->token,
        .job_id = job->id,
        .provider = o->provider,
        .region = o->region,
        .zone = o->zone,
        .instance_type = o->instance_type,
        .market = o->market,
        .currency = o->currency,
        .count = count,
        .agent_url = shadow ? NULL : e->opt.agent_url,
        .agent_token = agents && count == 1 ? enrol[0] : NULL,
        .agent_tokens = agents && count > 1 ? enrols : NULL,
        .argv = shadow ? NULL : (const char *const *)job->spec.argv,
        .argc = shadow ? 0 : job->spec.argc,
        .model = &model,
        .agent_tls_pin = shadow ? NULL : e->opt.agent_tls_pin,
        .agent_tls_ca = shadow ? NULL : e->opt.agent_tls_ca,
        .run_uid = ebb__engine_job_run_uid(job),
        .join_gang = join < 0 ? NULL : shadow ? a->shadow_id : a->instance_id,
        .join_rank = first,
    };
    int rc = ebb__provider_launch(c->slot->plugin->name, c->slot->plugin->provider,
                                  c->slot->self, &req, c->cb, job);
    free(enrol);
    free(enrols);
    return rc;
}

static void launch_failed(struct ebb__job *job, const struct ebb__provider_call *c,
                          int status)
{
    c->cb(job, status, NULL);
}

/* Asks `slot` to launch the job's current attempt once the instance row is
 * committed (durable intent before action); `cb` hears how it went. A
 * shadow launch asks the market for the instance's availability only: a
 * job that never ends and never checkpoints, and no agent. */
static void launch_on(struct ebb__job *job, struct ebb__plugin_slot *slot,
                      int shadow, ebb_launch_cb cb)
{
    struct ebb__provider_call c = {
        .job = job,
        .needs_commit = 1,
        .slot = slot,
        .shadow = shadow,
        .cb = cb,
        .issue = issue_launch,
        .failed = launch_failed,
    };
    ebb__engine_call_after_commit(job->engine, &c);
}

static void on_shadow_launched(void *arg, int status, const struct ebb_instance *inst)
{
    struct ebb__job *job = arg;
    struct ebb__attempt *a = job->current;
    if (status == EBB_ECANCELED || a == NULL)
        return;
    if (status == 0) {
        a->shadow_id = strdup(inst->id ? inst->id : "");
        if (a->shadow_id == NULL)
            status = EBB_ENOMEM;
        else if (ebb__store_instance_shadow(job->engine->opt.store, a->token,
                                            a->shadow_id) != 0)
            ebb__error("job %s: %s", job->id, ebb__store_errmsg(job->engine->opt.store));
    }
    if (status == 0)
        launch_on(job, a->provider, 0, on_launched);
    else
        on_launched(job, status, NULL);
}

/* A shadow launched again for an attempt taken back after a restart: the
 * market forgot its instances, the runner did not. */
static void on_shadow_relaunched(void *arg, int status, const struct ebb_instance *inst)
{
    struct ebb__job *job = arg;
    struct ebb__attempt *a = job->current;
    if (status == EBB_ECANCELED || a == NULL || a->market == NULL)
        return;
    if (status != 0) {
        ebb__warn("job %s: the market cannot model %s again (%s); it runs on "
                  "without preemption notices", job->id, a->token,
                  ebb_strerror(status));
        return;
    }
    free(a->shadow_id);
    a->shadow_id = strdup(inst->id ? inst->id : "");
}

void ebb__engine_relaunch_shadow(struct ebb__job *job)
{
    launch_on(job, job->current->market, 1, on_shadow_relaunched);
}

/* ---- a lost node's replacement (replace_lost) --------------------------- */

/* Puts member `id` in gang id *ids at `rank` (kept in the instance's row
 * by `record`). Returns 0 or EBB_ENOMEM. */
static int splice_member(char **ids, unsigned rank, const char *id)
{
    char *joined = ebb__gang_splice(*ids, rank, id);
    if (joined == NULL)
        return EBB_ENOMEM;
    free(*ids);
    *ids = joined;
    return 0;
}

/* The replacement could not be launched: the gang restarts whole, from
 * the checkpoint every node writes now. */
static void replacement_failed(struct ebb__job *job, int rank, int status)
{
    char reason[192];
    snprintf(reason, sizeof(reason), "node %d's replacement could not be launched "
             "(%s); the gang resumes whole from its checkpoint", rank, ebb_strerror(status));
    job->current->nodes[rank].replacing_at = 0;
    ebb__engine_release(job, EBB__JOB_WAITING, SIZE_MAX, reason);
}

static void on_member_launched(void *arg, int status, const struct ebb_instance *inst);

/* A replacement member's launch answered, on the market's shadow
 * (`shadow`) or the runner: its id goes in the gang's at its rank; the
 * shadow's answer launches the runner's member next. */
static void member_launched(struct ebb__job *job, int status,
                            const struct ebb_instance *inst, int shadow)
{
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    int rank = a != NULL ? ebb__gang_replacing(a) : -1;
    if (status == EBB_ECANCELED || rank < 0 || a->stop_sent || a->terminating)
        return;
    char **ids = shadow ? &a->shadow_id : &a->instance_id;
    if (status == 0 && splice_member(ids, (unsigned)rank, inst->id ? inst->id : "") != 0)
        status = EBB_ENOMEM;
    if (status != 0) {
        replacement_failed(job, rank, status);
        return;
    }
    int rc = shadow ? ebb__store_instance_shadow(e->opt.store, a->token, a->shadow_id)
                    : ebb__store_instance_update(e->opt.store, a->token, NULL,
                                                 a->instance_id, 0, 0, NULL);
    if (rc != 0)
        ebb__error("job %s: %s", job->id, ebb__store_errmsg(e->opt.store));
    if (shadow) {
        launch_on(job, a->provider, 0, on_member_launched);
        return;
    }
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    a->nodes[rank].billed_from = inst->launched_at > 0 ? inst->launched_at : now;
    ebb__info("job %s: node %d's replacement %s is up", job->id, rank, inst->id);
}

static void on_member_launched(void *arg, int status, const struct ebb_instance *inst)
{
    member_launched(arg, status, inst, 0);
}

static void on_shadow_member_launched(void *arg, int status, const struct ebb_instance *inst)
{
    member_launched(arg, status, inst, 1);
}

void ebb__engine_launch_member(struct ebb__job *job)
{
    struct ebb__attempt *a = job->current;
    if (a->market != NULL)
        launch_on(job, a->market, 1, on_shadow_member_launched);
    else
        launch_on(job, a->provider, 0, on_member_launched);
}

void ebb__engine_launch(struct ebb__job *job, size_t offer, const char *reason)
{
    struct ebb__engine *e = job->engine;
    job->paused_for = NULL; /* it resumes */
    const struct ebb__offer *o = &e->market.offers[offer];
    struct ebb__plugin_slot *slot = ebb__registry_provider(e->opt.registry, o->plugin);
    ebb_time_ms now = ebb__clock_now(e->opt.clock);
    const char *missing = NULL;
    struct ebb__plugin_slot *runner =
        slot != NULL ? ebb__engine_runner(e, o->plugin, &missing) : NULL;
    if (slot == NULL || slot->self == NULL || missing != NULL) {
        ebb__engine_set_state(job, EBB__JOB_WAITING, "provider %s is not loaded",
                              missing ? missing : o->plugin);
        return;
    }
    struct ebb__attempt *a = calloc(1, sizeof(*a));
    unsigned nodes = (unsigned)ebb__job_nodes(job);
    if (a == NULL || ebb__gang_nodes_alloc(a, nodes) != 0) {
        free(a);
        return;
    }
    for (unsigned r = 0; r < nodes; r++) {
        struct ebb__node *n = &a->nodes[r];
        if (ebb__random_hex(n->agent_secret, sizeof(n->agent_secret)) != 0 ||
            ebb__enrol_secret_hash(n->agent_secret, n->agent_hash) != 0) {
            ebb__gang_free(a);
            free(a);
            ebb__engine_set_state(job, EBB__JOB_WAITING, "cannot draw random bytes "
                                  "for the agent's token");
            return;
        }
    }
    job->attempts++;
    snprintf(a->token, sizeof(a->token), "%s-a%u", job->id, job->attempts);
    a->offer = offer;
    a->provider = runner != NULL ? runner : slot;
    a->market = runner != NULL ? slot : NULL;
    a->requested_at = now;
    a->work_base = job->work_saved;
    ebb__engine_attempt_init(job, a);
    job->current = a;
    e->market.offers[offer].n_running += nodes;
    e->market.version++;

    /* Intent first: the row with its token is committed before the
     * provider hears of the launch, so a crash in between is reconciled
     * by token instead of launching twice. */
    const struct ebb__market_step *step = ebb__offer_at(o, now);
    char hashes[EBB__JOB_NODES_MAX * 66];
    ebb__gang_hashes(a, hashes, sizeof(hashes));
    struct ebb__instance_row row = {
        .token = a->token,
        .job_id = job->id,
        .provider = a->provider->plugin->name,
        .region = o->region,
        .zone = o->zone,
        .instance_type = o->instance_type,
        .market = o->market,
        .requested_at = now,
        .price = step ? step->price : 0,
        .currency = o->currency,
        .market_plugin = o->plugin,
        .product = o->product,
        .agent_token_hash = hashes,
    };
    if (ebb__store_instance_insert(e->opt.store, &row) != 0) {
        ebb__error("job %s: cannot record launch intent: %s", job->id,
                   ebb__store_errmsg(e->opt.store));
        e->market.offers[offer].n_running -= nodes;
        e->market.version++;
        ebb__engine_attempt_free(e, a);
        job->current = NULL;
        return;
    }
    char what[160];
    ebb__engine_describe_offer(o, what, sizeof(what));
    ebb__engine_set_state(job, EBB__JOB_LAUNCHING, "%s (launching %s)",
                          reason && reason[0] ? reason : "policy decision", what);
    if (a->market != NULL)
        launch_on(job, a->market, 1, on_shadow_launched);
    else
        launch_on(job, a->provider, 0, on_launched);
}

/* ---- release ----------------------------------------------------------- */

static void on_terminated(void *arg, int status)
{
    struct ebb__job *job = arg;
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    if (status == EBB_ECANCELED || a == NULL)
        return;
    if (status != 0 && status != EBB_ENOTFOUND) {
        /* The instance may still run, and bill: it stays the job's until
         * the provider says it is gone, and is asked again (the backstop
         * timer is free once the attempt terminates). */
        a->terminate_failures++;
        ebb_dur_ms wait = ebb__engine_retry_after(a->terminate_failures);
        ebb__warn("job %s: terminate %s: %s; asking again in %lld s", job->id,
                  a->instance_id, ebb_strerror(status), (long long)(wait / 1000));
        ebb__timer_start(e->opt.clock, &a->backstop,
                         ebb__clock_now(e->opt.clock) +
                             ebb__clock_from_real_ms(e->opt.clock, wait));
        return;
    }
    ebb__engine_finish_attempt(job, ebb__clock_now(e->opt.clock), "terminated", "released");
    ebb__engine_after_instance(job);
}

static int issue_terminate(struct ebb__job *job, const struct ebb__provider_call *c)
{
    return c->slot->plugin->provider->terminate(c->slot->self,
                                                job->current->instance_id,
                                                on_terminated, job);
}

static void terminate_failed(struct ebb__job *job, const struct ebb__provider_call *c,
                             int status)
{
    (void)c;
    on_terminated(job, status);
}

static void send_terminate(struct ebb__job *job)
{
    /* The terminate goes out even when the commit fails: an instance ebb
     * no longer wants must not keep running (and billing). */
    struct ebb__provider_call c = {
        .job = job,
        .slot = job->current->provider,
        .issue = issue_terminate,
        .failed = terminate_failed,
    };
    ebb__engine_call_after_commit(job->engine, &c);
}

void ebb__engine_terminate(struct ebb__job *job)
{
    struct ebb__attempt *a = job->current;
    if (a->terminating)
        return;
    a->terminating = 1;
    struct ebb__store *s = job->engine->opt.store;
    if (ebb__store_instance_update(s, a->token, "terminating", NULL, 0, 0, NULL) != 0)
        ebb__error("job %s: %s", job->id, ebb__store_errmsg(s));
    if (!a->launched) {
        on_terminated(job, 0);
        return;
    }
    send_terminate(job);
}

static void on_stop_delivered(void *arg, int status)
{
    struct ebb__job *job = arg;
    if (status == EBB_ECANCELED || job->current == NULL)
        return;
    if (status != 0) {
        ebb__warn("job %s: could not ask the job to checkpoint (%s); "
                  "releasing its instance", job->id, ebb_strerror(status));
        ebb__engine_terminate(job);
    }
}

/* The instance is being taken away: once it is released the job resumes
 * elsewhere from its checkpoint, counted as a preemption. */
void ebb__engine_mark_preempted(struct ebb__job *job, const char *why)
{
    struct ebb__attempt *a = job->current;
    job->preemptions++;
    job->engine->market.offers[a->offer].losses++;
    job->after_release = EBB__JOB_PREEMPTED;
    job->launch_next = SIZE_MAX;
    snprintf(job->after_reason, sizeof(job->after_reason),
             "%s; resuming from the latest checkpoint", why);
}

void ebb__engine_release(struct ebb__job *job, enum ebb__job_state after,
                         size_t launch_next, const char *reason)
{
    struct ebb__attempt *a = job->current;
    job->after_release = after;
    job->launch_next = launch_next;
    snprintf(job->after_reason, sizeof(job->after_reason), "%s",
             reason && reason[0] ? reason : "policy decision");
    if (a->stop_sent)
        return;
    a->stop_sent = 1;
    a->stop_at = ebb__clock_now(job->engine->opt.clock);
    ebb__engine_set_state(job, EBB__JOB_CHECKPOINTING, "%s: checkpointing "
                          "before the instance is released", job->after_reason);
    const struct ebb_provider *p = a->provider->plugin->provider;
    if (p->stop_job != NULL && a->launched) {
        int rc = p->stop_job(a->provider->self, a->instance_id,
                             ebb__engine_attempt_grace(job), on_stop_delivered, job);
        if (rc == 0) {
            ebb__engine_arm_grace_end(job);
            return;
        }
        ebb__warn("job %s: stop_job: %s", job->id, ebb_strerror(rc));
    }
    /* Providers whose jobs run under ebb-agent get the stop as the answer
     * to the agent's next report; until an agent is attached, the instance
     * is released and the job resumes from its last periodic checkpoint. */
    if (a->agent_seen != 0 && !a->agent_exited) {
        ebb__engine_arm_grace_end(job);
        return;
    }
    ebb__engine_terminate(job);
}

void ebb__engine_release_now(struct ebb__job *job, enum ebb__job_state after,
                             const char *reason)
{
    job->after_release = after;
    job->launch_next = SIZE_MAX;
    snprintf(job->after_reason, sizeof(job->after_reason), "%s", reason);
    if (!job->current->stop_sent) {
        job->current->stop_sent = 1;
        job->current->stop_at = ebb__clock_now(job->engine->opt.clock);
        ebb__engine_set_state(job, EBB__JOB_CHECKPOINTING, "%s: releasing "
                              "the instance at once", reason);
    }
    ebb__engine_terminate(job);
}

ebb_dur_ms ebb__engine_agent_grace(const struct ebb__job *job)
{
    const struct ebb__attempt *a = job->current;
    const struct ebb__clock *c = job->engine->opt.clock;
    ebb_dur_ms grace = ebb__engine_attempt_grace(job);
    /* Once the instance is stopping, what is left of the grace the
     * executor enforces: the stop reaches the agent with its next report. */
    if (a->stop_sent) {
        ebb_time_ms end = ebb__engine_grace_end(job), now = ebb__clock_now(c);
        grace = end > now ? end - now : 0;
    }
    return ebb__clock_real_ms(c, grace);
}

/* The instance must be gone when its grace period ends, whatever its
 * agent (or the provider simulating the job) does: the budget priced that
 * grace and no more. A timer in market time, restarted when a stop or a
 * notice moves the end earlier. */
void ebb__engine_arm_grace_end(struct ebb__job *job)
{
    struct ebb__engine *e = job->engine;
    struct ebb__attempt *a = job->current;
    ebb_time_ms end = ebb__engine_grace_end(job);
    if (a->terminating || end == INT64_MAX)
        return;
    if (ebb__timer_pending(&a->backstop) && a->backstop.due <= end)
        return;
    ebb__timer_start(e->opt.clock, &a->backstop, end);
}

static void on_backstop(struct ebb__timer *t)
{
    struct ebb__job *job = t->data;
    struct ebb__attempt *a = job->current;
    if (a == NULL)
        return;
    if (a->terminating) {
        if (a->terminate_failures > 0)
            send_terminate(job); /* a failed terminate, asked again */
        return;
    }
    /* Under notice the market takes the instance now, or took it: the job
     * resumes elsewhere, as when its agent reports a stopped job. */
    if ((a->notice || a->shadow_lost) && job->after_release == EBB__JOB_WAITING &&
        job->launch_next == SIZE_MAX)
        ebb__engine_mark_preempted(job, a->shadow_lost ? "the instance was taken away"
                                                       : "preemption notice");
    if (!a->shadow_lost)
        ebb__warn("job %s: the job did not end within its grace period; "
                  "releasing %s", job->id, a->instance_id ? a->instance_id : a->token);
    ebb__engine_terminate(job);
}
