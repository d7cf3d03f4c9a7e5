/* The engine's market (src/market/market.c): offers, their on-demand siblings from
 * the catalog, and the price and capacity history billing and the oracle
 * read.
 *
 * The catalog is tests/data/engine/catalog.csv:
 *   aws us-east-1 p3.2xlarge  3.06 USD/h, speed 1.0
 *   aws us-east-1 p3.8xlarge 12.24 USD/h, speed 2.0
 *   aws (any)     p3.16xlarge 24.48 USD/h, speed 7.44
 *   aws us-east-1 p2.xlarge   0.90 USD/h, speed empty (1.0)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "market/catalog.h"
#include "market/market.h"

#define H EBB_MS_PER_HOUR

static struct ebb__catalog *load_catalog(void)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/data/engine/catalog.csv",
             root ? root : ".");
    struct ebb__catalog *c = NULL;
    struct ebb_diag d = {{0}};
    int rc = ebb__catalog_load(path, &c, &d);
    if (rc != 0)
        fail_msg("%s", d.msg);
    return c;
}

static int setup(void **state)
{
    *state = load_catalog();
    return *state == NULL;
}

static int teardown(void **state)
{
    ebb__catalog_free(*state);
    return 0;
}

static struct ebb_price spot(const char *zone, const char *type, ebb_time_ms at,
                             ebb_micros price, int32_t capacity)
{
    return (struct ebb_price){
        .provider = "aws",
        .region = "us-east-1",
        .zone = zone,
        .instance_type = type,
        .product = "Linux/UNIX",
        .market = EBB_MARKET_SPOT,
        .at = at,
        .price_per_hour = price,
        .currency = "USD",
        .capacity = capacity,
    };
}

static size_t observe(struct ebb__market *m, const struct ebb_price *p)
{
    size_t changed = 0;
    assert_int_equal(ebb__market_observe(m, "sim", p, &changed), 0);
    return changed;
}

/* The offer with this identity (plugin "sim", provider "aws", region
 * us-east-1), or NULL. */
static const struct ebb__offer *find(const struct ebb__market *m,
                                     const char *zone, const char *type,
                                     enum ebb_market market)
{
    size_t i = ebb__market_find(m, &(struct ebb__offer_key){
        "sim", "aws", "us-east-1", zone, type, "Linux/UNIX", market});
    return i == SIZE_MAX ? NULL : &m->offers[i];
}

/* As find(), failing the test when there is none. */
static const struct ebb__offer *get(const struct ebb__market *m,
                                    const char *zone, const char *type,
                                    enum ebb_market market)
{
    static const struct ebb__market_step none = {0, -1, -2};
    static const struct ebb__offer missing = {
        .plugin = "", .provider = "", .region = "", .zone = "",
        .instance_type = "", .steps = (struct ebb__market_step *)&none,
        .n_steps = 1};
    const struct ebb__offer *o = find(m, zone, type, market);
    if (o == NULL) {
        fail_msg("no offer %s %s %d", zone, type, (int)market);
        return &missing;
    }
    return o;
}

static void spot_brings_its_on_demand_sibling(void **state)
{
    struct ebb__market m;
    ebb__market_init(&m, *state);
    struct ebb_price p = spot("us-east-1a", "p3.2xlarge", 10 * H, 900000, -1);
    size_t i = observe(&m, &p);
    assert_int_equal(m.n_offers, 2);
    assert_int_not_equal(i, SIZE_MAX);
    const struct ebb__offer *s = &m.offers[i];
    assert_string_equal(s->plugin, "sim");
    assert_string_equal(s->provider, "aws");
    assert_string_equal(s->region, "us-east-1");
    assert_string_equal(s->zone, "us-east-1a");
    assert_string_equal(s->instance_type, "p3.2xlarge");
    assert_int_equal(s->market, EBB_MARKET_SPOT);
    assert_string_equal(s->currency, "USD");
    assert_int_equal(s->n_steps, 1);
    assert_int_equal(s->steps[0].at, 10 * H);
    assert_int_equal(s->steps[0].price, 900000);
    assert_int_equal(s->steps[0].capacity, -1);
    assert_non_null(s->catalog);

    /* The sibling: region-wide, catalog price, unlimited, from the first
     * observation on. */
    const struct ebb__offer *od = get(&m, "", "p3.2xlarge", EBB_MARKET_ON_DEMAND);
    assert_string_equal(od->plugin, "sim");
    assert_string_equal(od->zone, "");
    assert_string_equal(od->currency, "USD");
    assert_int_equal(od->n_steps, 1);
    assert_int_equal(od->steps[0].at, 10 * H);
    assert_int_equal(od->steps[0].price, 3060000);
    assert_int_equal(od->steps[0].capacity, -1);
    assert_true(od->speed == 1.0);

    /* Another zone of the same type and region: a new spot offer, the same
     * sibling. */
    p = spot("us-east-1b", "p3.2xlarge", 11 * H, 950000, 2);
    i = observe(&m, &p);
    assert_int_equal(m.n_offers, 3);
    assert_string_equal(m.offers[i].zone, "us-east-1b");
    assert_ptr_equal(find(&m, "", "p3.2xlarge", EBB_MARKET_ON_DEMAND),
                     &m.offers[ebb__market_find(&m, &(struct ebb__offer_key){
                         "sim", "aws", "us-east-1", "", "p3.2xlarge",
                         "Linux/UNIX", EBB_MARKET_ON_DEMAND})]);
    assert_int_equal(get(&m, "", "p3.2xlarge", EBB_MARKET_ON_DEMAND)->n_steps, 1);

    /* The same series under another plugin name is another offer. */
    size_t other = SIZE_MAX;
    assert_int_equal(ebb__market_observe(&m, "sim2", &p, &other), 0);
    assert_int_equal(m.n_offers, 5);
    assert_string_equal(m.offers[other].plugin, "sim2");
    ebb__market_free(&m);
    assert_int_equal(m.n_offers, 0);
}

