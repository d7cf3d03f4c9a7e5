/* The aws provider against fake EC2 (fake_ec2.c) through the real loader,
 * host and HTTP client (aws_fixture.c): price polls over many pages,
 * launches (and one retried after a timeout), spot reclaims seen in
 * DescribeInstances, terminations, every error the provider maps, both
 * credential sources, and that no secret ever reaches a log line, an
 * error string or `ebb providers describe`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <ebb/gang.h>
#include <ebb/units.h>

#include "aws_fixture.h"
#include "boot_script.h"
#include "store/store.h"

#define MINUTE EBB_MS_PER_MINUTE
#define DAY EBB_MS_PER_DAY

static const char *const base_yaml =
    "regions: [us-east-1, us-west-2]\n"
    "instance_types: [p3.2xlarge, g5.xlarge]\n"
    "endpoint: @URL\n"
    "request_timeout: 2s\n"
    "ami: [us-east-1=ami-0east, us-west-2=ami-0west]\n"
    "key_name: [ebb-key]\n"
    "subnet_id: [us-east-1=subnet-0e]\n"
    "security_group_ids: [us-east-1=sg-1, us-east-1=sg-2]\n";

static void env_creds(const char *token)
{
    setenv("AWS_ACCESS_KEY_ID", FX_AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", FX_SECRET, 1);
    if (token != NULL)
        setenv("AWS_SESSION_TOKEN", token, 1);
    else
        unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
}

/* `per_region` points a minute apart, starting 10 days ago: all within a
 * first poll's 90 days. */
static void recent_prices(struct aws_fx *f, size_t per_region)
{
    fake_ec2_set_prices(f->ec2, per_region, f->lent.now(f->lent.ctx) - 10 * DAY,
                        MINUTE);
}

/* ---- callbacks ---- */

struct poll_res {
    int done, status;
    size_t n;
    struct ebb_price first, last;
    char first_zone[32], first_type[32], first_region[32], first_product[32];
    int all_spot_usd;
    ebb_time_ms min_at;
};

static void on_prices(void *arg, int status, const struct ebb_price *p, size_t n)
{
    struct poll_res *r = arg;
    r->done++;
    r->status = status;
    r->n = n;
    r->all_spot_usd = 1;
    r->min_at = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (p[i].market != EBB_MARKET_SPOT || strcmp(p[i].currency, "USD") != 0 ||
            p[i].capacity != -1 || p[i].provider != NULL || p[i].shape != NULL)
            r->all_spot_usd = 0;
        if (p[i].at < r->min_at)
            r->min_at = p[i].at;
    }
    if (n > 0) {
        r->first = p[0];
        r->last = p[n - 1];
        snprintf(r->first_zone, sizeof(r->first_zone), "%s", p[0].zone);
        snprintf(r->first_type, sizeof(r->first_type), "%s", p[0].instance_type);
        snprintf(r->first_region, sizeof(r->first_region), "%s", p[0].region);
        snprintf(r->first_product, sizeof(r->first_product), "%s", p[0].product);
    }
}

static void poll_once(struct aws_fx *f, struct poll_res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(f->p->poll_prices(f->self, on_prices, r), 0);
    assert_int_equal(r->done, 0); /* never inside the call */
    assert_true(aws_fx_run(f, &r->done, 60000));
    assert_int_equal(r->done, 1);
}

struct launch_res {
    int done, status;
    struct ebb_instance in;
    char id[160], token[80], job[80], zone[32];
};

static void on_launch(void *arg, int status, const struct ebb_instance *in)
{
    struct launch_res *r = arg;
    r->done++;
    r->status = status;
    if (in != NULL) {
        r->in = *in;
        snprintf(r->id, sizeof(r->id), "%s", in->id);
        snprintf(r->token, sizeof(r->token), "%s", in->token);
        snprintf(r->job, sizeof(r->job), "%s", in->job_id);
        snprintf(r->zone, sizeof(r->zone), "%s", in->zone);
    }
}

static struct ebb_launch launch_req(const char *token, enum ebb_market market)
{
    return (struct ebb_launch){
        .struct_size = sizeof(struct ebb_launch),
        .token = token,
        .job_id = "j-20261130-0001",
        .region = "us-east-1",
        .zone = "us-east-1b",
        .instance_type = "p3.2xlarge",
        .market = market,
        .max_price_per_hour = 1250000,
        .currency = "USD",
        .count = 1,
        .agent_url = "https://ebbd.example:7427",
        .agent_token = "agent-secret-token-42",
    };
}

static void launch(struct aws_fx *f, const struct ebb_launch *req,
                   struct launch_res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(f->p->launch(f->self, req, on_launch, r), 0);
    assert_true(aws_fx_run(f, &r->done, 30000));
}

struct list_res {
    int done, status;
    size_t n;
    int preempted;
    char id[32];
    enum ebb_instance_state state;
    char token[80], job[80];
};

static void on_list(void *arg, int status, const struct ebb_instance *v, size_t n)
{
    struct list_res *r = arg;
    r->done++;
    r->status = status;
    r->n = n;
    if (n > 0) {
        r->preempted = v[0].preempted;
        r->state = v[0].state;
        snprintf(r->id, sizeof(r->id), "%s", v[0].id);
        snprintf(r->token, sizeof(r->token), "%s", v[0].token);
        snprintf(r->job, sizeof(r->job), "%s", v[0].job_id);
    }
}

static void list(struct aws_fx *f, struct list_res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(f->p->list_instances(f->self, on_list, r), 0);
    assert_true(aws_fx_run(f, &r->done, 30000));
}

struct done_res {
    int done, status;
};

static void on_done(void *arg, int status)
{
    struct done_res *r = arg;
    r->done++;
    r->status = status;
}

/* ---- prices ---- */

/* 2 regions x 6,000 points, 1,000 per page: 12 pages, every point
 * delivered once in one callback, with the fields EC2 sent. */
static void test_poll_pages(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    ebb_time_ms first;
    assert_int_equal(ebb_parse_time("2026-10-01T00:00:00Z", &first), 0);
    fake_ec2_set_prices(f.ec2, 6000, first, MINUTE);
    f.last_price_at = first; /* resume from the first point */
    struct poll_res r;
    poll_once(&f, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.n, 12000);
    assert_true(r.all_spot_usd);
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.price_pages, 12);
    assert_int_equal(st.auth_failures, 0);
    /* The first point as fake_ec2 generates it: index 0. */
    assert_string_equal(r.first_region, "us-east-1");
    assert_string_equal(r.first_zone, "us-east-1a");
    assert_string_equal(r.first_type, "p3.2xlarge");
    assert_string_equal(r.first_product, "Linux/UNIX");
    assert_int_equal(r.first.price_per_hour, 100000);
    assert_int_equal(r.first.at, first);
    /* The last: us-west-2, index 5999: 1000 minutes on, zone c, g5. */
    assert_int_equal(r.last.at, first + 999 * MINUTE);
    assert_int_equal(r.last.price_per_hour,
                     (5999 % 3) * 1000000 + 100000 + 5999 % 997 * 13);
    /* What was asked of EC2. */
    assert_string_equal(fake_ec2_last_param(f.ec2, "DescribeSpotPriceHistory",
                                            "ProductDescription.1"), "Linux/UNIX");
    assert_string_equal(fake_ec2_last_param(f.ec2, "DescribeSpotPriceHistory",
                                            "InstanceType.2"), "g5.xlarge");
    assert_string_equal(fake_ec2_last_param(f.ec2, "DescribeSpotPriceHistory",
                                            "StartTime"), "2026-10-01T00:00:00Z");
    aws_fx_close(&f);
}

/* A poll resumes at the newest stored time; a first one reaches 90 days
 * back. */
