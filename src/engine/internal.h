/* What the engine's own files share: the engine, its jobs and their
 * attempts, and the steps one file takes for another. Nothing outside
 * src/engine/ includes this (the engine's unit test and the planning
 * benchmark, which drive internals, excepted); the rest of ebb sees
 * engine/engine.h.
 *
 * Call direction. Each file calls only the files listed below it, never
 * one above it, so the engine has no call cycle:
 *
 *   engine.c          life, submission, cancel, the planning pass, the
 *                     prices polls bring
 *   engine_recover.c  taking jobs back after a restart
 *   engine_agent.c    agents' reports, silent agents
 *   engine_stall.c    the stall guard: jobs whose progress stopped or
 *                     whose GPUs idle
 *   engine_events.c   what providers report of instances
 *   engine_replace.c  replace_lost: a gang's lost node replaced while the
 *                     others run on
 *   engine_plan.c     asking policies; acting on their decisions and on
 *                     the budget's verdicts
 *   engine_outlook.c  forecasts and hazards of offers
 *   engine_transfer.c checkpoint stores: fees, download and upload times,
 *                     the chosen checkpoint interval, moves' transfer cost
 *   engine_exec.c     launching, releasing, billing attempts
 *   engine_interval.c the chosen checkpoint interval, transfer times
 *   engine_quota.c    teams' quotas on launches: verdicts, never actions
 *   engine_order.c    the order of teams' waiting jobs: priority, fair
 *                     share, submit time
 *   engine_budget.c   the caps: verdicts, never actions
 *   engine_notify.c   budget thresholds, cap forecasts and deadlines at
 *                     risk as events for notifications
 *   engine_grace.c    the grace period: priced, told, enforced
 *   engine_calls.c    provider calls after a commit
 *   engine_release.c  terminating instances nothing waits for
 *   engine_gang.c     a gang's nodes: tokens, checks, environment, whole
 *                     checkpoints and exits, renewed nodes (verdicts and
 *                     bookkeeping, never actions)
 *   engine_secret.c   agents' random secrets and their hashes
 *   engine_offers.c   which offers a job may use; currency conversion
 *   engine_retry.c    when a failed job may launch again, and when not
 *   engine_state.c    job states, the dirty queue, jobs by id and token
 *   engine_speed.c    learned speed per job family and host
 *
 * Upward only through callbacks that a higher file registers: the plan
 * timer (engine.c's planning pass) is started by engine_state.c's
 * ebb__engine_mark_dirty(), and provider calls (engine_calls.c) run the
 * executor's issue/failed functions. vengine.c uses engine.h only.
 * tests/check_engine_calls.py (suite source) checks this list against
 * what each file calls.
 */
#ifndef EBB_ENGINE_INTERNAL_H
#define EBB_ENGINE_INTERNAL_H

#include <ebb/job_model.h>
#include <ebb/list.h>

#include "config/config_file.h"
#include "engine/engine.h"
#include "io/clock.h"
#include "market/catalog.h"
#include "market/market.h"
#include "market/speed_est.h"
#include "plugin/plugin_host.h"
#include "plugin/registry.h"
#include "store/store.h"

/* One instance a job runs on: from the launch call to its release. */
struct ebb__attempt {
    char token[EBB__TOKEN_SIZE]; /* the idempotency token */
    size_t offer;            /* index into the engine's market */
    struct ebb__plugin_slot *provider;
    char *instance_id;       /* the provider's id once launched */
    enum ebb_billing billing;
    ebb_time_ms requested_at, launched_at, running_at;
    ebb_dur_ms work_base;    /* the job's saved work when it started */
    ebb_dur_ms reported_work; /* from the latest PROGRESS */
    ebb_time_ms reported_at;  /* 0: no progress reported yet */
    /* The progress report a learned-speed rate runs from (engine_speed.c):
     * when, and the work done then; 0: none to run from. */
    ebb_time_ms rate_at;
    ebb_dur_ms rate_work;
    /* The stall guard (engine_stall.c): when the reported work last grew,
     * and to what; 0: no progress line on this instance (guard off). */
    ebb_time_ms progress_at;
    ebb_dur_ms progress_work;
    /* The GPU guard (engine_stall.c): the utilisation reports its agents
     * sent after the restart overhead (gpu_util the latest; 0 reports:
     * none), and the run of them under the spec's min_gpu_util: its first
     * and last, with their sum and count (0: not under). */
    unsigned gpu_reports;
    int gpu_util;
    ebb_time_ms gpu_low_since, gpu_low_last;
    long long gpu_low_sum;
    unsigned gpu_low_n;
    int launched;            /* the provider accepted it */
    int stop_sent;           /* asked to checkpoint and exit */
    ebb_time_ms stop_at;     /* when; the grace period runs from then */
    int notice;              /* a preemption notice arrived */
    ebb_time_ms notice_at;   /* when the first one did */
    int terminating;         /* terminate called */
    unsigned terminate_failures; /* in a row; the backstop asks again */
    /* When the market's offers run on another provider (run_on: sim ->
     * local), the market plugin models the instance's availability, its
     * notices and losses, as a shadow instance with the same token; the
     * job runs on `provider`. */
    struct ebb__plugin_slot *market; /* NULL: the runner is the market */
    char *shadow_id;         /* the market's instance, once launched */
    int shadow_lost;         /* the market took the instance away */
    /* Its agents (docs/agent-protocol.md): one node for a single instance,
     * a gang's `n_nodes` in rank order (docs/gangs.md). */
    struct ebb__node *nodes;
    unsigned n_nodes;
    ebb_time_ms agent_seen;  /* the latest report of any of its agents;
                              * 0: none yet */
    ebb_time_ms notice_deadline; /* what the metadata endpoint says; 0: none */
    int agent_exited;        /* its job ended: every node's agent reported
                              * its exit, or one node's failure ended the
                              * gang */
    char imds_token[33];     /* the metadata endpoint's session token */
    int confirming;          /* asking the provider whether it still runs */
    /* Releases the instance when its grace period ends, whatever the
     * agent does (ebb__engine_grace_end); asks again after a failed
     * terminate. */
    struct ebb__timer backstop;
    int download_billed;     /* its resume download's egress is in the ledger */
    /* A gang's environment for its jobs (engine_gang.c), once every node
     * passed its check: "NAME=value" strings, per node; NULL before. */
    char ***gang_env;
    size_t n_gang_env;       /* entries of each node's */
    int formed;              /* every node passed its checks, or the gang
                              * was taken back running after a restart */
};

