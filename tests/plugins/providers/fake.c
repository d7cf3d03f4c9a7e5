/* A provider for tests: declares one key of every configuration type,
 * asks the host to poll it every `interval`, and answers price polls with
 * one observation built from its configuration (or, with `refuse`, with
 * EBB_EAUTH as bad credentials would), delivered through a host timer like
 * a real asynchronous provider. */
#include <stdlib.h>
#include <string.h>

#include <ebb/provider.h>

struct fake_cfg {
    char *greeting;
    int64_t count;
    double ratio;
    int enabled;
    ebb_dur_ms interval;
    struct ebb_money limit;
    struct ebb_string_list regions;
    int refuse;
};

static const struct ebb_cfg_key fake_keys[] = {
    {"greeting", EBB_CFG_STRING, "hello", offsetof(struct fake_cfg, greeting),
     "a word logged at start"},
    {"count", EBB_CFG_INT, "3", offsetof(struct fake_cfg, count), "a count"},
    {"ratio", EBB_CFG_DOUBLE, "0.5", offsetof(struct fake_cfg, ratio), "a ratio"},
    {"enabled", EBB_CFG_BOOL, "true", offsetof(struct fake_cfg, enabled), "a switch"},
    {"interval", EBB_CFG_DURATION, "5m", offsetof(struct fake_cfg, interval),
     "how often to poll"},
    {"limit", EBB_CFG_MONEY, "2.5 USD", offsetof(struct fake_cfg, limit),
     "the price of the one observation"},
    {"regions", EBB_CFG_STRING_LIST, "[test-1]", offsetof(struct fake_cfg, regions),
     "regions to report"},
    {"refuse", EBB_CFG_BOOL, "false", offsetof(struct fake_cfg, refuse),
     "answer every poll with an authentication failure"},
    EBB_CFG_END,
};

struct fake_self {
    const struct ebb_host *host;
    const struct fake_cfg *cfg;
    ebb_prices_cb cb;
    void *arg;
    int64_t timer;
};

static int fake_create(const struct ebb_host *host, const void *config, void **self)
{
    struct fake_self *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return EBB_ENOMEM;
    t->host = host;
    t->cfg = config;
    host->log(host->ctx, EBB_LOG_INFO, "%s from the fake provider", t->cfg->greeting);
    host->poll_every(host->ctx, t->cfg->interval);
    *self = t;
    return 0;
}

static void deliver_prices(void *arg)
{
    struct fake_self *t = arg;
    struct ebb_price p = {
        .struct_size = sizeof(p),
        .region = t->cfg->regions.n ? t->cfg->regions.items[0] : "",
        .zone = "",
        .instance_type = "t.small",
        .product = "Linux/UNIX",
        .market = EBB_MARKET_SPOT,
        .at = t->host->now(t->host->ctx),
        .price_per_hour = t->cfg->limit.amount,
        .currency = t->cfg->limit.currency,
    };
    ebb_prices_cb cb = t->cb;
    t->cb = NULL;
    t->timer = 0;
    if (t->cfg->refuse)
        cb(t->arg, EBB_EAUTH, NULL, 0);
    else
        cb(t->arg, 0, &p, 1);
}

static void fake_destroy(void *self)
{
    struct fake_self *t = self;
    if (t->cb != NULL) {
        t->host->timer_stop(t->host->ctx, t->timer);
        t->cb(t->arg, EBB_ECANCELED, NULL, 0);
    }
    free(t);
}

static int fake_poll_prices(void *self, ebb_prices_cb cb, void *arg)
{
    struct fake_self *t = self;
    if (t->cb != NULL)
        return EBB_EBUSY;
    int64_t id = t->host->timer_start(t->host->ctx, t->host->now(t->host->ctx),
                                      deliver_prices, t);
    if (id < 0)
        return (int)id;
    t->cb = cb;
    t->arg = arg;
    t->timer = id;
    return 0;
}

static int fake_launch(void *self, const struct ebb_launch *req,
                       ebb_launch_cb cb, void *arg)
{
    return EBB_EUNSUPPORTED;
}

static int fake_terminate(void *self, const char *id, ebb_done_cb cb, void *arg)
{
    return EBB_EUNSUPPORTED;
}

static int fake_list(void *self, ebb_list_cb cb, void *arg)
{
    return EBB_EUNSUPPORTED;
}

static const struct ebb_provider fake_provider = {
    .abi = EBB_PROVIDER_ABI,
    .struct_size = sizeof(struct ebb_provider),
    .name = "fake",
    .description = "fake provider: one configured price, no instances",
    .config_keys = fake_keys,
    .config_size = sizeof(struct fake_cfg),
    .create = fake_create,
    .destroy = fake_destroy,
    .poll_prices = fake_poll_prices,
    .launch = fake_launch,
    .terminate = fake_terminate,
    .list_instances = fake_list,
};

const struct ebb_provider *ebb_provider_entry(void)
{
    return &fake_provider;
}
