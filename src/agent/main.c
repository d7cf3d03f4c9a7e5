/* ebb-agent: runs beside a job on its instance.
 *
 * This first version starts the job, gives it ebb's environment, forwards
 * a stop request to it as its checkpoint signal, and exits with the job's
 * own status. Reporting to ebbd and watching the provider's metadata
 * endpoint for preemption notices build on this loop.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "ebb_build_config.h"
#include "log.h"

struct agent {
    uv_loop_t loop;
    uv_process_t job;
    uv_signal_t sigterm;
    uv_signal_t sigint;
    int checkpoint_signal;
    int exit_code;
};

static void usage(FILE *out)
{
    fputs("Usage: ebb-agent [--job-id ID] [--checkpoint-dir DIR] [--signal SIG]\n"
          "                 [--resume-from PATH] -- COMMAND [ARGS...]\n"
          "\n"
          "Runs COMMAND (exec'd directly, no shell) as an ebb job with\n"
          "EBB_JOB_ID, EBB_CHECKPOINT_DIR, EBB_RESUME_FROM and EBB_SIGNAL in its\n"
          "environment. SIGTERM or SIGINT sent to the agent reaches the job as\n"
          "its checkpoint signal (default SIGUSR1). The agent exits with the\n"
          "job's exit status (128+N when the job died of signal N).\n"
          "\n"
          "  --version  print the version and exit\n"
          "  --help     print this help and exit\n", out);
}

static int signal_from_name(const char *name)
{
    static const struct {
        const char *name;
        int sig;
    } table[] = {
        {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGTERM", SIGTERM},
        {"SIGINT", SIGINT},   {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(table[i].name, name) == 0 || strcmp(table[i].name + 3, name) == 0)
            return table[i].sig;
    return 0;
}

static void on_job_exit(uv_process_t *proc, int64_t status, int term_signal)
{
    struct agent *a = proc->data;
    a->exit_code = term_signal ? 128 + term_signal : (int)status;
    ebb__info("job exited with %s %d", term_signal ? "signal" : "status",
              term_signal ? term_signal : (int)status);
    uv_close((uv_handle_t *)proc, NULL);
    uv_close((uv_handle_t *)&a->sigterm, NULL);
    uv_close((uv_handle_t *)&a->sigint, NULL);
}

static void on_stop_signal(uv_signal_t *handle, int signum)
{
    struct agent *a = handle->data;
    ebb__info("%s received: asking the job to checkpoint (signal %d)",
              strsignal(signum), a->checkpoint_signal);
    uv_process_kill(&a->job, a->checkpoint_signal);
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"job-id", required_argument, NULL, 'j'},
        {"checkpoint-dir", required_argument, NULL, 'c'},
        {"resume-from", required_argument, NULL, 'r'},
        {"signal", required_argument, NULL, 's'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *job_id = "", *checkpoint_dir = "", *resume_from = "";
    const char *signal_name = "SIGUSR1";
    for (;;) {
        int c = getopt_long(argc, argv, "+", options, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'j': job_id = optarg; break;
        case 'c': checkpoint_dir = optarg; break;
        case 'r': resume_from = optarg; break;
        case 's': signal_name = optarg; break;
        case 'V':
            printf("ebb-agent %s\n", EBB_VERSION);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    struct agent a = {.exit_code = 1};
    a.checkpoint_signal = signal_from_name(signal_name);
    if (a.checkpoint_signal == 0) {
        fprintf(stderr, "ebb-agent: --signal: \"%s\" is not one of SIGUSR1, "
                "SIGUSR2, SIGTERM, SIGINT, SIGHUP, SIGQUIT\n", signal_name);
        return 2;
    }
    if (optind >= argc) {
        fprintf(stderr, "ebb-agent: no command to run\n");
        usage(stderr);
        return 2;
    }
    setenv("EBB_JOB_ID", job_id, 1);
    setenv("EBB_CHECKPOINT_DIR", checkpoint_dir, 1);
    setenv("EBB_RESUME_FROM", resume_from, 1);
    setenv("EBB_SIGNAL", signal_name, 1);

    uv_loop_init(&a.loop);
    uv_signal_init(&a.loop, &a.sigterm);
    uv_signal_init(&a.loop, &a.sigint);
    a.sigterm.data = a.sigint.data = &a;
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_INHERIT_FD, .data.fd = 0},
        {.flags = UV_INHERIT_FD, .data.fd = 1},
        {.flags = UV_INHERIT_FD, .data.fd = 2},
    };
    uv_process_options_t po = {
        .exit_cb = on_job_exit,
        .file = argv[optind],
        .args = argv + optind,
        .stdio_count = 3,
        .stdio = stdio,
    };
    a.job.data = &a;
    int rc = uv_spawn(&a.loop, &a.job, &po);
    if (rc != 0) {
        fprintf(stderr, "ebb-agent: cannot start %s: %s\n", argv[optind],
                uv_strerror(rc));
        uv_close((uv_handle_t *)&a.job, NULL);
        uv_close((uv_handle_t *)&a.sigterm, NULL);
        uv_close((uv_handle_t *)&a.sigint, NULL);
        uv_run(&a.loop, UV_RUN_DEFAULT);
        uv_loop_close(&a.loop);
        return 127;
    }
    uv_signal_start(&a.sigterm, on_stop_signal, SIGTERM);
    uv_signal_start(&a.sigint, on_stop_signal, SIGINT);
    uv_run(&a.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&a.loop) != 0)
        ebb__error("event loop did not close cleanly");
    return a.exit_code;
}
