/* Instances: RunInstances, DeleteInstance and DescribeInstances.
 *
 * A launch passes ebb's token as ClientToken, so a launch repeated after a
 * lost answer or a crash returns the instance the first one created, and
 * tags the instance with the job id and the token (ALI_TAG_JOB,
 * ALI_TAG_TOKEN), which is how list_instances finds ebb's instances in
 * every configured region. Its UserData starts ebb-agent with the agent's
 * URL and token.
 *
 * DeleteInstance goes to the instance's region: the plugin remembers where
 * each instance it launched or listed lives, and looks an unknown one up
 * region by region first. Deleting an instance that no longer exists
 * succeeds: it is gone either way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include <ebb/buf.h>
#include <ebb/shquote.h>
#include <ebb/units.h>

#include "alibaba.h"

/* One instance as DescribeInstances reports it; strings owned. */
struct inst {
    char *id, *token, *job_id, *region, *zone, *type;
    enum ebb_market market;
    enum ebb_instance_state state;
    ebb_time_ms launched_at;
    int preempted;
};

enum kind { LAUNCH, TERMINATE, LIST };

struct inst_op {
    struct ebb_op op;
    struct ali *a;
    enum kind kind;
    union {
        ebb_launch_cb launch;
        ebb_done_cb done;
        ebb_list_cb list;
    } cb;
    void *arg;
    struct ali_rpc *rpc;
    struct inst launched; /* LAUNCH */
    char *id;             /* TERMINATE: the instance */
    /* DescribeInstances walk (TERMINATE looks up `id`, LIST collects). */
    size_t region;
    char *next_token;
    struct inst *found;
    size_t n_found;
    int status;
};

static void inst_free(struct inst *i)
{
    free(i->id);
    free(i->token);
    free(i->job_id);
    free(i->region);
    free(i->zone);
    free(i->type);
}

static void view(const struct inst *i, struct ebb_instance *v)
{
    *v = (struct ebb_instance){
        .struct_size = sizeof(struct ebb_instance),
        .id = i->id,
        .token = i->token ? i->token : "",
        .job_id = i->job_id ? i->job_id : "",
        .region = i->region ? i->region : "",
        .zone = i->zone ? i->zone : "",
        .instance_type = i->type ? i->type : "",
        .market = i->market,
        .state = i->state,
        .launched_at = i->launched_at,
        .preempted = i->preempted,
        .billing = EBB_BILLING_PER_SECOND,
    };
}

static void op_free(struct inst_op *o)
{
    ebb_op_remove(&o->op);
    inst_free(&o->launched);
    for (size_t i = 0; i < o->n_found; i++)
        inst_free(&o->found[i]);
    free(o->found);
    free(o->id);
    free(o->next_token);
    free(o);
}

/* Completes `o` with `status` and frees it. */
static void complete(struct inst_op *o, int status)
{
    void *arg = o->arg;
    struct ebb_instance one, *many = NULL;
    size_t n = 0;
    switch (o->kind) {
    case LAUNCH: {
        ebb_launch_cb cb = o->cb.launch;
        if (status == 0)
            view(&o->launched, &one);
        cb(arg, status, status == 0 ? &one : NULL);
        break;
    }
    case TERMINATE:
        o->cb.done(arg, status);
        break;
    case LIST:
        if (status == 0 && o->n_found > 0) {
            many = calloc(o->n_found, sizeof(*many));
            if (many == NULL)
                status = EBB_ENOMEM;
            for (size_t i = 0; many != NULL && i < o->n_found; i++)
                view(&o->found[i], &many[n++]);
        }
        o->cb.list(arg, status, many, status == 0 ? n : 0);
        free(many);
        break;
    }
    op_free(o);
}

static void op_cancel(struct ebb_op *op)
{
    struct inst_op *o = (struct inst_op *)op;
    if (o->rpc != NULL)
        ali_rpc_cancel(o->rpc);
    o->rpc = NULL;
    complete(o, EBB_ECANCELED);
}

