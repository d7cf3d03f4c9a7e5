/* A runner for tests (run_on: {sim: runner}): it runs nothing itself and
 * has no stop_job, so ebbd treats its jobs as run by ebb-agent, and the
 * test plays the agents. Launches answer at once as running, terminates
 * answer at once, both through a host timer like a real asynchronous
 * provider; it lists what it runs and has no prices of its own. With
 * `hourly` its instances are billed as AWS spot is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/list.h>
#include <ebb/provider.h>

struct runner_cfg {
    int hourly;
};

static const struct ebb_cfg_key runner_keys[] = {
    {"hourly", EBB_CFG_BOOL, "false", offsetof(struct runner_cfg, hourly),
     "bill instances by the price at the start of each instance-hour"},
    EBB_CFG_END,
};

struct run_inst {
    struct ebb_list node;
    char id[80], token[64], job_id[48];
    ebb_time_ms launched_at;
};

enum call_kind { CALL_PRICES, CALL_LAUNCH, CALL_DONE, CALL_LIST };

struct call {
    struct ebb_list node;
    struct runner *r;
    enum call_kind kind;
    int status;
    struct run_inst *inst;  /* CALL_LAUNCH */
    int64_t timer;
    void (*cb)(void);       /* cast back by kind */
    void *arg;
};

struct runner {
    const struct ebb_host *host;
    const struct runner_cfg *cfg;
    struct ebb_list insts, calls;
};

static int runner_create(const struct ebb_host *host, const void *config, void **self)
{
    struct runner *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return EBB_ENOMEM;
    r->host = host;
    r->cfg = config;
    ebb_list_init(&r->insts);
    ebb_list_init(&r->calls);
    *self = r;
    return 0;
}

static void answer(struct call *c, int status)
{
    struct runner *r = c->r;
    ebb_list_remove(&c->node);
    switch (c->kind) {
    case CALL_PRICES:
        ((ebb_prices_cb)c->cb)(c->arg, status, NULL, 0);
        break;
    case CALL_LAUNCH: {
        struct ebb_instance in = {
            .struct_size = sizeof(in),
            .id = c->inst->id,
            .token = c->inst->token,
            .job_id = c->inst->job_id,
            .state = EBB_INSTANCE_RUNNING,
            .launched_at = c->inst->launched_at,
            .billing = r->cfg->hourly ? EBB_BILLING_HOURLY_START_PRICE
                                      : EBB_BILLING_PER_SECOND,
        };
        ((ebb_launch_cb)c->cb)(c->arg, status, status == 0 ? &in : NULL);
        break;
    }
    case CALL_DONE:
        ((ebb_done_cb)c->cb)(c->arg, status);
        break;
    case CALL_LIST: {
        struct ebb_instance list[64];
        size_t n = 0;
        struct ebb_list *pos;
        ebb_list_foreach(pos, &r->insts) {
            struct run_inst *i = ebb_list_entry(pos, struct run_inst, node);
            if (n == sizeof(list) / sizeof(list[0]))
                break;
            list[n++] = (struct ebb_instance){
                .struct_size = sizeof(list[0]), .id = i->id, .token = i->token,
                .job_id = i->job_id, .state = EBB_INSTANCE_RUNNING,
                .launched_at = i->launched_at,
            };
        }
        ((ebb_list_cb)c->cb)(c->arg, status, list, n);
        break;
    }
    }
    free(c);
}

static void on_timer(void *arg)
{
    answer(arg, ((struct call *)arg)->status);
}

static int defer(struct runner *r, enum call_kind kind, int status,
                 struct run_inst *inst, void (*cb)(void), void *arg)
{
    struct call *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return EBB_ENOMEM;
    *c = (struct call){.r = r, .kind = kind, .status = status, .inst = inst,
                       .cb = cb, .arg = arg};
    c->timer = r->host->timer_start(r->host->ctx, r->host->now(r->host->ctx),
                                    on_timer, c);
    if (c->timer < 0) {
        int rc = (int)c->timer;
        free(c);
        return rc;
    }
    ebb_list_insert_tail(&r->calls, &c->node);
    return 0;
}

static void runner_destroy(void *self)
{
    struct runner *r = self;
    while (!ebb_list_empty(&r->calls)) {
        struct call *c = ebb_list_entry(r->calls.next, struct call, node);
        r->host->timer_stop(r->host->ctx, c->timer);
        answer(c, EBB_ECANCELED);
    }
    while (!ebb_list_empty(&r->insts)) {
        struct run_inst *i = ebb_list_entry(r->insts.next, struct run_inst, node);
        ebb_list_remove(&i->node);
        free(i);
    }
    free(r);
}

static int runner_poll_prices(void *self, ebb_prices_cb cb, void *arg)
{
    return defer(self, CALL_PRICES, 0, NULL, (void (*)(void))cb, arg);
}

static int runner_launch(void *self, const struct ebb_launch *req,
                         ebb_launch_cb cb, void *arg)
{
    struct runner *r = self;
    struct run_inst *i = calloc(1, sizeof(*i));
    if (i == NULL)
        return EBB_ENOMEM;
    snprintf(i->id, sizeof(i->id), "run-%s", req->token);
    snprintf(i->token, sizeof(i->token), "%s", req->token);
    snprintf(i->job_id, sizeof(i->job_id), "%s", req->job_id);
    i->launched_at = r->host->now(r->host->ctx);
    int rc = defer(r, CALL_LAUNCH, 0, i, (void (*)(void))cb, arg);
    if (rc != 0) {
        free(i);
        return rc;
    }
    ebb_list_insert_tail(&r->insts, &i->node);
    return 0;
}

static int runner_terminate(void *self, const char *id, ebb_done_cb cb, void *arg)
{
    struct runner *r = self;
    struct ebb_list *pos;
    ebb_list_foreach(pos, &r->insts) {
        struct run_inst *i = ebb_list_entry(pos, struct run_inst, node);
        if (strcmp(i->id, id) != 0)
            continue;
        ebb_list_remove(&i->node);
        free(i);
        return defer(r, CALL_DONE, 0, NULL, (void (*)(void))cb, arg);
    }
    return defer(r, CALL_DONE, EBB_ENOTFOUND, NULL, (void (*)(void))cb, arg);
}

static int runner_list(void *self, ebb_list_cb cb, void *arg)
{
    return defer(self, CALL_LIST, 0, NULL, (void (*)(void))cb, arg);
}

static const struct ebb_provider runner_provider = {
    .abi = EBB_PROVIDER_ABI,
    .struct_size = sizeof(struct ebb_provider),
    .name = "runner",
    .description = "test runner: instances whose agents the test plays",
    .config_keys = runner_keys,
    .config_size = sizeof(struct runner_cfg),
    .create = runner_create,
    .destroy = runner_destroy,
    .poll_prices = runner_poll_prices,
    .launch = runner_launch,
    .terminate = runner_terminate,
    .list_instances = runner_list,
};

const struct ebb_provider *ebb_provider_entry(void)
{
    return &runner_provider;
}
