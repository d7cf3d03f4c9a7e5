/* Instances: RunInstances (spot or on-demand, ClientToken = ebb's launch
 * token, tagged ebb:job and ebb:token, user data starting ebb-agent),
 * TerminateInstances, and DescribeInstances filtered on the ebb:token tag
 * for reconciliation. A spot instance that EC2 took away
 * (Server.SpotInstanceTermination) is reported LOST once and listed as
 * preempted, whether or not its agent managed to say so.
 *
 * A gang (count > 1) is first given a cluster placement group (aws_group.c),
 * then started with one RunInstances of MinCount = MaxCount = count in it:
 * all or none. A member's rank is its amiLaunchIndex; the gang is one
 * instance whose id joins its members' in rank order (ebb/gang.h), and
 * lists group instances by their token into such gangs. An answer that is
 * no gang of `count` (too few, ranks missing or repeated, an id holding
 * the separator) fails the launch, and what it started is terminated.
 *
 * A replacement member (ebb_launch.join_gang) is one RunInstances into
 * the gang's placement group and zone, once DescribeInstances shows the
 * gang running without that rank (aws_join.c checks); its rank is its
 * ebb:rank tag, which lists read before amiLaunchIndex, and its
 * ClientToken is the join's own (common/gang_join.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/gang.h>
#include <ebb/units.h>

#include "aws.h"
#include "aws_ec2.h"
#include "aws_userdata.h"
#include "common/gang_join.h"

#define TAG_JOB "ebb:job"
#define TAG_TOKEN "ebb:token"
#define TAG_RANK "ebb:rank"
#define CLIENT_TOKEN_MAX GANG_JOIN_CLIENT_TOKEN_MAX
#define USERDATA_MAX 16384  /* EC2's limit, before base64 */
/* Placement groups deleted at most by one list (aws_group.c). */
#define AWS_GROUP_DELETES_PER_LIST 4

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
    char client_token[CLIENT_TOKEN_MAX + 1];
    unsigned count;
    char group[AWS_GROUP_NAME_MAX]; /* a gang's placement group; "" for one */
    char *params;                   /* RunInstances', while the group is made
                                     * or a join's gang looked at */
    /* A replacement member's: the gang's id and the rank it takes. */
    char *join_gang;
    unsigned join_rank;
    char zone[32];
};

static void launch_free(struct launch *l)
{
    free(l->params);
    free(l->join_gang);
    free(l);
}

static int terminate_ids(struct aws *a, const char *what, const char *region,
                         const struct aws_instance_set *set, ebb_done_cb cb,
                         void *arg);

/* What a launch EC2 answered badly started: found by its token's tag
 * (the answer itself may leave instances out), then terminated. */
struct sweep {
    struct aws *a;
    char region[32];
    char token[CLIENT_TOKEN_MAX + 1]; /* the launch's ClientToken */
};

static void on_swept(void *arg, const struct aws_reply *r)
{
    struct sweep *w = arg;
    struct aws_instance_set set = {0};
    char next[8];
    int rc = r->status;
    if (rc == 0)
        rc = aws_parse_instances(r->body, r->body_len, &set, next, sizeof(next));
    if (rc == 0)
        rc = terminate_ids(w->a, w->token, w->region, &set, NULL, NULL);
    if (rc != 0 && rc != EBB_ECANCELED)
        w->a->host->log(w->a->host->ctx, EBB_LOG_ERROR,
                        "%s: could not terminate what launch %s started: %s; the "
                        "next reconciliation will find it by its tags", w->region,
                        w->token, ebb_strerror(rc));
    free(set.v);
    free(w);
}

/* A gang's launch is found by its token's tag, a join (whose gang runs
 * on) by its own ClientToken. */
static int sweep_launch(struct aws *a, const char *region, const char *filter,
                        const char *token)
{
    struct sweep *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return EBB_ENOMEM;
    w->a = a;
    snprintf(w->region, sizeof(w->region), "%s", region);
    snprintf(w->token, sizeof(w->token), "%s", token);
    struct ebb_buf p = {0};
    aws_param(&p, "Filter.1.Name", filter);
    aws_param(&p, "Filter.1.Value.1", token);
    aws_param(&p, "MaxResults", "1000");
    int rc = p.failed ? EBB_ENOMEM
                      : aws_call(a, region, "DescribeInstances", p.data, on_swept, w);
    ebb_buf_free(&p);
    if (rc != 0)
        free(w);
    return rc;
}

