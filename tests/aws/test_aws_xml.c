/* The aws provider's XML readers (providers/aws/aws_ec2.c) on real EC2
 * answers (fixtures/, from botocore) and on broken ones, and its price and
 * error-code conversions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/units.h>

#include "aws.h"
#include "aws_ec2.h"
#include "test_data.h"

/* A file of tests/aws/fixtures, its length in *len. */
static char *fixture(const char *name, size_t *len)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/aws/fixtures/%s", root ? root : ".", name);
    char *s = test_slurp(path, len);
    assert_non_null(s);
    return s;
}

static ebb_time_ms at(const char *iso)
{
    ebb_time_ms t;
    assert_int_equal(ebb_parse_time(iso, &t), 0);
    return t;
}

static void test_price_page(void **state)
{
    (void)state;
    size_t len;
    char *xml = fixture("ec2-describe-spot-price-history.xml", &len);
    struct aws_price_set set = {0};
    char token[256], why[256];
    assert_int_equal(aws_parse_price_page(xml, len, "us-west-2", &set, token,
                                          sizeof(token), why, sizeof(why)), 0);
    assert_int_equal(set.n, 1000);
    assert_string_equal(token, "Qj9iZzP9N1Vh5jjNyad6X73sizWaPtVQ6328oKe9/GbmNSbOFX1TIhQaz5vok0nu");
    const struct ebb_price *p = &set.v[0];
    assert_null(p->provider);
    assert_string_equal(p->region, "us-west-2");
    assert_string_equal(p->zone, "us-west-2b");
    assert_string_equal(p->instance_type, "m1.small");
    assert_string_equal(p->product, "Linux/UNIX");
    assert_int_equal(p->market, EBB_MARKET_SPOT);
    assert_int_equal(p->price_per_hour, 10000);
    assert_int_equal(p->at, at("2013-03-20T13:35:55Z"));
    assert_string_equal(p->currency, "USD");
    assert_int_equal(p->capacity, -1);
    p = &set.v[999];
    assert_string_equal(p->instance_type, "m2.xlarge");
    assert_string_equal(p->zone, "us-west-2a");
    assert_int_equal(p->price_per_hour, 56000);
    assert_int_equal(p->at, at("2013-03-17T14:35:51Z"));
    /* Interned: one copy of each string for 1,000 items. */
    assert_ptr_equal(set.v[0].product, set.v[2].product);

    /* The same page cut in half: refused, and the set keeps only what an
     * earlier page gave it. */
    assert_int_equal(aws_parse_price_page(xml, len / 2, "us-west-2", &set, token,
                                          sizeof(token), why, sizeof(why)),
                     EBB_EPROTO);
    assert_int_equal(set.n, 1000);
    assert_string_equal(token, "");
    assert_string_equal(why, "malformed XML");
    aws_price_set_free(&set);
    free(xml);
}

static int page(const char *xml, struct aws_price_set *set, char *why)
{
    char token[64];
    return aws_parse_price_page(xml, strlen(xml), "us-east-1", set, token,
                                sizeof(token), why, 256);
}

#define HEAD "<DescribeSpotPriceHistoryResponse><spotPriceHistorySet>"
#define TAIL "</spotPriceHistorySet></DescribeSpotPriceHistoryResponse>"
#define ITEM(price, ts) "<item><instanceType>p3.2xlarge</instanceType>"        \
    "<productDescription>Linux/UNIX</productDescription><spotPrice>" price     \
    "</spotPrice><timestamp>" ts "</timestamp><availabilityZone>us-east-1a"    \
    "</availabilityZone></item>"

static void test_price_page_errors(void **state)
{
    (void)state;
    struct aws_price_set set = {0};
    char why[256];
    assert_int_equal(page(HEAD ITEM("0.9", "2026-11-30T00:00:00.000Z") TAIL, &set, why), 0);
    assert_int_equal(set.n, 1);
    assert_int_equal(set.v[0].price_per_hour, 900000);
    /* A bad second item loses the whole page, the good first one too. */
    assert_int_equal(page(HEAD ITEM("0.9", "2026-11-30T00:01:00Z")
                          ITEM("cheap", "2026-11-30T00:02:00Z") TAIL, &set, why),
                     EBB_EPROTO);
    assert_string_equal(why, "item 2: spotPrice \"cheap\" is not valid");
    assert_int_equal(set.n, 1);
    assert_int_equal(page(HEAD ITEM("0.9", "yesterday") TAIL, &set, why), EBB_EPROTO);
    assert_string_equal(why, "item 1: timestamp \"yesterday\" is not valid");
    assert_int_equal(page(HEAD "<item><instanceType>p3.2xlarge</instanceType></item>" TAIL,
                          &set, why), EBB_EPROTO);
    assert_string_equal(why, "item 1: no productDescription");
    assert_int_equal(page("<Response><Errors/></Response>", &set, why), EBB_EPROTO);
    assert_string_equal(why, "root element is <Response>");
    assert_int_equal(page("", &set, why), EBB_EPROTO);
    assert_int_equal(set.n, 1);
    /* An empty last page is fine. */
    assert_int_equal(page(HEAD TAIL, &set, why), 0);
    aws_price_set_free(&set);
}