/* The checkpoint names of one node remembered for matching a gang's
 * parts (engine_gang.c): its newest few. */
#define EBB__NODE_CKPTS 4
#define EBB__CKPT_NAME_MAX 256

/* What one agent of an attempt is and said: the instance's, or one gang
 * member's (its rank is its index in attempt->nodes). The agent is given
 * the enrolment token "enrol:<agent token>.<agent_secret>", which it
 * trades once, at first contact, for the bearer token "<agent
 * token>.<session secret>"; the agent token is the attempt's token, or a
 * member's "<token>+<rank>". Only hashes are kept: agent_hash is the
 * enrolment secret's (ebb__enrol_secret_hash) until then, the session
 * secret's (ebb__agent_secret_hash) after; the instance's row holds them
 * joined by ',' in rank order. */
struct ebb__node {
    char agent_secret[65];   /* the enrolment secret, for the launch call;
                              * "" for an attempt taken back after a restart */
    char agent_hash[65];     /* hex SHA-256: what is stored */
    int enrolled;            /* its enrolment token was used (in this run) */
    ebb_time_ms seen;        /* its latest report; 0: none yet */
    /* Its member bills from here (the launch, or its replacement's); 0:
     * no member of its runs now (lost, its replacement not yet there). */
    ebb_time_ms billed_from;
    /* A replacement member is on its way (replace_lost): since when; 0:
     * none. */
    ebb_time_ms replacing_at;
    int started;             /* it reported the job started */
    int exited;              /* it reported the job's end */
    int exit_status;         /* as ebb_instance_event.exit_status */
    /* A gang's checks (engine_gang.c): what its `host` report said. */
    int host_reported;
    char gpu_model[257], driver[64], cuda[64];
    size_t n_gpus;
    int64_t link_mbps;       /* 0: unknown */
    char addr[64];           /* where its peers reach it */
    int port;                /* the free port it found there */
    char ckpts[EBB__NODE_CKPTS][EBB__CKPT_NAME_MAX]; /* newest first */
};

/* A durable checkpoint in the job's store (engine_transfer.c). */
struct ebb__held_ckpt {
    ebb_time_ms at;          /* when it became durable */
    int64_t bytes;           /* its plaintext bytes */
};

/* What the engine knows of a store job's checkpoints and transfers. */
struct ebb__job_transfer {
    struct ebb__held_ckpt *held; /* oldest first; room for keep + 1 */
    size_t n_held;
    int64_t last_bytes;      /* the newest durable checkpoint's */
    ebb_dur_ms last_duration; /* its write, wall ms from the signal */
    double up_rate, down_rate; /* bytes per wall ms measured; 0: not yet */
};

struct ebb__job {
    struct ebb__engine *engine;
    struct ebb_list node;    /* on engine->jobs, in submission order */
    size_t seq;              /* its place on engine->jobs */
    char id[48];
    struct ebb__job_spec spec;
    enum ebb__job_state state;
    struct ebb__plugin_slot *policy;
    ebb_time_ms submitted_at, deadline, finished_at;
    ebb_dur_ms work_total, work_saved;
    ebb_micros budget;       /* < 0: no cap */
    ebb_micros spent;
    /* USD the job may have spent by its next budget check: what it had
     * spent at the latest check plus that step's worst case (see
     * engine_budget.c); what a running job has committed is the part not
     * spent yet. */
    ebb_micros reserve;
    char currency[4];
    unsigned attempts, preemptions, restarts, retries;
    /* The longest interval seen between its progress lines that reported
     * more work (engine_stall.c); 0: none yet. */
    ebb_dur_ms progress_gap;
    /* Launches in a row that never started the job (engine_retry.c). */
    unsigned start_failures;
    /* No launch before this (a failed run or start waits); 0: none. */
    ebb_time_ms retry_at;
    /* A failed run's wait, counted from its instance's release; 0: none. */
    ebb_dur_ms retry_wait;
    /* The release that comes counts as a failed start (its agent never
     * reported). */
    int release_failed_start;
    /* Why the job waits now, for `ebb jobs` and `ebb job show`: the latest
     * waiting state's reason or policy's answer; "" when it does not. */
    char waiting_reason[256];
    enum ebb__wait_kind waiting_kind; /* what for; NONE when it does not */
    struct ebb__attempt *current;
    /* What to do once the current instance is released. */
    enum ebb__job_state after_release;
    size_t launch_next;      /* offer to launch then, or SIZE_MAX */
    char after_reason[192];
    char *workdir;           /* where a local job runs; NULL: the agent's */
    int64_t owner_uid;       /* who submitted it; -1: unknown */
    char owner_name[64];     /* their user name; "": none known */
    /* A quota refused its launch: planned again when an instance of its
     * team ends (engine_quota.c); 0: none, else EBB__QUOTA_WAIT_*. */
    int quota_wait;
    /* The job the quota last made it wait behind (engine_order.c): planned
     * again when that one launches or stops holding its place; NULL: none. */
    const struct ebb__job *queued_behind;
    /* The job whose launch paused it with a checkpoint (engine_quota.c,
     * engine_plan.c): it stays paused until it launches again; NULL:
     * none. */
    const struct ebb__job *paused_for;
    int held;                /* taken back after a restart: its instance is
                              * being reconciled; not planned until then */
    struct ebb__timer wake;
    /* On engine->dirty while the next planning pass is to decide for it. */
    struct ebb_list dirty;
    /* Market offers this job may use, ascending; offers examined so far
     * (the market only ever appends). */
    size_t *allowed;
    size_t n_allowed, cap_allowed, offers_examined;
    /* Its checkpoint store's side (engine_transfer.c); NULL until needed,
     * and for a job without a store. */
    struct ebb__job_transfer *xfer;
};

struct ebb__recovery;

