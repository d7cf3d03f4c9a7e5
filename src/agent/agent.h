/* ebb-agent: the program that runs beside a job on its instance.
 *
 * main.c reads the options, fetches the job document from ebbd, probes
 * the host and hands over to run.c, which starts the job and watches it:
 * heartbeats, progress, checkpoints, metadata notices, ebbd's commands,
 * the grace period, and the final `exited` report. Everything runs on one
 * libuv loop; timers come from one real-mode ebb clock.
 */
#ifndef EBB_AGENT_AGENT_H
#define EBB_AGENT_AGENT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "agent/ckpt.h"
#include "agent/gpuwatch.h"
#include "agent/imds.h"
#include "agent/job.h"
#include "agent/jobdoc.h"
#include "agent/netprobe.h"
#include "agent/reporter.h"
#include "io/ckpt_object.h"
#include "io/clock.h"
#include "io/http_client.h"

/* Exit statuses of the agent itself (otherwise it exits with the job's). */
#define AGENT_EXIT_USAGE 2      /* bad options, unreadable token file */
#define AGENT_EXIT_REFUSED 3    /* ebbd refused the token or sent a bad job */
#define AGENT_EXIT_RELEASED 4   /* ebbd released the host: job not started */
#define AGENT_EXIT_NO_EBBD 5    /* ebbd never answered within --exit-wait */

struct agent_options {
    const char *ebbd_url;
    const char *token_file;
    const char *ebbd_pin;       /* "sha256//...": trust ebbd by its key */
    const char *ebbd_ca;        /* PEM file: verify ebbd's chain with it */
    const char *metadata_url;   /* NULL: the kind's default */
    enum agent_md_kind metadata_kind;
    int64_t metadata_interval_ms;
    int64_t exit_wait_ms;       /* how long to wait for ebbd at the end */
    size_t log_buffer;          /* bytes of job output kept for ebbd */
    int64_t scan_ms;            /* checkpoint dir and progress file checks */
    const char *disk;           /* --disk, else $HOME/.local/state/ebb; NULL: none */
    bool disk_given;            /* --disk was given: the instance's own disk */
    const char *sysfs;          /* --sysfs, default /sys: link speeds */
};

enum agent_state {
    AGENT_FETCHING,   /* asking ebbd for the job document */
    AGENT_PROBING,    /* host probe and its `host` event */
    AGENT_RUNNING,    /* the job runs */
    AGENT_FINISHING,  /* the job is over; delivering `exited` and output */
    AGENT_DONE,
};

struct agent {
    struct agent_options opt;
    char *token;
    uv_loop_t loop;
    struct ebb__clock clock;
    struct ebb__http *http;
    struct agent_reporter rep;
    struct agent_imds imds;
    struct agent_jobdoc doc;
    struct agent_job job;
    uv_signal_t sigterm, sigint;
    enum agent_state state;
    int exit_code;

    bool enrolling;                   /* trading an enrolment token */
    int fetch_failures;
    struct ebb__timer fetch_timer;    /* retries enrolling and fetching */
    struct ebb__timer give_up_timer;  /* bounds fetching and finishing */

    /* Probing (main.c). */
    struct agent_net net;             /* the network probe's findings */
    struct agent_gpuwatch gpus;       /* utilisation samples, on when it found GPUs */
    json_t *host_event;               /* the `host` event, sent again while ebbd says wait */
    struct ebb__timer host_timer;     /* the next `host` while waiting */
    char *wait_reason;                /* the last wait's reason (logged once) */
    char **gang_env;                  /* ebbd's env in its answer to host, NULL: none */

