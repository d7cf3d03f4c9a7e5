/* Instances: RunInstances (spot or on-demand, ClientToken = ebb's launch
 * token, tagged ebb:job and ebb:token, user data starting ebb-agent),
 * TerminateInstances, and DescribeInstances filtered on the ebb:token tag
 * for reconciliation. A spot instance that EC2 took away
 * (Server.SpotInstanceTermination) is reported LOST once and listed as
 * preempted, whether or not its agent managed to say so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "aws.h"
#include "aws_ec2.h"
#include "aws_userdata.h"

#define TAG_JOB "ebb:job"
#define TAG_TOKEN "ebb:token"
#define CLIENT_TOKEN_MAX 64 /* EC2's limit */

static void log_failure(struct aws *a, const char *region, const char *action,
                        const struct aws_reply *r)
{
    enum ebb_log_level level = r->status == EBB_EAUTH ? EBB_LOG_ERROR : EBB_LOG_WARN;
    a->host->log(a->host->ctx, level, "%s: %s failed: %s%s%s", region, action,
                 r->code[0] ? r->code : ebb_strerror(r->status),
                 r->message[0] ? ": " : "", r->message);
}

static enum ebb_instance_state state_of(const char *s)
{
    if (strcmp(s, "pending") == 0)
        return EBB_INSTANCE_PENDING;
    if (strcmp(s, "running") == 0)
        return EBB_INSTANCE_RUNNING;
    if (strcmp(s, "terminated") == 0)
        return EBB_INSTANCE_TERMINATED;
    /* shutting-down, stopping, stopped: on its way out, maybe still billed. */
    return EBB_INSTANCE_STOPPING;
}

static int spot_preempted(const struct aws_ec2_instance *i)
{
    return (strcmp(i->state, "shutting-down") == 0 ||
            strcmp(i->state, "terminated") == 0) &&
           strcmp(i->state_reason, "Server.SpotInstanceTermination") == 0;
}

static void view(const struct aws_ec2_instance *i, struct ebb_instance *out)
{
    *out = (struct ebb_instance){
        .struct_size = sizeof(struct ebb_instance),
        .id = i->id,
        .token = i->token,
        .job_id = i->job_id,
        .region = i->region,
        .zone = i->zone,
        .instance_type = i->instance_type,
        .market = strcmp(i->lifecycle, "spot") == 0 ? EBB_MARKET_SPOT
                                                     : EBB_MARKET_ON_DEMAND,
        .state = state_of(i->state),
        .launched_at = i->launched_at,
        .preempted = spot_preempted(i),
        .billing = EBB_BILLING_HOURLY_START_PRICE,
    };
}

/* ---- launch ---- */

struct launch {
    struct aws *a;
    ebb_launch_cb cb;
    void *arg;
    char region[32];
    char token[CLIENT_TOKEN_MAX + 1];
};

static void on_launched(void *arg, const struct aws_reply *r)
{
    struct launch *l = arg;
    if (r->status != 0) {
        if (r->status != EBB_ECANCELED)
            log_failure(l->a, l->region, "RunInstances", r);
        l->cb(l->arg, r->status, NULL);
        free(l);
        return;
    }
    struct aws_instance_set set = {0};
    char next[8];
    int rc = aws_parse_instances(r->body, r->body_len, &set, next, sizeof(next));
    if (rc == 0 && set.n == 0)
        rc = EBB_EPROTO;
    if (rc != 0) {
        l->a->host->log(l->a->host->ctx, EBB_LOG_ERROR,
                        "%s: RunInstances answered with no instance we can read; "
                        "the next reconciliation will find it by its tags",
                        l->region);
        l->cb(l->arg, rc, NULL);
    } else {
        struct aws_ec2_instance *i = &set.v[0];
        snprintf(i->region, sizeof(i->region), "%s", l->region);
        /* RunInstances echoes the tags; the token is ours in any case. */
        if (i->token[0] == '\0')
            snprintf(i->token, sizeof(i->token), "%s", l->token);
        aws_known_add(l->a, i->id, l->region);
        struct ebb_instance v;
        view(i, &v);
        l->cb(l->arg, 0, &v);
    }
    free(set.v);
    free(l);
}

