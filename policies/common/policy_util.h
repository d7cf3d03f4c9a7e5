/* policy_util — the arithmetic the policy plugins share: remaining work and
 * slack, which offer is cheapest per unit of work, budget notes, the rules
 * for jobs restricted to one market, and writing a decision with its reason.
 *
 * The file is compiled into each policy module (hidden visibility), so each
 * .so carries its own copy and exports nothing from it. Names start with
 * `pu_` ("policy util"). Everything here is pure: no I/O, no clock, no
 * globals.
 *
 * Conventions used by every function below:
 * - Work is in reference-instance milliseconds; an offer of speed s does s
 *   of them per wall millisecond.
 * - The "slack" on offer k is deadline - now - (remaining work / speed_k) -
 *   the restart overhead of starting on k (none when the job already runs
 *   on k): the wall time the job can still afford to lose.
 * - A deadline <= 0 means "no deadline": slack is +infinity.
 * - An offer is usable when its speed is a finite number > 0 and its price
 *   is >= 0; unusable offers are never chosen.
 */
#ifndef EBB_POLICY_UTIL_H
#define EBB_POLICY_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <ebb/policy.h>

#define PU_NONE SIZE_MAX

struct pu_cost_cache;
struct pu_memo;

/* The facts of one decide() call, derived once by pu_begin(). */
struct pu_ctx {
    const struct ebb_job_view *job;
    const struct ebb_offer *offers; /* NULL when n == 0; see pu_offer() */
    size_t n;
    size_t stride;     /* bytes from one offer to the next (their
                          struct_size, see include/ebb/policy.h) */
    uint64_t generation; /* the view's, 0 when it promises nothing */
    ebb_time_ms now;
    double remaining;  /* work left in reference ms, >= 0 */
    size_t running;    /* the running offer, or PU_NONE (also when the
                          engine's index lies outside the view) */
    struct pu_cost_cache *cache; /* NULL, or see pu_cache_attach() */
    struct pu_memo *memo;        /* NULL, or see pu_memo_attach() */
    /* The view's fill_forecast and its context; NULL when the offers
     * came with their forecasts (see pu_offer_fc()). */
    int (*fill_forecast)(void *fill_ctx, size_t offer);
    void *fill_ctx;
};

/* Checks the arguments, clears *out (so equal inputs give equal bytes) and
 * fills *c. Returns 0, or EBB_EINVAL when job, market or out is NULL or a
 * view's struct_size does not cover its first version's fields. */
int pu_begin(struct pu_ctx *c, const struct ebb_job_view *job,
             const struct ebb_market_view *market, ebb_time_ms now,
             struct ebb_decision *out);

/* Offer k of the view (k < c->n), stepping by the view's own struct_size
 * so that an ebbd with appended offer fields is read right. */
static inline const struct ebb_offer *pu_offer(const struct pu_ctx *c,
                                               size_t k)
{
    return (const struct ebb_offer *)(const void *)((const char *)c->offers +
                                                    k * c->stride);
}

/* Offer k (k < c->n) with its forecast, n_forecast and forecast_p50_low
 * set: ebbd leaves them unset until asked (include/ebb/policy.h,
 * EBB_POLICY_ASKS_FORECASTS), so every read of them goes through here.
 * A policy that sets that flag reads forecasts only through this file's
 * functions or this one. */
const struct ebb_offer *pu_offer_fc(const struct pu_ctx *c, size_t k);

/* Offer k's preemption hazard by hour of day (24 values), or NULL when it
 * has none or ebbd predates the field. */
const double *pu_hazard_by_hour(const struct pu_ctx *c, size_t k);

/* What moving the job to offer k costs once, beyond its price per hour
 * (ebb_offer.transfer_cost: its checkpoint's egress); 0 for the offer it
 * runs on and from an ebbd that predates the field. */
double pu_transfer_cost(const struct pu_ctx *c, size_t k);

/* Decides the cases every policy treats alike: the budget cap is spent
 * (STOP or WAIT), the work is done (KEEP while the job exits, or WAIT), no
 * usable offer exists (WAIT). Returns 1 when *out was written, else 0. */