static void speed_and_siblings_follow_the_catalog(void **state)
{
    struct ebb__market m;
    ebb__market_init(&m, *state);
    struct ebb_price p = spot("us-east-1a", "p3.8xlarge", 0, 3600000, -1);
    observe(&m, &p);
    assert_true(get(&m, "us-east-1a", "p3.8xlarge", EBB_MARKET_SPOT)->speed == 2.0);
    assert_true(get(&m, "", "p3.8xlarge", EBB_MARKET_ON_DEMAND)->speed == 2.0);
    assert_int_equal(get(&m, "", "p3.8xlarge", EBB_MARKET_ON_DEMAND)->steps[0].price,
                     12240000);

    /* A catalog row without a region applies to every region. */
    p = spot("eu-west-1a", "p3.16xlarge", 0, 7000000, -1);
    p.region = "eu-west-1";
    observe(&m, &p);
    size_t k = ebb__market_find(&m, &(struct ebb__offer_key){
        "sim", "aws", "eu-west-1", "", "p3.16xlarge", "Linux/UNIX",
        EBB_MARKET_ON_DEMAND});
    assert_int_not_equal(k, SIZE_MAX);
    assert_int_equal(m.offers[k].steps[0].price, 24480000);
    assert_true(m.offers[k].speed == 7.44);

    /* Listed with an empty speed: 1.0. */
    p = spot("us-east-1a", "p2.xlarge", 0, 270000, -1);
    observe(&m, &p);
    assert_true(get(&m, "us-east-1a", "p2.xlarge", EBB_MARKET_SPOT)->speed == 1.0);
    assert_non_null(find(&m, "", "p2.xlarge", EBB_MARKET_ON_DEMAND));

    /* Not listed: speed 1.0, no catalog entry, and no on-demand sibling. */
    size_t before = m.n_offers;
    p = spot("us-east-1a", "g4dn.xlarge", 0, 160000, -1);
    observe(&m, &p);
    const struct ebb__offer *g = get(&m, "us-east-1a", "g4dn.xlarge", EBB_MARKET_SPOT);
    assert_null(g->catalog);
    assert_true(g->speed == 1.0);
    assert_int_equal(m.n_offers, before + 1);
    assert_null(find(&m, "", "g4dn.xlarge", EBB_MARKET_ON_DEMAND));
    ebb__market_free(&m);

    /* Without a catalog at all: speed 1.0 and no siblings. */
    ebb__market_init(&m, NULL);
    p = spot("us-east-1a", "p3.8xlarge", 0, 3600000, -1);
    observe(&m, &p);
    assert_int_equal(m.n_offers, 1);
    assert_true(m.offers[0].speed == 1.0);
    ebb__market_free(&m);
}

