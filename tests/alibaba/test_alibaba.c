/* The alibaba provider, opened by the real loader and configured from
 * YAML, against the fake ECS endpoint (fake_ecs.c) on 127.0.0.1 through
 * the real HTTP client, clock and host.
 *
 * The fake recomputes every V1 signature with its own code and refuses
 * reused nonces, so each passing call below was signed correctly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include <ebb/gang.h>
#include <ebb/units.h>

#include "boot_script.h"
#include "fake_ecs.h"
#include "provider_fixture.h"

#define KEY_ID "LTAIfakekey0123"
#define SECRET "fakeSecretValue0123456789"
#define TYPE "ecs.gn6v-c8g1.2xlarge"
#define TYPE2 "ecs.gn6i-c4g1.xlarge"
#define DAY EBB_MS_PER_DAY
#define HOUR EBB_MS_PER_HOUR

static const char base_yaml[] =
    "regions: [cn-hangzhou, ap-southeast-1]\n"
    "instance_types: [" TYPE "]\n"
    "endpoint: \"@URL@/\"\n"
    "history: 45d\n"
    "image_id: m-ebb-agent\n"
    "security_group_id: sg-ebb\n"
    "vswitches: [cn-hangzhou-h=vsw-h, cn-hangzhou-i=vsw-i]\n"
    "retry_backoff: 5ms\n"
    "retries: 3\n";

struct t {
    struct pfx f;
    struct fake_ecs e;
    ebb_time_ms now; /* whole seconds */
    struct fake_price prices[10];
    struct pfx_result r;
};

/* The base configuration with `extra` after it; an instance_types line in
 * `extra` replaces the base's. */
static void config_yaml(char *out, size_t size, const char *extra)
{
    static const char types[] = "instance_types: [" TYPE "]\n";
    snprintf(out, size, "%s%s", base_yaml, extra ? extra : "");
    if (extra != NULL && strstr(extra, "instance_types:") != NULL) {
        char *line = strstr(out, types);
        memmove(line, line + strlen(types), strlen(line + strlen(types)) + 1);
    }
}

/* Starts the fake (prices relative to now), then the plugin with
 * `extra` YAML after the base configuration. */
static struct t *open_ecs(const char *extra)
{
    struct t *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", KEY_ID, 1);
    setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", SECRET, 1);
    t->e.key_id = KEY_ID;
    t->e.secret = SECRET;
    t->e.page_size = 2;
    pfx_init(&t->f, fake_ecs_handle, &t->e);
    t->now = ebb__clock_now(&t->f.clock) / 1000 * 1000;
    const struct fake_price rows[] = {
        {"cn-hangzhou", "cn-hangzhou-h", TYPE, t->now - 40 * DAY, 1.234, 10.5},
        {"cn-hangzhou", "cn-hangzhou-i", TYPE, t->now - 35 * DAY, 1.5, 10.5},
        {"cn-hangzhou", "cn-hangzhou-h", TYPE, t->now - 20 * DAY, 1.1, 10.5},
        {"cn-hangzhou", "cn-hangzhou-h", TYPE, t->now - 10 * DAY, 1.3, 10.5},
        {"cn-hangzhou", "cn-hangzhou-i", TYPE, t->now - HOUR, 2.25, 10.5},
        {"ap-southeast-1", "ap-southeast-1a", TYPE, t->now - 5 * DAY, 0.75, 3.2},
        {"ap-southeast-1", "ap-southeast-1b", TYPE, t->now - 2 * DAY, 0.8, 3.2},
        {"ap-southeast-1", "ap-southeast-1a", "ecs.other", t->now - DAY, 9, 9},
        /* A type the base configuration does not poll, older than the
         * newest price of its region. */
        {"cn-hangzhou", "cn-hangzhou-h", TYPE2, t->now - 3 * DAY, 2.5, 12},
        {"cn-hangzhou", "cn-hangzhou-i", TYPE2, t->now - 20 * DAY, 2.75, 12},
    };
    memcpy(t->prices, rows, sizeof(rows));
    t->e.prices = t->prices;
    t->e.n_prices = 10;
    char yaml[2048];
    config_yaml(yaml, sizeof(yaml), extra);
    pfx_create(&t->f, "alibaba", yaml);
    return t;
}

static void close_ecs(struct t *t)
{
    /* Whatever happened, the credentials never reached a log line. */
    pfx_assert_not_logged(&t->f, KEY_ID);
    pfx_assert_not_logged(&t->f, SECRET);
    pfx_result_free(&t->r);
    pfx_close(&t->f);
    free(t);
}

/* ---- prices ---- */

static void full_poll_across_windows_and_pages(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    assert_int_equal(t->f.create_status, 0);
    pfx_poll(&t->f, &t->r);
    assert_int_equal(t->r.status, 0);
    /* Seven rows of the polled type, each a spot and an on-demand price. */
    assert_int_equal(t->r.n_prices, 14);
    const struct pfx_price *p =
        pfx_find_price(&t->r, "cn-hangzhou-h", EBB_MARKET_SPOT, t->now - 40 * DAY);
    assert_non_null(p);
    assert_int_equal(p->price, 1234000);
    assert_string_equal(p->currency, "CNY");
    assert_string_equal(p->region, "cn-hangzhou");
    assert_string_equal(p->type, TYPE);
    assert_true(p->has_shape);
    assert_string_equal(p->gpu_model, "V100");
    assert_int_equal(p->gpu_count, 1);
    p = pfx_find_price(&t->r, "cn-hangzhou-h", EBB_MARKET_ON_DEMAND,
                       t->now - 40 * DAY);
    assert_non_null(p);
    assert_int_equal(p->price, 10500000);
    p = pfx_find_price(&t->r, "cn-hangzhou-i", EBB_MARKET_SPOT, t->now - HOUR);
    assert_non_null(p);
    assert_int_equal(p->price, 2250000);
    p = pfx_find_price(&t->r, "ap-southeast-1b", EBB_MARKET_SPOT, t->now - 2 * DAY);
    assert_non_null(p);
    assert_string_equal(p->currency, "USD");
    assert_int_equal(p->price, 800000);

    /* 45 days in two windows of at most 30 days, contiguous, each read
     * page by page until an empty page: cn-hangzhou 3 + 2 pages,
     * ap-southeast-1 1 + 2. */
    assert_int_equal(fake_ecs_count(&t->e, "DescribeSpotPriceHistory"), 8);
    ebb_time_ms prev_end = 0;
    for (size_t i = 0; i < t->e.n_calls; i++) {
        const struct fake_call *c = &t->e.calls[i];
        ebb_time_ms s, e;
        assert_int_equal(ebb_parse_time(c->start, &s), 0);
        assert_int_equal(ebb_parse_time(c->end, &e), 0);
        assert_true(e - s <= 30 * DAY);
        if (c->offset == 0 && prev_end != 0 && s != prev_end)
            assert_true(s <= t->now - 44 * DAY); /* a new region starts over */
        if (c->offset == 0 && i == 0)
            assert_true(llabs(s - (t->now - 45 * DAY)) <= 5000);
        prev_end = e;
    }
    assert_int_equal(t->e.calls[1].offset, 2);
    assert_int_equal(t->e.calls[2].offset, 3);
    close_ecs(t);
}

