/* The periodic checkpoint interval the engine chooses when a job with a
 * store leaves checkpoint.every out (docs/stores.md, "Fees and timing"),
 * and the transfer times it stands on: below the executor, which tells a
 * launch's job model the same interval, and engine_transfer.c, which
 * tells the agent. */
#include <math.h>

#include "engine/internal.h"

ebb_dur_ms ebb__engine_transfer_ms(const struct ebb__engine *e, int64_t bytes, double rate)
{
    if (bytes <= 0)
        return 0;
    double per_ms = rate > 0 ? rate : EBB__TRANSFER_RATE_DEFAULT;
    return ebb__clock_from_real_ms(e->opt.clock, (ebb_dur_ms)ceil((double)bytes / per_ms));
}

ebb_dur_ms ebb__engine_every_on(const struct ebb__job *job, size_t offer)
{
    if (job->spec.checkpoint.every > 0 || job->spec.checkpoint.store == NULL ||
        offer >= job->engine->market.n_offers)
        return job->spec.checkpoint.every;
    const struct ebb__engine *e = job->engine;
    const struct ebb__job_transfer *x = job->xfer;
    /* C: what one checkpoint costs the job, its write and its upload. */
    ebb_dur_ms cost = EBB__CKPT_COST_DEFAULT;
    if (x != NULL && (x->last_duration > 0 || x->last_bytes > 0))
        cost = ebb__clock_from_real_ms(e->opt.clock, x->last_duration) +
               ebb__engine_transfer_ms(e, x->last_bytes, x->up_rate);
    /* A gang is interrupted when any of its nodes is: N times the rate. */
    return ebb__checkpoint_interval(cost, ebb__job_nodes(job) *
                                              e->market.offers[offer].hazard);
}

ebb_dur_ms ebb__checkpoint_interval(ebb_dur_ms cost, double hazard_per_hour)
{
    /* Young (1974) and Daly (2006): with checkpoints costing C and failures
     * at rate 1/M, the expected lost work plus checkpoint cost per unit of
     * time is lowest at an interval of sqrt(2 C M) (Daly's first order
     * term; his higher order terms matter only when C approaches M, which
     * the clamp keeps away). */
    if (!(hazard_per_hour > 0) || !isfinite(hazard_per_hour))
        return EBB__CKPT_EVERY_CHOSEN_MAX;
    double c = cost > 0 ? (double)cost : 1.0;
    double m = (double)EBB_MS_PER_HOUR / hazard_per_hour;
    double tau = sqrt(2.0 * c * m);
    if (!(tau >= (double)EBB__CKPT_EVERY_CHOSEN_MIN))
        return EBB__CKPT_EVERY_CHOSEN_MIN;
    if (tau > (double)EBB__CKPT_EVERY_CHOSEN_MAX)
        return EBB__CKPT_EVERY_CHOSEN_MAX;
    return (ebb_dur_ms)llround(tau);
}
