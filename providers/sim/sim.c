/* The sim provider's ABI glue: its configuration table, create/destroy,
 * and the provider calls, each of which completes through a callback run
 * from a host timer due now, never inside the call itself, exactly as a
 * real cloud's answer arrives later on the loop.
 *
 * Callbacks still pending are operations on the SDK's in-flight tracker
 * (ebb/ops.h), so that destroy() completes each one, in the order they
 * were asked for, with EBB_ECANCELED.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static const struct ebb_cfg_key sim_keys[] = {
    {"prices", EBB_CFG_STRING, NULL, offsetof(struct sim_cfg, prices),
     "price trace CSV to replay (required; timestamp_utc,provider,region,zone,"
     "instance_type,product,price_usd_per_hour)"},
    {"availability", EBB_CFG_STRING, NULL, offsetof(struct sim_cfg, availability),
     "availability trace CSV giving spot capacity (timestamp_utc,provider,zone,"
     "instance_type,available); none: unlimited capacity. Used as recorded: "
     "before its first row capacity is unlimited, after its last row it holds"},
    {"align_availability", EBB_CFG_BOOL, "false",
     offsetof(struct sim_cfg, align_availability),
     "replay an availability trace recorded in another period than the prices "
     "over them: its first row at the prices' first row, repeated back to "
     "back until their last (the built-in configuration pairs January-February "
     "2020 prices with March 2020 availability)"},
    {"notice_lead", EBB_CFG_DURATION, "120s", offsetof(struct sim_cfg, notice_lead),
     "how long before a preemption its notice comes (AWS: 2 minutes)"},
    {"preemption_hazard", EBB_CFG_DOUBLE, "0",
     offsetof(struct sim_cfg, preemption_hazard),
     "random preemptions per spot instance-hour, on top of the capacity trace "
     "(0: none)"},
    {"seed", EBB_CFG_INT, "1", offsetof(struct sim_cfg, seed),
     "seed of the random preemption model"},
    {"billing", EBB_CFG_STRING, "per-second", offsetof(struct sim_cfg, billing),
     "billing rule reported for instances: per-second or aws-hourly"},
    {"checkpoint_time", EBB_CFG_DURATION, "30s",
     offsetof(struct sim_cfg, checkpoint_time),
     "how long a simulated job takes to write a checkpoint"},
    {"launch_latency", EBB_CFG_DURATION, "0s",
     offsetof(struct sim_cfg, launch_latency),
     "time from a launch to the instance running"},
    {"preempt_after", EBB_CFG_DURATION, "0s",
     offsetof(struct sim_cfg, preempt_after),
     "preempt every spot instance this long after its launch, at the latest "
     "(0: never; for demos and tests)"},
    {"failed_terminations", EBB_CFG_INT, "0",
     offsetof(struct sim_cfg, failed_terminations),
     "answer this many terminate calls, the first ones, with an I/O error, as "
     "a cloud API outage would (tests)"},
    {"failed_launches", EBB_CFG_INT, "0",
     offsetof(struct sim_cfg, failed_launches),
     "answer this many launch calls, the first ones, with an I/O error, as a "
     "cloud API outage would (tests)"},
    {"currency", EBB_CFG_STRING, "USD", offsetof(struct sim_cfg, currency),
     "currency of the trace's prices, an ISO 4217 code (the price column "
     "keeps its name; other currencies need currency_rates: in ebb.yaml)"},
    EBB_CFG_END,
};

ebb_time_ms sim_now(const struct sim *s)
{
    return s->host->now(s->host->ctx);
}

/* ---- pending callbacks ---- */

enum sim_req_kind {
    SIM_REQ_PRICES,
    SIM_REQ_LAUNCH,
    SIM_REQ_DONE,
    SIM_REQ_LIST,
};

struct sim_req {
    struct ebb_op op; /* on s->ops; op.timer is the timer due now */
    struct sim *s;
    enum sim_req_kind kind;
    int status;
    union {
        ebb_prices_cb prices;
        ebb_launch_cb launch;
        ebb_done_cb done;
        ebb_list_cb list;
    } cb;
    void *arg;
    struct sim_instance *inst; /* SIM_REQ_LAUNCH */
};

