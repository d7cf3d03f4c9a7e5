/* ebbd: the daemon's life from start to a clean exit.
 *
 * Start-up validates everything that comes from the user (ebb.yaml, the
 * plugins it names and their sections) before it touches the state
 * directory, so a bad configuration exits with code 2 and changes nothing.
 * Then it takes the state lock, opens the store, starts the plugins and the
 * API socket, and runs one libuv loop on one thread until SIGTERM/SIGINT.
 * Shutdown stops accepting requests, answers those in flight, cancels HTTP,
 * destroys the plugins and closes every handle, so that uv_loop_close()
 * succeeds and leak checkers mean something.
 */
#ifndef EBB_DAEMON_H
#define EBB_DAEMON_H

#include <uv.h>

#include "base/histogram.h"
#include "config/config_file.h"
#include "daemon/agent_api.h"
#include "engine/engine.h"
#include "io/api_server.h"
#include "io/clock.h"
#include "io/http_client.h"
#include "io/tls.h"
#include "plugin/poller.h"
#include "plugin/registry.h"
#include "store/store.h"

struct ebb__daemon_options {
    const char *config_path; /* NULL: the built-in default configuration */
    const char *state_dir;   /* NULL: EBB_STATE_DIR or the default */
    int log_level_set;
    enum ebb_log_level log_level;
    double clock_speed;      /* 0: the configuration's clock.speed */
    int check;               /* --check: read the configuration, create the
                              * plugins, say whether all is well, stop */
};

/* Running jobs' latest outlooks (daemon_outlook.c). */
struct ebb__daemon_outlooks {
    struct ebb_list kept;     /* struct ebb__daemon_outlook, one per job looked at */
    int refreshing;           /* one is being computed in the background */
    uint64_t started_at;      /* when it started (uv_now) */
    uint64_t next_at;         /* no background one starts before (uv_now) */
};

struct ebb__daemon {
    uv_loop_t loop;
    struct ebb__clock clock;
    struct ebb__config *config;
    char *config_name;       /* what status reports: a path or "(built-in)" */
    struct ebb__registry registry;
    struct ebb__host_env host_env;
    char *state_dir;
    int lock_fd;
    struct ebb__store *store;
    struct ebb__catalog *catalog;
    struct ebb__store_prices *store_fees; /* data/store_prices.csv; NULL: none */
    struct ebb__engine *engine; /* NULL until it starts */
    struct ebb__poller poller;  /* ready with the engine */
    int poller_ready;
    struct ebb__daemon_schedules *schedules; /* daemon_schedules.c */
    struct ebb__daemon_notify *notify; /* daemon_notify_send.c */
    struct ebb__daemon_workdirs *workdirs; /* daemon_workdir.c: the spool */
    struct ebb__workdir_seals *workdir_seals; /* daemon_workdir_store.c; NULL: none yet */
    struct ebb__workdir_sweep *workdir_sweep; /* daemon_workdir_sweep.c; NULL: none */
    struct ebb__http *http;
    struct ebb__objstore **objstores; /* one per config->stores (daemon_stores.c) */
    struct ebb__daemon_ckpt *ckpt;    /* checkpoint work (daemon_ckpt_store.c) */
    struct ebb__api_server *api;
    struct ebb__agent_api *agent_api;
    char agent_tls_pin[EBB__TLS_PIN_SIZE]; /* "": agents are not given one */
    char *agent_tls_ca;      /* PEM text agents verify with; NULL: none */
    struct ebb__daemon_metrics *metrics; /* NULL unless metrics.listen is set */
    struct ebb__histogram checkpoint_durations; /* agents' reports, seconds */
    char *logs_dir;          /* STATE/logs: jobs' output */
    char *checkpoints_dir;   /* STATE/checkpoints: default checkpoint dirs */
    char *plugins_dir;       /* STATE/plugins: one directory per plugin */
    uv_check_t flush;        /* commits the store's group once per loop turn */
    int flush_ready;
    int checkpointing;       /* a WAL checkpoint runs (daemon_checkpoint.c) */
    unsigned store_readers;  /* store reads off the loop now (daemon_api.c) */
    struct ebb_list quotes;  /* quotes off the loop now, one per user (daemon_plan.c) */
    struct ebb__daemon_outlooks outlooks; /* running jobs' (daemon_outlook.c) */
    unsigned mpu_sweeps;     /* stores' upload listings going on (daemon_mpu_sweep.c) */
    uv_signal_t sigterm;
    uv_signal_t sigint;
    double clock_speed;
    ebb_time_ms started_at;
    int shutting_down;
    int exit_code;
};

/* Runs ebbd until it is told to stop. Returns the process exit code:
 * 0 after a clean shutdown, 1 for a runtime failure (state directory, lock
 * held by another ebbd, database), 2 for bad configuration. Messages go to
 * the log (stderr). */
int ebb__daemon_run(const struct ebb__daemon_options *opts);

/* The job methods (daemon_jobs.c). */
void ebb__api_submit(void *ctx, struct ebb__api_call *call);
/* daemon_plan.c: `plan` {file, yaml, samples, seed}: the quote of `ebb
 * plan` (report/plan.h) from ebbd's market, computed off the loop. */