int pu_settled(const struct pu_ctx *c, struct ebb_decision *out);

/* How a policy runs a spot-fallback job once the shared cases are
 * settled; `self` is the policy's instance. */
typedef void (*pu_fallback_fn)(const void *self, const struct pu_ctx *c,
                               struct ebb_decision *out);

/* The decide() every policy shares: checks the arguments, settles the
 * shared cases, runs spot-only and on-demand-only jobs on their market, and
 * hands spot-fallback jobs to `fallback`. */
int pu_decide(const void *self, const struct ebb_job_view *job,
              const struct ebb_market_view *market, ebb_time_ms now,
              struct ebb_decision *out, pu_fallback_fn fallback);

/* 1 when the job may run on offer k's market (job->market). */
int pu_allowed(const struct pu_ctx *c, size_t k);

/* 1 when offer k is usable and can be run now: available, or the one the
 * job already runs on. */
int pu_ready(const struct pu_ctx *c, size_t k);

/* 1 when an offer's speed and price make sense (finite, positive speed;
 * non-negative price). */
int pu_usable(const struct ebb_offer *o);

/* The job's restart overhead in ms (0 when unset or negative). */
double pu_restart_ms(const struct pu_ctx *c);

/* Wall milliseconds to finish the remaining work on offer k. */
double pu_wall_ms(const struct pu_ctx *c, size_t k);

/* Slack on offer k, counting a restart unless the job runs on k (see the
 * top of this file); pu_slack_fresh() always counts one. */
double pu_slack(const struct pu_ctx *c, size_t k);
double pu_slack_fresh(const struct pu_ctx *c, size_t k);

/* 1 when the job has a deadline (deadline > 0). */
int pu_has_deadline(const struct pu_ctx *c);

/* The ready spot offer with the lowest price per unit of work (ties: the
 * faster, then the lower index), or PU_NONE. */
size_t pu_cheapest_spot(const struct pu_ctx *c);

/* The on-demand offer the job would fall back on: among ready on-demand
 * offers that still finish by the deadline (slack >= 0), the cheapest per
 * unit of work; when none does, the fastest (the deadline is missed by the
 * least). PU_NONE when no on-demand offer is ready. */
size_t pu_od_choice(const struct pu_ctx *c);

/* The rule for a job that runs on one market only, also used by the
 * on-demand policy: keep a running instance of that market; otherwise
 * launch the cheapest ready offer of it (pu_cheapest_spot / pu_od_choice);
 * when there is none, STOP an instance on the wrong market or WAIT.
 * Always writes *out. */
void pu_run_market(const struct pu_ctx *c, enum ebb_market market,
                   struct ebb_decision *out);

/* The wall time at which something `delta_ms` from now happens, rounded up
 * and at least now + 1; 0 ("on events") when delta is not finite or the sum
 * would overflow. */
ebb_time_ms pu_after(ebb_time_ms now, double delta_ms);

/* Writers of a decision. Each sets the kind and its fields and formats the
 * reason (truncated to fit). */
void pu_wait(struct ebb_decision *out, ebb_time_ms until, const char *fmt,
             ...) EBB_PRINTF(3, 4);
void pu_keep(struct ebb_decision *out, ebb_time_ms until, const char *fmt,
             ...) EBB_PRINTF(3, 4);
void pu_launch(struct ebb_decision *out, size_t offer, const char *fmt, ...)
    EBB_PRINTF(3, 4);
void pu_stop(struct ebb_decision *out, const char *fmt, ...) EBB_PRINTF(2, 3);

/* Appends to the reason, when the job has a budget and finishing on offer
 * k would cost more than what is left of it, " (budget left X, about Y
 * needed)" if that fits whole. The engine enforces the cap; this only
 * tells the user. */
void pu_budget_note(const struct pu_ctx *c, size_t k, struct ebb_decision *out);

/* Text for reasons. Each writes into `buf` and returns it. */
#define PU_OFFER_TEXT 96
#define PU_DUR_TEXT 24
/* "spot p3.2xlarge us-east-1a at 0.918/h" (+ " speed 2.00" unless 1). */
const char *pu_offer_text(const struct pu_ctx *c, size_t k,
                          char buf[PU_OFFER_TEXT]);
