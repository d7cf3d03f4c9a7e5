/* The plugin loader and registry against the test plugins built in
 * tests/plugins (found through EBB_PLUGIN_PATH, set by meson). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <ebb/job_model.h>

#include "config/config_file.h"
#include "plugin/plugin.h"
#include "plugin/plugin_abi.h"
#include "plugin/poller.h"
#include "plugin/provider_call.h"
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
    assert_non_null(strstr(d.msg, "default_policy: \"no-such-policy\" is not installed"));
}

/* ---- the provider ABI's size rules ------------------------------------
 * abi_v1 and abi_next (tests/plugins/providers/abi.c) are one provider
 * built against the first version of every struct it fills and against a
 * version with one field more than this ebb knows. */

/* What the core saw of one provider's answers, copied out of the calls. */
struct seen {
    int calls, status;
    size_t n;
    char type[2][32];
    int32_t capacity[2];
    int has_shape;
    char gpu_model[16], machine_id[16];
    char ids[2][16];
    enum ebb_billing billing;
    int events;
    ebb_dur_ms work_done;
    char checkpoint_path[16];
};

static void seen_prices(void *arg, int status, const struct ebb_price *p, size_t n)
{
    struct seen *s = arg;
    s->calls++;
    s->status = status;
    s->n = n;
    for (size_t i = 0; i < n && i < 2; i++) {
        assert_int_equal(p[i].struct_size, sizeof(struct ebb_price));
        snprintf(s->type[i], sizeof(s->type[i]), "%s", p[i].instance_type);
        s->capacity[i] = p[i].capacity;
    }
    if (n > 1 && p[1].shape != NULL) {
        s->has_shape = 1;
        assert_int_equal(p[1].shape->struct_size, sizeof(struct ebb_shape));
        snprintf(s->gpu_model, sizeof(s->gpu_model), "%s", p[1].shape->gpu_model);
        snprintf(s->machine_id, sizeof(s->machine_id), "%s", p[1].shape->machine_id);
    }
}

static void seen_launch(void *arg, int status, const struct ebb_instance *inst)
{
    struct seen *s = arg;
    s->calls++;
    s->status = status;
    if (inst != NULL) {
        snprintf(s->type[0], sizeof(s->type[0]), "%s", inst->instance_type);
        snprintf(s->ids[0], sizeof(s->ids[0]), "%s", inst->id);
        s->billing = inst->billing;
    }
}

static void seen_list(void *arg, int status, const struct ebb_instance *list,
                      size_t n)
{
    struct seen *s = arg;
    s->calls++;
    s->status = status;
    s->n = n;
    for (size_t i = 0; i < n && i < 2; i++)
        snprintf(s->ids[i], sizeof(s->ids[i]), "%s", list[i].id);
}

static void seen_event(void *sink, const char *provider,
                       const struct ebb_instance_event *ev)
{
    struct seen *s = sink;
    s->events++;
    assert_int_equal(ev->struct_size, sizeof(*ev));
    assert_int_equal(ev->kind, EBB_EVENT_CHECKPOINT);
    s->work_done = ev->work_done;
    snprintf(s->checkpoint_path, sizeof(s->checkpoint_path), "%s",
             ev->checkpoint_path ? ev->checkpoint_path : "(none)");
}

/* The arguments that name a started provider's instance. */
#define SLOT(s) (s)->plugin->name, (s)->plugin->provider, (s)->self

/* A provider from `yaml`, started under a virtual clock; events go to
 * `events`. */
struct abi_fx {
    struct ebb__config *cfg;
    struct ebb__registry r;
    struct ebb__clock clock;
    struct ebb__host_env env;
    struct ebb__plugin_slot *slot;
};

static void abi_open(struct abi_fx *f, const char *yaml, const char *name,
                     struct seen *events)
{
    struct ebb_diag d = {{0}};
    if (load(yaml, &f->cfg, &f->r, &d) != 0)
        fail_msg("%s", d.msg);
    f->slot = ebb__registry_provider(&f->r, name);
    assert_non_null(f->slot);
    ebb__clock_init_virtual(&f->clock, 1000);
    f->env = (struct ebb__host_env){
        .clock = &f->clock, .sink = events, .instance_event = seen_event,
    };
    assert_int_equal(ebb__registry_start(&f->r, &f->env, &d), 0);
}

static void abi_close(struct abi_fx *f)
{
    ebb__registry_free(&f->r);
    ebb__clock_close(&f->clock, NULL);
    ebb__config_free(f->cfg);
}

/* Polls, launches and lists through the core's calls; fills the three. */
static void abi_drive(struct abi_fx *f, struct seen *prices, struct seen *launched,
                      struct seen *listed)
{
    assert_int_equal(ebb__provider_poll_prices(SLOT(f->slot), seen_prices, prices), 0);
    ebb__clock_run_until(&f->clock, INT64_MAX);
    assert_int_equal(prices->calls, 1);