static void poll_resumes_where_the_store_ends(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    pfx_set_cursor(&t->f, "cn-hangzhou", TYPE, "Linux/UNIX", t->now - 2 * HOUR);
    /* Older than `history`: clamped to 45 days back. */
    pfx_set_cursor(&t->f, "ap-southeast-1", TYPE, "Linux/UNIX", t->now - 100 * DAY);
    pfx_poll(&t->f, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_non_null(pfx_find_price(&t->r, NULL, EBB_MARKET_SPOT, t->now - HOUR));
    assert_null(pfx_find_price(&t->r, NULL, EBB_MARKET_SPOT, t->now - 10 * DAY));
    assert_non_null(pfx_find_price(&t->r, NULL, EBB_MARKET_SPOT, t->now - 5 * DAY));
    char from[48];
    ebb_format_time(t->now - 2 * HOUR, from, sizeof(from));
    assert_string_equal(t->e.calls[0].region, "cn-hangzhou");
    assert_string_equal(t->e.calls[0].start, from);
    ebb_time_ms s;
    size_t ap = 0;
    while (strcmp(t->e.calls[ap].region, "ap-southeast-1") != 0)
        ap++;
    assert_int_equal(ebb_parse_time(t->e.calls[ap].start, &s), 0);
    assert_true(llabs(s - (t->now - 45 * DAY)) <= 5000);
    close_ecs(t);
}

/* Restarted with one more instance type: the new type is read from its
 * own history (`history` back), not from where its region's prices end,
 * so its older prices, and its current one, are there; the type polled
 * before resumes from its own cursor. */
static void added_type_reads_its_own_history(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    pfx_start_poller(&t->f);
    pfx_run_until(&t->f, &t->f.polled, 1);
    assert_int_equal(t->f.poll_status, 0);
    const struct ebb_series_key type2 = {.region = "cn-hangzhou",
                                         .instance_type = TYPE2};
    assert_int_equal(pfx_cursor(&t->f, &type2), 0);

    char yaml[2048];
    config_yaml(yaml, sizeof(yaml), "instance_types: [" TYPE ", " TYPE2 "]\n");
    assert_int_equal(pfx_recreate(&t->f, "alibaba", yaml), 0);
    size_t calls = t->e.n_calls;
    pfx_start_poller(&t->f);
    pfx_run_until(&t->f, &t->f.polled, 2);
    assert_int_equal(t->f.poll_status, 0);
    /* Both of the new type's zones, the 20 days old price too. */
    const struct ebb_series_key h = {sizeof(h),
                                     "cn-hangzhou", "cn-hangzhou-h", TYPE2, "Linux/UNIX"};
    const struct ebb_series_key i = {sizeof(i),
                                     "cn-hangzhou", "cn-hangzhou-i", TYPE2, "Linux/UNIX"};
    assert_int_equal(pfx_cursor(&t->f, &h), t->now - 3 * DAY);
    assert_int_equal(pfx_cursor(&t->f, &i), t->now - 20 * DAY);
    /* The old type resumed where its own prices end (an hour ago). */
    char from[48];
    ebb_format_time(t->now - HOUR, from, sizeof(from));
    assert_string_equal(t->e.calls[calls].region, "cn-hangzhou");
    assert_string_equal(t->e.calls[calls].start, from);
    close_ecs(t);
}

/* A series whose poll failed (here after its first page) keeps nothing of
 * that poll, so its cursor stays, and the next poll reads it from there;
 * not from where the other type, polled fine, got to. */
static void failed_series_resumes_from_its_own_cursor(void **state)
{
    (void)state;
    struct t *t = open_ecs("instance_types: [" TYPE ", " TYPE2 "]\n"
                           "poll_interval: 10ms\n");
    t->e.fail_type = TYPE2;
    t->e.fail_type_after = 1;
    t->e.fail_type_next = 1;
    pfx_start_poller(&t->f);
    pfx_run_until(&t->f, &t->f.polled, 1);
    assert_int_equal(t->f.poll_status, EBB_EINVAL);
    const struct ebb_series_key type2 = {.region = "cn-hangzhou",
                                         .instance_type = TYPE2};
    const struct ebb_series_key type1 = {.region = "cn-hangzhou",
                                         .instance_type = TYPE};
    assert_int_equal(pfx_cursor(&t->f, &type2), 0);
    assert_int_equal(pfx_cursor(&t->f, &type1), t->now - HOUR);
    pfx_run_until(&t->f, &t->f.polled, 2);
    assert_int_equal(t->f.poll_status, 0);
    const struct ebb_series_key i = {sizeof(i),
                                     "cn-hangzhou", "cn-hangzhou-i", TYPE2, "Linux/UNIX"};
    assert_int_equal(pfx_cursor(&t->f, &i), t->now - 20 * DAY);
    assert_int_equal(pfx_cursor(&t->f, &type2), t->now - 3 * DAY);
    close_ecs(t);
}

/* The host polls every poll_interval the plugin declared. */
static void the_host_polls_every_interval(void **state)
{
    (void)state;
    struct t *t = open_ecs("poll_interval: 20ms\n");
    assert_int_equal(t->f.host.poll_interval, 20);
    pfx_start_poller(&t->f);
    pfx_run_until(&t->f, &t->f.polled, 3);
    assert_true(t->f.polled_at[2] - t->f.polled_at[1] >= 20);
    close_ecs(t);
}

static void throttling_backs_off_and_succeeds(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    t->e.throttle_next = 2;
    pfx_poll(&t->f, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->e.throttled, 2);
    assert_int_equal(t->r.n_prices, 14);
    assert_non_null(strstr(t->f.log.data, "throttled"));
    close_ecs(t);
}

static void throttling_is_bounded(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    t->e.throttle_next = 100;
    struct ebb_launch req = {.struct_size = sizeof(req),
                             .token = "tok-t", .job_id = "j-t", .region = "cn-hangzhou",
                             .zone = "", .instance_type = TYPE, .count = 1};
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, EBB_ETHROTTLED);
    assert_int_equal(t->e.throttled, 4); /* the first try and 3 retries */
    close_ecs(t);
}

