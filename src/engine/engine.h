/* The engine: jobs, the planner that asks their policies what to do, the
 * executor that carries decisions out through provider plugins, and the
 * ledger entries that follow. ebbd runs it on the real clock against real
 * providers; `ebb backtest` runs the very same code on the virtual clock
 * against the sim provider.
 *
 * Everything happens in handlers of clock timers and provider callbacks:
 * a price poll's answer, an instance event (running, notice, lost, exited,
 * progress, checkpoint), a job's wake-up time. Handlers mark jobs "dirty";
 * one planning pass at the current time then decides for each dirty job in
 * submission order, which keeps runs deterministic.
 *
 * Durable intent before action: a launch writes the instance row (with its
 * idempotency token) before calling the provider; every state change is a
 * job_events row with its reason.
 */
#ifndef EBB_ENGINE_H
#define EBB_ENGINE_H

#include <ebb/diag.h>
#include <ebb/policy.h>

#include "base/histogram.h"
#include "config/config_file.h"
#include "io/clock.h"
#include "jobs/jobspec.h"
#include "market/catalog.h"
#include "market/market.h"
#include "plugin/plugin_host.h"
#include "plugin/registry.h"
#include "store/store.h"

#define EBB__JOB_STATES(XX)                                                 \
    XX(PENDING, "pending")                                                  \
    XX(WAITING, "waiting")                                                  \
    XX(LAUNCHING, "launching")                                              \
    XX(RUNNING, "running")                                                  \
    XX(CHECKPOINTING, "checkpointing")                                      \
    XX(PREEMPTED, "preempted")                                              \
    XX(PAUSED, "paused")                                                    \
    XX(SUCCEEDED, "succeeded")                                              \
    XX(FAILED, "failed")                                                    \
    XX(CANCELLED, "cancelled")                                              \
    XX(BUDGET_EXHAUSTED, "budget_exhausted")                                \
    XX(DEADLINE_MISSED, "deadline_missed")

enum ebb__job_state {
#define EBB__JOB_STATE_ENUM(name, text) EBB__JOB_##name,
    EBB__JOB_STATES(EBB__JOB_STATE_ENUM)
#undef EBB__JOB_STATE_ENUM
};

const char *ebb__job_state_name(enum ebb__job_state s);
int ebb__job_state_terminal(enum ebb__job_state s);

/* One instance a job runs on: from the launch call to its release. */
struct ebb__attempt {
    char token[96];          /* the idempotency token */
    size_t offer;            /* index into the engine's market */
    struct ebb__plugin_slot *provider;
    char *instance_id;       /* the provider's id once launched */
    enum ebb_billing billing;
    ebb_time_ms requested_at, launched_at, running_at;
    ebb_dur_ms work_base;    /* the job's saved work when it started */
    ebb_dur_ms reported_work; /* from the latest PROGRESS */
    ebb_time_ms reported_at;  /* 0: no progress reported yet */
    int launched;            /* the provider accepted it */
    int stop_sent;           /* asked to checkpoint and exit */
    ebb_time_ms stop_at;     /* when; the grace period runs from then */
    int notice;              /* a preemption notice arrived */
    int terminating;         /* terminate called */
    unsigned terminate_failures; /* in a row; the backstop asks again */
    /* When the market's offers run on another provider (run_on: sim ->
     * local), the market plugin models the instance's availability, its
     * notices and losses, as a shadow instance with the same token; the
     * job runs on `provider`. */
    struct ebb__plugin_slot *market; /* NULL: the runner is the market */
    char *shadow_id;         /* the market's instance, once launched */
    int shadow_lost;         /* the market took the instance away */
    /* The agent channel (docs/agent-protocol.md): the agent's bearer token
     * is "<token>.<agent_secret>". */
    char agent_secret[65];   /* "" for an attempt taken back after a restart */
    char agent_hash[65];     /* hex SHA-256 of the secret: what is stored */
    ebb_time_ms agent_seen;  /* its latest report; 0: none yet */
    ebb_time_ms notice_deadline; /* what the metadata endpoint says; 0: none */
    int agent_exited;        /* it reported the job's end */
    char imds_token[33];     /* the metadata endpoint's session token */
    int confirming;          /* asking the provider whether it still runs */
    /* Releases the instance if the agent does not finish in time. */
    struct ebb__timer backstop;
};