/* Why RunInstances' answer is no gang of `count` we can report: fewer or
 * more instances, a launch index missing, out of range or repeated, an id
 * holding the gang separator. NULL when it is one; `rank_of` then maps
 * each rank to its instance. */
static const char *bad_answer(const struct aws_instance_set *set, unsigned count,
                              size_t *rank_of, char *why, size_t size)
{
    if (set->n != count) {
        snprintf(why, size, "%zu instances for %u asked", set->n, count);
        return why;
    }
    for (size_t r = 0; r < count; r++)
        rank_of[r] = SIZE_MAX;
    for (size_t i = 0; i < set->n; i++) {
        const struct aws_ec2_instance *in = &set->v[i];
        int k = in->launch_index;
        if (strchr(in->id, EBB_GANG_SEP) != NULL) {
            snprintf(why, size, "instance id \"%s\" holds '%c'", in->id, EBB_GANG_SEP);
            return why;
        }
        if (count == 1)
            k = 0; /* a single instance's index is not needed */
        if (k < 0 || (unsigned)k >= count || rank_of[k] != SIZE_MAX) {
            snprintf(why, size, "instance %s has %s amiLaunchIndex %d", in->id,
                     k < 0 ? "no" : (unsigned)k >= count ? "an out-of-range"
                                                         : "a repeated",
                     k);
            return why;
        }
        rank_of[k] = i;
    }
    return NULL;
}

/* The gang's state from its members' (`n` of them): the least advanced
 * one. */
struct gang_count {
    size_t n, pending, running, gone;
};

static void gang_count_add(struct gang_count *c, enum ebb_instance_state s)
{
    c->n++;
    c->pending += s == EBB_INSTANCE_PENDING;
    c->running += s == EBB_INSTANCE_RUNNING;
    c->gone += s == EBB_INSTANCE_TERMINATED;
}

static enum ebb_instance_state gang_state(const struct gang_count *c)
{
    if (c->pending > 0)
        return EBB_INSTANCE_PENDING;
    if (c->running == c->n)
        return EBB_INSTANCE_RUNNING;
    if (c->gone == c->n)
        return EBB_INSTANCE_TERMINATED;
    return EBB_INSTANCE_STOPPING;
}

static void launch_answer(struct launch *l, struct aws_instance_set *set,
                          const size_t *rank_of)
{
    struct ebb_buf ids = {0};
    struct gang_count c = {0};
    for (size_t r = 0; r < l->count; r++) {
        struct aws_ec2_instance *i = &set->v[rank_of[r]];
        snprintf(i->region, sizeof(i->region), "%s", l->region);
        /* RunInstances echoes the tags; the token is ours in any case. */
        if (i->token[0] == '\0')
            snprintf(i->token, sizeof(i->token), "%s", l->token);
        aws_known_add(l->a, i->id, l->region);
        gang_count_add(&c, state_of(i->state));
        ebb_gang_append(&ids, i->id);
    }
    if (ids.failed) {
        ebb_buf_free(&ids);
        l->cb(l->arg, EBB_ENOMEM, NULL);
        return;
    }
    struct ebb_instance v;
    view(&set->v[rank_of[0]], &v);
    v.id = ids.data;
    v.state = gang_state(&c);
    l->cb(l->arg, 0, &v);
    ebb_buf_free(&ids);
}