void ebb__api_plan(void *ctx, struct ebb__api_call *call);
/* daemon_plan.c: quotes `spec` (taken: it is zeroed here, and lent to `cb`
 * until cb returns) from ebbd's market now, off the loop, then calls `cb`
 * on the loop with the quote (borrowed, NULL on failure, then with an API
 * error code and message). Returns 0 when started; else -1 after
 * answering `call` (busy, internal). */
struct ebb__job_spec;
typedef void (*ebb__daemon_quote_cb)(struct ebb__daemon *d,
                                     struct ebb__api_call *call,
                                     struct ebb__job_spec *spec, json_t *quote,
                                     const char *code, const char *msg, void *arg);
int ebb__daemon_quote(struct ebb__daemon *d, struct ebb__api_call *call,
                      struct ebb__job_spec *spec, unsigned samples, uint64_t seed,
                      ebb__daemon_quote_cb cb, void *arg);
/* daemon_outlook.c: answers `call` with `answer` (the job's JSON, taken)
 * plus its "outlook": the quote of the rest of unfinished job `job` (id
 * `id`) from now (ETA, expected and p90 total cost), or {error} when none
 * can be made; the outlook is kept as the job's latest. */
struct ebb__job;
void ebb__daemon_job_outlook(struct ebb__daemon *d, struct ebb__api_call *call,
                             json_t *answer, const char *id, const struct ebb__job *job);
/* daemon_outlook.c: sets `answer`'s "outlook" to unfinished job `id`'s
 * latest (null before the first) and, when it is stale, starts a new one
 * in the background. */
void ebb__daemon_job_kept_outlook(struct ebb__daemon *d, json_t *answer, const char *id,
                                  const struct ebb__job *job);
/* daemon_outlook.c: frees the kept outlooks (at shutdown). */
void ebb__daemon_outlooks_free(struct ebb__daemon *d);
/* daemon_speeds.c: adds to each row of `prices` (ebb prices' rows) the
 * speed the engine plans with on its offer and where it comes from:
 * speed, speed_source ("catalog" or "measured"), speed_samples. */
void ebb__daemon_price_speeds(struct ebb__daemon *d, json_t *prices);
/* daemon_workdir.c: `workdir_put` {sha256, size[, offset, data]}: begins
 * or continues the upload of a packed workdir (docs/stores.md). */
void ebb__api_workdir_put(void *ctx, struct ebb__api_call *call);
/* daemon_submit_warn.c: appends to `warnings` what a preemption will cost
 * a spot job without a checkpoint store on a provider whose disks end with
 * their instances. 0 or EBB_ENOMEM. */
int ebb__daemon_spot_warning(struct ebb__daemon *d, const struct ebb__job_spec *spec,
                             json_t *warnings);
/* daemon_workdir.c: STATE/spool made (0700) and emptied. 0 or an EBB_E*
 * code with err set. */
int ebb__daemon_workdirs_open(struct ebb__daemon *d, char *err, size_t len);
void ebb__daemon_workdirs_close(struct ebb__daemon *d);
/* daemon_workdir.c: a submit of `spec` with `workdir:` must name its packed
 * workdir (params "workdir_archive"); `dir` is where it was packed from.
 * A job with a store is accepted only when that store holds the tar:
 * *stored is then the job's row to write with the job (its store[0] is
 * '\0' otherwise). Appends what the submitter should know to `warnings`.
 * Returns 0, or -1 with the call failed. */
struct ebb__job_workdir;
int ebb__daemon_workdir_submit(struct ebb__daemon *d, struct ebb__api_call *call,
                               const struct ebb__job_spec *spec, const char *dir,
                               json_t *warnings, struct ebb__job_workdir *stored);
void ebb__api_jobs(void *ctx, struct ebb__api_call *call);
void ebb__api_job(void *ctx, struct ebb__api_call *call);
void ebb__api_cancel(void *ctx, struct ebb__api_call *call);
void ebb__api_logs(void *ctx, struct ebb__api_call *call);
/* Caps, spend and commitments (daemon_budget.c). */
void ebb__api_budget(void *ctx, struct ebb__api_call *call);
/* The optional "team" param of budget and queue: 0 with *team (NULL: every
 * team), or -1 once the call has failed (not a string, no such team). */
int ebb__api_team_param(struct ebb__daemon *d, struct ebb__api_call *call,
                        const char **team);
void ebb__api_queue(void *ctx, struct ebb__api_call *call);

/* The metrics endpoint (daemon_metrics.c). start() listens on
 * metrics.listen when it is configured and returns 0, or an exit code (1,
 * or 2 for a bad address); close() runs `cb(arg)` once it is closed (at
 * once when it never started). */
struct ebb__daemon_metrics;
int ebb__daemon_metrics_start(struct ebb__daemon *d);
void ebb__daemon_metrics_close(struct ebb__daemon *d, void (*cb)(void *arg),
                               void *arg);

