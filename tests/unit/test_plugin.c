/* The plugin loader and registry against the test plugins built in
 * tests/plugins (found through EBB_PLUGIN_PATH, set by meson). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "config/config_file.h"
#include "plugin/plugin.h"
#include "plugin/poller.h"
#include "plugin/registry.h"

static struct ebb__plugin_path path;

static int setup(void **state)
{
    (void)state;
    return ebb__plugin_path_init(&path, NULL);
}

static int teardown(void **state)
{
    (void)state;
    ebb__plugin_path_free(&path);
    return 0;
}

static void opens_the_fake_provider(void **state)
{
    (void)state;
    struct ebb__plugin *p;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__plugin_open(EBB__PLUGIN_PROVIDER, "fake", &path, &p, &d), 0);
    assert_string_equal(p->name, "fake");
    assert_non_null(strstr(p->path, "providers/fake.so"));
    assert_int_equal(p->provider->abi, EBB_PROVIDER_ABI);
    const struct ebb_cfg_key *keys = ebb__plugin_config_keys(p);
    assert_string_equal(keys[0].key, "greeting");
    ebb__plugin_close(p);
}

static void refuses_another_abi(void **state)
{
    (void)state;
    struct ebb__plugin *p = (void *)1;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__plugin_open(EBB__PLUGIN_PROVIDER, "badabi", &path, &p, &d),
                     EBB_EABI);
    assert_null(p);
    assert_non_null(strstr(d.msg, "built for provider ABI 99"));
    assert_non_null(strstr(d.msg, "this ebb speaks ABI 1"));
    assert_non_null(strstr(d.msg, "rebuild the plugin"));
}

static void refuses_a_module_without_entry(void **state)
{
    (void)state;
    struct ebb__plugin *p;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__plugin_open(EBB__PLUGIN_PROVIDER, "nosym", &path, &p, &d),
                     EBB_EABI);
    assert_non_null(strstr(d.msg, "no exported symbol ebb_provider_entry"));
}

static void says_where_it_looked(void **state)
{
    (void)state;
    struct ebb__plugin *p;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__plugin_open(EBB__PLUGIN_PROVIDER, "nope", &path, &p, &d),
                     EBB_ENOTFOUND);
    assert_non_null(strstr(d.msg, "no provider plugin named \"nope\""));
    assert_non_null(strstr(d.msg, "EBB_PLUGIN_PATH"));
    assert_int_equal(ebb__plugin_open(EBB__PLUGIN_PROVIDER, "../x", &path, &p, &d),
                     EBB_EINVAL);
}

static void reports_dlopen_failures_with_ldd_hint(void **state)
{
    (void)state;
    struct ebb__plugin *p;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__plugin_open_file(EBB__PLUGIN_PROVIDER, "/dev/null", &p, &d),
                     EBB_EIO);
    assert_non_null(strstr(d.msg, "ldd /dev/null"));
}

static int load(const char *yaml, struct ebb__config **cfg,
                struct ebb__registry *r, struct ebb_diag *d)
{
    int rc = ebb__config_load_buffer("ebb.yaml", yaml, strlen(yaml), cfg, d);
    if (rc != 0)
        return rc;
    rc = ebb__registry_load(r, *cfg, d);
    if (rc != 0) {
        ebb__config_free(*cfg);
        *cfg = NULL;
    }
    return rc;
}

struct poll_result {
    int calls;
    int status;
    ebb_micros price;
    char region[32];
};

static void on_prices(void *arg, int status, const struct ebb_price *prices, size_t n)
{
    struct poll_result *r = arg;
    r->calls++;
    r->status = status;
    if (n == 1) {
        r->price = prices[0].price_per_hour;
        snprintf(r->region, sizeof(r->region), "%s", prices[0].region);
    }
}

static void registry_configures_and_runs_a_provider(void **state)
{
    (void)state;
    struct ebb__config *cfg;
    struct ebb__registry r;
    struct ebb_diag d = {{0}};
    int rc = load("default_policy: on-demand\n"
                  "providers:\n"
                  "  fake:\n"
                  "    greeting: hi\n"
                  "    limit: 0.918 USD\n"
                  "    regions: [eu-west-1, us-east-1]\n",
                  &cfg, &r, &d);
    assert_int_equal(rc, 0);
    assert_int_equal(r.n_providers, 1);
    struct ebb__plugin_slot *slot = ebb__registry_provider(&r, "fake");
    assert_non_null(slot);

    struct ebb__clock clock;
    ebb__clock_init_virtual(&clock, 1000);
    struct ebb__host_env env = {.clock = &clock};
    assert_int_equal(ebb__registry_start(&r, &env, &d), 0);
    struct poll_result res = {0};
    assert_int_equal(slot->plugin->provider->poll_prices(slot->self, on_prices, &res), 0);
    assert_int_equal(res.calls, 0); /* asynchronous: nothing before the clock runs */
    ebb__clock_run_until(&clock, INT64_MAX);
    assert_int_equal(res.calls, 1);
    assert_int_equal(res.status, 0);
    assert_int_equal(res.price, 918000);
    assert_string_equal(res.region, "eu-west-1");

    /* A poll still pending at shutdown completes once, as canceled. */
    struct poll_result late = {0};
    assert_int_equal(slot->plugin->provider->poll_prices(slot->self, on_prices, &late), 0);
    ebb__registry_free(&r);
    assert_int_equal(late.calls, 1);
    assert_int_equal(late.status, EBB_ECANCELED);
    ebb__clock_run_until(&clock, INT64_MAX);
    assert_int_equal(late.calls, 1);
    ebb__clock_close(&clock, NULL);
    ebb__config_free(cfg);
}