static void bad_signature_is_an_auth_failure_that_stops_polling(void **state)
{
    (void)state;
    struct t *t = open_ecs("poll_interval: 20ms\n");
    t->e.secret = "the-server-knows-another-secret";
    pfx_start_poller(&t->f);
    pfx_run_until(&t->f, &t->f.polled, 1);
    assert_int_equal(t->f.poll_status, EBB_EAUTH);
    assert_int_equal(t->e.requests, 1);
    assert_int_equal(t->e.bad_signatures, 1);
    /* One clear line, without the key id the server echoed. */
    const char *log = t->f.log.data;
    const char *line = strstr(log, "SignatureDoesNotMatch");
    assert_non_null(line);
    assert_null(strstr(line + 1, "SignatureDoesNotMatch"));
    assert_non_null(strstr(log, "ALIBABA_CLOUD_ACCESS_KEY_SECRET"));
    assert_non_null(strstr(log, "<credential>"));
    assert_non_null(strstr(log, "price polling stopped"));
    /* Polling stopped: five intervals later the host has not polled
     * again, and no request went out. */
    pfx_run_for(&t->f, 100);
    assert_int_equal(t->f.polled, 1);
    assert_int_equal(t->e.requests, 1);
    assert_true(ebb__poller_health(&t->f.poller, "alibaba")->stopped);
    close_ecs(t);
}

static void unknown_key_is_an_auth_failure(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    t->e.key_id = "LTAIsomeoneelse";
    pfx_poll(&t->f, &t->r);
    assert_int_equal(t->r.status, EBB_EAUTH);
    assert_non_null(strstr(t->f.log.data, "InvalidAccessKeyId.NotFound"));
    close_ecs(t);
}

static void missing_credentials_refuse_to_start(void **state)
{
    (void)state;
    struct t *t = calloc(1, sizeof(*t));
    unsetenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET");
    setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", KEY_ID, 1);
    pfx_init(&t->f, fake_ecs_handle, &t->e);
    assert_int_equal(pfx_create(&t->f, "alibaba", "regions: [cn-hangzhou]\n"
                                                  "instance_types: [" TYPE "]\n"),
                     EBB_ECONFIG);
    assert_non_null(strstr(t->f.log.data, "ALIBABA_CLOUD_ACCESS_KEY_SECRET"));
    close_ecs(t);
}

static void missing_regions_refuse_to_start(void **state)
{
    (void)state;
    struct t *t = calloc(1, sizeof(*t));
    setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", KEY_ID, 1);
    setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", SECRET, 1);
    pfx_init(&t->f, fake_ecs_handle, &t->e);
    assert_int_equal(pfx_create(&t->f, "alibaba", "instance_types: [" TYPE "]\n"),
                     EBB_ECONFIG);
    assert_non_null(strstr(t->f.log.data, "regions: name at least one region"));
    close_ecs(t);
}

/* ---- instances ---- */

static char *base64_decode(const char *s)
{
    size_t n = strlen(s);
    unsigned char *out = calloc(1, n + 1);
    int len = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
    assert_true(len >= 0);
    return (char *)out;
}

