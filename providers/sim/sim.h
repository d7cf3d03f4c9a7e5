/* The sim provider's internals: a spot market replayed from recorded price
 * and availability traces, and instances that run a modelled job on it.
 *
 * sim.c holds the ABI glue, the configuration and the queue of callbacks
 * still to run; sim_market.c replays prices and capacity; sim_instance.c
 * runs instances, their jobs and their preemptions; sim_gang.c makes
 * gangs of them, views and finds them; sim_rng.c draws the
 * random lifetimes of the hazard model. Everything happens on host timers,
 * so the provider runs the same under the real and the virtual clock, and
 * nothing depends on anything but the configuration, the seed and the
 * calls made: the same inputs give the same events in the same order.
 * docs/sim.md describes the model for users.
 */
#ifndef EBB_SIM_H
#define EBB_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ebb/gang.h>
#include <ebb/job_model.h>
#include <ebb/list.h>
#include <ebb/ops.h>
#include <ebb/provider.h>
#include <ebb/trace.h>

/* ---- configuration (sim.c) ---- */

/* The largest preemption_hazard: 10 preemptions per spot instance-hour,
 * a mean life of 6 minutes, far beyond any real market (AWS's worst band
 * is above 20% a month). Past it a backtest spends minutes relaunching
 * (60: 12 s for the small workload, 1e9: it never ends). */
#define SIM_HAZARD_MAX 10.0

struct sim_cfg {
    char *prices;
    char *availability;
    int align_availability; /* replay availability from another period */
    ebb_dur_ms notice_lead;
    double preemption_hazard; /* 0 to SIM_HAZARD_MAX */
    int64_t seed;
    char *billing;
    ebb_dur_ms checkpoint_time;
    ebb_dur_ms launch_latency;
    ebb_dur_ms preempt_after;
    char *currency;
    int64_t failed_terminations;
    int64_t failed_launches;
};

/* ---- random numbers (sim_rng.c) ---- */

struct sim_rng {
    uint64_t state;
};

void sim_rng_seed(struct sim_rng *r, uint64_t seed);
/* The next 64 random bits (splitmix64). */
uint64_t sim_rng_next(struct sim_rng *r);
/* A uniform double in [0, 1) with 53 random bits. */
double sim_rng_uniform(struct sim_rng *r);
/* An exponential lifetime in ms for `rate_per_hour` (> 0) events per hour:
 * -ln(1 - u) / rate, rounded to the millisecond, at most INT64_MAX / 4. */
ebb_dur_ms sim_rng_exponential_ms(struct sim_rng *r, double rate_per_hour);

/* ---- the market (sim_market.c) ---- */

/* One spot offer: a series of the price trace. */
struct sim_offer {
    const struct ebb_price_series *ps; /* borrowed from the trace */
    ssize_t avail;      /* its availability series, or -1: unlimited */
    size_t *chg;        /* rows whose price differs from the previous row */
    size_t n_chg;
};

struct sim_market {
    const struct ebb_host *host;
    const char *currency; /* of the trace's prices */
    struct ebb_price_trace *prices;
    struct ebb_avail_trace *avail; /* NULL without an availability trace */
    struct sim_offer *offers;
    size_t n_offers;
    /* Availability from another period, moved onto the price period when
     * align_availability asks for it (ebb/trace.h); shifted 0: as recorded. */
    struct ebb_avail_alignment align;
    ebb_time_ms delivered; /* observations up to here have been polled */
    int64_t timer;      /* the one market_changed timer, 0 when none */
};

/* Loads the traces named in `cfg`. Logs the reader's "file:line: message"
 * through the host and returns EBB_ECONFIG (or EBB_ENOMEM) on failure. */
int sim_market_init(struct sim_market *m, const struct ebb_host *host,
                    const struct sim_cfg *cfg);
void sim_market_fini(struct sim_market *m);

/* Arms the market_changed timer for the first real change after now. */
void sim_market_arm(struct sim_market *m);

/* Capacity of availability series `a` at `t`: -1 for unlimited or unknown
 * (a < 0, before the trace starts). */