/* "1h12m", "7m30s", "45s", "-5m"; "unlimited" for infinity. */
const char *pu_dur_text(double ms, char buf[PU_DUR_TEXT]);

/* Writes what snprintf(buf, size, "%.2f", x) would and returns 1, when x
 * is >= 0, below 10^12 and not within rounding of a half cent (then
 * printf's rounding is certain); else returns 0 and leaves buf alone.
 * size >= 16. */
int pu_fixed2(double x, char *buf, size_t size);

/* ---- Expected cost, risk and safety (used by trough and deadline) -------
 *
 * The risk model. The job checkpoints every `checkpoint_ms` of reference
 * work (pu_checkpoint_ms: the job's periodic interval, or a policy's
 * assumption when the job has none). A
 * preemption on offer k then costs, in wall time, the restart overhead
 * plus half a checkpoint interval of rework on k; with the offer's hazard
 * of lambda_k preemptions per hour, finishing on k is expected to take
 *   h_k = h0_k * (1 + lambda_k * loss_k)   (hours; loss_k in hours)
 * where h0_k is the wall time of the remaining work on k plus a restart
 * unless the job runs there. With a hazard by hour of day
 * (ebb_offer.preemption_by_hour) lambda_k is the mean over the hours the
 * run [start, start + h0_k) covers, so the same run costs less rework in
 * calmer hours; without one it is preemption_per_hour. Prices come from
 * the offer's forecast (p50
 * for expected cost, p90 for worst cases) where it has points, and from
 * the price in effect now before the first point; past the last point the
 * last point holds. */
struct pu_model {
    double checkpoint_ms; /* reference work between checkpoints */
    double margin_ms;     /* fixed safety margin */
    double margin_frac;   /* plus this fraction of the fallback's wall time
                             (periodic checkpoint pauses, launch latency) */
    int lose_unsaved;     /* 1: a preemption loses the work since the last
                             checkpoint; 0: the notice is long enough to
                             checkpoint, only the restart overhead is lost */
};

/* The checkpoint interval for struct pu_model's checkpoint_ms: the job's
 * own periodic interval (job->checkpoint_every) when it has one, else
 * `fallback` (the policy's checkpoint_every setting), as reference work in
 * ms; 0 when both are 0 or less. */
double pu_checkpoint_ms(const struct ebb_job_view *job, ebb_dur_ms fallback);

/* Reference work done since the latest complete checkpoint (>= 0): what a
 * preemption without notice would lose. */
double pu_unsaved(const struct pu_ctx *c);

/* Wall ms one preemption costs on offer k: restart overhead, plus half a
 * checkpoint interval of rework when m->lose_unsaved. INFINITY for an
 * unusable offer. */
double pu_loss_ms(const struct pu_ctx *c, size_t k, const struct pu_model *m);

/* Expected wall hours to finish on offer k starting at once, rework from
 * preemptions included (see above). INFINITY for an unusable offer. */
double pu_expected_hours(const struct pu_ctx *c, size_t k,
                         const struct pu_model *m);

/* Wall ms that preemptions are expected to cost a run of `run_ms` on
 * offer k from absolute time `start`: lambda_k over that run (see above)
 * times its hours times pu_loss_ms. INFINITY for an unusable offer. */
double pu_expected_delays_ms(const struct pu_ctx *c, size_t k,
                             const struct pu_model *m, double start,
                             double run_ms);

/* Offer k's price (micros per hour) in effect at absolute time t (ms):
 * band 10, 50 or 90 picks the forecast's p10/p50/p90. */
double pu_price_at(const struct pu_ctx *c, size_t k, double t, int band);

/* Money (micros) that offer k costs from absolute time `start` for
 * `hours` wall hours, integrating the forecast's `band`. */
double pu_cost_span(const struct pu_ctx *c, size_t k, double start,
                    double hours, int band);

