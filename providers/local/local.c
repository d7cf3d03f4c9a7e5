/* The local provider's ABI glue: configuration, the provider calls (each
 * completes from a host timer due now, never inside the call; pending ones
 * are operations on the SDK's in-flight tracker, ebb/ops.h, which destroy()
 * cancels), and a watch timer that notices instances whose processes are
 * gone. A gang's members are instances of l->insts sharing their launch's
 * token, seen from outside as one (ebb/gang.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/buf.h>

#include "local.h"

static const struct ebb_cfg_key local_keys[] = {
    {"agent", EBB_CFG_STRING, "", offsetof(struct local_cfg, agent),
     "path of the ebb-agent program (default: the one beside ebbd)"},
    {"slots", EBB_CFG_INT, "4", offsetof(struct local_cfg, slots),
     "how many instances may run at once"},
    {"watch_interval", EBB_CFG_DURATION, "1s",
     offsetof(struct local_cfg, watch_interval),
     "how often to check that instances' processes still run"},
    {"price", EBB_CFG_MONEY, "0 USD", offsetof(struct local_cfg, price),
     "what an hour of this machine costs, for its own offer"},
    {"disk", EBB_CFG_STRING, "private", offsetof(struct local_cfg, disk),
     "private (each instance gets a directory of its own, removed when it "
     "ends) or shared (instances share this machine's disk)"},
    EBB_CFG_END,
};

/* ---- deferred callbacks ---- */

/* CALL_JOIN answers a launch with one member alone (a join). */
enum call_kind { CALL_PRICES, CALL_LAUNCH, CALL_JOIN, CALL_DONE, CALL_LIST };

union local_cb {
    ebb_prices_cb prices;
    ebb_launch_cb launch;
    ebb_done_cb done;
    ebb_list_cb list;
};

struct local_call {
    struct ebb_op op; /* on l->ops; op.timer is the timer due now */
    struct local *l;
    enum call_kind kind;
    int status;
    union local_cb cb;
    void *arg;
    struct local_inst *inst; /* CALL_LAUNCH, CALL_JOIN */
};

static struct local_inst *inst_of(struct ebb_list *node)
{
    return ebb_list_entry(node, struct local_inst, node);
}

/* The id of `i`'s gang (ebb/gang.h) into b: every member's (all: as
 * launched), or those still listed (and running, with live_only); a single
 * instance's own id. Returns whether a listed member runs. */
static int gang_id(struct local *l, const struct local_inst *i, int all, int live_only,
                   struct ebb_buf *b)
{
    int alive = 0;
    for (unsigned k = 0; k < i->size; k++) {
        char id[sizeof(i->id) + 8];
        if (i->size > 1)
            snprintf(id, sizeof(id), "local-%s+%u", i->token, k);
        else
            snprintf(id, sizeof(id), "local-%s", i->token);
        int listed = all, runs = 0;
        struct ebb_list *pos;
        ebb_list_foreach(pos, &l->insts) {
            struct local_inst *m = inst_of(pos);
            if (strcmp(m->token, i->token) == 0 && m->rank == k) {
                listed = 1;
                runs = local_alive(m);
            }
        }
        alive |= runs;
        if (listed && (!live_only || runs))
            ebb_gang_append(b, id);
    }
    if (b->data == NULL)
        ebb_buf_append(b, "", 0);
    return alive;
}

static struct ebb_instance inst_view(const struct local_inst *i, const char *id, int alive)
{
    return (struct ebb_instance){
        .struct_size = sizeof(struct ebb_instance),
        .id = id,
        .token = i->token,
        .job_id = i->job_id,
        .region = "",
        .zone = "",
        .instance_type = "local",
        .market = EBB_MARKET_ON_DEMAND,
        .state = alive ? EBB_INSTANCE_RUNNING : EBB_INSTANCE_TERMINATED,
        .launched_at = i->launched_at,
        .billing = EBB_BILLING_PER_SECOND,
    };
}

/* Whether `i` is the first of its gang in l->insts (a single instance
 * always is). */