struct ebb__engine {
    struct ebb__engine_options opt;
    struct ebb__market market;
    struct ebb_list jobs;            /* every job, in submission order */
    /* Jobs the next planning pass decides for, in the order they were
     * marked: a pass costs what it plans, not the number of jobs. */
    struct ebb_list dirty;
    /* Jobs by id: open addressing, a power-of-two size, at most half full. */
    struct ebb__job **by_id;
    size_t by_id_cap;
    size_t n_jobs;
    size_t n_active;                 /* jobs not in a terminal state */
    struct ebb__timer plan_timer;
    struct ebb__timer agent_sweep;   /* looks for silent agents */
    struct ebb__recovery *recovery;  /* instances to reconcile; NULL: none */
    int all_polled;                  /* every provider answered a first poll */
    uint64_t id_seq;
    uint64_t decisions;              /* policy calls, for benchmarks */
    /* Reused buffers for the views handed to policies. */
    struct ebb_offer *view_offers;
    size_t *view_map;
    size_t view_cap;
    /* The view is reused by the next job that may use the same offers at
     * the same instant, as long as the market did not change in between:
     * the offers it was built from, and when. */
    size_t *view_allowed;
    size_t view_n, view_n_allowed;
    ebb_time_ms view_now;
    uint64_t view_version;
    int view_valid;
    uint64_t view_generation; /* bumped by every rebuild (ebb_market_view) */
    char view_currency[4];    /* the view's prices are in it */
    int view_transfer_set;    /* some offer holds a job's transfer_cost */
    /* Forecasts of the view's offers in another currency, converted, or
     * for a gang, scaled to its nodes: EBB__ENGINE_OUTLOOK_STEPS points
     * for view offer i from view_fc + i * that, so that filling one never
     * moves another's. view_filled[i]: offer i's forecast fields are set
     * (engine_plan.c's fill_forecast). */
    struct ebb_forecast_point *view_fc;
    size_t view_fc_cap;
    unsigned char *view_filled;
    /* The gang's size the view is for (ebb__job_nodes), and its offers'
     * hazard by hour scaled to it: 24 per view offer (view_cap). */
    int view_nodes;
    double *view_hazard;
    /* engine_outlook.c's copy of one offer's recent history, reused for
     * every offer: one per engine, as ebb plan runs engines on several
     * threads beside ebbd's. */
    struct ebb__outlook_scratch {
        ebb_time_ms *at;
        ebb_micros *price;
        int32_t *capacity;
        size_t cap;
    } outlook_scratch;
    /* Learned speeds (engine_speed.c): open addressing, a power-of-two
     * size, at most half full. */
    struct ebb__speed_entry **speeds;
    size_t speeds_cap, n_speeds;
    /* The job family the view's speeds are for (learned speeds differ by
     * family); NULL before the first view. */
    char *view_family;
    struct ebb_list releases;        /* engine_release.c */
    /* Provider calls a planning pass holds back (engine_calls.c). */
    int batching;
    struct ebb__provider_call *calls;
    size_t n_calls, calls_cap;
    /* Called when a job reaches a terminal state, inside the transaction
     * that records it (engine_transfer.c's storage fees); set by engine.c
     * so that engine_state.c calls nothing above it. */
    int (*job_end)(struct ebb__job *job, ebb_time_ms now);
};

/* ---- checkpoint stores in money and time (engine_transfer.c) ---- */

/* Durable checkpoints a job keeps in its store when its spec gives none
 * (the spec's own default). */
#define EBB__CKPT_KEEP_DEFAULT 3
/* Transfer rate assumed until the job's agent measured one: 100 MB/s, in
 * bytes per wall ms (a cloud instance reading its region's object store
 * does several times that; across regions or from home, less). */
#define EBB__TRANSFER_RATE_DEFAULT 100000.0
/* What a checkpoint is taken to cost before the job wrote one. */
#define EBB__CKPT_COST_DEFAULT EBB_MS_PER_MINUTE
/* The interval the engine chooses (checkpoint.every left out): at least
 * the spec's own floor, at most 6 hours (a hazard of 0, unknown, gets the
 * most). */
#define EBB__CKPT_EVERY_CHOSEN_MIN EBB__JOB_EVERY_MIN
#define EBB__CKPT_EVERY_CHOSEN_MAX (6 * EBB_MS_PER_HOUR)

/* The job's agent made a checkpoint durable in its store at `at` (report
 * `r`: bytes, duration, upload_ms): it is held, and the one it pushes out
 * of `keep` is billed for its storage. Call inside the transaction that
 * records the checkpoint. Returns 0 or an EBB_E* code. */
int ebb__engine_transfer_checkpoint(struct ebb__job *job, ebb_time_ms at,
                                    const struct ebb__agent_report *r);
/* The job ended at `now`: every checkpoint it holds is billed for its
 * storage (ebbd deletes them). Called inside the transaction that records
 * the terminal state (through engine->job_end). */
int ebb__engine_transfer_job_end(struct ebb__job *job, ebb_time_ms now);
/* Reads back the checkpoints a recovered job holds. Returns 0 or a code. */
int ebb__engine_transfer_recover(struct ebb__job *job);
/* The job's agent downloaded report r's download_bytes to resume: its
 * rate is measured, and bytes that left the store's region or cloud are
 * billed as egress (once per instance). */
void ebb__engine_transfer_download(struct ebb__job *job,
                                   const struct ebb__agent_report *r);
/* The restart overhead a policy sees: the spec's, plus, with a store, the
 * download of the newest durable checkpoint at the measured rate (else
 * EBB__TRANSFER_RATE_DEFAULT). */
ebb_dur_ms ebb__engine_restart_overhead(const struct ebb__job *job);

/* ---- the chosen checkpoint interval (engine_interval.c) ---- */

/* Wall ms to move `bytes` at `rate` bytes per wall ms (the default when
 * nothing was measured), in the engine's clock. */
ebb_dur_ms ebb__engine_transfer_ms(const struct ebb__engine *e, int64_t bytes, double rate);
/* The checkpoint interval on market offer `offer`: the spec's when it
 * gives one or the job has no store; else ebb__checkpoint_interval() of
 * the job's checkpoint cost (last write plus upload at the measured rate;
 * EBB__CKPT_COST_DEFAULT before any) and the offer's hazard (a gang's:
 * its nodes' times one node's). */
ebb_dur_ms ebb__engine_every_on(const struct ebb__job *job, size_t offer);
/* Young/Daly's interval sqrt(2 C M) for checkpoints costing `cost` and a
 * hazard of `hazard_per_hour` (M = 1 / hazard), clamped to
 * [EBB__CKPT_EVERY_CHOSEN_MIN, EBB__CKPT_EVERY_CHOSEN_MAX]. */
