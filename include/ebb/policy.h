/* ebb — the policy plugin ABI.
 *
 * A policy is pure: decide() looks at one job and the market as ebbd sees
 * them at `now` and returns a decision. It does no I/O and reads no clock,
 * so the same code runs live, in tests and in `ebb backtest`, and the same
 * input always gives the same decision.
 *
 * A policy plugin exports ebb_policy_entry() (declared below) returning a
 * static struct ebb_policy; ABI rules as for providers (see provider.h).
 *
 * The views ebbd passes to decide() (struct ebb_job_view, struct
 * ebb_market_view and each struct ebb_offer) grow the same way: each starts
 * with `struct_size`, set by ebbd to the size of the struct it was built
 * with, and new fields are only ever appended, each with a comment saying
 * so. A policy
 * - refuses (EBB_EINVAL) a view whose struct_size does not cover the
 *   fields of the first version (EBB_POLICY_*_SIZE_V1 below);
 * - reads an appended field only when struct_size covers it
 *   (EBB_POLICY_HAS(type, view, field)), and otherwise acts as if it were
 *   unset;
 * - steps through `offers` by offers[0].struct_size, not by its own
 *   sizeof(struct ebb_offer): every offer of one view has the same size,
 *   and an ebbd built with more fields lays them out wider.
 * Fields are never removed, reordered or retyped within one EBB_POLICY_ABI.
 */
#ifndef EBB_POLICY_H
#define EBB_POLICY_H

#include "common.h"
#include "config.h"
#include "host.h"

#define EBB_POLICY_ABI 1

/* 1 when the view `v`, a pointer to `type`, was built with field `f`: its
 * struct_size covers the field. */
#define EBB_POLICY_HAS(type, v, f)                                            \
    ((size_t)(v)->struct_size >= offsetof(type, f) + sizeof((v)->f))

/* Buckets of ebb_offer's up_lengths and down_lengths. */
#define EBB_PERIOD_BUCKETS 16

/* One forecast step of an offer's price. */
struct ebb_forecast_point {
    ebb_time_ms at;
    ebb_micros p10, p50, p90;
};

/* Something the job could run on now: one provider, place, type and market. */
struct ebb_offer {
    uint32_t struct_size;       /* sizeof(struct ebb_offer) in ebbd */
    const char *provider;
    const char *region;
    const char *zone;
    const char *instance_type;
    enum ebb_market market;
    ebb_micros price_per_hour;  /* in effect now, in the job's currency */
    double speed;               /* work per wall hour, reference type = 1.0 */
    int available;              /* 1 when a launch can succeed now */
    double preemption_per_hour; /* estimated hazard; 0 when unknown */
    /* Price forecast from now on, hourly; NULL/0 when none is known. */
    const struct ebb_forecast_point *forecast;
    size_t n_forecast;
    /* No p50 in `forecast` is below this (0 when unknown): with the price
     * now it bounds what any span can cost, so a policy can pass over
     * offers that cannot win without integrating their forecasts. */
    ebb_micros forecast_p50_low;
    /* Appended: the preemption hazard by hour of day, UTC: [h] is the
     * expected preemptions per hour of a run during hour h (00:00-00:59 is
     * 0). NULL when the history says nothing about the time of day; then
     * preemption_per_hour holds at every hour. Valid during the call. */
    const double *preemption_by_hour;
    /* Appended: the offer's spot capacity history as alternating periods
     * with capacity (up, capacity > 0) and without (down, 0), over the
     * hazard's window (the last 28 days, as of ebbd's latest outlook, at
     * most an hour old). up_lengths[b] and down_lengths[b] count the
     * periods that ended with a length in [2^b, 2^(b+1)) minutes (b = 0
     * also holds shorter ones, the last bucket longer ones);
     * availability_since is when the period in effect began (0: unknown,
     * e.g. before the window). NULL / 0 when the history says nothing;
     * on-demand offers have none. Valid during the call. */
    const unsigned *up_lengths;
    const unsigned *down_lengths;
    ebb_time_ms availability_since;
    /* Appended: what moving the job here costs once, in the job's
     * currency, beyond the price per hour: the egress of its newest
     * durable checkpoint out of its store's region or cloud (0: free, no
     * store or checkpoint, or the offer it runs on). Absent: 0. */
    ebb_micros transfer_cost;
};

struct ebb_market_view {
    uint32_t struct_size; /* sizeof(struct ebb_market_view) in ebbd */
    const struct ebb_offer *offers; /* stride: offers[0].struct_size */
    size_t n_offers;
    /* Appended: nonzero when ebbd promises that every view with this
     * generation, offers pointer and n_offers holds the same offers, except
     * `available` (which counts capacity for the job at hand), so that a
     * policy may keep what it derived from the offers alone for the next
     * job planned at the same instant. 0: no such promise. */
    uint64_t generation;
    /* Appended: for a policy whose flags hold EBB_POLICY_ASKS_FORECASTS,
     * ebbd may leave every offer's forecast, n_forecast and
     * forecast_p50_low unset (NULL / 0) until the policy asks for them:
     * fill_forecast(fill_ctx, k) sets those three fields of offers[k] in
     * place (ebbd owns the view's memory) and returns 0, or an EBB_E*
     * code with them left unset (no forecast known). The values are the
     * ones ebbd would have put there at once; asking again is cheap. NULL
     * when the offers came filled. Valid during the call. */
    int (*fill_forecast)(void *fill_ctx, size_t offer);
    void *fill_ctx;
};

