/* What a backtest judges a job's cost against (private to report/): the
 * same work on demand, started at once, and the hindsight optimum (the
 * oracle, report/oracle.h) over the market's whole history. Both count
 * each of a gang's nodes: N times the price, and for the oracle a spot
 * offer is up only while its capacity holds all N (docs/backtest.md). */
#ifndef EBB_REPORT_BACKTEST_YARDSTICKS_H
#define EBB_REPORT_BACKTEST_YARDSTICKS_H

#include <ebb/common.h>

#include "engine/engine.h"

/* What the job's work costs started at its submission on the cheapest
 * on-demand offer its resources allow, whatever its market setting
 * (restart overhead plus work / speed at the catalog price); -1 when no
 * offer is priced. */
ebb_micros ebb__backtest_on_demand_cost(struct ebb__engine *e, const struct ebb__job *job);

/* The least cost at which the job could have finished by its deadline
 * (`end` without one) on the offers it may use, knowing the market's
 * history, into *cost (micro-USD). Returns 0, EBB_ENOTFOUND (no schedule
 * finishes), or EBB_ENOMEM. */
int ebb__backtest_oracle_cost(struct ebb__engine *e, const struct ebb__job *job,
                              ebb_time_ms end, ebb_micros *cost);

#endif