static void on_launched(void *arg, const struct aws_reply *r)
{
    struct launch *l = arg;
    struct aws *a = l->a;
    if (r->status != 0) {
        if (r->status != EBB_ECANCELED)
            log_failure(a, l->region, "RunInstances", r);
        /* All or nothing: a gang EC2 could not start leaves no instance
         * in its group (a join's gang runs on in it). */
        if (r->status != EBB_ECANCELED && l->group[0] != '\0' && l->join_gang == NULL)
            aws_group_delete(a, l->region, l->group);
        l->cb(l->arg, r->status, NULL);
        launch_free(l);
        return;
    }
    struct aws_instance_set set = {0};
    char next[8], why[160];
    size_t rank_of[AWS_GANG_MAX];
    int rc = aws_parse_instances(r->body, r->body_len, &set, next, sizeof(next));
    if (rc == 0 && set.n == 0)
        rc = EBB_EPROTO;
    if (rc != 0) {
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "%s: RunInstances answered with no instance we can read; "
                     "the next reconciliation will find it by its tags",
                     l->region);
        l->cb(l->arg, rc, NULL);
    } else if (bad_answer(&set, l->count, rank_of, why, sizeof(why)) != NULL) {
        /* Whatever EC2 started is no gang ebb can run: end it all. */
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "%s: RunInstances for launch %s answered with %s; "
                     "terminating what it started", l->region, l->token, why);
        rc = l->join_gang != NULL
                 ? sweep_launch(a, l->region, "client-token", l->client_token)
                 : sweep_launch(a, l->region, "tag:" TAG_TOKEN, l->token);
        if (rc != 0)
            a->host->log(a->host->ctx, EBB_LOG_ERROR,
                         "%s: could not terminate what launch %s started: %s; "
                         "the next reconciliation will find it by its tags",
                         l->region, l->token, ebb_strerror(rc));
        l->cb(l->arg, EBB_EPROTO, NULL);
    } else {
        launch_answer(l, &set, rank_of);
    }
    free(set.v);
    launch_free(l);
}

/* The gang's placement group exists (made now, or by the launch this one
 * repeats): start the instances in it. */
static void on_group_created(void *arg, const struct aws_reply *r)
{
    struct launch *l = arg;
    int status = r->status;
    if (status == 0)
        aws_group_forget(l->a, l->group);
    else if (strcmp(r->code, "InvalidPlacementGroup.Duplicate") == 0)
        status = 0;
    if (status != 0 && status != EBB_ECANCELED)
        log_failure(l->a, l->region, "CreatePlacementGroup", r);
    if (status == 0)
        status = aws_call(l->a, l->region, "RunInstances", l->params, on_launched, l);
    if (status != 0) {
        l->cb(l->arg, status, NULL);
        launch_free(l);
    }
}

/* The job and the token; a replacement member's rank (`rank` >= 0). */
static void tag_params(struct ebb_buf *p, const char *resource,
                       const struct ebb_launch *req, int rank)
{
    aws_param(p, "TagSpecification.1.ResourceType", resource);
    aws_param(p, "TagSpecification.1.Tag.1.Key", TAG_JOB);
    aws_param(p, "TagSpecification.1.Tag.1.Value", req->job_id);
    aws_param(p, "TagSpecification.1.Tag.2.Key", TAG_TOKEN);
    aws_param(p, "TagSpecification.1.Tag.2.Value", req->token);
    if (rank >= 0) {
        char v[16];
        snprintf(v, sizeof(v), "%d", rank);
        aws_param(p, "TagSpecification.1.Tag.3.Key", TAG_RANK);
        aws_param(p, "TagSpecification.1.Tag.3.Value", v);
    }
}

static int create_group(struct launch *l, const struct ebb_launch *req)
{
    struct ebb_buf p = {0};
    aws_param(&p, "GroupName", l->group);
    aws_param(&p, "Strategy", "cluster");
    tag_params(&p, "placement-group", req, -1);
    int rc = p.failed ? EBB_ENOMEM
                      : aws_call(l->a, l->region, "CreatePlacementGroup", p.data,
                                 on_group_created, l);
    ebb_buf_free(&p);
    return rc;
}

