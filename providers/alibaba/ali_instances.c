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
 *
 * A gang (count > 1) is one RunInstances with Amount = MinAmount = count
 * (all or none) in the offer's zone, named HostName GANG_HOST with
 * UniqueSuffix, so that member k is GANG_HOST followed by k + 1 in three
 * digits: the rank its boot script reads from the metadata service's
 * hostname to pick its agent token, and the one DescribeInstances shows.
 * The launch answers once DescribeInstances has told each member's rank,
 * with the members' ids joined in rank order (ebb/gang.h); lists group
 * the members by token. An answer that is no gang (too few ids, an id
 * twice or holding the separator, ranks missing or repeated) fails the
 * launch, and what it started, found by its token's tag, is deleted.
 * Terminating a gang looks its members up and deletes those still there
 * with one DeleteInstances.
 *
 * A replacement member (ebb_launch.join_gang) is one RunInstances of
 * Amount = MinAmount = 1 in the gang's zone named by its rank (HostName
 * GANG_HOST and the three digits, no UniqueSuffix), so lists and its boot
 * script read its rank as they read the others'; it carries its join's
 * ClientToken (common/gang_join.h) in the tag ALI_TAG_JOIN. It is started
 * once DescribeInstances by the token's tag shows the gang running without
 * that rank; a launch whose answer is no one instance releases what it
 * started by that tag, the gang running on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include <ebb/buf.h>
#include <ebb/gang.h>
#include <ebb/shquote.h>
#include <ebb/units.h>

#include "alibaba.h"
#include "common/gang_join.h"

/* One instance as DescribeInstances reports it; strings owned. */
struct inst {
    char *id, *token, *job_id, *region, *zone, *type;
    enum ebb_market market;
    enum ebb_instance_state state;
    ebb_time_ms launched_at;
    int preempted;
    int rank; /* a gang member's, from its HostName; -1 otherwise */
};

/* A gang's members are named GANG_HOST with UniqueSuffix's 001, 002 ...:
 * rank k is GANG_HOST followed by k + 1 in three digits. */
#define GANG_HOST "ebb-rank"
#define GANG_MAX 64 /* as job specs' nodes; ECS allows 100 */

/* LAUNCH, TERMINATE and LIST complete a provider call; SWEEP releases
 * what a launch whose answer was no gang started, and only logs. */
enum kind { LAUNCH, TERMINATE, LIST, SWEEP };

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
    unsigned count;       /* LAUNCH: the gang's size (1: one instance) */
    /* LAUNCH of a replacement member: the gang and rank, its ClientToken,
     * and RunInstances' parameters while the gang is looked at. */
    char *join_gang;
    unsigned join_rank;
    char client_token[GANG_JOIN_CLIENT_TOKEN_MAX + 1];
    struct ali_params run;
    char *id;             /* TERMINATE: the instance (a gang's joined id);
                           * SWEEP: the tag's value */
    const char *sweep_tag; /* SWEEP: the tag that finds what to release */
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
    free(o->join_gang);
    ali_params_free(&o->run);
    free(o->id);
    free(o->next_token);
    free(o);
}

/* Orders instances by region and token, gang members by rank after the
 * instances that are none. */
static int by_gang(const void *x, const void *y)
{
    const struct inst *a = x, *b = y;
    int c = strcmp(a->region, b->region);
    if (c == 0)
        c = strcmp(a->token, b->token);
    if (c == 0)
        c = (a->rank > b->rank) - (a->rank < b->rank);
    if (c == 0)
        c = (a->launched_at > b->launched_at) - (a->launched_at < b->launched_at);
    return c != 0 ? c : strcmp(a->id, b->id);
}

/* Whether member v[i] of v[0..n) is shown: one not being reclaimed, or
 * when every one is, the last of its rank (a replacement, not the member
 * it replaced). */
static int shown(const struct inst *v, size_t n, size_t i, size_t n_live)
{
    if (n_live > 0)
        return !v[i].preempted;
    return i + 1 == n || v[i + 1].rank != v[i].rank;
}

/* One gang's entry from its members v[0..n) in rank order: the joined ids
 * of those not being reclaimed (when every one is, each rank's last), in
 * *owned. */