static void launch_is_idempotent_by_client_token(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    /* The first answer is lost after the instance was created: the
     * client's retry carries the same ClientToken. */
    t->e.lose_next_run = 1;
    struct ebb_launch req = {
        .struct_size = sizeof(struct ebb_launch),
        .token = "tok-1",
        .job_id = "j-20261130-0001",
        .provider = "alibaba",
        .region = "cn-hangzhou",
        .zone = "cn-hangzhou-i",
        .instance_type = TYPE,
        .market = EBB_MARKET_SPOT,
        .max_price_per_hour = 1234567,
        .currency = "CNY",
        .count = 1,
        .agent_url = "http://10.0.0.1:7427",
        .agent_token = "agent-token-it's",
    };
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->e.n_inst, 1);
    assert_int_equal(fake_ecs_count(&t->e, "RunInstances"), 2);
    char first_id[64];
    snprintf(first_id, sizeof(first_id), "%s", t->r.inst[0].id);
    assert_string_equal(first_id, t->e.inst[0].id);
    assert_string_equal(t->r.inst[0].token, "tok-1");
    assert_string_equal(t->r.inst[0].job_id, "j-20261130-0001");
    assert_string_equal(t->r.inst[0].zone, "cn-hangzhou-i");
    assert_int_equal(t->r.inst[0].state, EBB_INSTANCE_PENDING);
    assert_int_equal(t->r.inst[0].market, EBB_MARKET_SPOT);

    assert_string_equal(fake_ecs_run_param(&t->e, "InstanceChargeType"), "PostPaid");
    assert_string_equal(fake_ecs_run_param(&t->e, "SpotStrategy"), "SpotWithPriceLimit");
    assert_string_equal(fake_ecs_run_param(&t->e, "SpotPriceLimit"), "1.234");
    assert_string_equal(fake_ecs_run_param(&t->e, "ClientToken"), "tok-1");
    assert_string_equal(fake_ecs_run_param(&t->e, "ZoneId"), "cn-hangzhou-i");
    assert_string_equal(fake_ecs_run_param(&t->e, "VSwitchId"), "vsw-i");
    assert_string_equal(fake_ecs_run_param(&t->e, "ImageId"), "m-ebb-agent");
    assert_string_equal(fake_ecs_run_param(&t->e, "Tag.1.Key"), "ebb-job-id");
    assert_string_equal(fake_ecs_run_param(&t->e, "Tag.1.Value"), "j-20261130-0001");
    assert_string_equal(fake_ecs_run_param(&t->e, "Tag.2.Key"), "ebb-token");
    assert_string_equal(fake_ecs_run_param(&t->e, "Tag.2.Value"), "tok-1");
    char *script = base64_decode(fake_ecs_run_param(&t->e, "UserData"));
    assert_non_null(strstr(script, "printf '%s' 'agent-token-it'\\''s' > "
                                   "/run/ebb/agent-token"));
    assert_non_null(strstr(script, "exec ebb-agent --ebbd 'http://10.0.0.1:7427' "
                                   "--token-file /run/ebb/agent-token "
                                   "--metadata-kind alibaba"));
    free(script);

    /* The same launch again (after a crash, say): the same instance. */
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_string_equal(t->r.inst[0].id, first_id);
    assert_int_equal(t->e.n_inst, 1);

    /* With a pin the agent is told it. */
    req.token = "tok-pin";
    req.agent_tls_pin = "sha256//pin=";
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    script = base64_decode(fake_ecs_run_param(&t->e, "UserData"));
    assert_non_null(strstr(script, "--ebbd 'http://10.0.0.1:7427' --ebbd-pin "
                                   "'sha256//pin=' --token-file /run/ebb/agent-token"));
    free(script);
    close_ecs(t);
}

static void launch_strategies(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    struct ebb_launch req = {.struct_size = sizeof(req),
                             .token = "tok-od", .job_id = "j-2", .region = "cn-hangzhou",
                             .zone = "", .instance_type = TYPE,
                             .market = EBB_MARKET_ON_DEMAND, .count = 1};
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_string_equal(fake_ecs_run_param(&t->e, "SpotStrategy"), "NoSpot");
    /* No zone asked for: the first configured vSwitch and its zone. */
    assert_string_equal(fake_ecs_run_param(&t->e, "ZoneId"), "cn-hangzhou-h");
    assert_string_equal(fake_ecs_run_param(&t->e, "VSwitchId"), "vsw-h");
    assert_null(fake_ecs_run_param(&t->e, "SpotPriceLimit"));

    static const char *const two[] = {"enrol:go+0.a", "enrol:go+1.b"};
    req.token = "tok-go";
    req.market = EBB_MARKET_SPOT;
    req.count = 2;
    req.agent_tokens = two;
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_string_equal(fake_ecs_run_param(&t->e, "SpotStrategy"), "SpotAsPriceGo");
    assert_string_equal(fake_ecs_run_param(&t->e, "Amount"), "2");
    assert_string_equal(fake_ecs_run_param(&t->e, "MinAmount"), "2");

    /* Once prices showed the region's currency, a limit in another one
     * is refused. */
    pfx_poll(&t->f, &t->r);
    req.token = "tok-usd";
    req.max_price_per_hour = 2000000;
    req.currency = "USD";
    assert_int_equal(t->f.p->launch(t->f.self, &req, pfx_on_launch, &t->r),
                     EBB_EINVAL);
    assert_non_null(strstr(t->f.log.data, "the price limit is in USD but "
                                          "cn-hangzhou prices are in CNY"));
    req.currency = "CNY";
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_string_equal(fake_ecs_run_param(&t->e, "SpotPriceLimit"), "2.000");
    req.max_price_per_hour = 0;

    /* A zone without a configured vSwitch cannot be launched in. */
    req.token = "tok-z";
    req.zone = "cn-hangzhou-k";
    assert_int_equal(t->f.p->launch(t->f.self, &req, pfx_on_launch, &t->r),
                     EBB_ECONFIG);
    assert_non_null(strstr(t->f.log.data, "no vSwitch for that zone"));
    close_ecs(t);
}

static void no_stock_is_no_capacity(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    t->e.no_stock = 1;
    struct ebb_launch req = {.struct_size = sizeof(req),
                             .token = "tok-ns", .job_id = "j-3", .region = "cn-hangzhou",
                             .zone = "cn-hangzhou-h", .instance_type = TYPE,
                             .count = 1};
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, EBB_ENOCAPACITY);
    assert_int_equal(t->e.n_inst, 0);
    close_ecs(t);
}

static const char *const gang_tokens[] = {"enrol:g+0.s0", "enrol:g+1.s1",
                                          "enrol:g+2.s2"};

static struct ebb_launch gang_req(const char *token, unsigned count)
{
    return (struct ebb_launch){
        .struct_size = sizeof(struct ebb_launch),
        .token = token,
        .job_id = "j-gang",
        .provider = "alibaba",
        .region = "cn-hangzhou",
        .zone = "cn-hangzhou-i",
        .instance_type = TYPE,
        .market = EBB_MARKET_SPOT,
        .count = count,
        .agent_url = "http://10.0.0.1:7427",
        .agent_tokens = gang_tokens,
    };
}

/* The fake's instance `id`; fails the test when there is none. */
static struct fake_instance *find_inst(struct fake_ecs *e, const char *id)
{
    size_t i = 0;
    while (i < e->n_inst && strcmp(e->inst[i].id, id) != 0)
        i++;
    assert_true(i < e->n_inst);
    return &e->inst[i];
}

/* A gang of 3: one RunInstances of Amount = MinAmount = 3 in the offer's
 * zone, members named ebb-rank001.. (UniqueSuffix), one instance whose id
 * joins the members' in rank order, each member's agent token picked at
 * boot by its hostname. A repeated launch gets the same gang; the list
 * groups it by token, leaving a reclaimed member out; terminate deletes
 * every member in one DeleteInstances. */