struct ebb__job {
    struct ebb__engine *engine;
    struct ebb__job *next;   /* all jobs, in submission order */
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
    struct ebb__attempt *current;
    /* What to do once the current instance is released. */
    enum ebb__job_state after_release;
    size_t launch_next;      /* offer to launch then, or SIZE_MAX */
    char after_reason[192];
    char *workdir;           /* where a local job runs; NULL: the agent's */
    int64_t owner_uid;       /* who submitted it; -1: unknown */
    int held;                /* taken back after a restart: its instance is
                              * being reconciled; not planned until then */
    struct ebb__timer wake;
    int dirty;                   /* in the engine's dirty queue */
    struct ebb__job *next_dirty;
    /* Market offers this job may use, ascending; offers examined so far
     * (the market only ever appends). */
    size_t *allowed;
    size_t n_allowed, cap_allowed, offers_examined;
};

struct ebb__engine_options {
    struct ebb__clock *clock;
    struct ebb__store *store;
    struct ebb__registry *registry;  /* providers and policies, started */
    const struct ebb__catalog *catalog; /* may be NULL */
    const char *default_policy;
    int store_prices;                /* write observed prices to the store */
    /* Where agents reach ebbd; NULL without an agent API (backtests). */
    const char *agent_url;
    ebb_dur_ms agent_heartbeat;       /* wall time between agent reports */
    ebb_dur_ms agent_heartbeat_timeout; /* wall time of silence before ebbd
                                         * asks the provider */
    const char *checkpoint_root;     /* default checkpoint dirs: ROOT/<job> */
    /* run_on: market plugin -> runner plugin. */
    const struct ebb__run_on *run_on;
    size_t n_run_on;
    /* Where agents' checkpoint durations are counted (seconds); NULL:
     * nowhere. ebbd's metrics own it. */
    struct ebb__histogram *checkpoint_durations;
    /* Teams' monthly caps and currency_rates (borrowed); NULL: no team
     * caps, and only USD amounts convert (backtests). */
    const struct ebb__config *budget_config;
};

struct ebb__engine_poll;
struct ebb__recovery;

/* How a provider's price polls fare, for `ebb providers` and metrics. */
struct ebb__provider_health {
    uint64_t polls, errors;
    int last_status;         /* of the latest poll: 0 or an EBB_E* code */
    ebb_time_ms last_at;     /* 0: never polled */
    int stopped;             /* polling stopped (authentication failed) */
};

struct ebb__engine {
    struct ebb__engine_options opt;
    struct ebb__market market;
    struct ebb__job *jobs;
    /* Jobs the next planning pass decides for, in the order they were
     * marked: a pass costs what it plans, not the number of jobs. */
    struct ebb__job *dirty_first, *dirty_last;
    struct ebb__job **jobs_tail;
    /* Jobs by id: open addressing, a power-of-two size, at most half full. */
    struct ebb__job **by_id;
    size_t by_id_cap;
    size_t n_jobs;
    size_t n_active;                 /* jobs not in a terminal state */
    struct ebb__timer plan_timer;
    struct ebb__timer agent_sweep;   /* looks for silent agents */
    struct ebb__recovery *recovery;  /* instances to reconcile; NULL: none */
    struct ebb__engine_poll *polls;  /* one per provider */
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
    /* Forecasts of the view's offers in another currency, converted. */
    struct ebb_forecast_point *view_fc;
    size_t view_fc_n, view_fc_cap;
    struct ebb__release *releases;   /* engine_release.c */
    /* Provider calls a planning pass holds back (engine_calls.c). */
    int batching;
    struct ebb__provider_call *calls;
    size_t n_calls, calls_cap;
};

/* Prepares the engine; the registry's providers must already be started
 * with a host env whose sink is this engine (see ebb__engine_host_env).
 * Returns 0 or EBB_ENOMEM. */
int ebb__engine_init(struct ebb__engine *e, const struct ebb__engine_options *o);

/* Frees jobs and market; stops the engine's timers. Instances still running
 * are not terminated (ebbd reconciles them at the next start). */
void ebb__engine_fini(struct ebb__engine *e);

