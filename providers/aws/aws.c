/* The aws provider's ABI glue: its configuration table, create/destroy and
 * the region bookkeeping the other files share. See docs/aws.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws.h"

#define CFG(field) offsetof(struct aws_cfg, field)

static const struct ebb_cfg_key aws_keys[] = {
    {"regions", EBB_CFG_STRING_LIST, "[us-east-1]", CFG(regions),
     "regions to poll and launch in"},
    {"instance_types", EBB_CFG_STRING_LIST, "[p3.2xlarge, g5.xlarge]",
     CFG(instance_types), "instance types whose spot prices are polled"},
    {"endpoint", EBB_CFG_STRING, "https://ec2.{region}.amazonaws.com", CFG(endpoint),
     "EC2 endpoint; {region} is replaced by the region"},
    {"poll_interval", EBB_CFG_DURATION, "5m", CFG(poll_interval),
     "time between price polls (the host backs failing polls off up to 1h)"},
    {"history", EBB_CFG_DURATION, "90d", CFG(history),
     "how far back the first poll of a region reaches (EC2 keeps 90 days)"},
    {"product", EBB_CFG_STRING, "Linux/UNIX", CFG(product),
     "ProductDescription of the prices polled"},
    {"request_timeout", EBB_CFG_DURATION, "30s", CFG(request_timeout),
     "timeout of one EC2 request attempt"},
    {"max_attempts", EBB_CFG_INT, "4", CFG(max_attempts),
     "attempts per EC2 request (timeouts, 5xx, RequestLimitExceeded), 1-10"},
    {"ami", EBB_CFG_STRING_LIST, "[]", CFG(ami),
     "image per region: [us-east-1=ami-0abc, us-west-2=ami-0def] (required to launch)"},
    {"key_name", EBB_CFG_STRING_LIST, "[]", CFG(key_name),
     "SSH key pair: [REGION=NAME] or [NAME] for every region (optional)"},
    {"subnet_id", EBB_CFG_STRING_LIST, "[]", CFG(subnet_id),
     "subnet per region: [us-east-1=subnet-0abc] (optional: default VPC)"},
    {"security_group_ids", EBB_CFG_STRING_LIST, "[]", CFG(security_group_ids),
     "security groups: [us-east-1=sg-1, us-east-1=sg-2] (optional)"},
    {"agent_command", EBB_CFG_STRING, "ebb-agent", CFG(agent_command),
     "ebb-agent's path on the image"},
    {"agent_setup", EBB_CFG_STRING, "", CFG(agent_setup),
     "shell run at boot before the agent starts (e.g. to install it)"},
    EBB_CFG_END,
};

int aws_region_configured(const struct aws *a, const char *region)
{
    for (size_t i = 0; i < a->cfg->regions.n; i++)
        if (strcmp(a->cfg->regions.items[i], region) == 0)
            return 1;
    return 0;
}

size_t aws_region_values(const struct ebb_string_list *list, const char *region,
                         const char **out, size_t max)
{
    size_t n = 0, rlen = strlen(region);
    for (size_t i = 0; i < list->n; i++) {
        const char *item = list->items[i];
        const char *eq = strchr(item, '=');
        const char *value = NULL;
        if (eq == NULL)
            value = item;
        else if ((size_t)(eq - item) == rlen && strncmp(item, region, rlen) == 0)
            value = eq + 1;
        if (value == NULL)
            continue;
        if (n < max)
            out[n] = value;
        n++;
    }
    return n;
}

struct aws_known *aws_known_find(struct aws *a, const char *id)
{
    for (size_t i = 0; i < a->n_known; i++)
        if (strcmp(a->known[i].id, id) == 0)
            return &a->known[i];
    return NULL;
}

struct aws_known *aws_known_add(struct aws *a, const char *id, const char *region)
{
    struct aws_known *k = aws_known_find(a, id);
    if (k != NULL)
        return k;
    if (a->n_known == a->cap_known) {
        size_t cap = a->cap_known ? a->cap_known * 2 : 16;
        struct aws_known *v = realloc(a->known, cap * sizeof(*v));
        if (v == NULL)
            return NULL;
        a->known = v;
        a->cap_known = cap;
    }
    k = &a->known[a->n_known++];
    memset(k, 0, sizeof(*k));
    snprintf(k->id, sizeof(k->id), "%s", id);
    snprintf(k->region, sizeof(k->region), "%s", region);
    return k;
}

/* Every "REGION=VALUE" item must name a configured region: a typo would
 * otherwise silently launch without its setting. */