static void test_poll_start_time(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    ebb_time_ms first;
    assert_int_equal(ebb_parse_time("2026-10-01T00:00:00Z", &first), 0);
    fake_ec2_set_prices(f.ec2, 1200, first, MINUTE);
    f.last_price_at = first + 100 * MINUTE;
    struct poll_res r;
    poll_once(&f, &r);
    assert_int_equal(r.status, 0);
    /* 6 points a minute (3 zones x 2 types); minutes 100..199 per region. */
    assert_int_equal(r.n, 2 * (1200 - 600));
    assert_int_equal(r.min_at, first + 100 * MINUTE);

    f.last_price_at = 0;
    ebb_time_ms before = f.lent.now(f.lent.ctx);
    poll_once(&f, &r);
    ebb_time_ms start;
    assert_int_equal(ebb_parse_time(fake_ec2_last_param(f.ec2, "DescribeSpotPriceHistory",
                                                         "StartTime"), &start), 0);
    assert_true(start <= before - 90 * DAY + 1000);
    assert_true(start >= before - 90 * DAY - 5000);
    aws_fx_close(&f);
}

/* One cursor per series: a type without one (just added to the
 * configuration) makes its region start `history` back, not at the other
 * type's newest price, so its history is read too. */
static void test_poll_new_type_reads_history(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    ebb_time_ms first;
    assert_int_equal(ebb_parse_time("2026-10-01T00:00:00Z", &first), 0);
    fake_ec2_set_prices(f.ec2, 1200, first, MINUTE);
    f.last_price_at = first + 100 * MINUTE;
    f.uncursored_type = "g5.xlarge";
    ebb_time_ms before = f.lent.now(f.lent.ctx);
    struct poll_res r;
    poll_once(&f, &r);
    assert_int_equal(r.status, 0);
    ebb_time_ms start;
    assert_int_equal(ebb_parse_time(fake_ec2_last_param(f.ec2, "DescribeSpotPriceHistory",
                                                         "StartTime"), &start), 0);
    assert_true(start <= before - 90 * DAY + 1000);
    assert_true(start >= before - 90 * DAY - 5000);
    assert_int_equal(r.n, 2 * 1200);
    assert_int_equal(r.min_at, first);
    aws_fx_close(&f);
}

/* A page cut off in the middle fails the whole poll; nothing is
 * delivered, the log says why, and the next poll works. */
static void test_poll_malformed_page(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    recent_prices(&f, 3000);
    fake_ec2_malform_page(f.ec2, 3);
    struct poll_res r;
    poll_once(&f, &r);
    assert_int_equal(r.status, EBB_EPROTO);
    assert_int_equal(r.n, 0);
    assert_non_null(strstr(f.log, "page 3 is malformed"));
    poll_once(&f, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.n, 6000);
    aws_fx_close(&f);
}

/* RequestLimitExceeded (503) is retried with backoff by the host client:
 * two throttled answers, then the poll completes. Throttled past every
 * attempt, the poll fails with EBB_ETHROTTLED; a 500 with EBB_EHTTP. */
static void test_poll_throttled(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    recent_prices(&f, 500);
    fake_ec2_fail(f.ec2, "DescribeSpotPriceHistory", 2, 503, "RequestLimitExceeded");
    struct poll_res r;
    poll_once(&f, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.n, 1000);
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.faults, 2);

    fake_ec2_fail(f.ec2, "DescribeSpotPriceHistory", 4, 503, "RequestLimitExceeded");
    poll_once(&f, &r);
    assert_int_equal(r.status, EBB_ETHROTTLED);
    assert_int_equal(r.n, 0);
    fake_ec2_fail(f.ec2, NULL, 4, 500, "InternalError");
    poll_once(&f, &r);
    assert_int_equal(r.status, EBB_EHTTP);
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.faults, 2 + 4 + 4);
    aws_fx_close(&f);
}

/* EC2 throttling in its own words at a 4xx status (Throttling at 400):
 * the provider's classifier tells the host to retry it, as it would a
 * 503; another 400 is final at once. */
static void test_poll_throttled_400(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    recent_prices(&f, 500);
    fake_ec2_fail(f.ec2, "DescribeSpotPriceHistory", 2, 400, "Throttling");
    struct poll_res r;
    poll_once(&f, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.n, 1000);
    fake_ec2_fail(f.ec2, "DescribeSpotPriceHistory", 1, 400, "InvalidParameterValue");
    poll_once(&f, &r);
    assert_int_equal(r.status, EBB_EHTTP);
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.faults, 3);
    aws_fx_close(&f);
}

/* A hanging endpoint: each attempt times out, the poll fails with
 * EBB_ETIMEDOUT after max_attempts. */
static void test_poll_timeout(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    char yaml[1024];
    snprintf(yaml, sizeof(yaml), "%s%s", base_yaml, "max_attempts: 2\n");
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, yaml), 0);
    recent_prices(&f, 100);
    fake_ec2_hang(f.ec2, "DescribeSpotPriceHistory", 2, 10000);
    struct poll_res r;
    poll_once(&f, &r);
    assert_int_equal(r.status, EBB_ETIMEDOUT);
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.faults, 2);
    aws_fx_close(&f);
}

/* A wrong secret: fake EC2 recomputes the signature, answers 403
 * AuthFailure; the poll completes with EBB_EAUTH after one request (no
 * retry), one clear error is logged, and the host stops polling: no
 * further poll and no request, however long it waits. */
static void test_poll_auth_failure(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    char yaml[1024];
    snprintf(yaml, sizeof(yaml), "%s%s", base_yaml, "poll_interval: 50ms\n");
    assert_int_equal(aws_fx_open(&f, "another-secret", NULL, yaml), 0);
    recent_prices(&f, 100);
    aws_fx_start_poller(&f);
    assert_true(aws_fx_run(&f, &f.polls, 30000));
    assert_int_equal(f.poll_status, EBB_EAUTH);
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.auth_failures, 1);
    assert_non_null(strstr(f.log, "AuthFailure"));
    assert_non_null(strstr(f.log, "price polling stopped"));
    int never = 0;
    aws_fx_run(&f, &never, 300);
    assert_int_equal(f.polls, 1);
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.auth_failures, 1);
    aws_fx_close(&f);
}

/* UnauthorizedOperation (403 from IAM) is an auth failure too. */
static void test_unauthorized_operation(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    fake_ec2_fail(f.ec2, "DescribeSpotPriceHistory", 1, 403, "UnauthorizedOperation");
    struct poll_res r;
    poll_once(&f, &r);
    assert_int_equal(r.status, EBB_EAUTH);
    assert_non_null(strstr(f.log, "UnauthorizedOperation"));
    aws_fx_close(&f);
}

/* The provider declares poll_interval; after a good poll the host polls
 * again that long after it completed, and not before. */
static void test_poll_timer(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    char yaml[1024];
    snprintf(yaml, sizeof(yaml), "%s%s", base_yaml, "poll_interval: 1s\n");
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, yaml), 0);
    assert_int_equal(f.host.poll_interval, 1000);
    recent_prices(&f, 10);
    aws_fx_start_poller(&f);
    assert_true(aws_fx_run(&f, &f.polls, 30000));
    assert_int_equal(f.poll_status, 0);
    ebb_time_ms first = f.lent.now(f.lent.ctx);
    int never = 0;
    for (int i = 0; f.polls < 2 && i < 300; i++)
        aws_fx_run(&f, &never, 100);
    assert_int_equal(f.polls, 2);
    assert_true(f.lent.now(f.lent.ctx) - first >= 1000);
    /* Once: the next one is a second after this one. */
    aws_fx_run(&f, &never, 500);
    assert_int_equal(f.polls, 2);
    aws_fx_close(&f);
}

/* ---- instances ---- */

