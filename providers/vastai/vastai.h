/* The vast.ai provider: a marketplace of machines, each offer with its own
 * rate (dph_base), minimum bid (min_bid) and disk price
 * (storage_total_cost). Interruptible instances are rented by bidding; an
 * outbid one is stopped without notice.
 *
 * How a machine maps to ebb's places (stable across polls):
 *   region        = the machine's country (geolocation "City, CC" -> "CC")
 *   zone          = the machine id ("88888")
 *   instance_type = normalised GPU model x count ("RTX_4090x2")
 * and every price carries the offer's shape (struct ebb_shape).
 *
 * Files: vastai.c (ABI glue, configuration, operations),
 * vast_api.c (one authenticated JSON call), vast_offers.c (the offers
 * query and prices), vast_instances.c (launch, terminate, list, outbid
 * detection).
 */
#ifndef EBB_VASTAI_H
#define EBB_VASTAI_H

#include <stddef.h>

#include <jansson.h>

#include <ebb/ops.h>
#include <ebb/provider.h>

/* Labels of ebb's instances: "ebb:<job id>:<token>". */
#define VAST_LABEL_PREFIX "ebb:"

struct vast_cfg {
    char *api_url;
    struct ebb_string_list gpu_names;
    int64_t gpu_count;
    double min_gpu_ram_gb;
    double min_reliability;
    int interruptible;
    int verified;
    int64_t limit;
    double disk_gb;
    char *image;
    char *agent_command;
    ebb_dur_ms poll_interval;
    int64_t launch_retries;
    ebb_dur_ms retry_backoff;
};

/* What the latest poll saw of one offer: launches rent by offer id. */
struct vast_offer {
    char machine[24];
    char type[48];
    long long ask_id;
    ebb_micros min_bid;
};

struct vast {
    const struct ebb_host *host;
    const struct vast_cfg *cfg;
    char *auth_header; /* "Authorization: Bearer <key>" */
    char *api_key;
    struct ebb_calls calls;
    struct ebb_ops ops; /* every provider call not yet completed */
    struct vast_offer *offers;
    size_t n_offers;
    /* Instances already reported lost, so each is reported once. */
    char **lost;
    size_t n_lost;
};

ebb_time_ms vast_now(const struct vast *v);

/* ---- one API call (vast_api.c) ---- */

/* status 0 with the parsed body, or EBB_EAUTH (401/403, and 404 "Invalid
 * user key"), EBB_ENOTFOUND
 * (404/410), EBB_ETHROTTLED (429 after the host's retries), EBB_EINVAL
 * (other 4xx), EBB_EHTTP (5xx, or "success": false), a transport error.
 * `body` is borrowed for the call (NULL when none parsed). */
typedef void (*vast_api_cb)(void *arg, int status, json_t *body);

struct vast_call;

/* Sends `method` `path` (under api_url) with `body` (borrowed; NULL: none)
 * and the API key. `max_attempts` 1 leaves retries to the caller (for
 * calls that are not idempotent). Returns NULL when it could not start. */
struct vast_call *vast_api(struct vast *v, const char *method, const char *path,
                           json_t *body, int max_attempts, vast_api_cb cb,
                           void *arg);
void vast_api_cancel(struct vast_call *c);

/* Lists every instance of the account, page after page (GET
 * /api/v1/instances/); `cb` gets {"instances": [...]} with all of them.
 * Cancel it with vast_api_cancel(). Returns NULL when it could not
 * start. */
struct vast_call *vast_list_instances(struct vast *v, vast_api_cb cb, void *arg);

/* ---- offers, instances ---- */

int vast_poll_prices(struct vast *v, ebb_prices_cb cb, void *arg);
int vast_launch(struct vast *v, const struct ebb_launch *req, ebb_launch_cb cb,
                void *arg);
int vast_terminate(struct vast *v, const char *id, ebb_done_cb cb, void *arg);
int vast_list(struct vast *v, ebb_list_cb cb, void *arg);

/* The offers query for the configured resources; caller decrefs. */
json_t *vast_offers_query(const struct vast_cfg *cfg);

/* vast's GPU name as the catalog spells models: "RTX 4090" -> "RTX_4090",
 * "A100 SXM4 80GB" -> "A100_80GB", "Tesla V100" -> "V100". */
void vast_gpu_model(const char *vast_name, char *out, size_t size);

/* The region of a geolocation ("Texas, US", "SE"): its last part, the
 * country code, trimmed and upper-cased, so offers and instances agree. */
void vast_region(const char *geolocation, char *out, size_t size);

/* The place of a machine or instance row: region (vast_region of its
 * geolocation), zone (machine id) and instance type, as the header
 * describes. */
void vast_place(json_t *row, char *region, size_t rsize, char *zone,
                size_t zsize, char *type, size_t tsize);

/* Looks at an instance list (vast_list_instances' answer) during a
 * poll: reports each of ebb's instances newly found outbid as
 * EBB_EVENT_LOST, once. */
void vast_report_lost(struct vast *v, json_t *body);

#endif
