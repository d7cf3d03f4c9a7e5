/* The engine's face to the rest of ebb: ebbd (src/daemon/), `ebb backtest`
 * (src/report/backtest.c) and the engine on the virtual clock (vengine.h).
 *
 * The engine holds jobs, the planner that asks their policies what to do,
 * the executor that carries decisions out through provider plugins, and
 * the ledger entries that follow. ebbd runs it on the real clock against
 * real providers; `ebb backtest` runs the very same code on the virtual
 * clock against the sim provider.
 *
 * Everything happens in handlers of clock timers and provider callbacks:
 * a price poll's answer, an instance event (running, notice, lost, exited,
 * progress, checkpoint), a job's wake-up time. Handlers mark jobs "dirty";
 * one planning pass at the current time then decides for each dirty job in
 * the order it was marked, which keeps runs deterministic.
 *
 * Durable intent before action: a launch writes the instance row (with its
 * idempotency token) before calling the provider; every state change is a
 * job_events row with its reason.
 *
 * The engine and its jobs are opaque here: callers read them through the
 * accessors and snapshots below, and change them only through the
 * functions below. The engine's own files share engine/internal.h.
 */
#ifndef EBB_ENGINE_H
#define EBB_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include <ebb/diag.h>
#include <ebb/policy.h>
#include <ebb/types.h>

#include "base/currency.h"
#include "jobs/jobspec.h"
#include "market/market.h"
#include "store/store_speeds.h"

struct ebb__catalog;
struct ebb__store_prices;
struct ebb__clock;
struct ebb__config;
struct ebb__histogram;
struct ebb__host_env;
struct ebb__registry;
struct ebb__run_on;
struct ebb__store;
struct ebb__team;

struct ebb__engine;
struct ebb__job;

/* ---- job states ---------------------------------------------------------- */

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

/* The state's name as stored and shown ("budget_exhausted"); "?" for a
 * value outside the enum. */
const char *ebb__job_state_name(enum ebb__job_state s);
/* Whether a job in state `s` has ended for good. */
int ebb__job_state_terminal(enum ebb__job_state s);

/* ---- the engine's life --------------------------------------------------- */

/* One event for notifications. Strings and `spec` borrowed for the call. */
struct ebb__engine_note {
    const char *type;     /* "job.state", "job.preempted", "budget.threshold",
                           * "budget.forecast", "deadline.at_risk" */
    const char *key;      /* NULL: a new event; else the event happens once
                           * and this names it ("budget:<job>:80") */
    const struct ebb__job_spec *spec; /* its notify: list and team */
    const char *team;     /* NULL: spec's team */
    const char *job_id, *state, *reason, *currency;
    ebb_micros spent;     /* the job's spend so far, in `currency` */
    ebb_time_ms at;       /* the engine's clock */
};

struct ebb__engine_options {
    struct ebb__clock *clock;
    struct ebb__store *store;
    struct ebb__registry *registry;  /* providers and policies, started */
    const struct ebb__catalog *catalog; /* may be NULL */
    const char *default_policy;
    int store_prices;                /* write observed prices to the store */
    /* Default prices of checkpoint stores (data/store_prices.csv,
     * market/store_prices.h); NULL: only what ebb.yaml's stores say. */
    const struct ebb__store_prices *store_fees;
    /* Where agents reach ebbd; NULL without an agent API (backtests). */
    const char *agent_url;
    /* How agents trust ebbd's certificate (docs/agent-protocol.md); both
     * NULL for a plain http:// URL. The pin is "sha256//<base64>"; the CA
     * is PEM text, given when a configured certificate chains to it. */
    const char *agent_tls_pin;
    const char *agent_tls_ca;
    /* Wall time an instance's enrolment token stays good after its
     * launch was asked for; 0: EBB__ENROL_TTL_DEFAULT. */
    ebb_dur_ms agent_enrol_ttl;
    /* Wall time after a launch by which every node of a gang must have
     * reported its host, else the gang is released (0: 10 minutes). */
    ebb_dur_ms agent_gang_timeout;
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
    /* Events worth a person's attention (docs/notify.md): called inside
     * the store transaction that records what the event reports, so that
     * what it writes (ebbd's outbox) commits with the change or not at
     * all. NULL: no notifications (backtests). */
    void (*note)(void *arg, const struct ebb__engine_note *n);
    void *note_arg;
    /* How long an offer's outlook is kept while its history does not move
     * (engine_outlook.c); 0: an hour, the forecast's step. ebb plan's
     * sampled futures hold each price for hours, and a longer time saves
     * their engines most of the forecasts (report/plan.c). */
    ebb_dur_ms outlook_refresh;
};