static int gang_view(struct ali *a, const struct inst *v, size_t n,
                     struct ebb_instance *out, char **owned)
{
    size_t n_live = 0, pending = 0, running = 0, n_shown = 0;
    for (size_t i = 0; i < n; i++)
        n_live += !v[i].preempted;
    const struct inst *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!shown(v, n, i, n_live))
            continue;
        if (prev != NULL && v[i].rank == prev->rank)
            a->host->log(a->host->ctx, EBB_LOG_WARN,
                         "%s: instances %s and %s of launch %s both have rank %d",
                         v[i].region, prev->id, v[i].id, v[i].token, v[i].rank);
        prev = &v[i];
    }
    struct ebb_buf ids = {0};
    const struct inst *first = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!shown(v, n, i, n_live))
            continue;
        if (first == NULL)
            first = &v[i];
        ebb_gang_append(&ids, v[i].id);
        pending += v[i].state == EBB_INSTANCE_PENDING;
        running += v[i].state == EBB_INSTANCE_RUNNING;
        n_shown++;
    }
    if (ids.failed) {
        ebb_buf_free(&ids);
        return EBB_ENOMEM;
    }
    view(first, out);
    *owned = ebb_buf_take(&ids);
    ebb_buf_free(&ids);
    out->id = *owned;
    out->state = pending > 0        ? EBB_INSTANCE_PENDING
                 : running == n_shown ? EBB_INSTANCE_RUNNING
                                    : EBB_INSTANCE_STOPPING;
    out->preempted = n_live == 0;
    return 0;
}

/* The list: one entry per instance that is no gang member, one per gang
 * (its members share the launch's token and are named by rank). */
static int list_view(struct inst_op *o, struct ebb_instance *many, char **owned,
                     size_t *n)
{
    struct inst *v = o->found;
    qsort(v, o->n_found, sizeof(*v), by_gang);
    *n = 0;
    for (size_t i = 0; i < o->n_found;) {
        size_t k = 1;
        while (v[i].rank >= 0 && i + k < o->n_found && v[i + k].rank >= 0 &&
               strcmp(v[i + k].region, v[i].region) == 0 &&
               strcmp(v[i + k].token, v[i].token) == 0)
            k++;
        if (v[i].rank < 0) {
            view(&v[i], &many[*n]);
        } else {
            int rc = gang_view(o->a, &v[i], k, &many[*n], &owned[*n]);
            if (rc != 0)
                return rc;
        }
        (*n)++;
        i += k;
    }
    return 0;
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
    case SWEEP:
        if (status != 0 && status != EBB_ECANCELED)
            o->a->host->log(o->a->host->ctx, EBB_LOG_ERROR,
                            "could not release what launch %s started: %s; the "
                            "next reconciliation will find it by its tags", o->id,
                            ebb_strerror(status));
        else if (status == 0)
            o->a->host->log(o->a->host->ctx, EBB_LOG_INFO,
                            "released what launch %s started", o->id);
        break;
    case LIST: {
        char **owned = NULL;
        if (status == 0 && o->n_found > 0) {
            many = calloc(o->n_found, sizeof(*many));
            owned = calloc(o->n_found, sizeof(*owned));
            if (many == NULL || owned == NULL)
                status = EBB_ENOMEM;
            else
                status = list_view(o, many, owned, &n);
        }
        o->cb.list(arg, status, many, status == 0 ? n : 0);
        for (size_t i = 0; owned != NULL && i < n; i++)
            free(owned[i]);
        free(owned);
        free(many);
        break;
    }
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
    ebb_buf_puts(&s, "#!/bin/sh\numask 077\nmkdir -p /run/ebb\n");
    if (req->count > 1) {
        /* A gang member takes the token of its rank, which its hostname
         * (from the metadata service) names. */
        ebb_buf_puts(&s, "host=$(curl -sf http://100.100.100.200/latest/meta-data/hostname)\n"
                         "case \"${host%%.*}\" in\n");
        for (unsigned k = 0; k < req->count; k++) {
            ebb_buf_printf(&s, GANG_HOST "%03u) printf '%%s' ", k + 1);
            ebb_buf_sh_quote(&s, req->agent_tokens[k]);
            ebb_buf_puts(&s, " > /run/ebb/agent-token ;;\n");
        }
        ebb_buf_puts(&s, "*) echo \"ebb: no agent token for hostname '$host'\" >&2; "
                         "exit 1 ;;\nesac\n");
    } else {
        ebb_buf_puts(&s, "printf '%s' ");
        ebb_buf_sh_quote(&s, req->agent_token ? req->agent_token : "");
        ebb_buf_puts(&s, " > /run/ebb/agent-token\n");
    }
    const char *pin = EBB_HAS(struct ebb_launch, req, agent_tls_pin) ? req->agent_tls_pin : NULL;
    const char *ca = EBB_HAS(struct ebb_launch, req, agent_tls_ca) ? req->agent_tls_ca : NULL;
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

static int sweep_start(struct ali *a, const char *region, const char *tag,
                       const char *value);
static void on_ranked(void *arg, int status, json_t *body, const char *code);

/* RunInstances' answer is no gang of o->count (`why`): release what the
 * launch started, found by its token's tag, and fail it. */
static void launch_refused(struct inst_op *o, const char *why)
{
    struct ali *a = o->a;
    a->host->log(a->host->ctx, EBB_LOG_ERROR,
                 "%s: RunInstances for launch %s answered with %s; releasing what "
                 "it started", o->launched.region, o->launched.token, why);
    /* A join's gang runs on: only what the join started, by its tag. */
    int rc = o->join_gang != NULL
                 ? sweep_start(a, o->launched.region, ALI_TAG_JOIN, o->client_token)
                 : sweep_start(a, o->launched.region, ALI_TAG_TOKEN, o->launched.token);
    if (rc != 0)
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "could not release what launch %s started: %s; the next "
                     "reconciliation will find it by its tags", o->launched.token,
                     ebb_strerror(rc));
    complete(o, EBB_EPROTO);
}