static int check_region_list(const struct ebb_host *host, const struct aws *a,
                             const char *key, const struct ebb_string_list *list)
{
    for (size_t i = 0; i < list->n; i++) {
        const char *eq = strchr(list->items[i], '=');
        if (eq == NULL)
            continue;
        char region[64];
        snprintf(region, sizeof(region), "%.*s", (int)(eq - list->items[i]),
                 list->items[i]);
        if (!aws_region_configured(a, region)) {
            host->log(host->ctx, EBB_LOG_ERROR,
                      "providers.aws.%s: \"%s\" names region \"%s\", which "
                      "providers.aws.regions does not list", key,
                      list->items[i], region);
            return EBB_ECONFIG;
        }
    }
    return 0;
}

static int check_config(const struct ebb_host *host, const struct aws *a)
{
    const struct aws_cfg *c = a->cfg;
    const char *bad = NULL;
    if (c->regions.n == 0)
        bad = "regions: list at least one region (e.g. [us-east-1])";
    else if (c->instance_types.n == 0)
        bad = "instance_types: list at least one type (e.g. [g5.xlarge])";
    else if (c->endpoint == NULL || strstr(c->endpoint, "://") == NULL)
        bad = "endpoint: needs a scheme (e.g. https://ec2.{region}.amazonaws.com)";
    else if (c->poll_interval <= 0)
        bad = "poll_interval: must be positive (e.g. 5m)";
    else if (c->max_attempts < 1 || c->max_attempts > 10)
        bad = "max_attempts: must be 1 to 10";
    else if (c->history <= 0)
        bad = "history: must be positive (e.g. 90d)";
    if (bad != NULL) {
        host->log(host->ctx, EBB_LOG_ERROR, "providers.aws.%s", bad);
        return EBB_ECONFIG;
    }
    int rc = check_region_list(host, a, "ami", &c->ami);
    if (rc == 0)
        rc = check_region_list(host, a, "key_name", &c->key_name);
    if (rc == 0)
        rc = check_region_list(host, a, "subnet_id", &c->subnet_id);
    if (rc == 0)
        rc = check_region_list(host, a, "security_group_ids", &c->security_group_ids);
    return rc;
}

static int aws_create(const struct ebb_host *host, const void *config, void **self)
{
    struct aws *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return EBB_ENOMEM;
    a->host = host;
    a->cfg = config;
    a->ops.host = host;
    int rc = check_config(host, a);
    if (rc != 0) {
        free(a);
        return rc;
    }
    /* Missing credentials are not fatal to ebbd: other providers go on,
     * and this one answers EBB_EAUTH, which `ebb providers` shows. */
    rc = ebb_aws_creds_load(&a->creds, a->creds_error, sizeof(a->creds_error));
    if (rc == EBB_ENOMEM) {
        free(a);
        return rc;
    }
    a->have_creds = rc == 0;
    host->poll_every(host->ctx, a->cfg->poll_interval);
    if (a->have_creds)
        host->log(host->ctx, EBB_LOG_INFO, "credentials from %s", a->creds.source);
    else
        host->log(host->ctx, EBB_LOG_ERROR, "%s", a->creds_error);
    *self = a;
    return 0;
}

static void aws_destroy(void *self)
{
    struct aws *a = self;
    if (a == NULL)
        return;
    aws_call_cancel_all(a);
    ebb_aws_creds_free(&a->creds);
    free(a->known);
    free(a);
}

static const struct ebb_provider aws_provider = {
    .abi = EBB_PROVIDER_ABI,
    .struct_size = sizeof(struct ebb_provider),
    .name = "aws",
    .description = "Amazon EC2: spot prices, spot and on-demand instances and gangs",
    .config_keys = aws_keys,
    .config_size = sizeof(struct aws_cfg),
    .create = aws_create,
    .destroy = aws_destroy,
    .poll_prices = aws_poll_prices,
    .launch = aws_launch,
    .terminate = aws_terminate,
    .list_instances = aws_list_instances,
    .stop_job = NULL,
    .flags = EBB_PROVIDER_GANGS | EBB_PROVIDER_GANG_REPLACE,
};

const struct ebb_provider *ebb_provider_entry(void)
{
    return &aws_provider;
}