/* Expected money (micros) to finish the remaining work on offer k when
 * starting `delay_ms` from now (a restart counted unless delay is 0 and
 * the job runs on k). INFINITY for an unusable offer. With a cache
 * attached for the same model (pu_cache_attach), a start now is computed
 * once per offer and decision. */
double pu_expected_cost(const struct pu_ctx *c, size_t k, double delay_ms,
                        const struct pu_model *m);

/* Memo of pu_expected_cost(c, k, 0, m) for one decide() call: the rules
 * ask for the same offer's cost several times (the best spot offer, the
 * best of any market, staying), and each answer integrates a forecast.
 * It lives on the caller's stack; offers past PU_CACHE_OFFERS are computed
 * every time. The answers are the same with or without it. */
#define PU_CACHE_OFFERS 256
struct pu_cost_cache {
    struct pu_model m;             /* the model the costs are for */
    size_t n;                      /* offers covered */
    double cost[PU_CACHE_OFFERS];  /* NAN: not computed yet */
    double above[PU_CACHE_OFFERS]; /* the cost is known to exceed this */
};

/* Attaches *cache, emptied, to *c for costs under model *m (copied). */
void pu_cache_attach(struct pu_ctx *c, struct pu_cost_cache *cache,
                     const struct pu_model *m);

/* The cheapest later start on offer k: among its forecast points with an
 * index below `end_index` that lie after now, the point i whose start
 * (waiting at_i - now) has the lowest pu_expected_cost(c, k, at_i - now,
 * m); the first of equals. Returns i, or PU_NONE when no such start has a
 * finite cost; *cost and *wait_ms (may be NULL) get its cost and wait
 * (INFINITY and 0 when none). Same answers as calling pu_expected_cost at
 * every point, in one pass over the forecast (a sliding window of exact
 * integer sums) when the points are in order and the sums fit. */
size_t pu_cheapest_later(const struct pu_ctx *c, size_t k, size_t end_index,
                         const struct pu_model *m, double *cost,
                         double *wait_ms);

/* The offer to launch now with the lowest expected cost (per unit of work,
 * since the work is the same for all), among those allowed, ready and
 * (when `market_filter` is EBB_MARKET_SPOT or EBB_MARKET_ON_DEMAND) of
 * that market; pass -1 for both markets. `skip` is an offer to leave out
 * (PU_NONE for none). Ties: the lower index. PU_NONE when none. *cost
 * (may be NULL) gets its expected cost. */
size_t pu_best_expected(const struct pu_ctx *c, int market_filter, size_t skip,
                        const struct pu_model *m, double *cost);

/* The slack the job must keep on its fallback offer `fb` to be sure to
 * finish there: the margin, margin_frac of fb's wall time and, when
 * m->lose_unsaved, the work a preemption would lose now (pu_unsaved)
 * redone on fb. INFINITY for an unusable offer. */
double pu_floor_ms(const struct pu_ctx *c, size_t fb, const struct pu_model *m);

/* Budget. Worst-case spend on offer k until the job's next checkpoint:
 * price p90 (the price now when no forecast) times (restart overhead unless
 * running on k + checkpoint grace + wall time to the next checkpoint, at
 * most the remaining work). Returns 1 when the job has no budget or that
 * fits in budget - spent, else 0; *need and *left (may be NULL) get the two
 * amounts in micros. */
int pu_budget_fits(const struct pu_ctx *c, size_t k, const struct pu_model *m,
                   double *need, double *left);

/* The deadline guard of a spot-fallback job with a deadline and an
 * on-demand offer to fall back on. Its slack q is pu_slack_fresh() on that
 * offer (a restart counted even when running there), its floor the
 * pu_floor_ms() of it. The job finishes on on-demand as long as q >= floor;
 * q never grows (it stays put while running at the fallback's speed and
 * falls while idle or restarting), so a spot start is safe only when
 * q - restart overhead >= floor: a preemption right after it still leaves
 * the fallback. */
struct pu_guard {
    int on;       /* 1 when the guard applies */
    size_t od;    /* the fallback (pu_od_choice), or PU_NONE */
    double q;     /* ms; +INFINITY when off */
    double floor; /* ms; 0 when off */
    double d;     /* restart overhead, ms (>= 0) */
};
void pu_guard_init(const struct pu_ctx *c, const struct pu_model *m,
                   struct pu_guard *g);

