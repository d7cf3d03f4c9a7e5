/* Checkpoint transfer rates (docs/stores.md "Fees and timing"): what a
 * job's agents measured uploading and downloading its checkpoints, and
 * how long its latest write took, so that the interval and the restart
 * overhead the engine plans with survive a restart of ebbd. */
#ifndef EBB_STORE_RATES_H
#define EBB_STORE_RATES_H

#include <stdint.h>

#include <ebb/common.h>

struct ebb__store;

struct ebb__transfer_rates {
    int64_t up_bytes_per_s;   /* 0: not measured */
    int64_t down_bytes_per_s; /* 0: not measured */
    ebb_dur_ms last_write;    /* the newest checkpoint's write, wall ms */
};

/* Records job `job_id`'s rates at `at` (replacing what was kept). Returns
 * 0 or a negative EBB_E* code. */
int ebb__store_rates_put(struct ebb__store *s, const char *job_id,
                         const struct ebb__transfer_rates *r, ebb_time_ms at);

/* Job `job_id`'s rates into *r. Returns 0, EBB_ENOTFOUND (none kept: *r
 * zeroed) or a negative code. */
int ebb__store_rates_get(struct ebb__store *s, const char *job_id,
                         struct ebb__transfer_rates *r);

#endif