/* Makes an engine with options `o` (copied; what they point to is
 * borrowed and must outlive the engine) into *out. Provider events reach
 * it through the host env that ebb__engine_host_env() fills, which must
 * be done before the first event (ebbd starts its providers before the
 * engine, vengine after). Returns 0 or EBB_ENOMEM (*out is NULL). */
int ebb__engine_new(const struct ebb__engine_options *o,
                    struct ebb__engine **out);

/* How far back the policies' outlook of an offer reads its history
 * (engine_outlook.c; older history adds cost and little skill,
 * docs/forecast.md). ebb plan gives its sampled engines as much. */
#define EBB__ENGINE_OUTLOOK_HISTORY (28 * EBB_MS_PER_DAY)

/* Frees what this thread holds for the engines it ran (OpenSSL's
 * per-thread random state, which agents' secrets draw on). A thread that
 * ran engines calls it before it ends (report/plan.c's workers); the
 * loop's thread need not. */
void ebb__engine_thread_done(void);

/* Frees jobs and market, stops the engine's timers and frees `e` (NULL is
 * ignored). Instances still running are not terminated (ebbd reconciles
 * them at the next start). Providers must be destroyed first: they cancel
 * their pending calls into the engine. */
void ebb__engine_free(struct ebb__engine *e);

/* The options the engine runs with (read-only; the setters below change
 * the two that are known only once the engine exists). */
const struct ebb__engine_options *
ebb__engine_options(const struct ebb__engine *e);

/* opt.outlook_refresh from now on (a backtest sets it after opening its
 * engine). */
void ebb__engine_set_outlook_refresh(struct ebb__engine *e, ebb_dur_ms refresh);

/* Where agents reach ebbd from now on (borrowed; NULL: no agent API):
 * ebbd knows it only once the agent API, which needs the engine, listens. */
void ebb__engine_set_agent_url(struct ebb__engine *e, const char *url);

/* How agents trust ebbd's certificate from now on (both borrowed; NULL:
 * not given), known once the agent API has its certificate. */
void ebb__engine_set_agent_tls(struct ebb__engine *e, const char *pin,
                               const char *ca_pem);

/* Teams' caps and currency_rates from now on (borrowed; NULL: none). */
void ebb__engine_set_budget_config(struct ebb__engine *e,
                                   const struct ebb__config *config);

/* Where events for notifications go from now on (opt.note, opt.note_arg;
 * NULL: nowhere): for tests of an engine that vengine made. */
void ebb__engine_set_note(struct ebb__engine *e,
                          void (*note)(void *arg, const struct ebb__engine_note *n),
                          void *arg);

/* Fills the sink part of a host env so instance events reach `e`. */
void ebb__engine_host_env(struct ebb__engine *e, struct ebb__host_env *env);

/* The poller's sink (struct ebb__poll_sink, plugin/poller.h; `engine` is
 * the struct ebb__engine): the prices a poll of `provider` brought (also
 * a failed one's, which may have read some) go into the market, the
 * store when it keeps prices, and wake the jobs they concern. */
void ebb__engine_prices(void *engine, const char *provider, int status,
                        const struct ebb_price *prices, size_t n);

/* Every provider has answered a first poll: instances left from before a
 * restart are reconciled now (engine_recover.c). */
void ebb__engine_all_polled(void *engine);

/* Takes back the unfinished jobs of the store after a restart. Jobs whose
 * instance may still run are held (not planned) until every provider has
 * listed its instances (engine_recover.c). Returns 0 or a negative code
 * (logged). */
int ebb__engine_recover(struct ebb__engine *e);

/* Starts the periodic look for agents that went silent (live engines with
 * an agent API only). */
void ebb__engine_agent_sweep_start(struct ebb__engine *e);