static int first_of_gang(struct local *l, const struct local_inst *i)
{
    struct ebb_list *pos;
    ebb_list_foreach(pos, &l->insts) {
        if (strcmp(inst_of(pos)->token, i->token) == 0)
            return inst_of(pos) == i;
    }
    return 0;
}

/* When `i`'s gang started: its earliest member's launch (a join's member
 * starts later than the others). */
static ebb_time_ms gang_launched_at(struct local *l, const struct local_inst *i)
{
    ebb_time_ms at = i->launched_at;
    struct ebb_list *pos;
    ebb_list_foreach(pos, &l->insts) {
        const struct local_inst *m = inst_of(pos);
        if (strcmp(m->token, i->token) == 0 && m->launched_at < at)
            at = m->launched_at;
    }
    return at;
}

/* One instance per gang: the id of its members still running (all those
 * listed, and terminated, when none runs). */
static void complete_list(struct local_call *c, int status)
{
    struct local *l = c->l;
    size_t n = 0;
    struct ebb_list *pos;
    ebb_list_foreach(pos, &l->insts)
        n++;
    struct ebb_instance *list = calloc(n ? n : 1, sizeof(*list));
    struct ebb_buf *ids = calloc(n ? n : 1, sizeof(*ids));
    size_t k = 0;
    int failed = list == NULL || ids == NULL;
    ebb_list_foreach(pos, &l->insts) {
        struct local_inst *i = inst_of(pos);
        if (failed || !first_of_gang(l, i))
            continue;
        int alive = gang_id(l, i, 0, 1, &ids[k]);
        if (!alive) {
            ebb_buf_clear(&ids[k]);
            gang_id(l, i, 0, 0, &ids[k]);
        }
        failed |= ids[k].failed;
        list[k] = inst_view(i, ids[k].data, alive);
        list[k].launched_at = gang_launched_at(l, i);
        k++;
    }
    c->cb.list(c->arg, failed ? EBB_ENOMEM : status, failed ? NULL : list,
               failed ? 0 : k);
    for (size_t j = 0; ids != NULL && j < k; j++)
        ebb_buf_free(&ids[j]);
    free(ids);
    free(list);
}

static void complete(struct local_call *c, int status)
{
    struct local *l = c->l;
    switch (c->kind) {
    case CALL_PRICES: {
        struct ebb_price p = {
            .struct_size = sizeof(struct ebb_price),
            .provider = NULL, .region = "", .zone = "", .instance_type = "local",
            .product = "", .market = EBB_MARKET_ON_DEMAND,
            .at = l->host->now(l->host->ctx), .price_per_hour = l->cfg->price.amount,
            .currency = l->cfg->price.currency, .capacity = (int32_t)l->cfg->slots,
        };
        c->cb.prices(c->arg, status, status == 0 ? &p : NULL, status == 0);
        break;
    }
    case CALL_LAUNCH:
    case CALL_JOIN: {
        struct ebb_buf id = {0};
        if (status == 0 && c->kind == CALL_JOIN)
            ebb_buf_puts(&id, c->inst->id);
        else if (status == 0)
            gang_id(l, c->inst, 1, 0, &id);
        if (id.failed)
            status = EBB_ENOMEM;
        struct ebb_instance v = status == 0 ? inst_view(c->inst, id.data, 1)
                                            : (struct ebb_instance){0};
        if (status == 0 && c->kind == CALL_LAUNCH)
            v.launched_at = gang_launched_at(l, c->inst);
        c->cb.launch(c->arg, status, status == 0 ? &v : NULL);
        /* A new instance runs from the start: its processes are up. */
        if (status == 0 && c->inst->announce) {
            c->inst->announce = 0;
            struct ebb_instance_event ev = {
                .struct_size = sizeof(struct ebb_instance_event),
                .kind = EBB_EVENT_RUNNING, .instance_id = id.data,
                .token = c->inst->token, .at = c->inst->launched_at, .rank = -1,
            };
            l->host->instance_event(l->host->ctx, &ev);
        }
        ebb_buf_free(&id);
        break;
    }
    case CALL_DONE:
        c->cb.done(c->arg, status);
        break;
    case CALL_LIST:
        complete_list(c, status);
        break;
    }
}

