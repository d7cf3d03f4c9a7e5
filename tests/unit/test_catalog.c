/* The instance catalog (src/market/catalog.c): lookups with region fallback, the
 * optional speed, source and network_gbps columns, every error message, and the shipped
 * data/catalog.csv against the shipped price traces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebb/trace.h>

#include "market/catalog.h"

static char tmpdir[PATH_MAX];
static char olddir[PATH_MAX];

/* errors() writes catalog.csv into a fresh temporary directory, the
 * working directory while the tests run, so that messages name it as
 * "catalog.csv". */
static int setup(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof(tmpdir), "%s/ebb-test-catalog-XXXXXX",
             base ? base : "/tmp");
    bool ok = getcwd(olddir, sizeof(olddir)) != NULL && mkdtemp(tmpdir) != NULL;
    return ok && chdir(tmpdir) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    unlink("catalog.csv");
    if (chdir(olddir) != 0)
        return -1;
    return rmdir(tmpdir);
}

static const char *src_path(const char *rel, char *buf, size_t size)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    snprintf(buf, size, "%s/%s", root ? root : ".", rel);
    return buf;
}

static struct ebb__catalog *load_ok(const char *rel)
{
    char path[PATH_MAX];
    struct ebb__catalog *c = NULL;
    struct ebb_diag d = {{0}};
    if (ebb__catalog_load(src_path(rel, path, sizeof(path)), &c, &d) != 0)
        fail_msg("%s", d.msg);
    return c;
}

static void lookup_and_fallback(void **state)
{
    (void)state;
    struct ebb__catalog *c = load_ok("tests/data/traces/catalog_good.csv");
    assert_int_equal(c->n_entry, 5);

    const struct ebb__catalog_entry *e =
        ebb__catalog_find(c, "aws", "us-east-1", "p3.2xlarge");
    assert_non_null(e);
    assert_string_equal(e->region, "us-east-1");
    assert_int_equal(e->on_demand, 3060000);
    assert_int_equal(e->gpus, 1);
    assert_string_equal(e->gpu_model, "V100");
    assert_int_equal(e->vcpus, 8);
    assert_true(e->memory_gb == 61.0);
    assert_true(e->speed == 1.0);
    assert_string_equal(e->source, "AWS price list, 2020");
    assert_int_equal(e->line, 2);

    e = ebb__catalog_find(c, "aws", "eu-west-1", "p3.2xlarge");
    assert_non_null(e);
    assert_int_equal(e->on_demand, 3305000);

    /* No row for us-west-2: the row with an empty region applies; its
     * empty speed field means 1.0. */
    e = ebb__catalog_find(c, "aws", "us-west-2", "p3.2xlarge");
    assert_non_null(e);
    assert_string_equal(e->region, "");
    assert_int_equal(e->on_demand, 3500000);
    assert_true(e->speed == 1.0);
    assert_ptr_equal(ebb__catalog_find(c, "aws", NULL, "p3.2xlarge"), e);
    assert_ptr_equal(ebb__catalog_find(c, "aws", "", "p3.2xlarge"), e);

    /* No fallback row for p2.xlarge. */
    e = ebb__catalog_find(c, "aws", "us-east-1", "p2.xlarge");
    assert_non_null(e);
    assert_true(e->speed > 0.179 && e->speed < 0.181);
    assert_null(ebb__catalog_find(c, "aws", "us-west-2", "p2.xlarge"));
    assert_null(ebb__catalog_find(c, "gcp", "us-east-1", "p3.2xlarge"));

    e = ebb__catalog_find(c, "vast", "anywhere", "RTX_4090");
    assert_non_null(e);
    assert_int_equal(e->vcpus, 0);
    assert_true(e->memory_gb == 0.0);
    assert_string_equal(e->gpu_model, "RTX 4090");
    assert_string_equal(e->source, "per GPU-hour, \"reference\"");
    ebb__catalog_free(c);
}

static void optional_columns(void **state)
{
    (void)state;
    struct ebb__catalog *c = load_ok("tests/data/traces/catalog_nospeed.csv");
    assert_int_equal(c->n_entry, 2);
    const struct ebb__catalog_entry *e =
        ebb__catalog_find(c, "aws", "us-east-1", "p3.2xlarge");
    assert_non_null(e);
    assert_true(e->speed == 1.0);
    assert_string_equal(e->source, "");
    e = ebb__catalog_find(c, "aws", "us-east-1", "c5.large");
    assert_non_null(e);
    assert_int_equal(e->gpus, 0);
    assert_string_equal(e->gpu_model, "");
    assert_int_equal(e->on_demand, 85000);
    ebb__catalog_free(c);

    /* source before speed, CRLF line ends. */
    c = load_ok("tests/data/traces/catalog_source_first.csv");
    e = ebb__catalog_find(c, "aws", "us-east-1", "p3.8xlarge");
    assert_non_null(e);
    assert_true(e->speed == 3.6);
    assert_string_equal(e->source, "AWS");
    assert_true(e->memory_gb == 244.0);
    assert_true(e->network_gbps == 0.0); /* no column: unknown */
    ebb__catalog_free(c);

    /* network_gbps between the others; an empty field is unknown. */
    c = load_ok("tests/data/traces/catalog_network.csv");
    e = ebb__catalog_find(c, "aws", "us-east-1", "p3.16xlarge");
    assert_non_null(e);
    assert_true(e->network_gbps == 25.0);
    assert_true(e->speed == 7.44);
    assert_string_equal(e->source, "AWS");
    e = ebb__catalog_find(c, "aws", "us-east-1", "p2.xlarge");
    assert_non_null(e);
    assert_true(e->network_gbps == 0.0);
    assert_true(e->speed == 0.16);
    ebb__catalog_free(c);
    ebb__catalog_free(NULL);
}