static void gang_launch_list_terminate(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    assert_true(t->f.p->flags & EBB_PROVIDER_GANGS);
    struct ebb_launch req = gang_req("tok-gang", 3);
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->e.n_inst, 3);
    char joined[256];
    snprintf(joined, sizeof(joined), "%s", t->r.inst[0].id);
    assert_int_equal(ebb_gang_size(joined), 3);
    char member[3][32];
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(ebb_gang_member(joined, k, member[k], sizeof(member[k])), 0);
        char host[32];
        snprintf(host, sizeof(host), "ebb-rank%03zu", k + 1);
        assert_string_equal(find_inst(&t->e, member[k])->host, host);
        assert_string_equal(find_inst(&t->e, member[k])->zone, "cn-hangzhou-i");
    }
    assert_string_equal(t->r.inst[0].token, "tok-gang");
    assert_string_equal(fake_ecs_run_param(&t->e, "Amount"), "3");
    assert_string_equal(fake_ecs_run_param(&t->e, "MinAmount"), "3");
    assert_string_equal(fake_ecs_run_param(&t->e, "HostName"), "ebb-rank");
    assert_string_equal(fake_ecs_run_param(&t->e, "UniqueSuffix"), "true");
    assert_string_equal(fake_ecs_run_param(&t->e, "ZoneId"), "cn-hangzhou-i");
    assert_string_equal(fake_ecs_run_param(&t->e, "Tag.2.Value"), "tok-gang");
    char *script = base64_decode(fake_ecs_run_param(&t->e, "UserData"));
    assert_non_null(strstr(script, "http://100.100.100.200/latest/meta-data/hostname"));
    assert_non_null(strstr(script, "ebb-rank001) printf '%s' 'enrol:g+0.s0' > /run/ebb/agent-token ;;\n"
                                   "ebb-rank002) printf '%s' 'enrol:g+1.s1' > /run/ebb/agent-token ;;\n"
                                   "ebb-rank003) printf '%s' 'enrol:g+2.s2' > /run/ebb/agent-token ;;\n"
                                   "*) echo"));
    /* Run as member 1 would (its hostname, with a domain or without): its
     * own token; a hostname of no rank stops the script before the agent. */
    int status;
    char *token = boot_script_run(script, "ebb-rank002.cn-hangzhou.internal", &status);
    assert_int_equal(status, 0);
    assert_string_equal(token, "enrol:g+1.s1");
    free(token);
    token = boot_script_run(script, "ebb-rank001", &status);
    assert_string_equal(token, "enrol:g+0.s0");
    free(token);
    assert_null(boot_script_run(script, "iZbp1abc", &status));
    assert_int_not_equal(status, 0);
    free(script);

    /* Repeated (a retry, a crash): ClientToken gives the same gang. */
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_string_equal(t->r.inst[0].id, joined);
    assert_int_equal(t->e.n_inst, 3);

    /* Listed as one; a member being reclaimed is left out of it. */
    struct fake_instance *single =
        fake_ecs_add_instance(&t->e, "cn-hangzhou", "cn-hangzhou-h", "tok-one", "j-1");
    char single_id[32];
    snprintf(single_id, sizeof(single_id), "%s", single->id);
    pfx_list(&t->f, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->r.n_inst, 2);
    int g = strcmp(t->r.inst[0].id, single_id) == 0 ? 1 : 0;
    assert_string_equal(t->r.inst[g].id, joined);
    assert_string_equal(t->r.inst[1 - g].id, single_id);
    find_inst(&t->e, member[1])->recycling = 1;
    pfx_list(&t->f, &t->r);
    g = strcmp(t->r.inst[0].id, single_id) == 0 ? 1 : 0;
    char short_id[80];
    snprintf(short_id, sizeof(short_id), "%s,%s", member[0], member[2]);
    assert_string_equal(t->r.inst[g].id, short_id);
    assert_int_equal(t->r.inst[g].preempted, 0);

    /* Terminate: every member in one DeleteInstances. */
    int deletes = fake_ecs_count(&t->e, "DeleteInstances");
    pfx_terminate(&t->f, joined, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(fake_ecs_count(&t->e, "DeleteInstances"), deletes + 1);
    assert_int_equal(t->e.n_inst, 1);
    assert_string_equal(t->e.inst[0].id, single_id);
    /* A member already gone: the others are still deleted. */
    req = gang_req("tok-gang2", 2);
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    snprintf(joined, sizeof(joined), "%s", t->r.inst[0].id);
    assert_int_equal(ebb_gang_member(joined, 1, member[1], sizeof(member[1])), 0);
    struct fake_instance *gone = find_inst(&t->e, member[1]);
    *gone = t->e.inst[--t->e.n_inst];
    pfx_terminate(&t->f, joined, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->e.n_inst, 1);
    close_ecs(t);
}

/* All or nothing: stock for 2 of a gang of 3 creates none and the launch
 * fails with EBB_ENOCAPACITY; stock for 3 is enough. The fake refuses a
 * MinAmount above Amount as ECS does; a gang without a token per member
 * is refused before any call. */
static void gang_all_or_nothing(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    t->e.stock_limited = 1;
    t->e.stock = 2;
    struct ebb_launch req = gang_req("tok-short", 3);
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, EBB_ENOCAPACITY);
    assert_int_equal(t->e.n_inst, 0);
    assert_non_null(strstr(t->f.log.data, "capacity for the whole gang"));
    t->e.stock = 3;
    req = gang_req("tok-fits", 3);
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->e.n_inst, 3);

    req = gang_req("tok-bad", 3);
    req.agent_tokens = NULL;
    int calls = t->e.requests;
    assert_int_equal(t->f.p->launch(t->f.self, &req, pfx_on_launch, &t->r), EBB_EINVAL);
    assert_int_equal(t->e.requests, calls);
    assert_non_null(strstr(t->f.log.data, "an agent token per member is missing"));
    close_ecs(t);
}