static char *b64_decode(const char *s)
{
    size_t len = strlen(s);
    unsigned char *out = calloc(len + 1, 1);
    assert_non_null(out);
    assert_true(EVP_DecodeBlock(out, (const unsigned char *)s, (int)len) >= 0);
    return (char *)out;
}

/* A spot launch: what RunInstances carries, and the instance returned. */
static void test_launch_spot(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    struct ebb_launch req = launch_req("tok-0001", EBB_MARKET_SPOT);
    struct launch_res r;
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.token, "tok-0001");
    assert_string_equal(r.job, "j-20261130-0001");
    assert_string_equal(r.zone, "us-east-1b");
    assert_int_equal(r.in.state, EBB_INSTANCE_PENDING);
    assert_int_equal(r.in.market, EBB_MARKET_SPOT);
    assert_int_equal(r.in.billing, EBB_BILLING_HOURLY_START_PRICE);
    assert_true(r.in.launched_at > 0);
    assert_string_equal(fake_ec2_instance_state(f.ec2, r.id), "pending");

#define P(name) fake_ec2_last_param(f.ec2, "RunInstances", name)
    assert_string_equal(P("ClientToken"), "tok-0001");
    assert_string_equal(P("ImageId"), "ami-0east");
    assert_string_equal(P("KeyName"), "ebb-key");
    assert_string_equal(P("SubnetId"), "subnet-0e");
    assert_string_equal(P("SecurityGroupId.1"), "sg-1");
    assert_string_equal(P("SecurityGroupId.2"), "sg-2");
    assert_string_equal(P("InstanceMarketOptions.MarketType"), "spot");
    assert_string_equal(P("InstanceMarketOptions.SpotOptions.MaxPrice"), "1.250000");
    assert_string_equal(P("TagSpecification.1.Tag.1.Key"), "ebb:job");
    assert_string_equal(P("TagSpecification.1.Tag.2.Value"), "tok-0001");
    char *script = b64_decode(P("UserData"));
    assert_non_null(strstr(script, "'agent-secret-token-42' > /run/ebb/agent-token"));
    assert_non_null(strstr(script, "'ebb-agent' --ebbd 'https://ebbd.example:7427' "
                                   "--token-file /run/ebb/agent-token"));
    free(script);

    /* On-demand in us-west-2: no market options, its own AMI, no subnet. */
    req = launch_req("tok-0002", EBB_MARKET_ON_DEMAND);
    req.region = "us-west-2";
    req.zone = "";
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.in.market, EBB_MARKET_ON_DEMAND);
    assert_string_equal(P("ImageId"), "ami-0west");
    assert_null(P("InstanceMarketOptions.MarketType"));
    assert_null(P("SubnetId"));
    assert_null(P("Placement.AvailabilityZone"));

    /* The agent is told how to trust ebbd: the pin, or the CA (written
     * to a file) when there is one. */
    req = launch_req("tok-0004", EBB_MARKET_ON_DEMAND);
    req.region = "us-west-2";
    req.agent_tls_pin = "sha256//pin=";
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    script = b64_decode(P("UserData"));
    assert_non_null(strstr(script, "--ebbd 'https://ebbd.example:7427' --ebbd-pin "
                                   "'sha256//pin=' --token-file /run/ebb/agent-token"));
    free(script);
    req = launch_req("tok-0005", EBB_MARKET_ON_DEMAND);
    req.region = "us-west-2";
    req.agent_tls_pin = "sha256//pin=";
    req.agent_tls_ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    script = b64_decode(P("UserData"));
    assert_non_null(strstr(script, "printf '%s' '-----BEGIN CERTIFICATE-----\nMIIB\n"
                                   "-----END CERTIFICATE-----\n' > /run/ebb/ebbd-ca.pem\n"));
    assert_non_null(strstr(script, "--ebbd-ca /run/ebb/ebbd-ca.pem --token-file"));
    assert_null(strstr(script, "--ebbd-pin"));
    free(script);
#undef P
    /* Launch requests the provider refuses before calling EC2. */
    req = launch_req("tok-0003", EBB_MARKET_SPOT);
    req.region = "eu-west-1";
    assert_int_equal(f.p->launch(f.self, &req, on_launch, &r), EBB_EINVAL);
    req = launch_req("tok-0003", EBB_MARKET_SPOT);
    req.agent_url = NULL;
    assert_int_equal(f.p->launch(f.self, &req, on_launch, &r), EBB_EINVAL);
    aws_fx_close(&f);
}

/* RunInstances is carried out but its answer comes after the attempt's
 * timeout: the host retries with the same ClientToken and EC2 answers
 * with the same instance. A repeated launch (the core after a crash)
 * also gets it. One instance exists. */
static void test_launch_retry_after_timeout(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    char yaml[1024];
    snprintf(yaml, sizeof(yaml), "%s", base_yaml);
    char *t = strstr(yaml, "request_timeout: 2s");
    memcpy(t, "request_timeout: 1s", strlen("request_timeout: 1s"));
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, yaml), 0);
    fake_ec2_hang(f.ec2, "RunInstances", 1, 5000);
    struct ebb_launch req = launch_req("tok-retry", EBB_MARKET_SPOT);
    struct launch_res r;
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    assert_true(st.run_instances >= 2); /* more if the machine is slow */
    assert_int_equal(st.instances, 1);
    char first_id[160];
    snprintf(first_id, sizeof(first_id), "%s", r.id);
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, first_id);
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.instances, 1);
    aws_fx_close(&f);
}

/* Each capacity error fails the launch with EBB_ENOCAPACITY. */
static void test_launch_no_capacity(void **state)
{
    (void)state;
    env_creds(NULL);
    static const char *const codes[] = {"InsufficientInstanceCapacity",
                                        "SpotMaxPriceTooLow",
                                        "MaxSpotInstanceCountExceeded",
                                        "UnfulfillableCapacity"};
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    for (size_t i = 0; i < 4; i++) {
        fake_ec2_fail(f.ec2, "RunInstances", 1, i == 0 ? 500 : 400, codes[i]);
        struct ebb_launch req = launch_req("tok-cap", EBB_MARKET_SPOT);
        struct launch_res r;
        launch(&f, &req, &r);
        /* 500 InsufficientInstanceCapacity is retried once by the host and
         * then succeeds: the first code is checked on a 400 below. */
        if (i == 0) {
            assert_int_equal(r.status, 0);
            continue;
        }
        assert_int_equal(r.status, EBB_ENOCAPACITY);
        assert_non_null(strstr(f.log, codes[i]));
    }
    fake_ec2_fail(f.ec2, "RunInstances", 1, 400, codes[0]);
    struct ebb_launch req = launch_req("tok-cap2", EBB_MARKET_SPOT);
    struct launch_res r;
    launch(&f, &req, &r);
    assert_int_equal(r.status, EBB_ENOCAPACITY);
    aws_fx_close(&f);
}

/* EC2 reclaims a spot instance with no agent report: DescribeInstances
 * shows it shutting-down for Server.SpotInstanceTermination; the list
 * marks it preempted and one LOST event is reported (not again on the
 * next list). */
static void test_spot_reclaim(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    struct ebb_launch req = launch_req("tok-reclaim", EBB_MARKET_SPOT);
    struct launch_res lr;
    launch(&f, &req, &lr);
    assert_int_equal(lr.status, 0);
    struct list_res r;
    list(&f, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.preempted, 0);
    assert_string_equal(r.token, "tok-reclaim");
    assert_string_equal(r.job, "j-20261130-0001");
    assert_int_equal(f.n_events, 0);

    assert_int_equal(fake_ec2_reclaim(f.ec2, lr.id), 0);
    list(&f, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.preempted, 1);
    assert_int_equal(r.state, EBB_INSTANCE_STOPPING);
    assert_int_equal(f.n_events, 1);
    assert_int_equal(f.events[0].kind, EBB_EVENT_LOST);
    assert_string_equal(f.event_ids[0], lr.id);
    list(&f, &r);
    assert_int_equal(f.n_events, 1);
    aws_fx_close(&f);
}