#define H8 "provider,region,instance_type,on_demand_usd_per_hour,gpus," \
           "gpu_model,vcpus,memory_gb"
#define HDR H8 ",speed,source"
#define WANT "provider,region,instance_type,on_demand_usd_per_hour,gpus," \
             "gpu_model,vcpus,memory_gb[,speed][,source][,network_gbps]"

static void errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *msg;
    } cases[] = {
        {"", "catalog.csv: file is empty; a catalog starts with the line "
             WANT},
        {"provider,region,instance_type\n",
         "catalog.csv:1: header has 3 columns, expected 8 to 11; a catalog "
         "starts with the line " WANT},
        {"provider,region,type,on_demand_usd_per_hour,gpus,gpu_model,vcpus,"
         "memory_gb\n",
         "catalog.csv:1: column 3 of the header is \"type\", expected "
         "instance_type; a catalog starts with the line " WANT},
        {H8 ",speed,speed\n", "catalog.csv:1: column 10 of the header is "
                              "\"speed\", expected speed, source or "
                              "network_gbps; a "
                              "catalog starts with the line " WANT},
        {H8 ",price\n", "catalog.csv:1: column 9 of the header is \"price\", "
                        "expected speed, source or network_gbps; a catalog "
                        "starts with the "
                        "line " WANT},
        {HDR "\naws,us-east-1,p3.2xlarge,3.06,1,V100,8,61,1\n",
         "catalog.csv:2: 9 fields, expected 10 as in the header"},
        {HDR "\n,us-east-1,p3.2xlarge,3.06,1,V100,8,61,1,x\n",
         "catalog.csv:2: provider is empty"},
        {HDR "\naws,us-east-1,,3.06,1,V100,8,61,1,x\n",
         "catalog.csv:2: instance_type is empty"},
        {HDR "\naws,us-east-1,p3.2xlarge,$3.06,1,V100,8,61,1,x\n",
         "catalog.csv:2: on_demand_usd_per_hour: \"$3.06\" is not a number"},
        {HDR "\naws,us-east-1,p3.2xlarge,-3.06,1,V100,8,61,1,x\n",
         "catalog.csv:2: on_demand_usd_per_hour: \"-3.06\" is negative"},
        {HDR "\naws,us-east-1,p3.2xlarge,0.0000001,1,V100,8,61,1,x\n",
         "catalog.csv:2: on_demand_usd_per_hour: \"0.0000001\" is below 0.000001, "
         "the smallest amount ebb keeps (write 0 for free)"},
        {HDR "\naws,us-east-1,p3.2xlarge,3.06,one,V100,8,61,1,x\n",
         "catalog.csv:2: gpus: \"one\" is not a whole number >= 0"},
        {HDR "\naws,us-east-1,p3.2xlarge,3.06,1,,8,61,1,x\n",
         "catalog.csv:2: gpu_model is empty but gpus is 1 (name the model, "
         "like V100)"},
        {HDR "\naws,us-east-1,p3.2xlarge,3.06,1,V100,8.5,61,1,x\n",
         "catalog.csv:2: vcpus: \"8.5\" is not a whole number >= 0 (or "
         "empty: unknown)"},
        {HDR "\naws,us-east-1,p3.2xlarge,3.06,1,V100,8,61GB,1,x\n",
         "catalog.csv:2: memory_gb: \"61GB\" is not a number"},
        {HDR "\naws,us-east-1,p3.2xlarge,3.06,1,V100,8,61,0,x\n",
         "catalog.csv:2: speed: \"0\" must be greater than 0 (1.0 = one "
         "V100)"},
        {HDR "\naws,us-east-1,p3.2xlarge,3.06,1,V100,8,61,fast,x\n",
         "catalog.csv:2: speed: \"fast\" is not a number"},
        {H8 ",network_gbps\naws,us-east-1,p3.2xlarge,3.06,1,V100,8,61,fast\n",
         "catalog.csv:2: network_gbps: \"fast\" is not a number"},
        {H8 ",network_gbps\naws,us-east-1,p3.2xlarge,3.06,1,V100,8,61,0\n",
         "catalog.csv:2: network_gbps: \"0\" must be greater than 0 (or "
         "empty: unknown)"},
        {HDR "\naws,us-east-1,p3.2xlarge,3.06,1,V100,8,61,1,x\n"
             "aws,us-east-1,p2.xlarge,0.9,1,K80,4,61,0.2,x\n"
             "aws,us-east-1,p3.2xlarge,3.06,1,V100,8,61,1,y\n",
         "catalog.csv:4: aws/us-east-1/p3.2xlarge is already listed on line "
         "2; keep one row per provider, region and instance_type"},
        {HDR "\naws,us-east-1,p3.2xlarge,3.06,1,V100,8,61,1,\"x\n",
         "catalog.csv:2: quoted field is not closed (a field that starts "
         "with \" must end with \")"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        FILE *f = fopen("catalog.csv", "wb");
        assert_non_null(f);
        fputs(cases[i].text, f);
        assert_int_equal(fclose(f), 0);
        struct ebb__catalog *c = NULL;
        struct ebb_diag d = {{0}};
        assert_int_equal(ebb__catalog_load("catalog.csv", &c, &d), EBB_EINVAL);
        assert_null(c);
        assert_string_equal(d.msg, cases[i].msg);
    }
    struct ebb__catalog *c = NULL;
    struct ebb_diag d = {{0}};
    assert_int_equal(ebb__catalog_load("missing.csv", &c, &d), EBB_EIO);
    assert_string_equal(d.msg,
                        "missing.csv: cannot open: No such file or directory");
}