static void on_polled(void *arg, const char *provider, int status,
                      const struct ebb_price *prices, size_t n)
{
    struct poll_result *r = arg;
    assert_string_equal(provider, "fake");
    r->calls++;
    r->status = status;
    if (n > 0)
        r->price = prices[0].price_per_hour;
}

/* What a provider declared at create (poll_every) is what the poller
 * schedules it by. */
static void the_poller_polls_at_the_declared_interval(void **state)
{
    (void)state;
    struct ebb__config *cfg;
    struct ebb__registry r;
    struct ebb_diag d = {{0}};
    assert_int_equal(load("providers:\n  fake:\n    interval: 1m\n", &cfg, &r, &d), 0);
    struct ebb__clock clock;
    ebb__clock_init_virtual(&clock, 1000);
    struct ebb__host_env env = {.clock = &clock};
    assert_int_equal(ebb__registry_start(&r, &env, &d), 0);
    assert_int_equal(r.providers[0].host.poll_interval, EBB_MS_PER_MINUTE);
    struct poll_result res = {0};
    const struct ebb__poll_sink sink = {.arg = &res, .prices = on_polled};
    struct ebb__poller poller;
    ebb__poller_init(&poller, &clock, &sink);
    assert_int_equal(ebb__poller_add_registry(&poller, &r), 0);
    ebb__poller_start(&poller);
    ebb__clock_run_until(&clock, 1000 + 10 * EBB_MS_PER_MINUTE);
    assert_int_equal(res.calls, 11);
    assert_int_equal(res.price, 2500000);
    assert_int_equal(ebb__poller_health(&poller, "fake")->next_at,
                     1000 + 11 * EBB_MS_PER_MINUTE);
    ebb__registry_free(&r);
    ebb__poller_fini(&poller);
    ebb__clock_close(&clock, NULL);
    ebb__config_free(cfg);
}

static void registry_rejects_bad_sections(void **state)
{
    (void)state;
    struct ebb__config *cfg;
    struct ebb__registry r;
    struct ebb_diag d = {{0}};

    assert_int_equal(load("providers:\n  fake:\n    greting: hi\n", &cfg, &r, &d),
                     EBB_ECONFIG);
    assert_non_null(strstr(d.msg, "ebb.yaml:3: providers.fake: unknown key \"greting\""));

    assert_int_equal(load("providers:\n  fake:\n    interval: soon\n", &cfg, &r, &d),
                     EBB_ECONFIG);
    assert_non_null(strstr(d.msg, "ebb.yaml:3:"));
    assert_non_null(strstr(d.msg, "interval"));

    assert_int_equal(load("providers:\n  fake: {}\n  nope: {}\n", &cfg, &r, &d),
                     EBB_ENOTFOUND);
    assert_non_null(strstr(d.msg, "ebb.yaml:3: providers.nope: no provider plugin"));

    assert_int_equal(load("providers:\n  badabi: {}\n", &cfg, &r, &d), EBB_EABI);
    assert_non_null(strstr(d.msg, "ebb.yaml:2: providers.badabi:"));

    assert_int_equal(load("default_policy: no-such-policy\n", &cfg, &r, &d),
                     EBB_ECONFIG);
    assert_non_null(strstr(d.msg, "default_policy \"no-such-policy\" is not installed"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opens_the_fake_provider),
        cmocka_unit_test(the_poller_polls_at_the_declared_interval),
        cmocka_unit_test(refuses_another_abi),
        cmocka_unit_test(refuses_a_module_without_entry),
        cmocka_unit_test(says_where_it_looked),
        cmocka_unit_test(reports_dlopen_failures_with_ldd_hint),
        cmocka_unit_test(registry_configures_and_runs_a_provider),
        cmocka_unit_test(registry_rejects_bad_sections),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