/* Fills the sink part of a host env so provider events reach `e`. */
void ebb__engine_host_env(struct ebb__engine *e, struct ebb__host_env *env);

/* The poll health of provider `provider`, or NULL if none is loaded. */
const struct ebb__provider_health *
ebb__engine_provider_health(const struct ebb__engine *e, const char *provider);

/* Asks every provider for prices now. */
void ebb__engine_poll_prices(struct ebb__engine *e);

/* Submits a job at the clock's current time. Takes ownership of *spec
 * (zeroed on return). `spec_yaml` is stored verbatim (may be ""). On
 * success *out (may be NULL) is the job, owned by the engine. Errors
 * (unknown policy, a job no offer can ever run) are EBB_EINVAL with d. */
int ebb__engine_submit(struct ebb__engine *e, struct ebb__job_spec *spec,
                       const char *spec_yaml, int64_t owner_uid,
                       const char *workdir, struct ebb__job **out,
                       struct ebb_diag *d);

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

/* Writes that must commit with a job's row or not at all (a schedule's
 * link to its run): `write` runs inside the transaction that stores the
 * job, with the new job's id; a non-zero return (an EBB_E* code) rolls
 * the job back and fails the submission. */
struct ebb__submit_also {
    int (*write)(void *arg, struct ebb__store *s, const char *job_id);
    void *arg;
};

/* As ebb__engine_submit(), with `also` (may be NULL) written in the same
 * transaction as the job. */
int ebb__engine_submit_also(struct ebb__engine *e, struct ebb__job_spec *spec,
                            const char *spec_yaml, int64_t owner_uid,
                            const char *workdir, const struct ebb__submit_also *also,
                            struct ebb__job **out, struct ebb_diag *d);

/* The job with this id, or NULL. */
struct ebb__job *ebb__engine_job(const struct ebb__engine *e, const char *id);

/* Whether offer `o` of the market is allowed by the job's resources and
 * market. */
int ebb__engine_offer_allowed(const struct ebb__engine *e,
                              const struct ebb__job *job, size_t offer);

/* The job's work done by `now`: saved work, plus the running instance's
 * progress extrapolated from its last report. */
ebb_dur_ms ebb__job_work_done(const struct ebb__job *job, ebb_time_ms now);

/* Internal to engine*.c: planner (engine_plan.c), executor
 * (engine_exec.c) and offers' outlook (engine_outlook.c). */
void ebb__engine_outlook(struct ebb__engine *e, size_t offer, ebb_time_ms now);
/* Brings job->allowed up to date with the market. Returns 0 or ENOMEM. */
int ebb__engine_update_allowed(struct ebb__job *job);
/* Marks dirty every unfinished job that may use `offer` (SIZE_MAX: all). */
void ebb__engine_wake_offer(struct ebb__engine *e, size_t offer,
                            const struct ebb__job *except);
void ebb__engine_mark_dirty(struct ebb__job *job);
void ebb__engine_plan_job(struct ebb__job *job);
void ebb__engine_set_state(struct ebb__job *job, enum ebb__job_state to,
                           const char *fmt, ...) EBB_PRINTF(3, 4);
void ebb__engine_launch(struct ebb__job *job, size_t offer, const char *reason);
void ebb__engine_release(struct ebb__job *job, enum ebb__job_state after,
                         size_t launch_next, const char *reason);
/* As ebb__engine_release() without a checkpoint: the instance is
 * terminated now and the job keeps its latest checkpoint (budget caps
 * use it when there is no room left for the grace period). */
void ebb__engine_release_now(struct ebb__job *job, enum ebb__job_state after,
                             const char *reason);
void ebb__engine_instance_event(void *sink, const char *provider,
                                const struct ebb_instance_event *ev);
/* The job whose current attempt has this token, or NULL. */
struct ebb__job *ebb__engine_job_of_token(struct ebb__engine *e, const char *token);
/* The executor's steps the instance events (engine_events.c) take too:
 * bill and record the end of the current attempt at `end`; go where the
 * release said once the instance is gone; terminate the current instance;
 * count the coming release as a preemption; release the instance if the
 * agent does not end the job in time; "spot p3.2xlarge us-east-1a aws". */