/* DescribeInstances pages are followed. */
static void test_list_pages(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    for (int i = 0; i < 1007; i++) {
        char token[32];
        snprintf(token, sizeof(token), "tok-many-%d", i);
        struct ebb_launch req = launch_req(token, EBB_MARKET_SPOT);
        struct launch_res lr;
        launch(&f, &req, &lr);
        assert_int_equal(lr.status, 0);
    }
    struct list_res r;
    list(&f, &r);
    assert_int_equal(r.status, 0);
    /* More than fake EC2's 1,000 a page: the next page was followed. */
    assert_int_equal(r.n, 1007);
    aws_fx_close(&f);
}

/* Terminate finds the instance's region (known from its launch, or by
 * asking each region) and EC2 shuts it down; an unknown id is
 * EBB_ENOTFOUND after every region said so. */
static void test_terminate(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    struct ebb_launch req = launch_req("tok-term", EBB_MARKET_SPOT);
    req.region = "us-west-2";
    struct launch_res lr;
    launch(&f, &req, &lr);
    assert_int_equal(lr.status, 0);
    struct done_res d = {0};
    assert_int_equal(f.p->terminate(f.self, lr.id, on_done, &d), 0);
    assert_true(aws_fx_run(&f, &d.done, 30000));
    assert_int_equal(d.status, 0);
    assert_string_equal(fake_ec2_instance_state(f.ec2, lr.id), "shutting-down");
    memset(&d, 0, sizeof(d));
    assert_int_equal(f.p->terminate(f.self, "i-0000000000000dead", on_done, &d), 0);
    assert_true(aws_fx_run(&f, &d.done, 30000));
    assert_int_equal(d.status, EBB_ENOTFOUND);
    aws_fx_close(&f);
}

/* ---- gangs ---- */

static const char *const gang_tokens[] = {"enrol:tok+0.s0", "enrol:tok+1.s1",
                                          "enrol:tok+2.s2"};

static struct ebb_launch gang_req(const char *token, unsigned count)
{
    struct ebb_launch req = launch_req(token, EBB_MARKET_SPOT);
    req.count = count;
    req.agent_token = NULL;
    req.agent_tokens = gang_tokens;
    return req;
}

/* Every listed entry's id and state. */
struct gang_list {
    int done, status;
    size_t n;
    char id[8][160];
    enum ebb_instance_state state[8];
    int preempted[8];
};

static void on_gang_list(void *arg, int status, const struct ebb_instance *v, size_t n)
{
    struct gang_list *r = arg;
    r->done++;
    r->status = status;
    r->n = n;
    for (size_t i = 0; i < n && i < 8; i++) {
        snprintf(r->id[i], sizeof(r->id[i]), "%s", v[i].id);
        r->state[i] = v[i].state;
        r->preempted[i] = v[i].preempted;
    }
}

static void gang_list(struct aws_fx *f, struct gang_list *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(f->p->list_instances(f->self, on_gang_list, r), 0);
    assert_true(aws_fx_run(f, &r->done, 30000));
    assert_int_equal(r->status, 0);
}

/* Lists until placement group `name` is gone and the provider logged so
 * (its deletion runs beside the lists); fails after 50 lists. */
static void wait_group_gone(struct aws_fx *f, const char *name)
{
    char line[128];
    snprintf(line, sizeof(line), "placement group %s deleted", name);
    struct gang_list r;
    for (int i = 0; i < 50 && (fake_ec2_group_exists(f->ec2, "us-east-1", name) ||
                               f->log == NULL || strstr(f->log, line) == NULL);
         i++)
        gang_list(f, &r);
    assert_false(fake_ec2_group_exists(f->ec2, "us-east-1", name));
    assert_non_null(strstr(f->log, line));
}

/* A gang of 3: a cluster placement group named after the token, one
 * RunInstances of exactly 3 in it and in the offer's zone, one instance
 * whose id joins the members' in amiLaunchIndex order, each member's
 * agent token chosen at boot by its ami-launch-index. A repeated launch
 * gets the same gang; a reclaimed member is reported LOST with its rank
 * and left out of the list; terminate ends all three in one call, and the
 * group is deleted once they are terminated. */
static void test_gang_launch(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    assert_true(f.p->flags & EBB_PROVIDER_GANGS);
    struct ebb_launch req = gang_req("tok-gang", 3);
    struct launch_res r;
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(ebb_gang_size(r.id), 3);
    char member[3][32];
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(ebb_gang_member(r.id, k, member[k], sizeof(member[k])), 0);
        assert_int_equal(fake_ec2_launch_index(f.ec2, member[k]), (int)k);
    }
    assert_string_equal(r.token, "tok-gang");
    assert_string_equal(r.zone, "us-east-1b");
    assert_int_equal(r.in.state, EBB_INSTANCE_PENDING);
    assert_true(fake_ec2_group_exists(f.ec2, "us-east-1", "ebb-tok-gang"));
#define G(name) fake_ec2_last_param(f.ec2, "CreatePlacementGroup", name)
    assert_string_equal(G("GroupName"), "ebb-tok-gang");
    assert_string_equal(G("Strategy"), "cluster");
    assert_string_equal(G("TagSpecification.1.ResourceType"), "placement-group");
    assert_string_equal(G("TagSpecification.1.Tag.1.Value"), "j-20261130-0001");
    assert_string_equal(G("TagSpecification.1.Tag.2.Value"), "tok-gang");
#undef G
#define P(name) fake_ec2_last_param(f.ec2, "RunInstances", name)
    assert_string_equal(P("MinCount"), "3");
    assert_string_equal(P("MaxCount"), "3");
    assert_string_equal(P("Placement.GroupName"), "ebb-tok-gang");
    assert_string_equal(P("Placement.AvailabilityZone"), "us-east-1b");
    assert_string_equal(P("ClientToken"), "tok-gang");
    assert_string_equal(P("TagSpecification.1.Tag.2.Value"), "tok-gang");
    char *script = b64_decode(P("UserData"));
    assert_non_null(strstr(script, "X-aws-ec2-metadata-token-ttl-seconds"));
    assert_non_null(strstr(script, "\"$imds/meta-data/ami-launch-index\""));
    assert_non_null(strstr(script, "0) printf '%s' 'enrol:tok+0.s0' > /run/ebb/agent-token ;;\n"
                                   "1) printf '%s' 'enrol:tok+1.s1' > /run/ebb/agent-token ;;\n"
                                   "2) printf '%s' 'enrol:tok+2.s2' > /run/ebb/agent-token ;;\n"
                                   "*) echo"));
    /* Run as member 2 would: it writes its own token and starts the agent;
     * an index with no token stops the script before the agent. */
    int status;
    char *token = boot_script_run(script, "2", &status);
    assert_int_equal(status, 0);
    assert_string_equal(token, "enrol:tok+2.s2");
    free(token);
    assert_null(boot_script_run(script, "3", &status));
    assert_int_not_equal(status, 0);
    free(script);
