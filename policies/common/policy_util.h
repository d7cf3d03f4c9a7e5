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

/* The facts of one decide() call, derived once by pu_begin(). */
struct pu_ctx {
    const struct ebb_job_view *job;
    const struct ebb_offer *offers; /* NULL when n == 0 */
    size_t n;
    ebb_time_ms now;
    double remaining;  /* work left in reference ms, >= 0 */
    size_t running;    /* the running offer, or PU_NONE (also when the
                          engine's index lies outside the view) */
};

/* Checks the arguments, clears *out (so equal inputs give equal bytes) and
 * fills *c. Returns 0, or EBB_EINVAL when job, market or out is NULL. */
int pu_begin(struct pu_ctx *c, const struct ebb_job_view *job,
             const struct ebb_market_view *market, ebb_time_ms now,
             struct ebb_decision *out);

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

#endif
