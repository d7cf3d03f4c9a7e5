/* The aws provider's shared state and the calls its files make of each
 * other. aws.c: configuration, create/destroy; aws_call.c: one signed EC2
 * call; aws_prices.c: price polls; aws_instances.c: launch, terminate,
 * list; aws_join.c: replacement members' ranks and checks (with
 * ../common/gang_join.c); aws_group.c: placement groups; aws_query.c:
 * form parameters; aws_ec2.c: the XML answers.
 */
#ifndef AWS_H
#define AWS_H

#include <stddef.h>

#include <ebb/buf.h>
#include <ebb/ops.h>
#include <ebb/provider.h>

#include <ebb/aws_creds.h>

#define AWS_API_VERSION "2016-11-15"

struct aws_cfg {
    struct ebb_string_list regions;
    struct ebb_string_list instance_types;
    char *endpoint;          /* "{region}" is replaced by the region */
    ebb_dur_ms poll_interval;
    ebb_dur_ms history;      /* how far back a first poll reaches */
    char *product;           /* ProductDescription.1 */
    ebb_dur_ms request_timeout;
    int64_t max_attempts;
    /* Per-region launch settings: "REGION=VALUE" items, or "VALUE" for
     * every region. */
    struct ebb_string_list ami, key_name, subnet_id, security_group_ids;
    char *agent_setup;       /* shell run before the agent starts */
    char *agent_command;     /* the agent's path on the image */
};

/* A gang is launched into the cluster placement group
 * AWS_GROUP_PREFIX + its token (aws_group.c). */
#define AWS_GROUP_PREFIX "ebb-"
#define AWS_GROUP_NAME_MAX 80
#define AWS_GROUPS_DELETED 64
/* The most members a gang may have (as job specs' nodes). */
#define AWS_GANG_MAX 64

struct aws_call;
struct aws_poll;
struct aws_ec2_instance;
struct aws_instance_set;

struct aws {
    const struct ebb_host *host;
    const struct aws_cfg *cfg;
    struct ebb_aws_creds creds;
    int have_creds;
    char creds_error[512];

    struct ebb_ops ops;      /* calls not yet completed, for destroy */
    struct ebb_calls calls;  /* their HTTP requests */
    struct aws_poll *poll;   /* the poll in flight, or NULL */

    /* Which region each instance we know of lives in (terminate() gets an
     * id only), and which preemptions were already reported. */
    struct aws_known {
        char id[32];
        char region[32];
        int lost_reported;
    } *known;
    size_t n_known, cap_known;

    /* The placement groups whose deletion is done or under way (a ring:
     * an old entry forgotten only means one more, refused, deletion). */
    char groups_deleted[AWS_GROUPS_DELETED][AWS_GROUP_NAME_MAX];
    size_t next_deleted;
};

/* ---- aws_call.c ---- */

/* The outcome of one EC2 call. `status` is 0 for an HTTP 200, else an
 * EBB_E* code: EBB_EAUTH, EBB_ETHROTTLED, EBB_ENOCAPACITY, EBB_ENOTFOUND
 * (InvalidInstanceID.NotFound), EBB_EHTTP (other EC2 errors), or the
 * transport's (EBB_ETIMEDOUT, EBB_EIO, EBB_ECANCELED). `code` and
 * `message` are EC2's error, or "" when there was none. */
struct aws_reply {
    int status;
    int http_status;
    const char *code;
    const char *message;
    const char *body;
    size_t body_len;
};

typedef void (*aws_call_cb)(void *arg, const struct aws_reply *r);

/* Sends Action=`action` with `params` (encoded "&Name=value" pairs from
 * aws_param()) to the region's endpoint, signed. `cb` runs exactly once,
 * later, on the loop; with EBB_ECANCELED when the provider is destroyed.
 * Returns 0, or an error (then `cb` never runs). */
int aws_call(struct aws *a, const char *region, const char *action,
             const char *params, aws_call_cb cb, void *arg);

/* Completes every call in flight with EBB_ECANCELED (destroy). */
void aws_call_cancel_all(struct aws *a);

/* The EBB_E* code for EC2 error `code` at HTTP `http_status`. */
int aws_error_status(const char *code, int http_status);

/* ---- aws_query.c ---- */

/* Appends "&name=value", both percent-encoded. */
void aws_param(struct ebb_buf *b, const char *name, const char *value);
/* The same with a formatted name ("InstanceType.%zu"). */
void aws_paramf(struct ebb_buf *b, const char *value, const char *name_fmt, ...)
    EBB_PRINTF(3, 4);

/* ---- aws.c ---- */

/* The values of a per-region setting for `region`, in order: the
 * "REGION=VALUE" items for that region and the plain "VALUE" items. Fills
 * at most `max` pointers into `out` (borrowed from the config, pointing
 * past "REGION=") and returns how many there are. */
size_t aws_region_values(const struct ebb_string_list *list, const char *region,
                         const char **out, size_t max);

/* Whether providers.aws.regions lists `region`. */
int aws_region_configured(const struct aws *a, const char *region);

/* Remembers that instance `id` lives in `region`; returns its entry or NULL
 * when out of memory. */
struct aws_known *aws_known_add(struct aws *a, const char *id, const char *region);
struct aws_known *aws_known_find(struct aws *a, const char *id);

/* ---- aws_group.c ---- */

/* The placement group name of the gang launched with `token`. */
void aws_group_name(const char *token, char *out, size_t size);

/* Starts DeletePlacementGroup of `name` in `region` unless one is done or
 * under way; its outcome is only logged. Returns 0 or an error of
 * aws_call(). */
int aws_group_delete(struct aws *a, const char *region, const char *name);

/* Forgets a deletion of `name`: the group was made again (a launch
 * repeated after one that failed), and is deleted again in its turn. */
void aws_group_forget(struct aws *a, const char *name);

/* ---- aws_join.c ---- */

/* A member's rank in its gang: its ebb:rank tag (a replacement's), else
 * its amiLaunchIndex; -1 when it has neither. */
int aws_member_rank(const struct aws_ec2_instance *i);

/* Why the gang of join `req` (its members in the region: `set`, by the
 * token's tag) takes no member with ClientToken `client_token`
 * (gang_join_refusal()); NULL when it takes one. */
const char *aws_join_refusal(const struct aws_instance_set *set,
                             const struct ebb_launch *req, const char *client_token,
                             char *why, size_t size);

/* ---- aws_prices.c / aws_instances.c: the provider calls ---- */

int aws_poll_prices(void *self, ebb_prices_cb cb, void *arg);
int aws_launch(void *self, const struct ebb_launch *req, ebb_launch_cb cb,
               void *arg);
int aws_terminate(void *self, const char *instance_id, ebb_done_cb cb, void *arg);
int aws_list_instances(void *self, ebb_list_cb cb, void *arg);

#endif