static void on_call_timer(void *arg)
{
    struct local_call *c = arg;
    c->op.timer = 0; /* it has fired */
    ebb_op_remove(&c->op);
    complete(c, c->status);
    free(c);
}

/* destroy(): the timer is stopped and the callback told EBB_ECANCELED. */
static void call_cancel(struct ebb_op *op)
{
    struct local_call *c = ebb_list_entry(op, struct local_call, op);
    ebb_op_remove(op);
    complete(c, EBB_ECANCELED);
    free(c);
}

static int defer(struct local *l, enum call_kind kind, int status,
                 union local_cb cb, void *arg, struct local_inst *inst)
{
    struct local_call *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return EBB_ENOMEM;
    *c = (struct local_call){.l = l, .kind = kind, .status = status, .cb = cb,
                             .arg = arg, .inst = inst};
    int64_t id = l->host->timer_start(l->host->ctx, l->host->now(l->host->ctx),
                                      on_call_timer, c);
    if (id < 0) {
        free(c);
        return (int)id;
    }
    c->op.timer = id;
    ebb_op_add(&l->ops, &c->op, call_cancel);
    return 0;
}

/* ---- instances ---- */

static int ensure_dir(struct local *l)
{
    if (l->dir == NULL)
        l->dir = l->host->plugin_dir ? l->host->plugin_dir(l->host->ctx) : NULL;
    if (l->dir == NULL)
        return EBB_EUNSUPPORTED;
    if (!l->loaded) {
        local_state_load(l);
        local_disk_sweep(l);
    }
    return 0;
}

struct local_inst *local_find(struct local *l, const char *token_or_id, int by_id)
{
    struct ebb_list *pos;
    ebb_list_foreach(pos, &l->insts) {
        struct local_inst *i = inst_of(pos);
        if (strcmp(by_id ? i->id : i->token, token_or_id) == 0)
            return i;
    }
    return NULL;
}

static size_t running(struct local *l)
{
    size_t n = 0;
    struct ebb_list *pos;
    ebb_list_foreach(pos, &l->insts)
        n += local_alive(inst_of(pos));
    return n;
}

/* Forgets an ended instance: its disk first, then its state file, so an
 * ebbd that dies between the two still finds the instance, and removes a
 * disk that is no more. */
static void forget(struct local *l, struct local_inst *inst)
{
    ebb_list_remove(&inst->node);
    local_disk_remove(l, inst->key);
    local_state_remove(l, inst);
}

static void drop(struct local *l, struct local_inst *inst)
{
    forget(l, inst);
    free(inst);
}

/* A launch of `inst`, or of its gang, not yet answered (its call's timer
 * is due), or NULL. A call's inst is never freed while it is pending:
 * terminate() detaches it first, and the watch waits for the answer. */
static struct local_call *pending_launch(struct local *l, const struct local_inst *inst)
{
    struct ebb_list *pos;
    ebb_list_foreach(pos, &l->ops.head) {
        struct local_call *c = ebb_list_entry(pos, struct local_call, op.node);
        if ((c->kind == CALL_LAUNCH || c->kind == CALL_JOIN) && c->inst != NULL &&
            strcmp(c->inst->token, inst->token) == 0)
            return c;
    }
    return NULL;
}

/* Instances whose processes died without being terminated are lost: each
 * is forgotten before its event goes out, since the engine may answer the
 * event with calls that change the list. One whose launch has not been
 * answered yet waits for the next watch: the engine hears of the instance
 * before it hears it is lost, and the answer reads the instance. Killed
 * children are reaped. */