static struct inst_op *op_new(struct ali *a, enum kind kind, void *arg)
{
    struct inst_op *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return NULL;
    o->kind = kind;
    o->arg = arg;
    o->a = a;
    ebb_op_add(&a->ops, &o->op, op_cancel);
    return o;
}

/* ---- launch ---- */

/* The boot script, base64 as UserData wants it: it writes the agent's
 * one-time enrolment token (and the CA ebbd's certificate chains to, when
 * there is one) to files only root reads and starts the agent, told how
 * to trust ebbd. */
static char *user_data(const struct ali *a, const struct ebb_launch *req)
{
    struct ebb_buf s = {0};
    ebb_buf_puts(&s, "#!/bin/sh\numask 077\nmkdir -p /run/ebb\nprintf '%s' ");
    ebb_buf_sh_quote(&s, req->agent_token ? req->agent_token : "");
    const char *pin = EBB_HAS(struct ebb_launch, req, agent_tls_pin) ? req->agent_tls_pin : NULL;
    const char *ca = EBB_HAS(struct ebb_launch, req, agent_tls_ca) ? req->agent_tls_ca : NULL;
    ebb_buf_puts(&s, " > /run/ebb/agent-token\n");
    if (ca != NULL) {
        ebb_buf_puts(&s, "printf '%s' ");
        ebb_buf_sh_quote(&s, ca);
        ebb_buf_puts(&s, " > /run/ebb/ebbd-ca.pem\n");
    }
    ebb_buf_printf(&s, "exec %s --ebbd ", a->cfg->agent_command);
    ebb_buf_sh_quote(&s, req->agent_url ? req->agent_url : "");
    if (ca != NULL) {
        ebb_buf_puts(&s, " --ebbd-ca /run/ebb/ebbd-ca.pem");
    } else if (pin != NULL) {
        ebb_buf_puts(&s, " --ebbd-pin ");
        ebb_buf_sh_quote(&s, pin);
    }
    ebb_buf_puts(&s, " --token-file /run/ebb/agent-token --metadata-kind alibaba\n");
    if (s.failed) {
        ebb_buf_free(&s);
        return NULL;
    }
    char *out = malloc(4 * (s.len / 3 + 1) + 1);
    if (out != NULL)
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s.data,
                        (int)s.len);
    ebb_buf_free(&s);
    return out;
}

/* The vSwitch for `zone` ("" : the first configured, and its zone). */
static int pick_vswitch(const struct ali *a, const char *zone, char *zone_out,
                        size_t zone_size, const char **vsw)
{
    *vsw = NULL;
    snprintf(zone_out, zone_size, "%s", zone);
    for (size_t i = 0; i < a->cfg->vswitches.n; i++) {
        const char *e = a->cfg->vswitches.items[i];
        const char *eq = strchr(e, '=');
        size_t zl = (size_t)(eq - e);
        if (zone[0] == '\0' || (strlen(zone) == zl && strncmp(zone, e, zl) == 0)) {
            snprintf(zone_out, zone_size, "%.*s", (int)zl, e);
            *vsw = eq + 1;
            return 0;
        }
    }
    return a->cfg->vswitches.n == 0 ? 0 : EBB_ECONFIG;
}

static void on_launched(void *arg, int status, json_t *body, const char *code)
{
    struct inst_op *o = arg;
    struct ali *a = o->a;
    o->rpc = NULL;
    (void)code;
    if (status == 0) {
        json_t *ids = json_object_get(json_object_get(body, "InstanceIdSets"),
                                      "InstanceIdSet");
        const char *id = json_string_value(json_array_get(ids, 0));
        o->launched.id = id ? strdup(id) : NULL;
        if (id == NULL)
            status = EBB_EPROTO;
        else if (o->launched.id == NULL)
            status = EBB_ENOMEM;
        else
            ali_remember_place(a, id, o->launched.region);
    } else if (status == EBB_ENOCAPACITY) {
        a->host->log(a->host->ctx, EBB_LOG_INFO, "no %s capacity in %s (%s)",
                     o->launched.type, o->launched.zone[0] ? o->launched.zone
                                                           : o->launched.region,
                     code);
    }
    complete(o, status);
}

