/* The renewal policy's availability model and grid: see rn_model.h. */
#include "rn_model.h"

#include <math.h>
#include <stddef.h>

/* Bucket b holds lengths in [lo, hi) hours: [0, 2) minutes for b = 0,
 * [2^b, 2^(b+1)) minutes after, the last one open. */
static void edges(int b, double *lo, double *hi)
{
    *lo = b == 0 ? 0 : ldexp(1.0, b) / 60.0;
    *hi = b + 1 == EBB_PERIOD_BUCKETS ? INFINITY : ldexp(1.0, b + 1) / 60.0;
}

/* P(lo <= X < hi) for X exponential with mean `mean` hours. */
static double in_bucket(double mean, double lo, double hi)
{
    double a = exp(-lo / mean), b = isinf(hi) ? 0 : exp(-hi / mean);
    return a - b;
}

/* E[X | lo <= X < hi] for that X; the middle when the bucket is out of
 * the exponential's reach. */
static double mean_in_bucket(double mean, double lo, double hi)
{
    if (isinf(hi))
        return lo + mean;
    double a = exp(-lo / mean), b = exp(-hi / mean);
    if (!(a - b > 1e-300))
        return (lo + hi) / 2;
    return mean + (lo * a - hi * b) / (a - b);
}

void rn_bucket_probs(const struct rn_mix *m, double probs[EBB_PERIOD_BUCKETS])
{
    for (int b = 0; b < EBB_PERIOD_BUCKETS; b++) {
        double lo, hi;
        edges(b, &lo, &hi);
        probs[b] = m->p_short * in_bucket(m->short_h, lo, hi) +
                   (1 - m->p_short) * in_bucket(m->long_h, lo, hi);
    }
}

/* Bounds that keep the fit away from degenerate mixtures. */
#define RN_MIN_H (1.0 / 120.0)  /* 30 s */
#define RN_MAX_H (24.0 * 365.0) /* a year */
#define RN_MIN_SHARE 1e-3
#define RN_EM_ROUNDS 40

static double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

void rn_fit(const unsigned *counts, const struct rn_mix *prior, double weight,
            struct rn_mix *out)
{
    double n[EBB_PERIOD_BUCKETS], pp[EBB_PERIOD_BUCKETS], total = 0;
    rn_bucket_probs(prior, pp);
    for (int b = 0; b < EBB_PERIOD_BUCKETS; b++) {
        n[b] = (counts != NULL ? counts[b] : 0) + (weight > 0 ? weight * pp[b] : 0);
        total += n[b];
    }
    *out = *prior;
    if (!(total > 0))
        return;
    double mean[2] = {prior->short_h, prior->long_h};
    double share = prior->p_short;
    for (int round = 0; round < RN_EM_ROUNDS; round++) {
        double cnt[2] = {0, 0}, len[2] = {0, 0};
        for (int b = 0; b < EBB_PERIOD_BUCKETS; b++) {
            if (!(n[b] > 0))
                continue;
            double lo, hi;
            edges(b, &lo, &hi);
            double ps = share * in_bucket(mean[0], lo, hi);
            double pl = (1 - share) * in_bucket(mean[1], lo, hi);
            double rs = ps + pl > 0 ? ps / (ps + pl) : 0.5;
            cnt[0] += n[b] * rs;
            cnt[1] += n[b] * (1 - rs);
            len[0] += n[b] * rs * mean_in_bucket(mean[0], lo, hi);
            len[1] += n[b] * (1 - rs) * mean_in_bucket(mean[1], lo, hi);
        }
        share = clampd(cnt[0] / total, RN_MIN_SHARE, 1 - RN_MIN_SHARE);
        for (int k = 0; k < 2; k++)
            if (cnt[k] > 1e-12)
                mean[k] = clampd(len[k] / cnt[k], RN_MIN_H, RN_MAX_H);
    }
    if (mean[0] > mean[1]) { /* keep "short" the shorter */
        double m = mean[0];
        mean[0] = mean[1];
        mean[1] = m;
        share = 1 - share;
    }
    *out = (struct rn_mix){share, mean[0], mean[1]};
}

void rn_chain_params(const struct rn_mix *up, const struct rn_mix *down,
                     struct rn_params *p)
{
    p->rate[0] = 1 / up->short_h;
    p->rate[1] = 1 / up->long_h;
    p->rate[2] = 1 / down->short_h;
    p->rate[3] = 1 / down->long_h;
    p->to_short_up = up->p_short;
    p->to_short_down = down->p_short;
}

void rn_belief(const struct rn_mix *up, const struct rn_mix *down, int up_now,
               double age_h, double belief[RN_PHASES])
{
    const struct rn_mix *m = up_now ? up : down;
    double a = age_h > 0 && isfinite(age_h) ? age_h : 0;
    /* In logs: long ages underflow both terms. */
    double ls = log(m->p_short) - a / m->short_h;
    double ll = log1p(-m->p_short) - a / m->long_h;
    double top = fmax(ls, ll);
    double ws = exp(ls - top), wl = exp(ll - top);
    int base = up_now ? 0 : RN_UP_PHASES;
    for (int c = 0; c < RN_PHASES; c++)
        belief[c] = 0;
    belief[base] = ws / (ws + wl);
    belief[base + 1] = wl / (ws + wl);
}

double rn_quantize(double x, double step)
{
    if (!(x > 0) || !isfinite(x))
        return 0;
    double q = log(x) / log1p(step);
    return pow(1 + step, nearbyint(q));
}

/* The largest restart in steps of the ladder 1, 2, 3, 4, 6, 8, 12, ...
 * (2^n and 3 2^n) that is at most x >= 1. */
static int ladder_k(double x)
{
    int k = 1;
    while (k < (1 << 28)) {
        int up = k < 2 ? 2 : (k & (k - 1)) == 0 ? k / 2 * 3 : k / 3 * 4;
        if (up > x)
            break;
        k = up;
    }
    return k;
}

void rn_grid(double work_ms, double slack_ms, double overhead_ms,
             struct rn_params *p)
{
    work_ms = work_ms > 0 ? work_ms : 0;
    slack_ms = slack_ms > 0 ? slack_ms : 0;
    overhead_ms = overhead_ms > 0 ? overhead_ms : 0;
    double least = sqrt(work_ms * slack_ms / RN_GRID_POINTS);
    if (least < 1000)
        least = 1000;
    if (overhead_ms >= least) {
        p->k = ladder_k(overhead_ms / least);
        p->step_ms = overhead_ms / p->k;
    } else if (overhead_ms >= least / 2) {
        p->k = 1;
        p->step_ms = overhead_ms;
    } else {
        /* No restart to divide: the step is the next of a ladder of
         * seconds sqrt(2) apart, whatever the overhead. */
        p->k = 0;
        p->step_ms = 1000 * pow(2, ceil(2 * log2(least / 1000)) / 2);
    }
    p->nw = (int)ceil(work_ms / p->step_ms);
    p->ns = (int)ceil(slack_ms / p->step_ms) + 1;
}