/* An answer that is no gang: an id left out, two members named alike, an
 * id holding ','. Each fails the launch with EBB_EPROTO and a log line
 * saying what was wrong, and everything the launch started, found by its
 * token's tag, is deleted. */
static void gang_bad_answers(void **state)
{
    (void)state;
    static const struct {
        enum fake_ecs_lie lie;
        const char *token, *why;
    } cases[] = {
        {FAKE_ECS_SHORT, "tok-lie-short", "answered with 1 instances for 2 asked"},
        {FAKE_ECS_DUP_HOST, "tok-lie-dup", "a rank another member has"},
        {FAKE_ECS_COMMA_ID, "tok-lie-comma", "that is no ECS id"},
    };
    struct t *t = open_ecs(NULL);
    for (size_t c = 0; c < 3; c++) {
        t->e.lie_next_run = cases[c].lie;
        struct ebb_launch req = gang_req(cases[c].token, 2);
        pfx_launch(&t->f, &req, &t->r);
        assert_int_equal(t->r.status, EBB_EPROTO);
        const char *line = strstr(t->f.log.data, cases[c].token);
        assert_non_null(line);
        assert_non_null(strstr(line, cases[c].why));
        assert_non_null(strstr(line, "releasing what it started"));
        /* The release runs beside: wait for its log line. */
        char done[96];
        snprintf(done, sizeof(done), "released what launch %s started", cases[c].token);
        for (int i = 0; i < 200 && strstr(t->f.log.data, done) == NULL; i++)
            pfx_run_for(&t->f, 10);
        assert_non_null(strstr(t->f.log.data, done));
        assert_int_equal(t->e.n_inst, 0);
    }
    /* DescribeInstances naming an instance with ',' (no ECS id): listed,
     * it would read as a gang; it is left out, and said so. */
    struct fake_instance *x =
        fake_ecs_add_instance(&t->e, "cn-hangzhou", "cn-hangzhou-h", "tok-c", "j-c");
    snprintf(x->id, sizeof(x->id), "i-1,i-2");
    pfx_list(&t->f, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->r.n_inst, 0);
    assert_non_null(strstr(t->f.log.data, "lists instance \"i-1,i-2\", which is no ECS id"));
    close_ecs(t);
}

/* A replacement member's launch: one instance at `rank` of gang `gang`. */
static struct ebb_launch join_req(const char *token, const char *gang, unsigned rank,
                                  const char *agent_token)
{
    struct ebb_launch req = gang_req(token, 1);
    req.agent_tokens = NULL;
    req.agent_token = agent_token;
    req.join_gang = gang;
    req.join_rank = rank;
    return req;
}

/* A join the provider accepts but the gang as ECS lists it refuses:
 * EBB_EINVAL, the reason logged, nothing created. */
static void join_refused(struct t *t, const struct ebb_launch *req, const char *why)
{
    size_t before = t->e.n_inst;
    int runs = fake_ecs_count(&t->e, "RunInstances");
    pfx_launch(&t->f, req, &t->r);
    assert_int_equal(t->r.status, EBB_EINVAL);
    char line[256];
    snprintf(line, sizeof(line), "join of rank %u into gang %s refused: %s",
             req->join_rank, req->join_gang, why);
    assert_non_null(strstr(t->f.log.data, line));
    assert_int_equal(t->e.n_inst, before);
    assert_int_equal(fake_ecs_count(&t->e, "RunInstances"), runs);
}

/* gang.restart: replace_lost. Member 1 of a gang of 3 is reclaimed; a
 * join at rank 1 creates one instance (Amount = MinAmount = 1) in the
 * gang's zone named ebb-rank002 (no UniqueSuffix), tagged with the
 * gang's token and its join's ClientToken, its user data holding its own
 * agent token only. The list shows the gang whole with it at rank 1; a
 * retried join answers the same instance, the next replacement of that
 * rank another; terminate deletes every member. Joins into a rank whose
 * member runs, out of the gang's ranks, into another zone or into a gang
 * ECS does not run are refused. */