int ali_launch(struct ali *a, const struct ebb_launch *req, ebb_launch_cb cb,
               void *arg)
{
    if (req->token == NULL || req->token[0] == '\0' || strlen(req->token) > 64 ||
        req->region == NULL || req->instance_type == NULL)
        return EBB_EINVAL;
    if (a->cfg->image_id[0] == '\0') {
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "cannot launch: set image_id (an image with ebb-agent)");
        return EBB_ECONFIG;
    }
    /* A limit is in the region's currency; refuse one written in another
     * rather than bid 7 times what was meant. */
    for (size_t i = 0; req->max_price_per_hour > 0 && req->currency != NULL &&
                       i < a->cfg->regions.n;
         i++) {
        const char *known = a->currency[i];
        if (strcmp(a->cfg->regions.items[i], req->region) == 0 && known[0] != '\0' &&
            strcmp(known, req->currency) != 0) {
            a->host->log(a->host->ctx, EBB_LOG_ERROR,
                         "cannot launch in %s: the price limit is in %s but %s "
                         "prices are in %s",
                         req->region, req->currency, req->region, known);
            return EBB_EINVAL;
        }
    }
    char zone[64];
    const char *vsw;
    if (pick_vswitch(a, req->zone ? req->zone : "", zone, sizeof(zone), &vsw) != 0) {
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "cannot launch in %s: no vSwitch for that zone in vswitches",
                     req->zone);
        return EBB_ECONFIG;
    }
    char *ud = user_data(a, req);
    unsigned count = req->count ? req->count : 1;
    struct ali_params q = {0};
    if (zone[0] != '\0')
        ali_params_add(&q, "ZoneId", zone);
    if (vsw != NULL)
        ali_params_add(&q, "VSwitchId", vsw);
    if (a->cfg->security_group_id[0] != '\0')
        ali_params_add(&q, "SecurityGroupId", a->cfg->security_group_id);
    ali_params_add(&q, "InstanceType", req->instance_type);
    ali_params_add(&q, "ImageId", a->cfg->image_id);
    ali_params_add(&q, "InstanceChargeType", "PostPaid");
    if (req->market == EBB_MARKET_ON_DEMAND) {
        ali_params_add(&q, "SpotStrategy", "NoSpot");
    } else if (req->max_price_per_hour > 0) {
        /* Three decimals, rounded down: never a limit above the one asked. */
        ali_params_add(&q, "SpotStrategy", "SpotWithPriceLimit");
        ali_params_addf(&q, "SpotPriceLimit", "%lld.%03lld",
                        (long long)(req->max_price_per_hour / EBB_MICROS_PER_UNIT),
                        (long long)(req->max_price_per_hour % EBB_MICROS_PER_UNIT /
                                    1000));
    } else {
        ali_params_add(&q, "SpotStrategy", "SpotAsPriceGo");
    }
    if (req->market == EBB_MARKET_SPOT)
        ali_params_add(&q, "SpotInterruptionBehavior", "Terminate");
    ali_params_add(&q, "ClientToken", req->token);
    ali_params_addf(&q, "Amount", "%u", count);
    if (count > 1)
        ali_params_addf(&q, "MinAmount", "%u", count);
    ali_params_addf(&q, "InstanceName", "ebb-%s", req->job_id ? req->job_id : "");
    ali_params_add(&q, "Tag.1.Key", ALI_TAG_JOB);
    ali_params_add(&q, "Tag.1.Value", req->job_id ? req->job_id : "");
    ali_params_add(&q, "Tag.2.Key", ALI_TAG_TOKEN);
    ali_params_add(&q, "Tag.2.Value", req->token);
    if (ud == NULL)
        q.failed = 1;
    else
        ali_params_add(&q, "UserData", ud);
    free(ud);

    struct inst_op *o = op_new(a, LAUNCH, arg);
    if (o == NULL) {
        ali_params_free(&q);
        return EBB_ENOMEM;
    }
    o->cb.launch = cb;
    o->launched = (struct inst){
        .token = strdup(req->token),
        .job_id = strdup(req->job_id ? req->job_id : ""),
        .region = strdup(req->region),
        .zone = strdup(zone),
        .type = strdup(req->instance_type),
        .market = req->market,
        .state = EBB_INSTANCE_PENDING,
        .launched_at = ali_now(a),
    };
    if (o->launched.token && o->launched.job_id && o->launched.region &&
        o->launched.zone && o->launched.type)
        o->rpc = ali_rpc_start(a, req->region, "RunInstances", &q, on_launched, o);
    ali_params_free(&q);
    if (o->rpc == NULL) {
        op_free(o);
        return EBB_ENOMEM;
    }
    return 0;
}