ebb_dur_ms ebb__checkpoint_interval(ebb_dur_ms cost, double hazard_per_hour);
/* What moving the job to market offer `offer` costs in transfer, in the
 * job's currency: the egress of its newest durable checkpoint when the
 * offer is not in the store's region and cloud; 0 for the offer it runs
 * on, without a store or checkpoint, or without a currency rate. */
ebb_micros ebb__engine_transfer_cost(const struct ebb__job *job, size_t offer);

/* ---- job states, the dirty queue, jobs by id (engine_state.c) ---- */

/* A job for `spec` (taken, zeroed on return) with its policy resolved, not
 * yet stored or listed, into *out. Returns 0, EBB_EINVAL (no such policy)
 * or EBB_ENOMEM, with d set. */
int ebb__engine_job_new(struct ebb__engine *e, struct ebb__job_spec *spec,
                        int64_t owner_uid, const char *workdir,
                        ebb_time_ms submitted_at, struct ebb__job **out,
                        struct ebb_diag *d);
/* Lists a job in the engine. Returns 0 or EBB_ENOMEM. */
int ebb__engine_job_add(struct ebb__engine *e, struct ebb__job *job);
/* Frees a job that was never listed (or at the engine's end). */
void ebb__engine_job_free(struct ebb__job *job);
/* Puts the job on the dirty queue (once) and arms the planning pass. */
void ebb__engine_mark_dirty(struct ebb__job *job);
/* Moves the job to state `to`, recording why in job_events with it. */
/* Events for notifications (engine_state.c, engine_notify.c).
 * ebb__engine_note tells
 * opt.note of an event of `job` (engine.h, struct ebb__engine_note); call
 * it inside the transaction that records the change. `key`: NULL or the
 * name of an event that happens once. ebb__engine_note_spend: the job's
 * spend went from `before` to job->spent; notes the budget thresholds of
 * the job's cap and its team's (this calendar month: [month_from,
 * month_to), ebb__budget_month) that this crossed. */
void ebb__engine_note(struct ebb__job *job, const char *type, const char *key,
                      const char *reason);
void ebb__engine_note_spend(struct ebb__job *job, ebb_micros before,
                            ebb_time_ms month_from, ebb_time_ms month_to);
/* Notes once a month (the month [month_from, month_to)) that `team`'s
 * cap, `spent` of `cap` USD, runs out before the month ends at `burn` USD
 * an hour. */
void ebb__engine_note_forecast(struct ebb__job *job, const char *team,
                               ebb_micros spent, ebb_micros cap, ebb_micros burn,
                               ebb_time_ms month_from, ebb_time_ms month_to);
/* Notes once that the job's deadline is at risk: on the fastest on-demand
 * offer of its view (`offers`, `n`; the fastest offer when it has no
 * on-demand one) it would finish with less slack than one restart
 * overhead. */
void ebb__engine_note_deadline(struct ebb__job *job, const struct ebb_offer *offers,
                               size_t n, ebb_time_ms now);

void ebb__engine_set_state(struct ebb__job *job, enum ebb__job_state to,
                           const char *fmt, ...) EBB_PRINTF(3, 4);
/* Records what the job waits for (kept only while it waits, as the
 * reason is); a state change to a waiting state makes it PLANNING. */
void ebb__engine_wait_kind(struct ebb__job *job, enum ebb__wait_kind kind);
/* Whether the job waits: no instance, and pending, waiting, paused or
 * preempted. */
int ebb__job_waits(const struct ebb__job *job);
/* Records why the job waits (`reason`; kept only while its state is one
 * that waits: pending, waiting, paused, preempted), without an event:
 * the planner's answer each time it looks. */
void ebb__engine_note_waiting(struct ebb__job *job, const char *reason);
/* The job's work done by `now`: saved work, plus the running instance's
 * progress extrapolated from its last report. */
ebb_dur_ms ebb__job_work_done(const struct ebb__job *job, ebb_time_ms now);

/* ---- offers a job may use (engine_offers.c) ---- */

/* Whether the job could ever run: its budget's currency converts to USD,
 * and, once every provider has answered a first poll, some offer of the
 * market matches its resources, market setting and currency. Returns 0,
 * or EBB_EINVAL with why not in `why` (naming the key at fault and what
 * the market has instead). */
int ebb__engine_job_runnable(struct ebb__engine *e, struct ebb__job *job,
                             char *why, size_t len);
/* Brings job->allowed up to date with the market. Returns 0 or ENOMEM. */
int ebb__engine_update_allowed(struct ebb__job *job);
/* Marks dirty every unfinished job that may use `offer` (SIZE_MAX: all). */
void ebb__engine_wake_offer(struct ebb__engine *e, size_t offer,
                            const struct ebb__job *except);

/* ---- failed runs and starts (engine_retry.c) ---- */

/* The first wait before a failed job is tried again, doubling with each
 * try up to the most (market time). */
#define EBB__RETRY_BACKOFF_FIRST EBB_MS_PER_MINUTE
#define EBB__RETRY_BACKOFF_MAX EBB_MS_PER_HOUR
/* Launches in a row that never start the job before it fails. */
#define EBB__MAX_FAILED_STARTS 8

/* How long to wait before the `n`th try (n >= 1): 1 min, doubling, at most
 * an hour. */
ebb_dur_ms ebb__engine_retry_backoff(unsigned n);
/* Whether the job must wait (job->retry_at) before it launches again. */
int ebb__engine_retry_pending(const struct ebb__job *job, ebb_time_ms now);
/* The job, without an instance, waits until job->retry_at, `why` in its
 * event with the time it tries again. */
void ebb__engine_wait_to_retry(struct ebb__job *job, const char *why);
/* Counts a launch that never started the job (`why`): the job waits for
 * its next try, or fails after EBB__MAX_FAILED_STARTS in a row. Returns
 * 1 when it failed. The job must have no instance. */
int ebb__engine_start_failed(struct ebb__job *job, const char *why);

/* ---- agents' secrets (engine_secret.c) ---- */

/* `size / 2` random bytes (OpenSSL's CSPRNG) as lower-case hex into `hex`
 * (size: an odd buffer size, e.g. 65 for 32 bytes). Returns 0 or EBB_EIO. */
