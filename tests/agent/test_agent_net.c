/* ebb-agent's network probe alone (src/agent/netprobe.c): ebbd's host in
 * its URL, a free port, link speeds from a fake sysfs, and the whole
 * probe on a loop against 127.0.0.1. */
#include <ifaddrs.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <ebb/common.h>

#include "agent/netprobe.h"

static char sys[256];

static int setup(void **state)
{
    (void)state;
    snprintf(sys, sizeof(sys), "%s/ebb-sys.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(sys));
    char path[400];
    snprintf(path, sizeof(path), "%s/class", sys);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/class/net", sys);
    assert_int_equal(mkdir(path, 0700), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sys);
    assert_int_equal(system(cmd), 0);
    return 0;
}

/* <sys>/class/net/<iface>/speed holding `text`. */
static void speed_file(const char *iface, const char *text)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/class/net/%s", sys, iface);
    assert_true(mkdir(path, 0700) == 0 || access(path, F_OK) == 0);
    snprintf(path, sizeof(path), "%s/class/net/%s/speed", sys, iface);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void expect_host(const char *url, const char *host, const char *port)
{
    char h[64], p[8];
    assert_int_equal(agent_net_url_host(url, h, sizeof(h), p, sizeof(p)), 0);
    assert_string_equal(h, host);
    assert_string_equal(p, port);
}

static void test_url_host(void **state)
{
    (void)state;
    expect_host("http://127.0.0.1:7427", "127.0.0.1", "7427");
    expect_host("https://ebbd.example.com/v1/x", "ebbd.example.com", "443");
    expect_host("http://ebbd.example.com?a=b", "ebbd.example.com", "80");
    expect_host("https://[fd00::2]:8443/", "fd00::2", "8443");
    expect_host("https://[::1]", "::1", "443");
    expect_host("http://user@10.0.0.5:80/", "10.0.0.5", "80");
    char h[64], p[8];
    const char *bad[] = {"ftp://x", "http://", "http://:80", "http://x:", "http://x:8a",
                         "https://[::1", "http://x:123456", "http://x:65536", "localhost:80"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (agent_net_url_host(bad[i], h, sizeof(h), p, sizeof(p)) != EBB_EINVAL)
            fail_msg("\"%s\" was taken as host \"%s\" port \"%s\"", bad[i], h, p);
}

static void test_free_port(void **state)
{
    (void)state;
    int port = agent_net_free_port("127.0.0.1");
    assert_true(port > 0 && port < 65536);
    /* Free: it binds again. */
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);
    assert_int_equal(agent_net_free_port("not an address"), -EINVAL);
    /* An address this machine does not hold (TEST-NET-3). */
    assert_true(agent_net_free_port("203.0.113.77") < 0);
}

static void test_iface_speed(void **state)
{
    (void)state;
    speed_file("eth9", "25000\n");
    speed_file("veth0", "-1\n");
    speed_file("odd", "fast\n");
    speed_file("empty", "");
    assert_int_equal(agent_net_iface_mbps(sys, "eth9"), 25000);
    assert_int_equal(agent_net_iface_mbps(sys, "veth0"), 0);
    assert_int_equal(agent_net_iface_mbps(sys, "odd"), 0);
    assert_int_equal(agent_net_iface_mbps(sys, "empty"), 0);
    assert_int_equal(agent_net_iface_mbps(sys, "missing"), 0);
    assert_int_equal(agent_net_iface_mbps(sys, "../net/eth9"), 0);
    assert_int_equal(agent_net_iface_mbps(sys, ""), 0);
}

/* Every address this machine holds maps to its interface's speed, but a
 * loopback interface's is unknown whatever sysfs says. */
static void test_link_speed_by_address(void **state)
{
    (void)state;
    struct ifaddrs *list;
    assert_int_equal(getifaddrs(&list), 0);
    int64_t speed = 1000;
    size_t loopbacks = 0;
    for (struct ifaddrs *ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
        char text[INET6_ADDRSTRLEN], value[32];
        const struct sockaddr *sa = ifa->ifa_addr;
        if (sa == NULL || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
            continue;
        const void *bytes = sa->sa_family == AF_INET
                                ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
                                : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
        assert_non_null(inet_ntop(sa->sa_family, bytes, text, sizeof(text)));
        snprintf(value, sizeof(value), "%lld\n", (long long)++speed);
        speed_file(ifa->ifa_name, value);
        bool lo = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
        loopbacks += lo;
        assert_int_equal(agent_net_link_mbps(sys, text), lo ? 0 : speed);
    }
    freeifaddrs(list);
    assert_true(loopbacks >= 1); /* 127.0.0.1 at least */
    assert_int_equal(agent_net_link_mbps(sys, "203.0.113.77"), 0);
}

static void on_net(void *arg, const struct agent_net *net)
{
    struct agent_net *got = arg;
    *got = *net;
    got->link_mbps += 1; /* seen: 0 becomes 1 */
}

static void test_probe_on_a_loop(void **state)
{
    (void)state;
    speed_file("lo", "10000\n");
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct agent_net got = {0};
    assert_int_equal(agent_netprobe_start(&loop, "http://127.0.0.1:7427", sys, on_net, &got),
                     0);
    assert_int_equal(got.link_mbps, 0); /* not before a later turn */
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_string_equal(got.addr, "127.0.0.1");
    assert_true(got.port > 0 && got.port < 65536);
    assert_int_equal(got.link_mbps, 1);
    assert_int_equal(agent_netprobe_start(&loop, "ftp://x", sys, on_net, &got), EBB_EINVAL);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_host),
        cmocka_unit_test(test_free_port),
        cmocka_unit_test_setup_teardown(test_iface_speed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_link_speed_by_address, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_on_a_loop, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