static int launch_params(struct aws *a, const struct launch *l,
                         const struct ebb_launch *req, struct ebb_buf *p)
{
    const char *group = l->group;
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
    char count[16];
    snprintf(count, sizeof(count), "%u", req->count > 1 ? req->count : 1);
    aws_param(p, "MinCount", count);
    aws_param(p, "MaxCount", count);
    aws_param(p, "ClientToken", l->client_token);
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
    if (group[0] != '\0')
        aws_param(p, "Placement.GroupName", group);
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
    tag_params(p, "instance", req, l->join_gang != NULL ? (int)l->join_rank : -1);

    const char *const *tokens = &req->agent_token;
    size_t n_tokens = 1;
    if (req->count > 1) {
        tokens = req->agent_tokens;
        n_tokens = req->count;
    }
    char *script = aws_userdata_script(
        a->cfg->agent_command, a->cfg->agent_setup, req->agent_url, tokens, n_tokens,
        EBB_HAS(struct ebb_launch, req, agent_tls_pin) ? req->agent_tls_pin : NULL,
        EBB_HAS(struct ebb_launch, req, agent_tls_ca) ? req->agent_tls_ca : NULL);
    if (script != NULL && strlen(script) > USERDATA_MAX) {
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "launch for job %s: its boot script (%zu bytes, with %zu agent "
                     "tokens) is over EC2's %d bytes of user data; not launching",
                     req->job_id, strlen(script), n_tokens, USERDATA_MAX);
        free(script);
        return EBB_EINVAL;
    }
    char *b64 = script != NULL ? aws_base64(script) : NULL;
    if (b64 != NULL)
        aws_param(p, "UserData", b64);
    free(b64);
    free(script);
    return b64 == NULL || p->failed ? EBB_ENOMEM : 0;
}

/* ---- a replacement member (ebb_launch.join_gang) ---- */

/* The join `l` was asked for, as common/gang_join.c reads it. */
static struct ebb_launch join_of(const struct launch *l)
{
    return (struct ebb_launch){
        .struct_size = sizeof(struct ebb_launch),
        .token = l->token,
        .region = l->region,
        .zone = l->zone,
        .count = 1,
        .join_gang = l->join_gang,
        .join_rank = l->join_rank,
    };
}

/* The gang's instances, by its token's tag: if it takes the member, start
 * it (l->params). */
static void on_join_looked(void *arg, const struct aws_reply *r)
{
    struct launch *l = arg;
    struct aws *a = l->a;
    struct aws_instance_set set = {0};
    struct ebb_launch join = join_of(l);
    char next[8], why[192];
    int rc = r->status;
    if (rc != 0 && rc != EBB_ECANCELED)
        log_failure(a, l->region, "DescribeInstances", r);
    if (rc == 0 && aws_parse_instances(r->body, r->body_len, &set, next,
                                       sizeof(next)) != 0) {
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "%s: DescribeInstances answer is malformed", l->region);
        rc = EBB_EPROTO;
    }
    if (rc == 0 && aws_join_refusal(&set, &join, l->client_token, why, sizeof(why)) != NULL)
        rc = ebb_gang_join_refuse(a->host, &join, "%s", why);
    free(set.v);
    if (rc == 0)
        rc = aws_call(a, l->region, "RunInstances", l->params, on_launched, l);
    if (rc != 0) {
        l->cb(l->arg, rc, NULL);
        launch_free(l);
    }
}

/* What a join needs before EC2 is asked (gang_join_prepare()), into l. */
static int join_prepare(struct aws *a, const struct ebb_launch *req, struct launch *l)
{
    int rc = gang_join_prepare(a->host, req, AWS_GANG_MAX, l->client_token);
    if (rc != 0)
        return rc;
    l->join_gang = strdup(req->join_gang);
    l->join_rank = req->join_rank;
    snprintf(l->zone, sizeof(l->zone), "%s", req->zone != NULL ? req->zone : "");
    aws_group_name(req->token, l->group, sizeof(l->group));
    return l->join_gang != NULL ? 0 : EBB_ENOMEM;
}

/* DescribeInstances of the gang's members, by its token's tag, for
 * on_join_looked. */