int ebb__random_hex(char *hex, size_t size);
/* Hex SHA-256 of `secret` into hash[65]. Returns 0 or EBB_EIO. */
int ebb__agent_secret_hash(const char *secret, char hash[65]);
/* Hex SHA-256 of EBB__ENROL_PREFIX and `secret`: what is kept of an
 * enrolment secret until it is used. Returns 0 or EBB_EIO. */
int ebb__enrol_secret_hash(const char *secret, char hash[65]);
/* Whether the 64 hex digits at `a` and `b` are equal, in constant time. */
int ebb__secret_hash_equal(const char *a, const char *b);

/* ---- instances nothing waits for (engine_release.c) ---- */

/* Terminates instance `id` on `slot`, asking again after each failure
 * until the provider says it is gone. */
void ebb__engine_release_aside(struct ebb__engine *e, struct ebb__plugin_slot *slot,
                               const char *id);
/* Drops the releases still waiting to ask again (ebbd stops). */
void ebb__engine_releases_free(struct ebb__engine *e);
/* How long to wait after `failures` failed terminates in a row: 10 s,
 * doubling, at most 5 minutes (wall time). */
ebb_dur_ms ebb__engine_retry_after(unsigned failures);

/* ---- provider calls after a commit (engine_calls.c) ---- */

/* A launch or terminate that must follow the store writes announcing it. */
struct ebb__provider_call {
    struct ebb__job *job;
    char token[EBB__TOKEN_SIZE]; /* the attempt it is for (filled when queued) */
    int needs_commit;          /* failed with EBB_EIO when the commit fails */
    struct ebb__plugin_slot *slot;
    int shadow;                /* a launch of the market's shadow */
    ebb_launch_cb cb;          /* a launch's callback */
    /* Makes the call; returns 0 or the error to hand to failed(). */
    int (*issue)(struct ebb__job *job, const struct ebb__provider_call *c);
    void (*failed)(struct ebb__job *job, const struct ebb__provider_call *c,
                   int status);
};

/* Commits and makes the call, or, inside a batch, queues it (a copy). */
void ebb__engine_call_after_commit(struct ebb__engine *e,
                                   const struct ebb__provider_call *c);
/* A planning pass: calls wait for one commit at ebb__engine_batch_end. */
void ebb__engine_batch_begin(struct ebb__engine *e);
void ebb__engine_batch_end(struct ebb__engine *e);

/* ---- budget caps (engine_budget.c, docs/budgets.md) ---- */

/* Adds `amount` of `currency` (what an instance's ledger rows came to) to
 * the job's spend, which is kept in the job's currency. */
void ebb__engine_add_spend(struct ebb__job *job, ebb_micros amount,
                           const char *currency);

/* One step a capped job may take: running on market offer `offer` for
 * `span` (until its next checkpoint, with the grace period, and the
 * restart overhead when it moves) at worst `rate` per hour, plus `extra`
 * (the current instance's grace when the job moves); both in the job's
 * currency, as the planner's market view has them. */
struct ebb__budget_step {
    size_t offer;
    ebb_micros rate;
    ebb_dur_ms span;
    ebb_micros extra;
    int launching;
};

/* What the caps want done with a job; the planner carries it out. */
enum ebb__budget_act {
    EBB__BUDGET_NOTHING,     /* nothing to carry out */
    EBB__BUDGET_ENTER,       /* the job, without an instance, goes to `to` */
    EBB__BUDGET_RELEASE,     /* its instance checkpoints, is released; `to` */
    EBB__BUDGET_RELEASE_NOW, /* its instance is released at once, the job
                              * keeping its latest checkpoint; `to` */
};

/* The most running jobs one refused launch pauses (engine_quota.c). */
#define EBB__PREEMPT_MAX 16

struct ebb__budget_verdict {
    enum ebb__budget_act act;
    enum ebb__job_state to;
    ebb_time_ms wake;        /* > 0: look again then (a team's next month) */
    char reason[320];
    /* A quota's: running jobs of the team to pause with a checkpoint, of
     * lower priority so that the refused job takes their place, or (a
     * step that stays on its instance) the team's lowest ranked so that
     * its max_burn holds; preempt_why: why, for the latter ("": the
     * former). */
    struct ebb__job *preempt[EBB__PREEMPT_MAX];
    size_t n_preempt;
    char preempt_why[320];
};

/* The price per hour the job's running instance is billed at `now`, in
 * its offer's currency: for each of its nodes that has a member now, the
 * price now, or under hourly billing the price at the start of that
 * member's current instance-hour when that is higher (before the launch
 * is accepted: every node at the price now). */
ebb_micros ebb__engine_billed_rate(const struct ebb__job *job, ebb_time_ms now);
/* Whether the job has a cap of its own or its team has one. */
int ebb__engine_budget_applies(const struct ebb__job *job);
/* Judges a step that could pass the job's or its team's cap: refused, the
 * job is to pause (a lower price may fit) or end budget_exhausted when even
 * the cheapest step cannot fit, a running job checkpointing first (as *v
 * says). Returns 1 when it refused; on 0 the step is the job's new
 * commitment and *v says NOTHING. */
int ebb__engine_budget_refuses(struct ebb__job *job,
                               const struct ebb__budget_step *s,
                               ebb_time_ms now, struct ebb__budget_verdict *v);
/* For a job without an instance and with a cap of its own: whether even
 * the cheapest step it could take on any offer it may use (restart, one
 * checkpoint interval or the rest of the work, the grace period, at
 * today's price) costs more than is left of its cap. Returns 1 when it
 * does: the job is to end budget_exhausted (*v), whatever its policy
 * says, so that no job waits for a step it can never afford; else 0. */
int ebb__engine_budget_idle(struct ebb__job *job, ebb_time_ms now,
                            struct ebb__budget_verdict *v);
/* The job's spend by `now` in its own currency: what the ledger billed
 * plus what its running instance and the checkpoints it holds in its
 * store have cost so far (rounded up). Caps count the same. */
ebb_micros ebb__engine_spent_now(const struct ebb__job *job, ebb_time_ms now);
/* The ebb.yaml store the job's checkpoints go to; NULL: none (or no
 * config, as in backtests). */
const struct ebb__store_cfg *ebb__engine_job_store(const struct ebb__job *job);
/* How to carry out a policy's STOP of a running capped job (or one in a
 * capped team): with a checkpoint when the grace period at today's price
 * fits the caps, else at once (*v). Returns 1 when a cap applies, 0 (the
 * plain release is up to the caller) when none does. */