/* ---- DescribeInstances, region by region, page by page ---- */

static const char *tag_value(json_t *inst, const char *key)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(json_object_get(inst, "Tags"), "Tag"), i, t)
    {
        if (strcmp(ali_json_str(t, "TagKey"), key) == 0)
            return ali_json_str(t, "TagValue");
    }
    return NULL;
}

/* A spot instance being reclaimed carries the operation lock
 * "Recycling". */
static int recycling(json_t *inst)
{
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(json_object_get(inst, "OperationLocks"),
                                       "LockReason"),
                       i, l)
    {
        if (strcmp(ali_json_str(l, "LockReason"), "Recycling") == 0)
            return 1;
    }
    return 0;
}

static enum ebb_instance_state state_of(const char *status)
{
    if (strcmp(status, "Running") == 0)
        return EBB_INSTANCE_RUNNING;
    if (strcmp(status, "Pending") == 0 || strcmp(status, "Starting") == 0)
        return EBB_INSTANCE_PENDING;
    /* Stopping and Stopped: it exists (and its disks bill) but runs no
     * job; the core still has to release it. */
    return EBB_INSTANCE_STOPPING;
}

/* CreationTime comes to the minute ("2026-11-30T10:04Z"). */
static ebb_time_ms creation_time(const char *s)
{
    ebb_time_ms t;
    char full[32];
    size_t n = strlen(s);
    if (ebb_parse_time(s, &t) == 0)
        return t;
    if (n == 17 && s[16] == 'Z') {
        snprintf(full, sizeof(full), "%.16s:00Z", s);
        if (ebb_parse_time(full, &t) == 0)
            return t;
    }
    return 0;
}

static int add_found(struct inst_op *o, json_t *j, const char *region)
{
    struct inst *v = realloc(o->found, (o->n_found + 1) * sizeof(*v));
    if (v == NULL)
        return EBB_ENOMEM;
    o->found = v;
    const char *token = tag_value(j, ALI_TAG_TOKEN);
    const char *job = tag_value(j, ALI_TAG_JOB);
    const char *strategy = ali_json_str(j, "SpotStrategy");
    struct inst *i = &o->found[o->n_found];
    *i = (struct inst){
        .id = strdup(ali_json_str(j, "InstanceId")),
        .token = strdup(token ? token : ""),
        .job_id = strdup(job ? job : ""),
        .region = strdup(region),
        .zone = strdup(ali_json_str(j, "ZoneId")),
        .type = strdup(ali_json_str(j, "InstanceType")),
        .market = strategy[0] == '\0' || strcmp(strategy, "NoSpot") == 0
                      ? EBB_MARKET_ON_DEMAND
                      : EBB_MARKET_SPOT,
        .state = state_of(ali_json_str(j, "Status")),
        .preempted = recycling(j),
    };
    i->launched_at = creation_time(ali_json_str(j, "CreationTime"));
    if (!i->id || !i->token || !i->job_id || !i->region || !i->zone || !i->type) {
        inst_free(i);
        return EBB_ENOMEM;
    }
    if (i->preempted)
        i->state = EBB_INSTANCE_STOPPING;
    o->n_found++;
    return 0;
}

static int describe_page(struct inst_op *o);
static void delete_found(struct inst_op *o, const char *region);

