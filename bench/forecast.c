/* bench-forecast: rolling-origin evaluation of ebb's price forecast on the
 * shipped traces, against three baselines run in the same process (last
 * value, seasonal naive with a 24 h season, additive Holt-Winters with a
 * 24 h season), and the time to forecast 10,000 series over 168 hours.
 *
 * Origins are every day at 00:00 UTC from the third midnight after a
 * series' first row to the last day whose next 24 hours the series
 * still covers; each origin is scored at 1 h steps over 24 h against
 * the price in effect at each step. Every method sees only rows before
 * the origin. Coverage of ebb's p10..p90 band is counted by the randomised
 * PIT (see pit_shares()), because step prices put an atom at zero error.
 * Prints a table; never passes or fails on a number.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ebb/trace.h>

#include "market/forecast.h"

#ifndef EBB_FC_SOURCE_ROOT
#define EBB_FC_SOURCE_ROOT "."
#endif

#define HOUR EBB_MS_PER_HOUR
#define DAY EBB_MS_PER_DAY
#define HORIZON 24
#define HW_WINDOW (28 * 24)

/* Holt-Winters smoothing constants, fixed before looking at results:
 * prices are persistent, so the level follows new data quickly (alpha);
 * trends are rare, so a spike should not become one (beta); the profile
 * adapts over about five days (gamma). */
#define HW_ALPHA 0.5
#define HW_BETA 0.01
#define HW_GAMMA 0.2

enum { M_EBB, M_LAST, M_SNAIVE, M_HW, N_METHOD };
static const char *const method_name[N_METHOD] = {"ebb", "last", "snaive24",
                                                  "holt-winters"};

enum { F_AWS, F_AZURE, F_MKT_AGG, F_MKT_PROV, N_FAMILY };
static const char *const family_name[N_FAMILY] = {
    "aws spot", "azure low-pri", "market aggregate", "market provider"};

