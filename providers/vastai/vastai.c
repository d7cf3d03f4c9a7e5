/* The vast.ai provider's ABI glue: configuration table, create/destroy
 * (which tells the host to poll every poll_interval), and the operation
 * list destroy() cancels.
 *
 * The API key comes only from the environment (VAST_API_KEY), travels
 * only in the Authorization header, and is wiped on destroy.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include <ebb/buf.h>

#include "vastai.h"

static const struct ebb_cfg_key vast_keys[] = {
    {"api_url", EBB_CFG_STRING, "https://console.vast.ai",
     offsetof(struct vast_cfg, api_url), "vast.ai API base URL"},
    {"gpu_names", EBB_CFG_STRING_LIST, NULL, offsetof(struct vast_cfg, gpu_names),
     "GPU models as vast.ai names them, e.g. [\"RTX 4090\", \"A100 SXM4 80GB\"] "
     "(required)"},
    {"gpu_count", EBB_CFG_INT, "1", offsetof(struct vast_cfg, gpu_count),
     "GPUs per machine"},
    {"min_gpu_ram_gb", EBB_CFG_DOUBLE, "0", offsetof(struct vast_cfg, min_gpu_ram_gb),
     "least memory per GPU in GB (0: any)"},
    {"min_reliability", EBB_CFG_DOUBLE, "0.98",
     offsetof(struct vast_cfg, min_reliability),
     "least machine reliability score (0..1)"},
    {"interruptible", EBB_CFG_BOOL, "true", offsetof(struct vast_cfg, interruptible),
     "search bid offers (interruptible: spot prices are their minimum bids)"},
    {"verified", EBB_CFG_BOOL, "true", offsetof(struct vast_cfg, verified),
     "only verified machines"},
    {"limit", EBB_CFG_INT, "64", offsetof(struct vast_cfg, limit),
     "most offers read per poll (cheapest first)"},
    {"disk_gb", EBB_CFG_DOUBLE, "20", offsetof(struct vast_cfg, disk_gb),
     "disk of a rented instance in GB (priced into dph_total)"},
    {"image", EBB_CFG_STRING, "", offsetof(struct vast_cfg, image),
     "container image with ebb-agent (required to launch)"},
    {"agent_command", EBB_CFG_STRING, "ebb-agent",
     offsetof(struct vast_cfg, agent_command),
     "how the instance's onstart script starts the agent"},
    {"poll_interval", EBB_CFG_DURATION, "5m", offsetof(struct vast_cfg, poll_interval),
     "how often offers and instances are polled"},
    {"launch_retries", EBB_CFG_INT, "3", offsetof(struct vast_cfg, launch_retries),
     "how often a failed rent is retried (each after checking that the "
     "instance does not exist)"},
    {"retry_backoff", EBB_CFG_DURATION, "2s", offsetof(struct vast_cfg, retry_backoff),
     "first wait before a launch retry; doubles with every retry"},
    EBB_CFG_END,
};

ebb_time_ms vast_now(const struct vast *v)
{
    return v->host->now(v->host->ctx);
}

static int check_cfg(const struct ebb_host *host, const struct vast_cfg *cfg)
{
    const char *why = NULL;
    if (cfg->gpu_names.n == 0)
        why = "gpu_names: name at least one GPU model as vast.ai spells it "
              "(e.g. [\"RTX 4090\"])";
    else if (cfg->gpu_count < 1 || cfg->gpu_count > 64)
        why = "gpu_count: must be 1 to 64";
    else if (cfg->min_reliability < 0 || cfg->min_reliability > 1)
        why = "min_reliability: must be between 0 and 1";
    else if (cfg->limit < 1 || cfg->limit > 1000)
        why = "limit: must be 1 to 1000";
    else if (cfg->poll_interval <= 0)
        why = "poll_interval: must be positive";
    else if (cfg->launch_retries < 0 || cfg->retry_backoff < 0)
        why = "launch_retries and retry_backoff may not be negative";
    if (why != NULL)
        host->log(host->ctx, EBB_LOG_ERROR, "%s", why);
    return why == NULL ? 0 : EBB_ECONFIG;
}

static void wipe(char *s)
{
    if (s != NULL)
        OPENSSL_cleanse(s, strlen(s));
    free(s);
}

static void vast_destroy(void *self)
{
    struct vast *v = self;
    ebb_ops_cancel_all(&v->ops);
    ebb_calls_detach(&v->calls);
    for (size_t i = 0; i < v->n_lost; i++)
        free(v->lost[i]);
    free(v->lost);
    free(v->offers);
    wipe(v->auth_header);
    wipe(v->api_key);
    free(v);
}

static int vast_create(const struct ebb_host *host, const void *config, void **self)
{
    const struct vast_cfg *cfg = config;
    int rc = check_cfg(host, cfg);
    if (rc != 0)
        return rc;
    const char *key = getenv("VAST_API_KEY");
    if (key == NULL || key[0] == '\0' || strpbrk(key, "\r\n") != NULL) {
        host->log(host->ctx, EBB_LOG_ERROR,
                  "no API key: set VAST_API_KEY in ebbd's environment");
        return EBB_ECONFIG;
    }
    struct vast *v = calloc(1, sizeof(*v));
    if (v == NULL)
        return EBB_ENOMEM;
    v->host = host;
    v->cfg = cfg;
    v->ops.host = host;
    v->api_key = strdup(key);
    v->auth_header = ebb_strfmt("Authorization: Bearer %s", key);
    if (v->api_key == NULL || v->auth_header == NULL) {
        vast_destroy(v);
        return EBB_ENOMEM;
    }
    host->poll_every(host->ctx, cfg->poll_interval);
    *self = v;
    return 0;
}

static int poll_prices(void *self, ebb_prices_cb cb, void *arg)
{
    return vast_poll_prices(self, cb, arg);
}

static int launch(void *self, const struct ebb_launch *req, ebb_launch_cb cb,
                  void *arg)
{
    if (req->struct_size < EBB_LAUNCH_SIZE_V1)
        return EBB_EINVAL;
    return vast_launch(self, req, cb, arg);
}

static int terminate(void *self, const char *id, ebb_done_cb cb, void *arg)
{
    return vast_terminate(self, id, cb, arg);
}

static int list_instances(void *self, ebb_list_cb cb, void *arg)
{
    return vast_list(self, cb, arg);
}

static const struct ebb_provider vast_provider = {
    .abi = EBB_PROVIDER_ABI,
    .struct_size = sizeof(struct ebb_provider),
    .name = "vastai",
    .description = "vast.ai GPU marketplace: interruptible (bid) and on-demand "
                   "machines",
    .config_keys = vast_keys,
    .config_size = sizeof(struct vast_cfg),
    .create = vast_create,
    .destroy = vast_destroy,
    .poll_prices = poll_prices,
    .launch = launch,
    .terminate = terminate,
    .list_instances = list_instances,
};

const struct ebb_provider *ebb_provider_entry(void)
{
    return &vast_provider;
}