#undef P

    /* The same launch again (a retry, or the core after a crash): the
     * group exists (Duplicate is fine), ClientToken gives the same gang. */
    char joined[160];
    snprintf(joined, sizeof(joined), "%s", r.id);
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, joined);
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.instances, 3);
    assert_int_equal(st.placement_groups, 1);

    struct gang_list l;
    gang_list(&f, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.id[0], joined);

    /* EC2 takes member 1: LOST with its rank, the gang listed short. */
    assert_int_equal(fake_ec2_reclaim(f.ec2, member[1]), 0);
    gang_list(&f, &l);
    assert_int_equal(l.n, 1);
    char short_id[160];
    snprintf(short_id, sizeof(short_id), "%s,%s", member[0], member[2]);
    assert_string_equal(l.id[0], short_id);
    assert_int_equal(l.preempted[0], 0);
    assert_int_equal(f.n_events, 1);
    assert_int_equal(f.events[0].kind, EBB_EVENT_LOST);
    assert_int_equal(f.events[0].rank, 1);
    assert_string_equal(f.event_ids[0], member[1]);

    /* Terminate: one call naming every member. */
    fake_ec2_stats(f.ec2, &st);
    uint64_t before = st.terminated;
    struct done_res d = {0};
    assert_int_equal(f.p->terminate(f.self, joined, on_done, &d), 0);
    assert_true(aws_fx_run(&f, &d.done, 30000));
    assert_int_equal(d.status, 0);
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.terminated - before, 3);
    assert_string_equal(fake_ec2_last_param(f.ec2, "TerminateInstances", "InstanceId.3"),
                        member[2]);
    for (size_t k = 0; k < 3; k++)
        assert_string_equal(fake_ec2_instance_state(f.ec2, member[k]), "shutting-down");
    /* Shutting down: EC2 refuses to delete the group in use, and it
     * stays until the members are terminated. */
    for (int i = 0; i < 50 && strstr(f.log, "InvalidPlacementGroup.InUse") == NULL; i++) {
        gang_list(&f, &l);
        assert_int_equal(l.state[0], EBB_INSTANCE_STOPPING);
        assert_string_equal(l.id[0], joined);
    }
    assert_non_null(strstr(f.log, "placement group ebb-tok-gang not deleted yet: "
                                  "InvalidPlacementGroup.InUse"));
    assert_true(fake_ec2_group_exists(f.ec2, "us-east-1", "ebb-tok-gang"));
    /* Terminated: the next lists delete it. */
    fake_ec2_settle(f.ec2);
    gang_list(&f, &l);
    assert_int_equal(l.state[0], EBB_INSTANCE_TERMINATED);
    wait_group_gone(&f, "ebb-tok-gang");
    aws_fx_close(&f);
}

/* All or nothing: capacity for 2 of a gang of 3 starts none, the launch
 * fails with EBB_ENOCAPACITY and its empty group is deleted; a gang with
 * a member EC2 forgot is still terminated; RunInstances
 * into a group that is not there fails; a gang without a token per
 * member, or of more than 64, is refused. */
static void test_gang_no_capacity(void **state)
{
    (void)state;
    env_creds(NULL);
    char yaml[1024];
    snprintf(yaml, sizeof(yaml), "%smax_attempts: 1\n", base_yaml);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, yaml), 0);
    fake_ec2_set_capacity(f.ec2, 2);
    struct ebb_launch req = gang_req("tok-short", 3);
    struct launch_res r;
    launch(&f, &req, &r);
    assert_int_equal(r.status, EBB_ENOCAPACITY);
    assert_non_null(strstr(f.log, "InsufficientInstanceCapacity"));
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.instances, 0);
    wait_group_gone(&f, "ebb-tok-short");
    /* Capacity for exactly 3 is enough. */
    fake_ec2_set_capacity(f.ec2, 3);
    req = gang_req("tok-fits", 3);
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(ebb_gang_size(r.id), 3);
    /* A member EC2 no longer knows fails a TerminateInstances naming it:
     * the others are terminated one by one. */
    char member[3][32];
    for (size_t k = 0; k < 3; k++)
        assert_int_equal(ebb_gang_member(r.id, k, member[k], sizeof(member[k])), 0);
    assert_int_equal(fake_ec2_forget(f.ec2, member[1]), 0);
    struct done_res d = {0};
    assert_int_equal(f.p->terminate(f.self, r.id, on_done, &d), 0);
    assert_true(aws_fx_run(&f, &d.done, 30000));
    assert_int_equal(d.status, 0);
    assert_string_equal(fake_ec2_instance_state(f.ec2, member[0]), "shutting-down");
    assert_string_equal(fake_ec2_instance_state(f.ec2, member[2]), "shutting-down");
    assert_non_null(strstr(f.log, "terminating them one by one"));

    /* A Duplicate is taken as the group being there; RunInstances into a
     * group that is not fails the launch (EC2's InvalidPlacementGroup.Unknown). */
    fake_ec2_fail(f.ec2, "CreatePlacementGroup", 1, 400, "InvalidPlacementGroup.Duplicate");
    req = gang_req("tok-nogroup", 2);
    launch(&f, &req, &r);
    assert_int_equal(r.status, EBB_EHTTP);
    assert_non_null(strstr(f.log, "RunInstances failed: InvalidPlacementGroup.Unknown"));

    req = gang_req("tok-bad", 3);
    req.agent_tokens = NULL;
    assert_int_equal(f.p->launch(f.self, &req, on_launch, &r), EBB_EINVAL);
    assert_non_null(strstr(f.log, "an agent token per member is missing"));
    req = gang_req("tok-bad", 65);
    assert_int_equal(f.p->launch(f.self, &req, on_launch, &r), EBB_EINVAL);
    /* 64 tokens of 300 bytes do not fit EC2's 16 KB of user data: refused
     * with the reason, before EC2 would. */
    static char long_tokens[64][301];
    const char *many[64];
    for (size_t i = 0; i < 64; i++) {
        memset(long_tokens[i], 'a' + (int)(i % 26), 300);
        many[i] = long_tokens[i];
    }
    req = gang_req("tok-big", 64);
    req.agent_tokens = many;
    assert_int_equal(f.p->launch(f.self, &req, on_launch, &r), EBB_EINVAL);
    assert_non_null(strstr(f.log, "with 64 agent tokens) is over EC2's 16384 bytes"));
    aws_fx_close(&f);
}

/* An answer that is no gang: too few instances, a repeated launch index,
 * an id holding ','. Each fails the launch with EBB_EPROTO and a log line
 * saying what was wrong, and everything the launch started, found by its
 * token's tag, is terminated. */
static void test_gang_bad_answers(void **state)
{
    (void)state;
    env_creds(NULL);
    static const struct {
        enum fake_ec2_answer lie;
        const char *token, *why;
    } cases[] = {
        {FAKE_EC2_ANSWER_SHORT, "tok-lie-short", "answered with 1 instances for 2 asked"},
        {FAKE_EC2_ANSWER_DUP_INDEX, "tok-lie-dup", "a repeated amiLaunchIndex 0"},
        {FAKE_EC2_ANSWER_COMMA_ID, "tok-lie-comma", "holds ','"},
    };
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    for (size_t c = 0; c < 3; c++) {
        struct fake_ec2_stats st;
        fake_ec2_stats(f.ec2, &st);
        uint64_t first = st.instances;
        fake_ec2_lie(f.ec2, cases[c].lie);
        struct ebb_launch req = gang_req(cases[c].token, 2);
        struct launch_res r;
        launch(&f, &req, &r);
        assert_int_equal(r.status, EBB_EPROTO);
        const char *line = strstr(f.log, cases[c].token);
        assert_non_null(line);
        assert_non_null(strstr(line, cases[c].why));
        assert_non_null(strstr(line, "terminating what it started"));
        /* The fake's ids are numbered: the two this launch started. */
        size_t running = 2;
        for (int i = 0; i < 50 && running > 0; i++) {
            struct gang_list l;
            gang_list(&f, &l);
            running = 0;
            for (uint64_t k = first + 1; k <= first + 2; k++) {
                char id[32];
                snprintf(id, sizeof(id), "i-%017llx", (unsigned long long)(0xebb000 + k));
                running += strcmp(fake_ec2_instance_state(f.ec2, id), "pending") == 0;
            }
        }
        assert_int_equal(running, 0);
    }
    /* DescribeInstances naming an instance with ',' (no EC2 id): listed,
     * it would read as a gang; it is left out, and said so. */
    struct ebb_launch req = launch_req("tok-comma-list", EBB_MARKET_SPOT);
    struct launch_res r;
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(fake_ec2_set_id(f.ec2, r.id, "i-1,i-2"), 0);
    struct gang_list l;
    gang_list(&f, &l);
    assert_int_equal(l.n, 3); /* the three gangs above, terminated */
    for (size_t i = 0; i < l.n; i++)
        assert_null(strstr(l.id[i], "i-1,i-2"));
    assert_non_null(strstr(f.log, "lists instance \"i-1,i-2\", which is no EC2 id"));
    aws_fx_close(&f);
}

