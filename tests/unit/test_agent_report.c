/* An agent's event reports as ebbd reads them (daemon/agent_api_parse.c):
 * the host report's fields a gang's nodes are compared by, a heartbeat's
 * GPU utilisation, and what a hostile agent may not get past ebbd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/agent_api_parse.h"

static int parse(const char *text, struct ebb__agent_report *r, const char **why)
{
    static json_t *body; /* kept until the next parse: r borrows its strings */
    json_decref(body);
    body = json_loads(text, 0, NULL);
    assert_non_null(body);
    *why = NULL;
    return ebb__agent_report_parse(body, r, why);
}

static void host_fields(void **state)
{
    (void)state;
    struct ebb__agent_report r;
    const char *why;
    assert_int_equal(parse("{\"kind\":\"host\",\"nvidia_smi\":true,\"gpus\":[{\"model\":"
                           "\"Tesla V100-SXM2-16GB\",\"memory_mb\":16160,\"pcie_width\":16,"
                           "\"pcie_gen\":3}],\"driver_version\":\"535.104.05\","
                           "\"cuda_version\":\"12.2\",\"link_mbps\":25000,"
                           "\"addr\":\"10.0.0.5\",\"port\":29500}", &r, &why), 0);
    assert_int_equal(r.kind, EBB__AGENT_HOST);
    assert_string_equal(r.driver_version, "535.104.05");
    assert_string_equal(r.cuda_version, "12.2");
    assert_int_equal(r.link_mbps, 25000);
    assert_string_equal(r.addr, "10.0.0.5");
    assert_int_equal(r.port, 29500);
    assert_int_equal(parse("{\"kind\":\"host\",\"addr\":\"fe80::1\",\"port\":1}", &r, &why), 0);
    assert_string_equal(r.addr, "fe80::1");
    /* An agent of before gangs sends none of them. */
    assert_int_equal(parse("{\"kind\":\"host\",\"nvidia_smi\":false}", &r, &why), 0);
    assert_null(r.addr);
    assert_int_equal(r.port, 0);

    static const char *const bad[] = {
        "{\"kind\":\"host\",\"addr\":\"evil.example.com\"}",
        "{\"kind\":\"host\",\"addr\":\"10.0.0.5; rm -rf /\"}",
        "{\"kind\":\"host\",\"port\":65536}",
        "{\"kind\":\"host\",\"port\":-1}",
        "{\"kind\":\"host\",\"link_mbps\":1e30}",
        "{\"kind\":\"host\",\"link_mbps\":100000001}",
        "{\"kind\":\"host\",\"driver_version\":"
        "\"0123456789012345678901234567890123456789012345678901234567890123\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i], &r, &why) == 0)
            fail_msg("taken: %s", bad[i]);
        assert_non_null(why);
    }
}

/* gpu_util is optional (an agent on a host without GPUs sends none) and,
 * when sent, a whole percentage: the GPU guard moves jobs on it. */
static void heartbeat_gpu_util(void **state)
{
    (void)state;
    struct ebb__agent_report r;
    const char *why;
    assert_int_equal(parse("{\"kind\":\"heartbeat\",\"gpu_util\":37}", &r, &why), 0);
    assert_int_equal(r.kind, EBB__AGENT_HEARTBEAT);
    assert_true(r.has_gpu_util);
    assert_int_equal(r.gpu_util, 37);
    assert_int_equal(parse("{\"kind\":\"heartbeat\",\"gpu_util\":0}", &r, &why), 0);
    assert_true(r.has_gpu_util);
    assert_int_equal(r.gpu_util, 0);
    assert_int_equal(parse("{\"kind\":\"heartbeat\"}", &r, &why), 0);
    assert_false(r.has_gpu_util);

    static const char *const bad[] = {
        "{\"kind\":\"heartbeat\",\"gpu_util\":101}",
        "{\"kind\":\"heartbeat\",\"gpu_util\":-1}",
        "{\"kind\":\"heartbeat\",\"gpu_util\":50.5}",
        "{\"kind\":\"heartbeat\",\"gpu_util\":\"90\"}",
        "{\"kind\":\"heartbeat\",\"gpu_util\":null}",
        "{\"kind\":\"heartbeat\",\"gpu_util\":9223372036854775807}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(bad[i], &r, &why), EBB_EINVAL);
        assert_string_equal(why, "\"gpu_util\" is an integer percentage, 0..100");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(host_fields),
                                       cmocka_unit_test(heartbeat_gpu_util)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
