/* What `ebb backtest` checks of its input before it runs (private to
 * report/): every instance type is known, every job could finish by its
 * deadline at least on demand, and the traces cover every job's window.
 *
 * A backtest never reinterprets its input. A price series is known from
 * its first row on; each row holds until the next and the last one to the
 * end of the run (AWS's price history records changes only). Availability
 * is used as recorded: a series is known from its first row to the
 * trace's last, and a job window outside that is an error naming the
 * series and the gap, unless the caller asked for the availability to be
 * replayed over the prices (align_availability), which is then reported.
 * A job that may not use spot needs neither: on-demand prices are the
 * catalog's.
 */
#ifndef EBB_REPORT_BACKTEST_INPUT_H
#define EBB_REPORT_BACKTEST_INPUT_H

#include <ebb/diag.h>
#include <ebb/trace.h>

#include "jobs/jobspec.h"
#include "market/catalog.h"
#include "report/backtest.h"

/* Checks `w` against the traces `o` names and `c`. Returns 0 and fills
 * `align` (how the availability is replayed: shifted 0 when as recorded),
 * or EBB_EINVAL / EBB_EIO / EBB_ENOMEM with "file:line: what" in `d`. */
int ebb__backtest_check_input(const struct ebb__backtest_options *o,
                              const struct ebb__workload *w,
                              const struct ebb__catalog *c,
                              struct ebb_avail_alignment *align,
                              struct ebb_diag *d);

#endif