int ebb__engine_budget_stop(struct ebb__job *job, const char *reason,
                            ebb_time_ms now, struct ebb__budget_verdict *v);
/* For a job whose instance is checkpointing or under notice: whether the
 * rest of its grace period at today's price no longer fits the caps (the
 * price rose). Returns 1 when it is to be released at once, keeping the
 * latest checkpoint (*v); 0 when it fits or no cap applies. */
int ebb__engine_budget_guard(struct ebb__job *job, ebb_time_ms now,
                             struct ebb__budget_verdict *v);
/* Tells engine_notify.c the job's team's burn: what its running instances
 * (but `ending`'s: NULL, or the job whose instance just ended) are billed
 * an hour now, against what is left of its monthly cap. */
void ebb__engine_budget_burn(struct ebb__job *job, const struct ebb__job *ending);

/* ---- quotas (engine_quota.c, docs/budgets.md "Quotas") ---- */

/* Why a quota refused a job's launch (job->quota_wait): its team's quota
 * is full, or it waits behind a job that holds its place (it holds its
 * own place then, engine_order.c); or the refusal is its own (its
 * owner's max_gpus, an offer larger than the team's max_gpus), which
 * holds no place. */
#define EBB__QUOTA_WAIT_TEAM 1
#define EBB__QUOTA_WAIT_OWN 2

/* Whether the job's team has a quota (max_gpus, max_burn, or a member's
 * max_gpus). */
int ebb__engine_quota_applies(const struct ebb__job *job);
/* Whether the job's team has a max_burn. */
int ebb__engine_quota_burn_applies(const struct ebb__job *job);
/* Judges a launching step `s` (the one the budget judged) against the
 * job's team's max_gpus and max_burn and its owner's max_gpus in the
 * team. Returns 1 when it refused: the job waits where it is, *v's reason
 * is why (act NOTHING), and it is planned again when an instance of its
 * team ends; 0 otherwise (steps that stay on an instance always pass).
 * When the team's quota is full, v->preempt lists the running jobs of
 * strictly lower priority whose instances, paused with a checkpoint,
 * make room for the step (none when they cannot; docs/budgets.md
 * "Preemption by checkpoint"). A step that stays on its instance is
 * judged against max_burn too: when the team's other instances billed
 * now and this one's worst rate over the step pass it, v->preempt holds
 * the team's lowest ranked running job (this one: it returns 1) to
 * pause with a checkpoint, v->preempt_why saying why. */
int ebb__engine_quota_refuses(struct ebb__job *job, const struct ebb__budget_step *s,
                              ebb_time_ms now, struct ebb__budget_verdict *v);
/* An instance of `ended`'s team has ended: the team's jobs a quota
 * refused are planned again. */
void ebb__engine_quota_freed(struct ebb__job *ended);

/* The job will not launch now (its policy chose to wait, or it was
 * cancelled): it no longer holds its place in its team's queue, and the
 * jobs waiting behind it are planned again. */
void ebb__engine_quota_yield(struct ebb__job *job);

/* ---- the order of waiting jobs (engine_order.c, docs/budgets.md) ---- */

/* Sorts the first `max` jobs of the dirty queue by rank, the first
 * first. Returns how many it sorted (fewer when the queue is shorter). */
size_t ebb__engine_order_dirty(struct ebb__engine *e, size_t max);
/* The best-ranked job of `job`'s team ranked ahead of it that holds its
 * place in the queue (waits for the quota, or backs off after a failed
 * launch), or NULL. */
const struct ebb__job *ebb__engine_queue_ahead(const struct ebb__job *job,
                                               ebb_time_ms now);
/* User `uid`'s spend this calendar month in team `team`, USD, as the caps
 * count it (engine_budget.c). Returns 0 or a negative code. */
int ebb__engine_owner_spent(const struct ebb__engine *e, const char *team,
                            int64_t uid, ebb_time_ms now, ebb_micros *out);

/* ---- the grace period (engine_grace.c) ---- */

/* The shortest grace period an agent gets under an accelerated clock. */
#define EBB__AGENT_MIN_GRACE (10 * EBB_MS_PER_SECOND)

/* Wall time a terminate may take to be answered (the instance bills
 * until then): at x120, 250 ms are 30 s of market time. */
#define EBB__RELEASE_LATENCY 250

/* What a release may bill beyond the moment ebbd decides it: one second
 * of billing granularity (a started second is billed whole), or under an
 * accelerated clock EBB__RELEASE_LATENCY of wall time, whichever is more.
 * The budget adds it to every worst case. */
ebb_dur_ms ebb__engine_release_slack(const struct ebb__engine *e);
/* The provider that runs the market `market`'s instances (run_on), or
 * NULL when the market runs its own. *missing is set when one is
 * configured but not loaded. */
struct ebb__plugin_slot *ebb__engine_runner(const struct ebb__engine *e,
                                            const char *market,
                                            const char **missing);
/* The grace period, in market time, that the job gets, and the budget
 * counts, on market offer `offer`: its checkpoint.grace, at least
 * EBB__AGENT_MIN_GRACE of wall time where an agent runs it under an
 * accelerated clock. */
ebb_dur_ms ebb__engine_offer_grace(const struct ebb__job *job, size_t offer);
/* The same for the job's current instance (which it must have). */
ebb_dur_ms ebb__engine_attempt_grace(const struct ebb__job *job);
/* Whether the current instance, under notice, is kept past the market's
 * deadline for an agent on the wall clock to finish its checkpoint. */
int ebb__engine_holds_past_loss(const struct ebb__job *job);
/* When the executor releases the current instance whatever its agent
 * does: its stop plus the grace period, or under notice the notice's
 * deadline (its notice plus the grace period when it is kept past it),
 * the earlier of the two; INT64_MAX when it is neither stopping nor
 * under notice. */
ebb_time_ms ebb__engine_grace_end(const struct ebb__job *job);

/* ---- the executor (engine_exec.c) ---- */

