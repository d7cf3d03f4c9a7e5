/* Sampled futures for `ebb plan` (plan_sample.h). */
#include "report/plan_sample.h"

#include <math.h>

void ebb__plan_rng_seed(struct ebb__plan_rng *r, uint64_t seed, uint64_t stream)
{
    /* Two different streams of one seed, or one stream of two seeds, must
     * not start on neighbouring states: mix the stream in with an odd
     * multiplier before the first output scrambles it. */
    r->s = seed ^ (stream * 0xD1B54A32D192ED03ULL + 0x2545F4914F6CDD1DULL);
}

static uint64_t next(struct ebb__plan_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double ebb__plan_rng_uniform(struct ebb__plan_rng *r)
{
    /* 53 random bits, shifted by half a unit so neither end is reached. */
    return ((double)(next(r) >> 11) + 0.5) / 9007199254740992.0;
}

double ebb__plan_rng_normal(struct ebb__plan_rng *r)
{
    double u = ebb__plan_rng_uniform(r), v = ebb__plan_rng_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* The normal score of the 90th percentile. */
#define Z90 1.2815515655446004

ebb_micros ebb__plan_price_at(const struct ebb_forecast_point *p, double z)
{
    double half = z >= 0 ? (double)(p->p90 - p->p50) : (double)(p->p50 - p->p10);
    double price = (double)p->p50 + z / Z90 * half;
    double floor = (double)p->p10 / 2;
    return (ebb_micros)llround(price > floor ? price : floor);
}

void ebb__plan_sample_path(const struct ebb_forecast_point *fc, size_t n,
                           double rho, struct ebb__plan_rng *r, ebb_micros *out)
{
    double z = ebb__plan_rng_normal(r);
    double keep = sqrt(1.0 - rho * rho);
    for (size_t k = 0; k < n; k++) {
        if (k > 0)
            z = rho * z + keep * ebb__plan_rng_normal(r);
        out[k] = ebb__plan_price_at(&fc[k], z);
    }
}

/* An exponential wait of mean `mean` ms, at least 1 ms. */
static ebb_dur_ms exp_ms(struct ebb__plan_rng *r, double mean)
{
    double t = -log(ebb__plan_rng_uniform(r)) * mean;
    return t < 1 ? 1 : t > 1e15 ? (ebb_dur_ms)1e15 : (ebb_dur_ms)t;
}

size_t ebb__plan_sample_outages(double hazard, ebb_dur_ms mean_down,
                                ebb_time_ms from, ebb_time_ms until,
                                struct ebb__plan_rng *r, ebb_time_ms *starts,
                                ebb_time_ms *ends, size_t max)
{
    if (!(hazard > 0))
        return 0;
    size_t n = 0;
    double mean_up = (double)EBB_MS_PER_HOUR / hazard;
    for (ebb_time_ms t = from; n < max;) {
        t += exp_ms(r, mean_up);
        if (t >= until)
            break;
        starts[n] = t;
        t += exp_ms(r, mean_down > 0 ? (double)mean_down : 1.0);
        ends[n++] = t;
    }
    return n;
}