static int join_look(struct launch *l)
{
    struct ebb_buf p = {0};
    aws_param(&p, "Filter.1.Name", "tag:" TAG_TOKEN);
    aws_param(&p, "Filter.1.Value.1", l->token);
    aws_param(&p, "MaxResults", "1000");
    int rc = p.failed ? EBB_ENOMEM
                      : aws_call(l->a, l->region, "DescribeInstances", p.data,
                                 on_join_looked, l);
    ebb_buf_free(&p);
    return rc;
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
    if (req->token == NULL || req->token[0] == '\0' ||
        strlen(req->token) > CLIENT_TOKEN_MAX || req->job_id == NULL ||
        req->instance_type == NULL)
        return EBB_EINVAL;
    if (req->agent_url == NULL || req->agent_url[0] == '\0' ||
        (req->count <= 1 && (req->agent_token == NULL || req->agent_token[0] == '\0'))) {
        /* An instance without its agent would run, and bill, for nothing. */
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "launch for job %s has no agent URL or token; not launching",
                     req->job_id);
        return EBB_EINVAL;
    }
    if (req->count > 1 && !ebb_gang_tokens_ok(req)) {
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "gang launch of %u for job %s: %s; not launching", req->count,
                     req->job_id,
                     req->count > AWS_GANG_MAX ? "more members than the 64 allowed"
                                               : "an agent token per member is missing");
        return EBB_EINVAL;
    }
    struct launch *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return EBB_ENOMEM;
    *l = (struct launch){.a = a, .cb = cb, .arg = arg,
                         .count = req->count > 1 ? req->count : 1};
    snprintf(l->region, sizeof(l->region), "%s", req->region);
    snprintf(l->token, sizeof(l->token), "%s", req->token);
    snprintf(l->client_token, sizeof(l->client_token), "%s", req->token);
    int join = EBB_HAS(struct ebb_launch, req, join_gang) && req->join_gang != NULL;
    int rc = join ? join_prepare(a, req, l) : 0;
    if (l->count > 1)
        aws_group_name(req->token, l->group, sizeof(l->group));
    struct ebb_buf p = {0};
    if (rc == 0)
        rc = launch_params(a, l, req, &p);
    if (rc == 0 && join) {
        l->params = ebb_buf_take(&p);
        rc = l->params != NULL ? join_look(l) : EBB_ENOMEM;
    } else if (rc == 0 && l->count > 1) {
        l->params = ebb_buf_take(&p);
        rc = l->params != NULL ? create_group(l, req) : EBB_ENOMEM;
    } else if (rc == 0) {
        rc = aws_call(a, req->region, "RunInstances", p.data, on_launched, l);
    }
    ebb_buf_free(&p);
    if (rc != 0)
        launch_free(l);
    return rc;
}

/* ---- terminate ---- */

/* One TerminateInstances of every member of a gang (or the one
 * instance), in the region it is known to be in, else in each configured
 * one until a region has them. */
struct term {
    struct aws *a;
    ebb_done_cb cb;        /* NULL: the outcome is only logged */
    void *arg;
    char *what;            /* the instance, or the launch, for logs */
    char *params;          /* InstanceId.1..N */
    char known_region[32]; /* tried first; "" when unknown */
    int tried_known;
    size_t next_region;    /* index into regions for the search */
    /* A gang's TerminateInstances fails as a whole when EC2 no longer
     * knows one member (it lists terminated instances for about an hour):
     * the members are then terminated one by one. */
    size_t members;        /* `what` is a gang of this many; 0: not one */
    size_t next_member;    /* the next one by one; 0 before */
    int member_status;     /* the first error one by one, else 0 or
                            * EBB_ENOTFOUND when no member was found */
};

static int term_next(struct term *t);
static void term_done(struct term *t, int status);

static void member_next(struct term *t);

static void on_member_done(void *arg, int status)
{
    struct term *t = arg;
    if (status == EBB_ECANCELED) {
        term_done(t, status);
        return;
    }
    if (status == 0 && t->member_status == EBB_ENOTFOUND)
        t->member_status = 0;
    else if (status != 0 && status != EBB_ENOTFOUND &&
             (t->member_status == 0 || t->member_status == EBB_ENOTFOUND))
        t->member_status = status;
    member_next(t);
}