/* The engine's market: every offer seen, its price history and what ebb
 * runs on it (read-only; valid until the next event changes it). */
const struct ebb__market *ebb__engine_market(const struct ebb__engine *e);

struct ebb__engine_stats {
    size_t jobs;             /* jobs the engine holds */
    size_t active;           /* of them, not in a terminal state */
    uint64_t decisions;      /* policy calls so far */
};

/* Fills *s with the engine's counts. */
void ebb__engine_stats(const struct ebb__engine *e,
                       struct ebb__engine_stats *s);

/* ---- jobs ---------------------------------------------------------------- */

/* Submits a job at the clock's current time. Takes ownership of *spec
 * (zeroed on return). `spec_yaml` is stored verbatim (may be ""). On
 * success *out (may be NULL) is the job, owned by the engine. Errors
 * (unknown policy, a job no offer can ever run) are EBB_EINVAL with d. */
int ebb__engine_submit(struct ebb__engine *e, struct ebb__job_spec *spec,
                       const char *spec_yaml, int64_t owner_uid,
                       const char *workdir, struct ebb__job **out,
                       struct ebb_diag *d);

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

/* Cancels a job: checkpoints and releases its instance if it has one.
 * Returns 0, or EBB_EINVAL when it has already ended. */
int ebb__engine_cancel(struct ebb__job *job, const char *why);

/* The job with this id, or NULL. */
struct ebb__job *ebb__engine_job(const struct ebb__engine *e, const char *id);

/* The job after `job` in submission order; the first for NULL; NULL after
 * the last. */
struct ebb__job *ebb__engine_job_next(const struct ebb__engine *e,
                                      const struct ebb__job *job);

/* The job's id (borrowed: as long as the job) and its state now. */
const char *ebb__engine_job_id(const struct ebb__job *job);
enum ebb__job_state ebb__engine_job_state(const struct ebb__job *job);

/* What a job is now. The strings and the spec are the job's (borrowed):
 * valid as long as the job, which the engine keeps until it is freed. */
/* What a waiting job waits for (`ebb queue`), recorded with its reason
 * each time the engine looks at it: planning (not yet looked at since
 * its state changed), its team's or its owner's quota, a budget cap, a
 * price (its policy waits for the market), a policy timer (its policy
 * named a time to look again), capacity (no offer it may use is
 * available), a retry (it backs off after a failed run or launch). */
#define EBB__WAIT_KINDS(XX)                                                    \
    XX(NONE, "")                                                               \
    XX(PLANNING, "planning")                                                   \
    XX(QUOTA, "quota")                                                         \
    XX(BUDGET, "budget")                                                       \
    XX(PRICE, "price")                                                         \
    XX(TIMER, "policy_timer")                                                  \
    XX(CAPACITY, "capacity")                                                   \
    XX(RETRY, "retry")

enum ebb__wait_kind {
#define EBB__WAIT_KIND_ENUM(name, text) EBB__WAIT_##name,
    EBB__WAIT_KINDS(EBB__WAIT_KIND_ENUM)
#undef EBB__WAIT_KIND_ENUM
};

/* The kind's name as shown ("policy_timer"; "" for NONE). Static. */
const char *ebb__wait_kind_name(enum ebb__wait_kind k);

struct ebb__job_info {
    const char *id;
    const struct ebb__job_spec *spec; /* as submitted (name, team, ...) */
    const char *policy;      /* its policy plugin's name */
    enum ebb__job_state state;
    ebb_time_ms submitted_at, deadline, finished_at; /* 0: none (yet) */
    ebb_dur_ms work_total, work_saved;
    ebb_micros budget;       /* its own cap, in `currency`; < 0: none */
    ebb_micros spent;        /* billed so far, in `currency` */
    const char *currency;    /* the budget's ("USD" without one) */
    unsigned attempts, preemptions, restarts, retries;
    int64_t owner_uid;       /* who submitted it; -1: unknown */
    const char *workdir;     /* where a local job runs; NULL: the agent's */
    int has_instance;        /* an instance is (being) launched for it */
    /* Why it waits (pending, waiting, paused, preempted): the latest
     * reason its policy or the engine gave; NULL when it does not wait. */
    const char *waiting_reason;
    enum ebb__wait_kind waiting_kind; /* NONE when it does not wait */
};

