/* ebb-agent as a real process against a fake ebbd and a fake metadata
 * service (fake.c): the job's start, signals, checkpoints, progress,
 * output and outages (the host check and gangs: test_agent_host.c). Jobs
 * are small shell scripts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake.h"
#include "io/ckpt_object.h"
#include "io/workdir_tar.h"
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

static bool started(struct fake *f)
{
    return fake_count(f, "started") > 0 || fake_agent_done(f);
}

/* ---- start, argv, env, output ---- */

static void test_env_argv_no_shell(void **state)
{
    (void)state;
    fake_job_script(&F, "#!/bin/sh\n"
               "printf 'argc=%s\\n' \"$#\"\n"
               "for a in \"$@\"; do printf 'arg=[%s]\\n' \"$a\"; done\n"
               "printf 'job=[%s] dir=[%s] resume=[%s] sig=[%s] psig=[%s]\\n' "
               "\"$EBB_JOB_ID\" \"$EBB_CHECKPOINT_DIR\" \"$EBB_RESUME_FROM\" "
               "\"$EBB_SIGNAL\" \"$EBB_PERIODIC_SIGNAL\"\n"
               "printf 'user=[%s] token=[%s]\\n' \"$USER_VAR\" \"${EBB_AGENT_TOKEN-unset}\"\n"
               "printf 'pwd=[%s]\\n' \"$(pwd)\"\n"
               "printf 'pid=%s pgid=%s\\n' $$ \"$(cut -d' ' -f5 /proc/$$/stat)\"\n"
               "printf 'sigign=%s\\n' \"$(grep SigIgn /proc/$$/status | cut -f2)\"\n"
               "echo 'to stderr' >&2\n"
               "exit 7\n",
               ", \"two words\", \"$HOME\", \"*\", \"a;b\"", 0, "", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);

    assert_int_equal(F.agent_status, 7);
    fake_assert_kinds(&F, "host,started,exited");
    json_t *st = fake_event(&F, "started", 0);
    assert_string_equal(fake_ev_str(st, "resume_from"), "");
    json_t *ex = fake_event(&F, "exited", 0);
    assert_int_equal(fake_ev_int(ex, "status"), 7);
    assert_int_equal(fake_ev_int(ex, "signal"), 0);
    assert_false(fake_ev_bool(ex, "stopped"));
    assert_false(fake_ev_bool(ex, "checkpointed"));

    /* Arguments arrive as given: no shell expanded, split or globbed them. */
    assert_true(fake_has(&F.out, "argc=4\n"));
    assert_true(fake_has(&F.out, "arg=[two words]\narg=[$HOME]\narg=[*]\narg=[a;b]\n"));
    char want[1024];
    snprintf(want, sizeof(want), "job=[j-20261130-0001] dir=[%s] resume=[] sig=[SIGUSR1] "
             "psig=[SIGUSR2]\n", F.ckpt_dir);
    assert_true(fake_has(&F.out, want));
    /* The job's env is there; the agent's token is not. */
    assert_true(fake_has(&F.out, "user=[hello world] token=[unset]\n"));
    snprintf(want, sizeof(want), "pwd=[%s]\n", F.dir);
    assert_true(fake_has(&F.out, want));
    /* Its own process group, led by the pid reported in `started`. */
    snprintf(want, sizeof(want), "pid=%lld pgid=%lld\n", (long long)fake_ev_int(st, "pid"),
             (long long)fake_ev_int(st, "pid"));
    assert_true(fake_has(&F.out, want));
    /* No signal disposition of the agent's (it ignores SIGPIPE) leaks in. */
    assert_true(fake_has(&F.out, "sigign=0000000000000000\n"));
    /* Output is forwarded per stream and also passed through. */
    assert_string_equal(F.err.data, "to stderr\n");
    assert_true(fake_has(&F.agent_out, "argc=4\n"));
    assert_true(fake_has(&F.agent_err, "to stderr\n"));
    /* No host probe without nvidia-smi on PATH, but the event says so. */
    json_t *host = fake_event(&F, "host", 0);
    assert_false(fake_ev_bool(host, "nvidia_smi"));
    assert_int_equal(json_array_size(json_object_get(host, "gpus")), 0);
    assert_string_equal(fake_ev_str(host, "driver_version"), "");
    assert_string_equal(fake_ev_str(host, "cuda_version"), "");
}