int32_t sim_market_capacity(const struct sim_market *m, ssize_t a,
                            ebb_time_ms t);

/* The first time after `t` at which series `a`'s capacity really changes,
 * or INT64_MAX. */
ebb_time_ms sim_market_next_capacity_change(const struct sim_market *m,
                                            ssize_t a, ebb_time_ms t);

/* Every observation not delivered before with at <= now, in (time, offer)
 * order, into a new array *out (free() it) of *n entries. */
int sim_market_collect(struct sim_market *m, ebb_time_ms now,
                       struct ebb_price **out, size_t *n);

/* The price of offer `o` at `t` (t must not precede its first row). */
ebb_micros sim_market_price(const struct sim_offer *o, ebb_time_ms t);

/* ---- instances and the job model (sim_instance.c) ---- */

enum sim_phase {
    SIM_BOOT,     /* launched; RUNNING comes at run_at */
    SIM_OVERHEAD, /* running, restoring: no progress until phase_end */
    SIM_WORK,     /* progressing at `speed` from work_base at phase_start */
    SIM_CKPT,     /* writing a checkpoint of ckpt_work until phase_end */
    SIM_STOPPING, /* asked to stop: exits at phase_end (after a checkpoint
                   * when stop_ckpt) */
    SIM_IDLE,     /* the job has exited; the instance lives on */
};

struct sim;

struct sim_instance {
    struct sim *sim;
    unsigned long long n;   /* "sim-<n>"; later launches have larger n */
    char *id, *token, *job_id, *provider, *region, *zone, *instance_type;
    enum ebb_market market;
    ssize_t avail;          /* capacity series (spot), or -1 */
    ebb_time_ms launched_at, run_at, ended_at;
    int dead;               /* terminated or lost: no more events */
    int preempted;
    int joined;             /* a replacement member, started by a join */

    /* The job model. */
    enum sim_phase phase;
    ebb_time_ms phase_start, phase_end;
    double work_base;       /* work done when the phase started */
    ebb_dur_ms work_total;  /* req->work_remaining */
    double speed;
    ebb_dur_ms overhead, every;
    ebb_dur_ms ckpt_work;   /* SIM_CKPT / stop checkpoint: work it holds */
    int stop_ckpt;

    /* Preemption: hazard_at is drawn at launch (INT64_MAX without the
     * hazard model); doom_at/notice_at are planned from the capacity
     * trace and the hazard, and fixed once the notice has been given. */
    ebb_time_ms hazard_at, doom_at, notice_at;
    const char *doom_reason;
    int noticed;

    int64_t timer;
    int dispatching;

    /* Gangs: each member is an instance of its own, with its own
     * preemptions. `lead` is the gang's first rank 0, which runs the
     * gang's one job (the others run none) and holds what the gang shares,
     * also once it has ended and another member took its rank (a join); a
     * single instance is its own lead, of a gang of 1. */
    struct sim_instance *lead;
    unsigned rank;
    /* Lead only: */
    unsigned size;
    struct sim_instance **members; /* size of them, in rank order (the
                                    * latest to hold each rank) */
    char *gang_id;  /* the members' ids joined (gang.h); NULL for a single */
    char *live_id;  /* the live members' ids joined; gang_id once all ended */
    int halted;     /* the gang's job stopped when a member ended */
};

/* Creates the instance for `req`, playing out the job `model` (spot: on
 * offer `o`, else o == NULL), as member `rank` of a gang led by `lead`
 * (NULL: it is the lead; a member is placed and tagged as its lead is);
 * only the lead gets the job. It is numbered `nth` after the instances
 * so far (0: the next). */
struct sim_instance *sim_instance_new(struct sim *s, const struct ebb_launch *req,
                                      const struct ebb_job_model *model,
                                      const struct sim_offer *o,
                                      struct sim_instance *lead, unsigned rank,
                                      unsigned nth);