static void on_described(void *arg, int status, json_t *body, const char *code)
{
    struct inst_op *o = arg;
    struct ali *a = o->a;
    const char *region = a->cfg->regions.items[o->region];
    o->rpc = NULL;
    (void)code;
    json_t *list = json_object_get(json_object_get(body, "Instances"), "Instance");
    if (status == 0 && !json_is_array(list))
        status = EBB_EPROTO;
    if (status == EBB_EAUTH || status == EBB_ENOMEM) {
        complete(o, status);
        return;
    }
    if (status != 0 && o->status == 0)
        o->status = status;
    size_t i;
    json_t *j;
    json_array_foreach(list, i, j)
    {
        const char *id = ali_json_str(j, "InstanceId");
        if (id[0] == '\0')
            continue;
        ali_remember_place(a, id, region);
        if (add_found(o, j, region) != 0) {
            complete(o, EBB_ENOMEM);
            return;
        }
    }
    if (o->kind == TERMINATE && o->n_found > 0) {
        delete_found(o, region);
        return;
    }
    const char *next = status == 0 ? ali_json_str(body, "NextToken") : "";
    free(o->next_token);
    o->next_token = next[0] != '\0' ? strdup(next) : NULL;
    if (o->next_token == NULL && ++o->region >= a->cfg->regions.n) {
        /* Walked every region. A listing is only complete without errors;
         * an instance to delete that no region knows is already gone. */
        if (o->kind == TERMINATE && o->status == 0)
            a->host->log(a->host->ctx, EBB_LOG_INFO,
                         "%s: not found in any region; nothing to release", o->id);
        complete(o, o->status);
        return;
    }
    int rc = describe_page(o);
    if (rc != 0)
        complete(o, rc);
}

static int describe_page(struct inst_op *o)
{
    struct ali *a = o->a;
    struct ali_params q = {0};
    if (o->kind == TERMINATE) {
        ali_params_addf(&q, "InstanceIds", "[\"%s\"]", o->id);
    } else {
        ali_params_add(&q, "Tag.1.Key", ALI_TAG_TOKEN);
        ali_params_add(&q, "MaxResults", "100");
    }
    if (o->next_token != NULL)
        ali_params_add(&q, "NextToken", o->next_token);
    o->rpc = ali_rpc_start(a, a->cfg->regions.items[o->region], "DescribeInstances",
                           &q, on_described, o);
    return o->rpc != NULL ? 0 : EBB_ENOMEM;
}

int ali_list(struct ali *a, ebb_list_cb cb, void *arg)
{
    struct inst_op *o = op_new(a, LIST, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    o->cb.list = cb;
    int rc = describe_page(o);
    if (rc != 0)
        op_free(o);
    return rc;
}

/* ---- terminate ---- */

static void on_deleted(void *arg, int status, json_t *body, const char *code)
{
    struct inst_op *o = arg;
    o->rpc = NULL;
    (void)body;
    (void)code;
    complete(o, status == EBB_ENOTFOUND ? 0 : status);
}

static int delete_in(struct inst_op *o, const char *region)
{
    struct ali_params q = {0};
    ali_params_add(&q, "InstanceId", o->id);
    ali_params_add(&q, "Force", "true");
    o->rpc = ali_rpc_start(o->a, region, "DeleteInstance", &q, on_deleted, o);
    return o->rpc != NULL ? 0 : EBB_ENOMEM;
}

static void delete_found(struct inst_op *o, const char *region)
{
    int rc = delete_in(o, region);
    if (rc != 0)
        complete(o, rc);
}

int ali_terminate(struct ali *a, const char *instance_id, ebb_done_cb cb,
                  void *arg)
{
    if (instance_id == NULL || instance_id[0] == '\0' ||
        strpbrk(instance_id, "\"\\") != NULL)
        return EBB_EINVAL;
    struct inst_op *o = op_new(a, TERMINATE, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    o->cb.done = cb;
    o->id = strdup(instance_id);
    const char *region = ali_place_of(a, instance_id);
    int rc = o->id == NULL ? EBB_ENOMEM
             : region      ? delete_in(o, region)
                           : describe_page(o);
    if (rc != 0)
        op_free(o);
    return rc;
}