/* 1 when the policy may run the job on offer k at all: allowed by
 * job->market, and for a spot-fallback job without the guard (no deadline
 * or no on-demand offer) spot only, as the other policies do. */
int pu_guard_market_ok(const struct pu_ctx *c, const struct pu_guard *g,
                       size_t k);

/* 1 when launching (or keeping) offer k now leaves the guard intact: always
 * for on-demand or when the guard is off; for spot, q - (restart unless
 * running on k) >= floor + extra_ms. */
int pu_guard_spot_ok(const struct pu_ctx *c, const struct pu_guard *g,
                     size_t k, double extra_ms);

/* 1 when offer k's expected cost, started now or later, surely exceeds
 * `bound`: no price over any span is below the lower of its price now and
 * its forecast's lowest p50 (forecast_p50_low; 0 disables the test), so
 * that price times the expected time bounds the cost from below. */
int pu_cannot_beat(const struct pu_ctx *c, size_t k, const struct pu_model *m,
                   double bound);

/* The offer with the lowest expected cost to launch now among those that
 * pass pu_guard_market_ok, are ready, pass pu_guard_spot_ok(extra 0) and
 * fit the budget (pu_budget_fits); `market_filter` as in
 * pu_best_expected; `skip` left out; ties: the lower index. *cost may be
 * NULL. *budget_blocked (may be NULL) is set to 1 when none was found and
 * some otherwise eligible offer was left out only for the budget, else 0. */
size_t pu_best_fit(const struct pu_ctx *c, const struct pu_guard *g,
                   const struct pu_model *m, int market_filter, size_t skip,
                   double *cost, int *budget_blocked);

/* ---- What a policy keeps across jobs planned on one view ----------------
 *
 * ebbd plans the jobs of one instant on one market view and says so with
 * its generation (struct ebb_market_view). What depends on the offers
 * alone is then worked out once per view and kept in the policy instance:
 * the offers sorted by the least they can cost per unit of work, so that
 * the searches for the cheapest offer (pu_best_fit, trough's trough
 * search) visit them cheapest first and stop at the first that cannot
 * win. The answers are the same as without it: ties still go to the lower
 * index, and an offer is passed over only when pu_cannot_beat would pass
 * it over too. A view with generation 0 gets no memo (index order). */
struct pu_memo {
    uint64_t generation; /* built for this view; 0: empty */
    uint64_t seen;       /* the view planned on last (see pu_memo_attach) */
    const void *offers;
    size_t n, stride;
    struct keyed *buf;   /* sorting space */
    size_t *order;       /* offer indexes, the least per work first */
    double *least;       /* by offer index: the least per reference hour */
    char (*text)[PU_OFFER_TEXT]; /* by offer index: pu_offer_text(), */
    unsigned char *has_text;     /* once asked for */
    size_t *od;          /* the on-demand offers, by index */
    size_t n_od;
    size_t cap;
};

/* Points c->memo at *m, rebuilt first unless it was built for this very
 * view; leaves c->memo NULL for the first job planned on a view, when the
 * view has generation 0 or when memory runs out (the answers stay the
 * same, only slower). m may be NULL. */
void pu_memo_attach(struct pu_ctx *c, struct pu_memo *m);

/* Frees what *m holds and empties it. */
void pu_memo_free(struct pu_memo *m);

/* The i-th offer to visit (i < c->n): memo order, or i without a memo. */
size_t pu_nth(const struct pu_ctx *c, size_t i);

/* 1 when, with a memo, offer k and every offer after it in memo order
 * surely cost more than `bound` whatever the start (so a search for the
 * cheapest may stop); 0 without a memo. */
int pu_past_bound(const struct pu_ctx *c, size_t k, double bound);

/* "12.34" for a sum in micros, into buf. */
#define PU_MONEY_TEXT 32
const char *pu_money_text(double micros, char buf[PU_MONEY_TEXT]);

#endif