enum ebb_job_market {
    EBB_JOB_SPOT = 0,          /* spot only */
    EBB_JOB_ON_DEMAND = 1,     /* on-demand only */
    EBB_JOB_SPOT_FALLBACK = 2, /* spot, on-demand when needed to finish */
};

/* What a policy may know about a job. */
struct ebb_job_view {
    uint32_t struct_size;        /* sizeof(struct ebb_job_view) in ebbd */
    const char *id;
    const char *name;
    enum ebb_job_market market;
    ebb_dur_ms work_total;       /* on the reference instance */
    ebb_dur_ms work_done;        /* saved in a checkpoint or in progress */
    ebb_time_ms submitted_at;
    ebb_time_ms deadline;        /* <= 0: no deadline */
    ebb_dur_ms restart_overhead; /* lost at every (re)start */
    ebb_dur_ms checkpoint_grace;
    ebb_micros budget;           /* 0 = no cap */
    ebb_micros spent;            /* billed, plus what the running instance
                                    has cost so far */
    unsigned preemptions;
    /* The running instance, if any: index into the market view's offers
     * (SIZE_MAX when not running) and when it started. */
    size_t running_offer;
    ebb_time_ms running_since;
    ebb_dur_ms work_saved;       /* in the latest complete checkpoint */
    const char *currency;        /* of budget, spent and offer prices */
    ebb_dur_ms checkpoint_every; /* reference work between periodic
                                    checkpoints; 0: none */
};

/* The sizes of the views' first versions: the least struct_size a policy
 * accepts. */
#define EBB_POLICY_OFFER_SIZE_V1                                              \
    (offsetof(struct ebb_offer, forecast_p50_low) + sizeof(ebb_micros))
#define EBB_POLICY_MARKET_SIZE_V1                                             \
    (offsetof(struct ebb_market_view, n_offers) + sizeof(size_t))
#define EBB_POLICY_JOB_SIZE_V1                                                \
    (offsetof(struct ebb_job_view, checkpoint_every) + sizeof(ebb_dur_ms))

enum ebb_decision_kind {
    EBB_DECIDE_WAIT = 0,   /* do nothing until `until` (or a market change) */
    EBB_DECIDE_LAUNCH = 1, /* start on `offer` (stopping the current one) */
    EBB_DECIDE_KEEP = 2,   /* keep the running instance */
    EBB_DECIDE_STOP = 3,   /* checkpoint and release the running instance */
};

struct ebb_decision {
    enum ebb_decision_kind kind;
    ebb_time_ms until;     /* WAIT, KEEP: when to ask again; 0 = on events */
    size_t offer;          /* LAUNCH: index into the market view's offers */
    char reason[160];      /* recorded in job_events, shown to users */
};

/* Flags of struct ebb_policy. */
/* The policy reads offers' forecasts only after asking for them through
 * ebb_market_view's fill_forecast: ebbd then computes only the forecasts
 * a decision reads. */
#define EBB_POLICY_ASKS_FORECASTS 1u

struct ebb_policy {
    uint32_t abi;          /* EBB_POLICY_ABI */
    uint32_t struct_size;  /* sizeof(struct ebb_policy) */
    const char *name;      /* "uniform-progress" */
    const char *description;

    const struct ebb_cfg_key *config_keys; /* ends with EBB_CFG_END */
    size_t config_size;

    int (*create)(const struct ebb_host *host, const void *config, void **self);
    void (*destroy)(void *self);

    /* Pure: fills *out from the arguments alone. Returns 0 or EBB_E*.
     * ebbd calls one instance from one thread at a time, so an instance
     * may keep what it derived from a view for the next call with the
     * same view generation (struct ebb_market_view), as long as the
     * answers stay those of the arguments alone. */
    int (*decide)(void *self, const struct ebb_job_view *job,
                  const struct ebb_market_view *market, ebb_time_ms now,
                  struct ebb_decision *out);

    /* Appended: EBB_POLICY_* flags; absent: 0. */
    uint32_t flags;
};

/* The size of the first version of struct ebb_policy: the least
 * struct_size the loader accepts. */
#define EBB_POLICY_SIZE_V1                                                    \
    (offsetof(struct ebb_policy, decide) + sizeof(((struct ebb_policy *)0)->decide))

/* The one symbol a policy plugin exports: it returns the plugin's static
 * struct ebb_policy, valid until the plugin is unloaded. */
EBB_EXTERN const struct ebb_policy *ebb_policy_entry(void);
typedef const struct ebb_policy *(*ebb_policy_entry_fn)(void);

#endif