    struct ebb_job_model model = {.struct_size = sizeof(model), .speed = 1};
    struct ebb_launch req = {
        .struct_size = sizeof(req), .token = "tok-1", .job_id = "j-1",
        .region = "r-1", .zone = "", .instance_type = "t.b",
        .market = EBB_MARKET_SPOT, .currency = "USD", .count = 1,
        .model = &model,
    };
    assert_int_equal(ebb__provider_launch(SLOT(f->slot), &req, seen_launch, launched), 0);
    ebb__clock_run_until(&f->clock, INT64_MAX);
    assert_int_equal(launched->calls, 1);

    assert_int_equal(ebb__provider_list_instances(SLOT(f->slot), seen_list, listed), 0);
    ebb__clock_run_until(&f->clock, INT64_MAX);
    assert_int_equal(listed->calls, 1);
}

static void loads_a_provider_built_against_the_first_version(void **state)
{
    (void)state;
    struct abi_fx f;
    struct seen events = {0}, prices = {0}, launched = {0}, listed = {0};
    abi_open(&f, "default_policy: on-demand\nproviders:\n  abi_v1: {}\n",
             "abi_v1", &events);
    /* The loader kept what the first version has; stop_job came later. */
    assert_int_equal(f.slot->plugin->provider->struct_size, EBB_PROVIDER_SIZE_V1);
    assert_true(EBB_PROVIDER_SIZE_V1 < sizeof(struct ebb_provider));
    assert_null(f.slot->plugin->provider->stop_job);

    abi_drive(&f, &prices, &launched, &listed);
    assert_int_equal(prices.status, 0);
    assert_int_equal(prices.n, 2);
    assert_string_equal(prices.type[0], "t.a");
    assert_string_equal(prices.type[1], "t.b"); /* stepped by struct_size */
    assert_int_equal(prices.capacity[0], -1);   /* absent: unknown */
    assert_int_equal(prices.capacity[1], -1);
    assert_false(prices.has_shape);

    assert_int_equal(launched.status, 0);
    assert_string_equal(launched.type[0], "t.b");
    assert_string_equal(launched.ids[0], "i-1");
    assert_int_equal(launched.billing, EBB_BILLING_HOURLY_START_PRICE);
    assert_int_equal(events.events, 1);
    assert_int_equal(events.work_done, 42);
    assert_string_equal(events.checkpoint_path, "(none)"); /* absent: NULL */

    assert_int_equal(listed.status, 0);
    assert_int_equal(listed.n, 2);
    assert_string_equal(listed.ids[0], "i-1");
    assert_string_equal(listed.ids[1], "i-2");
    abi_close(&f);
}

static void loads_a_provider_built_against_a_later_version(void **state)
{
    (void)state;
    struct abi_fx f;
    struct seen events = {0}, prices = {0}, launched = {0}, listed = {0};
    abi_open(&f, "default_policy: on-demand\nproviders:\n  abi_next: {}\n",
             "abi_next", &events);
    assert_true(f.slot->plugin->provider->struct_size > sizeof(struct ebb_provider));
    assert_non_null(f.slot->plugin->provider->stop_job);

    abi_drive(&f, &prices, &launched, &listed);
    assert_int_equal(prices.status, 0);
    assert_int_equal(prices.n, 2);
    assert_string_equal(prices.type[0], "t.a");
    assert_string_equal(prices.type[1], "t.b"); /* stepped by struct_size */
    assert_int_equal(prices.capacity[1], 3);
    assert_true(prices.has_shape);
    assert_string_equal(prices.gpu_model, "V100");
    assert_string_equal(prices.machine_id, "m-7");

    /* The plugin read the launch by struct_size: the field it knows and
     * this ebb does not was absent, so it launched what was asked. */
    assert_int_equal(launched.status, 0);
    assert_string_equal(launched.type[0], "t.b");
    assert_int_equal(launched.billing, EBB_BILLING_HOURLY_START_PRICE);
    assert_int_equal(events.events, 1);
    assert_string_equal(events.checkpoint_path, "/ck");

    assert_int_equal(listed.n, 2);
    assert_string_equal(listed.ids[1], "i-2");
    abi_close(&f);
}

/* Runs with stderr (where the log goes) sent to a file, and returns what
 * was written there in `out`. */
struct stderr_capture {
    int saved;
    FILE *file;
};

static void capture_begin(struct stderr_capture *c)
{
    fflush(stderr);
    c->file = tmpfile();
    assert_non_null(c->file);
    c->saved = dup(STDERR_FILENO);
    assert_true(c->saved >= 0);
    assert_true(dup2(fileno(c->file), STDERR_FILENO) >= 0);
}