static int launch_params(struct aws *a, const struct ebb_launch *req,
                         struct ebb_buf *p)
{
    const char *region = req->region;
    const char *vals[32];
    if (aws_region_values(&a->cfg->ami, region, vals, 1) == 0) {
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "%s: no AMI configured: add \"%s=ami-...\" to "
                     "providers.aws.ami", region, region);
        return EBB_ECONFIG;
    }
    aws_param(p, "ImageId", vals[0]);
    aws_param(p, "InstanceType", req->instance_type);
    aws_param(p, "MinCount", "1");
    aws_param(p, "MaxCount", "1");
    aws_param(p, "ClientToken", req->token);
    if (aws_region_values(&a->cfg->key_name, region, vals, 1) > 0)
        aws_param(p, "KeyName", vals[0]);
    if (aws_region_values(&a->cfg->subnet_id, region, vals, 1) > 0)
        aws_param(p, "SubnetId", vals[0]);
    size_t n_sg = aws_region_values(&a->cfg->security_group_ids, region, vals,
                                    sizeof(vals) / sizeof(vals[0]));
    for (size_t i = 0; i < n_sg; i++)
        aws_paramf(p, vals[i], "SecurityGroupId.%zu", i + 1);
    if (req->zone != NULL && req->zone[0] != '\0')
        aws_param(p, "Placement.AvailabilityZone", req->zone);
    if (req->market == EBB_MARKET_SPOT) {
        aws_param(p, "InstanceMarketOptions.MarketType", "spot");
        aws_param(p, "InstanceMarketOptions.SpotOptions.SpotInstanceType", "one-time");
        aws_param(p, "InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior",
                  "terminate");
        if (req->max_price_per_hour > 0) {
            char price[32];
            snprintf(price, sizeof(price), "%lld.%06lld",
                     (long long)(req->max_price_per_hour / EBB_MICROS_PER_UNIT),
                     (long long)(req->max_price_per_hour % EBB_MICROS_PER_UNIT));
            aws_param(p, "InstanceMarketOptions.SpotOptions.MaxPrice", price);
        }
    }
    aws_param(p, "InstanceInitiatedShutdownBehavior", "terminate");
    aws_param(p, "MetadataOptions.HttpTokens", "required");
    aws_param(p, "TagSpecification.1.ResourceType", "instance");
    aws_param(p, "TagSpecification.1.Tag.1.Key", TAG_JOB);
    aws_param(p, "TagSpecification.1.Tag.1.Value", req->job_id);
    aws_param(p, "TagSpecification.1.Tag.2.Key", TAG_TOKEN);
    aws_param(p, "TagSpecification.1.Tag.2.Value", req->token);

    char *script = aws_userdata_script(
        a->cfg->agent_command, a->cfg->agent_setup, req->agent_url, req->agent_token,
        EBB_HAS(struct ebb_launch, req, agent_tls_pin) ? req->agent_tls_pin : NULL,
        EBB_HAS(struct ebb_launch, req, agent_tls_ca) ? req->agent_tls_ca : NULL);
    char *b64 = script != NULL ? aws_base64(script) : NULL;
    if (b64 != NULL)
        aws_param(p, "UserData", b64);
    free(b64);
    free(script);
    return b64 == NULL || p->failed ? EBB_ENOMEM : 0;
}

