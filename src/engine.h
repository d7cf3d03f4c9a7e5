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

#include <ebb/policy.h>

#include "catalog.h"
#include "clock.h"
#include "diag.h"
#include "host.h"
#include "jobspec.h"
#include "market.h"
#include "registry.h"
#include "store.h"

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
    int notice;              /* a preemption notice arrived */
    int terminating;         /* terminate called */
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
    char currency[4];
    unsigned attempts, preemptions, restarts, retries;
    struct ebb__attempt *current;
    /* What to do once the current instance is released. */
    enum ebb__job_state after_release;
    size_t launch_next;      /* offer to launch then, or SIZE_MAX */
    char after_reason[192];
    struct ebb__timer wake;
    int dirty;
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
};

struct ebb__engine_poll;

struct ebb__engine {
    struct ebb__engine_options opt;
    struct ebb__market market;
    struct ebb__job *jobs;
    struct ebb__job **jobs_tail;
    /* Jobs by id: open addressing, a power-of-two size, at most half full. */
    struct ebb__job **by_id;
    size_t by_id_cap;
    size_t n_jobs;
    size_t n_active;                 /* jobs not in a terminal state */
    struct ebb__timer plan_timer;
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

/* Asks every provider for prices now. */
void ebb__engine_poll_prices(struct ebb__engine *e);

/* Submits a job at the clock's current time. Takes ownership of *spec
 * (zeroed on return). `spec_yaml` is stored verbatim (may be ""). On
 * success *out (may be NULL) is the job, owned by the engine. Errors
 * (unknown policy, a job no offer can ever run) are EBB_EINVAL with d. */
int ebb__engine_submit(struct ebb__engine *e, struct ebb__job_spec *spec,
                       const char *spec_yaml, int64_t owner_uid,
                       struct ebb__job **out, struct ebb__diag *d);

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
void ebb__engine_instance_event(void *sink, const char *provider,
                                const struct ebb_instance_event *ev);

#endif