static void gang_join(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    assert_true(t->f.p->flags & EBB_PROVIDER_GANG_REPLACE);
    struct ebb_launch req = gang_req("tok-join", 3);
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    char gang[64], member[3][32];
    snprintf(gang, sizeof(gang), "%s", t->r.inst[0].id);
    for (size_t k = 0; k < 3; k++)
        assert_int_equal(ebb_gang_member(gang, k, member[k], sizeof(member[k])), 0);
    find_inst(&t->e, member[1])->recycling = 1;
    /* ebbd releases the lost member alone: the others run on. */
    pfx_terminate(&t->f, member[1], &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->e.n_inst, 2);
    find_inst(&t->e, member[0]);
    find_inst(&t->e, member[2]);

    struct ebb_launch join = join_req("tok-join", gang, 1, "enrol:g+1.new");
    pfx_launch(&t->f, &join, &t->r);
    assert_int_equal(t->r.status, 0);
    char fresh[64];
    snprintf(fresh, sizeof(fresh), "%s", t->r.inst[0].id);
    assert_int_equal(ebb_gang_size(fresh), 1);
    for (size_t k = 0; k < 3; k++)
        assert_string_not_equal(fresh, member[k]);
    assert_string_equal(t->r.inst[0].token, "tok-join");
    assert_string_equal(find_inst(&t->e, fresh)->host, "ebb-rank002");
    assert_string_equal(find_inst(&t->e, fresh)->zone, "cn-hangzhou-i");
#define P(name) fake_ecs_run_param(&t->e, name)
    assert_string_equal(P("Amount"), "1");
    assert_string_equal(P("MinAmount"), "1");
    assert_string_equal(P("HostName"), "ebb-rank002");
    assert_null(P("UniqueSuffix"));
    assert_string_equal(P("ZoneId"), "cn-hangzhou-i");
    assert_string_equal(P("Tag.2.Value"), "tok-join");
    assert_string_equal(P("Tag.3.Key"), "ebb-join");
    char client_token[80];
    snprintf(client_token, sizeof(client_token), "%s", P("ClientToken"));
    assert_int_equal(strlen(client_token), 64);
    assert_int_equal(strncmp(client_token, "ebb-join-1-", 11), 0);
    assert_string_equal(P("Tag.3.Value"), client_token);
    char *script = base64_decode(P("UserData"));
    assert_null(strstr(script, "meta-data/hostname"));
    int status;
    char *token = boot_script_run(script, "ebb-rank002", &status);
    assert_int_equal(status, 0);
    assert_string_equal(token, "enrol:g+1.new");
    free(token);
    free(script);
#undef P
    char whole[200];
    snprintf(whole, sizeof(whole), "%s,%s,%s", member[0], fresh, member[2]);
    pfx_list(&t->f, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->r.n_inst, 1);
    assert_string_equal(t->r.inst[0].id, whole);

    /* The same join again (its answer lost): the same instance. */
    size_t n_inst = t->e.n_inst;
    pfx_launch(&t->f, &join, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_string_equal(t->r.inst[0].id, fresh);
    assert_int_equal(t->e.n_inst, n_inst);
    /* Retried with another agent token, it is no retry to ECS: the
     * ClientToken with other parameters is refused. */
    struct ebb_launch other = join;
    other.agent_token = "enrol:g+1.other";
    pfx_launch(&t->f, &other, &t->r);
    assert_int_not_equal(t->r.status, 0);
    assert_int_equal(t->e.n_inst, n_inst);

    /* Refused: a rank whose member runs (an original one, and the
     * newcomer for a join naming the member it replaced), another zone, a
     * gang ECS does not run; out of range, more than one member, no gang,
     * before ECS is asked. */
    char why[200];
    struct ebb_launch bad = join_req("tok-join", gang, 0, "enrol:g+0.x");
    snprintf(why, sizeof(why), "its member %s still runs", member[0]);
    join_refused(t, &bad, why);
    bad = join_req("tok-join", whole, 1, "enrol:g+1.x");
    snprintf(why, sizeof(why), "its member %s still runs", fresh);
    join_refused(t, &bad, why);
    find_inst(&t->e, member[2])->recycling = 1;
    bad = join_req("tok-join", whole, 2, "enrol:g+2.x");
    bad.zone = "cn-hangzhou-h";
    join_refused(t, &bad, "the gang runs in cn-hangzhou-i, not cn-hangzhou-h");
    bad = join_req("tok-nobody", "i-none1,i-none2", 1, "enrol:n+1.x");
    join_refused(t, &bad, "no other member of it runs");
    int calls = t->e.requests;
    bad = join_req("tok-join", gang, 3, "enrol:g+3.x");
    assert_int_equal(t->f.p->launch(t->f.self, &bad, pfx_on_launch, &t->r), EBB_EINVAL);
    assert_non_null(strstr(t->f.log.data, "refused: the gang's ranks are 0 to 2"));
    bad = join_req("tok-join", gang, 1, "enrol:g+1.x");
    bad.count = 2;
    bad.agent_tokens = gang_tokens;
    assert_int_equal(t->f.p->launch(t->f.self, &bad, pfx_on_launch, &t->r), EBB_EINVAL);
    assert_non_null(strstr(t->f.log.data, "refused: a join starts one member, not 2"));
    bad = join_req("tok-join", member[0], 1, "enrol:g+1.x");
    assert_int_equal(t->f.p->launch(t->f.self, &bad, pfx_on_launch, &t->r), EBB_EINVAL);
    assert_non_null(strstr(t->f.log.data, "refused: it is no gang of 2 to 64 members"));
    assert_int_equal(t->e.requests, calls);

    /* The newcomer reclaimed in its turn: the next join at rank 1 (naming
     * it) is another instance, and the list shows that one. */
    find_inst(&t->e, fresh)->recycling = 1;
    join = join_req("tok-join", whole, 1, "enrol:g+1.newer");
    pfx_launch(&t->f, &join, &t->r);
    assert_int_equal(t->r.status, 0);
    char newer[64];
    snprintf(newer, sizeof(newer), "%s", t->r.inst[0].id);
    assert_string_not_equal(newer, fresh);
    assert_string_not_equal(fake_ecs_run_param(&t->e, "ClientToken"), client_token);
    assert_string_equal(find_inst(&t->e, newer)->host, "ebb-rank002");
    pfx_list(&t->f, &t->r);
    char now_id[200];
    snprintf(now_id, sizeof(now_id), "%s,%s", member[0], newer);
    assert_string_equal(t->r.inst[0].id, now_id);

    /* Terminate of the gang as ebbd holds it deletes every member. */
    snprintf(whole, sizeof(whole), "%s,%s,%s", member[0], newer, member[2]);
    pfx_terminate(&t->f, whole, &t->r);
    assert_int_equal(t->r.status, 0);
    for (size_t i = 0; i < t->e.n_inst; i++) {
        assert_string_not_equal(t->e.inst[i].id, member[0]);
        assert_string_not_equal(t->e.inst[i].id, member[2]);
        assert_string_not_equal(t->e.inst[i].id, newer);
    }
    close_ecs(t);
}

/* A join whose RunInstances answer is no one ECS id: the launch fails,
 * what it started (found by its ebb-join tag) is released, and the gang
 * runs on. */
static void gang_join_bad_answer(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    struct ebb_launch req = gang_req("tok-joinlie", 2);
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    char gang[64], member[2][32];
    snprintf(gang, sizeof(gang), "%s", t->r.inst[0].id);
    for (size_t k = 0; k < 2; k++)
        assert_int_equal(ebb_gang_member(gang, k, member[k], sizeof(member[k])), 0);
    find_inst(&t->e, member[1])->recycling = 1;
    t->e.lie_next_run = FAKE_ECS_COMMA_ID;
    struct ebb_launch join = join_req("tok-joinlie", gang, 1, "enrol:g+1.n");
    pfx_launch(&t->f, &join, &t->r);
    assert_int_equal(t->r.status, EBB_EPROTO);
    for (int i = 0; i < 200 && t->e.n_inst > 2; i++)
        pfx_run_for(&t->f, 10);
    assert_int_equal(t->e.n_inst, 2);
    find_inst(&t->e, member[0]);
    find_inst(&t->e, member[1]);
    close_ecs(t);
}

static void terminate_known_unknown_and_gone(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    struct ebb_launch req = {.struct_size = sizeof(req),
                             .token = "tok-d", .job_id = "j-4", .region = "cn-hangzhou",
                             .zone = "", .instance_type = TYPE, .count = 1};
    pfx_launch(&t->f, &req, &t->r);
    char id[64];
    snprintf(id, sizeof(id), "%s", t->r.inst[0].id);
    pfx_terminate(&t->f, id, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->e.n_inst, 0);
    assert_int_equal(fake_ecs_count(&t->e, "DescribeInstances"), 0);

    /* An instance this process never saw (launched before a restart) is
     * found region by region, then deleted in its region. */
    struct fake_instance *x =
        fake_ecs_add_instance(&t->e, "ap-southeast-1", "ap-southeast-1a", "tok-x", "j-x");
    snprintf(id, sizeof(id), "%s", x->id);
    pfx_terminate(&t->f, id, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->e.n_inst, 0);
    assert_int_equal(fake_ecs_count(&t->e, "DescribeInstances"), 2);
    assert_string_equal(t->e.calls[t->e.n_calls - 1].action, "DeleteInstance");
    assert_string_equal(t->e.calls[t->e.n_calls - 1].region, "ap-southeast-1");

    /* Gone already: nothing to release, and that is success. */
    pfx_terminate(&t->f, id, &t->r);
    assert_int_equal(t->r.status, 0);
    close_ecs(t);
}

static void list_finds_ours_by_tag_in_every_region(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    t->e.list_page = 1;
    fake_ecs_add_instance(&t->e, "cn-hangzhou", "cn-hangzhou-h", "tok-a", "j-a");
    struct fake_instance *b =
        fake_ecs_add_instance(&t->e, "cn-hangzhou", "cn-hangzhou-i", "tok-b", "j-b");
    b->recycling = 1;
    fake_ecs_add_instance(&t->e, "cn-hangzhou", "cn-hangzhou-h", NULL, NULL);
    fake_ecs_add_instance(&t->e, "ap-southeast-1", "ap-southeast-1a", "tok-c", "j-c");
    pfx_list(&t->f, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->r.n_inst, 3);
    assert_int_equal(fake_ecs_count(&t->e, "DescribeInstances"), 3); /* 2 pages + 1 */
    int seen = 0;
    for (size_t i = 0; i < t->r.n_inst; i++) {
        const struct pfx_inst *v = &t->r.inst[i];
        if (strcmp(v->token, "tok-a") == 0) {
            seen |= 1;
            assert_string_equal(v->job_id, "j-a");
            assert_string_equal(v->region, "cn-hangzhou");
            assert_int_equal(v->state, EBB_INSTANCE_RUNNING);
            assert_int_equal(v->preempted, 0);
            assert_int_equal(v->market, EBB_MARKET_SPOT);
            ebb_time_ms created;
            assert_int_equal(ebb_parse_time("2026-11-30T10:00:00Z", &created), 0);
            assert_int_equal(v->launched_at, created);
        } else if (strcmp(v->token, "tok-b") == 0) {
            seen |= 2;
            assert_int_equal(v->preempted, 1);
            assert_int_equal(v->state, EBB_INSTANCE_STOPPING);
        } else if (strcmp(v->token, "tok-c") == 0) {
            seen |= 4;
            assert_string_equal(v->region, "ap-southeast-1");
            assert_string_equal(v->zone, "ap-southeast-1a");
        }
    }
    assert_int_equal(seen, 7);
    /* What was listed can be deleted without a lookup. */
    pfx_terminate(&t->f, t->e.inst[3].id, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(fake_ecs_count(&t->e, "DescribeInstances"), 3);
    close_ecs(t);
}

static void destroy_cancels_what_is_in_flight(void **state)
{
    (void)state;
    struct t *t = open_ecs(NULL);
    t->e.delay_ms = 5000;
    struct pfx_result poll = {0}, list = {0};
    assert_int_equal(t->f.p->poll_prices(t->f.self, pfx_on_prices, &poll), 0);
    assert_int_equal(t->f.p->list_instances(t->f.self, pfx_on_list, &list), 0);
    pfx_run_for(&t->f, 50);
    assert_int_equal(poll.calls + list.calls, 0);
    t->f.p->destroy(t->f.self);
    t->f.self = NULL;
    assert_int_equal(poll.calls, 1);
    assert_int_equal(poll.status, EBB_ECANCELED);
    assert_int_equal(list.calls, 1);
    assert_int_equal(list.status, EBB_ECANCELED);
    pfx_result_free(&poll);
    pfx_result_free(&list);
    close_ecs(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_poll_across_windows_and_pages),
        cmocka_unit_test(poll_resumes_where_the_store_ends),
        cmocka_unit_test(added_type_reads_its_own_history),
        cmocka_unit_test(failed_series_resumes_from_its_own_cursor),
        cmocka_unit_test(the_host_polls_every_interval),
        cmocka_unit_test(throttling_backs_off_and_succeeds),
        cmocka_unit_test(throttling_is_bounded),
        cmocka_unit_test(bad_signature_is_an_auth_failure_that_stops_polling),
        cmocka_unit_test(unknown_key_is_an_auth_failure),
        cmocka_unit_test(missing_credentials_refuse_to_start),
        cmocka_unit_test(missing_regions_refuse_to_start),
        cmocka_unit_test(launch_is_idempotent_by_client_token),
        cmocka_unit_test(launch_strategies),
        cmocka_unit_test(no_stock_is_no_capacity),
        cmocka_unit_test(gang_launch_list_terminate),
        cmocka_unit_test(gang_all_or_nothing),
        cmocka_unit_test(gang_bad_answers),
        cmocka_unit_test(gang_join),
        cmocka_unit_test(gang_join_bad_answer),
        cmocka_unit_test(terminate_known_unknown_and_gone),
        cmocka_unit_test(list_finds_ours_by_tag_in_every_region),
        cmocka_unit_test(destroy_cancels_what_is_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
