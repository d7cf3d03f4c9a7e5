/* The vastai provider, opened by the real loader and configured from YAML,
 * against the fake vast.ai API (fake_vast.c) on 127.0.0.1 through the real
 * HTTP client, clock and host. The fake refuses any request without the
 * right Bearer key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fake_vast.h"
#include "provider_fixture.h"

#define API_KEY "vast-test-key-0123456789abcdef"

static const char base_yaml[] =
    "api_url: \"@URL@\"\n"
    "gpu_names: [\"RTX 4090\", \"A100 SXM4 80GB\"]\n"
    "gpu_count: 1\n"
    "min_gpu_ram_gb: 20\n"
    "min_reliability: 0.99\n"
    "image: \"ghcr.io/example/ebb-agent:1\"\n"
    "retry_backoff: 5ms\n";

/* Machine rate (dph_base), minimum bid, disk $/h at 20 GB. */
static const struct fake_offer offers[] = {
    {1001, 88888, "RTX 4090", "Texas, US", 1, 0.4, 0.25, 0.012, 24564, 64000, 16},
    {1002, 55555, "A100 SXM4 80GB", "Quebec, CA", 1, 1.19, 0.7, 0.01, 81920, 128000, 32},
    {1003, 44444, "Tesla V100", "SE", 1, 0.29, 0.1, 0.01, 16384, 32000, 8},
};

struct t {
    struct pfx f;
    struct fake_vast v;
    struct pfx_result r;
};

static struct t *open_vast(const char *extra)
{
    struct t *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    setenv("VAST_API_KEY", API_KEY, 1);
    t->v.api_key = API_KEY;
    t->v.offers = offers;
    t->v.n_offers = 3;
    pfx_init(&t->f, fake_vast_handle, &t->v);
    char yaml[2048];
    snprintf(yaml, sizeof(yaml), "%s%s", base_yaml, extra ? extra : "");
    pfx_create(&t->f, "vastai", yaml);
    return t;
}

static void close_vast(struct t *t)
{
    pfx_assert_not_logged(&t->f, API_KEY);
    pfx_result_free(&t->r);
    pfx_close(&t->f);
    free(t);
}

static const struct pfx_price *find_on(const struct pfx_result *r,
                                       const char *machine, enum ebb_market m)
{
    for (size_t i = 0; i < r->n_prices; i++)
        if (strcmp(r->prices[i].zone, machine) == 0 && r->prices[i].market == m)
            return &r->prices[i];
    return NULL;
}

/* The price, or the test fails. */
static const struct pfx_price *price_on(const struct pfx_result *r,
                                        const char *machine, enum ebb_market m)
{
    const struct pfx_price *p = find_on(r, machine, m);
    if (p == NULL) {
        fail_msg("no %s price for machine %s", m == EBB_MARKET_SPOT ? "spot" : "on-demand",
                 machine);
        abort();
    }
    return p;
}

