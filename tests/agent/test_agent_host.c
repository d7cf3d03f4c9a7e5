/* ebb-agent as a real process against the fake ebbd (fake.c): the host
 * check and what a gang's member does. The `host` event's fields (a fake
 * nvidia-smi, tests/agent/fake-nvidia-smi, and a fake sysfs), ebbd's
 * `wait` and its `env` in the answer to `host`, an unusable env refused,
 * and the checkpoint a gang's member resumes from by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake.h"
#include "jobs.h"

#define WATCHDOG_MS 15000

static struct fake F;

static int setup(void **state)
{
    (void)state;
    fake_init(&F, WATCHDOG_MS);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fake_close(&F);
    return 0;
}

static const char *kind_of(json_t *ev)
{
    return json_string_value(json_object_get(ev, "kind"));
}

static bool ran(void)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/ran", F.dir);
    return access(path, F_OK) == 0;
}

/* ---- the host check ---- */

static void release_host(struct fake *f, json_t *ev, struct ebb__httpd_response *res)
{
    (void)f;
    json_t *gpus = json_object_get(ev, "gpus");
    json_t *g = json_array_get(gpus, 0);
    if (strcmp(kind_of(ev), "host") == 0 &&
        json_integer_value(json_object_get(g, "pcie_width")) < 8)
        ebb__httpd_set_bodyf(res, "{\"command\": \"release\", "
                                  "\"reason\": \"PCIe x1 below the job's x8\"}");
}

static void test_host_check_release(void **state)
{
    (void)state;
    const char *bin = fake_nvidia_smi(&F, "NVIDIA GeForce RTX 3090, 24576, 1, 3\n", NULL);
    F.hook = release_host;
    fake_job_script(&F, "#!/bin/sh\ntouch ran\n", "", 0, "", "");
    fake_start_agent(&F, FAKE_TOKEN, bin, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 4);
    fake_assert_kinds(&F, "host");
    json_t *host = fake_event(&F, "host", 0);
    assert_true(fake_ev_bool(host, "nvidia_smi"));
    json_t *g = json_array_get(json_object_get(host, "gpus"), 0);
    assert_string_equal(fake_ev_str(g, "model"), "NVIDIA GeForce RTX 3090");
    assert_int_equal(fake_ev_int(g, "memory_mb"), 24576);
    assert_int_equal(fake_ev_int(g, "pcie_width"), 1);
    assert_int_equal(fake_ev_int(g, "pcie_gen"), 3);
    assert_true(fake_has(&F.agent_err, "PCIe x1 below the job's x8"));
    assert_false(ran());
}