static void history_records_only_real_changes(void **state)
{
    struct ebb__market m;
    ebb__market_init(&m, *state);
    struct ebb_price p = spot("us-east-1a", "p3.2xlarge", 1 * H, 900000, 3);
    size_t i = observe(&m, &p);
    const struct ebb__offer *o = &m.offers[i];

    /* The same price and capacity again, later (AWS repeats a price once a
     * day): nothing changes. */
    p.at = 2 * H;
    assert_int_equal(observe(&m, &p), SIZE_MAX);
    assert_int_equal(o->n_steps, 1);

    /* Capacity alone changes: a step. */
    p.at = 3 * H;
    p.capacity = 0;
    assert_int_equal(observe(&m, &p), i);
    assert_int_equal(o->n_steps, 2);
    assert_int_equal(o->steps[1].at, 3 * H);
    assert_int_equal(o->steps[1].price, 900000);
    assert_int_equal(o->steps[1].capacity, 0);

    /* Price alone changes: a step. */
    p.at = 4 * H;
    p.price_per_hour = 1000000;
    assert_int_equal(observe(&m, &p), i);
    assert_int_equal(o->n_steps, 3);

    /* Older than the latest step (a history delivered again): ignored, even
     * with other values. */
    struct ebb_price old = p;
    old.at = 3 * H + 1;
    old.price_per_hour = 5;
    old.capacity = 9;
    assert_int_equal(observe(&m, &old), SIZE_MAX);
    assert_int_equal(o->n_steps, 3);
    assert_int_equal(o->steps[2].price, 1000000);
    assert_int_equal(o->steps[1].capacity, 0);

    /* A correction at the same instant replaces the latest step. */
    struct ebb_price fix = p;
    fix.price_per_hour = 1100000;
    fix.capacity = 2;
    assert_int_equal(observe(&m, &fix), i);
    assert_int_equal(o->n_steps, 3);
    assert_int_equal(o->steps[2].at, 4 * H);
    assert_int_equal(o->steps[2].price, 1100000);
    assert_int_equal(o->steps[2].capacity, 2);
    /* The same correction again changes nothing. */
    assert_int_equal(observe(&m, &fix), SIZE_MAX);
    assert_int_equal(o->n_steps, 3);

    /* The sibling did not move with the spot history. */
    assert_int_equal(get(&m, "", "p3.2xlarge", EBB_MARKET_ON_DEMAND)->n_steps, 1);

    /* Many steps (past the first allocation) keep their order. */
    for (int k = 0; k < 100; k++) {
        p.at = (5 + k) * H;
        p.price_per_hour = 800000 + k % 2;
        assert_int_equal(observe(&m, &p), i);
        o = &m.offers[i];
    }
    assert_int_equal(o->n_steps, 103);
    for (size_t k = 1; k < o->n_steps; k++)
        assert_true(o->steps[k - 1].at < o->steps[k].at);
    ebb__market_free(&m);
}

static void on_demand_observations_land_on_the_regional_offer(void **state)
{
    struct ebb__market m;
    ebb__market_init(&m, *state);
    struct ebb_price p = spot("us-east-1a", "p3.2xlarge", 1 * H, 900000, -1);
    observe(&m, &p);
    /* A provider that reports on-demand prices itself, with a zone. */
    struct ebb_price od = p;
    od.market = EBB_MARKET_ON_DEMAND;
    od.at = 5 * H;
    od.price_per_hour = 3000000;
    size_t i = observe(&m, &od);
    assert_int_equal(m.n_offers, 2);
    assert_ptr_equal(&m.offers[i], find(&m, "", "p3.2xlarge", EBB_MARKET_ON_DEMAND));
    assert_int_equal(m.offers[i].n_steps, 2);
    assert_int_equal(m.offers[i].steps[1].price, 3000000);

    /* NULL provider and region: the plugin's name and "". */
    struct ebb_price bare = {
        .instance_type = "H100_80GB",
        .market = EBB_MARKET_SPOT,
        .at = 0,
        .price_per_hour = 2000000,
        .capacity = -1,
    };
    i = observe(&m, &bare);
    assert_string_equal(m.offers[i].provider, "sim");
    assert_string_equal(m.offers[i].region, "");
    assert_string_equal(m.offers[i].zone, "");
    assert_string_equal(m.offers[i].currency, "USD");
    assert_int_equal(ebb__market_find(&m, &(struct ebb__offer_key){
                         "sim", "sim", "", "", "H100_80GB", "", EBB_MARKET_SPOT}),
                     i);
    ebb__market_free(&m);
}

static void offer_at_finds_the_step_in_effect(void **state)
{
    (void)state;
    struct ebb__market_step st[] = {{10, 1, -1}, {20, 2, 0}, {30, 3, 1}};
    struct ebb__offer o = {.steps = st, .n_steps = 3};
    assert_null(ebb__offer_at(&o, 9));
    assert_null(ebb__offer_at(&o, INT64_MIN));
    assert_ptr_equal(ebb__offer_at(&o, 10), &st[0]);
    assert_ptr_equal(ebb__offer_at(&o, 19), &st[0]);
    assert_ptr_equal(ebb__offer_at(&o, 20), &st[1]);
    assert_ptr_equal(ebb__offer_at(&o, 29), &st[1]);
    assert_ptr_equal(ebb__offer_at(&o, 30), &st[2]);
    assert_ptr_equal(ebb__offer_at(&o, INT64_MAX), &st[2]);
    struct ebb__offer empty = {0};
    assert_null(ebb__offer_at(&empty, 0));
    struct ebb__offer one = {.steps = st, .n_steps = 1};
    assert_ptr_equal(ebb__offer_at(&one, 1000), &st[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(spot_brings_its_on_demand_sibling, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(speed_and_siblings_follow_the_catalog,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(history_records_only_real_changes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            on_demand_observations_land_on_the_regional_offer, setup, teardown),
        cmocka_unit_test(offer_at_finds_the_step_in_effect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