static void capture_end(struct stderr_capture *c, char *out, size_t size)
{
    fflush(stderr);
    assert_true(dup2(c->saved, STDERR_FILENO) >= 0);
    close(c->saved);
    rewind(c->file);
    size_t n = fread(out, 1, size - 1, c->file);
    out[n] = '\0';
    fclose(c->file);
}

static void refuses_structs_smaller_than_the_first_version(void **state)
{
    (void)state;
    /* The provider struct: the loader refuses it and says what to set. */
    struct ebb__plugin *p;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__plugin_open(EBB__PLUGIN_PROVIDER, "abi_tiny", &path, &p, &d),
                     EBB_EABI);
    assert_non_null(strstr(d.msg, "abi_tiny.so: struct_size"));
    assert_non_null(strstr(d.msg, "smaller than the first version of struct "
                                  "ebb_provider"));
    assert_non_null(strstr(d.msg, "set struct_size = sizeof(struct ebb_provider)"));

    /* Prices that claim less than the first version: the poll completes
     * with EBB_EABI and the log names the plugin. */
    struct abi_fx f;
    struct seen events = {0}, prices = {0};
    abi_open(&f, "default_policy: on-demand\nproviders:\n  abi_v1:\n"
                 "    price_struct_size: 16\n", "abi_v1", &events);
    struct stderr_capture c;
    char log[1024];
    capture_begin(&c);
    assert_int_equal(ebb__provider_poll_prices(SLOT(f.slot), seen_prices, &prices), 0);
    ebb__clock_run_until(&f.clock, INT64_MAX);
    capture_end(&c, log, sizeof(log));
    assert_int_equal(prices.calls, 1);
    assert_int_equal(prices.status, EBB_EABI);
    assert_int_equal(prices.n, 0);
    assert_non_null(strstr(log, "abi_v1: struct ebb_price with struct_size 16 is "
                                "smaller than its first version"));

    /* An event, an HTTP request and a cursor's key, through the host lent
     * to the plugin: the event is dropped, the request refused, the key
     * has no cursor, each with the name in the log. */
    const struct ebb_host *host = &f.slot->host.host;
    struct ebb_instance_event ev = {.struct_size = 8, .kind = EBB_EVENT_CHECKPOINT};
    struct ebb_http_request req = {.struct_size = 12, .method = "GET", .url = "x"};
    struct ebb_series_key key = {.struct_size = 8, .region = "r-1"};
    capture_begin(&c);
    host->instance_event(host->ctx, &ev);
    int rc = host->http(host->ctx, &req, NULL, NULL);
    ebb_time_ms cursor = host->price_cursor(host->ctx, &key);
    capture_end(&c, log, sizeof(log));
    assert_int_equal(events.events, 0);
    assert_int_equal(rc, EBB_EABI);
    assert_int_equal(cursor, 0);
    assert_non_null(strstr(log, "abi_v1: struct ebb_series_key with struct_size 8"));
    assert_non_null(strstr(log, "abi_v1: struct ebb_instance_event with struct_size 8"));
    assert_non_null(strstr(log, "abi_v1: struct ebb_http_request with struct_size 12"));
    abi_close(&f);
}

static void refuses_arrays_of_mixed_or_misaligned_sizes(void **state)
{
    (void)state;
    struct ebb_price p[2] = {
        {.struct_size = sizeof(struct ebb_price), .instance_type = "a"},
        {.struct_size = sizeof(struct ebb_price) - 8, .instance_type = "b"},
    };
    struct ebb__abi_room room = {0};
    const struct ebb_price *out;
    struct stderr_capture c;
    char log[1024];
    capture_begin(&c);
    int mixed = ebb__abi_read_prices("px", p, 2, &room, &out);
    p[0].struct_size = EBB_PRICE_SIZE_V1 + 4;
    int misaligned = ebb__abi_read_prices("px", p, 1, &room, &out);
    capture_end(&c, log, sizeof(log));
    assert_int_equal(mixed, EBB_EABI);
    assert_int_equal(misaligned, EBB_EABI);
    assert_non_null(strstr(log, "px: struct ebb_price [1] has struct_size"));
    assert_non_null(strstr(log, "is not a multiple of its alignment"));

    /* This ebb's own layout passes through without a copy. */
    p[0].struct_size = p[1].struct_size = sizeof(struct ebb_price);
    assert_int_equal(ebb__abi_read_prices("px", p, 2, &room, &out), 0);
    assert_ptr_equal(out, p);
    ebb__abi_room_free(&room);
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
        cmocka_unit_test(loads_a_provider_built_against_the_first_version),
        cmocka_unit_test(loads_a_provider_built_against_a_later_version),
        cmocka_unit_test(refuses_structs_smaller_than_the_first_version),
        cmocka_unit_test(refuses_arrays_of_mixed_or_misaligned_sizes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
