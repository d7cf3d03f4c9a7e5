/* Learned speeds (docs/policies.md "Learned speed"): what the engine's
 * estimator (market/speed_est.h) keeps per job family, GPU model,
 * provider and host, so that a restart keeps what was learned. */
#ifndef EBB_STORE_SPEEDS_H
#define EBB_STORE_SPEEDS_H

#include <ebb/common.h>

struct ebb__store;

/* What one estimate is for. */
struct ebb__speed_key {
    const char *family;    /* the job's name; "" without one */
    const char *gpu_model; /* the catalog's; "" without GPUs or listing */
    const char *provider;
    const char *host;      /* "<instance type>@<zone, else region>" */
};

/* Records `samples` rates counted in all and the latest `rates` (text of
 * ebb__speed_format()) for `k`. Returns 0 or a negative EBB_E* code. */
int ebb__store_speed_put(struct ebb__store *s, const struct ebb__speed_key *k,
                         long long samples, const char *rates, ebb_time_ms at);

typedef int (*ebb__speed_row_cb)(void *arg, const struct ebb__speed_key *k,
                                 long long samples, const char *rates);
/* Every recorded estimate to `cb`. Returns 0, cb's non-zero value, or a
 * negative code. */
int ebb__store_speed_each(struct ebb__store *s, ebb__speed_row_cb cb, void *arg);

#endif