static void test_host_check_pass(void **state)
{
    (void)state;
    const char *bin = fake_nvidia_smi(&F, "Tesla V100-SXM2-16GB, 16160, 16, 3\n"
                                          "Tesla V100-SXM2-16GB, 16160, 16, 3\n", NULL);
    F.hook = release_host;
    fake_job_script(&F, "#!/bin/sh\ntouch ran\n", "", 0, "", "");
    fake_start_agent(&F, FAKE_TOKEN, bin, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    fake_assert_kinds(&F, "host,started,exited");
    assert_int_equal(json_array_size(json_object_get(fake_event(&F, "host", 0), "gpus")), 2);
    assert_true(ran());
}

/* Whether TCP port `port` can be bound on 127.0.0.1 now. */
static bool port_free(int64_t port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    bool ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

/* The versions nvidia-smi gives (each run of the fake the next driver),
 * and the network the agent reaches ebbd over: loopback here, whose
 * speed is unknown even when sysfs names one. */
static void test_host_fields(void **state)
{
    (void)state;
    const char *bin = fake_nvidia_smi(&F, NULL, "535.104.05\n550.54.14\n");
    char path[600], sys[600];
    snprintf(path, sizeof(path), "%s", bin);
    snprintf(sys, sizeof(sys), "%s/sys", F.dir);
    const char *dirs[] = {"sys", "sys/class", "sys/class/net", "sys/class/net/lo"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", F.dir, dirs[i]);
        assert_int_equal(mkdir(path, 0700), 0);
    }
    fake_script(&F, "sys/class/net/lo/speed", "10000\n");
    snprintf(path, sizeof(path), "%s", bin);
    const char *extra[] = {"--sysfs", sys, NULL};
    fake_job_script(&F, "#!/bin/sh\ntouch ran\n", "", 0, "", "");
    fake_start_agent(&F, FAKE_TOKEN, path, extra);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    json_t *host = fake_event(&F, "host", 0);
    assert_string_equal(fake_ev_str(host, "driver_version"), "535.104.05");
    assert_string_equal(fake_ev_str(host, "cuda_version"), "12.2");
    assert_string_equal(fake_ev_str(host, "addr"), "127.0.0.1");
    assert_int_equal(fake_ev_int(host, "link_mbps"), 0);
    int64_t port = fake_ev_int(host, "port");
    assert_true(port > 0 && port < 65536);
    assert_true(port_free(port));
    assert_true(fake_has(&F.agent_err, "driver 535.104.05, CUDA 12.2"));

    /* The next node on this machine: the next driver, another CUDA. */
    fake_next_run(&F);
    fake_script(&F, "bin/nvidia-smi.cuda", "12.4\n");
    fake_start_agent(&F, FAKE_TOKEN, path, extra);
    fake_run_until(&F, fake_agent_done);
    host = fake_event(&F, "host", 0);
    assert_string_equal(fake_ev_str(host, "driver_version"), "550.54.14");
    assert_string_equal(fake_ev_str(host, "cuda_version"), "12.4");
}

/* ---- GPU utilisation with the heartbeats ---- */

/* The heartbeats of the last run that carry `gpu_util`, each checked to
 * be `want`; their count. */
static size_t gpu_util_beats(int want)
{
    size_t n = 0, i;
    json_t *ev;
    json_array_foreach(F.events, i, ev) {
        if (strcmp(fake_ev_str(ev, "kind"), "heartbeat") != 0 ||
            json_object_get(ev, "gpu_util") == NULL)
            continue;
        assert_int_equal(fake_ev_int(ev, "gpu_util"), want);
        n++;
    }
    return n;
}

static void test_heartbeat_gpu_util(void **state)
{
    (void)state;
    /* Two GPUs at 37%: the mean, on heartbeats (150 ms) after the first
     * sample came back. */
    const char *bin = fake_nvidia_smi(&F, "Tesla V100-SXM2-16GB, 16160, 16, 3\n"
                                          "Tesla V100-SXM2-16GB, 16160, 16, 3\n", NULL);
    fake_script(&F, "bin/nvidia-smi.util", "37\n");
    fake_job_script(&F, "#!/bin/sh\nsleep 1.5\n", "", 0, "", "");
    fake_start_agent(&F, FAKE_TOKEN, bin, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    assert_true(fake_count(&F, "heartbeat") >= 4);
    assert_true(gpu_util_beats(37) >= 2);
    /* A GPU that gives no number: heartbeats without gpu_util, never 0. */
    fake_next_run(&F);
    fake_script(&F, "bin/nvidia-smi.util", "[N/A]\n");
    fake_start_agent(&F, FAKE_TOKEN, bin, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_true(fake_count(&F, "heartbeat") >= 4);
    assert_int_equal(gpu_util_beats(-1), 0);
    assert_true(fake_has(&F.agent_err, "nvidia-smi gave no GPU utilisation: \"[N/A]"));
    /* No nvidia-smi on PATH: nothing sampled. */
    fake_next_run(&F);
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_true(fake_count(&F, "heartbeat") >= 4);
    assert_int_equal(gpu_util_beats(-1), 0);
}

/* ---- a gang's member: wait, then the env ---- */

struct gang_replies {
    int waits;          /* answer this many `host` events with wait */
    int64_t at[8];      /* when each `host` came (the fake's loop time) */
    int hosts;
    const char *go;     /* then this answer */
};

static void gang_hook(struct fake *f, json_t *ev, struct ebb__httpd_response *res)
{
    struct gang_replies *g = f->user;
    if (strcmp(kind_of(ev), "host") != 0)
        return;
    uv_update_time(&f->loop);
    if (g->hosts < 8)
        g->at[g->hosts] = (int64_t)uv_now(&f->loop);
    if (g->hosts++ < g->waits)
        ebb__httpd_set_bodyf(res, "{\"command\": \"wait\", \"retry_ms\": %d, \"reason\": "
                                  "\"gang: 1 of 2 nodes ready\"}",
                             g->hosts == 1 ? 1 : 150);
    else
        ebb__httpd_set_bodyf(res, "%s", g->go);
}

#define PRINTS_GANG_ENV \
    "#!/bin/sh\n" \
    "touch ran\n" \
    "echo \"MASTER_ADDR=[$MASTER_ADDR] MASTER_PORT=[$MASTER_PORT] NODE_RANK=[$NODE_RANK]" \
    " USER_VAR=[$USER_VAR] EBB_JOB_ID=[$EBB_JOB_ID]\"\n"

static size_t occurrences(const struct ebb_buf *b, const char *needle)
{
    size_t n = 0;
    for (const char *p = b->data; p != NULL && (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void test_wait_then_env(void **state)
{
    (void)state;
    struct gang_replies g = {
        .waits = 2,
        .go = "{\"command\": \"none\", \"env\": {\"MASTER_ADDR\": \"127.0.0.1\", "
              "\"MASTER_PORT\": \"29500\", \"NODE_RANK\": \"1\", \"USER_VAR\": \"from ebbd\", "
              "\"EBB_JOB_ID\": \"not ebbd's to set\"}}",
    };
    F.hook = gang_hook;
    F.user = &g;
    fake_job_script(&F, PRINTS_GANG_ENV, "", 0, "", ", \"gang\": {\"nodes\": 2, \"rank\": 1}");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    fake_assert_kinds(&F, "host,host,host,started,exited");
    /* Nothing but `host` while waiting: no heartbeat either. */
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(kind_of(json_array_get(F.events, i)), "host");
    /* retry_ms 1 is taken as 100; 150 as it is. */
    assert_true(g.at[1] - g.at[0] >= 95);
    assert_true(g.at[2] - g.at[1] >= 145);
    assert_int_equal(occurrences(&F.agent_err, "gang: 1 of 2 nodes ready"), 1);
    assert_true(fake_has(&F.agent_err, "rank 1 of 2 nodes"));
    /* ebbd's env over the job document's; the EBB_* variables are ebb's. */
    assert_true(fake_has(&F.out, "MASTER_ADDR=[127.0.0.1] MASTER_PORT=[29500] NODE_RANK=[1] "
                                 "USER_VAR=[from ebbd] EBB_JOB_ID=[j-20261130-0001]\n"));
}

static void test_wait_then_stop(void **state)
{
    (void)state;
    struct gang_replies g = {
        .waits = 1,
        .go = "{\"command\": \"stop\", \"reason\": \"the gang was not complete in time\"}",
    };
    F.hook = gang_hook;
    F.user = &g;
    fake_job_script(&F, "#!/bin/sh\ntouch ran\n", "", 0, "", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 4);
    fake_assert_kinds(&F, "host,host");
    assert_true(fake_has(&F.agent_err, "the gang was not complete in time"));
    assert_false(ran());
}

/* An env the agent cannot use: the job is not started, and ebbd hears
 * a failed start saying why. */
static void expect_env_refused(const char *env, const char *words)
{
    fake_next_run(&F);
    char *go = ebb_strfmt("{\"command\": \"none\", \"env\": %s}", env);
    assert_non_null(go);
    struct gang_replies g = {.go = go};
    F.hook = gang_hook;
    F.user = &g;
    fake_job_script(&F, "#!/bin/sh\ntouch ran\n", "", 0, "", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    free(go);
    assert_int_equal(F.agent_status, 127);
    fake_assert_kinds(&F, "host,exited");
    json_t *ex = fake_event(&F, "exited", 0);
    assert_int_equal(fake_ev_int(ex, "status"), 127);
    const char *error = fake_ev_str(ex, "error");
    if (strncmp(error, "cannot start the job: ebbd's env", 32) != 0 ||
        strstr(error, words) == NULL)
        fail_msg("error \"%s\" does not say \"%s\"", error, words);
    assert_false(ran());
}

static void test_bad_env_refused(void **state)
{
    (void)state;
    expect_env_refused("{\"1BAD\": \"x\"}", "not a variable name");
    expect_env_refused("{\"A-B\": \"x\"}", "not a variable name");
    expect_env_refused("{\"A\": \"x\\u0000y\"}", "NUL");
    expect_env_refused("{\"A\": 5}", "env.A is not a string");
    expect_env_refused("[\"A=1\"]", "is not an object");
    struct ebb_buf many = {0};
    ebb_buf_puts(&many, "{");
    for (int i = 0; i < 65; i++)
        ebb_buf_printf(&many, "%s\"V%d\": \"x\"", i ? ", " : "", i);
    ebb_buf_puts(&many, "}");
    expect_env_refused(many.data, "65 variables, more than 64");
    ebb_buf_free(&many);
    char *big = calloc(1, 64 * 1024 + 16);
    assert_non_null(big);
    memset(big, 'x', 64 * 1024 + 1);
    char *env = ebb_strfmt("{\"BIG\": \"%s\"}", big);
    expect_env_refused(env, "longer than 64 KiB");
    free(env);
    free(big);
}

/* A gang's member told to start with no env cannot find its peers: it is
 * not started, and ebbd hears why. */
static void test_gang_member_needs_env(void **state)
{
    (void)state;
    struct gang_replies g = {.go = "{\"command\": \"none\"}"};
    F.hook = gang_hook;
    F.user = &g;
    fake_job_script(&F, "#!/bin/sh\ntouch ran\n", "", 0, "",
                    ", \"gang\": {\"nodes\": 2, \"rank\": 0}");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 127);
    fake_assert_kinds(&F, "host,exited");
    const char *error = fake_ev_str(fake_event(&F, "exited", 0), "error");
    if (strstr(error, "no environment (MASTER_ADDR") == NULL)
        fail_msg("error \"%s\"", error);
    assert_false(ran());
}

/* ---- resuming a gang's checkpoint by name ---- */

/* A complete checkpoint NAME, of job `job` (a marker beside it), of
 * modification time `mtime`. */
static void make_ckpt(const char *name, const char *job, time_t mtime)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", F.ckpt_dir, name);
    assert_int_equal(mkdir(path, 0700), 0);
    struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
    snprintf(path, sizeof(path), "ckpt/.ebb-checkpoint.%s", name);
    fake_script(&F, path, job);
}

static void run_resume(const char *name)
{
    fake_next_run(&F);
    char ckpt[300];
    snprintf(ckpt, sizeof(ckpt), ", \"resume\": \"%s\"", name);
    fake_job_script(&F, JOB_PRINTS_RESUME, "", 0, ckpt, "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
}

static void expect_not_here(const char *name)
{
    run_resume(name);
    assert_int_equal(F.agent_status, 127);
    fake_assert_kinds(&F, "host,exited");
    json_t *ex = fake_event(&F, "exited", 0);
    assert_int_equal(fake_ev_int(ex, "status"), 127);
    char want[300];
    snprintf(want, sizeof(want), "cannot start the job: checkpoint %s is not on this node",
             name);
    assert_string_equal(fake_ev_str(ex, "error"), want);
    assert_false(fake_has(&F.out, "resume="));
}

static void test_resume_by_name(void **state)
{
    (void)state;
    assert_int_equal(mkdir(F.ckpt_dir, 0700), 0);
    make_ckpt("ckpt-old", "j-20261130-0001", 1000);
    make_ckpt("ckpt-new", "j-20261130-0001", 3000);
    make_ckpt("ckpt-theirs", "j-20261130-0002", 5000);
    char want[700];

    /* The named one, though a newer one is there. */
    run_resume("ckpt-old");
    assert_int_equal(F.agent_status, 0);
    snprintf(want, sizeof(want), "%s/ckpt-old", F.ckpt_dir);
    assert_string_equal(fake_ev_str(fake_event(&F, "started", 0), "resume_from"), want);
    snprintf(want, sizeof(want), "resume=[%s/ckpt-old]\n", F.ckpt_dir);
    assert_string_equal(F.out.data, want);

    /* "": afresh, whatever the directory holds. */
    run_resume("");
    assert_int_equal(F.agent_status, 0);
    assert_string_equal(fake_ev_str(fake_event(&F, "started", 0), "resume_from"), "");
    assert_string_equal(F.out.data, "resume=[]\n");

    /* Not here, or not this job's: never started. */
    expect_not_here("ckpt-gone");
    expect_not_here("ckpt-theirs");
}

/* Keeping `keep` checkpoints never removes the gang's resume point, and
 * it does not count among them. */
static void test_named_checkpoint_is_never_pruned(void **state)
{
    (void)state;
    assert_int_equal(mkdir(F.ckpt_dir, 0700), 0);
    make_ckpt("ckpt-gang", "j-20261130-0001", 1000);
    fake_job_script(&F, JOB_CHECKPOINTS, "", 20,
                    ", \"every_ms\": 200, \"keep\": 1, \"resume\": \"ckpt-gang\"", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    size_t n = fake_count(&F, "checkpoint");
    assert_true(n >= 2);
    struct stat st;
    char path[700];
    snprintf(path, sizeof(path), "%s/ckpt-gang", F.ckpt_dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(stat(fake_ev_str(fake_event(&F, "checkpoint", n - 1), "path"), &st), 0);
    assert_int_not_equal(stat(fake_ev_str(fake_event(&F, "checkpoint", 0), "path"), &st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_host_check_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_check_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_gpu_util, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_then_env, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_then_stop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gang_member_needs_env, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_env_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_named_checkpoint_is_never_pruned, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
