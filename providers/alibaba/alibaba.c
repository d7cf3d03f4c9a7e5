/* The Alibaba Cloud ECS provider's ABI glue: its configuration table,
 * create/destroy (which tells the host to poll every poll_interval) and
 * the operation list destroy() cancels.
 *
 * Credentials come only from the environment (ALIBABA_CLOUD_ACCESS_KEY_ID,
 * ALIBABA_CLOUD_ACCESS_KEY_SECRET), are never logged, and are wiped on
 * destroy.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "alibaba.h"

static const struct ebb_cfg_key ali_keys[] = {
    {"regions", EBB_CFG_STRING_LIST, NULL, offsetof(struct ali_cfg, regions),
     "regions to watch and launch in, e.g. [cn-hangzhou, ap-southeast-1] "
     "(required)"},
    {"instance_types", EBB_CFG_STRING_LIST, NULL,
     offsetof(struct ali_cfg, instance_types),
     "instance types whose spot prices are polled, e.g. "
     "[ecs.gn6v-c8g1.2xlarge] (required)"},
    {"endpoint", EBB_CFG_STRING, "https://ecs.{region}.aliyuncs.com/",
     offsetof(struct ali_cfg, endpoint),
     "ECS endpoint URL; {region} is replaced by the region id"},
    {"poll_interval", EBB_CFG_DURATION, "10m",
     offsetof(struct ali_cfg, poll_interval), "how often spot prices are polled"},
    {"history", EBB_CFG_DURATION, "30d", offsetof(struct ali_cfg, history),
     "how far back the first poll of a region reads price history (and the "
     "most any poll reads)"},
    {"network_type", EBB_CFG_STRING, "vpc", offsetof(struct ali_cfg, network_type),
     "network type of the prices polled (vpc)"},
    {"os_type", EBB_CFG_STRING, "linux", offsetof(struct ali_cfg, os_type),
     "operating system of the prices polled (linux or windows)"},
    {"image_id", EBB_CFG_STRING, "", offsetof(struct ali_cfg, image_id),
     "image launched instances boot (must have ebb-agent installed; "
     "required to launch)"},
    {"security_group_id", EBB_CFG_STRING, "",
     offsetof(struct ali_cfg, security_group_id),
     "security group of launched instances"},
    {"vswitches", EBB_CFG_STRING_LIST, "[]", offsetof(struct ali_cfg, vswitches),
     "vSwitch per zone as ZONE=VSWITCH_ID, e.g. [cn-hangzhou-h=vsw-bp1...]"},
    {"agent_command", EBB_CFG_STRING, "ebb-agent",
     offsetof(struct ali_cfg, agent_command),
     "how the instance's boot script starts the agent"},
    {"retries", EBB_CFG_INT, "5",
     offsetof(struct ali_cfg, retries),
     "how many times a throttled or failed call is retried (signed afresh)"},
    {"retry_backoff", EBB_CFG_DURATION, "1s",
     offsetof(struct ali_cfg, retry_backoff),
     "first wait before a retry; doubles with every retry"},
    EBB_CFG_END,
};

ebb_time_ms ali_now(const struct ali *a)
{
    return a->host->now(a->host->ctx);
}

void ali_remember_place(struct ali *a, const char *id, const char *region)
{
    if (ali_place_of(a, id) != NULL)
        return;
    struct ali_place *v = realloc(a->places, (a->n_places + 1) * sizeof(*v));
    if (v == NULL)
        return;
    a->places = v;
    char *i = strdup(id), *r = strdup(region);
    if (i == NULL || r == NULL) {
        free(i);
        free(r);
        return;
    }
    a->places[a->n_places++] = (struct ali_place){i, r};
}

const char *ali_place_of(const struct ali *a, const char *id)
{
    for (size_t i = 0; i < a->n_places; i++)
        if (strcmp(a->places[i].id, id) == 0)
            return a->places[i].region;
    return NULL;
}

static int check_cfg(const struct ebb_host *host, const struct ali_cfg *cfg)
{
    const char *why = NULL;
    if (cfg->regions.n == 0)
        why = "regions: name at least one region (e.g. [cn-hangzhou])";
    else if (cfg->instance_types.n == 0)
        why = "instance_types: name at least one instance type "
              "(e.g. [ecs.gn6v-c8g1.2xlarge])";
    else if (cfg->poll_interval <= 0)
        why = "poll_interval: must be positive";
    else if (cfg->history <= 0)
        why = "history: must be positive";
    else if (cfg->retries < 0 || cfg->retry_backoff < 0)
        why = "retries and retry_backoff may not be negative";
    for (size_t i = 0; why == NULL && i < cfg->vswitches.n; i++)
        if (strchr(cfg->vswitches.items[i], '=') == NULL)
            why = "vswitches: write each entry as ZONE=VSWITCH_ID";
    if (why != NULL)
        host->log(host->ctx, EBB_LOG_ERROR, "%s", why);
    return why == NULL ? 0 : EBB_ECONFIG;
}

static void ali_destroy(void *self);

static int ali_create(const struct ebb_host *host, const void *config, void **self)
{
    const struct ali_cfg *cfg = config;
    int rc = check_cfg(host, cfg);
    if (rc != 0)
        return rc;
    const char *id = getenv("ALIBABA_CLOUD_ACCESS_KEY_ID");
    const char *secret = getenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET");
    if (id == NULL || id[0] == '\0' || secret == NULL || secret[0] == '\0') {
        host->log(host->ctx, EBB_LOG_ERROR,
                  "no credentials: set ALIBABA_CLOUD_ACCESS_KEY_ID and "
                  "ALIBABA_CLOUD_ACCESS_KEY_SECRET in ebbd's environment");
        return EBB_ECONFIG;
    }
    struct ali *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return EBB_ENOMEM;
    a->host = host;
    a->cfg = cfg;
    a->ops.host = host;
    a->key_id = strdup(id);
    a->secret = strdup(secret);
    a->currency = calloc(cfg->regions.n, sizeof(*a->currency));
    if (a->key_id == NULL || a->secret == NULL || a->currency == NULL) {
        ali_destroy(a);
        return EBB_ENOMEM;
    }
    host->poll_every(host->ctx, cfg->poll_interval);
    *self = a;
    return 0;
}

static void wipe(char *s)
{
    if (s != NULL)
        OPENSSL_cleanse(s, strlen(s));
    free(s);
}

static void ali_destroy(void *self)
{
    struct ali *a = self;
    ebb_ops_cancel_all(&a->ops);
    ebb_calls_detach(&a->calls);
    for (size_t i = 0; i < a->n_places; i++) {
        free(a->places[i].id);
        free(a->places[i].region);
    }
    free(a->places);
    free(a->currency);
    wipe(a->key_id);
    wipe(a->secret);
    free(a);
}

static int poll_prices(void *self, ebb_prices_cb cb, void *arg)
{
    return ali_poll_prices(self, cb, arg);
}

static int launch(void *self, const struct ebb_launch *req, ebb_launch_cb cb,
                  void *arg)
{
    if (req->struct_size < EBB_LAUNCH_SIZE_V1)
        return EBB_EINVAL;
    return ali_launch(self, req, cb, arg);
}

static int terminate(void *self, const char *id, ebb_done_cb cb, void *arg)
{
    return ali_terminate(self, id, cb, arg);
}

static int list_instances(void *self, ebb_list_cb cb, void *arg)
{
    return ali_list(self, cb, arg);
}

static const struct ebb_provider ali_provider = {
    .abi = EBB_PROVIDER_ABI,
    .struct_size = sizeof(struct ebb_provider),
    .name = "alibaba",
    .description = "Alibaba Cloud ECS spot and pay-as-you-go instances",
    .config_keys = ali_keys,
    .config_size = sizeof(struct ali_cfg),
    .create = ali_create,
    .destroy = ali_destroy,
    .poll_prices = poll_prices,
    .launch = launch,
    .terminate = terminate,
    .list_instances = list_instances,
    .stop_job = NULL,
    .flags = EBB_PROVIDER_GANGS | EBB_PROVIDER_GANG_REPLACE,
};

const struct ebb_provider *ebb_provider_entry(void)
{
    return &ali_provider;
}