/* The uid a provider that runs `job` on this machine runs it as: its
 * spec's run_as (which ebbd let its owner name at submit), else its
 * owner's; -1 when unknown or when run_as no longer names a user. */
int64_t ebb__engine_job_run_uid(const struct ebb__job *job);

/* Tells opt.note (notifications) of an event `type` of `job` that the
 * engine does not see itself ("checkpoint.failed": a checkpoint that
 * failed or could not be stored), with `reason`. Call it inside the
 * transaction that records what happened. */
void ebb__engine_job_note(struct ebb__job *job, const char *type, const char *reason);

/* Fills *out with what `job` is now. */
void ebb__engine_job_info(const struct ebb__job *job,
                          struct ebb__job_info *out);

/* How many nodes the job runs on (engine_state.c): its spec's nodes, 1
 * for a single instance (and for a spec built without the parser, nodes
 * 0). Prices, hazards, capacity, caps and quotas count each node. */
int ebb__job_nodes(const struct ebb__job *job);

/* The attempts' idempotency tokens ("<job id>-a<n>") fit in this. */
#define EBB__TOKEN_SIZE 96

/* The instance a job runs on now. Strings are borrowed from the attempt:
 * valid until the job's next event. */
struct ebb__attempt_info {
    const char *token;       /* the idempotency token */
    const char *provider;    /* the plugin that runs the instance */
    size_t offer;            /* index into ebb__engine_market()'s offers */
    const char *instance_id; /* the provider's id; NULL until launched */
    int launched;            /* the provider accepted the launch */
    enum ebb_billing billing;
    ebb_time_ms launched_at; /* billing starts here (once launched) */
    int notice;              /* a preemption notice arrived */
    ebb_time_ms notice_deadline; /* when the instance goes; 0: no notice */
    const char *imds_token;  /* the metadata endpoint's session; "": none */
    /* The speed the job is planned with there (ebb__engine_speed): learned
     * from `speed_samples` rates, or the catalog's when 0. */
    double speed;
    long long speed_samples;
    unsigned nodes;          /* 1, or a gang's size (docs/gangs.md) */
};

/* One node of a job's current attempt, for `ebb job show`. */
struct ebb__node_info {
    unsigned rank;
    const char *instance_id; /* its member's id; "" before the launch */
    const char *addr;        /* where its peers reach it; "" before its check */
    int port;
    const char *gpu_model, *driver, *cuda; /* as its host report said */
    int64_t link_mbps;
    ebb_time_ms seen;        /* its agent's latest report; 0: none */
    int started, exited;
};

/* Node `rank` of the job's current attempt into *out (its strings borrowed
 * until the attempt ends; instance_id into id_buf[id_len]). Returns 0, or
 * EBB_ENOTFOUND (no attempt, no such node). */
int ebb__engine_job_node(const struct ebb__job *job, unsigned rank,
                         struct ebb__node_info *out, char *id_buf, size_t id_len);

/* The speed the engine plans with on market offer `offer` for any job
 * family (`ebb prices`, docs/policies.md "Learned speed"): the catalog's
 * (*samples 0) until some job's progress was measured there, then the
 * estimate from the latest rates of every family that ran there. */
double ebb__engine_offer_speed(const struct ebb__engine *e, size_t offer,
                               long long *samples);

/* What the engine learned for job family `family` (docs/policies.md
 * "Learned speed"), one host at a time to `cb`: the key (its strings
 * borrowed for the call), the rates counted in all and the latest ones
 * as the store keeps them (ebb__speed_format's text). Stops at cb's
 * non-zero value and returns it; else 0. ebbd gives them to the quotes of
 * the family's jobs (daemon_plan.c). */
int ebb__engine_speeds_of(const struct ebb__engine *e, const char *family,
                          ebb__speed_row_cb cb, void *arg);

/* Sets the engine's estimate for `k` to `samples` rates counted and the
 * latest `rates` (that text), as if learned (a quote's engine starts so
 * with ebbd's). Returns 0, EBB_EINVAL when `rates` does not parse, or
 * EBB_ENOMEM. */