static void offers_query_and_prices(void **state)
{
    (void)state;
    struct t *t = open_vast(NULL);
    assert_int_equal(t->f.create_status, 0);
    pfx_poll(&t->f, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->v.unauthorized, 0);

    /* The query asks for what is configured. */
    json_t *q = json_loads(t->v.last_query, 0, NULL);
    assert_non_null(q);
    assert_string_equal(json_string_value(json_object_get(q, "type")), "bid");
    json_t *names = json_object_get(json_object_get(q, "gpu_name"), "in");
    assert_int_equal(json_array_size(names), 2);
    assert_string_equal(json_string_value(json_array_get(names, 0)), "RTX 4090");
    assert_string_equal(json_string_value(json_array_get(names, 1)), "A100 SXM4 80GB");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(q, "num_gpus"),
                                                        "eq")),
                     1);
    assert_true(json_number_value(json_object_get(json_object_get(q, "gpu_ram"),
                                                  "gte")) == 20000);
    assert_true(json_number_value(json_object_get(json_object_get(q, "reliability"),
                                                  "gte")) == 0.99);
    assert_true(json_is_true(json_object_get(json_object_get(q, "verified"), "eq")));
    assert_true(json_is_true(json_object_get(json_object_get(q, "rentable"), "eq")));
    assert_true(json_is_false(json_object_get(json_object_get(q, "rented"), "eq")));
    /* The CLI's default: no external marketplace offers. */
    assert_true(json_is_false(json_object_get(json_object_get(q, "external"), "eq")));
    json_decref(q);
    assert_int_equal(t->v.bad_requests, 0);

    /* Every offer: spot is its minimum bid and on demand the machine's
     * rate (dph_base), each with the disk (storage_total_cost); not the
     * bid search's dph_total, which is the minimum bid with the disk. */
    assert_int_equal(t->r.n_prices, 6);
    const struct pfx_price *p = price_on(&t->r, "88888", EBB_MARKET_SPOT);
    assert_int_equal(p->price, 262000);
    assert_string_equal(p->region, "US");
    assert_string_equal(p->type, "RTX_4090x1");
    assert_string_equal(p->currency, "USD");
    assert_true(p->has_shape);
    assert_string_equal(p->gpu_model, "RTX_4090");
    assert_int_equal(p->gpu_count, 1);
    assert_true(p->gpu_memory_gb > 23.9 && p->gpu_memory_gb < 24);
    assert_int_equal(p->vcpus, 16);
    assert_string_equal(p->machine_id, "88888");
    p = price_on(&t->r, "88888", EBB_MARKET_ON_DEMAND);
    assert_int_equal(p->price, 412000);
    p = price_on(&t->r, "55555", EBB_MARKET_ON_DEMAND);
    assert_int_equal(p->price, 1200000);
    p = price_on(&t->r, "55555", EBB_MARKET_SPOT);
    assert_int_equal(p->price, 710000);
    assert_string_equal(p->type, "A100_80GBx1");
    assert_string_equal(p->gpu_model, "A100_80GB");
    assert_string_equal(p->region, "CA");
    p = price_on(&t->r, "44444", EBB_MARKET_ON_DEMAND);
    assert_string_equal(p->gpu_model, "V100");
    assert_string_equal(p->region, "SE");
    /* The poll also looked at the instances (for outbid ones). */
    assert_int_equal(t->v.lists, 1);
    close_vast(t);
}

static void on_demand_search(void **state)
{
    (void)state;
    struct t *t = open_vast("interruptible: false\n");
    pfx_poll(&t->f, &t->r);
    json_t *q = json_loads(t->v.last_query, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(q, "type")), "on-demand");
    json_decref(q);
    assert_int_equal(t->r.n_prices, 3);
    assert_null(find_on(&t->r, "88888", EBB_MARKET_SPOT));
    assert_int_equal(price_on(&t->r, "88888", EBB_MARKET_ON_DEMAND)->price, 412000);
    close_vast(t);
}

/* A machine rate past EBB_MONEY_MAX (1e9 $/h, or 1e300, which would not
 * even convert to micro-units) is no price: the offer is left out. */
static void huge_prices(void **state)
{
    (void)state;
    static const struct fake_offer huge[] = {
        {2001, 77777, "RTX 4090", "Texas, US", 1, 1000000000.5, 0.25, 0.01, 24564, 64000, 16},
        {2002, 66666, "RTX 4090", "Texas, US", 1, 1e300, 0.25, 0.01, 24564, 64000, 16},
        {2003, 33333, "RTX 4090", "Texas, US", 1, 0.4, 0.25, 0.012, 24564, 64000, 16},
    };
    struct t *t = open_vast("interruptible: false\n");
    t->v.offers = huge;
    t->v.n_offers = 3;
    pfx_poll(&t->f, &t->r);
    assert_int_equal(t->r.n_prices, 1);
    assert_null(find_on(&t->r, "77777", EBB_MARKET_ON_DEMAND));
    assert_null(find_on(&t->r, "66666", EBB_MARKET_ON_DEMAND));
    assert_int_equal(price_on(&t->r, "33333", EBB_MARKET_ON_DEMAND)->price, 412000);
    close_vast(t);
}

static struct ebb_launch bid_launch(const char *token, ebb_micros max_price)
{
    return (struct ebb_launch){
        .struct_size = sizeof(struct ebb_launch),
        .token = token,
        .job_id = "j-20261130-0007",
        .provider = "vastai",
        .region = "US",
        .zone = "88888",
        .instance_type = "RTX_4090x1",
        .market = EBB_MARKET_SPOT,
        .max_price_per_hour = max_price,
        .currency = "USD",
        .count = 1,
        .agent_url = "https://ebbd.example:7427",
        .agent_token = "agent-secret-1",
    };
}