static void member_next(struct term *t)
{
    while (t->next_member < t->members) {
        char id[sizeof(((struct aws_known *)0)->id)];
        ebb_gang_member(t->what, t->next_member++, id, sizeof(id));
        int rc = aws_terminate(t->a, id, on_member_done, t);
        if (rc == 0)
            return;
        if (t->member_status == 0 || t->member_status == EBB_ENOTFOUND)
            t->member_status = rc;
    }
    term_done(t, t->member_status);
}

static void term_done(struct term *t, int status)
{
    if (t->cb != NULL)
        t->cb(t->arg, status);
    else if (status == 0)
        t->a->host->log(t->a->host->ctx, EBB_LOG_INFO,
                        "terminated what launch %s started", t->what);
    else if (status != EBB_ECANCELED)
        t->a->host->log(t->a->host->ctx, EBB_LOG_ERROR,
                        "could not terminate what launch %s started: %s; the next "
                        "reconciliation will find it by its tags", t->what,
                        ebb_strerror(status));
    free(t->what);
    free(t->params);
    free(t);
}

static void on_terminated(void *arg, const struct aws_reply *r)
{
    struct term *t = arg;
    if (r->status == EBB_ENOTFOUND) {
        int rc = term_next(t);
        if (rc == 0)
            return;
        if (rc == EBB_ENOTFOUND && t->members > 1) {
            t->a->host->log(t->a->host->ctx, EBB_LOG_INFO,
                            "TerminateInstances %s: EC2 does not know every member; "
                            "terminating them one by one", t->what);
            t->member_status = EBB_ENOTFOUND;
            member_next(t);
            return;
        }
        if (rc != EBB_ENOTFOUND)
            t->a->host->log(t->a->host->ctx, EBB_LOG_WARN,
                            "TerminateInstances %s: %s", t->what, ebb_strerror(rc));
        term_done(t, rc);
        return;
    }
    if (r->status != 0 && r->status != EBB_ECANCELED)
        log_failure(t->a, t->known_region[0] ? t->known_region : "aws",
                    "TerminateInstances", r);
    term_done(t, r->status);
}

/* Asks the next region that may hold the instances: their known region
 * first, then every other configured one. EBB_ENOTFOUND when none is
 * left. */
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
    return aws_call(a, region, "TerminateInstances", t->params, on_terminated, t);
}

static struct term *term_new(struct aws *a, const char *what, ebb_done_cb cb,
                             void *arg)
{
    struct term *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    *t = (struct term){.a = a, .cb = cb, .arg = arg, .what = strdup(what)};
    if (t->what == NULL) {
        free(t);
        return NULL;
    }
    return t;
}

static int term_start(struct term *t, struct ebb_buf *params)
{
    t->params = params->failed ? NULL : ebb_buf_take(params);
    ebb_buf_free(params);
    int rc = t->params != NULL ? term_next(t) : EBB_ENOMEM;
    if (rc != 0) {
        free(t->what);
        free(t->params);
        free(t);
    }
    return rc;
}

/* Terminates every instance of `set` in `region` (a launch EC2 answered
 * badly) but those whose id holds the gang separator: no such id is
 * EC2's, and naming one would fail the whole call; the instance behind it
 * is found by its tags at the next reconciliation. */
static int terminate_ids(struct aws *a, const char *what, const char *region,
                         const struct aws_instance_set *set, ebb_done_cb cb,
                         void *arg)
{
    struct ebb_buf p = {0};
    size_t n = 0;
    for (size_t i = 0; i < set->n; i++)
        if (strchr(set->v[i].id, EBB_GANG_SEP) == NULL)
            aws_paramf(&p, set->v[i].id, "InstanceId.%zu", ++n);
    if (n == 0)
        return 0;
    struct term *t = term_new(a, what, cb, arg);
    if (t == NULL) {
        ebb_buf_free(&p);
        return EBB_ENOMEM;
    }
    snprintf(t->known_region, sizeof(t->known_region), "%s", region);
    t->next_region = a->cfg->regions.n;
    return term_start(t, &p);
}