static void test_shell_true(void **state)
{
    (void)state;
    fake_set_job(&F, JOB_DOC, "[\"echo \\\"$EBB_JOB_ID:$1\\\" | tr a-z A-Z\", \"arg1\"]",
                 "true", 0, F.dir, F.ckpt_dir, "", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    assert_non_null(F.out.data);
    assert_string_equal(F.out.data, "J-20261130-0001:ARG1\n");
}

/* A workdir that is not the agent's user's: the job never starts, and
 * ebbd hears a failed run (127), not a stop (-1) it would resume forever
 * (#15 finding 1). */
static void test_foreign_workdir_refused(void **state)
{
    (void)state;
    char theirs[600];
    snprintf(theirs, sizeof(theirs), "%s/theirs", F.dir);
    assert_int_equal(mkdir(theirs, 0755), 0);
    const char *workdir = theirs;
    if (geteuid() == 0)
        assert_int_equal(chown(theirs, 65534, 65534), 0);
    else
        workdir = "/"; /* root's */
    fake_set_job(&F, JOB_DOC, "[\"true\"]", "false", 0, workdir, F.ckpt_dir, "", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 127);
    fake_assert_kinds(&F, "host,exited");
    json_t *ex = fake_event(&F, "exited", 0);
    assert_int_equal(fake_ev_int(ex, "status"), 127);
    assert_false(fake_ev_bool(ex, "stopped"));
    assert_true(fake_has(&F.agent_err, "not to the job's user"));
}

/* ---- stopping ---- */

static void run_notice_test(bool alibaba)
{
    F.alibaba = alibaba;
    F.imds_token_max_uses = 3; /* forces token refreshes on the way */
    fake_job_script(&F, JOB_CHECKPOINTS, "", 400, ", \"grace_ms\": 5000", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, started);
    fake_run_for(&F, 800);
    assert_int_equal(fake_count(&F, "exited"), 0);
    fake_post_notice(&F);
    fake_run_until(&F, fake_agent_done);

    assert_int_equal(F.agent_status, 0);
    fake_assert_kinds(&F, "host,started,notice,checkpoint,exited");
    json_t *n = fake_event(&F, "notice", 0);
    assert_string_equal(fake_ev_str(n, "source"), alibaba ? "alibaba-imds" : "aws-imds");
    assert_int_equal(fake_ev_int(n, "deadline_ms"), INT64_C(4070908800000)); /* 2099-01-01 */
    json_t *c = fake_event(&F, "checkpoint", 0);
    assert_false(fake_ev_bool(c, "periodic"));
    assert_true(fake_ev_int(c, "duration_ms") >= 0 && fake_ev_int(c, "duration_ms") < 5000);
    assert_non_null(strstr(fake_ev_str(c, "path"), F.ckpt_dir));
    json_t *ex = fake_event(&F, "exited", 0);
    assert_true(fake_ev_bool(ex, "stopped"));
    assert_true(fake_ev_bool(ex, "checkpointed"));
    assert_int_equal(fake_ev_int(ex, "status"), 0);
    /* IMDSv2: every answered query carried a token; expired ones were
     * replaced. */
    assert_true(F.imds_ok_queries >= 4);
    assert_true(F.imds_tokens >= 2);
    assert_true(F.imds_refused >= 1);
}

static void test_imds_notice_aws(void **state)
{
    (void)state;
    run_notice_test(false);
}

static void test_imds_notice_alibaba(void **state)
{
    (void)state;
    run_notice_test(true);
}

/* ebbd answers the first heartbeat with stop. */
static void stop_on_heartbeat(struct fake *f, json_t *ev, struct ebb__httpd_response *res)
{
    const char *kind = json_string_value(json_object_get(ev, "kind"));
    int *grace = f->user;
    if (strcmp(kind, "heartbeat") == 0 && fake_count(f, "heartbeat") == 1)
        ebb__httpd_set_bodyf(res, "{\"command\": \"stop\", \"grace_ms\": %d, "
                                  "\"reason\": \"price spike\"}", *grace);
}

static void test_stop_reply(void **state)
{
    (void)state;
    int grace = 5000;
    F.hook = stop_on_heartbeat;
    F.user = &grace;
    fake_job_script(&F, JOB_CHECKPOINTS, "", 400, "", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    fake_assert_kinds(&F, "host,started,checkpoint,exited");
    json_t *ex = fake_event(&F, "exited", 0);
    assert_true(fake_ev_bool(ex, "stopped"));
    assert_true(fake_ev_bool(ex, "checkpointed"));
    assert_true(fake_has(&F.agent_err, "price spike"));
}

static bool process_gone(const char *pidfile)
{
    FILE *fp = fopen(pidfile, "r");
    assert_non_null(fp);
    long pid = 0;
    assert_int_equal(fscanf(fp, "%ld", &pid), 1);
    fclose(fp);
    char path[64], stat[256] = "";
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    fp = fopen(path, "r");
    if (fp == NULL)
        return true;
    size_t n = fread(stat, 1, sizeof(stat) - 1, fp);
    fclose(fp);
    stat[n] = '\0';
    const char *paren = strrchr(stat, ')');
    return paren != NULL && paren[2] == 'Z'; /* a zombie is gone too */
}

static void test_grace_kills_a_job_ignoring_the_signal(void **state)
{
    (void)state;
    int grace = 600;
    F.hook = stop_on_heartbeat;
    F.user = &grace;
    fake_job_script(&F, JOB_IGNORES, "", 0, "", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, started);
    uint64_t t0 = uv_hrtime();
    fake_run_until(&F, fake_agent_done);
    double secs = (double)(uv_hrtime() - t0) / 1e9;
    /* Heartbeat at 150 ms, then the 600 ms grace. */
    assert_true(secs > 0.6);
    assert_int_equal(F.agent_status, 128 + SIGKILL);
    fake_assert_kinds(&F, "host,started,exited");
    json_t *ex = fake_event(&F, "exited", 0);
    assert_int_equal(fake_ev_int(ex, "status"), -1);
    assert_int_equal(fake_ev_int(ex, "signal"), SIGKILL);
    assert_true(fake_ev_bool(ex, "stopped"));
    assert_false(fake_ev_bool(ex, "checkpointed"));
    /* The whole process group went, not just the main process. */
    char pidfile[512];
    snprintf(pidfile, sizeof(pidfile), "%s/child.pid", F.dir);
    fake_run_for(&F, 100);
    assert_true(process_gone(pidfile));
}

/* ---- checkpoints ---- */

static void test_periodic_checkpoints_and_pruning(void **state)
{
    (void)state;
    fake_job_script(&F, JOB_CHECKPOINTS, "", 40, ", \"every_ms\": 250, \"keep\": 2", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    size_t n = fake_count(&F, "checkpoint");
    assert_true(n >= 3);
    for (size_t i = 0; i < n; i++) {
        json_t *c = fake_event(&F, "checkpoint", i);
        assert_true(fake_ev_bool(c, "periodic"));
        /* Each is a new complete checkpoint: a distinct path. */
        if (i > 0)
            assert_string_not_equal(fake_ev_str(c, "path"),
                                    fake_ev_str(fake_event(&F, "checkpoint", i - 1), "path"));
    }
    json_t *ex = fake_event(&F, "exited", 0);
    assert_false(fake_ev_bool(ex, "stopped"));
    /* The job ran to its end: every step was printed. */
    assert_true(fake_has(&F.out, "step 40\n"));
    /* keep: 2 -> only the two newest remain, and they are the last two
     * reported. */
    struct stat st;
    const char *last = fake_ev_str(fake_event(&F, "checkpoint", n - 1), "path");
    const char *before = fake_ev_str(fake_event(&F, "checkpoint", n - 2), "path");
    const char *first = fake_ev_str(fake_event(&F, "checkpoint", 0), "path");
    assert_int_equal(stat(last, &st), 0);
    assert_int_equal(stat(before, &st), 0);
    assert_int_not_equal(stat(first, &st), 0);
}

static void make_ckpt(const char *dir, const char *name, time_t mtime)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_int_equal(mkdir(path, 0700), 0);
    struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void test_half_written_checkpoint_never_offered(void **state)
{
    (void)state;
    assert_int_equal(mkdir(F.ckpt_dir, 0700), 0);
    /* ckpt-b is newest by time although ckpt-c sorts later by name. */
    make_ckpt(F.ckpt_dir, "ckpt-a", 1000);
    make_ckpt(F.ckpt_dir, "ckpt-b", 3000);
    make_ckpt(F.ckpt_dir, "ckpt-c", 2000);
    int grace = 500;
    F.hook = stop_on_heartbeat;
    F.user = &grace;
    fake_job_script(&F, JOB_HALF_WRITES, "", 0, "", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    char want[600];
    snprintf(want, sizeof(want), "%s/ckpt-b", F.ckpt_dir);
    assert_string_equal(fake_ev_str(fake_event(&F, "started", 0), "resume_from"), want);
    json_t *ex = fake_event(&F, "exited", 0);
    assert_true(fake_ev_bool(ex, "stopped"));
    assert_false(fake_ev_bool(ex, "checkpointed"));
    assert_int_equal(fake_count(&F, "checkpoint"), 0);
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s/.tmp-half/state", F.ckpt_dir);
    struct stat st;
    assert_int_equal(stat(tmp, &st), 0); /* the job did start writing it */

    /* The next run is offered ckpt-b, never the half-written one, which
     * is removed at start. */
    fake_next_run(&F);
    fake_job_script(&F, JOB_PRINTS_RESUME, "", 0, "", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    snprintf(want, sizeof(want), "resume=[%s/ckpt-b]\n", F.ckpt_dir);
    assert_string_equal(F.out.data, want);
    snprintf(tmp, sizeof(tmp), "%s/.tmp-half", F.ckpt_dir);
    assert_int_not_equal(stat(tmp, &st), 0);
}

/* ---- progress ---- */

static void test_progress_lines_and_file(void **state)
{
    (void)state;
    fake_job_script(&F, "#!/bin/sh\n"
               "echo 'EBB_PROGRESS 0.25'\n"
               "sleep 0.3\n"
               "echo 'EBB_PROGRESS 2'\n"            /* out of range */
               "echo 'say EBB_PROGRESS 0.9'\n"      /* not at the line's start */
               "echo 'EBB_PROGRESS 0.5x'\n"         /* not a number */
               "printf 'EBB_PROGRESS 0.5\\n' >&2\n"
               "sleep 0.3\n"
               "echo 0.75 > progress.txt\n"
               "sleep 0.6\n",
               "", 0, "", ", \"progress_file\": \"progress.txt\"");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    assert_int_equal(fake_count(&F, "progress"), 3);
    double want[] = {0.25, 0.5, 0.75};
    for (size_t i = 0; i < 3; i++) {
        json_t *p = fake_event(&F, "progress", i);
        assert_non_null(p);
        assert_true(json_real_value(json_object_get(p, "fraction")) == want[i]);
    }
    /* Progress lines are output like any other. */
    assert_true(fake_has(&F.out, "EBB_PROGRESS 0.25\n"));
}

/* ---- ebbd ---- */

static void test_wrong_token_is_refused(void **state)
{
    (void)state;
    fake_job_script(&F, "#!/bin/sh\ntouch ran\n", "", 0, "", "");
    fake_start_agent(&F, "not-the-token", NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 3);
    assert_true(F.refused >= 1);
    assert_int_equal(json_array_size(F.events), 0);
    assert_true(fake_has(&F.agent_err, "refused the agent's token"));
    assert_true(fake_has(&F.agent_err, "no live instance holds this token"));
    char ran[600];
    snprintf(ran, sizeof(ran), "%s/ran", F.dir);
    assert_int_not_equal(access(ran, F_OK), 0);
}

static bool printed_line_10(struct fake *f)
{
    return fake_has(&f->agent_out, "line 10\n") || fake_agent_done(f);
}

static bool printed_line_40(struct fake *f)
{
    return fake_has(&f->agent_out, "line 40\n") || fake_agent_done(f);
}

static bool printed_line_200(struct fake *f)
{
    return fake_has(&f->agent_out, "line 200 ") || fake_agent_done(f);
}

/* The jobs below wait for this file, so what they print after it falls
 * inside the time ebbd is down however slowly the machine runs. */
static void let_job_go(void)
{
    char go[600];
    snprintf(go, sizeof(go), "%s/go", F.dir);
    int fd = open(go, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
}

static void test_ebbd_down_then_back(void **state)
{
    (void)state;
    fake_job_script(&F, "#!/bin/sh\n"
               "i=0\n"
               "while [ $i -lt 40 ]; do i=$((i+1)); echo \"line $i\"; "
               "echo \"EBB_PROGRESS 0.$((i+10))\"; "
               "if [ $i -eq 10 ]; then while [ ! -e go ]; do sleep 0.02; done; fi; "
               "sleep 0.01; done\n",
               "", 0, "", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, printed_line_10);
    fake_ebbd_down(&F);
    size_t before = json_array_size(F.events);
    let_job_go();
    fake_run_until(&F, printed_line_40);
    fake_run_for(&F, 300);
    /* Waiting for ebbd, the job may be over. */
    if (fake_agent_done(&F))
        fail_msg("the agent ended (status %d) while ebbd was down; it said:\n%s", F.agent_status,
                 F.agent_err.data ? F.agent_err.data : "");
    fake_ebbd_up(&F);
    fake_run_until(&F, fake_agent_done);

    assert_int_equal(F.agent_status, 0);
    assert_true(json_array_size(F.events) > before);
    json_t *ex = fake_event(&F, "exited", 0);
    assert_false(fake_ev_bool(ex, "stopped"));
    assert_int_equal(fake_ev_int(ex, "status"), 0);
    /* In order: host, started, progress..., exited last; progress only
     * grows. */
    char *kinds = fake_kinds(&F);
    assert_true(strncmp(kinds, "host,started,progress", 21) == 0);
    assert_non_null(strstr(kinds, ",exited"));
    assert_string_equal(strstr(kinds, ",exited"), ",exited");
    free(kinds);
    double last = -1;
    for (size_t i = 0; i < fake_count(&F, "progress"); i++) {
        double v = json_real_value(json_object_get(fake_event(&F, "progress", i), "fraction"));
        assert_true(v > last);
        last = v;
    }
    assert_true(last == 0.5);
    /* Every line arrived, in order. */
    struct ebb_buf want = {0};
    for (int i = 1; i <= 40; i++)
        ebb_buf_printf(&want, "line %d\nEBB_PROGRESS 0.%d\n", i, i + 10);
    assert_string_equal(F.out.data, want.data);
    ebb_buf_free(&want);
    assert_true(fake_has(&F.agent_err, "ebbd answers again"));
}

static void test_output_bound_drops_oldest_with_marker(void **state)
{
    (void)state;
    fake_job_script(&F, "#!/bin/sh\n"
               "while [ ! -e go ]; do sleep 0.02; done\n"
               "i=0\n"
               "while [ $i -lt 200 ]; do i=$((i+1)); "
               "echo \"line $i ................................................\"; done\n"
               "sleep 0.3\n",
               "", 0, "", "");
    const char *extra[] = {"--log-buffer", "2048", NULL};
    fake_start_agent(&F, FAKE_TOKEN, NULL, extra);
    fake_run_until(&F, started);
    fake_ebbd_down(&F);
    let_job_go();
    fake_run_until(&F, printed_line_200);
    fake_run_for(&F, 300);
    fake_ebbd_up(&F);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    if (!fake_has(&F.out, "bytes of job output were dropped while ebbd could not be reached]\n"))
        fail_msg("no marker of dropped output; ebbd got:\n%s\nthe agent said:\n%s",
                 F.out.data ? F.out.data : "", F.agent_err.data ? F.agent_err.data : "");
    assert_true(fake_has(&F.out, "line 200 ...."));
    assert_false(fake_has(&F.out, "line 1 ...."));
    assert_true(F.out.len < 2048 + 200);
    /* Everything still went through to the agent's own stdout. */
    assert_true(fake_has(&F.agent_out, "line 1 ...."));
}

static void test_sigterm_to_the_agent_stops_the_job(void **state)
{
    (void)state;
    fake_job_script(&F, JOB_CHECKPOINTS, "", 400, "", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, started);
    fake_run_for(&F, 300);
    uv_process_kill(&F.agent, SIGTERM);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    fake_assert_kinds(&F, "host,started,checkpoint,exited");
    assert_true(fake_ev_bool(fake_event(&F, "exited", 0), "checkpointed"));
}

static void test_token_file(void **state)
{
    (void)state;
    const char *tf = fake_script(&F, "token", FAKE_TOKEN "\n");
    char path[600];
    snprintf(path, sizeof(path), "%s", tf);
    fake_job_script(&F, "#!/bin/sh\nexit 0\n", "", 0, "", "");
    const char *extra[] = {"--token-file", path, NULL};
    /* The file wins over a wrong EBB_AGENT_TOKEN. */
    fake_start_agent(&F, "wrong", NULL, extra);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    assert_int_equal(F.refused, 0);
    fake_assert_kinds(&F, "host,started,exited");
}

static void test_gives_up_on_ebbd_after_exit_wait(void **state)
{
    (void)state;
    fake_job_script(&F, "#!/bin/sh\nwhile [ ! -e go ]; do sleep 0.02; done\nexit 3\n", "", 0, "", "");
    const char *extra[] = {"--exit-wait", "700ms", NULL};
    fake_start_agent(&F, FAKE_TOKEN, NULL, extra);
    fake_run_until(&F, started);
    fake_ebbd_down(&F);
    uint64_t t0 = uv_hrtime();
    let_job_go(); /* the job ends after t0, the agent waits 0.7 s after that */
    fake_run_until(&F, fake_agent_done);
    double secs = (double)(uv_hrtime() - t0) / 1e9;
    assert_true(secs >= 0.7);
    /* The job's own status, and a line saying what was not delivered. */
    assert_int_equal(F.agent_status, 3);
    assert_true(fake_has(&F.agent_err, "giving up: ebbd did not take the final report"));
    fake_ebbd_up(&F);
}

static void expect_usage_error(const char *args, const char *words)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "EBB_AGENT_TOKEN=t '%s' %s 2>&1", getenv("EBB_AGENT"), args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[2048];
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
    if (strstr(out, words) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", out, words);
}

/* ---- the packed workdir ---- */

/* Packs DIR/src, seals it as ebbd stores a workdir (checkpoint "workdir",
 * file "<sha256>") into DIR/store/obj, and writes the job document's
 * workdir_archive member into `more` (with a leading comma). */
static void store_workdir(char *more, size_t len, const char *sha_override)
{
    char src[600], tar[600], obj[600];
    snprintf(src, sizeof(src), "%s/src", F.dir);
    snprintf(tar, sizeof(tar), "%s/wd.tar", F.dir);
    snprintf(obj, sizeof(obj), "%s/store", F.dir);
    mkdir(src, 0700);
    mkdir(obj, 0700);
    snprintf(obj, sizeof(obj), "%s/store/obj", F.dir);
    fake_script(&F, "src/code.sh", "#!/bin/sh\necho hello from the workdir\n");
    int fd = open(tar, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    struct ebb__workdir_packed p;
    char err[256];
    assert_int_equal(ebb__workdir_pack(src, fd, NULL, NULL, EBB__WORKDIR_MAX_BYTES, &p, err,
                                       sizeof(err)), 0);
    char sha[65];
    for (size_t i = 0; i < 32; i++)
        snprintf(sha + 2 * i, 3, "%02x", p.sha256[i]);
    struct ebb__ckpt_key key;
    assert_int_equal(ebb__ckpt_key_generate(&key), 0);
    char hex[EBB__CKPT_KEY_HEX_SIZE];
    ebb__ckpt_key_to_hex(&key, hex);
    int out = open(obj, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(out >= 0 && lseek(fd, 0, SEEK_SET) == 0);
    struct ebb__ckpt_sums sums;
    struct ebb__ckpt_error cerr;
    assert_int_equal(ebb__ckpt_encrypt(&key, "workdir", sha, ebb__ckpt_fd_read, &fd,
                                       ebb__ckpt_fd_write, &out, &sums, &cerr), 0);
    close(out);
    close(fd);
    snprintf(more, len, ", \"workdir_archive\": {\"url\": \"file://%s\", \"sha256\": "
             "\"%s\", \"size\": %llu, \"stored_size\": %llu, \"key\": \"%s\"}", obj,
             sha_override ? sha_override : sha, (unsigned long long)p.size,
             (unsigned long long)sums.stored_size, hex);
}

static void run_in_workdir(const char *more, const char *disk)
{
    fake_next_run(&F);
    fake_set_job(&F, JOB_DOC, "[\"sh\", \"-c\", \"pwd; ./code.sh\"]", "false", 0, "",
                 F.ckpt_dir, "", more);
    const char *const extra[] = {"--disk", disk, NULL};
    fake_start_agent(&F, FAKE_TOKEN, NULL, extra);
    fake_run_until(&F, fake_agent_done);
}

/* The job's workdir comes from the store: decrypted, verified, unpacked
 * into <disk>/work/<job id>, where the job runs; a tampered object, or
 * one that is not the tar submitted, never starts the job. */
static void test_workdir_archive(void **state)
{
    (void)state;
    char more[1024], disk[600], want[800], obj[600];
    store_workdir(more, sizeof(more), NULL);
    snprintf(disk, sizeof(disk), "%s/disk", F.dir);
    run_in_workdir(more, disk);
    assert_int_equal(F.agent_status, 0);
    snprintf(want, sizeof(want), "%s/work/j-20261130-0001\nhello from the workdir\n", disk);
    assert_true(fake_has(&F.out, want));

    /* One byte of the stored object changed: refused, and nothing left. */
    snprintf(obj, sizeof(obj), "%s/store/obj", F.dir);
    int fd = open(obj, O_RDWR | O_CLOEXEC);
    char c;
    assert_int_equal(pread(fd, &c, 1, 100), 1);
    c ^= 1;
    assert_int_equal(pwrite(fd, &c, 1, 100), 1);
    close(fd);
    snprintf(disk, sizeof(disk), "%s/disk2", F.dir);
    run_in_workdir(more, disk);
    assert_int_equal(F.agent_status, 127);
    fake_assert_kinds(&F, "host,exited");
    assert_true(fake_has(&F.agent_err, "cannot start the job: workdir: the stored workdir is refused"));
    snprintf(want, sizeof(want), "%s/work", disk);
    DIR *d = opendir(want);
    assert_non_null(d);
    struct dirent *de;
    int entries = 0;
    while ((de = readdir(d)) != NULL)
        entries += de->d_name[0] != '.' || (de->d_name[1] != '\0' && de->d_name[1] != '.');
    closedir(d);
    assert_int_equal(entries, 0);

    /* Another tar's hash: not the workdir submitted. */
    store_workdir(more, sizeof(more),
                  "0000000000000000000000000000000000000000000000000000000000000000");
    snprintf(disk, sizeof(disk), "%s/disk3", F.dir);
    run_in_workdir(more, disk);
    assert_int_equal(F.agent_status, 127);
    assert_true(fake_has(&F.agent_err, "cannot start the job: workdir: the stored workdir is refused"));
}

/* The same through a presigned GET (the fake ebbd's /store/obj, which
 * refuses any Authorization header): a 503 is retried, and the object
 * downloaded into the disk, verified and unpacked. */
static void test_workdir_archive_over_http(void **state)
{
    (void)state;
    char more[1024], disk[600], want[800], obj[600];
    store_workdir(more, sizeof(more), NULL);
    snprintf(obj, sizeof(obj), "%s/store/obj", F.dir);
    FILE *fp = fopen(obj, "rb");
    assert_non_null(fp);
    static char buf[1 << 16];
    F.object_len = fread(buf, 1, sizeof(buf), fp);
    fclose(fp);
    F.object = malloc(F.object_len);
    assert_non_null(F.object);
    memcpy(F.object, buf, F.object_len);
    F.object_fail_first = 1;
    char url[700], *at = strstr(more, "file://");
    assert_non_null(at);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/store/obj", F.ebbd_port);
    char edited[1200];
    snprintf(edited, sizeof(edited), "%.*s%s%s", (int)(at - more), more, url,
             at + strlen("file://") + strlen(obj));
    snprintf(disk, sizeof(disk), "%s/disk", F.dir);
    run_in_workdir(edited, disk);
    assert_int_equal(F.agent_status, 0);
    assert_int_equal(F.object_gets, 2); /* the 503, then the object */
    snprintf(want, sizeof(want), "%s/work/j-20261130-0001\nhello from the workdir\n", disk);
    assert_true(fake_has(&F.out, want));

    /* A body cut short is refused, and the job never starts. */
    F.object_len -= 10;
    F.object_gets = 0;
    snprintf(disk, sizeof(disk), "%s/disk2", F.dir);
    run_in_workdir(edited, disk);
    assert_int_equal(F.agent_status, 127);
    assert_true(fake_has(&F.agent_err, "cannot start the job: workdir: the stored workdir is "));
}

static void test_bad_options(void **state)
{
    (void)state;
    expect_usage_error("", "--ebbd URL is required");
    expect_usage_error("--ebbd http://x --metadata-kind gcp", "\"gcp\" is not aws, alibaba or none");
    expect_usage_error("--ebbd http://x --metadata-interval 2", "not a positive duration");
    expect_usage_error("--ebbd http://x --log-buffer 10", "byte count");
    expect_usage_error("--ebbd http://x --token-file /nonexistent/t", "/nonexistent/t");
    expect_usage_error("--ebbd http://x -- python3 train.py", "the job comes from ebbd");
    expect_usage_error("--ebbd http://x --disk rel/disk", "not an absolute path");
    expect_usage_error("--ebbd http://x --sysfs sys", "--sysfs: \"sys\" is not an absolute");
}

/* ---- examples/train.py end to end ---- */

static void train_job(const char *model, const char *ckpt)
{
    const char *root = getenv("EBB_SOURCE_ROOT");
    assert_non_null(root);
    char argv[1024];
    snprintf(argv, sizeof(argv), "[\"python3\", \"%s/examples/train.py\", \"--out\", "
             "\"%s/%s\", \"--steps\", \"1500\", \"--step-sleep\", \"0.002\"]",
             root, F.dir, model);
    fake_set_job(&F, JOB_DOC, argv, "false", 0, F.dir, F.ckpt_dir, ckpt, "");
}

/* ebbd asks for a checkpoint past 20 % and says stop past 40 %. (Not a
 * timer: a signal that came before Python installed its handlers would
 * kill the job, and Python can take a second to start on a busy machine.) */
static void checkpoint_then_stop(struct fake *f, json_t *ev, struct ebb__httpd_response *res)
{
    int *asked = f->user;
    double fr = json_real_value(json_object_get(ev, "fraction"));
    if (strcmp(json_string_value(json_object_get(ev, "kind")), "progress") != 0)
        return;
    if (fr >= 0.4) {
        ebb__httpd_set_bodyf(res, "{\"command\": \"stop\", \"grace_ms\": 10000}");
    } else if (fr >= 0.2 && !*asked) {
        *asked = 1;
        ebb__httpd_set_bodyf(res, "{\"command\": \"checkpoint\"}");
    }
}

static char *slurp(const char *name)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", F.dir, name);
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return NULL;
    char *text = calloc(1, 65536);
    assert_non_null(text);
    size_t n = fread(text, 1, 65535, fp);
    fclose(fp);
    text[n] = '\0';
    return text;
}

static void test_train_py_resumes_bit_for_bit(void **state)
{
    (void)state;
    /* Uninterrupted, in a checkpoint directory of its own. */
    train_job("straight.model", "");
    char keep[300];
    snprintf(keep, sizeof(keep), "%s", F.ckpt_dir);
    snprintf(F.ckpt_dir, sizeof(F.ckpt_dir), "%s/ckpt-straight", F.dir);
    train_job("straight.model", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    snprintf(F.ckpt_dir, sizeof(F.ckpt_dir), "%s", keep);

    /* A checkpoint on ebbd's request, then stopped... */
    fake_next_run(&F);
    int asked = 0;
    F.hook = checkpoint_then_stop;
    F.user = &asked;
    train_job("resumed.model", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    json_t *ex = fake_event(&F, "exited", 0);
    assert_true(fake_ev_bool(ex, "stopped"));
    assert_true(fake_ev_bool(ex, "checkpointed"));
    assert_int_equal(fake_count(&F, "checkpoint"), 2);
    assert_true(fake_ev_bool(fake_event(&F, "checkpoint", 0), "periodic"));
    assert_false(fake_ev_bool(fake_event(&F, "checkpoint", 1), "periodic"));
    char *none = slurp("resumed.model");
    assert_null(none);
    const char *last = fake_ev_str(fake_event(&F, "checkpoint", fake_count(&F, "checkpoint") - 1),
                              "path");
    char want[700];
    snprintf(want, sizeof(want), "%s", last);

    /* ... and resumed from its newest checkpoint. */
    fake_next_run(&F);
    train_job("resumed.model", "");
    fake_start_agent(&F, FAKE_TOKEN, NULL, NULL);
    fake_run_until(&F, fake_agent_done);
    assert_int_equal(F.agent_status, 0);
    assert_string_equal(fake_ev_str(fake_event(&F, "started", 0), "resume_from"), want);
    assert_true(fake_has(&F.out, "resuming at step"));

    char *a = slurp("straight.model"), *b = slurp("resumed.model");
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_env_argv_no_shell, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shell_true, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_workdir_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_imds_notice_aws, setup, teardown),
        cmocka_unit_test_setup_teardown(test_imds_notice_alibaba, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grace_kills_a_job_ignoring_the_signal,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_periodic_checkpoints_and_pruning, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_half_written_checkpoint_never_offered, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_progress_lines_and_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_token_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ebbd_down_then_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_bound_drops_oldest_with_marker, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_to_the_agent_stops_the_job, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_token_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gives_up_on_ebbd_after_exit_wait, setup,
                                        teardown),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test_setup_teardown(test_workdir_archive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_workdir_archive_over_http, setup, teardown),
        cmocka_unit_test_setup_teardown(test_train_py_resumes_bit_for_bit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
