/* The job process: spawned in its own process group (and session), its
 * stdout and stderr read through pipes, passed through to the agent's own
 * and handed to the caller, with `EBB_PROGRESS <fraction>` lines picked
 * out on the way.
 */
#ifndef EBB_AGENT_JOB_H
#define EBB_AGENT_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

enum agent_stream { AGENT_STDOUT = 0, AGENT_STDERR = 1 };

struct agent_job_cbs {
    void (*output)(void *arg, enum agent_stream stream, const char *data, size_t len);
    void (*progress)(void *arg, double fraction);
    /* The job is over: it exited (`status`, or the `signal` that ended
     * it), its output is read and its handles are closed. */
    void (*exited)(void *arg, int64_t status, int signal);
    void *arg;
};

/* A line longer than this is passed through but never read as progress. */
#define AGENT_LINE_MAX 256

struct agent_linescan {
    char buf[AGENT_LINE_MAX];
    size_t len;
    bool overlong;
};

struct agent_job {
    uv_process_t proc;
    uv_pipe_t pipes[2];
    uv_timer_t drain;   /* bounds the wait for the pipes after the exit */
    struct agent_linescan scan[2];
    struct agent_job_cbs cbs;
    int pid;
    int open_handles;
    bool exited;
    bool eof[2];
    int64_t status;
    int term_signal;
};

/* Starts `argv` (argv[0] looked up on PATH, no shell) in `workdir` (NULL or
 * "": the agent's) with the environment `envp` ("NAME=value", NULL-
 * terminated). Returns 0, after which `cbs->exited` runs exactly once; or
 * a negative libuv code (the program cannot be run), after which no
 * callback runs and the handles are already closing. */
int agent_job_start(struct agent_job *job, uv_loop_t *loop, char **argv,
                    char **envp, const char *workdir,
                    const struct agent_job_cbs *cbs);

/* Sends `sig` to the job's main process. Returns 0 or a libuv code. */
int agent_job_signal(struct agent_job *job, int sig);

/* SIGKILL to the job's whole process group. */
void agent_job_kill_group(struct agent_job *job);

/* Feeds output to a line scanner; calls `progress` for every complete
 * "EBB_PROGRESS <fraction>" line with 0 <= fraction <= 1. */
void agent_linescan_feed(struct agent_linescan *ls, const char *data, size_t len,
                         void (*progress)(void *arg, double fraction), void *arg);

/* Reads an "EBB_PROGRESS <fraction>" line (no newline); true and `*out`
 * when it is one with a fraction in [0, 1]. */
bool agent_progress_parse(const char *line, size_t len, double *out);

/* Builds the job's environment: the agent's own `environ` without
 * EBB_AGENT_TOKEN (the job never sees the agent's credential) and without
 * the names `extra` sets, then `extra` ("NAME=value" strings, later ones
 * winning). Returns a NULL-terminated array whose strings all point into
 * `environ` or `extra` (free only the array), or NULL. */
char **agent_job_environ(char *const *extra, size_t n_extra);

#endif