/* How long an offer whose provider reported no capacity stays unavailable. */
#define EBB__NO_CAPACITY_PAUSE (15 * EBB_MS_PER_MINUTE)
/* Launches the job on market offer `offer` (intent first, then the call). */
void ebb__engine_launch(struct ebb__job *job, size_t offer, const char *reason);
/* The job's model a launch of attempt `a` carries (only a provider that
 * simulates the job, sim, reads it): the work left (a shadow launch's:
 * unbounded), the speed the engine plans with on its offer, the restart
 * overhead, the checkpoint interval its agent would be told there
 * (ebb__engine_every_on; none for a shadow) and the grace. */
struct ebb_job_model ebb__engine_job_model(const struct ebb__job *job,
                                           const struct ebb__attempt *a, int shadow);
/* Asks the job's instance to checkpoint, then releases it; the job then
 * goes to `after`, or launches on `launch_next` (SIZE_MAX: none). */
void ebb__engine_release(struct ebb__job *job, enum ebb__job_state after,
                         size_t launch_next, const char *reason);
/* As ebb__engine_release() without a checkpoint: the instance is
 * terminated now and the job keeps its latest checkpoint (budget caps
 * use it when there is no room left for the grace period). */
void ebb__engine_release_now(struct ebb__job *job, enum ebb__job_state after,
                             const char *reason);
/* The executor's steps the instance events (engine_events.c) take too:
 * bill and record the end of the current attempt at `end`; go where the
 * release said once the instance is gone; terminate the current instance;
 * count the coming release as a preemption; (re)arm the release of the
 * instance at ebb__engine_grace_end(), whatever the agent does; "spot
 * p3.2xlarge us-east-1a aws". */
void ebb__engine_finish_attempt(struct ebb__job *job, ebb_time_ms end,
                                const char *state, const char *why);
/* Bills node `rank` of the current attempt up to `end` now (its member
 * ended: replace_lost) and stops its billing; what it came to. */
ebb_micros ebb__engine_bill_node(struct ebb__job *job, unsigned rank, ebb_time_ms end);
void ebb__engine_after_instance(struct ebb__job *job);
void ebb__engine_terminate(struct ebb__job *job);
void ebb__engine_mark_preempted(struct ebb__job *job, const char *why);
void ebb__engine_arm_grace_end(struct ebb__job *job);
void ebb__engine_describe_offer(const struct ebb__offer *o, char *buf, size_t len);
/* Readies a new attempt's timers. */
void ebb__engine_attempt_init(struct ebb__job *job, struct ebb__attempt *a);
/* Frees an attempt (its strings and timer). */
void ebb__engine_attempt_free(struct ebb__engine *e, struct ebb__attempt *a);
/* Launches the market's shadow again for the job's current attempt. */
void ebb__engine_relaunch_shadow(struct ebb__job *job);
/* Launches a replacement for the gang's node that is being replaced
 * (ebb__gang_replacing): on the market's shadow first under run_on, then
 * on the runner, each into its gang (ebb_launch.join_gang); each answer
 * puts the new member's id at its rank. A refused launch has the gang
 * checkpoint and resume whole. */
void ebb__engine_launch_member(struct ebb__job *job);

/* ---- offers' outlook (engine_outlook.c) ---- */

/* A week ahead at hourly steps: the most points an offer's forecast has. */
#define EBB__ENGINE_OUTLOOK_STEPS 168

/* Brings offer `offer`'s hazard and record up to date for `now`, and its
 * forecast due (ebb__engine_forecast computes it). */
void ebb__engine_outlook(struct ebb__engine *e, size_t offer, ebb_time_ms now);
/* Computes offer `offer`'s forecast if it is due (fc_pending), as of the
 * instant it fell due. */
void ebb__engine_forecast(struct ebb__engine *e, size_t offer);
/* Frees the outlook's scratch (ebb__engine_free). */
void ebb__engine_outlook_free(struct ebb__engine *e);

/* ---- the planner (engine_plan.c) ---- */

/* Sets view offer i's forecast, n_forecast and forecast_p50_low from its
 * market offer's forecast, computed first if due (ebb__engine_forecast):
 * a view's offers come without them, for policies that ask for them
 * (EBB_POLICY_ASKS_FORECASTS). Returns 0, EBB_EINVAL (no such offer) or
 * EBB_ENOMEM (the fields stay unset). */
int ebb__engine_fill_forecast(struct ebb__engine *e, size_t i);
/* Asks the job's policy what to do now and does it. */
void ebb__engine_plan_job(struct ebb__job *job);

/* ---- instance events (engine_events.c) ---- */

/* The host env's instance_event: what provider `provider` reports. */
void ebb__engine_instance_event(void *sink, const char *provider,
                                const struct ebb_instance_event *ev);
/* A checkpoint event `ev` of the job's agent that made a checkpoint
 * durable in the job's store (report `r`, r->bytes > 0). */
void ebb__engine_stored_checkpoint(struct ebb__job *job,
                                   const struct ebb_instance_event *ev,
                                   const struct ebb__agent_report *r);

/* ---- a gang's nodes (engine_gang.c, docs/gangs.md) ---- */

/* A gang member's agent token is "<attempt token>+<rank>". */
/* How soon a gang member whose peers have not all reported their hosts
 * reports again (wall ms), and how long a gang may take to form when
 * agent_api.gang_timeout is not given. */
#define EBB__GANG_HOST_RETRY 1000
#define EBB__GANG_TIMEOUT_DEFAULT (10 * EBB_MS_PER_MINUTE)
#define EBB__GANG_RANK_SEP "+"

/* Gives the attempt `n` nodes (zeroed). Returns 0 or EBB_ENOMEM. */
int ebb__gang_nodes_alloc(struct ebb__attempt *a, unsigned n);
/* Frees the attempt's nodes and its gang's environment. */
void ebb__gang_free(struct ebb__attempt *a);
/* Node `rank`'s agent token into out[len]: the attempt's token for a single
 * instance, "<token>+<rank>" for a gang's member. */
void ebb__gang_agent_token(const struct ebb__attempt *a, unsigned rank, char *out,
                           size_t len);
/* Splits an agent token into its attempt's token and rank. Returns 0 (a
 * single instance's: rank 0), 1 (a gang member's) or EBB_EINVAL. */
int ebb__gang_split_token(const char *agent_token, char token[EBB__TOKEN_SIZE],
                          unsigned *rank);
/* The nodes' agent hashes joined by ',' in rank order (what the instance's
 * row holds), and back. */