int aws_launch(void *self, const struct ebb_launch *req, ebb_launch_cb cb,
               void *arg)
{
    struct aws *a = self;
    if (req->struct_size < EBB_LAUNCH_SIZE_V1)
        return EBB_EINVAL;
    if (!a->have_creds)
        return EBB_EAUTH;
    if (req->region == NULL || !aws_region_configured(a, req->region)) {
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "launch in region \"%s\", which providers.aws.regions "
                     "does not list", req->region ? req->region : "");
        return EBB_EINVAL;
    }
    if (req->count > 1)
        return EBB_EUNSUPPORTED;
    if (req->token == NULL || req->token[0] == '\0' ||
        strlen(req->token) > CLIENT_TOKEN_MAX || req->job_id == NULL ||
        req->instance_type == NULL)
        return EBB_EINVAL;
    if (req->agent_url == NULL || req->agent_url[0] == '\0' ||
        req->agent_token == NULL || req->agent_token[0] == '\0') {
        /* An instance without its agent would run, and bill, for nothing. */
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "launch for job %s has no agent URL or token; not launching",
                     req->job_id);
        return EBB_EINVAL;
    }
    struct launch *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return EBB_ENOMEM;
    *l = (struct launch){.a = a, .cb = cb, .arg = arg};
    snprintf(l->region, sizeof(l->region), "%s", req->region);
    snprintf(l->token, sizeof(l->token), "%s", req->token);
    struct ebb_buf p = {0};
    int rc = launch_params(a, req, &p);
    if (rc == 0)
        rc = aws_call(a, req->region, "RunInstances", p.data, on_launched, l);
    ebb_buf_free(&p);
    if (rc != 0)
        free(l);
    return rc;
}

/* ---- terminate ---- */

struct term {
    struct aws *a;
    ebb_done_cb cb;
    void *arg;
    char id[32];
    char known_region[32]; /* tried first; "" when unknown */
    int tried_known;
    size_t next_region;    /* index into regions for the search */
};

static int term_next(struct term *t);

static void on_terminated(void *arg, const struct aws_reply *r)
{
    struct term *t = arg;
    if (r->status == EBB_ENOTFOUND) {
        int rc = term_next(t);
        if (rc == 0)
            return;
        if (rc != EBB_ENOTFOUND)
            t->a->host->log(t->a->host->ctx, EBB_LOG_WARN,
                            "TerminateInstances %s: %s", t->id, ebb_strerror(rc));
        t->cb(t->arg, rc);
        free(t);
        return;
    }
    if (r->status != 0 && r->status != EBB_ECANCELED)
        log_failure(t->a, t->known_region[0] ? t->known_region : "aws",
                    "TerminateInstances", r);
    t->cb(t->arg, r->status);
    free(t);
}

/* Asks the next region that may hold the instance: its known region first,
 * then every other configured one. EBB_ENOTFOUND when none is left. */
static int term_next(struct term *t)
{
    struct aws *a = t->a;
    const char *region = NULL;
    if (!t->tried_known && t->known_region[0] != '\0') {
        t->tried_known = 1;
        region = t->known_region;
    }
    while (region == NULL && t->next_region < a->cfg->regions.n) {
        const char *r = a->cfg->regions.items[t->next_region++];
        if (strcmp(r, t->known_region) != 0)
            region = r;
    }
    if (region == NULL)
        return EBB_ENOTFOUND;
    struct ebb_buf p = {0};
    aws_param(&p, "InstanceId.1", t->id);
    int rc = p.failed ? EBB_ENOMEM
                      : aws_call(a, region, "TerminateInstances", p.data,
                                 on_terminated, t);
    ebb_buf_free(&p);
    return rc;
}

int aws_terminate(void *self, const char *instance_id, ebb_done_cb cb, void *arg)
{
    struct aws *a = self;
    if (!a->have_creds)
        return EBB_EAUTH;
    if (instance_id == NULL || instance_id[0] == '\0' ||
        strlen(instance_id) >= sizeof(((struct term *)0)->id))
        return EBB_EINVAL;
    struct term *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return EBB_ENOMEM;
    *t = (struct term){.a = a, .cb = cb, .arg = arg};
    snprintf(t->id, sizeof(t->id), "%s", instance_id);
    struct aws_known *k = aws_known_find(a, instance_id);
    if (k != NULL)
        snprintf(t->known_region, sizeof(t->known_region), "%s", k->region);
    int rc = term_next(t);
    if (rc != 0)
        free(t);
    return rc;
}