static void bid_launch_rents_interruptibly(void **state)
{
    (void)state;
    struct t *t = open_vast(NULL);
    pfx_poll(&t->f, &t->r);
    struct ebb_launch req = bid_launch("tok-1", 300000);
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->v.rents, 1);
    assert_int_equal(t->v.n_vm, 1);
    const struct fake_vm *vm = &t->v.vm[0];
    char id[32];
    snprintf(id, sizeof(id), "%lld", vm->id);
    assert_string_equal(t->r.inst[0].id, id);
    assert_string_equal(t->r.inst[0].token, "tok-1");
    assert_string_equal(t->r.inst[0].zone, "88888");
    assert_int_equal(t->r.inst[0].market, EBB_MARKET_SPOT);
    assert_int_equal(vm->ask_id, 1001);
    assert_true(vm->is_bid);
    assert_true(vm->price == 0.3);
    assert_string_equal(vm->label, "ebb:j-20261130-0007:tok-1");
    assert_string_equal(vm->token, "agent-secret-1");
    assert_string_equal(vm->image, "ghcr.io/example/ebb-agent:1");
    assert_string_equal(vm->onstart, "ebb-agent --ebbd 'https://ebbd.example:7427' "
                                     "--metadata-kind none");
    /* Without a limit the bid is the machine's minimum. */
    req = bid_launch("tok-2", 0);
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_true(t->v.vm[1].price == 0.25);
    /* On demand: no price, so no bid. */
    req = bid_launch("tok-3", 0);
    req.market = EBB_MARKET_ON_DEMAND;
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_false(t->v.vm[2].is_bid);
    /* With a pin the agent is told it. */
    req = bid_launch("tok-4", 0);
    req.agent_tls_pin = "sha256//pin=";
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_string_equal(t->v.vm[3].onstart, "ebb-agent --ebbd 'https://ebbd.example:7427' "
                                            "--ebbd-pin 'sha256//pin=' --metadata-kind none");
    close_vast(t);
}

static void retried_launch_rents_once(void **state)
{
    (void)state;
    struct t *t = open_vast(NULL);
    pfx_poll(&t->f, &t->r);
    /* The rent happens but its answer is lost: the retry finds the
     * instance by its label instead of renting a second one. */
    t->v.lose_next_rent = 1;
    struct ebb_launch req = bid_launch("tok-r", 300000);
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->v.rents, 1);
    assert_int_equal(t->v.n_vm, 1);
    char id[32];
    snprintf(id, sizeof(id), "%lld", t->v.vm[0].id);
    assert_string_equal(t->r.inst[0].id, id);
    /* The same launch again (after a crash): the same instance. */
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_string_equal(t->r.inst[0].id, id);
    assert_int_equal(t->v.rents, 1);
    close_vast(t);
}

static void launch_without_capacity(void **state)
{
    (void)state;
    struct t *t = open_vast(NULL);
    pfx_poll(&t->f, &t->r);
    /* A limit below the machine's minimum bid cannot win. */
    struct ebb_launch req = bid_launch("tok-low", 100000);
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, EBB_ENOCAPACITY);
    /* A machine not offered in the latest poll. */
    req = bid_launch("tok-gone", 0);
    req.zone = "12345";
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, EBB_ENOCAPACITY);
    /* Offered at the poll, rented by someone else since (404). */
    t->v.n_offers = 0;
    req = bid_launch("tok-taken", 0);
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, EBB_ENOCAPACITY);
    assert_int_equal(t->v.rents, 0);
    assert_int_equal(t->v.n_vm, 0);
    close_vast(t);
}

/* A gang (count > 1) is refused before any call: vast.ai has no way to
 * place machines together. The log says what to ask for instead, and the
 * provider does not claim gangs. */
