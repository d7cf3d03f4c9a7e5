/* Running a program as a child on the loop and keeping what it prints:
 * the host probe's nvidia-smi runs (hostprobe.c) and the GPU
 * utilisation samples (gpuwatch.c). */
#ifndef EBB_AGENT_CAPTURE_H
#define EBB_AGENT_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

/* The most of a run's standard output kept; the rest is dropped. */
#define AGENT_CAPTURE_MAX (64 * 1024)

/* `ok`: it exited 0 within its time (otherwise why not is in the log,
 * under the run's name); `output`: its standard output, NUL-terminated,
 * borrowed for the call. */
typedef void (*agent_capture_cb)(void *arg, bool ok, const char *output);

/* Runs argv[0] (a path) with `argv` on `loop`, standard input closed,
 * standard error the agent's, killed when it has not exited after
 * `timeout_ms`. `what` names it in the log. Calls `cb` once, when it is
 * over and its handles are closed (also when it could not be started).
 * Returns 0 or EBB_ENOMEM (then `cb` is never called). */
int agent_capture_start(uv_loop_t *loop, char *const argv[], int64_t timeout_ms,
                        const char *what, agent_capture_cb cb, void *arg);

/* `prog`'s full path when it is an executable on PATH, else NULL. Caller
 * frees. */
char *agent_find_program(const char *prog);

#endif
