/* Price forecasts (the hazard is in forecast_hazard.c): see forecast.h
 * for the contract and docs/forecast.md for the method and the
 * measurements behind it.
 *
 * Outline of ebb__forecast_prices_model():
 *   1. Resample the step function onto an hourly grid ending just before
 *      the origin, over at most the last 28 days (bounded work).
 *   2. The forecast is the last value plus three corrections, each the
 *      difference between a simple forecast and the last value: the
 *      recent median (a level for flickering prices), the seasonal naive
 *      forecast (the price a day before the target) and a damped drift (the
 *      change over the last 12, 24 or 48 hours, continued with damping
 *      0.90 or 0.99: of these six, the one whose fit errs least at the
 *      series' own replayed origins). Each
 *      correction has a weight in [0, 1], fitted by least absolute
 *      deviations on earlier origins inside the window (one per day) and
 *      shrunk toward 0 by a prior worth prior_origins origins: with no
 *      history, or no evidence, the forecast is the last value.
 *   3. The band is the empirical p10/p90 of the model's own errors at
 *      those origins, per horizon bucket, blended with a random-walk band
 *      when few origins support it (short history gives a wider, not a
 *      tighter, band).
 * Everything is O(window + horizon) per series; nothing is kept between
 * calls.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "market/forecast.h"
#include "market/forecast_impl.h"

#define HOUR EBB_MS_PER_HOUR

/* 28 days: enough for a month of replayed origins, short enough that an
 * old regime does not dominate. */
#define WINDOW_H (28 * 24)
/* The longest horizon replayed; beyond it the band grows with sqrt(h). */
#define MAX_H 168
/* An internal origin needs this much history before it (one day). */
#define MIN_HIST_H 24
/* The season of the seasonal correction, in hours, and how many past
 * seasons its median spans. One: the seasonal naive forecast. A median
 * over 7 days read an old level into Azure's daily prices and moved the
 * held-out figures from 0.967 to 1.007 of the best baseline
 * (docs/forecast.md). */
#define SEASON_H 24
#define SEASON_DAYS 1
/* The random-walk band counts as this many replayed origins of evidence. */
#define PRIOR_ORIGINS 4.0
/* z for the 10% and 90% normal quantiles. */
#define Z90 1.2815515655446004

/* Horizons (hours) at which each replayed origin enters the weight fit:
 * the first day, roughly evenly in log(h). Every hour of it would cost
 * four times as much for little more information: neighbouring horizons
 * of one origin err almost alike. */
static const int fit_h[] = {1, 2, 4, 8, 16, 24};
#define N_FIT ((int)(sizeof fit_h / sizeof fit_h[0]))

enum { Z_LEVEL, Z_SEASON, Z_TREND, N_Z };

/* Fitted on the shipped traces by bench-forecast's leave-one-trace-out
 * search (docs/forecast.md, "Measured"). */
const struct ebb__forecast_model ebb__forecast_default_model = {
    .prior_origins = 1.0,
};

/* Horizon buckets, in hours: [edge[b], edge[b+1]). */
static const int bucket_edge[] = {1, 2, 4, 7, 13, 25, 49, 97, MAX_H + 1};
#define N_BUCKET ((int)(sizeof bucket_edge / sizeof bucket_edge[0]) - 1)

static int bucket_of(int h)
{
    int b = 0;
    while (b + 1 < N_BUCKET && h >= bucket_edge[b + 1])
        b++;
    return b;
}

int64_t ebb__fc_floor_div(int64_t a, int64_t m)
{
    int64_t q = a / m;
    if ((a % m != 0) && ((a < 0) != (m < 0)))
        q--;
    return q;
}

int ebb__fc_hour_class(ebb_time_ms t, int period)
{
    int64_t hours = ebb__fc_floor_div(t, HOUR);
    int64_t r = hours % period;
    if (r < 0)
        r += period;
    return (int)r;
}