/* Every instance type of the shipped price traces has an on-demand price in
 * the shipped catalog, in its own region. Marketplace rows are priced per
 * GPU-hour under provider primeintellect-aggregate (see data/README.md). */
static void shipped_catalog_covers_traces(void **state)
{
    (void)state;
    struct ebb__catalog *c = load_ok("data/catalog.csv");
    /* tail -n +2 data/catalog.csv | wc -l */
    assert_int_equal(c->n_entry, 57);
    static const char *const traces[] = {
        "data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv",
        "data/traces/azure_lowpri_gpu_3regions_2020-02_2020-03.csv",
        ("data/traces/"
         "gpu_marketplace_primeintellect_2025-10-19_2025-11-08.csv"),
    };
    for (size_t k = 0; k < sizeof(traces) / sizeof(traces[0]); k++) {
        char path[PATH_MAX];
        struct ebb_price_trace *t = NULL;
        struct ebb_diag d = {{0}};
        if (ebb_price_trace_load(src_path(traces[k], path, sizeof(path)), &t,
                                  &d) != 0)
            fail_msg("%s", d.msg);
        for (size_t i = 0; i < t->n_series; i++) {
            const struct ebb_price_series *s = &t->series[i];
            const char *provider = s->provider;
            if (strncmp(provider, "primeintellect", 14) == 0)
                provider = "primeintellect-aggregate";
            const struct ebb__catalog_entry *e =
                ebb__catalog_find(c, provider, s->region, s->instance_type);
            if (e == NULL)
                fail_msg("no catalog entry for %s/%s/%s", provider, s->region,
                         s->instance_type);
            assert_true(e->on_demand > 0);
            assert_true(e->gpus > 0);
            assert_true(e->speed > 0);
            assert_true(e->source[0] != '\0');
        }
        ebb_price_trace_free(t);
    }
    const struct ebb__catalog_entry *e =
        ebb__catalog_find(c, "aws", "us-east-1", "p3.2xlarge");
    assert_non_null(e);
    assert_int_equal(e->on_demand, 3060000);
    assert_true(e->speed == 1.0);
    e = ebb__catalog_find(c, "aws", "us-east-1", "p2.xlarge");
    assert_non_null(e);
    assert_int_equal(e->on_demand, 900000);
    /* Published as "High", not as a figure: unknown. */
    assert_true(e->network_gbps == 0.0);
    /* AWS's "Network performance": "Up to 10 Gigabit", "10 Gigabit",
     * "25 Gigabit". */
    static const struct {
        const char *type;
        double gbps;
    } net[] = {{"p3.2xlarge", 10}, {"p3.8xlarge", 10}, {"p3.16xlarge", 25},
               {"p2.8xlarge", 10}, {"p2.16xlarge", 25}};
    for (size_t i = 0; i < sizeof(net) / sizeof(net[0]); i++) {
        e = ebb__catalog_find(c, "aws", "us-east-1", net[i].type);
        assert_non_null(e);
        assert_true(e->network_gbps == net[i].gbps);
    }
    e = ebb__catalog_find(c, "azure", "us_east", "NC24rs v3");
    assert_non_null(e);
    assert_true(e->network_gbps == 0.0); /* Azure publishes no figure */
    ebb__catalog_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lookup_and_fallback),
        cmocka_unit_test(optional_columns),
        cmocka_unit_test(errors),
        cmocka_unit_test(shipped_catalog_covers_traces),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