static void on_watch(void *arg)
{
    struct local *l = arg;
    l->watch_timer = 0;
    local_reap(l);
    struct ebb_list *pos = l->insts.next;
    while (pos != &l->insts) {
        struct local_inst *dead = inst_of(pos);
        if (local_alive(dead) || pending_launch(l, dead) != NULL) {
            pos = pos->next;
            continue;
        }
        local_kill(dead); /* whatever of its tree is left */
        forget(l, dead);
        /* A gang's member is named by the gang's id and its rank. */
        struct ebb_buf id = {0};
        gang_id(l, dead, 1, 0, &id);
        struct ebb_instance_event ev = {
            .struct_size = sizeof(struct ebb_instance_event),
            .kind = EBB_EVENT_LOST, .instance_id = id.failed ? dead->id : id.data,
            .token = dead->token, .at = l->host->now(l->host->ctx),
            .reason = "the local instance's processes exited",
            .rank = dead->size > 1 ? (int32_t)dead->rank : -1,
        };
        l->host->instance_event(l->host->ctx, &ev);
        ebb_buf_free(&id);
        free(dead);
        pos = l->insts.next;
    }
    l->watch_timer = l->host->timer_start(
        l->host->ctx, l->host->now(l->host->ctx) + l->cfg->watch_interval, on_watch, l);
}

/* Who the job's processes run as: the user the request names, prepared
 * here in the parent (see ebb/runas.h). A job ebbd may not start as its
 * user is refused with EBB_EPERM, which fails the job with the reason
 * instead of retrying it. Returns 0 with *out (caller frees) or an EBB_E*
 * code, logged. */
static int become_owner(struct local *l, const struct ebb_launch *req,
                        struct ebb_runas **out)
{
    int64_t uid = EBB_HAS(struct ebb_launch, req, run_uid) ? req->run_uid : -1;
    struct ebb_runas *who = malloc(sizeof(*who));
    if (who == NULL)
        return EBB_ENOMEM;
    char why[512];
    int rc = ebb_runas_prepare(uid, who, why, sizeof(why));
    if (rc != 0) {
        l->host->log(l->host->ctx, EBB_LOG_ERROR, "job %s: %s", req->job_id, why);
        free(who);
        return rc == EBB_ENOMEM ? rc : EBB_EPERM;
    }
    *out = who;
    return 0;
}

/* Undoes member `inst` of a launch that failed: its processes, disk and
 * state file. */
static void undo(struct local *l, struct local_inst *inst)
{
    if (inst->pid > 0) {
        local_kill(inst);
        local_reap_later(l, inst->pid);
    }
    local_disk_remove(l, inst->key);
    local_state_remove(l, inst);
    free(inst);
}

/* Starts member `rank` of a gang of `size` (1: a single instance) for
 * `req`, its agent given `agent_token`, started by a join or not; its
 * state file is written. Returns 0 with *out, or an EBB_E* code (the
 * member undone). */
static int start_member(struct local *l, const struct ebb_launch *req, unsigned rank,
                        unsigned size, const char *agent_token, int joined,
                        const struct ebb_runas *who, struct local_inst **out)
{
    struct local_inst *inst = calloc(1, sizeof(*inst));
    if (inst == NULL)
        return EBB_ENOMEM;
    snprintf(inst->token, sizeof(inst->token), "%s", req->token);
    if (size > 1)
        snprintf(inst->key, sizeof(inst->key), "%s+%u", inst->token, rank);
    else
        snprintf(inst->key, sizeof(inst->key), "%s", inst->token);
    snprintf(inst->id, sizeof(inst->id), "local-%s", inst->key);
    snprintf(inst->job_id, sizeof(inst->job_id), "%s", req->job_id);
    inst->rank = rank;
    inst->size = size;
    inst->joined = joined;
    inst->launched_at = l->host->now(l->host->ctx);
    int rc = local_spawn(l, inst, req, agent_token, who);
    if (rc == 0)
        rc = local_state_save(l, inst);
    if (rc != 0) {
        undo(l, inst);
        return rc;
    }
    *out = inst;
    return 0;
}

/* Whether `req` carries an agent token for each of its `count` agents. */
static int has_agent_tokens(const struct ebb_launch *req, unsigned count)
{
    return count == 1 ? req->agent_token != NULL : ebb_gang_tokens_ok(req);
}

/* Ends member `inst` now: its processes killed, its disk and state file
 * removed. A launch of its gang not answered yet fails. */
static void end_member(struct local *l, struct local_inst *inst)
{
    local_kill(inst);
    if (inst->ours)
        local_reap_later(l, inst->pid);
    for (struct local_call *c; (c = pending_launch(l, inst)) != NULL;) {
        c->inst = NULL;
        c->status = EBB_EIO; /* terminated before its launch answered */
    }
    drop(l, inst);
}