static void gang_launch_is_refused(void **state)
{
    (void)state;
    struct t *t = open_vast(NULL);
    assert_int_equal(t->f.p->flags & EBB_PROVIDER_GANGS, 0);
    pfx_poll(&t->f, &t->r);
    int requests = t->v.requests;
    struct ebb_launch req = bid_launch("tok-gang", 0);
    static const char *const tokens[] = {"agent-secret-a", "agent-secret-b"};
    req.count = 2;
    req.agent_tokens = tokens;
    struct pfx_result r = {0};
    assert_int_equal(t->f.p->launch(t->f.self, &req, pfx_on_launch, &r), EBB_EINVAL);
    assert_int_equal(r.calls, 0);
    assert_int_equal(t->v.requests, requests);
    assert_int_equal(t->v.rents, 0);
    const char *line = strstr(t->f.log.data, "cannot launch a gang of 2 for job "
                                             "j-20261130-0007");
    assert_non_null(line);
    assert_non_null(strstr(line, "nodes: 1 and resources.gpu.count"));
    close_vast(t);
}

static void outbid_is_preemption(void **state)
{
    (void)state;
    struct t *t = open_vast(NULL);
    struct fake_vm *mine = fake_vast_add(&t->v, "ebb:j-a:tok-a", 1);
    fake_vast_add(&t->v, "ebb:j-b:tok-b", 1);
    fake_vast_add(&t->v, "someone's notebook", 1);
    long long mine_id = mine->id;
    fake_vast_outbid(mine);

    /* One instance a page: the list follows next_token to the end. */
    t->v.list_page = 1;
    pfx_list(&t->f, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->v.lists, 3);
    assert_int_equal(t->v.bad_requests, 0);
    assert_int_equal(t->r.n_inst, 2);
    char id[32];
    snprintf(id, sizeof(id), "%lld", mine_id);
    for (size_t i = 0; i < t->r.n_inst; i++) {
        const struct pfx_inst *v = &t->r.inst[i];
        int outbid = strcmp(v->id, id) == 0;
        assert_int_equal(v->preempted, outbid);
        assert_int_equal(v->state, outbid ? EBB_INSTANCE_STOPPING : EBB_INSTANCE_RUNNING);
        assert_string_equal(v->token, outbid ? "tok-a" : "tok-b");
        assert_string_equal(v->job_id, outbid ? "j-a" : "j-b");
        assert_string_equal(v->region, "US");
        assert_string_equal(v->type, "RTX_4090x1");
        assert_int_equal(v->market, EBB_MARKET_SPOT);
        assert_int_equal(v->launched_at, 1796040000500);
    }

    /* A poll reports it lost, once. */
    pfx_poll(&t->f, &t->r);
    assert_int_equal(t->f.n_events, 1);
    assert_int_equal(t->f.events[0].kind, EBB_EVENT_LOST);
    assert_string_equal(t->f.events[0].id, id);
    assert_non_null(strstr(t->f.events[0].reason, "outbid"));
    pfx_poll(&t->f, &t->r);
    assert_int_equal(t->f.n_events, 1);
    close_vast(t);
}

static void rate_limit_backs_off(void **state)
{
    (void)state;
    struct t *t = open_vast(NULL);
    t->v.rate_limit_next = 2;
    pfx_poll(&t->f, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->v.rate_limited, 2);
    assert_int_equal(t->r.n_prices, 6);
    close_vast(t);
}

/* A wrong key: the offer search answers 404 "Invalid user key", which is
 * an authentication failure (not "not found"): one clear error, and the
 * host stops polling instead of asking again every interval. */
static void refused_key_stops_polling(void **state)
{
    (void)state;
    struct t *t = open_vast("poll_interval: 20ms\n");
    t->v.api_key = "another-key";
    pfx_start_poller(&t->f);
    pfx_run_until(&t->f, &t->f.polled, 1);
    assert_int_equal(t->f.poll_status, EBB_EAUTH);
    assert_int_equal(t->v.requests, 1);
    const char *line = strstr(t->f.log.data, "refused the API key");
    assert_non_null(line);
    assert_null(strstr(line + 1, "refused the API key"));
    assert_non_null(strstr(t->f.log.data, "price polling stopped"));
    pfx_run_for(&t->f, 100);
    assert_int_equal(t->f.polled, 1);
    assert_int_equal(t->v.requests, 1);
    close_vast(t);
}

