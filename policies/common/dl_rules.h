/* dl_rules — the spot/on-demand rules of the deadline policy, compiled into
 * the deadline and trough modules (hidden, nothing exported). See
 * deadline.c for the rules themselves; trough.c adds waiting for price
 * troughs in front of them. Pure: no I/O, no clock. */
#ifndef EBB_DL_RULES_H
#define EBB_DL_RULES_H

#include <stddef.h>

#include <ebb/config.h>
#include <ebb/host.h>

#include "policy_util.h"

struct dlr_params;

/* The rules' configuration. deadline's configuration is exactly this;
 * trough's starts with it. */
struct dl_cfg {
    ebb_dur_ms safety_margin;
    double margin_fraction;
    double hysteresis_overheads;
    double reserve_overheads;
    double move_factor;
    double move_fraction;
    ebb_dur_ms checkpoint_every;
    int lose_unsaved;
};

/* The configuration table entries for a struct dl_cfg found at member
 * path `m` (empty, or "dl.") inside `type`: one table text for both
 * policies. */
#define DL_CFG_KEYS(type, m)                                                  \
    {"safety_margin", EBB_CFG_DURATION, "10m",                                \
     offsetof(type, m safety_margin),                                         \
     "Slack kept on the on-demand fallback on top of one restart (launch "    \
     "latency, a late decision)."},                                           \
    {"margin_fraction", EBB_CFG_DOUBLE, "0.02",                               \
     offsetof(type, m margin_fraction),                                       \
     "Plus this fraction of the remaining on-demand run time (periodic "      \
     "checkpoint pauses slow a run down)."},                                  \
    {"hysteresis_overheads", EBB_CFG_DOUBLE, "1",                             \
     offsetof(type, m hysteresis_overheads),                                  \
     "Leave on-demand for spot only with this many restart overheads of "     \
     "slack to spare beyond the floor (no flapping)."},                       \
    {"reserve_overheads", EBB_CFG_DOUBLE, "1",                                \
     offsetof(type, m reserve_overheads),                                     \
     "With no spot available, wait idle until the slack is down to the "      \
     "floor plus this many overheads more than a return to spot needs."},     \
    {"move_factor", EBB_CFG_DOUBLE, "2",                                      \
     offsetof(type, m move_factor),                                           \
     "Move a running job to a cheaper offer only when the expected saving "   \
     "exceeds this many restart overheads at the new price."},                \
    {"move_fraction", EBB_CFG_DOUBLE, "0.05",                                 \
     offsetof(type, m move_fraction),                                         \
     "... and this fraction of the expected cost of staying."},               \
    {"checkpoint_every", EBB_CFG_DURATION, "1h",                              \
     offsetof(type, m checkpoint_every),                                      \
     "Reference work between checkpoints for jobs without periodic "          \
     "checkpoints (checkpoint: {every: ...}); a job's own interval wins. "    \
     "Used for budget checks and preemption rework."},                        \
    {"lose_unsaved", EBB_CFG_BOOL, "false",                                   \
     offsetof(type, m lose_unsaved),                                          \
     "Count the work since the last checkpoint as lost on a preemption "      \
     "(false: the notice leaves time to checkpoint, as on AWS)."},

/* The defaults the table's entries give, for a policy created without a
 * configuration. */
struct dl_cfg dl_cfg_defaults(void);

/* Checks a configuration; on a bad one logs why through `host` (may be
 * NULL) for policy `name` and returns EBB_ECONFIG, else 0. */
int dl_cfg_check(const struct dl_cfg *k, const struct ebb_host *host,
                 const char *name);

/* The cost model and rule parameters for one decision of `job`. */
void dl_cfg_apply(const struct dl_cfg *k, const struct ebb_job_view *job,
                  struct pu_model *m, struct dlr_params *rp);

/* The knobs the rules read; each policy fills them from its config. */
struct dlr_params {
    double hysteresis_overheads;
    double reserve_overheads;
    double move_factor;
    double move_fraction;
};

/* One decision's facts, filled by dlr_begin(). */
struct dlr_state {
    const struct dlr_params *p;
    const struct pu_ctx *c;
    struct pu_model m;
    struct pu_guard g;
    double hyst; /* hysteresis_overheads * restart overhead, ms */
};

/* Fills *s for one decision of the job in *c. */
void dlr_begin(struct dlr_state *s, const struct dlr_params *p,
               const struct pu_ctx *c, const struct pu_model *m);

/* 1 when moving from the running offer (expected cost `keep`) to offer j
 * (expected cost `there`, its restart included) clearly pays: the saving
 * exceeds move_factor restart overheads at j's price and move_fraction of
 * `keep`. */
int dlr_move_pays(const struct dlr_state *s, size_t j, double keep,
                  double there);

/* 1 (and *out written) when a running job must change now whatever the
 * prices say: it may not run there, the budget does not allow the next
 * checkpoint (STOP), or the guard's slack is under the floor on spot
 * (LAUNCH on-demand). */
int dlr_running_forced(const struct dlr_state *s, struct ebb_decision *out);

/* The rules for a running job (forced changes first) and for an idle
 * one. Always write *out. */
void dlr_running(const struct dlr_state *s, struct ebb_decision *out);
void dlr_idle(const struct dlr_state *s, struct ebb_decision *out);

/* Everything one decision under the deadline rules works with. Filled by
 * dl_prepare(); it must stay where it is (its parts point at each other). */
struct dl_decision {
    struct pu_ctx c;
    struct pu_model m;
    struct dlr_params rp;
    struct dlr_state s;
    struct pu_cost_cache cache;
};

/* Checks the arguments and settles what every policy decides alike (as
 * pu_decide does), then prepares *d for the job under configuration `k`
 * (NULL: the policy has no instance, EBB_EINVAL), with the policy
 * instance's memo `memo` (may be NULL; see pu_memo_attach). Returns 1 when
 * the decision is made (return *rc from decide()), 0 to go on. */
int dl_prepare(struct dl_decision *d, const struct dl_cfg *k,
               struct pu_memo *memo, const struct ebb_job_view *job,
               const struct ebb_market_view *market, ebb_time_ms now,
               struct ebb_decision *out, int *rc);

/* The deadline rules' decision for a prepared job: dlr_running() or
 * dlr_idle(). */
void dl_decide_rules(const struct dl_decision *d, struct ebb_decision *out);

/* The slack under which a guarded idle job without spot takes on-demand:
 * floor + (2 + hysteresis_overheads + reserve_overheads) overheads. */
double dlr_reserve(const struct dlr_state *s);

#endif