void ebb__gang_hashes(const struct ebb__attempt *a, char *out, size_t len);
int ebb__gang_hashes_parse(struct ebb__attempt *a, const char *joined);
/* The rank of the node being replaced (its replacing_at set), or -1. */
int ebb__gang_replacing(const struct ebb__attempt *a);
/* Gang id `ids` with member `rank`'s id replaced by `id` (appended when
 * `rank` is past its end): a new string, or NULL when out of memory. */
char *ebb__gang_splice(const char *ids, unsigned rank, const char *id);
/* Readies node `rank` for a replacement member: a new enrolment secret
 * and hash, nothing reported, replacing since `now`. Returns 0 or
 * EBB_EIO (no random bytes). */
int ebb__gang_node_renew(struct ebb__attempt *a, unsigned rank, ebb_time_ms now);
/* Records node `rank`'s host report; how many nodes have reported theirs. */
void ebb__gang_note_host(struct ebb__attempt *a, unsigned rank,
                         const struct ebb__agent_report *r);
unsigned ebb__gang_hosts_reported(const struct ebb__attempt *a);
/* Once every node reported its host: whether the gang cannot run the job
 * (nodes with other GPUs, driver or CUDA versions than node 0's, a network
 * link below resources.network, no address for its peers). Returns 1 with
 * why in why[len], else 0. */
int ebb__gang_check(const struct ebb__job *job, const struct ebb__attempt *a,
                    char *why, size_t len);
/* Builds each node's environment (MASTER_ADDR, MASTER_PORT, NNODES,
 * NODE_RANK, WORLD_SIZE, EBB_NODES) into a->gang_env, anew. Returns 0 or
 * EBB_ENOMEM. ebb__gang_env_free() frees it. */
int ebb__gang_build_env(struct ebb__attempt *a);
void ebb__gang_env_free(struct ebb__attempt *a);
/* Node `rank` made the checkpoint at `path`: returns 1 when every node now
 * has one of that name (the gang's checkpoint is whole), else 0. */
int ebb__gang_checkpoint(struct ebb__attempt *a, unsigned rank, const char *path);
/* Node `rank`'s job exited with `status` (as ebb_instance_event's): returns
 * 1 when that ends the gang's job, its status in *gang_status (a node's
 * failure at once; else once every node exited: stopped when any stopped,
 * else 0), else 0. */
int ebb__gang_exit(struct ebb__attempt *a, unsigned rank, int status, int *gang_status);

/* ---- replace_lost (engine_replace.c, docs/gangs.md) ---- */

/* A NOTICE (LOST) of one node of the job's gang: returns 1 when that node
 * is replaced alone (LOST: billed, released, its replacement launched)
 * and the event is handled; 0 when the gang restarts whole as for any
 * instance. */
int ebb__engine_replace_notice(struct ebb__job *job, const struct ebb_instance_event *ev);
int ebb__engine_replace_lost(struct ebb__job *job, const struct ebb_instance_event *ev);

/* ---- agents (engine_agent.c) ---- */

/* The narrowest PCIe link a GPU host may have: rental hosts sometimes run
 * GPUs on x1/x4 risers, which starve training of bandwidth. */
#define EBB__MIN_PCIE_WIDTH 8
/* How long a machine refused by the host check stays out of the choice. */
#define EBB__REFUSED_HOST_PAUSE (24 * EBB_MS_PER_HOUR)

/* ---- learned speed (engine_speed.c, docs/policies.md) ---- */

/* The speed the engine plans the job with on market offer `offer`: the
 * estimate learned from its family's progress on that host, else the
 * catalog's (the offer's own). *samples (may be NULL): the rates behind
 * it, 0 for the catalog's. */
double ebb__engine_speed(const struct ebb__job *job, size_t offer, long long *samples);
/* The job's agent reported `done` work on its current instance at `now`:
 * the rate since its previous report, when both fell in working time
 * (after the restart overhead, before a stop or notice, no checkpoint in
 * between), counts toward the estimate, which is persisted. */
void ebb__engine_speed_progress(struct ebb__job *job, ebb_dur_ms done, ebb_time_ms now);
/* A checkpoint paused the work: the next rate starts from the next
 * report. */
void ebb__engine_speed_pause(struct ebb__attempt *a);
/* Reads the persisted estimates (ebbd's start). Returns 0 or a code. */
int ebb__engine_speed_load(struct ebb__engine *e);
/* Frees the estimates (ebb__engine_free). */
void ebb__engine_speed_free(struct ebb__engine *e);

/* ---- the stall guard (engine_stall.c, docs/agent.md) ---- */

/* Without a spec's stall_after the guard waits this many times the job's
 * longest interval between progress lines, at least EBB__STALL_AFTER_MIN. */
#define EBB__STALL_FACTOR 4
#define EBB__STALL_AFTER_MIN (10 * EBB_MS_PER_MINUTE)

/* The job's agent reported `done` work on its current instance at `now`. */
void ebb__engine_stall_progress(struct ebb__job *job, ebb_dur_ms done, ebb_time_ms now);
/* The agent reported a checkpoint: the job is alive (and its GPUs may
 * idle while it writes). */
void ebb__engine_stall_alive(struct ebb__attempt *a, ebb_time_ms now);
/* An agent of the job reported its host's GPU utilisation (%) at `now`. */
void ebb__engine_stall_gpu(struct ebb__job *job, int gpu_util, ebb_time_ms now);
/* Checkpoints and moves the job when its progress stopped for its
 * stall_after, or its GPU utilisation stayed under its min_gpu_util for
 * its window (ebb__engine_gpu_window), marking the host (ebb__engine_mark_host), with the reason
 * in its event and a `job.stalled` note. */
void ebb__engine_stall_check(struct ebb__job *job, ebb_time_ms now);
/* Leaves the offer the job's current instance runs on out of the choice
 * for EBB__REFUSED_HOST_PAUSE (for a marketplace: the machine). */
void ebb__engine_mark_host(struct ebb__job *job, ebb_time_ms now);

/* ---- after a restart (engine_recover.c) ---- */

/* Lists every provider's instances and settles each held instance: adopted
 * when it still runs for a job that wants it, else terminated and billed up
 * to now; and terminates instances ebb's tags mark that no job wants. */
void ebb__engine_reconcile(struct ebb__engine *e);
/* Frees what is left of a reconciliation (engine end). */
void ebb__engine_recovery_free(struct ebb__engine *e);

#endif