int aws_terminate(void *self, const char *instance_id, ebb_done_cb cb, void *arg)
{
    struct aws *a = self;
    if (!a->have_creds)
        return EBB_EAUTH;
    size_t n = instance_id != NULL ? ebb_gang_size(instance_id) : 0;
    if (n == 0 || n > AWS_GANG_MAX)
        return EBB_EINVAL;
    struct ebb_buf p = {0};
    char first[sizeof(((struct aws_known *)0)->id)] = "";
    for (size_t i = 0; i < n; i++) {
        char id[sizeof(first)];
        if (ebb_gang_member(instance_id, i, id, sizeof(id)) != 0) {
            ebb_buf_free(&p);
            return EBB_EINVAL;
        }
        if (i == 0)
            snprintf(first, sizeof(first), "%s", id);
        aws_paramf(&p, id, "InstanceId.%zu", i + 1);
    }
    struct term *t = term_new(a, instance_id, cb, arg);
    if (t == NULL) {
        ebb_buf_free(&p);
        return EBB_ENOMEM;
    }
    t->members = n;
    struct aws_known *k = aws_known_find(a, first);
    if (k != NULL)
        snprintf(t->known_region, sizeof(t->known_region), "%s", k->region);
    return term_start(t, &p);
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

/* Orders instances by region and token, then rank (aws_member_rank),
 * then launch time: a gang's members become neighbours, in rank order,
 * a rank's replacement after the member it replaced. */
static int by_gang(const void *x, const void *y)
{
    const struct aws_ec2_instance *a = x, *b = y;
    int c = strcmp(a->region, b->region);
    if (c == 0)
        c = strcmp(a->token, b->token);
    int ra = aws_member_rank(a), rb = aws_member_rank(b);
    if (c == 0)
        c = (ra > rb) - (ra < rb);
    if (c == 0)
        c = (a->launched_at > b->launched_at) - (a->launched_at < b->launched_at);
    return c != 0 ? c : strcmp(a->id, b->id);
}

/* How many instances from v[0] on are one gang's (or one instance). */
static size_t gang_len(const struct aws_ec2_instance *v, size_t n)
{
    size_t k = 1;
    while (v[0].token[0] != '\0' && k < n && strcmp(v[k].region, v[0].region) == 0 &&
           strcmp(v[k].token, v[0].token) == 0)
        k++;
    return k;
}

static int live(const struct aws_ec2_instance *i)
{
    return strcmp(i->state, "shutting-down") != 0 && strcmp(i->state, "terminated") != 0;
}

/* Reports a member, or an instance, EC2 took away, once. */
static void report_lost(struct aws *a, const struct aws_ec2_instance *in, int rank,
                        ebb_time_ms now)
{
    struct aws_known *k = aws_known_add(a, in->id, in->region);
    if (!spot_preempted(in) || k == NULL || k->lost_reported)
        return;
    k->lost_reported = 1;
    struct ebb_instance_event ev = {
        .struct_size = sizeof(struct ebb_instance_event),
        .kind = EBB_EVENT_LOST,
        .instance_id = in->id,
        .token = in->token,
        .at = now,
        .reason = "spot capacity reclaimed by EC2 (Server.SpotInstanceTermination)",
        .rank = rank,
    };
    a->host->instance_event(a->host->ctx, &ev);
}

/* Whether gang member v[i] of v[0..n) is shown: a live one, or when none
 * is, the last of its rank (a replacement, not the member it replaced). */
static int shown(const struct aws_ec2_instance *v, size_t n, size_t i, size_t n_live)
{
    if (n_live > 0)
        return live(&v[i]);
    return i + 1 == n || aws_member_rank(&v[i + 1]) != aws_member_rank(&v[i]);
}

/* The entry of the gang (or single instance) v[0..n): the members still
 * there, or all ranks' last when none is, in rank order (a member's rank
 * is its ebb:rank tag, else its amiLaunchIndex). A gang's joined id goes to
 * *owned (the caller frees it). Deletes the placement group of a gang
 * none of whose members is left (EC2 refuses while one is still shutting
 * down: a later list asks again), at most `*deletes` more per list. */
static int gang_view(struct aws *a, const struct aws_ec2_instance *v, size_t n,
                     ebb_time_ms now, int *deletes, struct ebb_instance *out,
                     char **owned)
{
    char group[AWS_GROUP_NAME_MAX];
    aws_group_name(v[0].token, group, sizeof(group));
    int gang = n > 1 || strcmp(v[0].group, group) == 0;
    size_t n_live = 0, first = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        n_live += live(&v[i]);
        report_lost(a, &v[i], gang ? aws_member_rank(&v[i]) : -1, now);
    }
    int ranks_ok = 1, last = -1;
    for (size_t i = 0; i < n; i++) {
        if (!shown(v, n, i, n_live))
            continue;
        ranks_ok &= aws_member_rank(&v[i]) > last;
        last = aws_member_rank(&v[i]);
    }
    if (gang && !ranks_ok)
        a->host->log(a->host->ctx, EBB_LOG_WARN,
                     "%s: the gang of launch %s has members with a missing or "
                     "repeated rank; listed by rank, then launch time", v[0].region,
                     v[0].token);
    struct ebb_buf ids = {0};
    struct gang_count c = {0};
    ebb_time_ms launched_at = 0;
    int preempted = 0;
    for (size_t i = 0; i < n; i++) {
        if (!shown(v, n, i, n_live))
            continue;
        if (first == SIZE_MAX)
            first = i;
        ebb_gang_append(&ids, v[i].id);
        gang_count_add(&c, state_of(v[i].state));
        preempted |= spot_preempted(&v[i]);
        if (launched_at == 0 || (v[i].launched_at != 0 && v[i].launched_at < launched_at))
            launched_at = v[i].launched_at;
    }
    view(&v[first], out);
    out->state = gang_state(&c);
    out->preempted = n_live == 0 && preempted;
    out->launched_at = launched_at;
    *owned = NULL;
    if (gang) {
        if (ids.failed) {
            ebb_buf_free(&ids);
            return EBB_ENOMEM;
        }
        *owned = ebb_buf_take(&ids);
        out->id = *owned;
    }
    ebb_buf_free(&ids);
    if (gang && n_live == 0 && strcmp(v[0].group, group) == 0 && *deletes > 0 &&
        aws_group_delete(a, v[0].region, group) == 0)
        (*deletes)--;
    return 0;
}