int ebb__engine_speed_learned(struct ebb__engine *e, const struct ebb__speed_key *k,
                              long long samples, const char *rates);

/* The stall guard (docs/agent.md "Stall guard"): how long the job's
 * current instance may go without progress before it is moved; 0: the
 * guard is off (no instance, or no progress line on it yet). */
ebb_dur_ms ebb__engine_stall_after(const struct ebb__job *job);

/* The GPU guard (the same section): how long the job's GPU utilisation
 * may stay under its spec's min_gpu_util; 0: the spec sets none. Whether
 * it watches the current instance: *reports (how many utilisation
 * reports came after its restart overhead; 0: the guard cannot see the
 * GPUs yet) and *latest (the last one, %). */
ebb_dur_ms ebb__engine_gpu_window(const struct ebb__job *job, unsigned *reports,
                                  int *latest);

/* The periodic checkpoint interval the job's agent is told: the spec's
 * checkpoint.every, or, when it leaves it out and the job has a store,
 * the one the engine chose for the offer it runs on (docs/stores.md);
 * 0: none. */
ebb_dur_ms ebb__engine_job_checkpoint_every(const struct ebb__job *job);

/* Fills *out with the job's current instance. Returns 0, or EBB_ENOTFOUND
 * when the job has none. */
int ebb__engine_job_attempt(const struct ebb__job *job,
                            struct ebb__attempt_info *out);

/* Whether offer `offer` of the market suits the job's resources and
 * currency, judged for market setting `market` (the job's own is
 * info.spec->market; a backtest asks what on-demand would have cost). */
int ebb__engine_offer_allowed(const struct ebb__engine *e,
                              const struct ebb__job *job, size_t offer,
                              enum ebb_job_market market);

/* ---- budgets (engine_budget.c, docs/budgets.md) -------------------------- */

/* `amount` of `from` in `to` with ebb.yaml's currency_rates (without a
 * config, as in backtests, only USD converts, to itself). Returns 0,
 * EBB_ENOTFOUND (no rate) or EBB_EINVAL (overflow). */
int ebb__engine_convert(const struct ebb__engine *e, ebb_micros amount,
                        const char *from, const char *to,
                        enum ebb__rounding how, ebb_micros *out);

/* Caps and spend in USD micro-units. */
struct ebb__budget_usage {
    int has_cap;
    ebb_micros cap;
    ebb_micros spent;      /* billed plus what running instances accrued */
    ebb_micros committed;  /* worst case of running jobs until their next
                            * checkpoint, beyond what they spent */
};

/* A job's cap (if any), spend and commitment by `now`. Returns 0 or
 * EBB_ENOTFOUND when a currency has no rate. */
int ebb__engine_job_budget(const struct ebb__job *job, ebb_time_ms now,
                           struct ebb__budget_usage *u);
/* Team `t`'s cap, spend this calendar month (UTC) and what its running
 * jobs committed. Returns 0 or a negative code. */
int ebb__engine_team_budget(const struct ebb__engine *e,
                            const struct ebb__team *t, ebb_time_ms now,
                            struct ebb__budget_usage *u);
/* User `user`'s cap in team `t` (ebb.yaml's teams.T.users), and the
 * spend this calendar month and commitments of the jobs `uid` (the
 * user's; -1: none, nothing spent) owns in the team. Returns 0 or a
 * negative code. */
struct ebb__team_user;
int ebb__engine_user_budget(const struct ebb__engine *e, const struct ebb__team *t,
                            const struct ebb__team_user *user, int64_t uid,
                            ebb_time_ms now, struct ebb__budget_usage *u);
/* What a team's instances (or one user's in the team) hold now
 * (engine_quota.c): GPUs (the catalog's gpus column; 0 for an offer it
 * does not list) and the rate they are billed, USD micro-units per hour;
 * a gang's nodes count each, as instances. An instance counts from its
 * launch call until it ends. */
struct ebb__quota_use {
    int64_t gpus;
    ebb_micros burn;
    size_t instances;
};
/* Fills *u for team `team`'s instances, of the jobs `owner` owns only
 * when owner >= 0, `except`'s (may be NULL) left out. Returns 0. */
int ebb__engine_quota_use(const struct ebb__engine *e, const char *team,
                          int64_t owner, const struct ebb__job *except,
                          ebb_time_ms now, struct ebb__quota_use *u);