void sim_instance_free(struct sim *s, struct sim_instance *in);
/* Starts its life: draws the hazard, plans preemptions, arms the timer. */
void sim_instance_start(struct sim *s, struct sim_instance *in);
/* Live spot instances on availability series `a` not due to go by now. */
size_t sim_instance_count(const struct sim *s, ssize_t a);
/* Ends the instance now (terminate): no more events; replans its group. */
void sim_instance_end(struct sim *s, struct sim_instance *in);
/* Asks its job to checkpoint within `grace` and exit (stop_job). */
void sim_instance_stop_job(struct sim *s, struct sim_instance *in,
                           ebb_dur_ms grace);
/* Stops the instance's timer (destroy). */
void sim_instance_disarm(struct sim *s, struct sim_instance *in);

/* ---- gangs (sim_gang.c) ---- */

/* The `count` members of a launch (1: a single instance), numbered after
 * every instance so far; the lead, or NULL when out of memory. */
struct sim_instance *sim_gang_new(struct sim *s, const struct ebb_launch *req,
                                  const struct ebb_job_model *model,
                                  const struct sim_offer *o, unsigned count);
/* Frees a gang never added to the index (a launch that failed). */
void sim_gang_discard(struct sim *s, struct sim_instance *lead);
/* The id events name: the gang's (all members), or the instance's. */
const char *sim_unit_id(const struct sim_instance *in);
/* Member `in` ended: the gang's live id is made again. */
void sim_gang_member_ended(struct sim_instance *in);
/* How many of the gang's members still live. */
unsigned sim_gang_live(const struct sim_instance *lead);
/* The public view of the gang led by `lead` (a single instance: itself);
 * strings borrowed from it. */
void sim_gang_view(const struct sim *s, const struct sim_instance *lead,
                   struct ebb_instance *out);
/* The gang a join (req->join_gang, of rank req->join_rank) goes into:
 * 0 with *lead, and *again the member a join of that rank started
 * before when it still lives (a repeat: answered again), else NULL.
 * EBB_EINVAL (the reason logged) for a count above 1, an id that names
 * no gang of the sim's, a token that is not the gang's, a rank out of
 * range, a gang that has ended, or a rank whose member still lives. */
int sim_gang_join_target(const struct sim *s, const struct ebb_launch *req,
                         struct sim_instance **lead, struct sim_instance **again);
/* Whether the offer of `lead`'s gang has room for one more instance now. */
int sim_gang_has_room(const struct sim *s, const struct sim_instance *lead);
/* Member `in` takes its rank in its gang (the member there before leaves
 * it) and the gang's ids are made again. */
void sim_gang_seat(struct sim_instance *in);
/* The members gang id `id` names, into out[EBB_GANG_MAX], *n of them.
 * Returns 0, or EBB_ENOTFOUND when one of them is not the sim's. */
int sim_gang_find(const struct sim *s, const char *id, struct sim_instance **out,
                  size_t *n);

/* ---- the provider (sim.c) ---- */

struct sim {
    const struct ebb_host *host;
    const struct sim_cfg *cfg;
    enum ebb_billing billing;
    struct sim_market market;
    struct sim_rng rng;
    struct sim_instance **inst; /* every instance ever launched, in order */
    size_t n_inst, cap_inst;
    struct sim_instance **by_token; /* hash table of inst (sim_index.c) */
    size_t cap_tokens;
    struct ebb_ops ops; /* struct sim_req (sim.c): callbacks still to run */
    int64_t terminations_to_fail;        /* failed_terminations left */
    int64_t launches_to_fail;            /* failed_launches left */
    int destroying;
};

ebb_time_ms sim_now(const struct sim *s);

/* ---- finding instances (sim_index.c) ---- */

/* Makes room for `n` more instances; that many sim_index_add then cannot
 * fail. Returns 0 or EBB_ENOMEM. */
int sim_index_reserve(struct sim *s, size_t n);
void sim_index_add(struct sim *s, struct sim_instance *in);
/* The instance (a gang's lead) launched with `token`, or the instance
 * `id`; NULL when none. */
struct sim_instance *sim_find_token(const struct sim *s, const char *token);
struct sim_instance *sim_find_id(const struct sim *s, const char *id);
/* Frees the index (not the instances). */
void sim_index_free(struct sim *s);

#endif
