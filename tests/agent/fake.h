/* A fake ebbd and a fake metadata service on 127.0.0.1, and the real
 * ebb-agent run against them as a child process, all on one uv loop.
 *
 * The fake ebbd checks the bearer token on every request (401 otherwise),
 * serves the job document, records every event and the forwarded output,
 * and answers events with {"command": "none"} unless a test's hook says
 * otherwise. The fake metadata service speaks IMDSv2 (aws) or Alibaba's
 * variant: a notice query without a token it issued gets 401.
 */
#ifndef EBB_TESTS_AGENT_FAKE_H
#define EBB_TESTS_AGENT_FAKE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "base/str.h"
#include "io/httpd.h"

#define FAKE_TOKEN "instance-token-7f3a"

struct fake;
typedef void (*fake_event_hook)(struct fake *f, json_t *event,
                                struct ebb__httpd_response *res);
/* Answers a request the fake ebbd does not know itself (after the token
 * check); returns false to leave it a 404. */
typedef bool (*fake_route_fn)(struct fake *f, const struct ebb__httpd_request *req,
                              struct ebb__httpd_response *res);

struct fake {
    uv_loop_t loop;
    uv_timer_t watchdog;
    bool watchdog_fired;
    char dir[256];              /* the test's own temporary directory */
    char ckpt_dir[300];         /* dir/ckpt */

    /* ebbd */
    struct ebb__httpd *ebbd;
    uint16_t ebbd_port;
    int ebbd_hold_fd;           /* while "down": a socket holding the port, or -1 */
    char *job_json;             /* served by GET /v1/agent/job */
    json_t *events;             /* every event received, in order */
    struct ebb_buf out, err;   /* forwarded output, per stream */
    int refused;                /* requests answered 401 */
    int log_posts;
    fake_event_hook hook;
    fake_route_fn route;        /* the store's endpoints (fake_store.c) */
    void *user;
    /* A stored object served at /store/obj without a token (a presigned
     * GET's stand-in): the first object_fail_first GETs answer 503. */
    char *object;
    size_t object_len;
    int object_gets, object_fail_first;

    /* metadata */
    struct ebb__httpd *imds;
    bool alibaba;
    char imds_token[32];
    int imds_tokens;            /* tokens issued */
    int imds_token_uses;        /* notice queries on the current token */
    int imds_token_max_uses;    /* 0: unlimited; else 401 after that many */
    int imds_ok_queries;        /* notice queries with a valid token */
    int imds_refused;           /* notice queries answered 401 */
    bool notice;                /* a notice is posted */
    uint64_t notice_posted_ns;  /* uv_hrtime() when it was */

    /* the agent */
    uv_process_t agent;
    uv_pipe_t agent_pipes[2];
    struct ebb_buf agent_out, agent_err;
    int agent_handles;
    bool agent_exited;
    int64_t agent_status;
    int agent_signal;
};

/* Sets up loop, fake servers, temporary directory and watchdog. */
void fake_init(struct fake *f, int watchdog_ms);

/* Kills the agent if it still runs, closes everything, checks the loop
 * closes cleanly, removes the directory. */
void fake_close(struct fake *f);

/* Sets the job document from a printf format (copied). */
void fake_set_job(struct fake *f, const char *fmt, ...) EBB_PRINTF(2, 3);

/* Writes an executable file dir/name with `text`; returns its path
 * (static buffer, valid until the next call). */
const char *fake_script(struct fake *f, const char *name, const char *text);

/* Starts ebb-agent with --ebbd, --metadata (and --metadata-kind when
 * alibaba), a 100 ms metadata interval, `extra` arguments (NULL-terminated,
 * may be NULL), EBB_AGENT_TOKEN=`token` and PATH prefixed with `path_prefix`
 * (NULL: unchanged). */
void fake_start_agent(struct fake *f, const char *token, const char *path_prefix,
                      const char *const *extra);

/* Runs the loop until `done(f)` is true; fails the test on the watchdog. */
void fake_run_until(struct fake *f, bool (*done)(struct fake *f));
bool fake_agent_done(struct fake *f);

/* Runs the loop for `ms` milliseconds. */
void fake_run_for(struct fake *f, int ms);

/* The number of events of `kind`, and the nth (0-based) of them or NULL. */
size_t fake_count(const struct fake *f, const char *kind);
json_t *fake_event(const struct fake *f, const char *kind, size_t nth);

/* The kinds received, comma-separated, heartbeats left out (caller frees). */
char *fake_kinds(const struct fake *f);

/* Takes the fake ebbd down (connections refused) and back on its port. */
void fake_ebbd_down(struct fake *f);
void fake_ebbd_up(struct fake *f);

/* Posts a termination notice at the fake metadata service. */
void fake_post_notice(struct fake *f);

/* Forgets the previous run's events and output (and the hook), for
 * another agent run in the same test. */
void fake_next_run(struct fake *f);

/* The script `text` as the job (argv [script, args...]) of a JOB_DOC
 * document (jobs.h) with STEPS `steps`, `ckpt` checkpoint fields and
 * `more` top-level fields, in f->dir with f->ckpt_dir. */
void fake_job_script(struct fake *f, const char *text, const char *args, int steps,
                     const char *ckpt, const char *more);

/* tests/agent/fake-nvidia-smi (its path in $FAKE_NVIDIA_SMI) linked as
 * dir/bin/nvidia-smi, told the GPUs `gpus` (its nvidia-smi.gpus: lines
 * "name, memory, width, gen") and the drivers `drivers` (nvidia-smi.drivers:
 * one a line, each run of the agent takes the next), NULL: its defaults.
 * Returns the bin directory, for fake_start_agent's PATH (a static
 * buffer). */
const char *fake_nvidia_smi(struct fake *f, const char *gpus, const char *drivers);

/* Checks on what the agent sent: `b` holds `needle`; member `key` of
 * event `ev` (which must exist and have it, of that type). */
bool fake_has(const struct ebb_buf *b, const char *needle);
int64_t fake_ev_int(json_t *ev, const char *key);
bool fake_ev_bool(json_t *ev, const char *key);
const char *fake_ev_str(json_t *ev, const char *key);

/* Fails the test unless the kinds received (fake_kinds) are `want`,
 * saying what the agent logged. */
void fake_assert_kinds(struct fake *f, const char *want);

#endif