/* A waiting job's place in its team's queue (engine_order.c). */
struct ebb__queue_rank {
    int priority;            /* 0 to 1000: higher goes first */
    double usage;            /* its owner's spend this month over their
                              * share (fair_share teams; else 0): lower
                              * goes first */
    ebb_time_ms submitted_at; /* earlier goes first */
    size_t seq;              /* the last tie-break: submitted first (the
                              * engine's order of its jobs) goes first */
};
/* < 0 when `a` goes before `b`, > 0 after, 0 for the same rank. */
int ebb__queue_rank_cmp(const struct ebb__queue_rank *a, const struct ebb__queue_rank *b);
/* A member's fair share in team `t`, USD micro-units: their
 * teams.T.users budget when the team has a budget and they have one; else
 * an equal part of what the members' own budgets leave of the team's;
 * without a team budget, 1 USD for everyone (equal shares). Never 0. */
ebb_micros ebb__engine_fair_share(const struct ebb__engine *e, const struct ebb__team *t,
                                  const char *user);
/* Job `job`'s rank in its team's queue at `now` (the usage only in a team
 * with fair_share; else 0). */
void ebb__engine_job_rank(const struct ebb__job *job, ebb_time_ms now,
                          struct ebb__queue_rank *r);
/* The waiting jobs (no instance; pending, waiting, paused, preempted) of
 * `team` (NULL: every team's and those of none) in the order they are
 * considered, into *jobs (the caller frees the array; the jobs are the
 * engine's) and *n. Returns 0 or EBB_ENOMEM. */
int ebb__engine_queue(struct ebb__engine *e, const char *team, struct ebb__job ***jobs,
                      size_t *n);

/* [start, end) of the UTC calendar month holding `now`. */
void ebb__budget_month(ebb_time_ms now, ebb_time_ms *start, ebb_time_ms *end);

/* ---- agents (engine_agent.c, docs/agent-protocol.md) --------------------- */

/* What an agent reports (POST /v1/agent/events). */
enum ebb__agent_kind {
    EBB__AGENT_HOST,
    EBB__AGENT_STARTED,
    EBB__AGENT_HEARTBEAT,
    EBB__AGENT_PROGRESS,
    EBB__AGENT_CHECKPOINT,
    EBB__AGENT_NOTICE,
    EBB__AGENT_EXITED,
    /* A stored checkpoint the agent refused (path: its name, reason: the
     * fault), and a final checkpoint it did not upload (reason: why):
     * job events, nothing for the engine. */
    EBB__AGENT_CHECKPOINT_FALLBACK,
    EBB__AGENT_CHECKPOINT_SKIPPED,
};

struct ebb__agent_report {
    enum ebb__agent_kind kind;
    double fraction;        /* PROGRESS, CHECKPOINT; < 0: not given */
    const char *path;       /* CHECKPOINT, CHECKPOINT_*: its path or name */
    ebb_dur_ms duration;    /* CHECKPOINT: wall ms from the signal; 0: the
                             * job took it unasked (or not given) */
    /* CHECKPOINT of a job with a store (ebbd's own, once it is durable):
     * its plaintext bytes and the agent's wall time uploading them; 0:
     * not known. */
    int64_t bytes;
    ebb_dur_ms upload_ms;
    /* STARTED: the stored checkpoint it resumed from (its id; 0: none)
     * and what downloading it took; 0: nothing was downloaded. */
    int64_t resume_id;
    int64_t download_bytes;
    ebb_dur_ms download_ms;
    ebb_time_ms deadline;   /* NOTICE */
    int has_gpu_util;       /* HEARTBEAT: the host's mean GPU utilisation */
    int gpu_util;           /* (%), sampled since the last heartbeat */
    const char *reason;     /* NOTICE: where it came from; CHECKPOINT_*: why */
    int status, signal, stopped; /* EXITED */
    const char *error;      /* EXITED: why the job could not be started;
                             * NULL: it ran */
    /* HOST: what the agent found (nvidia_smi: it could look). */
    int nvidia_smi;
    size_t n_gpus;
    const char *gpu_model;       /* the first GPU's name as reported */
    double gpu_memory_gb_min;    /* the smallest GPU's memory */
    int pcie_width_min;          /* the narrowest link; 0: unknown */
    const char *driver_version;  /* NULL: not given */
    const char *cuda_version;    /* NULL: not given */
    int64_t link_mbps;           /* its network link; 0: unknown */
    const char *addr;            /* where its gang's peers reach it; NULL: not given */
    int port;                    /* the free port it found there; 0: none */
};