static void test_instances(void **state)
{
    (void)state;
    size_t len;
    char *xml = fixture("ec2-describe-instances.xml", &len);
    struct aws_instance_set set = {0};
    char token[64];
    assert_int_equal(aws_parse_instances(xml, len, &set, token, sizeof(token)), 0);
    assert_int_equal(set.n, 2);
    assert_string_equal(set.v[0].id, "i-fde9cece");
    assert_string_equal(set.v[0].state, "stopped");
    assert_string_equal(set.v[0].state_reason, "Client.UserInitiatedShutdown");
    assert_string_equal(set.v[0].zone, "us-west-2a");
    assert_string_equal(set.v[0].instance_type, "m1.small");
    assert_int_equal(set.v[0].launched_at, at("2012-10-16T20:00:13Z"));
    assert_string_equal(set.v[0].token, ""); /* not ours: no ebb tags */
    assert_string_equal(set.v[1].id, "i-78f1b94a");
    assert_string_equal(set.v[1].state, "running");
    assert_string_equal(set.v[1].zone, "us-west-2b");
    assert_string_equal(token, "");
    free(xml);

    xml = fixture("ec2-run-instances.xml", &len);
    assert_int_equal(aws_parse_instances(xml, len, &set, token, sizeof(token)), 0);
    assert_int_equal(set.n, 3);
    assert_string_equal(set.v[2].id, "i-0ee0356c");
    assert_string_equal(set.v[2].state, "pending");
    assert_string_equal(set.v[2].zone, "us-east-1b");
    assert_int_equal(aws_parse_instances(xml, len - 40, &set, token, sizeof(token)),
                     EBB_EPROTO);
    assert_int_equal(set.n, 3);
    free(xml);
    free(set.v);

    /* ebb's tags, and a spot reclaim's state reason. */
    static const char tagged[] =
        "<DescribeInstancesResponse><reservationSet><item><instancesSet><item>"
        "<instanceId>i-1</instanceId><instanceState><code>32</code>"
        "<name>shutting-down</name></instanceState>"
        "<stateReason><code>Server.SpotInstanceTermination</code></stateReason>"
        "<instanceLifecycle>spot</instanceLifecycle><tagSet>"
        "<item><key>ebb:job</key><value>j-1</value></item>"
        "<item><key>ebb:token</key><value>tok-1</value></item>"
        "</tagSet></item></instancesSet></item></reservationSet>"
        "<nextToken>more</nextToken></DescribeInstancesResponse>";
    struct aws_instance_set one = {0};
    assert_int_equal(aws_parse_instances(tagged, strlen(tagged), &one, token,
                                         sizeof(token)), 0);
    assert_int_equal(one.n, 1);
    assert_string_equal(one.v[0].job_id, "j-1");
    assert_string_equal(one.v[0].token, "tok-1");
    assert_string_equal(one.v[0].lifecycle, "spot");
    assert_string_equal(one.v[0].state_reason, "Server.SpotInstanceTermination");
    assert_string_equal(token, "more");
    free(one.v);
}

static void test_errors(void **state)
{
    (void)state;
    size_t len;
    char *xml = fixture("error-ec2-describe-instances.xml", &len);
    char code[64], message[128];
    assert_int_equal(aws_parse_error(xml, len, code, sizeof(code), message,
                                     sizeof(message)), 0);
    assert_string_equal(code, "InvalidInstanceID.Malformed");
    assert_string_equal(message, "Invalid id: \"foobar\"");
    free(xml);
    assert_int_equal(aws_parse_error("<html>busy</html>", 17, code, sizeof(code),
                                     message, sizeof(message)), EBB_ENOTFOUND);

    assert_int_equal(aws_error_status("AuthFailure", 401), EBB_EAUTH);
    assert_int_equal(aws_error_status("UnauthorizedOperation", 403), EBB_EAUTH);
    assert_int_equal(aws_error_status("AuthFailure.ServiceLinkedRoleCreationNotPermitted",
                                      400), EBB_EAUTH);
    assert_int_equal(aws_error_status("RequestLimitExceeded", 503), EBB_ETHROTTLED);
    assert_int_equal(aws_error_status("", 503), EBB_ETHROTTLED);
    assert_int_equal(aws_error_status("InsufficientInstanceCapacity", 500),
                     EBB_ENOCAPACITY);
    assert_int_equal(aws_error_status("SpotMaxPriceTooLow", 400), EBB_ENOCAPACITY);
    assert_int_equal(aws_error_status("MaxSpotInstanceCountExceeded", 400),
                     EBB_ENOCAPACITY);
    assert_int_equal(aws_error_status("UnfulfillableCapacity", 400), EBB_ENOCAPACITY);
    assert_int_equal(aws_error_status("InvalidInstanceID.NotFound", 400), EBB_ENOTFOUND);
    assert_int_equal(aws_error_status("InvalidParameterValue", 400), EBB_EHTTP);
    assert_int_equal(aws_error_status("", 403), EBB_EAUTH);
    assert_int_equal(aws_error_status("InternalError", 500), EBB_EHTTP);
}

static void test_price_text(void **state)
{
    (void)state;
    ebb_micros m;
    assert_int_equal(aws_parse_price("0.010000", &m), 0);
    assert_int_equal(m, 10000);
    assert_int_equal(aws_parse_price("3", &m), 0);
    assert_int_equal(m, 3000000);
    assert_int_equal(aws_parse_price("1.5", &m), 0);
    assert_int_equal(m, 1500000);
    assert_int_equal(aws_parse_price("0.0000005", &m), 0);
    assert_int_equal(m, 1);
    assert_int_equal(aws_parse_price("0.0000004", &m), 0);
    assert_int_equal(m, 0);
    assert_int_equal(aws_parse_price("1000000000", &m), 0);
    assert_int_equal(m, EBB_MONEY_MAX);
    /* Over EBB_MONEY_MAX, and (the last) past int64 once scaled. */
    static const char *const bad[] = {"", "1.", ".5", "-1", "1e3", "0.1x",
                                      "99999999999999999999",
                                      "1000000000.000001", "9223372036859"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(aws_parse_price(bad[i], &m), EBB_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_price_page),
        cmocka_unit_test(test_price_page_errors),
        cmocka_unit_test(test_instances),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_price_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