/* The host polls every poll_interval the plugin declared. */
static void the_host_polls_every_interval(void **state)
{
    (void)state;
    struct t *t = open_vast("poll_interval: 20ms\n");
    assert_int_equal(t->f.host.poll_interval, 20);
    pfx_start_poller(&t->f);
    pfx_run_until(&t->f, &t->f.polled, 3);
    assert_int_equal(t->f.poll_status, 0);
    assert_true(t->f.polled_at[2] - t->f.polled_at[1] >= 20);
    close_vast(t);
}

/* An offer's region and the region of the instance rented from it are
 * the same, however the geolocation is spelt. */
static void offer_and_instance_agree_on_region(void **state)
{
    (void)state;
    static const struct fake_offer spaced[] = {
        {2001, 77777, "RTX 4090", "Oslo,  no ", 1, 0.4, 0.25, 0.012, 24564, 64000, 16},
    };
    struct t *t = open_vast(NULL);
    t->v.offers = spaced;
    t->v.n_offers = 1;
    pfx_poll(&t->f, &t->r);
    assert_string_equal(price_on(&t->r, "77777", EBB_MARKET_SPOT)->region, "NO");
    struct ebb_launch req = bid_launch("tok-no", 0);
    req.region = "NO";
    req.zone = "77777";
    pfx_launch(&t->f, &req, &t->r);
    assert_int_equal(t->r.status, 0);
    pfx_list(&t->f, &t->r);
    assert_int_equal(t->r.n_inst, 1);
    assert_string_equal(t->r.inst[0].region, "NO");
    close_vast(t);
}

static void terminate_destroys(void **state)
{
    (void)state;
    struct t *t = open_vast(NULL);
    struct fake_vm *vm = fake_vast_add(&t->v, "ebb:j-d:tok-d", 1);
    char id[32];
    snprintf(id, sizeof(id), "%lld", vm->id);
    pfx_terminate(&t->f, id, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->v.n_vm, 0);
    /* Gone already is success. */
    pfx_terminate(&t->f, id, &t->r);
    assert_int_equal(t->r.status, 0);
    assert_int_equal(t->v.deletes, 2);
    assert_int_equal(t->f.p->terminate(t->f.self, "12/../x", pfx_on_done, &t->r),
                     EBB_EINVAL);
    close_vast(t);
}

static void missing_key_refuses_to_start(void **state)
{
    (void)state;
    struct t *t = calloc(1, sizeof(*t));
    unsetenv("VAST_API_KEY");
    pfx_init(&t->f, fake_vast_handle, &t->v);
    assert_int_equal(pfx_create(&t->f, "vastai", "gpu_names: [\"RTX 4090\"]\n"),
                     EBB_ECONFIG);
    assert_non_null(strstr(t->f.log.data, "VAST_API_KEY"));
    pfx_close(&t->f);
    free(t);
}

static void destroy_cancels_what_is_in_flight(void **state)
{
    (void)state;
    struct t *t = open_vast(NULL);
    t->v.delay_ms = 5000;
    struct pfx_result poll = {0};
    assert_int_equal(t->f.p->poll_prices(t->f.self, pfx_on_prices, &poll), 0);
    pfx_run_for(&t->f, 50);
    t->f.p->destroy(t->f.self);
    t->f.self = NULL;
    assert_int_equal(poll.calls, 1);
    assert_int_equal(poll.status, EBB_ECANCELED);
    pfx_result_free(&poll);
    close_vast(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(offers_query_and_prices),
        cmocka_unit_test(on_demand_search),
        cmocka_unit_test(huge_prices),
        cmocka_unit_test(bid_launch_rents_interruptibly),
        cmocka_unit_test(retried_launch_rents_once),
        cmocka_unit_test(launch_without_capacity),
        cmocka_unit_test(gang_launch_is_refused),
        cmocka_unit_test(outbid_is_preemption),
        cmocka_unit_test(rate_limit_backs_off),
        cmocka_unit_test(refused_key_stops_polling),
        cmocka_unit_test(the_host_polls_every_interval),
        cmocka_unit_test(offer_and_instance_agree_on_region),
        cmocka_unit_test(terminate_destroys),
        cmocka_unit_test(missing_key_refuses_to_start),
        cmocka_unit_test(destroy_cancels_what_is_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