/* A replacement member's launch: one instance at `rank` of gang `gang`. */
static struct ebb_launch join_req(const char *token, const char *gang, unsigned rank,
                                  const char *agent_token)
{
    struct ebb_launch req = launch_req(token, EBB_MARKET_SPOT);
    req.agent_token = agent_token;
    req.join_gang = gang;
    req.join_rank = rank;
    return req;
}

/* A join the provider accepts but EC2's answer refuses: EBB_EINVAL, and
 * the log line says why. No instance is started. */
static void join_refused(struct aws_fx *f, const struct ebb_launch *req, const char *why)
{
    struct fake_ec2_stats st;
    fake_ec2_stats(f->ec2, &st);
    uint64_t before = st.instances;
    struct launch_res r;
    launch(f, req, &r);
    assert_int_equal(r.status, EBB_EINVAL);
    char line[256];
    snprintf(line, sizeof(line), "join of rank %u into gang %s refused: %s",
             req->join_rank, req->join_gang, why);
    assert_non_null(strstr(f->log, line));
    fake_ec2_stats(f->ec2, &st);
    assert_int_equal(st.instances, before);
}

/* gang.restart: replace_lost. EC2 reclaims member 1 of a gang of 3; a
 * join at rank 1 starts one instance in the gang's placement group and
 * zone, tagged ebb:rank=1 (its amiLaunchIndex is 0), its user data
 * holding its own agent token only, with a ClientToken of the token,
 * the rank and the lost member: a retried join answers the same
 * instance, the next replacement of that rank another. The list shows
 * the gang whole with the newcomer at rank 1; terminate ends every
 * member. Joins into a rank whose member runs, out of the gang's ranks,
 * into another zone or into a gang EC2 does not run are refused. */
static void test_gang_join(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    assert_true(f.p->flags & EBB_PROVIDER_GANG_REPLACE);
    struct ebb_launch req = gang_req("tok-join", 3);
    struct launch_res r;
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    char gang[160], member[3][32];
    snprintf(gang, sizeof(gang), "%s", r.id);
    for (size_t k = 0; k < 3; k++)
        assert_int_equal(ebb_gang_member(gang, k, member[k], sizeof(member[k])), 0);
    assert_int_equal(fake_ec2_reclaim(f.ec2, member[1]), 0);
    struct gang_list l;
    gang_list(&f, &l);
    assert_int_equal(f.n_events, 1);
    assert_int_equal(f.events[0].rank, 1);
    /* ebbd releases the lost member alone: the others run on. */
    struct done_res d = {0};
    assert_int_equal(f.p->terminate(f.self, member[1], on_done, &d), 0);
    assert_true(aws_fx_run(&f, &d.done, 30000));
    assert_int_equal(d.status, 0);
    assert_string_equal(fake_ec2_last_param(f.ec2, "TerminateInstances", "InstanceId.1"),
                        member[1]);
    assert_null(fake_ec2_last_param(f.ec2, "TerminateInstances", "InstanceId.2"));
    assert_string_equal(fake_ec2_instance_state(f.ec2, member[0]), "pending");

    struct ebb_launch join = join_req("tok-join", gang, 1, "enrol:tok-join+1.new");
    launch(&f, &join, &r);
    assert_int_equal(r.status, 0);
    char fresh[160];
    snprintf(fresh, sizeof(fresh), "%s", r.id);
    assert_int_equal(ebb_gang_size(fresh), 1);
    for (size_t k = 0; k < 3; k++)
        assert_string_not_equal(fresh, member[k]);
    assert_string_equal(r.token, "tok-join");
    assert_int_equal(fake_ec2_launch_index(f.ec2, fresh), 0);
#define P(name) fake_ec2_last_param(f.ec2, "RunInstances", name)
    assert_string_equal(P("MinCount"), "1");
    assert_string_equal(P("MaxCount"), "1");
    assert_string_equal(P("Placement.GroupName"), "ebb-tok-join");
    assert_string_equal(P("Placement.AvailabilityZone"), "us-east-1b");
    assert_string_equal(P("TagSpecification.1.Tag.2.Value"), "tok-join");
    assert_string_equal(P("TagSpecification.1.Tag.3.Key"), "ebb:rank");
    assert_string_equal(P("TagSpecification.1.Tag.3.Value"), "1");
    char client_token[80];
    snprintf(client_token, sizeof(client_token), "%s", P("ClientToken"));
    assert_int_equal(strlen(client_token), 64);
    assert_int_equal(strncmp(client_token, "ebb-join-1-", 11), 0);
    char *script = b64_decode(P("UserData"));
    assert_null(strstr(script, "ami-launch-index"));
    int status;
    char *token = boot_script_run(script, "0", &status);
    assert_int_equal(status, 0);
    assert_string_equal(token, "enrol:tok-join+1.new");
    free(token);
    free(script);
#undef P
    /* The gang whole again, the newcomer at rank 1. */
    char whole[400];
    snprintf(whole, sizeof(whole), "%s,%s,%s", member[0], fresh, member[2]);
    gang_list(&f, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.id[0], whole);

    /* The same join again (its answer lost): the same instance. */
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    uint64_t started = st.instances;
    launch(&f, &join, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.id, fresh);
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.instances, started);
    /* Retried with another agent token, it is no retry to EC2: the
     * ClientToken with other parameters is refused. */
    struct ebb_launch other = join;
    other.agent_token = "enrol:tok-join+1.other";
    launch(&f, &other, &r);
    assert_int_equal(r.status, EBB_EHTTP);
    assert_non_null(strstr(f.log, "RunInstances failed: IdempotentParameterMismatch"));

    /* Refused: a rank whose member runs (an original one, and the
     * newcomer for a join naming the member it replaced), another zone, a
     * gang EC2 does not run; out of range and more than one member at
     * once, before EC2 is asked. */
    char why[256];
    struct ebb_launch bad = join_req("tok-join", gang, 0, "enrol:tok-join+0.x");
    snprintf(why, sizeof(why), "its member %s still runs", member[0]);
    join_refused(&f, &bad, why);
    bad = join_req("tok-join", whole, 1, "enrol:tok-join+1.x");
    snprintf(why, sizeof(why), "its member %s still runs", fresh);
    join_refused(&f, &bad, why);
    assert_int_equal(fake_ec2_reclaim(f.ec2, member[2]), 0);
    bad = join_req("tok-join", whole, 2, "enrol:tok-join+2.x");
    bad.zone = "us-east-1c";
    join_refused(&f, &bad, "the gang runs in us-east-1b, not us-east-1c");
    bad = join_req("tok-nobody", "i-00000000000000aaa,i-00000000000000bbb", 1,
                   "enrol:tok-nobody+1.x");
    join_refused(&f, &bad, "no other member of it runs");
    bad = join_req("tok-join", gang, 3, "enrol:tok-join+3.x");
    assert_int_equal(f.p->launch(f.self, &bad, on_launch, &r), EBB_EINVAL);
    assert_non_null(strstr(f.log, "refused: the gang's ranks are 0 to 2"));
    bad = join_req("tok-join", gang, 1, "enrol:tok-join+1.x");
    bad.count = 2;
    bad.agent_tokens = gang_tokens;
    assert_int_equal(f.p->launch(f.self, &bad, on_launch, &r), EBB_EINVAL);
    assert_non_null(strstr(f.log, "refused: a join starts one member, not 2"));
    bad = join_req("tok-join", member[0], 1, "enrol:tok-join+1.x");
    assert_int_equal(f.p->launch(f.self, &bad, on_launch, &r), EBB_EINVAL);
    assert_non_null(strstr(f.log, "refused: it is no gang of 2 to 64 members"));

    /* The newcomer reclaimed in its turn: the next join at rank 1 (naming
     * it) is another instance, and the list shows that one. */
    assert_int_equal(fake_ec2_reclaim(f.ec2, fresh), 0);
    join = join_req("tok-join", whole, 1, "enrol:tok-join+1.newer");
    launch(&f, &join, &r);
    assert_int_equal(r.status, 0);
    assert_string_not_equal(r.id, fresh);
    assert_string_not_equal(fake_ec2_last_param(f.ec2, "RunInstances", "ClientToken"),
                            client_token);
    char newer[160];
    snprintf(newer, sizeof(newer), "%s", r.id);
    gang_list(&f, &l);
    char now_id[200];
    snprintf(now_id, sizeof(now_id), "%s,%s", member[0], newer);
    assert_string_equal(l.id[0], now_id);

    /* Terminate of the gang as ebbd holds it ends every member. */
    snprintf(whole, sizeof(whole), "%s,%s,%s", member[0], newer, member[2]);
    memset(&d, 0, sizeof(d));
    assert_int_equal(f.p->terminate(f.self, whole, on_done, &d), 0);
    assert_true(aws_fx_run(&f, &d.done, 30000));
    assert_int_equal(d.status, 0);
    assert_string_equal(fake_ec2_instance_state(f.ec2, member[0]), "shutting-down");
    assert_string_equal(fake_ec2_instance_state(f.ec2, newer), "shutting-down");
    fake_ec2_settle(f.ec2);
    gang_list(&f, &l);
    assert_int_equal(l.state[0], EBB_INSTANCE_TERMINATED);
    /* Every member gone: each rank's last, once. */
    assert_string_equal(l.id[0], whole);
    aws_fx_close(&f);
}