static void list_finish(struct list *l, int status)
{
    struct aws *a = l->a;
    struct ebb_instance *v = NULL;
    char **owned = NULL;
    size_t n = 0;
    if (status == 0 && l->set.n > 0) {
        v = calloc(l->set.n, sizeof(*v));
        owned = calloc(l->set.n, sizeof(*owned));
        if (v == NULL || owned == NULL)
            status = EBB_ENOMEM;
    }
    if (status == 0) {
        ebb_time_ms now = a->host->now(a->host->ctx);
        int deletes = AWS_GROUP_DELETES_PER_LIST;
        struct aws_ec2_instance *in = l->set.v;
        /* No EC2 id holds the gang separator; one that does would read as
         * a gang of its own. */
        size_t kept = 0;
        for (size_t i = 0; i < l->set.n; i++) {
            if (strchr(in[i].id, EBB_GANG_SEP) == NULL)
                in[kept++] = in[i];
            else
                a->host->log(a->host->ctx, EBB_LOG_ERROR,
                             "%s: DescribeInstances lists instance \"%s\", which "
                             "is no EC2 id; left out", in[i].region, in[i].id);
        }
        l->set.n = kept;
        if (l->set.n > 0) /* an empty list may have no array at all */
            qsort(in, l->set.n, sizeof(*in), by_gang);
        for (size_t i = 0; i < l->set.n && status == 0; n++) {
            size_t k = gang_len(&in[i], l->set.n - i);
            status = gang_view(a, &in[i], k, now, &deletes, &v[n], &owned[n]);
            i += k;
        }
    }
    l->cb(l->arg, status, status == 0 ? v : NULL, status == 0 ? n : 0);
    for (size_t i = 0; owned != NULL && i < n; i++)
        free(owned[i]);
    free(owned);
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
