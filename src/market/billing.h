/* Billing: what running on an offer from `start` to `end` costs, under a
 * provider's billing rule, as ledger segments. Pure: the offer's price
 * history is the only input.
 *
 * Time is billed in whole seconds counted from the instance's start (a
 * started second is billed whole). Price changes take effect at the next
 * second boundary of the instance. Each segment's amount is rate * seconds
 * / 3600 rounded half up to a micro-unit, and the total is the sum of the
 * segments, so the ledger adds up exactly.
 */
#ifndef EBB_BILLING_H
#define EBB_BILLING_H

#include <ebb/types.h>

#include "market/market.h"

struct ebb__charge {
    ebb_time_ms start, end;
    ebb_micros rate;   /* per hour */
    ebb_micros amount;
};

/* Called once per segment, in time order; return non-zero to stop. */
typedef int (*ebb__charge_cb)(void *arg, const struct ebb__charge *c);

/* Bills [start, end) on offer `o` under `rule` (EBB_BILLING_PER_SECOND: the
 * price in effect during each second; EBB_BILLING_HOURLY_START_PRICE: the
 * price in effect at the start of each instance-hour, for that hour).
 * Before the offer's first known price the first price applies. `cb` may be
 * NULL. Returns the total in micro-units (0 for an empty interval). */
ebb_micros ebb__bill(const struct ebb__offer *o, enum ebb_billing rule,
                     ebb_time_ms start, ebb_time_ms end, ebb__charge_cb cb,
                     void *arg);

/* rate (per hour) * ms, in micro-units, rounded half up. */
ebb_micros ebb__cost_of(ebb_micros rate_per_hour, ebb_dur_ms ms);

#endif