size_t ebb__fc_first_at(const ebb_time_ms *at, size_t n, ebb_time_ms t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (at[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Median of v[0..m) (m > 0; sorts v), for the robust level and season.
 * With an even count every value between the two middle order statistics
 * minimises the absolute deviation equally; of those we take the one
 * nearest the last value. The usual midpoint would be a price that was
 * never in effect (a step price flickering between 2.39 and 2.40 has
 * "median" 2.395) and would disagree with the last value without any
 * evidence for doing so: that disagreement used to win replays by chance
 * (see docs/forecast.md). */
static double median_near(double *v, size_t m, double last)
{
    /* Insertion sort: at most 24 values, mostly equal, beats qsort. */
    for (size_t i = 1; i < m; i++) {
        double t = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1] > t) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = t;
    }
    if (m % 2)
        return v[m / 2];
    double lo = v[m / 2 - 1], hi = v[m / 2];
    if (last < lo)
        return lo;
    return last > hi ? hi : last;
}

static double recent_median(const double *x, size_t c)
{
    double tmp[24];
    size_t m = c < 24 ? c : 24;
    memcpy(tmp, x + c - m, m * sizeof tmp[0]);
    return median_near(tmp, m, x[c - 1]);
}

/* The candidate drifts: every window with every damping. Each series
 * gets the one whose fitted weights err least at its replayed origins
 * (step 2 of ebb__forecast_prices_model()), so neither is a constant
 * chosen across traces. Three windows, from half a day to two days; two
 * dampings, the ends of the range the bench used to search (0.90 carries
 * at most 9 h of slope, 0.99 at most 99 h): the drift's weight scales it
 * continuously in between. */
static const int drift_hours[] = {12, 24, 48};
static const double drift_phi[] = {0.90, 0.99};
#define N_WIN ((int)(sizeof drift_hours / sizeof drift_hours[0]))
#define N_PHI ((int)(sizeof drift_phi / sizeof drift_phi[0]))
#define N_DRIFT (N_WIN * N_PHI)

/* What the corrections need at one origin c (history x[0..c), c >= 1). */
struct origin_state {
    double last;     /* x[c - 1] */
    double zlevel;   /* recent median - last */
    /* slope[i]: the drift per hour over the last drift_hours[i] hours, 0
     * without that much history. */
    double slope[N_WIN];
    int has_season;  /* at least a day of history */
    /* season[o]: the seasonal value for o + 1 hours after the origin, the
     * median of the prices at that time of day on the last SEASON_DAYS
     * days (those there are). */
    double season[SEASON_H];
};

/* Fills o->season from `get`, which gives the price d days (d >= 1)
 * before hour o + 1 after the origin, or returns -1 past the history. */
static void season_fill(struct origin_state *o,
                        int (*get)(const void *ctx, int hour, int d, double *v),
                        const void *ctx)
{
    o->has_season = 0;
    for (int hr = 0; hr < SEASON_H; hr++) {
        double v[SEASON_DAYS];
        size_t m = 0;
        for (int d = 1; d <= SEASON_DAYS; d++) {
            if (get(ctx, hr, d, &v[m]) != 0)
                break;
            m++;
        }
        if (m == 0)
            return;
        o->season[hr] = median_near(v, m, o->last);
    }
    o->has_season = 1;
}

/* The replay's view: grid points, 1 ms before each whole hour from
 * internal origin c, as is the replay's target. */
struct grid_ctx {
    const double *x;
    size_t c;
};

static int grid_get(const void *ctx, int hour, int d, double *v)
{
    const struct grid_ctx *g = ctx;
    size_t back = (size_t)d * SEASON_H;
    size_t ahead = (size_t)hour + 1;
    if (g->c - 1 + ahead < back)
        return -1;
    *v = g->x[g->c - 1 + ahead - back];
    return 0;
}

/* The real origin's view: its targets are whole hours after the origin
 * itself, so their seasonal values are the rows in effect whole days
 * before them; a target exactly a day ahead would need the price at the
 * origin, not yet known, and looks a day further back (the grid's
 * target, 1 ms earlier, can use the last price). */
struct rows_ctx {
    const struct ebb__price_history *h;
    size_t n_rows;
    ebb_time_ms origin;
};

static int rows_get(const void *ctx, int hour, int d, double *v)
{
    const struct rows_ctx *r = ctx;
    int days = d + (hour + 1) / SEASON_H;
    ebb_time_ms q = r->origin + (ebb_time_ms)(hour + 1) * HOUR -
                    (ebb_time_ms)days * SEASON_H * HOUR;
    if (q < r->h->at[0])
        return -1;
    size_t i = ebb__fc_first_at(r->h->at, r->n_rows, q + 1);
    *v = (double)r->h->price[i - 1];
    return 0;
}

static void origin_setup(const double *x, size_t c, struct origin_state *o)
{
    o->last = x[c - 1];
    o->zlevel = recent_median(x, c) - o->last;
    for (int i = 0; i < N_WIN; i++) {
        size_t W = (size_t)drift_hours[i];
        o->slope[i] = c > W ? (x[c - 1] - x[c - 1 - W]) / (double)W : 0.0;
    }
    struct grid_ctx g = {x, c};
    season_fill(o, grid_get, &g);
}

/* damp[h] = sum_{i=1..h} phi^i for h = 0..MAX_H: how far a drift carries
 * over h hours when each hour keeps phi of the one before (a table:
 * the replay asks for it J x H times). */
static void damp_table(double phi, double damp[MAX_H + 1])
{
    double term = 1.0;
    damp[0] = 0.0;
    for (int h = 1; h <= MAX_H; h++) {
        term *= phi;
        damp[h] = damp[h - 1] + term;
    }
}

/* damp[] beyond the table, in closed form. */
static double damped_hours(double phi, const double damp[MAX_H + 1],
                           int64_t h)
{
    if (h <= MAX_H)
        return damp[h];
    return phi * (1.0 - pow(phi, (double)h)) / (1.0 - phi);
}

/* One candidate drift: its window (an index into drift_hours) and
 * damping, with its table. */
struct drift {
    int win;
    double phi;
    double damp[MAX_H + 1];
};

/* The three corrections for horizon h >= 1 hours. */
static void corrections(const struct drift *d, const struct origin_state *o,
                        int64_t h, double z[N_Z])
{
    z[Z_LEVEL] = o->zlevel;
    z[Z_SEASON] = o->has_season ? o->season[(h - 1) % SEASON_H] - o->last
                                : 0.0;
    z[Z_TREND] = o->slope[d->win] * damped_hours(d->phi, d->damp, h);
}

static double predict(const struct origin_state *o, const double z[N_Z],
                      const double wt[N_Z])
{
    double p = o->last;
    for (int k = 0; k < N_Z; k++)
        p += wt[k] * z[k];
    return p;
}

/* Fits the weights by least absolute deviations, one coordinate at a
 * time: for weight k the objective sum_i |r_i - w z_ki| (r_i the target
 * minus the other corrections) is sum_i |z_ki| |r_i / z_ki - w|, so its
 * minimiser is the weighted median of r_i / z_ki with weights |z_ki|. The
 * prior is one more point at w = 0 with the weight of prior_origins
 * origins' sum of |z_k|, averaged over the origins where the correction
 * said anything: a correction must earn its place against the last
 * value, with little history it does not, and one origin never outvotes
 * the prior (averaged over every origin, a step that put a drift into
 * one replayed origin of twenty gave the drift full weight for the next
 * 28 days; test_step_followed). The objective is
 * convex in each w, so clamping the minimiser to [0, 1] (0: the last
 * value; 1: the simple forecast itself) gives the constrained minimiser.
 * Two sweeps: the corrections overlap little (a step price rarely has a
 * daily cycle and a drift at once), and a third changed no weight on the
 * shipped traces. LAD, not least squares: marketplace prices jump, and
 * least squares let a few jumps set the weights (docs/forecast.md). */
static void fit_weights(const double *zs, const double *ys, const size_t *oid,
                        size_t n, double prior_origins,
                        struct ebb__fc_wpoint *scratch, double wt[N_Z])
{
    for (int k = 0; k < N_Z; k++)
        wt[k] = 0.0;
    for (int sweep = 0; sweep < 2; sweep++) {
        for (int k = 0; k < N_Z; k++) {
            size_t m = 0, n_orig = 0, prev = SIZE_MAX;
            double mass = 0.0;
            for (size_t i = 0; i < n; i++) {
                const double *z = zs + i * N_Z;
                if (z[k] == 0.0)
                    continue;
                if (oid[i] != prev) {
                    n_orig++;
                    prev = oid[i];
                }
                double r = ys[i];
                for (int q = 0; q < N_Z; q++)
                    if (q != k)
                        r -= wt[q] * z[q];
                scratch[m].v = r / z[k];
                scratch[m].w = fabs(z[k]);
                mass += scratch[m].w;
                m++;
            }
            if (m == 0) {
                wt[k] = 0.0;
                continue;
            }
            scratch[m].v = 0.0;
            scratch[m].w = prior_origins * mass / (double)n_orig;
            double v = ebb__fc_weighted_median(scratch, m + 1);
            wt[k] = v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
        }
    }
}

struct work {
    double *x, *err, *zs, *ys;
    size_t *oid; /* the internal origin of each fit point */
    struct ebb__fc_wpoint *pts;
    struct origin_state *os; /* os[j]: internal origin j (1..J) */
    struct drift drifts[N_DRIFT];
};

static int model_ok(const struct ebb__forecast_model *m)
{
    return m && m->prior_origins >= 0.0 && isfinite(m->prior_origins);
}

int ebb__forecast_prices(const struct ebb__price_history *h, ebb_time_ms origin,
                         ebb_dur_ms step, size_t n_steps,
                         struct ebb_forecast_point *out)
{
    return ebb__forecast_prices_model(&ebb__forecast_default_model, h, origin,
                                      step, n_steps, out);
}

int ebb__forecast_prices_model(const struct ebb__forecast_model *m,
                               const struct ebb__price_history *h,
                               ebb_time_ms origin, ebb_dur_ms step,
                               size_t n_steps, struct ebb_forecast_point *out)
{
    if (!model_ok(m) || !h || !out || step <= 0 || n_steps == 0)
        return EBB_EINVAL;
    size_t n_rows = ebb__fc_first_at(h->at, h->n, origin);
    if (n_rows == 0)
        return EBB_ENOTFOUND;

    /* Grid point i is the price in effect at T_i = origin - 1 ms - (N - 1
     * - i) hours: the last one is the last price before the origin. */
    ebb_time_ms t_last = origin - 1;
    int64_t span_h = (t_last - h->at[0]) / HOUR + 1;
    size_t N = span_h < WINDOW_H ? (size_t)span_h : WINDOW_H;
    ebb_time_ms t0 = t_last - (ebb_time_ms)(N - 1) * HOUR;

    /* Replay horizon: what the caller asks for, capped at MAX_H. */
    int H = MAX_H;
    if (n_steps <= (size_t)(MAX_H * HOUR / step)) {
        ebb_time_ms far = (ebb_time_ms)n_steps * step;
        H = (int)(far / HOUR + (far % HOUR != 0));
        if (H > MAX_H)
            H = MAX_H;
        if (H < 1)
            H = 1;
    }

    /* Internal origins: one per day back from the real one. */
    size_t J = N >= (size_t)MIN_HIST_H + 24 ? (N - MIN_HIST_H) / 24 : 0;

    struct work w;
    memset(&w, 0, sizeof w);
    w.x = malloc(N * sizeof *w.x);
    w.err = malloc((J * (size_t)H + 1) * sizeof *w.err);
    w.zs = malloc((J * N_FIT + 1) * N_Z * sizeof *w.zs);
    w.ys = malloc((J * N_FIT + 1) * sizeof *w.ys);
    w.pts = malloc((J * N_FIT + 2) * sizeof *w.pts);
    w.oid = malloc((J * N_FIT + 1) * sizeof *w.oid);
    w.os = malloc((J + 1) * sizeof *w.os);
    int rc = EBB_ENOMEM;
    if (!w.x || !w.err || !w.zs || !w.ys || !w.pts || !w.oid || !w.os)
        goto done;
    rc = 0;
    for (int q = 0; q < N_DRIFT; q++) {
        w.drifts[q].win = q / N_PHI;
        w.drifts[q].phi = drift_phi[q % N_PHI];
        damp_table(w.drifts[q].phi, w.drifts[q].damp);
    }

    /* 1. Resample. */
    size_t r = ebb__fc_first_at(h->at, n_rows, t0 + 1); /* first row > t0 */
    r = r > 0 ? r - 1 : 0;
    double sq_diff = 0.0, sum_x = 0.0, sum_xx = 0.0;
    for (size_t i = 0; i < N; i++) {
        ebb_time_ms ti = t0 + (ebb_time_ms)i * HOUR;
        while (r + 1 < n_rows && h->at[r + 1] <= ti)
            r++;
        w.x[i] = (double)h->price[r];
        sum_x += w.x[i];
        sum_xx += w.x[i] * w.x[i];
        if (i > 0)
            sq_diff += (w.x[i] - w.x[i - 1]) * (w.x[i] - w.x[i - 1]);
    }
    /* One-hour volatility for the random-walk prior band. */
    double sigma1 = N > 1 ? sqrt(sq_diff / (double)(N - 1)) : 0.0;
    /* The window's own spread: the random-walk band describes the last
     * value's error, and for a price that returns to its level (noise
     * around it, a flicker) that error is the difference of two draws,
     * of spread sqrt(2) sd_x at any horizon, so the prior is capped
     * there. Without the cap the prior
     * was 4-6 times the real spread of such a series a day ahead, and its
     * 4/(n + 4) share alone widened the band to cover 96% of iid noise
     * (test_band_covers_noise). */
    double mean_x = sum_x / (double)N;
    double sd_x = sqrt(fmax(0.0, sum_xx / (double)N - mean_x * mean_x));

    /* 2. For each candidate drift, the corrections at every internal
     * origin and the change that followed, at the fit horizons the grid
     * still holds; the weights fitted to them; the candidate whose fit
     * errs least (by absolute error) is the series' drift. The states of
     * the internal origins do not depend on the candidate, and candidates
     * whose drift is 0 at every fit point fit alike: only the first of
     * them is fitted (a price that did not move costs one fit). */
    for (size_t j = 1; j <= J; j++)
        origin_setup(w.x, N - 24 * j, &w.os[j]);
    double wt[N_Z] = {0.0, 0.0, 0.0};
    const struct drift *d = &w.drifts[0];
    double best_obj = INFINITY;
    int fitted_still = 0;
    for (int q = 0; q < N_DRIFT; q++) {
        const struct drift *dq = &w.drifts[q];
        size_t n_fit = 0;
        int still = 1;
        for (size_t j = 1; j <= J; j++) {
            size_t c = N - 24 * j;
            const struct origin_state *os = &w.os[j];
            for (int f = 0; f < N_FIT && c - 1 + (size_t)fit_h[f] < N; f++) {
                corrections(dq, os, fit_h[f], w.zs + n_fit * N_Z);
                w.ys[n_fit] = w.x[c - 1 + (size_t)fit_h[f]] - os->last;
                w.oid[n_fit] = j;
                still = still && w.zs[n_fit * N_Z + Z_TREND] == 0.0;
                n_fit++;
            }
        }
        if (still && fitted_still)
            continue;
        fitted_still = fitted_still || still;
        double wq[N_Z];
        fit_weights(w.zs, w.ys, w.oid, n_fit, m->prior_origins, w.pts, wq);
        double obj = 0.0;
        for (size_t i = 0; i < n_fit; i++) {
            double e = w.ys[i];
            for (int k = 0; k < N_Z; k++)
                e -= wq[k] * w.zs[i * N_Z + k];
            obj += fabs(e);
        }
        if (obj < best_obj) {
            best_obj = obj;
            d = dq;
            memcpy(wt, wq, sizeof wt);
        }
    }

    /* 3. The model's errors at the internal origins, by horizon bucket. */
    size_t b_off[N_BUCKET + 1], b_n[N_BUCKET], b_orig[N_BUCKET];
    memset(b_n, 0, sizeof b_n);
    memset(b_orig, 0, sizeof b_orig);
    for (int b = 0; b <= N_BUCKET; b++) {
        int lo = b < N_BUCKET ? bucket_edge[b] : H + 1;
        if (lo > H + 1)
            lo = H + 1;
        b_off[b] = J * (size_t)(lo - 1);
    }
    for (size_t j = 1; j <= J; j++) {
        size_t c = N - 24 * j;
        const struct origin_state *os = &w.os[j];
        int b = 0;
        for (int hh = 1; hh <= H && c - 1 + (size_t)hh < N; hh++) {
            if (hh == 1 || hh == bucket_edge[b + 1]) {
                if (hh != 1)
                    b++;
                b_orig[b]++;
            }
            double z[N_Z];
            corrections(d, os, hh, z);
            w.err[b_off[b] + b_n[b]++] =
                w.x[c - 1 + (size_t)hh] - predict(os, z, wt);
        }
    }
    double qlo[N_BUCKET], qhi[N_BUCKET];
    int last_emp = -1;
    for (int b = 0; b < N_BUCKET; b++) {
        double hm = 0.5 * (bucket_edge[b] + bucket_edge[b + 1] - 1);
        double rw = Z90 * fmin(sigma1 * sqrt(hm), M_SQRT2 * sd_x);
        double elo, ehi;
        double wgt;
        if (b_n[b] > 0) {
            elo = ebb__fc_quantile(w.err + b_off[b], b_n[b], 0.10);
            ehi = ebb__fc_quantile(w.err + b_off[b], b_n[b], 0.90);
            wgt = (double)b_orig[b] / ((double)b_orig[b] + PRIOR_ORIGINS);
            last_emp = b;
        } else if (last_emp >= 0) {
            /* Not replayed this far: grow the last measured band. */
            double hp = 0.5 * (bucket_edge[last_emp] +
                               bucket_edge[last_emp + 1] - 1);
            double g = sqrt(hm / hp);
            elo = qlo[last_emp] * g;
            ehi = qhi[last_emp] * g;
            wgt = 1.0;
        } else {
            elo = ehi = 0.0;
            wgt = 0.0;
        }
        qlo[b] = wgt * elo - (1.0 - wgt) * rw;
        qhi[b] = wgt * ehi + (1.0 - wgt) * rw;
        if (qlo[b] > 0.0)
            qlo[b] = 0.0;
        if (qhi[b] < 0.0)
            qhi[b] = 0.0;
        /* The band never narrows with the horizon. */
        if (b > 0 && qlo[b] > qlo[b - 1])
            qlo[b] = qlo[b - 1];
        if (b > 0 && qhi[b] < qhi[b - 1])
            qhi[b] = qhi[b - 1];
    }


    /* 4. The forecast at the real origin (c = N). */
    struct origin_state os;
    origin_setup(w.x, N, &os);
    if (os.has_season) {
        struct rows_ctx rc_ = {h, n_rows, origin};
        season_fill(&os, rows_get, &rc_);
    }
    for (size_t k = 0; k < n_steps; k++) {
        ebb_time_ms t = origin + (ebb_time_ms)(k + 1) * step;
        ebb_dur_ms ahead = t - origin;
        int64_t hh = ahead / HOUR + (ahead % HOUR != 0);
        if (hh < 1)
            hh = 1;
        double z[N_Z];
        corrections(d, &os, hh, z);
        double p50 = predict(&os, z, wt);
        double lo, hi;
        if (hh <= MAX_H) {
            int b = bucket_of((int)hh);
            lo = qlo[b];
            hi = qhi[b];
        } else {
            double g = sqrt((double)hh / (double)MAX_H);
            lo = qlo[N_BUCKET - 1] * g;
            hi = qhi[N_BUCKET - 1] * g;
        }
        if (p50 < 0.0)
            p50 = 0.0;
        double p10 = p50 + lo, p90 = p50 + hi;
        if (p10 < 0.0)
            p10 = 0.0;
        out[k].at = t;
        out[k].p50 = llround(p50);
        out[k].p10 = llround(p10);
        out[k].p90 = llround(p90);
        if (out[k].p10 > out[k].p50)
            out[k].p10 = out[k].p50;
        if (out[k].p90 < out[k].p50)
            out[k].p90 = out[k].p50;
    }

done:
    free(w.x);
    free(w.err);
    free(w.zs);
    free(w.ys);
    free(w.pts);
    free(w.oid);
    free(w.os);
    return rc;
}