/* The agent listener's TLS (daemon_tls.c): when the configuration
 * decided on TLS, loads agent_api.tls_cert or makes ebbd's own in the
 * state directory, sets `*out` (NULL for plain HTTP) and fills
 * d->agent_tls_pin / d->agent_tls_ca with what agents are given. Returns
 * 0, or an error with a message in `err`. */
int ebb__daemon_agent_tls(struct ebb__daemon *d, struct ebb__tls_ctx **out,
                          char *err, size_t errlen);

/* The HTTP server of a started metrics endpoint. */
struct ebb__httpd *ebb__daemon_metrics_httpd(struct ebb__daemon_metrics *m);

/* Gives the API socket, the agent listener and the metrics listener their
 * caps and timeouts from the configuration, fitted into the files ebbd may
 * open (daemon_limits.c). Call once all three have started. Returns 0, or
 * 1 after logging why not. */
int ebb__daemon_limits_apply(struct ebb__daemon *d);

/* Once the store is open (daemon_clock.c): makes the clock resume from
 * the store's latest time when it would otherwise read earlier, records
 * the clock in the store and has every commit record its position, and
 * starts the store's billing check in the thread pool (it logs what it
 * finds). Returns 0, or an exit code
 * after logging why: 1 when the clock would run backwards or the store
 * fails. */
int ebb__daemon_clock_start(struct ebb__daemon *d);

/* After a commit: starts a WAL checkpoint off the loop when the WAL has
 * grown enough and none runs (daemon_checkpoint.c). */
void ebb__daemon_checkpoint_maybe(struct ebb__daemon *d);

/* Who may do what (daemon_access.c; docs/security.md). */

/* The user name of `uid` into buf (len bytes); NULL when it has none. */
const char *ebb__daemon_user_name(int64_t uid, char *buf, size_t len);

/* Whether `uid` may act on anyone's jobs and schedules: root, ebbd's own
 * user, or a user named in the configuration's admins. */
int ebb__daemon_is_admin(const struct ebb__daemon *d, uid_t uid);

/* Which team a job of `uid` (a submit, a schedule add, each schedule
 * fire) counts against: ebb__config_settle_team() (config_file.h) for
 * uid's user name, an admin being whoever ebb__daemon_is_admin() says.
 * Same returns; *team is borrowed from the configuration. */
int ebb__daemon_settle_team(const struct ebb__daemon *d, int64_t uid,
                            const char *file, int line, const char *named,
                            const char **team, struct ebb_diag *why);

/* As ebb__daemon_settle_team() for a job spec about to be submitted (by
 * `submit`, `schedule_add` or a schedule's fire): on success a spec that
 * named no team gets the one settled (a copy it owns). Same returns, and
 * EBB_ENOMEM. */
struct ebb__job_spec;
int ebb__daemon_settle_job_team(const struct ebb__daemon *d, int64_t uid,
                                struct ebb__job_spec *spec, struct ebb_diag *why);

/* The API error code for a refusal of ebb__daemon_settle_team(): a
 * "forbidden" for EBB_EPERM, "internal" for EBB_ENOMEM, else "invalid". */
const char *ebb__daemon_team_code(int rc);

/* Whether `uid` sees in full a job or schedule that `owner` owns, in
 * `team` (NULL or "": none): its owner, an admin, or an admin of that
 * team (teams.NAME.admins). Everyone else gets the redacted view. */
int ebb__daemon_may_see(const struct ebb__daemon *d, uid_t uid,
                        int64_t owner, const char *team);

/* Cut a job's or a schedule's answer (a JSON object, changed in place)
 * down to what anyone may see (docs/security.md lists the fields) and set
 * "redacted": true in it. */
void ebb__daemon_redact_job(json_t *job);
void ebb__daemon_redact_schedule(json_t *schedule);

/* Whether `caller` may submit `spec` as it stands (daemon_runas.c): its
 * run_as names a known user and the caller may name them (root or an
 * admin, for an unprivileged user; anyone, for themselves), and, when a
 * provider runs jobs on this machine, ebbd can start processes as the
 * job's user. Returns 0, or EBB_EINVAL (unknown user) or EBB_EPERM with
 * the sentence to answer in `why` (`len` bytes). */
int ebb__daemon_check_run_as(const struct ebb__daemon *d, uid_t caller,
                             const struct ebb__job_spec *spec, char *why,
                             size_t len);

/* Schedules (daemon_schedules.c): start loads them from the store and
 * deals with fire times that passed while ebbd was down (on the loop's
 * first turn); stop drops the timer and frees them. Start returns 0 or 1
 * (out of memory, unreadable store). */
int ebb__daemon_schedules_start(struct ebb__daemon *d);
void ebb__daemon_schedules_stop(struct ebb__daemon *d);
void ebb__api_schedule_add(void *ctx, struct ebb__api_call *call);
void ebb__api_schedules(void *ctx, struct ebb__api_call *call);
void ebb__api_schedule(void *ctx, struct ebb__api_call *call);
void ebb__api_schedule_remove(void *ctx, struct ebb__api_call *call);

/* The API methods ebbd serves (daemon_api.c); ends with a NULL name. */
extern const struct ebb__api_method ebb__daemon_methods[];

#endif
