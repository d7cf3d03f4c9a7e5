/* Starting and stopping the test servers (servers.h). */
#include "servers.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static const char *source_root(void)
{
    const char *r = getenv("EBB_SOURCE_ROOT");
    return r != NULL ? r : ".";
}

/* Runs argv with stdout on a pipe and reads its "PORT n" line (30 s at
 * most: botocore's import and node's start take a moment). */
static void spawn(struct test_server *s, char *const argv[])
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The server dies with the test, also when an assertion ends it
         * early. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    s->pid = pid;
    char line[128];
    size_t n = 0;
    while (n < sizeof(line) - 1) {
        struct pollfd pfd = {.fd = p[0], .events = POLLIN};
        int r = poll(&pfd, 1, 30000);
        if (r <= 0)
            break;
        ssize_t k = read(p[0], line + n, 1);
        if (k <= 0)
            break;
        if (line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    close(p[0]);
    if (sscanf(line, "PORT %d", &s->port) != 1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("%s did not start (it printed \"%s\"); for s3rver run "
                 "`bash .ci/dev test` or `npm ci` in tests/objstore", argv[1], line);
    }
}

static void make_dir(struct test_server *s)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/ebb-objstore-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
}

void fake_start(struct test_server *s, const char *bucket, int page_size, long min_part)
{
    fake_start_flavour(s, "s3", bucket, page_size, min_part);
}

void fake_start_flavour(struct test_server *s, const char *flavour, const char *bucket,
                        int page_size, long min_part)
{
    make_dir(s);
    snprintf(s->log, sizeof(s->log), "%s/requests.log", s->dir);
    snprintf(s->faults, sizeof(s->faults), "%s/faults.json", s->dir);
    char script[1024], pages[32], part[32];
    snprintf(script, sizeof(script), "%s/tests/objstore/fake_s3.py", source_root());
    snprintf(pages, sizeof(pages), "%d", page_size);
    snprintf(part, sizeof(part), "%ld", min_part);
    int oss = strcmp(flavour, "oss") == 0;
    char *const argv[] = {"python3", script, "--bucket", (char *)bucket,
                          "--flavour", (char *)flavour,
                          "--region", oss ? "cn-hangzhou" : "us-east-1",
                          "--access-key", FAKE_AKID, "--secret-key", FAKE_SECRET,
                          "--log", s->log, "--faults", s->faults,
                          "--page-size", pages, "--min-part", part, NULL};
    spawn(s, argv);
}

void s3rver_start(struct test_server *s, const char *bucket)
{
    make_dir(s);
    char script[1024];
    snprintf(script, sizeof(script), "%s/tests/objstore/run_s3rver.js", source_root());
    char *const argv[] = {"node", script, s->dir, (char *)bucket, NULL};
    spawn(s, argv);
}

void server_stop(struct test_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
    assert_int_equal(system(cmd), 0);
}

void fake_faults(const struct test_server *s, const char *json)
{
    FILE *f = fopen(s->faults, "w");
    assert_non_null(f);
    fputs(json, f);
    assert_int_equal(fclose(f), 0);
}

int fake_count(const struct test_server *s, const char *op, const char *fragment)
{
    FILE *f = fopen(s->log, "r");
    if (f == NULL)
        return 0;
    char line[8192], want[128];
    snprintf(want, sizeof(want), "\"op\": \"%s\"", op);
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strstr(line, want) != NULL && (fragment == NULL || strstr(line, fragment) != NULL))
            n++;
    fclose(f);
    return n;
}