/* Why the ids of InstanceIdSet are no gang of `count`, or NULL. */
static const char *bad_ids(json_t *ids, unsigned count, char *why, size_t size)
{
    size_t n = json_array_size(ids);
    if (n != count) {
        snprintf(why, size, "%zu instances for %u asked", n, count);
        return why;
    }
    for (size_t i = 0; i < n; i++) {
        const char *id = json_string_value(json_array_get(ids, i));
        if (id == NULL || id[0] == '\0' || strpbrk(id, ",\"\\") != NULL) {
            snprintf(why, size, "instance id \"%s\" that is no ECS id", id ? id : "");
            return why;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(id, json_string_value(json_array_get(ids, j))) == 0) {
                snprintf(why, size, "instance %s twice", id);
                return why;
            }
        }
    }
    return NULL;
}

/* A gang's ids are known: DescribeInstances tells each one's rank (its
 * HostName). */
static void describe_ranks(struct inst_op *o, json_t *ids)
{
    struct ebb_buf list = {0}, started = {0};
    ebb_buf_puts(&list, "[");
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id)
    {
        ebb_buf_printf(&list, "%s\"%s\"", i ? "," : "", json_string_value(id));
        ebb_gang_append(&started, json_string_value(id));
    }
    ebb_buf_puts(&list, "]");
    /* What RunInstances started, for on_ranked to check against. */
    o->id = started.failed ? NULL : ebb_buf_take(&started);
    ebb_buf_free(&started);
    if (o->id == NULL)
        list.failed = 1;
    struct ali_params q = {0};
    ali_params_add(&q, "InstanceIds", list.data ? list.data : "");
    ali_params_add(&q, "MaxResults", "100");
    q.failed |= list.failed;
    ebb_buf_free(&list);
    o->rpc = ali_rpc_start(o->a, o->launched.region, "DescribeInstances", &q,
                           on_ranked, o);
    if (o->rpc == NULL)
        launch_refused(o, "instances whose ranks could not be asked for (out of memory)");
}