/* A replacement member (req->join_gang): a new process tree under the key
 * of the member that ended in that rank, with its own disk and agent
 * token, answered alone. A member in that rank that still runs is
 * answered again when a join started it (the same join, repeated), and
 * refused when it is the gang's own; one whose processes are gone but
 * that the watch has not reported yet is forgotten first. */
static int local_join(struct local *l, const struct ebb_launch *req, ebb_launch_cb cb,
                      void *arg)
{
    union local_cb done = {.launch = cb};
    unsigned size = 0;
    struct local_inst *at = NULL, *inst = NULL;
    int rc = local_join_target(l, req, &size, &at);
    if (rc != 0)
        return rc;
    if (at != NULL && local_alive(at)) /* a join started it: the same again */
        return defer(l, CALL_JOIN, 0, done, arg, at);
    if (at != NULL && pending_launch(l, at) != NULL)
        return ebb_gang_join_refuse(l->host, req, "a launch of the gang has not been answered yet");
    if (at != NULL)
        end_member(l, at); /* whatever of its tree is left */
    if (running(l) + 1 > (size_t)l->cfg->slots)
        return defer(l, CALL_JOIN, EBB_ENOCAPACITY, done, arg, NULL);
    struct ebb_runas *who = NULL;
    rc = become_owner(l, req, &who);
    if (rc == 0)
        rc = start_member(l, req, req->join_rank, size, req->agent_token, 1, who, &inst);
    free(who);
    if (rc != 0)
        return defer(l, CALL_JOIN, rc, done, arg, NULL);
    ebb_list_insert_head(&l->insts, &inst->node);
    return defer(l, CALL_JOIN, 0, done, arg, inst);
}

/* A gang of `count` starts all its members or none; each takes a slot, so
 * one larger than `slots` could never start (EBB_EINVAL), and one that
 * does not fit now waits for room (EBB_ENOCAPACITY). */
static int local_launch(void *self, const struct ebb_launch *req, ebb_launch_cb cb,
                        void *arg)
{
    struct local *l = self;
    if (req->struct_size < EBB_LAUNCH_SIZE_V1)
        return EBB_EINVAL;
    int rc = ensure_dir(l);
    if (rc != 0)
        return rc;
    if (EBB_HAS(struct ebb_launch, req, join_rank) && req->join_gang != NULL)
        return req->agent_url == NULL || req->agent_token == NULL ? EBB_EINVAL
                                                                 : local_join(l, req, cb, arg);
    unsigned count = req->count > 1 ? req->count : 1;
    if (count > EBB_GANG_MAX || count > (uint64_t)l->cfg->slots)
        return EBB_EINVAL;
    if (req->agent_url == NULL || !has_agent_tokens(req, count))
        return EBB_EINVAL;
    union local_cb done = {.launch = cb};
    struct local_inst *inst = local_find(l, req->token, 0);
    if (inst != NULL) /* the same token: the same instance, as ClientToken */
        return defer(l, CALL_LAUNCH, 0, done, arg, inst);
    if (running(l) + count > (size_t)l->cfg->slots)
        return defer(l, CALL_LAUNCH, EBB_ENOCAPACITY, done, arg, NULL);
    struct ebb_runas *who = NULL;
    rc = become_owner(l, req, &who);
    if (rc != 0)
        return defer(l, CALL_LAUNCH, rc, done, arg, NULL);
    struct local_inst *members[EBB_GANG_MAX];
    unsigned started = 0;
    while (rc == 0 && started < count) {
        rc = start_member(l, req, started, count,
                          count > 1 ? req->agent_tokens[started] : req->agent_token, 0,
                          who, &members[started]);
        started += rc == 0;
    }
    free(who);
    if (rc != 0) {
        while (started > 0)
            undo(l, members[--started]);
        return defer(l, CALL_LAUNCH, rc, done, arg, NULL);
    }
    for (unsigned k = 0; k < count; k++)
        ebb_list_insert_head(&l->insts, &members[k]->node);
    members[0]->announce = 1;
    return defer(l, CALL_LAUNCH, 0, done, arg, members[0]);
}