static void run_list(struct sim *s, struct sim_req *r)
{
    size_t n = 0;
    struct ebb_instance *v = malloc((s->n_inst ? s->n_inst : 1) * sizeof(*v));
    if (v == NULL) {
        r->cb.list(r->arg, EBB_ENOMEM, NULL, 0);
        return;
    }
    for (size_t i = 0; i < s->n_inst; i++) {
        const struct sim_instance *in = s->inst[i];
        if (in->lead == in && sim_gang_live(in) > 0)
            sim_gang_view(s, in, &v[n++]);
    }
    r->cb.list(r->arg, 0, v, n);
    free(v);
}

static void run_prices(struct sim *s, struct sim_req *r)
{
    struct ebb_price *p;
    size_t n;
    if (sim_market_collect(&s->market, sim_now(s), &p, &n) != 0) {
        r->cb.prices(r->arg, EBB_ENOMEM, NULL, 0);
        return;
    }
    r->cb.prices(r->arg, 0, p, n);
    free(p);
}

/* Runs the callback with r->status (the result, or EBB_ECANCELED). */
static void req_run(struct sim *s, struct sim_req *r)
{
    switch (r->kind) {
    case SIM_REQ_PRICES:
        if (r->status != 0)
            r->cb.prices(r->arg, r->status, NULL, 0);
        else
            run_prices(s, r);
        break;
    case SIM_REQ_LAUNCH:
        if (r->status != 0) {
            r->cb.launch(r->arg, r->status, NULL);
        } else {
            struct ebb_instance v;
            sim_gang_view(s, r->inst, &v);
            r->cb.launch(r->arg, 0, &v);
        }
        break;
    case SIM_REQ_DONE:
        r->cb.done(r->arg, r->status);
        break;
    case SIM_REQ_LIST:
        if (r->status != 0)
            r->cb.list(r->arg, r->status, NULL, 0);
        else
            run_list(s, r);
        break;
    }
}

static void on_req_timer(void *arg)
{
    struct sim_req *r = arg;
    r->op.timer = 0; /* it has fired */
    ebb_op_remove(&r->op);
    req_run(r->s, r);
    free(r);
}

/* destroy(): the timer is stopped and the callback told EBB_ECANCELED. */
static void req_cancel(struct ebb_op *op)
{
    struct sim_req *r = ebb_list_entry(op, struct sim_req, op);
    ebb_op_remove(op);
    r->status = EBB_ECANCELED;
    req_run(r->s, r);
    free(r);
}

/* Queues `r` (allocated by the caller) to complete at now. On failure frees
 * it and returns the error: the callback then never runs. */
static int req_start(struct sim *s, struct sim_req *r)
{
    r->s = s;
    int64_t id = s->host->timer_start(s->host->ctx, sim_now(s), on_req_timer, r);
    if (id < 0) {
        free(r);
        return (int)id;
    }
    r->op.timer = id;
    ebb_op_add(&s->ops, &r->op, req_cancel);
    return 0;
}

static struct sim_req *req_new(enum sim_req_kind kind, int status, void *arg)
{
    struct sim_req *r = calloc(1, sizeof(*r));
    if (r != NULL) {
        r->kind = kind;
        r->status = status;
        r->arg = arg;
    }
    return r;
}

static int done_later(struct sim *s, ebb_done_cb cb, void *arg, int status)
{
    struct sim_req *r = req_new(SIM_REQ_DONE, status, arg);
    if (r == NULL)
        return EBB_ENOMEM;
    r->cb.done = cb;
    return req_start(s, r);
}

/* ---- create / destroy ---- */

static int parse_billing(const struct ebb_host *host, const char *b,
                         enum ebb_billing *out)
{
    if (b != NULL && strcmp(b, "per-second") == 0) {
        *out = EBB_BILLING_PER_SECOND;
        return 0;
    }
    if (b != NULL && strcmp(b, "aws-hourly") == 0) {
        *out = EBB_BILLING_HOURLY_START_PRICE;
        return 0;
    }
    host->log(host->ctx, EBB_LOG_ERROR,
              "billing: \"%s\" is not a billing rule (per-second or aws-hourly)",
              b != NULL ? b : "");
    return EBB_ECONFIG;
}