/* A join whose RunInstances answer is no instance of its own (an id
 * holding ','): the launch fails, and what it started is found by its
 * ClientToken and terminated; the gang runs on. */
static void test_gang_join_bad_answer(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    struct ebb_launch req = gang_req("tok-joinlie", 2);
    struct launch_res r;
    launch(&f, &req, &r);
    assert_int_equal(r.status, 0);
    char gang[160], member[2][32];
    snprintf(gang, sizeof(gang), "%s", r.id);
    for (size_t k = 0; k < 2; k++)
        assert_int_equal(ebb_gang_member(gang, k, member[k], sizeof(member[k])), 0);
    assert_int_equal(fake_ec2_reclaim(f.ec2, member[1]), 0);
    fake_ec2_lie(f.ec2, FAKE_EC2_ANSWER_COMMA_ID);
    struct ebb_launch join = join_req("tok-joinlie", gang, 1, "enrol:tok-joinlie+1.n");
    launch(&f, &join, &r);
    assert_int_equal(r.status, EBB_EPROTO);
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    char fresh[32];
    snprintf(fresh, sizeof(fresh), "i-%017llx", (unsigned long long)(0xebb000 + st.instances));
    for (int i = 0; i < 50 && strcmp(fake_ec2_instance_state(f.ec2, fresh), "pending") == 0;
         i++) {
        struct gang_list l;
        gang_list(&f, &l);
    }
    assert_string_equal(fake_ec2_instance_state(f.ec2, fresh), "shutting-down");
    assert_string_equal(fake_ec2_instance_state(f.ec2, member[0]), "pending");
    aws_fx_close(&f);
}

/* ---- credentials and secrets ---- */

static char *temp_credentials(const char *text)
{
    char *path = strdup("/tmp/ebb-aws-creds-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

/* A named profile of a credentials file, with a session token, signs
 * requests fake EC2 accepts; a profile without keys is a clear error and
 * the provider answers EBB_EAUTH without calling EC2. */
static void test_profile_credentials(void **state)
{
    (void)state;
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_SESSION_TOKEN");
    char text[1024];
    snprintf(text, sizeof(text),
             "# test credentials\n[default]\naws_access_key_id = AKIDWRONG\n"
             "aws_secret_access_key = wrong\n\n[ebb]\n"
             "aws_access_key_id = %s\naws_secret_access_key=%s\n"
             "aws_session_token = %s\n[empty]\nregion = us-east-1\n",
             FX_AKID, FX_SECRET, FX_TOKEN);
    char *path = temp_credentials(text);
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    setenv("AWS_PROFILE", "ebb", 1);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, FX_TOKEN, base_yaml), 0);
    assert_non_null(strstr(f.log, "profile \"ebb\""));
    recent_prices(&f, 50);
    struct poll_res r;
    poll_once(&f, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.n, 100);
    aws_fx_close(&f);

    setenv("AWS_PROFILE", "empty", 1);
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    assert_non_null(strstr(f.log, "no AWS credentials in profile \"empty\""));
    assert_int_equal(f.p->poll_prices(f.self, on_prices, &r), EBB_EAUTH);
    struct fake_ec2_stats st;
    fake_ec2_stats(f.ec2, &st);
    assert_int_equal(st.calls + st.auth_failures, 0);
    aws_fx_close(&f);
    unlink(path);
    free(path);

    /* Without AWS_SHARED_CREDENTIALS_FILE: ~/.aws/credentials, profile
     * "default" when AWS_PROFILE is unset. */
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    unsetenv("AWS_PROFILE");
    char home[] = "/tmp/ebb-aws-home-XXXXXX", aws_dir[64], file[96];
    assert_non_null(mkdtemp(home));
    snprintf(aws_dir, sizeof(aws_dir), "%s/.aws", home);
    snprintf(file, sizeof(file), "%s/credentials", aws_dir);
    assert_int_equal(mkdir(aws_dir, 0700), 0);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fprintf(fp, "[default]\naws_access_key_id=%s\naws_secret_access_key=%s\n",
            FX_AKID, FX_SECRET);
    fclose(fp);
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", home, 1);
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    char want[128];
    snprintf(want, sizeof(want), "profile \"default\" in %s", file);
    assert_non_null(strstr(f.log, want));
    recent_prices(&f, 10);
    poll_once(&f, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.n, 20);
    aws_fx_close(&f);
    if (old_home != NULL)
        setenv("HOME", old_home, 1);
    free(old_home);
    unlink(file);
    rmdir(aws_dir);
    rmdir(home);
}

/* Environment credentials with a session token: the token is sent and
 * signed (fake EC2 insists). Half the pair set is a clear error. */
