/* The Alibaba Cloud ECS provider (RPC API 2014-05-26): spot prices from
 * DescribeSpotPriceHistory, launches with RunInstances, releases with
 * DeleteInstance (DeleteInstances for a gang), reconciliation with
 * DescribeInstances by tag.
 *
 * Files: alibaba.c (ABI glue, configuration), ali_sign.c
 * (signatures V1 and ACS3), ali_rpc.c (one signed call, throttling and
 * error codes), ali_prices.c (the price history walk), ali_instances.c
 * (launch, terminate, list, replacement members with
 * ../common/gang_join.c), ali_shape.c (what a GPU type is).
 */
#ifndef EBB_ALIBABA_H
#define EBB_ALIBABA_H

#include <stddef.h>

#include <jansson.h>

#include <ebb/ops.h>
#include <ebb/provider.h>

/* Tag keys ebb puts on its instances. */
#define ALI_TAG_JOB "ebb-job-id"
#define ALI_TAG_TOKEN "ebb-token"
/* A replacement member's (ebb_launch.join_gang): its join's ClientToken,
 * which DescribeInstances does not show, so that a retried join knows
 * the member its first try started. */
#define ALI_TAG_JOIN "ebb-join"

struct ali_cfg {
    struct ebb_string_list regions;
    struct ebb_string_list instance_types;
    char *endpoint;
    ebb_dur_ms poll_interval;
    ebb_dur_ms history;
    char *network_type;
    char *os_type;
    char *image_id;
    char *security_group_id;
    struct ebb_string_list vswitches;
    char *agent_command;
    int64_t retries;
    ebb_dur_ms retry_backoff;
};

struct ali {
    const struct ebb_host *host;
    const struct ali_cfg *cfg;
    char *key_id;
    char *secret;
    struct ebb_calls calls;
    struct ebb_ops ops; /* every provider call not yet completed */
    /* The currency each configured region's prices came in ("" until a
     * poll has read one), so a launch's limit is not read in another. */
    char (*currency)[4];
    /* Where each instance we know of lives (DeleteInstance goes to its
     * region's endpoint). */
    struct ali_place {
        char *id, *region;
    } *places;
    size_t n_places;
};

ebb_time_ms ali_now(const struct ali *a);
void ali_remember_place(struct ali *a, const char *id, const char *region);
const char *ali_place_of(const struct ali *a, const char *id);

/* ---- signatures (ali_sign.c) ---- */

/* Request parameters, name -> value, both owned. */
struct ali_params {
    struct ali_param {
        char *key, *value;
    } *v;
    size_t n, cap;
    int failed; /* an allocation failed; the request must not be sent */
};

void ali_params_add(struct ali_params *p, const char *key, const char *value);
void ali_params_addf(struct ali_params *p, const char *key, const char *fmt, ...)
    EBB_PRINTF(3, 4);
void ali_params_free(struct ali_params *p);

/* Sorts `p` by name (byte order) and returns "enc(k)=enc(v)&..." with RFC
 * 3986 encoding; NULL on allocation failure. Caller frees. */
char *ali_canonical_query(struct ali_params *p);

/* V1 (HMAC-SHA1) signature of `method` and the parameters (Signature
 * itself must not be among them), base64, into `out` (NUL-terminated).
 * Returns 0 or EBB_ENOMEM. */
#define ALI_SIG_V1_LEN 29
int ali_sign_v1(const char *method, struct ali_params *p, const char *secret,
                char out[ALI_SIG_V1_LEN]);

/* ACS3-HMAC-SHA256: the Authorization header value for a request. The
 * headers are "name: value" pairs already holding host, the x-acs-*
 * headers (x-acs-content-sha256 = `payload_hash`) and content-type when
 * sent; names are matched case-insensitively and repeated names merged.
 * Returns a new string or NULL. Caller frees. */
char *ali_sign_v3(const char *method, const char *path, struct ali_params *query,
                  const char *const *headers, size_t n_headers,
                  const char *payload_hash, const char *key_id,
                  const char *secret);


/* ---- one RPC call (ali_rpc.c) ---- */

/* The outcome of a call: status 0 with the parsed body, or an EBB_E* code
 * (EBB_EAUTH, EBB_ENOCAPACITY, EBB_ENOTFOUND, EBB_ETHROTTLED, ...) with the
 * error Code when the server sent one. `body` is borrowed for the call. */
typedef void (*ali_rpc_cb)(void *arg, int status, json_t *body,
                           const char *code);

struct ali_rpc;

/* Signs and sends `action` with `params` (taken: freed here, also on
 * failure) to `region`'s endpoint; retries throttling with backoff.
 * Returns the call (cancel it with ali_rpc_cancel) or NULL when it could
 * not start (then `cb` never runs). */
struct ali_rpc *ali_rpc_start(struct ali *a, const char *region,
                              const char *action, struct ali_params *params,
                              ali_rpc_cb cb, void *arg);
/* Stops a call in flight; its callback never runs. */
void ali_rpc_cancel(struct ali_rpc *r);

/* ---- prices, instances, shapes ---- */

int ali_poll_prices(struct ali *a, ebb_prices_cb cb, void *arg);
int ali_launch(struct ali *a, const struct ebb_launch *req, ebb_launch_cb cb,
               void *arg);
int ali_terminate(struct ali *a, const char *instance_id, ebb_done_cb cb,
                  void *arg);
int ali_list(struct ali *a, ebb_list_cb cb, void *arg);

/* The shape of a GPU instance type ("ecs.gn6v-c8g1.2xlarge": one V100,
 * 8 vCPUs). Returns 1 and fills *out (gpu_model points to static storage)
 * for the GPU families ali_shape.c knows, else 0. */
int ali_shape_of(const char *instance_type, struct ebb_shape *out);

/* Helpers shared by the files above. */
const char *ali_json_str(json_t *obj, const char *key); /* "" when absent */
ebb_micros ali_json_micros(json_t *obj, const char *key, int *ok);

#endif
