/* Checkpoint stores' prices (src/market/store_prices.c): the shipped
 * data/store_prices.csv, the rates a store charges (its own settings over
 * the defaults by cloud and region), the exact storage fee of bytes held
 * for a time, the egress rule (free in the store's region, priced across
 * regions and clouds, never for file://), and the file's errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebb/units.h>

#include "market/store_prices.h"

#define GIB ((int64_t)1 << 30)

static struct ebb__store_prices *shipped(void)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/data/store_prices.csv", root ? root : ".");
    struct ebb__store_prices *p = NULL;
    struct ebb_diag d = {{0}};
    if (ebb__store_prices_load(path, &p, &d) != 0)
        fail_msg("%s", d.msg);
    return p;
}

static struct ebb__store_cfg store(enum ebb__objstore_kind kind, const char *region)
{
    return (struct ebb__store_cfg){
        .name = "ckpt", .kind = kind, .region = (char *)region,
        .url = kind == EBB__OBJSTORE_FILE ? "file:///srv/ckpt"
               : kind == EBB__OBJSTORE_OSS ? "oss://b/p" : "s3://b/p",
    };
}

static void shipped_defaults(void **state)
{
    (void)state;
    struct ebb__store_prices *p = shipped();
    struct ebb__store_cfg s3 = store(EBB__OBJSTORE_S3, "us-east-1");
    struct ebb__store_rates r;
    ebb__store_rates(p, &s3, &r);
    assert_string_equal(r.storage_currency, "USD");
    assert_int_equal(r.storage, 23000);      /* 0.023 USD per GB-month */
    assert_int_equal(r.hours_per_month, 730);
    assert_int_equal(r.egress_region, 20000); /* 0.02 USD per GB */
    assert_int_equal(r.egress_cloud, 90000);  /* 0.09 USD per GB */

    struct ebb__store_cfg oss = store(EBB__OBJSTORE_OSS, "cn-hangzhou");
    ebb__store_rates(p, &oss, &r);
    assert_int_equal(r.storage, 17300);
    assert_int_equal(r.hours_per_month, 720);
    assert_true(r.egress_cloud > 0);
    for (size_t i = 0; i < p->n_row; i++)
        assert_true(strstr(p->row[i].source, "https://") != NULL);

    /* A region the file has no row for, or an S3-compatible server at an
     * endpoint of its own: no default, billed nothing unless it says. */
    struct ebb__store_cfg other = store(EBB__OBJSTORE_S3, "eu-west-1");
    ebb__store_rates(p, &other, &r);
    assert_int_equal(r.storage, 0);
    assert_int_equal(r.egress_cloud, 0);
    struct ebb__store_cfg minio = store(EBB__OBJSTORE_S3, "us-east-1");
    minio.endpoint = "http://127.0.0.1:9000";
    assert_null(ebb__store_cloud(&minio));
    ebb__store_rates(p, &minio, &r);
    assert_int_equal(r.storage, 0);
    ebb__store_prices_free(p);
}

static void own_settings_win(void **state)
{
    (void)state;
    struct ebb__store_prices *p = shipped();
    struct ebb__store_cfg s3 = store(EBB__OBJSTORE_S3, "us-east-1");
    s3.has_price = 1;
    s3.price_per_gb_month = (struct ebb_money){125000, "EUR"};
    s3.has_egress = 1;
    s3.egress_per_gb = (struct ebb_money){50000, "EUR"};
    struct ebb__store_rates r;
    ebb__store_rates(p, &s3, &r);
    assert_int_equal(r.storage, 125000);
    assert_string_equal(r.storage_currency, "EUR");
    assert_int_equal(r.egress_region, 50000);
    assert_int_equal(r.egress_cloud, 50000);
    assert_string_equal(r.egress_currency, "EUR");

    /* file:// moves nothing across a network, whatever it says. */
    struct ebb__store_cfg file = store(EBB__OBJSTORE_FILE, NULL);
    file.has_price = 1;
    file.price_per_gb_month = (struct ebb_money){10000, "USD"};
    file.has_egress = 1;
    file.egress_per_gb = (struct ebb_money){50000, "USD"};
    ebb__store_rates(NULL, &file, &r);
    assert_int_equal(r.storage, 10000);
    assert_int_equal(r.hours_per_month, EBB__HOURS_PER_MONTH);
    assert_int_equal(r.egress_cloud, 0);
    assert_int_equal(ebb__store_egress_cost(&file, &r, "aws", "us-east-1", GIB), 0);
    ebb__store_prices_free(p);
}