static void test_env_credentials(void **state)
{
    (void)state;
    env_creds(FX_TOKEN);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, FX_TOKEN, base_yaml), 0);
    assert_non_null(strstr(f.log, "credentials from environment"));
    recent_prices(&f, 50);
    struct poll_res r;
    poll_once(&f, &r);
    assert_int_equal(r.status, 0);
    aws_fx_close(&f);

    /* The fake wants a token the provider does not have: refused. */
    env_creds(NULL);
    assert_int_equal(aws_fx_open(&f, FX_SECRET, FX_TOKEN, base_yaml), 0);
    poll_once(&f, &r);
    assert_int_equal(r.status, EBB_EAUTH);
    aws_fx_close(&f);

    unsetenv("AWS_SECRET_ACCESS_KEY");
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    assert_non_null(strstr(f.log, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"));
    aws_fx_close(&f);
}

static void assert_no_secret(const char *what, const char *text)
{
    static const char *const secrets[] = {FX_SECRET, FX_TOKEN,
                                          "s3cr3t", "sessionTOKEN"};
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        if (text != NULL && strstr(text, secrets[i]) != NULL)
            fail_msg("%s contains a secret (%s)", what, secrets[i]);
}

struct store_res {
    int done, status;
    struct ebb__store *store;
    size_t inserted;
};

static void on_prices_store(void *arg, int status, const struct ebb_price *p,
                            size_t n)
{
    struct store_res *r = arg;
    r->done = 1;
    r->status = status;
    if (status == 0)
        r->status = ebb__store_put_prices(r->store, "aws", p, n, &r->inserted);
}

/* The bytes of a file, NUL-terminated (binary: search with memmem). */
static char *file_bytes(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        *len = 0;
        return NULL;
    }
    fseek(fp, 0, SEEK_END);
    *len = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *b = malloc(*len + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, *len, fp), *len);
    b[*len] = '\0';
    fclose(fp);
    return b;
}

static void assert_file_has_no_secret(const char *path)
{
    static const char *const secrets[] = {FX_SECRET, FX_TOKEN};
    size_t len;
    char *b = file_bytes(path, &len);
    for (size_t i = 0; b != NULL && i < 2; i++)
        if (memmem(b, len, secrets[i], strlen(secrets[i])) != NULL)
            fail_msg("%s contains a secret", path);
    free(b);
}

/* Every log line of a session that polls, launches, lists, terminates and
 * meets auth, throttling, capacity and malformed-answer errors holds no
 * secret, nor do the error strings, nor `ebb providers describe aws`. */
static void test_secrets_never_shown(void **state)
{
    (void)state;
    env_creds(FX_TOKEN);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, FX_TOKEN, base_yaml), 0);
    recent_prices(&f, 2000);
    /* The poll's prices go to a database, whose file is searched too. */
    char dir[] = "/tmp/ebb-aws-db-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], wal[300];
    snprintf(db, sizeof(db), "%s/ebb.db", dir);
    snprintf(wal, sizeof(wal), "%s-wal", db);
    struct store_res sr = {0};
    char err[256];
    assert_int_equal(ebb__store_open(db, &sr.store, err, sizeof(err)), 0);
    assert_int_equal(f.p->poll_prices(f.self, on_prices_store, &sr), 0);
    assert_true(aws_fx_run(&f, &sr.done, 60000));
    assert_int_equal(sr.status, 0);
    assert_int_equal(sr.inserted, 4000);
    ebb__store_close(sr.store);
    assert_file_has_no_secret(db);
    assert_file_has_no_secret(wal);
    unlink(wal);
    unlink(db);
    snprintf(wal, sizeof(wal), "%s-shm", db);
    unlink(wal);
    rmdir(dir);
    struct poll_res r;
    fake_ec2_malform_page(f.ec2, 1);
    poll_once(&f, &r);
    fake_ec2_fail(f.ec2, NULL, 4, 503, "RequestLimitExceeded");
    poll_once(&f, &r);
    struct ebb_launch req = launch_req("tok-secret", EBB_MARKET_SPOT);
    struct launch_res lr;
    fake_ec2_fail(f.ec2, "RunInstances", 1, 400, "SpotMaxPriceTooLow");
    launch(&f, &req, &lr);
    launch(&f, &req, &lr);
    struct list_res l;
    list(&f, &l);
    fake_ec2_fail(f.ec2, NULL, 1, 403, "AuthFailure");
    poll_once(&f, &r);
    assert_int_equal(r.status, EBB_EAUTH);
    assert_no_secret("the log", f.log);
    aws_fx_close(&f);

    /* A refused signature too. */
    assert_int_equal(aws_fx_open(&f, "another", FX_TOKEN, base_yaml), 0);
    poll_once(&f, &r);
    assert_no_secret("the log", f.log);
    aws_fx_close(&f);

    for (int code = 0; code >= -20; code--)
        assert_no_secret("an error string", ebb_strerror(code));

    const char *build = getenv("EBB_BUILD_ROOT");
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "%s/src/ebb providers describe aws 2>&1; "
             "%s/src/ebb providers describe aws --json 2>&1",
             build ? build : ".", build ? build : ".");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[65536];
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_non_null(strstr(out, "poll_interval"));
    assert_no_secret("ebb providers describe aws", out);
}

/* Configuration mistakes are refused at create with a message. */
static void test_config_errors(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    char yaml[1024];
    snprintf(yaml, sizeof(yaml), "%s%s", "ami: [eu-west-9=ami-1]\n", "endpoint: @URL\n");
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, yaml), EBB_ECONFIG);
    assert_non_null(strstr(f.log, "providers.aws.ami: \"eu-west-9=ami-1\" names region"));
    aws_fx_close(&f);
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, "regions: []\n"), EBB_ECONFIG);
    assert_non_null(strstr(f.log, "regions: list at least one region"));
    aws_fx_close(&f);
    /* A region without an AMI cannot launch: a clear error, no call. */
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL,
                                 "regions: [us-east-1]\nendpoint: @URL\n"), 0);
    struct ebb_launch req = launch_req("tok-noami", EBB_MARKET_SPOT);
    struct launch_res lr;
    assert_int_equal(f.p->launch(f.self, &req, on_launch, &lr), EBB_ECONFIG);
    assert_non_null(strstr(f.log, "us-east-1: no AMI configured"));
    aws_fx_close(&f);
}

/* Destroying the provider with a poll and a launch in flight completes
 * both with EBB_ECANCELED. */
static void test_destroy_cancels(void **state)
{
    (void)state;
    env_creds(NULL);
    struct aws_fx f;
    assert_int_equal(aws_fx_open(&f, FX_SECRET, NULL, base_yaml), 0);
    fake_ec2_hang(f.ec2, NULL, 2, 5000);
    struct poll_res r = {0};
    struct launch_res lr = {0};
    assert_int_equal(f.p->poll_prices(f.self, on_prices, &r), 0);
    struct ebb_launch req = launch_req("tok-cancel", EBB_MARKET_SPOT);
    assert_int_equal(f.p->launch(f.self, &req, on_launch, &lr), 0);
    int never = 0;
    aws_fx_run(&f, &never, 100);
    f.p->destroy(f.self);
    f.self = NULL;
    assert_int_equal(r.done, 1);
    assert_int_equal(r.status, EBB_ECANCELED);
    assert_int_equal(lr.done, 1);
    assert_int_equal(lr.status, EBB_ECANCELED);
    aws_fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poll_pages),
        cmocka_unit_test(test_poll_start_time),
        cmocka_unit_test(test_poll_new_type_reads_history),
        cmocka_unit_test(test_poll_malformed_page),
        cmocka_unit_test(test_poll_throttled),
        cmocka_unit_test(test_poll_throttled_400),
        cmocka_unit_test(test_poll_timeout),
        cmocka_unit_test(test_poll_auth_failure),
        cmocka_unit_test(test_unauthorized_operation),
        cmocka_unit_test(test_poll_timer),
        cmocka_unit_test(test_launch_spot),
        cmocka_unit_test(test_launch_retry_after_timeout),
        cmocka_unit_test(test_launch_no_capacity),
        cmocka_unit_test(test_spot_reclaim),
        cmocka_unit_test(test_list_pages),
        cmocka_unit_test(test_terminate),
        cmocka_unit_test(test_gang_launch),
        cmocka_unit_test(test_gang_no_capacity),
        cmocka_unit_test(test_gang_bad_answers),
        cmocka_unit_test(test_gang_join),
        cmocka_unit_test(test_gang_join_bad_answer),
        cmocka_unit_test(test_profile_credentials),
        cmocka_unit_test(test_env_credentials),
        cmocka_unit_test(test_secrets_never_shown),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_destroy_cancels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
