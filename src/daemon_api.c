/* The API methods ebbd answers on its unix socket. Each handler reads its
 * params, asks the store or the registry, and answers exactly once. */
#include <unistd.h>

#include "daemon.h"
#include "ebb_build_config.h"
#include "units.h"

static json_t *plugin_json(const struct ebb__plugin_slot *slot)
{
    return json_pack("{s:s,s:s,s:s}", "name", slot->plugin->name,
                     "description", ebb__plugin_description(slot->plugin),
                     "path", slot->plugin->path);
}

static void count_job(void *arg, const char *state, int64_t count)
{
    json_object_set_new(arg, state, json_integer(count));
}

static void api_status(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    json_t *jobs = json_object();
    if (ebb__store_job_counts(d->store, count_job, jobs) != 0) {
        json_decref(jobs);
        ebb__api_fail(call, "internal", "cannot count jobs: %s",
                      ebb__store_errmsg(d->store));
        return;
    }
    json_t *providers = json_array();
    for (size_t i = 0; i < d->registry.n_providers; i++)
        json_array_append_new(providers, plugin_json(&d->registry.providers[i]));
    json_t *policies = json_array();
    for (size_t i = 0; i < d->registry.n_policies; i++)
        json_array_append_new(policies, plugin_json(&d->registry.policies[i]));
    ebb_time_ms now = ebb__clock_now(&d->clock);
    char started[40];
    ebb__format_time(d->started_at, started, sizeof(started));
    ebb__api_reply(call, json_pack("{s:s,s:I,s:s,s:I,s:s,s:s,s:s,s:s,s:o,s:o,s:o}",
        "version", EBB_VERSION,
        "pid", (json_int_t)getpid(),
        "started_at", started,
        "uptime_s", (json_int_t)((now - d->started_at) / 1000),
        "state_dir", d->state_dir,
        "config", d->config_name,
        "clock", d->clock.is_virtual ? "virtual" : "real",
        "default_policy", d->config->default_policy,
        "providers", providers,
        "policies", policies,
        "jobs", jobs));
}

static void api_providers(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    json_t *providers = json_array();
    for (size_t i = 0; i < d->registry.n_providers; i++)
        json_array_append_new(providers, plugin_json(&d->registry.providers[i]));
    ebb__api_reply(call, json_pack("{s:o}", "providers", providers));
}

static int add_price(void *arg, const struct ebb__price_row *row)
{
    const struct ebb_price *p = &row->price;
    char at[40];
    ebb__format_time(p->at, at, sizeof(at));
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:f,s:I,s:s,s:s}",
        "provider", row->provider, "region", p->region, "zone", p->zone,
        "instance_type", p->instance_type, "product", p->product,
        "market", p->market == EBB_MARKET_SPOT ? "spot" : "on-demand",
        "price", (double)p->price_per_hour / EBB_MICROS_PER_UNIT,
        "price_micros", (json_int_t)p->price_per_hour,
        "currency", p->currency, "observed_at", at);
    return json_array_append_new(arg, o) == 0 ? 0 : EBB_ENOMEM;
}

static const char *param_string(struct ebb__api_call *call, const char *key)
{
    return json_string_value(json_object_get(call->params, key));
}

static void api_prices(void *ctx, struct ebb__api_call *call)
{
    struct ebb__daemon *d = ctx;
    struct ebb__price_filter f = {
        .provider = param_string(call, "provider"),
        .instance_type = param_string(call, "instance_type"),
        .zone = param_string(call, "zone"),
    };
    json_t *prices = json_array();
    int rc = ebb__store_latest_prices(d->store, &f, add_price, prices);
    if (rc != 0) {
        json_decref(prices);
        ebb__api_fail(call, "internal", "cannot read prices: %s",
                      ebb__store_errmsg(d->store));
        return;
    }
    ebb__api_reply(call, json_pack("{s:o}", "prices", prices));
}

const struct ebb__api_method ebb__daemon_methods[] = {
    {"status", api_status},
    {"providers", api_providers},
    {"prices", api_prices},
    {NULL, NULL},
};