void ebb__engine_finish_attempt(struct ebb__job *job, ebb_time_ms end,
                                const char *state, const char *why);
void ebb__engine_after_instance(struct ebb__job *job);
void ebb__engine_terminate(struct ebb__job *job);
void ebb__engine_mark_preempted(struct ebb__job *job, const char *why);
void ebb__engine_arm_backstop(struct ebb__job *job);
void ebb__engine_describe_offer(const struct ebb__offer *o, char *buf, size_t len);

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
/* Launches the market's shadow again for the job's current attempt. */
void ebb__engine_relaunch_shadow(struct ebb__job *job);

/* ---- provider calls after a commit (engine_calls.c) ---- */

/* A launch or terminate that must follow the store writes announcing it. */
struct ebb__provider_call {
    struct ebb__job *job;
    char token[96];            /* the attempt it is for (filled when queued) */
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

/* `amount` of `from` in `to` with ebb.yaml's currency_rates (without a
 * config, as in backtests, only USD converts, to itself). Returns 0,
 * EBB_ENOTFOUND (no rate) or EBB_EINVAL (overflow). */
int ebb__engine_convert(const struct ebb__engine *e, ebb_micros amount,
                        const char *from, const char *to,
                        enum ebb__rounding how, ebb_micros *out);
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

/* Caps and spend in USD micro-units. */
struct ebb__budget_usage {
    int has_cap;
    ebb_micros cap;
    ebb_micros spent;      /* billed plus what running instances accrued */
    ebb_micros committed;  /* worst case of running jobs until their next
                            * checkpoint, beyond what they spent */
};

/* The price per hour the job's running instance is billed at `now`, in
 * its offer's currency: the price now, or under hourly billing the price
 * at the start of the current instance-hour when that is higher. */
ebb_micros ebb__engine_billed_rate(const struct ebb__job *job, ebb_time_ms now);
/* Whether the job has a cap of its own or its team has one. */
int ebb__engine_budget_applies(const struct ebb__job *job);
/* Refuses a step that could pass the job's or its team's cap: the job is
 * then paused (a lower price may fit), or ends budget_exhausted when even
 * the cheapest step cannot fit; a running job checkpoints first. Returns
 * 1 when it refused; on 0 the step is the job's new commitment. */
int ebb__engine_budget_refuses(struct ebb__job *job,
                               const struct ebb__budget_step *s,
                               ebb_time_ms now);
/* Carries out a policy's STOP of a running capped job (or one in a capped
 * team): with a checkpoint when the grace period at today's price fits the
 * caps, else at once. Returns 1 when it did, 0 when no cap applies. */
int ebb__engine_budget_stop(struct ebb__job *job, const char *reason,
                            ebb_time_ms now);
/* For a job whose instance is checkpointing or under notice: when the
 * rest of its grace period at today's price no longer fits the caps (the
 * price rose), releases it at once, keeping the latest checkpoint. */
void ebb__engine_budget_guard(struct ebb__job *job, ebb_time_ms now);
/* A job's cap (if any), spend and commitment by `now`. Returns 0 or
 * EBB_ENOTFOUND when a currency has no rate. */
int ebb__engine_job_budget(const struct ebb__job *job, ebb_time_ms now,
                           struct ebb__budget_usage *u);
/* Team `t`'s cap, spend this calendar month (UTC) and what its running
 * jobs committed. Returns 0 or a negative code. */
int ebb__engine_team_budget(const struct ebb__engine *e,
                            const struct ebb__team *t, ebb_time_ms now,
                            struct ebb__budget_usage *u);
/* [start, end) of the UTC calendar month holding `now`. */
void ebb__budget_month(ebb_time_ms now, ebb_time_ms *start, ebb_time_ms *end);

/* ---- after a restart (engine_recover.c) ---- */

/* Takes back the unfinished jobs of the store. Jobs whose instance may
 * still run are held (not planned) until ebb__engine_reconcile() has asked
 * the providers. Returns 0 or a negative code (logged). */
int ebb__engine_recover(struct ebb__engine *e);
/* Lists every provider's instances and settles each held instance: adopted
 * when it still runs for a job that wants it, else terminated and billed up
 * to now; and terminates instances ebb's tags mark that no job wants. */
void ebb__engine_reconcile(struct ebb__engine *e);

/* Frees what is left of a reconciliation (engine end). */
void ebb__engine_recovery_free(struct ebb__engine *e);
/* Readies a new attempt's timers. */
void ebb__engine_attempt_init(struct ebb__job *job, struct ebb__attempt *a);

/* Frees an attempt (its strings and timer). */
void ebb__engine_attempt_free(struct ebb__engine *e, struct ebb__attempt *a);

/* How long an offer whose provider reported no capacity stays unavailable. */
#define EBB__NO_CAPACITY_PAUSE (15 * EBB_MS_PER_MINUTE)

/* ---- agents (engine_agent.c) ---- */

/* The shortest grace period an agent gets under an accelerated clock. */
#define EBB__AGENT_MIN_GRACE (10 * EBB_MS_PER_SECOND)

/* The job's checkpoint grace period in wall time, as its agent gets it. */
ebb_dur_ms ebb__engine_agent_grace(const struct ebb__job *job);

/* What an agent reports (docs/agent-protocol.md, POST /v1/agent/events). */
enum ebb__agent_kind {
    EBB__AGENT_HOST,
    EBB__AGENT_STARTED,
    EBB__AGENT_HEARTBEAT,
    EBB__AGENT_PROGRESS,
    EBB__AGENT_CHECKPOINT,
    EBB__AGENT_NOTICE,
    EBB__AGENT_EXITED,
};

struct ebb__agent_report {
    enum ebb__agent_kind kind;
    double fraction;        /* PROGRESS, CHECKPOINT; < 0: not given */
    const char *path;       /* CHECKPOINT */
    ebb_dur_ms duration;    /* CHECKPOINT: wall ms from the signal; 0: the
                             * job took it unasked (or not given) */
    ebb_time_ms deadline;   /* NOTICE */
    const char *reason;     /* NOTICE: where it came from */
    int status, signal, stopped; /* EXITED */
    /* HOST: what the agent found (nvidia_smi: it could look). */
    int nvidia_smi;
    size_t n_gpus;
    const char *gpu_model;       /* the first GPU's name as reported */
    double gpu_memory_gb_min;    /* the smallest GPU's memory */
    int pcie_width_min;          /* the narrowest link; 0: unknown */
};

enum ebb__agent_command { EBB__AGENT_NONE, EBB__AGENT_STOP, EBB__AGENT_RELEASE };

/* The narrowest PCIe link a GPU host may have: rental hosts sometimes run
 * GPUs on x1/x4 risers, which starve training of bandwidth. */
#define EBB__MIN_PCIE_WIDTH 8
/* How long a machine refused by the host check stays out of the choice. */
#define EBB__REFUSED_HOST_PAUSE (24 * EBB_MS_PER_HOUR)

struct ebb__agent_reply {
    enum ebb__agent_command command;
    ebb_dur_ms grace;        /* STOP: wall time the job has */
    char reason[192];
};

/* Records an agent's report on `job` (whose agent it is) and says what
 * the agent should do next. */
void ebb__engine_agent_report(struct ebb__job *job,
                              const struct ebb__agent_report *r,
                              struct ebb__agent_reply *reply);

/* `size / 2` random bytes (OpenSSL's CSPRNG) as lower-case hex into `hex`
 * (size: an odd buffer size, e.g. 65 for 32 bytes). Returns 0 or EBB_EIO. */
int ebb__random_hex(char *hex, size_t size);

/* Hex SHA-256 of `secret` into hash[65]. Returns 0 or EBB_EIO. */
int ebb__agent_secret_hash(const char *secret, char hash[65]);

/* The job of the agent holding `bearer` ("<token>.<secret>"), or NULL
 * when no live instance holds it (compared in constant time). */
struct ebb__job *ebb__engine_agent_job(struct ebb__engine *e, const char *bearer);

/* Starts the periodic look for agents that went silent (live engines with
 * an agent API only). */
void ebb__engine_agent_sweep_start(struct ebb__engine *e);

/* Cancels a job: checkpoints and releases its instance if it has one.
 * Returns 0, or EBB_EINVAL when it has already ended. */
int ebb__engine_cancel(struct ebb__job *job, const char *why);

#endif