struct tally {
    double abs_err[N_METHOD];
    double sum_actual;
    size_t points, origins, series;
    /* Where actuals fall against the band: strictly below p10, equal to
     * p10 (p10 < p90), strictly inside, equal to p90 (p10 < p90), strictly
     * above p90, and equal to a band that is a single point. */
    size_t below, at_lo, inside, at_hi, above, at_point;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The price in effect at t using only rows before `origin`. */
static double before(const struct ebb_price_series *s, ebb_time_ms t,
                     ebb_time_ms origin)
{
    ebb_micros p = 0;
    ebb_time_ms q = t < origin ? t : origin - 1;
    if (ebb_price_series_at(s, q, &p) != 0)
        return 0.0;
    return (double)p;
}

/* Additive Holt-Winters on the hourly grid of the last 28 days before the
 * origin (the same grid ebb sees), forecasting 1..HORIZON hours. */
static void holt_winters(const struct ebb_price_series *s, ebb_time_ms origin,
                         double out[HORIZON])
{
    static double x[HW_WINDOW];
    ebb_time_ms t_last = origin - 1;
    int64_t span = (t_last - s->at[0]) / HOUR + 1;
    int n = span < HW_WINDOW ? (int)span : HW_WINDOW;
    for (int i = 0; i < n; i++)
        x[i] = before(s, t_last - (ebb_time_ms)(n - 1 - i) * HOUR, origin);
    if (n < 48) {
        for (int k = 0; k < HORIZON; k++)
            out[k] = x[n - 1];
        return;
    }
    double level = 0.0, trend = 0.0, season[24];
    for (int i = 0; i < 24; i++)
        level += x[i];
    level /= 24.0;
    for (int i = 0; i < 24; i++)
        season[i] = x[i] - level;
    for (int i = 24; i < n; i++) {
        double prev = level;
        level = HW_ALPHA * (x[i] - season[i % 24]) +
                (1.0 - HW_ALPHA) * (level + trend);
        trend = HW_BETA * (level - prev) + (1.0 - HW_BETA) * trend;
        season[i % 24] = HW_GAMMA * (x[i] - level) +
                         (1.0 - HW_GAMMA) * season[i % 24];
    }
    for (int k = 0; k < HORIZON; k++) {
        double f = level + (k + 1) * trend + season[(n - 1 + k + 1) % 24];
        out[k] = f < 0.0 ? 0.0 : f;
    }
}

static int family_of(const struct ebb_price_series *s)
{
    if (strcmp(s->provider, "aws") == 0)
        return F_AWS;
    if (strcmp(s->provider, "azure") == 0)
        return F_AZURE;
    if (strcmp(s->provider, "primeintellect-aggregate") == 0)
        return F_MKT_AGG;
    return F_MKT_PROV;
}

static void evaluate(const struct ebb_price_series *s,
                     const struct ebb__forecast_model *model, struct tally *t)
{
    struct ebb__price_history h = {s->at, s->price, s->n};
    ebb_time_ms first = (s->at[0] / DAY + 2) * DAY + DAY;
    ebb_time_ms last = s->at[s->n - 1];
    int any = 0;
    for (ebb_time_ms o = first; o + HORIZON * HOUR <= last; o += DAY) {
        struct ebb_forecast_point fc[HORIZON];
        double hw[HORIZON];
        if (ebb__forecast_prices_model(model, &h, o, HOUR, HORIZON, fc) != 0)
            continue;
        holt_winters(s, o, hw);
        double lastv = before(s, o - 1, o);
        for (int k = 0; k < HORIZON; k++) {
            ebb_time_ms at = o + (ebb_time_ms)(k + 1) * HOUR;
            ebb_micros a = 0;
            ebb_price_series_at(s, at, &a);
            double actual = (double)a;
            double pred[N_METHOD] = {
                (double)fc[k].p50, lastv, before(s, at - DAY, o), hw[k]};
            for (int m = 0; m < N_METHOD; m++)
                t->abs_err[m] += fabs(actual - pred[m]);
            t->sum_actual += actual;
            t->points++;
            if (a < fc[k].p10)
                t->below++;
            else if (a > fc[k].p90)
                t->above++;
            else if (fc[k].p10 == fc[k].p90)
                t->at_point++;
            else if (a == fc[k].p10)
                t->at_lo++;
            else if (a == fc[k].p90)
                t->at_hi++;
            else
                t->inside++;
        }
        t->origins++;
        any = 1;
    }
    t->series += (size_t)any;
}

/* Shares of actuals below, inside and above ebb's p10..p90 band under the
 * randomised probability integral transform (PIT) of Czado, Gneiting and
 * Held (2009), the standard calibration check for predictive
 * distributions with atoms: an actual y falls at PIT U, uniform on
 * [F(y-), F(y)], and a calibrated forecast has U uniform on [0, 1], so
 * 10% / 80% / 10% whatever the distribution. From quantiles alone:
 * y < p10 is below, y > p90 above, p10 < y < p90 inside; y on one edge of
 * a band of positive width straddles 0.1 (or 0.9) by an unknown split and
 * counts half each way (the mid-distribution convention); y equal to a
 * one-point band counts 0.1 / 0.8 / 0.1, because ebb gives a one-point
 * band only when every replayed error was exactly 0 and the price never
 * moved in the window, that is, when its predictive distribution is a
 * point mass (F(y-) = 0, F(y) = 1). */
static void pit_shares(const struct tally *t, double out[3])
{
    double P = (double)t->points / 100.0;
    out[0] = ((double)t->below + 0.5 * (double)t->at_lo +
              0.1 * (double)t->at_point) / P;
    out[1] = ((double)t->inside + 0.5 * (double)(t->at_lo + t->at_hi) +
              0.8 * (double)t->at_point) / P;
    out[2] = ((double)t->above + 0.5 * (double)t->at_hi +
              0.1 * (double)t->at_point) / P;
}

/* Adds b into a. */
static void tally_add(struct tally *a, const struct tally *b)
{
    for (int m = 0; m < N_METHOD; m++)
        a->abs_err[m] += b->abs_err[m];
    a->sum_actual += b->sum_actual;
    a->points += b->points;
    a->origins += b->origins;
    a->series += b->series;
    a->below += b->below;
    a->at_lo += b->at_lo;
    a->inside += b->inside;
    a->at_hi += b->at_hi;
    a->above += b->above;
    a->at_point += b->at_point;
}

/* ebb's MAE over the best baseline's in t (1 when both are 0). */
static double ratio_to_best(const struct tally *t)
{
    double best = INFINITY;
    for (int m = 0; m < N_METHOD; m++)
        if (m != M_EBB && t->abs_err[m] < best)
            best = t->abs_err[m];
    return best > 0 ? t->abs_err[M_EBB] / best
                    : (t->abs_err[M_EBB] > 0 ? INFINITY : 1.0);
}

static void print_row(const char *name, const struct tally *t)
{
    printf("%-18s %6zu %7zu %7zu", name, t->series, t->origins, t->points);
    for (int m = 0; m < N_METHOD; m++) {
        double mae = t->abs_err[m] / (double)t->points / 1e6;
        double rel = 100.0 * t->abs_err[m] / t->sum_actual;
        printf("   %9.6f (%5.2f%%)", mae, rel);
    }
    double pit[3];
    pit_shares(t, pit);
    size_t incl = t->points - t->below - t->above;
    printf(" %9.4f %5.1f%% %8.1f%% %5.1f%% %6.1f%%\n", ratio_to_best(t),
           pit[0], pit[1], pit[2], 100.0 * (double)incl / (double)t->points);
}

static void print_table(const char *title, const struct tally *tal)
{
    printf("%s\nrolling origin: daily at 00:00 UTC, 1 h steps over 24 h; "
           "MAE in USD/h (and %% of the mean actual price)\n\n",
           title);
    printf("%-18s %6s %7s %7s", "family", "series", "origins", "points");
    for (int m = 0; m < N_METHOD; m++)
        printf(" %20s", method_name[m]);
    printf(" %9s %6s %9s %6s %7s\n", "ebb/best", "<p10", "p10..p90", ">p90",
           "incl.");
    struct tally all;
    memset(&all, 0, sizeof all);
    for (int f = 0; f < N_FAMILY; f++) {
        if (!tal[f].points)
            continue;
        print_row(family_name[f], &tal[f]);
        tally_add(&all, &tal[f]);
    }
    print_row("overall", &all);
    printf("\nwhere actuals fall against ebb's band (raw counts behind the "
           "shares above):\n");
    printf("%-18s %7s %7s %7s %7s %7s %7s\n", "family", "<p10", "=p10",
           "inside", "=p90", ">p90", "=point");
    for (int f = 0; f < N_FAMILY; f++) {
        const struct tally *t = &tal[f];
        if (!t->points)
            continue;
        double P = (double)t->points / 100.0;
        printf("%-18s %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%%\n",
               family_name[f], (double)t->below / P, (double)t->at_lo / P,
               (double)t->inside / P, (double)t->at_hi / P,
               (double)t->above / P, (double)t->at_point / P);
    }
    printf("\nebb/best: ebb's MAE over the best baseline's (<= 1 means no "
           "worse); overall: summed over\nevery point, against the baseline "
           "best over all of them.\n<p10, p10..p90, >p90: shares of actuals below, inside "
           "and above ebb's band by the\nrandomised PIT (ties at a band edge "
           "split half and half, a hit on a one-point band\ncounts 10/80/10, "
           "see pit_shares()); calibrated is 10/80/10. incl.: share with\n"
           "p10 <= actual <= p90, which counts every tie as inside and so "
           "reads high on step prices.\n");
}

static void speed(struct ebb_price_trace *const *traces, size_t n_traces)
{
    enum { N_SERIES = 10000, STEPS = 168 };
    const struct ebb_price_series *pool[1024];
    size_t n_pool = 0;
    for (size_t i = 0; i < n_traces; i++)
        for (size_t j = 0; j < traces[i]->n_series && n_pool < 1024; j++)
            pool[n_pool++] = &traces[i]->series[j];
    static struct ebb_forecast_point out[STEPS];
    double hw[HORIZON];
    uint64_t check = 0;
    double t0 = now_s();
    for (size_t i = 0; i < N_SERIES; i++) {
        const struct ebb_price_series *s = pool[i % n_pool];
        struct ebb__price_history h = {s->at, s->price, s->n};
        ebb_time_ms origin = s->at[s->n - 1] + HOUR;
        if (ebb__forecast_prices(&h, origin, HOUR, STEPS, out) == 0)
            check += (uint64_t)out[STEPS - 1].p90;
    }
    double t_ebb = now_s() - t0;
    t0 = now_s();
    for (size_t i = 0; i < N_SERIES; i++) {
        const struct ebb_price_series *s = pool[i % n_pool];
        holt_winters(s, s->at[s->n - 1] + HOUR, hw);
        check += (uint64_t)hw[0];
    }
    double t_hw = now_s() - t0;
    printf("\nspeed: %d series (the %zu shipped series, repeated), %d h "
           "horizon, up to 28 days of history each\n",
           N_SERIES, n_pool, STEPS);
    printf("  ebb            %8.3f s  %8.1f us/series\n", t_ebb,
           t_ebb * 1e6 / N_SERIES);
    printf("  holt-winters   %8.3f s  %8.1f us/series (fit only, %d h)\n",
           t_hw, t_hw * 1e6 / N_SERIES, HORIZON);
    printf("  ebb / holt-winters: %.2f  (checksum %llu)\n", t_ebb / t_hw,
           (unsigned long long)(check % 1000));
}

/* The constant searched by leave-one-trace-out cross-validation: the
 * prior's weight (in origins). The drift's window and damping are no
 * longer constants: the forecaster chooses them per series. */
static const double grid_prior[] = {1.0, 3.0, 10.0};
#define N_CONF (sizeof grid_prior / sizeof grid_prior[0])

static struct ebb__forecast_model conf_model(size_t c)
{
    struct ebb__forecast_model m = {.prior_origins = grid_prior[c]};
    return m;
}

/* Which trace file a family comes from. */
static size_t file_of_family(int f)
{
    return f == F_AWS ? 0 : (f == F_AZURE ? 1 : 2);
}

/* Mean over the trace files not `skip` (pass a value >= n_files to use
 * every file) of ebb's MAE over the file's best baseline. */
static double train_score(const struct tally tal[N_FAMILY], size_t n_files,
                          size_t skip)
{
    double sum = 0.0;
    size_t n = 0;
    for (size_t fi = 0; fi < n_files; fi++) {
        if (fi == skip)
            continue;
        struct tally t;
        memset(&t, 0, sizeof t);
        for (int f = 0; f < N_FAMILY; f++)
            if (file_of_family(f) == fi)
                tally_add(&t, &tal[f]);
        if (!t.points)
            continue;
        sum += ratio_to_best(&t);
        n++;
    }
    return n ? sum / (double)n : INFINITY;
}

static size_t best_conf(struct tally (*grid)[N_FAMILY], size_t n_files,
                        size_t skip)
{
    size_t best = 0;
    double best_score = INFINITY;
    for (size_t c = 0; c < N_CONF; c++) {
        double sc = train_score(grid[c], n_files, skip);
        if (sc < best_score) {
            best_score = sc;
            best = c;
        }
    }
    return best;
}

static void print_model(const char *what, const struct ebb__forecast_model *m)
{
    printf("%s: prior_origins %.1f\n", what, m->prior_origins);
}

int main(void)
{
    static const char *const files[] = {
        "data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv",
        "data/traces/azure_lowpri_gpu_3regions_2020-02_2020-03.csv",
        "data/traces/gpu_marketplace_primeintellect_2025-10-19_2025-11-08.csv",
    };
    enum { N_FILES = sizeof files / sizeof files[0] };
    struct ebb_price_trace *traces[N_FILES] = {0};
    static struct tally grid[N_CONF][N_FAMILY];
    struct tally tal[N_FAMILY];
    memset(tal, 0, sizeof tal);
    int rc = 0;
    for (size_t i = 0; i < N_FILES; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", EBB_FC_SOURCE_ROOT, files[i]);
        struct ebb_diag d;
        memset(&d, 0, sizeof d);
        if (ebb_price_trace_load(path, &traces[i], &d) != 0) {
            fprintf(stderr, "bench-forecast: cannot load %s\n", path);
            rc = 1;
            goto done;
        }
        for (size_t j = 0; j < traces[i]->n_series; j++) {
            const struct ebb_price_series *s = &traces[i]->series[j];
            evaluate(s, &ebb__forecast_default_model, &tal[family_of(s)]);
            for (size_t c = 0; c < N_CONF; c++) {
                struct ebb__forecast_model m = conf_model(c);
                evaluate(s, &m, &grid[c][family_of(s)]);
            }
        }
    }
    print_table("== shipped constants, scored on every trace (in sample)",
                tal);
    print_model("shipped", &ebb__forecast_default_model);
    struct ebb__forecast_model all = conf_model(best_conf(grid, N_FILES,
                                                          N_FILES));
    print_model("best on every trace (what ships should match)", &all);

    /* Leave one trace file out: the constants are chosen on the other
     * files, the figures are the held-out file's. */
    struct tally held[N_FAMILY];
    memset(held, 0, sizeof held);
    printf("\n");
    for (size_t fi = 0; fi < N_FILES; fi++) {
        struct ebb__forecast_model m = conf_model(best_conf(grid, N_FILES, fi));
        char what[256];
        snprintf(what, sizeof what, "held out %s, chosen on the others",
                 files[fi] + strlen("data/traces/"));
        print_model(what, &m);
        size_t c = best_conf(grid, N_FILES, fi);
        for (int f = 0; f < N_FAMILY; f++)
            if (file_of_family(f) == fi)
                held[f] = grid[c][f];
    }
    printf("\n");
    print_table("== leave-one-trace-out: each file scored with constants "
                "chosen on the other files (held out)",
                held);
    speed(traces, N_FILES);
done:
    for (size_t i = 0; i < N_FILES; i++)
        ebb_price_trace_free(traces[i]);
    return rc;
}