static void on_launched(void *arg, int status, json_t *body, const char *code)
{
    struct inst_op *o = arg;
    struct ali *a = o->a;
    o->rpc = NULL;
    char why[160];
    if (status == 0) {
        json_t *ids = json_object_get(json_object_get(body, "InstanceIdSets"),
                                      "InstanceIdSet");
        if (bad_ids(ids, o->count, why, sizeof(why)) != NULL) {
            launch_refused(o, why);
            return;
        }
        if (o->count > 1) {
            describe_ranks(o, ids);
            return;
        }
        const char *id = json_string_value(json_array_get(ids, 0));
        o->launched.id = strdup(id);
        if (o->launched.id == NULL)
            status = EBB_ENOMEM;
        else
            ali_remember_place(a, id, o->launched.region);
    } else if (status == EBB_ENOCAPACITY) {
        a->host->log(a->host->ctx, EBB_LOG_INFO, "no %s capacity%s in %s (%s)",
                     o->launched.type, o->count > 1 ? " for the whole gang" : "",
                     o->launched.zone[0] ? o->launched.zone : o->launched.region,
                     code);
    }
    complete(o, status);
}

/* Rank k from HostName GANG_HOST followed by k + 1 in three digits; -1. */
static int rank_of_host(const char *host)
{
    size_t n = strlen(GANG_HOST);
    if (strncmp(host, GANG_HOST, n) != 0 || strlen(host + n) != 3)
        return -1;
    int v = 0;
    for (const char *p = host + n; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v - 1;
}

/* The gang's members as DescribeInstances shows them: each rank once. */
static void on_ranked(void *arg, int status, json_t *body, const char *code)
{
    struct inst_op *o = arg;
    struct ali *a = o->a;
    o->rpc = NULL;
    (void)code;
    char why[160];
    if (status != 0) {
        snprintf(why, sizeof(why), "instances whose ranks DescribeInstances could "
                 "not tell (%s)", ebb_strerror(status));
        launch_refused(o, why);
        return;
    }
    json_t *list = json_object_get(json_object_get(body, "Instances"), "Instance");
    const char *by_rank[GANG_MAX] = {0};
    size_t i;
    json_t *j;
    if (json_array_size(list) != o->count) {
        snprintf(why, sizeof(why), "%zu of its %u instances described",
                 json_array_size(list), o->count);
        launch_refused(o, why);
        return;
    }
    json_array_foreach(list, i, j)
    {
        const char *host = ali_json_str(j, "HostName");
        const char *id = ali_json_str(j, "InstanceId");
        int started = 0, twice = 0;
        char member[64];
        for (size_t k = 0; ebb_gang_member(o->id, k, member, sizeof(member)) == 0; k++)
            started |= strcmp(member, id) == 0;
        for (size_t k = 0; k < i; k++)
            twice |= strcmp(ali_json_str(json_array_get(list, k), "InstanceId"), id) == 0;
        if (!started || twice) {
            snprintf(why, sizeof(why), "instance %s described %s", id,
                     twice ? "twice" : "that it did not start");
            launch_refused(o, why);
            return;
        }
        int r = rank_of_host(host);
        if (r < 0 || (unsigned)r >= o->count || by_rank[r] != NULL) {
            snprintf(why, sizeof(why), "instance %s named \"%s\", %s",
                     ali_json_str(j, "InstanceId"), host,
                     r < 0 || (unsigned)r >= o->count ? "which is no rank of the gang"
                                                      : "a rank another member has");
            launch_refused(o, why);
            return;
        }
        by_rank[r] = ali_json_str(j, "InstanceId");
    }
    struct ebb_buf joined = {0};
    for (unsigned r = 0; r < o->count; r++) {
        if (by_rank[r] == NULL) {
            snprintf(why, sizeof(why), "no instance of rank %u", r);
            ebb_buf_free(&joined);
            launch_refused(o, why);
            return;
        }
        ali_remember_place(a, by_rank[r], o->launched.region);
        ebb_gang_append(&joined, by_rank[r]);
    }
    o->launched.id = joined.failed ? NULL : ebb_buf_take(&joined);
    ebb_buf_free(&joined);
    complete(o, o->launched.id != NULL ? 0 : EBB_ENOMEM);
}

/* ---- a replacement member (ebb_launch.join_gang) ---- */

static int recycling(json_t *inst);
static enum ebb_instance_state state_of(const char *status);
static const char *tag_value(json_t *inst, const char *key);

/* Why the gang's instances `list` (DescribeInstances by its token's tag)
 * take no member for join `o`, or NULL (gang_join_refusal()). */
static const char *join_refusal(struct inst_op *o, json_t *list, char *why, size_t size)
{
    size_t n = json_array_size(list), i;
    struct gang_join_member *v = calloc(n + 1, sizeof(*v));
    if (v == NULL)
        return "out of memory";
    json_t *j;
    size_t k = 0;
    json_array_foreach(list, i, j)
    {
        const char *token = tag_value(j, ALI_TAG_TOKEN);
        const char *join = tag_value(j, ALI_TAG_JOIN);
        enum ebb_instance_state st = state_of(ali_json_str(j, "Status"));
        if (token == NULL || strcmp(token, o->launched.token) != 0)
            continue;
        v[k++] = (struct gang_join_member){
            .id = ali_json_str(j, "InstanceId"),
            .zone = ali_json_str(j, "ZoneId"),
            .client_token = join != NULL ? join : "",
            .rank = rank_of_host(ali_json_str(j, "HostName")),
            .runs = (st == EBB_INSTANCE_RUNNING || st == EBB_INSTANCE_PENDING) &&
                    !recycling(j),
        };
    }
    struct ebb_launch req = {
        .struct_size = sizeof(req),
        .token = o->launched.token,
        .zone = o->launched.zone,
        .count = 1,
        .join_gang = o->join_gang,
        .join_rank = o->join_rank,
    };
    const char *r = gang_join_refusal(v, k, &req, o->client_token, why, size);
    if (r != NULL)
        ebb_gang_join_refuse(o->a->host, &req, "%s", why);
    free(v);
    return r;
}

/* The gang's instances, by its token's tag: if it takes the member, start
 * it (o->run). */
static void on_join_looked(void *arg, int status, json_t *body, const char *code)
{
    struct inst_op *o = arg;
    o->rpc = NULL;
    (void)code;
    json_t *list = json_object_get(json_object_get(body, "Instances"), "Instance");
    char why[192];
    if (status == 0 && !json_is_array(list))
        status = EBB_EPROTO;
    if (status != 0 && status != EBB_ECANCELED)
        o->a->host->log(o->a->host->ctx, EBB_LOG_WARN,
                        "%s: DescribeInstances of gang %s failed: %s",
                        o->launched.region, o->join_gang, ebb_strerror(status));
    if (status == 0 && join_refusal(o, list, why, sizeof(why)) != NULL)
        status = EBB_EINVAL;
    if (status == 0) {
        o->rpc = ali_rpc_start(o->a, o->launched.region, "RunInstances", &o->run,
                               on_launched, o);
        status = o->rpc != NULL ? 0 : EBB_ENOMEM;
    }
    if (status != 0)
        complete(o, status);
}

/* DescribeInstances of the gang's members, by its token's tag, for
 * on_join_looked (a gang of at most GANG_MAX: one page). */
static struct ali_rpc *join_look(struct inst_op *o)
{
    struct ali_params q = {0};
    ali_params_add(&q, "Tag.1.Key", ALI_TAG_TOKEN);
    ali_params_add(&q, "Tag.1.Value", o->launched.token);
    ali_params_add(&q, "MaxResults", "100");
    return ali_rpc_start(o->a, o->launched.region, "DescribeInstances", &q,
                         on_join_looked, o);
}

int ali_launch(struct ali *a, const struct ebb_launch *req, ebb_launch_cb cb,
               void *arg)
{
    if (req->token == NULL || req->token[0] == '\0' || strlen(req->token) > 64 ||
        req->region == NULL || req->instance_type == NULL)
        return EBB_EINVAL;
    int join = EBB_HAS(struct ebb_launch, req, join_gang) && req->join_gang != NULL;
    char client_token[GANG_JOIN_CLIENT_TOKEN_MAX + 1];
    snprintf(client_token, sizeof(client_token), "%s", req->token);
    if (join) {
        int rc = strpbrk(req->join_gang, "\"\\") != NULL
                     ? ebb_gang_join_refuse(a->host, req, "it holds no ECS ids")
                     : gang_join_prepare(a->host, req, GANG_MAX, client_token);
        if (rc != 0)
            return rc;
    }
    if (req->count > 1 && !ebb_gang_tokens_ok(req)) {
        a->host->log(a->host->ctx, EBB_LOG_ERROR,
                     "gang launch of %u for job %s: %s; not launching", req->count,
                     req->job_id ? req->job_id : "",
                     req->count > GANG_MAX ? "more members than the 64 allowed"
                                           : "an agent token per member is missing");
        return EBB_EINVAL;
    }
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
    ali_params_add(&q, "ClientToken", client_token);
    ali_params_addf(&q, "Amount", "%u", count);
    if (count > 1) {
        /* All or none, and each member named by its rank. */
        ali_params_addf(&q, "MinAmount", "%u", count);
        ali_params_add(&q, "HostName", GANG_HOST);
        ali_params_add(&q, "UniqueSuffix", "true");
    } else if (join) {
        /* Named as UniqueSuffix names that rank in the gang. */
        ali_params_add(&q, "MinAmount", "1");
        ali_params_addf(&q, "HostName", GANG_HOST "%03u", req->join_rank + 1);
    }
    ali_params_addf(&q, "InstanceName", "ebb-%s", req->job_id ? req->job_id : "");
    ali_params_add(&q, "Tag.1.Key", ALI_TAG_JOB);
    ali_params_add(&q, "Tag.1.Value", req->job_id ? req->job_id : "");
    ali_params_add(&q, "Tag.2.Key", ALI_TAG_TOKEN);
    ali_params_add(&q, "Tag.2.Value", req->token);
    if (join) {
        ali_params_add(&q, "Tag.3.Key", ALI_TAG_JOIN);
        ali_params_add(&q, "Tag.3.Value", client_token);
    }
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
    o->count = count;
    o->launched = (struct inst){
        .token = strdup(req->token),
        .job_id = strdup(req->job_id ? req->job_id : ""),
        .region = strdup(req->region),
        .zone = strdup(zone),
        .type = strdup(req->instance_type),
        .market = req->market,
        .state = EBB_INSTANCE_PENDING,
        .launched_at = ali_now(a),
        .rank = -1,
    };
    snprintf(o->client_token, sizeof(o->client_token), "%s", client_token);
    o->join_rank = join ? req->join_rank : 0;
    o->join_gang = join ? strdup(req->join_gang) : NULL;
    if (join && o->join_gang == NULL)
        q.failed = 1;
    if (o->launched.token && o->launched.job_id && o->launched.region &&
        o->launched.zone && o->launched.type && join) {
        o->run = q;
        q = (struct ali_params){0};
        o->rpc = join_look(o);
    } else if (o->launched.token && o->launched.job_id && o->launched.region &&
               o->launched.zone && o->launched.type) {
        o->rpc = ali_rpc_start(a, req->region, "RunInstances", &q, on_launched, o);
    }
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
        .rank = rank_of_host(ali_json_str(j, "HostName")),
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
        if (strchr(id, EBB_GANG_SEP) != NULL) {
            /* No ECS id holds the gang separator. */
            a->host->log(a->host->ctx, EBB_LOG_ERROR,
                         "%s: DescribeInstances lists instance \"%s\", which is no "
                         "ECS id; left out", region, id);
            continue;
        }
        ali_remember_place(a, id, region);
        if (add_found(o, j, region) != 0) {
            complete(o, EBB_ENOMEM);
            return;
        }
    }
    if ((o->kind == TERMINATE || o->kind == SWEEP) && o->n_found > 0) {
        delete_found(o, region);
        return;
    }
    if (o->kind == SWEEP) {
        complete(o, o->status); /* its launch's region only: nothing found */
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
        /* ["i-1","i-2"] of the gang's members (quotes were refused). */
        struct ebb_buf ids = {0};
        ebb_buf_puts(&ids, "[\"");
        for (const char *c = o->id; *c != '\0'; c++)
            ebb_buf_puts(&ids, *c == EBB_GANG_SEP ? "\",\"" : (char[]){*c, '\0'});
        ebb_buf_puts(&ids, "\"]");
        ali_params_add(&q, "InstanceIds", ids.data ? ids.data : "");
        q.failed |= ids.failed;
        ebb_buf_free(&ids);
        ali_params_add(&q, "MaxResults", "100");
    } else {
        ali_params_add(&q, "Tag.1.Key", o->kind == SWEEP ? o->sweep_tag : ALI_TAG_TOKEN);
        if (o->kind == SWEEP)
            ali_params_add(&q, "Tag.1.Value", o->id);
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

/* DeleteInstance of one instance, or DeleteInstances of several
 * (InstanceId.1..N), forced: they are running. */
static int delete_ids(struct inst_op *o, const char *region, const char *const *ids,
                      size_t n)
{
    struct ali_params q = {0};
    if (n == 1) {
        ali_params_add(&q, "InstanceId", ids[0]);
    } else {
        for (size_t i = 0; i < n; i++) {
            char key[32];
            snprintf(key, sizeof(key), "InstanceId.%zu", i + 1);
            ali_params_add(&q, key, ids[i]);
        }
    }
    ali_params_add(&q, "Force", "true");
    o->rpc = ali_rpc_start(o->a, region, n == 1 ? "DeleteInstance" : "DeleteInstances",
                           &q, on_deleted, o);
    return o->rpc != NULL ? 0 : EBB_ENOMEM;
}

/* Deletes the instances the walk found in `region`: those of the gang (or
 * the instance) still there. */
static void delete_found(struct inst_op *o, const char *region)
{
    const char **ids = calloc(o->n_found, sizeof(*ids));
    int rc = EBB_ENOMEM;
    if (ids != NULL) {
        for (size_t i = 0; i < o->n_found; i++)
            ids[i] = o->found[i].id;
        rc = delete_ids(o, region, ids, o->n_found);
    }
    free(ids);
    if (rc != 0)
        complete(o, rc);
}

/* Releases what a launch started in `region` (its answer was no gang, or
 * no one member): DescribeInstances by its tag `tag` = `value` (a gang's
 * token, a join's ClientToken), then a delete. */
static int sweep_start(struct ali *a, const char *region, const char *tag,
                       const char *value)
{
    struct inst_op *o = op_new(a, SWEEP, NULL);
    if (o == NULL)
        return EBB_ENOMEM;
    o->sweep_tag = tag;
    o->id = strdup(value);
    o->region = a->cfg->regions.n;
    for (size_t i = 0; i < a->cfg->regions.n; i++)
        if (strcmp(a->cfg->regions.items[i], region) == 0)
            o->region = i;
    int rc = o->id == NULL || o->region == a->cfg->regions.n ? EBB_EINVAL
                                                              : describe_page(o);
    if (rc != 0)
        op_free(o);
    return rc;
}

int ali_terminate(struct ali *a, const char *instance_id, ebb_done_cb cb,
                  void *arg)
{
    size_t n = instance_id != NULL ? ebb_gang_size(instance_id) : 0;
    if (n == 0 || n > GANG_MAX || strpbrk(instance_id, "\"\\") != NULL)
        return EBB_EINVAL;
    char first[64];
    for (size_t i = 0; i < n; i++)
        if (ebb_gang_member(instance_id, i, first, sizeof(first)) != 0)
            return EBB_EINVAL;
    struct inst_op *o = op_new(a, TERMINATE, arg);
    if (o == NULL)
        return EBB_ENOMEM;
    o->cb.done = cb;
    o->id = strdup(instance_id);
    /* One instance is deleted in the region it is known in. A gang's
     * members are looked up first: one already gone (a reclaimed spot
     * instance is) would fail a DeleteInstances naming it, and the rest
     * would run on. */
    const char *region = n == 1 ? ali_place_of(a, instance_id) : NULL;
    const char *const ids[] = {instance_id};
    int rc = o->id == NULL ? EBB_ENOMEM
             : region      ? delete_ids(o, region, ids, 1)
                           : describe_page(o);
    if (rc != 0)
        op_free(o);
    return rc;
}