/* ---- list ---- */

struct list {
    struct aws *a;
    ebb_list_cb cb;
    void *arg;
    size_t region;
    char next_token[4096];
    struct aws_instance_set set;
};

static int list_page(struct list *l);

static void list_finish(struct list *l, int status)
{
    struct aws *a = l->a;
    struct ebb_instance *v = NULL;
    if (status == 0 && l->set.n > 0) {
        v = calloc(l->set.n, sizeof(*v));
        if (v == NULL)
            status = EBB_ENOMEM;
    }
    if (status != 0) {
        l->cb(l->arg, status, NULL, 0);
    } else {
        ebb_time_ms now = a->host->now(a->host->ctx);
        for (size_t i = 0; i < l->set.n; i++) {
            struct aws_ec2_instance *in = &l->set.v[i];
            view(in, &v[i]);
            struct aws_known *k = aws_known_add(a, in->id, in->region);
            if (!v[i].preempted || k == NULL || k->lost_reported)
                continue;
            k->lost_reported = 1;
            struct ebb_instance_event ev = {
                .struct_size = sizeof(struct ebb_instance_event),
                .kind = EBB_EVENT_LOST,
                .instance_id = in->id,
                .token = in->token,
                .at = now,
                .reason = "spot capacity reclaimed by EC2 "
                          "(Server.SpotInstanceTermination)",
            };
            a->host->instance_event(a->host->ctx, &ev);
        }
        l->cb(l->arg, 0, v, l->set.n);
    }
    free(v);
    free(l->set.v);
    free(l);
}

static void on_list_page(void *arg, const struct aws_reply *r)
{
    struct list *l = arg;
    if (r->status != 0) {
        if (r->status != EBB_ECANCELED)
            log_failure(l->a, l->a->cfg->regions.items[l->region],
                        "DescribeInstances", r);
        list_finish(l, r->status);
        return;
    }
    size_t before = l->set.n;
    int rc = aws_parse_instances(r->body, r->body_len, &l->set, l->next_token,
                                 sizeof(l->next_token));
    if (rc != 0) {
        l->a->host->log(l->a->host->ctx, EBB_LOG_ERROR,
                        "%s: DescribeInstances answer is malformed",
                        l->a->cfg->regions.items[l->region]);
        list_finish(l, rc);
        return;
    }
    for (size_t i = before; i < l->set.n; i++)
        snprintf(l->set.v[i].region, sizeof(l->set.v[i].region), "%s",
                 l->a->cfg->regions.items[l->region]);
    if (l->next_token[0] == '\0' && ++l->region == l->a->cfg->regions.n) {
        list_finish(l, 0);
        return;
    }
    rc = list_page(l);
    if (rc != 0)
        list_finish(l, rc);
}

static int list_page(struct list *l)
{
    struct ebb_buf p = {0};
    aws_param(&p, "Filter.1.Name", "tag-key");
    aws_param(&p, "Filter.1.Value.1", TAG_TOKEN);
    aws_param(&p, "MaxResults", "1000");
    if (l->next_token[0] != '\0')
        aws_param(&p, "NextToken", l->next_token);
    int rc = p.failed ? EBB_ENOMEM
                      : aws_call(l->a, l->a->cfg->regions.items[l->region],
                                 "DescribeInstances", p.data, on_list_page, l);
    ebb_buf_free(&p);
    return rc;
}

int aws_list_instances(void *self, ebb_list_cb cb, void *arg)
{
    struct aws *a = self;
    if (!a->have_creds)
        return EBB_EAUTH;
    if (a->cfg->regions.n == 0)
        return EBB_ECONFIG;
    struct list *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return EBB_ENOMEM;
    *l = (struct list){.a = a, .cb = cb, .arg = arg};
    int rc = list_page(l);
    if (rc != 0)
        free(l);
    return rc;
}
