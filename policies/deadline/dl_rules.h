/* dl_rules — the spot/on-demand rules of the deadline policy, compiled into
 * the deadline and trough modules (hidden, nothing exported). See
 * deadline.c for the rules themselves; trough.c adds waiting for price
 * troughs in front of them. Pure: no I/O, no clock. */
#ifndef EBB_DL_RULES_H
#define EBB_DL_RULES_H

#include "policy_util.h"

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

/* The slack under which a guarded idle job without spot takes on-demand:
 * floor + (2 + hysteresis_overheads + reserve_overheads) overheads. */
double dlr_reserve(const struct dlr_state *s);

#endif