/* A gang's id ends every member it names that is still there; one that
 * names none is not found. */
static int local_terminate(void *self, const char *instance_id, ebb_done_cb cb,
                           void *arg)
{
    struct local *l = self;
    int rc = ensure_dir(l);
    if (rc != 0)
        return rc;
    size_t n = ebb_gang_size(instance_id), found = 0;
    for (size_t k = 0; k < n && k < EBB_GANG_MAX; k++) {
        char id[sizeof(((struct local_inst *)0)->id)];
        struct local_inst *inst = ebb_gang_member(instance_id, k, id, sizeof(id)) == 0
                                      ? local_find(l, id, 1)
                                      : NULL;
        if (inst != NULL) {
            end_member(l, inst);
            found++;
        }
    }
    return defer(l, CALL_DONE, found > 0 ? 0 : EBB_ENOTFOUND,
                 (union local_cb){.done = cb}, arg, NULL);
}

static int local_list(void *self, ebb_list_cb cb, void *arg)
{
    struct local *l = self;
    int rc = ensure_dir(l);
    return rc != 0 ? rc : defer(l, CALL_LIST, 0, (union local_cb){.list = cb}, arg, NULL);
}

static int local_poll_prices(void *self, ebb_prices_cb cb, void *arg)
{
    return defer(self, CALL_PRICES, 0, (union local_cb){.prices = cb}, arg, NULL);
}

static int local_create(const struct ebb_host *host, const void *config, void **self)
{
    const struct local_cfg *cfg = config;
    if (cfg->slots < 1) {
        host->log(host->ctx, EBB_LOG_ERROR, "slots must be at least 1");
        return EBB_ECONFIG;
    }
    if (cfg->watch_interval < 100) {
        host->log(host->ctx, EBB_LOG_ERROR, "watch_interval must be at least 100ms");
        return EBB_ECONFIG;
    }
    if (strcmp(cfg->disk, "private") != 0 && strcmp(cfg->disk, "shared") != 0) {
        host->log(host->ctx, EBB_LOG_ERROR, "disk: \"%s\" is not private or shared",
                  cfg->disk);
        return EBB_ECONFIG;
    }
    struct local *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return EBB_ENOMEM;
    l->host = host;
    l->cfg = cfg;
    l->private_disks = strcmp(cfg->disk, "private") == 0;
    ebb_list_init(&l->insts);
    /* Initialised here, not on first use: terminate walks it. */
    ebb_list_init(&l->ops.head);
    l->ops.host = host;
    if (local_find_agent(l) != 0) {
        free(l);
        return EBB_ECONFIG;
    }
    l->watch_timer = host->timer_start(host->ctx, host->now(host->ctx) +
                                       cfg->watch_interval, on_watch, l);
    *self = l;
    return 0;
}

static void local_destroy(void *self)
{
    struct local *l = self;
    free(l->agent);
    free(l->reap);
    if (l->watch_timer > 0)
        l->host->timer_stop(l->host->ctx, l->watch_timer);
    ebb_ops_cancel_all(&l->ops);
    /* Instances outlive ebbd: the next one reconciles them. */
    while (!ebb_list_empty(&l->insts)) {
        struct local_inst *i = inst_of(ebb_list_first(&l->insts));
        ebb_list_remove(&i->node);
        free(i);
    }
    free(l);
}

static const struct ebb_provider local_provider = {
    .abi = EBB_PROVIDER_ABI,
    .struct_size = sizeof(struct ebb_provider),
    .name = "local",
    .description = "runs each instance as ebb-agent and its job in a process "
                   "tree on this machine",
    .config_keys = local_keys,
    .config_size = sizeof(struct local_cfg),
    .create = local_create,
    .destroy = local_destroy,
    .poll_prices = local_poll_prices,
    .launch = local_launch,
    .terminate = local_terminate,
    .list_instances = local_list,
    .flags = EBB_PROVIDER_RUNS_HERE | EBB_PROVIDER_GANGS | EBB_PROVIDER_GANG_REPLACE,
};

const struct ebb_provider *ebb_provider_entry(void)
{
    return &local_provider;
}
