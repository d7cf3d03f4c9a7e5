/* Random numbers for the hazard model: splitmix64 (Steele, Lea and Flood,
 * "Fast splittable pseudorandom number generators", 2014), which is tiny,
 * passes BigCrush and, unlike rand(), gives the same sequence for the same
 * seed on every libc. One generator per provider instance, drawn only in
 * launch order, keeps a backtest reproducible. */
#include <math.h>

#include "sim.h"

void sim_rng_seed(struct sim_rng *r, uint64_t seed)
{
    r->state = seed;
}

uint64_t sim_rng_next(struct sim_rng *r)
{
    r->state += UINT64_C(0x9e3779b97f4a7c15);
    uint64_t z = r->state;
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

double sim_rng_uniform(struct sim_rng *r)
{
    return (double)(sim_rng_next(r) >> 11) * 0x1.0p-53;
}

ebb_dur_ms sim_rng_exponential_ms(struct sim_rng *r, double rate_per_hour)
{
    const double cap = (double)(INT64_MAX / 4);
    double u = sim_rng_uniform(r); /* [0, 1): 1 - u is never 0 */
    double ms = -log1p(-u) / rate_per_hour * (double)EBB_MS_PER_HOUR;
    if (!(ms < cap))
        return INT64_MAX / 4;
    return (ebb_dur_ms)llround(ms);
}