static int check_cfg(const struct ebb_host *host, const struct sim_cfg *c,
                     enum ebb_billing *billing)
{
    if (!isfinite(c->preemption_hazard) || c->preemption_hazard < 0 ||
        c->preemption_hazard > SIM_HAZARD_MAX) {
        host->log(host->ctx, EBB_LOG_ERROR,
                  "preemption_hazard: %g is outside the allowed range (from 0 to "
                  "%g preemptions per spot instance-hour; example: 0.05)",
                  c->preemption_hazard, SIM_HAZARD_MAX);
        return EBB_ECONFIG;
    }
    if (c->notice_lead < 0 || c->checkpoint_time < 0 || c->launch_latency < 0) {
        host->log(host->ctx, EBB_LOG_ERROR,
                  "notice_lead, checkpoint_time and launch_latency must not be "
                  "negative");
        return EBB_ECONFIG;
    }
    if (c->failed_terminations < 0 || c->failed_launches < 0) {
        host->log(host->ctx, EBB_LOG_ERROR,
                  "%s: %lld is not a count (0 or more)",
                  c->failed_launches < 0 ? "failed_launches" : "failed_terminations",
                  (long long)(c->failed_launches < 0 ? c->failed_launches
                                                     : c->failed_terminations));
        return EBB_ECONFIG;
    }
    const char *cur = c->currency != NULL ? c->currency : "";
    if (strlen(cur) != 3 || strspn(cur, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != 3) {
        host->log(host->ctx, EBB_LOG_ERROR,
                  "currency: \"%s\" is not a currency code (3 capital letters, "
                  "e.g. USD or CNY)", cur);
        return EBB_ECONFIG;
    }
    return parse_billing(host, c->billing, billing);
}

static int sim_create(const struct ebb_host *host, const void *config, void **self)
{
    const struct sim_cfg *cfg = config;
    enum ebb_billing billing;
    int rc = check_cfg(host, cfg, &billing);
    if (rc != 0)
        return rc;
    struct sim *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return EBB_ENOMEM;
    s->host = host;
    s->cfg = cfg;
    s->ops.host = host;
    s->billing = billing;
    s->terminations_to_fail = cfg->failed_terminations;
    s->launches_to_fail = cfg->failed_launches;
    sim_rng_seed(&s->rng, (uint64_t)cfg->seed);
    rc = sim_market_init(&s->market, host, cfg);
    if (rc != 0) {
        free(s);
        return rc;
    }
    sim_market_arm(&s->market);
    *self = s;
    return 0;
}

static void sim_destroy(void *self)
{
    struct sim *s = self;
    if (s == NULL)
        return;
    s->destroying = 1;
    ebb_ops_cancel_all(&s->ops);
    for (size_t i = 0; i < s->n_inst; i++)
        sim_instance_free(s, s->inst[i]);
    sim_index_free(s);
    sim_market_fini(&s->market);
    free(s);
}

/* ---- the provider calls ---- */

static int sim_poll_prices(void *self, ebb_prices_cb cb, void *arg)
{
    struct sim *s = self;
    if (cb == NULL)
        return EBB_EINVAL;
    if (s->destroying)
        return EBB_ESHUTDOWN;
    struct sim_req *r = req_new(SIM_REQ_PRICES, 0, arg);
    if (r == NULL)
        return EBB_ENOMEM;
    r->cb.prices = cb;
    return req_start(s, r);
}

static int str_eq(const char *a, const char *b)
{
    return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

/* The spot offer a launch lands on: the series of the price trace with its
 * provider (any when the request names none), region, zone (any when ""),
 * and instance type that has a price by now and room for `count` more
 * instances; the cheapest now if several qualify. EBB_ENOTFOUND when the
 * trace has no such offer yet, EBB_ENOCAPACITY when none has room. */
static int choose_offer(const struct sim *s, const struct ebb_launch *req,
                        unsigned count, const struct sim_offer **out)
{
    ebb_time_ms now = sim_now(s);
    const struct sim_offer *best = NULL;
    ebb_micros best_price = 0;
    int found = 0;
    for (size_t i = 0; i < s->market.n_offers; i++) {
        const struct sim_offer *o = &s->market.offers[i];
        const struct ebb_price_series *ps = o->ps;
        if ((req->provider != NULL && req->provider[0] != '\0' &&
             strcmp(req->provider, ps->provider) != 0) ||
            !str_eq(req->region, ps->region) ||
            (req->zone != NULL && req->zone[0] != '\0' &&
             strcmp(req->zone, ps->zone) != 0) ||
            !str_eq(req->instance_type, ps->instance_type) || ps->at[0] > now)
            continue;
        found = 1;
        int32_t cap = sim_market_capacity(&s->market, o->avail, now);
        if (cap >= 0 && sim_instance_count(s, o->avail) + count > (size_t)cap)
            continue;
        ebb_micros price = sim_market_price(o, now);
        if (best == NULL || price < best_price) {
            best = o;
            best_price = price;
        }
    }
    *out = best;
    if (best != NULL)
        return 0;
    return found ? EBB_ENOCAPACITY : EBB_ENOTFOUND;
}

static int launch_reply(struct sim *s, ebb_launch_cb cb, void *arg, int status,
                        struct sim_instance *in)
{
    struct sim_req *r = req_new(SIM_REQ_LAUNCH, status, arg);
    if (r == NULL)
        return EBB_ENOMEM;
    r->cb.launch = cb;
    r->inst = in;
    return req_start(s, r);
}

/* The job model a launch carries, under the ABI's size rules: none (an
 * ebbd that sends none, or a NULL one) is a job with no work to do, as a
 * model of zeroes reads. Returns 0, or EBB_EINVAL for a model smaller than
 * its first version. */
static int read_model(const struct ebb_launch *req, struct ebb_job_model *out)
{
    *out = (struct ebb_job_model){.struct_size = sizeof(*out)};
    const struct ebb_job_model *m =
        EBB_HAS(struct ebb_launch, req, model) ? req->model : NULL;
    if (m == NULL)
        return 0;
    if (m->struct_size < EBB_JOB_MODEL_SIZE_V1)
        return EBB_EINVAL;
    memcpy(out, m, m->struct_size < sizeof(*out) ? m->struct_size : sizeof(*out));
    out->struct_size = sizeof(*out);
    return 0;
}

/* A replacement member (req->join_gang): one new instance in the rank of
 * one that ended, on its gang's offer, answered alone. */
static int sim_join(struct sim *s, const struct ebb_launch *req,
                    const struct ebb_job_model *model, ebb_launch_cb cb, void *arg)
{
    struct sim_instance *lead, *in;
    int rc = sim_gang_join_target(s, req, &lead, &in);
    if (rc != 0)
        return rc;
    if (in != NULL) /* a join started it: the same join again */
        return launch_reply(s, cb, arg, 0, in);
    if (s->launches_to_fail > 0) {
        s->launches_to_fail--;
        return launch_reply(s, cb, arg, EBB_EIO, NULL);
    }
    if (!sim_gang_has_room(s, lead))
        return launch_reply(s, cb, arg, EBB_ENOCAPACITY, NULL);
    if (sim_index_reserve(s, 1) != 0)
        return EBB_ENOMEM;
    in = sim_instance_new(s, req, model, NULL, lead, req->join_rank, 0);
    if (in == NULL)
        return EBB_ENOMEM;
    in->joined = 1;
    rc = launch_reply(s, cb, arg, 0, in);
    if (rc != 0) {
        sim_instance_free(s, in);
        return rc;
    }
    sim_index_add(s, in);
    sim_gang_seat(in);
    sim_instance_start(s, in);
    return 0;
}

static int sim_launch(void *self, const struct ebb_launch *req,
                      ebb_launch_cb cb, void *arg)
{
    struct sim *s = self;
    struct ebb_job_model model;
    if (req == NULL || cb == NULL || req->struct_size < EBB_LAUNCH_SIZE_V1 ||
        read_model(req, &model) != 0 || req->token == NULL ||
        req->token[0] == '\0')
        return EBB_EINVAL;
    if (s->destroying)
        return EBB_ESHUTDOWN;
    if (EBB_HAS(struct ebb_launch, req, join_rank) && req->join_gang != NULL)
        return sim_join(s, req, &model, cb, arg);
    unsigned count = req->count > 1 ? req->count : 1;
    if (count > EBB_GANG_MAX)
        return EBB_EINVAL;
    struct sim_instance *in = sim_find_token(s, req->token);
    if (in != NULL)
        return launch_reply(s, cb, arg, 0, in);
    if (s->launches_to_fail > 0) {
        s->launches_to_fail--;
        return launch_reply(s, cb, arg, EBB_EIO, NULL);
    }

    const struct sim_offer *o = NULL;
    if (req->market == EBB_MARKET_SPOT) {
        int rc = choose_offer(s, req, count, &o);
        if (rc != 0)
            return launch_reply(s, cb, arg, rc, NULL);
    }
    if (sim_index_reserve(s, count) != 0)
        return EBB_ENOMEM;
    in = sim_gang_new(s, req, &model, o, count);
    if (in == NULL)
        return EBB_ENOMEM;
    /* The reply's timer is started before the instance's, so at equal times
     * the launch callback runs before the RUNNING event. */
    int rc = launch_reply(s, cb, arg, 0, in);
    if (rc != 0) {
        sim_gang_discard(s, in);
        return rc;
    }
    for (unsigned k = 0; k < count; k++)
        sim_index_add(s, count > 1 ? in->members[k] : in);
    for (unsigned k = 0; k < count; k++)
        sim_instance_start(s, count > 1 ? in->members[k] : in);
    return 0;
}

/* Terminating an instance that already ended succeeds (as on EC2); an id
 * the sim never issued completes with EBB_ENOTFOUND, through the callback
 * like every other answer. A gang's id ends every member it names. */
static int sim_terminate(void *self, const char *instance_id, ebb_done_cb cb,
                         void *arg)
{
    struct sim *s = self;
    if (instance_id == NULL || cb == NULL)
        return EBB_EINVAL;
    if (s->destroying)
        return EBB_ESHUTDOWN;
    if (s->terminations_to_fail > 0) {
        s->terminations_to_fail--;
        return done_later(s, cb, arg, EBB_EIO);
    }
    struct sim_instance *in[EBB_GANG_MAX];
    size_t n;
    int found = sim_gang_find(s, instance_id, in, &n);
    int rc = done_later(s, cb, arg, found);
    for (size_t k = 0; rc == 0 && k < n; k++)
        sim_instance_end(s, in[k]);
    return rc;
}

static int sim_list_instances(void *self, ebb_list_cb cb, void *arg)
{
    struct sim *s = self;
    if (cb == NULL)
        return EBB_EINVAL;
    if (s->destroying)
        return EBB_ESHUTDOWN;
    struct sim_req *r = req_new(SIM_REQ_LIST, 0, arg);
    if (r == NULL)
        return EBB_ENOMEM;
    r->cb.list = cb;
    return req_start(s, r);
}

/* An instance that is gone completes with EBB_ENOTFOUND; a job that has
 * already exited, or is already stopping, is left alone and the call
 * succeeds. A gang's job is its lead's: any member's id finds it; one
 * that a member's end stopped is gone too. */
static int sim_stop_job(void *self, const char *instance_id, ebb_dur_ms grace,
                        ebb_done_cb cb, void *arg)
{
    struct sim *s = self;
    if (instance_id == NULL || cb == NULL)
        return EBB_EINVAL;
    if (s->destroying)
        return EBB_ESHUTDOWN;
    struct sim_instance *in[EBB_GANG_MAX];
    size_t n;
    int alive = sim_gang_find(s, instance_id, in, &n) == 0 &&
                sim_gang_live(in[0]->lead) > 0 && !in[0]->lead->halted;
    int rc = done_later(s, cb, arg, alive ? 0 : EBB_ENOTFOUND);
    if (rc == 0 && alive)
        sim_instance_stop_job(s, in[0]->lead, grace);
    return rc;
}

static const struct ebb_provider sim_provider = {
    .abi = EBB_PROVIDER_ABI,
    .struct_size = sizeof(struct ebb_provider),
    .name = "sim",
    .description = "a spot market replayed from price and availability traces, "
                   "with simulated jobs and preemptions (for ebb backtest)",
    .config_keys = sim_keys,
    .config_size = sizeof(struct sim_cfg),
    .create = sim_create,
    .destroy = sim_destroy,
    .poll_prices = sim_poll_prices,
    .launch = sim_launch,
    .terminate = sim_terminate,
    .list_instances = sim_list_instances,
    .stop_job = sim_stop_job,
    .flags = EBB_PROVIDER_GANGS | EBB_PROVIDER_GANG_REPLACE,
};

const struct ebb_provider *ebb_provider_entry(void)
{
    return &sim_provider;
}