static void storage_cost_exact(void **state)
{
    (void)state;
    struct ebb__store_rates r = {.storage = 23000, .hours_per_month = 730};
    /* 1 GiB for a whole month: the price. */
    assert_int_equal(ebb__store_storage_cost(&r, GIB, 730 * EBB_MS_PER_HOUR), 23000);
    /* 10 GiB for an hour: 230000 / 730 = 315.07 micro-USD, rounded up. */
    assert_int_equal(ebb__store_storage_cost(&r, 10 * GIB, EBB_MS_PER_HOUR), 316);
    /* 1.5 GiB for a day: 1.5 x 24 x 23000 / 730 = 1134.25 -> 1135. */
    assert_int_equal(ebb__store_storage_cost(&r, 3 * GIB / 2, 24 * EBB_MS_PER_HOUR),
                     1135);
    /* 730 GiB for 1 ms: 730 x 23000 / (730 x 3600000) = 0.0064 -> 1. */
    assert_int_equal(ebb__store_storage_cost(&r, 730 * GIB, 1), 1);
    assert_int_equal(ebb__store_storage_cost(&r, 0, EBB_MS_PER_HOUR), 0);
    assert_int_equal(ebb__store_storage_cost(&r, GIB, 0), 0);
    /* OSS turns a month into 720 hours. */
    struct ebb__store_rates oss = {.storage = 17300, .hours_per_month = 720};
    assert_int_equal(ebb__store_storage_cost(&oss, GIB, 720 * EBB_MS_PER_HOUR), 17300);
    /* Huge figures saturate instead of wrapping. */
    struct ebb__store_rates dear = {.storage = INT64_MAX / 2, .hours_per_month = 1};
    assert_true(ebb__store_storage_cost(&dear, INT64_MAX / 2, INT64_MAX / 2) ==
                INT64_MAX);
}

static void egress_rule(void **state)
{
    (void)state;
    struct ebb__store_prices *p = shipped();
    struct ebb__store_cfg s3 = store(EBB__OBJSTORE_S3, "us-east-1");
    struct ebb__store_rates r;
    ebb__store_rates(p, &s3, &r);
    /* Same cloud, same region: free. */
    assert_int_equal(ebb__store_egress_cost(&s3, &r, "aws", "us-east-1", 2 * GIB), 0);
    /* Another AWS region: 0.02 per GB. */
    assert_int_equal(ebb__store_egress_cost(&s3, &r, "aws", "us-west-2", 2 * GIB), 40000);
    /* Another cloud, or a machine outside any: the internet rate. */
    assert_int_equal(ebb__store_egress_cost(&s3, &r, "alibaba", "us-east-1", 2 * GIB),
                     180000);
    assert_int_equal(ebb__store_egress_cost(&s3, &r, "vastai", "", 2 * GIB), 180000);
    /* A byte costs a micro-unit at least (rounded up). */
    assert_int_equal(ebb__store_egress_cost(&s3, &r, "local", "local", 1), 1);
    assert_int_equal(ebb__store_egress_cost(&s3, &r, "local", "local", 0), 0);

    struct ebb__store_cfg oss = store(EBB__OBJSTORE_OSS, "cn-hangzhou");
    ebb__store_rates(p, &oss, &r);
    assert_int_equal(ebb__store_egress_cost(&oss, &r, "alibaba", "cn-hangzhou", GIB), 0);
    assert_int_equal(ebb__store_egress_cost(&oss, &r, "alibaba", "cn-beijing", GIB),
                     r.egress_region);
    assert_int_equal(ebb__store_egress_cost(&oss, &r, "aws", "us-east-1", GIB),
                     r.egress_cloud);
    ebb__store_prices_free(p);
}

static void file_errors(void **state)
{
    (void)state;
    static const char header[] = "cloud,region,storage_usd_per_gb_month,"
        "hours_per_month,egress_internet_usd_per_gb,egress_region_usd_per_gb,source\n";
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"cloud,region\n", "store_prices.csv:1: a store price file starts with"},
        {"aws,us-east-1,0.023,730,0.09,0.02,x\naws,us-east-1,0.02,730,0.09,0.02,y\n",
         "store_prices.csv:3: aws us-east-1 has a row already (line 2)"},
        {"aws,us-east-1,-1,730,0.09,0.02,x\n",
         "store_prices.csv:2: storage_usd_per_gb_month:"},
        {"aws,us-east-1,0.023,0,0.09,0.02,x\n",
         "store_prices.csv:2: hours_per_month: expected a whole number"},
        {"aws,,0.023,730,0.09,0.02,x\n", "store_prices.csv:2: region is empty"},
        {"aws,us-east-1,0.023,730,0.09\n", "store_prices.csv:2: 5 fields, expected 7"},
    };
    const char *base = getenv("TMPDIR");
    char dir[PATH_MAX], old[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/ebb-test-store-prices-XXXXXX", base ? base : "/tmp");
    assert_non_null(getcwd(old, sizeof(old)));
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chdir(dir), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        FILE *f = fopen("store_prices.csv", "w");
        assert_non_null(f);
        if (strncmp(cases[i].body, "cloud,", 6) != 0)
            fputs(header, f);
        fputs(cases[i].body, f);
        fclose(f);
        struct ebb__store_prices *p = NULL;
        struct ebb_diag d = {{0}};
        assert_int_equal(ebb__store_prices_load("store_prices.csv", &p, &d), EBB_EINVAL);
        assert_null(p);
        if (strstr(d.msg, cases[i].want) == NULL)
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, d.msg, cases[i].want);
    }
    unlink("store_prices.csv");
    assert_int_equal(chdir(old), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shipped_defaults),
        cmocka_unit_test(own_settings_win),
        cmocka_unit_test(storage_cost_exact),
        cmocka_unit_test(egress_rule),
        cmocka_unit_test(file_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