    /* Running. */
    char **job_argv;                  /* NULL-terminated; strings borrowed */
    char **job_extra_env;             /* doc env + gang env + EBB_* strings (owned) */
    size_t job_env_borrowed;          /* how many of them are the doc's and gang's */
    char **job_envp;
    char *resume_from;
    int ckpt_fd;                      /* the checkpoint directory; -1: none */
    struct agent_ckpt_list known;     /* checkpoints already reported */
    struct ebb__timer heartbeat_timer, periodic_timer, scan_timer, grace_timer;
    int64_t signal_sent_at;           /* last checkpoint signal not yet followed
                                       * by a checkpoint, 0 = none */
    bool stopping, killed, checkpointed_since_stop;
    double last_progress;
    char last_progress_file[64];

    /* The checkpoint store (doc.has_store; store.h). */
    struct ebb__ckpt_key key;         /* the job's, when doc.store.encrypt */
    struct agent_resume *resume;      /* bringing a stored checkpoint back */
    struct agent_upload *upload;      /* the one in flight, NULL: none */
    char *upload_next;                /* the newest waiting, NULL: none */
    bool upload_next_periodic, upload_cancelled;
    int64_t upload_next_duration;
    double upload_next_fraction;      /* the progress when it appeared; < 0: none */
    double upload_rate;               /* stored bytes per ms last measured; 0: none */
    uint64_t last_stored_bytes;       /* of the last checkpoint staged */
    int64_t last_write_ms;            /* the job's last checkpoint write time */
    int64_t last_complete_ms;         /* ebbd's commit-to-durable of the last upload */
    bool final_skipped;               /* the final checkpoint did not fit */
    bool exit_waiting;                /* the job is over; `exited` waits for the upload */
    int64_t exit_status;
    int exit_signal;
    int64_t resume_id, download_bytes, download_ms;  /* resume_id 0: none */
};

/* options.c: parses argv into `opt`; returns 0, or an exit status after
 * printing (help/version: 0 with *done set). */
int agent_options_parse(struct agent_options *opt, int argc, char **argv, bool *done);

/* options.c: the token from --token-file or EBB_AGENT_TOKEN, in a new
 * string; NULL (with a message printed) when there is none. */
char *agent_read_token(const struct agent_options *opt);

/* enrol.c: whether `token` is a one-time enrolment token. */
bool agent_token_is_enrolment(const char *token);

/* enrol.c: trades a->token (an enrolment token) for the session token at
 * POST /v1/enrol, then fetches the job. Retries what may pass (no answer,
 * 5xx, 429) with backoff; a refusal ends the agent (AGENT_EXIT_REFUSED). */
void agent_enrol(struct agent *a);

/* main.c: asks ebbd for the job document (and goes on from there). */
void agent_fetch_job(struct agent *a);

/* run.c: initialises the running phase's timers (once, at setup). */
void agent_run_init(struct agent *a);

/* run.c: starts the job described by a->doc; on failure reports it as
 * exited and finishes. */
void agent_run_start(struct agent *a);

/* workdir.c: makes the job document's workdir_archive, when there is
 * one, the job's working directory (a->doc.workdir: <disk>/work/<job id>,
 * <disk> the --disk option or $HOME/.local/state/ebb), then calls
 * `done(a, NULL)`, or `done(a, why)` when it cannot; without one, `done`
 * at once. */
typedef void (*agent_workdir_done)(struct agent *a, const char *why);
void agent_workdir_prepare(struct agent *a, agent_workdir_done done);

/* run.c: the job cannot be started: ebbd hears `exited` with status 127
 * and error "cannot start the job: <why>", which also goes to the job's
 * log. Called while AGENT_RUNNING. */
void agent_run_fail_start(struct agent *a, const char *why);

/* run.c: asks the job to checkpoint and stop within `grace_ms`. */
void agent_run_stop(struct agent *a, int64_t grace_ms, const char *reason);

/* run.c: ebbd's reply to an event, while the job runs. */
void agent_run_command(struct agent *a, const char *kind, json_t *reply);

/* run.c: releases what agent_run_start took. */
void agent_run_free(struct agent *a);

/* main.c: the job is over and ebbd has everything (or we gave up). */
void agent_finish(struct agent *a);

/* main.c: the reporter's queues are empty. */
void agent_check_done(struct agent *a);

#endif