/* A checkpoint of the job became durable in its store (r: the CHECKPOINT
 * report with its bytes, duration and upload_ms) after the instance that
 * took it stopped running the job, so that no agent report carries it:
 * the engine holds it for its storage fee (docs/stores.md) and its next
 * download, and moves no progress. A job without a store, or one that
 * has ended, ignores it. The instance's own durable checkpoints go
 * through ebb__engine_agent_report() instead, never both. */
void ebb__engine_durable_checkpoint(struct ebb__job *job,
                                    const struct ebb__agent_report *r);

/* WAIT: a gang member's host report came before its peers': report
 * again after `retry` (docs/agent-protocol.md). */
enum ebb__agent_command {
    EBB__AGENT_NONE, EBB__AGENT_STOP, EBB__AGENT_RELEASE, EBB__AGENT_WAIT,
};

struct ebb__agent_reply {
    enum ebb__agent_command command;
    ebb_dur_ms grace;        /* STOP: wall time the job has left */
    ebb_dur_ms retry;        /* WAIT: wall ms */
    char reason[192];
    /* NONE to a gang member's host report: "NAME=value" for its job's
     * environment, borrowed from the engine until the attempt ends. */
    char *const *env;
    size_t n_env;
};

/* The job of the agent holding `bearer` ("<agent token>.<secret>"), and in
 * *rank its node (0 for a single instance), or NULL when no live instance
 * holds it (compared in constant time). */
struct ebb__job *ebb__engine_agent_job(struct ebb__engine *e, const char *bearer,
                                       unsigned *rank);

/* An instance's enrolment token starts with this; the rest is
 * "<token>.<secret>". */
#define EBB__ENROL_PREFIX "enrol:"
#define EBB__ENROL_TTL_DEFAULT EBB_MS_PER_HOUR
/* A bearer token, "<agent token>.<64 hex digits>", fits in this. */
/* An agent token (an attempt's, or a gang member's "<token>+<rank>")
 * fits in EBB__AGENT_TOKEN_SIZE. */
#define EBB__AGENT_TOKEN_SIZE (EBB__TOKEN_SIZE + 8)
#define EBB__BEARER_SIZE (EBB__AGENT_TOKEN_SIZE + 66)

/* Trades an instance's enrolment token for its agent's bearer token:
 * once, before it expires. The new session secret's hash replaces the
 * enrolment secret's in the store (a restart keeps the agent's session
 * and never takes the enrolment token back). Returns the job and fills
 * `bearer`, or returns NULL with the reason in `why` (unknown token, used
 * already, expired, store failure: `*status` says 401 or 503). */
struct ebb__job *ebb__engine_agent_enrol(struct ebb__engine *e, const char *enrol_token,
                                         char bearer[EBB__BEARER_SIZE], int *status,
                                         char *why, size_t whylen);

/* The job whose current attempt has this token, or NULL. */
struct ebb__job *ebb__engine_job_of_token(struct ebb__engine *e, const char *token);

/* Records the report of node `rank`'s agent on `job` (whose agent it is;
 * the job must have an instance) and says what the agent should do next. */
void ebb__engine_agent_report(struct ebb__job *job, unsigned rank,
                              const struct ebb__agent_report *r,
                              struct ebb__agent_reply *reply);

/* The job's grace period (engine_grace.c) in wall time, as its agent gets
 * it: whole in the job document; once the instance is stopping, what is
 * left of it until ebbd releases the instance. */
ebb_dur_ms ebb__engine_agent_grace(const struct ebb__job *job);

/* The metadata endpoint's session token of the job's current instance
 * (which it must have), drawn on first use; borrowed, valid as long as
 * the instance. NULL when no random bytes could be drawn. */
const char *ebb__engine_imds_token(struct ebb__job *job);

#endif
